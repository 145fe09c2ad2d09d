"""ScreeningReport: what was screened, when, by which rule, and at what cost.

Every estimator family fills one of these; benchmarks, plots and the command line read
only this object. A report counts one or several *kinds* of variables: samples (SVM,
LAD: at the lower or the upper end of their box), triplets (metric learning: in R or
in L), or features and samples at once (doubly sparse models). The first kind is the
report's primary one: ``n_variables``, ``n_screened`` and ``screening_rate`` speak of it,
``counts`` of every kind.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class ScreeningEvent:
    """One screening event.

    ``moment`` is ``"reference"`` (before the solve, from a previous solution),
    ``"skipped"`` (the cost model ran the step without screening; ``note`` says why),
    ``"range"`` (from the stored ranges of earlier solutions), ``"dynamic"`` (during the
    solve, from a duality-gap ball), ``"closed_form"`` (the target is at or beyond the
    critical value, where the solution is known), ``"repair"`` (the certificate put
    variables back: negative counts) or ``"solve"`` (no screening, solver time only).
    ``n_lower`` / ``n_upper`` count the variables of ``kind`` fixed at the lower / upper
    end (SVM samples: alpha = 0 / alpha = C; LAD: -C / +C; triplets: R / L; features:
    at zero / unused).
    """

    rule: str
    moment: str
    value: float  # the regularisation value being solved (C, alpha, ...)
    n_lower: int = 0
    n_upper: int = 0
    n_variables: int = 0
    rule_time: float = 0.0
    solver_time: float = 0.0
    task: str = ""  # e.g. the class of a one-vs-rest problem
    kind: str = "samples"
    note: str = ""  # why (a "skipped" event: the cost model's reason)

    @property
    def n_screened(self) -> int:
        return self.n_lower + self.n_upper


@dataclass
class VariableCount:
    """How many variables of one kind a fit has, and how many it fixed without solving
    for them (by screening or by a closed form) at the end of the fit."""

    n_variables: int = 0
    n_lower: int = 0
    n_upper: int = 0

    @property
    def n_screened(self) -> int:
        return self.n_lower + self.n_upper

    @property
    def screening_rate(self) -> float:
        return self.n_screened / self.n_variables if self.n_variables else 0.0


class ScreeningReport:
    """All screening events of one fit.

    Parameters
    ----------
    kind : str, default="samples"
        The kind of the variables counted (``"samples"``, ``"triplets"``, ...).
    n_variables : int, default=0
        How many there are (summed over one-vs-rest subproblems by :meth:`merge`).
    n_screened : int, default=0
        How many of them are fixed at the end of the fit (see :meth:`set_final`).
    events : list of ScreeningEvent, optional
    variables : dict of str to int, optional
        Several kinds at once, e.g. ``{"features": d, "samples": n}`` (the first is
        the primary kind); replaces ``kind`` and ``n_variables``.

    Attributes
    ----------
    counts : dict of str to VariableCount
        Per kind: the variables, and those fixed at the end of the fit (by the
        reference and dynamic events of the final value, net of repairs, or by a closed
        form).
    events : list of ScreeningEvent
    closed_form : bool
        Whether the final value was solved in closed form (every variable decided by
        the solution's formula, not by a screening rule).
    """

    def __init__(self, kind: str = "samples", n_variables: int = 0, n_screened: int = 0,
                 events: list[ScreeningEvent] | None = None, *,
                 variables: dict[str, int] | None = None):
        variables = {kind: n_variables} if variables is None else dict(variables)
        self.counts = {k: VariableCount(int(n)) for k, n in variables.items()}
        self.counts[self.kind].n_lower = int(n_screened)
        self.events: list[ScreeningEvent] = list(events or [])
        self.closed_form = False
        self._merged = False

    # -- the primary kind
    @property
    def kind(self) -> str:
        return next(iter(self.counts))

    @property
    def n_variables(self) -> int:
        return self.counts[self.kind].n_variables

    @property
    def n_screened(self) -> int:
        return self.counts[self.kind].n_screened

    @property
    def screening_rate(self) -> float:
        return self.counts[self.kind].screening_rate

    @property
    def skipped(self) -> list[str]:
        """Why the policy ran the steps of this fit without screening (empty when
        every step screened)."""
        return [e.note for e in self.events if e.moment == "skipped"]

    @property
    def screening_rates(self) -> dict[str, float]:
        """The screening rate of every kind."""
        return {k: c.screening_rate for k, c in self.counts.items()}

    # -- times
    @property
    def rule_time(self) -> float:
        return sum(e.rule_time for e in self.events)

    @property
    def solver_time(self) -> float:
        return sum(e.solver_time for e in self.events)

    # -- filling
    def add(self, event: ScreeningEvent) -> None:
        self.events.append(event)

    def set_final(self, n_lower: int, n_upper: int = 0, kind: str | None = None, *,
                  closed_form: bool = False) -> None:
        """Record the variables of ``kind`` (default: the primary one) fixed at the end
        of the fit."""
        count = self.counts[self.kind if kind is None else kind]
        count.n_lower, count.n_upper = int(n_lower), int(n_upper)
        self.closed_form = closed_form

    def merge(self, other: ScreeningReport) -> None:
        """Fold a subproblem's report (one-vs-rest class) into this one."""
        for k, c in other.counts.items():
            mine = self.counts.setdefault(k, VariableCount())
            mine.n_variables += c.n_variables
            mine.n_lower += c.n_lower
            mine.n_upper += c.n_upper
        # closed form only if every subproblem was
        self.closed_form = other.closed_form and (self.closed_form or not self._merged)
        self._merged = True
        self.events.extend(other.events)

    # -- reading
    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "n_variables": self.n_variables,
            "n_screened": self.n_screened,
            "screening_rate": self.screening_rate,
            "closed_form": self.closed_form,
            "variables": {k: {**asdict(c), "n_screened": c.n_screened,
                              "screening_rate": c.screening_rate}
                          for k, c in self.counts.items()},
            "rule_time": self.rule_time,
            "solver_time": self.solver_time,
            "events": [asdict(e) for e in self.events],
        }

    def to_frame(self):
        """The events as a pandas DataFrame (pandas is optional)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("ScreeningReport.to_frame needs pandas: pip install pandas"
                              ) from exc
        return pd.DataFrame([asdict(e) for e in self.events])

    def __repr__(self) -> str:
        what = "decided in closed form" if self.closed_form else "screened"
        counts = ", ".join(f"{c.n_screened}/{c.n_variables} {k}"
                           for k, c in self.counts.items())
        rates = ", ".join(f"{c.screening_rate:.1%}" for c in self.counts.values())
        head = (f"ScreeningReport({counts} {what} ({rates}), rule {self.rule_time:.3g}s, "
                f"solver {self.solver_time:.3g}s, {len(self.events)} events)")
        lines = [head]
        shown = self.events[-8:]
        if len(self.events) > len(shown):
            lines.append(f"  ... {len(self.events) - len(shown)} earlier events")
        several = len(self.counts) > 1
        for e in shown:
            lines.append(
                f"  {e.task + ' ' if e.task else ''}{e.moment:<11} {e.rule:<5} "
                + (f"{e.kind:<9} " if several else "")
                + f"value={e.value:<10.4g} lower={e.n_lower:<6d} upper={e.n_upper:<6d} "
                f"rule={e.rule_time:.2e}s solver={e.solver_time:.2e}s"
                + (f" ({e.note})" if e.note else ""))
        return "\n".join(lines)


def merge_reports(reports: list[ScreeningReport]) -> ScreeningReport:
    """One report of a fit from its one-vs-rest tasks' reports (the single task's own
    report when there is one)."""
    if len(reports) == 1:
        return reports[0]
    merged = ScreeningReport(variables={k: 0 for k in reports[0].counts})
    for report in reports:
        merged.merge(report)
    return merged

