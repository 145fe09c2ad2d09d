"""Compiled kernels of the LP-SVM rules (:mod:`.lp_svm`).

* the feature rule's fractional knapsacks (:func:`.lp_svm.correlation_bounds`): one pass
  over each column's sorted entries, the maxima read backwards;
* the sample rule's one-variable LPs (:func:`.lp_svm.margin_bounds`): one pass over each
  row's entries for the limits of :math:`\\mu`, the bound read from them in place.

A vectorised NumPy form needs about twenty passes over every stored entry for the
knapsacks and some forty array operations for the margins, each with its temporary
and its call overhead; on small problems, where a restricted LP is itself cheap, those
passes would cost more than the solves that screening shortens, and every screening
event along a path pays them.
The arithmetic of each value is the NumPy form's, operation for operation (the module is
compiled without contraction into fused multiply-adds), so the rounding analysis of the
docstrings in :mod:`.lp_svm` applies unchanged.
"""

from libc.math cimport INFINITY, fabs
from libc.stdint cimport int32_t, int64_t

import numpy as np

ctypedef fused csr_index:
    int32_t
    int64_t


cdef inline double _gamma(double k, double u) noexcept nogil:
    """:math:`\\gamma_k=ku/(1-ku)`, as :func:`..problems.lp_svm.gamma`."""
    return k * u / (1.0 - k * u)


cdef void _knapsack_column(const double[::1] values, const Py_ssize_t[::1] rows,
                           Py_ssize_t s, Py_ssize_t e, const double[::1] weights,
                           double lo_mass, double hi_mass, double total, bint negate,
                           double* out) noexcept nogil:
    """The minimum of :math:`\\sum_k v_ka_k` over :math:`0\\le a\\le` ``weights`` with
    mass between ``lo_mass`` and ``hi_mass`` for one column (entries ``s:e`` of
    ``values``, ascending), filled in ascending order; with ``negate`` the same for the
    negated entries, read from the column's end. ``out`` receives the filled value, the
    mass the fill reached, the mass it aimed at (their distance bounds what the fill's
    rounding costs) and :math:`\\sum_k|w_kv_k|` (the sums' rounding). The running mass
    is summed from the fill's first entry (non-decreasing in floating point, so the fill
    is a prefix plus one fractional entry)."""
    cdef Py_ssize_t count = e - s, k, t, first, n_nonpos = 0
    cdef double sign = -1.0 if negate else 1.0
    cdef double v, w, wv, n_neg = 0.0, v_neg = 0.0, n_pos = 0.0, acc_abs = 0.0
    cdef double n_zero, extra, target, got_value = 0.0, got_mass = 0.0, before, frac
    cdef bint over, under, filling
    for t in range(count):
        k = e - 1 - t if negate else s + t
        v = sign * values[k]
        w = weights[rows[k]]
        wv = w * v
        acc_abs += fabs(wv)
        if v < 0.0:
            n_neg += w
            v_neg += wv
        elif v > 0.0:
            n_pos += w
        if not v > 0.0:
            n_nonpos += 1
    n_zero = total - n_neg - n_pos
    if n_zero < 0.0:
        n_zero = 0.0
    over = n_neg > hi_mass
    under = n_neg < lo_mass
    extra = lo_mass - n_neg - n_zero
    if extra < 0.0:
        extra = 0.0
    filling = over or (under and extra > 0.0)
    if filling:
        first = 0 if over else n_nonpos
        target = hi_mass if over else extra
        before = 0.0
        for t in range(first, count):
            if before >= target:
                break
            k = e - 1 - t if negate else s + t
            w = weights[rows[k]]
            if w > 0.0:
                if before + w <= target:
                    frac = 1.0
                else:
                    frac = (target - before) / w
                    if frac < 0.0:
                        frac = 0.0
                    elif frac > 1.0:
                        frac = 1.0
                v = sign * values[k]
                got_value += frac * (w * v)
                got_mass += frac * w
            before += w
    out[3] = acc_abs
    if over:
        out[0] = got_value
        out[1] = got_mass
        out[2] = hi_mass
    elif under:
        out[0] = v_neg + got_value
        out[1] = n_neg + n_zero + got_mass
        out[2] = lo_mass if extra > 0.0 else out[1]
    else:
        out[0] = v_neg
        out[1] = n_neg
        out[2] = n_neg


def knapsack_bounds(const double[::1] values, const Py_ssize_t[::1] rows,
                    const Py_ssize_t[::1] start, const double[::1] weights,
                    double lo_mass, double hi_mass, double total,
                    const double[::1] col_max, double unit_roundoff):
    """Both knapsacks of every column with their error bounds: ``(low, low_err,
    neg_high, high_err)``, the minimum of :math:`\\sum_kv_ka_k` and the minimum of
    :math:`-\\sum_kv_ka_k` (:func:`_knapsack_column` without and with ``negate``), each
    with the bound :math:`c_j(|m-m^\\ast|+4\\gamma_{k+n}(T+hi))+2\\gamma_k\\sum_k|w_kv_k|`
    of its error (:math:`c_j` the column's largest :math:`|v|`, :math:`k` its stored
    entries plus 4, :math:`n` the weights, :math:`T` their total)."""
    cdef Py_ssize_t d = start.shape[0] - 1, n = weights.shape[0], j, side
    out_arr = np.empty((4, d))
    cdef double[:, ::1] out = out_arr
    cdef double r[4]
    cdef double nnz, u = unit_roundoff
    with nogil:
        for j in range(d):
            nnz = <double>(start[j + 1] - start[j] + 4)
            for side in range(2):
                _knapsack_column(values, rows, start[j], start[j + 1], weights, lo_mass,
                                 hi_mass, total, side == 1, r)
                out[2 * side, j] = r[0]
                out[2 * side + 1, j] = (
                    col_max[j] * (fabs(r[1] - r[2])
                                  + _gamma(nnz + n, u) * 4.0 * (total + hi_mass))
                    + _gamma(nnz, u) * 2.0 * r[3])
    return out_arr[0], out_arr[1], out_arr[2], out_arr[3]


cdef inline void _positive_limits(double z, double inv_m, double inv_p, double* lo_l,
                                  double* lo_u) noexcept nogil:
    """The lower limits of :math:`\\mu` an entry ``z`` sets through the constraints
    with a positive coefficient (``inv_m`` :math:`=1/c_-`, ``inv_p`` :math:`=1/c_+`, 0
    where not positive): :math:`z/c_-` and :math:`-z/c_+` for the lower-bound LP,
    :math:`-z/c_-` and :math:`z/c_+` for the upper-bound LP."""
    cdef double a = z * inv_m, b = z * inv_p
    if a > lo_l[0]:
        lo_l[0] = a
    if -b > lo_l[0]:
        lo_l[0] = -b
    if -a > lo_u[0]:
        lo_u[0] = -a
    if b > lo_u[0]:
        lo_u[0] = b


cdef inline void _negative_limits(double r, double cm, double cp, double* hl,
                                  double* hu) noexcept nogil:
    """The upper limits of :math:`\\mu` a constraint pair with a negative coefficient
    sets (:func:`.lp_svm.margin_bounds`): :math:`\\mu c\\ge r` with :math:`c<0` is
    :math:`\\mu\\le r/c`; the lower-bound LP has :math:`(c_-, r)` and :math:`(c_+,-r)`,
    the upper-bound LP :math:`(c_-,-r)` and :math:`(c_+, r)`."""
    cdef double q
    if cm < 0.0:
        q = r / cm
        if q < hl[0]:
            hl[0] = q
        if -q < hu[0]:
            hu[0] = -q
    if cp < 0.0:
        q = r / cp
        if -q < hl[0]:
            hl[0] = -q
        if q < hu[0]:
            hu[0] = q


cdef inline double _bound(double mu_lo, double mu_hi, double k, double sign,
                          double u) noexcept nogil:
    """``sign=-1``: :math:`\\max_\\mu -\\mu k`; ``sign=+1``: :math:`\\min_\\mu \\mu k`,
    over :math:`[\\mu_{lo},\\mu_{hi}]` rounded inward; :math:`\\mp\\infty` (no bound)
    when it is empty or the best end is infinite."""
    cdef double mu, value
    if mu_lo < 0.0:
        mu_lo = 0.0
    mu_lo = mu_lo * (1.0 + 8.0 * u)
    mu_hi = mu_hi * (1.0 - 8.0 * u)
    mu = mu_lo if k >= 0.0 else mu_hi
    value = sign * mu * k
    if mu_lo <= mu_hi and fabs(value) < INFINITY:  # false for NaN too
        return value
    return sign * INFINITY


def margin_bounds_dense(const double[:, ::1] Z, const Py_ssize_t[::1] cols,
                        const double[::1] inv_m, const double[::1] inv_p,
                        const Py_ssize_t[::1] neg_cols, const double[::1] cm,
                        const double[::1] cp, double k, double unit_roundoff):
    """Per row :math:`i` of ``Z``, the lower and upper bounds of :math:`z_i^\\top w`
    over the cut (:func:`.lp_svm.margin_bounds`): the lower limits of :math:`\\mu` from
    the columns ``cols`` (``inv_m`` :math:`=1/c_-`, ``inv_p`` :math:`=1/c_+` where the
    coefficient is positive, else 0), the upper limits from the columns ``neg_cols``
    (a negative coefficient), then the best end of each interval."""
    cdef Py_ssize_t n = Z.shape[0], i, t, j
    lower_arr = np.empty(n)
    upper_arr = np.empty(n)
    cdef double[::1] lower = lower_arr, upper = upper_arr
    cdef double lo_l, lo_u, hi_l, hi_u, u = unit_roundoff
    with nogil:
        for i in range(n):
            lo_l = 0.0
            lo_u = 0.0
            for t in range(cols.shape[0]):
                j = cols[t]
                _positive_limits(Z[i, j], inv_m[j], inv_p[j], &lo_l, &lo_u)
            hi_l = INFINITY
            hi_u = INFINITY
            for t in range(neg_cols.shape[0]):
                j = neg_cols[t]
                _negative_limits(Z[i, j], cm[j], cp[j], &hi_l, &hi_u)
            lower[i] = _bound(lo_l, hi_l, k, -1.0, u)
            upper[i] = _bound(lo_u, hi_u, k, 1.0, u)
    return lower_arr, upper_arr


def margin_bounds_csr(const double[::1] data, const csr_index[::1] indices,
                      const csr_index[::1] indptr, const double[::1] inv_m,
                      const double[::1] inv_p, const unsigned char[::1] negative,
                      Py_ssize_t n_negative, const double[::1] cm, const double[::1] cp,
                      double k, double unit_roundoff):
    """:func:`margin_bounds_dense` on a CSR ``Z`` (``inv_m``, ``inv_p`` zero off the
    free columns with a positive coefficient; ``negative`` marks the ``n_negative`` free
    columns with a negative one). An unstored entry is 0: it limits nothing, except in
    a column with a negative coefficient, where it sets :math:`\\mu\\le0`."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, p, j, stored_negative
    lower_arr = np.empty(n)
    upper_arr = np.empty(n)
    cdef double[::1] lower = lower_arr, upper = upper_arr
    cdef double z, lo_l, lo_u, hi_l, hi_u, u = unit_roundoff
    with nogil:
        for i in range(n):
            lo_l = 0.0
            lo_u = 0.0
            hi_l = INFINITY
            hi_u = INFINITY
            stored_negative = 0
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                z = data[p]
                _positive_limits(z, inv_m[j], inv_p[j], &lo_l, &lo_u)
                if negative[j]:
                    stored_negative += 1
                    _negative_limits(z, cm[j], cp[j], &hi_l, &hi_u)
            if stored_negative < n_negative:
                if hi_l > 0.0:
                    hi_l = 0.0
                if hi_u > 0.0:
                    hi_u = 0.0
            lower[i] = _bound(lo_l, hi_l, k, -1.0, u)
            upper[i] = _bound(lo_u, hi_u, k, 1.0, u)
    return lower_arr, upper_arr
