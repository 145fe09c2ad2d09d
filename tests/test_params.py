"""MemoisedParams: parameter names read once per class, validation of changed
parameters only, with the same errors as scikit-learn's."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_safescreen.lad import SafeLAD
from sklearn_safescreen.metric_learning import SafeMetricLearner
from sklearn_safescreen.svm import SafeSVC


@pytest.mark.parametrize("cls", [SafeSVC, SafeLAD, SafeMetricLearner])
def test_param_names_are_the_constructor_signature(cls):
    from sklearn.base import BaseEstimator

    assert cls._get_param_names() == BaseEstimator._get_param_names.__func__(cls)

    class Sub(cls):
        def __init__(self, extra=1, **kwargs):
            super().__init__(**kwargs)
            self.extra = extra

    assert Sub._get_param_names() == ["extra"]  # (its own signature, not the parent's)


def test_only_changed_parameters_are_validated_and_errors_are_sklearns(monkeypatch):
    import sklearn_safescreen.base as base

    seen = []
    real = base.validate_parameter_constraints

    def spy(constraints, params, caller_name):
        seen.append(sorted(params))
        return real(constraints, params, caller_name)

    monkeypatch.setattr(base, "validate_parameter_constraints", spy)
    ml = SafeMetricLearner(alpha=2.0)
    ml._validate_params()
    assert len(seen[-1]) == len(ml.get_params())  # first time: all
    ml._validate_params()
    assert len(seen) == 1  # nothing changed: nothing validated
    ml.set_params(alpha=3.0)
    ml._validate_params()
    assert seen[-1] == ["alpha"]
    ml.set_params(alpha=3)  # same value, another type: validated again
    ml._validate_params()
    assert seen[-1] == ["alpha"]
    for bad in [-1.0, np.nan, "big"]:
        ml.set_params(alpha=bad)
        with pytest.raises(InvalidParameterError, match="'alpha' parameter"):
            ml._validate_params()
    ml.set_params(alpha=1.0, random_state=np.random.RandomState(0))
    ml._validate_params()
    ml._validate_params()  # an object parameter is validated every time
    assert seen[-1] == ["random_state"]
    ml.set_params(k=0)
    with pytest.raises(InvalidParameterError, match="'k' parameter"):
        ml.fit(np.zeros((4, 2)), [0, 0, 1, 1])
