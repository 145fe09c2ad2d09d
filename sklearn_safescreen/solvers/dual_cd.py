r"""Box-constrained dual coordinate descent for SVM and LAD duals.

Solves

.. math::

    \min_{\alpha}\ \tfrac12\alpha^\top Q\alpha - p^\top\alpha
    \quad\text{s.t.}\quad lo_i \le \alpha_i \le hi_i,
    \qquad Q_{ij} = s_i s_j k(x_i, x_j),

whose primal is :math:`\min_w \tfrac12\|w\|^2 + \sum_i \max(lo_i t_i, hi_i t_i)` with
:math:`t_i = p_i - s_i w^\top\Phi(x_i)` and :math:`w = \sum_i \alpha_i s_i \Phi(x_i)`.

(:mod:`sklearn_safescreen.problems.box_qp`: the SVM and LAD duals). Some variables may
be *fixed* (by screening) at a bound; they leave the optimisation but keep their
contribution to :math:`w` (linear mode) or to the gradient (kernel mode).

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

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..problems.box_qp import BoxQP
from ..problems.constants import SCREEN_RTOL, TINY
from ..problems.kernels import add_rows, check_kernel_memory
from ..screening.balls import gap_ball_screen
from ._cd_fast import kernel_epochs, linear_epochs, signed_row_dots
from ._ipm_fast import ipm_low_rank_dense
from ._ipm_kernel_fast import ipm_dense_kernel
from .box_ipm import DenseTerm, LowRankTerm, box_qp_ipm, snap_to_bounds
from .dual_cd_options import DEFAULT_OPTIONS, DualCDOptions
from .newton import NewtonCache, newton_on_interior


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


# ------------------------------------------------------------------------- driver ---
DynamicScreen = Callable[[np.ndarray, np.ndarray, np.ndarray, float],
                         tuple[np.ndarray, np.ndarray]]


def solve_box_qp(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *, tol: float,
                 max_iter: int, random_state: np.random.RandomState,
                 dynamic_screen: DynamicScreen | None = None,
                 const_fixed_quad: float | None = None,
                 stop_when_slow: bool = False,
                 options: DualCDOptions | None = None) -> SolveResult:
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
    stop_when_slow : bool, default=False
        Linear mode only: return (``stopped_slow``) once coordinate descent is slow and
        more than :attr:`~.dual_cd_options.DualCDOptions.stop_when_slow_min` variables
        are undecided, instead of handing over to the interior-point finisher.
    options : DualCDOptions, optional
        The solver's tuning values (:class:`~.dual_cd_options.DualCDOptions`);
        :data:`DEFAULT_OPTIONS` when None.

    Returns
    -------
    SolveResult
    """
    options = DEFAULT_OPTIONS if options is None else options
    alpha = alpha.astype(np.float64, copy=True)
    fixed = fixed.copy()
    # a degenerate box is a fixed variable
    fixed |= problem.hi <= problem.lo
    if problem.linear:
        return _solve_linear(problem, alpha, fixed, tol, max_iter, random_state,
                             dynamic_screen, stop_when_slow, options)
    return _solve_kernel(problem, alpha, fixed, tol, max_iter, random_state,
                         dynamic_screen, const_fixed_quad, options)


def _check_schedule(n_iter: int, cap: int = DEFAULT_OPTIONS.check_max_epochs) -> int:
    """Epochs before the next gap check: doubling (1, 1, 2, 4, ...), capped, so that
    dynamic screening acts early and checks cost O(log epochs) on slow problems; a call
    also returns as soon as the projected gradient converges (LIBLINEAR's criterion)."""
    return int(min(max(n_iter, 1), cap))


def _apply_dynamic(dynamic_screen, active, q_act, problem, gap):
    lo_mask, hi_mask = dynamic_screen(q_act, problem.p[active], problem.sqnorm[active], gap)
    return active[lo_mask], active[hi_mask]


def row_arrays(X) -> tuple:
    """``(dense, data, indices, indptr, is_sparse)``: the rows of ``X`` as the compiled
    loops take them (placeholders for the unused layout)."""
    if not sp.issparse(X):
        return (np.ascontiguousarray(X, dtype=np.float64), np.zeros(1),
                np.zeros(1, dtype=np.int32), np.zeros(2, dtype=np.int32), False)
    if X.nnz >= 2**31:
        raise ValueError(f"X has {X.nnz} non-zeros: the solver indexes them with 32-bit "
                         "integers (at most 2**31 - 1)")
    return (np.zeros((1, 1)), np.ascontiguousarray(X.data, dtype=np.float64),
            X.indices.astype(np.int32, copy=False), X.indptr.astype(np.int32, copy=False),
            True)


def _solve_linear(problem, alpha, fixed, tol, max_iter, rng, dynamic_screen,
                  stop_when_slow=False, options: DualCDOptions | None = None):
    opt = DEFAULT_OPTIONS if options is None else options
    X = problem.X
    rows = row_arrays(X)
    dense, data, indices, indptr, is_sparse = rows
    w = problem.primal_weights(alpha)
    active = np.flatnonzero(~fixed).astype(np.int64)
    n_iter, eps_pg, events, n_finish = 0, opt.pg_tol_start, [], 0
    gap = rel_gap = np.inf
    converged, gap_history = False, []
    # The finisher's best point, and whether the last finish failed to improve on it
    # (the interior-point method stalls only at round-off: then neither it nor CD,
    # whose steps on unscaled data move w by delta z_i with a large ||z_i||, will
    # do better, and the solve stops there instead of crawling to max_iter).
    best, stalled = None, False
    finished = False  # the interior-point finisher has just run
    while True:
        if active.size and not finished:
            epochs, pg_ok = linear_epochs(
                dense, data, indices, indptr, is_sparse, problem.sign, problem.p,
                problem.lo, problem.hi, problem.sqnorm, alpha, w, active,
                min(_check_schedule(n_iter, opt.check_max_epochs),
                    max(max_iter - n_iter, 1)),
                eps_pg, rng.randint(2**31 - 1))
            n_iter += epochs
        else:
            # measure the finisher's point before any CD epoch: at large C on unscaled
            # data CD's steps (each delta z_i, with a large ||z_i||) can raise the gap of
            # a point the finisher has just brought to round-off
            pg_ok = True
        q_act, gap, rel_gap = _measure(problem, rows, alpha, w, active)
        if problem.status is not None:
            problem.status.record(n_iter, rel_gap)
        if finished:
            finished = False
            stalled = best is not None and not rel_gap < 0.5 * best[0]
            if best is None or rel_gap < best[0]:
                best = (rel_gap, gap, alpha.copy(), fixed.copy(), w.copy(), len(events))
            gap_history = []  # CD's rate from the finisher's point on
        ipm_fits = X.shape[1] <= opt.ipm_max_system and active.size > 1
        polish = ipm_fits and n_finish == 0 and _polish(problem, active, rel_gap, tol,
                                                        opt)
        if rel_gap <= tol and not polish:
            # confirm on w afresh from alpha (O(nd), once per solve): CD's updates
            # w += delta z_i drift by round-off, and on unscaled data a gap measured on
            # the drifted w can be orders of magnitude below the one the certificate
            # recomputes, so the solve would "converge" and be sent back again and again
            w = problem.primal_weights(alpha)
            q_act, gap, rel_gap = _measure(problem, rows, alpha, w, active)
            polish = ipm_fits and n_finish == 0 and _polish(problem, active, rel_gap,
                                                            tol, opt)
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
        # ipm_epochs_per_feature * d epochs: each Newton step is O(n d^2))
        slow = n_iter >= opt.ipm_after_epochs and _epochs_to_tol(
            gap_history, n_iter, rel_gap, tol) > opt.ipm_epochs_per_feature * X.shape[1]
        gap_history.append((n_iter, rel_gap))
        if slow and stop_when_slow and active.size > opt.stop_when_slow_min:
            return SolveResult(alpha, fixed, gap, rel_gap, n_iter, False, events,
                               stopped_slow=True)
        if (slow and best is not None and (stalled or n_finish >= opt.ipm_max_finishes)
                and (rel_gap >= best[0] or _not_progressing(gap_history[:-1], rel_gap))):
            # round-off: the better of the finisher's best point and CD's is returned
            # below (CD stuck at one gap after the last finish would otherwise run on to
            # max_iter, which happens on badly scaled data at large C and small tol)
            break
        if (ipm_fits and n_finish < opt.ipm_max_finishes
                and active.size > 1  # screening may have emptied it
                and (polish or slow)):
            n_finish += 1
            w = problem.primal_weights(alpha)  # without CD's drift (see above)
            w, to_lo, to_hi = _ipm_finish_linear(problem, alpha, w, active, tol,
                                                 dynamic_screen, opt)
            finished = True
            if to_lo.size or to_hi.size:
                fixed[to_lo] = fixed[to_hi] = True
                active = np.flatnonzero(~fixed).astype(np.int64)
                events.append((to_lo.size, to_hi.size, active.size))
            continue
        if pg_ok:
            eps_pg *= opt.pg_tol_shrink
    if not converged and best is not None and best[0] < rel_gap:
        rel_gap, gap, alpha, fixed, w, n_events = best
        events = events[:n_events]
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events)


def _polish(problem, active: np.ndarray, rel_gap: float, tol: float,
            opt: DualCDOptions) -> bool:
    """Linear mode: whether the interior-point method finishes the solve now, whatever
    CD's rate. A small problem (Newton systems of at most ``opt.ipm_small_flops``) is
    always finished to ``opt.ipm_tol``. A problem that screening made that small is
    finished while CD is far from ``tol`` (``opt.cd_near_tol``): the finisher is then
    the short way there (one epoch and the finisher, where CD alone would need many
    epochs at its linear rate), but near it or past it a few epochs are far cheaper
    than a finish, whose Newton steps each cost several epochs (``doc/benchmarks.md``,
    "Screening on against off"; git has the runs). The short way only where screening
    left few variables against the samples (``opt.screened_polish_width``): a Newton
    step costs ``d`` epochs over the active variables, and where they are not far fewer
    than the samples (a problem of a few hundred samples, such as a one-vs-one pair)
    CD's remaining epochs cost less than the finisher's steps."""
    if not rel_gap > opt.ipm_tol:
        return False
    d = problem.X.shape[1]
    flops = d**2
    return (problem.n_samples * flops <= opt.ipm_small_flops
            or (active.size * flops <= opt.ipm_small_flops
                and active.size * d <= opt.screened_polish_width * problem.n_samples
                and rel_gap > opt.cd_near_tol * tol))


def _measure(problem, rows, alpha, w, active) -> tuple[np.ndarray, float, float]:
    """Margins of ``active`` at ``w``, the gap over them and the relative gap."""
    dense, data, indices, indptr, is_sparse = rows
    if 2 * active.size > problem.n_samples:  # BLAS on all rows beats a gather
        q_act = problem.sign[active] * np.asarray(problem.X @ w).ravel()[active]
    else:
        q_act = signed_row_dots(dense, data, indices, indptr, is_sparse, problem.sign,
                                active, w)
    gap = float(problem.gap_terms(alpha, q_act, active).sum()) if active.size else 0.0
    quad = float(w @ w)
    dual = float(-0.5 * quad + problem.p @ alpha)
    # (every variable outside ``active`` is 0 when ``active`` holds all the non-zeros:
    # counted, not gathered, at every check)
    if (problem.hinge and active.size
            and np.count_nonzero(alpha) == np.count_nonzero(alpha[active])):
        gap = min(gap, hard_margin_gap(q_act, quad, dual))
    return q_act, gap, gap / max(abs(dual), TINY)


def hard_margin_gap(q_act: np.ndarray, quad: float, dual: float) -> float:
    r"""The hinge SVM's C-free duality gap :math:`A/(2m^2) - D(\alpha)` with
    :math:`m` the smallest margin (``inf`` unless :math:`m > 0`), for a reduced problem
    whose fixed variables are all 0: it is then the SVM on the active samples, and
    ``q_act`` their margins (:meth:`~..problems.box_qp.BoxQP.hard_margin_gap`, which
    bounds its rounding for the certificate). A stopping test and a dynamic ball's
    radius only; the certificate recomputes it on the full problem."""
    m = float(np.min(q_act))
    return quad / (2.0 * m * m) - dual if m > 0.0 else np.inf


def _not_progressing(history, rel_gap: float) -> bool:
    """Whether CD's gap has not decreased since the middle one of ``history``'s checks
    (the epochs since then at least doubled it: CD is stuck at round-off)."""
    return bool(history) and not rel_gap < history[len(history) // 2][1]


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


def _ipm_finish_linear(problem, alpha, w, active, tol, dynamic_screen,
                       opt: DualCDOptions):
    """Finish the solve over ``active`` with the interior-point method (in place), to
    a relative gap of ``opt.ipm_tol`` or ``opt.ipm_tol_factor * tol``, whichever is
    smaller.

    Returns the new ``w`` and the indices the IPM's gap balls fixed at each bound.
    """
    X, sign, p = problem.X, problem.sign, problem.p
    Z = (sp.diags(sign[active]) @ X[active]).tocsr() if sp.issparse(X) \
        else X[active] * sign[active, None]
    w_rest = w - np.asarray(Z.T @ alpha[active]).ravel()
    p_outside = float(p @ alpha) - float(p[active] @ alpha[active])
    lo, hi = problem.lo[active], problem.hi[active]
    ipm_tol = min(opt.ipm_tol_factor * tol, opt.ipm_tol)
    if not sp.issparse(Z) and dynamic_screen in (None, gap_ball_screen):
        # the compiled twin: small finishes are dominated by call overhead in Python
        a, d_lo, d_hi, _ = ipm_low_rank_dense(
            Z, w_rest, p[active], lo, hi, problem.sqnorm[active], p_outside, ipm_tol,
            alpha[active], dynamic_screen is not None, SCREEN_RTOL, opt.ipm_max_iter)
    else:
        a, d_lo, d_hi, _ = box_qp_ipm(LowRankTerm(Z, w_rest), p[active], lo, hi,
                                      problem.sqnorm[active], p_outside=p_outside,
                                      tol=ipm_tol, alpha0=alpha[active],
                                      screen=dynamic_screen)
    # Snapping to the bounds moves a variable by up to 1e-6 of its box, which moves the
    # margins by ||z_i||^2 times that: on unscaled data (large ||z_i||) that can raise
    # the relative gap by orders of magnitude. Keep the snapped point only if its gap (of
    # the problem over ``active``, the others held) is not worse.
    snapped = snap_to_bounds(a, lo, hi)
    if np.any(snapped != a) and (_sub_gap(Z, w_rest, p[active], lo, hi, snapped)
                                 > _sub_gap(Z, w_rest, p[active], lo, hi, a)):
        snapped = a
    alpha[active] = snapped
    return w_rest + np.asarray(Z.T @ alpha[active]).ravel(), active[d_lo], active[d_hi]


def _sub_gap(Z, w_rest, p, lo, hi, a) -> float:
    """Duality gap of ``min 1/2 a'ZZ'a + a'Z w_rest - p'a`` over the box at ``a``."""
    g = np.asarray(Z @ (np.asarray(Z.T @ a).ravel() + w_rest)).ravel() - p
    return float((np.maximum(-lo * g, -hi * g) + a * g).sum())


def _solve_kernel(problem, alpha, fixed, tol, max_iter, rng, dynamic_screen,
                  const_fixed_quad, opt: DualCDOptions):
    """Kernel mode: the signed kernel block of the free variables, in memory."""
    K = problem.kernel
    free = np.flatnonzero(~fixed)
    newton = problem.newton if problem.newton is not None else NewtonCache()
    newton_max = newton.options.max_system
    check_kernel_memory(free.size, min(free.size, newton_max))
    held_idx = np.flatnonzero(fixed & (alpha != 0))
    s_f = problem.sign[free]
    Q = newton.signed_block(problem, free)
    a_held = problem.sign[held_idx] * alpha[held_idx]
    # margins contributed by the held variables (the reduced problem's linear term)
    d = s_f * K.matvec(free, held_idx, a_held)
    if const_fixed_quad is None:
        const_fixed_quad = (float(a_held @ K.matvec(held_idx, held_idx, a_held))
                            if held_idx.size else 0.0)
    a = alpha[free].copy()
    lo, hi = problem.lo[free], problem.hi[free]
    p_f = problem.p[free]
    g = Q @ a + d - p_f
    local_active = np.flatnonzero(lo < hi).astype(np.int64)
    p_held = float(problem.p[fixed] @ alpha[fixed])
    n_iter, eps_pg, events, ipm_done = 0, opt.pg_tol_start, [], False
    gap = rel_gap = np.inf
    converged, newton_tried, n_newton, gap_history = False, None, 0, []
    while True:
        # a Newton or interior-point step continues the loop: no epoch beyond max_iter
        if local_active.size and n_iter < max_iter:
            budget = min(max(_check_schedule(n_iter, opt.check_max_epochs),
                             _kernel_check_epochs(local_active.size, opt)),
                         max(max_iter - n_iter, 1))
            if 1 < local_active.size <= opt.ipm_max_system and not ipm_done:
                # the gap check that may hand over to the finisher comes when CD has
                # run its epochs, not up to a doubling of them later (the check
                # schedule's): past that many epochs CD crawls
                due = _kernel_ipm_epochs(local_active.size, opt) - n_iter
                if due > 0:
                    budget = min(budget, due)
            epochs, pg_ok = kernel_epochs(
                Q, lo, hi, a, g, local_active, budget, eps_pg, rng.randint(2**31 - 1))
            n_iter += epochs
        else:
            pg_ok = True
        la = local_active
        # (every free variable active, as on a path that does not screen: the arrays
        # themselves, the same values in the same order as gathered over la)
        whole = la.size == a.size
        a_l, g_l, lo_l, hi_l = (a, g, lo, hi) if whole else (a[la], g[la], lo[la], hi[la])
        gap = float((np.maximum(-lo_l * g_l, -hi_l * g_l) + a_l * g_l).sum())
        q_f = g + p_f
        # a'Qa = a_F'(q_F - d) + 2 a_F'd + const  with q_F - d = Q_FF a_F
        quad = a @ (q_f - d) + 2.0 * a @ d + const_fixed_quad
        dual = -0.5 * quad + p_f @ a + p_held
        if (problem.hinge and la.size and not held_idx.size
                and (whole or np.count_nonzero(a_l) == np.count_nonzero(a))):
            gap = min(gap, hard_margin_gap(q_f if whole else q_f[la], quad, dual))
        rel_gap = gap / max(abs(dual), TINY)
        if problem.status is not None:
            problem.status.record(n_iter, rel_gap)
        ipm_fits = 1 < la.size <= opt.ipm_max_system
        small = la.size**3 / 3 <= opt.ipm_small_flops
        # Once CD has found which variables sit at a bound, one linear solve on the
        # others usually finishes the job (CD crawls there at large C), and exactly:
        # where the finisher cannot run, tried after a few epochs, or at once on small
        # problems (accurate references), and again whenever the interior set changes.
        inside = (a_l > lo_l) & (a_l < hi_l)
        interior = np.flatnonzero(inside) if whole else la[inside]
        newton_fresh = (0 < interior.size <= newton_max
                        and not np.array_equal(interior, newton_tried))
        # The interior-point finisher takes over once CD has had its epochs, or
        # earlier, once CD's rate since the last check says it would need more epochs
        # than the finisher costs (the same trade as the hand-over's epoch count); the
        # last interval's rate, not the one since an earlier check as in linear mode:
        # the first checks' fast progress would hide for hundreds of epochs that CD
        # now crawls
        slow = (n_iter >= opt.ipm_after_epochs and _epochs_to_tol(
            gap_history[-1:], n_iter, rel_gap, tol) > _kernel_ipm_epochs(la.size, opt))
        gap_history.append((n_iter, rel_gap))
        # While the finisher may still run, few Newton steps (newton_steps_before_ipm)
        finisher_ahead = ipm_fits and not ipm_done and local_active.size > 1
        newton_budget = (opt.newton_steps_before_ipm if finisher_ahead
                         else opt.newton_max_steps)
        if newton_fresh and n_newton < newton_budget and (
                rel_gap > tol and n_iter >= _kernel_newton_epochs(la.size, opt)
                or small and rel_gap > opt.ipm_tol):
            newton_tried, n_newton = interior, n_newton + 1
            if newton_on_interior(problem, Q, free, a, g, lo, hi, interior,
                                   newton):
                if pg_ok:
                    eps_pg *= opt.pg_tol_shrink
                continue
        # the interior-point method polishes small problems that Newton did not finish
        polish = (ipm_fits and not ipm_done and small and rel_gap > opt.ipm_tol
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
                polish or slow or n_iter >= _kernel_ipm_epochs(local_active.size, opt)):
            ipm_done = True
            to_lo, to_hi = _ipm_finish_kernel(Q, a, g, lo, hi, local_active, p_f, d,
                                              problem.sqnorm[free], tol, const_fixed_quad,
                                              p_held, dynamic_screen, opt)
            if to_lo.size or to_hi.size:
                keep = np.ones(a.size, dtype=bool)
                keep[to_lo] = keep[to_hi] = False
                local_active = local_active[keep[local_active]]
                events.append((to_lo.size, to_hi.size, local_active.size))
            continue
        if pg_ok:
            eps_pg *= opt.pg_tol_shrink
    alpha[free] = a
    dyn_fixed = np.ones(free.size, dtype=bool)
    dyn_fixed[local_active] = False
    fixed[free[dyn_fixed]] = True
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events)


def _kernel_check_epochs(n_active: int, opt: DualCDOptions) -> int:
    """Kernel mode: the fewest epochs between two gap checks over ``n_active``
    variables, so that the epochs cost at least ``opt.kernel_check_flops`` (an epoch
    is up to ``n_active**2`` multiply-adds; a check's vector operations cost about that
    much whatever the size); never more than ``opt.check_max_epochs``. One epoch on a
    problem the finisher polishes whatever its gap (``opt.ipm_small_flops``): its first
    check hands it over, and epochs before that would be wasted."""
    if n_active**3 / 3 <= opt.ipm_small_flops:
        return 1
    return int(min(max(-(-opt.kernel_check_flops // max(n_active, 1) ** 2), 1),
                   opt.check_max_epochs))


def _kernel_newton_epochs(n_active: int, opt: DualCDOptions) -> int:
    """Kernel mode: the epochs of CD after which a Newton step on the interior
    variables is tried: ``opt.newton_after_epochs``, or more on a small problem, until
    the epochs (``n_active**2`` multiply-adds each) have cost ``opt.kernel_newton_flops``,
    about what the step's fixed run of calls costs (CD often ends before)."""
    return int(max(opt.newton_after_epochs,
                   -(-opt.kernel_newton_flops // max(n_active, 1) ** 2)))


def _kernel_ipm_epochs(n_active: int, opt: DualCDOptions) -> int:
    """Kernel mode: the epochs of CD after which the interior-point finisher takes
    over an unconverged solve of ``n_active`` variables."""
    return max(opt.ipm_after_epochs, opt.kernel_ipm_epochs_per_variable * n_active)


def _ipm_finish_kernel(Q, a, g, lo, hi, la, p_f, d, sqnorm_f, tol, const_fixed_quad,
                       p_held, dynamic_screen, opt: DualCDOptions):
    """Finish the kernel solve over local indices ``la`` by the interior-point method,
    updating ``a`` and the gradient ``g`` in place; returns the local indices its gap
    balls fixed at each bound.

    The finisher first runs on a working set: the variables of ``la`` not settled at a
    bound by CD (inside their box, or at a bound their gradient does not push them
    against), the others held. Its factorisations are then of those few (on a nearly
    hard-margin problem most variables sit at 0 or C), instead of every variable of
    ``la``, which dominates the cost of the small solves this finishes. The held
    variables that violate their optimality condition at its answer join the set and
    it runs again, up to ``opt.ipm_working_set_rounds`` times; then, if some still
    violate, over all of ``la``. Only that last run's screening is reported: a working
    set's gap balls are those of a problem with the held variables fixed."""
    at_lo, at_hi = a[la] <= lo[la], a[la] >= hi[la]
    settled = (at_lo & (g[la] > 0.0)) | (at_hi & (g[la] < 0.0))
    work = la[~settled]
    if 0 < work.size <= opt.ipm_working_set_share * la.size:
        for _ in range(opt.ipm_working_set_rounds):
            if work.size > 1:
                _ipm_run(Q, a, g, lo, hi, work, p_f, d, sqnorm_f, tol, const_fixed_quad,
                         p_held, None, opt)
            held = np.setdiff1d(la, work, assume_unique=True)
            gh = g[held]
            back = held[(np.maximum(-lo[held] * gh, -hi[held] * gh) + a[held] * gh) > 0.0]
            if not back.size:
                empty = np.empty(0, dtype=la.dtype)
                return empty, empty
            work = np.union1d(work, back)
            if work.size > opt.ipm_working_set_share * la.size:
                break
    d_lo, d_hi = _ipm_run(Q, a, g, lo, hi, la, p_f, d, sqnorm_f, tol, const_fixed_quad,
                          p_held, dynamic_screen, opt)
    return la[d_lo], la[d_hi]


def _ipm_run(Q, a, g, lo, hi, la, p_f, d, sqnorm_f, tol, const_fixed_quad, p_held,
             dynamic_screen, opt: DualCDOptions):
    """One interior-point run over local indices ``la``, the others held (see
    :func:`_ipm_finish_kernel`), to a relative gap of ``opt.ipm_tol`` or
    ``opt.ipm_tol_factor * tol``, whichever is smaller; returns the masks over ``la``
    its gap balls fixed at each bound (none unless ``dynamic_screen``)."""
    rest = a.copy()
    rest[la] = 0.0
    offset = Q[la] @ rest + d[la]  # margins from everything outside the working set
    outside_quad = float(rest @ (Q @ rest)) + 2.0 * float(rest @ d) + const_fixed_quad
    Q_la = np.ascontiguousarray(Q[np.ix_(la, la)])
    lo_l, hi_l = lo[la], hi[la]
    p_outside = float(p_f @ rest) + p_held
    ipm_tol = min(opt.ipm_tol_factor * tol, opt.ipm_tol)
    if dynamic_screen in (None, gap_ball_screen):
        # the compiled twin: on the small problems it finishes, the Python version's
        # time goes to call overhead between factorisations. Its iterates screen with
        # their gap balls even when the solve does not (safe for this problem: the
        # variables proven at a bound only leave its Newton systems, whose
        # factorisations shrink as the gap closes); they are reported as fixed only
        # when the solve screens
        x, d_lo, d_hi, _ = ipm_dense_kernel(
            Q_la, offset, outside_quad, p_f[la], lo_l, hi_l, sqnorm_f[la], p_outside,
            ipm_tol, a[la], True, SCREEN_RTOL, opt.ipm_max_iter)
        if dynamic_screen is None:
            d_lo[:] = d_hi[:] = False
    else:
        x, d_lo, d_hi, _ = box_qp_ipm(DenseTerm(Q_la, offset, outside_quad), p_f[la],
                                      lo_l, hi_l, sqnorm_f[la], p_outside=p_outside,
                                      tol=ipm_tol, alpha0=a[la], screen=dynamic_screen)
    x = snap_to_bounds(x, lo_l, hi_l)
    add_rows(g, Q, la, x - a[la])
    a[la] = x
    return d_lo, d_hi
