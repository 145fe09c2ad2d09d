"""The compensated (Dot2) products behind the references' margins, against exact
rational arithmetic, on ill-conditioned data where plain summation loses every digit."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn_safescreen.problems._box_qp_fast import (
    dot2_accumulate,
    dot2_add_rows,
    dot2_csr,
    dot2_csr_transpose,
    dot2_dense,
    dot2_rows,
)

from sklearn_safescreen.problems.box_qp import BoxQP, gamma
from sklearn_safescreen.problems.constants import UNIT_ROUNDOFF
from sklearn_safescreen.problems.kernels import KernelMatrix


def _cancelling(rng, n, d, spread=1e15):
    """Rows whose products with ``coef`` cancel: large terms of both signs that sum to
    something small (condition numbers around ``spread``)."""
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(0, np.log(spread), (n, d)))
    coef = rng.standard_normal(n) * np.exp(rng.uniform(0, np.log(spread), n))
    return X, coef


def _exact(X, coef):
    """``X' coef`` in rational arithmetic, rounded once."""
    return np.array([float(sum(Fraction(float(X[i, k])) * Fraction(float(coef[i]))
                               for i in range(X.shape[0]))) for k in range(X.shape[1])])


def _assert_dot2_accurate(got, exact, absum, n_terms):
    # Ogita, Rump and Oishi (2005), Proposition 5.5: |res - x'y| <= u|x'y| +
    # gamma_n^2 |x|'|y| (doubled: the test's own arithmetic)
    bound = 2.0 * (UNIT_ROUNDOFF * np.abs(exact) + gamma(n_terms) ** 2 * absum)
    assert np.all(np.abs(got - exact) <= bound)


@pytest.mark.parametrize("seed", range(4))
def test_dense_products_are_twice_as_accurate(seed):
    rng = np.random.default_rng(seed)
    X, coef = _cancelling(rng, 60, 37)
    exact = _exact(X, coef)
    plain = X.T @ coef
    w, w_abs = dot2_dense(np.ascontiguousarray(X), coef)
    _assert_dot2_accurate(w, exact, w_abs, X.shape[0])
    # the data are hard: plain sums miss by far more than the compensated bound allows
    assert np.max(np.abs(plain - exact) / np.maximum(w_abs, 1e-300)) > 1e3 * np.max(
        np.abs(w - exact) / np.maximum(w_abs, 1e-300))
    t, t_abs = dot2_rows(np.ascontiguousarray(X.T), coef)
    _assert_dot2_accurate(t, exact, t_abs, X.shape[0])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_products_are_twice_as_accurate(index_dtype):
    rng = np.random.default_rng(7)
    X, coef = _cancelling(rng, 80, 25)
    X[rng.random(X.shape) < 0.6] = 0.0
    A = sp.csr_matrix(X)
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    exact = _exact(X, coef)
    w, w_abs = dot2_csr_transpose(A.data, A.indices, A.indptr, X.shape[1], coef)
    _assert_dot2_accurate(w, exact, w_abs, X.shape[0])
    At = sp.csr_matrix(X.T)
    At.indices = At.indices.astype(index_dtype)
    At.indptr = At.indptr.astype(index_dtype)
    t, t_abs = dot2_csr(At.data, At.indices, At.indptr, coef)
    _assert_dot2_accurate(t, exact, t_abs, X.shape[0])
    np.testing.assert_array_equal(t, dot2_rows(np.ascontiguousarray(X.T), coef)[0])


def test_accumulated_rows_equal_one_block():
    """Accumulating block by block, or reading rows in place in column blocks (the
    kernel row cache), gives the same sums as one pass: each output entry sees the same
    terms in the same order."""
    rng = np.random.default_rng(3)
    A, _ = _cancelling(rng, 50, 2500)  # wider than one column block
    rows = rng.permutation(50)[:31].astype(np.int64)
    coef = rng.standard_normal(31) * 1e8
    coef[::5] = 0.0
    s1, c1, a1 = np.zeros(2500), np.zeros(2500), np.zeros(2500)
    dot2_add_rows(s1, c1, a1, A, rows, coef)
    s2, c2, a2 = np.zeros(2500), np.zeros(2500), np.zeros(2500)
    for part in (slice(0, 10), slice(10, 31)):
        dot2_accumulate(s2, c2, a2, np.ascontiguousarray(A[rows[part]]), coef[part])
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(a1, a2)
    exact = _exact(A[rows][:, :40], coef)
    _assert_dot2_accurate((s1 + c1)[:40], exact, a1[:40], rows.size)
    with pytest.raises(ValueError, match="out of range"):
        dot2_add_rows(s1, c1, a1, A, np.array([50], dtype=np.int64), coef[:1])


@pytest.mark.parametrize("cache_size", [200, 1e-3])
def test_kernel_margins_from_the_cache_or_computed_agree(cache_size):
    """The kernel reference margins read the cached support rows in place, or compute
    them in blocks when they do not fit: the same values, within their error bound of
    the plain product."""
    rng = np.random.default_rng(0)
    n = 300
    X = rng.standard_normal((n, 5))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    km = KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=cache_size)
    alpha = np.where(rng.random(n) < 0.4, rng.uniform(0, 1e12, n), 0.0)
    problem = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, 1e12),
                    sqnorm=km.diag(), kernel=km)
    q, error = problem.accurate_margins(alpha)
    K = km.block(np.arange(n), np.arange(n))
    plain = sign * (K @ (sign * alpha))
    assert np.all(np.abs(q - plain) <= error + problem.margin_error_bound(alpha))
    reference = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, 1e12),
                      sqnorm=km.diag(),
                      kernel=KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=200))
    q_ref, error_ref = reference.accurate_margins(alpha)
    np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(error, error_ref)
