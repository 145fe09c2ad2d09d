"""The interior-point finisher of the box QP: its compiled form equals the Python one."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.kernels import KernelMatrix
from sklearn_safescreen.screening.balls import SCREEN_RTOL, gap_ball_screen
from sklearn_safescreen.solvers.box_ipm import LowRankTerm, box_qp_ipm, ipm_low_rank_dense

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "screening"))
from _svm_truth import (  # noqa: E402
    augment,
)


def _linear_problem(X, y, C, sparse=False):
    Xa = augment(X, 1.0)
    Xa = sp.csr_matrix(Xa) if sparse else np.ascontiguousarray(Xa)
    n = y.size
    sq = np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel() if sparse else (Xa**2).sum(1)
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=sq, X=Xa)


def _kernel_problem(X, y, C, gamma):
    km = KernelMatrix(X, "rbf", {"gamma": gamma}, 1.0, cache_size=50)
    n = y.size
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=km.diag(),
                 kernel=km)


def _check_against_truth(problem, res, truth, tol):
    q = problem.margins(res.alpha)
    # same optimum: margins (i.e. w) agree with the exact solution
    np.testing.assert_allclose(q, truth.margins, atol=1e-4 * max(1.0, np.abs(q).max()))
    # safety: every fixed variable sits at the bound the exact optimum demands
    fixed_lo = res.fixed & (res.alpha <= problem.lo)
    fixed_hi = res.fixed & (res.alpha >= problem.hi)
    assert not np.any(fixed_lo & truth.true_L()), "fixed at 0 but inside the margin"
    assert not np.any(fixed_hi & truth.true_R()), "fixed at C but outside the margin"
    assert res.converged and res.rel_gap <= tol




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


