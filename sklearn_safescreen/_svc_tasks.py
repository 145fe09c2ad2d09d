"""SafeSVC's tasks: the binary problems a fit solves, and what is read from all of them.

A fit solves one box-QP dual per task: one for two classes, else one per class against
the rest (one-vs-rest) or one per pair of classes on the pair's own samples (one-vs-one,
as :class:`~sklearn.svm.SVC`, :mod:`~sklearn_safescreen._multiclass`). This module
builds the tasks' engine paths from the validated data
(:class:`~sklearn_safescreen._box_qp_base.FitData`): each sample's multiplier of ``C``,
the paths themselves, and the eps-path's next ``C`` from their solutions. The estimator
keeps its decisions (which scheme, which parameters); the construction is here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._box_qp_base import FitData
from ._multiclass import class_pairs
from ._validation import check_weighted_classes, class_weights
from .base import one_vs_rest
from .engine.box_qp import SVMPath
from .problems.box_qp_data import SVMData, svm_eps_step
from .problems.kernels import (
    KernelMatrix,
    augment_bias,
    check_psd,
    design_matrix,
    needs_psd_check,
)
from .problems.shared_kernel import fold_rows


def class_weighted(class_weight, classes: np.ndarray, y_ind: np.ndarray,
                   sample_weight: np.ndarray) -> np.ndarray:
    """Each sample's multiplier of ``C``: its sample weight times its class's weight
    (:func:`~sklearn_safescreen._validation.class_weights`), refused when it leaves
    fewer than two classes to fit.

    Parameters
    ----------
    class_weight : dict, "balanced" or None
        The estimator's ``class_weight``.
    classes : ndarray of shape (n_classes,)
    y_ind : ndarray of shape (n_samples,)
        Class indices of the samples.
    sample_weight : ndarray of shape (n_samples,)
        Validated, non-negative.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    cw = class_weights(class_weight, classes, y_ind, sample_weight)
    weights = sample_weight * (cw[y_ind] if cw is not None else 1.0)
    check_weighted_classes(weights, y_ind, classes)
    return weights


def one_vs_rest_paths(Xa, kernel: KernelMatrix | None, data: FitData) -> list[SVMPath]:
    """One path per class against the rest (one path, the second class against the
    first, for two classes), all on the one design matrix or kernel of the data.

    Parameters
    ----------
    Xa : ndarray, sparse matrix or None
        The design matrix with its bias column (linear kernel), else None.
    kernel : KernelMatrix or None
        The kernel with its row cache (other kernels), else None.
    data : FitData
        The validated data (``targets``: class indices).

    Returns
    -------
    list of SVMPath
    """
    return [SVMPath(SVMData(Xa, kernel, labels, data.weights), name)
            for name, labels in one_vs_rest(data.classes, data.targets)]


@dataclass
class PairPaths:
    """The one-vs-one tasks' paths, in :func:`~sklearn_safescreen._multiclass.class_pairs`
    order, and each pair's samples (indices into the training data)."""

    paths: list[SVMPath]
    rows: list[np.ndarray]

    def largest(self) -> int:
        """The index of the pair with the most samples (the first of those tied): its
        kernel is the fit's largest."""
        return int(np.argmax([r.size for r in self.rows]))


def one_vs_one_paths(data: FitData, kernel, *, gamma, screening,
                     cache_size: float) -> PairPaths:
    """One path per pair of classes, built on the pair's samples only: a design matrix
    or kernel of their rows, with a row cache of its own.

    The alternative, every pair on all the samples with weight 0 outside it, shares one
    kernel and one cache across the pairs, but then every kernel row, margin and
    certificate pass of a pair runs over all n samples instead of its two classes'
    (n_classes / 2 times fewer when the classes are balanced), and that costs more than
    the rows it shares (``doc/user_guide/svm.rst``, "Multiclass"). The caches share
    ``cache_size`` in proportion to the pairs' kernel sizes, so that the fit's cache
    memory stays ``cache_size``, as with one kernel, and a pair's whole kernel is
    cached whenever all of them fit.

    Parameters
    ----------
    data : FitData
        The validated data, its kernel parameters and bias resolved.
    kernel : str or callable
        The estimator's ``kernel``.
    gamma : {"scale", "auto"} or float
        The estimator's ``gamma``: with ``"scale"``, resolved from a fold's own data,
        the pairs do not read a search's shared kernel rows.
    screening : str or None
        The estimator's rule: a user kernel is checked positive semi-definite when
        screening relies on it.
    cache_size : float
        Memory (MB) of all the pairs' row caches together.

    Returns
    -------
    PairPaths
    """
    pairs = class_pairs(data.classes.size)
    rows = [np.flatnonzero((data.targets == i) | (data.targets == j)) for i, j in pairs]
    sizes = np.array([r.size for r in rows], dtype=np.float64) ** 2
    if needs_psd_check(kernel, screening):
        # the pairs' kernels are principal submatrices of the training kernel:
        # checking it once covers them all
        check_psd(KernelMatrix(data.X, kernel, data.kernel_params, data.bias),
                  np.random.RandomState(0))
    # within a search's fold walk, the pairs' kernels read the rows the folds share
    # (a pair's kernel is a principal submatrix of the fold's)
    shared = None if gamma == "scale" else fold_rows(data.X, kernel, data.kernel_params,
                                                     data.bias)
    # a dense linear kernel's design matrices are rows of the one with its bias
    # column, built once rather than a column appended to every pair's rows (the same
    # values, copied)
    dense_linear = (augment_bias(data.X, data.bias)
                    if kernel == "linear" and not sp.issparse(data.X) else None)
    paths = []
    for (i, j), idx, share in zip(pairs, rows, sizes / sizes.sum(), strict=True):
        if dense_linear is not None:
            Xa, matrix = dense_linear[idx], None
        else:
            X = data.X[idx][:, idx] if kernel == "precomputed" else data.X[idx]
            Xa, matrix = design_matrix(
                X, kernel, data.kernel_params, data.bias, screening=None,
                cache_size=cache_size * share,
                shared=None if shared is None else shared.restricted(idx))
        labels = np.where(data.targets[idx] == i, 1.0, -1.0)
        paths.append(SVMPath(SVMData(Xa, matrix, labels, data.weights[idx]),
                             f"{data.classes[i]} vs {data.classes[j]}"))
    return PairPaths(paths, rows)


def eps_path_next(paths: list[SVMPath], C: float, eps: float, stop: float) -> float | None:
    """The next ``C`` of the eps-path (Ogawa et al. 2013, Algorithm 1) from the tasks'
    solutions at ``C``: the smallest step that keeps every task's solution, rescaled,
    eps-optimal, or None when the path is over (no sample at its upper bound in any
    task, or ``stop`` reached).

    Parameters
    ----------
    paths : list of SVMPath
        The tasks' paths, their references the solutions at ``C``.
    C : float
    eps : float
        Relative tolerance of the dual objective.
    stop : float
        Largest ``C`` of the path.

    Returns
    -------
    float or None
    """
    if C >= stop:
        return None
    if not any(np.any((p.data.weights > 0) & (p.reference.alpha >= C * p.data.weights))
               for p in paths):
        return None
    ratio = min(svm_eps_step(p.reference.alpha, p.reference.margins, p.data.weights, C,
                             eps, stop / C) for p in paths)
    return min(C * ratio, stop)
