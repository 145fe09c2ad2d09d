"""``python -m sklearn_safescreen``: walk a SafeSVC regularisation path on a shipped
dataset and print the screening table (value, screened samples, gap, time, accuracy)."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .datasets import load_standardized_breast_cancer
from .svm import SafeSVC


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_safescreen",
        description="Fit a SafeSVC regularisation path with warm starts (each solution "
        "screens the next problem) on the standardised breast-cancer data shipped with "
        "scikit-learn, and print what screening removed at each value.")
    parser.add_argument("--kernel", default="linear", choices=["linear", "rbf", "poly"],
                        help="SVM kernel (default: linear)")
    parser.add_argument("--screening", default="IT",
                        choices=["IT", "BT1", "BT2", "DVI", "none"],
                        help="screening rule (default: IT)")
    parser.add_argument("--c-min", type=float, default=1e-3, help="smallest C (1e-3)")
    parser.add_argument("--c-max", type=float, default=1e2, help="largest C (1e2)")
    parser.add_argument("--n-values", type=int, default=20,
                        help="number of C values, log-spaced (20)")
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="relative duality gap (1e-6)")
    args = parser.parse_args(argv)
    if not (0 < args.c_min < args.c_max) or args.n_values < 1 or args.tol <= 0:
        parser.error("need 0 < --c-min < --c-max, --n-values >= 1 and --tol > 0")
    return args


def main(argv=None) -> int:
    args = _parse(argv)
    X, y = load_standardized_breast_cancer()
    screening = None if args.screening == "none" else args.screening
    model = SafeSVC(kernel=args.kernel, screening=screening, tol=args.tol, warm_start=True,
                    gamma=1.0 / X.shape[1], max_iter=100000, random_state=0)
    print(f"SafeSVC path on breast cancer ({X.shape[0]} x {X.shape[1]}), kernel="
          f"{args.kernel}, screening={args.screening}")
    print(f"{'C':>10} {'screened':>9} {'rate':>6} {'at 0':>6} {'at C':>6} "
          f"{'rel. gap':>9} {'time (s)':>9} {'train acc':>9}")
    total = 0.0
    for C in np.geomspace(args.c_min, args.c_max, args.n_values):
        t0 = time.perf_counter()
        model.set_params(C=C).fit(X, y)
        elapsed = time.perf_counter() - t0
        total += elapsed
        rep = model.screening_report_
        final = [e for e in rep.events if e.value == C and e.moment in ("reference", "dynamic")]
        n_lo = sum(e.n_lower for e in final)
        n_up = sum(e.n_upper for e in final)
        gap = model.dual_gap_[0] / max(abs(_dual_value(model)), 1e-300)
        print(f"{C:>10.4g} {rep.n_screened:>9d} {rep.screening_rate:>6.1%} {n_lo:>6d} "
              f"{n_up:>6d} {gap:>9.1e} {elapsed:>9.3f} {model.score(X, y):>9.3f}")
    print(f"total time {total:.2f} s")
    return 0


def _dual_value(model) -> float:
    ref = model._references[0]
    return float(ref.alpha.sum() - 0.5 * ref.alpha @ ref.margins)


if __name__ == "__main__":
    sys.exit(main())
