"""Linear SafeSVC and SafeLAD on unscaled data (features of very different magnitudes).

On raw breast cancer (features up to ~4e3) the interior-point finisher's Newton systems
lost every digit (a k x k Woodbury matrix of condition number 1e24), its snapping to the
bounds moved the margins by ``||z_i||^2`` times the snap, coordinate descent measured its
gap on a drifted w and spoilt the finisher's point: a tighter ``tol`` then gave a
*worse* model (tol=1e-6 at C=1: objective 157 against the optimum 49.96). Every fit must
stop well within max_iter, warning only where its tol is below the float64 round-off of
the gap; a tighter ``tol`` must never give a larger primal objective; and the objective
must be no larger than the reference solvers' on the same problem (no intercept on
either side: LinearSVC would penalise its intercept differently).
"""

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import QuantileRegressor
from sklearn.svm import LinearSVC

from sklearn_safescreen import PrecisionWarning, SafeLAD, SafeSVC

C_GRID = (0.01, 1.0, 10.0, 1000.0)
TOLS = (1e-4, 1e-6, 1e-8)
#: A tighter tol's objective can exceed a looser one's by at most its own certified gap;
#: these problems are small enough for the interior-point finisher to polish every fit
#: to a gap of ~1e-11 whatever tol (``DualCDOptions.ipm_small_flops``), so only that
#: residual and the round-off of the objective (sums of ~500 terms, 1e-13 relative)
#: separate them.
ROUND_OFF = 1e-9
#: Objective versus the reference solvers at tol=1e-8: both are exact up to their
#: stopping rules; 1e-6 relative is far below any real difference found (factors of 3).
VS_REFERENCE = 1e-6
#: Summation orders over which the float64 round-off of a point's duality gap is
#: measured (:func:`_gap_round_off`).
N_ORDERS = 20


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


def _gap_round_off(kind, X, y, model, C) -> float:
    """Largest relative duality gap of the model's dual point when w = sum_i a_i x_i is
    summed in ``N_ORDERS`` random orders: where it exceeds tol, a gap below tol cannot
    be certified in float64 (at C=1000 on these data w sums terms ~1e7 times larger than
    itself)."""
    a = np.zeros(y.shape[0])
    a[model.support_] = model.dual_coef_.ravel()  # s_i alpha_i
    if kind == "svc":
        s, p, lo = np.where(y == y.max(), 1.0, -1.0), np.ones(y.shape[0]), 0.0
    else:
        s, p, lo = np.ones(y.shape[0]), y, -C
    alpha = s * a
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(N_ORDERS):
        order = rng.permutation(y.shape[0])
        w = X[order].T @ a[order]
        g = s * (X @ w) - p
        gap = np.sum(np.maximum(-lo * g, -C * g) + alpha * g)
        worst = max(worst, gap / abs(p @ alpha - 0.5 * w @ w))
    return worst


@functools.cache
def _fit(kind, name, C, tol):
    """(objective, n_iter, max_iter, warned, gap round-off) of one fit."""
    X, y = _classification(name) if kind == "svc" else _regression(name)
    est = (SafeSVC if kind == "svc" else SafeLAD)(C=C, kernel="linear", tol=tol,
                                                   fit_intercept=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        warnings.simplefilter("always", PrecisionWarning)
        est.fit(X, y)
    objective = (_svc_objective if kind == "svc" else _lad_objective)(
        X, y, est.coef_.ravel(), C)
    # either warning says the fit did not certify its tol
    warned = any(issubclass(w.category, ConvergenceWarning | PrecisionWarning)
                 for w in caught)
    return (objective, int(np.max(est.n_iter_)), est.max_iter, warned,
            _gap_round_off(kind, X, y, est, C))


def _regression(name):
    if name == "diabetes":
        return load_diabetes(return_X_y=True, scaled=False)
    return _spread_regression()


CASES = [("svc", name, C, tol) for name in ("breast_cancer", "spread") for C in C_GRID
         for tol in TOLS] + [("lad", name, C, tol) for name in ("diabetes", "spread")
                             for C in C_GRID for tol in TOLS]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_converges_within_max_iter(case):
    """Every fit stops well within max_iter; it may warn only when its tol is below the
    float64 round-off of the gap at its point (then no solver can certify it: the
    measured cases are tol=1e-8 at C=1000 on raw breast cancer, C in {10, 1000} on the
    spread set, and C=1000 with tol <= 1e-6 for LAD on the spread set)."""
    _, n_iter, max_iter, warned, round_off = _fit(*case)
    assert n_iter < max_iter
    assert not warned or round_off > case[-1]


def _slack(fit) -> float:
    """Relative slack on a fit's objective: round-off (ROUND_OFF) when it certified its
    tol, else its gap's round-off (its objective is within its gap of the optimum)."""
    return max(ROUND_OFF, fit[4]) if fit[3] else ROUND_OFF


@pytest.mark.parametrize("kind,name", [("svc", "breast_cancer"), ("svc", "spread"),
                                       ("lad", "diabetes"), ("lad", "spread")])
@pytest.mark.parametrize("C", C_GRID)
def test_tighter_tol_never_worse(kind, name, C):
    fits = {t: _fit(kind, name, C, t) for t in TOLS}
    for loose, tight in zip(TOLS[:-1], TOLS[1:], strict=True):
        assert fits[tight][0] <= fits[loose][0] * (1.0 + _slack(fits[tight])), (
            loose, tight, fits)


@pytest.mark.parametrize("name", ["breast_cancer", "spread"])
@pytest.mark.parametrize("C", C_GRID)
def test_svc_objective_at_most_linearsvc(name, C):
    X, y = _classification(name)
    fit = _fit("svc", name, C, TOLS[-1])
    ref = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=False, tol=1e-8,
                    max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # its stall is its own
        ref.fit(X, y)
    assert fit[0] <= _svc_objective(X, y, ref.coef_.ravel(), C) * (
        1.0 + max(VS_REFERENCE, _slack(fit)))


@pytest.mark.parametrize("name", ["diabetes", "spread"])
@pytest.mark.parametrize("C", C_GRID)
def test_lad_objective_at_most_quantile_regressor(name, C):
    """QuantileRegressor minimises (1/n) sum pinball_0.5(r) + alpha ||w||_1, i.e.
    (1/(2n)) sum |r| + alpha ||w||_1: with alpha = 1/(2nC) it is our objective divided
    by 2nC with the penalty 1/2||w||^2 replaced by ||w||_1. The penalties differ, so its
    solution is a competitor, not our optimum: our objective at our solution must not
    exceed our objective at its solution."""
    X, y = _regression(name)
    fit = _fit("lad", name, C, TOLS[-1])
    qr = QuantileRegressor(quantile=0.5, alpha=1.0 / (2.0 * X.shape[0] * C),
                           fit_intercept=False, solver="highs").fit(X, y)
    assert fit[0] <= _lad_objective(X, y, qr.coef_, C) * (
        1.0 + max(VS_REFERENCE, _slack(fit)))
