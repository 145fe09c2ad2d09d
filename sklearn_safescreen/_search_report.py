"""What :class:`~sklearn_safescreen.model_selection.RegularizationPathCV` prints
(``verbose``): the search's size, one line per finished (combination, fold) walk, and
the table of each combination's path.
"""

from __future__ import annotations

import numpy as np

from ._search_grid import SearchSpace


def print_header(space: SearchSpace, n_splits: int, param_name: str) -> None:
    """The number of fits and of warm-started walks."""
    n_cand, n_walks = len(space.candidates), len(space.combinations) * n_splits
    print(f"Fitting {n_splits} folds for each of {n_cand} candidates, totalling "
          f"{n_cand * n_splits} fits, in {n_walks} warm-started walks along {param_name}")


def walk_label(space: SearchSpace, c: int, s: int, n_splits: int, param_name: str) -> str:
    """The progress label of combination ``c``'s walk on fold ``s``: its position among
    the walks, the other parameters and the ends of the values walked."""
    walk, short = space.walks[c], param_name.rsplit("__", 1)[-1]
    n_walks = len(space.combinations) * n_splits
    other = "".join(f"{k}={v}, " for k, v in space.combinations[c].items())
    return (f"[CV {s + 1}/{n_splits}; walk {c * n_splits + s + 1}/{n_walks}] END "
            f"{other}{short}={float(walk[0]):.4g}..{float(walk[-1]):.4g}")


def print_walk(label: str, outs: list[dict], reports: list, seconds: float) -> None:
    """One finished walk: its label, number of values, mean screening rate, failed
    fits and time."""
    rates = [r.screening_rate for r in reports if r is not None]
    screened = f"{np.mean(rates):.1%}" if rates else "n/a"
    failed = sum(o.get("fit_error") is not None for o in outs)
    msg = f"{label}; {len(outs)} values; mean screened {screened}"
    if failed:
        msg += f"; {failed} failed"
    print(f"{msg}; total time={seconds:.1f}s")


def print_table(results: dict, combinations: list[dict], values: list, candidates: list,
                reports: list, *, param_name: str, metric, single: bool) -> None:
    """Per combination of the other parameters (its name=value line first, unless
    ``single``), one line per value in walk order: value, screening rate (or
    "closed-form", one field like the rates, where every fold's fit was solved in
    closed form: nothing was screened there), mean fit time and, when ``metric`` (the
    refit metric) names a score of ``results``, the CV score and its standard
    deviation.

    Parameters
    ----------
    results : dict
        The search's ``cv_results_``.
    combinations : list of dict
        The other parameters' combinations.
    values, candidates, reports : list
        The search's ``path_values_``, ``path_candidates_`` and ``path_reports_``: per
        combination, the values walked, their candidates (walk order) and
        ``reports[fold][k]``, the screening report of each fit (None when it failed);
        the single combination's when ``single``.
    param_name : str
        The parameter walked.
    metric : str, bool or callable
        ``"score"`` for a single metric, else the search's ``refit``.
    single : bool
        No ``param_grid``: one combination, whose parameters are not printed.
    """
    if single:
        values, candidates, reports = [values], [candidates], [reports]
    key = f"mean_test_{metric}" if isinstance(metric, str) else None
    short = param_name.rsplit("__", 1)[-1]
    head = f"{short:>11} {'screened':>11} {'fit time (s)':>13}"
    if key in results:
        head += f" {'CV ' + key[10:]:>12} {'+/-':>7}"
    mixed = False
    for combo, walk, cands, reps in zip(combinations, values, candidates, reports,
                                        strict=True):
        if not single:
            print(", ".join(f"{k}={v}" for k, v in combo.items()) + ":")
        print(head)
        # closed_form[s, k]: fold s's fit at the k-th value had the closed-form solution
        closed_form = np.array([[getattr(r, "closed_form", False) for r in fold]
                                for fold in reps], dtype=bool)
        for k, (value, c) in enumerate(zip(walk, cands, strict=True)):
            rate = f"{results['mean_screening_rate'][c]:.1%}"
            if closed_form[:, k].all():
                rate = "closed-form"
            elif closed_form[:, k].any():
                rate, mixed = rate + "*", True
            line = f"{float(value):>11.4g} {rate:>11} {results['mean_fit_time'][c]:>13.4f}"
            if key in results:
                line += f" {results[key][c]:>12.4f} {results['std' + key[4:]][c]:>7.4f}"
            print(line)
    if mixed:
        print("* some folds were solved in closed form at this value (counted as "
              "100% decided)")
