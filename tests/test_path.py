"""Tests of the path helpers (sklearn_safescreen.path): grids, critical values, the
eps-path step rule (Ogawa et al. 2013, Algorithm 1, with the step rule of
doc/theory/svm_lad.rst) and estimator_path / svm_path.

Oracles: cold (non-warm-started) fits at each value, an independent brute-force
evaluation of the eps-path error bound E(rho), and the closed form at C_min.
"""

from __future__ import annotations

import numpy as np
import pytest
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen.path import (
    PathResult,
    estimator_path,
    make_grid,
    resolve_path_param,
    svm_path,
)
from sklearn_safescreen.problems.box_qp_data import hinge_sums as _hinge_sums
from sklearn_safescreen.problems.box_qp_data import svm_eps_step
from sklearn_safescreen.svm import SafeSVC


def data(n=120, d=5, seed=0, flip=0.1):
    return make_classification(n_samples=n, n_features=d, n_informative=3, n_redundant=0,
                               flip_y=flip, random_state=seed)


def hinge_objective(X, y, coef, intercept, C):
    ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
    m = ys * (X @ coef.ravel() + intercept[0])
    return 0.5 * (coef.ravel() @ coef.ravel() + intercept[0] ** 2) + C * np.maximum(
        0.0, 1.0 - m).sum()


# ----------------------------------------------------------------- grids ---
def test_geometric_grid_from_critical_value():
    X, y = data()
    svc = SafeSVC(kernel="linear")
    c_min = svc._critical_value(X, y)
    grid = make_grid(svc, X, y, n_values=7, eps=1e-2)
    np.testing.assert_allclose(grid, np.geomspace(c_min, c_min / 1e-2, 7))
    grid = make_grid(svc, X, y, n_values=4, stop=10.0)
    np.testing.assert_allclose(grid, np.geomspace(c_min, 10.0, 4))
    assert make_grid(svc, X, y, n_values=1).tolist() == [c_min]


def test_grid_does_not_touch_the_estimator():
    X, y = data()
    svc = SafeSVC(kernel="linear")
    pipe = make_pipeline(StandardScaler(), SafeSVC(kernel="linear"))
    make_grid(svc, X, y, n_values=3)
    make_grid(pipe, X, y, n_values=3)
    assert not hasattr(svc, "n_features_in_") and not hasattr(pipe[0], "mean_")
    assert not hasattr(pipe[-1], "n_features_in_")


def test_explicit_grid_is_sorted_most_to_least_regularised():
    X, y = data()
    assert make_grid(SafeSVC(), X, y, [3.0, 0.1, 1.0]).tolist() == [0.1, 1.0, 3.0]


@pytest.mark.parametrize("values", [[], [1.0, -1.0], [0.0], [np.nan], [[1.0, 2.0]], "foo"])
def test_bad_grids(values):
    X, y = data()
    with pytest.raises(ValueError):
        make_grid(SafeSVC(), X, y, values)


@pytest.mark.parametrize("kw", [{"n_values": 0}, {"eps": 0.0}, {"eps": 1.5},
                                {"stop": -1.0}, {"stop": 1e-12}])
def test_bad_grid_arguments(kw):
    X, y = data()
    with pytest.raises(ValueError):
        make_grid(SafeSVC(kernel="linear"), X, y, **kw)


# ------------------------------------------------------- locating the param ---
def test_resolve_param_name():
    pipe = make_pipeline(StandardScaler(), SafeSVC())
    assert resolve_path_param(pipe)[:2] == ("safesvc__C", "safesvc__")
    assert resolve_path_param(SafeSVC())[:2] == ("C", "")
    nested = Pipeline([("outer", make_pipeline(StandardScaler(), SafeSVC()))])
    assert resolve_path_param(nested)[0] == "outer__safesvc__C"
    with pytest.raises(ValueError, match="no parameter 'gamma_x'"):
        resolve_path_param(SafeSVC(), "gamma_x")
    with pytest.raises(ValueError, match="not the regularisation parameter"):
        resolve_path_param(SafeSVC(), "tol")
    with pytest.raises(TypeError, match="Safe estimator"):
        resolve_path_param(LogisticRegression())
    with pytest.raises(TypeError, match="Safe estimator"):
        resolve_path_param(make_pipeline(StandardScaler(), LogisticRegression()))
    two = Pipeline([("a", SafeSVC()), ("b", SafeSVC())])
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_path_param(two)
    assert resolve_path_param(two, "b__C")[0] == "b__C"


# --------------------------------------------------------------- the path ---
def test_path_equals_cold_fits_and_is_exact():
    X, y = data(n=150, seed=1)
    res = svm_path(X, y, kernel="linear", n_values=6, eps=1e-3, tol=1e-9, max_iter=100000)
    assert isinstance(res, PathResult) and len(res) == 6
    assert res.param_name == "C" and np.all(np.diff(res.values) > 0)
    assert res.critical_value == pytest.approx(res.values[0])
    assert res.reports[0].screening_rate == 1.0  # closed form at C_min
    for C, sol in zip(res.values, res.solutions, strict=True):
        cold = SafeSVC(kernel="linear", C=C, tol=1e-9, max_iter=100000,
                       screening=None).fit(X, y)
        f_path = hinge_objective(X, y, sol["coef_"], sol["intercept_"], C)
        f_cold = hinge_objective(X, y, cold.coef_, cold.intercept_, C)
        assert f_path == pytest.approx(f_cold, rel=1e-7)
        np.testing.assert_allclose(sol["coef_"], cold.coef_, atol=1e-3)
    assert np.all(np.isfinite(res.dual_gaps)) and np.all(res.n_iter >= 0)
    assert res.times.shape == (6,) and res.total_time > 0
    assert res.coefs[0] is res.solutions[0]["coef_"]
    assert res.dual_coefs[-1].shape[0] == 1
    # later values are warm started: the reference rule ran
    assert any(e.moment == "reference" for e in res.reports[-1].events)


def test_path_does_not_modify_the_estimator_and_pipeline_weights():
    X, y = data(n=100, seed=2)
    w = np.random.RandomState(0).uniform(0.5, 2.0, size=y.size)
    pipe = make_pipeline(StandardScaler(), SafeSVC(kernel="linear", tol=1e-8))
    before = pipe.get_params(deep=True)["safesvc__warm_start"]
    res = estimator_path(pipe, X, y, [0.01, 1.0, 0.1], sample_weight=w)
    assert pipe.get_params(deep=True)["safesvc__warm_start"] == before
    assert res.param_name == "safesvc__C" and res.values.tolist() == [0.01, 0.1, 1.0]
    Xs = StandardScaler().fit_transform(X)
    cold = SafeSVC(kernel="linear", tol=1e-8, C=1.0).fit(Xs, y, sample_weight=w)
    np.testing.assert_allclose(res.solutions[-1]["coef_"], cold.coef_, atol=1e-3)
    assert res.estimator[-1].C == 1.0


def test_decreasing_parameter_protocol():
    """A stand-in Safe estimator whose parameter decreases (alpha): the grid goes down
    from the critical value and the walk follows it."""

    class Decreasing(SafeSVC):
        _path_param = "tol"
        _path_increasing = False

        def _critical_value(self, X, y, sample_weight=None):
            return 0.5

    X, y = data()
    grid = make_grid(Decreasing(kernel="linear"), X, y, n_values=3, eps=0.01)
    np.testing.assert_allclose(grid, [0.5, 0.05, 0.005])
    assert make_grid(Decreasing(), X, y, [0.1, 0.3, 0.2]).tolist() == [0.3, 0.2, 0.1]


# ------------------------------------------------------------ the eps-path ---
def E_bruteforce(alpha, Q, c, C, rho):
    """The eps-path bound E(rho) (doc/theory/svm_lad.rst), evaluated directly from Q."""
    A = alpha @ Q @ alpha
    q = Q @ alpha
    D = -0.5 * rho**2 * A + rho * alpha.sum()
    P1 = 0.5 * rho**2 * A + rho * C * (c * np.maximum(0, 1 - rho * q)).sum()
    P2 = 0.5 * A + rho * C * (c * np.maximum(0, 1 - q)).sum()
    P = min(P1, P2)
    return (P - D) / P


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(0, 10_000), st.floats(-3, 3))
def test_hinge_sums_match_direct_sum(seed, log_rho):
    rng = np.random.RandomState(seed)
    q, c = rng.randn(30), rng.uniform(0, 2, 30)
    rhos = np.array([10**log_rho, 1.0, 2.5])
    direct = [(c * np.maximum(0, 1 - r * q)).sum() for r in rhos]
    np.testing.assert_allclose(_hinge_sums(q, c, rhos), direct, rtol=1e-12, atol=1e-12)


@settings(max_examples=examples(15), deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([1e-2, 1e-3]))
def test_eps_step_keeps_the_rescaled_solution_eps_good(seed, eps):
    """Every C in [C_prev, C_next] satisfies E <= eps (brute force on a fine grid), and
    the step is maximal up to the search resolution."""
    X, y = data(n=60, seed=seed % 50)
    C = 0.05
    svc = SafeSVC(kernel="linear", C=C, tol=1e-10, max_iter=100000,
                  warm_start=True).fit(X, y)  # (warm start: the path state is kept)
    path = svc._path.paths[0]
    ref, td = path.reference, path.data
    Z = td.sign[:, None] * td.X
    Q = Z @ Z.T
    rho = svm_eps_step(ref.alpha, ref.margins, td.weights, C, eps, 1e3)
    assert rho > 1.0
    for r in np.linspace(1.0, rho, 40):
        assert E_bruteforce(ref.alpha, Q, td.weights, C, r) <= eps * (1 + 1e-9)
    if rho < 1e3:
        assert E_bruteforce(ref.alpha, Q, td.weights, C, rho * 1.0011) > eps


def test_eps_path_walk():
    X, y = data(n=200, seed=3)
    res = svm_path(X, y, "eps-path", kernel="linear", eps=1e-2, stop=5.0, tol=1e-8)
    assert res.values[0] == pytest.approx(res.critical_value)
    assert np.all(np.diff(res.values) > 0) and res.values[-1] <= 5.0
    assert len(res.values) >= 3
    # the grid helper gives the same values
    grid = make_grid(SafeSVC(kernel="linear", tol=1e-8), X, y, "eps-path", eps=1e-2,
                     stop=5.0)
    np.testing.assert_allclose(grid, res.values)


def test_eps_path_stops_when_no_sample_is_at_the_upper_bound():
    # separable data: beyond some C no alpha is at C, the solution stops changing
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(20, 2) + 4, rng.randn(20, 2) - 4])
    y = np.repeat([0, 1], 20)
    res = svm_path(X, y, "eps-path", kernel="linear", eps=1e-2, stop=1e6, tol=1e-10)
    assert res.values[-1] < 1e6
    last = res.estimator
    assert not np.any(last._path.paths[0].reference.alpha >= last.C * (1 - 1e-12))


def test_eps_path_refuses_other_estimators():
    class Other(SafeSVC):  # an estimator whose path protocol has no eps-path
        _has_eps_path = False

    X, y = data()
    with pytest.raises(ValueError, match="eps-path"):
        estimator_path(Other(), X, y, "eps-path")


def test_path_multiclass_and_clone_of_result_estimator():
    X, y = make_classification(n_samples=150, n_features=6, n_informative=4,
                               n_classes=3, random_state=0)
    res = svm_path(X, y, kernel="linear", n_values=4, tol=1e-8, multi_class="ovr")
    assert res.solutions[-1]["coef_"].shape == (3, 6)
    assert res.reports[-1].n_variables == 3 * 150
    clone(res.estimator)  # the walked estimator stays a normal estimator


# ------------------------------------------------------------ other families ---
def test_lad_path_equals_cold_fits():
    from sklearn.datasets import make_regression

    from sklearn_safescreen import lad
    from sklearn_safescreen.path import lad_path

    X, y = make_regression(n_samples=120, n_features=4, noise=5.0, random_state=1)
    res = lad_path(X, y, n_values=5, tol=1e-10, max_iter=200000)
    assert res.param_name == "C" and np.all(np.diff(res.values) > 0)
    for C, sol in zip(res.values, res.solutions, strict=True):
        cold = lad.SafeLAD(C=C, tol=1e-10, max_iter=200000).fit(X, y)
        np.testing.assert_allclose(sol["coef_"], cold.coef_, rtol=1e-4, atol=1e-4)


def test_metric_learning_path_walks_down_from_the_critical_value():
    from sklearn.datasets import load_iris

    from sklearn_safescreen import metric_learning as ml
    from sklearn_safescreen.path import metric_learning_path

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::2]
    y = y[::2]
    res = metric_learning_path(X, y, n_values=4, eps=1e-2, tol=1e-8)
    assert res.param_name == "alpha" and np.all(np.diff(res.values) < 0)
    np.testing.assert_allclose(res.values, res.critical_value * np.geomspace(1, 1e-2, 4))
    last = ml.SafeMetricLearner(alpha=res.values[-1], tol=1e-8).fit(X, y)
    key = "components_" if "components_" in res.solutions[-1] else next(
        k for k, v in res.solutions[-1].items() if v.ndim == 2)
    np.testing.assert_allclose(res.solutions[-1][key], getattr(last, key), atol=1e-4)


def test_solution_attributes_and_memory_refusal(monkeypatch):
    from sklearn_safescreen._utils import memory

    X, y = data(n=100)
    res = svm_path(X, y, kernel="linear", n_values=3, attributes=["coef_"])
    assert all(set(s) == {"coef_"} for s in res.solutions)
    assert all(s == {} for s in svm_path(X, y, kernel="linear", n_values=2,
                                         attributes=[]).solutions)
    full = svm_path(X, y, kernel="linear", n_values=2).solutions[-1]
    assert {"coef_", "intercept_", "dual_coef_", "support_"} <= set(full)
    # a budget smaller than the stored solutions: refused with the figure, before the
    # rest of the path is walked
    monkeypatch.setattr(memory, "available_memory", lambda: 2000)  # a budget of half
    with pytest.raises(MemoryError, match=r"would take about .* MiB .* attributes="):
        svm_path(X, y, kernel="linear", n_values=50)
    with pytest.raises(MemoryError, match="MiB"):
        svm_path(X, y, "eps-path", kernel="linear", eps=1e-2, stop=10.0)
    assert len(svm_path(X, y, kernel="linear", n_values=50, attributes=[])) == 50


@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 80), d=st.integers(1, 5),
       logs=st.lists(st.floats(-3, 1), min_size=1, max_size=5),
       weighted=st.booleans(), multiclass=st.booleans())
def test_path_solutions_are_the_optima_hypothesis(seed, n, d, logs, weighted, multiclass):
    """Along any grid (unsorted, duplicates allowed), with or without weights, binary or
    one-vs-rest, every warm-started, screened solution has the optimal objective of a
    cold unscreened fit (a screening error would also raise ScreeningRepairWarning)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = rng.randint(0, 3 if multiclass else 2, size=n)
    y[:3] = [0, 1, 2] if multiclass else [0, 1, 0]
    w = rng.uniform(0.2, 3.0, size=n) if weighted else None
    values = [10.0**v for v in logs]
    res = estimator_path(SafeSVC(kernel="linear", tol=1e-10, max_iter=200000), X, y,
                         values, sample_weight=w)
    assert sorted(values) == res.values.tolist()
    # both fits have relative gap <= 1e-10 and |D| <= C sum(w) <= 2400, so (1-strong
    # convexity) each w is within sqrt(2 * 2.4e-7) = 7e-4 of the optimum
    ref = SafeSVC(kernel="linear", tol=1e-10, max_iter=200000, screening=None)
    for C, sol in zip(res.values, res.solutions, strict=True):
        cold = clone(ref).set_params(C=C).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(sol["coef_"], cold.coef_, atol=1.5e-3)
        np.testing.assert_allclose(sol["intercept_"], cold.intercept_, atol=1.5e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eps_path_reproduces_algorithm_1_on_the_ogawa_toy(seed):
    """Our reference run of the eps-path step rule (not a number of the paper): on the
    toy of Ogawa et al. 2013, Sec. V-A (n=1000, bias-free linear SVM) with eps=1e-3 the
    step rule gives 44 steps from C_min ~ 2.2e-4 to 1e4, median step ratio ~1.15."""
    from sklearn_safescreen.datasets import make_ogawa_toy

    X, y = make_ogawa_toy(1000, random_state=seed)
    res = svm_path(X, y, "eps-path", kernel="linear", fit_intercept=False, eps=1e-3,
                   stop=1e4, tol=1e-8, attributes=[])
    v = res.values
    assert 1.5e-4 < v[0] < 3.5e-4 and v[-1] == pytest.approx(1e4)
    assert 40 <= len(v) <= 48
    assert 1.10 <= np.median(v[1:] / v[:-1]) <= 1.20


@pytest.mark.parametrize("stop", [1.0, 0.1])
def test_eps_path_ends_exactly_at_stop_once(stop):
    """A step computed as C * (stop / C) can land an ulp short of ``stop``: the grid must
    then end at ``stop`` itself, not at that value followed by ``stop`` (which the
    command line printed as C=1 twice). Data on which the step rule lands there."""
    from sklearn_safescreen.datasets import make_ogawa_toy

    X, y = make_ogawa_toy(random_state=0)
    grid = make_grid(SafeSVC(kernel="linear", random_state=0), X, y, "eps-path",
                     eps=1e-3, stop=stop)
    assert grid[-1] == stop
    assert np.all(np.diff(grid) > 0)
    assert not np.any(np.isclose(grid[:-1], stop, rtol=1e-9, atol=0)), grid[-3:]


def test_eps_path_snaps_a_step_one_ulp_short_of_stop(monkeypatch):
    """Whatever an estimator's step rule returns, a value within rounding of ``stop`` is
    ``stop``: the walk ends there (one fit), with no near-duplicate value."""
    def step_an_ulp_short(self, eps, stop):
        return None if self.C >= stop else np.nextafter(stop, 0.0)

    monkeypatch.setattr(SafeSVC, "_eps_path_next", step_an_ulp_short)
    X, y = data(n=60)
    res = estimator_path(SafeSVC(kernel="linear"), X, y, "eps-path", stop=2.0,
                         attributes=[])
    assert res.values.tolist() == [res.critical_value, 2.0]


def test_verbose_path_says_closed_form_not_screened(capsys):
    """At the critical value the fit is solved in closed form, with or without screening:
    the progress line says so instead of reporting 100% screened."""
    X, y = data(n=80)
    res = estimator_path(SafeSVC(kernel="linear", screening=None), X, y, n_values=3,
                         attributes=[], verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert res.reports[0].closed_form and not res.reports[-1].closed_form
    assert "closed-form" in lines[0] and "screened" not in lines[0]
    assert "closed-form" not in lines[-1] and "screened=   0.0%" in lines[-1]
