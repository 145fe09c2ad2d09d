"""The LP-SVM path driver (``engine/lp_svm.py``): along paths of random small problems
(dense and sparse, with and without weights and intercept, every screening mode) each
step's objective equals an independent HiGHS solve of the full LP to 1e-9 relative with
the same support, with no repair; wrong decisions planted in the screening events are
repaired with a ``ScreeningRepairWarning`` and the answer is still the full optimum.
Each of these runs with the live HiGHS model kept along the path and with the fallback
to a cold ``linprog`` per round (scipy's HiGHS bindings made unimportable)."""

from __future__ import annotations

import sys
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from _lp_svm_models import ZERO, make_problem, primal, solve_full

from sklearn_safescreen import ScreeningRepairWarning
from sklearn_safescreen._utils import faults
from sklearn_safescreen.engine.lp_svm import LPSVMPath
from sklearn_safescreen.engine.protocol import StepSettings
from sklearn_safescreen.engine.report import ScreeningReport
from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.solvers._highs_api import CORE_MODULE, highs_available, highs_core
from sklearn_safescreen.solvers.lp_warm import WarmRestrictedLP

CASES = [dict(sparse=sp_, weights=wt, intercept=ic)
         for sp_ in (False, True) for wt in (False, True) for ic in (False, True)]
IDS = ["-".join(k for k, v in c.items() if v) or "plain" for c in CASES]
BACKENDS = ["model", "linprog"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """The live HiGHS model (where scipy ships the bindings), or the fallback."""
    if request.param == "model" and not highs_available():
        pytest.skip("this scipy ships no HiGHS bindings")
    if request.param == "linprog":
        monkeypatch.setitem(sys.modules, CORE_MODULE, None)
    highs_core.cache_clear()
    yield request.param
    monkeypatch.undo()
    highs_core.cache_clear()


def step(path, lam, rule="simultaneous", tol=1e-9, max_iter=200, report=None
         ) -> SimpleNamespace:
    """One step through the engine protocol: the solution, its certificate, the
    variables screening left fixed and the step's events (also added to ``report``)."""
    own = path.new_report()
    settings = StepSettings(rule=rule, tol=tol, max_iter=max_iter)
    out = path.fit(lam, settings, own)
    if report is not None:
        for event in own.events:
            report.add(event)
    features, samples = own.counts["features"], own.counts["samples"]
    return SimpleNamespace(w=out.reference.w, alpha=out.reference.alpha, gap=out.gap,
                           rel_gap=out.rel_gap, n_iter=out.n_iter, converged=out.converged,
                           n_repairs=out.n_repairs, unscreened=out.unscreened,
                           screened_features=features.n_lower, at_zero=samples.n_lower,
                           at_box=samples.n_upper, events=own.events)


def assert_optimum(X, y, s, lam, out: SimpleNamespace):
    opt = solve_full(X, y, s, lam)
    assert out.converged and out.rel_gap <= 1e-9
    assert primal(X, y, s, out.w, lam) == pytest.approx(opt.value, rel=1e-9)
    np.testing.assert_array_equal(np.abs(out.w) > ZERO, np.abs(opt.w) > ZERO)
    assert np.all((out.w == 0.0) | (np.abs(out.w) > ZERO))  # exact zeros off the support


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("rule", ["simultaneous", "features", "samples", None])
def test_path_matches_the_full_lp(case, rule, backend):
    X, y, s = make_problem(21, n=60, d=35, **case)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data, name="t")
    report = ScreeningReport(variables={"features": data.n_features,
                                        "samples": data.n_samples})
    screened = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScreeningRepairWarning)
        for lam in data.lambda_max() * np.geomspace(1.1, 0.005, 14):
            out = step(path, lam, rule, 1e-9, 200, report)
            assert_optimum(X, y, s, lam, out)
            assert out.n_repairs == 0 and not out.unscreened
            if lam < path.lam_max:
                screened += out.screened_features + out.at_zero + out.at_box
            np.testing.assert_array_equal(path.w, out.w)
    if rule is None:
        assert screened == 0
        assert all(e.moment in ("closed_form", "solve") for e in report.events)
    else:
        assert any(e.moment == "reference" for e in report.events)
        if rule != "samples":  # (the sample rule alone proves little on these sets)
            assert screened > 0


def test_closed_form_above_lambda_max():
    X, y, s = make_problem(22, weights=True)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data)
    out = step(path, 1.5 * data.lambda_max(), rule="simultaneous")
    assert np.all(out.w == 0.0) and out.n_iter == 0
    assert out.rel_gap <= 1e-12
    np.testing.assert_allclose(out.alpha, y * s)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_path_going_up_and_down_stays_exact(case, backend):
    """The previous solution is a valid reference whatever the direction, and the live
    model carries the larger working sets of a smaller value up the path (its features
    screened there held at 0)."""
    X, y, s = make_problem(23, n=50, d=30, **case)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data)
    sizes = []
    for frac in (0.05, 0.3, 0.01, 0.2, 0.02, 0.5, 0.005):
        lam = frac * data.lambda_max()
        assert_optimum(X, y, s, lam, step(path, lam, rule="simultaneous"))
        if backend == "model":
            sizes.append(path.model.size)
    if backend == "model":
        grows = np.diff(np.array(sizes), axis=0)  # (rows, columns) only grow
        assert np.all(grows >= 0)
    else:
        assert path.model is None


def test_the_path_keeps_one_model_until_a_cold_fit_ends():
    if not highs_available():
        pytest.skip("this scipy ships no HiGHS bindings")
    X, y, s = make_problem(26, n=50, d=30, weights=True)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data)
    step(path, 0.3 * data.lambda_max())
    model = path.model
    assert isinstance(model, WarmRestrictedLP) and model.solves > 0
    step(path, 0.1 * data.lambda_max())
    assert path.model is model and model.solves > 1
    path.end_fit(keep=True)
    assert path.model is model
    path.end_fit(keep=False)
    assert path.model is None
    assert_optimum(X, y, s, 0.05 * data.lambda_max(),
                   step(path, 0.05 * data.lambda_max()))  # a new model, same answer


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_planted_wrong_decisions_are_repaired_with_a_warning(sparse, seed, backend):
    X, y, s = make_problem(24 + seed, n=60, d=40, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data)
    lams = data.lambda_max() * np.geomspace(0.8, 0.02, 6)
    with faults.planted("force", share=0.5, seed=seed) as fault, \
            warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        outs = [step(path, lam, rule="simultaneous") for lam in lams]
    assert fault.uses
    repairs = [w for w in rec if w.category is ScreeningRepairWarning]
    assert repairs and sum(o.n_repairs for o in outs) == len(repairs)
    assert all("LP-SVM polytope rules" in str(w.message) for w in repairs)
    for lam, out in zip(lams, outs, strict=True):
        assert_optimum(X, y, s, lam, out)
        assert out.screened_features + out.at_zero + out.at_box == 0 or not out.unscreened
    assert any(e.moment == "repair" and e.n_lower < 0 for o in outs for e in o.events)


def test_no_warning_without_the_planted_fault():
    X, y, s = make_problem(24, n=60, d=40, weights=True)
    data = LPSVMData(X, y, s)
    path = LPSVMPath(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScreeningRepairWarning)
        for lam in data.lambda_max() * np.geomspace(0.8, 0.02, 6):
            assert step(path, lam, rule="simultaneous").n_repairs == 0


def test_unknown_rule_is_refused():
    X, y, s = make_problem(25)
    with pytest.raises(ValueError, match="unknown screening rule"):
        step(LPSVMPath(LPSVMData(X, y, s)), 0.1, rule="gap")
