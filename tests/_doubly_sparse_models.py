"""Shared helpers of the doubly sparse tests: random problems, the objectives written
independently of the package (own numpy code from ``doc/theory/doubly_sparse.rst``), an
exact reference optimum and an independent cvxpy/CLARABEL solve.

The exact reference: an unscreened solve of the package to a tiny duality gap fixes the
active set (the non-zero features with their signs, and each sample's piece of the
loss); on that active set the optimality conditions are a linear system (the losses are
piecewise quadratic), solved here and checked piece by piece. The solution satisfies
every optimality condition exactly up to the rounding of one linear solve, so the zeros
of ``w*`` and the samples at ``alpha_i = 0`` or at the end of their box are exact, not
"small".
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from sklearn_safescreen.engine.doubly_sparse import DoublySparsePath, DoublySparseSettings
from sklearn_safescreen.problems.doubly_sparse import DoublySparseData

HINGE, SVR = "hinge", "epsilon_insensitive"


# ------------------------------------------------------------------- problems ---
def make_problem(seed, n=50, d=30, loss=HINGE, *, weights=True, sparse=False, gamma=0.5,
                 epsilon=0.1, density=0.4):
    """``(X, y, c)``: a few informative features, label noise, weights of mean 1."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    if sparse:
        X = X * (rng.rand(n, d) < density)
    w_true = np.zeros(d)
    k = max(1, d // 8)
    w_true[rng.choice(d, k, replace=False)] = rng.randn(k) * 2
    score = X @ w_true
    if loss == HINGE:
        y = np.where(score + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
        if abs(y.sum()) == n:  # both classes
            y[: n // 2] = -y[0]
    else:
        y = score / max(score.std(), 1e-3) + 0.3 * rng.randn(n)
    c = rng.uniform(0.2, 3.0, n) if weights else np.ones(n)
    c = c / c.mean()
    Xs = sp.csr_matrix(X) if sparse else X
    return Xs, y, c


def make_data(seed, n=50, d=30, loss=HINGE, *, weights=True, sparse=False, gamma=0.5,
              epsilon=0.1, density=0.4) -> DoublySparseData:
    X, y, c = make_problem(seed, n, d, loss, weights=weights, sparse=sparse, gamma=gamma,
                           epsilon=epsilon, density=density)
    return DoublySparseData(X, y, c, loss, gamma, epsilon if loss == SVR else 0.0)


def dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


# ---------------------------------------------------------- own objectives ---
def smoothed_hinge(z, gamma):
    z = np.asarray(z, dtype=float)
    return np.where(z <= 0, 0.0, np.where(z >= gamma, z - gamma / 2, z * z / (2 * gamma)))


def zvalues(t, y, loss, epsilon):
    return 1.0 - y * t if loss == HINGE else np.abs(t - y) - epsilon


def alpha_of(t, y, c, loss, gamma, epsilon):
    """``alpha_i = -c_i l'(t_i)`` written from the pieces of the loss."""
    if loss == HINGE:
        return c * y * np.clip((1 - y * t) / gamma, 0, 1)
    u = t - y
    return np.where(u > 0, -1.0, 1.0) * c * np.clip((np.abs(u) - epsilon) / gamma, 0, 1)


def primal(X, y, c, w, lam, beta, loss, gamma, epsilon):
    n = len(y)
    t = dense(X) @ w
    loss_sum = float(c @ smoothed_hinge(zvalues(t, y, loss, epsilon), gamma))
    return lam * (np.abs(w).sum() + beta / 2 * w @ w) + loss_sum / n


def dual(X, y, c, alpha, lam, beta, loss, gamma, epsilon):
    """The dual objective of a feasible ``alpha`` (checked here)."""
    n = len(y)
    if loss == HINGE:
        assert np.all(y * alpha >= 0) and np.all(y * alpha <= c), "infeasible alpha"
        eps = 0.0
    else:
        assert np.all(np.abs(alpha) <= c), "infeasible alpha"
        eps = epsilon
    s = dense(X).T @ alpha
    excess = np.maximum(np.abs(s) / (lam * n) - 1, 0)
    return (float((y * alpha - gamma * alpha**2 / (2 * c) - eps * np.abs(alpha)).sum()) / n
            - lam / (2 * beta) * float(excess @ excess))


def random_feasible_alpha(rng, y, c, loss, at_bounds=0.3):
    """A random dual-feasible point, with a share of its entries at 0 or the box end."""
    n = len(y)
    frac = rng.rand(n)
    frac[rng.rand(n) < at_bounds / 2] = 0.0
    frac[rng.rand(n) < at_bounds / 2] = 1.0
    if loss == HINGE:
        return c * y * frac
    return c * frac * rng.choice([-1.0, 1.0], n)


# ---------------------------------------------------------- exact reference ---
class Reference:
    """The exact optimum ``(w, alpha)`` of one problem at ``(lam, beta)`` with its margins
    ``t``, the piece of each sample (``zero``: alpha_i = 0, ``box``: at the end of its
    box, else inside) and ``slack``: how far the optimality conditions are from being
    tight (the smallest distance of a margin to a kink, of ``|X_j' alpha|`` to ``lam n``
    for zero features, of ``|w_j|`` to 0 for the others); its ``gap`` is recomputed with
    the own objectives."""

    def __init__(self, X, y, c, loss, gamma, epsilon, lam, beta, w, alpha, t):
        self.X, self.y, self.c = X, y, c
        self.loss, self.gamma, self.epsilon = loss, gamma, epsilon
        self.lam, self.beta = lam, beta
        self.w, self.alpha, self.t = w, alpha, t
        self.zero = alpha == 0
        self.box = np.abs(alpha) == c
        self.inside = ~self.zero & ~self.box
        self.box_value = np.where(self.box, alpha, 0.0)
        n = len(y)
        self.s = dense(X).T @ alpha
        self.gap = (primal(X, y, c, w, lam, beta, loss, gamma, epsilon)
                    - dual(X, y, c, alpha, lam, beta, loss, gamma, epsilon))
        z = zvalues(t, y, loss, epsilon)
        kinks = np.minimum(np.abs(z), np.abs(z - gamma))
        corr = np.abs(self.s[w == 0]) / (lam * n)
        self.slack = min(kinks.min(initial=np.inf),
                         np.abs(1 - corr).min(initial=np.inf),
                         np.abs(w[w != 0]).min(initial=np.inf))


def polish(X, y, c, loss, gamma, epsilon, lam, beta, w0, max_rounds=30):
    """The exact optimum from an approximate one ``w0`` (see the module): active-set
    rounds of one linear solve each, until every optimality condition holds."""
    Xd = dense(X)
    n, d = Xd.shape
    w = np.array(w0, dtype=float)
    for _ in range(max_rounds):
        t = Xd @ w
        a = alpha_of(t, y, c, loss, gamma, epsilon)
        s = Xd.T @ a
        active = (w != 0) | (np.abs(s) > lam * n)
        sign = np.where(w != 0, np.sign(w), np.sign(s))
        box = np.abs(a) == c
        inside = (a != 0) & ~box
        # alpha on the inside pieces: c (b - t) / gamma
        if loss == HINGE:
            b = y
        else:
            b = y + np.where(t > y, epsilon, -epsilon)
        A = Xd[np.ix_(inside, active)]
        ci = c[inside] / gamma
        M = A.T @ (ci[:, None] * A) + lam * n * beta * np.eye(int(active.sum()))
        rhs = (Xd[np.ix_(box, active)].T @ a[box] + A.T @ (ci * b[inside])
               - lam * n * sign[active])
        w_new = np.zeros(d)
        w_new[active] = np.linalg.solve(M, rhs)
        if np.array_equal(w_new != 0, active) and np.all(np.sign(w_new[active])
                                                          == sign[active]):
            t_new = Xd @ w_new
            a_new = alpha_of(t_new, y, c, loss, gamma, epsilon)
            same_pieces = (np.array_equal(a_new == 0, a == 0)
                           and np.array_equal(np.abs(a_new) == c, box))
            s_new = Xd.T @ a_new
            if same_pieces and np.all(np.abs(s_new[~active]) <= lam * n):
                return Reference(X, y, c, loss, gamma, epsilon, lam, beta, w_new, a_new,
                                 t_new)
        w_new[active & (np.sign(w_new) != sign)] = 0.0  # a wrong sign: the feature is 0
        if np.array_equal(w_new, w):
            break
        w = w_new
    raise AssertionError("the active-set polish did not settle")


def solve_path(data, lam, beta, *, rule=None, tol=1e-14, w0=None, seed=0):
    """The package's own solve at ``lam`` (``w0``: a previous solution as reference)."""
    path = DoublySparsePath(data)
    if w0 is not None:
        path.w = np.array(w0, dtype=float)
    report = path.new_report()
    out = path.fit(lam, DoublySparseSettings(rule=rule, tol=tol, max_iter=100000,
                                             seed=seed, describe="test", beta=beta),
                   report)
    assert out.converged
    return SimpleNamespace(w=out.reference.w, alpha=out.reference.alpha, gap=out.gap,
                           n_iter=out.n_iter, converged=out.converged), report


def reference(data: DoublySparseData, lam, beta) -> Reference:
    """The exact optimum: the unscreened solve polished on its active set."""
    out, _ = solve_path(data, lam, beta, rule=None, tol=1e-13)
    ref = polish(data.X, data.y, data.weights, data.loss, data.gamma, data.epsilon, lam,
                 beta, out.w)
    assert ref.gap <= 1e-13, ref.gap
    return ref


# ------------------------------------------------------------------- cvxpy ---
def cvx_solve(X, y, c, lam, beta, loss, gamma, epsilon, offset=None, kappa=0.0, n=None):
    """The primal by cvxpy/CLARABEL: each smoothed loss is the Moreau envelope
    ``min_v f(v) + (z - v)^2 / (2 gamma)`` of the plain hinge / epsilon-insensitive loss
    ``f`` (one extra variable per sample). ``offset``, ``kappa`` and ``n`` describe a
    reduced problem: ``- offset' w / n`` and ``kappa / n`` are added, and the loss is
    averaged over ``n`` samples (default: the rows of ``X``)."""
    import cvxpy as cp

    Xd = dense(X)
    m, d = Xd.shape
    n = m if n is None else n
    w = cp.Variable(d)
    v = cp.Variable(m)
    t = Xd @ w
    if loss == HINGE:
        r = 1 - cp.multiply(y, t)
        plain = cp.pos(v)
    else:
        r = t - y
        plain = cp.pos(cp.abs(v) - epsilon)
    env = plain + cp.square(r - v) / (2 * gamma)
    obj = lam * (cp.norm1(w) + beta / 2 * cp.sum_squares(w)) + (c @ env) / n
    if offset is not None:
        obj = obj - (offset @ w) / n + kappa / n
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert prob.status == cp.OPTIMAL, prob.status
    return np.asarray(w.value), float(prob.value)
