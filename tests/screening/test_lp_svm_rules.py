"""Safety and correctness of the LP-SVM rules (``screening/lp_svm.py``; Shibagaki et al.
2016, Theorems 6 and 7 as corrected, and their synergy) against an independent solve of
the full LP (``_lp_svm_models``).

* The knapsack bounds of Theorem 6 equal the minimum and maximum of
  :math:`Z_{:j}^\\top a` over the polytope, computed here by an LP per feature, with and
  without samples fixed; the one-variable bounds of Theorem 7 are valid bounds of the
  margin over the cut, checked by an LP per sample.
* From inexact references (the optimum perturbed; its dual perturbed, made feasible by
  scaling) no screened feature is non-zero at the optimum and no screened sample is on
  the wrong side (property-based).
* The synergy only tightens (bounds nested), the fixpoint contains each rule alone, and
  strict gains exist.
* The paper's **printed** Theorems 6 and 7 screen wrongly on constructed instances (the
  errata), so that nobody "fixes" the corrected forms back.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _lp_svm_models import ZERO, dense, make_problem, solve_full
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.screening.lp_svm import (
    LPReference,
    PrimalCut,
    correlation_bounds,
    margin_bounds,
    screen_features,
    screen_lp_svm,
    screen_samples,
)


def perturbed_reference(data, opt, lam, w_noise, a_noise, seed):
    """The optimum moved by noise: any w, and any alpha (made feasible by the rules)."""
    rng = np.random.RandomState(seed)
    w = opt.w + w_noise * rng.randn(len(opt.w)) * (rng.rand(len(opt.w)) < 0.5)
    a = np.clip(opt.a + a_noise * rng.randn(len(opt.a)) * data.s, 0.0, data.s)
    return w, data.y * a


def assert_safe(screen, opt, s):
    assert not np.any(screen.features & (np.abs(opt.w) > ZERO)), "a non-zero feature"
    # margins: at_zero needs margin >= 1, at_box margin <= 1, at every optimum
    assert not np.any(screen.at_zero & (opt.margins < 1 - 1e-8)), "a margin sample at 0"
    assert not np.any(screen.at_box & (opt.margins > 1 + 1e-8)), "a free sample at the box"
    assert not np.any(screen.at_zero & (opt.a > 1e-8 * s))
    assert not np.any(screen.at_box & (opt.a < s * (1 - 1e-8)))


# --------------------------------------------------------------- exact bounds ---
def lp_min_max(c, s, lo_mass, hi_mass, fixed_zero=None, fixed_box=None):
    """min and max of c^T a over {0 <= a <= s, lo <= sum a <= hi} (fixed entries pinned)."""
    upper = s.copy()
    lower = np.zeros_like(s)
    if fixed_zero is not None:
        upper[fixed_zero] = 0.0
    if fixed_box is not None:
        lower[fixed_box] = s[fixed_box]
    ones = np.ones((1, len(s)))
    out = []
    for sign in (1.0, -1.0):
        res = linprog(sign * c, A_ub=np.vstack([ones, -ones]), b_ub=[hi_mass, -lo_mass],
                      bounds=list(zip(lower, upper, strict=True)), method="highs")
        assert res.status == 0
        out.append(sign * res.fun)
    return out


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weights", [False, True])
def test_knapsack_bounds_are_the_polytope_extremes(sparse, weights):
    X, y, s = make_problem(21, n=30, d=12, sparse=sparse, weights=weights)
    data = LPSVMData(X, y, s)
    n = data.n_samples
    Z = y[:, None] * dense(X)
    rng = np.random.RandomState(0)
    for lam_frac, zero_frac, box_frac in [(0.3, 0, 0), (0.05, 0, 0), (0.3, 0.2, 0.2),
                                          (0.02, 0.3, 0.1)]:
        lam = lam_frac * data.lambda_max()
        opt = solve_full(X, y, s, lam)
        w = opt.w + 0.05 * rng.randn(len(opt.w))
        ref = LPReference.build(data, lam, w, y * opt.a * 0.9)
        at_zero = rng.rand(n) < zero_frac
        at_box = (rng.rand(n) < box_frac) & ~at_zero
        lo, hi = correlation_bounds(data, lam, ref, at_zero, at_box)
        for j in range(data.n_features):
            lp_lo, lp_hi = lp_min_max(Z[:, j], s, n * ref.dual, n * ref.primal, at_zero,
                                      at_box)
            tol = 1e-9 * (1 + np.abs(Z[:, j]) @ s)
            assert lo[j] <= lp_lo + 1e-15 and lp_lo - lo[j] <= tol
            assert hi[j] >= lp_hi - 1e-15 and hi[j] - lp_hi <= tol


@pytest.mark.parametrize("sparse", [False, True])
def test_margin_bounds_hold_over_the_cut(sparse):
    """Each one-variable bound is at most the LP minimum of the margin over the cut
    (split variables w = p - q), and is tight when the cut is bounded."""
    X, y, s = make_problem(22, n=25, d=8, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    Z = y[:, None] * dense(X)
    lam = 0.3 * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    w = opt.w + 0.01 * np.random.RandomState(1).randn(len(opt.w))
    ref = LPReference.build(data, lam, w, y * opt.a)
    cut = PrimalCut.build(data, lam, ref)
    theta = (ref.margins < 1.0).astype(float)
    g = -(Z.T @ (theta * s)) / len(y)
    k = ref.primal - (theta * s).sum() / len(y)
    lower, upper = margin_bounds(data, cut)
    d = data.n_features
    A = np.r_[lam + g, lam - g][None, :]
    tight = 0
    for i in range(len(y)):
        for sign, bound in ((1.0, lower[i]), (-1.0, -upper[i])):
            c = sign * np.r_[Z[i], -Z[i]]
            res = linprog(c, A_ub=A, b_ub=[k], bounds=(0, None), method="highs")
            if res.status == 3:  # unbounded: the bound must say so
                assert bound == -np.inf
                continue
            assert res.status == 0
            assert bound <= res.fun + 1e-9 * (1 + abs(res.fun))
            tight += abs(bound - res.fun) <= 1e-7 * (1 + abs(res.fun))
    assert tight > 0
    # and the optimum lies in the cut
    assert lam * np.abs(opt.w).sum() + g @ opt.w <= k + 1e-9
    assert np.all(lower <= opt.margins + 1e-9) and np.all(upper >= opt.margins - 1e-9)
    assert d == len(cut.c_minus)


# ------------------------------------------------------------------- safety ---
def one_variable_lp(z, cm, cp, free, k, sign):
    """The one-variable LP of a margin bound solved by HiGHS: over :math:`\\mu\\ge0`
    with :math:`\\mu c_-\\ge sz_j` and :math:`\\mu c_+\\ge -sz_j` on the free
    features (``sign`` :math:`s=1`: the lower bound's, -1: the upper bound's), the
    minimum of :math:`\\mu k` (the bound is minus it, resp. it); None when infeasible or
    unbounded."""
    A = np.r_[-cm[free], -cp[free]][:, None]
    b = np.r_[-sign * z[free], sign * z[free]]
    res = linprog([k], A_ub=A, b_ub=b, bounds=(0, None), method="highs")
    return res.fun if res.status == 0 else None


@pytest.mark.parametrize("sparse", [False, "int32", "int64"])
def test_margin_bounds_solve_the_one_variable_lps(sparse):
    """The compiled margin bounds equal the one-variable LPs they stand for, solved
    directly, on cuts far from the optimum (coefficients of both signs), with features
    left out, and on CSR data with explicit zeros, empty rows and 64-bit indices (an
    unstored entry of a column with a negative coefficient still sets :math:`\\mu\\le0`)."""
    import scipy.sparse as sp

    rng = np.random.RandomState(3)
    X, y, s = make_problem(5, n=40, d=12, sparse=bool(sparse), weights=True)
    if sparse:
        X = sp.csr_matrix(X)
        X.data[X.indptr[3]:X.indptr[4]] = 0.0
        X.eliminate_zeros()  # an empty row
        X.data[::5] = 0.0  # explicit zeros
    data = LPSVMData(X, y, s)
    if sparse:
        # scipy builds 32-bit indices below 2**31 entries: the 64-bit kernel on demand
        data.Z.indices = data.Z.indices.astype(sparse)
        data.Z.indptr = data.Z.indptr.astype(sparse)
        assert np.diff(data.Z.indptr)[3] == 0 and np.any(data.Z.data == 0.0)
    Z = dense(data.Z)
    checked = {"finite": 0, "none": 0, "negative": 0}
    for trial in range(12):
        lam = data.lambda_max() * rng.uniform(0.02, 0.5)
        ref = LPReference.build(data, lam, rng.randn(12), y * s * rng.rand(40))
        cut = PrimalCut.build(data, lam, ref, rng.rand(40))
        free = rng.rand(12) < 0.7 if trial % 2 else np.ones(12, dtype=bool)
        checked["negative"] += int(np.any(free & ((cut.c_minus < 0) | (cut.c_plus < 0))))
        lower, upper = margin_bounds(data, cut, free)
        for i in range(40):
            for sign, bound in ((1.0, -lower[i]), (-1.0, upper[i])):
                best = one_variable_lp(Z[i], cut.c_minus, cut.c_plus, free, cut.k, sign)
                if best is None or abs(best) > 1e12:
                    checked["none"] += 1
                    assert bound == np.inf
                else:
                    checked["finite"] += 1
                    assert bound == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert min(checked.values()) > 0, checked


@settings(max_examples=examples(60))
@given(seed=st.integers(0, 10**6), frac=st.sampled_from([0.9, 0.6, 0.3, 0.1, 0.03]),
       w_noise=st.sampled_from([0.0, 1e-8, 1e-4, 1e-2, 0.3]),
       a_noise=st.sampled_from([0.0, 1e-6, 1e-2, 0.3]),
       sparse=st.booleans(), weights=st.booleans(), intercept=st.booleans())
def test_no_screened_variable_is_wrong_from_inexact_references(seed, frac, w_noise, a_noise,
                                                               sparse, weights, intercept):
    X, y, s = make_problem(seed, n=40, d=20, sparse=sparse, weights=weights,
                           intercept=intercept)
    data = LPSVMData(X, y, s)
    lam = frac * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    w, alpha = perturbed_reference(data, opt, lam, w_noise, a_noise, seed)
    for mode in ("simultaneous", "features", "samples"):
        assert_safe(screen_lp_svm(data, lam, w, alpha, mode=mode), opt, s)
    # the bounds themselves contain the optimum's values
    ref = LPReference.build(data, lam, w, alpha)
    lo, hi = correlation_bounds(data, lam, ref)
    corr = (y[:, None] * dense(X)).T @ opt.a
    assert np.all(lo <= corr + 1e-9) and np.all(corr <= hi + 1e-9)
    lower, upper = margin_bounds(data, PrimalCut.build(data, lam, ref))
    assert np.all(lower <= opt.margins + 1e-9) and np.all(opt.margins <= upper + 1e-9)


@settings(max_examples=examples(30))
@given(seed=st.integers(0, 10**6), step=st.sampled_from([0.98, 0.9, 0.7]),
       sparse=st.booleans())
def test_no_screened_variable_is_wrong_along_a_path_step(seed, step, sparse):
    """The previous value's optimum screens the next value (the path's use)."""
    X, y, s = make_problem(seed, n=40, d=20, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    lam0 = data.lambda_max() * np.random.RandomState(seed).uniform(0.2, 1.0)
    prev = solve_full(X, y, s, lam0)
    lam = lam0 * step
    screen = screen_lp_svm(data, lam, prev.w, y * prev.a)
    assert_safe(screen, solve_full(X, y, s, lam), s)


def test_the_rules_screen_on_a_path():
    """Non-vacuous: near lambda_max, small steps screen features and samples."""
    X, y, s = make_problem(31, n=60, d=40)
    data = LPSVMData(X, y, s)
    lam0 = 0.8 * data.lambda_max()
    prev = solve_full(X, y, s, lam0)
    screen = screen_lp_svm(data, lam0 * 0.98, prev.w, y * prev.a)
    assert screen.n_features > 0 and screen.at_box.sum() > 0
    assert_safe(screen, solve_full(X, y, s, lam0 * 0.98), s)


# ------------------------------------------------------------------ synergy ---
@settings(max_examples=examples(30))
@given(seed=st.integers(0, 10**6), frac=st.sampled_from([0.8, 0.5, 0.2]),
       sparse=st.booleans())
def test_synergy_only_tightens_and_the_fixpoint_contains_each_rule(seed, frac, sparse):
    X, y, s = make_problem(seed, n=40, d=20, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    lam = frac * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    w, alpha = perturbed_reference(data, opt, lam, 1e-3, 1e-3, seed)
    ref = LPReference.build(data, lam, w, alpha)
    rng = np.random.RandomState(seed)
    # fixing samples (any set: the containment is a property of the polytopes)
    at_zero = rng.rand(40) < 0.2
    at_box = (rng.rand(40) < 0.2) & ~at_zero
    lo0, hi0 = correlation_bounds(data, lam, ref)
    lo1, hi1 = correlation_bounds(data, lam, ref, at_zero, at_box)
    slack = 1e-9 * (1 + data.col_abs_s)
    assert np.all(lo1 >= lo0 - slack) and np.all(hi1 <= hi0 + slack)
    cut = PrimalCut.build(data, lam, ref)
    l0, u0 = margin_bounds(data, cut)
    # the features left free include the optimum's support, as after safe feature
    # screening: otherwise the region can be empty, and an empty region's computed
    # bound is "none" (safe, but not nested)
    free = (rng.rand(data.n_features) < 0.6) | (np.abs(opt.w) > ZERO)
    l1, u1 = margin_bounds(data, cut, free)
    assert np.all(l1 >= l0) and np.all(u1 <= u0)
    both = screen_lp_svm(data, lam, w, alpha)
    feats = screen_lp_svm(data, lam, w, alpha, mode="features")
    samples = screen_lp_svm(data, lam, w, alpha, mode="samples")
    alone = screen_lp_svm(data, lam, w, alpha, synergy=False)
    assert np.all(both.features >= feats.features)
    assert np.all(both.at_zero >= samples.at_zero) and np.all(both.at_box >= samples.at_box)
    assert np.all(both.features >= alone.features) and np.all(both.at_box >= alone.at_box)
    assert_safe(both, opt, s)


def test_synergy_gains_strictly_somewhere():
    """Recorded instances where the fixpoint decides more than the two rules alone."""
    gains = 0
    for seed in range(6):
        X, y, s = make_problem(seed, n=60, d=40)
        data = LPSVMData(X, y, s)
        lam0 = 0.7 * data.lambda_max()
        prev = solve_full(X, y, s, lam0)
        for step in (0.99, 0.95):
            both = screen_lp_svm(data, lam0 * step, prev.w, y * prev.a)
            alone = screen_lp_svm(data, lam0 * step, prev.w, y * prev.a, synergy=False)
            gains += (both.n_features + both.n_samples) > (alone.n_features + alone.n_samples)
            assert_safe(both, solve_full(X, y, s, lam0 * step), s)
    assert gains > 0


# ------------------------------------------------------------------- errata ---
def printed_theorem6_bounds(z, dual_obj, primal_obj):
    """Theorem 6 exactly as printed: l_q = floor(y^T alpha), u_q = floor(P(w)) (no
    factor n), the printed fractional indices; written with loops for plainness."""
    n = len(z)
    zs = np.sort(z)
    lq, uq = math.floor(dual_obj), math.floor(primal_obj)
    n_neg, p_pos = int((zs < 0).sum()), int((zs > 0).sum())

    def at(i):  # 1-based index, 0 outside
        return zs[i - 1] if 1 <= i <= n else 0.0

    if n_neg < lq + 1:
        lb = sum(at(i) for i in range(1, lq + 1)) + (dual_obj - lq) * at(lq + 1)
    elif n_neg > uq:
        lb = sum(at(i) for i in range(1, uq + 1)) + (primal_obj - uq) * at(uq + 1)
    else:
        lb = np.minimum(zs, 0).sum()
    if p_pos < lq + 1:
        ub = sum(at(i) for i in range(n - lq + 1, n + 1)) + (dual_obj - lq) * at(n - lq + 1)
    elif p_pos > uq:
        ub = sum(at(i) for i in range(n - uq + 1, n + 1)) + (primal_obj - uq) * at(n - uq + 1)
    else:
        ub = np.maximum(zs, 0).sum()
    return lb, ub


def test_printed_theorem6_screens_active_features():
    """E8: the printed implication ("LB < -lambda n and UB > lambda n => w_j = 0") and
    the printed upper mass (P(w), not n P(w)) each screen a feature that is non-zero at
    the optimum, from the exact optimum itself; the corrected rule does not."""
    X, y, s = make_problem(41, n=60, d=30)
    data = LPSVMData(X, y, s)
    lam = 0.2 * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    n = len(y)
    Z = y[:, None] * X
    active = np.abs(opt.w) > ZERO
    dual_obj = opt.a.sum()  # y^T alpha, the printed dual objective (no 1/n)
    primal_obj = opt.value
    printed = np.zeros(X.shape[1], bool)
    normalisation_only = np.zeros(X.shape[1], bool)
    for j in range(X.shape[1]):
        lb, ub = printed_theorem6_bounds(Z[:, j], dual_obj, primal_obj)
        printed[j] = lb < -lam * n and ub > lam * n
        normalisation_only[j] = lb > -lam * n and ub < lam * n  # corrected implication
    assert np.any(printed & active)
    assert np.any(normalisation_only & active)
    corrected = screen_features(data, lam, LPReference.build(data, lam, opt.w, y * opt.a))
    assert not np.any(corrected & active)


def test_printed_theorem7_screens_wrong_samples():
    """E9: the printed outcomes are swapped (y = +1 and UB < 1 => alpha = 0), and the
    printed bound "max mu k" (instead of -mu k) is no lower bound; both are wrong on
    samples of the exact optimum, where the corrected rule is right."""
    X, y, s = make_problem(42, n=60, d=30)
    data = LPSVMData(X, y, s)
    lam = 0.7 * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    ref = LPReference.build(data, lam, opt.w, y * opt.a)
    cut = PrimalCut.build(data, lam, ref)
    lower, upper = margin_bounds(data, cut)
    at_zero, at_box = screen_samples(data, cut)
    assert at_box.sum() > 0
    assert_safe(type("S", (), dict(features=np.zeros(30, bool), at_zero=at_zero,
                                   at_box=at_box))(), opt, s)
    # printed outcome: an upper bound of the margin below 1 "proves" alpha_i = 0, but
    # those samples have margin < 1, hence alpha_i = y_i s_i at the optimum
    printed_zero = upper < 1.0
    assert np.any(printed_zero & (opt.a > 0.5 * s))
    # printed sign: "LB = max over feasible mu of +mu k" (k > 0 here), a one-variable
    # LP solved directly; it exceeds the optimum's margin, so it is no lower bound
    assert cut.k > 0
    Z = y[:, None] * X
    theta = (ref.margins < 1.0).astype(float)
    g = -(Z.T @ (theta * s)) / len(y)
    k = ref.primal - (theta * s).sum() / len(y)
    A = np.r_[-(lam - g), -(lam + g)][:, None]
    above = 0
    for i in range(len(y)):
        res = linprog([-k], A_ub=A, b_ub=np.r_[-Z[i], Z[i]], bounds=[(0, None)],
                      method="highs")
        printed_lower = np.inf if res.status == 3 else (-res.fun if res.status == 0
                                                         else -np.inf)
        above += printed_lower > opt.margins[i] + 1e-6
    assert above > 0
