"""ScreeningReport: what was screened, when, by which rule, and at what cost.

Every estimator family fills one of these; benchmarks and plots read only this object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class ScreeningEvent:
    """One screening event.

    ``moment`` is ``"reference"`` (before the solve, from a previous solution),
    ``"dynamic"`` (during the solve, from a duality-gap ball), ``"closed_form"`` (the
    target is at or below the critical value), ``"repair"`` (the certificate put
    variables back) or ``"solve"`` (no screening, solver time only).
    """

    rule: str
    moment: str
    value: float  # the regularisation value being solved (C, alpha, ...)
    n_lower: int = 0  # variables fixed at the lower end (SVM: R, alpha=0)
    n_upper: int = 0  # variables fixed at the upper end (SVM: L, alpha=C)
    n_variables: int = 0
    rule_time: float = 0.0
    solver_time: float = 0.0
    task: str = ""  # e.g. the class of a one-vs-rest problem

    @property
    def n_screened(self) -> int:
        return self.n_lower + self.n_upper


@dataclass
class ScreeningReport:
    """All screening events of one fit.

    ``n_variables`` counts the variables of the problem (samples, features or triplets,
    summed over one-vs-rest subproblems); ``n_screened`` counts those fixed by screening
    at the end of the fit (reference and dynamic events of the final value, net of
    repairs).
    """

    kind: str = "samples"
    n_variables: int = 0
    n_screened: int = 0
    events: list[ScreeningEvent] = field(default_factory=list)

    @property
    def screening_rate(self) -> float:
        return self.n_screened / self.n_variables if self.n_variables else 0.0

    @property
    def rule_time(self) -> float:
        return sum(e.rule_time for e in self.events)

    @property
    def solver_time(self) -> float:
        return sum(e.solver_time for e in self.events)

    def add(self, event: ScreeningEvent) -> None:
        self.events.append(event)

    def merge(self, other: ScreeningReport) -> None:
        """Fold a subproblem's report (one-vs-rest class) into this one."""
        self.n_variables += other.n_variables
        self.n_screened += other.n_screened
        self.events.extend(other.events)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "n_variables": self.n_variables,
            "n_screened": self.n_screened,
            "screening_rate": self.screening_rate,
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
        head = (f"ScreeningReport({self.n_screened}/{self.n_variables} {self.kind} "
                f"screened ({self.screening_rate:.1%}), rule {self.rule_time:.3g}s, "
                f"solver {self.solver_time:.3g}s, {len(self.events)} events)")
        lines = [head]
        shown = self.events[-8:]
        if len(self.events) > len(shown):
            lines.append(f"  ... {len(self.events) - len(shown)} earlier events")
        for e in shown:
            lines.append(
                f"  {e.task + ' ' if e.task else ''}{e.moment:<11} {e.rule:<5} "
                f"value={e.value:<10.4g} lower={e.n_lower:<6d} upper={e.n_upper:<6d} "
                f"rule={e.rule_time:.2e}s solver={e.solver_time:.2e}s")
        return "\n".join(lines)
