r"""Grids of a regularisation path and the estimator's critical value.

A grid (:func:`make_grid`) is explicit values, ``n_values`` values spaced geometrically
from the critical value, or (estimators that define it) the eps-approximation path;
walked from the most to the least regularised value. Everything here talks to the
estimator through the path protocol (:class:`~sklearn_safescreen.base.PathEstimatorMixin`)
only.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone as _clone
from sklearn.pipeline import Pipeline

from .base import PathEstimatorMixin

GRID_KINDS = ("geometric", "eps-path")

#: Safety cap on the length of an eps-path.
_EPS_PATH_MAX_VALUES = 10_000
#: Default end of an eps-path without ``stop``: this many times the critical value
#: (Ogawa et al.'s experiments run from C_min ~ 2e-4 to 1e4).
_EPS_PATH_DEFAULT_SPAN = 1e4


# ------------------------------------------------------------- locating the step ---
def _is_safe(obj) -> bool:
    return isinstance(obj, PathEstimatorMixin)


def _safe_candidates(estimator) -> list[tuple[str, object]]:
    """``(prefix, estimator)`` of every Safe estimator in ``estimator`` (itself or a
    sub-estimator reachable through ``get_params(deep=True)``, e.g. a Pipeline step)."""
    found = [("", estimator)] if _is_safe(estimator) else []
    if hasattr(estimator, "get_params"):
        for key, value in estimator.get_params(deep=True).items():
            if _is_safe(value):
                found.append((key + "__", value))
    return found


_SUPPORTED = ("a Safe estimator of sklearn_safescreen (SafeSVC, SafeLAD, "
              "SafeMetricLearner, ...: any estimator with the path protocol, "
              "sklearn_safescreen.base.PathEstimatorMixin), or a Pipeline containing one")


def resolve_path_param(estimator, param_name: str | None = None) -> tuple[str, str, object]:
    """Find the regularisation parameter to walk.

    Parameters
    ----------
    estimator : estimator
        A Safe estimator or a Pipeline (possibly nested) containing one.
    param_name : str or None
        ``"C"``, ``"safesvc__C"``, ``"metric__alpha"``...; inferred when ``None`` and
        exactly one Safe estimator is present.

    Returns
    -------
    param_name : str
        The full parameter name, usable with ``estimator.set_params``.
    prefix : str
        The prefix of the Safe estimator that owns it (``""`` or ``"step__"``).
    safe : estimator
        That Safe estimator (not a copy).
    """
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "fit"):
        raise TypeError(f"expected {_SUPPORTED}; got {type(estimator).__name__}")
    candidates = _safe_candidates(estimator)
    if not candidates:
        raise TypeError(f"{type(estimator).__name__} is not supported: expected "
                        f"{_SUPPORTED}")
    names = {prefix + safe._path_param: (prefix, safe) for prefix, safe in candidates}
    if param_name is None:
        if len(names) > 1:
            raise ValueError("param_name is ambiguous: the estimator contains several Safe "
                             f"estimators; choose one of {sorted(names)}")
        param_name = next(iter(names))
    if not isinstance(param_name, str):
        raise TypeError(f"param_name must be a string; got {param_name!r}")
    if param_name not in names:
        valid = estimator.get_params(deep=True)
        if param_name not in valid:
            raise ValueError(f"{type(estimator).__name__} has no parameter "
                             f"{param_name!r}; the regularisation parameter(s) of its Safe "
                             f"estimator(s): {sorted(names)}")
        raise ValueError(f"{param_name!r} is not the regularisation parameter of a Safe "
                         f"estimator, so a screened path cannot walk it; use one of "
                         f"{sorted(names)} (or GridSearchCV for other parameters)")
    prefix, safe = names[param_name]
    return param_name, prefix, safe


def _critical_value(estimator, prefix: str, X, y, sample_weight=None, *,
                    in_place: bool = False) -> float:
    """The Safe step's critical value, on the data it sees (after the Pipeline steps
    before it, fitted on ``X``).

    Computed on a clone (its validation sets attributes), or with ``in_place`` on
    ``estimator`` itself: the path walk does so on its own clone, with
    ``warm_start=True``, so that the problem built for the critical value (a triplet
    set, a kernel cache) is the warm-start state its first fit starts from."""
    obj, Xt = (estimator if in_place else _clone(estimator)), X
    parts = prefix.split("__")[:-1] if prefix else []
    for name in parts:
        if not isinstance(obj, Pipeline):
            raise ValueError(
                f"cannot compute the critical value of a Safe estimator nested in a "
                f"{type(obj).__name__}; pass explicit values")
        index = [n for n, _ in obj.steps].index(name)
        if index > 0:
            Xt = _clone(obj[:index]).fit_transform(Xt, y)
        obj = obj.steps[index][1]
    value = float(obj._critical_value(Xt, y, sample_weight=sample_weight))
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"the critical value of {type(obj).__name__} on this data is "
                         f"{value}: the solution does not depend on "
                         f"{obj._path_param}; pass explicit values")
    return value


# ---------------------------------------------------------------------- grids ---
def _check_values(values) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"values must be a 1-D array of positive numbers; got "
                         f"{values!r}") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("the grid of values is empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"the grid values must be finite and > 0; got {arr}")
    return arr


def walk_order(values: np.ndarray, increasing: bool) -> np.ndarray:
    """Indices that sort ``values`` from the most to the least regularised (stable, so
    ties keep their order)."""
    return np.argsort(values if increasing else -values, kind="stable")


def _geometric(start: float, n_values: int, eps: float, stop: float | None,
               increasing: bool) -> np.ndarray:
    if stop is None:
        stop = start / eps if increasing else start * eps
    if (stop < start) if increasing else (stop > start):
        raise ValueError(f"stop={stop:g} is on the wrong side of the critical value "
                         f"{start:g}: it must be {'larger' if increasing else 'smaller'} "
                         "(less regularised)")
    return np.geomspace(start, stop, n_values)


def _check_grid_args(n_values, eps, stop) -> None:
    if not isinstance(n_values, numbers.Integral) or isinstance(n_values, bool) \
            or n_values < 1:
        raise ValueError(f"n_values must be an integer >= 1; got {n_values!r}")
    if not isinstance(eps, numbers.Real) or not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got {eps!r}")
    if stop is not None and (not isinstance(stop, numbers.Real) or not np.isfinite(stop)
                             or stop <= 0):
        raise ValueError(f"stop must be a finite number > 0; got {stop!r}")


@dataclass
class _Grid:
    """A path's grid: ``values`` as given (explicit) or generated, ``order`` their walk
    order (most to least regularised), and the critical value it started from."""

    values: np.ndarray
    order: np.ndarray
    critical: float | None = None


def critical_value(estimator, X, y, *, param_name: str | None = None,
                   sample_weight=None) -> float:
    """The critical value of ``estimator``'s regularisation parameter on ``(X, y)``.

    The most regularised value at which the solution is known in closed form: for
    SafeSVC and SafeLAD :math:`C_{\\min}` (every ``C`` below it has the closed-form
    solution), for SafeMetricLearner the :math:`\\lambda_L` above which the metric is
    :math:`G_+/\\alpha`. A path starts there. For a Pipeline, the steps before the Safe
    estimator are fitted on ``X`` first.

    Parameters
    ----------
    estimator : estimator
        A Safe estimator or a Pipeline containing one (not modified).
    X, y : array-like
        Training data.
    param_name : str or None
        See :func:`resolve_path_param`.
    sample_weight : array-like or None

    Returns
    -------
    float

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_safescreen import SafeMetricLearner
    >>> from sklearn_safescreen.path import critical_value
    >>> X, y = load_iris(return_X_y=True)
    >>> round(critical_value(SafeMetricLearner(), X, y))
    454735
    """
    _, prefix, _ = resolve_path_param(estimator, param_name)
    return _critical_value(estimator, prefix, X, y, sample_weight)


# ---------------------------------------------------------------- the path walk ---
