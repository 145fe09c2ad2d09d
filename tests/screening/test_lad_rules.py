"""Safety and consistency of DVI screening for LAD (Wang et al. 2014, Corollary 15, with
the extensions of doc/theory/svm_lad.rst: weights, inexact references, C_min).

Problem (with weights, bias as an extra feature of value ``bias``)::

    min_w 1/2 ||w||^2 + C sum_i c_i |y_i - w'phi(x_i)|,
    dual   min_a 1/2 a'Ga - y'a,   -C c_i <= a_i <= C c_i,   G = K + bias^2.

Ground truth is independent of the library: CLARABEL (through cvxpy) on the dual,
followed by an exact active-set polish (solve ``G_EE a_E = y_E - G_EB a_B`` on the
interpolated set E), accepted only when the KKT conditions hold to 1e-10: interpolated
samples have |y_i - q_i| <= 1e-10 (scaled), samples at a_i = +C c_i have a non-negative
residual, samples at -C c_i a non-positive one. True sets (mind the signs of LAD in
doc/theory/svm_lad.rst!):
R = {q_i > y_i + 1e-7} (prediction above target, alpha = -C c_i), L = {q_i < y_i - 1e-7}
(prediction below target, alpha = +C c_i).

A rule violates safety if it puts a sample into R (``at_lower``) that is not in the true
R, or into L (``at_upper``) that is not in the true L. Every test also checks the bounds
themselves: lower_i <= q*_i <= upper_i.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import cvxpy as cp
import numpy as np
import pytest
from _profiles import examples
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import pairwise_kernels

from sklearn_safescreen.problems.box_qp import BoxQPReference
from sklearn_safescreen.problems.box_qp_data import lad_critical_C
from sklearn_safescreen.screening.lad import LAD_RULES, dvi_lad, screen_lad

MARGIN_TOL = 1e-7
MAX_KKT = 1e-10
HYPOTHESIS_SETTINGS = dict(derandomize=True, database=None, deadline=None, print_blob=True)
KERNELS = ("linear", "rbf0.1", "rbf1", "rbf10", "poly")
#: (C_ref, C) pairs of the SVM safety sweep, both directions; "cmin" = (C_min, 5 C_min)
PAIRS = ((1.0, 2.0), (2.0, 1.0), (0.5, 0.55), (10.0, 12.0), (12.0, 10.0), ("cmin", 5.0))


class GroundTruthInaccurate(Exception):
    pass


# ------------------------------------------------------------------ truth ---
def laplace_data(seed: int, n: int, d: int, zeros: int = 0):
    """X ~ N(0, I), y = X beta + Laplace(1); ``zeros`` targets set to 0."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = X @ rng.uniform(-1.0, 1.0, d) + rng.laplace(size=n)
    y[:zeros] = 0.0
    return X, y


def gram(X, kernel: str, bias: float) -> np.ndarray:
    d = X.shape[1]
    if kernel == "linear":
        K = X @ X.T
    elif kernel.startswith("rbf"):
        K = pairwise_kernels(X, metric="rbf", gamma=float(kernel[3:]) / d)
    elif kernel == "poly":
        K = pairwise_kernels(X, metric="poly", gamma=1.0 / d, degree=3, coef0=1.0)
    else:
        raise ValueError(kernel)
    K = K + bias**2
    return 0.5 * (K + K.T)


@dataclass
class Truth:
    C: float
    alpha: np.ndarray
    pred: np.ndarray  # G alpha: the optimal predictions

    def true_R(self, y):
        return self.pred > y + MARGIN_TOL

    def true_L(self, y):
        return self.pred < y - MARGIN_TOL


def _kkt(G, y, h, a):
    """Largest violation of the LAD dual's KKT conditions at ``a``."""
    q = G @ a
    r = y - q
    scale = max(1.0, np.abs(y).max())
    upper = (a >= h) & (h > 0)
    lower = (a <= -h) & (h > 0)
    inner = ~upper & ~lower & (h > 0)
    box = np.maximum(np.abs(a) - h, 0.0).max() / scale
    viol = np.concatenate([[box], np.abs(r[inner]) / scale, np.maximum(-r[upper], 0) / scale,
                           np.maximum(r[lower], 0) / scale])
    return float(viol.max())


def solve_lad_dual(G, y, h) -> Truth:
    """Exact LAD dual optimum (see the module docstring); raises when not certified."""
    n = y.size
    evals, evecs = np.linalg.eigh(G)
    keep = evals > 1e-12 * max(evals.max(), 1.0)
    L = evecs[:, keep] * np.sqrt(evals[keep])
    a = cp.Variable(n)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ a) - y @ a), [a >= -h, a <= h])
    try:
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
                   max_iter=300)
    except cp.error.SolverError as exc:
        raise GroundTruthInaccurate(str(exc)) from exc
    if a.value is None:
        raise GroundTruthInaccurate(prob.status)
    a0 = np.clip(np.asarray(a.value).ravel(), -h, h)
    best = a0
    # exact polish on the interpolated set (box interior), the others snapped to +-h
    for rel in (1e-7, 1e-5, 1e-9):
        inner = (np.abs(a0) < h * (1 - rel)) & (h > 0)
        ab = np.where(inner, 0.0, np.sign(a0) * h)
        if inner.any():
            rhs = y[inner] - G[np.ix_(inner, ~inner)] @ ab[~inner]
            sol = np.linalg.lstsq(G[np.ix_(inner, inner)], rhs, rcond=None)[0]
            ab[inner] = sol
        if _kkt(G, y, h, ab) < _kkt(G, y, h, best):
            best = ab
    if _kkt(G, y, h, best) > MAX_KKT:
        raise GroundTruthInaccurate(f"KKT violation {_kkt(G, y, h, best):.2e}")
    return Truth(float(h.max()), best, G @ best)


def violations(res, truth: Truth, y):
    wrong_lo = np.flatnonzero(res.at_lower & ~truth.true_R(y))
    wrong_hi = np.flatnonzero(res.at_upper & ~truth.true_L(y))
    return wrong_lo, wrong_hi


def bound_violations(res, truth: Truth, rtol=1e-9):
    slack = rtol * (np.abs(truth.pred) + np.abs(res.lower) + np.abs(res.upper) + 1.0)
    bad = (res.lower > truth.pred + slack) | (res.upper < truth.pred - slack)
    return np.flatnonzero(bad)


def assert_safe(res, truth, y, context=""):
    wl, wu = violations(res, truth, y)
    assert wl.size == 0 and wu.size == 0, (
        f"DVI unsafe ({context}): into R (alpha=-C) but not in R: {wl.tolist()}, "
        f"residuals {(y - truth.pred)[wl]}; into L (alpha=+C) but not in L: {wu.tolist()}, "
        f"residuals {(y - truth.pred)[wu]}")
    bad = bound_violations(res, truth)
    assert bad.size == 0, f"bounds miss the optimal prediction ({context}) at {bad}"


def exact_reference(truth: Truth, gap: float = 0.0) -> BoxQPReference:
    return BoxQPReference(truth.C, truth.alpha, truth.pred, gap)


def full_gap(G, y, h, a) -> float:
    """Full-problem duality gap P(w(a)) - D(a) of a feasible dual point (own formula)."""
    q = G @ a
    return float(a @ q + h @ np.abs(y - q) - y @ a)


def slope_and_cmin(G, y, w):
    """Own computation of the LAD closed form (no zero targets): gamma = c sign(y),
    C_min = min over {s_i (G gamma)_i > 0} of |y_i| / (s_i (G gamma)_i)."""
    gamma = w * np.sign(y)
    push = np.sign(y) * (G @ gamma)
    ok = (push > 0) & (w > 0)
    return gamma, float(np.min(np.abs(y[ok]) / push[ok]))


@cache
def _problem(kernel, bias, seed=0, n=150, d=4):
    X, y = laplace_data(seed, n, d)
    return X, y, gram(X, kernel, bias)


@cache
def _exact(kernel, bias, C, seed=0, n=150, d=4):
    _, y, G = _problem(kernel, bias, seed, n, d)
    return solve_lad_dual(G, y, C * np.ones(n))


# ------------------------------------------------------------------ tests ---
def test_ground_truth_matches_cvxpy_primal():
    """The dual truth's predictions equal an independent primal solve (linear, bias)."""
    X, y = laplace_data(3, 80, 3)
    Xa = np.hstack([X, np.ones((80, 1))])
    C = 2.0
    truth = solve_lad_dual(Xa @ Xa.T, y, C * np.ones(80))
    w = cp.Variable(4)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.norm1(y - Xa @ w))).solve(
        solver=cp.CLARABEL)
    np.testing.assert_allclose(truth.pred, Xa @ w.value, atol=1e-6)
    np.testing.assert_allclose(Xa.T @ truth.alpha, w.value, atol=1e-6)
    # signs (doc/theory/svm_lad.rst): alpha = +C exactly where the prediction is below the
    # target
    below = truth.pred < y - 1e-6
    above = truth.pred > y + 1e-6
    assert below.any() and above.any()
    np.testing.assert_allclose(truth.alpha[below], C)
    np.testing.assert_allclose(truth.alpha[above], -C)


def test_rule_registry():
    assert LAD_RULES == ("DVI",)
    _, y, G = _problem("linear", 1.0)
    ref = exact_reference(_exact("linear", 1.0, 1.0))
    a = screen_lad("DVI", ref, 2.0, np.diag(G).copy(), y, np.ones(y.size))
    b = dvi_lad(ref, 2.0, np.diag(G).copy(), y, np.ones(y.size))
    np.testing.assert_array_equal(a.at_lower, b.at_lower)
    with pytest.raises(ValueError, match="unknown LAD screening rule"):
        screen_lad("IT", ref, 2.0, np.diag(G).copy(), y, np.ones(y.size))


def _pair(kernel, bias, pair, seed=0, n=150, d=4):
    _, y, G = _problem(kernel, bias, seed, n, d)
    C_ref, C = pair
    if C_ref == "cmin":
        gamma, cmin = slope_and_cmin(G, y, np.ones(n))
        ref = BoxQPReference(cmin, cmin * gamma, cmin * (G @ gamma), 0.0)
        C = C * cmin
        return ref, C, solve_lad_dual(G, y, C * np.ones(n))
    return exact_reference(_exact(kernel, bias, C_ref, seed, n, d)), C, \
        _exact(kernel, bias, C, seed, n, d)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("bias", [0.0, 1.0])
def test_r11_safety_sweep(kernel, bias):
    """Safety sweep for LAD: every (C_ref, C) pair, both directions, exact references:
    DVI only screens samples of the true R / L, and its bounds contain q*."""
    _, y, G = _problem(kernel, bias)
    n_screened = 0
    for pair in PAIRS:
        ref, C, truth = _pair(kernel, bias, pair)
        res = dvi_lad(ref, C, np.diag(G).copy(), y, np.ones(y.size))
        assert_safe(res, truth, y, f"{kernel}, bias={bias}, pair={pair}")
        n_screened += res.n_screened
    assert n_screened > 0  # not vacuous


def test_matches_corollary_15_w_form():
    """Linear kernel, exact reference: the bounds are Wang et al. 2014, Corollary 15,
    computed from w_ref explicitly:
    (C+C_k)/(2C_k) <w, x_i> -/+ |C-C_k|/(2C_k) ||w|| ||x_i||."""
    X, y, G = _problem("linear", 0.0)
    for C_ref, C in [(1.0, 2.0), (2.0, 1.0)]:
        truth = _exact("linear", 0.0, C_ref)
        w = X.T @ truth.alpha
        centre = (C + C_ref) / (2 * C_ref) * (X @ w)
        spread = abs(C - C_ref) / (2 * C_ref) * np.linalg.norm(w) * np.linalg.norm(X, axis=1)
        res = dvi_lad(exact_reference(truth), C, np.diag(G).copy(), y, np.ones(y.size))
        np.testing.assert_allclose(res.lower, centre - spread, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(res.upper, centre + spread, rtol=1e-10, atol=1e-10)
        # and the theta form (Corollary 14), theta = alpha / C_ref
        theta = truth.alpha / C_ref
        zt = X.T @ theta
        np.testing.assert_allclose(
            res.lower, (C + C_ref) / 2 * (X @ zt) - abs(C - C_ref) / 2 * np.linalg.norm(zt)
            * np.linalg.norm(X, axis=1), rtol=1e-10, atol=1e-10)


def test_signs_on_a_toy():
    """The signs of LAD (doc/theory/svm_lad.rst): a sample far above the fit goes to L
    (alpha = +C, at_upper), one far below goes to R (alpha = -C, at_lower)."""
    X, y, G = _problem("linear", 1.0)
    y = y.copy()
    y[0] += 50.0
    y[1] -= 50.0
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    G = Xa @ Xa.T
    t1, t2 = solve_lad_dual(G, y, np.ones(y.size)), solve_lad_dual(G, y, 1.2 * np.ones(y.size))
    res = dvi_lad(exact_reference(t1), 1.2, np.diag(G).copy(), y, np.ones(y.size))
    assert res.at_upper[0] and not res.at_lower[0]
    assert res.at_lower[1] and not res.at_upper[1]
    assert t2.alpha[0] == pytest.approx(1.2) and t2.alpha[1] == pytest.approx(-1.2)
    assert_safe(res, t2, y)


@pytest.mark.parametrize("kernel", ["linear", "rbf1"])
def test_r8_trivial_limit(kernel):
    """Trivial limit: with C = C_ref and an exact reference the ball is a point: DVI
    screens exactly the samples with a nonzero residual and none of the interpolated
    ones."""
    _, y, G = _problem(kernel, 1.0)
    truth = _exact(kernel, 1.0, 1.0)
    res = dvi_lad(exact_reference(truth), 1.0, np.diag(G).copy(), y, np.ones(y.size))
    np.testing.assert_array_equal(res.at_lower, truth.true_R(y))
    np.testing.assert_array_equal(res.at_upper, truth.true_L(y))
    interpolated = ~truth.true_R(y) & ~truth.true_L(y)
    assert interpolated.any()


@pytest.mark.parametrize("kernel", ["linear", "rbf1", "poly"])
@pytest.mark.parametrize("weighted", [False, True])
def test_r7_critical_value(kernel, weighted):
    """The critical value of LAD (doc/theory/svm_lad.rst): alpha = C c sign(y) is optimal
    at C_min (KKT exact) and below it, and not at 1.05 C_min; lad_critical_C agrees with
    an own computation."""
    X, y, G = _problem(kernel, 1.0)
    w = np.random.RandomState(1).uniform(0.0, 2.0, y.size) if weighted else np.ones(y.size)
    w[:5] = 0.0 if weighted else 1.0
    gamma, cmin = slope_and_cmin(G, y, w)
    assert lad_critical_C(G @ gamma, y, w) == pytest.approx(cmin, rel=1e-12)
    for C in (cmin, 0.5 * cmin):
        assert _kkt(G, y, C * w, C * gamma) <= 1e-12
    assert _kkt(G, y, 1.05 * cmin * w, 1.05 * cmin * gamma) > 1e-6


def test_r7_degenerate_critical_values():
    G = np.eye(3)
    # every target zero: nothing qualifies, alpha = 0 is optimal for every C
    assert lad_critical_C(np.zeros(3), np.zeros(3), np.ones(3)) == np.inf
    # predictions pushing against the targets never bind
    assert lad_critical_C(-G @ np.ones(3), np.ones(3), np.ones(3)) == np.inf
    # zero-weight samples do not count
    assert lad_critical_C(np.array([1.0, 4.0]), np.array([1.0, 1.0]),
                          np.array([1.0, 0.0])) == pytest.approx(1.0)


# --------------------------------------------------------- property: safety ---
def _perturbed(truth, G, y, h_ref, rng, kind):
    """An inexact reference: exact (gap 0), a perturbed dual point, or few epochs of an
    own coordinate descent from 0; the gap is computed here, independently."""
    if kind == "exact":
        return BoxQPReference(truth.C, truth.alpha, truth.pred, 0.0)
    if kind == "perturbed":
        a = np.clip(truth.alpha + 0.05 * h_ref * rng.randn(y.size), -h_ref, h_ref)
    else:  # "early": three epochs of dual coordinate descent
        a = np.zeros(y.size)
        g = -y.copy()
        for _ in range(3):
            for i in rng.permutation(y.size):
                if G[i, i] <= 0:
                    continue
                new = min(max(a[i] - g[i] / G[i, i], -h_ref[i]), h_ref[i])
                g += (new - a[i]) * G[i]
                a[i] = new
    return BoxQPReference(truth.C, a, G @ a, max(full_gap(G, y, h_ref, a), 0.0))


_C = st.floats(0.01, 20.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=examples(40), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10**6), kernel=st.sampled_from(KERNELS),
       bias=st.sampled_from([0.0, 1.0, 3.0]), c_ref=_C, c=_C,
       n=st.integers(40, 150), d=st.integers(1, 8), weighted=st.booleans(),
       ref_kind=st.sampled_from(["exact", "perturbed", "early"]),
       noise=st.sampled_from([0.1, 1.0, 10.0]))
def test_dvi_safety_property(seed, kernel, bias, c_ref, c, n, d, weighted, ref_kind, noise):
    """Safety as a property: random Laplace data (noise scale 0.1-10), kernel, bias,
    weights (some exactly 0), both path directions, exact and inexact references (the
    gap inflation of doc/theory/safety.rst); no sample is screened to the wrong side and
    the bounds contain the optimal prediction."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = X @ rng.uniform(-1, 1, d) + noise * rng.laplace(size=n)
    G = gram(X, kernel, bias)
    w = np.ones(n)
    if weighted:
        w = rng.uniform(0.0, 3.0, n)
        w[rng.rand(n) < 0.15] = 0.0
    try:
        t_ref = solve_lad_dual(G, y, c_ref * w)
        truth = solve_lad_dual(G, y, c * w)
    except GroundTruthInaccurate:
        reject()
    t_ref.C = c_ref
    ref = _perturbed(t_ref, G, y, c_ref * w, rng, ref_kind)
    res = dvi_lad(ref, c, np.diag(G).copy(), y, w)
    assert_safe(res, truth, y, f"{kernel}, bias={bias}, {c_ref}->{c}, {ref_kind}")
    assert not (res.at_lower & (w == 0)).any() and not (res.at_upper & (w == 0)).any()


@settings(max_examples=examples(15), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10**6), ratio=st.floats(1.05, 30.0),
       kernel=st.sampled_from(["linear", "rbf1"]))
def test_dvi_safety_from_closed_form(seed, ratio, kernel):
    """From the closed form at C_min up to ratio * C_min: safe."""
    X, y = laplace_data(seed, 100, 3)
    G = gram(X, kernel, 1.0)
    gamma, cmin = slope_and_cmin(G, y, np.ones(100))
    ref = BoxQPReference(cmin, cmin * gamma, cmin * (G @ gamma), 0.0)
    try:
        truth = solve_lad_dual(G, y, ratio * cmin * np.ones(100))
    except GroundTruthInaccurate:
        reject()
    res = dvi_lad(ref, ratio * cmin, np.diag(G).copy(), y, np.ones(100))
    assert_safe(res, truth, y, f"ratio={ratio}")
