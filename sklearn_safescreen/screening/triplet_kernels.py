r"""Compiled kernels of the triplet screening rules (Yoshida et al. 2019).

* the sphere rule with the GB, PGB and DGB balls at an iterate (:func:`ball_codes`),
  which the solver loop runs in place every few steps;
* the sphere rule with a ball centred on a multiple of the reference
  (:func:`scaled_sphere_screen`, RRPB/RPB: O(1) per triplet);
* RRPB range screening along a path (:func:`rrpb_ranges_pass`, :func:`range_screen`);
* the SDP rule (:func:`sdp_pass`: semidefinite least-squares dual ascent) and the
  closed form of the ball intersected with the non-negative orthant for a diagonal
  metric (:func:`diag_pass`).

Every decision is strict with the relative slack ``SCREEN_RTOL`` and every radius is
inflated by ``RADIUS_RTOL``/``RADIUS_ATOL`` (``doc/theory/safety.rst``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.constants import RADIUS_ATOL, RADIUS_RTOL, SCREEN_RTOL
from ..problems.triplet_kernels import pair_forms, sym_part


@njit(cache=True)
def _inflate(r, Q):
    return max(r, 0.0) * (1.0 + RADIUS_RTOL) + RADIUS_ATOL * max(1.0, np.sqrt(np.sum(Q * Q)))


@njit(cache=True)
def _decide(value, r, h, gamma, out, t):
    """Sphere rule (spec 3.1, eq. 4.1), strict with slack: code 2 (R), 1 (L)."""
    lower = value - r * h
    upper = value + r * h
    slack = SCREEN_RTOL * (abs(lower) + abs(upper) + 1.0)
    if lower > 1.0 + slack:
        out[t] = 2
    elif upper < 1.0 - gamma - slack and out[t] != 2:
        out[t] = 1


@njit(cache=True)
def ball_codes(diff, Phi, usev, T, Dq, pos, neg, hn, z, M, G, gap, lam, gamma, use_gb,
               use_pgb, use_dgb):
    """Codes 2 (R), 1 (L), 0 of the sphere rule with the GB, PGB and/or DGB balls at the
    PSD iterate M (gradient G, stable gap) of the reduced problem, over the triplets of
    compact pair indices ``pos``/``neg`` with values ``z`` (see :func:`iterate_ball_codes`)."""
    n = pos.shape[0]
    out = np.zeros(n, dtype=np.int8)
    if use_dgb:
        r = _inflate(np.sqrt(2.0 * max(gap, 0.0) / lam), M)
        for t in range(n):
            _decide(z[t], r, hn[t], gamma, out, t)
    if use_gb or use_pgb:
        Qgb = M - G / (2.0 * lam)
        Qgb = 0.5 * (Qgb + Qgb.T)
        r2 = np.sum(G * G) / (4.0 * lam * lam)
        for which in range(2):
            if (which == 0 and not use_gb) or (which == 1 and not use_pgb):
                continue
            if which == 0:
                Q = Qgb
                r = _inflate(np.sqrt(r2), Q)
            else:
                Q, sqn = sym_part(Qgb, 1.0)
                r = _inflate(np.sqrt(max(r2 - sqn, 0.0)), Q)
            pair_forms(diff, Phi, usev, Q, T, Dq)
            for t in range(n):
                _decide(Dq[pos[t]] - Dq[neg[t]], r, hn[t], gamma, out, t)
    return out


@njit(cache=True)
def iterate_ball_codes(diff, pos, neg, hn, z, M, G, gap, lam, gamma, use_gb, use_pgb,
                       use_dgb):
    r"""The sphere rule with the GB, PGB and/or DGB balls at the PSD iterate ``M`` of the
    reduced problem (gradient ``G``, stable gap ``gap``), full metric, over triplets
    given by pair indices into ``diff``: the compiled form of
    ``screening.triplet.screen_triplets`` with the ``screening.triplet_bounds`` balls
    ``gb`` / ``pgb`` / ``dgb`` (same formulas, same P1 inflation; the solver's built-in
    dynamic screening). ``z`` are :math:`\langle H_t,M\rangle`. Returns codes 2 (R),
    1 (L), 0 per triplet."""
    npairs, d = diff.shape
    return ball_codes(diff, np.empty((0, 0)), False, np.empty((npairs, d)),
                      np.empty(npairs), pos, neg, hn, z, M, G, gap, lam, gamma, use_gb,
                      use_pgb, use_dgb)



@njit(cache=True)
def rrpb_ranges_pass(z, h, m, eps, lam0, gamma, label, lo, hi, keep):
    """Theorem 10 and the derived L-range (spec 4.2), one pass, strict with slack.
    Triplets with ``keep[t]`` (all those whose stored range covers ``lam0`` when
    ``keep`` is empty) keep their range."""
    merge = keep.shape[0] == 0
    for t in range(z.shape[0]):
        if keep[t] if not merge else (label[t] > 0 and lo[t] < lam0 < hi[t]):
            continue
        zt = z[t]
        z_lo = zt - 1e-12 * abs(zt)
        z_hi = zt + 1e-12 * abs(zt)
        ht = h[t]
        hm = ht * m
        if z_lo - eps * ht > 1.0:
            label[t] = 2
            lo[t] = max(lam0 * (hm - z_lo + 2 * eps * ht) / (z_lo - 2.0 + hm), 0.0) * (
                1 + 1e-9)
            hi[t] = lam0 * (hm + z_lo) / (hm - z_lo + 2.0 + 2 * eps * ht) * (1 - 1e-9)
        elif z_hi + eps * ht < 1.0 - gamma:
            label[t] = 1
            lo[t] = max(lam0 * (hm + z_hi + 2 * eps * ht)
                        / (2 * (1 - gamma) + hm - z_hi), 0.0) * (1 + 1e-9)
            den = z_hi + hm + 2 * eps * ht - 2 * (1 - gamma)
            hi[t] = lam0 * (hm - z_hi) / den * (1 - 1e-9) if den > 0 else np.inf
        else:
            label[t] = 0
            lo[t] = np.inf
            hi[t] = -np.inf


@njit(cache=True)
def range_screen(label, lo, hi, lam, status):
    """Spec 4.4 step (1), no rule evaluation: every triplet whose stored RRPB range
    contains ``lam`` gets the range's label in ``status`` (2 = R, 1 = L). Returns
    (n_R, n_L)."""
    n_R = 0
    n_L = 0
    for t in range(label.shape[0]):  # branch-free (labels and ranges look random)
        inside = (lo[t] < lam) & (lam < hi[t])
        code = label[t] * inside
        status[t] = max(status[t], code)
        n_R += code == 2
        n_L += code == 1
    return n_R, n_L


@njit(cache=True)
def scaled_sphere_screen(z0, hn, scale, radius, gamma, status):
    r"""The sphere rule (spec 3.1, eq. 4.1; strict with the P1 slack) with a ball of
    centre ``scale`` times the reference (RRPB/RPB, :math:`\langle H_t,Q\rangle=`
    ``scale`` :math:`z_t(M_0)`, O(1) per triplet) and the already inflated ``radius``,
    over the triplets still active (``status == 0``). Returns (n_R, n_L)."""
    n_R = 0
    n_L = 0
    for t in range(z0.shape[0]):
        if status[t] != 0:
            continue
        hq = scale * z0[t]
        lower = hq - radius * hn[t]
        upper = hq + radius * hn[t]
        slack = SCREEN_RTOL * (abs(lower) + abs(upper) + 1.0)
        if lower > 1.0 + slack:
            status[t] = 2
            n_R += 1
        elif upper < 1.0 - gamma - slack:
            status[t] = 1
            n_L += 1
    return n_R, n_L



@njit(cache=True)
def _sdls_value(Q, sqQ, H, y, C, psd_center):
    """:math:`D(y)=-\\|[Q+yH]_+\\|^2+2Cy+\\|Q\\|^2` and :math:`D'(y)/2` (spec 3.2)."""
    A = Q + y * H
    w, V = np.linalg.eigh(A)
    d = w.shape[0]
    sqA = 0.0
    hq = 0.0
    for r in range(d):
        for c in range(d):
            sqA += A[r, c] * A[r, c]
            hq += A[r, c] * H[r, c]
    # [A]_+ = A - sum_{w_k<0} w_k v_k v_k'; with a PSD Q only the smallest can be < 0
    top = 1 if psd_center else d
    sq_pos = sqA
    hp = hq
    for k in range(top):
        if w[k] >= 0.0:
            break
        vHv = 0.0
        for r in range(d):
            for c in range(d):
                vHv += V[r, k] * H[r, c] * V[c, k]
        sq_pos -= w[k] * w[k]
        hp -= w[k] * vHv
    return -sq_pos + 2.0 * C * y + sqQ, C - hp


@njit(cache=True)
def _sdls_screen(Q, r2, H, C, psd_center, hn2):
    """True if some y has :math:`D(y)>r^2`: then no PSD point of the ball has
    :math:`\\langle X,H\\rangle=C` (weak duality). Bracketing then bisection on the
    monotone derivative, with the early exit; any failure returns False (safe)."""
    sqQ = 0.0
    for r in range(Q.shape[0]):
        for c in range(Q.shape[1]):
            sqQ += Q[r, c] * Q[r, c]
    thr = r2 * (1.0 + 1e-9) + 1e-12
    D0, g0 = _sdls_value(Q, sqQ, H, 0.0, C, psd_center)
    if D0 > thr:
        return True
    if g0 == 0.0 or hn2 <= 0.0:
        return False
    s = 1.0 if g0 > 0 else -1.0
    step = abs(g0) / hn2
    lo, hi = 0.0, 0.0
    found = False
    for _ in range(60):  # bracket the maximiser
        y = s * step
        D, g = _sdls_value(Q, sqQ, H, y, C, psd_center)
        if D > thr:
            return True
        if g * s <= 0.0:
            lo, hi = (0.0, y) if s > 0 else (y, 0.0)
            found = True
            break
        step *= 2.0
    if not found:
        return False
    for _ in range(60):  # bisection on the sign of D'
        y = 0.5 * (lo + hi)
        D, g = _sdls_value(Q, sqQ, H, y, C, psd_center)
        if D > thr:
            return True
        if g > 0.0:
            lo = y
        else:
            hi = y
        if hi - lo <= 1e-14 * max(abs(lo), abs(hi), 1e-300):
            break
    return False


@njit(cache=True)
def sdp_pass(diff, pos, neg, idx, Q, r2, x0, gamma, psd_center, hnorm):
    """SDP rule (spec 3.2) for the candidate triplets ``idx``: ``x0`` are
    :math:`\\langle X_0,H_t\\rangle` at a PSD point of the ball. Returns codes 2 (R), 1
    (L), 0."""
    d = Q.shape[0]
    out = np.zeros(idx.shape[0], dtype=np.int8)
    H = np.empty((d, d))
    for s in range(idx.shape[0]):
        t = idx[s]
        if x0[s] > 1.0:
            C = 1.0
            code = 2
        elif x0[s] < 1.0 - gamma:
            C = 1.0 - gamma
            code = 1
        else:
            continue  # the PSD point X0 itself is in the undecided band
        a = diff[pos[t]]
        b = diff[neg[t]]
        for r in range(d):
            for c in range(d):
                H[r, c] = a[r] * a[c] - b[r] * b[c]
        if _sdls_screen(Q, r2, H, C, psd_center, hnorm[t] * hnorm[t]):
            out[s] = code  # (the hinge has C = 1 on both sides: keep the direction)
    return out


@njit(cache=True)
def _phi(q, h, s):
    v = 0.0
    for k in range(q.shape[0]):
        x = q[k] - s * h[k]
        if x < 0.0:
            x = 0.0
        v += (x - q[k]) ** 2
    return v


@njit(cache=True)
def _orthant_min(q, h, r2):
    r"""A lower bound, tight to round-off, of :math:`\min h^\top x` over
    :math:`\|x-q\|^2\le r^2,\ x\ge0` (P4, Theorems 11-12). With :math:`x(s)=[q-sh]_+`,
    :math:`\phi(s)=\|x(s)-q\|^2` is non-decreasing and :math:`h^\top x(s)` non-increasing,
    so bisection keeping :math:`\phi(s_{hi})\ge r^2` returns :math:`h^\top x(s_{hi})\le`
    the minimum (safe)."""
    d = q.shape[0]
    allpos = True
    far = 0.0  # phi(inf) when h >= 0 (Theorem 12's point)
    for k in range(d):
        if h[k] < 0.0:
            allpos = False
        elif h[k] > 0.0:
            far += q[k] * q[k]
        elif q[k] < 0.0:
            far += q[k] * q[k]
    if allpos and far <= r2:
        return 0.0  # Theorem 12 (alpha = 0): the minimum is 0
    if _phi(q, h, 0.0) > r2 * (1 + 1e-12) + 1e-300:
        return -np.inf  # the ball misses the orthant (round-off): no decision
    hi = 1.0
    for _ in range(200):
        if _phi(q, h, hi) >= r2:
            break
        hi *= 2.0
    else:
        return -np.inf
    lo = 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _phi(q, h, mid) >= r2:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    v = 0.0
    for k in range(d):
        x = q[k] - hi * h[k]
        if x > 0.0:
            v += h[k] * x
    return v


@njit(cache=True)
def diag_pass(diff, pos, neg, idx, q, r2):
    """Lower/upper bounds of :math:`h_t^\\top x` over ball and orthant (spec 3.4)."""
    m = idx.shape[0]
    d = q.shape[0]
    lower = np.empty(m)
    upper = np.empty(m)
    h = np.empty(d)
    nh = np.empty(d)
    for s in range(m):
        t = idx[s]
        for k in range(d):
            h[k] = diff[pos[t], k] ** 2 - diff[neg[t], k] ** 2
            nh[k] = -h[k]
        lower[s] = _orthant_min(q, h, r2)
        upper[s] = -_orthant_min(q, nh, r2)
    return lower, upper

