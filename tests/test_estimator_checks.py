"""scikit-learn API conformance of SafeSVC and the doubly sparse models
(check_estimator through pytest, default parameters included, nothing expected to
fail; SafeLAD's and SafeMetricLearner's are in their own test files)."""

import warnings

import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    check_sample_weight_equivalence_on_sparse_data,
    parametrize_with_checks,
)

from sklearn_safescreen import (
    RegularizationPathCV,
    SafeDoublySparseSVC,
    SafeDoublySparseSVR,
    SafeLPSVC,
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


@pytest.mark.parametrize("estimator", [
    SafeSVC(kernel="linear", class_weight="balanced"),
    SafeSVC(class_weight="balanced"),
    SafeLPSVC(class_weight="balanced"),
    SafeDoublySparseSVC(class_weight="balanced"),
], ids=repr)
@pytest.mark.parametrize("check", [check_sample_weight_equivalence_on_dense_data,
                                   check_sample_weight_equivalence_on_sparse_data],
                         ids=lambda c: c.__name__)
def test_balanced_class_weight_sample_weight_equivalence(estimator, check):
    """scikit-learn's check that integer sample weights equal repeated samples, with
    balanced class weights, which follow each class's total sample weight (they were
    computed from the counts of samples: SafeDoublySparseSVC failed the check)."""
    check(type(estimator).__name__, estimator)
