# The triplet sphere rule at an iterate, which the solver loop (solvers/_spg_fast.pyx)
# runs without the GIL, into its own output and workspace buffers.

cdef int ball_codes_workspace(int d) noexcept nogil
cdef void ball_codes_c(const double* diff, Py_ssize_t npairs, int d, const double* Phi,
                       bint usev, double* T, double* Dq, const int* pos, const int* neg,
                       Py_ssize_t n, const double* hn, const double* z, const double* M,
                       const double* G, double gap, double lam, double gamma, bint use_gb,
                       bint use_pgb, bint use_dgb, signed char* out,
                       double* work) noexcept nogil
