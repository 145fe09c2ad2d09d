"""What a step of the triplet family reads and leaves: its settings and the reference
solution (the last certified metric, its triplets' values and the stored RRPB ranges)."""

from __future__ import annotations

from dataclasses import dataclass

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
