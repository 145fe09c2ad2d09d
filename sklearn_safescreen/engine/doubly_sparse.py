r"""The path step of the doubly sparse models (SafeDoublySparseSVC, SafeDoublySparseSVR).

A :class:`DoublySparsePath` is one binary (or regression) problem walked along a path
of :math:`\lambda`: its data and its last solution, which is the next step's screening
reference and start point. One step at :math:`\lambda` (Shibagaki et al. 2016):

1. **closed form** at or above :math:`\lambda_{\max}`: :math:`w = 0`;
2. **reference**: the previous solution (a cold fit: the closed form at
   :math:`\lambda_{\max}`) is a feasible pair of the new problem; its duality gap at
   :math:`\lambda` gives the balls, and simultaneous screening fixes features at zero
   and samples at :math:`\alpha_i = 0` or at the end of their box;
3. **solve** the reduced problem by coordinate descent
   (:mod:`~sklearn_safescreen.solvers.doubly_sparse_cd`) with **dynamic screening**:
   each time the reduced gap has fallen tenfold since the last event, the rules run
   again at the current pair and the problem shrinks further, until screened and
   kept variables cover almost everything;
4. **certify and repair** on the full problem
   (:func:`~.certify.certified_solve`): the full gap at :math:`(w, \alpha(w))`, every
   fixed variable checked against the full problem's balls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.doubly_sparse import (
    DoublySparseData,
)
from .certify import certified_solve
from .doubly_sparse_reduced import ReducedDoublySparse
from .policy import EveryStep, skipped_event
from .protocol import StepOutcome, StepSettings
from .report import ScreeningEvent, ScreeningReport


@dataclass(kw_only=True)
class DoublySparseSettings(StepSettings):
    """The step settings, with the L2 weight: :math:`\\lambda\\beta` multiplies the
    halved squared norm (the engine value :math:`\\lambda` the L1 norm)."""

    beta: float


@dataclass
class DoublySparseSolution:
    """A certified primal point and its dual point on the full problem."""

    w: np.ndarray
    alpha: np.ndarray


class DoublySparsePath:
    """One doubly sparse problem walked along a path of :math:`\\lambda` (see the
    module); ``name`` labels the one-vs-rest task in reports."""

    def __init__(self, data: DoublySparseData, name: str = ""):
        self.data, self.name = data, name
        self.lam_max = data.lambda_max()
        self.w: np.ndarray | None = None  # the last solution (the next reference)
        self.lam: float | None = None
        self.policy = EveryStep()

    def critical_value(self, max_iter: int) -> float:
        """:math:`\\lambda_{\\max}`: at and above it the solution is 0."""
        return float(self.lam_max)

    def new_report(self) -> ScreeningReport:
        return ScreeningReport(variables={"features": self.data.n_features,
                                          "samples": self.data.n_samples})

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """Nothing beyond the last solution is kept between fits."""

    def fit(self, lam: float, settings: DoublySparseSettings, report: ScreeningReport
            ) -> StepOutcome:
        """Solve at ``lam`` (L1 weight; ``lam * settings.beta`` is the L2 weight) from
        the last solution, certified on the full problem (the engine protocol,
        :mod:`.protocol`). The last solution is a feasible reference whatever ``lam``
        and ``beta``."""
        value = lam if settings.shown_value is None else settings.shown_value
        beta, rule = settings.beta, settings.rule
        data = self.data
        n, d = data.n_samples, data.n_features
        if lam >= self.lam_max:
            w = np.zeros(d)
            alpha = data.dual_point(np.zeros(n))
            self.w, self.lam = w, lam
            report.add(ScreeningEvent("closed_form", "closed_form", value, d, 0, d,
                                      task=self.name, kind="features"))
            report.set_final(d, 0, "features", closed_form=True)
            # alpha(0) is 0, strictly inside the box (smoothing > 1, or a regression
            # target within eps + smoothing of 0), or at its end
            at_zero = int((alpha == 0).sum())
            at_box = int((np.abs(alpha) == data.weights).sum())
            report.set_final(at_zero, at_box, "samples", closed_form=True)
            return StepOutcome(DoublySparseSolution(w, alpha), 0.0, 0.0, 0, True)
        w0 = np.zeros(d) if self.w is None else self.w
        priority = settings.rng().permutation(d)
        decision = self.policy.decide(settings.mode) if settings.screens else None
        if decision is not None and not decision.screen:
            report.add(skipped_event(rule, value, d, decision.reason, self.name,
                                     "features"))
            if settings.verbose:
                print(f"[{settings.describe}] screening skipped: {decision.reason}")
            rule = None
        task = ReducedDoublySparse(data, lam, beta, rule, w0, report, priority,
                                    self.name, value)
        result = certified_solve(task, tol=settings.tol, max_iter=settings.max_iter,
                                 describe=settings.describe)
        self.w, self.lam = task.w, lam
        report.set_final(int(task.features.sum()), 0, "features")
        report.set_final(int(task.at_zero.sum()), int(task.at_box.sum()), "samples")
        cert = result.certificate
        return StepOutcome(DoublySparseSolution(task.w, task.alpha_full), cert.gap,
                           cert.rel_gap, result.n_iter, result.converged,
                           n_repairs=result.n_repairs, unscreened=result.unscreened)
