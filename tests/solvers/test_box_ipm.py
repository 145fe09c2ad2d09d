"""The interior-point finisher of the box QP: its compiled form equals the Python one."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn_safescreen.solvers._ipm_fast import ipm_low_rank_dense
from sklearn_safescreen.solvers._ipm_kernel_fast import ipm_dense_kernel

from sklearn_safescreen.screening.balls import SCREEN_RTOL, gap_ball_screen
from sklearn_safescreen.solvers.box_ipm import DenseTerm, LowRankTerm, box_qp_ipm


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



def _rbf_dual(n: int, seed: int, gamma: float, C: float):
    """A kernel SVM dual's block: ``Q = s s' * K`` (RBF) plus the bias term."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 5)
    s = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Q = (np.exp(-gamma * sq) + 1.0) * s[:, None] * s[None, :]
    return rng, Q, np.ones(n), np.zeros(n), np.full(n, C)


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("gamma,C", [(0.5, 1.0), (1e-3, 100.0)])
def test_compiled_dense_kernel_interior_point_matches_python_version(screen, gamma, C):
    """``ipm_dense_kernel`` is the compiled twin of ``box_qp_ipm`` on a ``DenseTerm``
    (with an offset and a quadratic term from held variables): same number of
    iterations, same screening decisions, the same answer up to the factorisations'
    round-off, at a well-conditioned and at a nearly linear (ill-conditioned) RBF
    kernel."""
    rng, Q, p, lo, hi = _rbf_dual(120, 3, gamma, C)
    held = rng.rand(120) < 0.25
    a_held = np.where(held, rng.uniform(0.0, C, 120), 0.0)
    keep = ~held
    offset = Q[np.ix_(keep, held)] @ a_held[held]
    quad = float(a_held[held] @ Q[np.ix_(held, held)] @ a_held[held])
    Qk, pk, lok, hik = Q[np.ix_(keep, keep)], p[keep], lo[keep], hi[keep]
    sqnorm = np.diag(Qk).copy()
    alpha0 = rng.uniform(0.0, C, keep.sum())
    p_out = float(p[held] @ a_held[held])
    py = box_qp_ipm(DenseTerm(Qk.copy(), offset.copy(), quad), pk, lok, hik, sqnorm,
                    p_outside=p_out, tol=1e-12, alpha0=alpha0,
                    screen=gap_ball_screen if screen else None)
    nb = ipm_dense_kernel(Qk, offset, quad, pk, lok, hik, sqnorm, p_out, 1e-12, alpha0,
                          screen, SCREEN_RTOL, 80)
    np.testing.assert_allclose(nb[0], py[0], atol=1e-7 * C)
    np.testing.assert_array_equal(nb[1], py[1])
    np.testing.assert_array_equal(nb[2], py[2])
    assert nb[3] == py[3]
    if screen:
        assert (nb[1] | nb[2]).any()
    # the inputs are not modified (the compiled form compacts its own copies)
    np.testing.assert_array_equal(Qk, Q[np.ix_(keep, keep)])


def test_compiled_dense_kernel_interior_point_reaches_its_tolerance():
    """Its answer's gap, recomputed here from scratch, is at the tolerance's level."""
    _, Q, p, lo, hi = _rbf_dual(150, 5, 0.2, 10.0)
    a, d_lo, d_hi, n_it = ipm_dense_kernel(Q, np.zeros(150), 0.0, p, lo, hi,
                                           np.diag(Q).copy(), 0.0, 1e-12,
                                           np.full(150, 5.0), False, SCREEN_RTOL, 80)
    assert not d_lo.any() and not d_hi.any() and n_it < 80
    g = Q @ a - p
    gap = float((np.maximum(-lo * g, -hi * g) + a * g).sum())
    assert gap / abs(p @ a - 0.5 * a @ Q @ a) <= 1e-11




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
