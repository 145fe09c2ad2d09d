"""When a path step runs its screening: a deterministic policy.

Screening never changes an answer (a step without it is the plain solve, warm started
from the same reference and certified on the full problem), only its cost. Whether a
step screens is decided from what the path has counted so far: the problem's sizes,
how much the last rules fixed, how many solver passes the last steps took. Never from a
clock: the same data and parameters give the same steps, so the same model bit for bit,
whatever the machine's load or its number of threads.

Each family's path holds one policy:

* :class:`EveryStep`: every warm step screens. The families whose solver work
  shrinks with the variables the rules fix, and whose rules cost a pass over data
  the solver reads many times (the linear box QPs, the doubly sparse models, the
  LP-SVM, whose kinds of rules stop by themselves once they fix too few variables).
* :class:`NoScreening`: no step screens, for a stated reason known from the problem's
  sizes (the kernel box QPs whose every kernel row is cached: the solver's work is
  then on the free samples, which its own shrinking already finds, and a rule could
  only add its cost).
* :class:`PassCount`: the metric learner, whose warm steps are a few gradient passes
  over the pairs of the active triplets. A screened step reads only the pairs its
  rules left, but pays for building the reduced problem and certifying on the full
  one. With ``k`` solver iterations (``k + 1`` passes with the start point's
  evaluation) and a share ``s`` of the pairs kept, a screened step costs about
  ``(k + 1 + o) s + f`` passes over all the pairs and a plain one ``k + 1``, where
  ``o`` counts the reduced problem's construction and dynamic rules in passes over the
  pairs it keeps and ``f`` the certificate's passes over all of them
  (:class:`PassCosts`). The step screens while that is cheaper, from the last
  screened step's share and the last step's iterations.

The mode ``"always"`` screens at every step and ``"never"`` at none, whatever the
policy; ``"auto"`` (the default) follows it. A caller chooses the mode for the fits it
makes through :class:`~sklearn_safescreen.base.FitContext`; the environment variable
:data:`ENVIRONMENT` sets it for a whole process and the worker processes it starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

#: The modes: the policy, screening at every step, screening at none.
MODES = ("auto", "always", "never")
#: The environment variable that fixes the mode for every fit of the process (and of the
#: worker processes it starts) that its caller did not set.
ENVIRONMENT = "SKLEARN_SAFESCREEN_SCREENING"


def environment_mode() -> str:
    """The mode the environment sets (``"auto"`` when it sets none)."""
    value = os.environ.get(ENVIRONMENT, "").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"{ENVIRONMENT}={value!r}: expected one of {MODES}")
    return value


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else a ValueError."""
    if mode not in MODES:
        raise ValueError(f"unknown screening mode {mode!r}; expected one of {MODES}")
    return mode


@dataclass(frozen=True)
class PassCosts:
    """What a screened step of the metric learner spends besides its solver's passes
    over the pairs it keeps, counted in passes over pairs (:class:`PassCount`)."""

    #: passes over the kept pairs: the reduced problem's construction (a gather of its
    #: pairs) and the dynamic rules' evaluations of them
    per_kept: float
    #: passes over all the pairs: the certificate's evaluation of the full problem, where
    #: its bounds leave triplets undecided
    per_all: float
    #: most steps between two screened steps of a path where screening did not pay: the
    #: share of the pairs its rules keep is measured again, at the price of one dearer
    #: step, in case the path turned (a value back towards more regularisation)
    max_wait: int = 32
    #: the share of a path's passes that such measurements may cost: one that found a
    #: screened step ``r`` times the passes of a plain one cost ``r - 1`` plain steps,
    #: so the next waits at least ``(r - 1) / probe_share`` steps
    probe_share: float = 0.05
    #: a plain step resumes screening before the wait is over only where the last
    #: measured share would have saved this share of its passes: near the break-even,
    #: solves of one and then two iterations would otherwise alternate the modes
    resume_saving: float = 0.25


#: A full metric: the certificate's pass over every pair costs ``d^2`` a pair like a
#: solver pass, while building the reduced problem gathers ``d`` numbers a pair.
FULL_METRIC = PassCosts(per_kept=1.0, per_all=1.0)
#: A diagonal metric: a solver pass costs ``d`` a pair, as much as gathering the pair
#: into the reduced problem, and the certificate's bounds decide nearly every triplet.
DIAGONAL_METRIC = PassCosts(per_kept=2.5, per_all=0.0)


@dataclass(frozen=True)
class Decision:
    """Whether a step screens, and why (the report's ``"skipped"`` events say it)."""

    screen: bool
    reason: str


_ALWAYS = Decision(True, "mode 'always'")
_NEVER = Decision(False, "mode 'never'")


def forced(mode: str) -> Decision | None:
    """The decision a fixed mode imposes (``None``: ``"auto"``, the policy decides)."""
    return _ALWAYS if mode == "always" else _NEVER if mode == "never" else None


class EveryStep:
    """Every warm step screens (see the module docstring)."""

    _SCREEN = Decision(True, "every step screens")

    def decide(self, mode: str) -> Decision:
        return forced(mode) or self._SCREEN

    def record(self, screened: bool, n_iter: int, kept: float | None = None) -> None:
        """Nothing to learn: the decision does not depend on the path."""


class NoScreening:
    """No step screens unless the mode says so, for ``reason`` (see the module
    docstring)."""

    def __init__(self, reason: str):
        self._skip = Decision(False, reason)

    def decide(self, mode: str) -> Decision:
        return forced(mode) or self._skip

    def record(self, screened: bool, n_iter: int, kept: float | None = None) -> None:
        """Nothing to learn: the decision does not depend on the path."""


class PassCount:
    """Screening while it reads fewer passes over the pairs than a plain step (see the
    module docstring).

    The first warm step screens. After a screened step that did not pay, the path runs
    plain steps, and screens again when the last step's iterations make the last
    measured share pay clearly (:attr:`PassCosts.resume_saving`), or after a wait
    that doubles each time screening still does not pay, and is longer the more it
    lost (:attr:`PassCosts.probe_share`; at most :attr:`PassCosts.max_wait` steps):
    along a decreasing path the
    share of the pairs the rules keep only grows, so a measurement rarely helps, but a
    path that turns back would otherwise never screen again.
    """

    def __init__(self, costs: PassCosts):
        self.costs = costs
        #: the share of the pairs the last screened step's solver read (None: none yet)
        self.kept: float | None = None
        #: the last step's solver iterations
        self.n_iter: int = 0
        #: plain steps left before the next screened one, and the current wait
        self.countdown = 0
        self.wait = 1

    def _ratio(self, n_iter: int, kept: float) -> float:
        """The passes of a screened step keeping ``kept`` of the pairs over those of a
        plain step, at ``n_iter`` solver iterations."""
        passes = n_iter + 1
        return ((passes + self.costs.per_kept) * kept + self.costs.per_all) / passes

    def _pays(self, n_iter: int, kept: float, saving: float = 0.0) -> bool:
        """Whether a screened step keeping ``kept`` of the pairs reads less than
        ``1 - saving`` times the passes of a plain step of ``n_iter`` iterations."""
        return self._ratio(n_iter, kept) < 1.0 - saving

    def decide(self, mode: str) -> Decision:
        fixed = forced(mode)
        if fixed is not None:
            return fixed
        if self.kept is None or self.countdown == 0:
            return Decision(True, "screening measured")
        return Decision(False, (
            f"screening kept {self.kept:.0%} of the pairs: at {self.n_iter} solver "
            "iteration(s) a screened step reads more passes over the pairs than a plain "
            "one"))

    def record(self, screened: bool, n_iter: int, kept: float | None = None) -> None:
        """What the step counted: whether it screened, its solver iterations and (when
        screened) the share of the pairs its solver read."""
        self.n_iter = n_iter
        if screened and kept is not None:
            self.kept = kept
            ratio = self._ratio(n_iter, kept)
            if ratio < 1.0:
                self.countdown, self.wait = 0, 1
            else:
                costs = self.costs
                least = int(np.ceil((ratio - 1.0) / costs.probe_share))
                self.countdown = min(max(self.wait, least), costs.max_wait)
                self.wait = min(2 * self.countdown, costs.max_wait)
        elif self.kept is not None and self.countdown > 0:
            # a plain step: the next screens as soon as its iterations make the last
            # measured share pay clearly
            resume = self._pays(n_iter, self.kept, self.costs.resume_saving)
            self.countdown = 0 if resume else self.countdown - 1


def skipped_event(rule: str, value: float, n_variables: int, reason: str, task: str = "",
                  kind: str = "samples"):
    """The report's record of a step run without its screening."""
    from .report import ScreeningEvent

    return ScreeningEvent(rule, "skipped", value, 0, 0, n_variables, task=task, kind=kind,
                          note=reason)
