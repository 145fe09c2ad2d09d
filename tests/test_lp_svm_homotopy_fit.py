"""SafeLPSVC(solver="homotopy"): the model read off the exact path against the screened
fit (objective, attributes), the warm walk that resumes the path (one follow for a
decreasing grid) and reads off the breakpoints above where it stopped, the screened
fall-back of an answer that misses ``tol``, the pickle, and the walkers
(RegularizationPathCV, estimator_path) that must give the default solver's answers.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_safescreen import RegularizationPathCV, SafeLPSVC
from sklearn_safescreen.engine import lp_svm_exact as exact_module
from sklearn_safescreen.path import estimator_path
from sklearn_safescreen.problems.lp_svm import LPSVMData, add_intercept_column
from sklearn_safescreen.solvers.lp_homotopy import PathFollower, make_core

#: Relative agreement of the two solvers' objectives.
RTOL = 1e-9
#: The target gap of both solvers here: below RTOL, so that agreement is not slack.
TOL = 1e-10


def _data(n_classes=2, sparse=False, seed=0, n=90, d=30):
    X, y = make_classification(n, d, n_informative=6, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    if sparse:
        rng = np.random.RandomState(seed)
        X = sp.csr_matrix(X * (rng.rand(*X.shape) < 0.3))
    return X, y


def _weights(y, on: bool):
    """A sample weight with a zero and a class weight favouring the first class."""
    if not on:
        return None, None
    sw = np.random.RandomState(1).uniform(0.2, 3.0, len(y))
    sw[3] = 0.0
    classes = np.unique(y)
    return sw, {c: 2.0 if k == 0 else 0.7 for k, c in enumerate(classes)}


def _objectives(model, X, y, sample_weight, alpha):
    """Each one-vs-rest task's objective at the fitted model (the intercept a penalised
    column of value ``intercept_scaling``)."""
    sw = np.ones(len(y)) if sample_weight is None else sample_weight
    cw = model.class_weight or {}
    weights = sw * np.array([cw.get(v, 1.0) for v in y])
    keep = weights > 0
    c = weights[keep] / weights[keep].mean()
    classes = model.classes_
    tasks = [classes[1]] if classes.size == 2 else list(classes)
    scores = np.atleast_2d(np.asarray(X @ model.coef_.T).T).T + model.intercept_
    out = []
    for t, positive in enumerate(tasks):
        yy = np.where(y == positive, 1.0, -1.0)[keep]
        hinge = np.maximum(1.0 - yy * scores[keep, t], 0.0)
        l1 = np.abs(model.coef_[t]).sum() + abs(model.intercept_[t]) / model.intercept_scaling
        out.append(alpha * l1 + float(c @ hinge) / keep.sum())
    return np.array(out)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_homotopy_fit_equals_the_screened_fit(n_classes, sparse, weighted):
    X, y = _data(n_classes, sparse)
    sw, cw = _weights(y, weighted)
    alpha_max = SafeLPSVC(class_weight=cw).fit(X, y, sample_weight=sw).alpha_max_
    for frac in (0.7, 0.2, 0.05, 0.01, 0.002):
        alpha = frac * alpha_max
        screened = SafeLPSVC(alpha=alpha, tol=TOL, class_weight=cw).fit(
            X, y, sample_weight=sw)
        homotopy = SafeLPSVC(alpha=alpha, tol=TOL, class_weight=cw, solver="homotopy"
                             ).fit(X, y, sample_weight=sw)
        p_s = _objectives(screened, X, y, sw, alpha)
        p_h = _objectives(homotopy, X, y, sw, alpha)
        np.testing.assert_allclose(p_h, p_s, rtol=RTOL)
        assert np.all(homotopy.dual_gap_ <= TOL)
        for name in ("coef_", "intercept_", "dual_coef_", "n_iter_", "dual_gap_"):
            assert getattr(homotopy, name).shape == getattr(screened, name).shape, name
        assert homotopy.alpha_max_ == screened.alpha_max_
        np.testing.assert_array_equal(homotopy.classes_, screened.classes_)
        # a cold fit follows the path from alpha_max: a task with a nonzero model
        # followed at least one breakpoint
        moved = np.any(homotopy.coef_ != 0, axis=1) | (homotopy.intercept_ != 0)
        assert moved.any() and np.all(homotopy.n_iter_[moved] >= 1)
        # the dual: zero off the samples of positive weight, feasible (in its box)
        if sw is not None:
            assert np.all(homotopy.dual_coef_[:, sw == 0] == 0.0)
        assert any(e.rule == "homotopy" for e in homotopy.screening_report_.events)


def test_at_and_above_alpha_max_the_closed_form():
    X, y = _data()
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    model = SafeLPSVC(alpha=alpha_max, solver="homotopy").fit(X, y)
    assert not model.coef_.any() and model.n_iter_.tolist() == [0]
    assert model.screening_report_.closed_form


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_warm_walk_follows_the_path_once(n_classes, sparse):
    """Ten decreasing values: the breakpoints the walk's fits follow add up to those of
    one cold follow to the smallest value, and every fit is the cold fit's model."""
    X, y = _data(n_classes, sparse)
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    alphas = alpha_max * np.geomspace(0.8, 0.002, 10)
    walk = SafeLPSVC(solver="homotopy", warm_start=True)
    total = 0
    for alpha in alphas:
        walk.set_params(alpha=alpha).fit(X, y)
        total = total + walk.n_iter_
        cold = SafeLPSVC(alpha=alpha, solver="homotopy").fit(X, y)
        np.testing.assert_allclose(walk.coef_, cold.coef_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(walk.intercept_, cold.intercept_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(total, cold.n_iter_)
    followed = [p.walk.n_pivots for p in walk._path.paths]
    np.testing.assert_array_equal(followed, cold.n_iter_)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_larger_alpha_is_read_off_without_pivoting(sparse):
    """After a walk down, fits at larger values (between breakpoints, exactly at one,
    and above alpha_max) make no pivot and equal the screened fits."""
    X, y = _data(3, sparse, seed=2)
    sw, cw = _weights(y, True)
    walk = SafeLPSVC(solver="homotopy", warm_start=True, tol=TOL, class_weight=cw)
    alpha_max = walk._critical_value(X, y, sample_weight=sw)
    walk.set_params(alpha=0.003 * alpha_max).fit(X, y, sample_weight=sw)
    followed = [p.walk.n_pivots for p in walk._path.paths]
    lams = walk._path.paths[0].walk.lams
    values = [0.004 * alpha_max, lams[len(lams) // 2], 0.3 * alpha_max, lams[1],
              0.01 * alpha_max, 1.5 * alpha_max, 0.003 * alpha_max]
    for alpha in values:
        walk.set_params(alpha=alpha).fit(X, y, sample_weight=sw)
        assert walk.n_iter_.tolist() == [0, 0, 0]
        screened = SafeLPSVC(alpha=alpha, tol=TOL, class_weight=cw).fit(
            X, y, sample_weight=sw)
        np.testing.assert_allclose(_objectives(walk, X, y, sw, alpha),
                                   _objectives(screened, X, y, sw, alpha), rtol=RTOL)
        assert np.all(walk.dual_gap_ <= TOL)
    assert [p.walk.n_pivots for p in walk._path.paths] == followed


def test_the_rebuilt_basis_is_the_followed_one():
    """Above where the walk stopped, the vertex and dual rebuilt from the events at each
    breakpoint are those the homotopy had there (read off a cold run stopped at it)."""
    X, y = _data(2, seed=3)
    data = LPSVMData(add_intercept_column(X, 1.0), np.where(y == 1, 1.0, -1.0))
    walk = exact_module.ExactPathWalk(data)
    lams = []
    follower = PathFollower(make_core(data), data)
    for point in follower.run(1e-3 * data.lambda_max(), None):
        lams.append(point.lam)
    walk.solution_at(lams[-1] * 0.999)
    assert walk.lams == lams
    for k in range(0, len(lams) - 1, 3):
        if lams[k + 1] == lams[k]:
            continue  # a degenerate breakpoint: no interval to read
        lam = 0.5 * (lams[k] + lams[k + 1])
        w, a, pivots = walk.solution_at(lam)
        fresh = exact_module.ExactPathWalk(data)
        w0, a0, _ = fresh.solution_at(lam)
        assert pivots == 0
        np.testing.assert_allclose(w, w0, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a, a0, rtol=0, atol=1e-10)


def test_the_follower_resumes_where_it_stopped():
    """PathFollower.run stopped at one value and resumed to a smaller one makes the
    breakpoints of one run to the smaller value."""
    X, y = _data(2, sparse=True, seed=4)
    data = LPSVMData(add_intercept_column(X, 1.0), np.where(y == 1, 1.0, -1.0))
    lam_max = data.lambda_max()
    one = PathFollower(make_core(data), data)
    whole = [(p.lam, p.enter, p.enter_index, p.leave, p.leave_index)
             for p in one.run(1e-3 * lam_max)]
    two = PathFollower(make_core(data), data)
    parts = []
    for stop in (0.3, 0.05, 0.01, 1e-3):
        parts += [(p.lam, p.enter, p.enter_index, p.leave, p.leave_index)
                  for p in two.run(stop * lam_max)]
    assert parts == whole and two.n_pivots == one.n_pivots == len(whole)


def test_an_answer_that_misses_tol_is_finished_by_the_screened_solver(monkeypatch):
    """A path's vertex made inaccurate: the certificate sees it and the screened solver
    finishes from it, to the screened fit's answer."""
    X, y = _data()
    alpha = 0.05 * SafeLPSVC().fit(X, y).alpha_max_
    true_solution = exact_module.ExactPathWalk.solution_at

    def inaccurate(self, lam):
        w, a, pivots = true_solution(self, lam)
        return w * (1.0 + 1e-3), a, pivots

    monkeypatch.setattr(exact_module.ExactPathWalk, "solution_at", inaccurate)
    model = SafeLPSVC(alpha=alpha, solver="homotopy", tol=TOL).fit(X, y)
    screened = SafeLPSVC(alpha=alpha, tol=TOL).fit(X, y)
    assert np.all(model.dual_gap_ <= TOL)
    np.testing.assert_allclose(_objectives(model, X, y, None, alpha),
                               _objectives(screened, X, y, None, alpha), rtol=RTOL)
    events = model.screening_report_.events
    assert not any(e.rule == "homotopy" for e in events)
    assert any(e.moment == "solve" for e in events)


def test_a_walk_that_cannot_go_on_is_replaced_by_the_screened_solver(monkeypatch):
    """The homotopy stopping with an error (e.g. out of pivots on a degenerate stretch):
    the fit is the screened solver's, certified, and the next fit starts a new walk."""
    X, y = _data()
    alpha = 0.05 * SafeLPSVC().fit(X, y).alpha_max_
    calls = []

    def stuck(self, lam):
        calls.append(lam)
        raise RuntimeError("the LP-SVM homotopy made too many pivots at one value")

    monkeypatch.setattr(exact_module.ExactPathWalk, "solution_at", stuck)
    model = SafeLPSVC(alpha=alpha, solver="homotopy", tol=TOL, warm_start=True)
    model.fit(X, y)
    screened = SafeLPSVC(alpha=alpha, tol=TOL).fit(X, y)
    assert calls == [pytest.approx(alpha)]
    assert np.all(model.dual_gap_ <= TOL)
    np.testing.assert_allclose(_objectives(model, X, y, None, alpha),
                               _objectives(screened, X, y, None, alpha), rtol=RTOL)
    monkeypatch.undo()
    model.set_params(alpha=alpha / 2).fit(X, y)
    assert model._path.paths[0].walk is not None
    assert not any(e.rule == "homotopy" for e in screened.screening_report_.events)


def test_switching_solver_keeps_the_reference():
    """A warm walk may switch solver: the homotopy's answer is the screened step's
    reference, and back."""
    X, y = _data(3)
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    model = SafeLPSVC(alpha=0.1 * alpha_max, solver="homotopy", warm_start=True,
                      tol=TOL).fit(X, y)
    paths = model._path
    reference = [p.w.copy() for p in paths.paths]
    model.set_params(alpha=0.05 * alpha_max, solver="screened").fit(X, y)
    assert model._path is paths
    screened = SafeLPSVC(alpha=0.05 * alpha_max, tol=TOL).fit(X, y)
    np.testing.assert_allclose(_objectives(model, X, y, None, 0.05 * alpha_max),
                               _objectives(screened, X, y, None, 0.05 * alpha_max),
                               rtol=RTOL)
    # the screened step started from the homotopy's answer, not from w = 0
    assert any(np.any(w != 0) for w in reference)
    model.set_params(alpha=0.02 * alpha_max, solver="homotopy").fit(X, y)
    cold = SafeLPSVC(alpha=0.02 * alpha_max, solver="homotopy").fit(X, y)
    # the path resumed where the first homotopy fit stopped
    assert [p.walk.n_pivots for p in model._path.paths] == cold.n_iter_.tolist()
    assert np.all(model.n_iter_ < cold.n_iter_)
    np.testing.assert_allclose(model.coef_, cold.coef_, rtol=0, atol=1e-12)


def test_pickle_leaves_the_path_out():
    """The walk (and its basis factor) is not pickled: a pickled path restarts it."""
    X, y = _data(2)
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    model = SafeLPSVC(alpha=0.01 * alpha_max, solver="homotopy", warm_start=True).fit(X, y)
    path = model._path.paths[0]
    assert path.walk is not None
    restored = pickle.loads(pickle.dumps(path))
    assert restored.walk is None and restored.w is not None
    loaded = pickle.loads(pickle.dumps(model))
    assert "_path" not in loaded.__dict__
    loaded.set_params(alpha=0.005 * alpha_max).fit(X, y)
    cold = SafeLPSVC(alpha=0.005 * alpha_max, solver="homotopy").fit(X, y)
    np.testing.assert_array_equal(loaded.n_iter_, cold.n_iter_)
    np.testing.assert_allclose(loaded.coef_, cold.coef_, rtol=0, atol=1e-12)
    # a fit without warm_start keeps nothing
    plain = SafeLPSVC(alpha=0.01 * alpha_max, solver="homotopy").fit(X, y)
    assert "_path" not in plain.__dict__


def test_parameters():
    model = SafeLPSVC(solver="homotopy")
    assert model.get_params()["solver"] == "homotopy"
    assert clone(model).solver == "homotopy"
    assert "solver" in SafeLPSVC._solver_params
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="solver"):
        SafeLPSVC(solver="simplex").fit(X, y)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_path_cv_with_the_homotopy_gives_the_default_answers(n_classes):
    X, y = _data(n_classes, n=120, d=25, seed=5)
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    values = alpha_max * np.geomspace(0.9, 0.003, 12)
    searches = {}
    for solver in ("screened", "homotopy"):
        search = RegularizationPathCV(SafeLPSVC(solver=solver, tol=TOL), "alpha",
                                      values=values, cv=3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            searches[solver] = search.fit(X, y)
    s, h = searches["screened"], searches["homotopy"]
    assert h.best_params_ == s.best_params_
    np.testing.assert_allclose(h.cv_results_["mean_test_score"],
                               s.cv_results_["mean_test_score"], rtol=0, atol=1e-9)
    assert h.best_estimator_.solver == "homotopy"


def test_estimator_path_with_the_homotopy():
    """estimator_path: each task's path followed once over the walk, the models those
    of the screened walk."""
    X, y = _data(3, sparse=True, seed=6)
    alpha_max = SafeLPSVC().fit(X, y).alpha_max_
    values = alpha_max * np.geomspace(0.9, 0.005, 8)
    res_h = estimator_path(SafeLPSVC(solver="homotopy", tol=TOL), X, y, values)
    res_s = estimator_path(SafeLPSVC(tol=TOL), X, y, values)
    cold = SafeLPSVC(alpha=values.min(), solver="homotopy").fit(X, y)
    assert res_h.n_iter.sum() == cold.n_iter_.sum()
    for v, sol_h, sol_s in zip(res_h.values, res_h.solutions, res_s.solutions,
                               strict=True):
        for model, sol in ((res_h.estimator, sol_h), (res_s.estimator, sol_s)):
            model.coef_, model.intercept_ = sol["coef_"], sol["intercept_"]
        np.testing.assert_allclose(_objectives(res_h.estimator, X, y, None, v),
                                   _objectives(res_s.estimator, X, y, None, v), rtol=RTOL)
