"""Shared box-QP test helpers: linear and kernel SVM problems, and the check of a
solver result against the independent exact solution of tests/screening/_svm_truth.py."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from _svm_truth import augment

from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.kernels import KernelMatrix


def linear_problem(X, y, C, sparse=False):
    Xa = augment(X, 1.0)
    Xa = sp.csr_matrix(Xa) if sparse else np.ascontiguousarray(Xa)
    n = y.size
    sq = np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel() if sparse else (Xa**2).sum(1)
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=sq, X=Xa)


def kernel_problem(X, y, C, gamma):
    km = KernelMatrix(X, "rbf", {"gamma": gamma}, 1.0, cache_size=50)
    n = y.size
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=km.diag(),
                 kernel=km)


def check_against_truth(problem, res, truth, tol):
    q = problem.margins(res.alpha)
    # same optimum: margins (i.e. w) agree with the exact solution
    np.testing.assert_allclose(q, truth.margins, atol=1e-4 * max(1.0, np.abs(q).max()))
    # safety: every fixed variable sits at the bound the exact optimum demands
    fixed_lo = res.fixed & (res.alpha <= problem.lo)
    fixed_hi = res.fixed & (res.alpha >= problem.hi)
    assert not np.any(fixed_lo & truth.true_L()), "fixed at 0 but inside the margin"
    assert not np.any(fixed_hi & truth.true_R()), "fixed at C but outside the margin"
    assert res.converged and res.rel_gap <= tol
