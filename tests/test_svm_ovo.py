"""SafeSVC's one-vs-one multiclass training, as SVC does it.

Oracles: each pair's problem is a binary SafeSVC fit on that pair's samples (its
exactness against cvxpy is tested in test_svm_exactness.py); the layout of the fitted
attributes, the vote and the decision-function shapes are SVC's own code path (libsvm's
prediction) run on SafeSVC's attributes; the accuracy is SVC's within one test sample
(the intercept is regularised, so the models differ slightly).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from _svm_models import full_beta, make_multiclass
from sklearn.base import clone
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.multiclass import _ovr_decision_function

from sklearn_safescreen import SafeSVC, fit_context

LOADERS = {"iris": load_iris, "wine": load_wine, "digits": load_digits}


def _standardised(name, seed=0):
    X, y = LOADERS[name](return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                          random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _pairs(k):
    return [(i, j) for i in range(k) for j in range(i + 1, k)]


def _svc_with(model, X, **params):
    """An SVC whose libsvm model is ``model``'s (support vectors, libsvm-layout
    dual_coef_, intercept_): SVC's own prediction code run on SafeSVC's attributes.
    SafeSVC's decision is K @ coef + intercept_ (the bias feature's s^2 sum(coef) is in
    intercept_), which is SVC's model with that intercept."""
    svc = SVC(kernel=model.kernel, gamma=model._kernel_params_.get("gamma", "scale"),
              **params).fit(X, model.classes_[np.arange(X.shape[0]) % model.classes_.size])
    sv = X[model.support_] if model.kernel == "linear" else model.support_vectors_
    svc.support_, svc.support_vectors_ = model.support_, sv
    svc._n_support = model.n_support_
    svc.dual_coef_ = svc._dual_coef_ = model.dual_coef_
    svc.intercept_ = svc._intercept_ = model.intercept_
    svc.classes_ = model.classes_
    return svc


# ------------------------------------------------------------------ against SVC ---
@pytest.mark.parametrize("name", ["iris", "wine", "digits"])
def test_accuracy_matches_svc(name):
    """The default (one-vs-one, rbf) scores as SVC within one test sample."""
    Xtr, Xte, ytr, yte = _standardised(name)
    ours = SafeSVC().fit(Xtr, ytr)
    svc = SVC().fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - svc.score(Xte, yte)) <= 1.0 / len(yte) + 1e-12
    assert ours.score(Xte, yte) > 0.9


@pytest.mark.parametrize("name", ["iris", "wine", "digits"])
def test_attribute_layout_is_svcs(name):
    Xtr, _, ytr, _ = _standardised(name)
    ours = SafeSVC().fit(Xtr, ytr)
    svc = SVC().fit(Xtr, ytr)
    k = svc.classes_.size
    for attr in ("dual_coef_", "intercept_", "n_support_", "support_", "support_vectors_"):
        a, b = getattr(ours, attr), getattr(svc, attr)
        assert a.ndim == b.ndim, attr
        assert a.shape[0] == b.shape[0] or attr in ("support_", "support_vectors_"), attr
    assert ours.dual_coef_.shape == (k - 1, ours.support_.size)
    assert ours.intercept_.shape == (k * (k - 1) // 2,)
    assert ours.n_support_.dtype == svc.n_support_.dtype
    assert ours.support_.dtype == svc.support_.dtype
    assert ours.n_iter_.shape == ours.dual_gap_.shape == (k * (k - 1) // 2,)
    # support vectors by class, by index within a class; most are SVC's
    by_class = np.lexsort((ours.support_, ytr[ours.support_]))
    np.testing.assert_array_equal(by_class, np.arange(ours.support_.size))
    np.testing.assert_array_equal(ours.n_support_, np.bincount(ytr[ours.support_],
                                                               minlength=k))
    shared = np.intersect1d(ours.support_, svc.support_).size
    assert shared >= 0.9 * svc.support_.size
    # the layout is libsvm's: SVC's own prediction on our attributes is our model
    Xq = np.vstack([Xtr, Xtr[:40] + np.random.RandomState(0).randn(40, Xtr.shape[1])])
    twin = _svc_with(ours, Xtr, decision_function_shape="ovo")
    ours.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(ours.decision_function(Xq), twin.decision_function(Xq),
                               atol=1e-10)
    np.testing.assert_array_equal(ours.predict(Xq), twin.predict(Xq))


def test_linear_coef_layout_is_svcs():
    Xtr, _, ytr, _ = _standardised("wine")
    ours = SafeSVC(kernel="linear", C=0.1).fit(Xtr, ytr)
    svc = SVC(kernel="linear", C=0.1).fit(Xtr, ytr)
    assert ours.coef_.shape == svc.coef_.shape == (3, Xtr.shape[1])
    # coef_ is SVC's product of the pairs' coefficients with the support vectors
    twin = _svc_with(ours, Xtr, decision_function_shape="ovo")
    np.testing.assert_allclose(ours.coef_, twin.coef_, atol=1e-10)
    ours.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(ours.decision_function(Xtr), twin.decision_function(Xtr),
                               atol=1e-10)


# ------------------------------------------------------------- pairs: the oracle ---
@pytest.mark.parametrize("kernel", ["rbf", "linear", "precomputed"])
def test_each_pair_is_the_binary_fit_on_its_samples(kernel):
    """Pair (i, j) of a one-vs-one fit is the binary SafeSVC fit on the samples of
    classes i and j, class i positive (a binary SafeSVC scores the second class, j):
    same dual coefficients, intercept and decision values. Sample and class weights
    apply within each pair as in the binary fit."""
    X, y = make_multiclass(n=120, d=3, k=4, seed=3, spread=1.5)
    labels = np.array(["a", "b", "c", "d"])[y]
    sw = np.random.RandomState(1).uniform(0.5, 2.0, y.size)
    cw = {"a": 1.0, "b": 2.0, "c": 0.5, "d": 1.5}
    Xt, _ = make_multiclass(n=30, d=3, k=4, seed=4, spread=1.5)
    fit_in, test_in = X, Xt
    if kernel == "precomputed":
        fit_in, test_in = X @ X.T + 1.0, Xt @ X.T + 1.0
    params = dict(kernel=kernel, C=2.0, gamma=0.3, tol=1e-10, class_weight=cw)
    model = SafeSVC(decision_function_shape="ovo", **params).fit(fit_in, labels,
                                                                 sample_weight=sw)
    dec = model.decision_function(test_in)
    assert dec.shape == (len(Xt), 6)
    for p, (i, j) in enumerate(_pairs(4)):
        idx = np.flatnonzero((y == i) | (y == j))
        sub_fit = fit_in[idx][:, idx] if kernel == "precomputed" else fit_in[idx]
        sub_test = test_in[:, idx] if kernel == "precomputed" else test_in
        pair_weights = {labels[i]: cw[labels[i]], labels[j]: cw[labels[j]]}
        binary = SafeSVC(**{**params, "class_weight": pair_weights}).fit(
            sub_fit, labels[idx], sample_weight=sw[idx])
        np.testing.assert_array_equal(binary.classes_, labels[[i, j]])
        beta = np.zeros(idx.size)
        beta[binary.support_] = binary.dual_coef_[0]
        np.testing.assert_allclose(full_beta(model, p, y.size, y)[idx], -beta,
                                   atol=1e-6)
        assert np.all(full_beta(model, p, y.size, y)[~np.isin(np.arange(y.size), idx)]
                      == 0)
        np.testing.assert_allclose(model.intercept_[p], -binary.intercept_[0], atol=1e-6)
        np.testing.assert_allclose(dec[:, p], -binary.decision_function(sub_test),
                                   atol=1e-6)
    assert set(model.predict(test_in)) <= set(labels)


# -------------------------------------------------- decision shapes, ties, votes ---
@pytest.mark.parametrize("shape", ["ovo", "ovr"])
@pytest.mark.parametrize("break_ties", [False, True])
def test_decision_function_shape_and_break_ties_as_svc(shape, break_ties):
    """Every combination behaves as SVC's code path on the same model: the "ovr"
    shape is sklearn's transform of the pairs' values, predict is libsvm's vote (ties
    to the first class) unless break_ties with the "ovr" shape, and break_ties with
    the "ovo" shape is refused at predict time, as SVC."""
    X, y = make_multiclass(n=120, d=2, k=4, seed=6, spread=2.5)
    model = SafeSVC(C=0.5, gamma=0.5).fit(X, y)
    # far and central points, where the pairs' votes tie
    Xq = np.vstack([X, 6.0 * np.random.RandomState(2).randn(300, 2),
                    np.random.RandomState(3).randn(300, 2) * 0.3 + X.mean(axis=0)])
    model.set_params(decision_function_shape="ovo")
    pair_dec = model.decision_function(Xq)
    votes = _ovr_decision_function(pair_dec < 0, -pair_dec, 4).round()
    assert np.any((votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1), \
        "no tied votes: the tie rule is not exercised"
    model.set_params(decision_function_shape=shape, break_ties=break_ties)
    twin = _svc_with(model, X, decision_function_shape=shape, break_ties=break_ties)
    np.testing.assert_allclose(model.decision_function(Xq), twin.decision_function(Xq),
                               atol=1e-10)
    if break_ties and shape == "ovo":
        with pytest.raises(ValueError, match="break_ties must be False"):
            model.predict(Xq)
        with pytest.raises(ValueError, match="break_ties must be False"):
            twin.predict(Xq)
        return
    np.testing.assert_array_equal(model.predict(Xq), twin.predict(Xq))
    if shape == "ovr":
        assert model.decision_function(Xq).shape == (len(Xq), 4)
        np.testing.assert_allclose(model.decision_function(Xq),
                                   _ovr_decision_function(pair_dec < 0, -pair_dec, 4))
    if break_ties and shape == "ovr":  # the tie-broken prediction differs somewhere
        plain = clone(model).set_params(break_ties=False).fit(X, y)
        assert np.any(plain.predict(Xq) != model.predict(Xq))


def test_binary_unchanged_by_the_scheme():
    X, y = make_multiclass(n=80, d=3, k=2, seed=9)
    a = SafeSVC(multi_class="ovo", decision_function_shape="ovo").fit(X, y)
    b = SafeSVC(multi_class="ovr").fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.decision_function(X).shape == (80,)
    assert a.intercept_.shape == (1,) and a.n_iter_.shape == (1,)


def test_ovr_training_stays_available():
    X, y = make_multiclass(n=90, d=3, k=3, seed=10)
    m = SafeSVC(multi_class="ovr").fit(X, y)
    assert m.dual_coef_.shape == (3, m.support_.size) and m.intercept_.shape == (3,)
    np.testing.assert_array_equal(m.predict(X), m.classes_[m.decision_function(X).argmax(1)])
    with pytest.raises(ValueError, match="needs multi_class='ovo'"):
        SafeSVC(multi_class="ovr", decision_function_shape="ovo").fit(X, y)
    with pytest.raises(ValueError, match="fitted with multi_class='ovo'"):
        m.set_params(decision_function_shape="ovo").decision_function(X)
    with pytest.raises(ValueError, match="multi_class"):
        SafeSVC(multi_class="crammer").fit(X, y)


# ------------------------------------------------------------------- screening ---
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_screening_is_safe_per_pair(kernel):
    """Along a warm-started path in both directions, the screened fits (every step
    screening) give the unscreened model, pair by pair."""
    X, y = make_multiclass(n=150, d=3, k=4, seed=12, spread=1.5)
    screened = SafeSVC(kernel=kernel, gamma=0.5, tol=1e-9, warm_start=True,
                       decision_function_shape="ovo")
    plain = clone(screened).set_params(screening=None, warm_start=False)
    n_screened = 0
    with fit_context(screened, screening="always"):
        for C in [0.05, 0.06, 0.5, 0.55, 5.0, 5.5, 1.0, 0.9]:
            screened.set_params(C=C).fit(X, y)
            plain.set_params(C=C).fit(X, y)
            n_screened += sum(e.n_lower + e.n_upper
                              for e in screened.screening_report_.events
                              if e.moment == "reference")
            assert not any(e.moment == "repair" for e in screened.screening_report_.events)
            for p in range(6):
                np.testing.assert_allclose(full_beta(screened, p, y.size, y),
                                           full_beta(plain, p, y.size, y), atol=1e-5)
            np.testing.assert_allclose(screened.decision_function(X),
                                       plain.decision_function(X), atol=1e-5)
    assert n_screened > 0, "nothing was screened: the test would not see a wrong rule"


def test_warm_path_and_eps_path_over_all_pairs():
    from sklearn_safescreen.path import estimator_path

    X, y = make_multiclass(n=120, d=3, k=3, seed=13)
    Cs = [0.1, 1.0, 10.0]
    warm = SafeSVC(warm_start=True, tol=1e-8)
    for C in Cs:
        warm.set_params(C=C).fit(X, y)
        cold = SafeSVC(C=C, tol=1e-8).fit(X, y)
        np.testing.assert_allclose(warm.decision_function(X), cold.decision_function(X),
                                   atol=1e-5)
    path = estimator_path(SafeSVC(tol=1e-6), X, y, values=Cs)
    np.testing.assert_allclose(path.values, Cs)
    eps = estimator_path(SafeSVC(kernel="linear"), X, y, values="eps-path", stop=10.0)
    assert len(eps.values) > 2 and np.all(np.diff(eps.values) > 0)
    # the eps-path's next C comes from every pair: it stops only when no pair has a
    # sample at its upper bound
    m = SafeSVC(C=0.5, warm_start=True).fit(X, y)
    nxt = m._eps_path_next(0.1, 100.0)
    assert nxt is not None and 0.5 < nxt <= 100.0


# ------------------------------------------------------------- model plumbing ---
def test_pickle_n_jobs_and_strings():
    X, y = make_multiclass(n=120, d=3, k=4, seed=14)
    labels = np.array(["w", "x", "y", "z"])[y]
    m1 = SafeSVC(n_jobs=1).fit(X, labels)
    m2 = SafeSVC(n_jobs=2).fit(X, labels)
    np.testing.assert_array_equal(m1.dual_coef_, m2.dual_coef_)
    np.testing.assert_array_equal(m1.predict(X), m2.predict(X))
    restored = pickle.loads(pickle.dumps(m1))
    np.testing.assert_array_equal(restored.decision_function(X), m1.decision_function(X))
    np.testing.assert_array_equal(restored.predict(X), m1.predict(X))
    assert not hasattr(restored, "_path")
    # the model pickles to its support vectors and coefficients, as SVC's
    svc_size = len(pickle.dumps(SVC().fit(X, labels)))
    assert len(pickle.dumps(m1)) < 2 * svc_size + 2000


def test_kernel_intercept_is_the_decision_at_a_zero_kernel_row():
    """intercept_ is the part of the decision not carried by the kernel: with a
    precomputed kernel, a test row of zeros scores exactly intercept_."""
    X, y = make_multiclass(n=90, d=3, k=3, seed=15)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    for mc in ("ovo", "ovr"):
        m = SafeSVC(kernel="precomputed", intercept_scaling=2.0, multi_class=mc,
                    decision_function_shape=mc).fit(K, y)
        np.testing.assert_allclose(m.decision_function(np.zeros((1, 90)))[0],
                                   m.intercept_, atol=1e-12)
        assert np.any(m.intercept_ != 0)
        m0 = SafeSVC(kernel="precomputed", fit_intercept=False, multi_class=mc).fit(K, y)
        np.testing.assert_array_equal(m0.intercept_, 0.0)


def test_screening_report_merges_the_pairs():
    """The report has every pair's events (named by the pair's classes) and counts
    each pair's samples: a sample is a variable of the n_classes - 1 pairs of its
    class."""
    X, y = make_multiclass(n=90, d=3, k=3, seed=16)
    names = np.array(["ant", "bee", "cat"])
    model = SafeSVC(kernel="linear", C=10.0).fit(X, names[y])
    report = model.screening_report_
    assert {e.task for e in report.events} == {"ant vs bee", "ant vs cat", "bee vs cat"}
    assert report.n_variables == 2 * len(y)
