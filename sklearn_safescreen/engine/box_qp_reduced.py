"""The reduced box QP of one path step, as the certificate drives it: the screened
samples held at their bound, the others solved by coordinate descent with working sets
and gap-safe dynamic screening (:func:`~.certify.certified_solve`)."""

from __future__ import annotations

import time

import numpy as np

from .._utils import faults
from ..problems.box_qp import BoxQP, BoxQPReference
from ..problems.constants import TINY
from ..screening.balls import gap_ball_screen, proven_violations
from ..solvers._cd_fast import start_point
from ..solvers.dual_cd import solve_box_qp
from ..solvers.greedy_cd import prefer_greedy, solve_kernel_greedy
from ..solvers.working_set import (
    prefer_working_sets,
    solve_plain_then_working_set,
    solve_working_set,
)
from .certify import Certificate
from .report import ScreeningEvent, ScreeningReport

#: Kernel mode: the certificate's margins are updated from the previous solution's
#: while the error bound of the duality gap they give stays below this share of the
#: gap ``tol`` allows: the bound grows with every update, while a fresh product costs a
#: pass over the support's kernel rows, so it is taken only once the support moved
#: enough for the updates' errors to approach what ``tol`` can absorb.
INCREMENTAL_GAP_ERROR = 1e-3


class ReducedBoxQP:
    """The reduced problem of one step, as :func:`~.certify.certified_solve` drives it:
    screened samples held at their bound, the others solved by coordinate descent with
    working sets and gap-safe dynamic screening."""

    def __init__(self, problem: BoxQP, alpha0: np.ndarray, at_lower: np.ndarray,
                 at_upper: np.ndarray, *, dynamic: bool, working_set: bool,
                 rng: np.random.RandomState, report: ScreeningReport, rule: str,
                 C: float, task: str, reference: BoxQPReference | None = None):
        self.problem, self.rng, self.report = problem, rng, report
        # the previous solution: its margins start the kernel solver's gradient, and
        # the certificate's margins are updated from them
        self._reference = self._margin_base = reference
        self.dynamic, self.working_set = dynamic, working_set
        self.rule, self.C, self.task = rule, C, task
        self.alpha = start_point(np.asarray(alpha0, dtype=np.float64), problem.lo,
                                 problem.hi, at_lower, at_upper)
        self.fixed = at_lower | at_upper
        self.movable = problem.lo < problem.hi
        self.margins = self.margin_error = None
        self._reduced_gap = np.inf
        #: the full problem's gap terms and the bound of their sum's error at the
        #: current margins, when already computed (:meth:`_kernel_margins`), and the
        #: last certificate's parts (:meth:`reference`)
        self._measured = self._certified = None

    def _solver(self):
        """Kernel mode: the greedy two-variable solver with its row cache when the
        problem has more than a few hundred samples, else the plain solver over the
        kernel block. The choice depends on the problem, not on what screening left:
        the greedy solver keeps its row cache and Newton factors from one step of a
        path to the next, and a step handed to the other solver leaves them behind.
        Linear mode: working sets whose only
        permanent decisions are full-problem gap balls when screening is on (from a far
        reference, after plain coordinate descent slows down), else the plain
        solver."""
        problem = self.problem
        if not problem.linear:
            return solve_kernel_greedy if prefer_greedy(problem, int(self.movable.sum())) \
                else solve_box_qp
        undecided = int((~self.fixed & self.movable).sum())
        if self.dynamic and prefer_working_sets(undecided):
            return solve_working_set if self.working_set else solve_plain_then_working_set
        return solve_box_qp

    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        t0 = time.perf_counter()
        problem = self.problem
        solver = self._solver()
        extra = {}
        if solver is solve_kernel_greedy and self._reference is not None:
            ref = self._reference
            extra["start_margins"] = problem.margins_from(self.alpha, ref.alpha,
                                                          ref.margins, self.C / ref.C)
        self._reference = None  # valid for the start point only
        self._measured = self._certified = None  # (of the point the solve moves from)
        res = solver(problem, self.alpha, self.fixed, tol=tol, max_iter=max_iter,
                     random_state=self.rng,
                     dynamic_screen=_dynamic_rule() if self.dynamic else None, **extra)
        self.alpha, self.fixed, self._reduced_gap = res.alpha, res.fixed, res.gap
        # linear mode: the solver's margins were computed from scratch at this alpha,
        # their error bound is a priori. Kernel mode computes them compensated (the
        # solver's own updates would carry their round-off into the certificate), with
        # a bound of their error; they serve the certificate and, once certified, the
        # next step's reference.
        if res.margins is not None and problem.linear:
            self.margins, self.margin_error = res.margins, None
        elif problem.linear:
            self.margins, self.margin_error = problem.margins(self.alpha), None
        else:
            self.margins, self.margin_error = self._kernel_margins(tol)
        self.report.add(ScreeningEvent(
            "gap", "dynamic" if self.dynamic else "solve", self.C,
            sum(e[0] for e in res.dynamic), sum(e[1] for e in res.dynamic),
            problem.n_samples, 0.0, time.perf_counter() - t0, self.task))
        return res.n_iter, res.converged

    def _kernel_margins(self, tol: float) -> tuple[np.ndarray, np.ndarray]:
        """The compensated margins at ``alpha`` and their error bound: updated from the
        previous solution's over the samples that moved (on a path, the interior ones
        and those that changed side), unless that bound, grown along the path, could
        weigh in the gap (``INCREMENTAL_GAP_ERROR``); else one product over the whole
        support."""
        problem, alpha, base = self.problem, self.alpha, self._margin_base
        if base is not None:
            update = problem.accurate_margins_from(alpha, base, self.C / base.C)
            if update is not None:
                q, error = update
                dual = abs(problem.dual_objective(alpha, q))
                terms = problem.gap_terms(alpha, q)
                gap_error = problem.gap_error(alpha, q, error, terms)
                if gap_error <= INCREMENTAL_GAP_ERROR * tol * max(dual, TINY):
                    # the certificate reads these very figures of these margins
                    self._measured = (terms, gap_error)
                    return q, error
        return problem.accurate_margins(alpha)

    def certify(self) -> Certificate:
        problem, alpha, margins = self.problem, self.alpha, self.margins
        measured, self._measured = self._measured, None
        terms = problem.gap_terms(alpha, margins) if measured is None else measured[0]
        gap = float(terms.sum())
        screened = self.fixed & self.movable
        # a proof of a wrong decision must survive the round-off of these margins and
        # gaps (the compensated margins' bound, else a priori bounds: O(n))
        margin_error = self.margin_error if self.margin_error is not None \
            else problem.margin_error_bound(alpha)
        # the SVM's C-free bound, where it is the smaller (problems.box_qp.BoxQP.
        # hard_margin_gap): at a large C the per-sample terms multiply by C the
        # rounding of margins that the hard-margin point meets exactly
        hm_gap, hm_error = problem.hard_margin_gap(alpha, margins, margin_error)
        certified_gap = min(gap, hm_gap + hm_error)
        rel_gap = certified_gap / max(abs(problem.dual_objective(alpha, margins)), TINY)
        gap_error = (problem.gap_error(alpha, margins, margin_error, terms)
                     if measured is None else measured[1])
        # (nothing fixed, as on a path that does not screen: no decision to disprove)
        wrong = (proven_violations(margins, problem.p, problem.sqnorm, self._reduced_gap,
                                   screened & (alpha <= problem.lo),
                                   screened & (alpha >= problem.hi), margin_error, gap_error)
                 if screened.any() else screened)
        loose = screened & (terms > 0)
        self.terms, self.gap = terms, gap
        self._certified = (terms, gap_error, hm_gap, hm_error)
        return Certificate(gap, rel_gap, wrong, int(wrong.sum()), loose, int(loose.sum()))

    def reference(self) -> BoxQPReference:
        """The certified point as the next step's reference: kernel mode from the
        certificate's own figures (its compensated margins, their bound, the gap terms,
        the gap's error bound and the hard-margin gap, computed once for both), as
        :meth:`~..problems.box_qp.BoxQP.reference` computes them; linear mode (plain
        margins) by that method, from compensated margins."""
        problem = self.problem
        if self.margin_error is None or self._certified is None:
            return problem.reference(self.C, self.alpha, None if self.margin_error is None
                                     else (self.margins, self.margin_error))
        terms, gap_error, hm_gap, hm_error = self._certified
        return reference_from(self.C, self.alpha, self.margins, self.margin_error, terms,
                              gap_error, hm_gap, hm_error)

    def hard_margin_parts(self, ref: BoxQPReference) -> tuple | None:
        """``(ref, hm_gap, hm_error)``: the hard-margin gap of the reference
        :meth:`reference` returned and the bound of its error, which do not depend on
        ``C`` (:meth:`~..problems.box_qp.BoxQP.hard_margin_gap`); None in linear mode."""
        if self.margin_error is None or self._certified is None:
            return None
        return (ref, *self._certified[2:])

    def release(self, which: np.ndarray, proven: bool) -> None:
        self.fixed &= ~which
        if proven:
            lo_side = which & (self.alpha <= self.problem.lo)
            self.report.add(ScreeningEvent(
                self.rule, "repair", self.C, -int(lo_side.sum()),
                -int((which & ~lo_side).sum()), self.problem.n_samples, task=self.task))

    def no_worse_than_zero(self) -> Certificate | None:
        """An uncertified answer whose primal objective is above that of :math:`w = 0`
        (:math:`\alpha = 0`, inside every box here) is replaced by that point: a fit
        that float64 cannot solve to ``tol`` (badly scaled data, an absurd ``C``) never
        returns a model worse than the trivial one. Returns the new certificate, or
        None if the answer is kept."""
        problem, alpha = self.problem, self.alpha
        primal = self.gap + problem.dual_objective(alpha, self.margins)
        primal_at_zero = float(np.maximum(problem.lo * problem.p, problem.hi * problem.p)
                               .sum())
        if not primal > primal_at_zero:
            return None
        n = alpha.size
        self.alpha = np.zeros(n)
        self.margins, self.margin_error = np.zeros(n), np.zeros(n)
        self.fixed = np.zeros(n, dtype=bool)
        self._reduced_gap = np.inf
        return self.certify()

    def stop_dynamic_screening(self) -> None:
        self.dynamic = False

    @property
    def rules(self) -> str:
        return f"rule {self.rule} and the dynamic gap balls"

    def release_all(self) -> None:
        self.fixed = np.zeros_like(self.fixed)

    def screened_counts(self) -> tuple[int, int]:
        """Samples fixed at each bound at the certified point. With screening, the gap
        ball of the full problem there also proves the bound of most samples already
        at one: they count as screened (nothing moves)."""
        problem, alpha = self.problem, self.alpha
        at_lo, at_hi = alpha <= problem.lo, alpha >= problem.hi
        fixed = self.fixed
        if self.dynamic:
            lo_m, hi_m = gap_ball_screen(self.margins, problem.p, problem.sqnorm, self.gap)
            fixed = fixed | (lo_m & at_lo) | (hi_m & at_hi)
        screened = fixed & self.movable
        return int((screened & at_lo).sum()), int((screened & at_hi).sum())


def reference_from(C: float, alpha: np.ndarray, margins: np.ndarray,
                   margin_error: np.ndarray, terms: np.ndarray, gap_error: float,
                   hm_gap: float, hm_error: float) -> BoxQPReference:
    """The reference :meth:`~..problems.box_qp.BoxQP.reference` makes at ``alpha``
    from these figures of it (its margins and their bound, the gap terms at ``C``, the
    gap's error bound and the hard-margin gap with its bound), without computing them
    again."""
    gap = max(float(terms.sum()), 0.0)
    hard_margin = max(hm_gap, 0.0) + hm_error
    if hard_margin < gap + gap_error:
        # both bound D*_C - D(alpha): the rules and the certificate take the smaller
        gap, gap_error = max(hm_gap, 0.0), hm_error
    return BoxQPReference(C, alpha, margins, gap, margin_error, gap_error, hard_margin)


def _dynamic_rule():
    """The gap-safe dynamic rule the solvers apply (its radius shrunk under a planted
    ``"dynamic_radius"`` fault)."""
    fault = faults.active("dynamic_radius")
    if fault is None:
        return gap_ball_screen

    def shrunk(margins, targets, sqnorm, gap):
        fault.uses += 1
        return gap_ball_screen(margins, targets, sqnorm, fault.share ** 2 * gap)
    return shrunk
