"""SafeDoublySparseSVC and SafeDoublySparseSVR: exactness against cvxpy/CLARABEL, the
screened fit equal to the unscreened one, bad input, weights, the path, and the
scikit-learn API (clone, pickle, Pipeline, GridSearchCV, RegularizationPathCV,
set_output, reports, verbosity, convergence warnings).

Every comparison of two solutions is at the distance their duality gaps allow: the
primal is ``lam beta``-strongly convex (``lam = alpha l1_ratio``, ``lam beta = alpha
(1 - l1_ratio)``), so a certified gap ``G`` puts ``w`` within ``sqrt(2 G / (lam
beta))`` of the optimum (intercept weight included, in the scaled column).
"""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _doubly_sparse_models import HINGE, SVR, cvx_solve
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import (
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    doubly_sparse_path,
)
from sklearn_safescreen.model_selection import RegularizationPathCV

MODES = ["simultaneous", "features", "samples", None]
TIGHT = dict(tol=1e-11, max_iter=100000)


def classification(n=80, d=20, seed=0, k=2):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=4, n_redundant=2,
                               n_classes=k, n_clusters_per_class=1, flip_y=0.05,
                               random_state=seed)
    return X, y


def regression(n=80, d=20, seed=0):
    X, y = make_regression(n_samples=n, n_features=d, n_informative=4, noise=5.0,
                           random_state=seed)
    return X, y / y.std()


def weights_of(model, y, sample_weight=None):
    """The normalised weights c_i of the problem (the documented rescaling)."""
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    cw = np.ones(len(y))
    if getattr(model, "class_weight", None) == "balanced":
        # the inverse of each class's total sample weight
        classes, y_ind = np.unique(y, return_inverse=True)
        per = sw.sum() / (len(classes) * np.bincount(y_ind, sw))
        cw = per[y_ind]
    elif isinstance(getattr(model, "class_weight", None), dict):
        cw = np.array([model.class_weight.get(v, 1.0) for v in y])
    w = sw * cw
    keep = w > 0
    return keep, w[keep] / w[keep].mean()


def model_w(model, k=0):
    """The fitted weight vector of task ``k`` with the intercept's column weight."""
    coef = np.atleast_2d(model.coef_)[k]
    if not model.fit_intercept:
        return coef
    return np.append(coef, model.intercept_[k] / model.intercept_scaling)


def radius(model, k=0):
    lam = model.alpha * model.l1_ratio
    lam_beta = model.alpha * (1 - model.l1_ratio)
    assert lam > 0
    return np.sqrt(2 * max(model.dual_gap_[k], 1e-16) / lam_beta)


def cvx_of(model, X, y, sample_weight=None):
    """The optimum of the documented problem by cvxpy (binary or regression)."""
    keep, c = weights_of(model, y, sample_weight)
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, float)
    Xk = Xd[keep]
    if model.fit_intercept:
        Xk = np.hstack([Xk, np.full((Xk.shape[0], 1), model.intercept_scaling)])
    if isinstance(model, SafeDoublySparseSVC):
        loss, target, eps = HINGE, np.where(y[keep] == model.classes_[1], 1.0, -1.0), 0.0
    else:
        loss, target, eps = SVR, np.asarray(y, float)[keep], model.epsilon
    lam = model.alpha * model.l1_ratio
    beta = (1 - model.l1_ratio) / model.l1_ratio
    return cvx_solve(Xk, target, c, lam, beta, loss, model.smoothing, eps)[0]


# ------------------------------------------------------------- exactness ---
@pytest.mark.parametrize("kind, case", [
    (kind, case) for kind in ("svc", "svr")
    for case in ("plain", "intercept_scaling", "no_intercept", "class_weight",
                 "sample_weight") if (kind, case) != ("svr", "class_weight")])
def test_matches_cvxpy(kind, case):
    if kind == "svc":
        X, y = classification(seed=1)
        est = SafeDoublySparseSVC(alpha=0.05, **TIGHT)
    else:
        X, y = regression(seed=1)
        est = SafeDoublySparseSVR(alpha=0.05, epsilon=0.2, **TIGHT)
    sw = None
    if case == "intercept_scaling":
        est.set_params(intercept_scaling=3.0, l1_ratio=0.3, smoothing=1.5)
    elif case == "no_intercept":
        est.set_params(fit_intercept=False)
    elif case == "class_weight":
        est.set_params(class_weight={0: 3.0, 1: 0.5})
    elif case == "sample_weight":
        sw = np.random.RandomState(0).uniform(0, 3, len(y))
        sw[:5] = 0.0
    model = est.fit(X, y, sample_weight=sw)
    w_ref = cvx_of(model, X, y, sw)
    assert np.linalg.norm(model_w(model) - w_ref) <= radius(model) + 1e-6
    assert radius(model) < 1e-3  # the comparison means something
    assert np.any(model_w(model) == 0) and np.any(model_w(model) != 0)
    if case == "sample_weight":  # zero-weight samples have no dual variable
        assert not model.dual_coef_[0, :5].any()


@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_dense_csr_csc_give_the_same_model(kind):
    if kind == "svc":
        X, y = classification(seed=2)
        est = SafeDoublySparseSVC(alpha=0.03, class_weight="balanced", **TIGHT)
    else:
        X, y = regression(seed=2)
        est = SafeDoublySparseSVR(alpha=0.03, **TIGHT)
    X = X * (np.random.RandomState(0).rand(*X.shape) < 0.5)
    sw = np.random.RandomState(1).uniform(0.5, 2, len(y))
    models = [clone(est).fit(A, y, sample_weight=sw)
              for A in (X, sp.csr_matrix(X), sp.csc_matrix(X))]
    r = max(radius(m) for m in models)
    for m in models[1:]:
        assert np.linalg.norm(model_w(m) - model_w(models[0])) <= 2 * r
        np.testing.assert_allclose(m.predict(X), models[0].predict(X), atol=1e-6)
    if kind == "svc":
        w_ref = cvx_of(models[0], X, y, sw)
        assert np.linalg.norm(model_w(models[0]) - w_ref) <= r + 1e-6


@pytest.mark.parametrize("kind", ["svc", "svr"])
@pytest.mark.parametrize("sparse", [False, True])
def test_screened_fit_equals_the_unscreened_one(kind, sparse):
    if kind == "svc":
        X, y = classification(n=120, d=40, seed=3)
        est = SafeDoublySparseSVC(alpha=0.02, **TIGHT)
    else:
        X, y = regression(n=120, d=40, seed=3)
        est = SafeDoublySparseSVR(alpha=0.02, epsilon=0.3, **TIGHT)
    if sparse:
        X = sp.csr_matrix(X * (np.random.RandomState(0).rand(*X.shape) < 0.4))
    top = clone(est).fit(X, y).alpha_max_
    for alpha in (0.3 * top, 0.1 * top):
        models = {m: clone(est).set_params(screening=m, alpha=alpha).fit(X, y)
                  for m in MODES}
        # a step of a path: the previous solution is the screening reference
        walked = {m: clone(est).set_params(screening=m, alpha=1.5 * alpha, warm_start=True)
                  .fit(X, y).set_params(alpha=alpha).fit(X, y) for m in MODES}
        base = models[None]
        for mode in MODES:
            for m in (models[mode], walked[mode]):
                dist = np.linalg.norm(model_w(m) - model_w(base))
                assert dist <= radius(m) + radius(base), mode
            counts = walked[mode].screening_report_.counts
            if mode is not None:
                assert counts["features"].n_screened + counts["samples"].n_screened > 0


# ------------------------------------------------------------- multiclass ---
def test_multiclass_string_labels_and_threads():
    X, y = classification(n=120, d=15, seed=4, k=3)
    labels = np.array(["ant", "bee", "cat"])[y]
    one = SafeDoublySparseSVC(alpha=0.02, n_jobs=1, **TIGHT).fit(X, labels)
    two = SafeDoublySparseSVC(alpha=0.02, n_jobs=2, **TIGHT).fit(X, labels)
    assert one.coef_.shape == (3, 15) and one.intercept_.shape == (3,)
    np.testing.assert_array_equal(one.classes_, ["ant", "bee", "cat"])
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    assert set(one.predict(X)) <= {"ant", "bee", "cat"}
    assert one.decision_function(X).shape == (120, 3)
    assert one.dual_coef_.shape == (3, 120) and one.dual_gap_.shape == (3,)
    # each one-vs-rest task is the binary problem of its class
    for k, name in enumerate(one.classes_):
        binary = SafeDoublySparseSVC(alpha=0.02, **TIGHT).fit(X, labels == name)
        assert np.linalg.norm(model_w(one, k) - model_w(binary)) \
            <= radius(one, k) + radius(binary)
    assert one.score(X, labels) > 0.7
    assert {e.task for e in one.screening_report_.events} >= {"ant", "bee", "cat"}


# ------------------------------------------------------------- bad input ---
@pytest.mark.parametrize("est", [SafeDoublySparseSVC, SafeDoublySparseSVR])
@pytest.mark.parametrize("l1_ratio", [0.0, 1.0])
def test_l1_ratio_at_the_ends_is_refused(est, l1_ratio):
    X, y = classification(n=30, d=8)
    with pytest.raises(ValueError, match="l1_ratio must be strictly between 0 and 1"):
        est(l1_ratio=l1_ratio).fit(X, y)
    with pytest.raises(ValueError, match="strongly convex"):
        doubly_sparse_path(X, y, estimator=est(l1_ratio=l1_ratio), n_values=3)


@pytest.mark.parametrize("est", [SafeDoublySparseSVC, SafeDoublySparseSVR])
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_input_is_refused(est, where, value):
    X, y = classification(n=30, d=8)
    X, y = X.copy(), y.astype(float)
    if where == "X":
        X[3, 2] = value
    else:
        y[3] = value
    with pytest.raises(ValueError, match="NaN|infinity|finite"):
        est().fit(X, y)


def test_one_class_is_refused():
    X, _ = classification(n=30, d=8)
    with pytest.raises(ValueError, match="greater than one"):
        SafeDoublySparseSVC().fit(X, np.ones(30))


@pytest.mark.parametrize("est", [SafeDoublySparseSVC, SafeDoublySparseSVR])
def test_bad_sample_weights_are_refused(est):
    X, y = classification(n=30, d=8)
    sw = np.ones(30)
    sw[4] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        est().fit(X, y, sample_weight=sw)
    with pytest.raises(ValueError, match="zero"):
        est().fit(X, y, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match="all sample weights are zero"):
        SafeDoublySparseSVC(class_weight={0: 0.0, 1: 0.0}).fit(X, y)


# ---------------------------------------------------------------- weights ---
@pytest.mark.parametrize("Estimator", [SafeDoublySparseSVC, SafeDoublySparseSVR])
@pytest.mark.parametrize("sparse", [False, True])
def test_default_tol_fits_agree_to_rounding(Estimator, sparse, monkeypatch):
    """At the default tol the gap bounds |w - w*| only by sqrt(2 tol / (alpha (1 -
    l1_ratio))) = 0.02, and weight 2 against a repeated sample differed by 3e-4
    (check_sample_weight_equivalence failed). The Newton polish on the solution's
    piece makes both the optimum to rounding, and never raises the certified gap."""
    import sklearn_safescreen._doubly_sparse_base as base

    X, y = classification(n=60, d=8, seed=21) if Estimator is SafeDoublySparseSVC \
        else regression(n=60, d=8, seed=21)
    sw = np.ones(60)
    sw[[2, 9, 30]] = 2.0
    idx = np.concatenate([np.arange(60), [2, 9, 30]])
    Xs = sp.csr_matrix(X) if sparse else X
    weighted = Estimator().fit(Xs, y, sample_weight=sw)
    repeated = Estimator().fit(Xs[idx], y[idx])
    np.testing.assert_allclose(model_w(weighted), model_w(repeated), rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(base, "polish", lambda data, outcome, lam, beta: outcome)
    unpolished = Estimator().fit(Xs, y, sample_weight=sw)
    assert weighted.dual_gap_[0] <= unpolished.dual_gap_[0]
    assert np.linalg.norm(model_w(weighted) - model_w(unpolished)) <= radius(unpolished)


@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_weight_two_equals_a_repeated_sample(kind):
    if kind == "svc":
        X, y = classification(n=50, d=10, seed=5)
        est = SafeDoublySparseSVC(alpha=0.02, **TIGHT)
    else:
        X, y = regression(n=50, d=10, seed=5)
        est = SafeDoublySparseSVR(alpha=0.02, **TIGHT)
    sw = np.ones(50)
    sw[[3, 7, 11]] = 2.0
    sw[[20, 21]] = 0.0
    weighted = clone(est).fit(X, y, sample_weight=sw)
    idx = np.concatenate([np.delete(np.arange(50), [20, 21]), [3, 7, 11]])
    repeated = clone(est).fit(X[idx], y[idx])
    assert np.linalg.norm(model_w(weighted) - model_w(repeated)) \
        <= radius(weighted) + radius(repeated)
    # and scaling every weight changes nothing
    scaled = clone(est).fit(X, y, sample_weight=7.5 * sw)
    assert np.linalg.norm(model_w(weighted) - model_w(scaled)) \
        <= radius(weighted) + radius(scaled)


# ------------------------------------------------------------- path, warm ---
@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_warm_start_path_equals_cold_fits(kind):
    if kind == "svc":
        X, y = classification(n=100, d=30, seed=6)
        est = SafeDoublySparseSVC(**TIGHT)
    else:
        X, y = regression(n=100, d=30, seed=6)
        est = SafeDoublySparseSVR(**TIGHT)
    top = clone(est).fit(X, y).alpha_max_
    warm = clone(est).set_params(warm_start=True)
    for a in top * np.array([1.2, 0.5, 0.2, 0.05, 0.3]):  # down, then back up
        warm.set_params(alpha=a).fit(X, y)
        cold = clone(est).set_params(alpha=a).fit(X, y)
        assert np.linalg.norm(model_w(warm) - model_w(cold)) \
            <= radius(warm) + radius(cold), a
        assert hasattr(warm, "_path") and not hasattr(cold, "_path")


def own_alpha_max(X, y, est):
    """max_j |X_j' alpha(0)| / (n l1_ratio) on the intercept-augmented design."""
    n = len(y)
    Xa = np.hstack([X, np.full((n, 1), est.intercept_scaling)]) if est.fit_intercept else X
    g = est.smoothing
    if isinstance(est, SafeDoublySparseSVC):
        ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
        a0 = ys * min(1.0, 1.0 / g)
    else:
        a0 = np.sign(y) * np.minimum(1.0, np.maximum(np.abs(y) - est.epsilon, 0) / g)
    return np.abs(Xa.T @ a0).max() / (n * est.l1_ratio)


@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_doubly_sparse_path(kind):
    if kind == "svc":
        X, y = classification(n=80, d=20, seed=7)
        est = SafeDoublySparseSVC(l1_ratio=0.3, smoothing=2.0, **TIGHT)
    else:
        X, y = regression(n=80, d=20, seed=7)
        est = SafeDoublySparseSVR(l1_ratio=0.3, epsilon=0.5, **TIGHT)
    res = doubly_sparse_path(X, y, estimator=est, n_values=8, eps=1e-2)
    alphas, gaps, reports = res.values, res.dual_gaps, res.reports
    coefs = np.stack(res.coefs, axis=-1)
    top = clone(est).fit(X, y).alpha_max_
    assert top == pytest.approx(own_alpha_max(X, y, est), rel=1e-12)
    assert alphas.shape == (8,) and np.all(np.diff(alphas) < 0)
    assert alphas[0] == pytest.approx(top, rel=1e-12)
    assert alphas[-1] == pytest.approx(1e-2 * top, rel=1e-12)
    shape = (1, 20, 8) if kind == "svc" else (20, 8)
    assert coefs.shape == shape and gaps.shape == (8,) and len(reports) == 8
    assert not np.any(coefs[..., 0])  # at alpha_max the solution is exactly 0
    assert np.any(coefs[..., -1])
    assert np.all(gaps <= est.tol)
    # each value equals a cold fit
    for k in (2, 5):
        cold = clone(est).set_params(alpha=alphas[k]).fit(X, y)
        lam_beta = alphas[k] * (1 - est.l1_ratio)
        r = np.sqrt(2 * max(gaps[k], 1e-16) / lam_beta) + radius(cold)
        assert np.linalg.norm(coefs[..., k].ravel() - np.ravel(cold.coef_)) <= r
    # values above alpha_max, given explicitly: exact zeros, closed form
    res2 = doubly_sparse_path(X, y, [top * 3, top, top * 1.5], estimator=est)
    alphas2, coefs2, reports2 = res2.values, np.stack(res2.coefs, axis=-1), res2.reports
    np.testing.assert_allclose(alphas2, [top * 3, top * 1.5, top])
    assert not np.any(coefs2)
    assert any(e.rule == "closed_form" for e in reports2[0].events)


# -------------------------------------------------------------- the API ---
@pytest.mark.parametrize("est", [SafeDoublySparseSVC(alpha=0.05),
                                 SafeDoublySparseSVR(alpha=0.05)])
def test_clone_and_pickle(est):
    X, y = classification(n=200, d=20, seed=8)
    model = clone(est).set_params(warm_start=True).fit(X, y)
    assert hasattr(model, "_path")
    c = clone(model)
    assert c.get_params() == model.get_params() and not hasattr(c, "coef_")
    blob = pickle.dumps(model)
    assert len(blob) < 8_000  # the coefficients, not the training set (n = 200)
    restored = pickle.loads(blob)
    assert not hasattr(restored, "_path") and not hasattr(restored, "_input_memo")
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    np.testing.assert_array_equal(restored.coef_, model.coef_)
    assert repr(restored.screening_report_) == repr(model.screening_report_)
    restored.set_params(alpha=0.03).fit(X, y)  # a warm start after unpickling starts cold


@pytest.mark.parametrize("Estimator", [SafeDoublySparseSVC, SafeDoublySparseSVR])
def test_pickle_holds_only_what_predict_needs(Estimator):
    """The pickle of a 20000 x 50 fit used to be 162 KB, 160 KB of it dual_coef_ (one
    value per sample); it is now about a linear SafeSVC's (2 KB). The dual solution
    stays on the fitted estimator and is refused clearly after unpickling."""
    X, y = make_classification(n_samples=20000, n_features=50, random_state=0)
    model = Estimator().fit(X, y)
    assert model.dual_coef_.shape == (1, 20000)
    blob = pickle.dumps(model)
    assert len(blob) < 4_000
    restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    with pytest.raises(AttributeError, match="dual_coef_: the dual solution is available "
                                             "after fit but is not pickled"):
        restored.dual_coef_  # noqa: B018
    assert not hasattr(restored, "dual_coef_")
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        restored.nothing  # noqa: B018


def test_pipeline_grid_search_and_set_output():
    X, y = classification(n=120, d=12, seed=9)
    pipe = make_pipeline(StandardScaler(), SafeDoublySparseSVC(alpha=0.05))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.7
    pipe.set_output(transform="pandas")
    pytest.importorskip("pandas")
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (120,)
    grid = GridSearchCV(SafeDoublySparseSVC(), {"alpha": [0.3, 0.03, 0.003]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["alpha"] in (0.3, 0.03, 0.003)
    Xr, yr = regression(n=80, d=10, seed=9)
    grid = GridSearchCV(SafeDoublySparseSVR(), {"alpha": [0.1, 0.01]}, cv=3).fit(Xr, yr)
    assert hasattr(grid, "best_estimator_")


@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_regularization_path_cv_equals_grid_search(kind):
    if kind == "svc":
        X, y = classification(n=150, d=15, seed=10)
        est = SafeDoublySparseSVC(**TIGHT)
        cv = StratifiedKFold(3)
    else:
        X, y = regression(n=150, d=15, seed=10)
        est = SafeDoublySparseSVR(**TIGHT)
        cv = 3
    search = RegularizationPathCV(est, n_values=6, eps=1e-2, cv=cv).fit(X, y)
    assert search.param_name_ == "alpha"
    assert search.critical_value_ == pytest.approx(clone(est).fit(X, y).alpha_max_)
    values = [p["alpha"] for p in search.cv_results_["params"]]
    grid = GridSearchCV(est, {"alpha": values}, cv=cv).fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               grid.cv_results_["mean_test_score"], atol=1e-6)
    assert search.best_params_["alpha"] == pytest.approx(grid.best_params_["alpha"])


# ------------------------------------------------- report, verbose, warnings ---
@pytest.mark.parametrize("est", [SafeDoublySparseSVC(), SafeDoublySparseSVR()])
def test_report_verbose_and_convergence_warning(est, capsys):
    X, y = (classification if isinstance(est, SafeDoublySparseSVC) else regression)(
        n=100, d=30, seed=11)
    top = clone(est).fit(X, y).alpha_max_
    model = clone(est).set_params(alpha=0.5 * top, warm_start=True).fit(X, y)
    assert capsys.readouterr().out == ""
    model.set_params(alpha=0.3 * top, verbose=1).fit(X, y)  # screens from the previous one
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    name = type(est).__name__
    assert re.search(rf"\[{name}\] alpha={0.3 * top:.4g}: features screened \d+/31, "
                     r"samples fixed \d+/100, absolute gap \S+, epochs \d+", out), out
    report = model.screening_report_
    assert set(report.counts) == {"features", "samples"}
    assert report.counts["features"].n_variables == 31  # the intercept column included
    assert report.counts["samples"].n_variables == 100
    # what was screened is zero in the solution
    assert 0 < report.counts["features"].n_screened <= int((model_w(model) == 0).sum())
    assert 0 < report.counts["samples"].n_screened
    assert {e.kind for e in report.events} == {"features", "samples"}
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        clone(est).set_params(max_iter=1, tol=1e-14).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clone(est).fit(X, y)



@pytest.mark.parametrize("kind", ["svc", "svr"])
def test_closed_form_report_counts(kind):
    """Above alpha_max the solution is w = 0 with alpha = alpha(0): the report counts
    the samples at 0 and at the end of their box, not those strictly inside (with
    smoothing > 1 for the classifier, targets within epsilon + smoothing of 0 for the
    regressor)."""
    if kind == "svc":
        X, y = classification(n=60, d=8, seed=12)
        est = SafeDoublySparseSVC(smoothing=2.0)
    else:
        X, y = regression(n=60, d=8, seed=12)
        est = SafeDoublySparseSVR(smoothing=0.5, epsilon=0.3)
    model = clone(est).fit(X, y)
    model = clone(est).set_params(alpha=2 * model.alpha_max_).fit(X, y)
    assert not np.any(model.coef_) and model.intercept_[0] == 0.0
    alpha0 = model.dual_coef_[0]
    c = 1.0  # unit weights, mean 1
    at_zero, at_box = int((alpha0 == 0).sum()), int((np.abs(alpha0) == c).sum())
    inside = 60 - at_zero - at_box
    assert inside > 0
    counts = model.screening_report_.counts["samples"]
    assert (counts.n_lower, counts.n_upper) == (at_zero, at_box)


def test_doubly_sparse_path_walks_a_pipeline():
    """The path function is estimator_path's: a Pipeline's Safe step is walked, from
    the critical value on the data that step sees."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    X, y = classification(n=80, d=20, seed=3)
    X = sp.csr_matrix(X * 10)
    pipe = make_pipeline(MaxAbsScaler(), SafeDoublySparseSVC(**TIGHT))
    res = doubly_sparse_path(X, y, estimator=pipe, n_values=4, eps=0.1)
    assert res.param_name == "safedoublysparsesvc__alpha"
    top = SafeDoublySparseSVC(**TIGHT).fit(MaxAbsScaler().fit_transform(X), y).alpha_max_
    assert res.values[0] == pytest.approx(top, rel=1e-12)
    direct = SafeDoublySparseSVC(alpha=res.values[-1], **TIGHT).fit(
        MaxAbsScaler().fit_transform(X), y)
    np.testing.assert_allclose(res.estimator[-1].coef_, direct.coef_, atol=1e-4)
    with pytest.raises(TypeError, match="on the estimator"):
        doubly_sparse_path(X, y, estimator=pipe, l1_ratio=0.3)


def test_sparse_fingerprint_sees_every_change():
    """The warm-start fingerprint of sparse data (its arrays digested, not hashed byte
    by byte): equal for equal content, different after a one-ulp change of a stored
    value (in the digested rows and in the tail), a moved entry (indices, indptr), a
    sign flip, the other sparse layout; a warm-started fit on data changed in place
    gives the answer of a fit from scratch."""
    from sklearn_safescreen._utils.fingerprint import data_fingerprint

    X = sp.random(3000, 400, density=0.01, format="csr", random_state=0)
    X.data += 0.5
    assert X.nnz > 4096 + 1024  # the digest, not the bytes, with a tail
    base = data_fingerprint(X)
    assert data_fingerprint(X.copy()) == base
    changed = [X.copy() for _ in range(5)]
    changed[0].data[100] = np.nextafter(changed[0].data[100], np.inf)
    changed[1].data[-1] = np.nextafter(changed[1].data[-1], np.inf)  # the tail
    changed[2].indices[7] = (changed[2].indices[7] + 1) % 400
    changed[3].data[2000] *= -1.0
    changed[4].indptr[1:-1] = changed[4].indptr[2:]  # entries moved between rows
    for Z in [*changed, X.tocsc()]:
        assert data_fingerprint(Z) != base

    rng = np.random.RandomState(0)
    y = np.where(X @ rng.randn(400) > np.median(X @ rng.randn(400)), 1, -1)
    model = SafeDoublySparseSVC(alpha=0.05, warm_start=True, tol=1e-10).fit(X, y)
    assert model._input_memo is not None  # (the validated sparse X is the caller's)
    X.data[::7] *= 2.0  # in place: the same object, new content
    model.set_params(alpha=0.03).fit(X, y)
    cold = SafeDoublySparseSVC(alpha=0.03, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-6)
    X.data[3] = np.nan  # and validated again: a NaN stored in place is refused
    with pytest.raises(ValueError, match="NaN"):
        model.set_params(alpha=0.02).fit(X, y)


# ------------------------------------------- defects found by scikit-learn's SVM tests ---
def test_balanced_class_weight_with_integer_sample_weight_equals_repetition():
    X, y = classification(n=60, d=8, seed=3)
    sw = np.random.RandomState(0).randint(0, 4, len(y))
    model = SafeDoublySparseSVC(alpha=0.05, class_weight="balanced", **TIGHT)
    a = model.fit(X, y, sample_weight=sw).decision_function(X)
    b = model.fit(np.repeat(X, sw, axis=0), np.repeat(y, sw)).decision_function(X)
    np.testing.assert_allclose(a, b, atol=1e-7)


def test_positive_weights_on_one_class_only():
    X, y = classification(n=60, d=8, seed=3, k=3)
    with pytest.raises(ValueError, match=r"positive weights belong to the same class \(1\)"):
        SafeDoublySparseSVC().fit(X, y, sample_weight=(y == 1).astype(float))
    with pytest.raises(ValueError, match=r"positive weights belong to the same class \(2\)"):
        SafeDoublySparseSVC(class_weight={0: 0.0, 1: 0.0}).fit(X, y)
    # the regressor has no classes: weights on a few samples are a fit
    SafeDoublySparseSVR().fit(X, y.astype(float), sample_weight=(y == 1).astype(float))
