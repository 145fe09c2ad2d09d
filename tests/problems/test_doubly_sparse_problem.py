"""The doubly sparse problem (``problems/doubly_sparse.py``) against its theory
(``doc/theory/doubly_sparse.rst``, Shibagaki et al. 2016), with own formulas:

* Fenchel-Young for both smoothed losses on every piece and at the kinks, and for the
  elastic net: the dual terms are the conjugates the dual needs, ``alpha(t)`` is
  ``-c h'``;
* weak duality ``P(w) >= D(alpha)`` for random ``w`` and random feasible ``alpha`` with
  sample weights, and the package's gap equal to the own ``P - D``;
* ``lambda_max`` is the exact threshold of ``w* = 0`` (also with smoothing > 1, where
  ``alpha(0)`` is not at the box), through the problem and through the estimators;
* the gap's rounding-error bound covers the difference between the float gap and the
  same pair's gap in exact rational arithmetic;
* the reduced problem left by correct decisions has the restricted optimum as its own
  optimum (zero reduced gap there, and an independent cvxpy solve of it), its gap at
  any embedded pair is at most the full gap, and shrinking twice equals building once.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from _doubly_sparse_models import (
    HINGE,
    SVR,
    alpha_of,
    cvx_solve,
    dense,
    dual,
    make_data,
    primal,
    random_feasible_alpha,
    reference,
)
from _doubly_sparse_models import smoothed_hinge as own_hinge

from sklearn_safescreen import SafeDoublySparseSVC, SafeDoublySparseSVR
from sklearn_safescreen.problems.doubly_sparse import (
    EPS,
    DoublySparseData,
    ReducedProblem,
    dual_point,
    dual_terms,
    elastic_net,
    elastic_net_conjugate,
    full_gap,
    loss_terms,
    smoothed_hinge,
)
from sklearn_safescreen.screening.doubly_sparse import radii

LOSSES = [HINGE, SVR]


# ------------------------------------------------------------ Fenchel-Young ---
def t_grid(loss, y, gamma, epsilon):
    """Margins on every piece of the loss of target ``y``, with the kinks exactly."""
    if loss == HINGE:  # margin y t: kinks at 1 and 1 - gamma
        m = np.concatenate([np.linspace(-3, 3, 61), [1.0, 1.0 - gamma, 1.0 - gamma / 2,
                                                     1.0 + 1e-12, 1.0 - gamma - 1e-12]])
        return y * m
    k = np.array([-(epsilon + gamma), -epsilon, 0.0, epsilon, epsilon + gamma,
                  epsilon + gamma / 2, -(epsilon + gamma / 2)])
    return y + np.concatenate([np.linspace(-3, 3, 61), k])


@pytest.mark.parametrize("loss, y", [(HINGE, 1.0), (HINGE, -1.0), (SVR, 1.0), (SVR, -1.0),
                                     (SVR, 0.7)])
@pytest.mark.parametrize("gamma", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("c", [0.4, 1.0, 3.0])
def test_fenchel_young_of_the_losses(loss, y, gamma, c):
    epsilon = 0.2 if loss == SVR else 0.0
    t = t_grid(loss, y, gamma, epsilon)
    ys, cs = np.full(t.size, y), np.full(t.size, c)
    a = dual_point(t, ys, cs, loss, gamma, epsilon)
    np.testing.assert_array_equal(a, alpha_of(t, ys, cs, loss, gamma, epsilon))
    lt = loss_terms(t, ys, cs, loss, gamma, epsilon)
    z = 1 - ys * t if loss == HINGE else np.abs(t - ys) - epsilon
    np.testing.assert_allclose(lt, cs * own_hinge(z, gamma), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(smoothed_hinge(z, gamma), own_hinge(z, gamma), rtol=1e-14,
                               atol=1e-15)
    # equality: l(t) + l*(-alpha(t)) = -alpha(t) t, with l*(-a) = -dual_terms(a)
    dt = dual_terms(a, ys, cs, gamma, epsilon)
    np.testing.assert_allclose(lt - dt, -a * t, rtol=1e-12, atol=1e-13)
    # the pieces are all visited: alpha at 0, inside and at the box end
    assert (a == 0).any() and (np.abs(a) == c).any() and ((a != 0) & (np.abs(a) < c)).any()
    # inequality for every feasible alpha (the sup over t is attained at alpha(t))
    grid = np.linspace(0, 1, 11) * c
    alphas = y * grid if loss == HINGE else np.concatenate([grid, -grid])
    for ai in alphas:
        dti = dual_terms(np.full(t.size, ai), ys, cs, gamma, epsilon)
        assert np.all(lt - dti >= -ai * t - 1e-12)
    # alpha(t) = -c l'(t) by central differences (the loss is C^1)
    h = 1e-6
    slope = (loss_terms(t + h, ys, cs, loss, gamma, epsilon)
             - loss_terms(t - h, ys, cs, loss, gamma, epsilon)) / (2 * h)
    np.testing.assert_allclose(-slope, a, atol=1e-6 * c / min(gamma, 1) + 1e-9)


@pytest.mark.parametrize("beta", [0.2, 1.0, 5.0])
def test_fenchel_young_of_the_elastic_net(beta):
    rng = np.random.RandomState(0)
    lam, n = 0.07, 13
    s = rng.randn(200) * lam * n * 2
    w = np.sign(s) * np.maximum(np.abs(s) / (lam * n) - 1, 0) / beta  # grad psi*
    assert (w == 0).any() and (w != 0).any()
    lhs = lam * elastic_net(w, beta) + elastic_net_conjugate(s, lam, beta, n)
    assert lhs == pytest.approx(s @ w / n, rel=1e-12)
    for _ in range(20):
        v = w + rng.randn(w.size) * rng.choice([1e-3, 1.0])
        assert lam * elastic_net(v, beta) + elastic_net_conjugate(s, lam, beta, n) \
            >= s @ v / n - 1e-12


# ------------------------------------------------------------- weak duality ---
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_weak_duality_random_pairs(loss, sparse):
    rng = np.random.RandomState(1)
    for k in range(40):
        data = make_data(k, n=25, d=12, loss=loss, sparse=sparse,
                         gamma=[0.2, 0.5, 2.0][k % 3], epsilon=0.3)
        X, y, c = data.X, data.y, data.weights
        n = data.n_samples
        lam = data.lambda_max() * rng.choice([0.01, 0.3, 2.0])
        beta = rng.choice([0.1, 1.0, 4.0])
        for _ in range(10):
            w = rng.randn(12) * rng.choice([1e-3, 0.1, 3.0]) * (rng.rand(12) < 0.6)
            a = random_feasible_alpha(rng, y, c, loss)
            P = primal(X, y, c, w, lam, beta, loss, data.gamma, data.epsilon)
            D = dual(X, y, c, a, lam, beta, loss, data.gamma, data.epsilon)
            # the package's pieces give the same objectives
            t = data.margins(w)
            P_pkg = lam * elastic_net(w, beta) + loss_terms(
                t, y, c, loss, data.gamma, data.epsilon).sum() / n
            D_pkg = dual_terms(a, y, c, data.gamma, data.epsilon).sum() / n \
                - elastic_net_conjugate(data.correlations(a), lam, beta, n)
            assert P_pkg == pytest.approx(P, rel=1e-12, abs=1e-14)
            assert D_pkg == pytest.approx(D, rel=1e-12, abs=1e-14)
            assert P >= D - 1e-12 * (abs(P) + abs(D)), (P, D)
            # the gap of (w, alpha(w)) is the own P - D, and non-negative
            g, t2, a2 = full_gap(data, w, lam, beta)
            D2 = dual(X, y, c, a2, lam, beta, loss, data.gamma, data.epsilon)
            assert g.gap == pytest.approx(P - D2, rel=1e-10, abs=1e-13)
            assert g.gap >= -g.error


# ----------------------------------------------------------------- lambda_max ---
def own_lambda_max(data):
    y, c, g, e = data.y, data.weights, data.gamma, data.epsilon
    if data.hinge:
        a0 = c * y * min(1.0, 1.0 / g)
    else:
        a0 = c * np.sign(y) * np.minimum(1.0, np.maximum(np.abs(y) - e, 0) / g)
    return np.abs(dense(data.X).T @ a0).max() / data.n_samples


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("gamma", [0.5, 2.5])
@pytest.mark.parametrize("sparse", [False, True])
def test_lambda_max_is_the_exact_threshold(loss, gamma, sparse):
    data = make_data(3, n=40, d=25, loss=loss, sparse=sparse, gamma=gamma, epsilon=0.2)
    lam_max = data.lambda_max()
    assert lam_max == pytest.approx(own_lambda_max(data), rel=1e-13)
    if gamma > 1 and loss == HINGE:  # alpha(0) = c y / gamma: inside the box
        a0 = data.dual_point(np.zeros(data.n_samples))
        np.testing.assert_allclose(np.abs(a0), data.weights / gamma, rtol=1e-15)
    beta = 0.7
    lam = lam_max * (1 + 1e-9)
    g, _, _ = full_gap(data, np.zeros(data.n_features), lam, beta)
    assert abs(g.gap) <= 1e-15 and g.gap <= g.error
    # the exact optimum below lambda_max is not 0
    ref = reference(data, 0.99 * lam_max, beta)
    assert (ref.w != 0).any()
    ref = reference(data, lam_max * (1 - 1e-6), beta)
    assert (ref.w != 0).any()


@pytest.mark.parametrize("smoothing", [0.5, 2.5])
@pytest.mark.parametrize("l1_ratio", [0.5, 0.3])
def test_estimators_alpha_max_is_the_threshold(smoothing, l1_ratio):
    data_c = make_data(5, n=40, d=20, loss=HINGE, weights=False, gamma=smoothing)
    data_r = make_data(5, n=40, d=20, loss=SVR, weights=False, gamma=smoothing,
                       epsilon=0.2)
    for est, data in ((SafeDoublySparseSVC, data_c), (SafeDoublySparseSVR, data_r)):
        kw = dict(smoothing=smoothing, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-12)
        if est is SafeDoublySparseSVR:
            kw["epsilon"] = 0.2
        top = own_lambda_max(data) / l1_ratio
        model = est(alpha=top * (1 + 1e-9), **kw).fit(data.X, data.y)
        assert model.alpha_max_ == pytest.approx(top, rel=1e-12)
        assert not np.any(model.coef_)
        model = est(alpha=model.alpha_max_, **kw).fit(data.X, data.y)
        assert not np.any(model.coef_)
        model = est(alpha=0.99 * top, **kw).fit(data.X, data.y)
        assert np.any(model.coef_)


# -------------------------------------------------- rounding error of the gap ---
def exact_gap(X, y, c, w, alpha, lam, beta, loss, gamma, epsilon, offset=None,
              kappa=None, n=None):
    """``P(w) - D(alpha)`` in rational arithmetic (``alpha`` as given, assumed
    feasible), with the linear part of a reduced problem if ``offset`` is given."""
    F = Fraction
    Xd = dense(X)
    m, d = Xd.shape
    n = m if n is None else n
    Xf = [[F(v) for v in row] for row in Xd]
    wf, af = [F(v) for v in w], [F(v) for v in alpha]
    yf, cf = [F(v) for v in y], [F(v) for v in c]
    lam, beta, gamma, eps = F(lam), F(beta), F(gamma), F(epsilon)

    def h(z):
        if z <= 0:
            return F(0)
        if z >= gamma:
            return z - gamma / 2
        return z * z / (2 * gamma)

    loss_sum = F(0)
    for i in range(m):
        t = sum((Xf[i][j] * wf[j] for j in range(d)), F(0))
        z = 1 - yf[i] * t if loss == HINGE else abs(t - yf[i]) - eps
        loss_sum += cf[i] * h(z)
    pen = lam * (sum((abs(v) for v in wf), F(0)) + beta / 2 * sum(v * v for v in wf))
    lin = F(0)
    kap = F(0) if kappa is None else F(kappa)
    if offset is not None:
        lin = sum((F(o) * v for o, v in zip(offset, wf, strict=True)), F(0))
    P = pen + (loss_sum + kap - lin) / n
    eps_d = eps if loss == SVR else F(0)
    dsum = sum((yf[i] * af[i] - gamma * af[i] ** 2 / (2 * cf[i]) - eps_d * abs(af[i])
                for i in range(m)), F(0))
    conj = F(0)
    for j in range(d):
        s = sum((Xf[i][j] * af[i] for i in range(m)), F(0))
        if offset is not None:
            s += F(offset[j])
        e = abs(s) / (lam * n) - 1
        if e > 0:
            conj += e * e
    D = (dsum + kap) / n - lam / (2 * beta) * conj
    return P - D


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("scale", [1.0, 1e3, 1e-3])
def test_gap_rounding_error_bound_covers_exact_gap(loss, scale):
    """Near the optimum the float gap is a cancellation of two equal objectives: the
    bound must cover its whole error (and elsewhere, too)."""
    rng = np.random.RandomState(7)
    worst = 0.0
    for k in range(6):
        sparse = k % 2 == 1
        data = make_data(20 + k, n=14, d=8, loss=loss, sparse=sparse)
        X = data.X * scale
        data = DoublySparseData(X, data.y * (scale if loss == SVR else 1.0), data.weights,
                                loss, 0.5 * (scale if loss == SVR else 1.0),
                                data.epsilon * scale)
        lam = 0.2 * data.lambda_max()
        ref = reference(data, lam, 1.0)
        for noise in (0.0, 1e-15, 1e-9, 1e-3):
            w = ref.w * (1 + noise * rng.randn(8)) + noise * rng.randn(8) * np.abs(ref.w).max()
            g, t, a = full_gap(data, w, lam, 1.0)
            ex = exact_gap(data.X, data.y, data.weights, w, a, lam, 1.0, loss, data.gamma,
                           data.epsilon)
            diff = abs(float(ex - Fraction(g.gap)))
            assert float(ex - Fraction(g.gap)) <= g.error, (noise, diff, g.error)
            assert diff <= g.error
            worst = max(worst, diff / g.error)
    assert worst > 1e-4  # the exact and float gaps do differ: the test compares something


@pytest.mark.parametrize("loss", LOSSES)
def test_reduced_gap_rounding_error_bound(loss):
    rng = np.random.RandomState(8)
    data = make_data(30, n=16, d=9, loss=loss)
    lam = 0.1 * data.lambda_max()
    ref = reference(data, lam, 1.0)
    assert ref.box.any() and ref.zero.any()
    rows = np.flatnonzero(ref.inside | (rng.rand(16) < 0.3))
    cols = np.flatnonzero(ref.w != 0)
    at_box = ref.box.copy()
    at_box[rows] = False
    red = ReducedProblem.build(data, rows, cols, at_box, ref.box_value)
    for noise in (0.0, 1e-12, 1e-4):
        u = ref.w[cols] + noise * rng.randn(cols.size)
        t = red.margins(u)
        g = red.gap(u, t, lam, 1.0)
        a = dual_point(t, red.y, red.weights, loss, data.gamma, data.epsilon)
        # the reduced problem's constant parts, exactly
        fixed = np.flatnonzero(at_box)
        Xd = dense(data.X)
        off = [sum(Fraction(Xd[i, j]) * Fraction(ref.box_value[i]) for i in fixed)
               for j in cols]
        kap = sum(Fraction(data.y[i]) * Fraction(ref.box_value[i])
                  - Fraction(data.gamma) * Fraction(ref.box_value[i]) ** 2
                  / (2 * Fraction(data.weights[i]))
                  - Fraction(data.epsilon) * abs(Fraction(ref.box_value[i])) for i in fixed)
        ex = exact_gap(red.X, red.y, red.weights, u, a, lam, 1.0, loss, data.gamma,
                       data.epsilon, offset=off, kappa=kap, n=data.n_samples)
        assert abs(float(ex - Fraction(g.gap))) <= g.error


# ---------------------------------------------------------- reduced problems ---
def own_embedded_gap(data, ref, red, u, lam, beta):
    """The full gap of ``([u; 0], [alpha_U(u); alpha_bar_S])`` with own formulas."""
    w = np.zeros(data.n_features)
    w[red.cols] = u
    a = ref.alpha.copy()  # the decided samples keep their exact values
    a[red.rows] = alpha_of(red.margins(u), red.y, red.weights, data.loss, data.gamma,
                           data.epsilon)
    args = (data.X, data.y, data.weights)
    return (primal(*args, w, lam, beta, data.loss, data.gamma, data.epsilon)
            - dual(*args, a, lam, beta, data.loss, data.gamma, data.epsilon))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_reduced_problem_keeps_the_optimum(loss, sparse):
    rng = np.random.RandomState(11)
    data = make_data(12, n=50, d=30, loss=loss, sparse=sparse)
    n, d = data.n_samples, data.n_features
    lam, beta = 0.1 * data.lambda_max(), 0.8
    ref = reference(data, lam, beta)
    assert ref.box.any() and ref.zero.any() and (ref.w == 0).any()
    # correct decisions: a random part of what is true at the optimum
    features = (ref.w == 0) & (rng.rand(d) < 0.7)
    fixed = (ref.zero | ref.box) & (rng.rand(n) < 0.7)
    rows, cols = np.flatnonzero(~fixed), np.flatnonzero(~features)
    at_box = fixed & ref.box
    red = ReducedProblem.build(data, rows, cols, at_box, ref.box_value)
    assert red.n_rows < n and red.n_cols < d
    # the restricted optimum is the reduced problem's: zero gap, the same value
    u_star = ref.w[cols]
    t = red.margins(u_star)
    g = red.gap(u_star, t, lam, beta)
    assert abs(g.gap) <= max(g.error, 1e-15)
    P_star = primal(data.X, data.y, data.weights, ref.w, lam, beta, loss, data.gamma,
                    data.epsilon)
    assert red.primal(u_star, t, lam, beta) == pytest.approx(P_star, rel=1e-13)
    assert g.primal == pytest.approx(P_star, rel=1e-13)
    assert g.dual == pytest.approx(P_star, rel=1e-12)
    np.testing.assert_allclose(dual_point(t, red.y, red.weights, loss, data.gamma,
                                          data.epsilon), ref.alpha[rows], atol=1e-12)
    # an independent solve of the reduced problem as defined by its parts
    u_cvx, val = cvx_solve(red.X, red.y, red.weights, lam, beta, loss, data.gamma,
                           data.epsilon, offset=red.offset, kappa=red.kappa, n=n)
    np.testing.assert_allclose(u_cvx, u_star, atol=1e-6)
    assert val == pytest.approx(P_star, rel=1e-8)
    # embedded pairs: the reduced gap is at most the full gap, its balls hold the optimum
    for noise in (1e-8, 1e-4, 1e-2, 0.3):
        u = u_star + noise * rng.randn(cols.size)
        tu = red.margins(u)
        gu = red.gap(u, tu, lam, beta)
        assert gu.gap <= own_embedded_gap(data, ref, red, u, lam, beta) + 1e-13
        r_D, r_P = radii(gu, lam, beta, data.gamma, n)
        assert np.linalg.norm(u - u_star) <= r_P
        a = dual_point(tu, red.y, red.weights, loss, data.gamma, data.epsilon)
        assert np.sqrt(((a - ref.alpha[rows]) ** 2 / red.weights).sum()) <= r_D


@pytest.mark.parametrize("sparse", [False, True])
def test_shrinking_twice_equals_building_once(sparse):
    rng = np.random.RandomState(2)
    data = make_data(13, n=40, d=20, loss=SVR, sparse=sparse)
    n, d = data.n_samples, data.n_features
    box_value = np.where(rng.rand(n) < 0.5, data.weights, -data.weights)
    none = np.zeros(n, dtype=bool)
    full = ReducedProblem.build(data, np.arange(n), np.arange(d), none, box_value)
    assert full.X is data.X and full.kappa == 0.0 and not full.offset.any()
    # first decisions, then more on the reduced problem (local masks)
    keep_r1, keep_c1 = rng.rand(n) < 0.8, rng.rand(d) < 0.8
    box1 = ~keep_r1 & (rng.rand(n) < 0.5)
    red1 = full.shrink(keep_r1, keep_c1, box1, box_value)
    m1, d1 = red1.n_rows, red1.n_cols
    keep_r2, keep_c2 = rng.rand(m1) < 0.8, rng.rand(d1) < 0.8
    box2 = ~keep_r2 & (rng.rand(m1) < 0.5)
    red2 = red1.shrink(keep_r2, keep_c2, box2, box_value[red1.rows])
    at_box = np.zeros(n, dtype=bool)
    at_box[np.flatnonzero(box1)] = True
    at_box[red1.rows[box2]] = True
    once = ReducedProblem.build(data, red2.rows, red2.cols, at_box, box_value)
    np.testing.assert_array_equal(dense(red2.X), dense(once.X))
    np.testing.assert_allclose(red2.offset, once.offset, rtol=1e-12, atol=1e-12)
    assert red2.kappa == pytest.approx(once.kappa, rel=1e-12)
    np.testing.assert_allclose(red2.row_sq, once.row_sq, rtol=1e-12)
    np.testing.assert_allclose(red2.col_sq_c, once.col_sq_c, rtol=1e-12)
    # and its parts are the documented ones
    Xd = dense(data.X)
    fixed = np.flatnonzero(at_box)
    np.testing.assert_allclose(once.offset, Xd[np.ix_(fixed, once.cols)].T
                               @ box_value[fixed], rtol=1e-12, atol=1e-12)
    bv, yb, cb = box_value[fixed], data.y[fixed], data.weights[fixed]
    assert once.kappa == pytest.approx(float((yb * bv - data.gamma * bv**2 / (2 * cb)
                                              - data.epsilon * np.abs(bv)).sum()),
                                       rel=1e-12)
    assert sp.issparse(once.X) == sparse


def test_reduced_gap_bound_with_cancelling_box_rows():
    """The samples folded at the box end add ``X_L' alpha_bar_L`` to the correlations:
    large rows whose contributions cancel leave an ``offset`` near 0 with a rounding
    error far above ``eps |offset|``, which the gap's bound must still cover (away
    from the reduced optimum, where the error does not cancel out of the gap)."""
    rng = np.random.RandomState(0)
    n, d, m = 24, 6, 12
    X = rng.randn(n, d)
    big = rng.randn(m // 2, d) * 1e6 * (1 + rng.rand(m // 2, d))
    X[:m] = np.vstack([big, big * (1 + 1e-15)])  # rows at +c and at -c: they cancel
    y = rng.randn(n)
    c = np.ones(n)
    data = DoublySparseData(X, y, c, SVR, 0.5, 0.1)
    at_box = np.arange(n) < m
    box_value = np.where(np.arange(n) < m // 2, c, -c)
    red = ReducedProblem.build(data, np.arange(m, n), np.arange(d), at_box, box_value)
    F = Fraction
    offset = [sum(F(X[i, j]) * F(box_value[i]) for i in range(m)) for j in range(d)]
    kappa = sum(F(y[i]) * F(box_value[i]) - F(0.5) * F(box_value[i]) ** 2 / 2
                - F(0.1) * abs(F(box_value[i])) for i in range(m))
    off_err = np.abs(red.offset - np.array([float(o) for o in offset])).max()
    assert off_err > 1e3 * EPS * np.abs(red.offset).max()  # the case is the intended one
    lam = 0.05 * DoublySparseData(X[m:], y[m:], c[m:], SVR, 0.5, 0.1).lambda_max()
    u_star, _ = cvx_solve(red.X, red.y, red.weights, lam, 1.0, SVR, 0.5, 0.1,
                          offset=red.offset, kappa=red.kappa, n=n)
    for eta in (0.0, 1e-3, 1e-2, 1e-1, 1.0):
        u = u_star + eta * rng.randn(d)
        t = red.margins(u)
        g = red.gap(u, t, lam, 1.0)
        a = dual_point(t, red.y, red.weights, SVR, 0.5, 0.1)
        ex = exact_gap(red.X, red.y, red.weights, u, a, lam, 1.0, SVR, 0.5, 0.1,
                       offset=offset, kappa=kappa, n=n)
        assert abs(float(ex - Fraction(g.gap))) <= g.error, eta
