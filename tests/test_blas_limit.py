"""Fits run with one BLAS thread and give every BLAS library its setting back."""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from sklearn_safescreen import SafeSVC


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_a_fit_runs_on_one_blas_thread_and_restores_the_setting():
    seen = []

    def kernel(A, B):  # called inside fit
        seen.append(_blas_threads())
        return A @ B.T

    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = (X[:, 0] > 0).astype(int)
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        SafeSVC(kernel=kernel, C=1.0).fit(X, y)
        assert _blas_threads() == before
    assert seen and all(t == 1 for threads in seen for t in threads)


def test_folds_on_threads_run_on_one_blas_thread():
    """RegularizationPathCV walks folds on worker threads, where OpenBLAS ignores a limit
    set from the thread itself: the search sets it in the calling thread, so every fit
    sees one BLAS thread, and the setting comes back afterwards."""
    from sklearn_safescreen import RegularizationPathCV

    seen = []

    def kernel(A, B):
        seen.append((threading.current_thread() is threading.main_thread(),
                     _blas_threads()))
        return A @ B.T

    rng = np.random.RandomState(0)
    X = rng.randn(80, 3)
    y = (X[:, 0] + 0.3 * rng.randn(80) > 0).astype(int)
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        RegularizationPathCV(SafeSVC(kernel=kernel), values=[0.1, 1.0], cv=2,
                             n_jobs=2).fit(X, y)
        assert _blas_threads() == before
    on_workers = [threads for main, threads in seen if not main]
    assert on_workers, "the folds did not run on worker threads"
    assert all(t == 1 for threads in on_workers for t in threads)
