"""The engine's path protocol: what every family's path offers the estimator layer.

A *path* holds one problem (one one-vs-rest task) on one data set and the last
certified solution, which is the next fit's start point and screening reference. The
estimators drive every family through the same three calls::

    report = path.new_report()
    outcome = path.fit(value, settings, report)   # one certified step
    path.end_fit(keep=warm_start)

``value`` is the family's own regularisation value (``C`` for the box QPs, the L1
weight :math:`\\lambda` for the doubly sparse models and the LP-SVM, ``alpha`` for
metric learning); everything else the step needs is in ``settings``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .report import ScreeningReport

_local = threading.local()


def legacy_generator(seed: int) -> np.random.RandomState:
    """``np.random.RandomState(seed)``: the same stream, without building a new
    generator. A new generator builds its Mersenne Twister from a seed sequence before
    the legacy seeding replaces that state, a cost that shows on millisecond path
    steps; here one bit generator per thread is re-seeded instead (a cache: it carries
    nothing from one call to the next). So the generator is valid until the next call
    on the same thread: a path step asks for one and is done with it before the next
    step asks (the steps of one thread run one after the other)."""
    bits = getattr(_local, "bits", None)
    if bits is None:
        bits = _local.bits = np.random.MT19937(0)
    reseed = getattr(bits, "_legacy_seeding", None)
    if reseed is None:  # (a numpy without it: the plain construction)
        return np.random.RandomState(seed)
    reseed(seed)
    return np.random.RandomState(bits)


@dataclass(kw_only=True)
class StepSettings:
    """The estimator's parameters a path step reads (explicit, never estimator state).

    Families that need more (the metric learner's balls and schedule, the doubly
    sparse models' L2 weight) subclass it.
    """

    #: the screening rule (``None``: no screening at all, static or dynamic)
    rule: str | None
    #: the target duality gap (relative or absolute, as the family documents it)
    tol: float
    #: the most solver iterations per solve
    max_iter: int
    verbose: int = 0
    #: seeds the solvers' coordinate permutations (the optimum does not depend on it)
    seed: int = 0
    #: how warnings and progress lines name the fit, e.g. ``"SafeSVC(C=1)"``
    describe: str = ""
    #: the value the user asked for, as reports show it (``alpha`` for a family whose
    #: engine value is derived from it); ``None``: the engine value itself
    shown_value: float | None = None
    #: whether the step screens: ``"auto"`` as the path's policy decides,
    #: ``"always"``, ``"never"`` (:mod:`.policy`)
    mode: str = "auto"

    @property
    def screens(self) -> bool:
        """Whether the estimator asked for screening at all (the one test of
        "screening off" every family's path makes; a family with more than a rule
        says what it means for it)."""
        return self.rule is not None

    def rng(self) -> np.random.RandomState:
        """A fresh generator from :attr:`seed` (one per step: steps are repeatable),
        valid for the step that asks for it (:func:`legacy_generator`)."""
        return legacy_generator(self.seed)


@dataclass
class StepOutcome:
    """One certified step, whatever the family."""

    #: the certified solution, the family's own type (dual point and margins, primal
    #: and dual pair, metric): the next step's reference
    reference: Any
    #: the full problem's duality gap at :attr:`reference` (absolute)
    gap: float
    #: the gap that ``tol`` is compared with: relative to the objective, or the
    #: absolute gap where ``tol`` is absolute (the doubly sparse models)
    rel_gap: float
    #: solver iterations (epochs) of the step, internal path steps included
    n_iter: int
    #: whether the gap met ``tol``
    converged: bool
    #: the relative gap float64 cannot resolve at this point (0: not computed)
    rounding_floor: float = 0.0
    #: decisions the certificate proved wrong and released (each a warning)
    n_repairs: int = 0
    #: whether the answer comes from the unscreened fall-back of the certificate
    unscreened: bool = False


class EnginePath(Protocol):
    """What the estimator layer needs of a family's path: everything an estimator or a
    walker reads of it is declared here."""

    #: the one-vs-rest task it solves ("" for a single task), for reports
    name: str
    #: the problem's data the path was built on (the family's own type, read-only: the
    #: estimator reads it for its fitted attributes)
    data: Any

    def critical_value(self, max_iter: int) -> float:
        """The most regularised engine value at which the task's solution is known in
        closed form (the start of a path); ``max_iter`` bounds any solve it needs."""

    def new_report(self) -> ScreeningReport:
        """An empty report over this problem's screenable variables."""

    def fit(self, value: float, settings: StepSettings,
            report: ScreeningReport) -> StepOutcome:
        """Solve at ``value`` from the last solution (or cold), certified on the full
        problem, recording screening events in ``report``; the solution becomes the
        next step's reference."""

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """After a fit: drop what only a next fit of the path would use, unless
        ``keep``; ``walk``: the estimator is a walker's, discarded after its walk
        (:class:`~sklearn_safescreen.base.FitContext`), so what a path holds only
        while it is small may be kept."""
