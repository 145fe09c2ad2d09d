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
still moves along it when that pays. Measured on an RBF SVM path with 4,600 free support
vectors: about five times fewer updates than single-coordinate greedy steps.

Each update adds the two variables' signed kernel rows to the gradient. Rows come from a
row cache the caller fills (least recently used rows are evicted there); when a selected
variable's row is missing, the loop returns its index. Shrinking as LIBSVM's (Joachims
1999): a variable at a bound whose gradient pushes it outwards by more than the largest
violation leaves the selection scan; its gradient is still updated (the update is a BLAS
axpy over every position), so un-shrinking needs no gradient reconstruction.

The two scans of an update (the first variable, then its partner) read the active
positions through their sorted list, one at a time, or, while the active positions are
at least a quarter of W, every position through a mask four at a time
(``_greedy_scan.h``): the same choices, at half the cost (16,000 samples, C = 100: 0.69
s and 0.90 s for the two scans of 102,000 updates against 1.44 s and 1.85 s).
"""

from libc.math cimport INFINITY, fabs, isfinite
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from posix.time cimport CLOCK_THREAD_CPUTIME_ID
from scipy.linalg.cython_blas cimport daxpy
from posix.time cimport clock_gettime, timespec

cdef extern from "sklearn_safescreen/solvers/_greedy_scan.h" nogil:
    void gs_select(Py_ssize_t m, const double* g, const double* a, const double* lo,
                   const double* hi, const double* diag, const double* inv_diag,
                   const int64_t* slot, const double* on, double* vmax,
                   Py_ssize_t* best, double* best_score, Py_ssize_t* cached,
                   double* cached_score)
    void gs_partner(Py_ssize_t m, const double* g, const double* a, const double* lo,
                    const double* hi, const double* diag, const double* sign,
                    const int64_t* slot, const double* on, const double* row,
                    Py_ssize_t first, double sigma, double h_i, double s_i, double qii,
                    double tau, Py_ssize_t* partner, double* b2, double* c,
                    Py_ssize_t* cached, double* cached_b2, double* cached_c)

# The scans read every position of W through a mask (four at a time, _greedy_scan.h)
# instead of the listed active positions one by one when the active positions are at
# least this share of W (``set_dense_scan_share``).
cdef double _dense_share = 0.25


def set_dense_scan_share(double share) -> float:
    """Set the share of W the active positions must reach for the masked scans (above
    1: never; 0: always) and return the previous one (tests and benchmarks)."""
    global _dense_share
    old = _dense_share
    _dense_share = share
    return old

cdef enum:
    CONVERGED_ = 0
    MAX_UPDATES_ = 1
    NEED_ROW_ = 2

#: ``greedy_updates`` statuses.
CONVERGED = CONVERGED_
MAX_UPDATES = MAX_UPDATES_
NEED_ROW = NEED_ROW_

# profiling counters (off unless ``set_profile(True)``: a benchmark's breakdown of the
# loop's time, never read by the solver)
cdef bint _profile = False
cdef double _prof_t[4]  # selection scan, partner scan, gradient update, shrinking
cdef long long _prof_n[5]  # scanned, partner-scanned, updated elements, pairs, singles


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


def set_profile(bint on):
    """Turn the loop's profiling counters on or off (and reset them)."""
    global _profile
    _profile = on
    cdef int k
    for k in range(4):
        _prof_t[k] = 0.0
    for k in range(5):
        _prof_n[k] = 0


def profile_counters() -> dict:
    """The counters since the last ``set_profile``: seconds in the selection scan, the
    partner scan, the gradient updates and shrinking; elements scanned by each scan and
    updated; pair and single-variable updates."""
    return dict(t_select=_prof_t[0], t_partner=_prof_t[1], t_update=_prof_t[2],
                t_shrink=_prof_t[3], n_scanned=_prof_n[0], n_partner_scanned=_prof_n[1],
                n_updated=_prof_n[2], pairs=_prof_n[3], singles=_prof_n[4])


#: Curvature used along a pair direction whose curvature is not positive (LIBSVM's tau).
cdef double TAU = 1e-12


cdef inline double _clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline double _quad2(double h11, double h12, double h22, double g1, double g2,
                          double d1, double d2) noexcept nogil:
    """The change of the objective for the step ``(d1, d2)``."""
    return d1 * (g1 + 0.5 * h11 * d1 + h12 * d2) + d2 * (g2 + 0.5 * h22 * d2)


cdef inline double _edge(double h, double g, double lo, double hi) noexcept nogil:
    """Minimiser over ``[lo, hi]`` of ``g d + h d^2 / 2`` (``h >= 0``)."""
    if h > 0.0:
        return _clip(-g / h, lo, hi)
    return hi if g < 0.0 else lo


cdef void _box2(double h11, double h12, double h22, double g1, double g2,
                double l1, double u1, double l2, double u2,
                double* d1, double* d2) noexcept nogil:
    """Exact minimiser of the convex two-variable QP ``g'd + d'Hd/2`` over the box
    ``[l1, u1] x [l2, u2]`` (which contains 0): the stationary point if it lies in the
    box, else the best of the four edges' one-variable minimisers (the minimum of a
    convex function over a rectangle is at the stationary point or on the boundary)."""
    cdef double det = h11 * h22 - h12 * h12, x, y, v, best_v = 0.0
    cdef double bx = 0.0, by = 0.0
    if det > 1e-12 * h11 * h22 and det > 0.0:
        x = (h12 * g2 - h22 * g1) / det
        y = (h12 * g1 - h11 * g2) / det
        if l1 <= x <= u1 and l2 <= y <= u2:
            d1[0] = x
            d2[0] = y
            return
    # the edges (0 is feasible: the best value starts at 0)
    if isfinite(l1):
        y = _edge(h22, g2 + h12 * l1, l2, u2)
        v = _quad2(h11, h12, h22, g1, g2, l1, y)
        if v < best_v:
            best_v, bx, by = v, l1, y
    if isfinite(u1):
        y = _edge(h22, g2 + h12 * u1, l2, u2)
        v = _quad2(h11, h12, h22, g1, g2, u1, y)
        if v < best_v:
            best_v, bx, by = v, u1, y
    if isfinite(l2):
        x = _edge(h11, g1 + h12 * l2, l1, u1)
        v = _quad2(h11, h12, h22, g1, g2, x, l2)
        if v < best_v:
            best_v, bx, by = v, x, l2
    if isfinite(u2):
        x = _edge(h11, g1 + h12 * u2, l1, u1)
        v = _quad2(h11, h12, h22, g1, g2, x, u2)
        if v < best_v:
            best_v, bx, by = v, x, u2
    d1[0] = bx
    d2[0] = by


cdef void _sort_positions(int64_t* active, Py_ssize_t start, Py_ssize_t stop,
                          uint8_t* mark, Py_ssize_t m) noexcept nogil:
    """Sort ``active[start:stop]`` (distinct positions below ``m``) in O(m): the scans
    then read every array in increasing order (shrinking's swaps had scattered them)."""
    cdef Py_ssize_t k, j
    if stop - start < 2:
        return
    for k in range(start, stop):
        mark[active[k]] = 1
    k = start
    for j in range(m):
        if mark[j]:
            active[k] = j
            k += 1
            mark[j] = 0


def greedy_updates(double[::1] a, double[::1] g, const double[::1] lo,
                   const double[::1] hi, const double[::1] diag,
                   const double[::1] inv_diag, const double[::1] sign,
                   int64_t[::1] active, Py_ssize_t n_active, Py_ssize_t n_listed,
                   const double[:, ::1] rows, const int64_t[::1] slot,
                   int64_t[::1] last_use, int64_t clock, Py_ssize_t max_updates,
                   double eps, Py_ssize_t shrink_every, bint pairs=True,
                   double prefer_cached=1.0, Py_ssize_t any_partner_within=0,
                   double uncached_gain=INFINITY,
                   Py_ssize_t since_shrink=0):
    """Greedy updates over the positions ``active[:n_active]`` until the largest
    projected gradient there is at most ``eps`` (then, if some positions were shrunk,
    over all ``n_listed`` again), ``max_updates`` updates, or a missing row.

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
    missing row after a few hundred updates must not restart the count: measured at
    16,000 samples, where rows are missing every ~400 updates, no variable was ever
    shrunk).

    Returns ``(status, updates, n_active, clock, violation, need, decrease,
    since_shrink)``: ``status``
    is ``CONVERGED``, ``MAX_UPDATES`` or ``NEED_ROW`` (then ``need`` is the position
    whose row is missing; nothing was changed for it), ``violation`` the largest
    projected gradient over the scanned positions at the last scan, ``decrease`` the sum
    of the updates' exact decreases of the objective.
    """
    cdef Py_ssize_t m = g.shape[0], k, kk, j, best, partner, updates = 0
    cdef Py_ssize_t cached, n_shrunk, need = -1
    cdef double cached_score, G, v, vmax, score, best_score, new, delta, old
    cdef double decrease = 0.0, sigma, h_i, b, c, qii, qij, d1, d2
    cdef double change, s_i, G_p, best_b2, best_c, limit
    cdef int n = <int>m, one = 1
    cdef const double* row_i
    cdef const double* row_p
    cdef int return_status = CONVERGED_
    cdef double t0 = 0.0
    cdef double factor, cached_b2, cached_c
    cdef Py_ssize_t cached_partner
    cdef int64_t* act
    cdef int64_t* buf
    cdef uint8_t* mark
    cdef double* on
    cdef bint dense
    cdef const int64_t* slots_seen  # NULL when every row is cached (the scans' shortcut)
    if (a.shape[0] != m or lo.shape[0] != m or hi.shape[0] != m or diag.shape[0] != m
            or inv_diag.shape[0] != m or sign.shape[0] != m
            or slot.shape[0] != m or rows.shape[1] != m or n_listed > active.shape[0]
            or n_active > n_listed or n_active < 0):
        raise ValueError("greedy_updates: shapes do not match")
    vmax = 0.0
    best = -1
    buf = <int64_t*>malloc(max(m, 1) * sizeof(int64_t))
    mark = <uint8_t*>malloc(max(m, 1) * sizeof(uint8_t))
    on = <double*>malloc(max(m, 1) * sizeof(double))
    if buf == NULL or mark == NULL or on == NULL:
        free(buf)
        free(mark)
        free(on)
        raise MemoryError()
    act = &active[0] if active.shape[0] > 0 else NULL
    with nogil:
        for j in range(m):
            mark[j] = 0
        _sort_positions(act, 0, n_active, mark, m)
        _sort_positions(act, n_active, n_listed, mark, m)
        # the mask of the active positions, for the masked scans
        for j in range(m):
            on[j] = 0.0
        for k in range(n_active):
            on[act[k]] = 1.0
        dense = n_active >= _dense_share * m
        # rows are fetched between calls only: whether all are cached holds for this one
        slots_seen = NULL
        for j in range(m):
            if slot[j] < 0:
                slots_seen = &slot[0]
                break
        while True:
            # one scan: the largest violation and the best exact coordinate step
            if _profile:
                t0 = _now()
                _prof_n[0] += n_active
            vmax = 0.0
            best = -1
            best_score = 0.0
            cached = -1
            cached_score = 0.0
            if dense:
                gs_select(m, &g[0], &a[0], &lo[0], &hi[0], &diag[0], &inv_diag[0],
                          slots_seen, on, &vmax, &best, &best_score, &cached,
                          &cached_score)
            for k in range(0 if dense else n_active):
                j = act[k]
                G = g[j]
                old = a[j]
                # the projected gradient: 0 where the bound blocks the descent (most
                # variables at a bound: skipped early)
                v = G
                if old <= lo[j]:
                    v = G if G < 0.0 else 0.0
                elif old >= hi[j]:
                    v = G if G > 0.0 else 0.0
                if v == 0.0:
                    continue
                v = fabs(v)
                if v > vmax:
                    vmax = v
                if diag[j] > 0.0:
                    new = old - G * inv_diag[j]
                    new = lo[j] if new < lo[j] else (hi[j] if new > hi[j] else new)
                    delta = new - old
                    # decrease of the objective along the coordinate (>= 0)
                    score = -delta * (G + 0.5 * diag[j] * delta)
                else:  # linear along the coordinate: to the bound it descends to
                    delta = (hi[j] - old) if G < 0.0 else (lo[j] - old)
                    score = -delta * G
                if score > best_score:
                    best_score = score
                    best = j
                if score > cached_score and slot[j] >= 0:
                    cached_score = score
                    cached = j
            if _profile:
                _prof_t[0] += _now() - t0
            if vmax <= eps or best < 0:
                if n_active < n_listed:  # converged on the shrunk set: check them all
                    for k in range(n_active, n_listed):
                        on[act[k]] = 1.0
                    n_active = n_listed
                    _sort_positions(act, 0, n_active, mark, m)
                    dense = n_active >= _dense_share * m
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
            row_i = &rows[slot[best], 0]
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
                if _profile:
                    t0 = _now()
                    _prof_n[1] += n_active
                if dense:
                    gs_partner(m, &g[0], &a[0], &lo[0], &hi[0], &diag[0], &sign[0],
                               slots_seen, on, row_i, best, sigma, h_i, s_i, qii, TAU,
                               &partner, &best_b2, &best_c, &cached_partner, &cached_b2,
                               &cached_c)
                for k in range(0 if dense else n_active):
                    j = act[k]
                    # room for j along -sigma s_j
                    if -sigma * sign[j] > 0.0:
                        if a[j] >= hi[j]:
                            continue
                    elif a[j] <= lo[j]:
                        continue
                    b = sigma * (sign[j] * g[j] - h_i)  # slope's decrease along u
                    if b <= 0.0:
                        continue
                    c = qii + diag[j] - 2.0 * s_i * sign[j] * row_i[j]
                    if c <= TAU:
                        c = TAU
                    if j == best:
                        continue
                    if b * b * best_c > best_b2 * c:
                        best_b2 = b * b
                        best_c = c
                        partner = j
                    if slot[j] >= 0 and b * b * cached_c > cached_b2 * c:
                        cached_b2 = b * b
                        cached_c = c
                        cached_partner = j
                if partner >= 0 and slot[partner] < 0 and not (
                        best_b2 * cached_c >= factor * cached_b2 * best_c):
                    partner = cached_partner
                if _profile:
                    _prof_t[1] += _now() - t0
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
                _box2(qii, qij, diag[partner], G, G_p,
                      lo[best] - old, hi[best] - old,
                      lo[partner] - a[partner], hi[partner] - a[partner], &d1, &d2)
                change = _quad2(qii, qij, diag[partner], G, G_p, d1, d2)
                if -change > best_score:
                    # land exactly on a bound the step reaches; apply the step taken
                    new = lo[best] if d1 == lo[best] - old else (
                        hi[best] if d1 == hi[best] - old else _clip(old + d1, lo[best],
                                                                    hi[best]))
                    d1 = new - old
                    a[best] = new
                    old = a[partner]
                    new = lo[partner] if d2 == lo[partner] - old else (
                        hi[partner] if d2 == hi[partner] - old else _clip(
                            old + d2, lo[partner], hi[partner]))
                    d2 = new - old
                    a[partner] = new
                    decrease -= _quad2(qii, qij, diag[partner], G, G_p, d1, d2)
                    if _profile:
                        t0 = _now()
                        _prof_n[3] += 1
                        _prof_n[2] += (d1 != 0.0) * m + (d2 != 0.0) * m
                    if d1 != 0.0:
                        daxpy(&n, &d1, <double*>row_i, &one, &g[0], &one)
                    if d2 != 0.0:
                        daxpy(&n, &d2, <double*>&rows[slot[partner], 0], &one, &g[0],
                              &one)
                    if _profile:
                        _prof_t[2] += _now() - t0
                    clock += 1
                    last_use[slot[best]] = clock
                    last_use[slot[partner]] = clock
                    partner = -2  # done
            if partner != -2:
                if qii > 0.0:
                    new = _clip(old - G / qii, lo[best], hi[best])
                else:
                    new = hi[best] if G < 0.0 else lo[best]
                delta = new - old
                decrease -= delta * (G + 0.5 * qii * delta)
                a[best] = new
                if _profile:
                    t0 = _now()
                    _prof_n[4] += 1
                    _prof_n[2] += m
                daxpy(&n, &delta, <double*>row_i, &one, &g[0], &one)
                if _profile:
                    _prof_t[2] += _now() - t0
                clock += 1
                last_use[slot[best]] = clock
            updates += 1
            since_shrink += 1
            if shrink_every > 0 and since_shrink >= shrink_every:
                since_shrink = 0
                if _profile:
                    t0 = _now()
                # LIBSVM's rule: at a bound, pushed outwards beyond the largest
                # violation; a stable partition keeps the kept positions in increasing
                # order (the scans then read every array in that order)
                kk = 0
                n_shrunk = 0
                limit = vmax
                for k in range(n_active):
                    j = act[k]
                    G = g[j]
                    if (a[j] <= lo[j] and G > limit) or (a[j] >= hi[j] and -G > limit):
                        buf[n_shrunk] = j
                        n_shrunk += 1
                        on[j] = 0.0
                    else:
                        act[kk] = j
                        kk += 1
                for k in range(n_shrunk):
                    act[kk + k] = buf[k]
                n_active = kk
                dense = n_active >= _dense_share * m
                if _profile:
                    _prof_t[3] += _now() - t0
    free(buf)
    free(mark)
    free(on)
    return return_status, updates, n_active, clock, vmax, need, decrease, since_shrink
