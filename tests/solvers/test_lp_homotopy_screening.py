"""The safe feature rule of the LP-SVM homotopy's pricing (``make_core(screen=...)``):
the screened path makes the same pivots as the unscreened one, breakpoint by breakpoint
(dense and sparse data, both basis factors, rank-deficient X, duplicated rows and
columns, ties), the rule does skip features, and the comparison catches a rule made
unsafe on purpose (understated column norms)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import make_problem, tied_problem
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen import lp_svm_path
from sklearn_safescreen.datasets import make_sparse_text_classification
from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.solvers import lp_homotopy
from sklearn_safescreen.solvers.lp_homotopy import PathFollower, make_core

#: Relative agreement of the objectives of the two paths at each breakpoint.
RTOL = 1e-12

#: The rule's interval and budget: the defaults, where most decisions are also
#: protected by the next breakpoint falling below the interval, and a long interval
#: with the smallest budget, where they rest on the budgets.
SETTINGS = [(lp_homotopy.SCREEN_SPAN, lp_homotopy.SCREEN_BUDGET), (0.5, 1.0)]


def _path(data, factor, screen, eps=1e-3, core=None):
    """``(core, events, lams, objectives)`` of the path from lambda_max down to ``eps``
    times it."""
    if core is None:
        core = make_core(data, True, factor=factor, screen=screen)
    follower = PathFollower(core, data)
    events, lams, objs = [], [], []
    for p in follower.run(eps * data.lambda_max()):
        events.append((p.enter, p.enter_index, p.sign, p.leave, p.leave_index))
        lams.append(p.lam)
        w = np.zeros(data.n_features)
        w[p.support] = p.values
        objs.append(data.primal(p.lam, w))
    return core, events, np.array(lams), np.array(objs)


def _agree(data, factor, eps=1e-3):
    """Both paths, compared breakpoint by breakpoint; returns the screened core."""
    core, ev_on, lam_on, obj_on = _path(data, factor, True, eps)
    _, ev_off, lam_off, obj_off = _path(data, factor, False, eps)
    assert ev_on == ev_off
    np.testing.assert_allclose(lam_on, lam_off, rtol=RTOL, atol=0.0)
    np.testing.assert_allclose(obj_on, obj_off, rtol=RTOL, atol=0.0)
    return core


def _data(X, y, s=None):
    return LPSVMData(X, y, s)


@pytest.mark.parametrize("span,budget", SETTINGS)
@pytest.mark.parametrize("factor", ["dense", "lu"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sparse", [False, True])
def test_random_problems_same_pivots(seed, sparse, factor, span, budget, monkeypatch):
    monkeypatch.setattr(lp_homotopy, "SCREEN_SPAN", span)
    monkeypatch.setattr(lp_homotopy, "SCREEN_BUDGET", budget)
    X, y, s = make_problem(seed, n=60, d=80, sparse=sparse, weights=seed % 2 == 1,
                           density=0.15)
    _agree(_data(X, y, s), factor)


def _gaussian(kind, seed, n, d):
    """Dense gaussian, sparse gaussian, or nearly rank 3 (``kind`` 0, 1, 2)."""
    if kind == 0:
        X, y, s = make_problem(seed, n=n, d=d)
    elif kind == 1:
        X, y, s = make_problem(seed, n=n, d=d, sparse=True, density=0.3)
    else:
        rng = np.random.RandomState(seed)
        X = rng.randn(n, 3) @ rng.randn(3, d) + 0.1 * rng.randn(n, d)
        y = np.sign(rng.randn(n))
        y[:2] = [-1.0, 1.0]
        s = None
    return _data(X, y, s)


#: Problems on which the rule without its budget checks changes the path.
BUDGET_CASES = [(0, 825510, 53, 12, 0.05), (2, 269975, 50, 57, 0.3),
                (2, 71549, 34, 69, 0.3), (0, 205760, 43, 30, 0.05),
                (0, 931654, 26, 39, 0.05)]


@pytest.mark.parametrize("case", BUDGET_CASES + [
    (seed % 3, seed, 10 + 7 * seed % 50, 5 + 11 * seed % 75, (0.05, 0.3, 0.9)[seed % 3])
    for seed in range(30)])
def test_small_budget_same_pivots(case, monkeypatch):
    """The smallest budget (the reference line's own move) and intervals of several
    lengths: the decisions rest on the budget checks, which these problems need."""
    kind, seed, n, d, span = case
    monkeypatch.setattr(lp_homotopy, "SCREEN_SPAN", span)
    monkeypatch.setattr(lp_homotopy, "SCREEN_BUDGET", 1.0)
    _agree(_gaussian(kind, seed, n, d), "dense")


@pytest.mark.parametrize("factor", ["dense", "lu"])
def test_rank_deficient_duplicated_and_tied(factor):
    rng = np.random.RandomState(3)
    # rank 5, small integers (many tied correlations), duplicated rows and columns
    B = rng.randint(-2, 3, size=(40, 5)).astype(float)
    X = B @ rng.randint(-1, 2, size=(5, 30)).astype(float)
    X = np.vstack([X, X[:15]])
    X = np.hstack([X, X[:, :6]])
    y = rng.choice([-1.0, 1.0], size=X.shape[0])
    y[:2] = [-1.0, 1.0]
    _agree(_data(sp.csr_matrix(X) if factor == "lu" else X, y), factor)


@pytest.mark.parametrize("factor", ["dense", "lu"])
def test_sparse_text_and_the_rule_skips_features(factor):
    """On sparse text-like data the rule screens most pricings: it is not vacuous."""
    X, y = make_sparse_text_classification(150, 600, random_state=0)
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    core = _agree(_data(sp.csr_matrix(X), y), factor)
    assert core.n_rescreen > 0
    assert core.n_screened > core.n_pricings // 4
    assert core.n_skipped > core.n_screened  # more than one feature a screened pricing


def test_screen_off_prices_every_feature():
    X, y, _ = make_problem(0, n=40, d=60)
    core, *_ = _path(_data(X, y), "dense", False)
    assert not core.screen
    assert core.n_pricings > 0 and core.n_screened == core.n_skipped == 0
    assert core.n_watched == X.shape[1]


@pytest.mark.parametrize("span,budget", SETTINGS)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_small_degenerate_problems_same_pivots(seed, sparse, span, budget, monkeypatch):
    """Tiny tied problems, where consecutive breakpoints often fall within one
    interval of the rule (seed 112 is one that a margin of -0.1 lambda n, an unsafe
    rule, gets wrong)."""
    monkeypatch.setattr(lp_homotopy, "SCREEN_SPAN", span)
    monkeypatch.setattr(lp_homotopy, "SCREEN_BUDGET", budget)
    rng = np.random.RandomState(seed)
    if seed == 0:
        config = (112, 6, 7, 1, 0.5, False)
    else:
        config = (seed, rng.randint(6, 30), rng.randint(2, 30), rng.randint(1, 3),
                  rng.uniform(0.2, 1.0), bool(rng.randint(2)))
    X, y = tied_problem(*config)
    if not np.abs(X.T @ y).max() > 0:
        return  # w = 0 everywhere: no path
    _agree(_data(sp.csr_matrix(X) if sparse else X, y), "lu" if sparse else "dense")


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 40), d=st.integers(1, 40),
       levels=st.integers(1, 3), density=st.floats(0.1, 1.0), dup=st.booleans(),
       sparse=st.booleans())
def test_random_degenerate_problems_same_pivots(seed, n, d, levels, density, dup, sparse):
    X, y = tied_problem(seed, n, d, levels, density, dup)
    if not np.abs(X.T @ y).max() > 0:
        return  # w = 0 everywhere: no path
    _agree(_data(sp.csr_matrix(X) if sparse else X, y), "lu" if sparse else "dense")


def test_understated_column_norms_change_the_path():
    """The comparison has power: told that every column is zero (so that the dual's
    move since the reference could not change a correlation), the rule screens
    features that do enter, and the path then differs from the unscreened one."""
    X, y, s = make_problem(0, n=60, d=80)
    data = _data(X, y, s)
    core = make_core(data, True, factor="dense", screen=False)
    zero = np.zeros(data.n_features)
    core.set_screening(zero, zero, data.col_abs_s, lp_homotopy.SCREEN_RTOL,
                       lp_homotopy.SCREEN_SPAN, lp_homotopy.SCREEN_BUDGET)
    _, ev_bad, _, _ = _path(data, "dense", None, core=core)
    _, ev_off, _, _ = _path(data, "dense", False)
    assert core.n_skipped > 0
    assert ev_bad != ev_off


def test_bad_screening_settings():
    X, y, _ = make_problem(0, n=20, d=10)
    data = _data(X, y)
    core = make_core(data, True, screen=False)
    c_inf, c_two = lp_homotopy._column_norms(data.Zc)
    with pytest.raises(ValueError, match="span"):
        core.set_screening(c_inf, c_two, data.col_abs_s, 1e-6, 1.5, 2.0)
    with pytest.raises(ValueError, match="span"):
        core.set_screening(c_inf, c_two, data.col_abs_s, 1e-6, 0.01, 0.5)
    with pytest.raises(ValueError, match="one entry per feature"):
        core.set_screening(c_inf[:-1], c_two, data.col_abs_s, 1e-6, 0.01, 2.0)


def test_default_follows_the_module_setting(monkeypatch):
    X, y, _ = make_problem(1, n=30, d=20)
    data = _data(X, y)
    assert make_core(data, True).screen == lp_homotopy.SCREEN
    monkeypatch.setattr(lp_homotopy, "SCREEN", True)
    assert make_core(data, True).screen
    assert not make_core(data, True, screen=False).screen
    monkeypatch.setattr(lp_homotopy, "SCREEN", False)
    assert not make_core(data, True).screen
    assert make_core(data, True, screen=True).screen


def test_lp_svm_path_with_the_rule_on(monkeypatch):
    """The public path, intercept and weights included, is the same with the rule."""
    X, y = make_sparse_text_classification(120, 400, random_state=1)
    w = np.random.RandomState(0).uniform(0.5, 2.0, X.shape[0])
    runs = []
    for on in (False, True):
        monkeypatch.setattr(lp_homotopy, "SCREEN", on)
        runs.append(lp_svm_path(X, y, sample_weight=w))
    (a0, c0, i0, e0), (a1, c1, i1, e1) = runs
    np.testing.assert_array_equal(e0[["enter", "enter_index", "sign"]],
                                  e1[["enter", "enter_index", "sign"]])
    np.testing.assert_allclose(a1, a0, rtol=RTOL, atol=0.0)
    np.testing.assert_allclose(c1.toarray(), c0.toarray(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(i1, i0, rtol=1e-10, atol=1e-12)
