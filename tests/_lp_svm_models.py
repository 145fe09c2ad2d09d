"""Shared helpers of the LP-SVM tests: random problems and an independent solve of the
full linear program, written here from its definition (not through the package):

    min  lam * sum(p + q) + (1/n) * sum(s * xi)
    s.t. -y_i x_i^T (p - q) - xi_i <= -1,   p, q, xi >= 0,

solved by HiGHS (``scipy.optimize.linprog``) at tight tolerances, with the dual
``a_i = -n * marginal_i`` of each sample's constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

#: Magnitude below which an entry of the reference ``w*`` counts as zero (HiGHS returns
#: exact zeros for non-basic variables; basic ones are far larger on these problems).
ZERO = 1e-10


@dataclass
class Optimum:
    w: np.ndarray
    a: np.ndarray  # y_i * alpha_i, in [0, s_i]
    value: float
    margins: np.ndarray


def make_problem(seed, n=40, d=25, *, sparse=False, weights=False, intercept=False,
                 density=0.4):
    """``(X, y, s)``: a few informative features, label noise; optional sparse X (CSR),
    weights in [0.5, 2] and a constant column of value 1 (the penalised intercept)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    if sparse:
        X = X * (rng.rand(n, d) < density)
    y = np.sign(X[:, :3] @ np.array([1.0, -1.0, 0.5]) + 0.3 + 0.5 * rng.randn(n))
    y[y == 0] = 1.0
    if intercept:
        X = np.hstack([X, np.ones((n, 1))])
    s = rng.uniform(0.5, 2.0, n) if weights else np.ones(n)
    return (sp.csr_matrix(X) if sparse else X), y, s


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def lambda_max(X, y, s):
    return float(np.abs(dense(X).T @ (y * s)).max()) / len(y)


def primal(X, y, s, w, lam):
    return lam * np.abs(w).sum() + float(s @ np.maximum(1.0 - y * (dense(X) @ w), 0.0)) \
        / len(y)


def solve_full(X, y, s, lam) -> Optimum:
    Xd = dense(X)
    n, d = Xd.shape
    Z = y[:, None] * Xd
    c = np.r_[np.full(2 * d, lam), s / n]
    A = np.hstack([-Z, Z, -np.eye(n)])
    res = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    w = res.x[:d] - res.x[d:2 * d]
    return Optimum(w, -n * res.ineqlin.marginals, float(res.fun), Z @ w)


def tied_problem(seed: int, n: int, d: int, levels: int, density: float | None = None,
                 dup: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A degenerate problem: small integer entries in ``-levels..levels`` (tied
    correlations and margins), a share ``density`` of them nonzero (None: no entry
    zeroed on purpose), optionally half the rows and the first column duplicated;
    labels +-1 with both classes present."""
    rng = np.random.RandomState(seed)
    X = rng.randint(-levels, levels + 1, size=(n, d))
    if density is not None:
        X = X * (rng.rand(n, d) < density)
    X = X.astype(float)
    if dup:
        X = np.vstack([X, X[: n // 2]])
        X = np.hstack([X, X[:, :1]])
    y = rng.choice([-1.0, 1.0], size=X.shape[0])
    y[:2] = [-1.0, 1.0]
    return X, y
