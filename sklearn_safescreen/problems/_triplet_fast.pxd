# The compiled kernels of the triplet problem that the rule kernels
# (screening/_triplet_fast.pyx), the solver loop (solvers/_spg_fast.pyx) and the
# reduced problem's passes (_triplet_reduce_fast.pyx) call without the GIL. Matrices
# are d x d, row-major; pair differences are npairs x d.

cdef bint use_vech_c(Py_ssize_t npairs, int d) noexcept nogil
cdef Py_ssize_t block_rows_c(Py_ssize_t npairs, int d) noexcept nogil
cdef void build_phi_c(const double* diff, Py_ssize_t npairs, int d,
                      double* Phi) noexcept nogil
cdef void pair_forms_c(const double* diff, Py_ssize_t npairs, int d, const double* Phi,
                       bint usev, const double* Q, double* T, double* D,
                       double* vech) noexcept nogil
cdef void laplacian_sum_c(const double* diff, Py_ssize_t npairs, int d,
                          const double* Phi, bint usev, const double* w, double* T,
                          double* T2, double* s, double* S) noexcept nogil
cdef double triplet_pass_c(const double* D, const int* pos, const int* neg,
                           Py_ssize_t n, double gamma, double* z, double* w,
                           Py_ssize_t npairs, double* sa, double* sa2) noexcept nogil
cdef double gap_terms_c(const double* M, const double* S, int d, double lam, double sa,
                        double sa2, double nL, double gamma, double* Sp, double* dual,
                        double* work) noexcept nogil
cdef double projection_gap_c(const double* M, const double* S, const double* Bn, int d,
                             double eta, double lam) noexcept nogil
