"""Shared SafeSVC test helpers: data, independent kernels and the cvxpy/CLARABEL dual.

The problem (the regularised-intercept hinge SVM with per-sample weights c_i, see
doc/theory/svm_lad.rst):

    min_w 1/2 ||w||^2 + C sum_i c_i max(0, 1 - y_i w' phi(x_i)),

phi augmented with the constant ``intercept_scaling`` (kernel K + s^2); its dual is

    max_a  1'a - 1/2 a'Qa,   0 <= a_i <= C c_i,   Q_ij = y_i y_j (K_ij + s^2).

Tolerances are justified by duality gaps: the primal is 1-strongly convex in w, so any
primal point with gap g to a dual-feasible point is within sqrt(2 g) of w*, and a
decision value f(x) = w' phi(x) is then within sqrt(2 g) ||phi(x)|| of the optimal one.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

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


def full_beta(model, task, n, y_idx=None):
    """alpha_i y_i over all training samples in one task, from the public attributes.

    A one-vs-one model (``y_idx``: the training samples' class indices) is read in
    libsvm's layout: in the pair (i, j), a support vector of class i has its
    coefficient on row j - 1 of ``dual_coef_``, one of class j on row i."""
    beta = np.zeros(n)
    if not is_one_vs_one(model):
        beta[model.support_] = model.dual_coef_[task]
        return beta
    i, j = pairs(model.classes_.size)[task]
    sv_class = y_idx[model.support_]
    for c, row in ((i, j - 1), (j, i)):
        on = sv_class == c
        beta[model.support_[on]] = model.dual_coef_[row, on]
    return beta


def is_one_vs_one(model):
    return model.classes_.size > 2 and model.get_params()["multi_class"] == "ovo"


def pairs(k):
    """SVC's order of the pairs of classes."""
    return [(i, j) for i in range(k) for j in range(i + 1, k)]


def task_problems(model, y_idx, weights):
    """``(ysign, weights)`` of each task of a fitted model: the second class against
    the first (two classes), each class against the rest, or each pair (i, j), class i
    positive, on the pair's samples (weight 0 elsewhere)."""
    k = model.classes_.size
    if k == 2:
        return [(np.where(y_idx == 1, 1.0, -1.0), weights)]
    if not is_one_vs_one(model):
        return [(np.where(y_idx == c, 1.0, -1.0), weights) for c in range(k)]
    return [(np.where(y_idx == i, 1.0, -1.0),
             np.where((y_idx == i) | (y_idx == j), weights, 0.0)) for i, j in pairs(k)]


def scores_2d(model, X):
    s = model.decision_function(X)
    return s.reshape(-1, 1) if s.ndim == 1 else s


def assert_matches_cvx(model, X_test_input, K_train, K_test, K_test_diag, y_idx, weights,
                       C, bias, *, rel_obj=1e-6):
    """Dual objective (relative ``rel_obj``) and decision values (gap-justified bound)
    of every task (one-vs-rest or one-vs-one) equal those of an independent cvxpy solve."""
    n = y_idx.size
    tasks = task_problems(model, y_idx, weights)
    K_aug = K_train + bias**2
    Kt_aug = K_test + bias**2
    phi_norm = np.sqrt(np.maximum(K_test_diag + bias**2, 0.0))
    got = scores_2d(model, X_test_input)
    if is_one_vs_one(model):  # the pairs' decision values
        shape = model.decision_function_shape
        got = model.set_params(decision_function_shape="ovo").decision_function(
            X_test_input)
        model.set_params(decision_function_shape=shape)
    assert got.shape == (K_test.shape[0], len(tasks))
    for col, (ysign, task_weights) in enumerate(tasks):
        ub = C * task_weights
        alpha_ref, gap_ref = cvx_dual(K_aug, ysign, ub)
        _, D_ref = objectives(K_aug, ysign, ub, alpha_ref)
        beta = full_beta(model, col, n, y_idx)
        alpha = beta * ysign
        # dual feasibility of the returned model
        assert np.all(alpha >= -1e-12)
        assert np.all(alpha <= ub * (1 + 1e-12) + 1e-12)
        P, D = objectives(K_aug, ysign, ub, alpha)
        assert abs(D - D_ref) <= rel_obj * max(1.0, abs(D_ref)), (col, D, D_ref)
        assert abs(P - D_ref) <= rel_obj * max(1.0, abs(D_ref)) + gap_ref, (col, P, D_ref)
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


