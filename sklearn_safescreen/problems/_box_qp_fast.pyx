"""Compiled kernels of the box-QP problem: per-sample duality gaps, kernel-row sums and
compensated (twice-the-working-precision) matrix-vector products."""

from libc.math cimport fabs, fma
from libc.stdint cimport int32_t, int64_t
from scipy.linalg.cython_blas cimport daxpy

import numpy as np

ctypedef fused int32_or_64:
    int32_t
    int64_t


def gap_terms(const double[::1] q, const double[::1] p, const double[::1] lo,
              const double[::1] hi, const double[::1] alpha, const int64_t[::1] rows):
    """Per-sample duality gap ``max(-lo g, -hi g) + alpha g``, ``g = q - p``, of
    ``rows`` (``q`` holds their margins), without gathering the other arrays."""
    cdef Py_ssize_t k, i, m = rows.shape[0]
    cdef double g
    out = np.empty(m)
    cdef double[::1] o = out
    with nogil:
        for k in range(m):
            i = rows[k]
            g = q[k] - p[i]
            o[k] = max(-lo[i] * g, -hi[i] * g) + alpha[i] * g
    return out


def add_rows(double[::1] g, const double[:, ::1] A, const int64_t[::1] rows,
             const double[::1] coef):
    """``g += coef @ A[rows]`` in place, without copying the rows, skipping zero
    coefficients (``A[rows]`` of a 2,400 x 5,000 kernel block is 96 MB)."""
    cdef int n = g.shape[0], one = 1
    cdef Py_ssize_t k
    cdef double c
    if A.shape[1] != n or coef.shape[0] != rows.shape[0]:
        raise ValueError("add_rows: shapes do not match")
    with nogil:
        for k in range(rows.shape[0]):
            c = coef[k]
            if c != 0.0:
                daxpy(&n, &c, <double*>&A[rows[k], 0], &one, &g[0], &one)


# ------------------------------------------------- compensated (Dot2) margins ---
# Ogita, Rump & Oishi (2005), "Accurate sum and dot product", Algorithm Dot2: every
# product is split exactly into p + e (TwoProduct, with an FMA) and every addition into
# s + e (TwoSum, Knuth); the error terms are summed in a second accumulator. The
# result is as accurate as if computed in twice the working precision,
# |res - a'b| <= u|a'b| + gamma_n^2 |a|'|b| (their Proposition 5.5, u = 2^-53,
# gamma_n = nu/(1-nu)). This module is compiled with -ffp-contract=off (setup.py), so
# that the compiler cannot fuse a product into the following sum, which would break
# the exactness of the error-free transformations.

cdef inline void _dot2_add(double a, double b, double* s, double* c) noexcept nogil:
    """``(s, c) += a * b`` with the error-free transformations of Dot2."""
    cdef double p = a * b
    cdef double ep = fma(a, b, -p)
    cdef double t = s[0] + p
    cdef double z = t - s[0]
    c[0] += ((s[0] - (t - z)) + (p - z)) + ep
    s[0] = t


def dot2_dense(const double[:, :] X, const double[::1] coef):
    """Compensated ``X' coef`` (length ``X.shape[1]``) and ``|X|' |coef|``, the latter
    in plain arithmetic (an error bound's ingredient)."""
    cdef Py_ssize_t i, k, n = X.shape[0], d = X.shape[1]
    if coef.shape[0] != n:
        raise ValueError("dot2_dense: shapes do not match")
    s_arr, c_arr, a_arr = np.zeros(d), np.zeros(d), np.zeros(d)
    cdef double[::1] s = s_arr, c = c_arr, ab = a_arr
    cdef double a
    with nogil:
        for i in range(n):
            a = coef[i]
            if a == 0.0:
                continue
            for k in range(d):
                _dot2_add(X[i, k], a, &s[k], &c[k])
                ab[k] += fabs(X[i, k] * a)
        for k in range(d):
            s[k] = s[k] + c[k]
    return s_arr, a_arr


def dot2_rows(const double[:, :] X, const double[::1] w):
    """Compensated ``X w`` (one Dot2 per row) and ``|X| |w|``."""
    cdef Py_ssize_t i, k, n = X.shape[0], d = X.shape[1]
    if w.shape[0] != d:
        raise ValueError("dot2_rows: shapes do not match")
    out, a_arr = np.empty(n), np.empty(n)
    cdef double[::1] o = out, ab = a_arr
    cdef double s, c, a
    with nogil:
        for i in range(n):
            s = 0.0
            c = 0.0
            a = 0.0
            for k in range(d):
                _dot2_add(X[i, k], w[k], &s, &c)
                a += fabs(X[i, k] * w[k])
            o[i] = s + c
            ab[i] = a
    return out, a_arr


def dot2_csr(const double[::1] data, const int32_or_64[::1] indices,
             const int32_or_64[::1] indptr, const double[::1] w):
    """Compensated ``X w`` of a CSR matrix and ``|X| |w|``."""
    cdef Py_ssize_t i, p, n = indptr.shape[0] - 1
    out, a_arr = np.empty(n), np.empty(n)
    cdef double[::1] o = out, ab = a_arr
    cdef double s, c, a
    with nogil:
        for i in range(n):
            s = 0.0
            c = 0.0
            a = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                _dot2_add(data[p], w[indices[p]], &s, &c)
                a += fabs(data[p] * w[indices[p]])
            o[i] = s + c
            ab[i] = a
    return out, a_arr


def dot2_csr_transpose(const double[::1] data, const int32_or_64[::1] indices,
                       const int32_or_64[::1] indptr, Py_ssize_t n_features,
                       const double[::1] coef):
    """Compensated ``X' coef`` of a CSR matrix and ``|X|' |coef|``."""
    cdef Py_ssize_t i, p, j, n = indptr.shape[0] - 1
    if coef.shape[0] != n:
        raise ValueError("dot2_csr_transpose: shapes do not match")
    s_arr, c_arr, a_arr = np.zeros(n_features), np.zeros(n_features), np.zeros(n_features)
    cdef double[::1] s = s_arr, c = c_arr, ab = a_arr
    cdef double a
    with nogil:
        for i in range(n):
            a = coef[i]
            if a == 0.0:
                continue
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                _dot2_add(data[p], a, &s[j], &c[j])
                ab[j] += fabs(data[p] * a)
        for j in range(n_features):
            s[j] = s[j] + c[j]
    return s_arr, a_arr


def dot2_accumulate(double[::1] s, double[::1] c, double[::1] ab,
                    const double[:, :] block, const double[::1] coef):
    """``(s, c) += block' coef`` with Dot2 accumulators (``s`` the sums, ``c`` their
    compensations, both of length ``block.shape[1]``) and ``ab += |block|' |coef|``:
    a kernel matrix-vector product accumulated block by block."""
    cdef Py_ssize_t k, i, m = block.shape[0], n = block.shape[1]
    cdef double a
    if coef.shape[0] != m or s.shape[0] != n or c.shape[0] != n or ab.shape[0] != n:
        raise ValueError("dot2_accumulate: shapes do not match")
    with nogil:
        for k in range(m):
            a = coef[k]
            if a == 0.0:
                continue
            for i in range(n):
                _dot2_add(block[k, i], a, &s[i], &c[i])
                ab[i] += fabs(block[k, i] * a)
