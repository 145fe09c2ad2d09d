"""The cost model: whether a path step runs its screening.

Screening pays when the work it removes from the solver exceeds what its rules, its
dynamic events and its bookkeeping cost. On a small problem whose solves take a few
iterations (iris, breast cancer) the bookkeeping alone can cost more than the solve it
shortens; on a large one the rules are cheap beside the solver. Neither is known in
advance, so each path measures: the CPU time of its steps with screening and without,
and runs the next step in the cheaper mode. CPU time on a shared machine is inflated,
never deflated, by other work, so a mode's cost is the least of its last
:data:`HISTORY` measurements. The other mode is tried
again after 1, 2, 4, ... steps (at most :data:`MAX_BACKOFF`) while it keeps losing, so
that a change along the path (the problem shrinking or growing with the regularisation)
is noticed, and a path that gains from screening spends few steps without it.

Skipping screening never drops a variable: the step is then the plain solve, warm
started from the same reference, and the certificate is on the full problem either
way. The choice is recorded in the report (a ``"skipped"`` event naming the reason).

The measurements are only as good as the steps they compare: along a path the steps'
difficulty changes (a later value needs more iterations), and a step measured in one
mode is compared with earlier steps of the other. Where screening pays a lot and the
steps grow fast (a linear SafeSVC path at tol=1e-6 under cross-validation), that
misleads the model into unscreened steps that cost several times the screened ones:
measured, 6.4 s against 4.2 s with screening at every step. So the model is **opt-in**:
the default screens at every step, as before; the environment variable
``SKLEARN_SAFESCREEN_COST_MODEL=auto`` turns the model on for every path of the process
and of the worker processes it starts (``"never"`` runs every step unscreened,
``"always"`` is the default). With it, which steps screen depends on the machine's
speed, so two runs may differ in the last digits of the solutions (each certified to
``tol``). :func:`forced` sets the mode within a block (for tests); the answers do not
depend on it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: Steps run with screening before the first step without it is measured (the first
#: fits of a path are the least representative: a cold start, the closed form).
FIRST_PROBE = 1
#: Most steps between two measurements of the mode that lost.
MAX_BACKOFF = 32
#: Measurements of each mode kept; a mode's cost is the least of them.
HISTORY = 3
#: A mode is left for the other only when the other costs less than this share of it
#: (measured times are noisy: without the margin, noise alone would switch modes, and
#: every switch back costs a measurement of the dearer mode).
SWITCH_MARGIN = 0.9

MODES = ("auto", "always", "never")
#: The mode when nothing sets one: screening at every step (the model is opt-in).
DEFAULT = "always"
#: The environment variable that fixes the choice (see the module docstring).
ENVIRONMENT = "SKLEARN_SAFESCREEN_COST_MODEL"
_FORCED: list[str] = []


def mode() -> str:
    """The mode in force: the innermost :func:`forced` block's, else the environment's,
    else ``"always"`` (see the module docstring)."""
    if _FORCED:
        return _FORCED[-1]
    value = os.environ.get(ENVIRONMENT, DEFAULT).strip().lower() or DEFAULT
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

    #: CPU seconds of the last steps with and without screening
    on_times: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    off_times: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    #: steps left before the losing mode is measured again, and the current spacing
    countdown: int = FIRST_PROBE - 1
    backoff: int = 1
    #: the mode the measurements favour (screening until shown dearer)
    screening: bool = True
    _last: Decision | None = None
    _start: float = 0.0

    @property
    def on(self) -> float | None:
        """The cost of a step with screening (``None``: not measured)."""
        return min(self.on_times) if self.on_times else None

    @property
    def off(self) -> float | None:
        """The cost of a step without screening (``None``: not measured)."""
        return min(self.off_times) if self.off_times else None

    def _prefer_screening(self) -> bool:
        """The favoured mode after the latest measurement: kept unless the other one
        is cheaper by the margin."""
        if self.on is None or self.off is None:
            return self.screening
        if self.screening and self.off < SWITCH_MARGIN * self.on:
            self.screening = False
        elif not self.screening and self.on < SWITCH_MARGIN * self.off:
            self.screening = True
        return self.screening

    def decide(self) -> Decision:
        """The mode of the next step."""
        chosen = mode()
        if chosen != "auto":
            decision = Decision(chosen == "always", f"forced: {chosen}")
        elif self.on is None:
            decision = Decision(True, "not measured yet")
        else:
            prefer = self._prefer_screening()
            if self.countdown > 0:
                self.countdown -= 1
                decision = Decision(prefer, self._why(prefer))
            else:  # measure the other mode again
                decision = Decision(not prefer, "measuring the other mode", probe=True)
        self._last = decision
        self._start = time.thread_time()
        return decision

    def _why(self, screen: bool) -> str:
        if self.off is None:
            return "screening measured, no step without it yet"
        verb = "cheaper" if screen else "dearer"
        return (f"screening {verb}: {1e3 * self.on:.3g} ms a step against "
                f"{1e3 * self.off:.3g} ms without")

    def record(self, n_iter: int, warm: bool = True) -> None:
        """Measure the step :meth:`decide` chose (its CPU time since then). A step
        without solver work (a closed form, a reference already optimal) or a cold one
        (no previous solution: a solve from scratch, or a cold fit's internal path)
        is not comparable with a path step and teaches nothing; the measurement it was
        to make is made at the next step."""
        decision, self._last = self._last, None
        if decision is None or decision.reason.startswith("forced"):
            return
        if n_iter <= 0 or not warm:
            if decision.probe:
                self.countdown = 0
            return
        elapsed = time.thread_time() - self._start
        times = self.on_times if decision.screen else self.off_times
        if decision.probe:
            # the mode measured now was last measured steps ago, on a problem of
            # another difficulty: only the new measurement stands against the other
            # mode's recent ones
            times.clear()
        times.append(elapsed)
        if decision.probe:
            # the other mode measured: space the next measurement out while the
            # preferred mode keeps winning
            confirmed = self._prefer_screening() != decision.screen
            self.backoff = min(2 * self.backoff, MAX_BACKOFF) if confirmed else 1
            self.countdown = self.backoff


def skipped_event(rule: str, value: float, n_variables: int, reason: str, task: str = "",
                  kind: str = "samples"):
    """The report's record of a step run without its screening."""
    from .report import ScreeningEvent

    return ScreeningEvent(rule, "skipped", value, 0, 0, n_variables, task=task, kind=kind,
                          note=reason)

