"""SafeSVC equals independent solvers: LinearSVC (linear kernel), cvxpy/CLARABEL on the
dual (kernels, multiclass one-vs-rest, sample and class weights), and itself on dense
and sparse input. Tolerances follow from the duality gaps (see ``_svm_models``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _svm_models import (
    assert_matches_cvx,
    full_beta,
    gram,
    make_binary,
    make_multiclass,
    primal_linear,
    scale_gamma,
)
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.svm import LinearSVC

from sklearn_safescreen import SafeSVC


# ------------------------------------------------------- exactness: linear kernel ---
@pytest.mark.parametrize("C", [0.03, 0.3, 1.0, 3.0])
@pytest.mark.parametrize("fit_intercept, s", [(True, 1.0), (True, 2.0), (False, 1.0)])
def test_linear_matches_linearsvc(C, fit_intercept, s):
    X, y = make_binary(n=40, d=3, seed=0)
    lsvc = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-10, max_iter=200000,
                     intercept_scaling=s, fit_intercept=fit_intercept, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lsvc.fit(X, y)
    if lsvc.n_iter_ >= 200000:
        pytest.fail("the LinearSVC oracle did not converge on this instance: raise max_iter")
    model = SafeSVC(kernel="linear", C=C, tol=1e-10, fit_intercept=fit_intercept,
                    intercept_scaling=s).fit(X, y)
    ysign = np.where(y == 1, 1.0, -1.0)
    ub = C * np.ones(len(y))
    bias = s if fit_intercept else 0.0
    P_s = primal_linear(X, ysign, model.coef_, model.intercept_[0] if bias else 0.0,
                        bias, ub)
    P_l = primal_linear(X, ysign, lsvc.coef_, lsvc.intercept_[0] if bias else 0.0,
                        bias, ub)
    assert abs(P_s - P_l) <= 1e-6 * max(1.0, abs(P_l)), (P_s, P_l)
    # coefficients: both are within sqrt(2 * (P - D_s)) of w*, D_s <= P* the dual value
    # of SafeSVC's own alpha
    X_aug = np.hstack([X, np.full((len(y), 1), bias)]) if bias else X
    beta = full_beta(model, 0, len(y))
    alpha = beta * ysign
    w_aug = X_aug.T @ beta
    D_s = float(alpha.sum() - 0.5 * w_aug @ w_aug)
    radius = np.sqrt(2 * max(P_s - D_s, 0)) + np.sqrt(2 * max(P_l - D_s, 0)) + 1e-9
    w_s = np.append(model.coef_.ravel(), model.intercept_[0] / bias if bias else [])
    w_l = np.append(lsvc.coef_.ravel(), lsvc.intercept_[0] / bias if bias else [])
    assert np.linalg.norm(w_s - w_l) <= radius
    assert radius < 1e-3  # the comparison above is meaningful
    np.testing.assert_allclose(model.coef_, lsvc.coef_, atol=1e-3)
    assert model.coef_.shape == (1, 3)
    assert model.intercept_.shape == (1,)
    if not fit_intercept:
        assert model.intercept_[0] == 0.0


def test_linear_multiclass_matches_linearsvc_ovr():
    X, y = make_multiclass(n=60, d=3, k=3, seed=1)
    C = 0.1
    lsvc = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-10, max_iter=200000,
                     random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lsvc.fit(X, y)
    if lsvc.n_iter_ >= 200000:
        pytest.fail("the LinearSVC oracle did not converge on this instance: raise max_iter")
    model = SafeSVC(kernel="linear", C=C, tol=1e-10, multi_class="ovr").fit(X, y)
    assert model.coef_.shape == (3, 3)
    for k in range(3):
        ysign = np.where(y == k, 1.0, -1.0)
        ub = C * np.ones(len(y))
        P_s = primal_linear(X, ysign, model.coef_[k], model.intercept_[k], 1.0, ub)
        P_l = primal_linear(X, ysign, lsvc.coef_[k], lsvc.intercept_[k], 1.0, ub)
        assert abs(P_s - P_l) <= 1e-6 * max(1.0, abs(P_l))
    np.testing.assert_allclose(model.coef_, lsvc.coef_, atol=1e-3)
    np.testing.assert_array_equal(model.predict(X), lsvc.predict(X))


# ------------------------------------------------------- exactness: kernels (cvxpy) ---
def _kernel_case(kind, X, Xt):
    """(estimator kwargs, fit input, test input, K_train, K_test, diag of test kernel)."""
    if kind == "rbf":
        g = scale_gamma(X)
        return ({"kernel": "rbf"}, X, Xt, gram(X, X, "rbf", g), gram(Xt, X, "rbf", g),
                np.ones(len(Xt)))
    if kind == "rbf_gamma":
        return ({"kernel": "rbf", "gamma": 0.7}, X, Xt, gram(X, X, "rbf", 0.7),
                gram(Xt, X, "rbf", 0.7), np.ones(len(Xt)))
    if kind == "poly":
        prm = {"gamma": 0.5, "degree": 2, "coef0": 1.0}
        return ({"kernel": "poly", **prm}, X, Xt, gram(X, X, "poly", **prm),
                gram(Xt, X, "poly", **prm), np.diag(gram(Xt, Xt, "poly", **prm)))
    if kind == "precomputed":
        g = 0.4
        Ktr, Kte = gram(X, X, "rbf", g), gram(Xt, X, "rbf", g)
        return ({"kernel": "precomputed"}, Ktr, Kte, Ktr, Kte, np.ones(len(Xt)))
    if kind == "callable":
        def kern(A, B):
            return polynomial_kernel(A, B, degree=2, gamma=0.3, coef0=0.5) + \
                rbf_kernel(A, B, gamma=0.2)

        return ({"kernel": kern}, X, Xt, kern(X, X), kern(Xt, X), np.diag(kern(Xt, Xt)))
    if kind == "linear":
        return ({"kernel": "linear"}, X, Xt, X @ X.T, Xt @ X.T, np.einsum("ij,ij->i", Xt, Xt))
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["rbf", "rbf_gamma", "poly", "precomputed", "callable",
                                  "linear"])
@pytest.mark.parametrize("C", [0.5, 10.0])
def test_kernel_matches_cvxpy(kind, C):
    X, y = make_binary(n=80, d=3, seed=2, noise=1.0)
    Xt, _ = make_binary(n=25, d=3, seed=3)
    kw, fit_in, test_in, Ktr, Kte, dte = _kernel_case(kind, X, Xt)
    model = SafeSVC(C=C, tol=1e-10, **kw).fit(fit_in, y)
    assert_matches_cvx(model, test_in, Ktr, Kte, dte, y, np.ones(len(y)), C, 1.0)


def test_kernel_intercept_scaling_matches_cvxpy():
    X, y = make_binary(n=70, d=3, seed=4)
    Xt, _ = make_binary(n=20, d=3, seed=5)
    g = 0.5
    model = SafeSVC(C=2.0, kernel="rbf", gamma=g, intercept_scaling=3.0,
                    tol=1e-10).fit(X, y)
    assert_matches_cvx(model, Xt, gram(X, X, "rbf", g), gram(Xt, X, "rbf", g),
                       np.ones(len(Xt)), y, np.ones(len(y)), 2.0, 3.0)
    model = SafeSVC(C=2.0, kernel="rbf", gamma=g, fit_intercept=False,
                    tol=1e-10).fit(X, y)
    assert_matches_cvx(model, Xt, gram(X, X, "rbf", g), gram(Xt, X, "rbf", g),
                       np.ones(len(Xt)), y, np.ones(len(y)), 2.0, 0.0)


# ---------------------------------------------------------------- multiclass ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_multiclass_ovr_matches_cvxpy(kernel):
    X, y = make_multiclass(n=90, d=3, k=3, seed=4)
    Xt, _ = make_multiclass(n=21, d=3, k=3, seed=5)
    kw = {"gamma": 0.4} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, multi_class="ovr", **kw).fit(X, y)
    assert model.dual_coef_.shape[0] == 3
    assert model.n_iter_.shape == (3,)
    assert model.dual_gap_.shape == (3,)
    Ktr = gram(X, X, kernel, 0.4)
    Kte = gram(Xt, X, kernel, 0.4)
    dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
    assert_matches_cvx(model, Xt, Ktr, Kte, dte, y, np.ones(len(y)), 3.0, 1.0)
    scores = model.decision_function(Xt)
    np.testing.assert_array_equal(model.predict(Xt), model.classes_[scores.argmax(axis=1)])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_string_labels(kernel):
    X, y = make_multiclass(n=90, d=3, k=3, seed=6)
    names = np.array(["setosa", "versicolor", "virginica"])
    ys = names[y]
    a = SafeSVC(kernel=kernel, C=1.0, tol=1e-9).fit(X, ys)
    b = SafeSVC(kernel=kernel, C=1.0, tol=1e-9).fit(X, y)
    np.testing.assert_array_equal(a.classes_, names)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)
    pred = a.predict(X)
    assert pred.dtype.kind in "UO"
    np.testing.assert_array_equal(pred, names[b.predict(X)])
    # binary with strings: the positive class is classes_[1]
    mask = y < 2
    a2 = SafeSVC(kernel=kernel, C=1.0, tol=1e-9).fit(X[mask], ys[mask])
    b2 = SafeSVC(kernel=kernel, C=1.0, tol=1e-9).fit(X[mask], y[mask])
    np.testing.assert_allclose(a2.decision_function(X), b2.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(a2.predict(X[mask]), names[b2.predict(X[mask])])


@pytest.mark.parametrize("labels", [(-1, 1), (3, 7)])
def test_non_default_numeric_labels(labels):
    X, y = make_binary(n=60, d=3, seed=15)
    yl = np.array(labels)[y]
    a = SafeSVC(kernel="linear", C=1.0, tol=1e-9).fit(X, yl)
    b = SafeSVC(kernel="linear", C=1.0, tol=1e-9).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(a.predict(X), np.array(labels)[b.predict(X)])


# -------------------------------------------------------------------- weights ---
def _weights_case(kind, y):
    """(fit kwargs, sample_weight, c_i) for labels ``y`` (0..k-1)."""
    counts = np.bincount(y)
    n, k = len(y), len(counts)
    if kind == "balanced":
        return {"class_weight": "balanced"}, None, (n / (k * counts))[y]
    if kind == "dict":
        cw = {0: 3.0, 1: 0.5}
        return {"class_weight": cw}, None, np.array([cw.get(c, 1.0) for c in y])
    if kind == "dict_partial":
        return {"class_weight": {1: 4.0}}, None, np.where(y == 1, 4.0, 1.0)
    if kind == "sample_weight":
        sw = np.random.RandomState(3).uniform(0.2, 3.0, n)
        return {}, sw, sw
    if kind == "both":
        # "balanced" weighs each class by the inverse of its total sample weight
        sw = np.random.RandomState(4).uniform(0.2, 3.0, n)
        return {"class_weight": "balanced"}, sw, sw * (sw.sum() / (k * np.bincount(y, sw)))[y]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["balanced", "dict", "dict_partial", "sample_weight",
                                  "both"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_weights_match_cvxpy(kind, kernel):
    X, y = make_binary(n=70, d=3, seed=16, offset=1.0)  # unbalanced classes
    Xt, _ = make_binary(n=20, d=3, seed=17)
    kw, sw, c = _weights_case(kind, y)
    g = 0.5
    model = SafeSVC(kernel=kernel, C=2.0, tol=1e-10, gamma=g, **kw).fit(
        X, y, sample_weight=sw)
    Ktr, Kte = gram(X, X, kernel, g), gram(Xt, X, kernel, g)
    dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
    assert_matches_cvx(model, Xt, Ktr, Kte, dte, y, c, 2.0, 1.0)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_balanced_class_weight_multiclass_matches_cvxpy(multi_class):
    X, y = make_multiclass(n=75, d=3, k=3, seed=7)
    keep = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:12],
                 np.flatnonzero(y == 2)[:18]]
    X, y = X[keep], y[keep]
    Xt, _ = make_multiclass(n=15, d=3, k=3, seed=8)
    model = SafeSVC(kernel="rbf", gamma=0.4, C=1.5, class_weight="balanced",
                    tol=1e-10, multi_class=multi_class).fit(X, y)
    counts = np.bincount(y)
    c = (len(y) / (3 * counts))[y]
    assert_matches_cvx(model, Xt, gram(X, X, "rbf", 0.4), gram(Xt, X, "rbf", 0.4),
                       np.ones(len(Xt)), y, c, 1.5, 1.0)


@pytest.mark.parametrize("labels", [(-1, 1), ("neg", "pos")])
def test_class_weight_dict_keyed_by_original_labels(labels):
    """class_weight keys are the user's class labels (as in LinearSVC/SVC)."""
    X, y = make_binary(n=70, d=3, seed=18, offset=1.0)
    Xt, _ = make_binary(n=20, d=3, seed=19)
    yl = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[y]
    cw = {labels[0]: 3.0, labels[1]: 0.5}
    model = SafeSVC(kernel="linear", C=2.0, tol=1e-10, class_weight=cw).fit(X, yl)
    c = np.where(y == 0, 3.0, 0.5)
    assert_matches_cvx(model, Xt, X @ X.T, Xt @ X.T, np.einsum("ij,ij->i", Xt, Xt), y,
                       c, 2.0, 1.0)
    # and the same model as with labels 0/1
    ref = SafeSVC(kernel="linear", C=2.0, tol=1e-10,
                  class_weight={0: 3.0, 1: 0.5}).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_sample_weight_two_equals_duplicate(kernel):
    X, y = make_binary(n=50, d=3, seed=20, noise=1.0)
    Xt, _ = make_binary(n=20, d=3, seed=21)
    dup = np.arange(0, 50, 3)
    sw = np.ones(len(y))
    sw[dup] = 2.0
    kw = {"gamma": 0.5} if kernel == "rbf" else {}  # "scale" would see the new variance
    a = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, **kw).fit(X, y, sample_weight=sw)
    b = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, **kw).fit(
        np.vstack([X, X[dup]]), np.r_[y, y[dup]])
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               atol=1e-5)
    if kernel == "linear":
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_zero_weight_equals_removal(kernel):
    X, y = make_binary(n=50, d=3, seed=22, noise=1.0)
    Xt, _ = make_binary(n=20, d=3, seed=23)
    drop = np.arange(1, 50, 4)
    sw = np.ones(len(y))
    sw[drop] = 0.0
    keep = sw > 0
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    a = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, **kw).fit(X, y, sample_weight=sw)
    b = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, **kw).fit(X[keep], y[keep])
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               atol=1e-5)
    # a zero-weight sample has alpha = 0: it is never a support vector
    assert not np.isin(drop, a.support_).any()


# ------------------------------------------------------------- sparse vs dense ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("multiclass", [False, True])
def test_dense_and_csr_give_same_model(kernel, multiclass):
    if multiclass:
        X, y = make_multiclass(n=60, d=5, k=3, seed=9)
    else:
        X, y = make_binary(n=60, d=5, seed=24)
    X = X * (np.random.RandomState(0).rand(*X.shape) < 0.5)  # half the entries zero
    Xs = sp.csr_matrix(X)
    a = SafeSVC(kernel=kernel, C=2.0, tol=1e-10).fit(X, y)  # gamma="scale"
    b = SafeSVC(kernel=kernel, C=2.0, tol=1e-10).fit(Xs, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(Xs), atol=1e-6)
    np.testing.assert_allclose(b.decision_function(X), b.decision_function(Xs), atol=1e-10)
    np.testing.assert_array_equal(a.predict(X), b.predict(Xs))
    if kernel == "linear":
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
        np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-6)


