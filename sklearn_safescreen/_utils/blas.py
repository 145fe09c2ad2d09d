"""BLAS held to one thread while the package's own loops run.

The solvers make many small BLAS calls, and the compiled loops that run on OpenMP
threads (the k-NN search of the triplet sets, the Cholesky tiles) call BLAS from each
of their threads: BLAS's own threads would then only compete with them (see
:class:`_SingleBlasThread`).
"""

from __future__ import annotations

import threading

from threadpoolctl import ThreadpoolController

__all__ = ["SOLVER_BLAS_THREADS", "single_blas_thread"]


class _SingleBlasThread:
    """Context limiting every loaded BLAS library to one thread, restoring each one's
    setting on exit.

    The solvers make many small BLAS calls (margins of a working set, Newton systems of
    a few hundred variables, the d x d products of the triplet solver); with several
    BLAS threads each call wakes them, and they spin on the CPU the fit needs, so a call
    too small to split costs more CPU and more wall time than on one thread
    (``doc/benchmarks.md``, "Compiled core: numba (before) against Cython (now)").
    Parallelism comes from joblib instead (a multiclass fit's tasks, folds). numpy and
    scipy each bring an OpenBLAS; the controllers are found once, so that a limit then
    costs only the calls that set it (threadpoolctl's own ``limit`` searches the loaded
    libraries again at each use, which a fit would pay every time).
    """

    _libs = None
    # fits may run on several threads at once (a multiclass fit's tasks, folds): the first to
    # enter sets the limit and the last to leave restores the libraries' settings.
    # OpenBLAS ignores a limit set from a thread other than the main one, so code that
    # runs fits on threads (RegularizationPathCV) enters this context first, in the
    # calling thread; the fits' own entries then only count.
    _lock = threading.Lock()
    _depth = 0
    _saved: list = []

    def __enter__(self):
        cls = _SingleBlasThread
        with cls._lock:
            if cls._depth == 0:
                if cls._libs is None:
                    cls._libs = tuple(
                        ThreadpoolController().select(user_api="blas").lib_controllers)
                cls._saved = []
                for lib in cls._libs:
                    n = lib.get_num_threads()
                    if n is not None and n != SOLVER_BLAS_THREADS:
                        lib.set_num_threads(SOLVER_BLAS_THREADS)
                        cls._saved.append((lib, n))
            cls._depth += 1
        return self

    def __exit__(self, *exc):
        cls = _SingleBlasThread
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0:
                for lib, n in cls._saved:
                    lib.set_num_threads(n)
                cls._saved = []
        return False


def single_blas_thread() -> _SingleBlasThread:
    """Context limiting BLAS to one thread within a fit (see :class:`_SingleBlasThread`)."""
    return _SingleBlasThread()


#: BLAS threads inside a fit (see :func:`single_blas_thread`).
SOLVER_BLAS_THREADS = 1
