"""The mutation check's targets still exist: each mutation's text occurs exactly once in
its file, so moving or rewording the code it mutates fails here instead of leaving the
mutation unable to apply (``tools/mutation_check.py`` would then report it, but only
when someone runs it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "mutation_check.py"


def _mutations():
    if not TOOL.exists():  # an installed package without the repository's tools
        return []
    spec = importlib.util.spec_from_file_location("mutation_check", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_check", module)  # (its dataclasses look it up)
    spec.loader.exec_module(module)
    return list(module.MUTATIONS)


@pytest.mark.parametrize("mutation", _mutations(), ids=lambda m: m.name)
def test_each_mutation_applies_exactly_once(mutation):
    text = (ROOT / mutation.path).read_text()
    assert text.count(mutation.old) == 1, (
        f"{mutation.name}: its text occurs {text.count(mutation.old)} times in "
        f"{mutation.path}; re-point it at the code it is meant to break")
