"""The command line (``python -m sklearn_safescreen``): the default run, every option,
``--plot``, and bad input (one-line error, non-zero exit, never a traceback).

The default run and the error paths go through a real subprocess; the option matrix
calls ``main(argv)`` in-process (the same code, without the interpreter start-up).
"""

from __future__ import annotations

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
    """The per-value rows (lines starting with a number); a value solved in closed form
    on every fold has "closed form" as its screening rate, here one field."""
    lines = [line.replace("closed form", "closed-form") for line in out.splitlines()]
    return [line.split() for line in lines
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
    assert "Done" in res.stderr  # progress
    assert "Traceback" not in res.stderr


def test_help_explains_everything():
    res = run_cli("--help")
    assert res.returncode == 0
    for option in ("--dataset", "--estimator", "--values", "--grid", "--n-values",
                   "--stop", "--eps", "--cv", "--scoring", "--n-jobs", "--no-compare",
                   "--plot", "--kernel", "--screening", "--tol", "--max-samples",
                   "--scale", "--quiet", "LIBSVM", *DATASETS):
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
]


@pytest.mark.parametrize("argv, message", [BAD[1], BAD[7], BAD[8]])
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
    assert "data.svm, 120 x 8, sparse" in out
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
    """SafeLAD / SafeMetricLearner are built by other engineers: run them when present,
    otherwise a one-line error."""
    module = {"lad": "lad", "metric": "metric_learning"}[estimator]
    try:
        __import__(f"sklearn_safescreen.{module}")
        present = True
    except ImportError:
        present = False
    argv = ["--estimator", estimator, "--n-values", "3", "--cv", "3", "--no-compare",
            "--quiet"]
    if estimator == "metric":
        argv += ["--dataset", "iris", "--max-samples", "60"]
    code, out, err = run_main(capsys, *argv)
    if present:
        assert code == 0, err
        assert len(table(out)) == 3
    else:
        assert code == 1 and "not available" in err and err.count("\n") == 1


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
