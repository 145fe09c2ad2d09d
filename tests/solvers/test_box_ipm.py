"""The interior-point finisher of the box QP: its compiled form equals the Python one."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn_safescreen.solvers._ipm_fast import ipm_low_rank_dense

from sklearn_safescreen.screening.balls import SCREEN_RTOL, gap_ball_screen
from sklearn_safescreen.solvers.box_ipm import LowRankTerm, box_qp_ipm


@pytest.mark.parametrize("screen", [False, True])
def test_compiled_interior_point_matches_python_version(screen):
    """``ipm_low_rank_dense`` is the compiled twin of ``box_qp_ipm`` on a dense
    ``LowRankTerm``: same iterates, same screening decisions, same answer."""
    rng = np.random.RandomState(4)
    n, k = 300, 6
    Z = rng.randn(n, k)
    w_rest = 0.1 * rng.randn(k)
    p = rng.randn(n) * 3.0
    lo, hi = -np.full(n, 0.5), np.full(n, 0.5)
    sqnorm = (Z**2).sum(1)
    alpha0 = rng.uniform(-0.5, 0.5, n)
    py = box_qp_ipm(LowRankTerm(Z, w_rest), p, lo, hi, sqnorm, p_outside=1.5, tol=1e-12,
                    alpha0=alpha0, screen=gap_ball_screen if screen else None)
    nb = ipm_low_rank_dense(Z, w_rest, p, lo, hi, sqnorm, 1.5, 1e-12, alpha0, screen,
                            SCREEN_RTOL, 80)
    np.testing.assert_allclose(nb[0], py[0], atol=1e-9)
    np.testing.assert_array_equal(nb[1], py[1])
    np.testing.assert_array_equal(nb[2], py[2])
    assert nb[1].any() == screen and nb[3] == py[3]




def _true_rel_gap(Z, w_rest, p, lo, hi, a, p_outside):
    w = Z.T @ a + w_rest
    g = Z @ w - p
    gap = float((np.maximum(-lo * g, -hi * g) + a * g).sum())
    return gap / abs(p_outside - 0.5 * w @ w + p @ a)


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("C,bound", [(1.0, 1e-9), (1000.0, 1e-6)])
def test_interior_point_is_accurate_on_unscaled_data(screen, C, bound):
    """The SVM dual on raw breast cancer (features up to ~4e3, ||z_i||^2 up to 1.6e7):
    plain Woodbury's k x k matrix reached a condition number of 1e24 and the finisher
    stopped at relative gaps of 3e-7 to 4e-5 (C=1) and 2e-4 to 1e-3 (C=1000) while
    aiming at 1e-12. Both forms now reach the round-off level of the gap's evaluation
    in float64 (measured: ~1e-11 at C=1, ~1e-7 at C=1000, where w sums terms ~1e7
    times larger than itself)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    Z = X * np.where(y == 1, 1.0, -1.0)[:, None]
    n, k = Z.shape
    p, lo, hi = np.ones(n), np.zeros(n), np.full(n, C)
    sqnorm = (Z**2).sum(1)
    alpha0 = np.full(n, 0.5 * C)
    w_rest = np.zeros(k)
    py = box_qp_ipm(LowRankTerm(Z, w_rest), p, lo, hi, sqnorm, p_outside=0.0, tol=1e-12,
                    alpha0=alpha0, screen=gap_ball_screen if screen else None)
    nb = ipm_low_rank_dense(Z, w_rest, p, lo, hi, sqnorm, 0.0, 1e-12, alpha0, screen,
                            SCREEN_RTOL, 80)
    for a in (py[0], nb[0]):
        assert _true_rel_gap(Z, w_rest, p, lo, hi, a, 0.0) <= bound
