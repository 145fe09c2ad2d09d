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

Writes ``benchmarks/results/summary_<mode>.json`` and ``.csv``, a figure per family and
the summary figure under ``doc/_static/benchmarks/``, and the summary table between the
markers of ``doc/benchmarks.md``.

Run: python -m benchmarks [--quick | --full] [--only NAME ...] [--no-doc]
     (or python benchmarks/run.py ...); ``--quick`` (the default) runs small data in a
     few minutes, ``--full`` the report's sizes (an hour or more on two cores).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
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
from sklearn.datasets import load_wine, make_classification  # noqa: E402
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
#: The generated summary sits between these two lines of ``doc/benchmarks.md``.
START = "<!-- benchmarks/run.py: summary start -->"
END = "<!-- benchmarks/run.py: summary end -->"


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
    ratios); returns the paths written, relative to ``doc/``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    FIGURES.mkdir(parents=True, exist_ok=True)
    written = []
    for row in rows:
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
        path = FIGURES / f"{row['family']}.png"
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
    path = FIGURES / "summary.png"
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


def write_doc(text: str, doc: Path = DOC) -> None:
    """Replace what lies between :data:`START` and :data:`END` in ``doc``."""
    old = doc.read_text()
    i, j = old.find(START), old.find(END)
    if i < 0 or j < i:
        raise SystemExit(f"{doc} has no summary markers ({START!r} ... {END!r})")
    doc.write_text(old[:i + len(START)] + "\n\n" + text.rstrip() + "\n\n" + old[j:])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks",
                                 description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small data, a few minutes "
                      "(the default)")
    mode.add_argument("--full", action="store_true", help="the report's sizes")
    ap.add_argument("--only", nargs="+", choices=sorted(FAMILIES),
                    help="these families (the others' rows are kept from the last run)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="repetitions per side (default: 1 quick, 2 full)")
    ap.add_argument("--no-doc", action="store_true",
                    help="write the results and figures, not doc/benchmarks.md")
    args = ap.parse_args(argv)
    quick = not args.full
    name = "quick" if quick else "full"
    repeats = args.repeats or (1 if quick else 2)
    out = RESULTS / f"summary_{name}.json"
    # rows of the families not run this time are kept from the last run of this mode
    kept = {}
    if args.only and out.exists():
        kept = {r["family"]: r for r in json.loads(out.read_text())["rows"]}
    t0 = time.time()
    for family in args.only or FAMILIES:
        t, load = time.time(), _load()
        row = FAMILIES[family](quick, repeats)
        row.update(date=_today(), load=f"{load} -> {_load()}", repeats=repeats)
        kept[family] = row
        print(f"{family:14s} package {row['package_cpu']:8.2f} s  instead "
              f"{row['other_cpu']:8.2f} s  {row['ratio']:6.2f}x  {row['exactness']}  "
              f"({time.time() - t:.0f} s, load {row['load']})", flush=True)
    rows = [kept[f] for f in FAMILIES if f in kept]
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


if __name__ == "__main__":
    main()
