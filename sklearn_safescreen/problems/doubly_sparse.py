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

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

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
        Design matrix (intercept column included, if any). Dense input is kept in
        Fortran order (the solver reads columns); sparse input is kept twice, CSC for
        the columns and CSR for the rows, converted once.
    y : ndarray of shape (n,)
        ``+-1`` (classifier) or real targets (regressor).
    weights : ndarray of shape (n,)
        Positive sample weights :math:`c_i` (zero-weight samples are removed by the
        caller: they do not enter the problem).
    csr : sparse matrix, optional
        The CSR copy of a CSC ``X`` already converted (one-vs-rest tasks share it).
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
    csr: sp.csr_matrix | None = field(default=None, repr=False)

    def __post_init__(self):
        if sp.issparse(self.X):
            if not (self.csr is not None and sp.isspmatrix_csc(self.X)):
                self.X = sp.csc_matrix(self.X, dtype=np.float64)
                self.X.sort_indices()
                self.csr = self.X.tocsr()
        else:
            self.X = np.asfortranarray(self.X, dtype=np.float64)
        self.y = np.ascontiguousarray(self.y, dtype=np.float64)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        sq = self.X.multiply(self.X) if self.sparse else self.X * self.X
        # unweighted row norms (primal ball) and weighted column norms (dual ball)
        self.row_sq = _dense(sq.sum(axis=1))
        self.col_sq_c = _dense(sq.T @ self.weights) if self.sparse else self.weights @ sq
        self.max_nnz = int(max(np.diff(self.X.indptr).max(initial=0),
                               np.diff(self.csr.indptr).max(initial=0))) if self.sparse \
            else max(self.X.shape)

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
        return _dense((self.csr if self.sparse else self.X) @ w)

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


def duality_gap(X, csr, y, c, w, t, lam, beta, loss, gamma, epsilon, n, row_sq,
                col_sq_c, max_nnz, offset=None, kappa=0.0) -> Gap:
    """The duality gap of :math:`(w, \\alpha(w))` on rows and columns ``X``, with the
    constant part of fixed samples (``offset`` added to :math:`X^\\top\\alpha`,
    ``kappa`` to both objectives; see :class:`ReducedProblem`).

    ``t`` must be ``X @ w`` freshly computed: the balls assume the margins of ``w``.
    """
    alpha = dual_point(t, y, c, loss, gamma, epsilon)
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
        s_error = s_error + 4 * EPS * np.abs(offset)
    # the loss is 1-Lipschitz in z times c_i; psi* is (1/beta)-smooth with slope |w(s)|
    w_of_s = np.maximum(np.abs(s) / (lam * n) - 1.0, 0.0) / beta
    from_products = (float(c @ t_error) + float(w_of_s @ s_error)) / n
    terms = (float(np.abs(lt).sum() + np.abs(dt).sum()) + abs(kappa)) / n + pen + conj \
        + abs(lin)
    k = np.log2(len(t) + len(w) + 2) + 8
    error = from_products + k * EPS * terms
    return Gap(primal, dual, s, s_error, t_error, error)


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
    csr: sp.csr_matrix | None
    offset: np.ndarray
    kappa: float
    row_sq: np.ndarray
    col_sq_c: np.ndarray
    max_nnz: int

    @classmethod
    def build(cls, data: DoublySparseData, rows: np.ndarray, cols: np.ndarray,
              at_box: np.ndarray, box_value: np.ndarray) -> ReducedProblem:
        """The reduced problem on ``rows`` x ``cols``, with the samples ``at_box`` fixed
        at ``box_value`` (full-length arrays). Without any decision it is the full
        problem, sharing the data's arrays (no copy)."""
        rows = np.asarray(rows, dtype=np.intp)
        cols = np.asarray(cols, dtype=np.intp)
        fixed = np.flatnonzero(at_box)
        if len(rows) == data.n_samples and len(cols) == data.n_features and not len(fixed):
            return cls(data, rows, cols, data.X, data.csr, np.zeros(len(cols)), 0.0,
                       data.row_sq, data.col_sq_c, data.max_nnz)
        source = data.csr if data.sparse else data.X
        offset = _dense(_take(source, fixed, cols).T @ box_value[fixed]) if len(fixed) \
            else np.zeros(len(cols))
        kappa = float(dual_terms(box_value[fixed], data.y[fixed], data.weights[fixed],
                                 data.gamma, data.epsilon).sum())
        return cls._of(data, rows, cols, _take(source, rows, cols), offset, kappa)

    @classmethod
    def _of(cls, data, rows, cols, Xc, offset, kappa):
        if sp.issparse(Xc):
            Xc = sp.csc_matrix(Xc)
            Xc.sort_indices()
            csr = Xc.tocsr()
            sq = Xc.multiply(Xc)
            row_sq = _dense(sq.sum(axis=1))
            col_sq_c = _dense(sq.T @ data.weights[rows])
            max_nnz = int(max(np.diff(Xc.indptr).max(initial=0),
                              np.diff(csr.indptr).max(initial=0)))
        else:
            csr = None
            sq = Xc * Xc
            row_sq = sq.sum(axis=1)
            col_sq_c = data.weights[rows] @ sq
            max_nnz = max(Xc.shape)
        return cls(data, rows, cols, Xc, csr, np.ascontiguousarray(offset, dtype=float),
                   kappa, row_sq, col_sq_c, max_nnz)

    def shrink(self, keep_rows: np.ndarray, keep_cols: np.ndarray, to_box: np.ndarray,
               box_value: np.ndarray) -> ReducedProblem:
        """A smaller reduced problem: local masks ``keep_rows`` / ``keep_cols``, the local
        rows ``to_box`` (a subset of the dropped ones) fixed at ``box_value`` (local)."""
        fixed = np.flatnonzero(to_box)
        kr, kc = np.flatnonzero(keep_rows), np.flatnonzero(keep_cols)
        source = self.csr if self.sparse else self.X
        offset = self.offset[kc]
        if len(fixed):
            offset = offset + _dense(_take(source, fixed, kc).T @ box_value[fixed])
        kappa = self.kappa + float(dual_terms(
            box_value[fixed], self.y[fixed], self.weights[fixed], self.data.gamma,
            self.data.epsilon).sum())
        return self._of(self.data, self.rows[kr], self.cols[kc], _take(source, kr, kc),
                        offset, kappa)

    # -- views of the full data on the reduced rows
    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def y(self) -> np.ndarray:
        return self.data.y[self.rows]

    @property
    def weights(self) -> np.ndarray:
        return self.data.weights[self.rows]

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_cols(self) -> int:
        return len(self.cols)

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if self.sparse else self.X.size

    def margins(self, u: np.ndarray) -> np.ndarray:
        return _dense((self.csr if self.sparse else self.X) @ u)

    def gap(self, u: np.ndarray, t: np.ndarray, lam: float, beta: float) -> Gap:
        """The reduced duality gap of :math:`(u, \\alpha(u))`; ``t`` must be
        ``self.margins(u)``."""
        d = self.data
        return duality_gap(self.X, self.csr, self.y, self.weights, u, t, lam, beta,
                           d.loss, d.gamma, d.epsilon, d.n_samples, self.row_sq,
                           self.col_sq_c, self.max_nnz, self.offset, self.kappa)

    def primal(self, u: np.ndarray, t: np.ndarray, lam: float, beta: float) -> float:
        d = self.data
        lt = loss_terms(t, self.y, self.weights, d.loss, d.gamma, d.epsilon)
        return lam * elastic_net(u, beta) + (float(lt.sum()) + self.kappa
                                             - float(self.offset @ u)) / d.n_samples


def full_gap(data: DoublySparseData, w: np.ndarray, lam: float, beta: float) -> tuple:
    """The full problem's duality gap at :math:`(w, \\alpha(w))`, with the margins and
    the dual point."""
    t = data.margins(w)
    g = duality_gap(data.X, data.csr, data.y, data.weights, w, t, lam, beta, data.loss,
                    data.gamma, data.epsilon, data.n_samples, data.row_sq, data.col_sq_c,
                    data.max_nnz)
    return g, t, data.dual_point(t)


def _take(X, rows, cols):
    """``X[rows][:, cols]`` (sparse: CSR in, CSR out; dense: a Fortran copy)."""
    if sp.issparse(X):
        return X[rows][:, cols]
    return np.asfortranarray(X[np.ix_(rows, cols)])


def _dense(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).ravel()
