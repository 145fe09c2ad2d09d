"""Per-fit work of the estimators' skeleton that is done once instead of at every fit
or task: the tasks' seeds, the job dispatch, the step's refusal checks. Each must give
the models the repeated work gave, bit for bit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_config
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import SafeSVC
from sklearn_safescreen import base as base_module
from sklearn_safescreen._multiclass import class_pairs, libsvm_layout
from sklearn_safescreen._validation import EPS, Resolvability, check_resolvable
from sklearn_safescreen.base import _with_seed
from sklearn_safescreen.engine.doubly_sparse import DoublySparseSettings
from sklearn_safescreen.engine.lp_svm_exact import LPStepSettings
from sklearn_safescreen.engine.protocol import StepSettings
from sklearn_safescreen.problems.kernels import design_matrix

ATTRS = ("dual_coef_", "intercept_", "support_", "n_support_", "n_iter_")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _same_model(a, b):
    for name in ATTRS:
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize("random_state", [None, 0, 7, 2**32 - 1])
@pytest.mark.parametrize("n", [1, 2, 3, 45])
def test_integer_seeds_are_the_generators_first_draws(random_state, n):
    est = SafeSVC(random_state=random_state)
    seed = 0 if random_state is None else random_state
    expected = (np.array([seed]) if n == 1 else
                np.random.RandomState(seed).randint(np.iinfo(np.int32).max, size=n))
    for _ in range(2):  # the memo answers the second time
        seeds = est._seeds(n)
        assert seeds.tolist() == expected.tolist()
    seeds[0] += 1  # a caller's change does not reach the next fit
    assert est._seeds(n).tolist() == expected.tolist()


def test_a_generator_random_state_still_advances_at_every_fit():
    rs = np.random.RandomState(3)
    est = SafeSVC(random_state=rs)
    first, second = est._seeds(3), est._seeds(3)
    reference = np.random.RandomState(3)
    assert first.tolist() == reference.randint(np.iinfo(np.int32).max, size=3).tolist()
    assert second.tolist() == reference.randint(np.iinfo(np.int32).max, size=3).tolist()


def _count_pools(monkeypatch):
    calls = []
    real = base_module.Parallel

    def counting(*args, **kwargs):
        calls.append(kwargs.get("n_jobs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(base_module, "Parallel", counting)
    return calls


def test_one_worker_runs_the_pairs_in_this_thread_with_the_same_model(iris,
                                                                       monkeypatch):
    X, y = iris
    calls = _count_pools(monkeypatch)
    sequential = SafeSVC(C=3.0, decision_function_shape="ovo").fit(X, y)
    assert calls == []
    pooled = SafeSVC(C=3.0, decision_function_shape="ovo", n_jobs=2).fit(X, y)
    assert calls == [2]
    _same_model(sequential, pooled)
    with parallel_config(n_jobs=2):
        configured = SafeSVC(C=3.0, decision_function_shape="ovo").fit(X, y)
    assert calls == [2, None]  # the user's joblib configuration still gets its pool
    _same_model(sequential, configured)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_a_warm_path_still_refuses_an_unresolvable_C_with_the_pairs_figure(iris,
                                                                         kernel):
    """The refusal's C-free factors are read once per set of paths: a warm-started fit
    at a C too large for float64 is refused as a cold one is, with the same message,
    and the paths' next fit at a resolvable C is unchanged."""
    X, y = iris
    with pytest.raises(ValueError) as cold:
        SafeSVC(C=1e300, kernel=kernel, decision_function_shape="ovo").fit(X, y)
    est = SafeSVC(C=1.0, kernel=kernel, decision_function_shape="ovo", warm_start=True)
    est.fit(X, y)
    assert "resolvable" in est._path.memo
    with pytest.raises(ValueError) as warm:
        est.set_params(C=1e300).fit(X, y)
    assert str(warm.value) == str(cold.value)
    assert "exceeds 1/eps^2" in str(warm.value)
    est.set_params(C=2.0).fit(X, y)
    unrefused = SafeSVC(C=1.0, kernel=kernel, decision_function_shape="ovo",
                        warm_start=True).fit(X, y)
    _same_model(est, unrefused.set_params(C=2.0).fit(X, y))


def _layout_pair_by_pair(coef, y_ind, n_classes):
    """libsvm's layout written pair by pair, as its description reads."""
    nonzero = (coef != 0).any(axis=0)
    blocks = [np.flatnonzero(nonzero & (y_ind == c)) for c in range(n_classes)]
    support = np.concatenate(blocks).astype(np.int32)
    n_support = np.array([b.size for b in blocks], dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum(n_support)])
    dual = np.zeros((n_classes - 1, support.size))
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        dual[j - 1, starts[i]:starts[i + 1]] = coef[p, blocks[i]]
        dual[i, starts[j]:starts[j + 1]] = coef[p, blocks[j]]
    return support, n_support, dual


@pytest.mark.parametrize("n_classes", [3, 4, 7])
@pytest.mark.parametrize("n_samples", [0, 6, 200])
def test_the_gathered_libsvm_layout_is_the_pair_by_pair_one(n_classes, n_samples):
    rng = np.random.RandomState(n_classes * 1000 + n_samples)
    y_ind = rng.randint(n_classes, size=n_samples)
    coef = rng.randn(n_classes * (n_classes - 1) // 2, n_samples)
    coef *= rng.rand(*coef.shape) < 0.3
    coef[:, :3] *= -0.0  # signed zeros are copied as they are
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        coef[p, (y_ind != i) & (y_ind != j)] = 0.0
    for got, expected in zip(libsvm_layout(coef, y_ind, n_classes),
                             _layout_pair_by_pair(coef, y_ind, n_classes), strict=True):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()


def test_a_warm_path_resolves_gamma_again_when_the_data_or_gamma_change(iris):
    """The resolved kernel parameters are remembered with the data's digest and the
    kernel's parameters: an in-place change of X, other sample weights or another
    gamma give the parameters a cold fit gives."""
    X, y = iris
    X = X.copy()

    def cold_gamma():
        return SafeSVC().fit(X, y)._kernel_params_

    est = SafeSVC(C=1.0, warm_start=True).fit(X, y)
    first = est._kernel_params_
    assert est.fit(X, y)._kernel_params_ == first  # remembered
    assert "_kernel_memo" in est.__dict__
    X *= 3.0  # the same object, other content
    assert est.fit(X, y)._kernel_params_ == cold_gamma() != first
    sw = np.linspace(0.5, 2.0, y.size)
    assert (est.fit(X, y, sample_weight=sw)._kernel_params_
            == SafeSVC().fit(X, y, sample_weight=sw)._kernel_params_
            != cold_gamma())
    est.set_params(gamma="auto")
    assert est.fit(X, y)._kernel_params_ == {"gamma": 1.0 / X.shape[1]}
    est.set_params(kernel="poly", gamma=0.5, degree=2, coef0=1.0)
    assert est.fit(X, y)._kernel_params_ == {"gamma": 0.5, "degree": 2, "coef0": 1.0}
    est.set_params(degree=3)
    assert est.fit(X, y)._kernel_params_["degree"] == 3
    est.set_params(warm_start=False).fit(X, y)
    assert "_kernel_memo" not in est.__dict__  # no warm start, no state kept


def _refusal(check):
    try:
        check()
    except ValueError as exc:
        return str(exc)
    return None


def test_the_tasks_refusal_at_once_is_check_resolvable_task_by_task():
    """Resolvability refuses the C values check_resolvable refuses on some task, with
    the message of the first such task, at the boundary too."""
    rng = np.random.RandomState(0)
    tasks = [(rng.rand(20) * s, rng.rand(20) * t, hinge)
             for s, t, hinge in [(1.0, 1.0, True), (3.0, 1e-3, False), (0.0, 1.0, False),
                                 (1.0, 0.0, True), (1e5, 7.0, False), (2.0, 5.0, True)]]
    checks = Resolvability.of(tasks)
    limits = [1.0 / EPS**2 if h else 1.0 / EPS for _, _, h in tasks]
    boundary = [lim / (np.sum(w) * np.max(q)) for (w, q, _), lim in zip(tasks, limits,
                                                                       strict=True)
                if np.sum(w) > 0 and np.max(q) > 0]
    Cs = [1.0, 1e10, 1e20, 1e300, np.inf]
    Cs += [b * f for b in boundary for f in (1 - 1e-15, 1.0, 1 + 1e-15, 1 - 1e-9, 1 + 1e-9)]
    refused = 0
    for C in Cs:
        def one_by_one(C=C):
            for w, q, h in tasks:
                check_resolvable("SafeSVC(C=x)", C, w, q, hinge=h)
        expected = _refusal(one_by_one)
        assert _refusal(lambda C=C: checks.check("SafeSVC(C=x)", C)) == expected, C
        refused += expected is not None
    assert 0 < refused < len(Cs)


@pytest.mark.parametrize("settings", [
    StepSettings(rule="gap", tol=1e-4, max_iter=50, describe="SafeSVC(C=1)", seed=3),
    DoublySparseSettings(rule=None, tol=1e-6, max_iter=7, beta=0.5, mode="never"),
    LPStepSettings(rule="gap", tol=1e-5, max_iter=9, solver="homotopy"),
], ids=lambda s: type(s).__name__)
def test_a_tasks_settings_are_the_replaced_settings(settings):
    before = replace(settings)
    copy = _with_seed(settings, 12345)
    assert type(copy) is type(settings)
    assert copy == replace(settings, seed=12345)
    assert copy.seed == 12345 and copy is not settings
    assert settings == before  # the fit's settings are left as they were


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_pairs_linear_design_matrices_are_their_rows_own(iris, fit_intercept,
                                                              sparse):
    """A dense linear kernel's pairs take their rows of the design matrix built once:
    the same matrices, bit for bit and in the same layout, as each pair's rows with
    the bias column appended."""
    X, y = iris
    X = sp.csr_matrix(X) if sparse else X
    est = SafeSVC(kernel="linear", decision_function_shape="ovo", warm_start=True,
                  fit_intercept=fit_intercept, intercept_scaling=1.7).fit(X, y)
    for path, idx in zip(est._path.paths, est._path.extra, strict=True):
        expected, _ = design_matrix(X[idx], "linear", {}, est._bias, screening=None,
                                    cache_size=200)
        got = path.data.X
        assert type(got) is type(expected) and got.shape == expected.shape
        if sparse:
            assert (got != expected).nnz == 0
        else:
            assert got.flags.c_contiguous and expected.flags.c_contiguous
            assert got.tobytes() == expected.tobytes()
