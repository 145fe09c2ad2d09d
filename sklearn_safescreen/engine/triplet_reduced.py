"""The reduced triplet problem of one path step, as the certificate drives it.

:func:`~.certify.certified_solve` solves it with the projected gradient solver, reads
its full-problem certificate (exact, or from bounds where those decide every screened
triplet), and releases triplets proven on the wrong side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..problems import _triplet_fast as tk
from ..problems.constants import RADIUS_ATOL, RADIUS_RTOL
from ..problems.triplet_problem import (
    STATUS_ACTIVE,
    STATUS_L,
    STATUS_R,
    Evaluation,
    TripletProblem,
    pair_values,
    triplet_values_at,
)
from ..screening import triplet_bounds as tb
from ..solvers import psd_gradient as pg
from .certify import Certificate
from .report import ScreeningEvent, ScreeningReport
from .triplet_settings import (
    DEFAULT_OPTIONS,
    TripletOptions,
    TripletReference,
    TripletSettings,
)

if TYPE_CHECKING:
    from .triplet_dynamic import DynamicScreening


def pair_share(ts, idx: np.ndarray) -> float:
    """The share of the pairs that the triplets ``idx`` use."""
    used = np.zeros(ts.n_pairs, dtype=bool)
    used[ts.pos[idx]] = True
    used[ts.neg[idx]] = True
    return float(np.count_nonzero(used)) / max(ts.n_pairs, 1)


class ReducedTriplets:
    """The reduced triplet problem of one step, as :func:`~.certify.certified_solve`
    drives it (``options``: the path's tuning values,
    :class:`~.triplet_settings.TripletOptions`)."""

    def __init__(self, problem: TripletProblem, M0: np.ndarray, alpha: float,
                 hook: DynamicScreening | None, step: float | None,
                 report: ScreeningReport, settings: TripletSettings,
                 workspace: pg.SpgWorkspace | None = None,
                 prior: TripletReference | None = None,
                 options: TripletOptions = DEFAULT_OPTIONS):
        self.problem, self.M, self.alpha = problem, M0, alpha
        self.options = options
        self.hook, self.step = hook, step
        self.report, self.settings = report, settings
        self.workspace = workspace
        self.prior = prior  # the values of an earlier metric, for the bounds
        self.nL0 = problem.nL
        self.res = None
        self.zrad = None
        self.bounded = None  # whether the last certificate came from the bounds

    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        s = self.settings
        rule_time = 0.0 if self.hook is None else self.hook.time
        res = pg.solve(self.problem, self.M, self.alpha, tol=tol, max_iter=max_iter,
                       step=self.step, callback=self.hook, interval=s.interval,
                       active_set=s.active_set, workspace=self.workspace)
        self.res, self.step, self.M = res, res.step, res.M
        # the hook's checks ran inside the solve: their time is the rule's, not twice
        rule_time = 0.0 if self.hook is None else self.hook.time - rule_time
        self.report.add(ScreeningEvent("none", "solve", self.alpha, 0, 0,
                                       self.problem.ts.n_triplets, 0.0,
                                       max(res.time - rule_time, 0.0)))
        return res.n_iter, res.converged

    def certify(self) -> Certificate:
        """When every screened triplet is on its side at M (z >= 1 in R, z <= 1 - gamma
        in L), the full primal, dual point and gap equal the reduced ones exactly;
        otherwise the full problem is evaluated.

        With a :attr:`prior` (values at an earlier metric), the screened triplets'
        values are first bounded (:meth:`_bounded_certificate`) and only those the
        bound leaves undecided are evaluated."""
        problem, M, alpha = self.problem, self.M, self.alpha
        ts, gamma = problem.ts, problem.gamma
        red = self.res.evaluation
        n_t = ts.n_triplets
        self.zrad = None
        if self.prior is not None and problem.n_active < n_t:
            self.bounded = self._bounded_certificate(red)
            if self.bounded:
                self._log_certificate(red.rel_gap, red)
                return Certificate(red.gap, red.rel_gap)
        if problem.n_active == n_t and red.z.size == n_t:
            # nothing screened: the solver's evaluation covers every triplet (in order)
            z_full, on_side = red.z, True
            loss = tk.loss_sum(z_full, gamma)
        else:
            if problem.diagonal:
                z_full, loss, on_side = tk.certificate_pass(
                    pair_values(ts.diff, M, True), ts.pos, ts.neg, problem.status, gamma)
            else:  # the pair forms and the pass in one compiled call
                z_full, loss, on_side = tk.certificate(ts.diff, ts.pos, ts.neg,
                                                       problem.status, M, gamma)
        self.z_full, self.loss = z_full, loss
        if on_side:
            # no screened triplet is off its side, so none is proven wrong or loose
            self._log_certificate(red.rel_gap, red)
            return Certificate(red.gap, red.rel_gap)
        isR, isL = problem.status == STATUS_R, problem.status == STATUS_L
        loose = (isR & (z_full < 1.0)) | (isL & (z_full > 1.0 - gamma))
        if gamma > 0.0 and red.z.size == problem.n_active and np.array_equal(red.M, M):
            # the reduced evaluation with the loose triplets counted as they are, through
            # their pairs alone (not the whole problem's evaluation, a pass over every
            # pair and more)
            idx = np.flatnonzero(loose)
            ev = problem.released(red, idx, z_full[idx], alpha)
        else:
            ev = TripletProblem(ts, gamma, problem.diagonal).evaluate(M, alpha)
        gap, rel_gap = ev.gap, ev.rel_gap
        self._log_certificate(rel_gap, red)
        r = tb.inflate(np.sqrt(2.0 * red.gap / alpha), M)
        wrong = (isR & (z_full + r * ts.hnorm < 1.0)) | (
            isL & (z_full - r * ts.hnorm > 1.0 - gamma))
        return Certificate(gap, rel_gap, wrong, int(wrong.sum()), loose, int(loose.sum()))

    def _bounded_certificate(self, red: Evaluation) -> bool:
        r"""The certificate without a pass over every pair, when it succeeds.

        The prior's values :math:`z^0_t` are within :math:`\rho_t\|H_t\|` of
        :math:`\langle M_0,H_t\rangle` (``zrad``; 0 where exact). With
        :math:`M=sM_0+R` (:math:`s=\langle M,M_0\rangle/\|M_0\|^2`, which makes
        :math:`\|R\|` the distance from M to the line of :math:`M_0`: along a path the
        metric mostly grows), by Cauchy-Schwarz
        :math:`|\langle M,H_t\rangle-s z^0_t|\le(|s|\rho_t+\|R\|_F)\|H_t\|_F`, the
        distance inflated for round-off as every radius is (``RADIUS_RTOL``,
        ``RADIUS_ATOL``) and each decision strict with the slack ``SCREEN_RTOL``. A
        screened triplet that this bound puts on its side is; the others screened and
        every active triplet are evaluated exactly at M (the active ones are the
        solver's last evaluation when it covers them all). If an evaluated screened
        triplet is off its side, returns False: the caller's exact certificate decides.
        Otherwise sets :attr:`z_full` (bounded values where :attr:`zrad` > 0) and the
        full loss :attr:`loss`, from the active triplets' losses and the screened ones'
        (0 in R, linear in L: :math:`(1-\gamma/2)|\hat L|-\langle M,H_{\hat L}\rangle`),
        and returns True."""
        problem, M, prior = self.problem, self.M, self.prior
        ts, gamma, diag = problem.ts, problem.gamma, problem.diagonal
        status = problem.status
        M0 = prior.M
        m0 = float(np.sum(M0 * M0))
        s = float(np.sum(M * M0)) / m0 if m0 > 0.0 else 0.0
        # (any s gives a valid bound: the rounding of R is far below RADIUS_ATOL * scale)
        scale = max(1.0, float(np.linalg.norm(M)), abs(s) * float(np.linalg.norm(M0)))
        dist = (float(np.linalg.norm(M - s * M0)) * (1.0 + RADIUS_RTOL)
                + RADIUS_ATOL * scale)
        active = problem.active
        # the solver's evaluation at M covers every active triplet, or the active ones
        # are evaluated with the screened ones the bounds leave undecided
        covered = (not problem._stale and red.z.size == active.size
                   and np.array_equal(problem._compact[0], active)
                   and np.array_equal(red.M, M))
        z_act = red.z if covered else None
        # (one compiled pass instead of a dozen array operations over every triplet)
        z0, rad, exact = tb.bounded_values(prior.z, prior.zrad, ts.hnorm, status, s, dist,
                                           gamma, not covered)
        # (the pairs the active triplets alone use need not be read when z_act is known)
        if pair_share(ts, exact) > self.options.full_pass_share:
            return False  # most pairs needed anyway: the exact certificate's one pass
        z_ex = triplet_values_at(ts, M, diag, exact)
        st = status[exact]
        if np.any(((st == STATUS_R) & (z_ex < 1.0)) | ((st == STATUS_L) & (z_ex > 1.0 - gamma))):
            return False
        z_full = z0  # (a new array)
        z_full[exact] = z_ex
        rad[exact] = 0.0
        if z_act is not None:
            z_full[active] = z_act
            rad[active] = 0.0
        else:
            z_act = z_full[active]
        self.z_full, self.zrad = z_full, rad
        self.loss = (float(tk.loss_sum(np.ascontiguousarray(z_act), gamma))
                     + (1.0 - 0.5 * gamma) * problem.nL - float(np.sum(M * problem.HL)))
        return True

    def _log_certificate(self, rel_gap: float, reduced) -> None:
        if not self.settings.verbose:
            return
        self.settings.log(f"alpha={self.alpha:<10.4g} certificate full rel_gap={rel_gap:.3e} "
                          f"(reduced rel_gap={reduced.rel_gap:.3e}) iter={self.res.n_iter}")

    def stop_dynamic_screening(self) -> None:
        self.hook = None

    @property
    def rules(self) -> str:
        s = self.settings
        return (f"the {s.bound.upper()} reference bound, the {s.rule} rule and the dynamic "
                "balls" if s.bound is not None else "the triplet rules")

    def release_all(self) -> None:
        self.release(self.problem.status != STATUS_ACTIVE, proven=False)

    def release(self, which: np.ndarray, proven: bool) -> None:
        status = self.problem.status
        if proven:
            self.report.add(ScreeningEvent(
                "certificate", "repair", self.alpha, -int((which & (status == STATUS_R)).sum()),
                -int((which & (status == STATUS_L)).sum()), self.problem.ts.n_triplets))
        status = status.copy()
        status[which] = STATUS_ACTIVE
        p = self.problem
        self.problem = TripletProblem(p.ts, p.gamma, p.diagonal, status)
