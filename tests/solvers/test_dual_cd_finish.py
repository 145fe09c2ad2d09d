"""When linear coordinate descent hands a solve to the interior-point finisher at once
(``solvers/dual_cd.py``, ``_polish``): a small problem is always finished (its fits exact
to ~1e-12 whatever ``tol``); a problem that screening made small only while CD's gap is
far from ``tol``, since near it a few epochs cost far less than a finish."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sklearn_safescreen.solvers import dual_cd

#: the tuning values the solves below use
OPT = dual_cd.DEFAULT_OPTIONS


def _problem(n: int, d: int):
    return SimpleNamespace(n_samples=n, X=np.empty((0, d)))


TOL = 1e-6


@pytest.mark.parametrize("n, active, rel_gap, finished", [
    (500, 500, 2 * TOL, True),  # small problem: finished whatever the gap
    (500, 20, 0.5 * TOL, True),
    (500, 500, 0.5 * OPT.ipm_tol, False),  # already exact
    (2000, 100, 100 * TOL, True),  # made small by screening, CD far from tol
    (2000, 100, 2 * TOL, False),  # ... near tol: CD goes on
    (2000, 100, 0.5 * TOL, False),  # ... past it
    (2000, 2000, 100 * TOL, False),  # large: only when CD is slow (elsewhere)
])
def test_which_solves_are_finished_at_once(n, active, rel_gap, finished):
    d = 31  # 500 x 31^2 < ipm_small_flops < 2000 x 31^2 > 100 x 31^2
    assert 500 * d**2 <= OPT.ipm_small_flops < 2000 * d**2
    assert dual_cd._polish(_problem(n, d), np.arange(active), rel_gap, TOL,
                           OPT) is finished


def _digits_pair_problem(C: float, gamma: float):
    """The SVM dual of digits 3 against 8 (standardised) with an RBF kernel: at a small
    ``gamma`` (a nearly linear kernel) and a large ``C`` a badly conditioned problem."""
    from _box_models import kernel_problem
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    X = StandardScaler().fit_transform(X[keep])
    return kernel_problem(X, np.where(y[keep] == 3, 1.0, -1.0), C, gamma)


def _relative_gap(problem, alpha) -> float:
    """The relative duality gap at ``alpha``, from the dense signed kernel afresh."""
    s, n = problem.sign, problem.n_samples
    Q = problem.kernel.block(np.arange(n), np.arange(n)) * s[:, None] * s[None, :]
    g = Q @ alpha - problem.p
    gap = float((np.maximum(-problem.lo * g, -problem.hi * g) + alpha * g).sum())
    return gap / abs(float(problem.p @ alpha) - 0.5 * float(alpha @ Q @ alpha))


@pytest.mark.parametrize("screen", [False, True])
def test_kernel_solve_hands_over_to_the_finisher_once_cd_crawls(screen):
    """On a nearly linear RBF kernel at large C, CD's gap soon decreases by a few
    percent per epoch: the solve hands over to the interior-point finisher as soon as
    the rate over the last check interval says CD would need more epochs than the
    finisher costs (well before its fixed count of one epoch per variable), and the
    answer's gap, recomputed here, is within tol. The finisher's iterates screen with
    their gap balls; their decisions are reported as fixed only when the solve
    screens."""
    from sklearn_safescreen.screening.balls import gap_ball_screen

    problem = _digits_pair_problem(C=20.0, gamma=1e-3 / 64)
    n = problem.n_samples
    tol = 1e-4
    res = dual_cd.solve_box_qp(problem, np.zeros(n), np.zeros(n, dtype=bool), tol=tol,
                               max_iter=10_000, random_state=np.random.RandomState(0),
                               dynamic_screen=gap_ball_screen if screen else None)
    assert res.converged and res.rel_gap <= tol
    assert res.n_iter < dual_cd._kernel_ipm_epochs(n, OPT) // 2
    assert _relative_gap(problem, res.alpha) <= tol
    if not screen:
        assert not res.fixed.any() and not res.dynamic


@pytest.mark.parametrize("scale", [0.01, 0.1])
def test_kernel_finisher_on_a_working_set_reaches_the_optimum(monkeypatch, scale):
    """The kernel finisher runs on the variables CD has not settled at a bound (far
    fewer factorised variables than the active ones), from a point near the optimum
    (its interior variables moved by ``scale``), and its answer is the optimum over
    every variable: its gap, recomputed from the dense kernel, at the finisher's
    tolerance level, its gradient the true one."""
    problem = _digits_pair_problem(C=20.0, gamma=1e-3 / 64)
    n = problem.n_samples
    # a point near the optimum, as CD leaves it: solve once, then perturb
    res = dual_cd.solve_box_qp(problem, np.zeros(n), np.zeros(n, dtype=bool), tol=1e-12,
                               max_iter=10_000, random_state=np.random.RandomState(0))
    assert _relative_gap(problem, res.alpha) <= 1e-10
    s = problem.sign
    Q = problem.kernel.block(np.arange(n), np.arange(n)) * s[:, None] * s[None, :]
    a = res.alpha.copy()
    rng = np.random.RandomState(1)
    interior = np.flatnonzero((a > problem.lo) & (a < problem.hi))
    a[interior] = np.clip(a[interior] + scale * rng.randn(interior.size), 0.0, 20.0)
    g = Q @ a - problem.p
    sizes = []
    compiled = dual_cd.ipm_dense_kernel

    def recording(Q_in, *args):
        sizes.append(Q_in.shape[0])
        return compiled(Q_in, *args)

    monkeypatch.setattr(dual_cd, "ipm_dense_kernel", recording)
    la = np.arange(n)
    to_lo, to_hi = dual_cd._ipm_finish_kernel(
        Q, a, g, problem.lo, problem.hi, la, problem.p, np.zeros(n), problem.sqnorm,
        1e-6, 0.0, 0.0, None, OPT)
    assert not to_lo.size and not to_hi.size
    assert sizes[0] <= OPT.ipm_working_set_share * n
    np.testing.assert_allclose(g, Q @ a - problem.p, atol=1e-9)
    assert _relative_gap(problem, a) <= 1e-9
