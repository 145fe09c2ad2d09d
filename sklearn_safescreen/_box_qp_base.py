"""The base class of the box-QP estimators, SafeSVC and SafeLAD.

Both solve a kernel machine's box-constrained dual (``doc/theory/svm_lad.rst``): the same
parameters (``C``, the kernel, the regularised intercept, screening, solver controls),
the same fit skeleton (validate, build the design matrix or kernel once per data set,
walk each task's path, certify, set the model), the same kernel expansion at predict
time. Subclasses say what their targets are (class labels and one-vs-rest tasks, or
real values) and which rules exist.
"""

from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass

import numpy as np
from sklearn import get_config
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._fit_time import Progress, long_fit_message
from ._utils.fingerprint import data_fingerprint
from ._utils.warnings import LongFitWarning, PrecisionWarning, warn_user
from ._validation import Resolvability, check_dense_precomputed
from .base import FitInputs, PathState, SafeEstimator, limit_blas_threads
from .engine.box_qp import BoxQPPath
from .engine.protocol import StepSettings
from .problems.kernels import (
    KernelMatrix,
    design_matrix,
    needs_psd_check,
    resolve_kernel_params,
)
from .problems.shared_kernel import fold_rows, prediction_rows

#: A solve that stopped with a relative gap within this factor of the rounding floor got
#: as far as float64 allows (a PrecisionWarning); further above it, it ran out of
#: iterations (a ConvergenceWarning).
_AT_THE_FLOOR = 10.0
#: Kernel blocks held at once while a block of test samples is scored (the pairwise
#: kernels' distances and their exponential, or a callable's output and its copy).
_KERNEL_ROW_COPIES = 2
#: Most bytes of a block of test samples' kernel values: a larger block is fresh memory
#: at every prediction (above the allocator's mmap threshold, at most 32 MB), whose
#: first touch faults in every page, costing more than the kernel values themselves
#: when a search's shared rows hold them; smaller ones reuse the heap's.
_PREDICTION_BLOCK_BYTES = 16 * 2**20
SOLVER_SQUARES = "the solver squares them (norms, margins, kernel values, duality gaps)"


def primal_weights(paths: list[BoxQPPath], task_coef: list[np.ndarray], n_features: int,
                   bias: float) -> tuple[np.ndarray, np.ndarray]:
    """``(coef_, intercept_)`` of a linear model, one row per task: the weights
    :math:`w = X_a^\\top (\\alpha \\circ s)` on the design matrix with its bias column,
    whose weight times the bias feature's value is the intercept (0 without it).

    Parameters
    ----------
    paths : list of BoxQPPath
        The tasks' paths, on the linear kernel's design matrix.
    task_coef : list of ndarray
        Each task's :math:`\\alpha_i s_i` over its path's samples.
    n_features : int
        Columns of the training data (the bias column follows them).
    bias : float
        The bias feature's value (0: no intercept).

    Returns
    -------
    coef : ndarray of shape (n_tasks, n_features)
    intercept : ndarray of shape (n_tasks,)
    """
    W = np.vstack([np.asarray(p.data.X.T @ c).ravel()
                   for p, c in zip(paths, task_coef, strict=True)])
    return W[:, :n_features], (W[:, n_features] * bias if bias else np.zeros(W.shape[0]))


@dataclass
class FitData:
    """Validated training data of a box-QP fit."""

    X: object  # ndarray or CSR matrix
    targets: np.ndarray  # class indices (SVM) or values (LAD)
    sample_weight: np.ndarray  # as given (kernel parameters use these)
    weights: np.ndarray  # per-sample multipliers of C (sample x class weights)
    content: tuple  # identifies the data for the warm-start fingerprint
    classes: np.ndarray | None = None  # the class labels (classifiers)
    kernel_params: dict | None = None  # resolved (gamma="scale" / "auto")
    bias: float = 0.0  # the value of the regularised bias feature (0: none)


class BaseBoxQPEstimator(SafeEstimator):
    """Shared parameters, fit hooks and kernel expansion of SafeSVC and SafeLAD (see
    the module docstring). Subclasses define ``__init__``, :meth:`_validated_inputs`,
    :meth:`_task_paths`, :meth:`_critical_from` and :meth:`_set_model`."""

    _parameter_constraints: dict = {
        "C": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"linear", "rbf", "poly", "precomputed"}), callable],
        "degree": [Interval(numbers.Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}),
                  Interval(numbers.Real, 0.0, None, closed="neither")],
        "coef0": [Interval(numbers.Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "cache_size": [Interval(numbers.Real, 0, None, closed="left")],
    }

    # the path protocol
    _path_param = "C"
    _path_state = (*SafeEstimator._path_state, "_kernel_memo")
    #: how the problem is solved, not which problem: the rule (its kernel check aside,
    #: see _fit_inputs), the solver's controls, output, threads, the coordinate order
    #: (the optimum does not depend on it) and the kernel row cache's size
    _solver_params = frozenset({"screening", "tol", "max_iter", "warm_start", "verbose",
                                "random_state", "n_jobs", "cache_size"})
    _path_increasing = True  # larger C = less regularised
    _iteration_words = "epochs"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # ----------------------------------------------------------------- fitting ---
    @_fit_context(prefer_skip_nested_validation=True)
    @limit_blas_threads
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or
            (n_samples, n_samples) for ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            Targets: class labels (numbers or strings) for a classifier, real values
            for a regressor.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative per-sample multipliers of ``C``.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        return self._fit(X, y, sample_weight=sample_weight)

    def _fit_inputs(self, X, y, sample_weight=None) -> FitInputs:
        data = self._validated_inputs(X, y, sample_weight)
        data.kernel_params, data.bias = self._kernel_setup(data.X, data.sample_weight,
                                                           data.content)
        # the content (X, y, sample_weight) and the problem's parameters (class_weight,
        # kernel, gamma, ...: base.problem_key) determine the weights and the kernel.
        # screening is a solver parameter, but turning it on with a user kernel builds
        # the kernel with a PSD check: that is part of the paths
        fingerprint = data_fingerprint(*data.content,
                                       needs_psd_check(self.kernel, self.screening))
        return FitInputs(data, fingerprint)

    def _make_paths(self, inputs: FitInputs) -> PathState:
        """The design matrix or kernel (with its row cache), built once per data set,
        and one path per task on it."""
        data = inputs.data
        Xa, kernel = self._build(data.X, data.kernel_params, data.bias)
        paths = self._task_paths(Xa, kernel, data)
        self._warn_if_long(kernel, data.X.shape, len(paths))
        return PathState(inputs.fingerprint, paths)

    def _step_value(self, state: PathState) -> float:
        return float(self.C)

    def _check_step(self, state: PathState, value: float) -> None:
        # each task's own weights: a one-vs-one pair's problem is over its two
        # classes' samples. Their factors of the figure do not depend on C: read once
        # per set of paths, not at every fit of a path
        checks = state.memo.get("resolvable")
        if checks is None:
            checks = state.memo["resolvable"] = Resolvability.of(
                (p.data.weights, p.data.sqnorm, p.data.hinge) for p in state.paths)
        checks.check(self._describe(), value)

    def _step_settings(self, state: PathState, value: float) -> StepSettings:
        return StepSettings(rule=self.screening, tol=self.tol, max_iter=self.max_iter,
                            verbose=self.verbose, describe=self._describe())

    def _progress(self, state: PathState):
        """While the fit runs (``verbose``): its epochs and gap, and for a kernel fit the
        kernel entries evaluated (:class:`~sklearn_safescreen._fit_time.Progress`)."""
        if not self.verbose:
            return contextlib.nullcontext()
        kernels = list({id(p.data.kernel): p.data.kernel for p in state.paths
                        if p.data.kernel is not None}.values())
        return Progress(f"[{type(self).__name__}] C={self.C:.4g}", kernels,
                        state.paths[0].data.n_samples,
                        statuses=[p.data.status for p in state.paths], tol=self.tol)

    def _warn_if_long(self, kernel, shape, n_tasks: int, pairs: bool = False) -> None:
        """Once per data set (a cold fit), a :class:`LongFitWarning` with the estimated
        time when a kernel fit will take at least a minute
        (:mod:`~sklearn_safescreen._fit_time`)."""
        if kernel is None:
            return
        message = long_fit_message(f"{type(self).__name__}(C={self.C:.6g})", shape[0],
                                   n_tasks, self.kernel, shape[1],
                                   kernel.cache_capacity, self.cache_size, pairs)
        if message is not None:
            warn_user(message, LongFitWarning)

    def _warn_if_not_converged(self, outcomes) -> None:
        """One warning about the value the user asked for, if its certified gap is
        above ``tol`` (an internal path step that stopped early is only a reference:
        the gap inflation keeps its screening safe)."""
        name = self._describe()
        worst = max(outcomes, key=lambda o: o.rel_gap)
        if not worst.converged and worst.n_iter < self.max_iter:
            # the solver stops before max_iter only when its steps no longer reduce the
            # gap, i.e. when rounding dominates them: more iterations would not help
            warn_user(
                f"{name} stopped making progress at relative duality gap "
                f"{worst.rel_gap:.3g} > tol={self.tol:g} after {worst.n_iter} epochs, "
                f"before max_iter={self.max_iter}: at this C the float64 arithmetic of "
                "the solve cannot reduce the gap further, and the fit may be far from the "
                "exact optimum. Lower C (the solution changes little beyond the point "
                "where the loss is fitted exactly) or rescale the data.",
                PrecisionWarning)
            return
        floor = max(outcomes, key=lambda o: o.rounding_floor)
        if floor.rounding_floor > self.tol and (
                floor.converged or floor.rel_gap <= _AT_THE_FLOOR * floor.rounding_floor):
            # the gap cannot be resolved to tol in float64 and the solve got down to what
            # can: a ConvergenceWarning's advice (more iterations) would not help. A solve
            # cut by max_iter far above the floor gets the ConvergenceWarning below.
            consequence = (
                f"so the fit is certified only to that relative gap, not to tol={self.tol:g}"
                if floor.converged else
                f"above tol={self.tol:g}, so the fit cannot be certified and may be far "
                "from the exact optimum")
            warn_user(
                f"{name} is beyond double precision: the rounding of its duality gap (C "
                f"times the kernel's scale times the dual variables) is "
                f"{floor.rounding_floor:.3g} of the objective, {consequence}. Lower C (the "
                "solution changes little beyond the point where the loss is fitted "
                "exactly) or rescale the data.",
                PrecisionWarning)
            return
        if not worst.converged:
            warn_user(
                f"{name} stopped with relative duality gap "
                f"{worst.rel_gap:.3g} > tol={self.tol:g} after {worst.n_iter} epochs "
                f"(max_iter={self.max_iter} per solve); increase max_iter or tol.",
                ConvergenceWarning)

    def _kernel_setup(self, X, sample_weight, content: tuple = ()) -> tuple[dict, float]:
        """Check the kernel against the data; ``(kernel parameters, bias)`` (gamma="scale"
        / "auto" resolved from the weighted variance).

        ``content``: the data's identity (:class:`FitData`). When it is a digest, the
        resolved parameters are remembered with it and the kernel's parameters: along a
        warm-started path every fit would otherwise take the weighted variance of the
        same data again (a pass over X, at every fit)."""
        check_dense_precomputed(self.kernel, X)
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError("kernel='precomputed' needs a square training kernel matrix; "
                             f"got shape {X.shape}")
        if self.kernel == "poly" and self.coef0 < 0 and self.screening is not None:
            raise ValueError("the polynomial kernel with coef0 < 0 is not guaranteed to be "
                             "positive semi-definite, so screening would be unsafe; use "
                             "coef0 >= 0 or screening=None")
        bias = self.intercept_scaling if self.fit_intercept else 0.0
        key = None
        if self.warm_start and len(content) == 1 and isinstance(content[0], str):
            key = (content[0], self.kernel, *((type(v), v) for v in (
                self.gamma, self.degree, self.coef0)))
            memo = self.__dict__.get("_kernel_memo")
            if memo is not None and memo[0] == key:
                return dict(memo[1]), bias
        kernel_params = resolve_kernel_params(self.kernel, self.gamma, self.degree,
                                              self.coef0, X, sample_weight)
        self._kernel_memo = None if key is None else (key, dict(kernel_params))
        return kernel_params, bias

    def _build(self, X, kernel_params, bias):
        """The design matrix with its bias column (linear) or the kernel; within a
        search's fold walk, the kernel reads the rows the folds share when they apply
        (:mod:`~sklearn_safescreen.problems.shared_kernel`), never for ``gamma="scale"``,
        which is resolved from the fold's own data."""
        shared = None if self.gamma == "scale" else fold_rows(X, self.kernel,
                                                              kernel_params, bias)
        return design_matrix(X, self.kernel, kernel_params, bias, screening=self.screening,
                             cache_size=self.cache_size, shared=shared)

    # ---------------------------------------------------------------- subclass ---
    def _validated_inputs(self, X, y, sample_weight) -> FitData:
        raise NotImplementedError  # pragma: no cover

    def _task_paths(self, Xa, kernel, data: FitData) -> list[BoxQPPath]:
        raise NotImplementedError  # pragma: no cover

    #: The dual solution of a linear model: kept on the fitted estimator, not pickled
    #: (its size grows with the data; the model is coef_ and intercept_, as LinearSVC's).
    _LINEAR_DUAL = ("dual_coef_", "support_")

    def __getstate__(self):
        state = super().__getstate__()
        if self.kernel == "linear":
            for name in self._LINEAR_DUAL:
                state.pop(name, None)
        return state

    def __getattr__(self, name):
        # only reached when the attribute is missing
        if (name in ("support_vectors_", *self._LINEAR_DUAL)
                and self.__dict__.get("kernel") == "linear" and "coef_" in self.__dict__):
            raise AttributeError(
                f"{type(self).__name__}(kernel='linear') has no {name}: a linear model "
                "keeps coef_ and intercept_ (as LinearSVC); its dual solution, dual_coef_ "
                "and support_, is available after fit but is not pickled, and its support "
                "vectors are X[support_]")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -------------------------------------------------------------- prediction ---
    def _scores(self, X) -> np.ndarray:
        """:math:`w^\\top\\Phi(x)` per task, shape (n_samples, n_tasks)."""
        check_is_fitted(self)
        check_dense_precomputed(self.kernel, X)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.kernel == "linear":
            return np.asarray(X @ np.atleast_2d(self.coef_).T) + self.intercept_
        coef, intercept = self._expansion()
        if self.kernel == "precomputed":
            K = np.asarray(X[:, self.support_], dtype=np.float64)
            return K @ coef + intercept
        # the blocks are the training kernel's, bias included (K + intercept_scaling**2,
        # the values a search's shared rows hold), so the intercept the bias feature
        # already gives is taken off it (0 unless intercept_ was set by hand)
        offset = intercept - self._bias**2 * coef.sum(axis=0)
        sv = self.support_vectors_
        scores = np.empty((X.shape[0], coef.shape[1]))
        if sv.shape[0] == 0:  # no support vector: the decision function is constant
            scores[:] = intercept
            return scores
        # within a search's fold walk, the test samples' kernel values against the
        # training samples are read from the rows the folds share where they hold them
        shared = prediction_rows(X, self.kernel, self._kernel_params_, self._bias)
        km = KernelMatrix(sv, self.kernel, self._kernel_params_, self._bias) \
            if shared is None else None
        # blocks of test samples, so that the kernel block between them and the support
        # vectors (and its temporaries) stays within scikit-learn's ``working_memory``
        # (a block of every test sample grows with both counts, to gigabytes) and
        # within ``_PREDICTION_BLOCK_BYTES``
        row_bytes = 8 * max(sv.shape[0], 1)
        rows = max(1, min(int(get_config()["working_memory"] * 2**20)
                          // (_KERNEL_ROW_COPIES * row_bytes),
                          _PREDICTION_BLOCK_BYTES // row_bytes))
        for batch in gen_batches(X.shape[0], rows):
            K = (km.cross_block(X[batch]) if shared is None else
                 shared.block(np.arange(batch.start, batch.stop), self.support_))
            scores[batch] = K @ coef + offset
        return scores

    def _expansion(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel expansion of the scores, ``K(x, support_vectors_) @ coef +
        intercept``: its coefficients, shape (n_SV, n_tasks), and intercepts. The bias
        feature adds ``intercept_scaling**2`` to the kernel, so the intercept is
        ``intercept_scaling**2 * dual_coef_.sum(axis=1)``."""
        return self.dual_coef_.T, self._bias**2 * self.dual_coef_.sum(axis=1)

