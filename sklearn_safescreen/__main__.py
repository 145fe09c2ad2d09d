"""``python -m sklearn_safescreen``: model selection along a safely screened path.

By default: :class:`~sklearn_safescreen.RegularizationPathCV` over a linear SafeSVC
on synthetic data (``make_classification``, 20000 x 50, large enough for screening to
matter), 20 values of C from C_min to 10, 5 folds. It prints, per value, the screening
rate, the fit time and the CV score, then the best value, and then times GridSearchCV
on the same grid and folds (``--no-compare`` skips it). ``--help`` lists every option.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import textwrap
import time
import warnings

import numpy as np

PROG = "python -m sklearn_safescreen"

#: Shipped data sets: name -> (loader, task). Loaders are imported lazily.
DATASETS = {
    "breast_cancer": "classification: breast cancer Wisconsin, 569 x 30, standardised",
    "iris": "classification: iris, 150 x 4, 3 classes, standardised",
    "wine": "classification: wine, 178 x 13, 3 classes, standardised",
    "digits": "classification: digits, 1797 x 64, 10 classes, scaled to [0, 1]",
    "ogawa_toy": "classification: Ogawa et al. (2013) Fig. 1 toy, 1000 x 2",
    "wang_toy1": "classification: Wang et al. (2014) Toy1, 2000 x 2 (well separated)",
    "wang_toy2": "classification: Wang et al. (2014) Toy2, 2000 x 2",
    "wang_toy3": "classification: Wang et al. (2014) Toy3, 2000 x 2 (overlapping)",
    "diabetes": "regression: diabetes, 442 x 10, standardised",
    "synthetic": "classification: make_classification(20000 x 50, n_informative=20, "
                 "flip_y=0.05), the benchmark's data",
}

ESTIMATORS = {
    "svc": "SafeSVC (hinge-loss SVM, parameter C)",
    "lad": "SafeLAD (least absolute deviations regression, parameter C)",
    "metric": "SafeMetricLearner + 3-nearest-neighbours (parameter metric__alpha)",
    "dsvc": "SafeDoublySparseSVC (elastic-net smoothed-hinge SVM, parameter alpha; "
            "screened: features)",
    "lpsvc": "SafeLPSVC (1-norm SVM: L1 penalty, hinge loss, a linear program; "
             "parameter alpha; screened: features)",
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block)."""

    def error(self, message):
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n\n".join(textwrap.fill(par, 88) for par in (
            "Cross-validated model selection along a regularisation path with safe "
            "screening.",
            "Per fold, the grid is walked from the most to the least regularised value "
            "with warm starts: each solution proves that some samples cannot change the "
            "next optimum and removes them (safe screening). The answer is exactly "
            "GridSearchCV's; only the time shrinks.",
            "The default run fits a linear SafeSVC on synthetic data "
            "(make_classification, 20000 x 50, the benchmark's) over 20 values of C from "
            "C_min to 10 with 5 folds, prints per value the screening rate, fit time and "
            "CV score, the best value, and the time GridSearchCV takes on the same grid "
            "and folds. --dataset breast_cancer is a quick run on small data.")),
        epilog=(
            "datasets:\n" + "\n".join(f"  {k:<14} {v}" for k, v in DATASETS.items())
            + "\n  FILE           any LIBSVM/svmlight file (sklearn's load_svmlight_file; "
            "densified for\n                 --estimator metric, which needs dense input, "
            "when it fits in memory)"
            "\n\nestimators:\n" + "\n".join(f"  {k:<14} {v}" for k, v in ESTIMATORS.items())
            + "\n\nexamples:\n"
            f"  {PROG}\n"
            f"  {PROG} --dataset wang_toy3 --kernel rbf --n-values 15 --plot path.png\n"
            f"  {PROG} --dataset data.svm --values 0.01,0.1,1,10 --no-compare\n"
            f"  {PROG} --estimator dsvc --dataset data.svm --n-values 30 --no-compare\n"
            f"  {PROG} --grid eps-path --eps 1e-2 --stop 1"),
    )
    data = parser.add_argument_group("data and model")
    data.add_argument("--dataset", default=None, metavar="NAME|FILE",
                      help="a shipped dataset (list below) or a LIBSVM/svmlight file "
                      "(default: synthetic; diabetes for --estimator lad, wine for "
                      "--estimator metric)")
    data.add_argument("--max-samples", type=int, default=None, metavar="N",
                      help="use a random subset of N samples, stratified by class for "
                      "the classifiers (default: all)")
    data.add_argument("--scale", action="store_true",
                      help="standardise features in a Pipeline (without centring for "
                      "sparse files)")
    data.add_argument("--estimator", default=None, choices=list(ESTIMATORS),
                      help="the Safe estimator (default: svc; lad for a regression "
                      "dataset such as diabetes or a file with a continuous target)")
    data.add_argument("--kernel", default=None, choices=["linear", "rbf", "poly"],
                      help="kernel of --estimator svc or lad (default: linear); the "
                      "other estimators are linear and refuse it")
    data.add_argument("--gamma", type=float, default=None,
                      help="rbf/poly kernel coefficient (default: 1 / n_features)")
    data.add_argument("--screening", default=None,
                      choices=["IT", "BT1", "BT2", "DVI", "rrpb+pgb", "rrpb", "pgb", "gb",
                               "dgb", "cdgb", "rpb", "simultaneous", "features", "samples",
                               "none"],
                      help="screening rule (SafeSVC: IT, BT1, BT2, DVI; SafeLAD: DVI; "
                      "SafeMetricLearner: its balls rrpb+pgb, rrpb, pgb, gb, dgb, cdgb, rpb; "
                      "SafeDoublySparseSVC and SafeLPSVC: simultaneous, features, samples); "
                      "none disables "
                      "screening (default: the estimator's, IT for SafeSVC)")
    data.add_argument("--tol", type=float, default=1e-6,
                      help="duality gap of every fit, relative (svc, lad, metric, lpsvc) "
                      "or absolute (dsvc, whose objective is an average loss) "
                      "(default: 1e-6)")
    grid = parser.add_argument_group("grid")
    grid.add_argument("--values", default=None, metavar="V1,V2,...",
                      help="explicit comma-separated values (overrides --grid); a value "
                      "of any option may start with '-' (--values -1,2 or --values=-1,2)")
    grid.add_argument("--grid", default="geometric", choices=["geometric", "eps-path"],
                      help="geometric: --n-values values from the critical value (C_min) "
                      "to --stop; eps-path: Ogawa et al.'s eps-approximation path, SafeSVC only "
                      "(default: geometric)")
    grid.add_argument("--n-values", type=int, default=20, metavar="N",
                      help="number of values of the geometric grid (default: 20)")
    grid.add_argument("--stop", type=float, default=None,
                      help="least regularised value (default: 10 for C, or C_crit / "
                      "--eps if C_crit > 10; alpha_crit * --eps for alpha)")
    grid.add_argument("--eps", type=float, default=1e-3,
                      help="geometric grid without --stop: ratio of its ends; eps-path: "
                      "its tolerance (default: 1e-3)")
    run = parser.add_argument_group("run")
    run.add_argument("--cv", type=int, default=5, metavar="K",
                     help="number of (stratified) folds (default: 5)")
    run.add_argument("--scoring", default=None,
                     help="a scikit-learn scoring name (default: the estimator's score)")
    run.add_argument("--n-jobs", type=int, default=1,
                     help="folds in parallel through joblib (default: 1)")
    run.add_argument("--no-compare", action="store_true",
                     help="do not time GridSearchCV on the same grid and folds")
    run.add_argument("--plot", default=None, metavar="FILE",
                     help="save the screening-rate plot to FILE (PNG, PDF, SVG...; needs "
                     "matplotlib)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


#: A command-line token that is a (list of) number(s), possibly negative: the value of
#: the option before it, not an option (argparse takes "-1,2" for an unknown option).
_NUMBERS = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def _join_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--opt -1,2`` as ``--opt=-1,2`` for every option that takes a value, so that a
    negative value reaches the option's own check (with its message) instead of
    argparse's "expected one argument"."""
    takes_value = {opt for action in parser._actions if action.nargs is None
                   and action.option_strings for opt in action.option_strings}
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in takes_value and i + 1 < len(argv) and _NUMBERS.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
        else:
            out.append(tok)
            i += 1
    return out


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


def _check_args(parser: argparse.ArgumentParser, args) -> None:
    if args.n_values < 1:
        parser.error("--n-values must be >= 1")
    if args.cv < 2:
        parser.error("--cv must be >= 2")
    if not 0 < args.eps < 1:
        parser.error("--eps must be in (0, 1)")
    for name in ("tol", "stop", "gamma"):
        value = getattr(args, name)
        if value is not None and not (np.isfinite(value) and value > 0):
            parser.error(f"--{name} must be a finite number > 0")
    if args.max_samples is not None and args.max_samples < 2:
        parser.error("--max-samples must be >= 2")
    if args.n_jobs == 0:
        parser.error("--n-jobs must be a non-zero integer")
    if args.values is not None:
        try:
            values = [float(v) for v in args.values.split(",") if v.strip()]
        except ValueError:
            parser.error(f"--values must be comma-separated numbers; got {args.values!r}")
        if not values or not all(np.isfinite(v) and v > 0 for v in values):
            parser.error("--values must be finite numbers > 0")
        args.values = values
    if args.grid == "eps-path" and args.estimator not in (None, "svc") \
            and args.values is None:
        parser.error("--grid eps-path is defined for --estimator svc only")
    if args.plot is not None:
        folder = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(folder):
            parser.error(f"--plot: the folder {folder} does not exist")


def _load(args):
    """(X, y, description, continuous): ``continuous`` when the target is a regression
    target (a shipped regression dataset, or a file whose target is continuous)."""
    from sklearn import datasets as skd
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.utils.multiclass import type_of_target

    from . import datasets as ours

    name = args.dataset or {"lad": "diabetes", "metric": "wine"}.get(args.estimator,
                                                                     "synthetic")
    if name in DATASETS:
        if name == "breast_cancer":
            X, y = ours.load_standardized_breast_cancer()
        elif name in ("iris", "wine", "diabetes"):
            X, y = getattr(skd, f"load_{name}")(return_X_y=True)
            X = StandardScaler().fit_transform(X)
        elif name == "digits":
            X, y = skd.load_digits(return_X_y=True)
            X = MinMaxScaler().fit_transform(X)
        elif name == "synthetic":
            X, y = skd.make_classification(n_samples=20000, n_features=50, n_informative=20,
                                           flip_y=0.05, random_state=0)
        elif name == "ogawa_toy":
            X, y = ours.make_ogawa_toy(random_state=0)
        else:
            X, y = ours.make_wang_toy(int(name[-1]), random_state=0)
        desc = DATASETS[name].split(": ", 1)[1].split(", the benchmark")[0]
        continuous = DATASETS[name].startswith("regression")
    else:
        if not os.path.isfile(name):
            raise ValueError(f"--dataset {name!r} is neither a shipped dataset "
                             f"({', '.join(DATASETS)}) nor a readable file")
        try:
            X, y = skd.load_svmlight_file(name)
        except (ValueError, OSError, UnicodeDecodeError, RuntimeError) as exc:
            raise ValueError(f"cannot read {name} as a LIBSVM/svmlight file: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from exc
        if X.shape[0] < 2:
            raise ValueError(f"{name} has {X.shape[0]} sample(s); need at least 2")
        # the format is always read as a sparse matrix: say how sparse the data is
        density = X.nnz / max(X.shape[0] * X.shape[1], 1)
        desc = (f"{os.path.basename(name)}, {X.shape[0]} x {X.shape[1]}, svmlight file, "
                f"{density:.1%} non-zero")
        continuous = type_of_target(y) == "continuous"
    return X, y, desc, continuous


def _choose_estimator(args, continuous: bool, desc: str) -> None:
    """Set ``args.estimator``: SafeLAD by default on a regression target, and a
    classifier is refused on one (it would treat every target value as a class)."""
    if args.estimator is None:
        args.estimator = "lad" if continuous else "svc"
        if continuous:
            print(f"note: {desc.split(',')[0]} has a regression target: using --estimator "
                  "lad (SafeLAD); SafeSVC is a classifier")
    elif continuous and args.estimator != "lad":
        raise ValueError(f"{desc.split(',')[0]} has a regression (continuous) target, but "
                         f"--estimator {args.estimator} is a classifier; use --estimator lad")


def _subsample(X, y, n: int, stratify: bool):
    """``n`` samples drawn with a fixed seed; for a classifier, each class keeps its share
    (largest remainders, at least one sample of every class when ``n`` allows), so that a
    small subset still has every class in every training fold."""
    rng = np.random.RandomState(0)
    if not stratify:
        return np.sort(rng.choice(X.shape[0], n, replace=False))
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    share = n * counts / counts.sum()
    take = np.minimum(np.floor(share).astype(int), counts)
    if n >= classes.size:
        take = np.maximum(take, 1)
    while take.sum() > n:  # (only after raising empty shares to one)
        take[np.argmax(take)] -= 1
    order = np.argsort(-(share - take), kind="stable")
    for c in order[:n - take.sum()]:  # the largest remainders get the samples left
        take[c] += 1
    # one loop per class (not per sample): a random subset of each class
    idx = [rng.choice(np.flatnonzero(codes == c), take[c], replace=False)
           for c in range(classes.size)]
    return np.sort(np.concatenate(idx))


def _check_classes(y, subset: bool) -> None:
    """Refuse data on which some training fold would lack a class (its fits fail and
    its scores are nan): a class needs at least two samples, which stratified folds
    put in different test folds."""
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError("the dataset has a single class")
    rare = counts.argmin()
    if counts[rare] < 2:
        where = "the --max-samples subset" if subset else "the dataset"
        raise ValueError(f"class {classes[rare]} has a single sample in {where}: the "
                         "fold that tests it would train without it and fail; use more "
                         "samples")


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
        from .svm import SafeSVC

        kernel = args.kernel or "linear"
        est = SafeSVC(kernel=kernel, gamma=args.gamma or 1.0 / n_features,
                      random_state=0, **common)
        name = f"SafeSVC(kernel={kernel!r})"
    elif args.estimator == "lad":
        from .lad import SafeLAD

        kernel = args.kernel or "linear"
        est = supported(SafeLAD, kernel=kernel, gamma=args.gamma or 1.0 / n_features,
                        random_state=0, **common)
        name = "SafeLAD" if kernel == "linear" else f"SafeLAD(kernel={kernel!r})"
    elif args.estimator == "dsvc":
        from .doubly_sparse import SafeDoublySparseSVC

        est = SafeDoublySparseSVC(random_state=0, **common)
        name = "SafeDoublySparseSVC"
    elif args.estimator == "lpsvc":
        from .lp_svm import SafeLPSVC

        est = SafeLPSVC(**{**common, "max_iter": 10_000})
        name = "SafeLPSVC"
    else:
        from sklearn.neighbors import KNeighborsClassifier

        from .metric_learning import SafeMetricLearner


        est = Pipeline([("metric", supported(SafeMetricLearner, **common)),
                        ("knn", KNeighborsClassifier(n_neighbors=3))])
        name = "SafeMetricLearner + 3-NN"
    if args.scale:
        steps = est.steps if isinstance(est, Pipeline) else [("model", est)]
        est = Pipeline([("scale", StandardScaler(with_mean=not sparse)), *steps])
    return est, name


def _densify(X, name: str):
    """The dense array of a sparse ``X``, for an estimator that needs dense input; refused
    with the figure when it would take more than a quarter of the available memory."""
    from ._utils.memory import check_memory

    check_memory(X.shape[0] * X.shape[1] * np.dtype(np.float64).itemsize,
                 f"{name} needs dense input: the {X.shape[0]} x {X.shape[1]} data densified",
                 "use --max-samples, or --estimator svc or lad (which take sparse input)",
                 fraction=0.25)
    return X.toarray()


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


def _explain_tie(short: str, values, grid, search, diff: float, tol: float,
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
        f"{short}={values[gi]:.6g} (GridSearchCV's best) and {short}={values[pi]:.6g} (the "
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
    from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

    from .model_selection import RegularizationPathCV
    from .path import make_grid, resolve_path_param

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
    if args.values is not None:
        values = np.asarray(args.values)
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
        _check_scoring(args, estimator, param, values, X, y, regression, name)
    cv = (KFold(args.cv, shuffle=True, random_state=0) if regression
          else StratifiedKFold(args.cv, shuffle=True, random_state=0))
    print(f"{name} on {desc}")
    print(f"{len(values)} values of {short} from {values.min():.4g} to {values.max():.4g}, "
          f"{args.cv} folds, scoring={args.scoring or 'default'}, n_jobs={args.n_jobs}, screening="
          f"{args.screening or 'default'}")
    search = RegularizationPathCV(estimator, param, values=values, cv=cv,
                                  scoring=args.scoring, n_jobs=args.n_jobs,
                                  verbose=0 if args.quiet else 1)
    t0 = time.perf_counter()
    search.fit(X, y)  # verbose: fold progress, then one line per value
    t_path = time.perf_counter() - t0
    if args.quiet:
        search._print_table()
    res = search.cv_results_
    _check_scores(search)
    print(f"best {short} = {search.best_params_[param]:.6g}, CV score "
          f"{search.best_score_:.4f}")
    print(f"RegularizationPathCV: {t_path:.2f} s (refit {search.refit_time_:.2f} s)")
    if not args.no_compare:
        say(f"timing GridSearchCV on the same grid and folds ({len(values) * args.cv} "
            "cold fits) ...")
        grid = GridSearchCV(estimator, {param: list(map(float, values))}, cv=cv,
                            scoring=args.scoring, n_jobs=args.n_jobs)
        t0 = time.perf_counter()
        grid.fit(X, y)
        t_grid = time.perf_counter() - t0
        diff = float(np.max(np.abs(grid.cv_results_["mean_test_score"]
                                   - res["mean_test_score"])))
        same = grid.best_index_ == search.best_index_
        print(f"GridSearchCV:         {t_grid:.2f} s ({t_grid / t_path:.1f}x the path's "
              f"time); max score difference {diff:.1e}, same best {short}: "
              f"{'yes' if same else 'no, a tie within tolerance'}")
        if not same:
            print(_explain_tie(short, values, grid, search, diff, args.tol, regression))
    if args.plot:
        from .plotting import plot_screening_path

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


if __name__ == "__main__":
    sys.exit(main())
