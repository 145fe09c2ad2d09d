"""The error bounds a box-QP reference carries, against exact rational arithmetic.

A reference promises (``BoxQPReference``): its margins are :math:`Q\\alpha` up to
``margin_error``, and the exact duality gap at its ``alpha`` is at most ``gap +
gap_error``. Every rule reads these: the margins' bound widens every projection, the
gap's bound enters the radius :math:`\\sqrt{\\mathrm{gap}+\\mathrm{gap\\_error}}`. On data
whose products cancel, the compensated margins are still correctly rounded, but not
exact, and the gap's terms lose far more: each bound is needed for the promise to hold
(the tests fail without it; ``tools/mutation_check.py``).

Whether a dropped bound also flips a *decision* depends on the rules' relative slack
(``SCREEN_RTOL`` = 1e-9 of the bounds' magnitude), which these errors exceed only once
the compensated products' residual :math:`\\gamma_m^2\\sum_j|Q_{ij}\\alpha_j|` reaches
1e-9 of the margins: for standardised data about :math:`C\\,n^3\\gtrsim10^{22}`. The
tests here pin the promise itself, which the rules' proofs assume.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sklearn_safescreen.problems.box_qp_data import LADData, SVMData


def _cancelling_data(seed, n=24, d=4):
    """Features of very different magnitudes, so that the margins are small differences
    of large products."""
    rng = np.random.RandomState(seed)
    scale = np.exp(rng.uniform(0, np.log(1e7), d))
    X = rng.randn(n, d) * scale
    X[:, 0] = 1e7 + rng.randn(n)  # a large common part: cancellation in every margin
    return X, rng


def _exact_margins(Z, alpha):
    """:math:`ZZ^\\top\\alpha` in rational arithmetic (Z = sign * rows, exactly as
    floats)."""
    Zf = [[Fraction(float(v)) for v in row] for row in Z]
    af = [Fraction(float(a)) for a in alpha]
    d = len(Zf[0])
    w = [sum(af[j] * Zf[j][k] for j in range(len(af))) for k in range(d)]
    return [sum(Zf[i][k] * w[k] for k in range(d)) for i in range(len(Zf))]


def _exact_gap(q, p, lo, hi, alpha):
    total = Fraction(0)
    for qi, pi, l, h, a in zip(q, p, lo, hi, alpha, strict=True):
        g = qi - Fraction(float(pi))
        total += max(-Fraction(float(l)) * g, -Fraction(float(h)) * g) + Fraction(float(a)) * g
    return total


def _case(family, seed):
    X, rng = _cancelling_data(seed)
    n = X.shape[0]
    if family == "svm":
        sign = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
        data = SVMData(X, None, sign, np.ones(n))
    else:
        sign = np.ones(n)
        data = LADData(X, None, X @ rng.randn(X.shape[1]) * 1e-7 + rng.randn(n),
                       np.ones(n))
    C = 10.0 ** rng.uniform(-3, 3)
    problem = data.problem(C)
    alpha = rng.uniform(problem.lo, problem.hi)
    alpha[rng.rand(n) < 0.3] = problem.hi[0]  # some variables at the end of the box
    alpha = np.clip(alpha, problem.lo, problem.hi)
    return problem, sign[:, None] * X, alpha, C


@pytest.mark.parametrize("family", ["svm", "lad"])
def test_reference_margins_lie_within_their_error_bound(family):
    inexact = 0
    for seed in range(6):
        problem, Z, alpha, C = _case(family, seed)
        ref = problem.reference(C, alpha)
        exact = _exact_margins(Z, alpha)
        err = np.array([abs(Fraction(float(q)) - e)
                        for q, e in zip(ref.margins, exact, strict=True)], dtype=float)
        assert np.all(err <= ref.margin_error), (seed, (err / ref.margin_error).max())
        inexact += int(np.sum(err > 0))
    assert inexact > 0  # without the bound the promise fails


@pytest.mark.parametrize("family", ["svm", "lad"])
def test_reference_gap_bounds_the_exact_gap(family):
    under = 0
    for seed in range(6):
        problem, Z, alpha, C = _case(family, seed)
        ref = problem.reference(C, alpha)
        exact = _exact_gap(_exact_margins(Z, alpha), problem.p, problem.lo, problem.hi,
                           alpha)
        assert exact <= Fraction(ref.gap) + Fraction(ref.gap_error), seed
        under += int(exact > Fraction(ref.gap))
    assert under > 0  # the computed gap alone falls short of the exact one
