"""RegularizationPathCV folds distributed through joblib: the loky backend (processes on
this machine) and a real dask.distributed LocalCluster (joblib's "dask" backend).

Oracle: the sequential search (n_jobs=1), which must give identical cv_results_ scores
and best_params_ (the same fits, only run elsewhere).
"""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.svm import SafeSVC

TIGHT = dict(kernel="linear", tol=1e-10, max_iter=200000, random_state=0)


@pytest.fixture(scope="module")
def problem():
    X, y = make_classification(n_samples=240, n_features=6, n_informative=4,
                               n_redundant=0, flip_y=0.1, random_state=0)
    search = RegularizationPathCV(make_pipeline(StandardScaler(), SafeSVC(**TIGHT)),
                                  n_values=6, cv=4)
    sequential = RegularizationPathCV(**search.get_params(deep=False)).fit(X, y)
    return X, y, search, sequential


def assert_same(a, b):
    np.testing.assert_allclose(a.cv_results_["mean_test_score"],
                               b.cv_results_["mean_test_score"], atol=1e-6)
    np.testing.assert_allclose(a.cv_results_["mean_screening_rate"],
                               b.cv_results_["mean_screening_rate"], atol=1e-12)
    assert a.best_params_ == b.best_params_
    assert len(a.path_reports_) == 4
    assert all(r.n_variables > 0 for fold in a.path_reports_ for r in fold)


def test_threads_by_default(problem):
    """n_jobs=2 walks the folds on threads (the solvers release the GIL)."""
    import threading

    X, y, search, sequential = problem
    seen = set()
    real_fit = SafeSVC.fit

    def spy(self, *args, **kwargs):
        seen.add(threading.get_ident())
        return real_fit(self, *args, **kwargs)

    SafeSVC.fit = spy
    try:
        fitted = search.set_params(n_jobs=2).fit(X, y)
    finally:
        SafeSVC.fit = real_fit
    assert len(seen) >= 2  # (and in this process: threads, not workers)
    assert_same(fitted, sequential)


def test_loky_processes(problem):
    X, y, search, sequential = problem
    with parallel_backend("loky"):
        assert_same(search.set_params(n_jobs=2).fit(X, y), sequential)


def test_dask_local_cluster(problem):
    distributed = pytest.importorskip("distributed")
    X, y, search, sequential = problem
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream, parallel_backend("dask"):
            fitted = search.set_params(n_jobs=-1).fit(X, y)
        # the folds really ran as tasks on the cluster's workers (joblib may batch
        # several folds into one task)
        workers = set(client.scheduler_info()["workers"])
        ran = [t for t in stream.data if t["worker"] in workers]
        assert ran, "no task ran on the dask cluster"
        print(f"{len(ran)} dask task(s) on {len({t['worker'] for t in ran})} worker(s)")
    assert_same(fitted, sequential)
