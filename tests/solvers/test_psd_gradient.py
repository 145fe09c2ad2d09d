"""Projected gradient on the PSD cone (solvers/psd_gradient.py): the optimum against
cvxpy/CLARABEL (full and diagonal metric, smoothed hinge and hinge), the compiled and
NumPy loops, convergence far below the critical value, the compiled loop's screening."""

from __future__ import annotations

import numpy as np
import pytest
from _triplet_models import cvx_solve, primal, small_problem

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.triplets import build_triplets
from sklearn_safescreen.solvers import psd_gradient as pg


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("gamma", [0.05, 0.5, 0.0])
def test_optimum_equals_cvxpy(diagonal, gamma):
    X, y, ts = small_problem(2, diagonal=diagonal)
    lam_L, G_pos = tp.closed_form(ts, gamma, diagonal)
    lam = 0.02 * lam_L
    tol = 1e-12 if gamma else 1e-9  # the hinge: dual FISTA, sublinear
    res = pg.solve(tp.TripletProblem(ts, gamma, diagonal), G_pos / lam_L, lam, tol=tol,
                   max_iter=200000)
    assert res.converged
    M_cvx, val = cvx_solve(X, ts, lam, gamma, diagonal)
    P = primal(ts, res.M, lam, gamma, diagonal)
    assert P <= val + 1e-6 * abs(val)
    # strong convexity: ||M - M*||^2 <= 2 gap / lam; CLARABEL is accurate to ~1e-7
    scale = np.linalg.norm(res.M)
    assert np.linalg.norm(res.M - M_cvx) <= 1e-5 * scale
    # and by the dual point: ||M_cvx - M*||^2 <= 2 (P(M_cvx) - D) / lam, CLARABEL's
    # M_cvx being feasible only to ~1e-9
    p_cvx = primal(ts, M_cvx, lam, gamma, diagonal)
    assert np.linalg.norm(res.M - M_cvx) ** 2 <= 4 * (
        max(p_cvx - res.evaluation.dual, 0) + 1e-8 * abs(p_cvx)) / lam


def test_compiled_and_numpy_loops_agree_and_active_set_is_exact():
    X, y, ts = small_problem(4, n=30, d=4, k=3)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    lam = 0.01 * lam_L
    out = []
    for compiled, active_set in [(True, False), (False, False), (True, True)]:
        res = pg.solve(tp.TripletProblem(ts, gamma, False), G_pos / lam_L, lam, tol=1e-11,
                       max_iter=100000, compiled=compiled, active_set=active_set)
        assert res.converged
        out.append(res.M)
        # the returned gap is the gap over all active triplets, not the working set
        full = tp.TripletProblem(ts, gamma, False).evaluate(res.M, lam)
        assert full.rel_gap <= 1e-11 * (1 + 1e-6)
    for M in out[1:]:
        assert np.linalg.norm(M - out[0]) <= 1e-5 * np.linalg.norm(out[0])


@pytest.mark.parametrize("compiled", [True, False])
def test_converges_far_below_lambda_L(compiled):
    """Regression: with a plain max-of-history acceptance the BB iterates cycled here
    (lambda = lambda_L / 4e4); the SPG sufficient-decrease test converges."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=30, centers=[[0, 0, 0], [1, 1, 1]], random_state=0,
                      n_features=2, cluster_std=0.1)
    X = (X - X.mean(0)) / X.std(0)
    ts = build_triplets(X - X.min(), y, 3)
    lam_L, G_pos = tp.closed_form(ts, 0.05, False)
    lam = 1.0
    res = pg.solve(tp.TripletProblem(ts, 0.05, False), (lam_L + lam) / (2 * lam) * G_pos /
                   lam_L, lam, tol=1e-6, max_iter=5000, compiled=compiled)
    assert res.converged and res.evaluation.rel_gap <= 1e-6


def test_working_arrays_follow_the_status_after_the_compiled_loop():
    """Decisions of the compiled loop (apply_screened) leave the working arrays to be
    rebuilt on use: every consumer then sees exactly the active triplets."""
    X, y, ts = small_problem(0, n=30, d=3, k=3)
    gamma = 0.05
    lam = 0.02 * tp.closed_form(ts, gamma, False)[0]
    prob = tp.TripletProblem(ts, gamma, False)
    res = pg.solve(prob, np.eye(3), lam, tol=1e-8, max_iter=5000,
                   callback=_InnerScreening())
    assert prob.n_active < ts.n_triplets  # something was screened inside the loop
    active = np.flatnonzero(prob.status == 0)
    assert np.array_equal(prob.work, active)
    np.testing.assert_allclose(prob.values(res.M), tp.triplet_values(ts, res.M, False, active))
    ev = prob.evaluate(res.M, lam)
    fresh = tp.TripletProblem(ts, gamma, False, prob.status).evaluate(res.M, lam)
    assert ev.primal == pytest.approx(fresh.primal, rel=1e-12)
    assert ev.gap == pytest.approx(fresh.gap, rel=1e-9, abs=1e-12)
    # solving the same problem again (a certificate retry) starts from the rebuilt arrays
    again = pg.solve(prob, res.M, lam, tol=1e-10, max_iter=5000)
    assert again.evaluation.z.size == prob.n_active


class _InnerScreening(pg.ScreeningHook):
    """A hook offering the compiled DGB + PGB sphere rule (as SafeMetricLearner's)."""

    compiled = (False, True, True)

    def __call__(self, problem, ev):  # pragma: no cover - the compiled loop is used
        raise AssertionError("the compiled loop should have run the rule")
