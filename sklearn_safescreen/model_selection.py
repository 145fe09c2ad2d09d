"""RegularizationPathCV: GridSearchCV over a regularisation parameter, walked as a path.

Per fold, the grid is walked from the most to the least regularised value with
``warm_start=True``, so each solution screens the next problem.
The grids, critical values and the path protocol live in :mod:`sklearn_safescreen.path`.
"""

from __future__ import annotations

import numbers
import time

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import _fit_context, clone, is_classifier
from sklearn.metrics._scorer import _MultimetricScorer
from sklearn.model_selection import check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._validation import (
    _fit_and_score,
    _insert_error_scores,
    _warn_or_raise_about_fit_failures,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _check_method_params, _num_samples, indexable

from ._utils.openmp import effective_n_threads, fit_threads
from .base import single_blas_thread
from .grid import GRID_KINDS, resolve_path_param
from .path import _grid, _step_of
from .problems.shared_kernel import SharedKernelRows, serving


# ------------------------------------------------------- RegularizationPathCV ---
def _walk_fold(estimator, X, y, train, test, param_name: str, prefix: str,
               values: list, split_idx: int, n_splits: int, fit_and_score_kwargs,
               kernel_rows: SharedKernelRows | None = None):
    """Walk one fold's path: a single clone, ``warm_start=True``, refitted at every value
    in walk order, each fit scored exactly as GridSearchCV scores it (sklearn's
    ``_fit_and_score``, which sets the parameter and fits without cloning, so the
    previous solution stays the reference). ``kernel_rows``: the search's store of
    kernel rows, which the fold's kernel reads where it applies."""
    est = clone(estimator)
    est.set_params(**{prefix + "warm_start": True})
    outs, reports = [], []
    with serving(kernel_rows, train):
        for k, value in enumerate(values):
            out = _fit_and_score(est, X, y, train=train, test=test,
                                 parameters={param_name: value},
                                 split_progress=(split_idx, n_splits),
                                 candidate_progress=(k, len(values)),
                                 **fit_and_score_kwargs)
            report = None
            if out.get("fit_error") is None:
                report = getattr(_step_of(est, prefix), "screening_report_", None)
            outs.append(out)
            reports.append(report)
    return outs, reports


class RegularizationPathCV(BaseSearchCV):
    r"""Cross-validated regularisation path with safe screening.

    The same search as ``GridSearchCV(estimator, {param_name: values}, cv=cv, ...)``,
    with the same answer (each fit is the certified optimum at its value), but per fold
    the grid is walked from the most to the least regularised value with
    ``warm_start=True``: each solution is the start point and the safe-screening
    reference of the next problem, instead of a refit
    from scratch. Folds run through :class:`joblib.Parallel`, so any joblib backend
    (loky on one machine, ``joblib.parallel_backend("dask")`` on a cluster) distributes
    them.

    Parameters
    ----------
    estimator : estimator
        A Safe estimator (SafeSVC, SafeLAD, SafeMetricLearner, ...) or a Pipeline
        containing one (e.g. ``make_pipeline(StandardScaler(), SafeSVC())``, or
        ``Pipeline([("metric", SafeMetricLearner()), ("knn", KNeighborsClassifier())])``).
    param_name : str or None, default=None
        The regularisation parameter walked, e.g. ``"C"``, ``"safesvc__C"``,
        ``"metric__alpha"``; inferred when the estimator contains exactly one Safe
        estimator.
    values : {"geometric", "eps-path"}, array-like or None, default=None
        The grid (see :func:`~sklearn_safescreen.path.make_grid`).
        ``None``/``"geometric"``: ``n_values`` values spaced geometrically from the
        critical value of the whole training set (e.g. :math:`C_{\min}`) to ``stop``
        (default critical/``eps`` for C-like parameters, critical*``eps`` for alpha-like
        ones). ``"eps-path"``: SafeSVC's :math:`\varepsilon`-path (Ogawa et al. 2013)
        computed once on the whole training set.
        Array-like: explicit positive values; ``cv_results_`` lists them in the given
        order (as GridSearchCV would), the walk sorts them.
    n_values : int, default=30
        Number of values of the geometric grid.
    eps : float, default=1e-3
        Ratio of the ends of the geometric grid, or the tolerance of the eps-path.
    stop : float or None, default=None
        Least regularised value of a generated grid.
    cv : int, cross-validation generator or iterable, default=5
        As in GridSearchCV (stratified K-fold for classifiers).
    scoring : str, callable, list, tuple, dict or None, default=None
        As in GridSearchCV (multi-metric included).
    n_jobs : int or None, default=None
        Folds walked in parallel through joblib, on threads by default (the solvers
        release the GIL, and no worker process has to start); a
        ``joblib.parallel_config(backend=...)`` context chooses processes (``"loky"``) or
        a cluster (``"dask"``) instead.
    refit : bool, str or callable, default=True
        Refit the best value on the whole data (as in GridSearchCV).
    verbose : int, default=0
        ``>0``: joblib's progress line per finished fold (stderr), then one line per
        value (value, mean screening rate, mean fit time, CV score and its standard
        deviation); ``>1``: also sklearn's per-fit lines.
    error_score : "raise" or float, default=np.nan
        Score of a failed fit (as in GridSearchCV).
    return_train_score : bool, default=False
        Also score on the training folds.
    kernel_memory : float, default=1024
        Bound, in MB, on the memory of the kernel rows the folds share (the kernel
        estimators with an ``"rbf"`` or ``"poly"`` kernel and an explicit or ``"auto"``
        ``gamma``): a fold's kernel is a sub-matrix of the whole training set's, so each
        row of the whole set is computed once and read by every fold that contains its
        sample, by the fit on the whole set that generates the grid and by the refit
        (:mod:`~sklearn_safescreen.problems.shared_kernel`), with the same values and
        models as without sharing. The rows never take more than this bound;
        beyond it the folds compute the rows the store has no room for themselves, as
        they would without it. 0 disables sharing. Folds on threads (the default) share
        one store; on processes (``loky``, ``dask``) each fold computes its own kernel.

    Attributes
    ----------
    cv_results_ : dict of ndarrays
        GridSearchCV's keys (``mean_test_score``, ``rank_test_score``,
        ``split0_test_score``, ``params``, ``param_<name>``, ``mean_fit_time``...), plus
        ``mean_screening_rate`` and ``split<k>_screening_rate``.
    best_estimator_ : estimator
        Refitted at the best value on the whole data (if ``refit``).
    best_score_ : float
    best_params_ : dict
    best_index_ : int
    scorer_ : scorer or dict
    n_splits_ : int
    refit_time_ : float
    multimetric_ : bool
    param_name_ : str
        The parameter walked.
    path_values_ : ndarray of shape (n_values,)
        The grid in walk order (most to least regularised).
    critical_value_ : float or None
        The critical value of the whole training set when the grid was generated.
    path_reports_ : list of list of ScreeningReport
        ``path_reports_[fold][k]``: the screening report of the fit at
        ``path_values_[k]`` on that fold (None when the fit failed).
    screening_rates_ : ndarray of shape (n_splits, n_values)
        Screening rate per fold along the walk.
    path_fit_times_ : ndarray of shape (n_splits, n_values)
        Fit time per fold along the walk.

    See Also
    --------
    sklearn.model_selection.GridSearchCV : the same search, refitting from scratch.
    sklearn_safescreen.path.estimator_path : one path on one data set.

    Notes
    -----
    ``cv_results_`` is built by GridSearchCV's own code (``_format_results``), and each
    fold's fits are scored by sklearn's ``_fit_and_score``, so ranks, ties, failed fits
    and multi-metric scoring behave exactly as in GridSearchCV. This relies on
    scikit-learn's private ``BaseSearchCV`` internals (tested with 1.9).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import RegularizationPathCV
    >>> from sklearn_safescreen.svm import SafeSVC
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> search = RegularizationPathCV(SafeSVC(kernel="linear"), n_values=5, cv=3)
    >>> search.fit(X, y).best_params_["C"] > 0
    True
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in BaseSearchCV._parameter_constraints.items()
           if k != "pre_dispatch"},
        "param_name": [str, None],
        "values": ["array-like", StrOptions(set(GRID_KINDS)), None],
        "n_values": [Interval(numbers.Integral, 1, None, closed="left")],
        "eps": [Interval(numbers.Real, 0, 1, closed="neither")],
        "stop": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "kernel_memory": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, estimator, param_name=None, values=None, *, n_values=30, eps=1e-3,
                 stop=None, cv=5, scoring=None, n_jobs=None, refit=True, verbose=0,
                 error_score=np.nan, return_train_score=False, kernel_memory=1024):
        self.estimator = estimator
        self.param_name = param_name
        self.values = values
        self.n_values = n_values
        self.eps = eps
        self.stop = stop
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.verbose = verbose
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.kernel_memory = kernel_memory

    def _run_search(self, evaluate_candidates):  # pragma: no cover - fit is overridden
        raise NotImplementedError("RegularizationPathCV walks paths in fit")

    def _grid(self, X, y, fit_params: dict):
        """(candidate values in cv_results_ order, their walk order): the user's values
        as given (so that ``best_params_`` holds the user's own value, as in
        GridSearchCV), or a generated grid in walk order."""
        grid = _grid(self.estimator, X, y, self.values, n_values=self.n_values,
                     eps=self.eps, stop=self.stop, param_name=self.param_name_,
                     sample_weight=fit_params.get(self._prefix + "sample_weight"))
        self.critical_value_ = grid.critical
        if self.values is not None and not isinstance(self.values, str):
            # the user's own objects, as GridSearchCV's ParameterGrid yields them (an
            # array's elements are NumPy scalars there, not Python numbers)
            values = self.values
            return list(np.atleast_1d(values) if isinstance(values, np.ndarray)
                        else values), grid.order
        return [float(v) for v in grid.values], grid.order

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **params) -> RegularizationPathCV:
        """Walk the path on every fold, select the best value, refit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None
        **params : dict
            Fit parameters of the estimator (e.g. ``sample_weight``, or
            ``safesvc__sample_weight`` for a Pipeline), and ``groups`` for the splitter,
            as in GridSearchCV.

        Returns
        -------
        self : RegularizationPathCV
        """
        self.param_name_, prefix, safe = resolve_path_param(self.estimator,
                                                            self.param_name)
        if "warm_start" not in safe.get_params():
            raise TypeError(f"{type(safe).__name__} has no warm_start parameter, which the "
                            "path protocol needs")
        self._prefix = prefix
        scorers, refit_metric = self._get_scorers()
        X, y = indexable(X, y)
        params = _check_method_params(X, params=params)
        routed = self._get_routed_params_for_fit(params)
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        self.n_splits_ = cv.get_n_splits(X, y, **routed.splitter.split)
        splits = list(cv.split(X, y, **routed.splitter.split))
        if len(splits) != self.n_splits_:
            raise ValueError("cv.split and cv.get_n_splits return inconsistent results. "
                             f"Expected {self.n_splits_} splits, got {len(splits)}")
        # one store of kernel rows for the grid's fit on the whole set, every fold and
        # the refit (kept for this fit only)
        kernel_rows = SharedKernelRows(X, self.kernel_memory)
        every = np.arange(_num_samples(X))
        with serving(kernel_rows, every):
            candidates, order = self._grid(X, y, routed.estimator.fit)
        walk = [candidates[i] for i in order]
        self.path_values_ = np.array([float(v) for v in walk])
        n_cand = len(candidates)
        if self.verbose > 0:
            print(f"Walking {self.n_splits_} folds along {n_cand} values of "
                  f"{self.param_name_} ({walk[0]:.4g} -> {walk[-1]:.4g}), totalling "
                  f"{n_cand * self.n_splits_} warm-started fits")

        kwargs = dict(scorer=scorers, fit_params=routed.estimator.fit,
                      score_params=routed.scorer.score,
                      return_train_score=self.return_train_score,
                      return_n_test_samples=True, return_times=True,
                      return_parameters=False, error_score=self.error_score,
                      verbose=self.verbose, caller=self)
        base = clone(self.estimator)
        # verbose: joblib reports each finished fold (progress of long runs)
        # threads by default: the solvers release the GIL, and a search needs no worker
        # processes to start and import the package (measured, 20000 x 50, 5 folds, 30
        # values, n_jobs=2: 2.0-2.3 s on threads, 3.2 s for loky's first search, 1.7-2.0 s
        # once its workers run; sequential 2.6 s). A joblib backend context (loky, dask)
        # takes precedence. BLAS is limited to one thread here, in the calling thread:
        # OpenBLAS ignores a limit set from a worker thread, so the fits' own limit would
        # not hold for folds on threads. Likewise the compiled loops' OpenMP threads are
        # shared out between the folds that run at once (else each would take every core).
        at_once = max(1, min(effective_n_jobs(self.n_jobs), len(splits)))
        with single_blas_thread(), fit_threads(max(1, effective_n_threads() // at_once)):
            folds = Parallel(n_jobs=self.n_jobs, prefer="threads",
                             verbose=10 if self.verbose > 0 else 0)(
                delayed(_walk_fold)(base, X, y, train, test, self.param_name_, prefix, walk,
                                    s, self.n_splits_, kwargs, kernel_rows)
                for s, (train, test) in enumerate(splits))

        # GridSearchCV's order: candidate-major, then split
        position = np.empty(n_cand, dtype=np.intp)
        position[order] = np.arange(n_cand)
        out = [folds[s][0][position[c]] for c in range(n_cand)
               for s in range(self.n_splits_)]
        _warn_or_raise_about_fit_failures(out, self.error_score)
        if callable(self.scoring):
            _insert_error_scores(out, self.error_score)
        candidate_params = [{self.param_name_: v} for v in candidates]
        results = self._format_results(candidate_params, self.n_splits_, out)

        self.path_reports_ = [f[1] for f in folds]
        rates = np.array([[np.nan if r is None else r.screening_rate for r in f[1]]
                          for f in folds], dtype=float).reshape(self.n_splits_, n_cand)
        self.screening_rates_ = rates
        self.path_fit_times_ = np.array([[o["fit_time"] for o in f[0]] for f in folds],
                                        dtype=float).reshape(self.n_splits_, n_cand)
        for s in range(self.n_splits_):
            results[f"split{s}_screening_rate"] = rates[s, position]
        results["mean_screening_rate"] = rates[:, position].mean(axis=0)

        first = out[0]["test_scores"]
        self.multimetric_ = isinstance(first, dict)
        if callable(self.scoring) and self.multimetric_:
            self._check_refit_for_multimetric(first)
            refit_metric = self.refit
        if self.refit or not self.multimetric_:
            self.best_index_ = int(self._select_best_index(self.refit, refit_metric,
                                                           results))
            if not callable(self.refit):
                self.best_score_ = results[f"mean_test_{refit_metric}"][self.best_index_]
            self.best_params_ = results["params"][self.best_index_]
        self.cv_results_ = results
        if self.verbose > 0:
            self._print_table()
        if self.refit:
            self.best_estimator_ = clone(base).set_params(**self.best_params_)
            t0 = time.time()
            with serving(kernel_rows, every):
                if y is not None:
                    self.best_estimator_.fit(X, y, **routed.estimator.fit)
                else:
                    self.best_estimator_.fit(X, **routed.estimator.fit)
            self.refit_time_ = time.time() - t0
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        self.scorer_ = scorers._scorers if isinstance(scorers, _MultimetricScorer) \
            else scorers
        self.cv_results_ = results
        return self

    def _print_table(self) -> None:
        """One line per value in walk order: value, screening rate (or "closed-form",
        one field like the rates, where every fold's fit was solved in closed form:
        nothing was screened there),
        mean fit time and, when there is a refit metric, the CV score and its standard
        deviation."""
        results = self.cv_results_
        metric = "score" if not self.multimetric_ else self.refit
        key = f"mean_test_{metric}" if isinstance(metric, str) else None
        params = [p[self.param_name_] for p in results["params"]]
        short = self.param_name_.rsplit("__", 1)[-1]
        # closed_form[s, k]: fold s's fit at path_values_[k] had the closed-form solution
        closed_form = np.array([[getattr(r, "closed_form", False) for r in fold]
                                for fold in self.path_reports_], dtype=bool)
        head = f"{short:>11} {'screened':>11} {'fit time (s)':>13}"
        if key in results:
            head += f" {'CV ' + key[10:]:>12} {'+/-':>7}"
        print(head)
        mixed = False
        for k, value in enumerate(self.path_values_):
            c = params.index(value)
            rate = f"{results['mean_screening_rate'][c]:.1%}"
            if closed_form[:, k].all():
                rate = "closed-form"
            elif closed_form[:, k].any():
                rate, mixed = rate + "*", True
            line = f"{value:>11.4g} {rate:>11} {results['mean_fit_time'][c]:>13.4f}"
            if key in results:
                line += f" {results[key][c]:>12.4f} {results['std' + key[4:]][c]:>7.4f}"
            print(line)
        if mixed:
            print("* some folds were solved in closed form at this value (counted as "
                  "100% decided)")
