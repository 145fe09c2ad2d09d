r"""Where a box-QP step's answer or reference comes from besides its own solve.

* :class:`HardMargin`: the hinge loss's C-free duality gap (``doc/theory/svm_lad.rst``,
  *Hard margin*) certifies a solution at every larger ``C`` at once, and proves when the
  solution at ``C`` (or the hard margin, ``C = inf``) is beyond float64;
* :class:`OfferedReferences`: a dual point of another problem on the same samples (the
  solution under other kernel parameters) taken as the reference when its safe ball is
  the smaller (``doc/theory/svm_lad.rst``, "Screening across kernel parameters").

Both are mixins of :class:`~.box_qp.BoxQPPath`: they read its ``data``, ``reference``,
``newton``, ``label`` and ``name``.
"""

from __future__ import annotations

import time

import numpy as np

from ..problems.constants import TINY, UNIT_ROUNDOFF
from ..screening.balls import _reference_radius
from .box_qp_reduced import reference_from
from .protocol import StepOutcome
from .report import ScreeningEvent, ScreeningReport


class HardMargin:
    """The hard-margin shortcut and refusal of a box-QP path (see the module
    docstring)."""

    def _hard_margin_answers(self, C: float, tol: float) -> bool:
        """Whether the reference is certified at ``C`` by the C-free hard-margin gap
        (:meth:`~..problems.box_qp.BoxQP.hard_margin_gap`): it is feasible there and
        that gap is within ``tol`` of its dual objective. That gap bounds its distance
        to the optimum at every ``C`` at which it is feasible, so the path needs no
        further solve (``doc/theory/svm_lad.rst``, *Hard margin*)."""
        ref = self.reference
        if ref is None or not np.isfinite(ref.hard_margin):
            return False
        if np.isfinite(C) and np.any(ref.alpha > C * self.data.weights):
            return False  # only where C is below the reference's: not feasible there
        dual = float(ref.alpha.sum() - 0.5 * ref.alpha @ ref.margins)
        return ref.hard_margin <= tol * abs(dual)

    def _hard_margin_outcome(self, C: float, n_iter: int, report: ScreeningReport,
                             verbose: int) -> StepOutcome:
        """The step's answer when the reference is certified at ``C`` by the hard-margin
        gap: the reference itself, its gaps taken at ``C`` (at ``C = inf``, the hard
        margin, it stays at its own finite ``C``, at which it is feasible and optimal
        to the same gap: a later step of a path screens from there)."""
        ref = self.reference
        if np.isfinite(C):
            problem = self.data.problem(C, newton=self.newton)
            parts = self._hm_parts
            if parts is not None and parts[0] is ref:
                # the same point at another C: only its gap terms change (the
                # hard-margin gap is C-free), as BoxQP.reference would find
                terms = problem.gap_terms(ref.alpha, ref.margins)
                gap_error = problem.gap_error(ref.alpha, ref.margins, ref.margin_error,
                                              terms)
                ref = reference_from(C, ref.alpha, ref.margins, ref.margin_error, terms,
                                     gap_error, *parts[1:])
                self._hm_parts = (ref, *parts[1:])
            else:
                ref = problem.reference(C, ref.alpha, (ref.margins, ref.margin_error))
            self.reference = ref
        else:
            problem = self.data.problem(ref.C, newton=self.newton)
        dual = abs(float(ref.alpha.sum() - 0.5 * ref.alpha @ ref.margins))
        rel_gap = ref.gap / max(dual, TINY)
        n = self.data.n_samples
        held = self.data.weights > 0
        n_lower = int((held & (ref.alpha <= 0.0)).sum())
        report.add(ScreeningEvent("hard_margin", "closed_form", C, n_lower, 0, n,
                                  task=self.name))
        report.set_final(n_lower, 0, closed_form=True)
        if verbose:
            print(f"[{self.label}]{' ' + self.name if self.name else ''} C={C:<10.4g} "
                  f"the hard-margin solution (certified at C={ref.C:.4g} for every "
                  f"larger C), rel_gap={rel_gap:.2e}")
        return StepOutcome(ref, ref.gap, rel_gap, n_iter, True,
                           problem.rounding_floor(ref, resolution=False))

    def _check_resolved(self, C: float, certified: bool) -> None:
        r"""After a step of a fit at ``C``: refuse once the reference proves that the
        solution at ``C`` is beyond float64 (the SVM; ``doc/theory/svm_lad.rst``,
        *Hard margin*). Its dual variables' sum :math:`S^*` sets the rounding of its
        margins, sums of terms up to :math:`S^*\max_iK_{ii}`
        (:func:`~.._validation.check_resolvable`); this refuses where the reference
        proves :math:`u\,S^*\max_iK_{ii}\ge1`. At a finite ``C``,
        :math:`S^* = D^*_C + \tfrac12\|w^*\|^2\ge D^*_C\ge D(\alpha)` for the
        reference :math:`\alpha` (feasible at ``C``). At ``C = inf`` (the hard
        margin), :math:`S^* = 2D^*_\infty` and :math:`D^*_\infty\ge\max_t
        D(t\alpha) = S^2/(2A)` (:math:`S = \sum_i\alpha_i`, :math:`A =
        \alpha^\top Q\alpha`), which grows without bound along the path when the data
        are not separable in feature space. Sharper, at any ``C``: the reference's
        safe gap :math:`G` bounds :math:`\tfrac12\|w-w^*_{C_k}\|^2`, so
        :math:`\|w^*_{C_k}\|\ge\|w\|-\sqrt{2G}` and :math:`S^*_{C_k}\ge D(\alpha) +
        \tfrac12(\|w\|-\sqrt{2G})_+^2`; :math:`S^*` does not decrease as ``C`` grows
        (:math:`D^*_C` and :math:`\|w^*_C\|` do not), so this bounds it at ``C``. A
        reference that could not be certified
        proves nothing about :math:`S^*`: there the figure of its box,
        :math:`C\sum_ic_i\max_iK_{ii}` (the refusal before any solve of
        :func:`~.._validation.check_resolvable` for a loss without this structure), is
        what refuses, as float64 then failed where that worst case said it could."""
        if not self.data.hinge:
            return
        ref = self.reference
        S = float(ref.alpha.sum())
        A = float(ref.alpha @ ref.margins)
        A_hi = A + float(ref.sq_norm_w_error)
        if S <= 0.0 or A_hi <= 0.0:
            return
        # lower bounds; their rounding (relative n u) is far below the margin
        dual = S - 0.5 * A_hi
        A_lo = max(A - float(ref.sq_norm_w_error), 0.0)
        lower = dual + 0.5 * max(np.sqrt(A_lo) - np.sqrt(2.0 * ref.safe_gap), 0.0) ** 2
        if np.isinf(C):
            lower = max(lower, 2.0 * max(dual, S * S / (2.0 * A_hi)))
        lower *= 1.0 - 1e-6
        top = float(np.max(self.data.sqnorm, initial=0.0))
        box = ref.C * float(self.data.weights.sum()) * top
        if not certified and UNIT_ROUNDOFF * box >= 1.0:
            raise ValueError(
                f"{self.label}{self._task_words()} with C={C:.6g}: "
                + ("the data are not separable in feature space, or only with a margin "
                   "float64 cannot resolve" if np.isinf(C) else
                   "float64 cannot resolve this fit")
                + f": its solve at C={ref.C:.3g} could not be certified, "
                f"and there C * sum(sample weights) * max_i K(x_i, x_i) = 10^"
                f"{np.log10(box):.1f} (max K(x_i, x_i) = {top:.3g}, the intercept's "
                f"intercept_scaling**2 included) reaches 1/u = {1.0 / UNIT_ROUNDOFF:.3g}: "
                "the rounding of a margin can exceed the hinge's unit. "
                + ("Use a finite C, or rescale X (e.g. with StandardScaler)."
                   if np.isinf(C) else "Lower C or rescale X (e.g. with StandardScaler)."))
        figure = UNIT_ROUNDOFF * lower * top
        if figure < 1.0:
            return
        what = ("the data are not separable in feature space, or only with a margin "
                "float64 cannot resolve" if np.isinf(C) else
                "float64 cannot resolve this fit")
        advice = "Use a finite C." if np.isinf(C) else \
            "Lower C or rescale X (e.g. with StandardScaler)."
        raise ValueError(
            f"{self.label}{self._task_words()} with C={C:.6g}: {what}: the sum of the dual "
            f"variables at its optimum is at least {lower:.3g} (from a feasible point "
            f"at C={ref.C:.3g}), so sum(alpha) * max_i K(x_i, x_i) = 10^"
            f"{np.log10(lower * top):.1f} (max K(x_i, x_i) = {top:.3g}, the intercept's "
            f"intercept_scaling**2 included) reaches 1/u = {1.0 / UNIT_ROUNDOFF:.3g}: the "
            f"rounding of every margin would exceed the hinge's unit. {advice}")


class OfferedReferences:
    """A reference offered from other kernel parameters (see the module docstring)."""

    def offer_reference(self, C_ref: float, alpha: np.ndarray) -> None:
        r"""Offer the next fit a dual point of another problem on the same samples,
        labels and weights: the solution at ``C_ref`` under other kernel parameters
        (``doc/theory/svm_lad.rst``, "Screening across kernel parameters").

        The dual box does not depend on the kernel and scales with ``C``, so
        ``(C / C_ref) * alpha`` is a feasible point of the next fit's problem; its
        margins and duality gap are computed on this path's own kernel when the fit
        takes the offer (:meth:`_take_offer`), so nothing of the other problem but the
        point itself is used. An offer of another size is ignored."""
        alpha = np.asarray(alpha, dtype=np.float64)
        ok = alpha.shape == (self.data.n_samples,) and np.isfinite(C_ref) and C_ref > 0
        self._offer = (float(C_ref), alpha) if ok else None

    def _take_offer(self, C: float, report: ScreeningReport, *, answered: bool,
                    verbose: int) -> bool:
        r"""Make the offered point the reference at ``C`` if the ball around the
        optimum at ``C`` that it gives (radius :math:`\sqrt{\mathrm{gap}}`, its duality
        gap on this problem) is smaller than the own reference's (``True``), else keep
        the own reference. The offer's margins cost one product with the kernel
        over the offered point's support, reported as a ``kernel-seed`` event (its
        time, and in the note the gaps compared). ``answered``: the own reference is
        already the exact answer (a closed form), or the step does not screen: the
        offer is dropped unused. It is a screening reference; without screening it
        could only change the start point, from the own reference (the solution at
        the previous ``C``, or a cold fit's closed form) to a point whose margins and
        gap cost that product, which the warm start does not repay when every kernel
        row is cached (the paths that do not screen)."""
        offer, self._offer = self._offer, None
        if offer is None or answered:
            return False
        t0 = time.perf_counter()
        C_ref, alpha = offer
        problem = self.data.problem(C, newton=self.newton)
        # feasible: the box is [C lo_1, C hi_1]; the clip only absorbs rounding
        point = np.clip(alpha * (C / C_ref), problem.lo, problem.hi)
        foreign = problem.reference(C, point)
        # the ball each reference gives around the optimum at C (the ball of BT1 and
        # DVI): the own reference's from its C, the offer's from its gap at C
        own = self.reference
        own_radius = np.inf if own is None else _reference_radius(own, C)[1]
        radius = _reference_radius(foreign, C)[1]
        take = radius < own_radius
        if take:
            self.reference = foreign
        n = self.data.n_samples
        note = (f"other kernel parameters' point {'taken' if take else 'left'}: ball "
                f"radius {radius:.3g} against {own_radius:.3g} (gap "
                f"{foreign.safe_gap:.3g}); kernel rows {int(np.count_nonzero(point))}")
        report.add(ScreeningEvent("kernel-seed", "reference", C, 0, 0, n,
                                  time.perf_counter() - t0, task=self.name, note=note))
        if verbose:
            print(f"[{self.label}]{' ' + self.name if self.name else ''} C={C:<10.4g} "
                  f"{note}")
        return take
