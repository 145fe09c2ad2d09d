"""Compiled kernel of the gap-ball rule (:func:`.balls.gap_ball_screen`)."""

from cython.parallel cimport prange
from libc.math cimport fabs, sqrt

import numpy as np

from .._utils.openmp import current_n_threads

#: Below this many samples the pass runs on one thread: waking the threads would cost
#: about what the pass itself does (ten operations a sample; the threshold of the
#: box-QP module's loops, problems/_box_qp_fast.pyx, in operations, is 131,072).
cdef Py_ssize_t PARALLEL_MIN_SAMPLES = 16384


def gap_ball_masks(const double[::1] margins, const double[::1] targets,
                   const double[::1] sqnorm, double radius, double rtol, int n_threads=0):
    """:func:`~.balls.ball_bounds` and :func:`~.balls.decide` fused in one pass (same
    arithmetic, same order): the gap ball runs at every solver check and certificate,
    on every sample. Returns the boolean masks ``(at_lower, at_upper)``.

    The samples are split among OpenMP threads, each decided alone (so the masks do not
    depend on the number of threads). ``n_threads``: 0 takes
    :func:`~sklearn_safescreen._utils.openmp.current_n_threads` from
    ``PARALLEL_MIN_SAMPLES`` samples on (one thread below), a positive count is used as
    given."""
    cdef Py_ssize_t i, n = margins.shape[0]
    cdef double spread, lower, upper, t, slack
    if n_threads < 0:
        raise ValueError("n_threads must be 0 (automatic) or positive")
    cdef int nt = n_threads if n_threads > 0 else (
        current_n_threads() if n >= PARALLEL_MIN_SAMPLES else 1)
    at_lower = np.empty(n, dtype=np.bool_)
    at_upper = np.empty(n, dtype=np.bool_)
    cdef unsigned char[::1] lo_m = at_lower.view(np.uint8)
    cdef unsigned char[::1] hi_m = at_upper.view(np.uint8)
    with nogil:
        for i in prange(n, num_threads=nt, schedule="static"):  # equal elements
            spread = radius * sqrt(sqnorm[i])
            lower = margins[i] - spread
            upper = margins[i] + spread
            t = targets[i]
            slack = rtol * (fabs(lower) + fabs(upper) + fabs(t) + 1.0)
            lo_m[i] = lower > t + slack
            hi_m[i] = upper < t - slack
    return at_lower, at_upper
