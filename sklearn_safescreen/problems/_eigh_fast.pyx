r"""Compiled small symmetric eigensolver and the PSD/NSD parts built from it.

Used by the triplet problem's kernels (``_triplet_fast.pyx``), the rule kernels
(``screening/_triplet_fast.pyx``) and the solver loop (``solvers/_spg_fast.pyx``), which
call the ``cdef`` versions declared in ``_eigh_fast.pxd`` without the GIL; the ``def``
functions are their Python faces.

Householder tridiagonalisation and implicit QL (EISPACK ``tred2``/``tql2``) for
d <= ``SMALL_EIGH``: at the sizes of the projection and of the gap, LAPACK's drivers
spend more on their fixed costs (argument checks, workspace, code paths blocked for
large matrices) than on the arithmetic, while LAPACK's blocked reductions win once the
matrix is large (``benchmarks/bench_eigh.py``; the crossover is in
``doc/benchmarks.md``, "Small symmetric eigendecomposition (SafeMetricLearner's
projection)"); LAPACK's ``dsyevd`` above, or if QL does not converge. Only
orthogonality of the eigenvectors matters for safety: a PSD part is rebuilt from the
kept eigenpairs, so it is PSD whatever the accuracy, and the duality gap uses
:math:`\Gamma=-S_-` built the same way (negative semidefinite by construction), which
keeps it a valid upper bound.
"""

from libc.math cimport fabs, floor, isfinite, log2, pow, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from scipy.linalg.cython_lapack cimport dsyevd, dsyevr


cdef extern from "sklearn_safescreen/_utils/_vec.h" nogil:
    void ss_axpy(int n, double a, const double* x, double* y)
    void ss_rot(int n, double c, double s, double* x, double* y)

import numpy as np

cdef enum:
    # Largest dimension handled by the compiled QL eigensolver (LAPACK above): where
    # LAPACK's blocked reductions start to pay (doc/benchmarks.md, "Small symmetric
    # eigendecomposition (SafeMetricLearner's projection)").
    SMALL_EIGH = 32


cdef bint _tql2(int n, double* W, double* d, double* e) noexcept nogil:
    """Eigenpairs of the symmetric matrix held in ``W`` (overwritten by the eigenvectors,
    one per row; eigenvalues into ``d``, unsorted). EISPACK tred2 + tql2 (as in JAMA),
    on the transposed storage so that rotations and reflections run along contiguous
    rows. Returns whether QL converged."""
    cdef int i, j, k, l, m, it
    cdef double scale, h, f, g, hh, p, r, dl1, c, c2, c3, el1, s, s2, tst1, eps
    cdef bint converged = True
    for j in range(n):
        d[j] = W[j * n + n - 1]
    # Householder reduction to tridiagonal form
    for i in range(n - 1, 0, -1):
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += fabs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = W[j * n + i - 1]
                W[j * n + i] = 0.0
                W[i * n + j] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = sqrt(h)
            if f > 0:
                g = -g
            e[i] = scale * g
            h = h - f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                W[i * n + j] = f
                g = e[j] + W[j * n + j] * f
                for k in range(j + 1, i):
                    g += W[j * n + k] * d[k]
                    e[k] += W[j * n + k] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    W[j * n + k] -= f * e[k] + g * d[k]
                d[j] = W[j * n + i - 1]
                W[j * n + i] = 0.0
        d[i] = h
    # accumulate the transformations
    for i in range(n - 1):
        W[i * n + n - 1] = W[i * n + i]
        W[i * n + i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = W[(i + 1) * n + k] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += W[(i + 1) * n + k] * W[j * n + k]
                for k in range(i + 1):
                    W[j * n + k] -= g * d[k]
        for k in range(i + 1):
            W[(i + 1) * n + k] = 0.0
    for j in range(n):
        d[j] = W[j * n + n - 1]
        W[j * n + n - 1] = 0.0
    W[(n - 1) * n + n - 1] = 1.0
    # implicit QL on the tridiagonal matrix
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    tst1 = 0.0
    eps = pow(2.0, -52.0)
    for l in range(n):
        tst1 = max(tst1, fabs(d[l]) + fabs(e[l]))
        m = l
        while m < n - 1:
            if fabs(e[m]) <= eps * tst1:
                break
            m += 1
        if m > l:
            it = 0
            while True:
                it += 1
                g = d[l]
                p = (d[l + 1] - g) / (2.0 * e[l])
                r = sqrt(p * p + 1.0)
                if p < 0:
                    r = -r
                d[l] = e[l] / (p + r)
                d[l + 1] = e[l] * (p + r)
                dl1 = d[l + 1]
                h = g - d[l]
                for i in range(l + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = 1.0
                c2 = c
                c3 = c
                el1 = e[l + 1]
                s = 0.0
                s2 = 0.0
                for i in range(m - 1, l - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = sqrt(p * p + e[i] * e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    ss_rot(n, c, s, &W[(i + 1) * n], &W[i * n])
                p = -s * s2 * c3 * el1 * e[l] / dl1
                e[l] = s * p
                d[l] = c * p
                if not fabs(e[l]) > eps * tst1:
                    break
                if it >= 60:
                    converged = False
                    break
        d[l] = d[l] + f
        e[l] = 0.0
    return converged


cdef int eigh_workspace(int d) noexcept nogil:
    """Doubles of workspace :func:`eigh_rows_c` needs."""
    return 3 * d * d + 8 * d + 1


cdef bint _eigh_lapack(int n, double* W, double* w, double* work) noexcept nogil:
    """LAPACK dsyevd on the symmetric matrix in ``W`` (its eigenvectors overwrite it:
    LAPACK's columns are the rows of the row-major buffer); eigenvalues ascending."""
    cdef char jobz = b"V", uplo = b"U"
    cdef int lwork = 1 + 6 * n + 2 * n * n, liwork = 3 + 5 * n, info = 0
    cdef int* iwork = <int*>malloc(liwork * sizeof(int))
    if iwork == NULL:
        return False
    dsyevd(&jobz, &uplo, &n, W, &n, w, work, &lwork, iwork, &liwork, &info)
    free(iwork)
    return info == 0


cdef bint _eigh_unscaled(const double* A, int n, double* w, double* W,
                         double* work) noexcept nogil:
    cdef int i
    cdef bint ok
    memcpy(W, A, n * n * sizeof(double))
    if n <= SMALL_EIGH:
        ok = _tql2(n, W, w, work)  # (work: the off-diagonal)
        if ok:
            for i in range(n):
                if not isfinite(w[i]):
                    ok = False
            if ok:
                return True
        memcpy(W, A, n * n * sizeof(double))
    return _eigh_lapack(n, W, w, work)


cdef bint eigh_rows_c(const double* A, int d, double* w, double* W,
                      double* work) noexcept nogil:
    """Eigenvalues ``w`` and eigenvectors (the rows of ``W``, in no particular order) of
    the symmetric ``A`` (d x d). Entries far from 1 in magnitude (below 2**-500 or above
    2**500, e.g. the closed form at a huge alpha) are first scaled by a power of two
    (exact), as LAPACK's drivers do: the rotations square them. ``work`` holds
    :func:`eigh_workspace` doubles."""
    cdef int i, n2 = d * d
    cdef double amax = 0.0, ex, up, down
    cdef double* scaled
    cdef bint ok
    for i in range(n2):
        amax = max(amax, fabs(A[i]))
    if amax == 0.0:
        memset(W, 0, n2 * sizeof(double))
        for i in range(d):
            w[i] = 0.0
            W[i * d + i] = 1.0
        return True
    if isfinite(amax) and (amax < pow(2.0, -500.0) or amax > pow(2.0, 500.0)):
        ex = -floor(log2(amax))  # |ex| <= 1075: two factors keep 2**ex finite
        up = pow(2.0, floor(ex / 2))
        down = pow(2.0, ex - floor(ex / 2))
        scaled = work + 2 * d * d + 8 * d  # (the last d*d + 1 of the workspace)
        for i in range(n2):
            scaled[i] = (A[i] * up) * down
        ok = _eigh_unscaled(scaled, d, w, W, work)
        for i in range(d):
            w[i] = (w[i] / up) / down
        return ok
    return _eigh_unscaled(A, d, w, W, work)


cdef double signed_sum_c(const double* w, const double* W, int d, double sign,
                         double* P) noexcept nogil:
    r""":math:`\sum_kw_kv_kv_k^\top` over the eigenpairs (rows ``v_k`` of ``W``) of
    positive (``sign > 0``) or negative eigenvalue, into ``P``; returns the sum of the
    others' squares. Built from the kept rank-one terms alone: PSD (NSD) whatever the
    eigenvectors' accuracy."""
    cdef int k, r, c
    cdef double other = 0.0
    cdef bint keep
    memset(P, 0, d * d * sizeof(double))
    for k in range(d):
        keep = (w[k] > 0.0) if sign > 0 else (w[k] < 0.0)
        if not keep:
            other += w[k] * w[k]
            continue
        for r in range(d):
            ss_axpy(d - r, w[k] * W[k * d + r], &W[k * d + r], &P[r * d + r])
    for r in range(d):
        for c in range(r + 1, d):
            P[c * d + r] = P[r * d + c]
    return other


cdef double sym_part_c(const double* A, int d, double sign, double* P,
                       double* work) noexcept nogil:
    """:math:`B_+` (``sign > 0``) or :math:`B_-` of :math:`B=(A+A^\\top)/2` into ``P``
    from one eigendecomposition; returns :math:`\\|\\cdot\\|_F^2` of the other part.
    ``work``: ``2 d^2 + d`` doubles plus :func:`eigh_workspace`."""
    cdef int r, c
    cdef double* B = work
    cdef double* w = work + d * d
    cdef double* W = work + d * d + d
    for r in range(d):
        for c in range(d):
            B[r * d + c] = 0.5 * (A[r * d + c] + A[c * d + r])
    eigh_rows_c(B, d, w, W, work + 2 * d * d + d)
    return signed_sum_c(w, W, d, sign, P)


cdef void psd_parts_c(const double* A, int d, double* Pp, double* Pn,
                      double* work) noexcept nogil:
    """:math:`B_+` and :math:`B_-` of :math:`B=(A+A^\\top)/2` from one
    eigendecomposition (``work`` as :func:`sym_part_c`)."""
    cdef int r, c
    cdef double* B = work
    cdef double* w = work + d * d
    cdef double* W = work + d * d + d
    for r in range(d):
        for c in range(d):
            B[r * d + c] = 0.5 * (A[r * d + c] + A[c * d + r])
    eigh_rows_c(B, d, w, W, work + 2 * d * d + d)
    signed_sum_c(w, W, d, 1.0, Pp)
    signed_sum_c(w, W, d, -1.0, Pn)


cdef int sym_workspace(int d) noexcept nogil:
    """Doubles of workspace :func:`sym_part_c` and :func:`psd_parts_c` need."""
    return 2 * d * d + d + eigh_workspace(d)



# ------------------------------------------------------------- Python faces ---
def _square(A):
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected a square matrix; got shape {A.shape}")
    return A


def eigh_rows(A):
    """Eigenvalues and eigenvectors (as the ROWS of the second output, in no
    particular order) of the symmetric matrix ``A``."""
    cdef double[:, ::1] a = _square(A)
    cdef int d = a.shape[0]
    w = np.empty(d)
    W = np.empty((d, d))
    cdef double[::1] wv = w
    cdef double[:, ::1] Wv = W
    cdef double[::1] work = np.empty(eigh_workspace(d) + 1)
    cdef bint ok
    if d == 0:
        return w, W
    with nogil:
        ok = eigh_rows_c(&a[0, 0], d, &wv[0], &Wv[0, 0], &work[0])
    if not ok:
        raise np.linalg.LinAlgError("the symmetric eigendecomposition did not converge")
    return w, W


def sym_part(A, double sign):
    """:math:`B_+` (``sign > 0``) or :math:`B_-` of :math:`B=(A+A^\\top)/2` from one
    eigendecomposition, and :math:`\\|\\cdot\\|_F^2` of the other part."""
    cdef double[:, ::1] a = _square(A)
    cdef int d = a.shape[0]
    P = np.zeros((d, d))
    if d == 0:
        return P, 0.0
    cdef double[:, ::1] Pv = P
    cdef double[::1] work = np.empty(sym_workspace(d))
    cdef double other
    with nogil:
        other = sym_part_c(&a[0, 0], d, sign, &Pv[0, 0], &work[0])
    return P, other


def psd_parts(A):
    """:math:`B_+` and :math:`B_-` of :math:`B=(A+A^\\top)/2` from one
    eigendecomposition, each summed from its own eigenpairs (PSD / NSD by
    construction)."""
    cdef double[:, ::1] a = _square(A)
    cdef int d = a.shape[0]
    Pp, Pn = np.zeros((d, d)), np.zeros((d, d))
    if d == 0:
        return Pp, Pn
    cdef double[:, ::1] pp = Pp
    cdef double[:, ::1] pn = Pn
    cdef double[::1] work = np.empty(sym_workspace(d))
    with nogil:
        psd_parts_c(&a[0, 0], d, &pp[0, 0], &pn[0, 0], &work[0])
    return Pp, Pn


cdef bint _eigh_lapack_r(int n, double* W, double* w, double* Z, double* work,
                        int* iwork, int* isuppz) noexcept nogil:
    """LAPACK dsyevr (relatively robust representations), for the benchmark only."""
    cdef char jobz = b"V", rng = b"A", uplo = b"U"
    cdef double vl = 0.0, vu = 0.0, abstol = 0.0
    cdef int il = 0, iu = 0, m = 0, info = 0, lwork = 26 * n, liwork = 10 * n
    dsyevr(&jobz, &rng, &uplo, &n, W, &n, &vl, &vu, &il, &iu, &abstol, &m, w, Z, &n,
           isuppz, work, &lwork, iwork, &liwork, &info)
    return info == 0


def _repeat_eigh(A, Py_ssize_t repeats, str method):
    """Decompose ``A`` ``repeats`` times with ``method`` ("ql", "dsyevd" or "dsyevr"),
    without the GIL; returns whether every call succeeded. For
    ``benchmarks/bench_eigh.py``, which checks the size at which the solver switches from
    QL to LAPACK."""
    cdef double[:, ::1] a = _square(A)
    cdef int d = a.shape[0]
    cdef int code = {"ql": 0, "dsyevd": 1, "dsyevr": 2}[method]
    if d == 0:
        raise ValueError("empty matrix")
    cdef double[::1] w = np.empty(d)
    cdef double[:, ::1] W = np.empty((d, d))
    cdef double[:, ::1] Z = np.empty((d, d))
    cdef double[::1] work = np.empty(max(eigh_workspace(d), 26 * d) + 1)
    cdef int[::1] iwork = np.empty(10 * d, dtype=np.intc)
    cdef int[::1] isuppz = np.empty(2 * d, dtype=np.intc)
    cdef Py_ssize_t r
    cdef bint ok = True
    with nogil:
        for r in range(repeats):
            memcpy(&W[0, 0], &a[0, 0], d * d * sizeof(double))
            if code == 0:
                ok = _tql2(d, &W[0, 0], &w[0], &work[0]) and ok
            elif code == 1:
                ok = _eigh_lapack(d, &W[0, 0], &w[0], &work[0]) and ok
            else:
                ok = _eigh_lapack_r(d, &W[0, 0], &w[0], &Z[0, 0], &work[0], &iwork[0],
                                    &isuppz[0]) and ok
    return ok
