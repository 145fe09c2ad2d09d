"""Dense inverse of the LP-SVM homotopy's margin matrix (``factor="dense"`` of
:func:`.lp_homotopy.make_core`).

``G`` is the inverse of the margin matrix ``M = Z[E][:, A] diag(sgn)`` (rows: the
positions in the support A; columns: those in the margin set E), kept in a preallocated
column-major ``kmax x kmax`` buffer whose leading ``k x k`` block is in use. Each pivot
changes M by a column, a row, or a bordering row and column, and G by a rank-one BLAS
``dger`` update (a removed row and column are replaced by the last ones, so nothing is
shifted): :math:`O(k^2)` a pivot whatever the data. :meth:`DenseInverse.invert` rebuilds
it by LAPACK ``dgetrf``/``dgetri``.

Its own module, apart from the pricing and ratio tests that use it
(:mod:`._lp_homotopy_fast`): what is here is linear algebra on the margin matrix, with
no notion of the path. The core cimports it (``_lp_dense_inverse.pxd``), so that its
updates are C calls made without the GIL.
"""

from scipy.linalg.cython_blas cimport dgemm, dgemv, dger
from scipy.linalg.cython_lapack cimport dgetrf, dgetri

import numpy as np


cdef class DenseInverse:
    """The inverse of a margin matrix of at most ``kmax`` rows and columns (its buffer
    ``G_arr``; the core fills its leading block with M before :meth:`invert`)."""

    def __init__(self, Py_ssize_t kmax):
        self.G_arr = np.zeros((kmax, kmax), order="F")
        self.G = self.G_arr
        self.ld = <int>kmax
        self.tmpk, self.tmpk2, self.cG = np.zeros(kmax), np.zeros(kmax), np.zeros(kmax)
        self.work = np.zeros(max(1, 64 * kmax))

    def invert(self, Py_ssize_t k):
        """G <- the inverse of the k x k margin matrix in G's leading block. Raises if
        it is singular."""
        cdef int ik = <int>k, info = 0, lwork = <int>self.work.shape[0]
        cdef int[::1] ipiv = np.zeros(max(k, 1), dtype=np.intc)
        if not k:
            return
        with nogil:
            dgetrf(&ik, &ik, &self.G[0, 0], &self.ld, &ipiv[0], &info)
        if info != 0:
            raise RuntimeError("the LP-SVM homotopy's margin matrix is singular")
        with nogil:
            dgetri(&ik, &self.G[0, 0], &self.ld, &ipiv[0], &self.work[0], &lwork, &info)
        if info != 0:
            raise RuntimeError("the LP-SVM homotopy's margin matrix is singular")

    cdef void apply(self, int k, double* b, double* out) noexcept nogil:
        """out = G b (k > 0)."""
        cdef int one = 1
        cdef double a1 = 1.0, b0 = 0.0
        dgemv("N", &k, &k, &a1, &self.G[0, 0], &self.ld, b, &one, &b0, out, &one)

    cdef void apply_T2(self, int k, double* rhs, double* out) noexcept nogil:
        """out = G^T rhs for two right-hand sides (columns of leading dimension kmax) in
        one pass over G (k > 0)."""
        cdef int two = 2
        cdef double a1 = 1.0, b0 = 0.0
        dgemm("T", "N", &k, &two, &k, &a1, &self.G[0, 0], &self.ld, rhs, &self.ld,
              &b0, out, &self.ld)

    cdef void replace_column(self, int k, Py_ssize_t p, double* alpha) noexcept nogil:
        """Column p of M replaced by the one whose image under G is ``alpha``:
        G -= (alpha - e_p) G[p, :] / alpha_p."""
        cdef int one = 1
        cdef Py_ssize_t l
        cdef double c
        for l in range(k):
            self.tmpk[l] = self.G[p, l]
            self.tmpk2[l] = alpha[l]
        self.tmpk2[p] -= 1.0
        c = -1.0 / alpha[p]
        dger(&k, &k, &c, &self.tmpk2[0], &one, &self.tmpk[0], &one, &self.G[0, 0],
             &self.ld)

    cdef void border(self, int k, double* cvec, double* alpha,
                     double delta) noexcept nogil:
        """M bordered by a row ``cvec`` (k entries), a column whose image under G is
        ``alpha`` and the corner ``delta``: the inverse through the Schur complement."""
        cdef int one = 1
        cdef Py_ssize_t l
        cdef double a1 = 1.0, b0 = 0.0, sch, c
        if k:
            dgemv("T", &k, &k, &a1, &self.G[0, 0], &self.ld, cvec, &one, &b0,
                  &self.cG[0], &one)
        sch = delta
        for l in range(k):
            sch -= cvec[l] * alpha[l]
        if k:
            c = 1.0 / sch
            dger(&k, &k, &c, alpha, &one, &self.cG[0], &one, &self.G[0, 0], &self.ld)
        for l in range(k):
            self.G[l, k] = -alpha[l] / sch
            self.G[k, l] = -self.cG[l] / sch
        self.G[k, k] = 1.0 / sch

    cdef void remove(self, int k, Py_ssize_t p, Py_ssize_t q) noexcept nogil:
        """Row q and column p of M removed: G -= G[:, q] G[p, :] / G[p, q], then the
        last row and column take the freed places."""
        cdef int one = 1
        cdef Py_ssize_t l, last = k - 1
        cdef double c
        for l in range(k):
            self.tmpk[l] = self.G[l, q]
            self.tmpk2[l] = self.G[p, l]
        c = -1.0 / self.G[p, q]
        dger(&k, &k, &c, &self.tmpk[0], &one, &self.tmpk2[0], &one, &self.G[0, 0],
             &self.ld)
        for l in range(k):
            self.G[p, l] = self.G[last, l]
        for l in range(k):
            self.G[l, q] = self.G[l, last]

    cdef void replace_row(self, int k, Py_ssize_t q, double* cvec) noexcept nogil:
        """Row q of M replaced by ``cvec``."""
        cdef int one = 1
        cdef Py_ssize_t l
        cdef double a1 = 1.0, b0 = 0.0, c
        dgemv("T", &k, &k, &a1, &self.G[0, 0], &self.ld, cvec, &one, &b0, &self.cG[0],
              &one)
        for l in range(k):
            self.tmpk[l] = self.G[l, q]
            self.tmpk2[l] = self.cG[l]
        self.tmpk2[q] -= 1.0
        c = -1.0 / self.cG[q]
        dger(&k, &k, &c, &self.tmpk[0], &one, &self.tmpk2[0], &one, &self.G[0, 0],
             &self.ld)
