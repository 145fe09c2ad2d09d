r"""SafeSVC: the hinge-loss SVM with safe sample screening.

Problem (spec svm A1, with weights F2):

.. math::

    \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\max\{0,\ 1 - y_i w^\top\Phi(x_i)\},

with :math:`c_i` = ``sample_weight`` x ``class_weight``. The intercept is a *regularised*
extra feature of value ``intercept_scaling`` (as in LIBLINEAR and ``LinearSVC``), i.e. the
kernel becomes :math:`K + s^2`; the screening rules do not apply to SVC's unregularised
intercept (pitfall E5).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state, compute_class_weight
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from ._base import (
    MemoisedParams,
    data_fingerprint,
    limit_blas_threads,
    memoised_validation,
    path_step,
)
from ._kernels import (
    KernelMatrix,
    design_matrix,
    needs_psd_check,
    resolve_kernel_params,
)
from ._report import ScreeningEvent, ScreeningReport
from .screening.svm import SVM_RULES, SVMReference, critical_C, screen_svm
from .solvers.dual_cd import BoxQP, NewtonCache

#: A single cold fit walks an internal path from C_min in steps of this ratio (measured:
#: with the interior-point finisher, steps of 10 were slower than one step up to 1e4)
#: (spec A8, Lemma 9) when C is far enough above C_min for that to pay off.
INTERNAL_PATH_RATIO = 1e4


class _TaskData:
    """The data of one binary problem: signs, weights, kernel or design matrix.

    Owns the cache of :math:`Q(c\\circ\\hat s)` used by BT2/IT so that, along a path,
    only the kernel columns of changed entries are evaluated (spec A7).
    """

    def __init__(self, X, kernel: KernelMatrix | None, ysign, weights):
        self.X, self.kernel = X, kernel
        self.ysign, self.weights = ysign, weights
        self.sqnorm = (kernel.diag() if kernel is not None else
                       (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                        else np.einsum("ij,ij->i", X, X)))
        self._v = np.zeros_like(ysign)
        self._qv = np.zeros_like(ysign)
        self.newton = NewtonCache() if kernel is not None else None

    def end_fit(self, keep: bool) -> None:
        """After a fit: keep the Newton factor (kernel mode) for the next fit of a path
        only if ``keep`` (:meth:`~.solvers.dual_cd.NewtonCache.end_fit`)."""
        if self.newton is not None:
            self.newton.end_fit(keep)

    def problem(self, C: float) -> BoxQP:
        n = self.ysign.shape[0]
        return BoxQP(sign=self.ysign, p=np.ones(n), lo=np.zeros(n), hi=C * self.weights,
                     sqnorm=self.sqnorm, X=self.X if self.kernel is None else None,
                     kernel=self.kernel, newton=self.newton)

    def q_matvec(self, v: np.ndarray) -> np.ndarray:
        """``Q v``; in kernel mode incrementally from the previous call."""
        s = self.ysign
        if self.kernel is None:
            return s * np.asarray(self.X @ np.asarray(self.X.T @ (s * v)).ravel()).ravel()
        changed = np.flatnonzero(v != self._v)
        if changed.size:
            dv = s[changed] * (v[changed] - self._v[changed])
            self._qv = self._qv + s * self.kernel.matvec(np.arange(s.size), changed, dv)
            self._v = v.copy()
        return self._qv.copy()


def _fit_task(data: _TaskData, C: float, ref: SVMReference | None, *, rule, tol,
              max_iter, seed, verbose, task) -> tuple[SVMReference, ScreeningReport, int]:
    """Solve one binary problem at ``C``, from a reference (path step) or cold."""
    rng = np.random.RandomState(seed)
    report = ScreeningReport(kind="samples", n_variables=data.ysign.size)
    n_iter = 0
    if ref is None:
        ref, grid = _cold_start(data, C, report, task, verbose)
    else:
        grid = [C]
    for value in grid:
        ref, it = _path_step(data, value, ref, rule, tol, max_iter, rng, report, task,
                             verbose)
        n_iter += it
    return ref, report, n_iter


def _cold_start(data: _TaskData, C: float, report: ScreeningReport, task: str, verbose):
    """First reference of a cold fit: the closed form at C_min (Lemma 9) when it is
    cheap (linear mode, or a kernel whose rows all fit in the cache: it needs
    :math:`Qc` over every sample) and an internal path from there to ``C``; otherwise
    none."""
    n = data.ysign.size
    if data.kernel is not None and data.kernel.cache_capacity < n:
        return None, [C]
    qc = data.q_matvec(data.weights)
    c_min = critical_C(qc[data.weights > 0])
    if C <= c_min:
        alpha = C * data.weights
        ref = SVMReference(C, alpha, C * qc, 0.0)
        report.add(ScreeningEvent("Cmin", "closed_form", C, 0, int((data.weights > 0).sum()),
                                  n, task=task))
        report.n_screened = int((data.weights > 0).sum())
        if verbose:
            print(f"[SafeSVC]{' ' + task if task else ''} C={C:<10.4g} closed form "
                  f"(C <= C_min={c_min:.4g}): every sample at alpha=C")
        return ref, []
    ref = SVMReference(c_min, c_min * data.weights, c_min * qc, 0.0)
    report.add(ScreeningEvent("Cmin", "closed_form", c_min, 0,
                              int((data.weights > 0).sum()), n, task=task))
    n_steps = int(np.floor(np.log(C / c_min) / np.log(INTERNAL_PATH_RATIO)))
    grid = list(c_min * INTERNAL_PATH_RATIO ** np.arange(1, n_steps + 1))
    return ref, [*grid, C] if not grid or grid[-1] < C else grid


def _path_step(data: _TaskData, C, ref, rule, tol, max_iter, rng, report, task, verbose):
    return path_step(
        data.problem(C), C, ref, rule=rule, tol=tol, max_iter=max_iter, rng=rng,
        report=report, label="SafeSVC", verbose=verbose, task=task,
        screen=lambda r, v: screen_svm(rule, r, v, data.sqnorm, data.weights, data.q_matvec))


class SafeSVC(MemoisedParams, ClassifierMixin, BaseEstimator):
    r"""Support vector classifier with safe sample screening.

    Solves the hinge-loss SVM

    .. math::

        \min_{w}\ \tfrac12\|w\|^2 + C\sum_{i=1}^n c_i\max\{0,\ 1 - y_i\,w^\top\Phi(x_i)\}

    in its box-constrained dual :math:`\max_\alpha -\tfrac12\alpha^\top Q\alpha +
    \mathbf 1^\top\alpha`, :math:`0 \le \alpha_i \le Cc_i`, by coordinate descent
    (``solvers.dual_cd``). Before and during the solve, safe screening rules (spec
    ``svm_lad_screening.md`` part A and B5) prove that some samples sit strictly outside
    the margin (:math:`\alpha_i = 0`) or strictly inside it (:math:`\alpha_i = Cc_i`) at the
    optimum and remove them from the optimisation. The answer is the optimum of the full
    problem: every fit certifies it by the full duality gap and the optimality
    conditions of every screened sample, and repairs (with a warning) if needed.

    **Intercept.** With ``fit_intercept=True`` the bias is a *regularised* extra feature of
    value ``intercept_scaling`` (as in LIBLINEAR and :class:`~sklearn.svm.LinearSVC`): the
    kernel becomes :math:`K + s^2`. This is not SVC's unregularised intercept, to which
    the screening rules do not apply (spec E5). With the linear kernel the problem is
    exactly ``LinearSVC(loss="hinge", dual=True)``'s.

    **Paths.** A cold fit with the linear kernel starts from the closed-form solution at
    :math:`C_{\min} = 1/\max_i (Qc)_i` ([OG] Lemma 9) and walks a short internal path to
    ``C`` (ratio ``INTERNAL_PATH_RATIO`` per step), each solution screening the next.
    With ``warm_start=True`` the previous fit on the same data is the reference for the
    new ``C`` (smaller or larger): this is how to walk a regularisation path by hand.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter (> 0); larger values fit the data more closely.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="rbf"
        Kernel, as in :class:`~sklearn.svm.SVC`. Screening needs a positive semi-definite
        kernel; a precomputed or callable kernel is checked (see Notes).
    degree : int, default=3
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly": "scale" is ``1 / (n_features * X.var())``,
        "auto" is ``1 / n_features``.
    coef0 : float, default=0.0
        Independent term of the polynomial kernel (must be >= 0 with screening, which
        keeps the kernel PSD).
    fit_intercept : bool, default=True
        Add a regularised bias feature (see above).
    intercept_scaling : float, default=1.0
        Value of the bias feature.
    screening : {"IT", "BT1", "BT2", "DVI"} or None, default="IT"
        Rule applied from the reference solution: Intersection Test (A6), Ball Test 1
        (A5.1), Ball Test 2 (A5.2), DVI (B5). ``None`` disables all screening, including
        the dynamic gap-ball screening during the solve.
    tol : float, default=1e-4
        Target relative duality gap ``(P - D) / D`` of the full problem.
    max_iter : int, default=10000
        Maximum number of coordinate-descent epochs per solve.
    warm_start : bool, default=False
        Reuse the previous solution on the same data as start point and screening
        reference.
    class_weight : dict or "balanced", default=None
        Multiplies ``C`` per class (box bounds :math:`Cc_i`, spec F2).
    verbose : int, default=0
        Print one line per path step (value, screened counts, gap, time).
    random_state : int, RandomState or None, default=None
        Seeds the coordinate permutations (the optimum does not depend on it).
    n_jobs : int, default=None
        One-vs-rest classes solved in parallel through joblib.
    cache_size : float, default=200
        Memory (MB) of the kernel row cache, as in SVC; it persists across warm-started
        fits on the same data, so a path evaluates each needed kernel row once.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Primal weights (linear kernel only).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling * w_bias`` (0 without intercept).
    dual_coef_ : ndarray of shape (n_tasks, n_SV)
        :math:`\alpha_i y_i` of the support vectors (all samples with :math:`\alpha_i>0`,
        i.e. on or inside the margin) per one-vs-rest task.
    support_ : ndarray of shape (n_SV,)
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty for ``kernel="precomputed"``, as in SVC.
    n_iter_ : ndarray of shape (n_tasks,)
        Coordinate-descent epochs per task, summed over the internal path.
    dual_gap_ : ndarray of shape (n_tasks,)
        Duality gap of the full problem at the returned solution.
    screening_report_ : ScreeningReport
        What was screened, when, by which rule and at what cost.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.svm.LinearSVC : the same problem (linear kernel) without screening.
    sklearn.svm.SVC : kernel SVM with an unregularised intercept.

    Notes
    -----
    A precomputed or callable kernel is checked for positive semi-definiteness (smallest
    eigenvalue of the training kernel, on a random principal submatrix of at most 2000
    samples for larger problems) when screening is on, because screening with an
    indefinite kernel would be unsafe.

    References
    ----------
    K. Ogawa, Y. Suzuki, S. Suzumura, I. Takeuchi. Safe sample screening for support
    vector machines. J. Wang, P. Wonka, J. Ye. Scaling SVM and least absolute deviations
    via exact data reduction. ICML 2014.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import SafeSVC
    >>> X, y = make_classification(random_state=0)
    >>> clf = SafeSVC(kernel="linear", C=0.1).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "C": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"linear", "rbf", "poly", "precomputed"}), callable],
        "degree": [Interval(numbers.Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}),
                  Interval(numbers.Real, 0.0, None, closed="neither")],
        "coef0": [Interval(numbers.Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "screening": [StrOptions(set(SVM_RULES)), None],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "n_jobs": [None, Interval(numbers.Integral, None, None, closed="neither")],
        "cache_size": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, C=1.0, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 fit_intercept=True, intercept_scaling=1.0, screening="IT", tol=1e-4,
                 max_iter=10000, warm_start=False, class_weight=None, verbose=0,
                 random_state=None, n_jobs=None, cache_size=200):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.screening = screening
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.cache_size = cache_size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # ----------------------------------------------------------------- fitting ---
    @limit_blas_threads
    def fit(self, X, y, sample_weight=None):
        """Fit the SVM (one-vs-rest for more than two classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or
            (n_samples, n_samples) for ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            Class labels (numbers or strings).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative per-sample multipliers of ``C``.

        Returns
        -------
        self : SafeSVC
        """
        self._validate_params()
        X, y_ind, classes, weights, kernel_params, bias, content = self._prepare(
            X, y, sample_weight)
        fingerprint = data_fingerprint(*content, weights, self.kernel, kernel_params, bias,
                                       needs_psd_check(self.kernel, self.screening))
        tasks = [1] if classes.size == 2 else list(range(classes.size))
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=len(tasks))
        if self.warm_start and getattr(self, "_fingerprint", None) == fingerprint:
            # same problem: the references, the design matrix and the kernel (with its
            # row cache) are kept
            refs, datas = self._references, self._task_data
        else:
            Xa, kernel = self._build(X, kernel_params, bias)
            refs = [None] * len(tasks)
            datas = [_TaskData(Xa, kernel, np.where(y_ind == k, 1.0, -1.0), weights)
                     for k in tasks]
        names = [str(classes[k]) for k in tasks] if len(tasks) > 1 else [""]
        jobs = [delayed(_fit_task)(d, float(self.C), r, rule=self.screening, tol=self.tol,
                                   max_iter=self.max_iter, seed=s, verbose=self.verbose,
                                   task=name)
                for d, r, s, name in zip(datas, refs, seeds, names, strict=True)]
        if len(jobs) == 1:  # binary: no pool to set up (0.2 ms, a tenth of a path step)
            func, args, kwargs = jobs[0]
            out = [func(*args, **kwargs)]
        else:
            out = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)

        self.classes_ = classes
        self._fingerprint = fingerprint
        self._references = [o[0] for o in out]
        self._task_data = datas
        for d in datas:  # the Newton factors serve the next fit of a path only
            d.end_fit(keep=self.warm_start)
        report = ScreeningReport(kind="samples")
        for _, rep, _ in out:
            report.merge(rep)
        self.screening_report_ = report
        self.n_iter_ = np.array([o[2] for o in out], dtype=np.int64)
        self.dual_gap_ = np.array([o[0].gap for o in out])
        self._set_model(X, datas[0].X, datas, bias, kernel_params)
        return self

    def _encode_labels(self, y):
        """Check the targets and encode them as 0..n_classes-1.

        Along a warm-started path the targets are the same at every step; the check
        (``type_of_target``) and the encoding cost ~0.6 ms, a sixth of a small kernel
        path step, so numeric targets whose content digest matches the previous fit's
        reuse its result. (Object arrays are not cached: their bytes are pointers.)
        """
        key = data_fingerprint(y) if self.warm_start and y.dtype.kind in "biuf" else None
        cached = getattr(self, "_label_cache", None)
        if key is not None and cached is not None and cached[0] == key:
            return cached[1], cached[2]
        check_classification_targets(y)
        encoder = LabelEncoder()
        y_ind = encoder.fit_transform(y)
        self._label_cache = (key, encoder.classes_, y_ind)
        return encoder.classes_, y_ind

    def _prepare(self, X, y, sample_weight):
        """Validate the training data (memoised along warm starts on the same arrays,
        :func:`~sklearn_safescreen._base.memoised_validation`), encode the labels and
        weigh the samples. Returns ``(X, y_ind, classes, weights, kernel parameters,
        bias, content)``, ``content`` identifying the data for the fingerprint."""

        def validate():
            Xv, yv = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                                   order="C")
            sw = _check_sample_weight(sample_weight, Xv, dtype=np.float64,
                                      ensure_non_negative=True)
            return Xv, yv, sw

        (X, y, sw), digest = memoised_validation(self, (X, y, sample_weight), validate)
        classes, y_ind = self._encode_labels(y)
        if classes.size < 2:
            raise ValueError("The number of classes has to be greater than one; got "
                             f"{classes.size} class")
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError("kernel='precomputed' needs a square training kernel matrix; "
                             f"got shape {X.shape}")
        if self.kernel == "poly" and self.coef0 < 0 and self.screening is not None:
            raise ValueError("the polynomial kernel with coef0 < 0 is not guaranteed to be "
                             "positive semi-definite, so screening would be unsafe; use "
                             "coef0 >= 0 or screening=None")
        cw = None
        if self.class_weight == "balanced":
            cw = compute_class_weight("balanced", classes=np.arange(classes.size), y=y_ind)
        elif isinstance(self.class_weight, dict):
            cw = np.array([self.class_weight.get(c, 1.0) for c in classes], dtype=float)
        weights = sw * (cw[y_ind] if cw is not None else 1.0)
        if not np.any(weights > 0):
            raise ValueError("all sample weights are zero: there is nothing to fit")
        kernel_params = self._kernel_params(X, sw)
        bias = self.intercept_scaling if self.fit_intercept else 0.0
        content = (digest,) if digest is not None else (X, y_ind)
        return X, y_ind, classes, weights, kernel_params, bias, content

    def _build(self, X, kernel_params, bias):
        """The design matrix with its bias column (linear) or the kernel."""
        return design_matrix(X, self.kernel, kernel_params, bias, screening=self.screening,
                             cache_size=self.cache_size)

    def __getstate__(self):
        """Pickle without the memo of the caller's input arrays."""
        state = super().__getstate__()
        state.pop("_input_memo", None)
        return state

    # path protocol (path.py): the regularisation parameter, its direction and the
    # critical value below which the solution is closed form
    _path_param = "C"
    _path_increasing = True  # larger C = less regularised

    def _critical_value(self, X, y, sample_weight=None) -> float:
        r""":math:`C_{\min}` ([OG] Lemma 9, spec A8): for every :math:`C \le C_{\min}`
        each one-vs-rest problem has the closed-form optimum :math:`\alpha = Cc`
        (every sample inside the margin). The smallest value over the tasks."""
        self._validate_params()
        X, y_ind, classes, weights, kernel_params, bias, _ = self._prepare(X, y,
                                                                           sample_weight)
        Xa, kernel = self._build(X, kernel_params, bias)
        tasks = [1] if classes.size == 2 else list(range(classes.size))
        values = []
        for k in tasks:
            data = _TaskData(Xa, kernel, np.where(y_ind == k, 1.0, -1.0), weights)
            values.append(critical_C(data.q_matvec(weights)[weights > 0]))
        return float(min(values))

    def _kernel_params(self, X, sample_weight) -> dict:
        """Resolved kernel parameters (see ``_kernels.resolve_kernel_params``)."""
        return resolve_kernel_params(self.kernel, self.gamma, self.degree, self.coef0, X,
                                     sample_weight)

    def _set_model(self, X, Xa, datas, bias, kernel_params):
        alphas = np.vstack([r.alpha for r in self._references])
        signs = np.vstack([d.ysign for d in datas])
        self.support_ = np.flatnonzero((alphas > 0).any(axis=0)).astype(np.int32)
        self.dual_coef_ = (alphas * signs)[:, self.support_]
        if self.kernel == "precomputed":
            self.support_vectors_ = np.empty((0, 0))
        else:
            sv = X[self.support_]
            self.support_vectors_ = sv
        self._kernel_params_ = kernel_params
        self._bias = bias
        if self.kernel == "linear":
            W = np.vstack([np.asarray(Xa.T @ (r.alpha * d.ysign)).ravel()
                           for r, d in zip(self._references, datas, strict=True)])
            self.coef_ = W[:, :X.shape[1]]
            self.intercept_ = W[:, X.shape[1]] * bias if bias else np.zeros(W.shape[0])

    # -------------------------------------------------------------- prediction ---
    def decision_function(self, X):
        """Signed distance to the separating hyperplane, per one-vs-rest task.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.kernel == "linear":
            scores = np.asarray(X @ self.coef_.T) + self.intercept_
        else:
            if self.kernel == "precomputed":
                if X.shape[1] != self.n_features_in_:
                    raise ValueError("X must be the kernel between test and training "
                                     f"samples, of shape (n_test, {self.n_features_in_})")
                K = np.asarray(X[:, self.support_], dtype=np.float64)
            else:
                km = KernelMatrix(None, self.kernel, self._kernel_params_, 0.0)
                K = km.cross(X, self.support_vectors_)
            scores = (K + self._bias**2) @ self.dual_coef_.T
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels: the sign of the score (binary) or the best one-vs-rest score."""
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]
