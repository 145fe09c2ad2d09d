"""SafeMetricLearner on data of the metric-learning papers' shapes (Yoshida et al. 2019).

The papers' large experiments (their Table 2 / 5) use data this machine cannot download,
so the sets here are synthetic, of the same shapes, reproducible from a seed
(``make_classification``, ``n_clusters_per_class=2``, scaled to [-1, 1] per feature):

======== ================ ====== ===== ============ =====================================
name     n x d            k      M     classes      informative / redundant features
======== ================ ====== ===== ============ =====================================
mnist    60,000 x 32      5      full  10           20 / 4
sensit   78,823 x 100     3      full  3            40 / 10
madelon  2,000 x 500      20     diag  2            5 / 15 (Madelon's own recipe)
gisette  6,000 x 5,000    15     diag  2            50 / 50
======== ================ ====== ===== ============ =====================================

The protocol is the papers': k-NN triplets, smoothed hinge (gamma = 0.05), lambda from the
critical value :math:`\\lambda_L` down by 0.9 until the loss-decrease stop rule (0.01),
relative duality gap 1e-6, warm starts; configurations ``screened`` (the estimator's
defaults: RRPB+PGB with range screening), ``none`` (no screening; stopped after
``--budget`` CPU seconds when it would take longer, and compared with the screened path
over the same steps) and, on Gisette, the papers' Table 2 protocol: ratio 0.99 with the
active-set heuristic and screening (``active-0.99``), whose authors' time is 127,124 s.

Each walk runs in its own process (its peak resident memory is the process's). Times are
process CPU seconds. Writes the section "SafeMetricLearner at the papers' scale" of
doc/benchmarks.md.

Run: python benchmarks/bench_metric_learning_scale.py [--only mnist,gisette] [--budget S]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

SHAPES = {
    "mnist": dict(n=60000, d=32, k=5, metric="full", classes=10, informative=20,
                  redundant=4),
    "sensit": dict(n=78823, d=100, k=3, metric="full", classes=3, informative=40,
                   redundant=10),
    "madelon": dict(n=2000, d=500, k=20, metric="diagonal", classes=2, informative=5,
                    redundant=15),
    "gisette": dict(n=6000, d=5000, k=15, metric="diagonal", classes=2, informative=50,
                    redundant=50),
}
CONFIGS = {
    "screened": dict(ratio=0.9, params={}),
    "none": dict(ratio=0.9, params=dict(screening=None, range_screening=False)),
    "active-0.99": dict(ratio=0.99, params=dict(active_set=True)),
}
AUTHORS_GISETTE_S = 127124  # the authors' active set with screening (Table 2)


def make_data(name: str):
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import MinMaxScaler

    s = SHAPES[name]
    X, y = make_classification(n_samples=s["n"], n_features=s["d"],
                               n_informative=s["informative"], n_redundant=s["redundant"],
                               n_classes=s["classes"], n_clusters_per_class=2,
                               random_state=0)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def walk(name: str, config: str, budget: float) -> dict:
    """One path in this process; a JSON-able record of it."""
    from sklearn_safescreen.metric_learning import SafeMetricLearner
    from sklearn_safescreen.path import critical_value

    X, y = make_data(name)
    s, c = SHAPES[name], CONFIGS[config]
    ml = SafeMetricLearner(k=s["k"], metric=s["metric"], tol=1e-6, max_iter=10**6,
                           warm_start=True, **c["params"])
    cpu0 = time.process_time()
    lam = critical_value(ml, X, y)  # builds the triplets, handed to the first fit
    build = time.process_time() - cpu0
    steps, prev, finished = [], None, False
    while len(steps) < 5000:
        t0 = time.process_time()
        ml.set_params(alpha=lam).fit(X, y)
        report = ml.screening_report_
        steps.append(dict(lam=lam, cpu=time.process_time() - t0,
                          solver=report.solver_time, iters=int(ml.n_iter_),
                          rate=report.screening_rate, loss=ml.loss_))
        if prev is not None and ((prev[1] - ml.loss_) / prev[1] * prev[0]
                                 / (prev[0] - lam)) < 0.01:
            finished = True
            break
        if time.process_time() - cpu0 > budget:
            break
        prev, lam = (lam, ml.loss_), lam * c["ratio"]
    return dict(name=name, config=config, n_triplets=int(ml.n_triplets_), build=build,
                total=time.process_time() - cpu0, finished=finished, steps=steps,
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def run_child(name: str, config: str, budget: float) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", name, config,
                          "--budget", str(budget)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def rate_points(steps: list[dict], n: int = 8) -> str:
    rates = [s["rate"] for s in steps]
    return ", ".join(f"{r:.2f}" for r in rates[::max(1, len(rates) // n)])


def section(results: dict, budget: float, load: tuple[float, float]) -> str:
    lines = [
        "## SafeMetricLearner at the papers' scale",
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores (1-min load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end), Python {platform.python_version()}, by "
        "`python benchmarks/bench_metric_learning_scale.py`. Synthetic sets of the papers' "
        "shapes (see the script's docstring), k-NN triplets, gamma = 0.05, lambda from "
        "the critical value down by the ratio until the 0.01 loss-decrease rule, relative "
        "gap 1e-6, warm starts. Process CPU seconds; the peak is the walk's own "
        "process's maximum resident memory. The path's time includes building the "
        "triplets (the column 'triplets (s)').",
        "",
        "| data | triplets | configuration | steps | path (s) | triplets (s) | per step "
        "(s): mean / max | peak memory (GB) | screening rate along the path |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, by_config in results.items():
        s = SHAPES[name]
        label = (f"{name}-shaped {s['n']:,} x {s['d']:,}, k={s['k']}"
                 f"{', diagonal' if s['metric'] == 'diagonal' else ''}")
        for config, r in by_config.items():
            cpu = np.array([st["cpu"] for st in r["steps"]])
            cfg = config + ("" if r["finished"] else
                            f" (stopped after {len(r['steps'])} steps, budget "
                            f"{r.get('budget', budget):g} s)")
            lines.append(
                f"| {label} | {r['n_triplets']:,} | {cfg} | {len(r['steps'])} | "
                f"{r['total']:.1f} | {r['build']:.1f} | {cpu.mean():.2f} / {cpu.max():.2f} "
                f"| {r['peak_mb'] / 1024:.1f} | "
                f"{rate_points(r['steps'])} |")
    lines += ["", "Screened against unscreened over the same steps:", ""]
    for name, by_config in results.items():
        if "none" not in by_config or "screened" not in by_config:
            continue
        none, scr = by_config["none"]["steps"], by_config["screened"]["steps"]
        m = min(len(none), len(scr))
        t_none = sum(st["cpu"] for st in none[:m])
        t_scr = sum(st["cpu"] for st in scr[:m])
        lines.append(f"* {name}: the first {m} steps take {t_scr:.1f} s screened and "
                     f"{t_none:.1f} s unscreened ({t_none / max(t_scr, 1e-9):.1f}x)"
                     + ("" if by_config["none"]["finished"] else
                        "; the unscreened path did not finish within the budget") + ".")
    if "gisette" in results and "active-0.99" in results["gisette"]:
        r = results["gisette"]["active-0.99"]
        head = ("Gisette-shaped, the papers' Table 2 protocol (ratio 0.99, active set and "
                "screening): ")
        if r["finished"]:
            lines += ["", head + f"{r['total']:.0f} s against the authors' "
                      f"{AUTHORS_GISETTE_S:,} s on the real Gisette "
                      f"({AUTHORS_GISETTE_S / r['total']:.0f}x under it)."]
        else:
            reached = r["steps"][-1]["lam"] / r["steps"][0]["lam"]
            lines += ["", head + f"not completed: {len(r['steps'])} steps in "
                      f"{r['total']:.0f} s, down to {reached:.2g} of the critical value, "
                      "when the 30-minute cap stopped it."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SHAPES))
    parser.add_argument("--budget", type=float, default=300.0,
                        help="CPU seconds after which an unscreened walk stops (default "
                             "300; the screened walks stop after 30 minutes, the goal)")
    parser.add_argument("--child", nargs=2, metavar=("SHAPE", "CONFIG"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(walk(*args.child, args.budget)))
        return
    load0 = os.getloadavg()[0]
    results = {}
    for name in args.only.split(","):
        configs = ["screened", "none"] + (["active-0.99"] if name == "gisette" else [])
        results[name] = {}
        for config in configs:
            budget = args.budget if config == "none" else 1800.0
            r = run_child(name, config, budget)
            r["budget"] = budget
            results[name][config] = r
            print(f"{name} {config}: {len(r['steps'])} steps, {r['total']:.1f} s, "
                  f"triplets {r['build']:.1f} s, peak {r['peak_mb'] / 1024:.1f} GB, "
                  f"finished {r['finished']}", flush=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _doc import write_section

    text = section(results, args.budget, (load0, os.getloadavg()[0]))
    print(text)
    write_section("## SafeMetricLearner at the papers' scale", text)


if __name__ == "__main__":
    main()
