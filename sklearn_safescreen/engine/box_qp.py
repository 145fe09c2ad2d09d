r"""The path step of the box-QP family (SafeSVC, SafeLAD).

A :class:`BoxQPPath` is one binary problem (one SVM task: a pair of classes, a class
against the rest, or the two classes; or the LAD problem) walked along a path of ``C``:
its data, the solver's caches and its last solution, which is the next step's screening
reference. One step at ``C``:

1. **reference**: the previous solution, or for a cold fit the closed form at the
   critical value followed by a short internal path up to ``C`` (steps of
   ``INTERNAL_PATH_RATIO``), each solution screening the next (a kernel fit whose rows
   do not all fit in the cache, or at a ``C`` far above the critical value, solves
   from zero instead);
2. **screen**: the family's rule from the reference (:mod:`~sklearn_safescreen.screening`)
   fixes samples at an end of their box;
3. **seed**: the start point follows the reference (samples at an end of the old box
   stay at that end of the new one);
4. **solve** the reduced problem, with gap-safe dynamic screening and working sets
   (:mod:`~sklearn_safescreen.solvers`), then **certify and repair** on the full problem
   (:func:`~.certify.certified_solve`);
5. **report** the events in the :class:`~.report.ScreeningReport`.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import numpy as np

from .._utils import faults
from ..problems.box_qp import BoxQP, BoxQPReference
from ..problems.box_qp_data import BoxQPData, LADData, SVMData
from ..problems.box_qp_data import lad_critical_C as _lad_critical_C
from ..problems.constants import TINY, UNIT_ROUNDOFF
from ..screening.balls import ScreeningResult
from ..screening.lad import screen_lad
from ..screening.svm import screen_svm
from ..solvers._cd_fast import seed_point
from ..solvers.dual_cd import solve_box_qp
from ..solvers.newton import NewtonCache
from .box_qp_reduced import ReducedBoxQP
from .box_qp_references import HardMargin, OfferedReferences
from .certify import certified_solve
from .policy import EveryStep, NoScreening, skipped_event
from .protocol import StepOutcome, StepSettings
from .report import ScreeningEvent, ScreeningReport

#: A cold fit walks an internal path from the critical value in steps of this ratio when
#: ``C`` is far enough above it for that to pay off: the interior-point finisher
#: converges in a few iterations from far, so shorter steps only add solves.
INTERNAL_PATH_RATIO = 1e4

#: Kernel rows a cold fit reads for an upper bound of C_min (:meth:`SVMPath.
#: _far_above_critical`): a few rows cost a few passes over the samples, against the
#: whole kernel for C_min itself.
_CRITICAL_PROBE_ROWS = 8

#: Working sets are used when the reference's ``C`` is within this ratio of the target:
#: a working set is a guess from the reference's support, which a far reference (a cold
#: fit's closed form) guesses badly, so plain coordinate descent hands over to working
#: sets there instead.
WORKING_SET_RATIO = 100.0

#: Why a kernel path (SVM or LAD) whose kernel rows all fit in its cache does not screen
#: (unless its caller's mode says so): with every row cached, the kernel solver's work is
#: the free samples' updates and Newton steps, which no rule can fix, and the bound
#: samples the rules would fix are those its shrinking already leaves alone, so the rules
#: could only add their cost. Where the rows do not fit, screening also spares the rows
#: the solver would compute again, and every step screens (see "Screening on against
#: off" in the benchmarks page).
KERNEL_CACHED = ("every kernel row is cached: the solver's shrinking already confines "
                 "its work to the free samples")


def near_reference(ref_C: float | None, C: float) -> bool:
    """Whether a reference at ``ref_C`` is near enough for working sets."""
    return ref_C is not None and 1.0 / WORKING_SET_RATIO <= C / ref_C <= WORKING_SET_RATIO


def seed_alpha(ref: BoxQPReference, problem: BoxQP, C: float) -> np.ndarray:
    """Alpha seeding for a path step: samples at an end of the reference's box stay at
    that end of the new box (their side of the hinge is likely kept), the others keep
    their value clipped to the new box. Only a start point: safety does not depend on
    it."""
    return seed_point(ref.alpha, problem.lo, problem.hi, ref.C / C)


class BoxQPPath(HardMargin, OfferedReferences):
    """One box-QP problem walked along a path of ``C`` (see the module docstring).

    Holds the problem's data (:class:`~sklearn_safescreen.problems.box_qp_data.BoxQPData`,
    with its kernel row cache), the kernel solver's Newton factor cache and the last
    certified solution, the next step's reference. The family (:class:`SVMPath`,
    :class:`LADPath`) supplies the rule and the cold start.
    """

    label = "box QP"

    def __init__(self, data: BoxQPData, name: str = ""):
        self.data, self.name = data, name
        self.newton = NewtonCache() if data.kernel is not None else None
        self.reference: BoxQPReference | None = None
        #: a dual point of another problem on the same samples offered for the next
        #: fit (:meth:`offer_reference`)
        self._offer: tuple[float, np.ndarray] | None = None
        self._hm_parts = None  # the reference's C-free gap (ReducedBoxQP.hard_margin_parts)
        every_row = data.kernel is not None and data.kernel.cache_capacity >= data.n_samples
        self.policy = NoScreening(KERNEL_CACHED) if every_row else EveryStep()

    # -- family hooks
    def screen(self, rule: str, ref: BoxQPReference, C: float) -> ScreeningResult:
        raise NotImplementedError  # pragma: no cover - defined by each family

    def cold_start(self, C: float, report: ScreeningReport, *, tol: float, max_iter: int,
                   rng: np.random.RandomState, verbose: int) -> list[float]:
        """Set :attr:`reference` for a cold fit at ``C`` (``None``: solve from zero) and
        return the values to solve, ending with ``C`` (empty: the reference is the
        answer)."""
        raise NotImplementedError  # pragma: no cover - defined by each family

    # -- the walk
    def new_report(self) -> ScreeningReport:
        return ScreeningReport(kind="samples", n_variables=self.data.n_samples)

    def fit(self, C: float, settings: StepSettings, report: ScreeningReport
            ) -> StepOutcome:
        """Solve at ``C`` from the current reference (a path step) or cold, and make the
        solution the reference (the engine protocol, :mod:`.protocol`)."""
        rule, tol, max_iter = settings.rule, settings.tol, settings.max_iter
        rng, verbose = settings.rng(), settings.verbose
        decision = self.policy.decide(settings.mode) if settings.screens else None
        if decision is not None and not decision.screen:
            report.add(skipped_event(rule, C, self.data.n_samples, decision.reason, self.name))
            if verbose:
                print(f"[{self.label}]{' ' + self.name if self.name else ''} "
                      f"C={C:<10.4g} screening skipped: {decision.reason}")
            rule = None
        n_iter = 0
        if self.reference is None:
            grid = self.cold_start(C, report, tol=tol, max_iter=max_iter, rng=rng,
                                   verbose=verbose)
        elif np.isinf(C):
            grid = _internal_grid(self.reference.C, C)
        else:
            grid = [C]
        # an offer is dropped at C = inf (the hard-margin walk above decides the steps)
        # and on a step that does not screen (_take_offer: only screening repays it)
        if self._take_offer(C, report, answered=not grid or np.isinf(C) or rule is None,
                            verbose=verbose):
            grid = [C]
        outcome = None
        for value in grid:
            if self._hard_margin_answers(C, tol):
                return self._hard_margin_outcome(C, n_iter, report, verbose)
            outcome = self.step(value, rule=rule, tol=tol, max_iter=max_iter, rng=rng,
                                report=report, verbose=verbose, target=C)
            n_iter += outcome.n_iter
            self._check_resolved(C, outcome.converged)
        if outcome is None:  # closed form: the reference is the answer
            return StepOutcome(self.reference, 0.0, 0.0, 0, True)
        outcome.n_iter = n_iter
        return outcome

    def step(self, C: float, *, rule: str | None, tol: float, max_iter: int,
             rng: np.random.RandomState, report: ScreeningReport, verbose: int,
             target: float) -> StepOutcome:
        """One path step at ``C`` from :attr:`reference` (screen, seed, certified
        solve); ``target`` is the value the fit was asked for (``C`` itself, or the end
        of a cold fit's internal path)."""
        data, ref = self.data, self.reference
        problem = data.problem(C, newton=self.newton)
        n = data.n_samples
        t0 = time.perf_counter()
        if ref is None or rule is None:
            at_lower = at_upper = np.zeros(n, dtype=bool)
            alpha0 = np.zeros(n) if ref is None else seed_alpha(ref, problem, C)
        else:
            res = self.screen(rule, _planted_reference(ref), C)
            at_lower, at_upper = _planted_decisions(res.at_lower, res.at_upper,
                                                    problem.lo < problem.hi)
            alpha0 = seed_alpha(ref, problem, C)
            report.add(ScreeningEvent(rule, "reference", C, int(at_lower.sum()),
                                      int(at_upper.sum()), n, time.perf_counter() - t0,
                                      task=self.name))
        reduced = ReducedBoxQP(problem, alpha0, at_lower, at_upper,
                                dynamic=rule is not None,
                                working_set=near_reference(None if ref is None else ref.C,
                                                           C),
                                rng=rng, report=report, rule=rule or "none", C=C,
                                task=self.name, reference=ref)
        where = f"C={C:.6g}" if C == target else \
            f"C={C:.6g}, an internal path step of the fit at C={target:.6g}"
        result = certified_solve(reduced, tol=tol, max_iter=max_iter,
                                 describe=f"{self.label}{self._task_words()}, {where}")
        cert, rel_gap = result.certificate, result.certificate.rel_gap
        if not result.converged:
            # cut by max_iter, the answer is the iterate reached (as SVC's and
            # LinearSVC's); a solve that stopped before, its steps no longer reducing the
            # gap (rounding dominates them), keeps the better of its answer and w = 0
            if result.n_iter < max_iter:
                cert = reduced.no_worse_than_zero() or cert
            rel_gap = _relative_to_objectives(problem, reduced, cert.gap)
        n_lower, n_upper = reduced.screened_counts()
        report.set_final(n_lower, n_upper)
        if verbose:
            # a cold fit's first lines are at values the user never asked for: say so,
            # or they read as a fit at the wrong C
            value = f"C={C:<10.4g}" if C == target else \
                f"C={C:.4g} (internal path step toward C={target:.4g})"
            print(f"[{self.label}]{' ' + self.name if self.name else ''} {value} "
                  f"screened R={n_lower:<6d} L={n_upper:<6d} "
                  f"free={n - n_lower - n_upper:<6d} rel_gap={cert.rel_gap:.2e} "
                  f"iter={result.n_iter:<5d} time={time.perf_counter() - t0:.3f}s")
        # the next step's reference: compensated margins, gap and their error bounds
        # (kernel mode: the certificate's margins, compensated already)
        self.reference = reduced.reference()
        self._hm_parts = reduced.hard_margin_parts(self.reference)
        # a fit whose gap met tol is certified unless the gap's own error bound exceeds
        # tol; one that did not is limited by the resolution of float64 if its floor
        # (error bound and resolution of the dual point) exceeds tol
        floor = problem.rounding_floor(self.reference, resolution=not result.converged)
        return StepOutcome(self.reference, self.reference.gap, rel_gap, result.n_iter,
                           result.converged, floor, n_repairs=result.n_repairs,
                           unscreened=result.unscreened)

    def _task_words(self) -> str:
        if not self.name:
            return ""
        # a one-vs-one task is named after its pair ("a vs b"), a one-vs-rest one after
        # its class
        return f" (classes {self.name})" if " vs " in self.name else f" (class {self.name})"

    def _closed_form_answer(self, C: float, n_lower: int, n_upper: int,
                            report: ScreeningReport, verbose: int, detail: str) -> list:
        """Record that the reference (the closed form at ``C``) is the answer."""
        report.add(ScreeningEvent("Cmin", "closed_form", C, n_lower, n_upper,
                                  self.data.n_samples, task=self.name))
        report.set_final(n_lower, n_upper, closed_form=True)
        if verbose:
            print(f"[{self.label}]{' ' + self.name if self.name else ''} C={C:<10.4g} "
                  f"closed form, {detail}")
        return []

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """After a fit: keep the Newton factor (kernel mode) for the next fit of a path
        only if ``keep`` (:meth:`~sklearn_safescreen.solvers.newton.NewtonCache.end_fit`:
        a large one only within a walk)."""
        if self.newton is not None:
            self.newton.end_fit(keep, walk)


def _relative_to_objectives(problem: BoxQP, reduced: ReducedBoxQP, gap: float) -> float:
    """An uncertified point's relative gap: the figure ``tol`` is compared with,
    relative to the dual objective :math:`D`, while :math:`|D|` is at least the gap;
    further from the optimum, where that figure loses its meaning (:math:`D` is 0 at
    :math:`\\alpha = 0`, and negative where the start point was worse), relative to
    :math:`\\max(|P|, |D|)`, a figure between 1/2 and 2."""
    dual = float(problem.dual_objective(reduced.alpha, reduced.margins))
    if abs(dual) >= gap:
        return gap / max(abs(dual), TINY)
    return gap / max(abs(dual + gap), abs(dual), TINY)


def _planted_reference(ref: BoxQPReference) -> BoxQPReference:
    """The reference as the rules read it: with its gap taken as 0 under a planted
    ``"reference_gap0"`` fault (the certificate's tests, :mod:`.._utils.faults`)."""
    if faults.active("reference_gap0") is None:
        return ref
    faults.active("reference_gap0").uses += 1
    return replace(ref, gap=0.0, gap_error=0.0)


def _planted_decisions(at_lower: np.ndarray, at_upper: np.ndarray, movable: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """A rule's decisions, with wrong ones added under a planted ``"force"`` fault."""
    fault = faults.active("force")
    if fault is None:
        return at_lower, at_upper
    lo, hi = fault.split(fault.pick(movable & ~at_lower & ~at_upper))
    return at_lower | lo, at_upper | hi


def _internal_grid(critical: float, C: float):
    """The internal path of a cold fit from the critical value to ``C``; at ``C = inf``
    (the hard margin) an unending one, which the walk ends once a solution is certified
    by the hard-margin gap or proves the problem unresolvable
    (:meth:`BoxQPPath.fit`)."""
    if np.isinf(C):
        return (critical * INTERNAL_PATH_RATIO ** k for k in itertools.count(1))
    n_steps = int(np.floor(np.log(C / critical) / np.log(INTERNAL_PATH_RATIO)))
    grid = list(critical * INTERNAL_PATH_RATIO ** np.arange(1, n_steps + 1))
    return [*grid, C] if not grid or grid[-1] < C else grid


class SVMPath(BoxQPPath):
    """A hinge-loss SVM task (:class:`~sklearn_safescreen.problems.box_qp_data.SVMData`)."""

    label = "SafeSVC"
    data: SVMData

    def critical_value(self, max_iter: int) -> float:
        """:math:`C_{\\min}` of the task (closed form, no solve)."""
        return float(self.data.critical_value()[0])

    def screen(self, rule, ref, C):
        d = self.data
        return screen_svm(rule, ref, C, d.sqnorm, d.weights, d.q_matvec, d.q_matvec_error)

    def cold_start(self, C, report, *, tol, max_iter, rng, verbose):
        """The closed form at :math:`C_{\\min}` when it is cheap (linear mode, or a
        kernel whose rows all fit in the cache: it needs :math:`Qc` over every sample)
        and an internal path from there to ``C``; otherwise, and in kernel mode at a
        finite ``C`` far above :math:`C_{\\min}` (:meth:`_far_above_critical`), a solve
        from zero."""
        data = self.data
        n = data.n_samples
        if data.kernel is not None and (data.kernel.cache_capacity < n
                                        or self._far_above_critical(C)):
            if np.isfinite(C):
                return [C]
            # the hard margin: from zero at the largest C whose box float64 resolves
            # (the closed form's product Qc would cost a pass over the kernel, and the
            # internal path from it solves with every sample at its bound), then up
            # the internal path until the hard-margin gap certifies a solution
            top = float(np.max(data.sqnorm, initial=0.0))
            start = 1.0 / (UNIT_ROUNDOFF * float(data.weights.sum()) * max(top, TINY))
            return (start * INTERNAL_PATH_RATIO ** k for k in itertools.count(0))
        c_min, qc = data.critical_value()
        held = int((data.weights > 0).sum())
        if np.isinf(C) and np.isinf(c_min):
            # max(Qc) <= 0: then c'Qc = ||w_c||^2 <= 0, so w_c = 0 with c >= 0, which
            # Gordan's theorem makes a proof that no w separates the samples
            raise ValueError(
                f"{self.label}{self._task_words()} with C=inf (the hard margin): the data "
                "are not separable in feature space (the weighted sum of the samples' "
                "signed feature vectors is 0). Use a finite C.")
        if C <= c_min:
            self.reference = data.closed_form(C, qc)
            return self._closed_form_answer(
                C, 0, held, report, verbose,
                f"C <= C_min={c_min:.4g}: every sample at alpha=C")
        self.reference = data.closed_form(c_min, qc)
        report.add(ScreeningEvent("Cmin", "closed_form", c_min, 0, held, n, task=self.name))
        return _internal_grid(c_min, C)

    def _far_above_critical(self, C: float) -> bool:
        r"""Kernel mode: whether the finite ``C`` is at least ``INTERNAL_PATH_RATIO``
        times an upper bound of :math:`C_{\min}` read from a few samples' kernel rows
        (:math:`C_{\min} = 1/\max_i (Qc)_i \le 1/(Qc)_j` for every sample ``j`` with
        :math:`(Qc)_j > 0`). There the internal path from the closed form would take
        steps, each a solve with every sample at its bound, after a pass over the whole
        kernel to locate :math:`C_{\min}`, where a solve from zero computes only the
        rows it needs (doc/benchmarks.md, "Hard margin")."""
        if not np.isfinite(C):
            return False
        data = self.data
        rows = np.flatnonzero(data.weights > 0)[:_CRITICAL_PROBE_ROWS]
        if rows.size == 0:
            return False
        every = np.arange(data.n_samples)
        s, c = data.sign, data.weights
        qc = s[rows] * (data.kernel.block(rows, every) @ (s * c))
        top = float(qc.max())
        return top > 0.0 and C * top >= INTERNAL_PATH_RATIO


def lad_slope(data: LADData, max_iter: int, rng: np.random.RandomState) -> np.ndarray:
    r""":math:`\gamma` with :math:`\alpha^*_{[C]} = C\gamma` for every :math:`C\le
    C^{\rm LAD}_{\min}` (:func:`~sklearn_safescreen.problems.box_qp_data.lad_critical_C`).

    :math:`\gamma_i = c_i\,\mathrm{sign}(y_i)` where :math:`y_i\ne0`. The samples with
    :math:`y_i = 0` solve :math:`\min_{\beta\in[-c,c]}\tfrac12\beta^\top G_{ZZ}\beta +
    \beta^\top G_{Z\bar Z}\gamma_{\bar Z}` (the problem at ``C = 1`` with the others held:
    scaling ``C`` scales its solution), a small box QP solved to a tight tolerance; its
    residual gap is part of the reference's certified gap, so safety never depends on it.
    """
    y, c = data.y, data.weights
    gamma = c * np.sign(y)
    zero = (y == 0) & (c > 0)
    if zero.any():
        res = solve_box_qp(data.problem(1.0), gamma, ~zero, tol=1e-12, max_iter=max_iter,
                           random_state=rng)
        gamma = res.alpha
    return gamma


def lad_critical_value(data: LADData, max_iter: int, rng: np.random.RandomState
                       ) -> tuple[float, np.ndarray, np.ndarray]:
    r""":math:`C^{\rm LAD}_{\min}`, the slope :math:`\gamma` and :math:`G\gamma`."""
    slope = lad_slope(data, max_iter, rng)
    pred = data.q_matvec(slope)
    return _lad_critical_C(pred, data.y, data.weights), slope, pred


class LADPath(BoxQPPath):
    """The LAD problem (:class:`~sklearn_safescreen.problems.box_qp_data.LADData`)."""

    label = "SafeLAD"
    data: LADData

    def critical_value(self, max_iter: int) -> float:
        """:math:`C^{\\rm LAD}_{\\min}`: one product with :math:`G` after the slope's
        least-absolute-deviation fit (at most ``max_iter`` iterations, a fixed seed)."""
        return float(lad_critical_value(self.data, max_iter, np.random.RandomState(0))[0])

    def screen(self, rule, ref, C):
        d = self.data
        return screen_lad(rule, ref, C, d.sqnorm, d.y, d.weights)

    def cold_start(self, C, report, *, tol, max_iter, rng, verbose):
        """Linear kernel: the solution at :math:`C^{\\rm LAD}_{\\min}` (linear in ``C``)
        and an internal path from there to ``C``. In kernel mode :math:`G\\gamma` would
        cost a full kernel pass, so the solve starts from zero at ``C``."""
        data = self.data
        if data.kernel is not None:
            return [C]
        c_min, slope, pred = lad_critical_value(data, max_iter, rng)
        if C <= c_min:
            self.reference, rel_gap = data.closed_form(C, slope, pred)
            if rel_gap > tol:  # a zero target's sub-QP left a gap above tol: solve at C
                return [C]
            held = data.weights > 0
            n_lo = int((held & (self.reference.alpha <= -C * data.weights)).sum())
            n_hi = int((held & (self.reference.alpha >= C * data.weights)).sum())
            return self._closed_form_answer(
                C, n_lo, n_hi, report, verbose,
                f"C <= C_min={c_min:.4g}: R={n_lo} L={n_hi} at alpha=-/+C, "
                f"rel_gap={rel_gap:.2e}")
        self.reference, _ = data.closed_form(c_min, slope, pred)
        return _internal_grid(c_min, C)
