"""Scikit-learn estimators whose solvers use safe screening."""

from ._base import ScreeningRepairWarning
from ._report import ScreeningEvent, ScreeningReport
from .svm import SafeSVC

__version__ = "0.1.0"

__all__ = ["SafeSVC", "ScreeningEvent", "ScreeningRepairWarning", "ScreeningReport"]
