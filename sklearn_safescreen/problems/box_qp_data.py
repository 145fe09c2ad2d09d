r"""The data of the box-QP duals that do not depend on ``C`` (:class:`BoxQPData`, the
SVM's :class:`SVMData` and LAD's :class:`LADData`): they build the problem at a given
``C`` (:class:`~.box_qp.BoxQP`), and know their closed-form solutions below the
critical value, the critical values themselves and the SVM's eps-path steps
(Ogawa et al. 2013, ``doc/theory/svm_lad.rst``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .box_qp import BoxQP, BoxQPReference, SolveStatus, gamma
from .constants import UNIT_ROUNDOFF
from .kernels import KernelMatrix


class BoxQPData:
    """The data of one box-QP dual that do not depend on ``C``: design matrix (bias
    column included) or kernel, signs :math:`s`, linear term :math:`p`, weights
    :math:`c` and the squared norms :math:`Q_{ii}`. :meth:`problem` adds the box of a
    given ``C`` (family-specific: :class:`SVMData`, :class:`LADData`).

    Owns the cache of :meth:`q_matvec`: along a path, the product with a vector that
    changed in a few entries costs the kernel columns of those entries only (or of its
    non-zero entries, when they are fewer).
    """

    def __init__(self, X, kernel: KernelMatrix | None, sign: np.ndarray, p: np.ndarray,
                 weights: np.ndarray):
        self.X, self.kernel = X, kernel
        self.sign, self.p, self.weights = sign, p, weights
        self.sqnorm = (kernel.diag() if kernel is not None else
                       (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                        else np.einsum("ij,ij->i", X, X)))
        if not np.all(np.isfinite(self.sqnorm)):
            raise ValueError(
                "the squared norms of the samples in feature space, k(x, x), overflow "
                f"(up to {np.max(np.abs(self.sqnorm)):.3g}): the kernel's values are too "
                "large for float64 arithmetic; rescale X, or lower gamma or the degree")
        self._v = np.zeros_like(sign)
        self._qv = np.zeros_like(sign)
        self._qv_error = np.zeros_like(sign)
        self._znorm = np.sqrt(np.maximum(self.sqnorm, 0.0))
        self.status = SolveStatus()  # the task's solves, read by the progress lines

    @property
    def n_samples(self) -> int:
        return self.sign.shape[0]

    def box(self, C: float) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - defined by each family

    #: the hinge-loss SVM (:attr:`BoxQP.hinge`)
    hinge = False

    def problem(self, C: float, newton=None) -> BoxQP:
        lo, hi = self.box(C)
        return BoxQP(sign=self.sign, p=self.p, lo=lo, hi=hi, sqnorm=self.sqnorm,
                     X=self.X if self.kernel is None else None, kernel=self.kernel,
                     newton=newton, hinge=self.hinge, status=self.status)

    def q_matvec(self, v: np.ndarray) -> np.ndarray:
        """``Q v``; in kernel mode updated from the previous call's product, or afresh
        when ``v`` has fewer non-zero entries than entries changed since."""
        s, zn = self.sign, self._znorm
        if self.kernel is None:
            # two ordinary products of at most n + d terms (Cauchy-Schwarz per entry)
            self._qv_error = 2.0 * gamma(s.size + self.X.shape[1]) * zn \
                * float(np.abs(v) @ zn)
            return s * np.asarray(self.X @ np.asarray(self.X.T @ (s * v)).ravel()).ravel()
        changed = np.flatnonzero(v != self._v)
        if changed.size:
            nonzero = np.flatnonzero(v)
            if nonzero.size < changed.size:
                # afresh when that reads fewer kernel columns than the update: a path's
                # first product after steps without it, when more samples have changed
                # since the stored product than are now non-zero
                changed, dv, base, base_error = nonzero, s[nonzero] * v[nonzero], 0.0, 0.0
            else:
                dv = s[changed] * (v[changed] - self._v[changed])
                base, base_error = self._qv, self._qv_error
            self._qv = base + s * self.kernel.matvec(np.arange(s.size), changed, dv)
            self._v = v.copy()
            # each update adds the error of its product (and of the kernel values) and
            # the rounding of the addition: the bound accumulates along the path (and
            # starts again from a product afresh)
            self._qv_error = base_error + 2.0 * (
                (gamma(changed.size + 1) + self.kernel.entry_rtol) * zn
                * float(np.abs(dv) @ zn[changed])
                + UNIT_ROUNDOFF * np.abs(self._qv))
        return self._qv.copy()

    def q_matvec_error(self) -> np.ndarray:
        """Bound of the rounding error of the last :meth:`q_matvec` product."""
        return self._qv_error.copy()


class SVMData(BoxQPData):
    """The hinge-loss SVM: signs ``ysign``, :math:`p = 1`, box :math:`[0, Cc_i]`."""

    hinge = True

    def __init__(self, X, kernel: KernelMatrix | None, ysign: np.ndarray,
                 weights: np.ndarray):
        super().__init__(X, kernel, ysign, np.ones(ysign.shape[0]), weights)

    def box(self, C: float) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.n_samples), C * self.weights

    def critical_value(self) -> tuple[float, np.ndarray]:
        r""":math:`C_{\min}` and :math:`Qc` (:func:`critical_C`)."""
        qc = self.q_matvec(self.weights)
        return critical_C(qc[self.weights > 0]), qc

    def closed_form(self, C: float, qc: np.ndarray) -> BoxQPReference:
        r"""The optimum :math:`\alpha = Cc` at :math:`C \le C_{\min}` (every sample
        inside the margin): its gap is 0 up to the rounding of :math:`C_{\min}`; the
        reference carries its compensated margins and error bounds (``qc``, the
        caller's :math:`Qc`, only located :math:`C_{\min}`)."""
        return self.problem(C).reference(C, C * self.weights)


class LADData(BoxQPData):
    """LAD regression: :math:`s = 1`, :math:`p = y`, box :math:`[-Cc_i, Cc_i]`."""

    def __init__(self, X, kernel: KernelMatrix | None, y: np.ndarray, weights: np.ndarray):
        super().__init__(X, kernel, np.ones(y.shape[0]), y, weights)

    @property
    def y(self) -> np.ndarray:
        return self.p

    def box(self, C: float) -> tuple[np.ndarray, np.ndarray]:
        bound = C * self.weights
        return -bound, bound

    def closed_form(self, C: float, slope: np.ndarray, slope_predictions: np.ndarray
                    ) -> tuple[BoxQPReference, float]:
        """The reference :math:`\\alpha = C\\gamma` at ``C`` with its full duality gap
        (0 up to round-off when no target is 0) and relative gap; ``slope`` is
        :math:`\\gamma` and ``slope_predictions`` :math:`G\\gamma`."""
        problem = self.problem(C)
        ref = problem.reference(C, C * slope)
        dual = abs(problem.dual_objective(ref.alpha, ref.margins))
        return ref, ref.gap / max(dual, 1e-300)


def critical_C(q_of_weights: np.ndarray) -> float:
    r""":math:`C_{\min} = 1/\max_i (Qc)_i` (Ogawa et al. 2013, Lemma 9, with weights):
    for every :math:`C \le C_{\min}` the SVM optimum is :math:`\alpha = Cc`. Returns
    ``inf`` in the degenerate case :math:`\max_i(Qc)_i \le 0` (then :math:`\alpha = Cc`
    is optimal for every ``C``)."""
    top = float(np.max(q_of_weights)) if q_of_weights.size else 0.0
    return np.inf if top <= 0.0 else 1.0 / top


def lad_critical_C(slope_predictions: np.ndarray, y: np.ndarray,
                   weights: np.ndarray) -> float:
    r"""Largest ``C`` below which the LAD optimum is linear in ``C``.

    For small ``C`` the optimum is :math:`\alpha^*_{[C]}=C\gamma` with
    :math:`\gamma_i=c_i\,\mathrm{sign}(y_i)` wherever :math:`y_i\ne0` (each sample on the
    side of its target: with :math:`w\to0` the residual has the sign of :math:`y_i`);
    samples with :math:`y_i=0` take the solution :math:`\beta` of a C-free box QP (the
    caller's). The predictions at ``C`` are then :math:`C(G\gamma)_i` and optimality
    needs :math:`s_i\,C(G\gamma)_i\le|y_i|` for every sample with :math:`y_i\ne0`
    (:math:`s=\mathrm{sign}(y)`), hence

    .. math::

        C^{\rm LAD}_{\min} = \min_{i:\ c_i>0,\ y_i\ne0,\ s_i(G\gamma)_i>0}
            \frac{|y_i|}{s_i(G\gamma)_i}

    (``inf`` when no index qualifies: then :math:`C\gamma` is optimal for every ``C``).

    Parameters
    ----------
    slope_predictions : ndarray of shape (n_samples,)
        :math:`G\gamma`.
    y, weights : ndarray of shape (n_samples,)

    Returns
    -------
    float
    """
    s = np.sign(y)
    push = s * slope_predictions
    ok = (weights > 0) & (s != 0) & (push > 0)
    if not ok.any():
        return np.inf
    return float(np.min(np.abs(y[ok]) / push[ok]))


# ------------------------------------------------------------- the SVM eps-path ---
#: Resolution of the eps-path step search: candidate ratios are powers of this, so the
#: ratio chosen is within 0.1% of the largest admissible one; every candidate is
#: evaluated (one vectorised pass, :func:`hinge_sums`), so a finer grid costs more.
_EPS_PATH_RESOLUTION = 1.001


def hinge_sums(q: np.ndarray, c: np.ndarray, rhos: np.ndarray) -> np.ndarray:
    r""":math:`\sum_i c_i\max(0, 1-\rho q_i)` for every :math:`\rho` in ``rhos`` (>0):
    piecewise linear in :math:`\rho`, evaluated by sorting the kinks :math:`1/q_i`
    (O((n + m) log n), no n x m array)."""
    pos = q > 0
    base_c = c[~pos].sum()
    base_cq = (c[~pos] * q[~pos]).sum()
    kinks = 1.0 / q[pos]
    order = np.argsort(kinks)
    kinks, cp, cqp = kinks[order], c[pos][order], (c[pos] * q[pos])[order]
    # samples with kink > rho still have a positive hinge: suffix sums from the first
    # kink above rho
    suffix_c = np.concatenate([np.cumsum(cp[::-1])[::-1], [0.0]])
    suffix_cq = np.concatenate([np.cumsum(cqp[::-1])[::-1], [0.0]])
    first = np.searchsorted(kinks, rhos, side="right")
    return (base_c + suffix_c[first]) - rhos * (base_cq + suffix_cq[first])


def svm_eps_step(alpha: np.ndarray, margins: np.ndarray, weights: np.ndarray, C: float,
                 eps: float, max_ratio: float) -> float:
    r"""Next ratio :math:`\varrho = C_t/C_{t-1}` of the eps-path (Ogawa et al. 2013,
    Algorithm 1, with the conservative step rule of ``doc/theory/svm_lad.rst``).

    With :math:`\tilde\alpha=\varrho\alpha`, :math:`q=Q\alpha`, :math:`A=\alpha^\top q`:
    :math:`\mathcal D(\tilde\alpha)=-\tfrac12\varrho^2A+\varrho\mathbf 1^\top\alpha`,
    :math:`\mathcal P(\varrho w)=\tfrac12\varrho^2A+\varrho C\sum_ic_i(1-\varrho q_i)_+`,
    :math:`\mathcal P(w)=\tfrac12A+\varrho C\sum_ic_i(1-q_i)_+`, and
    :math:`E(\varrho)=(\min\mathcal P-\mathcal D)/\min\mathcal P`. Returns the largest
    candidate :math:`\varrho\le` ``max_ratio`` (powers of ``_EPS_PATH_RESOLUTION``)
    such that :math:`E\le\varepsilon` on every candidate up to it; at least one
    resolution step, so that the path always advances. Efficiency only: the choice of
    values never affects safety.
    """
    n_cand = max(int(np.ceil(np.log(max_ratio) / np.log(_EPS_PATH_RESOLUTION))), 1)
    rhos = np.minimum(_EPS_PATH_RESOLUTION ** np.arange(1, n_cand + 1), max_ratio)
    A = float(alpha @ margins)
    S = float(alpha.sum())
    dual = -0.5 * rhos**2 * A + rhos * S
    p_scaled = 0.5 * rhos**2 * A + rhos * C * hinge_sums(margins, weights, rhos)
    p_same = 0.5 * A + rhos * C * float(weights @ np.maximum(0.0, 1.0 - margins))
    primal = np.minimum(p_scaled, p_same)
    err = (primal - dual) / np.maximum(np.abs(primal), 1e-300)
    bad = np.flatnonzero(err > eps)
    last = (bad[0] - 1) if bad.size else rhos.size - 1
    return float(rhos[max(last, 0)])

