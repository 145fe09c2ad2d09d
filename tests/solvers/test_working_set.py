"""Screening-driven working sets and the kernel Newton step (solvers/working_set.py,
solvers/dual_cd.py) on problems large enough to use them, against the independent
exact solver of tests/screening/_svm_truth.py and against the plain solver."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.kernels import KernelMatrix
from sklearn_safescreen.screening.balls import SCREEN_RTOL, gap_ball_screen
from sklearn_safescreen.solvers import dual_cd, working_set
from sklearn_safescreen.solvers.box_ipm import LowRankTerm, box_qp_ipm, ipm_low_rank_dense
from sklearn_safescreen.solvers.dual_cd import solve_box_qp
from sklearn_safescreen.solvers.newton import NewtonCache
from sklearn_safescreen.solvers.working_set import (
    WS_MIN_PROBLEM,
    solve_plain_then_working_set,
    solve_working_set,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "screening"))
from _svm_truth import (  # noqa: E402
    HYPOTHESIS_SETTINGS,
    augment,
    noisy_data,
    solve_svm_dual,
)


def _linear_problem(X, y, C, sparse=False):
    Xa = augment(X, 1.0)
    Xa = sp.csr_matrix(Xa) if sparse else np.ascontiguousarray(Xa)
    n = y.size
    sq = np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel() if sparse else (Xa**2).sum(1)
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=sq, X=Xa)


def _kernel_problem(X, y, C, gamma):
    km = KernelMatrix(X, "rbf", {"gamma": gamma}, 1.0, cache_size=50)
    n = y.size
    return BoxQP(sign=y, p=np.ones(n), lo=np.zeros(n), hi=np.full(n, C), sqnorm=km.diag(),
                 kernel=km)


def _check_against_truth(problem, res, truth, tol):
    q = problem.margins(res.alpha)
    # same optimum: margins (i.e. w) agree with the exact solution
    np.testing.assert_allclose(q, truth.margins, atol=1e-4 * max(1.0, np.abs(q).max()))
    # safety: every fixed variable sits at the bound the exact optimum demands
    fixed_lo = res.fixed & (res.alpha <= problem.lo)
    fixed_hi = res.fixed & (res.alpha >= problem.hi)
    assert not np.any(fixed_lo & truth.true_L()), "fixed at 0 but inside the margin"
    assert not np.any(fixed_hi & truth.true_R()), "fixed at C but outside the margin"
    assert res.converged and res.rel_gap <= tol


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_linear_working_set_equals_exact_solution(C, sparse):
    X, y = noisy_data(seed=3, n=1500, d=8)
    problem = _linear_problem(X, y, C, sparse)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    n = y.size
    res = solve_working_set(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                            max_iter=100000, random_state=np.random.RandomState(0),
                            dynamic_screen=gap_ball_screen)
    _check_against_truth(problem, res, truth, 1e-9)
    # the final gap ball proves most samples' bounds
    assert res.fixed.sum() > 0.5 * n


@pytest.mark.parametrize("C", [0.1, 3.0])
def test_kernel_working_set_and_newton_equal_exact_solution(C):
    X, y = noisy_data(seed=5, n=600, d=4)
    gamma = 0.5
    problem = _kernel_problem(X, y, C, gamma)
    Q = y[:, None] * (np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1.0) * y
    truth = solve_svm_dual(C, Q=0.5 * (Q + Q.T))
    n = y.size
    res = solve_working_set(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                            max_iter=100000, random_state=np.random.RandomState(0),
                            dynamic_screen=gap_ball_screen)
    _check_against_truth(problem, res, truth, 1e-9)
    # the plain solver (with its Newton step on the interior set) agrees too
    plain = solve_box_qp(problem, np.zeros(n), np.zeros(n, bool), tol=1e-9,
                         max_iter=100000, random_state=np.random.RandomState(1))
    _check_against_truth(problem, plain, truth, 1e-9)


def test_working_set_respects_prefixed_variables_and_warm_start():
    """Variables fixed on entry stay fixed; a warm start from another C converges to
    the same point as a cold start."""
    X, y = noisy_data(seed=8, n=1200, d=6)
    C = 2.0
    problem = _linear_problem(X, y, C)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    fixed = truth.true_R(1e-3)  # safely decided at 0
    alpha0 = np.where(fixed, 0.0, C / 2)
    res = solve_working_set(problem, alpha0, fixed, tol=1e-9, max_iter=100000,
                            random_state=np.random.RandomState(0),
                            dynamic_screen=gap_ball_screen)
    assert np.all(res.fixed[fixed]) and np.all(res.alpha[fixed] == 0.0)
    _check_against_truth(problem, res, truth, 1e-9)


@settings(max_examples=12, **HYPOTHESIS_SETTINGS)
@given(seed=st.integers(0, 10_000), log_c=st.floats(-2.5, 2.0),
       kernel=st.sampled_from(["linear", "rbf"]), up=st.booleans())
def test_screened_path_equals_unscreened_on_working_set_sizes(seed, log_c, kernel, up):
    """A warm-started step (either direction) big enough for the working-set solver
    gives the unscreened answer; ScreeningRepairWarning is an error in this suite."""
    X, y = noisy_data(seed=seed, n=WS_MIN_PROBLEM + 300, d=5)
    C0 = 10.0**log_c
    C1 = C0 * (3.0 if up else 1 / 3.0)
    params = dict(kernel=kernel, gamma=0.3, tol=1e-10, random_state=0)
    model = SafeSVC(C=C0, warm_start=True, **params).fit(X, y)
    model.set_params(C=C1).fit(X, y)
    plain = SafeSVC(C=C1, screening=None, **params).fit(X, y)
    d_model, d_plain = model.decision_function(X), plain.decision_function(X)
    np.testing.assert_allclose(d_model, d_plain, atol=2e-4 * max(1.0, np.abs(d_plain).max()))
    assert model.dual_gap_[0] >= 0.0


@pytest.mark.parametrize("C", [100.0, 1e4])
def test_kernel_newton_step_at_large_C(C):
    """Near the hard margin CD crawls and the Newton step on the interior set finishes
    the solve; the margins equal an independent conic solve (cvxpy + Clarabel)."""
    cp = pytest.importorskip("cvxpy")
    X, y = noisy_data(seed=2, n=150, d=3, flip=0.02)
    gamma = 1.0
    problem = _kernel_problem(X, y, C, gamma)
    Q = y[:, None] * (np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1.0) * y
    Q = 0.5 * (Q + Q.T)
    n = y.size
    res = solve_box_qp(problem, np.zeros(n), np.zeros(n, bool), tol=1e-10,
                       max_iter=100000, random_state=np.random.RandomState(0))
    assert res.converged and res.rel_gap <= 1e-10
    a = cp.Variable(n)
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q)) - cp.sum(a)),
               [a >= 0, a <= C]).solve(solver=cp.CLARABEL)
    q = problem.margins(res.alpha)
    # Clarabel is accurate to ~1e-8 relative in the objective, ~1e-4 in the margins here
    np.testing.assert_allclose(q, Q @ a.value, atol=1e-3)
    ours = problem.dual_objective(res.alpha, q)
    theirs = -0.5 * a.value @ Q @ a.value + a.value.sum()
    assert ours >= theirs - 1e-7 * abs(theirs)


@pytest.mark.parametrize("screen", [False, True])
def test_compiled_interior_point_matches_python_version(screen):
    """``ipm_low_rank_dense`` is the compiled twin of ``box_qp_ipm`` on a dense
    ``LowRankTerm``: same iterates, same screening decisions, same answer."""
    rng = np.random.RandomState(4)
    n, k = 300, 6
    Z = rng.randn(n, k)
    w_rest = 0.1 * rng.randn(k)
    p = rng.randn(n) * 3.0
    lo, hi = -np.full(n, 0.5), np.full(n, 0.5)
    sqnorm = (Z**2).sum(1)
    alpha0 = rng.uniform(-0.5, 0.5, n)
    py = box_qp_ipm(LowRankTerm(Z, w_rest), p, lo, hi, sqnorm, p_outside=1.5, tol=1e-12,
                    alpha0=alpha0, screen=gap_ball_screen if screen else None)
    nb = ipm_low_rank_dense(Z, w_rest, p, lo, hi, sqnorm, 1.5, 1e-12, alpha0, screen,
                            SCREEN_RTOL, 80)
    np.testing.assert_allclose(nb[0], py[0], atol=1e-9)
    np.testing.assert_array_equal(nb[1], py[1])
    np.testing.assert_array_equal(nb[2], py[2])
    assert nb[1].any() == screen and nb[3] == py[3]


@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_plain_then_working_set_equals_exact_solution(C, monkeypatch):
    """The cold-fit solver: plain coordinate descent until it slows down, then working
    sets from there (forced here on a small problem), from every sample at C."""
    monkeypatch.setattr(dual_cd, "STOP_WHEN_SLOW_MIN", 10)
    monkeypatch.setattr(dual_cd, "IPM_SMALL_FLOPS", 0)  # no immediate polish
    X, y = noisy_data(seed=6, n=1500, d=8)
    problem = _linear_problem(X, y, C)
    truth = solve_svm_dual(C, Z=augment(X, 1.0) * y[:, None])
    n = y.size
    calls = []
    real = working_set.solve_working_set
    monkeypatch.setattr(working_set, "solve_working_set",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    res = solve_plain_then_working_set(problem, np.full(n, C), np.zeros(n, bool), tol=1e-9,
                                       max_iter=100000,
                                       random_state=np.random.RandomState(0),
                                       dynamic_screen=gap_ball_screen)
    _check_against_truth(problem, res, truth, 1e-9)
    if C >= 1.0:  # coordinate descent crawls there: the hand-over must have happened
        assert calls

def test_newton_factor_reuse_solves_the_changed_systems_exactly():
    """Newton systems on interior sets near the factorised one (variables removed,
    added, both, none; in global indices, from a block of other free samples) are solved
    with the old factor, bordered: the same answers as a fresh solve; a set too
    different is factorised afresh."""
    rng = np.random.RandomState(0)
    n = 80
    X = rng.randn(n, 5)
    sign = np.where(rng.rand(n) < 0.5, -1.0, 1.0)
    kernel = KernelMatrix(X, "rbf", {"gamma": 0.2}, 1.0)
    problem = BoxQP(sign=sign, p=np.ones(n), lo=np.zeros(n), hi=np.ones(n),
                            sqnorm=kernel.diag(), kernel=kernel)
    Q_all = kernel.block(np.arange(n), np.arange(n)) * np.outer(sign, sign)
    cache = NewtonCache()

    def check(free, interior):
        Q = Q_all[np.ix_(free, free)]
        rhs = rng.randn(interior.size)
        x = cache.solve(problem, Q.copy(), free, interior, rhs)
        exact = np.linalg.solve(Q[np.ix_(interior, interior)], rhs)
        np.testing.assert_allclose(x, exact, rtol=1e-8, atol=1e-10 * np.abs(exact).max())

    free = np.sort(rng.choice(n, 70, replace=False))
    F_local = np.sort(rng.choice(70, 60, replace=False))
    check(free, F_local)
    F = cache.idx
    np.testing.assert_array_equal(F, free[F_local])
    others = np.setdiff1d(np.arange(70), F_local)
    wider = np.arange(n)  # a later round: every sample free, local = global indices
    cases = [(free, F_local), (free, np.delete(F_local, [3])),
             (free, np.sort(np.r_[F_local, others[:2]])),
             (wider, np.sort(np.r_[np.delete(F, [0, 59]), np.setdiff1d(wider, F)[5]]))]
    for free_, interior in cases:  # at most 5% of 60 changed
        check(free_, interior)
        assert cache.idx is F  # solved with F's factor, bordered
    far = np.sort(np.r_[F[:40], np.setdiff1d(wider, F)])
    check(wider, far)
    np.testing.assert_array_equal(cache.idx, far)  # factorised afresh


def test_kernel_matvec_and_block_from_the_cache_equal_direct_evaluation():
    """The row cache's fast paths (every row cached; all rows added in place) give the
    kernel products and blocks of direct evaluation; with a cache too small the
    computed path is taken."""
    rng = np.random.RandomState(1)
    X = rng.randn(300, 4)
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) + 1.0
    for cache_size in (50, 0.01):  # everything fits / 4 rows fit: computed
        km = KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=cache_size)
        every = np.arange(300)
        for _ in range(2):  # the second time every needed row is already cached
            cols = np.sort(rng.choice(300, 40, replace=False))
            v = rng.randn(40)
            v[::5] = 0.0
            np.testing.assert_allclose(km.matvec(every, cols, v), K[:, cols] @ v,
                                       rtol=1e-12, atol=1e-12)
            rows = np.sort(rng.choice(300, 25, replace=False))
            np.testing.assert_allclose(km.matvec(rows, cols, v), K[np.ix_(rows, cols)] @ v,
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(km.block(cols, rows), K[np.ix_(cols, rows)],
                                       rtol=1e-12, atol=1e-12)


def test_kernel_memory_refusal_counts_the_newton_factor(monkeypatch):
    """A kernel block and the Newton factor beside it that would not fit in half the
    memory are refused with the figure, before anything is allocated."""
    from sklearn_safescreen._utils import memory
    from sklearn_safescreen.problems import kernels

    monkeypatch.setattr(memory, "available_memory", lambda: 2 * 8 * 1000 * 1000)
    kernels.check_kernel_memory(700, 700)  # 7.8 MB of 8 MB: fits
    with pytest.raises(MemoryError, match=r"1000 x 1000 float64 kernel block and Newton "
                                          r"factor of up to 500 variables would need about "
                                          r"0\.01 GiB, more than 50% of the 0\.01 GiB"):
        kernels.check_kernel_memory(1000, 500)
