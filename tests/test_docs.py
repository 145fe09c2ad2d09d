"""The documentation: it builds without warnings, and the names it gives exist.

The build needs the documentation packages, which the ``test`` extra installs: without
them the build test fails (it is not skipped).
"""

import ast
import importlib
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sklearn_safescreen

ROOT = Path(__file__).resolve().parents[1]
DOC, EXAMPLES = ROOT / "doc", ROOT / "examples"

# Offline, intersphinx reports every inventory it cannot fetch (one multi-line warning
# each); those are the only warnings a build may give.
_INTERSPHINX_HEAD = re.compile(
    r"failed to reach any of the inventories|intersphinx inventory .* not fetchable"
)
_INTERSPHINX_ISSUE = re.compile(r"intersphinx inventory .* not fetchable")
_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE):")


def _problems(log: str) -> list[str]:
    """Sphinx's warnings and errors, each with its continuation lines."""
    records = []
    for line in log.splitlines():
        if _PROBLEM.search(line):
            records.append([line])
        elif records and line.strip():
            records[-1].append(line)
    return ["\n".join(record) for record in records]


def _is_intersphinx_offline(record: str) -> bool:
    head, *issues = record.splitlines()
    return bool(_INTERSPHINX_HEAD.search(head)) and all(
        _INTERSPHINX_ISSUE.search(issue) for issue in issues
    )


def test_problems_parser_keeps_only_intersphinx_offline():
    log = (
        "WARNING: failed to reach any of the inventories with the following issues:\n"
        "intersphinx inventory 'https://numpy.org/doc/stable/objects.inv' not fetchable "
        "due to <class 'requests.exceptions.ConnectionError'>: ...\n"
        "/doc/api.rst:3: WARNING: undefined label: 'fit' [ref.ref]\n"
        "/pkg/m.py:docstring of m.f:4: ERROR: Unexpected indentation. [docutils]\n"
    )
    problems = _problems(log)
    assert len(problems) == 3
    assert [_is_intersphinx_offline(p) for p in problems] == [True, False, False]


def test_sphinx_build_has_no_warnings(tmp_path):
    # Copies of doc/ and examples/: the build writes generated pages next to its sources,
    # and concurrent test runs must not share them.
    ignore = shutil.ignore_patterns("_build", "generated", "auto_examples",
                                    "sg_execution_times.rst")
    shutil.copytree(DOC, tmp_path / "doc", ignore=ignore)
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    # autodoc documents the package these tests import, wherever it comes from
    package_root = str(Path(sklearn_safescreen.__file__).resolve().parents[1])
    env = dict(os.environ, NO_COLOR="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [package_root,
                                                        os.environ.get("PYTHONPATH")])))
    # plot_gallery=0: the examples are rendered, not run (the gallery run takes minutes)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-D", "plot_gallery=0",
           str(tmp_path / "doc"), str(tmp_path / "html")]
    build = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    log = build.stdout + build.stderr
    assert build.returncode == 0, f"sphinx-build failed:\n{log}"
    problems = [p for p in _problems(log) if not _is_intersphinx_offline(p)]
    assert not problems, "sphinx-build warnings:\n" + "\n".join(problems)


# A fully qualified reference to this package, in any Sphinx role, with or without an
# explicit title: :class:`~sklearn_safescreen.X`, :func:`title <sklearn_safescreen.m.f>`.
_QUALIFIED_REF = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|obj|data|exc|mod):"
    r"`(?:[^`<]*<)?[~.]?(sklearn_safescreen(?:\.\w+)*)>?`"
)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            fields = getattr(obj, "__dataclass_fields__", {})
            if attr in fields:  # a dataclass field without a default
                obj = fields[attr]
            elif hasattr(obj, attr):
                obj = getattr(obj, attr)
            else:
                return False
        return True
    return False


def _documentation_sources():
    yield from sorted(DOC.rglob("*.rst"))
    yield from sorted(DOC.rglob("*.md"))
    yield from sorted(EXAMPLES.glob("*.py"))
    yield from sorted((ROOT / "sklearn_safescreen").rglob("*.py"))


def test_qualified_references_name_existing_objects():
    # Sphinx leaves an unresolved Python reference as plain text without a warning, so a
    # name that does not exist would go unnoticed by the build.
    skip = {"_build", "generated", "auto_examples"}
    broken = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _documentation_sources()
        if not skip.intersection(path.relative_to(ROOT).parts)
        for name in _QUALIFIED_REF.findall(path.read_text(encoding="utf-8"))
        if not _resolves(name)
    ]
    assert not broken, "references to objects that do not exist:\n" + "\n".join(broken)


@pytest.mark.parametrize("name, exists", [
    ("sklearn_safescreen.RegularizationPathCV", True),
    ("sklearn_safescreen.path.svm_path", True),
    ("sklearn_safescreen.ScreeningEvent.rule", True),
    ("sklearn_safescreen.path.RegularizationPathCV", False),
    ("sklearn_safescreen.no_such_module.f", False),
])
def test_resolves(name, exists):
    assert _resolves(name) is exists


def test_doubly_sparse_example_runs_on_the_public_api(monkeypatch):
    """The doubly sparse gallery example runs (it is small enough for the test suite),
    reaches no private name of the package, and draws its three panels."""
    path = EXAMPLES / "plot_doubly_sparse_screening_rates.py"
    tree = ast.parse(path.read_text())
    private = sorted({node.attr for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and not node.attr.startswith("__")})
    assert private == []
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    try:
        runpy.run_path(str(path), run_name="__main__")
        assert len(plt.gcf().axes) == 3
    finally:
        plt.close("all")


README = ROOT / "README.md"


def _fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def test_readme_is_short_with_one_marked_test_command_that_ci_reads():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert text.count("<!-- ci: test command") == 1
    after = text[text.index("<!-- ci: test command"):]
    block = _fenced(after, "bash")[0]
    assert after.split("\n", 1)[1].startswith("```bash\n")  # the block right below it
    assert "pip install" in block and "pytest" in block
    # .ci/run reads that block rather than a copy of it
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ci: test command" in ci and "pytest" not in ci


def test_readme_quick_start_runs_as_pasted(capsys):
    blocks = _fenced(README.read_text(), "python")
    assert len(blocks) == 1
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "{'C': " in out and "screened" in out
