"""How long a kernel fit of SafeSVC / SafeLAD will take, said before it starts, and its
progress while it runs.

A kernel fit evaluates every entry of the kernel matrix at least once: the solver's
gradients and the certificate's margins need the rows of the support against every
sample, and the support of an SVM or LAD dual is a large part of the samples, so a cold
fit evaluates about the whole matrix. When the matrix does not fit in the row cache,
every further pass over it costs as much again. So n^2 times the cost of one entry is a
lower bound of the fit's time, and the figure a user needs before waiting for minutes.
"""

from __future__ import annotations

import threading
import time

import numpy as np

#: CPU time of one kernel entry (ns): a per-kernel constant (the kernel's function of
#: the inner product: an exponential, a power, nothing) plus a per-feature one (the
#: inner product's multiply-add), a calibration of the compiled kernel blocks on one
#: thread of an ordinary x86-64 core. The estimate only has to tell seconds from minutes
#: (it decides whether a fit announces itself), so a machine a few times faster or
#: slower does not change what it is for.
ENTRY_NS = {"rbf": 4.5, "poly": 13.0, "linear": 2.2}
ENTRY_NS_PER_FEATURE = 0.045
#: A kernel given by the user (callable, or any kernel we did not measure): rbf's.
ENTRY_NS_DEFAULT = 4.5
#: The solver's own work per evaluated entry (ns): each entry computed is also read by
#: the solver's gradient updates and the certificate's margins, a cost of the order of
#: computing a cheap entry (the same calibration as ``ENTRY_NS``).
SOLVER_NS = 5.0
#: Fits estimated to take at least this long (seconds) say so: about where a user would
#: rather choose a smaller problem than wait.
LONG_FIT_SECONDS = 60.0
#: Seconds between two progress lines of one fit (verbose >= 1): often enough to show
#: the fit is alive, rarely enough not to flood the output.
PROGRESS_SECONDS = 5.0


def entry_ns(kernel, n_features: int) -> float:
    """Estimated CPU time (ns) of one kernel entry, solver work included."""
    if kernel == "precomputed":
        return SOLVER_NS  # (read, not computed)
    base = ENTRY_NS.get(kernel, ENTRY_NS_DEFAULT) if isinstance(kernel, str) \
        else ENTRY_NS_DEFAULT
    return base + ENTRY_NS_PER_FEATURE * n_features + SOLVER_NS


def estimate_seconds(n: int, n_tasks: int, kernel, n_features: int) -> float:
    """Lower bound of a cold kernel fit's CPU time: one pass over an n x n kernel per
    task (a pair of classes, or a class against the rest)."""
    return n_tasks * float(n) ** 2 * entry_ns(kernel, n_features) * 1e-9


def describe(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} s"


def long_fit_message(name: str, n: int, n_tasks: int, kernel, n_features: int,
                     cache_rows: int, cache_size: float, pairs: bool = False
                     ) -> str | None:
    """The warning for a fit estimated above :data:`LONG_FIT_SECONDS`, else None.

    ``pairs``: the tasks are pairs of classes (one-vs-one), each on its two classes'
    samples, and ``n`` is the largest pair's; otherwise every task is on all ``n``
    samples (one-vs-rest)."""
    seconds = estimate_seconds(n, n_tasks, kernel, n_features)
    if seconds < LONG_FIT_SECONDS:
        return None
    kind = kernel if isinstance(kernel, str) else "callable"
    share = "its share of " if pairs else ""
    held = ("fits in" if cache_rows >= n else
            f"does not fit in {share}cache_size={cache_size:g} MB ({cache_rows} of {n} "
            "rows), so every further pass costs as much again")
    cost = (f"{float(n) ** 2:.2g} entries, about {entry_ns(kernel, n_features):.0f} ns "
            f"each with {n_features} features")
    if pairs:
        samples = f"{n_tasks} pairs of classes (the largest on {n} samples)"
        passes = (f"each pair's kernel matrix at least once (the largest is {n} x {n}: "
                  f"{cost}), and the largest matrix {held}")
    else:
        tasks = f" for each of {n_tasks} one-vs-rest tasks" if n_tasks > 1 else ""
        samples = f"{n} samples"
        passes = (f"the {n} x {n} kernel matrix at least once{tasks} ({cost}), and the "
                  f"matrix {held}")
    return (f"{name} with the {kind} kernel on {samples} will take at least about "
            f"{describe(seconds)} of CPU time: a kernel fit evaluates every entry of "
            f"{passes}. verbose=1 prints progress during the fit; a subset of the "
            "samples, or the linear kernel, is much faster.")


class Progress:
    """While a long fit runs (``verbose >= 1``), a line every
    :data:`PROGRESS_SECONDS`, labelled with the value the user asked for: the elapsed
    time and, for a kernel fit, the kernel entries evaluated against the one pass over
    the matrix that a fit needs at least, with the time that pass still needs at the
    rate so far (read from the kernels' counters; the solver is not interrupted). With
    no kernel to count (``kernels`` empty), the elapsed time alone shows the fit is
    alive."""

    def __init__(self, label: str, kernels: list, n: int, every: float | None = None,
                 out=print, statuses: list | None = None, tol: float | None = None):
        self.label, self.kernels, self.n = label, kernels, n
        self.every = PROGRESS_SECONDS if every is None else every
        self.out = out
        self.statuses, self.tol = list(statuses or []), tol
        self._first_gap: tuple[float, float] | None = None  # (elapsed, gap) first seen
        self._last_epoch = 0
        self._start_count = self._count()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _count(self) -> int:
        return int(sum(k.n_evaluations for k in self.kernels))

    def line(self, elapsed: float, done: int) -> str:
        """The progress line after ``elapsed`` seconds and ``done`` kernel entries."""
        head = f"{self.label} fitting: {elapsed:.0f} s"
        solver = self._solver_words(elapsed)
        if not self.kernels:
            return head + " elapsed" + solver
        return self._kernel_words(head, elapsed, done) + solver

    def _solver_words(self, elapsed: float) -> str:
        """The solve's epochs and its worst task's relative duality gap, and the time
        to ``tol`` if the gap keeps falling at its geometric rate so far (an estimate:
        coordinate descent converges linearly, at a rate that can change)."""
        seen = [s for s in self.statuses if s.n_iter > 0]
        if not seen:
            return ""
        gap, epoch = max(s.rel_gap for s in seen), max(s.n_iter for s in seen)
        text = f"; epoch {epoch}, relative duality gap {gap:.2g}"
        if epoch < self._last_epoch:
            self._first_gap = None  # a new solve (an internal path's next step): anew
        self._last_epoch = epoch
        if not (np.isfinite(gap) and gap > 0.0):
            return text
        if self.tol is not None:
            text += f" (tol {self.tol:g})"
        if self._first_gap is None:
            self._first_gap = (elapsed, gap)
            return text
        t0, g0 = self._first_gap
        if self.tol is not None and gap > self.tol and g0 > gap and elapsed > t0:
            rate = np.log(g0 / gap) / (elapsed - t0)  # per second
            text += f", about {describe(np.log(gap / self.tol) / rate)} more at this rate"
        return text

    def _kernel_words(self, head: str, elapsed: float, done: int) -> str:
        one_pass = float(self.n) ** 2 * len(self.kernels)
        text = (f"{head}, {done:.3g} kernel entries evaluated ({done / one_pass:.0%} of "
                "one pass over the kernel matrix)")
        if 0 < done < one_pass:
            # a lower bound: the fit needs at least the rest of that pass
            rest = elapsed * (one_pass - done) / done
            text += f"; the first pass needs at least {describe(rest)} more"
        return text

    def _run(self) -> None:
        start = time.perf_counter()
        while not self._done.wait(self.every):
            self.out(self.line(time.perf_counter() - start,
                               self._count() - self._start_count), flush=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


__all__ = ["Progress", "estimate_seconds", "long_fit_message"]
