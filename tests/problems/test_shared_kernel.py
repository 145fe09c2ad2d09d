"""Kernel rows shared by the folds of a search (problems/shared_kernel.py).

Oracle: the same fits without the store. Every value the store serves must be the
fold's own value bit for bit, so the kernels' blocks, the fold models and the search's
scores are compared with exact equality, not a tolerance. The store's counters say how
much it computed (each row of X at most once) and allocated (never beyond its bound).
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

import sklearn_safescreen.model_selection as model_selection
from sklearn_safescreen.lad import SafeLAD
from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.problems import kernels
from sklearn_safescreen.problems.kernels import KernelMatrix
from sklearn_safescreen.problems.shared_kernel import SharedKernelRows, fold_rows
from sklearn_safescreen.svm import SafeSVC

MB = 2**20


def _fold(n=240, d=6, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    train = np.sort(rng.choice(n, int(0.8 * n), replace=False))
    rng.shuffle(train)  # a fold's order need not be sorted
    return X, train


def _kernels(X, train, store, kernel, params, bias, cache_size):
    """The fold's kernel without and with the store (inside its serving context)."""
    Xf = np.ascontiguousarray(X[train])
    plain = KernelMatrix(Xf, kernel, params, bias, cache_size=cache_size)
    shared = fold_rows(Xf, kernel, params, bias)
    assert shared is not None
    return plain, KernelMatrix(Xf, kernel, params, bias, cache_size=cache_size,
                               shared=shared)


@pytest.mark.parametrize("kernel, params", [("rbf", {"gamma": 0.3}),
                                            ("poly", {"gamma": 0.5, "degree": 3,
                                                      "coef0": 1.0})])
@pytest.mark.parametrize("bias", [0.0, 1.0])
@pytest.mark.parametrize("cache_size", [0.0, 50.0])
def test_shared_values_are_the_folds_own_bit_for_bit(kernel, params, bias, cache_size):
    """Blocks, rows over a column set, products and the diagonal of a fold's kernel are
    the same arrays with and without the store, whether the rows come from the store,
    from the fold (store full) or both."""
    X, train = _fold()
    m = train.size
    rng = np.random.RandomState(3)
    # room for all the rows, for some of them, for none
    for max_mb in (50.0, 8 * 100 * X.shape[0] / MB + 0.05, 0.02):
        store = SharedKernelRows(X, max_mb)
        with store.serving(train):
            plain, shared = _kernels(X, train, store, kernel, params, bias, cache_size)
            every = np.arange(m)
            rows = rng.choice(m, 150, replace=False)
            cols = np.sort(rng.choice(m, 130, replace=False))
            np.testing.assert_array_equal(shared.block(rows, cols), plain.block(rows, cols))
            np.testing.assert_array_equal(shared.block(rows, every),
                                          plain.block(rows, every))
            np.testing.assert_array_equal(shared.rows_over(cols)(rows[:40]),
                                          plain.rows_over(cols)(rows[:40]))
            v = rng.randn(cols.size)
            np.testing.assert_array_equal(shared.matvec(every, cols, v),
                                          plain.matvec(every, cols, v))
            for a, b in zip(shared.dot2_matvec(cols, v), plain.dot2_matvec(cols, v),
                            strict=True):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(shared.diag(), plain.diag())
            assert shared.n_evaluations == plain.n_evaluations
        assert store.nbytes <= max_mb * MB
        if max_mb == 50.0:
            assert shared._shared.n_served > 0
            assert store.n_rows_computed <= X.shape[0]


def test_store_applies_only_to_the_folds_own_data():
    """No shared rows for other data (one bit of one entry differs, another row count,
    features, a sparse or float32 matrix), for the linear, precomputed or a callable
    kernel, or outside a serving context."""
    import scipy.sparse as sp

    X, train = _fold()
    store = SharedKernelRows(X, 50)
    Xf = np.ascontiguousarray(X[train])
    params = {"gamma": 0.3}
    assert fold_rows(Xf, "rbf", params, 1.0) is None  # not serving
    with store.serving(train):
        assert fold_rows(Xf, "rbf", params, 1.0) is not None
        nudged = Xf.copy()
        nudged[17, 2] = np.nextafter(nudged[17, 2], np.inf)
        assert fold_rows(nudged, "rbf", params, 1.0) is None
        negzero = Xf.copy()
        negzero[3, 1] = 0.0
        X2 = X.copy()
        X2[train[3], 1] = -0.0
        with SharedKernelRows(X2, 50).serving(train):
            assert fold_rows(negzero, "rbf", params, 1.0) is None  # bytes, not values
        assert fold_rows(Xf[:-1], "rbf", params, 1.0) is None
        assert fold_rows(Xf[:, :-1], "rbf", params, 1.0) is None
        assert fold_rows(sp.csr_matrix(Xf), "rbf", params, 1.0) is None
        assert fold_rows(Xf.astype(np.float32), "rbf", params, 1.0) is None
        for kernel in ("linear", "precomputed", lambda A, B: A @ B.T):
            assert fold_rows(Xf, kernel, params, 1.0) is None
    assert store.n_rows_computed == 0


def test_sparse_or_oversized_data_is_never_shared():
    """A sparse X, or one whose copies alone pass the bound, shares nothing."""
    import scipy.sparse as sp

    X, train = _fold()
    for store in (SharedKernelRows(sp.csr_matrix(X), 50),
                  SharedKernelRows(X, X.nbytes / MB / 2)):
        with store.serving(train):
            assert fold_rows(np.ascontiguousarray(X[train]), "rbf", {"gamma": 1.0},
                             0.0) is None
        assert store.nbytes == 0


def _walk(estimator, X, y, train, store, values):
    """A fold's warm-started walk (as RegularizationPathCV's) inside the store's
    serving context, or without it; the fitted attributes after each value."""
    est = clone(estimator).set_params(warm_start=True)
    models = []
    context = store.serving(train) if store is not None else _nothing()
    with context:
        for C in values:
            est.set_params(C=C).fit(X[train], y[train])
            models.append({k: np.copy(getattr(est, k)) for k in
                           ("dual_coef_", "support_", "dual_gap_", "n_iter_")})
    return models


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("make", [
    lambda: (SafeSVC(kernel="rbf", gamma=0.2), *make_classification(
        300, 8, n_informative=5, n_classes=3, random_state=0)),
    lambda: (SafeSVC(kernel="poly", gamma=0.1, degree=2, coef0=1.0), *make_classification(
        300, 8, random_state=1)),
    lambda: (SafeLAD(kernel="rbf", gamma="auto"), *make_regression(
        300, 8, noise=1.0, random_state=0)),
])
def test_fold_models_are_the_unshared_ones_bit_for_bit(make):
    """Every fold's model along its walk (one-vs-rest tasks on threads included) is the
    one of the walk without the store, bit for bit, and every row of X is computed at
    most once for all the folds."""
    estimator, X, y = make()
    values = [0.1, 1.0, 10.0]
    store = SharedKernelRows(X, 50)
    folds = [train for train, _ in StratifiedKFold(4).split(X, np.round(y) % 3)]
    for train in folds:
        plain = _walk(estimator, X, y, train, None, values)
        shared = _walk(estimator, X, y, train, store, values)
        for a, b in zip(plain, shared, strict=True):
            for key in a:
                np.testing.assert_array_equal(a[key], b[key])
    assert 0 < store.n_rows_computed <= X.shape[0]


def _search(monkeypatch, estimator, X, y, **kwargs):
    """The search and the store it made."""
    made = []

    class Spy(SharedKernelRows):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            made.append(self)

    monkeypatch.setattr(model_selection, "SharedKernelRows", Spy)
    search = RegularizationPathCV(estimator, n_values=6, cv=4, **kwargs).fit(X, y)
    search._X = X
    return search, made[0]


def _same_results(a, b):
    for key, value in a.cv_results_.items():
        if "time" in key:
            continue
        if key == "params":
            assert value == b.cv_results_[key]
        else:
            np.testing.assert_array_equal(value, b.cv_results_[key], err_msg=key)
    np.testing.assert_array_equal(a.screening_rates_, b.screening_rates_)
    np.testing.assert_array_equal(a.best_estimator_.decision_function(a._X),
                                  b.best_estimator_.decision_function(a._X))


@pytest.fixture(scope="module")
def data():
    return make_classification(400, 10, n_informative=6, random_state=0)


def test_search_shares_each_row_once_with_the_same_results(monkeypatch, data):
    """The shared search's cv_results_ (scores, ranks, screening rates) and refitted
    model are the unshared one's exactly; the store computed each row of X at most once,
    and the folds, the grid's fit and the refit computed no kernel value of their own."""
    X, y = data
    est = SafeSVC(kernel="rbf", gamma=0.05)
    plain, off = _search(monkeypatch, est, X, y, kernel_memory=0)
    computed = []
    block = kernels.symmetric_kernel_block

    def counting(A, a_sq, Bt, *args, **kwargs):
        computed.append(A.shape[0] * Bt.shape[1])
        return block(A, a_sq, Bt, *args, **kwargs)

    monkeypatch.setattr(kernels, "symmetric_kernel_block", counting)
    shared, store = _search(monkeypatch, est, X, y)
    n_computed = sum(computed)
    _same_results(plain, shared)
    # the grid's fit on the whole set, the folds, their scoring on the test folds and
    # the refit read every row from the store: none computed by a kernel of its own
    assert n_computed == 0
    assert off.n_rows_computed == 0 and off.nbytes == 0
    assert 0 < store.n_rows_computed <= X.shape[0]
    assert store.n_values_computed == store.n_rows_computed * X.shape[0]
    assert store.nbytes <= 1024 * MB


@pytest.mark.parametrize("rows_that_fit", [0, 150])
def test_memory_bound_is_respected_with_the_same_results(monkeypatch, data,
                                                         rows_that_fit):
    """With room for none or only some of the rows, the store stays within its bound,
    the folds compute the rest, and the results are those of the unshared search."""
    X, y = data
    est = SafeSVC(kernel="rbf", gamma=0.05)
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0)
    bound = (X.nbytes + 8 * X.shape[0] + 8 * rows_that_fit * X.shape[0]) / MB
    shared, store = _search(monkeypatch, est, X, y, kernel_memory=bound)
    _same_results(plain, shared)
    assert store.nbytes <= bound * MB
    assert store.n_rows_computed <= rows_that_fit
    assert store.n_fallbacks > 0
    if rows_that_fit:
        assert store.n_rows_computed > 0


def test_folds_on_threads_share_without_duplicated_rows(monkeypatch, data):
    """Folds walked on two threads give the sequential results and still compute each
    row at most once."""
    X, y = data
    est = SafeSVC(kernel="rbf", gamma=0.05)
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0)
    shared, store = _search(monkeypatch, est, X, y, n_jobs=2)
    _same_results(plain, shared)
    assert 0 < store.n_rows_computed <= X.shape[0]


def test_gamma_scale_shares_nothing(monkeypatch, data):
    """gamma="scale" is resolved from each fold's own data: nothing shared, the
    unshared results."""
    X, y = data
    est = SafeSVC(kernel="rbf", gamma="scale")
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0)
    shared, store = _search(monkeypatch, est, X, y)
    _same_results(plain, shared)
    assert store.n_rows_computed == 0 and store.nbytes == 0 and not store._tables


def test_pipeline_with_a_scaler_shares_nothing(monkeypatch, data):
    """A scaler fitted on each fold gives the SVC other data than X[train]: the store
    must not apply (it would serve the kernel of unscaled data), and the results are the
    unshared search's."""
    X, y = data
    X = X * np.linspace(1.0, 5.0, X.shape[1]) + 3.0  # the scaler changes every entry
    est = make_pipeline(StandardScaler(), SafeSVC(kernel="rbf", gamma=0.05))
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0)
    shared, store = _search(monkeypatch, est, X, y)
    _same_results(plain, shared)
    assert store.n_rows_computed == 0 and not store._tables
    # the control: a step that passes X[train] on unchanged lets the SVC share
    est = make_pipeline(FunctionTransformer(), SafeSVC(kernel="rbf", gamma=0.05))
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0)
    shared, store = _search(monkeypatch, est, X, y)
    _same_results(plain, shared)
    assert store.n_rows_computed > 0


def test_rows_computed_once_under_concurrent_requests():
    """Threads asking for overlapping rows at once: every row computed once (a row
    another thread is computing is waited for), and every thread gets the values."""
    X, train = _fold(n=400)
    store = SharedKernelRows(X, 50)
    params = {"gamma": 0.2}
    Xf = np.ascontiguousarray(X[train])
    expected = KernelMatrix(Xf, "rbf", params, 1.0).block(np.arange(train.size),
                                                          np.arange(train.size))
    results, errors = {}, []
    barrier = threading.Barrier(4)

    def work(k):
        try:
            with store.serving(train):
                km = KernelMatrix(Xf, "rbf", params, 1.0,
                                  shared=fold_rows(Xf, "rbf", params, 1.0))
                barrier.wait()
                order = np.random.RandomState(k).permutation(train.size)
                results[k] = (order, km.block(order, np.arange(train.size)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for order, block in results.values():
        np.testing.assert_array_equal(block, expected[order])
    assert store.n_rows_computed == train.size


def test_rows_of_kernels_no_fold_reads_make_room():
    """When the bound holds one kernel's rows, those of a kernel whose folds have
    finished are dropped for the next kernel's; a kernel still read keeps its rows."""
    X, train = _fold(n=200)
    Xf = np.ascontiguousarray(X[train])
    one_table = 8 * X.shape[0] * X.shape[0] + 8 * X.shape[0] + X.nbytes
    store = SharedKernelRows(X, (one_table + 1000) / MB)
    every = np.arange(train.size)
    with store.serving(train):
        km = KernelMatrix(Xf, "rbf", {"gamma": 0.1}, 0.0,
                          shared=fold_rows(Xf, "rbf", {"gamma": 0.1}, 0.0))
        km.block(every, every)
        with store.serving(train):  # another fold on the same thread, still reading
            other = KernelMatrix(Xf, "rbf", {"gamma": 0.2}, 0.0,
                                 shared=fold_rows(Xf, "rbf", {"gamma": 0.2}, 0.0))
            other.block(every, every)
            assert other._shared.n_served == 0  # no room: computed by the fold
    assert store.n_rows_computed == train.size
    with store.serving(train):  # the first kernel's folds are done: its rows dropped
        other = KernelMatrix(Xf, "rbf", {"gamma": 0.2}, 0.0,
                             shared=fold_rows(Xf, "rbf", {"gamma": 0.2}, 0.0))
        other.block(every, every)
        assert other._shared.n_served == every.size ** 2
    assert store.n_rows_computed == 2 * train.size
    assert store.nbytes <= one_table + 1000
    # after its context a kernel computes its own rows, and no longer holds the store's
    assert not km._shared.active
    assert km._shared.store is None and km._shared.table is None
    fresh = KernelMatrix(Xf, "rbf", {"gamma": 0.1}, 0.0)
    np.testing.assert_array_equal(km.block(every[:5], every), fresh.block(every[:5], every))


def test_a_pickled_store_is_disabled():
    """Another process gets a store that serves nothing (process backends)."""
    X, train = _fold()
    store = pickle.loads(pickle.dumps(SharedKernelRows(X, 50)))
    assert not store.enabled
    with store.serving(train):
        assert fold_rows(np.ascontiguousarray(X[train]), "rbf", {"gamma": 1.0}, 0.0) is None


def test_kernel_memory_is_validated(data):
    X, y = data
    with pytest.raises(InvalidParameterError, match="kernel_memory"):
        RegularizationPathCV(SafeSVC(), kernel_memory=-1).fit(X, y)


@pytest.mark.parametrize("rows_that_fit", [None, 0, 20])
@pytest.mark.parametrize("make", [
    lambda: SafeSVC(kernel="rbf", gamma=0.2, decision_function_shape="ovo"),
    lambda: SafeSVC(kernel="poly", gamma=0.1, degree=2, coef0=1.0, multi_class="ovr"),
])
def test_predictions_on_the_test_fold_read_the_store_bit_for_bit(make, rows_that_fit):
    """Within a fold's serving context given its test samples, a model fitted there
    reads its test samples' kernel values from the store's rows (computing the test
    rows the store has room for, the others itself) and its decision values are those
    of the same model outside the context, bit for bit; a model of other kernel
    parameters, or other test data, reads nothing from the store."""
    X, y = make_classification(300, 8, n_informative=5, n_classes=3, random_state=0)
    train, test = next(StratifiedKFold(4).split(X, y))
    X_test = X[test]
    bound = 50.0 if rows_that_fit is None else \
        (X.nbytes + 8 * X.shape[0] + 8 * rows_that_fit * X.shape[0]) / MB
    store = SharedKernelRows(X, bound)
    model = make()
    with store.serving(train, test):
        model.fit(X[train], y[train])
        before = store.n_rows_computed
        inside = model.decision_function(X_test)
        served = store.n_rows_computed - before
        other = clone(model).set_params(gamma=0.3).fit(X[train], y[train])
        assert other.decision_function(X_test + 0.0) is not None
        moved = X_test.copy()
        moved[0, 0] += 1.0
        before_moved = store.n_rows_computed
        inside_moved = model.decision_function(moved)
        assert store.n_rows_computed == before_moved  # not the store's X[test]
    outside = model.decision_function(X_test)
    np.testing.assert_array_equal(inside, outside)
    np.testing.assert_array_equal(inside_moved, model.decision_function(moved))
    expected = len(test) if rows_that_fit is None else 0
    # the test rows are whole rows of X: they were not computed by the fit
    assert served == expected or (rows_that_fit and 0 < served <= rows_that_fit)
    assert store.nbytes <= bound * MB


def test_prediction_rows_need_the_folds_own_kernel_and_test_samples():
    """No test indices, or no kernel of the fold reading the store: predictions compute
    their own values."""
    from sklearn_safescreen.problems.shared_kernel import prediction_rows

    X, y = make_classification(200, 6, random_state=0)
    train, test = next(StratifiedKFold(4).split(X, y))
    store = SharedKernelRows(X, 50)
    with store.serving(train):
        SafeSVC(kernel="rbf", gamma=0.2).fit(X[train], y[train])
        assert prediction_rows(X[test], "rbf", {"gamma": 0.2}, 1.0) is None
    with store.serving(train, test):
        assert prediction_rows(X[test], "rbf", {"gamma": 0.2}, 1.0) is None
        SafeSVC(kernel="rbf", gamma=0.2).fit(X[train], y[train])
        assert prediction_rows(X[test], "rbf", {"gamma": 0.2}, 1.0) is not None
        assert prediction_rows(X[test], "rbf", {"gamma": 0.3}, 1.0) is None
        assert prediction_rows(X[test], "rbf", {"gamma": 0.2}, 0.0) is None
        assert prediction_rows(X[train], "rbf", {"gamma": 0.2}, 1.0) is None


def test_folds_of_one_kernel_share_its_rows_under_a_tight_bound(monkeypatch, data):
    """A search over several gammas walks every fold of one gamma before the next
    gamma, so that a bound with room for one kernel's rows only still computes each
    row once per kernel (walked fold by fold through the gammas, the store dropped a
    kernel's rows for the next one's before the next fold came back to them); the
    results are the unshared search's."""
    X, y = data
    est = SafeSVC(kernel="rbf")
    grid = {"param_grid": {"gamma": [0.02, 0.05, 0.1]}}
    plain, _ = _search(monkeypatch, est, X, y, kernel_memory=0, **grid)
    n = X.shape[0]
    bound = (2 * X.nbytes + 8 * n + 8 * 1.5 * n * n) / MB  # one kernel's rows, not two
    shared, store = _search(monkeypatch, est, X, y, kernel_memory=bound, **grid)
    _same_results(plain, shared)
    assert store.nbytes <= bound * MB
    # each kernel's rows once for the folds (and the grid's fits on the whole set),
    # and the refit's once more: its kernel was dropped for the last gamma's (fold by
    # fold through the gammas: 5,200 rows here)
    assert 0 < store.n_rows_computed <= 4 * n
