"""Projected gradient on the PSD cone (spec triplet 1.4-1.10, 5.1, P2): loss and
conjugate, weak duality, the stable gap, the closed form above lambda_L, and the optimum
against cvxpy/CLARABEL (full and diagonal metric, smoothed hinge and hinge)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from sklearn_safescreen.problems import triplet_kernels as kn
from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.triplets import build_triplets
from sklearn_safescreen.solvers import psd_gradient as pg


def small_problem(seed=0, n=18, d=3, k=2, diagonal=False):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(n, d) + 0.8 * y[:, None] * rng.randn(1, d)
    return X, y, build_triplets(X, y, k, diagonal)


def cvx_solve(X, ts, lam, gamma, diagonal):
    """Independent solve of the primal (spec 1.5) with CLARABEL."""
    T = ts.indices()
    A = X[T[:, 0]] - X[T[:, 2]]
    B = X[T[:, 0]] - X[T[:, 1]]
    d = X.shape[1]
    if diagonal:
        m = cp.Variable(d, nonneg=True)
        z = (A**2 - B**2) @ m
        reg = cp.sum_squares(m)
    else:
        m = cp.Variable((d, d), PSD=True)
        z = cp.sum(cp.multiply(A @ m, A), axis=1) - cp.sum(cp.multiply(B @ m, B), axis=1)
        reg = cp.sum_squares(m)
    u = cp.pos(1 - z)
    loss = cp.sum(u) if gamma == 0 else cp.sum(cp.huber(u, gamma)) / (2 * gamma)
    prob = cp.Problem(cp.Minimize(loss + lam / 2 * reg))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return m.value, prob.value


def explicit_dual(ts, alpha, lam, gamma, diagonal):
    S = tp.sum_h(ts, alpha, diagonal)
    Sp = tp.project(S, diagonal)
    return -gamma / 2 * alpha @ alpha + alpha.sum() - np.sum(Sp * Sp) / (2 * lam)


def primal(ts, M, lam, gamma, diagonal):
    z = tp.triplet_values(ts, M, diagonal)
    return tp.loss_values(z, gamma).sum() + lam / 2 * np.sum(M * M)


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
@pytest.mark.parametrize("gamma", [0.05, 0.5, 0.0])
def test_optimum_equals_cvxpy(diagonal, gamma):
    X, y, ts = small_problem(2, diagonal=diagonal)
    lam_L, G_pos = tp.closed_form(ts, gamma, diagonal)
    lam = 0.02 * lam_L
    tol = 1e-12 if gamma else 1e-9  # the hinge: dual FISTA, sublinear
    res = pg.solve(tp.TripletProblem(ts, gamma, diagonal), G_pos / lam_L, lam, tol=tol,
                   max_iter=200000)
    assert res.converged
    M_cvx, val = cvx_solve(X, ts, lam, gamma, diagonal)
    P = primal(ts, res.M, lam, gamma, diagonal)
    assert P <= val + 1e-6 * abs(val)
    # strong convexity: ||M - M*||^2 <= 2 gap / lam; CLARABEL is accurate to ~1e-7
    scale = np.linalg.norm(res.M)
    assert np.linalg.norm(res.M - M_cvx) <= 1e-5 * scale
    # and by the dual point: ||M_cvx - M*||^2 <= 2 (P(M_cvx) - D) / lam, CLARABEL's
    # M_cvx being feasible only to ~1e-9
    p_cvx = primal(ts, M_cvx, lam, gamma, diagonal)
    assert np.linalg.norm(res.M - M_cvx) ** 2 <= 4 * (
        max(p_cvx - res.evaluation.dual, 0) + 1e-8 * abs(p_cvx)) / lam


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


def test_compiled_and_numpy_loops_agree_and_active_set_is_exact():
    X, y, ts = small_problem(4, n=30, d=4, k=3)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    lam = 0.01 * lam_L
    out = []
    for compiled, active_set in [(True, False), (False, False), (True, True)]:
        res = pg.solve(tp.TripletProblem(ts, gamma, False), G_pos / lam_L, lam, tol=1e-11,
                       max_iter=100000, compiled=compiled, active_set=active_set)
        assert res.converged
        out.append(res.M)
        # the returned gap is the gap over all active triplets, not the working set
        full = tp.TripletProblem(ts, gamma, False).evaluate(res.M, lam)
        assert full.rel_gap <= 1e-11 * (1 + 1e-6)
    for M in out[1:]:
        assert np.linalg.norm(M - out[0]) <= 1e-5 * np.linalg.norm(out[0])


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


@pytest.mark.parametrize("compiled", [True, False])
def test_converges_far_below_lambda_L(compiled):
    """Regression: with a plain max-of-history acceptance the BB iterates cycled here
    (lambda = lambda_L / 4e4); the SPG sufficient-decrease test converges."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=30, centers=[[0, 0, 0], [1, 1, 1]], random_state=0,
                      n_features=2, cluster_std=0.1)
    X = (X - X.mean(0)) / X.std(0)
    ts = build_triplets(X - X.min(), y, 3)
    lam_L, G_pos = tp.closed_form(ts, 0.05, False)
    lam = 1.0
    res = pg.solve(tp.TripletProblem(ts, 0.05, False), (lam_L + lam) / (2 * lam) * G_pos /
                   lam_L, lam, tol=1e-6, max_iter=5000, compiled=compiled)
    assert res.converged and res.evaluation.rel_gap <= 1e-6


# ------------------------------------------------------- compiled kernels ---
@pytest.mark.parametrize("d", [1, 2, 5, 13, 24, 30])
def test_small_eigensolver_against_numpy(d):
    """The compiled QL eigensolver (d <= 24; LAPACK above) on random, rank-deficient,
    repeated-eigenvalue and zero matrices: orthonormal rows, exact reconstruction, the
    same spectrum as numpy."""
    rng = np.random.RandomState(d)
    L = rng.randn(d, max(d // 2, 1))
    cases = [rng.randn(d, d), L @ L.T, np.eye(d) * 2.0, np.zeros((d, d)),
             np.diag(np.r_[np.ones(d // 2), -np.ones(d - d // 2)]) * 1e-12]
    for A in cases:
        A = A + A.T
        w, W = kn.eigh_rows(np.ascontiguousarray(A))
        scale = max(np.abs(A).max(), 1e-300)
        np.testing.assert_allclose(W @ W.T, np.eye(d), atol=1e-13)
        np.testing.assert_allclose(W.T @ np.diag(w) @ W, A, atol=1e-13 * scale)
        np.testing.assert_allclose(np.sort(w), np.linalg.eigvalsh(A), atol=1e-13 * scale)


@pytest.mark.parametrize("magnitude", [1e-300, 1e-200, 1e200, 1e300])
def test_small_eigensolver_at_extreme_magnitudes(magnitude):
    """Entries whose squares under- or overflow (e.g. the closed form G_+/alpha at a huge
    alpha): the exact power-of-two scaling keeps the decomposition as accurate as at 1."""
    rng = np.random.RandomState(0)
    A = rng.randn(13, 13)
    A = (A + A.T) * magnitude
    w, W = kn.eigh_rows(A)
    np.testing.assert_allclose(W @ W.T, np.eye(13), atol=1e-13)
    np.testing.assert_allclose(np.sort(w) / magnitude, np.linalg.eigvalsh(A / magnitude),
                               atol=1e-12)
    # subnormal entries: the spectrum of a diagonal matrix is exact
    w, W = kn.eigh_rows(np.diag([3e-310, 0.0, 5e-324, 1e-310]))
    np.testing.assert_array_equal(np.sort(w), [0.0, 5e-324, 1e-310, 3e-310])


def test_psd_parts_are_psd_and_add_up():
    rng = np.random.RandomState(0)
    for _ in range(20):
        A = rng.randn(13, 13)
        P, sq_neg = kn.sym_part(A, 1.0)
        N, sq_pos = kn.sym_part(A, -1.0)
        B = 0.5 * (A + A.T)
        np.testing.assert_allclose(P + N, B, atol=1e-13)
        assert np.linalg.eigvalsh(P).min() >= -1e-13 and np.linalg.eigvalsh(N).max() <= 1e-13
        assert sq_neg == pytest.approx(np.sum(N * N)) and sq_pos == pytest.approx(np.sum(P * P))
        np.testing.assert_allclose(P, tp.psd_split(B, False)[0], atol=1e-13)


def test_projection_gap_is_a_valid_gap_and_exact_at_the_optimum():
    """The gap against the dual point -B_-/eta of the projection's argument: at least
    P - D(alpha(M), -S_-) (the best dual point) at any PSD M and any step, hence an
    upper bound on P - P*; equal to it at the optimum; psd_parts = both sym_parts."""
    X, y, ts = small_problem(3, d=3)
    lam, gamma = 2.0, 0.05
    prob = tp.TripletProblem(ts, gamma, False)
    Mstar = pg.solve(prob, np.eye(3), lam, tol=1e-13, max_iter=20000).M
    Pstar = primal(ts, Mstar, lam, gamma, False)
    rng = np.random.RandomState(0)
    for M in [Mstar] + [(lambda L: L @ L.T)(rng.randn(3, 2)) for _ in range(6)]:
        ev = prob.evaluate(M, lam)
        for eta in [0.01 / lam, 0.5 / lam, 1.0 / lam, 5.0 / lam]:
            B = M - eta * ev.grad
            P_plus, B_neg = kn.psd_parts(B)
            np.testing.assert_allclose(P_plus, kn.sym_part(B, 1.0)[0], atol=1e-14)
            np.testing.assert_allclose(B_neg, kn.sym_part(B, -1.0)[0], atol=1e-14)
            gap = kn.projection_gap(M, ev.S, B_neg, eta, lam)
            assert gap >= ev.gap * (1 - 1e-9) - 1e-12
            assert gap >= ev.primal - Pstar - 1e-9
            if M is Mstar:
                assert gap == pytest.approx(ev.gap, rel=1e-6, abs=1e-10)


def test_pair_forms_and_laplacian_sum_in_both_layouts():
    rng = np.random.RandomState(1)
    diff = rng.randn(300, 7)
    Q = rng.randn(7, 7)
    Q = Q + Q.T
    w = rng.randn(300) * (rng.rand(300) < 0.5)  # zero weights are skipped
    Phi = kn.build_phi(diff)
    T, T2, D1, D2 = np.empty((300, 7)), np.empty((300, 7)), np.empty(300), np.empty(300)
    s = np.empty(28)
    kn.pair_forms(diff, Phi, True, Q, T, D1)
    kn.pair_forms(diff, Phi, False, Q, T, D2)
    want = np.einsum("ij,jk,ik->i", diff, Q, diff)
    np.testing.assert_allclose(D1, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(D2, want, rtol=1e-12, atol=1e-12)
    S_want = (diff * w[:, None]).T @ diff
    for usev in (True, False):
        S = kn.laplacian_sum(diff, Phi, usev, w, T, T2, s)
        np.testing.assert_allclose(S, S_want, rtol=1e-12, atol=1e-12)
        assert np.array_equal(S, S.T)
    assert kn.use_vech(100, 13) and not kn.use_vech(10**5, 13)


def test_reduced_problem_construction_and_certificate_pass():
    X, y, ts = small_problem(6, n=30, d=3, k=3)
    rng = np.random.RandomState(0)
    status = rng.choice([0, 1, 2], ts.n_triplets).astype(np.int8)
    prob = tp.TripletProblem(ts, 0.05, False, status)
    active = np.flatnonzero(status == 0)
    assert np.array_equal(prob.work, active) and prob.n_active == active.size
    L = np.flatnonzero(status == 1)
    np.testing.assert_allclose(prob.HL, tp.sum_h(ts, np.ones(L.size), False, L), atol=1e-12)
    assert prob.nL == L.size
    # compact pairs: the same values as through all pairs
    M = np.eye(3) + 0.1
    np.testing.assert_allclose(prob.values(M), tp.triplet_values(ts, M, False, active))
    D = kn.full_pair_forms(ts.diff, M)
    z, loss, on_side = kn.certificate_pass(D, ts.pos, ts.neg, status, 0.05)
    np.testing.assert_allclose(z, tp.triplet_values(ts, M, False))
    assert loss == pytest.approx(tp.loss_values(z, 0.05).sum(), rel=1e-12)
    assert loss == pytest.approx(kn.loss_sum(z, 0.05), rel=1e-12)
    assert on_side == bool(np.all(z[status == 2] >= 1) and np.all(z[status == 1] <= 0.95))
    # a status consistent with M: every screened triplet on its side
    consistent = np.where(z > 1, 2, np.where(z < 0.95, 1, 0)).astype(np.int8)
    assert kn.certificate_pass(D, ts.pos, ts.neg, consistent, 0.05)[2]


def test_working_arrays_follow_the_status_after_the_compiled_loop():
    """Decisions of the compiled loop (apply_screened) leave the working arrays to be
    rebuilt on use: every consumer then sees exactly the active triplets."""
    X, y, ts = small_problem(0, n=30, d=3, k=3)
    gamma = 0.05
    lam = 0.02 * tp.closed_form(ts, gamma, False)[0]
    prob = tp.TripletProblem(ts, gamma, False)
    res = pg.solve(prob, np.eye(3), lam, tol=1e-8, max_iter=5000,
                   callback=_InnerScreening())
    assert prob.n_active < ts.n_triplets  # something was screened inside the loop
    active = np.flatnonzero(prob.status == 0)
    assert np.array_equal(prob.work, active)
    np.testing.assert_allclose(prob.values(res.M), tp.triplet_values(ts, res.M, False, active))
    ev = prob.evaluate(res.M, lam)
    fresh = tp.TripletProblem(ts, gamma, False, prob.status).evaluate(res.M, lam)
    assert ev.primal == pytest.approx(fresh.primal, rel=1e-12)
    assert ev.gap == pytest.approx(fresh.gap, rel=1e-9, abs=1e-12)
    # solving the same problem again (a certificate retry) starts from the rebuilt arrays
    again = pg.solve(prob, res.M, lam, tol=1e-10, max_iter=5000)
    assert again.evaluation.z.size == prob.n_active


class _InnerScreening(pg.ScreeningHook):
    """A hook offering the compiled DGB + PGB sphere rule (as SafeMetricLearner's)."""

    compiled = (False, True, True)

    def __call__(self, problem, ev):  # pragma: no cover - the compiled loop is used
        raise AssertionError("the compiled loop should have run the rule")
