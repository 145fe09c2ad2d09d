"""Dynamic screening of the triplet family at the solver's iterates.

Between solver iterations of a reduced triplet problem at one ``alpha``, the balls of
the iterate (GB, PGB, DGB, CDGB: ``doc/theory/metric_learning.rst``) screen the
triplets still active with the estimator's rule; the sphere rule with GB/PGB/DGB on a
full metric runs inside the compiled solver loop instead.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from ..problems.triplet_problem import Evaluation, TripletProblem, psd_split
from ..problems.triplets import TripletSet
from ..screening import triplet_bounds as tb
from ..screening._triplet_fast import iterate_ball_codes
from ..screening.triplet import SdpSchedule, screen_triplets
from ..solvers import psd_gradient as pg
from .report import ScreeningEvent, ScreeningReport


class DynamicScreening(pg.ScreeningHook):
    """Dynamic screening at the iterates of the reduced problem, at this ``alpha``: the
    settings' rule with the GB, PGB and/or DGB balls (CDGB for ``bound="cdgb"``).

    The sphere rule with GB/PGB/DGB on a full metric is offered to the solver as its
    built-in compiled test (:attr:`compiled`); other rules run here, between compiled
    stretches. With ``rule="sdp"`` every ball's sphere and linear rules run first, then,
    when ``schedule`` says so (:class:`~..screening.triplet.SdpSchedule`), the SDP stage
    on the triplets that no ball decided. :attr:`time` accumulates the rule's time.
    """

    def __init__(self, ts: TripletSet, alpha: float, report: ScreeningReport,
                 settings, schedule: SdpSchedule | None = None):
        self.ts, self.alpha, self.report, self.settings = ts, alpha, report, settings
        self.schedule = (SdpSchedule() if schedule is None and settings.rule == "sdp"
                         else schedule)
        (self.use_gb, self.use_pgb, self.use_dgb, self.names,
         self.compiled) = _dynamic_balls(settings.bound, settings.rule, settings.diagonal)
        self.calls = 0
        self.time = 0.0

    def __call__(self, problem: TripletProblem, ev: Evaluation):
        t0 = time.perf_counter()
        alpha, ts, s = self.alpha, self.ts, self.settings
        if self.compiled is not None:  # the same rule and balls, in one compiled pass
            codes = iterate_ball_codes(
                problem.cdiff, problem.cpos, problem.cneg, ts.hnorm[problem.work], ev.z,
                np.ascontiguousarray(ev.M), np.ascontiguousarray(ev.grad), ev.gap, alpha,
                s.gamma, self.use_gb, self.use_pgb, self.use_dgb)
            return self._record(problem, problem.work[codes == 2],
                                problem.work[codes == 1], self.names, ev, t0, True)
        M, diag = ev.M, s.diagonal
        # the half-spaces of the linear rule contain the PSD cone: the SDP rule's cheap
        # stage uses them too
        planes = s.rule in ("linear", "sdp")
        balls = []
        if self.use_gb:
            balls.append(tb.gb_linear(M, ev.grad, alpha, diag) if planes
                         else tb.gb(M, ev.grad, alpha))
        if self.use_pgb:
            balls.append(tb.pgb(M, ev.grad, alpha, diag))
        if self.use_dgb:
            ball = tb.dgb(M, ev.gap, alpha)
            if planes:
                ball.plane = -psd_split(M - ev.grad / (2 * alpha), diag)[1]
            balls.append(ball)
        if s.bound == "cdgb":
            img = ev.S_pos / alpha
            balls.append(tb.cdgb(ev.S_pos, problem.evaluate(img, alpha).primal, ev.dual,
                                 alpha))
        idx = problem.work
        to_R = np.zeros(idx.size, dtype=bool)
        to_L = np.zeros(idx.size, dtype=bool)
        cheap = "linear" if planes else s.rule
        for ball in balls:
            res = screen_triplets(ts, ball, cheap, s.gamma, diag, idx, ref_values=ev.z,
                                  x0_values=ev.z, values=problem.values)
            to_R |= res.to_R
            to_L |= res.to_L
        if s.rule == "sdp":
            # (the solver checks every ``interval`` iterations)
            self.schedule.credit(self.calls * s.interval)
        if s.rule == "sdp" and self.schedule.due():
            n_sdp = n_eig = 0
            for ball in balls:  # only the triplets no ball decided
                res = screen_triplets(ts, ball, "sdp", s.gamma, diag, idx,
                                      ref_values=ev.z, x0_values=ev.z,
                                      values=problem.values, decided=to_R | to_L,
                                      max_eig=self.schedule.budget - n_eig)
                n_sdp += res.n_sdp
                n_eig += res.n_eig
                to_R |= res.to_R
                to_L |= res.to_L
            self.schedule.record(n_sdp, n_eig)
        to_L &= ~to_R  # cannot both hold for a safe ball; stay conservative
        return self._record(problem, idx[to_R], idx[to_L],
                            "+".join(b.name for b in balls), ev, t0, s.bound != "cdgb")

    def _record(self, problem, R_idx, L_idx, name, ev, t0, contains_m):
        """Apply and report. Returns False (nothing screened), the keep-mask of the
        working triplets (every ball contains the iterate M, so the screened ones were
        on their side at M and the evaluation stays valid) or True."""
        keep = problem.screen(R_idx, L_idx)
        moment = "reference" if self.calls == 0 else "dynamic"
        self.calls += 1
        dt = time.perf_counter() - t0
        self.time += dt
        self.report.add(ScreeningEvent(name, moment, self.alpha, int(R_idx.size),
                                       int(L_idx.size), self.ts.n_triplets, dt))
        s = self.settings
        if s.verbose > 1 or (s.verbose and moment == "reference"):
            s.log(f"alpha={self.alpha:<10.4g} {moment:<9} {name:<8} R+={R_idx.size:<7d} "
                  f"L+={L_idx.size:<7d} active={problem.work.size:<8d} "
                  f"rel_gap={ev.rel_gap:.2e} time={dt:.3e}s")
        if keep is None:
            return False
        return keep if contains_m else True

    def record_compiled(self, problem, to_R, to_L, checks, n_checks) -> None:
        """Events of the checks made inside the compiled loop (same rule and balls): the
        check at the start point ("reference", as the first call) and the dynamic
        checks that screened something (``checks`` holds their rows and the first
        check's). Their time is inside the solver's."""
        first = self.calls == 0
        for i, (step, n_R, n_L) in enumerate(checks.tolist()):
            moment = "reference" if first and i == 0 and step == 0 else "dynamic"
            if moment == "reference" or n_R or n_L:
                self.report.add(ScreeningEvent(self.names, moment, self.alpha, n_R, n_L,
                                               self.ts.n_triplets))
        self.calls += n_checks
        s = self.settings
        if s.verbose > 1 and n_checks:
            s.log(f"alpha={self.alpha:<10.4g} dynamic   {self.names:<8} {n_checks} "
                  f"checks R+={to_R.size:<7d} L+={to_L.size:<7d} "
                  f"active={problem.n_active:<8d}")


@functools.lru_cache(maxsize=64)
def _dynamic_balls(bound: str, rule: str, diagonal: bool) -> tuple:
    """``(use_gb, use_pgb, use_dgb, names, compiled)`` of :class:`DynamicScreening` for
    these settings (the same at every fit of a path)."""
    use_gb = bound == "gb"
    use_pgb = bound in ("pgb", "rrpb+pgb")
    use_dgb = bound in ("dgb", "rrpb", "rpb", "rrpb+pgb")
    names = "+".join(n for n, u in (("GB", use_gb), ("PGB", use_pgb), ("DGB", use_dgb))
                     if u)
    compiled = ((use_gb, use_pgb, use_dgb)
                if rule == "sphere" and not diagonal and bound != "cdgb" else None)
    return use_gb, use_pgb, use_dgb, names, compiled
