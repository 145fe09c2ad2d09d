"""The LP-SVM problem (``problems/lp_svm.py``) against its definition and an
independent solve of the full linear program (``_lp_svm_models``): objectives, the
certified gap (an upper and a lower bound of the optimum for ANY pair), dual
feasibility by scaling (checked in exact rational arithmetic), the critical value,
sparse input kept sparse, and the restricted LPs (all features and samples: the full
optimum; samples fixed at the box: the linear term)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import ZERO, dense, lambda_max, make_problem, primal, solve_full
from scipy.optimize import linprog

from sklearn_safescreen.problems.lp_svm import LPSVMData, add_intercept_column

CASES = [dict(sparse=sp_, weights=wt, intercept=ic)
         for sp_ in (False, True) for wt in (False, True) for ic in (False, True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(k for k, v in c.items() if v)
                         or "plain")
def test_certificate_brackets_the_optimum_for_any_pair(case):
    X, y, s = make_problem(0, **case)
    data = LPSVMData(X, y, s)
    lam = 0.1 * lambda_max(X, y, s)
    opt = solve_full(X, y, s, lam)
    rng = np.random.RandomState(1)
    for scale in (0.0, 1e-6, 1e-2, 1.0):
        w = opt.w + scale * rng.randn(len(opt.w))
        alpha = y * opt.a * (1 + scale * rng.randn(len(y))) + scale * rng.randn(len(y))
        cert = data.certificate(lam, w, alpha)
        assert cert.primal >= primal(X, y, s, w, lam)
        assert cert.primal - primal(X, y, s, w, lam) <= 1e-12 * max(1.0, cert.primal)
        assert cert.dual <= opt.value * (1 + 1e-9) + 1e-12
        assert cert.primal >= opt.value * (1 - 1e-9)
        assert cert.gap >= 0.0
    # at the optimum itself the certified gap closes (to the reference's accuracy)
    cert = data.certificate(lam, opt.w, y * opt.a)
    assert cert.rel_gap <= 1e-8


def test_feasible_dual_is_feasible_in_exact_arithmetic():
    X, y, s = make_problem(3, n=15, d=6, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.05 * lambda_max(X, y, s)
    rng = np.random.RandomState(0)
    alpha = y * rng.uniform(-0.5, 3.0, len(y))  # outside the box too
    dp = data.feasible_dual(lam, alpha)
    assert dp.scale < 1.0  # the point needed scaling: the test is not vacuous
    limit = Fraction(lam) * len(y)
    Z = y[:, None] * dense(X)
    for j in range(Z.shape[1]):
        exact = sum(Fraction(z) * Fraction(a) for z, a in zip(Z[:, j], dp.a, strict=True))
        assert abs(exact) <= limit
    assert np.all(dp.a >= 0.0) and np.all(dp.a <= s)
    assert Fraction(dp.value) <= sum(Fraction(a) for a in dp.a) / len(y)
    np.testing.assert_array_equal(dp.alpha, y * dp.a)


@pytest.mark.parametrize("sparse", [False, True])
def test_lambda_max_is_the_critical_value(sparse):
    X, y, s = make_problem(5, sparse=sparse, weights=True, intercept=True)
    data = LPSVMData(X, y, s)
    lam_max = data.lambda_max()
    assert lam_max == pytest.approx(lambda_max(X, y, s), rel=1e-12)
    above = solve_full(X, y, s, lam_max * (1 + 1e-9))
    assert np.abs(above.w).max() <= ZERO
    assert above.value == pytest.approx(s.sum() / len(y), rel=1e-9)
    below = solve_full(X, y, s, lam_max * 0.99)
    assert np.abs(below.w).max() > 1e-6
    assert below.value < s.sum() / len(y) * (1 - 1e-6)
    # w = 0 with alpha = y * s is optimal at lambda_max: zero certified gap
    cert = data.certificate(lam_max * (1 + 1e-9), np.zeros(X.shape[1]), data.alpha_at_zero())
    assert cert.rel_gap <= 1e-12


def test_sparse_input_stays_sparse():
    X, y, s = make_problem(2, sparse=True)
    data = LPSVMData(sp.csc_matrix(X), y, s)
    assert sp.issparse(data.Z) and sp.issparse(data.Zc)
    assert data.Z.nnz == X.nnz
    w = np.random.RandomState(0).randn(X.shape[1])
    np.testing.assert_allclose(data.margins(w), y * (X @ w), rtol=1e-13, atol=1e-13)
    dense_data = LPSVMData(X.toarray(), y, s)
    np.testing.assert_allclose(data.primal(0.1, w), dense_data.primal(0.1, w), rtol=1e-12)


def test_sorted_columns_sort_each_column():
    X, y, s = make_problem(4, sparse=True)
    for data in (LPSVMData(X, y, s), LPSVMData(X.toarray(), y, s)):
        sc = data.sorted_columns
        Zc = dense(data.Zc)
        for j in range(Zc.shape[1]):
            vals = sc.values[sc.start[j]:sc.start[j + 1]]
            assert np.all(np.diff(vals) >= 0.0)
            np.testing.assert_array_equal(vals, Zc[sc.rows[sc.start[j]:sc.start[j + 1]], j])
            if not data.sparse:
                assert len(vals) == Zc.shape[0]


def test_intercept_column():
    X, y, s = make_problem(1)
    Xi = add_intercept_column(X, 2.5)
    assert Xi.shape == (X.shape[0], X.shape[1] + 1)
    np.testing.assert_array_equal(Xi[:, -1], 2.5)
    Xs = add_intercept_column(sp.csr_matrix(X), 2.5)
    assert sp.issparse(Xs)
    np.testing.assert_array_equal(Xs.toarray(), Xi)


@pytest.mark.parametrize("sparse", [False, True])
def test_restricted_lp_over_everything_is_the_full_lp(sparse):
    X, y, s = make_problem(6, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    n, d = X.shape
    lam = 0.05 * lambda_max(X, y, s)
    opt = solve_full(X, y, s, lam)
    every = np.arange(d)
    lp = data.restricted_lp(lam, every, every, np.arange(n), np.zeros(n, bool), 1e6)
    res = linprog(lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, bounds=lp.bounds, method="highs")
    assert (res.fun + lp.constant) / n == pytest.approx(opt.value, rel=1e-9)
    w = lp.weights(res.x, d)
    assert primal(X, y, s, w, lam) == pytest.approx(opt.value, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_restricted_lp_with_the_optimum_signs_has_the_same_optimum(sparse):
    """One column per feature, of the sign it has at the optimum (either sign for the
    zeros): the same optimum; with every sign flipped instead, a worse one."""
    X, y, s = make_problem(8, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    n, d = X.shape
    lam = 0.05 * lambda_max(X, y, s)
    opt = solve_full(X, y, s, lam)
    plus = np.flatnonzero(opt.w >= 0)
    minus = np.flatnonzero(opt.w <= 0)
    assert len(plus) < d and len(minus) < d
    lp = data.restricted_lp(lam, plus, minus, np.arange(n), np.zeros(n, bool), 1e6)
    res = linprog(lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, bounds=lp.bounds, method="highs")
    assert lp.A_ub.shape[1] == len(plus) + len(minus) + n
    w = lp.weights(res.x, d)
    assert primal(X, y, s, w, lam) == pytest.approx(opt.value, rel=1e-9)
    flipped = data.restricted_lp(lam, np.flatnonzero(opt.w < 0), np.flatnonzero(opt.w > 0),
                                 np.arange(n), np.zeros(n, bool), 1e6)
    res = linprog(flipped.c, A_ub=flipped.A_ub, b_ub=flipped.b_ub, bounds=flipped.bounds,
                  method="highs")
    assert (res.fun + flipped.constant) / n > opt.value * (1 + 1e-6)


def test_restricted_lp_with_samples_at_the_box_has_the_same_optimum():
    """Samples whose margin is below 1 at the optimum, fixed at the box (their loss
    linear), and samples above 1 left out: the restricted LP has the full optimum."""
    X, y, s = make_problem(7, weights=True)
    data = LPSVMData(X, y, s)
    n, d = X.shape
    lam = 0.2 * lambda_max(X, y, s)
    opt = solve_full(X, y, s, lam)
    at_box = opt.margins < 1 - 1e-6
    rows = np.flatnonzero(np.abs(opt.margins - 1) <= 1e-6)
    assert at_box.sum() > 3 and len(rows) < n - 3
    lp = data.restricted_lp(lam, np.arange(d), np.arange(d), rows, at_box, 1e6)
    res = linprog(lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, bounds=lp.bounds, method="highs")
    assert (res.fun + lp.constant) / n == pytest.approx(opt.value, rel=1e-9)


def test_rejects_bad_labels_and_weights():
    X, y, s = make_problem(0)
    with pytest.raises(ValueError, match="y must be"):
        LPSVMData(X, 2 * y, s)
    with pytest.raises(ValueError, match="sample_weight"):
        LPSVMData(X, y, -s)
