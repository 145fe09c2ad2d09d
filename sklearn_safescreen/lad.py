r"""SafeLAD: least absolute deviations regression with safe sample screening.

Problem (spec svm B6, W-33, with weights F2):

.. math::

    \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\,|y_i - w^\top\Phi(x_i)|,

with :math:`c_i` = ``sample_weight``. The intercept is a *regularised* extra feature of
value ``intercept_scaling`` (kernel :math:`K+s^2`), as in :class:`~sklearn_safescreen.svm.
SafeSVC`. Its dual is the box QP of ``solvers.dual_cd`` with sign 1, linear term ``y`` and
box :math:`[-Cc_i, Cc_i]`; the solver, the certificate and the dynamic gap-ball screening
are SafeSVC's (``_base.screened_solve``), the rule is DVI for LAD (``screening.lad``).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._base import (
    MemoisedParams,
    data_fingerprint,
    limit_blas_threads,
    memoised_validation,
    path_step,
)
from ._kernels import (
    KernelMatrix,
    design_matrix,
    needs_psd_check,
    resolve_kernel_params,
)
from ._report import ScreeningEvent, ScreeningReport
from .screening.lad import LAD_RULES, LADReference, lad_critical_C, screen_lad
from .solvers.dual_cd import BoxQP, solve_box_qp
from .svm import _TaskData

#: A single cold fit (linear kernel) walks an internal path from C_min^LAD in steps of
#: this ratio, each solution screening the next (spec B6, D1).
INTERNAL_PATH_RATIO = 1e4


class _LADData(_TaskData):
    """The data of the LAD problem: targets, weights, design matrix or kernel.

    Reuses SafeSVC's task data with all signs +1 (so ``q_matvec`` is :math:`Gv`, cached
    incrementally in kernel mode); only the box QP differs (spec B6).
    """

    def __init__(self, X, kernel: KernelMatrix | None, y: np.ndarray, weights: np.ndarray):
        super().__init__(X, kernel, np.ones(y.shape[0]), weights)
        self.y = y

    def problem(self, C: float) -> BoxQP:
        bound = C * self.weights
        return BoxQP(sign=self.ysign, p=self.y, lo=-bound, hi=bound, sqnorm=self.sqnorm,
                     X=self.X if self.kernel is None else None, kernel=self.kernel,
                     newton=self.newton)


def _slope(data: _LADData, max_iter: int, rng: np.random.RandomState) -> np.ndarray:
    r""":math:`\gamma` with :math:`\alpha^*_{[C]} = C\gamma` for every :math:`C\le
    C^{\rm LAD}_{\min}` (see :func:`~sklearn_safescreen.screening.lad.lad_critical_C`).

    :math:`\gamma_i = c_i\,\mathrm{sign}(y_i)` where :math:`y_i\ne0`. The samples with
    :math:`y_i = 0` solve :math:`\min_{\beta\in[-c,c]}\tfrac12\beta^\top G_{ZZ}\beta +
    \beta^\top G_{Z\bar Z}\gamma_{\bar Z}` (the problem at ``C = 1`` with the others held:
    scaling ``C`` scales its solution), a small box QP solved to a tight tolerance; its
    residual gap is part of the reference's certified gap, so safety never depends on it.
    """
    y, c = data.y, data.weights
    gamma = c * np.sign(y)
    zero = (y == 0) & (c > 0)
    if zero.any():
        res = solve_box_qp(data.problem(1.0), gamma, ~zero, tol=1e-12, max_iter=max_iter,
                           random_state=rng)
        gamma = res.alpha
    return gamma


def _closed_form_reference(data: _LADData, C: float, gamma: np.ndarray,
                           pred: np.ndarray) -> tuple[LADReference, float]:
    """The reference :math:`\\alpha = C\\gamma` at ``C`` with its full duality gap (0 up to
    round-off when no target is 0) and relative gap."""
    problem = data.problem(C)
    alpha, margins = C * gamma, C * pred
    gap = max(float(problem.gap_terms(alpha, margins).sum()), 0.0)
    dual = abs(problem.dual_objective(alpha, margins))
    return LADReference(C, alpha, margins, gap), gap / max(dual, 1e-300)


def _fit_lad(data: _LADData, C: float, ref: LADReference | None, *, rule, tol, max_iter,
             rng, verbose) -> tuple[LADReference, ScreeningReport, int]:
    """Solve at ``C`` from a reference (path step) or cold."""
    report = ScreeningReport(kind="samples", n_variables=data.y.size)
    n_iter = 0
    if ref is None:
        ref, grid = _cold_start(data, C, report, tol, max_iter, rng, verbose)
    else:
        grid = [C]
    for value in grid:
        ref, it = _path_step(data, value, ref, rule, tol, max_iter, rng, report, verbose)
        n_iter += it
    return ref, report, n_iter


def _cold_start(data: _LADData, C: float, report: ScreeningReport, tol, max_iter, rng,
                verbose):
    """First reference of a cold fit (linear kernel): the solution at
    :math:`C^{\\rm LAD}_{\\min}` (linear in ``C``, spec B6) and an internal path from
    there to ``C``. In kernel mode :math:`G\\gamma` would cost a full kernel pass, so the
    solve starts at ``C`` with dynamic screening only (as SafeSVC)."""
    if data.kernel is not None:
        return None, [C]
    n = data.y.size
    gamma = _slope(data, max_iter, rng)
    pred = data.q_matvec(gamma)
    c_min = lad_critical_C(pred, data.y, data.weights)
    if C <= c_min:
        ref, rel_gap = _closed_form_reference(data, C, gamma, pred)
        if rel_gap <= tol:
            held = data.weights > 0
            n_lo = int((held & (ref.alpha <= -C * data.weights)).sum())
            n_hi = int((held & (ref.alpha >= C * data.weights)).sum())
            report.add(ScreeningEvent("Cmin", "closed_form", C, n_lo, n_hi, n))
            report.n_screened = n_lo + n_hi
            if verbose:
                print(f"[SafeLAD] C={C:<10.4g} closed form (C <= C_min={c_min:.4g}): "
                      f"R={n_lo} L={n_hi} at alpha=-/+C, gap={rel_gap:.2e}")
            return ref, []
        return ref, [C]  # a zero target's sub-QP left a gap above tol: solve at C
    ref, _ = _closed_form_reference(data, c_min, gamma, pred)
    n_steps = int(np.floor(np.log(C / c_min) / np.log(INTERNAL_PATH_RATIO)))
    grid = list(c_min * INTERNAL_PATH_RATIO ** np.arange(1, n_steps + 1))
    return ref, [*grid, C] if not grid or grid[-1] < C else grid


def _path_step(data: _LADData, C, ref, rule, tol, max_iter, rng, report, verbose):
    return path_step(
        data.problem(C), C, ref, rule=rule, tol=tol, max_iter=max_iter, rng=rng,
        report=report, label="SafeLAD", verbose=verbose,
        screen=lambda r, v: screen_lad(rule, r, v, data.sqnorm, data.y, data.weights))


class SafeLAD(MemoisedParams, RegressorMixin, BaseEstimator):
    r"""Least absolute deviations regression with safe sample screening.

    Solves the L2-regularised LAD problem (robust regression; spec
    ``svm_lad_screening.md`` B6)

    .. math::

        \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\,|y_i - w^\top\Phi(x_i)|

    in its box-constrained dual :math:`\max_\alpha -\tfrac12\alpha^\top G\alpha +
    y^\top\alpha`, :math:`-Cc_i \le \alpha_i \le Cc_i`, :math:`G_{ij}=K(x_i,x_j)`, by the
    coordinate-descent solver of :class:`~sklearn_safescreen.svm.SafeSVC`
    (``solvers.dual_cd``). At the optimum :math:`\alpha_i = +Cc_i` for samples predicted
    below their target (set :math:`\mathcal L`), :math:`-Cc_i` for samples predicted
    above it (:math:`\mathcal R`), and only the interpolated samples
    (:math:`\mathcal E`, at most about ``n_features + 1`` of them for the linear kernel)
    are free. The DVI rule ([WWY] Corollary 15, spec B6), inflated by the reference's
    duality gap (spec F1), proves from a previous solution that samples belong to
    :math:`\mathcal R` or :math:`\mathcal L` and removes them from the optimisation;
    duality-gap balls screen more during the solve. The answer is the optimum of the
    full problem: every fit certifies it by the full duality gap and the optimality
    condition of every screened sample, and repairs (with a warning) if needed.

    **Intercept.** With ``fit_intercept=True`` the bias is a *regularised* extra feature
    of value ``intercept_scaling`` (kernel :math:`K + s^2`), as in SafeSVC; a large
    ``intercept_scaling`` makes the penalty on the intercept negligible.

    **Paths.** For :math:`C \le C^{\rm LAD}_{\min}` the optimum is :math:`\alpha = C\gamma`,
    :math:`\gamma_i = c_i\,\mathrm{sign}(y_i)` (every sample on the side of its target;
    spec B6; samples with :math:`y_i=0` take the solution of a small C-free QP), with

    .. math::

        C^{\rm LAD}_{\min} = \min_{i:\ s_i(G\gamma)_i>0} \frac{|y_i|}{s_i(G\gamma)_i},
        \qquad s = \mathrm{sign}(y).

    A cold fit with the linear kernel starts from that solution and walks an internal
    path to ``C`` (ratio ``INTERNAL_PATH_RATIO`` per step). With ``warm_start=True`` the
    previous fit on the same data is the start point and screening reference for the
    new ``C`` (smaller or larger): this is how to walk a regularisation path by hand, and
    how :func:`sklearn_safescreen.path.lad_path` and ``RegularizationPathCV`` walk it.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter (> 0); larger values fit the data more closely.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        Kernel (kernel LAD, spec B6: everything depends on :math:`G` only). Screening
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
        Rule applied from the reference solution (DVI for LAD, spec B6 with F1).
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
    random_state : int, RandomState or None, default=None
        Seeds the coordinate permutations (the optimum does not depend on it).
    cache_size : float, default=200
        Memory (MB) of the kernel row cache (kept across warm-started fits).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Primal weights (linear kernel only).
    intercept_ : float
        ``intercept_scaling * w_bias`` (0 without intercept).
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
    array([ 1. , -2. ,  0.5])
    """

    _parameter_constraints: dict = {
        "C": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"linear", "rbf", "poly", "precomputed"}), callable],
        "degree": [Interval(numbers.Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}),
                  Interval(numbers.Real, 0.0, None, closed="neither")],
        "coef0": [Interval(numbers.Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "screening": [StrOptions(set(LAD_RULES)), None],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "cache_size": [Interval(numbers.Real, 0, None, closed="left")],
    }

    # path protocol (path.py): the regularisation parameter and its direction
    _path_param = "C"
    _path_increasing = True  # larger C = less regularised

    def __init__(self, C=1.0, *, kernel="linear", degree=3, gamma="scale", coef0=0.0,
                 fit_intercept=True, intercept_scaling=1.0, screening="DVI", tol=1e-4,
                 max_iter=10000, warm_start=False, verbose=0, random_state=None,
                 cache_size=200):
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
        self.cache_size = cache_size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # ----------------------------------------------------------------- fitting ---
    @limit_blas_threads
    def fit(self, X, y, sample_weight=None):
        """Fit the LAD regressor.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or
            (n_samples, n_samples) for ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative per-sample multipliers of ``C``.

        Returns
        -------
        self : SafeLAD
        """
        self._validate_params()
        X, y, weights, digest = self._validated_inputs(X, y, sample_weight)
        kernel_params, bias = self._kernel_setup(X, weights)
        fingerprint = data_fingerprint(digest, self.kernel, kernel_params, bias,
                                       needs_psd_check(self.kernel, self.screening))
        same = self.warm_start and getattr(self, "_fingerprint", None) == fingerprint
        if same:  # same problem: keep the reference, the design matrix and the kernel
            ref, data = self._reference, self._data  # (with its row cache)
        else:
            ref = None
            data = _LADData(*self._build(X, kernel_params, bias), y, weights)
        rng = self.random_state
        if not isinstance(rng, numbers.Integral):  # an int seeds directly (one generator)
            rng = check_random_state(rng).randint(np.iinfo(np.int32).max)
        rng = np.random.RandomState(rng)
        ref, report, n_iter = _fit_lad(data, float(self.C), ref, rule=self.screening,
                                       tol=self.tol, max_iter=self.max_iter, rng=rng,
                                       verbose=self.verbose)
        self._fingerprint, self._reference, self._data = fingerprint, ref, data
        data.end_fit(keep=self.warm_start)  # the Newton factor serves paths only
        self.screening_report_ = report
        self.n_iter_ = int(n_iter)
        self.dual_gap_ = float(ref.gap)
        self._set_model(X, data.X, ref.alpha, bias, kernel_params)
        return self

    def _validate(self, X, y, sample_weight):
        """Validate the training data; resolve the kernel parameters and the bias."""
        X, y, weights, _ = self._validated_inputs(X, y, sample_weight)
        return (X, y, weights, *self._kernel_setup(X, weights))

    def _validated_inputs(self, X, y, sample_weight):
        """``(X, y, weights, content digest)``; with ``warm_start``, the same arrays with
        unchanged content as the previous fit are not validated again
        (:func:`~sklearn_safescreen._base.memoised_validation`)."""

        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                                   order="C", y_numeric=True)
            yv = np.ascontiguousarray(yv, dtype=np.float64)
            weights = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                           ensure_non_negative=True)
            if not np.any(weights > 0):
                raise ValueError("all sample weights are zero: there is nothing to fit")
            return Xv, yv, weights

        (X, y, weights), digest = memoised_validation(self, (X, y, sample_weight),
                                                      validate)
        return X, y, weights, digest or data_fingerprint(X, y, weights)

    def _kernel_setup(self, X, weights):
        """Check the kernel against the data; ``(kernel parameters, bias)`` (gamma="scale"
        / "auto" resolved exactly as SafeSVC does, from the weighted variance)."""
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError("kernel='precomputed' needs a square training kernel matrix; "
                             f"got shape {X.shape}")
        if self.kernel == "poly" and self.coef0 < 0 and self.screening is not None:
            raise ValueError("the polynomial kernel with coef0 < 0 is not guaranteed to be "
                             "positive semi-definite, so screening would be unsafe; use "
                             "coef0 >= 0 or screening=None")
        kernel_params = resolve_kernel_params(self.kernel, self.gamma, self.degree,
                                              self.coef0, X, weights)
        bias = self.intercept_scaling if self.fit_intercept else 0.0
        return kernel_params, bias

    def __getstate__(self):
        """Pickle without the memo of the caller's input arrays (:class:`InputMemo`)."""
        state = super().__getstate__()
        state.pop("_input_memo", None)
        return state

    def _build(self, X, kernel_params, bias):
        """The design matrix with its bias column (linear) or the kernel."""
        return design_matrix(X, self.kernel, kernel_params, bias, screening=self.screening,
                             cache_size=self.cache_size)

    def _critical_value(self, X, y, sample_weight=None) -> float:
        r""":math:`C^{\rm LAD}_{\min}` (spec B6, R7): for every :math:`C` at or below it
        the optimum is :math:`\alpha = C\gamma` (closed form; see the class docstring),
        so a path starts there. ``inf`` when that holds for every ``C`` (e.g. all
        targets 0). Costs one product with :math:`G` (a kernel pass in kernel mode)."""
        self._validate_params()
        X, y, weights, kernel_params, bias = self._validate(X, y, sample_weight)
        data = _LADData(*self._build(X, kernel_params, bias), y, weights)
        gamma = _slope(data, self.max_iter, check_random_state(0))
        return lad_critical_C(data.q_matvec(gamma), y, weights)

    def _set_model(self, X, Xa, alpha, bias, kernel_params):
        self.support_ = np.flatnonzero(alpha != 0).astype(np.int32)
        self.dual_coef_ = alpha[self.support_][None, :]
        # the kernel expansion needs the support vectors; the linear model is coef_ (and
        # nearly every LAD sample has alpha != 0, so a copy of X would be wasted)
        if self.kernel not in ("linear", "precomputed"):
            self.support_vectors_ = X[self.support_]
        self._kernel_params_ = kernel_params
        self._bias = bias
        if self.kernel == "linear":
            w = np.asarray(Xa.T @ alpha).ravel()
            d = X.shape[1]
            self.coef_ = w[:d]
            self.intercept_ = float(w[d] * bias) if bias else 0.0

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
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.kernel == "linear":
            return np.asarray(X @ self.coef_).ravel() + self.intercept_
        if self.kernel == "precomputed":
            K = np.asarray(X[:, self.support_], dtype=np.float64)
        else:
            km = KernelMatrix(None, self.kernel, self._kernel_params_, 0.0)
            K = km.cross(X, self.support_vectors_)
        return (K + self._bias**2) @ self.dual_coef_[0]


__all__ = ["SafeLAD"]
