"""The screening policy: which steps screen, decided from counted work only."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_classification
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from sklearn_safescreen import SafeMetricLearner, SafeSVC
from sklearn_safescreen.base import current_context, fit_context
from sklearn_safescreen.engine import policy
from sklearn_safescreen.engine.policy import (
    DIAGONAL_METRIC,
    FULL_METRIC,
    EveryStep,
    NoScreening,
    PassCosts,
    PassCount,
)
from sklearn_safescreen.path import estimator_path


# ------------------------------------------------------------------ the policies ---
def test_fixed_modes_override_every_policy():
    for p in (EveryStep(), NoScreening("why"), PassCount(FULL_METRIC)):
        assert p.decide("always").screen
        assert not p.decide("never").screen
    assert EveryStep().decide("auto").screen
    decision = NoScreening("every row cached").decide("auto")
    assert not decision.screen and decision.reason == "every row cached"


def test_pass_count_screens_while_it_reads_fewer_passes():
    costs = PassCosts(per_kept=1.0, per_all=1.0, max_wait=4, probe_share=1.0)
    p = PassCount(costs)
    assert p.decide("auto").screen  # nothing measured yet
    # one iteration: a plain step is 2 passes, a screened one (2 + 1) s + 1
    p.record(True, n_iter=1, kept=0.2)  # 1.6 passes: pays
    assert p.decide("auto").screen
    p.record(True, n_iter=1, kept=0.4)  # 2.2 passes: does not pay
    decision = p.decide("auto")
    assert not decision.screen and "40%" in decision.reason
    p.record(False, n_iter=1)
    assert p.decide("auto").screen  # measured again after a wait of 1 ...
    p.record(True, n_iter=1, kept=0.45)
    for _ in range(2):  # ... then of 2, then 4 (at most max_wait)
        assert not p.decide("auto").screen
        p.record(False, n_iter=1)
    assert p.decide("auto").screen
    p.record(True, n_iter=1, kept=0.5)
    for _ in range(4):
        assert not p.decide("auto").screen
        p.record(False, n_iter=1)
    assert p.decide("auto").screen
    p.record(True, n_iter=1, kept=0.5)
    assert p.wait == costs.max_wait


def test_pass_count_waits_longer_the_more_screening_lost():
    costs = PassCosts(per_kept=1.0, per_all=1.0, max_wait=32, probe_share=0.05)
    small, large = PassCount(costs), PassCount(costs)
    small.record(True, n_iter=1, kept=0.4)  # 2.2 passes against 2: 10% dearer
    large.record(True, n_iter=1, kept=0.9)  # 3.7 passes against 2: 85% dearer
    assert 2 <= small.countdown <= 3  # (1.1 - 1) / 0.05, rounded up
    assert 17 <= large.countdown <= 18  # (1.85 - 1) / 0.05, rounded up
    for _ in range(large.countdown):
        assert not large.decide("auto").screen
        large.record(False, n_iter=1)
    assert large.decide("auto").screen


def test_pass_count_screens_again_when_the_steps_grow():
    p = PassCount(PassCosts(per_kept=1.0, per_all=1.0, probe_share=1.0))
    p.record(True, n_iter=1, kept=0.4)
    assert not p.decide("auto").screen
    # a plain step of 2 iterations: 3 passes against (3 + 1) 0.4 + 1 = 2.6, a saving
    # under a quarter: the wait goes on
    p.record(False, n_iter=2)
    p.record(True, n_iter=1, kept=0.4)  # (measured again: a wait of 2 now)
    p.record(False, n_iter=2)
    assert not p.decide("auto").screen
    # a plain step of 9 iterations: 10 passes against (10 + 1) 0.4 + 1 = 5.4
    p.record(False, n_iter=9)
    assert p.decide("auto").screen


def test_pass_count_without_measurement_ignores_plain_steps():
    p = PassCount(DIAGONAL_METRIC)
    p.record(False, n_iter=3)  # (mode "never": nothing measured)
    assert p.decide("auto").screen


# ------------------------------------------------------------ modes and context ---
def test_environment_mode_is_checked(monkeypatch):
    monkeypatch.setenv(policy.ENVIRONMENT, "sometimes")
    with pytest.raises(ValueError, match="sometimes"):
        policy.environment_mode()
    monkeypatch.setenv(policy.ENVIRONMENT, "Never")
    assert policy.environment_mode() == "never"
    monkeypatch.delenv(policy.ENVIRONMENT)
    assert policy.environment_mode() == "auto"


def test_fit_context_belongs_to_one_estimator_and_ends_with_its_block():
    a, b = SafeSVC(), SafeSVC()
    with fit_context(a, screening="never", inputs_unchanged=True):
        assert current_context(a).screening == "never"
        assert current_context(a).inputs_unchanged
        assert current_context(b).screening is None
        with fit_context(a, screening="always"):
            assert current_context(a).screening == "always"
        assert current_context(a).screening == "never"
    assert "_fit_context" not in a.__dict__
    with pytest.raises(ValueError, match="sometimes"):
        with fit_context(a, screening="sometimes"):
            pass


def test_caller_mode_beats_the_environment(monkeypatch):
    monkeypatch.setenv(policy.ENVIRONMENT, "never")
    X, y = make_classification(200, 6, random_state=0)
    model = SafeSVC(kernel="linear", C=0.1, warm_start=True).fit(X, y)
    model.set_params(C=0.2)
    with fit_context(model, screening="always"):
        model.fit(X, y)
    assert not model.screening_report_.skipped
    model.set_params(C=0.4).fit(X, y)
    assert model.screening_report_.skipped


# ------------------------------------------------------------------- on real paths ---
def test_kernel_path_with_every_row_cached_does_not_screen_unless_asked():
    X, y = make_classification(150, 5, random_state=0)
    Cs = np.logspace(-1, 1, 4)
    auto = estimator_path(SafeSVC(gamma=0.2), X, y, Cs)
    always = estimator_path(SafeSVC(gamma=0.2), X, y, Cs, screening_mode="always")
    skipped = [e for r in auto.reports[1:] for e in r.skipped]
    assert skipped and all("kernel row is cached" in note for note in skipped)
    assert not any(r.skipped for r in always.reports)
    assert np.nanmax(always.screening_rates[1:]) > 0
    # the same optimum, certified either way
    np.testing.assert_allclose(auto.estimator.decision_function(X),
                               always.estimator.decision_function(X), atol=1e-2)


def test_metric_path_runs_plain_steps_where_screening_reads_more():
    X, y = make_classification(300, 30, n_informative=5, n_redundant=15, random_state=0)
    X = MinMaxScaler((-1, 1)).fit_transform(X)
    est = SafeMetricLearner(metric="diagonal", k=10)
    grid = dict(n_values=30, eps=0.9 ** 29)
    auto = estimator_path(est, X, y, **grid)
    always = estimator_path(est, X, y, screening_mode="always", **grid)
    never = estimator_path(est, X, y, screening_mode="never", **grid)
    plain = [i for i, r in enumerate(auto.reports) if r.skipped]
    # the path's first steps screen nearly everything; its last ones keep most pairs
    assert len(plain) >= 2 and plain[0] > 10
    assert "of the pairs" in auto.reports[plain[0]].skipped[0]
    assert all(r.skipped for r in never.reports[1:])
    # the same optimum, certified either way: the objective is alpha-strongly convex,
    # so each certified metric is within sqrt(2 gap / alpha) of it (Frobenius)
    for k, alpha in enumerate(auto.values):
        radius = [np.sqrt(2.0 * r.dual_gaps[k] / alpha) for r in (auto, always, never)]
        metrics = [r.solutions[k]["metric_"] for r in (auto, always, never)]
        for i in (0, 1):
            gap = np.linalg.norm(metrics[i] - metrics[2])
            assert gap <= radius[i] + radius[2] + 1e-12


def test_metric_path_screens_every_step_where_it_pays():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    res = estimator_path(SafeMetricLearner(), X, y, n_values=103, eps=0.9 ** 102,
                         attributes=[])
    assert sum(bool(r.skipped) for r in res.reports) <= 10
