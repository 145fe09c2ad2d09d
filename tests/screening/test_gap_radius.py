"""The box-QP gap radius sqrt(gap) (``screening.balls.gap_radius``): safe, and tight.

For a feasible dual point alpha of a box QP and its own primal point w = Z'alpha, the
duality gap is at least ||w - w*||^2 (strong convexity of the primal plus strong
concavity of the dual in w, ``doc/theory/safety.rst``). The oracle is the exact optimum
of small SVM and LAD duals; hypothesis draws the problems and the points.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen.problems.box_qp_data import LADData, SVMData
from sklearn_safescreen.screening.balls import gap_radius
from sklearn_safescreen.solvers.dual_cd import solve_box_qp


def _problem(seed, lad, C):
    rng = np.random.RandomState(seed)
    n, d = rng.randint(3, 25), rng.randint(1, 6)
    X = rng.randn(n, d)
    if lad:
        data = LADData(X, None, rng.randn(n), np.ones(n))
    else:
        data = SVMData(X, None, np.where(rng.rand(n) < 0.5, 1.0, -1.0), np.ones(n))
    problem = data.problem(C)
    exact = solve_box_qp(problem, np.zeros(n), np.zeros(n, dtype=bool), tol=1e-15,
                         max_iter=200000, random_state=rng).alpha
    return problem, exact, rng


def _ratio(problem, exact, alpha):
    """||w(alpha) - w*||^2 / gap(alpha)."""
    q = problem.margins(alpha)
    gap = float(problem.gap_terms(alpha, q).sum())
    delta = alpha - exact
    dist_sq = float(delta @ problem.margins(delta))
    return dist_sq, gap


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), lad=st.booleans(), log_c=st.floats(-2, 2),
       scale=st.floats(-4, 0))
def test_the_optimum_lies_within_sqrt_gap_of_any_dual_point(seed, lad, log_c, scale):
    C = 10.0**log_c
    problem, exact, rng = _problem(seed, lad, C)
    n = exact.size
    for _ in range(5):
        move = rng.randn(n) * C * 10.0**scale * (rng.rand(n) < 0.5)
        alpha = np.clip(exact + move, problem.lo, problem.hi)
        dist_sq, gap = _ratio(problem, exact, alpha)
        # (the exact optimum is known to a gap of ~1e-15 relative)
        assert np.sqrt(dist_sq) <= gap_radius(gap) * (1 + 1e-7) + 1e-9 * max(1.0, C)


def test_no_smaller_constant_is_safe():
    """Points whose squared distance to the optimum exceeds 0.75 gap exist (0.89 on
    these problems): a radius of sqrt(gap / 2) would leave the optimum out."""
    worst = 0.0
    for seed in range(40):
        for lad in (False, True):
            problem, exact, rng = _problem(seed, lad, 10.0 ** rng_c(seed))
            n = exact.size
            for _ in range(20):
                move = rng.randn(n) * 10.0 ** rng.uniform(-4, 0) * (rng.rand(n) < 0.5)
                alpha = np.clip(exact + move * problem.hi.max(), problem.lo, problem.hi)
                dist_sq, gap = _ratio(problem, exact, alpha)
                if gap > 1e-10:
                    worst = max(worst, dist_sq / gap)
    assert 0.75 < worst <= 1.0 + 1e-6


def rng_c(seed):
    return np.random.RandomState(seed + 7).uniform(-2, 2)


def test_gap_radius_is_the_square_root_of_the_gap():
    assert gap_radius(0.25) == 0.5
    assert gap_radius(-1e-18) == 0.0  # a gap below zero by round-off
