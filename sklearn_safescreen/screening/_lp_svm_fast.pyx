"""Compiled kernel of the LP-SVM feature rule's fractional knapsacks
(:func:`.lp_svm.correlation_bounds`): one pass over each column's sorted entries, the
maxima read backwards (a vectorised form needs about twenty passes over every stored
entry and a reversed copy; at a few hundred samples that is most of a screening
event's time)."""

from libc.math cimport fabs

import numpy as np


def knapsack_min(const double[::1] values, const Py_ssize_t[::1] rows,
                 const Py_ssize_t[::1] start, const double[::1] weights,
                 double lo_mass, double hi_mass, double total, bint negate):
    """Per column :math:`j` (entries ``start[j]:start[j+1]`` of ``values``, ascending),
    the minimum of :math:`\\sum_k v_ka_k` over :math:`0\\le a\\le` ``weights`` with
    mass between ``lo_mass`` and ``hi_mass``, filled in ascending order; with
    ``negate`` the same for the negated entries (read from the column's end: the
    maximum is minus the minimum of :math:`-v`).

    Returns ``(value, mass, aim, abs_sum)``: the filled value, the mass the fill
    reached, the mass it aimed at (their distance bounds what the fill's rounding
    costs) and :math:`\\sum_k|w_kv_k|` (the sums' rounding), per column. The fill
    arithmetic is :func:`.lp_svm._knapsack_min`'s docstring's; the running mass is
    summed from the fill's first entry (non-decreasing in floating point, so the fill
    is a prefix plus one fractional entry)."""
    cdef Py_ssize_t d = start.shape[0] - 1
    value_arr = np.empty(d)
    mass_arr = np.empty(d)
    aim_arr = np.empty(d)
    abs_arr = np.empty(d)
    cdef double[::1] value = value_arr, mass = mass_arr, aim = aim_arr
    cdef double[::1] abs_sum = abs_arr
    cdef Py_ssize_t j, k, t, s, e, first, count, n_nonpos
    cdef double sign = -1.0 if negate else 1.0
    cdef double v, w, wv, n_neg, v_neg, n_pos, n_zero, acc_abs, extra, target
    cdef double got_value, got_mass, before, frac
    cdef bint over, under, filling
    with nogil:
        for j in range(d):
            s = start[j]
            e = start[j + 1]
            count = e - s
            n_neg = 0.0
            v_neg = 0.0
            n_pos = 0.0
            acc_abs = 0.0
            n_nonpos = 0
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
            got_value = 0.0
            got_mass = 0.0
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
            abs_sum[j] = acc_abs
            if over:
                value[j] = got_value
                mass[j] = got_mass
                aim[j] = hi_mass
            elif under:
                value[j] = v_neg + got_value
                mass[j] = n_neg + n_zero + got_mass
                aim[j] = lo_mass if extra > 0.0 else mass[j]
            else:
                value[j] = v_neg
                mass[j] = n_neg
                aim[j] = n_neg
    return value_arr, mass_arr, aim_arr, abs_arr
