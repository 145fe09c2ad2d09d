"""Compiled interior-point finisher for a dense low-rank box QP (:mod:`.box_ipm`).

The compiled twin of :func:`.box_ipm.box_qp_ipm` with a dense ``LowRankTerm``
(``Q = Z Z'``): the linear-mode finisher of small working sets, where the Python version
spends its time in call overhead. The same Mehrotra iteration, stopping rule,
best-iterate bookkeeping and gap-ball screening of every iterate; each Newton system
``(Z Z' + D) x = b`` is solved by block elimination of the nearly free variables and
Woodbury for the others (:func:`_factor`: scale-invariant, the same factors as
``LowRankTerm.newton``), factored once for the predictor and the corrector (LAPACK
``dpotrf``, BLAS ``dsyrk``/``dtrsm``). No Python object is touched inside the loop, which
runs without the GIL.
"""

from libc.math cimport fabs, isfinite, sqrt, INFINITY
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport daxpy, ddot, dgemv, dsyrk, dtrmv, dtrsm
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs

import numpy as np


from ._ipm_steps cimport _multiplier_step, _primal_step


cdef int _factor(double* Z, int n, int k, double* sqnorm, double* inv_d, double* ib,
                 double* Zs, double* M, double* ZF, double* S, double* ef, long* fidx,
                 int fmax, int* nf_out) noexcept nogil:
    """Factor ``Z Z' + D`` (``D = 1/inv_d``) for :func:`_solve`; returns LAPACK's info.

    The variables with ``||z_i||^2 / D_i > 1`` (the free ones, near the end: at most
    ``fmax`` of them, the largest ratios) form the set F; the others, B, enter the k x k
    matrix ``M_B = I + Z_B' D_B^{-1} Z_B``, whose eigenvalues lie in ``[1, 1 + |B|]``
    whatever the scale of ``Z``; F is eliminated through its Schur complement
    ``S = D_F + Z_F M_B^{-1} Z_F'`` (``|F| x |F|``, Cholesky after a symmetric diagonal
    scaling). Plain Woodbury over all rows puts ``1/D_i`` of the free variables (up to
    1e13 near convergence) next to the ones of the others in one k x k matrix: on
    unscaled data its condition number reached 1e24, the Newton directions lost every
    digit and the method stopped far from the optimum.
    """
    cdef int i, j, nf = 0, one = 1, info = 0
    cdef double thr = 1.0, sq, d_one = 1.0, d_zero = 0.0
    cdef char trans_n = b"N", trans_t = b"T", upper = b"U", left = b"L", nonunit = b"N"
    while True:  # the threshold grows until F fits in fmax
        nf = 0
        for i in range(n):
            if sqnorm[i] * inv_d[i] > thr:
                nf += 1
        if nf <= fmax:
            break
        thr *= 4.0
    nf = 0
    for i in range(n):
        if sqnorm[i] * inv_d[i] > thr:
            fidx[nf] = i
            nf += 1
            ib[i] = 0.0
        else:
            ib[i] = inv_d[i]
        sq = sqrt(ib[i])
        for j in range(k):
            Zs[i * k + j] = Z[i * k + j] * sq
    nf_out[0] = nf
    dsyrk(&upper, &trans_n, &k, &n, &d_one, Zs, &k, &d_zero, M, &k)
    for j in range(k):
        M[j * k + j] += 1.0
    dpotrf(&upper, &k, M, &k, &info)
    if info != 0 or nf == 0:
        return info
    # W = U^{-T} Z_F' (k x nf, column-major: the rows of Z_F), S = W'W + D_F
    for i in range(nf):
        memcpy(&ZF[i * k], &Z[fidx[i] * k], k * sizeof(double))
    dtrsm(&left, &upper, &trans_t, &nonunit, &k, &nf, &d_one, M, &k, ZF, &k)
    dsyrk(&upper, &trans_t, &nf, &k, &d_one, ZF, &k, &d_zero, S, &nf)
    for i in range(nf):
        S[i * nf + i] += 1.0 / inv_d[fidx[i]]
        ef[i] = 1.0 / sqrt(S[i * nf + i])
    for j in range(nf):  # upper triangle, column-major
        for i in range(j + 1):
            S[j * nf + i] *= ef[i] * ef[j]
    dpotrf(&upper, &nf, S, &nf, &info)
    return info


cdef void _solve(double* Z, int n, int k, double* M, double* ib, double* S, double* ef,
                 long* fidx, int nf, double* b, double* out, double* t, double* y,
                 double* y2, double* y3, double* rf) noexcept nogil:
    """``out = (Z Z' + D)^{-1} b`` from :func:`_factor`'s factors; ``t`` (n), ``y``,
    ``y2``, ``y3`` (k) and ``rf`` (nf) are workspaces. ``Z`` is row-major n x k, i.e.
    column-major k x n. Block elimination of F: ``x_F = S^{-1}(b_F - Z_F M_B^{-1}
    Z_B'D_B^{-1}b_B)``, then ``x_B = D_B^{-1}(c_B - Z_B M_B^{-1} Z_B'D_B^{-1}c_B)`` with
    ``c = b - Z Z_F'x_F``, where ``Z_B'D_B^{-1}c_B = Z_B'D_B^{-1}b_B - (M_B - I)Z_F'x_F``
    comes from the factor: two passes over Z, as plain Woodbury."""
    cdef int i, j, one = 1, info = 0
    cdef double d_one = 1.0, d_zero = 0.0
    cdef char trans_n = b"N", trans_t = b"T", upper = b"U", nonunit = b"N"
    for i in range(n):
        t[i] = ib[i] * b[i]
    dgemv(&trans_n, &k, &n, &d_one, Z, &k, t, &one, &d_zero, y, &one)  # Z_B'D_B^{-1}b_B
    if nf > 0:
        memcpy(y2, y, k * sizeof(double))
        dpotrs(&upper, &k, &one, M, &k, y2, &k, &info)
        for j in range(nf):
            rf[j] = ef[j] * (b[fidx[j]] - ddot(&k, &Z[fidx[j] * k], &one, y2, &one))
        dpotrs(&upper, &nf, &one, S, &nf, rf, &nf, &info)
        for j in range(k):
            y2[j] = 0.0
        for j in range(nf):
            rf[j] *= ef[j]  # x_F
            daxpy(&k, &rf[j], &Z[fidx[j] * k], &one, y2, &one)  # y2 = Z_F'x_F
        # y -= (M_B - I) y2 = U'U y2 - y2, through the factor
        memcpy(y3, y2, k * sizeof(double))
        dtrmv(&upper, &trans_n, &nonunit, &k, M, &k, y3, &one)
        dtrmv(&upper, &trans_t, &nonunit, &k, M, &k, y3, &one)
        for j in range(k):
            y[j] -= y3[j] - y2[j]
    dpotrs(&upper, &k, &one, M, &k, y, &k, &info)
    if nf > 0:
        for j in range(k):
            y[j] += y2[j]
    dgemv(&trans_t, &k, &n, &d_one, Z, &k, y, &one, &d_zero, t, &one)
    for i in range(n):
        out[i] = ib[i] * (b[i] - t[i])
    for j in range(nf):
        out[fidx[j]] = rf[j]


def ipm_low_rank_dense(Z_in, w_rest_in, p_in, lo_in, hi_in, sqnorm_in, double p_outside,
                       double tol, alpha0_in, bint screen, double screen_rtol,
                       int max_iter):
    """Minimise ``1/2 a'ZZ'a + a'Z w_rest - p'a`` over ``lo <= a <= hi`` (a compiled
    :func:`~.box_ipm.box_qp_ipm`).

    Stops at relative duality gap ``tol``. With ``screen``, every iterate (dual feasible)
    screens with its gap ball (strict decisions with relative slack ``screen_rtol``):
    the variables it proves at a bound are fixed there and leave the Newton systems.

    Returns ``(alpha, dropped_lower, dropped_upper, iterations)`` over the input
    variables; alpha is inside the box (snap it before use). If round-off stops progress
    first, the iterate with the smallest gap is returned.
    """
    cdef double[:, ::1] Zc = np.array(Z_in, dtype=np.float64, order="C")  # (compacted)
    cdef double[::1] w_rest = np.array(w_rest_in, dtype=np.float64)
    cdef double[::1] p = np.array(p_in, dtype=np.float64)
    cdef double[::1] lo = np.array(lo_in, dtype=np.float64)
    cdef double[::1] hi = np.array(hi_in, dtype=np.float64)
    cdef double[::1] sqnorm = np.array(sqnorm_in, dtype=np.float64)
    cdef double[::1] alpha0 = np.ascontiguousarray(alpha0_in, dtype=np.float64)
    cdef int n_all = p.shape[0], k = Zc.shape[1], n = n_all
    out_arr = np.zeros(n_all)
    dropped_lo_arr = np.zeros(n_all, dtype=np.bool_)
    dropped_hi_arr = np.zeros(n_all, dtype=np.bool_)
    cdef double[::1] out = out_arr
    cdef unsigned char[::1] dropped_lo = dropped_lo_arr.view(np.uint8)
    cdef unsigned char[::1] dropped_hi = dropped_hi_arr.view(np.uint8)
    if n_all == 0 or k == 0:
        return out_arr, dropped_lo_arr, dropped_hi_arr, 0
    cdef double[:, ::1] work = np.empty((18, n_all))
    cdef double[:, ::1] Zs = np.empty((n_all, k))
    cdef double[::1] M = np.empty(k * k)
    cdef int nf = 0, fmax = min(n_all, k)
    cdef double[::1] ZF = np.empty(fmax * k)
    cdef double[::1] S = np.empty(fmax * fmax)
    cdef double[::1] ef = np.empty(fmax)
    cdef double[::1] rf = np.empty(fmax)
    cdef long[::1] fidx = np.empty(fmax, dtype=np.int_)
    cdef double[::1] wk = np.empty(k)
    cdef double[::1] yk = np.empty(k)
    cdef double[::1] y2k = np.empty(k)
    cdef double[::1] y3k = np.empty(k)
    cdef long[::1] idx = np.arange(n_all, dtype=np.int_)
    cdef long[::1] best_idx = np.arange(n_all, dtype=np.int_)
    cdef double* alpha = &work[0, 0]
    cdef double* s1 = &work[1, 0]
    cdef double* s2 = &work[2, 0]
    cdef double* u = &work[3, 0]
    cdef double* v = &work[4, 0]
    cdef double* qa = &work[5, 0]
    cdef double* r_d = &work[6, 0]
    cdef double* inv_d = &work[7, 0]
    cdef double* dx = &work[8, 0]
    cdef double* du = &work[9, 0]
    cdef double* dv = &work[10, 0]
    cdef double* rhs = &work[11, 0]
    cdef double* r1 = &work[12, 0]
    cdef double* r2 = &work[13, 0]
    cdef double* tmp = &work[14, 0]
    cdef double* best = &work[15, 0]
    cdef double* width = &work[16, 0]
    cdef double* ib = &work[17, 0]
    cdef int i, j, m, it, n_done = 0, one = 1, info = 0, n_best = n_all
    cdef double frac, g, scale, gap, dual, rel, best_gap = INFINITY, mu, mu_aff, sigma
    cdef double tp, td, spread, lower, upper, slack, radius, d_one = 1.0, d_zero = 0.0
    cdef char trans_n = b"N", trans_t = b"T", upper_c = b"U"
    with nogil:
        for i in range(n):
            width[i] = hi[i] - lo[i]
            frac = (alpha0[i] - lo[i]) / width[i]
            frac = min(max(frac, 0.05), 0.95)
            alpha[i] = lo[i] + frac * width[i]
            s1[i] = alpha[i] - lo[i]
            s2[i] = hi[i] - alpha[i]
        # margins at the start and the multipliers' scale
        dgemv(&trans_n, &k, &n, &d_one, &Zc[0, 0], &k, alpha, &one, &d_zero, &wk[0], &one)
        for j in range(k):
            wk[j] += w_rest[j]
        dgemv(&trans_t, &k, &n, &d_one, &Zc[0, 0], &k, &wk[0], &one, &d_zero, qa, &one)
        scale = 1.0
        for i in range(n):
            scale = max(scale, fabs(qa[i] - p[i]))
        for i in range(n):
            g = qa[i] - p[i]
            u[i] = max(g, 0.0) + 1e-2 * scale
            v[i] = max(-g, 0.0) + 1e-2 * scale
        for it in range(1, max_iter + 1):
            n_done = it
            dgemv(&trans_n, &k, &n, &d_one, &Zc[0, 0], &k, alpha, &one, &d_zero, &wk[0],
                  &one)
            for j in range(k):
                wk[j] += w_rest[j]
            dgemv(&trans_t, &k, &n, &d_one, &Zc[0, 0], &k, &wk[0], &one, &d_zero, qa, &one)
            gap = 0.0
            dual = p_outside - 0.5 * ddot(&k, &wk[0], &one, &wk[0], &one)
            for i in range(n):
                g = qa[i] - p[i]
                gap += max(-lo[i] * g, -hi[i] * g) + alpha[i] * g
                dual += p[i] * alpha[i]
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
                    if lower > p[i] + slack:
                        m += 1
                    elif upper < p[i] - slack:
                        m += 1
                if 0 < m < n:
                    # fix the decided variables: their values move to the outside terms
                    m = 0
                    for i in range(n):
                        spread = radius * sqrt(sqnorm[i])
                        lower = qa[i] - spread
                        upper = qa[i] + spread
                        slack = screen_rtol * (fabs(lower) + fabs(upper) + fabs(p[i]) + 1.0)
                        if lower > p[i] + slack or upper < p[i] - slack:
                            g = lo[i] if lower > p[i] + slack else hi[i]
                            p_outside += p[i] * g
                            for j in range(k):
                                w_rest[j] += Zc[i, j] * g
                            out[idx[i]] = g
                            if lower > p[i] + slack:
                                dropped_lo[idx[i]] = 1
                            else:
                                dropped_hi[idx[i]] = 1
                            continue
                        if m != i:  # compact everything that stays
                            memcpy(&Zc[m, 0], &Zc[i, 0], k * sizeof(double))
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
                    dgemv(&trans_n, &k, &n, &d_one, &Zc[0, 0], &k, alpha, &one, &d_zero,
                          &wk[0], &one)
                    for j in range(k):
                        wk[j] += w_rest[j]
                    dgemv(&trans_t, &k, &n, &d_one, &Zc[0, 0], &k, &wk[0], &one, &d_zero,
                          qa, &one)
            mu = 0.0
            for i in range(n):
                r_d[i] = qa[i] - p[i] - u[i] + v[i]
                mu += s1[i] * u[i] + s2[i] * v[i]
            mu /= 2.0 * n
            info = 0
            for i in range(n):
                g = u[i] / s1[i] + v[i] / s2[i]
                if not isfinite(g):
                    info = 1
                inv_d[i] = 1.0 / g
            if info or mu <= 0.0:
                break  # the barrier has reached machine precision
            info = _factor(&Zc[0, 0], n, k, &sqnorm[0], inv_d, ib, &Zs[0, 0], &M[0],
                           &ZF[0], &S[0], &ef[0], &fidx[0], fmax, &nf)
            if info != 0:
                break
            # predictor (affine scaling)
            for i in range(n):
                rhs[i] = -r_d[i] - u[i] + v[i]
            _solve(&Zc[0, 0], n, k, &M[0], ib, &S[0], &ef[0], &fidx[0], nf, rhs, dx, tmp,
                   &yk[0], &y2k[0], &y3k[0], &rf[0])
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
                rhs[i] = -r_d[i] - r1[i] / s1[i] + r2[i] / s2[i]
            _solve(&Zc[0, 0], n, k, &M[0], ib, &S[0], &ef[0], &fidx[0], nf, rhs, dx, tmp,
                   &yk[0], &y2k[0], &y3k[0], &rf[0])
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
