"""scikit-learn API conformance of SafeSVC and the doubly sparse models
(check_estimator through pytest, default parameters included, nothing expected to
fail; SafeLAD's and SafeMetricLearner's are in their own test files)."""

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


@parametrize_with_checks([SafeDoublySparseSVC(), SafeDoublySparseSVR(),
                          SafeDoublySparseSVC(alpha=1.0, l1_ratio=0.02, tol=1e-15),
                          SafeDoublySparseSVR(alpha=1.0, l1_ratio=0.02, tol=1e-15)])
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
