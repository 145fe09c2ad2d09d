"""The LP-SVM core (problem, rules, column-and-row generation with a live HiGHS model,
driven by the path engine :class:`~sklearn_safescreen.engine.lp_svm.LPSVMPath`) along a
path, against what a user writes today: ``scipy.optimize.linprog(method="highs")`` on
the full linear program at each value, cold.

Data (``--data``): ``dense`` is ``make_classification(2000 x 2000, n_informative=30,
random_state=0)``; ``sparse`` is ``make_sparse_text_classification(4000 x 10000,
random_state=0)`` (the real-sim-shaped generator, reduced). Labels ``+-1``, no
intercept. Path: 30 values log-spaced from ``lambda_max`` down to ``1e-3 lambda_max``
(``--values K``: the first K only). CPU time (``time.process_time``), one thread
(``OMP_NUM_THREADS=1`` and threadpoolctl). The full-LP side is slow (minutes per value
at the small end), so it is run once and stored, then compared::

    python benchmarks/bench_lp_svm_core.py --side full --out full.json
    python benchmarks/bench_lp_svm_core.py --side core --rule simultaneous --out core.json
    python benchmarks/bench_lp_svm_core.py --compare full.json core.json

``--rule`` is the engine's screening mode (``simultaneous``, ``features``,
``samples``, ``none``).

``--side synergy`` prints the fractions the rules screen at the first values of the
grid, from the exact previous solution, with and without the synergy (the theory
page's table).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.optimize import linprog  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

N_VALUES = 30
LOWEST = 1e-3


def dataset(kind="dense"):
    if kind == "sparse":
        from sklearn_safescreen.datasets import make_sparse_text_classification

        X, y = make_sparse_text_classification(4000, 10000, random_state=0)
        X = sp.csr_matrix(X)
    else:
        X, y = make_classification(2000, 2000, n_informative=30, random_state=0)
    y = np.asarray(y, dtype=np.float64)
    return X, np.where(y > 0, 1.0, -1.0)


def grid(X, y):
    n = X.shape[0]
    lam_max = float(np.abs(np.asarray(X.T @ y)).max()) / n
    return lam_max * np.logspace(0, np.log10(LOWEST), N_VALUES)


def primal(X, y, w, lam):
    return lam * np.abs(w).sum() + np.maximum(1.0 - y * np.asarray(X @ w).ravel(),
                                              0.0).mean()


def full_lp(X, y, lam):
    """The LP as a user writes it: w = w+ - w-, slacks xi, one inequality per sample."""
    n, d = X.shape
    Z = sp.csr_matrix(X).multiply(y[:, None]).tocsr()
    c = np.r_[np.full(2 * d, lam), np.full(n, 1.0 / n)]
    A = sp.hstack([-Z, Z, -sp.eye(n)], format="csc")
    res = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs")
    return res.x[:d] - res.x[d:2 * d]


def run_full(X, y, lams, out=None):
    rows = []
    for lam in lams:
        t0 = time.process_time()
        w = full_lp(X, y, lam)
        rows.append(dict(lam=float(lam), time=time.process_time() - t0,
                         objective=float(primal(X, y, w, lam)),
                         support=int(np.count_nonzero(w))))
        print(rows[-1], flush=True)
        save(rows, out)
    return rows


def run_core(X, y, lams, out=None, rule="simultaneous"):
    """The path through the engine, one step per value; per value the time, the LPs,
    the screening counts, the rules' time, and the live HiGHS model's size (rows,
    columns) and simplex iterations so far (None without scipy's HiGHS bindings)."""
    from sklearn_safescreen.engine.lp_svm import LPSVMPath
    from sklearn_safescreen.engine.protocol import StepSettings
    from sklearn_safescreen.problems.lp_svm import LPSVMData

    data = LPSVMData(X, y)
    path = LPSVMPath(data)
    settings = StepSettings(rule=rule, tol=1e-9, max_iter=500)
    rows = []
    for lam in lams:
        report = path.new_report()
        t0 = time.process_time()
        step = path.fit(lam, settings, report)
        elapsed = time.process_time() - t0
        res, model, counts = step.reference, path.model, report.counts
        screened = [e for e in report.events if e.moment == "reference"]
        row = dict(lam=float(lam), time=elapsed,
                   objective=float(primal(X, y, res.w, lam)), gap=float(step.gap),
                   rel_gap=float(step.rel_gap), support=int(np.count_nonzero(res.w)),
                   lps=int(step.n_iter), features=counts["features"].n_screened,
                   at_zero=counts["samples"].n_lower, at_box=counts["samples"].n_upper,
                   rule_time=float(sum(e.rule_time for e in screened)),
                   screened=bool(screened), repairs=step.n_repairs,
                   model=None if model is None else list(model.size),
                   pivots=None if model is None else model.iterations)
        rows.append(row)
        print(row, flush=True)
        save(rows, out)
    return rows


def run_synergy(X, y, lams, count=10):
    """Fractions screened at the first ``count`` values below lambda_max, each from the
    exact solution at the previous value, with and without the synergy."""
    from sklearn_safescreen.problems.lp_svm import LPSVMData
    from sklearn_safescreen.screening.lp_svm import screen_lp_svm
    from sklearn_safescreen.solvers.lp_highs import solve_lp_svm

    data = LPSVMData(X, y)
    n, d = X.shape
    w, alpha = np.zeros(d), data.alpha_at_zero()
    rows = []
    for lam in lams[1:count + 1]:
        both = screen_lp_svm(data, lam, w, alpha)
        alone = screen_lp_svm(data, lam, w, alpha, synergy=False)
        rows.append(dict(ratio=float(lam / lams[0]),
                         features=(alone.n_features / d, both.n_features / d),
                         at_zero=(alone.at_zero.sum() / n, both.at_zero.sum() / n),
                         at_box=(alone.at_box.sum() / n, both.at_box.sum() / n),
                         rounds=both.rounds))
        print(rows[-1], flush=True)
        res = solve_lp_svm(data, lam, w_start=w, alpha_start=alpha)
        w, alpha = res.w, res.alpha
    return rows


def compare(full, core):
    """Times and objectives over the values both runs completed (a run interrupted
    part-way leaves its completed values in its output)."""
    k = min(len(full), len(core))
    full, core = full[:k], core[:k]
    t_full = sum(r["time"] for r in full)
    t_core = sum(r["time"] for r in core)
    rel = [abs(a["objective"] - b["objective"]) / max(a["objective"], 1e-300)
           for a, b in zip(full, core, strict=True)]
    print(f"{k} values: full LP, cold: {t_full:.1f} s CPU; core: {t_core:.1f} s CPU; "
          f"ratio {t_full / t_core:.1f}x; max relative objective difference {max(rel):.2e}")
    for a, b, r in zip(full, core, rel, strict=True):
        print(f"lambda/lambda_max={a['lam'] / full[0]['lam']:.2e}  full {a['time']:7.2f} s"
              f"  core {b['time']:6.2f} s ({b.get('lps', 0)} LPs, rules "
              f"{b.get('rule_time', 0.0):.2f} s)  support {a['support']:4d}/{b['support']:4d}"
              f"  screened f={b.get('features', 0)} zero={b.get('at_zero', 0)} "
              f"box={b.get('at_box', 0)}  rel {r:.1e}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--side", choices=["full", "core", "synergy"])
    parser.add_argument("--data", choices=["dense", "sparse"], default="dense")
    parser.add_argument("--rule", default="simultaneous",
                        choices=["simultaneous", "features", "samples", "none"])
    parser.add_argument("--values", type=int, default=N_VALUES)
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args()
    if args.compare:
        with open(args.compare[0]) as f:
            full = json.load(f)
        with open(args.compare[1]) as f:
            core = json.load(f)
        compare(full, core)
        return
    X, y = dataset(args.data)
    lams = grid(X, y)[:args.values]
    with threadpool_limits(1):
        if args.side == "full":
            rows = run_full(X, y, lams, args.out)
        elif args.side == "synergy":
            rows = run_synergy(X, y, lams)
        else:
            rows = run_core(X, y, lams, args.out,
                            rule=None if args.rule == "none" else args.rule)
    save(rows, args.out)


def save(rows, out):
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
