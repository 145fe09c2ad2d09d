"""The exact path of the 1-norm SVM (``lp_svm_path``) against an independent solve of
the full linear program by HiGHS (``_lp_svm_models.solve_full``) at every breakpoint and
between breakpoints, on dense, sparse, weighted, rank-deficient, duplicated and tied
problems; against SafeLPSVC; its events, dual, read-off helper, basis updates and the
refactorisation that repairs a lost factor.

The larger ``make_classification`` shapes run with ``SKLEARN_SAFESCREEN_LARGE_TESTS=1``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import make_problem, solve_full, tied_problem
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

from sklearn_safescreen import PrecisionWarning, SafeLPSVC, lp_svm_path, lp_svm_path_at
from sklearn_safescreen import lp_svm_exact_path as path_module
from sklearn_safescreen.problems.lp_svm import LPSVMData, add_intercept_column
from sklearn_safescreen.solvers.lp_homotopy import LPHomotopy, PathFollower, make_core

#: Relative agreement of each breakpoint's objective with HiGHS's optimum.
RTOL = 1e-9

large = pytest.mark.skipif(not os.environ.get("SKLEARN_SAFESCREEN_LARGE_TESTS"),
                           reason="large path: set SKLEARN_SAFESCREEN_LARGE_TESTS=1")


def _labels(y):
    return np.where(y == np.unique(y)[1], 1.0, -1.0)


def _objective(Xa, yy, c, w, lam):
    m = yy * np.asarray(Xa @ w).ravel()
    return lam * np.abs(w).sum() + float(c @ np.maximum(1.0 - m, 0.0)) / len(yy)


def check_against_highs(X, y, sample_weight=None, intercept=False, stride=1,
                        midpoints=True, **kwargs):
    """Every ``stride``-th breakpoint, the midpoints after them and the path's last value:
    the path's objective equals HiGHS's optimum; returns the path."""
    path = lp_svm_path(X, y, fit_intercept=intercept, sample_weight=sample_weight,
                       **kwargs)
    alphas, coefs, intercepts, events = path
    yy = _labels(np.asarray(y))
    c = np.ones(len(yy)) if sample_weight is None else sample_weight / np.mean(
        sample_weight)
    Xa = add_intercept_column(X) if intercept else X
    assert np.all(np.diff(alphas) <= 0)
    assert events["gap"].max() <= RTOL
    picks = sorted(set(range(0, len(alphas), stride)) | {len(alphas) - 1})
    checked = 0
    for k in picks:
        w = coefs[:, k].toarray().ravel()
        if intercept:
            w = np.r_[w, intercepts[k]]
        values = [alphas[k]]
        if midpoints:
            # after the last breakpoint: towards the path's end (it stops at
            # eps * alpha_max, or earlier where its last vertex is optimal down to 0)
            end = kwargs.get("eps", 1e-3) * alphas[0]
            nxt = alphas[k + 1] if k + 1 < len(alphas) else max(0.5 * alphas[k], end)
            values.append(0.5 * (alphas[k] + nxt))
        for lam in values:
            opt = solve_full(Xa, yy, c, lam)
            mine = _objective(Xa, yy, c, w, lam)
            assert abs(mine - opt.value) <= RTOL * opt.value, (k, lam, mine, opt.value)
            checked += 1
    assert checked >= len(picks)
    return path


@pytest.mark.parametrize("seed", range(3))
def test_dense_path_is_exact_everywhere(seed):
    X, y, _ = make_problem(seed, n=40, d=25)
    alphas, *_ = check_against_highs(X, y)
    assert len(alphas) > 20


def test_weighted_path_with_intercept_is_exact():
    X, y, s = make_problem(11, n=50, d=20, weights=True)
    _, coefs, intercepts, _ = check_against_highs(X, y, sample_weight=s, intercept=True)
    assert np.any(intercepts != 0.0)


def test_sparse_path_matches_the_dense_one():
    X, y, _ = make_problem(12, n=50, d=30, sparse=True, density=0.3)
    a1, c1, i1, e1 = check_against_highs(X, y)
    a2, c2, i2, e2 = lp_svm_path(X.toarray(), y, fit_intercept=False)
    np.testing.assert_allclose(a1, a2, rtol=1e-10)
    assert abs(c1 - c2).max() <= 1e-9 * max(1.0, abs(c2).max())
    assert list(e1["enter_index"]) == list(e2["enter_index"])


def test_rank_deficient_features():
    """Duplicated columns and a column the sum of two others: ties among features."""
    X, y, _ = make_problem(13, n=40, d=15)
    X = np.hstack([X, X[:, :4], X[:, [0]] + X[:, [1]], -X[:, [2]]])
    check_against_highs(X, y)


def test_duplicated_samples():
    """Duplicated rows reach the margin together (a primal tie at every such event)."""
    X, y, _ = make_problem(14, n=25, d=15)
    X = np.vstack([X, X, X[:8]])
    y = np.r_[y, y, y[:8]]
    check_against_highs(X, y)


def test_tied_integer_data():
    """Entries in {-2..2}: many equal correlations and margins (ties on both sides)."""
    rng = np.random.RandomState(15)
    X = rng.randint(-2, 3, size=(45, 25)).astype(float)
    y = np.sign(X[:, 0] + X[:, 1] - X[:, 2] + rng.randn(45))
    y[y == 0] = 1
    check_against_highs(X, y, intercept=True)


@settings(max_examples=examples(40))
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 30), d=st.integers(1, 12),
       levels=st.integers(1, 3), dup=st.booleans(), intercept=st.booleans())
def test_random_degenerate_problems(seed, n, d, levels, dup, intercept):
    X, y = tied_problem(seed, n, d, levels, dup=dup)
    Xa = add_intercept_column(X) if intercept else X
    if not np.abs(Xa.T @ y).max() > 0:
        return  # w = 0 everywhere: no path (refused, tested below)
    check_against_highs(X, y, intercept=intercept, eps=1e-3)


@settings(max_examples=examples(30))
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 40), d=st.integers(1, 30),
       levels=st.integers(1, 2), density=st.floats(0.05, 0.6), dup=st.booleans())
def test_random_sparse_problems_with_the_sparse_factor(seed, n, d, levels, density, dup):
    """Sparse X (the sparse LU and its eta file, refactorised as it fills): exact at
    every breakpoint, also with ties, duplicated rows and columns and empty ones."""
    X, y = tied_problem(seed, n, d, levels, density, dup)
    if not np.abs(X.T @ y).max() > 0:
        return  # w = 0 everywhere: no path (refused, tested below)
    check_against_highs(sp.csr_matrix(X), y, eps=1e-3)


@pytest.mark.parametrize("redundant", [0, 2])
def test_make_classification_150_x_300(redundant):
    X, y = make_classification(150, 300, n_informative=20, n_redundant=redundant,
                               flip_y=0.05, random_state=0)
    alphas, *_ = check_against_highs(X, y, stride=60)
    assert len(alphas) > 300


@large
@pytest.mark.parametrize("shape", [(250, 500), (300, 600), (500, 1000), (500, 100),
                                   (1000, 200)])
@pytest.mark.parametrize("redundant", [0, 2])
def test_make_classification_larger(shape, redundant):
    X, y = make_classification(*shape, n_informative=20, n_redundant=redundant,
                               flip_y=0.05, random_state=0)
    alphas, *_ = lp_svm_path(X, y, fit_intercept=False, max_breakpoints=1)
    check_against_highs(X, y, stride=max(1, 4 * shape[0] // 20))


def test_same_problem_as_safelpsvc():
    """Same alpha scaling, weights, class weights and intercept convention: the path read
    at a few values has SafeLPSVC's objective, and alphas[0] is its alpha_max_."""
    X, y, s = make_problem(16, n=60, d=20, weights=True)
    y = np.where(y > 0, "b", "a")
    s[:3] = 0.0  # left out, as SafeLPSVC does
    kw = dict(sample_weight=s, class_weight={"a": 2.0}, intercept_scaling=2.0)
    alphas, coefs, intercepts, _ = lp_svm_path(X, y, eps=1e-2, **kw)
    values = alphas[0] * np.array([1.5, 0.7, 0.2, 0.05, 0.011])
    W, b = lp_svm_path_at(alphas, coefs, intercepts, values)
    keep = s > 0
    yy = _labels(y)[keep]
    c = s[keep] * np.where(yy < 0, 2.0, 1.0)
    c = c / c.mean()
    for j, alpha in enumerate(values):
        clf = SafeLPSVC(alpha=alpha, tol=1e-10, class_weight={"a": 2.0},
                        intercept_scaling=2.0).fit(X, y, sample_weight=s)
        if j == 0:
            assert clf.alpha_max_ == pytest.approx(alphas[0], rel=1e-12)
        w = W[:, j].toarray().ravel()
        mine = alpha * (np.abs(w).sum() + abs(b[j]) / 2.0) + float(c @ np.maximum(
            1.0 - yy * (X[keep] @ w + b[j]), 0.0)) / len(yy)
        ref = alpha * (np.abs(clf.coef_).sum() + abs(clf.intercept_[0]) / 2.0) + float(
            c @ np.maximum(1.0 - yy * (X[keep] @ clf.coef_.ravel()
                                       + clf.intercept_[0]), 0.0)) / len(yy)
        assert mine <= ref * (1 + 1e-8) and ref <= mine * (1 + 1e-8)
    assert W[:, 0].nnz == 0 and b[0] == 0.0  # above alpha_max


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_models_at_values_in_one_walk(sparse, n_classes):
    """lp_svm_models_at: at each value (unsorted, one above alpha_max) the model read off
    one path walk per task is the one lp_svm_path and fit_path give, certified on the
    full problem, with SafeLPSVC's objective."""
    X, y, s = make_problem(31, n=60, d=20, sparse=sparse, weights=True)
    if n_classes == 3:
        y = np.where(np.asarray(X[:, 3].todense() if sparse else X[:, 3]).ravel() > 0.5,
                     2.0, y)
    kw = dict(sample_weight=s, intercept_scaling=2.0)
    lam_max = SafeLPSVC(alpha=1.0, **{"intercept_scaling": 2.0}).fit(
        X, y, sample_weight=s).alpha_max_
    values = lam_max * np.array([0.05, 1.5, 0.3, 0.011, 0.3 * 0.999])
    models = path_module.lp_svm_models_at(X, y, values, **kw)
    n_tasks = 1 if n_classes == 2 else 3
    assert models["coef"].shape == (5, n_tasks, 20)
    assert models["dual_gap"].max() <= 1e-8
    assert not models["coef"][1].any() and not models["intercept"][1].any()
    for v, alpha in enumerate(values):
        est = SafeLPSVC(alpha=alpha, intercept_scaling=2.0)
        est.fit_path(X, y, sample_weight=s, eps=1e-3)
        np.testing.assert_allclose(models["coef"][v], est.coef_, atol=1e-10)
        np.testing.assert_allclose(models["intercept"][v], est.intercept_, atol=1e-10)
        np.testing.assert_allclose(models["dual_coef"][v], est.dual_coef_, atol=1e-10)
        ref = SafeLPSVC(alpha=alpha, tol=1e-10, intercept_scaling=2.0).fit(
            X, y, sample_weight=s)
        assert abs(ref.dual_gap_.max()) <= 1e-8
        if n_classes == 2:
            Xd = X.toarray() if sparse else X
            yy = _labels(y)
            c = s / s.mean()

            def objective(w, b, alpha=alpha, Xd=Xd, yy=yy, c=c):
                return alpha * (np.abs(w).sum() + abs(b) / 2.0) + float(
                    c @ np.maximum(1.0 - yy * (Xd @ w + b), 0.0)) / len(yy)

            mine = objective(models["coef"][v, 0], models["intercept"][v, 0])
            theirs = objective(ref.coef_.ravel(), ref.intercept_[0])
            assert abs(mine - theirs) <= 1e-8 * theirs
    with pytest.raises(ValueError, match="positive"):
        path_module.lp_svm_models_at(X, y, [0.1, -1.0])


def test_events_describe_the_support_changes():
    X, y, _ = make_problem(17, n=40, d=25)
    alphas, coefs, _, events = lp_svm_path(X, y, fit_intercept=False)
    data = LPSVMData(X, y)
    first = int(np.argmax(np.abs(data.correlations(data.s))))
    assert events["enter"][0] == "feature" and events["enter_index"][0] == first
    assert alphas[0] == pytest.approx(data.lambda_max(), rel=1e-14)
    prev = set()
    for k in range(len(alphas)):
        support = set(coefs[:, k].indices.tolist())
        ev = events[k]
        if ev["enter"] == "feature" and ev["leave"] != "feature":
            assert support - prev <= {ev["enter_index"]}
        if ev["leave"] == "feature":
            assert ev["leave_index"] not in support
        if ev["enter"] == "feature" and ev["enter_index"] in support:
            assert np.sign(coefs[ev["enter_index"], k]) == ev["sign"]
        prev = support


def test_dual_is_feasible_and_certifies_each_breakpoint():
    X, y, s = make_problem(18, n=40, d=20, weights=True)
    alphas, coefs, intercepts, events, dual = lp_svm_path(
        X, y, sample_weight=s, fit_intercept=True, return_dual=True)
    Xa = add_intercept_column(X)
    c = s / s.mean()
    n = len(y)
    for k in range(len(alphas)):
        a = y * dual[:, k]
        assert np.all(a >= -1e-12) and np.all(a <= c * (1 + 1e-12))
        corr = np.abs(Xa.T @ (y * a))
        assert corr.max() <= alphas[k] * n * (1 + 1e-9)
        w = np.r_[coefs[:, k].toarray().ravel(), intercepts[k]]
        primal = _objective(Xa, y, c, w, alphas[k])
        assert abs(primal - a.sum() / n) <= 1e-10 * primal


def test_read_off_is_certified_on_the_full_problem():
    """At values between breakpoints, the read-off solution and the interpolated dual
    have the full problem's certified gap (rounding bounds included) below 1e-9."""
    X, y, s = make_problem(27, n=50, d=30, weights=True, sparse=True)
    alphas, coefs, intercepts, events, dual = lp_svm_path(
        X, y, sample_weight=s, return_dual=True, eps=1e-2)
    rng = np.random.RandomState(0)
    values = np.r_[1.2 * alphas[0], alphas[[0, 5, -1]],
                   np.exp(rng.uniform(np.log(alphas[-1]), np.log(alphas[0]), 15))]
    W, b, A = lp_svm_path_at(alphas, coefs, intercepts, values, dual_coefs=dual)
    data = LPSVMData(add_intercept_column(X), y, s / s.mean())
    for j, lam in enumerate(values):
        w = np.r_[W[:, j].toarray().ravel(), b[j]]
        cert = data.certificate(lam, w, A[:, j])
        assert cert.rel_gap <= 1e-9, (lam, cert.rel_gap)
    with pytest.raises(ValueError, match="below it"):
        lp_svm_path_at(alphas, coefs, intercepts, [0.5 * alphas[-1]], dual_coefs=dual)


def test_read_off_is_piecewise_constant():
    X, y, _ = make_problem(19, n=30, d=15)
    alphas, coefs, intercepts, _ = lp_svm_path(X, y)
    W, b = lp_svm_path_at(alphas, coefs, intercepts,
                          [2 * alphas[0], alphas[3], 0.5 * (alphas[3] + alphas[4])])
    assert W[:, 0].nnz == 0
    assert abs(W[:, 1] - coefs[:, 3]).max() == 0.0
    assert abs(W[:, 2] - coefs[:, 3]).max() == 0.0
    assert b[2] == intercepts[3]


def test_stopping_rules():
    X, y, _ = make_problem(20, n=40, d=25)
    full, *_ = lp_svm_path(X, y, eps=1e-6)
    few, *_ = lp_svm_path(X, y, max_breakpoints=7)
    assert len(few) == 7 and np.array_equal(few, full[:7])
    some, *_ = lp_svm_path(X, y, alpha_min=full[10])
    assert some[-1] >= full[10] and len(some) <= 11


@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_core_makes_the_reference_pivots(sparse):
    X, y, _ = make_problem(26, n=60, d=40, sparse=sparse, intercept=True)
    fast = lp_svm_path(X, y, eps=1e-4)
    slow = lp_svm_path(X, y, eps=1e-4, compiled=False)
    np.testing.assert_allclose(fast[0], slow[0], rtol=1e-10)
    for field in ("enter", "enter_index", "sign", "leave", "leave_index"):
        assert list(fast[3][field]) == list(slow[3][field])
    assert abs(fast[1] - slow[1]).max() <= 1e-9 * abs(slow[1]).max()


@pytest.mark.parametrize("core_kind", ["numpy", "dense", "lu"])
@pytest.mark.parametrize("sparse", [False, True])
def test_basis_inverse_updates_match_a_fresh_factor(core_kind, sparse):
    """With no periodic refactorisation, the inverse kept by rank-one updates along a
    path (columns and rows replaced, added and removed), or the sparse factor of the
    first basis followed by every pivot's eta, equals the inverse of the margin
    matrix."""
    X, y, _ = make_problem(21, n=60, d=40, sparse=sparse)
    data = LPSVMData(X, y)
    if core_kind == "numpy":
        core = make_core(data, False)
    else:
        core = make_core(data, True, factor=core_kind)
        if core_kind == "lu":
            core.eta_fill = np.inf
    follower = PathFollower(core, data, refactor_every=10**9)
    sizes = []
    for point in follower.run(1e-4 * data.lambda_max(), max_breakpoints=150):
        sizes.append(len(point.support))
        if core_kind == "numpy":
            M = core._margin_matrix()
            error = np.abs(core.G @ M - np.eye(len(core.A))).max(initial=0.0)
        else:
            error = core.check_inverse()
        assert error < 1e-9
    assert max(sizes) > 10 and min(np.diff(sizes)) < 0 and follower.n_refactor == 0
    if core_kind == "lu":
        assert core.n_eta == len(sizes) and core.k0 == 0


def test_sparse_factor_refactorised_midway_matches_the_dense_inverse():
    """The sparse factor refactorised as its eta file fills (a factor of a support of
    many features, etas on top) makes the dense inverse's pivots."""
    X, y, _ = make_problem(29, n=80, d=60, sparse=True, density=0.2)
    data = LPSVMData(X, y)
    paths = {}
    for factor in ("dense", "lu"):
        core = make_core(data, True, factor=factor)
        follower = PathFollower(core, data)
        paths[factor] = [(p.lam, p.enter, p.enter_index, p.leave, p.leave_index)
                         for p in follower.run(1e-4 * data.lambda_max())]
        if factor == "lu":
            assert follower.n_refactor > 5 and follower.drift_events == 0
    assert [p[1:] for p in paths["dense"]] == [p[1:] for p in paths["lu"]]
    np.testing.assert_allclose([p[0] for p in paths["dense"]],
                               [p[0] for p in paths["lu"]], rtol=1e-10)


def test_factor_choice():
    """The sparse factor on dense X (converted, not densified the other way) makes the
    dense inverse's pivots; an unknown factor is refused."""
    X, y, _ = make_problem(30, n=40, d=25)
    data = LPSVMData(X, y)
    pivots = {}
    for factor in ("dense", "lu"):
        core = make_core(data, True, factor=factor)
        assert core.lu_mode == (factor == "lu")
        pivots[factor] = [(p.enter, p.enter_index, p.leave, p.leave_index)
                          for p in PathFollower(core, data).run(1e-3 * data.lambda_max())]
    assert pivots["dense"] == pivots["lu"] and len(pivots["lu"]) > 20
    with pytest.raises(ValueError, match="factor"):
        make_core(data, True, factor="qr")


class _Corrupting:
    """A core whose factor and primal values are corrupted after the 15th pivot."""

    def __init__(self, core, compiled):
        self.__dict__.update(core=core, compiled=compiled, calls=0)

    def __getattr__(self, name):
        return getattr(self.core, name)

    def __setattr__(self, name, value):
        setattr(self.core, name, value)

    def pivot(self, *args):
        out = self.core.pivot(*args)
        self.__dict__["calls"] += 1
        if self.calls == 15:
            G = self.core.G_arr if self.compiled else self.core.G
            t = self.core.t_arr if self.compiled else self.core.t
            G *= 1.0 + 1e-3
            t *= 1.0 + 1e-3
        return out


@pytest.mark.parametrize("compiled", [False, True])
def test_lost_factor_is_refactorised_and_reported(monkeypatch, compiled):
    """A factor corrupted mid-path: the breakpoint's gap check fails, the factor is
    rebuilt, a PrecisionWarning says so, and the path stays exact."""
    X, y, _ = make_problem(22, n=40, d=25)
    clean = lp_svm_path(X, y, fit_intercept=False)
    monkeypatch.setattr(path_module, "make_core",
                        lambda data, c: _Corrupting(make_core(data, compiled), compiled))
    with pytest.warns(PrecisionWarning, match="refactorised"):
        path = check_against_highs(X, y, midpoints=False)
    np.testing.assert_allclose(path[0], clean[0], rtol=1e-12)


def test_no_warning_on_a_clean_path():
    X, y, _ = make_problem(23, n=40, d=25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lp_svm_path(X, y)


def test_bad_input_is_refused():
    X, y, _ = make_problem(24, n=20, d=5)
    with pytest.raises(ValueError, match="two classes"):
        lp_svm_path(X, np.arange(20) % 3)
    with pytest.raises(ValueError, match="eps"):
        lp_svm_path(X, y, eps=1.5)
    with pytest.raises(ValueError, match="max_breakpoints"):
        lp_svm_path(X, y, max_breakpoints=0)
    with pytest.raises(ValueError, match="alpha_min"):
        lp_svm_path(X, y, alpha_min=0.0)
    with pytest.raises(ValueError, match="eps"):
        lp_svm_path(X, y, eps=0.0)
    with pytest.raises(ValueError, match="weights are zero|non-zero"):
        lp_svm_path(X, y, sample_weight=np.zeros(20))
    with pytest.raises(ValueError, match="no breakpoint"):
        lp_svm_path(np.zeros((4, 2)), [0, 1, 0, 1], fit_intercept=False)
    with pytest.raises(ValueError):
        lp_svm_path(X[:10], y)
    with pytest.raises(ValueError, match="positive sample weights"):
        LPHomotopy(LPSVMData(X, y, np.r_[0.0, np.ones(19)]))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_safelpsvc_fit_path_reads_the_model_off_the_path(n_classes):
    """fit_path: the model at alpha has SafeLPSVC's objective, a certified gap, the
    path's attributes are those of lp_svm_path, and predictions agree."""
    X, y = make_classification(80, 15, n_informative=5, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=0)
    alpha = 0.02
    fitted = SafeLPSVC(alpha=alpha, tol=1e-10).fit(X, y)
    on_path = SafeLPSVC(alpha=alpha).fit_path(X, y)
    assert on_path.dual_gap_.max() <= 1e-9
    assert on_path.alpha_max_ == pytest.approx(fitted.alpha_max_, rel=1e-12)
    assert np.array_equal(on_path.classes_, fitted.classes_)
    tasks = [np.where(y == fitted.classes_[1], 1.0, -1.0)] if n_classes == 2 else [
        np.where(y == k, 1.0, -1.0) for k in fitted.classes_]
    Xa = add_intercept_column(X)
    c = np.ones(len(y))
    for t, yy in enumerate(tasks):
        w1 = np.r_[on_path.coef_[t], on_path.intercept_[t]]
        w2 = np.r_[fitted.coef_[t], fitted.intercept_[t]]
        p1, p2 = _objective(Xa, yy, c, w1, alpha), _objective(Xa, yy, c, w2, alpha)
        assert abs(p1 - p2) <= 1e-8 * p2
    if n_classes == 2:
        alphas, coefs, intercepts, events = lp_svm_path(X, y)
        np.testing.assert_allclose(on_path.alphas_, alphas, rtol=1e-12)
        assert on_path.coef_path_.shape == coefs.shape
        assert list(on_path.path_events_["enter_index"]) == list(events["enter_index"])
    else:
        assert len(on_path.coef_path_) == 3
    assert np.mean(on_path.predict(X) == fitted.predict(X)) > 0.95
    with pytest.raises(ValueError, match="max_breakpoints"):
        SafeLPSVC(alpha=1e-3).fit_path(X, y, max_breakpoints=2)
