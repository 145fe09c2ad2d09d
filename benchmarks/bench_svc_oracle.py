"""SafeSVC paths against an oracle that knows the final support vectors.

At each value of a path the oracle solves only the problem restricted to that value's
support vectors (the samples with alpha > 0 at the certified optimum of a first,
untimed walk of the screened path). Dropping the samples with alpha = 0 leaves the
optimum unchanged: SafeSVC's intercept is regularised, so its dual is a plain box QP
without an equality constraint, and a sample held at its lower bound 0 contributes
nothing to the others' margins. The oracle's time is what a rule that guessed the final
support vectors exactly, at no cost and with no certificate, would leave to the solver:
the physical limit of screening.

The oracle uses the solver the path's step would use (``engine.box_qp._ReducedBoxQP``
chooses it: in linear mode working sets with gap-safe dynamic screening from a near
reference, plain coordinate descent handing over to working sets from zero; in kernel
mode the greedy two-variable solver above 400 samples, else plain coordinate descent with
its Newton steps), the same tolerance and the
same seeding: warm, from the previous value's oracle solution restricted to the current
support vectors (scaled into the new box as a path step seeds it); cold, from zero. Its
restricted problem is built anew at each value (from the estimator's own design matrix
or kernel, outside the timing), so a kernel oracle computes the kernel block of the
support vectors within its time and carries no row cache or Newton factor from the
previous value, as the real path does.

Rows (all in one run):

- linear: make_classification(20000 x 50), C in logspace(-3, 1, 9);
- RBF, gamma = 1/d: standardised breast cancer, C in logspace(-2, 3, 50);
  make_classification(5000 x 20), C in logspace(-2, 3, 20); with ``--large`` also
  make_classification(10000 x 20), C in logspace(-2, 3, 10)

(the data and grids of ``benchmarks/bench_svc.py``, whose functions build them inline:
the thin functions below construct the same sets).

Each row compares, per value and in total, the screened path (SafeSVC,
``warm_start=True``), the same path with ``screening=None`` and the oracle (warm and
cold), and splits the screened path into its phases, timed by wrapping the engine's
methods: the rule from the reference (``SVMPath.screen``), the solver with its dynamic
screening (the solver functions the step calls), the certificate on the full problem
(``_ReducedBoxQP.certify``, and the margins of the solution over all samples that the
step recomputes for it in kernel mode), the next reference (compensated margins and
their error bounds, ``BoxQP.reference`` and ``BoxQP.rounding_floor``) and the rest
(validation, fingerprint, problem set-up, seeding, report, model attributes). Times are
CPU time of this process (``time.process_time``: the machine is shared), BLAS on one
thread as in a fit; every figure is the best of three complete walks (the walk with the
smallest total). The oracle's solution is checked on the full problem (its full relative
duality gap is printed).

Writes the section "SafeSVC: the oracle restricted to the final support vectors" of
doc/benchmarks.md and prints it. The section's closing interpretation ("Where the
remaining time goes") is written by hand from a run: a re-run replaces the whole
section, so rewrite it from the new numbers.

Run: nice -n 19 python benchmarks/bench_svc_oracle.py [--quick] [--large]
(``--quick``: 5000 x 50 linear, 1000 x 20 synthetic RBF, one walk each, for a smoke run).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from contextlib import contextmanager

import numpy as np
from _doc import write_section  # (benchmarks/ is on sys.path when a script runs)
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.base import single_blas_thread
from sklearn_safescreen.datasets import load_standardized_breast_cancer
from sklearn_safescreen.engine import box_qp as engine
from sklearn_safescreen.engine.report import ScreeningReport
from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.constants import TINY
from sklearn_safescreen.screening.balls import gap_ball_screen
from sklearn_safescreen.solvers.newton import NewtonCache

TITLE = "## SafeSVC: the oracle restricted to the final support vectors"
TOL, MAX_ITER = 1e-6, 100000
PHASES = ("rule", "solver", "certificate", "reference")


# ------------------------------------------------------------------- the data ---
def linear_set(quick: bool):
    """bench_svc.py's linear data (built inline there)."""
    n = 5000 if quick else 20000
    X, y = make_classification(n_samples=n, n_features=50, n_informative=20, flip_y=0.05,
                               random_state=0)
    return f"linear, make_classification({n} x 50)", X, y, np.logspace(-3, 1, 9), \
        dict(kernel="linear")


def rbf_sets(quick: bool, large: bool):
    """bench_svc.py's RBF data and grids (built inline there), gamma = 1/d."""
    Xb, yb = load_standardized_breast_cancer()
    sets = [] if quick else [
        ("RBF, breast cancer (569 x 30, standardised)", Xb, yb, np.logspace(-2, 3, 50))]
    sizes = [(1000 if quick else 5000, 20)] + ([(10000, 10)] if large else [])
    for n, n_values in sizes:
        X, y = make_classification(n_samples=n, n_features=20, n_informative=10,
                                   flip_y=0.05, random_state=0)
        sets.append((f"RBF, make_classification({n} x 20)", X, y,
                     np.logspace(-2, 3, n_values)))
    return [(name, X, y, Cs, dict(kernel="rbf", gamma=1.0 / X.shape[1]))
            for name, X, y, Cs in sets]


# ------------------------------------------------------- timing the phases ---
class PhaseClock:
    """CPU time spent in the engine's phases, by wrapping their methods while active.

    The solver is timed at the solver functions the step calls; the rest of the step's
    solve (the margins of the solution over all samples, recomputed for the certificate
    in kernel mode) is counted with the certificate."""

    HOOKS = (("rule", engine.SVMPath, "screen"),
             ("solve", engine._ReducedBoxQP, "solve"),
             ("solver", engine, "solve_working_set"),
             ("solver", engine, "solve_plain_then_working_set"),
             ("solver", engine, "solve_box_qp"),
             ("solver", engine, "solve_kernel_greedy"),
             ("certificate", engine._ReducedBoxQP, "certify"),
             ("reference", BoxQP, "reference"),
             ("reference", BoxQP, "rounding_floor"))

    def __init__(self):
        self.totals = dict.fromkeys((*PHASES, "solve"), 0.0)

    def _wrap(self, phase, method):
        def timed_method(*args, **kwargs):
            t0 = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.totals[phase] += time.process_time() - t0
        return timed_method

    @contextmanager
    def active(self):
        saved = [(owner, name, getattr(owner, name)) for _, owner, name in self.HOOKS]
        try:
            for (phase, owner, name), (*_, method) in zip(self.HOOKS, saved, strict=True):
                setattr(owner, name, self._wrap(phase, method))
            yield self
        finally:
            for owner, name, method in saved:
                setattr(owner, name, method)

    def take(self) -> dict:
        """The phases since the last call: rule, solver, certificate, reference."""
        out, self.totals = self.totals, dict.fromkeys((*PHASES, "solve"), 0.0)
        out["certificate"] += out.pop("solve") - out["solver"]
        return out


def walk(X, y, Cs, params, screening, clock=None):
    """One warm-started path from a fresh estimator: CPU time per value, the phases per
    value (when ``clock``), the full dual vector per value, the screening rates."""
    model = SafeSVC(warm_start=True, tol=TOL, max_iter=MAX_ITER, random_state=0, **params)
    model.set_params(screening=screening)
    times, phases, alphas, rates = [], [], [], []
    for C in Cs:
        model.set_params(C=C)
        t0 = time.process_time()
        model.fit(X, y)
        times.append(time.process_time() - t0)
        if clock is not None:
            phases.append(clock.take())
        alphas.append(model._path.paths[0].reference.alpha.copy())
        rates.append(model.screening_report_.screening_rate)
    return np.array(times), phases, alphas, rates, model


def best_walk(runs):
    return min(runs, key=lambda r: r[0].sum())


# ------------------------------------------------------------------ the oracle ---
def restricted_data(X, y, support, params):
    """The estimator's own task data (design matrix with its bias column, or kernel with
    its row cache) on the samples ``support`` only."""
    est = SafeSVC(tol=TOL, max_iter=MAX_ITER, random_state=0, **params)
    est._validate_params()
    return est._make_paths(est._fit_inputs(X[support], y[support])).paths[0].data


def oracle_walk(X, y, Cs, params, supports, warm: bool, bounded=None):
    """CPU time of the solver on each value's restricted problem, and the oracle's
    solutions as full dual vectors. ``bounded`` (one mask over the samples per value):
    the support vectors at alpha = C, then held there as well (the free-only oracle)."""
    n = X.shape[0]
    times, alphas, prev, prev_C = [], [], None, None
    for i, (C, support) in enumerate(zip(Cs, supports, strict=True)):
        data = restricted_data(X, y, support, params)
        problem = data.problem(C, newton=None if data.kernel is None else NewtonCache())
        m = support.size
        seeded = prev is not None and warm
        alpha0 = engine.seed_point(prev[support], problem.lo, problem.hi, prev_C / C) \
            if seeded else np.zeros(m)
        none = np.zeros(m, dtype=bool)
        at_upper = none if bounded is None else bounded[i][support]
        reduced = engine._ReducedBoxQP(
            problem, alpha0, none, at_upper, dynamic=True, working_set=seeded,
            rng=np.random.RandomState(0), report=ScreeningReport(n_variables=m),
            rule="oracle", C=C, task="")
        solver = reduced._solver()
        t0 = time.process_time()
        res = solver(problem, reduced.alpha, reduced.fixed, tol=TOL, max_iter=MAX_ITER,
                     random_state=np.random.RandomState(0), dynamic_screen=gap_ball_screen)
        times.append(time.process_time() - t0)
        if not res.converged:
            raise RuntimeError(f"the oracle did not converge at C={C:g}")
        full = np.zeros(n)
        full[support] = res.alpha
        alphas.append(full)
        prev, prev_C = full, C
    return np.array(times), alphas


def full_rel_gap(full_data, C, alpha) -> float:
    """Relative duality gap of ``alpha`` on the full problem at ``C``."""
    problem = full_data.problem(C)
    q = problem.margins(alpha)
    return float(problem.gap_terms(alpha, q).sum()) / max(
        abs(problem.dual_objective(alpha, q)), TINY)


# ------------------------------------------------------------------- one row ---
def bench_set(name, X, y, Cs, params, walks: int):
    clock = PhaseClock()
    with single_blas_thread(), threadpool_limits(1, user_api="openmp"):
        with clock.active():
            screened = [walk(X, y, Cs, params, "IT", clock) for _ in range(walks)]
        t_scr, phases, alphas, rates, model = best_walk(screened)
        supports = [np.flatnonzero(a > 0) for a in alphas]
        t_none = best_walk([walk(X, y, Cs, params, None) for _ in range(walks)])[0]
        warm = [oracle_walk(X, y, Cs, params, supports, warm=True) for _ in range(walks)]
        t_warm, oracle_alphas = best_walk(warm)
        t_cold = best_walk([oracle_walk(X, y, Cs, params, supports, warm=False)
                            for _ in range(walks)])[0]
        full_data = model._path.paths[0].data
        bounded = [a >= C * full_data.weights for C, a in zip(Cs, alphas, strict=True)]
        t_free, free_alphas = best_walk([oracle_walk(X, y, Cs, params, supports, warm=True,
                                                     bounded=bounded) for _ in range(walks)])
    gaps = [full_rel_gap(full_data, C, a)
            for sols in (oracle_alphas, free_alphas) for C, a in zip(Cs, sols, strict=True)]
    phase_arr = {p: np.array([ph[p] for ph in phases]) for p in PHASES}
    other = t_scr - sum(phase_arr.values())
    n_sv = np.array([s.size for s in supports])
    n_free = n_sv - np.array([int(b.sum()) for b in bounded])
    print(f"{name}: screened {t_scr.sum():.3f}s, none {t_none.sum():.3f}s, oracle warm "
          f"{t_warm.sum():.3f}s, cold {t_cold.sum():.3f}s, free-only {t_free.sum():.3f}s; "
          f"the oracles' worst full relative gap {max(gaps):.2e}", flush=True)
    return dict(name=name, n=X.shape[0], Cs=Cs, screened=t_scr, none=t_none, warm=t_warm,
                cold=t_cold, free=t_free, phases=phase_arr, other=other, n_sv=n_sv,
                n_free=n_free, rates=np.array(rates), gap=max(gaps))


# ---------------------------------------------------------------- the tables ---
def _ms(t) -> str:
    return f"{1000 * t:.1f}"


def per_value_table(r) -> list[str]:
    ph = r["phases"]
    lines = [
        f"#### {r['name']}, {len(r['Cs'])} values",
        "",
        "| C | SVs (free) | screened | screened path | rule | solver | certificate | "
        "reference | other | screening=None | oracle warm | oracle cold | "
        "free-only oracle |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, C in enumerate(r["Cs"]):
        lines.append(
            f"| {C:.4g} | {r['n_sv'][i]} ({r['n_free'][i]}) | {r['rates'][i]:.1%} | "
            f"{_ms(r['screened'][i])} | {_ms(ph['rule'][i])} | {_ms(ph['solver'][i])} | "
            f"{_ms(ph['certificate'][i])} | {_ms(ph['reference'][i])} | "
            f"{_ms(r['other'][i])} | {_ms(r['none'][i])} | {_ms(r['warm'][i])} | "
            f"{_ms(r['cold'][i])} | {_ms(r['free'][i])} |")
    return [*lines, ""]


def totals_row(r) -> str:
    ph = {p: v.sum() for p, v in r["phases"].items()}
    scr, warm = r["screened"].sum(), r["warm"].sum()
    return (f"| {r['name']} | {len(r['Cs'])} | {scr:.3f} | {ph['rule']:.3f} | "
            f"{ph['solver']:.3f} | {ph['certificate']:.3f} | {ph['reference']:.3f} | "
            f"{r['other'].sum():.3f} | {r['none'].sum():.3f} | {warm:.3f} | "
            f"{r['cold'].sum():.3f} | {r['free'].sum():.3f} | {scr / warm:.1f}x | "
            f"{ph['solver'] / warm:.1f}x |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller data, one walk")
    parser.add_argument("--large", action="store_true",
                        help="also the make_classification(10000 x 20) RBF path")
    args = parser.parse_args()
    walks = 1 if args.quick else 3
    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    results = [bench_set(*linear_set(args.quick), walks)]
    results += [bench_set(*s, walks) for s in rbf_sets(args.quick, args.large)]
    flags = (" --quick" if args.quick else "") + (" --large" if args.large else "")
    lines = [
        TITLE,
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, by "
        f"`nice -n 19 python benchmarks/bench_svc_oracle.py{flags}` "
        f"({time.perf_counter() - t_start:.0f} s); 1-min load average {load0:.2f} at the "
        f"start, {os.getloadavg()[0]:.2f} at the end. CPU time of the process "
        "(`time.process_time`; the machine is shared), BLAS on one thread, best of "
        f"{walks} complete walk{'s' if walks > 1 else ''} (the walk with the smallest "
        "total); tol=1e-6 everywhere.",
        "",
        "The oracle solves, at each value, only the problem restricted to that value's "
        "support vectors (alpha > 0 at the screened path's certified optimum): the "
        "samples at alpha = 0 drop out without changing the optimum, since the "
        "intercept is regularised and the dual is a plain box QP. It runs the solver a "
        "path step would choose for it (linear mode, warm: working sets with gap-safe "
        "dynamic screening; cold: coordinate descent with dynamic screening, handing "
        "over to working sets; kernel mode: the greedy two-variable solver above 400 "
        "samples, else coordinate descent with Newton steps), "
        "at the same tolerance, warm from the previous value's oracle solution restricted to the "
        "current support vectors (seeded into the new box as a path step is) or cold "
        "from zero (its first value is always cold). Only the solver call is timed: no "
        "rule, no certificate, no reference, no estimator; a kernel oracle computes the "
        "kernel block of its support vectors within that time, with no row cache or "
        "Newton factor from the previous value. The free-only oracle, warm, also holds "
        "the support vectors at alpha = C there, so that only the free ones are "
        "variables: the limit for rules that fix samples at both ends of the box. The "
        "screened path's phases are "
        "measured by wrapping the engine's methods: rule = the rule from the reference "
        "(`SVMPath.screen`), solver = the solver functions with their dynamic screening, "
        "certificate = the full problem's gap and the check of every screened sample "
        "(with, in kernel mode, the solution's margins over all samples recomputed for "
        "it), "
        "reference = the next step's compensated margins and their error bounds, other "
        "= the rest (validation, fingerprint, problem set-up, seeding, report, model "
        "attributes; the first value's cold start from the critical value is in its "
        "phases). Largest relative duality gap of an oracle solution on the full "
        "problem: " + ", ".join(f"{r['gap']:.1e} ({r['name'].split(',')[0]}, n={r['n']})"
                               for r in results) + "."
        + ("" if args.large or args.quick else
           " The make_classification(10000 x 20) path (`--large`) is left out: one walk "
           "of each of its five columns takes about three minutes here."),
        "",
        "### Totals (seconds)",
        "",
        "| path | values | screened path | rule | solver | certificate | reference | "
        "other | screening=None | oracle warm | oracle cold | free-only oracle | "
        "screened / oracle warm | solver / oracle warm |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[totals_row(r) for r in results],
        "",
        "### Per value (milliseconds)",
        "",
        "SVs: support vectors (alpha > 0) at the certified optimum, free ones (0 < alpha "
        "< C) in brackets; screened: the screening report's rate at that value.",
        "",
    ]
    for r in results:
        lines += per_value_table(r)
    text = "\n".join(lines)
    print(text)
    if not args.quick:
        write_section(TITLE, text)


if __name__ == "__main__":
    main()
