"""Independent ground truth for the screening tests of the SVM rules.

Nothing here imports ``sklearn_safescreen``: the exact solver is a separate dual
coordinate descent (numpy) followed by an exact active-set polish (solve
``Q_FF a_F = 1 - Q_FL hi_L`` on the free set), and the signed Gram matrix is built
directly with numpy / scikit-learn.

Problem (the dual of Ogawa et al. 2013, with the per-sample weights of
doc/theory/svm_lad.rst)::

    max_a  -1/2 a'Qa + 1'a   s.t.  0 <= a_i <= hi_i = C c_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear
from sklearn.metrics.pairwise import pairwise_kernels
from threadpoolctl import threadpool_limits

#: margin tolerance of the *true* sets: R = q > 1 + tol, L = q < 1 - tol
MARGIN_TOL = 1e-7
#: ground truth is accepted only below these (relative duality gap, KKT violation)
MAX_REL_GAP = 1e-10
MAX_KKT = 1e-9

#: hypothesis settings shared by the property tests: deterministic, no example database
#: written into the repository, no per-example deadline.
HYPOTHESIS_SETTINGS = dict(derandomize=True, database=None, deadline=None,
                           print_blob=True)


# ------------------------------------------------------------------------ data ---
def noisy_data(seed: int, n: int, d: int, flip: float = 0.1):
    """Gaussian inputs, labels from a random hyperplane plus noise, ``flip`` flipped."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    beta = rng.randn(d)
    y = np.sign(X @ beta + 0.5 * rng.randn(n) + 0.3)
    y[y == 0] = 1.0
    flips = rng.rand(n) < flip
    y[flips] *= -1.0
    return X, y


KERNELS = ("linear", "rbf0.1", "rbf1", "rbf10", "poly")


def kernel_matrix(X, kernel: str, bias: float = 0.0):
    """``K + bias**2`` for the kernels of the safety sweep (gamma relative to d)."""
    d = X.shape[1]
    if kernel == "linear":
        K = X @ X.T
    elif kernel.startswith("rbf"):
        K = pairwise_kernels(X, metric="rbf", gamma=float(kernel[3:]) / d)
    elif kernel == "poly":
        K = pairwise_kernels(X, metric="poly", gamma=1.0 / d, degree=3, coef0=1.0)
    else:
        raise ValueError(kernel)
    return K + bias**2


def signed_gram(X, y, kernel: str, bias: float = 0.0):
    """``Q_ij = y_i y_j (K(x_i, x_j) + bias^2)``, symmetrised."""
    Q = y[:, None] * kernel_matrix(X, kernel, bias) * y[None, :]
    return 0.5 * (Q + Q.T)


def augment(X, bias: float):
    """Explicit features of the bias-augmented linear kernel."""
    return np.hstack([X, np.full((X.shape[0], 1), bias)]) if bias else X


# ---------------------------------------------------------------- CD kernels ---
# Plain Python over the coordinates, numpy over each update: independent of the
# library's compiled solver, and fast enough for the ground truth's sizes (n <= ~2000).
def _cd_epochs(hi, alpha, diag, gradient, move, max_epochs, eps_pg, seed):
    """The coordinate descent of both forms: epochs over the coordinates in a random
    order, a projected Newton step on each (``gradient(i)`` the partial derivative of
    ``1/2 a'Qa - 1'a``, ``diag`` the diagonal of Q, ``move(i, delta)`` the update of
    the product the form keeps), until the projected gradients' spread is at most
    ``eps_pg``. Returns the epochs run."""
    rng = np.random.RandomState(seed)
    idx = np.arange(alpha.shape[0])
    for epoch in range(max_epochs):
        rng.shuffle(idx)
        pg_max, pg_min = -np.inf, np.inf
        for i in idx.tolist():
            if hi[i] <= 0.0:
                continue
            G = gradient(i)
            if alpha[i] <= 0.0:
                PG = min(G, 0.0)
            elif alpha[i] >= hi[i]:
                PG = max(G, 0.0)
            else:
                PG = G
            pg_max = max(pg_max, PG)
            pg_min = min(pg_min, PG)
            if PG != 0.0:
                old = alpha[i]
                if diag[i] > 0.0:
                    new = min(max(old - G / diag[i], 0.0), hi[i])
                else:
                    new = hi[i] if G < 0.0 else 0.0
                delta = new - old
                if delta != 0.0:
                    alpha[i] = new
                    move(i, delta)
        if pg_max - pg_min <= eps_pg:
            return epoch + 1
    return max_epochs


def _cd_dense(Q, hi, alpha, g, max_epochs, eps_pg, seed):
    """Coordinate descent on ``min 1/2 a'Qa - 1'a`` keeping ``g = Qa - 1``."""

    def move(i, delta):
        np.add(g, delta * Q[i], out=g)

    return _cd_epochs(hi, alpha, np.diag(Q).copy(), g.__getitem__, move, max_epochs,
                      eps_pg, seed)


def _cd_linear(Z, hi, alpha, w, max_epochs, eps_pg, seed):
    """Coordinate descent keeping ``w = Z'a`` (rows of Z are the signed samples)."""

    def move(i, delta):
        np.add(w, delta * Z[i], out=w)

    return _cd_epochs(hi, alpha, np.einsum("ij,ij->i", Z, Z),
                      lambda i: float(Z[i] @ w) - 1.0, move, max_epochs, eps_pg, seed)


def _newton_solver(Q, Z, Dg):
    """``r -> (Q + diag(Dg))^{-1} r`` by Cholesky (dense) or Woodbury (``Q = Z Z'``)."""
    if Q is not None:
        cf = np.linalg.cholesky(Q + np.diag(Dg))
        return lambda r: np.linalg.solve(cf.T, np.linalg.solve(cf, r))
    ZD = Z / Dg[:, None]
    small = np.linalg.cholesky(np.eye(Z.shape[1]) + Z.T @ ZD)
    return lambda r: r / Dg - ZD @ np.linalg.solve(small.T, np.linalg.solve(small, ZD.T @ r))


def _max_step(x, dx):
    neg = dx < 0
    return min(1.0, float(np.min(-x[neg] / dx[neg]))) if neg.any() else 1.0


def _box_qp_ipm(hi, Q=None, Z=None, max_iter=100):
    """Mehrotra primal-dual interior point for ``min 1/2 a'Qa - 1'a, 0 <= a <= hi``
    (``hi > 0``, slack ``s = hi - a`` kept as its own variable); an accurate start for
    the exact polish. ``Q`` dense, or ``Q = Z Z'`` with few columns (Newton systems by
    the Woodbury identity, O(n d^2) per iteration)."""
    n = hi.size
    a, s = 0.5 * hi, 0.5 * hi
    lam, mu = np.ones(n), np.ones(n)
    qmax = np.abs(Q).max() if Q is not None else float(np.einsum("ij,ij->i", Z, Z).max())
    scale = 1.0 + qmax * hi.max()
    for _ in range(max_iter):
        rd = (Q @ a if Q is not None else Z @ (Z.T @ a)) - 1.0 - lam + mu
        rp = a + s - hi
        nu = (a @ lam + s @ mu) / (2 * n)
        if nu < 1e-16 * scale and np.abs(rd).max() < 1e-12 * scale:
            break
        try:
            msolve = _newton_solver(Q, Z, lam / a + mu / s)
        except np.linalg.LinAlgError:
            break
        # predictor (affine) then Mehrotra corrector; complementarity residuals
        # rc1 = target - a*lam, rc2 = target - s*mu
        rc1, rc2 = -a * lam, -s * mu
        for corrector in (False, True):
            da = msolve(-rd + rc1 / a - (rc2 + mu * rp) / s)
            ds = -rp - da
            dlam, dmu = (rc1 - lam * da) / a, (rc2 - mu * ds) / s
            ap = min(_max_step(a, da), _max_step(s, ds))
            ad = min(_max_step(lam, dlam), _max_step(mu, dmu))
            if corrector:
                break
            nu_aff = ((a + ap * da) @ (lam + ad * dlam)
                      + (s + ap * ds) @ (mu + ad * dmu)) / (2 * n)
            sigma = min((nu_aff / nu) ** 3, 1.0)
            rc1 = -a * lam + sigma * nu - da * dlam
            rc2 = -s * mu + sigma * nu - ds * dmu
        a, s = a + 0.99 * ap * da, s + 0.99 * ap * ds
        lam, mu = lam + 0.99 * ad * dlam, mu + 0.99 * ad * dmu
    return np.clip(a, 0.0, hi)


# --------------------------------------------------------------- the solver ---
class GroundTruthInaccurate(AssertionError):
    """The reference solver missed the acceptance thresholds (MAX_REL_GAP, MAX_KKT)."""


@dataclass
class ExactSolution:
    C: float
    alpha: np.ndarray
    margins: np.ndarray  # Q alpha
    gap: float  # full duality gap P(w(alpha)) - D(alpha)
    rel_gap: float
    kkt: float  # max KKT violation
    dual: float

    def true_R(self, tol=MARGIN_TOL):
        return self.margins > 1.0 + tol

    def true_L(self, tol=MARGIN_TOL):
        return self.margins < 1.0 - tol


class _Op:
    """``Q`` given densely or as ``Z Z'`` (linear kernel)."""

    def __init__(self, Q=None, Z=None):
        self.Q, self.Z = Q, Z
        self.n = (Q if Q is not None else Z).shape[0]

    def matvec(self, a):
        if self.Q is not None:
            return self.Q @ a
        return self.Z @ (self.Z.T @ a)

    def cols(self, rows, a_cols, cols):
        """``Q[rows][:, cols] @ a_cols``."""
        if self.Q is not None:
            return self.Q[np.ix_(rows, cols)] @ a_cols
        return self.Z[rows] @ (self.Z[cols].T @ a_cols)

    def block(self, rows):
        if self.Q is not None:
            return self.Q[np.ix_(rows, rows)]
        return self.Z[rows] @ self.Z[rows].T


def svm_certificate(alpha, q, hi):
    """``(gap, rel_gap, kkt, dual)`` of ``alpha`` with margins ``q = Q alpha``.

    Per-sample gap terms ``a_i (q_i - 1) + hi_i max(0, 1 - q_i)`` are >= 0 and sum to
    ``P(w) - D(a)`` with the weighted hinge primal.
    """
    terms = alpha * (q - 1.0) + hi * np.maximum(0.0, 1.0 - q)
    gap = float(terms.sum())
    dual = float(-0.5 * alpha @ q + alpha.sum())
    rel_gap = gap / max(abs(dual), 1e-300)
    live = hi > 0
    viol = np.where(alpha <= 0.0, np.maximum(0.0, 1.0 - q),
                    np.where(alpha >= hi, np.maximum(0.0, q - 1.0), np.abs(q - 1.0)))
    kkt = float(viol[live].max()) if live.any() else 0.0
    return gap, rel_gap, kkt, dual


def _polish(op: _Op, hi, q, eps=None, n_free=None):
    """Exact active-set polish: partition by margins (free set: ``|q_i - 1| <= eps``, or
    the ``n_free`` samples closest to the margin), solve on the free set."""
    live = hi > 0
    if n_free is None:
        F = (np.abs(q - 1.0) <= eps) & live
    else:
        F = np.zeros(q.size, dtype=bool)
        F[np.argsort(np.where(live, np.abs(q - 1.0), np.inf))[:n_free]] = True
        F &= live
    L = (q < 1.0) & live & ~F
    a = np.where(L, hi, 0.0)
    Fi = np.flatnonzero(F)
    if Fi.size:
        Li = np.flatnonzero(L)
        rhs = np.ones(Fi.size) - (op.cols(Fi, hi[Li], Li) if Li.size else 0.0)
        A = op.block(Fi)
        sol = None
        try:
            cand = np.linalg.solve(A, rhs)
            if np.all(cand >= 0.0) and np.all(cand <= hi[Fi]) and \
                    np.allclose(A @ cand, rhs, rtol=0, atol=1e-12 * (1 + np.abs(rhs).max())):
                sol = cand
        except np.linalg.LinAlgError:
            pass
        if sol is None:  # singular or box-active: bounded least squares (BVLS)
            res = lsq_linear(A, rhs, bounds=(np.zeros(Fi.size), hi[Fi]), method="bvls",
                             tol=1e-15, lsmr_tol=None, max_iter=2000)
            sol = np.clip(res.x, 0.0, hi[Fi])
        a[Fi] = sol
    return a


def _clarabel_dual(hi, *, Q=None, Z=None):
    """The dual solved by CLARABEL (an interior-point code independent of both the
    library and ``_box_qp_ipm``), clipped to the box; None if it fails."""
    import cvxpy as cp

    n = hi.size
    a = cp.Variable(n)
    quad = (0.5 * cp.sum_squares(Z.T @ a) if Z is not None
            else 0.5 * cp.quad_form(a, cp.psd_wrap(0.5 * (Q + Q.T))))
    prob = cp.Problem(cp.Minimize(quad - cp.sum(a)), [a >= 0, a <= hi])
    try:
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12,
                   tol_feas=1e-12)
    except cp.error.SolverError:
        return None
    return None if a.value is None else np.clip(a.value, 0.0, hi)


def _polish_low_rank(op, hi, q, Z, consider) -> bool:
    """Polish with at most k free samples, k up to d + 2 (rank <= d: the margin set has
    at most ~d samples), re-partitioning from the polished margins."""
    for k in range(Z.shape[1] + 3):
        qi = q
        for _ in range(3):
            qi, done = consider(_polish(op, hi, qi, n_free=k))
            if done:
                return True
    return False


def _polish_all(op, hi, q, Z, consider) -> bool:
    for eps in (1e-9, 1e-7, 1e-5, 1e-3):
        if consider(_polish(op, hi, q, eps))[1]:
            return True
    return Z is not None and _polish_low_rank(op, hi, q, Z, consider)


def solve_svm_dual(C, *, Q=None, Z=None, weights=None, alpha0=None, seed=0,
                   max_rounds=8, require=True) -> ExactSolution:
    """Exact optimum of the (weighted) SVM dual.

    Either ``Q`` (dense signed Gram) or ``Z`` (signed feature rows, linear kernel).
    An interior-point start (dense Q up to n = 1000, or Z with few columns) followed by
    the exact active-set polish; if that does not certify, rounds of dual coordinate
    descent (from ``alpha0`` or the best point so far) with tighter and tighter
    tolerance, each followed by the polish. With ``require``, raises
    :class:`GroundTruthInaccurate` unless the acceptance thresholds (relative
    gap 1e-10, KKT 1e-9) are met.
    """
    op = _Op(Q, Z)
    n = op.n
    c = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    hi = C * c
    a = np.zeros(n) if alpha0 is None else np.clip(np.asarray(alpha0, float), 0.0, hi)
    best = None
    eps_pg, epochs = 1e-3, 200

    def consider(cand):
        nonlocal best
        qc = op.matvec(cand)
        gap, rel_gap, kkt, dual = svm_certificate(cand, qc, hi)
        if best is None or (kkt, rel_gap) < (best[3], best[2]):
            best = (cand, qc, rel_gap, kkt, gap, dual)
        return qc, rel_gap <= 1e-13 and kkt <= 1e-11

    with threadpool_limits(1):
        if (Q is not None and n <= 1000) or (Z is not None and Z.shape[1] <= 50):
            # interior point start, then the exact polish
            live = np.flatnonzero(hi > 0)
            a = np.zeros(n)
            if live.size:
                a[live] = (_box_qp_ipm(hi[live], Q=Q[np.ix_(live, live)]) if Q is not None
                           else _box_qp_ipm(hi[live], Z=Z[live]))
            q, done = consider(a.copy())
            for eps in (1e-9, 1e-7, 1e-5, 1e-3):
                if done:
                    break
                _, done = consider(_polish(op, hi, q, eps))
            if not done:  # a second, independent start: CLARABEL on the same dual
                a = _clarabel_dual(hi, Q=Q, Z=Z)
                if a is not None:
                    q, done = consider(a)
                    done = done or _polish_all(op, hi, q, Z, consider)
            if done:
                max_rounds = 0
            else:
                a = best[0].copy()
        for rnd in range(max_rounds):
            if Q is not None:
                g = Q @ a - 1.0
                _cd_dense(Q, hi, a, g, epochs, eps_pg, seed + rnd)
            else:
                w = Z.T @ a
                _cd_linear(np.ascontiguousarray(Z), hi, a, w, epochs, eps_pg, seed + rnd)
            q, done = consider(a.copy())
            if Z is not None and not done:
                done = _polish_low_rank(op, hi, q, Z, consider)
            for eps in (1e-9, 1e-6, 1e-3):
                if done:
                    break
                # active-set iterations: partition by margins, solve, re-partition
                qi = q
                for _ in range(6):
                    cand = _polish(op, hi, qi, eps)
                    qi, done = consider(cand)
                    if done:
                        break
            if done:
                break
            a = best[0].copy()
            eps_pg *= 0.01
            epochs *= 4
    alpha, q, rel_gap, kkt, gap, dual = best
    if require and not (rel_gap <= MAX_REL_GAP and kkt <= MAX_KKT):
        raise GroundTruthInaccurate(f"ground truth not accurate enough at C={C}: rel gap "
                                    f"{rel_gap:.2e}, KKT {kkt:.2e}")
    return ExactSolution(C, alpha, q, gap, rel_gap, kkt, dual)


def few_cd_epochs(C, Q, epochs, *, weights=None, seed=0):
    """A deliberately inexact dual point: ``epochs`` CD epochs from zero."""
    n = Q.shape[0]
    hi = C * (np.ones(n) if weights is None else np.asarray(weights, float))
    a = np.zeros(n)
    g = Q @ a - 1.0
    _cd_dense(Q, hi, a, g, epochs, 0.0, seed)
    q = Q @ a
    gap, rel_gap, kkt, dual = svm_certificate(a, q, hi)
    return ExactSolution(C, a, q, gap, rel_gap, kkt, dual)


# ------------------------------------------------------------------ checking ---
def violations(res, truth: ExactSolution, weights=None):
    """Screened samples contradicting the exact optimum.

    Returns ``(wrong_lower, wrong_upper)`` index arrays: screened into R but not in the
    true R, screened into L but not in the true L (margin tolerance 1e-7).
    """
    wrong_lower = np.flatnonzero(res.at_lower & ~truth.true_R())
    wrong_upper = np.flatnonzero(res.at_upper & ~truth.true_L())
    return wrong_lower, wrong_upper


def bound_violations(res, truth: ExactSolution, rtol=1e-9):
    """Samples whose bounds do not contain the exact margin ``z_i'w*``."""
    q = truth.margins
    slack = rtol * (1.0 + np.abs(res.lower) + np.abs(res.upper)) + 1e-9
    return np.flatnonzero((res.lower > q + slack) | (res.upper < q - slack))
