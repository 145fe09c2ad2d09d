"""The candidates of a search over a regularisation path and other parameters.

:class:`~sklearn_safescreen.model_selection.RegularizationPathCV` lists its candidates
exactly as GridSearchCV lists those of the product grid ``{**param_grid, param_name:
values}``: the functions here build that list (positions from ParameterGrid itself,
never from comparing values), the combinations of the other parameters, and the chains
of combinations that differ only by kernel parameters, and gathers them in a
:class:`SearchSpace` (:func:`search_space`) together with the values each combination
walks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from .path import _grid

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


@dataclass(frozen=True)
class SearchSpace:
    """What a search walks and how its fits map to GridSearchCV's candidates.

    Attributes
    ----------
    combinations : list of dict
        The other parameters' combinations in ParameterGrid order (``[{}]`` without a
        ``param_grid``): one walk per combination and fold.
    candidates : list of dict
        The candidates' parameters in ``cv_results_`` order.
    walks : list of list
        Per combination, the values walked, in walk order (most to least regularised).
    walk_candidates : list of list of int
        Per combination, the candidate of each value walked (walk order).
    criticals : list
        Per combination, the critical value of a generated grid (None for explicit
        values).
    chains : list of list of int
        The combinations walked one after the other on a fold (:func:`_chains`).
    """

    combinations: list[dict]
    candidates: list[dict]
    walks: list[list]
    walk_candidates: list[list[int]]
    criticals: list
    chains: list[list[int]]

    def positions(self) -> list[tuple[int, int]]:
        """Per candidate (``cv_results_`` order), its combination and its position in
        that combination's walk."""
        where = [None] * len(self.candidates)
        for c, cands in enumerate(self.walk_candidates):
            for k, i in enumerate(cands):
                where[i] = (c, k)
        return where


def _walk_values(estimator, X, y, values, combos: list[dict], grid_kw: dict):
    """Per combination, the values walked (walk order) and the critical value.

    Explicit ``values``: the user's objects (so that ``best_params_`` holds the
    user's own value, as in GridSearchCV), the same for every combination, with the
    indices that sort them into walk order. A generated grid: computed per combination
    (the critical value depends on the other parameters, e.g. gamma), already in walk
    order. Returns ``(user values or None, walks or walk order, critical values)``."""
    if values is not None and not isinstance(values, str):
        grid = _grid(estimator, X, y, values, **grid_kw)
        # the user's own objects, as GridSearchCV's ParameterGrid yields them (an
        # array's elements are NumPy scalars there, not Python numbers)
        user = list(np.atleast_1d(values) if isinstance(values, np.ndarray) else values)
        return user, grid.order, [None] * len(combos)
    walks, criticals = [], []
    for combo in combos:
        est = clone(estimator).set_params(**clone(combo, safe=False)) if combo \
            else estimator
        grid = _grid(est, X, y, values, **grid_kw)
        walks.append([float(v) for v in grid.values[grid.order]])
        criticals.append(grid.critical)
    return None, walks, criticals


def search_space(estimator, X, y, *, param_name: str, prefix: str, values,
                 param_grid, n_values: int, eps: float, stop: float | None,
                 kernel_seeds: bool, fit_params: dict) -> SearchSpace:
    """The candidates of a search over ``param_name`` walked as a path and the other
    parameters of ``param_grid``, as :class:`SearchSpace`.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (a Safe estimator or a Pipeline containing one).
    X, y : array-like
        The whole training set, on which a generated grid is computed.
    param_name, prefix : str
        The parameter walked and its Safe step's Pipeline prefix.
    values, param_grid, n_values, eps, stop, kernel_seeds
        As in :class:`~sklearn_safescreen.model_selection.RegularizationPathCV`.
    fit_params : dict
        The estimator's routed fit parameters (their ``sample_weight`` weighs the
        critical value).

    Returns
    -------
    space : SearchSpace
    """
    grids = _param_grids(param_grid, param_name)
    combos, keys = _combinations(grids)
    grid_kw = dict(n_values=n_values, eps=eps, stop=stop, param_name=param_name,
                   sample_weight=fit_params.get(prefix + "sample_weight"))
    user, walks, criticals = _walk_values(estimator, X, y, values, combos, grid_kw)
    if user is not None:  # explicit values: GridSearchCV's product grid
        order = walks
        pairs, where = _product_candidates(grids, keys, param_name, len(user))
        candidates = [_candidate(combos[c], param_name, user[j]) for c, j in pairs]
        walks = [[user[j] for j in order] for _ in combos]
        walk_cands = [[where[c][j] for j in order] for c in range(len(combos))]
    else:  # generated: each combination's own values, combination by combination
        candidates, walk_cands = [], []
        for combo, walk in zip(combos, walks, strict=True):
            walk_cands.append(list(range(len(candidates), len(candidates) + len(walk))))
            candidates += [_candidate(combo, param_name, v) for v in walk]
    kernel = {prefix + k for k in KERNEL_PARAMS} if kernel_seeds else set()
    return SearchSpace(combos, candidates, walks, walk_cands, criticals,
                       _chains(grids, keys, kernel))
