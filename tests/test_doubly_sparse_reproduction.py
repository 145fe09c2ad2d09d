"""The qualitative results of Shibagaki et al. (2016) on a CI-sized sparse problem.

A real-sim-like set (sparse, unit-norm rows, labels from a sparse w with flipped
labels), a warm-started path at an absolute gap of 1e-9:

(a) at the large values, the rules at the converged pair screen most features;
(b) along the path the samples at alpha_i = 0 grow and those at the box shrink;
(d) the work of the solver (epochs times the entries of the reduced problem it ran on)
    is ordered simultaneous <= min(features only, samples only) <= no screening, with
    5% slack. Work, not time: on a problem this small the per-epoch constants dominate.

(c), simultaneous >= individual at the same pair, is in
``tests/screening/test_doubly_sparse_rules.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import sklearn_safescreen.engine.doubly_sparse_reduced as engine
from sklearn_safescreen import SafeDoublySparseSVC
from sklearn_safescreen.datasets import make_sparse_text_classification
from sklearn_safescreen.problems.doubly_sparse import (
    DoublySparseData,
    ReducedProblem,
)
from sklearn_safescreen.screening.doubly_sparse import screen_doubly_sparse


@pytest.fixture(scope="module")
def problem():
    X, y = make_sparse_text_classification(1500, 1000, density=0.01, random_state=0)
    amax = SafeDoublySparseSVC(fit_intercept=False)._critical_value(X, y)
    return X, y, amax * np.geomspace(1.0, 1e-3, 16)[1:]


def _walk(X, y, alphas, screening, monkeypatch):
    work = {"entries": 0}
    solve = engine.coordinate_descent

    def counted(red, *args, **kwargs):
        out = solve(red, *args, **kwargs)
        work["entries"] += out.epochs * red.nnz
        return out

    monkeypatch.setattr(engine, "coordinate_descent", counted)
    est = SafeDoublySparseSVC(fit_intercept=False, tol=1e-9, warm_start=True,
                              screening=screening)
    fits = []
    for a in alphas:
        est.set_params(alpha=float(a)).fit(X, y)
        fits.append((float(a), est.coef_.ravel().copy(), est.dual_coef_[0].copy()))
    monkeypatch.undo()
    return work["entries"], fits


def test_feature_screening_rate_is_high_at_large_values(problem, monkeypatch):
    X, y, alphas = problem
    _, fits = _walk(X, y, alphas, "simultaneous", monkeypatch)
    data = DoublySparseData(X, y, np.ones(X.shape[0]), "hinge", 0.5)
    n, d = X.shape
    red = ReducedProblem.build(data, np.arange(n), np.arange(d), np.zeros(n, bool),
                               np.zeros(n))
    rates = []
    for a, w, _ in fits[:5]:
        lam = 0.5 * a  # l1_ratio 0.5
        t = red.margins(w)
        event = screen_doubly_sparse(red, w, t, red.gap(w, t, lam, 1.0), lam, 1.0)
        zero = w == 0
        rates.append(event.n_features / zero.sum())
        assert not event.features[~zero].any()
    assert min(rates) > 0.9, rates


def test_samples_move_from_the_box_to_zero_along_the_path(problem, monkeypatch):
    X, y, alphas = problem
    _, fits = _walk(X, y, alphas, "simultaneous", monkeypatch)
    at_zero = [int((a == 0).sum()) for _, _, a in fits]
    at_box = [int((np.abs(np.abs(a) - 1.0) <= 1e-12).sum()) for _, _, a in fits]
    assert at_zero[-1] > at_zero[0] + 0.2 * len(y)
    assert at_box[-1] < at_box[0] - 0.2 * len(y)


def test_work_is_ordered_by_screening_mode(problem, monkeypatch):
    X, y, alphas = problem
    work = {mode: _walk(X, y, alphas, mode, monkeypatch)[0]
            for mode in ("simultaneous", "features", "samples", None)}
    single = min(work["features"], work["samples"])
    assert work["simultaneous"] <= 1.05 * single, work
    assert single <= 1.05 * work[None], work
