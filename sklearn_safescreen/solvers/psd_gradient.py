r"""Projected gradient on the PSD cone for triplet metric learning (spec triplet 1.5-1.9,
5.1, 5.2, pitfalls P2, P3).

Reduced primal (spec 1.9, eq. 2.9) over the active triplets :math:`\tilde{\mathcal T}`
with the screened sets :math:`\hat{\mathcal L}` (folded into :math:`H_{\hat L}`) and
:math:`\hat{\mathcal R}` (dropped):

.. math::

    \tilde P_\lambda(M)=\sum_{t\in\tilde{\mathcal T}}\ell(\langle M,H_t\rangle)
    +\frac\lambda2\|M\|_F^2+\Big(1-\frac\gamma2\Big)|\hat{\mathcal L}|-\langle M,H_{\hat L}\rangle,
    \qquad M\succeq O,

with the smoothed hinge :math:`\ell` (threshold 1, smoothing :math:`\gamma`; the hinge is
:math:`\gamma=0`). With :math:`\alpha_t=-\ell'(z_t)` and
:math:`S=\sum_{\tilde{\mathcal T}}\alpha_tH_t+H_{\hat L}`, the gradient is
:math:`\lambda M-S` and the duality gap is computed in the cancellation-free form of
pitfall P2, :math:`\mathrm{gap}=\|\lambda M-S_+\|_F^2/(2\lambda)+\langle M,-S_-\rangle\ge0`.

Everything goes through the pairs of the triplet set (spec 3.6): the pair quadratic
forms :math:`D_M(u,v)`, the triplet values :math:`z_t=D_M(i,l)-D_M(i,j)` and the pair
weights of :math:`S` in one pass over the active triplets (O(|T~|)), and
:math:`S=\Delta^\top\mathrm{diag}(w)\Delta` (the Laplacian form). One
eigendecomposition of a d x d matrix per step: the projection's, whose negative part is
also a dual point for the gap at the current iterate (:func:`.psd_kernels.projection_gap`;
the best dual point :math:`-S_-` is used at screening checks and at the end, one more
eigendecomposition each). A diagonal metric replaces the PSD cone by the non-negative
orthant.

The solver (:func:`solve`) is the paper's projected gradient with the averaged
Barzilai-Borwein step, made globally convergent by the non-monotone line search of
spectral projected gradient (a rejected step is shortened along the projected
direction, which stays feasible), stopping on the relative gap
:math:`\mathrm{gap}\le\mathrm{tol}\,|\tilde P|`. For the full metric it runs in the
compiled kernels of :mod:`.psd_kernels`, with the sphere rule of the GB/PGB/DGB balls
built in (dynamic screening every ``interval`` steps); other rules run as a Python
callback between compiled stretches of ``interval`` steps. The optional active-set
heuristic (spec 5.4) optimises over the active triplets with positive loss, refreshed at
every callback, and confirms convergence on all of them. The hinge (gamma = 0) is solved
in the dual (accelerated projected gradient on the box).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._triplets import TripletSet
from . import psd_kernels as kn
from .psd_kernels import (  # noqa: F401 - re-exported (rules, bounds and tests use them)
    MAX_BACKTRACK,
    NONMONOTONE,
    RADIUS_ATOL,
    RADIUS_RTOL,
    SCREEN_RTOL,
    SUFFICIENT,
    iterate_ball_codes,
)
from .psd_kernels import triplet_pass as _triplet_pass

STATUS_ACTIVE, STATUS_L, STATUS_R = 0, 1, 2


# ---------------------------------------------------------------- geometry ---
def psd_split(A: np.ndarray, diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`(A_+, A_-)` from one decomposition (pitfall P3): the projection on the PSD
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
    return kn.sym_part(np.ascontiguousarray(A, dtype=np.float64), 1.0)[0]


def pair_values(diff: np.ndarray, Q: np.ndarray, diagonal: bool,
                diff2: np.ndarray | None = None) -> np.ndarray:
    r""":math:`D_Q(u,v)=(x_u-x_v)^\top Q(x_u-x_v)` for every pair (any symmetric Q)."""
    if diagonal:
        return (diff * diff if diff2 is None else diff2) @ Q
    return np.einsum("ij,ij->i", diff @ Q, diff)


def aggregate(diff: np.ndarray, w: np.ndarray, diagonal: bool,
              diff2: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\sum_p w_p (x_u-x_v)(x_u-x_v)^\top` (its diagonal for a diagonal metric)."""
    if diagonal:
        return (diff * diff if diff2 is None else diff2).T @ w
    S = diff.T @ (diff * w[:, None])
    return 0.5 * (S + S.T)


def triplet_values(ts: TripletSet, Q: np.ndarray, diagonal: bool,
                   idx: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\langle Q,H_t\rangle` for the triplets ``idx`` (all by default), O(1) per
    triplet after O(n_pairs d^2) (spec 3.6)."""
    D = pair_values(ts.diff, Q, diagonal)
    if idx is None:
        return _gather(D, ts.pos, ts.neg)
    return _gather_idx(D, ts.pos, ts.neg, idx)


def sum_h(ts: TripletSet, weights: np.ndarray, diagonal: bool,
          idx: np.ndarray | None = None) -> np.ndarray:
    r""":math:`\sum_t w_tH_t` through the pair weights (Laplacian form, spec 3.6); with
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
        return aggregate(ts.diff[used], w[used], diagonal)
    pairs, inv = np.unique(np.concatenate([ts.pos[idx], ts.neg[idx]]), return_inverse=True)
    w = (np.bincount(inv[:m], weights, minlength=pairs.size)
         - np.bincount(inv[m:], weights, minlength=pairs.size))
    return aggregate(ts.diff[pairs], w, diagonal)


@njit(cache=True)
def _add_h(HL, diff, pos, neg, idx):
    """HL + sum over idx of a a' - b b' (a, b the pair differences of each triplet)."""
    d = HL.shape[0]
    for s in range(idx.shape[0]):
        p = pos[idx[s]]
        q = neg[idx[s]]
        for r in range(d):
            ar = diff[p, r]
            br = diff[q, r]
            for c in range(d):
                HL[r, c] += ar * diff[p, c] - br * diff[q, c]
    return HL


@njit(cache=True)
def _gather(D, pos, neg):
    out = np.empty(pos.shape[0])
    for t in range(pos.shape[0]):
        out[t] = D[pos[t]] - D[neg[t]]
    return out


@njit(cache=True)
def _gather_idx(D, pos, neg, idx):
    out = np.empty(idx.shape[0])
    for s in range(idx.shape[0]):
        t = idx[s]
        out[s] = D[pos[t]] - D[neg[t]]
    return out


# ------------------------------------------------------------------- losses ---
def loss_values(z: np.ndarray, gamma: float) -> np.ndarray:
    """Smoothed hinge (hinge for gamma=0), spec 1.4."""
    if gamma == 0.0:
        return np.maximum(0.0, 1.0 - z)
    return np.where(z > 1.0, 0.0, np.where(z >= 1.0 - gamma, (1.0 - z) ** 2 / (2 * gamma),
                                           1.0 - z - gamma / 2))


def dual_alpha(z: np.ndarray, gamma: float) -> np.ndarray:
    r""":math:`\alpha_t=-\ell'(z_t)` (spec 1.8); for the hinge :math:`1[z<1]` (0 at z=1)."""
    if gamma == 0.0:
        return (z < 1.0).astype(np.float64)
    return np.clip((1.0 - z) / gamma, 0.0, 1.0)


# ------------------------------------------------------------------ problem ---
@dataclass
class Evaluation:
    """Everything known at one PSD point M of the reduced problem."""

    M: np.ndarray
    z: np.ndarray  # compact: values of the working triplets
    S: np.ndarray  # sum alpha_t H_t + H_L
    S_pos: np.ndarray
    primal: float
    dual: float
    gap: float  # stable form (P2), >= 0
    grad: np.ndarray

    @property
    def rel_gap(self) -> float:
        return self.gap / max(abs(self.primal), 1e-300)


class TripletProblem:
    """The reduced problem of spec 1.9: a triplet set, its loss, and the screening state.

    ``status`` holds, per triplet, active / in :math:`\\hat{\\mathcal L}` / in
    :math:`\\hat{\\mathcal R}`. ``work`` is the index list the solver iterates over: the
    active triplets, or a subset of them under the active-set heuristic (which never
    changes ``status``, pitfall P4(f)).
    """

    def __init__(self, ts: TripletSet, gamma: float, diagonal: bool,
                 status: np.ndarray | None = None):
        self.ts, self.gamma, self.diagonal = ts, float(gamma), diagonal
        d = ts.X.shape[1]
        self.status = (np.zeros(ts.n_triplets, dtype=np.int8) if status is None
                       else status.copy())
        self.n_rejected = 0  # rejected (backtracked) steps, for diagnostics
        self.dual_alpha = None  # dual iterate (hinge solver), per triplet
        # one pass over the status: active list, their pairs, and H_L's pair weights
        work, cpos, cneg, cdiff, wL, nL = kn.status_split(self.status, ts.pos, ts.neg,
                                                          ts.diff)
        self.nL = int(nL)
        self.n_active = int(work.size)
        if not nL:
            self.HL = np.zeros(d) if diagonal else np.zeros((d, d))
        elif diagonal:
            self.HL = aggregate(ts.diff, wL, True)
        else:
            self.HL = kn.weighted_gram(ts.diff, wL)
        self._set_compact(work, cpos, cneg, cdiff)

    # -- state
    @property
    def active(self) -> np.ndarray:
        return np.flatnonzero(self.status == STATUS_ACTIVE).astype(np.int32)

    def set_work(self, work: np.ndarray) -> None:
        """Iterate over ``work`` (triplet indices): compact its pairs for the BLAS parts."""
        ts = self.ts
        work = np.ascontiguousarray(work, dtype=np.int32)
        self._set_compact(work, *kn.compact_work(ts.pos, ts.neg, ts.diff, work))

    def _set_compact(self, work, cpos, cneg, cdiff) -> None:
        self._stale = False
        self._compact = (work, cpos, cneg, cdiff)
        self._cdiff2 = cdiff * cdiff if self.diagonal else None
        self._z = np.empty(work.size)
        self._w = np.empty(cdiff.shape[0])

    def _fresh(self) -> tuple:
        """``(work, cpos, cneg, cdiff)``, rebuilt first if :meth:`apply_screened` left
        them behind the status."""
        if self._stale:
            self.set_work(self.active)
        return self._compact

    # the working arrays: triplet indices, their compact pair indices, the pairs
    work = property(lambda self: self._fresh()[0])
    cpos = property(lambda self: self._fresh()[1])
    cneg = property(lambda self: self._fresh()[2])
    cdiff = property(lambda self: self._fresh()[3])
    cdiff2 = property(lambda self: (self._fresh(), self._cdiff2)[1])

    def screen(self, to_R: np.ndarray, to_L: np.ndarray) -> None:
        """Move active triplets (indices) to :math:`\\hat{\\mathcal R}` / fold them into
        :math:`H_{\\hat L}` (whatever their current value, spec 1.9)."""
        if to_L.size:
            if to_L.size * 8 <= self.ts.n_pairs and not self.diagonal:
                # few triplets: add a a' - b b' directly (O(d^2) each)
                self.HL = _add_h(self.HL.copy(), self.ts.diff, self.ts.pos, self.ts.neg,
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
            keep = self.status[self.work] == STATUS_ACTIVE
            self.set_work(self.work[keep])
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
        self._stale = True

    def values(self, Q: np.ndarray) -> np.ndarray:
        r""":math:`\langle Q,H_t\rangle` over the working triplets (compact pairs)."""
        D = pair_values(self.cdiff, Q, self.diagonal, self.cdiff2)
        return _gather(D, self.cpos, self.cneg)

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

    def _s_of(self, a: np.ndarray) -> np.ndarray:
        r""":math:`\sum_{work}a_tH_t+H_{\hat L}` through the compact pairs."""
        npairs = self.cdiff.shape[0]
        w = (np.bincount(self.cpos, a, minlength=npairs)
             - np.bincount(self.cneg, a, minlength=npairs))
        return aggregate(self.cdiff, w, self.diagonal, self.cdiff2) + self.HL

    def _evaluate_primal(self, M: np.ndarray, lam: float) -> Evaluation:
        if not self.diagonal:
            M = np.ascontiguousarray(M, dtype=np.float64)
            primal, dual, gap, S, S_pos = _evaluate_full_nb(
                self.cdiff, self.cpos, self.cneg, self.HL, float(self.nL), self.gamma,
                lam, M, self._z, self._w)
            return Evaluation(M, self._z.copy(), S, S_pos, primal, dual, gap,
                              lam * M - S)
        D = pair_values(self.cdiff, M, self.diagonal, self.cdiff2)
        loss, sa, sa2 = _triplet_pass(D, self.cpos, self.cneg, self.gamma, self._z,
                                      self._w)
        S = aggregate(self.cdiff, self._w, self.diagonal, self.cdiff2) + self.HL
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


@dataclass
class SolveResult:
    M: np.ndarray
    evaluation: Evaluation
    n_iter: int
    converged: bool
    step: float
    time: float


def solve(problem: TripletProblem, M0: np.ndarray, lam: float, *, tol: float,
          max_iter: int, step: float | None = None, callback=None, interval: int = 10,
          active_set: bool = False, compiled: bool = True) -> SolveResult:
    r"""Minimise the reduced problem at ``lam`` from the PSD point ``M0``.

    Parameters
    ----------
    problem : TripletProblem
        Modified in place by the callback (screening).
    M0 : ndarray
        Feasible start (projected again for safety).
    tol : float
        Relative duality gap :math:`(\tilde P-\tilde D)/|\tilde P|` to reach.
    max_iter : int
        Maximum number of accepted gradient steps.
    step : float, optional
        Initial step (the previous solve's last one along a path); default
        :math:`1/\lambda`.
    callback : callable ``(problem, evaluation)``, optional
        Called at iteration 0 and every ``interval`` iterations with an evaluation over
        all active triplets. Returns False (nothing screened), True (screened: evaluate
        again) or the boolean keep-mask of the working triplets when every screened
        triplet was on its side at the iterate (the evaluation stays valid).
    active_set : bool
        The heuristic of spec 5.4 (safe: it only restricts the working set). Ignored for
        the hinge (gamma = 0), which is solved in the dual.
    compiled : bool
        Run the iterations between checkpoints in numba (full metric); False uses the
        NumPy loop (always used for a diagonal metric). Same iterates up to round-off.
    """
    t0 = time.perf_counter()
    diag = problem.diagonal
    M = project(np.asarray(M0, dtype=np.float64), diag)
    eta = 1.0 / lam if step is None or not np.isfinite(step) or step <= 0 else step
    # the hinge's dual FISTA keeps its own iterate over the working triplets; restarting
    # it on a working set refreshed every few steps stalls, so no active set there
    active_set = active_set and problem.gamma > 0
    # a callback may offer its rule as the built-in compiled ball test (attribute
    # ``inner`` = (use_gb, use_pgb, use_dgb), decisions reported to ``report_inner``)
    inner = getattr(callback, "inner", None)
    if (compiled and not diag and problem.gamma > 0 and not active_set
            and (callback is None or inner is not None)):
        # the whole solve in one compiled call (screening at the start point and every
        # ``interval`` steps when the callback offers its rule)
        if problem.work.size != problem.n_active:
            problem.set_work(problem.active)
        M, eta, k, ev = _run_compiled(problem, M, lam, eta, max_iter, tol, interval, inner,
                                      callback)
        return SolveResult(M, ev, k, ev.gap <= tol * abs(ev.primal), eta,
                           time.perf_counter() - t0)
    checkpoints = callback is not None or active_set
    ev = _checkpoint(problem, M, lam, callback, active_set)
    k = 0
    converged = False
    while True:
        if ev.gap <= tol * abs(ev.primal):
            if problem.work.size != problem.n_active:
                # active-set heuristic: confirm on every active triplet (spec 5.4)
                ev = _checkpoint(problem, M, lam, None, False)
                continue
            converged = True
            break
        if k >= max_iter:
            break
        n = min(interval if checkpoints else max_iter, max_iter - k)
        if problem.gamma == 0.0:
            M, eta, steps = _run_dual(problem, ev, lam, eta, n, tol)
            ev = None
        elif compiled and not diag:
            M, eta, steps, ev = _run_compiled(problem, ev.M, lam, eta, n, tol)
        else:
            M, eta, steps = _run_numpy(problem, ev, lam, eta, n, tol)
            ev = None
        k += steps
        if checkpoints:
            ev = _checkpoint(problem, M, lam, callback, active_set)
        elif ev is None:
            ev = problem.evaluate(M, lam)
    return SolveResult(M, ev, k, converged, eta, time.perf_counter() - t0)


def _run_compiled(problem: TripletProblem, M, lam, eta, n, tol, interval=10, inner=None,
                  callback=None):
    """Up to ``n`` accepted steps of :func:`.psd_kernels.spg` over the working triplets,
    with its built-in screening when ``inner`` = (use_gb, use_pgb, use_dgb) is given;
    records the screened triplets in ``problem`` and reports the checks to
    ``callback.report_inner``. Returns (M, step, steps, evaluation at M)."""
    work = problem.work
    screen = inner is not None
    flags = tuple(bool(f) for f in inner) if screen else (False, False, False)
    (M, eta, k, rejected, HL, nL, out_idx, out_code, checks, z, S, S_pos, primal, dual,
     gap) = kn.spg(problem.cdiff, problem.cpos, problem.cneg, problem.ts.hnorm[work],
                   np.ascontiguousarray(problem.HL), float(problem.nL), problem.gamma,
                   float(lam), np.ascontiguousarray(M, dtype=np.float64), float(eta),
                   int(n), float(tol), int(max(interval, 1)), *flags, screen)
    problem.n_rejected += rejected
    if screen:
        screened = work[out_idx]
        to_R, to_L = screened[out_code == 2], screened[out_code == 1]
        problem.apply_screened(to_R, to_L, HL, int(round(nL)))
        report = getattr(callback, "report_inner", None)
        if report is not None:
            report(problem, to_R, to_L, checks)
    ev = Evaluation(M, z, S, S_pos, primal, dual, gap, lam * M - S)
    return M, eta, k, ev


def _bb_step(dM, dG, eta):
    mg, gg, mm = float(np.sum(dM * dG)), float(np.sum(dG * dG)), float(np.sum(dM * dM))
    if mg > 0 and gg > 0:
        return 0.5 * abs(mg / gg + mm / mg)  # averaged Barzilai-Borwein step
    return eta


def _run_numpy(problem: TripletProblem, ev: Evaluation, lam, eta, n, tol):
    """Up to ``n`` accepted steps of the same algorithm as :func:`.psd_kernels.spg`
    (NumPy reference loop; the diagonal metric): projected BB direction, non-monotone
    line search along it with safeguarded quadratic interpolation."""
    M = ev.M
    k = 0
    hist = [ev.primal] * NONMONOTONE
    while k < n:
        dM = project(M - eta * ev.grad, problem.diagonal) - M
        gd = float(np.sum(ev.grad * dM))
        Pref = max(hist)
        t = 1.0
        for n_try in range(MAX_BACKTRACK + 1):
            evn = problem.evaluate(M + t * dM, lam)
            if evn.primal <= Pref + SUFFICIENT * t * gd + 1e-13 * abs(Pref) or \
                    n_try == MAX_BACKTRACK:
                break
            problem.n_rejected += 1
            den = 2.0 * (evn.primal - ev.primal - t * gd)
            tq = -gd * t * t / den if den > 0 else 0.5 * t
            t = min(max(tq, 0.1 * t), 0.5 * t)
        eta = _bb_step(t * dM, evn.grad - ev.grad, eta)
        M, ev = evn.M, evn
        hist[k % NONMONOTONE] = ev.primal
        k += 1
        if ev.gap <= tol * abs(ev.primal):
            break
    return M, eta, k


def _run_dual(problem: TripletProblem, ev: Evaluation, lam, step, n, tol):
    r"""Up to ``n`` accelerated projected-gradient steps (FISTA with backtracking and
    adaptive restart) on the box-constrained dual (spec 1.6, Dual2),

    .. math:: \max_{0\le\alpha\le1}-\frac\gamma2\|\alpha\|^2+\mathbf 1^\top\alpha
              -\frac1{2\lambda}\|[S(\alpha)]_+\|^2,\quad
              \partial_{\alpha_t}=1-\gamma\alpha_t-\langle H_t,[S(\alpha)]_+\rangle/\lambda,

    which is smooth even for the hinge (:math:`\gamma=0`), where the primal is not.
    Primal iterate :math:`M=[S(\alpha)]_+/\lambda` (PSD). ``step`` is :math:`1/L`."""
    diag = problem.diagonal
    if problem.dual_alpha is None:
        problem.dual_alpha = np.zeros(problem.ts.n_triplets)
        problem.dual_alpha[problem.work] = dual_alpha(ev.z, problem.gamma)
    a = problem.dual_alpha[problem.work].copy()
    L = 1.0 / step if step and np.isfinite(step) and step > 0 else 1.0 / lam
    g_ = problem.gamma

    def dual_and_grad(x):
        Sp = psd_split(problem._s_of(x), diag)[0]
        D = -0.5 * g_ * (x @ x) + x.sum() - float(np.sum(Sp * Sp)) / (2.0 * lam)
        return D, 1.0 - g_ * x - problem.values(Sp) / lam, Sp

    x, yv, t = a, a.copy(), 1.0
    Dx = dual_and_grad(x)[0]
    k = 0
    while k < n:
        Dy, gy, _ = dual_and_grad(yv)
        for _ in range(60):  # backtracking on the Lipschitz constant
            xn = np.clip(yv + gy / L, 0.0, 1.0)
            Dn, _, Spn = dual_and_grad(xn)
            dx = xn - yv
            if Dn >= Dy + gy @ dx - 0.5 * L * (dx @ dx) - 1e-12 * abs(Dy):
                break
            L *= 2.0
        k += 1
        if Dn < Dx:  # adaptive restart (O'Donoghue and Candes)
            yv, t = x.copy(), 1.0
            continue
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        yv = xn + (t - 1.0) / tn * (xn - x)
        x, Dx, t = xn, Dn, tn
        L *= 0.95
        problem.dual_alpha[problem.work] = x
        M = Spn / lam
        P = problem._evaluate_primal(M, lam).primal
        if P - (Dx - 0.5 * g_ * problem.nL + problem.nL) <= tol * abs(P):
            break
    problem.dual_alpha[problem.work] = x
    return psd_split(problem._s_of(x), diag)[0] / lam, 1.0 / L, k


def _checkpoint(problem: TripletProblem, M, lam, callback, active_set) -> Evaluation:
    """Screening / working-set refresh point: evaluate over all active triplets, let the
    callback screen, then restrict the working set (active set) if asked."""
    if problem.work.size != problem.n_active or active_set:
        problem.set_work(problem.active)
    ev = problem.evaluate(M, lam)
    if callback is not None:
        changed = callback(problem, ev)
        if isinstance(changed, np.ndarray) and problem.dual_alpha is None:
            # the callback screened only triplets on their side at M (its balls contain
            # M): objective, S, gradient and gap are unchanged; drop their z values
            ev.z = ev.z[changed]
        elif changed is not None and changed is not False:
            ev = problem.evaluate(M, lam)
    if active_set:
        work = problem.work[ev.z < 1.0]  # positive loss (spec 5.4)
        if work.size < problem.work.size:
            problem.set_work(work)
            ev = problem.evaluate(M, lam)
    return ev


def closed_form(ts: TripletSet, gamma: float, diagonal: bool) -> tuple[float, np.ndarray]:
    r""":math:`\lambda_L` and :math:`G_+` of spec 1.10: for :math:`\lambda\ge\lambda_L`,
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


@njit(cache=True)
def _evaluate_full_nb(diff, pos, neg, HL, nL, gamma, lam, M, z, w):
    """Full evaluation (primal, dual, stable gap, S, S_+) for the full metric, with the
    kernels of the compiled solver."""
    npairs, d = diff.shape
    Phi = np.empty((0, 0))  # one evaluation: the products with M (no vech table)
    T = np.empty((npairs, d))
    D = np.empty(npairs)
    kn.pair_forms(diff, Phi, False, M, T, D)
    loss, sa, sa2 = kn.triplet_pass(D, pos, neg, gamma, z, w)
    S = kn.laplacian_sum(diff, Phi, False, w, T, np.empty((npairs, d)),
                         np.empty(d * (d + 1) // 2)) + HL
    S_pos, dual, gap = kn.gap_terms(M, S, lam, sa, sa2, nL, gamma)
    primal = loss + (1.0 - 0.5 * gamma) * nL - np.sum(M * HL) + 0.5 * lam * np.sum(M * M)
    return primal, dual, gap, S, S_pos
