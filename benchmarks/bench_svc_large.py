"""The RBF SafeSVC path at 50,000 and 100,000 training samples against SVC: time and
peak memory.

Two generators, 80% of the samples for training, RBF gamma=0.05, 10 values of C in
logspace(-1, 2):

* ``classification``: the scale protocol's data (make_classification(n / 0.8, 20,
  n_informative=10, flip_y=0.05, random_state=0), standardised);
* ``sphere``: a harder one, where most samples are support vectors: 10 standard normal
  features, the label says whether the sample lies outside the sphere holding half of
  them (a 10-dimensional ``make_circles``), and 20% of the labels are flipped.

Each side runs in its own process (so each one's peak resident memory is its own): the
warm-started SafeSVC path at its default tol and ``cache_size=200`` MB, and scikit-learn's
SVC (LIBSVM, tol 1e-3, the same cache) fitted at each value. The sides are alternated
value by value, one BLAS and one OpenMP thread each; CPU time is each process's own. A
value SVC has not finished after ``--svc-limit`` seconds (30 minutes by default) stops
SVC's side there. Peak memory is the process's largest resident size during the fit
(its peak is reset before each fit), less what it held after loading the data.

Writes one section of doc/benchmarks.md per generator ("RBF SafeSVC path at 50,000 and
100,000 samples: <generator> data") and prints it.

Run: python benchmarks/bench_svc_large.py [--sizes 50000 100000]
         [--data classification sphere] [--svc-limit 1800] [--sides path|svc]
         [--svc-from C]
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import platform
import time

import numpy as np
from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)

SECTION = "## RBF SafeSVC path at 50,000 and 100,000 samples"
CS = np.logspace(-1, 2, 10)
GAMMA = 0.05
CACHE_MB = 200


def make_data(name: str, n_train: int):
    """Training and test sets of ``name`` with ``n_train`` training samples."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    n = int(round(n_train / 0.8))
    if name == "classification":
        X, y = make_classification(n, 20, n_informative=10, flip_y=0.05, random_state=0)
        X = StandardScaler().fit_transform(X)
    else:
        rng = np.random.RandomState(0)
        X = rng.standard_normal((n, 10))
        radius = np.sum(X**2, axis=1)
        y = (radius > np.median(radius)).astype(int)
        flip = rng.rand(n) < 0.2
        y[flip] = 1 - y[flip]
    return train_test_split(X, y, test_size=0.2, random_state=0)


def _status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field in MB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/self/status")


def _fit_peak_mb(fit) -> tuple[float, float]:
    """CPU seconds of ``fit()`` and the process's peak resident size during it: the
    peak is reset first (Linux's ``clear_refs``), so a prediction or an earlier value
    does not count."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    t0 = time.process_time()
    fit()
    return time.process_time() - t0, _status_mb("VmHWM")


def _side(conn, side: str, data: str, n_train: int) -> None:
    """One side's process: fits at each C it is sent, answers time, memory, predictions
    and the number of support vectors."""
    from sklearn.svm import SVC
    from threadpoolctl import threadpool_limits

    from sklearn_safescreen import SafeSVC

    threadpool_limits(1)
    X, X_te, y, _ = make_data(data, n_train)
    base = _status_mb("VmRSS")
    if side == "path":
        model = SafeSVC(kernel="rbf", gamma=GAMMA, cache_size=CACHE_MB, warm_start=True,
                        random_state=0)
    else:
        model = SVC(kernel="rbf", gamma=GAMMA, cache_size=CACHE_MB)
    conn.send(base)
    while (C := conn.recv()) is not None:
        seconds, peak = _fit_peak_mb(lambda C=C: model.set_params(C=C).fit(X, y))
        conn.send((seconds, peak - base, model.predict(X_te), int(model.support_.size)))


def _start(side: str, data: str, n_train: int):
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_side, args=(there, side, data, n_train), daemon=True)
    proc.start()
    return proc, here


def run(data: str, n_train: int, svc_limit: float, deadline: float, report,
        sides=("path", "svc"), svc_from: float = 0.0) -> dict:
    """Both sides (or those in ``sides``) on one data set; SVC's side is stopped at
    its first value over ``svc_limit`` seconds of wall time, both sides at ``deadline``
    (a ``time.time()``), and SVC fits only the values from ``svc_from`` on (each of its
    fits is cold, so a run of SVC's side alone at the later values completes an earlier
    run whose budget ended). ``report(result)`` is called after every value (so a
    stopped run keeps its rows)."""
    procs = {side: _start(side, data, n_train) for side in sides}
    base = {side: conn.recv() for side, (_, conn) in procs.items()}
    result = {"rows": [], "base": base}
    svc_alive = "svc" in procs
    pred_path = None
    for C in CS:
        row = {"C": C}
        if "path" in procs:
            proc, conn = procs["path"]
            conn.send(C)
            if not conn.poll(max(deadline - time.time(), 1.0)):
                proc.terminate()
                result["stopped"] = f"the path stopped at C = {C:.3g} (time budget)"
                break
            row["path"], row["path_mb"], pred_path, row["path_sv"] = conn.recv()
        if svc_alive and C >= svc_from * (1 - 1e-9):
            proc, conn = procs["svc"]
            conn.send(C)
            budget = deadline - time.time()
            if conn.poll(min(svc_limit, max(budget, 1.0))):
                row["svc"], row["svc_mb"], pred_svc, row["svc_sv"] = conn.recv()
                if pred_path is not None:
                    row["agree"] = float(np.mean(pred_svc == pred_path))
            else:
                proc.terminate()
                svc_alive = False
                row["svc_stopped"] = (
                    f"stopped ({svc_limit / 60:g}-minute limit)" if budget > svc_limit
                    else "not finished (time budget)")
        result["rows"].append(row)
        path = (f"path {row['path']:.1f} s ({row['path_mb']:.0f} MB, {row['path_sv']} "
                "SVs)" if "path" in row else "path not run")
        svc = (f"SVC {row['svc']:.1f} s ({row['svc_mb']:.0f} MB, {row['svc_sv']} SVs)"
               if "svc" in row else "SVC " + row.get("svc_stopped", "not run"))
        print(f"{data} n={n_train} C={C:.3g}: {path}, {svc}", flush=True)
        if len(procs) == 2:  # a one-sided run completes another: its rows are printed
            report(result)
    for proc, conn in procs.values():
        if proc.is_alive():
            conn.send(None)
            proc.join(60)
    return result


def section(data: str, results: dict, loads, svc_limit: float) -> str:
    lines = [
        f"{SECTION}: {data} data", "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, by `python benchmarks/bench_svc_large.py`; 1-min load "
        f"average {loads[0]:.2f} at the start, {loads[1]:.2f} at the end. RBF gamma="
        f"{GAMMA}, 10 values of C in logspace(-1, 2), 80% of the samples for training. "
        "`classification`: the scale protocol's make_classification data; `sphere`: 10 "
        "standard normal features labelled by the sphere holding half of them, 20% of the "
        "labels flipped (most samples are support vectors). SafeSVC's warm-started path "
        f"at its default tol against SVC (LIBSVM, tol 1e-3) at each value, both with "
        f"cache_size={CACHE_MB} MB, each side in its own process (one BLAS and one OpenMP "
        "thread), the sides alternated value by value, one run. CPU seconds of each fit; "
        "memory: the process's peak resident size during the fit (reset before it) above "
        "what it held after loading the data (MB). SVC's side stops at its first value "
        f"over {svc_limit / 60:.0f} minutes, both at the run's time budget.",
        "",
        *[f"At {n:,} samples {res['stopped']}.\n" for (_, n), res in results.items()
          if "stopped" in res],
        "| data | training samples | C | path (s) | SVC (s) | SVC / path | path peak (MB) "
        "| SVC peak (MB) | support vectors (path / SVC) | test predictions equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (data, n), res in results.items():
        for r in res["rows"]:
            if "svc" in r:
                svc = (f"{r['svc']:.1f} | {r['svc'] / r['path']:.2f}x | {r['path_mb']:.0f} "
                       f"| {r['svc_mb']:.0f} | {r['path_sv']:,} / {r['svc_sv']:,} | "
                       f"{r['agree']:.4f}")
            else:
                svc = (f"{r.get('svc_stopped', 'not run')} | | "
                       f"{r['path_mb']:.0f} | | {r['path_sv']:,} / | ")
            lines.append(f"| {data} | {n:,} | {r['C']:.3g} | {r['path']:.1f} | {svc} |")
    lines += ["", "Totals over the values both sides finished:", "",
              "| data | training samples | path (s) | SVC (s) | SVC / path | path peak (MB) "
              "| SVC peak (MB) |", "|---|---|---|---|---|---|---|"]
    for (data, n), res in results.items():
        done = [r for r in res["rows"] if "svc" in r]
        if not done:
            continue
        p, s = sum(r["path"] for r in done), sum(r["svc"] for r in done)
        lines.append(f"| {data} | {n:,} | {p:.1f} | {s:.1f} | {s / p:.2f}x | "
                     f"{max(r['path_mb'] for r in res['rows']):.0f} | "
                     f"{max(r['svc_mb'] for r in done):.0f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[50000, 100000])
    parser.add_argument("--data", nargs="+", default=["classification", "sphere"],
                        choices=("classification", "sphere"))
    parser.add_argument("--svc-limit", type=float, default=1800.0,
                        help="seconds of wall time after which SVC's side is stopped")
    parser.add_argument("--budget", type=float, default=4 * 3600.0,
                        help="seconds of wall time after which both sides are stopped")
    parser.add_argument("--sides", nargs="+", default=["path", "svc"],
                        choices=("path", "svc"),
                        help="run one side only (its rows are printed, not written)")
    parser.add_argument("--svc-from", type=float, default=0.0,
                        help="SVC fits the values of C from this one on")
    args = parser.parse_args()
    # the children inherit these before they import numpy or the compiled extensions
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    deadline = time.time() + args.budget
    load0 = os.getloadavg()[0]
    for data in args.data:
        results = {}
        for n in args.sizes:
            def report(result, key=(data, n), results=results, data=data):
                results[key] = result
                text = section(data, results, (load0, os.getloadavg()[0]), args.svc_limit)
                write_section(f"{SECTION}: {data} data", text)

            results[(data, n)] = run(data, n, args.svc_limit, deadline, report,
                                     tuple(args.sides), args.svc_from)
        if len(args.sides) == 2:
            print(section(data, results, (load0, os.getloadavg()[0]), args.svc_limit))
    print(f"1-min load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the "
          "end")

if __name__ == "__main__":
    main()
