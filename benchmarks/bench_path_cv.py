"""Benchmark of RegularizationPathCV against GridSearchCV.

Setup: SafeSVC (linear), 5 stratified folds, 30 values geometrically from
C_min (of the whole data) up to 10, on make_classification(n_samples=20000,
n_features=50, n_informative=20, flip_y=0.05, random_state=0). Timed, on the same grid
and folds (all with refit=True):

* RegularizationPathCV(SafeSVC), n_jobs=1 and n_jobs=2;
* GridSearchCV(SafeSVC), n_jobs=1 (cold fits, no warm starts);
* GridSearchCV(LinearSVC(loss="hinge", dual=True)), n_jobs=1, scikit-learn's defaults
  (tol=1e-4, max_iter=1000: it stops at max_iter at large C, which only makes it faster).

Also checks that RegularizationPathCV and GridSearchCV(SafeSVC) give the same
mean_test_score and best_params_. All ratios come from one run. Writes the section
"RegularizationPathCV" of doc/benchmarks.md and prints it.

Run: python benchmarks/bench_path_cv.py [--quick] [--no-doc]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
import warnings

import numpy as np
from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import make_grid
from sklearn_safescreen.svm import SafeSVC

SECTION = "## RegularizationPathCV"


def timed(fn, cpu: dict | None = None, key: str = ""):
    """Wall time of ``fn()``; its CPU time of this process goes to ``cpu[key]`` (robust
    to other jobs sharing the machine, meaningful for n_jobs=1 only)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    if cpu is not None:
        cpu[key] = time.process_time() - c0
    return out, wall


def run(quick: bool, lsvc_max_iter: int, tol: float) -> tuple[list[str], dict]:
    n, n_values = (4000, 10) if quick else (20000, 30)
    X, y = make_classification(n_samples=n, n_features=50, n_informative=20, flip_y=0.05,
                               random_state=0)
    svc = SafeSVC(kernel="linear", tol=tol, random_state=0)
    grid = make_grid(svc, X, y, n_values=n_values, stop=10.0)
    folds = StratifiedKFold(5)
    print(f"data {n} x 50, {len(grid)} values C = {grid[0]:.4g} .. {grid[-1]:.4g}, 5 folds",
          flush=True)

    times, fitted, cpu = {}, {}, {}
    load = os.getloadavg()[0]
    # n_jobs=2 twice: the first call pays the start-up of joblib's loky worker processes
    # (each imports numpy, scikit-learn and this package), the second reuses them
    for key, jobs in (("path1", 1), ("path2", 2), ("path2_warm", 2)):
        search = RegularizationPathCV(svc, values=grid, cv=folds, n_jobs=jobs)
        fitted[key], times[key] = timed(lambda s=search: s.fit(X, y), cpu, key)
        print(f"RegularizationPathCV(SafeSVC) n_jobs={jobs} ({key}): {times[key]:.2f} s",
              flush=True)
    gs = GridSearchCV(svc, {"C": list(grid)}, cv=folds, n_jobs=1)
    fitted["grid_safe"], times["grid_safe"] = timed(lambda: gs.fit(X, y), cpu, "grid_safe")
    print(f"GridSearchCV(SafeSVC): {times['grid_safe']:.2f} s", flush=True)
    lsvc = GridSearchCV(LinearSVC(loss="hinge", dual=True, max_iter=lsvc_max_iter,
                                  random_state=0), {"C": list(grid)}, cv=folds, n_jobs=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        fitted["grid_lsvc"], times["grid_lsvc"] = timed(lambda: lsvc.fit(X, y), cpu,
                                                        "grid_lsvc")
    n_capped = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    print(f"GridSearchCV(LinearSVC): {times['grid_lsvc']:.2f} s ({n_capped} fits at "
          f"max_iter={lsvc_max_iter})", flush=True)

    # what a converged LinearSVC costs at the largest C (fold 0): its default max_iter
    # stops early there, so the grid search above did not solve the same problems
    train = next(folds.split(X, y))[0]
    conv = LinearSVC(loss="hinge", dual=True, C=float(grid[-1]), max_iter=20 * lsvc_max_iter,
                     random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, t_conv = timed(lambda: conv.fit(X[train], y[train]))
    one = SafeSVC(kernel="linear", C=float(grid[-1]), tol=tol, random_state=0)
    _, t_one = timed(lambda: one.fit(X[train], y[train]))
    print(f"LinearSVC at C={grid[-1]:.3g}, fold 0, max_iter={20 * lsvc_max_iter}: "
          f"{t_conv:.2f} s, {conv.n_iter_} iterations; SafeSVC cold fit {t_one:.2f} s",
          flush=True)

    path = fitted["path1"]
    diff = np.max(np.abs(path.cv_results_["mean_test_score"]
                         - fitted["grid_safe"].cv_results_["mean_test_score"]))
    diff_l = np.max(np.abs(path.cv_results_["mean_test_score"]
                           - fitted["grid_lsvc"].cv_results_["mean_test_score"]))
    same_best = path.best_params_["C"] == fitted["grid_safe"].best_params_["C"]
    rates = path.cv_results_["mean_screening_rate"]
    fit_times = path.cv_results_["mean_fit_time"]
    fit_times_gs = fitted["grid_safe"].cv_results_["mean_fit_time"]
    fit_times_l = fitted["grid_lsvc"].cv_results_["mean_fit_time"]
    scores = path.cv_results_["mean_test_score"]

    lines = [
        SECTION,
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores (shared with other jobs: timings are noisy), Python "
        f"{platform.python_version()}, by `python benchmarks/bench_path_cv.py"
        f"{' --quick' if quick else ''}"
        f"{f' --linearsvc-max-iter {lsvc_max_iter}' if lsvc_max_iter != 1000 else ''}"
        f"{f' --tol {tol:g}' if tol != 1e-4 else ''}`. "
        f"Load average (1 min) at the start: {load:.2f}, at the end: "
        f"{os.getloadavg()[0]:.2f}. BLAS limited to one thread (threadpoolctl); CPU times "
        "are those of the main process (the n_jobs=1 runs).",
        "",
        f"make_classification({n} x 50, n_informative=20, flip_y=0.05), SafeSVC(kernel="
        f"\"linear\", tol={tol:g}) (relative duality gap), 5 stratified folds, "
        f"{len(grid)} values of C from C_min = {grid[0]:.4g} to 10 (geometric), refit=True.",
        "",
        "| search | wall time (s) | CPU time (s) | RegularizationPathCV speed-up "
        "(wall / CPU) |",
        "|---|---|---|---|",
        f"| RegularizationPathCV(SafeSVC), n_jobs=1 | {times['path1']:.2f} | "
        f"{cpu['path1']:.2f} | 1.0x |",
        f"| RegularizationPathCV(SafeSVC), n_jobs=2, first call (starts the workers) | "
        f"{times['path2']:.2f} | (workers) | {times['path1'] / times['path2']:.2f}x the "
        "speed of n_jobs=1 (wall) |",
        f"| RegularizationPathCV(SafeSVC), n_jobs=2, workers already started | "
        f"{times['path2_warm']:.2f} | (workers) | {times['path1'] / times['path2_warm']:.2f}x "
        "the speed of n_jobs=1 (wall) |",
        f"| GridSearchCV(SafeSVC), n_jobs=1 | {times['grid_safe']:.2f} | "
        f"{cpu['grid_safe']:.2f} | {times['grid_safe'] / times['path1']:.1f}x / "
        f"{cpu['grid_safe'] / cpu['path1']:.1f}x |",
        f"| GridSearchCV(LinearSVC(loss=\"hinge\", dual=True, max_iter={lsvc_max_iter})), "
        f"n_jobs=1 | {times['grid_lsvc']:.2f} | {cpu['grid_lsvc']:.2f} | "
        f"{times['grid_lsvc'] / times['path1']:.1f}x / "
        f"{cpu['grid_lsvc'] / cpu['path1']:.1f}x |",
        "",
        f"Same answer: max |mean_test_score difference| vs GridSearchCV(SafeSVC) = "
        f"{diff:.1e}, best C identical: {same_best} (C = {path.best_params_['C']:.4g}"
        + ("" if same_best else
           f" against {fitted['grid_safe'].best_params_['C']:.4g}; mean scores "
           f"{path.best_score_:.5f} and {fitted['grid_safe'].best_score_:.5f}: the two "
           "searches' solutions agree to the solver tolerance, and near-tied values can "
           "swap") + "). "
        f"LinearSVC hit max_iter={lsvc_max_iter} in {n_capped} of {5 * len(grid) + 1} fits; its "
        f"scores differ by up to {diff_l:.1e}.",
        "",
        f"A converged LinearSVC costs more: at C = {grid[-1]:.3g} on fold 0, "
        f"LinearSVC(max_iter={20 * lsvc_max_iter}) took {t_conv:.2f} s "
        f"({conv.n_iter_} iterations{' = max_iter' if conv.n_iter_ >= 20 * lsvc_max_iter else ''}"
        f"), a cold SafeSVC fit {t_one:.2f} s.",
        "",
        "Per value (mean over folds):",
        "",
        "| C | screened | path fit (s) | SafeSVC cold fit (s) | LinearSVC fit (s) | "
        "CV accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for k, C in enumerate(grid):
        lines.append(f"| {C:.4g} | {rates[k]:.1%} | {fit_times[k]:.3f} | "
                     f"{fit_times_gs[k]:.3f} | {fit_times_l[k]:.3f} | {scores[k]:.4f} |")
    lines.append("")
    # CPU times of this process: meaningful for the searches on one job (n_jobs=1)
    summary = {"times": times, "cpu": cpu, "diff": diff, "diff_lsvc": diff_l,
               "same_best": same_best}
    return lines, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4000 samples, 10 values (a smoke run)")
    parser.add_argument("--linearsvc-max-iter", type=int, default=1000, metavar="N",
                        help="LinearSVC's max_iter (default: scikit-learn's 1000)")
    parser.add_argument("--tol", type=float, default=1e-4,
                        help="SafeSVC's tol, the relative duality gap (default: 1e-4, "
                        "SafeSVC's default)")
    parser.add_argument("--no-doc", action="store_true",
                        help="print only; do not write doc/benchmarks.md")
    args = parser.parse_args()
    # one BLAS thread everywhere: n_jobs=1 runs are single-threaded, n_jobs=2 uses two
    # processes (joblib limits its workers the same way), and oversubscribed BLAS threads
    # on a shared machine do not distort the comparison
    with threadpool_limits(1):
        lines, _ = run(args.quick, args.linearsvc_max_iter, args.tol)
    text = "\n".join(lines)
    print(text)
    if args.no_doc:
        return
    write_section(SECTION, text)


if __name__ == "__main__":
    main()
