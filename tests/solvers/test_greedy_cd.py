"""The greedy kernel solver with its bounded row cache (solvers/greedy_cd.py and its
compiled loop): exact against the independent solver of tests/screening/_svm_truth.py,
with caches smaller than the problem, warm starts along a path (kept rows, narrowed and
extended columns, the kept Newton factor), variables held on entry, and inside SafeSVC's
certified path."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from _box_models import check_against_truth
from _svm_truth import noisy_data, solve_svm_dual
from sklearn_safescreen.solvers._greedy_fast import (
    CONVERGED,
    NEED_ROW,
)
from sklearn_safescreen.solvers._greedy_fast import greedy_updates as _greedy_updates

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.kernels import KernelMatrix
from sklearn_safescreen.screening.balls import gap_ball_screen
from sklearn_safescreen.solvers import greedy_cd, row_cache
from sklearn_safescreen.solvers.dual_cd import solve_box_qp
from sklearn_safescreen.solvers.greedy_cd import RowCache, solve_kernel_greedy
from sklearn_safescreen.solvers.newton import NewtonCache, NewtonOptions
from sklearn_safescreen.solvers.pending_margins import PendingMargins

GAMMA = 0.5


def greedy_updates(*args, **kwargs):
    """The compiled loop with the solver's tuning values unless told otherwise."""
    return _greedy_updates(*args, **{**greedy_cd.DEFAULT_OPTIONS.loop_arguments(),
                                     **kwargs})


def _options(monkeypatch, **changes):
    """Solves use these tuning values (the others unchanged) for the test."""
    monkeypatch.setattr(greedy_cd, "DEFAULT_OPTIONS",
                        replace(greedy_cd.DEFAULT_OPTIONS, **changes))


def _problem(X, y, C, cache_mb, newton=None):
    km = KernelMatrix(X, "rbf", {"gamma": GAMMA}, 1.0, cache_size=cache_mb)
    n = y.size
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=km.diag(),
                 kernel=km, newton=newton)


def _signed_gram(X, y):
    Q = y[:, None] * (np.exp(-GAMMA * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1.0) * y
    return 0.5 * (Q + Q.T)


def _rows_mb(n_rows, n):
    """A cache budget (MB) of ``n_rows`` rows of ``n`` doubles."""
    return n_rows * 8.0 * n / 2**20


@pytest.mark.parametrize("C", [0.1, 3.0])
@pytest.mark.parametrize("rows", [None, 40])
def test_greedy_equals_exact_solution(C, rows):
    """Cold solves, with every row cached or a cache of 40 rows (of 500: rows are
    evicted and computed again), equal the exact optimum; what dynamic screening fixed
    sits at the bound the optimum demands."""
    X, y = noisy_data(seed=5, n=500, d=4)
    n = y.size
    problem = _problem(X, y, C, 50.0 if rows is None else _rows_mb(rows, n))
    truth = solve_svm_dual(C, Q=_signed_gram(X, y))
    res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                              max_iter=100000, random_state=None,
                              dynamic_screen=gap_ball_screen)
    check_against_truth(problem, res, truth, 1e-9)
    if rows is not None:
        assert problem.newton is None  # no keeper: a fresh cache, bounded as asked
        assert greedy_cd.DEFAULT_OPTIONS.min_cache_rows <= rows


def test_row_cache_is_bounded_and_evicts_least_recently_used():
    X, y = noisy_data(seed=1, n=300, d=3)
    problem = _problem(X, y, 1.0, _rows_mb(20, 300))
    cache = RowCache(problem, np.arange(300))
    assert cache.capacity == 20 and cache.rows.shape == (20, 300)
    Q = _signed_gram(X, y)
    cache.fetch(problem, np.arange(10))
    cache.fetch(problem, np.arange(10, 20))
    cache.fetch(problem, np.arange(5))  # used again: the most recent
    cache.fetch(problem, np.arange(20, 25))  # evicts 5 of the rows 5..19
    held = np.sort(cache.owner[cache.owner >= 0])
    assert held.size == 20
    assert set(range(5)) <= set(held) and set(range(20, 25)) <= set(held)
    assert np.count_nonzero(held >= 5) - 5 == 10  # ten of 5..19 kept, five evicted
    for j in held:
        np.testing.assert_allclose(cache.rows[cache.slot[j]], Q[j], rtol=1e-12, atol=1e-12)
    assert np.all(cache.slot[np.setdiff1d(np.arange(300), held)] == -1)


@pytest.mark.parametrize("budget_rows", [None, 40, 20])
def test_row_cache_restricted_and_extended_serve_the_same_rows(budget_rows):
    """Narrowing the columns (no kernel values computed) and extending them (the new
    columns computed for the kept rows) give the rows of the new column set, in the same
    buffer while it holds them; with a budget of 40 rows of 100 the widening keeps the
    most recently used rows that still fit, with 20 the cache's floor of rows needs a new
    buffer. The caches they came from are retired (not readable)."""
    X, y = noisy_data(seed=2, n=200, d=3)
    problem = _problem(X, y, 1.0, 50.0 if budget_rows is None
                       else _rows_mb(budget_rows, 100))
    Q = _signed_gram(X, y)
    W = np.arange(0, 200, 2)
    cache = RowCache(problem, W)
    # fetched out of order, so buffer rows and positions are not in the same order
    for part in (np.arange(20, 30), np.arange(0, 10)[::-1], np.arange(10, 20)):
        cache.fetch(problem, part)
    cache.fetch(problem, np.array([25, 3]))  # the most recent
    buffer = cache._buffer
    held_before = W[cache.slot >= 0]

    def check(c):
        for pos in np.flatnonzero(c.slot >= 0):
            np.testing.assert_allclose(c.rows[c.slot[pos]], Q[c.W[pos]][c.W], rtol=1e-12,
                                       atol=1e-12)
        assert np.array_equal(np.sort(c.owner[c.owner >= 0]), np.flatnonzero(c.slot >= 0))

    keep = np.arange(5, 80)
    narrow = cache.restricted(problem, keep)
    assert cache.rows is None and narrow._buffer is buffer
    check(narrow)
    held_narrow = narrow.W[narrow.slot >= 0]
    assert np.array_equal(np.sort(held_narrow), held_before[held_before >= W[5]])
    extra = np.arange(1, 60, 2) if budget_rows is None else np.arange(1, 200, 2)
    used = narrow.owner >= 0
    last_use = dict(zip(narrow.W[narrow.owner[used]], narrow.last_use[used], strict=True))
    wide = narrow.extended(problem, extra)
    assert narrow.rows is None
    check(wide)
    held_wide = wide.W[wide.slot >= 0]
    if budget_rows is None:
        assert wide._buffer is buffer
        assert np.array_equal(np.sort(held_wide), W[5:30])  # rows 5..29 of W survived
    else:  # the most recently used rows that fit
        cap = {40: 22, 20: greedy_cd.DEFAULT_OPTIONS.min_cache_rows}[budget_rows]
        assert wide.capacity == cap and (wide._buffer is buffer) == (budget_rows == 40)
        assert held_wide.size == min(cap, held_narrow.size)
        newest = sorted(held_narrow, key=lambda j: -last_use[j])[:cap]
        assert set(held_wide) == set(newest)
        if budget_rows == 40:
            assert held_wide.size < held_narrow.size


@pytest.mark.parametrize("n_interior, fresh", [(10, True), (30, False)])
def test_a_kept_cache_whose_rows_no_longer_fit_starts_over(n_interior, fresh):
    """A warm solve whose kept columns' rows do not all fit starts over from every free
    sample (in the same buffer) when its interior set's rows fit with room in rows that
    wide (``fresh_start_room``), else it extends the kept columns."""
    X, y = noisy_data(seed=3, n=400, d=3)
    keeper = NewtonCache()
    problem = _problem(X, y, 1.0, _rows_mb(40, 400), newton=keeper)
    kept = RowCache(problem, np.arange(0, 200))
    assert kept.capacity == 80 < kept.W.size
    kept.fetch(problem, np.arange(30))
    keeper.rows = kept
    buffer = kept._buffer
    free, interior = np.arange(400), np.arange(n_interior)
    assert (greedy_cd.DEFAULT_OPTIONS.fresh_start_room * n_interior <= 40) == fresh
    cache = greedy_cd.cache_for_solve(problem, free, interior, greedy_cd.DEFAULT_OPTIONS)
    assert keeper.rows is cache and cache._buffer is buffer
    if fresh:
        assert np.array_equal(cache.W, free) and not (cache.slot >= 0).any()
        assert kept.rows is None
    else:
        assert cache is kept and cache.W.size == 200


def test_paths_that_start_over_stay_exact(monkeypatch):
    """A warm solve that starts over from every free sample (its kept columns' rows no
    longer fit: here a kept cache over the support, most of the 400 samples, holding a
    tenth of their rows; without the rule it would be kept) reaches the exact
    solution."""
    starts = []
    choose = greedy_cd.cache_for_solve

    def recording(problem, free, interior, options):
        cache = choose(problem, free, interior, options)
        starts.append(np.array_equal(cache.W, free))
        return cache

    monkeypatch.setattr(greedy_cd, "cache_for_solve", recording)
    X, y = noisy_data(seed=1, n=400, d=5, flip=0.1)
    n = y.size
    Q = _signed_gram(X, y)
    keeper = NewtonCache()
    problem = _problem(X, y, 0.1, _rows_mb(40, n), newton=keeper)
    res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                              max_iter=100000, random_state=None)
    check_against_truth(problem, res, solve_svm_dual(0.1, Q=Q), 1e-8)
    wide = RowCache(problem, np.flatnonzero(res.alpha))  # the support: most samples
    wide.fetch(problem, np.arange(wide.capacity))
    keeper.rows = wide
    assert wide.capacity < wide.W.size
    prev_C = 0.1
    for C in (0.3, 1.0):
        starts.clear()
        problem = _problem(X, y, C, _rows_mb(40, n), newton=keeper)
        # seeded as a path does: samples at the box's end stay at its new end
        seed = np.where(res.alpha >= prev_C, C, res.alpha)
        res = solve_kernel_greedy(problem, seed, np.zeros(n, bool),
                                  tol=1e-9, max_iter=100000, random_state=None)
        prev_C = C
        check_against_truth(problem, res, solve_svm_dual(C, Q=Q), 1e-8)
        if C == 0.3:
            assert starts == [True] and wide.rows is None  # started over, in its buffer


def test_compiled_loop_stops_on_a_missing_row_without_changing_it():
    Q = np.array([[2.0, 0.5], [0.5, 1.0]])
    a, g = np.zeros(2), -np.ones(2)
    lo, hi = np.zeros(2), np.full(2, 10.0)
    diag = np.diag(Q).copy()
    active = np.arange(2, dtype=np.int64)
    slot = np.array([-1, 0], dtype=np.int64)
    rows = np.ascontiguousarray(Q[[1]])
    last = np.zeros(1, dtype=np.int64)
    out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, np.ones(2), active, 2, 2, rows,
                         slot, last, 0, 100, 1e-12, 0)
    # position 1 (decrease 0.5) beats position 0 (0.25); after it, 0 needs its row
    assert out[0] == NEED_ROW and out[5] == 0 and out[1] == 1
    np.testing.assert_allclose(a, [0.0, 1.0])
    np.testing.assert_allclose(g, [-0.5, 0.0])
    assert out[6] == pytest.approx(0.5)  # the exact decrease of the objective
    slot[:] = [0, 1]
    rows = np.ascontiguousarray(Q)
    out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, np.ones(2), active, 2, 2, rows,
                         slot, np.zeros(2, dtype=np.int64), 0, 100000, 1e-13, 0)
    assert out[0] == CONVERGED
    np.testing.assert_allclose(a, np.linalg.solve(Q, np.ones(2)), rtol=1e-10)


def _run_loop(Q, p, lo, hi, sign, *, pairs, max_updates=10**6, eps=1e-12, a=None):
    """The compiled loop over a fully cached ``Q`` from ``a`` (default 0): ``(a, g,
    status, updates, decrease)``."""
    m = p.size
    a = np.zeros(m) if a is None else a.copy()
    g = Q @ a - p
    diag = np.diag(Q).copy()
    out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, sign.astype(float),
                         np.arange(m, dtype=np.int64), m, m, np.ascontiguousarray(Q),
                         np.arange(m, dtype=np.int64), np.zeros(m, dtype=np.int64), 0,
                         max_updates, eps, 0, pairs)
    return a, g, out[0], out[1], out[6]


def test_one_pair_update_minimises_two_coupled_variables_exactly():
    # strongly coupled pair, optimum inside the box: one two-variable step reaches it,
    # where single steps only converge geometrically
    Q = np.array([[2.0, 1.9], [1.9, 2.0]])
    p = np.array([1.0, 0.5])
    lo, hi = np.full(2, -10.0), np.full(2, 10.0)
    a, g, _, updates, decrease = _run_loop(Q, p, lo, hi, np.ones(2), pairs=True,
                                           max_updates=1)
    np.testing.assert_allclose(a, np.linalg.solve(Q, p), rtol=1e-12)
    np.testing.assert_allclose(g, Q @ a - p, atol=1e-12)
    assert decrease == pytest.approx(-(0.5 * a @ Q @ a - p @ a), rel=1e-12)
    a1, *_ = _run_loop(Q, p, lo, hi, np.ones(2), pairs=False, max_updates=1)
    assert 0.5 * a1 @ Q @ a1 - p @ a1 > 0.5 * a @ Q @ a - p @ a + 1e-3


@pytest.mark.parametrize("seed", range(20))
def test_pair_updates_reach_the_box_qp_optimum(seed):
    # random signed RBF Grams plus the intercept's constant, random boxes partly at a
    # bound: two-variable steps (closed-form box minimisation) and single steps converge
    # to the optimum of the independent active-set solver, and the reported decrease is
    # the objective's
    rng = np.random.RandomState(seed)
    m = 12
    X = rng.standard_normal((m, 3))
    s = np.where(rng.rand(m) < 0.5, -1.0, 1.0)
    Q = _signed_gram(X, s)
    p = rng.uniform(0.2, 2.0, m)
    lo = np.where(rng.rand(m) < 0.3, -rng.uniform(0, 1, m), 0.0)
    hi = rng.uniform(0.05, 2.0, m)
    a, g, status, _, decrease = _run_loop(Q, p, lo, hi, s, pairs=True, eps=1e-13)
    assert status == CONVERGED
    np.testing.assert_allclose(g, Q @ a - p, atol=1e-10)
    assert np.all((a >= lo) & (a <= hi))
    truth = _box_qp_truth(Q, p, lo, hi)
    np.testing.assert_allclose(a, truth, atol=1e-7)
    assert decrease == pytest.approx(-(0.5 * a @ Q @ a - p @ a), rel=1e-9)


def test_pair_updates_need_fewer_updates_on_a_dominant_common_direction():
    # an RBF Gram's rows share a large common part (plus the intercept's constant): the
    # signed direction S1 dominates Q, across which single steps zig-zag
    rng = np.random.RandomState(0)
    m = 300
    X = rng.standard_normal((m, 2))
    s = np.where(rng.rand(m) < 0.5, -1.0, 1.0)
    Q = _signed_gram(X, s) + 1e-3 * np.eye(m)
    p, lo, hi = np.ones(m), np.zeros(m), np.full(m, 100.0)
    a2, _, st2, pair_updates, _ = _run_loop(Q, p, lo, hi, s, pairs=True, eps=1e-8)
    a1, _, st1, single_updates, _ = _run_loop(Q, p, lo, hi, s, pairs=False, eps=1e-8)
    assert st1 == st2 == CONVERGED
    np.testing.assert_allclose(a2, a1, atol=1e-5 * hi.max())
    assert pair_updates < 0.5 * single_updates


def _box_qp_truth(Q, p, lo, hi):
    """Minimiser of 1/2 a'Qa - p'a over the box by scipy's L-BFGS-B, polished by Newton
    steps on the variables its answer leaves free (independent of the greedy loop)."""
    from scipy.optimize import minimize

    res = minimize(lambda a: 0.5 * a @ Q @ a - p @ a, np.clip(np.zeros_like(p), lo, hi),
                   jac=lambda a: Q @ a - p, method="L-BFGS-B",
                   bounds=list(zip(lo, hi, strict=True)),
                   options=dict(ftol=1e-15, gtol=1e-13, maxiter=100000))
    a = res.x
    for _ in range(50):  # polish: Newton on the variables strictly inside the box
        g = Q @ a - p
        free = ~(((a <= lo) & (g >= 0)) | ((a >= hi) & (g <= 0)))
        step = np.zeros_like(a)
        step[free] = np.linalg.solve(Q[np.ix_(free, free)], g[free])
        new = np.clip(a - step, lo, hi)
        if np.allclose(new, a, rtol=0, atol=1e-15):
            break
        a = new
    return a


def _objective(Q, alpha):
    return -0.5 * alpha @ Q @ alpha + alpha.sum()


def test_warm_path_with_kept_cache_equals_dense_solver():
    """A path of C up to the hard-margin regime with the rows (and the Newton factor)
    kept between solves, 60 rows of cache for 400 samples: every solve, started from
    the previous solution, reaches the optimum of the existing dense solver (its
    interior-point finish is exact to ~1e-12)."""
    X, y = noisy_data(seed=3, n=400, d=5, flip=0.05)
    n = y.size
    Q = _signed_gram(X, y)
    keeper = NewtonCache()
    prev = np.zeros(n)
    for C in (0.05, 0.5, 5.0, 50.0, 500.0):
        problem = _problem(X, y, C, _rows_mb(60, n), newton=keeper)
        res = solve_kernel_greedy(problem, np.clip(prev, 0.0, C), np.zeros(n, bool),
                                  tol=1e-10, max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen)
        dense = solve_box_qp(_problem(X, y, C, 50.0), np.zeros(n), np.zeros(n, bool),
                             tol=1e-12, max_iter=100000,
                             random_state=np.random.RandomState(0))
        assert res.converged and res.rel_gap <= 1e-10
        best = _objective(Q, dense.alpha)
        assert _objective(Q, res.alpha) == pytest.approx(best, rel=1e-9)
        q, q_dense = Q @ res.alpha, Q @ dense.alpha
        np.testing.assert_allclose(q, q_dense, atol=1e-4 * max(1.0, np.abs(q).max()))
        # what dynamic screening fixed is at the bound the optimum's margins demand
        at_lo, at_hi = res.fixed & (res.alpha <= 0.0), res.fixed & (res.alpha >= C)
        assert not np.any(at_lo & (q_dense < 1.0 - 1e-6))
        assert not np.any(at_hi & (q_dense > 1.0 + 1e-6))
        # the memory bound: the budget in bytes (more, narrower rows once W narrowed)
        rows = keeper.rows.rows
        assert rows.nbytes <= max(problem.kernel.cache_bytes,
                                  greedy_cd.DEFAULT_OPTIONS.min_cache_rows * 8 * rows.shape[1])
        prev = res.alpha


def test_variables_held_on_entry_stay_and_the_gap_counts_only_the_others():
    """Variables fixed on entry (some at a nonzero bound) are held; the answer equals
    the dense solver's on the same reduced problem."""
    X, y = noisy_data(seed=4, n=350, d=4)
    n, C = y.size, 2.0
    rng = np.random.RandomState(0)
    fixed = rng.rand(n) < 0.3
    alpha0 = np.where(fixed & (rng.rand(n) < 0.5), C, 0.0)
    problem = _problem(X, y, C, _rows_mb(30, n))
    res = solve_kernel_greedy(problem, alpha0, fixed, tol=1e-10, max_iter=100000,
                              random_state=None, dynamic_screen=None)
    dense = solve_box_qp(_problem(X, y, C, 50.0), alpha0, fixed, tol=1e-12,
                         max_iter=100000, random_state=np.random.RandomState(0))
    assert res.converged and np.array_equal(res.alpha[fixed], alpha0[fixed])
    Q = _signed_gram(X, y)
    assert _objective(Q, res.alpha) == pytest.approx(_objective(Q, dense.alpha), rel=1e-9)
    np.testing.assert_allclose(res.alpha, dense.alpha, atol=1e-5 * C)


def test_safesvc_path_through_the_greedy_solver(monkeypatch):
    """SafeSVC's certified path with the greedy solver chosen (its threshold lowered, a
    cache of 30 rows for 500 samples) gives the models of the dense solver, without a
    repair."""
    _options(monkeypatch, greedy_min_free=0)
    X, y = noisy_data(seed=6, n=500, d=5, flip=0.05)
    ours = SafeSVC(kernel="rbf", gamma=GAMMA, tol=1e-8, warm_start=True,
                   cache_size=_rows_mb(30, 500), random_state=0)
    calls = []
    real = greedy_cd.solve_kernel_greedy

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    from sklearn_safescreen.engine import box_qp_reduced as engine

    monkeypatch.setattr(engine, "solve_kernel_greedy", spy)
    for C in (0.1, 1.0, 10.0, 100.0):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no repair, no convergence warning
            ours.set_params(C=C).fit(X, y)
        ref = SafeSVC(kernel="rbf", gamma=GAMMA, tol=1e-10, C=C, screening=None).fit(X, y)
        np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X),
                                   atol=1e-3)
    assert calls, "the greedy solver was not used"


def _seeded_step(C_old=0.2, C_new=0.5, rows=40):
    """A solution at ``C_old`` with its margins, and the seeded start at ``C_new`` on a
    problem whose cache holds ``rows`` rows (kernel values are then counted)."""
    from sklearn_safescreen.solvers._cd_fast import seed_point

    X, y = noisy_data(seed=7, n=600, d=4, flip=0.1)
    n = y.size
    old = _problem(X, y, C_old, 50.0)
    res = solve_kernel_greedy(old, np.zeros(n), np.zeros(n, bool), tol=1e-12,
                              max_iter=100000, random_state=None)
    q_old = old.margins(res.alpha)
    new = _problem(X, y, C_new, _rows_mb(rows, n))
    alpha0 = seed_point(res.alpha, new.lo, new.hi, C_old / C_new)
    return X, y, new, res.alpha, q_old, alpha0


def test_margins_from_a_previous_solution_equal_the_margins_for_fewer_kernel_values():
    X, y, problem, alpha_old, q_old, alpha0 = _seeded_step()
    scale = 0.5 / 0.2
    before = problem.kernel.n_evaluations
    q = problem.margins_from(alpha0, alpha_old, q_old, scale)
    cost = problem.kernel.n_evaluations - before
    exact = _signed_gram(X, y) @ alpha0
    np.testing.assert_allclose(q, exact, rtol=1e-12, atol=1e-12 * np.abs(exact).max())
    # only the previous solution's interior samples enter the product
    interior = np.count_nonzero((alpha_old > 0) & (alpha_old < 0.2))
    assert 0 < cost <= interior * y.size < np.count_nonzero(alpha0) * y.size
    # from an unrelated point the update would cost as much as the product: refused
    assert problem.margins_from(alpha0, np.zeros_like(alpha0), np.zeros_like(q), 1.0) \
        is None


def test_start_margins_give_the_same_answer_for_fewer_kernel_values():
    X, y, problem, alpha_old, q_old, alpha0 = _seeded_step()
    n = y.size
    runs = []
    for hint in (False, True):
        X_, y_, problem, *_ = _seeded_step()
        start = problem.margins_from(alpha0, alpha_old, q_old, 0.5 / 0.2) if hint \
            else None
        before = problem.kernel.n_evaluations
        res = solve_kernel_greedy(problem, alpha0, np.zeros(n, bool), tol=1e-10,
                                  max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen, start_margins=start)
        runs.append((res, problem.kernel.n_evaluations - before))
    (plain, cost_plain), (hinted, cost_hinted) = runs
    assert plain.converged and hinted.converged
    Q = _signed_gram(X, y)
    assert _objective(Q, hinted.alpha) == pytest.approx(_objective(Q, plain.alpha),
                                                        rel=1e-9)
    assert cost_hinted < cost_plain


def test_pending_margins_are_updated_by_the_moved_variables_only():
    X, y = noisy_data(seed=8, n=300, d=3)
    n = y.size
    problem = _problem(X, y, 1.0, _rows_mb(20, n))
    Q = _signed_gram(X, y)
    rng = np.random.RandomState(0)
    alpha = np.where(rng.rand(n) < 0.6, 1.0, 0.0)
    pending = PendingMargins(problem, alpha, None)
    rows = np.flatnonzero(rng.rand(n) < 0.5)
    np.testing.assert_allclose(pending.gradient(alpha, rows), (Q @ alpha - 1.0)[rows],
                               atol=1e-12)
    # a few variables move: the rows known from the last call need the moved
    # variables' kernel values only, a row not known before is computed afresh
    moved = rng.choice(n, 5, replace=False)
    alpha = alpha.copy()
    alpha[moved] = rng.rand(5)
    rows2 = np.concatenate([rows[:50], np.setdiff1d(np.arange(n), rows)[:3]])
    before = problem.kernel.n_evaluations
    np.testing.assert_allclose(pending.gradient(alpha, rows2), (Q @ alpha - 1.0)[rows2],
                               atol=1e-12)
    cost = problem.kernel.n_evaluations - before
    assert cost <= (5 + 3) * n  # (the kernel's cache stores whole rows of the moved)
    fresh = _problem(X, y, 1.0, _rows_mb(20, n))
    PendingMargins(fresh, alpha, None).gradient(alpha, rows2)
    assert cost < 0.25 * fresh.kernel.n_evaluations


def test_a_cached_row_nearly_as_good_is_updated_instead_of_computing_a_row():
    Q = np.array([[2.0, 0.1], [0.1, 1.0]])
    p = np.array([1.0, 0.6])  # decreases 0.25 (position 0, uncached), 0.18 (1, cached)
    lo, hi = np.zeros(2), np.full(2, 10.0)
    diag = np.diag(Q).copy()
    slot = np.array([-1, 0], dtype=np.int64)
    rows = np.ascontiguousarray(Q[[1]])

    def run(prefer_cached):
        a, g = np.zeros(2), -p.copy()
        out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, np.ones(2),
                             np.arange(2, dtype=np.int64), 2, 2, rows, slot,
                             np.zeros(1, dtype=np.int64), 0, 1, 1e-12, 0, True,
                             prefer_cached)
        return out, a

    out, a = run(1.0)  # the best variable only: its row is asked for
    assert out[0] == NEED_ROW and out[5] == 0 and out[1] == 0
    out, a = run(0.5)  # 0.18 >= 0.5 * 0.25: position 1 moves, no row computed
    assert out[1] == 1 and a[0] == 0.0 and a[1] == pytest.approx(0.6)


@pytest.mark.parametrize("share", [True, False])
def test_rows_over_every_sample_go_through_the_kernel_cache(monkeypatch, share):
    # a cold solve over every sample touches every row; computed through the kernel's
    # row cache, the certificate's margins then read them instead of computing them
    if not share:  # rows of its own (neither read in place nor copied from the kernel's)
        _options(monkeypatch, share_fraction=2.0)
        monkeypatch.setattr(greedy_cd.KernelRowView, "possible",
                            staticmethod(lambda problem: False))
    X, y = noisy_data(seed=9, n=400, d=4)
    n = y.size
    problem = _problem(X, y, 0.05, 50.0)
    res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                              max_iter=100000, random_state=None)
    q, err = problem.accurate_margins(res.alpha)
    np.testing.assert_allclose(q, _signed_gram(X, y) @ res.alpha, atol=1e-10)
    evaluations = problem.kernel.n_evaluations
    if share:
        assert evaluations <= n * n
    else:
        assert evaluations > 1.5 * n * n


def test_a_partner_whose_row_is_missing_is_asked_for_and_the_first_row_kept_recent():
    # three coupled variables, only the first one's row cached: while the scanned
    # variables' rows all fit the cache, the loop asks for the best partner's row
    # (nothing moved) and marks the first variable's row as the most recent, so
    # fetching the partner's cannot evict it
    rng = np.random.RandomState(3)
    X = rng.standard_normal((3, 2))
    s = np.array([1.0, -1.0, 1.0])
    Q = _signed_gram(X, s)
    p = np.array([3.0, 0.1, 0.1])
    lo, hi = np.zeros(3), np.full(3, 10.0)
    diag = np.diag(Q).copy()
    slot = np.array([0, -1, -1], dtype=np.int64)
    rows = np.ascontiguousarray(Q[[0]])
    last = np.zeros(1, dtype=np.int64)
    a, g = np.zeros(3), -p.copy()
    out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, s, np.arange(3, dtype=np.int64),
                         3, 3, rows, slot, last, 0, 10, 1e-12, 0, True, 1.0, 3)
    assert out[0] == NEED_ROW and out[5] in (1, 2) and out[1] == 0
    np.testing.assert_array_equal(a, 0.0)
    assert last[0] == out[3] > 0
    # more scanned variables than rows the cache may hold: the cached rows only are
    # candidates, and a single step is taken
    a, g = np.zeros(3), -p.copy()
    out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, s, np.arange(3, dtype=np.int64),
                         3, 3, rows, slot, np.zeros(1, dtype=np.int64), 0, 1, 1e-12, 0,
                         True, 1.0, 2)
    assert out[1] == 1 and a[1] == a[2] == 0.0 and a[0] > 0.0


@pytest.mark.parametrize("seed", range(6))
def test_loop_answer_does_not_depend_on_the_order_of_the_active_list(seed):
    # the loop sorts its positions (shrinking keeps them sorted): a shuffled active list
    # gives the very same iterates, with or without shrinking, and the optimum
    rng = np.random.RandomState(seed)
    m = 40
    X = rng.standard_normal((m, 3))
    s = np.where(rng.rand(m) < 0.5, -1.0, 1.0)
    Q = _signed_gram(X, s)
    p = rng.uniform(0.2, 2.0, m)
    lo, hi = np.zeros(m), rng.uniform(0.05, 3.0, m)
    diag = np.diag(Q).copy()
    runs = []
    for order, shrink in ((np.arange(m), 0), (rng.permutation(m), 0),
                          (rng.permutation(m), 7)):
        a, g = np.zeros(m), -p.copy()
        out = greedy_updates(a, g, lo, hi, diag, 1.0 / diag, s,
                             order.astype(np.int64), m, m, np.ascontiguousarray(Q),
                             np.arange(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
                             0, 10**6, 1e-12, shrink, True, 1.0, m)
        assert out[0] == CONVERGED
        np.testing.assert_allclose(g, Q @ a - p, atol=1e-10)
        runs.append((a, out[1]))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    truth = _box_qp_truth(Q, p, lo, hi)
    for a, _ in runs:
        np.testing.assert_allclose(a, truth, atol=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_masked_scans_choose_as_the_listed_ones(seed):
    """The vector scans over every position through the mask (four lanes, each with its
    own best, merged at the end) make the very same updates as the scalar scans through
    the active list: with shrinking, bounds reached, a number of positions that is not
    a multiple of four, a zero diagonal (a variable linear along its coordinate), rows
    missing from the cache, and exact ties (duplicated samples: the first position
    wins in both)."""
    rng = np.random.RandomState(seed)
    m = 37 + seed
    X = rng.standard_normal((m, 3))
    s = np.where(rng.rand(m) < 0.5, -1.0, 1.0)
    p = rng.uniform(0.2, 2.0, m)
    lo = np.where(rng.rand(m) < 0.3, -rng.uniform(0.1, 1.0, m), 0.0)
    hi = rng.uniform(0.05, 3.0, m)
    # duplicated samples in other lanes of the vector scans: equal scores and gains
    original, copy = np.array([0, 1, 2, 3]), np.array([9, 14, 19, 27])
    for arr in (X, s, p, lo, hi):
        arr[copy] = arr[original]
    Q = _signed_gram(X, s)
    if seed % 2:  # a zero row and column: that variable is linear along its coordinate
        Q[5, :] = Q[:, 5] = 0.0
    diag = np.diag(Q).copy()
    inv = np.divide(1.0, diag, out=np.zeros(m), where=diag > 0)
    slot0 = np.arange(m, dtype=np.int64)
    slot0[rng.rand(m) < 0.2] = -1  # rows not cached: the loop asks for them
    a0 = np.clip(rng.uniform(-1, 1, m), lo, hi) if seed >= 4 else np.zeros(m)
    a0[copy] = a0[original]
    slot0[copy] = np.where(slot0[original] < 0, -1, copy)
    rows = np.ascontiguousarray(Q)
    runs = []
    for share in (2.0, 0.0):
        a, g, slot = a0.copy(), Q @ a0 - p, slot0.copy()
        active = np.arange(m, dtype=np.int64)
        trace = []
        for _ in range(200):  # calls until converged, serving each missing row
            out = greedy_updates(a, g, lo, hi, diag, inv, s, active, m, m, rows, slot,
                                 np.zeros(m, dtype=np.int64), 0, 25, 1e-12, 5, True, 1.0,
                                 m // 2, 1.5, dense_share=share)
            trace.append((out[0], out[1], out[5]))
            if out[0] == NEED_ROW:
                slot[out[5]] = out[5]
            elif out[0] == CONVERGED:
                break
        runs.append((a, g, trace))
    (a1, g1, t1), (a2, g2, t2) = runs
    assert t1 == t2
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(g1, g2)
    assert t1[-1][0] == CONVERGED


@pytest.mark.parametrize("partner_any", [True, False])
def test_partner_rules_reach_the_exact_solution_with_a_small_cache(monkeypatch,
                                                                   partner_any):
    # the partner among all variables or among the cached rows, with a cache of 24 rows
    # of 300 (partners' rows asked for, rows evicted and computed again): the exact
    # optimum, and what dynamic screening fixed at the bound the optimum demands
    _options(monkeypatch, partner_any=partner_any)
    X, y = noisy_data(seed=11, n=300, d=4)
    n = y.size
    for C in (0.5, 20.0):
        problem = _problem(X, y, C, _rows_mb(24, n))
        truth = solve_svm_dual(C, Q=_signed_gram(X, y))
        res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                                  max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen)
        check_against_truth(problem, res, truth, 1e-9)


def test_row_cache_fetch_into_consecutive_and_scattered_slots_stores_the_rows():
    # a cold cache fills consecutive slots (copied through a slice), a full one the
    # evicted, scattered slots: either way each position's slot holds its signed row
    X, y = noisy_data(seed=2, n=60, d=3)
    problem = _problem(X, y, 1.0, _rows_mb(greedy_cd.DEFAULT_OPTIONS.min_cache_rows, 60))
    cache = RowCache(problem, np.arange(60))
    Q = _signed_gram(X, y)
    cap = cache.capacity
    cache.fetch(problem, np.arange(cap - 2, dtype=np.int64))
    cache.fetch(problem, np.array([40, 41, 42], dtype=np.int64))  # evicts one
    cache.fetch(problem, np.array([2, 50, 9, 33], dtype=np.int64))  # evicts scattered
    held = np.flatnonzero(cache.slot >= 0)
    assert held.size == cap
    for j in held:
        np.testing.assert_allclose(cache.rows[cache.slot[j]], Q[j], atol=1e-12)


@pytest.mark.parametrize("below", [1e-3, 5e-2, np.inf])
def test_newton_steps_tried_early_still_reach_the_exact_solution(monkeypatch, below):
    # Newton steps on the interior set tried from a large gap on (where that set is
    # still wrong and the clipped step may raise the objective): the answer is still
    # the exact optimum, with what dynamic screening fixed at the right bound
    _options(monkeypatch, newton_below_gap=below)
    X, y = noisy_data(seed=4, n=500, d=4)
    n = y.size
    for C in (1.0, 30.0):
        problem = _problem(X, y, C, _rows_mb(60, n), newton=NewtonCache())
        truth = solve_svm_dual(C, Q=_signed_gram(X, y))
        res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                                  max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen)
        check_against_truth(problem, res, truth, 1e-9)


def _objective(Q, a):
    return 0.5 * float(a @ Q @ a) - float(a.sum())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rounds", [1, 2, 8])
def test_a_newton_step_never_raises_the_objective(seed, rounds):
    """From any point of the box and any set of variables, a Newton step (its fixing
    rounds, then its scaling along its direction) reports the exact change of the
    objective, never an increase; the point stays in the box and the gradient it
    leaves is that of the point. Random sets are far from the interior set, where a
    clipped step alone raises the objective."""
    rng = np.random.default_rng(seed)
    X, y = noisy_data(seed=seed, n=150, d=3)
    n, C = y.size, 10.0 ** rng.uniform(-1, 3)
    Q = _signed_gram(X, y)
    problem = _problem(X, y, C, _rows_mb(200, n), newton=NewtonCache())
    cache = RowCache(problem, np.arange(n))
    a = np.where(rng.random(n) < 0.5, rng.uniform(0.0, C, n), rng.choice([0.0, C], n))
    g = Q @ a - 1.0
    lo, hi = np.zeros(n), np.full(n, C)
    interior = np.sort(rng.choice(n, int(rng.integers(5, n)), replace=False))
    before = _objective(Q, a)
    out = greedy_cd._newton_step(problem, cache, a, g, lo, hi, interior, rounds)
    assert out is not None
    change, whole = out
    scale = abs(before) + 1.0
    assert change <= 1e-12 * scale
    assert change == pytest.approx(_objective(Q, a) - before, rel=1e-8, abs=1e-9 * scale)
    assert np.all((a >= 0.0) & (a <= C))
    np.testing.assert_allclose(g, Q @ a - 1.0, atol=1e-8 * (1.0 + C * n))


def test_newton_fixing_rounds_end_on_the_minimiser_of_their_face():
    """With rounds enough, a Newton step fixes at their bound the variables it would
    carry out of the box and solves again for the others: when it keeps the whole
    step, the variables it left strictly inside have a zero gradient (the minimiser
    of the objective with the fixed ones at their bound). On warm starts along a C
    path, from the last solution, where some variables must leave the interior set."""
    X, y = noisy_data(seed=2, n=300, d=4, flip=0.1)
    n = y.size
    Q = _signed_gram(X, y)
    fixed_some = 0
    for C0, C in ((1.0, 3.0), (3.0, 10.0), (10.0, 30.0), (30.0, 100.0)):
        start = solve_svm_dual(C0, Q=Q).alpha
        a = np.where(start >= C0 - 1e-9, C, start)  # bound ones moved to the new bound
        g = Q @ a - 1.0
        lo, hi = np.zeros(n), np.full(n, C)
        interior = np.flatnonzero((a > 0.0) & (a < C))
        problem = _problem(X, y, C, _rows_mb(400, n), newton=NewtonCache())
        cache = RowCache(problem, np.arange(n))
        change, whole = greedy_cd._newton_step(problem, cache, a, g, lo, hi, interior,
                                               interior.size + 1)
        assert change <= 0.0
        left = interior[(a[interior] > 0.0) & (a[interior] < C)]
        fixed_some += left.size < interior.size
        if whole:
            np.testing.assert_allclose(g[left], 0.0, atol=1e-7 * C)
    assert fixed_some  # some step had variables to fix


@pytest.mark.parametrize(("start_kind", "early_min_free"),
                         [("warm", 0), ("warm", 10**6), ("at_bounds", 0)])
def test_newton_steps_from_the_first_check_on_warm_starts_with_many_free_samples(
        monkeypatch, start_kind, early_min_free):
    """A warm-started solve on at least ``newton_early_min_free`` free samples tries
    its first Newton step at its first gap check; on fewer, from zero, or from a start
    with every variable at a bound (a path's closed form), the steps wait for
    ``newton_retry_gap``. The answer is the exact optimum either way."""
    X, y = noisy_data(seed=1, n=500, d=5, flip=0.1)
    n = y.size
    start = solve_kernel_greedy(_problem(X, y, 1.0, _rows_mb(80, n)), np.zeros(n),
                                np.zeros(n, bool), tol=1e-9, max_iter=100000,
                                random_state=None).alpha
    events = []
    newton, relative_gap = greedy_cd._newton_step, greedy_cd._relative_gap

    def recording_newton(*args):
        events.append(("newton", None))
        return newton(*args)

    def recording_gap(*args):
        out = relative_gap(*args)
        events.append(("gap", out[0]))
        return out

    monkeypatch.setattr(greedy_cd, "_newton_step", recording_newton)
    monkeypatch.setattr(greedy_cd, "_relative_gap", recording_gap)
    _options(monkeypatch, newton_early_min_free=early_min_free)
    _options(monkeypatch, newton_retry_gap=1e-3)
    _options(monkeypatch, early_pending_check=False)
    problem = _problem(X, y, 10.0, _rows_mb(80, n), newton=NewtonCache())
    alpha0 = np.clip(start, 0.0, 10.0) if start_kind == "warm" else np.full(n, 10.0)
    res = solve_kernel_greedy(problem, alpha0, np.zeros(n, bool),
                              tol=1e-9, max_iter=100000, random_state=None)
    check_against_truth(problem, res, solve_svm_dual(10.0, Q=_signed_gram(X, y)), 1e-8)
    first = next(k for k, (name, _) in enumerate(events) if name == "newton")
    gaps = [v for name, v in events[:first] if name == "gap"]
    retry = 1e-3
    if early_min_free == 0 and start_kind == "warm":
        assert len(gaps) == 1 and gaps[0] > retry
    else:
        assert gaps[-1] <= retry < gaps[0]


@pytest.mark.parametrize(("retries", "retry_gap"),
                         [(0, 0.0), (1, 0.0), (2, 0.0), (0, 1e-2), (1, 1e-2)])
def test_early_newton_steps_that_fail_defer_the_next_ones(monkeypatch, retries,
                                                           retry_gap):
    # newton_retries + 1 Newton steps in a row tried from the first check that do not
    # help (here: reported singular) make the later ones wait for newton_retry_gap
    # (0: none), and newton_retries + 1 failures there for newton_late_gap (0 here:
    # none); the solve still ends at the exact optimum through the greedy updates
    calls, gaps = [], []
    relative_gap = greedy_cd._relative_gap

    def failing_step(*args):
        calls.append(1)
        return None

    def recording_gap(*args):
        out = relative_gap(*args)
        gaps.append(out[0])
        return out

    X, y = noisy_data(seed=4, n=400, d=4)
    n = y.size
    # warm-started (from C = 1), where steps are tried from the first check; every
    # row cached, so that no variable is set aside (whose return renews the steps)
    start = solve_kernel_greedy(_problem(X, y, 1.0, _rows_mb(n, n)), np.zeros(n),
                                np.zeros(n, bool), tol=1e-9, max_iter=100000,
                                random_state=None).alpha
    monkeypatch.setattr(greedy_cd, "_newton_step", failing_step)
    monkeypatch.setattr(greedy_cd, "_relative_gap", recording_gap)
    _options(monkeypatch, newton_below_gap=np.inf)
    _options(monkeypatch, newton_early_min_free=0)
    _options(monkeypatch, newton_retry_gap=retry_gap)
    _options(monkeypatch, newton_late_gap=0.0)
    _options(monkeypatch, newton_retries=retries)
    problem = _problem(X, y, 10.0, _rows_mb(n, n), newton=NewtonCache())
    truth = solve_svm_dual(10.0, Q=_signed_gram(X, y))
    res = solve_kernel_greedy(problem, start, np.zeros(n, bool), tol=1e-9,
                              max_iter=100000, random_state=None)
    check_against_truth(problem, res, truth, 1e-9)
    assert len(calls) == (retries + 1) * (2 if retry_gap else 1)
    assert gaps[0] > 1e-2  # the first steps came from above the retry gap


def test_gap_checks_come_at_most_a_quarter_epoch_apart(monkeypatch):
    """However many checks came before, a call of the greedy loop runs at most
    ``check_eighths`` / 8 epochs of updates before the next gap check (a growing budget
    would let one call run far past the tolerance), and the solve still ends at the
    exact optimum."""
    budgets = []
    original = greedy_cd.greedy_updates

    def recording(*args, **kwargs):
        budgets.append(args[14])
        return original(*args, **kwargs)

    monkeypatch.setattr(greedy_cd, "greedy_updates", recording)
    X, y = noisy_data(seed=5, n=400, d=4)
    n = y.size
    problem = _problem(X, y, 50.0, _rows_mb(400, n), newton=None)
    truth = solve_svm_dual(50.0, Q=_signed_gram(X, y))
    res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-10,
                              max_iter=100000, random_state=None)
    check_against_truth(problem, res, truth, 1e-9)
    assert len(budgets) > greedy_cd.DEFAULT_OPTIONS.check_eighths + 2  # the cap was reached
    assert max(budgets) == greedy_cd.DEFAULT_OPTIONS.check_eighths * n // 8


@pytest.mark.parametrize("columns", ["every", "shuffled", "subset"])
@pytest.mark.parametrize("kernel_mb", [50.0, 0.0])
def test_rows_written_in_place_equal_the_signed_blocks(columns, kernel_mb):
    """A fetch writes each row once (through the kernel's row cache when W spans the
    samples, else from a computed block): bit for bit the signed block of the same
    rows, whether W is every sample in order, every sample shuffled or a subset, and
    whether the kernel's own cache holds the rows or not."""
    X, y = noisy_data(seed=4, n=120, d=3)
    n = y.size
    km = KernelMatrix(X, "rbf", {"gamma": GAMMA}, 1.0, cache_size=kernel_mb)
    km.cache_bytes = _rows_mb(30, n) * 2**20  # the solver's rows: 30 of them
    problem = BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.ones(n),
                    sqnorm=km.diag(), kernel=km)
    W = {"every": np.arange(n), "shuffled": np.random.default_rng(0).permutation(n),
         "subset": np.arange(0, n, 3)}[columns]
    cache = RowCache(problem, W)
    Q = _signed_gram(X, y)
    for positions in (np.arange(0, 20), np.array([25, 3, 31, 7]), np.arange(30, 38)):
        positions = positions[positions < W.size]
        cache.fetch(problem, positions)
        want = cache.signed(problem, positions)
        got = cache.rows[cache.slot[positions]]
        assert got.tobytes() == want.tobytes()
        np.testing.assert_allclose(got, Q[np.ix_(W[positions], W)], atol=1e-12)


def test_newton_block_from_cached_and_missing_rows_equals_the_signed_gram():
    """The interior block a Newton step factorises: cached rows' columns copied, the
    missing rows computed; bit for bit the rows the cache serves."""
    X, y = noisy_data(seed=6, n=90, d=3)
    problem = _problem(X, y, 1.0, _rows_mb(20, 90))
    W = np.random.default_rng(1).permutation(90)
    cache = RowCache(problem, W)
    cache.fetch(problem, np.arange(10, 25))
    interior = np.array([3, 12, 40, 11, 24, 60, 17])  # cached and missing rows
    block = row_cache.CachedBlock(problem, cache)[np.ix_(interior, interior)]
    Q = _signed_gram(X, y)
    np.testing.assert_allclose(block, Q[np.ix_(W[interior], W[interior])], atol=1e-12)
    want = cache.signed(problem, interior)[:, interior]
    assert block.tobytes() == want.tobytes()


def test_newton_steps_beyond_the_largest_system_take_a_subset(monkeypatch):
    """When the interior set exceeds the largest Newton system, a step is taken on its
    most violating variables (the others held): no system exceeds the largest size,
    and the solve reaches the exact optimum."""
    sizes = []
    step = greedy_cd._newton_step

    def recording_step(problem, cache, a, g, lo, hi, interior, *rest):
        sizes.append(interior.size)
        return step(problem, cache, a, g, lo, hi, interior, *rest)

    monkeypatch.setattr(greedy_cd, "_newton_step", recording_step)
    _options(monkeypatch, newton_below_gap=np.inf)
    X, y = noisy_data(seed=4, n=500, d=4)
    n = y.size
    problem = _problem(X, y, 30.0, _rows_mb(60, n),
                       newton=NewtonCache(NewtonOptions(max_system=25)))
    truth = solve_svm_dual(30.0, Q=_signed_gram(X, y))
    res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                              max_iter=100000, random_state=None)
    check_against_truth(problem, res, truth, 1e-9)
    assert sizes and max(sizes) == 25
    free = (truth.alpha > 1e-9) & (truth.alpha < 30.0 - 1e-9)
    assert int(free.sum()) > 25  # the interior set exceeded the largest system


def test_newton_steps_resume_early_when_pending_variables_return(monkeypatch):
    """Once early Newton steps would have raised the objective (they were scaled down
    along their direction), later steps wait for a small gap;
    when pending variables return to W the interior set changes and the gap opens again,
    and the next step is taken as early as at the start of a solve (else a large-C
    solve could crawl through the rest of its gap on greedy updates alone). A path of
    800 samples with 80 cached rows up to C = 1000, where this happens at the last value (without
    the pending check before the first step, which takes the returns before it, and
    with one round per step, whose clipped steps are the ones scaled down)."""
    _options(monkeypatch, early_pending_check=False)
    _options(monkeypatch, newton_fix_rounds=1)
    _options(monkeypatch, newton_below_gap=5e-2)
    events = []
    newton, add_columns, relative_gap = (greedy_cd._newton_step, greedy_cd._add_columns,
                                         greedy_cd._relative_gap)

    def record(name, fn, pick):
        def wrapper(*args):
            out = fn(*args)
            events.append((name, pick(args, out)))
            return out
        return wrapper

    monkeypatch.setattr(greedy_cd, "_newton_step",
                        record("newton", newton, lambda a, out: out))
    monkeypatch.setattr(greedy_cd, "_add_columns",
                        record("return", add_columns, lambda a, out: a[3].size))
    monkeypatch.setattr(greedy_cd, "_relative_gap",
                        record("gap", relative_gap, lambda a, out: out[0]))
    X, y = noisy_data(seed=1, n=800, d=5, flip=0.1)
    n = y.size
    keeper, prev = NewtonCache(), np.zeros(n)
    for C in (0.1, 1.0, 10.0, 100.0, 1000.0):
        events.clear()
        problem = _problem(X, y, C, _rows_mb(80, n), newton=keeper)
        res = solve_kernel_greedy(problem, np.clip(prev, 0.0, C), np.zeros(n, bool),
                                  tol=1e-8, max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen)
        assert res.converged
        prev = res.alpha
    raised = next(k for k, (name, v) in enumerate(events)
                  if name == "newton" and v is not None and not v[1])
    back = next(k for k, (name, _) in enumerate(events) if name == "return" and k > raised)
    step = next(k for k, (name, _) in enumerate(events) if name == "newton" and k > back)
    gap_before_step = [v for name, v in events[back:step] if name == "gap"][-1]
    assert gap_before_step > greedy_cd.DEFAULT_OPTIONS.newton_late_gap


@pytest.mark.parametrize("early", [True, False])
def test_pending_variables_are_checked_before_the_first_newton_step(monkeypatch, early):
    """A warm-started solve with pending variables checks them (and takes back the
    violators) before its first Newton step, so that the step's factorisation holds
    them; the solutions are the exact ones either way. A path of 400 samples with 40
    cached rows, where warm-started solves start with pending variables when Newton
    steps wait for a gap of 5e-2 (from the first check, they finish the solves before
    W is narrowed)."""
    _options(monkeypatch, early_pending_check=early)
    _options(monkeypatch, newton_below_gap=5e-2)
    events = []
    newton, gradient = greedy_cd._newton_step, PendingMargins.gradient

    def recording_newton(*args):
        events.append("newton")
        return newton(*args)

    def recording_check(self, *args):
        events.append("check")
        return gradient(self, *args)

    monkeypatch.setattr(greedy_cd, "_newton_step", recording_newton)
    monkeypatch.setattr(PendingMargins, "gradient", recording_check)
    X, y = noisy_data(seed=1, n=400, d=5, flip=0.1)
    n = y.size
    Q = _signed_gram(X, y)
    keeper, prev = NewtonCache(), np.zeros(n)
    both = 0
    for C in (0.1, 1.0, 10.0):
        events.clear()
        problem = _problem(X, y, C, _rows_mb(40, n), newton=keeper)
        res = solve_kernel_greedy(problem, np.clip(prev, 0.0, C), np.zeros(n, bool),
                                  tol=1e-9, max_iter=100000, random_state=None)
        check_against_truth(problem, res, solve_svm_dual(C, Q=Q), 1e-8)
        prev = res.alpha
        if "newton" in events and "check" in events:
            both += 1
            assert (events[0] == "check") == early
    assert both


def test_returning_variables_renew_the_newton_budget(monkeypatch):
    """A solve's Newton steps are limited (``newton_max_steps``), but when pending
    variables return to W after the budget is spent, the interior set has changed and
    further steps may come (half the budget), instead of greedy updates crawling
    through the rest of the solve alone. Here with a budget of two, on the path of the
    test above."""
    _options(monkeypatch, newton_max_steps=2)
    _options(monkeypatch, newton_below_gap=np.inf)
    _options(monkeypatch, newton_early_min_free=0)
    events = []
    newton, add_columns = greedy_cd._newton_step, greedy_cd._add_columns

    def recording_newton(*args):
        events.append("newton")
        return newton(*args)

    def recording_return(*args):
        events.append("return")
        return add_columns(*args)

    monkeypatch.setattr(greedy_cd, "_newton_step", recording_newton)
    monkeypatch.setattr(greedy_cd, "_add_columns", recording_return)
    X, y = noisy_data(seed=1, n=800, d=5, flip=0.1)
    n = y.size
    keeper, prev = NewtonCache(), np.zeros(n)
    renewed = False
    for C in (0.1, 1.0, 10.0, 100.0, 1000.0):
        events.clear()
        problem = _problem(X, y, C, _rows_mb(80, n), newton=keeper)
        res = solve_kernel_greedy(problem, np.clip(prev, 0.0, C), np.zeros(n, bool),
                                  tol=1e-8, max_iter=100000, random_state=None,
                                  dynamic_screen=gap_ball_screen)
        assert res.converged
        prev = res.alpha
        spent = 0
        for k, event in enumerate(events):
            spent += event == "newton"
            if event == "return" and spent >= 2 and "newton" in events[k + 1:]:
                renewed = True
    assert renewed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_loop_on_the_kernels_own_rows_makes_the_signed_rows_updates(monkeypatch, seed):
    """When the kernel's row cache holds every row, the solver reads it in place
    (unsigned) and runs its loop on b = S alpha: the same updates as on the signed rows
    of a copy, value for value, and the exact optimum (Newton steps off, whose gradient
    updates sum in another order)."""
    _options(monkeypatch, newton_below_gap=0.0)
    X, y = noisy_data(seed=seed, n=300, d=4)
    n = y.size
    truth = solve_svm_dual(5.0, Q=_signed_gram(X, y))
    answers = []
    for in_place in (True, False):
        if not in_place:
            monkeypatch.setattr(greedy_cd.KernelRowView, "possible",
                                staticmethod(lambda problem: False))
        problem = _problem(X, y, 5.0, 50.0, newton=NewtonCache())
        res = solve_kernel_greedy(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                                  max_iter=100000, random_state=None)
        assert isinstance(problem.newton.rows, greedy_cd.KernelRowView) == in_place
        check_against_truth(problem, res, truth, 1e-9)
        answers.append(res.alpha)
    assert np.array_equal(answers[0], answers[1])


def test_the_kernels_own_rows_serve_as_signed_rows():
    """Read in place, the kernel's rows give the signed products, blocks and narrowed
    copies of Q; the view is dropped for another kernel or other signs."""
    X, y = noisy_data(seed=3, n=200, d=3)
    n = y.size
    Q = _signed_gram(X, y)
    problem = _problem(X, y, 1.0, 50.0)
    view = greedy_cd.KernelRowView(problem)
    rng = np.random.default_rng(0)
    positions = rng.permutation(n)[:30]
    view.fetch(problem, positions[:10])
    out = rng.standard_normal(n)
    want = out + Q[positions].T @ np.linspace(-1, 1, 30)
    view.accumulate(problem, out, positions, np.linspace(-1, 1, 30))
    np.testing.assert_allclose(out, want, atol=1e-12)
    rows, cols = positions[:7], np.sort(positions[10:])
    np.testing.assert_allclose(row_cache.CachedBlock(problem, view)[rows, cols],
                               Q[np.ix_(rows, cols)], atol=1e-12)
    keep = np.sort(rng.permutation(n)[:80])
    cached = np.flatnonzero(view.slot >= 0)
    narrow = view.restricted(problem, keep)
    held = np.flatnonzero(narrow.slot >= 0)
    assert held.size and narrow.signs is None
    assert np.array_equal(keep[held], np.intersect1d(keep, cached))
    np.testing.assert_allclose(narrow.rows[narrow.slot[held]],
                               Q[np.ix_(keep[held], keep)], atol=1e-12)
    other = _problem(X, y, 1.0, 50.0)
    flipped = BoxQP(sign=-y, p=np.ones(n), lo=np.zeros(n), hi=np.ones(n),
                    sqnorm=problem.sqnorm, kernel=problem.kernel)
    fresh = greedy_cd.KernelRowView(problem)
    assert fresh.serves(problem)
    assert not fresh.serves(other) and not fresh.serves(flipped)


def test_greedy_options_are_frozen_and_checked():
    """The tuning values: one immutable object whose bad values fail where they are
    given, not deep inside a solve."""
    from dataclasses import FrozenInstanceError

    from sklearn_safescreen.solvers.greedy_options import GreedyOptions

    options = GreedyOptions()
    with pytest.raises(FrozenInstanceError):
        options.prefetch_rows = 8
    assert options.loop_arguments() == dict(dense_share=0.25, parallel_min=2048,
                                            patience=options.team_patience)
    for bad, error in ((dict(prefetch_rows=0), ValueError),
                       (dict(newton_below_gap=float("nan")), ValueError),
                       (dict(prefer_cached=-0.1), ValueError),
                       (dict(partner_any=1), TypeError),
                       (dict(shrink_every=10.0), TypeError),
                       (dict(parallel_min=True), TypeError)):
        with pytest.raises(error, match=next(iter(bad))):
            GreedyOptions(**bad)
    # a valid change keeps every other default
    changed = replace(options, newton_below_gap=np.inf)
    assert changed.newton_below_gap == np.inf and changed.prefetch_rows == 32
