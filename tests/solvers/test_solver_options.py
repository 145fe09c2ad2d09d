"""The tuning values of dual coordinate descent (solvers/dual_cd_options.py), of the
Newton steps' kept factor, of the working sets and of the doubly sparse solver: each one
frozen object whose bad values fail where they are given, and whose values the solver
reads (a solve given other options behaves as they say)."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest
from _box_models import linear_problem
from _svm_truth import noisy_data

from sklearn_safescreen.screening.balls import gap_ball_screen
from sklearn_safescreen.solvers import doubly_sparse_cd, dual_cd, newton, working_set
from sklearn_safescreen.solvers.doubly_sparse_cd import DoublySparseCDOptions
from sklearn_safescreen.solvers.dual_cd_options import DualCDOptions
from sklearn_safescreen.solvers.newton import NewtonCache, NewtonOptions
from sklearn_safescreen.solvers.working_set import WorkingSetOptions, prefer_working_sets


@pytest.mark.parametrize("cls, bad_values", [
    (DualCDOptions, [(dict(ipm_max_finishes=-1), ValueError),
                     (dict(ipm_tol=float("nan")), ValueError),
                     (dict(ipm_max_system=2500.0), TypeError),
                     (dict(stop_when_slow_min=True), TypeError),
                     (dict(ipm_working_set_share="half"), TypeError)]),
    (NewtonOptions, [(dict(max_system=0), ValueError),
                     (dict(update_fraction=-0.01), ValueError),
                     (dict(keep_system=1.5), TypeError)]),
    (WorkingSetOptions, [(dict(initial=0), ValueError),
                         (dict(inner_tol_factor=0.0), ValueError),
                         (dict(min_problem=None), TypeError)]),
    (DoublySparseCDOptions, [(dict(check_every=0), ValueError),
                             (dict(anderson_depth=0), ValueError),
                             (dict(anderson_depth=2.0), TypeError)]),
])
def test_options_are_frozen_and_checked(cls, bad_values):
    options = cls()
    name = next(iter(bad_values[0][0]))
    with pytest.raises(FrozenInstanceError):
        setattr(options, name, 1)
    for bad, error in bad_values:
        with pytest.raises(error, match=f"{cls.__name__}.{next(iter(bad))}"):
            cls(**bad)
    # a valid change keeps every other default
    changed = replace(options, **{name: 7})
    assert getattr(changed, name) == 7
    assert all(getattr(changed, k) == getattr(options, k)
               for k in options.__dataclass_fields__ if k != name)


def test_default_options_are_the_solvers_defaults():
    assert dual_cd.DEFAULT_OPTIONS == DualCDOptions()
    assert newton.DEFAULT_OPTIONS == NewtonOptions()
    assert working_set.DEFAULT_OPTIONS == WorkingSetOptions()
    assert doubly_sparse_cd.DEFAULT_OPTIONS == DoublySparseCDOptions()


def test_a_solve_reads_the_options_it_is_given():
    """``stop_when_slow`` returns early only on more undecided variables than
    ``stop_when_slow_min``: with the default (thousands) this problem runs to the end;
    given a low threshold (and no immediate polish) the same solve stops slow."""
    X, y = noisy_data(seed=6, n=1500, d=8)
    C = 30.0
    problem = linear_problem(X, y, C)
    n = y.size
    kwargs = dict(tol=1e-9, max_iter=100000, dynamic_screen=gap_ball_screen,
                  stop_when_slow=True)
    default = dual_cd.solve_box_qp(problem, np.full(n, C), np.zeros(n, bool),
                                   random_state=np.random.RandomState(0), **kwargs)
    assert not default.stopped_slow and default.converged
    low = DualCDOptions(stop_when_slow_min=10, ipm_small_flops=0)
    res = dual_cd.solve_box_qp(problem, np.full(n, C), np.zeros(n, bool),
                               random_state=np.random.RandomState(0), options=low, **kwargs)
    assert res.stopped_slow and not res.converged


def test_working_sets_are_chosen_above_their_threshold():
    threshold = WorkingSetOptions().min_problem
    assert prefer_working_sets(threshold + 1) and not prefer_working_sets(threshold)
    assert prefer_working_sets(11, WorkingSetOptions(min_problem=10))


def test_newton_cache_keeps_its_options_through_a_pickle():
    """The factor is not pickled, the options it was made with are."""
    options = NewtonOptions(max_system=50, keep_system=20)
    cache = pickle.loads(pickle.dumps(NewtonCache(options)))
    assert cache.options == options and cache.factor is None
    assert NewtonCache().options is newton.DEFAULT_OPTIONS


def test_kernel_gap_checks_are_spaced_by_the_epochs_cost(monkeypatch):
    """Kernel mode: the checks are at least ``ceil(kernel_check_flops / n**2)`` epochs
    apart (capped by ``check_max_epochs``), unless the finisher's hand-over comes first
    or polishes the problem at once; a problem of a few hundred samples then makes
    fewer checks for the same gap."""
    from _box_models import kernel_problem

    opt = DualCDOptions(kernel_check_flops=1e6)
    assert dual_cd._kernel_check_epochs(250, opt) == 16
    assert dual_cd._kernel_check_epochs(1000, opt) == 1
    assert dual_cd._kernel_check_epochs(160, opt) == 40
    # a problem the finisher polishes at once is handed over at the first check
    assert dual_cd._kernel_check_epochs(100, opt) == 1
    assert dual_cd._kernel_check_epochs(160, replace(opt, ipm_small_flops=0,
                                                     check_max_epochs=30)) == 30
    assert dual_cd._kernel_check_epochs(250, DualCDOptions(kernel_check_flops=0)) == 1
    X, y = noisy_data(seed=3, n=200, d=4)
    n = y.size
    budgets = []
    epochs = dual_cd.kernel_epochs

    def counted(Q, lo, hi, a, g, la, budget, *args):
        budgets.append(budget)
        return epochs(Q, lo, hi, a, g, la, budget, *args)

    monkeypatch.setattr(dual_cd, "kernel_epochs", counted)
    results = {}
    for flops in (0.0, 1e6):
        budgets.clear()
        res = dual_cd.solve_box_qp(kernel_problem(X, y, 10.0, 0.5), np.zeros(n),
                                   np.zeros(n, bool), tol=1e-6, max_iter=10000,
                                   random_state=np.random.RandomState(0),
                                   options=DualCDOptions(kernel_check_flops=flops))
        assert res.converged
        results[flops] = (res, list(budgets))
    spaced = dual_cd._kernel_check_epochs(n, DualCDOptions(kernel_check_flops=1e6))
    # (later calls may end at the finisher's hand-over, which comes first)
    assert results[1e6][1][0] == spaced > 1 == results[0.0][1][0]
    assert len(results[1e6][1]) < len(results[0.0][1])
    np.testing.assert_allclose(results[1e6][0].alpha, results[0.0][0].alpha,
                               atol=1e-3 * np.abs(results[0.0][0].alpha).max())


def test_screened_polish_needs_few_active_variables_against_the_samples():
    """Linear mode: a problem that screening made small is finished by the
    interior-point method only while its active variables times the features are at
    most ``screened_polish_width`` times the samples; a small problem always is."""
    X, y = noisy_data(seed=1, n=250, d=64)
    problem = linear_problem(X, y, 1.0)  # (the intercept: 65 features, as digits)
    d = problem.X.shape[1]
    opt = DualCDOptions()
    tol, far = 1e-4, 1e3 * 1e-4
    assert problem.n_samples * d**2 > opt.ipm_small_flops  # not small itself
    wide = np.arange(200)  # 200 * 65 > 4 * 250: CD's epochs are the cheaper way
    narrow = np.arange(15)  # 15 * 65 <= 4 * 250
    assert not dual_cd._polish(problem, wide, far, tol, opt)
    assert dual_cd._polish(problem, narrow, far, tol, opt)
    assert dual_cd._polish(problem, wide, far, tol, replace(opt, screened_polish_width=1e9))
    assert not dual_cd._polish(problem, narrow, far, tol,
                               replace(opt, screened_polish_width=0.5 * 15 * d / 250))
    # near tol CD's few epochs are cheaper whatever the width
    assert not dual_cd._polish(problem, narrow, 2.0 * tol, tol, opt)
    # a problem whose Newton system is small is polished whatever the active set
    small = linear_problem(X[:, :4], y, 1.0)
    assert dual_cd._polish(small, wide, far, tol, opt)


def test_kernel_newton_steps_wait_for_the_epochs_cost(monkeypatch):
    """Kernel mode: a Newton step is tried after ``newton_after_epochs`` epochs, or on a
    small problem after the epochs that cost ``kernel_newton_flops``; a solve given a
    later threshold takes fewer steps (here: converges without one)."""
    from _box_models import kernel_problem

    opt = DualCDOptions(kernel_newton_flops=1.5e6, newton_after_epochs=5)
    assert dual_cd._kernel_newton_epochs(250, opt) == 24
    assert dual_cd._kernel_newton_epochs(2000, opt) == 5
    assert dual_cd._kernel_newton_epochs(250, replace(opt, kernel_newton_flops=0)) == 5
    X, y = noisy_data(seed=2, n=200, d=4)
    n = y.size
    calls = []
    step = dual_cd.newton_on_interior

    def counted(*args):
        calls.append(1)
        return step(*args)

    monkeypatch.setattr(dual_cd, "newton_on_interior", counted)
    steps = {}
    for flops in (0.0, 1e9):
        calls.clear()
        res = dual_cd.solve_box_qp(kernel_problem(X, y, 1.0, 0.5), np.zeros(n),
                                   np.zeros(n, bool), tol=1e-4, max_iter=10000,
                                   random_state=np.random.RandomState(0),
                                   options=DualCDOptions(kernel_newton_flops=flops))
        assert res.converged
        steps[flops] = len(calls)
    assert steps[0.0] > 0 and steps[1e9] < steps[0.0]
