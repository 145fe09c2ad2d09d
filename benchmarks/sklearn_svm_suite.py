"""scikit-learn's own SVM tests run against SafeSVC (benchmark-only harness).

Copies ``sklearn/svm/tests/test_svm.py`` and ``test_sparse.py`` from the installed
scikit-learn into a temporary directory and runs them with pytest, with
scikit-learn's own ``conftest.py`` as a plugin (its fixtures, e.g.
``global_random_seed``) and a ``conftest.py`` of this harness that substitutes the
estimators **by monkeypatching** (the test files are copied unchanged):

* ``sklearn.svm.SVC`` becomes a subclass of :class:`~sklearn_safescreen.SafeSVC` named
  ``SVC`` (no ``__init__`` of its own), so that ``svm.SVC(**params)`` is
  ``SafeSVC(**params)``: the parameters the test gives, SafeSVC's defaults for the
  others. Parameters SafeSVC does not have are dropped where the model does not depend
  on them: ``shrinking`` (a solver heuristic), ``probability`` (deprecated in
  scikit-learn 1.9; a test that needs ``predict_proba`` then fails on its absence, the
  others call it only ``if hasattr(model, "predict_proba")``), ``break_ties=False``,
  ``decision_function_shape="ovr"`` and ``max_iter=-1`` (SVC's "no limit": SafeSVC's
  default). Any other (``decision_function_shape="ovo"``, ``break_ties=True``) is
  passed on, a ``TypeError``: a failure;
* ``sklearn.svm.LinearSVC(loss="hinge")`` (with ``penalty="l2"`` and
  ``multi_class="ovr"``, also when a clone is made of a LinearSVC set to them) becomes
  ``SafeSVC(kernel="linear")`` with the parameters both have (``C``, ``tol``,
  ``max_iter``, ``fit_intercept``, ``intercept_scaling``, ``class_weight``,
  ``verbose``, ``random_state``), under LinearSVC's signature (``dual`` is kept but not
  used; ``max_iter`` defaults to SafeSVC's); any other LinearSVC stays scikit-learn's.

The patch is installed before the test modules are imported, so ``from sklearn.svm import
LinearSVC`` and parametrisations at import time see it too. NuSVC, SVR, NuSVR,
OneClassSVM and LinearSVR stay scikit-learn's.

Which tests count: a test is **applicable** if it constructs a substitute (recorded per
test) and does not call LIBSVM/LIBLINEAR internals (``_libsvm``, ``_libsvm_sparse``,
``_validate_dual_parameter``, ``_fit_liblinear``: found in the test's code, comments and
docstrings left out); the others are counted as *excluded (internals)* and *not
applicable* (no SVC or hinge LinearSVC: NuSVC, SVR, OneClassSVM, squared-hinge
LinearSVC, ...). Failures are grouped by reason: the exception's type and first line
with its numbers replaced by ``#``.

Prints the counts, the failures grouped by reason, and a table of the failures (test,
reason, explanation) from which ``doc/user_guide/sklearn_differences.rst`` is
regenerated; the explanation comes from :data:`EXPLANATIONS` below (a failure that has
none is listed as *unclassified*: a new failure to look at). ``--rst`` prints the table
as the doc page's reStructuredText list-table; ``--json PATH`` writes every test's
record.

Run: python benchmarks/sklearn_svm_suite.py [--rst] [--json PATH] [--package-root DIR]
     [-k EXPRESSION] [--drop PARAM]
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import sklearn

REPO = Path(__file__).resolve().parent.parent
TEST_FILES = ("test_svm.py", "test_sparse.py")

#: Calls into scikit-learn's LIBSVM/LIBLINEAR internals: a test that makes them tests
#: the bindings, not the estimator.
INTERNALS = re.compile(r"\b(_libsvm|_libsvm_sparse|libsvm_sparse|_validate_dual_parameter|"
                       r"_fit_liblinear|_get_liblinear_solver_type)\b")

#: Why a test fails against SafeSVC, by test name (without its parametrisation; a
#: ``name[param]`` key applies to that parametrisation only): ``(kind, explanation)``,
#: kind "difference" (deliberate: the problem or the API differ) or "defect" (open).
_OVO = ("open (one-vs-one)", "SafeSVC is one-vs-rest: no ``decision_function_shape=\"ovo\"`` "
        "nor ``break_ties``, and one task per class, not per pair of classes (one-vs-one "
        "SafeSVC is under way).")
_EXACT = ("Exact equality with LIBSVM's dual coefficients: SafeSVC's equal them to "
          "rounding (``-0.24999999999999983`` for ``-0.25``; the solve is certified to "
          "``tol`` in relative duality gap, not to the last bit).")
_PROBA = ("difference", "No ``predict_proba``: SafeSVC has no Platt scaling (SVC's "
          "``probability=True`` is deprecated in scikit-learn 1.9).")
_NEGATIVE = ("difference", "Negative sample weights are refused with a clear error "
             "(scikit-learn's ``_check_sample_weight(ensure_non_negative=True)``); SVC "
             "drops those samples silently.")
_SPARSE_ATTRS = ("difference", "A fit on sparse X keeps ``dual_coef_`` dense (its "
                 "support vectors are sparse); the test requires both sparse.")
_LINEAR_SV = ("difference", "A linear SafeSVC is ``coef_`` and ``intercept_``, as "
              "LinearSVC: it keeps no ``support_vectors_`` (documented; they are "
              "``X[support_]`` after the fit).")
_SIGMOID = ("difference", "No sigmoid kernel: it is not positive semi-definite in "
            "general, so the dual would not be convex and screening would be unsafe.")
_OVO_ARGS = r"decision_function_shape|break_ties"

#: Why a test fails against SafeSVC: by test name (without its parametrisation; a
#: ``name[param]`` key applies to that parametrisation only), a list of ``(pattern,
#: kind, explanation)``: the first whose regular expression ``pattern`` is found in the
#: failure's reason applies. Kind "difference" is deliberate (the problem or the API
#: differ), "open" a defect or missing feature (with the work that covers it). A
#: failure no entry explains (a new test, or a known test failing for a new reason) is
#: *unclassified*.
EXPLANATIONS: dict[str, list[tuple[str, str, str]]] = {
    "test_svc": [(_OVO_ARGS, *_OVO), ("assert False", *_SPARSE_ATTRS),
                 ("'sigmoid'", *_SIGMOID), ("support_vectors_", *_LINEAR_SV)],
    "test_sparse_decision_function": [(_OVO_ARGS, *_OVO)],
    "test_decision_function": [(_OVO_ARGS, *_OVO)],
    "test_decision_function_shape": [(_OVO_ARGS, *_OVO)],
    "test_svc_invalid_break_ties_param": [(_OVO_ARGS, *_OVO)],
    "test_n_iter_libsvm": [(r"assert \(\d+,\) == \(\d+,\)", *_OVO)],
    "test_svc_ovr_tie_breaking": [(r"assert not", "difference",
        "SafeSVC predicts the argmax of its one-vs-rest decision function, so there is no "
        "tie to break: the test asserts that predictions disagree with that argmax "
        "without ``break_ties``.")],
    "test_libsvm_parameters": [("Arrays are not equal", "difference", _EXACT +
        " The test also reads the ``support_vectors_`` of a linear model (not kept: "
        "``X[support_]``).")],
    "test_precomputed": [("Arrays are not equal", "difference", _EXACT +
        " The test also compares ``intercept_`` with 0 exactly: SafeSVC's is "
        "``intercept_scaling**2`` times the sum of ``dual_coef_``, 0 up to the same "
        "rounding.")],
    "test_tweak_params": [("Arrays are not equal", "difference", _EXACT +
        " The test then edits LIBSVM's private ``_dual_coef_``.")],
    "test_probability": [("predict_proba", *_PROBA)],
    "test_hasattr_predict_proba": [("assert False|predict_proba", *_PROBA)],
    "test_sparse_svc_clone_with_callable_kernel": [("predict_proba", *_PROBA)],
    "test_probability_raises_futurewarning": [("FutureWarning", "difference",
        "No ``probability`` parameter, so no deprecation warning.")],
    "test_svc_nusvc_probA_probB_deprecated": [("FutureWarning", "difference",
        "No ``probA_`` / ``probB_`` (no Platt scaling), so no deprecation warning.")],
    "test_negative_sample_weights_mask_all_samples[weights-are-negative-SVC]": [
        ("Regex pattern did not match", *_NEGATIVE)],
    "test_negative_sample_weights_mask_all_samples[weights-are-zero-SVC]": [
        ("Regex pattern did not match", "difference",
         "Refused, with another message: \"all sample weights are zero: there is nothing "
         "to fit\" (SVC: \"Invalid input - all samples have zero or negative "
         "weights.\").")],
    "test_negative_weights_svc_leave_just_one_label": [
        ("Regex pattern did not match", *_NEGATIVE)],
    "test_negative_weights_svc_leave_two_labels": [("Negative values", *_NEGATIVE)],
    "test_negative_weight_equal_coeffs": [("Negative values", *_NEGATIVE)],
    "test_svc_iris": [("toarray", *_SPARSE_ATTRS), ("support_vectors_", *_LINEAR_SV)],
    "test_unsorted_indices": [("toarray", *_SPARSE_ATTRS)],
    "test_sparse_realdata": [("support_vectors_", *_LINEAR_SV)],
    "test_bad_input": [("DID NOT RAISE ValueError", "difference",
        "SafeSVC trained on dense X predicts sparse X (SVC refuses it).")],
    "test_svc_nonfinite_params": [("Regex pattern did not match", "difference",
        "X with entries near the float64 maximum is refused at validation, with the "
        "reason (the solvers square the entries), rather than after the fit (\"The dual "
        "coefficients or intercepts are not finite\").")],
    "test_immutable_coef_property": [("DID NOT RAISE AttributeError", "difference",
        "A linear SafeSVC predicts from ``coef_``, a plain attribute: setting it changes "
        "the model consistently (SVC's ``coef_`` is a read-only view of its dual).")],
    "test_gamma_scale": [("_gamma", "difference",
        "Private attribute: SVC's ``_gamma`` (SafeSVC resolves ``gamma=\"scale\"`` into "
        "``_kernel_params_``).")],
    "test_svc_raises_error_internal_representation": [("_n_support", "difference",
        "LIBSVM's internal representation (``_n_support``).")],
    "test_custom_kernel_not_array_input": [("could not convert string to float", "open",
        "A callable kernel gets numeric arrays only: X is validated as float64 before "
        "the kernel sees it, so a kernel on strings fails at validation.")],
    "test_svm_with_infinite_C": [("'C' parameter", "open (hard margin)",
        "``C=inf`` is refused by parameter validation (the hard-margin work covers large "
        "``C``).")],
    "test_libsvm_convergence_warnings": [("DID NOT WARN", "difference",
        "No ConvergenceWarning: SafeSVC solves this 6-sample problem to its tolerance "
        "within the ``max_iter=2`` epochs.")],
    "test_timeout": [("Regex pattern did not match", "difference",
        "A ConvergenceWarning with SafeSVC's message (the relative duality gap reached "
        "and max_iter), not LIBSVM's \"Solver terminated early\".")],
    "test_linearsvc_parameters[42-False-l2-hinge]": [("DID NOT RAISE ValueError",
        "difference", "LinearSVC refuses ``dual=False`` with the hinge loss; SafeSVC has "
        "no ``dual`` parameter (it always solves the dual).")],
}

CONFTEST = '''
"""Installed by benchmarks/sklearn_svm_suite.py: SVC and LinearSVC(loss="hinge") are
SafeSVC (see that file's docstring)."""
import inspect
import json
import os

import pytest
import sklearn.svm

from sklearn_safescreen import SafeSVC

pytest_plugins = ["sklearn.conftest"]

_STATE = {"substituted": False}
_RECORDS = os.environ["SAFESCREEN_SUITE_RECORDS"]
_DROP = tuple(filter(None, os.environ.get("SAFESCREEN_SUITE_DROP", "").split(",")))


_SAFE_PARAMS = set(inspect.signature(SafeSVC.__init__).parameters) - {"self"}


def _neutral(name, value):
    """An SVC parameter SafeSVC does not have, at a value that asks for nothing SafeSVC
    lacks: dropped (any other is passed on, a TypeError)."""
    return (name in ("shrinking", "probability", *_DROP)
            or (name, value) in {("break_ties", False), ("decision_function_shape", "ovr")})


class _SubstituteMeta(type(SafeSVC)):
    def __call__(cls, *args, **kwargs):
        _STATE["substituted"] = True
        if kwargs.get("max_iter") == -1:  # SVC's "no limit": SafeSVC's default
            kwargs.pop("max_iter")
        kwargs = {k: v for k, v in kwargs.items()
                  if k in _SAFE_PARAMS or not _neutral(k, v)}
        return super().__call__(*args, **kwargs)


class SVC(SafeSVC, metaclass=_SubstituteMeta):
    """SafeSVC under SVC's name: ``SVC(**params)`` is ``SafeSVC(**params)``."""


_LinearSVC = sklearn.svm.LinearSVC


class HingeLinearSVC(SafeSVC, metaclass=_SubstituteMeta):
    """The substitute of LinearSVC(loss="hinge"): SafeSVC(kernel="linear") with the
    parameters both have, under LinearSVC's signature (so that clone and set_params
    see LinearSVC's parameters); SafeSVC's others at their defaults. ``penalty``,
    ``dual`` and ``multi_class`` have no counterpart: kept, not used."""

    kernel, degree, gamma, coef0 = "linear", 3, "scale", 0.0
    screening, warm_start, n_jobs, cache_size = "IT", False, None, 200
    decision_function_shape, break_ties = "ovr", False  # LinearSVC's multi_class="ovr"

    def __init__(self, penalty="l2", loss="hinge", *, dual="auto", tol=1e-4, C=1.0,
                 multi_class="ovr", fit_intercept=True, intercept_scaling=1,
                 class_weight=None, verbose=0, random_state=None, max_iter=10000):
        self.penalty, self.loss, self.dual, self.tol, self.C = penalty, loss, dual, tol, C
        self.multi_class, self.fit_intercept = multi_class, fit_intercept
        self.intercept_scaling, self.class_weight = intercept_scaling, class_weight
        self.verbose, self.random_state, self.max_iter = verbose, random_state, max_iter

    def fit(self, X, y, sample_weight=None):
        if (self.loss, self.penalty, self.multi_class) != ("hinge", "l2", "ovr"):
            raise NotImplementedError("the harness substitutes LinearSVC(loss='hinge', "
                                      "penalty='l2', multi_class='ovr') only")
        return super().fit(X, y, sample_weight=sample_weight)


class LinearSVC(_LinearSVC):
    """scikit-learn's LinearSVC, except that loss="hinge" (penalty="l2",
    multi_class="ovr") constructs a HingeLinearSVC."""

    def __new__(cls, *args, **kwargs):
        bound = inspect.signature(_LinearSVC.__init__).bind(None, *args, **kwargs)
        given = dict(bound.arguments)
        given.pop("self")
        if (given.get("loss") == "hinge" and given.get("penalty", "l2") == "l2"
                and given.get("multi_class", "ovr") == "ovr"):
            return HingeLinearSVC(*args, **kwargs)
        return super().__new__(cls)


sklearn.svm.SVC = SVC
sklearn.svm.LinearSVC = LinearSVC


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _STATE["substituted"] = False
    _STATE["reports"] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    reason = ""
    if call.excinfo is not None and report.outcome in ("failed", "skipped"):
        exc = call.excinfo
        text = str(exc.value).strip().splitlines()
        reason = f"{exc.type.__name__}: {text[0] if text else ''}"
    _STATE.setdefault("reports", []).append((report.when, report.outcome, reason))
    if report.when == "teardown":
        outcome_, why = "passed", ""
        for when, out, r in _STATE["reports"]:
            if out == "failed":
                outcome_, why = ("failed" if when == "call" else "error"), r
                break
            if out == "skipped":
                outcome_, why = "skipped", r
        with open(_RECORDS, "a") as f:
            f.write(json.dumps({"nodeid": item.nodeid, "outcome": outcome_,
                                "reason": why,
                                "substituted": _STATE["substituted"]}) + "\\n")
'''


def _internal_tests(path: Path) -> set[str]:
    """Names of the test functions of ``path`` that call LIBSVM/LIBLINEAR internals
    (their code only: ast.unparse drops comments and the docstring is removed)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant):
                body = body[1:]
            code = "\n".join(ast.unparse(stmt) for stmt in body)
            code += "\n".join(ast.unparse(d) for d in node.decorator_list)
            if INTERNALS.search(code):
                names.add(node.name)
    return names


def _normalise(reason: str) -> str:
    """The reason with numbers as ``#`` and cut to 110 characters, to group by."""
    reason = re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", reason)
    reason = re.sub(r"\s+", " ", reason)
    return reason[:110]


def _test_name(nodeid: str) -> str:
    """``file::test[param]`` -> ``test[param]``."""
    return nodeid.split("::", 1)[1]


def _explanation(name: str, reason: str) -> tuple[str, str]:
    """``(kind, explanation)`` of the failure of test ``name`` with ``reason``."""
    base = name.split("[", 1)[0]
    for pattern, kind, why in EXPLANATIONS.get(name, []) + EXPLANATIONS.get(base, []):
        if re.search(pattern, reason):
            return kind, why
    return "unclassified", ""


def run(package_root: Path, keyword: str | None, drop: list[str]) -> list[dict]:
    """Run the copied tests against the package at ``package_root``; the records."""
    source = Path(sklearn.__file__).parent / "svm" / "tests"
    with tempfile.TemporaryDirectory(prefix="sklearn_svm_suite_") as tmp:
        tmp = Path(tmp)
        suite = tmp / "suite"
        suite.mkdir()
        internal = {}
        for name in TEST_FILES:
            shutil.copy(source / name, suite / name)
            internal[name] = _internal_tests(suite / name)
        (suite / "conftest.py").write_text(textwrap.dedent(CONFTEST))
        records = tmp / "records.jsonl"
        env = dict(os.environ, SAFESCREEN_SUITE_RECORDS=str(records),
                   SAFESCREEN_SUITE_DROP=",".join(drop),
                   PYTHONPATH=os.pathsep.join(
                       [str(package_root), os.environ.get("PYTHONPATH", "")]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-W", "ignore::DeprecationWarning", "--rootdir", str(suite), str(suite)]
        if keyword:
            cmd += ["-k", keyword]
        proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
        if not records.exists():
            sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
            raise SystemExit("pytest recorded no test (collection failed?)")
        out = [json.loads(line) for line in records.read_text().splitlines()]
    for r in out:
        file, rest = r["nodeid"].split("::", 1)
        r["file"] = Path(file).name
        r["internal"] = rest.split("[", 1)[0] in internal.get(r["file"], ())
        r["applicable"] = r["substituted"] and not r["internal"]
    tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    sys.stderr.write(f"pytest: {' '.join(tail)}\n")
    return out


def summary(records: list[dict], drop: list[str]) -> str:
    lines = []
    if drop:
        lines.append(f"(SVC parameters dropped whatever their value: {', '.join(drop)})")
    applicable = [r for r in records if r["applicable"]]
    counts = collections.Counter(r["outcome"] for r in applicable)
    lines.append(f"scikit-learn {sklearn.__version__}: {len(records)} tests run, "
                 f"{len(applicable)} applicable (construct SVC or LinearSVC(loss='hinge'), "
                 f"substituted by SafeSVC), "
                 f"{sum(r['internal'] for r in records)} excluded (LIBSVM/LIBLINEAR "
                 f"internals), {sum(not r['substituted'] for r in records)} not "
                 "applicable (no substitute constructed)")
    lines.append("applicable: " + ", ".join(f"{counts[k]} {k}" for k in
                                             ("passed", "failed", "error", "skipped")))
    failing = [r for r in applicable if r["outcome"] in ("failed", "error")]
    groups = collections.defaultdict(list)
    for r in failing:
        groups[_normalise(r["reason"])].append(_test_name(r["nodeid"]))
    lines.append("\nfailures by reason:")
    for reason, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(tests):3d}  {reason}")
        for t in sorted(tests):
            lines.append(f"         {t}")
    lines.append("\nfailures (test | kind | reason | explanation):")
    for r in sorted(failing, key=lambda r: (r["file"], r["nodeid"])):
        name = _test_name(r["nodeid"])
        kind, why = _explanation(name, r["reason"])
        lines.append(f"  {r['file']}::{name} | {kind} | {r['reason'][:140]} | {why}")
    return "\n".join(lines)


def rst_table(records: list[dict]) -> str:
    """The failures as the doc page's list-table: one row per test and explanation, with
    its failing parametrisations."""
    failing = sorted((r for r in records if r["applicable"]
                      and r["outcome"] in ("failed", "error")),
                     key=lambda r: (r["file"], r["nodeid"]))
    rows: dict[tuple, list[str]] = {}
    for r in failing:
        name = _test_name(r["nodeid"])
        kind, why = _explanation(name, r["reason"])
        why = why or f"Fails with ``{r['reason'][:120]}``."
        base = name.split("[", 1)[0]
        rows.setdefault((r["file"], base, kind, why), []).append(name[len(base):])
    out = [".. list-table::", "   :header-rows: 1", "   :widths: 30 12 58", "",
           "   * - Test", "     - Kind", "     - Reason"]
    for (file, base, kind, why), params in rows.items():
        params = [p for p in params if p]
        where = ""
        if len(params) == 1:
            where = f" ``{params[0]}``"
        elif params:
            where = f" ({len(params)} parametrisations)"
        out += [f"   * - ``{file}::{base}``{where}", f"     - {kind}", f"     - {why}"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package-root", type=Path, default=REPO,
                        help="directory holding the sklearn_safescreen package to test")
    parser.add_argument("--rst", action="store_true",
                        help="print the failures as the doc page's list-table")
    parser.add_argument("--json", type=Path, help="write every test's record there")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--drop", action="append", default=[], metavar="PARAM",
                        help="also drop this SVC parameter whatever its value (e.g. "
                             "decision_function_shape, to see what else a test checks); "
                             "said in the summary")
    args = parser.parse_args(argv)
    records = run(args.package_root.resolve(), args.keyword, args.drop)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    print(summary(records, args.drop))
    if args.rst:
        print()
        print(rst_table(records))


if __name__ == "__main__":
    main()
