"""Compiled loop of the greedy kernel box-QP solver (:mod:`.greedy_cd`).

Greedy two-variable descent on :math:`\\min_\\alpha \\tfrac12\\alpha^\\top Q\\alpha-p^\\top
\\alpha`, :math:`lo\\le\\alpha\\le hi`, :math:`Q = SKS` (``S`` the diagonal of signs):

* the first variable ``i`` is the one whose exact one-variable minimisation decreases
  the objective most;
* the second, ``j``, is chosen as in the second-order working-set selection of Fan, Chen
  and Lin (2005): the partner that maximises :math:`b_{ij}^2/c_{ij}` along the direction
  :math:`u = \\sigma(s_i e_i - s_j e_j)` that moves ``i`` downhill, with
  :math:`c_{ij} = Q_{ii} + Q_{jj} - 2 s_i s_j Q_{ij}` its curvature and :math:`b_{ij}` the
  objective's slope along it;
* the objective is then minimised exactly over the box of ``(i, j)`` (a two-variable box
  QP, solved in closed form), which never decreases less than the single step on ``i``.

Why two variables: an RBF kernel's rows share a large common part (its leading
eigenvector is close to the constant vector), so :math:`Q` has a dominant eigenvalue
along :math:`S\\mathbf 1`. Single-coordinate steps zig-zag across that direction; the
pair direction :math:`s_i e_i - s_j e_j` is orthogonal to it, as SMO's steps are for the
SVM's equality constraint (Platt 1998), while the closed-form two-variable minimisation
still moves along it when that pays: far fewer updates reach the same gap.

Each update adds the two variables' signed kernel rows to the gradient. Rows come from a
row cache the caller fills (least recently used rows are evicted there); when a selected
variable's row is missing, the loop returns its index. Shrinking as LIBSVM's (Joachims
1999): a variable at a bound whose gradient pushes it outwards by more than the largest
violation leaves the selection scan; its gradient is still updated (the update runs
over every position), so un-shrinking needs no gradient reconstruction.

The two scans of an update (the first variable, then its partner) read the active
positions through their sorted list, one at a time, or, while the active positions are
at least the share ``dense_share`` of W, every position through a mask four at a time
(``_greedy_scan.h``): the same choices, at a fraction of the cost per position, since
the vector form has no chain of dependent branches (doc/benchmarks.md, "Kernel SafeSVC
profile").

The masked scans and the gradient updates run over fixed chunks of 512 positions, and
the next selection scan of a chunk right after its update (while the chunk is in the
core's cache). With several threads (``n_threads``, W of at least
``parallel_min`` positions) one parallel region spans the whole call: its first
thread runs the loop and hands each scan and update to the team, every thread taking
the same contiguous chunks at every task. Each chunk's candidates are merged in chunk
order, so the choices and the gradient are the same, bit for bit, on any number of
threads. The sections "Kernel SafeSVC profile" and "Parallel loops" of
doc/benchmarks.md have the team's gain.

Beside this file: the thread team and its chunk tasks (``_greedy_team.pxd``, with
``_greedy_team.h``), the masked scans (``_greedy_scan.h``), the scans through the
active list and shrinking (``_greedy_listed.pxd``) and the exact two-variable step
(``_greedy_box.pxd``). Every call returns its own outcome (:data:`LoopOutcome`) and
takes its tuning values as arguments: calls running at once on threads share no state.
"""

from collections import namedtuple

from cython.parallel cimport parallel
from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from posix.time cimport CLOCK_THREAD_CPUTIME_ID
from posix.time cimport clock_gettime, timespec

from ._greedy_box cimport box2, clip, quad2
from ._greedy_listed cimport partner_listed, select_listed, shrink, sort_positions
from ._greedy_team cimport (
    CHUNK,
    GT_SPINS,
    MAX_TEAM,
    PARTNER,
    SELECT,
    Chunks,
    Positions,
    Team,
    gt_atomics,
    gt_store,
    gt_team_size,
    gt_thread_num,
    merge_partner,
    merge_select,
    team_run,
    team_update,
    team_work,
)

cdef enum:
    CONVERGED_ = 0
    MAX_UPDATES_ = 1
    NEED_ROW_ = 2

#: ``greedy_updates`` statuses.
CONVERGED = CONVERGED_
MAX_UPDATES = MAX_UPDATES_
NEED_ROW = NEED_ROW_

#: Spins of a waiting thread before it starts yielding its core (the default of
#: ``greedy_updates``' ``patience``).
TEAM_SPINS = GT_SPINS

#: What one ``greedy_updates`` call did: ``status`` (``CONVERGED``, ``MAX_UPDATES`` or
#: ``NEED_ROW``), ``updates`` made, ``n_active`` positions left in the scans, the row
#: cache's ``clock``, the largest projected gradient (``violation``) at the last scan,
#: the position whose row is missing (``need``), the ``decrease`` of the objective,
#: ``since_shrink`` (updates since the last shrinking pass), ``team_size`` (the threads
#: the call started its scans on) and ``team_gave_up`` (whether it dismissed them, the
#: others too often late). Returned by each call: calls running at once on threads of
#: one process (one-vs-rest tasks) each read their own.
LoopOutcome = namedtuple("LoopOutcome", [
    "status", "updates", "n_active", "clock", "violation", "need", "decrease",
    "since_shrink", "team_size", "team_gave_up"])


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


cdef class LoopProfile:
    """Counters of the ``greedy_updates`` calls given this object (``profile=``), owned
    by the caller (a benchmark's breakdown of the loop's time; the solver never reads
    them): thread CPU seconds in the selection scan, the partner scan, the gradient
    updates and shrinking; elements scanned by each scan and updated; pair and
    single-variable updates. Not for calls running at the same time (each call adds to
    the counters without a lock): one object per thread."""

    cdef double t[4]  # selection scan, partner scan, gradient update, shrinking
    cdef long long n[5]  # scanned, partner-scanned, updated elements, pairs, singles

    def __cinit__(self):
        self.reset()

    def reset(self) -> None:
        """Set every counter to zero."""
        cdef int k
        for k in range(4):
            self.t[k] = 0.0
        for k in range(5):
            self.n[k] = 0

    def counters(self) -> dict:
        """The counters as a dict (see the class)."""
        return dict(t_select=self.t[0], t_partner=self.t[1], t_update=self.t[2],
                    t_shrink=self.t[3], n_scanned=self.n[0],
                    n_partner_scanned=self.n[1], n_updated=self.n[2], pairs=self.n[3],
                    singles=self.n[4])


#: Curvature used along a pair direction whose curvature is not positive (LIBSVM's tau).
cdef double TAU = 1e-12

cdef struct _Loop


cdef void _team_enter(Team* T, _Loop* L) noexcept nogil:
    # every thread of the parallel region: the first runs the loop, the others work
    cdef int tid = gt_thread_num()
    cdef int w
    if tid == 0:
        # the runtime may give fewer threads than asked for: the team is what it gave
        T.nt = T.size = min(gt_team_size(), MAX_TEAM)
        for w in range(MAX_TEAM):
            T.done[w] = 0
        _loop(L, T)
        gt_store(&T.phase, -1)
    elif tid < MAX_TEAM:
        team_work(T, tid)


cdef struct _Loop:
    # greedy_updates' arguments as pointers, its work arrays and its results
    Py_ssize_t m
    double* a
    double* g
    const double* lo
    const double* hi
    const double* diag
    const double* inv_diag
    const double* sign
    int64_t* act
    Py_ssize_t n_active
    Py_ssize_t n_listed
    const double* rows  # C-contiguous, m columns
    const int64_t* slot
    int64_t* last_use
    int64_t clock
    Py_ssize_t max_updates
    double eps
    Py_ssize_t shrink_every
    bint pairs
    double prefer_cached
    Py_ssize_t any_partner_within
    double uncached_gain
    Py_ssize_t since_shrink
    double dense_share  # the masked scans while the active positions are this share
    double* prof_t  # a LoopProfile's counters (NULL: not profiled)
    long long* prof_n
    int64_t* buf
    uint8_t* mark
    double* on
    int status
    Py_ssize_t updates
    double vmax
    Py_ssize_t need
    double decrease


cdef void _loop(_Loop* L, Team* T) noexcept nogil:
    # greedy_updates' loop, run by the team's first thread (the others run the chunks
    # of its scans and updates, team_work)
    cdef Py_ssize_t m = L.m, k, kk, j, best = -1, partner, updates = 0
    cdef Py_ssize_t cached, need = -1
    cdef double cached_score, G, vmax = 0.0, best_score, new, delta, old
    cdef double decrease = 0.0, sigma, h_i, qii, qij, d1, d2
    cdef double change, s_i, G_p, best_b2, best_c
    cdef const double* row_i
    cdef int return_status = CONVERGED_
    cdef double t0 = 0.0
    cdef double factor, cached_b2, cached_c
    cdef Py_ssize_t cached_partner
    cdef bint dense
    cdef const int64_t* slots_seen  # NULL when every row is cached (the scans' shortcut)
    cdef Positions pos
    cdef bint fresh = False  # the chunks' selection candidates are those of now
    cdef double* a = L.a
    cdef double* g = L.g
    cdef const double* lo = L.lo
    cdef const double* hi = L.hi
    cdef const double* diag = L.diag
    cdef const double* inv_diag = L.inv_diag
    cdef const double* sign = L.sign
    cdef int64_t* act = L.act
    cdef Py_ssize_t n_active = L.n_active, n_listed = L.n_listed
    cdef const double* rows = L.rows
    cdef const int64_t* slot = L.slot
    cdef int64_t* last_use = L.last_use
    cdef int64_t clock = L.clock
    cdef Py_ssize_t max_updates = L.max_updates, shrink_every = L.shrink_every
    cdef double eps = L.eps, prefer_cached = L.prefer_cached
    cdef bint pairs = L.pairs
    cdef Py_ssize_t any_partner_within = L.any_partner_within
    cdef double uncached_gain = L.uncached_gain
    cdef Py_ssize_t since_shrink = L.since_shrink
    cdef int64_t* buf = L.buf
    cdef uint8_t* mark = L.mark
    cdef double* on = L.on
    cdef double dense_share = L.dense_share
    cdef bint profile = L.prof_t != NULL
    cdef double* prof_t = L.prof_t
    cdef long long* prof_n = L.prof_n
    for j in range(m):
        mark[j] = 0
    sort_positions(act, 0, n_active, mark, m)
    sort_positions(act, n_active, n_listed, mark, m)
    # the mask of the active positions, for the masked scans
    for j in range(m):
        on[j] = 0.0
    for k in range(n_active):
        on[act[k]] = 1.0
    dense = n_active >= dense_share * m
    # rows are fetched between calls only: whether all are cached holds for this one
    slots_seen = NULL
    for j in range(m):
        if slot[j] < 0:
            slots_seen = slot
            break
    pos.m = m
    pos.g = g
    pos.a = a
    pos.lo = lo
    pos.hi = hi
    pos.diag = diag
    pos.inv_diag = inv_diag
    pos.sign = sign
    pos.slot = slots_seen
    pos.on = on
    T.pos = &pos
    while True:
        # one scan: the largest violation and the best exact coordinate step
        if profile:
            t0 = _now()
            prof_n[0] += n_active
        vmax = 0.0
        best = -1
        best_score = 0.0
        cached = -1
        cached_score = 0.0
        if dense:
            if not fresh:  # else the last update's chunks scanned themselves
                team_run(T, SELECT)
            merge_select(T.ch, T.n_chunks, &vmax, &best, &best_score, &cached,
                         &cached_score)
        else:
            select_listed(&pos, act, n_active, slot, &vmax, &best, &best_score, &cached,
                          &cached_score)
        fresh = False
        if profile:
            prof_t[0] += _now() - t0
        if vmax <= eps or best < 0:
            if n_active < n_listed:  # converged on the shrunk set: check them all
                for k in range(n_active, n_listed):
                    on[act[k]] = 1.0
                n_active = n_listed
                sort_positions(act, 0, n_active, mark, m)
                dense = n_active >= dense_share * m
                since_shrink = 0
                continue
            return_status = CONVERGED_
            break
        if updates >= max_updates:
            return_status = MAX_UPDATES_
            break
        if slot[best] < 0:
            if cached >= 0 and cached_score >= prefer_cached * best_score:
                # a cached row that decreases the objective nearly as much: no
                # kernel row for this update
                best, best_score = cached, cached_score
            else:
                need = best
                return_status = NEED_ROW_
                break
        G = g[best]
        old = a[best]
        partner = -1
        row_i = rows + slot[best] * m
        s_i = sign[best]
        qii = diag[best]
        # a partner whose row is missing is taken when the scanned variables' rows
        # all fit the cache, else only when its gain is ``uncached_gain`` times
        # the best cached partner's (its row costs a kernel row and may evict
        # rows the next updates read)
        factor = 1.0 if n_active <= any_partner_within else uncached_gain
        if pairs and n_active > 1:
            # the partner: i = best moves downhill along sigma s_i, j along
            # -sigma s_j; the largest second-order gain b^2 / c, compared without
            # dividing (b^2 c' > b'^2 c)
            sigma = -s_i if G > 0.0 else s_i
            h_i = s_i * G
            best_b2 = 0.0
            best_c = 1.0
            cached_b2 = 0.0
            cached_c = 1.0
            cached_partner = -1
            if profile:
                t0 = _now()
                prof_n[1] += n_active
            if dense:
                T.row1 = row_i
                T.first = best
                T.sigma = sigma
                T.h_i = h_i
                T.s_i = s_i
                T.qii = qii
                team_run(T, PARTNER)
                merge_partner(T.ch, T.n_chunks, &partner, &best_b2, &best_c,
                              &cached_partner, &cached_b2, &cached_c)
            else:
                partner_listed(&pos, act, n_active, slot, row_i, best, sigma, h_i, s_i,
                               qii, TAU, &partner, &best_b2, &best_c, &cached_partner,
                               &cached_b2, &cached_c)
            if partner >= 0 and slot[partner] < 0 and not (
                    best_b2 * cached_c >= factor * cached_b2 * best_c):
                partner = cached_partner
            if profile:
                prof_t[1] += _now() - t0
        if partner >= 0 and slot[partner] < 0:
            # keep the first variable's row the most recent: fetching the partner's
            # must not evict it
            clock += 1
            last_use[slot[best]] = clock
            need = partner
            return_status = NEED_ROW_
            break
        if partner >= 0:
            qij = row_i[partner]
            G_p = g[partner]
            box2(qii, qij, diag[partner], G, G_p,
                 lo[best] - old, hi[best] - old,
                 lo[partner] - a[partner], hi[partner] - a[partner], &d1, &d2)
            change = quad2(qii, qij, diag[partner], G, G_p, d1, d2)
            if -change > best_score:
                # land exactly on a bound the step reaches; apply the step taken
                new = lo[best] if d1 == lo[best] - old else (
                    hi[best] if d1 == hi[best] - old else clip(old + d1, lo[best],
                                                               hi[best]))
                d1 = new - old
                a[best] = new
                old = a[partner]
                new = lo[partner] if d2 == lo[partner] - old else (
                    hi[partner] if d2 == hi[partner] - old else clip(
                        old + d2, lo[partner], hi[partner]))
                d2 = new - old
                a[partner] = new
                decrease -= quad2(qii, qij, diag[partner], G, G_p, d1, d2)
                if profile:
                    t0 = _now()
                    prof_n[3] += 1
                    prof_n[2] += (d1 != 0.0) * m + (d2 != 0.0) * m
                # the gradient, and the next selection scan with it
                team_update(T, d1, row_i, d2, rows + slot[partner] * m, dense)
                fresh = dense
                if profile:
                    prof_t[2] += _now() - t0
                clock += 1
                last_use[slot[best]] = clock
                last_use[slot[partner]] = clock
                partner = -2  # done
        if partner != -2:
            if qii > 0.0:
                new = clip(old - G / qii, lo[best], hi[best])
            else:
                new = hi[best] if G < 0.0 else lo[best]
            delta = new - old
            decrease -= delta * (G + 0.5 * qii * delta)
            a[best] = new
            if profile:
                t0 = _now()
                prof_n[4] += 1
                prof_n[2] += m
            team_update(T, delta, row_i, 0.0, NULL, dense)
            fresh = dense
            if profile:
                prof_t[2] += _now() - t0
            clock += 1
            last_use[slot[best]] = clock
        updates += 1
        since_shrink += 1
        if shrink_every > 0 and since_shrink >= shrink_every:
            since_shrink = 0
            if profile:
                t0 = _now()
            # LIBSVM's rule (see shrink): past the largest violation at the last scan
            kk = shrink(&pos, act, n_active, vmax, buf, on)
            if kk < n_active:  # the mask changed: scan again
                fresh = False
            n_active = kk
            dense = n_active >= dense_share * m
            if profile:
                prof_t[3] += _now() - t0
    L.status = return_status
    L.updates = updates
    L.n_active = n_active
    L.clock = clock
    L.vmax = vmax
    L.need = need
    L.decrease = decrease
    L.since_shrink = since_shrink


def greedy_updates(double[::1] a, double[::1] g, const double[::1] lo,
                   const double[::1] hi, const double[::1] diag,
                   const double[::1] inv_diag, const double[::1] sign,
                   int64_t[::1] active, Py_ssize_t n_active, Py_ssize_t n_listed,
                   const double[:, ::1] rows, const int64_t[::1] slot,
                   int64_t[::1] last_use, int64_t clock, Py_ssize_t max_updates,
                   double eps, Py_ssize_t shrink_every, bint pairs=True,
                   double prefer_cached=1.0, Py_ssize_t any_partner_within=0,
                   double uncached_gain=INFINITY,
                   Py_ssize_t since_shrink=0, int n_threads=1, *,
                   double dense_share, Py_ssize_t parallel_min, int patience=GT_SPINS,
                   LoopProfile profile=None):
    """Greedy updates over the positions ``active[:n_active]`` until the largest
    projected gradient there is at most ``eps`` (then, if some positions were shrunk,
    over all ``n_listed`` again), ``max_updates`` updates, or a missing row.

    ``n_threads``: the threads that share the masked scans and the gradient updates
    when W has at least ``parallel_min`` positions; the results do not depend on it
    (fixed chunks of positions, merged in their order). The scans read every position
    through a mask while the active positions are at least ``dense_share`` of W (above
    1: never; 0: always), else the listed ones. The team is dismissed when the first
    thread's waits too often outlast ``patience`` spins (0: every wait counts; tests).
    ``profile`` (a :class:`LoopProfile`) accumulates the loop's counters.

    ``inv_diag`` is ``1 / diag`` where ``diag > 0``; ``sign`` the signs ``S`` of
    ``Q = SKS`` (+1 or -1). ``a``, ``g`` (the gradient ``Q a - p`` over every position),
    ``active``
    (reordered: shrunk positions are moved behind ``n_active``) and ``last_use`` are
    updated in place. ``rows[slot[j]]`` is the signed kernel row of position ``j`` over
    all positions (``slot[j] < 0``: not cached). ``pairs=False`` makes single-variable
    updates only. The partner is chosen among every scanned variable (its row asked for
    when missing) while they are at most ``any_partner_within`` (the cache's capacity:
    their rows all fit), else among those whose row is cached unless the best one's
    second-order gain is at least ``uncached_gain`` times theirs (a partner's row
    computed for one update may evict the rows the next updates read).
    Shrinking moves out of the scans the variables at a bound whose gradient pushes
    them outwards by more than the largest violation (LIBSVM's rule), every
    ``shrink_every`` updates; ``since_shrink`` counts the updates
    since the last shrinking pass, carried across calls (a call that stops for a
    missing row after fewer than ``shrink_every`` updates must not restart the count,
    else a solve whose rows are often missing would never shrink).

    Returns a :data:`LoopOutcome`: ``status`` is ``CONVERGED``, ``MAX_UPDATES`` or
    ``NEED_ROW`` (then ``need`` is the position whose row is missing; nothing was
    changed for it), ``violation`` the largest projected gradient over the scanned
    positions at the last scan, ``decrease`` the sum of the updates' exact decreases of
    the objective; ``team_size`` and ``team_gave_up`` describe this call's team.
    """
    cdef Py_ssize_t m = g.shape[0]
    cdef _Loop L
    cdef Team T
    cdef Chunks ch
    cdef Py_ssize_t n_chunks = (m + CHUNK - 1) // CHUNK
    cdef int nt = n_threads if (n_threads > 1 and m >= parallel_min
                                and gt_atomics()) else 1
    if (a.shape[0] != m or lo.shape[0] != m or hi.shape[0] != m or diag.shape[0] != m
            or inv_diag.shape[0] != m or sign.shape[0] != m
            or slot.shape[0] != m or rows.shape[1] != m or n_listed > active.shape[0]
            or n_active > n_listed or n_active < 0):
        raise ValueError("greedy_updates: shapes do not match")
    L.buf = <int64_t*>malloc(max(m, 1) * sizeof(int64_t))
    L.mark = <uint8_t*>malloc(max(m, 1) * sizeof(uint8_t))
    L.on = <double*>malloc(max(m, 1) * sizeof(double))
    # the chunks' candidates: 11 arrays of n_chunks entries of 8 bytes in one block
    ch.vmax = <double*>malloc(max(n_chunks, 1) * 11 * sizeof(double))
    if L.buf == NULL or L.mark == NULL or L.on == NULL or ch.vmax == NULL:
        free(L.buf)
        free(L.mark)
        free(L.on)
        free(ch.vmax)
        raise MemoryError()
    ch.best = <Py_ssize_t*>(ch.vmax + n_chunks)
    ch.best_score = ch.vmax + 2 * n_chunks
    ch.cached = <Py_ssize_t*>(ch.vmax + 3 * n_chunks)
    ch.cached_score = ch.vmax + 4 * n_chunks
    ch.partner = <Py_ssize_t*>(ch.vmax + 5 * n_chunks)
    ch.b2 = ch.vmax + 6 * n_chunks
    ch.c = ch.vmax + 7 * n_chunks
    ch.cached_partner = <Py_ssize_t*>(ch.vmax + 8 * n_chunks)
    ch.cached_b2 = ch.vmax + 9 * n_chunks
    ch.cached_c = ch.vmax + 10 * n_chunks
    L.m = m
    L.a = &a[0] if m else NULL
    L.g = &g[0] if m else NULL
    L.lo = &lo[0] if m else NULL
    L.hi = &hi[0] if m else NULL
    L.diag = &diag[0] if m else NULL
    L.inv_diag = &inv_diag[0] if m else NULL
    L.sign = &sign[0] if m else NULL
    L.act = &active[0] if active.shape[0] > 0 else NULL
    L.n_active = n_active
    L.n_listed = n_listed
    L.rows = &rows[0, 0] if rows.shape[0] > 0 and m else NULL
    L.slot = &slot[0] if m else NULL
    L.last_use = &last_use[0] if last_use.shape[0] > 0 else NULL
    L.clock = clock
    L.max_updates = max_updates
    L.eps = eps
    L.shrink_every = shrink_every
    L.pairs = pairs
    L.prefer_cached = prefer_cached
    L.any_partner_within = any_partner_within
    L.uncached_gain = uncached_gain
    L.since_shrink = since_shrink
    L.dense_share = dense_share
    L.prof_t = NULL
    L.prof_n = NULL
    if profile is not None:
        L.prof_t = profile.t
        L.prof_n = profile.n
    T.ch = &ch
    T.n_chunks = n_chunks
    T.phase = 0
    T.nt = T.size = 1
    T.tasks = 0
    T.late = 0
    T.gave_up = False
    T.patience = patience
    T.tau = TAU
    if nt > 1:
        with nogil, parallel(num_threads=nt):
            _team_enter(&T, &L)
    else:
        with nogil:
            _loop(&L, &T)
    free(L.buf)
    free(L.mark)
    free(L.on)
    free(ch.vmax)
    return LoopOutcome(L.status, L.updates, L.n_active, L.clock, L.vmax, L.need,
                       L.decrease, L.since_shrink, T.size, bool(T.gave_up))
