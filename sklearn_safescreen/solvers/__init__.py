"""Numeric solvers. Each accepts variables fixed by screening and knows nothing of rules."""

from .dual_cd import BoxQP, SolveResult, solve_box_qp

__all__ = ["BoxQP", "SolveResult", "solve_box_qp"]
