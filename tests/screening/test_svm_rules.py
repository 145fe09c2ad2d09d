"""Safety and consistency of the SVM screening rules BT1, BT2, IT and DVI
(doc/theory/svm_lad.rst; Ogawa et al. 2013, Wang et al. 2014).

Ground truth is an independent exact solver (``_svm_truth``: interior point / dual CD
followed by the exact active-set polish, accepted only at relative duality gap <= 1e-10
and KKT violation <= 1e-9). True sets use the margin tolerance 1e-7:
R = {q_i > 1 + 1e-7}, L = {q_i < 1 - 1e-7}.

A rule *violates* safety if it puts a sample into R (alpha = 0) that is not in the true
R, or into L (alpha = C c_i) that is not in the true L. Besides the decisions, every test
also checks the underlying bounds: lower_i <= z_i'w* <= upper_i.
"""

from functools import cache

import cvxpy as cp
import numpy as np
import pytest
from _profiles import examples
from _svm_truth import (
    HYPOTHESIS_SETTINGS,
    KERNELS,
    GroundTruthInaccurate,
    augment,
    bound_violations,
    few_cd_epochs,
    noisy_data,
    signed_gram,
    solve_svm_dual,
    svm_certificate,
    violations,
)
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from sklearn_safescreen.problems.box_qp import BoxQPReference
from sklearn_safescreen.problems.box_qp_data import critical_C
from sklearn_safescreen.screening import (
    SVM_RULES,
    ball_test_1,
    ball_test_2,
    dvi,
    intersection_test,
    screen_svm,
)

#: (C_ref, C) pairs of the safety sweep, both directions; "cmin" means (C_min, 5 C_min)
PAIRS = ((1.0, 2.0), (2.0, 1.0), (0.5, 0.55), (10.0, 12.0), (12.0, 10.0), ("cmin", 5.0))
BIASES = (0.0, 1.0)
N, D, SEED = 200, 5, 2024
#: unit roundoff of float64, the unit of the rules' rounding allowances
_U = 2.0**-53


def _gamma(m):
    """gamma_m = m u / (1 - m u) (Higham 2002, Sec. 3.1), the test's own copy."""
    return m * _U / (1 - m * _U)


# ------------------------------------------------------------------ fixtures ---
@cache
def _problem(kernel, bias, seed=SEED, n=N, d=D):
    X, y = noisy_data(seed, n, d)
    return X, y, signed_gram(X, y, kernel, bias)


@cache
def _exact(kernel, bias, C, seed=SEED, n=N, d=D):
    return solve_svm_dual(C, Q=_problem(kernel, bias, seed, n, d)[2])


def _cmin(Q, weights=None):
    """C_min of Ogawa et al. 2013, Lemma 9 (own computation): 1 / max_{c_i>0} (Q c)_i."""
    c = np.ones(Q.shape[0]) if weights is None else weights
    return 1.0 / np.max((Q @ c)[c > 0])


def _closed_form_ref(Q, weights=None):
    """The trivially known optimum at C_min: alpha = C_min c (exact, gap 0)."""
    c = np.ones(Q.shape[0]) if weights is None else weights
    cmin = _cmin(Q, c)
    alpha = cmin * c
    return BoxQPReference(cmin, alpha, Q @ alpha, 0.0)


def _weights(seed, n):
    """Sample weights in [0, 3], about 15% exactly zero."""
    rng = np.random.RandomState(seed + 1)
    c = rng.uniform(0.0, 3.0, n)
    c[rng.rand(n) < 0.15] = 0.0
    return c


def _ref(sol, gap=0.0):
    return BoxQPReference(sol.C, sol.alpha, sol.margins, gap)


def _all_rules(ref, C, Q, weights=None):
    w = np.ones(Q.shape[0]) if weights is None else weights
    sq = np.diag(Q).copy()

    def mv(v):
        return Q @ v

    return {
        "BT1": ball_test_1(ref, C, sq, w),
        "BT2": ball_test_2(ref, C, sq, w, mv),
        "IT": intersection_test(ref, C, sq, w, mv),
        "DVI": dvi(ref, C, sq, w),
    }


def _pair_refs(kernel, bias, pair, seed=SEED, n=N, d=D):
    """``(reference, C, exact solution at C)`` for one (C_ref, C) pair of PAIRS."""
    Q = _problem(kernel, bias, seed, n, d)[2]
    C_ref, C = pair
    if C_ref == "cmin":
        ref = _closed_form_ref(Q)
        C = C * ref.C
        truth = solve_svm_dual(C, Q=Q)
    else:
        ref = _ref(_exact(kernel, bias, C_ref, seed, n, d))
        truth = _exact(kernel, bias, C, seed, n, d)
    return ref, C, truth


def _assert_safe(results, truth, context):
    for name, res in results.items():
        wl, wu = violations(res, truth)
        bad = bound_violations(res, truth)
        assert wl.size == 0 and wu.size == 0, (
            f"{name} unsafe ({context}): screened into R but not in R: {wl.tolist()} "
            f"(true margins {truth.margins[wl]}), into L but not in L: {wu.tolist()} "
            f"(true margins {truth.margins[wu]})")
        assert bad.size == 0, (
            f"{name} bounds miss the exact margin ({context}) at {bad.tolist()}: "
            f"lower {res.lower[bad]}, upper {res.upper[bad]}, q* {truth.margins[bad]}")


COMBOS = [(k, b) for k in KERNELS for b in BIASES]
COMBO_IDS = [f"{k}-bias{int(b)}" for k, b in COMBOS]


# ------------------------------------------------------- the ground truth tool ---
def test_ground_truth_solver_agrees_with_cvxpy():
    """Ground truth: the test-suite's exact solver agrees with CLARABEL through
    cvxpy on a small weighted RBF+bias problem and meets the acceptance thresholds."""
    X, y = noisy_data(5, 60, 3)
    Q = signed_gram(X, y, "rbf1", 1.0)
    weights = np.random.RandomState(0).uniform(0.0, 3.0, 60)
    weights[::7] = 0.0
    C = 3.0
    sol = solve_svm_dual(C, Q=Q, weights=weights)
    a = cp.Variable(60)
    prob = cp.Problem(cp.Maximize(-0.5 * cp.quad_form(a, cp.psd_wrap(Q)) + cp.sum(a)),
                      [a >= 0, a <= C * weights])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12,
               tol_feas=1e-12)
    assert sol.rel_gap <= 1e-10 and sol.kkt <= 1e-9
    assert abs(sol.dual - prob.value) <= 1e-8 * abs(prob.value)
    np.testing.assert_allclose(sol.margins, Q @ a.value, atol=1e-5)


# --------------------------------------------------------------- safety sweep ---
@pytest.mark.parametrize("kernel, bias", COMBOS, ids=COMBO_IDS)
def test_r1_safety_sweep(kernel, bias):
    """Safety sweep: for every (C_ref, C) pair (both directions, and (C_min, 5 C_min))
    BT1, BT2, IT and DVI only screen samples that are in the true R / L at C."""
    n_screened = 0
    for pair in PAIRS:
        ref, C, truth = _pair_refs(kernel, bias, pair)
        results = _all_rules(ref, C, _problem(kernel, bias)[2])
        _assert_safe(results, truth, f"{kernel}, bias={bias}, pair={pair}")
        n_screened += results["IT"].n_screened
    assert n_screened > 0  # not vacuous


_C_VALUES = st.floats(0.01, 20.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=examples(40), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10**6), kernel=st.sampled_from(KERNELS),
       bias=st.sampled_from(BIASES),
       pair=st.one_of(st.sampled_from(PAIRS), st.tuples(_C_VALUES, _C_VALUES)),
       n=st.integers(100, 250), d=st.integers(2, 10))
def test_r1_safety_property(seed, kernel, bias, pair, n, d):
    """The safety sweep (and the rule ordering) as a property: random noisy data,
    kernel, bias, size and (C_ref, C) pair (PAIRS or arbitrary values in [0.01, 20]); no
    rule screens a sample wrongly, every bound contains the exact margin, and IT screens
    a superset of BT1 and BT2."""
    try:
        ref, C, truth = _pair_refs(kernel, bias, pair, seed, n, d)
    except GroundTruthInaccurate:
        reject()  # regenerate rather than trust an inaccurate ground truth
    Q = _problem(kernel, bias, seed, n, d)[2]
    res = _all_rules(ref, C, Q)
    _assert_safe(res, truth, f"{kernel}, bias={bias}, pair={pair}")
    assert np.all(res["IT"].at_lower >= (res["BT1"].at_lower | res["BT2"].at_lower))
    assert np.all(res["IT"].at_upper >= (res["BT1"].at_upper | res["BT2"].at_upper))


# -------------------------------------------------------------- rule ordering ---
@pytest.mark.parametrize("kernel, bias", COMBOS, ids=COMBO_IDS)
def test_r3_intersection_at_least_as_tight(kernel, bias):
    """IT's region is the intersection of the BT1 and BT2 balls (Ogawa et al. 2013,
    Theorem 8): per sample, IT's bounds are at least as tight as BT1's and BT2's (within
    1e-10), and IT screens a superset of BT1 and BT2."""
    Q = _problem(kernel, bias)[2]
    for pair in PAIRS:
        ref, C, _ = _pair_refs(kernel, bias, pair)
        res = _all_rules(ref, C, Q)
        it, b1, b2 = res["IT"], res["BT1"], res["BT2"]
        assert it.info["fallback"] is None
        tol_l = 1e-10 * (1 + np.abs(it.lower))
        tol_u = 1e-10 * (1 + np.abs(it.upper))
        assert np.all(it.lower >= np.maximum(b1.lower, b2.lower) - tol_l), pair
        assert np.all(it.upper <= np.minimum(b1.upper, b2.upper) + tol_u), pair
        assert np.all(it.at_lower >= (b1.at_lower | b2.at_lower)), pair
        assert np.all(it.at_upper >= (b1.at_upper | b2.at_upper)), pair


# ---------------------------------------------------------------- DVI == BT1 ---
@pytest.mark.parametrize("kernel, bias", COMBOS, ids=COMBO_IDS)
def test_r4_dvi_equals_bt1(kernel, bias):
    """Ogawa et al. 2013, Appendix C: DVI_s* (theta form) and BT1 (their eq. 34) give the
    same bounds to 1e-12 relative and identical decisions, for exact and for inexact
    (gap-inflated) references."""
    Q = _problem(kernel, bias)[2]
    sq, w = np.diag(Q).copy(), np.ones(Q.shape[0])
    refs = [(_pair_refs(kernel, bias, pair)[:2]) for pair in PAIRS]
    sloppy = few_cd_epochs(2.0, Q, 5)
    refs += [(_ref(sloppy, sloppy.gap), 2.5), (_ref(sloppy, sloppy.gap), 1.5)]
    for ref, C in refs:
        a, b = dvi(ref, C, sq, w), ball_test_1(ref, C, sq, w)
        scale = 1.0 + np.abs(b.lower) + np.abs(b.upper)
        assert np.all(np.abs(a.lower - b.lower) <= 1e-12 * scale), (ref.C, C)
        assert np.all(np.abs(a.upper - b.upper) <= 1e-12 * scale), (ref.C, C)
        np.testing.assert_array_equal(a.at_lower, b.at_lower)
        np.testing.assert_array_equal(a.at_upper, b.at_upper)


@pytest.mark.parametrize("bias", BIASES)
def test_r4_dvi_w_form_linear(bias):
    """Wang et al. 2014, Corollary 12: for the linear kernel the w-form of DVI_s, computed
    here from the explicit primal w_ref, equals the library's DVI and BT1 bounds."""
    X, y, Q = _problem("linear", bias)
    Z = y[:, None] * augment(X, bias)  # signed rows \bar x_i (bias feature included)
    for pair in PAIRS:
        ref, C, _ = _pair_refs("linear", bias, pair)
        w_ref = Z.T @ ref.alpha
        Ck = ref.C
        centre = (Ck + C) / (2 * Ck) * (Z @ w_ref)
        spread = abs(C - Ck) / (2 * Ck) * np.linalg.norm(w_ref) * np.linalg.norm(Z, axis=1)
        for res in (dvi(ref, C, np.diag(Q).copy(), np.ones(len(y))),
                    ball_test_1(ref, C, np.diag(Q).copy(), np.ones(len(y)))):
            scale = 1.0 + np.abs(centre) + spread
            assert np.all(np.abs(res.lower - (centre - spread)) <= 1e-10 * scale), pair
            assert np.all(np.abs(res.upper - (centre + spread)) <= 1e-10 * scale), pair


# ---------------------------------------------------------- ball containment ---
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("kernel, bias", COMBOS, ids=COMBO_IDS)
def test_r6_ball_containment(kernel, bias, weighted):
    """The library's balls, with and without weights, are those of
    doc/theory/svm_lad.rst (centre m1 = c w_ref, radius |C-C_ref|/(2C_ref)||w_ref||;
    centre m2 = (w_ref + C z_{c s})/2, radius sqrt(||m2||^2 + C(xi_ref - sum_i c_i s_i))
    with the weighted hinge xi_ref) and contain the exact optimum at C, checked in kernel
    form ||w* - m||^2 = (a* - beta)'Q(a* - beta)."""
    Q = _problem(kernel, bias)[2]
    n = Q.shape[0]
    c_w = _weights(99, n) if weighted else np.ones(n)
    sq = np.diag(Q).copy()
    zn = np.sqrt(sq)
    for pair in PAIRS:
        C_ref, C = pair
        if C_ref == "cmin":
            ref = _closed_form_ref(Q, c_w)
            C = C * ref.C
        else:
            ref = _ref(solve_svm_dual(C_ref, Q=Q, weights=c_w))
        truth = solve_svm_dual(C, Q=Q, weights=c_w)
        a_ref, q_ref, Cr = ref.alpha, ref.margins, ref.C
        c = (C + Cr) / (2 * Cr)
        v = np.where((c * q_ref < 1) & (c_w > 0), c_w, 0.0)  # c o s_hat
        betas = {"BT1": c * a_ref, "BT2": 0.5 * (a_ref + C * v)}
        # the formulas in the reference's margins q_ref (taken as exact: the solver's
        # margins, not a recomputed Q a_ref that differs from them by round-off)
        qv = Q @ v
        radii = {
            "BT1": abs(C - Cr) / (2 * Cr) * np.sqrt(a_ref @ q_ref),
            "BT2": np.sqrt(0.25 * (a_ref @ q_ref + 2 * C * (a_ref @ qv) + C * C * (v @ qv))
                           + C * (c_w @ np.maximum(0, 1 - q_ref) - v.sum())),
        }
        centres = {"BT1": c * q_ref, "BT2": 0.5 * (q_ref + C * qv)}
        results = {"BT1": ball_test_1(ref, C, sq, c_w),
                   "BT2": ball_test_2(ref, C, sq, c_w, lambda u: Q @ u)}
        # the rounding allowance (doc/theory/safety.rst): the reference's margins are
        # exact here, but the products Qv, alpha'Qalpha, ... are rounded; with
        # N_a = sum|alpha_j| ||z_j||, N_v = sum|v_j| ||z_j|| (Cauchy-Schwarz) the squared
        # radius may exceed the formula by E_r and each projection by E_p
        g = _gamma(2 * n)
        N_a, N_v = np.abs(a_ref) @ zn, np.abs(v) @ zn
        rho = abs(C - Cr) / (2 * Cr)
        hinge_scale = c_w @ (np.maximum(0, 1 - q_ref) + 1 + np.abs(q_ref)) + v.sum()
        allowance = {
            "BT1": (8 * g * (rho * N_a) ** 2, 2 * g * zn * c * N_a),
            "BT2": (8 * g * ((N_a + C * N_v) ** 2 + C * hinge_scale),
                    2 * g * zn * (N_a + C * N_v)),
        }
        for name, res in results.items():
            beta, r, centre = betas[name], radii[name], centres[name]
            scale = 1.0 + np.abs(centre) + r * zn
            np.testing.assert_allclose(0.5 * (res.lower + res.upper), centre, rtol=0,
                                       atol=1e-11 * scale.max(), err_msg=f"{name} {pair}")
            # the implemented interval contains the formula's ...
            assert np.all(res.lower <= centre - r * zn + 16 * _U * scale), (name, pair)
            assert np.all(res.upper >= centre + r * zn - 16 * _U * scale), (name, pair)
            # ... and exceeds it by no more than the rounding allowance
            E_r, E_p = allowance[name]
            bound = np.sqrt(r**2 + E_r) * zn + E_p
            half = 0.5 * (res.upper - res.lower)
            assert np.all(half <= bound * (1 + 1e-12)), (
                f"{name} {pair}: half-width exceeds the formula's by "
                f"{np.max(half - r * zn):.3g}, allowance {np.max(bound - r * zn):.3g}")
            diff = truth.alpha - beta
            dist_sq = diff @ Q @ diff
            slack = 1e-12 * (1 + truth.alpha @ Q @ truth.alpha + beta @ Q @ beta)
            assert dist_sq <= r**2 * (1 + 2e-9) + slack, (
                f"{name} ball misses w* for pair {pair}: ||w*-m|| = "
                f"{np.sqrt(max(dist_sq, 0)):.6g} > r = {r:.6g}")


# ---------------------------------------------------------------------- C_min ---
@pytest.mark.parametrize("kernel, bias", [("linear", 0.0), ("linear", 1.0),
                                          ("rbf1", 0.0), ("poly", 1.0)])
def test_r7_cmin(kernel, bias):
    """Ogawa et al. 2013, Lemma 9: critical_C(Q 1) = 1/max(Q 1); alpha = C_min 1 is
    optimal at C_min (KKT, and equal to the exact optimum), and alpha = 1.01 C_min 1 is
    not optimal at 1.01 C_min."""
    Q = _problem(kernel, bias)[2]
    n = Q.shape[0]
    cmin = critical_C(Q @ np.ones(n))
    assert cmin == pytest.approx(_cmin(Q), rel=1e-14)
    a = cmin * np.ones(n)
    q = Q @ a
    assert q.max() <= 1 + 1e-12  # every sample in E or L: alpha = C is optimal
    gap, rel_gap, kkt, dual = svm_certificate(a, q, cmin * np.ones(n))
    assert rel_gap <= 1e-13 and kkt <= 1e-12
    exact = solve_svm_dual(cmin, Q=Q)
    assert abs(exact.dual - dual) <= 1e-12 * abs(dual)
    # just above C_min the closed form is no longer optimal
    C = 1.01 * cmin
    a = C * np.ones(n)
    gap, rel_gap, kkt, dual = svm_certificate(a, Q @ a, C * np.ones(n))
    assert kkt >= 0.009
    exact = solve_svm_dual(C, Q=Q)
    assert exact.dual > dual + 1e-9 * abs(dual)


def test_r7_cmin_with_weights():
    """Ogawa et al.'s Lemma 9 with weights (doc/theory/svm_lad.rst):
    C_min = 1/max_{c_i>0}(Q c)_i and alpha = C_min c is the exact optimum at C_min."""
    X, y, Q = _problem("rbf1", 1.0)
    c = np.random.RandomState(1).uniform(0, 3, Q.shape[0])
    c[::5] = 0.0
    qc = Q @ c
    cmin = critical_C(qc[c > 0])
    assert cmin == pytest.approx(_cmin(Q, c), rel=1e-14)
    exact = solve_svm_dual(cmin, Q=Q, weights=c)
    a = cmin * c
    _, rel_gap, kkt, dual = svm_certificate(a, Q @ a, cmin * c)
    assert rel_gap <= 1e-13 and kkt <= 1e-12
    assert abs(exact.dual - dual) <= 1e-12 * abs(dual)


def test_r7_cmin_degenerate():
    """Ogawa et al.'s Lemma 9, edge case: max_i (Q 1)_i <= 0 (here z_2 = -z_1, so
    Q 1 = 0) gives C_min = inf without a division by zero; alpha = C 1 is then optimal
    for every C."""
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    y = np.array([1.0, -1.0])
    Q = signed_gram(X, y, "linear", 0.0)
    with np.errstate(all="raise"):
        assert critical_C(Q @ np.ones(2)) == np.inf
        assert critical_C(np.array([-1e-17, 0.0])) == np.inf  # round-off below zero
        assert critical_C(np.array([])) == np.inf
    for C in (1e-3, 1.0, 1e3):
        a = C * np.ones(2)
        _, rel_gap, kkt, _ = svm_certificate(a, Q @ a, C * np.ones(2))
        assert rel_gap <= 1e-14 and kkt == 0.0


def test_r7_cmin_degenerate_estimator_does_not_crash():
    """The estimator's cold start uses C_min; with max(Q 1) <= 0 it must not crash and
    returns alpha = C 1 (w = 0)."""
    from sklearn_safescreen import SafeSVC

    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    y = np.array([1, -1])
    clf = SafeSVC(C=3.0, kernel="linear", fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(clf.coef_, 0.0, atol=1e-14)
    np.testing.assert_allclose(np.abs(clf.dual_coef_), 3.0)


# ------------------------------------------------------------- trivial limit ---
@pytest.mark.parametrize("kernel, bias", COMBOS, ids=COMBO_IDS)
def test_r8_same_C_screens_exactly_the_non_margin_samples(kernel, bias):
    """Trivial limit: with C = C_ref and an exact reference (r1 = 0), BT1, DVI and IT
    screen exactly the samples with q_i != 1 (R into at_lower, L into at_upper) and
    leave E."""
    Q = _problem(kernel, bias)[2]
    for C in (1.0, 10.0):
        sol = _exact(kernel, bias, C)
        q = sol.margins
        off = np.abs(q - 1) > 1e-7
        on = np.abs(q - 1) <= 1e-9
        assert off.sum() + on.sum() == q.size  # no sample in the ambiguous band
        assert on.sum() > 0
        res = _all_rules(_ref(sol), C, Q)
        assert res["BT1"].info["r1"] == 0.0
        for name in ("BT1", "DVI", "IT"):
            r = res[name]
            np.testing.assert_array_equal(r.at_lower, off & (q > 1), err_msg=name)
            np.testing.assert_array_equal(r.at_upper, off & (q < 1), err_msg=name)
        # the interval is the point q, widened only by the rounding allowance of the
        # projections c q (c = 1, exact margins): 4u|q| each side (balls.reference_ball)
        lo, up = res["BT1"].lower, res["BT1"].upper
        assert np.all(lo <= q) and np.all(q <= up)
        assert np.all(q - lo <= 8 * _U * np.abs(q)) and np.all(up - q <= 8 * _U * np.abs(q))


# ---------------------------------------------------- inexact references ---
@settings(max_examples=examples(40), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10**6), kernel=st.sampled_from(KERNELS),
       bias=st.sampled_from(BIASES), pair=st.sampled_from(PAIRS[:5]),
       epochs=st.sampled_from([1, 2, 3, 5]))
def test_r13_inexact_reference_is_safe(seed, kernel, bias, pair, epochs):
    """Inexact references (doc/theory/safety.rst): a reference stopped after a few CD
    epochs, passed with its true full duality gap, never makes BT1, BT2, IT or DVI screen
    a sample wrongly."""
    n, d = 150, 4
    Q = _problem(kernel, bias, seed, n, d)[2]
    C_ref, C = pair
    sloppy = few_cd_epochs(C_ref, Q, epochs, seed=seed)
    assert sloppy.gap > 0
    try:
        truth = _exact(kernel, bias, C, seed, n, d)
    except GroundTruthInaccurate:
        reject()
    results = _all_rules(_ref(sloppy, sloppy.gap), C, Q)
    _assert_safe(results, truth, f"{kernel}, bias={bias}, pair={pair}, epochs={epochs}")
    # the reference point itself lies in both balls, so they can never be disjoint
    assert results["IT"].info["fallback"] is None


@settings(max_examples=examples(30), **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10**6), kernel=st.sampled_from(KERNELS),
       bias=st.sampled_from(BIASES), pair=st.sampled_from(PAIRS),
       inexact=st.booleans())
def test_r13_sample_weights_are_safe(seed, kernel, bias, pair, inexact):
    """Weights and inexact references: with sample weights c_i in [0, 3] (some exactly
    0), box 0 <= alpha_i <= C c_i, all four rules are safe (exact reference, closed form
    at C_min, or a 3-epoch reference with its gap), and zero-weight samples are never
    screened."""
    n, d = 150, 4
    Q = _problem(kernel, bias, seed, n, d)[2]
    c = _weights(seed, n)
    C_ref, C = pair
    try:
        if C_ref == "cmin":
            ref = _closed_form_ref(Q, c)
            C = C * ref.C
        elif inexact:
            sloppy = few_cd_epochs(C_ref, Q, 3, weights=c, seed=seed)
            ref = _ref(sloppy, sloppy.gap)
        else:
            ref = _ref(solve_svm_dual(C_ref, Q=Q, weights=c))
        truth = solve_svm_dual(C, Q=Q, weights=c)
    except GroundTruthInaccurate:
        reject()
    results = _all_rules(ref, C, Q, c)
    _assert_safe(results, truth, f"{kernel}, bias={bias}, pair={pair}, inexact={inexact}")
    for name, res in results.items():
        assert not np.any((res.at_lower | res.at_upper) & (c == 0)), name


def test_r16_zero_norm_and_duplicate_samples():
    """Edge cases: with zero-norm samples (z_i = 0, so z_i'w = 0 < 1) and
    duplicated samples (a singular Q), every rule stays safe and puts the zero-norm
    samples into L (alpha = C), never into R."""
    X, y = noisy_data(17, 150, 3)
    X = np.vstack([X, np.zeros((3, 3)), X[:10], X[:2]])
    y = np.r_[y, 1.0, -1.0, 1.0, y[:10], -y[:2]]
    zero = np.zeros(len(y), dtype=bool)
    zero[150:153] = True
    Q = signed_gram(X, y, "linear", 0.0)
    sols = {C: solve_svm_dual(C, Q=Q) for C in (0.5, 0.55, 1.0, 2.0, 10.0, 12.0)}
    for C_ref, C in PAIRS[:5]:
        res = _all_rules(_ref(sols[C_ref]), C, Q)
        _assert_safe(res, sols[C], f"pair {(C_ref, C)}")
        for name, r in res.items():
            assert np.all(r.at_upper[zero]) and not np.any(r.at_lower[zero]), name
            assert np.all(r.lower[zero] == 0.0) and np.all(r.upper[zero] == 0.0), name


# ----------------------------------------------------- disjoint / dispatch ---
def test_r13_disjoint_balls_fall_back_to_bt2():
    """A degenerate case of IT (doc/theory/svm_lad.rst): if the two balls come out
    disjoint (only possible with an inconsistent input; here a stale ``q_matvec`` that
    returns zeros), IT does not use the intersection: it reports the fallback and returns
    exactly BT2's bounds."""
    X, y, Q = _problem("rbf1", 1.0)
    sol = _exact("rbf1", 1.0, 1.0)
    ref = _ref(sol)
    sq, ones = np.diag(Q).copy(), np.ones(len(y))

    def stale(v):
        return np.zeros_like(v)

    it = intersection_test(ref, 1.5, sq, ones, stale)
    bt2 = ball_test_2(ref, 1.5, sq, ones, stale)
    assert it.info["phi_norm"] > it.info["r1"] + it.info["r2"]
    assert it.info["fallback"] == "BT2"
    np.testing.assert_array_equal(it.lower, bt2.lower)
    np.testing.assert_array_equal(it.upper, bt2.upper)
    assert np.all(np.isfinite(it.lower)) and np.all(np.isfinite(it.upper))


def test_screen_svm_dispatch():
    """``screen_svm`` returns the named rule's result and rejects unknown names."""
    X, y, Q = _problem("poly", 0.0)
    ref = _ref(_exact("poly", 0.0, 1.0))
    sq, ones = np.diag(Q).copy(), np.ones(len(y))
    direct = _all_rules(ref, 2.0, Q)
    assert set(SVM_RULES) == set(direct)
    for name in SVM_RULES:
        res = screen_svm(name, ref, 2.0, sq, ones, lambda v: Q @ v)
        np.testing.assert_array_equal(res.lower, direct[name].lower)
        np.testing.assert_array_equal(res.upper, direct[name].upper)
        np.testing.assert_array_equal(res.at_lower, direct[name].at_lower)
        np.testing.assert_array_equal(res.at_upper, direct[name].at_upper)
    with pytest.raises(ValueError, match="unknown"):
        screen_svm("XYZ", ref, 2.0, sq, ones, lambda v: Q @ v)
