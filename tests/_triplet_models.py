"""Shared triplet test helpers: a small problem, an independent CLARABEL solve of the
primal, and the explicit primal and dual objectives (doc/theory/metric_learning.rst)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.triplets import build_triplets


def small_problem(seed=0, n=18, d=3, k=2, diagonal=False):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(n, d) + 0.8 * y[:, None] * rng.randn(1, d)
    return X, y, build_triplets(X, y, k, diagonal)


def cvx_solve(X, ts, lam, gamma, diagonal):
    """Independent solve of the primal (Yoshida et al. 2019, Sec. 2) with CLARABEL."""
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
