"""Large C and the hard margin (C = np.inf) of SafeSVC.

On separable data the SVM's solution stops changing once C exceeds every
alpha*_i / c_i: it is the hard-margin solution. Its C-free duality gap (the primal point
rescaled by its smallest margin, ``BoxQP.hard_margin_gap``) certifies it at any C, the
path stops there, and C = np.inf is that solution; non-separable data at C = np.inf,
and data separable only with a margin float64 cannot resolve, are refused
(``doc/theory/svm_lad.rst``, "Hard margin").
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sklearn_safescreen import PrecisionWarning, SafeSVC
from sklearn_safescreen.problems.box_qp_data import SVMData
from sklearn_safescreen.problems.kernels import design_matrix
from sklearn_safescreen.solvers.dual_cd import solve_box_qp

TOL = 1e-4
LARGE_C = [1e6, 1e9, 1e12, np.inf]


def separable(n: int = 600, d: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes whose first coordinates are at least 2 apart."""
    rng = np.random.RandomState(seed)
    y = (rng.rand(n) < 0.5).astype(int)
    X = rng.randn(n, d)
    side = np.where(y == 1, 1.0, -1.0)
    X[:, 0] = side * (1.0 + np.abs(X[:, 0]) + 2.0)
    return X, y


@functools.cache
def data(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return StandardScaler().fit_transform(X), y
    return separable()


@functools.cache
def svc_predictions(name: str, kernel: str) -> np.ndarray:
    """SVC's predictions at C = 1e6, above every alpha*_i of these sets: its
    hard-margin solution (its intercept is not regularised, ours is a bias feature)."""
    X, y = data(name)
    svc = SVC(kernel=kernel, C=1e6).fit(X, y)
    assert np.abs(svc.dual_coef_).max() < 1e6  # no sample at the bound
    return svc.predict(X)


@pytest.mark.parametrize("name", ["cancer", "separable"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("C", LARGE_C)
def test_large_C_is_certified_and_predicts_as_svc(name, kernel, C):
    X, y = data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        model = SafeSVC(kernel=kernel, C=C, tol=TOL).fit(X, y)
    # the gap relative to the dual objective sum(alpha) - ||w||^2 / 2, which is
    # sum(alpha) / 2 at the hard-margin optimum
    alpha = np.abs(model.dual_coef_).ravel()
    assert model.dual_gap_[0] <= TOL * 0.5 * alpha.sum()
    assert alpha.max() < 1e6  # the hard-margin solution: no sample at its bound
    np.testing.assert_array_equal(model.predict(X), svc_predictions(name, kernel))
    np.testing.assert_array_equal(model.predict(X), y)  # separable: both separate


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_large_C_are_one_solution_the_hard_margin(kernel):
    """Every C above alpha*_i / c_i gives the same model, C = inf's."""
    X, y = data("separable")
    models = [SafeSVC(kernel=kernel, C=C).fit(X, y) for C in LARGE_C]
    for m in models[1:]:
        np.testing.assert_allclose(m.dual_coef_, models[-1].dual_coef_, rtol=1e-3,
                                   atol=1e-6 * np.abs(models[-1].dual_coef_).max())


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_inf_on_non_separable_data_raises(kernel):
    rng = np.random.RandomState(0)
    X, y = rng.randn(100, 5), rng.rand(100) < 0.5
    with pytest.raises(ValueError, match="C=inf.*not separable in feature space"):
        SafeSVC(kernel=kernel, C=np.inf, gamma=0.01).fit(X, y)


def test_inf_on_data_whose_samples_cancel_raises_at_once():
    """Opposite labels on one point: sum_i c_i y_i z_i = 0, a proof of non-separability
    (the critical value is infinite) that needs no solve."""
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="C=inf.*not separable.*sum of the samples"):
        SafeSVC(kernel="linear", C=np.inf).fit(X, [0, 1])


def line(margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Two classes on a line, separated by a gap ``margin`` around 0 (the bias feature
    is 1): the hard margin's ||w|| is about 2 / margin."""
    left = -margin / 2 - np.linspace(0.0, 1.0, 20)
    right = margin / 2 + np.linspace(0.0, 1.0, 20)
    return np.concatenate([left, right])[:, None], np.repeat([0, 1], 20)


def test_resolvable_margin_is_fitted():
    X, y = line(1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SafeSVC(kernel="linear", C=np.inf).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), y)


@pytest.mark.parametrize("C", [1e17, np.inf])
def test_unresolvable_margin_is_refused_with_the_figure(C):
    """A margin of 1e-9: the hard margin's sum(alpha) * max K is ~ 1e19, beyond 1/u,
    so every margin's rounding exceeds the hinge's unit: refused, with the figure. (At
    C = 1e12 the solution keeps samples at the bound, sum(alpha) ~ 1e13: resolvable.)"""
    X, y = line(1e-9)
    with pytest.raises(ValueError, match=r"reaches 1/u = 9.01e\+15"):
        SafeSVC(kernel="linear", C=C).fit(X, y)


def test_warm_started_path_through_inf():
    """A warm-started walk up to C = inf and back down gives the cold fits' models."""
    X, y = data("cancer")
    model = SafeSVC(kernel="rbf", warm_start=True)
    for C in [1.0, 1e3, np.inf, 1e9, 10.0]:
        model.set_params(C=C).fit(X, y)
        cold = SafeSVC(kernel="rbf", C=C).fit(X, y)
        np.testing.assert_array_equal(model.predict(X), cold.predict(X))
        np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                                   rtol=1e-2, atol=1e-2)


def test_hard_margin_gap_bounds_the_suboptimality():
    """The C-free gap bounds D*_C - D(alpha) for feasible points at every C (the
    exact optimum computed to round-off), and is 0 at the hard-margin optimum."""
    X, y = separable(80, 3, seed=2)
    Xa, _ = design_matrix(X, "linear", {}, 1.0, screening=None,
                          cache_size=200)
    d = SVMData(Xa, None, np.where(y == 1, 1.0, -1.0), np.ones(len(y)))
    rng = np.random.RandomState(0)
    for C in [0.1, 10.0, 1e4]:
        problem = d.problem(C)
        best = solve_box_qp(problem, np.zeros(len(y)), np.zeros(len(y), dtype=bool),
                            tol=1e-13, max_iter=100000, random_state=rng).alpha
        q = problem.margins(best)
        d_star = problem.dual_objective(best, q)
        for _ in range(20):
            alpha = np.minimum(best * rng.uniform(0.5, 1.5, len(y)), problem.hi)
            qa, err = problem.accurate_margins(alpha)
            gap, error = problem.hard_margin_gap(alpha, qa, err)
            if np.isfinite(gap):
                assert d_star - problem.dual_objective(alpha, qa) <= gap + error + 1e-9
    qa, err = d.problem(1e4).accurate_margins(best)
    gap, error = d.problem(1e4).hard_margin_gap(best, qa, err)
    assert gap + error <= 1e-8 * best.sum()


def test_inf_with_a_kernel_larger_than_its_cache():
    """A kernel whose rows do not fit in the cache starts C = inf from zero at the
    largest C whose box float64 resolves: the same hard-margin model."""
    X, y = separable(300)
    small = SafeSVC(kernel="rbf", C=np.inf, cache_size=0.3).fit(X, y)
    cached = SafeSVC(kernel="rbf", C=np.inf).fit(X, y)
    np.testing.assert_array_equal(small.predict(X), cached.predict(X))
    np.testing.assert_allclose(small.decision_function(X), cached.decision_function(X),
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("cache_size", [200, 0.5])
def test_warm_step_to_huge_C_stops_on_the_hard_margin_gap(cache_size):
    """A warm step from C = 1 straight to C = 1e12 (one solve, no internal path): the
    kernel solvers' stopping tests take the C-free gap, so the solve does not run to
    max_iter on a per-sample gap that C inflates (it used to, for 30 s)."""
    X, y = data("cancer")
    model = SafeSVC(kernel="rbf", C=1.0, warm_start=True, cache_size=cache_size,
                    max_iter=2000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.set_params(C=1e12).fit(X, y)
    assert model.n_iter_[0] < 100
    cold = SafeSVC(kernel="rbf", C=1e12).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), cold.predict(X))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_inf_with_zero_sample_weights_is_the_subset_hard_margin(kernel):
    """Samples of weight 0 are not in the problem (their box is empty at any C, C = inf
    included): the model is the one fitted without them."""
    X, y = separable(200)
    w = np.ones(len(y))
    w[::7] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted = SafeSVC(kernel=kernel, C=np.inf, gamma=0.05).fit(X, y, sample_weight=w)
    keep = w > 0
    subset = SafeSVC(kernel=kernel, C=np.inf, gamma=0.05).fit(X[keep], y[keep])
    np.testing.assert_allclose(weighted.decision_function(X), subset.decision_function(X),
                               rtol=1e-3, atol=1e-3)


def test_path_cv_geometric_grid_to_huge_C():
    """RegularizationPathCV's geometric grid up to stop=1e12: every value certified,
    no warning, the large values all the hard margin."""
    from sklearn_safescreen import RegularizationPathCV

    X, y = data("separable")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        search = RegularizationPathCV(SafeSVC(kernel="rbf"), param_name="C", n_values=8,
                                      stop=1e12, cv=2).fit(X, y)
    assert search.best_estimator_.score(X, y) == 1.0
    assert search.cv_results_["param_C"].max() == pytest.approx(1e12)


@pytest.mark.parametrize("seed", range(6))
def test_far_above_the_critical_value_is_proven_from_a_few_rows(seed):
    """A cold kernel fit skips the closed form (and its pass over the whole kernel) only
    where ``C`` is at least INTERNAL_PATH_RATIO times the true C_min: the few rows it
    reads bound C_min from above."""
    from sklearn_safescreen.engine.box_qp import INTERNAL_PATH_RATIO

    rng = np.random.RandomState(seed)
    X = rng.randn(120, 4)
    y = (X[:, 0] + rng.randn(120) > 0).astype(int)
    model = SafeSVC(kernel="rbf", gamma=rng.choice([0.05, 0.5, 5.0]), C=1.0,
                    warm_start=True).fit(X, y)
    path = model._path.paths[0]
    c_min = path.data.critical_value()[0]
    for C in c_min * np.logspace(0, 8, 33):
        if path._far_above_critical(C):
            assert C >= INTERNAL_PATH_RATIO * c_min
    assert path._far_above_critical(1e3 * INTERNAL_PATH_RATIO * c_min)
    assert not path._far_above_critical(np.inf)


def test_cold_fit_far_above_the_critical_value_starts_from_zero(monkeypatch):
    """With every kernel row cached, a cold fit at a C far above C_min solves from zero
    (no closed-form event) and finds the solution of the route through the closed form
    and its internal path; near C_min it starts from the closed form."""
    from sklearn_safescreen.engine.box_qp import SVMPath

    X, y = separable(n=300, d=5)
    far = SafeSVC(kernel="rbf", C=1e6, tol=1e-10).fit(X, y)
    assert "Cmin" not in {e.rule for e in far.screening_report_.events}
    monkeypatch.setattr(SVMPath, "_far_above_critical", lambda self, C: False)
    through = SafeSVC(kernel="rbf", C=1e6, tol=1e-10).fit(X, y)
    assert "Cmin" in {e.rule for e in through.screening_report_.events}
    np.testing.assert_allclose(far.decision_function(X), through.decision_function(X),
                               rtol=1e-6, atol=1e-6)
    monkeypatch.undo()
    near = SafeSVC(kernel="rbf", C=1e-3, warm_start=True).fit(X, y)
    assert "Cmin" in {e.rule for e in near.screening_report_.events}
