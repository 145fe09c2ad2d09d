r"""The path step of the triplet family (SafeMetricLearner).

A :class:`TripletPath` is one triplet problem walked along a path of the regularisation
``alpha`` (the paper's :math:`\lambda`), from the critical value :math:`\lambda_L` down:
its triplet set, its closed form and its last solution, which is the next step's
reference. One step at ``alpha``:

1. **range screening**: the RRPB ranges stored from earlier solutions screen every
   triplet whose range contains ``alpha``, with no rule evaluation;
2. **reference screening**: the RRPB ball (RPB from an exact reference) of the previous
   solution, with the estimator's rule;
3. **start point**: the previous solution, extrapolated along the path;
4. **solve** the reduced problem with dynamic screening (:class:`DynamicScreening`:
   GB/PGB/DGB balls at the iterate), then **certify and repair** on the full problem
   (:func:`~.certify.certified_solve`);
5. **ranges** of the new solution merged into the stored ones, and the **report**.

The mathematics of every ball and rule is on ``doc/theory/metric_learning.rst``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from .._utils import faults
from ..problems.triplet_problem import (
    STATUS_ACTIVE,
    STATUS_L,
    STATUS_R,
    TripletProblem,
    closed_form,
    loss_values,
    triplet_values,
    triplet_values_at,
    update_hl,
)
from ..problems.triplets import TripletSet
from ..screening import triplet_bounds as tb
from ..screening.triplet import SdpSchedule, screen_triplets
from ..solvers import psd_gradient as pg
from .certify import certified_solve
from .policy import DIAGONAL_METRIC, FULL_METRIC, EveryStep, PassCount, skipped_event
from .protocol import StepOutcome
from .report import ScreeningEvent, ScreeningReport
from .triplet_dynamic import DynamicScreening
from .triplet_reduced import ReducedTriplets, pair_share
from .triplet_settings import (
    DEFAULT_OPTIONS,
    TripletOptions,
    TripletReference,
    TripletSettings,
    pass_work,
    start_point,
)

#: The balls that screen from the reference before a solve (the others screen at the
#: solver's iterates only).
REFERENCE_BOUNDS = ("rrpb", "rrpb+pgb", "rpb")
_EVERY_STEP = EveryStep()


class TripletPath:
    """One triplet problem walked along a path of ``alpha`` (see the module docstring).

    ``critical_alpha`` and ``G_pos`` are the closed form: for ``alpha >=
    critical_alpha`` the optimum is ``G_pos / alpha``. ``options`` are the path's tuning
    values (:class:`~.triplet_settings.TripletOptions`; none changes an optimum).
    """

    def __init__(self, ts: TripletSet, gamma: float, diagonal: bool,
                 options: TripletOptions = DEFAULT_OPTIONS):
        self.ts, self.gamma, self.diagonal = ts, gamma, diagonal
        self.options = options
        # (a warm fit is a few gradient passes over the pairs, and screening makes the
        # passes cheaper, not fewer: the policy counts passes over the pairs)
        self.policy = PassCount(DIAGONAL_METRIC if diagonal else FULL_METRIC)
        self.critical_alpha, self.G_pos = closed_form(ts, gamma, diagonal)
        # G_+ = 0: no direction separates any triplet, M* = 0 for every alpha > 0
        self._separable = bool(np.any(self.G_pos))
        self.reference: TripletReference | None = None
        # the solver's last step (for a warm start), with screening and without: a
        # reduced problem that reads a good share fewer pairs has another curvature
        # than the whole problem, and a step carried from one to the other made the
        # next solve backtrack. Between problems that read the same pairs
        # the last fit's step is carried whatever its mode (options.same_pairs)
        self.steps: dict[bool, float | None] = {True: None, False: None}
        self._last_step: float | None = None
        # the compiled solver loop's work buffers, kept between the fits of the path
        # (they hold no state, and the path itself is never pickled) whatever their size
        # until the path ends (:meth:`end_fit`): the memory a solve needs anyway, whose
        # pages, allocated afresh at each fit, would be faulted in again at every step
        # (most of all at the first solve of the whole problem after reduced ones)
        self.workspace = pg.SpgWorkspace()
        self.workspace.kept_bytes = sys.maxsize
        # the SDP rule's schedule: its budget grows with the solver's iterations along
        # the path
        self.sdp_schedule = SdpSchedule()
        # (status, H_L, the triplets whose status changed since H_L was last summed from
        # scratch) of the last fit's reduced problem, at its end and (full metric) at its
        # start: the next fit updates H_L from whichever is closer to its own status
        self._hl_state = None
        self._hl_start = None
        self._updates_hl = pass_work(ts, diagonal) >= options.hl_update_min_work
        # the certificate from bounds: tried again after 1, 2, 4, ... fits once it did
        # not pay (when most pairs had to be evaluated anyway)
        self._bounds_skip, self._bounds_backoff = 0, 1
        # the share of the pairs the last fit's solver started with (for the cost model)
        self._solver_pair_share = 1.0

    #: the one-vs-rest task (metric learning has one problem)
    name = ""

    @property
    def data(self) -> TripletSet:
        """The triplet set (the engine protocol's name for the problem's data)."""
        return self.ts

    @property
    def separable(self) -> bool:
        """Whether some direction separates a triplet (``G_+ != 0``): otherwise the
        optimum is 0 for every ``alpha > 0``."""
        return self._separable

    def critical_value(self, max_iter: int) -> float:
        """:math:`\\lambda_L`: at and above it the metric is :math:`G_+/\\alpha`."""
        return float(self.critical_alpha)

    def new_report(self) -> ScreeningReport:
        return ScreeningReport(kind="triplets", n_variables=self.ts.n_triplets)

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """The solver's work buffers are released unless the path goes on (``keep``:
        a warm start); nothing else beyond the reference and the triplet set is kept
        between fits."""
        if not keep:
            self.workspace.release()

    def fit(self, alpha: float, settings: TripletSettings,
            report: ScreeningReport) -> StepOutcome:
        """Solve at ``alpha`` from the current reference (the closed form at the
        critical value for the first fit) and make the solution the reference (the
        engine protocol, :mod:`.protocol`)."""
        ts, diag = self.ts, self.diagonal
        n_t = ts.n_triplets
        # closed form: exact, every triplet in L or C. With G_+ = 0 (no direction
        # separates any triplet) M* = 0 for every alpha > 0.
        if alpha >= self.critical_alpha or not self._separable:
            M = self.G_pos / alpha
            z = triplet_values(ts, M, diag)
            n_L = n_t if alpha > self.critical_alpha else int(
                (z < 1.0 - self.gamma).sum())
            report.add(ScreeningEvent("lambda_L", "closed_form", alpha, 0, n_L, n_t))
            report.set_final(0, n_L, closed_form=True)
            settings.log(f"alpha={alpha:.6g} >= critical alpha "
                         f"{self.critical_alpha:.6g}: closed form G_+/alpha")
            self.reference = TripletReference(alpha, M, 0.0, z, exact=True)
            return StepOutcome(self.reference, 0.0, 0.0, 0, True)
        ref0 = self.reference
        if ref0 is None:
            M0 = self.G_pos / self.critical_alpha
            ref0 = TripletReference(self.critical_alpha, M0, 0.0,
                                    triplet_values(ts, M0, diag), exact=True)
        # (the balls of the iterate alone screen nothing before the solve: the share of
        # the pairs a solve starts with says nothing of what they save, and they run at
        # every step)
        policy = self.policy if settings.bound in REFERENCE_BOUNDS else _EVERY_STEP
        decision = policy.decide(settings.mode) if settings.screens else None
        if decision is not None and not decision.screen:
            report.add(skipped_event(settings.bound, alpha, n_t, decision.reason,
                                     kind="triplets"))
            settings.log(f"alpha={alpha:<10.4g} screening skipped: {decision.reason}")
            settings = replace(settings, bound=None)
        warm = self.reference is not None
        outcome = self._step(ref0, alpha, settings, report)
        if decision is not None and warm:
            # the share the policy weighs is of the pairs the solver no longer reads,
            # not of the triplets: a pair stays until all of its k triplets are screened.
            # (A cold fit screens from the closed form at the critical value, far from
            # its answer: what it counts says nothing of a path step.)
            policy.record(decision.screen, outcome.n_iter, self._solver_pair_share)
        self.reference = outcome.reference
        return outcome

    def _step(self, ref0: TripletReference, alpha: float, settings: TripletSettings,
              report: ScreeningReport) -> StepOutcome:
        ts, gamma, diag = self.ts, self.gamma, self.diagonal
        n_t = ts.n_triplets
        status = np.zeros(n_t, dtype=np.int8)
        bound = settings.bound
        ranges = self.uses_ranges(settings)
        if bound is not None and ranges and ref0.range_label is not None:
            t0 = time.perf_counter()
            status, n_R, n_L = tb.range_screen(ref0.range_label, ref0.range_lo,
                                               ref0.range_hi, alpha, status)
            dt = time.perf_counter() - t0
            report.add(ScreeningEvent("RRPB-range", "range", alpha, n_R, n_L, n_t, dt))
            if settings.verbose:
                settings.log(f"alpha={alpha:<10.4g} range     R={n_R:<8d} L={n_L:<8d} "
                             f"time={dt:.3e}s")
        schedule = self.sdp_schedule if settings.rule == "sdp" else None
        if schedule is not None:
            schedule.start_fit()
        if bound in REFERENCE_BOUNDS:
            t0 = time.perf_counter()
            ball = (tb.rpb(ref0.M, ref0.alpha, alpha) if ref0.exact and bound == "rpb"
                    else tb.rrpb(ref0.M, ref0.alpha, alpha, ref0.eps))
            if schedule is not None and schedule.due():
                idx = np.flatnonzero(status == STATUS_ACTIVE).astype(np.int32)
                res = screen_triplets(ts, ball, "sdp", gamma, diag, idx,
                                      ref_values=ref0.z[idx], max_eig=schedule.budget)
                schedule.record(res.n_sdp, res.n_eig)
                status[idx[res.to_R]] = STATUS_R
                status[idx[res.to_L]] = STATUS_L
                n_R, n_L = int(res.to_R.sum()), int(res.to_L.sum())
            elif ref0.zrad is None:  # a path bound has no half-space: "linear" is the
                # sphere rule here
                status, n_R, n_L = tb.scaled_sphere_screen(ref0.z, ts.hnorm, ball.scale,
                                                           ball.radius, gamma, status)
            else:
                status, n_R, n_L = self._screen_bounded(ref0, ball, status)
            dt = time.perf_counter() - t0
            report.add(ScreeningEvent(ball.name, "reference", alpha, n_R, n_L, n_t, dt))
            if settings.verbose:
                settings.log(f"alpha={alpha:<10.4g} reference {ball.name:<5} R={n_R:<8d} "
                             f"L={n_L:<8d} radius={ball.radius:.3e} time={dt:.3e}s")
        if bound is not None:
            _plant_decisions(status)
        hook = (None if bound is None
                else DynamicScreening(ts, alpha, report, settings, schedule))
        # the SDP rule reads the reference's values as exact: no bounds for it
        prior = (None if settings.rule == "sdp" or bound is None or self._bounds_skip
                 or pass_work(ts, diag) < self.options.bounds_min_work else ref0)
        self._bounds_skip = max(self._bounds_skip - 1, 0)
        if bound is None:
            # a step without screening (the cost model's choice): every triplet active
            # and H_L = 0 without a pass; the last screened step's H_L state is kept for
            # the next screened step (updated to an empty L and back, every L-triplet
            # would be summed twice)
            problem = TripletProblem(ts, self.gamma, diag, status, HL=np.zeros(
                ts.X.shape[1] if diag else (ts.X.shape[1],) * 2))
        else:
            problem = self._problem(status)
        previous_share = self._solver_pair_share
        self._solver_pair_share = problem.n_pairs_used / max(ts.n_pairs, 1)
        if bound is not None and not diag and self._updates_hl:
            # the reference's statuses move little from one fit to the next, while the
            # dynamic rules screen most of the rest by the end of a fit: the next
            # fit's H_L is an update of this one's, not a sum from scratch
            count = 0 if self._hl_state is None else self._hl_state[2]
            self._hl_start = (problem.status.copy(), np.array(problem.HL, copy=True), count)
        if min(previous_share, self._solver_pair_share) >= self.options.same_pairs:
            step = self._last_step
        else:
            step = self.steps[bound is not None]
            if step is None:  # the first step of this mode: the other mode's, if any
                step = self.steps[bound is None]
        reduced = ReducedTriplets(problem, start_point(ref0, alpha), alpha, hook, step,
                                   report, settings, self.workspace, prior, self.options)
        result = certified_solve(reduced, tol=settings.tol, max_iter=settings.max_iter,
                                 describe=f"SafeMetricLearner at alpha={alpha:.6g}")
        self.steps[bound is not None] = self._last_step = reduced.step
        if reduced.bounded is not None:
            self._bounds_backoff = 1 if reduced.bounded else min(
                2 * self._bounds_backoff, self.options.max_bounds_backoff)
            self._bounds_skip = 0 if reduced.bounded else self._bounds_backoff
        if schedule is not None:
            schedule.end_fit(result.n_iter)
        problem = reduced.problem  # (its counts follow its status)
        report.set_final(n_t - problem.n_active - problem.nL, problem.nL)
        cert = result.certificate
        ref = TripletReference(alpha, reduced.M, cert.gap, reduced.z_full, exact=False,
                               loss=reduced.loss, prev=(ref0.alpha, ref0.M),
                               zrad=reduced.zrad)
        # (the dynamic rules added to H_L too: their triplets count as changed)
        if bound is not None:
            if self._updates_hl:
                changed = (0 if self._hl_state is None else self._hl_state[2]) + abs(
                    problem.nL - reduced.nL0)
                self._hl_state = (problem.status, np.array(problem.HL, copy=True),
                                  changed)
            if ranges:
                self._update_ranges(ref, ref0, alpha)
        else:
            # the stored ranges stay valid (each is where the optimum is known to screen
            # the triplet, whatever the path): carried to the next screened step
            ref.range_label, ref.range_lo, ref.range_hi = (
                ref0.range_label, ref0.range_lo, ref0.range_hi)
        return StepOutcome(ref, cert.gap, cert.rel_gap, result.n_iter, result.converged,
                           n_repairs=result.n_repairs, unscreened=result.unscreened)

    @staticmethod
    def uses_ranges(settings: TripletSettings) -> bool:
        """Whether the path keeps RRPB ranges (``range_screening``; ``"auto"``: with the
        SDP rule only, whose test of a triplet costs O(d^3). With the other rules the
        previous solution's own RRPB test, O(1) a triplet from its stored values (or
        their bounds, then the undecided triplets evaluated), screened exactly the
        triplets the ranges did at every step of every path measured, and the ranges'
        update after each fit is a large share of a screened path: see
        ``doc/benchmarks.md``, "Screening on against off"; git has the runs)."""
        if settings.range_screening != "auto":
            return bool(settings.range_screening)
        return settings.rule == "sdp"

    def _screen_bounded(self, ref0: TripletReference, ball, status: np.ndarray):
        """The reference's sphere rule when some of its values are bounds (``zrad >
        0``): with the bound first (the ball grows by ``scale * zrad``), then, for the
        triplets it leaves undecided, with their exact values at the reference, which
        are stored in it. The decisions are those of the exact values everywhere. Returns
        ``(new_status, n_R, n_L)``."""
        ts, gamma, diag = self.ts, self.gamma, self.diagonal
        status, n_R, n_L = tb.scaled_sphere_screen_rad(ref0.z, ref0.zrad, ts.hnorm,
                                                       ball.scale, ball.radius, gamma, status)
        redo = np.flatnonzero((status == STATUS_ACTIVE) & (ref0.zrad > 0))
        if not redo.size:
            return status, n_R, n_L
        if pair_share(ts, redo) > self.options.full_pass_share:  # most pairs: one pass
            ref0.z, ref0.zrad = triplet_values(ts, ref0.M, diag), None
            redo = np.flatnonzero(status == STATUS_ACTIVE)
        else:
            ref0.z[redo] = triplet_values_at(ts, ref0.M, diag, redo)
            ref0.zrad[redo] = 0.0
        # every triplet still undecided now has its exact value: the exact rule (which
        # leaves the decided ones as they are)
        status, r2, l2 = tb.scaled_sphere_screen(ref0.z, ts.hnorm, ball.scale, ball.radius,
                                                 gamma, status)
        return status, n_R + r2, n_L + l2

    def _problem(self, status: np.ndarray) -> TripletProblem:
        """The reduced problem of ``status``, its H_L updated from the last fit's, at its
        end or (full metric) at its start, whichever status is closer (only the
        triplets whose status changed are summed) until as many triplets have
        changed as the set holds; then summed from scratch, so that the round-off of
        the updates cannot pile up. On a small set (``options.hl_update_min_work``)
        always summed from scratch."""
        ts, state = self.ts, self._hl_state
        if not self._updates_hl:  # (a small set: see options.hl_update_min_work)
            return TripletProblem(ts, self.gamma, self.diagonal, status)
        if state is not None and self._hl_start is not None:
            now = status == STATUS_L
            start = self._hl_start
            if (np.count_nonzero((start[0] == STATUS_L) != now)
                    < np.count_nonzero((state[0] == STATUS_L) != now)):
                state = start
        if state is not None:
            HL, n = update_hl(ts, self.diagonal, state[0], state[1], status,
                              self.options.full_pass_share)
            if HL is not None and state[2] + n <= ts.n_triplets:
                self._hl_state = (state[0], state[1], state[2] + n)
                return TripletProblem(ts, self.gamma, self.diagonal, status, HL=HL)
        self._hl_state = None
        return TripletProblem(ts, self.gamma, self.diagonal, status)

    def _update_ranges(self, ref: TripletReference, ref0: TripletReference,
                       alpha: float) -> None:
        """RRPB ranges from the new solution: kept where the old range still covers
        ``alpha``'s neighbourhood, recomputed (overwritten) elsewhere. A triplet whose
        value is only bounded (``ref.zrad > 0``) keeps its stored range, which stays
        valid (the reference screening still tests it, with its bound)."""
        m, eps = float(np.linalg.norm(ref.M)), ref.eps
        stale = None if ref.zrad is None else ref.zrad > 0
        if ref0.range_label is None and stale is None:
            label, lo, hi = tb.rrpb_ranges(ref.z, self.ts.hnorm, m, eps, alpha, self.gamma)
        else:
            if ref0.range_label is None:
                n = ref.z.size
                label = np.zeros(n, dtype=np.int8)
                lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
            else:
                label, lo, hi = ref0.range_label, ref0.range_lo, ref0.range_hi
            label, lo, hi = tb.merge_rrpb_ranges(ref.z, self.ts.hnorm, m, eps, alpha,
                                                 self.gamma, label, lo, hi, stale)
        ref.range_label, ref.range_lo, ref.range_hi = label, lo, hi

    def loss(self) -> float:
        """The triplet loss of the reference (the quantity of the paper's stop rule)."""
        ref = self.reference
        return float(loss_values(ref.z, self.gamma).sum() if ref.loss is None
                     else ref.loss)


def _plant_decisions(status: np.ndarray) -> None:
    """Under a planted ``"force"`` fault (the certificate's tests,
    :mod:`.._utils.faults`), wrong decisions added to a reference screening: triplets
    the rules left active put in R or L."""
    fault = faults.active("force")
    if fault is not None:
        to_R, to_L = fault.split(fault.pick(status == STATUS_ACTIVE))
        status[to_R], status[to_L] = STATUS_R, STATUS_L
