"""SafeMetricLearner: exactness against the unscreened solve and cvxpy, the
closed form above lambda_L, paths with warm starts, every bound/rule, the scikit-learn
API (check_estimator, Pipeline with k-NN, GridSearchCV, clone, pickle), bad input and
the screening report."""

from __future__ import annotations

import pickle

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen._utils import memory
from sklearn_safescreen.engine.triplet_settings import TripletOptions
from sklearn_safescreen.metric_learning import BOUNDS, SafeMetricLearner
from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems import triplets as _triplets
from sklearn_safescreen.solvers import psd_gradient as pg


def scaled(loader, every=1):
    X, y = loader(return_X_y=True)
    X = MinMaxScaler((-1, 1)).fit_transform(X)
    return X[::every], y[::every]


def fitted_triplets(ml, X, y):
    """The (i, j, l) triplets a fit with ``k=ml.k_`` used (built again: deterministic)."""
    return _triplets.build_triplets(X, np.unique(y, return_inverse=True)[1],
                                    ml.k_).indices()


def objective(ml, X, y, gamma=0.05):
    """Full primal objective of the fitted metric, computed from explicit triplets."""
    T = fitted_triplets(ml, X, y)
    A, B = X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]
    M = ml.metric_
    z = np.einsum("ij,jk,ik->i", A, M, A) - np.einsum("ij,jk,ik->i", B, M, B)
    return tp.loss_values(z, gamma).sum() + ml.alpha / 2 * np.sum(M * M)


def dgb_tol(ml):
    """sqrt(2 gap / lambda): the distance of the returned metric to the optimum."""
    return np.sqrt(2 * ml.dual_gap_ / ml.alpha)


# (the hinge's dual solver needs many iterations far below the critical value, about
# 1e5 on these data: alpha=100 keeps the second instance's checks quick)
@parametrize_with_checks([SafeMetricLearner(),
                          SafeMetricLearner(alpha=100.0, metric="diagonal", loss="hinge")])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_equals_cvxpy_on_a_small_problem():
    X, y = scaled(load_iris, every=5)
    ml = SafeMetricLearner(k=3, tol=1e-10)
    lam = 0.05 * ml._critical_value(X, y)
    ml.set_params(alpha=lam).fit(X, y)
    T = fitted_triplets(ml, X, y)
    A, B = X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]
    M = cp.Variable((4, 4), PSD=True)
    z = cp.sum(cp.multiply(A @ M, A), axis=1) - cp.sum(cp.multiply(B @ M, B), axis=1)
    obj = cp.sum(cp.huber(cp.pos(1 - z), 0.05)) / 0.1 + lam / 2 * cp.sum_squares(M)
    # the mean instead of the sum: better scaled for the interior-point method
    prob = cp.Problem(cp.Minimize(obj / len(T)))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal"
    assert np.linalg.norm(ml.metric_ - M.value) <= 1e-5 * np.linalg.norm(M.value)
    assert objective(ml, X, y) <= prob.value * len(T) * (1 + 1e-8)
    assert ml.screening_report_.n_screened > 0


def test_closed_form_above_the_critical_value():
    X, y = scaled(load_wine, every=2)
    ml = SafeMetricLearner(k=4)
    lam_L = ml._critical_value(X, y)
    ts = _triplets.build_triplets(X, np.unique(y, return_inverse=True)[1], 4)
    G = tp.sum_h(ts, np.ones(ts.n_triplets), False)
    G_pos = tp.project(G, False)
    assert lam_L == pytest.approx(
        (tp.triplet_values(ts, G_pos, False).max()) / 0.95, rel=1e-12)
    for lam in [lam_L, 3 * lam_L]:
        ml.set_params(alpha=lam).fit(X, y)
        assert np.allclose(ml.metric_, G_pos / lam, rtol=1e-12, atol=1e-15)
        assert ml.n_iter_ == 0 and ml.dual_gap_ == 0.0
        assert ml.screening_report_.events[0].moment == "closed_form"
    # a huge alpha: the closed form, tiny but exact, and its factor L (the eigensolver
    # scales entries whose squares would underflow)
    for lam in [1e200, 1e300]:
        ml.set_params(alpha=lam).fit(X, y)
        np.testing.assert_allclose(ml.metric_ * lam, G_pos, rtol=1e-12, atol=1e-15)
        L = ml.components_ * np.sqrt(lam)
        np.testing.assert_allclose(L.T @ L, G_pos, rtol=1e-9, atol=1e-12)
    # just below: a solve, and the answer differs from the closed form
    ml.set_params(alpha=0.5 * lam_L, tol=1e-9).fit(X, y)
    assert ml.n_iter_ > 0
    assert not np.allclose(ml.metric_, G_pos / (0.5 * lam_L), rtol=1e-6)


@pytest.mark.parametrize("metric", ["full", "diagonal"])
def test_screened_path_equals_unscreened_path(metric):
    X, y = scaled(load_wine)
    kw = dict(k=3, metric=metric, tol=1e-9, warm_start=True, max_iter=100000)
    safe, plain = SafeMetricLearner(**kw), SafeMetricLearner(screening=None, **kw)
    lam0 = safe._critical_value(X, y)
    rates = []
    for lam in lam0 * 0.5 ** np.arange(1, 14):
        safe.set_params(alpha=lam).fit(X, y)
        plain.set_params(alpha=lam).fit(X, y)
        diff = np.linalg.norm(safe.metric_ - plain.metric_)
        assert diff <= 1.01 * (dgb_tol(safe) + dgb_tol(plain)) + 1e-12
        assert diff <= 1e-3 * np.linalg.norm(plain.metric_)
        assert objective(safe, X, y) == pytest.approx(objective(plain, X, y), rel=1e-7)
        rates.append(safe.screening_report_.screening_rate)
        assert plain.screening_report_.n_screened == 0
    assert np.mean(rates) > 0.5
    # warm-started path = cold fit at the last value
    cold = SafeMetricLearner(**{**kw, "warm_start": False, "screening": None}).set_params(
        alpha=lam).fit(X, y)
    assert np.linalg.norm(cold.metric_ - safe.metric_) <= 1.01 * (
        dgb_tol(cold) + dgb_tol(safe)) + 1e-12


@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("rule", ["sphere", "linear", "sdp"])
def test_every_bound_and_rule_gives_the_same_metric(bound, rule):
    X, y = scaled(load_iris, every=3)
    ref = SafeMetricLearner(k=3, screening=None, tol=1e-10).set_params(alpha=2.0).fit(X, y)
    ml = SafeMetricLearner(k=3, screening=bound, rule=rule, tol=1e-10, warm_start=True)
    for lam in [200.0, 20.0, 2.0]:
        ml.set_params(alpha=lam).fit(X, y)
    assert np.linalg.norm(ml.metric_ - ref.metric_) <= 1.01 * (dgb_tol(ml) + dgb_tol(ref))
    assert ml.screening_report_.n_screened > 0


@pytest.mark.parametrize("options", [dict(loss="hinge"), dict(active_set=True),
                                     dict(active_set=True, metric="diagonal"),
                                     dict(range_screening=False)])
def test_options_keep_the_optimum(options):
    X, y = scaled(load_wine, every=2)
    # the hinge is solved in the dual by FISTA (sublinear): a looser tolerance
    tol = 1e-6 if options.get("loss") == "hinge" else 1e-8
    kw = dict(k=3, tol=tol, warm_start=True, max_iter=200000, **options)
    safe, plain = SafeMetricLearner(**kw), SafeMetricLearner(screening=None, **kw)
    for lam in [300.0, 30.0, 3.0]:
        safe.set_params(alpha=lam).fit(X, y)
        plain.set_params(alpha=lam).fit(X, y)
    assert np.linalg.norm(safe.metric_ - plain.metric_) <= 1.01 * (
        dgb_tol(safe) + dgb_tol(plain)) + 1e-12


@pytest.mark.parametrize("rule, bounded", [("sphere", False), ("sdp", False),
                                           ("sphere", True)])
def test_range_screening_by_default_only_with_the_sdp_rule(rule, bounded):
    """``range_screening="auto"`` keeps the RRPB ranges with the SDP rule only (whose
    test of a triplet costs O(d^3)); with an O(1) rule the previous solution's own RRPB
    test decides the same triplets, from exact values or (the certificate from bounds
    tried, here on a small set) from bounded ones, and the path's metrics are those
    with ranges."""
    X, y = scaled(load_wine, every=2)
    fits = {}
    for ranges in ("auto", True):
        ml = SafeMetricLearner(k=3, rule=rule, warm_start=True, tol=1e-8,
                               range_screening=ranges)
        if bounded:  # (the bounds tried whatever the work and the share of pairs)
            ml._triplet_options = TripletOptions(bounds_min_work=0.0, full_pass_share=1.0)
        screened, from_bounds = [], False
        for lam in [100.0, 90.0, 81.0, 72.9]:
            ml.set_params(alpha=lam).fit(X, y)
            screened.append(sum(e.n_screened for e in ml.screening_report_.events
                                if e.moment in ("range", "reference")))
            zrad = ml._path.paths[0].reference.zrad  # (values the certificate bounded)
            from_bounds |= zrad is not None and bool(np.any(zrad > 0))
        has_range = any(e.moment == "range" for e in ml.screening_report_.events)
        fits[ranges] = (ml.metric_.copy(), screened, has_range, dgb_tol(ml))
        assert from_bounds is bounded  # the next steps screened from bounded values
    assert fits[True][2] and fits["auto"][2] is (rule == "sdp")
    assert fits["auto"][1] == fits[True][1]
    assert np.linalg.norm(fits["auto"][0] - fits[True][0]) <= 1.01 * (
        fits["auto"][3] + fits[True][3]) + 1e-12


def test_range_screening_reports_and_warm_start_on_new_data():
    X, y = scaled(load_wine, every=2)
    ml = SafeMetricLearner(k=3, warm_start=True, tol=1e-8, range_screening=True)
    for lam in [100.0, 90.0, 81.0, 72.9]:
        ml.set_params(alpha=lam).fit(X, y)
    moments = {e.moment for e in ml.screening_report_.events}
    assert {"range", "reference", "solve"} <= moments
    rng_ev = [e for e in ml.screening_report_.events if e.moment == "range"][0]
    assert rng_ev.n_screened > 0
    d = ml.screening_report_.to_dict()
    assert {"n_variables", "n_screened", "screening_rate"} <= d.keys()
    assert d["n_variables"] == ml.n_triplets_ and 0 < d["screening_rate"] <= 1
    # different data: the old reference must not be used
    X2 = X + 0.01
    ml.fit(X2, y)
    assert not any(e.moment == "range" for e in ml.screening_report_.events)
    fresh = SafeMetricLearner(k=3, tol=1e-8, alpha=72.9).fit(X2, y)
    assert np.linalg.norm(ml.metric_ - fresh.metric_) <= 1.01 * (
        dgb_tol(ml) + dgb_tol(fresh)) + 1e-12


def test_transform_and_metric_learn_interface():
    X, y = scaled(load_iris, every=2)
    ml = SafeMetricLearner(k=3, alpha=10.0).fit(X, y)
    M, L = ml.get_mahalanobis_matrix(), ml.components_
    assert np.allclose(L.T @ L, M, atol=1e-10 * np.abs(M).max())
    Z = ml.transform(X)
    pairs = np.stack([X[:10], X[10:20]], axis=1)
    d = ml.pair_distance(pairs)
    assert np.allclose(d, np.linalg.norm(Z[:10] - Z[10:20], axis=1))
    assert np.allclose(ml.pair_score(pairs), -d)
    f = ml.get_metric()
    assert f(X[0], X[10]) == pytest.approx(d[0])
    with pytest.raises(ValueError, match="pairs must have shape"):
        ml.pair_distance(X[:4])


def test_user_triplets():
    X, y = scaled(load_iris, every=3)
    ml = SafeMetricLearner(k=2, alpha=5.0, tol=1e-10).fit(X, y)
    T = fitted_triplets(ml, X, y)
    mu = SafeMetricLearner(alpha=5.0, tol=1e-10).fit(X, y, triplets=T)
    assert np.linalg.norm(ml.metric_ - mu.metric_) <= 1.01 * (dgb_tol(ml) + dgb_tol(mu))
    with pytest.raises(ValueError, match="must lie in"):
        SafeMetricLearner().fit(X, y, triplets=[[0, 1, X.shape[0]]])


def test_pipeline_gridsearch_clone_pickle():
    X, y = scaled(load_wine)
    pipe = Pipeline([("metric", SafeMetricLearner(k=3)),
                     ("knn", KNeighborsClassifier(n_neighbors=5))])
    grid = GridSearchCV(pipe, {"metric__alpha": [1.0, 100.0]}, cv=3).fit(X, y)
    assert grid.best_score_ > 0.9
    ml = grid.best_estimator_.named_steps["metric"]
    ml2 = pickle.loads(pickle.dumps(ml))
    assert np.array_equal(ml2.transform(X), ml.transform(X))
    # the warm-start state (O(|T|)) is not pickled; a warm refit then starts cold
    assert not hasattr(ml2, "_path") and len(pickle.dumps(ml2)) < 10_000
    ml2.set_params(warm_start=True).fit(X, y)
    assert np.allclose(ml2.metric_, ml.metric_, rtol=1e-3, atol=1e-6 * np.abs(
        ml.metric_).max())
    c = clone(ml)
    assert c.get_params() == ml.get_params() and not hasattr(c, "metric_")


@pytest.mark.parametrize("active_set", [False, True])
def test_path_workspace_kept_between_fits_changes_nothing_and_is_not_pickled(
        monkeypatch, active_set):
    """The solver loop's work buffers, kept by the path between fits whose working
    triplets shrink and grow, give bit for bit the fits of buffers allocated afresh;
    a pickled fitted learner does not carry them."""
    from sklearn_safescreen.engine.triplet import TripletPath
    from sklearn_safescreen.solvers import _spg_fast, psd_gradient

    X, y = scaled(load_wine, every=2)
    lam_L = SafeMetricLearner(k=3)._critical_value(X, y)
    # down the path, back up (fewer working triplets), then further down
    alphas = lam_L * np.array([0.5, 0.4, 0.3, 0.2, 0.3, 0.4, 0.15, 0.1, 0.05, 0.01])
    sizes = []
    spg = _spg_fast.spg

    def recording_spg(*args):
        sizes.append(len(args[1]))
        return spg(*args)

    monkeypatch.setattr(psd_gradient.kn, "spg", recording_spg)

    def walk(fresh_buffers):
        if fresh_buffers:  # a new (empty) workspace before every fit
            fit = TripletPath.fit

            def fit_fresh(self, *args, **kwargs):
                self.workspace = psd_gradient.SpgWorkspace()
                return fit(self, *args, **kwargs)

            monkeypatch.setattr(TripletPath, "fit", fit_fresh)
        ml = SafeMetricLearner(k=3, warm_start=True, tol=1e-8, active_set=active_set)
        fits = []
        for alpha in alphas:
            ml.set_params(alpha=alpha).fit(X, y)
            fits.append((ml.metric_.copy(), ml.n_iter_, ml.dual_gap_, ml.loss_,
                         [(e.rule, e.moment, e.n_lower, e.n_upper)
                          for e in ml.screening_report_.events]))
        monkeypatch.setattr(TripletPath, "fit", TripletPath.__dict__["fit"])
        return ml, fits

    kept, kept_fits = walk(False)
    n_kept = len(sizes)
    assert kept._path.paths[0].workspace.nbytes > 0
    fresh, fresh_fits = walk(True)
    for a, b in zip(kept_fits, fresh_fits, strict=True):
        assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]
    # the working sets grew and shrank along the path
    steps = np.diff(sizes[:n_kept])
    assert (steps > 0).any() and (steps < 0).any()
    restored = pickle.loads(pickle.dumps(kept))
    assert not hasattr(restored, "_path")
    assert b"SpgWorkspace" not in pickle.dumps(kept)
    assert np.array_equal(restored.metric_, kept.metric_)


def test_regularization_path_cv():
    import sklearn_safescreen

    X, y = scaled(load_wine)
    pipe = Pipeline([("metric", SafeMetricLearner(k=3)),
                     ("knn", KNeighborsClassifier(n_neighbors=5))])
    lam_L = SafeMetricLearner(k=3)._critical_value(X, y)
    cv = sklearn_safescreen.RegularizationPathCV(pipe, param_name="metric__alpha",
                                   values=lam_L * 0.3 ** np.arange(1, 6), cv=3).fit(X, y)
    assert cv.best_score_ > 0.9


def test_bad_input():
    X, y = scaled(load_iris, every=3)
    with pytest.raises(ValueError, match="at least two classes"):
        SafeMetricLearner().fit(X, np.zeros(X.shape[0]))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SafeMetricLearner().fit(Xn, y)
    # iris[::3]: 17 + 17 + 16 samples, so at most 15 same-class neighbours
    with pytest.raises(ValueError, match=r"k=20 is larger than class 2 allows: it has 16 "
                                         r"samples.*k <= 15, k='auto'"):
        SafeMetricLearner(k=20, alpha=1e3).fit(X, y)
    with pytest.raises(ValueError, match="k=16 is larger than class 'c' allows"):
        SafeMetricLearner(k=16).fit(X, np.array(["a", "b", "c"])[y])
    with pytest.raises(ValueError, match="k=20 is larger"):
        SafeMetricLearner(k=20)._critical_value(X, y)
    with pytest.raises(ValueError):
        SafeMetricLearner(k="ten").fit(X, y)
    with pytest.raises(ValueError):
        SafeMetricLearner(k=0).fit(X, y)
    with pytest.raises(ValueError):
        SafeMetricLearner(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError):
        SafeMetricLearner(screening="nope").fit(X, y)
    # an alpha so small that the metric (of order lambda_L / alpha) would overflow
    lam_L = SafeMetricLearner()._critical_value(X, y)
    with pytest.raises(ValueError, match=r"alpha=1e-300 is below 1e-50 x critical_alpha_"
                                         r".*use alpha >= "):
        SafeMetricLearner(alpha=1e-300).fit(X, y)
    with pytest.raises(ValueError, match="below 1e-50 x critical_alpha_"):
        SafeMetricLearner(alpha=0.5e-50 * lam_L).fit(X, y)
    with pytest.raises(ValueError, match="continuous|Unknown label"):
        SafeMetricLearner().fit(X, np.linspace(0, 1, X.shape[0]))


def test_k_auto_is_the_protocol_value_capped_by_the_smallest_class():
    X, y = scaled(load_iris, every=3)  # classes of 17, 17 and 16 samples
    ml = SafeMetricLearner(alpha=1e3).fit(X, y)
    assert ml.k_ == 10 and ml.n_triplets_ == X.shape[0] * 10 * 10
    ml.set_params(k=15).fit(X, y)  # the largest valid value
    assert ml.k_ == 15 and ml.n_triplets_ == X.shape[0] * 15 * 15
    # a class of 4 samples caps "auto" at 3; its explicit equivalent gives the same fit
    keep = np.r_[np.flatnonzero(y != 1), np.flatnonzero(y == 1)[:4]]
    auto = SafeMetricLearner(alpha=50.0).fit(X[keep], y[keep])
    explicit = SafeMetricLearner(alpha=50.0, k=3).fit(X[keep], y[keep])
    assert auto.k_ == explicit.k_ == 3
    np.testing.assert_array_equal(auto.metric_, explicit.metric_)
    # a class of one sample anchors nothing and does not limit k
    one = np.r_[np.flatnonzero(y != 1), np.flatnonzero(y == 1)[:1]]
    ml = SafeMetricLearner(alpha=1e3).fit(X[one], y[one])
    assert ml.k_ == 10 and ml.n_triplets_ == (one.size - 1) * 10 * 10
    # all triplets
    ml = SafeMetricLearner(k=None, alpha=1e3).fit(X, y)
    counts = np.bincount(y)
    assert ml.k_ is None
    assert ml.n_triplets_ == int((counts * (counts - 1) * (y.size - counts)).sum())


def test_memory_refusal(monkeypatch):
    X, y = scaled(load_iris)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**20)
    with pytest.raises(MemoryError, match="GiB"):
        SafeMetricLearner(k=None).fit(X, y)


def test_verbose_prints_per_check(capsys):
    X, y = scaled(load_iris, every=3)
    SafeMetricLearner(k=3, alpha=5.0, verbose=2).fit(X, y)
    out = capsys.readouterr().out
    assert "reference" in out and "gap=" in out and "screened" in out


def test_degenerate_data_has_the_zero_metric():
    """G_+ = 0 (each anchor's same-class neighbour is farther than every other-class
    one in every direction): M* = 0 for every alpha (the closed form G_+ / lambda of
    doc/theory/metric_learning.rst with G_+ = 0)."""
    X = np.array([[0.0], [1.0], [-0.1], [1.1], [3.0], [-3.0]])
    y = np.array([0, 0, 1, 1, 0, 1])
    ml = SafeMetricLearner(k=1)
    lam_L = ml._critical_value(X, y)
    for alpha in [1e-300, 1e-3, 1.0]:
        ml.set_params(alpha=alpha).fit(X, y)
        assert np.all(ml.metric_ == 0) and ml.dual_gap_ == 0.0
    assert lam_L > 0


def test_deprecated_spellings_of_screening_still_work():
    X, y = scaled(load_iris, every=3)
    kw = dict(k=3, alpha=5.0, tol=1e-10)
    new = SafeMetricLearner(screening="rrpb", **kw).fit(X, y)
    with pytest.warns(FutureWarning, match=r"bound=\.\.\.\) is deprecated"):
        old = SafeMetricLearner(bound="rrpb", **kw).fit(X, y)
    np.testing.assert_array_equal(old.metric_, new.metric_)
    assert [e.rule for e in old.screening_report_.events] == \
        [e.rule for e in new.screening_report_.events]
    off = SafeMetricLearner(screening=None, **kw).fit(X, y)
    with pytest.warns(FutureWarning, match="screening=False"):
        old_off = SafeMetricLearner(screening=False, **kw).fit(X, y)
    np.testing.assert_array_equal(old_off.metric_, off.metric_)
    assert old_off.screening_report_.n_screened == 0
    with pytest.warns(FutureWarning, match="screening=True"):
        on = SafeMetricLearner(screening=True, **kw).fit(X, y)
    assert on.screening_report_.n_screened == \
        SafeMetricLearner(**kw).fit(X, y).screening_report_.n_screened
    with pytest.warns(FutureWarning, match=r"random_state=\.\.\.\) is deprecated"):
        SafeMetricLearner(random_state=0, **kw).fit(X, y)


def test_huge_finite_values_are_refused_clearly():
    X, y = scaled(load_wine)
    X[0, 0] = 1e300
    with pytest.raises(ValueError, match=r"X has entries up to 1e\+300.*fourth powers"):
        SafeMetricLearner(alpha=1e6).fit(X, y)


def test_feature_names_and_set_output_in_a_pipeline():
    pd = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(), SafeMetricLearner(alpha=1e5),
                         KNeighborsClassifier()).set_output(transform="pandas")
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.9
    out = pipe[:2].transform(X)
    assert isinstance(out, pd.DataFrame)
    names = [f"safemetriclearner{i}" for i in range(X.shape[1])]
    assert list(out.columns) == names
    assert list(pipe[1].get_feature_names_out()) == names
    np.testing.assert_allclose(out.to_numpy(), pipe[1].transform(pipe[0].transform(X)))


def test_a_path_builds_its_triplets_once(monkeypatch):
    # the path walk computes the critical value on its own warm-started clone, whose
    # first fit starts from the triplet set built for it; no state is shared between
    # estimators (a critical value and an unrelated fit build the set twice)
    from sklearn_safescreen.path import critical_value, estimator_path

    X, y = scaled(load_wine)
    calls = []
    build = _triplets.build_triplets

    def counting(*args, **kwargs):
        calls.append(1)
        return build(*args, **kwargs)

    monkeypatch.setattr("sklearn_safescreen._metric_inputs.build_triplets", counting)
    res = estimator_path(SafeMetricLearner(k=3, tol=1e-10), X, y, n_values=3, eps=0.3)
    assert len(calls) == 1
    lam = critical_value(SafeMetricLearner(k=3), X, y)
    assert lam == res.critical_value
    fitted = SafeMetricLearner(k=3, alpha=res.values[-1], tol=1e-10).fit(X, y)
    assert len(calls) == 3
    np.testing.assert_allclose(fitted.metric_, res.solutions[-1]["metric_"],
                               atol=1e-4 * np.abs(fitted.metric_).max())
    SafeMetricLearner(k=3, alpha=0.3 * lam).fit(X[:-1], y[:-1])  # other data
    assert len(calls) == 4


def test_a_diagonal_metric_builds_its_matrices_only_when_read():
    """A diagonal fit keeps the learned diagonal; ``metric_`` and ``components_`` (d x d,
    O(d^2) to build) are built when read, equal to the diagonal's, and a later fit of
    the other kind replaces them."""
    X, y = scaled(load_wine, every=2)
    ml = SafeMetricLearner(k=3, metric="diagonal", alpha=1.0).fit(X, y)
    assert "metric_" not in vars(ml) and "components_" not in vars(ml)
    m = np.diag(ml.metric_)
    assert (m >= 0).all() and m.any()
    assert np.array_equal(ml.metric_, np.diag(m))
    assert np.array_equal(ml.components_, np.diag(np.sqrt(m)))
    assert "metric_" not in vars(ml)  # reading does not change the fitted learner
    assert np.allclose(ml.transform(X), X * np.sqrt(m))
    full = ml.set_params(metric="full").fit(X, y).metric_
    assert "components_" in vars(ml) and np.count_nonzero(full - np.diag(np.diag(full)))
    assert np.array_equal(ml.set_params(metric="diagonal").fit(X, y).metric_, np.diag(m))
    with pytest.raises(AttributeError):
        _ = SafeMetricLearner().metric_


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), metric=st.sampled_from(["diagonal", "full"]),
       ratio=st.sampled_from([0.99, 0.9, 0.7]))
@example(seed=1435, metric="diagonal", ratio=0.7)  # the working sets used to alternate
def test_active_set_paths_keep_every_optimum(seed, metric, ratio):
    """Along warm-started paths with the active-set heuristic (the papers' protocol,
    where a fit often needs no iteration: the checkpoints reuse evaluations, complete
    them with the left-out triplets, screen nothing once converged, and the certificate
    bounds the screened values from the scaled previous metric), every fit is within
    its gap's distance of the unscreened solve and its gap is the full problem's."""
    rng = np.random.RandomState(seed)
    n, d = 36, 4
    y = np.arange(n) % 3
    X = rng.randn(n, d) + 0.7 * y[:, None] * rng.randn(1, d)
    kw = dict(k=3, metric=metric, tol=1e-9, warm_start=True, max_iter=100000)
    safe = SafeMetricLearner(active_set=True, **kw)
    # (on a set this small, every restriction and bound is tried: the shares of the
    # pairs above which one pass over all is made, and the work below which the bounds
    # and the updates of H_L are not tried, would decline them)
    safe._triplet_options = TripletOptions(full_pass_share=1.0, bounds_min_work=0.0,
                                           hl_update_min_work=0.0)
    plain = SafeMetricLearner(screening=None, range_screening=False, **kw)
    ts = _triplets.build_triplets(X, y, 3, metric == "diagonal")
    lam = tp.closed_form(ts, 0.05, metric == "diagonal")[0]
    for _ in range(25):
        lam *= ratio
        with pytest.MonkeyPatch.context() as mp:
            # (the solver's own share, above which the active set is not restricted)
            mp.setattr(pg, "ACTIVE_SET_PAIR_SHARE", 1.0)
            safe.set_params(alpha=lam).fit(X, y)
        plain.set_params(alpha=lam).fit(X, y)
        assert np.linalg.norm(safe.metric_ - plain.metric_) <= 1.01 * (
            dgb_tol(safe) + dgb_tol(plain)) + 1e-12 * np.linalg.norm(plain.metric_)
        M = safe._metric_diagonal if metric == "diagonal" else safe.metric_
        full = tp.TripletProblem(ts, 0.05, metric == "diagonal").evaluate(M, lam)
        assert full.rel_gap <= 1e-9 * (1 + 1e-6)
        assert safe.loss_ == pytest.approx(tp.loss_values(full.z, 0.05).sum(), rel=1e-9)


@pytest.mark.parametrize("small", [True, False])
def test_small_sets_sum_hl_from_scratch(monkeypatch, small):
    """On a set whose pass over every pair is under ``hl_update_min_work`` multiply-adds
    (:class:`TripletOptions`) the screened fits sum H_L from scratch (cheaper than the
    update's passes over the triplets); on a larger one (here: made so) they update it.
    The metrics are the same either way."""
    from sklearn_safescreen.engine import triplet

    calls = []
    update = triplet.update_hl

    def recording(*args, **kw):
        calls.append(1)
        return update(*args, **kw)

    monkeypatch.setattr(triplet, "update_hl", recording)
    X, y = scaled(load_wine, every=2)
    ml = SafeMetricLearner(k=3, warm_start=True, tol=1e-8)
    if not small:
        ml._triplet_options = TripletOptions(hl_update_min_work=0.0)
    plain = SafeMetricLearner(k=3, warm_start=True, tol=1e-8, screening=None)
    for lam in [100.0, 50.0, 25.0, 12.5]:
        ml.set_params(alpha=lam).fit(X, y)
        plain.set_params(alpha=lam).fit(X, y)
    assert bool(calls) is not small
    assert np.linalg.norm(ml.metric_ - plain.metric_) <= 1.01 * (
        dgb_tol(ml) + dgb_tol(plain)) + 1e-12


def test_path_keeps_the_solver_buffers_until_it_ends(monkeypatch):
    """A path walked with warm starts keeps the solver loop's buffers from one fit to
    the next whatever their size (``KEPT_BYTES`` is 0 here, so that every buffer counts
    as large); a fit without a warm start releases them at its end."""
    from sklearn_safescreen.engine.triplet import TripletPath
    from sklearn_safescreen.solvers import _spg_fast

    monkeypatch.setattr(_spg_fast, "KEPT_BYTES", 0)
    ends = []
    end_fit = TripletPath.end_fit

    def recording_end_fit(self, keep, walk=False):
        end_fit(self, keep, walk)
        ends.append((keep, self.workspace.nbytes))

    monkeypatch.setattr(TripletPath, "end_fit", recording_end_fit)
    X, y = scaled(load_wine, every=2)
    lam_L = SafeMetricLearner(k=3)._critical_value(X, y)
    ml = SafeMetricLearner(k=3, warm_start=True)
    for alpha in (0.3, 0.2):
        ml.set_params(alpha=alpha * lam_L).fit(X, y)
    workspace = ml._path.paths[0].workspace
    assert workspace.nbytes > 0 and workspace.kept_bytes > 2**40
    SafeMetricLearner(k=3, alpha=0.2 * lam_L).fit(X, y)
    assert [keep for keep, _ in ends] == [True, True, False]
    assert ends[0][1] > 0 and ends[1][1] > 0 and ends[2][1] == 0
