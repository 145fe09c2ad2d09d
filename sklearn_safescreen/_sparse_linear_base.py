"""What the linear models with a dual over the samples share: the doubly sparse SVC/SVR
and SafeLPSVC.

Each fits ``alpha``-regularised linear models (``coef_``, ``intercept_``) on dense or
sparse ``X``, solves on the samples of positive weight with the intercept as a last,
penalised column, and keeps the dual solution (``dual_coef_``) on the fitted estimator
but out of its pickle.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context

from ._utils.limits import MEMORY_FRACTION
from ._utils.memory import check_memory
from .base import LinearModelMixin, PathState, SafeEstimator, limit_blas_threads
from .problems.lp_svm import add_intercept_column


class SparseLinearEstimator(LinearModelMixin, SafeEstimator):
    """The fit wrapper, the design matrix, the fitted attributes and the pickle of the
    linear models whose engine paths solve on the samples of positive weight.

    A family says how many copies of the design matrix its solver makes
    (:attr:`_design_copies`), and what its ``verbose`` line calls its gap and
    iterations (:attr:`_summary_words`).
    """

    _path_increasing = False  # larger alpha = more regularised
    _path_state = (*SafeEstimator._path_state, "_label_cache")
    #: working copies of the design matrix the solver makes, sparse and dense (the
    #: memory estimate)
    _design_copies = (3, 3)
    #: how the ``verbose`` line names the gap and the iterations
    _summary_words = ("absolute gap", "epochs")
    #: the dual solution: kept on the fitted estimator, not pickled (its size grows with
    #: the number of samples; the model is ``coef_`` and ``intercept_``)
    _DUAL = ("dual_coef_",)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    @limit_blas_threads
    def fit(self, X, y, sample_weight=None):
        """Fit the model at ``alpha``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input (CSR or CSC) is never densified.
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings; classifiers) or real targets (regressors).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the samples' losses.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        return self._fit(X, y, sample_weight=sample_weight)

    def _design(self, X, keep: np.ndarray):
        """The samples of positive weight (``keep``), with the intercept column; the
        memory its copies need is checked first."""
        n, d = X.shape
        sparse_copies, dense_copies = self._design_copies
        need = (sparse_copies * 12.0 * (X.nnz + n) if sp.issparse(X)
                else dense_copies * 8.0 * n * (d + 1))
        check_memory(need, f"{type(self).__name__} on X of shape {X.shape}",
                     "use a sparse matrix or fewer samples or features", MEMORY_FRACTION)
        Xk = X[keep] if not keep.all() else X
        if self.fit_intercept:
            Xk = add_intercept_column(Xk, self.intercept_scaling)
        return Xk

    def _set_solution(self, state: PathState, outcomes, gaps) -> tuple:
        """``dual_coef_`` (zero for the samples of zero weight), ``n_iter_``,
        ``dual_gap_`` (``gaps``) and ``alpha_max_`` from the tasks' outcomes; returns
        ``(coef, intercept)``."""
        d = self.n_features_in_
        W = np.vstack([o.reference.w for o in outcomes])
        keep = state.extra
        dual = np.zeros((len(outcomes), keep.size))
        dual[:, keep] = np.vstack([o.reference.alpha for o in outcomes])
        self.dual_coef_ = dual
        self.n_iter_ = np.array([o.n_iter for o in outcomes], dtype=np.int64)
        self.dual_gap_ = np.asarray(gaps, dtype=np.float64)
        self.alpha_max_ = self._critical_from(state)
        intercept = (W[:, d] * self.intercept_scaling if self.fit_intercept
                     else np.zeros(len(outcomes)))
        return W[:, :d], intercept

    def _summary(self, state: PathState, outcomes, report, elapsed: float) -> str:
        f, s = report.counts["features"], report.counts["samples"]
        gap, iterations = self._summary_words
        return (f"alpha={self.alpha:.4g}: features screened {f.n_screened}/"
                f"{f.n_variables}, samples fixed {s.n_screened}/{s.n_variables}, "
                f"{gap} {self.dual_gap_.max():.2e}, {iterations} "
                f"{int(self.n_iter_.sum())}, {elapsed:.3f}s")

    def __getstate__(self):
        state = super().__getstate__()
        for name in self._DUAL:
            state.pop(name, None)
        return state

    def __getattr__(self, name):
        # only reached when the attribute is missing
        if name in self._DUAL and "coef_" in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__} has no {name}: the dual solution is available "
                "after fit but is not pickled (its size grows with the number of "
                "samples); the model is coef_ and intercept_")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
