# The greedy kernel solver's compiled loop (_greedy_fast.pyx) on its list of active
# positions: the list kept sorted, the two scans through it one position at a time,
# and shrinking, which moves positions out of it.
#
# The scans here are the scalar forms of the masked scans of _greedy_scan.h, which the
# loop takes while the active positions are most of W: both must make the same choices
# (the candidate of largest score, the first position among equal ones), so that the
# answer does not depend on which form ran. Everything here is inline (no module of its
# own at run time).

from libc.math cimport fabs
from libc.stdint cimport int64_t, uint8_t

from ._greedy_team cimport Positions


cdef inline void sort_positions(int64_t* active, Py_ssize_t start, Py_ssize_t stop,
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


cdef inline void select_listed(const Positions* p, const int64_t* act,
                               Py_ssize_t n_active, const int64_t* slot,
                               double* vmax_out, Py_ssize_t* best_out,
                               double* best_score_out, Py_ssize_t* cached_out,
                               double* cached_score_out) noexcept nogil:
    """The first variable over ``act[:n_active]``: the largest projected gradient, and
    the position of the largest decrease of the objective by the exact one-variable
    step, over all and over those whose row is cached (``slot[j] >= 0``); the outputs
    hold the starting values (none found yet) on entry."""
    cdef const double* g = p.g
    cdef const double* a = p.a
    cdef const double* lo = p.lo
    cdef const double* hi = p.hi
    cdef const double* diag = p.diag
    cdef const double* inv_diag = p.inv_diag
    cdef double vmax = vmax_out[0], best_score = best_score_out[0]
    cdef double cached_score = cached_score_out[0]
    cdef Py_ssize_t best = best_out[0], cached = cached_out[0], k, j
    cdef double G, old, v, new, delta, score
    for k in range(n_active):
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
    vmax_out[0] = vmax
    best_out[0] = best
    best_score_out[0] = best_score
    cached_out[0] = cached
    cached_score_out[0] = cached_score


cdef inline void partner_listed(const Positions* p, const int64_t* act,
                                Py_ssize_t n_active, const int64_t* slot,
                                const double* row_i, Py_ssize_t first, double sigma,
                                double h_i, double s_i, double qii, double tau,
                                Py_ssize_t* partner_out, double* b2_out, double* c_out,
                                Py_ssize_t* cached_out, double* cached_b2_out,
                                double* cached_c_out) noexcept nogil:
    """The partner of ``first`` (moving downhill along ``sigma s_i``, slope ``h_i``,
    curvature ``qii``, signed row ``row_i``) over ``act[:n_active]``: the largest
    second-order gain ``b^2 / c``, compared without dividing (``b^2 c' > b'^2 c``),
    over all and over the cached rows; the outputs hold the starting values on
    entry."""
    cdef const double* g = p.g
    cdef const double* a = p.a
    cdef const double* lo = p.lo
    cdef const double* hi = p.hi
    cdef const double* diag = p.diag
    cdef const double* sign = p.sign
    cdef Py_ssize_t partner = partner_out[0], cached = cached_out[0], k, j
    cdef double best_b2 = b2_out[0], best_c = c_out[0]
    cdef double cached_b2 = cached_b2_out[0], cached_c = cached_c_out[0]
    cdef double b, c
    for k in range(n_active):
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
        if c <= tau:
            c = tau
        if j == first:
            continue
        if b * b * best_c > best_b2 * c:
            best_b2 = b * b
            best_c = c
            partner = j
        if slot[j] >= 0 and b * b * cached_c > cached_b2 * c:
            cached_b2 = b * b
            cached_c = c
            cached = j
    partner_out[0] = partner
    b2_out[0] = best_b2
    c_out[0] = best_c
    cached_out[0] = cached
    cached_b2_out[0] = cached_b2
    cached_c_out[0] = cached_c


cdef inline Py_ssize_t shrink(const Positions* p, int64_t* act, Py_ssize_t n_active,
                              double limit, int64_t* buf, double* on) noexcept nogil:
    """LIBSVM's rule: the positions of ``act[:n_active]`` at a bound whose gradient
    pushes them outwards beyond ``limit`` (the largest violation) move behind the
    others, out of the mask ``on``; a stable partition keeps the kept positions in
    increasing order (the scans then read every array in that order). Returns how
    many are kept (``buf``: workspace of ``n_active`` positions)."""
    cdef const double* g = p.g
    cdef const double* a = p.a
    cdef const double* lo = p.lo
    cdef const double* hi = p.hi
    cdef Py_ssize_t kk = 0, n_shrunk = 0, k, j
    cdef double G
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
    return kk
