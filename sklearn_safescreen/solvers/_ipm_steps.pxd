"""Step lengths to the boundary of the interior-point finishers' positive variables
(slacks and multipliers), shared by :mod:`._ipm_fast` and :mod:`._ipm_kernel_fast`."""

cdef inline double _primal_step(double* s1, double* s2, double* dx, int n) noexcept nogil:
    cdef double t = 1.0
    cdef int i
    for i in range(n):
        if dx[i] < 0.0:
            t = min(t, -s1[i] / dx[i])
        elif dx[i] > 0.0:
            t = min(t, s2[i] / dx[i])
    return t


cdef inline double _multiplier_step(double* u, double* v, double* du, double* dv,
                                    int n) noexcept nogil:
    cdef double t = 1.0
    cdef int i
    for i in range(n):
        if du[i] < 0.0:
            t = min(t, -u[i] / du[i])
        if dv[i] < 0.0:
            t = min(t, -v[i] / dv[i])
    return t
