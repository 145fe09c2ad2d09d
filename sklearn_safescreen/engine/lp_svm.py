r"""The path step of the LP-SVM (SafeLPSVC).

An :class:`LPSVMPath` is one binary problem walked along a path of :math:`\lambda`: its
data and its last solution, the next step's screening reference and start point. One
step at :math:`\lambda` (Shibagaki et al. 2016, section 5):

1. **closed form** at or above :math:`\lambda_{\max}`: :math:`w = 0`, :math:`a = s`;
2. **reference**: the previous solution (a cold fit: the closed form at
   :math:`\lambda_{\max}`); any primal point and any dual point made feasible give the
   polytopes of the rules, which fix features at zero and samples at :math:`a_i = 0` or
   at the box, alternated to their fixpoint
   (:func:`~sklearn_safescreen.screening.lp_svm.screen_lp_svm`);
3. **solve** the reduced linear program by column and row generation with HiGHS
   (:class:`~sklearn_safescreen.solvers.lp_highs.ColumnRowGeneration`), starting from
   the previous support and margin samples;
4. **certify and repair** on the full problem
   (:func:`~.certify.certified_solve`): the full relative gap with a dual point made
   feasible; a fixed sample whose opposite end the rules prove from the certified pair
   (a region that contains every optimum of the full problem) is a proven repair;
   fixed variables that violate their optimality condition at the solver's point and
   keep the gap open are released without such a proof (an LP may have several
   optima, so one point cannot prove a feature decision wrong).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._utils import faults
from ..problems.lp_svm import LPSVMData
from ..screening.lp_svm import LPScreen, screen_lp_svm
from ..solvers.lp_highs import ColumnRowGeneration
from .certify import Certificate, certified_solve
from .cost import CostModel, skipped_event
from .protocol import StepOutcome, StepSettings
from .report import ScreeningEvent, ScreeningReport


@dataclass
class LPSolution:
    """A certified primal point and its feasible dual point on the full problem
    (:math:`\\alpha = y\\circ a`)."""

    w: np.ndarray
    alpha: np.ndarray


class _ReducedLPSVM:
    """The certify loop's view of one step: the column-and-row generation on the
    problem the rules left, and the report."""

    def __init__(self, data: LPSVMData, lam: float, screen: LPScreen | None,
                 w0: np.ndarray, alpha0: np.ndarray, rule: str | None,
                 report: ScreeningReport, name: str, value: float):
        self.data, self.lam, self.rule = data, lam, rule
        self.report, self.name, self.value = report, name, value
        self.crg = ColumnRowGeneration(
            data, lam,
            fixed_features=None if screen is None else screen.features,
            at_zero=None if screen is None else screen.at_zero,
            at_box=None if screen is None else screen.at_box,
            w_start=w0, alpha_start=alpha0)
        self._inner_tol: float | None = None
        self.certificate = None

    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        # the reduced optimum is exact to HiGHS's tolerances: a tighter inner tolerance
        # from the certify loop tightens those
        if self._inner_tol is not None and tol < self._inner_tol:
            self.crg.tighten()
        self._inner_tol = tol
        return self.crg.solve(tol, max_iter)

    def certify(self) -> Certificate:
        data, crg = self.data, self.crg
        check = crg.certify()
        cert = check.certificate
        self.certificate = cert
        wrong_samples = np.zeros(data.n_samples, dtype=bool)
        if check.samples.any():
            # the rules from the certified pair: their regions contain every optimum of
            # the full problem, so a fixed sample proven at the other end was wrong
            proof = screen_lp_svm(data, self.lam, crg.w, cert.dual_point.alpha,
                                  mode="samples")
            wrong_samples = (crg.at_zero & proof.at_box) | (crg.at_box & proof.at_zero)
        wrong = (np.zeros(data.n_features, dtype=bool), wrong_samples)
        loose = (check.features, check.samples & ~wrong_samples)
        return Certificate(cert.gap, cert.rel_gap, wrong, int(wrong_samples.sum()), loose,
                           int(loose[0].sum() + loose[1].sum()))

    def release(self, which, proven: bool) -> None:
        features, samples = which
        self.crg.release(features, samples)
        if proven:
            d, n = self.data.n_features, self.data.n_samples
            self.report.add(ScreeningEvent(self.rule or "none", "repair", self.value,
                                           -int(features.sum()), 0, d, task=self.name,
                                           kind="features"))
            self.report.add(ScreeningEvent(self.rule or "none", "repair", self.value,
                                           -int(samples.sum()), 0, n, task=self.name,
                                           kind="samples"))

    def stop_dynamic_screening(self) -> None:
        """Nothing to stop: the LP-SVM's rules run once per step, from the reference."""

    def release_all(self) -> None:
        crg = self.crg
        self.crg.release(crg.fixed_features.copy(), ~crg.free_samples)

    @property
    def rules(self) -> str:
        return f"the LP-SVM rules ({self.rule})"


def _plant_decisions(screen: LPScreen, data: LPSVMData) -> LPScreen:
    """Under a planted ``"force"`` fault (the certificate's tests,
    :mod:`.._utils.faults`), wrong decisions added to a reference event: features fixed
    at 0 and samples fixed at a random end, among those the rules left undecided."""
    fault = faults.active("force")
    if fault is None:
        return screen
    features = screen.features | fault.pick(~screen.features)
    lo, hi = fault.split(fault.pick(~screen.at_zero & ~screen.at_box & (data.s > 0)))
    return LPScreen(features, screen.at_zero | lo, (screen.at_box | hi) & ~lo,
                    screen.rounds)


class LPSVMPath:
    """One LP-SVM problem walked along a path of :math:`\\lambda` (see the module);
    ``name`` labels the one-vs-rest task in reports."""

    def __init__(self, data: LPSVMData, name: str = ""):
        self.data, self.name = data, name
        self.lam_max = data.lambda_max()
        self.solution: LPSolution | None = None  # the last one: the next reference
        self.cost = CostModel()

    def new_report(self) -> ScreeningReport:
        return ScreeningReport(variables={"features": self.data.n_features,
                                          "samples": self.data.n_samples})

    def end_fit(self, keep: bool) -> None:
        """Nothing beyond the last solution is kept between fits."""

    def _closed_form(self) -> LPSolution:
        """:math:`w = 0` with :math:`a = s`, the optimum at and above
        :math:`\\lambda_{\\max}`."""
        data = self.data
        return LPSolution(np.zeros(data.n_features), data.y * data.s)

    def fit(self, lam: float, settings: StepSettings, report: ScreeningReport
            ) -> StepOutcome:
        """Solve at ``lam`` from the last solution (or the closed form), certified on
        the full problem (the engine protocol, :mod:`.protocol`)."""
        data = self.data
        n, d = data.n_samples, data.n_features
        value = lam if settings.shown_value is None else settings.shown_value
        if lam >= self.lam_max:
            self.solution = self._closed_form()
            report.add(ScreeningEvent("closed_form", "closed_form", value, d, 0, d,
                                      task=self.name, kind="features"))
            report.set_final(d, 0, "features", closed_form=True)
            report.set_final(0, int((data.s > 0).sum()), "samples", closed_form=True)
            return StepOutcome(self.solution, 0.0, 0.0, 0, True)
        warm = self.solution is not None
        ref = self.solution if self.solution is not None else self._closed_form()
        screen, rule = None, settings.rule
        decision = self.cost.decide() if rule is not None else None
        if decision is not None and not decision.screen:
            report.add(skipped_event(rule, value, d, decision.reason, self.name,
                                     "features"))
            if settings.verbose:
                print(f"[{settings.describe}] screening skipped: {decision.reason}")
            rule = None
        if rule is not None:
            start = time.perf_counter()
            screen = _plant_decisions(
                screen_lp_svm(data, lam, ref.w, ref.alpha, mode=rule), data)
            elapsed = time.perf_counter() - start
            report.add(ScreeningEvent(settings.rule, "reference", value,
                                      screen.n_features, 0, d, elapsed, task=self.name,
                                      kind="features"))
            report.add(ScreeningEvent(settings.rule, "reference", value,
                                      int(screen.at_zero.sum()), int(screen.at_box.sum()),
                                      n, task=self.name, kind="samples"))
        task = _ReducedLPSVM(data, lam, screen, ref.w, ref.alpha, rule, report, self.name,
                             value)
        start = time.perf_counter()
        result = certified_solve(task, tol=settings.tol, max_iter=settings.max_iter,
                                 describe=settings.describe)
        if decision is not None:
            self.cost.record(result.n_iter, warm)
        crg, cert = task.crg, task.certificate
        report.add(ScreeningEvent(settings.rule or "none", "solve", value, 0, 0, n, 0.0,
                                  time.perf_counter() - start, task=self.name))
        self.solution = LPSolution(crg.w.copy(), cert.dual_point.alpha.copy())
        report.set_final(int(crg.fixed_features.sum()), 0, "features")
        report.set_final(int(crg.at_zero.sum()), int(crg.at_box.sum()), "samples")
        if settings.verbose > 1:
            print(f"[SafeLPSVC]{' ' + self.name if self.name else ''} alpha={value:<10.4g} "
                  f"features fixed={int(crg.fixed_features.sum())} samples fixed="
                  f"{int((~crg.free_samples).sum())} rel_gap={cert.rel_gap:.2e} "
                  f"LPs={crg.n_lp}")
        return StepOutcome(self.solution, cert.gap, cert.rel_gap, result.n_iter,
                           result.converged)
