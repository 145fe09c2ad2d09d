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
from .greedy_options import DEFAULT_OPTIONS, GreedyOptions
from .newton import NEWTON_MAX_SYSTEM, NewtonCache

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
        self.capacity = _rows_that_fit(problem, self.W.size, self.options.min_cache_rows) \
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


def prefer_greedy(problem: BoxQP, n_movable: int,
                  options: GreedyOptions | None = None) -> bool:
    """Whether a kernel problem of ``n_movable`` samples (those whose box is not a
    point) should be solved by this solver: when it is not small
    (:attr:`GreedyOptions.greedy_min_free`). At large ``C``, with thousands of
    interpolated or free samples, the working sets' cyclic epochs over the cached
    kernel block crawl, where greedy pairs with a row cache do not."""
    options = DEFAULT_OPTIONS if options is None else options
    return not problem.linear and n_movable > options.greedy_min_free


def holds_every_row(problem: BoxQP) -> bool:
    """Whether the cache holds the rows of every sample over every sample: then the
    solver's columns are every sample (see :func:`_row_cache`)."""
    n = problem.n_samples
    return problem.kernel.cache_bytes >= 8.0 * n * n


def _rows_that_fit(problem: BoxQP, width: int, min_rows: int) -> int:
    """Rows of ``width`` columns a row cache holds, at least ``min_rows`` (as
    :class:`RowCache` sizes it)."""
    width = max(int(width), 1)
    budget = int(problem.kernel.cache_bytes // (8 * width))
    return int(min(width, max(budget, min_rows)))


def _row_cache(problem: BoxQP, free: np.ndarray, interior: np.ndarray,
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
        _install(problem, cache)
        return cache
    if (cache is not None and cache.capacity < cache.W.size
            and options.fresh_start_room * interior.size
            <= _rows_that_fit(problem, free.size, options.min_cache_rows)):
        # the kept columns' rows no longer all fit, while the interior set's would fit
        # with room to spare in rows over every free sample: start from every free
        # sample (the buffer reused), which the solve narrows to what the cache holds;
        # extending the kept columns instead would let W grow along the path past what
        # the cache holds
        buffer = cache._buffer
        cache._retire()
        cache = RowCache(problem, free, buffer, options)
        _install(problem, cache)
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
            _install(problem, cache)
            return cache
    buffer = None
    if cache is not None:  # its buffer is reused (touched memory: no page faults)
        buffer = cache._buffer
        cache._retire()
    cache = RowCache(problem, free, buffer, options)
    _install(problem, cache)
    return cache


def solve_kernel_greedy(problem: BoxQP, alpha: np.ndarray, fixed: np.ndarray, *,
                        tol: float, max_iter: int, random_state: np.random.RandomState,
                        dynamic_screen: DynamicScreen | None = None,
                        const_fixed_quad: float | None = None,
                        start_margins: np.ndarray | None = None,
                        options: GreedyOptions | None = None) -> SolveResult:
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

    ``options`` (:class:`~.greedy_options.GreedyOptions`, default
    :data:`DEFAULT_OPTIONS`) holds the solver's tuning values.
    """
    del random_state
    options = DEFAULT_OPTIONS if options is None else options
    with _LoopTeam() as n_threads:
        return _solve_kernel_greedy(
            problem, alpha, fixed, tol=tol, max_iter=max_iter,
            dynamic_screen=dynamic_screen, const_fixed_quad=const_fixed_quad,
            start_margins=start_margins, n_threads=n_threads, options=options)


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
                         n_threads: int, options: GreedyOptions) -> SolveResult:
    opt = options
    alpha = alpha.astype(np.float64, copy=True)
    cold = not alpha.any()
    prefetch_rows = opt.prefetch_rows_cold if cold else opt.prefetch_rows
    # a solve from zero takes partners among the cached rows only: most rows are not
    # cached yet, and computing a missing partner's row at each update would compute
    # most rows several times over before the cache holds them
    uncached_gain = opt.uncached_partner_gain if opt.partner_any and not cold else np.inf
    pending_margins = _PendingMargins(problem, alpha, start_margins)
    fixed = fixed | (problem.hi <= problem.lo)
    n = problem.n_samples
    s, K = problem.sign, problem.kernel
    free = np.flatnonzero(~fixed)
    interior = free[(alpha[free] > problem.lo[free]) & (alpha[free] < problem.hi[free])]
    cache = _row_cache(problem, free, interior, opt)
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
    newton_below = opt.newton_below_gap
    if problem.newton is not None:
        problem.newton.keep_bytes = problem.kernel.cache_bytes
    while True:
        if inv_diag is None:  # W changed
            inv_diag = _inverse(diag)
            since_shrink = 0
            sign_W = np.ascontiguousarray(problem.sign[W], dtype=np.float64)
        budget = min(max(min(_check_schedule(n_checks), opt.check_eighths) * n_free0 // 8,
                         1),
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
                             min(opt.shrink_every, n_listed) if n_listed > 1 else 0,
                             True, opt.prefer_cached,
                             cache.capacity if opt.partner_any else 0, uncached_gain,
                             since_shrink, n_threads, **opt.loop_arguments())
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
        early = (opt.early_pending_check and not complete and not early_done
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
                newton_below = opt.newton_below_gap
                n_newton = min(n_newton, opt.newton_max_steps // 2)
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
        if (rel_gap > tol and rel_gap <= newton_below and n_newton < opt.newton_max_steps
                and 0 < interior.size
                and not np.array_equal(W[interior], newton_tried)):
            newton_tried, n_newton = W[interior], n_newton + 1
            moved = _newton_step(problem, cache, a, g, lo, hi, interior)
            n_raised = n_raised + 1 if moved is None or moved > 0.0 else 0
            if n_raised > opt.newton_retries:
                # the interior set is still far from the final one (the clipped steps
                # raised the objective): later steps wait for the late threshold
                newton_below = min(newton_below, opt.newton_late_gap)
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
        if kept.size < opt.restrict_fraction * m and not every_row:
            # most of W sits at a bound on the right side of it: narrower rows, more of
            # them cached; the others wait as pending variables
            alpha[W] = a
            is_kept = np.zeros(m, dtype=bool)
            is_kept[kept] = True
            pending = np.concatenate([pending, W[la[~is_kept[la]]]])
            cache = cache.restricted(problem, kept, opt)
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
              n_rows: int) -> np.ndarray:
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
