"""Compiled kernels of the box-QP problem: per-sample duality gaps, kernel-row sums and
compensated (twice-the-working-precision) matrix-vector products.

The loops over samples run on OpenMP threads (``prange``; one thread in a build without
OpenMP). Each splits its *output elements* among the threads, never a sum: an element's
value is computed by one thread, in the order of the one-thread loop, so every result is
the same bit for bit whatever the number of threads. ``n_threads``: 0 (the default)
takes :func:`~sklearn_safescreen._utils.openmp.current_n_threads` when the work is large
enough to pay for waking the threads, and one thread below that; a positive count is
used as given (the tests compare 1 and 2 threads on small inputs)."""

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport fabs, pow
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memmove

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._utils.openmp import current_n_threads

ctypedef fused int32_or_64:
    int32_t
    int64_t

cdef extern from "sklearn_safescreen/_utils/_vec.h" nogil:
    void ss_axpy(int n, double a, const double* x, double* y)

#: Below this many floating-point operations a loop runs on one thread: a parallel
#: region has a fixed cost (waking the threads and joining them), much larger when
#: other processes hold the cores (a thread the system has descheduled holds up the
#: join), which below this much work outweighs the share of the work the other threads
#: take. Set for a shared machine rather than an idle one: there the loss is a few tens
#: of microseconds, here several times the loop's own time (the compensated margins of
#: a one-vs-one pair's certificate, for one). The results do not depend on it.
cdef enum:
    PARALLEL_MIN_WORK = 1048576

#: Floating-point operations of one compensated (Dot2) step: TwoProduct, TwoSum and the
#: sums of the errors and of the absolute values.
cdef double DOT2_FLOPS = 12.0

#: Output columns per task of the column-split loops: the accumulators of a block
#: stay in the first-level cache across the rows summed into them (as in _dot2.h).
cdef enum:
    COLUMN_BLOCK = 1024


cdef int _n_threads(double work, int n_threads) except -1:
    """The threads of a loop of ``work`` floating-point operations (see the module's
    docstring)."""
    if n_threads > 0:
        return n_threads
    if n_threads < 0:
        raise ValueError("n_threads must be 0 (automatic) or positive")
    if work < PARALLEL_MIN_WORK:
        return 1
    return current_n_threads()


def gap_terms(const double[::1] q, const double[::1] p, const double[::1] lo,
              const double[::1] hi, const double[::1] alpha, const int64_t[::1] rows,
              int n_threads=0):
    """Per-sample duality gap ``max(-lo g, -hi g) + alpha g``, ``g = q - p``, of
    ``rows`` (``q`` holds their margins), without gathering the other arrays."""
    cdef Py_ssize_t k, i, m = rows.shape[0]
    cdef double g
    cdef int nt = _n_threads(4.0 * m, n_threads)
    out = np.empty(m)
    cdef double[::1] o = out
    with nogil:
        for k in prange(m, num_threads=nt, schedule="static"):  # equal elements
            i = rows[k]
            g = q[k] - p[i]
            o[k] = max(-lo[i] * g, -hi[i] * g) + alpha[i] * g
    return out


def add_rows(double[::1] g, const double[:, ::1] A, const int64_t[::1] rows,
             const double[::1] coef, int n_threads=0):
    """``g += coef @ A[rows]`` in place, without copying the rows, skipping zero
    coefficients (``A[rows]`` would be a copy of ``8 len(rows) A.shape[1]`` bytes).

    Each element of ``g`` gets the rows' products in the order of ``rows``, each
    product rounded and then added (this module is compiled without contraction into
    FMAs), in column blocks split among the threads."""
    cdef Py_ssize_t n = g.shape[0], m = rows.shape[0], k, b, j0, length
    cdef Py_ssize_t n_blocks = (n + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    if A.shape[1] != n or coef.shape[0] != m:
        raise ValueError("add_rows: shapes do not match")
    if n == 0 or m == 0:
        return
    cdef int nt = _n_threads(2.0 * n * m, n_threads)
    with nogil:
        # dynamic: the blocks are equal, the cores of a shared machine may not be
        for b in prange(n_blocks, num_threads=nt, schedule="dynamic"):
            j0 = b * COLUMN_BLOCK
            length = min(COLUMN_BLOCK, n - j0)
            for k in range(m):
                if coef[k] != 0.0:
                    ss_axpy(<int>length, coef[k], &A[rows[k], j0], &g[j0])


def gap_error_terms(const double[::1] q, const double[::1] p, const double[::1] lo,
                    const double[::1] hi, const double[::1] alpha,
                    const double[::1] margin_error, double unit_roundoff):
    """The two sums of ``BoxQP.gap_error`` in one pass: the margins' errors weighted by
    the slope of each gap term, and the terms' own rounding (see there)."""
    cdef Py_ssize_t i, n = q.shape[0]
    cdef double g, e, up, down, slope, weighted = 0.0, rounding = 0.0
    if (p.shape[0] != n or lo.shape[0] != n or hi.shape[0] != n or alpha.shape[0] != n
            or margin_error.shape[0] != n):
        raise ValueError("gap_error_terms: shapes do not match")
    with nogil:
        for i in range(n):
            g = q[i] - p[i]
            e = margin_error[i] + unit_roundoff * fabs(g)
            up = fabs(alpha[i] - lo[i])
            down = fabs(hi[i] - alpha[i])
            if g - e >= 0.0:
                slope = up
            elif g + e <= 0.0:
                slope = down
            else:
                slope = max(up, down)
            weighted += slope * e
            if not ((alpha[i] == lo[i] and g >= 0.0) or (alpha[i] == hi[i] and g <= 0.0)):
                rounding += 4.0 * unit_roundoff * fabs(g) * (
                    max(fabs(lo[i]), fabs(hi[i])) + fabs(alpha[i]))
    return weighted, rounding


# ------------------------------------------------- compensated (Dot2) margins ---
# Ogita, Rump & Oishi (2005), "Accurate sum and dot product", Algorithm Dot2 (in
# _dot2.h, built per instruction set): the result is as accurate as if computed in twice
# the working precision, |res - a'b| <= u|a'b| + gamma_n^2 |a|'|b| (their Proposition
# 5.5, u = 2^-53, gamma_n = nu/(1-nu)). This module is compiled with -ffp-contract=off
# (setup.py), so that the compiler cannot fuse a product into the following sum, which
# would break the exactness of the error-free transformations.

cdef extern from "sklearn_safescreen/problems/_dot2.h" nogil:
    void d2_axpy(Py_ssize_t n, double a, const double* x, double* s, double* c,
                 double* ab)
    void d2_dot(Py_ssize_t n, const double* x, const double* y, double* out,
                double* out_abs)
    void d2_dot_gather_i32(Py_ssize_t n, const double* vals, const int32_t* idx,
                           const double* w, double* out, double* out_abs)
    void d2_dot_gather_i64(Py_ssize_t n, const double* vals, const int64_t* idx,
                           const double* w, double* out, double* out_abs)
    void d2_scatter_i32(Py_ssize_t n, double a, const double* vals, const int32_t* idx,
                        double* s, double* c, double* ab)
    void d2_scatter_i64(Py_ssize_t n, double a, const double* vals, const int64_t* idx,
                        double* s, double* c, double* ab)


def dot2_dense(const double[:, ::1] X, const double[::1] coef, int n_threads=0):
    """Compensated ``X' coef`` (length ``X.shape[1]``) and ``|X|' |coef|``, the latter
    in plain arithmetic (an error bound's ingredient)."""
    cdef Py_ssize_t i, k, n = X.shape[0], d = X.shape[1]
    if coef.shape[0] != n:
        raise ValueError("dot2_dense: shapes do not match")
    s_arr, c_arr, a_arr = np.zeros(d), np.zeros(d), np.zeros(d)
    if d == 0:
        return s_arr, a_arr
    cdef double[::1] s = s_arr, c = c_arr, ab = a_arr
    _dot2_columns(&X[0, 0] if n else NULL, d, NULL, n, &coef[0] if n else NULL, d,
                  &s[0], &c[0], &ab[0], _n_threads(DOT2_FLOPS * n * d, n_threads))
    with nogil:
        for k in range(d):
            s[k] = s[k] + c[k]
    return s_arr, a_arr


def dot2_rows(const double[:, ::1] X, const double[::1] w, int n_threads=0):
    """Compensated ``X w`` (one Dot2 per row, over the features in order) and
    ``|X| |w|``.

    One row's Dot2 is a chain of dependent operations; blocks of rows are transposed
    into a buffer instead, so that a feature's values over the rows of a block form one
    vectorised compensated update: the same terms in the same order per row, so the
    same values, with the rows' independent chains side by side in the vector lanes
    instead of one chain waiting on each operation's latency. The blocks are split among
    the threads, each
    with its own buffer."""
    cdef Py_ssize_t i, i0, k, m, b, n = X.shape[0], d = X.shape[1]
    if w.shape[0] != d:
        raise ValueError("dot2_rows: shapes do not match")
    out, a_arr, c_arr = np.zeros(n), np.zeros(n), np.zeros(n)
    if d == 0 or n == 0:
        return out, a_arr
    # a block of rows, transposed, takes at most about 1 MB
    cdef Py_ssize_t block = max(8, min(256, (1 << 17) // d))
    cdef Py_ssize_t n_blocks = (n + block - 1) // block
    cdef int nt = _n_threads(DOT2_FLOPS * n * d, n_threads)
    buf = np.empty(nt * block * d)
    cdef double[::1] o = out, ab = a_arr, c = c_arr, t_all = buf
    cdef double* t
    with nogil, parallel(num_threads=nt):
        t = &t_all[threadid() * block * d]
        for b in prange(n_blocks, schedule="dynamic"):  # dynamic: shared cores
            i0 = b * block
            m = min(block, n - i0)
            for i in range(m):
                for k in range(d):
                    t[k * m + i] = X[i0 + i, k]
            for k in range(d):
                if w[k] != 0.0:
                    d2_axpy(m, w[k], &t[k * m], &o[i0], &c[i0], &ab[i0])
            for i in range(i0, i0 + m):
                o[i] = o[i] + c[i]
    return out, a_arr


def dot2_csr(const double[::1] data, const int32_or_64[::1] indices,
             const int32_or_64[::1] indptr, const double[::1] w, int n_threads=0):
    """Compensated ``X w`` of a CSR matrix and ``|X| |w|`` (rows split among the
    threads)."""
    cdef Py_ssize_t i, start, n = indptr.shape[0] - 1
    out, a_arr = np.zeros(n), np.zeros(n)
    cdef double[::1] o = out, ab = a_arr
    cdef int nt = _n_threads(DOT2_FLOPS * (indptr[n] - indptr[0]) if n > 0 else 0.0,
                             n_threads)
    with nogil:
        # dynamic, in chunks: the rows' lengths differ
        for i in prange(n, num_threads=nt, schedule="dynamic", chunksize=256):
            start = indptr[i]
            if indptr[i + 1] == start:
                continue
            if int32_or_64 is int32_t:
                d2_dot_gather_i32(indptr[i + 1] - start, &data[start], &indices[start],
                                  &w[0], &o[i], &ab[i])
            else:
                d2_dot_gather_i64(indptr[i + 1] - start, &data[start], &indices[start],
                                  &w[0], &o[i], &ab[i])
    return out, a_arr


def dot2_csr_transpose(const double[::1] data, const int32_or_64[::1] indices,
                       const int32_or_64[::1] indptr, Py_ssize_t n_features,
                       const double[::1] coef):
    """Compensated ``X' coef`` of a CSR matrix and ``|X|' |coef|``."""
    cdef Py_ssize_t i, j, start, n = indptr.shape[0] - 1
    if coef.shape[0] != n:
        raise ValueError("dot2_csr_transpose: shapes do not match")
    s_arr, c_arr, a_arr = np.zeros(n_features), np.zeros(n_features), np.zeros(n_features)
    if n_features == 0:
        return s_arr, a_arr
    cdef double[::1] s = s_arr, c = c_arr, ab = a_arr
    with nogil:
        for i in range(n):
            start = indptr[i]
            if coef[i] == 0.0 or indptr[i + 1] == start:
                continue
            if int32_or_64 is int32_t:
                d2_scatter_i32(indptr[i + 1] - start, coef[i], &data[start],
                               &indices[start], &s[0], &c[0], &ab[0])
            else:
                d2_scatter_i64(indptr[i + 1] - start, coef[i], &data[start],
                               &indices[start], &s[0], &c[0], &ab[0])
        for j in range(n_features):
            s[j] = s[j] + c[j]
    return s_arr, a_arr


def dot2_accumulate(double[::1] s, double[::1] c, double[::1] ab,
                    const double[:, ::1] block, const double[::1] coef, int n_threads=0):
    """``(s, c) += block' coef`` with Dot2 accumulators (``s`` the sums, ``c`` their
    compensations, both of length ``block.shape[1]``) and ``ab += |block|' |coef|``:
    a kernel matrix-vector product accumulated block by block."""
    cdef Py_ssize_t k, m = block.shape[0], n = block.shape[1]
    if coef.shape[0] != m or s.shape[0] != n or c.shape[0] != n or ab.shape[0] != n:
        raise ValueError("dot2_accumulate: shapes do not match")
    if n == 0 or m == 0:
        return
    _dot2_columns(&block[0, 0], n, NULL, m, &coef[0], n, &s[0], &c[0], &ab[0],
                  _n_threads(DOT2_FLOPS * n * m, n_threads))


def dot2_add_rows(double[::1] s, double[::1] c, double[::1] ab, const double[:, ::1] A,
                  const int64_t[::1] rows, const double[::1] coef, int n_threads=0):
    """``(s, c) += coef' A[rows]`` with Dot2 accumulators and ``ab += |coef|' |A[rows]|``,
    reading the rows in place (the kernel row cache), in column blocks."""
    cdef Py_ssize_t k, n = A.shape[1], m = rows.shape[0]
    if coef.shape[0] != m or s.shape[0] != n or c.shape[0] != n or ab.shape[0] != n:
        raise ValueError("dot2_add_rows: shapes do not match")
    for k in range(m):
        if rows[k] < 0 or rows[k] >= A.shape[0]:
            raise ValueError("dot2_add_rows: a row index is out of range")
    if n == 0 or m == 0:
        return
    _dot2_columns(&A[0, 0], n, &rows[0], m, &coef[0], n, &s[0], &c[0], &ab[0],
                  _n_threads(DOT2_FLOPS * n * m, n_threads))


cdef void _dot2_columns(const double* A, Py_ssize_t ld, const int64_t* rows, Py_ssize_t m,
                        const double* coef, Py_ssize_t n, double* s, double* c, double* ab,
                        int nt) noexcept:
    """``(s, c) += coef' A[rows]`` (``rows`` NULL: the first ``m`` rows) and
    ``ab += |coef|' |A[rows]|`` over ``n`` columns: blocks of columns split among the
    threads, every element summed over the rows in their order, as on one thread."""
    cdef Py_ssize_t b, j0, length, n_blocks = (n + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    cdef Py_ssize_t k, row
    with nogil:
        # dynamic: the blocks are equal, the cores of a shared machine may not be
        for b in prange(n_blocks, num_threads=nt, schedule="dynamic"):
            j0 = b * COLUMN_BLOCK
            length = min(COLUMN_BLOCK, n - j0)
            for k in range(m):
                if coef[k] != 0.0:
                    row = k if rows == NULL else rows[k]
                    d2_axpy(length, coef[k], A + row * ld + j0, s + j0, c + j0, ab + j0)


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
                   int kind, double gamma, double coef0, double degree, double* out,
                   Py_ssize_t ldo)

#: Sub-blocks per thread of a parallel kernel block (load balance on shared cores),
#: and their least width (columns) or height (rows, a multiple of the tiles' 4 and 6
#: rows): the operand a sub-block packs is then small beside its arithmetic.
cdef enum:
    KERNEL_PARTS_PER_THREAD = 4
    KERNEL_MIN_COLUMNS = 256
    KERNEL_MIN_ROWS = 48


def symmetric_kernel_block(const double[:, ::1] A, const double[::1] a_sq,
                           const double[:, ::1] Bt, const double[::1] b_sq, int kind,
                           double gamma, double coef0, double degree, int n_threads=0,
                           out=None):
    """Kernel values between the rows of ``A`` and the columns of ``Bt`` (the other
    samples, transposed), each a symmetric function of its pair of samples.

    ``kind``: 0 linear ``<a, b>``, 1 RBF ``exp(-gamma max(|a|^2 + |b|^2 - 2<a, b>, 0))``
    with the squared norms ``a_sq``, ``b_sq`` of :func:`row_sq_norms`, 2 polynomial
    ``(gamma <a, b> + coef0)^degree``. Every inner product is
    ``sum_k A[i, k] * Bt[k, j]`` summed in feature order from 0.0, each product rounded
    on its own (the plain sequential loop, bit for bit); the RBF's exponential is
    NumPy's, over the whole block, as in :func:`symmetric_kernel_diag`.

    On several threads the block is split into sub-blocks of whole columns (or of whole
    rows when it is narrow), each computed by one call of the same routine: every value
    is computed alone, so a sub-block holds the values of the whole block.

    ``out``: a C-contiguous float64 array of shape ``(len(A), Bt.shape[1])`` to write
    the block into (returned), instead of a new one.
    """
    cdef Py_ssize_t n = A.shape[0], m = Bt.shape[1], d = A.shape[1]
    cdef Py_ssize_t part, n_parts, size, lo, hi, r0, r1, c0, c1
    cdef int failed = 0, nt, by_columns
    if Bt.shape[0] != d or a_sq.shape[0] != n or b_sq.shape[0] != m:
        raise ValueError("symmetric_kernel_block: shapes do not match")
    if kind not in (0, 1, 2):
        raise ValueError(f"symmetric_kernel_block: unknown kernel code {kind}")
    if out is None:
        out_arr = np.empty((n, m))
    else:
        out_arr = out
        if (out_arr.shape != (n, m) or out_arr.dtype != np.float64
                or not out_arr.flags.c_contiguous):
            raise ValueError("symmetric_kernel_block: out must be a C-contiguous float64 "
                             f"array of shape {(n, m)}")
    if n == 0 or m == 0:
        return out_arr
    cdef double[:, ::1] out_view = out_arr
    # a zero-width memoryview has no element 0 to point at; no feature is never read
    cdef double dummy = 0.0
    cdef const double* a_ptr = &A[0, 0] if d else &dummy
    cdef const double* b_ptr = &Bt[0, 0] if d else &dummy
    cdef Py_ssize_t ldb = Bt.strides[0] // sizeof(double), sd = d
    nt = _n_threads(2.0 * n * m * (d + 4), n_threads)
    by_columns = m >= 2 * KERNEL_MIN_COLUMNS * nt or m >= n
    if by_columns:
        size = _round_up(max(KERNEL_MIN_COLUMNS, m // (nt * KERNEL_PARTS_PER_THREAD)), 64)
        n_parts = (m + size - 1) // size
    else:
        size = _round_up(max(KERNEL_MIN_ROWS, n // (nt * KERNEL_PARTS_PER_THREAD)), 12)
        n_parts = (n + size - 1) // size
    if n_parts < nt:
        nt = <int>max(n_parts, 1)
    with nogil:
        # dynamic: the sub-blocks are equal, the cores of a shared machine may not be
        for part in prange(n_parts, num_threads=nt, schedule="dynamic"):
            if by_columns:
                r0 = 0
                r1 = n
                c0 = part * size
                c1 = min(m, c0 + size)
            else:
                r0 = part * size
                r1 = min(n, r0 + size)
                c0 = 0
                c1 = m
            if symk_block(r1 - r0, d, a_ptr + r0 * sd, &a_sq[r0], b_ptr + c0, ldb, c1 - c0,
                          &b_sq[c0], kind, gamma, coef0, degree, &out_view[r0, c0], m) != 0:
                failed += 1
    if failed:
        raise MemoryError("symmetric_kernel_block: cannot allocate the packed operands")
    if kind == 1:
        # NumPy's vectorised exponential (whole vectors of values per instruction where
        # the C library's exp computes one value per call)
        _exp_in_place(out_arr.reshape(-1), nt)
    return out_arr


#: Fewest values whose exponential is shared among threads: handing a part to another
#: thread (a task submitted to the pool and its result waited for) has a fixed cost,
#: which below this many values is a large share of the time the part saves.
EXP_PARALLEL_MIN = 1 << 18

_exp_pool = None
_exp_pool_lock = threading.Lock()


def _exp_in_place(flat, int nt):
    """``flat = exp(flat)`` (a contiguous 1-d array), in ``nt`` contiguous parts on as
    many threads when it is large. NumPy releases the GIL inside the loop and computes
    every value on its own, so the parts give the values of one call, bit for bit."""
    global _exp_pool
    cdef Py_ssize_t size = flat.shape[0], k, step
    if nt <= 1 or size < EXP_PARALLEL_MIN:
        np.exp(flat, out=flat)
        return
    with _exp_pool_lock:
        if _exp_pool is None or _exp_pool._max_workers < nt - 1:
            _exp_pool = ThreadPoolExecutor(max_workers=nt - 1,
                                           thread_name_prefix="safescreen-exp")
        pool = _exp_pool
    step = (size + nt - 1) // nt
    parts = [flat[k:k + step] for k in range(step, size, step)]
    futures = [pool.submit(np.exp, part, out=part) for part in parts]
    head = flat[:step]
    np.exp(head, out=head)
    for future in futures:
        future.result()


cdef inline Py_ssize_t _round_up(Py_ssize_t x, Py_ssize_t multiple) noexcept nogil:
    return (x + multiple - 1) // multiple * multiple


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


def compact_rows(double[::1] buf, const int64_t[::1] src_rows, Py_ssize_t m_old,
                 const int64_t[::1] cols):
    """In place, narrower rows: ``buf[k m + j] = buf[src_rows[k] m_old + cols[j]]``
    (``m = cols.size``) for ``k = 0, 1, ...`` in order.

    With ``src_rows`` and ``cols`` strictly increasing every write lands at or before
    every value still to be read (``k m + j <= src_rows[k] m_old + cols[j]``), so one
    forward pass needs no second buffer: a row cache narrowed in place, without the
    fresh allocation whose first touch cost as much as the copy (page faults)."""
    cdef Py_ssize_t k, j, n = src_rows.shape[0], m = cols.shape[0], s, d
    for k in range(n):
        if src_rows[k] < 0 or (k and src_rows[k] <= src_rows[k - 1]):
            raise ValueError("compact_rows: source rows must increase strictly")
    for j in range(m):
        if cols[j] < 0 or cols[j] >= m_old or (j and cols[j] <= cols[j - 1]):
            raise ValueError("compact_rows: columns must increase strictly within a row")
    if n and (src_rows[n - 1] + 1) * m_old > buf.shape[0]:
        raise IndexError("compact_rows: row out of range")
    with nogil:
        for k in range(n):
            s = src_rows[k] * m_old
            d = k * m
            for j in range(m):
                buf[d + j] = buf[s + cols[j]]


def spread_rows(double[::1] buf, const int64_t[::1] src_rows, Py_ssize_t m_old,
                Py_ssize_t m_new):
    """In place, wider rows: the ``m_old`` values at ``src_rows[k] m_old`` move to
    ``k m_new`` (``m_new >= m_old``; the columns beyond ``m_old`` are left to the caller).

    ``src_rows`` strictly increasing: the rows that move down are moved first, in
    increasing order, then those that move up, in decreasing order; then no move
    overwrites a row still to be moved (each move itself a ``memmove``)."""
    cdef Py_ssize_t k, n = src_rows.shape[0]
    if m_new < m_old or m_old < 0:
        raise ValueError("spread_rows: rows must not narrow")
    for k in range(n):
        if src_rows[k] < 0 or (k and src_rows[k] <= src_rows[k - 1]):
            raise ValueError("spread_rows: source rows must increase strictly")
    if n and ((src_rows[n - 1] + 1) * m_old > buf.shape[0]
              or (n - 1) * m_new + m_old > buf.shape[0]):
        raise IndexError("spread_rows: row out of range")
    if n == 0 or m_old == 0:
        return
    cdef double* base = &buf[0]
    with nogil:
        for k in range(n):
            if k * m_new <= src_rows[k] * m_old:
                memmove(base + k * m_new, base + src_rows[k] * m_old, m_old * sizeof(double))
        for k in range(n - 1, -1, -1):
            if k * m_new > src_rows[k] * m_old:
                memmove(base + k * m_new, base + src_rows[k] * m_old, m_old * sizeof(double))


def gather_signed_rows(double[:, ::1] dst, const int64_t[::1] dst_rows,
                       const double[:, ::1] src, const int64_t[::1] src_rows,
                       const int64_t[::1] cols, const double[::1] sign_rows,
                       const double[::1] sign_cols, int n_threads=0):
    """``dst[dst_rows[k], j] = src[src_rows[k], cols[j]] * sign_rows[k] * sign_cols[j]``
    for every ``k`` and ``j``, in one pass (``cols`` empty: every column of ``src`` in
    order, which must then have ``dst``'s width).

    What a row cache of signed kernel rows did with a gather (``np.ix_``), two sign
    passes and a fancy assignment, each a copy of the rows: the products are those of
    that code (multiplications by +1 or -1, exact). Rows split among the threads."""
    cdef Py_ssize_t k, j, r, s, m = dst.shape[1], n_rows = dst_rows.shape[0]
    cdef bint every = cols.shape[0] == 0
    cdef double sr
    if (src_rows.shape[0] != n_rows or sign_rows.shape[0] != n_rows
            or sign_cols.shape[0] != m
            or (every and src.shape[1] != m) or (not every and cols.shape[0] != m)):
        raise ValueError("gather_signed_rows: shapes do not match")
    for k in range(n_rows):
        if not (0 <= dst_rows[k] < dst.shape[0] and 0 <= src_rows[k] < src.shape[0]):
            raise IndexError("gather_signed_rows: row out of range")
    if not every and m and (np.min(cols) < 0 or np.max(cols) >= src.shape[1]):
        raise IndexError("gather_signed_rows: column out of range")
    if n_rows == 0 or m == 0:
        return
    cdef int nt = _n_threads(1.0 * n_rows * m, n_threads)
    with nogil:
        for k in prange(n_rows, num_threads=nt, schedule="static"):
            r = dst_rows[k]
            s = src_rows[k]
            sr = sign_rows[k]
            if every:
                for j in range(m):
                    dst[r, j] = src[s, j] * sr * sign_cols[j]
            else:
                for j in range(m):
                    dst[r, j] = src[s, cols[j]] * sr * sign_cols[j]
