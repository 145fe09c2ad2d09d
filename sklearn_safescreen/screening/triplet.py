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
rules O(1) per triplet; the diagonal rule O(d) per bisection step. The SDP rule costs
O(d^3) per dual-ascent step and candidate, so it runs on the triplets the cheaper rules
leave, in stages that each skip the triplets it provably cannot screen: the sphere and
linear rules (the PSD cone lies in the half-space, so what they screen the SDP rule
screens too); the points :math:`tQ` of the ball (O(1): with a PSD centre,
:math:`t\in[\max(0,1-r/\|Q\|),1+r/\|Q\|]`) and the PSD point :math:`X_0`; the projection of
the ball's extreme point :math:`[Q\mp rH_t/\|H_t\|]_+` (one eigendecomposition); then the
dual ascent, which stops on failure once the tangent lines of the concave dual cap it
below the radius. A PSD point of the ball on the threshold's side proves that no dual
value exceeds the radius, so these stages change the cost, not the decisions.
:class:`SdpSchedule` decides when the SDP stage runs and bounds its cost by the solver's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.constants import SCREEN_RTOL
from ..problems.triplet_problem import triplet_values
from ..problems.triplets import TripletSet
from ._triplet_cone_fast import diag_pass, sdp_pass
from .triplet_bounds import Ball

TRIPLET_RULES = ("sphere", "linear", "sdp")


@dataclass
class TripletScreening:
    """Decisions of one rule over the triplets ``idx``: boolean masks aligned with it."""

    to_R: np.ndarray
    to_L: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_sdp: int = 0  # triplets the SDP stage decided beyond the cheaper rules
    n_eig: int = 0  # eigendecompositions the SDP stage spent

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
                    values=None, decided: np.ndarray | None = None,
                    max_eig: int | None = None) -> TripletScreening:
    r"""Apply ``rule`` with ``ball`` to the triplets ``idx``.

    Parameters
    ----------
    ts : TripletSet
    ball : Ball
    rule : {"sphere", "linear", "sdp"}
        ``"linear"`` uses ``ball.plane`` (sphere when the ball has none); ``"sdp"``
        applies the linear rule, then intersects with the PSD cone (closed form for a
        diagonal metric) on the triplets still undecided (see the module docstring).
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
    decided : ndarray of bool, optional
        Triplets of ``idx`` already decided (e.g. by another ball): the SDP stage skips
        them.
    max_eig : int, optional
        Budget of the SDP stage in eigendecompositions (see :class:`SdpSchedule`): no
        candidate is started once it is spent (the rest stay undecided). Default: none.
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
    if rule in ("linear", "sdp") and ball.plane is not None:
        P = ball.plane
        pp = float(np.sum(P * P))
        if pp > 0.0:
            ph = values(P)
            pq = float(np.sum(P * Q))
            lo_lin, up_lin = linear_bounds(hq, hn, r, ph, pq, pp)
            lower, upper = np.maximum(lower, lo_lin), np.minimum(upper, up_lin)
    to_R, to_L = decide(lower, upper, gamma)
    n_sdp = n_eig = 0
    if rule == "sdp":
        open_ = ~(to_R | to_L) if decided is None else ~(to_R | to_L | decided)
        if diagonal:
            cand = np.flatnonzero(open_)
            lo_d, up_d = diag_pass(ts.diff, ts.pos, ts.neg, idx[cand],
                                    np.ascontiguousarray(Q, dtype=np.float64), r * r)
            lower[cand] = np.maximum(lower[cand], lo_d)
            upper[cand] = np.minimum(upper[cand], up_d)
            new_R, new_L = decide(lower, upper, gamma)
            n_sdp = int(np.count_nonzero((new_R & ~to_R) | (new_L & ~to_L)))
            to_R, to_L = new_R, new_L
        else:
            x0 = hq if (ball.psd_center or x0_values is None) else x0_values
            if not ball.psd_center and x0_values is None:
                raise ValueError("the SDP rule with a non-PSD centre needs x0_values")
            # candidates: undecided, with the PSD point X0 outside the band (3.2) and, for
            # a PSD centre, every point tQ of the ball beyond the threshold
            want_R, want_L = x0 > 1.0, x0 < 1.0 - gamma
            if ball.psd_center:
                want_R, want_L = _scaled_center_filter(hq, Q, r, gamma, want_R, want_L)
            cand = np.flatnonzero(open_ & (want_R | want_L))
            if cand.size:
                codes, n_eig = sdp_pass(
                    ts.diff, ts.pos, ts.neg, idx[cand],
                    np.ascontiguousarray(Q, dtype=np.float64), r * r,
                    np.ascontiguousarray(x0[cand]), gamma, ball.psd_center, ts.hnorm,
                    True, -1 if max_eig is None else int(max_eig))
                to_R[cand[codes == 2]] = True
                to_L[cand[codes == 1]] = True
                n_sdp = int(np.count_nonzero(codes))
    return TripletScreening(to_R, to_L, lower, upper, n_sdp, n_eig)


def _scaled_center_filter(hq, Q, r, gamma, want_R, want_L):
    r"""Drop the candidates a point :math:`tQ` of the ball already rules out: for a PSD
    centre, :math:`tQ` is PSD and in the ball for
    :math:`t\in[\max(0,1-r/\|Q\|),\,1+r/\|Q\|]`, and :math:`\langle tQ,H_t\rangle=t\,\langle
    Q,H_t\rangle` is linear in t, so its extremes are at the ends (O(1) per triplet)."""
    nq = float(np.linalg.norm(Q))
    if nq == 0.0:
        return np.zeros_like(want_R), want_L  # Q = 0: the value 0 is in the set
    lo_t, hi_t = max(0.0, 1.0 - r / nq), 1.0 + r / nq
    v_lo, v_hi = lo_t * hq, hi_t * hq
    return (want_R & (np.minimum(v_lo, v_hi) > 1.0),
            want_L & (np.maximum(v_lo, v_hi) < 1.0 - gamma))


class SdpSchedule:
    """When, and how much, the SDP stage of ``rule="sdp"`` runs (the cheaper rules run at
    every check).

    The SDP stage costs O(d^3) per candidate where the other rules cost O(1), and often
    decides nothing they did not (e.g. far from the solution, where every ball is
    large). Two deterministic limits (they count checks, iterations and
    eigendecompositions, not seconds, so a fit does not depend on the machine's load):

    * **budget**: the stage may spend at most ``per_iteration`` eigendecompositions per
      solver iteration made so far (:meth:`credit`; along a warm-started path the
      iterations of the earlier fits count too). Every solver iteration makes one
      eigendecomposition of the same size (the projection) and more work besides, so
      with the default 1 the rule costs at most about as much as the solver, plus one
      pass of the cheap filters per check;
    * **yield**: after a check at which it decides no triplet beyond the cheaper rules,
      it is skipped at the next 1, 2, 4, ... checks (the wait doubles at every
      fruitless evaluation); a check at which it decides something makes the next check
      evaluate it again. :meth:`start_fit` resets the wait (a new ``alpha`` is a new
      problem), not the budget.
    """

    def __init__(self, per_iteration: float = 1.0):
        self.per_iteration = float(per_iteration)
        self.iterations = 0.0  # solver iterations credited, earlier fits included
        self._fit_base = 0.0
        self.spent = 0  # eigendecompositions spent
        self.wait = 0
        self.backoff = 0
        self.n_evaluated = 0
        self.n_skipped = 0

    @property
    def budget(self) -> int:
        """Eigendecompositions the stage may spend now."""
        return max(int(self.per_iteration * self.iterations) - self.spent, 0)

    def start_fit(self) -> None:
        """A new fit (a new ``alpha``): the wait is reset, the budget kept."""
        self._fit_base = self.iterations
        self.wait = self.backoff = 0

    def end_fit(self, n_iter: int) -> None:
        """The fit made ``n_iter`` solver iterations in all."""
        self.iterations = self._fit_base + float(n_iter)

    def credit(self, n_iter: int) -> None:
        """The current fit's solver has made ``n_iter`` iterations so far."""
        self.iterations = max(self.iterations, self._fit_base + float(n_iter))

    def due(self) -> bool:
        """Whether this check evaluates the SDP stage (else it is counted as skipped)."""
        if self.wait > 0 or self.budget <= 0:
            self.wait = max(self.wait - 1, 0)
            self.n_skipped += 1
            return False
        return True

    def record(self, n_decided: int, n_eig: int) -> None:
        """The SDP stage was evaluated: it decided ``n_decided`` triplets beyond the
        cheaper rules and spent ``n_eig`` eigendecompositions."""
        self.n_evaluated += 1
        self.spent += int(n_eig)
        if n_decided > 0:
            self.backoff = self.wait = 0
        else:
            self.backoff = max(1, 2 * self.backoff)
            self.wait = self.backoff
