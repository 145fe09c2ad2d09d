"""What a step of the triplet family reads and leaves: its settings, the reference
solution (the last certified metric, its triplets' values and the stored RRPB ranges)
and the next solve's start point from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
