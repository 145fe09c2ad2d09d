r"""Safe sample screening rules for the bias-free (regularised-bias) hinge-loss SVM.

Problem (Ogawa et al. 2013; ``doc/theory/svm_lad.rst``):
:math:`\min_w \tfrac12\|w\|^2 + C\sum_i c_i\max(0, 1 - z_i^\top w)` with per-sample
weights :math:`c_i \ge 0`, dual box :math:`0\le\alpha_i\le Cc_i`.

Each rule bounds the margin :math:`z_i^\top w^*_{[C]}` at the target ``C`` from a
reference solution at ``C_ref`` (either side of ``C``), then fixes

* :math:`\alpha_i = 0` when the lower bound exceeds 1 (set :math:`\mathcal R`),
* :math:`\alpha_i = Cc_i` when the upper bound is below 1 (set :math:`\mathcal L`).

Everything is computed from the reference margins :math:`q = Q\alpha_{\rm ref}` (which the
solver's certificate already has), :math:`Q_{ii}` and, for BT2/IT, one product
:math:`Q(c\circ\hat s)` supplied by the caller (cached along a path), so no rule touches the
kernel matrix itself (Ogawa et al. 2013, Sec. IV-C). Cost: O(n) given these vectors.

**Inexact references** (``doc/theory/safety.rst``): ball 1 (BT1/DVI) is inflated by the
duality gap of the
reference, :math:`\delta = \sqrt{2\,\mathrm{gap}}`, so the rules stay safe whatever the
solver's accuracy. BT2 needs only a feasible point and is safe as it is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..problems.box_qp import BoxQPReference
from .balls import ScreeningResult, ball_bounds, decide, reference_ball, two_ball_bounds

SVM_RULES = ("IT", "BT1", "BT2", "DVI")


def ball_test_1(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray
                ) -> ScreeningResult:
    """Ball Test 1 (Ogawa et al. 2013, Theorem 6), gap-inflated."""
    znorm = np.sqrt(sqnorm)
    proj, radius, _ = reference_ball(ref, C)
    lower, upper = ball_bounds(proj, radius, znorm)
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, {"r1": radius})


def dvi(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray
        ) -> ScreeningResult:
    r"""DVI\ :sub:`s` for the SVM (Wang et al. 2014, Corollary 11), in the θ-form.

    With :math:`\theta = \alpha_{\rm ref}/C_{\rm ref}` and :math:`G = Q`:
    :math:`\tfrac{C+C_{\rm ref}}2(G\theta)_i \mp \tfrac{|C-C_{\rm ref}|}2
    \sqrt{\theta^\top G\theta\,G_{ii}}`, plus the gap inflation for an inexact
    reference. Identical to BT1 in exact arithmetic (Ogawa et al. 2013, Appendix C).
    """
    theta_margins = ref.margins / ref.C  # G theta
    theta_norm = np.sqrt(ref.sq_norm_w) / ref.C  # ||Z' theta||
    xnorm = np.sqrt(sqnorm)
    delta = np.sqrt(2.0 * max(ref.gap, 0.0))
    centre = 0.5 * (C + ref.C) * theta_margins
    spread = 0.5 * abs(C - ref.C) * theta_norm * xnorm
    inflation = (abs(C - ref.C) + C + ref.C) / (2.0 * ref.C) * delta * xnorm
    lower, upper = centre - spread - inflation, centre + spread + inflation
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, {})


def _ball_two(ref: BoxQPReference, C: float, weights: np.ndarray, c: float,
              q_matvec: Callable[[np.ndarray], np.ndarray]):
    r"""BT2 ball (Ogawa et al. 2013, Theorem 7, with weights).

    Weighted NC3: :math:`\xi^*\ge\sum_i\hat s_ic_i(1-z_i^\top w^*)`, so
    :math:`m_2=\tfrac12(\tilde w+Cz_{c\hat s})` and
    :math:`r_2^2=\|m_2\|^2+C(\tilde\xi-\sum_i\hat s_ic_i)` with the weighted hinge
    :math:`\tilde\xi` of the reference. Returns ``(Z m2, r2, B, S)`` with
    :math:`B=\alpha^\top Q v`, :math:`S=v^\top Qv`, :math:`v=c\circ\hat s`.
    """
    q = ref.margins
    s_hat = (c * q < 1.0) & (weights > 0)
    v = np.where(s_hat, weights, 0.0)
    qv = q_matvec(v)
    A = ref.sq_norm_w
    B, S = float(ref.alpha @ qv), max(float(v @ qv), 0.0)
    xi_ref = float(weights @ np.maximum(0.0, 1.0 - q))
    m2_sq = max(0.25 * (A + 2.0 * C * B + C * C * S), 0.0)
    r2 = np.sqrt(max(m2_sq + C * (xi_ref - v.sum()), 0.0))
    return 0.5 * (q + C * qv), r2, B, S, int(s_hat.sum())


def ball_test_2(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray,
                q_matvec: Callable[[np.ndarray], np.ndarray]) -> ScreeningResult:
    """Ball Test 2 (Ogawa et al. 2013, Theorem 7). Needs only a feasible reference."""
    znorm = np.sqrt(sqnorm)
    c = (C + ref.C) / (2.0 * ref.C)
    proj, r2, *_ = _ball_two(ref, C, weights, c, q_matvec)
    lower, upper = ball_bounds(proj, r2, znorm)
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, {"r2": r2})


def intersection_test(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray,
                      q_matvec: Callable[[np.ndarray], np.ndarray]) -> ScreeningResult:
    r"""Intersection Test (Ogawa et al. 2013, Theorem 8) of the (inflated) BT1 and BT2
    balls.

    :math:`\phi = m_1 - m_2 = (c-\tfrac12)\tilde w - \tfrac C2 z_{c\hat s}`, so
    :math:`\|\phi\|^2 = (c-\tfrac12)^2A - (c-\tfrac12)CB + \tfrac{C^2}4S` and
    :math:`z_i^\top\phi = z_i^\top m_1 - z_i^\top m_2`. If the balls are numerically
    disjoint (possible only through round-off), it falls back to BT2 alone, which needs
    no optimal reference.
    """
    znorm = np.sqrt(sqnorm)
    proj1, r1, c = reference_ball(ref, C)
    proj2, r2, B, S, n_s = _ball_two(ref, C, weights, c, q_matvec)
    h = c - 0.5
    phi_norm = np.sqrt(max(h * h * ref.sq_norm_w - h * C * B + 0.25 * C * C * S, 0.0))
    lower, upper, disjoint = two_ball_bounds(proj1, r1, proj2, r2, proj1 - proj2,
                                             phi_norm, znorm)
    info = {"r1": r1, "r2": r2, "phi_norm": phi_norm, "n_s_hat": n_s,
            "fallback": "BT2" if disjoint else None}
    if disjoint:
        lower, upper = ball_bounds(proj2, r2, znorm)
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, info)


def screen_svm(rule: str, ref: BoxQPReference, C: float, sqnorm: np.ndarray,
               weights: np.ndarray, q_matvec: Callable[[np.ndarray], np.ndarray]
               ) -> ScreeningResult:
    """Dispatch to one of :data:`SVM_RULES`."""
    if rule == "BT1":
        return ball_test_1(ref, C, sqnorm, weights)
    if rule == "DVI":
        return dvi(ref, C, sqnorm, weights)
    if rule == "BT2":
        return ball_test_2(ref, C, sqnorm, weights, q_matvec)
    if rule == "IT":
        return intersection_test(ref, C, sqnorm, weights, q_matvec)
    raise ValueError(f"unknown SVM screening rule {rule!r}; expected one of {SVM_RULES}")
