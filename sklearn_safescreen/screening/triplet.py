r"""Safe triplet screening rules (spec triplet section 3).

Given a ball :math:`\mathcal B\ni M^\star` (``triplet_bounds``), a triplet is proven in

* :math:`\mathcal R^\star` (zero loss, :math:`\alpha^\star_t=0`) if
  :math:`\min_{X\in\mathcal B'}\langle X,H_t\rangle>1` (R2),
* :math:`\mathcal L^\star` (linear loss, :math:`\alpha^\star_t=1`) if
  :math:`\max_{X\in\mathcal B'}\langle X,H_t\rangle<1-\gamma` (R1),

where :math:`\mathcal B'` is the ball itself (``"sphere"``, eq. 4.1), the ball cut by a
half-space containing the PSD cone (``"linear"``, Theorem 9, closed form), or the ball
intersected with the PSD cone (``"sdp"``: semidefinite least squares dual ascent with the
single-negative-eigenvalue shortcut, spec 3.2; for a diagonal metric the closed form of
Theorems 11-12, spec 3.4). Comparisons are strict and radii inflated (pitfall P1).

Costs per pass: :math:`\langle H_t,Q\rangle` and :math:`\langle H_t,P\rangle` through the
pair quadratic forms (O(n_pairs d^2) + O(1) per triplet, spec 3.6); sphere and linear
rules O(1) per triplet; the SDP rule O(d^3) per dual-ascent step and candidate triplet
(only triplets the cheaper rules left, which pass the :math:`X_0` precheck); the
diagonal rule O(d) per bisection step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._triplets import TripletSet
from ..solvers.psd_gradient import SCREEN_RTOL, triplet_values
from ..solvers.psd_gradient import iterate_ball_codes as dynamic_sphere_full  # noqa: F401
from .triplet_bounds import Ball

TRIPLET_RULES = ("sphere", "linear", "sdp")


@dataclass
class TripletScreening:
    """Decisions of one rule over the triplets ``idx``: boolean masks aligned with it."""

    to_R: np.ndarray
    to_L: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @property
    def n_screened(self) -> int:
        return int(self.to_R.sum() + self.to_L.sum())


def decide(lower: np.ndarray, upper: np.ndarray, gamma: float):
    """Strict R2 (lower > 1) and R1 (upper < 1 - gamma) with a relative slack."""
    slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + 1.0)
    return lower > 1.0 + slack, upper < 1.0 - gamma - slack


def sphere_bounds(hq: np.ndarray, hn: np.ndarray, r: float):
    r"""Eq. 4.1: :math:`\langle H,Q\rangle\mp r\|H\|`."""
    return hq - r * hn, hq + r * hn


def linear_min(hq, hn, r, ph, pq: float, pp: float, delta: float = 1e-12):
    r"""Theorem 9: :math:`\min\langle X,H\rangle` s.t. :math:`\|X-Q\|\le r`,
    :math:`\langle P,X\rangle\ge0`, vectorised over triplets (``hq``, ``hn``, ``ph``
    arrays; ``pq``, ``pp`` scalars). Degenerate cases fall back to the sphere value,
    and the result is clamped at it (both always valid lower bounds)."""
    base = hq - r * hn
    if pp <= 0.0 or r <= 0.0:
        return base
    with np.errstate(divide="ignore", invalid="ignore"):
        feasible = pq - r * ph / np.where(hn > 0, hn, 1.0) >= 0.0
        num = pp * hn * hn - ph * ph
        den = r * r * pp - pq * pq
        ok = ~feasible & (num > delta * pp * hn * hn) & (den > 0) & (hn > 0)
        alpha = np.sqrt(np.where(ok, num / den, 1.0))
        beta = (ph - alpha * pq) / pp
        value = hq + (beta * ph - hn * hn) / alpha
    return np.where(ok, np.maximum(value, base), base)


def linear_bounds(hq, hn, r, ph, pq, pp):
    """Lower and upper bounds of :math:`\\langle X,H\\rangle` over the ball cut by the
    half-space (R1 through :math:`-H`, spec 3.3)."""
    return linear_min(hq, hn, r, ph, pq, pp), -linear_min(-hq, hn, r, -ph, pq, pp)


# ---------------------------------------------------------------- SDP rule ---
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
def _sdp_pass(diff, pos, neg, idx, Q, r2, x0, gamma, psd_center, hnorm):
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


# ------------------------------------------------------------- diagonal P4 ---
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
def _diag_pass(diff, pos, neg, idx, q, r2):
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


# ------------------------------------------------------------------ driver ---
def screen_triplets(ts: TripletSet, ball: Ball, rule: str, gamma: float, diagonal: bool,
                    idx: np.ndarray, ref_values: np.ndarray | None = None,
                    x0_values: np.ndarray | None = None,
                    values=None) -> TripletScreening:
    r"""Apply ``rule`` with ``ball`` to the triplets ``idx``.

    Parameters
    ----------
    ts : TripletSet
    ball : Ball
    rule : {"sphere", "linear", "sdp"}
        ``"linear"`` uses ``ball.plane`` (sphere when the ball has none); ``"sdp"``
        intersects with the PSD cone (closed form for a diagonal metric).
    gamma : float
        Smoothing (0 for the hinge).
    diagonal : bool
    idx : ndarray of int
        Triplets to test.
    ref_values : ndarray, optional
        :math:`\langle H_t, M_{ref}\rangle` over ``idx`` when ``ball.scale`` is set
        (then :math:`\langle H_t,Q\rangle` costs O(1), spec 2.6).
    x0_values : ndarray, optional
        For the SDP rule with a non-PSD centre (GB): :math:`\langle H_t,X_0\rangle` at a
        PSD point of the ball (the reference). Without it the PSD centre is used.
    values : callable, optional
        ``values(A)`` returns :math:`\langle H_t,A\rangle` over ``idx`` (e.g. through
        the compact pairs of the solver's working set); default: through all pairs.
    """
    if rule not in TRIPLET_RULES:
        raise ValueError(f"unknown rule {rule!r}; expected one of {TRIPLET_RULES}")
    idx = np.asarray(idx, dtype=np.int32)
    if values is None:
        def values(A):
            return triplet_values(ts, A, diagonal, idx)
    Q, r = ball.center, ball.radius
    if ball.scale is not None and ref_values is not None:
        hq = ball.scale * ref_values
    else:
        hq = values(Q)
    hn = ts.hnorm[idx]
    lower, upper = sphere_bounds(hq, hn, r)
    if rule == "linear" and ball.plane is not None:
        P = ball.plane
        pp = float(np.sum(P * P))
        if pp > 0.0:
            ph = values(P)
            pq = float(np.sum(P * Q))
            lo_lin, up_lin = linear_bounds(hq, hn, r, ph, pq, pp)
            lower, upper = np.maximum(lower, lo_lin), np.minimum(upper, up_lin)
    to_R, to_L = decide(lower, upper, gamma)
    if rule == "sdp":
        if diagonal:
            cand = np.flatnonzero(~(to_R | to_L))
            lo_d, up_d = _diag_pass(ts.diff, ts.pos, ts.neg, idx[cand],
                                    np.ascontiguousarray(Q, dtype=np.float64), r * r)
            lower[cand] = np.maximum(lower[cand], lo_d)
            upper[cand] = np.minimum(upper[cand], up_d)
            to_R, to_L = decide(lower, upper, gamma)
        else:
            x0 = hq if (ball.psd_center or x0_values is None) else x0_values
            if not ball.psd_center and x0_values is None:
                raise ValueError("the SDP rule with a non-PSD centre needs x0_values")
            # candidates: undecided and with the PSD point X0 outside the band (3.2)
            cand = np.flatnonzero(~(to_R | to_L) & ((x0 > 1.0) | (x0 < 1.0 - gamma)))
            if cand.size:
                codes = _sdp_pass(ts.diff, ts.pos, ts.neg, idx[cand],
                                  np.ascontiguousarray(Q, dtype=np.float64), r * r,
                                  np.ascontiguousarray(x0[cand]), gamma, ball.psd_center,
                                  ts.hnorm)
                to_R[cand[codes == 2]] = True
                to_L[cand[codes == 1]] = True
    return TripletScreening(to_R, to_L, lower, upper)

