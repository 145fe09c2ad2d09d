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


