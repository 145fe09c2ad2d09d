"""RegularizationPathCV(param_grid=...): the same search as GridSearchCV over the product
grid ``{**param_grid, param_name: values}``.

Oracle: GridSearchCV with the same estimator, product grid, folds, scoring and refit.
Both solve every fit to a tight duality gap, so the CV scores (fractions of correctly
classified test samples, or smooth scores) agree to 1e-6, and everything GridSearchCV
decides from them (candidate order, ``params``, ``param_<name>`` masked arrays, ranks,
best candidate) must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen.doubly_sparse import SafeDoublySparseSVC
from sklearn_safescreen.lad import SafeLAD
from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import critical_value, make_grid
from sklearn_safescreen.svm import SafeSVC

TIGHT = dict(tol=1e-10, max_iter=200000, random_state=0)


def binary(n=120, d=5, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=3, n_redundant=0,
                               flip_y=0.1, random_state=seed)
    return StandardScaler().fit_transform(X), y


def assert_same_results(search, grid, key="score"):
    """cv_results_ of the two searches: same keys (plus the screening extras), same
    candidates in the same order, same masked ``param_<name>`` arrays, scores to 1e-6,
    same ranks and the same best candidate."""
    a, b = search.cv_results_, grid.cv_results_
    assert set(b) <= set(a)
    assert set(a) - set(b) == {"mean_screening_rate"} | {
        f"split{s}_screening_rate" for s in range(search.n_splits_)}
    assert a["params"] == b["params"]
    for name in (k for k in b if k.startswith("param_")):
        np.testing.assert_array_equal(a[name].mask, b[name].mask, err_msg=name)
        assert list(a[name]) == list(b[name]), name
    for name in (k for k in b if "_test_" in k and not k.startswith("rank")):
        np.testing.assert_allclose(a[name], b[name], atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(a[f"rank_test_{key}"], b[f"rank_test_{key}"])
    if search.refit:
        assert search.best_index_ == grid.best_index_
        assert search.best_params_ == grid.best_params_
        assert search.best_score_ == pytest.approx(grid.best_score_, abs=1e-6)
        fitted = search.best_estimator_.get_params()
        assert all(fitted[k] is v for k, v in search.best_params_.items())


def product_grid(param_grid, name, values):
    grids = [param_grid] if isinstance(param_grid, dict) else param_grid
    return [{**g, name: values} for g in grids]


# -------------------------------------------------------- explicit values: product ---
@pytest.mark.parametrize("param_grid", [
    {"gamma": [0.05, 0.5, 2.0]},
    {"gamma": [0.1, 1.0], "class_weight": [None, "balanced"]},
    [{"kernel": ["rbf"], "gamma": [0.1, 1.0]},
     {"kernel": ["poly"], "degree": [2, 3], "coef0": [1.0]}],
])
def test_safesvc_product_grid_equals_grid_search(param_grid):
    X, y = binary()
    est = SafeSVC(kernel="rbf", **TIGHT)
    Cs = [10.0, 0.1, 1.0]  # unsorted: cv_results_ keeps GridSearchCV's order
    cv = StratifiedKFold(3)
    search = RegularizationPathCV(est, values=Cs, param_grid=param_grid, cv=cv).fit(X, y)
    grid = GridSearchCV(est, product_grid(param_grid, "C", Cs), cv=cv).fit(X, y)
    assert_same_results(search, grid)
    n_combos = len(search.combinations_)
    assert len(search.path_values_) == n_combos == len(search.path_reports_)
    for c in range(n_combos):
        np.testing.assert_array_equal(search.path_values_[c], [0.1, 1.0, 10.0])
        assert search.screening_rates_[c].shape == (3, 3) == search.path_fit_times_[c].shape
        for k, i in enumerate(search.path_candidates_[c]):
            assert search.cv_results_["params"][i] == {**search.combinations_[c],
                                                      "C": search.path_values_[c][k]}
        assert len(search.path_reports_[c]) == 3
        assert all(len(fold) == 3 for fold in search.path_reports_[c])
    # the split columns of the screening rate are the attribute, read by candidate
    for c in range(n_combos):
        for s in range(3):
            np.testing.assert_array_equal(
                search.cv_results_[f"split{s}_screening_rate"][search.path_candidates_[c]],
                search.screening_rates_[c][s])


def test_safelad_product_grid_equals_grid_search():
    X, y = make_regression(n_samples=90, n_features=4, noise=5.0, random_state=0)
    y[::9] += 100.0
    est = SafeLAD(kernel="rbf", **TIGHT)
    param_grid = {"gamma": [0.05, 0.3]}
    Cs = [0.01, 0.1, 1.0]
    for scoring in (None, "neg_mean_absolute_error"):
        search = RegularizationPathCV(est, values=Cs, param_grid=param_grid, cv=3,
                                      scoring=scoring).fit(X, y)
        grid = GridSearchCV(est, product_grid(param_grid, "C", Cs), cv=3,
                            scoring=scoring).fit(X, y)
        assert_same_results(search, grid)


def test_doubly_sparse_l1_ratio_grid_equals_grid_search():
    X, y = make_classification(n_samples=100, n_features=12, n_informative=4,
                               random_state=1)
    est = SafeDoublySparseSVC(tol=1e-11, max_iter=100000)
    param_grid = {"l1_ratio": [0.3, 0.7]}
    alphas = [0.3, 0.03, 0.003]
    search = RegularizationPathCV(est, values=alphas, param_grid=param_grid,
                                  cv=StratifiedKFold(3)).fit(X, y)
    grid = GridSearchCV(est, product_grid(param_grid, "alpha", alphas),
                        cv=StratifiedKFold(3)).fit(X, y)
    assert_same_results(search, grid)
    # alpha decreases along each walk
    assert all(np.all(np.diff(v) < 0) for v in search.path_values_)


def test_pipeline_prefixed_grid_multimetric_train_scores_and_jobs():
    X, y = binary(n=150, d=6, seed=2)
    pipe = make_pipeline(StandardScaler(), SafeSVC(kernel="rbf", **TIGHT))
    param_grid = {"safesvc__gamma": [0.05, 0.5], "standardscaler__with_mean": [True,
                                                                               False]}
    Cs = np.array([0.1, 1.0, 10.0])
    scoring = {"acc": "accuracy", "auc": "roc_auc"}
    cv = KFold(3, shuffle=True, random_state=0)
    search = RegularizationPathCV(pipe, values=Cs, param_grid=param_grid, cv=cv,
                                  scoring=scoring, refit="auc", return_train_score=True,
                                  n_jobs=2).fit(X, y)
    grid = GridSearchCV(pipe, product_grid(param_grid, "safesvc__C", Cs), cv=cv,
                        scoring=scoring, refit="auc", return_train_score=True).fit(X, y)
    assert_same_results(search, grid, key="auc")
    np.testing.assert_array_equal(search.cv_results_["rank_test_acc"],
                                  grid.cv_results_["rank_test_acc"])
    np.testing.assert_allclose(search.cv_results_["mean_train_auc"],
                               grid.cv_results_["mean_train_auc"], atol=1e-6)
    # the refitted pipeline carries every best parameter
    for name, value in search.best_params_.items():
        assert search.best_estimator_.get_params()[name] == value
    np.testing.assert_allclose(search.decision_function(X), grid.decision_function(X),
                               atol=1e-4)


def test_sample_weight_is_routed_to_every_walk():
    X, y = binary(n=120, seed=3)
    w = np.random.RandomState(1).uniform(0.2, 3.0, size=y.size)
    est = SafeSVC(kernel="rbf", **TIGHT)
    param_grid = {"gamma": [0.1, 1.0]}
    search = RegularizationPathCV(est, values=[0.1, 1.0], param_grid=param_grid,
                                  cv=3).fit(X, y, sample_weight=w)
    grid = GridSearchCV(est, product_grid(param_grid, "C", [0.1, 1.0]),
                        cv=3).fit(X, y, sample_weight=w)
    assert_same_results(search, grid)
    unweighted = clone(search).fit(X, y)
    assert not np.allclose(unweighted.cv_results_["split0_test_score"],
                           search.cv_results_["split0_test_score"]) or \
        not np.allclose(unweighted.decision_function(X), search.decision_function(X))


# ---------------------------------------------------------- a generated grid ---
def test_generated_grid_per_combination():
    """The critical value depends on gamma: each combination has its own geometric grid
    from its own critical value; the candidates are those of GridSearchCV over the list
    of one dict per combination (combination by combination, values in walk order)."""
    X, y = binary(n=100, seed=4)
    est = SafeSVC(kernel="rbf", **TIGHT)
    param_grid = {"gamma": [0.02, 2.0]}
    search = RegularizationPathCV(est, n_values=4, eps=1e-2, param_grid=param_grid,
                                  cv=3).fit(X, y)
    crit = [critical_value(clone(est).set_params(gamma=g), X, y) for g in [0.02, 2.0]]
    np.testing.assert_allclose(search.critical_value_, crit)
    assert crit[0] != pytest.approx(crit[1])
    for c, start in enumerate(crit):
        np.testing.assert_allclose(search.path_values_[c], np.geomspace(start, start / 1e-2,
                                                                        4))
    listed = [{"gamma": [combo["gamma"]], "C": list(values)}
              for combo, values in zip(search.combinations_, search.path_values_,
                                       strict=True)]
    grid = GridSearchCV(est, listed, cv=3).fit(X, y)
    assert_same_results(search, grid)
    assert [p["gamma"] for p in search.cv_results_["params"]] == [0.02] * 4 + [2.0] * 4
    # the first value of every walk is at the whole data's critical value: closed form
    assert all(np.all(r[:, 0] == 1.0) for r in search.screening_rates_)


def test_eps_path_per_combination():
    X, y = binary(n=80, seed=5)
    est = SafeSVC(kernel="rbf", **TIGHT)
    search = RegularizationPathCV(est, "C", "eps-path", eps=5e-2, stop=5.0,
                                  param_grid={"gamma": [0.1, 1.0]}, cv=2).fit(X, y)
    for c, gamma in enumerate([0.1, 1.0]):
        np.testing.assert_allclose(search.path_values_[c], make_grid(
            clone(est).set_params(gamma=gamma), X, y, "eps-path", eps=5e-2, stop=5.0))
    assert len(search.cv_results_["params"]) == sum(map(len, search.path_values_))


# -------------------------------------------------------- failures, verbose, input ---
def test_failed_fits_as_grid_search():
    X = np.random.RandomState(0).randn(60, 3)
    y = np.repeat([0, 1], 30)
    splits = [(np.arange(30), np.arange(30, 60)), (np.arange(10, 50), np.arange(10))]
    est = SafeSVC(kernel="rbf", **TIGHT)
    search = RegularizationPathCV(est, values=[0.1, 1.0], param_grid={"gamma": [0.1, 1]},
                                  cv=splits, refit=False)
    grid = GridSearchCV(est, {"gamma": [0.1, 1], "C": [0.1, 1.0]}, cv=splits, refit=False)
    with pytest.warns(FitFailedWarning):
        search.fit(X, y)
    with pytest.warns(FitFailedWarning):
        grid.fit(X, y)
    assert np.all(np.isnan(search.cv_results_["split0_test_score"]))
    np.testing.assert_allclose(search.cv_results_["split1_test_score"],
                               grid.cv_results_["split1_test_score"], atol=1e-6)
    assert all(r is None for c in range(2) for r in search.path_reports_[c][0])


def test_verbose_one_line_per_walk_and_a_table_per_combination(capsys):
    X, y = binary(n=80)
    RegularizationPathCV(SafeSVC(kernel="rbf", **TIGHT), values=[0.1, 1.0],
                         param_grid={"gamma": [0.1, 1.0]}, cv=2, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("Fitting 2 folds for each of 4 candidates, totalling 8 fits, in 4 "
                        "warm-started walks along C")
    walks = sorted(line for line in lines if line.startswith("[CV "))
    assert len(walks) == 4
    assert walks[0].startswith("[CV 1/2; walk 1/4] END gamma=0.1, C=0.1..1;")
    assert "gamma=0.1:" in lines and "gamma=1.0:" in lines
    assert sum(line.split()[:2] == ["C", "screened"] for line in lines) == 2


@pytest.mark.parametrize("param_grid, error, match", [
    ({"C": [1.0]}, ValueError, "pass its grid as `values`"),
    ({"gamma": 0.1}, TypeError, "gamma"),
    ({"gamma": []}, ValueError, "gamma"),
    ([{"gamma": [0.1]}, "kernel"], TypeError, "dict"),
])
def test_bad_param_grid(param_grid, error, match):
    X, y = binary(n=60)
    with pytest.raises(error, match=match):
        RegularizationPathCV(SafeSVC(), values=[1.0], param_grid=param_grid).fit(X, y)


def test_unknown_parameter_in_the_grid_fails_as_in_grid_search():
    X, y = binary(n=60)
    with pytest.raises(ValueError, match="Invalid parameter 'gama'"):
        RegularizationPathCV(SafeSVC(), values=[1.0], param_grid={"gama": [0.1]},
                             cv=2, error_score="raise").fit(X, y)
