"""Screening-driven working sets (solvers/working_set.py) on problems large enough to
use them, against the independent exact solver of tests/screening/_svm_truth.py and
against the plain solver."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from _box_models import check_against_truth, kernel_problem, linear_problem
from _profiles import examples
from _svm_truth import (
    HYPOTHESIS_SETTINGS,
    augment,
    noisy_data,
    solve_svm_dual,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.screening.balls import gap_ball_screen
from sklearn_safescreen.solvers import dual_cd, working_set
from sklearn_safescreen.solvers.dual_cd import solve_box_qp
from sklearn_safescreen.solvers.working_set import (
    solve_plain_then_working_set,
    solve_working_set,
)

#: the working-set threshold the path test lowers to (the default needs thousands of
#: undecided samples)
SMALL_WS_MIN = 400


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_linear_working_set_equals_exact_solution(C, sparse):
    X, y = noisy_data(seed=3, n=1500, d=8)
    problem = linear_problem(X, y, C, sparse)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    n = y.size
    res = solve_working_set(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                            max_iter=100000, random_state=np.random.RandomState(0),
                            dynamic_screen=gap_ball_screen)
    check_against_truth(problem, res, truth, 1e-9)
    # the final gap ball proves most samples' bounds
    assert res.fixed.sum() > 0.5 * n


@pytest.mark.parametrize("C", [0.1, 3.0])
def test_kernel_plain_solver_with_newton_equals_exact_solution(C):
    X, y = noisy_data(seed=5, n=600, d=4)
    gamma = 0.5
    problem = kernel_problem(X, y, C, gamma)
    Q = y[:, None] * (np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1.0) * y
    truth = solve_svm_dual(C, Q=0.5 * (Q + Q.T))
    n = y.size
    plain = solve_box_qp(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                         max_iter=100000, random_state=np.random.RandomState(1))
    check_against_truth(problem, plain, truth, 1e-9)


def test_working_sets_refuse_a_kernel_problem():
    X, y = noisy_data(seed=5, n=60, d=4)
    problem = kernel_problem(X, y, 1.0, 0.5)
    with pytest.raises(ValueError, match="linear problems"):
        solve_working_set(problem, np.zeros(60), np.zeros(60, bool), tol=1e-6,
                          max_iter=10, random_state=np.random.RandomState(0),
                          dynamic_screen=gap_ball_screen)


def test_working_set_respects_prefixed_variables_and_warm_start():
    """Variables fixed on entry stay fixed; a warm start from another C converges to
    the same point as a cold start."""
    X, y = noisy_data(seed=8, n=1200, d=6)
    C = 2.0
    problem = linear_problem(X, y, C)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    fixed = truth.true_R(1e-3)  # safely decided at 0
    alpha0 = np.where(fixed, 0.0, C / 2)
    res = solve_working_set(problem, alpha0, fixed, tol=1e-9, max_iter=100000,
                            random_state=np.random.RandomState(0),
                            dynamic_screen=gap_ball_screen)
    assert np.all(res.fixed[fixed]) and np.all(res.alpha[fixed] == 0.0)
    check_against_truth(problem, res, truth, 1e-9)


@settings(max_examples=examples(12), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10_000), log_c=st.floats(-2.5, 2.0),
       kernel=st.sampled_from(["linear", "rbf"]), up=st.booleans())
def test_screened_path_equals_unscreened_on_working_set_sizes(seed, log_c, kernel, up):
    """A warm-started step (either direction) big enough for the working-set solver
    (its threshold lowered to 400 undecided samples, so that a small problem uses it)
    gives the unscreened answer; ScreeningRepairWarning is an error in this suite."""
    X, y = noisy_data(seed=seed, n=SMALL_WS_MIN + 300, d=5)
    C0 = 10.0**log_c
    C1 = C0 * (3.0 if up else 1 / 3.0)
    params = dict(kernel=kernel, gamma=0.3, tol=1e-10, random_state=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(working_set, "DEFAULT_OPTIONS",
                   replace(working_set.DEFAULT_OPTIONS, min_problem=SMALL_WS_MIN))
        model = SafeSVC(C=C0, warm_start=True, **params).fit(X, y)
        model.set_params(C=C1).fit(X, y)
    plain = SafeSVC(C=C1, screening=None, **params).fit(X, y)
    d_model, d_plain = model.decision_function(X), plain.decision_function(X)
    np.testing.assert_allclose(d_model, d_plain, atol=2e-4 * max(1.0, np.abs(d_plain).max()))
    assert model.dual_gap_[0] >= 0.0


@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_plain_then_working_set_equals_exact_solution(C, monkeypatch):
    """The cold-fit solver: plain coordinate descent until it slows down, then working
    sets from there (forced here on a small problem), from every sample at C."""
    # stop_when_slow on a small problem; ipm_small_flops 0: no immediate polish
    monkeypatch.setattr(dual_cd, "DEFAULT_OPTIONS", replace(
        dual_cd.DEFAULT_OPTIONS, stop_when_slow_min=10, ipm_small_flops=0))
    X, y = noisy_data(seed=6, n=1500, d=8)
    problem = linear_problem(X, y, C)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    n = y.size
    calls = []
    real = working_set.solve_working_set
    monkeypatch.setattr(working_set, "solve_working_set",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    res = solve_plain_then_working_set(problem, np.full(n, C), np.zeros(n, bool), tol=1e-9,
                                       max_iter=100000,
                                       random_state=np.random.RandomState(0),
                                       dynamic_screen=gap_ball_screen)
    check_against_truth(problem, res, truth, 1e-9)
    if C >= 1.0:  # coordinate descent crawls there: the hand-over must have happened
        assert calls

