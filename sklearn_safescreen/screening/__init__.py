"""Safe screening rules: pure functions of a reference and a target, no solver calls."""

from .balls import ScreeningResult
from .svm import (
    SVM_RULES,
    SVMReference,
    ball_test_1,
    ball_test_2,
    dvi,
    intersection_test,
    screen_svm,
)

__all__ = [
    "SVM_RULES",
    "SVMReference",
    "ScreeningResult",
    "ball_test_1",
    "ball_test_2",
    "dvi",
    "intersection_test",
    "screen_svm",
]
