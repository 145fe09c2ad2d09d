r"""SafeDoublySparseSVC and SafeDoublySparseSVR: elastic-net smoothed SVMs with
simultaneous safe screening of features and samples (Shibagaki et al. 2016).

.. math::

    \min_w\ \alpha\rho\|w\|_1 + \frac{\alpha(1-\rho)}2\|w\|_2^2
    + \frac1n\sum_{i=1}^n c_i\,h(z_i(x_i^\top w)),

with :math:`\rho` = ``l1_ratio``, :math:`h` the smoothed hinge of width ``smoothing``
and :math:`z_i = 1 - y_iw^\top x_i` (classifier) or :math:`|w^\top x_i - y_i| -
\varepsilon` (regressor). The problem, rules, solver and path step are
:mod:`.problems.doubly_sparse`, :mod:`.screening.doubly_sparse`,
:mod:`.solvers.doubly_sparse_cd` and :mod:`.engine.doubly_sparse`
(``doc/theory/doubly_sparse.rst``).
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._utils.fingerprint import data_fingerprint
from ._utils.memory import check_memory
from ._utils.warnings import warn_user
from ._validation import check_magnitude, class_weights, memoised_validation
from .base import MemoisedParams, PathEstimatorMixin, limit_blas_threads
from .engine.doubly_sparse import DoublySparsePath, StepOutcome
from .engine.report import ScreeningReport
from .problems.doubly_sparse import EPSILON_INSENSITIVE, HINGE, DoublySparseData
from .screening.doubly_sparse import DOUBLY_SPARSE_RULES

#: Largest magnitude of an entry of X (and y): norms and margins square them.
MAX_ENTRY = 1e100
#: Fraction of the available memory a fit may use for its copies of X.
MEMORY_FRACTION = 0.8


@dataclass
class _PathState:
    fingerprint: str
    paths: list[DoublySparsePath]
    keep: np.ndarray  # the samples with a positive weight


class _BaseDoublySparse(PathEstimatorMixin, MemoisedParams, BaseEstimator):
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
    _path_increasing = False  # larger alpha = more regularised
    _path_state = (*PathEstimatorMixin._path_state, "_label_cache")
    _loss: str

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

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
    @_fit_context(prefer_skip_nested_validation=True)
    @limit_blas_threads
    def fit(self, X, y, sample_weight=None):
        """Fit the model at ``alpha``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input (CSR or CSC) is never densified.
        y : array-like of shape (n_samples,)
            Class labels (classifier) or real targets (regressor).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the samples' losses (rescaled, with the class
            weights, to average 1 over the samples of positive weight).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        lam, beta = self._penalty()
        X, targets, weights, content = self._inputs(X, y, sample_weight)
        fingerprint = data_fingerprint(*content, getattr(self, "class_weight", None),
                                       self.fit_intercept, self.intercept_scaling,
                                       self.smoothing, getattr(self, "epsilon", 0.0))
        state = getattr(self, "_path", None)
        if not (self.warm_start and state is not None and state.fingerprint == fingerprint):
            state = _PathState(fingerprint, *self._make_paths(X, targets, weights))
        seeds = self._seeds(len(state.paths))
        start = time.perf_counter()
        jobs = [delayed(_fit_path)(p, lam, beta, rule=self.screening, tol=self.tol,
                                   max_iter=self.max_iter, seed=s,
                                   describe=f"{type(self).__name__}(alpha={self.alpha:g})",
                                   value=float(self.alpha))
                for p, s in zip(state.paths, seeds, strict=True)]
        if len(jobs) == 1:
            func, args, kwargs = jobs[0]
            out = [func(*args, **kwargs)]
        else:
            out = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)
        report = out[0][0]
        for rep, _ in out[1:]:
            report.merge(rep)
        outcomes: list[StepOutcome] = [o for _, o in out]
        self._path = state
        self.screening_report_ = report
        self._set_model(state, outcomes, lam)
        if self.verbose:
            counts = report.counts
            print(f"[{type(self).__name__}] alpha={self.alpha:.4g}: "
                  f"features screened {counts['features'].n_screened}/"
                  f"{counts['features'].n_variables}, samples fixed "
                  f"{counts['samples'].n_screened}/{counts['samples'].n_variables}, "
                  f"gap {self.dual_gap_.max():.2e}, epochs {int(self.n_iter_.sum())}, "
                  f"{time.perf_counter() - start:.3f}s")
        worst = max(outcomes, key=lambda o: o.gap)
        if not worst.converged:
            warn_user(f"{type(self).__name__}(alpha={self.alpha:.6g}) stopped with duality "
                      f"gap {worst.gap:.3g} > tol={self.tol:g} after {worst.n_iter} "
                      f"epochs (max_iter={self.max_iter}); increase max_iter or tol.",
                      ConvergenceWarning)
        self._end_fit()
        return self

    def _seeds(self, n: int) -> np.ndarray:
        rs = 0 if self.random_state is None else self.random_state
        if isinstance(rs, numbers.Integral) and n == 1:
            return np.array([int(rs)])
        return check_random_state(rs).randint(np.iinfo(np.int32).max, size=n)

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
        # the encoding (np.unique, ~4 ms on 20,000 labels) follows from the validated
        # content: along a warm-started path it is done once
        key = digest
        if key is None and self.warm_start and y.dtype.kind in "biuf":
            key = data_fingerprint(y)  # (sparse X is not memoised; y alone is cheap)
        cached = self.__dict__.get("_label_cache")
        if key is not None and cached is not None and cached[0] == key:
            encoded = cached[1]
        else:
            encoded = self._encode(y)
            self._label_cache = (key, encoded)
        targets, cw = self._targets(*encoded)
        weights = sw * cw
        if not np.any(weights > 0):
            raise ValueError("all sample weights are zero: there is nothing to fit")
        content = (digest,) if digest is not None else (X, y, sw)
        return X, targets, weights, content

    def _design(self, X, keep):
        """The samples of positive weight, with the intercept column; the memory needed
        is checked first."""
        n, d = X.shape
        if sp.issparse(X):
            need = 3 * 12.0 * (X.nnz + n)  # the CSC copy, squares, one reduced copy
        else:
            need = 3 * 8.0 * n * (d + 1)  # Fortran copy, squares, one reduced copy
        check_memory(need, f"{type(self).__name__} on X of shape {X.shape}",
                     "use a sparse matrix or fewer samples or features", MEMORY_FRACTION)
        Xk = X[keep] if not keep.all() else X
        if self.fit_intercept:
            col = np.full((Xk.shape[0], 1), float(self.intercept_scaling))
            Xk = sp.hstack([Xk, sp.csr_matrix(col)], format="csc") if sp.issparse(Xk) \
                else np.hstack([Xk, col])
        return Xk

    def _make_paths(self, X, targets, weights):
        keep = weights > 0
        Xk = self._design(X, keep)
        c = weights[keep] / weights[keep].mean()
        paths = []
        for name, y_task in self._tasks(targets[keep]):
            data = DoublySparseData(Xk, y_task, c, self._loss, float(self.smoothing),
                                    float(getattr(self, "epsilon", 0.0)))
            Xk = data.X  # converted once, shared by the tasks
            paths.append(DoublySparsePath(data, name))
        return paths, keep

    def _critical_value(self, X, y, sample_weight=None) -> float:
        """``alpha_max``: the smallest ``alpha`` at which ``coef_`` is zero (the
        largest over one-vs-rest tasks)."""
        self._validate_params()
        self._penalty()  # a clear error for l1_ratio at 0 or 1
        X, targets, weights, _ = self._inputs(X, y, sample_weight)
        paths, _ = self._make_paths(X, targets, weights)
        return max(p.lam_max for p in paths) / float(self.l1_ratio)

    def _set_model(self, state: _PathState, outcomes, lam) -> None:
        d = self.n_features_in_
        W = np.vstack([o.w for o in outcomes])
        n = state.keep.size
        dual = np.zeros((len(outcomes), n))
        dual[:, state.keep] = np.vstack([o.alpha for o in outcomes])
        self.dual_coef_ = dual
        self.n_iter_ = np.array([o.n_iter for o in outcomes], dtype=np.int64)
        self.dual_gap_ = np.array([o.gap for o in outcomes])
        self.alpha_max_ = max(p.lam_max for p in state.paths) / float(self.l1_ratio)
        coef = W[:, :d]
        intercept = W[:, d] * self.intercept_scaling if self.fit_intercept \
            else np.zeros(len(outcomes))
        self._store_coef(coef, intercept)

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=np.float64,
                          reset=False)
        return np.asarray(X @ np.atleast_2d(self.coef_).T) + self.intercept_

    # subclasses
    def _encode(self, y) -> tuple:
        """The checked targets (and classes), a function of ``y`` only (memoised)."""
        raise NotImplementedError  # pragma: no cover

    def _targets(self, *encoded):
        """``(targets, per-sample weight factors)`` from :meth:`_encode`'s output."""
        raise NotImplementedError  # pragma: no cover

    def _tasks(self, targets):
        raise NotImplementedError  # pragma: no cover

    def _store_coef(self, coef, intercept):
        raise NotImplementedError  # pragma: no cover


def _fit_path(path: DoublySparsePath, lam, beta, *, rule, tol, max_iter, seed, describe,
              value):
    d, n = path.data.n_features, path.data.n_samples
    report = ScreeningReport(variables={"features": d, "samples": n})
    out = path.fit(lam, beta, rule=rule, tol=tol, max_iter=max_iter,
                   rng=np.random.RandomState(seed), report=report, describe=describe,
                   value=value)
    return report, out


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
        The paper's 1e-9 is reachable.
    max_iter : int, default=10000
        Maximum coordinate-descent epochs per solve.
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference (how to walk a path by hand; see :func:`doubly_sparse_path`).
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


class SafeDoublySparseSVC(ClassifierMixin, _BaseDoublySparse):
    __doc__ = r"""Elastic-net smoothed-hinge SVM with simultaneous safe screening of features
    and samples.

    Solves

    .. math::

        \min_w\ \alpha\rho\|w\|_1 + \frac{\alpha(1-\rho)}2\|w\|^2
        + \frac1n\sum_i c_i\,h_\gamma(1 - y_i w^\top x_i),

    with the smoothed hinge :math:`h_\gamma(z) = 0` (:math:`z\le0`),
    :math:`z^2/(2\gamma)` (:math:`0<z<\gamma`), :math:`z-\gamma/2` (beyond). The solution
    is sparse in the features (:math:`w_j = 0`) and in the samples (:math:`\alpha_i = 0`
    for margins above 1, :math:`\alpha_i = c_i y_i` below :math:`1-\gamma`). Safe rules
    (Shibagaki et al. 2016) prove both kinds of zeros from gap balls around any
    primal-dual pair, each kind tightening the other's rule, and the solver works on
    what is left. Every fit certifies its answer on the full problem.
    Multiclass problems are solved one-vs-rest.

    Parameters
    ----------""" + _DOC_PARAMS + """    class_weight : dict or "balanced", default=None
        Multiplies the loss of each class's samples (then rescaled with
        ``sample_weight``); the rules are those of the weighted problem.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)""" + _DOC_ATTRS + """
    See Also
    --------
    sklearn.svm.LinearSVC : L1-penalised squared hinge (``penalty="l1"``), no screening.
    sklearn.linear_model.SGDClassifier : elastic net by stochastic gradient.

    References
    ----------
    A. Shibagaki, M. Karasuyama, K. Hatano, I. Takeuchi. Simultaneous safe screening of
    features and samples in doubly sparse modeling. ICML 2016.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import SafeDoublySparseSVC
    >>> X, y = make_classification(n_features=50, n_informative=5, random_state=0)
    >>> clf = SafeDoublySparseSVC(alpha=0.2).fit(X, y)
    >>> int((clf.coef_ != 0).sum()), round(clf.score(X, y), 2)
    (8, 0.85)
    """

    _parameter_constraints: dict = {
        **_BaseDoublySparse._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }
    _loss = HINGE

    def __init__(self, alpha=0.01, *, l1_ratio=0.5, smoothing=0.5, fit_intercept=True,
                 intercept_scaling=1.0, screening="simultaneous", tol=1e-6,
                 max_iter=10000, warm_start=False, class_weight=None, verbose=0,
                 random_state=None, n_jobs=None):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.smoothing = smoothing
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

    def _encode(self, y):
        check_classification_targets(y)
        encoder = LabelEncoder()
        return encoder.fit_transform(y), encoder.classes_

    def _targets(self, y_ind, classes):
        self.classes_ = classes
        if self.classes_.size < 2:
            raise ValueError("The number of classes has to be greater than one; got "
                             f"{self.classes_.size} class")
        cw = class_weights(self.class_weight, self.classes_, y_ind)
        return y_ind, (cw[y_ind] if cw is not None else 1.0)

    def _tasks(self, targets):
        k = self.classes_.size
        tasks = [1] if k == 2 else list(range(k))
        for t in tasks:
            yield (str(self.classes_[t]) if k > 2 else ""), np.where(targets == t, 1.0,
                                                                     -1.0)

    def _store_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept

    def decision_function(self, X):
        """:math:`w^\\top x + b` per one-vs-rest task.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        scores = self._scores(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels (the sign of the score, or the best one-vs-rest score).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]


class SafeDoublySparseSVR(RegressorMixin, _BaseDoublySparse):
    __doc__ = r"""Elastic-net smoothed :math:`\varepsilon`-insensitive regression with
    simultaneous safe screening of features and samples.

    Solves

    .. math::

        \min_w\ \alpha\rho\|w\|_1 + \frac{\alpha(1-\rho)}2\|w\|^2
        + \frac1n\sum_i c_i\,h_\gamma(|w^\top x_i - y_i| - \varepsilon),

    sparse in the features and in the samples (:math:`\alpha_i = 0` inside the tube,
    :math:`\alpha_i = \pm c_i` more than :math:`\varepsilon + \gamma` away from it);
    safe rules (Shibagaki et al. 2016) prove both kinds of zeros during the fit.

    Parameters
    ----------""" + _DOC_PARAMS + """    epsilon : float, default=0.1
        Half-width of the insensitive tube (>= 0).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : ndarray of shape (1,)""" + _DOC_ATTRS + """
    See Also
    --------
    sklearn.svm.LinearSVR : the epsilon-insensitive loss with an L2 penalty.

    References
    ----------
    A. Shibagaki, M. Karasuyama, K. Hatano, I. Takeuchi. Simultaneous safe screening of
    features and samples in doubly sparse modeling. ICML 2016.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_safescreen import SafeDoublySparseSVR
    >>> X, y = make_regression(n_features=30, n_informative=3, noise=1, random_state=0)
    >>> reg = SafeDoublySparseSVR(alpha=0.1, epsilon=1.0).fit(X, y / y.std())
    >>> bool((reg.coef_ == 0).mean() > 0.5)
    True
    """

    _parameter_constraints: dict = {
        **_BaseDoublySparse._parameter_constraints,
        "epsilon": [Interval(numbers.Real, 0.0, None, closed="left")],
    }
    _loss = EPSILON_INSENSITIVE

    def __init__(self, alpha=0.01, *, l1_ratio=0.5, smoothing=0.5, epsilon=0.1,
                 fit_intercept=True, intercept_scaling=1.0, screening="simultaneous",
                 tol=1e-6, max_iter=10000, warm_start=False, verbose=0,
                 random_state=None, n_jobs=None):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.smoothing = smoothing
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.screening = screening
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _encode(self, y):
        y = np.asarray(y, dtype=np.float64)
        check_magnitude(y, "y", MAX_ENTRY, "margins square them")
        return (y,)

    def _targets(self, y):
        return y, 1.0

    def _tasks(self, targets):
        yield "", targets

    def _store_coef(self, coef, intercept):
        self.coef_ = coef[0]
        self.intercept_ = intercept[:1]

    def predict(self, X):
        """:math:`w^\\top x + b`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._scores(X).ravel()


def doubly_sparse_path(X, y, *, estimator=None, alphas=None, n_alphas=100, eps=1e-3,
                       sample_weight=None):
    """Fit a doubly sparse model along a path of ``alpha`` (like
    :func:`~sklearn.linear_model.enet_path`), each solution screening the next.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    estimator : SafeDoublySparseSVC or SafeDoublySparseSVR, default=None
        Its parameters other than ``alpha`` define the problem (default:
        ``SafeDoublySparseSVC()``); it is cloned.
    alphas : array-like, default=None
        The values, fitted from the largest; default ``n_alphas`` values spaced
        geometrically from ``alpha_max_`` down to ``eps * alpha_max_``.
    n_alphas : int, default=100
    eps : float, default=1e-3
    sample_weight : array-like of shape (n_samples,), default=None

    Returns
    -------
    alphas : ndarray of shape (n_alphas,)
        Decreasing.
    coefs : ndarray of shape ``coef_.shape + (n_alphas,)``
        ``coef_`` at each value: (n_features, n_alphas) for the regressor,
        (1, n_features, n_alphas) for two classes, (n_classes, n_features, n_alphas)
        one-vs-rest.
    dual_gaps : ndarray of shape (n_alphas,)
        The largest certified duality gap over tasks at each value.
    reports : list of ScreeningReport
        Each fit's ``screening_report_``.
    """
    from sklearn.base import clone

    est = clone(SafeDoublySparseSVC() if estimator is None else estimator)
    if alphas is None:
        top = est._critical_value(X, y, sample_weight)
        alphas = top * np.geomspace(1.0, eps, n_alphas)
    alphas = np.sort(np.asarray(alphas, dtype=float))[::-1]
    est.set_params(warm_start=True)
    coefs, gaps, reports = [], [], []
    for a in alphas:
        est.set_params(alpha=float(a))
        est.fit(X, y, sample_weight=sample_weight)
        coefs.append(np.array(est.coef_))
        gaps.append(float(est.dual_gap_.max()))
        reports.append(est.screening_report_)
    return alphas, np.stack(coefs, axis=-1), np.array(gaps), reports
