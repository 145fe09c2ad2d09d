r"""The greedy kernel solver's rows (:mod:`.greedy_cd`): signed kernel rows over its
column set ``W``, least recently used rows evicted, kept across the solves of a
warm-started path on the problem's :class:`~.newton.NewtonCache`.

A solve's columns are chosen by :func:`cache_for_solve`: the kept cache's, narrowed or
extended (its rows moved in its own buffer, not recomputed) when the free set changed
little, else a new cache over the free samples (the kept buffer reused). When the
kernel's own row cache holds every row, :class:`KernelRowView` reads it in place
instead of keeping a second copy. :class:`CachedBlock` gathers the blocks of ``Q`` the
Newton steps factorise from the cached rows.
"""

from __future__ import annotations

import numpy as np

from ..problems._box_qp_fast import compact_rows, spread_rows
from ..problems.box_qp import BoxQP
from ..problems.kernels import add_rows, block_rows, gather_signed_rows
from .greedy_options import DEFAULT_OPTIONS, GreedyOptions

#: ``gather_signed_rows``'s "every column, in order".
_NO_COLUMNS = np.empty(0, dtype=np.int64)


class RowCache:
    r"""Signed kernel rows :math:`Q_{iW}` over a column set ``W`` (global sample
    indices), least recently used rows evicted, at most ``capacity`` rows.

    Positions are indices into ``W``; ``slot[j]`` is the buffer row of position ``j``
    (-1: not cached).
    """

    #: None: the rows hold the signs (:math:`Q`); else the signs of the columns' samples,
    #: the rows being the kernel's own (:math:`K`, :class:`KernelRowView`)
    signs = None

    def __init__(self, problem: BoxQP, W: np.ndarray, buffer: np.ndarray | None = None,
                 options: GreedyOptions | None = None):
        self.W = np.asarray(W, dtype=np.int64)
        self._setup(problem, options)
        self.slot = np.full(self.W.size, -1, dtype=np.int64)
        self.owner = np.full(self.capacity, -1, dtype=np.int64)
        self.last_use = np.zeros(self.capacity, dtype=np.int64)
        self.clock = 0
        self._use_buffer(buffer)

    def _use_buffer(self, buffer: np.ndarray | None) -> None:
        """Take ``buffer`` (a flat array) for the rows if it is large enough, else a new
        one of the whole budget (its untouched part costs no memory); the rows are a
        C-contiguous view of its start."""
        size = self.capacity * self.W.size
        if buffer is None or buffer.size < size:
            buffer = np.empty(max(size, self._budget_values, 1))
        self._buffer = buffer
        self.rows = buffer[:size].reshape(self.capacity, self.W.size)

    def _retire(self) -> None:
        """This cache's buffer now belongs to a successor: fail loudly if used."""
        self._buffer = self.rows = None

    def _signs_of(self, slots: np.ndarray, positions: np.ndarray) -> tuple:
        """The signs that make the buffer rows ``slots`` over the columns ``positions``
        signed rows of :math:`Q` (ones: these rows hold the signs)."""
        return np.ones(len(slots)), np.ones(len(positions))

    def _setup(self, problem, options: GreedyOptions | None):
        self.options = DEFAULT_OPTIONS if options is None else options
        self._budget_values = int(problem.kernel.cache_bytes // 8)
        self.capacity = rows_that_fit(problem, self.W.size, self.options.min_cache_rows) \
            if self.W.size else 0
        self._evaluate = problem.kernel.rows_over(self.W)
        self._sign_W = np.ascontiguousarray(problem.sign[self.W], dtype=np.float64)
        # columns covering (nearly) every sample: rows through the kernel's own row
        # cache, whose whole rows the certificate's margins then read instead of
        # computing them again (a cold fit's solve touches every row)
        self._shared = self.W.size >= self.options.share_fraction * problem.n_samples
        # columns of every sample in order (nothing fixed yet): rows copied whole
        every = self.W.size == problem.n_samples and bool(
            np.array_equal(self.W, np.arange(self.W.size)))
        self._cols = _NO_COLUMNS if every else self.W

    def _fill(self, problem: BoxQP, slots: np.ndarray, positions: np.ndarray) -> None:
        """Store the signed rows of ``positions`` in the buffer rows ``slots``, each
        written once (no block computed, then signed twice and copied, as
        :meth:`signed` would)."""
        rows = self.W[positions]
        sign_rows = np.ascontiguousarray(problem.sign[rows], dtype=np.float64)
        if self._shared and problem.kernel.signed_rows_into(
                self.rows, slots, rows, self._cols, sign_rows, self._sign_W):
            return
        block = problem.kernel.block(rows, self.W) if self._shared else \
            self._evaluate(rows)
        gather_signed_rows(self.rows, slots, block, np.arange(rows.size), _NO_COLUMNS,
                           sign_rows, self._sign_W)

    def signed(self, problem: BoxQP, positions: np.ndarray) -> np.ndarray:
        """The rows of ``positions`` (not stored here)."""
        rows = self.W[positions]
        block = problem.kernel.block(rows, self.W) if self._shared else \
            self._evaluate(rows)
        block *= problem.sign[rows][:, None]
        block *= self._sign_W[None, :]
        return block

    def fetch(self, problem: BoxQP, positions: np.ndarray) -> None:
        """Make the rows of ``positions`` (at most ``capacity``, distinct) cached,
        evicting the least recently used others."""
        missing = positions[self.slot[positions] < 0]
        self.clock += 1
        if missing.size == 0:
            self.last_use[self.slot[positions]] = self.clock
            return
        empty = np.flatnonzero(self.owner < 0)
        if empty.size < missing.size:
            taken = np.flatnonzero(self.owner >= 0)
            taken = taken[~np.isin(self.owner[taken], positions)]
            need = missing.size - empty.size
            evicted = taken[np.argpartition(self.last_use[taken], need - 1)[:need]]
            self.slot[self.owner[evicted]] = -1
            self.owner[evicted] = -1
            empty = np.concatenate([empty, evicted])
        slots = empty[:missing.size]
        self._fill(problem, slots, missing)
        self.slot[missing] = slots
        self.owner[slots] = missing
        self.last_use[self.slot[positions]] = self.clock

    def accumulate(self, problem: BoxQP, out: np.ndarray, positions: np.ndarray,
                   coef: np.ndarray) -> None:
        """``out += coef @ Q[positions, W]``: cached rows in place, the others computed
        in blocks and stored while the cache has empty slots."""
        cached = self.slot[positions] >= 0
        if cached.any():
            add_rows(out, self.rows, self.slot[positions[cached]], coef[cached])
        rest, rest_coef = positions[~cached], coef[~cached]
        step = self.options.block_rows  # bounded temporaries
        for start in range(0, rest.size, step):
            part, c = rest[start:start + step], rest_coef[start:start + step]
            empty = np.flatnonzero(self.owner < 0)
            if empty.size >= part.size:
                self.fetch(problem, part)
                add_rows(out, self.rows, self.slot[part], c)
            else:
                out += c @ self.signed(problem, part)

    def restricted(self, problem: BoxQP, keep: np.ndarray,
                   options: GreedyOptions | None = None) -> RowCache:
        """This cache over the columns ``W[keep]`` (sorted positions): the cached rows of
        the kept positions, narrowed in this cache's buffer (no kernel values computed,
        no new allocation); this cache is retired. ``options``: the new cache's (by
        default this one's)."""
        keep = np.asarray(keep, dtype=np.int64)
        new = RowCache.__new__(RowCache)
        new.W = self.W[keep]
        new._setup(problem, self.options if options is None else options)
        new.slot = np.full(new.W.size, -1, dtype=np.int64)
        new.owner = np.full(new.capacity, -1, dtype=np.int64)
        new.last_use = np.zeros(new.capacity, dtype=np.int64)
        new.clock = self.clock
        old_slot = self.slot[keep]
        have = np.flatnonzero(old_slot >= 0)
        if have.size > new.capacity:  # the most recently used
            have = have[np.argsort(-self.last_use[old_slot[have]], kind="stable")]
            have = have[:new.capacity]
        # in the order of their buffer rows: what narrowing in place needs
        have = have[np.argsort(old_slot[have], kind="stable")]
        src = np.ascontiguousarray(old_slot[have])
        k = np.arange(have.size)
        if self._buffer is not None and self._buffer.size >= new.capacity * new.W.size:
            compact_rows(self._buffer, src, self.W.size, keep)
            new._use_buffer(self._buffer)
        else:
            new._use_buffer(None)
            # one pass, no temporaries
            gather_signed_rows(new.rows, k, self.rows, src, keep,
                               *self._signs_of(src, keep))
        new.slot[have] = k
        new.owner[k] = have
        new.last_use[k] = self.last_use[src]
        self._retire()
        return new

    def extended(self, problem: BoxQP, extra: np.ndarray,
                 options: GreedyOptions | None = None) -> RowCache:
        """This cache over the columns ``W + extra`` (appended): the kept rows gain the
        new columns (computed), the least recently used ones are dropped if the wider
        rows no longer fit. The rows are widened in this cache's buffer when it holds
        them (a fresh buffer's first touch costs a page fault per page, system time
        that grows with the buffer); this cache is retired. ``options``: the new
        cache's (by default this one's)."""
        extra = np.asarray(extra, dtype=np.int64)
        new = RowCache.__new__(RowCache)
        new.W = np.concatenate([self.W, extra])
        new._setup(problem, self.options if options is None else options)
        m_old, m_new = self.W.size, new.W.size
        step = new.options.block_rows
        new.slot = np.full(m_new, -1, dtype=np.int64)
        new.owner = np.full(new.capacity, -1, dtype=np.int64)
        new.last_use = np.zeros(new.capacity, dtype=np.int64)
        new.clock = self.clock
        held = np.flatnonzero(self.owner >= 0)
        if held.size > new.capacity:  # the most recently used
            held = held[np.argsort(-self.last_use[held], kind="stable")][:new.capacity]
            held = np.sort(held)
        k = np.arange(held.size)
        if self._buffer is not None and self._buffer.size >= new.capacity * m_new:
            spread_rows(self._buffer, held, m_old, m_new)
            new._use_buffer(self._buffer)
        else:
            new._use_buffer(None)
            sign_rows, sign_cols = self._signs_of(held, np.arange(m_old))
            for start in range(0, held.size, step):  # bounded temporaries
                sl = slice(start, min(start + step, held.size))
                new.rows[sl, :m_old] = self.rows[held[sl]]
                new.rows[sl, :m_old] *= sign_rows[sl, None] * sign_cols
        if held.size:
            pos = self.owner[held]
            if extra.size:
                evaluate = problem.kernel.rows_over(extra)
                for start in range(0, held.size, step):  # bounded temporaries
                    sl = slice(start, min(start + step, held.size))
                    rows_g = self.W[pos[sl]]
                    block = evaluate(rows_g)
                    block *= problem.sign[rows_g][:, None]
                    block *= problem.sign[extra][None, :]
                    new.rows[sl, m_old:] = block
            new.slot[pos] = k
            new.owner[k] = pos
            new.last_use[k] = self.last_use[held]
        self._retire()
        return new


class KernelRowView(RowCache):
    r"""The kernel's own row cache read in place as the solver's rows, when it has room
    for the row of every sample: the columns are every sample, in order, and the rows
    are :math:`K` (unsigned), so the greedy loop runs on :math:`b = S\alpha`, whose
    problem has :math:`K` for :math:`Q = SKS` (the signs of the variables, their
    gradients and bounds flipped where :math:`s = -1`: exact negations, so the updates
    are those on :math:`\alpha` bit for bit).

    A second copy of the rows would cost a fit of n samples ``8 n^2`` bytes more, and a
    cold fit the copy and the first touch of that memory.
    """

    def __init__(self, problem: BoxQP, options: GreedyOptions | None = None):
        kernel = problem.kernel
        store = kernel.every_row_store()
        if store is None:
            raise ValueError("the kernel's row cache cannot hold every row")
        self._kernel = kernel
        self.W = np.arange(problem.n_samples, dtype=np.int64)
        self._setup(problem, options)
        self.rows, self.slot, self.owner, self.last_use = store
        self.capacity = self.rows.shape[0]
        self.signs = np.ascontiguousarray(problem.sign, dtype=np.float64)
        self._buffer = None  # the rows are the kernel's: nothing to hand on

    @staticmethod
    def possible(problem: BoxQP) -> bool:
        """Whether the problem's kernel cache holds every row (see the class)."""
        store = getattr(problem.kernel, "every_row_store", None)
        return store is not None and store() is not None

    def serves(self, problem: BoxQP) -> bool:
        """Whether these rows and signs are ``problem``'s."""
        return (self.rows is not None and self._kernel is problem.kernel
                and np.array_equal(self.signs, problem.sign))

    @property
    def clock(self) -> int:
        return self._kernel.clock

    @clock.setter
    def clock(self, value: int) -> None:
        self._kernel.clock = value

    def fetch(self, problem: BoxQP, positions: np.ndarray) -> None:
        self._kernel.ensure_rows(positions)

    def accumulate(self, problem: BoxQP, out: np.ndarray, positions: np.ndarray,
                   coef: np.ndarray) -> None:
        # out += S K S coef, as s_j (s_j out_j + sum_k (s_k coef_k) K_kj): the same
        # terms as the signed rows' in the same order, negated where s_j = -1 (exact)
        slots = self._kernel.ensure_rows(positions)
        out *= self.signs
        add_rows(out, self.rows, slots, coef * self.signs[positions])
        out *= self.signs

    def _signs_of(self, slots: np.ndarray, positions: np.ndarray) -> tuple:
        # the positions are the samples
        return self.signs[self.owner[slots]], self.signs[positions]

    def _retire(self) -> None:
        # the rows stay the kernel's; this object no longer reads them
        self.rows = self.slot = self.owner = self.last_use = None


def holds_every_row(problem: BoxQP) -> bool:
    """Whether the cache holds the rows of every sample over every sample: then the
    solver's columns are every sample (see :func:`cache_for_solve`)."""
    n = problem.n_samples
    return problem.kernel.cache_bytes >= 8.0 * n * n


def rows_that_fit(problem: BoxQP, width: int, min_rows: int) -> int:
    """Rows of ``width`` columns a row cache holds, at least ``min_rows`` (as
    :class:`RowCache` sizes it)."""
    width = max(int(width), 1)
    budget = int(problem.kernel.cache_bytes // (8 * width))
    return int(min(width, max(budget, min_rows)))


def cache_for_solve(problem: BoxQP, free: np.ndarray, interior: np.ndarray,
                    options: GreedyOptions) -> RowCache:
    """The columns of the solve: the kept cache's within ``free`` (extended by the
    ``interior`` free variables it lacks) when it keeps most of its rows, else a new
    cache over ``free``.

    When the cache holds every row over every sample (:func:`holds_every_row`), the
    columns are every sample, the fixed ones held at their value: narrower rows would
    not let more of them fit, and the columns stay the same from one step of a path to
    the next whatever screening fixed (narrowed to the free samples, every step whose
    free set differs from the last one's would extend the cache and bring back pending
    samples)."""
    keeper = problem.newton
    cache = getattr(keeper, "rows", None)
    if isinstance(cache, KernelRowView) and not cache.serves(problem):
        cache = None
    if holds_every_row(problem):
        n = problem.n_samples
        if cache is None:
            cache = (KernelRowView(problem, options) if KernelRowView.possible(problem)
                     else RowCache(problem, np.arange(n), options=options))
        elif cache.W.size < n:
            cache = cache.extended(problem, np.setdiff1d(np.arange(n), cache.W), options)
        install(problem, cache)
        return cache
    if (cache is not None and cache.capacity < cache.W.size
            and options.fresh_start_room * interior.size
            <= rows_that_fit(problem, free.size, options.min_cache_rows)):
        # the kept columns' rows no longer all fit, while the interior set's would fit
        # with room to spare in rows over every free sample: start from every free
        # sample (the buffer reused), which the solve narrows to what the cache holds;
        # extending the kept columns instead would let W grow along the path past what
        # the cache holds
        buffer = cache._buffer
        cache._retire()
        cache = RowCache(problem, free, buffer, options)
        install(problem, cache)
        return cache
    if cache is not None:
        inside = np.isin(cache.W, free, assume_unique=True)
        extra = np.setdiff1d(interior, cache.W, assume_unique=True)
        share = options.extend_fraction
        if inside.mean() >= 1.0 - share and extra.size <= share * cache.W.size:
            if inside.mean() < 1.0 - options.narrow_fraction:
                cache = cache.restricted(problem, np.flatnonzero(inside), options)
            # else the few columns now fixed stay in W, held at their value (narrowing
            # copies every cached row)
            if extra.size:
                cache = cache.extended(problem, extra, options)
            install(problem, cache)
            return cache
    buffer = None
    if cache is not None:  # its buffer is reused (touched memory: no page faults)
        buffer = cache._buffer
        cache._retire()
    cache = RowCache(problem, free, buffer, options)
    install(problem, cache)
    return cache


class CachedBlock:
    """``Q[np.ix_(i, j)]`` over positions of W, gathered from the cached rows (the
    others computed, not stored): what :meth:`.NewtonCache.solve` factorises."""

    def __init__(self, problem, cache: RowCache):
        self.problem, self.cache = problem, cache

    def __getitem__(self, key):
        rows, cols = (np.asarray(k, dtype=np.int64).ravel() for k in key)
        return self.gather_into(np.empty((rows.size, cols.size)), rows, cols)

    def gather_into(self, out: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``Q[np.ix_(rows, cols)]`` written into ``out`` (C-contiguous), returned."""
        rows, cols = (np.asarray(k, dtype=np.int64).ravel() for k in (rows, cols))
        cache = self.cache
        slots = cache.slot[rows]
        have = np.flatnonzero(slots >= 0)
        if have.size:
            # the cached rows' columns copied straight into the block (a copy of the
            # whole rows first would read and write every column of W for nothing)
            gather_signed_rows(out, have, cache.rows, slots[have], cols,
                               *cache._signs_of(slots[have], cols))
        rest = np.flatnonzero(slots < 0)
        # bounded temporaries (whole rows over W)
        step = block_rows(cache.W.size, cache.options.block_rows)
        for start in range(0, rest.size, step):
            part = rest[start:start + step]
            block = cache.signed(self.problem, rows[part])
            # the columns gathered into their rows on the fit's threads, no temporary
            gather_signed_rows(out, part, block, np.arange(part.size), cols,
                               np.ones(part.size), np.ones(cols.size))
        return out


def install(problem: BoxQP, cache: RowCache) -> None:
    """Keep ``cache`` on the problem's Newton keeper, for the next solve of the path
    (:attr:`.NewtonCache.rows`)."""
    if problem.newton is not None:
        problem.newton.rows = cache
