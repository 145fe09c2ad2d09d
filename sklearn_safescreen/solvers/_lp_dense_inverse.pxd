# The dense basis inverse of the LP-SVM homotopy (_lp_dense_inverse.pyx), cimported by
# its compiled core (_lp_homotopy_fast.pyx) so that the updates stay C calls without the
# GIL.

cdef class DenseInverse:
    cdef public object G_arr
    cdef double[::1, :] G
    cdef int ld
    cdef double[::1] tmpk, tmpk2, cG, work

    cdef void apply(self, int k, double* b, double* out) noexcept nogil
    cdef void apply_T2(self, int k, double* rhs, double* out) noexcept nogil
    cdef void replace_column(self, int k, Py_ssize_t p, double* alpha) noexcept nogil
    cdef void border(self, int k, double* cvec, double* alpha,
                     double delta) noexcept nogil
    cdef void remove(self, int k, Py_ssize_t p, Py_ssize_t q) noexcept nogil
    cdef void replace_row(self, int k, Py_ssize_t q, double* cvec) noexcept nogil
