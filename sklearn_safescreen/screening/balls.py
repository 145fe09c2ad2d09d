r"""Regions that contain the optimum, and the bounds they give on margins.

Every rule in this package bounds :math:`z_i^\top w^*` over a region known to contain the
optimum :math:`w^*` and compares the bounds with the sample's target (1 for the SVM,
:math:`y_i` for LAD). Everything here works on *projections* (:math:`z_i^\top m`), norms
and radii, so the same code serves the linear and the kernel case
(``doc/theory/svm_lad.rst``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..problems.box_qp import BoxQPReference
from ..problems.constants import SCREEN_RTOL, UNIT_ROUNDOFF
from ._balls_fast import gap_ball_masks, reference_ball_masks, two_ball_core


@dataclass
class ScreeningResult:
    """Decisions of one rule.

    Attributes
    ----------
    at_lower, at_upper : ndarray of bool
        Variables proven to sit at the lower / upper end of their box at the optimum
        (SVM: :math:`\\mathcal R` with alpha=0 / :math:`\\mathcal L` with alpha=C).
    lower, upper : ndarray
        The bounds :math:`\\ell_i \\le z_i^\top w^* \\le u_i` behind the decisions.
    info : dict
        Rule-specific scalars (radii, fall-backs) for reports and tests.
    """

    at_lower: np.ndarray
    at_upper: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def n_screened(self) -> int:
        return int(self.at_lower.sum() + self.at_upper.sum())


def decide(lower, upper, target, active=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Strict decisions :math:`\ell_i > t_i` (lower end) and :math:`u_i < t_i` (upper).

    A relative slack keeps round-off from screening a sample that sits on the margin.
    """
    slack = SCREEN_RTOL * (np.abs(lower) + np.abs(upper) + np.abs(target) + 1.0)
    at_lower = lower > target + slack
    at_upper = upper < target - slack
    if active is not None:
        at_lower &= active
        at_upper &= active
    return at_lower, at_upper


def ball_bounds(center_proj, radius, znorm, error=0.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Lemma 1 of Ogawa et al. (2013): over :math:`\|w-m\|\le r`, :math:`z^\top w \in
    [z^\top m - r\|z\|,\ z^\top m + r\|z\|]`, widened by ``error``, a bound of the
    rounding error of the computed projections ``center_proj``."""
    spread = radius * znorm + error
    return center_proj - spread, center_proj + spread



def gap_radius(gap: float) -> float:
    r"""A bound of :math:`\|w(\alpha)-w^*\|` from the duality gap at a feasible
    :math:`\alpha` of a box-QP dual (SVM, LAD, and their reduced problems):
    :math:`\sqrt{\mathrm{gap}}`.

    The primal point is :math:`w(\alpha)=Z^\top\alpha`. The primal
    :math:`P(w)=\tfrac12\|w\|^2+\sum_i\max_{a\in[lo_i,hi_i]}a(p_i-z_i^\top w)` is
    1-strongly convex, so :math:`P(w)-P^*\ge\tfrac12\|w-w^*\|^2`. The dual
    :math:`D(\alpha)=p^\top\alpha-\tfrac12\|Z^\top\alpha\|^2` is a concave
    quadratic whose maximiser over the box satisfies
    :math:`\nabla D(\alpha^*)^\top(\alpha-\alpha^*)\le0`, so
    :math:`D^*-D(\alpha)\ge\tfrac12\|Z^\top(\alpha-\alpha^*)\|^2
    =\tfrac12\|w(\alpha)-w^*\|^2`. With :math:`P^*=D^*`, the gap
    :math:`P(w(\alpha))-D(\alpha)` is the sum of the two: at least
    :math:`\|w(\alpha)-w^*\|^2`. (Either half alone gives the usual
    :math:`\sqrt{2\,\mathrm{gap}}`; the bound is nearly attained: ratios
    :math:`\|w-w^*\|^2/\mathrm{gap}` of 0.96 occur on small random problems, so no
    smaller constant is safe.) ``doc/theory/safety.rst`` has the argument in full.
    """
    return float(np.sqrt(max(gap, 0.0)))


def reference_ball(ref: BoxQPReference, C: float) -> tuple[np.ndarray, float, float]:
    r"""The ball around :math:`w^*_{[C]}` that a reference at ``ref.C`` gives (Ogawa et
    al. 2013, Theorem 6, both path directions; the ball of DVI, Wang et al. 2014),
    inflated for an inexact reference.

    Centre :math:`c\,\tilde w` with :math:`c=(C+C_{\rm ref})/(2C_{\rm ref})`, radius
    :math:`\rho(\|\tilde w\|+\delta)+c\,\delta` with
    :math:`\rho=|C-C_{\rm ref}|/(2C_{\rm ref})` and :math:`\delta=\sqrt{\mathrm{gap}}`
    (the exact reference optimum lies within :math:`\delta` of :math:`\tilde w`:
    :func:`gap_radius`). Returns ``(centre projections, radius, c, error)``:
    the projections :math:`z_i^\top(c\tilde w)` of the centre on every sample and a
    bound of their rounding error.

    Rounding (``doc/theory/safety.rst``): :math:`\delta` is taken from the reference's
    gap plus its error bound, :math:`\|\tilde w\|` from :math:`\tilde\alpha^\top q`
    plus its error bound, and the radius is rounded up; the projections carry the
    margins' error bound times ``c``.
    """
    c, radius = _reference_radius(ref, C)
    proj = c * ref.margins
    error = c * ref.margin_error * (1.0 + 4 * UNIT_ROUNDOFF) \
        + 4 * UNIT_ROUNDOFF * np.abs(proj)
    return proj, radius, c, error


def _reference_radius(ref, C: float) -> tuple[float, float]:
    """The centre's scale ``c`` and the radius of :func:`reference_ball`."""
    c = (C + ref.C) / (2.0 * ref.C)
    rho = abs(C - ref.C) / (2.0 * ref.C)
    delta = gap_radius(ref.safe_gap)
    norm_w = np.sqrt(ref.sq_norm_w + ref.sq_norm_w_error)
    radius = (rho * (norm_w + delta) + c * delta) * (1.0 + 16 * UNIT_ROUNDOFF)
    return c, radius


def reference_ball_screen(ref, C: float, znorm: np.ndarray, targets, active: np.ndarray
                          ) -> ScreeningResult:
    """:func:`reference_ball`, :func:`ball_bounds` and :func:`decide` with the
    threshold ``targets`` (an array, or one value for every sample) over the samples of
    the mask ``active``, in one compiled pass with the same arithmetic (BT1 for the SVM,
    DVI for LAD). ``info`` holds the radius."""
    c, radius = _reference_radius(ref, C)
    n = ref.margins.shape[0]
    at_lower, at_upper, lower, upper = reference_ball_masks(
        _f64(ref.margins, n), _f64(ref.margin_error, n), float(c), float(radius),
        _f64(znorm, n), _f64(targets, n), np.ascontiguousarray(active).view(np.uint8),
        SCREEN_RTOL, UNIT_ROUNDOFF)
    return ScreeningResult(at_lower, at_upper, lower, upper, {"radius": radius, "c": c})


def _f64(x, n: int) -> np.ndarray:
    """``x`` (an array, or one value for every sample) as a contiguous float64 array of
    length ``n``."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (n,) \
            and x.flags.c_contiguous:
        return x  # the common case, without numpy's conversion calls
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)))


def two_ball_bounds(proj1, r1, proj2, r2, proj_phi, phi_norm, znorm, error1=0.0,
                    error2=0.0, phi_error=0.0):
    r"""Bounds of :math:`z_i^\top w` over the intersection of two balls (Ogawa et al.
    2013, Theorem 8).

    ``proj1 = Z m1``, ``proj2 = Z m2``, ``proj_phi = Z (m1 - m2)``, ``phi_norm =
    ||m1 - m2||``. Uses a robust max/min form, which equals the paper's
    three-case formula (20)/(24) and can never be weaker than either ball, and the
    degenerate cases (point balls, concentric balls, no intersection). Returns
    ``(lower, upper, disjoint)``; when the balls are (numerically) disjoint the caller
    must not trust the intersection.

    Rounding: ``error1`` / ``error2`` bound the errors of ``proj1`` / ``proj2`` (so
    ``proj_phi`` errs by their sum) and ``phi_error`` that of ``phi_norm``; ``r1`` and
    ``r2`` must be upper bounds. The single-ball bounds are widened by the projections'
    errors. The circle value is a bound only where the extremum lies on the circle, and
    it is sensitive to the inputs: it is used only where that case holds whatever the
    errors, and widened by its first-order error (plus the square-root terms of
    :math:`\kappa` and :math:`\tau`); elsewhere the two balls' bounds stand alone.
    """
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (
        proj1, proj2, proj_phi, znorm, error1, error2)))
    proj1, proj2, proj_phi, znorm, error1, error2 = (np.ascontiguousarray(a)
                                                     for a in arrays)
    disjoint = phi_norm - phi_error > (r1 + r2) * (1 + 1e-12) + 1e-12
    # the circle needs: two proper balls that meet, apart by a distance known well
    # (otherwise a point ball, concentric balls, where the smaller one wins through the
    # max/min of the two balls' bounds, or nothing to intersect)
    circle = not (disjoint or r1 <= 0.0 or r2 <= 0.0
                  or phi_norm <= 1e-12 * max(r1, r2, 1.0) or phi_error >= 1e-3 * phi_norm)
    zeta = kappa = t_lo = t_hi = d_zeta = d_kappa = d_zr = d_t = u = 0.0
    exact = True
    if circle:
        zeta = (phi_norm**2 + r2**2 - r1**2) / (2.0 * phi_norm)
        kappa = float(np.sqrt(max(r2**2 - zeta**2, 0.0)))
        t_lo, t_hi = (zeta - phi_norm) / r1, zeta / r2
        # first-order error of every ingredient of the circle value (phi_error <
        # phi/1000); a call without error bounds is exact geometry: no rounding terms
        # either, so that e.g. tangent balls still give their contact point
        exact = bool(np.all(error1 == 0) and np.all(error2 == 0) and phi_error == 0)
        u = 0.0 if exact else UNIT_ROUNDOFF
        d_zeta = abs(0.5 - (r2**2 - r1**2) / (2.0 * phi_norm**2)) * phi_error \
            + 8 * u * (abs(zeta) + phi_norm + (r1**2 + r2**2) / phi_norm)
        d_kappa = float(np.sqrt(2.0 * abs(zeta) * d_zeta + d_zeta**2))
        d_zr = d_zeta / phi_norm + abs(zeta) * 2.0 * phi_error / phi_norm**2  # zeta/||phi||
        d_t = d_zeta / min(r1, r2) + phi_error / r1
    # per sample (compiled, one pass): the two balls' bounds and, where the extremum
    # lies on the circle where both spheres meet for every value of the inputs within
    # their errors, the circle value widened by its first-order error (the error of
    # proj_phi is error1 + error2; the square-root terms of kappa and tau included)
    lower, upper = two_ball_core(proj1, proj2, proj_phi, znorm, error1, error2,
                                 float(r1), float(r2), circle, float(phi_norm), zeta,
                                 kappa, t_lo, t_hi, d_zeta, d_kappa, d_zr, d_t,
                                 float(phi_error), u, exact)
    return lower, upper, disjoint


def gap_ball_screen(margins, targets, sqnorm, gap) -> tuple[np.ndarray, np.ndarray]:
    r"""Gap-safe dynamic screening (``doc/theory/safety.rst``).

    The optimum lies in the ball of radius :math:`\sqrt{\mathrm{gap}}`
    (:func:`gap_radius`) around the current iterate's primal point, whose margins are
    ``margins``. Returns the masks proven at the lower / upper end of the box.
    """
    return gap_ball_masks(np.ascontiguousarray(margins, dtype=np.float64),
                           np.ascontiguousarray(targets, dtype=np.float64),
                           np.ascontiguousarray(sqnorm, dtype=np.float64),
                           gap_radius(gap), SCREEN_RTOL)


def proven_violations(margins, targets, sqnorm, gap, at_lower, at_upper,
                      margin_error=0.0, gap_error=0.0):
    r"""Fixed variables whose bound is *proven* wrong by the gap ball of the reduced
    problem (the certificate, ``doc/theory/safety.rst``).

    A variable held at its lower end needs :math:`z_i^\top w^* \ge t_i`; if even the
    largest margin in the ball is below :math:`t_i`, the screening was wrong. A proof
    must survive round-off: the ball's radius takes ``gap + gap_error`` and the margins
    their error bound ``margin_error`` (moved towards the threshold, which can only
    weaken the proof).
    """
    margins = np.asarray(margins, dtype=np.float64)
    wrong_lower, _ = gap_ball_screen(margins - margin_error, targets, sqnorm,
                                     max(gap, 0.0) + gap_error)
    _, wrong_upper = gap_ball_screen(margins + margin_error, targets, sqnorm,
                                     max(gap, 0.0) + gap_error)
    return (at_lower & wrong_upper) | (at_upper & wrong_lower)
