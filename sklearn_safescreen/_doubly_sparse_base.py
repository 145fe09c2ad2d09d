"""The base class of SafeDoublySparseSVC and SafeDoublySparseSVR.

Both fit the elastic-net smoothed model of Shibagaki et al. (2016)
(``doc/theory/doubly_sparse.rst``) with the same parameters (``alpha``, ``l1_ratio``,
``smoothing``, the penalised intercept, screening, solver controls) and the same fit
skeleton: validate (memoised along warm starts), build the design matrix once per data
set, walk each task's :class:`~sklearn_safescreen.engine.doubly_sparse.DoublySparsePath`,
set the model. Subclasses say what their targets are (class labels and one-vs-rest
tasks, or real values); the shared parts of their docstrings are here too.
"""

from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from ._sparse_linear_base import SparseLinearEstimator
from ._utils.fingerprint import data_fingerprint
from ._utils.limits import MAX_ENTRY
from ._validation import check_magnitude, memoised_validation
from .base import FitInputs, PathState
from .engine.doubly_sparse import (
    DoublySparsePath,
    DoublySparseSettings,
    DoublySparseSolution,
)
from .engine.protocol import StepOutcome
from .problems.doubly_sparse import HINGE, DoublySparseData, full_gap
from .screening.doubly_sparse import DOUBLY_SPARSE_RULES

#: Newton steps of the polish (each is exact when the support, the signs and the
#: samples' loss pieces are those of the optimum).
POLISH_STEPS = 3


class _BaseDoublySparse(SparseLinearEstimator):
    """Fit skeleton shared by the classifier and the regressor."""

    _parameter_constraints: dict = {
        "alpha": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "l1_ratio": [Interval(numbers.Real, 0.0, 1.0, closed="both")],
        "smoothing": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "screening": [StrOptions(set(DOUBLY_SPARSE_RULES)), None],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "n_jobs": [None, Interval(numbers.Integral, None, None, closed="neither")],
    }
    _path_param = "alpha"
    #: how the problem is solved, not which problem: the rules, the solver's controls,
    #: output, threads, the coordinate order; and l1_ratio, which with alpha makes the
    #: step's (lambda, beta): each step is handed both, and the last solution is a
    #: feasible reference whatever they are (the gap is recomputed at the step's)
    _solver_params = frozenset({"l1_ratio", "screening", "tol", "max_iter", "warm_start",
                                "verbose", "random_state", "n_jobs"})
    _gap_words = "absolute duality gap"
    _iteration_words = "epochs"
    _loss: str

    # ------------------------------------------------------------- parameters ---
    def _penalty(self) -> tuple[float, float]:
        r""":math:`(\lambda, \beta)` with :math:`\lambda = \alpha\rho` and
        :math:`\lambda\beta = \alpha(1-\rho)`."""
        rho = float(self.l1_ratio)
        if not 0.0 < rho < 1.0:
            raise ValueError(
                f"l1_ratio must be strictly between 0 and 1, got {rho}: the L1 part "
                "(l1_ratio > 0) makes the model sparse in the features, and the L2 part "
                "(l1_ratio < 1) makes the problem strongly convex, which is what bounds "
                "the distance to the optimum and makes screening safe")
        return float(self.alpha) * rho, (1.0 - rho) / rho

    # ----------------------------------------------------------------- fitting ---
    def _fit_inputs(self, X, y, sample_weight=None) -> FitInputs:
        self._penalty()  # a clear error for l1_ratio at 0 or 1
        X, targets, weights, content = self._inputs(X, y, sample_weight)
        # (the parameters of the problem are base.problem_key's)
        return FitInputs((X, targets, weights), data_fingerprint(*content))

    def _step_value(self, state: PathState) -> float:
        return self._penalty()[0]

    def _step_settings(self, state: PathState, value: float) -> DoublySparseSettings:
        return DoublySparseSettings(rule=self.screening, tol=self.tol,
                                    max_iter=self.max_iter, verbose=self.verbose,
                                    describe=self._describe(),
                                    shown_value=float(self.alpha),
                                    beta=self._penalty()[1])

    def _inputs(self, X, y, sample_weight):
        """Validated ``(X, targets, weights, content)``; memoised along warm starts."""

        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                                   dtype=np.float64, y_numeric=self._loss != HINGE)
            check_magnitude(Xv, "X", MAX_ENTRY, "norms and margins square them")
            sw = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                      ensure_non_negative=True)
            return Xv, yv, sw

        (X, y, sw), digest = memoised_validation(self, (X, y, sample_weight), validate)
        # the encoding (np.unique, a sort of the labels) follows from the validated
        # content: along a warm-started path it is done once
        key = digest
        if key is None and self.warm_start and y.dtype.kind in "biuf":
            key = data_fingerprint(y)  # (X not memoised: converted; y alone is cheap)
        cached = self.__dict__.get("_label_cache")
        if key is not None and cached is not None and cached[0] == key:
            encoded = cached[1]
        else:
            encoded = self._encode(y)
            self._label_cache = (key, encoded)
        targets, weights = self._targets(sw, *encoded)
        if not np.any(weights > 0):
            raise ValueError("all sample weights are zero: there is nothing to fit")
        content = (digest,) if digest is not None else (X, y, sw)
        return X, targets, weights, content

    def _make_paths(self, inputs: FitInputs) -> PathState:
        """The design matrix of the samples of positive weight, with its intercept
        column, built once per data set; one path per task on it."""
        X, targets, weights = inputs.data
        keep = weights > 0
        Xk = self._design(X, keep)
        c = weights[keep] / weights[keep].mean()
        paths = []
        for name, y_task in self._tasks(targets[keep]):
            data = DoublySparseData(Xk, y_task, c, self._loss, float(self.smoothing),
                                    float(getattr(self, "epsilon", 0.0)))
            Xk = data.X  # converted once, shared by the tasks
            paths.append(DoublySparsePath(data, name))
        return PathState(inputs.fingerprint, paths, extra=keep)

    def _from_engine_value(self, value: float) -> float:
        """``alpha`` for the engine's L1 weight :math:`\\lambda = \\alpha\\,\\rho`."""
        return float(value) / float(self.l1_ratio)

    def _set_model(self, inputs: FitInputs, state: PathState, outcomes) -> None:
        lam, beta = self._penalty()
        outcomes = [polish(p.data, o, lam, beta)
                    for p, o in zip(state.paths, outcomes, strict=True)]
        self._store_coef(*self._set_solution(state, outcomes, [o.gap for o in outcomes]))

    # subclasses
    def _encode(self, y) -> tuple:
        """The checked targets (and classes), a function of ``y`` only (memoised)."""
        raise NotImplementedError  # pragma: no cover

    def _targets(self, sample_weight, *encoded):
        """``(targets, per-sample weights)`` from the validated ``sample_weight`` and
        :meth:`_encode`'s output (a classifier's class weights depend on both, and it
        checks that two classes at least have samples of positive weight)."""
        raise NotImplementedError  # pragma: no cover

    def _tasks(self, targets):
        raise NotImplementedError  # pragma: no cover

    def _store_coef(self, coef, intercept):
        raise NotImplementedError  # pragma: no cover


def polish(data: DoublySparseData, outcome: StepOutcome, lam: float,
           beta: float) -> StepOutcome:
    r"""The certified solution refined by Newton steps on its smooth piece, kept only
    if its own full duality gap is no larger.

    A duality gap :math:`g` bounds the distance to the optimum only by
    :math:`\sqrt{2g/(\lambda\beta)}`, and the gap cannot be resolved below the
    rounding of the objective (~1e-16): at the default ``alpha`` that leaves
    coefficients uncertain at ~1e-7 relative, so two fits of one problem (weight 2
    against a repeated sample) could differ by 3e-4 at ``tol=1e-6``. On the support of
    :math:`w`, with its signs and every sample's piece of the smoothed loss (flat,
    quadratic, linear) fixed, the optimality condition
    :math:`\lambda(\mathrm{sign}(w_S) + \beta w_S) = X_S^\top\alpha(w)/n` is linear
    (:math:`\alpha` is affine in the margins on each piece, slope :math:`-c_i/\gamma` on
    the quadratic one): a Newton step solves it exactly when the pieces are the
    optimum's, which a converged solve has identified. The step's cost,
    :math:`|Q|\,|S|^2` for :math:`|Q|` samples on the quadratic piece, is spent only
    when it is below that of the solve's epochs.
    """
    if outcome.n_iter == 0 or not outcome.converged:
        return outcome  # a closed form, or an uncertified point: nothing to refine
    X, n, c = data.X, data.n_samples, data.weights
    nnz = X.nnz if sp.issparse(X) else X.size
    w = outcome.reference.w
    t = data.margins(w)
    quad = _quadratic_piece(data, t)
    for _ in range(POLISH_STEPS):
        support = np.flatnonzero(w)
        if support.size == 0 or quad.sum() * support.size ** 2 > outcome.n_iter * nnz:
            break
        XS = X[:, support]
        XS = XS.toarray() if sp.issparse(XS) else np.asarray(XS)
        XQ = XS[quad]
        H = (XQ.T * (c[quad] / data.gamma)) @ XQ / n
        H[np.diag_indices_from(H)] += lam * beta
        grad = lam * (np.sign(w[support]) + beta * w[support]) \
            - XS.T @ data.dual_point(t) / n
        try:
            step = np.linalg.solve(H, -grad)
        except np.linalg.LinAlgError:
            break
        new = w.copy()
        new[support] += step
        if np.any(np.sign(new[support]) != np.sign(w[support])):
            break  # a sign changed: not the optimum's piece
        w, t = new, data.margins(new)
        same_piece = np.array_equal(quad, quad := _quadratic_piece(data, t))
        if same_piece:
            break  # the step solved the piece's linear condition: nothing left
    if w is outcome.reference.w:
        return outcome
    g, _, alpha = full_gap(data, w, lam, beta)
    if not g.gap <= outcome.gap:
        return outcome
    return replace(outcome, reference=DoublySparseSolution(w, alpha), gap=g.gap,
                   rel_gap=g.gap)


def _quadratic_piece(data: DoublySparseData, t: np.ndarray) -> np.ndarray:
    """The samples on the quadratic piece of the smoothed loss at margins ``t``."""
    r = (1.0 - data.y * t) if data.hinge else np.abs(t - data.y) - data.epsilon
    return (r > 0.0) & (r < data.gamma)


_DOC_PARAMS = """
    alpha : float, default=0.01
        Regularisation strength (> 0): :math:`\\lambda = \\alpha\\rho` multiplies the L1
        norm and :math:`\\alpha(1-\\rho)` the halved squared L2 norm, as in
        :class:`~sklearn.linear_model.ElasticNet`.
    l1_ratio : float, default=0.5
        :math:`\\rho`, strictly between 0 and 1 (0.5 is the paper's :math:`\\beta = 1`).
        Both parts are needed: the L1 part makes ``coef_`` sparse, the L2 part makes the
        problem strongly convex, which the primal safe region needs.
    smoothing : float, default=0.5
        Width :math:`\\gamma > 0` of the smoothed hinge (the paper's default); the dual
        safe region grows as :math:`1/\\sqrt\\gamma`.
    fit_intercept : bool, default=True
        Add a constant column of value ``intercept_scaling``, penalised like any feature
        (as in LIBLINEAR), so that every rule holds unchanged.
    intercept_scaling : float, default=1.0
    screening : {"simultaneous", "features", "samples"} or None, default="simultaneous"
        Rules applied from the previous solution of a path and whenever the duality gap
        falls tenfold: features and samples alternated to their fixpoint, one kind
        alone, or none.
    tol : float, default=1e-6
        Target **absolute** duality gap of the full problem (whose objective is an
        average loss: at ``coef_ = 0`` the classifier's is ``1 - smoothing/2`` for
        ``smoothing <= 1``, ``1/(2 smoothing)`` above).
        The paper's 1e-9 is reachable. A gap bounds the distance to the optimum only
        by :math:`\\sqrt{2\\,\\mathrm{gap}/(\\alpha(1-\\rho))}`, so the solution is then
        refined by Newton steps on its smooth piece (support, signs and each sample's
        piece of the loss fixed), kept only when its own certified gap is no larger:
        once the solve has identified that piece, ``coef_`` is the optimum to rounding.
    max_iter : int, default=10000
        Maximum coordinate-descent epochs per solve.
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference (how to walk a path by hand; see
        :func:`~sklearn_safescreen.path.doubly_sparse_path`).
    verbose : int, default=0
        Print one line per fit (screened counts, gap, epochs, time).
    random_state : int, RandomState or None, default=None
        Seeds the order in which coordinates are visited (the optimum does not depend
        on it); ``None`` uses a fixed seed, so repeated fits are identical.
    n_jobs : int, default=None
        One-vs-rest tasks solved in parallel threads.
"""

_DOC_ATTRS = """
    dual_coef_ : ndarray of shape (n_tasks, n_samples)
        The dual solution :math:`\\alpha_i = -c_i h'(z_i)\\,\\partial z_i/\\partial t`
        per task (0 for samples of zero weight).
        Available after fit, not pickled: its size grows with the number of
        samples, and the model is ``coef_`` and ``intercept_`` (as LinearSVC's).
    n_iter_ : ndarray of shape (n_tasks,)
        Coordinate-descent epochs per task.
    dual_gap_ : ndarray of shape (n_tasks,)
        Certified duality gap of the full problem at the returned solution.
    alpha_max_ : float
        The smallest ``alpha`` at which ``coef_`` is zero:
        :math:`\\|X^\\top\\alpha(0)\\|_\\infty / (n\\rho)` (largest over tasks).
    screening_report_ : ScreeningReport
        Features (intercept column included) and samples fixed, per event.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
"""
