"""The certificate as the last line of defence, end to end: a rule made wrong on purpose
inside a real fit or a real path (``sklearn_safescreen._utils.faults``) must be caught
and repaired in every family, with a ``ScreeningRepairWarning``, and the answer must be
the optimum that the unscreened solve finds.

Each test fails if the certificate is gutted (no contradiction reported, or the gap
counted over the undecided variables only): the repair warning is then missing, and
the answer is usually wrong too (``tools/mutation_check.py`` checks this).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from _screened import screened_fit
from sklearn.datasets import load_wine, make_classification, make_regression

from sklearn_safescreen import (
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    SafeLAD,
    SafeMetricLearner,
    SafeSVC,
    ScreeningRepairWarning,
)
from sklearn_safescreen._utils import faults
from sklearn_safescreen.engine.certify import MAX_REPAIRS
from sklearn_safescreen.solvers import greedy_cd


def _classification(n=240, d=8, seed=0):
    X, y = make_classification(n, d, n_informative=4, flip_y=0.1, random_state=seed)
    return X, y


def _regression(n=240, d=8, seed=0):
    X, y = make_regression(n, d, n_informative=4, noise=5.0, random_state=seed)
    return X, y


def _repaired(fit, kind="force", **fault):
    """Run ``fit()`` under a planted fault; return the repair warnings it issued."""
    with faults.planted(kind, **fault) as planted, warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fit()
    assert planted.uses, "the planted fault never acted"
    repairs = [w for w in rec if w.category is ScreeningRepairWarning]
    others = [str(w.message) for w in rec if w.category is not ScreeningRepairWarning]
    assert not others, others
    return repairs


def _close(a, b, scale, rtol=1e-5):
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * max(1.0, scale))


# ------------------------------------------------------------ box QP: SVM and LAD ---
BOX = [
    (SafeSVC, _classification, "linear"),
    (SafeSVC, _classification, "rbf"),
    (SafeLAD, _regression, "linear"),
    (SafeLAD, _regression, "rbf"),
]


def _output(model, X):
    return model.decision_function(X) if isinstance(model, SafeSVC) else model.predict(X)


@pytest.mark.parametrize(("Est", "data", "kernel"), BOX)
@pytest.mark.parametrize("seed", [0, 1])
def test_box_qp_single_fit_with_wrong_decisions_is_repaired(Est, data, kernel, seed):
    X, y = data(seed=seed)
    C = 5.0
    model = Est(kernel=kernel, C=C, tol=1e-10)
    if Est is SafeLAD and kernel != "linear":
        # a cold kernel LAD fit solves from zero, with no reference to screen from
        screened_fit(model.set_params(C=C / 2, warm_start=True), X, y)
        model.set_params(C=C)
    repairs = _repaired(lambda: screened_fit(model, X, y), share=0.5, seed=seed)
    assert repairs
    exact = Est(kernel=kernel, C=C, tol=1e-12, screening=None).fit(X, y)
    out, ref = _output(model, X), _output(exact, X)
    _close(out, ref, np.abs(ref).max())


@pytest.mark.parametrize(("Est", "data", "kernel"), BOX)
def test_box_qp_path_with_wrong_decisions_at_every_step_is_repaired(Est, data, kernel):
    X, y = data(seed=2)
    model = Est(kernel=kernel, tol=1e-10, warm_start=True)
    Cs = np.logspace(-1, 1.5, 5)

    def walk():
        for C in Cs:
            screened_fit(model.set_params(C=C), X, y)
            exact = Est(kernel=kernel, C=C, tol=1e-12, screening=None).fit(X, y)
            ref = _output(exact, X)
            _close(_output(model, X), ref, np.abs(ref).max())

    repairs = _repaired(walk, share=0.3, seed=3)
    assert len(repairs) >= len(Cs)  # every step repaired


def _perturb_references(model, scale, seed=0):
    """Replace each task's stored reference (the next step's screening reference) by an
    inexact one: the solution moved at random, with its true gap."""
    rng = np.random.RandomState(seed)
    for path in model._path.paths:
        ref = path.reference
        problem = path.data.problem(ref.C)
        alpha = np.clip(ref.alpha + scale * ref.C * rng.randn(ref.alpha.size),
                        problem.lo, problem.hi)
        path.reference = problem.reference(ref.C, alpha)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_svm_rule_reading_a_zero_reference_gap_is_repaired(kernel):
    """From an inexact reference, rules that take its gap as 0 screen wrongly (the
    reference's ball is too small); the certificate repairs the step."""
    X, y = _classification(n=400, d=10, seed=0)
    model = screened_fit(SafeSVC(kernel=kernel, C=1.0, tol=1e-10, warm_start=True), X, y)
    _perturb_references(model, 0.5)
    repairs = _repaired(lambda: screened_fit(model.set_params(C=1.5), X, y), "reference_gap0")
    assert repairs
    exact = SafeSVC(kernel=kernel, C=1.5, tol=1e-12, screening=None).fit(X, y)
    ref = exact.decision_function(X)
    _close(model.decision_function(X), ref, np.abs(ref).max())


def test_same_fit_without_the_planted_fault_is_not_repaired():
    """The control: the inexact reference alone (its gap honoured) screens safely."""
    X, y = _classification(n=400, d=10, seed=0)
    model = screened_fit(SafeSVC(kernel="linear", C=1.0, tol=1e-10, warm_start=True), X, y)
    _perturb_references(model, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        screened_fit(model.set_params(C=1.5), X, y)
    # (the rules did run from it: their decisions, with its gap, are all safe)
    assert any(e.moment == "reference" for e in model.screening_report_.events)


def test_repairs_converge_and_fall_back_to_the_unscreened_solve():
    """Every decision of every step wrong: the loop stops trusting the rules after
    ``MAX_REPAIRS`` rounds, solves without screening and certifies that."""
    X, y = _classification(n=300, d=6, seed=4)
    model = SafeSVC(kernel="linear", C=10.0, tol=1e-10)
    repairs = _repaired(lambda: screened_fit(model, X, y), share=1.0, seed=0)
    assert 1 <= len(repairs) <= MAX_REPAIRS * 4  # (a cold fit has internal steps)
    exact = SafeSVC(kernel="linear", C=10.0, tol=1e-12, screening=None).fit(X, y)
    _close(model.coef_, exact.coef_, np.abs(exact.coef_).max())


# ------------------------------------------------------------------ doubly sparse ---
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("Est", [SafeDoublySparseSVC, SafeDoublySparseSVR])
def test_doubly_sparse_fit_with_wrong_decisions_is_repaired(Est, sparse):
    import scipy.sparse as sp

    if Est is SafeDoublySparseSVC:
        X, y = make_classification(200, 30, n_informative=6, random_state=1)
    else:
        X, y = make_regression(200, 30, n_informative=6, noise=1.0, random_state=1)
    X = sp.csr_matrix(X) if sparse else X
    model = Est(alpha=0.02, tol=1e-12)
    repairs = _repaired(lambda: screened_fit(model, X, y), share=1.0)
    assert repairs
    exact = Est(alpha=0.02, tol=1e-13, screening=None).fit(X, y)
    # both certified: their coefficients lie in the primal balls of their gaps
    _close(model.coef_.ravel(), exact.coef_.ravel(), np.abs(exact.coef_).max(), rtol=1e-4)


def test_doubly_sparse_path_with_wrong_decisions_is_repaired():
    X, y = make_classification(200, 30, n_informative=6, random_state=2)
    model = SafeDoublySparseSVC(tol=1e-12, warm_start=True)
    alphas = [0.2, 0.08, 0.03, 0.01]

    def walk():
        for a in alphas:
            screened_fit(model.set_params(alpha=a), X, y)
            exact = SafeDoublySparseSVC(alpha=a, tol=1e-13, screening=None).fit(X, y)
            _close(model.coef_.ravel(), exact.coef_.ravel(), np.abs(exact.coef_).max(),
                   rtol=1e-4)

    repairs = _repaired(walk, share=0.5, seed=1)
    assert repairs


# ---------------------------------------------------------------- metric learning ---
def _wine():
    X, y = load_wine(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


@pytest.mark.parametrize("metric", ["full", "diagonal"])
def test_metric_learner_fit_with_wrong_decisions_is_repaired(metric):
    X, y = _wine()
    model = SafeMetricLearner(alpha=5.0, k=3, metric=metric, tol=1e-9)
    repairs = _repaired(lambda: screened_fit(model, X, y), share=0.5)
    assert repairs
    exact = SafeMetricLearner(alpha=5.0, k=3, metric=metric, tol=1e-11,
                              screening=None).fit(X, y)
    M, M_ref = model.get_mahalanobis_matrix(), exact.get_mahalanobis_matrix()
    _close(M, M_ref, np.abs(M_ref).max(), rtol=1e-4)


def test_metric_learner_path_with_wrong_decisions_is_repaired():
    X, y = _wine()
    model = SafeMetricLearner(k=3, tol=1e-9, warm_start=True)
    alphas = [20.0, 10.0, 5.0]

    def walk():
        for a in alphas:
            screened_fit(model.set_params(alpha=a), X, y)
            exact = SafeMetricLearner(alpha=a, k=3, tol=1e-11, screening=None).fit(X, y)
            M_ref = exact.get_mahalanobis_matrix()
            _close(model.get_mahalanobis_matrix(), M_ref, np.abs(M_ref).max(), rtol=1e-4)

    repairs = _repaired(walk, share=0.5, seed=2)
    assert repairs


@pytest.mark.parametrize(("Est", "data", "kernel"), BOX)
def test_box_qp_dynamic_balls_of_no_radius_are_repaired(Est, data, kernel, monkeypatch):
    """The solvers' gap-safe dynamic screening with its radius shrunk to 0 (every sample
    on a side of its threshold fixed there) inside a real fit."""
    X, y = data(n=600, seed=0)
    model = Est(kernel=kernel, C=10.0, tol=1e-10)
    if Est is SafeLAD and kernel != "linear":
        # (a cold kernel LAD fit from zero reaches its gap checks with nothing to fix;
        # a warm one, on the greedy solver, is finished by Newton steps before its
        # first screening: here the greedy updates alone)
        monkeypatch.setattr(greedy_cd, "DEFAULT_OPTIONS", replace(
            greedy_cd.DEFAULT_OPTIONS, newton_below_gap=0.0))
        screened_fit(model.set_params(C=5.0, warm_start=True), X, y)
        model.set_params(C=10.0)
    repairs = _repaired(lambda: screened_fit(model, X, y), "dynamic_radius", share=0.0)
    assert repairs
    exact = Est(kernel=kernel, C=10.0, tol=1e-12, screening=None).fit(X, y)
    ref = _output(exact, X)
    _close(_output(model, X), ref, np.abs(ref).max())
