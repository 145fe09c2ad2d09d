"""What a fit of the metric learner leaves and says: its fitted attributes, the warning
of a fit that stopped at ``max_iter`` (with what to change) and its ``verbose`` summary
line.

:func:`set_fitted_metric` is the fit's last step
(:meth:`~sklearn_safescreen.base.SafeEstimator._set_model`);
:class:`MetricReportMixin` gives the estimator the skeleton's warning and summary
hooks.
"""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

from ._metric_inputs import AUTO_ALPHA_FRACTION
from ._utils.warnings import warn_user
from .base import FitInputs, PathState
from .engine.protocol import StepOutcome
from .engine.report import ScreeningReport


def set_fitted_metric(estimator, inputs: FitInputs, state: PathState,
                      outcomes: list[StepOutcome]) -> None:
    """Set the fitted attributes of a metric learner from its one path's outcome:
    ``n_triplets_``, ``k_``, ``alpha_``, ``critical_alpha_``, the model (``components_``,
    through :meth:`~sklearn_safescreen._metric_learn_api.MahalanobisMixin._store_model`),
    ``n_iter_``, ``dual_gap_`` and ``loss_``."""
    (path,), (outcome,) = state.paths, outcomes
    estimator.n_triplets_ = path.data.n_triplets
    estimator.k_ = inputs.data[2]
    estimator.alpha_ = estimator._step_value(state)
    estimator.critical_alpha_ = estimator._critical_from(state)
    estimator._store_model(outcome.reference.M, estimator._diagonal)
    estimator.n_iter_ = int(outcome.n_iter)
    estimator.dual_gap_ = float(outcome.gap)
    estimator.loss_ = path.loss()


def convergence_message(alpha: float, critical: float, auto: bool,
                        outcome: StepOutcome, tol: float, max_iter: int) -> str:
    """What a fit that stopped at ``max_iter`` reports, and what to change: the fit
    needs fewer iterations the closer ``alpha`` is to ``critical_alpha_``."""
    given = "alpha='auto'" if auto else f"alpha={alpha:.6g}"
    advice = (f"raise alpha towards critical_alpha_ (alpha='auto' is "
              f"{AUTO_ALPHA_FRACTION:g} x critical_alpha_ = "
              f"{AUTO_ALPHA_FRACTION * critical:.3g})"
              if alpha < AUTO_ALPHA_FRACTION * critical else "raise alpha")
    return (f"SafeMetricLearner({given}) stopped at max_iter={max_iter} with relative "
            f"duality gap {outcome.rel_gap:.3g} > tol={tol:g}. alpha={alpha:.3g} is "
            f"{alpha / critical:.2g} x critical_alpha_={critical:.3g}, and the further "
            f"below critical_alpha_, the more iterations a fit needs: {advice}, or "
            "increase max_iter (or tol). RegularizationPathCV chooses alpha by "
            "cross-validation along a path from critical_alpha_.")


class MetricReportMixin:
    """The metric learner's warning when a fit stops at ``max_iter`` (it names
    ``alpha`` relative to ``critical_alpha_``, which decides the iterations a fit
    needs) and its ``verbose`` summary line of a fit."""

    def _warn_if_not_converged(self, outcomes: list[StepOutcome]) -> None:
        (outcome,) = outcomes
        if not outcome.converged:
            auto = isinstance(self.alpha, str)  # "auto"
            warn_user(convergence_message(self._step_value(self._path),
                                          self._critical_from(self._path), auto,
                                          outcome, self.tol, self.max_iter),
                      ConvergenceWarning)

    def _summary(self, state: PathState, outcomes: list[StepOutcome],
                 report: ScreeningReport, elapsed: float) -> str:
        (outcome,) = outcomes
        return (f"alpha={self.alpha_:<10.4g} done: screened {report.n_screened}/"
                f"{self.n_triplets_} ({report.screening_rate:.1%}) iter={outcome.n_iter} "
                f"absolute dual_gap_={outcome.gap:.3e} "
                f"(relative {outcome.rel_gap:.3e}) time={elapsed:.3f}s")
