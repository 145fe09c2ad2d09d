"""What a fit of the metric learner starts from: its validated data, the triplet set
and the engine path on it, and the scale ``alpha`` is read in.

The metric learner's fit (:class:`~sklearn_safescreen.metric_learning.SafeMetricLearner`)
calls these in order: :func:`metric_fit_inputs` validates the data and fingerprints the
problem, :func:`triplet_paths` builds the triplet set and its
:class:`~sklearn_safescreen.engine.triplet.TripletPath` (a cold fit), and
:func:`resolve_alpha` / :func:`check_alpha` read ``alpha`` against the critical value
of that set.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ._utils.fingerprint import data_fingerprint
from ._utils.limits import MAX_ENTRY_FOURTH_POWER
from ._validation import check_magnitude, memoised_validation
from .base import FitInputs, PathState
from .engine.triplet import TripletPath
from .engine.triplet_settings import DEFAULT_OPTIONS, TripletOptions
from .problems.triplets import (
    TripletSet,
    build_triplets,
    resolve_k,
    triplets_from_indices,
)

#: ``alpha="auto"`` is this fraction of ``critical_alpha_``. ``alpha / critical_alpha_`` is
#: invariant to the scale of X and to the number of triplets (both scale lambda_L and the
#: useful values alike). At 1e-2, two decades into the path, standardised iris, wine
#: and breast cancer and digits scaled to [0, 1] converged in 7 to 28 iterations, and the
#: 5-fold 5-NN accuracy on the first three was within 1.3 points of the best fraction of
#: 1e-1 .. 1e-6; below about 1e-5 the iterations grow to thousands.
AUTO_ALPHA_FRACTION = 1e-2
#: Smallest accepted ``alpha / critical_alpha_``. The metric grows like
#: ``critical_alpha_ / alpha`` and the solver squares its entries: on iris the arithmetic
#: overflows (NaN gap) near 1e-160 relative, so 1e-50 leaves a wide margin, far below
#: any useful regularisation (the paper's paths stop near 1e-6).
MIN_RELATIVE_ALPHA = 1e-50


def metric_fit_inputs(estimator, X, y, triplets=None, sample_weight=None) -> FitInputs:
    """The fit's inputs: ``((X, y_ind, k, triplets), fingerprint)``, the validated
    data, the encoded labels, the resolved ``k`` (``None`` with explicit
    ``triplets``) and a content hash of the data.

    Parameters
    ----------
    estimator : SafeMetricLearner
        The estimator being fitted (its ``k``, and its record of the data it has seen:
        ``n_features_in_``, ``feature_names_in_`` and the warm start's memo).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    triplets : array-like of shape (n_triplets, 3) or None, default=None
    sample_weight : None
        Not supported: any other value raises a ``ValueError``.

    Returns
    -------
    inputs : FitInputs
    """
    if sample_weight is not None:
        raise ValueError("SafeMetricLearner does not support sample_weight")
    X, y_ind, k, fingerprint = _validated_problem(estimator, X, y, triplets)
    return FitInputs((X, y_ind, k, triplets), fingerprint)


def _validated_problem(estimator, X, y, triplets):
    """``(X, y_ind, k, fingerprint)``: validated data, encoded labels, resolved ``k``
    and a content hash of the data (data, labels, triplets; the parameters of the
    problem are :func:`~sklearn_safescreen.base.problem_key`'s). With
    ``warm_start``, the same arrays with unchanged content as the previous fit are
    not validated or encoded again
    (:func:`~sklearn_safescreen._validation.memoised_validation`; a path step)."""

    def validate():
        Xv, yv = validate_data(estimator, X, y, dtype=np.float64, order="C")
        check_magnitude(Xv, "X", MAX_ENTRY_FOURTH_POWER,
                        "triplet values are differences of squared distances and the "
                        "solver squares those (fourth powers of the entries)")
        check_classification_targets(yv)
        return Xv, yv

    (X, y), digest = memoised_validation(estimator, (X, y), validate)
    key = (digest, estimator.k) if digest is not None and triplets is None else None
    cached = getattr(estimator, "_problem_cache", None)
    if key is not None and cached is not None and cached[0] == key:
        return (X, *cached[1])
    classes, y_ind = np.unique(y, return_inverse=True)
    # (an explicit k too large for a class raises here)
    k = None if triplets is not None else resolve_k(y, estimator.k)
    content = (digest,) if digest is not None else (X, y_ind)
    fingerprint = data_fingerprint(
        *content, None if triplets is None else np.asarray(triplets),
        repr(classes.tolist()), str(classes.dtype))
    estimator._problem_cache = (key, (y_ind, k, fingerprint))
    return X, y_ind, k, fingerprint


def triplet_set(X: np.ndarray, y_ind: np.ndarray, k: int | None, triplets,
                diagonal: bool) -> TripletSet:
    """The triplet set of a fit: the ``k``-nearest-neighbour triplets of the encoded
    labels ``y_ind`` (all of them for ``k=None``), or the explicit index
    ``triplets``."""
    return (build_triplets(X, y_ind, k, diagonal) if triplets is None
            else triplets_from_indices(X, triplets, diagonal))


def triplet_paths(inputs: FitInputs, gamma: float, diagonal: bool,
                  options: TripletOptions = DEFAULT_OPTIONS) -> PathState:
    """The fit's one engine path (metric learning has one problem): the triplet set of
    ``inputs`` (:func:`metric_fit_inputs`) and its closed form, walked with the tuning
    values ``options``."""
    X, y_ind, k, triplets = inputs.data
    path = TripletPath(triplet_set(X, y_ind, k, triplets, diagonal), gamma, diagonal,
                       options)
    return PathState(inputs.fingerprint, [path])


def resolve_alpha(alpha, critical: float) -> float:
    """The ``alpha`` a fit uses: ``alpha``, or :data:`AUTO_ALPHA_FRACTION` times the
    critical value for ``"auto"`` (the only string the parameter checks allow)."""
    return AUTO_ALPHA_FRACTION * critical if isinstance(alpha, str) else float(alpha)


def check_alpha(alpha: float, critical: float, separable: bool) -> None:
    """Refuse, before any work, an ``alpha`` so far below the critical value that the
    metric, of order ``critical / alpha``, would overflow the solver's arithmetic
    (below :data:`MIN_RELATIVE_ALPHA` times it; without a separating direction the
    metric is 0 whatever ``alpha``)."""
    if alpha < MIN_RELATIVE_ALPHA * critical and separable:
        raise ValueError(
            f"alpha={alpha:.3g} is below {MIN_RELATIVE_ALPHA:g} x critical_alpha_ "
            f"(the closed-form threshold lambda_L={critical:.6g} of these triplets): "
            f"the metric would be of order lambda_L/alpha={critical / alpha:.1e} and "
            "the solver's arithmetic would overflow; use alpha >= "
            f"{MIN_RELATIVE_ALPHA * critical:.3g}.")
