r"""Compiled passes that build the reduced triplet problem's data.

A solve works on the active triplets only: these passes turn the per-triplet status
(0 active, 1 in :math:`\hat{\mathcal L}`, 2 in :math:`\hat{\mathcal R}`) into the
working triplets, the compact indices and differences of the pairs they use, and the
constant part :math:`H_{\hat L}=\sum_{\hat L}H_t` (:func:`status_split`,
:func:`compact_work`, :func:`gram`, :func:`add_h`); for a diagonal set, whose pair
"differences" are the squared ones, the sums over the working pairs without copying
them (:func:`rows_dot`, :func:`rows_weighted_sum`, :func:`rows_weighted_sums`); and
the triplet values from pair forms (:func:`gather`, :func:`gather_idx`). Used by
:mod:`.triplet_problem` between solves; the per-evaluation kernels are in
``_triplet_fast.pyx``, whose Laplacian sum :func:`gram` runs.
"""

from libc.string cimport memcpy, memset

from ._triplet_fast cimport block_rows_c, laplacian_sum_c


cdef extern from "sklearn_safescreen/_utils/_vec.h" nogil:
    void ss_axpy(int n, double a, const double* x, double* y)
    void ss_dot4(int n, const double* x0, const double* x1, const double* x2,
                 const double* x3, const double* y, double* out)
    void ss_axpy4(int n, double a0, const double* x0, double a1, const double* x1,
                  double a2, const double* x2, double a3, const double* x3, double* y)

import numpy as np


# ------------------------------------------------------- the working triplets ---
def status_split(const signed char[::1] status, const int[::1] pos, const int[::1] neg,
                 const double[:, ::1] diff, bint gram=False, bint rows=False):
    r"""The reduced problem's data from the per-triplet status (0 active, 1 in
    :math:`\hat{\mathcal L}`, 2 in :math:`\hat{\mathcal R}`) in one pass over the
    triplets: the active triplets ``work``, their compact pair indices and the
    differences of those pairs (with ``rows``, the indices of those pairs instead of a
    copy), the pair weights ``wL`` of :math:`H_{\hat L}=\sum_{\hat L}H_t`,
    :math:`|\hat{\mathcal L}|` and, with ``gram`` (full metric), :math:`H_{\hat L}`
    itself (None otherwise)."""
    cdef Py_ssize_t n = pos.shape[0], n_pairs = diff.shape[0], t, j = 0, nL = 0
    cdef int d = diff.shape[1]
    cdef signed char s
    wL = np.zeros(n_pairs)
    cdef double[::1] wl = wL
    mark_arr = np.zeros(n_pairs, dtype=np.int8)
    cdef signed char[::1] mark = mark_arr
    listed = np.empty(max(n, 1), dtype=np.int32)
    cdef int[::1] wk = listed
    with nogil:
        for t in range(n):
            s = status[t]
            # the active list without a branch (the statuses alternate unpredictably)
            wk[j] = <int>t
            j += s == 0
            if s == 1:
                nL += 1
                wl[pos[t]] += 1.0
                wl[neg[t]] -= 1.0
        for t in range(j):
            mark[pos[wk[t]]] = 1
            mark[neg[wk[t]]] = 1
    work = listed[:j].copy()
    cpos, cneg, cdiff = _compact_rows(pos, neg, diff, work, mark, rows)
    HL = None
    if gram:
        HL = np.zeros((d, d))
        if nL and n_pairs and d:
            _gram(diff, wl, HL)
    return work, cpos, cneg, cdiff, wL, nL, HL


cdef void _gram(const double[:, ::1] diff, const double[::1] w, double[:, ::1] S):
    """:math:`\\sum_pw_pa_pa_p^\\top` into ``S`` (matrix-product form) with workspaces of
    one block of pairs (:c:func:`laplacian_sum_c` takes them a block at a time): one
    product over every pair would need two copies of every pair of non-zero weight as
    temporaries, memory as large as the pairs themselves, faulted in afresh at each sum
    and dominating the cost of a whole-problem H_L."""
    cdef Py_ssize_t npairs = diff.shape[0]
    cdef int d = diff.shape[1]
    cdef Py_ssize_t rows = block_rows_c(npairs, d)
    cdef double[:, ::1] T = np.empty((rows, max(d, 1)))
    cdef double[:, ::1] T2 = np.empty((rows, max(d, 1)))
    if d == 0:
        return
    with nogil:
        if npairs == 0:
            memset(&S[0, 0], 0, d * d * sizeof(double))
        else:
            laplacian_sum_c(&diff[0, 0], npairs, d, NULL, False, &w[0], &T[0, 0],
                            &T2[0, 0], NULL, &S[0, 0])


def gram(const double[:, ::1] diff, const double[::1] w):
    """:math:`\\sum_pw_pa_pa_p^\\top` over the rows of ``diff`` with weights ``w`` (rows of
    zero weight are not read), block by block (:func:`_gram`): the full metric's
    Laplacian sums outside the solver loop."""
    if w.shape[0] != diff.shape[0]:
        raise ValueError("gram: one weight per row")
    cdef int d = diff.shape[1]
    S = np.zeros((d, d))
    if diff.shape[0] and d:
        _gram(diff, w, S)
    return S


def compact_work(const int[::1] pos, const int[::1] neg, const double[:, ::1] diff,
                 const int[::1] work, bint rows=False):
    """Compact pair indices of the triplets ``work`` and the differences of their pairs
    (in pair order; with ``rows``, the indices of those pairs instead of a copy)."""
    cdef Py_ssize_t s
    mark_arr = np.zeros(diff.shape[0], dtype=np.int8)
    cdef signed char[::1] mark = mark_arr
    with nogil:
        for s in range(work.shape[0]):
            mark[pos[work[s]]] = 1
            mark[neg[work[s]]] = 1
    return _compact_rows(pos, neg, diff, work, mark, rows)


cdef tuple _compact_rows(const int[::1] pos, const int[::1] neg, const double[:, ::1] diff,
                         const int[::1] work, const signed char[::1] mark, bint rows):
    cdef Py_ssize_t n_pairs = diff.shape[0], p, s, count = 0
    cdef int d = diff.shape[1]
    remap_arr = np.empty(n_pairs, dtype=np.int64)
    cdef long long[::1] remap = remap_arr
    with nogil:
        for p in range(n_pairs):
            if mark[p]:
                remap[p] = count
                count += 1
    cpos = np.empty(work.shape[0], dtype=np.int32)
    cneg = np.empty(work.shape[0], dtype=np.int32)
    cdef int[::1] cp = cpos
    cdef int[::1] cn = cneg
    cdef int[::1] ri
    cdef double[:, ::1] cd
    # every pair used (a step without screening): the pairs themselves, in place and
    # read-only, instead of a copy in the same order (which would be as large as the
    # pairs and only move memory: its values and order would be the same)
    cdef bint whole = not rows and count == n_pairs
    if rows:
        cdiff = np.empty(count, dtype=np.int32)
        ri = cdiff
    elif whole:
        cdiff = np.asarray(diff).view()
        cdiff.flags.writeable = False
    else:
        cdiff = np.empty((count, d))
        cd = cdiff
    with nogil:
        if rows:
            for p in range(n_pairs):
                if mark[p]:
                    ri[remap[p]] = <int>p
        elif d and not whole:
            for p in range(n_pairs):
                if mark[p]:
                    memcpy(&cd[remap[p], 0], &diff[p, 0], d * sizeof(double))
        for s in range(work.shape[0]):
            cp[s] = <int>remap[pos[work[s]]]
            cn[s] = <int>remap[neg[work[s]]]
    return cpos, cneg, cdiff


def add_h(double[:, ::1] HL, const double[:, ::1] diff, const int[::1] pos,
          const int[::1] neg, idx_in):
    """``HL`` plus the sum over ``idx`` of :math:`aa^\\top - bb^\\top` (a, b the pair
    differences of each triplet), in place; returns it."""
    cdef long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef Py_ssize_t s
    cdef int d = HL.shape[0], r, c, p, q
    cdef double ar, br
    with nogil:
        for s in range(idx.shape[0]):
            p = pos[idx[s]]
            q = neg[idx[s]]
            for r in range(d):
                ar = diff[p, r]
                br = diff[q, r]
                for c in range(d):
                    HL[r, c] += ar * diff[p, c] - br * diff[q, c]
    return np.asarray(HL)


# ------------------------------------------------- a diagonal set's pair sums ---
def rows_dot(const double[:, ::1] P, const int[::1] rows, const double[::1] q):
    """``P[rows] @ q`` without copying the rows: a diagonal set's pair values over the
    working pairs (``P`` holds the squared differences of all pairs). Four rows at a
    time (``ss_dot4``: four streams from memory; a value does not depend on the rows
    it is computed with)."""
    cdef Py_ssize_t j = 0, n = rows.shape[0]
    cdef int d = P.shape[1]
    cdef double last[4]
    out = np.zeros(n)
    cdef double[::1] o = out
    if d:
        with nogil:
            while j + 4 <= n:
                ss_dot4(d, &P[rows[j], 0], &P[rows[j + 1], 0], &P[rows[j + 2], 0],
                        &P[rows[j + 3], 0], &q[0], &o[j])
                j += 4
            while j < n:  # (the same kernel, so that no value depends on its place)
                ss_dot4(d, &P[rows[j], 0], &P[rows[j], 0], &P[rows[j], 0],
                        &P[rows[j], 0], &q[0], last)
                o[j] = last[0]
                j += 1
    return out


cdef void _weighted_rows(const double[:, ::1] P, Py_ssize_t* buf_rows, double* buf_w,
                         int* nbuf, Py_ssize_t row, double w, double* o) noexcept nogil:
    """Queue row ``row`` with weight ``w`` (non-zero); every four queued rows are added
    to ``o`` at once (:c:func:`ss_axpy4`, in the order of four ``ss_axpy``)."""
    cdef int d = P.shape[1]
    buf_rows[nbuf[0]] = row
    buf_w[nbuf[0]] = w
    nbuf[0] += 1
    if nbuf[0] == 4:
        ss_axpy4(d, buf_w[0], &P[buf_rows[0], 0], buf_w[1], &P[buf_rows[1], 0],
                 buf_w[2], &P[buf_rows[2], 0], buf_w[3], &P[buf_rows[3], 0], o)
        nbuf[0] = 0


cdef void _flush_rows(const double[:, ::1] P, Py_ssize_t* buf_rows, double* buf_w,
                      int* nbuf, double* o) noexcept nogil:
    cdef int k, d = P.shape[1]
    for k in range(nbuf[0]):
        ss_axpy(d, buf_w[k], &P[buf_rows[k], 0], o)
    nbuf[0] = 0


def rows_weighted_sum(const double[:, ::1] P, const int[::1] rows, const double[::1] w):
    """``w @ P[rows]`` without copying the rows (rows of zero weight are skipped): the
    diagonal of a Laplacian sum over the working pairs. Four rows at a time, each
    element added to in the order of the rows."""
    cdef Py_ssize_t j, n = rows.shape[0]
    cdef int d = P.shape[1], nbuf = 0
    cdef Py_ssize_t buf_rows[4]
    cdef double buf_w[4]
    out = np.zeros(d)
    cdef double[::1] o = out
    if d:
        with nogil:
            for j in range(n):
                if w[j] != 0.0:
                    _weighted_rows(P, buf_rows, buf_w, &nbuf, rows[j], w[j], &o[0])
            _flush_rows(P, buf_rows, buf_w, &nbuf, &o[0])
    return out


def rows_weighted_sums(const double[:, ::1] P, const int[::1] rows, const double[::1] w,
                       const double[::1] w_all):
    """``(w @ P[rows], w_all @ P)`` in one pass over the rows of ``P`` (``rows``
    ascending; rows of zero weight in both are not read): a diagonal reduced problem's
    Laplacian sum over its working pairs and :math:`H_{\\hat L}` from its pair weights.
    The first sum adds in the order of :func:`rows_weighted_sum`, so it is the same."""
    cdef Py_ssize_t j = 0, p, n = rows.shape[0], n_pairs = P.shape[0]
    cdef int d = P.shape[1], nbuf = 0, nbuf_all = 0
    cdef double a
    cdef Py_ssize_t buf_rows[4]
    cdef double buf_w[4]
    cdef Py_ssize_t buf_rows_all[4]
    cdef double buf_w_all[4]
    out = np.zeros(d)
    out_all = np.zeros(d)
    cdef double[::1] o = out
    cdef double[::1] oa = out_all
    if d:
        with nogil:
            for p in range(n_pairs):
                a = 0.0
                if j < n and rows[j] == p:
                    a = w[j]
                    j += 1
                if a != 0.0:
                    _weighted_rows(P, buf_rows, buf_w, &nbuf, p, a, &o[0])
                if w_all[p] != 0.0:
                    _weighted_rows(P, buf_rows_all, buf_w_all, &nbuf_all, p, w_all[p],
                                   &oa[0])
            _flush_rows(P, buf_rows, buf_w, &nbuf, &o[0])
            _flush_rows(P, buf_rows_all, buf_w_all, &nbuf_all, &oa[0])
    return out, out_all


# ------------------------------------------------------------ triplet values ---
def gather(const double[::1] D, const int[::1] pos, const int[::1] neg):
    """``D[pos] - D[neg]``: the triplet values from the pair forms."""
    cdef Py_ssize_t t, n = pos.shape[0]
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for t in range(n):
            o[t] = D[pos[t]] - D[neg[t]]
    return out


def gather_idx(const double[::1] D, const int[::1] pos, const int[::1] neg, idx_in):
    """``D[pos[idx]] - D[neg[idx]]``."""
    cdef long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef Py_ssize_t s, t, n = idx.shape[0]
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for s in range(n):
            t = idx[s]
            o[s] = D[pos[t]] - D[neg[t]]
    return out
