# The exact minimisation of the greedy kernel solver's two-variable steps
# (_greedy_fast.pyx): a convex two-variable box QP solved in closed form.

from libc.math cimport isfinite


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline double quad2(double h11, double h12, double h22, double g1, double g2,
                         double d1, double d2) noexcept nogil:
    """The change of the objective for the step ``(d1, d2)``."""
    return d1 * (g1 + 0.5 * h11 * d1 + h12 * d2) + d2 * (g2 + 0.5 * h22 * d2)


cdef inline double edge(double h, double g, double lo, double hi) noexcept nogil:
    """Minimiser over ``[lo, hi]`` of ``g d + h d^2 / 2`` (``h >= 0``)."""
    if h > 0.0:
        return clip(-g / h, lo, hi)
    return hi if g < 0.0 else lo


cdef inline void box2(double h11, double h12, double h22, double g1, double g2,
                      double l1, double u1, double l2, double u2,
                      double* d1, double* d2) noexcept nogil:
    """Exact minimiser of the convex two-variable QP ``g'd + d'Hd/2`` over the box
    ``[l1, u1] x [l2, u2]`` (which contains 0): the stationary point if it lies in the
    box, else the best of the four edges' one-variable minimisers (the minimum of a
    convex function over a rectangle is at the stationary point or on the boundary)."""
    cdef double det = h11 * h22 - h12 * h12, x, y, v, best_v = 0.0
    cdef double bx = 0.0, by = 0.0
    if det > 1e-12 * h11 * h22 and det > 0.0:
        x = (h12 * g2 - h22 * g1) / det
        y = (h12 * g1 - h11 * g2) / det
        if l1 <= x <= u1 and l2 <= y <= u2:
            d1[0] = x
            d2[0] = y
            return
    # the edges (0 is feasible: the best value starts at 0)
    if isfinite(l1):
        y = edge(h22, g2 + h12 * l1, l2, u2)
        v = quad2(h11, h12, h22, g1, g2, l1, y)
        if v < best_v:
            best_v, bx, by = v, l1, y
    if isfinite(u1):
        y = edge(h22, g2 + h12 * u1, l2, u2)
        v = quad2(h11, h12, h22, g1, g2, u1, y)
        if v < best_v:
            best_v, bx, by = v, u1, y
    if isfinite(l2):
        x = edge(h11, g1 + h12 * l2, l1, u1)
        v = quad2(h11, h12, h22, g1, g2, x, l2)
        if v < best_v:
            best_v, bx, by = v, x, l2
    if isfinite(u2):
        x = edge(h11, g1 + h12 * u2, l1, u1)
        v = quad2(h11, h12, h22, g1, g2, x, u2)
        if v < best_v:
            best_v, bx, by = v, x, u2
    d1[0] = bx
    d2[0] = by
