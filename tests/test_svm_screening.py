"""SafeSVC with every screening rule equals SafeSVC without screening, along warm-started
paths in both directions, with weights and multiclass tasks; warm starts reuse a
reference only on the same problem; the certified duality gap is the full problem's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _svm_models import (
    RULES,
    full_beta,
    gram,
    make_binary,
    make_multiclass,
    objectives,
    task_problems,
)
from sklearn.metrics.pairwise import rbf_kernel

from sklearn_safescreen import SafeSVC, ScreeningRepairWarning, fit_context

# ---------------------------------------------------------- screening equivalence ---
PATH = [0.05, 0.5, 5.0, 50.0, 2.0, 0.2]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_every_rule_equals_no_screening(rule, kernel):
    X, y = make_binary(n=80, d=3, seed=6, noise=1.0)
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    Xt, _ = make_binary(n=30, d=3, seed=7)
    model = SafeSVC(kernel=kernel, screening=rule, tol=1e-9, warm_start=True, **kw)
    n_reference_screened = 0
    for C in PATH:
        with fit_context(model, screening="always"):  # (the rule itself is under test)
            model.set_params(C=C).fit(X, y)
        cold = SafeSVC(kernel=kernel, screening=None, tol=1e-9, C=C, **kw).fit(X, y)
        np.testing.assert_allclose(model.decision_function(Xt), cold.decision_function(Xt),
                                   atol=1e-5, rtol=1e-6)
        n_reference_screened += sum(e.n_screened for e in model.screening_report_.events
                                    if e.moment == "reference")
    if rule is not None:
        # the rule really acted along the path (otherwise the test would be vacuous)
        assert n_reference_screened > 0


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_every_rule_equals_no_screening_with_weights(rule, kernel):
    """Rules with per-sample upper bounds C*c_i (sample and class weights; an extension
    not in the papers, doc/theory/svm_lad.rst)."""
    X, y = make_binary(n=80, d=3, seed=8, noise=1.0)
    sw = np.random.RandomState(0).uniform(0.2, 3.0, size=len(y))
    sw[:5] = 0.0
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, screening=rule, tol=1e-9, warm_start=True,
                    class_weight="balanced", **kw)
    n_reference_screened = 0
    # close pairs of values: from a tenfold step the weighted balls of this problem
    # reach every sample with the RBF kernel, and the test would be vacuous
    for C in (0.05, 0.06, 0.5, 0.55, 5.0, 5.5, 2.0, 0.2):
        with fit_context(model, screening="always"):
            model.set_params(C=C).fit(X, y, sample_weight=sw)
        cold = SafeSVC(kernel=kernel, screening=None, tol=1e-9, C=C,
                       class_weight="balanced", **kw).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                                   atol=1e-5, rtol=1e-6)
        n_reference_screened += sum(e.n_screened for e in model.screening_report_.events
                                    if e.moment == "reference")
    if rule is not None:
        assert n_reference_screened > 0  # (the weighted rule acted: not vacuous)


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_cold_fit_equals_no_screening_multiclass(rule):
    X, y = make_multiclass(n=90, d=3, k=3, seed=3)
    for kernel in ["linear", "rbf"]:
        a = SafeSVC(kernel=kernel, C=20.0, screening=rule, tol=1e-9).fit(X, y)
        b = SafeSVC(kernel=kernel, C=20.0, screening=None, tol=1e-9).fit(X, y)
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                   atol=1e-5, rtol=1e-6)


# ---------------------------------------------------------------------- paths ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_warm_start_path_equals_cold_fits(kernel, direction):
    X, y = make_binary(n=80, d=4, seed=9, noise=1.0)
    Cs = [0.01, 0.1, 1.0, 10.0, 100.0]
    if direction == "down":
        Cs = Cs[::-1]
    model = SafeSVC(kernel=kernel, tol=1e-9, warm_start=True)
    for C in Cs:
        model.set_params(C=C).fit(X, y)
        cold = SafeSVC(kernel=kernel, tol=1e-9, C=C).fit(X, y)
        np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                                   atol=1e-5, rtol=1e-6)
        np.testing.assert_array_equal(model.predict(X), cold.predict(X))
        if kernel == "linear":
            np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)
            np.testing.assert_allclose(model.intercept_, cold.intercept_, atol=1e-5)
        assert model.dual_gap_.shape == (1,)


@pytest.mark.parametrize("rule", ["IT", "BT1", "BT2", "DVI"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_warm_start_down_to_everything_screened(rule, kernel):
    """Walking down to a small C, the rules may fix *every* sample (all in L, as below
    C_min): the solve must then return alpha = C c without optimising anything."""
    X, y = make_binary(n=50, d=3, seed=0, noise=1.5)
    kw = {"gamma": 0.7} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=0.03125, screening=rule, tol=1e-9, warm_start=True,
                    **kw).fit(X, y)
    model.set_params(C=0.003125).fit(X, y)
    cold = SafeSVC(kernel=kernel, C=0.003125, screening=None, tol=1e-9, **kw).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                               atol=1e-7)
    # far below C_min every alpha_i sits at its upper bound C
    np.testing.assert_allclose(np.abs(full_beta(model, 0, len(y))), 0.003125, rtol=1e-12)


def test_warm_start_same_data_reuses_reference():
    """Sanity check of the fingerprint tests below: a cold fit starts from the closed
    form at C_min (a "Cmin" event), a warm start on the same data screens from the
    previous solution instead."""
    X, y = make_binary(n=60, d=3, seed=10)
    model = SafeSVC(kernel="rbf", gamma=0.5, warm_start=True, tol=1e-9, C=1.0)
    with fit_context(model, screening="always"):
        model.fit(X, y)
        assert _started_cold(model)
        model.set_params(C=2.0).fit(X, y)
    assert not _started_cold(model)
    assert any(e.moment == "reference" for e in model.screening_report_.events)


def _started_cold(model) -> bool:
    """The fit began at the closed form at C_min, or (kernel too large for the cache)
    from nothing, rather than from a previous solution."""
    events = model.screening_report_.events
    return (any(e.rule == "Cmin" for e in events)
            or not any(e.moment == "reference" for e in events))


def _changes():
    X, y = make_binary(n=60, d=3, seed=11)
    rng = np.random.RandomState(1)
    return X, y, {
        "new_X": (X + 0.5 * rng.randn(*X.shape), y, None, {}),
        "flipped_y": (X, 1 - y, None, {}),
        "permuted_rows": (X[::-1].copy(), y[::-1].copy(), None, {}),
        "sample_weight": (X, y, rng.uniform(0.1, 3.0, len(y)), {}),
        "class_weight": (X, y, None, {"class_weight": {0: 5.0, 1: 0.5}}),
        "gamma": (X, y, None, {"gamma": 3.0}),
        "intercept_scaling": (X, y, None, {"intercept_scaling": 4.0}),
        "shrink_X": (0.2 * X, y, None, {}),
    }


@pytest.mark.parametrize("change", list(_changes()[2]))
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_warm_start_on_changed_problem_does_not_reuse_reference(kernel, change):
    X, y, changes = _changes()
    X2, y2, sw2, params = changes[change]
    if kernel == "linear" and change == "gamma":
        pytest.skip("gamma is unused by the linear kernel")
    base = {"gamma": 0.5} if kernel == "rbf" else {}
    model = SafeSVC(kernel=kernel, C=5.0, tol=1e-9, warm_start=True, **base).fit(X, y)
    model.set_params(**params).fit(X2, y2, sample_weight=sw2)
    cold = SafeSVC(kernel=kernel, C=5.0, tol=1e-9, **{**base, **params}).fit(
        X2, y2, sample_weight=sw2)
    np.testing.assert_allclose(model.decision_function(X2), cold.decision_function(X2),
                               atol=1e-5, rtol=1e-6)
    assert _started_cold(model)


def test_warm_start_after_changed_data_and_back():
    X, y = make_binary(n=60, d=3, seed=12)
    X2, y2 = make_binary(n=60, d=3, seed=13)
    model = SafeSVC(kernel="linear", warm_start=True, tol=1e-9, C=1.0)
    for XX, yy, C in [(X, y, 1.0), (X2, y2, 3.0), (X, y, 0.3), (X2, y2, 30.0)]:
        model.set_params(C=C).fit(XX, yy)
        cold = SafeSVC(kernel="linear", tol=1e-9, C=C).fit(XX, yy)
        np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)


def test_warm_start_different_number_of_samples():
    X, y = make_binary(n=60, d=3, seed=14)
    model = SafeSVC(kernel="rbf", warm_start=True, tol=1e-9, C=1.0).fit(X, y)
    model.fit(X[:40], y[:40])
    cold = SafeSVC(kernel="rbf", tol=1e-9, C=1.0).fit(X[:40], y[:40])
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X),
                               atol=1e-5)


@pytest.mark.parametrize("kind", ["int", "float", "str"])
def test_warm_start_label_encoding_follows_the_targets(kind):
    """Warm-started fits reuse the label check and encoding only for identical numeric
    targets; relabelled, edited or string targets are encoded afresh."""
    X, y = make_binary(n=60, d=3, seed=15)
    y = np.where(y == y.max(), 1, -1)
    to = {"int": lambda t: t.astype(int), "float": lambda t: t.astype(float),
          "str": lambda t: np.where(t > 0, "yes", "no")}[kind]
    model = SafeSVC(kernel="linear", warm_start=True, tol=1e-9).fit(X, to(y))
    y_edit = y.copy()
    y_edit[:5] = -y_edit[:5]
    for yy in [-y, y_edit, y, 3 * y + 1]:
        model.fit(X, to(yy))
        cold = SafeSVC(kernel="linear", tol=1e-9).fit(X, to(yy))
        np.testing.assert_array_equal(model.classes_, cold.classes_)
        np.testing.assert_array_equal(model.predict(X), cold.predict(X))
        np.testing.assert_allclose(model.coef_, cold.coef_, atol=1e-5)
    with pytest.raises(ValueError, match="Unknown label type"):
        model.fit(X, y + 0.25 * np.arange(y.size))  # continuous: checked, not cached


# ---------------------------------------------------------------- certificate ---
def _indep_gap(model, K_aug, y_idx, weights, C):
    gaps, duals = [], []
    for col, (ysign, task_weights) in enumerate(task_problems(model, y_idx, weights)):
        alpha = full_beta(model, col, y_idx.size, y_idx) * ysign
        P, D = objectives(K_aug, ysign, C * task_weights, alpha)
        gaps.append(P - D)
        duals.append(D)
    return np.array(gaps), np.array(duals)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("tol", [1e-2, 1e-4])
@pytest.mark.parametrize("rule", ["IT", None])
@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_dual_gap_is_full_primal_minus_dual(kernel, n_classes, tol, rule, multi_class):
    X, y = make_multiclass(n=90, d=3, k=n_classes, seed=12, spread=2.0)
    sw = np.random.RandomState(5).uniform(0.5, 2.0, len(y))
    C = 5.0
    model = SafeSVC(kernel=kernel, C=C, tol=tol, gamma=0.5, degree=2, coef0=1.0,
                    screening=rule, random_state=0, multi_class=multi_class
                    ).fit(X, y, sample_weight=sw)
    K = gram(X, X, kernel, 0.5, degree=2, coef0=1.0)
    gaps, duals = _indep_gap(model, K + 1.0, y, sw, C)
    np.testing.assert_allclose(model.dual_gap_, gaps, rtol=1e-7,
                               atol=1e-9 * max(1.0, np.abs(duals).max()))
    assert np.all(gaps >= -1e-9 * np.abs(duals))
    # tol is the target relative gap of the full problem
    assert np.all(gaps <= tol * np.abs(duals) * (1 + 1e-6) + 1e-12)


def test_dual_gap_along_warm_path():
    X, y = make_binary(n=80, d=3, seed=27, noise=1.0)
    model = SafeSVC(kernel="rbf", gamma=0.5, warm_start=True, tol=1e-3)
    K = rbf_kernel(X, X, gamma=0.5) + 1.0
    for C in [0.1, 1.0, 10.0, 3.0]:
        model.set_params(C=C).fit(X, y)
        gaps, duals = _indep_gap(model, K, y, np.ones(len(y)), C)
        np.testing.assert_allclose(model.dual_gap_, gaps, rtol=1e-7,
                                   atol=1e-9 * max(1.0, abs(duals[0])))


def test_no_screening_repair_warning_anywhere():
    """A repair means an unsafe rule; the certificate must never have to act."""
    X, y = make_binary(n=100, d=3, seed=28, noise=1.0)
    sw = np.random.RandomState(6).uniform(0.0, 3.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScreeningRepairWarning)
        for kernel in ["linear", "rbf"]:
            for rule in ["IT", "BT1", "BT2", "DVI"]:
                for tol in [1e-1, 1e-3, 1e-8]:
                    m = SafeSVC(kernel=kernel, screening=rule, tol=tol, warm_start=True,
                                class_weight="balanced")
                    for C in [0.01, 1.0, 100.0, 0.3, 30.0, 0.02]:
                        m.set_params(C=C).fit(X, y, sample_weight=sw)
                    assert not any(e.moment == "repair"
                                   for e in m.screening_report_.events)


