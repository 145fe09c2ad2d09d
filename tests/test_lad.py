"""Tests of SafeLAD against independent solvers (cvxpy/CLARABEL, QuantileRegressor).

The problem (Wang et al. 2014, with the regularised intercept and the weights of
doc/theory/svm_lad.rst):

    min_w 1/2 ||w||^2 + C sum_i c_i |y_i - w' phi(x_i)|,

phi augmented with the constant ``intercept_scaling`` s (kernel K + s^2); its dual is

    max_a  y'a - 1/2 a'Ga,   -C c_i <= a_i <= C c_i,   G_ij = K_ij + s^2.

Tolerances are justified by duality gaps: the primal is 1-strongly convex in w, so any
primal point with gap g to a dual-feasible point is within sqrt(2 g) of w*, and a
prediction w' phi(x) is then within sqrt(2 g) ||phi(x)|| of the optimal one.
"""

from __future__ import annotations

import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import QuantileRegressor
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen import ScreeningRepairWarning, fit_context
from sklearn_safescreen.engine.report import ScreeningReport
from sklearn_safescreen.lad import SafeLAD


# --------------------------------------------------------------------- helpers ---
def make_lad(n=60, d=3, seed=0, noise=1.0, offset=0.5, zeros=0):
    """X ~ N(0, I), y = X beta + offset + Laplace(noise)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = X @ rng.uniform(-1.0, 1.0, d) + offset + noise * rng.laplace(size=n)
    y[:zeros] = 0.0
    return X, y


def gram(A, B, kernel, gamma=0.5, degree=2, coef0=1.0):
    """Raw kernel (no bias), computed independently of the library."""
    if kernel == "linear":
        return A @ B.T
    if kernel == "rbf":
        return rbf_kernel(A, B, gamma=gamma)
    if kernel == "poly":
        return polynomial_kernel(A, B, degree=degree, gamma=gamma, coef0=coef0)
    raise AssertionError(kernel)


def objectives(G, y, h, alpha):
    """(primal, dual) of the weighted LAD at dual point ``alpha`` (bias inside G)."""
    q = G @ alpha
    wsq = float(alpha @ q)
    return 0.5 * wsq + float(h @ np.abs(y - q)), float(y @ alpha) - 0.5 * wsq


def cvx_dual(G, y, h):
    """Independent CLARABEL solve of the LAD dual; returns (alpha, its own gap)."""
    n = y.size
    evals, evecs = np.linalg.eigh(0.5 * (G + G.T))
    keep = evals > 1e-13 * max(evals.max(), 1.0)
    L = evecs[:, keep] * np.sqrt(evals[keep])
    a = cp.Variable(n)
    prob = cp.Problem(cp.Maximize(y @ a - 0.5 * cp.sum_squares(L.T @ a)), [a >= -h, a <= h])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
               max_iter=300)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    alpha = np.clip(np.asarray(a.value).ravel(), -h, h)
    P, D = objectives(G, y, h, alpha)
    return alpha, max(P - D, 0.0)


def full_alpha(model, n):
    alpha = np.zeros(n)
    alpha[model.support_] = model.dual_coef_[0]
    return alpha


def assert_matches_cvx(model, X_test, G, G_test, test_sqnorm, y, h, rel_obj=1e-7):
    """Dual objective and predictions equal an independent cvxpy solve, within the
    gap-justified bound sqrt(2 g) ||phi(x)||."""
    alpha_ref, gap_ref = cvx_dual(G, y, h)
    _, D_ref = objectives(G, y, h, alpha_ref)
    alpha = full_alpha(model, y.size)
    assert np.all(np.abs(alpha) <= h * (1 + 1e-12) + 1e-12)  # dual feasible
    P, D = objectives(G, y, h, alpha)
    assert abs(D - D_ref) <= rel_obj * max(1.0, abs(D_ref)) + gap_ref, (D, D_ref)
    assert abs(P - D_ref) <= rel_obj * max(1.0, abs(D_ref)) + gap_ref, (P, D_ref)
    expected = G_test @ alpha_ref
    bound = (np.sqrt(2 * max(P - D, 0.0)) + np.sqrt(2 * gap_ref)) * np.sqrt(test_sqnorm)
    np.testing.assert_array_less(np.abs(model.predict(X_test) - expected), bound + 1e-7)
    np.testing.assert_allclose(model.predict(X_test), expected, atol=1e-4)


def _case(kind, X, Xt, s):
    """(estimator kwargs, fit input, test input, G, G_test, test sqnorms) with bias s."""
    if kind == "linear":
        K, Kt, dt = X @ X.T, Xt @ X.T, np.einsum("ij,ij->i", Xt, Xt)
        return {"kernel": "linear"}, X, Xt, K + s**2, Kt + s**2, dt + s**2
    if kind == "rbf":
        K, Kt = gram(X, X, "rbf"), gram(Xt, X, "rbf")
        return ({"kernel": "rbf", "gamma": 0.5}, X, Xt, K + s**2, Kt + s**2,
                np.ones(len(Xt)) + s**2)
    if kind == "poly":
        K, Kt = gram(X, X, "poly"), gram(Xt, X, "poly")
        dt = np.diag(gram(Xt, Xt, "poly"))
        return ({"kernel": "poly", "gamma": 0.5, "degree": 2, "coef0": 1.0}, X, Xt,
                K + s**2, Kt + s**2, dt + s**2)
    if kind == "precomputed":
        K, Kt = gram(X, X, "rbf", 0.3), gram(Xt, X, "rbf", 0.3)
        return {"kernel": "precomputed"}, K, Kt, K + s**2, Kt + s**2, np.ones(len(Xt)) + s**2
    raise AssertionError(kind)


# ----------------------------------------------------------------- exactness ---
@pytest.mark.parametrize("kind", ["linear", "rbf", "poly", "precomputed"])
@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
@pytest.mark.parametrize("screening", ["DVI", None])
def test_matches_cvxpy(kind, C, screening):
    X, y = make_lad(n=70, d=3, seed=1)
    Xt, _ = make_lad(n=20, d=3, seed=2)
    kw, fit_in, test_in, G, Gt, dt = _case(kind, X, Xt, 1.0)
    model = SafeLAD(C=C, tol=1e-10, screening=screening, **kw).fit(fit_in, y)
    assert_matches_cvx(model, test_in, G, Gt, dt, y, C * np.ones(len(y)))


@pytest.mark.parametrize("fit_intercept, s", [(True, 1.0), (True, 3.0), (False, 1.0)])
def test_linear_matches_cvxpy_primal_with_weights(fit_intercept, s):
    """The primal form through cvxpy (w and bias weight explicit), with sample weights
    including zeros; coef_ / intercept_ within the gap-justified radius."""
    X, y = make_lad(n=60, d=3, seed=3)
    sw = np.random.RandomState(0).uniform(0.0, 3.0, len(y))
    sw[:6] = 0.0
    C = 0.7
    bias = s if fit_intercept else 0.0
    Xa = np.hstack([X, np.full((len(y), 1), bias)])
    w = cp.Variable(4)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * sw @ cp.abs(y - Xa @ w))).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    model = SafeLAD(C=C, tol=1e-10, fit_intercept=fit_intercept, intercept_scaling=s)
    model.fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(model.coef_, w.value[:3], atol=1e-5)
    assert model.intercept_ == pytest.approx(bias * w.value[3], abs=1e-5)
    if not fit_intercept:
        assert model.intercept_ == 0.0
    # zero-weight samples have alpha = 0 (box [0, 0])
    assert np.all(full_alpha(model, len(y))[:6] == 0.0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_zero_targets(kernel):
    """Targets exactly 0 (the closed form then needs a small sub-QP, see the critical
    value of LAD in doc/theory/svm_lad.rst)."""
    X, y = make_lad(n=50, d=3, seed=4, zeros=8)
    Xt, _ = make_lad(n=10, d=3, seed=5)
    kw, fit_in, test_in, G, Gt, dt = _case(kernel, X, Xt, 1.0)
    for C in [1e-4, 0.3, 5.0]:
        model = SafeLAD(C=C, tol=1e-10, **kw).fit(fit_in, y)
        assert_matches_cvx(model, test_in, G, Gt, dt, y, C * np.ones(len(y)))


# --------------------------------------------- large C: unregularised LAD ---
@pytest.mark.parametrize("s", [1.0, 10.0])
def test_large_C_equals_unregularised_lad(s):
    """As C grows the solution reaches QuantileRegressor(quantile=0.5, alpha=0) exactly.

    Tolerance reasoning: the LAD loss L is polyhedral. When its minimiser w* (here
    unique: continuous data, n >> d) is sharp, 0 lies in the interior of dL(w*), say
    a ball of radius kappa > 0, so for C kappa >= ||w*|| the point w* satisfies the
    optimality condition 0 in w* + C dL(w*) of the regularised problem: the L2 penalty
    (including the bias penalty (b/s)^2 / 2, whatever s) is an *exact* penalty beyond a
    finite C. So at C = 1e4 both must agree to solver accuracy (HiGHS ~1e-9, SafeLAD at
    relative gap 1e-10, polished by its interior-point finisher); we assert 1e-6. At
    small C they differ: the sequence of distances shrinks to that level.
    """
    X, y = make_lad(n=80, d=3, seed=6, offset=2.0)
    qr = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(X, y)
    dists = []
    for C in [0.01, 0.1, 1.0, 1e4]:
        m = SafeLAD(C=C, tol=1e-10, intercept_scaling=s, max_iter=100000).fit(X, y)
        dists.append(np.abs(np.r_[m.coef_ - qr.coef_, m.intercept_ - qr.intercept_]).max())
    assert dists[0] > 1e-2  # regularisation visible at small C
    assert dists[0] > dists[1] > dists[-1]
    assert dists[-1] <= 1e-6, dists
    # the loss values (what both minimise) agree too
    lad = np.abs(y - X @ m.coef_ - m.intercept_).sum()
    assert lad == pytest.approx(np.abs(y - qr.predict(X)).sum(), rel=1e-9)


# ------------------------------------------------------ screening and paths ---
GRID = [0.02, 0.2, 2.0, 20.0, 5.0, 0.5, 0.05]


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_warm_path_equals_unscreened(kernel):
    """Both path directions: every warm-started screened fit equals a cold fit with
    screening=None; the DVI rule really acted (not vacuous)."""
    X, y = make_lad(n=120, d=3, seed=7)
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    model = SafeLAD(kernel=kernel, tol=1e-10, warm_start=True, **kw)
    n_ref = 0
    for C in GRID:
        with fit_context(model, screening="always"):
            model.set_params(C=C).fit(X, y)
        cold = SafeLAD(kernel=kernel, tol=1e-10, C=C, screening=None, **kw).fit(X, y)
        np.testing.assert_allclose(model.predict(X), cold.predict(X), atol=1e-6)
        n_ref += sum(e.n_screened for e in model.screening_report_.events
                     if e.moment == "reference")
        assert not any(e.moment == "repair" for e in model.screening_report_.events)
    assert n_ref > 0


@pytest.mark.parametrize("screening", ["DVI", None])
def test_warm_path_with_weights_and_loose_tol(screening):
    """Inexact references (tol=1e-2, the gap inflation of doc/theory/safety.rst) and
    weights: each fit reaches its own tolerance, is certified, and no repair is ever
    needed."""
    X, y = make_lad(n=150, d=4, seed=8)
    sw = np.random.RandomState(1).uniform(0.0, 2.0, len(y))
    model = SafeLAD(tol=1e-2, warm_start=True, screening=screening)
    G = np.hstack([X, np.ones((len(y), 1))])
    G = G @ G.T
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScreeningRepairWarning)
        for C in GRID:
            model.set_params(C=C).fit(X, y, sample_weight=sw)
            P, D = objectives(G, y, C * sw, full_alpha(model, len(y)))
            assert P - D == pytest.approx(model.dual_gap_, rel=1e-6, abs=1e-9)
            assert P - D <= 1e-2 * abs(D) * (1 + 1e-6)


def test_warm_start_changed_data_starts_afresh():
    X, y = make_lad(n=60, d=3, seed=9)
    X2, y2 = make_lad(n=60, d=3, seed=10)
    model = SafeLAD(warm_start=True, tol=1e-10, C=1.0)
    for XX, yy, kw in [(X, y, {}), (X2, y2, {}), (X, y, {"intercept_scaling": 3.0}),
                       (X[::-1].copy(), y[::-1].copy(), {}), (0.5 * X, y, {}),
                       (X, y, {"kernel": "rbf"})]:
        with fit_context(model, screening="always"):
            model.set_params(**kw).fit(XX, yy)
        cold = clone(model).set_params(warm_start=False, screening=None).fit(XX, yy)
        np.testing.assert_allclose(model.predict(XX), cold.predict(XX), atol=1e-6)
    # same data again: the previous solution is the reference (a "reference" event)
    with fit_context(model, screening="always"):
        model.set_params(C=2.0).fit(X, y)
    assert any(e.moment == "reference" for e in model.screening_report_.events)


@pytest.mark.parametrize("where", ["X", "y"])
def test_warm_start_same_arrays_changed_in_place_are_validated_again(where):
    """Warm starts on the very same arrays skip validation only while their content is
    unchanged: an entry changed in place is noticed (NaN raises, a finite change gives
    the cold fit of the new data)."""
    X, y = make_lad(n=60, d=3, seed=11)
    target = X if where == "X" else y
    model = SafeLAD(warm_start=True, tol=1e-10, C=1.0).fit(X, y)
    # in use for these arrays (validation returns a view of y: the memo follows memory)
    assert model._input_memo is not None
    kept = target[7].copy()
    target[7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, y)
    target[7] = kept + 0.25
    model.fit(X, y)
    cold = clone(model).set_params(warm_start=False, screening=None).fit(X.copy(), y.copy())
    np.testing.assert_allclose(model.predict(X), cold.predict(X), atol=1e-6)
    assert "_input_memo" not in pickle.loads(pickle.dumps(model)).__dict__

def test_a_path_walk_digests_its_inputs_once(monkeypatch):
    """estimator_path owns its loop of fits over the same arrays: the first fit
    validates and digests them, the later ones take them as unchanged (a digest is a
    pass over the data); outside a walk every warm fit digests them again (the
    in-place check above), and the walk's pin ends with it."""
    from sklearn_safescreen import _validation
    from sklearn_safescreen.path import estimator_path

    X, y = make_lad(n=60, d=3, seed=12)
    digests = []
    real = _validation.data_fingerprint
    monkeypatch.setattr(_validation, "data_fingerprint",
                        lambda *a: digests.append(1) or real(*a))
    res = estimator_path(SafeLAD(), X, y, n_values=6)
    assert len(res.values) == 6 and len(digests) == 1
    digests.clear()
    model = SafeLAD(warm_start=True, C=1.0).fit(X, y)
    model.set_params(C=2.0).fit(X, y)
    model.set_params(C=4.0).fit(X, y)
    assert len(digests) == 3  # the memo's, then one check per warm fit
    assert "_fit_context" not in res.estimator.__dict__  # (the walk's context ended)


def test_reproduction_wwy_rejection_rate():
    """A synthetic counterpart of the LAD experiments of Wang et al. 2014 (Table 3):
    n=2000, d=8, X ~ N(0, I), y = X beta + Laplace(1) with beta ~ U(-1, 1)^8 (a choice of
    ours; the DVI radius grows with ||w||, so the rate falls as ||beta|| / noise grows:
    about 0.72-0.8 with beta ~ N(0, I)), no intercept (as in the paper); 100 values of C
    in logspace(-2, 1), the previous solution as reference. Mean DVI rejection
    (screened / n, the paper's definition) >= 0.8 (our own reference run measured about
    0.83), and no repair anywhere (every screened sample was right)."""
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 8)
    y = X @ rng.uniform(-1.0, 1.0, 8) + rng.laplace(size=2000)
    model = SafeLAD(fit_intercept=False, warm_start=True, tol=1e-9)
    rates = []
    for C in np.logspace(-2, 1, 100):
        model.set_params(C=C).fit(X, y)
        events = model.screening_report_.events
        assert not any(e.moment == "repair" for e in events)
        ref = [e for e in events if e.moment == "reference" and e.value == C]
        rates.append(ref[-1].n_screened / 2000)
    assert np.mean(rates[1:]) >= 0.8, np.mean(rates[1:])


def test_cold_fit_walks_from_critical_value():
    """A cold linear fit starts from the closed form at C_min^LAD (no solve), so C at or
    below it is solved in closed form: alpha = C sign(y)."""
    X, y = make_lad(n=80, d=3, seed=11)
    cmin = SafeLAD()._critical_value(X, y)
    assert 0 < cmin < np.inf
    m = SafeLAD(C=cmin).fit(X, y)
    np.testing.assert_allclose(full_alpha(m, len(y)), cmin * np.sign(y), rtol=1e-12)
    assert m.screening_report_.events[0].moment == "closed_form"
    assert m.screening_report_.screening_rate == 1.0
    Xa = np.hstack([X, np.ones((80, 1))])
    for C in [cmin, 0.5 * cmin, 1.05 * cmin]:
        cold = SafeLAD(C=C, screening=None, tol=1e-12).fit(X, y)
        closed = np.allclose(full_alpha(cold, 80), C * np.sign(y), rtol=1e-9, atol=1e-14)
        assert closed == (C <= cmin), C
        P, D = objectives(Xa @ Xa.T, y, C * np.ones(80), C * np.sign(y))
        assert (P - D <= 1e-12 * abs(D)) == (C <= cmin)


def test_critical_value_with_weights_and_zero_targets():
    X, y = make_lad(n=60, d=3, seed=12, zeros=5)
    sw = np.random.RandomState(2).uniform(0.5, 2.0, 60)
    cmin = SafeLAD()._critical_value(X, y, sample_weight=sw)
    assert 0 < cmin < np.inf
    Xa = np.hstack([X, np.ones((60, 1))])
    G = Xa @ Xa.T
    for C, optimal in [(cmin, True), (1.05 * cmin, False)]:
        m = SafeLAD(C=C, screening=None, tol=1e-12).fit(X, y, sample_weight=sw)
        a = full_alpha(m, 60)
        # below C_min the solution is linear in C: alpha / C equals its value at C_min
        ref = full_alpha(SafeLAD(C=0.5 * cmin, tol=1e-12).fit(X, y, sample_weight=sw), 60)
        assert np.allclose(a / C, ref / (0.5 * cmin), atol=1e-6) == optimal
        P, D = objectives(G, y, C * sw, a)
        assert P - D <= 1e-9 * abs(D)
    assert SafeLAD()._critical_value(X, np.zeros(60)) == np.inf


def test_lad_path():
    from sklearn_safescreen.path import lad_path

    X, y = make_lad(n=100, d=3, seed=13)
    Cs = [0.01, 0.1, 1.0, 10.0]
    res = lad_path(X, y, Cs, tol=1e-10)
    assert list(res.values) == Cs
    for C, coef in zip(Cs, res.coefs, strict=True):
        cold = SafeLAD(C=C, tol=1e-10, screening=None).fit(X, y)
        np.testing.assert_allclose(coef, cold.coef_, atol=1e-6)
    # default grid: geometric from the critical value upwards
    res = lad_path(X, y, n_values=5, tol=1e-8)
    assert res.values[0] == pytest.approx(SafeLAD()._critical_value(X, y))
    assert np.all(np.diff(res.values) > 0)


# --------------------------------------------------------------------- API ---
@parametrize_with_checks([SafeLAD(), SafeLAD(kernel="rbf")])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_attributes_and_report():
    X, y = make_lad(n=80, d=3, seed=14)
    m = SafeLAD(C=0.5, tol=1e-10).fit(X, y)
    assert m.coef_.shape == (3,) and isinstance(m.intercept_, float)
    assert isinstance(m.n_iter_, int) and isinstance(m.dual_gap_, float)
    assert m.dual_coef_.shape == (1, m.support_.size)
    alpha = full_alpha(m, 80)
    np.testing.assert_allclose(m.coef_, X.T @ alpha, atol=1e-10)
    assert m.intercept_ == pytest.approx(alpha.sum(), abs=1e-10)  # s^2 sum(alpha), s=1
    np.testing.assert_allclose(m.predict(X), X @ m.coef_ + m.intercept_)
    report = m.screening_report_
    assert isinstance(report, ScreeningReport)
    d = report.to_dict()
    assert d["n_variables"] == 80 and 0 <= d["n_screened"] <= 80
    assert d["screening_rate"] == pytest.approx(d["n_screened"] / 80)
    assert "screened" in repr(report)
    r = SafeLAD(kernel="rbf", C=0.5).fit(X, y)
    np.testing.assert_array_equal(r.support_vectors_, X[r.support_])
    assert not hasattr(r, "coef_")


def test_clone_pickle_pipeline_gridsearch():
    X, y = make_lad(n=90, d=3, seed=15)
    m = SafeLAD(C=0.3, tol=1e-10).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    assert clone(m).get_params() == m.get_params()
    pipe = make_pipeline(StandardScaler(), SafeLAD(warm_start=True, tol=1e-8))
    for C in [0.1, 1.0]:
        pipe.set_params(safelad__C=C).fit(X, y)
        ref = SafeLAD(C=C, tol=1e-8).fit(StandardScaler().fit_transform(X), y)
        np.testing.assert_allclose(pipe.predict(X), ref.predict(
            StandardScaler().fit(X).transform(X)), atol=1e-5)
    gs = GridSearchCV(SafeLAD(), {"C": [0.01, 1.0]}, cv=3).fit(X, y)
    assert gs.best_params_["C"] in (0.01, 1.0)


def test_sparse_input_equals_dense():
    X, y = make_lad(n=70, d=4, seed=16)
    X[np.abs(X) < 0.7] = 0.0
    a = SafeLAD(C=0.5, tol=1e-10).fit(sp.csr_matrix(X), y)
    b = SafeLAD(C=0.5, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.predict(sp.csr_matrix(X)), b.predict(X), atol=1e-8)


# --------------------------------------------------------------- bad input ---
@pytest.mark.parametrize("bad, match", [(np.nan, "NaN"), (np.inf, "infinity|inf")])
def test_non_finite(bad, match):
    X, y = make_lad(n=30, d=3, seed=17)
    Xb = X.copy()
    Xb[2, 1] = bad
    with pytest.raises(ValueError, match=match):
        SafeLAD().fit(Xb, y)
    yb = y.copy()
    yb[4] = bad
    with pytest.raises(ValueError, match=match):
        SafeLAD().fit(X, yb)
    model = SafeLAD().fit(X, y)
    with pytest.raises(ValueError, match=match):
        model.predict(Xb)


@pytest.mark.parametrize("params, match", [
    ({"C": 0.0}, "C"), ({"C": -1.0}, "C"), ({"screening": "IT"}, "screening"),
    ({"kernel": "sigmoid"}, "kernel"), ({"tol": -1.0}, "tol"),
    ({"intercept_scaling": 0.0}, "intercept_scaling"), ({"max_iter": 0}, "max_iter")])
def test_bad_params(params, match):
    X, y = make_lad(n=30, d=3, seed=18)
    with pytest.raises(ValueError, match=match):
        SafeLAD(**params).fit(X, y)


def test_wrong_shapes_and_weights():
    X, y = make_lad(n=30, d=3, seed=19)
    with pytest.raises(ValueError):
        SafeLAD().fit(X, y[:-1])
    with pytest.raises(ValueError, match="sample_weight|shape"):
        SafeLAD().fit(X, y, sample_weight=np.ones(29))
    sw = np.ones(30)
    sw[3] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        SafeLAD().fit(X, y, sample_weight=sw)
    with pytest.raises(ValueError, match="zero"):
        SafeLAD().fit(X, y, sample_weight=np.zeros(30))
    m = SafeLAD().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="square"):
        SafeLAD(kernel="precomputed").fit(X @ X[:10].T, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        SafeLAD(kernel=lambda A, B: -(A @ B.T)).fit(X, y)
    with pytest.raises(ValueError, match="coef0"):
        SafeLAD(kernel="poly", coef0=-1.0).fit(X, y)


# ------------------------------------------------------------------ verbose ---
def test_verbose_lines(capsys):
    X, y = make_lad(n=60, d=3, seed=20)
    model = SafeLAD(verbose=1, warm_start=True)
    model.set_params(C=100.0).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) >= 2 and all("[SafeLAD]" in ln for ln in lines)  # internal path
    assert "C=100" in lines[-1].replace(" ", "") and "gap=" in lines[-1]
    model.set_params(C=30.0).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) == 1 and "C=30" in lines[0].replace(" ", "")
    SafeLAD(C=1e-9, verbose=1).fit(X, y)
    assert "closed form" in capsys.readouterr().out
    SafeLAD(C=1.0).fit(X, y)
    assert capsys.readouterr().out == ""


# ------------------------------------------------------ property: exactness ---
@settings(max_examples=examples(25), deadline=None, derandomize=True, database=None,
          print_blob=True)
@given(seed=st.integers(0, 10_000), log_c_ref=st.floats(-3.0, 2.0),
       ratio=st.sampled_from([0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 10.0]),
       kernel=st.sampled_from(["linear", "rbf"]), weighted=st.booleans(),
       tol=st.sampled_from([1e-2, 1e-6, 1e-10]))
def test_random_reference_target_pairs(seed, log_c_ref, ratio, kernel, weighted, tol):
    """Screening from a solution at C_ref (possibly inexact: tol up to 1e-2) then
    solving at C = ratio * C_ref gives the unscreened optimum at C, with no repair."""
    c_ref = 10.0**log_c_ref
    X, y = make_lad(n=60, d=3, seed=seed)
    sw = np.random.RandomState(seed).uniform(0.0, 3.0, 60) if weighted else None
    kw = {"gamma": 0.7} if kernel == "rbf" else {}
    m = SafeLAD(kernel=kernel, C=c_ref, tol=tol, warm_start=True, **kw).fit(
        X, y, sample_weight=sw)
    m.set_params(C=c_ref * ratio, tol=1e-10).fit(X, y, sample_weight=sw)
    cold = SafeLAD(kernel=kernel, C=c_ref * ratio, screening=None, tol=1e-10, **kw).fit(
        X, y, sample_weight=sw)
    scale = max(1.0, np.abs(cold.predict(X)).max())
    np.testing.assert_allclose(m.predict(X), cold.predict(X), atol=1e-6 * scale)


def test_regularization_path_cv_same_as_grid_search():
    """SafeLAD plugs into RegularizationPathCV: the same choice and scores as
    GridSearchCV over the same values (walked with warm starts and screening)."""
    from sklearn_safescreen.model_selection import RegularizationPathCV

    X, y = make_lad(n=120, d=3, seed=21)
    values = [0.001, 0.01, 0.1, 1.0]
    search = RegularizationPathCV(SafeLAD(tol=1e-10), values=values, cv=3).fit(X, y)
    grid = GridSearchCV(SafeLAD(tol=1e-10), {"C": values}, cv=3).fit(X, y)
    assert search.best_params_ == grid.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               grid.cv_results_["mean_test_score"], atol=1e-8)
    np.testing.assert_allclose(search.predict(X), grid.predict(X), atol=1e-6)


def test_content_digest_detects_changes():
    """The warm-start fingerprint's digest of X: equal for equal content, different
    after a one-ulp change of one entry, a row swap, a column swap, a reshape or an
    in-place edit (then a warm start solves from scratch, as a cold fit)."""
    from sklearn_safescreen._utils.fingerprint import content_digest as _content_digest

    X, y = make_lad(n=200, d=4, seed=22)
    d = _content_digest(X)
    assert np.array_equal(_content_digest(X.copy()), d)
    changed = [X.copy() for _ in range(3)]
    changed[0][17, 2] = np.nextafter(changed[0][17, 2], np.inf)
    changed[1][[3, 4]] = changed[1][[4, 3]]
    changed[2][:, [0, 1]] = changed[2][:, [1, 0]]
    for Z in [*changed, X.reshape(400, 2), -X]:
        assert not np.array_equal(_content_digest(Z), d)
    model = SafeLAD(C=1.0, warm_start=True, tol=1e-10).fit(X, y)
    X[5, 1] += 3.0  # in place: same object, new content
    model.set_params(C=2.0).fit(X, y)
    cold = SafeLAD(C=2.0, tol=1e-10).fit(X, y)
    plain = SafeLAD(C=2.0, tol=1e-10, screening=None).fit(X, y)
    np.testing.assert_allclose(model.predict(X), plain.predict(X), atol=1e-6)
    # started afresh: the same internal path from C_min as the cold fit
    assert [e.value for e in model.screening_report_.events] == \
        [e.value for e in cold.screening_report_.events]


@pytest.mark.parametrize("target", ["X", "y"])
def test_huge_finite_values_are_refused_clearly(target):
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = X @ [1.0, -1.0, 2.0] + rng.randn(60)
    if target == "X":
        X = X * 1e300
    else:
        y = y * 1e300
    with pytest.raises(ValueError, match=rf"{target} has entries up to .* squares them"):
        SafeLAD().fit(X, y)


def test_n_jobs_sets_the_threads_of_the_compiled_loops(monkeypatch):
    """A kernel SafeLAD fit runs its compiled loops on at most n_jobs OpenMP threads,
    and gives the same model on one thread and on all of them."""
    from sklearn_safescreen._utils import openmp
    from sklearn_safescreen.problems import kernels

    seen = []
    compute = kernels.KernelMatrix._compute

    def spy(self, rows, cols, out=None):
        seen.append(openmp.current_n_threads())
        return compute(self, rows, cols, out=out)

    monkeypatch.setattr(kernels.KernelMatrix, "_compute", spy)
    rng = np.random.RandomState(0)
    X = rng.randn(500, 5)
    y = X @ rng.randn(5) + rng.laplace(size=500)
    one = SafeLAD(kernel="rbf", gamma=0.2, C=1.0, n_jobs=1).fit(X, y)
    assert seen and set(seen) == {1}
    seen.clear()
    every = SafeLAD(kernel="rbf", gamma=0.2, C=1.0).fit(X, y)
    assert seen and set(seen) == {openmp.effective_n_threads()}
    np.testing.assert_array_equal(one.dual_coef_, every.dual_coef_)


# ------------------------------------------- defects found by scikit-learn's SVM tests ---
@pytest.mark.parametrize("kernel", ["rbf", "poly", "precomputed", "linear"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_intercept_for_every_kernel(kernel, fit_intercept):
    """intercept_ (documented for every kernel; an AttributeError with a kernel) is the
    bias feature's share of predict: the kernel expansion plus intercept_."""
    X, y = make_lad(n=50, d=3, seed=4, offset=3.0)
    Xt, _ = make_lad(n=20, d=3, seed=5)
    s = 1.7
    kw = {"kernel": kernel, "intercept_scaling": s, "fit_intercept": fit_intercept,
          "tol": 1e-10}
    fit_X, test_X = (X @ X.T, Xt @ X.T) if kernel == "precomputed" else (X, Xt)
    model = SafeLAD(**kw).fit(fit_X, y)
    alpha = model.dual_coef_.ravel()
    expected = (s**2 * alpha.sum()) if fit_intercept else 0.0
    assert isinstance(model.intercept_, float)
    np.testing.assert_allclose(model.intercept_, expected, rtol=1e-12, atol=1e-12)
    if fit_intercept:
        assert abs(model.intercept_) > 0.1  # (a vacuous zero would pass the next check)
    if kernel == "linear":
        expansion = Xt @ model.coef_
    elif kernel == "precomputed":
        expansion = test_X[:, model.support_] @ alpha
    else:
        gram = (rbf_kernel if kernel == "rbf" else polynomial_kernel)(
            Xt, model.support_vectors_, **model._kernel_params_)
        expansion = gram @ alpha
    np.testing.assert_allclose(expansion + model.intercept_, model.predict(test_X),
                               atol=1e-9)
