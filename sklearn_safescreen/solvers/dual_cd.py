r"""Box-constrained dual coordinate descent for SVM and LAD duals.

Solves

.. math::

    \min_{\alpha}\ \tfrac12\alpha^\top Q\alpha - p^\top\alpha
    \quad\text{s.t.}\quad lo_i \le \alpha_i \le hi_i,
    \qquad Q_{ij} = s_i s_j k(x_i, x_j),

whose primal is :math:`\min_w \tfrac12\|w\|^2 + \sum_i \max(lo_i t_i, hi_i t_i)` with
:math:`t_i = p_i - s_i w^\top\Phi(x_i)` and :math:`w = \sum_i \alpha_i s_i \Phi(x_i)`.

* SVM (spec svm A1.2): :math:`s = y`, :math:`p = 1`, box :math:`[0, C c_i]`.
* LAD (spec svm B6): :math:`s = 1`, :math:`p = y`, box :math:`[-C c_i, C c_i]`.

Some variables may be *fixed* (by screening) at a bound; they leave the optimisation but
keep their contribution to :math:`w` (linear mode) or to the gradient (kernel mode), which
is the linear-term correction of spec svm A1.4 / B2.

Two modes share the stopping rule and the dynamic-screening hook:

* **linear**: keeps :math:`w` up to date (Hsieh et al. 2008, LIBLINEAR), random
  permutation per epoch and LIBLINEAR-style shrinking, dense or CSR data;
* **kernel**: a dense signed kernel block over the *free* samples only, and the gradient
  :math:`g = Q\alpha - p` kept up to date.

The per-sample duality gap is :math:`\max(-lo_i g_i, -hi_i g_i) + \alpha_i g_i \ge 0` where
:math:`g_i = s_i w^\top\Phi(x_i) - p_i` is the dual gradient, so the gap of the reduced
problem costs one pass over the margins. The solver stops when the gap divided by the
dual objective is at most ``tol``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.linalg import LinAlgWarning, cho_factor, cho_solve

from .._kernels import KernelMatrix, add_rows, check_kernel_memory
from ..screening.balls import SCREEN_RTOL, gap_ball_screen
from .box_ipm import DenseTerm, LowRankTerm, box_qp_ipm, ipm_low_rank_dense, snap_to_bounds

_TINY = 1e-300
#: Epochs of coordinate descent after which a still-unconverged solve is finished by the
#: interior-point method (when its Newton systems are small enough).
IPM_AFTER_EPOCHS = 10
#: Linear mode: CD hands over to the interior-point method when, at its measured linear
#: rate, it would still need more than this many epochs per feature. (~25 Newton steps
#: of O(n d^2) flops against O(n d) per epoch suggests ~25, but BLAS-3 flops are far
#: cheaper than CD's: measured on 20000 x 50, 2 gave the fastest paths, 25 was 1.2x
#: slower on paths and 2x slower at large C.)
IPM_EPOCHS_PER_FEATURE = 2
#: Largest Newton system the finisher forms: d+1 (linear mode) or the free-set size
#: (kernel mode).
IPM_MAX_SYSTEM = 2500
#: Problems whose Newton system costs at most this many flops are always finished by the
#: interior-point method, so small fits are exact to ~1e-12 whatever ``tol``.
IPM_SMALL_FLOPS = 1e6
#: Relative gap the finisher aims at: far below ``tol``, because the solution is the next
#: screening reference and the gap inflation of an inexact reference (spec F1) grows with
#: the square root of the absolute gap.
IPM_TOL = 1e-12
#: Kernel mode: the interior-point finisher starts after this many epochs per free
#: variable (measured: a LAPACK factorisation of n variables costs far fewer than n/3
#: compiled CD epochs, and 10 per variable made hard problems 2-4x slower).
KERNEL_IPM_EPOCHS_PER_VARIABLE = 1
#: ``stop_when_slow`` returns only when more variables than this are undecided (fewer:
#: the interior-point finisher is cheap).
STOP_WHEN_SLOW_MIN = 2000
#: Kernel mode: epochs after which a Newton step on the interior variables is tried
#: (each time the interior set changes).
NEWTON_AFTER_EPOCHS = 5
#: At most this many Newton steps per solve: with clipping, the interior set could
#: otherwise cycle.
NEWTON_MAX_STEPS = 10
#: Kernel mode: largest interior set a Newton step factorises (288 MB; measured on an
#: RBF path over make_classification(10000 x 20), 10 values, both caches 2 GB: at 2,500,
#: coordinate descent alone crawled through the 4,600-variable interiors and the path
#: took 3.8x SVC's time, at 6,000 1.8x).
NEWTON_MAX_SYSTEM = 6000
#: Factors of at most this many variables (50 MB) are kept between the fits of a path
#: (:meth:`NewtonCache.end_fit`); larger ones serve the rounds of one fit only.
NEWTON_KEEP_SYSTEM = 2500
#: A Newton system whose interior set differs from the last factorised one by at most
#: this fraction of its size is solved with that factor, bordered (k+1 triangular solve
#: pairs, 2 k m^2 flops, against m^3 / 3 for a new factorisation; measured on the
#: n=5000 RBF path: 0.12 was slower than 0.05).
NEWTON_UPDATE_FRACTION = 0.05


@dataclass
class BoxQP:
    """One box-constrained dual problem over all ``n`` samples.

    Exactly one of ``X`` (linear mode: the design matrix, bias column included) and
    ``kernel`` (kernel mode) is set.
    """

    sign: np.ndarray
    p: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sqnorm: np.ndarray
    X: np.ndarray | sp.csr_matrix | None = None
    kernel: KernelMatrix | None = None
    #: kernel mode: the factor cache of the Newton steps, kept by the caller across the
    #: solves of one problem's Q (:class:`NewtonCache`); a fresh one per solve if None
    newton: NewtonCache | None = None

    @property
    def n_samples(self) -> int:
        return self.sign.shape[0]

    @property
    def linear(self) -> bool:
        return self.X is not None

    def primal_weights(self, alpha: np.ndarray) -> np.ndarray:
        """``w = sum_i alpha_i s_i x_i`` (linear mode)."""
        return np.asarray(self.X.T @ (self.sign * alpha)).ravel()

    def margins(self, alpha: np.ndarray, rows=None) -> np.ndarray:
        """``q_i = s_i w^T Phi(x_i) = (Q alpha)_i`` for ``rows`` (default: all)."""
        if self.linear:
            w = self.primal_weights(alpha)
            if rows is None:  # no row gather: it would copy X
                return self.sign * np.asarray(self.X @ w).ravel()
            return self.sign[rows] * np.asarray(self.X[rows] @ w).ravel()
        rows = np.arange(self.n_samples) if rows is None else np.asarray(rows)
        nz = np.flatnonzero(alpha)
        return self.sign[rows] * self.kernel.matvec(rows, nz, self.sign[nz] * alpha[nz])

    def gap_terms(self, alpha: np.ndarray, q: np.ndarray, rows=None) -> np.ndarray:
        """Per-sample duality gap at margins ``q`` (all rows, or ``rows``)."""
        if rows is None:
            rows = np.arange(self.n_samples)
        return _gap_terms(np.ascontiguousarray(q, dtype=np.float64), self.p, self.lo,
                          self.hi, alpha, np.asarray(rows, dtype=np.int64))

    def dual_objective(self, alpha: np.ndarray, q: np.ndarray) -> float:
        """``-1/2 a'Qa + p'a`` given the margins ``q = Q a`` of every sample."""
        return float(-0.5 * alpha @ q + self.p @ alpha)

    def primal_objective(self, alpha: np.ndarray, q: np.ndarray) -> float:
        t = self.p - q
        return float(0.5 * alpha @ q + np.maximum(self.lo * t, self.hi * t).sum())


@dataclass
class SolveResult:
    """What :func:`solve_box_qp` returns."""

    alpha: np.ndarray
    fixed: np.ndarray  # pre-fixed plus dynamically fixed variables
    gap: float  # duality gap of the reduced problem at ``alpha``
    rel_gap: float
    n_iter: int
    converged: bool
    dynamic: list = field(default_factory=list)  # (n_lower, n_upper, n_free_left)
    stopped_slow: bool = False  # returned early on request (``stop_when_slow``)
    margins: np.ndarray | None = None  # Q alpha over all samples, when already known


# --------------------------------------------------------------------------- numba ---
#: Lets LLVM reorder the sums of row products (SIMD) and fuse multiply-adds; no
#: assumptions about NaN or infinities. The certificate does not depend on the rounding.
_VECTOR_MATH = {"reassoc", "contract"}


@njit(cache=True, nogil=True, fastmath=_VECTOR_MATH)
def _row_dot(dense, data, indices, indptr, is_sparse, i, w):
    acc = 0.0
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
    else:
        for j in range(dense.shape[1]):
            acc += dense[i, j] * w[j]
    return acc


@njit(cache=True, nogil=True)
def _gap_terms(q, p, lo, hi, alpha, rows):
    """Per-sample duality gap ``max(-lo g, -hi g) + alpha g``, ``g = q - p``, of
    ``rows`` (``q`` holds their margins), without gathering the other arrays."""
    out = np.empty(rows.size)
    for k in range(rows.size):
        i = rows[k]
        g = q[k] - p[i]
        out[k] = max(-lo[i] * g, -hi[i] * g) + alpha[i] * g
    return out


@njit(cache=True, nogil=True)
def _signed_row_dots(dense, data, indices, indptr, is_sparse, sign, rows, w):
    """``sign_i x_i' w`` for ``rows``, without gathering the rows into a copy."""
    out = np.empty(rows.size)
    for k in range(rows.size):
        i = rows[k]
        out[k] = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w)
    return out


@njit(cache=True, nogil=True, fastmath=_VECTOR_MATH)
def _row_axpy(dense, data, indices, indptr, is_sparse, i, step, w):
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            w[indices[k]] += step * data[k]
    else:
        for j in range(dense.shape[1]):
            w[j] += step * dense[i, j]


@njit(cache=True, nogil=True)
def _linear_epochs(dense, data, indices, indptr, is_sparse, sign, p, lo, hi, sqnorm,
                   alpha, w, active, max_epochs, eps_pg, seed):
    """Coordinate descent epochs over ``active`` with LIBLINEAR shrinking.

    Returns (epochs run, True if the projected-gradient range fell below ``eps_pg`` on
    the whole active set).
    """
    np.random.seed(seed)
    n = active.shape[0]
    idx = active.copy()
    size = n
    pg_max_old = np.inf
    pg_min_old = -np.inf
    for epoch in range(max_epochs):
        for k in range(size - 1, 0, -1):
            j = np.random.randint(0, k + 1)
            idx[k], idx[j] = idx[j], idx[k]
        pg_max = -np.inf
        pg_min = np.inf
        s = 0
        while s < size:
            i = idx[s]
            G = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w) - p[i]
            PG = 0.0
            if alpha[i] <= lo[i]:
                if G > pg_max_old:
                    size -= 1
                    idx[s], idx[size] = idx[size], idx[s]
                    continue
                if G < 0.0:
                    PG = G
            elif alpha[i] >= hi[i]:
                if G < pg_min_old:
                    size -= 1
                    idx[s], idx[size] = idx[size], idx[s]
                    continue
                if G > 0.0:
                    PG = G
            else:
                PG = G
            if PG > pg_max:
                pg_max = PG
            if PG < pg_min:
                pg_min = PG
            if abs(PG) > 1e-14:
                old = alpha[i]
                if sqnorm[i] > 0.0:
                    new = min(max(old - G / sqnorm[i], lo[i]), hi[i])
                else:  # z_i = 0: the objective is linear in alpha_i
                    new = hi[i] if G < 0.0 else lo[i]
                if new != old:
                    alpha[i] = new
                    _row_axpy(dense, data, indices, indptr, is_sparse, i,
                              (new - old) * sign[i], w)
            s += 1
        if pg_max - pg_min <= eps_pg:
            if size == n:
                return epoch + 1, True
            size = n
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return max_epochs, False


@njit(cache=True, nogil=True)
def _kernel_epochs(Q, lo, hi, alpha, g, active, max_epochs, eps_pg, seed):
    """Coordinate descent epochs on a dense local ``Q`` keeping ``g = Q alpha - p``."""
    np.random.seed(seed)
    idx = active.copy()
    n = idx.shape[0]
    m = Q.shape[0]
    for epoch in range(max_epochs):
        for k in range(n - 1, 0, -1):
            j = np.random.randint(0, k + 1)
            idx[k], idx[j] = idx[j], idx[k]
        pg_max = -np.inf
        pg_min = np.inf
        for s in range(n):
            i = idx[s]
            G = g[i]
            if alpha[i] <= lo[i]:
                PG = min(G, 0.0)
            elif alpha[i] >= hi[i]:
                PG = max(G, 0.0)
            else:
                PG = G
            if PG > pg_max:
                pg_max = PG
            if PG < pg_min:
                pg_min = PG
            if abs(PG) > 1e-14:
                old = alpha[i]
                if Q[i, i] > 0.0:
                    new = min(max(old - G / Q[i, i], lo[i]), hi[i])
                else:
                    new = hi[i] if G < 0.0 else lo[i]
                delta = new - old
                if delta != 0.0:
                    alpha[i] = new
                    for j in range(m):
                        g[j] += delta * Q[i, j]
        if pg_max - pg_min <= eps_pg:
            return epoch + 1, True
    return max_epochs, False


# ------------------------------------------------------------------------- driver ---
DynamicScreen = Callable[[np.ndarray, np.ndarray, np.ndarray, float],
                         tuple[np.ndarray, np.ndarray]]


def solve_box_qp(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *, tol: float,
                 max_iter: int, random_state: np.random.RandomState,
                 dynamic_screen: DynamicScreen | None = None,
                 const_fixed_quad: float | None = None,
                 stop_when_slow: bool = False) -> SolveResult:
    """Solve the problem with the variables in ``fixed`` held at their current values.

    Parameters
    ----------
    problem : BoxQP
    alpha : ndarray of shape (n_samples,)
        Start point (copied); fixed entries must sit at a bound.
    fixed : ndarray of bool, shape (n_samples,)
        Variables removed from the optimisation.
    tol : float
        Target relative duality gap ``gap / dual objective`` of the reduced problem.
    max_iter : int
        Maximum number of epochs.
    random_state : RandomState
        Seeds the coordinate permutations.
    dynamic_screen : callable, optional
        ``f(margins, targets, sqnorms, gap) -> (to_lower, to_upper)`` on the active
        variables, called at every gap check; the variables it returns are fixed at the
        corresponding bound (it must be safe for the reduced problem: a gap ball).
    const_fixed_quad : float, optional
        Kernel mode only: ``a_X' Q_XX a_X`` over the fixed variables, which makes the
        dual objective (the denominator of the relative gap) exact. Computed when None.

    Returns
    -------
    SolveResult
    """
    alpha = alpha.astype(np.float64, copy=True)
    fixed = fixed.copy()
    # a degenerate box is a fixed variable
    fixed |= problem.hi <= problem.lo
    if problem.linear:
        return _solve_linear(problem, alpha, fixed, tol, max_iter, random_state,
                             dynamic_screen, stop_when_slow)
    return _solve_kernel(problem, alpha, fixed, tol, max_iter, random_state,
                         dynamic_screen, const_fixed_quad)


def _check_schedule(n_iter: int) -> int:
    """Epochs before the next gap check: doubling (1, 1, 2, 4, ...), capped, so that
    dynamic screening acts early and checks cost O(log epochs) on slow problems; a call
    also returns as soon as the projected gradient converges (LIBLINEAR's criterion)."""
    return int(min(max(n_iter, 1), 500))


def _apply_dynamic(dynamic_screen, active, q_act, problem, gap):
    lo_mask, hi_mask = dynamic_screen(q_act, problem.p[active], problem.sqnorm[active], gap)
    return active[lo_mask], active[hi_mask]


def _solve_linear(problem, alpha, fixed, tol, max_iter, rng, dynamic_screen,
                  stop_when_slow=False):
    X = problem.X
    is_sparse = sp.issparse(X)
    if is_sparse:
        dense = np.zeros((1, 1))
        data, indices, indptr = X.data, X.indices, X.indptr
    else:
        dense = X
        data, indices = np.zeros(1), np.zeros(1, dtype=np.int32)
        indptr = np.zeros(2, dtype=np.int32)
    w = problem.primal_weights(alpha)
    active = np.flatnonzero(~fixed).astype(np.int64)
    n_iter, eps_pg, events, ipm_done = 0, 0.1, [], False
    gap = rel_gap = np.inf
    converged, gap_history = False, []
    while True:
        if active.size:
            epochs, pg_ok = _linear_epochs(
                dense, data, indices, indptr, is_sparse, problem.sign, problem.p,
                problem.lo, problem.hi, problem.sqnorm, alpha, w, active,
                min(_check_schedule(n_iter), max(max_iter - n_iter, 1)), eps_pg,
                rng.randint(2**31 - 1))
            n_iter += epochs
        else:
            pg_ok = True
        if 2 * active.size > problem.n_samples:  # BLAS on all rows beats a gather
            q_act = problem.sign[active] * np.asarray(X @ w).ravel()[active]
        else:
            q_act = _signed_row_dots(dense, data, indices, indptr, is_sparse,
                                     problem.sign, active, w)
        gap = float(problem.gap_terms(alpha, q_act, active).sum()) if active.size else 0.0
        dual = float(-0.5 * w @ w + problem.p @ alpha)
        rel_gap = gap / max(abs(dual), _TINY)
        ipm_fits = X.shape[1] <= IPM_MAX_SYSTEM and active.size > 1
        small = active.size * X.shape[1] ** 2 <= IPM_SMALL_FLOPS
        polish = ipm_fits and small and not ipm_done and rel_gap > IPM_TOL
        if rel_gap <= tol and not polish:
            converged = True
            break
        if n_iter >= max_iter:
            break
        if dynamic_screen is not None and active.size:
            to_lo, to_hi = _apply_dynamic(dynamic_screen, active, q_act, problem, gap)
            if to_lo.size or to_hi.size:
                moved = np.concatenate([to_lo, to_hi])
                new = np.concatenate([problem.lo[to_lo], problem.hi[to_hi]])
                step = (new - alpha[moved]) * problem.sign[moved]
                w += np.asarray(X[moved].T @ step).ravel()
                alpha[moved] = new
                fixed[moved] = True
                active = np.flatnonzero(~fixed).astype(np.int64)
                events.append((to_lo.size, to_hi.size, active.size))
        # CD converges linearly; hand over to the interior-point method only when the
        # epochs CD still needs at its measured rate exceed what the IPM costs (about
        # IPM_EPOCHS_PER_FEATURE * d epochs: each Newton step is O(n d^2))
        slow = n_iter >= IPM_AFTER_EPOCHS and _epochs_to_tol(
            gap_history, n_iter, rel_gap, tol) > IPM_EPOCHS_PER_FEATURE * X.shape[1]
        gap_history.append((n_iter, rel_gap))
        if slow and stop_when_slow and active.size > STOP_WHEN_SLOW_MIN:
            return SolveResult(alpha, fixed, gap, rel_gap, n_iter, False, events,
                               stopped_slow=True)
        if (ipm_fits and not ipm_done and active.size > 1  # screening may have emptied it
                and (polish or slow)):
            ipm_done = True
            w, to_lo, to_hi = _ipm_finish_linear(problem, alpha, w, active, tol,
                                                 dynamic_screen)
            if to_lo.size or to_hi.size:
                fixed[to_lo] = fixed[to_hi] = True
                active = np.flatnonzero(~fixed).astype(np.int64)
                events.append((to_lo.size, to_hi.size, active.size))
            continue
        if pg_ok:
            eps_pg *= 0.1
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events)


def _epochs_to_tol(history, n_iter: int, rel_gap: float, tol: float) -> float:
    """Epochs CD still needs to reach ``tol`` at the linear rate measured since an
    earlier gap check (the middle one of ``history``); inf when it is not progressing."""
    if not history or not np.isfinite(rel_gap) or rel_gap <= 0.0:
        return np.inf if history else 0.0
    it0, gap0 = history[len(history) // 2]
    if n_iter <= it0 or not (0.0 < rel_gap < gap0):
        return np.inf
    rate = np.log(gap0 / rel_gap) / (n_iter - it0)  # per epoch
    return max(np.log(rel_gap / tol), 0.0) / rate


def _ipm_finish_linear(problem, alpha, w, active, tol, dynamic_screen):
    """Finish the solve over ``active`` with the interior-point method (in place).

    Returns the new ``w`` and the indices the IPM's gap balls fixed at each bound.
    """
    X, sign, p = problem.X, problem.sign, problem.p
    Z = (sp.diags(sign[active]) @ X[active]).tocsr() if sp.issparse(X) \
        else X[active] * sign[active, None]
    w_rest = w - np.asarray(Z.T @ alpha[active]).ravel()
    p_outside = float(p @ alpha) - float(p[active] @ alpha[active])
    lo, hi = problem.lo[active], problem.hi[active]
    ipm_tol = min(0.01 * tol, IPM_TOL)
    if not sp.issparse(Z) and dynamic_screen in (None, gap_ball_screen):
        # the compiled twin: small finishes are dominated by call overhead in Python
        a, d_lo, d_hi, _ = ipm_low_rank_dense(
            Z, w_rest, p[active], lo, hi, problem.sqnorm[active], p_outside, ipm_tol,
            alpha[active], dynamic_screen is not None, SCREEN_RTOL, 80)
    else:
        a, d_lo, d_hi, _ = box_qp_ipm(LowRankTerm(Z, w_rest), p[active], lo, hi,
                                      problem.sqnorm[active], p_outside=p_outside,
                                      tol=ipm_tol, alpha0=alpha[active],
                                      screen=dynamic_screen)
    alpha[active] = snap_to_bounds(a, lo, hi)
    return w_rest + np.asarray(Z.T @ alpha[active]).ravel(), active[d_lo], active[d_hi]


def _solve_kernel(problem, alpha, fixed, tol, max_iter, rng, dynamic_screen,
                  const_fixed_quad, held=None):
    """Kernel mode. ``held=(Q_free, held_margins)`` passes the signed kernel block of the
    free variables and their margins from the held ones when the caller has them."""
    K = problem.kernel
    free = np.flatnonzero(~fixed)
    check_kernel_memory(free.size, min(free.size, NEWTON_MAX_SYSTEM))
    if held is None:
        held_idx = np.flatnonzero(fixed & (alpha != 0))
        s_f = problem.sign[free]
        Q = signed_block(problem, free, free)
        a_held = problem.sign[held_idx] * alpha[held_idx]
        # margins contributed by the held variables (linear-term correction, spec A1.4)
        d = s_f * K.matvec(free, held_idx, a_held)
        if const_fixed_quad is None:
            const_fixed_quad = (float(a_held @ K.matvec(held_idx, held_idx, a_held))
                                if held_idx.size else 0.0)
    else:
        Q, d = held
    a = alpha[free].copy()
    lo, hi = problem.lo[free], problem.hi[free]
    p_f = problem.p[free]
    g = Q @ a + d - p_f
    local_active = np.flatnonzero(lo < hi).astype(np.int64)
    p_held = float(problem.p[fixed] @ alpha[fixed])
    n_iter, eps_pg, events, ipm_done = 0, 0.1, [], False
    gap = rel_gap = np.inf
    converged, newton_tried, n_newton = False, None, 0
    newton = problem.newton if problem.newton is not None else NewtonCache()
    while True:
        if local_active.size:
            epochs, pg_ok = _kernel_epochs(
                Q, lo, hi, a, g, local_active,
                min(_check_schedule(n_iter), max(max_iter - n_iter, 1)), eps_pg,
                rng.randint(2**31 - 1))
            n_iter += epochs
        else:
            pg_ok = True
        la = local_active
        gap = float((np.maximum(-lo[la] * g[la], -hi[la] * g[la]) + a[la] * g[la]).sum())
        q_f = g + p_f
        # a'Qa = a_F'(q_F - d) + 2 a_F'd + const  with q_F - d = Q_FF a_F
        quad = a @ (q_f - d) + 2.0 * a @ d + const_fixed_quad
        dual = -0.5 * quad + p_f @ a + p_held
        rel_gap = gap / max(abs(dual), _TINY)
        ipm_fits = 1 < la.size <= IPM_MAX_SYSTEM
        small = la.size**3 / 3 <= IPM_SMALL_FLOPS
        # Once CD has found which variables sit at a bound, one linear solve on the
        # others usually finishes the job (CD crawls there at large C), and exactly:
        # tried after a few epochs, or at once on small problems (accurate references),
        # and again whenever the interior set changes.
        interior = la[(a[la] > lo[la]) & (a[la] < hi[la])]
        newton_fresh = (0 < interior.size <= NEWTON_MAX_SYSTEM
                        and not np.array_equal(interior, newton_tried))
        if newton_fresh and n_newton < NEWTON_MAX_STEPS and (
                rel_gap > tol and n_iter >= NEWTON_AFTER_EPOCHS
                or small and rel_gap > IPM_TOL):
            newton_tried, n_newton = interior, n_newton + 1
            if _newton_on_interior(problem, Q, free, a, g, lo, hi, interior,
                                   newton):
                if pg_ok:
                    eps_pg *= 0.1
                continue
        # the interior-point method polishes small problems that Newton did not finish
        polish = (ipm_fits and not ipm_done and small and rel_gap > IPM_TOL
                  and (rel_gap > tol or not np.array_equal(interior, newton_tried)))
        if rel_gap <= tol and not polish:
            converged = True
            break
        if n_iter >= max_iter:
            break
        if dynamic_screen is not None and la.size:
            lo_m, hi_m = dynamic_screen(q_f[la], p_f[la], problem.sqnorm[free][la], gap)
            to_lo, to_hi = la[lo_m], la[hi_m]
            if to_lo.size or to_hi.size:
                moved = np.concatenate([to_lo, to_hi])
                new = np.concatenate([lo[to_lo], hi[to_hi]])
                add_rows(g, Q, moved, new - a[moved])
                a[moved] = new
                keep = np.ones(a.size, dtype=bool)
                keep[moved] = False
                keep[lo >= hi] = False
                local_active = local_active[keep[local_active]]
                events.append((to_lo.size, to_hi.size, local_active.size))
        if ipm_fits and not ipm_done and local_active.size > 1 and (
                polish or n_iter >= max(IPM_AFTER_EPOCHS,
                                        KERNEL_IPM_EPOCHS_PER_VARIABLE * local_active.size)):
            ipm_done = True
            to_lo, to_hi = _ipm_finish_kernel(Q, a, g, lo, hi, local_active, p_f, d,
                                              problem.sqnorm[free], tol, const_fixed_quad,
                                              p_held, dynamic_screen)
            if to_lo.size or to_hi.size:
                keep = np.ones(a.size, dtype=bool)
                keep[to_lo] = keep[to_hi] = False
                local_active = local_active[keep[local_active]]
                events.append((to_lo.size, to_hi.size, local_active.size))
            continue
        if pg_ok:
            eps_pg *= 0.1
    alpha[free] = a
    dyn_fixed = np.ones(free.size, dtype=bool)
    dyn_fixed[local_active] = False
    fixed[free[dyn_fixed]] = True
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events)


class NewtonCache:
    """The Cholesky factor of the last interior block :math:`Q_{FF}` (global sample
    indices F) that a kernel-mode Newton step factorised, kept by the task's data across
    the working-set rounds of a solve and the fits of a warm-started path (Q depends on
    the kernel and the signs only, not on C).

    The next Newton systems' interior sets usually differ from F by a few variables
    (measured on the n=5000 RBF benchmark: 2,249 then 2,248 of the same variables within
    a round, about 2% between path steps), so they cost a few triangular solves with
    this factor, bordered (:func:`_bordered_solve`), instead of a new O(m^3)
    factorisation. A factor holds at most ``NEWTON_MAX_SYSTEM`` squared doubles (288 MB)
    within a fit and ``NEWTON_KEEP_SYSTEM`` squared (50 MB) between fits; not pickled.
    """

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.idx = None
        self.factor = None

    def end_fit(self, keep: bool) -> None:
        """After a fit: keep the factor for the next fit of a path only if ``keep`` and
        it is small (``NEWTON_KEEP_SYSTEM``)."""
        if not keep or (self.idx is not None and self.idx.size > NEWTON_KEEP_SYSTEM):
            self.clear()

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self.clear()

    def solve(self, problem: BoxQP, Q: np.ndarray, free: np.ndarray, interior: np.ndarray,
              rhs: np.ndarray) -> np.ndarray:
        """``Q_II^{-1} rhs`` for the local indices ``interior`` of the block ``Q`` of the
        samples ``free`` (both sorted); may raise ``LinAlgError`` / ``ValueError``."""
        idx = free[interior]
        if self.idx is not None:
            in_new = np.isin(self.idx, idx, assume_unique=True)
            added = idx[~np.isin(idx, self.idx, assume_unique=True)]
            if (~in_new).sum() + added.size <= NEWTON_UPDATE_FRACTION * self.idx.size:
                step = _bordered_solve(problem, self.idx, self.factor, ~in_new, added,
                                       idx, rhs)
                if step is not None:
                    return step
        self.clear()
        self.factor = cho_factor(Q[np.ix_(interior, interior)], lower=True,
                                 overwrite_a=True, check_finite=False)
        self.idx = idx
        return cho_solve(self.factor, rhs, check_finite=False)


def signed_block(problem: BoxQP, rows, cols) -> np.ndarray:
    r""":math:`Q_{RC}=s_Rs_C^\top\circ K_{RC}` from the kernel (a fresh array)."""
    block = problem.kernel.block(rows, cols)
    block *= problem.sign[rows][:, None]
    block *= problem.sign[cols][None, :]
    return block


def _bordered_solve(problem, F, factor, removed, A, idx, rhs):
    r"""Solve :math:`Q_{I'I'}x=b` for :math:`I'=(F\setminus R)\cup A` (sorted global
    indices ``idx``) with the factor of :math:`Q_{FF}`: the variables R (mask
    ``removed`` over F) are held at zero by multipliers :math:`\mu`, the added ones A
    border the system,

    .. math::

        \begin{pmatrix}Q_{FF}&Q_{FA}&E_R\\Q_{AF}&Q_{AA}&0\\E_R^\top&0&0\end{pmatrix}
        \begin{pmatrix}x_F\\x_A\\\mu\end{pmatrix}=
        \begin{pmatrix}\tilde b_F\\b_A\\0\end{pmatrix},

    eliminated through :math:`W=Q_{FF}^{-1}B`, :math:`B=(Q_{FA}\ E_R)`: the k x k
    system :math:`(\mathrm{diag}(Q_{AA},0)-B^\top W)z=(b_A-Q_{AF}y_0,\ -y_{0,R})`,
    :math:`y_0=Q_{FF}^{-1}\tilde b_F`, then :math:`x_F=y_0-Wz`. Cost: k+1 pairs of
    triangular solves and k (|F| + k) kernel values. Returns ``x`` in the order of
    ``idx``, or None if the small system is singular."""
    pos_R = np.flatnonzero(removed)
    n_A, k = A.size, A.size + pos_R.size
    kept = ~removed
    at = np.searchsorted(idx, F[kept])  # rows of the answer of F's kept variables
    b_F = np.zeros(F.size)
    b_F[kept] = rhs[at]
    y0 = cho_solve(factor, b_F, check_finite=False)
    if k == 0:  # the factorised set itself
        return y0
    B = np.zeros((F.size, k))
    if n_A:
        B[:, :n_A] = signed_block(problem, F, A)
    B[pos_R, n_A + np.arange(pos_R.size)] = 1.0
    W = cho_solve(factor, B, check_finite=False)
    S = -(B.T @ W)
    at_A = np.searchsorted(idx, A)
    r = np.concatenate([rhs[at_A] - B[:, :n_A].T @ y0, -y0[pos_R]])
    if n_A:
        S[:n_A, :n_A] += signed_block(problem, A, A)
    try:
        z = np.linalg.solve(S, r)
    except np.linalg.LinAlgError:
        return None
    x = np.empty(idx.size)
    x[at] = (y0 - W @ z)[kept]
    x[at_A] = z[:n_A]
    return x if np.all(np.isfinite(x)) else None


def _newton_on_interior(problem, Q, free, a, g, lo, hi, interior,
                        cache: NewtonCache) -> bool:
    """Newton step on the interior variables with the others held: solve
    ``Q_II step = g_I`` (gradient zero on I), clip to the box, update ``g`` in place.
    Returns False when the system is numerically singular (nothing changed)."""
    try:
        with warnings.catch_warnings():
            # an ill-conditioned step is harmless: the gap check judges its result
            warnings.simplefilter("ignore", LinAlgWarning)
            step = cache.solve(problem, Q, free, interior, g[interior])
    except (np.linalg.LinAlgError, ValueError):
        return False
    if not np.all(np.isfinite(step)):
        return False
    new = np.clip(a[interior] - step, lo[interior], hi[interior])
    add_rows(g, Q, interior, new - a[interior])
    a[interior] = new
    return True


def _ipm_finish_kernel(Q, a, g, lo, hi, la, p_f, d, sqnorm_f, tol, const_fixed_quad,
                       p_held, dynamic_screen):
    """Finish the kernel solve over local indices ``la`` by the interior-point method,
    updating ``a`` and the gradient ``g`` in place; returns the local indices its gap
    balls fixed at each bound."""
    rest = a.copy()
    rest[la] = 0.0
    offset = Q[la] @ rest + d[la]  # margins from everything outside the working set
    outside_quad = float(rest @ (Q @ rest)) + 2.0 * float(rest @ d) + const_fixed_quad
    term = DenseTerm(np.ascontiguousarray(Q[np.ix_(la, la)]), offset, outside_quad)
    lo_l, hi_l = lo[la], hi[la]
    x, d_lo, d_hi, _ = box_qp_ipm(term, p_f[la], lo_l, hi_l, sqnorm_f[la],
                                  p_outside=float(p_f @ rest) + p_held,
                                  tol=min(0.01 * tol, IPM_TOL), alpha0=a[la],
                                  screen=dynamic_screen)
    x = snap_to_bounds(x, lo_l, hi_l)
    add_rows(g, Q, la, x - a[la])
    a[la] = x
    return la[d_lo], la[d_hi]
