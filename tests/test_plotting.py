"""plot_screening_path: draws the data of a PathResult / RegularizationPathCV, clear
errors without matplotlib or for a wrong object."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import svm_path
from sklearn_safescreen.plotting import plot_screening_path
from sklearn_safescreen.svm import SafeSVC

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=150, n_features=5, random_state=0)


def test_path_result_plot(data, tmp_path):
    X, y = data
    res = svm_path(X, y, kernel="linear", n_values=5)
    ax = plot_screening_path(res)
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), res.values)
    np.testing.assert_allclose(line.get_ydata(), 100 * res.screening_rates)
    np.testing.assert_allclose(ax.time_ax.get_lines()[0].get_ydata(), res.times)
    assert ax.get_xscale() == "log" and "C" in ax.get_title()
    ax.figure.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
    matplotlib.pyplot.close("all")


def test_cv_plot_has_folds_scores_and_best(data):
    X, y = data
    search = RegularizationPathCV(SafeSVC(kernel="linear"), n_values=4, cv=3).fit(X, y)
    ax = plot_screening_path(search, show_time=False, title="t")
    lines = ax.get_lines()
    # 3 faint fold lines, the mean line, the best-value marker
    assert len(lines) == 5 and not hasattr(ax, "time_ax") and ax.get_title() == "t"
    np.testing.assert_allclose(lines[3].get_ydata(),
                               100 * search.screening_rates_.mean(axis=0))
    assert lines[4].get_xdata()[0] == search.best_params_["C"]
    scores = ax.score_ax.get_lines()[0].get_ydata()
    assert np.max(scores) == pytest.approx(search.best_score_)
    matplotlib.pyplot.close("all")


def test_given_axes_and_wrong_object(data):
    plt = matplotlib.pyplot
    X, y = data
    fig, ax = plt.subplots()
    assert plot_screening_path(svm_path(X, y, kernel="linear", n_values=2), ax=ax) is ax
    with pytest.raises(TypeError, match="PathResult"):
        plot_screening_path(SafeSVC())
    plt.close("all")


def test_clear_import_error_without_matplotlib(data, monkeypatch):
    X, y = data
    res = svm_path(X, y, kernel="linear", n_values=2)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_screening_path(res)
