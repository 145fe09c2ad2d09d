r"""Kernel rows of a whole training set, shared by the folds of a cross-validated search.

A fold's kernel is a sub-matrix of the kernel of the whole training set ``X`` for the
same kernel parameters: the kernel of ``X[train]`` is ``K[np.ix_(train, train)]``. A
search that fits each fold on its own computes the row of a sample once per fold that
contains it (``k - 1`` times in ``k``-fold cross-validation). :class:`SharedKernelRows`
holds whole rows ``K[i, :] + bias**2`` of ``X``, computed on demand by the compiled
loops of the folds' kernels (:func:`~._box_qp_fast.symmetric_kernel_block`, OpenMP
threads, the GIL released), and serves every fold the columns of its ``train`` array.

Exactness: each value of those loops is a fixed function of its pair of samples (the
inner product summed in feature order, the squared norms of the rows, NumPy's
exponential of each value on its own), whichever block it is computed in, so a value
served from a row of the whole set is the fold's own value bit for bit, and a fit that
uses the store gives the model of a fit that does not.

Sharing applies only where it provably does: inside :meth:`SharedKernelRows.serving`
(the context a fold's walk runs in, which records the fold's ``train`` in a context
variable of the walking thread), to the dense built-in kernels with a value of the
kernel's parameters that does not depend on the fold's data, and only after the fold's
training data were checked equal, byte for byte, to ``X[train]`` (a Pipeline that
scales each fold's data, for one, gets no shared rows). Rows are keyed by the exact
kernel code, ``gamma``, ``coef0``, ``degree`` and bias, so two folds share a row only
when they would compute the same value.

Memory: the rows (and the store's own copy of ``X``) never take more than the bound
given. Rows are held in blocks allocated as they fill; when the next block would pass
the bound, the rows of kernels that no fold uses any more are dropped first, and if
there is still no room, the rows asked for are computed by the fold itself, as without
the store (the same values). Rows are never dropped while a fold may read them.

Threads share one store; a pickled store (a process backend such as loky or dask sends
a copy to each task) arrives disabled, and each fold then computes its own kernel, as
its own process would have to anyway.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from .._utils.memory import available_memory
from ._box_qp_fast import gather_signed_rows, row_sq_norms, symmetric_kernel_block

__all__ = ["FoldRows", "PredictionRows", "SharedKernelRows", "fold_rows",
           "prediction_rows", "serving"]

#: Kernel codes of :func:`symmetric_kernel_block` whose rows the store holds (the linear
#: kernel has no kernel rows: its fits work on the design matrix).
_SHARED_KINDS = {"rbf": 1, "poly": 2}

#: Rows per block of the store (the unit of allocation): small enough that the bound is
#: met closely, large enough that the blocks are few.
_BLOCK_ROWS = 128

#: A fold asking for rows over fewer than this fraction of its samples gets the rows the
#: store already holds, but computes the missing ones itself: a whole row of ``X`` costs
#: the columns of every sample, which rows over a few columns (a screened path's free
#: samples) would not repay.
_FILL_FRACTION = 0.5

#: A block is allocated only while it takes at most this fraction of the memory the
#: system has available (beyond it the folds compute their own rows, as without a store).
_AVAILABLE_FRACTION = 0.5

# states of a row of a table
_ABSENT, _COMPUTING, _READY = 0, 1, 2

#: The serving context of the calling thread (or task): set by
#: :meth:`SharedKernelRows.serving` around a fold's walk.
_SERVING: contextvars.ContextVar = contextvars.ContextVar(
    "sklearn_safescreen_shared_kernel", default=None)

class _Table:
    """The rows of one kernel (one key) over every sample of the store."""

    def __init__(self, key: tuple, n: int):
        self.key = key
        self.state = np.zeros(n, dtype=np.int8)
        self.block = np.full(n, -1, dtype=np.int64)  # row -> block index
        self.offset = np.full(n, -1, dtype=np.int64)  # row -> row within its block
        self.blocks: list[np.ndarray] = []
        self.filled = 0  # rows used in the last block
        self.leases = 0  # serving contexts that may read this table
        self.nbytes = 0


class SharedKernelRows:
    """Kernel rows of the training set ``X``, shared by the folds of a search.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The whole training set of the search. Kept as given; converted to a dense
        float64 array the first time a fold asks for rows (a sparse or non-numeric
        ``X`` is never shared).
    max_mb : float
        Bound on the memory the store allocates (its copy of ``X`` and the rows), in MB
        (``2**20`` bytes). 0 disables sharing.

    Attributes
    ----------
    n_rows_computed : int
        Rows of ``X`` computed by the store (over every sample).
    n_values_computed : int
        Kernel values computed by the store.
    n_fallbacks : int
        Requests whose missing rows did not fit within the bound (computed by the fold).
    """

    def __init__(self, X, max_mb: float):
        self._source = X
        self.max_bytes = float(max_mb) * 2**20
        self._cond = threading.Condition(threading.Lock())
        self._tables: dict[tuple, _Table] = {}
        self._data: tuple | None = None  # (Xc, Xt, sq) once prepared
        self._usable = self.max_bytes > 0
        self._used = 0  # bytes allocated (copies of X and the rows' blocks)
        self._enabled = True
        self.n_rows_computed = 0
        self.n_values_computed = 0
        self.n_fallbacks = 0

    # ------------------------------------------------------------- pickling ---
    def __reduce__(self):
        # another process cannot read this one's rows: its copy shares nothing
        return (_disabled_store, ())

    @property
    def enabled(self) -> bool:
        """Whether the store may serve rows (False for a copy in another process)."""
        return self._enabled

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the store (its copy of ``X`` and the rows)."""
        return self._used

    # -------------------------------------------------------------- serving ---
    @contextlib.contextmanager
    def serving(self, train, test=None) -> Iterator[None]:
        """Within this context, the kernels built in the calling thread for the training
        data ``X[train]`` read their rows from the store (see the module docstring),
        and so do the predictions of their models on ``X[test]``
        (:func:`prediction_rows`).

        Parameters
        ----------
        train : array-like of int
            The indices of the fold's training samples in ``X``, in the fold's order.
        test : array-like of int, optional
            The indices of the fold's test samples in ``X``, in the fold's order.
        """
        if not self._enabled or not self._usable:
            yield
            return
        context = _Serving(self, np.ascontiguousarray(train, dtype=np.int64),
                           None if test is None else
                           np.ascontiguousarray(test, dtype=np.int64))
        token = _SERVING.set(context)
        try:
            yield
        finally:
            _SERVING.reset(token)
            context.close()

    # ------------------------------------------------------------ internals ---
    def _prepared(self) -> tuple | None:
        """``(Xc, Xt, sq)`` of ``X`` (dense float64), made once; None when ``X`` cannot be
        shared (sparse, not numeric, or its copies would pass the bound)."""
        with self._cond:
            if self._data is not None or not self._usable:
                return self._data
            X = self._source
            if sp.issparse(X):
                self._usable = False
                return None
            try:
                Xc = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
            except (TypeError, ValueError):
                self._usable = False
                return None
            if Xc.ndim != 2:
                self._usable = False
                return None
            copied = 0 if isinstance(X, np.ndarray) and np.may_share_memory(Xc, X) else Xc.nbytes
            need = copied + Xc.nbytes + 8 * Xc.shape[0]  # Xc, its transpose, the norms
            if need > self.max_bytes:
                self._usable = False
                return None
            self._data = (Xc, np.ascontiguousarray(Xc.T), row_sq_norms(Xc))
            self._used += need
            self._source = None  # the copy is what the folds are compared with
            return self._data

    def _table(self, key: tuple) -> _Table:
        """The table of ``key``, created empty if new (the lock held)."""
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = _Table(key, self._data[0].shape[0])
        return table

    def _room(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more fit within the bound, after dropping the tables no
        serving context reads (the lock held)."""
        if self._used + nbytes > self.max_bytes:
            for key in [k for k, t in self._tables.items() if t.leases == 0]:
                self._used -= self._tables.pop(key).nbytes
        return (self._used + nbytes <= self.max_bytes
                and nbytes <= _AVAILABLE_FRACTION * available_memory())

    def _claim(self, table: _Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Places for the absent ``rows`` (distinct), as many as fit, marked being
        computed: ``(rows claimed, their block indices)`` (the lock held)."""
        n = table.state.size
        taken = 0
        while taken < rows.size:
            free = table.blocks[-1].shape[0] - table.filled if table.blocks else 0
            if free == 0:
                size = min(_BLOCK_ROWS, n - sum(b.shape[0] for b in table.blocks))
                if size <= 0:
                    break
                if not self._room(8 * size * n):  # a last, smaller block for these rows
                    size = min(size, rows.size - taken)
                    if not self._room(8 * size * n):
                        break
                table.blocks.append(np.empty((size, n)))
                table.filled = 0
                table.nbytes += 8 * size * n
                self._used += 8 * size * n
                free = size
            part = rows[taken:taken + free]
            table.block[part] = len(table.blocks) - 1
            table.offset[part] = table.filled + np.arange(part.size)
            table.filled += part.size
            taken += part.size
        claimed = rows[:taken]
        table.state[claimed] = _COMPUTING
        return claimed, table.block[claimed]

    def _compute(self, table: _Table, rows: np.ndarray) -> None:
        """Compute the claimed ``rows`` into their places (no lock held: other folds read
        and claim meanwhile)."""
        Xc, Xt, sq = self._data
        kind, gamma, coef0, degree, bias_sq = table.key
        blocks, offsets = table.block[rows], table.offset[rows]
        # runs of consecutive places within one block (claims fill blocks in order)
        breaks = np.flatnonzero((np.diff(blocks) != 0) | (np.diff(offsets) != 1)) + 1
        for run in np.split(np.arange(rows.size), breaks):
            if run.size == 0:
                continue
            block, lo = table.blocks[blocks[run[0]]], offsets[run[0]]
            out = block[lo:lo + run.size]
            part = rows[run]
            symmetric_kernel_block(Xc[part], sq[part], Xt, sq, kind, gamma, coef0,
                                   degree, out=out)
            if bias_sq:
                out += bias_sq  # as KernelMatrix adds it to its blocks
        with self._cond:
            self.n_rows_computed += rows.size
            self.n_values_computed += rows.size * Xc.shape[0]

    def _serve(self, table: _Table, rows: np.ndarray, fill: bool) -> np.ndarray:
        """Make the rows of ``rows`` (global, any order) ready in ``table`` where
        possible: the ones absent are computed here (when ``fill``, as many as fit),
        the ones another fold is computing are waited for. Returns the mask of the rows
        that are ready."""
        unique = np.unique(rows)
        with self._cond:
            claimed = np.empty(0, dtype=np.int64)
            if fill:
                absent = unique[table.state[unique] == _ABSENT]
                if absent.size:
                    claimed, _ = self._claim(table, absent)
                    if claimed.size < absent.size:
                        self.n_fallbacks += 1
        if claimed.size:
            try:
                self._compute(table, claimed)
            except BaseException:
                with self._cond:  # the places stay allocated (counted), the rows absent
                    table.state[claimed] = _ABSENT
                    self._cond.notify_all()
                raise
            with self._cond:
                table.state[claimed] = _READY
                self._cond.notify_all()
        with self._cond:
            # rows claimed by other folds: theirs to compute (computing them here too
            # would duplicate the work); a claim that failed leaves them absent
            while np.any(table.state[unique] == _COMPUTING):
                self._cond.wait()
            return table.state[rows] == _READY


def _disabled_store() -> SharedKernelRows:
    store = SharedKernelRows(None, 0.0)
    store._enabled = False
    return store


class _Serving:
    """One fold's serving context: its ``train`` indices and the tables it leased."""

    def __init__(self, store: SharedKernelRows, train: np.ndarray,
                 test: np.ndarray | None = None):
        self.store, self.train, self.test = store, train, test
        self.handles: list[FoldRows] = []

    def _key(self, X, kernel, kernel_params: dict, bias: float,
             samples: np.ndarray) -> tuple | None:
        """The table key of a kernel of ``X``, when ``X`` is the store's ``X[samples]``
        byte for byte and the kernel is one the store holds; else None."""
        kind = _SHARED_KINDS.get(kernel) if isinstance(kernel, str) else None
        if (kind is None or sp.issparse(X) or not isinstance(X, np.ndarray)
                or X.dtype != np.float64 or X.ndim != 2 or X.shape[0] != samples.size):
            return None
        data = self.store._prepared()
        if data is None:
            return None
        Xc = data[0]
        if X.shape[1] != Xc.shape[1] or (samples.size and (
                samples.min() < 0 or samples.max() >= Xc.shape[0])):
            return None
        if not _same_rows(X, Xc, samples):
            return None
        return (kind, float(kernel_params.get("gamma", 0.0)),
                float(kernel_params.get("coef0", 0.0)),
                float(kernel_params.get("degree", 1.0)), float(bias) ** 2)

    def attach(self, X, kernel, kernel_params: dict, bias: float) -> FoldRows | None:
        """The store's rows for a kernel of ``X`` (see :func:`fold_rows`)."""
        store, train = self.store, self.train
        key = self._key(X, kernel, kernel_params, bias, train)
        if key is None:
            return None
        with store._cond:
            table = store._table(key)
            table.leases += 1
        handle = FoldRows(store, table, train)
        self.handles.append(handle)
        return handle

    def attach_test(self, X, kernel, kernel_params: dict,
                    bias: float) -> PredictionRows | None:
        """The store's rows for predictions on ``X`` (see :func:`prediction_rows`)."""
        if self.test is None or not self.handles:  # the fold's kernels share nothing
            return None
        key = self._key(X, kernel, kernel_params, bias, self.test)
        if key is None:
            return None
        # only a table this fold's kernels lease: its rows stay while the fold reads
        for handle in self.handles:
            if handle.table.key == key and handle.active:
                return PredictionRows(self.store, handle.table, self.train, self.test)
        return None

    def close(self) -> None:
        """End the leases: the kernels built here compute their own rows from now on
        (a fitted estimator outlives its search), and the store may drop the rows."""
        with self.store._cond:
            for handle in self.handles:
                handle.table.leases -= 1
                # a fitted estimator keeps its kernel: it must not keep the rows alive
                for seen in (handle, *handle._restrictions):
                    seen.active = False
                    seen.store = seen.table = None
                handle._restrictions = []
        self.handles = []


#: Rows compared at a time by :func:`_same_rows` (bounded temporaries).
_COMPARE_ROWS = 1024


def _same_rows(X: np.ndarray, Xc: np.ndarray, train: np.ndarray) -> bool:
    """Whether ``X`` is ``Xc[train]`` byte for byte (then every kernel value the fold
    computes from ``X`` is the store's): once per fold's data set, a pass over the data,
    which a kernel row's cost exceeds by the number of samples."""
    if not X.flags.c_contiguous:
        X = np.ascontiguousarray(X)
    for start in range(0, train.size, _COMPARE_ROWS):
        stop = start + _COMPARE_ROWS
        mine = X[start:stop].view(np.int64)
        theirs = Xc[train[start:stop]].view(np.int64)
        if not np.array_equal(mine, theirs):
            return False
    return True


class FoldRows:
    """The store's rows seen by one fold's kernel: the fold's sample ``i`` is the
    store's ``train[i]``.

    Attributes
    ----------
    active : bool
        False once the serving context has ended: the kernel then computes its own rows.
    n_served : int
        Kernel values this fold read from the store.
    """

    def __init__(self, store: SharedKernelRows, table: _Table, train: np.ndarray):
        self.store, self.table, self.train = store, table, train
        self.active = True
        self.n_served = 0
        self._restrictions: list[FoldRows] = []

    def restricted(self, idx) -> FoldRows:
        """The rows seen by a kernel of some of the fold's samples (a one-vs-one pair's):
        its sample ``i`` is the fold's ``idx[i]``. It ends with this handle's serving
        context, and holds no lease of its own."""
        part = FoldRows(self.store, self.table, self.train[np.asarray(idx, dtype=np.intp)])
        part.active = self.active
        self._restrictions.append(part)
        return part

    def gather(self, out: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Write ``K[rows[k], cols] + bias**2`` of the fold into ``out[k]`` for the rows
        the store holds or can compute within its bound; returns the mask of the rows
        written (the others are the caller's to compute).

        ``rows``, ``cols``: the fold's (local) indices; ``out`` C-contiguous of shape
        ``(len(rows), len(cols))``.
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.ascontiguousarray(cols, dtype=np.int64)
        if not self.active or rows.size == 0 or cols.size == 0:
            return np.zeros(rows.size, dtype=bool)
        table = self.table
        g_rows = self.train[rows]
        fill = cols.size >= _FILL_FRACTION * self.train.size
        ready = self.store._serve(table, g_rows, fill)
        self.n_served += _gather_ready(out, table, g_rows, ready, self.train[cols])
        return ready


def _gather_ready(out: np.ndarray, table: _Table, g_rows: np.ndarray, ready: np.ndarray,
                  g_cols: np.ndarray) -> int:
    """Write the store's values ``K[g_rows[k], g_cols]`` into ``out[k]`` for the rows
    ``ready`` (global indices); returns the number of values written."""
    have = np.flatnonzero(ready)
    if not have.size:
        return 0
    g_cols = np.ascontiguousarray(g_cols, dtype=np.int64)
    blocks, offsets = table.block[g_rows[have]], table.offset[g_rows[have]]
    ones = np.ones(g_cols.size)
    for b in np.unique(blocks):
        sel = blocks == b
        # times 1, times 1: exact (the values are the store's)
        gather_signed_rows(out, np.ascontiguousarray(have[sel]), table.blocks[b],
                           np.ascontiguousarray(offsets[sel]), g_cols,
                           np.ones(int(sel.sum())), ones)
    return have.size * g_cols.size


class PredictionRows:
    """The store's rows seen by the predictions of a fold's model on the fold's test
    samples: the kernel values between the test samples and the fold's training
    samples, read from the test samples' rows of the whole set. Those rows are computed
    (whole, within the store's bound) by the first prediction that needs them, serve
    the predictions at every later value of the walk, and are the rows the other folds'
    fits read, the test samples of one fold being training samples of the others.

    The values are those :func:`symmetric_kernel_block` gives the pair, bit for bit,
    whether the store holds the row or not, so a prediction does not depend on it.
    """

    def __init__(self, store: SharedKernelRows, table: _Table, train: np.ndarray,
                 test: np.ndarray):
        self.store, self.table, self.train, self.test = store, table, train, test
        self.n_served = 0

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``K[test[rows], train[cols]] + bias**2`` as a new C-contiguous array, shape
        ``(len(rows), len(cols))``: ``rows`` index the fold's test samples, ``cols`` its
        training samples."""
        table, store = self.table, self.store
        g_rows = self.test[np.asarray(rows, dtype=np.int64)]
        g_cols = np.ascontiguousarray(self.train[np.asarray(cols, dtype=np.int64)])
        out = np.empty((g_rows.size, g_cols.size))
        if g_rows.size == 0 or g_cols.size == 0:
            return out
        ready = store._serve(table, g_rows, fill=True)
        self.n_served += _gather_ready(out, table, g_rows, ready, g_cols)
        missing = np.flatnonzero(~ready)
        if missing.size:  # no room in the store: computed here, as the store would
            Xc, Xt, sq = store._data
            kind, gamma, coef0, degree, bias_sq = table.key
            part = g_rows[missing]
            K = symmetric_kernel_block(Xc[part], sq[part], np.ascontiguousarray(Xt[:, g_cols]),
                                       sq[g_cols], kind, gamma, coef0, degree)
            if bias_sq:
                K += bias_sq  # as the store's rows have it
            out[missing] = K
        return out


def prediction_rows(X, kernel, kernel_params: dict, bias: float) -> PredictionRows | None:
    """The shared rows for the predictions on ``X`` of a model fitted with a kernel of
    these resolved parameters, when the calling thread is inside
    :meth:`SharedKernelRows.serving` given the fold's ``test`` indices, ``X`` is the
    store's ``X[test]`` byte for byte and the fold's own kernel reads the store's rows of
    this kernel; else None (see :func:`fold_rows`)."""
    context = _SERVING.get()
    if context is None:
        return None
    return context.attach_test(X, kernel, kernel_params, bias)


def fold_rows(X, kernel, kernel_params: dict, bias: float) -> FoldRows | None:
    """The shared rows for a kernel of the training data ``X`` with these resolved
    parameters, when the calling thread is inside :meth:`SharedKernelRows.serving` and
    the store provably applies (a dense built-in kernel other than linear, and ``X``
    equal to the store's ``X[train]`` byte for byte); else None.

    The caller must not pass parameters that were resolved from ``X`` itself (such as
    ``gamma="scale"``): no other fold would compute the same values, and whole rows of
    the store would cost more than the fold's own.
    """
    context = _SERVING.get()
    if context is None:
        return None
    return context.attach(X, kernel, kernel_params, bias)


def serving(store: SharedKernelRows | None, train,
            test=None) -> contextlib.AbstractContextManager:
    """``store.serving(train, test)``, or a context that does nothing when ``store`` is
    None."""
    if store is None:
        return contextlib.nullcontext()
    return store.serving(train, test)
