# The compiled small symmetric eigensolver (row-major d x d matrices) and the PSD/NSD
# parts built from its eigenpairs, for the triplet kernels, rules and solver loop.

cdef int eigh_workspace(int d) noexcept nogil
cdef bint eigh_rows_c(const double* A, int d, double* w, double* W,
                      double* work) noexcept nogil
cdef double signed_sum_c(const double* w, const double* W, int d, double sign,
                         double* P) noexcept nogil
cdef double sym_part_c(const double* A, int d, double sign, double* P,
                       double* work) noexcept nogil
cdef void psd_parts_c(const double* A, int d, double* Pp, double* Pn,
                      double* work) noexcept nogil
cdef int sym_workspace(int d) noexcept nogil
