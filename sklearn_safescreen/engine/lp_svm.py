r"""The path step of the LP-SVM (the L1-penalised hinge SVM, a linear program).

An :class:`LPSVMPath` is one binary problem walked along a path of :math:`\lambda`: its
data and its last solution, which is the next step's screening reference and start
point. One step at :math:`\lambda`:

1. **closed form** at or above :math:`\lambda_{\max}`: :math:`w=0`, :math:`a=s`;
2. **screening** (one event, before the solve): the polytope rules of
   :mod:`~sklearn_safescreen.screening.lp_svm` from the previous solution (any primal
   point and any dual point made feasible, so an inexact reference is safe) fix features
   at 0 and samples at :math:`a_i=0` or at the box. A kind of rule is run only while it
   can pay on this path: once an event fixes less than ``MIN_PAYING`` of its
   variables, it is skipped at the smaller values that follow (they prove less along a
   decreasing path; skipping fixes nothing, so it is always safe); a larger value than
   the last one runs it again;
3. **solve** the reduced LP by column and row generation
   (:class:`~sklearn_safescreen.solvers.lp_highs.ColumnRowGeneration`), started from the
   previous solution's support and margin samples;
4. **certify and repair** on the full problem (:func:`~.certify.certified_solve`).

The certificate's proof that a decision was wrong. A reduced LP's optimum is not always
a full optimum even when every decision is right (an LP can have many optima), so a
fixed variable that violates its condition at the reduced answer proves nothing; it is
released without a warning (the loop's "loose" variables). The proof compares optimal
values instead. Holding features at 0 can only raise the optimum and fixing dual
variables can only lower it, so with the decisions :math:`F` (features) and :math:`S`
(samples) of the event,

.. math::

    V(S)\le V(F\cup S)\le V(F),\qquad V(S)\le P^*\le V(F),

with equality :math:`V(F)=P^*` when the feature decisions are right and :math:`V(S)=P^*`
when the sample decisions are. At the first reduced answer :math:`(w_r,a_r)` the engine
records a lower bound of :math:`V(F)` (the dual point :math:`a_r` scaled into the free
features' constraints) and an upper bound of :math:`V(S)` (the objective at :math:`w_r`
of the problem with the samples' losses fixed); each later certificate gives
:math:`D\le P^*\le P`. A lower bound of :math:`V(F)` above :math:`P` proves a feature
decision wrong; an upper bound of :math:`V(S)` below :math:`D` proves a sample decision
wrong. Either is a :class:`~sklearn_safescreen.ScreeningRepairWarning`, and every
decision of that kind is released (both bounds carry their rounding errors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._utils import faults
from ..problems.lp_svm import LPSVMData, U
from ..screening.lp_svm import LP_SVM_RULES, LPScreen, screen_lp_svm
from ..solvers.lp_highs import ColumnRowGeneration, new_model
from ..solvers.lp_warm import WarmRestrictedLP
from .certify import Certificate, certified_solve
from .policy import EveryStep, skipped_event
from .protocol import StepOutcome, StepSettings
from .report import ScreeningEvent, ScreeningReport

#: A kind of rule (features, samples) keeps running along a decreasing path while its
#: last event fixed at least this fraction of its variables: an event costs about two
#: passes over the sorted data, which a handful of fixed variables does not repay.
MIN_PAYING = 0.01
#: The kinds of variables each screening mode fixes.
_KINDS = {"simultaneous": {"features", "samples"}, "features": {"features"},
          "samples": {"samples"}}


@dataclass
class LPSolution:
    """A certified LP-SVM solution: ``w`` the primal (exact zeros off the support),
    ``alpha`` the dual (:math:`\\alpha=y\\circ a`, feasible for the full problem)."""

    w: np.ndarray
    alpha: np.ndarray


@dataclass
class _LPStep:
    """What one of the two kinds of step (closed form, screened solve) leaves for
    :meth:`LPSVMPath.fit`: the solution and its certificate, the variables still fixed
    by screening at the end, the step's events, the proven repairs and whether the
    answer comes from the unscreened fall-back."""

    w: np.ndarray
    alpha: np.ndarray
    gap: float
    rel_gap: float
    n_iter: int
    converged: bool
    screened_features: int = 0
    at_zero: int = 0
    at_box: int = 0
    events: list[ScreeningEvent] = field(default_factory=list)
    n_repairs: int = 0
    unscreened: bool = False


class _ReducedLPSVM:
    """The certify loop's view of one step: the column-and-row generation on the problem
    reduced by the step's screening event, the event's decisions, and the bounds that
    can prove one of them wrong (see the module)."""

    def __init__(self, data: LPSVMData, lam: float, rule: str | None, screen: LPScreen,
                 w0: np.ndarray, alpha0: np.ndarray, events: list, name: str,
                 value: float, model: WarmRestrictedLP | None):
        self.data, self.lam, self.rule = data, lam, rule
        self.events, self.name, self.value = events, name, value
        self.decided_features = screen.features.copy()
        self.decided_samples = screen.at_zero | screen.at_box
        self.task = ColumnRowGeneration(data, lam, fixed_features=screen.features,
                                        at_zero=screen.at_zero, at_box=screen.at_box,
                                        w_start=w0, alpha_start=alpha0, model=model)
        self.bounds: tuple[float, float] | None = None
        self.proven = [False, False]
        self.alpha_full = None

    # -- the certify loop's interface
    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        start = time.perf_counter()
        task = self.task
        if not task.stale:
            # the current LP is solved: only a tighter HiGHS can move the answer
            if not task.tighten():
                return 0, True
        before = task.n_lp
        _, converged = task.solve(tol, max_iter)
        self.events.append(ScreeningEvent(self.rule or "none", "solve", self.value, 0, 0,
                                          self.data.n_features, 0.0,
                                          time.perf_counter() - start, self.name,
                                          "features"))
        return task.n_lp - before, converged

    def certify(self) -> Certificate:
        data, task = self.data, self.task
        check = task.certify()
        cert = check.certificate
        self.alpha_full = cert.dual_point.alpha
        if self.bounds is None:  # the first reduced answer, every decision in place
            free = ~self.decided_features
            self.bounds = (
                data.dual_features_fixed(self.lam, data.y * task.a, free),
                data.primal_samples_fixed(self.lam, task.w, task.at_zero, task.at_box))
        lower_f, upper_s = self.bounds
        wrong_f = np.zeros(data.n_features, dtype=bool)
        wrong_s = np.zeros(data.n_samples, dtype=bool)
        if (not self.proven[0] and self.decided_features.any()
                and lower_f > cert.primal * (1.0 + 8 * U)):
            wrong_f = self.decided_features.copy()
            self.proven[0] = True
        if (not self.proven[1] and self.decided_samples.any()
                and upper_s < cert.dual * (1.0 - 8 * U)):
            wrong_s = self.decided_samples.copy()
            self.proven[1] = True
        return Certificate(cert.gap, cert.rel_gap, (wrong_f, wrong_s),
                           int(wrong_f.sum() + wrong_s.sum()),
                           (check.features, check.samples), check.n_violations)

    def release(self, which, proven: bool) -> None:
        features, samples = which
        self.task.release(features, samples)
        if proven:
            for kind, count, total in (("features", features.sum(), self.data.n_features),
                                       ("samples", samples.sum(), self.data.n_samples)):
                self.events.append(ScreeningEvent(self.rule or "none", "repair",
                                                  self.value, -int(count), 0, total,
                                                  task=self.name, kind=kind))

    def release_all(self) -> None:
        task = self.task
        self.release((task.fixed_features.copy(), ~task.free_samples), proven=False)

    def stop_dynamic_screening(self) -> None:
        """Nothing to stop: the LP-SVM screens once per step, before the solve."""

    @property
    def rules(self) -> str:
        return f"the LP-SVM polytope rules ({self.rule})"


def _plant_decisions(screen: LPScreen) -> None:
    """Under a planted ``"force"`` fault (:mod:`.._utils.faults`), wrong decisions added
    to the event: features fixed at 0 and samples fixed at :math:`a_i=0`, among those
    the rules left undecided."""
    fault = faults.active("force")
    if fault is None:
        return
    screen.features |= fault.pick(~screen.features)
    screen.at_zero |= fault.pick(~screen.at_zero & ~screen.at_box)


class LPSVMPath:
    """One LP-SVM problem walked along a path of :math:`\\lambda` (see the module).

    Parameters
    ----------
    data : LPSVMData
        The problem (an intercept is a penalised constant column of its ``X``).
    name : str, default=""
        Labels the one-vs-rest task in reports.

    Attributes
    ----------
    w, alpha : ndarray or None
        The last solution (primal, and dual :math:`\\alpha=y\\circ a`): the next step's
        reference and start.
    lam : float or None
        The value it solves.
    lam_max : float
        :math:`\\lambda_{\\max}` (at and above it, :math:`w^*=0`).
    """

    def __init__(self, data: LPSVMData, name: str = ""):
        self.data, self.name = data, name
        self.lam_max = data.lambda_max()
        self.w: np.ndarray | None = None
        self.alpha: np.ndarray | None = None
        self.lam: float | None = None
        self._skipped: set[str] = set()
        self.policy = EveryStep()
        #: the live HiGHS model of the restricted LPs, kept from step to step (None
        #: before the first solve, or without HiGHS bindings in scipy)
        self.model: WarmRestrictedLP | None = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["model"] = None  # a HiGHS instance does not pickle; it is rebuilt
        return state

    def critical_value(self, max_iter: int) -> float:
        """:math:`\\lambda_{\\max}`: at and above it :math:`w^*=0`."""
        return float(self.lam_max)

    def new_report(self) -> ScreeningReport:
        return ScreeningReport(variables={"features": self.data.n_features,
                                          "samples": self.data.n_samples})

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """The HiGHS model is kept only for a warm start (it is the size of the largest
        restricted LP solved)."""
        if not keep:
            self.model = None

    def fit(self, lam: float, settings: StepSettings, report: ScreeningReport
            ) -> StepOutcome:
        """Solve at ``lam`` (the penalty of :math:`\\|w\\|_1`, the loss averaged over
        the samples) from the last solution, certified on the full problem (the engine
        protocol, :mod:`.protocol`). ``settings.rule`` is one of
        ``"simultaneous"``, ``"features"``, ``"samples"`` or None (which variables the
        screening event may fix); ``settings.max_iter`` counts restricted LPs per step,
        repairs included; ``settings.tol`` is the target of the full problem's certified
        relative duality gap. The outcome's ``reference`` is the :class:`LPSolution`."""
        rule = settings.rule
        if rule is not None and rule not in LP_SVM_RULES:
            raise ValueError(f"unknown screening rule {rule!r}; one of {LP_SVM_RULES}")
        value = lam if settings.shown_value is None else settings.shown_value
        describe = settings.describe or f"LP-SVM at lambda={lam:.6g}"
        data = self.data
        n, d = data.n_samples, data.n_features
        closed = lam >= self.lam_max
        if closed:
            outcome = self._closed_form(lam, value)
        else:
            decision = self.policy.decide(settings.mode) if settings.screens else None
            if decision is not None and not decision.screen:
                report.add(skipped_event(rule, value, d, decision.reason, self.name,
                                         "features"))
                if settings.verbose:
                    print(f"[{describe}] screening skipped: {decision.reason}")
                rule = None
            outcome = self._solve(lam, rule, settings.tol, settings.max_iter, describe,
                                  value)
        for event in outcome.events:
            report.add(event)
        report.set_final(outcome.screened_features, 0, "features", closed_form=closed)
        report.set_final(outcome.at_zero, outcome.at_box, "samples", closed_form=closed)
        if settings.verbose > 1:
            print(f"[LPSVMPath {self.name}] lambda={lam:.4g} rel_gap={outcome.rel_gap:.2e} "
                  f"LPs={outcome.n_iter} support={np.count_nonzero(outcome.w)}/{d} "
                  f"screened features={outcome.screened_features} samples="
                  f"{outcome.at_zero}+{outcome.at_box}/{n}", flush=True)
        return StepOutcome(LPSolution(outcome.w, outcome.alpha), outcome.gap,
                           outcome.rel_gap, outcome.n_iter, outcome.converged,
                           n_repairs=outcome.n_repairs, unscreened=outcome.unscreened)

    # -- the two kinds of step
    def _closed_form(self, lam: float, value: float) -> _LPStep:
        data = self.data
        n, d = data.n_samples, data.n_features
        w = np.zeros(d)
        alpha = data.alpha_at_zero()
        cert = data.certificate(lam, w, alpha)
        self.w, self.alpha, self.lam = w, cert.dual_point.alpha, lam
        events = [ScreeningEvent("closed_form", "closed_form", value, d, 0, d,
                                 task=self.name, kind="features"),
                  ScreeningEvent("closed_form", "closed_form", value, 0, n, n,
                                 task=self.name, kind="samples")]
        return _LPStep(w, self.alpha, cert.gap, cert.rel_gap, 0, True, d, 0, n,
                             events)

    def _screen(self, lam: float, rule: str | None, w0, alpha0, value: float,
                events: list) -> LPScreen:
        data = self.data
        n, d = data.n_samples, data.n_features
        if self.lam is not None and lam > self.lam:
            self._skipped.clear()  # a larger value: the rules may pay again
        kinds = _KINDS.get(rule, set()) - self._skipped
        screen = LPScreen(np.zeros(d, bool), np.zeros(n, bool), np.zeros(n, bool), 0)
        if kinds:
            mode = "simultaneous" if len(kinds) == 2 else next(iter(kinds))
            start = time.perf_counter()
            screen = screen_lp_svm(data, lam, w0, alpha0, mode=mode)
            elapsed = time.perf_counter() - start
            if "features" in kinds and screen.n_features < MIN_PAYING * d:
                self._skipped.add("features")
            if "samples" in kinds and screen.n_samples < MIN_PAYING * n:
                self._skipped.add("samples")
            events.append(ScreeningEvent(rule, "reference", value, screen.n_features, 0,
                                         d, elapsed, 0.0, self.name, "features"))
            events.append(ScreeningEvent(rule, "reference", value,
                                         int(screen.at_zero.sum()),
                                         int(screen.at_box.sum()), n, 0.0, 0.0, self.name,
                                         "samples"))
        if rule is not None:
            _plant_decisions(screen)
        return screen

    def _solve(self, lam, rule, tol, max_iter, describe, value) -> _LPStep:
        data = self.data
        if self.w is None:  # a cold start: the closed form at lambda_max is feasible
            w0, alpha0 = np.zeros(data.n_features), data.alpha_at_zero()
        else:
            w0, alpha0 = self.w, self.alpha
        events: list[ScreeningEvent] = []
        screen = self._screen(lam, rule, w0, alpha0, value, events)
        if self.model is None:
            self.model = new_model(data)
        step = _ReducedLPSVM(data, lam, rule, screen, w0, alpha0, events, self.name,
                             value, self.model)
        result = certified_solve(step, tol=tol, max_iter=max_iter, describe=describe)
        task = step.task
        self.w, self.alpha, self.lam = task.w.copy(), step.alpha_full, lam
        cert = result.certificate
        return _LPStep(self.w, self.alpha, cert.gap, cert.rel_gap, result.n_iter,
                             result.converged, int(task.fixed_features.sum()),
                             int(task.at_zero.sum()), int(task.at_box.sum()), events,
                             result.n_repairs, result.unscreened)
