"""Every gap an estimator prints says whether it is relative or absolute (the metric
learner used to print "certificate full gap=4.2e-07" (relative) beside
"dual_gap=1.5e-03" (absolute), neither labelled)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import SafeDoublySparseSVC, SafeDoublySparseSVR, SafeMetricLearner


def _gap_lines(out: str, tag: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(tag) and "gap" in line]


def _labelled(line: str) -> bool:
    """Every 'gap' figure of the line is preceded by 'relative'/'absolute' within its
    phrase, or named rel_gap."""
    for m in re.finditer(r"gap", line):
        before = line[max(0, m.start() - 24):m.start()]
        if not re.search(r"relative|absolute|rel_", before):
            return False
    return True


def test_metric_learner_summary_labels_both_gaps(capsys):
    X, y = load_iris(return_X_y=True)
    ml = SafeMetricLearner(verbose=1).fit(StandardScaler().fit_transform(X), y)
    (line,) = [s for s in capsys.readouterr().out.splitlines() if " done: " in s]
    assert f"absolute dual_gap_={ml.dual_gap_:.3e} (relative " in line
    assert _labelled(line)


@pytest.mark.parametrize("Estimator", [SafeDoublySparseSVC, SafeDoublySparseSVR])
def test_doubly_sparse_line_says_absolute(Estimator, capsys):
    X, y = load_iris(return_X_y=True)
    model = Estimator(verbose=1).fit(X, (y == 0).astype(float))
    (line,) = _gap_lines(capsys.readouterr().out, f"[{Estimator.__name__}]")
    assert f"absolute gap {np.max(model.dual_gap_):.2e}" in line
    assert _labelled(line)


def _every_gap_labelled(out: str) -> list[str]:
    lines = [line for line in out.splitlines() if "gap" in line]
    assert lines
    return [line for line in lines if not re.search(r"(rel_|abs_|relative|absolute)", line)]


@pytest.mark.parametrize("estimator", ["svc", "lad", "metric"])
def test_every_verbose_gap_of_the_engines_and_the_path_is_labelled(estimator, capsys):
    from sklearn_safescreen import SafeLAD, SafeSVC
    from sklearn_safescreen.path import estimator_path

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = {"svc": SafeSVC(verbose=1), "lad": SafeLAD(verbose=1),
             "metric": SafeMetricLearner(verbose=2)}[estimator]
    target = X[:, 0] if estimator == "lad" else y
    estimator_path(model, X, target, n_values=3, verbose=1)
    assert _every_gap_labelled(capsys.readouterr().out) == []


def test_internal_path_steps_name_the_value_the_fit_was_asked_for(capsys):
    """A cold fit walks internal path steps from its critical value up to C: their
    lines say so (a line at C=4.5 read as a fit at the wrong C), the last one is at C."""
    from sklearn.datasets import make_classification

    from sklearn_safescreen import SafeSVC

    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    SafeSVC(kernel="linear", C=100.0, verbose=1).fit(X, y)
    lines = [s for s in capsys.readouterr().out.splitlines() if " screened " in s]
    assert len(lines) >= 2
    *internal, last = lines
    assert all("(internal path step toward C=100)" in s for s in internal)
    assert last.startswith("[SafeSVC] C=100 ") and "internal" not in last
