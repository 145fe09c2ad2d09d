"""The command line (``python -m sklearn_safescreen``): the default run, every option,
``--plot``, and bad input (one-line error, non-zero exit, never a traceback).

The default run and the error paths go through a real subprocess; the option matrix
calls ``main(argv)`` in-process (the same code, without the interpreter start-up).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, make_classification

from sklearn_safescreen.__main__ import DATASETS, main


def run_cli(*argv, timeout=120):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "sklearn_safescreen", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)


def table(out: str) -> list[list[str]]:
    """The per-value rows (lines starting with a number)."""
    return [line.split() for line in out.splitlines()
            if re.match(r"^\s*\d[\d.e+-]*\s+(\d+\.\d%|closed-form)", line)]


@pytest.fixture
def svm_file(tmp_path):
    X, y = make_classification(n_samples=120, n_features=8, random_state=0)
    path = tmp_path / "data.svm"
    dump_svmlight_file(X, y, str(path))
    return str(path)


# ------------------------------------------------------------------ subprocess ---
def test_default_run():
    res = run_cli(timeout=600)  # the benchmark's 20000 x 50 data and GridSearchCV
    assert res.returncode == 0, res.stderr
    rows = table(res.stdout)
    assert len(rows) == 20
    values = [float(r[0]) for r in rows]
    assert values == sorted(values) and values[-1] == 10
    assert rows[0][1] == "closed-form"  # C_min
    assert all(0 <= float(r[1].rstrip("%")) <= 100 for r in rows[1:])
    best = re.search(r"best C = ([\d.e+-]+), CV score ([\d.]+)", res.stdout)
    assert best and float(best.group(2)) == max(float(r[3]) for r in rows)
    assert re.search(r"GridSearchCV: +[\d.]+ s .* same best C: yes", res.stdout)
    assert "make_classification(20000 x 50" in res.stdout
    # progress: one line per finished (combination, fold) walk
    assert len(re.findall(r"^\[CV \d/5; walk \d/5\] END C=", res.stdout, re.M)) == 5
    assert "Traceback" not in res.stderr


def test_help_explains_everything():
    res = run_cli("--help")
    assert res.returncode == 0
    for option in ("--dataset", "--estimator", "--values", "--grid", "--n-values",
                   "--stop", "--eps", "--cv", "--scoring", "--n-jobs", "--no-compare",
                   "--plot", "--kernel", "--screening", "--tol", "--max-samples",
                   "--scale", "--quiet", "LIBSVM", "dsvc", "simultaneous", *DATASETS):
        assert option in res.stdout, option


BAD = [
    (["--n-values", "0"], "--n-values"),
    (["--values", "1,abc"], "--values"),
    (["--values", "1,-2"], "--values"),
    (["--cv", "1"], "--cv"),
    (["--eps", "3"], "--eps"),
    (["--tol", "nan"], "--tol"),
    (["--kernel", "sigmoid"], "invalid choice"),
    (["--unknown"], "unrecognized"),
    (["--dataset", "/nonexistent/file.svm"], "neither a shipped dataset"),
    (["--plot", "/nonexistent/dir/p.png"], "does not exist"),
    (["--estimator", "metric", "--screening", "IT"], "screening"),
    (["--plot", "figure.xyz"], "unknown image format"),
    (["--estimator", "dsvc", "--screening", "IT"], "screening"),
    (["--values", "-1,2"], "--values must be finite numbers > 0"),
    (["--values=-1,2"], "--values must be finite numbers > 0"),
    (["--stop", "-3"], "--stop must be a finite number > 0"),
    (["--estimator", "metric", "--kernel", "rbf"],
     "--kernel is for the kernel machines (--estimator svc or lad); --estimator metric"),
    (["--estimator", "dsvc", "--gamma", "0.5"], "--gamma is for the kernel machines"),
    (["--dataset", "iris", "--scoring", "roc_auc"],
     "--scoring roc_auc needs a binary target, and the data has 3 classes"),
    (["--dataset", "iris", "--scoring", "roc_auc_ovr"],
     "--scoring roc_auc_ovr cannot score SafeSVC(kernel='linear') on this data: SafeSVC "
     "has none of the following attributes: predict_proba"),
    (["--dataset", "iris", "--scoring", "rocauc"], "did you mean roc_auc"),
    (["--dataset", "diabetes", "--scoring", "accuracy"], "--scoring accuracy cannot score "
                                                         "SafeLAD on this data"),
    (["--grid", "gamma="], "expected NAME=V1,V2,... with at least one value"),
    (["--grid", "linear"], "expected geometric, eps-path or NAME=V1,V2,..."),
    (["--grid", "geometric", "--grid", "eps-path"], "give one of geometric and eps-path"),
    (["--grid", "gamma=1", "--grid", "gamma=2"], "--grid gamma= is given twice"),
    (["--dataset", "iris", "--kernel", "rbf", "--grid", "C=1,2"],
     "is the path's own parameter; give its values with --values"),
    (["--dataset", "iris", "--kernel", "rbf", "--grid", "gama=1"],
     "the estimator has no parameter 'gama'"),
    (["--dataset", "iris", "--grid", "gamma=0.1,1"],
     "--grid gamma= is a parameter of --kernel rbf or poly"),
    (["--dataset", "iris", "--kernel", "rbf", "--gamma", "1", "--grid", "gamma=0.1,1"],
     "either with --gamma or with --grid gamma="),
]


@pytest.mark.parametrize("argv, message", [BAD[1], BAD[7], BAD[8], BAD[13], BAD[18]])
def test_bad_arguments_one_line_error(argv, message):
    res = run_cli(*argv, "--no-compare", "--quiet")
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("argv, message", BAD)
def test_bad_arguments_in_process(capsys, argv, message):
    try:
        code = main([*argv, "--no-compare", "--quiet"])
    except SystemExit as exc:  # argparse errors exit(2)
        code = exc.code
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and message in err, err


def test_unreadable_file(tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_bytes(b"this is not\x00 a libsvm file\n1 2:x\n")
    res = run_cli("--dataset", str(bad), "--no-compare")
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0 and "cannot read" in res.stderr
    assert "Traceback" not in res.stderr


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "path.png"
    res = run_cli("--dataset", "breast_cancer", "--n-values", "5", "--no-compare",
                  "--quiet", "--plot", str(png))
    assert res.returncode == 0, res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert f"plot written to {png}" in res.stdout


# ------------------------------------------------------------------ in-process ---
def run_main(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_svmlight_file_and_explicit_values(capsys, svm_file):
    code, out, err = run_main(capsys, "--dataset", svm_file, "--values", "10,0.01,0.1,1",
                              "--cv", "3", "--no-compare", "--quiet")
    assert code == 0, err
    assert "data.svm, 120 x 8, svmlight file, 100.0% non-zero" in out
    assert [float(r[0]) for r in table(out)] == [0.01, 0.1, 1.0, 10.0]
    assert err == ""  # --quiet: no progress


@pytest.mark.parametrize("name", ["iris", "wang_toy3", "ogawa_toy", "synthetic"])
def test_shipped_datasets(capsys, name):
    code, out, err = run_main(capsys, "--dataset", name, "--n-values", "4", "--cv", "3",
                              "--max-samples", "300", "--no-compare", "--quiet")
    assert code == 0, err
    assert len(table(out)) == 4 and DATASETS[name].split(": ")[1].split(",")[0] in out


def test_rbf_kernel_rule_scale_scoring_and_jobs(capsys):
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--kernel", "rbf",
                              "--gamma", "0.05", "--screening",
                              "BT1", "--scale", "--scoring", "roc_auc", "--n-jobs", "2",
                              "--values", "0.1,1,10", "--cv", "3", "--max-samples", "200",
                              "--no-compare")
    assert code == 0, err
    assert "SafeSVC(kernel='rbf')" in out and "screening=BT1" in out
    assert "roc_auc" in out and len(table(out)) == 3


def test_eps_path_grid_and_stop(capsys):
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--grid", "eps-path",
                              "--eps", "0.05", "--stop", "0.1", "--cv", "3",
                              "--no-compare", "--quiet")
    assert code == 0, err
    values = [float(r[0]) for r in table(out)]
    assert len(values) >= 3 and values[-1] == pytest.approx(0.1, rel=1e-3)
    assert np.all(np.diff(values) > 0)


def test_screening_none(capsys):
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--screening", "none",
                              "--n-values", "3", "--no-compare", "--quiet")
    assert code == 0, err
    # without screening nothing is screened except the closed form at C_min
    assert [r[1] for r in table(out)][1:] == ["0.0%", "0.0%"]


@pytest.mark.parametrize("estimator", ["lad", "metric"])
def test_other_estimators(capsys, estimator):
    """SafeLAD / SafeMetricLearner from the command line. Both modules are part of the
    package: an import error fails here (it is not a reason to skip)."""
    module = {"lad": "lad", "metric": "metric_learning"}[estimator]
    importlib.import_module(f"sklearn_safescreen.{module}")
    argv = ["--estimator", estimator, "--n-values", "3", "--cv", "3", "--no-compare",
            "--quiet"]
    if estimator == "metric":
        argv += ["--dataset", "iris", "--max-samples", "60"]
    code, out, err = run_main(capsys, *argv)
    assert code == 0, err
    assert len(table(out)) == 3


def test_doubly_sparse_classifier(capsys):
    """SafeDoublySparseSVC from the command line: a path of alpha from its critical
    value down (the most regularised value first), screened by default."""
    importlib.import_module("sklearn_safescreen.doubly_sparse")
    code, out, err = run_main(capsys, "--estimator", "dsvc", "--dataset", "breast_cancer",
                              "--n-values", "4", "--cv", "3", "--no-compare", "--quiet")
    assert code == 0, err
    assert "SafeDoublySparseSVC on breast cancer" in out
    values = [float(r[0]) for r in table(out)]
    assert len(values) == 4 and values == sorted(values, reverse=True)
    assert re.search(r"best alpha = [\d.e+-]+, CV score [\d.]+", out)


@pytest.mark.parametrize("screening", ["features", "none"])
def test_doubly_sparse_classifier_on_a_sparse_file(capsys, tmp_path, screening):
    """A sparse svmlight file stays sparse (the estimator takes sparse input), and the
    doubly sparse rules are offered by --screening."""
    rng = np.random.RandomState(0)
    X = rng.rand(90, 40) * (rng.rand(90, 40) < 0.2)
    path = tmp_path / "sparse.svm"
    dump_svmlight_file(X, np.where(X[:, :5].sum(axis=1) > 0.2, 1, -1), str(path))
    code, out, err = run_main(capsys, "--estimator", "dsvc", "--dataset", str(path),
                              "--screening", screening, "--n-values", "3", "--cv", "3",
                              "--no-compare", "--quiet")
    assert code == 0, err
    assert "SafeDoublySparseSVC on sparse.svm" in out and "densified" not in out
    assert f"screening={screening}" in out and len(table(out)) == 3
    if screening == "none":  # nothing screened except the closed form at the top
        assert [r[1] for r in table(out)][1:] == ["0.0%", "0.0%"]


def test_single_class_file_is_an_error(capsys, tmp_path):
    path = tmp_path / "one.svm"
    dump_svmlight_file(np.eye(6), np.ones(6), str(path))
    code, out, err = run_main(capsys, "--dataset", str(path), "--no-compare", "--quiet")
    assert code == 1 and "single class" in err and err.count("\n") == 1


@pytest.mark.parametrize("screening", ["none", "IT"])
def test_closed_form_is_not_called_screened(capsys, screening):
    """At C_min every fold's fit has the closed-form solution: the table says so rather
    than "100.0%" screened (which --screening none cannot have done)."""
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--screening",
                              screening, "--n-values", "3", "--no-compare", "--quiet")
    assert code == 0, err
    rates = [r[1] for r in table(out)]
    assert rates[0] == "closed-form" and "100.0%" not in out
    if screening == "none":
        assert rates[1:] == ["0.0%", "0.0%"]


# ------------------------------------------------- a new user's first runs ---
def test_svmlight_file_is_described_by_its_density(capsys, tmp_path):
    """The format is always read as a sparse matrix; the description gives the data's
    actual density instead of calling every file "sparse"."""
    rng = np.random.RandomState(0)
    X = rng.randn(80, 20) * (rng.rand(80, 20) < 0.1)
    path = tmp_path / "sparse.svm"
    dump_svmlight_file(X, np.repeat([0, 1], 40), str(path))
    code, out, err = run_main(capsys, "--dataset", str(path), "--values", "0.1,1",
                              "--cv", "3", "--no-compare", "--quiet")
    assert code == 0, err
    density = np.count_nonzero(X) / X.size
    assert f"sparse.svm, 80 x 20, svmlight file, {density:.1%} non-zero" in out


def test_metric_learner_on_an_svmlight_file_is_densified(capsys, svm_file):
    code, out, err = run_main(capsys, "--dataset", svm_file, "--estimator", "metric",
                              "--n-values", "3", "--cv", "3", "--no-compare", "--quiet")
    assert code == 0, err
    assert "SafeMetricLearner + 3-NN on data.svm" in out and ", densified" in out
    assert len(table(out)) == 3


def test_densifying_beyond_memory_is_refused_with_the_figure(capsys, svm_file,
                                                             monkeypatch):
    from sklearn_safescreen._utils import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 4096)
    code, out, err = run_main(capsys, "--dataset", svm_file, "--estimator", "metric",
                              "--scale", "--no-compare", "--quiet")
    assert code == 1 and err.count("\n") == 1, err
    assert "needs dense input" in err and "120 x 8" in err and "GiB" in err
    assert "--max-samples" in err


def test_tiny_subset_is_stratified(capsys):
    """A random 10 of breast cancer's 569 samples left one class with a single sample:
    its fold's fits failed and the table was all nan, with a "best C"."""
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--max-samples", "10",
                              "--n-values", "4", "--no-compare", "--quiet")
    assert code == 0, err
    assert "stratified subset of 10" in out and "nan" not in out
    assert all(np.isfinite(float(r[3])) for r in table(out))


def test_class_with_a_single_sample_is_refused(capsys):
    code, out, err = run_main(capsys, "--dataset", "iris", "--max-samples", "4",
                              "--no-compare", "--quiet")
    assert code == 1 and err.count("\n") == 1
    assert "single sample" in err and "--max-samples subset" in err


def test_nan_scores_exit_non_zero_with_the_reason(capsys):
    """ROC AUC is undefined on a test fold of one class: no best value can be chosen."""
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--max-samples", "10",
                              "--scoring", "roc_auc", "--n-values", "3", "--no-compare",
                              "--quiet")
    assert code == 1
    assert "best C" not in out
    last = err.strip().splitlines()[-1]
    assert "error: 3 of 3 values have no CV score (nan)" in last and "--cv" in last


def test_regression_dataset_uses_safelad(capsys):
    code, out, err = run_main(capsys, "--dataset", "diabetes", "--n-values", "3", "--cv",
                              "3", "--no-compare", "--quiet")
    assert code == 0, err
    assert "using --estimator lad (SafeLAD)" in out and "SafeLAD on diabetes" in out
    assert "SafeSVC" not in out.split("\n", 1)[1]


@pytest.mark.parametrize("estimator", ["svc", "metric", "dsvc"])
def test_classifier_on_a_regression_target_is_refused(capsys, tmp_path, estimator):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    path = tmp_path / "reg.svm"
    dump_svmlight_file(X, X[:, 0] * 3.7 + 0.1, str(path))
    for dataset in ("diabetes", str(path)):
        code, out, err = run_main(capsys, "--dataset", dataset, "--estimator", estimator,
                                  "--no-compare", "--quiet")
        assert code == 1 and err.count("\n") == 1
        assert "regression" in err and "--estimator lad" in err
    code, out, err = run_main(capsys, "--dataset", str(path), "--n-values", "3", "--cv",
                              "3", "--no-compare", "--quiet")
    assert code == 0 and "SafeLAD on reg.svm" in out, err


def test_eps_path_lists_the_stop_value_once(capsys):
    code, out, err = run_main(capsys, "--dataset", "ogawa_toy", "--grid", "eps-path",
                              "--eps", "1e-3", "--stop", "1", "--cv", "3", "--no-compare",
                              "--quiet")
    assert code == 0, err
    values = [r[0] for r in table(out)]
    assert values[-1] == "1" and values.count("1") == 1


def test_different_best_value_is_explained_as_a_tie(capsys):
    """Fits solved to a loose --tol: GridSearchCV and the path may pick different best
    values (here they do); the line says why, with the scores that show the tie."""
    code, out, err = run_main(capsys, "--dataset", "wang_toy3", "--tol", "1e-1",
                              "--n-values", "20", "--cv", "3", "--quiet")
    assert code == 0, err
    line = re.search(r"max score difference ([\d.e+-]+), same best C: (.*)", out)
    assert line, out
    if line.group(2) != "yes":
        assert line.group(2) == "no, a tie within tolerance"
        text = " ".join(out.split("same best C: no", 1)[1].split())
        scores = re.search(r"score ([\d.]+) and ([\d.]+) in GridSearchCV, ([\d.]+) and "
                           r"([\d.]+) in the path", text)
        g_best, g_other, p_other, p_best = map(float, scores.groups())
        diff = float(line.group(1))
        assert g_best >= g_other and p_best >= p_other
        assert max(g_best - g_other, p_best - p_other) <= 2 * diff + 2e-4
        assert "--tol=0.1" in text and "tie" in text


def test_kernel_applies_to_safelad(capsys):
    """--kernel was a SafeSVC option only: SafeLAD ignored it silently."""
    code, out, err = run_main(capsys, "--dataset", "diabetes", "--kernel", "rbf",
                              "--n-values", "3", "--cv", "3", "--no-compare", "--quiet")
    assert code == 0, err
    assert "SafeLAD(kernel='rbf') on diabetes" in out


def test_a_failing_score_warns_once_with_its_cause(capsys):
    """A score that fails in some folds only (ROC AUC on a one-class test fold) passes the
    check before the run; its warnings were printed once per fit, cut before their
    cause ("Details:" and a traceback on the next lines)."""
    from sklearn_safescreen.__main__ import _one_line_warning

    shown: set = set()
    text = ("Scoring failed. The score on this train-test partition for these parameters "
            "will be set to nan. Details: \nTraceback (most recent call last):\n  ...\n"
            "ValueError: Only one class is present in y_true.")
    for _ in range(3):
        _one_line_warning(UserWarning(text), UserWarning, "f.py", 1, _shown=shown)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.rstrip().endswith("Details: ValueError: Only one class is present in "
                                 "y_true."), err


def test_lp_svm_from_the_command_line(capsys):
    """SafeLPSVC from the command line: a path of alpha from alpha_max down, the
    doubly sparse rules' names offered by --screening."""
    code, out, err = run_main(capsys, "--estimator", "lpsvc", "--dataset", "breast_cancer",
                              "--n-values", "4", "--cv", "3", "--no-compare", "--quiet",
                              "--scale")
    assert code == 0, err
    assert "SafeLPSVC on breast cancer" in out
    values = [float(r[0]) for r in table(out)]
    assert len(values) == 4 and values == sorted(values, reverse=True)
    assert re.search(r"best alpha = [\d.e+-]+, CV score [\d.]+", out)



def test_grid_of_another_parameter_equals_grid_search(capsys):
    """--grid gamma=...: one walk per (gamma, fold), one table per gamma, and the same
    scores and best candidate as GridSearchCV over the product grid."""
    code, out, err = run_main(capsys, "--dataset", "iris", "--kernel", "rbf", "--grid",
                              "gamma=0.1,1", "--values", "0.1,1,10", "--cv", "3")
    assert code == 0, err
    assert "3 values of C from 0.1 to 10 x 2 combinations of gamma, 3 folds" in out
    assert len(re.findall(r"^\[CV \d/3; walk \d/6\] END gamma=", out, re.M)) == 6
    assert "gamma=0.1:" in out.splitlines() and "gamma=1:" in out.splitlines()
    assert len(table(out)) == 6
    assert re.search(r"^best C = [\d.e+-]+, gamma = [\d.]+, CV score", out, re.M)
    line = re.search(r"max score difference ([\d.e+-]+), same best candidate: yes", out)
    assert line and float(line.group(1)) < 1e-3


def test_grid_generated_per_combination_under_a_pipeline(capsys):
    """Without --values the grid of C is generated per gamma (from each critical value);
    under --scale the short name gamma is the Pipeline step's."""
    code, out, err = run_main(capsys, "--dataset", "breast_cancer", "--scale", "--kernel",
                              "rbf", "--grid", "gamma=0.01,0.1", "--grid",
                              "class_weight=None,balanced", "--n-values", "3", "--cv",
                              "2", "--quiet")
    assert code == 0, err
    assert "C: a geometric grid per combination x 4 combinations of gamma, class_weight" \
        in out
    rows = table(out)
    assert len(rows) == 12 and sum(r[1] == "closed-form" for r in rows) == 4
    assert "same best candidate: yes" in out
