"""The certificate's margins updated along a path (kernel mode) from the previous
solution's: within their error bound of exact rational sums, as fresh compensated ones
are, and the same certified fits as with fresh products at every step."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_safescreen import SafeLAD, SafeSVC
from sklearn_safescreen.engine import box_qp_reduced as engine_reduced
from sklearn_safescreen.problems import box_qp
from sklearn_safescreen.problems.box_qp import BoxQP, BoxQPReference
from sklearn_safescreen.problems.box_qp_data import SVMData
from sklearn_safescreen.problems.kernels import KernelMatrix


def _exact_margins(K, sign, alpha):
    """``s * K (s * alpha)`` in rational arithmetic, rounded once."""
    coef = [Fraction(float(c)) for c in sign * alpha]
    return np.array([float(sign[i] * sum(Fraction(float(K[i, j])) * coef[j]
                                         for j in range(len(coef)) if coef[j]))
                     for i in range(len(coef))])


def _path_points(rng, n, Cs, weights):
    """Dual points along a path as a solver leaves them: each sample at 0, at its upper
    bound ``C w_i`` (rounded, as the box is) or inside, most keeping their side from
    one value to the next and a few changing it."""
    side = rng.choice([0, 1, 2], size=n, p=[0.4, 0.35, 0.25])
    points = []
    for C in Cs:
        flip = rng.random(n) < 0.1
        side = np.where(flip, rng.integers(0, 3, n), side)
        hi = C * weights
        alpha = np.where(side == 0, 0.0, np.where(side == 1, hi, hi * rng.random(n)))
        points.append(alpha)
    return points


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", ["svm", "lad", "precomputed"])
def test_updated_margins_hold_their_bound_against_exact_sums(seed, family):
    rng = np.random.default_rng(seed)
    n = 50
    X = rng.standard_normal((n, 4))
    if family == "precomputed":
        # a PSD matrix not symmetric to the last bit: the kernel values' own
        # disagreement enters the bound
        G = X @ X.T
        km = KernelMatrix(G + 1e-15 * np.triu(G, 1), "precomputed", {}, 0.0)
    else:
        km = KernelMatrix(X, "rbf", {"gamma": 0.7}, 1.0)
    sign = np.ones(n) if family == "lad" else np.where(rng.random(n) < 0.5, -1.0, 1.0)
    weights = rng.uniform(0.5, 2.0, n)
    K = km.block(np.arange(n), np.arange(n))
    Cs = np.logspace(-1, 6, 8)
    points = _path_points(rng, n, Cs, weights)
    problem = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=Cs[0] * weights,
                    sqnorm=km.diag(), kernel=km)
    q, error = problem.accurate_margins(points[0])
    base = problem.reference(Cs[0], points[0], (q, error))
    updated = 0
    for C_old, C, alpha in zip(Cs[:-1], Cs[1:], points[1:], strict=True):
        update = problem.accurate_margins_from(alpha, base, C / C_old)
        if update is None:  # most of the support changed: afresh
            update = problem.accurate_margins(alpha)
        else:
            updated += 1
        q, error = update
        exact = _exact_margins(K, sign, alpha)
        assert np.all(np.abs(q - exact) <= error)
        fresh, fresh_error = problem.accurate_margins(alpha)
        assert np.all(np.abs(q - fresh) <= error + fresh_error)
        # not a vacuous bound: a few thousand roundings of the largest terms at most
        scale = np.abs(K).max() * np.abs(alpha).sum()
        assert np.all(error <= 1e4 * np.finfo(float).eps * scale * (1 + len(Cs)))
        base = problem.reference(C, alpha, (q, error))
    assert updated >= 4


def test_the_bound_carries_the_roundings_of_the_box_and_the_base_error():
    """Adversarial cases for the two terms a random path leaves in the slack: samples
    at their upper bound whose exact contributions cancel, so that the margins are the
    bounds' own roundings (:math:`fl(3C) - 3C`), which scaling the base's margins does
    not reproduce; and a base whose margins are off by their whole stated error."""
    v = np.array([1.0, 3.0, 1.0, 3.0])
    km = KernelMatrix(np.outer(v, v), "precomputed", {}, 0.0)  # rank one, symmetric
    sign = np.array([1.0, -1.0, 1.0, -1.0])
    weights = np.array([3.0, 1.0, 3.0, 1.0])  # sum_j v_j s_j w_j = 0 exactly
    K = np.outer(v, v)
    problem = BoxQP(sign=sign, p=np.ones(4), lo=np.zeros(4), hi=weights, sqnorm=km.diag(),
                    kernel=km)
    worst = 0.0
    for C0, C1 in [(0.1, 0.215), (0.7, 1.1), (1.3, 2.9), (0.3, 0.7)]:
        alpha0, alpha1 = C0 * weights, C1 * weights
        base = problem.reference(C0, alpha0)
        q, error = problem.accurate_margins_from(alpha1, base, C1 / C0)
        exact = _exact_margins(K, sign, alpha1)
        assert np.all(np.abs(q - exact) <= error)
        worst = max(worst, float(np.max(np.abs(q - exact) / error)))
    assert worst > 0.01  # the case is tight: the bound is not all slack
    # a base whose margins are wrong by their stated error: the update carries it
    rng = np.random.default_rng(0)
    n = 30
    X = rng.standard_normal((n, 3))
    km = KernelMatrix(X, "rbf", {"gamma": 0.5}, 0.0)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    problem = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=np.ones(n),
                    sqnorm=km.diag(), kernel=km)
    alpha0 = np.where(rng.random(n) < 0.5, 1.0, 0.0)
    q0, _ = problem.accurate_margins(alpha0)
    stated = np.full(n, 1e-6)
    base = BoxQPReference(1.0, alpha0, q0 + stated * sign, 0.0, stated)
    q, error = problem.accurate_margins_from(2.0 * alpha0, base, 2.0)
    exact = _exact_margins(km.block(np.arange(n), np.arange(n)), sign, 2.0 * alpha0)
    assert np.all(np.abs(q - exact) <= error)
    assert np.all(error < 2.1e-6)


def test_updated_margins_are_refused_when_most_of_the_support_moved():
    rng = np.random.default_rng(0)
    n = 40
    km = KernelMatrix(rng.standard_normal((n, 3)), "rbf", {"gamma": 0.5}, 0.0)
    problem = BoxQP(sign=np.ones(n), p=np.ones(n), lo=np.zeros(n), hi=np.ones(n),
                    sqnorm=km.diag(), kernel=km)
    alpha0 = rng.uniform(0.1, 0.9, n)
    base = problem.reference(1.0, alpha0)
    assert problem.accurate_margins_from(rng.uniform(0.1, 0.9, n), base, 1.0) is None
    # the same point scaled: nothing moved, no kernel value computed
    evaluations = km.n_evaluations
    q, error = problem.accurate_margins_from(2.0 * alpha0, base, 2.0)
    assert km.n_evaluations == evaluations
    fresh, fresh_error = problem.accurate_margins(2.0 * alpha0)
    assert np.all(np.abs(q - fresh) <= error + fresh_error)


@pytest.mark.parametrize("seed", range(3))
def test_a_point_unchanged_at_another_C_updates_its_margins_without_a_product(seed):
    """Near the hard margin the solution is the same at the next C (no sample at the
    upper bound): the margins are the base's, no kernel value computed, within their
    bound of exact sums; and a point where most samples kept their value while a few
    at the bound scaled with C costs only those few columns."""
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.standard_normal((n, 3))
    km = KernelMatrix(X, "rbf", {"gamma": 0.5}, 1.0)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    K = km.block(np.arange(n), np.arange(n))
    problem = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, 10.0),
                    sqnorm=km.diag(), kernel=km)
    alpha0 = np.where(rng.random(n) < 0.6, rng.uniform(0.1, 9.0, n), 0.0)
    base = problem.reference(10.0, alpha0, problem.accurate_margins(alpha0))
    for C, at_bound in ((30.0, 0), (100.0, 3)):
        alpha = alpha0.copy()
        bound = np.flatnonzero(alpha0)[:at_bound]
        alpha[bound] = C  # a few at the new upper bound, the others unchanged
        evaluations = km.n_evaluations
        q, error = problem.accurate_margins_from(alpha, base, C / 10.0)
        assert km.n_evaluations - evaluations <= at_bound * n
        assert np.all(np.abs(q - _exact_margins(K, sign, alpha)) <= error)
        start = problem.margins_from(alpha, alpha0, base.margins, C / 10.0)
        np.testing.assert_allclose(start, q, rtol=0, atol=1e-10 * np.abs(q).max())


def _count_fresh(monkeypatch):
    calls = {"fresh": 0, "updated": 0}
    fresh, update = BoxQP.accurate_margins, BoxQP.accurate_margins_from

    def counted_fresh(self, alpha):
        calls["fresh"] += 1
        return fresh(self, alpha)

    def counted_update(self, alpha, base, scale):
        out = update(self, alpha, base, scale)
        calls["updated"] += out is not None
        return out

    monkeypatch.setattr(BoxQP, "accurate_margins", counted_fresh)
    monkeypatch.setattr(BoxQP, "accurate_margins_from", counted_update)
    return calls


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_a_path_with_updated_margins_fits_as_with_fresh_ones(Estimator, monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((700, 5))
    if Estimator is SafeSVC:
        y = np.where(X[:, 0] + 0.5 * rng.standard_normal(700) > 0, 1, 0)
        Cs = np.logspace(-1, 1.5, 6)
    else:
        y = X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(700)
        Cs = np.logspace(-1.5, 0.5, 6)
    params = dict(kernel="rbf", gamma=0.3, tol=1e-6, warm_start=True)

    def walk():
        model, out = Estimator(**params), []
        for C in Cs:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                model.set_params(C=C).fit(X, y)
            out.append((model.dual_coef_.copy(), model.predict(X[:100])))
        return out

    calls = _count_fresh(monkeypatch)
    with_updates = walk()
    assert calls["updated"] >= 3  # the path took the update at most steps
    monkeypatch.setattr(box_qp, "INCREMENTAL_MARGINS_SHARE", -1.0)
    calls.update(fresh=0, updated=0)
    fresh = walk()
    assert calls["updated"] == 0 and calls["fresh"] >= len(Cs)
    # both walks are certified to tol (no ConvergenceWarning)
    for (a, b), (c, d) in zip(with_updates, fresh, strict=True):
        np.testing.assert_allclose(a, c, atol=1e-3 * np.abs(c).max())
        np.testing.assert_allclose(b, d, atol=1e-3 * np.abs(d).max())


def test_an_update_whose_bound_would_weigh_in_the_gap_is_recomputed(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 4))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(400) > 0, 1, 0)
    # per certificate (the engine's margins after a solve): fresh products and calls
    seen = {"calls": 0, "fresh": 0}
    fresh, kernel_margins = BoxQP.accurate_margins, engine_reduced.ReducedBoxQP._kernel_margins

    def counted_fresh(self, alpha):
        seen["fresh"] += seen.get("inside", False)
        return fresh(self, alpha)

    def counted_margins(self, tol):
        seen["calls"] += 1
        seen["inside"] = True
        try:
            return kernel_margins(self, tol)
        finally:
            seen["inside"] = False

    monkeypatch.setattr(BoxQP, "accurate_margins", counted_fresh)
    monkeypatch.setattr(engine_reduced.ReducedBoxQP, "_kernel_margins", counted_margins)

    def walk():
        seen.update(calls=0, fresh=0)
        model = SafeSVC(kernel="rbf", gamma=0.3, warm_start=True)
        for C in (0.3, 1.0, 3.0):
            model.set_params(C=C).fit(X, y)
        return dict(seen)

    kept = walk()
    assert kept["fresh"] < kept["calls"]  # some certificates used updated margins
    monkeypatch.setattr(engine_reduced, "INCREMENTAL_GAP_ERROR", 0.0)
    refused = walk()
    # the same certificates, each now from a fresh product
    assert refused["calls"] == kept["calls"]
    assert refused["fresh"] == refused["calls"]


@pytest.mark.parametrize("seed", range(3))
def test_q_matvec_holds_its_bound_updated_or_afresh(seed):
    """``BoxQPData.q_matvec`` along a sequence of vectors, each product within its
    reported bound of the exact rational sum: updates from the previous vector (few
    entries changed), and a product afresh where the vector has fewer non-zeros than
    changed entries (the rules' first product after steps without screening), whose
    bound starts again from the fresh product's instead of accumulating."""
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.standard_normal((n, 3))
    km = KernelMatrix(X, "rbf", {"gamma": 0.5}, 1.0)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    data = SVMData(X, km, sign, rng.uniform(0.5, 2.0, n))
    K = km.block(np.arange(n), np.arange(n))
    v = data.weights.copy()
    read = []
    original = km.matvec

    def counting(rows, cols, w):
        read.append(len(cols))
        return original(rows, cols, w)

    km.matvec = counting
    sequence = []
    for _ in range(4):  # small updates
        v = v.copy()
        idx = rng.choice(n, 5, replace=False)
        v[idx] = np.where(rng.random(5) < 0.5, 0.0, data.weights[idx])
        sequence.append(v)
    sparse_v = np.zeros(n)
    few = rng.choice(n, 6, replace=False)
    sparse_v[few] = data.weights[few]  # most entries changed, few non-zeros
    sequence.append(sparse_v)
    errors = []
    for v in sequence:
        qv = data.q_matvec(v)
        exact = _exact_margins(K, sign, v)
        bound = data.q_matvec_error()
        assert np.all(np.abs(qv - exact) <= bound), "a product outside its bound"
        errors.append(float(bound.max()))
    changed_last = int(np.count_nonzero(sequence[-1] != sequence[-2]))
    assert changed_last > 6 and read[-1] == 6  # the fresh product read 6 columns
    # the fresh bound is that of a 6-term product, below the accumulated one
    assert errors[-1] < errors[-2]
