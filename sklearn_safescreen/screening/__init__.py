"""Safe screening rules: pure functions of a reference and a target, no solver calls."""

from .balls import ScreeningResult
from .lad import LAD_RULES, dvi_lad, screen_lad
from .svm import (
    SVM_RULES,
    ball_test_1,
    ball_test_2,
    dvi,
    intersection_test,
    screen_svm,
)

__all__ = [
    "LAD_RULES",
    "SVM_RULES",
    "ScreeningResult",
    "ball_test_1",
    "ball_test_2",
    "dvi",
    "dvi_lad",
    "intersection_test",
    "screen_lad",
    "screen_svm",
]
