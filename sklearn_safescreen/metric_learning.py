r"""SafeMetricLearner: triplet metric learning with safe triplet screening.

.. math::

    \min_{M\succeq O}\ \sum_{t\in\mathcal T}\ell(\langle M,H_t\rangle)
    +\frac\lambda2\|M\|_F^2,\qquad H_{ijl}=(x_i-x_l)(x_i-x_l)^\top-(x_i-x_j)(x_i-x_j)^\top,

with the smoothed hinge (or hinge) :math:`\ell` of threshold 1 (Yoshida et al. 2019;
``doc/theory/metric_learning.rst``). This module is the scikit-learn shell, read top to
bottom: parameters, fit (validate, build the path, run it, set the attributes), the
step's settings. The validation, the triplet set and the scale of ``alpha`` are
:mod:`sklearn_safescreen._metric_inputs`; the path step is
:class:`~sklearn_safescreen.engine.triplet.TripletPath`; the fitted attributes, the
convergence warning and the summary line are :mod:`sklearn_safescreen._metric_report`;
the model's methods (metric-learn's interface, ``transform``) and the deprecated
parameter spellings are mixins (:mod:`sklearn_safescreen._metric_learn_api`).
"""

from __future__ import annotations

import numbers

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from ._metric_inputs import (
    AUTO_ALPHA_FRACTION,
    check_alpha,
    metric_fit_inputs,
    resolve_alpha,
    triplet_paths,
)
from ._metric_learn_api import DeprecatedSpellingsMixin, MahalanobisMixin
from ._metric_report import MetricReportMixin, set_fitted_metric
from .base import FitInputs, PathState, SafeEstimator, limit_blas_threads
from .engine.triplet_settings import BOUNDS, DEFAULT_OPTIONS, TripletOptions, TripletSettings
from .screening.triplet import TRIPLET_RULES

#: (``AUTO_ALPHA_FRACTION``, the scale of ``alpha="auto"``, and ``BOUNDS``, the balls of
#: ``screening``, are read from here too)
__all__ = ["AUTO_ALPHA_FRACTION", "BOUNDS", "SafeMetricLearner"]


class SafeMetricLearner(MetricReportMixin, MahalanobisMixin, DeprecatedSpellingsMixin,
                        SafeEstimator):
    r"""Mahalanobis metric learning from triplets with safe triplet screening.

    Learns :math:`M\succeq O` (``metric="full"``) or a non-negative diagonal
    (``metric="diagonal"``) minimising

    .. math::

        P_\lambda(M)=\sum_{(i,j,l)\in\mathcal T}\ell\big(d_M^2(x_i,x_l)-d_M^2(x_i,x_j)\big)
        +\frac\lambda2\|M\|_F^2

    where :math:`\mathcal T` holds, for every anchor :math:`x_i`, its ``k`` nearest
    same-class instances :math:`x_j` and ``k`` nearest other-class instances
    :math:`x_l` (Euclidean, ties by index) or triplets given to :meth:`fit`,
    and :math:`\ell` is the smoothed hinge with threshold 1 and smoothing :math:`\gamma`
    (Yoshida et al. 2019). The solver is projected gradient on the PSD cone with
    averaged Barzilai-Borwein steps and the non-monotone line search of spectral
    projected gradient (the hinge is solved in the dual); screening
    (``doc/theory/metric_learning.rst``) proves
    triplets to be in :math:`\mathcal R^\star` (margin > 1, dropped) or
    :math:`\mathcal L^\star` (margin < 1-γ, folded into a constant) and never changes
    the optimum; every fit certifies its answer by the duality gap of the full
    problem and repairs (with :class:`~sklearn_safescreen.ScreeningRepairWarning`) if a
    screened triplet is proven wrong.

    **Scale of alpha.** ``alpha`` is the paper's :math:`\lambda`: the loss is a *sum* over
    triplets, not a mean, so useful values grow with the number of triplets, and with
    the fourth power of the scale of X. What matters is ``alpha`` relative to the
    critical value :math:`\lambda_L=\max_t\langle H_t,G_+\rangle/(1-\gamma)`,
    :math:`G=\sum_tH_t`: at or above it the optimum is :math:`G_+/\alpha` in closed
    form, and the further below it, the more iterations a fit needs. The default
    ``alpha="auto"`` is ``0.01 * critical_alpha_``; the value before fitting is
    :func:`sklearn_safescreen.path.critical_value` (after fitting, ``critical_alpha_``),
    and paths (:class:`~sklearn_safescreen.RegularizationPathCV`,
    :func:`~sklearn_safescreen.path.metric_learning_path`) start there and decrease.

    **Paths.** With ``warm_start=True``, ``fit`` after ``set_params(alpha=...)`` on the
    same data uses the previous solution as the reference of the RRPB / PGB bounds and
    starts from it (extrapolated linearly in :math:`\log\alpha` from the two previous
    solutions when the new ``alpha`` continues the path), and the RRPB ranges
    computed from every previous solution screen triplets without any rule evaluation.
    A cold fit uses the exact closed form at :math:`\lambda_L` as its reference.

    Parameters
    ----------
    alpha : float or "auto", default="auto"
        Regularisation :math:`\lambda>0` (larger = more regularised). ``"auto"`` is
        ``0.01 * critical_alpha_`` (``metric_learning.AUTO_ALPHA_FRACTION``), a value that
        converges in tens of iterations on typical (standardised) data; the value used
        is ``alpha_``. A number is used as is: its scale is that of :math:`\lambda_L`
        (``critical_alpha_``, e.g. about 2.7e6 on standardised wine): at and above it
        the metric is the closed form :math:`G_+/\lambda`, far below it (under about
        ``1e-5 * critical_alpha_``) a fit may need more than ``max_iter`` iterations,
        and below ``1e-50 * critical_alpha_`` ``fit`` raises a ``ValueError`` (the
        metric, of order :math:`\lambda_L/\lambda`, would overflow the solver's
        arithmetic). To choose it, use
        :class:`~sklearn_safescreen.RegularizationPathCV` over ``alpha``.
    k : int, "auto" or None, default="auto"
        Neighbours per side of each anchor (``k * k`` triplets per anchor). ``"auto"``
        is ``min(10, n_min - 1)`` with ``n_min`` the size of the smallest class (of at
        least two samples): the paper's protocol value 10, capped for small
        classes. An integer larger than a class allows (``n_c - 1`` same-class
        neighbours) raises a ``ValueError`` naming the class. ``None`` uses all triplets
        (:math:`\sum_c n_c(n_c-1)(n-n_c)` of them). A class of one sample anchors no
        triplet. Ignored when ``fit`` is given explicit triplets.
    loss : {"smoothed_hinge", "hinge"}, default="smoothed_hinge"
    smoothing : float, default=0.05
        :math:`\gamma\in(0,1)` of the smoothed hinge (ignored by the hinge, :math:`\gamma=0`).
    metric : {"full", "diagonal"}, default="full"
        Full PSD matrix, or a diagonal one (feature weighting).
    rule : {"sphere", "linear", "sdp"}, default="sphere"
        The screening rule (Yoshida et al. 2019, Sec. 4): the ball alone, the ball cut
        by the half-space :math:`\langle -Q^{GB}_-,X\rangle\ge0`, or the ball intersected
        with the PSD cone (closed form for ``metric="diagonal"``). ``"sdp"`` is the
        tightest but costs O(d^3) per triplet tested where the others cost O(1): it
        runs after the sphere and linear rules, on the triplets they leave, skips
        those it provably cannot screen, and is evaluated only while it screens
        something more, within a budget (full metric) of one eigendecomposition per
        solver iteration (so it costs at most about as much as the solver). It pays
        when the solver's iterations are expensive (many triplets, many iterations)
        and the balls are tight, e.g. late on a warm-started path; on standardised
        wine it screens what ``"linear"`` screens, at a little more cost (see the user
        guide, "Which rule").
    screening : {"rrpb+pgb", "rrpb", "pgb", "gb", "dgb", "cdgb", "rpb"} or None, default="rrpb+pgb"
        The ball(s) that contain the optimum, used for screening
        (``doc/theory/metric_learning.rst``). RRPB screens from the reference solution
        at each new ``alpha``, and the duality-gap ball (RRPB at the same alpha) during
        the solve; GB/PGB/DGB/CDGB are computed at the current iterate (the first check,
        at the warm start, is the path screening); ``"rrpb+pgb"`` uses both. RPB is used
        only from an exact reference (the closed form), RRPB otherwise. ``None`` turns
        all screening (reference, range, dynamic) off. (``True``/``False`` are
        deprecated spellings of the default and of ``None``.)
    bound : str, default="deprecated"
        Deprecated: pass the ball as ``screening``.
    range_screening : bool or "auto", default="auto"
        RRPB range screening along warm-started paths (Yoshida et al. 2019, Sec. 6.1):
        each solution stores, for every triplet, the interval of ``alpha`` on which
        its RRPB ball screens it, and a later fit screens the triplets whose interval
        covers its ``alpha`` without testing them. ``"auto"`` keeps them with
        ``rule="sdp"`` only (whose test costs O(d^3) a triplet): with the other rules
        the previous solution's own RRPB test, O(1) a triplet from its stored values,
        screened exactly the same triplets at every step on every path measured (iris,
        wine, digits and Madelon-, mnist- and Gisette-shaped sets) while the ranges'
        update after each fit cost up to a fifth of a screened path.
    active_set : bool, default=False
        The active-set heuristic of Weinberger and Saul (2009) (optimise over
        positive-loss triplets, refreshed every ``screening_interval`` iterations
        without dropping any within a fit, confirmed on all). Not used
        with ``loss="hinge"``, which is solved in the dual.
    screening_interval : int, default=10
        Iterations between dynamic screening checks (a check at which the fit has
        converged screens nothing more: the fit ends there).
    tol : float, default=1e-6
        Target relative duality gap :math:`(P-D)/|P|` of the full problem.
    max_iter : int, default=10000
        Maximum projected-gradient iterations per fit.
    warm_start : bool, default=False
        Reuse the previous solution on the same data (start point and screening
        reference).
    verbose : int, default=0
        Print one line per screening check and per fit (alpha, screened counts, gap,
        time).
    random_state : default="deprecated"
        Deprecated and unused: the fit is deterministic.

    Attributes
    ----------
    alpha_ : float
        The regularisation used: ``alpha``, or ``0.01 * critical_alpha_`` for
        ``alpha="auto"``.
    components_ : ndarray of shape (n_features, n_features)
        The learned model :math:`L`, with :math:`M=L^\top L`: the rows
        :math:`\sqrt{w_k}v_k^\top` of the eigendecomposition of the solution,
        eigenvalues descending, each row's entry of largest magnitude positive (an
        eigenvector's sign is otherwise arbitrary); for ``metric="diagonal"``,
        :math:`\operatorname{diag}(\sqrt{m})`. As in metric-learn, everything derives
        from it: assigning another :math:`L` (of shape (n_components, n_features))
        changes ``metric_``, :meth:`transform` and the distance methods alike.
    metric_ : ndarray of shape (n_features, n_features)
        The learned Mahalanobis matrix ``components_.T @ components_`` (for
        ``metric="diagonal"``, :math:`\operatorname{diag}(m)` of the learned diagonal),
        derived when read; read-only.
    n_iter_ : int
        Projected-gradient iterations of the last fit.
    dual_gap_ : float
        Duality gap of the full problem at ``metric_``.
    loss_ : float
        The triplet-loss part :math:`\sum_t\ell(\langle M,H_t\rangle)` of the objective
        at ``metric_`` (the quantity of the paper's path stop rule).
    n_triplets_ : int
    k_ : int or None
        The number of neighbours per side used (``None``: all triplets, or explicit
        triplets given to :meth:`fit`).
    critical_alpha_ : float
        :math:`\lambda_L` of the training triplets: for ``alpha`` at or above it the
        metric is :math:`G_+/\alpha` in closed form. Before fitting,
        :func:`sklearn_safescreen.path.critical_value` computes it.
    screening_report_ : ScreeningReport
        Events (kind "triplets"): range, reference, dynamic, repair; ``n_lower`` counts
        triplets put in :math:`\hat{\mathcal R}`, ``n_upper`` in :math:`\hat{\mathcal L}`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Memory: at most about 160 bytes per triplet plus :math:`8(4d+8)` per pair of the
    triplet set (estimated up front; a set that would not fit is refused with the
    figure). Time per iteration:
    :math:`O(|\tilde{\mathcal T}|+n_{\rm pairs}d^2+d^3)` with
    :math:`\tilde{\mathcal T}` the unscreened triplets and :math:`n_{\rm pairs}` the
    pairs they use; the iterations, the dynamic screening and the removal of screened
    triplets run in one compiled call per fit (``solvers/_spg_fast.pyx``).

    References
    ----------
    T. Yoshida, I. Takeuchi, M. Karasuyama. Safe triplet screening for distance metric
    learning. Neural Computation 31(12), 2019.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_safescreen.metric_learning import SafeMetricLearner
    >>> X, y = load_iris(return_X_y=True)
    >>> ml = SafeMetricLearner().fit(X, y)
    >>> ml.k_, ml.n_triplets_
    (10, 15000)
    >>> bool(ml.alpha_ == 0.01 * ml.critical_alpha_)
    True
    >>> ml.transform(X).shape
    (150, 4)
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(numbers.Real, 0.0, None, closed="neither"),
                  StrOptions({"auto"})],
        "k": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"}),
              None],
        "loss": [StrOptions({"smoothed_hinge", "hinge"})],
        "smoothing": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "metric": [StrOptions({"full", "diagonal"})],
        "screening": [StrOptions(set(BOUNDS)), None, Hidden("boolean")],
        "bound": [StrOptions(set(BOUNDS)), Hidden(StrOptions({"deprecated"}))],
        "rule": [StrOptions(set(TRIPLET_RULES))],
        "range_screening": ["boolean", StrOptions({"auto"})],
        "active_set": ["boolean"],
        "screening_interval": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": [Hidden(StrOptions({"deprecated"})), "random_state"],
    }

    # the path protocol
    _path_param = "alpha"
    _path_increasing = False  # larger alpha = more regularised
    #: how the problem is solved, not which problem: the balls and rules (and their
    #: deprecated spellings), range screening, the active-set heuristic, the solver's
    #: controls and output; random_state is unused
    _solver_params = frozenset({"screening", "bound", "rule", "range_screening",
                                "active_set", "screening_interval", "tol", "max_iter",
                                "warm_start", "verbose", "random_state"})
    _path_state = ("_path", "_input_memo", "_problem_cache")
    #: the triplet engine's tuning values (none changes a model): not a parameter; a
    #: test that needs others (e.g. the bounds tried on a small set) sets them on its
    #: instance before its first fit
    _triplet_options: TripletOptions = DEFAULT_OPTIONS

    def __init__(self, alpha="auto", *, k="auto", loss="smoothed_hinge", smoothing=0.05,
                 metric="full", screening="rrpb+pgb", rule="sphere",
                 range_screening="auto", active_set=False, screening_interval=10, tol=1e-6,
                 max_iter=10000, warm_start=False, verbose=0, bound="deprecated",
                 random_state="deprecated"):
        self.alpha = alpha
        self.k = k
        self.loss = loss
        self.smoothing = smoothing
        self.metric = metric
        self.screening = screening
        self.rule = rule
        self.range_screening = range_screening
        self.active_set = active_set
        self.screening_interval = screening_interval
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.verbose = verbose
        self.bound = bound
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # transform computes in the input's precision, as PCA's does (fit is float64)
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ---------------------------------------------------------------- fit ---
    @_fit_context(prefer_skip_nested_validation=True)
    @limit_blas_threads
    def fit(self, X, y, triplets=None) -> SafeMetricLearner:
        """Learn the metric.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes, each with at least two samples).
        triplets : array-like of shape (n_triplets, 3), default=None
            Explicit ``(i, j, l)`` index triplets (anchor, similar, dissimilar); by
            default the k-nearest-neighbour triplets (see ``k``).

        Returns
        -------
        self : SafeMetricLearner
        """
        return self._fit(X, y, triplets=triplets)

    def _fit_inputs(self, X, y, triplets=None, sample_weight=None) -> FitInputs:
        return metric_fit_inputs(self, X, y, triplets, sample_weight)

    def _make_paths(self, inputs: FitInputs) -> PathState:
        """The triplet set (the k-NN triplets by default) and its closed form."""
        return triplet_paths(inputs, self._gamma, self._diagonal, self._triplet_options)

    # ----------------------------------------------------------- one step ---
    def _step_value(self, state: PathState) -> float:
        """``alpha``, with ``"auto"`` resolved from the critical value."""
        return resolve_alpha(self.alpha, self._critical_from(state))

    def _check_step(self, state: PathState, alpha: float) -> None:
        check_alpha(alpha, self._critical_from(state), state.paths[0].separable)

    def _step_settings(self, state: PathState, value: float) -> TripletSettings:
        self._warn_unused_random_state()
        return TripletSettings(
            gamma=self._gamma, diagonal=self._diagonal, bound=self._screening_ball(),
            rule=self.rule, range_screening=self.range_screening,
            active_set=self.active_set, interval=self.screening_interval, tol=self.tol,
            max_iter=self.max_iter, verbose=self.verbose, describe=self._describe())

    @property
    def _gamma(self) -> float:
        return 0.0 if self.loss == "hinge" else float(self.smoothing)

    @property
    def _diagonal(self) -> bool:
        return self.metric == "diagonal"

    # -------------------------------------------------------------- model ---
    def _set_model(self, inputs: FitInputs, state: PathState, outcomes) -> None:
        set_fitted_metric(self, inputs, state, outcomes)
