"""RegularizationPathCV: the same answer as GridSearchCV, the scikit-learn API of a
meta-estimator, parallel folds and bad input.

Oracle: GridSearchCV over the same estimator, grid and folds. Both solve every fit to a
tight duality gap (tol=1e-10), so the fitted models agree to ~1e-5 in decision values and
the CV scores (fractions of correctly classified test samples, or smooth scores such as
ROC AUC) must agree to 1e-6.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris, make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    StratifiedKFold,
    cross_val_score,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen.engine.report import ScreeningReport
from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import make_grid
from sklearn_safescreen.svm import SafeSVC

TIGHT = dict(kernel="linear", tol=1e-10, max_iter=200000, random_state=0)


def binary(n=240, d=8, seed=0, flip=0.1):
    return make_classification(n_samples=n, n_features=d, n_informative=4, n_redundant=0,
                               flip_y=flip, random_state=seed)


def breast_cancer(n=300):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.RandomState(0)
    idx = rng.permutation(y.size)[:n]
    return X[idx], y[idx]


def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def assert_same_as_grid_search(search, X, y, key="score", **fit_params):
    """Fit ``search`` and GridSearchCV with its grid and folds; compare."""
    search.fit(X, y, **fit_params)
    grid = GridSearchCV(search.estimator, {search.param_name_: list(
        search.cv_results_["params"][i][search.param_name_]
        for i in range(len(search.cv_results_["params"])))},
        cv=search.cv, scoring=search.scoring, refit=search.refit,
        return_train_score=search.return_train_score).fit(X, y, **fit_params)
    for name in (f"mean_test_{key}", f"std_test_{key}", f"split0_test_{key}"):
        np.testing.assert_allclose(search.cv_results_[name], grid.cv_results_[name],
                                   atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(search.cv_results_[f"rank_test_{key}"],
                                  grid.cv_results_[f"rank_test_{key}"])
    assert set(grid.cv_results_) <= set(search.cv_results_)
    if search.refit:
        assert search.best_params_ == pytest.approx(grid.best_params_)
        assert search.best_index_ == grid.best_index_
        assert search.best_score_ == pytest.approx(grid.best_score_, abs=1e-6)
        method = "decision_function" if hasattr(grid, "decision_function") else "predict"
        a, b = getattr(search, method)(X), getattr(grid, method)(X)
        np.testing.assert_allclose(a, b, atol=1e-4 * max(1.0, np.abs(b).max()))
    return grid


# ------------------------------------------------------- same answer as GridSearchCV ---
@pytest.mark.parametrize("seed", [0, 1])
def test_same_as_grid_search_generated_grid(seed):
    X, y = binary(seed=seed)
    search = RegularizationPathCV(SafeSVC(**TIGHT), n_values=8, eps=1e-3, cv=4)
    assert_same_as_grid_search(search, X, y)
    assert search.path_values_[0] == pytest.approx(search.critical_value_)
    assert search.critical_value_ == pytest.approx(SafeSVC(**TIGHT)._critical_value(X, y))


def test_same_as_grid_search_pipeline_unsorted_values_and_auc():
    X, y = breast_cancer()
    pipe = make_pipeline(StandardScaler(), SafeSVC(**TIGHT))
    search = RegularizationPathCV(pipe, values=[1.0, 0.001, 0.1, 0.01, 10.0],
                                  scoring="roc_auc", cv=StratifiedKFold(3))
    assert_same_as_grid_search(search, X, y)
    assert search.param_name_ == "safesvc__C"
    # cv_results_ keeps the user's order; the walk is sorted
    assert [p["safesvc__C"] for p in search.cv_results_["params"]] == [1.0, 0.001, 0.1,
                                                                       0.01, 10.0]
    assert search.path_values_.tolist() == [0.001, 0.01, 0.1, 1.0, 10.0]


def test_same_as_grid_search_multiclass_multimetric_train_scores():
    X, y = iris()
    search = RegularizationPathCV(SafeSVC(**TIGHT), values=np.geomspace(1e-3, 10, 6),
                                  scoring={"acc": "accuracy", "f1": "f1_macro"},
                                  refit="f1", cv=KFold(3, shuffle=True, random_state=0),
                                  return_train_score=True)
    grid = assert_same_as_grid_search(search, X, y, key="f1")
    np.testing.assert_allclose(search.cv_results_["mean_test_acc"],
                               grid.cv_results_["mean_test_acc"], atol=1e-6)
    np.testing.assert_allclose(search.cv_results_["mean_train_f1"],
                               grid.cv_results_["mean_train_f1"], atol=1e-6)
    assert search.multimetric_ and set(search.scorer_) == {"acc", "f1"}


def test_same_as_grid_search_sample_weight_and_groups():
    X, y = binary(n=200, seed=3)
    w = np.random.RandomState(1).uniform(0.2, 3.0, size=y.size)
    groups = np.arange(y.size) % 4
    search = RegularizationPathCV(SafeSVC(**TIGHT), n_values=6, cv=GroupKFold(4))
    assert_same_as_grid_search(search, X, y, sample_weight=w, groups=groups)


def test_eps_path_grid_and_precomputed_splits():
    X, y = binary(n=160, seed=4)
    splits = list(KFold(3).split(X))
    search = RegularizationPathCV(SafeSVC(**TIGHT), values="eps-path", eps=1e-2, stop=1.0,
                                  cv=splits)
    assert_same_as_grid_search(search, X, y)
    grid = make_grid(SafeSVC(**TIGHT), X, y, "eps-path", eps=1e-2, stop=1.0)
    np.testing.assert_allclose(search.path_values_, grid)


# ------------------------------------------------------------- what it exposes ---
def test_attributes_reports_and_screening():
    X, y = binary(n=300, seed=5)
    search = RegularizationPathCV(SafeSVC(**TIGHT), n_values=6, cv=3).fit(X, y)
    assert search.n_splits_ == 3 and search.refit_time_ >= 0
    assert len(search.path_reports_) == 3
    assert all(len(f) == 6 and all(isinstance(r, ScreeningReport) for r in f)
               for f in search.path_reports_)
    assert search.screening_rates_.shape == (3, 6) == search.path_fit_times_.shape
    # the first value is the critical value of the whole data: at or below each fold's
    # C_min the solution is closed form (everything screened); later fits are warm
    # started and screened from the previous solution
    assert search.screening_rates_[:, 0].min() == 1.0
    assert all(any(e.moment == "reference" for e in f[-1].events)
               for f in search.path_reports_)
    np.testing.assert_allclose(search.cv_results_["mean_screening_rate"],
                               search.screening_rates_.mean(axis=0))
    d = search.path_reports_[0][-1].to_dict()
    assert {"n_variables", "n_screened", "screening_rate"} <= set(d)
    # delegation, as GridSearchCV
    assert search.predict(X).shape == y.shape
    assert 0 <= search.score(X, y) <= 1
    assert search.decision_function(X).shape == y.shape
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert not hasattr(search, "transform")  # SafeSVC has none
    assert isinstance(search.best_estimator_, SafeSVC)
    assert search.best_estimator_.warm_start is False  # the user's setting


def test_verbose_prints_one_line_per_walk_then_per_value(capsys):
    X, y = binary(n=120)
    search = RegularizationPathCV(SafeSVC(**TIGHT), n_values=4, cv=2, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("Fitting 2 folds for each of 4 candidates, totalling 8 fits, in 2 "
                        "warm-started walks along C")
    # one progress line per finished walk, in scikit-learn's "[CV i/n] END" style
    walks = sorted(line for line in lines if line.startswith("[CV "))
    assert len(walks) == 2
    assert walks[0].startswith("[CV 1/2; walk 1/2] END C=") and "4 values" in walks[0]
    rows = [line.split() for line in lines[lines.index(next(
        line for line in lines if line.split()[:2] == ["C", "screened"])) + 1:]]
    assert len(rows) == 4
    np.testing.assert_allclose([float(r[0]) for r in rows], search.path_values_, rtol=1e-3)
    np.testing.assert_allclose([float(r[3]) for r in rows],
                               search.cv_results_["mean_test_score"], atol=1e-4)


def test_failed_fits_score_error_score_as_grid_search():
    """A training fold with one class fails, as in GridSearchCV: error_score, a
    FitFailedWarning, no report; all fits failing raises."""
    X = np.random.RandomState(0).randn(60, 3)
    y = np.repeat([0, 1], 30)
    splits = [(np.arange(30), np.arange(30, 60)), (np.arange(10, 50), np.arange(10))]
    search = RegularizationPathCV(SafeSVC(**TIGHT), values=[0.1, 1.0], cv=splits,
                                  refit=False)
    grid = GridSearchCV(SafeSVC(**TIGHT), {"C": [0.1, 1.0]}, cv=splits, refit=False)
    with pytest.warns(FitFailedWarning):
        search.fit(X, y)
    with pytest.warns(FitFailedWarning):
        grid.fit(X, y)
    assert np.all(np.isnan(search.cv_results_["split0_test_score"]))
    np.testing.assert_allclose(search.cv_results_["split1_test_score"],
                               grid.cv_results_["split1_test_score"], atol=1e-6)
    assert all(r is None for r in search.path_reports_[0])
    assert all(r is not None for r in search.path_reports_[1])
    with pytest.raises(ValueError, match="class"):
        clone(search).set_params(error_score="raise").fit(X, y)
    with pytest.raises(ValueError, match="fits failed"):
        clone(search).set_params(cv=splits[:1]).fit(X, y)


# ------------------------------------------------------------------------- API ---
def test_clone_pickle_get_params():
    search = RegularizationPathCV(make_pipeline(StandardScaler(), SafeSVC(**TIGHT)),
                                  values=[0.01, 0.1], cv=2)
    params = search.get_params(deep=True)
    assert params["estimator__safesvc__C"] == 1.0 and params["values"] == [0.01, 0.1]
    X, y = binary(n=100)
    fitted = pickle.loads(pickle.dumps(clone(search).fit(X, y)))
    np.testing.assert_array_equal(fitted.predict(X), search.fit(X, y).predict(X))
    assert clone(search).get_params()["cv"] == 2


def test_nested_in_pipeline_and_cross_val_score():
    X, y = binary(n=150)
    search = RegularizationPathCV(SafeSVC(**TIGHT), n_values=4, cv=2)
    outer = make_pipeline(StandardScaler(), search)
    scores = cross_val_score(outer, X, y, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    grid = make_pipeline(StandardScaler(), GridSearchCV(SafeSVC(**TIGHT), {"C": [1.0]}))
    assert outer.fit(X, y).score(X, y) > 0.5 and grid.fit(X, y).score(X, y) > 0.5


@parametrize_with_checks([RegularizationPathCV(SafeSVC(kernel="linear", tol=1e-10),
                                               values=[0.05, 0.3], cv=2)])
def test_sklearn_meta_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        check(estimator)


# ------------------------------------------------------------------- bad input ---
def test_bad_estimator_and_param_name():
    X, y = binary(n=60)
    with pytest.raises(TypeError, match="SafeSVC, SafeLAD"):
        RegularizationPathCV(LogisticRegression(), values=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match="no parameter 'D'"):
        RegularizationPathCV(SafeSVC(), "D", values=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match="regularisation parameter"):
        RegularizationPathCV(SafeSVC(), "max_iter", values=[1.0]).fit(X, y)


@pytest.mark.parametrize("values", [[], [0.1, 0.0], [-1.0], [np.inf]])
def test_bad_grid(values):
    X, y = binary(n=60)
    with pytest.raises(ValueError, match="grid"):
        RegularizationPathCV(SafeSVC(kernel="linear"), values=values).fit(X, y)


@pytest.mark.parametrize("params", [{"n_values": 0}, {"eps": 2.0}, {"stop": -1.0},
                                    {"values": "linear"}, {"cv": "five"}])
def test_bad_parameters(params):
    X, y = binary(n=60)
    with pytest.raises(InvalidParameterError):
        RegularizationPathCV(SafeSVC(kernel="linear"), **params).fit(X, y)


def test_nan_input_is_refused():
    X, y = binary(n=60)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RegularizationPathCV(SafeSVC(kernel="linear")).fit(X, y)


# ------------------------------------- the other families (SafeLAD, SafeMetricLearner) ---
def test_same_as_grid_search_lad_regression():
    from sklearn.datasets import make_regression

    from sklearn_safescreen import lad

    X, y = make_regression(n_samples=150, n_features=5, noise=10.0, random_state=0)
    y[::10] += 200.0  # outliers: where LAD differs from least squares
    est = lad.SafeLAD(tol=1e-10, max_iter=200000, random_state=0)
    for scoring in (None, "neg_mean_absolute_error"):
        search = RegularizationPathCV(est, n_values=6, eps=1e-3, cv=3, scoring=scoring)
        assert_same_as_grid_search(search, X, y)
        assert search.param_name_ == "C"
        assert search.path_values_[0] == pytest.approx(search.critical_value_)
    assert search.screening_rates_.shape == (3, 6)
    assert np.all(search.screening_rates_ >= 0)


def test_same_as_grid_search_metric_learning_pipeline():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline

    from sklearn_safescreen import metric_learning as ml

    X, y = iris()
    pipe = Pipeline([("metric", ml.SafeMetricLearner(tol=1e-10)),
                     ("knn", KNeighborsClassifier(n_neighbors=3))])
    search = RegularizationPathCV(pipe, n_values=5, eps=1e-2,
                                  cv=StratifiedKFold(3, shuffle=True, random_state=0))
    assert_same_as_grid_search(search, X, y)
    # alpha decreases along the walk, from the critical value
    assert search.param_name_ == "metric__alpha"
    assert np.all(np.diff(search.path_values_) < 0)
    assert search.path_values_[0] == pytest.approx(search.critical_value_)
    # transform delegates when the searched estimator is a transformer
    alone = RegularizationPathCV(ml.SafeMetricLearner(tol=1e-8),
                                 values=[search.critical_value_ * 0.1], cv=2,
                                 scoring=lambda est, X, y: 0.0).fit(X, y)
    np.testing.assert_allclose(alone.transform(X), alone.best_estimator_.transform(X))


@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 100),
       logs=st.lists(st.floats(-3, 1), min_size=2, max_size=4, unique=True))
def test_same_as_grid_search_hypothesis(seed, n, logs):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = (X[:, 0] + 0.8 * rng.randn(n) > 0).astype(int)
    y[:6] = [0, 1] * 3
    search = RegularizationPathCV(SafeSVC(**TIGHT), values=[10.0**v for v in logs],
                                  cv=KFold(3, shuffle=True, random_state=seed))
    assert_same_as_grid_search(search, X, y)


@pytest.mark.parametrize("values", [[1, 10], (1, 10), np.array([1, 10]),
                                    np.array([0.5, 2.0]), [np.int64(1), 10.0]])
def test_best_params_are_the_users_values_as_in_grid_search(values):
    """best_params_, cv_results_['params'] and param_C hold the candidates exactly as
    GridSearchCV holds them: the user's objects (an int stays an int), and an array's
    elements as NumPy scalars."""
    X, y = binary(n=90)
    est = SafeSVC(**TIGHT)
    search = RegularizationPathCV(est, values=values, cv=3).fit(X, y)
    grid = GridSearchCV(est, {"C": values}, cv=3).fit(X, y)
    assert search.best_params_ == grid.best_params_
    assert type(search.best_params_["C"]) is type(grid.best_params_["C"])
    assert [type(p["C"]) for p in search.cv_results_["params"]] == \
        [type(p["C"]) for p in grid.cv_results_["params"]]
    assert search.cv_results_["param_C"].dtype == grid.cv_results_["param_C"].dtype
    if not isinstance(values, np.ndarray):  # the very objects passed
        assert any(search.best_params_["C"] is v for v in values)
    assert search.best_estimator_.C == search.best_params_["C"]


def test_table_marks_closed_form_values(capsys):
    """The verbose table: "closed-form" where every fold's fit was solved in closed form
    (nothing was screened there), a starred rate with a footnote where only some were."""
    from sklearn_safescreen.path import critical_value

    X, y = binary(n=90)
    cv = StratifiedKFold(3)
    crit = sorted(critical_value(SafeSVC(kernel="linear"), X[tr], y[tr])
                  for tr, _ in cv.split(X, y))
    assert crit[0] < crit[-1]

    def table(values):
        search = RegularizationPathCV(SafeSVC(kernel="linear"), values=values, cv=cv,
                                      verbose=1).fit(X, y)
        out = capsys.readouterr().out
        rows = [line for line in out.splitlines() if line.lstrip()[:1].isdigit()]
        closed = np.array([[r.closed_form for r in fold] for fold in search.path_reports_])
        return out, rows, closed

    # below every fold's critical value, then above them all
    out, rows, closed = table([crit[0] / 2, crit[-1] * 100])
    assert closed[:, 0].all() and not closed[:, 1].any()
    assert rows[0].split()[1] == "closed-form" and "%" not in rows[0]
    assert "closed-form" not in rows[1] and "%* " not in rows[1]
    assert "some folds" not in out
    # first between them: the folds whose critical value is above it solve it in closed
    # form, the others do not
    out, rows, closed = table([float(np.sqrt(crit[0] * crit[-1])), crit[-1] * 100])
    assert closed[:, 0].any() and not closed[:, 0].all()
    assert "%* " in rows[0] and "closed-form" not in rows[0]
    assert "\n* some folds were solved in closed form" in out
