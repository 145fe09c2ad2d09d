"""The candidates of a search over a regularisation path and other parameters.

:class:`~sklearn_safescreen.model_selection.RegularizationPathCV` lists its candidates
exactly as GridSearchCV lists those of the product grid ``{**param_grid, param_name:
values}``: the functions here build that list (positions from ParameterGrid itself,
never from comparing values), the combinations of the other parameters, and the chains
of combinations that differ only by kernel parameters.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import ParameterGrid

#: The Safe step's parameters that change only the kernel: the dual box of a box-QP
#: problem does not depend on them, so a solution under one setting is a feasible point
#: under another (doc/theory/svm_lad.rst, "Screening across kernel parameters").
KERNEL_PARAMS = ("kernel", "gamma", "degree", "coef0")


def _param_grids(param_grid, param_name: str) -> list[dict]:
    """``param_grid`` as GridSearchCV's ParameterGrid holds it (a list of dicts, each
    checked by ParameterGrid itself); ``[{}]`` (one empty combination) for ``None``."""
    if param_grid is None:
        return [{}]
    grids = ParameterGrid(param_grid).param_grid
    for grid in grids:
        if param_name in grid:
            raise ValueError(f"param_grid contains {param_name!r}, the parameter walked "
                             "as a path; pass its grid as `values`")
    return grids


def _combinations(grids: list[dict]) -> tuple[list[dict], dict]:
    """The other parameters' combinations in ParameterGrid's order, and the key of each
    (``(grid index, index of each value in sorted-name order)``) to its position.

    ParameterGrid's order depends only on the names and the lengths of the lists, so
    walking it over index ranges gives the positions of the values without comparing
    them (a value may be an array or an estimator, which ``==`` cannot identify)."""
    combos, keys = [], {}
    for g, grid in enumerate(grids):
        names = sorted(grid)
        for idx in ParameterGrid({k: range(len(grid[k])) for k in names}) if names \
                else [{}]:
            keys[(g, tuple(idx[k] for k in names))] = len(combos)
            combos.append({k: grid[k][idx[k]] for k in names})
    return combos, keys


def _product_candidates(grids: list[dict], keys: dict, param_name: str,
                        n_values: int) -> tuple[list, list]:
    """The candidates of ``GridSearchCV(estimator, [{**grid, param_name: values} for
    grid in grids])`` in its order, as ``(combination, value index)`` pairs, and
    ``where[c][j]``: the candidate of combination ``c`` at value ``j``."""
    pairs, where = [], [[None] * n_values for _ in keys]
    for g, grid in enumerate(grids):
        names = sorted(grid)
        ranges = {k: range(len(grid[k])) for k in names}
        ranges[param_name] = range(n_values)
        for idx in ParameterGrid(ranges):
            c = keys[(g, tuple(idx[k] for k in names))]
            where[c][idx[param_name]] = len(pairs)
            pairs.append((c, idx[param_name]))
    return pairs, where


def _candidate(combination: dict, param_name: str, value) -> dict:
    """A candidate's parameters with ParameterGrid's key order (sorted names)."""
    params = {**combination, param_name: value}
    return {k: params[k] for k in sorted(params)}


def _chains(grids: list[dict], keys: dict, kernel_names: set[str]) -> list[list[int]]:
    """The combinations grouped into chains that differ only by the parameters in
    ``kernel_names`` (same grid dict, same values of every other parameter), each in
    ParameterGrid order; a combination without kernel parameters is its own chain."""
    groups: dict = {}
    for (g, idx), c in keys.items():
        names = sorted(grids[g])
        other = tuple(i for name, i in zip(names, idx, strict=True)
                      if name not in kernel_names)
        kernel = any(name in kernel_names for name in names)
        groups.setdefault((g, other) if kernel else (g, idx, "alone"), []).append(c)
    return sorted((sorted(chain) for chain in groups.values()), key=lambda ch: ch[0])


def _nearest(values: list, previous: list) -> list[int]:
    """For each value, the index of the previous walk's value nearest to it (in ratio)."""
    prev = np.log(np.array([float(v) for v in previous]))
    return [int(np.argmin(np.abs(prev - np.log(float(v))))) for v in values]
