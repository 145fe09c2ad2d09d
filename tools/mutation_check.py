"""Mutation check of the safety tests: do deliberate bugs in the screening code fail them?

Each mutation below weakens one safety ingredient (the gap inflation of a reference, a
radius constant, a threshold, the gap a path step hands to the rules). The script copies
the repository into a temporary directory (tracked files plus the built extensions, with
their timestamps, so that only a mutated ``.pyx`` is recompiled), applies one mutation
at a time, rebuilds the copy's extensions when a ``.pyx`` changed, runs the tests that
guard that ingredient and restores the file (and the extension) afterwards. A mutation
*survives* when fewer than ``--min-failures`` tests fail. The source tree is never
touched.

Usage (from the repository root, with the package's extensions built in place)::

    python tools/mutation_check.py                  # every mutation
    python tools/mutation_check.py --list
    python tools/mutation_check.py svm_ball_sqrt_gap triplet_rrpb_eps
    python tools/mutation_check.py --pytest-args="-n 2"

Exit status 1 if a mutation survives or does not apply (the code it targets changed:
update the mutation with it), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the new safety tests, run for every mutation
SAFETY = ("tests/screening/test_radii.py", "tests/screening/test_inexact_references.py",
          "tests/screening/test_triplet_oracle.py")
SVM = (*SAFETY, "tests/screening/test_svm_rules.py")
LAD = (*SAFETY, "tests/screening/test_lad_rules.py")
TRIPLET = (*SAFETY, "tests/screening/test_triplet_rules.py")
#: the end-to-end certificate tests (planted wrong decisions in real fits)
PLANTED = "tests/engine/test_planted_faults.py"
GAP_RADIUS = "tests/screening/test_gap_radius.py"
ERROR_BOUNDS = "tests/problems/test_reference_error_bounds.py"
DOUBLY = ("tests/screening/test_doubly_sparse_rules.py",
          "tests/problems/test_doubly_sparse_problem.py")
LP = ("tests/screening/test_lp_svm_rules.py", "tests/engine/test_lp_svm_path.py",
      "tests/test_lp_svc.py")
#: the triplet sets' exact k-NN search (its candidates left out on an error bound)
KNN = ("tests/problems/test_triplets.py",)
#: a warm start's problem key, and the folds of a path search
WARM = ("tests/test_warm_start_problem.py",)
FOLDS = ("tests/test_path_cv_folds.py", "tests/test_path_cv.py",
         "tests/test_distributed.py")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


MUTATIONS = (
    Mutation("path_step_gap0", "sklearn_safescreen/engine/box_qp.py",
             "res = self.screen(rule, _planted_reference(ref), C)",
             "res = self.screen(rule, replace(ref, gap=0.0, gap_error=0.0), C)",
             (*SVM, "tests/screening/test_lad_rules.py", PLANTED),
             "the box-QP path step hands the rules its reference with gap 0"),
    Mutation("stored_reference_gap0", "sklearn_safescreen/problems/box_qp.py",
             "return BoxQPReference(C, alpha, q, gap, error, gap_error, hard_margin)",
             "return BoxQPReference(C, alpha, q, 0.0, error, gap_error, hard_margin)",
             (*SVM, "tests/screening/test_lad_rules.py", PLANTED),
             "a box-QP step stores its solution as reference with gap 0"),
    Mutation("reference_margin_error_zero", "sklearn_safescreen/problems/box_qp.py",
             "return BoxQPReference(C, alpha, q, gap, error, gap_error, hard_margin)",
             "return BoxQPReference(C, alpha, q, gap, 0.0 * error, gap_error, hard_margin)",
             (*SVM, ERROR_BOUNDS),
             "a box-QP reference without its margins' rounding-error bound"),
    Mutation("reference_gap_error_zero", "sklearn_safescreen/problems/box_qp.py",
             "        gap_error = self.gap_error(alpha, q, error, terms)",
             "        gap_error = 0.0",
             (*SVM, ERROR_BOUNDS),
             "a box-QP reference without its gap's rounding-error bound"),
    Mutation("svm_ball_sqrt_half_gap", "sklearn_safescreen/screening/balls.py",
             "return float(np.sqrt(max(gap, 0.0)))",
             "return float(np.sqrt(max(0.5 * gap, 0.0)))", (*SVM, *LAD[2:], GAP_RADIUS),
             "the box-QP gap radius sqrt(gap / 2), not sqrt(gap) (every BT1/IT/LAD-DVI "
             "reference ball, every dynamic gap ball and the certificate's proofs)"),
    Mutation("svm_dvi_sqrt_half_gap", "sklearn_safescreen/screening/svm.py",
             "delta = gap_radius(ref.safe_gap)",
             "delta = gap_radius(0.5 * ref.safe_gap)", SVM,
             "SVM DVI inflated by sqrt(gap / 2), not sqrt(gap)"),
    Mutation("lad_gap0", "sklearn_safescreen/screening/lad.py",
             "res = reference_ball_screen(ref, C, np.sqrt(sqnorm), y, weights > 0)",
             "res = reference_ball_screen(__import__('dataclasses').replace(ref, gap=0.0, "
             "gap_error=0.0), C, np.sqrt(sqnorm), y, weights > 0)", LAD,
             "LAD DVI ignores the reference's gap"),
    Mutation("gap_ball_radius_30pct", "sklearn_safescreen/screening/balls.py",
             "gap_radius(gap), SCREEN_RTOL)",
             "0.3 * gap_radius(gap), SCREEN_RTOL)",
             (*SVM, "tests/solvers"),
             "gap-safe screening during solves (and the certificate's proofs) with 30% of "
             "the radius"),
    Mutation("box_certificate_gutted", "sklearn_safescreen/engine/box_qp_reduced.py",
             "        return Certificate(gap, rel_gap, wrong, int(wrong.sum()), loose, "
             "int(loose.sum()))",
             "        gap = float(terms[~screened].sum())\n"
             "        rel_gap = gap / max(abs(problem.dual_objective(alpha, margins)), TINY)\n"
             "        return Certificate(gap, rel_gap, wrong, 0, loose, 0)",
             (PLANTED, "tests/test_svm_exactness.py", "tests/test_lad.py"),
             "the box-QP certificate counts only the undecided samples' gap terms and "
             "reports no contradicted or loose sample"),
    Mutation("ds_certificate_gutted", "sklearn_safescreen/engine/doubly_sparse_reduced.py",
             "        return Certificate(g.gap, g.gap, (wrong_f, wrong_s),",
             "        g = self.red.gap(self.u, self.red.margins(self.u), self.lam, self.beta)\n"
             "        wrong_f = wrong_s = loose_f = loose_s = np.zeros(0, dtype=bool)\n"
             "        return Certificate(g.gap, g.gap, (wrong_f, wrong_s),",
             (PLANTED, "tests/test_doubly_sparse.py"),
             "the doubly sparse certificate takes the reduced problem's gap and reports no "
             "contradicted or loose variable"),
    Mutation("triplet_certificate_gutted", "sklearn_safescreen/engine/triplet_reduced.py",
             "        if on_side:\n",
             "        if True:\n",
             (PLANTED, "tests/test_triplet_certificate.py"),
             "the triplet certificate trusts the reduced problem whatever the screened "
             "triplets' values"),
    Mutation("scaled_sphere_threshold", "sklearn_safescreen/screening/_triplet_fast.pyx",
             "            upper = hq + radius * hn[t]\n"
             "            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)\n"
             "            s = status[t]\n            r = (s == 0) & (lower > 1.0 + slack)",
             "            upper = hq + radius * hn[t]\n"
             "            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)\n"
             "            s = status[t]\n            r = (s == 0) & (lower > 0.9 + slack)",
             TRIPLET, "RRPB sphere pass screens into R from a lower bound above 0.9"),
    Mutation("scaled_sphere_rad_threshold", "sklearn_safescreen/screening/_triplet_fast.pyx",
             "            upper = hq + e\n"
             "            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)\n"
             "            s = status[t]\n            r = (s == 0) & (lower > 1.0 + slack)",
             "            upper = hq + e\n"
             "            slack = _SCREEN_RTOL * (fabs(lower) + fabs(upper) + 1.0)\n"
             "            s = status[t]\n            r = (s == 0) & (lower > 0.9 + slack)",
             (*TRIPLET, "tests/test_triplet_certificate.py"),
             "the RRPB sphere pass from bounded values screens into R from a lower bound "
             "above 0.9 (compiled)"),
    Mutation("triplet_rrpb_eps", "sklearn_safescreen/screening/triplet_bounds.py",
             "return float(np.sqrt(2.0 * max(gap0, 0.0) / lam0))",
             "return float(np.sqrt(max(gap0, 0.0) / lam0))", TRIPLET,
             "RRPB epsilon sqrt(gap/lambda0), not sqrt(2 gap/lambda0)"),
    Mutation("triplet_rrpb_radius_eps", "sklearn_safescreen/screening/triplet_bounds.py",
             "(d + lam0 + lam) / (2.0 * lam) * eps",
             "(d + lam0 + lam) / (4.0 * lam) * eps", TRIPLET,
             "RRPB radius with half its epsilon term"),
    Mutation("triplet_stored_gap0", "sklearn_safescreen/engine/triplet.py",
             "ref = TripletReference(alpha, reduced.M, cert.gap,",
             "ref = TripletReference(alpha, reduced.M, 0.0,", TRIPLET,
             "a triplet step stores its solution as reference with gap 0"),
    Mutation("triplet_ranges_gap0", "sklearn_safescreen/engine/triplet.py",
             "m, eps = float(np.linalg.norm(ref.M)), ref.eps",
             "m, eps = float(np.linalg.norm(ref.M)), 0.0", TRIPLET,
             "RRPB range screening computed as if the reference were exact"),
    Mutation("triplet_ranges_eps_half", "sklearn_safescreen/screening/triplet_bounds.py",
             "    eps = eps * (1.0 + RADIUS_RTOL) + RADIUS_ATOL * max(1.0, m)\n"
             "    if keep is None:",
             "    eps = 0.5 * eps * (1.0 + RADIUS_RTOL) + RADIUS_ATOL * max(1.0, m)\n"
             "    if keep is None:", TRIPLET,
             "RRPB ranges with half the epsilon"),
    Mutation("triplet_range_lo_eps", "sklearn_safescreen/screening/_triplet_fast.pyx",
             "lo_out[t] = max(lam0 * (hm - z_lo + 2 * eps * ht)",
             "lo_out[t] = max(lam0 * (hm - z_lo + eps * ht)", TRIPLET,
             "the lower end of an R range with half its epsilon term (compiled)"),
    Mutation("knn_tol_zero", "sklearn_safescreen/problems/triplets.py",
             "    tol = (relative * (np.sqrt(a_sq)",
             "    tol = 0.0 * (relative * (np.sqrt(a_sq)", KNN,
             "the k-NN search trusts its approximate distances (no error bound)"),
    Mutation("knn_tol_subtracted", "sklearn_safescreen/problems/_triplet_set_fast.pyx",
             "lim = h[0] * scale_sq + tol[a] - a_sq[a]\n                j =",
             "lim = h[0] * scale_sq - tol[a] - a_sq[a]\n                j =", KNN,
             "the k-NN search narrows its reach by the error bound instead of widening it"),
    Mutation("bcert_active_dropped", "sklearn_safescreen/engine/triplet_reduced.py",
             "                                           gamma, not covered)",
             "                                           gamma, False)",
             ("tests/test_triplet_certificate.py",),
             "the certificate from bounds leaves the active triplets at their bounded "
             "values when the solver's evaluation does not cover them"),
    Mutation("spg_hl_from_s_sign", "sklearn_safescreen/solvers/_spg_fast.pyx",
             "(&HL[0, 0])[i] = (&S[0, 0])[i] - Stmp[i]",
             "(&HL[0, 0])[i] = (&S[0, 0])[i] + Stmp[i]",
             ("tests/solvers/test_psd_gradient.py",),
             "the compiled loop's H_L from S adds the staying triplets' sum instead of "
             "taking it away"),
    Mutation("spg_hl_direct_dropped", "sklearn_safescreen/solvers/_spg_fast.pyx",
             "(&HL[0, 0])[i] += Stmp[i]",
             "(&HL[0, 0])[i] += 0.0 * Stmp[i]",
             ("tests/solvers/test_psd_gradient.py",),
             "the compiled loop leaves the few triplets it screens to L out of H_L"),
    Mutation("laplacian_last_block_dropped", "sklearn_safescreen/problems/_triplet_fast.pyx",
             "    if nz:\n        dgemm(&tr_n, &tr_t, &d, &d, &nz, &d_one, T2, &d, T, &d, "
             "&beta, S, &d)",
             "    if False:\n        dgemm(&tr_n, &tr_t, &d, &d, &nz, &d_one, T2, &d, T, &d, "
             "&beta, S, &d)",
             ("tests/problems/test_triplet_kernels.py", "tests/solvers/test_psd_gradient.py"),
             "the blocked Laplacian sum leaves out the pairs of its last, partial block"),
    Mutation("pair_forms_block_offset", "sklearn_safescreen/problems/_triplet_fast.pyx",
             "D[start + p] = ss_dot(d, &T[p * d], &diff[(start + p) * d])",
             "D[start + p] = ss_dot(d, &T[p * d], &diff[p * d])",
             ("tests/problems/test_triplet_kernels.py", "tests/solvers/test_psd_gradient.py"),
             "the blocked pair forms read the first block's pairs in every block"),
    Mutation("spg_gather_rows_ignored", "sklearn_safescreen/solvers/_spg_fast.pyx",
             "memcpy(&diff[p, 0], &diff_src[rows_src[p], 0], d * sizeof(double))",
             "memcpy(&diff[p, 0], &diff_src[p, 0], d * sizeof(double))",
             ("tests/solvers/test_psd_gradient.py", "tests/test_metric_learning.py"),
             "the compiled loop copies the set's first pairs instead of a reduced "
             "problem's pairs"),
    Mutation("ds_dual_radius_half", "sklearn_safescreen/screening/doubly_sparse.py",
             "float(np.sqrt(2.0 * n * g / gamma))", "float(np.sqrt(n * g / gamma))", DOUBLY,
             "doubly sparse dual ball sqrt(n G / gamma), not sqrt(2 n G / gamma)"),
    Mutation("ds_primal_radius_half", "sklearn_safescreen/screening/doubly_sparse.py",
             "float(np.sqrt(2.0 * g / (lam * beta)))", "float(np.sqrt(g / (lam * beta)))",
             DOUBLY, "doubly sparse primal ball sqrt(G / (lam beta)), without the 2"),
    Mutation("ds_dual_section_twice", "sklearn_safescreen/screening/doubly_sparse.py",
             "alpha_shift_sq += part", "alpha_shift_sq += 2.0 * part", DOUBLY,
             "Theorem 2's same-pair subtraction from the dual radius counted twice"),
    Mutation("ds_primal_section_twice", "sklearn_safescreen/screening/doubly_sparse.py",
             "w_shift_sq += part", "w_shift_sq += 2.0 * part", DOUBLY,
             "Theorem 3's same-pair subtraction from the primal radius counted twice"),
    Mutation("ds_gap_error_zero", "sklearn_safescreen/problems/doubly_sparse.py",
             "error = from_products + k * EPS * terms", "error = 0.0", DOUBLY,
             "the doubly sparse gap without its rounding-error bound"),
    Mutation("ds_hinge_box_flipped", "sklearn_safescreen/screening/doubly_sparse.py",
             "box_value = c * y\n", "box_value = -c * y\n", DOUBLY,
             "classifier samples fixed at the wrong end of their box"),
    Mutation("ds_svr_box_flipped", "sklearn_safescreen/screening/doubly_sparse.py",
             "box_value = np.where(above, -c, c)", "box_value = np.where(above, c, -c)",
             DOUBLY, "regressor samples fixed at the wrong end of their box"),
    Mutation("lp_certificate_gutted", "sklearn_safescreen/engine/lp_svm.py",
             "        return Certificate(cert.gap, cert.rel_gap, (wrong_f, wrong_s),\n"
             "                           int(wrong_f.sum() + wrong_s.sum()),\n"
             "                           (check.features, check.samples), check.n_violations)",
             "        return Certificate(0.0, 0.0, None, 0, None, 0)", LP,
             "the LP-SVM certificate trusts the restricted LP: no gap, nothing contradicted "
             "or violated"),
    Mutation("lp_cut_gap0", "sklearn_safescreen/screening/lp_svm.py",
             "k = ref.primal - mass * (1.0 - gamma(n + 2)) / n",
             "k = ref.dual - mass * (1.0 - gamma(n + 2)) / n", LP,
             "Theorem 7's cut from the reference's dual bound, as if the reference were "
             "exact"),
    Mutation("lp_feature_limit", "sklearn_safescreen/screening/lp_svm.py",
             "limit = lam * data.n_samples * (1.0 - SCREEN_RTOL)",
             "limit = lam * data.n_samples * 1.05", LP,
             "Theorem 6 screens features whose correlation bound reaches 1.05 lambda n"),
    Mutation("ds_smoothing_not_problem", "sklearn_safescreen/_doubly_sparse_base.py",
             '_solver_params = frozenset({"l1_ratio", "screening",',
             '_solver_params = frozenset({"smoothing", "l1_ratio", "screening",',
             (*WARM, "tests/test_doubly_sparse.py"),
             "the doubly sparse estimators declare smoothing a solver parameter: a warm "
             "start after a change of smoothing reuses the old problem's paths"),
    Mutation("ds_class_weight_not_problem", "sklearn_safescreen/_doubly_sparse_base.py",
             '_solver_params = frozenset({"l1_ratio", "screening",',
             '_solver_params = frozenset({"class_weight", "l1_ratio", "screening",',
             (*WARM, "tests/test_doubly_sparse.py"),
             "the doubly sparse estimators declare class_weight a solver parameter"),
    Mutation("lp_class_weight_not_problem", "sklearn_safescreen/lp_svm.py",
             '_solver_params = frozenset({"screening", "solver", "tol",',
             '_solver_params = frozenset({"class_weight", "screening", "solver", "tol",',
             (*WARM, *LP),
             "SafeLPSVC declares class_weight a solver parameter"),
    Mutation("cv_folds_share_estimator", "sklearn_safescreen/_search_walk.py",
             "    est = clone(estimator)\n",
             "    est = estimator\n",
             FOLDS,
             "RegularizationPathCV's folds walk one shared estimator instead of a clone "
             "each"),
    Mutation("ds_unweighted_downdate", "sklearn_safescreen/screening/doubly_sparse.py",
             "col_sq -= (rows * rows).T @ c[idx]",
             "col_sq -= (rows * rows).sum(axis=0)",
             (*DOUBLY, "tests/screening/test_doubly_sparse_weighted_downdate.py"),
             "the doubly sparse feature rule's dense column norms down-dated without the "
             "decided samples' weights"),
)


def copy_repository(dest: Path) -> None:
    """Tracked files and the built extensions (and generated C), timestamps kept."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().split("\0")
    built = [str(p.relative_to(ROOT)) for pattern in ("*.so", "*.pyd", "*.c", "*.cpp")
             for p in (ROOT / "sklearn_safescreen").rglob(pattern)]
    if not any(name.endswith((".so", ".pyd")) for name in built):
        sys.exit("no built extension found: run `python setup.py build_ext --inplace` first")
    for name in [*tracked, *built]:
        if not name or not (ROOT / name).is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


def build(copy: Path) -> None:
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                          cwd=copy, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"rebuilding the mutated copy failed:\n{proc.stderr[-3000:]}")


def run_tests(copy: Path, tests, extra: list[str]) -> tuple[int, int, str]:
    """(failed + errors, passed, summary line) of one pytest run in the copy."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-o", "console_output_style=classic", *extra, *tests],
                          cwd=copy, capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    summary = lines[-1] if lines else proc.stderr.strip()[-300:]

    def count(word):
        m = re.search(rf"(\d+) {word}", summary)
        return int(m.group(1)) if m else 0

    return count("failed") + count("error"), count("passed"), summary.strip("= ")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--min-failures", type=int, default=2,
                        help="failing tests needed to kill a mutation (default 2)")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the unmutated run of the tests")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:26s} {m.path}: {m.what}")
        return 0
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutations: {sorted(unknown)}")
    extra = args.pytest_args.split()
    rows, bad = [], False
    with tempfile.TemporaryDirectory(prefix="mutation_check_") as tmp:
        copy = Path(tmp) / "repo"
        copy_repository(copy)
        if not args.no_baseline:
            tests = sorted({t for m in chosen for t in m.tests})
            failed, passed, summary = run_tests(copy, tests, extra)
            print(f"baseline (no mutation): {summary}", flush=True)
            if failed or not passed:
                print("the tests fail without a mutation: fix that first")
                return 1
        for m in chosen:
            target = copy / m.path
            source = target.read_text()
            if source.count(m.old) != 1:
                rows.append((m, "NOT APPLIED", f"pattern found {source.count(m.old)} times"))
                bad = True
                continue
            compiled = m.path.endswith(".pyx")
            saved = {}
            if compiled:  # keep the good extension and C file to restore them
                stem = target.with_suffix("")
                for p in [*target.parent.glob(stem.name + ".*")]:
                    if p.suffix in (".so", ".pyd", ".c", ".cpp"):
                        saved[p] = p.read_bytes()
            t0 = time.perf_counter()
            try:
                target.write_text(source.replace(m.old, m.new))
                if compiled:
                    build(copy)
                failed, passed, summary = run_tests(copy, m.tests, extra)
            finally:
                shutil.copy2(ROOT / m.path, target)
                for p, data in saved.items():
                    p.write_bytes(data)
                    os.utime(p)  # newer than the restored .pyx: nothing to rebuild
            killed = failed >= args.min_failures
            bad |= not killed
            rows.append((m, "killed" if killed else "SURVIVED",
                         f"{failed} failed, {passed} passed ({time.perf_counter() - t0:.0f} s)"))
            print(f"{m.name:26s} {rows[-1][1]:9s} {rows[-1][2]}", flush=True)
    print("\nmutation                   verdict   tests")
    for m, verdict, detail in rows:
        print(f"{m.name:26s} {verdict:9s} {detail}\n{'':37s}{m.what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
