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
is noticed, and a path that gains from screening spends few steps without it: a
measurement that cost ``r`` times the favoured mode waits at least
``(r - 1) / PROBE_SHARE`` steps (:data:`PROBE_SHARE`), and at least
:data:`MAX_BACKOFF` steps when the losing mode cost :data:`DECISIVE` times the
favoured one. After a switch to screening, the plain mode is measured again at the
next step (a switch made on one noisy step would cost more than screening off);
after a switch away from it, screening waits like a mode that lost. A
path running without screening measures screening again at once when a step costs
:data:`DECISIVE` times what steps without screening were measured at (and more than
:data:`CHEAP_STEP`): the path got harder, and screening may pay there; and a path
compares again as soon as its mode's last steps all cost more than that mode won by at
the last comparison (at least :data:`GROWTH_MARGIN` times what they cost then, twice
that after each such comparison that kept the mode; with screening, if a step without
it may pay, as below).

**Which steps are measured without screening.** A step without screening is itself a
cost: where screening pays, it is a step at several times the price. And its
measurement compares two different steps of the path, whose difficulty changes with
the regularisation (a later value needs more iterations): on the linear SafeSVC path of
a cross-validated run, unscreened steps at later values cost 115-145 ms where a
screened one cost about 20 ms, and a model that measured there ran 1.5x slower than
screening at every step (6.4 s against 4.2 s). So a step without screening is only
tried where screening *may* not pay: where the screened steps are cheap (at most
:data:`CHEAP_STEP` seconds of CPU: fixed costs dominate, the rules cannot save much,
and a wrong trial costs little), where the rules fixed less than :data:`LOW_RATE` of
the variables, or where they took at least :data:`RULE_SHARE` of the step's time. A
path whose steps are dear, mostly screened and spent in the solver keeps screening at
every step without trying the other mode.

**Tiny steps.** Measuring a step costs two reads of the thread's CPU clock and the
model's bookkeeping, a few microseconds: 1.5% of a path of steps of a third of a
millisecond (iris). So the steady steps (the favoured mode, no measurement due) that
cost less than :data:`TINY_STEP` are measured one in :data:`MEASURE_EVERY`, and always
the one before a due measurement of the other mode (which it is compared with); a step
not measured whose wall time exceeds :data:`TINY_STEP` has the next one measured. The
growth of such steps is noticed a few steps later (a few tiny steps); the model's
decision for the steady steps is made once per comparison.

**The end of a path.** Where the path's length is known (a grid walked by the path
walkers, see :func:`values_after`), the other mode is not measured at the last
:data:`MIN_VALUES_AFTER_PROBE` values: a measurement needs the step it is compared
with and steps to use what it shows.

**A prior.** A family whose screening is not expected to pay gives its paths a model
made by :meth:`CostModel.without_screening_first`: the cold fit and the first
:data:`FIRST_PROBE` warm steps run without screening (the report says why), then
screening is measured like a mode that lost. (The kernel box-QP paths whose rows all
fit in the cache: their solver's work is then on the free samples, which no rule
fixes; the LP-SVM paths: column-and-row generation solves only what its pricing brings
in.)

**Per step or per iteration.** A family whose warm steps are a few solver iterations
that screening makes cheaper but not fewer (the metric learner: each iteration is a pass
over the pairs) compares the modes by the cost of an iteration
(:attr:`CostModel.per_iteration`): one iteration more or fewer, which the iterates'
history decides, would otherwise outweigh what the mode changes. The others compare
whole steps (their solvers converge in fewer epochs on a reduced problem).

Skipping screening never drops a variable: the step is then the plain solve, warm
started from the same reference, and the certificate is on the full problem either
way. The choice is recorded in the report (a ``"skipped"`` event naming the reason).

The model is the default (``"auto"``). The environment variable
``SKLEARN_SAFESCREEN_COST_MODEL`` fixes the choice for every path of the process and of
the worker processes it starts (read at a path's first step): ``"always"`` screens at
every step, ``"never"`` at none. Which steps screen depends on the machine's speed, so
two runs may differ in the last digits of the solutions (each certified to ``tol``).
:func:`forced` sets the mode within a block (for tests); the answers do not depend on
it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

#: Warm steps run with screening before the first step without it (a path's cold
#: first fit, or its closed form, is not measured). Two, so that the gate below sees
#: whether the screened steps grow: with one, the cross-validated linear SafeSVC path
#: of the command line (a first warm step of 4 ms, then 8, 13, 18 ms) measured steps
#: without screening and took 2.26-2.47 s against 2.16-2.18 s.
FIRST_PROBE = 2
#: Most steps between two measurements of the mode that lost.
MAX_BACKOFF = 32
#: Measurements of each mode kept; a mode's cost is the least of them.
HISTORY = 3
#: Screening is taken back only when it costs less than this share of a step without
#: it (measured times are noisy: without the margin, noise alone would switch modes,
#: and every switch back costs a measurement of the dearer mode). It is left as soon as
#: a step without it costs no more: where both cost the same, screening's bookkeeping
#: and the measurements of both modes are the loss (a small SafeLAD path, 1 ms steps:
#: 14 of 30 steps screened with the margin both ways, 0.92x the path without
#: screening).
SWITCH_MARGIN = 0.9
#: A measurement of the losing mode that costs this many times the favoured one settles
#: the question for at least :data:`MAX_BACKOFF` steps, unless the favoured mode's
#: steps grow by this factor meanwhile (the path got harder: compared again).
DECISIVE = 2.0
#: A step whose wall time exceeds its CPU time by this factor waited for the processor:
#: its rules' share of its (wall) time is not measured.
PREEMPTED = 1.5
#: The favoured mode's steps growing by the margin it won by at the last comparison
#: (at least this factor; doubled after each comparison so brought forward that kept
#: the mode) bring the next comparison forward (see :meth:`CostModel.record`): a closer
#: comparison is repeated sooner.
GROWTH_MARGIN = 1.25
#: ... and at most this factor (before the doubling): a mode that won by more is
#: compared again once its steps grew this much. A path's first step without screening
#: is dearer than the later ones (its buffers grow), and where it settles the question
#: its ratio overstates the plain mode's cost: on a mnist-shaped metric path 1,057 ms
#: against 310-330 ms, 38x a screened step of 28 ms where the steady ratio is 11x; the
#: screened steps then grew to 400-500 ms, 1.3-1.6x the plain ones, without reaching
#: 38x and a comparison.
MAX_GROWTH_MARGIN = 8.0
#: The share of a path's time that measurements of the mode that lost may cost: a
#: measurement that found the other mode ``r`` times dearer sets the next one at least
#: ``(r - 1) / PROBE_SHARE`` steps later (at most :data:`MAX_BACKOFF` when ``r`` is
#: below :data:`DECISIVE`). On millisecond steps every measurement of screening costs
#: its own extra and a dearer first step back in the other mode: on standardised iris,
#: screening 1.3x dearer, doubling the spacing from 1 measured screening 8 times in
#: 103 steps, 5% of the path; on a SafeLAD path of 100 values where a step without
#: screening costs 10x a screened one, it is measured once.
PROBE_SHARE = 0.01
#: A screened step of at most this much CPU time (seconds) may be tried without
#: screening (see the module docstring) ...
CHEAP_STEP = 0.005
#: ... and so may one whose rules fixed less than this share of the variables ...
LOW_RATE = 0.5
#: ... or took at least this share of its time (measured: 62% on a Madelon-shaped
#: metric path where screening did not pay; 9% on a linear SafeSVC path and 22% on a
#: doubly sparse one where it paid 3.5x and 1.5x).
RULE_SHARE = 0.3
#: ... except, on a family compared per solver iteration (:attr:`CostModel.per_iteration`:
#: the metric learner, whose solver's work is the pairs it reads), where the rules
#: removed at least this share of the pairs: a step without them reads ten times as
#: many or more, which costs more than the rules unless they took a larger share of the
#: step than the share of the pairs they removed (the mnist-shaped path at its fourth
#: value: rules 39% of a 13 ms step whose solver read 0.1% of the pairs; the step
#: without screening measured there cost 285 ms).
HIGH_RATE = 0.9

#: Steady steps (the favoured mode, no measurement due) cheaper than this (CPU
#: seconds) are measured one in :data:`MEASURE_EVERY`, and always the one before a due
#: measurement of the other mode (which it is compared with): on steps of a third of a
#: millisecond (iris) the measurement itself, two reads of the thread's CPU clock and
#: the model's bookkeeping, cost 5 microseconds a step, 1.5% of the path; what the
#: steady steps' times serve (noticing that the path's steps grew) can wait a few steps.
TINY_STEP = 0.002
MEASURE_EVERY = 4

#: The passes over the data a fit makes besides one per solver iteration (its start
#: point's evaluation), for the comparisons per iteration (:attr:`CostModel.per_iteration`):
#: without it, a step of more iterations looks cheaper per iteration, and on a
#: SensIT-shaped path at 40,000 samples (steps of 1 to 4 iterations, the same in both
#: modes) one walk of the default screened 25 of 30 steps (45.2 s; 37.3-40.2 s with
#: it, 37.9-39.3 s without screening)
STARTING_PASSES = 1

#: A measurement of the other mode is made only where at least this many values of the
#: path follow it, when the path's length is known (a grid walked by
#: :func:`~sklearn_safescreen.path.estimator_path` or
#: :class:`~sklearn_safescreen.model_selection.RegularizationPathCV`, see
#: :func:`values_after`): the step it is compared with, then steps in the mode it may
#: choose. Nearer the end it cannot pay for itself: a SensIT-shaped metric path of 30
#: values measured screening at its last value (its plain steps had grown by half,
#: which brings a comparison forward), 4.1 s against 1.9 s for a plain step there,
#: 4% of the path.
MIN_VALUES_AFTER_PROBE = 3

MODES = ("auto", "always", "never")
#: The mode when nothing sets one: the cost model.
DEFAULT = "auto"
#: The environment variable that fixes the choice (see the module docstring).
ENVIRONMENT = "SKLEARN_SAFESCREEN_COST_MODEL"
_FORCED: list[str] = []
# the values that follow the fit under way on this thread, on a walk whose grid is known
_walk = threading.local()


def mode() -> str:
    """The mode in force: the innermost :func:`forced` block's, else the environment's,
    else ``"auto"`` (see the module docstring)."""
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


@contextmanager
def values_after(n: int | None) -> Iterator[None]:
    """Within the block, a fit on this thread is one step of a path walk with ``n``
    more values to come (``None``: not known). The path walkers set it around each fit;
    the fit hands it to its cost models through its step settings
    (:attr:`~.protocol.StepSettings.values_after`), which then measure the other mode
    only where enough of the path is left to use what they learn
    (:data:`MIN_VALUES_AFTER_PROBE`). It never changes an answer."""
    previous = getattr(_walk, "after", None)
    _walk.after = n
    try:
        yield
    finally:
        _walk.after = previous


def path_values_after() -> int | None:
    """The values after the fit under way on this thread (see :func:`values_after`)."""
    return getattr(_walk, "after", None)


@dataclass
class Decision:
    """What the cost model chose for one step, and why."""

    screen: bool
    reason: str
    probe: bool = False
    #: fixed by :func:`forced` or the environment: not measured
    forced: bool = False


#: What :meth:`CostModel.record` finds for a steady step not measured (see
#: :data:`TINY_STEP`).
_UNMEASURED = Decision(False, "not measured")
#: The decisions of the forced modes (shared: nothing changes a decision once made).
_FORCED_DECISIONS = {"always": Decision(True, "forced: always", forced=True),
                     "never": Decision(False, "forced: never", forced=True)}


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
    #: the last screened step's CPU time, screening rate and the share of its time
    #: its rules took (the lesser of the last two steps'; ``None``: not known)
    last_on: float | None = None
    last_rate: float | None = None
    last_rule_share: float | None = None
    _share: float | None = None  # the last screened step's own rule share
    #: a measurement of the other mode waiting for the favoured mode's next step:
    #: ``(mode measured, its time, the favoured mode's step before it, their solver
    #: iterations)``
    pending: tuple | None = None
    #: whether a comparison weighs the cost of a solver iteration rather than of a step
    #: (see :meth:`_compare`): for a family whose iterations are passes over the data
    #: that screening does not make fewer, and whose steps take few of them
    per_iteration: bool = False
    #: the solver iterations of each mode's last measured step
    _iters: dict = field(default_factory=lambda: {True: None, False: None})
    #: the favoured mode's step cost at the last comparison (``None``: none yet), and
    #: the growth of its steps that brings the next comparison forward
    compared_at: float | None = None
    compared_margin: float = 2.0
    #: whether the comparison under way was brought forward by growth, and how many
    #: such comparisons in a row kept the mode
    _grown: bool = False
    _growth_level: int = 0
    #: whether a step without screening has run since the path's first step (the first
    #: one is a warm-up, see :meth:`record`)
    off_warmed: bool = False
    #: why the path starts without screening (``None``: it starts with it; see
    #: :meth:`without_screening_first`)
    prior: str | None = None
    _last: Decision | None = None
    _why_cache: tuple | None = None
    #: the decision of the favoured mode's steps while no measurement is due, made
    #: once per comparison (``None``: none yet, see :meth:`decide`)
    _steady: Decision | None = None
    #: the environment's mode, read at the path's first step
    _environment: str | None = None
    #: steady steps left to run without being measured (see :data:`TINY_STEP`)
    _unmeasured: int = 0
    _start: float = 0.0
    _start_wall: float = 0.0

    @classmethod
    def without_screening_first(cls, reason: str) -> CostModel:
        """A model whose prior is that screening does not pay (``reason``, which the
        report records): the path's cold fit and its first :data:`FIRST_PROBE` warm
        steps run without screening, then screening is measured like a mode that lost
        (a probe, compared with the steps without it around it)."""
        # (its steps without screening have run: no warm-up of that mode is left)
        return cls(screening=False, countdown=FIRST_PROBE + 1, prior=reason,
                   off_warmed=True, _steady=Decision(False, reason))

    @property
    def on(self) -> float | None:
        """The cost of a step with screening (``None``: not measured)."""
        return min(self.on_times) if self.on_times else None

    @property
    def off(self) -> float | None:
        """The cost of a step without screening (``None``: not measured)."""
        return min(self.off_times) if self.off_times else None

    def decide(self, values_after: int | None = None) -> Decision:
        """The mode of the next step; ``values_after``: the path's values after it,
        when known (a measurement of the other mode is then made only where at least
        :data:`MIN_VALUES_AFTER_PROBE` follow)."""
        chosen = _FORCED[-1] if _FORCED else self._environment or self._read_environment()
        if chosen != "auto":  # (not measured: no clock read)
            self._last = _FORCED_DECISIONS[chosen]
            return self._last
        if self.countdown > 0 and self._steady is not None and self.pending is None:
            # the usual step: the favoured mode, no measurement due. (Its bookkeeping
            # is most of what the model costs a path that never screens: on iris,
            # 0.33 ms steps, 8-9 microseconds a step in all were 2.5% of the path.)
            self.countdown -= 1
            if self._unmeasured and self.countdown:
                # not measured (see TINY_STEP); its wall time, which costs nothing to
                # read, says whether it was still tiny
                self._unmeasured -= 1
                self._last = _UNMEASURED
                self._start_wall = time.perf_counter()
                return self._steady
            decision = self._steady
        elif self.pending is not None:
            # the favoured mode's step that closes the comparison with the measurement
            decision = self._favoured()
        elif self.on is None and self.prior is not None and self.countdown > 0:
            self.countdown -= 1
            decision = Decision(False, self.prior)
        elif self.on is None and (self.screening or not _too_late(values_after)):
            # (after stale measurements were dropped, or after the prior's steps, a
            # measurement of screening against the mode in use: a probe)
            self.prior = self._steady = None
            decision = Decision(True, "not measured yet", probe=not self.screening)
        elif self.countdown > 0:
            self.countdown -= 1
            decision = self._favoured()
        elif self.screening and not self._may_not_pay():
            decision = Decision(True, self._why_kept())
        elif _too_late(values_after):
            # (measured at each step while it is due: nothing is left to use it for)
            why = self.prior or self._favoured().reason
            decision = Decision(self.screening, (
                f"{why}; the other mode not measured with {values_after} value"
                f"{'' if values_after == 1 else 's'} of the path left"))
        else:  # measure the other mode again
            decision = Decision(not self.screening, "measuring the other mode",
                                probe=True)
        self._last = decision
        self._start = time.thread_time()
        if decision.screen:  # (the rules' share of a screened step's wall time)
            self._start_wall = time.perf_counter()
        return decision

    def _read_environment(self) -> str:
        """The environment's mode, kept for the path's later steps (see :func:`mode`)."""
        self._environment = mode()
        return self._environment

    def _may_not_pay(self) -> bool:
        """Whether a step without screening is worth measuring: the last screened step
        was cheap, its rules fixed few variables or took much of its time (see the
        module docstring)."""
        # (cheap: every one of the last screened steps, for a path's first steps grow
        # fast: the cross-validated linear SafeSVC path from C_min, 4 ms then 8, 13,
        # 18 ms, where a step without screening measured at 6 ms after the first
        # compared well with the mean of 4 and 13 ms and screening was left at a cost
        # of 100 ms a step a few values later)
        rate, share = self.last_rate, self.last_rule_share
        return (self.last_on is None or max(self.on_times, default=self.last_on) <= CHEAP_STEP
                or (rate is not None and rate < LOW_RATE)
                or (share is not None and share >= RULE_SHARE
                    and not (self.per_iteration and rate is not None
                             and rate >= HIGH_RATE and share < rate)))

    def _why_kept(self) -> str:
        rate = "" if self.last_rate is None else \
            f", {100 * self.last_rate:.0f}% of the variables screened"
        return (f"screening kept: {1e3 * self.last_on:.3g} ms a step{rate} (a step "
                "without it is not tried)")

    def _favoured(self) -> Decision:
        """The decision of a step in the favoured mode, with why. Made once per change
        of the measurements (on a path of steps of a third of a millisecond, iris, the
        model's bookkeeping, formatting and all, was 1% of the path)."""
        screen, on, off = self.screening, self.on, self.off
        key = (screen, on, off)
        if self._why_cache is None or self._why_cache[0] != key:
            if off is None or on is None:
                reason = "screening measured, no step without it yet"
            else:
                verb = "cheaper" if screen else "dearer"
                reason = (f"screening {verb}: {1e3 * on:.3g} ms a step against "
                          f"{1e3 * off:.3g} ms without")
            self._why_cache = (key, Decision(screen, reason))
        return self._why_cache[1]

    def record(self, n_iter: int, warm: bool = True, rate: float | None = None,
               rule_seconds: float | None = None, one_off_seconds: float = 0.0) -> None:
        """Measure the step :meth:`decide` chose (its CPU time since then, less
        ``one_off_seconds``, what it spent on work no later step repeats: the solver's
        buffers grown and faulted in; ``rate``: the share of the variables its
        screening fixed; ``rule_seconds``: the time its rules took). A step without
        solver work (a closed form, a reference already optimal) or a cold one (no
        previous solution: a solve from scratch, or a cold fit's internal path) is not
        comparable with a path step and teaches nothing; the measurement it was to make
        is made at the next step (after a cold one) or after the current spacing (after
        one without solver work).

        A measurement of the other mode is compared with the favoured mode's steps
        just before and just after it (their mean): the steps' difficulty changes
        along the path, and a comparison with older steps would favour whichever mode
        ran the easier ones."""
        decision, self._last = self._last, None
        if decision is None or decision.forced:
            return
        if decision is _UNMEASURED:
            if time.perf_counter() - self._start_wall > TINY_STEP:
                self._unmeasured = 0  # (no longer tiny: the next step is measured)
            return
        if n_iter <= 0 or not warm:
            if decision.probe:
                # after a cold step, at the next one; after a step without solver work
                # (the reference was already optimal), after the current spacing:
                # such steps come in runs where a path's solution stops changing, and
                # retrying at each screened every one of them (breast cancer, RBF,
                # the last 9 of 50 values)
                self.countdown = 0 if not warm else self.backoff
            return
        elapsed = time.thread_time() - self._start - one_off_seconds
        if decision is self._steady:
            self._unmeasured = MEASURE_EVERY - 1 if elapsed < TINY_STEP else 0
        if decision is self._steady and not decision.screen and (
                not self.off_times
                or elapsed <= max(CHEAP_STEP, DECISIVE * min(self.off_times))):
            # the usual step without screening (the cases below, in short)
            self.off_times.append(elapsed)
            self._iters[False] = n_iter
            self._notice_growth(self.off_times)
            return
        if decision.screen:
            # the rules' times are wall-clock (the report's events): their share is of
            # the step's wall time (under load, wall time grows and CPU time does not)
            wall = time.perf_counter() - self._start_wall
            self.last_on, self.last_rate = elapsed, rate
            share = None if rule_seconds is None else rule_seconds / max(wall, 1e-9)
            if share is not None and wall > PREEMPTED * elapsed:
                # the step waited for the processor (its wall time well above its CPU
                # time): where in it the waits fell is unknown, so its share says
                # nothing (the cross-validated linear SafeSVC path on a loaded
                # machine: one share of 0.63 among 0.04-0.12 opened the gate, and
                # the plain steps it measured cost 7x a screened one each)
                share = self._share
            # and the lesser of the last two shares: one step is not enough
            self.last_rule_share = share if share is None or self._share is None \
                else min(share, self._share)
            self._share = share
        if (not decision.screen and not decision.probe and self.pending is None
                and self.off is not None
                and elapsed > max(CHEAP_STEP, DECISIVE * self.off)):
            # the steps without screening are no longer what they were measured at
            # (the path got harder): both modes' measurements are stale; screening is
            # measured at the next step, against this step
            self.on_times.clear()
            self.off_times.clear()
            self._steady, self._unmeasured = None, 0
            self.off_times.append(elapsed)
            self._iters[False] = n_iter
            self.countdown, self.backoff = 0, 1
            return
        if decision.probe and not decision.screen and not self.off_warmed:
            # the path's first step without screening solves the whole problem for the
            # first time since the cold start, and its buffers, sized so far by the
            # reduced problems, grow and are touched afresh: a SensIT-shaped path at
            # 40,000 samples, 1.01 s for a step that costs 0.60 s once they have grown
            # (never to be paid again). It measured screening as the cheaper mode
            # where it cost 1.5x and the path stayed screened (0.94x of screening
            # off). So it is a warm-up, and the measurement is the next step's, unless
            # it settles the question anyway (twice a screened step or more: on the
            # cross-validated linear SafeSVC path, 104 ms against 15 ms, and a second
            # such step cost as much again).
            self.off_warmed = True
            # (against the last screened step: the least of the last ones is an
            # easier step where the path's steps grow, and on the SensIT-shaped path
            # it made the warm-up look decisive)
            if self.last_on is None or elapsed < DECISIVE * self.last_on:
                self.countdown = 0
                return
        times = self.on_times if decision.screen else self.off_times
        if decision.probe:
            before = (self.on_times if self.screening else self.off_times) or [None]
            # the mode measured now was last measured steps ago, on a problem of
            # another difficulty: only the new measurement stands
            times.clear()
            times.append(elapsed)
            self.pending = (decision.screen, elapsed, before[-1], n_iter,
                            self._iters[self.screening])
            self._iters[decision.screen] = n_iter
            return
        times.append(elapsed)
        self._iters[decision.screen] = n_iter
        if self.pending is not None:
            self._compare(*self.pending, after=elapsed, after_iters=n_iter)
            self.pending = None
        elif decision.screen == self.screening:
            self._notice_growth(times)

    def _notice_growth(self, times: deque) -> None:
        """Bring the next comparison forward when the favoured mode's last steps
        (``times``) all cost more than it won by when the modes were compared (at least
        GROWTH_MARGIN times what they cost then; one slow step is not enough): if the
        other mode's steps did not grow alike, it is the cheaper one now. Compared again
        at the next step (with screening, if it may not pay). Without screening this
        notices, on millisecond steps, that screening came to pay (standardised wine:
        from about the 60th of 103 values); with it, on a mnist-shaped metric path, that
        the screened steps grew past the plain ones (from 118 to 170 ms in ten steps
        while the plain ones stayed at 110 ms)."""
        if (self.compared_at is not None and len(times) >= 2
                and min(times) >= self.compared_margin * self.compared_at):
            self.countdown, self.backoff = 0, 1
            self._grown = True

    def _compare(self, measured_screen: bool, measured: float, before: float | None,
                 measured_iters: int, before_iters: int | None, after: float,
                 after_iters: int) -> None:
        """Choose the mode from a measurement of the other one against the favoured
        mode's steps around it, and space out the next measurement.

        With :attr:`per_iteration`, the steps are compared by their cost per solver
        iteration: where a step is two to six iterations, one more or fewer, which
        the iterates' history decides and not the mode, outweighs what the mode
        changes (a Gisette-shaped metric path: a screened step of 2 iterations at
        0.78 s each measured cheaper than the plain steps of 3 iterations at 0.57 s
        around it)."""
        favoured = after if before is None else 0.5 * (before + after)
        cost_of = measured
        favoured_cost = favoured
        unit = "a step"
        if self.per_iteration and measured_iters > 0 and after_iters > 0 and (
                before is None or before_iters):
            unit = "a pass over the data"
            # (per pass over the data: a fit evaluates its start point, then one point
            # per iteration)
            def per(seconds, iters):
                return seconds / (iters + STARTING_PASSES)
            cost_of = per(measured, measured_iters)
            favoured_cost = (per(after, after_iters) if before is None
                             else 0.5 * (per(before, before_iters) + per(after, after_iters)))
        if measured_screen:  # screening measured while running without it
            switch = cost_of < SWITCH_MARGIN * favoured_cost
        else:
            switch = cost_of <= favoured_cost
        # the mode chosen now, what its steps cost and by how much it won
        winner, loser = (cost_of, favoured_cost) if switch else (favoured_cost, cost_of)
        self.compared_at = measured if switch else favoured
        # a comparison brought forward by growth that kept the mode found the other
        # mode grown alike: the next needs twice the growth (on the digits metric path
        # both modes' steps grow 100-fold along the path, and comparisons at each
        # 1.7-3.8-fold growth cost 5% of it)
        self._growth_level = (self._growth_level + 1) if self._grown and not switch \
            else 0
        self._grown = False
        ratio = loser / max(winner, 1e-12)
        self.compared_margin = (min(max(ratio, GROWTH_MARGIN), MAX_GROWTH_MARGIN)
                                * 2.0 ** self._growth_level)
        # the measurements of the mode that lost cost (r - 1) favoured steps each:
        # spaced by at least (r - 1) / PROBE_SHARE steps, they cost PROBE_SHARE of the
        # path. What a measurement costs is its whole step: compared per iteration,
        # r is the steps' ratio where it is the larger (on standardised iris a
        # screened step after 30 plain ones cost 2.1-2.6 plain steps, 1.5 per pass,
        # and was measured again 32 steps later instead of 110-160)
        step_winner, step_loser = (measured, favoured) if switch else (favoured, measured)
        r = max(ratio, step_loser / max(step_winner, 1e-12))
        floor = int(np.ceil((r - 1.0) / PROBE_SHARE))
        if switch and measured_screen:
            # (a switch to screening: the plain mode left is measured again at the
            # next step, so that a switch made on one noisy step is undone at once.
            # Spaced like the measurements that kept the mode, one of seven walks of
            # the breast cancer path ran 37 of its 50 steps screened, each dearer than
            # a plain one)
            self.screening = True
            self.backoff = 1
        elif r >= DECISIVE:
            # the favoured mode costs half the other or less: measured again rarely
            # (and at once if the favoured steps double, see :meth:`record`)
            self.screening = self.screening and not switch
            self.backoff = max(MAX_BACKOFF, floor)
        else:
            # a switch away from screening is spaced like a measurement that kept the
            # mode (from 1): a wrong one runs a few steps as without screening, where
            # measuring screening again at the next step cost a screened step at
            # 1.2-1.4x on every millisecond path that switched
            self.screening = self.screening and not switch
            self.backoff = min(max(1 if switch else 2 * self.backoff, floor), MAX_BACKOFF)
        self.countdown = self.backoff
        on, off = (cost_of, favoured_cost) if measured_screen else (favoured_cost, cost_of)
        self._unmeasured = 0
        self._steady = Decision(self.screening, (
            f"screening {'cheaper' if self.screening else 'dearer'}: {1e3 * on:.3g} ms "
            f"{unit} against {1e3 * off:.3g} ms without"))


def _too_late(values_after: int | None) -> bool:
    """Whether too few of the path's values are left for a measurement of the other
    mode to pay (``None``: the path's length is not known)."""
    return values_after is not None and values_after < MIN_VALUES_AFTER_PROBE


def skipped_event(rule: str, value: float, n_variables: int, reason: str, task: str = "",
                  kind: str = "samples"):
    """The report's record of a step run without its screening."""
    from .report import ScreeningEvent

    return ScreeningEvent(rule, "skipped", value, 0, 0, n_variables, task=task, kind=kind,
                          note=reason)

