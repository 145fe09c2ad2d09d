"""The one certify/repair loop (engine/certify.py), driven with a scripted reduced
problem, and the location of the warnings the package issues."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import SafeSVC, ScreeningRepairWarning
from sklearn_safescreen.engine.certify import (
    CERTIFY_ATTEMPTS,
    MAX_REPAIRS,
    Certificate,
    certified_solve,
)


class Scripted:
    """A reduced problem whose certificates are given in advance."""

    def __init__(self, certificates, converged=True):
        self.certificates = list(certificates)
        self.converged = converged
        self.tols, self.released = [], []
        self.dynamic = True

    def solve(self, tol, max_iter):
        self.tols.append(tol)
        return 3, self.converged

    def certify(self):
        return self.certificates.pop(0) if len(self.certificates) > 1 else \
            self.certificates[0]

    def release(self, which, proven):
        self.released.append((which, proven))

    def stop_dynamic_screening(self):
        self.dynamic = False

    def release_all(self):
        self.released.append(("all", False))


def test_a_certified_answer_needs_one_solve():
    task = Scripted([Certificate(1e-9, 1e-9)])
    res = certified_solve(task, tol=1e-6, max_iter=100, describe="x")
    assert res.converged and res.n_iter == 3 and task.tols == [1e-6]
    assert task.released == []


def test_a_proven_violation_is_released_with_a_warning_and_solved_again():
    wrong = np.array([True, False])
    task = Scripted([Certificate(1.0, 1e-2, wrong, 1), Certificate(1e-9, 1e-9)])
    with pytest.warns(ScreeningRepairWarning, match=r"1 variable.*screened by.*SafeX at C=2"):
        res = certified_solve(task, tol=1e-6, max_iter=100, describe="SafeX at C=2")
    assert res.converged and len(task.tols) == 2
    assert task.released == [(wrong, True)]


def test_tolerance_tightens_loose_variables_are_released_then_the_unscreened_solve():
    """Nothing proven wrong but the full gap kept open by fixed variables: the inner
    tolerance tightens, the loose variables are released without a warning, and when
    the gap still stays open every fixed variable is released for an unscreened solve
    at ``tol``."""
    loose = np.array([False, True])
    task = Scripted([Certificate(1.0, 1e-3, loose=loose, n_loose=1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = certified_solve(task, tol=1e-6, max_iter=10**6, describe="x")
    assert not res.converged and res.certificate.rel_gap == 1e-3 and res.unscreened
    assert len(task.tols) == CERTIFY_ATTEMPTS + 2
    np.testing.assert_allclose(task.tols[:-1],
                               1e-6 * 0.1 ** np.arange(CERTIFY_ATTEMPTS + 1))
    assert task.tols[-1] == 1e-6
    assert task.released == [(loose, False), ("all", False)]
    assert not task.dynamic


def test_a_gap_that_no_fixed_variable_keeps_open_ends_without_the_fall_back():
    """The solver's (or float64's) gap: the unscreened solve would stop there too."""
    task = Scripted([Certificate(1.0, 1e-3)])
    res = certified_solve(task, tol=1e-6, max_iter=10**6, describe="x")
    assert not res.converged and not res.unscreened
    assert len(task.tols) == CERTIFY_ATTEMPTS + 1 and task.released == []


def test_a_repair_stops_dynamic_screening_for_the_rest_of_the_fit():
    wrong = np.array([True, False])
    task = Scripted([Certificate(1.0, 1e-2, wrong, 1), Certificate(1e-9, 1e-9)])
    with pytest.warns(ScreeningRepairWarning):
        res = certified_solve(task, tol=1e-6, max_iter=100, describe="x")
    assert res.converged and res.n_repairs == 1 and not res.unscreened
    assert not task.dynamic


def test_repeated_repairs_fall_back_to_the_unscreened_solve():
    """A rule proven wrong ``MAX_REPAIRS`` times is not trusted with the rest of its
    decisions: every fixed variable is released and the full problem solved."""
    wrong = np.array([True, False])
    certs = [Certificate(1.0, 1e-2, wrong, 1)] * MAX_REPAIRS + [Certificate(1e-9, 1e-9)]
    task = Scripted(certs)
    with pytest.warns(ScreeningRepairWarning) as record:
        res = certified_solve(task, tol=1e-6, max_iter=100, describe="x")
    assert len(record) == MAX_REPAIRS
    assert res.converged and res.unscreened and res.n_repairs == MAX_REPAIRS
    assert task.released[-1] == ("all", False) and not task.dynamic
    assert task.tols == [1e-6] * (MAX_REPAIRS + 1)


def test_a_repair_cut_by_max_iter_is_not_reported_as_converged():
    wrong = np.array([True, False])
    task = Scripted([Certificate(1.0, 1e-2, wrong, 1)], converged=False)
    with pytest.warns(ScreeningRepairWarning):
        res = certified_solve(task, tol=1e-6, max_iter=100, describe="x")
    assert not res.converged and len(task.tols) == 1


def test_a_solver_stopped_at_max_iter_ends_the_loop():
    task = Scripted([Certificate(1.0, 1e-3)], converged=False)
    res = certified_solve(task, tol=1e-6, max_iter=100, describe="x")
    assert not res.converged and len(task.tols) == 1


# ------------------------------------------------------------ warning locations ---
def _noisy(n=300, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    return X, (X[:, 0] + 0.8 * rng.randn(n) > 0).astype(int)


@pytest.mark.parametrize("through_pipeline", [False, True])
def test_warnings_point_at_the_callers_line(through_pipeline):
    X, y = _noisy()
    est = SafeSVC(kernel="linear", C=100.0, tol=1e-12, max_iter=1)
    if through_pipeline:
        est = make_pipeline(StandardScaler(), est)
    with pytest.warns(ConvergenceWarning) as record:
        est.fit(X, y)
    assert record[0].filename == __file__
    assert "SafeSVC(C=100)" in str(record[0].message)


@pytest.mark.parametrize("seed", range(5))
def test_warnings_speak_of_the_value_asked_for_and_are_true(seed):
    """A cold fit walks internal path steps; a step cut short is only a reference (its
    gap inflates the next rules), so only the value the user asked for is judged: no
    warning when its certified gap meets tol, and a warning never states a gap below
    tol (two separated blobs at C=1e5 used to warn "gap 1.85e-14 > tol=1e-10" about an
    internal value)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=200, centers=[[-3, -3], [3, 3]], random_state=seed)
    model = SafeSVC(kernel="linear", C=1e5, tol=1e-10, random_state=13)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(X, y)
    messages = [str(w.message) for w in record if w.category is ConvergenceWarning]
    assert all("C=100000)" in m and "> tol=1e-10" in m for m in messages)
    for m in messages:
        gap = float(m.split("relative duality gap ")[1].split(" ")[0])
        assert gap > 1e-10
    assert not any("40028" in m or "e+141" in m for m in messages)
