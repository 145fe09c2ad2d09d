"""The compiled inner loops of the box-QP coordinate descent (solvers/_cd_fast.pyx),
tested directly: start points, row products, and epochs of both modes run to
convergence against the independent exact solver of tests/screening/_svm_truth.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _svm_truth import augment, noisy_data, signed_gram, solve_svm_dual

from sklearn_safescreen.solvers import _cd_fast as cd


def _dense_args(Z):
    return Z, np.zeros(1), np.zeros(1, dtype=np.int32), np.zeros(2, dtype=np.int32), False


def _sparse_args(Z):
    Zs = sp.csr_matrix(Z)
    return np.zeros((1, 1)), Zs.data, Zs.indices, Zs.indptr, True


def test_start_point_holds_screened_variables_at_their_bound():
    lo, hi = np.array([0.0, -1.0, 0.0, -2.0]), np.array([1.0, 1.0, 3.0, 2.0])
    alpha0 = np.array([5.0, 0.3, -1.0, 0.5])
    at_lower = np.array([False, True, False, False])
    at_upper = np.array([False, False, False, True])
    out = cd.start_point(alpha0, lo, hi, at_lower, at_upper)
    np.testing.assert_array_equal(out, [1.0, -1.0, 0.0, 2.0])
    assert out is not alpha0 and alpha0[0] == 5.0  # a new array


def test_seed_point_keeps_bound_samples_at_the_end_of_the_new_box():
    # reference box [0, 1] (C_ref = 1), new box [0, 2] (C = 2): scale = C_ref / C = 0.5
    lo, hi = np.zeros(4), np.full(4, 2.0)
    alpha_ref = np.array([1.0, 0.4, 0.0, 3.0])
    out = cd.seed_point(alpha_ref, lo, hi, 0.5)
    # at the top of the old box -> top of the new; interior kept; 0 kept; clipped
    np.testing.assert_array_equal(out, [2.0, 0.4, 0.0, 2.0])
    # LAD boxes [-C, C]: the bottom end too
    lo2, hi2 = np.full(3, -2.0), np.full(3, 2.0)
    np.testing.assert_array_equal(cd.seed_point(np.array([-1.0, 0.5, 1.0]), lo2, hi2, 0.5),
                                  [-2.0, 0.5, 2.0])


@pytest.mark.parametrize("sparse", [False, True])
def test_signed_row_dots_equal_the_direct_product(sparse):
    rng = np.random.RandomState(0)
    Z = rng.randn(30, 5) * (rng.rand(30, 5) < 0.6)
    sign = np.where(rng.rand(30) < 0.5, -1.0, 1.0)
    rows = np.array([3, 0, 29, 7], dtype=np.int64)
    w = rng.randn(5)
    args = _sparse_args(Z) if sparse else _dense_args(Z)
    got = cd.signed_row_dots(*args, sign, rows, w)
    np.testing.assert_allclose(got, sign[rows] * (Z[rows] @ w), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("C", [0.05, 1.0])
def test_linear_epochs_converge_to_the_exact_dual_optimum(sparse, C):
    X, y = noisy_data(3, 80, 4)
    Z = augment(X, 1.0)
    n = Z.shape[0]
    hi = np.full(n, C)
    truth = solve_svm_dual(C, Z=y[:, None] * Z)
    alpha, w = np.zeros(n), np.zeros(Z.shape[1])
    args = _sparse_args(Z) if sparse else _dense_args(Z)
    active = np.arange(n, dtype=np.int64)
    epochs, converged = cd.linear_epochs(*args, y, np.ones(n), np.zeros(n), hi,
                                         np.einsum("ij,ij->i", Z, Z), alpha, w, active,
                                         20000, 1e-10, 7)
    assert converged and epochs < 20000
    # w is kept equal to sum_i alpha_i y_i z_i
    np.testing.assert_allclose(w, Z.T @ (alpha * y), rtol=1e-10, atol=1e-12)
    assert np.all((alpha >= 0) & (alpha <= C))
    np.testing.assert_allclose(alpha, truth.alpha, atol=1e-5 * C)


def test_linear_epochs_leave_inactive_variables_alone():
    X, y = noisy_data(4, 60, 3)
    Z = augment(X, 1.0)
    n = Z.shape[0]
    alpha = np.full(n, 0.5)
    w = Z.T @ (alpha * y)
    active = np.arange(0, n, 2, dtype=np.int64)
    cd.linear_epochs(*_dense_args(Z), y, np.ones(n), np.zeros(n), np.ones(n),
                     np.einsum("ij,ij->i", Z, Z), alpha, w, active, 50, 1e-8, 1)
    assert np.all(alpha[1::2] == 0.5)
    np.testing.assert_allclose(w, Z.T @ (alpha * y), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf1"])
def test_kernel_epochs_keep_the_gradient_and_converge(kernel):
    X, y = noisy_data(5, 70, 3)
    Q = signed_gram(X, y, kernel, bias=1.0)
    n = Q.shape[0]
    C = 2.0
    truth = solve_svm_dual(C, Q=Q)
    lo, hi = np.zeros(n), np.full(n, C)
    alpha = np.zeros(n)
    g = Q @ alpha - 1.0
    epochs, converged = cd.kernel_epochs(Q, lo, hi, alpha, g, np.arange(n, dtype=np.int64),
                                         100000, 1e-10, 3)
    assert converged
    np.testing.assert_allclose(g, Q @ alpha - 1.0, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(alpha, truth.alpha, atol=1e-5 * C)
