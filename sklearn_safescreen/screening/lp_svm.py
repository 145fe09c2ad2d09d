r"""Safe screening of features and samples for the LP-SVM (Shibagaki et al. 2016, section 5).

The LP-SVM has no strong convexity, hence no gap balls; its regions are polytopes
(``doc/theory/lp_svm.rst`` has the proofs). From any :math:`\hat w` and any dual
feasible :math:`\hat a` (so inexact references are safe), with
:math:`L=\sum_i\hat a_i` (:math:`n` times the dual value) and :math:`U=nP_\lambda(\hat w)`:

* **features** (the paper's Theorem 6, corrected): every dual optimum lies in
  :math:`\{a:0\le a\le s,\ L\le\mathbf 1^\top a\le U\}`; the minimum and maximum of
  :math:`Z_{:j}^\top a` over it are fractional knapsacks (the column's entries in sorted
  order). Both strictly inside :math:`(-\lambda n,\lambda n)` prove :math:`w^*_j=0`.
* **samples** (Theorem 7, corrected and generalised): for any :math:`\theta\in[0,1]^n`,
  :math:`t\mapsto\theta_is_i(1-t)` minorises the :math:`i`-th loss, so every primal
  optimum lies in :math:`\{w:\lambda\|w\|_1+g^\top w\le k\}` with
  :math:`g=-Z^\top(\theta\circ s)/n` and :math:`k=P_\lambda(\hat w)-\sum_i\theta_is_i/n`
  (the paper's cut is :math:`\theta_i=[z_i^\top\hat w<1]`). Lagrangian duality bounds a
  margin :math:`z_i^\top w` over it by a one-variable LP in :math:`\mu\ge0`: a lower bound
  above 1 proves :math:`a^*_i=0`, an upper bound below 1 proves :math:`a^*_i=s_i`.
* **synergy**: samples proven at 0 or at the box fix those coordinates of every dual
  optimum, which shrinks the knapsack polytope; features proven zero fix those
  coordinates of every primal optimum, which removes their constraints from the
  one-variable LPs. Both steps are alternated to their fixpoint.

Every quantity carries a bound of its rounding error, each region is enlarged by it, and
every decision needs the relative slack ``SCREEN_RTOL``. Cost: one sort of the columns
per data set (:attr:`LPSVMData.sorted_columns`), then each step is one compiled pass over
the stored entries (``_lp_svm_fast``: the knapsacks column by column, the one-variable
LPs row by row) and a few operations on vectors of the features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.constants import SCREEN_RTOL
from ..problems.lp_svm import LPSVMData, U, gamma
from ._lp_svm_fast import knapsack_bounds, margin_bounds_csr, margin_bounds_dense

#: ``screening`` values of the LP-SVM.
LP_SVM_RULES = ("simultaneous", "features", "samples")

@dataclass
class LPReference:
    """The quantities a screening event reads from a reference pair: an upper bound
    ``primal`` of :math:`P_\\lambda(\\hat w)`, a lower bound ``dual`` of
    :math:`D(\\hat a)` for the feasible :math:`\\hat a`, the margins of :math:`\\hat w`
    with their error bound."""

    lam: float
    w: np.ndarray
    margins: np.ndarray
    margin_error: np.ndarray
    primal: float
    dual: float

    @classmethod
    def build(cls, data: LPSVMData, lam: float, w: np.ndarray, alpha: np.ndarray
              ) -> LPReference:
        w = np.asarray(w, dtype=np.float64)
        m = data.margins(w)
        primal = data.primal(lam, w, m)
        dual = data.feasible_dual(lam, alpha).value
        return cls(lam, w, m, data.margin_error(w), primal, min(dual, primal))


@dataclass
class LPScreen:
    """Decisions of one screening event (full-length masks): ``features`` proven
    :math:`w^*_j=0`, ``at_zero`` proven :math:`a^*_i=0`, ``at_box`` proven
    :math:`a^*_i=s_i`; ``rounds`` alternations of the two steps."""

    features: np.ndarray
    at_zero: np.ndarray
    at_box: np.ndarray
    rounds: int

    @property
    def n_features(self) -> int:
        return int(self.features.sum())

    @property
    def n_samples(self) -> int:
        return int(self.at_zero.sum() + self.at_box.sum())


# ----------------------------------------------------------------------- features
def correlation_bounds(data: LPSVMData, lam: float, ref: LPReference,
                       at_zero: np.ndarray | None = None,
                       at_box: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Safe lower and upper bounds of :math:`Z_{:j}^\\top a^*` over the knapsack polytope
    (Theorem 6), restricted to :math:`a_i=0` on ``at_zero`` and :math:`a_i=s_i` on
    ``at_box`` (samples proven so; ``None``: no sample fixed)."""
    n = data.n_samples
    s = data.s
    free = np.ones(n, dtype=bool)
    box_mass = 0.0
    const = np.zeros(data.n_features)
    const_err = np.zeros(data.n_features)
    if at_zero is not None:
        free &= ~at_zero
    if at_box is not None and at_box.any():
        free &= ~at_box
        v = np.where(at_box, s, 0.0)
        box_mass = float(v.sum())
        const = data.correlations(v)
        const_err = data.correlation_error()
    weights = np.where(free, s, 0.0)
    total = float(weights.sum())
    # the polytope is enlarged by the rounding of L, U and of the sums above
    slack = gamma(n + 4) * (data.total_weight + n * ref.primal)
    lo_mass = max(n * ref.dual - box_mass - slack, 0.0)
    hi_mass = n * ref.primal - box_mass + slack
    if lo_mass > total or hi_mass < 0.0:
        # the fixed samples leave no dual point of the right value: they cannot all be
        # right (never the case for proven decisions); fall back to fixing none
        if at_zero is None and at_box is None:
            raise ValueError("the reference's dual bound exceeds the total weight")
        return correlation_bounds(data, lam, ref)
    hi_mass = min(hi_mass, total)
    sc = data.sorted_columns
    low, low_err, neg_high, high_err = knapsack_bounds(
        sc.values, sc.rows, sc.start, weights, lo_mass, hi_mass, total, data.col_max, U)
    return const + low - low_err - const_err, const - neg_high + high_err + const_err


# The knapsacks (compiled: ``_lp_svm_fast.knapsack_bounds``). Per column :math:`j`,
# :math:`\min\{\sum_k v_ka_k: 0\le a\le\text{weights},\ lo\le\mathbf 1^\top a\le
# hi\}` over its sorted entries, and the same over the negated entries (the maximum is
# minus that minimum). The minimum fills mass in ascending order: its mass is
# m = clip(N_-, lo, hi), N_- the mass of the negative entries. When N_- > hi the fill
# stops inside the negatives; when N_- < lo it goes through the zeros (stored or not) and
# into the smallest positives. The computed fill is always a prefix plus one fractional
# entry (the running masses are non-decreasing even in floating point), hence the exact
# minimum at its own mass; its distance to m times the column's largest |z_ij| bounds
# what that costs, and the sums of at most the column's entries plus n terms their
# rounding.


def screen_features(data: LPSVMData, lam: float, ref: LPReference,
                    at_zero: np.ndarray | None = None, at_box: np.ndarray | None = None
                    ) -> np.ndarray:
    """Theorem 6 (corrected): :math:`-\\lambda n<LB_j` and :math:`UB_j<\\lambda n`
    prove :math:`w^*_j=0` (the printed theorem has both inequalities inverted)."""
    lo, hi = correlation_bounds(data, lam, ref, at_zero, at_box)
    limit = lam * data.n_samples * (1.0 - SCREEN_RTOL)
    return (lo > -limit) & (hi < limit)


# ------------------------------------------------------------------------ samples
@dataclass
class PrimalCut:
    """The region :math:`\\{w:\\lambda\\|w\\|_1+g^\\top w\\le k\\}` of every primal
    optimum, as the one-variable LPs read it: ``c_minus`` :math:`\\le\\lambda-g_j` and
    ``c_plus`` :math:`\\le\\lambda+g_j` (lowered by the rounding error of :math:`g`, so a
    :math:`\\mu` feasible for them is feasible exactly) and ``k`` :math:`\\ge` the exact
    :math:`k`."""

    c_minus: np.ndarray
    c_plus: np.ndarray
    k: float

    @classmethod
    def build(cls, data: LPSVMData, lam: float, ref: LPReference,
              theta: np.ndarray | None = None) -> PrimalCut:
        """The cut of weights ``theta`` (default: the paper's subgradient at
        :math:`\\hat w`, :math:`\\theta_i=1` where the margin is below 1)."""
        n = data.n_samples
        if theta is None:
            theta = (ref.margins < 1.0).astype(np.float64)
        v = np.clip(theta, 0.0, 1.0) * data.s
        g = -data.correlations(v) / n
        g_err = data.correlation_error() / n * (1.0 + 4 * U)
        g_err = g_err + 4 * U * (lam + np.abs(g))
        mass = float(v.sum())
        k = ref.primal - mass * (1.0 - gamma(n + 2)) / n
        k += 4 * U * (abs(k) + ref.primal)
        c_minus = lam - g - g_err
        c_plus = lam + g - g_err
        # a zero coefficient is treated as slightly negative: only shrinks the feasible
        # set of mu (safe), and spares the division-by-zero cases
        tiny = np.finfo(np.float64).tiny
        return cls(np.where(c_minus == 0.0, -tiny, c_minus),
                   np.where(c_plus == 0.0, -tiny, c_plus), float(k))


def margin_bounds(data: LPSVMData, cut: PrimalCut, free_features: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Safe lower and upper bounds of every margin :math:`z_i^\\top w^*` over the cut
    intersected with :math:`\\{w_j=0,\\ j\\notin\\text{free}\\}` (Theorem 7, corrected).

    :math:`\\min z_i^\\top w` over the region is at least :math:`-\\mu k` for every
    :math:`\\mu\\ge0` with :math:`|z_{ij}+\\mu g_j|\\le\\lambda\\mu` on the free
    features (weak duality: no optimal :math:`\\mu` is needed); each such constraint is
    :math:`\\mu(\\lambda-g_j)\\ge z_{ij}` and :math:`\\mu(\\lambda+g_j)\\ge-z_{ij}`, so
    the feasible :math:`\\mu` form an interval and the best one is an end of it. The
    maximum is the same with :math:`-z_i`.
    """
    d = data.n_features
    free = np.ones(d, dtype=bool) if free_features is None else free_features
    cm, cp = cut.c_minus, cut.c_plus
    with np.errstate(divide="ignore"):
        inv_m = np.where(free & (cm > 0.0), 1.0 / cm, 0.0)
        inv_p = np.where(free & (cp > 0.0), 1.0 / cp, 0.0)
    negative = free & ((cm < 0.0) | (cp < 0.0))
    if data.sparse:
        Z = data.Z
        return margin_bounds_csr(Z.data, Z.indices, Z.indptr, inv_m, inv_p,
                                 negative.view(np.uint8), int(negative.sum()), cm, cp,
                                 cut.k, U)
    cols = np.flatnonzero((inv_m != 0.0) | (inv_p != 0.0))
    return margin_bounds_dense(data.Z, cols, inv_m, inv_p, np.flatnonzero(negative), cm,
                               cp, cut.k, U)


def screen_samples(data: LPSVMData, cut: PrimalCut,
                   features: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 7 (corrected): a margin lower bound above 1 proves :math:`a^*_i=0`, an
    upper bound below 1 proves :math:`a^*_i=s_i` (the printed theorem swaps the two
    conclusions). ``features`` proven zero are left out of the constraints. Returns
    ``(at_zero, at_box)``."""
    free = None if features is None else ~features
    lower, upper = margin_bounds(data, cut, free)
    at_zero = lower > 1.0 + SCREEN_RTOL * (1.0 + np.abs(lower))
    at_box = upper < 1.0 - SCREEN_RTOL * (1.0 + np.abs(upper))
    return at_zero, at_box & ~at_zero


# ------------------------------------------------------------------------- events
def screen_lp_svm(data: LPSVMData, lam: float, w: np.ndarray, alpha: np.ndarray,
                  mode: str = "simultaneous", synergy: bool = True, max_rounds: int = 50,
                  reference: LPReference | None = None) -> LPScreen:
    """One screening event at :math:`\\lambda` from the reference pair
    :math:`(w,\\alpha)` (any :math:`w`; :math:`\\alpha` is made dual feasible): the
    feature and sample steps alternated to their fixpoint (``"simultaneous"``), or one
    of them alone. With ``synergy=False`` each step ignores the other's decisions (one
    round each; for measuring what the synergy adds)."""
    if mode not in LP_SVM_RULES:
        raise ValueError(f"unknown screening mode {mode!r}")
    ref = reference if reference is not None else LPReference.build(data, lam, w, alpha)
    n, d = data.n_samples, data.n_features
    features = np.zeros(d, dtype=bool)
    at_zero = np.zeros(n, dtype=bool)
    at_box = np.zeros(n, dtype=bool)
    do_f = mode in ("simultaneous", "features")
    do_s = mode in ("simultaneous", "samples")
    cut = PrimalCut.build(data, lam, ref) if do_s else None
    rounds = 0
    changed = True
    while changed and rounds < max_rounds:
        rounds += 1
        changed = False
        if do_f:
            new = screen_features(data, lam, ref, at_zero if synergy else None,
                                  at_box if synergy else None)
            if (new & ~features).any():
                features |= new
                changed = True
        if do_s:
            z, b = screen_samples(data, cut, features if synergy else None)
            if (z & ~at_zero).any() or (b & ~at_box).any():
                at_zero |= z
                at_box |= b
                changed = True
        if not (synergy and do_f and do_s):
            break
    return LPScreen(features, at_zero, at_box, rounds)
