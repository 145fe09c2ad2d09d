"""Screening-rate plots along a regularisation path (matplotlib is an optional extra).

:func:`plot_screening_path` draws, against the regularisation value (log scale), the
fraction of the variables that safe screening removed and the solve time of each fit,
like the screening-rate and path-timing figures of Ogawa et al. (2013, Fig. 4, Table IV)
and Wang et al. (2014).
"""

from __future__ import annotations

import numpy as np


def _import_pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot_screening_path needs matplotlib, an optional dependency: "
                          "pip install matplotlib") from exc
    return plt


def _series(result) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None,
                             float | None]:
    """(parameter name, values, rates per fold (k, n), times per fold (k, n), CV score or
    None, best value or None) in walk order, from a PathResult or a fitted
    RegularizationPathCV."""
    if hasattr(result, "screening_rates_") and hasattr(result, "path_values_"):
        values = np.asarray(result.path_values_)
        rates = np.asarray(result.screening_rates_, dtype=float)
        times = np.asarray(result.path_fit_times_, dtype=float)
        params = [p[result.param_name_] for p in result.cv_results_["params"]]
        position = {float(v): k for k, v in enumerate(params)}
        key = "mean_test_score"
        if key not in result.cv_results_ and isinstance(result.refit, str):
            key = f"mean_test_{result.refit}"
        score = None
        if key in result.cv_results_:
            score = np.array([result.cv_results_[key][position[float(v)]] for v in values])
        best = result.best_params_[result.param_name_] if hasattr(
            result, "best_params_") else None
        return result.param_name_, values, rates, times, score, best
    if hasattr(result, "screening_rates") and hasattr(result, "values"):
        return (result.param_name, np.asarray(result.values),
                np.asarray(result.screening_rates, dtype=float)[None, :],
                np.asarray(result.times, dtype=float)[None, :], None, None)
    raise TypeError("plot_screening_path expects a PathResult (estimator_path, svm_path, "
                    "...) or a fitted RegularizationPathCV; got "
                    f"{type(result).__name__}")


def plot_screening_path(result, *, ax=None, show_time: bool = True,
                        title: str | None = None):
    """Plot the screening rate (and solve time) against the regularisation value.

    Parameters
    ----------
    result : PathResult or fitted RegularizationPathCV
        For a RegularizationPathCV, the mean over folds is drawn as a line and each fold
        as a faint one; the CV score is drawn on a second axis below when available and
        the best value is marked.
    ax : matplotlib Axes or None, default=None
        Axes for the screening rate; a new figure when None.
    show_time : bool, default=True
        Draw the fit time on a twin y axis (log scale).
    title : str or None
        Figure title (default: describes the path).

    Returns
    -------
    ax : matplotlib Axes
        The screening-rate axes (``ax.figure`` is the figure; the time axes is
        ``ax.time_ax`` when drawn).

    Raises
    ------
    ImportError
        When matplotlib is not installed (it is an optional dependency).
    """
    name, values, rates, times, score, best = _series(result)
    plt = _import_pyplot()
    if ax is None:
        n_rows = 2 if score is not None else 1
        fig, axes = plt.subplots(n_rows, 1, sharex=True, squeeze=False,
                                 figsize=(7, 3.2 * n_rows), constrained_layout=True)
        ax = axes[0, 0]
        score_ax = axes[1, 0] if score is not None else None
    else:
        score_ax = None
    short = name.rsplit("__", 1)[-1]
    if rates.shape[0] > 1:
        for fold in rates:
            ax.plot(values, 100 * fold, color="C0", alpha=0.25, lw=0.8)
    ax.plot(values, 100 * np.nanmean(rates, axis=0), "o-", color="C0", ms=3,
            label="screened (%)")
    ax.set_xscale("log")
    ax.set_ylim(-2, 102)
    ax.set_ylabel("variables screened (%)", color="C0")
    ax.set_xlabel(short)
    ax.grid(True, which="major", alpha=0.3)
    if show_time:
        tax = ax.twinx()
        tax.plot(values, np.nanmean(times, axis=0), "s--", color="C1", ms=3,
                 label="fit time (s)")
        tax.set_yscale("log")
        tax.set_ylabel("fit time (s)", color="C1")
        ax.time_ax = tax
    if score_ax is not None:
        score_ax.plot(values, score, "o-", color="C2", ms=3)
        score_ax.set_ylabel("CV score")
        score_ax.set_xlabel(short)
        score_ax.grid(True, alpha=0.3)
        ax.set_xlabel("")
        ax.score_ax = score_ax
    if best is not None:
        for a in (ax, score_ax):
            if a is not None:
                a.axvline(best, color="k", ls=":", lw=1)
    if title is None:
        kind = f"{rates.shape[0]}-fold CV path" if rates.shape[0] > 1 else "path"
        title = f"Safe screening along the {kind} of {name} ({values.size} values)"
    ax.set_title(title)
    return ax
