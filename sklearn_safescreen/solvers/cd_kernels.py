"""Compiled inner loops of the box-QP coordinate-descent solver (:mod:`.dual_cd`).

Dual coordinate descent epochs in the linear mode (Hsieh et al. 2008: ``w`` kept up to
date, a random permutation per epoch and LIBLINEAR's shrinking; dense or CSR rows) and
in the kernel mode (a dense signed kernel block and the gradient kept up to date), the
row products they need, and the start points of a solve.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Lets LLVM reorder the sums of row products (SIMD) and fuse multiply-adds; no
#: assumptions about NaN or infinities. The certificate does not depend on the rounding.
_VECTOR_MATH = {"reassoc", "contract"}


@njit(cache=True, nogil=True, fastmath=_VECTOR_MATH)
def _row_dot(dense, data, indices, indptr, is_sparse, i, w):
    acc = 0.0
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
    else:
        for j in range(dense.shape[1]):
            acc += dense[i, j] * w[j]
    return acc


@njit(cache=True, nogil=True)
def signed_row_dots(dense, data, indices, indptr, is_sparse, sign, rows, w):
    """``sign_i x_i' w`` for ``rows``, without gathering the rows into a copy."""
    out = np.empty(rows.size)
    for k in range(rows.size):
        i = rows[k]
        out[k] = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w)
    return out


@njit(cache=True, nogil=True, fastmath=_VECTOR_MATH)
def _row_axpy(dense, data, indices, indptr, is_sparse, i, step, w):
    if is_sparse:
        for k in range(indptr[i], indptr[i + 1]):
            w[indices[k]] += step * data[k]
    else:
        for j in range(dense.shape[1]):
            w[j] += step * dense[i, j]


@njit(cache=True, nogil=True)
def linear_epochs(dense, data, indices, indptr, is_sparse, sign, p, lo, hi, sqnorm,
                   alpha, w, active, max_epochs, eps_pg, seed):
    """Coordinate descent epochs over ``active`` with LIBLINEAR shrinking.

    Returns (epochs run, True if the projected-gradient range fell below ``eps_pg`` on
    the whole active set).
    """
    np.random.seed(seed)
    n = active.shape[0]
    idx = active.copy()
    size = n
    pg_max_old = np.inf
    pg_min_old = -np.inf
    for epoch in range(max_epochs):
        for k in range(size - 1, 0, -1):
            j = np.random.randint(0, k + 1)
            idx[k], idx[j] = idx[j], idx[k]
        pg_max = -np.inf
        pg_min = np.inf
        s = 0
        while s < size:
            i = idx[s]
            G = sign[i] * _row_dot(dense, data, indices, indptr, is_sparse, i, w) - p[i]
            PG = 0.0
            if alpha[i] <= lo[i]:
                if G > pg_max_old:
                    size -= 1
                    idx[s], idx[size] = idx[size], idx[s]
                    continue
                if G < 0.0:
                    PG = G
            elif alpha[i] >= hi[i]:
                if G < pg_min_old:
                    size -= 1
                    idx[s], idx[size] = idx[size], idx[s]
                    continue
                if G > 0.0:
                    PG = G
            else:
                PG = G
            if PG > pg_max:
                pg_max = PG
            if PG < pg_min:
                pg_min = PG
            if abs(PG) > 1e-14:
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
                return epoch + 1, True
            size = n
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return max_epochs, False


@njit(cache=True, nogil=True)
def kernel_epochs(Q, lo, hi, alpha, g, active, max_epochs, eps_pg, seed):
    """Coordinate descent epochs on a dense local ``Q`` keeping ``g = Q alpha - p``."""
    np.random.seed(seed)
    idx = active.copy()
    n = idx.shape[0]
    m = Q.shape[0]
    for epoch in range(max_epochs):
        for k in range(n - 1, 0, -1):
            j = np.random.randint(0, k + 1)
            idx[k], idx[j] = idx[j], idx[k]
        pg_max = -np.inf
        pg_min = np.inf
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
            if abs(PG) > 1e-14:
                old = alpha[i]
                if Q[i, i] > 0.0:
                    new = min(max(old - G / Q[i, i], lo[i]), hi[i])
                else:
                    new = hi[i] if G < 0.0 else lo[i]
                delta = new - old
                if delta != 0.0:
                    alpha[i] = new
                    for j in range(m):
                        g[j] += delta * Q[i, j]
        if pg_max - pg_min <= eps_pg:
            return epoch + 1, True
    return max_epochs, False



@njit(cache=True, nogil=True)
def start_point(alpha0, lo, hi, at_lower, at_upper):
    """``alpha0`` clipped to the box, screened variables at their bound."""
    out = np.empty(alpha0.size)
    for i in range(alpha0.size):
        if at_lower[i]:
            out[i] = lo[i]
        elif at_upper[i]:
            out[i] = hi[i]
        else:
            out[i] = min(max(alpha0[i], lo[i]), hi[i])
    return out


@njit(cache=True, nogil=True)
def seed_point(alpha, lo, hi, scale):
    out = np.empty(alpha.size)
    for i in range(alpha.size):
        a = alpha[i]
        if a > 0.0 and a >= hi[i] * scale:  # at the top of the reference's box
            out[i] = hi[i]
        elif a < 0.0 and a <= lo[i] * scale:  # at its bottom
            out[i] = lo[i]
        else:
            out[i] = min(max(a, lo[i]), hi[i])
    return out

