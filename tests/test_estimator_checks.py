"""scikit-learn API conformance of SafeSVC (check_estimator through pytest)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_safescreen import SafeSVC


@parametrize_with_checks([SafeSVC(), SafeSVC(kernel="linear")])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
