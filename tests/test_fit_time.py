"""A kernel fit that will take long says so before it starts (LongFitWarning, with the
estimate), and verbose=1 prints progress during the fit (a 300,000-sample RBF SafeSVC
printed nothing for minutes)."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from _svm_models import make_binary

import sklearn_safescreen._fit_time as fit_time
from sklearn_safescreen import LongFitWarning, SafeLAD, SafeSVC


def _regression(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    return X, X @ rng.randn(3) + rng.laplace(size=n)


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_a_kernel_fit_evaluates_the_whole_kernel_at_least_once(Estimator):
    """The estimate's premise: n^2 entries per cold kernel fit is a lower bound."""
    X, y = make_binary(n=400, d=4, seed=40) if Estimator is SafeSVC else _regression(400)
    model = Estimator(kernel="rbf", warm_start=True).fit(X, y)
    assert model._path.paths[0].data.kernel.n_evaluations >= 400**2


def test_the_estimate_scales_with_n_squared_and_the_features():
    e = fit_time.estimate_seconds
    assert e(2000, 1, "rbf", 10) == pytest.approx(4 * e(1000, 1, "rbf", 10))
    assert e(1000, 3, "rbf", 10) == pytest.approx(3 * e(1000, 1, "rbf", 10))
    assert e(1000, 1, "rbf", 500) > e(1000, 1, "rbf", 10)
    assert e(1000, 1, "poly", 10) > e(1000, 1, "rbf", 10)
    # a 300,000 x 10 RBF fit is announced as taking at least 10 minutes
    assert e(300_000, 1, "rbf", 10) > 10 * 60


@pytest.mark.parametrize("Estimator", [SafeSVC, SafeLAD])
def test_long_fit_warns_once_with_the_estimate(Estimator, monkeypatch):
    X, y = make_binary(n=300, d=4, seed=41) if Estimator is SafeSVC else _regression(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongFitWarning)
        Estimator(kernel="rbf").fit(X, y)  # an ordinary fit says nothing
    monkeypatch.setattr(fit_time, "LONG_FIT_SECONDS", 0.0)
    model = Estimator(kernel="rbf", cache_size=0.5, warm_start=True)
    seconds = fit_time.estimate_seconds(300, 1, "rbf", 4)
    with pytest.warns(LongFitWarning) as record:
        model.fit(X, y)
    (w,) = record
    text = str(w.message)
    assert f"with the rbf kernel on 300 samples will take at least about " \
           f"{seconds:.0f} s of CPU time" in text
    assert "9e+04 entries" in text and "does not fit in cache_size=0.5 MB" in text
    assert "verbose=1" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongFitWarning)
        model.set_params(C=2.0).fit(X, y)  # once per data set: not again along a path
        Estimator(kernel="linear").fit(X, y)  # (linear fits are not kernel fits)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_long_fit_warning_names_the_multiclass_tasks(multi_class, monkeypatch):
    """One-vs-one (the default) trains a task per pair of classes on the pair's samples,
    one-vs-rest a task per class on all of them: the warning says which."""
    rng = np.random.RandomState(43)
    X = rng.randn(90, 3)
    y = np.repeat([0, 1, 2], 30)
    X[:, 0] += 2.0 * y
    monkeypatch.setattr(fit_time, "LONG_FIT_SECONDS", 0.0)
    with pytest.warns(LongFitWarning) as record:
        SafeSVC(kernel="rbf", multi_class=multi_class).fit(X, y)
    (w,) = record
    text = str(w.message)
    if multi_class == "ovo":
        assert "on 3 pairs of classes (the largest on 60 samples)" in text
        assert "each pair's kernel matrix" in text and "one-vs-rest" not in text
    else:
        assert "on 90 samples" in text and "for each of 3 one-vs-rest tasks" in text


def test_verbose_prints_progress_during_a_single_fit(monkeypatch, capsys):
    X, y = make_binary(n=120, d=3, seed=42)

    def slow_rbf(A, B):
        time.sleep(0.05)
        d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
        return np.exp(-0.5 * np.maximum(d2, 0.0))

    monkeypatch.setattr(fit_time, "PROGRESS_SECONDS", 0.01)
    SafeSVC(kernel=slow_rbf, screening=None).fit(X, y)
    assert capsys.readouterr().out == ""  # verbose=0: silent
    SafeSVC(kernel=slow_rbf, screening=None, verbose=1).fit(X, y)
    lines = [s for s in capsys.readouterr().out.splitlines() if " fitting: " in s]
    assert lines and all(
        s.startswith("[SafeSVC] C=1 fitting: ") and "kernel entries evaluated" in s
        for s in lines)


def test_progress_line_reports_the_solvers_epochs_gap_and_time_to_tol():
    """The solvers record their epochs and gap at each check (SolveStatus); a progress
    line reads them, and from the second line on estimates the time to tol at the
    geometric rate of the gap so far."""
    from sklearn_safescreen.problems.box_qp import SolveStatus

    status = SolveStatus()
    progress = fit_time.Progress("[SafeSVC] C=1", [], 100, statuses=[status], tol=1e-4)
    assert progress.line(1.0, 0) == "[SafeSVC] C=1 fitting: 1 s elapsed"  # no check yet
    status.record(10, 1e-1)
    assert progress.line(2.0, 0).endswith("epoch 10, relative duality gap 0.1 (tol 0.0001)")
    status.record(20, 1e-2)  # a decade in 2 s: the two decades to tol take about 4 s
    line = progress.line(4.0, 0)
    assert "epoch 20, relative duality gap 0.01" in line and "more at this rate" in line
    assert line.split("about ")[1].startswith("4 s")


def test_a_linear_fit_prints_its_epochs_and_gap_during_the_fit(monkeypatch, capsys):
    """A linear fit has no kernel to count: its progress lines give the solver's epochs
    and relative duality gap (a 2,000,000-sample linear fit printed nothing during its
    step)."""
    rng = np.random.RandomState(0)
    X = rng.randn(4000, 20)
    y = np.where(X @ rng.randn(20) + rng.randn(4000) > 0, 1, 0)
    seen = []
    from sklearn_safescreen.problems import box_qp

    real_record = box_qp.SolveStatus.record

    def slow_record(self, n_iter, rel_gap):
        real_record(self, n_iter, rel_gap)
        seen.append(n_iter)
        time.sleep(0.02)  # the fit lasts long enough for progress lines

    monkeypatch.setattr(box_qp.SolveStatus, "record", slow_record)
    monkeypatch.setattr(fit_time, "PROGRESS_SECONDS", 0.01)
    SafeSVC(kernel="linear", C=10.0, tol=1e-8, verbose=1).fit(X, y)
    lines = [s for s in capsys.readouterr().out.splitlines() if " fitting: " in s]
    assert seen and lines
    assert any("relative duality gap" in s and "epoch" in s for s in lines)
