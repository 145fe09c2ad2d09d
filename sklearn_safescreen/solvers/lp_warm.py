r"""The restricted LP-SVM kept in one HiGHS model along the rounds of a solve and the
steps of a path (the warm-started alternative to a cold ``linprog`` per round).

:class:`WarmRestrictedLP` holds the LP of :class:`~..problems.lp_svm.RestrictedLP`
(scaled by :math:`n`) over every feature column and sample row it was ever given, and
is brought to the working sets of each round by changes that keep HiGHS's basis:

* a working feature without a column for its sign gets one (a column joins at 0: the
  basis stays primal feasible);
* a sample that must be a row (its hinge exact) gets one with its slack column
  :math:`\xi_i` (the row's logical is basic: the basis stays dual feasible);
* a feature out of the working set (fixed by screening at this value) keeps its columns
  with bounds :math:`[0,0]`, and they reopen to :math:`[0,M]` when it comes back;
* a sample with a row that is now held at :math:`a_i=s_i` (linear: loss
  :math:`s_i(1-z_i^\top w)`) gets a free slack, :math:`\xi_i\in(-\infty,\infty)`, which
  makes its row an equality in effect, with dual :math:`s_i`; one held at :math:`a_i=0`
  (loss 0) gets a slack of cost 0, which makes its row never binding, with dual 0;
* a sample without a row held at the box enters the feature costs
  :math:`\lambda n-\mathrm{sign}_j(Z_{B,:}^\top s_B)_j`, recomputed each round, as does a
  new :math:`\lambda`;

then HiGHS's simplex re-solves from its basis. Nothing is deleted, so the model's size
is the union of the working sets it has seen (see :attr:`WarmRestrictedLP.size`):
deleting, at each value of a path, the rows and columns outside its initial working
sets (where the basis allowed it) throws away basis information that the next rounds
need again: the rows come back, each re-entry paid in pivots (``doc/benchmarks.md``,
"LP-SVM path: the core against the full LP"; git has the runs).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..problems.lp_svm import LPSVMData
from ._highs_api import HighsLP

INF = np.inf


class WarmRestrictedLP:
    """One growing restricted LP-SVM in a live HiGHS model (see the module).

    Parameters
    ----------
    data : LPSVMData
    tolerance : float
        HiGHS's primal and dual feasibility tolerances (changed by :meth:`solve`).
    """

    def __init__(self, data: LPSVMData, tolerance: float):
        n, d = data.n_samples, data.n_features
        self.data = data
        self.lp = HighsLP(tolerance)
        self.plus_col = np.full(d, -1, dtype=np.intp)
        self.minus_col = np.full(d, -1, dtype=np.intp)
        self.row_of = np.full(n, -1, dtype=np.intp)
        self.slack_of = np.full(n, -1, dtype=np.intp)
        # per HiGHS column: its feature and sign (0 for a slack), its sample (-1 for a
        # feature column), and the cost and bounds last passed to HiGHS
        self.col_feature = np.empty(0, dtype=np.intp)
        self.col_sign = np.empty(0)
        self.col_sample = np.empty(0, dtype=np.intp)
        self.cost = np.empty(0)
        self.lower = np.empty(0)
        self.upper = np.empty(0)
        self.row_sample = np.empty(0, dtype=np.intp)
        #: restricted LPs solved over the model's life
        self.solves = 0

    @property
    def has_plus(self) -> np.ndarray:
        return self.plus_col >= 0

    @property
    def has_minus(self) -> np.ndarray:
        return self.minus_col >= 0

    @property
    def has_row(self) -> np.ndarray:
        return self.row_of >= 0

    @property
    def size(self) -> tuple[int, int]:
        """(rows, columns) of the HiGHS model."""
        return self.lp.n_rows, self.lp.n_cols

    @property
    def iterations(self) -> int:
        """Simplex iterations over the model's life."""
        return self.lp.iterations

    def solve(self, lam: float, plus: np.ndarray, minus: np.ndarray, rows: np.ndarray,
              at_box: np.ndarray, l1_bound: float, tolerance: float
              ) -> tuple[np.ndarray, np.ndarray]:
        """The restricted LP's optimum: the working features ``plus`` (may be positive)
        and ``minus`` (may be negative), the samples ``rows`` (exact hinge), the samples
        ``at_box`` (disjoint from ``rows``) at :math:`a_i=s_i`, every other sample at
        :math:`a_i=0` (full-length masks); features bounded by ``l1_bound``. Returns
        the full-length :math:`w` and :math:`a`."""
        data = self.data
        self._add_columns(np.flatnonzero(plus & ~self.has_plus),
                          np.flatnonzero(minus & ~self.has_minus), l1_bound)
        self._add_rows(np.flatnonzero(rows & ~self.has_row))
        self._update(lam, plus, minus, rows, at_box, l1_bound)
        self.lp.set_tolerance(tolerance)
        x, row_dual = self.lp.solve()
        self.solves += 1
        # a basic column at 0 comes back as a round-off-sized value from the simplex's
        # updates: below HiGHS's primal feasibility tolerance it is 0 (exact zeros are
        # the support; the certificate judges the point returned, whatever it is)
        x = np.where(np.abs(x) <= tolerance, 0.0, x)
        w = np.zeros(data.n_features)
        feat = self.col_sign != 0.0
        np.add.at(w, self.col_feature[feat], self.col_sign[feat] * x[feat])
        a = np.where(at_box, data.s, 0.0)
        if self.lp.n_rows:
            hinge = rows[self.row_sample]
            samples = self.row_sample[hinge]
            a[samples] = np.clip(-row_dual[hinge], 0.0, data.s[samples])
        return w, a

    # -- growth
    def _add_columns(self, plus: np.ndarray, minus: np.ndarray, l1_bound: float) -> None:
        features = np.concatenate([plus, minus])
        if not len(features):
            return
        sign = np.concatenate([np.ones(len(plus)), -np.ones(len(minus))])
        first = self.lp.n_cols
        block = _Compressed.empty(len(features))
        if self.lp.n_rows:
            block = _compressed(_submatrix(self.data, self.row_sample, features), -sign,
                                by="columns")
        k = len(features)
        # the cost is set by _update; bounds open
        self.lp.add_columns(np.zeros(k), np.zeros(k), np.full(k, float(l1_bound)), block)
        index = np.arange(first, first + k)
        self.plus_col[plus] = index[:len(plus)]
        self.minus_col[minus] = index[len(plus):]
        self._append_columns(features, sign, np.full(k, -1), np.zeros(k), np.zeros(k),
                             np.full(k, float(l1_bound)))

    def _add_rows(self, samples: np.ndarray) -> None:
        m = len(samples)
        if not m:
            return
        data = self.data
        # the slacks first (no entries yet), then the rows over every column
        first = self.lp.n_cols
        s = data.s[samples]
        self.lp.add_columns(s, np.zeros(m), np.full(m, INF), _Compressed.empty(m))
        slacks = np.arange(first, first + m)
        self.slack_of[samples] = slacks
        self._append_columns(np.full(m, -1), np.zeros(m), samples, s, np.zeros(m),
                             np.full(m, INF))
        feat_cols = np.flatnonzero(self.col_sign != 0.0)
        r = c = np.empty(0, dtype=np.intp)
        v = np.empty(0)
        if len(feat_cols):
            block = _compressed(_submatrix(data, samples, self.col_feature[feat_cols]),
                                -self.col_sign[feat_cols], by="rows")
            r = np.repeat(np.arange(m), np.diff(block.indptr))
            c, v = feat_cols[block.indices], block.data
        # each row: its entries over the feature columns (increasing HiGHS indices),
        # then its slack (-1), the newest column
        r = np.concatenate([r, np.arange(m)])
        order = np.argsort(r, kind="stable")
        c = np.concatenate([c, slacks])[order]
        v = np.concatenate([v, -np.ones(m)])[order]
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
        self.lp.add_rows(np.full(m, -INF), np.full(m, -1.0), _Compressed(indptr, c, v))
        self.row_of[samples] = np.arange(len(self.row_sample), len(self.row_sample) + m)
        self.row_sample = np.concatenate([self.row_sample, samples])

    def _append_columns(self, feature, sign, sample, cost, lower, upper) -> None:
        self.col_feature = np.concatenate([self.col_feature, feature]).astype(np.intp)
        self.col_sign = np.concatenate([self.col_sign, sign])
        self.col_sample = np.concatenate([self.col_sample, sample]).astype(np.intp)
        self.cost = np.concatenate([self.cost, cost])
        self.lower = np.concatenate([self.lower, lower])
        self.upper = np.concatenate([self.upper, upper])

    # -- costs and bounds of this round
    def _update(self, lam, plus, minus, rows, at_box, l1_bound) -> None:
        data = self.data
        n = data.n_samples
        box_no_row = at_box & ~self.has_row
        lin = (data.correlations(np.where(box_no_row, data.s, 0.0))
               if box_no_row.any() else np.zeros(data.n_features))
        cost = np.empty_like(self.cost)
        lower = np.zeros_like(self.lower)
        upper = np.empty_like(self.upper)
        feat = self.col_sign != 0.0
        j, sign = self.col_feature[feat], self.col_sign[feat]
        cost[feat] = lam * n - sign * lin[j]
        open_ = np.where(sign > 0, plus[j], minus[j])
        upper[feat] = np.where(open_, float(l1_bound), 0.0)
        slack = ~feat
        i = self.col_sample[slack]
        hinge, linear = rows[i], at_box[i]
        cost[slack] = np.where(hinge | linear, data.s[i], 0.0)
        lower[slack] = np.where(linear, -INF, 0.0)
        upper[slack] = INF
        changed = np.flatnonzero(cost != self.cost)
        self.lp.set_costs(changed, cost[changed])
        changed = np.flatnonzero((lower != self.lower) | (upper != self.upper))
        self.lp.set_bounds(changed, lower[changed], upper[changed])
        self.cost, self.lower, self.upper = cost, lower, upper


class _Compressed(NamedTuple):
    """A CSC or CSR block as HiGHS takes it (``indptr``, ``indices``, ``data``), built
    without scipy.sparse, whose constructors check and convert their inputs at every
    call, a fixed cost larger than building a small block itself."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def nnz(self) -> int:
        return len(self.data)

    @classmethod
    def empty(cls, n_major: int) -> _Compressed:
        return cls(np.zeros(n_major + 1, dtype=np.int64), np.empty(0, dtype=np.intp),
                   np.empty(0))


def _compressed(block, scale: np.ndarray, by: str) -> _Compressed:
    """``block * scale`` (``scale`` over its columns; ``block`` dense or scipy sparse)
    compressed by ``"columns"`` (CSC) or ``"rows"`` (CSR), without explicit zeros and
    with sorted indices."""
    if sp.issparse(block):
        block = block @ sp.diags(scale)
        block = sp.csc_matrix(block) if by == "columns" else sp.csr_matrix(block)
        block.eliminate_zeros()
        block.sort_indices()
        return _Compressed(block.indptr.astype(np.int64), block.indices, block.data)
    scaled = np.asarray(block) * scale
    major = scaled.T if by == "columns" else scaled  # one major line per row of this
    line, index = np.nonzero(major)
    indptr = np.zeros(major.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(line, minlength=major.shape[0]), out=indptr[1:])
    return _Compressed(indptr, index, major[line, index])


def _submatrix(data: LPSVMData, rows, cols):
    """:math:`Z_{rows,cols}` (CSR or dense)."""
    if data.sparse:
        return data.Z[rows][:, cols]
    return data.Z[np.ix_(rows, cols)]
