# The LP-SVM homotopy's matrix Z and its products (_lp_zmatrix.pyx), cimported by its
# compiled core (_lp_homotopy_fast.pyx) and sparse factor (_lp_sparse_factor.pyx) so
# that the products stay C calls without the GIL.

cdef class ZMatrix:
    cdef readonly Py_ssize_t n, d
    cdef readonly bint sparse
    cdef readonly object csr
    cdef const double[:, ::1] Zr
    cdef const double[::1, :] Zf
    cdef const double[::1] r_data, c_data
    cdef const Py_ssize_t[::1] r_ind, r_ptr, c_ind, c_ptr
    cdef double[::1] rowbuf

    cdef void add_row(self, Py_ssize_t i, double c, double* out) noexcept nogil
    cdef void add_col(self, Py_ssize_t j, double c, double* out) noexcept nogil
    cdef double entry(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil
    cdef void gather_row(self, Py_ssize_t r, Py_ssize_t k, const Py_ssize_t* A,
                         const double* sgn, double* out) noexcept nogil
    cdef void rows_T2(self, Py_ssize_t k, const Py_ssize_t* E, const double* u,
                      const double* v, double* g, double* h) noexcept nogil
