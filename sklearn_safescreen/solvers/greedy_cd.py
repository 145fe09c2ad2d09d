r"""Greedy two-variable descent for kernel box QPs, with a bounded kernel-row cache.

For the kernel duals of :mod:`sklearn_safescreen.problems.box_qp` with more than a few
hundred undecided samples: the SMO idea (Platt 1998; Fan, Chen and Lin 2005) applied to
a box QP **without** the equality constraint (SafeSVC's intercept is regularised, so it
sits in the kernel as ``+ intercept_scaling**2``; SafeLAD's likewise). Each update takes
the variable whose exact one-dimensional minimisation decreases the objective most and a
partner chosen by the second-order rule along SMO's direction, then minimises exactly
over the two variables' box (:mod:`._greedy_fast` explains why pairs: single-variable
steps zig-zag across the kernel's dominant common direction); the gradient over the free
set is updated with their signed kernel rows. Rows come from a least-recently-used cache
over the free samples (:class:`RowCache`), kept across the fits of a warm-started path,
whose columns are extended (not recomputed) when the next step's free set adds a few
samples. Shrinking as LIBSVM's (compiled loop: :mod:`._greedy_fast`).

The solver stops on the duality gap of the reduced problem (the same rule as
:func:`~.dual_cd.solve_box_qp`) and applies the gap-safe dynamic screening at every gap
check; every answer is then certified on the full problem by the caller
(:func:`~sklearn_safescreen.engine.certify.certified_solve`), so the solver's own
round-off never reaches the certificate.

Memory: the row cache holds at most ``max(cache_size, 16 rows)`` of ``8 m`` bytes
(``m`` the free samples), beside ``O(m d)`` for the free samples' feature-major copy
and ``O(n)`` vectors: at most ``cache_size + 8 (16 m + m d + c n)`` bytes for a small
constant ``c``, never an ``m x m`` block.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
from scipy.linalg import LinAlgWarning

from .._utils.openmp import current_n_threads
from ..problems._box_qp_fast import compact_rows, spread_rows
from ..problems.box_qp import BoxQP
from ..problems.constants import TINY
from ..problems.kernels import add_rows, block_rows, gather_signed_rows
from ._greedy_fast import CONVERGED, NEED_ROW, greedy_updates
from .dual_cd import DynamicScreen, SolveResult, _check_schedule
from .newton import NEWTON_MAX_SYSTEM, NewtonCache

#: A row cache whose columns are at least this fraction of the samples computes its rows
#: through the kernel's row cache (:meth:`RowCache.signed`).
SHARE_FRACTION = 0.9
#: Fewest rows the cache holds whatever ``cache_size`` (a tiny cache would recompute a
#: row at nearly every update).
MIN_CACHE_ROWS = 16
#: Rows computed together when the selected variable's row is missing: it and the
#: largest other violations (the next selections, likely), one blocked kernel call.
PREFETCH_ROWS = 32
#: ... and in a solve from zero, where nearly every variable violates its condition
#: alike and most rows are needed (measured: a cold fit of 8,000 samples at C = 0.1,
#: 2.1 s down to 1.2-1.4 s, the rows computed in blocks of 128 instead of 32).
PREFETCH_ROWS_COLD = 128
#: A kept cache serves the next solve if its columns cover the new free set after adding
#: at most this fraction of new columns, and hold at most this factor more columns than
#: the free set (each update adds a row over every column).
EXTEND_FRACTION = 0.25
#: ... and is narrowed to the new free set only when more than this fraction of its
#: columns left it.
NARROW_FRACTION = 0.1
SHRINK_COLUMNS = 1.5
#: ... and at most this factor when its rows do not all fit in the cache (wider rows
#: leave room for fewer of them).
WIDER_COLUMNS = 1.1
#: Newton steps on the interior variables (with the kept Cholesky factor, bordered when
#: the interior set changed little: :class:`~.newton.NewtonCache`) are tried once the
#: relative gap over W is below this, at most ``NEWTON_MAX_STEPS`` times per solve:
#: greedy steps alone crawl through the last decades of the gap on thousands of free
#: support vectors, and most of a warm-started large-C solve's updates come before the
#: gap reaches 1e-3 (measured on the RBF path's warm values, 8,000 samples, C = 21.5,
#: 46.4, 100: 24,700 / 41,900 / 47,800 updates and 1.2 / 2.0 / 1.9 s with Newton below
#: 1e-3; 8,000 / 12,000 / 19,100 updates and 0.9 / 1.3 / 1.2 s below 5e-2; below 0.2
#: fewer updates but no less time. 16,000 samples, C = 46.4: 124,000 updates and 11.3 s
#: against 34,400 and 8.1 s). A step from a wrong interior set is clipped to the box
#: and only costs the updates that follow it.
NEWTON_BELOW_GAP = 5e-2
#: (12: at 16,000 samples, C = 46.4 and 100, the sixth step came after 80,000-150,000
#: updates and the rest of the solve, 90,000-110,000 updates, had none; with up to 12,
#: 91,000 and 103,000 updates in all against 172,000 and 188,000, and no value used
#: more than 12); pending variables returning to W renew half of it (the interior set
#: changed: at 16,000 samples and tol=1e-6, C = 10 spent its 12 steps before the last
#: return and crawled on with 74,000 greedy updates in all, 23,000 with the renewal)
NEWTON_MAX_STEPS = 12
#: ... and once a step tried early raised the objective, from this gap only (until
#: pending variables return to W: the interior set changes and the gap opens again, so
#: the early threshold holds again; without that, at 16,000 samples and C = 100 the
#: 40,000 updates before the return were followed by 135,000 without a Newton step).
NEWTON_LATE_GAP = 1e-3
#: ... but only after this many steps in a row raised it: the clipping of a raised
#: step moves most wrongly interior variables to their bound, so the next step, a few
#: updates later, usually lands (one-thread RBF path, warm values, best of two walks:
#: 4,000 samples 0.84 -> 0.72 s, C = 46.4 and 100 0.22 -> 0.16 s each; with the
#: check cap below, 8,000 samples 3.31 -> 3.27 s, 16,000 14.65 -> 14.23 s).
NEWTON_RETRIES = 1
#: At most this many eighths of an epoch (of the free variables) of updates between
#: two gap checks (the schedule grows linearly, and a solve that a retried Newton step
#: had brought near its end once ran 17,000 updates to a relative gap of 1e-8 before
#: its next check; the measures are those of ``NEWTON_RETRIES``).
CHECK_EIGHTHS = 2
#: A variable whose row is cached is updated instead of the best one when its decrease
#: is at least this fraction of the best's (no kernel row computed for the update).
PREFER_CACHED = 0.1
#: A warm solve whose kept columns' rows no longer all fit starts over from every free
#: sample when the rows of its interior set, times this, fit in rows that wide (measured
#: on the RBF benchmark path, paired: 8,000 samples 5.07-5.74 s -> 4.37-4.47 s, 16,000
#: 17.88-18.07 s -> 17.49-17.62 s).
FRESH_START_ROOM = 1.5
#: Check the pending variables once before the first Newton step of a solve.
EARLY_PENDING_CHECK = True
#: Fewest movable samples for which :func:`prefer_greedy` chooses this solver.
GREEDY_MIN_FREE = 400
#: W is narrowed to the variables shrinking kept when they are fewer than this fraction
#: of it.
RESTRICT_FRACTION = 0.7
#: Updates between two shrinking passes, relative to the free set (LIBSVM: min(n, 1000)).
SHRINK_EVERY = 1000
#: Partner among every scanned variable (its row computed when missing), as LIBSVM's
#: second-order selection, rather than among the cached rows only, while the cache can
#: hold a row for each of them. Measured on warm-started values of the RBF path (8,000
#: samples, C = 21.5, 46.4, 100, every row of W cached): 23-30% fewer updates for 25%
#: more rows computed; at 16,000 samples (the cache holds half of W's rows) 20% fewer
#: updates but five times the rows computed, 76,000 against 14,000 at C = 46.4.
PARTNER_ANY = True
#: ... and when they do not all fit, a partner whose row is missing is taken when its
#: second-order gain is at least this factor times the best cached partner's (measured
#: at 8,000 samples, C = 46.4 and 100 warm-started: 49,800 and 54,800 updates at 1.5,
#: 41,900 and 47,800 at 1.2, against 53,500 and 72,600 with cached partners only; at
#: 16,000 samples, C = 46.4, 1.2 computed 24,600 rows, 1.5 14,000, cached partners
#: only 10,400; 4.0 changed nothing).
UNCACHED_PARTNER_GAIN = 1.5
#: The compiled loop's scans read every position of W through a mask (four at a time)
#: instead of the listed active positions one by one while the active positions are at
#: least this share of W: a masked position costs a fraction of a listed one.
DENSE_SCAN_SHARE = 0.25
#: Fewest positions of W for which the loop's scans and updates are shared by the fit's
#: threads: below it a task is too short to repay the hand-over between threads.
PARALLEL_MIN = 2048
#: Rows copied together when a cache is widened (bounded temporaries).
_COPY_ROWS = 256
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

    def __init__(self, problem: BoxQP, W: np.ndarray, buffer: np.ndarray | None = None):
        self.W = np.asarray(W, dtype=np.int64)
        self._setup(problem)
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

    def _setup(self, problem):
        self._budget_values = int(problem.kernel.cache_bytes // 8)
        self.capacity = _rows_that_fit(problem, self.W.size) if self.W.size else 0
        self._evaluate = problem.kernel.rows_over(self.W)
        self._sign_W = np.ascontiguousarray(problem.sign[self.W], dtype=np.float64)
        # columns covering (nearly) every sample: rows through the kernel's own row
        # cache, whose whole rows the certificate's margins then read instead of
        # computing them again (a cold fit's solve touches every row)
        self._shared = self.W.size >= SHARE_FRACTION * problem.n_samples
        # columns of every sample in order (nothing fixed yet): rows copied whole
        every = self.W.size == problem.n_samples and bool(
            np.array_equal(self.W, np.arange(self.W.size)))
        self._cols = _NO_COLUMNS if every else self.W

    def _fill(self, problem: BoxQP, slots: np.ndarray, positions: np.ndarray) -> None:
        """Store the signed rows of ``positions`` in the buffer rows ``slots``, each
        written once (measured at 16,000 samples, C = 100: the gather, the two sign
        passes and the assignment of :meth:`signed` took 1.5 s of the 3 s of rows)."""
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
        for start in range(0, rest.size, 256):
            part, c = rest[start:start + 256], rest_coef[start:start + 256]
            empty = np.flatnonzero(self.owner < 0)
            if empty.size >= part.size:
                self.fetch(problem, part)
                add_rows(out, self.rows, self.slot[part], c)
            else:
                out += c @ self.signed(problem, part)

    def restricted(self, problem: BoxQP, keep: np.ndarray) -> RowCache:
        """This cache over the columns ``W[keep]`` (sorted positions): the cached rows of
        the kept positions, narrowed in this cache's buffer (no kernel values computed,
        no new allocation); this cache is retired."""
        keep = np.asarray(keep, dtype=np.int64)
        new = RowCache.__new__(RowCache)
        new.W = self.W[keep]
        new._setup(problem)
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

    def extended(self, problem: BoxQP, extra: np.ndarray) -> RowCache:
        """This cache over the columns ``W + extra`` (appended): the kept rows gain the
        new columns (computed), the least recently used ones are dropped if the wider
        rows no longer fit. The rows are widened in this cache's buffer when it holds
        them (measured at 16,000 samples: a fresh buffer's first touch made each
        widening 0.2-0.4 s of system time); this cache is retired."""
        extra = np.asarray(extra, dtype=np.int64)
        new = RowCache.__new__(RowCache)
        new.W = np.concatenate([self.W, extra])
        new._setup(problem)
        m_old, m_new = self.W.size, new.W.size
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
            for start in range(0, held.size, _COPY_ROWS):  # bounded temporaries
                sl = slice(start, min(start + _COPY_ROWS, held.size))
                new.rows[sl, :m_old] = self.rows[held[sl]]
                new.rows[sl, :m_old] *= sign_rows[sl, None] * sign_cols
        if held.size:
            pos = self.owner[held]
            if extra.size:
                evaluate = problem.kernel.rows_over(extra)
                for start in range(0, held.size, _COPY_ROWS):  # bounded temporaries
                    sl = slice(start, min(start + _COPY_ROWS, held.size))
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

    A second copy of the rows cost a cold fit of 4,000 samples the copy and the first
    touch of 128 MB, and a fit of n samples ``8 n^2`` bytes more.
    """

    def __init__(self, problem: BoxQP):
        kernel = problem.kernel
        store = kernel.every_row_store()
        if store is None:
            raise ValueError("the kernel's row cache cannot hold every row")
        self._kernel = kernel
        self.W = np.arange(problem.n_samples, dtype=np.int64)
        self._setup(problem)
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


def prefer_greedy(problem: BoxQP, n_movable: int) -> bool:
    """Whether a kernel problem of ``n_movable`` samples (those whose box is not a
    point) should be solved by this solver: when it is not small. Measured on RBF paths
    against the working sets over the cached kernel block: SafeSVC n=5000 4.5 s against
    6.8 s, kernel SafeLAD n=2000 1.8 s against 5.5 s (at large ``C``, thousands of
    interpolated or free samples, the working sets' cyclic epochs crawl)."""
    return not problem.linear and n_movable > GREEDY_MIN_FREE


def holds_every_row(problem: BoxQP) -> bool:
    """Whether the cache holds the rows of every sample over every sample: then the
    solver's columns are every sample (see :func:`_row_cache`)."""
    n = problem.n_samples
    return problem.kernel.cache_bytes >= 8.0 * n * n


def _rows_that_fit(problem: BoxQP, width: int) -> int:
    """Rows of ``width`` columns a row cache holds (as :class:`RowCache` sizes it)."""
    width = max(int(width), 1)
    budget = int(problem.kernel.cache_bytes // (8 * width))
    return int(min(width, max(budget, MIN_CACHE_ROWS)))


def _row_cache(problem: BoxQP, free: np.ndarray, interior: np.ndarray) -> RowCache:
    """The columns of the solve: the kept cache's within ``free`` (extended by the
    ``interior`` free variables it lacks) when it keeps most of its rows, else a new
    cache over ``free``.

    When the cache holds every row over every sample (:func:`holds_every_row`), the
    columns are every sample, the fixed ones held at their value: narrower rows would
    not let more of them fit, and the columns stay the same from one step of a path to
    the next whatever screening fixed. Narrowing them to the free samples made every
    step whose free set differs from the last one's extend the cache and bring back
    pending samples (standardised breast cancer, RBF, 50 values: 0.151 s against
    0.098 s with the cost model choosing, 0.089 s with screening off)."""
    keeper = problem.newton
    cache = getattr(keeper, "rows", None)
    if isinstance(cache, KernelRowView) and not cache.serves(problem):
        cache = None
    if holds_every_row(problem):
        n = problem.n_samples
        if cache is None:
            cache = (KernelRowView(problem) if KernelRowView.possible(problem)
                     else RowCache(problem, np.arange(n)))
        elif cache.W.size < n:
            cache = cache.extended(problem, np.setdiff1d(np.arange(n), cache.W))
        _install(problem, cache)
        return cache
    if (cache is not None and cache.capacity < cache.W.size
            and FRESH_START_ROOM * interior.size <= _rows_that_fit(problem, free.size)):
        # the kept columns' rows no longer all fit, while the interior set's would fit
        # with room to spare in rows over every free sample: start from every free
        # sample (the buffer reused), which the solve narrows to what the cache holds;
        # extending the kept columns instead let W grow along the path past what the
        # cache holds (8,000 samples: 6,000 columns, 4,300 rows cached at C = 100)
        buffer = cache._buffer
        cache._retire()
        cache = RowCache(problem, free, buffer)
        _install(problem, cache)
        return cache
    if cache is not None:
        inside = np.isin(cache.W, free, assume_unique=True)
        extra = np.setdiff1d(interior, cache.W, assume_unique=True)
        if inside.mean() >= 1.0 - EXTEND_FRACTION and extra.size <= EXTEND_FRACTION * (
                cache.W.size):
            if inside.mean() < 1.0 - NARROW_FRACTION:
                cache = cache.restricted(problem, np.flatnonzero(inside))
            # else the few columns now fixed stay in W, held at their value (narrowing
            # copies every cached row)
            if extra.size:
                cache = cache.extended(problem, extra)
            _install(problem, cache)
            return cache
    buffer = None
    if cache is not None:  # its buffer is reused (touched memory: no page faults)
        buffer = cache._buffer
        cache._retire()
    cache = RowCache(problem, free, buffer)
    _install(problem, cache)
    return cache


def solve_kernel_greedy(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                        tol: float, max_iter: int, random_state: np.random.RandomState,
                        dynamic_screen: DynamicScreen | None = None,
                        const_fixed_quad: float | None = None,
                        start_margins: np.ndarray | None = None) -> SolveResult:
    """Greedy two-variable descent with a row cache (see the module docstring); same
    contract as :func:`~.dual_cd.solve_box_qp` in kernel mode (``max_iter`` counts
    epochs: updates divided by the number of free variables). ``random_state`` is not
    used: the selection is deterministic. ``start_margins``, if given, is ``Q alpha``
    over all samples at the given ``alpha`` (plain accuracy: it only starts the
    gradient, the caller certifies the answer): the gradient is then read from it, and
    the pending variables' gradient is updated from it by the variables that moved,
    instead of kernel products over every support vector.

    The updates run over a column set ``W`` of the free variables: the kept cache's
    (when the last solve of the path left one) and the free variables strictly inside
    their box, later only those that shrinking keeps. The other free variables are
    *pending*: held at their value, their gradient is reconstructed (one kernel product)
    before the solve may stop, and those that violate their optimality condition
    return to ``W``. The reported gap is always that of every free variable.
    """
    del random_state
    with _LoopTeam() as n_threads:
        return _solve_kernel_greedy(
            problem, alpha, fixed, tol=tol, max_iter=max_iter,
            dynamic_screen=dynamic_screen, const_fixed_quad=const_fixed_quad,
            start_margins=start_margins, n_threads=n_threads)


class _LoopTeam:
    """The threads of one greedy loop: the fit's OpenMP threads, shared among the
    greedy loops running at the same time in this process (one-vs-rest tasks or
    folds on threads), so that their teams, whose threads spin while they wait for
    the next scan, do not hold more threads than there are to share. The answer does
    not depend on it (the loop's results are the same on any number of threads)."""

    _lock = threading.Lock()
    running = 0

    def __enter__(self) -> int:
        with _LoopTeam._lock:
            _LoopTeam.running += 1
            running = _LoopTeam.running
        return max(1, current_n_threads() // running)

    def __exit__(self, *exc) -> None:
        with _LoopTeam._lock:
            _LoopTeam.running -= 1


def _solve_kernel_greedy(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                         tol: float, max_iter: int,
                         dynamic_screen: DynamicScreen | None,
                         const_fixed_quad: float | None,
                         start_margins: np.ndarray | None,
                         n_threads: int) -> SolveResult:
    alpha = alpha.astype(np.float64, copy=True)
    cold = not alpha.any()
    prefetch_rows = PREFETCH_ROWS_COLD if cold else PREFETCH_ROWS
    # a solve from zero takes partners among the cached rows only: most rows are not
    # cached yet, and a missing partner's row each update computed 39,000 rows against
    # 5,000 for a cold fit of 8,000 samples at C = 0.1 (3.3 s against 1.0 s)
    uncached_gain = UNCACHED_PARTNER_GAIN if PARTNER_ANY and not cold else np.inf
    pending_margins = _PendingMargins(problem, alpha, start_margins)
    fixed = fixed | (problem.hi <= problem.lo)
    n = problem.n_samples
    s, K = problem.sign, problem.kernel
    free = np.flatnonzero(~fixed)
    interior = free[(alpha[free] > problem.lo[free]) & (alpha[free] < problem.hi[free])]
    cache = _row_cache(problem, free, interior)
    every_row = holds_every_row(problem)  # W stays every sample (see _row_cache)
    W = cache.W
    m = W.size
    in_W = np.zeros(n, dtype=bool)
    in_W[W] = True
    pending = free[~in_W[free]]
    held = np.flatnonzero(~in_W & (alpha != 0.0))
    a = alpha[W].copy()
    lo, hi = problem.lo[W].copy(), problem.hi[W].copy()
    outside = fixed[W]  # positions of W held at their value (a degenerate box)
    lo[outside] = hi[outside] = a[outside]
    p = problem.p[W].copy()
    diag = np.ascontiguousarray(problem.sqnorm[W])
    # the held variables' margins over W, and the objective 1/2 a'Qa - p'a, afterwards
    # tracked through the updates' exact decreases; its constant part a_h'Q_hh a_h over
    # the held variables (|held|^2 kernel values) only when the stopping test needs it
    const = const_fixed_quad if not pending.size else None
    a_held = s[held] * alpha[held] if held.size else None
    if start_margins is not None:
        # the whole objective from the margins (const: nothing left out)
        g = start_margins[W] - p
        objective = 0.5 * float(alpha @ start_margins) - float(problem.p @ alpha)
        const = 0.0
    else:
        if held.size:
            d = s[W] * K.matvec(W, held, a_held)
        else:
            d = np.zeros(m)
            const = 0.0
        g = d - p
        nz = np.flatnonzero(a != 0.0)
        if nz.size:
            # interior variables first: they are the likeliest to be selected
            nz = nz[np.argsort((a[nz] <= lo[nz]) | (a[nz] >= hi[nz]), kind="stable")]
            cache.accumulate(problem, g, nz, a[nz])
        objective = 0.5 * (float(a @ (g + p - d)) + 2.0 * float(a @ d)) \
            - float(problem.p @ alpha)  # without 0.5 * const
    active = np.flatnonzero(~outside).astype(np.int64)
    n_listed = n_active = active.size
    n_free0 = max(free.size, 1)
    max_updates = int(max_iter) * n_free0
    updates, n_checks, eps, events, dyn_fixed = 0, 0, 0.1, [], []
    inv_diag = None
    gap = rel_gap = np.inf
    converged = False
    newton_tried, n_newton, early_done, n_raised = None, 0, False, 0
    newton_below = NEWTON_BELOW_GAP
    if problem.newton is not None:
        problem.newton.keep_bytes = problem.kernel.cache_bytes
    while True:
        if inv_diag is None:  # W changed
            inv_diag = _inverse(diag)
            since_shrink = 0
            sign_W = np.ascontiguousarray(problem.sign[W], dtype=np.float64)
        budget = min(max(min(_check_schedule(n_checks), CHECK_EIGHTHS) * n_free0 // 8, 1),
                     max(max_updates - updates, 1))
        if cache.signs is None:
            loop_a, loop_g, loop_lo, loop_hi, loop_sign = a, g, lo, hi, sign_W
        else:
            # the kernel's unsigned rows: the loop on b = S a (see KernelRowView)
            flip = sign_W < 0.0
            a[flip] *= -1.0
            g[flip] *= -1.0
            loop_a, loop_g, loop_sign = a, g, np.ones(m)
            loop_lo, loop_hi = np.where(flip, -hi, lo), np.where(flip, -lo, hi)
        out = greedy_updates(loop_a, loop_g, loop_lo, loop_hi, diag, inv_diag, loop_sign,
                             active, n_active, n_listed, cache.rows, cache.slot,
                             cache.last_use, cache.clock, budget, eps,
                             min(SHRINK_EVERY, n_listed) if n_listed > 1 else 0, True,
                             PREFER_CACHED, cache.capacity if PARTNER_ANY else 0,
                             uncached_gain, since_shrink, n_threads,
                             dense_share=DENSE_SCAN_SHARE, parallel_min=PARALLEL_MIN)
        status, done, n_active, cache.clock, violation, need, decrease, since_shrink = \
            out[:8]
        if cache.signs is not None:
            a[flip] *= -1.0
            g[flip] *= -1.0
        updates += done
        objective -= decrease
        if out.team_gave_up:
            n_threads = 1  # other work holds the cores: alone for the rest of the solve
        if status == NEED_ROW:
            cache.fetch(problem, _prefetch(a, g, lo, hi, active[:n_active], cache, need,
                                           prefetch_rows))
            continue
        n_checks += 1
        la = active[:n_listed]
        G = g[la]
        gap = float((np.maximum(-lo[la] * G, -hi[la] * G) + a[la] * G).sum())
        alpha[W] = a
        rel_gap, const = _relative_gap(problem, alpha, gap, objective, const, tol,
                                       held, a_held)
        complete = pending.size == 0
        last = rel_gap <= tol or updates >= max_updates
        # before the solve's first Newton step: the pending variables that returned
        # only at its end made a second factorisation of the grown interior set
        early = (EARLY_PENDING_CHECK and not complete and not early_done
                 and n_newton == 0 and tol < rel_gap <= newton_below)
        if not complete and (last or early):
            early_done = True
            # the pending variables' gradient, afresh: they join the gap and, where it
            # is open, W
            alpha[W] = a
            g_pend = pending_margins.gradient(alpha, pending)
            t_pend = (np.maximum(-problem.lo[pending] * g_pend, -problem.hi[pending] * g_pend)
                      + alpha[pending] * g_pend)
            gap += float(t_pend.sum())
            rel_gap, const = _relative_gap(problem, alpha, gap, objective, const, tol,
                                           held, a_held)
            back = t_pend > 0.0
            if rel_gap > tol and back.any() and updates < max_updates:
                cache, a, g, lo, hi, p, diag, active = _add_columns(
                    problem, cache, alpha, pending[back], g_pend[back],
                    (a, g, lo, hi, p, diag), active[:n_listed])
                W = cache.W
                m = W.size
                pending = pending[~back]
                n_listed = n_active = active.size
                inv_diag = None
                # the returning variables' violations set the next target, not the
                # (tiny) one the others had reached
                eps = max(eps, 0.1 * float(np.abs(g_pend[back]).max()))
                newton_below = NEWTON_BELOW_GAP
                n_newton = min(n_newton, NEWTON_MAX_STEPS // 2)
                continue
            complete = last
        if rel_gap <= tol and complete:
            converged = True
            break
        if updates >= max_updates:
            break
        interior = la[(a[la] > lo[la]) & (a[la] < hi[la])]
        if interior.size > NEWTON_MAX_SYSTEM:
            # beyond the largest system: a Newton step on the most violating interior
            # variables, the others held
            keep = np.argpartition(-np.abs(g[interior]), NEWTON_MAX_SYSTEM - 1)
            interior = np.sort(interior[keep[:NEWTON_MAX_SYSTEM]])
        if (rel_gap > tol and rel_gap <= newton_below and n_newton < NEWTON_MAX_STEPS
                and 0 < interior.size
                and not np.array_equal(W[interior], newton_tried)):
            newton_tried, n_newton = W[interior], n_newton + 1
            moved = _newton_step(problem, cache, a, g, lo, hi, interior)
            n_raised = n_raised + 1 if moved is None or moved > 0.0 else 0
            if n_raised > NEWTON_RETRIES:
                # the interior set is still far from the final one (the clipped steps
                # raised the objective): later steps wait for the late threshold
                newton_below = min(newton_below, NEWTON_LATE_GAP)
            if moved is not None:
                objective += moved
                eps = max(eps, 0.1 * violation)
                continue
        if dynamic_screen is not None and la.size and complete:
            lo_m, hi_m = dynamic_screen(G + p[la], p[la], diag[la], gap)
            to_lo, to_hi = la[lo_m], la[hi_m]
            if to_lo.size or to_hi.size:
                moved = np.concatenate([to_lo, to_hi])
                new = np.concatenate([lo[to_lo], hi[to_hi]])
                step = new - a[moved]
                change = step != 0.0
                g_old = g[moved]
                cache.accumulate(problem, g, moved[change], step[change])
                # exact change of the objective: step'(g_old + g_new) / 2
                objective += 0.5 * float(step @ (g_old + g[moved]))
                a[moved] = new
                lo[moved] = hi[moved] = new
                dyn_fixed.append(W[moved])
                keep = np.ones(m, dtype=bool)
                keep[moved] = False
                active = np.ascontiguousarray(la[keep[la]])
                n_listed = n_active = active.size
                events.append((to_lo.size, to_hi.size, n_listed + pending.size))
        kept = _narrowed(a, g, lo, hi, la, cache.capacity)
        if kept.size < RESTRICT_FRACTION * m and not every_row:
            # most of W sits at a bound on the right side of it: narrower rows, more of
            # them cached; the others wait as pending variables
            alpha[W] = a
            is_kept = np.zeros(m, dtype=bool)
            is_kept[kept] = True
            pending = np.concatenate([pending, W[la[~is_kept[la]]]])
            cache = cache.restricted(problem, kept)
            _install(problem, cache)
            a, g, lo, hi, p, diag = (x[kept].copy() for x in (a, g, lo, hi, p, diag))
            W = cache.W
            m = W.size
            active = np.arange(m, dtype=np.int64)
            n_listed = n_active = m
            inv_diag = None
            continue
        if status == CONVERGED:
            eps = 0.1 * min(eps, violation)
    alpha[W] = a
    if dyn_fixed:
        fixed[np.concatenate(dyn_fixed)] = True
    n_iter = int(np.ceil(updates / n_free0))
    return SolveResult(alpha, fixed, gap, rel_gap, n_iter, converged, events)


class _CachedBlock:
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
            # the cached rows' columns copied straight into the block (measured at
            # 16,000 samples, C = 100: 0.6 s for a 4,200-variable interior block
            # through a copy of the whole rows first)
            gather_signed_rows(out, have, cache.rows, slots[have], cols,
                               *cache._signs_of(slots[have], cols))
        rest = np.flatnonzero(slots < 0)
        step = block_rows(cache.W.size, 256)  # bounded temporaries (whole rows over W)
        for start in range(0, rest.size, step):
            part = rest[start:start + step]
            block = cache.signed(self.problem, rows[part])
            # the columns gathered into their rows on the fit's threads, no temporary
            gather_signed_rows(out, part, block, np.arange(part.size), cols,
                               np.ones(part.size), np.ones(cols.size))
        return out


def _newton_step(problem, cache: RowCache, a, g, lo, hi, interior) -> float | None:
    """Newton step on the interior positions (the others held): ``Q_II step = g_I``,
    clipped to the box; updates ``a`` and ``g`` in place and returns the change of the
    objective, or None when the system is singular (nothing changed)."""
    keeper = problem.newton if problem.newton is not None else NewtonCache()
    # the factor cache works on sorted global indices (W is not sorted once extended)
    interior = interior[np.argsort(cache.W[interior], kind="stable")]
    try:
        with warnings.catch_warnings():
            # an ill-conditioned step is harmless: the gap check judges its result
            warnings.simplefilter("ignore", LinAlgWarning)
            step = keeper.solve(problem, _CachedBlock(problem, cache), cache.W, interior,
                                g[interior])
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(step)):
        return None
    new = np.clip(a[interior] - step, lo[interior], hi[interior])
    delta = new - a[interior]
    change = delta != 0.0
    g_old = g[interior].copy()
    cache.accumulate(problem, g, interior[change], delta[change])
    a[interior] = new
    # exact change of the objective: delta'(g_old + g_new) / 2
    return 0.5 * float(delta @ (g_old + g[interior]))


def _relative_gap(problem, alpha, gap, objective, const, tol, held, a_held):
    """``(gap / |dual objective|, const)``. The dual objective is ``-(objective + const
    / 2)``; it is at most ``p'alpha``, so while ``gap > tol p'alpha > 0`` the solve is
    certainly not done and ``gap / p'alpha`` (a lower bound) is returned without the
    constant; otherwise the constant is computed (once)."""
    pa = float(problem.p @ alpha)
    if const is None and pa > 0.0 and gap > tol * pa:
        return gap / pa, const
    if const is None:
        const = float(a_held @ problem.kernel.matvec(held, held, a_held))
    return gap / max(abs(objective + 0.5 * const), TINY), const


def _inverse(diag: np.ndarray) -> np.ndarray:
    """``1 / diag`` where positive (0 elsewhere: the loop does not read it there)."""
    out = np.zeros_like(diag)
    np.divide(1.0, diag, out=out, where=diag > 0.0)
    return out


def _narrowed(a, g, lo, hi, la, capacity: int) -> np.ndarray:
    """Sorted positions to keep in W: the listed variables strictly inside their box or
    violating their optimality condition, then the nearest to violating it (smallest
    gradient pushing into their bound) up to the cache's capacity."""
    G = g[la]
    push = np.where(a[la] <= lo[la], G, np.where(a[la] >= hi[la], -G, -np.inf))
    must = int((push <= 0.0).sum())
    k = min(max(must, capacity), la.size)
    if k >= la.size:
        return np.sort(la)
    return np.sort(la[np.argpartition(push, k - 1)[:k]])


class _PendingMargins:
    """``Q alpha`` over the pending variables, each time from the last values known for
    them updated by the variables that moved since (when that is fewer kernel values
    than the product over every nonzero variable), else afresh."""

    def __init__(self, problem: BoxQP, alpha: np.ndarray, margins: np.ndarray | None):
        self.problem = problem
        self.alpha_at = alpha.copy()
        self.q = np.zeros(alpha.size) if margins is None else margins.copy()
        self.known = np.full(alpha.size, margins is not None)

    def gradient(self, alpha: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(Q alpha - p)[rows]``; the values become the known ones."""
        problem, s, K = self.problem, self.problem.sign, self.problem.kernel
        nz = np.flatnonzero(alpha)
        moved = np.flatnonzero(alpha != self.alpha_at)
        q = np.empty(rows.size)
        known = self.known[rows]
        if moved.size < nz.size and known.any():
            r = rows[known]
            q[known] = self.q[r] + s[r] * K.matvec(
                r, moved, s[moved] * (alpha[moved] - self.alpha_at[moved]))
        else:
            known[:] = False
        if not known.all():
            r = rows[~known]
            q[~known] = s[r] * K.matvec(r, nz, s[nz] * alpha[nz])
        self.alpha_at = alpha.copy()
        self.known[:] = False
        self.known[rows] = True
        self.q[rows] = q
        return q - problem.p[rows]


def _add_columns(problem, cache, alpha, extra, g_extra, arrays, active):
    """Extend W by the pending variables ``extra`` (global) with their gradient."""
    a, g, lo, hi, p, diag = arrays
    m = cache.W.size
    cache = cache.extended(problem, extra)
    _install(problem, cache)
    a = np.concatenate([a, alpha[extra]])
    g = np.concatenate([g, g_extra])
    lo = np.concatenate([lo, problem.lo[extra]])
    hi = np.concatenate([hi, problem.hi[extra]])
    p = np.concatenate([p, problem.p[extra]])
    diag = np.ascontiguousarray(np.concatenate([diag, problem.sqnorm[extra]]))
    active = np.concatenate([active, m + np.arange(extra.size)]).astype(np.int64)
    return cache, a, g, lo, hi, p, diag, active


def _install(problem, cache) -> None:
    if problem.newton is not None:
        problem.newton.rows = cache


def _prefetch(a, g, lo, hi, scanned, cache: RowCache, need: int,
              n_rows: int = PREFETCH_ROWS) -> np.ndarray:
    """``need`` and the largest violations among the scanned positions whose rows are
    missing (at most ``n_rows`` in all, and a quarter of the cache)."""
    k = min(n_rows, max(cache.capacity // 4, 1)) - 1
    if k <= 0 or scanned.size == 0:
        return np.array([need], dtype=np.int64)
    G = g[scanned]
    a_s, lo_s, hi_s = a[scanned], lo[scanned], hi[scanned]
    blocked = ((a_s <= lo_s) & (G >= 0)) | ((a_s >= hi_s) & (G <= 0))
    viol = np.where(blocked, 0.0, np.abs(G))
    viol[cache.slot[scanned] >= 0] = 0.0
    viol[scanned == need] = 0.0
    if k < scanned.size:
        top = np.argpartition(-viol, k - 1)[:k]
    else:
        top = np.arange(scanned.size)
    top = top[viol[top] > 0.0]
    return np.concatenate([[need], scanned[top]]).astype(np.int64)
