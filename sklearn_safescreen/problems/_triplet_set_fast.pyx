"""Construction of the triplet sets (:mod:`.triplets`): the exact k nearest neighbours,
the pairs' vectors and the triplets' norms.

**Neighbours** (:func:`nearest_in_tiles`). The order is that of the exact squared distances summed from the differences in
NumPy's pairwise order (``((a - c) ** 2).sum()``, so ties are NumPy's ties), ties broken
by candidate position. Computing every such distance costs three passes over each
difference; instead, tiles of ``ANCHOR_TILE`` anchors by ``CANDIDATE_TILE`` candidates
get approximate distances from one ``sgemm`` (single precision) or ``dgemm`` each
(:math:`\\|a\\|^2 + \\|c\\|^2 - 2 a^\\top c`, on centred and scaled copies of the data), and a
candidate's exact distance is computed only when its approximation, less the bound
``tol`` of its error, does not exceed the k-th smallest exact distance found so far for
that anchor (a max-heap of k (distance, position) entries per anchor). A candidate left
out is then farther than k others, exactly: its exact distance is at least its
approximation less ``tol``, which exceeds the heap's largest entry, which can only
decrease. The tile is scanned while it is in cache, so the search reads each
approximate distance once (a NumPy form writes and reads each of them several times,
in chunks too large for the caches, so memory traffic rather than the ``gemm`` bounds
it).

**Pairs and norms** (:func:`pair_vectors`, :func:`hnorms`): one pass per pair writes
its difference (or its square), read from the two rows in place; gathering the rows
first, as NumPy does, writes and reads every pair three more times. (What is left is
the first touch of the output, ``8 d`` bytes a pair: on large sets its page faults,
which a virtual machine makes dearer still, cost more than the pass itself.)

Every loop runs on OpenMP threads, split by output element (anchors' tiles, pairs,
triplets); each element is computed by one thread from the same values in the same
order, so the results do not depend on the number of threads.
"""

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, sqrt
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport dgemm, sgemm

import numpy as np


cdef extern from "sklearn_safescreen/_utils/_vec.h" nogil:
    int ss_first_within_f(int start, int n, const double* c, const float* g, double lim)
    int ss_first_within_d(int start, int n, const double* c, const double* g, double lim)

ctypedef fused real:
    float
    double


cdef inline int _first_within(int start, int n, const double* c, const real* g,
                              double lim) noexcept nogil:
    if real is float:
        return ss_first_within_f(start, n, c, g, lim)
    else:
        return ss_first_within_d(start, n, c, g, lim)


cdef inline void _gemm_nt(int m, int n, int d, const real* a, const real* b,
                          real* out) noexcept nogil:
    # out (n x m, row-major) = b a^T, for a (m x d) and b (n x d) row-major
    cdef char tr = b'T', no = b'N'
    cdef float one_f = 1.0, zero_f = 0.0
    cdef double one_d = 1.0, zero_d = 0.0
    if real is float:
        sgemm(&tr, &no, &m, &n, &d, &one_f, <float*>a, &d, <float*>b, &d, &zero_f, out, &m)
    else:
        dgemm(&tr, &no, &m, &n, &d, &one_d, <double*>a, &d, <double*>b, &d, &zero_d, out,
              &m)

#: Anchors and candidates per tile: a 256 x 1024 single-precision tile is 1 MiB, in
#: the second-level cache while it is scanned.
ANCHOR_TILE = 256
CANDIDATE_TILE = 1024
cdef int _ANCHOR_TILE = 256
cdef int _CANDIDATE_TILE = 1024


cdef inline double _pairwise_sq_dist(const double* a, const double* c,
                                     Py_ssize_t n) noexcept nogil:
    # sum of (a_i - c_i)^2 in the order of NumPy's pairwise summation (eight
    # accumulators over blocks of at most 128 terms, halves split at multiples of 8)
    cdef double r[8]
    cdef double t, res
    cdef Py_ssize_t i, j, n2
    if n < 8:
        res = -0.0
        for i in range(n):
            t = a[i] - c[i]
            res += t * t
        return res
    if n <= 128:
        for j in range(8):
            t = a[j] - c[j]
            r[j] = t * t
        i = 8
        while i < n - n % 8:
            for j in range(8):
                t = a[i + j] - c[i + j]
                r[j] += t * t
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for j in range(i, n):
            t = a[j] - c[j]
            res += t * t
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sq_dist(a, c, n2) + _pairwise_sq_dist(a + n2, c + n2, n - n2)


cdef inline bint _after(double e1, Py_ssize_t i1, double e2, Py_ssize_t i2) noexcept nogil:
    # (e1, i1) comes after (e2, i2) in the neighbours' order
    return e1 > e2 or (e1 == e2 and i1 > i2)


cdef inline void _sift_down(double* he, Py_ssize_t* hi, Py_ssize_t size,
                            Py_ssize_t pos) noexcept nogil:
    # max-heap on (distance, position): move the entry at pos down to its place
    cdef double e = he[pos]
    cdef Py_ssize_t i = hi[pos], child
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _after(he[child + 1], hi[child + 1], he[child], hi[child]):
            child += 1
        if not _after(he[child], hi[child], e, i):
            break
        he[pos] = he[child]
        hi[pos] = hi[child]
        pos = child
    he[pos] = e
    hi[pos] = i


cdef inline void _sift_up(double* he, Py_ssize_t* hi, Py_ssize_t pos) noexcept nogil:
    cdef double e = he[pos]
    cdef Py_ssize_t i = hi[pos], parent
    while pos > 0:
        parent = (pos - 1) // 2
        if not _after(e, i, he[parent], hi[parent]):
            break
        he[pos] = he[parent]
        hi[pos] = hi[parent]
        pos = parent
    he[pos] = e
    hi[pos] = i


cdef void _anchor_tile(Py_ssize_t a0, int m, const double[:, ::1] A,
                       const double[:, ::1] C, const real[:, ::1] A_approx,
                       const real[:, ::1] C_approx, const double[::1] a_sq,
                       const double[::1] c_sq, const double[::1] tol, double scale_sq,
                       Py_ssize_t k, bint exclude_self, real* G, double* he,
                       Py_ssize_t* hi, Py_ssize_t* size, double* limit,
                       int64_t[:, ::1] out) noexcept nogil:
    cdef int d = <int>A.shape[1], nb, r
    cdef Py_ssize_t n_c = C.shape[0], c0, j, c, a, s
    cdef double e, lim
    cdef double* h
    cdef Py_ssize_t* hx
    cdef const real* g
    for r in range(m):
        size[r] = 0
        limit[r] = INFINITY
    c0 = 0
    while c0 < n_c:
        nb = <int>min(<Py_ssize_t>_CANDIDATE_TILE, n_c - c0)
        # G (m x nb, row-major) = A_approx[a0:a0+m] C_approx[c0:c0+nb]^T
        _gemm_nt(nb, m, d, &C_approx[c0, 0], &A_approx[a0, 0], G)
        for r in range(m):
            a = a0 + r
            g = G + <Py_ssize_t>r * nb
            h = he + r * k
            hx = hi + r * k
            lim = limit[r]
            # candidates whose approximation less tol is at most the heap's largest
            # (in the scaled units)
            j = _first_within(0, nb, &c_sq[c0], g, lim)
            while j < nb:
                c = c0 + j
                if not (exclude_self and c == a):
                    e = _pairwise_sq_dist(&A[a, 0], &C[c, 0], d)
                    s = size[r]
                    if s < k:
                        h[s] = e
                        hx[s] = c
                        _sift_up(h, hx, s)
                        size[r] = s + 1
                        if s + 1 == k:
                            lim = h[0] * scale_sq + tol[a] - a_sq[a]
                    elif not _after(e, c, h[0], hx[0]):
                        h[0] = e
                        hx[0] = c
                        _sift_down(h, hx, k, 0)
                        lim = h[0] * scale_sq + tol[a] - a_sq[a]
                j = _first_within(<int>j + 1, nb, &c_sq[c0], g, lim)
            limit[r] = lim
        c0 += nb
    for r in range(m):
        # heap sort: the largest to the end, k times
        h = he + r * k
        hx = hi + r * k
        s = k
        while s > 1:
            s -= 1
            e = h[0]
            c = hx[0]
            h[0] = h[s]
            hx[0] = hx[s]
            h[s] = e
            hx[s] = c
            _sift_down(h, hx, s, 0)
        for j in range(k):
            out[a0 + r, j] = hx[j]


def nearest_in_tiles(const double[:, ::1] A, const double[:, ::1] C,
                     const real[:, ::1] A_approx, const real[:, ::1] C_approx,
                     const double[::1] a_sq, const double[::1] c_sq,
                     const double[::1] tol, double scale_sq, Py_ssize_t k,
                     bint exclude_self, int n_threads=1):
    """Positions in ``C`` of the ``k`` nearest rows of every row of ``A``.

    ``A``, ``C``: the anchors and candidates (exact distances); ``A_approx``,
    ``C_approx``: their centred copies scaled by ``s`` (``scale_sq = s**2``) in single
    or double precision (the tiles' products are computed in it), whose squared norms
    (computed in double precision) are ``a_sq``, ``c_sq``; ``tol[i]``
    bounds, in the scaled units, the error of anchor ``i``'s approximate distances
    against ``s**2`` times the exact ones. ``exclude_self``: ``C`` is ``A`` and an anchor
    is not its own neighbour. Returns an int64 array of shape ``(len(A), k)``, each row
    in increasing (distance, position) order.
    """
    cdef Py_ssize_t n_a = A.shape[0], n_blocks, b, t
    cdef int nt = max(1, n_threads), m
    if not (C.shape[0] == C_approx.shape[0] == c_sq.shape[0] and
            A.shape[0] == A_approx.shape[0] == a_sq.shape[0] == tol.shape[0] and
            A.shape[1] == C.shape[1] == A_approx.shape[1] == C_approx.shape[1]):
        raise ValueError("nearest_in_tiles: shapes do not match")
    if A.shape[1] < 1:
        raise ValueError("nearest_in_tiles: the points need at least one feature")
    if k < 1 or k > C.shape[0] - (1 if exclude_self else 0):
        raise ValueError(f"nearest_in_tiles: k={k} with {C.shape[0]} candidates")
    if exclude_self and A.shape[0] != C.shape[0]:
        raise ValueError("nearest_in_tiles: exclude_self needs the anchors as candidates")
    out = np.empty((n_a, k), dtype=np.int64)
    if n_a == 0:
        return out
    n_blocks = (n_a + _ANCHOR_TILE - 1) // _ANCHOR_TILE
    nt = <int>min(<Py_ssize_t>nt, n_blocks)
    # each thread's tile, heaps, heap sizes and limits
    cdef real[:, ::1] G = np.empty((nt, _ANCHOR_TILE * _CANDIDATE_TILE),
                                   np.float32 if real is float else np.float64)
    cdef double[:, ::1] he = np.empty((nt, _ANCHOR_TILE * k))
    cdef Py_ssize_t[:, ::1] hi = np.empty((nt, _ANCHOR_TILE * k), np.intp)
    cdef Py_ssize_t[:, ::1] size = np.empty((nt, _ANCHOR_TILE), np.intp)
    cdef double[:, ::1] limit = np.empty((nt, _ANCHOR_TILE))
    cdef int64_t[:, ::1] out_v = out
    with nogil:
        for b in prange(n_blocks, num_threads=nt, schedule="dynamic"):
            t = threadid()
            m = <int>min(<Py_ssize_t>_ANCHOR_TILE, n_a - b * _ANCHOR_TILE)
            _anchor_tile(b * _ANCHOR_TILE, m, A, C, A_approx, C_approx, a_sq, c_sq, tol,
                         scale_sq, k, exclude_self, &G[t, 0], &he[t, 0], &hi[t, 0],
                         &size[t, 0], &limit[t, 0], out_v)
    return out


def pair_vectors(const double[:, ::1] X, const int[:, ::1] pairs, bint squared,
                 int n_threads=1):
    """Row ``p`` is ``X[u] - X[v]`` for ``pairs[p] = (u, v)``, or its elementwise square
    (``squared``)."""
    cdef Py_ssize_t n_pairs = pairs.shape[0], p
    cdef int d = <int>X.shape[1], f, u, v
    cdef double t
    if pairs.shape[1] != 2:
        raise ValueError("pair_vectors: pairs must have two columns")
    if n_pairs and (np.min(pairs) < 0 or np.max(pairs) >= X.shape[0]):
        raise ValueError("pair_vectors: a pair's index is outside X")
    out = np.empty((n_pairs, d))
    cdef double[:, ::1] o = out
    with nogil:
        for p in prange(n_pairs, num_threads=max(1, n_threads), schedule="static"):
            u = pairs[p, 0]
            v = pairs[p, 1]
            for f in range(d):
                t = X[u, f] - X[v, f]
                o[p, f] = t * t if squared else t
    return out


def hnorms(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg,
           bint diagonal, int n_threads=1):
    r""":math:`\|H_t\|_F^2=\|a\|^4-2(a^\top b)^2+\|b\|^4` in O(d) per triplet; for a
    diagonal metric :math:`\|a\circ a-b\circ b\|_2` (``diff`` then holds the squares)."""
    cdef Py_ssize_t m = pos.shape[0], t
    cdef int d = diff.shape[1], c, p, q
    cdef double s, v, aa, bb, ab
    if neg.shape[0] != m:
        raise ValueError("hnorms: pos and neg differ in length")
    if m and (min(np.min(pos), np.min(neg)) < 0
              or max(np.max(pos), np.max(neg)) >= diff.shape[0]):
        raise ValueError("hnorms: a triplet's pair index is outside diff")
    out = np.empty(m)
    cdef double[::1] o = out
    with nogil:
        for t in prange(m, num_threads=max(1, n_threads), schedule="static"):
            p = pos[t]
            q = neg[t]
            if diagonal:
                s = 0.0
                for c in range(d):
                    v = diff[p, c] - diff[q, c]
                    s = s + v * v
                o[t] = sqrt(s)
            else:
                aa = 0.0
                bb = 0.0
                ab = 0.0
                for c in range(d):
                    aa = aa + diff[p, c] * diff[p, c]
                    bb = bb + diff[q, c] * diff[q, c]
                    ab = ab + diff[p, c] * diff[q, c]
                o[t] = sqrt(max(aa * aa - 2.0 * ab * ab + bb * bb, 0.0))
    return out
