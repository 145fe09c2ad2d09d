"""SafeLPSVC, the estimator: its optimum against an independent HiGHS solve of the full
linear program (``_lp_svm_models.solve_full``, written from the definition), weights,
intercept, multiclass and string labels, sparse input, paths, the certificate under
planted faults, and scikit-learn's API checks."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import ZERO, make_problem, primal, solve_full
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen import (
    RegularizationPathCV,
    SafeLPSVC,
    ScreeningRepairWarning,
)
from sklearn_safescreen._utils import faults
from sklearn_safescreen.path import estimator_path


@parametrize_with_checks([SafeLPSVC(), SafeLPSVC(alpha=0.001, screening=None),
                          SafeLPSVC(alpha=0.001, solver="homotopy")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _objective(model, X, y, s, lam):
    """The model's objective on the full problem, labels +-1, intercept as a column."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    w = model.coef_.ravel()
    if model.fit_intercept:
        Xd = np.hstack([Xd, np.full((len(y), 1), model.intercept_scaling)])
        w = np.r_[w, model.intercept_[0] / model.intercept_scaling]
    return primal(Xd, y, s, w, lam), Xd, w


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_optimum_of_the_full_lp(sparse, intercept, weighted, seed):
    X, y, s = make_problem(seed, n=60, d=30, sparse=sparse, weights=weighted)
    s = s / s.mean()  # the estimator's normalisation of the weights
    lam_max = SafeLPSVC(fit_intercept=intercept).fit(X, y, sample_weight=s).alpha_max_
    for frac in (0.5, 0.1, 0.02):
        lam = frac * lam_max
        model = SafeLPSVC(alpha=lam, fit_intercept=intercept, tol=1e-9).fit(
            X, y, sample_weight=s)
        value, Xd, w = _objective(model, X, y, s, lam)
        opt = solve_full(Xd, y, s, lam)
        assert value == pytest.approx(opt.value, rel=1e-9, abs=1e-12)
        assert model.dual_gap_[0] <= model.tol
        if np.all(np.abs(np.abs(Xd.T @ opt.a) / len(y) - lam) > 1e-7 * lam):
            # a non-degenerate dual optimum fixes the support of every primal optimum
            np.testing.assert_array_equal(np.abs(w) > ZERO, np.abs(opt.w) > ZERO)


def test_alpha_max_is_the_exact_threshold():
    X, y, s = make_problem(3, n=50, d=20, intercept=False)
    model = SafeLPSVC(fit_intercept=False).fit(X, y)
    top = model.alpha_max_
    assert top == pytest.approx(np.abs(X.T @ y).max() / len(y), rel=1e-12)
    assert not np.any(SafeLPSVC(alpha=top, fit_intercept=False).fit(X, y).coef_)
    assert np.any(SafeLPSVC(alpha=0.9 * top, fit_intercept=False).fit(X, y).coef_)


def test_multiclass_string_labels_and_class_weight():
    X, y = make_classification(150, 20, n_informative=6, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    labels = np.array(["ant", "bee", "cat"])[y]
    model = SafeLPSVC(alpha=0.01, class_weight="balanced").fit(X, labels)
    assert model.coef_.shape == (3, 20) and model.intercept_.shape == (3,)
    assert set(model.predict(X)) <= set(labels)
    assert model.score(X, labels) > 0.8
    # each task is the binary problem of its class against the rest
    for k, name in enumerate(model.classes_):
        yk = np.where(labels == name, 1, -1)
        cw = len(yk) / (3 * np.bincount(y))  # balanced weights of the 3 classes
        binary = SafeLPSVC(alpha=0.01).fit(X, yk, sample_weight=cw[y])
        np.testing.assert_allclose(model.coef_[k], binary.coef_[0], atol=1e-6)


def test_sparse_input_is_not_densified_and_matches_dense():
    X, y, _ = make_problem(5, n=80, d=200, sparse=True, density=0.05)
    for fmt in ("csr", "csc"):
        model = SafeLPSVC(alpha=0.005).fit(X.asformat(fmt), y)
        dense_model = SafeLPSVC(alpha=0.005).fit(X.toarray(), y)
        assert model.dual_gap_[0] <= 1e-9
        np.testing.assert_allclose(model.decision_function(X), dense_model.decision_function(
            X.toarray()), atol=1e-6)


def test_a_path_equals_cold_fits_and_screens():
    X, y = make_classification(300, 100, n_informative=5, random_state=1)
    res = estimator_path(SafeLPSVC(), X, y, n_values=8, eps=0.2)
    assert res.values[0] == pytest.approx(SafeLPSVC().fit(X, y).alpha_max_)
    assert not np.any(res.coefs[0])
    # the rules screen most features near alpha_max (polytopes, no gap balls: little
    # further down; doc/theory/lp_svm.rst)
    assert res.screening_rates[1] > 0.5
    for k in (3, 7):
        lam = res.values[k]
        cold = SafeLPSVC(alpha=lam, screening=None).fit(X, y)
        warm = res.estimator if k == 7 else clone(res.estimator).set_params(
            alpha=lam, warm_start=False).fit(X, y)
        s = np.ones(len(y))
        v_cold = _objective(cold, X, np.where(y == 1, 1.0, -1.0), s, lam)[0]
        v_warm = _objective(warm, X, np.where(y == 1, 1.0, -1.0), s, lam)[0]
        assert v_warm == pytest.approx(v_cold, rel=1e-9)
    counts = res.reports[-1].counts
    assert counts["features"].n_variables == 101 and counts["samples"].n_variables == 300


@pytest.mark.parametrize("screening", ["simultaneous", "features", "samples", None])
def test_every_screening_mode_gives_the_optimum(screening):
    X, y = make_classification(120, 40, n_informative=5, random_state=2)
    model = SafeLPSVC(screening=screening, warm_start=True)
    top = model.fit(X, y).alpha_max_
    yy = np.where(y == 1, 1.0, -1.0)
    for frac in (0.3, 0.1, 0.03):
        model.set_params(alpha=frac * top).fit(X, y)
        value, Xd, _ = _objective(model, X, yy, np.ones(120), frac * top)
        assert value == pytest.approx(solve_full(Xd, yy, np.ones(120), frac * top).value,
                                      rel=1e-9)


def _walk_under_fault(share, seed):
    X, y = make_classification(150, 40, n_informative=5, random_state=4)
    yy = np.where(y == 1, 1.0, -1.0)
    model = SafeLPSVC(warm_start=True)
    top = model.fit(X, y).alpha_max_
    with faults.planted("force", share=share, seed=seed) as planted, \
            warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for frac in (0.5, 0.2, 0.05):
            lam = frac * top
            model.set_params(alpha=lam).fit(X, y)
            value, Xd, _ = _objective(model, X, yy, np.ones(150), lam)
            assert value == pytest.approx(solve_full(Xd, yy, np.ones(150), lam).value,
                                          rel=1e-9)
    assert planted.uses
    return [w for w in rec if w.category is ScreeningRepairWarning], model


@pytest.mark.parametrize("seed", [0, 1])
def test_wrong_decisions_are_repaired_to_the_optimum(seed):
    """Planted wrong decisions (features at 0, samples at 0): every fit still returns
    the full problem's optimum, and the decisions are proven wrong (a warning) by the
    optimal values they imply."""
    repairs, _ = _walk_under_fault(share=0.5, seed=seed)
    assert repairs and all("LP-SVM" in str(w.message) for w in repairs)


def test_pickle_is_small_and_predicts_the_same():
    X, y = make_classification(2000, 30, random_state=0)
    model = SafeLPSVC(alpha=0.01).fit(X, y)
    blob = pickle.dumps(model)
    assert len(blob) < 5000
    again = pickle.loads(blob)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert not hasattr(again, "dual_coef_")


def test_in_pipeline_grid_search_and_path_cv():
    X, y = make_classification(200, 30, n_informative=5, random_state=0)
    pipe = make_pipeline(StandardScaler(), SafeLPSVC())
    grid = {"safelpsvc__alpha": [0.1, 0.01]}
    gs = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    cv = RegularizationPathCV(pipe, values=[0.1, 0.01], cv=3).fit(X, y)
    np.testing.assert_allclose(cv.cv_results_["mean_test_score"],
                               gs.cv_results_["mean_test_score"], atol=1e-12)


def test_bad_input_is_refused_clearly():
    X, y = make_classification(50, 5, random_state=0)
    with pytest.raises(ValueError, match="greater than one"):
        SafeLPSVC().fit(X, np.zeros(50))
    with pytest.raises(ValueError, match="non-zero|weights are zero"):
        SafeLPSVC().fit(X, y, sample_weight=np.zeros(50))
    with pytest.raises(ValueError, match="alpha"):
        SafeLPSVC(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="magnitude"):
        SafeLPSVC().fit(X * 1e200, y)


def test_an_uncertifiable_gap_says_what_to_do():
    """Unscaled features (breast cancer: up to 4,000) limit HiGHS's accuracy: a tol it
    cannot certify warns with the advice that applies (not "increase max_iter")."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.exceptions import ConvergenceWarning

    X, y = load_breast_cancer(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="scale the features"):
        model = SafeLPSVC(alpha=0.01, tol=1e-12).fit(X, y)
    assert model.n_iter_[0] < model.max_iter
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SafeLPSVC(alpha=0.01).fit(StandardScaler().fit_transform(X), y)



# ------------------------------------------- defects found by scikit-learn's SVM tests ---
@pytest.mark.parametrize("path", [False, True])
def test_balanced_class_weight_with_integer_sample_weight_equals_repetition(path):
    """Balanced class weights follow the total sample weight of each class, in fit and
    in the exact path's fit_path."""
    X, y = make_classification(60, 5, weights=[0.7], random_state=0)
    sw = np.random.RandomState(0).randint(0, 4, len(y))
    model = SafeLPSVC(alpha=0.05, class_weight="balanced", tol=1e-10)
    fit = model.fit_path if path else model.fit
    a = fit(X, y, sample_weight=sw).decision_function(X)
    b = fit(np.repeat(X, sw, axis=0), np.repeat(y, sw)).decision_function(X)
    np.testing.assert_allclose(a, b, atol=1e-8)


@pytest.mark.parametrize("path", [False, True])
def test_positive_weights_on_one_class_only(path):
    X, y = make_classification(40, 5, n_classes=3, n_informative=3, random_state=0)
    model = SafeLPSVC(alpha=0.05)
    fit = model.fit_path if path else model.fit
    with pytest.raises(ValueError, match=r"positive weights belong to the same class \(2\)"):
        fit(X, y, sample_weight=(y == 2).astype(float))
    model.set_params(class_weight={1: 0.0, 2: 0.0})
    with pytest.raises(ValueError, match=r"positive weights belong to the same class \(0\)"):
        fit(X, y)
