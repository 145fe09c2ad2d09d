r"""Triplet sets for distance metric learning (Yoshida et al. 2019, Sec. 2).

A triplet :math:`t=(i,j,l)` pairs an anchor :math:`x_i` with a same-class instance
:math:`x_j` and a different-class instance :math:`x_l`; its matrix is

.. math::

    H_t = aa^\top - bb^\top,\qquad a = x_i - x_l,\quad b = x_i - x_j,

so :math:`\langle M, H_t\rangle = d_M^2(x_i,x_l) - d_M^2(x_i,x_j)`.

**Storage**. :math:`H_t` is never formed (a million d x d matrices would not fit). A
triplet is two int32 indices into a table of *pairs* (:math:`(i,l)`, the positive pair,
and :math:`(i,j)`, the negative pair) plus :math:`\|H_t\|`. A k-NN set has at most
:math:`2nk` distinct pairs for :math:`nk^2` triplets, so the quadratic forms
:math:`D_Q(u,v)=(x_u-x_v)^\top Q(x_u-x_v)` are computed once per pair (O(n_pairs d^2))
and every :math:`\langle Q,H_t\rangle` is a difference of two of them (O(1) per
triplet).

A diagonal metric sees a pair only through the squares :math:`(x_u-x_v)\circ(x_u-x_v)`
(:math:`D_q(u,v)=\sum_f q_f(x_{uf}-x_{vf})^2`), so a diagonal set stores those instead of
the differences: every pass is then one product with the stored matrix, and the squares
are never formed again (forming them costs a pass over d values per pair, as much as
the product that reads them, at every step).

Memory: about ``BYTES_PER_TRIPLET`` bytes per triplet for the estimator (indices, norms,
current values, range bookkeeping) plus ``8 (3d + 8)`` bytes per pair for a full metric
(difference vectors, the reduced problem's copy and the solver's private one) and
``8 (d + 8)`` for a
diagonal one (the squares, read in place by the solver); it is estimated up front and
refused, with the figure, when it would not fit.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .._utils import memory
from .._utils.blas import single_blas_thread
from .._utils.openmp import current_n_threads
from ._triplet_set_fast import hnorms, nearest_in_tiles, pair_vectors

#: Bytes per triplet at the peak of a fit: two int32 pair indices, the norm, z (reference
#: and current), the working index list, status, range ends and label, construction
#: temporaries, and a full-problem evaluation in the certificate; an upper bound, with a
#: margin, of the traced peak over the estimator's code paths, because the estimate
#: refuses fits up front and must not let through one that would not fit (the test
#: ``test_memory_estimate_matches_a_measured_fit`` holds it to a real fit's peak).
BYTES_PER_TRIPLET = 160
#: Fraction of the available memory a triplet set may take: the estimate covers the set
#: and its solver's copies, so the rest is left to the data, the fit's other arrays and
#: the process itself.
MEMORY_FRACTION = 0.7
#: Neighbours per side of ``k="auto"`` (the paper's protocol, Yoshida et al. 2019,
#: Sec. 7, so that results compare with the paper's), capped by the smallest class.
K_AUTO = 10


@dataclass
class TripletSet:
    r"""A triplet set stored through its pairs.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
    pairs : ndarray of shape (n_pairs, 2), int32
        ``(u, v)`` sample indices of every distinct pair.
    diff : ndarray of shape (n_pairs, n_features)
        :math:`x_u - x_v` per pair; for a diagonal set (``squared``) its elementwise
        square.
    pos, neg : ndarray of shape (n_triplets,), int32
        Pair index of :math:`(i,l)` and of :math:`(i,j)` per triplet.
    hnorm : ndarray of shape (n_triplets,)
        :math:`\|H_t\|_F` (full metric) or :math:`\|\mathrm{diag}(H_t)\|_2` (diagonal).
    """

    X: np.ndarray
    pairs: np.ndarray
    diff: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    hnorm: np.ndarray
    squared: bool = False

    @property
    def n_triplets(self) -> int:
        return int(self.pos.shape[0])

    @property
    def n_pairs(self) -> int:
        return int(self.pairs.shape[0])

    def indices(self) -> np.ndarray:
        """The triplets as an ``(n_triplets, 3)`` int32 array of ``(i, j, l)``."""
        return np.column_stack([self.pairs[self.pos, 0], self.pairs[self.neg, 1],
                                self.pairs[self.pos, 1]]).astype(np.int32)


# ------------------------------------------------------------------- memory ---
def estimate_memory(n_triplets: int, n_pairs: int, n_features: int,
                    diagonal: bool = False) -> int:
    """Bytes a fit needs for a triplet set of this size (see module docstring)."""
    # per pair, full metric: its difference vector, the reduced problem's compact copy and
    # the solver's private one (the products take a block of pairs at a time); diagonal:
    # the squares, read in place (every product is a vector)
    per_pair = n_features + 8 if diagonal else 3 * n_features + 8
    return int(n_triplets) * BYTES_PER_TRIPLET + int(n_pairs) * 8 * per_pair


def check_triplet_memory(n_triplets: int, n_pairs: int, n_features: int,
                         diagonal: bool = False) -> None:
    """Refuse, with the figures, a triplet set that would not fit in memory."""
    memory.check_memory(
        estimate_memory(n_triplets, n_pairs, n_features, diagonal),
        f"{n_triplets:,} triplets ({n_pairs:,} pairs, {n_features} features)",
        "use a smaller k (k=None means all triplets) or fewer samples.",
        fraction=MEMORY_FRACTION)


def count_knn_triplets(y: np.ndarray, k: int | None) -> int:
    r""":math:`|\mathcal T|=\sum_i \min(k,n_{y_i}-1)\min(k,n-n_{y_i})`."""
    _, counts = np.unique(y, return_counts=True)
    n = int(y.shape[0])
    same, diff = counts - 1, n - counts
    if k is not None:
        same, diff = np.minimum(same, k), np.minimum(diff, k)
    return int((counts.astype(np.int64) * same * diff).sum())


# -------------------------------------------------------------- construction ---
#: Relative error bound, per unit of :math:`(\|a\|+\|c\|)^2` and per feature plus 8, of
#: an approximate distance against the double-precision one (:func:`_nearest`), by the
#: precision of the approximations: 16 units of their roundoff.
_APPROX_TOL = {np.float32: 16 * 2.0 ** -24, np.float64: 16 * 2.0 ** -53}
#: Features up to which the approximations are computed in single precision (``sgemm``
#: moves and multiplies twice as many values per vector instruction as ``dgemm``);
#: above, the bound, which grows with the features, would let
#: through more candidates than it saves (at 256 features it is 2.5e-4 of the squared
#: norms).
SINGLE_PRECISION_FEATURES = 256


def _nearest(X, anchors, candidates, k, exclude_self, precision=None):
    r"""Indices (into ``candidates``) of the k nearest candidates of every anchor.

    The order is that of the exact squared distances computed from differences
    (:math:`\sum_j(a_j-c_j)^2` in NumPy's summation order, so ties are true ties), ties
    broken by candidate position (a deterministic rule; ``candidates`` are
    index-sorted). ``exclude_self``: ``candidates`` are ``anchors`` and an anchor is not
    its own neighbour. ``precision``: the dtype of the approximations (by default single
    precision up to ``SINGLE_PRECISION_FEATURES`` features, else double); the result
    does not depend on it.

    The search (:func:`._triplet_set_fast.nearest_in_tiles`) computes an exact distance
    only for the candidates whose approximation :math:`\|a\|^2+\|c\|^2-2a^\top c` (one
    ``sgemm``, or ``dgemm``, per tile), less its error bound, is within the k-th
    smallest exact distance found so far. The approximations are taken
    on the data centred on the candidates' mean (distances do not change with a shift,
    and the expansion then keeps the digits of the differences of data far from the
    origin) and scaled by a power of two (exact) that brings the largest entry into
    :math:`[1/2, 1)` (no overflow in single precision). Their error, against the exact
    distance of the original rows times the scale squared, is at most

    .. math::

        \mathrm{tol}(a) = 16 (d + 8)\, u (\|a\| + \max_c \|c\|)^2
        + (d + 8)(2^{-120} + 2^{-1060} s^2)

    with :math:`u` the unit roundoff of the approximations' precision: the rounding of
    the centred, scaled entries to it (relative :math:`u`), of their dot product
    (:math:`\gamma_d(u)\|a\|\|c\|` in any summation order), of the double-precision
    norms, differences and sums (:math:`(d+3)u_{64}` relative), a margin of eight times
    their sum, and absolute terms for entries and distances below the normal range.
    """
    n_a, d = anchors.size, X.shape[1]
    if n_a == 0 or k == 0:
        return np.empty((n_a, k), dtype=np.int64)
    if precision is None:
        precision = np.float32 if d <= SINGLE_PRECISION_FEATURES else np.float64
    A = X[anchors]
    C = A if exclude_self else X[candidates]
    mean = C.mean(axis=0)
    # (centred and scaled in place: one temporary per side besides the copies handed on)
    A_c = A - mean
    C_c = A_c if exclude_self else C - mean
    top = max(-float(A_c.min()), float(A_c.max()), -float(C_c.min()), float(C_c.max()))
    exponent = 0 if top == 0.0 else min(500, max(-500, -int(np.frexp(top)[1])))
    scale = np.ldexp(1.0, exponent)
    A_c *= scale
    A_approx = A_c.astype(precision, copy=False)
    if exclude_self:
        C_approx = A_approx
    else:
        C_c *= scale
        C_approx = C_c.astype(precision, copy=False)
    del A_c, C_c
    a_sq = np.einsum("ij,ij->i", A_approx, A_approx, dtype=np.float64)
    c_sq = a_sq if exclude_self else np.einsum("ij,ij->i", C_approx, C_approx,
                                               dtype=np.float64)
    relative = _APPROX_TOL[np.dtype(precision).type] * (d + 8)
    tol = (relative * (np.sqrt(a_sq) + np.sqrt(c_sq.max())) ** 2
           + (d + 8) * (2.0 ** -120 + 2.0 ** -1060 * scale * scale))
    n_threads = current_n_threads()
    # each OpenMP thread calls BLAS on its own tiles: BLAS's threads would compete with
    # them for the same cores (oversubscription: every core then switches between
    # threads that wait on each other)
    with single_blas_thread() if n_threads > 1 else nullcontext():
        return nearest_in_tiles(A, C, A_approx, C_approx, a_sq, c_sq, tol, scale * scale,
                                int(k), bool(exclude_self), n_threads)


def resolve_k(y: np.ndarray, k: int | str | None) -> int | None:
    """The number of neighbours per side for the labels ``y``.

    ``"auto"``: ``min(10, n_min - 1)`` with ``n_min`` the size of the smallest class
    that has at least two samples (the paper's protocol value ``k = 10``,
    capped so that every anchor has k same-class neighbours). ``None``: all triplets.
    An integer must leave every such class ``k`` same-class neighbours and ``k``
    other-class ones; a class of one sample has no same-class pair and anchors no
    triplet (its sample is another class's neighbour), so it does not limit ``k``.

    Raises
    ------
    ValueError
        If an integer ``k`` is larger than a class allows (the message names the class,
        its size and the largest valid ``k``), or no class has two samples.
    """
    classes, counts = np.unique(y, return_counts=True)
    n = int(counts.sum())
    if classes.size < 2:
        raise ValueError("metric learning from triplets needs at least two classes; got "
                         f"{classes.size} class")
    multi = counts >= 2
    if not multi.any():
        raise ValueError("no class has two samples, so no same-class pair and no triplet "
                         "can be formed")
    if k is None:
        return None
    # per class with anchors: same-class and other-class neighbours available
    limit = np.minimum(counts - 1, n - counts)[multi]
    if isinstance(k, str):  # "auto"
        return int(min(K_AUTO, limit.min()))
    k = int(k)
    if k > limit.min():
        worst = int(np.argmin(limit))
        c, size = classes[multi][worst], int(counts[multi][worst])
        c = c.item() if isinstance(c, np.generic) else c  # 2, 'a' (not np.int64(2))
        if size - 1 <= n - size:
            why = f"has {size} samples, so an anchor has {size - 1} same-class neighbours"
        else:
            why = f"has {size} of the {n} samples, so {n - size} of another class"
        raise ValueError(
            f"k={k} is larger than class {c!r} allows: it {why}. Use k <= {limit.min()}, "
            f"k='auto' (min({K_AUTO}, smallest class size - 1)) or k=None (all "
            "triplets).")
    return k


def build_triplets(X: np.ndarray, y: np.ndarray, k: int | str | None,
                   diagonal: bool = False) -> TripletSet:
    r"""The k-nearest-neighbour triplet set (``k=None``: all triplets).

    For every anchor :math:`i`: its ``k`` nearest same-class instances :math:`j\ne i` and
    its ``k`` nearest instances of any other class :math:`l` (Euclidean distance in the
    input space, ties by index), and all :math:`k\times k` combinations.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Integer class labels (at least two classes).
    k : int, "auto" or None
        Neighbours per side (``None``: all triplets; ``"auto"``: see
        :func:`resolve_k`, which also rejects an integer larger than a class allows).
        A class of one sample anchors no triplet.
    diagonal : bool
        Store the norms of :math:`\mathrm{diag}(H_t)` instead of :math:`\|H_t\|_F`.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    classes, y_ind, counts = np.unique(y, return_inverse=True, return_counts=True)
    k = resolve_k(y_ind, k)
    n_trip = count_knn_triplets(y_ind, k)
    n_pairs_est = int(sum(c * (min(k or n, c - 1) + min(k or n, n - c)) for c in counts))
    check_triplet_memory(n_trip, n_pairs_est, X.shape[1], diagonal)

    pairs_parts, pos_parts, neg_parts = [], [], []
    offset = 0
    for c in range(classes.size):
        anchors = np.flatnonzero(y_ind == c)
        others = np.flatnonzero(y_ind != c)
        ks = anchors.size - 1 if k is None else min(k, anchors.size - 1)
        kd = others.size if k is None else min(k, others.size)
        if ks == 0:
            continue  # a singleton class has no same-class pair (it still serves as l)
        if k is None:  # all pairs: no sorting needed
            base = np.arange(ks)
            same = base[None, :] + (base[None, :] >= np.arange(anchors.size)[:, None])
            diffn = np.broadcast_to(np.arange(others.size), (anchors.size, kd))
        else:
            same = _nearest(X, anchors, anchors, ks, exclude_self=True)
            diffn = _nearest(X, anchors, others, kd, exclude_self=False)
        na = anchors.size
        same_pairs = np.column_stack([np.repeat(anchors, ks), anchors[same].ravel()])
        diff_pairs = np.column_stack([np.repeat(anchors, kd), others[diffn].ravel()])
        # pair indices: same pairs first, then diff pairs, per anchor block
        same_idx = offset + np.arange(na * ks).reshape(na, ks)
        diff_idx = offset + na * ks + np.arange(na * kd).reshape(na, kd)
        neg_parts.append(np.repeat(same_idx[:, :, None], kd, axis=2).ravel())
        pos_parts.append(np.repeat(diff_idx[:, None, :], ks, axis=1).ravel())
        pairs_parts += [same_pairs, diff_pairs]
        offset += na * (ks + kd)
    pairs = np.vstack(pairs_parts).astype(np.int32)
    pos = np.concatenate(pos_parts).astype(np.int32)
    neg = np.concatenate(neg_parts).astype(np.int32)
    return _finish(X, pairs, pos, neg, diagonal)


def triplets_from_indices(X: np.ndarray, triplets, diagonal: bool = False) -> TripletSet:
    """A :class:`TripletSet` from user triplets, an ``(m, 3)`` array of ``(i, j, l)``
    (anchor, same-class, different-class instance)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    T = np.asarray(triplets)
    if T.ndim != 2 or T.shape[1] != 3 or T.shape[0] == 0:
        raise ValueError("triplets must be a non-empty array of shape (n_triplets, 3) of "
                         f"(i, j, l) sample indices; got shape {T.shape}")
    if not np.issubdtype(T.dtype, np.integer):
        if not np.all(np.isfinite(T)) or np.any(T != np.round(T)):
            raise ValueError("triplets must hold integer sample indices")
        T = T.astype(np.int64)
    if T.min() < 0 or T.max() >= n:
        raise ValueError(f"triplet indices must lie in [0, {n - 1}] (n_samples={n}); got "
                         f"values in [{T.min()}, {T.max()}]")
    check_triplet_memory(T.shape[0], 2 * T.shape[0], X.shape[1], diagonal)
    T = T.astype(np.int64)
    keys = np.concatenate([T[:, 0] * n + T[:, 2], T[:, 0] * n + T[:, 1]])
    uniq, inv = np.unique(keys, return_inverse=True)
    pairs = np.column_stack([uniq // n, uniq % n]).astype(np.int32)
    m = T.shape[0]
    return _finish(X, pairs, inv[:m].astype(np.int32), inv[m:].astype(np.int32), diagonal)


def _finish(X, pairs, pos, neg, diagonal) -> TripletSet:
    n_threads = current_n_threads()
    diff = pair_vectors(X, pairs, diagonal, n_threads)
    hnorm = hnorms(diff, pos, neg, diagonal, n_threads)
    return TripletSet(X, pairs, diff, pos, neg, hnorm, squared=diagonal)
