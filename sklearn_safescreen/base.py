"""What every Safe estimator shares: the path protocol, warm-start state, and
parameter validation that does not repeat itself along a path.

:class:`PathEstimatorMixin` is the *path protocol*: the hooks through which
:mod:`sklearn_safescreen.path` and :class:`~sklearn_safescreen.RegularizationPathCV`
walk an estimator's regularisation path, never its private state.
"""

from __future__ import annotations

import functools
import numbers

from sklearn.utils._param_validation import validate_parameter_constraints
from threadpoolctl import ThreadpoolController


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


def single_blas_thread():
    """Context limiting BLAS to one thread.

    The solvers do many small matrix-vector products (margins of a working set, Newton
    systems of a few hundred variables); with several BLAS threads each costs a thread
    wake-up, and on a machine where anything else runs, OpenBLAS threads spin against
    it: measured here, one path step took 10x longer. The controller is built once
    (about 1 ms) and each limit costs about 0.1 ms.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=SOLVER_BLAS_THREADS, user_api="blas")


#: BLAS threads inside a fit (see :func:`single_blas_thread`).
SOLVER_BLAS_THREADS = 1
_BLAS_CONTROLLER = None

#: Fits on fewer entries of X than this skip the BLAS limit.
_SMALL_FIT_ENTRIES = 100_000


def limit_blas_threads(fit):
    """Decorator: run an estimator's ``fit`` under :func:`single_blas_thread`."""

    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        shape = getattr(X, "shape", (0, 0))
        if len(shape) < 2 or shape[0] * shape[1] < _SMALL_FIT_ENTRIES:
            return fit(self, X, *args, **kwargs)  # the limit itself costs ~0.1 ms
        with single_blas_thread():
            return fit(self, X, *args, **kwargs)

    return wrapper
