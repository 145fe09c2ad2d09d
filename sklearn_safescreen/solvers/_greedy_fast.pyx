"""Compiled loop of the greedy kernel box-QP solver (:mod:`.greedy_cd`).

Greedy coordinate descent on :math:`\\min_\\alpha \\tfrac12\\alpha^\\top Q\\alpha-p^\\top
\\alpha`, :math:`lo\\le\\alpha\\le hi`: each update minimises the objective exactly along
the coordinate whose exact one-variable minimisation decreases it most (the second-order
selection of Fan, Chen and Lin 2005 for a single variable: the box QP has no equality
constraint, so one variable moves at a time), then adds one signed kernel row to the
gradient. Rows come from a row cache the caller fills (least recently used rows are
evicted there); when the selected variable's row is missing, the loop returns its index.
Shrinking as LIBSVM's (Joachims 1999): a variable at a bound whose gradient pushes it
outwards by more than the largest violation leaves the selection scan; its gradient is
still updated (the update is one BLAS axpy over every position), so un-shrinking needs
no gradient reconstruction.
"""

from libc.math cimport fabs
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport daxpy

cdef enum:
    CONVERGED_ = 0
    MAX_UPDATES_ = 1
    NEED_ROW_ = 2

#: ``greedy_updates`` statuses.
CONVERGED = CONVERGED_
MAX_UPDATES = MAX_UPDATES_
NEED_ROW = NEED_ROW_


def greedy_updates(double[::1] a, double[::1] g, const double[::1] lo,
                   const double[::1] hi, const double[::1] diag,
                   const double[::1] inv_diag, int64_t[::1] active,
                   Py_ssize_t n_active, Py_ssize_t n_listed,
                   const double[:, ::1] rows, const int64_t[::1] slot,
                   int64_t[::1] last_use, int64_t clock, Py_ssize_t max_updates,
                   double eps, Py_ssize_t shrink_every):
    """Greedy coordinate updates over the positions ``active[:n_active]`` until the
    largest projected gradient there is at most ``eps`` (then, if some positions were
    shrunk, over all ``n_listed`` again), ``max_updates`` updates, or a missing row.

    ``inv_diag`` is ``1 / diag`` where ``diag > 0``. ``a``, ``g`` (the gradient ``Q a - p`` over every position), ``active`` (reordered:
    shrunk positions are moved behind ``n_active``) and ``last_use`` are updated in
    place. ``rows[slot[j]]`` is the signed kernel row of position ``j`` over all
    positions (``slot[j] < 0``: not cached).

    Returns ``(status, updates, n_active, clock, violation, need, decrease)``: ``status`` is
    ``CONVERGED``, ``MAX_UPDATES`` or ``NEED_ROW`` (then ``need`` is the position whose
    row is missing; nothing was changed for it), ``violation`` the largest projected
    gradient over the scanned positions at the last scan, ``decrease`` the sum of the
    updates' exact decreases of the objective.
    """
    cdef Py_ssize_t m = g.shape[0], k, j, best, updates = 0, since_shrink = 0
    cdef int n = <int>m, one = 1
    cdef double G, v, vmax, score, best_score, step, new, delta, old, decrease = 0.0
    cdef int64_t tmp
    cdef int return_status = CONVERGED_
    if (a.shape[0] != m or lo.shape[0] != m or hi.shape[0] != m or diag.shape[0] != m
            or inv_diag.shape[0] != m
            or slot.shape[0] != m or rows.shape[1] != m or n_listed > active.shape[0]
            or n_active > n_listed):
        raise ValueError("greedy_updates: shapes do not match")
    vmax = 0.0
    best = -1
    with nogil:
        while True:
            # one scan: the largest violation and the best exact coordinate step
            vmax = 0.0
            best = -1
            best_score = 0.0
            for k in range(n_active):
                j = active[k]
                G = g[j]
                old = a[j]
                # the projected gradient: 0 where the bound blocks the descent
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
            if vmax <= eps or best < 0:
                if n_active < n_listed:  # converged on the shrunk set: check them all
                    n_active = n_listed
                    since_shrink = 0
                    continue
                return_status = CONVERGED_
                break
            if updates >= max_updates:
                return_status = MAX_UPDATES_
                break
            if slot[best] < 0:
                return_status = NEED_ROW_
                break
            G = g[best]
            old = a[best]
            if diag[best] > 0.0:
                new = old - G / diag[best]
                new = lo[best] if new < lo[best] else (hi[best] if new > hi[best] else new)
            else:
                new = hi[best] if G < 0.0 else lo[best]
            delta = new - old
            decrease -= delta * (G + 0.5 * diag[best] * delta)
            a[best] = new
            daxpy(&n, &delta, <double*>&rows[slot[best], 0], &one, &g[0], &one)
            clock += 1
            last_use[slot[best]] = clock
            updates += 1
            since_shrink += 1
            if shrink_every > 0 and since_shrink >= shrink_every:
                since_shrink = 0
                # LIBSVM's rule: at a bound, pushed outwards beyond the largest violation
                k = 0
                while k < n_active:
                    j = active[k]
                    G = g[j]
                    if (a[j] <= lo[j] and G > vmax) or (a[j] >= hi[j] and -G > vmax):
                        n_active -= 1
                        tmp = active[k]
                        active[k] = active[n_active]
                        active[n_active] = tmp
                    else:
                        k += 1
    return return_status, updates, n_active, clock, vmax, best, decrease
