"""Tests of SafeSVC against independent solvers (LinearSVC, cvxpy/CLARABEL).

The problem (spec svm A1 with the regularised intercept of A1.1 and weights F2):

    min_w 1/2 ||w||^2 + C sum_i c_i max(0, 1 - y_i w' phi(x_i)),

phi augmented with the constant ``intercept_scaling`` (kernel K + s^2); its dual is

    max_a  1'a - 1/2 a'Qa,   0 <= a_i <= C c_i,   Q_ij = y_i y_j (K_ij + s^2).

Tolerances are justified by duality gaps: the primal is 1-strongly convex in w, so any
primal point with gap g to a dual-feasible point is within sqrt(2 g) of w*, and a
decision value f(x) = w' phi(x) is then within sqrt(2 g) ||phi(x)|| of the optimal one.
"""

from __future__ import annotations

import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_safescreen import SafeSVC, ScreeningRepairWarning, ScreeningReport
from sklearn_safescreen.lad import SafeLAD

RULES = ["IT", "BT1", "BT2", "DVI", None]


# --------------------------------------------------------------------- helpers ---
def make_binary(n=60, d=4, seed=0, noise=0.8, offset=0.3):
    """Noisy, roughly linearly separable two-class data (labels 0/1)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    w = rng.randn(d)
    y = (X @ w + offset + noise * rng.randn(n) > 0).astype(int)
    return X, y


def make_multiclass(n=90, d=3, k=3, seed=0, spread=1.2):
    rng = np.random.RandomState(seed)
    centres = 2.0 * rng.randn(k, d)
    y = np.arange(n) % k
    X = centres[y] + spread * rng.randn(n, d)
    return X, y


def gram(A, B, kernel, gamma=None, degree=3, coef0=0.0):
    """Raw kernel (no bias) computed independently of the library."""
    if kernel == "linear":
        return A @ B.T
    if kernel == "rbf":
        return rbf_kernel(A, B, gamma=gamma)
    if kernel == "poly":
        return polynomial_kernel(A, B, degree=degree, gamma=gamma, coef0=coef0)
    raise AssertionError(kernel)


def scale_gamma(X):
    return 1.0 / (X.shape[1] * X.var())


def objectives(K_aug, ysign, ub, alpha):
    """(primal, dual) of the weighted hinge SVM at ``alpha`` (kernel form, bias in K)."""
    beta = alpha * ysign
    f = K_aug @ beta
    wsq = float(beta @ f)
    primal = 0.5 * wsq + float(ub @ np.maximum(0.0, 1.0 - ysign * f))
    dual = float(alpha.sum()) - 0.5 * wsq
    return primal, dual


def cvx_dual(K_aug, ysign, ub):
    """Independent solve of the box-constrained dual with cvxpy + CLARABEL.

    Returns the dual vector (clipped to the box) and its own duality gap.
    """
    n = ysign.size
    evals, evecs = np.linalg.eigh(0.5 * (K_aug + K_aug.T))
    evals = np.clip(evals, 0.0, None)
    keep = evals > 1e-13 * max(evals.max(), 1.0)
    L = evecs[:, keep] * np.sqrt(evals[keep])  # K_aug = L L'
    a = cp.Variable(n)
    objective = cp.Maximize(cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(ysign, a)))
    prob = cp.Problem(objective, [a >= 0, a <= ub])
    try:
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12,
                   tol_feas=1e-12, tol_ktratio=1e-10, max_iter=300)
    except cp.error.SolverError:  # too tight for this instance: CLARABEL's defaults
        a = cp.Variable(n)
        objective = cp.Maximize(cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(ysign, a)))
        prob = cp.Problem(objective, [a >= 0, a <= ub])
        prob.solve(solver=cp.CLARABEL, max_iter=300)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    alpha = np.clip(np.asarray(a.value).ravel(), 0.0, ub)
    P, D = objectives(K_aug, ysign, ub, alpha)
    return alpha, max(P - D, 0.0)


def full_beta(model, task, n):
    """alpha_i y_i over all training samples, from the public attributes."""
    beta = np.zeros(n)
    beta[model.support_] = model.dual_coef_[task]
    return beta


def scores_2d(model, X):
    s = model.decision_function(X)
    return s.reshape(-1, 1) if s.ndim == 1 else s


def assert_matches_cvx(model, X_test_input, K_train, K_test, K_test_diag, y_idx, weights,
                       C, bias, *, rel_obj=1e-6):
    """Dual objective (relative ``rel_obj``) and decision values (gap-justified bound)
    of every one-vs-rest task equal those of an independent cvxpy solve."""
    n = y_idx.size
    n_classes = model.classes_.size
    tasks = [1] if n_classes == 2 else list(range(n_classes))
    K_aug = K_train + bias**2
    Kt_aug = K_test + bias**2
    phi_norm = np.sqrt(np.maximum(K_test_diag + bias**2, 0.0))
    got = scores_2d(model, X_test_input)
    assert got.shape == (K_test.shape[0], len(tasks))
    for col, k in enumerate(tasks):
        ysign = np.where(y_idx == k, 1.0, -1.0)
        ub = C * weights
        alpha_ref, gap_ref = cvx_dual(K_aug, ysign, ub)
        _, D_ref = objectives(K_aug, ysign, ub, alpha_ref)
        beta = full_beta(model, col, n)
        alpha = beta * ysign
        # dual feasibility of the returned model
        assert np.all(alpha >= -1e-12)
        assert np.all(alpha <= ub * (1 + 1e-12) + 1e-12)
        P, D = objectives(K_aug, ysign, ub, alpha)
        assert abs(D - D_ref) <= rel_obj * max(1.0, abs(D_ref)), (k, D, D_ref)
        assert abs(P - D_ref) <= rel_obj * max(1.0, abs(D_ref)) + gap_ref, (k, P, D_ref)
        expected = Kt_aug @ (alpha_ref * ysign)
        bound = (np.sqrt(2 * max(P - D, 0.0)) + np.sqrt(2 * gap_ref)) * phi_norm + 1e-7
        np.testing.assert_array_less(np.abs(got[:, col] - expected), bound + 1e-12)
        # a loose absolute sanity check too
        np.testing.assert_allclose(got[:, col], expected, atol=1e-3)


def primal_linear(X, ysign, coef, intercept, s, ub):
    """Primal objective of LinearSVC's problem (regularised bias feature s)."""
    w = np.ravel(coef)
    wb = float(intercept) / s if s else 0.0
    f = X @ w + float(intercept)
    return 0.5 * (w @ w + wb * wb) + float(ub @ np.maximum(0.0, 1.0 - ysign * f))


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
        pytest.skip("LinearSVC did not converge on this instance")
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
        pytest.skip("LinearSVC did not converge on this instance")
    model = SafeSVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
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


# ---------------------------------------------------------- screening equivalence ---
PATH = [0.05, 0.5, 5.0, 50.0, 2.0, 0.2]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_every_rule_equals_no_screening(rule, kernel):
    X, y = make_binary(n=80, d=3, seed=6, noise=1.0)
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    Xt, _ = make_binary(n=30, d=3, seed=7)
    model = SafeSVC(kernel=kernel, screening=rule, tol=1e-9, warm_start=True, **kw)
    n_reference_screened = 0
    for C in PATH:
        model.set_params(C=C).fit(X, y)
        cold = SafeSVC(kernel=kernel, screening=None, tol=1e-9, C=C, **kw).fit(X, y)
        np.testing.assert_allclose(model.decision_function(Xt), cold.decision_function(Xt),
                                   atol=1e-5, rtol=1e-6)
        n_reference_screened += sum(e.n_screened for e in model.screening_report_.events
                                    if e.moment == "reference")
    if rule is not None:
        # the rule really acted along the path (otherwise the test would be vacuous)
        assert n_reference_screened > 0


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_every_rule_equals_no_screening_with_weights(rule, kernel):
    """Spec F2: rules with per-sample upper bounds C*c_i (sample and class weights)."""
    X, y = make_binary(n=80, d=3, seed=8, noise=1.0)
    sw = np.random.RandomState(0).uniform(0.2, 3.0, size=len(y))
    sw[:5] = 0.0
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, screening=rule, tol=1e-9, warm_start=True,
                    class_weight="balanced", **kw)
    for C in PATH:
        model.set_params(C=C).fit(X, y, sample_weight=sw)
        cold = SafeSVC(kernel=kernel, screening=None, tol=1e-9, C=C,
                       class_weight="balanced", **kw).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                                   atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_cold_fit_equals_no_screening_multiclass(rule):
    X, y = make_multiclass(n=90, d=3, k=3, seed=3)
    for kernel in ["linear", "rbf"]:
        a = SafeSVC(kernel=kernel, C=20.0, screening=rule, tol=1e-9).fit(X, y)
        b = SafeSVC(kernel=kernel, C=20.0, screening=None, tol=1e-9).fit(X, y)
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                   atol=1e-5, rtol=1e-6)


# ---------------------------------------------------------------------- paths ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_warm_start_path_equals_cold_fits(kernel, direction):
    X, y = make_binary(n=80, d=4, seed=9, noise=1.0)
    Cs = [0.01, 0.1, 1.0, 10.0, 100.0]
    if direction == "down":
        Cs = Cs[::-1]
    model = SafeSVC(kernel=kernel, tol=1e-9, warm_start=True)
    for C in Cs:
        model.set_params(C=C).fit(X, y)
        cold = SafeSVC(kernel=kernel, tol=1e-9, C=C).fit(X, y)
        np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                                   atol=1e-5, rtol=1e-6)
        np.testing.assert_array_equal(model.predict(X), cold.predict(X))
        if kernel == "linear":
            np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)
            np.testing.assert_allclose(model.intercept_, cold.intercept_, atol=1e-5)
        assert model.dual_gap_.shape == (1,)


@pytest.mark.parametrize("rule", ["IT", "BT1", "BT2", "DVI"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_warm_start_down_to_everything_screened(rule, kernel):
    """Walking down to a small C, the rules may fix *every* sample (all in L, spec A8):
    the solve must then return alpha = C c without optimising anything."""
    X, y = make_binary(n=50, d=3, seed=0, noise=1.5)
    kw = {"gamma": 0.7} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=0.03125, screening=rule, tol=1e-9, warm_start=True,
                    **kw).fit(X, y)
    model.set_params(C=0.003125).fit(X, y)
    cold = SafeSVC(kernel=kernel, C=0.003125, screening=None, tol=1e-9, **kw).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                               atol=1e-7)
    # far below C_min every alpha_i sits at its upper bound C
    np.testing.assert_allclose(np.abs(full_beta(model, 0, len(y))), 0.003125, rtol=1e-12)


def test_warm_start_same_data_reuses_reference():
    """Sanity check of the fingerprint tests below: a cold fit starts from the closed
    form at C_min (a "Cmin" event), a warm start on the same data screens from the
    previous solution instead."""
    X, y = make_binary(n=60, d=3, seed=10)
    model = SafeSVC(kernel="rbf", gamma=0.5, warm_start=True, tol=1e-9, C=1.0).fit(X, y)
    assert _started_cold(model)
    model.set_params(C=2.0).fit(X, y)
    assert not _started_cold(model)
    assert any(e.moment == "reference" for e in model.screening_report_.events)


def _started_cold(model) -> bool:
    """The fit began at the closed form at C_min, or (kernel too large for the cache)
    from nothing, rather than from a previous solution."""
    events = model.screening_report_.events
    return (any(e.rule == "Cmin" for e in events)
            or not any(e.moment == "reference" for e in events))


def _changes():
    X, y = make_binary(n=60, d=3, seed=11)
    rng = np.random.RandomState(1)
    return X, y, {
        "new_X": (X + 0.5 * rng.randn(*X.shape), y, None, {}),
        "flipped_y": (X, 1 - y, None, {}),
        "permuted_rows": (X[::-1].copy(), y[::-1].copy(), None, {}),
        "sample_weight": (X, y, rng.uniform(0.1, 3.0, len(y)), {}),
        "class_weight": (X, y, None, {"class_weight": {0: 5.0, 1: 0.5}}),
        "gamma": (X, y, None, {"gamma": 3.0}),
        "intercept_scaling": (X, y, None, {"intercept_scaling": 4.0}),
        "shrink_X": (0.2 * X, y, None, {}),
    }


@pytest.mark.parametrize("change", list(_changes()[2]))
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_warm_start_on_changed_problem_does_not_reuse_reference(kernel, change):
    X, y, changes = _changes()
    X2, y2, sw2, params = changes[change]
    if kernel == "linear" and change == "gamma":
        pytest.skip("gamma is unused by the linear kernel")
    base = {"gamma": 0.5} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=5.0, tol=1e-9, warm_start=True, **base).fit(X, y)
    model.set_params(**params).fit(X2, y2, sample_weight=sw2)
    cold = SafeSVC(kernel=kernel, C=5.0, tol=1e-9, **{**base, **params}).fit(
        X2, y2, sample_weight=sw2)
    np.testing.assert_allclose(model.decision_function(X2), cold.decision_function(X2),
                               atol=1e-5, rtol=1e-6)
    assert _started_cold(model)


def test_warm_start_after_changed_data_and_back():
    X, y = make_binary(n=60, d=3, seed=12)
    X2, y2 = make_binary(n=60, d=3, seed=13)
    model = SafeSVC(kernel="linear", warm_start=True, tol=1e-9, C=1.0)
    for XX, yy, C in [(X, y, 1.0), (X2, y2, 3.0), (X, y, 0.3), (X2, y2, 30.0)]:
        model.set_params(C=C).fit(XX, yy)
        cold = SafeSVC(kernel="linear", tol=1e-9, C=C).fit(XX, yy)
        np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)


def test_warm_start_different_number_of_samples():
    X, y = make_binary(n=60, d=3, seed=14)
    model = SafeSVC(kernel="rbf", warm_start=True, tol=1e-9, C=1.0).fit(X, y)
    model.fit(X[:40], y[:40])
    cold = SafeSVC(kernel="rbf", tol=1e-9, C=1.0).fit(X[:40], y[:40])
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                               atol=1e-5)


@pytest.mark.parametrize("kind", ["int", "float", "str"])
def test_warm_start_label_encoding_follows_the_targets(kind):
    """Warm-started fits reuse the label check and encoding only for identical numeric
    targets; relabelled, edited or string targets are encoded afresh."""
    X, y = make_binary(n=60, d=3, seed=15)
    y = np.where(y == y.max(), 1, -1)
    to = {"int": lambda t: t.astype(int), "float": lambda t: t.astype(float),
          "str": lambda t: np.where(t > 0, "yes", "no")}[kind]
    model = SafeSVC(kernel="linear", warm_start=True, tol=1e-9).fit(X, to(y))
    y_edit = y.copy()
    y_edit[:5] = -y_edit[:5]
    for yy in [-y, y_edit, y, 3 * y + 1]:
        model.fit(X, to(yy))
        cold = SafeSVC(kernel="linear", tol=1e-9).fit(X, to(yy))
        np.testing.assert_array_equal(model.classes_, cold.classes_)
        np.testing.assert_array_equal(model.predict(X), cold.predict(X))
        np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)
    with pytest.raises(ValueError, match="Unknown label type"):
        model.fit(X, y + 0.25 * np.arange(y.size))  # continuous: checked, not cached


# ---------------------------------------------------------------- multiclass ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_multiclass_ovr_matches_cvxpy(kernel):
    X, y = make_multiclass(n=90, d=3, k=3, seed=4)
    Xt, _ = make_multiclass(n=21, d=3, k=3, seed=5)
    kw = {"gamma": 0.4} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=3.0, tol=1e-10, **kw).fit(X, y)
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


# ------------------------------------------------------------ weights (spec F2) ---
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
        sw = np.random.RandomState(4).uniform(0.2, 3.0, n)
        return {"class_weight": "balanced"}, sw, sw * (n / (k * counts))[y]
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


def test_balanced_class_weight_multiclass_matches_cvxpy():
    X, y = make_multiclass(n=75, d=3, k=3, seed=7)
    keep = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:12],
                 np.flatnonzero(y == 2)[:18]]
    X, y = X[keep], y[keep]
    Xt, _ = make_multiclass(n=15, d=3, k=3, seed=8)
    model = SafeSVC(kernel="rbf", gamma=0.4, C=1.5, class_weight="balanced",
                    tol=1e-10).fit(X, y)
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


# ------------------------------------------------------------------------ API ---
def test_pipeline_and_grid_search():
    X, y = make_binary(n=80, d=4, seed=25)
    X = X * np.array([1.0, 100.0, 0.01, 5.0]) + 10.0
    pipe = make_pipeline(StandardScaler(), SafeSVC(kernel="rbf"))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.8
    grid = GridSearchCV(make_pipeline(StandardScaler(), SafeSVC(kernel="linear")),
                        {"safesvc__C": [0.01, 0.1, 1.0, 10.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["safesvc__C"] in (0.01, 0.1, 1.0, 10.0)
    assert grid.score(X, y) > 0.8
    grid2 = GridSearchCV(SafeSVC(), {"C": [0.1, 1.0], "screening": ["IT", None]}, cv=3)
    grid2.fit(X, y)
    assert hasattr(grid2, "best_estimator_")


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_clone_and_pickle(kernel):
    X, y = make_multiclass(n=60, d=3, k=3, seed=10)
    model = SafeSVC(kernel=kernel, C=0.7, class_weight="balanced", random_state=0)
    c = clone(model)
    assert c.get_params() == model.get_params()
    assert not hasattr(c, "classes_")
    model.fit(X, y)
    c2 = clone(model)
    assert not hasattr(c2, "classes_")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    np.testing.assert_array_equal(restored.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(restored.dual_coef_, model.dual_coef_)
    assert repr(restored.screening_report_) == repr(model.screening_report_)


def test_pickle_precomputed_and_sparse():
    X, y = make_binary(n=50, d=4, seed=26)
    K = rbf_kernel(X, X, gamma=0.5)
    m = SafeSVC(kernel="precomputed").fit(K, y)
    r = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(r.decision_function(K), m.decision_function(K))
    Xs = sp.csr_matrix(X * (X > 0))
    m = SafeSVC(kernel="rbf").fit(Xs, y)
    r = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(r.decision_function(Xs), m.decision_function(Xs))


@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fitted_attributes(kernel, n_classes):
    X, y = make_multiclass(n=60, d=3, k=n_classes, seed=11)
    g = 0.5
    fit_in = rbf_kernel(X, X, gamma=g) if kernel == "precomputed" else X
    kw = {"gamma": g} if kernel == "rbf" else {}
    s = 1.5
    model = SafeSVC(kernel=kernel, C=1.0, intercept_scaling=s, **kw).fit(fit_in, y)
    n_tasks = 1 if n_classes == 2 else n_classes
    np.testing.assert_array_equal(model.classes_, np.arange(n_classes))
    assert model.n_features_in_ == fit_in.shape[1]
    assert model.dual_coef_.shape == (n_tasks, model.support_.size)
    assert model.support_.ndim == 1 and model.support_.size > 0
    assert np.all(np.diff(model.support_) > 0)
    assert np.all((model.support_ >= 0) & (model.support_ < len(y)))
    # every support vector has a nonzero coefficient in some task
    assert np.all(np.any(model.dual_coef_ != 0, axis=0))
    assert model.n_iter_.shape == (n_tasks,)
    assert np.issubdtype(model.n_iter_.dtype, np.integer)
    assert model.dual_gap_.shape == (n_tasks,)
    assert np.all(model.dual_gap_ >= 0)
    assert isinstance(model.screening_report_, ScreeningReport)
    if kernel == "precomputed":
        assert model.support_vectors_.shape[0] == 0
    else:
        np.testing.assert_array_equal(model.support_vectors_, X[model.support_])
    if kernel == "linear":
        assert model.coef_.shape == (n_tasks, X.shape[1])
        assert model.intercept_.shape == (n_tasks,)
        # w = sum_i alpha_i y_i x_i and intercept = s * w_bias = s^2 sum_i alpha_i y_i
        np.testing.assert_allclose(model.coef_, model.dual_coef_ @ model.support_vectors_,
                                   atol=1e-10)
        np.testing.assert_allclose(model.intercept_, s**2 * model.dual_coef_.sum(axis=1),
                                   atol=1e-10)
    # the decision function is the kernel expansion over the support vectors
    K = rbf_kernel(X, X[model.support_], gamma=g) if kernel != "linear" else \
        X @ X[model.support_].T
    expected = (K + s**2) @ model.dual_coef_.T
    np.testing.assert_allclose(scores_2d(model, fit_in), expected, atol=1e-9)


def test_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SafeSVC().predict(np.zeros((2, 2)))


# ---------------------------------------------------------------- certificate ---
def _indep_gap(model, K_aug, y_idx, weights, C):
    tasks = [1] if model.classes_.size == 2 else list(range(model.classes_.size))
    gaps, duals = [], []
    for col, k in enumerate(tasks):
        ysign = np.where(y_idx == k, 1.0, -1.0)
        alpha = full_beta(model, col, y_idx.size) * ysign
        P, D = objectives(K_aug, ysign, C * weights, alpha)
        gaps.append(P - D)
        duals.append(D)
    return np.array(gaps), np.array(duals)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("tol", [1e-2, 1e-4])
@pytest.mark.parametrize("rule", ["IT", None])
def test_dual_gap_is_full_primal_minus_dual(kernel, n_classes, tol, rule):
    X, y = make_multiclass(n=90, d=3, k=n_classes, seed=12, spread=2.0)
    sw = np.random.RandomState(5).uniform(0.5, 2.0, len(y))
    C = 5.0
    model = SafeSVC(kernel=kernel, C=C, tol=tol, gamma=0.5, degree=2, coef0=1.0,
                    screening=rule, random_state=0).fit(X, y, sample_weight=sw)
    K = gram(X, X, kernel, 0.5, degree=2, coef0=1.0)
    gaps, duals = _indep_gap(model, K + 1.0, y, sw, C)
    np.testing.assert_allclose(model.dual_gap_, gaps, rtol=1e-7,
                               atol=1e-9 * max(1.0, np.abs(duals).max()))
    assert np.all(gaps >= -1e-9 * np.abs(duals))
    # tol is the target relative gap of the full problem
    assert np.all(gaps <= tol * np.abs(duals) * (1 + 1e-6) + 1e-12)


def test_dual_gap_along_warm_path():
    X, y = make_binary(n=80, d=3, seed=27, noise=1.0)
    model = SafeSVC(kernel="rbf", gamma=0.5, warm_start=True, tol=1e-3)
    K = rbf_kernel(X, X, gamma=0.5) + 1.0
    for C in [0.1, 1.0, 10.0, 3.0]:
        model.set_params(C=C).fit(X, y)
        gaps, duals = _indep_gap(model, K, y, np.ones(len(y)), C)
        np.testing.assert_allclose(model.dual_gap_, gaps, rtol=1e-7,
                                   atol=1e-9 * max(1.0, abs(duals[0])))


def test_no_screening_repair_warning_anywhere():
    """A repair means an unsafe rule; the certificate must never have to act."""
    X, y = make_binary(n=100, d=3, seed=28, noise=1.0)
    sw = np.random.RandomState(6).uniform(0.0, 3.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScreeningRepairWarning)
        for kernel in ["linear", "rbf"]:
            for rule in ["IT", "BT1", "BT2", "DVI"]:
                for tol in [1e-1, 1e-3, 1e-8]:
                    m = SafeSVC(kernel=kernel, screening=rule, tol=tol, warm_start=True,
                                class_weight="balanced")
                    for C in [0.01, 1.0, 100.0, 0.3, 30.0, 0.02]:
                        m.set_params(C=C).fit(X, y, sample_weight=sw)
                    assert not any(e.moment == "repair"
                                   for e in m.screening_report_.events)


# ------------------------------------------------------------------ bad input ---
def _data():
    return make_binary(n=30, d=3, seed=29)


@pytest.mark.parametrize("bad, match", [(np.nan, "NaN"), (np.inf, "infinity|inf")])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_non_finite_X(bad, match, kernel):
    X, y = _data()
    X[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        SafeSVC(kernel=kernel).fit(X, y)
    model = SafeSVC(kernel=kernel).fit(*_data())
    with pytest.raises(ValueError, match=match):
        model.predict(X)


def test_one_class():
    X, _ = _data()
    with pytest.raises(ValueError, match="class"):
        SafeSVC().fit(X, np.ones(len(X)))


@pytest.mark.parametrize("C", [0.0, -1.0])
def test_non_positive_C(C):
    with pytest.raises(ValueError, match="C"):
        SafeSVC(C=C).fit(*_data())


def test_unknown_kernel():
    with pytest.raises(ValueError, match="kernel"):
        SafeSVC(kernel="sigmoidal").fit(*_data())


def test_unknown_screening():
    with pytest.raises(ValueError, match="screening"):
        SafeSVC(screening="DOME").fit(*_data())


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_precomputed_not_psd(fit_intercept):
    n = 20
    v = np.zeros(n)
    v[0], v[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)  # orthogonal to 1: the bias can't help
    K = np.eye(n) - 3.0 * np.outer(v, v)  # symmetric, eigenvalue -2
    assert np.linalg.eigvalsh(K)[0] < -1
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="positive semi-definite"):
        SafeSVC(kernel="precomputed", fit_intercept=fit_intercept).fit(K, y)


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_warm_start_turning_screening_on_checks_the_kernel(Estimator):
    """A non-PSD precomputed kernel fitted without screening, then with screening on
    the same arrays (a warm start): the PSD check must run then."""
    n = 20
    v = np.zeros(n)
    v[0], v[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)
    K = np.eye(n) - 3.0 * np.outer(v, v)
    y = (np.arange(n) % 2).astype(float)
    model = Estimator(kernel="precomputed", screening=None, warm_start=True).fit(K, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        model.set_params(screening=Estimator().screening).fit(K, y)


def test_callable_kernel_not_psd():
    X, y = _data()
    with pytest.raises(ValueError, match="positive semi-definite"):
        SafeSVC(kernel=lambda A, B: -(A @ B.T)).fit(X, y)


def test_precomputed_not_square():
    X, y = _data()
    with pytest.raises(ValueError, match="square"):
        SafeSVC(kernel="precomputed").fit(X @ X[:10].T, y)


def test_precomputed_wrong_test_shape():
    X, y = _data()
    model = SafeSVC(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError):
        model.predict(X[:5] @ X[:10].T)


def test_sample_weight_wrong_length():
    X, y = _data()
    with pytest.raises(ValueError, match="sample_weight|shape"):
        SafeSVC().fit(X, y, sample_weight=np.ones(len(y) - 1))


def test_negative_sample_weight():
    X, y = _data()
    sw = np.ones(len(y))
    sw[4] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        SafeSVC().fit(X, y, sample_weight=sw)


def test_all_zero_sample_weight():
    X, y = _data()
    with pytest.raises(ValueError):
        SafeSVC().fit(X, y, sample_weight=np.zeros(len(y)))


def test_wrong_number_of_features_at_predict():
    X, y = _data()
    model = SafeSVC(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])


# -------------------------------------------------------------------- verbose ---
def _lines(capsys):
    out = capsys.readouterr().out
    return [ln for ln in out.splitlines() if ln.strip()]


def test_verbose_one_line_per_path_step(capsys):
    X, y = make_binary(n=60, d=3, seed=30)
    model = SafeSVC(kernel="rbf", gamma=0.5, verbose=1, warm_start=True)
    for C in [0.1, 1.0, 10.0, 3.0]:
        model.set_params(C=C).fit(X, y)
        lines = _lines(capsys)
        assert len(lines) == 1, lines
        assert "SafeSVC" in lines[0]
        assert f"C={C:g}" in lines[0].replace(" ", "")


def test_verbose_multiclass_one_line_per_task(capsys):
    X, y = make_multiclass(n=60, d=3, k=3, seed=13)
    SafeSVC(kernel="rbf", verbose=1).fit(X, y)
    lines = _lines(capsys)
    assert len(lines) == 3, lines


def test_verbose_linear_internal_path(capsys):
    """A cold linear fit walks an internal path: one line per solved value, the last
    one at C; the values are those of the screening report."""
    X, y = make_binary(n=60, d=3, seed=31)
    C = 100.0
    model = SafeSVC(kernel="linear", C=C, verbose=1).fit(X, y)
    lines = _lines(capsys)
    values = []
    for e in model.screening_report_.events:
        if e.moment in ("dynamic", "solve") and (not values or values[-1] != e.value):
            values.append(e.value)
    assert len(lines) == len(values) >= 2, (lines, values)
    assert "C=100" in lines[-1].replace(" ", "")


def test_verbose_prints_for_every_fit(capsys):
    """Even a fit solved in closed form (C <= C_min, spec A8) is a path step."""
    X, y = make_binary(n=60, d=3, seed=31)
    SafeSVC(kernel="linear", C=1e-5, verbose=1).fit(X, y)
    lines = _lines(capsys)
    assert len(lines) == 1, lines


def test_verbose_zero_is_silent(capsys):
    X, y = make_binary(n=60, d=3, seed=32)
    SafeSVC(kernel="linear", C=10.0).fit(X, y)
    SafeSVC(kernel="rbf", C=10.0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_sample_weight_two_equals_duplicate_default_gamma():
    """Same as above with the default gamma="scale": the resolved gamma must not
    depend on whether a sample is weighted 2 or repeated (it is part of the problem)."""
    X, y = make_binary(n=50, d=3, seed=20, noise=1.0)
    Xt, _ = make_binary(n=20, d=3, seed=21)
    dup = np.arange(0, 50, 3)
    sw = np.ones(len(y))
    sw[dup] = 2.0
    a = SafeSVC(C=3.0, tol=1e-10).fit(X, y, sample_weight=sw)
    b = SafeSVC(C=3.0, tol=1e-10).fit(np.vstack([X, X[dup]]), np.r_[y, y[dup]])
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               atol=1e-5)


# ------------------------------------------------------------------ edge cases ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_n_jobs_gives_same_model(kernel):
    X, y = make_multiclass(n=60, d=3, k=4, seed=14)
    a = SafeSVC(kernel=kernel, C=2.0, tol=1e-9, random_state=0).fit(X, y)
    b = SafeSVC(kernel=kernel, C=2.0, tol=1e-9, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_duplicates_zero_rows_and_float32(kernel):
    """Spec R16: duplicate samples, a zero-norm sample (no intercept), float32 input."""
    X, y = make_binary(n=50, d=3, seed=33, noise=1.0)
    X = np.vstack([X, X[:10], np.zeros((2, 3))])
    y = np.r_[y, y[:10], 0, 1]
    Xt, _ = make_binary(n=20, d=3, seed=34)
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    for fit_intercept in [True, False]:
        g = 0.5
        K = gram(X, X, kernel, g)
        Kt = gram(Xt, X, kernel, g)
        dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
        bias = 1.0 if fit_intercept else 0.0
        for rule in ["IT", None]:
            m = SafeSVC(kernel=kernel, C=5.0, tol=1e-10, fit_intercept=fit_intercept,
                        screening=rule, **kw).fit(X, y)
            assert_matches_cvx(m, Xt, K, Kt, dte, y, np.ones(len(y)), 5.0, bias)
        m32 = SafeSVC(kernel=kernel, C=5.0, tol=1e-10, fit_intercept=fit_intercept,
                      **kw).fit(X.astype(np.float32), y)
        np.testing.assert_allclose(m32.decision_function(Xt), m.decision_function(Xt),
                                   atol=1e-4)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_separable_data_large_C(kernel):
    rng = np.random.RandomState(35)
    X = np.vstack([rng.randn(30, 2) + 4, rng.randn(30, 2) - 4])
    y = np.r_[np.ones(30, int), np.zeros(30, int)]
    Xt = rng.randn(10, 2) * 3
    kw = {"gamma": 0.1} if kernel == "rbf" else {}
    for C in [1e3, 1e5]:
        m = SafeSVC(kernel=kernel, C=C, tol=1e-10, **kw).fit(X, y)
        assert m.score(X, y) == 1.0
        K, Kt = gram(X, X, kernel, 0.1), gram(Xt, X, kernel, 0.1)
        dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
        assert_matches_cvx(m, Xt, K, Kt, dte, y, np.ones(len(y)), C, 1.0)


def test_two_samples():
    X = np.array([[1.0, 0.0], [-1.0, 0.5]])
    y = np.array([0, 1])
    for kernel in ["linear", "rbf"]:
        m = SafeSVC(kernel=kernel, C=10.0, tol=1e-10).fit(X, y)
        np.testing.assert_array_equal(m.predict(X), y)


def test_warm_start_switching_rules_along_path():
    X, y = make_binary(n=80, d=3, seed=36, noise=1.0)
    m = SafeSVC(kernel="rbf", gamma=0.5, tol=1e-9, warm_start=True)
    for C, rule in [(0.1, "IT"), (1.0, "BT2"), (10.0, None), (3.0, "DVI"), (30.0, "BT1")]:
        m.set_params(C=C, screening=rule).fit(X, y)
        cold = SafeSVC(kernel="rbf", gamma=0.5, tol=1e-9, C=C, screening=None).fit(X, y)
        np.testing.assert_allclose(m.decision_function(X), cold.decision_function(X),
                                   atol=1e-5)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              print_blob=True)
    @given(seed=st.integers(0, 10_000), log_c_ref=st.floats(-3.0, 2.0),
           ratio=st.sampled_from([0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 10.0]),
           rule=st.sampled_from(["IT", "BT1", "BT2", "DVI"]),
           kernel=st.sampled_from(["linear", "rbf"]),
           weighted=st.booleans())
    def test_random_reference_target_pairs(seed, log_c_ref, ratio, rule, kernel,
                                           weighted):
        """Spec R1/R2 through the estimator: screening from a solution at C_ref, then
        solving at C = ratio * C_ref, gives the unscreened optimum at C."""
        c_ref = 10.0**log_c_ref
        X, y = make_binary(n=50, d=3, seed=seed, noise=1.5)
        if len(np.unique(y)) < 2:
            return
        sw = np.random.RandomState(seed).uniform(0.0, 3.0, len(y)) if weighted else None
        kw = {"gamma": 0.7} if kernel == "rbf" else {}
        m = SafeSVC(kernel=kernel, C=c_ref, screening=rule, tol=1e-9, warm_start=True,
                    **kw).fit(X, y, sample_weight=sw)
        m.set_params(C=c_ref * ratio).fit(X, y, sample_weight=sw)
        cold = SafeSVC(kernel=kernel, C=c_ref * ratio, screening=None, tol=1e-9,
                       **kw).fit(X, y, sample_weight=sw)
        scale = max(1.0, np.abs(cold.decision_function(X)).max())
        np.testing.assert_allclose(m.decision_function(X), cold.decision_function(X),
                                   atol=1e-5 * scale)


def test_callable_kernel_results_are_not_modified():
    """The solver signs and shifts kernel blocks in place: a callable kernel that keeps
    (memoises) the arrays it returns must find them unchanged."""
    X, y = make_binary(n=50, d=3, seed=16)
    returned = []

    def memo_rbf(A, B):
        K = np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        returned.append((K, K.copy()))
        return K

    model = SafeSVC(kernel=memo_rbf, C=2.0, tol=1e-9, fit_intercept=False).fit(X, y)
    assert returned
    for K, original in returned:
        np.testing.assert_array_equal(K, original)
    reference = SafeSVC(kernel="rbf", gamma=0.5, C=2.0, tol=1e-9,
                        fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               atol=1e-6)
