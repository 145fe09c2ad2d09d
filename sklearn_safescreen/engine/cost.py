"""The cost model: whether a path step runs its screening.

Screening pays when the work it removes from the solver exceeds what its rules, its
dynamic events and its bookkeeping cost. On a small problem whose solves take a few
iterations (iris, breast cancer) the bookkeeping alone can cost more than the solve it
shortens; on a large one the rules are cheap beside the solver. Neither is known in
advance, so each path measures: the CPU time of its steps with screening and without,
per unit of solver work (one plus the solver's iterations, so that the fixed cost of a
step counts too), and runs the next step in the cheaper mode. The other mode is tried
again after 1, 2, 4, ... steps (at most :data:`MAX_BACKOFF`) while it keeps losing, so
that a change along the path (the problem shrinking or growing with the regularisation)
is noticed, and a path that gains from screening spends few steps without it.

Skipping screening never drops a variable: the step is then the plain solve, warm
started from the same reference, and the certificate is on the full problem either
way. The choice is recorded in the report (a ``"skipped"`` event naming the reason).

Which steps screen thus depends on the machine's speed, so two runs of a path may
differ in the last digits of the solution (each certified to ``tol``). The environment
variable ``SKLEARN_SAFESCREEN_COST_MODEL`` fixes the choice for every path of the
process and of the worker processes it starts: ``"always"`` screens at every step (the
behaviour before the cost model, bitwise reproducible), ``"never"`` at none, ``"auto"``
(default) measures. :func:`forced` does the same within a block (for tests); the
answers do not depend on it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Steps run with screening before the first step without it is measured (the first
#: fits of a path are the least representative: a cold start, the closed form).
FIRST_PROBE = 2
#: Most steps between two measurements of the mode that lost.
MAX_BACKOFF = 16
#: Weight of the newest measurement in a mode's running cost.
NEW_WEIGHT = 0.5
#: Screening is kept unless the plain step costs less than this share of it (measured
#: times are noisy; screening also makes the next reference's work smaller).
KEEP_SCREENING = 0.9

MODES = ("auto", "always", "never")
#: The environment variable that fixes the choice (see the module docstring).
ENVIRONMENT = "SKLEARN_SAFESCREEN_COST_MODEL"
_FORCED: list[str] = []


def mode() -> str:
    """The mode in force: the innermost :func:`forced` block's, else the environment's,
    else ``"auto"``."""
    if _FORCED:
        return _FORCED[-1]
    value = os.environ.get(ENVIRONMENT, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"{ENVIRONMENT}={value!r}: expected one of {MODES}")
    return value


@contextmanager
def forced(mode: str) -> Iterator[None]:
    """Fix every cost model's choice within the block (``"always"`` screens at every
    step, ``"never"`` at none, ``"auto"`` restores the measurement)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    _FORCED.append(mode)
    try:
        yield
    finally:
        _FORCED.pop()


@dataclass
class Decision:
    """What the cost model chose for one step, and why."""

    screen: bool
    reason: str
    probe: bool = False


@dataclass
class CostModel:
    """One path's measurements and choice (see the module docstring)."""

    #: running CPU seconds per unit of solver work, with and without screening
    on: float | None = None
    off: float | None = None
    #: steps left before the losing mode is measured again, and the current spacing
    countdown: int = FIRST_PROBE - 1
    backoff: int = 1
    _last: Decision | None = None
    _start: float = 0.0

    def decide(self) -> Decision:
        """The mode of the next step."""
        chosen = mode()
        if chosen != "auto":
            decision = Decision(chosen == "always", f"forced: {chosen}")
        elif self.on is None:
            decision = Decision(True, "not measured yet")
        else:
            prefer = self.off is None or self.off >= KEEP_SCREENING * self.on
            if self.countdown > 0:
                self.countdown -= 1
                decision = Decision(prefer, self._why(prefer))
            else:  # measure the other mode again
                decision = Decision(not prefer, "measuring the other mode", probe=True)
        self._last = decision
        self._start = time.process_time()
        return decision

    def _why(self, screen: bool) -> str:
        if self.off is None:
            return "screening measured, no step without it yet"
        verb = "cheaper" if screen else "dearer"
        return (f"screening {verb}: {1e3 * self.on:.3g} ms against "
                f"{1e3 * self.off:.3g} ms per unit of solver work without")

    def record(self, n_iter: int) -> None:
        """Measure the step :meth:`decide` chose (its CPU time since then); a step
        without solver work (a closed form) teaches nothing."""
        decision, self._last = self._last, None
        if decision is None or n_iter <= 0 or decision.reason.startswith("forced"):
            return
        unit = (time.process_time() - self._start) / (1.0 + n_iter)
        if decision.screen:
            self.on = unit if self.on is None else (
                NEW_WEIGHT * unit + (1 - NEW_WEIGHT) * self.on)
        else:
            self.off = unit if self.off is None else (
                NEW_WEIGHT * unit + (1 - NEW_WEIGHT) * self.off)
        if decision.probe:
            # the other mode measured: space the next measurement out while the
            # preferred mode keeps winning
            prefer = self.off is None or self.off >= KEEP_SCREENING * self.on
            confirmed = prefer != decision.screen
            self.backoff = min(2 * self.backoff, MAX_BACKOFF) if confirmed else 1
            self.countdown = self.backoff


def skipped_event(rule: str, value: float, n_variables: int, reason: str, task: str = "",
                  kind: str = "samples"):
    """The report's record of a step run without its screening."""
    from .report import ScreeningEvent

    return ScreeningEvent(rule, "skipped", value, 0, 0, n_variables, task=task, kind=kind,
                          note=reason)

