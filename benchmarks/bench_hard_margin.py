"""Hard-margin SafeSVC fits (very large C, and C = inf) against SVC.

On standardised breast cancer (569 x 30) and a linearly separable 10,000 x 20 set
(Gaussian samples labelled by the sign of a random direction, those within 5% of a
standard deviation of the boundary removed, so that both classes have a margin), with
the linear and the RBF kernel: ``SafeSVC(kernel=k, C=C).fit`` for C in {1e6, 1e9,
1e12, inf} against ``SVC(kernel=k, C=C)`` (C = 1e12 for inf, which SVC does not
take), each fit from scratch. CPU time (``time.process_time``) on one thread, the two
sides alternated, best of ``--repeats`` runs; the SafeSVC fits must certify their gap
(a warning would be an error here), and the table gives the share of training
predictions equal to SVC's. Prints a table; writes nothing.

Run: python benchmarks/bench_hard_margin.py [--repeats 2] [--datasets cancer separable]
         [--kernels linear rbf]
(from the clone with ``PYTHONPATH=.`` to time its package rather than an installed one).
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC

CS = [1e6, 1e9, 1e12, np.inf]


def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def separable(n: int = 10_000, d: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    m = X @ rng.standard_normal(d)
    keep = np.abs(m) > 0.05 * m.std()
    return X[keep], (m[keep] > 0).astype(int)


DATASETS = {"cancer": cancer, "separable": separable}


def timed(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS),
                        choices=DATASETS)
    parser.add_argument("--kernels", nargs="+", default=["linear", "rbf"])
    args = parser.parse_args()
    print("| data | kernel | C | SafeSVC (s) | SVC (s) | SafeSVC / SVC | predictions "
          "equal to SVC's |")
    print("|---|---|---|---|---|---|---|")
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("error")  # an uncertified fit would warn
        for name in args.datasets:
            X, y = DATASETS[name]()
            for kernel in args.kernels:
                for C in CS:
                    sides = {"safe": partial(SafeSVC(kernel=kernel, C=C).fit, X, y),
                             "svc": partial(SVC(kernel=kernel, C=min(C, 1e12)).fit, X, y)}
                    times = {"safe": [], "svc": []}
                    models = {}
                    for r in range(args.repeats):
                        for side in (["safe", "svc"] if r % 2 == 0 else ["svc", "safe"]):
                            t, models[side] = timed(sides[side])
                            times[side].append(t)
                    s, v = min(times["safe"]), min(times["svc"])
                    equal = np.mean(models["safe"].predict(X) == models["svc"].predict(X))
                    print(f"| {name} {X.shape[0]} x {X.shape[1]} | {kernel} | {C:g} | "
                          f"{s:.3f} | {v:.3f} | {s / v:.2f} | {equal:.2%} |", flush=True)


if __name__ == "__main__":
    main()
