"""Screening on against off: every family's paths with the screening policy's choices
(the default), with screening at every step, and with none.

For each path: CPU time (``time.process_time``, one BLAS and OpenMP thread) of the
whole walk (``estimator_path(..., screening_mode=...)``) in the modes ``auto`` (the
policy, the default), ``always`` (screening at every step) and
``never`` (the path with screening off), the modes alternated within each
repetition (the first one rotated from one repetition to the next), best of
``--repeats``; the steps the policy ran without
screening; the mean screening rate of the always-screened walk. The ratios
"off / ..." are the speed over screening off (>= 1: not slower).

``--rules`` adds, for every path whose estimator has more than one rule, a walk with
each rule (``screening=<rule>``, screening at every step), alternated with the others
and with screening off, and prints a second table: what each rule costs on its own.

``--runs R`` repeats the whole best-of-``--repeats`` measurement R times: the table
shows the run whose off / default is the median, and the range of that ratio over the
runs. ``--spread`` adds a second walk without screening to every repetition (a fourth
mode, alternated with the others) and shows the range of off against itself over the
runs: the run-to-run spread a ratio is to be read against.

Run: python benchmarks/bench_cost_model.py [--quick] [--large] [--papers] [--rules]
         [--repeats 2] [--runs 1] [--spread] [--only TEXT]
(``--large`` adds the digits metric path, the mnist-shaped metric path and the 3000 x
4000 doubly sparse regression; ``--papers`` the papers' largest shapes, the
Gisette-shaped metric path (6,000 x 5,000, k=15, diagonal; minutes per walk), the
SensIT-shaped one (78,823 x 100, k=3, full metric; minutes per walk) and the
real-sim-shaped doubly sparse path (72,309 x 20,958 sparse, 100 values); ``--quick``
runs the small paths only).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import (  # noqa: E402
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
    make_regression,
)
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_safescreen import (  # noqa: E402
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    SafeLAD,
    SafeLPSVC,
    SafeMetricLearner,
    SafeSVC,
)
from sklearn_safescreen.engine.policy import MODES  # noqa: E402
from sklearn_safescreen.path import estimator_path  # noqa: E402


def _std(X):
    return StandardScaler().fit_transform(X)


def paths(quick: bool, large: bool, papers: bool = False) -> list[tuple]:
    """``(name, estimator, X, y, values, grid keywords)`` of every path."""
    out = []
    X, y = load_breast_cancer(return_X_y=True)
    X = _std(X)
    out.append(("RBF SafeSVC, standardised breast cancer, C in logspace(-2, 3, 50)",
                SafeSVC(gamma=1.0 / X.shape[1]), X, y, np.logspace(-2, 3, 50), {}))
    for loader, name in ((load_iris, "iris"), (load_wine, "wine")):
        X, y = loader(return_X_y=True)
        out.append((f"SafeMetricLearner, standardised {name}, 103 values (ratio 0.9)",
                    SafeMetricLearner(), _std(X), y, None,
                    dict(n_values=103, eps=0.9 ** 102)))
    X, y = make_classification(300, 60, n_informative=8, random_state=0)
    out.append(("SafeLPSVC, make_classification(300 x 60), 20 values down to 1e-2 "
                "alpha_max", SafeLPSVC(), _std(X), y, None, dict(n_values=20, eps=1e-2)))
    Xr, yr = make_regression(2000, 30, noise=5.0, random_state=0)
    out.append(("SafeLAD, make_regression(2000 x 30), 30 values from C_min",
                SafeLAD(), Xr, yr / yr.std(), None, dict(n_values=30)))
    if quick:
        return out
    X, y = make_classification(5000, 20, random_state=0)
    out.append(("RBF SafeSVC, make_classification(5000 x 20), C in logspace(-2, 3, 20)",
                SafeSVC(gamma=1.0 / 20), _std(X), y, np.logspace(-2, 3, 20), {}))
    X, y = make_classification(20000, 50, n_informative=20, flip_y=0.05, random_state=0)
    out.append(("linear SafeSVC, make_classification(20000 x 50), C in logspace(-3, 1, 9), "
                "tol 1e-6",
                SafeSVC(kernel="linear", tol=1e-6), _std(X), y, np.logspace(-3, 1, 9), {}))
    X, y = make_classification(2000, 2000, n_informative=30, flip_y=0.02, random_state=0)
    out.append(("SafeDoublySparseSVC, the 2000 x 2000 set, 30 values down to 1e-2 "
                "alpha_max, tol 1e-9", SafeDoublySparseSVC(fit_intercept=False, tol=1e-9),
                X, y, None, dict(n_values=30, eps=1e-2)))
    X, y = make_classification(2000, 500, n_informative=5, n_redundant=15,
                               n_clusters_per_class=2, random_state=0)
    out.append(("SafeMetricLearner, Madelon-shaped (2000 x 500, k=20, diagonal), 40 values "
                "(ratio 0.9)", SafeMetricLearner(k=20, metric="diagonal"),
                MinMaxScaler((-1, 1)).fit_transform(X), y, None,
                dict(n_values=40, eps=0.9 ** 39)))
    if large:
        X, y = load_digits(return_X_y=True)
        out.append(("SafeMetricLearner, standardised digits, 103 values (ratio 0.9)",
                    SafeMetricLearner(), _std(X), y, None,
                    dict(n_values=103, eps=0.9 ** 102)))
        Xr, yr = make_regression(3000, 4000, n_informative=40, noise=1.0, random_state=0)
        out.append(("SafeDoublySparseSVR, make_regression(3000 x 4000), 20 values, tol 1e-6",
                    SafeDoublySparseSVR(), Xr, yr / yr.std(), None,
                    dict(n_values=20, eps=1e-2)))
        X, y = make_classification(60000, 32, n_informative=20, n_redundant=4,
                                   n_classes=10, n_clusters_per_class=2, random_state=0)
        out.append(("SafeMetricLearner, mnist-shaped (60000 x 32, k=5, full), 30 values "
                    "(ratio 0.9)", SafeMetricLearner(k=5),
                    MinMaxScaler((-1, 1)).fit_transform(X), y, None,
                    dict(n_values=30, eps=0.9 ** 29)))
    if papers:
        from sklearn_safescreen.datasets import make_sparse_text_classification

        X, y = make_classification(6000, 5000, n_informative=50, n_redundant=50,
                                   n_clusters_per_class=2, random_state=0)
        out.append(("SafeMetricLearner, Gisette-shaped (6000 x 5000, k=15, diagonal), "
                    "40 values (ratio 0.9)", SafeMetricLearner(k=15, metric="diagonal"),
                    MinMaxScaler((-1, 1)).fit_transform(X), y, None,
                    dict(n_values=40, eps=0.9 ** 39)))
        X, y = make_classification(78823, 100, n_informative=40, n_redundant=10,
                                   n_classes=3, n_clusters_per_class=2, random_state=0)
        out.append(("SafeMetricLearner, SensIT-shaped (78823 x 100, k=3, full), 30 values "
                    "(ratio 0.9)", SafeMetricLearner(k=3),
                    MinMaxScaler((-1, 1)).fit_transform(X), y, None,
                    dict(n_values=30, eps=0.9 ** 29)))
        X, y = make_sparse_text_classification(random_state=0)
        out.append(("SafeDoublySparseSVC, real-sim-shaped (72309 x 20958 sparse), 100 "
                    "values down to 1e-4 alpha_max, tol 1e-9",
                    SafeDoublySparseSVC(fit_intercept=False, tol=1e-9, max_iter=100000),
                    X, y, None, dict(n_values=100, eps=1e-4)))
    return out


def rules_of(est) -> list[str]:
    """The rules ``est.screening`` may name (empty when there is only one)."""
    options = next((c.options for c in type(est)._parameter_constraints["screening"]
                    if hasattr(c, "options")), set())
    return sorted(options) if len(options) > 1 else []


def walk(est, X, y, values, grid, mode):
    t0 = time.process_time()
    res = estimator_path(est, X, y, values, attributes=[], screening_mode=mode, **grid)
    elapsed = time.process_time() - t0
    skipped = sum(bool(r.skipped) for r in res.reports)
    return elapsed, skipped, float(np.nanmean(res.screening_rates[1:]))


def _measure(est, X, y, values, grid, modes, rules, repeats):
    """One run: the best of ``repeats`` walks in each mode (and with each rule), and
    what the first walk of each reported (unscreened steps, screening rate)."""
    best = {m: np.inf for m in modes}
    info = {}
    for r in range(repeats):
        # alternated within each repetition, and the first walk rotated: the first walk
        # of a process touches its memory afresh (a Gisette-shaped walk without
        # screening: 103.2 s first, 98.6 s next, 15.2 s and 13.4 s of it in the system)
        k = r % len(modes)
        for mode in modes[k:] + modes[:k]:
            t, skipped, rate = walk(est, X, y, values, grid,
                                    "never" if mode == "never again" else mode)
            best[mode] = min(best[mode], t)
            info.setdefault(mode, (skipped, rate))
        for rule in rules:
            t, _, rate = walk(clone(est).set_params(screening=rule), X, y, values, grid,
                              "always")
            best[rule] = min(best.get(rule, np.inf), t)
            info.setdefault(rule, (0, rate))
    return best, info


def _range(ratios) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if len(ratios) > 1 else \
        f"{ratios[0]:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--papers", action="store_true")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default="", help="run the paths whose name contains this")
    ap.add_argument("--rules", action="store_true",
                    help="also walk each path with each of its rules at every step")
    ap.add_argument("--runs", type=int, default=1,
                    help="repeat the best-of-repeats measurement; report the median run "
                         "and the range of off / default over the runs")
    ap.add_argument("--spread", action="store_true",
                    help="add a second walk without screening to each repetition: the "
                         "range of off against itself over the runs")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    rows, rule_rows = [], []
    modes = MODES + (("never again",) if args.spread else ())
    with threadpool_limits(1):
        for name, est, X, y, values, grid in paths(args.quick, args.large, args.papers):
            if args.only not in name:
                continue
            rules = rules_of(est) if args.rules else []
            runs = [_measure(est, X, y, values, grid, modes, rules, args.repeats)
                    for _ in range(args.runs)]
            # the run whose off / default is the median (the lower middle one)
            runs.sort(key=lambda run: run[0]["never"] / run[0]["auto"])
            best, info = runs[(len(runs) - 1) // 2]
            ratios = [run[0]["never"] / run[0]["auto"] for run in runs]
            spread = [run[0]["never"] / run[0]["never again"] for run in runs] \
                if args.spread else []
            for rule in rules:
                rule_rows.append((name, rule, best[rule], best["never"], info[rule][1],
                                  rule == est.screening))
            row = (name, best["auto"], best["always"], best["never"], info["auto"][0],
                   info["always"][1], ratios, spread)
            rows.append(row)
            better = min(row[2], row[3])
            print(f"{name}: default {row[1]:.3f}s, always {row[2]:.3f}s, never "
                  f"{row[3]:.3f}s, default/better {row[1] / better:.3f}x "
                  f"({1e3 * (row[1] - better):+.1f} ms), off/default {row[3] / row[1]:.2f}x "
                  f"({_range(ratios)} over {len(runs)} runs), off/always "
                  f"{row[3] / row[2]:.2f}x, skipped {row[4]}"
                  + (f", off/off {_range(spread)}" if spread else ""), flush=True)
    load1 = os.getloadavg()[0]
    print()
    print(f"Measured {datetime.date.today()} on {platform.machine()}, "
          f"{os.cpu_count()} cores, 1-min load average {load0:.2f} at the start, "
          f"{load1:.2f} at the end; CPU time, one thread, best of {args.repeats}, modes "
          "alternated (the first rotated)"
          + (f"; the median of {args.runs} runs" if args.runs > 1 else "") + ".")
    print()
    extra = args.runs > 1 or args.spread
    print("| path | default (s) | screening at every step (s) | screening off "
          "(s) | off / default | off / every step | default / the better | steps the "
          "default ran unscreened | "
          "mean screening rate (every step) |"
          + (" off / default over the runs | off / off again over the runs |" if extra
             else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if extra else ""))
    for name, auto, always, never, skipped, rate, ratios, spread in rows:
        print(f"| {name} | {auto:.3f} | {always:.3f} | {never:.3f} | {never / auto:.2f}x | "
              f"{never / always:.2f}x | {auto / min(always, never):.3f}x | {skipped} | "
              f"{rate:.1%} |"
              + (f" {_range(ratios)} | {_range(spread) if spread else ''} |" if extra
                 else ""))
    if rule_rows:
        print()
        print("| path | rule (screening at every step) | time (s) | off / rule | mean "
              "screening rate |")
        print("|---|---|---|---|---|")
        for name, rule, t, never, rate, default in rule_rows:
            label = f"{rule} (the default)" if default else rule
            print(f"| {name} | {label} | {t:.3f} | {never / t:.2f}x | {rate:.1%} |")


if __name__ == "__main__":
    main()
