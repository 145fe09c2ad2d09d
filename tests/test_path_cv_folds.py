"""RegularizationPathCV: each fold walks its own clone of the estimator.

A fold's path is a warm-started estimator refitted at every value; two folds sharing
one estimator would hand each other their warm-start state (on threads, at the same
time) and leave ``warm_start=True`` on the estimator the search refits.
"""

from __future__ import annotations

import threading

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import KFold

from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.svm import SafeSVC


class _RecordingSVC(SafeSVC):
    """SafeSVC recording the instance of every fit (the instances kept alive, so that
    their ids stay distinct)."""

    fits: list = []
    _lock = threading.Lock()

    def fit(self, X, y, sample_weight=None):
        with self._lock:
            _RecordingSVC.fits.append(self)
        return super().fit(X, y, sample_weight=sample_weight)


def _data():
    return make_classification(120, 5, n_informative=3, n_redundant=0, flip_y=0.1,
                               random_state=0)


def test_each_fold_walks_its_own_clone():
    X, y = _data()
    _RecordingSVC.fits = []
    estimator = _RecordingSVC(kernel="linear", tol=1e-8)
    values = [0.01, 0.1, 1.0]
    search = RegularizationPathCV(estimator, values=values, cv=3).fit(X, y)
    folds = _RecordingSVC.fits[:-1]  # the last fit is the refit of the best value
    instances = {id(e): e for e in folds}
    assert len(instances) == 3  # one instance per fold, refitted at every value
    assert all(sum(f is e for f in folds) == len(values) for e in instances.values())
    assert estimator not in instances.values() and search.best_estimator_ not in folds
    _RecordingSVC.fits = []


def test_the_refitted_estimator_keeps_the_users_parameters():
    """The folds' warm start is theirs: the best estimator is refitted with the
    parameters the user gave (``warm_start=False``: no path state kept) and equals a
    fresh fit at the best value."""
    X, y = _data()
    search = RegularizationPathCV(SafeSVC(kernel="linear", tol=1e-10),
                                  values=[0.01, 0.1, 1.0], cv=KFold(3)).fit(X, y)
    best = search.best_estimator_
    assert best.get_params()["warm_start"] is False
    assert "_path" not in best.__dict__
    assert search.estimator.get_params()["warm_start"] is False
    fresh = SafeSVC(kernel="linear", tol=1e-10, C=search.best_params_["C"]).fit(X, y)
    np.testing.assert_allclose(best.decision_function(X), fresh.decision_function(X),
                               atol=1e-6)


def test_parallel_folds_give_the_sequential_scores():
    """Folds on two threads at once: the same scores as one after the other."""
    X, y = _data()
    params = dict(values=np.geomspace(0.01, 10.0, 8), cv=4)
    seq = RegularizationPathCV(SafeSVC(kernel="linear", tol=1e-10), **params).fit(X, y)
    par = RegularizationPathCV(SafeSVC(kernel="linear", tol=1e-10), n_jobs=2,
                               **params).fit(X, y)
    for s in range(4):
        key = f"split{s}_test_score"
        np.testing.assert_array_equal(par.cv_results_[key], seq.cv_results_[key])
    assert par.best_params_ == seq.best_params_
