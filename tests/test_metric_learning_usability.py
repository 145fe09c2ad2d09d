"""SafeMetricLearner as a new user meets it: the cost of rule="sdp" and the report's
times, the default alpha and the convergence warning, the public critical value, the
docstring, the example and the metric-learn interface."""

from __future__ import annotations

import ast
import inspect
import io
import pickle
import runpy
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_safescreen.engine.triplet as engine
import sklearn_safescreen.engine.triplet_dynamic as triplet_dynamic
from sklearn_safescreen import RegularizationPathCV
from sklearn_safescreen import _metric_inputs as inputs_module
from sklearn_safescreen import _metric_learn_api as api_module
from sklearn_safescreen import _metric_report as report_module
from sklearn_safescreen import metric_learning as ml_module
from sklearn_safescreen.metric_learning import AUTO_ALPHA_FRACTION, SafeMetricLearner
from sklearn_safescreen.path import critical_value, metric_learning_path

ROOT = Path(__file__).resolve().parents[1]


def standardised(loader):
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def wine_training_split():
    """The training part of the 70/30 stratified split of the benchmarks (seed 0),
    standardised."""
    X, y = load_wine(return_X_y=True)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return StandardScaler().fit_transform(Xtr), ytr


def dgb_tol(ml):
    return np.sqrt(2 * ml.dual_gap_ / ml.alpha_)


# ------------------------------------------------------------- rule="sdp" ---
def test_sdp_rule_costs_about_what_the_linear_rule_costs():
    """rule="sdp" along a warm-started path on wine: the same metrics and screening
    rates as rule="linear" (whose cheap stage it runs first), its eigendecompositions
    within the budget of one per solver iteration, and its time of the same order
    (it took 70 s where "linear" took 0.1 s when it ran on every triplet at every
    check)."""
    X, y = wine_training_split()
    kw = dict(warm_start=True, tol=1e-6)
    sdp, lin = SafeMetricLearner(rule="sdp", **kw), SafeMetricLearner(rule="linear", **kw)
    alphas = critical_value(sdp, X, y) * 0.5 ** np.arange(1, 11)
    times = {"sdp": 0.0, "linear": 0.0}
    for alpha in alphas:
        for name, est in (("sdp", sdp), ("linear", lin)):
            t0 = time.perf_counter()
            est.set_params(alpha=alpha).fit(X, y)
            times[name] += time.perf_counter() - t0
        assert np.linalg.norm(sdp.metric_ - lin.metric_) <= 1.01 * (
            dgb_tol(sdp) + dgb_tol(lin)) + 1e-12
        assert sdp.screening_report_.screening_rate == pytest.approx(
            lin.screening_report_.screening_rate, abs=0.01)
    schedule = sdp._path.paths[0].sdp_schedule
    assert schedule.n_evaluated > 0
    assert schedule.spent <= schedule.per_iteration * schedule.iterations
    assert times["sdp"] <= 5 * times["linear"] + 0.5, times


def test_sdp_rule_at_the_default_alpha_is_cheap():
    X, y = wine_training_split()
    t0 = time.perf_counter()
    sdp = SafeMetricLearner(rule="sdp").fit(X, y)
    wall = time.perf_counter() - t0
    lin = SafeMetricLearner(rule="linear").fit(X, y)
    np.testing.assert_allclose(sdp.metric_, lin.metric_, atol=1.01 * (
        dgb_tol(sdp) + dgb_tol(lin)))
    assert wall < 5.0  # 70 s before its cost was bounded


@pytest.mark.parametrize("rule", ["sphere", "linear", "sdp"])
def test_report_times_do_not_overlap(rule, monkeypatch):
    """Rule time and solver time are disjoint parts of the fit: with every rule
    evaluation slowed down by a known sleep, the rule time holds all of it, the solver
    time none, and their sum stays within the fit's wall time."""
    X, y = wine_training_split()
    sleep = 0.02
    calls = []
    original = engine.screen_triplets

    def slow(*args, **kwargs):
        calls.append(1)
        time.sleep(sleep)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "screen_triplets", slow)  # (the reference screening)
    monkeypatch.setattr(triplet_dynamic, "screen_triplets", slow)
    # the reference ball of a warm step runs the rule through screen_triplets for "sdp";
    # the dynamic checks of "linear" and "sdp" do too ("sphere" runs compiled)
    ml = SafeMetricLearner(rule=rule, warm_start=True, alpha=3e4).fit(X, y)
    calls.clear()
    t0 = time.perf_counter()
    ml.set_params(alpha=1.5e4).fit(X, y)
    wall = time.perf_counter() - t0
    report = ml.screening_report_
    assert report.rule_time + report.solver_time <= wall
    slept = sleep * len(calls)
    if rule != "sphere":
        assert len(calls) > 0
    assert report.rule_time >= slept * (1 - 1e-6)
    assert report.solver_time <= wall - slept


# ------------------------------------------------------------ default alpha ---
@pytest.mark.parametrize("loader", [load_iris, load_wine, load_breast_cancer])
def test_default_alpha_converges_on_standardised_data(loader):
    X, y = standardised(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ml = SafeMetricLearner().fit(X, y)
    assert ml.alpha == "auto"
    assert ml.alpha_ == pytest.approx(AUTO_ALPHA_FRACTION * ml.critical_alpha_, rel=1e-15)
    assert ml.n_iter_ < 1000


def test_numeric_alpha_still_works_and_auto_follows_the_data():
    X, y = standardised(load_wine)
    auto = SafeMetricLearner().fit(X, y)
    numeric = SafeMetricLearner(alpha=auto.alpha_, tol=1e-8).fit(X, y)
    assert numeric.alpha_ == auto.alpha_
    assert np.linalg.norm(auto.metric_ - numeric.metric_) <= 1.01 * (
        dgb_tol(auto) + dgb_tol(numeric))
    # the scale of alpha follows that of X (fourth power): "auto" does too
    scaled = SafeMetricLearner().fit(10 * X, y)
    assert scaled.alpha_ == pytest.approx(1e4 * auto.alpha_, rel=1e-9)
    np.testing.assert_allclose(scaled.transform(10 * X), auto.transform(X), rtol=1e-4,
                               atol=1e-4 * np.abs(auto.transform(X)).max())
    with pytest.raises(ValueError, match="'alpha' parameter"):
        SafeMetricLearner(alpha="automatic").fit(X, y)


def test_auto_alpha_on_a_warm_path_and_in_path_searches():
    X, y = standardised(load_wine)
    ml = SafeMetricLearner(warm_start=True)
    for alpha in ["auto", 1e4, "auto"]:
        ml.set_params(alpha=alpha).fit(X, y)
    cold = SafeMetricLearner(tol=1e-8).fit(X, y)
    assert np.linalg.norm(ml.metric_ - cold.metric_) <= 1.01 * (dgb_tol(ml) + dgb_tol(cold))
    # the path tools set numeric values of the default-constructed estimator
    res = metric_learning_path(X, y, n_values=4, eps=1e-2)
    assert len(res) == 4 and np.all(np.diff(res.values) < 0)
    pipe = Pipeline([("metric", SafeMetricLearner()),
                     ("knn", KNeighborsClassifier(n_neighbors=5))])
    cv = RegularizationPathCV(pipe, param_name="metric__alpha", n_values=5, eps=1e-3,
                              cv=3).fit(X, y)
    assert isinstance(cv.best_params_["metric__alpha"], float)
    assert cv.best_score_ > 0.9


def test_convergence_warning_says_what_to_change():
    X, y = standardised(load_wine)
    with pytest.warns(ConvergenceWarning) as record:
        SafeMetricLearner(alpha=1.0, max_iter=50).fit(X, y)
    msg = str(record[0].message)
    assert "stopped at max_iter=50" in msg
    assert "x critical_alpha_=2.7e+06" in msg
    assert "raise alpha towards critical_alpha_" in msg and "alpha='auto'" in msg
    assert "increase max_iter" in msg
    with pytest.warns(ConvergenceWarning, match=r"SafeMetricLearner\(alpha='auto'\)"):
        SafeMetricLearner(max_iter=2).fit(X, y)


# ------------------------------------------------------- public critical value ---
def test_critical_value_is_public_and_equals_the_fitted_attribute():
    X, y = load_wine(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), SafeMetricLearner(k=5))
    before = critical_value(pipe, X, y)
    fitted = pipe.fit(X, y)[-1]
    assert before == fitted.critical_alpha_
    assert before == critical_value(SafeMetricLearner(k=5), StandardScaler().fit_transform(X),
                                    y)


def test_metric_learning_example_uses_the_public_api(monkeypatch):
    """The example runs, and reaches no private name of the package."""
    path = ROOT / "examples" / "plot_metric_learning.py"
    tree = ast.parse(path.read_text())
    private = sorted({node.attr for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and not node.attr.startswith("__")})
    assert private == []
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")


# ----------------------------------------------------------------- docstring ---
def test_docstrings_have_no_undefined_substitutions():
    """reST reads ``|name|`` as a substitution: the docstrings must not contain one
    that Sphinx would report as undefined."""
    from docutils.core import publish_doctree

    modules = (ml_module, api_module, inputs_module, report_module)
    names = {module.__name__ for module in modules}
    objects = [*modules, SafeMetricLearner] + [
        member for _, member in inspect.getmembers(SafeMetricLearner, inspect.isfunction)
        if member.__module__ in names] + [
        member for module in modules[2:]
        for _, member in inspect.getmembers(module, inspect.isfunction)
        if member.__module__ == module.__name__]
    for obj in objects:
        stream = io.StringIO()
        publish_doctree(inspect.getdoc(obj) or "", settings_overrides={
            "warning_stream": stream, "report_level": 1, "halt_level": 5})
        assert "Undefined substitution" not in stream.getvalue(), obj


# ------------------------------------------------------- metric-learn interface ---
@pytest.fixture
def metric_learn_mixin(monkeypatch):
    """metric-learn's ``MahalanobisMixin``, usable with scikit-learn >= 1.8.

    metric-learn 0.7.0 calls ``check_array`` / ``check_X_y`` in ``metric_learn._util``
    with ``force_all_finite``, which scikit-learn renamed ``ensure_all_finite`` (1.6) and
    removed (1.8): the two names are wrapped there, for this test only, translating the
    keyword (the shim of ``benchmarks/bench_metric_learning.py``)."""
    # the test extra installs metric-learn: a missing oracle fails the test, not skips it
    import metric_learn._util as mlu
    from metric_learn.base_metric import MahalanobisMixin

    def translated(func):
        def call(*args, force_all_finite=None, **kwargs):
            if force_all_finite is not None:
                kwargs["ensure_all_finite"] = force_all_finite
            return func(*args, **kwargs)
        return call

    monkeypatch.setattr(mlu, "check_array", translated(mlu.check_array))
    monkeypatch.setattr(mlu, "check_X_y", translated(mlu.check_X_y))
    return MahalanobisMixin


@pytest.mark.parametrize("metric", ["full", "diagonal"])
def test_metric_learn_interface_matches_metric_learn(metric_learn_mixin, metric):
    X, y = standardised(load_iris)
    ours = SafeMetricLearner(metric=metric).fit(X, y)

    class Reference(metric_learn_mixin):
        """metric-learn's definitions, applied to our learned transformation."""

        def __init__(self, components):
            self.components_ = components
            self.preprocessor_ = None

        def fit(self, X, y):  # pragma: no cover - abstract in metric-learn
            return self

    ref = Reference(ours.components_)
    M = ours.get_mahalanobis_matrix()
    scale = np.abs(M).max()
    np.testing.assert_allclose(M, ref.get_mahalanobis_matrix(), atol=1e-10 * scale)
    before = M[0, 0]
    M[0, 0] += 1.0  # a copy, as metric-learn's: the model is unchanged
    assert ours.get_mahalanobis_matrix()[0, 0] == before
    rng = np.random.RandomState(0)
    pairs = X[rng.randint(0, X.shape[0], size=(40, 2))]
    np.testing.assert_allclose(ours.pair_distance(pairs), ref.pair_distance(pairs),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.pair_score(pairs), ref.pair_score(pairs), rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), rtol=1e-12)
    f, g = ours.get_metric(), ref.get_metric()
    for u, v in pairs[:5]:
        assert f(u, v) == pytest.approx(g(u, v), rel=1e-8, abs=1e-10)
        assert f(u, v, squared=True) == pytest.approx(g(u, v, squared=True), rel=1e-8,
                                                      abs=1e-10)
    # vectors as scipy takes them (squeezed), and the same refusal of a matrix
    assert f(X[:1], X[1:2]) == pytest.approx(g(X[:1], X[1:2]), rel=1e-8)
    with pytest.raises(ValueError):
        g(X[:2], X[2:4])
    with pytest.raises(ValueError, match="1-D"):
        f(X[:2], X[2:4])
    # usable as a scikit-learn metric
    knn = KNeighborsClassifier(n_neighbors=3, metric=f).fit(X, y)
    np.testing.assert_array_equal(
        knn.predict(X[:20]),
        KNeighborsClassifier(n_neighbors=3).fit(ours.transform(X), y).predict(
            ours.transform(X[:20])))


@pytest.mark.parametrize("metric", ["full", "diagonal"])
def test_transform_preserves_float32(metric):
    """float32 in, float32 out (as PCA's transform), the float64 fit's map rounded once;
    other dtypes come out float64. Used to return float64 for float32 input."""
    X, y = standardised(load_iris)
    ml = SafeMetricLearner(metric=metric).fit(X.astype(np.float32), y)
    assert "float32" in ml.__sklearn_tags__().transformer_tags.preserves_dtype
    out = ml.transform(X.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ml.transform(X), rtol=1e-5, atol=1e-5)
    assert ml.transform(X).dtype == np.float64
    assert ml.transform(X.astype(np.int64)).dtype == np.float64
    assert ml.fit_transform(X.astype(np.float32), y).dtype == np.float32


def test_components_have_a_deterministic_sign():
    """An eigenvector's sign is arbitrary: each row of ``components_`` has its entry of
    largest magnitude positive (scikit-learn's ``svd_flip`` convention), so metrics
    equal up to round-off transform alike (the 10x-scaled wine fit above flipped three
    rows under NumPy 2.4 before)."""
    X, y = standardised(load_wine)
    for ml in (SafeMetricLearner().fit(X, y), SafeMetricLearner().fit(10 * X, y)):
        C = ml.components_
        rows = np.flatnonzero(np.abs(C).max(axis=1) > 0)
        assert rows.size >= 5
        assert np.all(C[rows, np.argmax(np.abs(C[rows]), axis=1)] > 0)


@pytest.mark.parametrize("metric", ["full", "diagonal"])
def test_every_method_follows_assigned_components(metric):
    """``components_`` is the model, as in metric-learn: after assigning another L
    (square or with fewer rows), ``metric_``, ``get_mahalanobis_matrix``,
    ``get_metric``, ``pair_distance``, ``pair_score`` and ``transform`` all use it.
    Before, the first four kept using the fitted metric."""
    X, y = standardised(load_iris)
    ml = SafeMetricLearner(metric=metric).fit(X, y)
    pairs = np.stack([X[:12], X[12:24]], axis=1)
    for L in (2 * np.eye(4), np.arange(8.0).reshape(2, 4) - 3):
        ml.components_ = L
        M = L.T @ L
        np.testing.assert_array_equal(ml.metric_, M)
        np.testing.assert_array_equal(ml.get_mahalanobis_matrix(), M)
        np.testing.assert_allclose(ml.transform(X), X @ L.T, rtol=1e-15)
        expected = np.linalg.norm((pairs[:, 0] - pairs[:, 1]) @ L.T, axis=1)
        np.testing.assert_allclose(ml.pair_distance(pairs), expected, rtol=1e-14)
        np.testing.assert_allclose(ml.pair_score(pairs), -expected, rtol=1e-14)
        f = ml.get_metric()
        assert f(X[0], X[12]) == pytest.approx(expected[0], rel=1e-14)
        assert f(X[0], X[12], squared=True) == pytest.approx(expected[0] ** 2, rel=1e-14)
        assert ml.get_feature_names_out().shape == (L.shape[0],)
    # the metric function keeps its copy; a refit replaces the assigned model
    ml.components_ = 2 * np.eye(4)
    f = ml.get_metric()
    ml.components_ = np.eye(4)
    assert f(X[0], X[1]) == pytest.approx(2 * np.linalg.norm(X[0] - X[1]), rel=1e-14)
    refit = ml.fit(X, y)
    fresh = SafeMetricLearner(metric=metric).fit(X, y)
    np.testing.assert_array_equal(refit.components_, fresh.components_)
    np.testing.assert_array_equal(refit.metric_, fresh.metric_)


def test_metric_is_derived_and_pickled_once():
    """``metric_`` is ``components_.T @ components_``: not stored (the pickle carries
    L only), equal to the solution up to round-off, and assigning it is refused with
    the attribute to assign instead."""
    X, y = standardised(load_wine)
    ml = SafeMetricLearner(warm_start=True).fit(X, y)  # (keeps the solution)
    assert "components_" in vars(ml) and "metric_" not in vars(ml)
    L = ml.components_
    np.testing.assert_array_equal(ml.metric_, L.T @ L)
    M = ml._path.paths[0].reference.M
    assert np.linalg.norm(ml.metric_ - M) <= 1e-13 * np.linalg.norm(M)
    restored = pickle.loads(pickle.dumps(ml))
    np.testing.assert_array_equal(restored.metric_, ml.metric_)
    assert len(pickle.dumps(ml)) < len(pickle.dumps(L)) + 3_000
    with pytest.raises(AttributeError, match="assign components_ instead"):
        ml.metric_ = np.eye(X.shape[1])
