"""The fits of :class:`~sklearn_safescreen.model_selection.RegularizationPathCV`: the
walked parameter, the folds, the (combination, fold) walks run through
:class:`joblib.Parallel`, their outcomes in the order GridSearchCV's ``_format_results``
reads them, and the refit on the whole training set.

Each fit is scored by scikit-learn's ``_fit_and_score``, exactly as GridSearchCV scores
a candidate; only the order of the fits (a warm-started walk per combination and fold)
differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.model_selection import check_cv
from sklearn.model_selection._validation import (
    _fit_and_score,
    _insert_error_scores,
    _warn_or_raise_about_fit_failures,
)
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _num_samples

from ._search_grid import SearchSpace, _nearest
from ._search_report import print_header, print_walk, walk_label
from ._utils.openmp import effective_n_threads, fit_threads
from .base import fit_context, single_blas_thread
from .grid import resolve_path_param
from .path import _step_of
from .problems.shared_kernel import SharedKernelRows, serving


def walked_param(estimator, param_name: str | None) -> tuple[str, str]:
    """The full name of the parameter walked and its Safe step's Pipeline prefix
    (:func:`~sklearn_safescreen.grid.resolve_path_param`); a TypeError when that step
    cannot be warm-started, which a walk needs."""
    name, prefix, safe = resolve_path_param(estimator, param_name)
    if "warm_start" not in safe.get_params():
        raise TypeError(f"{type(safe).__name__} has no warm_start parameter, which the "
                        "path protocol needs")
    return name, prefix


def fold_splits(cv, X, y, estimator, split_params: dict) -> list[tuple]:
    """The ``(train, test)`` folds of ``cv``, as GridSearchCV splits (stratified for a
    classifier), checked against the splitter's own count."""
    cv = check_cv(cv, y, classifier=is_classifier(estimator))
    n_splits = cv.get_n_splits(X, y, **split_params)
    splits = list(cv.split(X, y, **split_params))
    if len(splits) != n_splits:
        raise ValueError("cv.split and cv.get_n_splits return inconsistent results. "
                         f"Expected {n_splits} splits, got {len(splits)}")
    return splits


def _walk_fold(estimator, X, y, train, test, param_name: str, prefix: str,
               values: list, split_idx: int, n_splits: int, fit_and_score_kwargs,
               seeds: list | None = None, kernel_rows: SharedKernelRows | None = None):
    """Walk one fold's path: a single clone, ``warm_start=True``, refitted at every value
    in walk order, each fit scored exactly as GridSearchCV scores it (sklearn's
    ``_fit_and_score``, which sets the parameter and fits without cloning, so the
    previous solution stays the reference).

    ``seeds``: per value, the solution of the same fold under the previous kernel
    parameters (one dual point per task, or None), offered to the fit as its reference
    (:func:`~sklearn_safescreen.base.fit_context`). Returns the fits' outcomes, their
    screening reports and, when ``seeds`` is given, their own dual points (the next
    kernel parameters' seeds). ``kernel_rows``: the search's store of kernel rows,
    which the fold's kernel reads where it applies."""
    est = clone(estimator)
    est.set_params(**{prefix + "warm_start": True})
    outs, reports, points = [], [], []
    with serving(kernel_rows, train, test):
        for k, value in enumerate(values):
            step = _step_of(est, prefix)
            offer = None if seeds is None else seeds[k]
            # the clone is discarded after the walk: what serves its next fit may be
            # kept however large (``walk``)
            with fit_context(step, references=offer, walk=True):
                out = _fit_and_score(est, X, y, train=train, test=test,
                                     parameters={param_name: value},
                                     split_progress=(split_idx, n_splits),
                                     candidate_progress=(k, len(values)),
                                     **fit_and_score_kwargs)
            report = None
            if out.get("fit_error") is None:
                report = getattr(step, "screening_report_", None)
            outs.append(out)
            reports.append(report)
            if seeds is not None:
                points.append(None if out.get("fit_error") is not None
                              else _dual_points(step))
    return outs, reports, points


def _dual_points(step) -> list | None:
    """The fitted Safe step's solution as seeds for other kernel parameters: per task,
    ``(C, alpha)`` of its path's reference; None when its paths take no offer."""
    state = step.__dict__.get("_path")
    paths = [] if state is None else state.paths
    if not paths or not all(hasattr(p, "offer_reference") and p.reference is not None
                            for p in paths):
        return None
    return [(p.reference.C, p.reference.alpha) for p in paths]


def _walk_combination(estimator, combination: dict, values: list, X, y, train, test,
                      param_name: str, prefix: str, split_idx: int, n_splits: int,
                      fit_and_score_kwargs, label: str | None, seeds: list | None,
                      kernel_rows: SharedKernelRows | None = None):
    """One fold's walk of one combination: the estimator cloned with the combination's
    parameters (as GridSearchCV sets a candidate's, so that an estimator-valued
    parameter is a fresh object), then its values walked (:func:`_walk_fold`), each fit
    offered its entry of ``seeds`` (None: nothing offered). ``label``: printed with the
    walk's outcome (verbose). Returns ``(outcomes, reports, points)``."""
    est = clone(estimator).set_params(**clone(combination, safe=False)) \
        if combination else estimator
    t0 = time.time()
    outs, reports, points = _walk_fold(est, X, y, train, test, param_name, prefix,
                                       values, split_idx, n_splits, fit_and_score_kwargs,
                                       seeds, kernel_rows)
    if label is not None:
        print_walk(label, outs, reports, time.time() - t0)
    return outs, reports, points


def _seeds(values: list, previous: tuple | None, seeded: bool) -> list | None:
    """The offers of a walk of ``values``: none unless its chain is ``seeded``; then,
    per value, the previous combination's solution of the same fold at its nearest
    value (``previous``: that walk's values and points), or nothing for the chain's
    first combination."""
    if not seeded:
        return None
    if previous is None:
        return [None] * len(values)
    prev_values, points = previous
    return [points[j] for j in _nearest(values, prev_values)]


@dataclass(frozen=True)
class WalkOutcomes:
    """The outcomes of every (combination, fold) walk of a search.

    Attributes
    ----------
    space : SearchSpace
        What was walked.
    per_walk : list of list
        ``per_walk[c][s]``: combination ``c``'s walk on fold ``s``, ``(outcomes, reports)``
        per value in walk order (``_fit_and_score``'s outcomes; the fits' screening
        reports, None for a failed fit).
    """

    space: SearchSpace
    per_walk: list[list[tuple[list[dict], list]]]

    @property
    def n_splits(self) -> int:
        """The number of folds."""
        return len(self.per_walk[0])

    def fits(self, error_score, callable_scoring: bool) -> list[dict]:
        """The fits' outcomes in GridSearchCV's order (candidate-major, then split),
        the input of its ``_format_results``, with failed fits handled as it handles
        them: a warning (or the error when ``error_score="raise"``), and with a
        callable scoring, ``error_score`` in the failed fits' scores."""
        out = [self.per_walk[c][s][0][k] for c, k in self.space.positions()
               for s in range(self.n_splits)]
        _warn_or_raise_about_fit_failures(out, error_score)
        if callable_scoring:
            _insert_error_scores(out, error_score)
        return out

    def reports(self) -> list:
        """Per combination ``c``, ``reports[c][s][k]``: fold ``s``'s report at the
        ``k``-th value walked."""
        return [[fold[1] for fold in combination] for combination in self.per_walk]

    def screening_rates(self) -> list[np.ndarray]:
        """Per combination, the screening rates of shape ``(n_splits, n_values)``
        (NaN for a failed fit)."""
        return [np.array([[np.nan if r is None else r.screening_rate for r in fold]
                          for fold in rep], dtype=float).reshape(self.n_splits, -1)
                for rep in self.reports()]

    def fit_times(self) -> list[np.ndarray]:
        """Per combination, the fit times of shape ``(n_splits, n_values)``."""
        return [np.array([[o["fit_time"] for o in fold[0]] for fold in combination],
                         dtype=float).reshape(self.n_splits, -1)
                for combination in self.per_walk]

    def screening_results(self) -> dict:
        """The ``cv_results_`` keys of the screening rates: ``split<s>_screening_rate``
        and ``mean_screening_rate``, per candidate."""
        rates, n_cand = self.screening_rates(), len(self.space.candidates)
        split_rates = np.array([rates[c][:, k] for c, k in self.space.positions()]
                               ).reshape(n_cand, self.n_splits)
        results = {f"split{s}_screening_rate": split_rates[:, s]
                   for s in range(self.n_splits)}
        results["mean_screening_rate"] = split_rates.mean(axis=1)
        return results

    def path_attributes(self, single: bool) -> dict:
        """The search's fitted path attributes (``path_values_``, ``path_candidates_``,
        ``critical_value_``, ``path_reports_``, ``screening_rates_``,
        ``path_fit_times_``): per combination, or the one combination's when
        ``single`` (no ``param_grid``)."""
        space, reports = self.space, self.reports()
        rates, times = self.screening_rates(), self.fit_times()
        if single:
            return dict(path_values_=np.array([float(v) for v in space.walks[0]]),
                        path_candidates_=np.array(space.walk_candidates[0], dtype=np.intp),
                        critical_value_=space.criticals[0], path_reports_=reports[0],
                        screening_rates_=rates[0], path_fit_times_=times[0])
        criticals = space.criticals
        return dict(path_values_=[np.array([float(v) for v in w]) for w in space.walks],
                    path_candidates_=[np.array(w, dtype=np.intp)
                                      for w in space.walk_candidates],
                    critical_value_=None if criticals[0] is None else np.array(criticals),
                    path_reports_=reports, screening_rates_=rates, path_fit_times_=times)


def run_walks(estimator, space: SearchSpace, X, y, splits: list[tuple], *,
              param_name: str, prefix: str, scoring: dict, n_jobs: int | None,
              verbose: int, kernel_rows: SharedKernelRows) -> WalkOutcomes:
    """Walk every combination of ``space`` on every fold, in parallel.

    The chains are walked a combination at a time: their ``k``-th combinations on every
    fold, one job per (chain, fold) (:func:`_walk_combination`, through
    :class:`joblib.Parallel`), then the ``(k+1)``-th, each fit offered the solution of
    the same fold under the chain's previous combination at the nearest value. So the
    walks that read one kernel (the folds of one combination) run together, while the
    store holds its rows: walked fold by fold through every combination, the store
    would drop each kernel's rows for the next combination's before the next fold came
    back to them.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (cloned here).
    space : SearchSpace
        The combinations, their values and chains.
    X, y : array-like
        The whole training set.
    splits : list of (train, test)
        The folds.
    param_name, prefix : str
        The parameter walked and its Safe step's Pipeline prefix.
    scoring : dict
        ``_fit_and_score``'s scoring arguments (``scorer``, ``fit_params``,
        ``score_params``, ``return_train_score``, ``error_score``, ``caller``).
    n_jobs : int or None
        Walks run at once.
    verbose : int
        ``>0``: the search's size, then a line per finished walk; ``>1``: also
        sklearn's per-fit lines.
    kernel_rows : SharedKernelRows
        The search's store of kernel rows, read by every fold.

    Returns
    -------
    outcomes : WalkOutcomes
    """
    n_splits = len(splits)
    if verbose > 0:
        print_header(space, n_splits, param_name)
    kwargs = dict(scoring, return_n_test_samples=True, return_times=True,
                  return_parameters=False, verbose=verbose)
    base = clone(estimator)
    chains = space.chains

    def label(c: int, s: int) -> str | None:
        return None if verbose <= 0 else walk_label(space, c, s, n_splits, param_name)

    per_walk = [[None] * n_splits for _ in space.combinations]  # [combination][fold]
    previous: dict[tuple[int, int], tuple] = {}  # (chain, fold) -> (values, points)
    # threads by default: the solvers release the GIL, and a search needs no worker
    # processes to start and import the package; a joblib backend context (loky,
    # dask) takes precedence. BLAS is limited to one thread here, in the calling
    # thread: OpenBLAS ignores a limit set from a worker thread, so the fits' own
    # limit would not hold for walks on threads. Likewise the compiled loops' OpenMP
    # threads are shared out between the walks that run at once (else each would
    # take every core).
    at_once = max(1, min(effective_n_jobs(n_jobs), len(chains) * n_splits))
    with single_blas_thread(), fit_threads(max(1, effective_n_threads() // at_once)):
        for step in range(max(len(chain) for chain in chains)):
            tasks = [(k, chain[step], s) for k, chain in enumerate(chains)
                     if step < len(chain) for s in range(n_splits)]
            jobs = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(_walk_combination)(
                    base, space.combinations[c], space.walks[c], X, y, *splits[s],
                    param_name, prefix, s, n_splits, kwargs, label(c, s),
                    _seeds(space.walks[c], previous.get((k, s)), len(chains[k]) > 1),
                    kernel_rows)
                for k, c, s in tasks)
            for (k, c, s), (outs, reports, points) in zip(tasks, jobs, strict=True):
                per_walk[c][s] = (outs, reports)
                previous[k, s] = (space.walks[c], points)
    return WalkOutcomes(space, per_walk)


def refit_best(estimator, params: dict, X, y, fit_params: dict,
               kernel_rows: SharedKernelRows) -> tuple[object, float]:
    """``estimator`` cloned with the best candidate's ``params`` (cloned, as
    GridSearchCV refits) and fitted on the whole training set, reading the search's
    kernel rows; returns it and the time its fit took."""
    best = clone(estimator).set_params(**clone(params, safe=False))
    t0 = time.time()
    with serving(kernel_rows, np.arange(_num_samples(X))):
        if y is not None:
            best.fit(X, y, **fit_params)
        else:
            best.fit(X, **fit_params)
    return best, time.time() - t0
