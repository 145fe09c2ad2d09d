"""The column-and-row generation LP-SVM solver (``solvers/lp_highs.py``) against an
independent HiGHS solve of the full LP (``_lp_svm_models.solve_full``): objective to
1e-9 relative and the same support, on random small problems, dense and sparse, with
and without intercept and sample weights, cold, along a warm-started path with the
rules, from explicit working sets, and with wrong fixed sets that the certificate must
release; the live HiGHS model against cold restricted LPs (row duals in linprog's sign
convention), and the fallback to ``linprog`` without scipy's HiGHS bindings."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import ZERO, lambda_max, make_problem, primal, solve_full
from scipy.optimize import linprog

from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.screening.lp_svm import LPScreen, screen_lp_svm
from sklearn_safescreen.solvers._highs_api import (
    CORE_MODULE,
    HighsLP,
    HighsSolveError,
    highs_available,
    highs_core,
)
from sklearn_safescreen.solvers.lp_highs import ColumnRowGeneration, solve_lp_svm
from sklearn_safescreen.solvers.lp_warm import WarmRestrictedLP

CASES = [dict(sparse=sp_, weights=wt, intercept=ic)
         for sp_ in (False, True) for wt in (False, True) for ic in (False, True)]
IDS = ["-".join(k for k, v in c.items() if v) or "plain" for c in CASES]


def assert_same_optimum(X, y, s, lam, res, opt):
    assert res.converged
    assert res.rel_gap <= 1e-9
    assert primal(X, y, s, res.w, lam) == pytest.approx(opt.value, rel=1e-9)
    assert res.primal >= primal(X, y, s, res.w, lam)  # an upper bound
    assert res.dual <= opt.value * (1 + 1e-9)  # a lower bound of the optimum
    np.testing.assert_array_equal(np.abs(res.w) > ZERO, np.abs(opt.w) > ZERO)
    np.testing.assert_allclose(res.w, opt.w, atol=1e-7 * max(1.0, np.abs(opt.w).max()))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("frac", [0.5, 0.1, 0.01])
def test_cold_solve_matches_the_full_lp(case, frac):
    X, y, s = make_problem(11, **case)
    lam = frac * lambda_max(X, y, s)
    res = solve_lp_svm(LPSVMData(X, y, s), lam)
    assert_same_optimum(X, y, s, lam, res, solve_full(X, y, s, lam))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_screened_warm_path_matches_the_full_lp(case):
    X, y, s = make_problem(12, n=50, d=30, **case)
    data = LPSVMData(X, y, s)
    lams = data.lambda_max() * np.geomspace(1.0, 0.01, 30)
    w, alpha = np.zeros(data.n_features), data.alpha_at_zero()
    screened = 0
    for lam in lams[1:]:
        screen = screen_lp_svm(data, lam, w, alpha)
        screened += screen.n_features + screen.n_samples
        res = solve_lp_svm(data, lam, screen, w_start=w, alpha_start=alpha)
        assert_same_optimum(X, y, s, lam, res, solve_full(X, y, s, lam))
        assert res.released == (0, 0)  # correct rules: nothing to put back
        w, alpha = res.w, res.alpha
    assert screened > 0  # the path did reduce problems


def test_explicit_working_sets_and_growth():
    X, y, s = make_problem(13, n=60, d=40, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.05 * data.lambda_max()
    features = np.zeros(40, bool)
    features[0] = True
    samples = np.zeros(60, bool)
    samples[:3] = True
    task = ColumnRowGeneration(data, lam, features=features, samples=samples)
    iters, converged = task.solve(1e-9, 100)
    assert converged and iters > 1  # columns and rows had to be generated
    assert task.features.sum() > 1 and task.samples.sum() > 3
    assert task.features[0] and task.samples[:3].all()  # working sets only grow
    check = task.certify()
    opt = solve_full(X, y, s, lam)
    assert check.certificate.rel_gap <= 1e-8
    assert primal(X, y, s, task.w, lam) == pytest.approx(opt.value, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_wrong_fixed_sets_are_released(sparse):
    """Fix active features at 0, margin samples at 0 and a sample with margin above 1 at
    the box: the certificate finds them and the answer is the full optimum."""
    X, y, s = make_problem(14, n=50, d=30, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.05 * data.lambda_max()
    opt = solve_full(X, y, s, lam)
    active = np.flatnonzero(np.abs(opt.w) > ZERO)
    on_margin = np.flatnonzero(opt.margins < 1 - 1e-6)
    above = np.flatnonzero(opt.margins > 1 + 1e-6)
    assert len(active) >= 2 and len(on_margin) >= 2 and len(above) >= 1
    features = np.zeros(30, bool)
    features[active[:2]] = True
    at_zero = np.zeros(50, bool)
    at_zero[on_margin[:2]] = True
    at_box = np.zeros(50, bool)
    at_box[above[0]] = True
    wrong = LPScreen(features, at_zero, at_box, 1)
    res = solve_lp_svm(data, lam, wrong)
    assert res.released[0] >= 1 and res.released[1] >= 1
    assert_same_optimum(X, y, s, lam, res, opt)


def test_everything_fixed_gives_the_closed_form_above_lambda_max():
    X, y, s = make_problem(15, weights=True)
    data = LPSVMData(sp.csr_matrix(X), y, s)
    lam = 1.01 * data.lambda_max()
    screen = screen_lp_svm(data, lam, np.zeros(X.shape[1]), data.alpha_at_zero())
    res = solve_lp_svm(data, lam, screen)
    assert np.all(res.w == 0.0)
    assert res.rel_gap <= 1e-12


@pytest.mark.parametrize("sparse", [False, True])
def test_linear_samples_that_cross_the_margin_become_rows(sparse):
    """Every sample starts linear (as if at the box), no rows: the samples whose margin
    ends above 1 must become rows, and the answer is the full optimum."""
    X, y, s = make_problem(16, n=50, d=30, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.05 * data.lambda_max()
    n = len(y)
    task = ColumnRowGeneration(data, lam, features=np.ones(30, bool),
                               samples=np.zeros(n, bool), linear=np.ones(n, bool))
    _, converged = task.solve(1e-9, 100)
    assert converged
    opt = solve_full(X, y, s, lam)
    assert task.samples.sum() > 0
    assert np.all(task.samples | task.linear)  # every sample is a row or still linear
    assert np.all(opt.margins[task.linear] <= 1 + 1e-8)  # linear only where exact
    assert task.certify().certificate.rel_gap <= 1e-8
    assert primal(X, y, s, task.w, lam) == pytest.approx(opt.value, rel=1e-9)


# -- the live HiGHS model (solvers/lp_warm.py, solvers/_highs_api.py) and the fallback

needs_highs = pytest.mark.skipif(not highs_available(),
                                 reason="this scipy ships no HiGHS bindings")


@pytest.fixture
def without_highs(monkeypatch):
    """The HiGHS bindings made unimportable, as on a scipy older than 1.15."""
    monkeypatch.setitem(sys.modules, CORE_MODULE, None)
    highs_core.cache_clear()
    assert not highs_available()
    yield
    monkeypatch.undo()
    highs_core.cache_clear()


def restricted_value(data, lam, w, rows, at_box):
    """The restricted LP's objective at ``w`` (unscaled): the hinge on ``rows``, the
    linear loss on ``at_box``, nothing on the other samples."""
    m = data.margins(w)
    loss = data.s * np.where(rows, np.maximum(1.0 - m, 0.0),
                             np.where(at_box, 1.0 - m, 0.0))
    return lam * np.abs(w).sum() + loss.sum() / data.n_samples


@needs_highs
@pytest.mark.parametrize("sparse", [False, True])
def test_row_duals_follow_linprogs_sign_convention(sparse):
    """HiGHS's row duals of the live model are linprog's ``ineqlin.marginals`` (<= 0 on
    the active rows of a minimisation): the same LP solved both ways."""
    X, y, s = make_problem(31, n=40, d=20, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.1 * data.lambda_max()
    plus, minus, rows = np.arange(20), np.arange(20), np.arange(40)
    lp = data.restricted_lp(lam, plus, minus, rows, np.zeros(40, bool), 1e3)
    ref = linprog(lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, bounds=lp.bounds, method="highs-ds",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10})
    model = HighsLP(1e-10)
    model.add_columns(lp.c, lp.bounds[:, 0], lp.bounds[:, 1], sp.csc_matrix((0, 80)))
    model.add_rows(np.full(40, -np.inf), lp.b_ub, sp.csr_matrix(lp.A_ub))
    x, row_dual = model.solve()
    assert lp.c @ x == pytest.approx(ref.fun, rel=1e-10)
    assert np.all(row_dual <= 1e-12) and np.any(row_dual < -1e-6)
    np.testing.assert_allclose(row_dual, ref.ineqlin.marginals, atol=1e-8)
    # and the model's a = -row_dual is the dual optimum: D(a) equals the optimum
    a = -row_dual
    assert a.sum() == pytest.approx(lp.c @ x, rel=1e-9)


@needs_highs
@pytest.mark.parametrize("sparse", [False, True])
def test_live_model_matches_a_cold_restricted_lp_as_it_changes(sparse):
    """One model through working sets that grow, features closed and reopened, samples
    with rows turned linear or out, samples without rows at the box, and values of
    lambda down and up: each solve's objective is that of the same restricted LP solved
    cold by linprog."""
    X, y, s = make_problem(32, n=50, d=30, sparse=sparse, weights=True)
    data = LPSVMData(X, y, s)
    n, d = 50, 30
    rng = np.random.RandomState(0)
    model = WarmRestrictedLP(data, 1e-10)
    plus, minus = np.zeros(d, bool), np.zeros(d, bool)
    rows, ever = np.zeros(n, bool), np.zeros(n, bool)
    for step, frac in enumerate([0.5, 0.2, 0.05, 0.3, 0.02, 0.1]):
        lam = frac * data.lambda_max()
        plus |= rng.rand(d) < 0.3
        minus |= rng.rand(d) < 0.3
        rows |= rng.rand(n) < 0.3
        open_p, open_m, hinge = plus.copy(), minus.copy(), rows.copy()
        at_box = ~rows & (rng.rand(n) < 0.3)
        if step >= 2:  # close features that have columns, re-state samples with rows
            open_p[rng.rand(d) < 0.3] = False
            open_m[rng.rand(d) < 0.3] = False
            restate = rows & (rng.rand(n) < 0.3)
            hinge &= ~restate
            at_box |= restate & (rng.rand(n) < 0.5)
        bound = 50.0
        ever |= hinge
        w, a = model.solve(lam, open_p, open_m, hinge, at_box, bound, 1e-10)
        ref = data.restricted_lp(lam, np.flatnonzero(open_p), np.flatnonzero(open_m),
                                 np.flatnonzero(hinge), at_box, bound)
        value = restricted_value(data, lam, w, hinge, at_box)
        if ref.A_ub is None:
            expected = restricted_value(data, lam, np.zeros(d), hinge, at_box)
            assert value <= expected + 1e-12
        else:
            res = linprog(ref.c, A_ub=ref.A_ub, b_ub=ref.b_ub, bounds=ref.bounds,
                          method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                                   "dual_feasibility_tolerance": 1e-10})
            expected = res.fun / n + (data.s * at_box).sum() / n
            assert value == pytest.approx(expected, rel=1e-9)
        assert np.all(w[~open_p] <= 0.0) and np.all(w[~open_m] >= 0.0)
        np.testing.assert_array_equal(a[at_box], data.s[at_box])
        assert np.all(a[~hinge & ~at_box] == 0.0)
        assert np.all((a >= 0.0) & (a <= data.s))
    np.testing.assert_array_equal(model.has_row, ever)  # a row joins once, stays


@needs_highs
def test_a_failed_highs_solve_is_a_clear_error():
    model = HighsLP(1e-9)
    model.add_columns(np.ones(1), np.zeros(1), np.ones(1), sp.csc_matrix((0, 1)))
    model.add_rows(np.full(1, 2.0), np.full(1, np.inf), sp.csr_matrix(np.ones((1, 1))))
    with pytest.raises(HighsSolveError, match="Infeasible"):
        model.solve()


@needs_highs
def test_the_solver_uses_a_live_model_and_reuses_one_given():
    X, y, s = make_problem(33, n=50, d=30, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.05 * data.lambda_max()
    task = ColumnRowGeneration(data, lam)
    assert isinstance(task.model, WarmRestrictedLP)
    task.solve(1e-9, 100)
    lam2 = 0.03 * data.lambda_max()
    again = ColumnRowGeneration(data, lam2, model=task.model, w_start=task.w)
    assert again.model is task.model
    # what the model holds is in the working sets from the start
    assert np.all(again.plus[task.model.has_plus]) and np.all(again.samples[task.model.has_row])
    again.solve(1e-9, 100)
    opt = solve_full(X, y, s, lam2)
    assert primal(X, y, s, again.w, lam2) == pytest.approx(opt.value, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_without_highs_bindings_linprog_solves_each_round(without_highs, sparse):
    """The fallback of a scipy without the bindings: no model, the same optima, cold,
    along a screened warm-started path and from wrong fixed sets."""
    X, y, s = make_problem(34, n=50, d=30, sparse=sparse, weights=True, intercept=True)
    data = LPSVMData(X, y, s)
    assert ColumnRowGeneration(data, 0.1).model is None
    w, alpha = np.zeros(data.n_features), data.alpha_at_zero()
    for lam in data.lambda_max() * np.geomspace(0.8, 0.01, 8):
        screen = screen_lp_svm(data, lam, w, alpha)
        res = solve_lp_svm(data, lam, screen, w_start=w, alpha_start=alpha)
        assert_same_optimum(X, y, s, lam, res, solve_full(X, y, s, lam))
        w, alpha = res.w, res.alpha


@needs_highs
def test_a_fresh_factor_keeps_the_optimal_basis():
    """``refactor`` (what a tightening does to the live model) re-solves from the same
    basis factored afresh: no pivot, the same point, duals at least as accurate."""
    X, y, s = make_problem(35, n=60, d=40, weights=True)
    data = LPSVMData(X, y, s)
    lam = 0.02 * data.lambda_max()
    model = WarmRestrictedLP(data, 1e-9)
    every = np.ones(40, bool)
    args = (lam, every, every, np.ones(60, bool), np.zeros(60, bool), 1e3)
    w, a = model.solve(*args, 1e-9)
    pivots = model.iterations
    assert pivots > 0
    model.lp.refactor()
    w2, a2 = model.solve(*args, 1e-10)
    assert model.iterations == pivots
    np.testing.assert_allclose(w2, w, atol=1e-12)
    np.testing.assert_allclose(a2, a, atol=1e-9)
    cert = data.certificate(lam, w2, y * a2)
    assert cert.rel_gap <= 1e-10
    # no pivot since that fresh factor: a second one is skipped (HiGHS keeps its basis
    # object, so the marker is the only trace)
    mark = model.lp._fresh_at
    model.lp.refactor()
    assert model.lp._fresh_at == mark == pivots
