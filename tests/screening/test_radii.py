"""The radius of every rule, pinned with an inexact reference (gap > 0).

Each radius is recomputed here from the formula of ``doc/theory/safety.rst``,
``doc/theory/svm_lad.rst`` and ``doc/theory/metric_learning.rst`` (own numpy code, no call
into the rule's helpers) and compared with what the rule uses; the bounds are also checked
to contain the exact optimum (``_svm_truth``, CLARABEL for LAD), so a radius that is too
small fails twice: against the documented constant and, on these references, against
the optimum. The compiled kernels that apply radii (the gap ball, the RRPB sphere rule,
range screening) are checked against the same numpy formulas and against oracles.
"""

from __future__ import annotations

import numpy as np
import pytest
from _svm_truth import (
    augment,
    bound_violations,
    noisy_data,
    solve_svm_dual,
    svm_certificate,
    violations,
)
from sklearn.metrics.pairwise import rbf_kernel
from test_lad_rules import full_gap, laplace_data, solve_lad_dual

from sklearn_safescreen.problems.box_qp import BoxQP, BoxQPReference
from sklearn_safescreen.problems.constants import RADIUS_ATOL, RADIUS_RTOL, SCREEN_RTOL
from sklearn_safescreen.screening import triplet_bounds as tb
from sklearn_safescreen.screening.balls import gap_ball_screen
from sklearn_safescreen.screening.lad import dvi_lad
from sklearn_safescreen.screening.svm import ball_test_1, dvi, screen_svm
from sklearn_safescreen.solvers.dual_cd import solve_box_qp


# ------------------------------------------------------------------- SVM setup ---
def svm_problem(kernel, n=300, seed=3):
    X, y = noisy_data(seed, n, 4, flip=0.1)
    if kernel == "linear":
        Z = y[:, None] * augment(X, 1.0)
        return X, y, None, Z, (Z**2).sum(1), (lambda v: Z @ (Z.T @ v))
    Q = y[:, None] * (rbf_kernel(X, X, gamma=0.3) + 1.0) * y[None, :]
    return X, y, Q, None, np.diag(Q).copy(), (lambda v: Q @ v)


def inexact_svm_reference(Q, Z, matvec, C_ref, shrink, noise, seed=0):
    """A feasible, genuinely inexact dual point at ``C_ref``: the exact optimum at
    ``shrink * C_ref`` (what an early-stopped solver from zero resembles), moved by
    relative ``noise`` and clipped to the box; its full gap computed here."""
    n = (Q if Q is not None else Z).shape[0]
    a = solve_svm_dual(shrink * C_ref, Q=Q, Z=Z).alpha
    rng = np.random.RandomState(seed)
    a = np.clip(a * (1.0 + noise * rng.randn(n)), 0.0, C_ref)
    q = matvec(a)
    gap = svm_certificate(a, q, np.full(n, C_ref))[0]
    return BoxQPReference(C_ref, a, q, gap)


def documented_ball(ref, C):
    """doc/theory/svm_lad.rst: centre c w~, radius rho(||w~|| + delta) + c delta with
    c = (C + C_ref) / (2 C_ref), rho = |C - C_ref| / (2 C_ref), delta = sqrt(gap)."""
    c = (C + ref.C) / (2 * ref.C)
    rho = abs(C - ref.C) / (2 * ref.C)
    delta = np.sqrt(ref.gap)
    return c, rho * (np.sqrt(ref.alpha @ ref.margins) + delta) + c * delta


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("ratio", [0.7, 1.4])
def test_bt1_and_dvi_radius_is_the_documented_one(kernel, ratio):
    _, _, Q, Z, sq, mv = svm_problem(kernel)
    ref = inexact_svm_reference(Q, Z, mv, 1.0, 0.9, 0.05)
    assert ref.gap > 1e-3 * abs(ref.alpha.sum())  # genuinely inexact
    C = ratio * ref.C
    c, radius = documented_ball(ref, C)
    w = np.ones(sq.size)
    bt1 = ball_test_1(ref, C, sq, w)
    assert bt1.info["r1"] == pytest.approx(radius, rel=1e-12)
    np.testing.assert_allclose(bt1.lower, c * ref.margins - radius * np.sqrt(sq), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(bt1.upper, c * ref.margins + radius * np.sqrt(sq), rtol=1e-12,
                               atol=1e-12)
    # DVI is the same ball in the theta form (Ogawa et al. 2013, Appendix C)
    res = dvi(ref, C, sq, w)
    np.testing.assert_allclose(res.lower, bt1.lower, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.upper, bt1.upper, rtol=1e-10, atol=1e-10)
    # an exact reference: no inflation at all
    exact = BoxQPReference(ref.C, ref.alpha, ref.margins, 0.0)
    assert ball_test_1(exact, C, sq, w).info["r1"] == pytest.approx(
        abs(C - ref.C) / (2 * ref.C) * np.sqrt(ref.alpha @ ref.margins), rel=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("ratio", [0.8, 1.25])
@pytest.mark.parametrize("rule", ["IT", "BT1", "BT2", "DVI"])
def test_svm_bounds_contain_the_optimum_from_inexact_references(kernel, ratio, rule):
    """Containment of the exact margins at ``C`` for references with a real gap, and
    no wrong decision."""
    _, _, Q, Z, sq, mv = svm_problem(kernel)
    truth = solve_svm_dual(ratio, Q=Q, Z=Z)
    w = np.ones(sq.size)
    for shrink, noise in [(0.95, 0.0), (0.9, 0.02), (1.0, 0.05)]:
        ref = inexact_svm_reference(Q, Z, mv, 1.0, shrink, noise)
        assert ref.gap > 0
        res = screen_svm(rule, ref, ratio, sq, w, mv)
        assert bound_violations(res, truth).size == 0
        wl, wu = violations(res, truth)
        assert wl.size == 0 and wu.size == 0, (rule, shrink, noise, wl, wu)


def test_svm_delta_constant_is_safe_for_dual_references():
    """For a dual reference (w~ = Z'alpha~) strong convexity of the primal and of the dual
    in w give ||w~ - w*||^2 <= gap: the documented delta = sqrt(gap). Checked here on
    perturbed references, with the distance computed from the exact optimum (the
    tightness, which forbids a smaller constant, is in test_gap_radius.py)."""
    _, _, _, Z, _, mv = svm_problem("linear")
    truth = solve_svm_dual(1.0, Z=Z)
    w_star = Z.T @ truth.alpha
    for seed in range(5):
        ref = inexact_svm_reference(None, Z, mv, 1.0, 0.97, 0.1, seed=seed)
        dist = np.linalg.norm(Z.T @ ref.alpha - w_star)
        assert dist**2 <= ref.gap * (1 + 1e-9) + 1e-12
        assert dist > 0.05 * np.sqrt(ref.gap)  # the references are far from exact


# ------------------------------------------------------------------------- LAD ---
@pytest.mark.parametrize("ratio", [0.7, 1.4])
def test_lad_radius_is_the_documented_one_and_contains_the_optimum(ratio):
    X, y = laplace_data(4, 120, 3)
    Xa = augment(X, 1.0)
    G = Xa @ Xa.T
    C_ref, n = 0.05, y.size
    h = np.full(n, C_ref)
    rng = np.random.RandomState(0)
    exact_ref = solve_lad_dual(G, y, h)
    a = np.clip(exact_ref.alpha * 0.9 + 0.1 * C_ref * rng.uniform(-1, 1, n), -h, h)
    q = G @ a
    gap = full_gap(G, y, h, a)
    assert gap > 1e-3 * np.abs(y).sum() * C_ref
    ref = BoxQPReference(C_ref, a, q, gap)
    C = ratio * C_ref
    sq = np.diag(G).copy()
    res = dvi_lad(ref, C, sq, y, np.ones(n))
    c, radius = documented_ball(ref, C)
    assert res.info["radius"] == pytest.approx(radius, rel=1e-12)
    np.testing.assert_allclose(res.lower, c * q - radius * np.sqrt(sq), rtol=1e-12, atol=1e-12)
    truth = solve_lad_dual(G, y, np.full(n, C))
    slack = 1e-9 * (1 + np.abs(truth.pred))
    assert np.all(res.lower <= truth.pred + slack) and np.all(res.upper >= truth.pred - slack)
    assert not np.any(res.at_lower & ~(truth.pred > y)) and not np.any(
        res.at_upper & ~(truth.pred < y))


# --------------------------------------------------------------- the gap ball ---
def test_gap_ball_screen_is_the_documented_ball():
    rng = np.random.RandomState(0)
    n = 500
    margins, sq = rng.randn(n) * 2 + 1, rng.uniform(0.5, 2.0, n)
    targets = np.ones(n)
    for gap in (0.0, 0.01, 0.3):
        lo_m, hi_m = gap_ball_screen(margins, targets, sq, gap)
        r = np.sqrt(gap) * np.sqrt(sq)
        lower, upper = margins - r, margins + r
        slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + 1.0 + 1.0)
        np.testing.assert_array_equal(lo_m, lower > 1.0 + slack)
        np.testing.assert_array_equal(hi_m, upper < 1.0 - slack)
    # a sample whose ball just reaches the threshold is not screened; just past, it is
    gap = 0.25  # radius 0.5
    m = np.array([1.5 - 1e-6, 1.5 + 1e-6, 0.5 + 1e-6, 0.5 - 1e-6])
    lo_m, hi_m = gap_ball_screen(m, np.ones(4), np.ones(4), gap)
    np.testing.assert_array_equal(lo_m, [False, True, False, False])
    np.testing.assert_array_equal(hi_m, [False, False, False, True])


@pytest.mark.parametrize(("mode", "solver"), [("linear", "plain"), ("kernel", "plain"),
                                             ("kernel", "greedy")])
@pytest.mark.parametrize("n", [300, 3000])
def test_dynamic_gap_ball_decisions_against_the_optimum(mode, solver, n):
    """Every decision the gap ball takes during a solve from zero (early gaps are
    large) agrees with the exact optimum, the exact margins lie in the ball of the
    documented radius sqrt(gap), and the ball did decide something. The solver's
    calls carry only the active samples: they are identified by their (distinct)
    squared norms. Kernel mode runs the linear kernel through the kernel solver."""
    from sklearn_safescreen.problems.kernels import KernelMatrix

    if mode == "kernel":
        n = min(n, 800)
    X, y = noisy_data(5, n, 4, flip=0.1)
    Xa = np.ascontiguousarray(augment(X, 1.0))
    Z = y[:, None] * Xa
    sq = (Xa**2).sum(1)
    index = {v: i for i, v in enumerate(sq.tolist())}
    assert len(index) == n
    C = 1.0
    if mode == "linear":
        problem = BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=sq,
                        X=Xa)
    else:
        km = KernelMatrix(X, "linear", {}, 1.0, cache_size=50)
        problem = BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C),
                        sqnorm=km.diag(), kernel=km)
        index = {v: i for i, v in enumerate(km.diag().tolist())}
    truth = solve_svm_dual(C, Z=Z)
    calls = []

    def spy(margins, targets, sqnorm, gap):
        lo_m, hi_m = gap_ball_screen(margins, targets, sqnorm, gap)
        idx = np.array([index[v] for v in np.asarray(sqnorm).tolist()], dtype=int)
        calls.append((idx, np.array(margins), gap, idx[lo_m], idx[hi_m]))
        return lo_m, hi_m

    solve = solve_box_qp
    if solver == "greedy":  # the two-variable kernel solver's own gap checks
        from sklearn_safescreen.solvers.greedy_cd import solve_kernel_greedy as solve
    res = solve(problem, np.zeros(n), np.zeros(n, dtype=bool), tol=1e-8,
                max_iter=10000, random_state=np.random.RandomState(0), dynamic_screen=spy)
    assert res.converged and calls
    n_decided, worst = 0, 0.0
    for idx, q_act, gap, to_lo, to_hi in calls:
        bad_lo = to_lo[~truth.true_R()[to_lo]]
        bad_hi = to_hi[~truth.true_L()[to_hi]]
        assert bad_lo.size == 0 and bad_hi.size == 0, (gap, bad_lo, bad_hi)
        # the exact margins lie in the ball of the documented radius
        dist = np.abs(truth.margins[idx] - q_act) / np.sqrt(max(gap, 1e-300) * sq[idx])
        assert np.all(dist <= 1 + 1e-6)
        worst = max(worst, float(dist.max()))
        n_decided += to_lo.size + to_hi.size
    assert n_decided > 0
    if mode == "linear" and n == 3000:
        # tightness: the early coordinate-descent iterates of this solve are far enough
        # from the optimum that a ball of 30% of the radius would miss it (elsewhere the
        # solver reaches the optimum too fast for that; the exact pin above covers it)
        assert worst > 0.3


# -------------------------------------------------------------------- triplets ---
def _triplet_data(seed=0, n_t=400, m=2.0):
    """Values z_t = <H_t, M0> and norms ||H_t|| consistent with ||M0|| = m
    (|z_t| <= m ||H_t||), many near the thresholds."""
    rng = np.random.RandomState(seed)
    hn = rng.uniform(0.3, 1.5, n_t)
    z0 = np.clip(rng.randn(n_t) * 0.8 + 1.0, -0.99 * m * hn, 0.99 * m * hn)
    return z0, hn


def test_rrpb_radius_and_eps_are_the_documented_ones():
    rng = np.random.RandomState(1)
    A = rng.randn(4, 4)
    M0 = A @ A.T
    lam0, gap0 = 2.0, 0.07
    eps = tb.rrpb_eps(gap0, lam0)
    assert eps == pytest.approx(np.sqrt(2 * gap0 / lam0), rel=1e-14)
    for lam in (1.2, 3.5):
        ball = tb.rrpb(M0, lam0, lam, eps)
        d = abs(lam0 - lam)
        r = d / (2 * lam) * np.linalg.norm(M0) + (d + lam0 + lam) / (2 * lam) * eps
        c = (lam0 + lam) / (2 * lam)
        np.testing.assert_allclose(ball.center, c * M0, rtol=1e-14)
        assert ball.scale == pytest.approx(c, rel=1e-14)
        inflated = r * (1 + RADIUS_RTOL) + RADIUS_ATOL * max(1, np.linalg.norm(c * M0))
        assert ball.radius == pytest.approx(inflated, rel=1e-12)
        assert tb.dgb(M0, gap0, lam).radius == pytest.approx(
            np.sqrt(2 * gap0 / lam) * (1 + RADIUS_RTOL)
            + RADIUS_ATOL * max(1, np.linalg.norm(M0)), rel=1e-12)


def _sphere(z0, hn, scale, radius, gamma):
    """The sphere rule, own numpy: codes 2 (R), 1 (L), 0."""
    lower, upper = scale * z0 - radius * hn, scale * z0 + radius * hn
    slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + 1.0)
    return np.where(lower > 1 + slack, 2, np.where(upper < 1 - gamma - slack, 1, 0))


@pytest.mark.parametrize("gamma", [0.0, 0.05])
def test_scaled_sphere_screen_matches_the_sphere_rule(gamma):
    z0, hn = _triplet_data()
    for scale, radius in [(1.0, 0.0), (1.3, 0.2), (0.8, 0.05)]:
        status = np.zeros(z0.size, dtype=np.int8)
        status[:10] = 1  # already decided (either way): left alone, not counted
        status[10:20:2] = 2
        decided = status != 0
        before = status.copy()
        status, n_R, n_L = tb.scaled_sphere_screen(z0, hn, scale, radius, gamma, before)
        assert status is not before and np.array_equal(before != 0, decided)
        want = _sphere(z0, hn, scale, radius, gamma)
        fresh = want[~decided]
        want[:10] = 1
        want[10:20:2] = 2
        np.testing.assert_array_equal(status, want)
        assert n_R == int((fresh == 2).sum()) and n_L == int((fresh == 1).sum())
        assert n_R > 0 and n_L > 0
    # threshold: a triplet whose lower bound equals 1 exactly is not screened
    status, _, _ = tb.scaled_sphere_screen(np.array([1.5, 1.5 + 1e-6]), np.ones(2), 1.0, 0.5,
                                           gamma, np.zeros(2, dtype=np.int8))
    np.testing.assert_array_equal(status, [0, 2])


def test_range_screen_applies_stored_ranges():
    rng = np.random.RandomState(2)
    n = 300
    label = rng.randint(0, 3, n).astype(np.int8)
    lo = rng.uniform(0, 2, n)
    hi = lo + rng.uniform(0, 2, n)
    for lam in (0.5, 1.5, 2.5):
        status = np.zeros(n, dtype=np.int8)
        status[:5] = 2
        status, n_R, n_L = tb.range_screen(label, lo, hi, lam, status)
        inside = (lo < lam) & (lam < hi)
        code = np.where(inside, label, 0)
        want = np.maximum(code, 0)
        want[:5] = np.maximum(want[:5], 2)
        np.testing.assert_array_equal(status, want)
        assert (n_R, n_L) == (int((code == 2).sum()), int((code == 1).sum()))
    # open interval: the ends are not inside
    status = np.zeros(1, dtype=np.int8)
    assert tb.range_screen(np.array([2], np.int8), np.array([1.0]), np.array([2.0]), 1.0,
                           status)[1:] == (0, 0)


@pytest.mark.parametrize("gamma", [0.0, 0.05])
def test_rrpb_ranges_screen_only_where_the_rrpb_ball_does(gamma):
    """Oracle of the ranges: at every lambda inside a triplet's range, the RRPB sphere
    rule computed here from the documented radius screens it with the same label; the
    ranges contain lam0 and are not empty for most triplets the ball screens at lam0."""
    z0, hn = _triplet_data(3)
    m, lam0 = 2.0, 1.0
    for eps in (0.0, 0.02, 0.1):
        label, lo, hi = tb.rrpb_ranges(z0, hn, m, eps, lam0, gamma)
        assert np.all((label == 0) | ((lo < lam0) & (lam0 < hi)))
        assert (label > 0).sum() > 20
        for lam in np.linspace(0.2, 3.0, 57):
            inside = (label > 0) & (lo < lam) & (lam < hi)
            d = abs(lam0 - lam)
            r = d / (2 * lam) * m + (d + lam0 + lam) / (2 * lam) * eps
            want = _sphere(z0, hn, (lam0 + lam) / (2 * lam), r, gamma)
            assert np.all(want[inside] == label[inside]), (eps, lam)
        # at lam0 the range screens what the ball of radius eps screens
        at0 = _sphere(z0, hn, 1.0, eps * (1 + 1e-6), gamma)
        assert np.all(label[at0 > 0] == at0[at0 > 0])


def test_merge_rrpb_ranges_keeps_covering_ranges_and_recomputes_the_others():
    z_old, hn = _triplet_data(4)
    m, gamma = 2.0, 0.05
    label, lo, hi = tb.rrpb_ranges(z_old, hn, m, 0.01, 1.0, gamma)
    old = label.copy(), lo.copy(), hi.copy()
    z_new = z_old + 0.3 * np.random.RandomState(5).randn(z_old.size)
    lam1 = 0.8
    label, lo, hi = tb.merge_rrpb_ranges(z_new, hn, m, 0.02, lam1, gamma, label, lo, hi)
    keep = (old[0] > 0) & (old[1] < lam1) & (lam1 < old[2])
    assert keep.any() and (~keep).any()
    np.testing.assert_array_equal(label[keep], old[0][keep])
    np.testing.assert_array_equal(lo[keep], old[1][keep])
    fresh = tb.rrpb_ranges(z_new, hn, m, 0.02, lam1, gamma)
    for got, want in zip((label, lo, hi), fresh, strict=True):
        np.testing.assert_array_equal(got[~keep], want[~keep])


@pytest.mark.parametrize("merge", [False, True])
def test_rrpb_ranges_lie_within_the_sphere_rule_at_every_value(merge):
    """Every value inside a triplet's range (fresh or recomputed by a merge) is one where
    the RRPB sphere rule of an inexact reference (eps > 0) screens that triplet: the
    ball's lower bound of its value is above 1 (R) or its upper bound below 1 - gamma
    (L). Ranges computed with a smaller eps than the reference's would reach values
    where the rule does not hold."""
    z, hn = _triplet_data(7)
    m, gamma, lam0, eps = 2.0, 0.05, 1.0, 0.05
    if merge:
        empty = np.zeros(z.size, dtype=np.int8)
        label, lo, hi = tb.merge_rrpb_ranges(z, hn, m, eps, lam0, gamma, empty,
                                             np.zeros(z.size), np.zeros(z.size))
    else:
        label, lo, hi = tb.rrpb_ranges(z, hn, m, eps, lam0, gamma)
    ranged = np.flatnonzero(label > 0)
    assert (label == 2).any() and (label == 1).any()
    for t in ranged:
        # the ends of the open range (nudged inside) and points between them
        a, b = lo[t] * (1 + 1e-9) if lo[t] > 0 else lam0 * 1e-3, min(hi[t], 1e3 * lam0)
        for lam in np.geomspace(a, b * (1 - 1e-9), 7):
            c = (lam0 + lam) / (2.0 * lam)
            d = abs(lam0 - lam)
            r = d / (2.0 * lam) * m + (d + lam0 + lam) / (2.0 * lam) * eps
            if label[t] == 2:
                assert c * z[t] - r * hn[t] > 1.0 - 1e-12, (t, lam)
            else:
                assert c * z[t] + r * hn[t] < 1.0 - gamma + 1e-12, (t, lam)
