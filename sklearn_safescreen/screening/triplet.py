r"""Safe triplet screening rules (Yoshida et al. 2019, Sec. 4;
``doc/theory/metric_learning.rst``).

Given a ball :math:`\mathcal B\ni M^\star` (``triplet_bounds``), a triplet is proven in

* :math:`\mathcal R^\star` (zero loss, :math:`\alpha^\star_t=0`) if
  :math:`\min_{X\in\mathcal B'}\langle X,H_t\rangle>1`,
* :math:`\mathcal L^\star` (linear loss, :math:`\alpha^\star_t=1`) if
  :math:`\max_{X\in\mathcal B'}\langle X,H_t\rangle<1-\gamma`,

where :math:`\mathcal B'` is the ball itself (``"sphere"``, eq. 4.1), the ball cut by a
half-space containing the PSD cone (``"linear"``, Theorem 9, closed form), or the ball
intersected with the PSD cone (``"sdp"``: semidefinite least squares dual ascent with the
single-negative-eigenvalue shortcut; for a diagonal metric the closed form of
Theorems 11-12). Comparisons are strict and radii inflated (``doc/theory/safety.rst``).

Costs per pass: :math:`\langle H_t,Q\rangle` and :math:`\langle H_t,P\rangle` through the
pair quadratic forms (O(n_pairs d^2) + O(1) per triplet); sphere and linear
rules O(1) per triplet; the SDP rule O(d^3) per dual-ascent step and candidate triplet
(only triplets the cheaper rules left, which pass the :math:`X_0` precheck); the
diagonal rule O(d) per bisection step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.constants import SCREEN_RTOL
from ..problems.triplet_problem import triplet_values
from ..problems.triplets import TripletSet
from ._triplet_fast import diag_pass, sdp_pass
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
    half-space (the upper bound through :math:`-H`; Yoshida et al. 2019, Theorem 9)."""
    return linear_min(hq, hn, r, ph, pq, pp), -linear_min(-hq, hn, r, -ph, pq, pp)


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
        (then :math:`\langle H_t,Q\rangle` costs O(1)).
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
            lo_d, up_d = diag_pass(ts.diff, ts.pos, ts.neg, idx[cand],
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
                codes = sdp_pass(ts.diff, ts.pos, ts.neg, idx[cand],
                                  np.ascontiguousarray(Q, dtype=np.float64), r * r,
                                  np.ascontiguousarray(x0[cand]), gamma, ball.psd_center,
                                  ts.hnorm)
                to_R[cand[codes == 2]] = True
                to_L[cand[codes == 1]] = True
    return TripletScreening(to_R, to_L, lower, upper)

