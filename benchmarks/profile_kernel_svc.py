"""Where the warm-started RBF SafeSVC path spends its time, value by value, beside a
cold LIBSVM solve (scikit-learn's SVC) of the same value.

Protocol (kernel SafeSVC at scale): ``make_classification(n / 0.8, 20,
n_informative=10, flip_y=0.05, random_state=0)``, standardised, the first 80% of a
``train_test_split(random_state=0)`` for training, RBF gamma = 0.05, 10 values of C in
logspace(-1, 2), one BLAS thread, CPU time of the process.

Per value of the path: the greedy loop's two-variable (and single) updates, its time
split into the selection scan, the partner scan, the gradient updates and shrinking
(the loop's own counters, ``_greedy_fast.LoopProfile``), kernel rows computed for the
solver, Newton steps and their time, the certificate's compensated margins, the next
reference, the screening, and the samples left to the solver; beside SVC's time and
``n_iter_``. ``--experiments`` also replays single warm-started values (the state the
path hands the solver) under other selection rules, warm starts and stopping tests.

Run: python benchmarks/profile_kernel_svc.py [--sizes 8000 16000] [--tol 1e-4]
         [--experiments] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections import defaultdict
from dataclasses import replace

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.base import single_blas_thread
from sklearn_safescreen.engine import box_qp as engine
from sklearn_safescreen.problems import box_qp as problems
from sklearn_safescreen.solvers import _greedy_fast, greedy_cd

GAMMA = 0.05
CS = np.logspace(-1, 2, 10)


def make_data(n_train: int):
    """The protocol: ``n_train`` standardised training samples (and the rest
    for testing)."""
    n = int(round(n_train / 0.8))
    X, y = make_classification(n, 20, n_informative=10, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    return X_tr, y_tr, X_te, y_te


class Probe:
    """Counters and timers around the path's parts (monkeypatched wrappers)."""

    def __init__(self):
        self.stats = defaultdict(float)
        self._saved = []
        # the loop's counters, handed to every call of the loop
        self.loop_profile = _greedy_fast.LoopProfile()

    def _wrap(self, owner, name, key, count=None):
        original = getattr(owner, name)
        stats = self.stats

        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            out = original(*args, **kwargs)
            stats[key + "_s"] += time.process_time() - t0
            stats[key + "_n"] += 1
            if count is not None:
                stats[key + "_count"] += count(args, kwargs, out)
            return out

        self._saved.append((owner, name, original))
        setattr(owner, name, wrapper)

    def _profile_loop(self):
        original = greedy_cd.greedy_updates
        profile = self.loop_profile

        def profiled(*args, **kwargs):
            return original(*args, profile=profile, **kwargs)

        self._saved.append((greedy_cd, "greedy_updates", original))
        greedy_cd.greedy_updates = profiled

    def install(self):
        self._profile_loop()
        self._wrap(engine, "solve_kernel_greedy", "solve")
        self._wrap(greedy_cd, "greedy_updates", "loop", lambda a, k, out: out[1])
        self._wrap(greedy_cd.RowCache, "signed", "rows", lambda a, k, out: out.shape[0])
        # rows written straight into the cache (not through ``signed``)
        self._wrap(greedy_cd.RowCache, "_fill", "rows", lambda a, k, out: len(a[3]))
        self._wrap(greedy_cd.RowCache, "extended", "extend")
        self._wrap(greedy_cd.RowCache, "restricted", "narrow")
        self._wrap(greedy_cd, "_newton_step", "newton")
        self._wrap(greedy_cd._PendingMargins, "gradient", "pending")
        self._wrap(problems.BoxQP, "accurate_margins", "certificate")
        self._wrap(problems.BoxQP, "reference", "reference")
        self._wrap(problems.BoxQP, "margins_from", "start_margins")
        self._wrap(engine.SVMPath, "screen", "screen")
        self.loop_profile.reset()

    def uninstall(self):
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def take(self) -> dict:
        out = dict(self.stats)
        out.update(self.loop_profile.counters())
        self.stats.clear()
        self.loop_profile.reset()
        return out


def kernel_of(model):
    return model._path.paths[0].data.kernel


def profile_path(n_train: int, tol: float, svc_tol: float = 1e-3) -> list[dict]:
    X, y, _, _ = make_data(n_train)
    probe = Probe()
    model = SafeSVC(kernel="rbf", gamma=GAMMA, tol=tol, warm_start=True, max_iter=100000,
                    random_state=0)
    rows = []
    probe.install()
    try:
        for C in CS:
            evals0 = kernel_of(model).n_evaluations if hasattr(model, "_path") else 0
            t0 = time.process_time()
            model.set_params(C=C).fit(X, y)
            t_safe = time.process_time() - t0
            stats = probe.take()
            rep = model.screening_report_
            ref = model._path.paths[0].reference
            free = int(((ref.alpha > 0) & (ref.alpha < C)).sum())
            t0 = time.process_time()
            svc = SVC(kernel="rbf", gamma=GAMMA, C=C, tol=svc_tol).fit(X, y)
            t_svc = time.process_time() - t0
            row = dict(n=n_train, C=float(C), safe=t_safe, svc=t_svc,
                       svc_iter=int(np.sum(svc.n_iter_)), n_sv=int(np.sum(ref.alpha > 0)),
                       free=free, svc_sv=int(svc.n_support_.sum()),
                       left=int(n_train - sum(e.n_lower + e.n_upper for e in rep.events
                                              if e.moment == "reference")),
                       evals=int(kernel_of(model).n_evaluations - evals0), **stats)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        probe.uninstall()
    return rows


def fmt_table(rows: list[dict]) -> str:
    head = ("| C | SafeSVC (s) | updates (pairs + singles) | loop (s): select / partner "
            "/ update / shrink | rows computed (s) | Newton steps (s) | certificate (s) | "
            "reference (s) | screening (s) | left after screening | free SVs | SVC (s) | "
            "LIBSVM iterations |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        g = r.get
        lines.append(
            f"| {r['C']:.3g} | {r['safe']:.2f} | {g('pairs', 0):,} + {g('singles', 0):,} | "
            f"{g('loop_s', 0):.2f}: {g('t_select', 0):.2f} / {g('t_partner', 0):.2f} / "
            f"{g('t_update', 0):.2f} / {g('t_shrink', 0):.2f} | "
            f"{int(g('rows_count', 0)):,} ({g('rows_s', 0):.2f}) | "
            f"{int(g('newton_n', 0))} ({g('newton_s', 0):.2f}) | "
            f"{g('certificate_s', 0):.2f} | {g('reference_s', 0):.2f} | "
            f"{g('screen_s', 0):.2f} | {r['left']:,} | {r['free']:,} | {r['svc']:.2f} | "
            f"{r['svc_iter']:,} |")
    return "\n".join(lines)


# -- replays of single warm-started values ------------------------------------------

def capture_states(n_train: int, targets, tol: float) -> dict:
    """Walk the path (at ``tol``) and keep, for each value in ``targets``, what the
    engine hands the kernel solver there: the problem, the start point, the fixed mask,
    the start margins, a copy of the kept row cache and the previous reference."""
    import copy

    X, y, _, _ = make_data(n_train)
    states = {}
    original = engine.solve_kernel_greedy
    current = {}

    def capture(problem, alpha, fixed, **kw):
        C = current["C"]
        if any(np.isclose(C, t) for t in targets) and C not in states:
            states[C] = dict(problem=problem, alpha=alpha.copy(), fixed=fixed.copy(),
                             start_margins=None if kw.get("start_margins") is None
                             else kw["start_margins"].copy(),
                             newton=copy.deepcopy(problem.newton),
                             ref=current["ref"], X=X, y=y)
        return original(problem, alpha, fixed, **kw)

    engine.solve_kernel_greedy = capture
    try:
        model = SafeSVC(kernel="rbf", gamma=GAMMA, tol=tol, warm_start=True,
                        max_iter=100000, random_state=0)
        for C in CS:
            current["C"] = C
            current["ref"] = model._path.paths[0].reference if hasattr(model, "_path") \
                else None
            model.set_params(C=C).fit(X, y)
            if C >= max(targets):
                break
    finally:
        engine.solve_kernel_greedy = original
    return states


def extrapolated_start(problem, ref, seed):
    """The previous solution moved along the solution path's slope at C_old: on its
    interior set F the path is affine in C, alpha_F(C) = Q_FF^{-1}(1_F - C Q_FB 1_B),
    so alpha_F(C) = k alpha_F - (k - 1) Q_FF^{-1} p_F with k = C / C_old (clipped to
    the box); the others as seeded. Exact margins of that point."""
    from scipy.linalg import cho_factor, cho_solve

    k = float(problem.hi.max()) / ref.C
    F = np.flatnonzero((ref.alpha > problem.lo / k) & (ref.alpha < problem.hi / k))
    QFF = problem.kernel.block(F, F) * np.outer(problem.sign[F], problem.sign[F])
    x = cho_solve(cho_factor(QFF, lower=True), problem.p[F])
    alpha = seed.copy()
    alpha[F] = np.clip(k * ref.alpha[F] - (k - 1.0) * x, problem.lo[F], problem.hi[F])
    nz = np.flatnonzero(alpha)
    q = problem.sign * problem.kernel.matvec(np.arange(problem.n_samples), nz,
                                             problem.sign[nz] * alpha[nz])
    return alpha, q


def replay(state: dict, *, partner_any=True, prefer_cached=None, start="seed",
           tol=1e-4, shrink_every=None) -> dict:
    """One solve of a captured value under the given rules; its updates, loop time,
    rows computed, solve time, and the final point's full relative gap and largest KKT
    violation (exact margins)."""
    import copy

    from sklearn_safescreen.solvers.newton import NewtonCache

    problem = state["problem"]
    alpha, fixed, margins = state["alpha"], state["fixed"], state["start_margins"]
    if start == "cold":
        alpha, margins, newton = np.zeros_like(alpha), None, NewtonCache()
    else:
        newton = copy.deepcopy(state["newton"])
        if start == "scaled":  # the whole previous solution times C / C_old
            ref = state["ref"]
            k = float(problem.hi.max()) / ref.C
            alpha = np.clip(ref.alpha * k, problem.lo, problem.hi)
            margins = k * ref.margins
        elif start == "previous":  # the previous solution itself (feasible: C grew)
            ref = state["ref"]
            alpha = np.clip(ref.alpha, problem.lo, problem.hi)
            margins = ref.margins.copy()
        elif start == "extrapolated":  # along the path's slope at the previous value
            alpha, margins = extrapolated_start(problem, state["ref"], alpha)
    problem.newton = newton
    changes = dict(partner_any=partner_any)
    if prefer_cached is not None:
        changes["prefer_cached"] = prefer_cached
    if shrink_every is not None:
        changes["shrink_every"] = shrink_every
    options = replace(greedy_cd.DEFAULT_OPTIONS, **changes)
    probe = Probe()
    probe.install()
    try:
        t0 = time.process_time()
        res = greedy_cd.solve_kernel_greedy(
            problem, alpha, fixed, tol=tol, max_iter=100000,
            random_state=np.random.RandomState(0), dynamic_screen=None,
            start_margins=margins, options=options)
        t = time.process_time() - t0
        stats = probe.take()
    finally:
        probe.uninstall()
    q, _ = problem.accurate_margins(res.alpha)
    G = q - problem.p
    a = res.alpha
    pg = np.where(a <= problem.lo, np.minimum(G, 0.0),
                  np.where(a >= problem.hi, np.maximum(G, 0.0), G))
    gap = float(problem.gap_terms(a, q).sum())
    return dict(time=t, updates=int(stats.get("pairs", 0) + stats.get("singles", 0)),
                loop=stats.get("loop_s", 0.0), rows=int(stats.get("rows_count", 0)),
                rows_s=stats.get("rows_s", 0.0), extend_s=stats.get("extend_s", 0.0),
                newton=int(stats.get("newton_n", 0)),
                newton_s=stats.get("newton_s", 0.0),
                **{k: stats.get(k, 0) for k in ("t_select", "t_partner", "t_update",
                                                 "t_shrink", "n_scanned",
                                                 "n_partner_scanned", "n_updated")},
                rel_gap=gap / abs(problem.dual_objective(a, q)),
                kkt=float(np.abs(pg).max()))


def svc_gap(X, y, C: float, tol: float = 1e-3) -> tuple[float, float, int]:
    """SVC's own relative duality gap (its problem, unregularised intercept) and the
    CPU time and iterations of the fit."""
    t0 = time.process_time()
    svc = SVC(kernel="rbf", gamma=GAMMA, C=C, tol=tol).fit(X, y)
    t = time.process_time() - t0
    ys = np.where(y == svc.classes_[1], 1.0, -1.0)
    f = svc.decision_function(X)
    b = svc.intercept_[0]
    alpha = np.abs(svc.dual_coef_[0])
    # w'w = sum alpha_i y_i (f(x_i) - b) over the support vectors
    wtw = float(np.sum(svc.dual_coef_[0] * (f[svc.support_] - b)))
    primal = 0.5 * wtw + C * np.maximum(0.0, 1.0 - ys * f).sum()
    dual = alpha.sum() - 0.5 * wtw
    return (primal - dual) / abs(dual), t, int(np.sum(svc.n_iter_))


def experiments(n_train: int, targets=(21.544346900318834, 46.41588833612777, 100.0)):
    states = capture_states(n_train, targets, 1e-4)
    variants = [
        ("partner among all variables (the default)", {}),
        ("partner among the cached rows only", dict(partner_any=False)),
        ("no preference for cached rows", dict(prefer_cached=1.0)),
        ("cold start", dict(start="cold")),
        ("whole previous solution scaled by C / C_old", dict(start="scaled")),
        ("extrapolated along the path's slope", dict(start="extrapolated")),
        ("the previous solution unchanged", dict(start="previous")),
        ("no shrinking", dict(shrink_every=10**9)),
        ("tol 1e-3", dict(tol=1e-3)),
        ("tol 1e-6", dict(tol=1e-6)),
    ]
    only = os.environ.get("VARIANTS")
    if only:
        variants = [v for v in variants if any(w in v[0] for w in only.split(","))]
    out = []
    for C, st in states.items():
        gap, t_svc, it_svc = svc_gap(st["X"], st["y"], C)
        print(f"C={C:.4g}: SVC {t_svc:.2f} s, {it_svc} iterations, its own relative "
              f"gap {gap:.2e}", flush=True)
        for name, kw in variants:
            r = replay(st, **kw)
            r.update(C=C, variant=name, svc_time=t_svc, svc_iter=it_svc, svc_gap=gap)
            out.append(r)
            print(f"  {name:60s} {r['updates']:8d} upd {r['time']:6.2f} s loop "
                  f"{r['loop']:.2f} rows {r['rows']:6d} newton {r['newton']} "
                  f"({r['newton_s']:.2f} s) gap {r['rel_gap']:.1e} kkt {r['kkt']:.1e}",
                  flush=True)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[8000])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--out", default=None, help="append the rows (JSON lines)")
    parser.add_argument("--experiments", action="store_true",
                        help="replay C = 21.5, 46.4, 100 under other rules")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    # one thread on every side: BLAS, and SafeSVC's OpenMP loops (whose waiting
    # threads' spins would count as CPU time of the process)
    with single_blas_thread(), threadpool_limits(1, user_api="openmp"):
        for n in args.sizes:
            if args.experiments:
                rows = experiments(n)
                print(f"load {load0:.2f} -> {os.getloadavg()[0]:.2f}")
                if args.out:
                    with open(args.out, "a") as f:
                        for r in rows:
                            f.write(json.dumps(dict(r, n=n)) + "\n")
                continue
            rows = profile_path(n, args.tol)
            print(f"\nn={n}, tol={args.tol:g}, load {load0:.2f} -> "
                  f"{os.getloadavg()[0]:.2f}\n")
            print(fmt_table(rows))
            if args.out:
                with open(args.out, "a") as f:
                    for r in rows:
                        f.write(json.dumps(dict(r, tol=args.tol)) + "\n")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
