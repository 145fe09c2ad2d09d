"""The package's layers (doc/developers/architecture.rst): imports run one way only.

Reads every module's imports (module level and inside functions; for the compiled
modules, their ``import`` and ``cimport`` lines) and fails on an import from a lower layer
to a higher one, or on a circle of modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_safescreen"

#: Bottom to top; a module may import its own layer and the ones below.
LAYERS = [
    {"_utils"},
    {"problems"},
    {"screening"},
    {"solvers"},
    {"engine"},
    {"_multiclass", "base", "_validation", "_fit_time", "_box_qp_base", "svm", "lad",
     "_svc_tasks",
     "metric_learning", "_metric_learn_api", "_metric_inputs", "_metric_report",
     "datasets", "_doubly_sparse_base", "_sparse_linear_base", "doubly_sparse", "lp_svm",
     "lp_svm_exact_path"},
    {"path", "grid", "_search_grid", "_search_walk", "_search_report"},
    {"model_selection"},
    {"plotting", "__main__", "_cli", "__init__"},
]


def _modules() -> dict[str, Path]:
    """Dotted names (without the package) of every module, e.g. ``engine.box_qp``."""
    out = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyx")]:
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"module {module!r} is in no layer: add it to LAYERS (and to the "
                         "architecture page)")


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``module`` imports (resolved to known module names)."""
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    if module == "__init__":
        base = []
    found = set()
    if path.suffix == ".pyx":
        return _cython_imports(module, path, base, known)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("sklearn_safescreen"):
                target = node.module[len("sklearn_safescreen."):]
            else:
                continue
            candidates = [f"{target}.{a.name}" if target else a.name for a in node.names]
            for name in candidates:
                if name in known:
                    found.add(name)
                    break
            else:
                found.add(target)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("sklearn_safescreen."):
                    found.add(a.name[len("sklearn_safescreen."):])
    return {m for m in found if m in known and m != module}


#: ``from ..problems._eigh_fast cimport (a, b)`` or ``from . import x`` in a .pyx file.
_CYTHON_FROM = re.compile(r"^\s*from\s+(\.+)([\w.]*)\s+c?import\s+\(?\s*([\w, ]*)", re.M)


def _cython_imports(module: str, path: Path, base: list[str], known: set[str]) -> set[str]:
    """The package modules a compiled module imports or cimports (relative imports)."""
    found = set()
    for dots, name, names in _CYTHON_FROM.findall(path.read_text()):
        anchor = base[:len(base) - (len(dots) - 1)] if len(dots) > 1 else base
        target = ".".join([*anchor, *(name.split(".") if name else [])])
        for alias in (a.strip() for a in names.split(",") if a.strip()):
            if f"{target}.{alias}" in known:
                found.add(f"{target}.{alias}")
        found.add(target)
    return {m for m in found if m in known and m != module}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, p, set(modules)) for m, p in modules.items()}


def test_every_module_is_in_a_layer(graph):
    for module in graph:
        _layer(module)


def test_imports_run_down_the_layers(graph):
    upward = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
              for m, targets in graph.items() for t in sorted(targets)
              if _layer(t) > _layer(m)]
    assert not upward, "\n".join(upward)


def test_no_circle_of_imports(graph):
    state: dict[str, int] = {}  # 1: on the current walk, 2: done

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circle = trail[trail.index(nxt):] + [nxt]
                raise AssertionError("circle of imports: " + " -> ".join(circle))
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_check_sees_a_real_edge(graph):
    """The reader resolves relative imports (so the tests above cannot pass vacuously)."""
    assert "engine.certify" in graph["engine.box_qp"]
    assert "problems.box_qp" in graph["screening.svm"]
    assert "svm" in graph["__init__"]
    # compiled modules: the solver loop cimports the problem kernels and a rule kernel
    assert {"problems._eigh_fast", "problems._triplet_fast",
            "screening._triplet_fast"} <= graph["solvers._spg_fast"]
