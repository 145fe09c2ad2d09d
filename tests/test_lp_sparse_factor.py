"""The sparse factor of the LP-SVM homotopy's basis (``_lp_sparse_factor``) against
dense solves with the basis it stands for: random column exchanges (features and
slacks in and out, the updates over the touched samples and the borders of samples
reaching them), with and without refactorisations in between; the updates' length; its
count-based refactorisation rule; and, along a path on sparse data, a lost basis
repaired by a refactorisation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _lp_svm_models import make_problem, solve_full
from sklearn_safescreen.solvers._lp_sparse_factor import SparseFactor
from sklearn_safescreen.solvers._lp_zmatrix import ZMatrix

from sklearn_safescreen import PrecisionWarning, lp_svm_path
from sklearn_safescreen import lp_svm_exact_path as path_module
from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.solvers.lp_homotopy import PathFollower, make_core


class DenseBasis:
    """The basis the factor stands for, column by column: slot s holds a feature
    ``("f", j, sign)`` (the column ``sign * Z[:, j]``) or a slack ``("s", i, sign)``
    (``sign * e_i``)."""

    def __init__(self, Z):
        self.Z = Z.toarray()
        self.n, self.d = Z.shape
        self.slots = [("s", i, 1.0) for i in range(self.n)]

    def column(self, what):
        kind, index, sign = what
        if kind == "f":
            return sign * self.Z[:, index]
        col = np.zeros(self.n)
        col[index] = sign
        return col

    def matrix(self):
        return np.column_stack([self.column(w) for w in self.slots])

    def features(self):
        return {w[1] for w in self.slots if w[0] == "f"}

    def basic_slacks(self):
        return {w[1] for w in self.slots if w[0] == "s"}

    def refactorise(self, factor):
        """Refactorise ``factor`` at this basis (the samples whose slack is out as the
        margin set, paired with the features in slot order) and renumber the slots as
        the factor does."""
        feats = [(w[1], w[2]) for w in self.slots if w[0] == "f"]
        slack_sign = {w[1]: w[2] for w in self.slots if w[0] == "s"}
        E = np.array(sorted(set(range(self.n)) - set(slack_sign)), dtype=np.intp)
        A = np.array([j for j, _ in feats], dtype=np.intp)
        sgn = np.array([s for _, s in feats])
        above = np.array([slack_sign.get(i, 1.0) < 0 for i in range(self.n)])
        factor.refactorise(A, E, sgn, above)
        self.slots = [("s", i, -1.0 if above[i] else 1.0) for i in range(self.n)]
        for l, e in enumerate(E):
            self.slots[e] = ("f", int(A[l]), float(sgn[l]))


def _entering(basis, rng):
    """A random column not in the basis: a feature (either sign) or the slack of a
    sample whose slack is out (either sign)."""
    out_slacks = sorted(set(range(basis.n)) - basis.basic_slacks())
    free = sorted(set(range(basis.d)) - basis.features())
    if out_slacks and (not free or rng.random() < 0.4):
        return ("s", int(rng.choice(out_slacks)), float(rng.choice([-1.0, 1.0])))
    return ("f", int(rng.choice(free)), float(rng.choice([-1.0, 1.0])))


def _check_solves(factor, basis, rng):
    B = basis.matrix()
    b = rng.standard_normal(basis.n)
    x = b.copy()
    factor.ftran_py(x)
    ref = np.linalg.solve(B, b)
    assert np.abs(x - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())
    c1, c0 = rng.standard_normal(basis.n), rng.standard_normal(basis.n)
    y1, y0 = c1.copy(), c0.copy()
    factor.btran2_py(y1, y0)
    for y, c in ((y1, c1), (y0, c0)):
        ref = np.linalg.solve(B.T, c)
        assert np.abs(y - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())
    # a row of the inverse, for a slot in S and one in F (a slack alone in its slot)
    touched = np.flatnonzero([w[0] == "f" or factor.is_touched(i)
                              for i, w in enumerate(basis.slots)])
    others = np.setdiff1d(np.arange(basis.n), touched)
    for pool in (touched, others):
        if len(pool):
            r = int(rng.choice(pool))
            ref = np.linalg.solve(B.T, np.eye(basis.n)[r])
            row = factor.btran_unit_py(r)
            assert np.abs(row - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())


def _exchange(factor, basis, rng):
    """One random exchange: a column in, a slot with a large pivot out; the entering
    column's solve checked before it is pushed."""
    what = _entering(basis, rng)
    a = basis.column(what)
    xs = a.copy()
    factor.ftran_py(xs)
    np.testing.assert_allclose(basis.matrix() @ xs, a, atol=1e-9)
    big = np.flatnonzero(np.abs(xs) >= 0.3 * np.abs(xs).max())
    r = int(rng.choice(big))
    factor.push_py(r, xs, what[1] if what[0] == "f" else -1, what[2])
    basis.slots[r] = what


def _problem(seed, n=40, d=30, density=0.15):
    rng = np.random.default_rng(seed)
    Z = sp.random(n, d, density=density, random_state=rng, format="csr",
                  data_rvs=lambda m: rng.uniform(0.5, 2.0, m) * rng.choice([-1, 1], m))
    return Z, rng


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("refactor_every", [None, 7])
def test_solves_match_the_dense_basis_after_random_exchanges(seed, refactor_every):
    """Sixty random exchanges from w = 0 (every sample's slack in its own slot): after
    each, FTRAN and both BTRANs equal dense solves with the basis; with
    ``refactor_every``, the factor is rebuilt from the current basis every few
    exchanges (a fresh M0, S back to the margin set) and the updates go on from it."""
    Z, rng = _problem(seed)
    factor = SparseFactor(ZMatrix(Z, Z.tocsc()), min(Z.shape) + 1)
    basis = DenseBasis(Z)
    borders = 0
    for step in range(60):
        if refactor_every and step and step % refactor_every == 0:
            basis.refactorise(factor)
            assert factor.n_eta == 0 and factor.n_touched == factor.k0
            _check_solves(factor, basis, rng)
        touched = factor.n_touched
        _exchange(factor, basis, rng)
        borders += factor.n_touched - touched
        _check_solves(factor, basis, rng)
    assert borders > 5 and len(basis.features()) > 3


@pytest.mark.parametrize("seed", range(2))
def test_solves_with_a_dense_trailing_block(seed):
    """A margin matrix whose LU fills (dense data, a large support): the factors'
    trailing block is kept dense and solved by BLAS; the solves still equal dense solves
    with the basis, after refactorisations and exchanges."""
    Z, rng = _problem(10 + seed, n=80, d=70, density=0.6)
    factor = SparseFactor(ZMatrix(Z, Z.tocsc()), 71)
    basis = DenseBasis(Z)
    E = rng.choice(80, 40, replace=False)
    A = rng.choice(70, 40, replace=False)
    for e, j in zip(E, A, strict=True):
        basis.slots[e] = ("f", int(j), float(rng.choice([-1.0, 1.0])))
    for i in rng.choice(np.setdiff1d(np.arange(80), E), 10, replace=False):
        basis.slots[i] = ("s", int(i), -1.0)
    dense_tails = 0
    for step in range(40):
        if step % 10 == 0:
            basis.refactorise(factor)
            assert factor.k0 >= 40
            dense_tails += factor.j0 <= factor.k0 - 16
            _check_solves(factor, basis, rng)
        _exchange(factor, basis, rng)
        _check_solves(factor, basis, rng)
    assert dense_tails == 4


def test_updates_are_as_long_as_the_touched_samples():
    """On many samples with a small support, the updates stay over the touched samples:
    far fewer entries than one update per exchange as long as the number of samples."""
    Z, rng = _problem(5, n=400, d=60, density=0.05)
    factor = SparseFactor(ZMatrix(Z, Z.tocsc()), 61)
    basis = DenseBasis(Z)
    for _ in range(12):
        _exchange(factor, basis, rng)
    _check_solves(factor, basis, rng)
    assert factor.n_eta == 12 and factor.n_touched <= 12
    assert factor.eta_nnz <= 12 * (factor.n_touched + Z.getnnz(axis=1).max())
    assert factor.eta_nnz < Z.shape[0]


def test_refactorisation_rule_counts_the_updates():
    """``full`` depends on the updates' counts only: never right after a
    refactorisation, never with ``eta_fill = inf``, and, with the default, once the
    updates read per pivot exceed their average with a refactorisation spread over
    them."""
    Z, rng = _problem(6, n=60, d=50, density=0.2)
    runs = []
    for fill in (1.0, np.inf):
        factor = SparseFactor(ZMatrix(Z, Z.tocsc()), 61)
        factor.eta_fill = fill
        basis = DenseBasis(Z)
        decisions = []
        for _ in range(400):
            _exchange(factor, basis, np.random.default_rng(len(decisions)))
            decisions.append(factor.full())
        runs.append(decisions)
        assert factor.eta_work >= factor.eta_nnz
    assert any(runs[0]) and not any(runs[1])
    first = runs[0].index(True)
    assert all(runs[0][first:])
    basis.refactorise(factor)
    factor.eta_fill = 1.0
    assert not factor.full()


def test_bad_arguments_are_refused():
    Z, _ = _problem(7)
    factor = SparseFactor(ZMatrix(Z, Z.tocsc()), 10)
    with pytest.raises(ValueError, match="one entry per sample"):
        factor.ftran_py(np.zeros(3))
    with pytest.raises(ValueError, match="one entry per sample"):
        factor.btran2_py(np.zeros(Z.shape[0]), np.zeros(3))
    with pytest.raises(ValueError, match="slot"):
        factor.push_py(Z.shape[0], np.zeros(Z.shape[0]), 0, 1.0)
    with pytest.raises(ValueError, match="sparse Z"):
        dense = Z.toarray()
        SparseFactor(ZMatrix(dense, dense), 10)


def test_path_on_sparse_data_with_many_refactorisations():
    """Along a path on sparse data (the factor refactorised by its rule and by the
    follower's cadence), each breakpoint's support solves the LP: its objective equals
    HiGHS's."""
    X, y, _ = make_problem(31, n=70, d=90, sparse=True, density=0.15)
    data = LPSVMData(X, y)
    core = make_core(data, True, factor="lu")
    follower = PathFollower(core, data, refactor_every=10)
    points = list(follower.run(1e-3 * data.lambda_max()))
    assert follower.n_refactor > 5 and follower.drift_events == 0
    yy = np.where(y == np.unique(y)[1], 1.0, -1.0)
    for p in points[::7] + points[-1:]:
        w = np.zeros(X.shape[1])
        w[p.support] = p.values
        mine = p.lam * np.abs(w).sum() + np.maximum(
            1.0 - yy * (X @ w), 0.0).mean()
        opt = solve_full(X, yy, np.ones(len(yy)), p.lam)
        assert abs(mine - opt.value) <= 1e-9 * opt.value


@pytest.mark.parametrize("seed", range(3))
def test_updated_dual_lines_equal_solved_ones_along_a_path(seed):
    """With the sparse factor, each pivot updates the dual lines along a row of the
    basis inverse instead of solving for them: after every breakpoint of a path (the
    factor rarely refactorised, so that long runs of updates build up), the lines the
    core holds equal the lines solved from scratch with its factor."""
    X, y, _ = make_problem(40 + seed, n=60, d=80, sparse=True, density=0.15)
    data = LPSVMData(X, y)
    core = make_core(data, True, factor="lu")
    core.eta_fill = np.inf
    follower = PathFollower(core, data, refactor_every=10**9)
    updated = 0
    for _ in follower.run(1e-3 * data.lambda_max()):
        (u, v), (u0, v0) = core.dual_lines_check()
        scale = max(1.0, np.abs(u0).max(initial=0.0), np.abs(v0).max(initial=0.0))
        assert np.abs(u - u0).max(initial=0.0) <= 1e-9 * scale
        assert np.abs(v - v0).max(initial=0.0) <= 1e-9 * scale
        updated += core.n_eta > 0 and core.k > 0
    assert follower.n_refactor <= 1 and updated > 50


class _CorruptValues:
    """A core (sparse factor) whose primal values are corrupted after the 15th pivot."""

    def __init__(self, core):
        self.__dict__.update(core=core, calls=0)

    def __getattr__(self, name):
        return getattr(self.core, name)

    def __setattr__(self, name, value):
        setattr(self.core, name, value)

    def pivot(self, *args):
        out = self.core.pivot(*args)
        self.__dict__["calls"] += 1
        if self.calls == 15:
            self.core.t_arr *= 1.0 + 1e-3
        return out


def test_lost_values_on_sparse_data_are_refactorised(monkeypatch):
    """With the sparse factor, a basis whose values were corrupted mid-path fails the
    breakpoint's gap check, is refactorised (a PrecisionWarning says so) and the path
    is the clean one."""
    X, y, _ = make_problem(32, n=50, d=40, sparse=True, density=0.2)
    clean = lp_svm_path(X, y)
    assert make_core(LPSVMData(X, y), True).lu_mode
    monkeypatch.setattr(path_module, "make_core",
                        lambda data, c: _CorruptValues(make_core(data, c)))
    with pytest.warns(PrecisionWarning, match="refactorised"):
        path = lp_svm_path(X, y)
    np.testing.assert_allclose(path[0], clean[0], rtol=1e-12)
