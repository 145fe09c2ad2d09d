r"""The metric learner's interface beyond its fit: metric-learn's Mahalanobis API, and
the deprecated spellings of its parameters.

:class:`MahalanobisMixin` follows metric-learn's mixin of that name
(``metric_learn.base_metric.MahalanobisMixin``, metric-learn 0.7.0; the tests check
the same definitions against it): the model is ``components_``, :math:`L`, and the
metric :math:`M = L^\top L`, :meth:`transform`, the pair distances and the metric
function all derive from it, so that a user who assigns ``components_`` (as
metric-learn's users do) changes them all. :class:`DeprecatedSpellingsMixin` reads
the deprecated spellings of the parameters as the current ones, with a
``FutureWarning``; it goes in 0.3.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._utils.warnings import warn_user
from .problems.triplet_problem import metric_and_components


class _Components:
    r"""``components_``, the one stored model :math:`L`: the array a full fit (or a
    user, as in metric-learn) assigns, or for a diagonal fit
    :math:`\operatorname{diag}(\sqrt w)` built from its learned diagonal :math:`w` when
    read. Assigning it replaces a diagonal fit's :math:`w`, so that nothing else
    describes the model.

    A d x d matrix costs O(d^2) to build, more than a whole fit along a path of such a
    set, whose intermediate fits are rarely read. It is not kept: reading a fitted
    attribute must not change the instance."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        state = obj.__dict__
        if "components_" in state:
            return state["components_"]
        w = state.get("_metric_diagonal")
        if w is None:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute "
                                 "'components_'")
        return np.diag(np.sqrt(w))

    def __set__(self, obj, value):
        obj.__dict__.pop("_metric_diagonal", None)
        obj.__dict__["components_"] = value


class _FromComponents:
    r"""``metric_``, derived from the model: :math:`M = L^\top L` with :math:`L` =
    ``components_`` (metric-learn's definition), or :math:`\operatorname{diag}(w)` of
    a diagonal fit's learned :math:`w`. Assigning ``components_`` therefore changes
    ``metric_`` and every method with it; assigning ``metric_`` is refused (a matrix
    M has many factors L, and ``transform`` needs one)."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        state = obj.__dict__
        if "_metric_diagonal" in state:
            return np.diag(state["_metric_diagonal"])
        if "components_" not in state:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute "
                                 "'metric_'")
        L = np.asarray(state["components_"], dtype=np.float64)
        return L.T @ L

    def __set__(self, obj, value):
        raise AttributeError("metric_ is derived from components_ (metric_ = "
                             "components_.T @ components_): assign components_ instead")


class MahalanobisMixin(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    """A Mahalanobis metric learner's fitted model and metric-learn's methods on it.

    The estimator's fit calls :meth:`_store_model` with its solution; everything
    else reads ``components_`` (or, for a diagonal fit, its diagonal). A
    :class:`~sklearn.base.TransformerMixin` itself, so that ``set_output`` wraps the
    :meth:`transform` defined here.
    """

    # the model is ``components_`` (a full fit stores it, a diagonal fit its diagonal);
    # ``metric_`` derives from it
    components_ = _Components()
    metric_ = _FromComponents()

    @property
    def _n_features_out(self) -> int:
        """Columns of :meth:`transform` (``get_feature_names_out`` names them
        ``safemetriclearner0``, ``safemetriclearner1``, ...)."""
        return self.components_.shape[0]

    def _store_model(self, M: np.ndarray, diagonal: bool) -> None:
        """Keep a fit's solution ``M`` (a diagonal fit's: its diagonal) as the model:
        its factor :math:`L`, or the non-negative diagonal :math:`w` itself."""
        self.__dict__.pop("components_", None)
        if diagonal:
            self._metric_diagonal = np.maximum(M, 0.0)
        else:
            self.components_ = metric_and_components(M)[1]

    def _difference_map(self) -> Callable[[np.ndarray], np.ndarray]:
        """``D -> D L^T`` for rows of differences, with a copy of the model's :math:`L`
        (a diagonal fit's square roots, O(d), instead of its d x d matrix)."""
        w = self.__dict__.get("_metric_diagonal")
        if w is not None:
            scale = np.sqrt(w)
            return lambda D: D * scale
        L_T = np.array(self.components_, dtype=np.float64).T
        return lambda D: D @ L_T

    def transform(self, X) -> np.ndarray:
        """Map X by L (``M = L'L``): Euclidean distances of the output are the learned
        Mahalanobis distances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            float32 for float32 input (as scikit-learn's transformers preserve it),
            float64 otherwise.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=(np.float64, np.float32), reset=False)
        return X @ self.components_.T.astype(X.dtype, copy=False)

    def get_mahalanobis_matrix(self) -> np.ndarray:
        r"""The learned matrix :math:`M = L^\top L` of ``components_``, a new array
        (metric-learn's ``MahalanobisMixin`` interface).

        Returns
        -------
        M : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self)
        return self.metric_

    def get_metric(self) -> Callable[..., float]:
        r"""A function ``(u, v, squared=False) -> d_M(u, v)``, usable as a ``metric`` for
        scipy and scikit-learn (e.g. ``KNeighborsClassifier(metric=...)``); it keeps a
        copy of ``components_``, so a later fit does not change it.

        Returns
        -------
        metric_fun : callable
            ``metric_fun(u, v, squared=False)`` for two 1-D vectors (squeezed, as scipy
            does); ``squared=True`` returns :math:`d_M^2 = \|L(u-v)\|^2`.
        """
        check_is_fitted(self)
        mapped = self._difference_map()

        def metric_fun(u, v, squared=False):
            t = mapped(_vector(u) - _vector(v))
            val = float(t @ t)
            return val if squared else np.sqrt(val)

        return metric_fun

    def pair_distance(self, pairs) -> np.ndarray:
        r"""Learned distances :math:`d_M(x, x') = \|L(x-x')\|` of pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self)
        pairs = np.asarray(pairs, dtype=np.float64)
        if pairs.ndim != 3 or pairs.shape[1] != 2 or pairs.shape[2] != self.n_features_in_:
            raise ValueError("pairs must have shape (n_pairs, 2, n_features="
                             f"{self.n_features_in_}); got {pairs.shape}")
        t = self._difference_map()(pairs[:, 0] - pairs[:, 1])
        return np.sqrt(np.einsum("ij,ij->i", t, t))

    def pair_score(self, pairs) -> np.ndarray:
        """Similarity scores of pairs: the opposite of :meth:`pair_distance`.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)


def _vector(u) -> np.ndarray:
    """``u`` as a 1-D float vector (squeezed), as scipy's distances take it."""
    u = np.atleast_1d(np.asarray(u, dtype=np.float64).squeeze())
    if u.ndim > 1:
        raise ValueError(f"a vector must be 1-D; got shape {u.shape}")
    return u


class DeprecatedSpellingsMixin:
    """The metric learner's deprecated parameter spellings (``bound``, a boolean
    ``screening``, ``random_state``), each read with a ``FutureWarning``; removed in
    0.3."""

    def _screening_ball(self) -> str | None:
        """The ball of ``screening``, through the deprecated spellings (boolean
        ``screening``, ``bound``) with a FutureWarning."""
        screening, bound = self.screening, self.bound
        if bound != "deprecated":
            warn_user("SafeMetricLearner(bound=...) is deprecated and will be removed in "
                      f"0.3: pass screening={bound!r} instead.", FutureWarning)
        if isinstance(screening, bool | np.bool_):
            warn_user(f"SafeMetricLearner(screening={screening}) is deprecated and will be "
                      "removed in 0.3: pass the ball (e.g. screening='rrpb+pgb') or "
                      "screening=None.", FutureWarning)
            return (bound if bound != "deprecated" else "rrpb+pgb") if screening else None
        if bound != "deprecated" and screening == "rrpb+pgb":
            return bound
        return screening

    def _warn_unused_random_state(self) -> None:
        if self.random_state != "deprecated":
            warn_user("SafeMetricLearner(random_state=...) is deprecated and will be "
                      "removed in 0.3: it has no effect (the fit is deterministic).",
                      FutureWarning)
