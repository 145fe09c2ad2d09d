"""Newton steps on the interior variables of a kernel box QP and the kept factor
(solvers/newton.py): exact at large C, and bordered solves equal fresh ones."""

from __future__ import annotations

import numpy as np
import pytest
from _box_models import kernel_problem
from _svm_truth import (
    noisy_data,
)

from sklearn_safescreen.problems.box_qp import BoxQP
from sklearn_safescreen.problems.kernels import KernelMatrix
from sklearn_safescreen.solvers.dual_cd import solve_box_qp
from sklearn_safescreen.solvers.newton import NewtonCache


@pytest.mark.parametrize("C", [100.0, 1e4])
def test_kernel_newton_step_at_large_C(C):
    """Near the hard margin CD crawls and the Newton step on the interior set finishes
    the solve; the margins equal an independent conic solve (cvxpy + Clarabel)."""
    cp = pytest.importorskip("cvxpy")
    X, y = noisy_data(seed=2, n=150, d=3, flip=0.02)
    gamma = 1.0
    problem = kernel_problem(X, y, C, gamma)
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




def test_signed_block_is_kept_for_the_same_samples_signs_and_kernel():
    """The dense solver's signed kernel block is gathered once along a path whose free
    set does not change, read-only (a solve writing into it would corrupt the next
    ones), and gathered afresh when the samples, the signs or the kernel change, or
    after a fit that is not kept."""
    rng = np.random.RandomState(0)
    X, y = rng.randn(60, 4), np.where(rng.rand(60) < 0.5, 1.0, -1.0)
    problem = kernel_problem(X, y, 1.0, 0.3)
    cache = NewtonCache()
    free = np.arange(5, 60)
    Q = cache.signed_block(problem, free)
    K = problem.kernel.block(free, free)
    np.testing.assert_allclose(Q, K * y[free][:, None] * y[free][None, :], rtol=1e-12)
    assert not Q.flags.writeable
    assert cache.signed_block(problem, free.copy()) is Q
    assert cache.signed_block(problem, free[1:]) is not Q
    Q = cache.signed_block(problem, free)
    flipped = kernel_problem(X, np.where(np.arange(60) == 7, -y, y), 1.0, 0.3)
    flipped.kernel = problem.kernel
    Q2 = cache.signed_block(flipped, free)
    assert Q2 is not Q and Q2[2, 3] == -Q[2, 3]
    assert cache.signed_block(kernel_problem(X, y, 1.0, 0.3), free) is not Q2
    Q3 = cache.signed_block(problem, free)
    cache.end_fit(keep=True)
    assert cache.signed_block(problem, free) is Q3
    cache.end_fit(keep=False)
    assert cache.signed_block(problem, free) is not Q3


def test_large_factor_is_kept_between_fits_only_within_a_walk():
    """Between the fits of a path a factor larger than ``keep_system`` (and than the
    kernel cache's budget) is dropped, unless the fits are one walk's, whose estimator
    is discarded after it; without a warm start nothing is kept."""
    from sklearn_safescreen.solvers.newton import NewtonOptions

    def cache_with_factor(m):
        cache = NewtonCache(NewtonOptions(keep_system=10))
        cache.idx, cache.factor = np.arange(m), np.eye(m)
        cache.keep_bytes = 8.0 * 20**2
        return cache

    small = cache_with_factor(20)  # within keep_bytes
    small.end_fit(keep=True)
    assert small.idx is not None
    large = cache_with_factor(50)
    large.end_fit(keep=True)
    assert large.idx is None and large.factor is None
    walked = cache_with_factor(50)
    walked.end_fit(keep=True, walk=True)
    assert walked.factor is not None and walked.idx.size == 50
    walked.end_fit(keep=False, walk=True)
    assert walked.idx is None


def test_search_walks_mark_their_fits_and_plain_fits_do_not(monkeypatch):
    """RegularizationPathCV's fold walks end every fit with ``walk=True``; a user's
    warm-started path (whose model outlives its fits) and the refit with False."""
    from sklearn.datasets import make_classification

    from sklearn_safescreen import RegularizationPathCV, SafeSVC
    from sklearn_safescreen.engine.box_qp import BoxQPPath

    seen = []
    end_fit = BoxQPPath.end_fit

    def recording(self, keep, walk=False):
        seen.append((keep, walk))
        end_fit(self, keep, walk)

    monkeypatch.setattr(BoxQPPath, "end_fit", recording)
    X, y = make_classification(120, 5, random_state=0)
    RegularizationPathCV(SafeSVC(kernel="rbf"), values=[0.1, 1.0], cv=2).fit(X, y)
    walks, refit = seen[:-1], seen[-1]
    assert len(walks) == 4 and all(keep and walk for keep, walk in walks)
    assert refit == (False, False)
    seen.clear()
    model = SafeSVC(kernel="rbf", warm_start=True)
    for C in (0.1, 1.0):
        model.set_params(C=C).fit(X, y)
    assert seen == [(True, False), (True, False)]
