"""Bounds over balls (Ogawa et al. 2013, Lemma 1), over the intersection of two balls
(Theorem 8) and the gap ball (doc/theory/safety.rst).

``two_ball_bounds`` is checked against a brute-force SLSQP minimisation / maximisation
of ``z'w`` over the intersection, on random instances where all three cases of Ogawa et
al. 2013, Theorem 8 occur, and on the degenerate situations listed in
doc/theory/svm_lad.rst.
"""

import numpy as np
import pytest
from _svm_truth import few_cd_epochs, noisy_data, signed_gram, solve_svm_dual
from scipy.optimize import minimize

from sklearn_safescreen.problems.box_qp import BoxQPReference
from sklearn_safescreen.screening.balls import (
    ball_bounds,
    decide,
    gap_ball_screen,
    reference_ball,
    reference_ball_screen,
    two_ball_bounds,
)


# ------------------------------------------------------------------ helpers ---
def _closed_form(Z, m1, r1, m2, r2):
    """``two_ball_bounds`` fed with projections computed from explicit centres."""
    phi = m1 - m2
    return two_ball_bounds(Z @ m1, r1, Z @ m2, r2, Z @ phi, float(np.linalg.norm(phi)),
                           np.linalg.norm(Z, axis=1))


def _case_of_lower(z, m1, r1, m2, r2):
    """Which branch of Ogawa et al. 2013, eq. (20) gives the lower bound."""
    phi = m1 - m2
    pn = np.linalg.norm(phi)
    zeta = (pn**2 + r2**2 - r1**2) / (2 * pn)
    cos = z @ phi / (np.linalg.norm(z) * pn)
    t_lo, t_hi = (zeta - pn) / r1, zeta / r2
    if -cos < t_lo:
        return 1
    if t_hi < -cos:
        return 2
    return 3


def _brute(z, m1, r1, m2, r2, sign):
    """``min sign * z'w`` over both balls by SLSQP (a convex problem: local = global).

    Returns ``(value of z'w, max constraint violation)``.
    """
    cons = [
        {"type": "ineq", "fun": lambda w: r1**2 - (w - m1) @ (w - m1),
         "jac": lambda w: -2.0 * (w - m1)},
        {"type": "ineq", "fun": lambda w: r2**2 - (w - m2) @ (w - m2),
         "jac": lambda w: -2.0 * (w - m2)},
    ]
    # a start inside the intersection: the better of the two centres and the point of
    # the segment m2 -> m1 closest to the middle of the lens
    phi = m1 - m2
    pn = np.linalg.norm(phi)
    starts = [m1, m2]
    if pn > 0:
        t = np.clip((pn**2 + r2**2 - r1**2) / (2 * pn**2), 0, 1)
        starts.append(m2 + t * phi)

    def infeas(w):
        return max(np.linalg.norm(w - m1) - r1, np.linalg.norm(w - m2) - r2)

    x0 = min(starts, key=infeas)
    res = minimize(lambda w: sign * (z @ w), x0, jac=lambda w: sign * z, method="SLSQP",
                   constraints=cons, options={"ftol": 1e-15, "maxiter": 1000})
    w = res.x
    return float(z @ w), infeas(w)


def _random_instance(rng):
    """Random two-ball instance: m1, m2 in R^(2..5), r1 in [0.05, 3],
    r2 >= max(||phi|| - r1, 0) + U(0.01, 3) (so the balls always intersect)."""
    dim = rng.randint(2, 6)
    m1 = rng.randn(dim) * rng.uniform(0.2, 3)
    m2 = m1 + rng.randn(dim) * rng.uniform(0.2, 3)
    r1 = rng.uniform(0.05, 3)
    r2 = max(np.linalg.norm(m1 - m2) - r1, 0.0) + rng.uniform(0.01, 3)
    return m1, r1, m2, r2


# -------------------------------------------------------------------- tests ---
def test_r5_intersection_closed_form_matches_brute_force():
    """Eqs. (20)/(24) of Ogawa et al. 2013, Theorem 8 equal the brute-force min/max of
    z'w over the intersection of two balls; every one of the three cases occurs."""
    rng = np.random.RandomState(20240605)
    cases = {1: 0, 2: 0, 3: 0}
    errors = {1: 0.0, 2: 0.0, 3: 0.0}
    for _ in range(300):
        m1, r1, m2, r2 = _random_instance(rng)
        Z = rng.randn(3, m1.size) * rng.uniform(0.1, 3)
        lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
        assert not disjoint
        for k, z in enumerate(Z):
            lo_bf, v_lo = _brute(z, m1, r1, m2, r2, +1.0)
            up_bf, v_up = _brute(z, m1, r1, m2, r2, -1.0)
            assert v_lo <= 1e-6 and v_up <= 1e-6, "brute force left the intersection"
            scale = 1.0 + abs(z @ m1) + np.linalg.norm(z) * (r1 + r2)
            case = _case_of_lower(z, m1, r1, m2, r2)
            cases[case] += 1
            err = max(abs(lower[k] - lo_bf), abs(upper[k] - up_bf)) / scale
            errors[case] = max(errors[case], err)
    assert min(cases.values()) >= 50, f"not all cases of Theorem 8 exercised: {cases}"
    assert max(errors.values()) <= 1e-7, f"max relative error per case: {errors}"


def test_r5_intersection_bounds_never_weaker_than_either_ball():
    """The IT bounds are at least as tight as both ball bounds (the max/min form of
    doc/theory/svm_lad.rst), and lower <= upper on intersecting balls."""
    rng = np.random.RandomState(7)
    for _ in range(500):
        m1, r1, m2, r2 = _random_instance(rng)
        Z = rng.randn(20, m1.size)
        zn = np.linalg.norm(Z, axis=1)
        lower, upper, _ = _closed_form(Z, m1, r1, m2, r2)
        l1, u1 = ball_bounds(Z @ m1, r1, zn)
        l2, u2 = ball_bounds(Z @ m2, r2, zn)
        assert np.all(lower >= np.maximum(l1, l2))
        assert np.all(upper <= np.minimum(u1, u2))
        assert np.all(lower <= upper + 1e-12 * (1 + np.abs(upper)))


def test_r5_nested_balls():
    """Degenerate case: ball 1 inside ball 2 gives BT1 exactly; ball 2 inside ball 1 gives
    BT2 exactly."""
    rng = np.random.RandomState(3)
    Z = rng.randn(50, 4)
    zn = np.linalg.norm(Z, axis=1)
    m1 = np.array([0.3, -0.2, 0.1, 0.0])
    m2 = np.array([0.0, 0.1, 0.0, 0.2])
    pn = np.linalg.norm(m1 - m2)
    # ball 1 strictly inside ball 2
    r1, r2 = 0.5, pn + 0.5 + 0.3
    lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
    l1, u1 = ball_bounds(Z @ m1, r1, zn)
    assert not disjoint
    np.testing.assert_allclose(lower, l1, rtol=0, atol=1e-14)
    np.testing.assert_allclose(upper, u1, rtol=0, atol=1e-14)
    # ball 2 strictly inside ball 1
    r2, r1 = 0.4, pn + 0.4 + 0.2
    lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
    l2, u2 = ball_bounds(Z @ m2, r2, zn)
    assert not disjoint
    np.testing.assert_allclose(lower, l2, rtol=0, atol=1e-14)
    np.testing.assert_allclose(upper, u2, rtol=0, atol=1e-14)


def test_r5_point_ball_r1_zero():
    """Degenerate case: r1 = 0 (C = C_ref) with the point m1 inside ball 2: the region is
    the single point m1, so lower = upper = z'm1 (no division by r1)."""
    rng = np.random.RandomState(4)
    Z = rng.randn(30, 3)
    m1 = np.array([0.2, 0.1, -0.3])
    m2 = m1 + np.array([0.5, 0.0, 0.0])
    with np.errstate(all="raise"):
        lower, upper, disjoint = _closed_form(Z, m1, 0.0, m2, 1.0)
    assert not disjoint
    np.testing.assert_allclose(lower, Z @ m1, rtol=0, atol=1e-14)
    np.testing.assert_allclose(upper, Z @ m1, rtol=0, atol=1e-14)


@pytest.mark.parametrize("r1, r2", [(0.7, 1.3), (1.3, 0.7), (1.0, 1.0)])
@pytest.mark.parametrize("offset", [0.0, 1e-15, 1e-9, 1e-6])
def test_r5_concentric_balls(r1, r2, offset):
    """Degenerate case: concentric balls (||phi|| -> 0): the intersection is the smaller
    ball (for a tiny offset it lies between that ball shrunk by the offset and the
    ball)."""
    rng = np.random.RandomState(5)
    Z = rng.randn(30, 3)
    zn = np.linalg.norm(Z, axis=1)
    m1 = np.array([0.4, -1.0, 0.25])
    m2 = m1 + offset * np.array([1.0, 0.0, 0.0])
    with np.errstate(all="raise"):
        lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
    ls, us = ball_bounds(Z @ (m1 if r1 <= r2 else m2), min(r1, r2), zn)  # smaller ball
    assert not disjoint
    tol = 2 * offset * zn + 1e-12
    assert np.all(np.abs(lower - ls) <= tol)
    assert np.all(np.abs(upper - us) <= tol)
    assert np.all(lower >= ls - 1e-12) and np.all(upper <= us + 1e-12)


def test_r5_zero_norm_sample():
    """Degenerate case: ||z|| = 0 gives lower = upper = 0 without dividing by ||z||."""
    m1, r1 = np.array([0.5, 0.5]), 0.8
    m2, r2 = np.array([0.0, 0.9]), 0.7
    Z = np.array([[0.0, 0.0], [1.0, 0.0]])
    with np.errstate(all="raise"):
        lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
    assert not disjoint
    assert lower[0] == 0.0 and upper[0] == 0.0
    assert np.isfinite(lower[1]) and np.isfinite(upper[1])


def test_r5_tangent_balls_give_the_contact_point():
    """Externally tangent balls (||phi|| = r1 + r2) meet in one point p, so both bounds
    collapse to z'p."""
    rng = np.random.RandomState(6)
    Z = rng.randn(40, 3)
    m2 = np.array([0.0, 0.0, 0.0])
    m1 = np.array([2.0, 0.0, 0.0])
    r1, r2 = 1.25, 0.75
    p = np.array([0.75, 0.0, 0.0])
    lower, upper, disjoint = _closed_form(Z, m1, r1, m2, r2)
    assert not disjoint
    np.testing.assert_allclose(lower, Z @ p, rtol=0, atol=1e-7)
    np.testing.assert_allclose(upper, Z @ p, rtol=0, atol=1e-7)


def test_disjoint_balls_are_flagged():
    """Degenerate case: ||phi|| > r1 + r2 (impossible with an exact reference) is
    reported as disjoint; overlapping balls are not."""
    Z = np.eye(2)
    m2 = np.zeros(2)
    _, _, disjoint = _closed_form(Z, np.array([3.0, 0.0]), 1.0, m2, 1.5)
    assert disjoint
    _, _, disjoint = _closed_form(Z, np.array([2.4, 0.0]), 1.0, m2, 1.5)
    assert not disjoint
    # also with a point ball lying outside the other ball
    _, _, disjoint = _closed_form(Z, np.array([3.0, 0.0]), 0.0, m2, 1.5)
    assert disjoint


def test_gap_ball_screen_tiny_example():
    """The gap ball (doc/theory/safety.rst) has radius sqrt(gap) around the current
    margins; decisions are strict (a bound equal to the target does not screen)."""
    margins = np.array([2.0, 0.5, 1.0, 1.05, 0.95, 1.2])
    sqnorm = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 4.0])
    gap = 0.05**2  # radius 0.05
    at_lower, at_upper = gap_ball_screen(margins, np.ones(6), sqnorm, gap)
    # bounds: [1.95,2.05] [0.45,0.55] [0.95,1.05] [1.0,1.1] [0.9,1.0] [1.1,1.3]
    np.testing.assert_array_equal(at_lower, [True, False, False, False, False, True])
    np.testing.assert_array_equal(at_upper, [False, True, False, False, False, False])
    # a larger ball (radius 0.3): only the far samples survive
    at_lower, at_upper = gap_ball_screen(margins, np.ones(6), sqnorm, 0.5 * 0.3**2)
    np.testing.assert_array_equal(at_lower, [True, False, False, False, False, False])
    np.testing.assert_array_equal(at_upper, [False, True, False, False, False, False])
    # a zero (or round-off negative) gap: the margins themselves decide
    at_lower, at_upper = gap_ball_screen(margins, np.ones(6), sqnorm, -1e-18)
    np.testing.assert_array_equal(at_lower, margins > 1)
    np.testing.assert_array_equal(at_upper, margins < 1)
    # per-sample targets (the LAD use)
    at_lower, at_upper = gap_ball_screen(np.array([0.0, 0.0]), np.array([-1.0, 1.0]),
                                         np.ones(2), 0.5 * 0.5**2)
    np.testing.assert_array_equal(at_lower, [True, False])
    np.testing.assert_array_equal(at_upper, [False, True])


@pytest.mark.parametrize("epochs", [3, 30, 100])
def test_gap_ball_screen_is_safe_on_an_svm(epochs):
    """Gap ball (doc/theory/safety.rst): around an inexact dual point at C, the gap ball
    contains w*; every sample it screens is on the screened side at the exact optimum."""
    X, y = noisy_data(11, 200, 4)
    Q = signed_gram(X, y, "rbf1", 1.0)
    C = 2.0
    truth = solve_svm_dual(C, Q=Q)
    approx = few_cd_epochs(C, Q, epochs, seed=epochs)
    at_lower, at_upper = gap_ball_screen(approx.margins, np.ones(len(y)), np.diag(Q),
                                         approx.gap)
    assert not np.any(at_lower & ~truth.true_R())
    assert not np.any(at_upper & ~truth.true_L())
    if epochs >= 30:
        assert at_lower.sum() + at_upper.sum() > 0  # the test is not vacuous


@pytest.mark.parametrize("seed", range(3))
def test_compiled_gap_ball_and_gap_terms_equal_the_numpy_formulas(seed):
    """``gap_ball_screen`` (compiled, fused) decides exactly as ``decide(ball_bounds)``,
    including margins sitting on the target, and ``BoxQP.gap_terms`` equals
    ``max(-lo g, -hi g) + alpha g`` on all rows and on a subset."""
    from sklearn_safescreen.problems.box_qp import BoxQP
    from sklearn_safescreen.screening.balls import ball_bounds, decide, gap_ball_screen

    rng = np.random.RandomState(seed)
    n = 500
    targets = rng.randn(n)
    margins = targets + rng.randn(n) * rng.choice([0.0, 1e-12, 0.1, 3.0], n)
    sqnorm = rng.uniform(0.0, 4.0, n)
    for gap in [0.0, 1e-10, 0.01, 1.0]:
        expected = decide(*ball_bounds(margins, np.sqrt(gap), np.sqrt(sqnorm)), targets)
        got = gap_ball_screen(margins, targets, sqnorm, gap)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
    lo, hi = -rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    alpha = np.clip(rng.randn(n), lo, hi)
    problem = BoxQP(sign=np.ones(n), p=targets, lo=lo, hi=hi, sqnorm=sqnorm,
                    X=np.zeros((n, 1)))
    g = margins - targets
    np.testing.assert_array_equal(problem.gap_terms(alpha, margins),
                                  np.maximum(-lo * g, -hi * g) + alpha * g)
    rows = np.sort(rng.choice(n, 50, replace=False))
    np.testing.assert_array_equal(problem.gap_terms(alpha, margins[rows], rows),
                                  (np.maximum(-lo * g, -hi * g) + alpha * g)[rows])


@pytest.mark.parametrize("scalar_error", [False, True])
@pytest.mark.parametrize("C", [0.3, 1.0, 4.0])
def test_reference_ball_screen_is_the_numpy_composition_bit_for_bit(C, scalar_error):
    """The compiled pass of BT1 / LAD's DVI (``reference_ball_screen``) rounds every
    operation as :func:`reference_ball`, :func:`ball_bounds` and :func:`decide` do, so
    its bounds and decisions are theirs exactly (the error terms assume that rounding),
    including samples on a threshold and inactive ones."""
    rng = np.random.RandomState(int(10 * C) + scalar_error)
    n = 500
    margins = rng.randn(n) * 3.0
    alpha = rng.uniform(-1.0, 1.0, n)
    error = 1e-12 if scalar_error else rng.uniform(0.0, 1e-10, n)
    ref = BoxQPReference(C=1.0, alpha=alpha, margins=margins, gap=1e-6,
                         margin_error=error, gap_error=1e-14)
    znorm = rng.uniform(0.1, 2.0, n)
    targets = rng.randn(n)
    targets[:20] = margins[:20] * (C + 1.0) / 2.0  # centres on the threshold
    active = rng.rand(n) > 0.1
    res = reference_ball_screen(ref, C, znorm, targets, active)
    proj, radius, _, err = reference_ball(ref, C)
    lower, upper = ball_bounds(proj, radius, znorm, err)
    at_lower, at_upper = decide(lower, upper, targets, active)
    np.testing.assert_array_equal(res.lower, lower)
    np.testing.assert_array_equal(res.upper, upper)
    np.testing.assert_array_equal(res.at_lower, at_lower)
    np.testing.assert_array_equal(res.at_upper, at_upper)
    assert res.info["radius"] == radius
    assert at_lower.any() and at_upper.any() and not (at_lower | at_upper).all()
    # one threshold for every sample (the SVM's 1)
    one = reference_ball_screen(ref, C, znorm, 1.0, active)
    np.testing.assert_array_equal(one.at_lower, decide(lower, upper, 1.0, active)[0])
