"""SafeSVC's scikit-learn behaviour: Pipeline, GridSearchCV, clone, pickle, fitted
attributes, bad input (clear errors), verbose output and edge cases."""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _svm_models import (
    assert_matches_cvx,
    full_beta,
    gram,
    make_binary,
    make_multiclass,
    scores_2d,
)
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import SafeSVC, ScreeningReport, fit_context
from sklearn_safescreen.lad import SafeLAD


# ------------------------------------------------------------------------ API ---
def test_pipeline_and_grid_search():
    X, y = make_binary(n=80, d=4, seed=25)
    X = X * np.array([1.0, 100.0, 0.01, 5.0]) + 10.0
    pipe = make_pipeline(StandardScaler(), SafeSVC(kernel="rbf"))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.8
    grid = GridSearchCV(make_pipeline(StandardScaler(), SafeSVC(kernel="linear")),
                        {"safesvc__C": [0.01, 0.1, 1.0, 10.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["safesvc__C"] in (0.01, 0.1, 1.0, 10.0)
    assert grid.score(X, y) > 0.8
    grid2 = GridSearchCV(SafeSVC(), {"C": [0.1, 1.0], "screening": ["IT", None]}, cv=3)
    grid2.fit(X, y)
    assert hasattr(grid2, "best_estimator_")


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_clone_and_pickle(kernel):
    X, y = make_multiclass(n=60, d=3, k=3, seed=10)
    model = SafeSVC(kernel=kernel, C=0.7, class_weight="balanced", random_state=0)
    c = clone(model)
    assert c.get_params() == model.get_params()
    assert not hasattr(c, "classes_")
    model.fit(X, y)
    c2 = clone(model)
    assert not hasattr(c2, "classes_")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    np.testing.assert_array_equal(restored.decision_function(X), model.decision_function(X))
    if kernel == "linear":  # the linear model is coef_; its dual solution is not pickled
        np.testing.assert_array_equal(restored.coef_, model.coef_)
        with pytest.raises(AttributeError, match="linear model keeps coef_"):
            restored.dual_coef_  # noqa: B018
    else:
        np.testing.assert_array_equal(restored.dual_coef_, model.dual_coef_)
    assert repr(restored.screening_report_) == repr(model.screening_report_)


def test_pickle_precomputed_and_sparse():
    X, y = make_binary(n=50, d=4, seed=26)
    K = rbf_kernel(X, X, gamma=0.5)
    m = SafeSVC(kernel="precomputed").fit(K, y)
    r = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(r.decision_function(K), m.decision_function(K))
    Xs = sp.csr_matrix(X * (X > 0))
    m = SafeSVC(kernel="rbf").fit(Xs, y)
    r = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(r.decision_function(Xs), m.decision_function(Xs))


@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_fitted_attributes(kernel, n_classes, multi_class):
    X, y = make_multiclass(n=60, d=3, k=n_classes, seed=11)
    g = 0.5
    fit_in = rbf_kernel(X, X, gamma=g) if kernel == "precomputed" else X
    kw = {"gamma": g} if kernel == "rbf" else {}
    s = 1.5
    model = SafeSVC(kernel=kernel, C=1.0, intercept_scaling=s, multi_class=multi_class,
                    **kw).fit(fit_in, y)
    ovo = multi_class == "ovo" and n_classes > 2
    n_tasks = 1 if n_classes == 2 else n_classes * (n_classes - 1) // 2 if ovo \
        else n_classes
    np.testing.assert_array_equal(model.classes_, np.arange(n_classes))
    assert model.n_features_in_ == fit_in.shape[1]
    # one-vs-one: libsvm's layout, (n_classes - 1) rows, support vectors by class
    assert model.dual_coef_.shape == (n_classes - 1 if ovo else n_tasks,
                                      model.support_.size)
    assert model.support_.ndim == 1 and model.support_.size > 0
    order = np.lexsort((model.support_, y[model.support_])) if ovo else \
        np.argsort(model.support_)
    np.testing.assert_array_equal(order, np.arange(model.support_.size))
    assert np.all((model.support_ >= 0) & (model.support_ < len(y)))
    np.testing.assert_array_equal(model.n_support_,
                                  np.bincount(y[model.support_], minlength=n_classes))
    assert model.n_support_.dtype == np.int32
    # every support vector has a nonzero coefficient in some task
    assert np.all(np.any(model.dual_coef_ != 0, axis=0))
    assert model.n_iter_.shape == (n_tasks,)
    assert np.issubdtype(model.n_iter_.dtype, np.integer)
    assert model.dual_gap_.shape == (n_tasks,)
    assert np.all(model.dual_gap_ >= 0)
    assert isinstance(model.screening_report_, ScreeningReport)
    if kernel == "precomputed":
        assert model.support_vectors_.shape[0] == 0
    elif kernel == "linear":  # the model is coef_: no copy of the training rows
        assert not hasattr(model, "support_vectors_")
    else:
        np.testing.assert_array_equal(model.support_vectors_, X[model.support_])
    # each task's alpha_i y_i over the support vectors
    beta = np.array([full_beta(model, t, len(y), y) for t in range(n_tasks)])
    beta = beta[:, model.support_]
    # w = sum_i alpha_i y_i x_i and intercept = s * w_bias = s^2 sum_i alpha_i y_i, for
    # every kernel (the bias feature adds s^2 to the kernel)
    assert model.intercept_.shape == (n_tasks,)
    np.testing.assert_allclose(model.intercept_, s**2 * beta.sum(axis=1), atol=1e-10)
    if kernel == "linear":
        assert model.coef_.shape == (n_tasks, X.shape[1])
        np.testing.assert_allclose(model.coef_, beta @ X[model.support_], atol=1e-10)
    # the decision function is the kernel expansion over the support vectors plus the
    # intercept
    K = rbf_kernel(X, X[model.support_], gamma=g) if kernel != "linear" else \
        X @ X[model.support_].T
    expected = K @ beta.T + model.intercept_
    if ovo:
        model.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(scores_2d(model, fit_in), expected, atol=1e-9)


def test_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SafeSVC().predict(np.zeros((2, 2)))


# ------------------------------------------------------------------ bad input ---
def _data():
    return make_binary(n=30, d=3, seed=29)


@pytest.mark.parametrize("bad, match", [(np.nan, "NaN"), (np.inf, "infinity|inf")])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_non_finite_X(bad, match, kernel):
    X, y = _data()
    X[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        SafeSVC(kernel=kernel).fit(X, y)
    model = SafeSVC(kernel=kernel).fit(*_data())
    with pytest.raises(ValueError, match=match):
        model.predict(X)


def test_one_class():
    X, _ = _data()
    with pytest.raises(ValueError, match="class"):
        SafeSVC().fit(X, np.ones(len(X)))


@pytest.mark.parametrize("C", [0.0, -1.0])
def test_non_positive_C(C):
    with pytest.raises(ValueError, match="C"):
        SafeSVC(C=C).fit(*_data())


def test_unknown_kernel():
    with pytest.raises(ValueError, match="kernel"):
        SafeSVC(kernel="sigmoidal").fit(*_data())


def test_unknown_screening():
    with pytest.raises(ValueError, match="screening"):
        SafeSVC(screening="DOME").fit(*_data())


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_precomputed_not_psd(fit_intercept):
    n = 20
    v = np.zeros(n)
    v[0], v[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)  # orthogonal to 1: the bias can't help
    K = np.eye(n) - 3.0 * np.outer(v, v)  # symmetric, eigenvalue -2
    assert np.linalg.eigvalsh(K)[0] < -1
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="positive semi-definite"):
        SafeSVC(kernel="precomputed", fit_intercept=fit_intercept).fit(K, y)


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_warm_start_turning_screening_on_checks_the_kernel(Estimator):
    """A non-PSD precomputed kernel fitted without screening, then with screening on
    the same arrays (a warm start): the PSD check must run then."""
    n = 20
    v = np.zeros(n)
    v[0], v[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)
    K = np.eye(n) - 3.0 * np.outer(v, v)
    y = (np.arange(n) % 2).astype(float)
    model = Estimator(kernel="precomputed", screening=None, warm_start=True).fit(K, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        model.set_params(screening=Estimator().screening).fit(K, y)


def test_callable_kernel_not_psd():
    X, y = _data()
    with pytest.raises(ValueError, match="positive semi-definite"):
        SafeSVC(kernel=lambda A, B: -(A @ B.T)).fit(X, y)


def test_precomputed_not_square():
    X, y = _data()
    with pytest.raises(ValueError, match="square"):
        SafeSVC(kernel="precomputed").fit(X @ X[:10].T, y)


def test_precomputed_wrong_test_shape():
    X, y = _data()
    model = SafeSVC(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError):
        model.predict(X[:5] @ X[:10].T)


def test_sample_weight_wrong_length():
    X, y = _data()
    with pytest.raises(ValueError, match="sample_weight|shape"):
        SafeSVC().fit(X, y, sample_weight=np.ones(len(y) - 1))


def test_negative_sample_weight():
    X, y = _data()
    sw = np.ones(len(y))
    sw[4] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        SafeSVC().fit(X, y, sample_weight=sw)


def test_all_zero_sample_weight():
    X, y = _data()
    with pytest.raises(ValueError):
        SafeSVC().fit(X, y, sample_weight=np.zeros(len(y)))


def test_wrong_number_of_features_at_predict():
    X, y = _data()
    model = SafeSVC(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])


# -------------------------------------------------------------------- verbose ---
def _lines(capsys):
    out = capsys.readouterr().out
    return [ln for ln in out.splitlines() if ln.strip()]


def test_verbose_one_line_per_path_step(capsys):
    X, y = make_binary(n=60, d=3, seed=30)
    model = SafeSVC(kernel="rbf", gamma=0.5, verbose=1, warm_start=True)
    for C in [0.1, 1.0, 10.0, 3.0]:
        with fit_context(model, screening="always"):  # (screened steps print one line)
            model.set_params(C=C).fit(X, y)
        lines = _lines(capsys)
        assert len(lines) == 1, lines
        assert "SafeSVC" in lines[0]
        assert f"C={C:g}" in lines[0].replace(" ", "")


def test_verbose_multiclass_one_line_per_task(capsys):
    X, y = make_multiclass(n=60, d=3, k=3, seed=13)
    model = SafeSVC(kernel="rbf", verbose=1)
    with fit_context(model, screening="always"):
        model.fit(X, y)
    lines = _lines(capsys)
    assert len(lines) == 3, lines


def test_verbose_linear_internal_path(capsys):
    """A cold linear fit walks an internal path: one line per solved value, the last
    one at C; the values are those of the screening report."""
    X, y = make_binary(n=60, d=3, seed=31)
    C = 100.0
    model = SafeSVC(kernel="linear", C=C, verbose=1).fit(X, y)
    lines = _lines(capsys)
    values = []
    for e in model.screening_report_.events:
        if e.moment in ("dynamic", "solve") and (not values or values[-1] != e.value):
            values.append(e.value)
    assert len(lines) == len(values) >= 2, (lines, values)
    assert "C=100" in lines[-1].replace(" ", "")


def test_verbose_prints_for_every_fit(capsys):
    """Even a fit solved in closed form (C <= C_min, Ogawa et al. 2013, Lemma 9) is a
    path step."""
    X, y = make_binary(n=60, d=3, seed=31)
    SafeSVC(kernel="linear", C=1e-5, verbose=1).fit(X, y)
    lines = _lines(capsys)
    assert len(lines) == 1, lines


def test_verbose_zero_is_silent(capsys):
    X, y = make_binary(n=60, d=3, seed=32)
    SafeSVC(kernel="linear", C=10.0).fit(X, y)
    SafeSVC(kernel="rbf", C=10.0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_sample_weight_two_equals_duplicate_default_gamma():
    """Same as above with the default gamma="scale": the resolved gamma must not
    depend on whether a sample is weighted 2 or repeated (it is part of the problem)."""
    X, y = make_binary(n=50, d=3, seed=20, noise=1.0)
    Xt, _ = make_binary(n=20, d=3, seed=21)
    dup = np.arange(0, 50, 3)
    sw = np.ones(len(y))
    sw[dup] = 2.0
    a = SafeSVC(C=3.0, tol=1e-10).fit(X, y, sample_weight=sw)
    b = SafeSVC(C=3.0, tol=1e-10).fit(np.vstack([X, X[dup]]), np.r_[y, y[dup]])
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt),
                               atol=1e-5)


# ------------------------------------------------------------------ edge cases ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_n_jobs_gives_same_model(kernel):
    X, y = make_multiclass(n=60, d=3, k=4, seed=14)
    a = SafeSVC(kernel=kernel, C=2.0, tol=1e-9, random_state=0).fit(X, y)
    b = SafeSVC(kernel=kernel, C=2.0, tol=1e-9, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_duplicates_zero_rows_and_float32(kernel):
    """Edge cases: duplicate samples, a zero-norm sample (no intercept), float32 input."""
    X, y = make_binary(n=50, d=3, seed=33, noise=1.0)
    X = np.vstack([X, X[:10], np.zeros((2, 3))])
    y = np.r_[y, y[:10], 0, 1]
    Xt, _ = make_binary(n=20, d=3, seed=34)
    kw = {"gamma": 0.5} if kernel == "rbf" else {}
    for fit_intercept in [True, False]:
        g = 0.5
        K = gram(X, X, kernel, g)
        Kt = gram(Xt, X, kernel, g)
        dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
        bias = 1.0 if fit_intercept else 0.0
        for rule in ["IT", None]:
            m = SafeSVC(kernel=kernel, C=5.0, tol=1e-10, fit_intercept=fit_intercept,
                        screening=rule, **kw).fit(X, y)
            assert_matches_cvx(m, Xt, K, Kt, dte, y, np.ones(len(y)), 5.0, bias)
        m32 = SafeSVC(kernel=kernel, C=5.0, tol=1e-10, fit_intercept=fit_intercept,
                      **kw).fit(X.astype(np.float32), y)
        np.testing.assert_allclose(m32.decision_function(Xt), m.decision_function(Xt),
                                   atol=1e-4)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_separable_data_large_C(kernel):
    rng = np.random.RandomState(35)
    X = np.vstack([rng.randn(30, 2) + 4, rng.randn(30, 2) - 4])
    y = np.r_[np.ones(30, int), np.zeros(30, int)]
    Xt = rng.randn(10, 2) * 3
    kw = {"gamma": 0.1} if kernel == "rbf" else {}
    for C in [1e3, 1e5]:
        m = SafeSVC(kernel=kernel, C=C, tol=1e-10, **kw).fit(X, y)
        assert m.score(X, y) == 1.0
        K, Kt = gram(X, X, kernel, 0.1), gram(Xt, X, kernel, 0.1)
        dte = np.ones(len(Xt)) if kernel == "rbf" else np.einsum("ij,ij->i", Xt, Xt)
        assert_matches_cvx(m, Xt, K, Kt, dte, y, np.ones(len(y)), C, 1.0)


def test_two_samples():
    X = np.array([[1.0, 0.0], [-1.0, 0.5]])
    y = np.array([0, 1])
    for kernel in ["linear", "rbf"]:
        m = SafeSVC(kernel=kernel, C=10.0, tol=1e-10).fit(X, y)
        np.testing.assert_array_equal(m.predict(X), y)


def test_warm_start_switching_rules_along_path():
    X, y = make_binary(n=80, d=3, seed=36, noise=1.0)
    m = SafeSVC(kernel="rbf", gamma=0.5, tol=1e-9, warm_start=True)
    for C, rule in [(0.1, "IT"), (1.0, "BT2"), (10.0, None), (3.0, "DVI"), (30.0, "BT1")]:
        m.set_params(C=C, screening=rule).fit(X, y)
        cold = SafeSVC(kernel="rbf", gamma=0.5, tol=1e-9, C=C, screening=None).fit(X, y)
        np.testing.assert_allclose(m.decision_function(X), cold.decision_function(X),
                                   atol=1e-5)


try:
    from _profiles import examples
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    @settings(max_examples=examples(60), deadline=None, derandomize=True, database=None,
              print_blob=True)
    @given(seed=st.integers(0, 10_000), log_c_ref=st.floats(-3.0, 2.0),
           ratio=st.sampled_from([0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 10.0]),
           rule=st.sampled_from(["IT", "BT1", "BT2", "DVI"]),
           kernel=st.sampled_from(["linear", "rbf"]),
           weighted=st.booleans())
    def test_random_reference_target_pairs(seed, log_c_ref, ratio, rule, kernel,
                                           weighted):
        """Safety and exactness through the estimator: screening from a solution at
        C_ref, then solving at C = ratio * C_ref, gives the unscreened optimum at C."""
        c_ref = 10.0**log_c_ref
        X, y = make_binary(n=50, d=3, seed=seed, noise=1.5)
        if len(np.unique(y)) < 2:
            return
        sw = np.random.RandomState(seed).uniform(0.0, 3.0, len(y)) if weighted else None
        kw = {"gamma": 0.7} if kernel == "rbf" else {}
        m = SafeSVC(kernel=kernel, C=c_ref, screening=rule, tol=1e-9, warm_start=True,
                    **kw).fit(X, y, sample_weight=sw)
        m.set_params(C=c_ref * ratio).fit(X, y, sample_weight=sw)
        cold = SafeSVC(kernel=kernel, C=c_ref * ratio, screening=None, tol=1e-9,
                       **kw).fit(X, y, sample_weight=sw)
        scale = max(1.0, np.abs(cold.decision_function(X)).max())
        np.testing.assert_allclose(m.decision_function(X), cold.decision_function(X),
                                   atol=1e-5 * scale)


def test_callable_kernel_results_are_not_modified():
    """The solver signs and shifts kernel blocks in place: a callable kernel that keeps
    (memoises) the arrays it returns must find them unchanged."""
    X, y = make_binary(n=50, d=3, seed=16)
    returned = []

    def memo_rbf(A, B):
        K = np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        returned.append((K, K.copy()))
        return K

    model = SafeSVC(kernel=memo_rbf, C=2.0, tol=1e-9, fit_intercept=False).fit(X, y)
    assert returned
    for K, original in returned:
        np.testing.assert_array_equal(K, original)
    reference = SafeSVC(kernel="rbf", gamma=0.5, C=2.0, tol=1e-9,
                        fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               atol=1e-6)


def test_pickle_size_of_a_fitted_model():
    """A linear model pickles to its coefficients (not the training set, nor its dual
    solution, whose size grows with n); a kernel model to about what SVC's needs."""
    from sklearn.datasets import load_breast_cancer, make_classification
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=20000, n_features=50, n_informative=20,
                               flip_y=0.05, random_state=0)
    for warm_start in (False, True):
        model = SafeSVC(kernel="linear", warm_start=warm_start).fit(X, y)
        assert len(pickle.dumps(model)) < 20_000
    restored = pickle.loads(pickle.dumps(model))
    assert not hasattr(restored, "_path")  # a warm start after unpickling starts cold
    restored.set_params(C=2.0).fit(X, y)
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xb = StandardScaler().fit_transform(Xb)
    ours = len(pickle.dumps(SafeSVC().fit(Xb, yb)))
    assert ours <= 1.2 * len(pickle.dumps(SVC().fit(Xb, yb)))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("where", ["all", "one"])
def test_huge_finite_values_are_refused_clearly(kernel, where):
    """Entries whose squares overflow used to end in ZeroDivisionError, OverflowError or
    'cannot convert float NaN to integer' deep in the solver."""
    X, y = make_binary(n=50, d=4, seed=30)
    if where == "all":
        X = X * 1e300
    else:
        X[0, 0] = 1e300
    with pytest.raises(ValueError, match=r"X has entries up to [0-9.]+e\+30[0-9] in "
                                         r"magnitude; the solver squares them"):
        SafeSVC(kernel=kernel).fit(X, y)


def test_kernel_values_that_overflow_are_refused_clearly():
    X, y = make_binary(n=40, d=3, seed=31)
    with pytest.raises(ValueError, match="k\\(x, x\\), overflow"):
        SafeSVC(kernel="poly", degree=9, gamma=1e40, coef0=1.0).fit(X * 1e3, y)


@pytest.mark.parametrize("class_weight, match", [
    ({5: 2.0}, r"class_weight names \[5\], not among the classes of y \(\[0, 1\]\)"),
    ({0: 1.0, 1: 2.0, 7: 1.0}, r"names \[7\]"),
    ({0: -1.0}, "finite and non-negative; got {0: -1.0}"),
    ({1: float("nan")}, "finite and non-negative"),
    ({1: float("inf")}, "finite and non-negative"),
])
def test_class_weight_is_validated_before_solving(class_weight, match):
    X, y = make_binary(n=40, d=3, seed=32)
    with pytest.raises(ValueError, match=match):
        SafeSVC(kernel="linear", class_weight=class_weight).fit(X, y)


def test_class_weight_zero_for_a_class_is_allowed_and_string_labels_are_keys():
    X, y = make_binary(n=60, d=3, seed=33)
    labels = np.array(["neg", "pos"])[y]
    m = SafeSVC(kernel="linear", class_weight={"neg": 0.5}).fit(X, labels)
    assert set(m.predict(X)) <= {"neg", "pos"}
    with pytest.raises(ValueError, match=r"names \['nope'\]"):
        SafeSVC(kernel="linear", class_weight={"nope": 1.0}).fit(X, labels)


@pytest.mark.parametrize("change", ["class_weight", "sample_weight"])
def test_warm_start_sees_changed_weights(change):
    """The warm-start fingerprint covers the weights through the data's content and
    ``class_weight``: changing either starts a new problem (screening from the old one's
    reference would be unsafe; the suite turns a repair into an error) and gives the
    cold fit's answer."""
    rng = np.random.RandomState(3)
    X = rng.randn(300, 5)
    y = (X[:, 0] + 0.5 * rng.randn(300) > 0).astype(int)
    sw = np.ones(300)
    model = SafeSVC(kernel="linear", C=1.0, tol=1e-8, warm_start=True).fit(X, y, sw)
    before = model._path.fingerprint
    if change == "class_weight":
        model.set_params(class_weight={0: 1.0, 1: 5.0})
        cold = SafeSVC(kernel="linear", C=1.0, tol=1e-8, class_weight={0: 1.0, 1: 5.0})
        sw2 = sw
    else:
        sw2 = sw.copy()
        sw2[y == 1] = 5.0
        cold = SafeSVC(kernel="linear", C=1.0, tol=1e-8)
    model.fit(X, y, sw2)
    assert model._path.fingerprint != before
    cold.fit(X, y, sw2)
    np.testing.assert_allclose(model.coef_, cold.coef_, rtol=1e-4, atol=1e-6)


def _shape_kernel(shape):
    """A callable kernel whose value has the given shape (a function of A's and B's
    lengths) or is a scalar (``shape=None``)."""
    def kernel(A, B):
        return 1.0 if shape is None else np.ones(shape(A.shape[0], B.shape[0]))
    return kernel


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
@pytest.mark.parametrize("kernel, actual", [
    (_shape_kernel(lambda na, nb: (na, 3)), r"an array of shape \(50, 3\)"),
    (_shape_kernel(None), r"a scalar of shape \(\)"),
    (_shape_kernel(lambda na, nb: (na * nb,)), r"an array of shape \(2500,\)"),
])
def test_callable_kernel_of_the_wrong_shape_is_refused_plainly(Estimator, kernel, actual):
    """Used to end in a numpy broadcast error or a LinAlgError inside the solver."""
    X, y = make_binary(n=50, d=4, seed=32)
    with pytest.raises(ValueError, match=r"must return an array of shape \(len\(A\), "
                                         r"len\(B\)\) = \(50, 50\) .*; it returned " + actual):
        Estimator(kernel=kernel).fit(X, y)


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_callable_kernel_returning_non_finite_values(Estimator, bad):
    """A NaN used to be reported as 'not symmetric', with a numpy RuntimeWarning."""
    X, y = make_binary(n=40, d=3, seed=33)

    def kernel(A, B):
        K = A @ B.T
        K[0, -1] = bad
        return K

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning leaks either
        with pytest.raises(ValueError, match="kernel returned non-finite values"):
            Estimator(kernel=kernel).fit(X, y)
        with pytest.raises(ValueError, match="kernel returned non-finite values"):
            Estimator(kernel=kernel, screening=None).fit(X, y)


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_callable_kernel_of_the_wrong_shape_at_predict(Estimator):
    """A kernel right on the training set and wrong on new samples used to fail with
    'dot2_accumulate: shapes do not match'."""
    X, y = make_binary(n=40, d=3, seed=34)

    def kernel(A, B):
        return A @ B.T if A.shape[0] == 40 else np.ones((A.shape[0], 2))

    model = Estimator(kernel=kernel).fit(X, y)
    n_sv = model.support_vectors_.shape[0]
    with pytest.raises(ValueError, match=rf"= \(7, {n_sv}\) .*an array of shape \(7, 2\)"):
        model.predict(X[:7])


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_kernel_scores_in_blocks_within_working_memory(Estimator, monkeypatch):
    """Kernel models score test samples in blocks whose kernel rows against the support
    vectors fit scikit-learn's ``working_memory`` (one block at once took 6.5 GB for
    12,500 samples against 33,000 support vectors), with the same scores."""
    from sklearn import config_context

    from sklearn_safescreen.problems.kernels import KernelMatrix

    rng = np.random.RandomState(0)
    X = rng.standard_normal((300, 5))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(300) > 0, 1, 0)
    model = Estimator(kernel="rbf", gamma=0.2).fit(X, y if Estimator is SafeSVC else X[:, 1])
    X_test = rng.standard_normal((1000, 5))
    whole = np.asarray(model.predict(X_test) if Estimator is SafeLAD
                       else model.decision_function(X_test))
    blocks = []
    cross_block = KernelMatrix.cross_block

    def recording_cross_block(self, A):
        blocks.append(A.shape[0] * self.n_samples * 8)
        return cross_block(self, A)

    monkeypatch.setattr(KernelMatrix, "cross_block", recording_cross_block)
    budget_mb = 0.1
    with config_context(working_memory=budget_mb):
        parts = np.asarray(model.predict(X_test) if Estimator is SafeLAD
                           else model.decision_function(X_test))
    assert len(blocks) > 1 and max(blocks) * 2 <= budget_mb * 2**20
    assert np.allclose(parts, whole, rtol=1e-12, atol=1e-12)


# ------------------------------------------- defects found by scikit-learn's SVM tests ---
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_balanced_class_weight_with_integer_sample_weight_equals_repetition(kernel):
    """class_weight="balanced" weighs the classes by their total sample weight: integer
    weights fit the model of the samples repeated that many times (they were weighed
    by the counts of samples, ignoring sample_weight)."""
    X, y = make_binary(n=60, d=4, seed=5, offset=1.0)
    sw = np.random.RandomState(0).randint(0, 4, len(y))
    kw = {"kernel": kernel, "class_weight": "balanced", "tol": 1e-11}
    a = SafeSVC(**kw).fit(X, y, sample_weight=sw)
    b = SafeSVC(**kw).fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-8)


def test_balanced_class_weight_with_sample_weight_matches_linear_svc():
    """LinearSVC(loss="hinge") solves the same problem (its intercept is a regularised
    feature of value intercept_scaling too) with scikit-learn's balanced weights."""
    from sklearn.datasets import make_classification
    from sklearn.svm import LinearSVC

    X, y = make_classification(60, 4, weights=[0.7], random_state=0)
    sw = np.random.RandomState(1).uniform(0.0, 3.0, len(y))
    a = SafeSVC(kernel="linear", class_weight="balanced", tol=1e-12).fit(
        X, y, sample_weight=sw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # liblinear converged
        b = LinearSVC(loss="hinge", class_weight="balanced", tol=1e-12, max_iter=10**6,
                      random_state=0).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-8)


def test_balanced_class_weights_are_scikit_learns():
    from sklearn.utils import compute_class_weight

    from sklearn_safescreen._validation import class_weights

    y = np.array([0, 0, 0, 1, 2, 2, 1, 0])
    sw = np.array([1.0, 2.0, 0.5, 3.0, 1.0, 0.0, 0.25, 1.0])
    classes = np.arange(3)
    np.testing.assert_allclose(
        class_weights("balanced", classes, y, sw),
        compute_class_weight("balanced", classes=classes, y=y, sample_weight=sw))
    # a class of total weight 0 weighs nothing whatever its weight: 1, not inf (which
    # would make its samples' weights inf * 0 = NaN); the others are balanced as if it
    # were absent, as in the fit of the samples of positive weight
    sw0 = np.where(y == 1, 0.0, sw)
    cw = class_weights("balanced", classes, y, sw0)
    keep = y != 1
    ref = compute_class_weight("balanced", classes=np.array([0, 2]), y=y[keep],
                               sample_weight=sw0[keep])
    np.testing.assert_allclose(cw, [ref[0], 1.0, ref[1]])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("case", ["sample_weight", "class_weight"])
def test_positive_weights_on_one_class_only(kernel, case):
    """As SVC: a classifier needs samples of positive weight in two classes (it used to
    fit silently)."""
    X, y = make_multiclass(n=45, d=3, k=3, seed=2)
    for k in (2, 3):
        keep = y < k
        Xk, yk = X[keep], y[keep]
        fit_kw = ({"sample_weight": (yk == 1).astype(float)} if case == "sample_weight"
                  else {})
        cw = {c: 0.0 for c in range(k) if c != 1} if case == "class_weight" else None
        with pytest.raises(ValueError, match="all samples with positive weights belong "
                                             r"to the same class \(1\)"):
            SafeSVC(kernel=kernel, class_weight=cw).fit(Xk, yk, **fit_kw)
    # two classes of positive weight among three is a fit
    SafeSVC(kernel=kernel).fit(X, y, sample_weight=(y > 0).astype(float))


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_sparse_precomputed_kernel_is_refused_at_fit_and_predict(Estimator):
    """As SVC (a sparse kernel used to fail inside the kernel code with "setting an
    array element with a sequence")."""
    K = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        Estimator(kernel="precomputed").fit(sp.csr_matrix(K), [0, 1])
    model = Estimator(kernel="precomputed").fit(K, [0, 1])
    for fmt in (sp.csr_matrix, sp.csc_array):
        with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
            model.predict(fmt(K))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_max_iter_cut_returns_the_iterate_with_a_meaningful_gap(kernel):
    """A fit cut by max_iter returns the iterate reached, as SVC and LinearSVC, with a
    ConvergenceWarning whose relative gap is a figure of the objectives. A cold linear
    fit starts from the closed form at C_min seeded into the box of C, whose iterate
    after one epoch was replaced by w = 0 (coef_ = 0), with its gap relative to the
    dual objective of alpha = 0, i.e. to 1e-300 ("relative duality gap 1.5e+302")."""
    from sklearn.datasets import load_iris
    from sklearn.exceptions import ConvergenceWarning

    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="relative duality gap") as record:
        cut = SafeSVC(kernel=kernel, max_iter=1).fit(X, y)
    gaps = [float(re.search(r"relative duality gap (\S+) >", str(w.message)).group(1))
            for w in record if issubclass(w.category, ConvergenceWarning)]
    assert gaps and all(0.0 < g <= 2.0 for g in gaps)
    np.testing.assert_array_equal(cut.n_iter_, 1)
    assert np.all(np.abs(cut.dual_coef_).sum(axis=1) > 0)  # not w = 0
    assert np.ptp(cut.decision_function(X), axis=0).min() > 0
    full = SafeSVC(kernel=kernel).fit(X, y)
    assert not np.allclose(cut.decision_function(X), full.decision_function(X))


def test_a_callable_kernels_own_arrays_are_never_modified():
    """A callable kernel may return an array it keeps (a cache of its own): predictions
    add the bias to a copy, so repeated calls give the same scores."""
    from sklearn.datasets import make_classification

    X, y = make_classification(80, 4, random_state=0)
    kept = {}

    def kernel(A, B):
        return kept.setdefault((A.shape, B.shape), A @ B.T)

    model = SafeSVC(kernel=kernel, C=1.0).fit(X, y)
    first = model.decision_function(X[:10])
    np.testing.assert_array_equal(model.decision_function(X[:10]), first)
