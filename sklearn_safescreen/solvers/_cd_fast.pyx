"""Compiled inner loops of the box-QP coordinate-descent solver (:mod:`.dual_cd`).

Dual coordinate descent epochs in the linear mode (Hsieh et al. 2008: ``w`` kept up to
date, a random permutation per epoch and LIBLINEAR's shrinking; dense rows through BLAS,
CSR rows by their non-zeros) and in the kernel mode (a dense signed kernel block and the
gradient kept up to date), the row products they need, and the start points of a solve.
Every loop runs without the GIL, so one-vs-rest tasks and cross-validation folds can
run on threads.

The permutations come from a xorshift64* generator seeded by the caller: the optimum
does not depend on them (the solver stops on the duality gap), only the path to it.
"""

from libc.math cimport fabs, INFINITY
from libc.stdint cimport int64_t, uint64_t
from scipy.linalg.cython_blas cimport daxpy, ddot

import numpy as np


cdef inline uint64_t _seed_state(uint64_t seed) noexcept nogil:
    """A non-zero state from any seed (splitmix64's finaliser)."""
    cdef uint64_t z = seed + <uint64_t>0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    z = z ^ (z >> 31)
    return z if z != 0 else 1


cdef inline Py_ssize_t _below(uint64_t* state, Py_ssize_t bound) noexcept nogil:
    """A pseudo-random integer in [0, bound) (xorshift64*)."""
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return <Py_ssize_t>((x * <uint64_t>2685821657736338717) % <uint64_t>bound)


cdef inline void _shuffle(int64_t[::1] idx, Py_ssize_t size, uint64_t* state) noexcept nogil:
    cdef Py_ssize_t k, j
    cdef int64_t tmp
    for k in range(size - 1, 0, -1):
        j = _below(state, k + 1)
        tmp = idx[k]
        idx[k] = idx[j]
        idx[j] = tmp


cdef inline double _row_dot(const double[:, ::1] dense, const double[::1] data,
                            const int[::1] indices, const int[::1] indptr, bint is_sparse,
                            Py_ssize_t i, const double[::1] w) noexcept nogil:
    cdef int d, one = 1
    cdef Py_ssize_t k
    cdef double acc = 0.0
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
        return acc
    d = dense.shape[1]
    return ddot(&d, <double*>&dense[i, 0], &one, <double*>&w[0], &one)


cdef inline void _row_axpy(const double[:, ::1] dense, const double[::1] data,
                           const int[::1] indices, const int[::1] indptr, bint is_sparse,
                           Py_ssize_t i, double step, double[::1] w) noexcept nogil:
    cdef int d, one = 1
    cdef Py_ssize_t k
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            w[indices[k]] += step * data[k]
        return
    d = dense.shape[1]
    daxpy(&d, &step, <double*>&dense[i, 0], &one, &w[0], &one)


def signed_row_dots(const double[:, ::1] dense, const double[::1] data,
                    const int[::1] indices, const int[::1] indptr, bint is_sparse,
                    const double[::1] sign, const int64_t[::1] rows,
                    const double[::1] w):
    """``sign_i x_i' w`` for ``rows``, without gathering the rows into a copy."""
    cdef Py_ssize_t k, i, m = rows.shape[0]
    out = np.empty(m)
    cdef double[::1] o = out
    with nogil:
        for k in range(m):
            i = rows[k]
            o[k] = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w)
    return out


def linear_epochs(const double[:, ::1] dense, const double[::1] data,
                  const int[::1] indices, const int[::1] indptr, bint is_sparse,
                  const double[::1] sign, const double[::1] p, const double[::1] lo,
                  const double[::1] hi, const double[::1] sqnorm, double[::1] alpha,
                  double[::1] w, const int64_t[::1] active, Py_ssize_t max_epochs,
                  double eps_pg, uint64_t seed):
    """Coordinate descent epochs over ``active`` with LIBLINEAR's shrinking, updating
    ``alpha`` and ``w`` in place.

    Returns ``(epochs run, converged)``: converged when the projected-gradient range
    fell below ``eps_pg`` on the whole active set.
    """
    cdef Py_ssize_t n = active.shape[0], size = n, s, i, epoch
    cdef int64_t tmp
    cdef int64_t[::1] idx = np.array(active, dtype=np.int64)
    cdef double pg_max_old = INFINITY, pg_min_old = -INFINITY, pg_max, pg_min
    cdef double G, PG, old, new
    cdef uint64_t state = _seed_state(seed)
    cdef Py_ssize_t done = max_epochs
    cdef bint converged = False
    with nogil:
        for epoch in range(max_epochs):
            _shuffle(idx, size, &state)
            pg_max = -INFINITY
            pg_min = INFINITY
            s = 0
            while s < size:
                i = idx[s]
                G = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w) - p[i]
                PG = 0.0
                if alpha[i] <= lo[i]:
                    if G > pg_max_old:  # shrink: it will stay at its bound
                        size -= 1
                        tmp = idx[s]
                        idx[s] = idx[size]
                        idx[size] = tmp
                        continue
                    if G < 0.0:
                        PG = G
                elif alpha[i] >= hi[i]:
                    if G < pg_min_old:
                        size -= 1
                        tmp = idx[s]
                        idx[s] = idx[size]
                        idx[size] = tmp
                        continue
                    if G > 0.0:
                        PG = G
                else:
                    PG = G
                if PG > pg_max:
                    pg_max = PG
                if PG < pg_min:
                    pg_min = PG
                if fabs(PG) > 1e-14:
                    old = alpha[i]
                    if sqnorm[i] > 0.0:
                        new = min(max(old - G / sqnorm[i], lo[i]), hi[i])
                    else:  # z_i = 0: the objective is linear in alpha_i
                        new = hi[i] if G < 0.0 else lo[i]
                    if new != old:
                        alpha[i] = new
                        _row_axpy(dense, data, indices, indptr, is_sparse, i,
                                  (new - old) * sign[i], w)
                s += 1
            if pg_max - pg_min <= eps_pg:
                if size == n:
                    done, converged = epoch + 1, True
                    break
                size = n  # converged on the shrunk set: check everything again
                pg_max_old = INFINITY
                pg_min_old = -INFINITY
                continue
            pg_max_old = pg_max if pg_max > 0.0 else INFINITY
            pg_min_old = pg_min if pg_min < 0.0 else -INFINITY
    return done, converged


def kernel_epochs(const double[:, ::1] Q, const double[::1] lo, const double[::1] hi,
                  double[::1] alpha, double[::1] g, const int64_t[::1] active,
                  Py_ssize_t max_epochs, double eps_pg, uint64_t seed):
    """Coordinate descent epochs on a dense local ``Q`` over ``active``, keeping the
    gradient ``g = Q alpha - p`` up to date (both in place).

    Returns ``(epochs run, converged)`` as :func:`linear_epochs`.
    """
    cdef Py_ssize_t n = active.shape[0], s, i, epoch
    cdef int m = Q.shape[0], one = 1
    cdef int64_t[::1] idx = np.array(active, dtype=np.int64)
    cdef double pg_max, pg_min, G, PG, old, new, delta
    cdef uint64_t state = _seed_state(seed)
    cdef Py_ssize_t done = max_epochs
    cdef bint converged = False
    if Q.shape[1] != m or g.shape[0] != m:
        raise ValueError("kernel_epochs: Q must be square and match g")
    with nogil:
        for epoch in range(max_epochs):
            _shuffle(idx, n, &state)
            pg_max = -INFINITY
            pg_min = INFINITY
            for s in range(n):
                i = idx[s]
                G = g[i]
                if alpha[i] <= lo[i]:
                    PG = min(G, 0.0)
                elif alpha[i] >= hi[i]:
                    PG = max(G, 0.0)
                else:
                    PG = G
                if PG > pg_max:
                    pg_max = PG
                if PG < pg_min:
                    pg_min = PG
                if fabs(PG) > 1e-14:
                    old = alpha[i]
                    if Q[i, i] > 0.0:
                        new = min(max(old - G / Q[i, i], lo[i]), hi[i])
                    else:
                        new = hi[i] if G < 0.0 else lo[i]
                    delta = new - old
                    if delta != 0.0:
                        alpha[i] = new
                        daxpy(&m, &delta, <double*>&Q[i, 0], &one, &g[0], &one)
            if pg_max - pg_min <= eps_pg:
                done, converged = epoch + 1, True
                break
    return done, converged


def start_point(const double[::1] alpha0, const double[::1] lo, const double[::1] hi,
                at_lower, at_upper):
    """``alpha0`` clipped to the box, screened variables at their bound (a new array)."""
    cdef Py_ssize_t i, n = alpha0.shape[0]
    cdef const unsigned char[::1] low = np.ascontiguousarray(at_lower).view(np.uint8)
    cdef const unsigned char[::1] up = np.ascontiguousarray(at_upper).view(np.uint8)
    cdef double a
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        # selects instead of branches: the compiler vectorises the loop (its branches
        # follow no pattern along the samples, so they would be mispredicted often)
        for i in range(n):
            a = alpha0[i]
            a = a if a > lo[i] else lo[i]
            a = a if a < hi[i] else hi[i]
            a = hi[i] if up[i] else a
            o[i] = lo[i] if low[i] else a
    return out


def seed_point(const double[::1] alpha, const double[::1] lo, const double[::1] hi,
               double scale):
    """Alpha seeding from a reference whose box is ``scale`` times the new one: samples
    at an end of the reference's box go to that end of the new box, the others keep
    their value clipped to it."""
    cdef Py_ssize_t i, n = alpha.shape[0]
    cdef double a, c
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for i in range(n):  # selects, not branches (see start_point)
            a = alpha[i]
            c = a if a > lo[i] else lo[i]
            c = c if c < hi[i] else hi[i]
            c = hi[i] if (a > 0.0) & (a >= hi[i] * scale) else c  # top of the old box
            o[i] = lo[i] if (a < 0.0) & (a <= lo[i] * scale) else c  # its bottom
    return out