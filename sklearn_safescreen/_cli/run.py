"""The command line's run: the estimator, the search, GridSearchCV's timing, the output."""

from __future__ import annotations

import difflib
import os
import sys
import textwrap
import time
import warnings

import numpy as np

from .data import _check_classes, _choose_estimator, _densify, _load, _subsample
from .parser import ESTIMATORS, PROG, _build_parser, _check_args, _join_negative_values


def _check_estimator_options(args) -> None:
    """Refuse the options the chosen estimator does not have (rather than ignore them)."""
    kernel_machines = ("svc", "lad")
    if args.estimator not in kernel_machines:
        for option in ("kernel", "gamma"):
            if getattr(args, option) is not None:
                raise ValueError(
                    f"--{option} is for the kernel machines (--estimator svc or lad); "
                    f"--estimator {args.estimator} ({ESTIMATORS[args.estimator]}) has "
                    "no kernel")
    elif args.gamma is not None and (args.kernel or "linear") == "linear":
        raise ValueError("--gamma is the coefficient of --kernel rbf or poly; the linear "
                         "kernel has none")
    kernel_params = {"gamma", "degree", "coef0"} & set(args.param_grid)
    if kernel_params and args.estimator in kernel_machines \
            and (args.kernel or "linear") == "linear":
        raise ValueError(f"--grid {min(kernel_params)}= is a parameter of --kernel rbf or "
                         "poly; the linear kernel has none")
    if "gamma" in args.param_grid and args.gamma is not None:
        raise ValueError("give gamma either with --gamma or with --grid gamma=..., not both")
    if args.param_grid and args.plot:
        raise ValueError("--plot draws one path of one parameter; it cannot be combined "
                         "with --grid NAME=...")


def _full_param_grid(param_grid: dict, estimator, prefix: str, param: str) -> dict:
    """``--grid NAME=...`` with the names as the estimator knows them: a name of the
    Safe step gets its Pipeline prefix (``gamma`` -> ``model__gamma`` under --scale)."""
    known = estimator.get_params(deep=True)
    out = {}
    for name, values in param_grid.items():
        full = name if name in known else prefix + name
        if full == param:
            raise ValueError(f"--grid {name}= is the path's own parameter; give its "
                             "values with --values")
        if full not in known:
            safe = sorted(k[len(prefix):] for k in known if k.startswith(prefix)
                          and "__" not in k[len(prefix):])
            raise ValueError(f"--grid {name}=: the estimator has no parameter {name!r}; "
                             f"its parameters: {', '.join(safe)}")
        out[full] = values
    return out


def _check_scoring(args, estimator, param: str, values, X, y, regression: bool,
                   name: str) -> None:
    """Score one cheap fit (the first value, at most 200 samples) with ``--scoring``
    before the run: a score that cannot be computed for this estimator and target
    would otherwise fail in every fold, as many warnings and then no best value."""
    from sklearn.base import clone
    from sklearn.metrics import get_scorer, get_scorer_names

    scoring = args.scoring
    if scoring not in get_scorer_names():
        close = difflib.get_close_matches(scoring, get_scorer_names(), n=3)
        raise ValueError(f"--scoring {scoring!r} is not a scikit-learn scoring name"
                         + (f"; did you mean {', '.join(close)}?" if close else ""))
    scorer = get_scorer(scoring)
    idx = (_subsample(X, y, 200, stratify=not regression) if X.shape[0] > 200
           else np.arange(X.shape[0]))
    Xs, ys = X[idx], y[idx]

    def score(target):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the fit's, at the most regularised value)
            model = clone(estimator).set_params(**{param: float(values[0])})
            model.fit(Xs, target)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a score that warns is a score that fails
            scorer(model, Xs, target)

    try:
        score(ys)
    except Exception as exc:  # the scorer's own error, reported once with its cause
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        n_classes = 0 if regression else np.unique(ys).size
        if n_classes > 2:
            try:
                score(ys == ys[0])
            except Exception:
                pass
            else:
                raise ValueError(
                    f"--scoring {scoring} needs a binary target, and the data has "
                    f"{n_classes} classes ({cause}); use a multiclass score such as "
                    "accuracy, balanced_accuracy or f1_macro (roc_auc_ovr and "
                    f"neg_log_loss need predict_proba, which {name} does not have)"
                    ) from exc
        raise ValueError(f"--scoring {scoring} cannot score {name} on this data: "
                         f"{cause}") from exc


def _estimator(args, n_features: int, sparse: bool):
    """(estimator, short name)."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    def supported(cls, **params):
        valid = cls().get_params()
        return cls(**{k: v for k, v in params.items() if k in valid})

    common = dict(tol=args.tol, max_iter=1_000_000)
    if args.screening is not None:
        common["screening"] = None if args.screening == "none" else args.screening
    if args.estimator == "svc":
        from ..svm import SafeSVC

        kernel = args.kernel or "linear"
        est = SafeSVC(kernel=kernel, gamma=args.gamma or 1.0 / n_features,
                      random_state=0, **common)
        name = f"SafeSVC(kernel={kernel!r})"
    elif args.estimator == "lad":
        from ..lad import SafeLAD

        kernel = args.kernel or "linear"
        est = supported(SafeLAD, kernel=kernel, gamma=args.gamma or 1.0 / n_features,
                        random_state=0, **common)
        name = "SafeLAD" if kernel == "linear" else f"SafeLAD(kernel={kernel!r})"
    elif args.estimator == "dsvc":
        from ..doubly_sparse import SafeDoublySparseSVC

        est = SafeDoublySparseSVC(random_state=0, **common)
        name = "SafeDoublySparseSVC"
    elif args.estimator == "lpsvc":
        from ..lp_svm import SafeLPSVC

        est = SafeLPSVC(**{**common, "max_iter": 10_000})
        name = "SafeLPSVC"
    else:
        from sklearn.neighbors import KNeighborsClassifier

        from ..metric_learning import SafeMetricLearner


        est = Pipeline([("metric", supported(SafeMetricLearner, **common)),
                        ("knn", KNeighborsClassifier(n_neighbors=3))])
        name = "SafeMetricLearner + 3-NN"
    if args.scale:
        steps = est.steps if isinstance(est, Pipeline) else [("model", est)]
        est = Pipeline([("scale", StandardScaler(with_mean=not sparse)), *steps])
    return est, name


def _check_scores(search) -> None:
    """Refuse a result with a nan CV score: its "best" value would be meaningless."""
    res = search.cv_results_
    for key in (k for k in res if k.startswith("mean_test_")):
        missing = np.isnan(np.asarray(res[key], dtype=float))
        if missing.any():
            metric = key[len("mean_test_"):]
            failed = sum(int(np.isnan(np.asarray(res[f"split{s}_test_{metric}"],
                                                 dtype=float)).sum())
                         for s in range(search.n_splits_))
            raise ValueError(
                f"{missing.sum()} of {missing.size} values have no CV {metric} (nan): "
                f"{failed} of {missing.size * search.n_splits_} fits failed or could not "
                "be scored (see the warnings above), so there is no best value; use more "
                "samples (--max-samples) or fewer folds (--cv)")


def _show(value) -> str:
    """A parameter's value as the output shows it (numbers to 6 significant digits)."""
    return f"{value:.6g}" if isinstance(value, float | np.floating) else str(value)


def _explain_tie(labels: list[str], grid, search, diff: float, tol: float,
                 regression: bool) -> str:
    """Why GridSearchCV and the path can pick different best values. Both argmaxes run
    over scores that differ by at most ``diff`` at each value, so each search's best
    scores within ``2 * diff`` of the other's best in either search: a tie, ``diff``
    coming from fits solved to ``tol`` only."""
    g = grid.cv_results_["mean_test_score"]
    p = search.cv_results_["mean_test_score"]
    gi, pi = grid.best_index_, search.best_index_
    gap = max(g[gi] - g[pi], p[pi] - p[gi])
    return textwrap.fill(
        f"{labels[gi]} (GridSearchCV's best) and {labels[pi]} (the "
        f"path's) score {g[gi]:.4f} and {g[pi]:.4f} in GridSearchCV, {p[gi]:.4f} and "
        f"{p[pi]:.4f} in the path. Every fit is solved to a duality gap of "
        f"--tol={tol:g} only, which "
        + ("moves the predictions slightly" if regression else
           "can put test samples near the decision boundary on either side")
        + f": the two searches' scores differ by up to {diff:.1e} at a value, so "
        f"two values that score within 2 x {diff:.1e} of each other (here {gap:.1e}) can "
        "swap ranks. A tie, not a different answer; a smaller --tol narrows it.",
        88, initial_indent="  ", subsequent_indent="  ")


def _run(args) -> int:
    import scipy.sparse as sp
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid, StratifiedKFold

    from ..model_selection import RegularizationPathCV
    from ..path import critical_value, make_grid, resolve_path_param

    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    X, y, desc, continuous = _load(args)
    _choose_estimator(args, continuous, desc)
    _check_estimator_options(args)
    regression = args.estimator == "lad"
    subset = args.max_samples is not None and args.max_samples < X.shape[0]
    if subset:
        idx = _subsample(X, y, args.max_samples, stratify=not regression)
        X, y = X[idx], y[idx]
        desc += f", {'stratified ' if not regression else ''}subset of {args.max_samples}"
    if not regression:
        _check_classes(y, subset)
    estimator, name = _estimator(args, X.shape[1], sp.issparse(X))
    param, prefix, safe = resolve_path_param(estimator)
    # the Safe step's own tags: a Pipeline's are its first step's (the --scale scaler
    # takes sparse input, the metric learner after it does not)
    if sp.issparse(X) and not safe.__sklearn_tags__().input_tags.sparse:
        X = _densify(X, name)
        desc += ", densified"
        estimator, name = _estimator(args, X.shape[1], False)  # (the scaler may centre)
        param, prefix, safe = resolve_path_param(estimator)
    short = param.rsplit("__", 1)[-1]
    param_grid = _full_param_grid(args.param_grid, estimator, prefix, param) \
        if args.param_grid else None
    combos = list(ParameterGrid(param_grid or {}))
    if args.values is not None:
        values = np.asarray(args.values)
    elif param_grid:  # generated per combination, by the search
        values = None
    else:
        say(f"computing the grid ({args.grid}) ...")
        kw = dict(n_values=args.n_values, eps=args.eps)
        if args.stop is None and args.grid == "geometric" and safe._path_increasing:
            try:  # up to C = 10 when the critical value is below it
                values = make_grid(estimator, X, y, args.grid, stop=10.0, **kw)
            except ValueError:
                values = make_grid(estimator, X, y, args.grid, **kw)
        else:
            values = make_grid(estimator, X, y, args.grid, stop=args.stop, **kw)
    if args.scoring is not None:
        first = clone(estimator).set_params(**combos[0])
        _check_scoring(args, first, param, values if values is not None else
                       [critical_value(first, X, y)], X, y, regression, name)
    cv = (KFold(args.cv, shuffle=True, random_state=0) if regression
          else StratifiedKFold(args.cv, shuffle=True, random_state=0))
    print(f"{name} on {desc}")
    if values is not None:
        grid_text = (f"{len(values)} values of {short} from {values.min():.4g} to "
                     f"{values.max():.4g}")
    else:
        grid_text = f"{short}: a {args.grid} grid per combination"
    if param_grid:
        grid_text += (f" x {len(combos)} combinations of "
                      + ", ".join(k.rsplit("__", 1)[-1] for k in param_grid))
    print(f"{grid_text}, {args.cv} folds, scoring={args.scoring or 'default'}, "
          f"n_jobs={args.n_jobs}, screening={args.screening or 'default'}")
    search = RegularizationPathCV(estimator, param, values=values if values is not None
                                  else args.grid, param_grid=param_grid,
                                  n_values=args.n_values, eps=args.eps, stop=args.stop,
                                  cv=cv, scoring=args.scoring, n_jobs=args.n_jobs,
                                  verbose=0 if args.quiet else 1)
    t0 = time.perf_counter()
    search.fit(X, y)  # verbose: fold progress, then one line per value
    t_path = time.perf_counter() - t0
    if args.quiet:
        search._print_table()
    res = search.cv_results_
    _check_scores(search)
    labels = [", ".join(f"{k.rsplit('__', 1)[-1]}={_show(v)}" for k, v in
                        sorted(p.items(), key=lambda kv: kv[0] != param))
              for p in res["params"]]
    print(f"best {labels[search.best_index_].replace('=', ' = ')}, CV score "
          f"{search.best_score_:.4f}")
    print(f"RegularizationPathCV: {t_path:.2f} s (refit {search.refit_time_:.2f} s)")
    if not args.no_compare:
        say(f"timing GridSearchCV on the same grid and folds ({len(labels) * args.cv} "
            "cold fits) ...")
        if values is not None:  # the product grid, as the search's
            same_grid = {**(param_grid or {}), param: list(map(float, values))}
        else:  # the search's values, combination by combination
            same_grid = [{**{k: [v] for k, v in combo.items()}, param: list(walk)}
                         for combo, walk in zip(search.combinations_, search.path_values_,
                                                strict=True)]
        grid = GridSearchCV(estimator, same_grid, cv=cv, scoring=args.scoring,
                            n_jobs=args.n_jobs)
        t0 = time.perf_counter()
        grid.fit(X, y)
        t_grid = time.perf_counter() - t0
        diff = float(np.max(np.abs(grid.cv_results_["mean_test_score"]
                                   - res["mean_test_score"])))
        same = grid.best_index_ == search.best_index_
        print(f"GridSearchCV:         {t_grid:.2f} s ({t_grid / t_path:.1f}x the path's "
              f"time); max score difference {diff:.1e}, same best "
              f"{'candidate' if param_grid else short}: "
              f"{'yes' if same else 'no, a tie within tolerance'}")
        if not same:
            print(_explain_tie(labels, grid, search, diff, args.tol, regression))
    if args.plot:
        from ..plotting import plot_screening_path

        ax = plot_screening_path(search)
        ax.figure.savefig(args.plot, dpi=100)
        print(f"plot written to {args.plot}")
    return 0


def _one_line_warning(message, category, filename, lineno, file=None, line=None,
                      _shown: set | None = None):
    """One line per warning; a message whose details follow on more lines (e.g.
    "Scoring failed ... Details:" and a traceback) ends with their last line, the
    cause. A line already printed is not printed again."""
    text = [t for t in str(message).strip().splitlines() if t.strip()]
    first = text[0] if text else ""
    if len(text) > 1:
        first = f"{first.rstrip()} {text[-1].strip()}"
    out = f"{PROG}: warning: {category.__name__}: {first}"
    shown = _SHOWN if _shown is None else _shown
    if out not in shown:
        shown.add(out)
        print(out, file=sys.stderr)


#: The warning lines printed in this run (each is printed once).
_SHOWN: set[str] = set()


def main(argv=None) -> int:
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_join_negative_values(parser, argv))
    _check_args(parser, args)
    try:
        if args.plot:
            try:
                import matplotlib

                matplotlib.use("Agg")
                from matplotlib.backend_bases import FigureCanvasBase
            except ImportError as exc:
                raise ValueError("--plot needs matplotlib: pip install matplotlib") from exc
            # refuse an unknown format before the (possibly long) run, not after it
            ext = os.path.splitext(args.plot)[1].lstrip(".").lower() or "png"
            formats = FigureCanvasBase.get_supported_filetypes()
            if ext not in formats:
                raise ValueError(f"--plot: unknown image format {ext!r}; use one of "
                                 f"{', '.join(sorted(formats))}")
        with warnings.catch_warnings():
            # warnings as one line each (no source echo), never hidden
            warnings.showwarning = _one_line_warning
            _SHOWN.clear()
            return _run(args)
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - flushed at exit
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure is one line, never a traceback
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 1


