r"""The triplet metric-learning problem (Yoshida et al. 2019) and its reduced form.

Primal over the PSD cone (a non-negative diagonal for ``diagonal=True``), with the
screened sets :math:`\hat{\mathcal L}` (folded into :math:`H_{\hat L}`) and
:math:`\hat{\mathcal R}` (dropped):

.. math::

    \tilde P_\lambda(M)=\sum_{t\in\tilde{\mathcal T}}\ell(\langle M,H_t\rangle)
    +\frac\lambda2\|M\|_F^2+\Big(1-\frac\gamma2\Big)|\hat{\mathcal L}|-\langle M,H_{\hat L}\rangle,
    \qquad M\succeq O,

with the smoothed hinge :math:`\ell` (threshold 1, smoothing :math:`\gamma`; the hinge is
:math:`\gamma=0`). With :math:`\alpha_t=-\ell'(z_t)` and
:math:`S=\sum_{\tilde{\mathcal T}}\alpha_tH_t+H_{\hat L}`, the gradient is
:math:`\lambda M-S` and the duality gap has the cancellation-free form
:math:`\mathrm{gap}=\|\lambda M-S_+\|_F^2/(2\lambda)+\langle M,-S_-\rangle\ge0`
(``doc/theory/metric_learning.rst``). When every screened triplet is on its side at
:math:`M`, the reduced objective, dual point and gap equal the full problem's.

Everything goes through the pairs of the triplet set
(:class:`~sklearn_safescreen.problems.triplets.TripletSet`): the pair quadratic forms
:math:`D_M(u,v)`, the triplet values :math:`z_t=D_M(i,l)-D_M(i,j)` and the pair
weights of :math:`S=\Delta^\top\mathrm{diag}(w)\Delta` (the Laplacian form), in one pass
over the active triplets (the compiled kernels of ``_triplet_fast.pyx``; the
reduced problem's data from ``_triplet_reduce_fast.pyx``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _eigh_fast
from . import _triplet_fast as kn
from . import _triplet_reduce_fast as rk
from .triplets import TripletSet

STATUS_ACTIVE, STATUS_L, STATUS_R = 0, 1, 2
#: The evaluations' work buffers are kept on the problem up to this size (they save an
#: allocation per evaluation, which counts for small problems only).
KEPT_SCRATCH_BYTES = 8 * 2**20
#: Pairs per block when the differences of a subset of the pairs are copied, or their
#: forms computed in blocks: a block's copy and product stay in cache, where one over
#: every pair would be a temporary as large as the pairs.
PAIR_BLOCK = 8192


def psd_split(A: np.ndarray, diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`(A_+, A_-)` from one decomposition (so that they add up exactly): the
    projection on the PSD
    cone (non-negative orthant for a diagonal metric) and the remainder."""
    if diagonal:
        return np.maximum(A, 0.0), np.minimum(A, 0.0)
    A = 0.5 * (A + A.T)
    w, V = np.linalg.eigh(A)
    pos = (V * np.maximum(w, 0.0)) @ V.T
    neg = (V * np.minimum(w, 0.0)) @ V.T
    return 0.5 * (pos + pos.T), 0.5 * (neg + neg.T)


def project(A: np.ndarray, diagonal: bool) -> np.ndarray:
    """The projection on the PSD cone (the non-negative orthant for a diagonal metric)."""
    if diagonal:
        return np.maximum(A, 0.0)
    return _eigh_fast.sym_part(np.ascontiguousarray(A, dtype=np.float64), 1.0)[0]


def pair_values(diff: np.ndarray, Q: np.ndarray, diagonal: bool) -> np.ndarray:
    r""":math:`D_Q(u,v)=(x_u-x_v)^\top Q(x_u-x_v)` for every pair (any symmetric Q).
    For a diagonal metric ``diff`` holds the squares (see
    :class:`~sklearn_safescreen.problems.triplets.TripletSet`) and ``Q`` the diagonal:
    the compiled rows kernel, as every pass over a subset of the pairs (a pair's value
    does not depend on the pass)."""
    if diagonal:
        return rk.rows_dot(diff, np.arange(diff.shape[0], dtype=np.int32),
                           np.ascontiguousarray(Q, dtype=np.float64))
    if diff.shape[0] <= PAIR_BLOCK:
        return np.einsum("ij,ij->i", diff @ Q, diff)
    # in blocks: the product of every pair with Q at once is a temporary as large as the
    # pairs, faulted in afresh at each call, where a block's product stays in cache (the
    # same values, row by row)
    out = np.empty(diff.shape[0])
    for start in range(0, diff.shape[0], PAIR_BLOCK):
        block = diff[start:start + PAIR_BLOCK]
        out[start:start + block.shape[0]] = np.einsum("ij,ij->i", block @ Q, block)
    return out


def aggregate(diff: np.ndarray, w: np.ndarray, diagonal: bool) -> np.ndarray:
    r""":math:`\sum_p w_p (x_u-x_v)(x_u-x_v)^\top` (its diagonal for a diagonal metric,
    from the stored squares; rows of zero weight are not read)."""
    if diagonal:
        return rk.rows_weighted_sum(diff, np.arange(diff.shape[0], dtype=np.int32),
                                    np.ascontiguousarray(w, dtype=np.float64))
    # compiled, in blocks of pairs: the weighted copy of every pair at once would be a
    # temporary as large as the pairs, faulted in afresh at most calls
    return rk.gram(np.ascontiguousarray(diff, dtype=np.float64),
                   np.ascontiguousarray(w, dtype=np.float64))


def triplet_values(ts: TripletSet, Q: np.ndarray, diagonal: bool,
                   idx: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\langle Q,H_t\rangle` for the triplets ``idx`` (all by default), O(1) per
    triplet after O(n_pairs d^2)."""
    D = pair_values(ts.diff, Q, diagonal)
    if idx is None:
        return rk.gather(D, ts.pos, ts.neg)
    return rk.gather_idx(D, ts.pos, ts.neg, idx)


def sum_h(ts: TripletSet, weights: np.ndarray, diagonal: bool,
          idx: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\sum_t w_tH_t` through the pair weights (Laplacian form); with
    ``idx`` only the pairs of those triplets are touched."""
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64),
                              (ts.n_triplets if idx is None else len(idx),))
    if idx is None:
        w = (np.bincount(ts.pos, weights, minlength=ts.n_pairs)
             - np.bincount(ts.neg, weights, minlength=ts.n_pairs))
        return aggregate(ts.diff, w, diagonal)
    m = len(idx)
    if 8 * m > ts.n_pairs:  # many triplets: a bincount over all pairs beats sorting
        w = (np.bincount(ts.pos[idx], weights, minlength=ts.n_pairs)
             - np.bincount(ts.neg[idx], weights, minlength=ts.n_pairs))
        used = np.flatnonzero(w)
        return _aggregate_rows(ts, used, w[used], diagonal)
    pairs, inv = np.unique(np.concatenate([ts.pos[idx], ts.neg[idx]]), return_inverse=True)
    w = (np.bincount(inv[:m], weights, minlength=pairs.size)
         - np.bincount(inv[m:], weights, minlength=pairs.size))
    return _aggregate_rows(ts, pairs, w, diagonal)


def triplet_values_at(ts: TripletSet, Q: np.ndarray, diagonal: bool,
                      idx: np.ndarray) -> np.ndarray:
    r""":math:`\langle Q,H_t\rangle` for the triplets ``idx``, touching only their pairs
    (:func:`triplet_values` with ``idx`` evaluates every pair): O(n_pairs) integer work
    plus O(d^2) (O(d) diagonal) per pair used."""
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size == 0:
        return np.empty(0)
    p, q = ts.pos[idx], ts.neg[idx]
    used = np.zeros(ts.n_pairs, dtype=bool)
    used[p] = True
    used[q] = True
    rows = np.flatnonzero(used).astype(np.int32)
    where = np.empty(ts.n_pairs, dtype=np.int32)
    where[rows] = np.arange(rows.size, dtype=np.int32)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    if diagonal:  # the stored squares, read in place
        D = rk.rows_dot(ts.diff, rows, Q)
    else:  # in blocks: a copy of every used pair's difference could be large
        D = np.empty(rows.size)
        for b in range(0, rows.size, PAIR_BLOCK):
            D[b:b + PAIR_BLOCK] = pair_values(ts.diff[rows[b:b + PAIR_BLOCK]], Q, False)
    return D[where[p]] - D[where[q]]


def update_hl(ts: TripletSet, diagonal: bool, status_old: np.ndarray, HL_old: np.ndarray,
              status: np.ndarray, max_share: float = 1.0) -> tuple[np.ndarray | None, int]:
    r""":math:`H_{\hat L}` of ``status`` from the one of ``status_old``: adds the triplets
    that entered :math:`\hat{\mathcal L}` and subtracts those that left it, touching only
    their pairs. Returns the new sum and the number of triplets that changed (the caller
    recomputes the sum from scratch once enough have, so that round-off cannot pile
    up); the sum is None when the changed triplets use more than ``max_share`` of the
    pairs (then the sum over the L-screened pairs costs no more)."""
    was, now = status_old == STATUS_L, status == STATUS_L
    changed = was != now
    idx = np.flatnonzero(changed)
    n = int(idx.size)
    if n == 0:
        return HL_old.copy(), 0
    w = np.where(now[idx], 1.0, -1.0)
    w_pairs = (np.bincount(ts.pos[idx], w, minlength=ts.n_pairs)
               - np.bincount(ts.neg[idx], w, minlength=ts.n_pairs))
    used = np.flatnonzero(w_pairs)  # (integer weights: a cancellation is exact)
    if used.size > max_share * ts.n_pairs:
        return None, n
    if not used.size:
        return HL_old.copy(), n
    return HL_old + _aggregate_rows(ts, used, w_pairs[used], diagonal), n


def _aggregate_rows(ts: TripletSet, rows: np.ndarray, w: np.ndarray,
                    diagonal: bool) -> np.ndarray:
    """The Laplacian sum over the pairs ``rows`` with weights ``w``, read in place (a
    diagonal set's squares: copying the rows, ``8 d`` bytes a pair, would cost more than
    the product, which reads each value once; a full set's rows through blocks of the
    compiled sum)."""
    if diagonal:
        return rk.rows_weighted_sum(ts.diff, rows.astype(np.int32), w)
    full = np.zeros(ts.n_pairs)  # (the kernel copies the rows of non-zero weight only)
    full[rows] = w
    return rk.gram(ts.diff, full)


def loss_values(z: np.ndarray, gamma: float) -> np.ndarray:
    """Smoothed hinge (hinge for gamma=0)."""
    if gamma == 0.0:
        return np.maximum(0.0, 1.0 - z)
    return np.where(z > 1.0, 0.0, np.where(z >= 1.0 - gamma, (1.0 - z) ** 2 / (2 * gamma),
                                           1.0 - z - gamma / 2))


def dual_alpha(z: np.ndarray, gamma: float) -> np.ndarray:
    r""":math:`\alpha_t=-\ell'(z_t)`; for the hinge :math:`1[z<1]` (0 at z=1)."""
    if gamma == 0.0:
        return (z < 1.0).astype(np.float64)
    return np.clip((1.0 - z) / gamma, 0.0, 1.0)


@dataclass
class Evaluation:
    """Everything known at one PSD point M of the reduced problem."""

    M: np.ndarray
    z: np.ndarray  # compact: values of the working triplets
    S: np.ndarray  # sum alpha_t H_t + H_L
    S_pos: np.ndarray
    primal: float
    dual: float
    gap: float  # the cancellation-free form, >= 0
    grad: np.ndarray

    @property
    def rel_gap(self) -> float:
        return self.gap / max(abs(self.primal), 1e-300)


class TripletProblem:
    """The reduced problem (Yoshida et al. 2019, Lemma 1): a triplet set, its loss, and
    the screening state.

    ``status`` holds, per triplet, active / in :math:`\\hat{\\mathcal L}` / in
    :math:`\\hat{\\mathcal R}`. ``work`` is the index list the solver iterates over: the
    active triplets, or a subset of them under the active-set heuristic (which never
    changes ``status``: it is not a screening rule).
    """

    def __init__(self, ts: TripletSet, gamma: float, diagonal: bool,
                 status: np.ndarray | None = None, HL: np.ndarray | None = None):
        self.ts, self.gamma, self.diagonal = ts, float(gamma), diagonal
        d = ts.X.shape[1]
        self.status = (np.zeros(ts.n_triplets, dtype=np.int8) if status is None
                       else status.copy())
        self.n_rejected = 0  # rejected (backtracked) steps, for diagnostics
        self._scratch = np.empty(0)  # the evaluations' work buffers
        self.dual_alpha = None  # dual iterate (hinge solver), per triplet
        # one compiled call: active list, their pairs, H_L's pair weights and (full
        # metric) H_L. A diagonal problem reads its pairs' squares in place through their
        # indices: its products are matrix-vector products, which a copy would not speed
        # up, and the copy would double the memory (``8 d`` bytes a pair).
        # ``HL``, when given, is H_L of ``status`` already (see :func:`update_hl`): the
        # sum over all screened pairs is then not computed again. A full-metric problem's
        # copy of its pairs is made when first read (:attr:`cdiff`): the compiled solver
        # gathers them into its own copy from their indices (:attr:`solver_pairs`), so
        # a copy of the problem's own, made eagerly, would be a second pass over memory
        # as large as the active pairs (and, where the process must grow its memory for
        # it, page faults) that most screened steps never read
        work, cpos, cneg, cdiff, wL, nL, HL_sum = rk.status_split(
            self.status, ts.pos, ts.neg, ts.diff, not diagonal and HL is None, True)
        self._pair_rows = None  # (full metric: the pairs' indices until copied)
        if not diagonal:
            if cdiff.shape[0] == ts.n_pairs:  # every pair (a step without screening): the
                # pairs themselves, in place and read-only (the same order)
                cdiff = ts.diff.view()
                cdiff.flags.writeable = False
            else:
                self._pair_rows = cdiff
        self.nL = int(nL)
        self.n_active = int(work.size)
        # a diagonal problem's H_L is summed with the next evaluation's S, in the same
        # pass over the pairs: ``_wL`` holds the pair weights still to add to ``_HL``
        # (:attr:`HL` sums them alone if read before)
        self._HL, self._wL = None, None
        if HL is not None:
            self.HL = HL
        elif not diagonal:
            self.HL = HL_sum
        else:
            self._HL, self._wL = np.zeros(d), (wL if nL else None)
        # the active list and its working arrays are kept until the status changes: the
        # active-set heuristic returns to them at every check
        self._active, self._active_state = work, None
        self._set_compact(work, cpos, cneg, cdiff)

    # -- state
    @property
    def HL(self) -> np.ndarray:
        r""":math:`H_{\hat L}=\sum_{t\in\hat{\mathcal L}}H_t` (its diagonal for a
        diagonal metric)."""
        if self._wL is not None:
            rows = np.flatnonzero(self._wL).astype(np.int32)
            self._HL = self._HL + rk.rows_weighted_sum(self.ts.diff, rows, self._wL[rows])
            self._wL = None
        return self._HL

    @HL.setter
    def HL(self, value: np.ndarray) -> None:
        self._HL, self._wL = value, None

    @property
    def active(self) -> np.ndarray:
        """The active triplets, ascending (kept until the status changes; not to be
        modified)."""
        if self._active is None:
            self._active = np.flatnonzero(self.status == STATUS_ACTIVE).astype(np.int32)
        return self._active

    def set_work(self, work: np.ndarray) -> None:
        """Iterate over ``work`` (triplet indices): compact its pairs for the BLAS parts."""
        ts = self.ts
        work = np.ascontiguousarray(work, dtype=np.int32)
        self._copy_pairs()  # (the active list's state keeps the copy)
        state = self._active_state
        if state is not None and work is state[0][0]:  # the active list, unchanged
            self._stale = False
            self._compact, self._z, self._w = state
            return
        self._set_compact(work, *rk.compact_work(ts.pos, ts.neg, ts.diff, work,
                                                 self.diagonal))

    def _set_compact(self, work, cpos, cneg, cdiff) -> None:
        if cdiff is not self._pair_rows:
            self._pair_rows = None
        self._stale = False
        self._compact = (work, cpos, cneg, cdiff)
        self._z = np.empty(work.size)
        self._w = np.empty(cdiff.shape[0])
        if work is self._active:
            self._active_state = (self._compact, self._z, self._w)

    def _status_changed(self) -> None:
        # (the working arrays are rebuilt from the new status before they are read)
        self._active = self._active_state = self._pair_rows = None

    def _current(self) -> tuple:
        """The working arrays, rebuilt first if :meth:`apply_screened` left them behind
        the status (the full metric's pairs maybe not copied yet)."""
        if self._stale:
            self.set_work(self.active)
        return self._compact

    def _fresh(self) -> tuple:
        """``(work, cpos, cneg, cdiff)``, rebuilt first if :meth:`apply_screened` left
        them behind the status, and the full metric's pairs copied if not yet."""
        self._current()
        self._copy_pairs()
        return self._compact

    def _copy_pairs(self) -> None:
        """The copy of the working pairs the constructor left to its first reader."""
        rows = self._pair_rows
        if rows is None:
            return
        self._pair_rows = None
        work, cpos, cneg, _ = self._compact
        self._compact = (work, cpos, cneg, np.take(self.ts.diff, rows, axis=0))
        if self._active_state is not None:
            self._active_state = (self._compact,) + self._active_state[1:]

    @property
    def solver_pairs(self) -> tuple:
        """``(work, cpos, cneg, pairs, rows)`` for the compiled solver, which copies
        the pairs it reads: ``rows`` the indices of the working pairs in ``pairs`` (the
        set's), or None with ``pairs`` the working pairs themselves (copied, in place
        when every pair is used, or a diagonal problem's indices)."""
        work, cpos, cneg, cdiff = self._current()
        if self._pair_rows is not None:
            return work, cpos, cneg, self.ts.diff, self._pair_rows
        return work, cpos, cneg, cdiff, None

    @property
    def n_pairs_used(self) -> int:
        """The number of working pairs (without copying them)."""
        return int(self._current()[3].shape[0])

    # the working arrays: triplet indices, their compact pair indices, the pairs (a copy
    # of their differences; for a diagonal problem the indices of their stored squares)
    compact = property(_fresh, doc="``(work, cpos, cneg, cdiff)`` in one look-up.")
    work = property(lambda self: self._current()[0])
    cpos = property(lambda self: self._current()[1])
    cneg = property(lambda self: self._current()[2])
    cdiff = property(lambda self: self._fresh()[3])

    def screen(self, to_R: np.ndarray, to_L: np.ndarray) -> None:
        """Move active triplets (indices) to :math:`\\hat{\\mathcal R}` / fold them into
        :math:`H_{\\hat L}` (whatever their current value)."""
        if to_L.size:
            if self.diagonal:  # added with the next evaluation's S (see __init__)
                w = self._wL if self._wL is not None else np.zeros(self.ts.n_pairs)
                self._wL = (w + np.bincount(self.ts.pos[to_L], minlength=w.size)
                            - np.bincount(self.ts.neg[to_L], minlength=w.size))
            elif to_L.size * 8 <= self.ts.n_pairs:
                # few triplets: add a a' - b b' directly (O(d^2) each)
                self.HL = rk.add_h(self.HL.copy(), self.ts.diff, self.ts.pos, self.ts.neg,
                                 to_L.astype(np.int64))
            else:
                self.HL = self.HL + sum_h(self.ts, np.ones(to_L.size), self.diagonal,
                                          to_L)
            self.nL += int(to_L.size)
            self.status[to_L] = STATUS_L
        if to_R.size:
            self.status[to_R] = STATUS_R
        self.n_active -= int(to_L.size + to_R.size)
        if to_L.size or to_R.size:
            work = self.work
            was_active = work is self._active
            self._status_changed()
            keep = self.status[work] == STATUS_ACTIVE
            work = work[keep]
            if was_active:  # the new working triplets are the new active list
                self._active = work
            self.set_work(work)
            return keep
        return None

    def apply_screened(self, to_R: np.ndarray, to_L: np.ndarray, HL: np.ndarray,
                       nL: int) -> None:
        """Record decisions taken inside the compiled loop, which already folded the
        L-screened triplets into ``HL`` (so :meth:`screen` must not add them again).

        The working arrays are rebuilt only if used again (:meth:`_fresh`): the loop
        ends the solve, and most fits never solve this problem again."""
        if not (to_R.size or to_L.size):
            return
        self.status[to_L] = STATUS_L
        self.status[to_R] = STATUS_R
        self.HL, self.nL = HL, nL
        self.n_active -= int(to_L.size + to_R.size)
        self._status_changed()
        self._stale = True

    def _pair_values(self, Q: np.ndarray) -> np.ndarray:
        """:math:`D_Q` over the working pairs."""
        if self.diagonal:
            return rk.rows_dot(self.ts.diff, self.cdiff,
                               np.ascontiguousarray(Q, dtype=np.float64))
        return pair_values(self.cdiff, Q, False)

    def _aggregate(self, w: np.ndarray) -> np.ndarray:
        """The Laplacian sum with weights ``w`` over the working pairs."""
        if self.diagonal:
            return rk.rows_weighted_sum(self.ts.diff, self.cdiff,
                                        np.ascontiguousarray(w, dtype=np.float64))
        return aggregate(self.cdiff, w, False)

    def values(self, Q: np.ndarray) -> np.ndarray:
        r""":math:`\langle Q,H_t\rangle` over the working triplets (compact pairs)."""
        return rk.gather(self._pair_values(Q), self.cpos, self.cneg)

    # -- evaluation
    def evaluate(self, M: np.ndarray, lam: float) -> Evaluation:
        """Objective, gradient and gap at the PSD point M over the working triplets.

        For the hinge the primal-derived dual point :math:`\alpha=1[z<1]` does not close
        the gap (triplets at the kink need fractional :math:`\alpha`), so the gap is
        also computed against the dual iterate of :func:`_run_dual` and the smaller of
        the two valid gaps is kept."""
        ev = self._evaluate_primal(M, lam)
        if self.dual_alpha is not None:
            a = self.dual_alpha[self.work]
            S = self._s_of(a)
            Sp = psd_split(S, self.diagonal)[0]
            D = (-0.5 * self.gamma * (a @ a + self.nL) + a.sum() + self.nL
                 - float(np.sum(Sp * Sp)) / (2.0 * lam))
            gap = ev.primal - D + 8 * np.finfo(float).eps * (abs(ev.primal) + abs(D))
            if gap < ev.gap:
                ev.gap, ev.dual = max(gap, 0.0), D
        return ev

    def extended(self, ev: Evaluation, idx: np.ndarray, z: np.ndarray,
                 lam: float) -> Evaluation:
        """``ev`` (at ``ev.M`` over the working triplets) completed by the active
        triplets ``idx`` outside them, whose values at ``ev.M`` are ``z``: the
        evaluation over both, with ``ev.z`` unchanged. Their losses join the objective
        and their dual variables S (through their pairs alone); the dual's linear part
        is recovered from ``ev`` (the gap is the cancellation-free form at M and S)."""
        M, g = ev.M, self.gamma
        a = dual_alpha(z, g)
        S = ev.S + sum_h(self.ts, a, self.diagonal, idx)
        S_pos, S_neg = psd_split(S, self.diagonal)
        sq_old, sq = float(np.sum(ev.S_pos * ev.S_pos)), float(np.sum(S_pos * S_pos))
        dual = (ev.dual + (sq_old - sq) / (2.0 * lam) + float(a.sum())
                - 0.5 * g * float(a @ a))
        primal = ev.primal + float(loss_values(z, g).sum())
        R = lam * M - S_pos
        gap = float(np.sum(R * R)) / (2.0 * lam) + max(float(-np.sum(M * S_neg)), 0.0)
        return Evaluation(M, ev.z, S, S_pos, primal, dual, max(gap, 0.0), lam * M - S)

    def released(self, ev: Evaluation, idx: np.ndarray, z: np.ndarray,
                 lam: float) -> Evaluation:
        r"""``ev`` (at ``ev.M`` over every active triplet) made the full problem's
        evaluation at ``ev.M``, when the screened triplets ``idx`` (values ``z`` there)
        are off their side (:math:`z<1` in :math:`\hat R`, :math:`z>1-\gamma` in
        :math:`\hat L`) and every other screened triplet is on it: each of them counted
        with its own loss and dual variable :math:`\alpha_t=-\ell'(z_t)` instead of the
        reduced problem's (0 in R; the linear loss and 1 in L), through their pairs
        alone. The objective, S and the gap (the cancellation-free form at M and S) are
        those of an evaluation of the whole problem, to round-off; the smoothed hinge
        only (``gamma > 0``)."""
        M, g = ev.M, self.gamma
        in_L = self.status[idx] == STATUS_L
        a = dual_alpha(z, g)
        a0 = in_L.astype(np.float64)
        S = ev.S + sum_h(self.ts, a - a0, self.diagonal, idx) if idx.size else ev.S
        S_pos, S_neg = psd_split(S, self.diagonal)
        sq_old, sq = float(np.sum(ev.S_pos * ev.S_pos)), float(np.sum(S_pos * S_pos))
        dual = (ev.dual + (sq_old - sq) / (2.0 * lam) + float(np.sum(a - a0))
                - 0.5 * g * float(a @ a - a0 @ a0))
        assumed = np.where(in_L, 1.0 - z - 0.5 * g, 0.0)
        primal = ev.primal + float(np.sum(loss_values(z, g) - assumed))
        R = lam * M - S_pos
        gap = float(np.sum(R * R)) / (2.0 * lam) + max(float(-np.sum(M * S_neg)), 0.0)
        return Evaluation(M, ev.z, S, S_pos, primal, dual, max(gap, 0.0), lam * M - S)

    def _s_of(self, a: np.ndarray) -> np.ndarray:
        r""":math:`\sum_{work}a_tH_t+H_{\hat L}` through the compact pairs."""
        npairs = self.n_pairs_used
        w = (np.bincount(self.cpos, a, minlength=npairs)
             - np.bincount(self.cneg, a, minlength=npairs))
        return self._aggregate(w) + self.HL

    def _evaluate_primal(self, M: np.ndarray, lam: float) -> Evaluation:
        if not self.diagonal:
            M = np.ascontiguousarray(M, dtype=np.float64)
            cdiff = self.cdiff
            need = kn.evaluate_scratch_size(cdiff.shape[0], cdiff.shape[1])
            if self._scratch.size < need and 8 * need <= KEPT_SCRATCH_BYTES:
                self._scratch = np.empty(need)  # kept between evaluations
            primal, dual, gap, S, S_pos = kn.evaluate_full(
                cdiff, self.cpos, self.cneg, self.HL, float(self.nL), self.gamma,
                lam, M, self._z, self._w,
                self._scratch if self._scratch.size >= need else None)
            return Evaluation(M, self._z.copy(), S, S_pos, primal, dual, gap,
                              lam * M - S)
        D = self._pair_values(M)
        loss, sa, sa2 = kn.triplet_pass(D, self.cpos, self.cneg, self.gamma, self._z,
                                      self._w)
        if self._wL is not None:  # H_L's pending pairs in the same pass over the pairs
            part, add = rk.rows_weighted_sums(self.ts.diff, self.cdiff, self._w, self._wL)
            self.HL = self._HL + add
            S = part + self.HL
        else:
            S = self._aggregate(self._w) + self.HL
        S_pos, S_neg = psd_split(S, self.diagonal)
        nL = self.nL
        sqM = float(np.sum(M * M))
        primal = (loss + (1.0 - self.gamma / 2) * nL - float(np.sum(M * self.HL))
                  + 0.5 * lam * sqM)
        sqSp = float(np.sum(S_pos * S_pos))
        dual = -0.5 * self.gamma * (sa2 + nL) + sa + nL - sqSp / (2.0 * lam)
        R = lam * M - S_pos
        gap = float(np.sum(R * R)) / (2.0 * lam) + max(float(-np.sum(M * S_neg)), 0.0)
        return Evaluation(M, self._z.copy(), S, S_pos, primal, dual, max(gap, 0.0),
                          lam * M - S)


def closed_form(ts: TripletSet, gamma: float, diagonal: bool) -> tuple[float, np.ndarray]:
    r""":math:`\lambda_L` and :math:`G_+` (``doc/theory/metric_learning.rst``): for
    :math:`\lambda\ge\lambda_L`,
    :math:`M^\star=G_+/\lambda` with :math:`G=\sum_tH_t` and
    :math:`\lambda_L=\max_t\langle H_t,G_+\rangle/(1-\gamma)` (every triplet in
    :math:`\mathcal L^\star\cup\mathcal C^\star`)."""
    G = sum_h(ts, np.ones(ts.n_triplets), diagonal)
    G_pos = project(G, diagonal)
    vmax = float(triplet_values(ts, G_pos, diagonal).max())
    lam_L = vmax / (1.0 - gamma)
    if not lam_L > 0:  # degenerate data: M* = G_+/lambda for every lambda > 0
        lam_L = np.finfo(float).tiny
    return lam_L, G_pos


def metric_and_components(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(metric, components)`` of a full metric ``M``: the symmetric metric and
    :math:`L` with :math:`M = L^\\top L`, its rows the eigenvectors scaled by the square
    roots of the (clipped) eigenvalues, largest first, each row's largest entry positive
    (scikit-learn's ``svd_flip`` convention)."""
    # one compiled call when the eigenvalues are distinct and non-zero (the usual case;
    # NumPy's sort and maximum decide ties and zeros otherwise)
    factor = kn.metric_factor(M)
    if factor is not None:
        return factor
    M = 0.5 * (M + M.T)
    w, W = _eigh_fast.eigh_rows(M)  # (compiled; rows = eigenvectors, unsorted)
    order = np.argsort(w)[::-1]
    C = W[order] * np.sqrt(np.maximum(w[order], 0.0))[:, None]
    largest = W[order][np.arange(C.shape[0]), np.argmax(np.abs(W[order]), axis=1)]
    return M, np.where(largest < 0.0, -1.0, 1.0)[:, None] * C
