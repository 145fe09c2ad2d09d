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
duality gap of the reference, :math:`\delta = \sqrt{\mathrm{gap}}`
(:func:`.balls.gap_radius`), so the rules stay safe whatever the solver's accuracy.
BT2 needs only a feasible point and is safe as it is.

**Round-off** (``doc/theory/safety.rst``): the reference carries bounds of the rounding
errors of its margins and of its gap (:meth:`~..problems.box_qp.BoxQP.reference`, from
compensated margins), and ``qv_error`` bounds that of the product :math:`Qv`. Every
radius is an upper bound of the exact one given these bounds, and every projection is
widened by its error bound, so that a decision holds for the exact quantities; the
squared radius of BT2, where large terms cancel at large ``C``, carries the error of
each of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..problems.box_qp import BoxQPReference, gamma
from ..problems.constants import UNIT_ROUNDOFF
from ._balls_fast import ball_two_terms
from .balls import (
    ScreeningResult,
    _f64,
    ball_bounds,
    decide,
    gap_radius,
    reference_ball,
    reference_ball_screen,
    two_ball_bounds,
)

_U = UNIT_ROUNDOFF

SVM_RULES = ("IT", "BT1", "BT2", "DVI")


def ball_test_1(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray
                ) -> ScreeningResult:
    """Ball Test 1 (Ogawa et al. 2013, Theorem 6), gap-inflated."""
    res = reference_ball_screen(ref, C, np.sqrt(sqnorm), 1.0, weights > 0)
    res.info = {"r1": res.info["radius"]}
    return res


def dvi(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray
        ) -> ScreeningResult:
    r"""DVI\ :sub:`s` for the SVM (Wang et al. 2014, Corollary 11), in the θ-form.

    With :math:`\theta = \alpha_{\rm ref}/C_{\rm ref}` and :math:`G = Q`:
    :math:`\tfrac{C+C_{\rm ref}}2(G\theta)_i \mp \tfrac{|C-C_{\rm ref}|}2
    \sqrt{\theta^\top G\theta\,G_{ii}}`, plus the gap inflation for an inexact
    reference. Identical to BT1 in exact arithmetic (Ogawa et al. 2013, Appendix C).
    """
    theta_margins = ref.margins / ref.C  # G theta
    theta_norm = np.sqrt(ref.sq_norm_w + ref.sq_norm_w_error) / ref.C  # ||Z' theta||
    xnorm = np.sqrt(sqnorm)
    delta = gap_radius(ref.safe_gap)
    centre = 0.5 * (C + ref.C) * theta_margins
    spread = 0.5 * abs(C - ref.C) * theta_norm * xnorm
    inflation = (abs(C - ref.C) + C + ref.C) / (2.0 * ref.C) * delta * xnorm
    # the margins' error bound, scaled as the centre, and the rounding of these lines
    error = 0.5 * (C + ref.C) / ref.C * ref.margin_error \
        + 16 * _U * (np.abs(centre) + spread + inflation)
    lower, upper = centre - spread - inflation - error, centre + spread + inflation + error
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, {})


def fresh_product_error(sqnorm: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""Bound of the rounding error of a product :math:`Qv` computed afresh by ordinary
    (BLAS) sums, of at most :math:`2n` terms (linear mode: :math:`Z(Z^\top v)` with
    :math:`d\le n`): :math:`2\gamma_{2n}\|z_i\|\sum_j|v_j|\|z_j\|` (Cauchy-Schwarz,
    :math:`|Q_{ij}|\le\|z_i\|\|z_j\|`)."""
    znorm = np.sqrt(sqnorm)
    return 2.0 * gamma(2 * znorm.size) * znorm * float(np.abs(v) @ znorm)


def _ball_two(ref: BoxQPReference, C: float, weights: np.ndarray, c: float,
              q_matvec: Callable[[np.ndarray], np.ndarray], qv_error, sqnorm):
    r"""BT2 ball (Ogawa et al. 2013, Theorem 7, with weights).

    Weighted NC3: :math:`\xi^*\ge\sum_i\hat s_ic_i(1-z_i^\top w^*)`, so
    :math:`m_2=\tfrac12(\tilde w+Cz_{c\hat s})` and
    :math:`r_2^2=\|m_2\|^2+C(\tilde\xi-\sum_i\hat s_ic_i)` with the weighted hinge
    :math:`\tilde\xi` of the reference. Returns ``(Z m2, r2, B, S, n_s, errors)`` with
    :math:`B=\alpha^\top Q v`, :math:`S=v^\top Qv`, :math:`v=c\circ\hat s`, and
    ``errors`` the bounds of the rounding errors of ``Z m2``, ``B``, ``S``.

    :math:`r_2^2` subtracts terms that grow like :math:`C^2` (a separable problem at
    large ``C`` leaves a small radius from large :math:`\|m_2\|^2` and
    :math:`C\tilde\xi`): the radius is the square root of the computed value plus the
    error bound of every term, so that it bounds the exact radius from above.
    """
    q, e_q = ref.margins, ref.margin_error
    n = q.size
    s_hat = (c * q < 1.0) & (weights > 0)
    v = np.where(s_hat, weights, 0.0)
    qv = q_matvec(v)
    e_v = fresh_product_error(sqnorm, v) if qv_error is None else qv_error()
    A, e_A = ref.sq_norm_w, ref.sq_norm_w_error
    (B, S, a_ev, a_qv, v_ev, v_qv, xi_ref, xi_err, v_sum), proj, e_proj = ball_two_terms(
        *(_f64(x, n) for x in (q, e_q, qv, e_v, ref.alpha, weights, v)), float(C), _U)
    S = max(S, 0.0)
    e_B = a_ev + gamma(n) * a_qv
    e_S = v_ev + gamma(n) * v_qv
    e_xi = xi_err + gamma(n) * xi_ref
    e_vsum = gamma(n) * v_sum
    m2_terms = 0.25 * (abs(A) + 2.0 * C * abs(B) + C * C * S)
    m2_sq = 0.25 * (A + 2.0 * C * B + C * C * S)
    e_m2 = 0.25 * (e_A + 2.0 * C * e_B + C * C * e_S) + gamma(6) * m2_terms
    r2_sq = m2_sq + C * (xi_ref - v_sum)
    e_r2 = 2.0 * (e_m2 + C * (e_xi + e_vsum) + gamma(3) * (m2_terms + C * (xi_ref + v_sum)))
    r2 = np.sqrt(max(r2_sq + e_r2, 0.0)) * (1.0 + 4 * _U)
    return proj, r2, B, S, int(s_hat.sum()), (e_proj, e_A, e_B, e_S)


def ball_test_2(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray,
                q_matvec: Callable[[np.ndarray], np.ndarray], qv_error=None
                ) -> ScreeningResult:
    """Ball Test 2 (Ogawa et al. 2013, Theorem 7). Needs only a feasible reference.

    ``qv_error()`` returns a bound of the rounding error of the last ``q_matvec``
    product (default: :func:`fresh_product_error`)."""
    znorm = np.sqrt(sqnorm)
    c = (C + ref.C) / (2.0 * ref.C)
    proj, r2, _, _, _, errors = _ball_two(ref, C, weights, c, q_matvec, qv_error, sqnorm)
    lower, upper = ball_bounds(proj, r2, znorm, errors[0])
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, {"r2": r2})


def intersection_test(ref: BoxQPReference, C: float, sqnorm: np.ndarray, weights: np.ndarray,
                      q_matvec: Callable[[np.ndarray], np.ndarray], qv_error=None
                      ) -> ScreeningResult:
    r"""Intersection Test (Ogawa et al. 2013, Theorem 8) of the (inflated) BT1 and BT2
    balls.

    :math:`\phi = m_1 - m_2 = (c-\tfrac12)\tilde w - \tfrac C2 z_{c\hat s}`, so
    :math:`\|\phi\|^2 = (c-\tfrac12)^2A - (c-\tfrac12)CB + \tfrac{C^2}4S` and
    :math:`z_i^\top\phi = z_i^\top m_1 - z_i^\top m_2`. If the balls are numerically
    disjoint (possible only through round-off), it falls back to BT2 alone, which needs
    no optimal reference.
    """
    znorm = np.sqrt(sqnorm)
    proj1, r1, c, e1 = reference_ball(ref, C)
    proj2, r2, B, S, n_s, (e2, e_A, e_B, e_S) = _ball_two(ref, C, weights, c, q_matvec,
                                                           qv_error, sqnorm)
    h = c - 0.5
    phi_terms = h * h * abs(ref.sq_norm_w) + abs(h * C * B) + 0.25 * C * C * S
    phi_sq = h * h * ref.sq_norm_w - h * C * B + 0.25 * C * C * S
    e_phi_sq = h * h * e_A + abs(h) * C * e_B + 0.25 * C * C * e_S + gamma(6) * phi_terms
    phi_norm = np.sqrt(max(phi_sq, 0.0))
    # the distance between the centres lies in [sqrt(phi_sq - e), sqrt(phi_sq + e)]
    phi_error = max(np.sqrt(max(phi_sq + 2.0 * e_phi_sq, 0.0)) - phi_norm,
                    phi_norm - np.sqrt(max(phi_sq - 2.0 * e_phi_sq, 0.0)))
    lower, upper, disjoint = two_ball_bounds(proj1, r1, proj2, r2, proj1 - proj2,
                                             phi_norm, znorm, e1, e2, phi_error)
    info = {"r1": r1, "r2": r2, "phi_norm": phi_norm, "n_s_hat": n_s,
            "fallback": "BT2" if disjoint else None}
    if disjoint:
        lower, upper = ball_bounds(proj2, r2, znorm, e2)
    at_lower, at_upper = decide(lower, upper, 1.0, weights > 0)
    return ScreeningResult(at_lower, at_upper, lower, upper, info)


def screen_svm(rule: str, ref: BoxQPReference, C: float, sqnorm: np.ndarray,
               weights: np.ndarray, q_matvec: Callable[[np.ndarray], np.ndarray],
               qv_error=None) -> ScreeningResult:
    """Dispatch to one of :data:`SVM_RULES`."""
    if rule == "BT1":
        return ball_test_1(ref, C, sqnorm, weights)
    if rule == "DVI":
        return dvi(ref, C, sqnorm, weights)
    if rule == "BT2":
        return ball_test_2(ref, C, sqnorm, weights, q_matvec, qv_error)
    if rule == "IT":
        return intersection_test(ref, C, sqnorm, weights, q_matvec, qv_error)
    raise ValueError(f"unknown SVM screening rule {rule!r}; expected one of {SVM_RULES}")
