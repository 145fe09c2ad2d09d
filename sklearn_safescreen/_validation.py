"""Input validation along a path: memoised for warm starts on the very same arrays."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._utils.fingerprint import data_fingerprint


def _same_memory(a, b) -> bool:
    """Whether ``b`` is the numeric ndarray ``a`` or a view of exactly its elements, or
    the very numeric sparse matrix ``a`` (whose digest covers its three arrays)."""
    if sp.issparse(a) or sp.issparse(b):
        return a is b and a.format in ("csr", "csc") and a.dtype.kind in "biuf"
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    if a.dtype.kind not in "biuf":  # object arrays: the digest sees pointers only
        return False
    return a is b or (a.dtype == b.dtype and a.size == b.size
                      and a.ctypes.data == b.ctypes.data
                      and (a.flags.c_contiguous and b.flags.c_contiguous
                           or (a.shape, a.strides) == (b.shape, b.strides)))


@dataclass
class InputMemo:
    """The inputs of the last validated fit, for warm starts on the very same arrays.

    Input validation (shapes, dtypes, finite values, non-negative weights) depends only
    on the content of the arrays. Along a path every fit receives the same objects, and
    validating them again would be a sizeable share of a short path step (a large
    sparse matrix's validation costs more than its digest). When validation returned
    the caller's arrays unchanged (or views of exactly their memory), a later fit that
    receives the same objects whose content digest (:func:`data_fingerprint`) equals
    the validated one skips it: an in-place change of any entry changes the digest
    (:func:`~._utils.fingerprint.content_digest`), so the new content is validated again.

    ``raw`` holds the caller's objects (``None`` for an omitted argument),
    ``validated`` what validation returned, ``digest`` the fingerprint of ``validated``.
    """

    raw: tuple
    validated: tuple
    digest: str

    @classmethod
    def remember(cls, raw: tuple, validated: tuple) -> InputMemo | None:
        """A memo when every given argument came back from validation as the same
        numeric array or a view of exactly its memory (a converted copy would hide later
        changes to the original)."""
        for r, v in zip(raw, validated, strict=True):
            if r is not None and not _same_memory(r, v):
                return None
        return cls(raw, validated, data_fingerprint(*validated))

    def reuse(self, raw: tuple, unchanged: bool = False) -> str | None:
        """The digest if ``raw`` are the remembered objects with unchanged content
        (``unchanged``: the caller vouches for their content, see
        :class:`~sklearn_safescreen.base.FitContext`)."""
        if len(raw) != len(self.raw) or any(
                a is not b for a, b in zip(raw, self.raw, strict=True)):
            return None
        if unchanged:
            return self.digest
        digest = data_fingerprint(*self.validated)
        return digest if digest == self.digest else None


def memoised_validation(estimator, raw: tuple, validate) -> tuple[tuple, str | None]:
    """``(validate(), digest)`` through the estimator's :class:`InputMemo` (warm starts
    only): the remembered result when ``raw`` are the same unchanged arrays, else a new
    validation, remembered when possible. ``digest`` identifies the validated content,
    or is ``None`` when it could not be remembered (fingerprint the arrays instead)."""
    memo = getattr(estimator, "_input_memo", None) if estimator.warm_start else None
    if memo is not None:
        context = estimator.__dict__.get("_fit_context")
        digest = memo.reuse(raw, context is not None and context.inputs_unchanged)
        if digest is not None:
            return memo.validated, digest
    validated = validate()
    memo = InputMemo.remember(raw, validated) if estimator.warm_start else None
    estimator._input_memo = memo
    return validated, None if memo is None else memo.digest



def check_magnitude(values, name: str, limit: float, why: str) -> None:
    """Refuse finite entries above ``limit`` in magnitude, with the reason: the solvers
    square them (and metric learning takes fourth powers), so larger ones overflow to
    inf and NaN deep inside a fit."""
    data = values.data if sp.issparse(values) else values
    if data.size == 0:
        return
    top = float(np.max(np.abs(data)))
    if top > limit:
        raise ValueError(
            f"{name} has entries up to {top:.3g} in magnitude; {why}, so entries above "
            f"{limit:.0e} are not supported. Rescale {name} (e.g. with StandardScaler).")


def check_dense_precomputed(kernel, X) -> None:
    """Refuse a sparse kernel matrix with SVC's error: the kernel code reads a
    precomputed kernel's rows as dense arrays (a sparse one would fail deep inside the
    fit with an unclear error)."""
    if kernel == "precomputed" and sp.issparse(X):
        raise TypeError("Sparse precomputed kernels are not supported: pass the kernel "
                        "matrix as a dense array (e.g. K.toarray()).")


def class_weights(class_weight, classes: np.ndarray, y_ind: np.ndarray,
                  sample_weight: np.ndarray | None = None) -> np.ndarray | None:
    """Per-class multipliers of ``C`` (``None``: all 1), validated: a dict must name
    classes of ``y`` only and give finite non-negative weights.

    ``"balanced"`` weighs each class by the inverse of its total sample weight,
    :math:`\\sum_i s_i / (k\\,\\sum_{i: y_i = c} s_i)` with :math:`k` the number of
    classes of positive total weight (as scikit-learn's ``compute_class_weight`` with
    ``sample_weight``), so that an integer ``sample_weight`` fits the model of the
    samples repeated that many times. A class whose samples all have weight 0 gets 1:
    its samples weigh nothing whatever it gets (scikit-learn's would be infinite, and
    ``inf * 0`` is NaN).
    """
    if class_weight is None:
        return None
    if class_weight == "balanced":
        sw = np.ones(y_ind.size) if sample_weight is None else sample_weight
        totals = np.bincount(y_ind, weights=sw, minlength=classes.size)
        present = totals > 0
        cw = np.ones(classes.size)
        if present.any():
            cw[present] = totals.sum() / (np.count_nonzero(present) * totals[present])
        return cw
    known = set(classes.tolist())
    unknown = [k for k in class_weight if k not in known]
    if unknown:
        raise ValueError(f"class_weight names {sorted(unknown, key=str)}, not among the "
                         f"classes of y ({classes.tolist()})")
    cw = np.array([class_weight.get(c, 1.0) for c in classes.tolist()], dtype=float)
    bad = ~np.isfinite(cw) | (cw < 0)
    if bad.any():
        given = dict(zip(classes[bad].tolist(), cw[bad].tolist(), strict=True))
        raise ValueError(f"class_weight must be finite and non-negative; got {given}")
    return cw


def check_weighted_classes(weights: np.ndarray, y_ind: np.ndarray,
                           classes: np.ndarray) -> None:
    """Refuse weights (sample weights times class weights) that leave nothing to fit,
    or only one class to fit: a classifier needs samples of positive weight in two
    classes at least, else there is no boundary to learn (SVC refuses them too: "all
    samples with positive weights belong to the same class")."""
    positive = weights > 0
    if not positive.any():
        raise ValueError("all sample weights are zero: there is nothing to fit")
    # (counted, not sorted: this runs at every fit of a path)
    weighted = np.flatnonzero(np.bincount(y_ind[positive], minlength=classes.size))
    if weighted.size < 2:
        labels = classes.tolist()
        only = labels[weighted[0]]
        others = [c for c in labels if c != only]
        raise ValueError(
            "Invalid input - all samples with positive weights belong to the same class "
            f"({only!r}): sample_weight times class_weight is 0 on every sample of "
            f"{others}, and a classifier needs samples of positive weight in two classes")


#: float64's unit roundoff: 1 / EPS bounds the figure C * sum(c) * max K(x, x) of a
#: box-QP dual whose margins float64 can resolve (see :func:`check_resolvable`).
EPS = float(np.finfo(np.float64).eps)


def resolvable_terms(weights: np.ndarray, sqnorm: np.ndarray) -> tuple[float, float]:
    """The problem's factors of :func:`check_resolvable`'s figure, which do not depend
    on ``C``: the sum of the weights and the largest kernel diagonal entry (computed
    once per problem along a path).

    Parameters
    ----------
    weights : ndarray of shape (n_samples,)
        Each sample's multiplier of ``C``.
    sqnorm : ndarray of shape (n_samples,)
        The kernel's diagonal (its bias term included).

    Returns
    -------
    (float, float)
    """
    return float(np.sum(weights)), float(np.max(sqnorm, initial=0.0))


def check_resolvable(name: str, C: float, weights: np.ndarray | None,
                     sqnorm: np.ndarray | None, hinge: bool = False, *,
                     terms: tuple[float, float] | None = None) -> None:
    r"""Refuse, before any solve, a box-QP dual (SafeSVC, SafeLAD) that float64 cannot
    resolve.

    A margin :math:`(Q\alpha)_i = \sum_j \alpha_j s_i s_j K(x_i, x_j)` sums terms of
    magnitude up to :math:`|\alpha_j| \max_k K(x_k, x_k)` (Cauchy-Schwarz), so its
    rounding is up to :math:`\epsilon\sum_j|\alpha_j|\max_k K(x_k,x_k)` (the intercept's
    ``intercept_scaling**2`` included in :math:`K`). When this figure reaches 1, the
    unit of the losses (the hinge's margin, the absolute deviation's scale in the
    solver's coordinates), the margins carry no information: the solve cannot be
    certified to any useful gap, and what it returns can be worse than ``coef_ = 0``.

    Before the solve only the box bounds the dual variables, :math:`|\alpha_j|\le
    Cc_j`, so the figure is taken as :math:`\epsilon\,C\sum_j c_j\max_k K(x_k,x_k)`.
    That is the figure of LAD (``hinge=False``), whose solution generally keeps samples
    at the bound (a linear model on more samples than features cannot interpolate).
    The SVM's solution stops growing with ``C`` once the data are separated
    (:math:`\alpha^*` is then the hard-margin solution, far below the box): its figure
    is decided by the path from the solution's own dual variables
    (:meth:`~.engine.box_qp.BoxQPPath.fit`), and here ``hinge=True`` refuses only
    where the box's figure exceeds :math:`1/\epsilon^2`, beyond which the products
    of the dual's terms could overflow before the path could tell (``C = inf``, the
    hard margin, has no box and is decided by the path alone). The figure also bounds
    the dual objective's terms, so that every accepted problem's objective and gap are
    finite (``C = 1e300`` used to overflow).

    ``terms``, when given, are :func:`resolvable_terms` of ``weights`` and ``sqnorm``
    (then not read): along a path they are the same at every ``C``.
    """
    total, top = terms if terms is not None else resolvable_terms(weights, sqnorm)
    if total <= 0.0 or top <= 0.0 or (hinge and np.isinf(C)):
        return
    log_figure = np.log10(C) + np.log10(total) + np.log10(top)
    limit = 1.0 / EPS**2 if hinge else 1.0 / EPS
    if log_figure > np.log10(limit):
        c_max = limit / (total * top)
        why = ("the products of the dual's terms could overflow before the solution "
               "could show whether it is separable (use C=np.inf for the hard margin)"
               if hinge else
               "the rounding of a margin, a sum of terms up to C * c_j * K(x_j, x_j), "
               "would exceed the loss's unit, so no solve could be certified and the "
               "result could be worse than coef_ = 0")
        raise ValueError(
            f"{name}: C * sum(sample weights) * max_i K(x_i, x_i) = 10^{log_figure:.1f} "
            f"exceeds {'1/eps^2' if hinge else '1/eps'} = {limit:.3g} (K includes the "
            f"intercept's intercept_scaling**2; max K(x_i, x_i) = {top:.3g}, sum of "
            f"weights {total:.6g}): {why}. Use C <= {c_max:.3g} or rescale X (e.g. with "
            "StandardScaler).")


#: ``log10`` of :func:`check_resolvable`'s limits, by ``hinge`` (the same scalar calls)
_LOG_LIMITS = {False: np.log10(1.0 / EPS), True: np.log10(1.0 / EPS**2)}


@dataclass(frozen=True)
class Resolvability:
    """:func:`check_resolvable` for a fit's tasks at any ``C``: each task's C-free
    factors read once (along a path they are the same at every ``C``), and the figures
    of all the tasks compared at once instead of a call per task (a one-vs-one fit of
    many classes has many). The figures are the same sums of the same logarithms as
    :func:`check_resolvable`'s, so the same tasks are refused, and a task over its
    limit is refused by :func:`check_resolvable` itself (the same message).

    Build it with :meth:`of`.
    """

    terms: tuple  # (sum of weights, largest kernel diagonal entry) per task
    hinge: np.ndarray  # bool per task
    checked: np.ndarray  # bool: both factors positive (else nothing to refuse)
    log_total: np.ndarray
    log_top: np.ndarray
    log_limit: np.ndarray

    @classmethod
    def of(cls, tasks: Iterable[tuple[np.ndarray, np.ndarray, bool]]) -> Resolvability:
        """The checks of a fit's tasks.

        Parameters
        ----------
        tasks : iterable of (ndarray, ndarray, bool)
            Each task's ``(weights, sqnorm, hinge)``, as :func:`check_resolvable`
            takes them, in the order the tasks are refused in.

        Returns
        -------
        Resolvability
        """
        terms, hinge, checked, log_total, log_top, log_limit = [], [], [], [], [], []
        for weights, sqnorm, task_hinge in tasks:
            total, top = resolvable_terms(weights, sqnorm)
            ok = total > 0.0 and top > 0.0
            terms.append((total, top))
            hinge.append(bool(task_hinge))
            checked.append(ok)
            log_total.append(np.log10(total) if ok else 0.0)
            log_top.append(np.log10(top) if ok else 0.0)
            log_limit.append(_LOG_LIMITS[bool(task_hinge)])
        return cls(tuple(terms), np.array(hinge, dtype=bool), np.array(checked, dtype=bool),
                   np.array(log_total, dtype=np.float64), np.array(log_top, dtype=np.float64),
                   np.array(log_limit, dtype=np.float64))

    def check(self, name: str, C: float) -> None:
        """Refuse ``C`` as :func:`check_resolvable` refuses it on the first task (in
        order) it refuses.

        Parameters
        ----------
        name : str
            The fit as the error names it.
        C : float
        """
        live = self.checked & ~(self.hinge & np.isinf(C))
        over = live & ((np.log10(C) + self.log_total) + self.log_top > self.log_limit)
        for k in np.flatnonzero(over)[:1]:
            check_resolvable(name, C, None, None, hinge=bool(self.hinge[k]),
                             terms=self.terms[k])
