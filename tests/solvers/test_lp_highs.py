"""The column-and-row generation LP-SVM solver (``solvers/lp_highs.py``) against an
independent HiGHS solve of the full LP (``_lp_svm_models.solve_full``): objective to
1e-9 relative and the same support, on random small problems, dense and sparse, with
and without intercept and sample weights, cold, along a warm-started path with the
rules, from explicit working sets, and with wrong fixed sets that the certificate must
release."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import ZERO, lambda_max, make_problem, primal, solve_full

from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.screening.lp_svm import LPScreen, screen_lp_svm
from sklearn_safescreen.solvers.lp_highs import ColumnRowGeneration, solve_lp_svm

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
