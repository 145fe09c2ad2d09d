r"""Compiled kernels of the triplet sphere rule (Yoshida et al. 2019).

* the sphere rule with the GB, PGB and DGB balls at an iterate (:func:`ball_codes_c`),
  which the solver loop runs every few steps into its own buffers;
* the sphere rule with a ball centred on a multiple of the reference
  (:func:`scaled_sphere_screen`, RRPB/RPB: O(1) per triplet; with bounded reference
  values, :func:`scaled_sphere_screen_rad`) and the certificate's bounds from an earlier
  metric's values (:func:`bounded_values`);
* RRPB range screening along a path (:func:`rrpb_ranges_pass`, :func:`range_screen`).

The rules that use the PSD cone or the orthant as well as the ball (the SDP rule, the
diagonal metric's closed form) are in ``_triplet_cone_fast.pyx``.

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

from ..problems._eigh_fast cimport eigh_workspace, sym_part_c
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
