"""Compiled interior-point finisher for a dense kernel box QP (:mod:`.box_ipm`).

The compiled twin of :func:`.box_ipm.box_qp_ipm` with a :class:`~.box_ipm.DenseTerm`:
the kernel-mode finisher of small problems (:mod:`.dual_cd`), where the Python version
spends its time in call overhead between factorisations of a few hundred variables.
Its low-rank sibling for the linear mode is :mod:`._ipm_fast`; both take their step
lengths from :mod:`._ipm_steps`.
"""

from libc.math cimport fabs, isfinite, sqrt, INFINITY
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport daxpy, ddot, dgemv, dsyrk, dtrmv, dtrsm
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs

import numpy as np

from ._ipm_steps cimport _multiplier_step, _primal_step


cdef void _dense_margins(double* Q, int n, int ld, double* alpha, double* offset,
                         double* qa) noexcept nogil:
    """``qa = Q alpha + offset`` over the leading ``n x n`` block of ``Q`` (row stride
    ``ld``; symmetric, so its rows are its columns)."""
    cdef int i, one = 1
    cdef double d_one = 1.0, d_zero = 0.0
    cdef char trans_t = b"T"
    dgemv(&trans_t, &n, &n, &d_one, Q, &ld, alpha, &one, &d_zero, qa, &one)
    for i in range(n):
        qa[i] += offset[i]


def ipm_dense_kernel(Q_in, offset_in, double outside_quad, p_in, lo_in, hi_in,
                     sqnorm_in, double p_outside, double tol, alpha0_in, bint screen,
                     double screen_rtol, int max_iter):
    """Minimise ``1/2 a'Qa + a'offset - p'a`` over ``lo <= a <= hi`` for a dense
    symmetric positive semi-definite ``Q`` (a compiled :func:`~.box_ipm.box_qp_ipm`
    with a :class:`~.box_ipm.DenseTerm`: the kernel-mode finisher of small problems,
    where the Python version spends its time in call overhead between factorisations
    of a few hundred variables).

    ``outside_quad`` is the quadratic term of everything outside the variables (it
    makes the dual objective, the relative gap's denominator, exact). The same Mehrotra
    iteration, stopping rule, best-iterate bookkeeping and gap-ball screening of every
    iterate as the Python version; each Newton system ``(Q + D) x = b`` is factored
    once (LAPACK ``dpotrf``) for the predictor and the corrector. The variables a ball
    fixes leave ``Q``, their values moving into ``offset`` and ``outside_quad``.

    Returns ``(alpha, dropped_lower, dropped_upper, iterations)`` over the input
    variables; alpha is inside the box (snap it before use). If round-off stops progress
    first, the iterate with the smallest gap is returned.
    """
    cdef double[:, ::1] Qc = np.array(Q_in, dtype=np.float64, order="C")  # (compacted)
    cdef double[::1] offset = np.array(offset_in, dtype=np.float64)
    cdef double[::1] p = np.array(p_in, dtype=np.float64)
    cdef double[::1] lo = np.array(lo_in, dtype=np.float64)
    cdef double[::1] hi = np.array(hi_in, dtype=np.float64)
    cdef double[::1] sqnorm = np.array(sqnorm_in, dtype=np.float64)
    cdef double[::1] alpha0 = np.ascontiguousarray(alpha0_in, dtype=np.float64)
    cdef int n_all = p.shape[0], n = n_all, ld = n_all
    if Qc.shape[0] != n_all or Qc.shape[1] != n_all or offset.shape[0] != n_all:
        raise ValueError("Q must be square and match offset and p")
    out_arr = np.zeros(n_all)
    dropped_lo_arr = np.zeros(n_all, dtype=np.bool_)
    dropped_hi_arr = np.zeros(n_all, dtype=np.bool_)
    cdef double[::1] out = out_arr
    cdef unsigned char[::1] dropped_lo = dropped_lo_arr.view(np.uint8)
    cdef unsigned char[::1] dropped_hi = dropped_hi_arr.view(np.uint8)
    if n_all == 0:
        return out_arr, dropped_lo_arr, dropped_hi_arr, 0
    cdef double[:, ::1] work = np.empty((17, n_all))
    cdef double[::1] M = np.empty(n_all * n_all)
    cdef long[::1] idx = np.arange(n_all, dtype=np.int_)
    cdef long[::1] best_idx = np.arange(n_all, dtype=np.int_)
    cdef unsigned char[::1] gone = np.zeros(n_all, dtype=np.uint8)
    cdef double* alpha = &work[0, 0]
    cdef double* s1 = &work[1, 0]
    cdef double* s2 = &work[2, 0]
    cdef double* u = &work[3, 0]
    cdef double* v = &work[4, 0]
    cdef double* qa = &work[5, 0]
    cdef double* r_d = &work[6, 0]
    cdef double* dd = &work[7, 0]
    cdef double* dx = &work[8, 0]
    cdef double* du = &work[9, 0]
    cdef double* dv = &work[10, 0]
    cdef double* r1 = &work[11, 0]
    cdef double* r2 = &work[12, 0]
    cdef double* best = &work[13, 0]
    cdef double* width = &work[14, 0]
    cdef double* vg = &work[15, 0]
    cdef double* tq = &work[16, 0]
    cdef double* Qp = &Qc[0, 0]
    cdef int i, j, m, mj, it, n_done = 0, one = 1, info = 0, n_best = n_all
    cdef double frac, g, scale, gap, dual, rel, best_gap = INFINITY, mu, mu_aff, sigma
    cdef double tp, td, spread, lower, upper, slack, radius, quad
    cdef char upper_c = b"U"
    with nogil:
        for i in range(n):
            width[i] = hi[i] - lo[i]
            frac = (alpha0[i] - lo[i]) / width[i]
            frac = min(max(frac, 0.05), 0.95)
            alpha[i] = lo[i] + frac * width[i]
            s1[i] = alpha[i] - lo[i]
            s2[i] = hi[i] - alpha[i]
        # margins at the start and the multipliers' scale
        _dense_margins(Qp, n, ld, alpha, &offset[0], qa)
        scale = 1.0
        for i in range(n):
            scale = max(scale, fabs(qa[i] - p[i]))
        for i in range(n):
            g = qa[i] - p[i]
            u[i] = max(g, 0.0) + 1e-2 * scale
            v[i] = max(-g, 0.0) + 1e-2 * scale
        for it in range(1, max_iter + 1):
            n_done = it
            _dense_margins(Qp, n, ld, alpha, &offset[0], qa)
            # a'Qa + 2 a'offset + outside_quad, with Q a = qa - offset
            gap = 0.0
            quad = outside_quad
            dual = p_outside
            for i in range(n):
                g = qa[i] - p[i]
                gap += max(-lo[i] * g, -hi[i] * g) + alpha[i] * g
                quad += alpha[i] * (qa[i] + offset[i])
                dual += p[i] * alpha[i]
            dual -= 0.5 * quad
            rel = gap / max(fabs(dual), 1e-300)
            if rel < best_gap:
                best_gap = rel
                n_best = n
                for i in range(n):
                    best[i] = alpha[i]
                    best_idx[i] = idx[i]
                    out[idx[i]] = alpha[i]
            if rel <= tol:
                break
            if screen and n > 1:
                radius = sqrt(max(gap, 0.0))  # (balls.gap_radius)
                m = 0
                for i in range(n):
                    spread = radius * sqrt(sqnorm[i])
                    lower = qa[i] - spread
                    upper = qa[i] + spread
                    slack = screen_rtol * (fabs(lower) + fabs(upper) + fabs(p[i]) + 1.0)
                    gone[i] = 0
                    vg[i] = 0.0
                    if lower > p[i] + slack:
                        gone[i] = 1
                        vg[i] = lo[i]
                        m += 1
                    elif upper < p[i] - slack:
                        gone[i] = 2
                        vg[i] = hi[i]
                        m += 1
                if 0 < m < n:
                    # the decided variables' values move to the outside terms: their
                    # cross margins into the others' offset, their quadratic term and
                    # (with the offset they had) into outside_quad
                    _dense_margins(Qp, n, ld, vg, &offset[0], tq)
                    for i in range(n):
                        tq[i] -= offset[i]  # Q v_gone
                    for i in range(n):
                        if gone[i]:
                            outside_quad += vg[i] * (tq[i] + 2.0 * offset[i])
                            p_outside += p[i] * vg[i]
                            out[idx[i]] = vg[i]
                            if gone[i] == 1:
                                dropped_lo[idx[i]] = 1
                            else:
                                dropped_hi[idx[i]] = 1
                    # compact everything that stays (rows and columns of Q in place:
                    # a kept entry only moves to an earlier position)
                    m = 0
                    for i in range(n):
                        if gone[i]:
                            continue
                        mj = 0
                        for j in range(n):
                            if not gone[j]:
                                Qp[m * ld + mj] = Qp[i * ld + j]
                                mj += 1
                        offset[m] = offset[i] + tq[i]
                        idx[m] = idx[i]
                        p[m] = p[i]
                        lo[m] = lo[i]
                        hi[m] = hi[i]
                        sqnorm[m] = sqnorm[i]
                        alpha[m] = alpha[i]
                        u[m] = u[i]
                        v[m] = v[i]
                        m += 1
                    n = m
                    for i in range(n):
                        s1[i] = alpha[i] - lo[i]
                        s2[i] = hi[i] - alpha[i]
                        best[i] = alpha[i]
                        best_idx[i] = idx[i]
                    n_best = n
                    best_gap = INFINITY
                    _dense_margins(Qp, n, ld, alpha, &offset[0], qa)
            mu = 0.0
            for i in range(n):
                r_d[i] = qa[i] - p[i] - u[i] + v[i]
                mu += s1[i] * u[i] + s2[i] * v[i]
            mu /= 2.0 * n
            info = 0
            for i in range(n):
                dd[i] = u[i] / s1[i] + v[i] / s2[i]
                if not isfinite(dd[i]):
                    info = 1
            if info or mu <= 0.0:
                break  # the barrier has reached machine precision
            # Q + D, upper triangle (column-major; Q symmetric), factored in place
            for j in range(n):
                for i in range(j + 1):
                    M[j * n + i] = Qp[j * ld + i]
                M[j * n + j] += dd[j]
            dpotrf(&upper_c, &n, &M[0], &n, &info)
            if info != 0:
                break
            # predictor (affine scaling)
            for i in range(n):
                dx[i] = -r_d[i] - u[i] + v[i]
            dpotrs(&upper_c, &n, &one, &M[0], &n, dx, &n, &info)
            for i in range(n):
                du[i] = -u[i] - u[i] * dx[i] / s1[i]
                dv[i] = -v[i] + v[i] * dx[i] / s2[i]
            tp = _primal_step(s1, s2, dx, n)
            td = _multiplier_step(u, v, du, dv, n)
            mu_aff = 0.0
            for i in range(n):
                mu_aff += ((s1[i] + tp * dx[i]) * (u[i] + td * du[i])
                           + (s2[i] - tp * dx[i]) * (v[i] + td * dv[i]))
            mu_aff /= 2.0 * n
            sigma = min((mu_aff / mu) ** 3, 1.0)
            # corrector
            for i in range(n):
                r1[i] = s1[i] * u[i] + dx[i] * du[i] - sigma * mu
                r2[i] = s2[i] * v[i] - dx[i] * dv[i] - sigma * mu
            for i in range(n):
                dx[i] = -r_d[i] - r1[i] / s1[i] + r2[i] / s2[i]
            dpotrs(&upper_c, &n, &one, &M[0], &n, dx, &n, &info)
            for i in range(n):
                du[i] = (-r1[i] - u[i] * dx[i]) / s1[i]
                dv[i] = (-r2[i] + v[i] * dx[i]) / s2[i]
            tp = 0.99 * _primal_step(s1, s2, dx, n)
            td = 0.99 * _multiplier_step(u, v, du, dv, n)
            for i in range(n):
                alpha[i] += tp * dx[i]
                s1[i] = max(alpha[i] - lo[i], 1e-300)
                s2[i] = max(hi[i] - alpha[i], 1e-300)
                u[i] += td * du[i]
                v[i] += td * dv[i]
        for i in range(n_best):
            out[best_idx[i]] = best[i]
    return out_arr, dropped_lo_arr, dropped_hi_arr, n_done
