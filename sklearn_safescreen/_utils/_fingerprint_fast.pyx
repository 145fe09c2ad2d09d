"""Compiled part of :mod:`.fingerprint`: the multilinear hashes of a matrix's bits."""

from libc.stdint cimport uint32_t, uint64_t


def multilinear_hashes(const uint32_t[:, ::1] V, const uint64_t[::1] a1,
                       const uint64_t[::1] b1, const uint64_t[::1] a2,
                       const uint64_t[::1] b2):
    """``(a1' V b1, a2' V b2) mod 2^64`` in one pass (unsigned arithmetic wraps)."""
    cdef Py_ssize_t i, j, n = V.shape[0], m = V.shape[1]
    cdef uint64_t h1 = 0, h2 = 0, r1, r2, v
    with nogil:
        for i in range(n):
            r1 = 0
            r2 = 0
            for j in range(m):
                v = V[i, j]
                r1 += v * b1[j]
                r2 += v * b2[j]
            h1 += a1[i] * r1
            h2 += a2[i] * r2
    return h1, h2
