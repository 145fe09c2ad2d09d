"""The margins of the greedy kernel solver's pending variables (:mod:`.greedy_cd`),
kept up to date by the variables that moved instead of recomputed over every
non-zero variable."""

from __future__ import annotations

import numpy as np

from ..problems.box_qp import BoxQP


class PendingMargins:
    """``Q alpha`` over the pending variables, each time from the last values known for
    them updated by the variables that moved since (when that is fewer kernel values
    than the product over every nonzero variable), else afresh."""

    def __init__(self, problem: BoxQP, alpha: np.ndarray, margins: np.ndarray | None):
        self.problem = problem
        self.alpha_at = alpha.copy()
        self.q = np.zeros(alpha.size) if margins is None else margins.copy()
        self.known = np.full(alpha.size, margins is not None)

    def gradient(self, alpha: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(Q alpha - p)[rows]``; the values become the known ones."""
        problem, s, K = self.problem, self.problem.sign, self.problem.kernel
        nz = np.flatnonzero(alpha)
        moved = np.flatnonzero(alpha != self.alpha_at)
        q = np.empty(rows.size)
        known = self.known[rows]
        if moved.size < nz.size and known.any():
            r = rows[known]
            q[known] = self.q[r] + s[r] * K.matvec(
                r, moved, s[moved] * (alpha[moved] - self.alpha_at[moved]))
        else:
            known[:] = False
        if not known.all():
            r = rows[~known]
            q[~known] = s[r] * K.matvec(r, nz, s[nz] * alpha[nz])
        self.alpha_at = alpha.copy()
        self.known[:] = False
        self.known[rows] = True
        self.q[rows] = q
        return q - problem.p[rows]
