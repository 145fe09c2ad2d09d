r"""Compiled kernels of the triplet rules that intersect the ball with the PSD cone
or the orthant (Yoshida et al. 2019, Sec. 4).

* the SDP rule (:func:`sdp_pass`): no PSD point of the ball reaches a triplet's
  threshold, proven by semidefinite least-squares dual ascent, after a cheap
  projected-point test that skips the triplets it cannot screen;
* the diagonal metric's closed form (:func:`diag_pass`): the bounds of a triplet's
  value over the ball intersected with the non-negative orthant.

Both run on the triplets the sphere rule (``_triplet_fast.pyx``) leaves. Every test
that cannot finish (an eigendecomposition budget spent, a bracket not found) leaves
the triplet undecided (safe). The functions never write into their arguments: they
return new arrays.
"""

from libc.math cimport fabs, sqrt, INFINITY

import numpy as np

from ..problems._eigh_fast cimport eigh_rows_c, eigh_workspace


# ------------------------------------------------------------------- SDP rule ---
cdef void _sdls_value(const double* Q, double sqQ, const double* H, double y, double C,
                      bint psd_center, int d, double* A, double* w, double* W,
                      double* work, double* value, double* half_slope) noexcept nogil:
    """:math:`D(y)=-\\|[Q+yH]_+\\|^2+2Cy+\\|Q\\|^2` and :math:`D'(y)/2` (semidefinite
    least squares dual)."""
    cdef int i, k, r, c, kmin
    cdef double sqA = 0.0, hq = 0.0, sq_pos, hp, vHv, wmin
    for i in range(d * d):
        A[i] = Q[i] + y * H[i]
        sqA += A[i] * A[i]
        hq += A[i] * H[i]
    eigh_rows_c(A, d, w, W, work)
    sq_pos = sqA
    hp = hq
    # [A]_+ = A - sum_{w_k<0} w_k v_k v_k'; with a PSD Q only the smallest can be < 0
    kmin = 0
    wmin = w[0]
    for k in range(1, d):
        if w[k] < wmin:
            wmin = w[k]
            kmin = k
    for k in range(d):
        if w[k] >= 0.0 or (psd_center and k != kmin):
            continue
        vHv = 0.0
        for r in range(d):
            for c in range(d):
                vHv += W[k * d + r] * H[r * d + c] * W[k * d + c]
        sq_pos -= w[k] * w[k]
        hp -= w[k] * vHv
    value[0] = -sq_pos + 2.0 * C * y + sqQ
    half_slope[0] = C - hp


cdef inline double _tangent_cap(double p, double Dp, double sp, double q, double Dq,
                                double sq) noexcept nogil:
    """An upper bound of a concave D on [p, q] from its values and half-slopes at both
    ends (``sp >= 0 >= sq``): the two tangent lines meet above every value of D."""
    cdef double y
    if sp - sq <= 0.0:
        return max(Dp, Dq)
    y = (Dq - Dp + 2.0 * (sp * p - sq * q)) / (2.0 * (sp - sq))
    y = min(max(y, p), q)
    return Dp + 2.0 * sp * (y - p)


cdef bint _sdls_screen(const double* Q, double r2, const double* H, double C,
                       bint psd_center, double hn2, int d, double* A, double* w,
                       double* W, double* work, bint early_exit, long long max_eig,
                       long long* n_eig) noexcept nogil:
    """True if some y has :math:`D(y)>r^2`: then no PSD point of the ball has
    :math:`\\langle X,H\\rangle=C` (weak duality). Bracketing then bisection on the
    monotone derivative, with the early exit on success; with ``early_exit``, also on
    failure as soon as the tangent lines at the ends of the bracket (D is concave) cap
    D below the threshold. Any failure returns False (safe). ``n_eig`` counts the
    eigendecompositions; none is started once it reaches ``max_eig >= 0`` (False)."""
    cdef int i, it
    cdef double sqQ = 0.0, thr, D0, g0, s, step, lo, hi, y, D, g
    cdef double Dlo, glo, Dhi, ghi
    cdef bint found = False
    for i in range(d * d):
        sqQ += Q[i] * Q[i]
    thr = r2 * (1.0 + 1e-9) + 1e-12
    if 0 <= max_eig <= n_eig[0]:
        return False
    _sdls_value(Q, sqQ, H, 0.0, C, psd_center, d, A, w, W, work, &D0, &g0)
    n_eig[0] += 1
    if D0 > thr:
        return True
    if g0 == 0.0 or hn2 <= 0.0:
        return False
    s = 1.0 if g0 > 0 else -1.0
    step = fabs(g0) / hn2
    lo = 0.0
    hi = 0.0
    Dlo = Dhi = D0
    glo = ghi = g0
    for it in range(60):  # bracket the maximiser (from the last point before it)
        if 0 <= max_eig <= n_eig[0]:
            return False
        y = s * step
        _sdls_value(Q, sqQ, H, y, C, psd_center, d, A, w, W, work, &D, &g)
        n_eig[0] += 1
        if D > thr:
            return True
        if g * s <= 0.0:
            if s > 0:
                hi, Dhi, ghi = y, D, g
            else:
                lo, Dlo, glo = y, D, g
            found = True
            break
        if s > 0:
            lo, Dlo, glo = y, D, g
        else:
            hi, Dhi, ghi = y, D, g
        step *= 2.0
    if not found:
        return False
    for it in range(60):  # bisection on the sign of D'
        if early_exit and _tangent_cap(lo, Dlo, glo, hi, Dhi, ghi) <= thr:
            return False  # no y of the bracket can reach the threshold
        if 0 <= max_eig <= n_eig[0]:
            return False
        y = 0.5 * (lo + hi)
        _sdls_value(Q, sqQ, H, y, C, psd_center, d, A, w, W, work, &D, &g)
        n_eig[0] += 1
        if D > thr:
            return True
        if g > 0.0:
            lo, Dlo, glo = y, D, g
        else:
            hi, Dhi, ghi = y, D, g
        if hi - lo <= 1e-14 * max(fabs(lo), fabs(hi), 1e-300):
            break
    return False


cdef double _projected_extreme(const double* Q, const double* H, double hq, double hn,
                               double r, double sgn, int d, double* A, double* w,
                               double* W, double* work) noexcept nogil:
    """:math:`\\langle [Q-\\mathrm{sgn}\\,rH/\\|H\\|]_+,H\\rangle` for a PSD centre Q: the
    projection is at most r from Q (it is non-expansive and Q is its own projection),
    so it is a PSD point of the ball, and its value bounds the minimum over that set
    from above (``sgn=1``) or the maximum from below (``sgn=-1``). Q - sgn r H/|H| is
    PSD plus a rank-one negative term, so only its smallest eigenvalue can be < 0."""
    cdef int i, k, r_, c, kmin = 0
    cdef double vHv = 0.0, value = hq - sgn * r * hn
    for i in range(d * d):
        A[i] = Q[i] - sgn * r * H[i] / hn
    eigh_rows_c(A, d, w, W, work)
    for k in range(1, d):
        if w[k] < w[kmin]:
            kmin = k
    if w[kmin] >= 0.0:
        return value
    for r_ in range(d):
        for c in range(d):
            vHv += W[kmin * d + r_] * H[r_ * d + c] * W[kmin * d + c]
    return value - w[kmin] * vHv


def sdp_pass(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg, idx_in,
             Q_in, double r2, const double[::1] x0, double gamma, bint psd_center,
             const double[::1] hnorm, bint fast=True, long long max_eig=-1):
    """The SDP rule for the candidate triplets ``idx``: ``x0`` are
    :math:`\\langle X_0,H_t\\rangle` at a PSD point of the ball. Returns codes 2 (R),
    1 (L), 0 and the number of eigendecompositions spent.

    With ``fast`` (a PSD centre), a candidate is first tested at the PSD point of the
    ball farthest along :math:`\\mp H_t` after projection (one eigendecomposition): if
    that point is not beyond the threshold, no dual value can exceed the radius and the
    dual ascent is skipped; the ascent also stops on failure once its tangent lines cap
    the dual below the radius. Both only skip work that cannot screen: the decisions
    are those of ``fast=False`` (up to round-off at the threshold).

    With ``max_eig >= 0`` at most that many eigendecompositions are spent: the
    candidates left when they run out stay undecided (safe)."""
    cdef const long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef const double[:, ::1] Q = np.ascontiguousarray(Q_in, dtype=np.float64)
    cdef int d = Q.shape[0], r, c
    cdef Py_ssize_t s, t, m = idx.shape[0]
    out = np.zeros(m, dtype=np.int8)
    cdef signed char[::1] o = out
    cdef double[::1] H = np.empty(d * d + 1)
    cdef double[::1] A = np.empty(d * d + 1)
    cdef double[::1] w = np.empty(d + 1)
    cdef double[::1] W = np.empty(d * d + 1)
    cdef double[::1] work = np.empty(eigh_workspace(d) + 1)
    cdef double C, hq, sgn, radius = sqrt(max(r2, 0.0)), extreme
    cdef signed char code
    cdef long long n_eig = 0
    cdef bint prefilter = fast and psd_center
    with nogil:
        for s in range(m):
            if 0 <= max_eig <= n_eig:
                break
            t = idx[s]
            if x0[s] > 1.0:
                C = 1.0
                code = 2
                sgn = 1.0
            elif x0[s] < 1.0 - gamma:
                C = 1.0 - gamma
                code = 1
                sgn = -1.0
            else:
                continue  # the PSD point X0 itself is in the undecided band
            hq = 0.0
            for r in range(d):
                for c in range(d):
                    H[r * d + c] = (diff[pos[t], r] * diff[pos[t], c]
                                    - diff[neg[t], r] * diff[neg[t], c])
                    hq += Q[r, c] * H[r * d + c]
            if prefilter and hnorm[t] > 0.0:
                extreme = _projected_extreme(&Q[0, 0], &H[0], hq, hnorm[t], radius, sgn,
                                             d, &A[0], &w[0], &W[0], &work[0])
                n_eig += 1
                if sgn * (extreme - C) <= 0.0:
                    continue  # a PSD point of the ball reaches the threshold
            if _sdls_screen(&Q[0, 0], r2, &H[0], C, psd_center, hnorm[t] * hnorm[t], d,
                            &A[0], &w[0], &W[0], &work[0], fast, max_eig, &n_eig):
                o[s] = code  # (the hinge has C = 1 on both sides: keep the direction)
    return out, int(n_eig)


# ---------------------------------------------------------- diagonal metric ---
cdef double _phi(const double* q, const double* h, double s, int d) noexcept nogil:
    cdef int k
    cdef double v = 0.0, x
    for k in range(d):
        x = q[k] - s * h[k]
        if x < 0.0:
            x = 0.0
        v += (x - q[k]) * (x - q[k])
    return v


cdef double _orthant_min(const double* q, const double* h, double r2, int d) noexcept nogil:
    r"""A lower bound, tight to round-off, of :math:`\min h^\top x` over
    :math:`\|x-q\|^2\le r^2,\ x\ge0` (Yoshida et al. 2019, Theorems 11-12). With
    :math:`x(s)=[q-sh]_+`, :math:`\phi(s)=\|x(s)-q\|^2` is non-decreasing and
    :math:`h^\top x(s)` non-increasing, so bisection keeping :math:`\phi(s_{hi})\ge r^2`
    returns :math:`h^\top x(s_{hi})\le` the minimum (safe)."""
    cdef int k, it
    cdef bint allpos = True, found = False
    cdef double far = 0.0, hi = 1.0, lo = 0.0, mid, v = 0.0, x
    for k in range(d):
        if h[k] < 0.0:
            allpos = False
        elif h[k] > 0.0:
            far += q[k] * q[k]
        elif q[k] < 0.0:
            far += q[k] * q[k]
    if allpos and far <= r2:
        return 0.0  # Theorem 12 (alpha = 0): the minimum is 0
    if _phi(q, h, 0.0, d) > r2 * (1 + 1e-12) + 1e-300:
        return -INFINITY  # the ball misses the orthant (round-off): no decision
    for it in range(200):
        if _phi(q, h, hi, d) >= r2:
            found = True
            break
        hi *= 2.0
    if not found:
        return -INFINITY
    for it in range(100):
        mid = 0.5 * (lo + hi)
        if _phi(q, h, mid, d) >= r2:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    for k in range(d):
        x = q[k] - hi * h[k]
        if x > 0.0:
            v += h[k] * x
    return v


def diag_pass(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg, idx_in,
              q_in, double r2):
    """Lower and upper bounds of :math:`h_t^\\top x` over the ball intersected with the
    non-negative orthant (the diagonal metric's closed form), for the triplets ``idx``
    (``diff`` holds the squared pair differences of a diagonal set)."""
    cdef const long long[::1] idx = np.ascontiguousarray(idx_in, dtype=np.int64)
    cdef const double[::1] q = np.ascontiguousarray(q_in, dtype=np.float64)
    cdef Py_ssize_t m = idx.shape[0], s, t
    cdef int d = q.shape[0], k
    lower = np.empty(m)
    upper = np.empty(m)
    cdef double[::1] lo = lower
    cdef double[::1] up = upper
    cdef double[::1] h = np.empty(d + 1)
    cdef double[::1] nh = np.empty(d + 1)
    with nogil:
        for s in range(m):
            t = idx[s]
            for k in range(d):
                h[k] = diff[pos[t], k] - diff[neg[t], k]
                nh[k] = -h[k]
            lo[s] = _orthant_min(&q[0], &h[0], r2, d)
            up[s] = -_orthant_min(&q[0], &nh[0], r2, d)
    return lower, upper
