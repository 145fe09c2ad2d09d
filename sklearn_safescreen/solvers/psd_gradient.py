r"""Projected gradient on the PSD cone for triplet metric learning.

Solves the reduced problem of :mod:`~sklearn_safescreen.problems.triplet_problem` with
some triplets fixed by screening. One eigendecomposition of a d x d matrix per step: the
projection's, whose negative part is also a dual point for the gap at the current
iterate (the best dual point :math:`-S_-` is used at screening checks and at the end,
one more eigendecomposition each). A diagonal metric replaces the PSD cone by the
non-negative orthant.

:func:`solve` is projected gradient with the averaged Barzilai-Borwein step (Yoshida et
al. 2019), made globally convergent by the non-monotone line search of spectral
projected gradient (Birgin, Martinez and Raydan 2000: a rejected step is shortened along
the projected direction, which stays feasible), stopping on the relative gap
:math:`\mathrm{gap}\le\mathrm{tol}\,|\tilde P|`. For the full metric it runs in the
compiled loop of ``_spg_fast.pyx``, with the sphere rule of the GB/PGB/DGB balls
built in (dynamic screening every ``interval`` steps); other rules run as a Python
:class:`ScreeningHook` between compiled stretches of ``interval`` steps. The optional
active-set heuristic optimises over the active triplets with positive loss, refreshed
at every check (a triplet once in the working set stays there for the rest of the
solve), and confirms convergence on all of them (it only restricts the working
set, never the screening status). The hinge (gamma = 0) is solved in the dual
(accelerated projected gradient on the box).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from ..problems.triplet_problem import (
    Evaluation,
    TripletProblem,
    dual_alpha,
    project,
    psd_split,
    triplet_values_at,
)
from . import _spg_fast as kn
from ._spg_fast import MAX_BACKTRACK, NONMONOTONE, SUFFICIENT, SpgWorkspace


class ScreeningHook:
    """What :func:`solve` calls to screen triplets during a solve (the engine's dynamic
    screening implements it).

    ``compiled`` is ``(use_gb, use_pgb, use_dgb)`` when the hook's rule is the sphere
    rule with those balls at the iterate, which the compiled loop then runs itself
    (reporting its checks to :meth:`record_compiled`); ``None`` makes the solver call
    the hook between compiled stretches.
    """

    compiled: tuple[bool, bool, bool] | None = None

    def __call__(self, problem: TripletProblem, ev: Evaluation):
        """Screen at the evaluation ``ev`` of ``problem`` (in place, through
        ``problem.screen``). Returns False (nothing screened), True (screened: evaluate
        again) or the boolean keep-mask of the working triplets when every screened
        triplet was on its side at the iterate (the evaluation stays valid)."""
        raise NotImplementedError  # pragma: no cover - an interface

    def record_compiled(self, problem: TripletProblem, to_R: np.ndarray, to_L: np.ndarray,
                        checks: np.ndarray, n_checks: int) -> None:
        """The decisions of the compiled loop's ``n_checks`` checks: rows ``(step, n_R,
        n_L)`` of the first check and of those that screened something."""


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
          active_set: bool = False, compiled: bool = True,
          workspace: SpgWorkspace | None = None) -> SolveResult:
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
    callback : ScreeningHook, optional
        Called at iteration 0 and every ``interval`` iterations with an evaluation over
        all active triplets, except where that evaluation meets ``tol`` (or, when it
        offers a ``compiled`` rule, run inside the compiled loop).
    active_set : bool
        The heuristic of Weinberger and Saul (2009) (safe: it only restricts the working
        set). Ignored for
        the hinge (gamma = 0), which is solved in the dual.
    compiled : bool
        Run the iterations between checkpoints compiled (full metric); False uses the
        NumPy loop (always used for a diagonal metric). Same iterates up to round-off.
    workspace : SpgWorkspace, optional
        The compiled loop's work buffers, kept by the caller between solves (e.g. the
        fits of a path) so that they are not allocated again; the results do not
        depend on it. By default each compiled call allocates its own.
    """
    t0 = time.perf_counter()
    diag = problem.diagonal
    M = project(np.asarray(M0, dtype=np.float64), diag)
    eta = 1.0 / lam if step is None or not math.isfinite(step) or step <= 0 else step
    # the hinge's dual FISTA keeps its own iterate over the working triplets; restarting
    # it on a working set refreshed every few steps stalls, so no active set there
    active_set = active_set and problem.gamma > 0
    inner = None if callback is None else callback.compiled
    if (compiled and not diag and problem.gamma > 0 and not active_set
            and (callback is None or inner is not None)):
        # the whole solve in one compiled call (screening at the start point and every
        # ``interval`` steps when the callback offers its rule)
        if problem.work.size != problem.n_active:
            problem.set_work(problem.active)
        M, eta, k, ev = _run_compiled(problem, M, lam, eta, max_iter, tol, interval, inner,
                                      callback, workspace)
        return SolveResult(M, ev, k, ev.gap <= tol * abs(ev.primal), eta,
                           time.perf_counter() - t0)
    checkpoints = callback is not None or active_set
    # ``ev`` is over the working triplets; its objective, gradient and gap are those of
    # every active triplet (a checkpoint's: the triplets the active set leaves out have
    # zero loss there, or the working set is the active set), and ``ev_all`` holds the
    # same evaluation with the values of every active triplet
    ev, ev_all = _checkpoint(problem, M, lam, callback, active_set, tol=tol)
    k = 0
    converged = False
    while True:
        if ev.gap <= tol * abs(ev.primal):
            converged = True
            break
        if k >= max_iter:
            break
        n = min(interval if checkpoints else max_iter, max_iter - k)
        if problem.gamma == 0.0:
            M, eta, steps = _run_dual(problem, ev, lam, eta, n, tol)
            ev = None
        elif compiled and not diag:
            M, eta, steps, ev = _run_compiled(problem, ev.M, lam, eta, n, tol,
                                              workspace=workspace)
        else:
            M, eta, steps, ev = _run_numpy(problem, ev, lam, eta, n, tol)
        k += steps
        if checkpoints:  # (the gap of the working set alone does not stop the solve)
            kept = problem.work if problem.work.size != problem.n_active else None
            ev, ev_all = _checkpoint(problem, M, lam, callback, active_set, ev, tol, kept)
        else:
            ev = ev_all = problem.evaluate(M, lam) if ev is None else ev
    if problem.work.size != problem.n_active:
        problem.set_work(problem.active)  # (kept by the problem: no new compaction)
    return SolveResult(M, ev_all, k, converged, eta, time.perf_counter() - t0)


def _run_compiled(problem: TripletProblem, M, lam, eta, n, tol, interval=10, inner=None,
                  callback=None, workspace=None):
    """Up to ``n`` accepted steps of the compiled ``spg`` loop over the working triplets,
    with its built-in screening when ``inner`` = (use_gb, use_pgb, use_dgb) is given;
    records the screened triplets in ``problem`` and reports the checks to
    ``callback.record_compiled``. Returns (M, step, steps, evaluation at M)."""
    work, cpos, cneg, pairs, rows = problem.solver_pairs
    screen = inner is not None
    use_gb, use_pgb, use_dgb = inner if screen else (False, False, False)
    (M, eta, k, rejected, HL, nL, to_R, to_L, checks, n_checks, z, S, S_pos, primal, dual,
     gap) = kn.spg(pairs, cpos, cneg, problem.ts.hnorm, work, problem.HL,
                   float(problem.nL), problem.gamma, float(lam), M, float(eta), int(n),
                   float(tol), int(max(interval, 1)), use_gb, use_pgb, use_dgb, screen,
                   workspace, rows)
    problem.n_rejected += rejected
    if screen:
        problem.apply_screened(to_R, to_L, HL, int(round(nL)))
        if callback is not None:
            callback.record_compiled(problem, to_R, to_L, checks, n_checks)
    ev = Evaluation(M, z, S, S_pos, primal, dual, gap, lam * M - S)
    return M, eta, k, ev


def _bb_step(dM, dG, eta):
    mg, gg, mm = float(np.sum(dM * dG)), float(np.sum(dG * dG)), float(np.sum(dM * dM))
    if mg > 0 and gg > 0:
        return 0.5 * abs(mg / gg + mm / mg)  # averaged Barzilai-Borwein step
    return eta


def _run_numpy(problem: TripletProblem, ev: Evaluation, lam, eta, n, tol):
    """Up to ``n`` accepted steps of the same algorithm as the compiled ``spg`` loop
    (NumPy reference loop; the diagonal metric): projected BB direction, non-monotone
    line search along it with safeguarded quadratic interpolation. Returns (M, step,
    steps, evaluation at M)."""
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
    return M, eta, k, ev


def _run_dual(problem: TripletProblem, ev: Evaluation, lam, step, n, tol):
    r"""Up to ``n`` accelerated projected-gradient steps (FISTA with backtracking and
    adaptive restart) on the box-constrained dual (Yoshida et al. 2019, Dual2),

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


def _checkpoint(problem: TripletProblem, M, lam, callback, active_set,
                ev: Evaluation | None = None, tol: float | None = None,
                kept: np.ndarray | None = None) -> tuple[Evaluation, Evaluation]:
    """Screening / working-set refresh point: evaluate over all active triplets, let the
    callback screen, then restrict the working set (active set) if asked. ``ev``, when
    given, is an evaluation at M over the current working triplets (the solver's last).
    When the relative gap there meets ``tol`` the solve ends, so the callback is not
    called: no iteration follows that its decisions could shorten (and the active
    triplets' values, known from the evaluation, cost the certificate nothing).

    Returns the evaluation over the working triplets and the one over every active
    triplet. They differ only in their values ``z``: the triplets the active set leaves
    out have zero loss and zero dual variable at M (z >= 1), so they add nothing to the
    objective, to S or to the gap, and the restriction needs no new evaluation.

    ``kept`` is the working set the solve restricted to before (None: none): it stays
    in the working set, which only grows within a solve. Refreshed from z < 1 alone,
    two working sets could alternate for ever, the optimum of each putting triplets of
    the other below 1 and its own above (seen with two triplets, one feature)."""
    ev = _over_active(problem, M, lam, ev, active_set)
    if tol is not None and ev.gap <= tol * abs(ev.primal):
        return ev, ev
    if callback is not None:
        changed = callback(problem, ev)
        if isinstance(changed, np.ndarray) and problem.dual_alpha is None:
            # the callback screened only triplets on their side at M (its balls contain
            # M): objective, S, gradient and gap are unchanged; drop their z values
            ev.z = ev.z[changed]
        elif changed is not None and changed is not False:
            ev = problem.evaluate(M, lam)
    if active_set:
        keep = ev.z < 1.0  # positive loss
        if kept is not None:
            keep |= np.isin(problem.work, kept, assume_unique=True)
        work = problem.work[keep]
        if work.size < problem.work.size and _fewer_pairs(problem, work):
            problem.set_work(work)
            return replace(ev, z=ev.z[keep]), ev
    return ev, ev


def _over_active(problem: TripletProblem, M, lam, ev: Evaluation | None,
                 active_set: bool) -> Evaluation:
    """The evaluation at M over every active triplet, with the working set made the
    active set. From ``ev`` (at M over the working triplets) when it covers them, or
    completed by the active triplets outside the working set (their values, through
    their pairs alone): those with z >= 1 add nothing to objective, S or gap, the
    others join them (:meth:`~..problems.triplet_problem.TripletProblem.extended`)."""
    work = problem.work
    if ev is not None and ev.M is not M:
        ev = None
    if ev is not None and work.size != problem.n_active:
        active = problem.active
        inside = np.zeros(active.size, dtype=bool)
        inside[np.searchsorted(active, work)] = True
        out = active[~inside]
        z_out = triplet_values_at(problem.ts, M, problem.diagonal, out)
        loss = z_out < 1.0
        if loss.any():
            ev = problem.extended(ev, out[loss], z_out[loss], lam)
        z = np.empty(active.size)
        z[inside], z[~inside] = ev.z, z_out
        ev = replace(ev, z=z)
    if problem.work.size != problem.n_active or active_set:
        problem.set_work(problem.active)
    return problem.evaluate(M, lam) if ev is None else ev


#: The active-set heuristic restricts the iterations only when the restricted triplets
#: use at most this share of the active triplets' pairs: an iteration costs per pair,
#: and a restriction costs the compaction of the working pairs (a copy of their
#: differences for a full metric).
ACTIVE_SET_PAIR_SHARE = 0.9


def _fewer_pairs(problem: TripletProblem, work: np.ndarray) -> bool:
    """Whether the triplets ``work`` use a smaller share of the pairs than
    :data:`ACTIVE_SET_PAIR_SHARE` of the current working triplets' pairs."""
    ts = problem.ts
    used = np.zeros(ts.n_pairs, dtype=bool)
    used[ts.pos[work]] = True
    used[ts.neg[work]] = True
    return np.count_nonzero(used) <= ACTIVE_SET_PAIR_SHARE * problem.n_pairs_used


