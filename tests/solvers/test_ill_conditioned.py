"""Linear SafeSVC and SafeLAD on unscaled data (features of very different magnitudes).

On raw breast cancer (features up to ~4e3) the interior-point finisher's Newton systems
lost every digit (a k x k Woodbury matrix of condition number 1e24) and its snapping to
the bounds moved the margins by ``||z_i||^2`` times the snap: a tighter ``tol`` then gave
a *worse* model (tol=1e-6 at C=1: objective 157 against the optimum 49.96). Every fit
must converge, a tighter ``tol`` must never give a larger primal objective, and the
objective must be no larger than the reference solvers' on the same problem (no
intercept on either side: LinearSVC would penalise its intercept differently).
"""

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import QuantileRegressor
from sklearn.svm import LinearSVC

from sklearn_safescreen import SafeLAD, SafeSVC

C_GRID = (0.01, 1.0, 10.0, 1000.0)
TOLS = (1e-4, 1e-6, 1e-8)
#: A tighter tol may give a larger objective only by round-off: the objective sums
#: ~500 terms of the size of the objective itself, each exact to a few ulps (1e-16
#: relative), and the optimum is only determined to the round-off of the margins, which
#: on these data (||x_i|| ~ 4e3, ||w|| ~ 1e2) is ~1e-12 relative; 1e-9 leaves room.
ROUND_OFF = 1e-9
#: Objective versus the reference solvers at tol=1e-8: both are exact up to their
#: stopping rules; 1e-6 relative is far below any real difference found (factors of 3).
VS_REFERENCE = 1e-6
#: Targets below the float64 round-off floor of the relative duality gap, measured:
#: at C=1000, w = sum_i alpha_i s_i x_i sums terms ~1e7 times larger than w itself, and
#: the gap of one point evaluated in float64 moves with the summation order by ~1e-6
#: (raw breast cancer), ~5e-6 (spread SVC) and ~4e-5 (spread LAD) of the objective.
#: Such a target cannot be certified in float64; those fits are expected to warn
#: (xfail, not strict: the summation order can land below the target).
BELOW_FLOOR = {("svc", "breast_cancer", 1000.0, 1e-8), ("svc", "spread", 1000.0, 1e-6),
               ("svc", "spread", 1000.0, 1e-8), ("lad", "spread", 1000.0, 1e-8)}


def _spread_classification(seed=0, n=300, d=12):
    """Separable-ish data whose feature scales are spread over 1e-3 .. 1e4."""
    rng = np.random.RandomState(seed)
    Xs = rng.randn(n, d)
    y = np.where(Xs @ rng.randn(d) + 0.5 * rng.randn(n) > 0, 1, 0)
    return Xs * np.logspace(-3, 4, d), y


def _spread_regression(seed=0, n=200, d=8):
    rng = np.random.RandomState(seed)
    Xs = rng.randn(n, d)
    y = Xs @ rng.randn(d) + 0.3 * rng.standard_t(3, n)
    return Xs * np.logspace(-3, 4, d), y


def _classification(name):
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    return _spread_classification()


def _svc_objective(X, y, w, C):
    s = np.where(y == y.max(), 1.0, -1.0)
    return 0.5 * w @ w + C * np.maximum(0.0, 1.0 - s * (X @ w)).sum()


def _lad_objective(X, y, w, C):
    return 0.5 * w @ w + C * np.abs(y - X @ w).sum()


@functools.cache
def _fit(kind, name, C, tol):
    """(objective, n_iter, max_iter, ConvergenceWarning messages) of one fit."""
    X, y = _classification(name) if kind == "svc" else _regression(name)
    est = (SafeSVC if kind == "svc" else SafeLAD)(C=C, kernel="linear", tol=tol,
                                                   fit_intercept=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X, y)
    objective = (_svc_objective if kind == "svc" else _lad_objective)(
        X, y, est.coef_.ravel(), C)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    return objective, int(np.max(est.n_iter_)), est.max_iter, msgs


def _regression(name):
    if name == "diabetes":
        return load_diabetes(return_X_y=True, scaled=False)
    return _spread_regression()


CASES = [("svc", name, C, tol) for name in ("breast_cancer", "spread") for C in C_GRID
         for tol in TOLS] + [("lad", name, C, tol) for name in ("diabetes", "spread")
                             for C in C_GRID for tol in TOLS]


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(reason="tol below the float64 floor of the gap",
                                            strict=False)) if c in BELOW_FLOOR else c
    for c in CASES], ids=lambda c: "-".join(map(str, c)))
def test_converges_within_max_iter(case):
    _, n_iter, max_iter, msgs = _fit(*case)
    assert not msgs
    assert n_iter < max_iter


def _certifiable(kind, name, C):
    return [t for t in TOLS if (kind, name, C, t) not in BELOW_FLOOR]


@pytest.mark.parametrize("kind,name", [("svc", "breast_cancer"), ("svc", "spread"),
                                       ("lad", "diabetes"), ("lad", "spread")])
@pytest.mark.parametrize("C", C_GRID)
def test_tighter_tol_never_worse(kind, name, C):
    tols = _certifiable(kind, name, C)
    obj = {t: _fit(kind, name, C, t)[0] for t in tols}
    for loose, tight in zip(tols[:-1], tols[1:], strict=True):
        assert obj[tight] <= obj[loose] * (1.0 + ROUND_OFF), (loose, tight, obj)


@pytest.mark.parametrize("name", ["breast_cancer", "spread"])
@pytest.mark.parametrize("C", C_GRID)
def test_svc_objective_at_most_linearsvc(name, C):
    X, y = _classification(name)
    ours = _fit("svc", name, C, _certifiable("svc", name, C)[-1])[0]
    ref = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=False, tol=1e-8,
                    max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # its stall is its own
        ref.fit(X, y)
    assert ours <= _svc_objective(X, y, ref.coef_.ravel(), C) * (1.0 + VS_REFERENCE)


@pytest.mark.parametrize("name", ["diabetes", "spread"])
@pytest.mark.parametrize("C", C_GRID)
def test_lad_objective_at_most_quantile_regressor(name, C):
    """QuantileRegressor minimises (1/n) sum pinball_0.5(r) + alpha ||w||_1, i.e.
    (1/(2n)) sum |r| + alpha ||w||_1: with alpha = 1/(2nC) it is our objective divided
    by 2nC with the penalty 1/2||w||^2 replaced by ||w||_1. The penalties differ, so its
    solution is a competitor, not our optimum: our objective at our solution must not
    exceed our objective at its solution."""
    X, y = _regression(name)
    ours = _fit("lad", name, C, _certifiable("lad", name, C)[-1])[0]
    qr = QuantileRegressor(quantile=0.5, alpha=1.0 / (2.0 * X.shape[0] * C),
                           fit_intercept=False, solver="highs").fit(X, y)
    assert ours <= _lad_objective(X, y, qr.coef_, C) * (1.0 + VS_REFERENCE)
