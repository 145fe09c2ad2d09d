"""Cholesky factorisation and solves in tiles, shared by OpenMP threads, for the Newton
steps of the kernel solvers (:mod:`.newton`).

LAPACK's ``dpotrf`` on the BLAS's own threads gives a factor that changes with the
number of threads in its last bits (the BLAS splits its blocked updates, and so orders
their sums, by the number of threads), so the fits held BLAS to one thread and the
factorisations stayed serial, one of the largest serial parts of a kernel path
(``doc/benchmarks.md``, "Kernel SafeSVC profile"). Here the matrix is cut into fixed
square tiles of ``TILE`` rows and each tile is computed by one single-threaded BLAS call
(``dpotrf`` on a diagonal tile, ``dtrsm`` on the tiles below it, ``dsyrk``/``dgemm`` for
the trailing tiles): which thread computes a tile does not change it, so the factor and
the solutions are the same, bit for bit, on any number of threads. The tiles of one step
are shared among the threads (a parallel region per step: about 2 n / TILE of them for
a factorisation).

Layout: column-major (Fortran) arrays, the factor in the lower triangle (LAPACK's
``uplo='L'``, as ``scipy.linalg.cho_factor(lower=True)``); the upper triangle is
neither read nor written.
"""

from cython.parallel cimport prange
from scipy.linalg.cython_blas cimport dgemm, dsyrk, dtrsm
from scipy.linalg.cython_lapack cimport dpotrf

#: Rows of a tile: large enough for the BLAS calls to run near their peak, small enough
#: for a few thousand rows to make several tiles per thread.
TILE = 256
cdef int _TILE = 256


cdef inline void _trsm_tile(double* A, int lda, int n, int p, int i) noexcept nogil:
    cdef int kp = p * _TILE, bp = min(_TILE, n - p * _TILE)
    cdef int ki = i * _TILE, bi = min(_TILE, n - i * _TILE)
    cdef double one = 1.0
    cdef char side = b'R', uplo = b'L', trans = b'T', diag = b'N'
    dtrsm(&side, &uplo, &trans, &diag, &bi, &bp, &one, A + kp + <Py_ssize_t>kp * lda,
          &lda, A + ki + <Py_ssize_t>kp * lda, &lda)


cdef inline void _update_tile(double* A, int lda, int n, int p, int i,
                              int j) noexcept nogil:
    # A_ij -= A_ip A_jp^T (i >= j > p): dsyrk on the diagonal, dgemm below it
    cdef int kp = p * _TILE, bp = min(_TILE, n - p * _TILE)
    cdef int ki = i * _TILE, bi = min(_TILE, n - i * _TILE)
    cdef int kj = j * _TILE, bj = min(_TILE, n - j * _TILE)
    cdef double minus = -1.0, one = 1.0
    cdef char uplo = b'L', no = b'N', tr = b'T'
    if i == j:
        dsyrk(&uplo, &no, &bi, &bp, &minus, A + ki + <Py_ssize_t>kp * lda, &lda, &one,
              A + ki + <Py_ssize_t>ki * lda, &lda)
    else:
        dgemm(&no, &tr, &bi, &bj, &bp, &minus, A + ki + <Py_ssize_t>kp * lda, &lda,
              A + kj + <Py_ssize_t>kp * lda, &lda, &one, A + ki + <Py_ssize_t>kj * lda,
              &lda)


def tiled_cholesky(double[::1, :] A, int n_threads=1) -> int:
    """Factorise the symmetric positive definite ``A`` (its lower triangle) in place:
    ``A = L L^T``, ``L`` in the lower triangle. Returns 0, or ``j > 0`` when the leading
    minor of order ``j`` is not positive definite (LAPACK's ``info``; the factor is
    then incomplete)."""
    cdef int n = A.shape[0], lda = A.shape[0], T, p, i, q, info = 0
    cdef int n_pairs, r, kp, bp
    cdef double* a
    cdef char uplo = b'L'
    if A.shape[1] != n:
        raise ValueError("tiled_cholesky: A must be square")
    if n == 0:
        return 0
    a = &A[0, 0]
    T = (n + _TILE - 1) // _TILE
    with nogil:
        for p in range(T):
            kp = p * _TILE
            bp = min(_TILE, n - kp)
            dpotrf(&uplo, &bp, a + kp + <Py_ssize_t>kp * lda, &lda, &info)
            if info != 0:
                info += kp
                break
            if p + 1 == T:
                break
            if n_threads > 1:
                for i in prange(p + 1, T, num_threads=n_threads, schedule="static"):
                    _trsm_tile(a, lda, n, p, i)
            else:
                for i in range(p + 1, T):
                    _trsm_tile(a, lda, n, p, i)
            # the trailing tiles (r, c), p < c <= r < T, numbered row by row
            r = T - p - 1
            n_pairs = r * (r + 1) // 2
            if n_threads > 1:
                for q in prange(n_pairs, num_threads=n_threads, schedule="dynamic"):
                    _update_pair(a, lda, n, p, q)
            else:
                for q in range(n_pairs):
                    _update_pair(a, lda, n, p, q)
    return info


cdef inline void _update_pair(double* A, int lda, int n, int p, int q) noexcept nogil:
    # the q-th trailing tile after step p: row r (0-based past p) holds r + 1 tiles
    cdef int r = 0
    while (r + 1) * (r + 2) // 2 <= q:
        r += 1
    _update_tile(A, lda, n, p, p + 1 + r, p + 1 + q - r * (r + 1) // 2)


cdef inline void _forward_tile(const double* L, int lda, int n, double* B, int ldb,
                               int nrhs, int p, int i) noexcept nogil:
    # B_i -= L_ip B_p (i > p)
    cdef int kp = p * _TILE, bp = min(_TILE, n - p * _TILE)
    cdef int ki = i * _TILE, bi = min(_TILE, n - i * _TILE)
    cdef double minus = -1.0, one = 1.0
    cdef char no = b'N'
    dgemm(&no, &no, &bi, &nrhs, &bp, &minus, <double*>L + ki + <Py_ssize_t>kp * lda,
          &lda, B + kp, &ldb, &one, B + ki, &ldb)


cdef inline void _backward_tile(const double* L, int lda, int n, double* B, int ldb,
                                int nrhs, int p, int i) noexcept nogil:
    # B_i -= L_pi^T B_p (i < p)
    cdef int kp = p * _TILE, bp = min(_TILE, n - p * _TILE)
    cdef int ki = i * _TILE, bi = min(_TILE, n - i * _TILE)
    cdef double minus = -1.0, one = 1.0
    cdef char no = b'N', tr = b'T'
    dgemm(&tr, &no, &bi, &nrhs, &bp, &minus, <double*>L + kp + <Py_ssize_t>ki * lda,
          &lda, B + kp, &ldb, &one, B + ki, &ldb)


def tiled_cho_solve(const double[::1, :] L, double[::1, :] B, int n_threads=1):
    """Overwrite ``B`` (n x nrhs, column-major) with ``(L L^T)^{-1} B``, ``L`` the lower
    factor of :func:`tiled_cholesky`: the forward then the backward substitution, tile
    by tile."""
    cdef int n = L.shape[0], lda = L.shape[0], ldb = B.shape[0], nrhs = B.shape[1]
    cdef int T, p, i, kp, bp
    cdef const double* l
    cdef double* b
    cdef double one = 1.0
    cdef char left = b'L', lower = b'L', no = b'N', tr = b'T', unit = b'N'
    if L.shape[1] != n or B.shape[0] != n:
        raise ValueError("tiled_cho_solve: shapes do not match")
    if n == 0 or nrhs == 0:
        return
    l = &L[0, 0]
    b = &B[0, 0]
    T = (n + _TILE - 1) // _TILE
    with nogil:
        for p in range(T):  # L y = B
            kp = p * _TILE
            bp = min(_TILE, n - kp)
            dtrsm(&left, &lower, &no, &unit, &bp, &nrhs, &one,
                  <double*>l + kp + <Py_ssize_t>kp * lda, &lda, b + kp, &ldb)
            if n_threads > 1 and T - p > 2:
                for i in prange(p + 1, T, num_threads=n_threads, schedule="static"):
                    _forward_tile(l, lda, n, b, ldb, nrhs, p, i)
            else:
                for i in range(p + 1, T):
                    _forward_tile(l, lda, n, b, ldb, nrhs, p, i)
        for p in range(T - 1, -1, -1):  # L^T x = y
            kp = p * _TILE
            bp = min(_TILE, n - kp)
            dtrsm(&left, &lower, &tr, &unit, &bp, &nrhs, &one,
                  <double*>l + kp + <Py_ssize_t>kp * lda, &lda, b + kp, &ldb)
            if n_threads > 1 and p > 1:
                for i in prange(p, num_threads=n_threads, schedule="static"):
                    _backward_tile(l, lda, n, b, ldb, nrhs, p, i)
            else:
                for i in range(p):
                    _backward_tile(l, lda, n, b, ldb, nrhs, p, i)

