"""Compiled kernels of the gap-ball rule (:func:`.balls.gap_ball_screen`) and of the
two-ball bounds of the Intersection Test (:func:`.balls.two_ball_bounds`)."""

from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs, sqrt

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


def two_ball_core(const double[::1] proj1, const double[::1] proj2,
                  const double[::1] proj_phi, const double[::1] znorm,
                  const double[::1] error1, const double[::1] error2, double r1, double r2,
                  bint circle, double phi_norm, double zeta, double kappa, double t_lo,
                  double t_hi, double d_zeta, double d_kappa, double d_zr, double d_t,
                  double phi_error, double u, bint exact):
    """The per-sample part of :func:`.balls.two_ball_bounds` in one pass: the two
    balls' bounds, and with ``circle`` the circle value where its case holds, widened
    by its first-order error. The scalars are those :func:`.balls.two_ball_bounds`
    computes. The module is built without contraction into fused multiply-adds, so
    every operation is rounded as written, as the error terms assume. Returns
    ``(lower, upper)``."""
    cdef Py_ssize_t i, n = proj1.shape[0]
    lower_arr = np.empty(n)
    upper_arr = np.empty(n)
    cdef double[::1] lower = lower_arr, upper = upper_arr
    cdef double s1, s2, lo, up, zn, pp, cos, tau, psi, e_p, d_ratio, ratio, d_tau, d_psi
    cdef double d3, d_cos, q
    cdef double phi_sq = phi_norm ** 2
    with nogil:
        for i in range(n):
            zn = znorm[i]
            s1 = r1 * zn + error1[i]
            s2 = r2 * zn + error2[i]
            lo = proj1[i] - s1
            up = proj1[i] + s1
            if proj2[i] - s2 > lo:
                lo = proj2[i] - s2
            if proj2[i] + s2 < up:
                up = proj2[i] + s2
            if circle:
                pp = proj_phi[i]
                cos = pp / (zn * phi_norm) if zn > 0.0 else 0.0
                q = pp / phi_norm
                tau = zn * zn - q * q
                tau = sqrt(tau) if tau > 0.0 else 0.0
                psi = proj2[i] + zeta * pp / phi_norm
                e_p = error1[i] + error2[i]
                d_ratio = e_p / phi_norm + 2.0 * fabs(pp) * phi_error / phi_sq
                ratio = fabs(pp) / phi_norm
                d_tau = sqrt(2.0 * ratio * d_ratio + d_ratio * d_ratio)
                d_psi = error2[i] + fabs(zeta) / phi_norm * e_p + fabs(pp) * d_zr
                d3 = d_psi + kappa * d_tau + tau * d_kappa + d_kappa * d_tau \
                    + 8 * u * (fabs(psi) + kappa * tau)
                if zn > 0.0:
                    d_cos = d_ratio / zn
                else:
                    d_cos = 0.0 if exact else INFINITY
                if t_lo + d_t + d_cos <= -cos and -cos <= t_hi - d_t - d_cos:
                    if psi - kappa * tau - d3 > lo:
                        lo = psi - kappa * tau - d3
                if t_lo + d_t + d_cos <= cos and cos <= t_hi - d_t - d_cos:
                    if psi + kappa * tau + d3 < up:
                        up = psi + kappa * tau + d3
            lower[i] = lo
            upper[i] = up
    return lower_arr, upper_arr


def ball_two_terms(const double[::1] q, const double[::1] e_q, const double[::1] qv,
                   const double[::1] e_v, const double[::1] alpha,
                   const double[::1] weights, const double[::1] v, double C, double u):
    """The sums and the per-sample centre of the BT2 ball (:func:`.svm._ball_two`) in one
    pass. Returns ``(sums, proj, e_proj)`` with ``sums`` the nine sums
    :math:`\\alpha^\\top Qv`, :math:`v^\\top Qv`, :math:`|\\alpha|^\\top e_v`,
    :math:`|\\alpha|^\\top|Qv|`, :math:`v^\\top e_v`, :math:`v^\\top|Qv|`,
    :math:`c^\\top[1-q]_+`, :math:`c^\\top(e_q+2u(1+|q|))` and :math:`\\sum_iv_i`
    (summed in order: the caller's error bounds hold for any order), ``proj`` the
    projections :math:`\\tfrac12(q+C\\,Qv)` and ``e_proj`` their error bounds
    :math:`\\tfrac12(e_q+Ce_v)+4u(|q|+C|Qv|)`."""
    cdef Py_ssize_t i, n = q.shape[0]
    proj_arr = np.empty(n)
    err_arr = np.empty(n)
    cdef double[::1] proj = proj_arr, err = err_arr
    cdef double s_b = 0.0, s_s = 0.0, s_ae = 0.0, s_aq = 0.0, s_ve = 0.0, s_vq = 0.0
    cdef double s_xi = 0.0, s_xe = 0.0, s_v = 0.0, a, aq, hinge
    with nogil:
        for i in range(n):
            a = fabs(alpha[i])
            aq = fabs(qv[i])
            s_b += alpha[i] * qv[i]
            s_s += v[i] * qv[i]
            s_ae += a * e_v[i]
            s_aq += a * aq
            s_ve += v[i] * e_v[i]
            s_vq += v[i] * aq
            hinge = 1.0 - q[i]
            if hinge > 0.0:
                s_xi += weights[i] * hinge
            s_xe += weights[i] * (e_q[i] + 2 * u * (1.0 + fabs(q[i])))
            s_v += v[i]
            proj[i] = 0.5 * (q[i] + C * qv[i])
            err[i] = 0.5 * (e_q[i] + C * e_v[i]) + 4 * u * (fabs(q[i]) + C * aq)
    return (s_b, s_s, s_ae, s_aq, s_ve, s_vq, s_xi, s_xe, s_v), proj_arr, err_arr


def reference_ball_masks(const double[::1] margins, const double[::1] margin_error,
                         double c, double radius, const double[::1] znorm,
                         const double[::1] targets, const unsigned char[::1] active,
                         double rtol, double u):
    """:func:`~.balls.reference_ball`'s projections and their error bound,
    :func:`~.balls.ball_bounds` and :func:`~.balls.decide` fused in one pass, with the
    same arithmetic in the same order (a rule's whole per-sample work on a path step:
    as some eighteen NumPy operations, each a pass over the samples with its own
    temporary and call overhead, it would cost the short steps of small paths more than
    its arithmetic).
    ``margins`` are the reference's, ``c`` the centre's scale, ``u`` the unit
    round-off. Returns ``(at_lower, at_upper, lower, upper)``."""
    cdef Py_ssize_t i, n = margins.shape[0]
    lower_arr = np.empty(n)
    upper_arr = np.empty(n)
    at_lower = np.empty(n, dtype=np.bool_)
    at_upper = np.empty(n, dtype=np.bool_)
    cdef double[::1] lower = lower_arr, upper = upper_arr
    cdef unsigned char[::1] lo_m = at_lower.view(np.uint8)
    cdef unsigned char[::1] hi_m = at_upper.view(np.uint8)
    cdef double proj, error, spread, lo, up, t, slack
    cdef double grow = 1.0 + 4 * u, four_u = 4 * u
    with nogil:
        for i in range(n):
            proj = c * margins[i]
            error = c * margin_error[i] * grow + four_u * fabs(proj)
            spread = radius * znorm[i] + error
            lo = proj - spread
            up = proj + spread
            lower[i] = lo
            upper[i] = up
            t = targets[i]
            slack = rtol * (fabs(lo) + fabs(up) + fabs(t) + 1.0)
            lo_m[i] = active[i] and lo > t + slack
            hi_m[i] = active[i] and up < t - slack
    return at_lower, at_upper, lower_arr, upper_arr
