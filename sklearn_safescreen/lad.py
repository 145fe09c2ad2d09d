r"""SafeLAD: least absolute deviations regression with safe sample screening.

.. math::

    \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\,|y_i - w^\top\Phi(x_i)|,

with :math:`c_i` = ``sample_weight`` and the intercept a regularised extra feature, as
in SafeSVC (``doc/theory/svm_lad.rst``). Its dual is the box QP of
:mod:`sklearn_safescreen.problems.box_qp` with sign 1, linear term ``y`` and box
:math:`[-Cc_i, Cc_i]`; the fit skeleton, kernels and prediction are
:class:`~sklearn_safescreen._box_qp_base.BaseBoxQPEstimator`'s, the path step
:class:`~sklearn_safescreen.engine.box_qp.LADPath`'s.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from ._box_qp_base import SOLVER_SQUARES, BaseBoxQPEstimator, FitData
from ._utils.fingerprint import data_fingerprint
from ._utils.limits import MAX_ENTRY
from ._validation import check_magnitude, memoised_validation
from .engine.box_qp import LADPath
from .problems.box_qp_data import LADData
from .screening.lad import LAD_RULES


class SafeLAD(RegressorMixin, BaseBoxQPEstimator):
    r"""Least absolute deviations regression with safe sample screening.

    Solves the L2-regularised LAD problem (robust regression; Wang et al. 2014, Sec. 5.3;
    ``doc/theory/svm_lad.rst``)

    .. math::

        \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\,|y_i - w^\top\Phi(x_i)|

    in its box-constrained dual :math:`\max_\alpha -\tfrac12\alpha^\top G\alpha +
    y^\top\alpha`, :math:`-Cc_i \le \alpha_i \le Cc_i`, :math:`G_{ij}=K(x_i,x_j)`, by the
    coordinate-descent solver of :class:`~sklearn_safescreen.svm.SafeSVC`
    (``solvers.dual_cd``). At the optimum :math:`\alpha_i = +Cc_i` for samples predicted
    below their target (set :math:`\mathcal L`), :math:`-Cc_i` for samples predicted
    above it (:math:`\mathcal R`), and only the interpolated samples
    (:math:`\mathcal E`, at most about ``n_features + 1`` of them for the linear kernel)
    are free. The DVI rule (Wang et al. 2014, Corollary 15), inflated by the reference's
    duality gap, proves from a previous solution that samples belong to
    :math:`\mathcal R` or :math:`\mathcal L` and removes them from the optimisation;
    duality-gap balls screen more during the solve. The answer is the optimum of the
    full problem: every fit certifies it by the full duality gap and the optimality
    condition of every screened sample, and repairs (with a warning) if needed.

    **Intercept.** With ``fit_intercept=True`` the bias is a *regularised* extra feature
    of value ``intercept_scaling`` (kernel :math:`K + s^2`), as in SafeSVC; a large
    ``intercept_scaling`` makes the penalty on the intercept negligible.

    **Paths.** For :math:`C \le C^{\rm LAD}_{\min}` the optimum is :math:`\alpha = C\gamma`,
    :math:`\gamma_i = c_i\,\mathrm{sign}(y_i)` (every sample on the side of its target;
    samples with :math:`y_i=0` take the solution of a small C-free QP), with

    .. math::

        C^{\rm LAD}_{\min} = \min_{i:\ s_i(G\gamma)_i>0} \frac{|y_i|}{s_i(G\gamma)_i},
        \qquad s = \mathrm{sign}(y).

    A cold fit with the linear kernel starts from that solution and walks an internal
    path to ``C`` (ratio ``INTERNAL_PATH_RATIO`` per step). With ``warm_start=True`` the
    previous fit on the same data is the start point and screening reference for the
    new ``C`` (smaller or larger): this is how to walk a regularisation path by hand, and
    how :func:`sklearn_safescreen.path.lad_path` and ``RegularizationPathCV`` walk it.

    **Precision at huge C.** Screening stays safe at any ``C``: the margins and the
    duality gap of every reference are computed compensated, as if in twice the working
    precision, with rigorous bounds of their rounding errors, and every rule widens its
    bounds by them (``doc/theory/safety.rst``). The fit itself cannot be resolved beyond
    float64: when the rounding floor of the duality gap (its error bound, plus the
    resolution of the free dual variables if the solve stopped short) exceeds ``tol``
    relative to the objective, a :class:`~sklearn_safescreen.PrecisionWarning` is issued
    instead of a ``ConvergenceWarning`` (``doc/theory/svm_lad.rst``, *Beyond double
    precision*). Lower ``C`` or rescale the data. A problem whose figure
    :math:`C\sum_i c_i\max_i K(x_i, x_i)` (the intercept's ``intercept_scaling**2``
    included in :math:`K`) exceeds :math:`1/\epsilon \approx 4.5\times10^{15}` is
    refused with a ``ValueError`` giving it and the largest ``C`` accepted: the
    rounding of a single margin would then exceed the loss's unit, no solve could be
    certified and the result could be worse than ``coef_ = 0``.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter (> 0, finite); larger values fit the data more closely.
        ``np.inf`` is refused: its limit, the least-norm interpolation of the targets,
        exists only where the model can interpolate them (not a linear model on more
        samples than features), and float64 refuses the box's figure long before.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        Kernel (kernel LAD: everything depends on :math:`G` only). Screening
        needs a positive semi-definite kernel; a precomputed or callable one is checked.
    degree : int, default=3
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly", as in SafeSVC.
    coef0 : float, default=0.0
        Independent term of the polynomial kernel (>= 0 with screening).
    fit_intercept : bool, default=True
        Add a regularised bias feature (see above).
    intercept_scaling : float, default=1.0
        Value of the bias feature.
    screening : {"DVI"} or None, default="DVI"
        Rule applied from the reference solution (DVI for LAD, gap-inflated).
        ``None`` disables all screening, including the dynamic gap-ball screening.
    tol : float, default=1e-4
        Target relative duality gap ``(P - D) / D`` of the full problem.
    max_iter : int, default=10000
        Maximum number of coordinate-descent epochs per solve.
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference.
    verbose : int, default=0
        Print one line per path step (value, screened counts, gap, epochs, time).
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
        The most OpenMP threads of the compiled loops (kernel rows, margins, screening
        passes), which by default use every core allowed by ``OMP_NUM_THREADS`` and
        threadpoolctl, as scikit-learn's OpenMP estimators do. Results do not depend on
        it.
    cache_size : float, default=200
        Memory (MB) of the kernel row cache (kept across warm-started fits).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Primal weights (linear kernel only).
    intercept_ : float
        ``intercept_scaling * w_bias`` (0 without intercept), for every kernel: with
        ``w_bias = intercept_scaling * sum(alpha)``, ``predict`` is the kernel
        expansion plus ``intercept_``.
    dual_coef_ : ndarray of shape (1, n_SV)
        :math:`\alpha_i` of the samples with :math:`\alpha_i \ne 0`.
    support_ : ndarray of shape (n_SV,)
        Indices of those samples (every sample with a nonzero weight and a nonzero
        residual, plus the interpolated ones with :math:`\alpha_i\ne0`).
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The training samples of ``support_`` (non-linear, non-precomputed kernels only:
        the linear model is ``coef_``).
    n_iter_ : int
        Coordinate-descent epochs, summed over the internal path.
    dual_gap_ : float
        Duality gap of the full problem at the returned solution.
    screening_report_ : ScreeningReport
        What was screened, when, by which rule and at what cost.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.linear_model.QuantileRegressor : unregularised (``alpha=0``) or L1-penalised
        median regression, solved as a linear program.
    SafeSVC : the hinge-loss counterpart.

    References
    ----------
    J. Wang, P. Wonka, J. Ye. Scaling SVM and least absolute deviations via exact data
    reduction. ICML 2014 (arXiv:1310.7048).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_safescreen.lad import SafeLAD
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 3)
    >>> y = X @ [1.0, -2.0, 0.5] + rng.laplace(size=200)
    >>> model = SafeLAD(C=1.0).fit(X, y)
    >>> np.round(model.coef_, 1)
    array([ 1. , -2.1,  0.6])
    """

    _parameter_constraints: dict = {
        **BaseBoxQPEstimator._parameter_constraints,
        "screening": [StrOptions(set(LAD_RULES)), None],
        "n_jobs": [None, Interval(numbers.Integral, None, None, closed="neither")],
    }

    def __init__(self, C=1.0, *, kernel="linear", degree=3, gamma="scale", coef0=0.0,
                 fit_intercept=True, intercept_scaling=1.0, screening="DVI", tol=1e-4,
                 max_iter=10000, warm_start=False, verbose=0, random_state=None,
                 n_jobs=None, cache_size=200):
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
        self.verbose = verbose
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.cache_size = cache_size

    # ----------------------------------------------------------------- fitting ---
    def _validated_inputs(self, X, y, sample_weight) -> FitData:
        """Validate the training data; with ``warm_start``, the same arrays with unchanged
        content as the previous fit are not validated again
        (:func:`~sklearn_safescreen._validation.memoised_validation`)."""

        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                                   order="C", y_numeric=True)
            yv = np.ascontiguousarray(yv, dtype=np.float64)
            check_magnitude(Xv, "X", MAX_ENTRY, SOLVER_SQUARES)
            check_magnitude(yv, "y", MAX_ENTRY, SOLVER_SQUARES)
            weights = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                           ensure_non_negative=True)
            if not np.any(weights > 0):
                raise ValueError("all sample weights are zero: there is nothing to fit")
            return Xv, yv, weights

        (X, y, weights), digest = memoised_validation(self, (X, y, sample_weight),
                                                      validate)
        content = (digest or data_fingerprint(X, y, weights),)
        return FitData(X, y, weights, weights, content)

    def _task_paths(self, Xa, kernel, data: FitData) -> list[LADPath]:
        return [LADPath(LADData(Xa, kernel, data.targets, data.weights))]

    def _set_model(self, inputs, state, outcomes):
        data = inputs.data
        bias, kernel_params = data.bias, data.kernel_params
        (path,), (outcome,) = state.paths, outcomes
        alpha = outcome.reference.alpha
        self.n_iter_ = int(outcome.n_iter)
        self.dual_gap_ = float(outcome.reference.gap)
        self.support_ = np.flatnonzero(alpha != 0).astype(np.int32)
        self.dual_coef_ = alpha[self.support_][None, :]
        # the kernel expansion needs the support vectors; the linear model is coef_ (and
        # nearly every LAD sample has alpha != 0, so a copy of X would be wasted)
        if self.kernel not in ("linear", "precomputed"):
            self.support_vectors_ = data.X[self.support_]
        self._kernel_params_ = kernel_params
        self._bias = bias
        if self.kernel == "linear":
            w = np.asarray(path.data.X.T @ alpha).ravel()
            d = data.X.shape[1]
            self.coef_ = w[:d]
            self.intercept_ = float(w[d] * bias) if bias else 0.0
        else:
            # the bias feature's weight is w_bias = intercept_scaling * sum(alpha), so
            # the decision K @ alpha + intercept_scaling**2 * sum(alpha) has this offset
            self.intercept_ = float(bias**2 * alpha.sum()) if bias else 0.0

    # -------------------------------------------------------------- prediction ---
    def predict(self, X):
        """Predicted targets :math:`w^\\top\\Phi(x)`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or
            (n_samples, n_train) for ``kernel="precomputed"``

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._scores(X).ravel()


__all__ = ["SafeLAD"]
