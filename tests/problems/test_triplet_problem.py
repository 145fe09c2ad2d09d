"""The triplet problem (problems/triplet_problem.py): loss and conjugate, weak duality
and the stable gap, the closed form above the critical value, the reduced problem."""

from __future__ import annotations

import numpy as np
import pytest
from _triplet_models import explicit_dual, primal, small_problem

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.solvers import psd_gradient as pg


@pytest.mark.parametrize("gamma", [0.0, 0.05, 0.5])
def test_loss_conjugate_and_fenchel_young(gamma):
    z = np.linspace(-2, 2.5, 91)
    loss = tp.loss_values(z, gamma)
    alpha = tp.dual_alpha(z, gamma)
    # Fenchel-Young equality at alpha = -l'(z): l(z) + l*(-alpha) + alpha z = 0
    conj = gamma / 2 * alpha**2 - alpha
    assert np.allclose(loss + conj + alpha * z, 0.0, atol=1e-14)
    # l*(-a) = sup_x (-a x - l(x)) checked on a grid
    xs = np.linspace(-5, 5, 20001)
    for a in [0.0, 0.3, 1.0]:
        sup = np.max(-a * xs - tp.loss_values(xs, gamma))
        assert sup == pytest.approx(gamma / 2 * a * a - a, abs=1e-6)
    if gamma > 0:  # derivative by finite differences
        h = 1e-7
        num = (tp.loss_values(z + h, gamma) - tp.loss_values(z - h, gamma)) / (2 * h)
        assert np.allclose(-num, alpha, atol=1e-5)


@pytest.mark.parametrize("diagonal", [False, True])
def test_weak_duality_and_stable_gap(diagonal):
    X, y, ts = small_problem(1, diagonal=diagonal)
    rng = np.random.RandomState(0)
    lam, gamma = 3.0, 0.05
    prob = tp.TripletProblem(ts, gamma, diagonal)
    for _ in range(5):
        if diagonal:
            M = np.abs(rng.randn(3))
        else:
            L = rng.randn(3, 3)
            M = L @ L.T
        M *= rng.choice([0.01, 0.1, 1.0])
        P = primal(ts, M, lam, gamma, diagonal)
        alpha = rng.rand(ts.n_triplets)
        assert P >= explicit_dual(ts, alpha, lam, gamma, diagonal) - 1e-9
        ev = prob.evaluate(M, lam)
        assert ev.primal == pytest.approx(P, rel=1e-12)
        a = tp.dual_alpha(tp.triplet_values(ts, M, diagonal), gamma)
        D = explicit_dual(ts, a, lam, gamma, diagonal)
        assert ev.dual == pytest.approx(D, rel=1e-12, abs=1e-12)
        assert ev.gap == pytest.approx(P - D, rel=1e-9, abs=1e-10)
        assert ev.gap >= 0


@pytest.mark.parametrize("diagonal", [False, True])
def test_closed_form_above_lambda_L(diagonal):
    X, y, ts = small_problem(3, diagonal=diagonal)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, diagonal)
    for lam in [lam_L, 1.01 * lam_L, 10 * lam_L]:
        start = np.eye(3) if not diagonal else np.ones(3)
        res = pg.solve(tp.TripletProblem(ts, gamma, diagonal), start, lam, tol=1e-13,
                       max_iter=100000)
        assert np.linalg.norm(res.M - G_pos / lam) <= 1e-6 * np.linalg.norm(G_pos / lam)
        # the closed form is exactly optimal: zero gap
        ev = tp.TripletProblem(ts, gamma, diagonal).evaluate(G_pos / lam, lam)
        assert ev.gap <= 1e-12 * max(abs(ev.primal), 1.0)
    # just below lambda_L the closed form is no longer optimal
    ev = tp.TripletProblem(ts, gamma, diagonal).evaluate(G_pos / (0.5 * lam_L), 0.5 * lam_L)
    assert ev.rel_gap > 1e-8


def test_reduced_problem_lemma_1():
    """Screening the triplets that are in R* / L* (from an exact solve) leaves the
    optimum unchanged, and the full objective equals the reduced one there."""
    X, y, ts = small_problem(5, n=30, d=3, k=3)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    lam = 0.05 * lam_L
    full = pg.solve(tp.TripletProblem(ts, gamma, False), G_pos / lam_L, lam, tol=1e-13,
                    max_iter=200000)
    z = tp.triplet_values(ts, full.M, False)
    r = np.sqrt(2 * full.evaluation.gap / lam) * ts.hnorm
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    status[z - r > 1] = tp.STATUS_R
    status[z + r < 1 - gamma] = tp.STATUS_L
    assert (status > 0).sum() > 0.5 * ts.n_triplets
    red = tp.TripletProblem(ts, gamma, False, status)
    res = pg.solve(red, G_pos / lam_L, lam, tol=1e-13, max_iter=200000)
    assert np.linalg.norm(res.M - full.M) <= 1e-6 * np.linalg.norm(full.M)
    ev_red = red.evaluate(res.M, lam)
    assert ev_red.primal == pytest.approx(primal(ts, res.M, lam, gamma, False), rel=1e-12)




@pytest.mark.parametrize("diagonal", [False, True])
def test_kept_active_list_follows_the_status(diagonal):
    """The active list and its working arrays are kept between the active-set
    heuristic's checks: returning to them gives the arrays of a fresh compaction, and
    after screening (in Python or recorded from the compiled loop) they are those of
    the new status."""
    X, y, ts = small_problem(2, n=30, d=3, k=3, diagonal=diagonal)
    rng = np.random.RandomState(0)
    prob = tp.TripletProblem(ts, 0.05, diagonal, rng.randint(0, 3, ts.n_triplets).astype(
        np.int8))
    M = np.eye(3) if not diagonal else np.ones(3)

    def check():
        active = np.flatnonzero(prob.status == tp.STATUS_ACTIVE)
        assert np.array_equal(prob.active, active) and prob.n_active == active.size
        prob.set_work(active[::2])  # a working subset, then back to the active list
        prob.set_work(prob.active)
        fresh = tp.TripletProblem(ts, 0.05, diagonal, prob.status)
        for name in ("work", "cpos", "cneg", "cdiff"):
            assert np.array_equal(getattr(prob, name), getattr(fresh, name)), name
        # (H_L summed as the triplets were screened differs in round-off from the fresh
        # problem's; the evaluation is compared at the same H_L)
        fresh.HL = prob.HL.copy()
        ev, want = prob.evaluate(M, 2.0), fresh.evaluate(M, 2.0)
        assert np.array_equal(ev.z, want.z) and ev.gap == want.gap

    check()
    work = prob.active
    prob.screen(work[:3], work[3:5])  # Python screening from the active list
    check()
    prob.set_work(prob.active[1::2])
    prob.screen(prob.work[:2], prob.work[2:3])  # from a working subset
    check()
    active = prob.active  # as the compiled loop records its decisions
    prob.apply_screened(active[:2], active[2:4], prob.HL, prob.nL + 2)
    check()


@pytest.mark.parametrize("diagonal", [False, True])
def test_extended_evaluation_equals_the_evaluation_over_both(diagonal):
    """An evaluation over part of the active triplets, completed by the others' values
    (``extended``), is the evaluation over all of them: objective, S, dual and gap."""
    rng = np.random.RandomState(0)
    X, y, ts = small_problem(2, n=24, d=4, k=3, diagonal=diagonal)
    gamma, lam = 0.05, 0.5
    status = rng.randint(0, 3, ts.n_triplets).astype(np.int8)
    status[rng.rand(ts.n_triplets) < 0.5] = tp.STATUS_ACTIVE
    A = rng.rand(4) if diagonal else (lambda B: B @ B.T)(rng.randn(4, 4))
    z_all = tp.triplet_values(ts, A, diagonal)
    A = A * 2.0 / np.median(np.abs(z_all))  # values on both sides of the thresholds
    full = tp.TripletProblem(ts, gamma, diagonal, status)
    want = full.evaluate(A, lam)
    part = tp.TripletProblem(ts, gamma, diagonal, status)
    active = part.active
    inside = rng.rand(active.size) < 0.5
    part.set_work(active[inside])
    ev = part.evaluate(A, lam)
    out = active[~inside]
    z_out = tp.triplet_values(ts, A, diagonal, out)
    assert (tp.dual_alpha(z_out, gamma) > 0).any() and (z_out > 1).any()
    got = part.extended(ev, out, z_out, lam)
    assert got.primal == pytest.approx(want.primal, rel=1e-12)
    assert got.dual == pytest.approx(want.dual, rel=1e-10, abs=1e-10)
    assert got.gap == pytest.approx(want.gap, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(got.S, want.S, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.grad, want.grad, rtol=1e-12, atol=1e-12)
    assert np.array_equal(got.z, ev.z)


def test_pair_values_over_many_pairs_are_summed_block_by_block():
    """Past PAIR_BLOCK pairs the full metric's pair values are computed block by block
    (no temporary as large as the pairs): the values of the direct product, for sizes
    on both sides of the blocks' edges."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 5))
    Q = A @ A.T - 2.0 * np.eye(5)  # any symmetric Q
    for n in (3, tp.PAIR_BLOCK, tp.PAIR_BLOCK + 1, 2 * tp.PAIR_BLOCK + 37):
        diff = rng.standard_normal((n, 5))
        np.testing.assert_allclose(tp.pair_values(diff, Q, False),
                                   np.einsum("ij,jk,ik->i", diff, Q, diff),
                                   rtol=1e-12, atol=1e-12)
