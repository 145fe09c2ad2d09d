r"""Compiled kernels of the triplet screening rules (Yoshida et al. 2019).

* the sphere rule with the GB, PGB and DGB balls at an iterate (:func:`ball_codes_c`),
  which the solver loop runs every few steps into its own buffers;
* the sphere rule with a ball centred on a multiple of the reference
  (:func:`scaled_sphere_screen`, RRPB/RPB: O(1) per triplet; with bounded reference
  values, :func:`scaled_sphere_screen_rad`) and the certificate's bounds from an earlier
  metric's values (:func:`bounded_values`);
* RRPB range screening along a path (:func:`rrpb_ranges_pass`, :func:`range_screen`);
* the SDP rule (:func:`sdp_pass`: semidefinite least-squares dual ascent) and the
  closed form of the ball intersected with the non-negative orthant for a diagonal
  metric (:func:`diag_pass`).

Every decision is strict with the relative slack ``SCREEN_RTOL`` and every radius is
inflated by ``RADIUS_RTOL``/``RADIUS_ATOL`` (``doc/theory/safety.rst``).

The Python-level functions never write into their arguments (every array argument is a
``const`` view, so read-only arrays are accepted): they return new arrays. The only
buffers written are those of :func:`ball_codes_c`, the solver loop's own output and
workspace, named as such.
"""

from libc.math cimport fabs, sqrt, INFINITY
from libc.string cimport memset

import numpy as np

from ..problems._eigh_fast cimport eigh_rows_c, eigh_workspace, sym_part_c
from ..problems._triplet_fast cimport block_rows_c, pair_forms_c
from ..problems.constants import RADIUS_ATOL, RADIUS_RTOL, SCREEN_RTOL

cdef double _RADIUS_RTOL = RADIUS_RTOL
cdef double _RADIUS_ATOL = RADIUS_ATOL
cdef double _SCREEN_RTOL = SCREEN_RTOL


cdef inline double _frobenius(const double* Q, int d) noexcept nogil:
    cdef int i
    cdef double s = 0.0
    for i in range(d * d):
        s += Q[i] * Q[i]
    return sqrt(s)


cdef inline double _inflate(double r, const double* Q, int d) noexcept nogil:
    return max(r, 0.0) * (1.0 + _RADIUS_RTOL) + _RADIUS_ATOL * max(1.0, _frobenius(Q, d))


cdef inline void _decide(double value, double r, double h, double gamma,
                         signed char* out) noexcept nogil:
    """The sphere rule, strict with slack: code 2 (R), 1 (L)."""
    cdef double lower = value - r * h, upper = value + r * h
    cdef double slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)
    if lower > 1.0 + slack:
        out[0] = 2
    elif upper < 1.0 - gamma - slack and out[0] != 2:
        out[0] = 1


cdef int ball_codes_workspace(int d) noexcept nogil:
    """Doubles of workspace :func:`ball_codes_c` needs."""
    return 4 * d * d + 2 * d + eigh_workspace(d) + d * (d + 1) // 2 + 1


cdef void ball_codes_c(const double* diff, Py_ssize_t npairs, int d, const double* Phi,
                       bint usev, double* T, double* Dq, const int* pos, const int* neg,
                       Py_ssize_t n, const double* hn, const double* z, const double* M,
                       const double* G, double gap, double lam, double gamma, bint use_gb,
                       bint use_pgb, bint use_dgb, signed char* out,
                       double* work) noexcept nogil:
    """Codes 2 (R), 1 (L), 0 of the sphere rule with the GB, PGB and/or DGB balls at the
    PSD iterate M (gradient G, stable gap) of the reduced problem, over the triplets of
    compact pair indices ``pos``/``neg`` with values ``z``, into ``out``.

    Writes only the caller's buffers given for that (the solver loop runs this every few
    steps without allocating): ``out`` (n codes, the result), and the workspaces ``T``
    (npairs x d), ``Dq`` (npairs) and ``work`` (:func:`ball_codes_workspace` doubles),
    whose contents on entry are ignored. Every other argument is read only."""
    cdef Py_ssize_t t
    cdef int i, r_, c, which
    cdef double r, r2 = 0.0, sqn
    cdef double* Qgb = work
    cdef double* Qp = work + d * d
    cdef double* vech = work + 2 * d * d
    cdef double* rest = vech + d * (d + 1) // 2 + 1
    cdef const double* Q
    memset(out, 0, n * sizeof(signed char))
    if use_dgb:
        r = _inflate(sqrt(2.0 * max(gap, 0.0) / lam), M, d)
        for t in range(n):
            _decide(z[t], r, hn[t], gamma, &out[t])
    if not (use_gb or use_pgb):
        return
    for r_ in range(d):
        for c in range(d):
            Qgb[r_ * d + c] = 0.5 * ((M[r_ * d + c] - G[r_ * d + c] / (2.0 * lam))
                                     + (M[c * d + r_] - G[c * d + r_] / (2.0 * lam)))
    for i in range(d * d):
        r2 += G[i] * G[i]
    r2 /= 4.0 * lam * lam
    for which in range(2):
        if (which == 0 and not use_gb) or (which == 1 and not use_pgb):
            continue
        if which == 0:
            Q = Qgb
            r = _inflate(sqrt(r2), Q, d)
        else:
            sqn = sym_part_c(Qgb, d, 1.0, Qp, rest)
            Q = Qp
            r = _inflate(sqrt(max(r2 - sqn, 0.0)), Q, d)
        pair_forms_c(diff, npairs, d, Phi, usev, Q, T, Dq, vech)
        for t in range(n):
            _decide(Dq[pos[t]] - Dq[neg[t]], r, hn[t], gamma, &out[t])


def iterate_ball_codes(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg,
                       const double[::1] hn, const double[::1] z, M_in, G_in, double gap,
                       double lam, double gamma, bint use_gb, bint use_pgb, bint use_dgb):
    r"""The sphere rule with the GB, PGB and/or DGB balls at the PSD iterate ``M`` of the
    reduced problem (gradient ``G``, stable gap ``gap``), full metric, over triplets
    given by pair indices into ``diff``: the compiled form of
    :func:`~sklearn_safescreen.screening.triplet.screen_triplets` with the balls
    ``gb`` / ``pgb`` / ``dgb`` of :mod:`~sklearn_safescreen.screening.triplet_bounds`
    (same formulas, same inflation; the solver's built-in dynamic screening). ``z``
    are :math:`\langle H_t,M\rangle`. Returns codes 2 (R), 1 (L), 0 per triplet."""
    cdef const double[:, ::1] M = np.ascontiguousarray(M_in, dtype=np.float64)
    cdef const double[:, ::1] G = np.ascontiguousarray(G_in, dtype=np.float64)
    cdef Py_ssize_t npairs = diff.shape[0], n = pos.shape[0]
    cdef int d = M.shape[0]
    out = np.zeros(n, dtype=np.int8)
    cdef signed char[::1] o = out
    cdef double[:, ::1] T = np.empty((block_rows_c(npairs, d), d))
    cdef double[::1] Dq = np.empty(max(npairs, 1))
    cdef double[::1] work = np.empty(ball_codes_workspace(d))
    if n == 0:
        return out
    with nogil:
        ball_codes_c(&diff[0, 0], npairs, d, NULL, False, &T[0, 0], &Dq[0], &pos[0],
                     &neg[0], n, &hn[0], &z[0], &M[0, 0], &G[0, 0], gap, lam, gamma,
                     use_gb, use_pgb, use_dgb, &o[0], &work[0])
    return out


# ------------------------------------------------------------- path screening ---
def rrpb_ranges_pass(const double[::1] z, const double[::1] h, double m, double eps,
                     double lam0, double gamma, const signed char[::1] label,
                     const double[::1] lo, const double[::1] hi,
                     const signed char[::1] keep):
    """The intervals of the regularisation on which the RRPB sphere rule screens each
    triplet (Yoshida et al. 2019, Theorem 10 for R, and the L-range derived the same
    way), one pass, strict with slack. Returns new arrays ``(label, lo, hi)``.

    ``label``, ``lo``, ``hi`` are the stored ranges (empty: none stored); triplets with
    ``keep[t]`` (all those whose stored range covers ``lam0`` when ``keep`` is empty)
    keep their stored range, the others get the range of this reference."""
    cdef Py_ssize_t t, n = z.shape[0]
    cdef bint stored = label.shape[0] != 0, merge = keep.shape[0] == 0, kept
    if stored and not (label.shape[0] == lo.shape[0] == hi.shape[0] == n):
        raise ValueError("the stored ranges must have one entry per triplet")
    if not merge and keep.shape[0] != n:
        raise ValueError("keep must have one entry per triplet")
    new_label = np.empty(n, dtype=np.int8)
    new_lo = np.empty(n)
    new_hi = np.empty(n)
    cdef signed char[::1] label_out = new_label
    cdef double[::1] lo_out = new_lo
    cdef double[::1] hi_out = new_hi
    cdef double zt, z_lo, z_hi, ht, hm, den
    with nogil:
        for t in range(n):
            if not stored:
                kept = False
            elif merge:
                kept = label[t] > 0 and lo[t] < lam0 < hi[t]
            else:
                kept = keep[t] != 0
            if kept:
                label_out[t] = label[t]
                lo_out[t] = lo[t]
                hi_out[t] = hi[t]
                continue
            zt = z[t]
            z_lo = zt - 1e-12 * fabs(zt)
            z_hi = zt + 1e-12 * fabs(zt)
            ht = h[t]
            hm = ht * m
            if z_lo - eps * ht > 1.0:
                label_out[t] = 2
                lo_out[t] = max(lam0 * (hm - z_lo + 2 * eps * ht) / (z_lo - 2.0 + hm),
                                0.0) * (1 + 1e-9)
                hi_out[t] = lam0 * (hm + z_lo) / (hm - z_lo + 2.0 + 2 * eps * ht) * (
                    1 - 1e-9)
            elif z_hi + eps * ht < 1.0 - gamma:
                label_out[t] = 1
                lo_out[t] = max(lam0 * (hm + z_hi + 2 * eps * ht)
                                / (2 * (1 - gamma) + hm - z_hi), 0.0) * (1 + 1e-9)
                den = z_hi + hm + 2 * eps * ht - 2 * (1 - gamma)
                hi_out[t] = lam0 * (hm - z_hi) / den * (1 - 1e-9) if den > 0 else INFINITY
            else:
                label_out[t] = 0
                lo_out[t] = INFINITY
                hi_out[t] = -INFINITY
    return new_label, new_lo, new_hi


def range_screen(const signed char[::1] label, const double[::1] lo, const double[::1] hi,
                 double lam, const signed char[::1] status):
    """No rule evaluation: every triplet whose stored RRPB range contains ``lam`` gets
    the range's label (2 = R, 1 = L), where it is above its code in ``status``. Returns
    ``(new_status, n_R, n_L)``: a new array, and the counts of the ranges that contain
    ``lam``."""
    cdef Py_ssize_t t, n = label.shape[0], n_R = 0, n_L = 0
    if status.shape[0] != n or lo.shape[0] != n or hi.shape[0] != n:
        raise ValueError("label, lo, hi and status must have one entry per triplet")
    new_status = np.empty(n, dtype=np.int8)
    cdef signed char[::1] out = new_status
    cdef signed char code
    with nogil:
        for t in range(n):
            code = label[t] if (lo[t] < lam and lam < hi[t]) else 0
            out[t] = code if code > status[t] else status[t]
            if code == 2:
                n_R += 1
            elif code == 1:
                n_L += 1
    return new_status, n_R, n_L


def scaled_sphere_screen(const double[::1] z0, const double[::1] hn, double scale,
                         double radius, double gamma, const signed char[::1] status):
    r"""The sphere rule (strict with slack) with a ball of centre ``scale`` times the
    reference (RRPB/RPB: :math:`\langle H_t,Q\rangle=` ``scale`` :math:`z_t(M_0)`, O(1)
    per triplet) and the already inflated ``radius``, over the triplets still active
    (``status == 0``). Returns ``(new_status, n_R, n_L)``: a new array (the decided
    triplets keep their code) and the counts of the newly decided."""
    cdef Py_ssize_t t, n = z0.shape[0], n_R = 0, n_L = 0
    if hn.shape[0] != n or status.shape[0] != n:
        raise ValueError("z0, hn and status must have one entry per triplet")
    new_status = np.empty(n, dtype=np.int8)
    cdef signed char[::1] out = new_status
    cdef double hq, lower, upper, slack
    cdef signed char s, r, l
    with nogil:
        # without a branch on the outcome: R, L or neither alternate unpredictably along
        # the triplets, so a branch would often be mispredicted, while the selects
        # below cost the same few operations whatever the outcome; a triplet
        # already screened (status != 0) keeps its status and counts nowhere
        for t in range(n):
            hq = scale * z0[t]
            lower = hq - radius * hn[t]
            upper = hq + radius * hn[t]
            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)
            s = status[t]
            r = (s == 0) & (lower > 1.0 + slack)
            l = (s == 0) & (r == 0) & (upper < 1.0 - gamma - slack)
            out[t] = s + 2 * r + l
            n_R += r
            n_L += l
    return new_status, n_R, n_L


def scaled_sphere_screen_rad(const double[::1] z0, const double[::1] zrad,
                             const double[::1] hn, double scale, double radius,
                             double gamma, const signed char[::1] status):
    r""":func:`scaled_sphere_screen` when the reference's values are known only within
    ``zrad[t] * hn[t]`` (:math:`|\langle M_0,H_t\rangle-z_t|\le\rho_t\|H_t\|`): the
    centre's value :math:`c\,z_t` is then within :math:`c\rho_t\|H_t\|`, so the radius
    of triplet t grows by ``scale * zrad[t]``. Same strict decisions with the slack
    ``SCREEN_RTOL``, over the triplets with ``status == 0``. Returns
    ``(new_status, n_R, n_L)``: a new array and the counts of the newly decided."""
    cdef Py_ssize_t t, n = z0.shape[0], n_R = 0, n_L = 0
    if hn.shape[0] != n or zrad.shape[0] != n or status.shape[0] != n:
        raise ValueError("z0, zrad, hn and status must have one entry per triplet")
    new_status = np.empty(n, dtype=np.int8)
    cdef signed char[::1] out = new_status
    cdef double hq, e, lower, upper, slack
    cdef signed char s, r, l
    with nogil:
        for t in range(n):
            hq = scale * z0[t]
            e = (radius + scale * zrad[t]) * hn[t]
            lower = hq - e
            upper = hq + e
            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)
            s = status[t]
            r = (s == 0) & (lower > 1.0 + slack)
            l = (s == 0) & (r == 0) & (upper < 1.0 - gamma - slack)
            out[t] = s + 2 * r + l
            n_R += r
            n_L += l
    return new_status, n_R, n_L


def bounded_values(const double[::1] z0, zrad_in, const double[::1] hn,
                   const signed char[::1] status, double s, double dist, double gamma,
                   bint with_active):
    r"""The certificate's bounds at :math:`M=sM_0+R` from values at :math:`M_0` (one
    pass, O(1) per triplet): :math:`z_t(M)` is within
    :math:`(|s|\rho_t+\|R\|)\|H_t\|` of :math:`s\,z^0_t` (``rho = zrad``, 0 where
    ``zrad_in`` is None; ``dist``: :math:`\|R\|` inflated for round-off), and a
    screened triplet (status 2 = R, 1 = L) whose bound puts it strictly on its side
    (slack ``SCREEN_RTOL``) is. Returns ``(z, rad, exact)``: new arrays of the values
    :math:`s\,z^0_t`, their radii :math:`|s|\rho_t+\|R\|`, and the indices (in
    order) of the screened triplets the bound does not decide, with the active ones
    when ``with_active``: those to evaluate exactly."""
    cdef Py_ssize_t t, n = z0.shape[0], m = 0
    cdef const double[::1] zrad
    cdef bint has_rad = zrad_in is not None
    if has_rad:
        zrad = zrad_in
        if zrad.shape[0] != n:
            raise ValueError("zrad must have one entry per triplet")
    if hn.shape[0] != n or status.shape[0] != n:
        raise ValueError("z0, hn and status must have one entry per triplet")
    z_arr, rad_arr = np.empty(n), np.empty(n)
    idx_arr = np.empty(n, dtype=np.intp)
    cdef double[::1] z = z_arr
    cdef double[::1] rad = rad_arr
    cdef Py_ssize_t[::1] idx = idx_arr
    cdef double abs_s = fabs(s), r, e, lower, upper, slack, v
    cdef signed char st
    cdef bint on_side
    with nogil:
        for t in range(n):
            if has_rad:
                r = abs_s * zrad[t] + dist
            else:
                r = dist
            v = s * z0[t]
            e = r * hn[t]
            lower = v - e
            upper = v + e
            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)
            st = status[t]
            on_side = ((st == 2) & (lower > 1.0 + slack)) | (
                (st == 1) & (upper < 1.0 - gamma - slack))
            z[t] = v
            rad[t] = r
            if not on_side and (with_active or st != 0):
                idx[m] = t
                m += 1
    return z_arr, rad_arr, idx_arr[:m].copy()


# ------------------------------------------------------------------- SDP rule ---
cdef void _sdls_value(const double* Q, double sqQ, const double* H, double y, double C,
                      bint psd_center, int d, double* A, double* w, double* W,
                      double* work, double* value, double* half_slope) noexcept nogil:
    """:math:`D(y)=-\\|[Q+yH]_+\\|^2+2Cy+\\|Q\\|^2` and :math:`D'(y)/2` (semidefinite
    least squares dual)."""
    cdef int i, k, r, c, kmin
    cdef double sqA = 0.0, hq = 0.0, sq_pos, hp, vHv, wmin
    for i in range(d * d):
        A[i] = Q[i] + y * H[i]
        sqA += A[i] * A[i]
        hq += A[i] * H[i]
    eigh_rows_c(A, d, w, W, work)
    sq_pos = sqA
    hp = hq
    # [A]_+ = A - sum_{w_k<0} w_k v_k v_k'; with a PSD Q only the smallest can be < 0
    kmin = 0
    wmin = w[0]
    for k in range(1, d):
        if w[k] < wmin:
            wmin = w[k]
            kmin = k
    for k in range(d):
        if w[k] >= 0.0 or (psd_center and k != kmin):
            continue
        vHv = 0.0
        for r in range(d):
            for c in range(d):
                vHv += W[k * d + r] * H[r * d + c] * W[k * d + c]
        sq_pos -= w[k] * w[k]
        hp -= w[k] * vHv
    value[0] = -sq_pos + 2.0 * C * y + sqQ
    half_slope[0] = C - hp


cdef inline double _tangent_cap(double p, double Dp, double sp, double q, double Dq,
                                double sq) noexcept nogil:
    """An upper bound of a concave D on [p, q] from its values and half-slopes at both
    ends (``sp >= 0 >= sq``): the two tangent lines meet above every value of D."""
    cdef double y
    if sp - sq <= 0.0:
        return max(Dp, Dq)
    y = (Dq - Dp + 2.0 * (sp * p - sq * q)) / (2.0 * (sp - sq))
    y = min(max(y, p), q)
    return Dp + 2.0 * sp * (y - p)


cdef bint _sdls_screen(const double* Q, double r2, const double* H, double C,
                       bint psd_center, double hn2, int d, double* A, double* w,
                       double* W, double* work, bint early_exit, long long max_eig,
                       long long* n_eig) noexcept nogil:
    """True if some y has :math:`D(y)>r^2`: then no PSD point of the ball has
    :math:`\\langle X,H\\rangle=C` (weak duality). Bracketing then bisection on the
    monotone derivative, with the early exit on success; with ``early_exit``, also on
    failure as soon as the tangent lines at the ends of the bracket (D is concave) cap
    D below the threshold. Any failure returns False (safe). ``n_eig`` counts the
    eigendecompositions; none is started once it reaches ``max_eig >= 0`` (False)."""
    cdef int i, it
    cdef double sqQ = 0.0, thr, D0, g0, s, step, lo, hi, y, D, g
    cdef double Dlo, glo, Dhi, ghi
    cdef bint found = False
    for i in range(d * d):
        sqQ += Q[i] * Q[i]
    thr = r2 * (1.0 + 1e-9) + 1e-12
    if 0 <= max_eig <= n_eig[0]:
        return False
    _sdls_value(Q, sqQ, H, 0.0, C, psd_center, d, A, w, W, work, &D0, &g0)
    n_eig[0] += 1
    if D0 > thr:
        return True
    if g0 == 0.0 or hn2 <= 0.0:
        return False
    s = 1.0 if g0 > 0 else -1.0
    step = fabs(g0) / hn2
    lo = 0.0
    hi = 0.0
    Dlo = Dhi = D0
    glo = ghi = g0
    for it in range(60):  # bracket the maximiser (from the last point before it)
        if 0 <= max_eig <= n_eig[0]:
            return False
        y = s * step
        _sdls_value(Q, sqQ, H, y, C, psd_center, d, A, w, W, work, &D, &g)
        n_eig[0] += 1
        if D > thr:
            return True
        if g * s <= 0.0:
            if s > 0:
                hi, Dhi, ghi = y, D, g
            else:
                lo, Dlo, glo = y, D, g
            found = True
            break
        if s > 0:
            lo, Dlo, glo = y, D, g
        else:
            hi, Dhi, ghi = y, D, g
        step *= 2.0
    if not found:
        return False
    for it in range(60):  # bisection on the sign of D'
        if early_exit and _tangent_cap(lo, Dlo, glo, hi, Dhi, ghi) <= thr:
            return False  # no y of the bracket can reach the threshold
        if 0 <= max_eig <= n_eig[0]:
            return False
        y = 0.5 * (lo + hi)
        _sdls_value(Q, sqQ, H, y, C, psd_center, d, A, w, W, work, &D, &g)
        n_eig[0] += 1
        if D > thr:
            return True
        if g > 0.0:
            lo, Dlo, glo = y, D, g
        else:
            hi, Dhi, ghi = y, D, g
        if hi - lo <= 1e-14 * max(fabs(lo), fabs(hi), 1e-300):
            break
    return False


cdef double _projected_extreme(const double* Q, const double* H, double hq, double hn,
                               double r, double sgn, int d, double* A, double* w,
                               double* W, double* work) noexcept nogil:
    """:math:`\\langle [Q-\\mathrm{sgn}\\,rH/\\|H\\|]_+,H\\rangle` for a PSD centre Q: the
    projection is at most r from Q (it is non-expansive and Q is its own projection),
    so it is a PSD point of the ball, and its value bounds the minimum over that set
    from above (``sgn=1``) or the maximum from below (``sgn=-1``). Q - sgn r H/|H| is
    PSD plus a rank-one negative term, so only its smallest eigenvalue can be < 0."""
    cdef int i, k, r_, c, kmin = 0
    cdef double vHv = 0.0, value = hq - sgn * r * hn
    for i in range(d * d):
        A[i] = Q[i] - sgn * r * H[i] / hn
    eigh_rows_c(A, d, w, W, work)
    for k in range(1, d):
        if w[k] < w[kmin]:
            kmin = k
    if w[kmin] >= 0.0:
        return value
    for r_ in range(d):
        for c in range(d):
            vHv += W[kmin * d + r_] * H[r_ * d + c] * W[kmin * d + c]
    return value - w[kmin] * vHv


def sdp_pass(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg, idx_in,
             Q_in, double r2, const double[::1] x0, double gamma, bint psd_center,
             const double[::1] hnorm, bint fast=True, long long max_eig=-1):
    """The SDP rule for the candidate triplets ``idx``: ``x0`` are
    :math:`\\langle X_0,H_t\\rangle` at a PSD point of the ball. Returns codes 2 (R),
    1 (L), 0 and the number of eigendecompositions spent.

    With ``fast`` (a PSD centre), a candidate is first tested at the PSD point of the
    ball farthest along :math:`\\mp H_t` after projection (one eigendecomposition): if
    that point is not beyond the threshold, no dual value can exceed the radius and the
    dual ascent is skipped; the ascent also stops on failure once its tangent lines cap
    the dual below the radius. Both only skip work that cannot screen: the decisions
    are those of ``fast=False`` (up to round-off at the threshold).

    With ``max_eig >= 0`` at most that many eigendecompositions are spent: the
    candidates left when they run out stay undecided (safe)."""
    cdef const long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef const double[:, ::1] Q = np.ascontiguousarray(Q_in, dtype=np.float64)
    cdef int d = Q.shape[0], r, c
    cdef Py_ssize_t s, t, m = idx.shape[0]
    out = np.zeros(m, dtype=np.int8)
    cdef signed char[::1] o = out
    cdef double[::1] H = np.empty(d * d + 1)
    cdef double[::1] A = np.empty(d * d + 1)
    cdef double[::1] w = np.empty(d + 1)
    cdef double[::1] W = np.empty(d * d + 1)
    cdef double[::1] work = np.empty(eigh_workspace(d) + 1)
    cdef double C, hq, sgn, radius = sqrt(max(r2, 0.0)), extreme
    cdef signed char code
    cdef long long n_eig = 0
    cdef bint prefilter = fast and psd_center
    with nogil:
        for s in range(m):
            if 0 <= max_eig <= n_eig:
                break
            t = idx[s]
            if x0[s] > 1.0:
                C = 1.0
                code = 2
                sgn = 1.0
            elif x0[s] < 1.0 - gamma:
                C = 1.0 - gamma
                code = 1
                sgn = -1.0
            else:
                continue  # the PSD point X0 itself is in the undecided band
            hq = 0.0
            for r in range(d):
                for c in range(d):
                    H[r * d + c] = (diff[pos[t], r] * diff[pos[t], c]
                                    - diff[neg[t], r] * diff[neg[t], c])
                    hq += Q[r, c] * H[r * d + c]
            if prefilter and hnorm[t] > 0.0:
                extreme = _projected_extreme(&Q[0, 0], &H[0], hq, hnorm[t], radius, sgn,
                                             d, &A[0], &w[0], &W[0], &work[0])
                n_eig += 1
                if sgn * (extreme - C) <= 0.0:
                    continue  # a PSD point of the ball reaches the threshold
            if _sdls_screen(&Q[0, 0], r2, &H[0], C, psd_center, hnorm[t] * hnorm[t], d,
                            &A[0], &w[0], &W[0], &work[0], fast, max_eig, &n_eig):
                o[s] = code  # (the hinge has C = 1 on both sides: keep the direction)
    return out, int(n_eig)


# ---------------------------------------------------------- diagonal metric ---
cdef double _phi(const double* q, const double* h, double s, int d) noexcept nogil:
    cdef int k
    cdef double v = 0.0, x
    for k in range(d):
        x = q[k] - s * h[k]
        if x < 0.0:
            x = 0.0
        v += (x - q[k]) * (x - q[k])
    return v


cdef double _orthant_min(const double* q, const double* h, double r2, int d) noexcept nogil:
    r"""A lower bound, tight to round-off, of :math:`\min h^\top x` over
    :math:`\|x-q\|^2\le r^2,\ x\ge0` (Yoshida et al. 2019, Theorems 11-12). With
    :math:`x(s)=[q-sh]_+`, :math:`\phi(s)=\|x(s)-q\|^2` is non-decreasing and
    :math:`h^\top x(s)` non-increasing, so bisection keeping :math:`\phi(s_{hi})\ge r^2`
    returns :math:`h^\top x(s_{hi})\le` the minimum (safe)."""
    cdef int k, it
    cdef bint allpos = True, found = False
    cdef double far = 0.0, hi = 1.0, lo = 0.0, mid, v = 0.0, x
    for k in range(d):
        if h[k] < 0.0:
            allpos = False
        elif h[k] > 0.0:
            far += q[k] * q[k]
        elif q[k] < 0.0:
            far += q[k] * q[k]
    if allpos and far <= r2:
        return 0.0  # Theorem 12 (alpha = 0): the minimum is 0
    if _phi(q, h, 0.0, d) > r2 * (1 + 1e-12) + 1e-300:
        return -INFINITY  # the ball misses the orthant (round-off): no decision
    for it in range(200):
        if _phi(q, h, hi, d) >= r2:
            found = True
            break
        hi *= 2.0
    if not found:
        return -INFINITY
    for it in range(100):
        mid = 0.5 * (lo + hi)
        if _phi(q, h, mid, d) >= r2:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    for k in range(d):
        x = q[k] - hi * h[k]
        if x > 0.0:
            v += h[k] * x
    return v


def diag_pass(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg, idx_in,
              q_in, double r2):
    """Lower and upper bounds of :math:`h_t^\\top x` over the ball intersected with the
    non-negative orthant (the diagonal metric's closed form), for the triplets ``idx``
    (``diff`` holds the squared pair differences of a diagonal set)."""
    cdef const long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef const double[::1] q = np.ascontiguousarray(q_in, dtype=np.float64)
    cdef Py_ssize_t m = idx.shape[0], s, t
    cdef int d = q.shape[0], k
    lower = np.empty(m)
    upper = np.empty(m)
    cdef double[::1] lo = lower
    cdef double[::1] up = upper
    cdef double[::1] h = np.empty(d + 1)
    cdef double[::1] nh = np.empty(d + 1)
    with nogil:
        for s in range(m):
            t = idx[s]
            for k in range(d):
                h[k] = diff[pos[t], k] - diff[neg[t], k]
                nh[k] = -h[k]
            lo[s] = _orthant_min(&q[0], &h[0], r2, d)
            up[s] = -_orthant_min(&q[0], &nh[0], r2, d)
    return lower, upper
