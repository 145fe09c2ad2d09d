r"""SafeSVC: the hinge-loss SVM with safe sample screening.

.. math::

    \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\max\{0,\ 1 - y_i w^\top\Phi(x_i)\},

with :math:`c_i` = ``sample_weight`` x ``class_weight`` and the intercept a regularised
extra feature (``doc/theory/svm_lad.rst``). The fit skeleton, kernels and prediction are
:class:`~sklearn_safescreen._box_qp_base.BaseBoxQPEstimator`'s; the tasks' paths are
built by :mod:`~sklearn_safescreen._svc_tasks`, the multiclass model's layout and vote
are :mod:`~sklearn_safescreen._multiclass`'s, and the path step is
:class:`~sklearn_safescreen.engine.box_qp.SVMPath`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from ._box_qp_base import SOLVER_SQUARES, BaseBoxQPEstimator, FitData, primal_weights
from ._multiclass import MulticlassSVCMixin, samples_by_task, support_layout
from ._svc_tasks import class_weighted, eps_path_next, one_vs_one_paths, one_vs_rest_paths
from ._utils.fingerprint import data_fingerprint
from ._utils.limits import MAX_ENTRY
from ._validation import check_magnitude, memoised_validation
from .base import FitInputs, PathState, encode_labels
from .engine.box_qp import SVMPath
from .screening.svm import SVM_RULES


class SafeSVC(MulticlassSVCMixin, ClassifierMixin, BaseBoxQPEstimator):
    r"""Support vector classifier with safe sample screening.

    Solves the hinge-loss SVM

    .. math::

        \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\max\{0,\ 1 - y_i\,w^\top\Phi(x_i)\}

    in its box-constrained dual :math:`\max_\alpha -\tfrac12\alpha^\top Q\alpha +
    \mathbf 1^\top\alpha`, :math:`0 \le \alpha_i \le Cc_i`, by coordinate descent
    (``solvers.dual_cd``). Before and during the solve, safe screening rules (Ogawa et al.
    2013; Wang et al. 2014; ``doc/theory/svm_lad.rst``) prove that some samples sit strictly outside
    the margin (:math:`\alpha_i = 0`) or strictly inside it (:math:`\alpha_i = Cc_i`) at the
    optimum and remove them from the optimisation. The answer is the optimum of the full
    problem: every fit certifies it by the full duality gap and the optimality
    conditions of every screened sample, and repairs (with a warning) if needed.

    **Intercept.** With ``fit_intercept=True`` the bias is a *regularised* extra feature of
    value ``intercept_scaling`` (as in LIBLINEAR and :class:`~sklearn.svm.LinearSVC`): the
    kernel becomes :math:`K + s^2`. This is not SVC's unregularised intercept, to which
    the screening rules do not apply. With the linear kernel the problem is
    exactly ``LinearSVC(loss="hinge", dual=True)``'s.

    **Multiclass.** By default (``multi_class="ovo"``) a problem with more than two
    classes is trained as :class:`~sklearn.svm.SVC` trains it: one binary problem per
    pair of classes, in SVC's order (0, 1), (0, 2), ..., (1, 2), ..., the pair's first
    class positive, each on its own screened path, and prediction by SVC's majority
    vote. This is the default because it is SVC's behaviour, so that a model moved from
    SVC keeps its decision rule and attributes, and for accuracy: a pair's classifier
    separates two classes, where one-vs-rest asks each classifier to separate a class
    from the union of all the others, which one hyperplane in feature space often does
    less well (``doc/user_guide/svm.rst`` compares the two). One-vs-rest
    (``multi_class="ovr"``, one problem per class against the rest) stays available.
    Two classes are one binary problem either way.

    **Paths.** A cold fit with the linear kernel starts from the closed-form solution at
    :math:`C_{\min} = 1/\max_i (Qc)_i` (Ogawa et al. 2013, Lemma 9) and walks a short
    internal path to ``C`` (ratio ``INTERNAL_PATH_RATIO`` per step), each solution
    screening the next.
    With ``warm_start=True`` the previous fit on the same data is the reference for the
    new ``C`` (smaller or larger): this is how to walk a regularisation path by hand.

    **Precision at huge C.** Screening stays safe at any ``C``: the margins and the
    duality gap of every reference are computed compensated, as if in twice the working
    precision, with rigorous bounds of their rounding errors, and every rule widens its
    bounds by them (``doc/theory/safety.rst``). On separable data the solution stops
    changing once ``C`` exceeds every :math:`\alpha^*_i/c_i` (the hard margin): a
    C-free duality gap certifies it at any ``C`` and the fit stops there, and
    ``C=np.inf`` is the hard-margin SVM (``doc/theory/svm_lad.rst``, *Hard margin*);
    non-separable data at ``C=np.inf`` raise a ``ValueError``. Otherwise the fit
    cannot be resolved beyond float64: when the rounding floor of the duality gap
    exceeds ``tol`` relative to the objective, a
    :class:`~sklearn_safescreen.PrecisionWarning` is issued instead of a
    ``ConvergenceWarning`` (*Beyond double precision*). A fit whose solution's
    :math:`\sum_i\alpha^*_i\max_i K(x_i, x_i)` (the intercept's
    ``intercept_scaling**2`` included in :math:`K`) provably reaches
    :math:`1/u \approx 9\times10^{15}` is refused with a ``ValueError`` giving the
    figure: the rounding of a single margin would then exceed the loss's unit.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter (> 0); larger values fit the data more closely.
        ``np.inf``: the hard-margin SVM (separable data only).
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="rbf"
        Kernel, as in :class:`~sklearn.svm.SVC`. Screening needs a positive semi-definite
        kernel; a precomputed or callable kernel is checked (see Notes).
    degree : int, default=3
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly": "scale" is ``1 / (n_features * X.var())``,
        "auto" is ``1 / n_features``.
    coef0 : float, default=0.0
        Independent term of the polynomial kernel (must be >= 0 with screening, which
        keeps the kernel PSD).
    fit_intercept : bool, default=True
        Add a regularised bias feature (see above).
    intercept_scaling : float, default=1.0
        Value of the bias feature.
    screening : {"IT", "BT1", "BT2", "DVI"} or None, default="IT"
        Rule applied from the reference solution: Intersection Test (Ogawa et al. 2013,
        Theorem 8), Ball Test 1 (Theorem 6), Ball Test 2 (Theorem 7), DVI (Wang et al.
        2014). ``None`` disables all screening, including
        the dynamic gap-ball screening during the solve.
    tol : float, default=1e-4
        Target relative duality gap ``(P - D) / D`` of the full problem.
    max_iter : int, default=10000
        Maximum number of coordinate-descent epochs per solve.
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference.
    class_weight : dict or "balanced", default=None
        Multiplies ``C`` per class (box bounds :math:`Cc_i`).
        ``"balanced"`` weighs class ``c`` by ``sum(sample_weight) / (n_classes * W_c)``,
        ``W_c`` the total ``sample_weight`` of its samples (without ``sample_weight``:
        ``n_samples / (n_classes * n_c)``, its count), as scikit-learn's
        ``compute_class_weight`` with ``sample_weight``: a fit with an integer
        ``sample_weight`` equals the fit on the samples repeated that many times.
    verbose : int, default=0
        Print one line per path step (value, screened counts, gap, time).
        A kernel fit also prints its progress every few seconds (kernel entries
        evaluated, against the one pass over the kernel matrix it needs at least). At
        any verbosity, a kernel fit estimated to take at least a minute says so first
        with a :class:`~sklearn_safescreen.LongFitWarning` giving the estimate.
    random_state : int, RandomState or None, default=None
        Seeds the coordinate permutations (the optimum does not depend on it). ``None``
        uses a fixed seed, so that repeated fits on the same data give the same model
        (as LinearSVC's do), down to samples whose decision value is exactly 0; pass a
        RandomState for permutations that differ between fits.
    n_jobs : int, default=None
        Tasks (pairs of classes, or one-vs-rest classes) solved in parallel through
        joblib; also the most OpenMP threads of the compiled loops (kernel rows,
        margins, screening passes), which by default use every core allowed by
        ``OMP_NUM_THREADS`` and threadpoolctl, as scikit-learn's OpenMP estimators do.
        Results do not depend on it.
    cache_size : float, default=200
        Memory (MB) of the kernel row cache, as in SVC; it persists across warm-started
        fits on the same data, so a path evaluates each needed kernel row once. It is
        the memory of all the tasks' caches: one-vs-rest tasks share one cache, and
        one-vs-one pairs, each with the kernel of its own samples, share the memory in
        proportion to their kernels' sizes.
    multi_class : {"ovo", "ovr"}, default="ovo"
        Training scheme with more than two classes: one problem per pair of classes
        (as SVC) or one per class against the rest (see *Multiclass* above).
    decision_function_shape : {"ovo", "ovr"}, default="ovr"
        As in :class:`~sklearn.svm.SVC`: with one-vs-one training, ``"ovo"`` returns the
        pairs' decision values, shape (n_samples, n_classes * (n_classes - 1) / 2),
        ``"ovr"`` their transform to one column per class (the votes plus a
        confidence that breaks ties, SVC's transform). ``"ovo"`` needs
        ``multi_class="ovo"``. Read at predict time.
    break_ties : bool, default=False
        As in :class:`~sklearn.svm.SVC`: with ``decision_function_shape="ovr"`` and more
        than two classes, predict the largest value of the decision function instead
        of the majority vote (whose ties go to the first class in ``classes_``).
        Must be False with ``decision_function_shape="ovo"``. Read at predict time.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_tasks, n_features)
        Primal weights (linear kernel only), one row per task: 1 for two classes,
        n_classes * (n_classes - 1) / 2 pairs (one-vs-one), n_classes (one-vs-rest).
    intercept_ : ndarray of shape (n_tasks,)
        ``intercept_scaling * w_bias`` per task (0 without intercept), for every kernel:
        the bias feature's weight is ``intercept_scaling`` times the task's
        :math:`\sum_i \alpha_i y_i`, so the decision function is the kernel expansion
        plus ``intercept_scaling**2 * sum(alpha_i y_i)``.
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV) or (n_tasks, n_SV)
        :math:`\alpha_i y_i` of the support vectors (all samples with :math:`\alpha_i>0`,
        i.e. on or inside the margin). One-vs-one training with more than two classes:
        libsvm's layout, as SVC's (the coefficient of a support vector of class ``i`` in
        the pair (i, j) is on row ``j - 1`` if ``j > i``, on row ``j`` if ``j < i``);
        otherwise one row per task. For the linear kernel it is not pickled (see Notes).
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors: grouped by class (by index within a class)
        with one-vs-one training and more than two classes, as SVC's; by index
        otherwise. Not pickled for the linear kernel.
    n_support_ : ndarray of shape (n_classes,), dtype int32
        Number of support vectors of each class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors, for the kernel expansion: empty for
        ``kernel="precomputed"``, as in SVC; not stored for the linear kernel, whose model
        is ``coef_`` (they are ``X[support_]``).
    n_iter_ : ndarray of shape (n_tasks,)
        Coordinate-descent epochs per task, summed over the internal path.
    dual_gap_ : ndarray of shape (n_tasks,)
        Duality gap of the full problem at the returned solution.
    screening_report_ : ScreeningReport
        What was screened, when, by which rule and at what cost.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.svm.LinearSVC : the same problem (linear kernel) without screening.
    sklearn.svm.SVC : kernel SVM with an unregularised intercept.

    Notes
    -----
    **Size of a fitted model.** A linear model pickles to ``coef_`` and ``intercept_``
    (a few hundred bytes per class, as LinearSVC): its dual solution, whose size grows
    with the number of samples, stays on the fitted estimator but is not pickled. A
    kernel model pickles its support vectors and dual coefficients, as SVC. The
    warm-start state (the training data, the kernel cache, the last solution) is kept
    only while ``warm_start=True`` and never pickled: a warm start after unpickling
    starts cold from the data it is given.

    A precomputed or callable kernel is checked for positive semi-definiteness (smallest
    eigenvalue of the training kernel, on a random principal submatrix of at most 2000
    samples for larger problems) when screening is on, because screening with an
    indefinite kernel would be unsafe.

    References
    ----------
    K. Ogawa, Y. Suzuki, S. Suzumura, I. Takeuchi. Safe sample screening for support
    vector machines. J. Wang, P. Wonka, J. Ye. Scaling SVM and least absolute deviations
    via exact data reduction. ICML 2014.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import SafeSVC
    >>> X, y = make_classification(random_state=0)
    >>> clf = SafeSVC(kernel="linear", C=0.1).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {
        **BaseBoxQPEstimator._parameter_constraints,
        # np.inf: the hard margin (doc/theory/svm_lad.rst, "Hard margin")
        "C": [Interval(numbers.Real, 0.0, None, closed="right")],
        "screening": [StrOptions(set(SVM_RULES)), None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [None, Interval(numbers.Integral, None, None, closed="neither")],
        "multi_class": [StrOptions({"ovo", "ovr"})],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "break_ties": ["boolean"],
    }
    # the shape of the decision function and the tie rule are read at predict time:
    # they do not change the problem, so a warm start keeps its paths across them
    _solver_params = BaseBoxQPEstimator._solver_params | {"decision_function_shape",
                                                          "break_ties"}
    _has_eps_path = True
    _path_state = (*BaseBoxQPEstimator._path_state, "_label_cache")

    def __init__(self, C=1.0, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 fit_intercept=True, intercept_scaling=1.0, screening="IT", tol=1e-4,
                 max_iter=10000, warm_start=False, class_weight=None, verbose=0,
                 random_state=None, n_jobs=None, cache_size=200, multi_class="ovo",
                 decision_function_shape="ovr", break_ties=False):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.screening = screening
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.cache_size = cache_size
        self.multi_class = multi_class
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties

    # ----------------------------------------------------------------- fitting ---
    def _fit_inputs(self, X, y, sample_weight=None):
        if self.multi_class == "ovr" and self.decision_function_shape == "ovo":
            raise ValueError(
                "decision_function_shape='ovo' needs multi_class='ovo': a one-vs-rest "
                "fit has no decision values per pair of classes")
        return super()._fit_inputs(X, y, sample_weight)

    def _validated_inputs(self, X, y, sample_weight) -> FitData:
        """Validate the training data (memoised along warm starts on the same arrays,
        :func:`~sklearn_safescreen._validation.memoised_validation`), encode the labels
        and weigh the samples (:func:`~sklearn_safescreen._svc_tasks.class_weighted`)."""

        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                                   order="C")
            check_magnitude(Xv, "X", MAX_ENTRY, SOLVER_SQUARES)
            sw = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                      ensure_non_negative=True)
            return Xv, yv, sw

        (X, y, sw), digest = memoised_validation(self, (X, y, sample_weight), validate)
        key = data_fingerprint(y) if self.warm_start and y.dtype.kind in "biuf" else None
        classes, y_ind = encode_labels(self, y, key)
        weights = class_weighted(self.class_weight, classes, y_ind, sw)
        content = (digest,) if digest is not None else (X, y_ind, sw)
        return FitData(X, y_ind, sw, weights, content, classes)

    def _task_paths(self, Xa, kernel, data: FitData) -> list[SVMPath]:
        """One path per one-vs-rest task on the one kernel (one for two classes)."""
        return one_vs_rest_paths(Xa, kernel, data)

    def _make_paths(self, inputs: FitInputs) -> PathState:
        """One-vs-one: one path per pair of classes, on the pair's samples (their
        indices are the state's ``extra``); otherwise the base class's tasks."""
        data = inputs.data
        if not self._trains_pairs(data.classes):
            return super()._make_paths(inputs)
        pairs = one_vs_one_paths(data, self.kernel, gamma=self.gamma,
                                 screening=self.screening, cache_size=self.cache_size)
        largest = pairs.largest()
        self._warn_if_long(pairs.paths[largest].data.kernel,
                           (pairs.rows[largest].size, data.X.shape[1]), len(pairs.paths),
                           pairs=True)
        return PathState(inputs.fingerprint, pairs.paths, extra=pairs.rows)

    def _eps_path_next(self, eps: float, stop: float) -> float | None:
        """Next C of the eps-path from the last fit's tasks
        (:func:`~sklearn_safescreen._svc_tasks.eps_path_next`)."""
        return eps_path_next(self._path.paths, float(self.C), eps, stop)

    def _set_model(self, inputs, state, outcomes):
        data, paths = inputs.data, state.paths
        self.classes_, self._multi_class_fitted = data.classes, self.multi_class
        self._kernel_params_, self._bias = data.kernel_params, data.bias
        self.n_iter_ = np.array([o.n_iter for o in outcomes], dtype=np.int64)
        self.dual_gap_ = np.array([o.reference.gap for o in outcomes])
        # alpha_i y_i of each task's samples, and of every training sample in every task
        task_coef = [o.reference.alpha * p.data.sign
                     for p, o in zip(paths, outcomes, strict=True)]
        coef = samples_by_task(task_coef, state.extra, data.targets.shape[0])
        self.support_, self.n_support_, self.dual_coef_ = support_layout(
            coef, data.targets, data.classes.size, self._trains_pairs(data.classes))
        if self.kernel == "linear":  # (the model is coef_: no copy of X's rows)
            self.coef_, self.intercept_ = primal_weights(paths, task_coef, data.X.shape[1],
                                                         data.bias)
        else:
            self.support_vectors_ = (np.empty((0, 0)) if self.kernel == "precomputed"
                                     else data.X[self.support_])
            # the bias feature's weight is s * sum_i alpha_i y_i, so the decision
            # K @ coef + s^2 * sum(coef) has intercept s^2 * sum(coef), as coef_'s
            # model has s * w_bias
            self.intercept_ = data.bias**2 * coef.sum(axis=1)
