r"""The exact regularisation path of the 1-norm SVM (the problem of
:class:`~sklearn_safescreen.SafeLPSVC`), every breakpoint, by a parametric simplex in
the L1 weight (:mod:`.solvers.lp_homotopy`; ``doc/theory/lp_svm.rst``), and the path
step of ``SafeLPSVC(solver="homotopy")``, which reads each fit's model off that path and
resumes it along a warm-started walk (:class:`LPSVMSolverPath`)."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_array, check_consistent_length
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight

from ._utils.blas import single_blas_thread
from ._utils.warnings import PrecisionWarning, warn_user
from ._validation import check_magnitude, check_weighted_classes, class_weights
from .problems.lp_svm import LPSVMData, add_intercept_column
from .solvers.lp_homotopy import (
    ABOVE,
    BELOW,
    FEATURE,
    GAP_RTOL,
    L_STATUS,
    PathFollower,
    make_core,
)

#: Largest magnitude of an entry of X (as in SafeLPSVC): margins and correlations are
#: sums of products.
MAX_ENTRY = 1e100

#: The fields of the ``events`` array :func:`lp_svm_path` returns.
EVENT_DTYPE = np.dtype([("enter", "U7"), ("enter_index", np.intp), ("sign", np.int8),
                        ("leave", "U7"), ("leave_index", np.intp), ("gap", np.float64)])

_ENTER_NAMES = {FEATURE: "feature", BELOW: "below", ABOVE: "above"}
_LEAVE_NAMES = {FEATURE: "feature", 3: "sample"}


def lp_svm_path(X, y, *, eps: float = 1e-3, alpha_min: float | None = None,
                max_breakpoints: int | None = None, fit_intercept: bool = True,
                intercept_scaling: float = 1.0, sample_weight=None, class_weight=None,
                return_dual: bool = False, compiled: bool = True):
    r"""The exact solution path of the 1-norm SVM, every breakpoint from ``alpha_max``
    down.

    The problem is that of :class:`~sklearn_safescreen.SafeLPSVC` (the same scaling of
    ``alpha``, loss averaged over the samples of positive weight, weights rescaled to
    average 1, the intercept a penalised constant column of value
    ``intercept_scaling``):

    .. math::

        \min_w\ \alpha\|w\|_1+\frac1n\sum_{i=1}^nc_i\max\{0,\ 1-y_iw^\top x_i\}.

    It is a linear program whose costs are linear in :math:`\alpha`: its solution is
    **piecewise constant** in :math:`\alpha`, a vertex of the feasible polytope on each
    interval between two breakpoints, and at a breakpoint every point of the segment
    between the two vertices is optimal (so the path is piecewise linear in
    :math:`\|w\|_1`, the parameter of the constrained form). The dual solution is
    continuous and piecewise linear in :math:`\alpha`. The path is followed by a
    parametric simplex (``doc/theory/lp_svm.rst``): at each breakpoint one variable enters
    the basis (a feature joins the support, or a sample on the margin leaves it) and one
    leaves (a feature leaves the support, or a sample reaches the margin).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data; sparse input (CSR or CSC) is never densified.
    y : array-like of shape (n_samples,)
        Two class labels; the second (in sorted order) is the positive class.
    eps : float, default=1e-3
        The path stops at ``eps * alpha_max`` (unless ``alpha_min`` is given), or
        earlier where its last vertex is optimal down to 0 (a separable problem).
    alpha_min : float, default=None
        The smallest ``alpha`` of the path, positive (overrides ``eps``).
    max_breakpoints : int, default=None
        Stop after this many breakpoints.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
        As in :class:`~sklearn_safescreen.SafeLPSVC`.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the samples' losses; samples of weight 0 are left out.
    class_weight : dict or "balanced", default=None
        Multiplies the loss of each class's samples.
        ``"balanced"`` weighs class ``c`` by ``sum(sample_weight) / (n_classes * W_c)``,
        ``W_c`` the total ``sample_weight`` of its samples (without ``sample_weight``:
        ``n_samples / (n_classes * n_c)``, its count), as scikit-learn's
        ``compute_class_weight`` with ``sample_weight``: a fit with an integer
        ``sample_weight`` equals the fit on the samples repeated that many times.
    return_dual : bool, default=False
        Also return the dual solution at each breakpoint (dense, ``n_samples`` values a
        breakpoint).
    compiled : bool, default=True
        Follow the path with the compiled core; False: with the NumPy reference
        implementation, which makes the same pivots (slower; for checking).

    Returns
    -------
    alphas : ndarray of shape (n_breakpoints,)
        The breakpoints, non-increasing, ``alphas[0] = alpha_max``. A degenerate
        breakpoint (several events at one ``alpha``) appears once per event.
    coefs : scipy.sparse.csc_matrix of shape (n_features, n_breakpoints)
        ``coefs[:, k]`` is the vertex after the event at ``alphas[k]``: optimal for every
        ``alpha`` in ``[alphas[k + 1], alphas[k]]`` (down to the path's end for the last
        one). Above ``alphas[0]`` the solution is 0.
    intercepts : ndarray of shape (n_breakpoints,)
        ``intercept_scaling`` times the intercept column's weight (0 without intercept).
    events : ndarray of shape (n_breakpoints,), structured
        Fields ``enter`` (``"feature"``: feature ``enter_index`` joins the support with
        sign ``sign``; ``"below"`` or ``"above"``: sample ``enter_index``, on the margin,
        leaves it to a margin below 1, dual at its bound, or above 1, dual 0),
        ``leave`` (``"feature"``: feature ``leave_index`` leaves the support;
        ``"sample"``: sample ``leave_index`` reaches the margin) and ``gap``, the
        relative duality gap certified at the breakpoint. The intercept is feature
        ``n_features``; samples are indexed in ``X``.
    dual_coefs : ndarray of shape (n_samples, n_breakpoints)
        Only with ``return_dual``: the dual :math:`\alpha_i` (as SafeLPSVC's
        ``dual_coef_``) at each breakpoint; linear in ``alpha`` between breakpoints.

    See Also
    --------
    lp_svm_path_at : the solution at given values of ``alpha``, read off the path.
    SafeLPSVC : the same problem at one ``alpha``.
    sklearn.linear_model.lars_path : the lasso's path.

    References
    ----------
    J. Zhu, S. Rosset, T. Hastie, R. Tibshirani. 1-norm support vector machines.
    NIPS 2003.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_safescreen import lp_svm_path
    >>> X, y = make_classification(60, 20, n_informative=3, random_state=0)
    >>> alphas, coefs, intercepts, events = lp_svm_path(X, y, eps=0.1)
    >>> bool(alphas[0] > alphas[-1] >= 0.1 * alphas[0])
    True
    >>> str(events["enter"][0]), bool(coefs[:, 0].nnz == 1)
    ('feature', True)
    """
    # a positive end: near 0 the objectives of a separable problem vanish with alpha,
    # and a relative gap there measures round-off
    if not isinstance(eps, numbers.Real) or not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got {eps!r}")
    if alpha_min is not None and (not isinstance(alpha_min, numbers.Real)
                                  or not alpha_min > 0):
        raise ValueError(f"alpha_min must be a positive number; got {alpha_min!r}")
    if max_breakpoints is not None and (not isinstance(max_breakpoints, numbers.Integral)
                                        or max_breakpoints < 1):
        raise ValueError(f"max_breakpoints must be a positive integer; got "
                         f"{max_breakpoints!r}")
    if not isinstance(intercept_scaling, numbers.Real) or not intercept_scaling > 0:
        raise ValueError(f"intercept_scaling must be positive; got {intercept_scaling!r}")
    X, y_ind, classes, weights = _inputs(X, y, sample_weight, class_weight)
    if classes.size != 2:
        raise ValueError(f"lp_svm_path needs two classes; got {classes.size}. Fit one "
                         "path per class against the rest for more.")
    Xk, c, keep = _weighted(X, weights, fit_intercept, intercept_scaling)
    labels = np.where(y_ind[keep] == 1, 1.0, -1.0)
    data = LPSVMData(Xk, labels, c)
    lam_max = data.lambda_max()
    if lam_max <= 0.0:
        raise ValueError("X^T (weighted labels) is zero: w = 0 is optimal for every alpha "
                         "and the path has no breakpoint")
    lam_min = float(alpha_min) if alpha_min is not None else eps * lam_max
    points, _ = _follow(data, lam_min, max_breakpoints, return_dual, compiled)
    return _assemble(points, X.shape[1], fit_intercept, intercept_scaling, keep, labels,
                     data, return_dual)


def _follow(data: LPSVMData, lam_min: float, max_breakpoints, keep_status: bool,
            compiled: bool, values=(), keep_points: bool = True):
    """The breakpoints (none kept without ``keep_points``: only their gaps are checked)
    and the snapshots at ``values``, with the warnings of a path that lost accuracy."""
    solver = PathFollower(make_core(data, compiled), data, keep_status=keep_status)
    # one BLAS thread: the products' rounding, hence the tie decisions and the path,
    # must not depend on the thread count
    with single_blas_thread():
        if keep_points:
            points = list(solver.run(lam_min, max_breakpoints, values))
        else:
            points = []
            worst = None
            for point in solver.run(lam_min, max_breakpoints, values):
                if worst is None or point.gap > worst.gap:
                    worst = point
            if worst is not None:
                points = [worst]
    if solver.drift_events:
        warn_user(f"lp_svm_path: the basis factor lost accuracy {solver.drift_events} "
                  "time(s) along the path and was refactorised from scratch; the "
                  "breakpoints' certified gaps are in events['gap'].", PrecisionWarning)
    worst = max((p.gap for p in points), default=0.0)
    if worst > GAP_RTOL:
        warn_user(f"lp_svm_path: a breakpoint's relative duality gap is {worst:.3g} "
                  f"(> {GAP_RTOL:g}) even with a fresh factor: the data may be too badly "
                  "scaled for double precision (try StandardScaler).", PrecisionWarning)
    return points, solver.snapshots


def lp_svm_path_at(alphas, coefs, intercepts, values, dual_coefs=None):
    """The solution at each of ``values``, read off a path of :func:`lp_svm_path`.

    The solution is constant between breakpoints; at a breakpoint (where a segment of
    solutions is optimal) the vertex of the interval below it is returned. The dual is
    linear between breakpoints: with ``dual_coefs`` it is interpolated.

    Parameters
    ----------
    alphas, coefs, intercepts :
        What :func:`lp_svm_path` returned.
    values : array-like of shape (n_values,)
        Values of ``alpha``, each at least the path's ``alpha_min`` (below that the path
        does not tell) and, with ``dual_coefs``, at least its last breakpoint.
    dual_coefs : ndarray of shape (n_samples, n_breakpoints), default=None
        The duals :func:`lp_svm_path` returned with ``return_dual=True``.

    Returns
    -------
    coefs : scipy.sparse.csc_matrix of shape (n_features, n_values)
    intercepts : ndarray of shape (n_values,)
    dual_coefs : ndarray of shape (n_samples, n_values)
        Only with ``dual_coefs``: the dual :math:`\\alpha_i` (as SafeLPSVC's
        ``dual_coef_``) at each value.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    coefs = sp.csc_matrix(coefs)
    intercepts = np.asarray(intercepts, dtype=np.float64)
    if alphas.ndim != 1 or coefs.shape[1] != alphas.size or intercepts.shape != alphas.shape:
        raise ValueError("alphas, coefs and intercepts must be those of one lp_svm_path")
    # the last breakpoint at or above each value (alphas is non-increasing)
    k = np.searchsorted(-alphas, -values, side="right") - 1
    zero = k < 0
    kk = np.where(zero, 0, k)
    out = coefs[:, kk].tocsc()
    if zero.any():
        scale = sp.diags((~zero).astype(np.float64))
        out = (out @ scale).tocsc()
        out.eliminate_zeros()
    b = np.where(zero, 0.0, intercepts[kk])
    if dual_coefs is None:
        return out, b
    dual_coefs = np.asarray(dual_coefs, dtype=np.float64)
    if dual_coefs.ndim != 2 or dual_coefs.shape[1] != alphas.size:
        raise ValueError("dual_coefs must have one column per breakpoint")
    if np.any(values < alphas[-1]):
        raise ValueError(f"the dual is recorded down to the last breakpoint "
                         f"({alphas[-1]:.6g}); got a value below it")
    # on [alphas[k + 1], alphas[k]] one basis is optimal and its dual is affine: the
    # dual at alphas[k] and (by continuity) at alphas[k + 1] determine it
    nxt = np.minimum(kk + 1, alphas.size - 1)
    width = alphas[kk] - alphas[nxt]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(width > 0, (values - alphas[nxt]) / width, 1.0)
    frac = np.where(zero, 1.0, np.clip(frac, 0.0, 1.0))
    dual = dual_coefs[:, nxt] + frac * (dual_coefs[:, kk] - dual_coefs[:, nxt])
    return out, b, dual


def _inputs(X, y, sample_weight, class_weight):
    """``(X, y_ind, classes, weights)`` checked: labels encoded, weights the sample
    weights times the class weights."""
    X = check_array(X, accept_sparse=("csr", "csc"), dtype=np.float64)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    check_consistent_length(X, y)
    check_magnitude(X, "X", MAX_ENTRY, "margins and correlations sum products")
    check_classification_targets(y)
    encoder = LabelEncoder()
    y_ind = encoder.fit_transform(y)
    classes = encoder.classes_
    if classes.size < 2:
        raise ValueError(f"needs at least two classes; got {classes.size}")
    sw = _check_sample_weight(sample_weight, X, dtype=np.float64,
                              ensure_non_negative=True)
    cw = class_weights(class_weight, classes, y_ind, sw)
    weights = sw * (cw[y_ind] if cw is not None else 1.0)
    check_weighted_classes(weights, y_ind, classes)
    return X, y_ind, classes, weights


def _weighted(X, weights, fit_intercept, intercept_scaling):
    """The samples of positive weight (with the intercept column) and their weights
    rescaled to average 1, as SafeLPSVC fits them."""
    keep = weights > 0
    if not keep.any():
        raise ValueError("all sample weights are zero: there is nothing to fit")
    Xk = X[keep] if not keep.all() else X
    if fit_intercept:
        Xk = add_intercept_column(Xk, intercept_scaling)
    return Xk, weights[keep] / weights[keep].mean(), keep


def fit_along_path(estimator, X, y, sample_weight=None, *, eps: float = 1e-3,
                   max_breakpoints: int | None = None):
    """The body of :meth:`SafeLPSVC.fit_path <sklearn_safescreen.SafeLPSVC.fit_path>`:
    the exact path of each one-vs-rest task from its ``alpha_max`` down to
    ``min(alpha, eps * alpha_max)``, stored on ``estimator`` (``alphas_``,
    ``coef_path_``, ``intercept_path_``, ``path_events_``), and the model at
    ``estimator.alpha`` read off it, with its dual and the full problem's certified
    relative gap (``coef_``, ``intercept_``, ``dual_coef_``, ``dual_gap_``)."""
    from sklearn.utils.validation import validate_data

    if not isinstance(eps, numbers.Real) or not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got {eps!r}")
    if max_breakpoints is not None and (not isinstance(max_breakpoints, numbers.Integral)
                                        or max_breakpoints < 1):
        raise ValueError(f"max_breakpoints must be a positive integer; got "
                         f"{max_breakpoints!r}")
    estimator._validate_params()
    X, y = validate_data(estimator, X, y, accept_sparse=("csr", "csc"), dtype=np.float64)
    X, y_ind, classes, weights = _inputs(X, y, sample_weight, estimator.class_weight)
    fit_intercept = estimator.fit_intercept
    scaling = float(estimator.intercept_scaling)
    Xk, c, keep = _weighted(X, weights, fit_intercept, scaling)
    if classes.size == 2:
        tasks = [np.where(y_ind[keep] == 1, 1.0, -1.0)]
    else:
        tasks = [np.where(y_ind[keep] == k, 1.0, -1.0) for k in range(classes.size)]
    d = X.shape[1]
    alpha = float(estimator.alpha)
    paths, coef, intercept, gaps = [], [], [], []
    dual = np.zeros((len(tasks), keep.size))
    for t, labels in enumerate(tasks):
        data = LPSVMData(Xk, labels, c)
        lam_max = data.lambda_max()
        lam_min = min(alpha, eps * lam_max)
        points, snaps = _follow(data, lam_min, max_breakpoints, False, True, [alpha])
        paths.append(_assemble(points, d, fit_intercept, scaling, keep, labels, data,
                               False))
        if alpha not in snaps:
            raise ValueError(f"the path stopped after {len(points)} breakpoints, above "
                             f"alpha={alpha:g}: raise max_breakpoints")
        w, b, alpha_dual, gap = _model_at(data, snaps[alpha], alpha, labels, d,
                                          fit_intercept, scaling)
        coef.append(w)
        intercept.append(b)
        dual[t, keep] = alpha_dual
        gaps.append(gap)
    binary = len(tasks) == 1
    estimator.classes_ = classes
    estimator.alphas_ = paths[0][0] if binary else [p[0] for p in paths]
    estimator.coef_path_ = paths[0][1] if binary else [p[1] for p in paths]
    estimator.intercept_path_ = paths[0][2] if binary else [p[2] for p in paths]
    estimator.path_events_ = paths[0][3] if binary else [p[3] for p in paths]
    estimator.alpha_max_ = max(float(p[0][0]) if len(p[0]) else 0.0 for p in paths)
    estimator.coef_ = np.vstack(coef)
    estimator.intercept_ = np.array(intercept)
    estimator.dual_coef_ = dual
    estimator.dual_gap_ = np.array(gaps)
    estimator.n_iter_ = np.array([len(p[0]) for p in paths], dtype=np.int64)
    return estimator


def _model_at(data: LPSVMData, snapshot, alpha: float, labels, d: int,
              fit_intercept: bool, scaling: float):
    """``(coef, intercept, dual, rel_gap)`` at ``alpha`` from the path's snapshot there,
    with the full problem's certificate (the dual clipped to its box)."""
    support, values, margin_set, margin_dual, status = snapshot
    w = np.zeros(data.n_features)
    w[support] = values
    a = np.where(status == L_STATUS, data.s, 0.0)
    a[margin_set] = np.clip(margin_dual, 0.0, data.s[margin_set])
    cert = data.certificate(alpha, w, labels * a)
    return (w[:d], w[d] * scaling if fit_intercept else 0.0, cert.dual_point.alpha,
            cert.rel_gap)


def lp_svm_models_at(X, y, alphas, *, fit_intercept: bool = True,
                     intercept_scaling: float = 1.0, sample_weight=None,
                     class_weight=None) -> dict:
    """The models of :class:`~sklearn_safescreen.SafeLPSVC` at every value of
    ``alphas``, read off one walk of the exact path per one-vs-rest task.

    The walk goes from each task's ``alpha_max`` down to the smallest value and keeps
    no breakpoint: the models are the path's vertices at ``alphas`` (what
    ``SafeLPSVC(alpha=a).fit(X, y)`` finds, up to the choice among the optimal points
    at a value that is itself a breakpoint), each with its dual and the full problem's
    certified relative gap. This is the way for a cross-validation over a grid of
    ``alpha`` to score a fold without solving at each value.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data (sparse input is kept sparse).
    y : array-like of shape (n_samples,)
        Class labels (two or more classes; one-vs-rest beyond two, as SafeLPSVC).
    alphas : array-like of shape (n_values,)
        Positive values of the L1 weight, in any order.
    fit_intercept, intercept_scaling, sample_weight, class_weight :
        As in :class:`~sklearn_safescreen.SafeLPSVC`.

    Returns
    -------
    models : dict
        ``classes`` (ndarray of shape (n_classes,)), ``coef`` (ndarray of shape
        (n_values, n_tasks, n_features)), ``intercept`` (ndarray of shape (n_values,
        n_tasks)), ``dual_coef`` (ndarray of shape (n_values, n_tasks, n_samples)),
        ``dual_gap`` (ndarray of shape (n_values, n_tasks)), in the order of
        ``alphas``; ``n_tasks`` is 1 for two classes.
    """
    values = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if values.ndim != 1 or not values.size or not np.all(np.isfinite(values)) \
            or np.any(values <= 0):
        raise ValueError("alphas must be a non-empty 1-d array of positive values")
    if not isinstance(intercept_scaling, numbers.Real) or not intercept_scaling > 0:
        raise ValueError(f"intercept_scaling must be positive; got {intercept_scaling!r}")
    X, y_ind, classes, weights = _inputs(X, y, sample_weight, class_weight)
    scaling = float(intercept_scaling)
    Xk, c, keep = _weighted(X, weights, fit_intercept, scaling)
    if classes.size == 2:
        tasks = [np.where(y_ind[keep] == 1, 1.0, -1.0)]
    else:
        tasks = [np.where(y_ind[keep] == k, 1.0, -1.0) for k in range(classes.size)]
    d, m = X.shape[1], values.size
    coef = np.zeros((m, len(tasks), d))
    intercept = np.zeros((m, len(tasks)))
    dual = np.zeros((m, len(tasks), keep.size))
    gaps = np.zeros((m, len(tasks)))
    for t, labels in enumerate(tasks):
        data = LPSVMData(Xk, labels, c)
        lam_max = data.lambda_max()
        high = values >= lam_max
        # at and above alpha_max, w = 0 (the path starts there)
        low = values[~high]
        snaps = {}
        if low.size:
            _, snaps = _follow(data, float(low.min()), None, False, True,
                               np.unique(low), keep_points=False)
        for v, a in enumerate(values):
            snap = snaps.get(float(a))
            if snap is None:
                snap = (np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0, np.intp),
                        np.zeros(0), np.zeros(data.n_samples, dtype=np.int8))
            w, b, alpha_dual, gap = _model_at(data, snap, float(a), labels, d,
                                              fit_intercept, scaling)
            coef[v, t], intercept[v, t], gaps[v, t] = w, b, gap
            dual[v, t, keep] = alpha_dual
    return dict(classes=classes, coef=coef, intercept=intercept, dual_coef=dual,
                dual_gap=gaps)


def _assemble(points, n_features, fit_intercept, intercept_scaling, keep, labels, data,
              return_dual):
    K = len(points)
    alphas = np.array([p.lam for p in points])
    indptr = np.zeros(K + 1, dtype=np.intp)
    idx, vals = [], []
    intercepts = np.zeros(K)
    for k, p in enumerate(points):
        nz = p.values != 0.0
        sup, val = p.support[nz], p.values[nz]
        if fit_intercept:
            last = sup == n_features
            if last.any():
                intercepts[k] = float(val[last][0]) * intercept_scaling
            sup, val = sup[~last], val[~last]
        order = np.argsort(sup)
        idx.append(sup[order])
        vals.append(val[order])
        indptr[k + 1] = indptr[k] + len(sup)
    coefs = sp.csc_matrix((np.concatenate(vals) if K else np.zeros(0),
                           np.concatenate(idx) if K else np.zeros(0, dtype=np.intp),
                           indptr), shape=(n_features, K))
    sample_ids = np.flatnonzero(keep)
    events = np.zeros(K, dtype=EVENT_DTYPE)
    for k, p in enumerate(points):
        events[k] = (_ENTER_NAMES[p.enter],
                     p.enter_index if p.enter == FEATURE else sample_ids[p.enter_index],
                     p.sign, _LEAVE_NAMES[p.leave],
                     p.leave_index if p.leave == FEATURE else sample_ids[p.leave_index],
                     p.gap)
    if not return_dual:
        return alphas, coefs, intercepts, events
    dual = np.zeros((keep.size, K))
    for k, p in enumerate(points):
        a = np.where(p.status == L_STATUS, data.s, 0.0)
        a[p.margin_set] = np.clip(p.margin_dual, 0.0, data.s[p.margin_set])
        dual[sample_ids, k] = labels * a
    return alphas, coefs, intercepts, events, dual
