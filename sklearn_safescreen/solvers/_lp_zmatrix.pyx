"""The matrix of the LP-SVM homotopy, :math:`Z = \\mathrm{diag}(y) X` (n samples by d
features), and the products its parametric simplex takes with it: a row or a column
added to a vector, an entry, a margin row's active entries, the margin rows' transposed
products.

Dense Z is kept twice, row-major for the rows and column-major for the columns; sparse
Z as its CSR and CSC arrays: every product reads Z in place, with no copy of a row or a
column. Its own module because both the core (:mod:`._lp_homotopy_fast`) and the sparse
factor (:mod:`._lp_sparse_factor`) take these products; both cimport it
(``_lp_zmatrix.pxd``), so that they are C calls made without the GIL.
"""

import numpy as np


cdef class ZMatrix:
    """``Z`` (dense or sparse) and ``Zc``, the same matrix in the column format the
    caller has (CSC when sparse)."""

    def __init__(self, Z, Zc):
        import scipy.sparse as sp
        self.n, self.d = Z.shape
        self.sparse = sp.issparse(Z)
        if self.sparse:
            Zr = Z.tocsr()
            Zcc = Zc.tocsc()
            self.csr = Zr
            self.r_data = np.ascontiguousarray(Zr.data, dtype=np.float64)
            self.r_ind = np.ascontiguousarray(Zr.indices, dtype=np.intp)
            self.r_ptr = np.ascontiguousarray(Zr.indptr, dtype=np.intp)
            self.c_data = np.ascontiguousarray(Zcc.data, dtype=np.float64)
            self.c_ind = np.ascontiguousarray(Zcc.indices, dtype=np.intp)
            self.c_ptr = np.ascontiguousarray(Zcc.indptr, dtype=np.intp)
        else:
            self.Zr = np.ascontiguousarray(Z, dtype=np.float64)
            self.Zf = np.asfortranarray(Z, dtype=np.float64)
        self.rowbuf = np.zeros(self.d)

    cdef void add_row(self, Py_ssize_t i, double c, double* out) noexcept nogil:
        """out += c Z[i, :]"""
        cdef Py_ssize_t j, p
        cdef const double* row
        cdef const Py_ssize_t* ind
        cdef const double* dat
        if self.sparse:
            if self.r_data.shape[0] == 0:
                return
            # local pointers: a store through out could alias the memoryviews' data
            ind, dat = &self.r_ind[0], &self.r_data[0]
            for p in range(self.r_ptr[i], self.r_ptr[i + 1]):
                out[ind[p]] += c * dat[p]
        else:
            row = &self.Zr[i, 0]
            for j in range(self.d):
                out[j] += c * row[j]

    cdef void add_col(self, Py_ssize_t j, double c, double* out) noexcept nogil:
        """out += c Z[:, j]"""
        cdef Py_ssize_t i, p
        cdef const double* col
        cdef const Py_ssize_t* ind
        cdef const double* dat
        if self.sparse:
            if self.c_data.shape[0] == 0:
                return
            ind, dat = &self.c_ind[0], &self.c_data[0]
            for p in range(self.c_ptr[j], self.c_ptr[j + 1]):
                out[ind[p]] += c * dat[p]
        else:
            col = &self.Zf[0, j]
            for i in range(self.n):
                out[i] += c * col[i]

    cdef double entry(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
        """Z[i, j] (sparse: a binary search of row i)."""
        cdef Py_ssize_t lo, hi, mid
        if not self.sparse:
            return self.Zr[i, j]
        lo, hi = self.r_ptr[i], self.r_ptr[i + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if self.r_ind[mid] < j:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.r_ptr[i + 1] and self.r_ind[lo] == j:
            return self.r_data[lo]
        return 0.0

    cdef void gather_row(self, Py_ssize_t r, Py_ssize_t k, const Py_ssize_t* A,
                         const double* sgn, double* out) noexcept nogil:
        """out[l] = Z[r, A[l]] sgn[l] for l < k (sparse: row r scattered into a
        buffer of d zeros, cleared after)."""
        cdef Py_ssize_t l, p
        if self.sparse:
            for p in range(self.r_ptr[r], self.r_ptr[r + 1]):
                self.rowbuf[self.r_ind[p]] = self.r_data[p]
            for l in range(k):
                out[l] = self.rowbuf[A[l]] * sgn[l]
            for p in range(self.r_ptr[r], self.r_ptr[r + 1]):
                self.rowbuf[self.r_ind[p]] = 0.0
        else:
            for l in range(k):
                out[l] = self.Zr[r, A[l]] * sgn[l]

    cdef void rows_T2(self, Py_ssize_t k, const Py_ssize_t* E, const double* u,
                      const double* v, double* g, double* h) noexcept nogil:
        """g = Z[E[:k]]^T u, h = Z[E[:k]]^T v (one pass over the rows)."""
        cdef Py_ssize_t e, i, j, p
        cdef double ue, ve, z
        cdef const double* row
        cdef const Py_ssize_t* ptr = NULL
        cdef const Py_ssize_t* ind = NULL
        cdef const double* dat = NULL
        for j in range(self.d):
            g[j] = 0.0
            h[j] = 0.0
        if self.sparse:
            if self.r_data.shape[0] == 0:
                return
            ptr, ind, dat = &self.r_ptr[0], &self.r_ind[0], &self.r_data[0]
        for e in range(k):
            i = E[e]
            ue, ve = u[e], v[e]
            if self.sparse:
                for p in range(ptr[i], ptr[i + 1]):
                    j = ind[p]
                    z = dat[p]
                    g[j] += ue * z
                    h[j] += ve * z
            else:
                row = &self.Zr[i, 0]
                for j in range(self.d):
                    g[j] += ue * row[j]
                    h[j] += ve * row[j]
