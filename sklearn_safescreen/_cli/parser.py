"""The command line's options: the parser, its help text and the checks of its values."""

from __future__ import annotations

import argparse
import os
import re
import textwrap

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
            f"  {PROG} --grid eps-path --eps 1e-2 --stop 1\n"
            f"  {PROG} --dataset digits --kernel rbf --grid gamma=0.005,0.015,0.05 "
            "--values 0.1,1,10"),
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
    grid.add_argument("--grid", default=None, action="append",
                      metavar="KIND|NAME=V1,V2,...",
                      help="the grid of the path parameter, geometric: --n-values values "
                      "from the critical value (C_min) to --stop; eps-path: Ogawa et al.'s "
                      "eps-approximation path, SafeSVC only (default: geometric). Or, "
                      "repeatable, another parameter's values searched with it, e.g. "
                      "--grid gamma=0.01,0.1,1 --grid class_weight=None,balanced: every "
                      "combination walks the path (a generated grid is computed per "
                      "combination, from --stop or C_crit / --eps)")
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


def _grid_value(text: str):
    """A ``--grid NAME=...`` value: None, a bool, an int, a float or the string."""
    words = {"none": None, "true": True, "false": False}
    if text.lower() in words:
        return words[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _split_grid(parser: argparse.ArgumentParser, args) -> None:
    """``args.grid`` (the ``--grid`` options) as the path grid's kind (``args.grid``)
    and the other parameters' grid (``args.param_grid``, name -> list of values, in the
    order given)."""
    kinds, args.param_grid = [], {}
    for item in args.grid or []:
        if "=" not in item:
            if item not in ("geometric", "eps-path"):
                parser.error(f"--grid {item!r}: expected geometric, eps-path or "
                             "NAME=V1,V2,...")
            kinds.append(item)
            continue
        name, _, text = item.partition("=")
        name = name.strip()
        values = [_grid_value(v.strip()) for v in text.split(",") if v.strip()]
        if not re.fullmatch(r"[A-Za-z_][\w]*", name) or not values:
            parser.error(f"--grid {item!r}: expected NAME=V1,V2,... with at least one value")
        if name in args.param_grid:
            parser.error(f"--grid {name}= is given twice")
        args.param_grid[name] = values
    if len(set(kinds)) > 1:
        parser.error("--grid: give one of geometric and eps-path")
    args.grid = kinds[0] if kinds else "geometric"


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
    _split_grid(parser, args)
    if args.grid == "eps-path" and args.estimator not in (None, "svc") \
            and args.values is None:
        parser.error("--grid eps-path is defined for --estimator svc only")
    if args.plot is not None:
        folder = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(folder):
            parser.error(f"--plot: the folder {folder} does not exist")


