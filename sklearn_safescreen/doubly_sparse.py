r"""SafeDoublySparseSVC and SafeDoublySparseSVR: elastic-net smoothed SVMs with
simultaneous safe screening of features and samples (Shibagaki et al. 2016).

.. math::

    \min_w\ \alpha\rho\|w\|_1 + \frac{\alpha(1-\rho)}2\|w\|_2^2
    + \frac1n\sum_{i=1}^n c_i\,h(z_i(x_i^\top w)),

with :math:`\rho` = ``l1_ratio``, :math:`h` the smoothed hinge of width ``smoothing``
and :math:`z_i = 1 - y_iw^\top x_i` (classifier) or :math:`|w^\top x_i - y_i| -
\varepsilon` (regressor). The problem, rules, solver and path step are
:mod:`.problems.doubly_sparse`, :mod:`.screening.doubly_sparse`,
:mod:`.solvers.doubly_sparse_cd` and :mod:`.engine.doubly_sparse`, the fit skeleton
:mod:`._doubly_sparse_base` (``doc/theory/doubly_sparse.rst``).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

from ._doubly_sparse_base import _DOC_ATTRS, _DOC_PARAMS, _BaseDoublySparse
from ._utils.limits import MAX_ENTRY
from ._validation import check_magnitude, check_weighted_classes, class_weights
from .base import OneVsRestClassifierMixin, one_vs_rest
from .problems.doubly_sparse import EPSILON_INSENSITIVE, HINGE


class SafeDoublySparseSVC(OneVsRestClassifierMixin, ClassifierMixin, _BaseDoublySparse):
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
        ``"balanced"`` weighs class ``c`` by ``sum(sample_weight) / (n_classes * W_c)``,
        ``W_c`` the total ``sample_weight`` of its samples (without ``sample_weight``:
        ``n_samples / (n_classes * n_c)``, its count), as scikit-learn's
        ``compute_class_weight`` with ``sample_weight``: a fit with an integer
        ``sample_weight`` equals the fit on the samples repeated that many times.

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

    def _targets(self, sample_weight, y_ind, classes):
        self.classes_ = classes
        if self.classes_.size < 2:
            raise ValueError("The number of classes has to be greater than one; got "
                             f"{self.classes_.size} class")
        cw = class_weights(self.class_weight, self.classes_, y_ind, sample_weight)
        weights = sample_weight * (cw[y_ind] if cw is not None else 1.0)
        check_weighted_classes(weights, y_ind, classes)
        return y_ind, weights

    def _tasks(self, targets):
        return one_vs_rest(self.classes_, targets)

    def _store_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = intercept


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

    def _targets(self, sample_weight, y):
        return y, sample_weight.copy()  # (may be the caller's array: never shared)

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
