r"""The elastic-net smoothed-hinge SVM and smoothed :math:`\varepsilon`-insensitive SVR.

Both doubly sparse models (Shibagaki et al. 2016) solve

.. math::

    \min_{w\in\mathbb R^d}\ P_\lambda(w) = \lambda\Big(\|w\|_1 + \frac\beta2\|w\|_2^2\Big)
    + \frac1n\sum_{i=1}^n c_i\,h\big(z_i(x_i^\top w)\big),

with :math:`c_i > 0` the sample weights and :math:`h` the smoothed hinge of width
:math:`\gamma`: :math:`h(z) = 0` for :math:`z \le 0`, :math:`z^2/(2\gamma)` for
:math:`0 < z < \gamma`, :math:`z - \gamma/2` beyond. The classifier has
:math:`z_i(t) = 1 - y_i t` (:math:`y_i = \pm1`), the regressor
:math:`z_i(t) = |t - y_i| - \varepsilon`. The dual is

.. math::

    \max_\alpha\ D_\lambda(\alpha) = \frac1n\sum_i\Big(y_i\alpha_i
    - \frac{\gamma}{2c_i}\alpha_i^2 - \varepsilon|\alpha_i|\Big)
    - \frac{\lambda}{2\beta}\sum_j\Big(\Big[\frac{|X_{:j}^\top\alpha|}{\lambda n}-1
    \Big]_+\Big)^2

over :math:`y_i\alpha_i \in [0, c_i]` (classifier, :math:`\varepsilon = 0`) or
:math:`\alpha_i\in[-c_i, c_i]` (regressor). Any :math:`w` gives the feasible dual point
:math:`\alpha_i(w) = -c_i h'(z_i)\,\partial z_i/\partial t`, and any :math:`\alpha` the
primal point :math:`w(\alpha) = \mathrm{ST}(X^\top\alpha/(\lambda n), 1)/\beta`; the
optimum is the pair where the two agree (``doc/theory/doubly_sparse.rst``).

This module evaluates (objectives, duality gaps with a bound of their rounding error,
the critical :math:`\lambda_{\max}`) and builds the **reduced problem** left after
screening: features proven zero removed, samples proven at :math:`\alpha_i = 0`
removed, samples proven at the end of their box folded into a constant linear term.
It solves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ._doubly_sparse_fast import shrink_csc

HINGE = "hinge"
EPSILON_INSENSITIVE = "epsilon_insensitive"

#: Machine epsilon, the unit of the rounding-error bounds.
EPS = np.finfo(np.float64).eps


def smoothed_hinge(z: np.ndarray, gamma: float) -> np.ndarray:
    """:math:`h(z)`: 0 below 0, :math:`z^2/(2\\gamma)` on :math:`(0, \\gamma)`,
    :math:`z - \\gamma/2` above."""
    zc = np.clip(z, 0.0, gamma)
    return zc * (np.maximum(z, 0.0) - 0.5 * zc) / gamma


@dataclass
class DoublySparseData:
    """A training set of a doubly sparse model, in the layouts the rules and the
    solver read.

    Parameters
    ----------
    X : ndarray of shape (n, d) or sparse matrix
        Design matrix (intercept column included, if any), converted once: dense input
        to Fortran order, sparse input to CSC (sorted indices). Everything reads
        columns (the coordinate descent, the feature rules); rows are only ever needed
        through products :math:`Xw` and norms, which the column layout gives, so no CSR
        copy is kept.
    y : ndarray of shape (n,)
        ``+-1`` (classifier) or real targets (regressor).
    weights : ndarray of shape (n,)
        Positive sample weights :math:`c_i` (zero-weight samples are removed by the
        caller: they do not enter the problem).
    loss : {"hinge", "epsilon_insensitive"}
    gamma : float
        Smoothing width :math:`\\gamma > 0`.
    epsilon : float, default=0.0
        Insensitivity of the regressor.
    """

    X: np.ndarray | sp.spmatrix
    y: np.ndarray
    weights: np.ndarray
    loss: str
    gamma: float
    epsilon: float = 0.0

    @cached_property
    def row_nnz(self) -> np.ndarray:
        """Stored entries per row (counted once)."""
        if self.sparse:
            return np.bincount(self.X.indices, minlength=self.n_samples)
        return np.full(self.n_samples, self.n_features)

    def __post_init__(self):
        self.X = as_column_layout(self.X)
        self.y = np.ascontiguousarray(self.y, dtype=np.float64)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        self.row_sq, self.col_sq_c, self.max_nnz = _norms(self.X, self.weights)

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def hinge(self) -> bool:
        return self.loss == HINGE

    # -- the two maps between primal and dual
    def margins(self, w: np.ndarray) -> np.ndarray:
        """:math:`t = Xw`."""
        return _dense(self.X @ w)

    def dual_point(self, t: np.ndarray) -> np.ndarray:
        """The feasible dual point :math:`\\alpha(w)` from the margins :math:`t = Xw`."""
        return dual_point(t, self.y, self.weights, self.loss, self.gamma, self.epsilon)

    def correlations(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`X^\\top\\alpha`."""
        return _dense(self.X.T @ alpha)

    def lambda_max(self) -> float:
        """The smallest :math:`\\lambda` at which :math:`w^* = 0`:
        :math:`\\|X^\\top\\alpha(0)\\|_\\infty / n` (with the :math:`1/n` of the averaged
        loss)."""
        s = self.correlations(self.dual_point(np.zeros(self.n_samples)))
        return float(np.abs(s).max(initial=0.0)) / self.n_samples

    def zero_weight_columns(self) -> np.ndarray:
        """Columns that are zero on every sample (their optimal weight is 0)."""
        return self.col_sq_c == 0.0


def dual_point(t, y, c, loss, gamma, epsilon):
    """:math:`\\alpha_i = -c_i h'(z_i) \\partial z_i/\\partial t` (see the module)."""
    if loss == HINGE:
        return c * y * np.clip((1.0 - y * t) / gamma, 0.0, 1.0)
    u = t - y
    return -c * np.sign(u) * np.clip((np.abs(u) - epsilon) / gamma, 0.0, 1.0)


def loss_terms(t, y, c, loss, gamma, epsilon):
    """:math:`c_i h(z_i(t_i))`."""
    z = 1.0 - y * t if loss == HINGE else np.abs(t - y) - epsilon
    return c * smoothed_hinge(z, gamma)


def dual_terms(alpha, y, c, gamma, epsilon):
    """:math:`y_i\\alpha_i - \\gamma\\alpha_i^2/(2c_i) - \\varepsilon|\\alpha_i|`
    (``epsilon`` is 0 for the classifier, whose :math:`y_i\\alpha_i \\ge 0`)."""
    return y * alpha - (0.5 * gamma) * alpha * alpha / c - epsilon * np.abs(alpha)


def elastic_net(w, beta):
    """:math:`\\|w\\|_1 + \\beta\\|w\\|^2/2`."""
    return float(np.abs(w).sum() + 0.5 * beta * (w @ w))


def elastic_net_conjugate(s, lam, beta, n):
    """:math:`\\lambda\\psi^*(s/(\\lambda n))` summed over the entries of ``s``."""
    excess = np.maximum(np.abs(s) / (lam * n) - 1.0, 0.0)
    return float(0.5 * lam / beta * (excess @ excess))


@dataclass
class Gap:
    """A duality gap with its parts and a bound of its rounding error.

    ``gap`` is :math:`P - D` as computed; ``error`` bounds how far the exact gap of the
    same pair can be above it (summation errors of the objectives and the errors of
    the products :math:`Xw`, :math:`X^\\top\\alpha` they use). ``safe`` is
    :math:`\\max(\\mathrm{gap}, 0) + \\mathrm{error}`, what the balls are built on.
    ``s`` is :math:`X^\\top\\alpha` (plus the fixed samples' part, in a reduced
    problem) and ``s_error`` bounds its rounding error per entry; ``t_error`` bounds
    that of the margins.
    """

    primal: float
    dual: float
    s: np.ndarray
    s_error: np.ndarray
    t_error: np.ndarray
    error: float
    alpha: np.ndarray  # the dual point of the pair

    @property
    def gap(self) -> float:
        return self.primal - self.dual

    @property
    def safe(self) -> float:
        return max(self.gap, 0.0) + self.error


def product_error(nnz: int, norms: np.ndarray, other_norm: float) -> np.ndarray:
    """Bound of the rounding error of inner products :math:`a^\\top b` computed by
    summing at most ``nnz`` terms: :math:`(nnz + 2)\\,\\epsilon\\,\\|a\\|\\|b\\|`
    (Cauchy-Schwarz bounds :math:`\\sum|a_k b_k|`)."""
    return (nnz + 2) * EPS * norms * other_norm


def duality_gap(X, y, c, w, t, lam, beta, loss, gamma, epsilon, n, row_sq,
                col_sq_c, max_nnz, offset=None, kappa=0.0, alpha=None, s=None,
                offset_error=0.0) -> Gap:
    """The duality gap of :math:`(w, \\alpha)` on rows and columns ``X``, with the
    constant part of fixed samples (``offset`` added to :math:`X^\\top\\alpha`,
    ``kappa`` to both objectives; see :class:`ReducedProblem`). ``alpha`` must be
    feasible; the default is :math:`\\alpha(w)`. ``s`` is :math:`X^\\top\\alpha`
    (plus ``offset``) when the caller has it; ``offset_error`` bounds the rounding
    error of ``offset`` itself.

    ``t`` must be ``X @ w`` freshly computed: the balls assume the margins of ``w``.
    """
    if alpha is None:
        alpha = dual_point(t, y, c, loss, gamma, epsilon)
    if s is None:
        s = _dense(X.T @ alpha)
        if offset is not None:
            s = s + offset
    lt = loss_terms(t, y, c, loss, gamma, epsilon)
    dt = dual_terms(alpha, y, c, gamma, epsilon)
    pen = lam * elastic_net(w, beta)
    conj = elastic_net_conjugate(s, lam, beta, n)
    lin = 0.0 if offset is None else float(offset @ w) / n
    primal = pen + (float(lt.sum()) + kappa) / n - lin
    dual = (float(dt.sum()) + kappa) / n - conj
    # rounding: the products t = Xw and s = X^T alpha, then the sums
    w_norm = float(np.sqrt(w @ w))
    a_norm_c = float(np.sqrt((alpha * alpha / c).sum()))  # ||alpha|| in the 1/c metric
    t_error = product_error(max_nnz, np.sqrt(row_sq), w_norm)
    s_error = product_error(max_nnz, np.sqrt(col_sq_c), a_norm_c)
    if offset is not None:
        s_error = s_error + 4 * EPS * np.abs(offset) + offset_error
    # the loss is 1-Lipschitz in z times c_i; psi* is (1/beta)-smooth with slope |w(s)|
    w_of_s = np.maximum(np.abs(s) / (lam * n) - 1.0, 0.0) / beta
    from_products = (float(c @ t_error) + float(w_of_s @ s_error)) / n
    terms = (float(np.abs(lt).sum() + np.abs(dt).sum()) + abs(kappa)) / n + pen + conj \
        + abs(lin)
    k = np.log2(len(t) + len(w) + 2) + 8
    error = from_products + k * EPS * terms
    return Gap(primal, dual, s, s_error, t_error, error, alpha)


@dataclass
class ReducedProblem:
    """What is left to solve after screening, at one :math:`\\lambda`.

    ``rows`` are the undecided samples, ``cols`` the features not proven zero (indices
    into the full problem). Samples proven at :math:`\\alpha_i = 0` are dropped; samples
    proven at the end of their box (:math:`\\bar\\alpha_i = c_i y_i`, or
    :math:`\\pm c_i` for the regressor) keep a linear part: their loss is replaced by its
    tangent :math:`-\\bar\\alpha_i t - c_i h^*(\\cdot)`, exact at the optimum, which adds
    ``offset`` :math:`= X_{L,U}^\\top\\bar\\alpha_L` to :math:`X^\\top\\alpha` and
    ``kappa`` :math:`= \\sum_{i\\in L} (y_i\\bar\\alpha_i - \\gamma\\bar\\alpha_i^2/(2c_i)
    - \\varepsilon|\\bar\\alpha_i|)` to :math:`n` times both objectives. The reduced
    primal is :math:`\\lambda\\beta`-strongly convex and the reduced dual
    :math:`\\gamma/n`-strongly concave (in the :math:`1/c` metric), and its optimum is
    the full one restricted to ``rows`` and ``cols``: its gap balls are the full
    problem's balls intersected with the decided values.
    """

    data: DoublySparseData
    rows: np.ndarray
    cols: np.ndarray
    X: np.ndarray | sp.csc_matrix
    offset: np.ndarray
    kappa: float
    row_sq: np.ndarray
    col_sq_c: np.ndarray
    max_nnz: int
    box_weight: float = 0.0  # the sum of c_i over the samples folded into ``offset``
    row_counts: np.ndarray | None = None  # see ``row_nnz``

    @classmethod
    def build(cls, data: DoublySparseData, rows: np.ndarray, cols: np.ndarray,
              at_box: np.ndarray, box_value: np.ndarray) -> ReducedProblem:
        """The reduced problem on ``rows`` x ``cols``, with the samples ``at_box`` fixed
        at ``box_value`` (full-length arrays). Without any decision it is the full
        problem, sharing the data's arrays (no copy)."""
        rows = np.asarray(rows, dtype=np.intp)
        cols = np.asarray(cols, dtype=np.intp)
        full = cls(data, np.arange(data.n_samples), np.arange(data.n_features), data.X,
                   np.zeros(data.n_features), 0.0, data.row_sq, data.col_sq_c,
                   data.max_nnz, row_counts=data.row_nnz)
        if len(rows) == data.n_samples and len(cols) == data.n_features:
            return full
        keep_rows = np.zeros(data.n_samples, dtype=bool)
        keep_rows[rows] = True
        keep_cols = np.zeros(data.n_features, dtype=bool)
        keep_cols[cols] = True
        return full.shrink(keep_rows, keep_cols, at_box & ~keep_rows, box_value)

    def shrink(self, keep_rows: np.ndarray, keep_cols: np.ndarray, to_box: np.ndarray,
               box_value: np.ndarray) -> ReducedProblem:
        """A smaller reduced problem: local masks ``keep_rows`` / ``keep_cols``, the local
        rows ``to_box`` (a subset of the dropped ones) fixed at ``box_value`` (local)."""
        fixed = np.flatnonzero(to_box)
        kr, kc = np.flatnonzero(keep_rows), np.flatnonzero(keep_cols)
        kappa = self.kappa + float(dual_terms(
            box_value[fixed], self.y[fixed], self.weights[fixed], self.data.gamma,
            self.data.epsilon).sum())
        box_weight = self.box_weight + float(self.weights[fixed].sum())
        rows, cols = self.rows[kr], self.cols[kc]
        if self.sparse:
            X = self.X
            value = np.where(to_box, box_value, 0.0)
            data, indices, indptr, row_sq, col_sq_c, add, max_nnz, row_nnz = shrink_csc(
                X.data, X.indices, X.indptr, keep_rows.view(np.uint8),
                kc.astype(np.int64), value, self.weights)
            Xs = sp.csc_matrix((data, indices, indptr), shape=(len(kr), len(kc)))
            return ReducedProblem(self.data, rows, cols, Xs, self.offset[kc] + add, kappa,
                                  row_sq, col_sq_c, max_nnz, box_weight,
                                  row_counts=row_nnz)
        offset = self.offset[kc]
        if len(fixed):
            offset = offset + self.X[np.ix_(fixed, kc)].T @ box_value[fixed]
        Xs = _dense_submatrix(self.X, kr, kc)
        row_sq, col_sq_c, max_nnz = _norms(Xs, self.data.weights[rows])
        return ReducedProblem(self.data, rows, cols, Xs, offset, kappa, row_sq, col_sq_c,
                              max_nnz, box_weight)

    # -- views of the full data on the reduced rows
    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    def __post_init__(self):
        # the reduced rows' targets and weights, gathered once
        self.y = self.data.y[self.rows]
        self.weights = self.data.weights[self.rows]

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_cols(self) -> int:
        return len(self.cols)

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if self.sparse else self.X.size

    @property
    def row_nnz(self) -> np.ndarray:
        """Stored entries per row (sparse: counted by the shrink that made the problem,
        or once for the full data)."""
        if self.row_counts is None:
            self.row_counts = (np.bincount(self.X.indices, minlength=self.n_rows)
                               if self.sparse else np.full(self.n_rows, self.n_cols))
        return self.row_counts

    def margins(self, u: np.ndarray) -> np.ndarray:
        return _dense(self.X @ u)

    @property
    def offset_error(self) -> np.ndarray | float:
        """Bound of the rounding error of ``offset``: a sum of at most ``n`` terms
        :math:`X_{ij}\\bar\\alpha_i` with :math:`|\\bar\\alpha_i| = c_i`, so by
        Cauchy-Schwarz :math:`\\sum_i c_i|X_{ij}| \\le \\|X_{:j}\\|_c \\sqrt{\\sum_L c_i}`
        (the full column's weighted norm), accumulated over the shrinks."""
        if self.box_weight == 0.0:
            return 0.0
        d = self.data
        return product_error(d.max_nnz, np.sqrt(d.col_sq_c[self.cols]),
                             float(np.sqrt(self.box_weight)))

    def correlations(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`X^\\top\\alpha` plus the fixed samples' part ``offset``."""
        return _dense(self.X.T @ alpha) + self.offset

    def squares(self):
        """The entries squared, in the same layout (sparse: sharing the indices)."""
        X = self.X
        if self.sparse:
            return sp.csc_matrix((X.data * X.data, X.indices, X.indptr), shape=X.shape)
        return X * X

    def gap(self, u: np.ndarray, t: np.ndarray, lam: float, beta: float,
            alpha: np.ndarray | None = None, s: np.ndarray | None = None) -> Gap:
        """The reduced duality gap of :math:`(u, \\alpha)` (default
        :math:`\\alpha(u)`; ``s`` its correlations if known); ``t`` must be
        ``self.margins(u)``."""
        d = self.data
        return duality_gap(self.X, self.y, self.weights, u, t, lam, beta,
                           d.loss, d.gamma, d.epsilon, d.n_samples, self.row_sq,
                           self.col_sq_c, self.max_nnz, self.offset, self.kappa, alpha, s,
                           self.offset_error)

    def estimated_gap(self, u, t, alpha, corr, lam, beta) -> float:
        """The duality gap with :math:`X^\\top\\alpha` replaced by ``corr`` (e.g. as a
        coordinate-descent epoch saw it): not a bound of anything, only a cheap guess of
        when the exact gap will be small."""
        d = self.data
        dual = (float(dual_terms(alpha, self.y, self.weights, d.gamma, d.epsilon).sum())
                + self.kappa) / d.n_samples - elastic_net_conjugate(
                    corr + self.offset, lam, beta, d.n_samples)
        return self.primal(u, t, lam, beta) - dual

    def primal(self, u: np.ndarray, t: np.ndarray, lam: float, beta: float) -> float:
        d = self.data
        lt = loss_terms(t, self.y, self.weights, d.loss, d.gamma, d.epsilon)
        return lam * elastic_net(u, beta) + (float(lt.sum()) + self.kappa
                                             - float(self.offset @ u)) / d.n_samples


def primal_point(s: np.ndarray, lam: float, beta: float, n: int) -> np.ndarray:
    """:math:`w(\\alpha) = \\mathrm{ST}(s/(\\lambda n), 1)/\\beta` from
    :math:`s = X^\\top\\alpha` (plus the fixed samples' part): the primal point of a
    dual point at :math:`\\lambda`."""
    v = s / (lam * n)
    return np.sign(v) * np.maximum(np.abs(v) - 1.0, 0.0) / beta


def best_dual_scaling(alpha: np.ndarray, s: np.ndarray, y: np.ndarray, c: np.ndarray,
                      lam: float, beta: float, gamma: float, epsilon: float,
                      n: int) -> float:
    """The :math:`\\theta \\in [0, 1]` maximising :math:`D(\\theta\\alpha)` for
    :math:`s = X^\\top\\alpha` (no fixed samples).

    :math:`\\theta\\alpha` is feasible for every such :math:`\\theta` (the boxes contain
    0), and :math:`D(\\theta\\alpha)` is a concave piecewise quadratic in
    :math:`\\theta`: its slope decreases, and bisection finds its zero. Along a path the
    previous dual optimum, scaled, is a much better dual point at a smaller
    :math:`\\lambda` (whose penalty conjugate grows as :math:`1/\\lambda`).
    """
    linear = float((y * alpha - epsilon * np.abs(alpha)).sum()) / n
    quad = float((0.5 * gamma) * (alpha * alpha / c).sum()) / n
    a = np.abs(s) / (lam * n)
    a = a[a > 1.0]

    def slope(theta):
        excess = np.maximum(theta * a - 1.0, 0.0)
        return linear - 2.0 * theta * quad - lam / beta * float(a @ excess)

    if slope(1.0) >= 0.0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return lo


def full_gap(data: DoublySparseData, w: np.ndarray, lam: float, beta: float) -> tuple:
    """The full problem's duality gap at :math:`(w, \\alpha(w))`, with the margins and
    the dual point."""
    t = data.margins(w)
    g = duality_gap(data.X, data.y, data.weights, w, t, lam, beta, data.loss,
                    data.gamma, data.epsilon, data.n_samples, data.row_sq, data.col_sq_c,
                    data.max_nnz)
    return g, t, data.dual_point(t)


def as_column_layout(X):
    """``X`` as float64 in the column layout the package reads: Fortran-ordered dense, or
    CSC with sorted indices and 32-bit indices."""
    if sp.issparse(X):
        X = sp.csc_matrix(X, dtype=np.float64)
        X.sort_indices()
        if X.nnz >= np.iinfo(np.int32).max:
            raise ValueError(f"X has {X.nnz} stored entries, more than the 2**31 - 1 the "
                             "compiled kernels index")
        X.indices = X.indices.astype(np.int32, copy=False)
        X.indptr = X.indptr.astype(np.int32, copy=False)
        return X
    return np.asfortranarray(X, dtype=np.float64)


def _norms(X, weights):
    """Unweighted squared row norms (the primal ball's), weighted squared column norms
    (the dual ball's) and the largest number of terms of a row or column product."""
    if sp.issparse(X):
        sq = sp.csc_matrix((X.data * X.data, X.indices, X.indptr), shape=X.shape)
        row_sq = _dense(sq @ np.ones(X.shape[1]))
        col_sq_c = _dense(sq.T @ weights)
        row_nnz = np.bincount(X.indices, minlength=X.shape[0])
        max_nnz = int(max(np.diff(X.indptr).max(initial=0), row_nnz.max(initial=0)))
        return row_sq, col_sq_c, max_nnz
    # without the squared copy of X (a pass of allocation and writes over the data)
    return (np.einsum("ij,ij->i", X, X), np.einsum("i,ij,ij->j", weights, X, X),
            max(X.shape))


def _dense_submatrix(X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``X[rows][:, cols]`` in the Fortran order the solver reads, copied column by
    column from the Fortran-ordered ``X``: each kept column is then one contiguous read
    and one contiguous write, where a gather through ``np.ix_`` followed by a reordering
    makes two strided copies of the whole block."""
    if len(rows) == X.shape[0]:
        sub = X.T[cols].T  # whole columns: contiguous rows of the transpose
    else:
        sub = X.T[np.ix_(cols, rows)].T
    return np.asfortranarray(sub)  # a no-op unless X was not Fortran-ordered


def _dense(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).ravel()
