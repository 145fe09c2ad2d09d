"""What every Safe estimator shares: the path protocol, warm-start state, the fit
skeleton, the one-vs-rest prediction, and parameter validation that does not repeat
itself along a path.

:class:`PathEstimatorMixin` is the *path protocol*: the hooks through which
:mod:`sklearn_safescreen.path` and :class:`~sklearn_safescreen.RegularizationPathCV`
walk an estimator's regularisation path, never its private state.
:class:`SafeEstimator` is the one fit every family runs::

    validate -> fingerprint -> tasks (one path each) -> jobs -> merge -> warnings
    -> fitted attributes

A family says what its inputs, tasks, engine value and settings, fitted attributes and
warnings are (the hooks below); the engine's paths
(:mod:`~sklearn_safescreen.engine.protocol`) do the rest.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import numbers
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._utils.blas import single_blas_thread
from ._utils.fingerprint import parameter_token
from ._utils.openmp import fit_threads
from ._utils.warnings import warn_user
from .engine.policy import check_mode, environment_mode
from .engine.protocol import EnginePath, StepOutcome, StepSettings
from .engine.report import ScreeningReport, merge_reports


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
      same problem as start point **and** screening reference;
    * ``_solver_params``: the parameters, beside ``_path_param``, that change how the
      problem is solved but never which problem it is (see :func:`problem_key`).

    The warm-start state lives in the attributes named in ``_path_state``. It is kept
    only while ``warm_start=True`` (a fit without it drops the state, see
    :meth:`_end_fit`) and is never pickled: a fitted model pickles to what it needs to
    predict, and a warm start after unpickling refits from the data it is given.
    """

    _path_param: str
    _path_increasing: bool
    _has_eps_path = False
    #: parameters that do not define the problem (solver controls, screening, output);
    #: every other parameter does, so that a new one is part of the problem by default
    _solver_params: frozenset[str] = frozenset()
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

    Together they are a noticeable share of a small path step (a screened
    metric-learning step on wine, a small kernel SVM's).
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


def limit_blas_threads(fit):
    """Decorator: run an estimator's ``fit`` under :func:`single_blas_thread`, with the
    OpenMP threads of its compiled loops fixed from its ``n_jobs``
    (:func:`~sklearn_safescreen._utils.openmp.fit_threads`)."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with single_blas_thread(), fit_threads(getattr(self, "n_jobs", None)):
            return fit(self, *args, **kwargs)

    return wrapper


# ------------------------------------------------------------ the fit skeleton ---
@dataclass(frozen=True)
class FitContext:
    """What the caller of a fit knows that the estimator's parameters do not say.

    A caller sets it around the fits it makes with :func:`fit_context`; a fit outside
    one runs with the defaults.
    """

    #: whether the steps screen: ``"auto"`` (the paths' policy), ``"always"`` or
    #: ``"never"``; ``None``: the environment's mode
    #: (:data:`~sklearn_safescreen.engine.policy.ENVIRONMENT`), else ``"auto"``
    screening: str | None = None
    #: the caller owns the arrays it passes and nothing writes to them between its fits
    #: (a path walker): a warm fit given the very arrays the previous fit validated
    #: takes them as unchanged instead of checking their content again
    inputs_unchanged: bool = False
    #: per task, a dual point ``(C, alpha)`` of the same samples, labels and weights
    #: under other kernel parameters, offered to the task's path as its reference
    #: (a path that has no ``offer_reference`` ignores it; see
    #: :meth:`~sklearn_safescreen.engine.box_qp.BoxQPPath.offer_reference`)
    references: list | None = None
    #: the fits are the steps of one walk whose estimator the walker discards after it
    #: (a search's fold walk): memory that only serves the next fit (a large Newton
    #: factor) is kept between them, since it is released with the estimator, instead
    #: of being held by a model the user keeps
    walk: bool = False

    def mode(self) -> str:
        """The screening mode in force for the fit."""
        return environment_mode() if self.screening is None else self.screening


_NO_CONTEXT = FitContext()


@contextlib.contextmanager
def fit_context(estimator, *, screening: str | None = None,
                inputs_unchanged: bool = False, references: list | None = None,
                walk: bool = False):
    """Run the fits of one estimator within the block in a given context.

    The context belongs to that one estimator object, never to the process or the
    thread, and is removed when the block ends.

    Parameters
    ----------
    estimator : Safe estimator
        The estimator whose fits the block makes (the Safe step itself, not a Pipeline
        holding it).
    screening : {"auto", "always", "never"} or None, default=None
        Which path steps screen: ``"auto"`` as the paths' deterministic policy decides,
        ``"always"`` every step, ``"never"`` none (the answers are the same, certified
        either way). ``None``: the mode of the environment variable
        ``SKLEARN_SAFESCREEN_SCREENING``, else ``"auto"``.
    inputs_unchanged : bool, default=False
        The caller owns the arrays it passes and nothing modifies them between its
        fits: a warm-started fit given the very arrays the previous fit validated
        takes them as unchanged instead of checking their content again.
    references : list or None, default=None
        Private to the path walkers: per task, ``(C, alpha)``, the solution of the
        same task on the same samples under other kernel parameters, offered as the
        fit's screening reference (taken if its duality gap on the new problem is the
        smaller; safe either way).
    walk : bool, default=False
        Private to the path walkers: the fits are the steps of one walk and the
        estimator is discarded after it, so what serves only the next fit is kept
        between them however large (it is freed with the estimator).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import SafeSVC, fit_context
    >>> X, y = make_classification(n_samples=100, random_state=0)
    >>> model = SafeSVC(kernel="linear", C=0.1, warm_start=True).fit(X, y)
    >>> with fit_context(model, screening="always"):
    ...     _ = model.set_params(C=1.0).fit(X, y)
    >>> model.screening_report_.skipped
    []
    """
    if screening is not None:
        check_mode(screening)
    previous = estimator.__dict__.get("_fit_context")
    estimator._fit_context = FitContext(screening, inputs_unchanged, references, walk)
    try:
        yield
    finally:
        if previous is None:
            estimator.__dict__.pop("_fit_context", None)
        else:
            estimator._fit_context = previous


def current_context(estimator) -> FitContext:
    """The :class:`FitContext` of the fit under way on ``estimator``."""
    return estimator.__dict__.get("_fit_context") or _NO_CONTEXT


@dataclass
class FitInputs:
    """What a family's validation hands the fit skeleton: the validated data (the
    family's own type) and the fingerprint of that data (its content and weights, and
    what the family derives beyond its parameters, e.g. whether a user kernel must be
    checked). The parameters are added by :func:`problem_key`, so that no family keeps
    a list of them: :meth:`SafeEstimator._state_for` hands :meth:`_make_paths` the
    inputs with the whole problem's key as ``fingerprint``."""

    data: Any
    fingerprint: str


@dataclass
class PathState:
    """Warm-start state: the problem's key (:func:`problem_key`) and each one-vs-rest
    task's path (what a path hands its next fit lives here, on the estimator)."""

    fingerprint: str
    paths: list[EnginePath]
    #: what the family keeps beside the paths (e.g. the samples of positive weight)
    extra: Any = None
    #: the parameter values the key holds by identity (a callable kernel): kept alive
    #: with the key, so that no other object can take their ids meanwhile
    identities: tuple = ()
    #: what the family derives once from the paths and reads at every fit on them
    #: (e.g. the tasks' constants of a step's refusal check)
    memo: dict = field(default_factory=dict)


def problem_params(estimator: BaseEstimator) -> dict[str, Any]:
    """The parameters that define ``estimator``'s problem: every constructor parameter
    except the path parameter and those declared in ``_solver_params``.

    Parameters
    ----------
    estimator : PathEstimatorMixin
        A Safe estimator.

    Returns
    -------
    dict
        Name to value, by name (scikit-learn's order of ``get_params``).
    """
    skip = estimator._solver_params | {estimator._path_param}
    return {name: value for name, value in estimator.get_params(deep=False).items()
            if name not in skip}


def problem_key(estimator: BaseEstimator, data_key: str) -> tuple[str, tuple]:
    """``(key, identities)``: the warm-start key of the problem ``estimator`` defines on
    the data whose fingerprint is ``data_key``, and the objects the key holds by
    identity (see :func:`~._utils.fingerprint.parameter_token`).

    The parameters are derived, not listed (:func:`problem_params`): a parameter that
    changes the problem cannot be left out of the key by omission. Their values are
    small (a kernel's identity, a class-weight dict), so the key is cheap beside a path
    step; the data's content is in ``data_key``, digested once by the family.

    Parameters
    ----------
    estimator : PathEstimatorMixin
        A Safe estimator.
    data_key : str
        The family's fingerprint of its validated data.

    Returns
    -------
    key : str
    identities : tuple
    """
    held: list = []
    tokens = [(name, parameter_token(value, held))
              for name, value in problem_params(estimator).items()]
    key = repr((data_key, type(estimator).__qualname__, tokens)).encode()
    return hashlib.blake2b(key, digest_size=16).hexdigest(), tuple(held)


class SafeEstimator(PathEstimatorMixin, MemoisedParams, BaseEstimator):
    """The fit every Safe estimator runs (see the module docstring).

    A family defines:

    * :meth:`_fit_inputs`: validated data and the problem's fingerprint;
    * :meth:`_make_paths`: the tasks' engine paths on new data (a cold fit);
    * :meth:`_step_value` and :meth:`_step_settings`: the engine value of the
      regularisation parameter and the step's settings;
    * :meth:`_set_model`: the fitted attributes from the tasks' outcomes;
    * :meth:`_critical_from`: the critical value of the path protocol, from the paths.

    and may refine :meth:`_check_step` (a refusal before any work),
    :meth:`_progress`, :meth:`_warn_if_not_converged` and :meth:`_summary`. A fit with
    ``warm_start=True`` on the same problem (same fingerprint) reuses the paths, with
    their last solutions, caches and factorisations; so does the first fit after
    :meth:`_critical_value` on the same data (how a path starts).
    """

    # -- family hooks
    def _fit_inputs(self, X, y, **fit_params) -> FitInputs:
        raise NotImplementedError  # pragma: no cover - each family defines it

    def _make_paths(self, inputs: FitInputs) -> PathState:
        raise NotImplementedError  # pragma: no cover - each family defines it

    def _step_value(self, state: PathState) -> float:
        raise NotImplementedError  # pragma: no cover - each family defines it

    def _step_settings(self, state: PathState, value: float) -> StepSettings:
        raise NotImplementedError  # pragma: no cover - each family defines it

    def _set_model(self, inputs: FitInputs, state: PathState,
                   outcomes: list[StepOutcome]) -> None:
        raise NotImplementedError  # pragma: no cover - each family defines it

    def _critical_from(self, state: PathState) -> float:
        """The critical value of the path protocol: the most regularised value at which
        every task's solution is known in closed form (each engine path says its own,
        :meth:`~sklearn_safescreen.engine.protocol.EnginePath.critical_value`), as the
        estimator's parameter (:meth:`_from_engine_value`)."""
        values = [p.critical_value(self.max_iter) for p in state.paths]
        return self._from_engine_value(min(values) if self._path_increasing
                                       else max(values))

    def _from_engine_value(self, value: float) -> float:
        """The estimator's regularisation parameter for an engine value (the same
        unless the family scales it)."""
        return float(value)

    def _check_step(self, state: PathState, value: float) -> None:
        """Refuse, before any work, a value the problem cannot be solved at."""

    def _progress(self, state: PathState):
        """A context reporting a long fit's progress (``verbose``)."""
        return contextlib.nullcontext()

    def _describe(self) -> str:
        """The fit as warnings name it, e.g. ``SafeSVC(C=1)``."""
        name = self._path_param
        value = getattr(self, name)
        shown = f"{value:.6g}" if isinstance(value, numbers.Real) else repr(value)
        return f"{type(self).__name__}({name}={shown})"

    def _warn_if_not_converged(self, outcomes: list[StepOutcome]) -> None:
        """A ConvergenceWarning when a task's gap missed ``tol``."""
        worst = max(outcomes, key=lambda o: o.rel_gap)
        if not worst.converged:
            warn_user(f"{self._describe()} stopped with {self._gap_words} "
                      f"{worst.rel_gap:.3g} > tol={self.tol:g} after {worst.n_iter} "
                      f"{self._iteration_words} (max_iter={self.max_iter}); increase "
                      "max_iter or tol.", ConvergenceWarning)

    #: how warnings name the gap compared with ``tol`` and the solver's iterations
    _gap_words = "relative duality gap"
    _iteration_words = "iterations"

    def _summary(self, state: PathState, outcomes: list[StepOutcome],
                 report: ScreeningReport, elapsed: float) -> str | None:
        """The ``verbose`` line of a fit that took ``elapsed`` seconds (``None``: the
        engine printed its own)."""
        return None

    # -- the skeleton
    def _fit(self, X, y, **fit_params):
        start = time.perf_counter()
        inputs = self._fit_inputs(X, y, **fit_params)
        state = self._state_for(inputs)
        value = self._step_value(state)
        self._check_step(state, value)
        settings = self._step_settings(state, value)
        settings.mode = current_context(self).mode()
        offers = current_context(self).references
        if offers is not None and len(offers) == len(state.paths):
            for path, offer in zip(state.paths, offers, strict=True):
                if offer is not None and hasattr(path, "offer_reference"):
                    path.offer_reference(*offer)
        outcomes, report = self._run_tasks(state, value, settings)
        self._path = state
        self.screening_report_ = report
        self._warn_if_not_converged(outcomes)
        self._set_model(inputs, state, outcomes)
        if self.verbose:
            line = self._summary(state, outcomes, report, time.perf_counter() - start)
            if line is not None:
                print(f"[{type(self).__name__}] {line}")
        self._end_fit()
        return self

    def _state_for(self, inputs: FitInputs) -> PathState:
        """The warm-start state when it is for this problem (same data, same problem
        parameters: :func:`problem_key`), else new paths."""
        key, identities = problem_key(self, inputs.fingerprint)
        state = self.__dict__.get("_path")
        if self.warm_start and state is not None and state.fingerprint == key:
            return state
        state = self._make_paths(replace(inputs, fingerprint=key))
        state.identities = identities
        return state

    def _run_tasks(self, state: PathState, value: float, settings: StepSettings
                   ) -> tuple[list[StepOutcome], ScreeningReport]:
        """One job per one-vs-rest task (threads: the solvers release the GIL), and
        the tasks' reports merged."""
        paths = state.paths
        seeds = self._seeds(len(paths))
        tasks = [(p, _with_seed(settings, int(s)))
                 for p, s in zip(paths, seeds, strict=True)]
        n_jobs = getattr(self, "n_jobs", None)
        with self._progress(state):
            if len(tasks) == 1 or effective_n_jobs(n_jobs) == 1:
                # one worker: the jobs in order in this thread, as joblib's sequential
                # backend runs them, without setting up its dispatcher at every fit
                out = [_fit_task(p, value, s) for p, s in tasks]
            else:
                out = Parallel(n_jobs=n_jobs, prefer="threads")(
                    delayed(_fit_task)(p, value, s) for p, s in tasks)
        walk = current_context(self).walk
        for p in paths:
            p.end_fit(keep=self.warm_start, walk=walk)
        return [o for _, o in out], merge_reports([r for r, _ in out])

    def _seeds(self, n: int) -> np.ndarray:
        """Seeds of the solvers' coordinate permutations. ``random_state=None`` uses a
        fixed seed: the optimum does not depend on it, and repeated fits are then
        identical (as LinearSVC's are), including on ties at a decision value of
        exactly 0."""
        rs = getattr(self, "random_state", None)
        rs = 0 if rs is None or isinstance(rs, str) else rs
        if isinstance(rs, numbers.Integral):
            return np.array([int(rs)]) if n == 1 else np.array(_integer_seeds(int(rs), n))
        return check_random_state(rs).randint(np.iinfo(np.int32).max, size=n)

    # -- the path protocol
    def _critical_value(self, X, y, sample_weight=None) -> float:
        """The critical value on this data (the path protocol). The paths built for it
        are kept as the warm-start state, so that the first fit of a path on the same
        data (``warm_start=True``) starts from them instead of building them again."""
        self._validate_params()
        params = {} if sample_weight is None else {"sample_weight": sample_weight}
        inputs = self._fit_inputs(X, y, **params)
        state = self._state_for(inputs)
        if self.warm_start:
            self._path = state
        return float(self._critical_from(state))


def _with_seed(settings: StepSettings, seed: int) -> StepSettings:
    """``dataclasses.replace(settings, seed=seed)`` (one per task at every fit) without
    a second ``__init__``: the fields are those of a constructed, valid ``settings``.
    Settings with a ``__post_init__`` (checks, derived fields) are replaced."""
    if hasattr(settings, "__post_init__"):
        return replace(settings, seed=seed)
    out = object.__new__(type(settings))
    out.__dict__.update(settings.__dict__)
    out.seed = seed
    return out


@functools.lru_cache(maxsize=32)
def _integer_seeds(seed: int, n: int) -> tuple[int, ...]:
    """The ``n`` seeds an integer ``random_state`` gives the tasks: the first draws of
    ``RandomState(seed)``, the same at every fit, so drawn once per (seed, n) rather
    than seeding a new generator (its whole Mersenne Twister state) at every fit."""
    return tuple(int(s) for s in
                 np.random.RandomState(seed).randint(np.iinfo(np.int32).max, size=n))


def _fit_task(path: EnginePath, value: float, settings: StepSettings):
    """One one-vs-rest task's step (a joblib job): its report and outcome."""
    report = path.new_report()
    return report, path.fit(value, settings, report)


# ------------------------------------------------------------- prediction mixins ---
class LinearModelMixin:
    """The scores of a linear model, :math:`Xw + b` per task, from ``coef_`` and
    ``intercept_`` (dense or sparse ``X``)."""

    _accept_sparse: tuple | str = ("csr", "csc")

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=self._accept_sparse, dtype=np.float64,
                          reset=False)
        return np.asarray(X @ np.atleast_2d(self.coef_).T) + self.intercept_


class OneVsRestClassifierMixin:
    """``decision_function`` and ``predict`` of a one-vs-rest classifier from
    ``_scores(X)`` (one column per task: one for two classes)."""

    def decision_function(self, X):
        """The score of each one-vs-rest task (the signed distance to its separating
        hyperplane in feature space, up to the norm of its weights).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            (``(n_samples, n_train)`` for a precomputed kernel).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        scores = self._scores(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels: the sign of the score (two classes) or the best one-vs-rest
        score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            (``(n_samples, n_train)`` for a precomputed kernel).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]


# ------------------------------------------------------------------ class labels ---
def encode_labels(estimator, y, key: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y_ind)``: the targets checked as class labels (at least two) and
    encoded as 0..n_classes-1.

    Along a warm-started path the targets are the same at every step, and the check
    and encoding (``np.unique``, a sort of the labels) is a noticeable share of a small
    kernel path step: with a content ``key`` of ``y`` (``None``: no memo) the previous fit's result
    is reused. (Object arrays cannot be keyed: their bytes are pointers.)
    """
    cached = estimator.__dict__.get("_label_cache")
    if key is not None and cached is not None and cached[0] == key:
        classes, y_ind = cached[1]
    else:
        check_classification_targets(y)
        encoder = LabelEncoder()
        y_ind = encoder.fit_transform(y)
        classes = encoder.classes_
        estimator._label_cache = (key, (classes, y_ind))
    if classes.size < 2:
        raise ValueError("The number of classes has to be greater than one; got "
                         f"{classes.size} class")
    return classes, y_ind


def one_vs_rest(classes: np.ndarray, y_ind: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The tasks of a one-vs-rest fit: ``(name, +-1 labels)``, one task (the second
    class against the first) for two classes."""
    if classes.size == 2:
        return [("", np.where(y_ind == 1, 1.0, -1.0))]
    return [(str(c), np.where(y_ind == k, 1.0, -1.0)) for k, c in enumerate(classes)]

