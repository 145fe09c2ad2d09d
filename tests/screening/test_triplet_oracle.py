"""Triplet balls and rules against an independent oracle: the optimum of the primal
solved by CLARABEL through cvxpy (``_triplet_models.cvx_solve``), hinge and smoothed
hinge, full and diagonal metric, at a size where it is accurate to ~1e-8.

References are inexact on purpose (the library's solver stopped at a relative gap of
1e-2, or the optimum moved by a random symmetric perturbation and projected on the PSD
cone), so the gap terms of every radius are exercised. Every ball must contain the
oracle's optimum at the target, and every decision of every rule must agree with the
oracle's triplet values there; the rules must also screen something.
"""

from __future__ import annotations

import numpy as np
import pytest
from _triplet_models import cvx_solve, primal, small_problem
from test_triplet_rules import all_balls

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.screening import triplet_bounds as tb
from sklearn_safescreen.screening.triplet import screen_triplets
from sklearn_safescreen.solvers import psd_gradient as pg

#: accuracy of the oracle's triplet values (CLARABEL at 1e-10 on these sizes)
ORACLE_TOL = 1e-6


def _references(ts, gamma, diagonal, lam0, X):
    M_star0, _ = cvx_solve(X, ts, lam0, gamma, diagonal)
    M_star0 = np.diag(M_star0) if diagonal and M_star0.ndim == 1 else M_star0
    start = M_star0 * 3.0 + 0.1 * np.eye(M_star0.shape[0])
    if diagonal:
        start = np.diag(start).copy()
    loose = pg.solve(tp.TripletProblem(ts, gamma, diagonal), start, lam0, tol=1e-2,
                     max_iter=100000, compiled=False).M
    rng = np.random.RandomState(0)
    if diagonal:
        moved = np.maximum(np.diag(M_star0) * (1 + 0.05 * rng.randn(M_star0.shape[0])), 0.0)
    else:
        E = rng.randn(*M_star0.shape)
        moved = tp.project(M_star0 + 0.03 * np.linalg.norm(M_star0) * (E + E.T), False)
    return {"loose": loose, "perturbed": moved}


@pytest.mark.parametrize("gamma", [0.0, 0.05, 0.3])
@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("ratio", [0.7, 1.4])
def test_balls_and_rules_against_clarabel(gamma, diagonal, ratio):
    X, y, ts = small_problem(seed=2, n=18, d=3, k=2, diagonal=diagonal)
    lam_L, _ = tp.closed_form(ts, gamma, diagonal)
    assert lam_L > 1.0  # not the degenerate G_+ = 0 (M* = 0 for every lambda)
    lam0 = 0.05 * lam_L
    lam = ratio * lam0
    M_star, _ = cvx_solve(X, ts, lam, gamma, diagonal)
    _, p_star0 = cvx_solve(X, ts, lam0, gamma, diagonal)
    z_star = tp.triplet_values(ts, M_star, diagonal)
    idx = np.arange(ts.n_triplets, dtype=np.int32)
    n_screened = 0
    for kind, M_ref in _references(ts, gamma, diagonal, lam0, X).items():
        excess = primal(ts, M_ref, lam0, gamma, diagonal) - p_star0
        assert excess > 1e-6 * abs(p_star0), f"{kind}: the reference is (nearly) exact"
        balls, _ = all_balls(ts, gamma, diagonal, M_ref, lam0, lam)
        # the RRPB epsilon covers the reference's true distance to the optimum
        eps = tb.rrpb_eps(tp.TripletProblem(ts, gamma, diagonal).evaluate(M_ref, lam0).gap,
                          lam0)
        assert eps >= np.sqrt(2 * excess / lam0) * (1 - 1e-6)
        for ball in balls:
            dist = np.linalg.norm(M_star - ball.center)
            assert dist <= ball.radius + 1e-7 * (1 + np.linalg.norm(M_star)), (kind, ball.name)
            for rule in ("sphere", "linear", "sdp"):
                x0 = tp.triplet_values(ts, M_ref, diagonal) if not ball.psd_center else None
                res = screen_triplets(ts, ball, rule, gamma, diagonal, idx, x0_values=x0)
                bad_R = np.flatnonzero(res.to_R & (z_star < 1 - ORACLE_TOL))
                bad_L = np.flatnonzero(res.to_L & (z_star > 1 - gamma + ORACLE_TOL))
                assert bad_R.size == 0 and bad_L.size == 0, (kind, ball.name, rule, bad_R,
                                                             bad_L)
                n_screened += res.n_screened
    assert n_screened > 0
