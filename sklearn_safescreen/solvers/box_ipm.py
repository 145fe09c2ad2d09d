r"""Primal-dual interior-point method for the box QP, used to finish hard solves.

Dual coordinate descent is fast while many variables move, but on nearly hard-margin
problems (large ``C``) it can need 10^5 epochs (LinearSVC stalls there too). An
interior-point method (Mehrotra predictor-corrector) reaches a duality gap of 1e-10 in
20-40 Newton steps whatever the conditioning. Each step solves :math:`(Q + D)\,x = b`
with :math:`D` diagonal:

* linear mode, :math:`Q = ZZ^\top` of rank :math:`d+1`: Woodbury,
  :math:`x = D^{-1}b - D^{-1}Z(I + Z^\top D^{-1}Z)^{-1}Z^\top D^{-1}b`, O(n d^2), after
  eliminating the nearly free variables (:math:`\|z_i\|^2 > D_i`, at most
  :math:`d+1`) through their Schur complement, which keeps the k x k matrix's condition
  number below :math:`1 + n` whatever the scale of :math:`Z`
  (:meth:`LowRankTerm.newton`);
* kernel mode: dense Cholesky of the free block, O(n^3) (used for small free sets).

Screening makes both cheaper: only the free variables enter. KKT of
:math:`\min \tfrac12\alpha^\top Q\alpha - p^\top\alpha,\ lo\le\alpha\le hi`:
:math:`Q\alpha - p - u + v = 0`, :math:`(\alpha-lo)u = \mu`, :math:`(hi-\alpha)v = \mu`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp


class LowRankTerm:
    """The working-set operator ``Q = Z Z'`` plus the margins of everything outside it.

    ``offset`` is :math:`Z w_{\rm rest}`; dropping rows moves their fixed values into it.
    """

    def __init__(self, Z, w_rest):
        self.Z, self.w_rest = Z, w_rest
        self._sq = None

    def margins(self, a):
        return np.asarray(self.Z @ (np.asarray(self.Z.T @ a).ravel() + self.w_rest)).ravel()

    def sq_norm_w(self, a) -> float:
        w = np.asarray(self.Z.T @ a).ravel() + self.w_rest
        return float(w @ w)

    def drop(self, keep, moved_values):
        gone = ~keep
        self.w_rest = self.w_rest + np.asarray(self.Z[gone].T @ moved_values).ravel()
        self.Z = self.Z[keep]
        self._sq = None

    def newton(self, D, b):
        """``(Z Z' + diag(D))^{-1} b`` in O(n k^2); the factorisation is reused while
        ``D`` is the same array (predictor and corrector).

        Plain Woodbury puts ``1/D_i`` of the free variables (up to 1e13 near the end)
        and of the others in one k x k matrix, whose condition number reached 1e24 on
        unscaled data. The variables with ``||z_i||^2 / D_i > 1`` (F, at most k: the
        largest ratios) are eliminated through their Schur complement
        ``S = D_F + Z_F M_B^{-1} Z_F'`` (Cholesky after a symmetric diagonal scaling),
        the others by Woodbury with ``M_B = I + Z_B' D_B^{-1} Z_B``, whose eigenvalues
        lie in ``[1, 1 + |B|]``: the compiled ``_ipm_fast._factor`` and ``_solve``.
        """
        Z = self.Z
        if getattr(self, "_factor_for", None) is not D:
            if self._sq is None:
                self._sq = (np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
                            if sp.issparse(Z) else np.einsum("ij,ij->i", Z, Z))
            self._factor, self._factor_for = _block_factor(Z, self._sq, D), D
        ib, F, U, Sf, e, ZF = self._factor
        y = np.asarray(Z.T @ (ib * b)).ravel()
        if F.size:
            y2 = la.cho_solve((U, False), y, check_finite=False)
            xf = e * la.cho_solve((Sf, False), e * (b[F] - ZF @ y2), check_finite=False)
            y2 = ZF.T @ xf
            y = y - (U.T @ (U @ y2) - y2)  # Z_B'D_B^{-1}(b - Z Z_F'x_F)_B
        y = la.cho_solve((U, False), y, check_finite=False)
        if F.size:
            y = y + y2
        out = ib * (b - np.asarray(Z @ y).ravel())
        if F.size:
            out[F] = xf
        return out


def _block_factor(Z, sq, D):
    """The factors of :meth:`LowRankTerm.newton`: ``(1/D with 0 on F, F, U, S's
    Cholesky factor, S's scaling, Z_F)``. Raises ``LinAlgError`` if one fails."""
    n, k = Z.shape
    inv_d = 1.0 / D
    ratio = sq * inv_d
    thr = 1.0
    while np.count_nonzero(ratio > thr) > min(n, k):  # F fits in k
        thr *= 4.0
    F = np.flatnonzero(ratio > thr)
    ib = inv_d.copy()
    ib[F] = 0.0
    if sp.issparse(Z):
        M = (Z.T @ sp.diags(ib) @ Z).toarray()
        ZF = Z[F].toarray()
    else:
        Zs = Z * np.sqrt(ib)[:, None]
        M = Zs.T @ Zs
        ZF = Z[F]
    M[np.diag_indices_from(M)] += 1.0
    U = la.cholesky(M, check_finite=False)
    if not F.size:
        return ib, F, U, None, None, ZF
    W = la.solve_triangular(U, ZF.T, trans="T", check_finite=False)
    S = W.T @ W
    S[np.diag_indices_from(S)] += D[F]
    e = 1.0 / np.sqrt(np.diag(S))
    Sf = la.cholesky(S * e[:, None] * e[None, :], check_finite=False)
    return ib, F, U, Sf, e, ZF


class DenseTerm:
    """The working-set block ``Q`` of a kernel problem plus outside margins
    ``offset`` and the quadratic term ``outside_quad`` of everything outside."""

    def __init__(self, Q, offset, outside_quad):
        self.Q, self.offset, self.outside_quad = Q, offset, outside_quad

    def margins(self, a):
        return self.Q @ a + self.offset

    def sq_norm_w(self, a) -> float:
        # a'Qa + 2 a'offset + outside: the offset holds Q_{W,out} a_out
        return float(a @ (self.Q @ a) + 2.0 * a @ self.offset + self.outside_quad)

    def drop(self, keep, moved_values):
        gone = ~keep
        cross = self.Q[np.ix_(keep, gone)] @ moved_values
        self.outside_quad += float(moved_values @ (self.Q[np.ix_(gone, gone)] @ moved_values)
                                   + 2.0 * moved_values @ self.offset[gone])
        self.offset = self.offset[keep] + cross
        self.Q = self.Q[np.ix_(keep, keep)]

    def newton(self, D, b):
        """``(Q + diag(D))^{-1} b``; the factorisation is reused while ``D`` is the
        same array (predictor and corrector)."""
        if getattr(self, "_factor_for", None) is not D:
            M = self.Q.copy()
            M[np.diag_indices_from(M)] += D
            self._factor, self._factor_for = la.cho_factor(M, check_finite=False), D
        return la.cho_solve(self._factor, b, check_finite=False)


def box_qp_ipm(term, p, lo, hi, sqnorm, *, p_outside: float, tol: float, alpha0=None,
               screen: Callable | None = None, max_iter: int = 80):
    """Solve ``min 1/2 a'Qa - p'a`` (margins ``term.margins(a)``) over the box.

    Stops at relative duality gap ``tol``. When ``screen(margins, p, sqnorm, gap)`` is
    given, every iterate (which is dual feasible) screens with its gap ball: the
    variables it proves at a bound are fixed there and leave the Newton systems.

    Returns ``(alpha, dropped_lower, dropped_upper, iterations)`` over the input
    variables; alpha is inside the box (snap it before use). If round-off stops progress
    first, the iterate with the smallest gap is returned.
    """
    n_all = p.size
    idx = np.arange(n_all)
    out = np.zeros(n_all)
    dropped_lo = np.zeros(n_all, dtype=bool)
    dropped_hi = np.zeros(n_all, dtype=bool)
    width = hi - lo
    frac = 0.5 if alpha0 is None else np.clip((alpha0 - lo) / width, 0.05, 0.95)
    alpha = lo + frac * width
    s1, s2 = alpha - lo, hi - alpha
    g = term.margins(alpha) - p
    scale = max(1.0, float(np.abs(g).max()))
    u = np.maximum(g, 0.0) + 1e-2 * scale
    v = np.maximum(-g, 0.0) + 1e-2 * scale
    best, best_gap = alpha.copy(), np.inf
    best_idx = idx
    n_done = 0
    for n_done in range(1, max_iter + 1):  # noqa: B007 (returned)
        qa = term.margins(alpha)
        gvec = qa - p
        gap = float((np.maximum(-lo * gvec, -hi * gvec) + alpha * gvec).sum())
        dual = -0.5 * term.sq_norm_w(alpha) + p_outside + float(p @ alpha)
        rel = gap / max(abs(dual), 1e-300)
        if rel < best_gap:
            best, best_gap, best_idx = alpha.copy(), rel, idx
            out[idx] = alpha
        if rel <= tol:
            break
        if screen is not None and alpha.size > 1:
            to_lo, to_hi = screen(qa, p, sqnorm, gap)
            moved = to_lo | to_hi
            if moved.any() and not moved.all():
                vals = np.where(to_lo, lo, hi)[moved]
                p_outside += float(p[moved] @ vals)
                term.drop(~moved, vals)
                out[idx[moved]] = vals
                dropped_lo[idx[to_lo]] = True
                dropped_hi[idx[to_hi]] = True
                keep = ~moved
                idx, p, lo, hi, sqnorm = idx[keep], p[keep], lo[keep], hi[keep], sqnorm[keep]
                alpha, u, v = alpha[keep], u[keep], v[keep]
                s1, s2 = alpha - lo, hi - alpha
                best, best_idx, best_gap = alpha.copy(), idx, np.inf
                qa = term.margins(alpha)
        n = alpha.size
        r_d = qa - p - u + v
        mu = (s1 @ u + s2 @ v) / (2 * n)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            D = u / s1 + v / s2
        if not np.all(np.isfinite(D)) or mu <= 0.0:
            break  # the barrier has reached machine precision
        try:
            # predictor (affine scaling)
            dx = term.newton(D, -r_d - u + v)
            du = -u - u * dx / s1
            dv = -v + v * dx / s2
            tp, td = _step(s1, s2, dx), _dual_step(u, v, du, dv)
            mu_aff = ((s1 + tp * dx) @ (u + td * du)
                      + (s2 - tp * dx) @ (v + td * dv)) / (2 * n)
            sigma = min((mu_aff / mu) ** 3, 1.0)
            # corrector
            r1 = s1 * u + dx * du - sigma * mu
            r2 = s2 * v - dx * dv - sigma * mu
            dx = term.newton(D, -r_d - r1 / s1 + r2 / s2)
        except la.LinAlgError:
            break
        du = (-r1 - u * dx) / s1
        dv = (-r2 + v * dx) / s2
        tp, td = 0.99 * _step(s1, s2, dx), 0.99 * _dual_step(u, v, du, dv)
        alpha = alpha + tp * dx
        s1 = np.maximum(alpha - lo, 1e-300)
        s2 = np.maximum(hi - alpha, 1e-300)
        u, v = u + td * du, v + td * dv
    out[best_idx] = best
    return out, dropped_lo, dropped_hi, n_done


def _step(s1, s2, dx) -> float:
    t = 1.0
    neg, pos = dx < 0, dx > 0
    if neg.any():
        t = min(t, float(np.min(-s1[neg] / dx[neg])))
    if pos.any():
        t = min(t, float(np.min(s2[pos] / dx[pos])))
    return t


def _dual_step(u, v, du, dv) -> float:
    t = 1.0
    for z, dz in ((u, du), (v, dv)):
        neg = dz < 0
        if neg.any():
            t = min(t, float(np.min(-z[neg] / dz[neg])))
    return t


def snap_to_bounds(alpha, lo, hi, rtol: float = 1e-6) -> np.ndarray:
    """Round interior-point values that sit at a bound up to ``rtol`` of the box width."""
    width = hi - lo
    out = alpha.copy()
    out[alpha - lo <= rtol * width] = lo[alpha - lo <= rtol * width]
    out[hi - alpha <= rtol * width] = hi[hi - alpha <= rtol * width]
    return out


