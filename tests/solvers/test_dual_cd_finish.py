"""When linear coordinate descent hands a solve to the interior-point finisher at once
(``solvers/dual_cd.py``, ``_polish``): a small problem is always finished (its fits exact
to ~1e-12 whatever ``tol``); a problem that screening made small only while CD's gap is
far from ``tol``, since near it a few epochs cost far less than a finish."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sklearn_safescreen.solvers import dual_cd


def _problem(n: int, d: int):
    return SimpleNamespace(n_samples=n, X=np.empty((0, d)))


TOL = 1e-6


@pytest.mark.parametrize("n, active, rel_gap, finished", [
    (500, 500, 2 * TOL, True),  # small problem: finished whatever the gap
    (500, 20, 0.5 * TOL, True),
    (500, 500, 0.5 * dual_cd.IPM_TOL, False),  # already exact
    (2000, 100, 100 * TOL, True),  # made small by screening, CD far from tol
    (2000, 100, 2 * TOL, False),  # ... near tol: CD goes on
    (2000, 100, 0.5 * TOL, False),  # ... past it
    (2000, 2000, 100 * TOL, False),  # large: only when CD is slow (elsewhere)
])
def test_which_solves_are_finished_at_once(n, active, rel_gap, finished):
    d = 31  # 500 x 31^2 < IPM_SMALL_FLOPS < 2000 x 31^2 > 100 x 31^2
    assert 500 * d**2 <= dual_cd.IPM_SMALL_FLOPS < 2000 * d**2
    assert dual_cd._polish(_problem(n, d), np.arange(active), rel_gap, TOL) is finished
