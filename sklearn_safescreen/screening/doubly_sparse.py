r"""Simultaneous safe screening of features and samples (Shibagaki et al. 2016).

For a pair :math:`(\hat w, \hat\alpha)` of the (reduced) problem with duality gap
:math:`G` (``doc/theory/doubly_sparse.rst``):

* the dual ball :math:`\sum_i(\hat\alpha_i - \alpha_i^*)^2/c_i \le r_D^2 = 2nG/\gamma`
  bounds :math:`|X_{:j}^\top\alpha^*|`: a feature whose bound is at most
  :math:`\lambda n` has :math:`w_j^* = 0` (the paper's rule (9));
* the primal ball :math:`\|\hat w - w^*\| \le r_P = \sqrt{2G/(\lambda\beta)}` bounds each
  margin :math:`x_i^\top w^*`: a sample whose margin interval lies where the loss is
  flat has :math:`\alpha_i^* = 0`, one where it is linear has :math:`\alpha_i^*` at the
  end of its box (rule (15));
* each set tightens the other's rule (Theorems 2 and 3): the samples decided so far
  fix part of :math:`\alpha^*`, so the dual ball shrinks to its section
  :math:`\rho_D^2 = r_D^2 - \sum_{i\in S}(\hat\alpha_i - \bar\alpha_i)^2/c_i` centred
  at the decided values, with column norms over the undecided rows only; the features
  decided so far shrink the primal ball to
  :math:`\rho_P^2 = r_P^2 - \|\hat w_F\|^2`, with row norms over the remaining
  columns. The subtracted terms belong to the **same pair** that gave :math:`G`.
  Alternating the two steps is monotone and stops at the least common fixpoint, which
  does not depend on the side it starts from.

Safe keeping (the corrected Theorems 10 and 11, and Theorems 4 and 5) proves that some
variables are *not* at their bound; they are skipped by later rule evaluations at the
same :math:`\lambda` and tell when screening has nothing left to find. Keeping never
changes a solution.

Every bound is inflated by the rounding error of the quantities it is built from
(:class:`~sklearn_safescreen.problems.doubly_sparse.Gap`) and every decision needs the
relative slack ``SCREEN_RTOL``. Rules are vectorised: one sparse (or BLAS) product per
step and round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.constants import SCREEN_RTOL
from ..problems.doubly_sparse import EPS, Gap, ReducedProblem, product_error

#: ``screening`` values of the doubly sparse estimators.
DOUBLY_SPARSE_RULES = ("simultaneous", "features", "samples")


@dataclass
class DoublySparseScreen:
    """Decisions of one screening event on a reduced problem (local indices).

    ``features`` are proven :math:`w_j^* = 0`; ``at_zero`` samples proven
    :math:`\\alpha_i^* = 0`; ``at_box`` samples proven at the end of their box, with the
    value ``box_value``; ``kept_features`` / ``kept_samples`` proven not at a bound.
    ``rounds`` counts the alternations of the feature and sample steps.
    """

    features: np.ndarray
    at_zero: np.ndarray
    at_box: np.ndarray
    box_value: np.ndarray
    kept_features: np.ndarray
    kept_samples: np.ndarray
    rounds: int

    @property
    def n_features(self) -> int:
        return int(self.features.sum())

    @property
    def n_samples(self) -> int:
        return int(self.at_zero.sum() + self.at_box.sum())


def radii(gap: Gap, lam: float, beta: float, gamma: float, n: int) -> tuple[float, float]:
    """The dual and primal ball radii :math:`(r_D, r_P)` of a gap (its safe value)."""
    g = gap.safe
    return (float(np.sqrt(2.0 * n * g / gamma)) * (1 + 4 * EPS),
            float(np.sqrt(2.0 * g / (lam * beta))) * (1 + 4 * EPS))


def feature_bounds(s, col_norm, radius, s_error):
    """Lower and upper bounds of :math:`X_{:j}^\\top\\alpha^*` over the dual ball."""
    spread = col_norm * radius + s_error
    return s - spread, s + spread


def screen_features(s, col_norm, radius, s_error, lam, n):
    """Rule (9) / Theorem 2: :math:`|s_j| + \\|X_{U,j}\\|_c\\rho_D \\le \\lambda n`."""
    lo, hi = feature_bounds(s, col_norm, radius, s_error)
    return np.maximum(hi, -lo) <= lam * n * (1.0 - SCREEN_RTOL)


def keep_features(s, col_norm, radius, s_error, w, primal_radius, lam, n):
    """Features proven non-zero: :math:`X_{:j}^\\top\\alpha^*` strictly beyond
    :math:`\\pm\\lambda n` (Theorem 10, as corrected: the printed statement inverts the
    inequalities) or :math:`|\\hat w_j| > r_P` (Theorem 4)."""
    lo, hi = feature_bounds(s, col_norm, radius, s_error)
    limit = lam * n * (1.0 + SCREEN_RTOL)
    return (lo > limit) | (hi < -limit) | (np.abs(w) > primal_radius * (1 + SCREEN_RTOL))


def sample_decisions(t, row_norm, radius, t_error, y, c, loss_is_hinge, gamma, epsilon):
    """Rule (15) / Theorem 3 and Theorem 11 from the margin interval
    :math:`t_i \\pm (\\|x_{i,U}\\|\\rho_P + \\text{error})`.

    Returns ``(at_zero, at_box, box_value, kept)``.
    """
    spread = row_norm * radius + t_error + SCREEN_RTOL * (1.0 + np.abs(t) + np.abs(y))
    lo, hi = t - spread, t + spread
    if loss_is_hinge:
        m_lo = np.where(y > 0, lo, -hi)
        m_hi = np.where(y > 0, hi, -lo)
        at_zero = m_lo >= 1.0
        at_box = m_hi <= 1.0 - gamma
        box_value = c * y
        kept = (m_lo > 1.0 - gamma) & (m_hi < 1.0)
    else:
        at_zero = (lo >= y - epsilon) & (hi <= y + epsilon)
        above = lo >= y + epsilon + gamma
        below = hi <= y - epsilon - gamma
        at_box = above | below
        box_value = np.where(above, -c, c)
        kept = (((lo > y - epsilon - gamma) & (hi < y - epsilon))
                | ((lo > y + epsilon) & (hi < y + epsilon + gamma)))
    return at_zero, at_box & ~at_zero, box_value, kept


def keep_samples_dual(alpha, c, radius):
    """Theorem 5: :math:`|\\hat\\alpha_i| \\mp \\sqrt{c_i}\\,r_D` strictly inside
    :math:`(0, c_i)`."""
    r = np.sqrt(c) * radius * (1 + SCREEN_RTOL)
    a = np.abs(alpha)
    return (a - r > 0) & (a + r < c)


def screen_doubly_sparse(red: ReducedProblem, u: np.ndarray, t: np.ndarray, gap: Gap,
                         lam: float, beta: float, mode: str = "simultaneous",
                         kept_features: np.ndarray | None = None,
                         kept_samples: np.ndarray | None = None,
                         max_rounds: int = 100, start: str = "features"
                         ) -> DoublySparseScreen:
    """One screening event at the pair :math:`(u, \\alpha)` of ``red`` whose gap is
    ``gap`` (``t`` the margins of ``u``, :math:`\\alpha` = ``gap.alpha``): the feature
    and sample steps alternated to their fixpoint (``"simultaneous"``), or one of them
    alone (``"features"``, ``"samples"``).

    Variables in ``kept_features`` / ``kept_samples`` (local masks, proven not at a bound
    earlier at this :math:`\\lambda`) are not tested again. ``start`` is the step the
    alternation begins with; the fixpoint does not depend on it.
    """
    if mode not in DOUBLY_SPARSE_RULES:
        raise ValueError(f"unknown screening mode {mode!r}")
    data = red.data
    n = data.n_samples
    y, c = red.y, red.weights
    r_D, r_P = radii(gap, lam, beta, data.gamma, n)
    alpha = gap.alpha
    m, d = red.n_rows, red.n_cols
    features = np.zeros(d, dtype=bool)
    at_zero = np.zeros(m, dtype=bool)
    at_box = np.zeros(m, dtype=bool)
    box_value = np.zeros(m)
    kept_f = np.zeros(d, bool) if kept_features is None else kept_features.copy()
    kept_s = np.zeros(m, bool) if kept_samples is None else kept_samples.copy()
    do_features = mode in ("simultaneous", "features")
    do_samples = mode in ("simultaneous", "samples")
    if do_samples:
        kept_s |= keep_samples_dual(alpha, c, r_D)

    # Each round adds what the previous one decided: the centres, the subtracted parts
    # of the radii and the norms over the undecided rows / columns are updated by the
    # newly decided variables only. Norms are down-dated, so each carries a bound of
    # the cancellation error (an under-estimated norm would be unsafe).
    s, s_err = gap.s.copy(), gap.s_error.copy()
    tt, t_err = t.copy(), gap.t_error.copy()
    col_sq, row_sq = red.col_sq_c.copy(), red.row_sq.copy()
    col_slack = (red.max_nnz + 4) * EPS * red.col_sq_c
    row_slack = (red.max_nnz + 4) * EPS * red.row_sq
    alpha_shift_sq = 0.0  # sum over decided samples of (alpha - alpha_bar)^2 / c
    w_shift_sq = 0.0  # sum over decided features of u_j^2
    unfolded_s = np.zeros(m, dtype=bool)  # decided, not yet in the feature step's terms
    unfolded_f = np.zeros(d, dtype=bool)  # decided, not yet in the sample step's terms
    cache = {}

    def squares():
        if "sq" not in cache:
            cache["sq"] = red.squares()
        return cache["sq"]

    steps = [k for k in (("features", "samples") if start == "features"
                         else ("samples", "features"))
             if (k == "features" and do_features) or (k == "samples" and do_samples)]
    pending = dict.fromkeys(steps, True)  # a step whose inputs changed since it ran
    rounds = 0
    while any(pending.values()) and rounds < max_rounds:
        rounds += 1
        for step in steps:
            if not pending[step]:
                continue
            pending[step] = False
            if step == "features":
                if unfolded_s.any():  # the dual ball's section at the decided samples
                    idx = np.flatnonzero(unfolded_s)
                    unfolded_s[:] = False
                    shift = np.where(at_box[idx], box_value[idx], 0.0) - alpha[idx]
                    part = float((shift * shift / c[idx]).sum())
                    alpha_shift_sq += part
                    undecided = ~(at_zero | at_box)
                    if len(idx) > undecided.sum():
                        # more decided than left: recompute from what is left
                        s, col_sq, s_err = _fresh_centre(red, alpha, at_box, box_value,
                                                         undecided, c, squares)
                    elif red.sparse:  # X^T v with v zero off the decided rows
                        v = np.zeros(m)
                        v[idx] = shift
                        s += _dense(red.X.T @ v)
                        v[idx] = c[idx]
                        col_sq -= _dense(squares().T @ v)
                        s_err += product_error(red.max_nnz, np.sqrt(red.col_sq_c),
                                               float(np.sqrt(part)))
                    else:
                        rows = red.X[idx]
                        s += rows.T @ shift
                        col_sq -= (rows * rows).T @ c[idx]
                        s_err += product_error(red.max_nnz, np.sqrt(red.col_sq_c),
                                               float(np.sqrt(part)))
                rho_D = np.sqrt(max(r_D * r_D - alpha_shift_sq, 0.0))
                col_norm = np.sqrt(np.maximum(col_sq, 0.0) + col_slack)
                open_f = ~features & ~kept_f
                new_f = open_f & screen_features(s, col_norm, rho_D, s_err, lam, n)
                kept_f |= open_f & ~new_f & keep_features(s, col_norm, rho_D, s_err, u,
                                                          r_P, lam, n)
                if new_f.any():
                    features |= new_f
                    unfolded_f |= new_f
                    pending["samples"] = do_samples
            else:
                if unfolded_f.any():  # the primal ball's section at the decided features
                    idx = np.flatnonzero(unfolded_f)
                    unfolded_f[:] = False
                    part = float(u[idx] @ u[idx])
                    w_shift_sq += part
                    if len(idx) > (~features).sum():
                        tt, row_sq, t_err = _fresh_margins(red, u, ~features, squares)
                        t_err = t_err + gap.t_error
                    else:
                        # the decided columns only (CSC: a slice of their entries)
                        cols = red.X[:, idx]
                        tt -= _dense(cols @ u[idx])
                        sq = cols.multiply(cols) if red.sparse else cols * cols
                        row_sq -= _dense(sq.sum(axis=1))
                        t_err += product_error(red.max_nnz, np.sqrt(red.row_sq),
                                               float(np.sqrt(part)))
                rho_P = np.sqrt(max(r_P * r_P - w_shift_sq, 0.0))
                row_norm = np.sqrt(np.maximum(row_sq, 0.0) + row_slack)
                z, b, bv, k = sample_decisions(tt, row_norm, rho_P, t_err, y, c,
                                               data.hinge, data.gamma, data.epsilon)
                open_s = ~(at_zero | at_box) & ~kept_s
                new_z, new_b = open_s & z, open_s & b
                kept_s |= open_s & ~new_z & ~new_b & k
                if new_z.any() or new_b.any():
                    at_zero |= new_z
                    at_box |= new_b
                    box_value = np.where(new_b, bv, box_value)
                    unfolded_s |= new_z | new_b
                    pending["features"] = do_features
    return DoublySparseScreen(features, at_zero, at_box, box_value, kept_f, kept_s, rounds)


def _fresh_centre(red, alpha, at_box, box_value, undecided, c, squares):
    """:math:`X^\\top\\tilde\\alpha` (the decided samples at their values), the
    weighted column norms over the undecided rows, and the centre's error bound,
    computed afresh."""
    a = np.where(undecided, alpha, np.where(at_box, box_value, 0.0))
    s = _dense(red.X.T @ a) + red.offset
    if red.sparse:
        col_sq = _dense(squares().T @ np.where(undecided, c, 0.0))
    else:
        rows = red.X[np.flatnonzero(undecided)]
        col_sq = (rows * rows).T @ c[undecided]
    s_err = product_error(red.max_nnz, np.sqrt(red.col_sq_c),
                          float(np.sqrt((a * a / red.weights).sum()))) \
        + 4 * EPS * np.abs(red.offset) + red.offset_error
    return s, col_sq, s_err


def _fresh_margins(red, u, keep, squares):
    """Margins over the columns ``keep``, the row norms over them, and the margins'
    error bound, computed afresh."""
    idx = np.flatnonzero(keep)
    cols = red.X[:, idx]  # the kept columns only (CSC: a slice of their entries)
    tt = _dense(cols @ u[idx])
    row_sq = _dense((cols.multiply(cols) if red.sparse else cols * cols).sum(axis=1))
    t_err = product_error(red.max_nnz, np.sqrt(red.row_sq), float(np.sqrt(u[idx] @ u[idx])))
    return tt, row_sq, t_err


def _dense(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).ravel()


def contradicted_features(s, col_norm, radius, s_error, lam, n):
    """Features the dual ball proves non-zero (:math:`|X_{:j}^\\top\\alpha^*| >
    \\lambda n`): a screened one among them was screened wrongly."""
    lo, hi = feature_bounds(s, col_norm, radius, s_error)
    limit = lam * n * (1.0 + SCREEN_RTOL)
    return (lo > limit) | (hi < -limit)


def contradicted_samples(t, row_norm, radius, t_error, y, c, at_zero, box_value,
                         loss_is_hinge, gamma, epsilon):
    """Fixed samples whose value the primal ball proves wrong: a sample fixed at
    :math:`\\alpha_i = 0` (``at_zero``) whose margin interval lies where the loss has a
    slope, or one fixed at the end of its box (``box_value``) whose interval lies
    beyond that end's linear part."""
    spread = row_norm * radius + t_error + SCREEN_RTOL * (1.0 + np.abs(t) + np.abs(y))
    lo, hi = t - spread, t + spread
    if loss_is_hinge:
        m_lo = np.where(y > 0, lo, -hi)
        m_hi = np.where(y > 0, hi, -lo)
        return np.where(at_zero, m_hi < 1.0, m_lo > 1.0 - gamma)
    zero_wrong = (hi < y - epsilon) | (lo > y + epsilon)
    box_wrong = np.where(box_value < 0, hi < y + epsilon + gamma,
                         lo > y - epsilon - gamma)
    return np.where(at_zero, zero_wrong, box_wrong)
