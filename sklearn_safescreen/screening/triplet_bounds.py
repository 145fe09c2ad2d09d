r"""Balls that contain the optimal metric :math:`M^\star` (Yoshida et al. 2019, Sec. 3;
``doc/theory/metric_learning.rst``).

Every bound is a Frobenius ball :math:`\{X:\|X-Q\|_F\le r\}` (a Euclidean ball of
:math:`\mathbb R^d` for a diagonal metric) guaranteed to contain the optimum at the
*target* :math:`\lambda`:

* GB: :math:`Q=M-\nabla P_\lambda(M)/(2\lambda)`, :math:`r=\|\nabla P_\lambda(M)\|/(2\lambda)`;
* PGB: :math:`Q=[Q^{GB}]_+`, :math:`r^2=r_{GB}^2-\|[Q^{GB}]_-\|^2`;
* DGB: :math:`Q=M`, :math:`r^2=2\,\mathrm{gap}/\lambda`;
* CDGB: :math:`Q=S_+/\lambda`, :math:`r^2=(P(S_+/\lambda)-D(\alpha))/\lambda`;
* RPB: :math:`Q=\frac{\lambda_0+\lambda}{2\lambda}M_0^\star`,
  :math:`r=\frac{|\lambda_0-\lambda|}{2\lambda}\|M_0^\star\|`;
* RRPB: :math:`Q=\frac{\lambda_0+\lambda}{2\lambda}M_0`,
  :math:`r=\frac{|\lambda_0-\lambda|}{2\lambda}\|M_0\|
  +\frac{|\lambda_0-\lambda|+\lambda_0+\lambda}{2\lambda}\epsilon`.

GB, PGB and DGB take the reference and its gradient / gap for the **same** problem and
:math:`\lambda` (the reduced problem is valid there); RPB needs an exact
optimum (it raises otherwise), RRPB only :math:`\|M_0^\star-M_0\|\le\epsilon`
with :math:`\epsilon=\sqrt{2\,\mathrm{gap}_0/\lambda_0}` (eq. 3.2). Radii are inflated by
the round-off margin of ``doc/theory/safety.rst``. The RRPB ranges (Theorem 10 and the
derived L-range)
are here too: they are the same ball read as a function of :math:`\lambda`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.constants import RADIUS_ATOL, RADIUS_RTOL
from ..problems.triplet_problem import psd_split
from ._triplet_fast import (  # noqa: F401
    bounded_values,
    range_screen,
    rrpb_ranges_pass,
    scaled_sphere_screen,
    scaled_sphere_screen_rad,
)


@dataclass
class Ball:
    r"""A region :math:`\{X:\|X-Q\|\le r\}` containing :math:`M^\star`.

    ``scale`` is set when the centre is ``scale`` times the reference matrix, so that
    :math:`\langle H_t,Q\rangle` is ``scale`` times the known reference values (O(1) per
    triplet). ``psd_center`` says the centre is PSD (the SDP rule's
    single-negative-eigenvalue shortcut applies); ``plane`` is :math:`P=-A_-` of a
    half-space :math:`\langle P,X\rangle\ge0` containing the PSD cone (linear rule,
    3.3) when the construction provides one.
    """

    name: str
    center: np.ndarray
    radius: float
    scale: float | None = None
    psd_center: bool = False
    plane: np.ndarray | None = None


def inflate(radius: float, center: np.ndarray) -> float:
    """The round-off margin of every radius:
    :math:`r(1+10^{-9})+10^{-12}\\max(1,\\|Q\\|)`."""
    return (max(float(radius), 0.0) * (1.0 + RADIUS_RTOL)
            + RADIUS_ATOL * max(1.0, float(np.linalg.norm(center))))


def gb(M: np.ndarray, grad: np.ndarray, lam: float) -> Ball:
    """Gradient bound (Yoshida et al. 2019, Theorem 1): ``M`` PSD, ``grad`` a
    (sub)gradient of the (reduced) primal at ``M`` for this ``lam``."""
    Q = M - grad / (2.0 * lam)
    r = float(np.linalg.norm(grad)) / (2.0 * lam)
    return Ball("GB", Q, inflate(r, Q), plane=None)


def pgb(M: np.ndarray, grad: np.ndarray, lam: float, diagonal: bool) -> Ball:
    """Projected gradient bound (Theorem 2): the GB centre projected on the PSD cone,
    radius :math:`r_{GB}^2-\\|Q^{GB}_-\\|^2` (clamped at 0: rounding can make it
    negative). Also carries :math:`P=-Q^{GB}_-` for the GB + linear rule."""
    Qgb = M - grad / (2.0 * lam)
    r2 = float(np.sum(grad * grad)) / (4.0 * lam * lam)
    Qp, Qn = psd_split(Qgb, diagonal)
    r = np.sqrt(max(r2 - float(np.sum(Qn * Qn)), 0.0))
    return Ball("PGB", Qp, inflate(r, Qp), psd_center=True, plane=-Qn)


def gb_linear(M: np.ndarray, grad: np.ndarray, lam: float, diagonal: bool) -> Ball:
    """The GB ball with the half-space :math:`\\langle -Q^{GB}_-,X\\rangle\\ge0` (Theorem 3
    (b)): tighter than PGB when used with the linear rule."""
    ball = gb(M, grad, lam)
    ball.plane = -psd_split(ball.center, diagonal)[1]
    return ball


def dgb(M: np.ndarray, gap: float, lam: float) -> Ball:
    """Duality gap bound (Theorem 4): centre the PSD iterate ``M``, radius
    :math:`\\sqrt{2\\,\\mathrm{gap}/\\lambda}`."""
    r = np.sqrt(2.0 * max(gap, 0.0) / lam)
    return Ball("DGB", M, inflate(r, M), scale=1.0, psd_center=True)


def cdgb(S_pos: np.ndarray, primal_at_image: float, dual: float, lam: float) -> Ball:
    """Constrained duality gap bound (Theorem 14): centre :math:`M_\\lambda(\\alpha)=
    S_+/\\lambda`, radius :math:`\\sqrt{(P(S_+/\\lambda)-D(\\alpha))/\\lambda}`."""
    Q = S_pos / lam
    # P - D is a difference of large numbers here (no stable form): add its round-off
    slack = 8 * np.finfo(float).eps * (abs(primal_at_image) + abs(dual))
    r = np.sqrt(max(primal_at_image - dual, 0.0) / lam + slack / lam)
    return Ball("CDGB", Q, inflate(r, Q), psd_center=True)


def rpb(M0: np.ndarray, lam0: float, lam: float, eps: float = 0.0) -> Ball:
    """Regularization path bound (Theorem 5). Only for an **exact** reference: it raises
    unless ``eps == 0``; use :func:`rrpb` otherwise."""
    if eps != 0.0:
        raise ValueError("RPB needs an exactly optimal reference (eps == 0); got "
                         f"eps={eps:.3g}: use RRPB, which is safe for inexact references")
    ball = rrpb(M0, lam0, lam, 0.0)
    ball.name = "RPB"
    return ball


def rrpb(M0: np.ndarray, lam0: float, lam: float, eps: float) -> Ball:
    """Relaxed regularization path bound (Theorem 6, eq. 3.1) for
    :math:`\\|M_0^\\star-M_0\\|\\le\\epsilon`; at ``lam == lam0`` it is the DGB."""
    c = (lam0 + lam) / (2.0 * lam)
    d = abs(lam0 - lam)
    r = d / (2.0 * lam) * float(np.linalg.norm(M0)) + (d + lam0 + lam) / (2.0 * lam) * eps
    Q = c * M0
    return Ball("RRPB", Q, inflate(r, Q), scale=c, psd_center=True)


def rrpb_eps(gap0: float, lam0: float) -> float:
    """:math:`\\epsilon=\\sqrt{2\\,\\mathrm{gap}_0/\\lambda_0}` (eq. 3.2)."""
    return float(np.sqrt(2.0 * max(gap0, 0.0) / lam0))


def rrpb_ranges(z: np.ndarray, h: np.ndarray, m: float, eps: float, lam0: float,
                gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Intervals of :math:`\lambda` on which the RRPB sphere rule screens each triplet
    (Yoshida et al. 2019, Theorem 10 for :math:`\mathcal R`, and the L-range derived the
    same way).

    ``z`` are :math:`\langle H_t,M_0\rangle`, ``h`` the norms, ``m`` :math:`\|M_0\|`.
    Returns ``(label, lo, hi)`` with label 2 (R), 1 (L) or 0 (none) and the open
    interval ``(lo, hi)``, shrunk by the round-off margin. Each interval contains ``lam0`` when
    non-empty.
    """
    eps = eps * (1.0 + RADIUS_RTOL) + RADIUS_ATOL * max(1.0, m)
    none_stored = np.empty(0, dtype=np.int8)
    return rrpb_ranges_pass(np.ascontiguousarray(z, dtype=np.float64), h, m, eps, lam0,
                            gamma, none_stored, np.empty(0), np.empty(0), none_stored)


def merge_rrpb_ranges(z, h, m, eps, lam0, gamma, label, lo, hi, keep=None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored ranges ``(label, lo, hi)`` updated from a new reference, as new arrays
    (the stored ones are left as they are): triplets whose stored range still covers
    ``lam0``, and those of the boolean mask ``keep``, keep it; the others get the range
    computed from the new reference (possibly empty)."""
    eps = eps * (1.0 + RADIUS_RTOL) + RADIUS_ATOL * max(1.0, m)
    if keep is None:
        keep = np.empty(0, dtype=np.int8)
    else:
        keep = (keep | ((label > 0) & (lo < lam0) & (lam0 < hi))).view(np.int8)
    return rrpb_ranges_pass(np.ascontiguousarray(z, dtype=np.float64), h, m, eps, lam0,
                            gamma, label, lo, hi, keep)


