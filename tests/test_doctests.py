"""The examples in the package's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import sklearn_safescreen

MODULES = sorted(m.name for m in pkgutil.walk_packages(sklearn_safescreen.__path__,
                                                       "sklearn_safescreen.")
                 if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False):
        for test in finder.find(module, name):
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


def test_the_examples_are_found():
    """The finder sees the estimators' examples (so the test above cannot pass empty)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = [t for t in finder.find(importlib.import_module("sklearn_safescreen.lad"))
             if t.examples]
    assert found
