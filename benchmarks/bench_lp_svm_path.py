"""The exact path of the LP-SVM (``lp_svm_path``, every breakpoint) against cold HiGHS on
the full LP at the 30 grid values of ``bench_lp_svm_core.py``.

Data: ``--data dense`` or ``sparse`` are that benchmark's data sets (its stored full-LP
runs, ``benchmarks/results/lp_svm_full_*.json``, give the cold HiGHS times and
objectives, so HiGHS is not rerun); ``--shape N D`` is
``make_classification(N, D, n_informative=30, random_state=0)``, for which
``--highs`` times cold HiGHS at the 30 values here. Labels +-1, no intercept; path from
``lambda_max`` to ``1e-3 lambda_max``. CPU time (``time.process_time``), one thread.

``--factor dense|lu`` picks the basis factor (default: the solver's choice, the sparse LU
for sparse X), to compare the two on the same data; ``--text N D`` is
``make_sparse_text_classification(N, D, random_state=0)`` (the sparse set's generator)
at a smaller size.

Prints the breakpoints, the path's CPU time, the time per breakpoint by support size
``k`` (the margin matrix is k x k), the ratio to cold HiGHS, and the largest relative
difference between the path's objective read at each grid value and HiGHS's::

    python benchmarks/bench_lp_svm_path.py --data dense
    python benchmarks/bench_lp_svm_path.py --shape 600 600 --highs
    python benchmarks/bench_lp_svm_path.py --text 2000 5000 --factor dense
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lp_svm_core import dataset, full_lp, grid, primal  # noqa: E402

BINS = [0, 50, 100, 200, 400, 700, 1000, 1500, 2500, 5000]


def follow(X, y, lam_min, factor="auto"):
    """The path, timed breakpoint by breakpoint: ``(alphas, coefs, ks, times, total)``."""
    from sklearn_safescreen.problems.lp_svm import LPSVMData
    from sklearn_safescreen.solvers.lp_homotopy import PathFollower, make_core

    t0 = time.process_time()
    data = LPSVMData(X, y)
    follower = PathFollower(make_core(data, factor=factor), data)
    alphas, coefs, ks, times = [], [], [], []
    last = time.process_time()
    for p in follower.run(lam_min * data.lambda_max()):
        now = time.process_time()
        times.append(now - last)
        last = now
        alphas.append(p.lam)
        coefs.append((p.support, p.values))
        ks.append(len(p.support))
    total = time.process_time() - t0
    print(f"refactorisations {follower.n_refactor}, forced {follower.drift_events}, "
          f"largest drift {follower.max_drift:.2g}")
    return np.array(alphas), coefs, np.array(ks), np.array(times), total


def read_off(alphas, coefs, lam, d):
    k = np.searchsorted(-alphas, -lam, side="right") - 1
    w = np.zeros(d)
    if k >= 0:
        support, values = coefs[k]
        w[support] = values
    return w


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", choices=["dense", "sparse"])
    parser.add_argument("--shape", nargs=2, type=int)
    parser.add_argument("--text", nargs=2, type=int)
    parser.add_argument("--factor", choices=["auto", "dense", "lu"], default="auto")
    parser.add_argument("--highs", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.shape:
        X, y = make_classification(*args.shape, n_informative=30, random_state=0)
        y = np.where(y > 0, 1.0, -1.0)
        full = None
    elif args.text:
        from sklearn_safescreen.datasets import make_sparse_text_classification

        X, y = make_sparse_text_classification(*args.text, random_state=0)
        X = sp.csr_matrix(X)
        y = np.where(np.asarray(y) > 0, 1.0, -1.0)
        full = None
    else:
        X, y = dataset(args.data)
        with open(HERE / "results" / f"lp_svm_full_{args.data}.json") as f:
            full = json.load(f)
    lams = grid(X, y)
    with threadpool_limits(1):
        alphas, coefs, ks, times, total = follow(X, y, lams[-1] / lams[0],
                                                 args.factor)
        if args.highs:
            full = []
            for lam in lams:
                t0 = time.process_time()
                w = full_lp(X, y, lam)
                full.append(dict(lam=float(lam), time=time.process_time() - t0,
                                 objective=float(primal(X, y, w, lam))))
    d = X.shape[1]
    print(f"{X.shape}, factor {args.factor}: {len(alphas)} breakpoints, path {total:.2f} s CPU "
          f"({1e3 * total / len(alphas):.3f} ms a breakpoint), largest support "
          f"{ks.max()}, median {np.median(ks):.0f}, last breakpoint "
          f"{alphas[-1] / alphas[0]:.3g} lambda_max; "
          f"{np.mean(alphas < 0.05 * alphas[0]):.0%} below 0.05 lambda_max")
    for lo, hi in zip(BINS[:-1], BINS[1:], strict=True):
        m = (ks >= lo) & (ks < hi)
        if m.any():
            print(f"  k in [{lo}, {hi}): {m.sum():6d} breakpoints, "
                  f"{1e3 * times[m].mean():.3f} ms each")
    result = dict(shape=list(X.shape), factor=args.factor, breakpoints=len(alphas),
                  time=total, max_k=int(ks.max()))
    if full:
        t_full = sum(r["time"] for r in full)
        rel = max(abs(primal(X, y, read_off(alphas, coefs, r["lam"], d), r["lam"])
                      - r["objective"]) / r["objective"] for r in full)
        print(f"cold HiGHS at the 30 values: {t_full:.1f} s CPU; ratio "
              f"{t_full / total:.1f}x; largest relative objective difference {rel:.1e}")
        result.update(highs=t_full, ratio=t_full / total, objective_rel=rel)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
