"""Kernel values are symmetric functions of their pair of samples, bit for bit
(doc/theory/safety.rst, *Round-off at any C*): the row cache serves row j as column j,
so k(x_i, x_j) computed in row i and in row j must agree for the margins' error bounds
to need no allowance."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.preprocessing import StandardScaler
from sklearn_safescreen.problems._box_qp_fast import row_sq_norms, symmetric_kernel_block

from sklearn_safescreen.problems.kernels import KernelMatrix

X_BC = StandardScaler().fit_transform(load_breast_cancer().data)
PARAMS = {"rbf": {"gamma": 1.0 / 30}, "poly": {"gamma": 1.0 / 30, "degree": 3, "coef0": 1.0},
          "linear": {}}


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
def test_blocks_are_symmetric_bit_for_bit(kernel):
    """Any row block, in any shape (one row, a chunk, all rows), gives every value as
    the transposed block does, the diagonal as ``diag()``, and the values of
    scikit-learn's formula up to a few units of round-off."""
    n = X_BC.shape[0]
    km = KernelMatrix(X_BC, kernel, PARAMS[kernel], 1.0)
    full = km.block(np.arange(n), np.arange(n))
    np.testing.assert_array_equal(full, full.T)
    np.testing.assert_array_equal(np.diag(full), km.diag())
    rows = np.array([400, 3, 77])
    np.testing.assert_array_equal(km.block(rows, np.arange(n)), full[rows])
    np.testing.assert_array_equal(km.block(np.arange(n), rows), full[:, rows])
    ref = pairwise_kernels(X_BC, metric=kernel, **PARAMS[kernel]) + 1.0
    np.testing.assert_allclose(full, ref, rtol=1e-12, atol=1e-12)
    assert km.entry_rtol == 0.0


def test_sklearn_kernel_rows_disagree():
    """Why: scikit-learn's RBF distances add the squared norms in argument order, so a
    block and its transpose differ in the last bits (the allowance the symmetric blocks
    make unnecessary)."""
    K = pairwise_kernels(X_BC, metric="rbf", gamma=1.0 / 30)
    assert np.any(K != K.T)


def test_callable_kernel_keeps_its_allowance():
    km = KernelMatrix(X_BC[:20], lambda A, B: A @ B.T, {}, 0.0)
    assert km.entry_rtol > 0.0


def _sequential_kernel(A, B, kind, gamma, coef0, degree):
    """The definition: each inner product summed feature after feature from 0.0, each
    product rounded on its own (NumPy's elementwise operations round exactly so), the
    squared norms likewise and added as n_i + n_j; libm's pow, NumPy's exp."""
    acc = np.zeros((A.shape[0], B.shape[0]))
    for f in range(A.shape[1]):
        acc = acc + A[:, f][:, None] * B[:, f][None, :]
    if kind == 0:
        return acc
    if kind == 1:
        sa, sb = np.zeros(A.shape[0]), np.zeros(B.shape[0])
        for f in range(A.shape[1]):
            sa, sb = sa + A[:, f] * A[:, f], sb + B[:, f] * B[:, f]
        dist = (sa[:, None] + sb[None, :]) - 2.0 * acc
        return np.exp(-gamma * np.maximum(dist, 0.0))
    return np.vectorize(math.pow, otypes=[float])(gamma * acc + coef0, degree)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize(("n", "m", "d"), [
    (1, 37, 5),       # one query row, samples not a multiple of any vector width
    (5, 101, 300),    # rows not a multiple of the row tiles, features over one chunk
    (13, 64, 257),    # features one past a multiple of the feature chunk
    (33, 77, 129),
    (8, 24, 1),
    (7, 9, 0),        # no feature: every inner product 0.0
])
def test_block_equals_sequential_definition(kind, n, m, d):
    """The register-tiled block computes, bit for bit, the sequential definition, for
    any shape (partial row groups, partial sample panels, partial feature chunks), and a
    row's values do not depend on the other rows of its block."""
    rng = np.random.default_rng(n * 1000 + d)
    X = rng.standard_normal((max(n, m), d)) * rng.lognormal(size=d)
    A, B = X[:n].copy(), X[:m].copy()
    a_sq, b_sq = row_sq_norms(A), row_sq_norms(B)
    Bt = np.ascontiguousarray(B.T)
    K = symmetric_kernel_block(A, a_sq, Bt, b_sq, kind, 0.3, 1.0, 3.0)
    np.testing.assert_array_equal(K, _sequential_kernel(A, B, kind, 0.3, 1.0, 3.0))
    one = symmetric_kernel_block(A[-1:], a_sq[-1:], Bt, b_sq, kind, 0.3, 1.0, 3.0)
    np.testing.assert_array_equal(one, K[-1:])


def test_block_of_nothing():
    Bt = np.zeros((3, 4))
    assert symmetric_kernel_block(np.zeros((0, 3)), np.zeros(0), Bt, np.zeros(4), 1,
                                  1.0, 0.0, 1.0).shape == (0, 4)
