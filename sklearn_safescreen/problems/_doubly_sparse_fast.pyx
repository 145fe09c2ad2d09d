"""Compiled shrinking of a doubly sparse reduced problem in CSC form.

After a screening event the reduced problem loses rows (samples fixed at zero or at
the end of their box) and columns (features fixed at zero). :func:`shrink_csc` builds
the smaller CSC matrix in one pass over the kept columns, and with it what the rules
and the solver need of it: the row norms over the kept columns, the weighted column
norms over the kept rows, and the linear term of the rows moved to the box.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t

import numpy as np


def shrink_csc(const double[::1] data, const int32_t[::1] indices,
               const int32_t[::1] indptr, const uint8_t[::1] keep_rows,
               const int64_t[::1] kept_cols, const double[::1] row_value,
               const double[::1] weights):
    """The CSC matrix of rows ``keep_rows`` (a mask) and columns ``kept_cols`` (indices,
    increasing), with

    * ``row_sq``: squared norms of the kept rows over the kept columns;
    * ``col_sq_c``: :math:`\\sum_i c_i X_{ij}^2` over the kept rows (``weights`` are
      the old rows' :math:`c_i`);
    * ``offset_add``: :math:`\\sum_i X_{ij}\\,v_i` over the dropped rows, with
      ``row_value`` :math:`v` (the box value of rows moved to the box, 0 otherwise);
    * ``max_nnz``: the largest number of non-zeros in a kept row or column;
    * ``row_nnz``: the number of non-zeros of each kept row.

    Returns ``(data, indices, indptr, row_sq, col_sq_c, offset_add, max_nnz, row_nnz)``.
    """
    cdef Py_ssize_t n_old = keep_rows.shape[0], n_cols = kept_cols.shape[0]
    cdef Py_ssize_t i, k, j, p, q, n_new = 0
    cdef int64_t count
    cdef double x
    row_map_arr = np.empty(n_old, dtype=np.int64)
    cdef int64_t[::1] row_map = row_map_arr
    with nogil:
        for i in range(n_old):
            if keep_rows[i]:
                row_map[i] = n_new
                n_new += 1
            else:
                row_map[i] = -1
    new_indptr_arr = np.zeros(n_cols + 1, dtype=np.int32)
    cdef int32_t[::1] new_indptr = new_indptr_arr
    with nogil:
        count = 0
        for k in range(n_cols):
            j = kept_cols[k]
            for p in range(indptr[j], indptr[j + 1]):
                if keep_rows[indices[p]]:
                    count += 1
            new_indptr[k + 1] = <int32_t>count
    new_data_arr = np.empty(count, dtype=np.float64)
    new_indices_arr = np.empty(count, dtype=np.int32)
    row_sq_arr = np.zeros(n_new, dtype=np.float64)
    row_nnz_arr = np.zeros(n_new, dtype=np.int64)
    col_sq_arr = np.zeros(n_cols, dtype=np.float64)
    offset_arr = np.zeros(n_cols, dtype=np.float64)
    cdef double[::1] new_data = new_data_arr, row_sq = row_sq_arr
    cdef double[::1] col_sq = col_sq_arr, offset = offset_arr
    cdef int32_t[::1] new_indices = new_indices_arr
    cdef int64_t[::1] row_nnz = row_nnz_arr
    cdef int64_t max_nnz = 0
    with nogil:
        q = 0
        for k in range(n_cols):
            j = kept_cols[k]
            for p in range(indptr[j], indptr[j + 1]):
                i = indices[p]
                x = data[p]
                if keep_rows[i]:
                    new_data[q] = x
                    new_indices[q] = <int32_t>row_map[i]
                    row_sq[row_map[i]] += x * x
                    row_nnz[row_map[i]] += 1
                    col_sq[k] += weights[i] * x * x
                    q += 1
                elif row_value[i] != 0.0:
                    offset[k] += x * row_value[i]
            if new_indptr[k + 1] - new_indptr[k] > max_nnz:
                max_nnz = new_indptr[k + 1] - new_indptr[k]
        for i in range(n_new):
            if row_nnz[i] > max_nnz:
                max_nnz = row_nnz[i]
    return (new_data_arr, new_indices_arr, new_indptr_arr, row_sq_arr, col_sq_arr,
            offset_arr, int(max_nnz), row_nnz_arr)
