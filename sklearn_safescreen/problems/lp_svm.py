r"""The L1-penalised hinge SVM (LP-SVM, the 1-norm SVM), a linear program.

With :math:`n` samples :math:`x_i` (rows of :math:`X`), labels :math:`y_i=\pm1`, sample
weights :math:`s_i\ge0` and :math:`\lambda>0` (Shibagaki et al. 2016, section 5):

.. math::

    \min_w\ P_\lambda(w)=\lambda\|w\|_1+\frac1n\sum_{i=1}^ns_i\,[1-z_i^\top w]_+,
    \qquad z_i=y_ix_i .

Its dual, with :math:`a_i=y_i\alpha_i` (the module works with :math:`a`):

.. math::

    \max_a\ D(a)=\frac1n\sum_ia_i\quad\text{s.t.}\quad 0\le a_i\le s_i,\quad
    |Z_{:j}^\top a|\le\lambda n\ \ (j=1..d).

Optimality: :math:`w^*_j\ne0\Rightarrow Z_{:j}^\top a^*=\lambda n\,\mathrm{sign}(w^*_j)`;
a margin :math:`z_i^\top w^*>1` forces :math:`a^*_i=0`, a margin :math:`<1` forces
:math:`a^*_i=s_i` (complementary slackness, for every primal and every dual optimum).
An intercept is a penalised constant column (:func:`add_intercept_column`), so every
formula holds unchanged.

This module evaluates: the objectives on the **full** problem with a bound of their
rounding error, a dual-feasible point from any :math:`\alpha` (clipped into the box,
then scaled into the constraints, so that any pair gives a certified gap), the critical
:math:`\lambda_{\max}`, and the restricted linear programs the solver hands to HiGHS
(subsets of features and samples, the other features at 0, the other samples at
:math:`a_i=0` or at the box :math:`a_i=s_i`). It solves nothing. ``doc/theory/lp_svm.rst``
has the derivations.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .constants import TINY, UNIT_ROUNDOFF

U = UNIT_ROUNDOFF


def gamma(k: int | np.ndarray) -> float | np.ndarray:
    """:math:`\\gamma_k=ku/(1-ku)`: the relative error bound of a sum of :math:`k` terms
    (Higham 2002, Lemma 3.1)."""
    return k * U / (1.0 - k * U)


def add_intercept_column(X, scaling: float = 1.0):
    """``X`` with a constant column of value ``scaling`` appended (penalised like every
    feature; dense stays dense, sparse becomes CSC)."""
    n = X.shape[0]
    col = np.full((n, 1), float(scaling))
    if sp.issparse(X):
        return sp.hstack([X, sp.csc_matrix(col)], format="csc")
    return np.hstack([np.asarray(X, dtype=np.float64), col])


@dataclass
class DualPoint:
    """A dual-feasible point: ``a`` (:math:`a_i=y_i\\alpha_i\\in[0,s_i]`, with
    :math:`|Z^\\top a|\\le\\lambda n` guaranteed despite rounding), ``alpha``
    :math:`=y\\circ a`, its correlations ``corr`` :math:`=Z^\\top a` and a lower bound
    ``value`` of :math:`D(a)`; ``scale`` is the factor the input was multiplied by."""

    a: np.ndarray
    alpha: np.ndarray
    corr: np.ndarray
    value: float
    scale: float


@dataclass
class LPCertificate:
    """The full problem's verdict on a pair: an upper bound ``primal`` of
    :math:`P_\\lambda(w)`, a lower bound ``dual`` of the optimum (the dual objective of
    the feasible point ``dual_point``), so ``gap`` :math:`\\ge P_\\lambda(w)-P^*\\ge0`
    whatever the rounding, and ``rel_gap`` = gap / primal. ``margins`` are
    :math:`Zw`."""

    primal: float
    dual: float
    dual_point: DualPoint
    margins: np.ndarray

    @property
    def gap(self) -> float:
        return max(self.primal - self.dual, 0.0)

    @property
    def rel_gap(self) -> float:
        return self.gap / max(abs(self.primal), TINY)


class LPSVMData:
    """A training set of the LP-SVM in the layouts the rules and the solver read.

    Parameters
    ----------
    X : ndarray of shape (n, d) or sparse matrix
        Design matrix (intercept column included, if any). Sparse input stays sparse:
        :math:`Z=\\mathrm{diag}(y)X` is kept in CSR (rows: margins, the sample rule) and
        CSC (columns: correlations, the feature rule).
    y : ndarray of shape (n,)
        Labels ``+-1``.
    sample_weight : ndarray of shape (n,), default=None
        Weights :math:`s_i\\ge0` (default 1).
    """

    def __init__(self, X, y, sample_weight=None):
        y = np.asarray(y, dtype=np.float64).ravel()
        if not np.all(np.abs(y) == 1.0):
            raise ValueError("y must be +-1")
        n = len(y)
        s = np.ones(n) if sample_weight is None else np.asarray(
            sample_weight, dtype=np.float64).ravel()
        if s.shape != (n,) or np.any(s < 0) or not np.all(np.isfinite(s)):
            raise ValueError("sample_weight must be finite, non-negative, one per sample")
        self.y, self.s = y, s
        if sp.issparse(X):
            Z = sp.csr_matrix(X, dtype=np.float64).multiply(y[:, None]).tocsr()
            Z.sort_indices()
            self.Z = Z
            self.Zc = Z.tocsc()
            self.Zc.sort_indices()
            absZ = abs(self.Zc)
            self.row_norm = np.sqrt(np.asarray(Z.multiply(Z).sum(axis=1)).ravel())
            self.row_nnz = np.diff(Z.indptr)
            self.col_nnz = np.diff(self.Zc.indptr)
            self.col_abs_s = np.asarray(absZ.T @ s).ravel()
            self.col_max = np.asarray(absZ.max(axis=0).todense()).ravel()
        else:
            Z = np.ascontiguousarray(np.asarray(X, dtype=np.float64) * y[:, None])
            self.Z = Z
            self.Zc = Z
            self.row_norm = np.sqrt(np.einsum("ij,ij->i", Z, Z))
            self.row_nnz = np.full(n, Z.shape[1])
            self.col_nnz = np.full(Z.shape[1], n)
            absZ = np.abs(Z)
            self.col_abs_s = s @ absZ
            self.col_max = absZ.max(axis=0, initial=0.0)
        if Z.shape[0] != n:
            raise ValueError("X and y have different numbers of samples")
        self.total_weight = float(s.sum())

    # -- sizes and products
    @property
    def sparse(self) -> bool:
        return sp.issparse(self.Z)

    @property
    def n_samples(self) -> int:
        return self.Z.shape[0]

    @property
    def n_features(self) -> int:
        return self.Z.shape[1]

    def margins(self, w: np.ndarray) -> np.ndarray:
        """:math:`Zw` (the margins :math:`y_ix_i^\\top w`)."""
        return _dense(self.Z @ w)

    def margin_error(self, w: np.ndarray) -> np.ndarray:
        """Bound of the rounding error of each computed margin:
        :math:`\\gamma_{k+2}\\sum_j|z_{ij}w_j|` (Higham 2002, Lemma 3.1; :math:`k` the
        products with :math:`w_j\\ne0`, at most the row's stored entries and the support),
        the sum itself computed and rounded up. Sharper than Cauchy-Schwarz by about
        :math:`\\sqrt{d/\\|w\\|_0}`, which matters far down a path, where the
        certificate's gap is otherwise this bound."""
        support = np.flatnonzero(w)
        if not len(support):
            return np.zeros(self.n_samples)
        weights = np.abs(w[support])
        if self.sparse:
            sums = _dense(abs(self.Zc[:, support]) @ weights)
        else:
            sums = np.abs(self.Z[:, support]) @ weights
        k = np.minimum(self.row_nnz, len(support)) + 2
        return gamma(k) * sums * (1.0 + gamma(len(support) + 2))

    def correlations(self, a: np.ndarray) -> np.ndarray:
        """:math:`Z^\\top a`."""
        return _dense(self.Zc.T @ a)

    def correlation_error(self) -> np.ndarray:
        """Bound of the rounding error of :math:`Z_{:j}^\\top a` for any :math:`a` in the
        box: :math:`\\gamma_{k+2}\\sum_i|z_{ij}|s_i`."""
        return gamma(self.col_nnz + 2) * self.col_abs_s

    # -- objectives
    def primal(self, lam: float, w: np.ndarray, margins: np.ndarray | None = None) -> float:
        """An upper bound of :math:`P_\\lambda(w)` (the computed value plus a bound of its
        rounding error)."""
        m = self.margins(w) if margins is None else margins
        hinge = self.s * np.maximum(1.0 - m, 0.0)
        l1 = float(np.abs(w).sum())
        loss = float(hinge.sum())
        value = lam * l1 + loss / self.n_samples
        err = (float(self.s @ self.margin_error(w)) + gamma(self.n_samples + 4) * loss) \
            / self.n_samples + gamma(len(w) + 4) * lam * l1 + 4 * U * value
        return value + err

    def lambda_max(self) -> float:
        """The smallest :math:`\\lambda` with :math:`w^*=0`: :math:`\\|Z^\\top s\\|_\\infty/n`
        (at :math:`w=0` every margin is 0, so :math:`a=s` is the only dual optimum and it
        is feasible exactly when :math:`\\lambda n\\ge\\|Z^\\top s\\|_\\infty`)."""
        return float(np.abs(self.correlations(self.s)).max(initial=0.0)) / self.n_samples

    def alpha_at_zero(self) -> np.ndarray:
        """The dual optimum for :math:`\\lambda\\ge\\lambda_{\\max}`: :math:`\\alpha=y\\circ s`."""
        return self.y * self.s

    def feasible_dual(self, lam: float, alpha: np.ndarray) -> DualPoint:
        """A dual-feasible point from any :math:`\\alpha`: :math:`a=\\mathrm{clip}(y\\circ
        \\alpha,0,s)`, then scaled by :math:`\\theta=\\min(1,\\lambda n/\\max_j(|Z_{:j}^\\top
        a|+2e_j))` where :math:`e_j` bounds the rounding error of the product (the second
        :math:`e_j` covers the rounding of :math:`\\theta a`), so that the stored point
        satisfies the constraints exactly. The dual value is returned as a lower bound."""
        n = self.n_samples
        a = np.clip(self.y * np.asarray(alpha, dtype=np.float64), 0.0, self.s)
        corr = self.correlations(a)
        worst = float(np.max(np.abs(corr) + 2.0 * self.correlation_error(), initial=0.0))
        limit = lam * n
        scale = 1.0 if worst <= limit * (1.0 - 4 * U) else limit / worst * (1.0 - 4 * U)
        if scale < 1.0:
            a = a * scale
            corr = corr * scale
        total = float(a.sum())
        value = total * (1.0 - gamma(n + 2)) / n
        return DualPoint(a, self.y * a, corr, value, scale)

    def certificate(self, lam: float, w: np.ndarray, alpha: np.ndarray) -> LPCertificate:
        """The full problem's certified gap at :math:`(w,\\alpha)` (``alpha`` made
        feasible by :meth:`feasible_dual`)."""
        m = self.margins(w)
        dp = self.feasible_dual(lam, alpha)
        return LPCertificate(self.primal(lam, w, m), dp.value, dp, m)

    # -- bounds of restricted problems (the engine's proofs that a decision was wrong)
    def primal_samples_fixed(self, lam: float, w: np.ndarray, at_zero: np.ndarray,
                             at_box: np.ndarray) -> float:
        """An upper bound of the optimum of the problem whose samples ``at_zero`` lose
        their loss and whose samples ``at_box`` have the linear loss
        :math:`s_i(1-z_i^\\top w)` (the primal of the dual with those :math:`a_i` fixed
        at 0 and at :math:`s_i`): its objective at ``w`` (any point, every feature free),
        plus a bound of its rounding error."""
        m = self.margins(w)
        hinge = np.where(at_box, 1.0 - m, np.maximum(1.0 - m, 0.0))
        terms = self.s * np.where(at_zero, 0.0, hinge)
        l1 = float(np.abs(w).sum())
        loss = float(terms.sum())
        value = lam * l1 + loss / self.n_samples
        counted = ~at_zero
        err = (float(self.s[counted] @ self.margin_error(w)[counted])
               + gamma(self.n_samples + 4) * float(np.abs(terms).sum())) / self.n_samples \
            + gamma(len(w) + 4) * lam * l1 + 4 * U * abs(value)
        return value + err

    def dual_features_fixed(self, lam: float, alpha: np.ndarray,
                            free_features: np.ndarray) -> float:
        """A lower bound of the optimum of the problem whose features outside
        ``free_features`` are held at 0 (its dual keeps only the constraints
        :math:`|Z_{:j}^\\top a|\\le\\lambda n` of the free features): the value of
        :math:`\\theta\\,\\mathrm{clip}(y\\circ\\alpha,0,s)` scaled into those constraints as
        in :meth:`feasible_dual`."""
        n = self.n_samples
        a = np.clip(self.y * np.asarray(alpha, dtype=np.float64), 0.0, self.s)
        corr = np.abs(self.correlations(a)) + 2.0 * self.correlation_error()
        worst = float(np.max(corr[free_features], initial=0.0))
        limit = lam * n
        scale = 1.0 if worst <= limit * (1.0 - 4 * U) else limit / worst * (1.0 - 4 * U)
        return float((a * scale).sum()) * (1.0 - gamma(n + 2)) / n

    # -- the sorted columns of the feature rule
    @cached_property
    def sorted_columns(self) -> SortedColumns:
        """The stored entries of :math:`Z` sorted by value within each column (computed
        once: it depends on the data only)."""
        return SortedColumns.build(self.Zc)

    # -- restricted linear programs
    def restricted_lp(self, lam: float, plus: np.ndarray, minus: np.ndarray,
                      rows: np.ndarray, at_box: np.ndarray, l1_bound: float
                      ) -> RestrictedLP:
        """The LP over the features ``plus`` (allowed positive) and ``minus`` (allowed
        negative) and the samples ``rows`` (index arrays), the
        samples ``at_box`` (a full-length mask, disjoint from ``rows``) at
        :math:`a_i=s_i` and every other sample at :math:`a_i=0`; see
        :class:`RestrictedLP`."""
        return RestrictedLP.build(self, lam, plus, minus, rows, at_box, l1_bound)


@dataclass
class SortedColumns:
    """The stored entries of a column-major matrix, sorted ascending within each column.

    ``values[k]`` and ``rows[k]`` for ``k`` in ``start[j]:start[j+1]`` are column ``j``'s
    entries in ascending order (implicit zeros of a sparse column are not stored). The
    order of equal entries is unspecified: the knapsacks read only the values' order.
    """

    values: np.ndarray
    rows: np.ndarray
    start: np.ndarray

    @classmethod
    def build(cls, Zc) -> SortedColumns:
        if sp.issparse(Zc):
            cols = np.repeat(np.arange(Zc.shape[1]), np.diff(Zc.indptr))
            order = np.lexsort((Zc.data, cols))
            return cls(np.ascontiguousarray(Zc.data[order], dtype=np.float64),
                       Zc.indices[order].astype(np.intp), Zc.indptr.astype(np.intp))
        n, d = Zc.shape
        # each column a contiguous row of the transpose, sorted in place of a strided
        # stable sort along axis 0 (which gathers every strided column into a buffer and
        # scatters it back, and whose merge sort needs a workspace of its own)
        columns = np.ascontiguousarray(Zc.T, dtype=np.float64)
        order = np.argsort(columns, axis=1)
        values = np.take_along_axis(columns, order, axis=1)
        return cls(values.ravel(), order.ravel().astype(np.intp),
                   np.arange(d + 1, dtype=np.intp) * n)


@dataclass
class RestrictedLP:
    r"""One restricted LP in the form ``scipy.optimize.linprog`` takes, scaled by
    :math:`n` (coefficients :math:`\lambda n` and :math:`s_i`, of order one):

    .. math::

        \min_{p,q\ge0,\ \xi\ge0}\ \sum_{j\in W_+}(\lambda n-c_j)p_j
        +\sum_{j\in W_-}(\lambda n+c_j)q_j+\sum_{i\in S}s_i\xi_i
        \quad\text{s.t.}\quad -z_i^\top w-\xi_i\le-1\ (i\in S),

    with :math:`w=\sum_{W_+}p_je_j-\sum_{W_-}q_je_j`: a feature in ``plus``
    (:math:`W_+`) may be positive, one in ``minus`` (:math:`W_-`) negative, one in both
    either. A feature whose sign is known along a path (its sign at the previous value)
    thus costs one column, not two; the solver prices the other sign like any column.
    :math:`c=Z_{B,:}^\top s_B` is the linear part of the samples :math:`B` fixed at the
    box (their loss :math:`s_i(1-z_i^\top w)` is linear), with the constant
    :math:`\sum_{B}s_i`. The variables are bounded by ``l1_bound`` (:math:`p_j,q_j\le M`
    with :math:`M\ge\|w^*\|_1`, see :func:`l1_radius`): a bound every optimum
    satisfies, which keeps a restricted problem with few rows bounded. The row marginals
    are :math:`-a_S`. The constraint matrix is sparse (CSC) whatever the input.
    """

    plus: np.ndarray
    minus: np.ndarray
    rows: np.ndarray
    c: np.ndarray
    A_ub: sp.csc_matrix | None
    b_ub: np.ndarray | None
    bounds: np.ndarray
    constant: float

    @classmethod
    def build(cls, data: LPSVMData, lam: float, plus, minus, rows, at_box, l1_bound):
        plus = np.asarray(plus, dtype=np.intp)
        minus = np.asarray(minus, dtype=np.intp)
        rows = np.asarray(rows, dtype=np.intp)
        n = data.n_samples
        box_weights = np.where(at_box, data.s, 0.0)
        ln = lam * n
        if box_weights.any():
            lin = data.correlations(box_weights)
        else:
            lin = np.zeros(data.n_features)
        cols = np.concatenate([plus, minus])
        sign = np.concatenate([np.ones(len(plus)), -np.ones(len(minus))])
        c = np.concatenate([ln - sign * lin[cols], data.s[rows]])
        m, k = len(rows), len(cols)
        if m:
            Zs = _submatrix(data, rows, cols)
            Zs = sp.csr_matrix(Zs) if not sp.issparse(Zs) else Zs
            A = sp.hstack([Zs.multiply(-sign[None, :]).tocsr(),
                           -sp.identity(m, format="csr")], format="csc")
            b = -np.ones(m)
        else:
            A, b = None, None
        bounds = np.zeros((k + m, 2))
        bounds[:k, 1] = float(l1_bound)
        bounds[k:, 1] = np.inf
        return cls(plus, minus, rows, c, A, b, bounds, float(box_weights.sum()))

    def weights(self, x: np.ndarray, n_features: int) -> np.ndarray:
        """The full-length :math:`w` from the LP's solution vector."""
        kp, km = len(self.plus), len(self.minus)
        w = np.zeros(n_features)
        np.add.at(w, self.plus, x[:kp])
        np.subtract.at(w, self.minus, x[kp:kp + km])
        return w


def l1_radius(primal_upper: float, lam: float) -> float:
    """:math:`M=P_\\lambda(\\hat w)/\\lambda` (inflated), a bound of :math:`\\|w^*\\|_1`
    for every optimum: :math:`\\lambda\\|w^*\\|_1\\le P_\\lambda(w^*)\\le P_\\lambda(\\hat
    w)`."""
    return primal_upper / lam * (1.0 + 1e-6) + 1e-12


def _submatrix(data: LPSVMData, rows, cols):
    """:math:`Z_{rows,cols}` in CSR (sparse) or dense."""
    if data.sparse:
        return data.Z[rows][:, cols]
    return data.Z[np.ix_(rows, cols)]


def _dense(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).ravel()
