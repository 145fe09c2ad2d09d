"""Compiled kernel of the gap-ball rule (:func:`.balls.gap_ball_screen`)."""

from libc.math cimport fabs, sqrt

import numpy as np


def gap_ball_masks(const double[::1] margins, const double[::1] targets,
                   const double[::1] sqnorm, double radius, double rtol):
    """:func:`~.balls.ball_bounds` and :func:`~.balls.decide` fused in one pass (same
    arithmetic, same order): the gap ball runs at every solver check and certificate,
    on every sample. Returns the boolean masks ``(at_lower, at_upper)``."""
    cdef Py_ssize_t i, n = margins.shape[0]
    cdef double spread, lower, upper, t, slack
    at_lower = np.empty(n, dtype=np.bool_)
    at_upper = np.empty(n, dtype=np.bool_)
    cdef unsigned char[::1] lo_m = at_lower.view(np.uint8)
    cdef unsigned char[::1] hi_m = at_upper.view(np.uint8)
    with nogil:
        for i in range(n):
            spread = radius * sqrt(sqnorm[i])
            lower = margins[i] - spread
            upper = margins[i] + spread
            t = targets[i]
            slack = rtol * (fabs(lower) + fabs(upper) + fabs(t) + 1.0)
            lo_m[i] = lower > t + slack
            hi_m[i] = upper < t - slack
    return at_lower, at_upper
