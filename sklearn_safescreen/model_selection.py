"""RegularizationPathCV: GridSearchCV over a regularisation parameter, walked as a path.

Per fold, the grid is walked from the most to the least regularised value with
``warm_start=True``, so each solution screens the next problem. The class is the
scikit-learn shell: the candidates live in ``_search_grid``, the folds, walks and refit
in ``_search_walk``, the verbose lines in ``_search_report``, and the grids, critical
values and the path protocol in :mod:`sklearn_safescreen.path`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import _fit_context
from sklearn.metrics._scorer import _MultimetricScorer
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_method_params, _num_samples, indexable

from ._search_grid import SearchSpace, search_space
from ._search_report import print_table
from ._search_walk import WalkOutcomes, fold_splits, refit_best, run_walks, walked_param
from .grid import GRID_KINDS
from .problems.shared_kernel import SharedKernelRows, serving


class RegularizationPathCV(BaseSearchCV):
    r"""Cross-validated regularisation path with safe screening.

    The same search as ``GridSearchCV(estimator, {**param_grid, param_name: values},
    cv=cv, ...)``, with the same answer (each fit is the certified optimum at its
    value), but for every combination of the other parameters (``param_grid``: gamma,
    class_weight, ...) and every fold, the values of ``param_name`` are walked from the
    most to the least regularised with ``warm_start=True``: each solution is the start
    point and the safe-screening reference of the next problem, instead of a refit from
    scratch. The (combination, fold) walks run through :class:`joblib.Parallel`, so any
    joblib backend (loky on one machine, ``joblib.parallel_backend("dask")`` on a
    cluster) distributes them.

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
        A generated grid is computed for each combination of ``param_grid`` (the
        critical value depends on gamma, degree, ...); see ``param_grid`` for how
        ``cv_results_`` then lists the candidates.
    param_grid : dict, list of dict or None, default=None
        The other parameters searched, exactly as GridSearchCV's ``param_grid`` (names
        with the Pipeline prefix, e.g. ``{"safesvc__gamma": [0.01, 0.1]}``; a list of
        dicts searches their union); ``param_name`` must not be in it. With explicit
        ``values`` the candidates are GridSearchCV's, in its order:
        ``ParameterGrid([{**grid, param_name: values} for grid in param_grid])``. With a
        generated grid, each combination has its own values; the candidates are listed
        combination by combination (in ``ParameterGrid(param_grid)`` order), each with
        its values from the most to the least regularised, i.e. the candidates of
        ``GridSearchCV(estimator, [{**{k: [v] for k, v in combo.items()},
        param_name: list(values)} for combo, values in zip(combinations_,
        path_values_)])``.
    kernel_seeds : bool, default=True
        Screen across kernel parameters: on each fold, the combinations of
        ``param_grid`` that differ only by the Safe step's kernel parameters
        (``kernel``, ``gamma``, ``degree``, ``coef0``) are walked one after the other,
        in ``ParameterGrid`` order (the order of the lists given), and each fit is
        offered the previous combination's solution at the nearest value as a second
        reference: whatever the kernel, it is a feasible point of the fit's dual, whose
        duality gap on the new kernel gives a safe ball (``doc/theory/svm_lad.rst``,
        "Screening across kernel parameters"); the fit takes it when that ball is
        smaller than the one from its previous value. The box-QP estimators (SafeSVC,
        SafeLAD) use it, the others ignore it; the answers are the same either way.
        ``False``: every (combination, fold) walk is a job of its own (more jobs for
        ``n_jobs`` to run at once, no seeds).
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
        (Combination, fold) walks run in parallel through joblib (with ``kernel_seeds``,
        one job per fold walks a chain of kernel parameters), on threads by default
        (the solvers
        release the GIL, and no worker process has to start); a
        ``joblib.parallel_config(backend=...)`` context chooses processes (``"loky"``) or
        a cluster (``"dask"``) instead.
    refit : bool, str or callable, default=True
        Refit the best value on the whole data (as in GridSearchCV).
    verbose : int, default=0
        ``>0``: the number of fits and walks, one line per finished (combination,
        fold) walk (its values, mean screening rate and time), then per combination one
        line per value (value, mean screening rate, mean fit time, CV score and its
        standard deviation); ``>1``: also sklearn's per-fit lines.
    error_score : "raise" or float, default=np.nan
        Score of a failed fit (as in GridSearchCV).
    return_train_score : bool, default=False
        Also score on the training folds.
    kernel_memory : float, default=1024
        Bound, in MB, on the memory of the kernel rows the folds share (the kernel
        estimators with an ``"rbf"`` or ``"poly"`` kernel and an explicit or ``"auto"``
        ``gamma``): a fold's kernel is a sub-matrix of the whole training set's, so each
        row of the whole set is computed once and read by every fold that contains its
        sample, by the scoring on its test folds, by the fits on the whole set that
        generate the grid and by the refit
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
        ``mean_screening_rate`` and ``split<k>_screening_rate``. Candidates, ``params``,
        ``param_<name>`` and ranks as in GridSearchCV (see ``param_grid``).
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
    combinations_ : list of dict
        The combinations of ``param_grid`` in ``ParameterGrid`` order (``[{}]`` without
        ``param_grid``): one walk per combination and fold.
    path_values_ : ndarray of shape (n_values,)
        The grid in walk order (most to least regularised).
    path_candidates_ : ndarray of shape (n_values,)
        The index in ``cv_results_`` of the candidate at each ``path_values_``.
    critical_value_ : float or None
        The critical value of the whole training set when the grid was generated.
    path_reports_ : list of list of ScreeningReport
        ``path_reports_[fold][k]``: the screening report of the fit at
        ``path_values_[k]`` on that fold (None when the fit failed).
    screening_rates_ : ndarray of shape (n_splits, n_values)
        Screening rate per fold along the walk.
    path_fit_times_ : ndarray of shape (n_splits, n_values)
        Fit time per fold along the walk.

        With a ``param_grid``, each of the six attributes above is a list over
        ``combinations_`` whose entry ``c`` is that combination's attribute with the
        shape described (``path_values_[c]``, ``path_reports_[c][fold][k]``,
        ``screening_rates_[c]`` of shape ``(n_splits, len(path_values_[c]))``, ...;
        ``critical_value_`` an ndarray of shape ``(n_combinations,)`` or None).

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
        "param_grid": [dict, list, None],
        "kernel_seeds": ["boolean"],
        "n_values": [Interval(numbers.Integral, 1, None, closed="left")],
        "eps": [Interval(numbers.Real, 0, 1, closed="neither")],
        "stop": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "kernel_memory": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, estimator, param_name=None, values=None, *, param_grid=None,
                 kernel_seeds=True, n_values=30, eps=1e-3, stop=None, cv=5, scoring=None,
                 n_jobs=None, refit=True, verbose=0, error_score=np.nan,
                 return_train_score=False, kernel_memory=1024):
        self.estimator = estimator
        self.param_name = param_name
        self.values = values
        self.param_grid = param_grid
        self.kernel_seeds = kernel_seeds
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

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **params) -> RegularizationPathCV:
        """Walk the path on every fold (for every combination of ``param_grid``),
        select the best candidate, refit.

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
        self.param_name_, self._prefix = walked_param(self.estimator, self.param_name)
        scorers, refit_metric = self._get_scorers()
        X, y = indexable(X, y)
        routed = self._get_routed_params_for_fit(_check_method_params(X, params=params))
        splits = fold_splits(self.cv, X, y, self.estimator, routed.splitter.split)
        self.n_splits_ = len(splits)
        # one store of kernel rows for the grid's fits on the whole set, every fold and
        # the refit (kept for this fit only)
        kernel_rows = SharedKernelRows(X, self.kernel_memory)
        with serving(kernel_rows, np.arange(_num_samples(X))):
            space = search_space(self.estimator, X, y, param_name=self.param_name_,
                                 prefix=self._prefix, values=self.values,
                                 param_grid=self.param_grid, n_values=self.n_values,
                                 eps=self.eps, stop=self.stop, kernel_seeds=self.kernel_seeds,
                                 fit_params=routed.estimator.fit)
        scoring = dict(scorer=scorers, fit_params=routed.estimator.fit,
                       score_params=routed.scorer.score, error_score=self.error_score,
                       return_train_score=self.return_train_score, caller=self)
        outcomes = run_walks(self.estimator, space, X, y, splits, param_name=self.param_name_,
                             prefix=self._prefix, scoring=scoring, n_jobs=self.n_jobs,
                             verbose=self.verbose, kernel_rows=kernel_rows)
        self._store_results(space, outcomes, refit_metric)
        if self.verbose > 0:
            self._print_table()
        if self.refit:
            self.best_estimator_, self.refit_time_ = refit_best(
                self.estimator, self.best_params_, X, y, routed.estimator.fit, kernel_rows)
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        self.scorer_ = scorers._scorers if isinstance(scorers, _MultimetricScorer) else scorers
        return self

    def _store_results(self, space: SearchSpace, outcomes: WalkOutcomes,
                       refit_metric) -> None:
        """``cv_results_`` from GridSearchCV's own ``_format_results`` (the fits in its
        order, failures handled as it handles them) plus the screening rates, the path
        attributes, and the best candidate chosen as GridSearchCV chooses it."""
        out = outcomes.fits(self.error_score, callable_scoring=callable(self.scoring))
        results = self._format_results(space.candidates, self.n_splits_, out)
        results.update(outcomes.screening_results())
        self.combinations_ = space.combinations
        # the documented path_* attributes, per combination or for the single one
        for name, value in outcomes.path_attributes(self.param_grid is None).items():
            setattr(self, name, value)
        first = out[0]["test_scores"]
        self.multimetric_ = isinstance(first, dict)
        if callable(self.scoring) and self.multimetric_:
            self._check_refit_for_multimetric(first)
            refit_metric = self.refit
        if self.refit or not self.multimetric_:
            self.best_index_ = int(self._select_best_index(self.refit, refit_metric, results))
            if not callable(self.refit):
                self.best_score_ = results[f"mean_test_{refit_metric}"][self.best_index_]
            self.best_params_ = results["params"][self.best_index_]
        self.cv_results_ = results

    def _print_table(self) -> None:
        """The verbose table of the fitted search (``_search_report.print_table``)."""
        print_table(self.cv_results_, self.combinations_, self.path_values_,
                    self.path_candidates_, self.path_reports_, param_name=self.param_name_,
                    single=self.param_grid is None,
                    metric=self.refit if self.multimetric_ else "score")
