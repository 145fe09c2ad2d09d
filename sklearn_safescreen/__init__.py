"""Scikit-learn estimators whose solvers use safe screening."""

from ._utils.warnings import ScreeningRepairWarning
from .engine.report import ScreeningEvent, ScreeningReport
from .lad import SafeLAD
from .metric_learning import SafeMetricLearner
from .model_selection import RegularizationPathCV
from .svm import SafeSVC

__version__ = "0.1.0"

__all__ = [
    "RegularizationPathCV",
    "SafeLAD",
    "SafeMetricLearner",
    "SafeSVC",
    "ScreeningEvent",
    "ScreeningRepairWarning",
    "ScreeningReport",
]
