"""The RBF SafeSVC path on one OpenMP thread against all of the machine's cores, with
the time of each parallel part.

Protocol: ``make_classification(n, 20, n_informative=10, flip_y=0.05,
random_state=0)`` standardised, 80% for training (``train_test_split(test_size=0.2,
random_state=0)``), ``gamma=0.05``, ten values of C in ``logspace(-1, 2, 10)``, a
warm-started path at the default tol. One side runs with ``n_jobs=1`` under
``threadpool_limits(1, user_api="openmp")``, the other with the default (every core);
BLAS has one thread on both (as in every fit). The sides alternate in one run, and each
gets the best of ``--repeats`` walks (wall time; CPU time of the same walk).

The parallel parts are timed by wrapping the compiled functions the package calls (wall
time of every call, summed): kernel blocks (rows of the row caches and of the
certificate, their exponential included), the compensated margins of the certificate
and the next reference, the plain row sums of the solvers' gradients, the row copies,
the gap terms and the gap-ball masks, the greedy solver's loop (its scans and gradient
updates on a team of threads; the decisions between them are serial) and the Newton
steps' tiled factorisations and solves. What is left is serial: the Python steps
between them, the kernel cache's bookkeeping, the Newton blocks' gathers.

Run: python benchmarks/bench_parallel.py [--sizes 16000 32000] [--repeats 2]
Writes the section "Parallel loops" of doc/benchmarks.md and prints it.

``--part loops`` times the parallel functions alone on the path's shapes (16,000
samples, 20 features), one thread against all, alternated, best of ``--repeats`` calls
(short calls: the best of many is the time when no other process held a core), and
prints a table (nothing written).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import platform
import time
from collections import defaultdict

import numpy as np
from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import sklearn_safescreen.problems.box_qp as box_qp
import sklearn_safescreen.problems.kernels as kernels
import sklearn_safescreen.screening.balls as balls
import sklearn_safescreen.solvers.dual_cd as dual_cd
import sklearn_safescreen.solvers.greedy_cd as greedy_cd
import sklearn_safescreen.solvers.newton as newton
import sklearn_safescreen.solvers.row_cache as row_cache
from sklearn_safescreen import SafeSVC
from sklearn_safescreen._utils import openmp

#: (module, name, part) of every parallel compiled function on the RBF path
PARTS = [
    (kernels, "symmetric_kernel_block", "kernel blocks"),
    (kernels, "dot2_add_rows", "compensated margins"),
    (kernels, "dot2_accumulate", "compensated margins"),
    (kernels, "add_rows", "row sums"),
    (row_cache, "add_rows", "row sums"),
    (newton, "add_rows", "row sums"),
    (dual_cd, "add_rows", "row sums"),
    (kernels, "gather_signed_rows", "row copies"),
    (row_cache, "gather_signed_rows", "row copies"),
    (box_qp, "gap_terms", "gap terms"),
    (balls, "gap_ball_masks", "gap-ball masks"),
    (greedy_cd, "greedy_updates", "greedy loop"),
    (newton, "tiled_cholesky", "Newton factorisations and solves"),
    (newton, "tiled_cho_solve", "Newton factorisations and solves"),
]

SPENT: dict[str, float] = defaultdict(float)


def _timed(func, part):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            SPENT[part] += time.perf_counter() - t0

    return wrapper


def instrument() -> None:
    for module, name, part in PARTS:
        setattr(module, name, _timed(getattr(module, name), part))


def data(n_train: int):
    n = int(round(n_train / 0.8))
    X, y = make_classification(n, 20, n_informative=10, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.2, random_state=0)
    return X_train, y_train


def walk(X, y, Cs, threads: int):
    """One warm-started path; returns (wall, cpu, parts' wall, dual coefficients)."""
    SPENT.clear()
    est = SafeSVC(kernel="rbf", gamma=0.05, warm_start=True,
                  n_jobs=1 if threads == 1 else None)
    limit = 1 if threads == 1 else None
    with threadpool_limits(limits=limit, user_api="openmp"):
        w0, c0 = time.perf_counter(), time.process_time()
        for C in Cs:
            est.set_params(C=C).fit(X, y)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return wall, cpu, dict(SPENT), est.dual_coef_.copy()


def bench_loops(repeats: int) -> None:
    from sklearn_safescreen.problems._box_qp_fast import (
        add_rows,
        dot2_add_rows,
        row_sq_norms,
        symmetric_kernel_block,
    )

    rng = np.random.default_rng(0)
    n, d, n_all = 16000, 20, openmp.effective_n_threads()
    X = rng.standard_normal((n, d))
    Xt, sq = np.ascontiguousarray(X.T), row_sq_norms(X)
    R = rng.standard_normal((4000, n))
    rows, coef = np.arange(4000, dtype=np.int64), rng.standard_normal(4000)
    acc = [np.zeros(n) for _ in range(3)]
    cases = {f"kernel block {r} x {n} (RBF)": (
        lambda nt, r=r: symmetric_kernel_block(X[:r].copy(), sq[:r], Xt, sq, 1, 0.05, 0.0,
                                               1.0, n_threads=nt)) for r in (1, 16, 512)}
    cases[f"compensated margins, 4000 cached rows x {n}"] = (
        lambda nt: dot2_add_rows(*acc, R, rows, coef, n_threads=nt))
    cases[f"row sums, 4000 cached rows x {n}"] = (
        lambda nt: add_rows(acc[0], R, rows, coef, n_threads=nt))
    print(f"| loop | 1 thread | {n_all} threads | speed-up |\n|---|---|---|---|")
    for name, run in cases.items():
        best = {1: np.inf, n_all: np.inf}
        for _ in range(repeats):
            for nt in best:
                t0 = time.perf_counter()
                run(nt)
                best[nt] = min(best[nt], time.perf_counter() - t0)
        print(f"| {name} | {best[1] * 1e3:.2f} ms | {best[n_all] * 1e3:.2f} ms | "
              f"{best[1] / best[n_all]:.2f}x |", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[16000, 32000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--part", choices=["path", "loops"], default="path")
    args = parser.parse_args()
    if args.part == "loops":
        bench_loops(args.repeats)
        return
    instrument()
    Cs = np.logspace(-1, 2, 10)
    n_all = openmp.effective_n_threads()
    started = datetime.datetime.now(datetime.timezone.utc)
    loads = [os.getloadavg()[0]]
    rows, part_rows = [], []
    for n_train in args.sizes:
        X, y = data(n_train)
        best = {}
        for _ in range(args.repeats):
            for threads in (1, n_all):
                out = walk(X, y, Cs, threads)
                loads.append(os.getloadavg()[0])
                print(f"n={n_train} threads={threads}: wall {out[0]:.1f} s, cpu "
                      f"{out[1]:.1f} s, load {loads[-1]:.2f}", flush=True)
                if threads not in best or out[0] < best[threads][0]:
                    best[threads] = out
        one, many = best[1], best[n_all]
        assert np.array_equal(one[3], many[3]), "the paths differ"
        parallel_one = sum(one[2].values())
        frac = parallel_one / one[0]
        amdahl = 1.0 / ((1.0 - frac) + frac / n_all)
        rows.append(f"| {n_train:,} | {one[0]:.1f} s / {one[1]:.1f} s | {many[0]:.1f} s / "
                    f"{many[1]:.1f} s | **{one[0] / many[0]:.2f}x** | {frac:.0%} | "
                    f"{amdahl:.2f}x |")
        for part in sorted(one[2]):
            t1, tn = one[2][part], many[2].get(part, float("nan"))
            part_rows.append(f"| {n_train:,} | {part} | {t1:.2f} s | {tn:.2f} s | "
                             f"{t1 / tn:.2f}x | {t1 / one[0]:.0%} |")
    text = "\n".join([
        "## Parallel loops",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {platform.machine()} "
        f"({os.cpu_count()} cores, shared with other jobs), Python "
        f"{platform.python_version()}, by `python benchmarks/bench_parallel.py "
        f"--sizes {' '.join(map(str, args.sizes))} --repeats {args.repeats}`; 1-min load "
        f"average from {min(loads):.2f} to {max(loads):.2f} during the run. The "
        "protocol (RBF, gamma=0.05, ten C in logspace(-1, 2), warm-started path, default "
        f"tol); one OpenMP thread against {n_all}, sides alternated, best of "
        f"{args.repeats} walks each; the two paths' dual coefficients are identical bit "
        "for bit.",
        "",
        f"| training samples | 1 thread: wall / CPU | {n_all} threads: wall / CPU | "
        "speed-up (wall) | parallel share of the 1-thread path | Amdahl's bound |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "Wall time in each parallel part (summed over its calls), one thread against "
        f"{n_all}, and its share of the one-thread path:",
        "",
        f"| training samples | part | 1 thread | {n_all} threads | speed-up | share |",
        "|---|---|---|---|---|---|",
        *part_rows,
        "",
    ])
    print(text)
    write_section("## Parallel loops", text)


if __name__ == "__main__":
    main()
