r"""The exact regularisation path of the LP-SVM: a parametric simplex in :math:`\lambda`.

The linear program of :mod:`~sklearn_safescreen.problems.lp_svm`, scaled by :math:`n`,
in standard form with the variables :math:`p,q\ge0` (:math:`w=p-q`), :math:`\xi\ge0`
(the hinge slacks) and :math:`\sigma\ge0` (the surpluses):

.. math::

    \min\ \lambda n\,\mathbf 1^\top(p+q)+s^\top\xi\quad\text{s.t.}\quad
    Zp-Zq+\xi-\sigma=\mathbf 1 .

Only the costs depend on :math:`\lambda`, linearly, so a basis stays optimal on an
interval of :math:`\lambda`, over which its primal vertex is constant and its dual
solution linear in :math:`\lambda`. The homotopy starts at :math:`\lambda_{\max}` from
the basis of :math:`w=0` (every hinge slack basic) and, at each breakpoint, lets the
variable whose reduced cost reaches zero enter and the primal ratio test choose the one
that leaves. Ties on either side are broken by the smallest index (Bland's rule
applied to the programme at :math:`\lambda` just below the breakpoint), which cannot
cycle; ``doc/theory/lp_svm.rst`` has the argument.

Every basis of the problem has a structure the solver exploits: a set :math:`A` of
features with a sign (:math:`p_j` or :math:`q_j` basic), the samples whose hinge slack
is basic (margin at most 1, :math:`a_i=s_i`), those whose surplus is basic (margin at
least 1, :math:`a_i=0`), and the rest, the margin set :math:`E` with
:math:`|E|=|A|=k`. The basis is nonsingular exactly when the :math:`k\times k` matrix
:math:`M=Z_{E,A}\,\mathrm{diag}(\mathrm{sign}_A)` is, and every product with the basis
inverse is a product with :math:`M^{-1}`, which the solver keeps explicitly and updates
after each pivot (a column or a row replaced, a row and a column added or removed: each
a rank-one correction costing :math:`O(k^2)`), refactorised from scratch periodically and
when a check of its accuracy fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..problems.lp_svm import LPSVMData

#: Fewest pivots between two refactorisations of the basis inverse from scratch (the
#: interval is the larger of this and the support size): the updates accumulate
#: rounding error, and a fresh factor resets it.
REFACTOR_EVERY = 100
#: Relative tolerance of a tie: two crossings of zero (dual side) or two ratios (primal
#: side) closer than this are the same event, and the smallest index wins (Bland).
TIE_RTOL = 1e-12
#: Smallest pivot element, relative to the pivot column's largest entry: a smaller one
#: would not be a pivot of the exact basis but round-off.
PIVOT_RTOL = 1e-9
#: Smallest slope of a reduced cost (relative to its scale) that counts as decreasing:
#: slopes below it are zero up to round-off (e.g. a duplicate of an active feature).
SLOPE_RTOL = 1e-10
#: Accuracy the maintained quantities must keep (relative to their scale): beyond it the
#: basis inverse is refactorised and the drift reported.
DRIFT_RTOL = 1e-8
#: Relative duality gap certified at every breakpoint.
GAP_RTOL = 1e-9
#: Whether the compiled core applies the pricing's safe feature rule when the caller
#: does not say (``make_core(screen=None)``). Off: the rule changes no pivot, and the
#: pass over the free features it skips is a small part of a breakpoint next to the
#: margin rows' products and the basis solves, so its bookkeeping costs about what it
#: saves (``doc/theory/lp_svm.rst``, the safe feature rule for the pricing).
SCREEN = False
#: Relative margin of the pricing's safe feature rule: a feature is screened only if
#: its correlation bound stays below lambda n by this much of lambda n plus its
#: weighted column norm (which bounds the rounding of the correlations the pricing
#: computes); it must exceed the tie tolerance times the slopes' bound, which the rule
#: checks at each pricing.
SCREEN_RTOL = 1e-6
#: Relative length of the interval of lambda below a reference dual that the rule's
#: decisions cover: longer intervals are taken again less often but screen less.
SCREEN_SPAN = 0.01
#: How far the dual may move from the reference (in 1- and 2-norm) before it is taken
#: again, as a multiple of the reference basis's own dual move over the interval.
SCREEN_BUDGET = 2.0
#: Pivots allowed at one value of lambda before the solver gives up (Bland's rule makes
#: the number finite; this bounds it in floating point).
MAX_DEGENERATE = 100_000

# event codes (a pivot: the entering variable, then the leaving one)
FEATURE = 0  #: entering: a feature joins the support; leaving: a feature leaves it
BELOW = 1  #: entering: a margin sample leaves the margin to below 1 (a_i = s_i)
ABOVE = 2  #: entering: a margin sample leaves the margin to above 1 (a_i = 0)
SAMPLE = 3  #: leaving: a sample reaches the margin (joins E)

L_STATUS, R_STATUS, E_STATUS = 0, 1, 2


@dataclass
class Breakpoint:
    """One pivot: at ``lam``, the entering variable (``enter`` in FEATURE, BELOW, ABOVE,
    with its index and, for a feature, its sign) and the leaving one (``leave`` in
    FEATURE, SAMPLE, with its index); the vertex after it (``support``, ``values``);
    when asked for, its dual on the margin set and every sample's status; the certified
    relative gap."""

    lam: float
    enter: int
    enter_index: int
    sign: int
    leave: int
    leave_index: int
    support: np.ndarray
    values: np.ndarray
    margin_set: np.ndarray | None
    margin_dual: np.ndarray | None
    status: np.ndarray | None
    gap: float


class LPHomotopy:
    """The parametric simplex on one :class:`~..problems.lp_svm.LPSVMData` (samples of
    positive weight only).

    Parameters
    ----------
    data : LPSVMData
    """

    def __init__(self, data: LPSVMData):
        if np.any(data.s <= 0):
            raise ValueError("the homotopy needs positive sample weights (leave out the "
                             "samples of zero weight)")
        self.data = data
        n, d = data.n_samples, data.n_features
        self.n, self.d = n, d
        Z = data.Z
        if sp.issparse(Z):
            self.Zr = Z.tocsr()
            self.Zc = data.Zc.tocsc()
        else:
            self.Zr = np.ascontiguousarray(Z)
            self.Zc = np.asfortranarray(Z)
        self.s = data.s
        # the basis of w = 0: every hinge slack basic
        self.A = np.zeros(0, dtype=np.intp)  # features, in position order
        self.sgnA = np.zeros(0)  # their signs
        self.E = np.zeros(0, dtype=np.intp)  # margin samples, in position order
        self.status = np.full(n, L_STATUS, dtype=np.int8)
        self.in_A = np.zeros(d, dtype=bool)
        self.G = np.zeros((0, 0))  # inverse of M = Z[E][:, A] * sgnA
        self.t = np.zeros(0)  # |w_A|
        self.m = np.zeros(n)  # margins Z w
        self.cL = self._corr_below()  # Z_L^T s_L
        self.lam = np.inf

    # ---------------------------------------------------------------- products ---
    def _rows(self, rows):
        """:math:`Z_{rows,:}` (dense array or CSR)."""
        return self.Zr[rows]

    def _cols(self, cols):
        """:math:`Z_{:,cols}` (dense array or CSC)."""
        return self.Zc[:, cols]

    def _dense(self, a) -> np.ndarray:
        return a.toarray() if sp.issparse(a) else np.asarray(a)

    def _corr_below(self) -> np.ndarray:
        below = self.status == L_STATUS
        w = np.where(below, self.s, 0.0)
        return np.asarray(self.Zc.T @ w).ravel()

    def _row_vec(self, i) -> np.ndarray:
        r = self.Zr[i]
        return r.toarray().ravel() if sp.issparse(r) else r

    def _margin_matrix(self) -> np.ndarray:
        return self._dense(self._rows(self.E)[:, self.A]) * self.sgnA[None, :] \
            if len(self.A) else np.zeros((0, 0))

    # ----------------------------------------------------------- refactorise ---
    def refactor(self):
        """The basis inverse, the primal values, the margins and :math:`Z_L^\\top s_L`
        from scratch; returns the largest relative drift of the maintained primal values
        and the largest change of :math:`Z_L^\\top s_L`."""
        k = len(self.A)
        drift = 0.0
        if k:
            M = self._margin_matrix()
            G = np.linalg.inv(M)
            t = G.sum(axis=1)  # G @ 1
            drift = max(drift, _rel(self.t, t))
            self.G, self.t = G, t
        m = np.asarray(self._cols(self.A) @ (self.sgnA * self.t)).ravel() if k \
            else np.zeros(self.n)
        cL = self._corr_below()
        drift = max(drift, _rel(self.m, m))
        change = float(np.abs(self.cL - cL).max(initial=0.0))
        self.m, self.cL = m, cL
        return drift, change

    # ------------------------------------------------------------- duals ---
    def _dual_lines(self):
        """``(u, v)`` with the margin set's dual :math:`a_E(\\lambda)=\\lambda nu-v`."""
        if not len(self.A):
            return np.zeros(0), np.zeros(0)
        UV = self.G.T @ np.column_stack([np.ones(len(self.A)),
                                         self.sgnA * self.cL[self.A]])
        return UV[:, 0], UV[:, 1]

    def _corr_lines(self, u, v):
        """``(g, h)`` with the correlations :math:`Z^\\top a(\\lambda)=\\lambda ng+h`."""
        if not len(self.E):
            return np.zeros(self.d), self.cL.copy()
        P = np.asarray(self._rows(self.E).T @ np.column_stack([u, v]))
        return P[:, 0], self.cL - P[:, 1]

    def objectives(self, lam: float, u=None, v=None) -> tuple[float, float]:
        """The primal and dual objectives (scaled by :math:`n`) of the current basis at
        ``lam``."""
        if u is None:
            u, v = self._dual_lines()
        below = self.status == L_STATUS
        # the hinge of every sample: a margin that drifted to the wrong side shows
        primal = lam * self.n * float(self.t.sum()) + float(
            self.s @ np.maximum(1.0 - self.m, 0.0))
        dual = float(self.s[below].sum()) + float((lam * self.n * u - v).sum())
        return primal, dual

    # ------------------------------------------------------------- one pivot ---
    def next_event(self, lam_stop: float):
        """``(found, lam, kind, index, sign, gap)``: the next breakpoint at or below the
        current lambda and its entering variable (``index``: the feature, or the margin
        sample's position in E), with the basis's relative gap there; ``found`` is False
        when the basis is optimal down to ``lam_stop`` (or down to 0)."""
        n = self.n
        u, v = self._dual_lines()
        g, h = self._corr_lines(u, v)
        free = ~self.in_A
        # reduced costs d(lam) = d0 + lam d1 of every non-basic variable that can enter
        # (p_j, q_j of the free features; xi_i, sigma_i of the margin samples); one
        # enters where its d reaches 0 while decreasing (d1 > 0)
        d1 = np.concatenate([n * (1.0 - g), n * (1.0 + g), -n * u, n * u])
        d0 = np.concatenate([-h, h, self.s[self.E] + v, -v])
        ok = np.concatenate([free, free, np.ones(2 * len(u), dtype=bool)])
        slope_tol = SLOPE_RTOL * n * np.concatenate([
            np.ones(2 * self.d), np.full(2 * len(u), max(1.0, float(
                np.abs(u).max(initial=0.0))))])
        cand = ok & (d1 > slope_tol)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(cand, -d0 / np.where(cand, d1, 1.0), -np.inf)
        top = float(cross.max(initial=-np.inf))
        if not np.isfinite(top) or top <= lam_stop or top <= 0.0:
            return False, 0.0, -1, -1, 0, self._gap(_end_value(lam_stop, self.lam), u, v)
        lam_next = min(top, self.lam)
        ties = np.flatnonzero(cross >= top - TIE_RTOL * max(abs(top), 1e-300))
        # the variables' global order: p_0..p_{d-1}, q_0..q_{d-1}, xi_0.., sigma_0..
        d = self.d
        nE = len(u)
        gidx = np.concatenate([np.arange(d), d + np.arange(d),
                               2 * d + self.E, 2 * d + n + self.E])
        pick = ties[np.argmin(gidx[ties])]
        gap = self._gap(lam_next, u, v)
        if pick < d:
            return True, lam_next, FEATURE, int(pick), 1, gap
        if pick < 2 * d:
            return True, lam_next, FEATURE, int(pick - d), -1, gap
        if pick < 2 * d + nE:
            return True, lam_next, BELOW, int(pick - 2 * d), 0, gap
        return True, lam_next, ABOVE, int(pick - 2 * d - nE), 0, gap

    def gap_at(self, lam: float) -> float:
        """The current basis's relative duality gap at ``lam``."""
        u, v = self._dual_lines()
        return self._gap(lam, u, v)

    def support(self):
        return self.A.copy(), self.sgnA * self.t

    def margin_set(self):
        return self.E.copy()

    def margin_dual(self, lam: float):
        u, v = self._dual_lines()
        return lam * self.n * u - v

    def enter_sample(self, pos: int) -> int:
        return int(self.E[pos])

    @property
    def k(self) -> int:
        """The basis's support size (the margin matrix is k x k)."""
        return len(self.A)

    def eta_full(self) -> bool:
        """The explicit inverse has no eta file to outgrow."""
        return False

    @property
    def status_arr(self):
        return self.status

    def _gap(self, lam, u, v) -> float:
        primal, dual = self.objectives(lam, u, v)
        return abs(primal - dual) / max(abs(primal), 1e-300)

    def pivot(self, kind: int, index: int, sign: int):
        """Let the variable in; the primal ratio test picks the one that leaves.
        Returns ``(leave_kind, leave_index)`` (a feature or a sample)."""
        sgn = self.sgnA
        k = len(self.A)
        if kind == FEATURE:
            j = index
            col = self._dense(self._cols([j])).ravel() * sign
            alpha = self.G @ col[self.E] if k else np.zeros(0)
            dm = col - (np.asarray(self._cols(self.A) @ (sgn * alpha)).ravel() if k else 0.0)
        else:
            p = index  # position in E
            e_col = self.G[:, p]
            dir_ = 1.0 if kind == BELOW else -1.0
            alpha = dir_ * e_col
            dm = -np.asarray(self._cols(self.A) @ (sgn * alpha)).ravel()
        # rates at which the basic variables decrease: t_A by alpha; the hinge slacks
        # 1 - m of the samples below by dm; the surpluses m - 1 of those above by -dm
        below = self.status == L_STATUS
        above = self.status == R_STATUS
        rate_s = np.where(below, dm, np.where(above, -dm, 0.0))
        val_s = np.where(below, 1.0 - self.m, np.where(above, self.m - 1.0, 0.0))
        scale = max(float(np.abs(alpha).max(initial=0.0)),
                    float(np.abs(rate_s).max(initial=0.0)))
        ptol = PIVOT_RTOL * scale
        fa = alpha > ptol
        fs = rate_s > ptol
        ratios_a = np.maximum(self.t[fa], 0.0) / alpha[fa]
        ratios_s = np.maximum(val_s[fs], 0.0) / rate_s[fs]
        ia, is_ = np.flatnonzero(fa), np.flatnonzero(fs)
        if not len(ia) and not len(is_):
            raise RuntimeError("the LP-SVM homotopy found an unbounded edge: the "
                               "problem's weights must be positive")
        theta = min(ratios_a.min(initial=np.inf), ratios_s.min(initial=np.inf))
        tie = TIE_RTOL * max(theta, 1.0)
        ta = ia[ratios_a <= theta + tie]
        ts = is_[ratios_s <= theta + tie]
        # Bland: the smallest global index (features before samples)
        ga = np.where(sgn[ta] > 0, self.A[ta], self.d + self.A[ta])
        gs = np.where(below[ts], 2 * self.d + ts, 2 * self.d + self.n + ts)
        if len(ga) and (not len(gs) or ga.min() < gs.min()):
            leave_kind, leave_pos = FEATURE, int(ta[np.argmin(ga)])
        else:
            leave_kind, leave_pos = SAMPLE, int(ts[np.argmin(gs)])
        # the step
        self.t = self.t - theta * alpha
        self.m = self.m + theta * dm
        np.maximum(self.t, 0.0, out=self.t)
        self._update_basis(kind, index, sign, alpha, leave_kind, leave_pos, theta)
        leave_index = int(self.A_left) if leave_kind == FEATURE else leave_pos
        return leave_kind, leave_index

    def _update_basis(self, kind, index, sign, alpha, leave_kind, leave_pos, theta):
        """The basis and its inverse :math:`G=M^{-1}` after the pivot (rows of ``G``:
        the positions in A; columns: the positions in E)."""
        G = self.G
        if kind == FEATURE:
            j = index
            if leave_kind == FEATURE:
                # column replaced: G' = G - (alpha - e_p) G[p, :] / alpha_p
                p = leave_pos
                self.A_left = self.A[p]
                row = G[p, :] / alpha[p]
                upd = alpha.copy()
                upd[p] -= 1.0
                G -= np.outer(upd, row)
                G[p, :] = row
                self.in_A[self.A[p]] = False
                self.A[p], self.sgnA[p] = j, sign
                self.t[p] = theta
                self.in_A[j] = True
            else:
                # sample r reaches the margin: a row and a column added (bordering)
                r = leave_pos
                cvec = self._dense(self._rows([r])[:, self.A]).ravel() * self.sgnA \
                    if len(self.A) else np.zeros(0)
                delta = sign * float(self._dense(self._rows([r])[:, [j]]).ravel()[0])
                cG = cvec @ G
                sch = delta - float(cvec @ alpha)
                k = len(self.A)
                Gn = np.empty((k + 1, k + 1))
                Gn[:k, :k] = G + np.outer(alpha, cG) / sch
                Gn[:k, k] = -alpha / sch
                Gn[k, :k] = -cG / sch
                Gn[k, k] = 1.0 / sch
                self.G = Gn
                self._leave_slack(r)
                self.A = np.append(self.A, j)
                self.sgnA = np.append(self.sgnA, float(sign))
                self.t = np.append(self.t, theta)
                self.E = np.append(self.E, r)
                self.in_A[j] = True
        else:
            q = index  # position in E of the sample leaving the margin
            i = int(self.E[q])
            if leave_kind == FEATURE:
                # row q and column p of M removed
                p = leave_pos
                self.A_left = self.A[p]
                piv = G[p, q]
                Gn = G - np.outer(G[:, q], G[p, :]) / piv
                Gn = np.delete(np.delete(Gn, p, axis=0), q, axis=1)
                self.G = Gn
                self.in_A[self.A[p]] = False
                self.A = np.delete(self.A, p)
                self.sgnA = np.delete(self.sgnA, p)
                self.t = np.delete(self.t, p)
                self.E = np.delete(self.E, q)
            else:
                # row q replaced by sample r's
                r = leave_pos
                cvec = self._dense(self._rows([r])[:, self.A]).ravel() * self.sgnA
                cG = cvec @ G
                den = cG[q]
                upd = cG.copy()
                upd[q] -= 1.0
                G -= np.outer(G[:, q], upd) / den
                self._leave_slack(r)
                self.E[q] = r
            self._enter_slack(i, kind)

    def _leave_slack(self, r):
        if self.status[r] == L_STATUS:
            self.cL -= self.s[r] * self._row_vec(r)
        self.status[r] = E_STATUS
        self.m[r] = 1.0

    def _enter_slack(self, i, kind):
        self.status[i] = L_STATUS if kind == BELOW else R_STATUS
        if kind == BELOW:
            self.cL += self.s[i] * self._row_vec(i)


def make_core(data: LPSVMData, compiled: bool = True, factor: str = "auto",
              screen: bool | None = None):
    """The homotopy's state on ``data``: the compiled core, or the NumPy reference
    (:class:`LPHomotopy`), which makes the same pivots.

    ``screen`` turns on the compiled core's safe feature rule in the pricing (None:
    :data:`SCREEN`): from the dual at one breakpoint, the features proven to stay
    strictly inside their dual constraint down to ``1 - SCREEN_SPAN`` times that value
    (for every dual within the rule's budget of it) are not priced there, which
    changes no pivot (``doc/theory/lp_svm.rst``). The NumPy reference prices every
    feature.

    ``factor`` is the compiled core's basis factor: ``"dense"``, the explicit inverse of
    the margin matrix updated in place (:math:`O(k^2)` a pivot whatever the data);
    ``"lu"``, a sparse LU of the margin matrix at the last refactorisation followed by
    the eta file of the pivots since (product form), whose solves cost what the factor's
    and the etas' nonzeros do, so that sparse data with large supports are not charged
    :math:`k^2`; ``"auto"``: ``"lu"`` for sparse X, ``"dense"`` otherwise.
    """
    if factor not in ("auto", "dense", "lu"):
        raise ValueError(f"factor must be 'auto', 'dense' or 'lu', got {factor!r}")
    if not compiled:
        return LPHomotopy(data)
    from ._lp_homotopy_fast import HomotopyCore

    if np.any(data.s <= 0):
        raise ValueError("the homotopy needs positive sample weights (leave out the "
                         "samples of zero weight)")
    Z, Zc = data.Z, data.Zc
    if factor == "auto":
        factor = "lu" if sp.issparse(Z) else "dense"
    if factor == "lu" and not sp.issparse(Z):
        Z, Zc = sp.csr_matrix(Z), sp.csc_matrix(Z)
    core = HomotopyCore(Z, Zc, np.ascontiguousarray(data.s), SLOPE_RTOL, TIE_RTOL,
                        PIVOT_RTOL, factor == "lu")
    if SCREEN if screen is None else screen:
        c_inf, c_two = _column_norms(data.Zc)
        core.set_screening(c_inf, c_two, np.asarray(data.col_abs_s, dtype=np.float64),
                           SCREEN_RTOL, SCREEN_SPAN, SCREEN_BUDGET)
    return core


def _column_norms(Zc) -> tuple[np.ndarray, np.ndarray]:
    """Each column's largest absolute entry and 2-norm, each rounded up by a relative
    margin far above the rounding of the sums (the rule's bounds use them as upper
    bounds)."""
    if sp.issparse(Zc):
        Zc = sp.csc_matrix(Zc)
        c_inf = np.asarray(abs(Zc).max(axis=0).todense()).ravel()
        c_two = np.sqrt(np.asarray(Zc.multiply(Zc).sum(axis=0)).ravel())
    else:
        Zc = np.asarray(Zc)
        c_inf = np.abs(Zc).max(axis=0, initial=0.0)
        c_two = np.sqrt((Zc * Zc).sum(axis=0))
    return c_inf.astype(np.float64), c_two.astype(np.float64) * (1.0 + 1e-10)


class PathFollower:
    """Follows the path from a core's current basis: the breakpoints, each certified
    (the relative gap of the basis before and after the pivot, at the breakpoint, both
    at most ``GAP_RTOL``; else the factor is rebuilt from scratch and the basis
    evaluated again), the factor refactorised every ``max(refactor_every, k)`` pivots.

    ``drift_events`` counts the refactorisations forced by a failed check or by drift
    above ``DRIFT_RTOL``, which the caller reports.

    The follower can be resumed: :meth:`run` stops at ``lam_min`` with the core at the
    basis optimal there, and a later call with a smaller ``lam_min`` continues from it
    (the pivots made, ``n_pivots``, and the refactorisation schedule carry over, so a
    walk stopped at several values makes the pivots of one run to the last)."""

    def __init__(self, core, data: LPSVMData, refactor_every: int = REFACTOR_EVERY,
                 keep_status: bool = False):
        self.core = core
        self.refactor_every = int(refactor_every)
        self.keep_status = keep_status
        self.since_refactor = 0
        self.n_refactor = 0
        self.drift_events = 0
        self.max_drift = 0.0
        #: pivots made over every run
        self.n_pivots = 0
        # the scale of Z_L^T s_L: its largest possible entry
        self._cl_scale = max(float(data.col_abs_s.max(initial=0.0)), 1.0)

    def refresh(self, forced: bool = False) -> None:
        drift, change = self.core.refactor()
        drift = max(drift, change / self._cl_scale)
        self.since_refactor = 0
        self.n_refactor += 1
        self.max_drift = max(self.max_drift, drift)
        if forced or drift > DRIFT_RTOL:
            self.drift_events += 1

    def run(self, lam_min: float, max_breakpoints: int | None = None, values=()):
        """Yield the :class:`Breakpoint` s down to ``lam_min``; the solutions at
        ``values`` (primal and dual, from the basis optimal there) are collected in
        :attr:`snapshots` on the way (a value below where the path stops is not)."""
        core = self.core
        count = same = 0
        pending = sorted((float(v) for v in values), reverse=True)
        #: value -> (support, signed values, margin set, its dual, every sample's status)
        self.snapshots = {}
        while max_breakpoints is None or count < max_breakpoints:
            # every max(refactor_every, k) pivots: a fresh dense factor costs O(k^3),
            # so spread over k pivots it costs what one pivot's updates do; the sparse
            # factor also when its eta file outgrows it (each eta adds to every solve)
            if self.since_refactor >= max(self.refactor_every, core.k) \
                    or core.eta_full():
                self.refresh()
            found, lam, kind, index, sign, gap = core.next_event(lam_min)
            if gap > GAP_RTOL and self.n_pivots:
                # the basis lost accuracy: refactorise and evaluate again (the start
                # basis, w = 0, is exact)
                self.refresh(forced=True)
                found, lam, kind, index, sign, gap = core.next_event(lam_min)
            # the current basis is optimal from the next breakpoint (or the path's end)
            # up to the current value: the requested values in between are read here
            low = lam if found else lam_min
            while pending and pending[0] >= low:
                v = pending.pop(0)
                if v <= core.lam:
                    support, vals = core.support()
                    self.snapshots[v] = (support, vals, core.margin_set(),
                                         core.margin_dual(v),
                                         np.array(core.status_arr, copy=True))
            if not found:
                return
            same = same + 1 if lam >= core.lam else 0
            if same > MAX_DEGENERATE:
                raise RuntimeError("the LP-SVM homotopy made too many pivots at one "
                                   f"value of lambda ({lam:.6g})")
            enter_index = core.enter_sample(index) if kind != FEATURE else index
            leave_kind, leave_index = core.pivot(kind, index, sign)
            self.since_refactor += 1
            self.n_pivots += 1
            core.lam = lam
            gap_after = core.gap_at(lam)
            if gap_after > GAP_RTOL:
                # certified before it is recorded: a factor that lost accuracy in the
                # update is rebuilt and the new vertex evaluated from it
                self.refresh(forced=True)
                gap_after = core.gap_at(lam)
            support, values = core.support()
            if self.keep_status:
                dual = (core.margin_set(), core.margin_dual(lam),
                        np.array(core.status_arr, copy=True))
            else:
                dual = (None, None, None)
            yield Breakpoint(lam, kind, enter_index, sign, leave_kind, leave_index,
                             support, values, *dual, max(gap, gap_after))
            count += 1


def _end_value(lam_stop: float, lam: float) -> float:
    """Where the last basis's gap is checked: the path's end, or (a path down to 0, where
    both objectives of a separable problem vanish) half its last breakpoint."""
    if lam_stop > 0.0:
        return lam_stop
    return 0.5 * lam if np.isfinite(lam) else 1.0


def _rel(old, new, scale=None) -> float:
    if old.shape != new.shape or not old.size:
        return 0.0
    s = max(float(np.abs(new).max()), 1.0) if scale is None else max(scale, 1.0)
    return float(np.abs(old - new).max()) / s
