"""Kernel evaluation for the dual problems: blocks on demand, never the whole matrix.

The bias is a regularised extra feature of constant value ``s`` (``intercept_scaling``),
so every kernel value carries ``+ s**2``. All blocks are float64.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from .._utils import memory
from .._utils.kernel_values import check_kernel_output
from ._box_qp_fast import (
    add_rows,
    dot2_accumulate,
    dot2_add_rows,
    gather_signed_rows,
    row_sq_norms,
    symmetric_kernel_block,
    symmetric_kernel_diag,
)
from .constants import KERNEL_RTOL

#: Built-in kernels computed by :func:`symmetric_kernel_block` on dense inputs (codes).
_SYMMETRIC_KINDS = {"linear": 0, "rbf": 1, "poly": 2}

#: An empty column list: every column (:func:`gather_signed_rows`).
_NO_COLUMNS = np.empty(0, dtype=np.int64)

#: Rows per chunk when a kernel block is reduced on the fly (bounded memory).
_CHUNK_ROWS = 2048

#: Rows of uncached kernel blocks per compensated product (:meth:`KernelMatrix.dot2_matvec`):
#: the block is one reused buffer, so its size bounds the memory, not the arithmetic.
_DOT2_BLOCK_ROWS = 256

#: :meth:`KernelMatrix.matvec` over cached columns sums their rows whole when the rows
#: asked for are at least one in this many samples: whole rows are read contiguously and
#: in place, at most this many times the values needed, where taking the rows asked for
#: copies a strided gather of every cached row.
MATVEC_WHOLE_ROWS = 4

#: Most bytes of a kernel block computed outside the row cache at a time (its kernel's
#: temporaries take about as much again): a chunk of ``_CHUNK_ROWS`` rows against
#: ``n_cols`` columns takes ``8 * 2048 * n_cols`` bytes, which grows with the data until
#: the transient blocks outweigh the row caches the memory budget is meant for; a bound
#: in bytes keeps the fit's peak at the caches plus a constant.
BLOCK_BYTES = 32 * 2**20


def block_rows(n_cols: int, most: int) -> int:
    """Rows of a block of ``n_cols`` columns within :data:`BLOCK_BYTES` (at least 16, at
    most ``most``)."""
    return int(min(most, max(16, BLOCK_BYTES // (8 * max(int(n_cols), 1)))))


class KernelMatrix:
    """Lazily evaluated kernel ``K(x_i, x_j) + bias**2`` over the training samples.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), or ndarray of shape
        (n_samples, n_samples) when ``kernel="precomputed"``.
    kernel : {"linear", "rbf", "poly"} or callable or "precomputed"
    kernel_params : dict
        ``gamma``, ``degree``, ``coef0`` as resolved by the estimator.
    bias : float
        Constant bias feature (0 for no intercept).
    cache_size : float, default=0.0
        Memory budget of the row cache, in MB.
    shared : FoldRows or None, default=None
        Rows of a store shared by the folds of a search
        (:mod:`~sklearn_safescreen.problems.shared_kernel`), which this kernel's values
        are read from instead of computed, while it serves them (the same values, bit
        for bit); only for the dense built-in kernels.
    """

    def __init__(self, X, kernel: str | Callable, kernel_params: dict, bias: float,
                 cache_size: float = 0.0, shared=None):
        self.X = X
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bias_sq = float(bias) ** 2
        self.n_samples = 0 if X is None else X.shape[0]
        self.n_evaluations = 0  # kernel values computed so far (cost accounting)
        #: the memory budget of a row cache (bytes): this one's, and the kernel solver's
        #: rows over its free samples (:mod:`~sklearn_safescreen.solvers.greedy_cd`)
        self.cache_bytes = float(cache_size) * 2**20
        # Row cache (as LIBSVM's): whole rows K[i, :] + bias**2 of the built-in kernels,
        # which are symmetric, so a cached row also serves as a column. A precomputed
        # kernel is already in memory and a callable one may be asymmetric: no cache.
        n = self.n_samples
        capacity = int(cache_size * 2**20 // (8 * max(n, 1))) if n else 0
        if not isinstance(kernel, str) or kernel == "precomputed":
            capacity = 0
        self._capacity = min(capacity, n)
        self._rows = np.empty((self._capacity, n)) if self._capacity else None
        self._slot = np.full(n, -1, dtype=np.int64)  # sample -> cache row
        self._owner = np.full(self._capacity, -1, dtype=np.int64)  # cache row -> sample
        self._last_use = np.zeros(self._capacity, dtype=np.int64)
        self._clock = 0
        self._lock = threading.RLock()  # one-vs-rest tasks share the cache across threads
        # dense built-in kernels: every value a fixed symmetric function of its pair
        # (the transposed samples and their squared norms, summed in feature order)
        self._kind = (_SYMMETRIC_KINDS.get(kernel) if isinstance(kernel, str)
                      and X is not None and not sp.issparse(X) else None)
        if self._kind is not None:
            self._prepare_symmetric()
        self._shared = shared if self._kind is not None else None

    def _prepare_symmetric(self):
        self._Xc = np.ascontiguousarray(self.X, dtype=np.float64)
        self._Xt = np.ascontiguousarray(self._Xc.T)
        self._sq = row_sq_norms(self._Xc)
        prm = self.kernel_params
        self._sym_params = (self._kind, float(prm.get("gamma", 0.0)),
                            float(prm.get("coef0", 0.0)), float(prm.get("degree", 1.0)))

    def __getstate__(self):
        # a pickled estimator should not carry (or share) the cache: start empty
        state = self.__dict__.copy()
        del state["_lock"]
        state["_shared"] = None  # a search's store stays in the search
        for key in ("_Xc", "_Xt", "_sq"):  # derived from X: rebuilt on unpickling
            state.pop(key, None)
        if self._rows is not None:
            state["_rows"] = None
            state["_slot"] = np.full(self.n_samples, -1, dtype=np.int64)
            state["_owner"] = np.full(self._capacity, -1, dtype=np.int64)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._capacity and self._rows is None:
            self._rows = np.empty((self._capacity, self.n_samples))
        self._lock = threading.RLock()
        if self.__dict__.get("_kind") is not None:
            self._prepare_symmetric()

    @property
    def entry_rtol(self) -> float:
        r"""Relative disagreement between two evaluations of one kernel value
        :math:`k(x_i,x_j)` (in row :math:`i` and in row :math:`j`, as the row cache
        serves rows as columns), which the margins' error bounds must allow for.

        0 for the dense built-in kernels, whose values are symmetric functions of the
        pair by construction (:func:`symmetric_kernel_block`), and for a precomputed
        matrix that is exactly symmetric; otherwise ``KERNEL_RTOL`` (scikit-learn's
        distances and a user's function may round the two evaluations differently)."""
        if self._kind is not None:
            return 0.0
        if self.kernel == "precomputed":
            if not hasattr(self, "_precomputed_symmetric"):
                P = self.X
                self._precomputed_symmetric = bool(
                    (P != P.T).nnz == 0 if sp.issparse(P) else np.array_equal(P, P.T))
            return 0.0 if self._precomputed_symmetric else KERNEL_RTOL
        return KERNEL_RTOL

    @property
    def cache_capacity(self) -> int:
        """Number of kernel rows the cache holds."""
        return self._capacity

    @property
    def cached(self) -> np.ndarray:
        """Indices of the samples whose kernel row is in the cache."""
        return np.flatnonzero(self._slot >= 0)

    def every_row_store(self) -> tuple | None:
        """``(rows, slot, owner, last_use)`` of the row cache, to be read in place, when
        it has room for the row of every sample (else None): ``rows[slot[i]]`` is
        ``K[i, :] + bias**2`` once :meth:`ensure_rows` cached it (``owner`` the
        inverse map), and no row is ever evicted then. ``last_use`` may be updated by
        the reader, with :attr:`clock`."""
        if self._rows is None or self._capacity < self.n_samples:
            return None
        return self._rows, self._slot, self._owner, self._last_use

    def ensure_rows(self, idx) -> np.ndarray | None:
        """Cache slots of the rows of ``idx``, the missing ones computed (None when they
        do not fit in the cache)."""
        with self._lock:
            return self._ensure_cached(idx)

    @property
    def clock(self) -> int:
        """The row cache's use counter (see :meth:`every_row_store`)."""
        return self._clock

    @clock.setter
    def clock(self, value: int) -> None:
        self._clock = int(value)

    def _ensure_cached(self, idx) -> np.ndarray | None:
        """Cache slots of the rows ``K[idx, :] + bias**2`` (computing the missing ones),
        or None when they do not fit in the cache."""
        idx = np.asarray(idx, dtype=np.int64)
        if self._rows is None:
            return None
        slots = self._slot[idx]
        if slots.min(initial=0) >= 0:  # all cached (along a path, the common case)
            self._clock += 1
            self._last_use[slots] = self._clock
            return slots
        if len(np.unique(idx)) > self._capacity:
            return None
        self._clock += 1
        missing = np.unique(idx[self._slot[idx] < 0])
        if missing.size:
            free = np.flatnonzero(self._owner < 0)
            if free.size < missing.size:  # evict the least recently used other rows
                candidates = np.flatnonzero(self._owner >= 0)
                keep = np.isin(self._owner[candidates], idx)
                candidates = candidates[~keep]
                need = missing.size - free.size
                order = np.argpartition(self._last_use[candidates], need - 1)[:need]
                evicted = candidates[order]
                self._slot[self._owner[evicted]] = -1
                self._owner[evicted] = -1
                free = np.concatenate([free, evicted])
            slots = free[:missing.size]
            step = block_rows(self.n_samples, _CHUNK_ROWS)
            every = np.arange(self.n_samples)
            for start in range(0, missing.size, step):
                part = slots[start:start + step]
                if self._kind is not None and bool(np.all(np.diff(part) == 1)):
                    # consecutive slots (a cold cache fills them in order): computed in
                    # place, with no block to allocate (a fresh block's first touch
                    # faults in every page, a cost of the order of computing its kernel
                    # values) and to copy
                    self._compute(missing[start:start + step], every,
                                  out=self._rows[part[0]:part[0] + part.size])
                else:  # scattered into their slots on the fit's threads (times 1: exact)
                    block = self._compute(missing[start:start + step], every)
                    ones = np.ones(part.size)
                    gather_signed_rows(self._rows, part, block, np.arange(part.size),
                                       _NO_COLUMNS, ones, np.ones(self.n_samples))
            self._slot[missing] = slots
            self._owner[slots] = missing
        slots = self._slot[idx]
        self._last_use[slots] = self._clock
        return slots

    def block(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols] + bias**2`` as a new C-contiguous float64 array (from the
        row cache when the rows fit in it); callers may modify it in place."""
        if len(rows) == 0 or len(cols) == 0:
            return np.zeros((len(rows), len(cols)))
        with self._lock:
            slots = self._ensure_cached(rows)
            if slots is not None:  # one gather (a fresh array the caller may modify)
                return self._rows[np.ix_(slots, np.asarray(cols, dtype=np.int64))]
        return self._compute(rows, cols)

    def signed_rows_into(self, out: np.ndarray, out_rows: np.ndarray, rows: np.ndarray,
                         cols: np.ndarray, sign_rows: np.ndarray,
                         sign_cols: np.ndarray) -> bool:
        """Write ``sign_rows[k] * (K[rows[k], cols] + bias**2) * sign_cols`` into
        ``out[out_rows[k]]`` from the row cache (``cols`` empty: every sample, in order),
        in one pass without temporaries; False (nothing written) when the rows do not
        fit in the cache. The values are those of :meth:`block` times the signs."""
        with self._lock:
            slots = self._ensure_cached(rows)
            if slots is None:
                return False
            gather_signed_rows(out, out_rows, self._rows, slots, cols, sign_rows,
                               sign_cols)
            return True

    def dot2_matvec(self, cols, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Compensated :math:`(K_{:,\mathrm{cols}} + s^2)\,v` over every row, as the
        Dot2 sums, their compensations and :math:`|K_{:,\mathrm{cols}}+s^2|\,|v|`
        (:func:`dot2_add_rows`).

        Only for a symmetric kernel (the built-in ones on dense input): the cached rows
        of ``cols`` serve as its columns, read in place when they all fit in the cache;
        otherwise they are computed in blocks, without displacing the cached rows the
        solver works with.
        """
        n = self.n_samples
        acc, comp, absum = np.zeros(n), np.zeros(n), np.zeros(n)
        cols = np.asarray(cols, dtype=np.int64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        if cols.size == 0:
            return acc, comp, absum
        with self._lock:
            slots = self._ensure_cached(cols)
            if slots is not None:
                dot2_add_rows(acc, comp, absum, self._rows, slots, v)
                return acc, comp, absum
        every = np.arange(n)
        step = block_rows(n, _DOT2_BLOCK_ROWS)
        # one buffer for every block (the dense built-in kernels write into it)
        buf = np.empty((min(step, cols.size), n)) if self._kind is not None else None
        for start in range(0, cols.size, step):
            part = slice(start, start + step)
            rows = cols[part]
            out = None if buf is None else buf[:rows.size]
            dot2_accumulate(acc, comp, absum, self._compute(rows, every, out=out), v[part])
        return acc, comp, absum

    def _columns(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dense built-in kernels' operand of the columns ``cols``: the transposed
        samples and their squared norms (a gather of ``d x len(cols)`` values, so
        callers computing several blocks over the same columns prepare it once)."""
        every = cols.size == self.n_samples and np.array_equal(
            cols, np.arange(self.n_samples))
        return (self._Xt if every else np.ascontiguousarray(self._Xt[:, cols]),
                self._sq[cols])

    def _compute(self, rows, cols, out: np.ndarray | None = None,
                 columns: tuple | None = None) -> np.ndarray:
        """``K[rows][:, cols] + bias**2`` as a new array, or written into ``out`` (the
        dense built-in kernels only, whose columns' operand :meth:`_columns` may be
        given as ``columns``)."""
        self.n_evaluations += len(rows) * len(cols)
        if self.kernel == "precomputed":
            K = np.asarray(self.X[np.ix_(rows, cols)], dtype=np.float64)
        elif self._kind is not None:
            rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
            shared = self.__dict__.get("_shared")
            if shared is not None and shared.active:
                return self._compute_shared(shared, rows, cols, out, columns)
            Bt, b_sq = self._columns(cols) if columns is None else columns
            K = symmetric_kernel_block(self._Xc[rows], self._sq[rows], Bt, b_sq,
                                       *self._sym_params, out=out)
        else:
            K = self.cross(self.X[rows], self.X[cols])
            if callable(self.kernel):  # the user's function may return an array it keeps
                K = np.array(K, dtype=np.float64)
        K = np.ascontiguousarray(K, dtype=np.float64)
        if self.bias_sq:
            K += self.bias_sq  # in place: K is ours (callers may modify it too)
        return K

    def _compute_shared(self, shared, rows: np.ndarray, cols: np.ndarray,
                        out: np.ndarray | None, columns: tuple | None) -> np.ndarray:
        """:meth:`_compute` of a dense built-in kernel with shared rows: the rows the
        store holds (or computes) gathered from it, the others computed here as
        without the store, the bias added to them alike (the same values, bit for bit:
        every value is a fixed function of its pair, :func:`symmetric_kernel_block`)."""
        K = np.empty((rows.size, cols.size)) if out is None else out
        served = shared.gather(K, rows, cols)
        rest = np.flatnonzero(~served)
        if rest.size:
            Bt, b_sq = self._columns(cols) if columns is None else columns
            part = rows[rest]
            if rest.size == rows.size:  # nothing served: written in place, as before
                symmetric_kernel_block(self._Xc[part], self._sq[part], Bt, b_sq,
                                       *self._sym_params, out=K)
                if self.bias_sq:
                    K += self.bias_sq
            else:
                block = symmetric_kernel_block(self._Xc[part], self._sq[part], Bt, b_sq,
                                               *self._sym_params)
                if self.bias_sq:
                    block += self.bias_sq
                K[rest] = block
        return K

    def rows_over(self, cols) -> Callable[[np.ndarray], np.ndarray]:
        """A function ``rows -> K[rows][:, cols] + bias**2`` (a fresh array) for a fixed
        column set, evaluated without the row cache; for the dense built-in kernels the
        columns' operand is prepared once (the values are those of :meth:`block`)."""
        cols = np.asarray(cols, dtype=np.int64)
        if self._kind is None:
            return lambda rows: self._compute(np.asarray(rows, dtype=np.int64), cols)
        operand = self._columns(cols)

        def evaluate(rows):
            # _compute's values (and the shared rows' when the kernel has them)
            return self._compute(np.asarray(rows, dtype=np.int64), cols, columns=operand)

        return evaluate

    def cross(self, A, B) -> np.ndarray:
        """Kernel between two sets of raw samples (no bias)."""
        if A.shape[0] == 0 or B.shape[0] == 0:
            # a model with no support vector (its decision function is 0) predicts
            # from an empty block; scikit-learn's pairwise kernels refuse empty input
            return np.zeros((A.shape[0], B.shape[0]))
        if callable(self.kernel):
            K = check_kernel_output(self.kernel(A, B), A, B)
        else:
            K = pairwise_kernels(A, B, metric=self.kernel, filter_params=True,
                                 **self.kernel_params)
        K = K.toarray() if sp.issparse(K) else K
        return np.asarray(K, dtype=np.float64)

    def cross_block(self, A) -> np.ndarray:
        """``K(a, x_j) + bias**2`` between the raw samples ``A`` and this kernel's
        samples, shape ``(len(A), n_samples)``. For the dense built-in kernels, bit for
        bit the value the pair has in a row of ``a`` of a kernel over both sets
        (:func:`symmetric_kernel_block`), so predictions read the same values whether
        they compute them or a search's shared rows hold them."""
        if self._kind is not None and not sp.issparse(A):
            Ac = np.ascontiguousarray(A, dtype=np.float64)
            K = symmetric_kernel_block(Ac, row_sq_norms(Ac), self._Xt, self._sq,
                                       *self._sym_params)
        else:  # a copy: a user's function may return an array it keeps
            K = np.array(self.cross(A, self.X), dtype=np.float64)
        if self.bias_sq:
            K += self.bias_sq
        return K

    def diag(self) -> np.ndarray:
        """``K(x_i, x_i) + bias**2`` for every sample, in O(n) kernel evaluations
        for the built-in kernels."""
        X, k, prm = self.X, self.kernel, self.kernel_params
        if self._kind is not None:  # bit for bit the diagonal of the blocks
            d = symmetric_kernel_diag(self._sq, *self._sym_params)
        elif k == "precomputed":
            d = np.asarray(X.diagonal(), dtype=np.float64).copy()
        elif k == "rbf":
            d = np.ones(self.n_samples)
        elif k in ("linear", "poly"):
            sq = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                  else np.einsum("ij,ij->i", X, X))
            d = sq if k == "linear" else (prm["gamma"] * sq + prm["coef0"]) ** prm["degree"]
        else:  # callable: diagonal of small diagonal blocks
            d = np.empty(self.n_samples)
            for start in range(0, self.n_samples, 256):
                stop = min(start + 256, self.n_samples)
                d[start:stop] = np.diag(self.cross(X[start:stop], X[start:stop]))
        return d + self.bias_sq

    def matvec(self, rows, cols, v) -> np.ndarray:
        """``(K[rows][:, cols] + bias**2) @ v``: from the cached rows of ``cols`` (the
        kernel is symmetric) when they fit, else computed in row chunks."""
        rows = np.asarray(rows)
        out = np.zeros(len(rows))
        if len(cols) == 0 or len(rows) == 0:
            return out
        with self._lock:
            slots = self._ensure_cached(cols)
            if slots is not None:
                every = (len(rows) == self.n_samples
                         and np.array_equal(rows, np.arange(len(rows))))
                if every:  # the cached rows added in place, no copies
                    add_rows(out, self._rows, slots, np.asarray(v, dtype=np.float64))
                    return out
                if MATVEC_WHOLE_ROWS * len(rows) >= self.n_samples:
                    # many rows: the cached rows added whole, in place, and the rows
                    # taken from the sum (copying each block of rows, then its columns,
                    # moves every value twice to save adding the few rows not asked for)
                    whole = np.zeros(self.n_samples)
                    add_rows(whole, self._rows, slots, np.asarray(v, dtype=np.float64))
                    return whole[rows]
                for start in range(0, len(slots), 256):  # bounded temporaries
                    sl = slice(start, start + 256)
                    block = self._rows[slots[sl]]
                    out += v[sl] @ (block if every else block[:, rows])
                return out
        if self._kind is not None:
            # symmetric: blocks of the columns' rows over ``rows``, their weighted sum
            # on the fit's threads (a BLAS product would run on one), in one buffer
            cols = np.asarray(cols, dtype=np.int64)
            v = np.ascontiguousarray(v, dtype=np.float64)
            step = block_rows(len(rows), _CHUNK_ROWS)
            buf = np.empty((min(step, cols.size), len(rows)))
            # the rows' operand gathered once, not per block: it is the same for every
            # block, and the gather runs on one thread while the blocks use every thread
            operand = self._columns(np.asarray(rows, dtype=np.int64))
            for start in range(0, cols.size, step):
                part = cols[start:start + step]
                block = self._compute(part, rows, out=buf[:part.size], columns=operand)
                add_rows(out, block, np.arange(part.size), v[start:start + step])
            return out
        step = block_rows(len(cols), _CHUNK_ROWS)
        for start in range(0, len(rows), step):
            sl = slice(start, start + step)
            out[sl] = self._compute(rows[sl], cols) @ v
        return out


def check_kernel_memory(n_free: int, n_factor: int = 0) -> None:
    """Refuse a dense ``n_free x n_free`` kernel block, with a Cholesky factor of up to
    ``n_factor`` variables beside it, that would not fit in half the available
    memory (blocks of at most ``BLOCK_BYTES`` pass unprobed)."""
    need = 8.0 * (n_free * n_free + n_factor * n_factor)
    if need <= BLOCK_BYTES:
        # no larger than the transient kernel blocks a product allocates without a
        # probe, while the probe (a read of the system's memory figures) costs more
        # than a small solve: a path of small problems would pay it at every step
        return
    what = (f"the kernel solver's dense {n_free} x {n_free} float64 kernel block"
            + (f" and Newton factor of up to {n_factor} variables" if n_factor else ""))
    memory.check_memory(
        need, what,
        "use kernel='linear', fewer samples, or a path whose screening leaves fewer free "
        "samples", fraction=0.5)


def resolve_kernel_params(kernel, gamma, degree, coef0, X, sample_weight) -> dict:
    """Resolved kernel parameters of the estimators' ``gamma``/``degree``/``coef0``.

    ``gamma="scale"`` uses the sample-weighted variance of all entries of X (equal to
    SVC's ``X.var()`` without weights), so that a weight of 2 is the same as a
    duplicated sample; ``"auto"`` is ``1 / n_features``.
    """
    if kernel not in ("rbf", "poly"):
        return {}
    if gamma == "scale":
        sw = sample_weight / sample_weight.sum()
        if sp.issparse(X):
            mean = float(sw @ np.asarray(X.sum(axis=1)).ravel()) / X.shape[1]
            sq = float(sw @ np.asarray(X.multiply(X).sum(axis=1)).ravel()) / X.shape[1]
        else:
            mean = float(sw @ X.sum(axis=1)) / X.shape[1]
            sq = float(sw @ np.einsum("ij,ij->i", X, X)) / X.shape[1]
        var = sq - mean**2
        value = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    elif gamma == "auto":
        value = 1.0 / X.shape[1]
    else:
        value = float(gamma)
    params = {"gamma": float(value)}
    if kernel == "poly":
        params.update(degree=degree, coef0=float(coef0))
    return params


def augment_bias(X, bias: float):
    """Append the bias feature (a column of ``bias``; nothing when 0)."""
    if not bias:
        return X
    col = np.full((X.shape[0], 1), float(bias))
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(col)], format="csr")
    return np.ascontiguousarray(np.hstack([X, col]))


def design_matrix(X, kernel, kernel_params: dict, bias: float, *, screening,
                  cache_size: float, shared=None):
    """``(X with its bias column, None)`` for the linear kernel, else ``(None, the
    KernelMatrix)``; a user-supplied kernel (precomputed or callable) is checked positive
    semi-definite when screening relies on it (:func:`check_psd`). ``shared``: the rows
    of a search's store the kernel reads (:func:`.shared_kernel.fold_rows`)."""
    if kernel == "linear":
        return augment_bias(X, bias), None
    matrix = KernelMatrix(X, kernel, kernel_params, bias, cache_size=cache_size,
                          shared=shared)
    if needs_psd_check(kernel, screening):
        check_psd(matrix, np.random.RandomState(0))
    return None, matrix


def needs_psd_check(kernel, screening) -> bool:
    """Whether screening relies on a user-supplied kernel, which must then be checked
    positive semi-definite (part of a warm start's problem fingerprint, so that turning
    screening on runs the check)."""
    return screening is not None and (kernel == "precomputed" or callable(kernel))


def check_psd(kernel: KernelMatrix, rng, max_size: int = 2000) -> None:
    """Refuse a kernel that is not positive semi-definite on the training data."""
    n = kernel.n_samples
    idx = np.arange(n) if n <= max_size else np.sort(rng.choice(n, max_size, replace=False))
    K = kernel.block(idx, idx)
    if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * max(np.abs(K).max(), 1.0)):
        raise ValueError("the kernel matrix is not symmetric, so it is not a valid kernel "
                         "and screening would be unsafe; use screening=None")
    lam_min = np.linalg.eigvalsh(0.5 * (K + K.T))[0]
    scale = max(np.abs(K).max(), 1.0)
    if lam_min < -1e-8 * scale * idx.size:
        raise ValueError(
            f"the kernel matrix is not positive semi-definite (smallest eigenvalue "
            f"{lam_min:.3g}); safe screening would be unsafe with it. Use a PSD kernel "
            "or screening=None.")
