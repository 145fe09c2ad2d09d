"""RegularizationPathCV: GridSearchCV over a regularisation parameter, walked as a path.

Per fold, the grid is walked from the most to the least regularised value with
``warm_start=True``, so each solution screens the next problem.
The grids, critical values and the path protocol live in :mod:`sklearn_safescreen.path`.
"""

from __future__ import annotations

import numbers
import time
from contextlib import nullcontext

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

from ._search_grid import (
    KERNEL_PARAMS,
    _candidate,
    _chains,
    _combinations,
    _nearest,
    _param_grids,
    _product_candidates,
)
from ._utils.openmp import effective_n_threads, fit_threads
from .base import fit_context, single_blas_thread
from .grid import GRID_KINDS, resolve_path_param
from .path import _grid, _step_of
from .problems.shared_kernel import SharedKernelRows, serving


# ------------------------------------------------------- RegularizationPathCV ---
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
    with serving(kernel_rows, train):
        for k, value in enumerate(values):
            step = _step_of(est, prefix)
            offer = None if seeds is None else seeds[k]
            with fit_context(step, references=offer) if offer is not None else nullcontext():
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


def _walk(estimator, chain: list[dict], X, y, train, test, param_name: str, prefix: str,
          walks: list[list], split_idx: int, n_splits: int, fit_and_score_kwargs,
          progress: list[str] | None, seeded: bool,
          kernel_rows: SharedKernelRows | None = None):
    """One fold's walks of a chain of combinations (``seeded``: combinations that
    differ only by kernel parameters, in order; else a single combination).

    Each combination's estimator has its parameters set once (cloned, as GridSearchCV
    sets a candidate's parameters, so that an estimator-valued parameter is a fresh
    object), then walks its values (:func:`_walk_fold`); when ``seeded``, each fit is
    offered the previous combination's solution at the nearest value as its
    reference. ``progress``: each walk's label, printed with its outcome (verbose).
    Returns ``(outcomes, reports)`` per combination of the chain."""
    results, previous = [], None
    for i, (combination, values) in enumerate(zip(chain, walks, strict=True)):
        est = clone(estimator).set_params(**clone(combination, safe=False)) \
            if combination else estimator
        seeds = None
        if seeded:
            seeds = [None] * len(values) if previous is None else \
                [previous[1][j] for j in _nearest(values, previous[0])]
        t0 = time.time()
        outs, reports, points = _walk_fold(est, X, y, train, test, param_name, prefix,
                                           values, split_idx, n_splits,
                                           fit_and_score_kwargs, seeds, kernel_rows)
        previous = (values, points)
        results.append((outs, reports))
        if progress is not None:
            rates = [r.screening_rate for r in reports if r is not None]
            screened = f"{np.mean(rates):.1%}" if rates else "n/a"
            failed = sum(o.get("fit_error") is not None for o in outs)
            msg = f"{progress[i]}; {len(values)} values; mean screened {screened}"
            if failed:
                msg += f"; {failed} failed"
            print(f"{msg}; total time={time.time() - t0:.1f}s")
    return results


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
        sample, by the fits on the whole set that generate the grid and by the refit
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

    def _walk_grids(self, X, y, fit_params: dict, combos: list[dict]):
        """Per combination, the values walked (walk order) and the critical value.

        Explicit ``values``: the user's objects (so that ``best_params_`` holds the
        user's own value, as in GridSearchCV), the same for every combination, with the
        indices that sort them into walk order. A generated grid: computed per
        combination (the critical value depends on the other parameters, e.g. gamma),
        already in walk order."""
        sw = fit_params.get(self._prefix + "sample_weight")
        kw = dict(n_values=self.n_values, eps=self.eps, stop=self.stop,
                  param_name=self.param_name_, sample_weight=sw)
        if self.values is not None and not isinstance(self.values, str):
            grid = _grid(self.estimator, X, y, self.values, **kw)
            # the user's own objects, as GridSearchCV's ParameterGrid yields them (an
            # array's elements are NumPy scalars there, not Python numbers)
            values = self.values
            user = list(np.atleast_1d(values) if isinstance(values, np.ndarray)
                        else values)
            return user, grid.order, [None] * len(combos)
        walks, criticals = [], []
        for combo in combos:
            est = clone(self.estimator).set_params(**clone(combo, safe=False)) \
                if combo else self.estimator
            grid = _grid(est, X, y, self.values, **kw)
            walks.append([float(v) for v in grid.values[grid.order]])
            criticals.append(grid.critical)
        return None, walks, criticals

    def _candidates(self, X, y, fit_params: dict):
        """``(combinations, candidates, walks, walk_candidates, criticals, chains)``: the
        other parameters' combinations (ParameterGrid order), the candidates in
        cv_results_ order, per combination the values walked and their candidates'
        indices (walk order), the critical values of generated grids, and the chains of
        combinations walked one after the other (:func:`_chains`)."""
        grids = _param_grids(self.param_grid, self.param_name_)
        combos, keys = _combinations(grids)
        name = self.param_name_
        user, walks, criticals = self._walk_grids(X, y, fit_params, combos)
        if user is not None:  # explicit values: GridSearchCV's product grid
            order = walks
            pairs, where = _product_candidates(grids, keys, name, len(user))
            candidates = [_candidate(combos[c], name, user[j]) for c, j in pairs]
            walks = [[user[j] for j in order] for _ in combos]
            walk_cands = [[where[c][j] for j in order] for c in range(len(combos))]
        else:  # generated: each combination's own values, combination by combination
            candidates, walk_cands = [], []
            for combo, walk in zip(combos, walks, strict=True):
                walk_cands.append(list(range(len(candidates),
                                             len(candidates) + len(walk))))
                candidates += [_candidate(combo, name, v) for v in walk]
        kernel = {self._prefix + k for k in KERNEL_PARAMS} if self.kernel_seeds else set()
        chains = _chains(grids, keys, kernel)
        return combos, candidates, walks, walk_cands, criticals, chains

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
        self.n_splits_ = n_splits = cv.get_n_splits(X, y, **routed.splitter.split)
        splits = list(cv.split(X, y, **routed.splitter.split))
        if len(splits) != n_splits:
            raise ValueError("cv.split and cv.get_n_splits return inconsistent results. "
                             f"Expected {n_splits} splits, got {len(splits)}")
        # one store of kernel rows for the grid's fits on the whole set, every fold and
        # the refit (kept for this fit only)
        kernel_rows = SharedKernelRows(X, self.kernel_memory)
        every = np.arange(_num_samples(X))
        with serving(kernel_rows, every):
            combos, candidates, walks, walk_cands, criticals, chains = self._candidates(
                X, y, routed.estimator.fit)
        n_cand, n_walks = len(candidates), len(combos) * n_splits
        if self.verbose > 0:
            print(f"Fitting {n_splits} folds for each of {n_cand} candidates, totalling "
                  f"{n_cand * n_splits} fits, in {n_walks} warm-started walks along "
                  f"{self.param_name_}")

        kwargs = dict(scorer=scorers, fit_params=routed.estimator.fit,
                      score_params=routed.scorer.score,
                      return_train_score=self.return_train_score,
                      return_n_test_samples=True, return_times=True,
                      return_parameters=False, error_score=self.error_score,
                      verbose=self.verbose, caller=self)
        base = clone(self.estimator)

        def label(c: int, s: int) -> str | None:
            if self.verbose <= 0:
                return None
            walk, short = walks[c], self.param_name_.rsplit("__", 1)[-1]
            other = "".join(f"{k}={v}, " for k, v in combos[c].items())
            return (f"[CV {s + 1}/{n_splits}; walk {c * n_splits + s + 1}/{n_walks}] END "
                    f"{other}{short}={float(walk[0]):.4g}..{float(walk[-1]):.4g}")

        # threads by default: the solvers release the GIL, and a search needs no worker
        # processes to start and import the package; a joblib backend context (loky,
        # dask) takes precedence. BLAS is limited to one thread here, in the calling
        # thread: OpenBLAS ignores a limit set from a worker thread, so the fits' own
        # limit would not hold for walks on threads. Likewise the compiled loops' OpenMP
        # threads are shared out between the walks that run at once (else each would
        # take every core).
        at_once = max(1, min(effective_n_jobs(self.n_jobs), len(chains) * n_splits))
        with single_blas_thread(), fit_threads(max(1, effective_n_threads() // at_once)):
            jobs = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(_walk)(base, [combos[c] for c in chain], X, y, train, test,
                               self.param_name_, prefix, [walks[c] for c in chain], s,
                               n_splits, kwargs,
                               None if self.verbose <= 0 else [label(c, s) for c in chain],
                               seeded=len(chain) > 1, kernel_rows=kernel_rows)
                for chain in chains for s, (train, test) in enumerate(splits))
        units = [None] * (len(combos) * n_splits)  # (combination, fold) -> its walk
        for j, (chain, s) in enumerate((ch, s) for ch in chains for s in range(n_splits)):
            for c, result in zip(chain, jobs[j], strict=True):
                units[c * n_splits + s] = result

        # GridSearchCV's order: candidate-major, then split
        where = [None] * n_cand  # candidate -> (combination, position in its walk)
        for c, cands in enumerate(walk_cands):
            for k, i in enumerate(cands):
                where[i] = (c, k)
        out = [units[c * n_splits + s][0][k] for c, k in where for s in range(n_splits)]
        _warn_or_raise_about_fit_failures(out, self.error_score)
        if callable(self.scoring):
            _insert_error_scores(out, self.error_score)
        results = self._format_results(candidates, n_splits, out)

        # per combination c: reports[c][s][k], rates[c] and times[c] (n_splits, n_c)
        reports = [[units[c * n_splits + s][1] for s in range(n_splits)]
                   for c in range(len(combos))]
        rates = [np.array([[np.nan if r is None else r.screening_rate for r in fold]
                           for fold in rep], dtype=float).reshape(n_splits, -1)
                 for rep in reports]
        times = [np.array([[o["fit_time"] for o in units[c * n_splits + s][0]]
                           for s in range(n_splits)], dtype=float).reshape(n_splits, -1)
                 for c in range(len(combos))]
        split_rates = np.array([rates[c][:, k] for c, k in where]).reshape(n_cand,
                                                                           n_splits)
        for s in range(n_splits):
            results[f"split{s}_screening_rate"] = split_rates[:, s]
        results["mean_screening_rate"] = split_rates.mean(axis=1)
        self.combinations_ = combos
        if self.param_grid is None:
            self.path_values_ = np.array([float(v) for v in walks[0]])
            self.path_candidates_ = np.array(walk_cands[0], dtype=np.intp)
            self.critical_value_ = criticals[0]
            self.path_reports_, self.screening_rates_ = reports[0], rates[0]
            self.path_fit_times_ = times[0]
        else:
            self.path_values_ = [np.array([float(v) for v in w]) for w in walks]
            self.path_candidates_ = [np.array(w, dtype=np.intp) for w in walk_cands]
            self.critical_value_ = None if criticals[0] is None else np.array(criticals)
            self.path_reports_, self.screening_rates_ = reports, rates
            self.path_fit_times_ = times

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
        self._table = (walks, walk_cands, reports)  # the verbose table's rows
        if self.verbose > 0:
            self._print_table()
        if self.refit:
            self.best_estimator_ = clone(base).set_params(
                **clone(self.best_params_, safe=False))
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
        return self

    def _print_table(self) -> None:
        """Per combination of the other parameters (its name=value line first, when
        there is a ``param_grid``), one line per value in walk order: value, screening
        rate (or "closed-form", one field like the rates, where every fold's fit was
        solved in closed form: nothing was screened there), mean fit time and, when
        there is a refit metric, the CV score and its standard deviation."""
        results, (walks, walk_cands, reports) = self.cv_results_, self._table
        metric = "score" if not self.multimetric_ else self.refit
        key = f"mean_test_{metric}" if isinstance(metric, str) else None
        short = self.param_name_.rsplit("__", 1)[-1]
        head = f"{short:>11} {'screened':>11} {'fit time (s)':>13}"
        if key in results:
            head += f" {'CV ' + key[10:]:>12} {'+/-':>7}"
        mixed = False
        for combo, walk, cands, reps in zip(self.combinations_, walks, walk_cands,
                                            reports, strict=True):
            if self.param_grid is not None:
                print(", ".join(f"{k}={v}" for k, v in combo.items()) + ":")
            print(head)
            # closed_form[s, k]: fold s's fit at the k-th value had the closed-form
            # solution
            closed_form = np.array([[getattr(r, "closed_form", False) for r in fold]
                                    for fold in reps], dtype=bool)
            for k, (value, c) in enumerate(zip(walk, cands, strict=True)):
                rate = f"{results['mean_screening_rate'][c]:.1%}"
                if closed_form[:, k].all():
                    rate = "closed-form"
                elif closed_form[:, k].any():
                    rate, mixed = rate + "*", True
                line = (f"{float(value):>11.4g} {rate:>11} "
                        f"{results['mean_fit_time'][c]:>13.4f}")
                if key in results:
                    line += (f" {results[key][c]:>12.4f} "
                             f"{results['std' + key[4:]][c]:>7.4f}")
                print(line)
        if mixed:
            print("* some folds were solved in closed form at this value (counted as "
                  "100% decided)")
