"""The reduced doubly sparse problem of one path step, as the certificate drives it:
the screened features held at 0 and samples at their bound, the others solved by
coordinate descent with dynamic screening (:func:`~.certify.certified_solve`)."""

from __future__ import annotations

import time

import numpy as np

from .._utils import faults
from ..problems.doubly_sparse import (
    DoublySparseData,
    ReducedProblem,
    best_dual_scaling,
    dual_point,
    full_gap,
    primal_point,
    product_error,
)
from ..screening.doubly_sparse import (
    contradicted_features,
    contradicted_samples,
    radii,
    screen_doubly_sparse,
)
from ..solvers.doubly_sparse_cd import coordinate_descent
from .certify import Certificate
from .report import ScreeningEvent, ScreeningReport

#: A new screening event when the reduced gap has fallen by this factor since the last
#: one (the paper's dynamic schedule).
RESCREEN_FACTOR = 0.1
#: An event's decisions are applied when they remove at least this fraction of the
#: reduced problem's entries: a rebuild copies every remaining entry, which a few
#: removed ones do not repay.
MIN_SHRINK = 0.02
#: Rules stop being evaluated for a kind once this fraction of its variables is decided
#: (screened or kept).
DECIDED_FRACTION = 0.99


class ReducedDoublySparse:
    """The certify loop's view of one step: the reduced problem, the decisions on the
    full problem's variables, the start point, and the report."""

    def __init__(self, data: DoublySparseData, lam: float, beta: float, rule: str | None,
                 w: np.ndarray, report: ScreeningReport, priority: np.ndarray,
                 name: str, value: float):
        self.data, self.lam, self.beta, self.rule = data, lam, beta, rule
        self.value = value  # the step's name in the report
        self.report, self.priority, self.name = report, priority, name
        n, d = data.n_samples, data.n_features
        self.features = np.zeros(d, dtype=bool)  # proven w_j = 0
        self.at_zero = np.zeros(n, dtype=bool)  # proven alpha_i = 0
        self.at_box = np.zeros(n, dtype=bool)  # proven at the end of the box
        self.box_value = np.zeros(n)
        self.kept_features = np.zeros(d, dtype=bool)
        self.kept_samples = np.zeros(n, dtype=bool)
        self.w = np.array(w, dtype=np.float64)
        self._rebuild()
        self.last_event_gap = np.inf
        self.dynamic = True  # fix variables at gap decreases (off after a repair)
        self.started = False
        self.moment = "reference"

    # -- the reduced problem from the decisions
    def _rebuild(self) -> None:
        rows = np.flatnonzero(~(self.at_zero | self.at_box))
        cols = np.flatnonzero(~self.features)
        self.red = ReducedProblem.build(self.data, rows, cols, self.at_box, self.box_value)
        self.u = self.w[cols].copy()
        self.history = []

    def _order(self) -> np.ndarray:
        """The solver's visiting order of the reduced columns: the task's random
        permutation of the features, restricted to the reduced ones (fixed per reduced
        problem)."""
        if getattr(self, "_order_of", None) is not self.red:
            local = np.full(self.data.n_features, -1, dtype=np.int64)
            local[self.red.cols] = np.arange(self.red.n_cols)
            order = local[self.priority]
            self._order_cache = order[order >= 0]
            self._order_of = self.red
        return self._order_cache

    def _decided_enough(self) -> tuple[bool, bool]:
        d, n = self.data.n_features, self.data.n_samples
        f = (self.features | self.kept_features).sum() >= DECIDED_FRACTION * d
        s = (self.at_zero | self.at_box | self.kept_samples).sum() >= DECIDED_FRACTION * n
        return bool(f), bool(s)

    def _worth_shrinking(self, event) -> bool:
        """Whether an event removes at least ``MIN_SHRINK`` of the reduced problem's
        entries (its rows and columns count by their size)."""
        red = self.red
        if red.sparse:
            removed = red.row_nnz[event.at_zero | event.at_box].sum() + np.diff(
                red.X.indptr)[event.features].sum()
        else:
            removed = (event.n_samples * red.n_cols + event.n_features * red.n_rows)
        return removed >= MIN_SHRINK * max(red.nnz, 1)

    def _screen(self, t, gap) -> None:
        """One screening event at the current reduced pair; shrinks the problem."""
        done_f, done_s = self._decided_enough()
        mode = self.rule
        if mode == "simultaneous":
            mode = "samples" if done_f else "features" if done_s else mode
        elif (mode == "features" and done_f) or (mode == "samples" and done_s):
            return
        if done_f and done_s:
            return
        start = time.perf_counter()
        red = self.red
        event = screen_doubly_sparse(red, self.u, t, gap, self.lam, self.beta, mode,
                                     self.kept_features[red.cols],
                                     self.kept_samples[red.rows])
        self.kept_features[red.cols] = event.kept_features
        self.kept_samples[red.rows] = event.kept_samples
        planted = self.moment == "reference" and _plant_decisions(event)
        if not (planted or self._worth_shrinking(event)):
            # a rebuild costs about a pass over the reduced data: decisions that remove
            # little are left to the next event (at a smaller gap, which proves them
            # again), so they are not counted either
            event.features[:] = False
            event.at_zero[:] = False
            event.at_box[:] = False
        if event.n_features or event.n_samples:
            self.features[red.cols[event.features]] = True
            self.at_zero[red.rows[event.at_zero]] = True
            box_rows = red.rows[event.at_box]
            self.at_box[box_rows] = True
            self.box_value[box_rows] = event.box_value[event.at_box]
            self.w[red.cols] = self.u
            self.w[red.cols[event.features]] = 0.0
            self.red = red.shrink(~(event.at_zero | event.at_box), ~event.features,
                                  event.at_box, event.box_value)
            self.u = self.u[~event.features]
            self.history = [h[~event.features] for h in self.history]
        rule_time = time.perf_counter() - start
        value = self.value
        self.report.add(ScreeningEvent(self.rule, self.moment, value, event.n_features, 0,
                                       self.data.n_features, rule_time, 0.0, self.name,
                                       "features"))
        self.report.add(ScreeningEvent(self.rule, self.moment, value,
                                       int(event.at_zero.sum()), int(event.at_box.sum()),
                                       self.data.n_samples, 0.0, 0.0, self.name,
                                       "samples"))
        self.moment = "dynamic"

    def _reference(self) -> None:
        """The start, from the previous solution :math:`w`: the dual point
        :math:`\\theta\\alpha(w)` with the best :math:`\\theta \\in [0, 1]`, and the better
        (smaller gap) of the primal points :math:`w` and :math:`w(\\theta\\alpha(w))`
        (the dual point's primal point at the new :math:`\\lambda`). The solve starts
        from that primal point, and the first screening event (``"reference"``) uses
        the pair."""
        red, lam, beta, data = self.red, self.lam, self.beta, self.data
        n = data.n_samples
        t = red.margins(self.u)
        alpha = dual_point(t, red.y, red.weights, data.loss, data.gamma, data.epsilon)
        s = red.correlations(alpha)
        theta = best_dual_scaling(alpha, s, red.y, red.weights, lam, beta, data.gamma,
                                  data.epsilon, n) if red.n_rows == n else 1.0
        alpha, s = theta * alpha, theta * s
        gap = red.gap(self.u, t, lam, beta, alpha=alpha, s=s)
        u2 = primal_point(s, lam, beta, n)
        t2 = red.margins(u2)
        gap2 = red.gap(u2, t2, lam, beta, alpha=alpha, s=s)
        if gap2.gap < gap.gap:
            self.u, t, gap = u2, t2, gap2
        self.started = True
        if self.rule is not None and gap.gap > 0:
            self.last_event_gap = gap.gap
            self._screen(t, gap)

    # -- the certify loop's interface
    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        epochs = 0
        while True:
            target = tol
            screening = (self.rule is not None and self.dynamic
                         and not all(self._decided_enough()))
            if screening and np.isfinite(self.last_event_gap):
                target = max(tol, RESCREEN_FACTOR * self.last_event_gap)
            start = time.perf_counter()
            if not self.started:
                self._reference()
                continue
            res = coordinate_descent(self.red, self.u, self.lam, self.beta, target,
                                     max_iter - epochs, self._order(),
                                     history=self.history)
            self.u, self.history = res.u, res.history
            self.w[self.red.cols] = self.u
            epochs += res.epochs
            self.report.add(ScreeningEvent(
                self.rule or "none", "solve", self.value, 0, 0, self.data.n_features, 0.0,
                time.perf_counter() - start, self.name, "features"))
            if res.gap.gap <= tol:
                return epochs, True
            if epochs >= max_iter:
                return epochs, False
            if screening:
                t = self.red.margins(self.u)  # fresh: the balls need the margins of u
                gap = self.red.gap(self.u, t, self.lam, self.beta)
                self.last_event_gap = gap.gap
                self._screen(t, gap)

    def certify(self) -> Certificate:
        data = self.data
        w = np.zeros(data.n_features)
        w[self.red.cols] = self.u
        self.w = w
        g, t, alpha = full_gap(data, w, self.lam, self.beta)
        self.t_full, self.alpha_full, self.gap_full = t, alpha, g
        r_D, r_P = radii(g, self.lam, self.beta, data.gamma, data.n_samples)
        n = data.n_samples
        col_norm = np.sqrt(data.col_sq_c)
        row_norm = np.sqrt(data.row_sq)
        wrong_f = self.features & contradicted_features(g.s, col_norm, r_D, g.s_error,
                                                        self.lam, n)
        fixed = self.at_zero | self.at_box
        wrong_s = fixed & contradicted_samples(t, row_norm, r_P, g.t_error, data.y,
                                               data.weights, self.at_zero, self.box_value,
                                               data.hinge, data.gamma, data.epsilon)
        loose_f = self.features & (np.abs(g.s) > self.lam * n)
        target = np.where(self.at_zero, 0.0, self.box_value)
        loose_s = fixed & (alpha != target)
        if not (wrong_f.any() or wrong_s.any()) and (loose_f.any() or loose_s.any()):
            # the full gap's balls may be too wide to prove anything (the reduced
            # solution can be far from the full optimum): the reduced problem's own
            # balls, tight once it is solved, prove the same kind of contradiction
            more_f, more_s = self._reduced_ball_contradictions(t, g.t_error)
            wrong_f |= self.features & more_f
            wrong_s |= fixed & more_s
        return Certificate(g.gap, g.gap, (wrong_f, wrong_s),
                           int(wrong_f.sum() + wrong_s.sum()), (loose_f, loose_s),
                           int(loose_f.sum() + loose_s.sum()))

    def _reduced_ball_contradictions(self, t: np.ndarray, t_error
                                     ) -> tuple[np.ndarray, np.ndarray]:
        r"""Features and samples whose fixed value the **reduced** problem's gap balls
        prove wrong at its optimum.

        If every decision were right, the reduced optimum would be the full one, and
        each fixed variable would satisfy its optimality condition there. The reduced
        optimum lies in the balls of the reduced gap at :math:`u` (the primal one around
        :math:`u`, the dual one around :math:`\alpha(u)` on the undecided samples, the
        fixed samples at their values): a fixed variable whose condition fails over the
        whole ball proves that some decision was wrong, and is released."""
        data, red = self.data, self.red
        n = data.n_samples
        t_red = red.margins(self.u)
        g_red = red.gap(self.u, t_red, self.lam, self.beta)
        r_D, r_P = radii(g_red, self.lam, self.beta, data.gamma, n)
        alpha = np.where(self.at_box, self.box_value, 0.0)
        alpha[red.rows] = dual_point(t_red, red.y, red.weights, data.loss, data.gamma,
                                     data.epsilon)
        s = np.asarray(data.X.T @ alpha, dtype=np.float64).ravel()
        a_norm_c = float(np.sqrt((alpha * alpha / data.weights).sum()))
        s_error = product_error(data.max_nnz, np.sqrt(data.col_sq_c), a_norm_c)
        features = contradicted_features(s, np.sqrt(data.col_sq_c), r_D, s_error,
                                         self.lam, n)
        samples = contradicted_samples(t, np.sqrt(data.row_sq), r_P, t_error, data.y,
                                       data.weights, self.at_zero, self.box_value,
                                       data.hinge, data.gamma, data.epsilon)
        return features, samples

    def stop_dynamic_screening(self) -> None:
        self.dynamic = False

    @property
    def rules(self) -> str:
        return f"the doubly sparse gap-ball rules ({self.rule})"

    def release_all(self) -> None:
        self.release((self.features.copy(), self.at_zero | self.at_box), proven=False)

    def release(self, which, proven: bool) -> None:
        feats, samples = which
        self.features &= ~feats
        self.at_zero &= ~samples
        self.at_box &= ~samples
        self.box_value[samples] = 0.0
        self.kept_features[:] = False
        self.kept_samples[:] = False
        self._rebuild()
        if proven:
            self.report.add(ScreeningEvent(self.rule or "none", "repair", self.value,
                                           -int(feats.sum()), 0, self.data.n_features,
                                           task=self.name, kind="features"))
            self.report.add(ScreeningEvent(self.rule or "none", "repair", self.value,
                                           -int(samples.sum()), 0, self.data.n_samples,
                                           task=self.name, kind="samples"))


def _plant_decisions(event) -> bool:
    """Under a planted ``"force"`` fault (the certificate's tests,
    :mod:`.._utils.faults`), wrong decisions added to a reference event: features fixed
    at 0 and samples fixed at 0, among those the rules left undecided."""
    fault = faults.active("force")
    if fault is None:
        return False
    event.features |= fault.pick(~event.features & ~event.kept_features)
    event.at_zero |= fault.pick(~event.at_zero & ~event.at_box & ~event.kept_samples)
    return True  # (the planted decisions must reach the solver: always rebuild)
