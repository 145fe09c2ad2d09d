"""The steps of :class:`~sklearn_safescreen.SafeLPSVC` with ``solver="homotopy"``: each
one-vs-rest task read off its exact path (the parametric simplex of
:mod:`sklearn_safescreen.solvers.lp_homotopy`), followed from :math:`\\lambda_{\\max}` down
to the value asked for, resumed along a warm-started walk, and certified on the full
problem like a screened step (which finishes any answer that misses ``tol``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..problems.lp_svm import LPSVMData
from ..solvers.lp_homotopy import (
    BELOW,
    E_STATUS,
    FEATURE,
    L_STATUS,
    R_STATUS,
    PathFollower,
    make_core,
)
from .lp_svm import LPSolution, LPSVMPath
from .protocol import StepOutcome, StepSettings
from .report import ScreeningEvent, ScreeningReport

#: The solvers of :meth:`SafeLPSVC.fit <sklearn_safescreen.SafeLPSVC.fit>`.
LP_SOLVERS = ("screened", "homotopy")


@dataclass(kw_only=True)
class LPStepSettings(StepSettings):
    """The settings of a :class:`~sklearn_safescreen.SafeLPSVC` step: the engine's, and
    which solver finds the solution."""

    #: ``"screened"``: the screened column-and-row generation of
    #: :class:`~.engine.lp_svm.LPSVMPath`; ``"homotopy"``: read off the exact path
    solver: str = "screened"


class LPSVMSolverPath(LPSVMPath):
    """One one-vs-rest task of :class:`~sklearn_safescreen.SafeLPSVC`, solved as its
    ``solver`` says: by the screened column-and-row generation
    (:class:`~.engine.lp_svm.LPSVMPath`), or read off the task's exact path, followed
    from :math:`\\lambda_{\\max}` down to the value asked for and no further
    (:class:`ExactPathWalk`).

    Both solvers share the last solution: a homotopy answer is the reference a later
    screened step screens from. Along a warm-started walk the exact path is resumed
    where the previous fit stopped (a smaller value) or read off the breakpoints already
    followed (a larger one), so a walk follows each task's path once. A homotopy answer
    is certified on the full problem like a screened one; one that misses ``tol`` (the
    path's vertex and dual lost accuracy to rounding) is finished by the screened
    solver, started and screened from it.
    """

    def __init__(self, data: LPSVMData, name: str = ""):
        super().__init__(data, name)
        #: the exact path followed so far (None before the first homotopy step)
        self.walk: ExactPathWalk | None = None

    def __getstate__(self):
        state = super().__getstate__()
        state["walk"] = None  # the basis factor is not pickled: a warm fit restarts it
        return state

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """The exact path and the HiGHS model are kept only for a warm start."""
        super().end_fit(keep, walk)
        if not keep:
            self.walk = None

    def fit(self, lam: float, settings: StepSettings, report: ScreeningReport
            ) -> StepOutcome:
        """Solve at ``lam`` with the solver of ``settings`` (an :class:`LPStepSettings`;
        other settings: the screened solver). At and above :math:`\\lambda_{\\max}`
        both give the closed form. A homotopy step's ``n_iter`` counts the breakpoints
        it followed (0 when read off the part of the path already followed); one
        finished by the screened solver counts that solver's LPs."""
        if getattr(settings, "solver", "screened") != "homotopy" or lam >= self.lam_max:
            return super().fit(lam, settings, report)
        start = time.perf_counter()
        data = self.data
        if self.walk is None:
            self.walk = ExactPathWalk(data)
        try:
            w, a, pivots = self.walk.solution_at(lam)
        except RuntimeError as err:
            # a degenerate stretch the anti-cycling rule could not leave within its
            # pivot budget: the screened solver answers exactly all the same, and the
            # walk is dropped (it cannot be resumed past that value)
            self.walk = None
            if settings.verbose:
                print(f"[LPSVMPath {self.name}] lambda={lam:.4g}: {err}; solved by the "
                      "screened solver instead", flush=True)
            return super().fit(lam, settings, report)
        cert = data.certificate(lam, w, data.y * a)
        self.w, self.alpha, self.lam = w, cert.dual_point.alpha, lam
        value = lam if settings.shown_value is None else settings.shown_value
        if settings.verbose > 1:
            print(f"[LPSVMPath {self.name}] lambda={lam:.4g} homotopy: "
                  f"{pivots} breakpoints followed, rel_gap={cert.rel_gap:.2e} "
                  f"support={np.count_nonzero(w)}/{data.n_features}", flush=True)
        if not cert.rel_gap <= settings.tol:
            return super().fit(lam, settings, report)
        report.add(ScreeningEvent("homotopy", "solve", value, 0, 0, data.n_features, 0.0,
                                  time.perf_counter() - start, self.name, "features"))
        report.set_final(0, 0, "features")
        report.set_final(0, 0, "samples")
        return StepOutcome(LPSolution(w, self.alpha), cert.gap, cert.rel_gap, pivots, True)


class ExactPathWalk:
    """One binary problem's exact path (the parametric simplex of
    :mod:`.solvers.lp_homotopy`), followed from :math:`\\lambda_{\\max}` as far down as
    asked and resumable.

    :meth:`solution_at` a value below where the walk stopped resumes the homotopy from
    its current basis (the pivots of a walk stopped at several values are those of one
    run to the last); at a value above, the basis optimal there is rebuilt from the
    breakpoints' events (which variable entered and left) and its vertex and dual solved
    from a fresh factor of its margin matrix, without pivoting. Only the events are
    kept, a few integers a breakpoint.

    Parameters
    ----------
    data : LPSVMData
        The problem (samples of positive weight).

    Attributes
    ----------
    stop : float
        The path is known from :math:`\\lambda_{\\max}` down to this value.
    lams : list of float
        The breakpoints followed, non-increasing.
    n_pivots : int
        Breakpoints followed (pivots made).
    """

    def __init__(self, data: LPSVMData):
        self.data = data
        self.follower = PathFollower(make_core(data, True), data)
        self.stop = np.inf
        self.lams: list[float] = []
        #: per breakpoint: (entering kind, its feature or sample, the feature's sign,
        #: leaving kind, its feature or sample)
        self.events: list[tuple[int, int, int, int, int]] = []

    @property
    def n_pivots(self) -> int:
        return self.follower.n_pivots

    def solution_at(self, lam: float) -> tuple[np.ndarray, np.ndarray, int]:
        """``(w, a, pivots)``: the path's vertex and dual :math:`a\\in[0,s]` at
        ``lam`` (positive), and the breakpoints followed to reach it."""
        if lam < self.stop:
            before = self.follower.n_pivots
            for point in self.follower.run(lam, None, [lam]):
                self.lams.append(point.lam)
                self.events.append((point.enter, point.enter_index, point.sign,
                                    point.leave, point.leave_index))
            self.stop = lam
            support, values, margin_set, margin_dual, status = \
                self.follower.snapshots[lam]
            w, a = self._point(support, values, margin_set, margin_dual, status)
            return w, a, self.follower.n_pivots - before
        # the basis after the last breakpoint at or above lam is optimal at lam (at a
        # breakpoint, the vertex below it, as lp_svm_path_at reads it)
        k = int(np.searchsorted(-np.asarray(self.lams), -lam, side="right")) - 1
        if k == len(self.lams) - 1:  # the core's current basis (w = 0 before any)
            core = self.follower.core
            support, values = core.support()
            w, a = self._point(support, values, core.margin_set(),
                               core.margin_dual(lam), np.asarray(core.status_arr))
            return w, a, 0
        return (*self._rebuilt(k, lam), 0)

    def _point(self, support, values, margin_set, margin_dual, status):
        data = self.data
        w = np.zeros(data.n_features)
        w[support] = values
        a = np.where(status == L_STATUS, data.s, 0.0)
        a[margin_set] = np.clip(margin_dual, 0.0, data.s[margin_set])
        return w, a

    def _rebuilt(self, k: int, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """The vertex and dual at ``lam`` of the basis after breakpoint ``k``: its
        features with their signs :math:`A`, margin set :math:`E` and the status of
        every sample replayed from the events, then :math:`M t=\\mathbf 1` and
        :math:`M^\\top u=\\mathbf 1`, :math:`M^\\top v=\\mathrm{sign}_A\\circ
        Z_{L,A}^\\top s_L` solved with :math:`M=Z_{E,A}\\,\\mathrm{diag}(\\mathrm{sign}_A)`
        (``doc/theory/lp_svm.rst``), :math:`w_A=\\mathrm{sign}_A\\circ t` and
        :math:`a_E=\\lambda nu-v`."""
        data = self.data
        status = np.full(data.n_samples, L_STATUS, dtype=np.int8)
        signs: dict[int, int] = {}
        for enter, enter_index, sign, leave, leave_index in self.events[:k + 1]:
            if leave == FEATURE:
                del signs[leave_index]
            else:
                status[leave_index] = E_STATUS
            if enter == FEATURE:
                signs[enter_index] = sign
            else:
                status[enter_index] = L_STATUS if enter == BELOW else R_STATUS
        A = np.fromiter(signs, dtype=np.intp, count=len(signs))
        sgn = np.array([signs[j] for j in A], dtype=np.float64)
        E = np.flatnonzero(status == E_STATUS)
        a = np.where(status == L_STATUS, data.s, 0.0)
        w = np.zeros(data.n_features)
        if A.size:
            Z = data.Z
            M = (Z[E][:, A].toarray() if sp.issparse(Z) else Z[np.ix_(E, A)]) * sgn
            factor = scipy.linalg.lu_factor(M, check_finite=False)
            w[A] = sgn * scipy.linalg.lu_solve(factor, np.ones(A.size))
            corr = np.asarray(data.Zc[:, A].T @ a).ravel()  # Z_{L,A}^T s_L
            uv = scipy.linalg.lu_solve(factor, np.column_stack([np.ones(A.size),
                                                                sgn * corr]), trans=1)
            a[E] = np.clip(lam * data.n_samples * uv[:, 0] - uv[:, 1], 0.0, data.s[E])
        return w, a
