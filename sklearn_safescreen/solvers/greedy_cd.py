r"""Greedy two-variable descent for kernel box QPs, with a bounded kernel-row cache.

For the kernel duals of :mod:`sklearn_safescreen.problems.box_qp` with more than a few
hundred undecided samples: the SMO idea (Platt 1998; Fan, Chen and Lin 2005) applied to
a box QP **without** the equality constraint (SafeSVC's intercept is regularised, so it
sits in the kernel as ``+ intercept_scaling**2``; SafeLAD's likewise). Each update takes
the variable whose exact one-dimensional minimisation decreases the objective most and a
partner chosen by the second-order rule along SMO's direction, then minimises exactly
over the two variables' box (:mod:`._greedy_fast` explains why pairs: single-variable
steps zig-zag across the kernel's dominant common direction); the gradient over the free
set is updated with their signed kernel rows. Rows come from a least-recently-used cache
over the free samples (:class:`~.row_cache.RowCache`), kept across the fits of a
warm-started path, whose columns are extended (not recomputed) when the next step's
free set adds a few samples. Shrinking as LIBSVM's (compiled loop: :mod:`._greedy_fast`).
The tuning values are those of :class:`~.greedy_options.GreedyOptions`.

The solver stops on the duality gap of the reduced problem (the same rule as
:func:`~.dual_cd.solve_box_qp`) and applies the gap-safe dynamic screening at every gap
check; every answer is then certified on the full problem by the caller
(:func:`~sklearn_safescreen.engine.certify.certified_solve`), so the solver's own
round-off never reaches the certificate.

Memory: the row cache holds at most ``max(cache_size, r rows)`` of ``8 m`` bytes (``m``
the free samples, ``r`` the options' ``min_cache_rows``, 16 by default), beside
``O(m d)`` for the free samples' feature-major copy and ``O(n)`` vectors: at most
``cache_size + 8 (r m + m d + c n)`` bytes for a small constant ``c``, never an
``m x m`` block.
"""

from __future__ import annotations

import threading

import numpy as np

from .._utils.openmp import current_n_threads
from ..problems.box_qp import BoxQP
from ..problems.constants import TINY
from ._greedy_fast import CONVERGED, NEED_ROW, LoopOutcome, greedy_updates
from .dual_cd import DynamicScreen, SolveResult, _check_schedule, hard_margin_gap
from .greedy_options import DEFAULT_OPTIONS, GreedyOptions
from .newton import NewtonCache, fixing_newton_step, newton_options
from .pending_margins import PendingMargins
from .row_cache import (
    CachedBlock,
    KernelRowView,
    RowCache,
    cache_for_solve,
    holds_every_row,
    install,
)

__all__ = ["DEFAULT_OPTIONS", "GreedyOptions", "KernelRowView", "RowCache",
           "holds_every_row", "prefer_greedy", "solve_kernel_greedy"]


def prefer_greedy(problem: BoxQP, n_movable: int,
                  options: GreedyOptions | None = None) -> bool:
    """Whether a kernel problem of ``n_movable`` samples (those whose box is not a
    point) should be solved by this solver: when it is not small
    (:attr:`GreedyOptions.greedy_min_free`). At large ``C``, with thousands of
    interpolated or free samples, the working sets' cyclic epochs over the cached
    kernel block crawl, where greedy pairs with a row cache do not."""
    options = DEFAULT_OPTIONS if options is None else options
    return not problem.linear and n_movable > options.greedy_min_free


def solve_kernel_greedy(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                        tol: float, max_iter: int, random_state: np.random.RandomState,
                        dynamic_screen: DynamicScreen | None = None,
                        const_fixed_quad: float | None = None,
                        start_margins: np.ndarray | None = None,
                        options: GreedyOptions | None = None) -> SolveResult:
    """Greedy two-variable descent with a row cache (see the module docstring); same
    contract as :func:`~.dual_cd.solve_box_qp` in kernel mode (``max_iter`` counts
    epochs: updates divided by the number of free variables). ``random_state`` is not
    used: the selection is deterministic. ``start_margins``, if given, is ``Q alpha``
    over all samples at the given ``alpha`` (plain accuracy: it only starts the
    gradient, the caller certifies the answer): the gradient is then read from it, and
    the pending variables' gradient is updated from it by the variables that moved,
    instead of kernel products over every support vector.

    The updates run over a column set ``W`` of the free variables: the kept cache's
    (when the last solve of the path left one) and the free variables strictly inside
    their box, later only those that shrinking keeps. The other free variables are
    *pending*: held at their value, their gradient is reconstructed (one kernel product)
    before the solve may stop, and those that violate their optimality condition
    return to ``W``. The reported gap is always that of every free variable.

    ``options`` (:class:`~.greedy_options.GreedyOptions`, default
    :data:`DEFAULT_OPTIONS`) holds the solver's tuning values.
    """
    del random_state
    options = DEFAULT_OPTIONS if options is None else options
    with _LoopTeam() as n_threads:
        return _solve_kernel_greedy(
            problem, alpha, fixed, tol=tol, max_iter=max_iter,
            dynamic_screen=dynamic_screen, const_fixed_quad=const_fixed_quad,
            start_margins=start_margins, n_threads=n_threads, options=options)


class _LoopTeam:
    """The threads of one greedy loop: the fit's OpenMP threads, shared among the
    greedy loops running at the same time in this process (a multiclass fit's tasks or
    folds on threads), so that their teams, whose threads spin while they wait for
    the next scan, do not hold more threads than there are to share. The answer does
    not depend on it (the loop's results are the same on any number of threads)."""

    _lock = threading.Lock()
    running = 0

    def __enter__(self) -> int:
        with _LoopTeam._lock:
            _LoopTeam.running += 1
            running = _LoopTeam.running
        return max(1, current_n_threads() // running)

    def __exit__(self, *exc) -> None:
        with _LoopTeam._lock:
            _LoopTeam.running -= 1


def _solve_kernel_greedy(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                         tol: float, max_iter: int,
                         dynamic_screen: DynamicScreen | None,
                         const_fixed_quad: float | None,
                         start_margins: np.ndarray | None,
                         n_threads: int, options: GreedyOptions) -> SolveResult:
    solve = _GreedySolve(problem, alpha, fixed, tol=tol, max_iter=max_iter,
                         const_fixed_quad=const_fixed_quad, start_margins=start_margins,
                         n_threads=n_threads, options=options)
    while True:
        out = solve.run_loop()
        if out.status == NEED_ROW:
            solve.fetch_rows(out.need)
            continue
        la, G = solve.check_gap()
        complete = solve.pending.size == 0
        last = (solve.rel_gap <= tol or solve.updates >= solve.max_updates
                or solve.hard_margin_due())
        if not complete and (last or solve.pending_check_due()):
            if solve.return_pending():
                continue
            complete = last
        if solve.rel_gap <= tol and complete:
            solve.converged = True
            break
        if solve.updates >= solve.max_updates:
            break
        if solve.try_newton_step(la, out.violation):
            continue
        if dynamic_screen is not None and la.size and complete:
            solve.screen(dynamic_screen, la, G)
        if solve.narrow_to_kept(la):
            continue
        if out.status == CONVERGED:
            solve.eps = 0.1 * min(solve.eps, out.violation)
    return solve.result()


class _GreedySolve:
    """The state of one greedy solve and its steps, in the order the solve takes them
    (:func:`_solve_kernel_greedy`): the compiled loop's updates over W, the gap check,
    the pending variables' return to W, Newton steps on the interior set, dynamic
    screening, and narrowing W to the variables worth their rows.

    W's arrays (``a``, ``g``, ``lo``, ``hi``, ``p``, ``diag``, over the positions of
    ``cache.W``) are replaced whenever W changes; ``alpha`` holds every sample's value
    and is brought up to date from ``a`` before anything reads it.
    """

    def __init__(self, problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                 tol: float, max_iter: int, const_fixed_quad: float | None,
                 start_margins: np.ndarray | None, n_threads: int,
                 options: GreedyOptions):
        opt = self.opt = options
        self.problem, self.tol, self.n_threads = problem, tol, n_threads
        self.alpha = alpha = alpha.astype(np.float64, copy=True)
        cold = not alpha.any()
        self.prefetch_rows = opt.prefetch_rows_cold if cold else opt.prefetch_rows
        # a solve from zero takes partners among the cached rows only: most rows are
        # not cached yet, and computing a missing partner's row at each update would
        # compute most rows several times over before the cache holds them
        self.uncached_gain = (opt.uncached_partner_gain if opt.partner_any and not cold
                              else np.inf)
        self.pending_margins = PendingMargins(problem, alpha, start_margins)
        self.fixed = fixed = fixed | (problem.hi <= problem.lo)
        free = np.flatnonzero(~fixed)
        interior = free[(alpha[free] > problem.lo[free]) & (alpha[free] < problem.hi[free])]
        self.cache = cache_for_solve(problem, free, interior, opt)
        # W stays every sample (see cache_for_solve)
        self.every_row = holds_every_row(problem)
        self._start_columns(free)
        self._start_gradient(start_margins, const_fixed_quad)
        self.n_free0 = max(free.size, 1)
        self.max_updates = int(max_iter) * self.n_free0
        self.updates, self.n_checks, self.eps = 0, 0, 0.1
        self.events, self.dyn_fixed = [], []
        self.gap = self.rel_gap = np.inf
        self.hm_parts = None  # (listed margins, a'Qa, dual) where the C-free gap applies
        self.converged = False
        self.newton_tried, self.n_newton, self.early_done, self.n_raised = None, 0, False, 0
        # a warm start's interior set is nearly the final one, so on many free samples
        # its Newton steps are tried from the first check; a cold start's is not (nor a
        # start with every variable at a bound, such as a path's closed form at C_min:
        # its first steps would be on every margin violator, thousands of variables far
        # from the final set), and on few free samples the epochs are cheap against a
        # step's rounds: steps then wait for the retry gap, where coordinate descent has
        # settled most bounds
        early = (not cold and interior.size > 0
                 and free.size >= opt.newton_early_min_free)
        self.newton_start = (opt.newton_below_gap if early
                             else min(opt.newton_below_gap, opt.newton_retry_gap))
        self.newton_below = self.newton_start
        if problem.newton is not None:
            problem.newton.keep_bytes = problem.kernel.cache_bytes

    def _start_columns(self, free: np.ndarray) -> None:
        """W's arrays; the free variables outside W are pending, the nonzero ones
        outside W held (their margins enter the gradient)."""
        problem, alpha, W = self.problem, self.alpha, self.cache.W
        in_W = np.zeros(problem.n_samples, dtype=bool)
        in_W[W] = True
        self.pending = free[~in_W[free]]
        self.held = np.flatnonzero(~in_W & (alpha != 0.0))
        self.a = alpha[W].copy()
        self.lo, self.hi = problem.lo[W].copy(), problem.hi[W].copy()
        outside = self.fixed[W]  # positions of W held at their value (a degenerate box)
        self.lo[outside] = self.hi[outside] = self.a[outside]
        self.p = problem.p[W].copy()
        self.diag = np.ascontiguousarray(problem.sqnorm[W])
        self.active = np.flatnonzero(~outside).astype(np.int64)
        self.n_listed = self.n_active = self.active.size
        self._columns_changed()

    def _start_gradient(self, start_margins: np.ndarray | None,
                        const_fixed_quad: float | None) -> None:
        """The gradient over W and the objective ``1/2 a'Qa - p'a``, afterwards tracked
        through the updates' exact decreases; its constant part ``a_h'Q_hh a_h`` over
        the held variables (``|held|^2`` kernel values) only when the stopping test
        needs it (``const``, None until then)."""
        problem, alpha, a, W = self.problem, self.alpha, self.a, self.cache.W
        s, held, p = problem.sign, self.held, self.p
        self.const = const_fixed_quad if not self.pending.size else None
        self.a_held = s[held] * alpha[held] if held.size else None
        if start_margins is not None:
            # the whole objective from the margins (const: nothing left out)
            self.g = start_margins[W] - p
            self.objective = 0.5 * float(alpha @ start_margins) - float(problem.p @ alpha)
            self.const = 0.0
            return
        if held.size:  # the held variables' margins over W
            d = s[W] * problem.kernel.matvec(W, held, self.a_held)
        else:
            d = np.zeros(W.size)
            self.const = 0.0
        g = self.g = d - p
        nz = np.flatnonzero(a != 0.0)
        if nz.size:
            # interior variables first: they are the likeliest to be selected
            lo, hi = self.lo, self.hi
            nz = nz[np.argsort((a[nz] <= lo[nz]) | (a[nz] >= hi[nz]), kind="stable")]
            self.cache.accumulate(problem, g, nz, a[nz])
        self.objective = 0.5 * (float(a @ (g + p - d)) + 2.0 * float(a @ d)) \
            - float(problem.p @ alpha)  # without 0.5 * const

    def _columns_changed(self) -> None:
        """W changed: its diagonal's inverse and signs again, the shrinking count anew."""
        self.inv_diag = _inverse(self.diag)
        self.since_shrink = 0
        self.sign_W = np.ascontiguousarray(self.problem.sign[self.cache.W],
                                           dtype=np.float64)

    def run_loop(self) -> LoopOutcome:
        """The compiled loop's updates until the next gap check (or a missing row)."""
        opt, cache, n_listed = self.opt, self.cache, self.n_listed
        a, g, lo, hi = self.a, self.g, self.lo, self.hi
        budget = min(max(min(_check_schedule(self.n_checks), opt.check_eighths)
                         * self.n_free0 // 8, 1),
                     max(self.max_updates - self.updates, 1))
        if cache.signs is None:
            loop_lo, loop_hi, loop_sign = lo, hi, self.sign_W
        else:
            # the kernel's unsigned rows: the loop on b = S a (see KernelRowView)
            flip = self.sign_W < 0.0
            a[flip] *= -1.0
            g[flip] *= -1.0
            loop_sign = np.ones(a.size)
            loop_lo, loop_hi = np.where(flip, -hi, lo), np.where(flip, -lo, hi)
        out = greedy_updates(a, g, loop_lo, loop_hi, self.diag, self.inv_diag, loop_sign,
                             self.active, self.n_active, n_listed, cache.rows, cache.slot,
                             cache.last_use, cache.clock, budget, self.eps,
                             min(opt.shrink_every, n_listed) if n_listed > 1 else 0,
                             True, opt.prefer_cached,
                             cache.capacity if opt.partner_any else 0, self.uncached_gain,
                             self.since_shrink, self.n_threads, **opt.loop_arguments())
        if cache.signs is not None:
            a[flip] *= -1.0
            g[flip] *= -1.0
        self.n_active, cache.clock, self.since_shrink = (out.n_active, out.clock,
                                                         out.since_shrink)
        self.updates += out.updates
        self.objective -= out.decrease
        if out.team_gave_up:
            self.n_threads = 1  # other work holds the cores: alone for the rest
        return out

    def fetch_rows(self, need: int) -> None:
        """Cache the missing row of ``need`` and those of the largest violations."""
        self.cache.fetch(self.problem, _prefetch(
            self.a, self.g, self.lo, self.hi, self.active[:self.n_active], self.cache,
            need, self.prefetch_rows))

    def check_gap(self) -> tuple[np.ndarray, np.ndarray]:
        """The duality gap over W's listed positions and the relative gap; returns the
        listed positions and their gradient."""
        self.n_checks += 1
        a, lo, hi = self.a, self.lo, self.hi
        la = self.active[:self.n_listed]
        G = self.g[la]
        self.gap = float((np.maximum(-lo[la] * G, -hi[la] * G) + a[la] * G).sum())
        self.alpha[self.cache.W] = a
        self.rel_gap, self.const = _relative_gap(self.problem, self.alpha, self.gap,
                                                 self.objective, self.const, self.tol,
                                                 self.held, self.a_held)
        self.hm_parts = None
        if (self.problem.hinge and la.size and not self.held.size
                and np.count_nonzero(a[la]) == np.count_nonzero(a)):
            # every nonzero variable is listed: the reduced problem is the SVM on the
            # listed and pending samples, with its C-free gap (dual_cd.hard_margin_gap);
            # the objective 1/2 a'Qa - p'a is then whole. The pending samples' margins
            # count once they are computed (return_pending)
            dual = -self.objective
            quad = 2.0 * (self.objective + float(self.p @ a))
            self.hm_parts = (G + self.p[la], quad, dual)
            if not self.pending.size:
                self._take_hard_margin_gap(self.hm_parts[0])
        if self.problem.status is not None:
            self.problem.status.record(int(np.ceil(self.updates / self.n_free0)),
                                       self.rel_gap)
        return la, G

    def _take_hard_margin_gap(self, margins: np.ndarray) -> None:
        """The C-free gap over these margins, where it is the smaller."""
        _, quad, dual = self.hm_parts
        hm = hard_margin_gap(margins, quad, dual)
        if hm < self.gap:
            self.gap, self.rel_gap = hm, hm / max(abs(dual), TINY)

    def hard_margin_due(self) -> bool:
        """Whether the listed samples' C-free gap is within ``tol`` while samples are
        pending: their margins then decide (return_pending), as at the solve's end."""
        if self.hm_parts is None or not self.pending.size:
            return False
        q, quad, dual = self.hm_parts
        return hard_margin_gap(q, quad, dual) <= self.tol * abs(dual)

    def pending_check_due(self) -> bool:
        """Whether to check the pending variables before the solve's first Newton step:
        those that returned only at its end made a second factorisation of the grown
        interior set."""
        return (self.opt.early_pending_check and not self.early_done
                and self.n_newton == 0 and self.tol < self.rel_gap <= self.newton_below)

    def return_pending(self) -> bool:
        """The pending variables' gradient, afresh: they join the gap and, where it is
        open, W. Whether W grew."""
        problem, alpha, pending, tol = self.problem, self.alpha, self.pending, self.tol
        self.early_done = True
        alpha[self.cache.W] = self.a
        g_pend = self.pending_margins.gradient(alpha, pending)
        t_pend = (np.maximum(-problem.lo[pending] * g_pend, -problem.hi[pending] * g_pend)
                  + alpha[pending] * g_pend)
        self.gap += float(t_pend.sum())
        self.rel_gap, self.const = _relative_gap(problem, alpha, self.gap, self.objective,
                                                 self.const, tol, self.held, self.a_held)
        if self.hm_parts is not None:
            self._take_hard_margin_gap(np.concatenate([self.hm_parts[0],
                                                       g_pend + problem.p[pending]]))
        back = t_pend > 0.0
        if not (self.rel_gap > tol and back.any() and self.updates < self.max_updates):
            return False
        (self.cache, self.a, self.g, self.lo, self.hi, self.p, self.diag,
         self.active) = _add_columns(problem, self.cache, alpha, pending[back],
                                     g_pend[back],
                                     (self.a, self.g, self.lo, self.hi, self.p, self.diag),
                                     self.active[:self.n_listed])
        self.pending = pending[~back]
        self.n_listed = self.n_active = self.active.size
        self._columns_changed()
        # the returning variables' violations set the next target, not the (tiny) one
        # the others had reached
        self.eps = max(self.eps, 0.1 * float(np.abs(g_pend[back]).max()))
        # the interior set changed: Newton steps from the early threshold again, with
        # half of their budget renewed
        self.newton_below = self.newton_start
        self.n_newton = min(self.n_newton, self.opt.newton_max_steps // 2)
        return True

    def try_newton_step(self, la: np.ndarray, violation: float) -> bool:
        """A Newton step on the interior variables (and those about to enter), when the
        gap is small enough and the set is not the last one tried. Whether it moved
        them."""
        opt, a, g, lo, hi = self.opt, self.a, self.g, self.lo, self.hi
        # the interior variables and those at a bound that their gradient pushes off
        # it (the next updates would free them): the step's fixing rounds put back
        # those it carries out of their box again
        G = g[la]
        interior = la[(lo[la] < hi[la]) & ((a[la] > lo[la]) | (G < 0.0))
                      & ((a[la] < hi[la]) | (G > 0.0))]
        max_system = newton_options(self.problem).max_system
        if interior.size > max_system:
            # beyond the largest system: a Newton step on the most violating interior
            # variables, the others held
            keep = np.argpartition(-np.abs(g[interior]), max_system - 1)
            interior = np.sort(interior[keep[:max_system]])
        W = self.cache.W
        if not (self.tol < self.rel_gap <= self.newton_below
                and self.n_newton < opt.newton_max_steps and 0 < interior.size
                and not np.array_equal(W[interior], self.newton_tried)):
            return False
        self.newton_tried, self.n_newton = W[interior], self.n_newton + 1
        out = _newton_step(self.problem, self.cache, a, g, lo, hi, interior,
                           opt.newton_fix_rounds)
        moved = out[0] if out is not None else None
        # a step that closes a fair share of the gap (the most any step can gain)
        # helped, even scaled down; one that gains little says the set is still far
        # from the final one
        helped = moved is not None and -moved >= opt.newton_useful_share * self.gap
        self.n_raised = 0 if helped else self.n_raised + 1
        if self.n_raised > opt.newton_retries:
            # steps in a row that gained little: later steps wait for a smaller gap,
            # the retry threshold first, then the late one
            wait = (opt.newton_retry_gap if self.newton_below > opt.newton_retry_gap
                    else opt.newton_late_gap)
            self.newton_below = min(self.newton_below, wait)
            self.n_raised = 0
        if moved is None:
            return False
        self.objective += moved
        self.eps = max(self.eps, 0.1 * violation)
        return True

    def screen(self, dynamic_screen: DynamicScreen, la: np.ndarray, G: np.ndarray) -> None:
        """Gap-safe dynamic screening of the listed positions: those it fixes move to
        their bound and leave the scans."""
        problem, a, g, lo, hi, p = self.problem, self.a, self.g, self.lo, self.hi, self.p
        lo_m, hi_m = dynamic_screen(G + p[la], p[la], self.diag[la], self.gap)
        to_lo, to_hi = la[lo_m], la[hi_m]
        if not (to_lo.size or to_hi.size):
            return
        moved = np.concatenate([to_lo, to_hi])
        new = np.concatenate([lo[to_lo], hi[to_hi]])
        step = new - a[moved]
        change = step != 0.0
        g_old = g[moved]
        self.cache.accumulate(problem, g, moved[change], step[change])
        # exact change of the objective: step'(g_old + g_new) / 2
        self.objective += 0.5 * float(step @ (g_old + g[moved]))
        a[moved] = new
        lo[moved] = hi[moved] = new
        self.dyn_fixed.append(self.cache.W[moved])
        keep = np.ones(a.size, dtype=bool)
        keep[moved] = False
        self.active = np.ascontiguousarray(la[keep[la]])
        self.n_listed = self.n_active = self.active.size
        self.events.append((to_lo.size, to_hi.size, self.n_listed + self.pending.size))

    def narrow_to_kept(self, la: np.ndarray) -> bool:
        """When most of W sits at a bound on the right side of it: W narrowed to the
        others (narrower rows, more of them cached), the rest pending. Whether it
        was."""
        m = self.cache.W.size
        kept = _narrowed(self.a, self.g, self.lo, self.hi, la, self.cache.capacity)
        if kept.size >= self.opt.restrict_fraction * m or self.every_row:
            return False
        W = self.cache.W
        self.alpha[W] = self.a
        is_kept = np.zeros(m, dtype=bool)
        is_kept[kept] = True
        self.pending = np.concatenate([self.pending, W[la[~is_kept[la]]]])
        self.cache = self.cache.restricted(self.problem, kept, self.opt)
        install(self.problem, self.cache)
        self.a, self.g, self.lo, self.hi, self.p, self.diag = (
            x[kept].copy() for x in (self.a, self.g, self.lo, self.hi, self.p, self.diag))
        self.active = np.arange(self.cache.W.size, dtype=np.int64)
        self.n_listed = self.n_active = self.active.size
        self._columns_changed()
        return True

    def result(self) -> SolveResult:
        """The solve's answer over every sample."""
        alpha, fixed = self.alpha, self.fixed
        alpha[self.cache.W] = self.a
        if self.dyn_fixed:
            fixed[np.concatenate(self.dyn_fixed)] = True
        n_iter = int(np.ceil(self.updates / self.n_free0))
        return SolveResult(alpha, fixed, self.gap, self.rel_gap, n_iter, self.converged,
                           self.events)


def _newton_step(problem, cache: RowCache, a, g, lo, hi, interior,
                 fix_rounds: int = 1) -> tuple[float, bool] | None:
    """Newton step on the positions ``interior`` of W (strictly inside their box, or at
    a bound with the gradient pushing them off it; the others held), with
    :func:`~.newton.fixing_newton_step`'s rounds; ``g`` kept through the row cache.
    Returns ``(change of the objective, whether the full step was kept)``, or None."""
    keeper = problem.newton if problem.newton is not None else NewtonCache()
    # the factor cache works on sorted global indices (W is not sorted once extended)
    interior = interior[np.argsort(cache.W[interior], kind="stable")]
    return fixing_newton_step(
        problem, keeper, CachedBlock(problem, cache), cache.W, a, g, lo, hi, interior,
        fix_rounds, lambda out, positions, delta: cache.accumulate(problem, out,
                                                                   positions, delta))


def _relative_gap(problem, alpha, gap, objective, const, tol, held, a_held):
    """``(gap / |dual objective|, const)``. The dual objective is ``-(objective + const
    / 2)``; it is at most ``p'alpha``, so while ``gap > tol p'alpha > 0`` the solve is
    certainly not done and ``gap / p'alpha`` (a lower bound) is returned without the
    constant; otherwise the constant is computed (once)."""
    pa = float(problem.p @ alpha)
    if const is None and pa > 0.0 and gap > tol * pa:
        return gap / pa, const
    if const is None:
        const = float(a_held @ problem.kernel.matvec(held, held, a_held))
    return gap / max(abs(objective + 0.5 * const), TINY), const


def _inverse(diag: np.ndarray) -> np.ndarray:
    """``1 / diag`` where positive (0 elsewhere: the loop does not read it there)."""
    out = np.zeros_like(diag)
    np.divide(1.0, diag, out=out, where=diag > 0.0)
    return out


def _narrowed(a, g, lo, hi, la, capacity: int) -> np.ndarray:
    """Sorted positions to keep in W: the listed variables strictly inside their box or
    violating their optimality condition, then the nearest to violating it (smallest
    gradient pushing into their bound) up to the cache's capacity."""
    G = g[la]
    push = np.where(a[la] <= lo[la], G, np.where(a[la] >= hi[la], -G, -np.inf))
    must = int((push <= 0.0).sum())
    k = min(max(must, capacity), la.size)
    if k >= la.size:
        return np.sort(la)
    return np.sort(la[np.argpartition(push, k - 1)[:k]])


def _add_columns(problem, cache, alpha, extra, g_extra, arrays, active):
    """Extend W by the pending variables ``extra`` (global) with their gradient."""
    a, g, lo, hi, p, diag = arrays
    m = cache.W.size
    cache = cache.extended(problem, extra)
    install(problem, cache)
    a = np.concatenate([a, alpha[extra]])
    g = np.concatenate([g, g_extra])
    lo = np.concatenate([lo, problem.lo[extra]])
    hi = np.concatenate([hi, problem.hi[extra]])
    p = np.concatenate([p, problem.p[extra]])
    diag = np.ascontiguousarray(np.concatenate([diag, problem.sqnorm[extra]]))
    active = np.concatenate([active, m + np.arange(extra.size)]).astype(np.int64)
    return cache, a, g, lo, hi, p, diag, active


def _prefetch(a, g, lo, hi, scanned, cache: RowCache, need: int,
              n_rows: int) -> np.ndarray:
    """``need`` and the largest violations among the scanned positions whose rows are
    missing (at most ``n_rows`` in all, and a quarter of the cache)."""
    k = min(n_rows, max(cache.capacity // 4, 1)) - 1
    if k <= 0 or scanned.size == 0:
        return np.array([need], dtype=np.int64)
    G = g[scanned]
    a_s, lo_s, hi_s = a[scanned], lo[scanned], hi[scanned]
    blocked = ((a_s <= lo_s) & (G >= 0)) | ((a_s >= hi_s) & (G <= 0))
    viol = np.where(blocked, 0.0, np.abs(G))
    viol[cache.slot[scanned] >= 0] = 0.0
    viol[scanned == need] = 0.0
    if k < scanned.size:
        top = np.argpartition(-viol, k - 1)[:k]
    else:
        top = np.arange(scanned.size)
    top = top[viol[top] > 0.0]
    return np.concatenate([[need], scanned[top]]).astype(np.int64)
