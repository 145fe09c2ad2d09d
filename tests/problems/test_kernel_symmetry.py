"""Kernel values are symmetric functions of their pair of samples, bit for bit
(doc/theory/safety.rst, *Round-off at any C*): the row cache serves row j as column j,
so k(x_i, x_j) computed in row i and in row j must agree for the margins' error bounds
to need no allowance."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.preprocessing import StandardScaler

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
