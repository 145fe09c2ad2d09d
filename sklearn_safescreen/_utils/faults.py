"""Planted rule faults, for the certificate's end-to-end tests.

The certificate is the last line of defence: whatever a rule decided, every fit checks
its answer on the full problem, repairs it and warns (``engine/certify.py``). To test that
promise inside real fits and real paths, a test makes a rule wrong on purpose::

    from sklearn_safescreen._utils import faults

    with faults.planted("force", share=0.3, seed=0):
        SafeSVC(C=10.0).fit(X, y)   # a ScreeningRepairWarning, and the optimum

The engine asks :func:`active` at the few places where a rule's decisions are taken;
without a planted fault that is one dictionary look-up per screening event. This is not
a public API and no estimator parameter reaches it.

Kinds of fault:

``"force"``
    At each reference screening, a random ``share`` of the variables the rule left
    undecided are fixed as well, each at a random end of its box (samples), at 0
    (features of the doubly sparse models) or in R or L (triplets). Most such decisions
    are wrong.
``"reference_gap0"``
    The box-QP rules read the reference's duality gap as 0: decisions that are only
    valid for an exact reference, wrong from an inexact one (a path at a loose ``tol``).
``"dynamic_radius"``
    The box-QP solvers' gap-safe dynamic screening uses ``share`` times the radius
    :math:`\\sqrt{2\\,\\mathrm{gap}}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

KINDS = ("force", "reference_gap0", "dynamic_radius")


@dataclass
class Fault:
    """One planted fault (see the module docstring)."""

    kind: str
    share: float = 0.3
    seed: int = 0
    #: screening events it has acted on
    uses: int = 0
    _rng: np.random.RandomState = field(init=False, repr=False)

    def __post_init__(self):
        self._rng = np.random.RandomState(self.seed)

    def pick(self, candidates: np.ndarray) -> np.ndarray:
        """A random ``share`` of the ``True`` entries of ``candidates`` (at least one
        when there is any)."""
        self.uses += 1
        idx = np.flatnonzero(candidates)
        chosen = np.zeros(candidates.shape, dtype=bool)
        if idx.size:
            k = max(1, int(round(self.share * idx.size)))
            chosen[self._rng.choice(idx, size=min(k, idx.size), replace=False)] = True
        return chosen

    def split(self, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``chosen`` divided at random into two disjoint masks (the two ends)."""
        side = self._rng.rand(chosen.size) < 0.5
        return chosen & side, chosen & ~side


_PLANTED: dict[str, Fault] = {}


@contextmanager
def planted(kind: str, *, share: float = 0.3, seed: int = 0) -> Iterator[Fault]:
    """Plant a fault of ``kind`` for the duration of the block; yields it (its
    :attr:`Fault.uses` tells whether it acted)."""
    if kind not in KINDS:
        raise ValueError(f"unknown fault {kind!r}; one of {KINDS}")
    fault = Fault(kind, share, seed)
    previous = _PLANTED.get(kind)
    _PLANTED[kind] = fault
    try:
        yield fault
    finally:
        if previous is None:
            _PLANTED.pop(kind, None)
        else:
            _PLANTED[kind] = previous


def active(kind: str) -> Fault | None:
    """The planted fault of ``kind``, if any."""
    return _PLANTED.get(kind) if _PLANTED else None
