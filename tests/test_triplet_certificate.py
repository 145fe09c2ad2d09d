"""The triplet path's certificate from bounds and its incremental H_L.

The certificate may bound a screened triplet's value at the new metric M from its value
at an earlier metric M0, :math:`|\\langle M-M_0,H_t\\rangle|\\le\\|M-M_0\\|\\|H_t\\|`, and
evaluate exactly only the triplets the bound leaves undecided
(``doc/theory/metric_learning.rst``); H_L is updated from the last fit's by the triplets
whose status changed.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen.engine import triplet as et
from sklearn_safescreen.engine import triplet_reduced as etr
from sklearn_safescreen.engine.report import ScreeningReport
from sklearn_safescreen.engine.triplet_settings import (
    DEFAULT_OPTIONS,
    TripletOptions,
    pass_work,
)
from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.triplets import build_triplets
from tests._triplet_models import small_problem

GAMMA = 0.05


#: The small problems' undecided triplets use most pairs, and a pass over all their
#: pairs is cheaper than the bounds (and a sum of H_L from scratch cheaper than its
#: update): with its default options the engine would rather make that pass. The paths
#: and reduced problems here take these options, to test the bounded path and the
#: updates whatever the share and the size.
EVERY_SHARE = TripletOptions(full_pass_share=1.0, bounds_min_work=0.0,
                             hl_update_min_work=0.0)


def _settings():
    return et.TripletSettings(gamma=GAMMA, diagonal=False, bound="rrpb+pgb",
                              rule="sphere", range_screening=True, active_set=False,
                              interval=10, tol=1e-6, max_iter=100)


def _random_metric(rng, d, diagonal, scale):
    if diagonal:
        return scale * rng.rand(d)
    A = rng.randn(d, d)
    return scale * (A @ A.T) / d


def _case(seed, diagonal, step, stale, wrong, covered=True):
    """A small problem with a status screened from the exact values at M (plus, with
    ``wrong``, one triplet put on the wrong side), and a prior at M0 = M - step whose
    values are exact or, for a random part, moved within their stated bound. The
    solver's last evaluation is at M (``covered``: it holds every active triplet's
    value) or at another metric (the certificate evaluates the active triplets
    itself)."""
    rng = np.random.RandomState(seed)
    X, y, ts = small_problem(seed=seed, n=15, d=3, k=2, diagonal=diagonal)
    d = X.shape[1]
    M0 = _random_metric(rng, d, diagonal, 1.0)
    z0 = tp.triplet_values(ts, M0, diagonal)
    M0 = M0 * 2.0 / max(np.median(np.abs(z0)), 1e-12)  # values around the thresholds
    move = step * np.linalg.norm(M0) * rng.randn(*M0.shape) / np.sqrt(M0.size)
    M = tp.project(M0 + move, diagonal)
    z = tp.triplet_values(ts, M, diagonal)
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    pick = rng.rand(ts.n_triplets) < 0.7
    status[pick & (z >= 1.0)] = tp.STATUS_R
    status[pick & (z <= 1.0 - GAMMA)] = tp.STATUS_L
    if wrong and (status == tp.STATUS_R).any():
        status[np.flatnonzero(status == tp.STATUS_R)[0]] = tp.STATUS_L
    z_prior = tp.triplet_values(ts, M0, diagonal)
    zrad = None
    if stale:  # values known within zrad * hnorm only
        zrad = np.where(rng.rand(ts.n_triplets) < 0.5, stale * rng.rand(ts.n_triplets), 0.0)
        z_prior = z_prior + zrad * ts.hnorm * rng.uniform(-1, 1, ts.n_triplets)
    prior = et.TripletReference(1.0, M0, 0.0, z_prior, exact=False, zrad=zrad)
    problem = tp.TripletProblem(ts, GAMMA, diagonal, status)
    alpha = 1.0
    reduced = etr.ReducedTriplets(problem, M, alpha, None, None, ScreeningReport(),
                                  _settings(), None, prior, EVERY_SHARE)
    reduced.res = SimpleNamespace(evaluation=problem.evaluate(
        M if covered else tp.project(1.5 * M + 0.1 * M0, diagonal), alpha))
    return ts, M, z, status, prior, reduced


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), diagonal=st.booleans(),
       step=st.sampled_from([0.0, 1e-3, 0.05, 0.5]),
       stale=st.sampled_from([0.0, 1e-3, 0.1]), wrong=st.booleans(),
       covered=st.booleans())
def test_bounded_certificate_agrees_with_the_exact_one(seed, diagonal, step, stale, wrong,
                                                       covered):
    """Decisions equal to the exact certificate's (every screened triplet on its side),
    every exactly evaluated value equal to the exact one, every other within its stated
    bound, the loss the full problem's, and every screened triplet the bound does not
    put on its side evaluated; the active triplets evaluated too when the solver's
    evaluation is at another metric (``covered`` False)."""
    ts, M, z, status, prior, reduced = _case(seed, diagonal, step, stale, wrong, covered)
    evaluated = []
    values_at = tp.triplet_values_at

    def recording(ts_, Q, diagonal_, idx):
        evaluated.append(np.asarray(idx).copy())
        return values_at(ts_, Q, diagonal_, idx)

    etr.triplet_values_at = recording
    try:
        ok = reduced._bounded_certificate(reduced.res.evaluation)
    finally:
        etr.triplet_values_at = values_at
    on_side = not np.any(((status == tp.STATUS_R) & (z < 1.0))
                         | ((status == tp.STATUS_L) & (z > 1.0 - GAMMA)))
    assert ok == on_side
    # the triplets the bound cannot decide, computed here independently
    s, z0, e = _scaled_bound(M, prior, ts)
    undecided = (((status == tp.STATUS_R) & (z0 - e <= 1.0))
                 | ((status == tp.STATUS_L) & (z0 + e >= 1.0 - GAMMA)))
    assert np.isin(np.flatnonzero(undecided), np.concatenate(evaluated)).all()
    if not covered:
        assert np.isin(np.flatnonzero(status == tp.STATUS_ACTIVE),
                       np.concatenate(evaluated)).all()
    if not ok:
        return
    exact = reduced.zrad == 0
    assert np.allclose(reduced.z_full[exact], z[exact], rtol=1e-12, atol=1e-12)
    err = np.abs(reduced.z_full - z)
    assert (err <= reduced.zrad * ts.hnorm * (1 + 1e-9) + 1e-12).all()
    assert exact[status == tp.STATUS_ACTIVE].all()
    assert np.isclose(reduced.loss, tp.loss_values(z, GAMMA).sum(), rtol=1e-10, atol=1e-10)


def test_an_undecided_triplet_is_evaluated_exactly():
    """A screened triplet whose bound crosses its threshold gets its exact value (and a
    zero radius), however close the prior's value is to the right side."""
    ts, M, z, status, prior, reduced = _case(3, False, 1e-3, 0.0, False)
    t = np.flatnonzero(status == tp.STATUS_R)[0]
    # the prior says "just on the R side", but its bound reaches below 1
    prior.z = prior.z.copy()
    prior.z[t] = 1.0 + 1e-3 * ts.hnorm[t]
    prior.zrad = np.zeros(ts.n_triplets)
    prior.zrad[t] = 1.0
    assert reduced._bounded_certificate(reduced.res.evaluation)
    assert reduced.zrad[t] == 0.0 and np.isclose(reduced.z_full[t], z[t], rtol=1e-12)
    # and one the bound decides keeps the prior's value and a positive radius
    far = np.flatnonzero((status != tp.STATUS_ACTIVE) & (reduced.zrad > 0))
    z0 = _scaled_bound(M, prior, ts)[1]
    assert far.size and np.array_equal(reduced.z_full[far], z0[far])


@pytest.mark.parametrize("diagonal", [False, True])
def test_the_active_triplets_are_evaluated_when_the_solver_has_not(diagonal):
    """When the solver's last evaluation is not at M (a repair re-solved, or its working
    set was another), the certificate evaluates the active triplets itself: their
    values are exact and the loss is the full problem's, not one from their bounds."""
    ts, M, z, status, prior, reduced = _case(5, diagonal, 0.05, 0.0, False, covered=False)
    active = status == tp.STATUS_ACTIVE
    z0, e = _scaled_bound(M, prior, ts)[1:]
    assert active.any() and (np.abs(z0 - z)[active] > 1e-6).any()  # bounds not exact
    assert reduced._bounded_certificate(reduced.res.evaluation)
    assert (reduced.zrad[active] == 0).all()
    assert np.allclose(reduced.z_full[active], z[active], rtol=1e-12, atol=1e-12)
    assert np.isclose(reduced.loss, tp.loss_values(z, GAMMA).sum(), rtol=1e-10, atol=1e-10)


def _scaled_bound(M, prior, ts):
    """The certificate's bound: M = s M0 + R with R orthogonal to M0, so the value at M
    is s z0 within (|s| rho + ||R||) ||H||. Returns (s, s z0, the bound)."""
    s = float(np.sum(M * prior.M)) / float(np.sum(prior.M * prior.M))
    rho = 0.0 if prior.zrad is None else prior.zrad
    return s, s * prior.z, (abs(s) * rho + np.linalg.norm(M - s * prior.M)) * ts.hnorm


@pytest.mark.parametrize("diagonal", [False, True])
def test_a_growing_metric_needs_no_evaluation_of_screened_triplets(diagonal):
    """Along a path the metric mostly grows: from M0 to M = c M0 the bound is about
    |c| rho, however far M moved, so no screened triplet whose scaled value lies away
    from its threshold is evaluated (the distance ||M - M0|| decided none of them)."""
    rng = np.random.RandomState(0)
    X, y, ts = small_problem(seed=1, n=15, d=3, k=2, diagonal=diagonal)
    M0 = _random_metric(rng, X.shape[1], diagonal, 1.0)
    M0 = M0 * 2.0 / np.median(np.abs(tp.triplet_values(ts, M0, diagonal)))
    M = 1.5 * M0
    z = tp.triplet_values(ts, M, diagonal)
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    status[z > 1.0 + 1e-6] = tp.STATUS_R
    status[z < 1.0 - GAMMA - 1e-6] = tp.STATUS_L
    assert (status == tp.STATUS_R).any() and (status == tp.STATUS_L).any()
    prior = et.TripletReference(1.0, M0, 0.0, tp.triplet_values(ts, M0, diagonal),
                                exact=False)
    problem = tp.TripletProblem(ts, GAMMA, diagonal, status)
    reduced = etr.ReducedTriplets(problem, M, 1.0, None, None, ScreeningReport(),
                                  _settings(), None, prior, EVERY_SHARE)
    reduced.res = SimpleNamespace(evaluation=problem.evaluate(M, 1.0))
    assert reduced._bounded_certificate(reduced.res.evaluation)
    screened = status != tp.STATUS_ACTIVE
    assert (reduced.zrad[screened] > 0).all()  # bounded, not evaluated
    assert (reduced.zrad[screened] <= 1e-9 * np.linalg.norm(M)).all()
    assert np.allclose(reduced.z_full, z, rtol=1e-12, atol=1e-12)
    assert np.isclose(reduced.loss, tp.loss_values(z, GAMMA).sum(), rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), diagonal=st.booleans())
def test_incremental_hl_equals_the_recomputed_one(seed, diagonal):
    rng = np.random.RandomState(seed)
    _, _, ts = small_problem(seed=seed, n=15, d=3, k=2, diagonal=diagonal)
    s0 = rng.randint(0, 3, ts.n_triplets).astype(np.int8)
    s1 = s0.copy()
    flip = rng.rand(ts.n_triplets) < rng.rand()
    s1[flip] = rng.randint(0, 3, int(flip.sum()))
    HL0 = tp.TripletProblem(ts, GAMMA, diagonal, s0).HL
    HL, n = tp.update_hl(ts, diagonal, s0, HL0, s1)
    fresh = tp.TripletProblem(ts, GAMMA, diagonal, s1)
    assert n == int(((s0 == tp.STATUS_L) != (s1 == tp.STATUS_L)).sum())
    assert np.allclose(HL, fresh.HL, rtol=1e-12, atol=1e-12 * max(1, np.abs(HL0).max()))
    given_hl = tp.TripletProblem(ts, GAMMA, diagonal, s1, HL=HL)
    assert given_hl.nL == fresh.nL and np.array_equal(given_hl.active, fresh.active)


def test_the_path_keeps_hl_equal_to_the_sum_and_bounds_its_certificates():
    """Along a path the reduced problems' H_L (updated between fits) equals the sum over
    their L-screened triplets, the certificate bounds screened values at most fits, and
    the metrics equal those of the exact certificate's path."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import MinMaxScaler

    from sklearn_safescreen.metric_learning import SafeMetricLearner

    X, y = load_wine(return_X_y=True)
    X = MinMaxScaler().fit_transform(X[::2])
    y = y[::2]
    problems, bounded = [], []
    make = et.TripletPath._problem
    bounded_cert = etr.ReducedTriplets._bounded_certificate

    from_start = []

    def recording_problem(self, status):
        start = self._hl_start
        p = make(self, status)
        problems.append((p.status.copy(), np.array(p.HL, copy=True), self))
        # (an update from the last fit's start rather than its end)
        from_start.append(start is not None and self._hl_state is not None
                          and self._hl_state[0] is start[0])
        return p

    def recording_cert(self, red):
        ok = bounded_cert(self, red)
        bounded.append(ok and bool((self.zrad > 0).any()))
        return ok

    def walk(exact):
        ml = SafeMetricLearner(k=3, warm_start=True, tol=1e-8)
        ml._triplet_options = EVERY_SHARE
        lam_L = ml._critical_value(X, y)
        out = []
        for a in lam_L * 0.8 ** np.arange(1, 25):
            ml.set_params(alpha=a).fit(X, y)
            out.append(ml.metric_.copy())
        return out

    try:
        et.TripletPath._problem = recording_problem
        etr.ReducedTriplets._bounded_certificate = recording_cert
        bounded_path = walk(False)
    finally:
        et.TripletPath._problem = make
        etr.ReducedTriplets._bounded_certificate = bounded_cert
    for status, HL, path in problems:
        L = np.flatnonzero(status == tp.STATUS_L)
        ref = tp.sum_h(path.ts, np.ones(L.size), path.diagonal, L) if L.size else 0 * HL
        assert np.allclose(HL, ref, rtol=1e-11, atol=1e-11 * max(1, np.abs(ref).max()))
    assert sum(bounded) >= len(bounded) // 2
    assert any(from_start)  # both bases of the updates are checked above
    try:
        etr.ReducedTriplets._bounded_certificate = lambda self, red: False
        exact_path = walk(True)
    finally:
        etr.ReducedTriplets._bounded_certificate = bounded_cert
    # the same optima, to the solver's tolerance (the reference screening differs a
    # little: bounded values screen less)
    for a, b in zip(bounded_path, exact_path, strict=True):
        assert np.linalg.norm(a - b) <= 1e-3 * np.linalg.norm(b)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), diagonal=st.booleans(),
       stale=st.sampled_from([1e-3, 0.1, 10.0]), shrink=st.sampled_from([0.5, 0.9, 1.2]))
def test_reference_screening_from_bounded_values_equals_the_exact_rule(seed, diagonal,
                                                                       stale, shrink):
    """The reference's sphere rule when part of its values are bounds takes the exact
    rule's decisions (the undecided ones evaluated), and leaves exact values behind for
    every triplet it evaluated."""
    from sklearn_safescreen.screening import triplet_bounds as tb

    rng = np.random.RandomState(seed)
    X, y, ts = small_problem(seed=seed, n=15, d=3, k=2, diagonal=diagonal)
    M0 = _random_metric(rng, X.shape[1], diagonal, 1.0)
    z = tp.triplet_values(ts, M0, diagonal)
    M0 = M0 * 2.0 / max(np.median(np.abs(z)), 1e-12)
    z = tp.triplet_values(ts, M0, diagonal)
    zrad = np.where(rng.rand(ts.n_triplets) < 0.5, stale * rng.rand(ts.n_triplets), 0.0)
    z_bounded = z + zrad * ts.hnorm * rng.uniform(-1, 1, ts.n_triplets)
    ref = et.TripletReference(1.0, M0, 1e-4, z_bounded.copy(), exact=False, zrad=zrad.copy())
    ball = tb.rrpb(M0, 1.0, shrink, ref.eps)
    path = et.TripletPath(ts, GAMMA, diagonal, EVERY_SHARE)
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    status, *got = path._screen_bounded(ref, ball, status)
    exact, *want = tb.scaled_sphere_screen(z, ts.hnorm, ball.scale, ball.radius, GAMMA,
                                           np.zeros(ts.n_triplets, dtype=np.int8))
    assert np.array_equal(status, exact) and got == want
    known = np.flatnonzero(ref.zrad == 0) if ref.zrad is not None else np.arange(z.size)
    assert np.allclose(ref.z[known], z[known], rtol=1e-12, atol=1e-12)


def test_the_active_triplets_pairs_are_not_counted_when_their_values_are_known():
    """The certificate from bounds reads only the pairs of the triplets it evaluates:
    the active triplets' values are the solver's, so their pairs do not count towards
    the share above which one pass over all pairs is made instead."""
    rng = np.random.RandomState(0)
    X, y, ts = small_problem(seed=2, n=15, d=3, k=2, diagonal=True)
    M = _random_metric(rng, 3, True, 1.0)
    M = M * 2.0 / np.median(np.abs(tp.triplet_values(ts, M, True)))
    z = tp.triplet_values(ts, M, True)
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    far = rng.rand(ts.n_triplets) < 0.3
    status[far & (z > 1.5)] = tp.STATUS_R
    status[far & (z < 0.5)] = tp.STATUS_L
    active = np.flatnonzero(status == tp.STATUS_ACTIVE)
    assert etr.pair_share(ts, active) > 0.5 and (status != tp.STATUS_ACTIVE).any()
    prior = et.TripletReference(1.0, M, 0.0, z, exact=False)
    problem = tp.TripletProblem(ts, GAMMA, True, status)
    reduced = etr.ReducedTriplets(problem, M, 1.0, None, None, ScreeningReport(),
                                  _settings(), None, prior,
                                  replace(EVERY_SHARE, full_pass_share=0.5))
    reduced.res = SimpleNamespace(evaluation=problem.evaluate(M, 1.0))
    assert reduced._bounded_certificate(reduced.res.evaluation)
    np.testing.assert_allclose(reduced.z_full, z, rtol=1e-12, atol=1e-12)


def test_small_sets_take_the_exact_certificate(monkeypatch):
    """Where one pass over every pair costs less than the bounds' bookkeeping, the path
    certifies every fit exactly (no prior is handed to the reduced problems), and its
    metrics are those of the path with the bounds, to the certified gap."""
    from sklearn.datasets import load_iris

    from sklearn_safescreen.base import fit_context
    from sklearn_safescreen.metric_learning import SafeMetricLearner

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    seen = []
    init = etr.ReducedTriplets.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(self.prior is not None)

    monkeypatch.setattr(etr.ReducedTriplets, "__init__", recording_init)
    metrics = {}
    for work in (pass_work(build_triplets(X, y, SafeMetricLearner().k), False), 0.0):
        seen.clear()
        est = SafeMetricLearner(warm_start=True)
        est._triplet_options = replace(EVERY_SHARE, bounds_min_work=work + 1.0)
        fits = []
        with fit_context(est, screening="always"):
            critical = est.fit(X, y).critical_alpha_
            for lam in np.geomspace(critical, 1e-2 * critical, 8):
                fits.append(est.set_params(alpha=lam).fit(X, y).metric_.copy())
        metrics[work > 0] = np.array(fits)
        assert any(seen) == (work == 0.0)
    assert np.allclose(metrics[True], metrics[False], rtol=1e-4, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), diagonal=st.booleans(),
       loose_share=st.sampled_from([0.0, 0.05, 0.3, 1.0]))
def test_a_reduced_evaluation_with_its_loose_triplets_released_is_the_full_one(
        seed, diagonal, loose_share):
    """The certificate's evaluation when some screened triplets are off their side at M:
    the reduced evaluation with those counted as they are (their own loss and dual
    variable, through their pairs) equals the whole problem's evaluation at M (the
    objective, S and the gap), where it used to evaluate the whole problem."""
    rng = np.random.RandomState(seed)
    X, y, ts = small_problem(seed=seed, n=15, d=3, k=2, diagonal=diagonal)
    M = _random_metric(rng, X.shape[1], diagonal, 1.0)
    z = tp.triplet_values(ts, M, diagonal)
    M = M * 2.0 / max(np.median(np.abs(z)), 1e-12)  # values around the thresholds
    z = tp.triplet_values(ts, M, diagonal)
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    pick = rng.rand(ts.n_triplets) < 0.7
    status[pick & (z >= 1.0)] = tp.STATUS_R
    status[pick & (z <= 1.0 - GAMMA)] = tp.STATUS_L
    # some screened triplets put where they are off their side
    off = pick & (rng.rand(ts.n_triplets) < loose_share)
    status[off & (z < 1.0)] = tp.STATUS_R
    status[off & (z > 1.0 - GAMMA)] = tp.STATUS_L
    problem = tp.TripletProblem(ts, GAMMA, diagonal, status)
    lam = 0.7
    red = problem.evaluate(M, lam)
    loose = (((status == tp.STATUS_R) & (z < 1.0))
             | ((status == tp.STATUS_L) & (z > 1.0 - GAMMA)))
    idx = np.flatnonzero(loose)
    got = problem.released(red, idx, z[idx], lam)
    full = tp.TripletProblem(ts, GAMMA, diagonal).evaluate(M, lam)
    scale = max(1.0, float(np.abs(full.S).max()))
    np.testing.assert_allclose(got.S, full.S, rtol=0, atol=1e-12 * scale)
    assert got.primal == pytest.approx(full.primal, rel=1e-12, abs=1e-12)
    assert got.dual == pytest.approx(full.dual, rel=1e-10, abs=1e-10 * scale)
    assert got.gap == pytest.approx(full.gap, rel=1e-9, abs=1e-10 * scale)


def _numpy_bounds(z0, zrad, hn, status, s, dist, gamma):
    """The certificate's bounds written with NumPy (the form the compiled pass replaced),
    and the reference screening's bounded sphere rule."""
    from sklearn_safescreen.problems.constants import SCREEN_RTOL
    rad = np.full(z0.size, dist) if zrad is None else abs(s) * zrad + dist
    v = s * z0
    e = rad * hn
    lower, upper = v - e, v + e
    slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + 1.0)
    on_side = (((status == tp.STATUS_R) & (lower > 1.0 + slack))
               | ((status == tp.STATUS_L) & (upper < 1.0 - gamma - slack)))
    return v, rad, on_side


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), with_rad=st.booleans(), with_active=st.booleans(),
       s=st.sampled_from([0.5, 1.0, 1.37, -0.2]))
def test_compiled_bounds_are_the_numpy_ones(seed, with_rad, with_active, s):
    """The certificate's compiled bounds pass (``bounded_values``) and the reference
    screening's bounded sphere rule (``scaled_sphere_screen_rad``) against NumPy: the
    same values and radii, the same triplets left to evaluate (in order), the same
    decisions."""
    from sklearn_safescreen.screening import triplet_bounds as tb

    rng = np.random.RandomState(seed)
    n = 2000
    z0 = rng.uniform(-1.0, 3.0, n)
    hn = rng.uniform(0.1, 2.0, n)
    zrad = np.where(rng.rand(n) < 0.5, rng.uniform(0, 0.05, n), 0.0) if with_rad else None
    status = rng.randint(0, 3, n).astype(np.int8)
    dist = float(rng.uniform(0, 0.05))
    z, rad, exact = tb.bounded_values(z0, zrad, hn, status, s, dist, GAMMA, with_active)
    v, r, on_side = _numpy_bounds(z0, zrad, hn, status, s, dist, GAMMA)
    np.testing.assert_allclose(z, v, rtol=1e-15, atol=0)
    np.testing.assert_allclose(rad, r, rtol=1e-15, atol=0)
    want = np.flatnonzero(~on_side & ((status != tp.STATUS_ACTIVE) | with_active))
    # (a decision within a few units of round-off of its threshold may differ)
    assert np.setxor1d(exact, want).size <= 2
    if zrad is not None:
        scale, radius = abs(s) + 0.1, dist
        got, n_R, n_L = tb.scaled_sphere_screen_rad(z0, zrad, hn, scale, radius, GAMMA,
                                                    status)
        hq, e = scale * z0, (radius + scale * zrad) * hn
        from sklearn_safescreen.problems.constants import SCREEN_RTOL
        lower, upper = hq - e, hq + e
        slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + 1.0)
        r_ = (status == 0) & (lower > 1.0 + slack)
        l_ = (status == 0) & ~r_ & (upper < 1.0 - GAMMA - slack)
        expect = np.where(r_, 2, np.where(l_, 1, status)).astype(np.int8)
        assert np.count_nonzero(got != expect) <= 2
        assert abs(n_R - int(r_.sum())) <= 2 and abs(n_L - int(l_.sum())) <= 2


def test_a_path_walks_with_its_options(monkeypatch):
    """The options a path is given decide its own choices (here: H_L updated whatever
    the set's size) and reach every reduced problem it certifies (the certificate's
    share of pairs); a path given none takes the defaults."""
    _, _, ts = small_problem(seed=0, n=15, d=3, k=2, diagonal=False)
    seen = []
    init = etr.ReducedTriplets.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(self.options)

    monkeypatch.setattr(etr.ReducedTriplets, "__init__", recording_init)
    for options in (EVERY_SHARE, None):
        path = (et.TripletPath(ts, GAMMA, False) if options is None
                else et.TripletPath(ts, GAMMA, False, options))
        seen.clear()
        for alpha in path.critical_alpha * np.array([0.5, 0.3]):
            path.fit(alpha, _settings(), path.new_report())
        want = DEFAULT_OPTIONS if options is None else options
        assert seen and all(o is want for o in seen)
        assert path._updates_hl is (options is not None)


@pytest.mark.parametrize("bad, error", [
    ({"full_pass_share": -0.1}, ValueError), ({"bounds_min_work": float("nan")}, ValueError),
    ({"max_bounds_backoff": 2.5}, TypeError), ({"same_pairs": True}, TypeError),
    ({"hl_update_min_work": "1e6"}, TypeError)])
def test_options_refuse_bad_values(bad, error):
    with pytest.raises(error, match=f"TripletOptions.{next(iter(bad))} must be"):
        TripletOptions(**bad)
