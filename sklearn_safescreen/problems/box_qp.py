r"""The box-constrained dual of the SVM and of LAD regression.

Both estimators solve

.. math::

    \min_{\alpha}\ \tfrac12\alpha^\top Q\alpha - p^\top\alpha
    \quad\text{s.t.}\quad lo_i \le \alpha_i \le hi_i,
    \qquad Q_{ij} = s_i s_j k(x_i, x_j),

the dual of :math:`\min_w \tfrac12\|w\|^2 + \sum_i \max(lo_i t_i, hi_i t_i)` with
:math:`t_i = p_i - s_i w^\top\Phi(x_i)` and :math:`w = \sum_i \alpha_i s_i \Phi(x_i)`
(``doc/theory/svm_lad.rst``):

* SVM (:class:`~.box_qp_data.SVMData`): :math:`s = y \in \{-1, 1\}`, :math:`p = 1`,
  box :math:`[0, C c_i]`;
* LAD (:class:`~.box_qp_data.LADData`): :math:`s = 1`, :math:`p = y`, box
  :math:`[-C c_i, C c_i]`.

:math:`c_i \ge 0` are the per-sample weights. The intercept is a regularised extra
feature (a bias column in the design matrix, or a constant added to the kernel).

The per-sample duality gap is :math:`\max(-lo_i g_i, -hi_i g_i) + \alpha_i g_i \ge 0`
with the dual gradient :math:`g_i = s_i w^\top\Phi(x_i) - p_i`, so the gap of any
feasible point costs one pass over its margins :math:`q = Q\alpha`.

This module holds one problem at a given ``C`` (:class:`BoxQP`) and its solutions'
certified figures (:class:`BoxQPReference`); :mod:`.box_qp_data` the data of a family
that do not depend on ``C``, its closed forms and its critical values.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ._box_qp_fast import (
    dot2_accumulate,
    dot2_csr,
    dot2_csr_transpose,
    dot2_dense,
    dot2_rows,
    gap_error_terms,
    gap_terms,
)
from .constants import TINY, UNIT_ROUNDOFF
from .kernels import KernelMatrix, block_rows

#: Rows of a kernel block gathered at a time by :meth:`BoxQP.accurate_margins`: bounds
#: the block's memory (the margins' accuracy does not depend on it).
_BLOCK_ROWS = 256

#: :meth:`BoxQP.accurate_margins_from` updates the margins when the samples that changed
#: are at most this share of the support (the update's product costs a kernel column
#: per changed sample, the fresh product one per support vector).
INCREMENTAL_MARGINS_SHARE = 0.75


def gamma(m: int | float) -> float:
    r""":math:`\gamma_m = mu/(1-mu)`: the relative error bound of a sum of ``m`` terms in
    floating point, :math:`|\mathrm{fl}(\sum a_i)-\sum a_i|\le\gamma_{m}\sum|a_i|`
    (Higham 2002, Sec. 3.1)."""
    mu = m * UNIT_ROUNDOFF
    return mu / (1.0 - mu)


class SolveStatus:
    """Where the current solve of a task stands, for the progress lines of a long fit
    (:class:`~sklearn_safescreen._fit_time.Progress`, read from another thread): the
    solver records its epochs and relative duality gap at each of its gap checks. Two
    plain numbers, replaced together: a reader sees one check's or the next's."""

    __slots__ = ("n_iter", "rel_gap")

    def __init__(self) -> None:
        self.n_iter, self.rel_gap = 0, float("inf")

    def record(self, n_iter: int, rel_gap: float) -> None:
        self.n_iter, self.rel_gap = int(n_iter), float(rel_gap)


@dataclass
class BoxQP:
    """One box-constrained dual problem over all ``n`` samples, at one value of ``C``.

    Exactly one of ``X`` (linear mode: the design matrix, bias column included) and
    ``kernel`` (kernel mode) is set. ``newton`` is the kernel solver's factor cache
    (:class:`~sklearn_safescreen.solvers.newton.NewtonCache`), kept by the caller across
    the solves of one ``Q`` (``None``: the solver uses a fresh one).
    """

    sign: np.ndarray
    p: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sqnorm: np.ndarray
    X: np.ndarray | sp.csr_matrix | None = None
    kernel: KernelMatrix | None = None
    newton: object | None = None
    #: the hinge-loss SVM (``p = 1``, ``lo = 0``): its gap has the C-free hard-margin
    #: bound (:meth:`hard_margin_gap`)
    hinge: bool = False
    #: the solvers record their progress here (None: nobody reads it)
    status: SolveStatus | None = None

    @property
    def n_samples(self) -> int:
        return self.sign.shape[0]

    @property
    def linear(self) -> bool:
        return self.X is not None

    def primal_weights(self, alpha: np.ndarray) -> np.ndarray:
        """``w = sum_i alpha_i s_i x_i`` (linear mode)."""
        return np.asarray(self.X.T @ (self.sign * alpha)).ravel()

    def margins(self, alpha: np.ndarray, rows=None) -> np.ndarray:
        """``q_i = s_i w^T Phi(x_i) = (Q alpha)_i`` for ``rows`` (default: all)."""
        if self.linear:
            w = self.primal_weights(alpha)
            if rows is None:  # no row gather: it would copy X
                return self.sign * np.asarray(self.X @ w).ravel()
            return self.sign[rows] * np.asarray(self.X[rows] @ w).ravel()
        rows = np.arange(self.n_samples) if rows is None else np.asarray(rows)
        nz = np.flatnonzero(alpha)
        return self.sign[rows] * self.kernel.matvec(rows, nz, self.sign[nz] * alpha[nz])

    def margins_from(self, alpha: np.ndarray, base_alpha: np.ndarray,
                     base_margins: np.ndarray, scale: float) -> np.ndarray | None:
        r"""``Q alpha`` from the margins ``base_margins`` of another point:
        :math:`Q\alpha = s\,Q\alpha_0 + Q(\alpha - s\alpha_0)`, the second product
        over the samples where ``alpha`` is not ``scale * base_alpha`` (on a path, the
        seed keeps the samples at an end of the box there, so only the previous
        solution's interior ones differ), or with ``s = 1`` where that leaves fewer
        (:func:`_cheaper_scale`). Plain accuracy, for a solver's start, never
        for a certificate; None when it would cost as many kernel values as computing
        the margins afresh."""
        scale = _cheaper_scale(alpha, base_alpha, scale)
        delta = alpha - scale * base_alpha
        # a seeded bound is C_new w_i, the scaled one (C_new / C_old) C_old w_i: equal
        # up to two roundings, which a start point may ignore
        moved = np.flatnonzero(np.abs(delta) > 8.0 * np.finfo(float).eps * np.abs(alpha))
        if moved.size >= 0.5 * np.count_nonzero(alpha):
            return None
        q = scale * base_margins
        if moved.size:
            q += self.sign * self.kernel.matvec(np.arange(self.n_samples), moved,
                                                self.sign[moved] * delta[moved])
        return q

    def gap_terms(self, alpha: np.ndarray, q: np.ndarray, rows=None) -> np.ndarray:
        """Per-sample duality gap at margins ``q`` (all rows, or ``rows``)."""
        if rows is None:
            rows = np.arange(self.n_samples)
        return gap_terms(np.ascontiguousarray(q, dtype=np.float64), self.p, self.lo,
                         self.hi, alpha, np.asarray(rows, dtype=np.int64))

    def dual_objective(self, alpha: np.ndarray, q: np.ndarray) -> float:
        """``-1/2 a'Qa + p'a`` given the margins ``q = Q a`` of every sample."""
        return float(-0.5 * alpha @ q + self.p @ alpha)

    def accurate_margins(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""The margins :math:`q = Q\alpha` of every sample, compensated, with a bound
        of their rounding error (``doc/theory/safety.rst``).

        Every dot product is evaluated by Dot2 (Ogita, Rump and Oishi 2005), as if in
        twice the working precision, so :math:`|\hat q_i-q_i|\le u|\hat q_i|+
        \gamma_m^2\sum_j|Q_{ij}\alpha_j|`: the error does not grow with ``C`` until
        :math:`\gamma_m^2` times the largest terms reaches the margins themselves.
        Linear mode takes two products, :math:`w=Z^\top\alpha` then :math:`Zw`; the
        error of the rounded :math:`w` reaches the margins through Cauchy-Schwarz.
        Kernel mode adds ``KernelMatrix.entry_rtol`` :math:`\sum_j|Q_{ij}\alpha_j|`
        (0 when the kernel values are symmetric by construction): two evaluations of
        one entry may otherwise differ by that much. Every term of the bound is
        doubled, which covers the rounding of the bound's own arithmetic.

        Returns
        -------
        q, error : ndarray of shape (n_samples,)
        """
        s = self.sign
        coef = s * alpha
        if self.linear:
            X = self.X
            if sp.issparse(X):
                X = sp.csr_matrix(X)
                w, w_abs = dot2_csr_transpose(X.data, X.indices, X.indptr, X.shape[1],
                                              coef)
                t, t_abs = dot2_csr(X.data, X.indices, X.indptr, w)
                d = int(np.diff(X.indptr).max(initial=0))
            else:
                X = np.ascontiguousarray(X, dtype=np.float64)
                w, w_abs = dot2_dense(X, coef)
                t, t_abs = dot2_rows(X, w)
                d = X.shape[1]
            n_nz = int(np.count_nonzero(coef))
            w_error = 2.0 * (UNIT_ROUNDOFF * np.abs(w) + gamma(n_nz) ** 2 * w_abs)
            error = 2.0 * (UNIT_ROUNDOFF * np.abs(t) + gamma(d) ** 2 * t_abs
                           + np.sqrt(self.sqnorm) * float(np.sqrt(w_error @ w_error)))
            return s * t, error
        nz = np.flatnonzero(alpha)
        t, absum = self._dot2_kernel_product(nz, coef[nz])
        error = 2.0 * (UNIT_ROUNDOFF * np.abs(t)
                       + (gamma(nz.size) ** 2 + self.kernel.entry_rtol) * absum)
        return s * t, error

    def _dot2_kernel_product(self, cols: np.ndarray, coef: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        r"""Kernel mode: :math:`K_{:,\mathrm{cols}}\,coef` over every row by Dot2, and
        :math:`|K_{:,\mathrm{cols}}|\,|coef|` (the sum its error bound scales)."""
        n, km = self.n_samples, self.kernel
        if isinstance(km.kernel, str) and km.kernel != "precomputed":
            # a built-in kernel is symmetric: rows of ``cols`` (as the row cache holds
            # them) serve as columns
            acc, comp, absum = km.dot2_matvec(cols, coef)
        else:
            acc, comp, absum = np.zeros(n), np.zeros(n), np.zeros(n)
            coef = np.ascontiguousarray(coef, dtype=np.float64)
            step = block_rows(cols.size, _BLOCK_ROWS)
            for start in range(0, n, step):
                sl = slice(start, min(start + step, n))
                rows = np.arange(sl.start, sl.stop)
                dot2_accumulate(acc[sl], comp[sl], absum[sl],
                                np.ascontiguousarray(km.block(rows, cols).T), coef)
        return acc + comp, absum

    def accurate_margins_from(self, alpha: np.ndarray, base: BoxQPReference,
                              scale: float) -> tuple[np.ndarray, np.ndarray] | None:
        r"""Kernel mode: the margins :math:`Q\alpha` of every sample with a bound of
        their error, as :meth:`accurate_margins` gives them, updated from those of
        another point ``base`` (on a path, the previous solution) instead of a product
        over the whole support:

        .. math::

            Q\alpha = r\,Q\alpha_0 + Q\hat\delta + Q\rho,\qquad
            \hat\delta_j = \mathrm{fl}(\alpha_j - \mathrm{fl}(r\alpha_{0j}))

        with :math:`r` = ``scale`` (or 1, where fewer samples then differ:
        :func:`_cheaper_scale`) and :math:`\hat\delta_j` taken as 0 where it is
        below :math:`8\epsilon|\alpha_j|` (on a path, a sample at an end of its box at
        both values: only the others cost a kernel column). The second product is
        computed by Dot2 (its bound as in :meth:`accurate_margins`); the residual
        :math:`\rho = \alpha - r\alpha_0 - \hat\delta` is not computed but bounded,
        :math:`|\rho_j|\le u(|\mathrm{fl}(r\alpha_{0j})|+|\hat\delta_j|)` where
        :math:`\hat\delta_j` was computed, :math:`u|\mathrm{fl}(r\alpha_{0j})| +
        9\epsilon|\alpha_j|` where it was not, and reaches the margins through
        Cauchy-Schwarz, :math:`|(Q\rho)_i|\le\|z_i\|\sum_j\|z_j\||\rho_j|`. The
        bound is the base's, scaled, plus these terms and the rounding of the scaling
        and of the sum (the new terms doubled): it grows by about :math:`\epsilon\|z_i\|
        \sum_j\|z_j\||\alpha_j|` a step, so the caller recomputes the margins afresh
        when it grows too large for its purpose.

        Returns None in linear mode, or when the changed samples are more than
        ``INCREMENTAL_MARGINS_SHARE`` of the support (the fresh product costs little
        more).
        """
        if self.linear:
            return None
        eps = np.finfo(np.float64).eps
        scale = _cheaper_scale(alpha, base.alpha, scale)
        scaled = scale * base.alpha
        delta = alpha - scaled
        moved = np.abs(delta) > 8.0 * eps * np.abs(alpha)
        cols = np.flatnonzero(moved)
        if cols.size > INCREMENTAL_MARGINS_SHARE * np.count_nonzero(alpha):
            return None
        s = self.sign
        zn = np.sqrt(np.maximum(self.sqnorm, 0.0))
        rho = UNIT_ROUNDOFF * (np.abs(scaled) + np.where(moved, np.abs(delta), 0.0)) \
            + np.where(moved, 0.0, 9.0 * eps * np.abs(alpha))
        t1 = scale * base.margins
        q = t1.copy()
        new = 2.0 * UNIT_ROUNDOFF * np.abs(t1) + zn * float(rho @ zn)
        if cols.size:
            t, absum = self._dot2_kernel_product(cols, s[cols] * delta[cols])
            q += s * t
            new += UNIT_ROUNDOFF * np.abs(t) \
                + (gamma(cols.size) ** 2 + self.kernel.entry_rtol) * absum
        new += UNIT_ROUNDOFF * np.abs(q)
        # the new terms doubled as usual; the base's bound is exact arithmetic's
        # already, so only the rounding of the scaling and of the few additions (a
        # relative 16u) covers it: doubling it at every step would grow it 2^k-fold
        error = (scale * np.asarray(base.margin_error, dtype=np.float64) + 2.0 * new) \
            * (1.0 + 16.0 * UNIT_ROUNDOFF)
        return q, error

    def margin_error_bound(self, alpha: np.ndarray) -> np.ndarray:
        r"""A priori bound of the rounding error of margins :math:`Q\alpha` computed by
        ordinary sums (:meth:`margins`, BLAS) of at most :math:`n+d` terms:
        :math:`2(\gamma_{n+d}+\kappa)\|z_i\|\sum_j|\alpha_j|\|z_j\|` (Cauchy-Schwarz,
        :math:`|Q_{ij}|\le\|z_i\|\|z_j\|`; :math:`\kappa` = ``entry_rtol`` in
        kernel mode, 0 in linear mode). O(n)."""
        zn = np.sqrt(np.maximum(self.sqnorm, 0.0))
        m = self.n_samples + (self.X.shape[1] if self.linear else 0)
        kappa = 0.0 if self.linear else self.kernel.entry_rtol
        return 2.0 * (gamma(m) + kappa) * zn * float(np.abs(alpha) @ zn)

    def gap_error(self, alpha: np.ndarray, q: np.ndarray, margin_error: np.ndarray,
                  terms: np.ndarray) -> float:
        r"""Bound of how far the exact duality gap at ``alpha`` can exceed
        ``terms.sum()``, the per-sample terms computed from the margins ``q`` whose
        errors ``margin_error`` bounds.

        Each term :math:`t_i=\max(-lo_ig_i,-hi_ig_i)+\alpha_ig_i` is, in exact
        arithmetic, :math:`(\alpha_i-lo_i)g_i` for :math:`g_i\ge0` and
        :math:`(\alpha_i-hi_i)g_i` for :math:`g_i\le0`: piecewise linear in
        :math:`g_i=q_i-p_i`, whose error is the margin's plus its rounding,
        :math:`e_i+u|g_i|`. Over :math:`[g_i-e_i-u|g_i|,\ g_i+e_i+u|g_i|]` its slope is
        :math:`|\alpha_i-lo_i|` if that interval is nonnegative, :math:`|hi_i-\alpha_i|`
        if it is nonpositive, the larger of the two otherwise: a variable at the end of
        its box on the side its margin certainly indicates contributes nothing, however
        large ``C`` is. The term's own rounding is
        :math:`4u(\max(|lo_i|,|hi_i|)+|\alpha_i|)|g_i|`, except that such a variable's
        term is computed exactly 0 (two products of equal magnitude and opposite signs);
        the sum adds :math:`\gamma_n\sum_i|t_i|`. Doubled to cover the bound's own
        arithmetic.
        """
        e = np.ascontiguousarray(np.broadcast_to(np.asarray(margin_error, dtype=float),
                                                 q.shape))
        c = np.ascontiguousarray
        weighted, rounding = gap_error_terms(
            c(q, dtype=np.float64), c(self.p, dtype=np.float64), c(self.lo, dtype=np.float64),
            c(self.hi, dtype=np.float64), c(alpha, dtype=np.float64), e, UNIT_ROUNDOFF)
        return 2.0 * (weighted + rounding + gamma(self.n_samples) * float(np.abs(terms).sum()))

    def hard_margin_gap(self, alpha: np.ndarray, q: np.ndarray,
                        margin_error: np.ndarray | float) -> tuple[float, float]:
        r"""The hinge SVM's duality gap at ``alpha`` against the rescaled primal point
        :math:`w/m`, with a bound of its rounding error: ``(gap, error)``, or
        ``(inf, 0)`` when it does not apply (not the SVM, or a margin not proven
        positive). ``doc/theory/svm_lad.rst``, *Hard margin*.

        With :math:`w = Z^\top(s\circ\alpha)`, :math:`A = \|w\|^2 = \alpha^\top q` and
        :math:`m = \min_{i:\,c_i>0} q_i > 0`, the point :math:`w/m` has every margin at
        least 1, so its hinge loss is 0 *whatever* ``C`` and
        :math:`\mathcal P_C(w/m) = A/(2m^2)`. Every ``C`` (the hard margin,
        :math:`C=\infty`, included) then has :math:`D(\alpha)\le D^*_C\le
        \mathcal P_C(w/m)`, so

        .. math::

            \mathrm{gap}_{\rm hm} = \frac{A}{2m^2} - \Big(\sum_i\alpha_i - \frac A2\Big)

        bounds :math:`D^*_C - D(\alpha)` at every ``C`` at which ``alpha`` is feasible:
        unlike the per-sample gap, whose terms :math:`(Cc_i-\alpha_i)\max(0, 1-q_i)`
        multiply the rounding of a margin by ``C``, it does not grow with ``C``. At the
        optimum of a separable problem (``C`` above every :math:`\alpha^*_i/c_i`),
        :math:`m = 1` and :math:`A = \sum_i\alpha_i`, so it is 0.

        Rounding: :math:`m` is taken as :math:`\min_i(q_i - e_i)` (``margin_error``),
        :math:`A` as its computed value plus the bound of its error
        (:math:`2(\sum_i|\alpha_i|e_i + \gamma_{n+1}\sum_i|\alpha_i q_i|)`) and
        :math:`\sum_i\alpha_i` (non-negative terms) less :math:`\gamma_n` of itself:
        that makes an upper bound of the exact gap, and ``error`` is that bound less
        the nominal gap, plus the rounding of these few operations.
        """
        if not self.hinge:
            return np.inf, 0.0
        held = self.hi > 0
        if not held.any():
            return np.inf, 0.0
        e = np.broadcast_to(np.asarray(margin_error, dtype=np.float64), q.shape)
        m = float(np.min(q[held]))
        m_lo = float(np.min(q[held] - e[held])) * (1.0 - 2.0 * UNIT_ROUNDOFF)
        if not m_lo > 0.0:
            return np.inf, 0.0
        n = alpha.size
        a = np.abs(alpha)
        A = float(alpha @ q)
        A_hi = A + 2.0 * (float(a @ e) + gamma(n + 1) * float(a @ np.abs(q)))
        S = float(alpha.sum())
        if not (np.isfinite(A_hi) and np.isfinite(S)) or A_hi <= 0.0:
            return np.inf, 0.0
        S_lo = S * (1.0 - gamma(n))
        nominal = A / (2.0 * m * m) - (S - 0.5 * A)
        primal_hi = A_hi / (2.0 * m_lo * m_lo)
        dual_lo = S_lo - 0.5 * A_hi
        upper = (primal_hi - dual_lo) + 16.0 * UNIT_ROUNDOFF * (primal_hi + abs(dual_lo))
        return nominal, max(upper - nominal, 0.0)

    def rounding_floor(self, ref: BoxQPReference, resolution: bool = True) -> float:
        r"""The duality gap that double precision cannot resolve at ``ref``, relative
        to the dual objective (``doc/theory/svm_lad.rst``, *Beyond double precision*).

        Two parts: the error bound of the computed gap (``ref.gap_error``), and the
        resolution of the dual point itself. A free variable (strictly inside its box)
        is stored to one rounding, :math:`u|\alpha_j|`; each such step moves margin
        :math:`i` by up to :math:`u|\alpha_j|\|z_i\|\|z_j\|` and the gap by
        :math:`a_i=\max(|lo_i|,|hi_i|)+|\alpha_i|` times that, so no float64 point
        near the optimum can be certified below

        .. math::

            u\Big(\sum_i a_i\|z_i\|\Big)\Big(\sum_{j\ \rm free}|\alpha_j|\|z_j\|\Big),

        which grows like :math:`C^2` (:math:`a_i` and the free :math:`\alpha_j` scale
        with ``C``) while the objective grows at most like ``C``. Variables at an end of
        their box are exact (the box is the data) and do not count. This second part
        (Cauchy-Schwarz, so pessimistic) only explains a solve that did not converge:
        ``resolution=False`` leaves it out.
        """
        alpha = ref.alpha
        dual = abs(self.dual_objective(alpha, ref.margins))
        if not resolution:
            return ref.gap_error / max(dual, TINY)
        zn = np.sqrt(np.maximum(self.sqnorm, 0.0))
        a = np.maximum(np.abs(self.lo), np.abs(self.hi)) + np.abs(alpha)
        free = (alpha > self.lo) & (alpha < self.hi)
        floor = UNIT_ROUNDOFF * float(a @ zn) * float(np.abs(alpha[free]) @ zn[free])
        return (ref.gap_error + floor) / max(dual, TINY)

    def reference(self, C: float, alpha: np.ndarray,
                  margins: tuple[np.ndarray, np.ndarray] | None = None) -> BoxQPReference:
        """The screening reference at ``alpha``: compensated margins, the full duality
        gap and the bounds of their rounding errors (one pass over the data).
        ``margins``: :meth:`accurate_margins` of this very ``alpha``, if the caller has
        them."""
        q, error = self.accurate_margins(alpha) if margins is None else margins
        terms = self.gap_terms(alpha, q)
        gap = max(float(terms.sum()), 0.0)
        gap_error = self.gap_error(alpha, q, error, terms)
        hm_gap, hm_error = self.hard_margin_gap(alpha, q, error)
        hard_margin = max(hm_gap, 0.0) + hm_error
        if hard_margin < gap + gap_error:
            # both bound D*_C - D(alpha): the rules and the certificate take the smaller
            gap, gap_error = max(hm_gap, 0.0), hm_error
        return BoxQPReference(C, alpha, q, gap, error, gap_error, hard_margin)


@dataclass(frozen=True)
class BoxQPReference:
    r"""A solution at ``C``: full dual vector, its margins and its duality gap, with
    bounds of their rounding errors.

    ``margins`` must be :math:`Q\alpha` for exactly this ``alpha`` over **all** samples
    (screened ones included) up to ``margin_error`` (per sample, or one bound for all),
    and ``gap`` the full-problem duality gap at ``alpha`` (0 for a closed-form solution)
    up to ``gap_error``: the exact gap is at most ``gap + gap_error``
    (:meth:`BoxQP.reference` computes all four; ``doc/theory/safety.rst``). For LAD the
    margins are the reference's predictions :math:`G\alpha`.
    """

    C: float
    alpha: np.ndarray
    margins: np.ndarray
    gap: float
    margin_error: np.ndarray | float = 0.0
    gap_error: float = 0.0
    #: an upper bound of the hard-margin gap (:meth:`BoxQP.hard_margin_gap`, its error
    #: included; inf where it does not apply): ``alpha`` is that close to optimal at
    #: every ``C`` at which it is feasible, the hard margin included
    hard_margin: float = np.inf

    # a reference is immutable (frozen, and no rule writes into its arrays): the two
    # sums every ball reads are computed once
    @cached_property
    def sq_norm_w(self) -> float:
        return max(float(self.alpha @ self.margins), 0.0)

    @property
    def safe_gap(self) -> float:
        """An upper bound of the exact duality gap at ``alpha``."""
        return max(self.gap, 0.0) + self.gap_error

    @cached_property
    def sq_norm_w_error(self) -> float:
        r"""Bound of the error of :attr:`sq_norm_w`: the margins' errors weighted by
        :math:`|\alpha|`, and the rounding of the sum (doubled, as every bound)."""
        a = np.abs(self.alpha)
        n = a.size
        return 2.0 * (float(np.sum(a * self.margin_error))
                      + gamma(n + 1) * float(a @ np.abs(self.margins)))


def _cheaper_scale(alpha: np.ndarray, base_alpha: np.ndarray, scale: float) -> float:
    """``scale`` or 1, whichever leaves fewer samples where ``alpha`` differs from
    ``r * base_alpha`` (the kernel columns an update from the base's margins costs).
    Along a C path the samples at the upper bound scale with C and the interior ones
    barely move: the ratio of the Cs suits a solution with many samples at the bound,
    1 one with few (near the hard margin, where a solution that needs no update at
    the next C is the same point, and its margins need no product at all)."""
    if scale == 1.0:
        return scale
    tiny = 8.0 * np.finfo(np.float64).eps * np.abs(alpha)
    n_scaled = np.count_nonzero(np.abs(alpha - scale * base_alpha) > tiny)
    n_same = np.count_nonzero(np.abs(alpha - base_alpha) > tiny)
    return 1.0 if n_same < n_scaled else scale
