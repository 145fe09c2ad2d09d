"""Compiled epochs of the doubly sparse models' coordinate descent (:mod:`.doubly_sparse_cd`).

One epoch visits every column of the reduced problem in a fixed order and minimises a
quadratic upper bound of the objective in that coordinate exactly: with the loss
gradient :math:`g_j` and the coordinate's smoothness
:math:`L_j = \\sum_i c_i X_{ij}^2/(\\gamma n)`,
:math:`w_j \\leftarrow \\mathrm{ST}(L_j w_j - g_j, \\lambda)/(L_j + \\lambda\\beta)`
(the elastic net's proximal step). The margins :math:`t = Xw` and the dual point
:math:`\\alpha(t)` are kept up to date. Dense columns go through BLAS (``ddot``), CSC
columns by their non-zeros. Every loop runs without the GIL, so one-vs-rest tasks run
on threads.
"""

from libc.math cimport copysign, fabs
from libc.stdint cimport int32_t, int64_t
from scipy.linalg.cython_blas cimport daxpy, ddot


cdef inline double _alpha(double t, double y, double c, bint hinge, double inv_gamma,
                          double epsilon) noexcept nogil:
    """The dual point of one margin: :math:`-c\\,h'(z)\\,\\partial z/\\partial t`
    (``inv_gamma`` is :math:`1/\\gamma`).

    Branch-free (clamps are min/max instructions): the margins of a column's rows land
    in the three pieces of the loss at random, and mispredicted branches cost more
    than the arithmetic.
    """
    cdef double v
    if hinge:
        v = (1.0 - y * t) * inv_gamma
        v = v if v > 0.0 else 0.0
        v = v if v < 1.0 else 1.0
        return c * y * v
    v = (fabs(t - y) - epsilon) * inv_gamma
    v = v if v > 0.0 else 0.0
    v = v if v < 1.0 else 1.0
    return -copysign(c * v, t - y)


cdef inline double _prox_step(double w, double g, double lips, double lam,
                              double beta) noexcept nogil:
    """:math:`\\mathrm{ST}(L w - g, \\lambda)/(L + \\lambda\\beta)`."""
    cdef double v = lips * w - g
    if v > lam:
        return (v - lam) / (lips + lam * beta)
    if v < -lam:
        return (v + lam) / (lips + lam * beta)
    return 0.0


cdef void _hinge_alpha(const double* t, const double* y, const double* c,
                       double* alpha, Py_ssize_t m, double gamma) noexcept nogil:
    """:func:`_alpha` of the hinge over a contiguous block (a loop the compiler
    vectorises)."""
    cdef Py_ssize_t i
    cdef double v, inv = 1.0 / gamma
    for i in range(m):
        v = (1.0 - y[i] * t[i]) * inv
        v = v if v > 0.0 else 0.0
        v = v if v < 1.0 else 1.0
        alpha[i] = c[i] * y[i] * v


def dual_from_margins(const double[::1] t, const double[::1] y, const double[::1] c,
                      double[::1] alpha, bint hinge, double gamma, double epsilon):
    """``alpha[i] = alpha(t[i])`` for every row."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(t.shape[0]):
            alpha[i] = _alpha(t[i], y[i], c[i], hinge, 1.0 / gamma, epsilon)


def epoch_dense(const double[::1, :] X, const double[::1] y, const double[::1] c,
                double[::1] w, double[::1] t, double[::1] alpha,
                const double[::1] offset, const double[::1] lips,
                const int64_t[::1] order, double lam, double beta, double gamma,
                double epsilon, bint hinge, double inv_n, double[::1] corr):
    """One epoch over the columns of a Fortran-ordered block; returns the largest
    :math:`L_j|\\Delta w_j|^2` (the epoch's largest decrease of the upper bound's
    quadratic part). ``corr[j]`` receives :math:`X_{:j}^\\top\\alpha` as it was when
    column ``j`` was visited (for an estimate of the duality gap that costs nothing)."""
    cdef Py_ssize_t m = X.shape[0], k, j, i
    cdef int n_rows = <int>m, one = 1
    cdef double g, new, delta, biggest = 0.0, change, inv_gamma = 1.0 / gamma
    if m == 0:
        with nogil:
            for k in range(order.shape[0]):
                j = order[k]
                corr[j] = 0.0
                w[j] = _prox_step(w[j], -offset[j] * inv_n, lips[j], lam, beta)
        return 0.0
    with nogil:
        for k in range(order.shape[0]):
            j = order[k]
            g = ddot(&n_rows, <double*>&X[0, j], &one, &alpha[0], &one)
            corr[j] = g
            g = -(g + offset[j]) * inv_n
            new = _prox_step(w[j], g, lips[j], lam, beta)
            delta = new - w[j]
            if delta != 0.0:
                w[j] = new
                daxpy(&n_rows, &delta, <double*>&X[0, j], &one, &t[0], &one)
                if hinge:
                    _hinge_alpha(&t[0], &y[0], &c[0], &alpha[0], m, gamma)
                else:
                    for i in range(m):
                        alpha[i] = _alpha(t[i], y[i], c[i], False, inv_gamma, epsilon)
                change = (lips[j] + lam * beta) * delta * delta
                if change > biggest:
                    biggest = change
    return biggest


def epoch_csc(const double[::1] data, const int32_t[::1] indices,
              const int32_t[::1] indptr, const double[::1] y, const double[::1] c,
              double[::1] w, double[::1] t, double[::1] alpha,
              const double[::1] offset, const double[::1] lips,
              const int64_t[::1] order, double lam, double beta, double gamma,
              double epsilon, bint hinge, double inv_n, double[::1] corr):
    """:func:`epoch_dense` for a CSC block (``data``, ``indices``, ``indptr``)."""
    cdef Py_ssize_t k, j, p, i
    cdef double g, new, delta, biggest = 0.0, change, inv_gamma = 1.0 / gamma
    with nogil:
        for k in range(order.shape[0]):
            j = order[k]
            g = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                g += data[p] * alpha[indices[p]]
            corr[j] = g
            g = -(g + offset[j]) * inv_n
            new = _prox_step(w[j], g, lips[j], lam, beta)
            delta = new - w[j]
            if delta != 0.0:
                w[j] = new
                for p in range(indptr[j], indptr[j + 1]):
                    i = indices[p]
                    t[i] += delta * data[p]
                    alpha[i] = _alpha(t[i], y[i], c[i], hinge, inv_gamma, epsilon)
                change = (lips[j] + lam * beta) * delta * delta
                if change > biggest:
                    biggest = change
    return biggest
