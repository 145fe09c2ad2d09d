"""A warm start reuses its paths only for the same problem.

The problem's parameters are derived (``base.problem_params``: every constructor
parameter but the path parameter and the family's declared ``_solver_params``), not
listed. For every family and EACH of its problem parameters (the set derived the same
way, checked against the table of second values below, so that a new parameter needs
a value here), a warm fit after a change of that parameter must build new paths and
give the cold fit's answer; for each declared solver parameter, a warm fit after a
change must keep the paths and still give the cold fit's answer.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel

from sklearn_safescreen import (
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    SafeLPSVC,
    SafeSVC,
)
from sklearn_safescreen._utils.fingerprint import parameter_token
from sklearn_safescreen.base import problem_key, problem_params
from sklearn_safescreen.lad import SafeLAD
from sklearn_safescreen.metric_learning import SafeMetricLearner


def _kernel_a(A, B):
    return rbf_kernel(A, B, gamma=0.2)


def _kernel_b(A, B):
    return (A @ B.T + 1.0) ** 2


def _classification():
    # imbalanced, so that class_weight="balanced" changes the problem
    # (imbalanced: the intercept matters too)
    return make_classification(80, 6, n_informative=4, weights=[0.85], flip_y=0.1,
                               random_state=0)


def _regression():
    X, y = make_regression(80, 6, n_informative=4, noise=5.0, random_state=0)
    return X, y / y.std() + 2.0  # (an offset: the intercept matters)


def _triplet_data():
    X, y = make_classification(45, 4, n_informative=3, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    return X, y


#: The families: estimator, its base parameters (a warm fit's problem), the data, and
#: the fitted output compared with a cold fit's (with its absolute tolerance).
FAMILIES = {
    "svc_linear": (SafeSVC, dict(kernel="linear", C=1.0, tol=1e-10), _classification,
                   "decision_function", 1e-6),
    "svc_kernel": (SafeSVC, dict(kernel="rbf", gamma=0.3, C=1.0, tol=1e-10),
                   _classification, "decision_function", 1e-6),
    "lad": (SafeLAD, dict(kernel="linear", C=1.0, tol=1e-10), _regression, "predict",
            1e-6),
    "ds_svc": (SafeDoublySparseSVC, dict(alpha=0.02, tol=1e-10), _classification,
               "decision_function", 1e-6),
    "ds_svr": (SafeDoublySparseSVR, dict(alpha=0.02, tol=1e-10), _regression, "predict",
               1e-6),
    "lp_svc": (SafeLPSVC, dict(alpha=0.02, tol=1e-9), _classification,
               "decision_function", 1e-6),
    # (the hinge's dual solve stops at max_iter, identically warm and cold)
    "metric": (SafeMetricLearner, dict(alpha=200.0, k=2, tol=1e-9, max_iter=2000),
               _triplet_data, "metric_", 1e-5),
}

#: Two other valid values of every problem parameter of each family. ``matters``:
#: whether the value changes the optimum from the base problem's (so that a warm start
#: reusing the old paths would be caught); some parameters are inert for the base
#: problem (a linear kernel ignores gamma), and are part of the problem regardless.
BALANCED_OR_DICT = [{0: 4.0, 1: 0.5}, "balanced"]
PROBLEM_VALUES = {
    "svc_linear": {
        "class_weight": (BALANCED_OR_DICT, True),
        "coef0": ([1.0, 2.5], False),
        "degree": ([2, 4], False),
        "fit_intercept": ([False], True),
        "gamma": ([0.1, "auto"], False),
        "intercept_scaling": ([3.0, 0.2], True),
        "kernel": (["rbf", _kernel_a], True),
        "multi_class": (["ovr"], False),  # (binary data: one task either way)
    },
    "svc_kernel": {
        "class_weight": (BALANCED_OR_DICT, True),
        "coef0": ([1.0, 2.5], False),
        "degree": ([2, 4], False),
        "fit_intercept": ([False], True),
        "gamma": ([1.5, "scale"], True),
        "intercept_scaling": ([3.0, 0.2], True),
        "kernel": (["poly", _kernel_b], True),
        "multi_class": (["ovr"], False),  # (binary data: one task either way)
    },
    "lad": {
        "coef0": ([1.0, 2.5], False),
        "degree": ([2, 4], False),
        "fit_intercept": ([False], True),
        "gamma": ([0.1, "auto"], False),
        "intercept_scaling": ([3.0, 0.2], True),
        "kernel": (["rbf", _kernel_a], True),
    },
    "ds_svc": {
        "class_weight": (BALANCED_OR_DICT, True),
        "fit_intercept": ([False], True),
        "intercept_scaling": ([3.0, 0.2], True),
        "smoothing": ([0.1, 2.0], True),
    },
    "ds_svr": {
        "epsilon": ([0.5, 0.0], True),
        "fit_intercept": ([False], True),
        "intercept_scaling": ([3.0, 0.2], True),
        "smoothing": ([0.1, 2.0], True),
    },
    "lp_svc": {
        "class_weight": (BALANCED_OR_DICT, True),
        "fit_intercept": ([False], True),
        "intercept_scaling": ([3.0, 0.2], True),
    },
    "metric": {
        "k": ([1, None], True),
        "loss": (["hinge"], True),
        "metric": (["diagonal"], True),
        "smoothing": ([0.3, 0.6], True),
    },
}

#: Another valid value of every declared solver parameter (warm_start aside: it is
#: what keeps the paths).
SOLVER_VALUES = {
    "svc_linear": dict(screening="DVI", tol=1e-11, max_iter=50000, verbose=1,
                       random_state=7, n_jobs=2, cache_size=50,
                       decision_function_shape="ovo", break_ties=True),
    "svc_kernel": dict(screening=None, tol=1e-11, max_iter=50000, verbose=1,
                       random_state=7, n_jobs=2, cache_size=50,
                       decision_function_shape="ovo", break_ties=True),
    "lad": dict(screening=None, tol=1e-11, max_iter=50000, verbose=1, random_state=7,
                n_jobs=2, cache_size=50),
    "ds_svc": dict(l1_ratio=0.8, screening="features", tol=1e-11, max_iter=50000,
                   verbose=1, random_state=7, n_jobs=2),
    "ds_svr": dict(l1_ratio=0.8, screening="samples", tol=1e-11, max_iter=50000,
                   verbose=1, random_state=7, n_jobs=2),
    "lp_svc": dict(screening="features", solver="homotopy", tol=1e-10, max_iter=300,
                   verbose=1, n_jobs=2),
    "metric": dict(screening="gb", bound="pgb", rule="linear", range_screening=True,
                   active_set=True, screening_interval=3, tol=1e-10, max_iter=20000,
                   verbose=1, random_state=0),
}


def _output(model, X, what):
    out = getattr(model, what)
    return np.asarray(out(X) if callable(out) else out, dtype=float)


def _fit(cls, params, X, y):
    with warnings.catch_warnings():
        # deprecated spellings (metric learner's bound, random_state) warn, and the
        # hinge stops at max_iter: the value they set is what is tested here
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**params).fit(X, y)


def _cases(table):
    return [pytest.param(family, name, value, matters,
                         id=f"{family}-{name}-{getattr(value, '__name__', value)}")
            for family, params in table.items()
            for name, (values, matters) in params.items() for value in values]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_tables_cover_the_derived_split(family):
    """Every problem parameter (derived) has values to test, and every declared solver
    parameter is a constructor parameter of the family (a misspelt name would leave a
    solver parameter in the problem, and declare nothing)."""
    cls, base, *_ = FAMILIES[family]
    est = cls(**base)
    assert set(problem_params(est)) == set(PROBLEM_VALUES[family])
    names = set(est.get_params())
    assert cls._solver_params <= names
    assert cls._path_param in names and cls._path_param not in problem_params(est)
    assert set(SOLVER_VALUES[family]) == cls._solver_params - {"warm_start"}
    assert "warm_start" in cls._solver_params


@pytest.mark.parametrize("family, name, value, matters", _cases(PROBLEM_VALUES))
def test_a_changed_problem_parameter_builds_new_paths(family, name, value, matters):
    """Warm fit, change one problem parameter, warm fit again: new paths, and the cold
    fit's answer with the new parameters."""
    cls, base, data, what, atol = FAMILIES[family]
    X, y = data()
    model = _fit(cls, {**base, "warm_start": True}, X, y)
    before, old = model._path, _output(model, X, what)
    model.set_params(**{name: value})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert model._path is not before
    cold = _fit(cls, {**base, name: value}, X, y)
    new = _output(cold, X, what)
    scale = max(1.0, float(np.abs(new).max()))
    np.testing.assert_allclose(_output(model, X, what), new, rtol=0, atol=atol * scale)
    if matters:  # the change is visible: a warm fit on the old paths would be caught
        assert np.abs(new - old).max() > 10 * atol * scale


@pytest.mark.parametrize("family, name", [(family, name)
                                          for family, values in SOLVER_VALUES.items()
                                          for name in values])
def test_a_changed_solver_parameter_keeps_the_paths(family, name, capsys):
    """Warm fit, change one declared solver parameter, warm fit again: the same paths,
    and the cold fit's answer with the new parameters."""
    cls, base, data, what, atol = FAMILIES[family]
    X, y = data()
    value = SOLVER_VALUES[family][name]
    model = _fit(cls, {**base, "warm_start": True}, X, y)
    before = model._path
    model.set_params(**{name: value})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        model.fit(X, y)
    assert model._path is before
    cold = _fit(cls, {**base, name: value}, X, y)
    new = _output(cold, X, what)
    scale = max(1.0, float(np.abs(new).max()))
    np.testing.assert_allclose(_output(model, X, what), new, rtol=0, atol=atol * scale)
    capsys.readouterr()


def test_a_path_value_change_keeps_the_paths():
    X, y = _classification()
    model = SafeDoublySparseSVC(alpha=0.05, warm_start=True).fit(X, y)
    before = model._path
    model.set_params(alpha=0.02).fit(X, y)
    assert model._path is before


def test_the_same_callable_kernel_keeps_the_paths_another_does_not():
    """A callable kernel is part of the problem by identity."""
    X, y = _classification()
    model = SafeSVC(kernel=_kernel_a, C=1.0, warm_start=True).fit(X, y)
    before = model._path
    model.set_params(C=2.0).fit(X, y)
    assert model._path is before
    assert model._path.identities == (_kernel_a,)  # kept alive with the key

    def same_values(A, B):
        return _kernel_a(A, B)

    model.set_params(kernel=same_values).fit(X, y)
    assert model._path is not before


def test_class_weight_dict_order_and_content():
    """A dict is its sorted items: another order keeps the paths, an in-place change of
    a weight does not."""
    X, y = _classification()
    weights = {0: 1.0, 1: 3.0}
    model = SafeLPSVC(alpha=0.02, class_weight=weights, warm_start=True).fit(X, y)
    before = model._path
    model.set_params(class_weight={1: 3.0, 0: 1.0}).fit(X, y)
    assert model._path is before
    model.set_params(class_weight=weights)
    weights[1] = 0.5  # the same dict, changed in place
    model.fit(X, y)
    assert model._path is not before
    cold = SafeLPSVC(alpha=0.02, class_weight={0: 1.0, 1: 0.5}).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                               atol=1e-6)


def test_parameter_tokens():
    held = []
    assert parameter_token(np.float64(0.5), held) == parameter_token(0.5, held)
    assert parameter_token(np.int64(3), held) == parameter_token(3, held)
    assert parameter_token(1, held) != parameter_token(1.0, held)
    assert parameter_token(True, held) != parameter_token(1, held)
    assert parameter_token({0: 1.0, 1: 2.0}, held) == parameter_token({1: 2.0, 0: 1.0}, held)
    assert parameter_token({0: 1.0}, held) != parameter_token({0: 1.5}, held)
    assert parameter_token(np.arange(3.0), held) == parameter_token(np.arange(3.0), held)
    assert parameter_token(np.arange(3.0), held) != parameter_token(np.arange(1.0, 4.0),
                                                                    held)
    assert parameter_token(float("nan"), held) == parameter_token(float("nan"), held)
    assert held == []
    obj = object()
    assert parameter_token(obj, held) == parameter_token(obj, held)
    assert held == [obj, obj]


def test_the_key_is_the_problem():
    """The key changes with the data's fingerprint and any problem parameter, not with a
    solver parameter or the path parameter."""
    est = SafeDoublySparseSVC(alpha=0.1)
    key = problem_key(est, "data")[0]
    assert problem_key(est, "other data")[0] != key
    assert problem_key(est.set_params(alpha=0.2, tol=1e-3), "data")[0] == key
    assert problem_key(est.set_params(smoothing=0.25), "data")[0] != key
