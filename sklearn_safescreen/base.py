"""What every Safe estimator shares: the path protocol, warm-start state, and
parameter validation that does not repeat itself along a path.

:class:`PathEstimatorMixin` is the *path protocol*: the hooks through which
:mod:`sklearn_safescreen.path` and :class:`~sklearn_safescreen.RegularizationPathCV`
walk an estimator's regularisation path, never its private state.
"""

from __future__ import annotations

import functools
import numbers
import threading

from sklearn.utils._param_validation import validate_parameter_constraints
from threadpoolctl import ThreadpoolController

from ._utils.openmp import fit_threads


class PathEstimatorMixin:
    """The path protocol, and the warm-start state it relies on.

    An estimator with this mixin declares

    * ``_path_param``: the name of its regularisation parameter (``"C"``, ``"alpha"``);
    * ``_path_increasing``: ``True`` when larger values are *less* regularised (``C``),
      ``False`` for ``alpha``-like parameters;
    * :meth:`_critical_value`: the most regularised value at which the solution is
      known in closed form (the natural start of a path);
    * :meth:`_eps_path_next`, when ``_has_eps_path``: the next value of an
      :math:`\\varepsilon`-approximation path from the last fit;
    * a ``warm_start`` parameter: with it, ``fit`` reuses the previous solution on the
      same data as start point **and** screening reference.

    The warm-start state lives in the attributes named in ``_path_state``. It is kept
    only while ``warm_start=True`` (a fit without it drops the state, see
    :meth:`_end_fit`) and is never pickled: a fitted model pickles to what it needs to
    predict, and a warm start after unpickling refits from the data it is given.
    """

    _path_param: str
    _path_increasing: bool
    _has_eps_path = False
    #: attributes holding warm-start state (never pickled)
    _path_state: tuple[str, ...] = ("_path", "_input_memo")

    def _critical_value(self, X, y, sample_weight=None) -> float:
        """The most regularised value of the path parameter at which the solution is
        known in closed form, on this training data."""
        raise NotImplementedError  # pragma: no cover - each estimator defines it

    def _eps_path_next(self, eps: float, stop: float) -> float | None:
        """The next value of the eps-path after the last fit, ``None`` when it ends."""
        raise NotImplementedError  # pragma: no cover - only where _has_eps_path

    def _end_fit(self) -> None:
        """Drop the warm-start state unless ``warm_start``."""
        if not self.warm_start:
            for name in self._path_state:
                self.__dict__.pop(name, None)

    def __getstate__(self):
        state = super().__getstate__()
        for name in self._path_state:
            state.pop(name, None)
        return state


class MemoisedParams:
    """Mixin (before ``BaseEstimator``) for estimators refitted along a path:

    * the constructor's parameter names are read once per class (scikit-learn reads
      them with ``inspect.signature`` at every ``get_params``, which ``set_params`` and
      every ``fit`` call);
    * ``_validate_params`` checks only the parameters that changed since the last
      successful validation: a parameter is skipped when it is an immutable scalar
      (number, string, None) of the same type and value as then, since its validity is
      a function of exactly these (a path step changes one parameter).

    Together about 0.5 ms per path step, a sixth of a screened metric-learning step on
    wine.
    """

    @classmethod
    def _get_param_names(cls):
        return list(_param_names(cls))

    def _validate_params(self):
        params = self.get_params(deep=False)
        seen = self.__dict__.get("_validated_params", {})
        changed = {name: v for name, v in params.items()
                   if not (isinstance(v, _SCALARS) and seen.get(name) == (type(v), v))}
        if changed:
            validate_parameter_constraints(self._parameter_constraints, changed,
                                           caller_name=self.__class__.__name__)
        self._validated_params = {name: (type(v), v) for name, v in params.items()
                                  if isinstance(v, _SCALARS)}


#: Immutable parameter values whose validity is a function of their type and value.
_SCALARS = (numbers.Number, str, type(None))


@functools.cache
def _param_names(cls) -> tuple:
    from sklearn.base import BaseEstimator

    return tuple(BaseEstimator._get_param_names.__func__(cls))


class _SingleBlasThread:
    """Context limiting every loaded BLAS library to one thread, restoring each one's
    setting on exit.

    The solvers make many small BLAS calls (margins of a working set, Newton systems of
    a few hundred variables, the d x d products of the triplet solver); with several
    BLAS threads each call wakes them, and they spin on the CPU the fit needs: measured
    here, one SVM path step took 10x longer, and the digits metric-learning path of
    ``benchmarks/bench_metric_learning.py`` used twice the CPU time for a longer wall
    time. Parallelism comes from joblib instead (one-vs-rest tasks, folds). numpy and
    scipy each bring an OpenBLAS; the controllers are found once, and a limit then costs
    a few microseconds (threadpoolctl's own ``limit`` costs about 25 us a fit).
    """

    _libs = None
    # fits may run on several threads at once (one-vs-rest tasks, folds): the first to
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


def limit_blas_threads(fit):
    """Decorator: run an estimator's ``fit`` under :func:`single_blas_thread`, with the
    OpenMP threads of its compiled loops fixed from its ``n_jobs``
    (:func:`~sklearn_safescreen._utils.openmp.fit_threads`)."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with single_blas_thread(), fit_threads(getattr(self, "n_jobs", None)):
            return fit(self, *args, **kwargs)

    return wrapper
