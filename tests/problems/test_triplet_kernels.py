"""The compiled kernels of the triplet problem (problems/_triplet_fast.pyx and
_triplet_reduce_fast.pyx): the small eigensolver, PSD parts, the projection gap, pair
forms and Laplacian sums, the reduced problem's construction and the certificate pass."""

from __future__ import annotations

import numpy as np
import pytest
from _triplet_models import primal, small_problem

from sklearn_safescreen.problems import _eigh_fast as eig
from sklearn_safescreen.problems import _triplet_fast as kn
from sklearn_safescreen.problems import _triplet_reduce_fast as rk
from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.solvers import psd_gradient as pg


@pytest.mark.parametrize("d", [1, 2, 5, 13, 24, 32, 40])
def test_small_eigensolver_against_numpy(d):
    """The compiled QL eigensolver (d <= 32; LAPACK above) on random, rank-deficient,
    repeated-eigenvalue and zero matrices: orthonormal rows, exact reconstruction, the
    same spectrum as numpy."""
    rng = np.random.RandomState(d)
    L = rng.randn(d, max(d // 2, 1))
    cases = [rng.randn(d, d), L @ L.T, np.eye(d) * 2.0, np.zeros((d, d)),
             np.diag(np.r_[np.ones(d // 2), -np.ones(d - d // 2)]) * 1e-12]
    for A in cases:
        A = A + A.T
        w, W = eig.eigh_rows(np.ascontiguousarray(A))
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
    w, W = eig.eigh_rows(A)
    np.testing.assert_allclose(W @ W.T, np.eye(13), atol=1e-13)
    np.testing.assert_allclose(np.sort(w) / magnitude, np.linalg.eigvalsh(A / magnitude),
                               atol=1e-12)
    # subnormal entries: the spectrum of a diagonal matrix is exact
    w, W = eig.eigh_rows(np.diag([3e-310, 0.0, 5e-324, 1e-310]))
    np.testing.assert_array_equal(np.sort(w), [0.0, 5e-324, 1e-310, 3e-310])


def test_psd_parts_are_psd_and_add_up():
    rng = np.random.RandomState(0)
    for _ in range(20):
        A = rng.randn(13, 13)
        P, sq_neg = eig.sym_part(A, 1.0)
        N, sq_pos = eig.sym_part(A, -1.0)
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
            P_plus, B_neg = eig.psd_parts(B)
            np.testing.assert_allclose(P_plus, eig.sym_part(B, 1.0)[0], atol=1e-14)
            np.testing.assert_allclose(B_neg, eig.sym_part(B, -1.0)[0], atol=1e-14)
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


@pytest.mark.parametrize("d", [3, 40])
def test_pair_forms_and_laplacian_sum_across_blocks(d):
    """The matrix-product forms take the pairs a block at a time (a workspace of
    ``block_rows`` rows): the same pair forms and sums as the direct products over more
    pairs than a block, with the blocks' edges inside runs of zero weights and between
    them, through every face (the kernels, ``gram``, the solver's evaluation)."""
    rng = np.random.RandomState(d)
    block = kn.block_rows(10**9, d)
    n = 2 * block + 37
    assert kn.block_rows(n, d) == block < n and kn.block_rows(5, d) == 5
    diff = rng.randn(n, d)
    Q = rng.randn(d, d)
    Q = Q + Q.T
    w = rng.randn(n) * (rng.rand(n) < 0.3)
    w[block - 50:block + 50] = 0.0  # a block edge among zero weights
    T, T2 = np.empty((block, d)), np.empty((block, d))
    D = np.empty(n)
    none = np.empty((1, 1))
    kn.pair_forms(diff, none, False, Q, T, D)
    np.testing.assert_allclose(D, np.einsum("ij,jk,ik->i", diff, Q, diff), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(kn.full_pair_forms(diff, Q), D)
    S_want = (diff * w[:, None]).T @ diff
    S = kn.laplacian_sum(diff, none, False, w, T, T2, np.empty(1))
    np.testing.assert_allclose(S, S_want, rtol=1e-11, atol=1e-11 * np.abs(S_want).max())
    assert np.array_equal(S, S.T)
    np.testing.assert_allclose(rk.gram(diff, w), S_want, rtol=1e-11,
                               atol=1e-11 * np.abs(S_want).max())
    np.testing.assert_allclose(tp.aggregate(diff, w, False), S_want, rtol=1e-11,
                               atol=1e-11 * np.abs(S_want).max())
    with pytest.raises(ValueError, match="workspace too small"):
        kn.pair_forms(diff, none, False, Q, T[:block - 1], D)
    with pytest.raises(ValueError, match="workspace too small"):
        kn.laplacian_sum(diff, none, False, w, T, np.empty((block, d - 1)), np.empty(1))
    with pytest.raises(ValueError, match="one weight per row"):
        rk.gram(diff, w[:-1])


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
    # the pair forms and the pass in one call: the same values bit for bit, for both
    # losses and every kind of status (a wrong side of either kind is caught)
    for gamma in (0.05, 0.5, 0.0):
        for st in (status, consistent, np.zeros_like(status)):
            want = kn.certificate_pass(D, ts.pos, ts.neg, st, gamma)
            got = kn.certificate(ts.diff, ts.pos, ts.neg, st, M, gamma)
            assert np.array_equal(got[0], want[0]) and got[1:] == want[1:]
    for s, t in ((2, np.argmin(z)), (1, np.argmax(z))):
        wrong = consistent.copy()
        wrong[t] = s
        assert not kn.certificate(ts.diff, ts.pos, ts.neg, wrong, M, 0.05)[2]
    # the status split's H_L, asked for (full metric) or not
    split = rk.status_split(status, ts.pos, ts.neg, ts.diff, True)
    np.testing.assert_allclose(split[6], tp.sum_h(ts, np.ones(L.size), False, L),
                               atol=1e-12)
    assert split[5] == L.size and rk.status_split(status, ts.pos, ts.neg, ts.diff)[6] is None




def test_evaluation_with_a_kept_scratch_buffer_is_bit_identical():
    """``evaluate_full`` with the caller's scratch buffer (reused between evaluations of
    different sizes, stale contents, too small) gives the values of fresh buffers."""
    scratch = np.full(kn.evaluate_scratch_size(400, 5), np.nan)
    for seed, d in [(0, 5), (1, 3), (2, 5)]:
        X, y, ts = small_problem(seed, n=30, d=d, k=3)
        status = np.random.RandomState(seed).randint(0, 3, ts.n_triplets).astype(np.int8)
        prob = tp.TripletProblem(ts, 0.05, False, status)
        M = np.eye(d) + 0.1
        args = (prob.cdiff, prob.cpos, prob.cneg, prob.HL, float(prob.nL), 0.05, 2.0, M)
        z0, w0 = np.empty(prob.work.size), np.empty(prob.cdiff.shape[0])
        z1, w1 = z0.copy(), w0.copy()
        want = kn.evaluate_full(*args, z0, w0)
        for buf in (scratch, np.empty(3)):  # kept (stale), and too small
            got = kn.evaluate_full(*args, z1, w1, buf)
            assert got[:3] == want[:3]
            assert np.array_equal(got[3], want[3]) and np.array_equal(got[4], want[4])
            assert np.array_equal(z1, z0)


def _components(M):
    """The fitted metric's rows as NumPy computes them (the reference)."""
    M = 0.5 * (M + M.T)
    w, W = eig.eigh_rows(M)
    order = np.argsort(w)[::-1]
    C = W[order] * np.sqrt(np.maximum(w[order], 0.0))[:, None]
    # each row's entry of largest magnitude (the first of equal ones) made positive
    largest = W[order][np.arange(len(w)), np.argmax(np.abs(W[order]), axis=1)]
    return M, np.where(largest < 0.0, -1.0, 1.0)[:, None] * C


def test_metric_factor_is_numpys_bit_for_bit_or_declines():
    """One compiled call for the learned metric's symmetric part and rows: the bits of
    the NumPy computation when the eigenvalues are distinct, non-zero and finite
    (non-symmetric input and negative eigenvalues included); ``None`` (NumPy decides)
    on ties, exact zeros and NaN."""
    rng = np.random.RandomState(0)
    n_fast = 0
    for d in (1, 2, 4, 13, 33):
        for _ in range(20):
            A = rng.randn(d, d)
            for M in (A @ A.T, A + 0.1 * rng.randn(d, d), A):
                got = kn.metric_factor(M)
                if got is None:
                    continue
                n_fast += 1
                want = _components(M)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert n_fast > 250
    for M in (np.eye(4), np.zeros((3, 3)), np.diag([2.0, 0.0, 1.0]),
              np.diag([1.0, np.nan, 2.0])):
        assert kn.metric_factor(M) is None


def test_rows_kernels_equal_the_products_with_the_copied_rows():
    # a diagonal problem reads its working pairs in place: the same numbers as the
    # products with a compact copy, and rows of zero weight skipped
    rng = np.random.default_rng(0)
    P = rng.standard_normal((50, 7)) ** 2
    rows = np.sort(rng.choice(50, 20, replace=False)).astype(np.int32)
    q, w = rng.standard_normal(7), rng.standard_normal(20)
    w[::3] = 0.0
    # (summed in another order than BLAS: equal up to the round-off of |P| |q|)
    np.testing.assert_allclose(rk.rows_dot(P, rows, q), P[rows] @ q, rtol=1e-14,
                               atol=1e-14 * (P[rows] @ np.abs(q)).max())
    # four rows at a time or one: a row's value does not depend on the rows around it
    for d in (7, 21):
        P2, q2 = rng.standard_normal((50, d)) ** 2, rng.standard_normal(d)
        for start in range(4):
            np.testing.assert_array_equal(rk.rows_dot(P2, rows[start:], q2),
                                          rk.rows_dot(P2, rows, q2)[start:])
    np.testing.assert_array_equal(tp.pair_values(P, q, True)[rows], rk.rows_dot(P, rows, q))
    np.testing.assert_allclose(rk.rows_weighted_sum(P, rows, w), w @ P[rows], rtol=1e-13)
    status = rng.integers(0, 3, 30).astype(np.int8)
    pos, neg = (rng.integers(0, 50, 30).astype(np.int32) for _ in range(2))
    copied = rk.status_split(status, pos, neg, P)
    indexed = rk.status_split(status, pos, neg, P, False, True)
    for a, b in zip(copied[:3], indexed[:3], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(P[indexed[3]], copied[3])
    work = copied[0][::2].copy()
    np.testing.assert_array_equal(P[rk.compact_work(pos, neg, P, work, True)[2]],
                                  rk.compact_work(pos, neg, P, work)[2])


def test_rows_weighted_sums_in_one_pass_equal_the_two_sums():
    """The working pairs' Laplacian sum (the same numbers as ``rows_weighted_sum``) and
    the sum over every pair's weight, in one pass."""
    rng = np.random.default_rng(1)
    P = rng.standard_normal((60, 9)) ** 2
    rows = np.sort(rng.choice(60, 25, replace=False)).astype(np.int32)
    w, w_all = rng.standard_normal(25), rng.standard_normal(60)
    w[::4] = 0.0
    w_all[rng.random(60) < 0.4] = 0.0
    part, total = rk.rows_weighted_sums(P, rows, w, w_all)
    np.testing.assert_array_equal(part, rk.rows_weighted_sum(P, rows, w))
    np.testing.assert_allclose(total, w_all @ P, rtol=1e-13)
    empty = rk.rows_weighted_sums(P, rows[:0], w[:0], np.zeros(60))
    assert not empty[0].any() and not empty[1].any()


def test_diagonal_problem_sums_hl_with_its_first_evaluation(monkeypatch):
    """A diagonal reduced problem makes no pass over all pairs for H_L of its own: its
    first evaluation sums it with S. H_L and the evaluation are those of the sum."""
    X, y, ts = small_problem(4, n=30, d=5, k=3, diagonal=True)
    rng = np.random.RandomState(0)
    status = rng.randint(0, 3, ts.n_triplets).astype(np.int8)
    L = np.flatnonzero(status == tp.STATUS_L)
    want_HL = tp.sum_h(ts, np.ones(L.size), True, L)
    M = rng.rand(5)
    reference = tp.TripletProblem(ts, 0.05, True, status, HL=want_HL).evaluate(M, 0.3)
    calls = []
    monkeypatch.setattr(tp, "aggregate", lambda *a: calls.append(a) or tp_aggregate(*a))
    problem = tp.TripletProblem(ts, 0.05, True, status)
    ev = problem.evaluate(M, 0.3)
    assert not calls
    np.testing.assert_allclose(problem.HL, want_HL, rtol=1e-12, atol=1e-12)
    assert ev.primal == pytest.approx(reference.primal, rel=1e-12)
    assert ev.gap == pytest.approx(reference.gap, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(ev.S, reference.S, rtol=1e-12, atol=1e-12)
    # read before any evaluation, it is summed alone
    early = tp.TripletProblem(ts, 0.05, True, status)
    np.testing.assert_allclose(early.HL, want_HL, rtol=1e-12, atol=1e-12)
    # triplets screened to L later join H_L with the next evaluation's S, as one pass
    new_L = np.flatnonzero(problem.status == tp.STATUS_ACTIVE)[::3]
    problem.screen(np.empty(0, dtype=np.int64), new_L)
    status2 = status.copy()
    status2[new_L] = tp.STATUS_L
    fresh = tp.TripletProblem(ts, 0.05, True, status2)
    ev2, want2 = problem.evaluate(M, 0.3), fresh.evaluate(M, 0.3)
    assert not calls
    np.testing.assert_allclose(problem.HL, fresh.HL, rtol=1e-12, atol=1e-12)
    assert ev2.primal == pytest.approx(want2.primal, rel=1e-12)
    assert ev2.gap == pytest.approx(want2.gap, rel=1e-9, abs=1e-12)


tp_aggregate = tp.aggregate


def test_hl_from_scratch_is_summed_in_blocks():
    """H_L summed from scratch a block of pairs at a time (bounded temporaries,
    whatever the number of pairs) equals the direct product over every pair of
    non-zero weight, to round-off, with more pairs of non-zero weight than a block
    holds and a run of zero weight first."""
    rng = np.random.RandomState(5)
    d = 40
    block = kn.block_rows(10**9, d)
    n_pairs = 2 * block + 5
    n = 10 * n_pairs
    P = rng.randn(n_pairs, d)
    pos = rng.randint(0, n_pairs, n).astype(np.int32)
    neg = rng.randint(0, n_pairs, n).astype(np.int32)
    status = rng.choice([0, 1, 2], n, p=[0.1, 0.6, 0.3]).astype(np.int8)
    first = 100  # the first pairs without weight
    status[(pos < first) | (neg < first)] = 0
    wL, nL, HL = rk.status_split(status, pos, neg, P, True)[4:]
    assert nL == np.count_nonzero(status == 1) and np.all(wL[:first] == 0)
    assert np.count_nonzero(wL) > block  # (the rest spans more than a block)
    direct = (P * wL[:, None]).T @ P
    np.testing.assert_allclose(HL, direct, rtol=1e-12, atol=1e-12 * np.abs(direct).max())
    assert np.array_equal(HL, HL.T)


def test_every_pair_used_is_read_in_place_and_read_only():
    """A problem whose triplets use every pair (a step without screening) reads the
    pairs in place instead of copying them in the same order: the same values, the
    same memory, read-only (a write would change the triplet set); a subset of the
    pairs is a copy, as before."""
    rng = np.random.RandomState(3)
    P = rng.randn(20, 4)
    pos = np.arange(20, dtype=np.int32)
    neg = np.arange(19, -1, -1).astype(np.int32)
    status = np.zeros(20, dtype=np.int8)
    for cdiff in (rk.status_split(status, pos, neg, P)[3],
                  rk.compact_work(pos, neg, P, np.arange(20, dtype=np.int32))[2]):
        assert np.shares_memory(cdiff, P) and np.array_equal(cdiff, P)
        assert not cdiff.flags.writeable and P.flags.writeable
    status[[0, 19]] = 2  # pairs 0 and 19 no longer used
    cdiff = rk.status_split(status, pos, neg, P)[3]
    assert not np.shares_memory(cdiff, P) and np.array_equal(cdiff, P[1:19])
