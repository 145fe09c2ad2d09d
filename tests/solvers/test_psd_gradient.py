"""Projected gradient on the PSD cone (solvers/psd_gradient.py): the optimum against
cvxpy/CLARABEL (full and diagonal metric, smoothed hinge and hinge), the compiled and
NumPy loops, convergence far below the critical value, the compiled loop's screening."""

from __future__ import annotations

import numpy as np
import pytest
from _triplet_models import cvx_solve, primal, small_problem

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.triplets import build_triplets
from sklearn_safescreen.solvers import psd_gradient as pg


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


@pytest.mark.parametrize("screening", [False, True])
def test_a_reduced_problem_hands_the_solver_its_pair_indices(screening):
    """A full-metric reduced problem does not copy its pairs up front: the compiled loop
    gathers them from the set through their indices into its own copy, with the
    results of a solve on the copied pairs bit for bit; the copy is made when first
    read (``cdiff``), and not at all by a solve; a bad index is refused."""
    ts = small_problem(2, n=40, d=4, k=3)[2]
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    rng = np.random.RandomState(0)
    status = _status(ts, rng, 0.6)
    hook = _InnerScreening() if screening else None
    lazy = tp.TripletProblem(ts, gamma, False, status)
    work, cpos, cneg, pairs, rows = lazy.solver_pairs
    assert pairs is ts.diff and rows.size == lazy.n_pairs_used < ts.n_pairs
    copied = tp.TripletProblem(ts, gamma, False, status)
    np.testing.assert_array_equal(copied.cdiff, ts.diff[rows])  # (read: copied now)
    assert copied.solver_pairs[4] is None and copied.solver_pairs[3] is copied.cdiff
    results = [pg.solve(p, G_pos / lam_L, 0.05 * lam_L, tol=1e-9, max_iter=500,
                        callback=hook, workspace=pg.SpgWorkspace())
               for p in (lazy, copied)]
    # (no copy made by the solve; screening changed the status, rebuilt when read)
    assert (lazy._pair_rows is None) == screening
    assert results[0].n_iter == results[1].n_iter > 1
    for name in ("M", "z", "primal", "gap"):
        assert np.array_equal(getattr(results[0].evaluation, name),
                              getattr(results[1].evaluation, name)), name
    assert np.array_equal(lazy.status, copied.status)
    # every pair used: the set's pairs themselves, in place and read-only
    whole = tp.TripletProblem(ts, gamma, False)
    assert whole.solver_pairs[4] is None and np.shares_memory(whole.cdiff, ts.diff)
    assert not whole.cdiff.flags.writeable
    bad = rows.copy()
    bad[0] = ts.n_pairs
    with pytest.raises(ValueError, match="out of range"):
        pg.kn.spg(ts.diff, cpos, cneg, ts.hnorm, work, lazy.HL, float(lazy.nL), gamma,
                  0.05 * lam_L, G_pos / lam_L, 1.0, 5, 1e-9, 10, False, False, False,
                  False, None, bad)


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


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("start", ["far", "near"])
def test_hl_after_the_loops_screening_is_the_sum_of_its_l_triplets(seed, start):
    """The compiled loop adds the triplets it screens to L into H_L either directly
    (their own sum) or, where they outnumber the triplets that stay, as S less the
    staying triplets' weighted sum: either way H_L is the sum of H_t over L (to
    round-off), and so are the objective and gap. ``far``: a start from the closed form,
    whose first check screens most triplets at once; ``near``: a start near the optimum,
    from an already reduced status."""
    X, y, ts = small_problem(seed, n=40, d=4, k=3)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    lam = 0.05 * lam_L
    status = None
    M0 = G_pos / lam_L
    if start == "near":
        M0 = pg.solve(tp.TripletProblem(ts, gamma, False), M0, lam, tol=1e-3,
                      max_iter=5000).M
        status = _status(ts, np.random.RandomState(seed), 0.8)
    prob = tp.TripletProblem(ts, gamma, False, status)
    n_active = prob.n_active
    res = pg.solve(prob, M0, lam, tol=1e-9, max_iter=5000, callback=_InnerScreening(),
                   interval=2)
    assert prob.n_active < n_active
    fresh = tp.TripletProblem(ts, gamma, False, prob.status)
    scale = np.abs(fresh.HL).max() + 1.0
    np.testing.assert_allclose(prob.HL, fresh.HL, rtol=0, atol=1e-12 * scale)
    ev = fresh.evaluate(res.M, lam)
    assert res.evaluation.primal == pytest.approx(ev.primal, rel=1e-12)


class _InnerScreening(pg.ScreeningHook):
    """A hook offering the compiled DGB + PGB sphere rule (as SafeMetricLearner's)."""

    compiled = (False, True, True)

    def __call__(self, problem, ev):  # pragma: no cover - the compiled loop is used
        raise AssertionError("the compiled loop should have run the rule")


def _status(ts, rng, active_fraction):
    """A reduced problem's status: ``active_fraction`` of the triplets active, the
    others split between R and L (any split is a reduced problem the solver accepts)."""
    status = rng.randint(1, 3, ts.n_triplets).astype(np.int8)
    status[rng.rand(ts.n_triplets) < active_fraction] = tp.STATUS_ACTIVE
    return status


def test_kept_workspace_gives_the_results_of_fresh_buffers_bit_for_bit():
    """The compiled loop's workspace kept across solves whose sizes grow and shrink
    (working triplets and pairs, and the dimension) gives exactly the results of
    buffers allocated per call: it carries nothing from one call to the next. Both
    the one-call solve with its built-in screening and the active-set heuristic's
    compiled stretches are used."""
    problems = {d: small_problem(d, n=30, d=d, k=3)[2] for d in (3, 5)}
    gamma = 0.05
    ws = pg.SpgWorkspace()
    assert ws.capacity == (0, 0, 0, -1) and ws.nbytes == 0
    sizes, screened = [], 0
    rng = np.random.RandomState(0)
    for d, fraction, active_set in [(3, 0.3, False), (3, 1.0, False), (3, 0.1, True),
                                    (5, 0.7, False), (3, 0.5, True), (3, 1.0, True),
                                    (3, 0.2, False)]:
        ts = problems[d]
        status = _status(ts, rng, fraction)
        lam_L, G_pos = tp.closed_form(ts, gamma, False)
        lam = 0.02 * lam_L
        out = []
        for workspace in (None, ws):
            prob = tp.TripletProblem(ts, gamma, False, status)
            res = pg.solve(prob, G_pos / lam_L, lam, tol=1e-9, max_iter=5000,
                           callback=None if active_set else _InnerScreening(),
                           interval=3, active_set=active_set, workspace=workspace)
            out.append((res, prob))
        (res0, prob0), (res1, prob1) = out
        assert res0.n_iter == res1.n_iter and res0.step == res1.step
        for name in ("M", "z", "S", "S_pos", "primal", "dual", "gap", "grad"):
            a, b = getattr(res0.evaluation, name), getattr(res1.evaluation, name)
            assert np.array_equal(a, b), name
        assert np.array_equal(prob0.status, prob1.status)
        assert np.array_equal(prob0.HL, prob1.HL) and prob0.nL == prob1.nL
        sizes.append(int(np.count_nonzero(status == tp.STATUS_ACTIVE)))
        screened += ts.n_triplets - prob1.n_active - np.count_nonzero(status)
    # the sizes went up and down, and the loop's own screening was exercised
    assert sizes[1] > sizes[0] and sizes[2] < sizes[1] and sizes[-1] < sizes[-2]
    assert screened > 0
    # the buffers were kept (grown to the largest call since the dimension changed)
    n_pairs, n_triplets, _, d = ws.capacity
    assert d == 3 and n_triplets == problems[3].n_triplets and ws.nbytes > 0


def test_a_solve_without_screening_reads_its_pairs_in_place_and_leaves_them():
    """Without screening the compiled loop reads the pairs and triplets it is given
    (no private copies): they come out unchanged, read-only inputs are accepted, and
    the result is that of a solve on writable copies."""
    ts = small_problem(1, n=40, d=4, k=3)[2]
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, False)
    results = []
    for read_only in (False, True):
        prob = tp.TripletProblem(ts, gamma, False)
        arrays = list(prob.compact)
        saved = [a.copy() for a in arrays]
        if read_only:
            for a in arrays:
                a.flags.writeable = False
        res = pg.solve(prob, G_pos / lam_L, 0.05 * lam_L, tol=1e-9, max_iter=500,
                       workspace=pg.SpgWorkspace())
        for a, b in zip(arrays, saved, strict=True):
            assert np.array_equal(a, b)
        results.append(res)
    assert results[0].n_iter == results[1].n_iter > 1
    for name in ("M", "z", "primal", "gap"):
        assert np.array_equal(getattr(results[0].evaluation, name),
                              getattr(results[1].evaluation, name)), name


def test_workspace_times_only_the_calls_that_grow_it(monkeypatch):
    """``growth_seconds`` adds the time a call spends touching the buffers it grows
    (what a path's cost model leaves out of that step), and nothing for a call the
    buffers already fit."""
    from sklearn_safescreen.solvers import _spg_fast

    ticks = iter(range(1000))
    monkeypatch.setattr(_spg_fast, "thread_time", lambda: float(next(ticks)))
    ts = small_problem(2, n=40, d=4, k=3)[2]
    lam_L, G_pos = tp.closed_form(ts, 0.05, False)
    ws = pg.SpgWorkspace()
    grown = []
    for fraction in (0.5, 0.5, 1.0, 0.3):
        status = _status(ts, np.random.RandomState(0), fraction)
        prob = tp.TripletProblem(ts, 0.05, False, status)
        pg.solve(prob, G_pos / lam_L, 0.1 * lam_L, tol=1e-8, max_iter=50, workspace=ws)
        grown.append(ws.growth_seconds)
    assert grown[0] > 0 and grown[1] == grown[0]  # the same size again: nothing
    assert grown[2] > grown[1] and grown[3] == grown[2]  # larger, then smaller


def test_workspace_pickles_empty():
    import copy
    import pickle

    ts = small_problem(0, n=30, d=3, k=3)[2]
    lam_L, G_pos = tp.closed_form(ts, 0.05, False)
    ws = pg.SpgWorkspace()
    pg.solve(tp.TripletProblem(ts, 0.05, False), G_pos / lam_L, 0.1 * lam_L, tol=1e-8,
             max_iter=100, workspace=ws)
    assert ws.nbytes > 0
    for clone in (pickle.loads(pickle.dumps(ws)), copy.deepcopy(ws)):
        assert clone.capacity == (0, 0, 0, -1) and clone.nbytes == 0
    assert len(pickle.dumps(ws)) < 200


def test_workspace_is_bounded(monkeypatch):
    """Buffers above ``KEPT_BYTES`` are released after the call (a large solve does not
    hold them between fits); the results do not change."""
    from sklearn_safescreen.solvers import _spg_fast

    ts = small_problem(0, n=30, d=3, k=3)[2]
    lam_L, G_pos = tp.closed_form(ts, 0.05, False)
    out = []
    for limit in (_spg_fast.KEPT_BYTES, 0):
        monkeypatch.setattr(_spg_fast, "KEPT_BYTES", limit)
        ws = pg.SpgWorkspace()
        res = pg.solve(tp.TripletProblem(ts, 0.05, False), G_pos / lam_L, 0.1 * lam_L,
                       tol=1e-8, max_iter=100, workspace=ws, callback=_InnerScreening())
        out.append(res.M)
        assert (ws.nbytes > 0) == (limit > 0)
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("share", [0.0, 0.9, 1.0])
def test_active_set_restricts_only_when_it_retires_pairs(monkeypatch, share):
    """The active-set heuristic iterates over the triplets with positive loss only when
    they use at most ACTIVE_SET_PAIR_SHARE of the active triplets' pairs (an iteration
    costs per pair; a restriction costs two more evaluations)."""
    monkeypatch.setattr(pg, "ACTIVE_SET_PAIR_SHARE", share)
    _, _, ts = small_problem(1, n=30, d=3, k=3)
    problem = tp.TripletProblem(ts, 0.05, False)
    z = tp.triplet_values(ts, np.eye(3), False)
    M = np.eye(3) * 2.0 / np.median(np.abs(z))  # a part of the triplets has zero loss
    ev, _ = pg._checkpoint(problem, M, 1.0, None, True)
    positive = np.flatnonzero(tp.triplet_values(ts, M, False) < 1.0)
    assert 0 < positive.size < ts.n_triplets
    pairs = np.union1d(ts.pos[positive], ts.neg[positive]).size
    restrict = pairs <= share * ts.n_pairs
    assert restrict == (share > 0) and pairs < ts.n_pairs
    want = positive if restrict else np.arange(ts.n_triplets)
    assert np.array_equal(problem.work, want) and ev.z.size == want.size


class _NoScreening(pg.ScreeningHook):
    """A hook that is called at every checkpoint and screens nothing."""

    def __call__(self, problem, ev):
        return False


@pytest.mark.parametrize("active_set", [False, True])
@pytest.mark.parametrize("diagonal", [False, True])
def test_checkpoints_make_no_redundant_evaluation(monkeypatch, diagonal, active_set):
    """The solver evaluates once at the start and once per tried step: a checkpoint
    reuses the last step's evaluation (over the working triplets, completed by the
    active triplets the active set left out), the restriction reuses the checkpoint's
    and the convergence it confirms is that evaluation's. The returned evaluation covers
    every active triplet, as a fresh one."""
    X, y, ts = small_problem(3, n=30, d=4, k=3, diagonal=diagonal)
    gamma = 0.05
    lam_L, G_pos = tp.closed_form(ts, gamma, diagonal)
    lam = 0.05 * lam_L
    counts = dict(evaluate=0, checkpoint=0)
    evaluate, checkpoint = tp.TripletProblem.evaluate, pg._checkpoint

    def counted_evaluate(self, M, lam):
        counts["evaluate"] += 1
        return evaluate(self, M, lam)

    def counted_checkpoint(*args, **kwargs):
        counts["checkpoint"] += 1
        return checkpoint(*args, **kwargs)

    monkeypatch.setattr(tp.TripletProblem, "evaluate", counted_evaluate)
    monkeypatch.setattr(pg, "_checkpoint", counted_checkpoint)
    monkeypatch.setattr(pg, "ACTIVE_SET_PAIR_SHARE", 1.0)  # restrict whenever it can
    problem = tp.TripletProblem(ts, gamma, diagonal)
    res = pg.solve(problem, G_pos / lam_L, lam, tol=1e-10, max_iter=10000, interval=3,
                   active_set=active_set, compiled=False, callback=_NoScreening())
    assert res.converged and counts["checkpoint"] > 3
    assert counts["evaluate"] == 1 + res.n_iter + problem.n_rejected
    active = np.flatnonzero(problem.status == tp.STATUS_ACTIVE)
    assert np.array_equal(problem.work, active)
    fresh = tp.TripletProblem(ts, gamma, diagonal).evaluate(res.M, lam)
    np.testing.assert_allclose(res.evaluation.z, fresh.z, rtol=1e-12, atol=1e-12)
    assert res.evaluation.gap == pytest.approx(fresh.gap, rel=1e-9, abs=1e-12)
    assert res.evaluation.rel_gap <= 1e-10


class _Recording(pg.ScreeningHook):
    def __init__(self):
        self.calls = 0

    def __call__(self, problem, ev):
        self.calls += 1
        return False


@pytest.mark.parametrize("active_set", [False, True])
def test_no_screening_at_a_converged_checkpoint(active_set):
    """A checkpoint whose evaluation meets the tolerance ends the solve: the screening
    callback is not called there (no iteration follows that it could shorten)."""
    X, y, ts = small_problem(3, n=30, d=4, k=3, diagonal=True)
    lam_L, G_pos = tp.closed_form(ts, 0.05, True)
    lam = 0.05 * lam_L
    hook = _Recording()
    res = pg.solve(tp.TripletProblem(ts, 0.05, True), G_pos / lam_L, lam, tol=1e-9,
                   max_iter=10000, interval=3, active_set=active_set, callback=hook)
    assert res.converged and hook.calls == -(-res.n_iter // 3)  # not at the last one
    again = _Recording()
    res2 = pg.solve(tp.TripletProblem(ts, 0.05, True), res.M, lam, tol=1e-9,
                    max_iter=10000, interval=3, active_set=active_set, callback=again)
    assert res2.converged and res2.n_iter == 0 and again.calls == 0
