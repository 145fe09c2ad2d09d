"""One-vs-one multiclass classification as :class:`~sklearn.svm.SVC` does it.

SVC (libsvm) trains one binary problem per pair of classes, in the order
(0, 1), (0, 2), ..., (1, 2), ..., the first class of a pair labelled +1, and predicts by
majority vote. Its fitted attributes follow libsvm's layout: the support vectors grouped
by class (by index within a class), and ``dual_coef_`` of shape
(n_classes - 1, n_SV), where the column of a support vector of class ``i`` holds its
coefficient in the pair (i, j) on row ``j - 1`` if ``j > i`` and on row ``j`` if
``j < i``. This module builds that layout from the pairs' solutions, reads it back for
prediction, and implements the vote and the decision-function shapes of SVC, so that a
user who reads SVC's attributes finds the same structure here.
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.utils.multiclass import _ovr_decision_function
from sklearn.utils.validation import check_is_fitted


def class_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The pairs of classes in libsvm's order, (0, 1), (0, 2), ..., (1, 2), ...

    Parameters
    ----------
    n_classes : int

    Returns
    -------
    list of (int, int)
    """
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def libsvm_layout(coef: np.ndarray, y_ind: np.ndarray, n_classes: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(support_, n_support_, dual_coef_)`` in libsvm's layout.

    Parameters
    ----------
    coef : ndarray of shape (n_pairs, n_samples)
        :math:`\\alpha_i y_i` of every training sample in each pair's problem (0 for
        the samples outside the pair), pairs in :func:`class_pairs` order.
    y_ind : ndarray of shape (n_samples,)
        Class indices of the training samples.
    n_classes : int

    Returns
    -------
    support_ : ndarray of shape (n_SV,), int32
        The samples with a non-zero coefficient in some pair, grouped by class, by
        index within a class.
    n_support_ : ndarray of shape (n_classes,), int32
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
    """
    nonzero = np.flatnonzero((coef != 0).any(axis=0))
    # grouped by class, by index within a class: a stable sort of the indices by class
    support = nonzero[np.argsort(y_ind[nonzero], kind="stable")]
    sv_class = y_ind[support]
    n_support = np.bincount(sv_class, minlength=n_classes).astype(np.int32)
    # one gather for all the pairs, not two copies per pair (many classes make many
    # small copies): row k of a support vector's column is its pair's coefficient
    dual = coef.take(pair_rows(n_classes).take(sv_class, axis=1) * coef.shape[1]
                     + support)
    return support.astype(np.int32), n_support, dual


@functools.lru_cache(maxsize=16)
def pair_rows(n_classes: int) -> np.ndarray:
    """The pair (index in :func:`class_pairs`) whose coefficient of a support vector
    of class ``c`` is on row ``k`` of ``dual_coef_`` (:func:`libsvm_layout`): the pair
    of ``c`` and the k-th of the other classes in order (``k`` if ``k < c``, else
    ``k + 1``). Shape (n_classes - 1, n_classes), column ``c``; read-only (shared).

    Parameters
    ----------
    n_classes : int

    Returns
    -------
    ndarray of shape (n_classes - 1, n_classes)
    """
    index = np.full((n_classes, n_classes), -1, dtype=np.intp)
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        index[i, j] = index[j, i] = p
    k = np.arange(n_classes - 1)[:, None]
    c = np.arange(n_classes)
    rows = index[c, k + (k >= c)]
    rows.flags.writeable = False
    return rows


def samples_by_task(task_coef: list[np.ndarray], rows: list[np.ndarray] | None,
                    n_samples: int) -> np.ndarray:
    """Every training sample's coefficient in every task, 0 outside a pair's samples.

    Parameters
    ----------
    task_coef : list of ndarray
        Each task's :math:`\\alpha_i y_i` over its own samples.
    rows : list of ndarray or None
        Each pair's samples (one-vs-one), or None when every task is over all the
        samples.
    n_samples : int

    Returns
    -------
    ndarray of shape (n_tasks, n_samples)
    """
    coef = np.zeros((len(task_coef), n_samples))
    for row, idx, c in zip(coef, rows or [slice(None)] * len(task_coef), task_coef,
                           strict=True):
        row[idx] = c
    return coef


def support_layout(coef: np.ndarray, y_ind: np.ndarray, n_classes: int, pairs: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(support_, n_support_, dual_coef_)`` of a fit: libsvm's layout when it was
    trained one-vs-one with more than two classes (:func:`libsvm_layout`), else one
    row per task over the samples with a non-zero coefficient in some task, by index.

    Parameters
    ----------
    coef : ndarray of shape (n_tasks, n_samples)
        Every sample's coefficient in every task (:func:`samples_by_task`).
    y_ind : ndarray of shape (n_samples,)
        Class indices of the training samples.
    n_classes : int
    pairs : bool
        Whether the tasks are the pairs of classes.

    Returns
    -------
    support_ : ndarray of shape (n_SV,), int32
    n_support_ : ndarray of shape (n_classes,), int32
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV) or (n_tasks, n_SV)
    """
    if pairs:
        return libsvm_layout(coef, y_ind, n_classes)
    support = np.flatnonzero((coef != 0).any(axis=0)).astype(np.int32)
    n_support = np.bincount(y_ind[support], minlength=n_classes).astype(np.int32)
    return support, n_support, coef[:, support]


def pair_coefficients(dual_coef: np.ndarray, n_support: np.ndarray) -> np.ndarray:
    """Each pair's coefficients over all support vectors, read from libsvm's layout
    (:func:`libsvm_layout`), so that the pairs' decision values are one product with
    the kernel block of the test samples.

    Parameters
    ----------
    dual_coef : ndarray of shape (n_classes - 1, n_SV)
    n_support : ndarray of shape (n_classes,)

    Returns
    -------
    ndarray of shape (n_SV, n_pairs)
        Zero on the support vectors of the classes outside a pair.
    """
    n_classes = n_support.size
    starts = np.concatenate([[0], np.cumsum(n_support)])
    pairs = class_pairs(n_classes)
    out = np.zeros((dual_coef.shape[1], len(pairs)))
    for p, (i, j) in enumerate(pairs):
        out[starts[i]:starts[i + 1], p] = dual_coef[j - 1, starts[i]:starts[i + 1]]
        out[starts[j]:starts[j + 1], p] = dual_coef[i, starts[j]:starts[j + 1]]
    return out


def ovo_votes(dec: np.ndarray, n_classes: int) -> np.ndarray:
    """libsvm's prediction from the pairs' decision values: pair (i, j) votes for ``i``
    when its value is > 0, else for ``j``; the class with most votes wins, the smallest
    class index among those tied.

    Parameters
    ----------
    dec : ndarray of shape (n_samples, n_pairs)
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples,)
        Class indices.
    """
    votes = np.zeros((dec.shape[0], n_classes), dtype=np.int64)
    rows = np.arange(dec.shape[0])
    for p, (i, j) in enumerate(class_pairs(n_classes)):
        np.add.at(votes, (rows, np.where(dec[:, p] > 0, i, j)), 1)
    return votes.argmax(axis=1)  # the first maximum: libsvm's tie rule


class MulticlassSVCMixin:
    """``decision_function`` and ``predict`` of a classifier trained one-vs-one (as
    SVC) or one-vs-rest, from ``_scores(X)``: one column per task, one task for two
    classes; the kernel expansion of the scores read from the fitted attributes
    (libsvm's layout after one-vs-one training). Reads ``multi_class``,
    ``decision_function_shape`` and ``break_ties``."""

    def _trains_pairs(self, classes: np.ndarray) -> bool:
        """Whether a fit on these classes has one task per pair of classes."""
        return self.multi_class == "ovo" and classes.size > 2

    def _one_vs_one(self) -> bool:
        """Whether the fitted model has one task per pair of classes."""
        return self.__dict__.get("_multi_class_fitted") == "ovo" and self.classes_.size > 2

    def _expansion(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel expansion's coefficients per task, shape (n_SV, n_tasks), and
        its intercepts ``intercept_``: with one-vs-one training, each pair's
        coefficients read from libsvm's layout of ``dual_coef_``
        (:func:`pair_coefficients`)."""
        if self._one_vs_one():
            return pair_coefficients(self.dual_coef_, self.n_support_), self.intercept_
        return self.dual_coef_.T, self.intercept_

    def decision_function(self, X):
        """Decision values, as :meth:`sklearn.svm.SVC.decision_function` returns them.

        Two classes: the score of the second class against the first. One-vs-one
        training: the pairs' values (positive: the pair's first class), shape
        (n_samples, n_classes * (n_classes - 1) / 2) with
        ``decision_function_shape="ovo"``, else their transform to one column per class
        (votes plus a tie-breaking confidence, ``sklearn.utils.multiclass.
        _ovr_decision_function``, as SVC). One-vs-rest training: each class's score
        against the rest.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            (``(n_samples, n_train)`` for a precomputed kernel).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes) or
        (n_samples, n_classes * (n_classes - 1) / 2)
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            return scores.ravel()
        if not self._one_vs_one() and self.decision_function_shape == "ovo":
            raise ValueError(
                "decision_function_shape='ovo' needs a model fitted with "
                "multi_class='ovo': a one-vs-rest fit has no decision values per pair of "
                "classes")
        if self._one_vs_one() and self.decision_function_shape == "ovr":
            return _ovr_decision_function(scores < 0, -scores, self.classes_.size)
        return scores

    def predict(self, X):
        """Class labels.

        Two classes: the sign of the score. One-vs-one training: libsvm's majority vote
        over the pairs (ties to the class that comes first in ``classes_``), or with
        ``break_ties=True`` and ``decision_function_shape="ovr"`` the largest value of
        the one-vs-rest-shaped decision function, as SVC. One-vs-rest training: the
        best one-vs-rest score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            (``(n_samples, n_train)`` for a precomputed kernel).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError(
                "break_ties must be False when decision_function_shape is 'ovo'")
        scores = self._scores(X)
        if scores.shape[1] == 1:
            idx = (scores.ravel() > 0).astype(int)
        elif not self._one_vs_one():
            idx = scores.argmax(axis=1)
        elif self.break_ties and self.decision_function_shape == "ovr":
            idx = _ovr_decision_function(scores < 0, -scores,
                                         self.classes_.size).argmax(axis=1)
        else:
            idx = ovo_votes(scores, self.classes_.size)
        return self.classes_[idx]
