"""A HiGHS linear program kept alive between solves, through the HiGHS bindings that
scipy bundles.

Why a private scipy module: ``scipy.optimize.linprog`` solves every LP from scratch (it
takes no starting basis), while a path of LP-SVMs is piecewise linear in
:math:`\\lambda` and its restricted LPs only grow: kept in one HiGHS instance, a column
added keeps the basis primal feasible, a row added keeps it dual feasible, a new
:math:`\\lambda` changes costs only, and the simplex continues from the last basis
(few pivots per value where the support changes little, more where it grows fastest:
``doc/benchmarks.md``, "LP-SVM path: the core against the full LP").
HiGHS's own Python API has that, and scipy ships it (since scipy 1.15) as
``scipy.optimize._highspy._core._Highs``, the class ``highspy.Highs`` derives from.
It is not scipy's public API, so every use of it is in this module, which relies on:
``_Highs()``, ``setOptionValue``, ``addCols`` and ``addRows`` (CSC/CSR arrays, int32
indices), ``changeColsCost``, ``changeColsBounds``,
``getBasis`` and ``setBasis`` (a fresh factorisation), ``run``, ``getModelStatus``,
``modelStatusToString``, ``getSolution`` (``col_value``, ``row_dual``),
``getInfo().simplex_iteration_count``, ``clearSolver`` and the ``HighsStatus`` and
``HighsModelStatus`` enumerations. :func:`highs_core` returns None where the import
fails (an older scipy, or a later one that moved it); the solver then falls back to
``linprog``.

Sign convention (as in ``linprog``, whose ``ineqlin.marginals`` are HiGHS's row duals):
the dual of a row :math:`r^\\top x\\le u` of a minimisation is :math:`\\le0` where the
row is active.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

import numpy as np

#: Where scipy keeps the HiGHS bindings.
CORE_MODULE = "scipy.optimize._highspy._core"
#: HiGHS's ``simplex_strategy`` value for the primal simplex.
SIMPLEX_PRIMAL = 4


@lru_cache(maxsize=1)
def highs_core():
    """The HiGHS bindings module, or None when this scipy does not ship it (or ships an
    incompatible one)."""
    try:
        core = importlib.import_module(CORE_MODULE)
    except ImportError:
        return None
    needed = ("_Highs", "HighsStatus", "HighsModelStatus")
    if not all(hasattr(core, name) for name in needed):
        return None
    return core


def highs_available() -> bool:
    """Whether a persistent HiGHS model can be made (see the module)."""
    return highs_core() is not None


class HighsSolveError(RuntimeError):
    """HiGHS did not return an optimal solution of an LP that has one."""


class HighsLP:
    """One HiGHS LP (minimisation, ``lower <= A x <= upper`` rows, bounded columns) that
    grows by columns and rows, changes costs and bounds, and is re-solved from its last
    basis by the simplex method.

    Parameters
    ----------
    tolerance : float
        HiGHS's primal and dual feasibility tolerances.
    """

    def __init__(self, tolerance: float):
        core = highs_core()
        if core is None:
            raise ImportError(f"{CORE_MODULE} is not available in this scipy")
        self._core = core
        self._h = core._Highs()
        self._check(self._h.setOptionValue("output_flag", False), "setOptionValue")
        # the primal simplex: a new lambda changes costs and a new column joins at
        # 0, both keep the basis primal feasible, so the primal simplex continues from
        # it where the dual simplex would first have to repair dual feasibility
        # (doc/benchmarks.md, "LP-SVM path: the core against the full LP"; git has the
        # runs)
        for name, value in (("presolve", "off"), ("solver", "simplex"),
                            ("simplex_strategy", SIMPLEX_PRIMAL), ("threads", 1)):
            self._check(self._h.setOptionValue(name, value), "setOptionValue")
        self.tolerance = None
        self.set_tolerance(tolerance)
        self.n_cols = 0
        self.n_rows = 0
        self.iterations = 0
        # the iteration count at the last fresh factor (-1: none yet)
        self._fresh_at = -1

    def set_tolerance(self, tolerance: float) -> None:
        if tolerance == self.tolerance:
            return
        for name in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
            self._check(self._h.setOptionValue(name, float(tolerance)), "setOptionValue")
        self.tolerance = tolerance

    # -- growth
    def add_columns(self, cost, lower, upper, matrix) -> None:
        """Append columns: ``matrix`` is their CSC block over the current rows."""
        k = len(cost)
        if not k:
            return
        self._check(self._h.addCols(
            k, _f64(cost), _f64(lower), _f64(upper), int(matrix.nnz),
            _i32(matrix.indptr[:-1]), _i32(matrix.indices), _f64(matrix.data)),
            "addCols")
        self.n_cols += k

    def add_rows(self, lower, upper, matrix) -> None:
        """Append rows: ``matrix`` is their CSR block over the current columns."""
        m = len(lower)
        if not m:
            return
        self._check(self._h.addRows(
            m, _f64(lower), _f64(upper), int(matrix.nnz), _i32(matrix.indptr[:-1]),
            _i32(matrix.indices), _f64(matrix.data)), "addRows")
        self.n_rows += m

    # -- changes
    def set_costs(self, index, cost) -> None:
        if len(index):
            self._check(self._h.changeColsCost(len(index), _i32(index), _f64(cost)),
                        "changeColsCost")

    def set_bounds(self, index, lower, upper) -> None:
        if len(index):
            self._check(self._h.changeColsBounds(len(index), _i32(index), _f64(lower),
                                                 _f64(upper)), "changeColsBounds")

    def refactor(self) -> None:
        """Have the next solve start by factoring its basis afresh (the basis is passed
        back to HiGHS as a new one) rather than from the factor updated pivot after
        pivot: where the certificate asks for more accuracy, the duals of a fresh
        factor are the accurate ones. Nothing to do when no pivot was made since the
        last fresh factor (the factor of a dense basis costs seconds)."""
        if self.iterations == self._fresh_at:
            return
        basis = self._h.getBasis()
        if basis.valid:
            self._check(self._h.setBasis(basis), "setBasis")
            self._fresh_at = self.iterations

    # -- solving
    def solve(self) -> tuple[np.ndarray, np.ndarray]:
        """Solve from the current basis; returns the column values and the row duals.
        A solve that ends in anything but optimality is retried once from scratch
        (the basis dropped), then raises :class:`HighsSolveError`."""
        status = self._run()
        if status != self._core.HighsModelStatus.kOptimal:
            self._h.clearSolver()
            status = self._run()
        if status != self._core.HighsModelStatus.kOptimal:
            raise HighsSolveError(
                f"HiGHS ended a restricted LP ({self.n_rows} rows, {self.n_cols} "
                f"columns) with status {self._h.modelStatusToString(status)!r}; the LP "
                "is feasible and bounded by construction, so this is a numerical "
                "failure")
        sol = self._h.getSolution()
        return (np.asarray(sol.col_value, dtype=np.float64),
                np.asarray(sol.row_dual, dtype=np.float64))

    def _run(self):
        run_status = self._h.run()
        self.iterations += int(self._h.getInfo().simplex_iteration_count)
        if run_status == self._core.HighsStatus.kError:
            return None
        return self._h.getModelStatus()

    def _check(self, status, call: str) -> None:
        if status == self._core.HighsStatus.kError:
            raise HighsSolveError(f"HiGHS refused {call} (status {status})")


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _i32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)
