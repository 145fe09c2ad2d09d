"""Compiled kernels of the box-QP problem: per-sample duality gaps, kernel-row sums and
compensated (twice-the-working-precision) matrix-vector products."""

from libc.math cimport fabs, fma, pow
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


# ------------------------------------------------ symmetric kernel blocks ---
# A kernel value must not depend on which of its two samples is the row: the row cache
# serves row j as column j, so k(x_i, x_j) computed in row i and in row j enter the same
# products. BLAS (and scikit-learn's distances, which add the two squared norms in
# argument order) round a value differently in the two places. Here every value is a
# fixed function of the pair: the inner product is summed over the features in their
# order (products commute exactly), the squared norms are summed the same way and added
# as n_i + n_j (addition commutes exactly), and this module is compiled without
# contraction into FMAs (setup.py), so that the vector lanes and the scalar definition
# round alike. Speed comes from vectorising across samples, with register tiles of
# several query rows by several vectors of samples (_symkernel.h), not across features.

cdef extern from "sklearn_safescreen/problems/_symkernel.h" nogil:
    int symk_block(Py_ssize_t n, Py_ssize_t d, const double* A, const double* a_sq,
                   const double* Bt, Py_ssize_t ldb, Py_ssize_t m, const double* b_sq,
                   int kind, double gamma, double coef0, double degree, double* out)


def symmetric_kernel_block(const double[:, ::1] A, const double[::1] a_sq,
                           const double[:, ::1] Bt, const double[::1] b_sq, int kind,
                           double gamma, double coef0, double degree):
    """Kernel values between the rows of ``A`` and the columns of ``Bt`` (the other
    samples, transposed), each a symmetric function of its pair of samples.

    ``kind``: 0 linear ``<a, b>``, 1 RBF ``exp(-gamma max(|a|^2 + |b|^2 - 2<a, b>, 0))``
    with the squared norms ``a_sq``, ``b_sq`` of :func:`row_sq_norms`, 2 polynomial
    ``(gamma <a, b> + coef0)^degree``. Every inner product is
    ``sum_k A[i, k] * Bt[k, j]`` summed in feature order from 0.0, each product rounded
    on its own (the plain sequential loop, bit for bit); the RBF's exponential is
    NumPy's, over the whole block, as in :func:`symmetric_kernel_diag`.
    """
    cdef Py_ssize_t n = A.shape[0], m = Bt.shape[1], d = A.shape[1]
    cdef int status = 0
    if Bt.shape[0] != d or a_sq.shape[0] != n or b_sq.shape[0] != m:
        raise ValueError("symmetric_kernel_block: shapes do not match")
    if kind not in (0, 1, 2):
        raise ValueError(f"symmetric_kernel_block: unknown kernel code {kind}")
    out_arr = np.empty((n, m))
    if n == 0 or m == 0:
        return out_arr
    cdef double[:, ::1] out = out_arr
    # a zero-width memoryview has no element 0 to point at; no feature is never read
    cdef double dummy = 0.0
    cdef const double* a_ptr = &A[0, 0] if d else &dummy
    cdef const double* b_ptr = &Bt[0, 0] if d else &dummy
    with nogil:
        status = symk_block(n, d, a_ptr, &a_sq[0], b_ptr, Bt.strides[0] // sizeof(double),
                            m, &b_sq[0], kind, gamma, coef0, degree, &out[0, 0])
    if status != 0:
        raise MemoryError("symmetric_kernel_block: cannot allocate the packed operands")
    if kind == 1:
        np.exp(out_arr, out=out_arr)
    return out_arr


def row_sq_norms(const double[:, ::1] X):
    """``sum_k X[i, k]^2`` of every row, in feature order (as :func:`symmetric_kernel_block`
    sums an inner product, so that a sample's distance to itself is exactly 0)."""
    cdef Py_ssize_t i, k, n = X.shape[0], d = X.shape[1]
    out_arr = np.empty(n)
    cdef double[::1] out = out_arr
    cdef double s
    with nogil:
        for i in range(n):
            s = 0.0
            for k in range(d):
                s = s + X[i, k] * X[i, k]
            out[i] = s
    return out_arr


def symmetric_kernel_diag(const double[::1] sq, int kind, double gamma, double coef0,
                          double degree):
    """The values :func:`symmetric_kernel_block` gives a sample with itself, from its
    squared norm (of :func:`row_sq_norms`): bit for bit the diagonal of its blocks."""
    cdef Py_ssize_t i, n = sq.shape[0]
    out_arr = np.empty(n)
    cdef double[::1] out = out_arr
    cdef double dist
    with nogil:
        for i in range(n):
            if kind == 0:
                out[i] = sq[i]
            elif kind == 1:  # the exponent; its exponential below, as in the blocks
                dist = (sq[i] + sq[i]) - 2.0 * sq[i]
                out[i] = -gamma * (dist if dist > 0.0 else 0.0)
            else:
                out[i] = pow(gamma * sq[i] + coef0, degree)
    if kind == 1:
        np.exp(out_arr, out=out_arr)
    return out_arr
