r"""SafeLPSVC: the L1-penalised hinge SVM (LP-SVM, the 1-norm SVM) with simultaneous safe
screening of features and samples.

.. math::

    \min_w\ \alpha\|w\|_1 + \frac1n\sum_{i=1}^n c_i\,[1 - y_i w^\top x_i]_+,

a linear program (Shibagaki et al. 2016, section 5; ``doc/theory/lp_svm.rst``). The
problem, rules, solver and path step are :mod:`.problems.lp_svm`,
:mod:`.screening.lp_svm`, :mod:`.solvers.lp_highs` and :mod:`.engine.lp_svm`; the fit
skeleton is :class:`~sklearn_safescreen.base.SafeEstimator`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from ._sparse_linear_base import SparseLinearEstimator
from ._utils.fingerprint import data_fingerprint
from ._utils.limits import MAX_ENTRY
from ._utils.warnings import warn_user
from ._validation import (
    check_magnitude,
    check_weighted_classes,
    class_weights,
    memoised_validation,
)
from .base import (
    FitInputs,
    OneVsRestClassifierMixin,
    PathState,
    encode_labels,
    limit_blas_threads,
    one_vs_rest,
)
from .engine.lp_svm_exact import LP_SOLVERS, LPStepSettings, LPSVMSolverPath
from .engine.protocol import StepSettings
from .problems.lp_svm import LPSVMData
from .screening.lp_svm import LP_SVM_RULES


class SafeLPSVC(OneVsRestClassifierMixin, ClassifierMixin, SparseLinearEstimator):
    r"""The 1-norm SVM (L1 penalty, hinge loss) with simultaneous safe screening of
    features and samples.

    Solves the linear program

    .. math::

        \min_w\ \alpha\|w\|_1 + \frac1n\sum_{i=1}^n c_i\max\{0,\ 1 - y_i w^\top x_i\},

    with :math:`c_i` = ``sample_weight`` x ``class_weight`` (rescaled to average 1 over
    the samples of positive weight) and the intercept a penalised constant column. The
    solution is exactly sparse in the features (:math:`w_j = 0`) and in the samples
    (the dual :math:`a_i = y_i\alpha_i` is 0 for margins above 1 and :math:`c_i` below 1).
    Safe rules (Shibagaki et al. 2016, Theorems 6 and 7 as corrected in
    ``doc/theory/lp_svm.rst``) prove both kinds of zeros from any primal point and any
    dual-feasible point, over polytopes that contain every optimum, each kind tightening
    the other's rule; HiGHS solves what is left in a column-and-row generation loop.
    Every fit certifies its answer on the full problem.
    Multiclass problems are solved one-vs-rest.

    scikit-learn has no solver for this problem (``LinearSVC(penalty="l1",
    loss="hinge")`` is refused); :class:`~sklearn.svm.LinearSVC` with
    ``penalty="l1"`` fits the squared hinge.

    Parameters
    ----------
    alpha : float, default=0.01
        The L1 weight :math:`\alpha > 0`. From ``alpha_max_`` on, ``coef_`` is 0.
    fit_intercept : bool, default=True
        Add a constant column of value ``intercept_scaling``, penalised like any feature
        (as in LIBLINEAR), so that every rule holds unchanged.
    intercept_scaling : float, default=1.0
    screening : {"simultaneous", "features", "samples"} or None, default="simultaneous"
        Rules applied from the previous solution of a path: features and samples
        alternated to their fixpoint, one kind alone, or none (``solver="homotopy"``
        screens nothing; only its fall-back, below, uses them).
    solver : {"screened", "homotopy"}, default="screened"
        How :meth:`fit` finds the solution at ``alpha``. ``"screened"``: the safe rules,
        then HiGHS on what is left, by column and row generation. ``"homotopy"``: the
        exact path of each one-vs-rest task (:func:`~sklearn_safescreen.lp_svm_path`),
        followed from ``alpha_max_`` down to ``alpha``. The costs of the linear program
        are linear in :math:`\alpha`, so one simplex basis is optimal on each interval
        between two breakpoints; the parametric simplex pivots from breakpoint to
        breakpoint, and the model at ``alpha`` is the vertex of the basis optimal there,
        with its dual (on the margin samples :math:`a_E = \alpha n\,u - v`, linear in
        :math:`\alpha`). The answer is certified on the full problem like a screened
        one; should its certified gap miss ``tol`` (rounding along the path), the
        screened solver finishes from it. With ``warm_start=True`` on the same problem,
        a smaller ``alpha`` resumes the path where the previous fit stopped, and a
        larger one is read off the breakpoints already followed (the basis optimal
        there rebuilt from them and factorised, no pivot): a walk over a grid
        (:class:`~sklearn_safescreen.RegularizationPathCV`,
        :func:`~sklearn_safescreen.path.estimator_path`) follows each task's path once,
        however many values it has. The path's breakpoints grow in number as ``alpha``
        decreases: far below ``alpha_max_`` one screened solve may cost less than
        following the path down to it.
    tol : float, default=1e-8
        Target **relative** duality gap of the full problem,
        :math:`(P_\alpha(w) - D(a)) / P_\alpha(w)`, with both objectives bounded for
        rounding. HiGHS's own feasibility tolerances start at 1e-9 and are tightened
        (to 1e-10) while the gap misses ``tol``; far below ``alpha_max_`` on dense data
        HiGHS certifies about 2e-9 at best, so a smaller ``tol`` may not be reached.
    max_iter : int, default=200
        Maximum rounds of column and row generation (each solves one linear program)
        per fit (``solver="homotopy"``: of its fall-back; the path has no limit).
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference (how to walk a path by hand; see
        :func:`~sklearn_safescreen.path.estimator_path`).
    class_weight : dict or "balanced", default=None
        Multiplies the loss of each class's samples (then rescaled with
        ``sample_weight``); the rules are those of the weighted problem.
        ``"balanced"`` weighs class ``c`` by ``sum(sample_weight) / (n_classes * W_c)``,
        ``W_c`` the total ``sample_weight`` of its samples (without ``sample_weight``:
        ``n_samples / (n_classes * n_c)``, its count), as scikit-learn's
        ``compute_class_weight`` with ``sample_weight``: a fit with an integer
        ``sample_weight`` equals the fit on the samples repeated that many times.
    verbose : int, default=0
        Print one line per fit (screened counts, gap, rounds, time).
    n_jobs : int, default=None
        One-vs-rest tasks solved in parallel threads.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Exactly sparse.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling`` times the intercept column's weight (0 without intercept).
    dual_coef_ : ndarray of shape (n_tasks, n_samples)
        The dual solution :math:`\alpha_i = y_i a_i` per task, feasible by construction
        (0 for samples of zero weight). Available after fit, not pickled.
    n_iter_ : ndarray of shape (n_tasks,)
        Linear programs solved per task (``solver="homotopy"``: the breakpoints the fit
        followed, 0 when ``alpha`` was read off the path a warm fit had followed; the
        linear programs of the fall-back if it ran).
    dual_gap_ : ndarray of shape (n_tasks,)
        Certified relative duality gap of the full problem per task.
    alpha_max_ : float
        The smallest ``alpha`` at which ``coef_`` is 0:
        :math:`\|Z^\top c\|_\infty / n` (largest over tasks).
    screening_report_ : ScreeningReport
        Features (intercept column included) and samples fixed, per event.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    SafeDoublySparseSVC : the elastic-net smoothed hinge, strongly convex.
    sklearn.svm.LinearSVC : L2 or L1 penalty with the squared hinge.

    References
    ----------
    A. Shibagaki, M. Karasuyama, K. Hatano, I. Takeuchi. Simultaneous safe screening of
    features and samples in doubly sparse modeling. ICML 2016.
    J. Zhu, S. Rosset, T. Hastie, R. Tibshirani. 1-norm support vector machines.
    NIPS 2003.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import SafeLPSVC
    >>> X, y = make_classification(n_features=50, n_informative=5, random_state=0)
    >>> clf = SafeLPSVC(alpha=0.05).fit(X, y)
    >>> bool((clf.coef_ != 0).sum() < 50), clf.score(X, y) > 0.8
    (True, True)
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "screening": [StrOptions(set(LP_SVM_RULES)), None],
        "solver": [StrOptions(set(LP_SOLVERS))],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "verbose": ["verbose"],
        "n_jobs": [None, Interval(numbers.Integral, None, None, closed="neither")],
    }
    _path_param = "alpha"
    #: how the problem is solved, not which problem: the rules, the solver's controls,
    #: output and threads
    _solver_params = frozenset({"screening", "solver", "tol", "max_iter", "warm_start",
                                "verbose", "n_jobs"})
    _iteration_words = "rounds of column and row generation"
    _summary_words = property(lambda self: (
        "relative gap", "breakpoints" if self.solver == "homotopy" else "LPs"))
    #: (the column-and-row generation's HiGHS model holds a fourth copy of a sparse X)
    _design_copies = (4, 3)

    def __init__(self, alpha=0.01, *, fit_intercept=True, intercept_scaling=1.0,
                 screening="simultaneous", solver="screened", tol=1e-8, max_iter=200,
                 warm_start=False, class_weight=None, verbose=0, n_jobs=None):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.screening = screening
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.verbose = verbose
        self.n_jobs = n_jobs

    # ------------------------------------------------ the exact path (lp_svm_path) ---
    @limit_blas_threads
    def fit_path(self, X, y, sample_weight=None, *, eps=1e-3, max_breakpoints=None):
        """Fit along the exact path: every breakpoint of each one-vs-rest task from
        ``alpha_max_`` down to ``min(alpha, eps * alpha_max_)``
        (:func:`~sklearn_safescreen.lp_svm_path`), and the model at ``alpha`` read off it.

        Sets ``alphas_``, ``coef_path_`` (sparse, one column per breakpoint),
        ``intercept_path_`` and ``path_events_`` (as :func:`lp_svm_path` returns them;
        lists over the tasks for more than two classes), and ``coef_``, ``intercept_``,
        ``dual_coef_``, ``dual_gap_`` (the full problem's certified relative gap at
        ``alpha``), ``alpha_max_``, ``n_iter_`` (breakpoints per task). ``screening``,
        ``tol``, ``max_iter`` and ``warm_start`` are not used; :meth:`fit` does not
        change the path's attributes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
        eps : float, default=1e-3
            The paths stop at ``eps * alpha_max`` (or at ``alpha`` if lower).
        max_breakpoints : int, default=None
            Stop each path after this many breakpoints (an error if that is above
            ``alpha``).

        Returns
        -------
        self : object
        """
        from .lp_svm_exact_path import fit_along_path

        return fit_along_path(self, X, y, sample_weight, eps=eps,
                              max_breakpoints=max_breakpoints)

    # ------------------------------------------------------ the skeleton's hooks ---
    def _fit_inputs(self, X, y, sample_weight=None) -> FitInputs:
        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                                   dtype=np.float64)
            check_magnitude(Xv, "X", MAX_ENTRY, "margins and correlations sum products")
            sw = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                      ensure_non_negative=True)
            return Xv, yv, sw

        (X, y, sw), digest = memoised_validation(self, (X, y, sample_weight), validate)
        key = digest or (data_fingerprint(y) if self.warm_start
                         and y.dtype.kind in "biuf" else None)
        classes, y_ind = encode_labels(self, y, key)
        cw = class_weights(self.class_weight, classes, y_ind, sw)
        weights = sw * (cw[y_ind] if cw is not None else 1.0)
        check_weighted_classes(weights, y_ind, classes)
        content = (digest,) if digest is not None else (X, y_ind, sw)
        # (the parameters of the problem are base.problem_key's)
        return FitInputs((X, classes, y_ind, weights), data_fingerprint(*content))

    def _make_paths(self, inputs: FitInputs) -> PathState:
        """The samples of positive weight with the intercept column, once per data set
        (the memory needed checked first); one path per one-vs-rest task."""
        X, classes, y_ind, weights = inputs.data
        keep = weights > 0
        Xk = self._design(X, keep)
        c = weights[keep] / weights[keep].mean()
        paths = [LPSVMSolverPath(LPSVMData(Xk, labels, c), name)
                 for name, labels in one_vs_rest(classes, y_ind[keep])]
        return PathState(inputs.fingerprint, paths, extra=keep)

    def _step_value(self, state: PathState) -> float:
        return float(self.alpha)

    def _step_settings(self, state: PathState, value: float) -> StepSettings:
        return LPStepSettings(rule=self.screening, tol=self.tol, max_iter=self.max_iter,
                              verbose=self.verbose, describe=self._describe(),
                              solver=self.solver)

    def _set_model(self, inputs: FitInputs, state: PathState, outcomes) -> None:
        self.classes_ = inputs.data[1]
        self.coef_, self.intercept_ = self._set_solution(
            state, outcomes, [o.rel_gap for o in outcomes])

    def _warn_if_not_converged(self, outcomes) -> None:
        """A ConvergenceWarning when a task's certified gap missed ``tol``, with the
        advice that applies: more rounds when they ran out, else (HiGHS at its tightest
        tolerances) a larger ``tol`` or scaled features."""
        worst = max(outcomes, key=lambda o: o.rel_gap)
        if worst.converged:
            return
        if worst.n_iter >= self.max_iter:
            super()._warn_if_not_converged(outcomes)
            return
        warn_user(f"{self._describe()}: HiGHS, at its tightest tolerances, certified a "
                  f"relative duality gap of {worst.rel_gap:.3g} > tol={self.tol:g} (the "
                  "objective is within that of the optimum). Raise tol, or scale the "
                  "features (e.g. StandardScaler): badly scaled columns limit HiGHS's "
                  "accuracy.", ConvergenceWarning)


__all__ = ["SafeLPSVC"]
