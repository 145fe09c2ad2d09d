"""No fit returns a model worse than the trivial point of its own problem.

A problem float64 cannot solve to ``tol`` (here: features scaled by 1e9, so that the
margins cancel in every product) stops uncertified; the engine then compares the
primal objective of its answer with that of w = 0 and keeps the better one. Driven
through the engine so that no input validation stands in the way.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression

from sklearn_safescreen.engine.box_qp import LADPath
from sklearn_safescreen.engine.protocol import StepSettings
from sklearn_safescreen.problems.box_qp_data import LADData


def _primal(data, C, alpha):
    problem = data.problem(C)
    q = problem.margins(alpha)
    return float(problem.gap_terms(alpha, q).sum()) + problem.dual_objective(alpha, q)


@pytest.mark.parametrize("scale", [1.0, 1e9, 1e20])
def test_an_uncertified_lad_fit_is_no_worse_than_zero(scale):
    X, y = make_regression(100, 5, noise=1.0, random_state=0)
    data = LADData(np.ascontiguousarray(X * scale), None, y, np.ones(y.size))
    C = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = LADPath(data)
        outcome = path.fit(C, StepSettings(rule="DVI", tol=1e-6, max_iter=1000),
                           path.new_report())
    alpha = outcome.reference.alpha
    at_zero = _primal(data, C, np.zeros(y.size))
    assert _primal(data, C, alpha) <= at_zero * (1 + 1e-12)
    if scale == 1.0:  # a solvable problem keeps its certified optimum
        assert outcome.converged and _primal(data, C, alpha) < 0.9 * at_zero


def test_a_kernel_model_left_at_zero_predicts_zero(monkeypatch):
    """An RBF fit that stops far from convergence before max_iter (its steps no longer
    reducing the gap, as when rounding dominates them; planted here: max_iter epochs
    reported as one fewer) is replaced by w = 0: it has no support vector and still
    predicts (0 everywhere). A solve cut by max_iter keeps its iterate instead (as
    SVC's); max_iter is below the epochs after which the kernel solver hands this
    small problem to its finisher, which would converge."""
    from dataclasses import replace

    from sklearn_safescreen import SafeLAD
    from sklearn_safescreen.engine import box_qp

    rng = np.random.RandomState(0)
    X = rng.randn(80, 3)
    y = X @ rng.randn(3) + 0.5 + rng.laplace(size=80)
    kw = dict(C=100.0, kernel="rbf", gamma=0.5, max_iter=2, screening=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cut = SafeLAD(**kw).fit(X, y)
    assert cut.n_iter_ >= 2 and cut.support_vectors_.shape[0] > 0

    solve = box_qp.certified_solve

    def stalled(task, *, tol, max_iter, describe):
        result = solve(task, tol=tol, max_iter=max_iter, describe=describe)
        return replace(result, n_iter=min(result.n_iter, max_iter - 1))

    monkeypatch.setattr(box_qp, "certified_solve", stalled)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SafeLAD(**kw).fit(X, y)
    assert model.support_vectors_.shape == (0, 3)
    np.testing.assert_array_equal(model.predict(X[:5]), np.zeros(5))
