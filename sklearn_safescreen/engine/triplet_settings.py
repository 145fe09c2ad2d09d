"""What a step of the triplet family reads and leaves: its settings, the path's tuning
values (:class:`TripletOptions`), the reference solution (the last certified metric,
its triplets' values and the stored RRPB ranges) and the next solve's start point from
it."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np

from ..problems.triplets import TripletSet
from ..screening import triplet_bounds as tb
from .protocol import StepSettings

#: The balls a ``screening`` value names.
BOUNDS = ("rrpb+pgb", "rrpb", "pgb", "gb", "dgb", "cdgb", "rpb")


@dataclass(kw_only=True)
class TripletSettings(StepSettings):
    """The step settings of metric learning: the loss, the metric's form, the ball of
    ``rule``'s screening (``bound``: one of :data:`BOUNDS`, ``None`` for no screening at
    all) and its schedule."""

    gamma: float
    diagonal: bool
    bound: str | None
    #: True, False or "auto" (see :meth:`TripletPath.uses_ranges`)
    range_screening: bool | str
    active_set: bool
    interval: int

    @property
    def screens(self) -> bool:
        """Screening is off without a ball (``bound=None``), whatever the rule."""
        return self.bound is not None

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"[SafeMetricLearner] {msg}")


@dataclass(frozen=True)
class TripletOptions:
    """Tuning values of the triplet path (:class:`~.triplet.TripletPath`) and of its
    reduced problems (:class:`~.triplet_reduced.ReducedTriplets`).

    None of them changes what a step converges to: every step certifies its answer on
    the full problem, and where a bound or an update is not tried the exact pass is
    made instead. They choose how the work is done: whether values are bounded or
    computed, H_L updated or summed, and which step the solver starts with. Two paths
    with the same options and inputs make the same fits, bit for bit. Work is counted
    in multiply-adds of one pass over every pair's value (:func:`pass_work`).

    Attributes
    ----------
    full_pass_share : float
        Share of the pairs above which values are computed in one pass over every pair
        rather than over the pairs of the triplets that need them (the pass streams the
        pairs in order; a subset is gathered, and its bookkeeping costs as well).
    bounds_min_work : float
        The certificate from bounds (and the reference screening from bounded values)
        is tried only when a pass over every pair costs at least this much work. Below,
        the pass costs less than the bounds' bookkeeping.
    max_bounds_backoff : int
        At most this many fits without the certificate from bounds after it did not
        pay (it is tried again after 1, 2, 4, ... fits).
    hl_update_min_work : float
        A screened fit's H_L is updated from the last one's
        (:meth:`~.triplet.TripletPath._problem`) only when a pass over every pair costs
        at least this much work. Below, the sum from scratch, made in the compiled pass
        that builds the reduced problem, costs less than the update's passes over the
        triplets and the statuses it keeps.
    same_pairs : float
        Two fits whose solvers read at least this share of the pairs each (a step
        without screening reads them all) solve problems of the same curvature: the
        next carries the last one's step whatever their modes. The BB steps alternate
        long and short from one iteration to the next, and a fit that starts from the
        step of an older fit starts out of phase and needs more iterations.
    """

    full_pass_share: float = 0.5
    bounds_min_work: float = 1e6
    max_bounds_backoff: int = 16
    hl_update_min_work: float = 1e6
    same_pairs: float = 0.9

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            kind = numbers.Integral if f.type == "int" else numbers.Real
            if isinstance(value, bool) or not isinstance(value, kind):
                raise TypeError(f"TripletOptions.{f.name} must be {f.type}, got {value!r}")
            if not value >= 0:  # also rejects NaN
                raise ValueError(f"TripletOptions.{f.name} must be >= 0, got {value!r}")


#: The options a path uses unless it is given others.
DEFAULT_OPTIONS = TripletOptions()


def pass_work(ts: TripletSet, diagonal: bool) -> float:
    """Multiply-adds of one pass over every pair's value (``n_pairs * d`` for a
    diagonal metric, ``n_pairs * d**2`` for a full one)."""
    d = ts.diff.shape[1]
    return float(ts.n_pairs) * (d if diagonal else d * d)


class TripletReference:
    r"""A solution at ``alpha``: the metric, its full gap, the values of every triplet,
    the solution before it (for the extrapolated start) and the stored RRPB ranges.

    ``z`` holds :math:`\langle M,H_t\rangle` exactly where ``zrad`` is 0 (or None), and
    otherwise a value within ``zrad[t] * hnorm[t]`` of it: the certificate bounds the
    screened triplets' values from an earlier metric instead of evaluating them
    (:meth:`_ReducedTriplets.certify`)."""

    def __init__(self, alpha, M, gap, z, exact, loss=None, prev=None, zrad=None):
        self.alpha, self.M, self.gap, self.z, self.exact = alpha, M, gap, z, exact
        self.zrad = zrad
        self.loss = loss  # sum of the triplet losses at M (full problem)
        self.prev = prev  # (alpha, M) of the solution before
        self.range_label = None
        self.range_lo = None
        self.range_hi = None

    @property
    def eps(self) -> float:
        """Distance bound to the exact optimum at :attr:`alpha` (0 when exact)."""
        return 0.0 if self.exact else tb.rrpb_eps(self.gap, self.alpha)


def start_point(ref0: TripletReference, alpha: float) -> np.ndarray:
    """Warm start at ``alpha``: the previous solution (the paper's), extrapolated along
    the path from the two previous solutions, linearly in log(alpha), when ``alpha``
    continues their direction (the solutions move smoothly along a path, so the
    extrapolation starts nearer the new optimum); the RRPB centre from the closed
    form."""
    if ref0.exact and ref0.prev is None:  # the closed form: its scale is far off
        return (ref0.alpha + alpha) / (2.0 * alpha) * ref0.M
    if ref0.prev is not None:
        alpha0, M0 = ref0.prev
        c = (np.log(alpha / ref0.alpha) / np.log(ref0.alpha / alpha0)
             if alpha0 != ref0.alpha else 0)
        if 0.0 < c <= 2.0:
            return ref0.M + c * (ref0.M - M0)  # projected by the solver
    return ref0.M
