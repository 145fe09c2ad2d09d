"""How many OpenMP threads the compiled parallel loops use.

As scikit-learn's OpenMP estimators (``HistGradientBoosting*``, ``KMeans``): every core
the process may use, that is ``OMP_NUM_THREADS`` when set, else the number of physical
cores, lowered by threadpoolctl's OpenMP limits of the calling thread
(``threadpool_limits(1, user_api="openmp")``); a fit's ``n_jobs`` bounds it further.

The count of a fit is decided once, in the thread that calls ``fit``
(:func:`fit_threads`, entered by :func:`~sklearn_safescreen.base.limit_blas_threads`),
because threadpoolctl's OpenMP limits apply to the thread that sets them only, and the
tasks of a multiclass fit (pairs of classes, or one-vs-rest classes) run on other
threads. Outside a fit the loops use :func:`effective_n_threads`. A build without
OpenMP runs every loop on one thread.

The parallel loops split their output elements among the threads and never a sum, so
their results are the same, bit for bit, whatever the number of threads.
"""

from __future__ import annotations

import os
import threading

from joblib import cpu_count

from ._openmp_fast import omp_max_threads, openmp_built, team_size

__all__ = ["current_n_threads", "effective_n_threads", "fit_threads", "openmp_built",
           "team_size"]

#: Physical cores, counted once (joblib reads /proc and the cgroup quota).
_PHYSICAL_CORES: int | None = None


def effective_n_threads(n_jobs: int | None = None) -> int:
    """The OpenMP threads a parallel loop may use in the calling thread.

    Parameters
    ----------
    n_jobs : int or None, default=None
        ``None``: every thread allowed (``OMP_NUM_THREADS`` when set, else the physical
        cores, lowered by threadpoolctl's OpenMP limits); ``k > 0``: at most ``k`` of
        them; ``k < 0``: all but ``|k| - 1`` of them (joblib's convention), at least 1.

    Returns
    -------
    n_threads : int
        1 in a build without OpenMP.
    """
    global _PHYSICAL_CORES
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning")
    if not openmp_built():
        return 1
    allowed = omp_max_threads()  # OMP_NUM_THREADS and threadpoolctl's limits
    if not os.environ.get("OMP_NUM_THREADS"):
        if _PHYSICAL_CORES is None:
            _PHYSICAL_CORES = max(1, int(cpu_count(only_physical_cores=True)))
        allowed = min(allowed, _PHYSICAL_CORES)
    allowed = max(1, allowed)
    if n_jobs is None:
        return allowed
    if n_jobs < 0:
        return max(1, allowed + 1 + int(n_jobs))
    return min(int(n_jobs), allowed)


class _FitThreads:
    """The count of the fits in progress: the first fit to enter decides it (in its own
    thread, where the caller's threadpoolctl limits apply) and the fits it runs on other
    threads (a multiclass fit's tasks, folds) use it; the last one to leave clears it."""

    _lock = threading.Lock()
    _depth = 0
    n_threads: int | None = None

    def __init__(self, n_jobs: int | None):
        self._n_jobs = n_jobs

    def __enter__(self):
        cls = _FitThreads
        with cls._lock:
            if cls._depth == 0:
                cls.n_threads = effective_n_threads(self._n_jobs)
            cls._depth += 1
        return self

    def __exit__(self, *exc):
        cls = _FitThreads
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0:
                cls.n_threads = None
        return False


def fit_threads(n_jobs: int | None = None) -> _FitThreads:
    """Context fixing the OpenMP threads of the fits run inside it (see
    :func:`effective_n_threads` for ``n_jobs``)."""
    return _FitThreads(n_jobs)


def current_n_threads() -> int:
    """The OpenMP threads of the parallel loops now: the running fit's count, else
    :func:`effective_n_threads` of the calling thread."""
    n = _FitThreads.n_threads
    return effective_n_threads() if n is None else n
