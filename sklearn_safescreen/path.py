r"""Regularisation paths: critical values, grids, ``*_path`` helpers.

Every Safe estimator implements the *path protocol*
(:class:`~sklearn_safescreen.base.PathEstimatorMixin`): its regularisation parameter and
direction, its critical value (the most regularised value at which the solution is known
in closed form: :math:`C_{\min}` for the SVM, :math:`\lambda_L` for metric learning, the
natural start of a path), optionally an eps-path step, and ``warm_start=True``, with
which ``fit`` reuses the previous solution on the same data as start point **and**
screening reference. This module talks to estimators through that protocol only.

A path walks a clone of the estimator from the most to the least regularised value, with
``warm_start=True``, so that each solution screens the next problem. The answer at every
value is the exact optimum (each fit certifies it on the full problem); only the time
changes.

Grids (:func:`make_grid`):

* ``"geometric"`` (default): ``n_values`` values spaced geometrically from the critical
  value :math:`v_0` to ``stop``, by default :math:`v_0/\varepsilon` (increasing
  parameters) or :math:`\varepsilon v_0` (decreasing ones), as
  :func:`sklearn.linear_model.lasso_path` does with ``eps``;
* explicit values (any order; walked sorted from most to least regularised);
* ``"eps-path"`` (estimators that define it: SafeSVC): the
  :math:`\varepsilon`-approximation path of Ogawa et al. (2013), Algorithm 1, from
  :math:`C_{\min}`: each next value is the largest :math:`C_t` for which the previous
  solution, rescaled by :math:`C/C_{t-1}`, stays :math:`\varepsilon`-optimal in relative
  dual objective over the whole interval :math:`[C_{t-1}, C_t]` (a conservative step
  rule, ``doc/theory/svm_lad.rst``), up to ``stop`` or until the solution no longer
  changes with C.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from ._utils import memory
from .base import fit_context
from .engine.policy import check_mode
from .engine.report import ScreeningReport
from .grid import (
    _EPS_PATH_DEFAULT_SPAN,
    _EPS_PATH_MAX_VALUES,
    GRID_KINDS,
    _check_grid_args,
    _check_values,
    _critical_value,
    _geometric,
    _Grid,
    critical_value,
    resolve_path_param,
    walk_order,
)

__all__ = ["PathResult", "critical_value", "doubly_sparse_path", "estimator_path",
           "lad_path", "make_grid", "metric_learning_path", "resolve_path_param",
           "svm_path", "walk_order"]


# ------------------------------------------------------------------- the grid ---
def make_grid(estimator, X, y, values=None, *, n_values: int = 30, eps: float = 1e-3,
              stop: float | None = None, param_name: str | None = None,
              sample_weight=None) -> np.ndarray:
    r"""The grid of a path, from the most to the least regularised value.

    Parameters
    ----------
    estimator : estimator
        A Safe estimator or a Pipeline containing one.
    X, y : array-like
        Training data (the critical value depends on it).
    values : {"geometric", "eps-path"}, array-like or None, default=None
        ``None``/``"geometric"``: ``n_values`` values spaced geometrically from the
        critical value to ``stop`` (default: critical/eps for increasing parameters such
        as C, critical*eps for decreasing ones such as alpha). ``"eps-path"``: the
        :math:`\varepsilon`-path of Ogawa et al. (2013) (SafeSVC only), which fits the
        path to place its values. Array-like: explicit positive values.
    n_values : int, default=30
        Number of values of the geometric grid (ignored otherwise).
    eps : float, default=1e-3
        Geometric grid: ratio of the ends (as ``lasso_path``). eps-path: the relative
        dual-objective tolerance :math:`\varepsilon` of the eps-path.
    stop : float or None, default=None
        Least regularised value (end of a geometric grid or of the eps-path; default for
        the eps-path: :math:`10^4` times the critical value).
    param_name : str or None
        See :func:`resolve_path_param`.
    sample_weight : array-like or None
        Passed to the critical value (and to the fits of the eps-path).

    Returns
    -------
    ndarray of shape (n_values,)
        In walk order (most to least regularised).
    """
    grid = _grid(estimator, X, y, values, n_values=n_values, eps=eps, stop=stop,
                 param_name=param_name, sample_weight=sample_weight)
    return grid.values[grid.order]


def _grid(estimator, X, y, values, *, n_values, eps, stop, param_name=None,
          sample_weight=None, in_place: bool = False) -> _Grid:
    """The one grid logic behind :func:`make_grid`, :func:`estimator_path` and
    RegularizationPathCV (see :func:`make_grid` for the arguments; ``in_place``: see
    :func:`_critical_value`)."""
    param_name, prefix, safe = resolve_path_param(estimator, param_name)
    increasing = bool(safe._path_increasing)
    if values is not None and not isinstance(values, str):
        arr = _check_values(values)
        return _Grid(arr, walk_order(arr, increasing))
    _check_grid_args(n_values, eps, stop)
    kind = "geometric" if values is None else values
    if kind not in GRID_KINDS:
        raise ValueError(f"values must be array-like, None or one of {GRID_KINDS}; got "
                         f"{values!r}")
    if kind == "eps-path":  # placed by fitting the path
        res = estimator_path(estimator, X, y, "eps-path", eps=eps, stop=stop,
                             param_name=param_name, sample_weight=sample_weight,
                             attributes=[])
        return _Grid(res.values, np.arange(res.values.size), res.critical_value)
    start = _critical_value(estimator, prefix, X, y, sample_weight, in_place=in_place)
    arr = _geometric(start, n_values, eps, stop, increasing)
    return _Grid(arr, np.arange(arr.size), start)


@dataclass
class PathResult:
    """Solutions and screening reports along a regularisation path.

    All per-value fields are in walk order (most to least regularised).

    Attributes
    ----------
    param_name : str
        The parameter walked (e.g. ``"C"`` or ``"safesvc__C"``).
    values : ndarray of shape (n_values,)
    reports : list of ScreeningReport
        The Safe estimator's ``screening_report_`` after each fit.
    times : ndarray of shape (n_values,)
        Wall time of each fit (seconds).
    n_iter : ndarray of shape (n_values,)
        Solver iterations of each fit (``n_iter_`` summed over subproblems).
    dual_gaps : ndarray of shape (n_values,)
        Largest duality gap (``dual_gap_``) of each fit; NaN when not reported.
    screening_rates : ndarray of shape (n_values,)
        Fraction of the variables screened at each value.
    solutions : list of dict
        Per value, the fitted attributes of the Safe estimator that end in ``_`` and are
        arrays (``coef_``, ``dual_coef_``, ``components_``...), copied.
    critical_value : float or None
        The critical value when the grid was built from it.
    estimator : estimator
        The walked clone, fitted at the last value.
    """

    param_name: str
    values: np.ndarray
    reports: list = field(default_factory=list)
    times: np.ndarray = field(default_factory=lambda: np.empty(0))
    n_iter: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    dual_gaps: np.ndarray = field(default_factory=lambda: np.empty(0))
    screening_rates: np.ndarray = field(default_factory=lambda: np.empty(0))
    solutions: list = field(default_factory=list)
    critical_value: float | None = None
    estimator: object = None

    def __len__(self) -> int:
        return len(self.values)

    @property
    def coefs(self) -> list:
        """``coef_`` at each value (None where the estimator has none)."""
        return [s.get("coef_") for s in self.solutions]

    @property
    def dual_coefs(self) -> list:
        """``dual_coef_`` at each value (None where the estimator has none)."""
        return [s.get("dual_coef_") for s in self.solutions]

    @property
    def total_time(self) -> float:
        return float(np.sum(self.times))


def _step_of(estimator, prefix: str):
    return estimator if not prefix else estimator.get_params(deep=True)[prefix[:-2]]


def _snapshot(safe, attributes) -> dict:
    """Copies of the fitted array attributes (``attributes=None``: every public
    attribute ending in ``_`` that is a dense or sparse array)."""
    # (a fitted attribute may be computed when read, e.g. a diagonal metric's matrix)
    names = attributes if attributes is not None else sorted(
        name for name in dir(safe) if name.endswith("_") and not name.startswith("_"))
    out = {}
    for key in names:
        try:
            value = getattr(safe, key)
        except AttributeError:  # (not defined for this model, e.g. coef_ of a kernel)
            continue
        if isinstance(value, np.ndarray) or sp.issparse(value):
            out[key] = value.copy()
    return out


def _nbytes(solution: dict) -> int:
    total = 0
    for value in solution.values():
        if sp.issparse(value):
            total += sum(getattr(value, a).nbytes for a in ("data", "indices", "indptr")
                         if hasattr(value, a))
        else:
            total += value.nbytes
    return total


def _check_memory(first: dict, n_values: int, budget: int) -> None:
    need = _nbytes(first) * n_values
    if need > budget:
        sizes = ", ".join(f"{k} {v.shape}" for k, v in first.items())
        raise MemoryError(
            f"storing the solutions at {n_values} values would take about "
            f"{need / 2**20:.0f} MiB ({sizes} per value), more than the "
            f"{budget / 2**20:.0f} MiB budget (half the available memory); pass "
            "attributes=[...] with the attributes you need (e.g. ['coef_']) or []")


def _fit_stats(safe) -> tuple[ScreeningReport, int, float]:
    report = getattr(safe, "screening_report_", None)
    n_iter = int(np.sum(getattr(safe, "n_iter_", 0)))
    gap = getattr(safe, "dual_gap_", None)
    gap = float(np.max(gap)) if gap is not None and np.size(gap) else np.nan
    return report, n_iter, gap


def _fit_params(prefix: str, sample_weight) -> dict:
    return {} if sample_weight is None else {prefix + "sample_weight": sample_weight}


def estimator_path(estimator, X, y, values=None, *, n_values: int = 30, eps: float = 1e-3,
                   stop: float | None = None, param_name: str | None = None,
                   sample_weight=None, attributes=None, verbose: int = 0,
                   screening_mode: str | None = None) -> PathResult:
    r"""Fit ``estimator`` along a regularisation path with warm starts.

    A clone of ``estimator`` (with ``warm_start=True`` on its Safe estimator) is fitted
    at every value from the most to the least regularised, so that each solution is the
    starting point and the screening reference of the next problem. Each
    solution is the exact optimum at its value (certified by the estimator).

    Parameters
    ----------
    estimator : estimator
        A Safe estimator (SafeSVC, SafeLAD, SafeMetricLearner, ...) or a Pipeline
        containing one; it is not modified.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Read by every fit of the walk, and not to be modified until it returns: a fit
        given the very arrays the previous fit validated does not check their content
        again.
    y : array-like of shape (n_samples,) or None
    values : {"geometric", "eps-path"}, array-like or None, default=None
        The grid, see :func:`make_grid`.
    n_values, eps, stop : see :func:`make_grid`
    param_name : str or None, default=None
        The regularisation parameter (e.g. ``"safesvc__C"``); inferred when unambiguous.
    sample_weight : array-like of shape (n_samples,) or None
        Passed to the Safe estimator's ``fit`` (routed through the Pipeline).
    attributes : list of str or None, default=None
        The fitted attributes stored per value in ``solutions`` (None: every array
        attribute ending in ``_``, e.g. also ``support_vectors_``). Storing them costs
        memory proportional to the number of values: the walk refuses, with the figure,
        when the estimate exceeds half the available memory.
    verbose : int, default=0
        Print one line per value (value, screening rate, gap, iterations, time).
    screening_mode : {"auto", "always", "never"} or None, default=None
        Which steps screen: ``"auto"`` as the paths' deterministic policy decides,
        ``"always"`` every step, ``"never"`` none (the answers are the same, certified
        either way; only the time differs). ``None``: the mode of the environment
        variable ``SKLEARN_SAFESCREEN_SCREENING``, else ``"auto"``.

    Returns
    -------
    PathResult

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen.path import estimator_path
    >>> from sklearn_safescreen.svm import SafeSVC
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> res = estimator_path(SafeSVC(kernel="linear"), X, y, n_values=5)
    >>> len(res.values), bool(res.values[0] < res.values[-1])
    (5, True)
    """
    param_name, prefix, safe = resolve_path_param(estimator, param_name)
    eps_path = isinstance(values, str) and values == "eps-path"
    # the walked clone; its critical value is computed on it, so that its first fit
    # starts from the problem built for the critical value (the warm-start state)
    est = clone(estimator)
    est.set_params(**{prefix + "warm_start": True})
    if eps_path:
        _check_grid_args(n_values, eps, stop)
        if not safe._has_eps_path:
            raise ValueError(f"the eps-path grid is not defined for {type(safe).__name__}; "
                             "use 'geometric' or explicit values")
        critical = _critical_value(est, prefix, X, y, sample_weight, in_place=True)
        stop = critical * _EPS_PATH_DEFAULT_SPAN if stop is None else float(stop)
        if stop < critical:
            raise ValueError(f"stop={stop:g} is below the critical value {critical:g}")
        grid = [critical]
    else:
        g = _grid(est, X, y, values, n_values=n_values, eps=eps, stop=stop,
                  param_name=param_name, sample_weight=sample_weight, in_place=True)
        grid, critical = list(g.values[g.order]), g.critical

    fit_params = _fit_params(prefix, sample_weight)
    if screening_mode is not None:
        check_mode(screening_mode)
    walked, reports, times, iters, gaps, rates, sols = [], [], [], [], [], [], []
    budget = memory.available_memory() // 2
    i = 0
    while i < len(grid):
        value = float(grid[i])
        est.set_params(**{param_name: value})
        t0 = time.perf_counter()
        # (the walk's inputs are the same unchanged arrays at every fit: no digest of
        # their content each time)
        with fit_context(_step_of(est, prefix), screening=screening_mode,
                         inputs_unchanged=True):
            est.fit(X, y, **fit_params)
        elapsed = time.perf_counter() - t0
        step = _step_of(est, prefix)
        report, n_iter, gap = _fit_stats(step)
        walked.append(value)
        reports.append(report)
        times.append(elapsed)
        iters.append(n_iter)
        gaps.append(gap)
        rates.append(report.screening_rate if report is not None else np.nan)
        sols.append(_snapshot(step, attributes))
        if i == 0 and not eps_path:
            # refuse early rather than run out of memory at the end of a long path
            _check_memory(sols[0], len(grid), budget)
        elif eps_path:  # its length is not known in advance
            _check_memory(sols[-1], len(sols), budget)
        if verbose:
            # a closed-form fit decided every variable by formula: none was screened
            done = (f"{'closed-form':<16}" if getattr(report, "closed_form", False)
                    else f"screened={rates[-1]:7.1%}")
            print(f"[path] {param_name}={value:<11.5g} {done} "
                  f"abs_gap={gap:9.2e} iter={n_iter:<6d} time={elapsed:.3f}s")
        if eps_path and i == len(grid) - 1 and len(grid) < _EPS_PATH_MAX_VALUES:
            nxt = step._eps_path_next(eps, stop)
            if nxt is not None:
                grid.append(_snap_to_stop(nxt, stop))
        i += 1
    return PathResult(param_name=param_name, values=np.asarray(walked), reports=reports,
                      times=np.asarray(times), n_iter=np.asarray(iters, dtype=np.int64),
                      dual_gaps=np.asarray(gaps), screening_rates=np.asarray(rates),
                      solutions=sols, critical_value=critical, estimator=est)


#: Relative distance under which an eps-path value is the stop value up to rounding.
_STOP_RTOL = 64 * np.finfo(np.float64).eps


def _snap_to_stop(value: float, stop: float) -> float:
    """``stop`` itself when ``value`` is ``stop`` up to rounding: a step computed as
    ``C * (stop / C)`` may land an ulp short of ``stop``, and the path would then end
    with a value indistinguishable from ``stop`` followed by ``stop``."""
    return float(stop) if abs(value - stop) <= _STOP_RTOL * stop else float(value)


def _path_kwargs(params: dict) -> dict:
    keys = ("n_values", "eps", "stop", "sample_weight", "attributes", "verbose")
    return {k: params.pop(k) for k in keys if k in params}


def svm_path(X, y, Cs=None, **params) -> PathResult:
    """SafeSVC solutions along a path of ``C`` (in the style of ``lasso_path``).

    Parameters
    ----------
    X, y : training data
    Cs : {"geometric", "eps-path"}, array-like or None, default=None
        The grid (see :func:`make_grid`); by default 30 values from :math:`C_{\\min}` to
        :math:`1000\\,C_{\\min}`.
    **params
        ``n_values``, ``eps``, ``stop``, ``sample_weight``, ``attributes``, ``verbose``
        (see :func:`estimator_path`); everything else is a SafeSVC parameter
        (e.g. ``kernel="linear"``, ``tol=1e-6``).

    Returns
    -------
    PathResult
    """
    from .svm import SafeSVC

    kw = _path_kwargs(params)
    return estimator_path(SafeSVC(**params), X, y, Cs, **kw)


def lad_path(X, y, Cs=None, **params) -> PathResult:
    """SafeLAD solutions along a path of ``C`` (see :func:`~sklearn_safescreen.path.svm_path`)."""
    from .lad import SafeLAD

    kw = _path_kwargs(params)
    return estimator_path(SafeLAD(**params), X, y, Cs, **kw)


def metric_learning_path(X, y, alphas=None, **params) -> PathResult:
    """SafeMetricLearner solutions along a path of ``alpha``, from the critical value
    down (see :func:`~sklearn_safescreen.path.svm_path`)."""
    from .metric_learning import SafeMetricLearner

    kw = _path_kwargs(params)
    return estimator_path(SafeMetricLearner(**params), X, y, alphas, **kw)


def doubly_sparse_path(X, y, alphas=None, *, estimator=None, **params) -> PathResult:
    """Doubly sparse solutions along a path of ``alpha``, from ``alpha_max_`` down (see
    :func:`~sklearn_safescreen.path.svm_path`).

    Parameters
    ----------
    X, y : training data (``X`` dense or sparse, never densified)
    alphas : {"geometric"}, array-like or None, default=None
        The grid (see :func:`make_grid`); by default 30 values from ``alpha_max_`` down
        to ``1e-3 * alpha_max_``.
    estimator : estimator or None, default=None
        The model to walk, e.g. ``SafeDoublySparseSVR(epsilon=0.5)`` or a Pipeline
        ending in one; its parameters other than ``alpha`` define the problem. Default:
        ``SafeDoublySparseSVC(**params)``.
    **params
        ``n_values``, ``eps``, ``stop``, ``sample_weight``, ``attributes``, ``verbose``
        (see :func:`estimator_path`); everything else is a SafeDoublySparseSVC
        parameter (only without ``estimator``).

    Returns
    -------
    PathResult
        ``coefs[k]`` is ``coef_`` at ``values[k]``; ``reports[k].counts`` the features
        and samples screened there.
    """
    from .doubly_sparse import SafeDoublySparseSVC

    kw = _path_kwargs(params)
    if estimator is None:
        estimator = SafeDoublySparseSVC(**params)
    elif params:
        raise TypeError(f"unexpected arguments {sorted(params)}: with estimator=..., set "
                        "the model's parameters on the estimator")
    return estimator_path(estimator, X, y, alphas, **kw)

