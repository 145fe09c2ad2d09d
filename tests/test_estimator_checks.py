"""scikit-learn API conformance of SafeSVC and the doubly sparse models
(check_estimator through pytest)."""

import warnings

from sklearn.exceptions import FitFailedWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen import (
    RegularizationPathCV,
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    SafeSVC,
)


@parametrize_with_checks([SafeSVC(), SafeSVC(kernel="linear")])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _loose_weight_equivalence(estimator):
    """``tol`` is an absolute duality gap, which bounds ``|w - w*|`` by
    ``sqrt(2 tol / (alpha (1 - l1_ratio)))``: at the default ``alpha`` even a gap at the
    floating-point floor (~1e-16) leaves ~2e-7, above the rtol 1e-7 at which the
    sample-weight equivalence checks compare decision functions. They are run on the
    better conditioned instances (weight 2 == a repeated sample is also tested within
    the gap radius in tests/test_doubly_sparse.py)."""
    if estimator.alpha * (1 - estimator.l1_ratio) >= 0.5:
        return {}
    reason = "duality-gap accuracy below the check's rtol at this alpha (see above)"
    return {"check_sample_weight_equivalence_on_dense_data": reason,
            "check_sample_weight_equivalence_on_sparse_data": reason}


@parametrize_with_checks([SafeDoublySparseSVC(tol=1e-10), SafeDoublySparseSVR(tol=1e-10),
                          SafeDoublySparseSVC(alpha=1.0, l1_ratio=0.02, tol=1e-15),
                          SafeDoublySparseSVR(alpha=1.0, l1_ratio=0.02, tol=1e-15)],
                         expected_failed_checks=_loose_weight_equivalence,
                         xfail_strict=False)
def test_sklearn_compatible_doubly_sparse(estimator, check):
    check(estimator)


@parametrize_with_checks([RegularizationPathCV(SafeSVC(kernel="linear"), values=[0.1, 1.0],
                                               cv=2)])
def test_sklearn_compatible_path_search_default_random_state(estimator, check):
    """The search over a SafeSVC left at random_state=None: the checks compare repeated
    fits (e.g. on a list and on an array of the same data), which must give the same
    predictions, including at decision values of exactly 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        check(estimator)
