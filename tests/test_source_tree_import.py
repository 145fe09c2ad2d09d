"""Importing the package from a source tree whose compiled modules are not built (Python
started in the repository after a plain ``pip install .``) names the cause and the two
ways out instead of failing on a missing module deep inside."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import sklearn_safescreen

PACKAGE = Path(sklearn_safescreen.__file__).parent


def test_a_source_tree_without_its_compiled_modules_says_how_to_fix_it(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "sklearn_safescreen",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.cpp",
                                                  "__pycache__"))
    done = subprocess.run([sys.executable, "-c", "import sklearn_safescreen"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "ImportError: sklearn_safescreen is imported from" in done.stderr
    assert "pip install -e ." in done.stderr
    assert str(tmp_path) in done.stderr
