r"""Working sets driven by gap-safe screening of the full problem (linear mode).

After a reference rule, most samples of a large problem are usually still undecided,
although at the optimum only a few sit on the margin. Solving the whole undecided set
spends most of its time on samples whose bound is obvious. Instead:

1. pick a small *working set* :math:`W`: the samples strictly inside the box, then the
   worst violators of their optimality condition, then the samples whose margin is
   closest to the hinge point in units of :math:`\|z_i\|` (the radius a gap ball needs
   to decide them);
2. solve the problem restricted to :math:`W` (every other variable held where it is) to
   a tight tolerance, with the plain solver;
3. the result is a *feasible point of the full problem*: compute the full margins and
   the full duality gap, and screen every undecided sample with the gap ball of radius
   :math:`\sqrt{\mathrm{gap}}` (:func:`~sklearn_safescreen.screening.balls.
   gap_ball_screen`). This is the only step that fixes a variable for good, and it is
   safe whatever the quality of the point;
4. stop when the full relative gap is below ``tol``, else double :math:`W` and repeat.

The working set is a heuristic for *where* to look; correctness and safety come only
from the full-problem gap (the stopping rule) and the gap ball (the screening), so the
answer is the same as the plain solver's. When :math:`W` covers every undecided sample
the inner solve is the plain solve. The number of rounds is at most
:math:`\log_2(n / |W_0|)`.

Kernel problems use the greedy two-variable solver instead (:mod:`.greedy_cd`): its row
cache and shrinking play the working set's part without gathering a kernel block per
round (each round's block would be computed or copied afresh, where the row cache
keeps its rows from one iteration to the next).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.box_qp import BoxQP
from ..problems.constants import TINY
from ._options import check_option_values
from .dual_cd import DynamicScreen, SolveResult, _solve_linear, solve_box_qp


@dataclass(frozen=True)
class WorkingSetOptions:
    """Tuning values of the working-set solvers (:func:`solve_working_set`,
    :func:`solve_plain_then_working_set`, and :func:`prefer_working_sets`, with which
    the caller chooses them).

    None of them changes what a solve converges to: the stopping rule and the only
    permanent decisions are the full problem's gap and gap balls. Each attribute's
    description says why it has its value.

    Attributes
    ----------
    min_problem : int
        Undecided samples below which the plain solver is used directly. Every round
        of working sets pays a full-problem pass (margins, gap and gap balls) on top of
        its inner solve; on a small undecided set the plain solver's epochs cost about
        as much as that pass, so the rounds only add work. They pay when the undecided
        set is large beside the samples near the margin, which the working set holds
        (doc/benchmarks.md, "Screening on against off").
    initial : int
        Smallest working set: small beside ``min_problem``, so that the first inner
        solve is cheap and the doubling reaches the needed size in a few rounds.
    inner_tol_factor : float
        Inner solves aim this much below ``tol``, so that the heuristic part of the gap
        does not make the outer loop stall on the inner solver's residual.
    """

    min_problem: int = 2000
    initial: int = 100
    inner_tol_factor: float = 0.1

    def __post_init__(self) -> None:
        check_option_values(self, at_least_one=("initial",),
                            positive=("inner_tol_factor",))


#: The options a solve uses unless it is given others.
DEFAULT_OPTIONS = WorkingSetOptions()


def prefer_working_sets(n_undecided: int,
                        options: WorkingSetOptions | None = None) -> bool:
    """Whether a linear-mode solve with ``n_undecided`` undecided samples (and dynamic
    screening) goes by working sets: on more than ``options.min_problem``
    (:attr:`WorkingSetOptions.min_problem`)."""
    options = DEFAULT_OPTIONS if options is None else options
    return n_undecided > options.min_problem


def solve_working_set(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *, tol: float,
                      max_iter: int, random_state: np.random.RandomState,
                      dynamic_screen: DynamicScreen,
                      options: WorkingSetOptions | None = None) -> SolveResult:
    """Solve a linear-mode problem by screening-driven working sets; same contract as
    ``solve_box_qp``, with ``options`` (:class:`WorkingSetOptions`,
    :data:`DEFAULT_OPTIONS` when None) the working sets' tuning values.

    The returned ``fixed`` holds the variables fixed on entry plus those fixed by the
    full-problem gap balls (and, in the final round, by the plain solver's own dynamic
    screening); ``gap`` is the duality gap over the others.
    """
    if not problem.linear:
        raise ValueError("working sets are for linear problems; kernel problems use "
                         "solvers.greedy_cd.solve_kernel_greedy")
    options = DEFAULT_OPTIONS if options is None else options
    n = problem.n_samples
    lo, hi, p = problem.lo, problem.hi, problem.p
    alpha = alpha.astype(np.float64, copy=True)
    fixed = fixed | (hi <= lo)
    q = problem.margins(alpha)
    n_iter, events, ws_size = 0, [], options.initial
    gap = rel_gap = np.inf
    converged = False
    while True:
        active = np.flatnonzero(~fixed)
        terms = problem.gap_terms(alpha, q[active], active)
        gap = float(terms.sum())
        rel_gap = gap / max(abs(problem.dual_objective(alpha, q)), TINY)
        lo_m, hi_m = dynamic_screen(q[active], p[active], problem.sqnorm[active], gap)
        if rel_gap <= tol:
            # record what the final gap ball proves (variables already at that bound:
            # moving others would change the certified point)
            lo_m &= alpha[active] <= lo[active]
            hi_m &= alpha[active] >= hi[active]
            fixed[active[lo_m]] = fixed[active[hi_m]] = True
            if lo_m.any() or hi_m.any():
                events.append((int(lo_m.sum()), int(hi_m.sum()), int(n - fixed.sum())))
            converged = True
            break
        if n_iter >= max_iter:
            break
        if lo_m.any() or hi_m.any():
            moved = np.concatenate([active[lo_m], active[hi_m]])
            new = np.concatenate([lo[active[lo_m]], hi[active[hi_m]]])
            q = _move(problem, alpha, q, moved, new)
            fixed[moved] = True
            events.append((int(lo_m.sum()), int(hi_m.sum()), int(n - fixed.sum())))
            active = np.flatnonzero(~fixed)
            terms = problem.gap_terms(alpha, q[active], active)
        work = _working_set(problem, alpha, q, active, terms, ws_size,
                            options.min_problem)
        last_round = work.size == active.size
        inner_fixed = fixed.copy() if last_round else np.ones(n, dtype=bool)
        inner_fixed[work] = False
        res = _inner_solve(problem, alpha, q, inner_fixed, work,
                           tol=tol if last_round else options.inner_tol_factor * tol,
                           max_iter=max(max_iter - n_iter, 1), random_state=random_state,
                           dynamic_screen=dynamic_screen)
        n_iter += res.n_iter
        changed = np.flatnonzero(res.alpha != alpha)
        q = _move(problem, alpha, q, changed, res.alpha[changed])
        if last_round:
            # the plain solve of everything undecided: its gap balls are those of the
            # full problem, so what it fixed is fixed for good
            fixed = res.fixed
            events.extend(res.dynamic)
            if not res.converged:
                break
        ws_size = 2 * work.size
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events, margins=q)


def _working_set(problem: BoxQP, alpha, q, active, terms, size: int,
                 min_problem: int) -> np.ndarray:
    """Interior samples, then violators (largest gap term first), then the samples
    closest to their hinge point (``|q_i - p_i| / ||z_i||``); every active sample when
    they are at most ``size`` or half of ``min_problem``."""
    if active.size <= max(size, min_problem // 2):
        return active
    a = alpha[active]
    interior = (a > problem.lo[active]) & (a < problem.hi[active])
    violated = terms > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.abs(q[active] - problem.p[active]) / np.sqrt(problem.sqnorm[active])
    priority = np.where(interior, -np.inf, np.where(violated, -terms, dist))
    k = max(size, int(interior.sum()))
    if k >= active.size:
        return active
    return np.sort(active[np.argpartition(priority, k - 1)[:k]])


def _inner_solve(problem: BoxQP, alpha, q, inner_fixed, work, *, tol, max_iter,
                 random_state, dynamic_screen) -> SolveResult:
    """The plain solver on ``work`` (the others held)."""
    return _solve_linear(problem, alpha.copy(), inner_fixed, tol, max_iter, random_state,
                         dynamic_screen)


def _move(problem: BoxQP, alpha, q, idx, values) -> np.ndarray:
    """Set ``alpha[idx] = values`` (in place) and return the full margins, recomputed
    (the same O(nd) cost as an update, and no drift)."""
    if idx.size == 0:
        return q
    alpha[idx] = values
    return problem.margins(alpha)


def solve_plain_then_working_set(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                                 tol: float, max_iter: int,
                                 random_state: np.random.RandomState,
                                 dynamic_screen: DynamicScreen,
                                 options: WorkingSetOptions | None = None) -> SolveResult:
    """From a far start point (a cold fit): the plain solver while coordinate descent
    makes fast progress, then working sets from the point it reached, where the
    interior set and the violators are already nearly right. Same contract as
    ``solve_box_qp``; ``options`` as in :func:`solve_working_set`."""
    first = solve_box_qp(problem, alpha, fixed, tol=tol, max_iter=max_iter,
                         random_state=random_state, dynamic_screen=dynamic_screen,
                         stop_when_slow=True)
    if not first.stopped_slow:
        return first
    rest = solve_working_set(problem, first.alpha, first.fixed, tol=tol,
                             max_iter=max(max_iter - first.n_iter, 1),
                             random_state=random_state, dynamic_screen=dynamic_screen,
                             options=options)
    return SolveResult(rest.alpha, rest.fixed, rest.gap, rest.rel_gap,
                       first.n_iter + rest.n_iter, rest.converged,
                       first.dynamic + rest.dynamic, margins=rest.margins)
