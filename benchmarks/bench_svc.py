"""SafeSVC against what users would otherwise run (SVC, LinearSVC, oneDAL).

(a) linear path: make_classification(20000 x 50), nine C in logspace(-3, 1, 9), warm-started
    SafeSVC to relative gap 1e-6, vs LinearSVC(loss="hinge", dual=True, tol=1e-4,
    max_iter=20000) at each value, and vs the same path with screening=None;
(b) cold single fits of SafeSVC at each value vs LinearSVC at that value;
(c) RBF: standardised breast cancer, gamma=1/30, 50 values logspace(-2, 3, 50): the path vs
    sklearn's SVC at each value; and the same on n=5000 synthetic data.

All ratios come from one run. Writes a markdown table to doc/benchmarks.md (section
"SafeSVC") and prints it.

(d) ``--part ill``: linear SafeSVC against LinearSVC(loss="hinge") on unscaled data (raw
    breast cancer; a synthetic set whose feature scales spread over 1e-3 .. 1e4), C in
    {0.01, 1, 10, 1000}, tol 1e-6 and 1e-8, cold fits; writes its own section
    ("SafeSVC, linear, on unscaled data") and nothing else.

(e) ``--part kernel``: the symmetric kernel block (512 query rows x 2000 samples, RBF)
    at 20, 100 and 784 features against scikit-learn's ``rbf_kernel`` for the same block,
    both on one BLAS thread; writes its own section ("Symmetric kernel blocks").

(f) ``--part scale``: the RBF path at scale (make_classification(n / 0.8, 20,
    n_informative=10, flip_y=0.05, random_state=0), standardised, 80% for training,
    gamma=0.05, 10 values of C in logspace(-1, 2)): SafeSVC's warm path at its default
    tol and at tol=1e-6 against SVC and oneDAL's SVC (scikit-learn-intelex, when
    installed) at each value; CPU time, one thread on every side, the sides alternated
    value by value, best of two runs; writes its own section ("RBF SafeSVC path at
    scale").

Run: python benchmarks/bench_svc.py [--quick] [--part {all,ill,kernel,scale}]
         [--sizes 4000 8000 16000]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
import warnings

import numpy as np
from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.base import single_blas_thread
from sklearn_safescreen.datasets import load_standardized_breast_cancer
from sklearn_safescreen.problems.kernels import KernelMatrix


def hinge_objective(X, y, coef, intercept, C, intercept_scaling=1.0):
    """Primal objective of the regularised-bias hinge SVM (the problem both solve)."""
    ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
    w_bias = intercept / intercept_scaling
    margins = ys * (X @ coef + intercept)
    return 0.5 * (coef @ coef + w_bias**2) + C * np.maximum(0.0, 1.0 - margins).sum()


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def best_of(fn, repeats: int = 3, below: float = 2.0):
    """Best time of up to ``repeats`` runs (only one when a run takes over ``below``
    seconds): single-fit timings on a shared 2-core machine jitter by 10-20%."""
    out, best = timed(fn)
    for _ in range(repeats - 1):
        if best > below:
            break
        out, t = timed(fn)
        best = min(best, t)
    return out, best


def walk_path(model, X, y, Cs):
    """Times of a warm-started path (each fit after the previous one)."""
    times, rates, objs = [], [], []
    for C in Cs:
        _, t = timed(lambda C=C: model.set_params(C=C).fit(X, y))
        times.append(t)
        rates.append(model.screening_report_.screening_rate)
        objs.append(hinge_objective(X, y, model.coef_[0], model.intercept_[0], C))
    return np.array(times), rates, objs


def bench_linear(quick: bool):
    n = 5000 if quick else 20000
    X, y = make_classification(n_samples=n, n_features=50, n_informative=20, flip_y=0.05,
                               random_state=0)
    Cs = np.logspace(-3, 1, 9)
    params = dict(kernel="linear", tol=1e-6, max_iter=100000, random_state=0)
    # paths: the best of three complete walks (each from a fresh estimator)
    safe_runs = [walk_path(SafeSVC(warm_start=True, **params), X, y, Cs) for _ in range(3)]
    t_safe, rates, objs = min(safe_runs, key=lambda r: r[0].sum())
    plain_runs = [walk_path(SafeSVC(warm_start=True, screening=None, **params), X, y, Cs)[0]
                  for _ in range(3)]
    t_plain = min(plain_runs, key=np.sum)
    rows = []
    for i, C in enumerate(Cs):
        cold = SafeSVC(C=C, **params)
        _, t_cold = best_of(lambda cold=cold: cold.fit(X, y))
        lsvc = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-4, max_iter=20000,
                         random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, t_lsvc = best_of(lambda lsvc=lsvc: lsvc.fit(X, y))
        obj_lsvc = hinge_objective(X, y, lsvc.coef_[0], lsvc.intercept_[0], C)
        rows.append((C, t_safe[i], t_plain[i], t_cold, t_lsvc, rates[i], objs[i], obj_lsvc,
                     lsvc.n_iter_ >= 20000))
        print(f"C={C:.4g} path {t_safe[i]:.3f}s none {t_plain[i]:.3f}s cold {t_cold:.3f}s "
              f"LinearSVC {t_lsvc:.2f}s rate {rates[i]:.3f} obj {objs[i]:.6g} vs "
              f"{obj_lsvc:.6g}", flush=True)
    return n, rows


def bench_rbf(X, y, Cs, gamma, repeats):
    """Best of ``repeats`` complete runs of the warm-started path and of SVC at every
    value, interleaved so that both see the same machine load; CPU time of the process
    (both sides on the same BLAS). Returns the totals, the mean screening rate and per
    value (best over the runs): SafeSVC's time, its solver's part (the "gap" events of
    the screening report: the reduced solves and the certificate's margins, wall time)
    and SVC's time."""
    best_safe = np.full(len(Cs), np.inf)
    best_svc = np.full(len(Cs), np.inf)
    best_solver = np.full(len(Cs), np.inf)
    for _ in range(repeats):
        safe = SafeSVC(kernel="rbf", gamma=gamma, tol=1e-6, warm_start=True,
                       max_iter=100000, random_state=0)
        rates = []
        for k, C in enumerate(Cs):
            t0 = time.process_time()
            safe.set_params(C=C).fit(X, y)
            best_safe[k] = min(best_safe[k], time.process_time() - t0)
            report = safe.screening_report_
            rates.append(report.screening_rate)
            best_solver[k] = min(best_solver[k], sum(
                e.solver_time for e in report.events if e.rule == "gap"
                or e.moment in ("dynamic", "solve")))
            t0 = time.process_time()
            SVC(kernel="rbf", gamma=gamma, C=C).fit(X, y)
            best_svc[k] = min(best_svc[k], time.process_time() - t0)
    return (float(best_safe.sum()), float(best_svc.sum()), float(np.mean(rates)),
            best_safe, best_solver, best_svc)


def per_value_table(name, Cs, rbf):
    """Per-value rows of one RBF benchmark."""
    _, _, _, safe, solver, svc = rbf
    lines = [f"{name}, per value (CPU s; solver part wall s):", "",
             "| C | SafeSVC path step | of which solver | SVC | SVC / SafeSVC |",
             "|---|---|---|---|---|"]
    for C, ts, tsol, tv in zip(Cs, safe, solver, svc, strict=True):
        lines.append(f"| {C:.4g} | {ts:.2f} | {tsol:.2f} | {tv:.2f} | {tv / ts:.2f}x |")
    return lines + [""]


def spread_scale_classification(seed: int = 0, n: int = 300, d: int = 12):
    """Standard normal features scaled by logspace(-3, 4, d), labels from a noisy linear
    rule (the set of tests/solvers/test_ill_conditioned.py)."""
    rng = np.random.RandomState(seed)
    Xs = rng.randn(n, d)
    y = np.where(Xs @ rng.randn(d) + 0.5 * rng.randn(n) > 0, 1, 0)
    return Xs * np.logspace(-3, 4, d), y


def bench_ill_conditioned():
    """(d): cold fits on unscaled data, both sides without intercept (LinearSVC would
    penalise it through its own bias feature; without it the problems are identical)."""
    load0 = os.getloadavg()[0]
    sets = [("breast cancer, raw (569 x 30)", *load_breast_cancer(return_X_y=True)),
            ("spread scales 1e-3..1e4 (300 x 12)", *spread_scale_classification())]
    lines = [
        "## SafeSVC, linear, on unscaled data",
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, by `python benchmarks/bench_svc.py --part ill`; 1-min "
        f"load average {load0:.2f} at the start. Cold fits, best of three runs under 2 s; "
        "both without intercept (the same problem); LinearSVC(loss=\"hinge\", "
        "dual=True, max_iter=100000) at the same tol. Objective: "
        "1/2||w||^2 + C sum hinge; a ConvergenceWarning is marked (warned).",
        "",
        "| data | C | tol | SafeSVC (s) | LinearSVC (s) | objective SafeSVC | "
        "objective LinearSVC |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, X, y in sets:
        for C in (0.01, 1.0, 10.0, 1000.0):
            for tol in (1e-6, 1e-8):
                row = []
                for est in (SafeSVC(C=C, kernel="linear", tol=tol, fit_intercept=False),
                            LinearSVC(C=C, loss="hinge", dual=True, tol=tol,
                                      fit_intercept=False, max_iter=100_000)):
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", ConvergenceWarning)
                        model, t = best_of(lambda est=est, X=X, y=y: clone(est).fit(X, y))
                    warned = any(issubclass(w.category, ConvergenceWarning)
                                 for w in caught)
                    obj = hinge_objective(X, y, model.coef_.ravel(), 0.0, C)
                    row.append((t, obj, " (warned)" if warned else ""))
                (ts, os_, ws), (tl, ol, wl) = row
                lines.append(f"| {name} | {C:g} | {tol:g} | {ts:.3f}{ws} | {tl:.3f}{wl} | "
                             f"{os_:.10g} | {ol:.10g} |")
    lines += [
        "",
        f"1-min load average {os.getloadavg()[0]:.2f} at the end; taken on a shared "
        "machine (other jobs running), so the times are indicative. At large C a "
        "relative gap of 1e-8 can lie below float64's round-off of the gap on these data: "
        "w sums terms up to ~1e7 times larger than itself, and the gap of one point "
        "moves with the summation order by up to ~3e-7 of the objective (breast cancer "
        "at C=1000, spread scales at C=10) and ~2e-5 (spread scales at C=1000); SafeSVC "
        "then warns within a few hundred epochs and returns the interior-point "
        "finisher's best point. LinearSVC's dual coordinate descent crawls on these "
        "unscaled data and stops at max_iter far from the optimum.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_section("## SafeSVC, linear, on unscaled data", text)


def bench_kernel_block(repeats: int = 9):
    """(e) One 512 x 2000 RBF block: the symmetric block of KernelMatrix (the feature-major
    copy of the samples built beforehand, as once per fit) vs sklearn's rbf_kernel."""
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(0)
    n, rows = 2000, np.arange(512)
    load0 = os.getloadavg()[0]
    lines = []
    with single_blas_thread():
        for d in (20, 100, 784):
            X = rng.standard_normal((n, d))
            km = KernelMatrix(X, "rbf", {"gamma": 1.0 / d}, 0.0)
            A = X[rows]
            # CPU time of the calling thread (both sides run on it): insensitive to other
            # processes on a shared machine; best of interleaved runs
            ours, theirs = [], []
            for _ in range(repeats):
                t0 = time.thread_time()
                km._compute(rows, np.arange(n))
                ours.append(time.thread_time() - t0)
                t0 = time.thread_time()
                rbf_kernel(A, X, gamma=1.0 / d)
                theirs.append(time.thread_time() - t0)
            lines.append(f"| {d} | {min(ours):.4f} | {min(theirs):.4f} | "
                         f"{min(theirs) / min(ours):.2f}x |")
    text = "\n".join([
        "## Symmetric kernel blocks",
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, by `python benchmarks/bench_svc.py --part kernel`; 1-min "
        f"load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end. "
        f"One RBF block of 512 rows x {n} samples (standard normal data, gamma = 1/d), on "
        "one BLAS thread: `KernelMatrix`'s symmetric block (each value a fixed function of "
        "its pair, inner products summed in feature order without FMA; the feature-major "
        "copy of the samples, d x n doubles, built once per fit, is not timed) against "
        f"scikit-learn's `rbf_kernel` (BLAS). CPU time of the calling thread, best of "
        f"{repeats} interleaved runs.",
        "",
        "| features | symmetric block (s) | rbf_kernel (s) | rbf_kernel / block |",
        "|---|---|---|---|",
        *lines,
        "",
    ])
    print(text)
    write_section("## Symmetric kernel blocks", text)


SCALE_SECTION = "## RBF SafeSVC path at scale"


def scale_data(n_train: int):
    """(f)'s data: ``n_train`` standardised training samples."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(int(round(n_train / 0.8)), 20, n_informative=10,
                               flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    return X_tr, y_tr, X_te, y_te


def _onedal_svc():
    """oneDAL's SVC on one thread, or None when scikit-learn-intelex is not installed
    (a benchmark-only dependency)."""
    try:
        import daal4py
        from sklearnex.svm import SVC as OneDalSVC
    except ImportError:
        return None
    daal4py.daalinit(1)
    return OneDalSVC


SCALE_CS = np.logspace(-1, 2, 10)


def scale_times(sizes, repeats: int = 2) -> dict:
    """(f)'s measurements: per size ``n``, ``(best, agree)``: each side's best CPU time
    of ``repeats`` runs at every value of :data:`SCALE_CS` (``best["path"]``,
    ``["path6"]`` at tol=1e-6, ``["svc"]``, ``["onedal"]``, inf when not installed) and
    the fraction of test predictions equal to SVC's at each value."""
    Cs = SCALE_CS
    onedal = _onedal_svc()
    results = {}
    # one thread on every side: BLAS, and SafeSVC's OpenMP loops (the fit reads
    # threadpoolctl's OpenMP limit of the calling thread)
    with single_blas_thread(), threadpool_limits(1, user_api="openmp"):
        for n in sizes:
            X, y, X_te, y_te = scale_data(n)
            best = {k: np.full(len(Cs), np.inf)
                    for k in ("path", "path6", "svc", "onedal")}
            agree = np.ones(len(Cs))
            for _ in range(repeats):
                paths = {key: SafeSVC(kernel="rbf", gamma=0.05, tol=tol, warm_start=True,
                                      max_iter=100000, random_state=0)
                         for key, tol in (("path", SafeSVC().tol), ("path6", 1e-6))}
                for k, C in enumerate(Cs):
                    # the sides alternated value by value: each sees the same load
                    for key, model in paths.items():
                        t0 = time.process_time()
                        model.set_params(C=C).fit(X, y)
                        best[key][k] = min(best[key][k], time.process_time() - t0)
                    t0 = time.process_time()
                    svc = SVC(kernel="rbf", gamma=0.05, C=C).fit(X, y)
                    best["svc"][k] = min(best["svc"][k], time.process_time() - t0)
                    agree[k] = np.mean(svc.predict(X_te) == paths["path"].predict(X_te))
                    if onedal is not None:
                        t0 = time.process_time()
                        onedal(kernel="rbf", gamma=0.05, C=C).fit(X, y)
                        best["onedal"][k] = min(best["onedal"][k],
                                                time.process_time() - t0)
                    print(f"n={n} C={C:.4g}: path {best['path'][k]:.2f} s, tol 1e-6 "
                          f"{best['path6'][k]:.2f} s, SVC {best['svc'][k]:.2f} s, oneDAL "
                          f"{best['onedal'][k]:.2f} s", flush=True)
            results[n] = (best, agree)
    return results


def bench_scale(sizes, repeats: int = 2):
    """(f): per size, the best of ``repeats`` runs of each side at every value."""
    Cs = SCALE_CS
    load0 = os.getloadavg()[0]
    results = scale_times(sizes, repeats)
    load1 = os.getloadavg()[0]
    lines = [
        SCALE_SECTION,
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, by `python benchmarks/bench_svc.py --part scale`; 1-min "
        f"load average {load0:.2f} at the start, {load1:.2f} at the end (other jobs "
        "shared the machine). make_classification(n / 0.8, 20, n_informative=10, "
        "flip_y=0.05, random_state=0), standardised, 80% for training, RBF gamma=0.05, "
        "10 values of C in logspace(-1, 2): SafeSVC's warm-started path at its default "
        f"tol ({SafeSVC().tol:g}) and at tol=1e-6 against scikit-learn's SVC (LIBSVM, "
        "tol 1e-3, 200 MB cache) and oneDAL's SVC (scikit-learn-intelex, one thread) "
        "fitted at each value. Process CPU time, one thread on every side, the sides "
        f"alternated value by value, best of {repeats} runs. Goal: the path at least 2x "
        "faster than SVC's total at the default tol and 1.5x at tol=1e-6, no value below "
        "0.8x.",
        "",
        "| training samples | path (s) | path, tol=1e-6 (s) | SVC (s) | oneDAL (s) | SVC / "
        "path | SVC / path at 1e-6 | worst value, SVC / path | oneDAL / path | test "
        "predictions equal to SVC's |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, (b, agree) in results.items():
        lines.append(
            f"| {n:,} | {b['path'].sum():.2f} | {b['path6'].sum():.2f} | "
            f"{b['svc'].sum():.2f} | {b['onedal'].sum():.2f} | "
            f"{b['svc'].sum() / b['path'].sum():.2f}x | "
            f"{b['svc'].sum() / b['path6'].sum():.2f}x | "
            f"{np.min(b['svc'] / b['path']):.2f}x | "
            f"{b['onedal'].sum() / b['path'].sum():.2f}x | {agree.min():.4f} |")
    lines += ["", "Per value (CPU s):", "",
              "| training samples | C | path | path, tol=1e-6 | SVC | oneDAL | SVC / path |",
              "|---|---|---|---|---|---|---|"]
    for n, (b, _) in results.items():
        for k, C in enumerate(Cs):
            lines.append(f"| {n:,} | {C:.3g} | {b['path'][k]:.2f} | {b['path6'][k]:.2f} | "
                         f"{b['svc'][k]:.2f} | {b['onedal'][k]:.2f} | "
                         f"{b['svc'][k] / b['path'][k]:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_section(SCALE_SECTION, text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller data (smoke run)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 8000, 16000],
                        help="(f) only: training samples")
    parser.add_argument("--part", choices=("all", "ill", "kernel", "scale"), default="all",
                        help="ill: only (d), linear SafeSVC on unscaled data; kernel: only "
                             "(e), the symmetric kernel block")
    args = parser.parse_args()
    if args.part == "ill":
        bench_ill_conditioned()
        return
    if args.part == "kernel":
        bench_kernel_block()
        return
    if args.part == "scale":
        bench_scale(args.sizes)
        return
    load0 = os.getloadavg()[0]
    n, rows = bench_linear(args.quick)
    Xb, yb = load_standardized_breast_cancer()
    cs_bc, cs_syn, cs_10 = np.logspace(-2, 3, 50), np.logspace(-2, 3, 20), np.logspace(-2, 3, 10)
    rbf_bc = bench_rbf(Xb, yb, cs_bc, 1.0 / 30, repeats=5)
    Xs, ys = make_classification(n_samples=1000 if args.quick else 5000, n_features=20,
                                 n_informative=10, flip_y=0.05, random_state=0)
    rbf_syn = bench_rbf(Xs, ys, cs_syn, 1.0 / 20, repeats=1)
    # twice the samples, half the values (steps of 3.6x in C): the least favourable case
    # measured for the path, shown as it is
    Xl, yl = make_classification(n_samples=2000 if args.quick else 10000, n_features=20,
                                 n_informative=10, flip_y=0.05, random_state=0)
    rbf_large = bench_rbf(Xl, yl, cs_10, 1.0 / 20, repeats=1)
    # twice again: the kernel rows of the free samples fit the 200 MB cache no longer
    Xh, yh = make_classification(n_samples=4000 if args.quick else 20000, n_features=20,
                                 n_informative=10, flip_y=0.05, random_state=0)
    rbf_huge = bench_rbf(Xh, yh, cs_10, 1.0 / 20, repeats=1)

    goal = "met" if all(np.min(r[5] / r[3]) >= 1.5 for r in (rbf_large, rbf_huge)) \
        else "not met"
    t_path = sum(r[1] for r in rows)
    t_plain = sum(r[2] for r in rows)
    t_lsvc = sum(r[4] for r in rows)
    lines = [
        "## SafeSVC, linear",
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, by "
        f"`python benchmarks/bench_svc.py{' --quick' if args.quick else ''}`; 1-min load "
        f"average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end. Timing: "
        "paths are the best of three complete walks; single fits (SafeSVC cold, "
        "LinearSVC) the best of three runs when a run takes under 2 s; the RBF rows the "
        "best of five (breast cancer) or one (n=5000, n=10000, n=20000) interleaved runs "
        "of both sides, in CPU time of the process.",
        "",
        f"### (a, b) linear, make_classification({n} x 50), C in logspace(-3, 1, 9)",
        "",
        "| C | SafeSVC path (s) | path, screening=None (s) | SafeSVC cold fit (s) | "
        "LinearSVC (s) | screened | objective SafeSVC | objective LinearSVC |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for C, ts, tp, tc, tl, rate, os_, ol, capped in rows:
        lines.append(f"| {C:.4g} | {ts:.3f} | {tp:.3f} | {tc:.3f} | {tl:.2f}"
                     f"{' (max_iter)' if capped else ''} | {rate:.1%} | {os_:.8g} | "
                     f"{ol:.8g} |")
    lines += [
        "",
        f"Totals: path {t_path:.2f} s, path without screening {t_plain:.2f} s, "
        f"LinearSVC {t_lsvc:.1f} s. Ratios: LinearSVC / path = {t_lsvc / t_path:.1f}x, "
        f"no screening / path = {t_plain / t_path:.2f}x. Cold fits faster than "
        f"LinearSVC at {sum(r[3] < r[4] for r in rows)}/{len(rows)} values.",
        "",
        "### (c) RBF kernel",
        "",
        "| data | values | SafeSVC path (s) | SVC at each value (s) | SVC / path | "
        "worst value, SVC / SafeSVC | mean screened |",
        "|---|---|---|---|---|---|---|",
        *(f"| {name} | {len(Cs_)} | {r[0]:.2f} | {r[1]:.2f} | {r[1] / r[0]:.2f}x | "
          f"{np.min(r[5] / r[3]):.2f}x | {r[2]:.1%} |"
          for name, Cs_, r in (
              ("breast cancer (569 x 30, standardised), gamma=1/30", cs_bc, rbf_bc),
              (f"make_classification({Xs.shape[0]} x 20), gamma=1/20", cs_syn, rbf_syn),
              (f"make_classification({Xl.shape[0]} x 20), gamma=1/20", cs_10, rbf_large),
              (f"make_classification({Xh.shape[0]} x 20), gamma=1/20", cs_10, rbf_huge))),
        "",
        *per_value_table(f"make_classification({Xl.shape[0]} x 20)", cs_10, rbf_large),
        *per_value_table(f"make_classification({Xh.shape[0]} x 20)", cs_10, rbf_huge),
        "SVC has an unregularised intercept, SafeSVC a regularised one (kernel + 1): the "
        "problems differ slightly; SVC is what users would otherwise run. Both with their "
        "default 200 MB kernel cache; SafeSVC at tol=1e-6 (relative duality gap, "
        "certified on the full problem), SVC at its default tol=1e-3 (largest KKT "
        "violation). With more than 400 undecided samples SafeSVC's kernel solver is the "
        "greedy two-variable method with its own bounded row cache "
        "(`solvers/greedy_cd.py`); \"of which solver\" is the reduced solves with the "
        "certificate's compensated margins (which become the next reference), the rest "
        "of a step the screening and the estimator. The goal of 1.5x at every value is "
        f"{goal} at n={Xl.shape[0]} and n={Xh.shape[0]}. Between C of about 1 and 100, "
        "thousands of support vectors are free (about 4,600 at n=10000, 7,500 at "
        "n=20000), and a rule can only fix the others: the step is a solve over every "
        "free support vector, which the path reaches from the previous value in tens of "
        "thousands of two-variable updates plus Newton steps on the interior set (a "
        "Cholesky factor of 4,600 variables takes about 0.7 s). SVC is not slowed much "
        "by a tighter stop: at n=10000 and C=21.5 it takes 1.45 s at tol=1e-3 and 1.85 s "
        "at tol=1e-6 (measured separately), so 1.5x there needs a solver faster than "
        "LIBSVM's at equal accuracy, which screening does not give. At n=20000 the free "
        "samples' rows (8 bytes x 7,500 each) no longer fit the 200 MB row cache "
        "(LIBSVM stores its rows in single precision, twice as many); the solver then "
        "updates a variable whose row is cached when its decrease is at least a tenth of "
        "the best one's, which keeps the recomputed rows to about a fifth of a middle "
        "step (C=5.995, profiled separately: 4.8 of 25 s), and the two-variable updates "
        "over 7,500 free variables (about 200,000 there) take most of the rest.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_section("## SafeSVC, linear", text)


if __name__ == "__main__":
    main()
