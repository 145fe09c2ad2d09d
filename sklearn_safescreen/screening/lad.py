r"""Safe sample screening for least absolute deviations (LAD) regression.

Problem (Wang et al. 2014, Sec. 5.3, with a regularised bias feature and per-sample
weights; ``doc/theory/svm_lad.rst``):

.. math::

    \min_w\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\,|y_i - w^\top\Phi(x_i)|,

dual :math:`\min_{\alpha}\ \tfrac12\alpha^\top G\alpha - y^\top\alpha` over the box
:math:`-Cc_i\le\alpha_i\le Cc_i`, :math:`G_{ij}=K(x_i,x_j)`, :math:`w=\sum_i\alpha_i\Phi(x_i)`.
At the optimum (mind the **signs**):

* :math:`\mathcal R`: prediction **above** the target, :math:`w^\top\Phi(x_i)>y_i`
  (negative residual), so :math:`\alpha_i=-Cc_i` (the lower end of the box);
* :math:`\mathcal L`: prediction **below** the target (positive residual), so
  :math:`\alpha_i=+Cc_i` (the upper end);
* :math:`\mathcal E`: interpolated samples, :math:`\alpha_i` anywhere in the box.

A rule bounds the prediction :math:`\ell_i\le w^{*\top}_{[C]}\Phi(x_i)\le u_i` and compares
the bounds with :math:`y_i` (not with 1 as for the SVM): :math:`\ell_i>y_i` proves
:math:`\mathcal R`, :math:`u_i<y_i` proves :math:`\mathcal L` (strict, with the slack of
relative slack that keeps round-off from deciding a sample on its threshold).

References are :class:`~sklearn_safescreen.screening.svm.BoxQPReference` objects: the
dataclass holds what any box-QP dual solution needs (``C``, the full ``alpha``, its
margins :math:`G\alpha` -- for LAD, the *predictions* of the reference -- and its full
duality gap); nothing in it is specific to the hinge loss.
"""

from __future__ import annotations

import numpy as np

from ..problems.box_qp import BoxQPReference
from .balls import ScreeningResult, reference_ball_screen

LAD_RULES = ("DVI",)


def dvi_lad(ref: BoxQPReference, C: float, sqnorm: np.ndarray, y: np.ndarray,
            weights: np.ndarray) -> ScreeningResult:
    r"""DVI\ :sub:`s` for LAD (Wang et al. 2014, Corollary 15), inflated by the
    reference's duality gap (``doc/theory/safety.rst``).

    With the reference predictions :math:`q=G\alpha_{\rm ref}` at :math:`C_{\rm ref}`,
    :math:`c=(C+C_{\rm ref})/(2C_{\rm ref})` and :math:`\rho=|C-C_{\rm ref}|/(2C_{\rm ref})`
    (both path directions):

    .. math::

        \ell_i,\ u_i = c\,q_i \mp \big(\rho(\|\tilde w\|+\delta) + c\,\delta\big)\|x_i\|,
        \qquad \delta=\sqrt{\mathrm{gap}_{\rm ref}},

    the bounds of :math:`x_i^\top w^*_{[C]}` over the variational-inequality ball of
    Wang et al.'s Theorem 6 around the *exact* reference optimum, which lies within
    :math:`\delta` of :math:`\tilde w` (:func:`~.balls.gap_radius`).
    With an exact reference (``gap = 0``) these are exactly Corollary 15's bounds. The
    box :math:`C[-c_i, c_i]` scales with ``C``, so the ball holds with weights too.

    Decisions: :math:`\ell_i>y_i\Rightarrow\alpha_i=-Cc_i` (``at_lower``, set
    :math:`\mathcal R`), :math:`u_i<y_i\Rightarrow\alpha_i=+Cc_i` (``at_upper``, set
    :math:`\mathcal L`); samples with :math:`c_i=0` are left alone (their box is the
    point 0). Cost: O(n) given the reference predictions.

    Parameters
    ----------
    ref : BoxQPReference
        Solution at ``ref.C``: full ``alpha`` (screened samples included: the rule
        needs the whole reference),
        ``margins`` = its predictions :math:`G\alpha` on every training sample, ``gap``
        = its full-problem duality gap.
    C : float
        Target regularisation value (either side of ``ref.C``).
    sqnorm : ndarray of shape (n_samples,)
        :math:`G_{ii}=\|\Phi(x_i)\|^2` (bias feature included).
    y : ndarray of shape (n_samples,)
        Targets.
    weights : ndarray of shape (n_samples,)
        Per-sample multipliers :math:`c_i\ge 0` of ``C``.

    Returns
    -------
    ScreeningResult
        ``info`` holds the radius of the (inflated) ball.
    """
    res = reference_ball_screen(ref, C, np.sqrt(sqnorm), y, weights > 0)
    res.info = {"radius": res.info["radius"]}
    return res


def screen_lad(rule: str, ref: BoxQPReference, C: float, sqnorm: np.ndarray, y: np.ndarray,
               weights: np.ndarray) -> ScreeningResult:
    """Dispatch to one of :data:`LAD_RULES`."""
    if rule == "DVI":
        return dvi_lad(ref, C, sqnorm, y, weights)
    raise ValueError(f"unknown LAD screening rule {rule!r}; expected one of {LAD_RULES}")
