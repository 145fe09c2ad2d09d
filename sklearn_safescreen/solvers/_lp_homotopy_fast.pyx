"""Compiled core of the LP-SVM homotopy (:mod:`.lp_homotopy`).

The same parametric simplex as :class:`.lp_homotopy.LPHomotopy`, pivot for pivot (the
same reduced costs, crossings, ratio tests and Bland tie-breaks), without the copies the
NumPy version makes: the products with the margin rows :math:`Z_{E,:}` and the active
columns :math:`Z_{:,A}` read ``Z`` in place (:mod:`._lp_zmatrix`). Each step runs
without the GIL.

This module holds the path's side of the simplex: the basis's index sets and primal
values, the pricing (:meth:`HomotopyCore.next_event`: the next breakpoint and its
entering variable), the ratio test and the pivot's bookkeeping. The basis's
factorisation is one of two, each in its own module and cimported so that its solves
and updates are C calls: the dense inverse of the margin matrix updated by rank-one BLAS
updates (:mod:`._lp_dense_inverse`), or a sparse LU with an eta file
(:mod:`._lp_sparse_factor`).
"""

from libc.math cimport fabs, sqrt, INFINITY

from ._lp_dense_inverse cimport DenseInverse
from ._lp_sparse_factor cimport SparseFactor
from ._lp_zmatrix cimport ZMatrix

import numpy as np

cdef int FEATURE = 0
cdef int BELOW = 1
cdef int ABOVE = 2
cdef int SAMPLE = 3
cdef signed char L_STATUS = 0
cdef signed char R_STATUS = 1
cdef signed char E_STATUS = 2
# the unit roundoff of binary64
cdef double UNIT_ROUNDOFF = 2.0 ** -53


cdef class HomotopyCore:
    """State and steps of the homotopy on ``Z`` (dense or sparse; ``Zc``: the same
    matrix in the caller's column format, CSC when sparse), with the sparse factor if
    ``lu``, else the dense inverse."""

    cdef public Py_ssize_t n, d, k, kmax
    cdef public double lam
    cdef ZMatrix Z
    cdef const double[::1] s
    cdef public object A_arr, sgn_arr, E_arr, t_arr, m_arr, cL_arr, status_arr
    cdef Py_ssize_t[::1] A, E, posA
    cdef double[::1] sgn, t, m, cL
    cdef signed char[::1] status
    cdef double[::1] u, v, g, hh, alpha, dm, cvec, tmpk
    # the pricing's candidate ties: their crossings and global indices
    cdef double[::1] cand_c
    cdef Py_ssize_t[::1] cand_g
    cdef double[::1, :] rhs2, uv
    cdef double slope_rtol, tie_rtol, pivot_rtol
    cdef Py_ssize_t _left
    cdef bint lines_fresh
    # the basis's factor: the dense inverse, or (``factor="lu"``) the sparse factor with
    # its buffers over the samples (the entering column's FTRAN ``xs``; the dual lines
    # over every sample, ``c1`` and ``c0``, the BTRANs of the two cost vectors, solved
    # at a fresh factor and updated by each pivot; ``rho``, the pivot's row of the
    # basis inverse)
    cdef public bint lu_mode
    cdef DenseInverse inv
    cdef readonly SparseFactor lu
    cdef double[::1] xs, c1, c0, rho
    # the safe feature rule of the pricing (:meth:`set_screening`): the columns' largest
    # entry, 2-norm and weighted 1-norm; ``order`` holds the watched features first
    # (``n_watch`` of them, priced) and the screened ones after; the reference dual
    # ``a_ref`` at ``ref_lam`` with the samples touched since (in the margin set then
    # or since), the interval's lower end ``ref_lo``, the budgets of the dual's
    # distance to the reference (1- and 2-norm) and the largest 2-norm of a screened
    # column
    cdef public bint screen
    cdef bint ref_ok
    cdef double screen_rtol, screen_span, screen_budget
    cdef double ref_lam, ref_lo, d1_max, d2_max, two_max
    cdef const double[::1] c_inf, c_two, c_abs
    cdef Py_ssize_t[::1] order, touched
    cdef signed char[::1] is_touched
    cdef double[::1] a_ref
    cdef Py_ssize_t n_watch, n_touched
    #: pricings made, those that skipped the screened features, the features they
    #: skipped in all, and the reference duals taken
    cdef public long long n_pricings, n_screened, n_skipped, n_rescreen

    def __init__(self, Z, Zc, double[::1] s, double slope_rtol, double tie_rtol,
                 double pivot_rtol, bint lu=False):
        self.Z = ZMatrix(Z, Zc)
        self.n, self.d = self.Z.n, self.Z.d
        self.lu_mode = lu
        self.s = s
        self.slope_rtol, self.tie_rtol, self.pivot_rtol = slope_rtol, tie_rtol, pivot_rtol
        n, d = self.n, self.d
        self.kmax = min(n, d) + 1
        km = self.kmax
        self.A_arr, self.E_arr = np.zeros(km, dtype=np.intp), np.zeros(km, dtype=np.intp)
        self.sgn_arr, self.t_arr = np.zeros(km), np.zeros(km)
        self.m_arr = np.zeros(n)
        self.cL_arr = np.zeros(d)
        self.status_arr = np.zeros(n, dtype=np.int8)
        self.A, self.E, self.sgn, self.t = self.A_arr, self.E_arr, self.sgn_arr, self.t_arr
        self.m, self.cL, self.status = self.m_arr, self.cL_arr, self.status_arr
        self.posA = np.full(d, -1, dtype=np.intp)
        uv = np.zeros((km, 2), order="F")
        self.uv, self.rhs2 = uv, np.zeros((km, 2), order="F")
        self.u, self.v, self.alpha = uv[:, 0], uv[:, 1], np.zeros(km)
        self.cvec, self.tmpk = np.zeros(km), np.zeros(km)
        self.g, self.hh = np.zeros(d), np.zeros(d)
        self.cand_c = np.zeros(2 * d + 2 * km)
        self.cand_g = np.zeros(2 * d + 2 * km, dtype=np.intp)
        self.dm = np.zeros(n)
        self.k = 0
        self.lam = INFINITY
        # the dense inverse only without the sparse factor (it would take k_max^2
        # doubles); the sparse factor refuses a dense Z
        if lu:
            self.lu = SparseFactor(self.Z, km)
            self.xs, self.c1, self.c0 = np.zeros(n), np.zeros(n), np.zeros(n)
            self.rho = np.zeros(n)
        else:
            self.inv = DenseInverse(km)
        self.screen = False
        self.ref_ok = False
        self.n_pricings = self.n_screened = self.n_skipped = self.n_rescreen = 0
        self.refresh_below()

    def set_screening(self, c_inf, c_two, c_abs, double screen_rtol, double span,
                      double budget):
        """Turn on the safe feature rule of the pricing (``doc/theory/lp_svm.rst``):
        ``c_inf``, ``c_two`` and ``c_abs`` are each column's largest absolute entry,
        2-norm and :math:`\\sum_i|z_{ij}|s_i`; ``screen_rtol`` the relative margin of a
        decision, ``span`` the relative length of the interval of lambda a reference
        covers and ``budget`` how far (a multiple of the current dual line's move over
        that interval) the dual may move from the reference before it is taken
        again."""
        if not (span > 0.0 and span < 1.0) or not budget >= 1.0:
            raise ValueError("the screening interval needs 0 < span < 1 and budget >= 1")
        self.c_inf = np.ascontiguousarray(c_inf, dtype=np.float64)
        self.c_two = np.ascontiguousarray(c_two, dtype=np.float64)
        self.c_abs = np.ascontiguousarray(c_abs, dtype=np.float64)
        if (self.c_inf.shape[0] != self.d or self.c_two.shape[0] != self.d
                or self.c_abs.shape[0] != self.d):
            raise ValueError("the column norms must have one entry per feature")
        self.screen_rtol, self.screen_span, self.screen_budget = screen_rtol, span, budget
        self.order = np.arange(self.d, dtype=np.intp)
        self.n_watch = self.d
        self.touched = np.zeros(self.n, dtype=np.intp)
        self.is_touched = np.zeros(self.n, dtype=np.int8)
        self.a_ref = np.zeros(self.n)
        self.n_touched = 0
        self.ref_ok = False
        self.screen = True

    @property
    def n_watched(self):
        """The features the current reference leaves to the pricing."""
        return int(self.n_watch) if self.screen and self.ref_ok else int(self.d)

    # the factor's state, for the caller and the tests
    @property
    def G_arr(self):
        """The dense inverse's buffer (None with the sparse factor)."""
        return None if self.lu_mode else self.inv.G_arr

    @property
    def n_eta(self):
        return self.lu.n_eta if self.lu_mode else 0

    @property
    def k0(self):
        return self.lu.k0 if self.lu_mode else 0

    @property
    def eta_nnz(self):
        return self.lu.eta_nnz if self.lu_mode else 0

    @property
    def lu_nnz(self):
        return self.lu.lu_nnz if self.lu_mode else 0

    @property
    def eta_fill(self):
        return self.lu.eta_fill if self.lu_mode else 1.0

    @eta_fill.setter
    def eta_fill(self, double value):
        if not self.lu_mode:
            raise AttributeError("eta_fill is the sparse factor's (factor='lu')")
        self.lu.eta_fill = value

    def eta_full(self):
        """Whether the sparse factor's eta file calls for a fresh factor
        (:meth:`.SparseFactor.full`)."""
        return self.lu_mode and self.lu.full()

    # ------------------------------------------------------------ accessors ---
    def support(self):
        k = self.k
        return self.A_arr[:k].copy(), self.sgn_arr[:k] * self.t_arr[:k]

    def margin_set(self):
        return self.E_arr[:self.k].copy()

    def margin_dual(self, double lam):
        self._dual_lines()
        k = self.k
        u = np.asarray(self.u)[:k]
        v = np.asarray(self.v)[:k]
        return lam * self.n * u - v

    def enter_sample(self, Py_ssize_t pos):
        return int(self.E[pos])

    def refresh_below(self):
        """:math:`Z_L^\\top s_L` from scratch; returns its largest change."""
        cdef Py_ssize_t i, j, p
        cdef double[::1] old = np.asarray(self.cL).copy()
        cdef double change = 0.0
        self.lines_fresh = False
        with nogil:
            for j in range(self.d):
                self.cL[j] = 0.0
            for i in range(self.n):
                if self.status[i] == L_STATUS:
                    self.Z.add_row(i, self.s[i], &self.cL[0])
            for j in range(self.d):
                change = max(change, fabs(old[j] - self.cL[j]))
        return change

    # ---------------------------------------------------------- dual lines ---
    cdef void _lu_dual_lines(self) noexcept nogil:
        """u, v from the duals of the two cost vectors (1 on the features' slots; s_i
        on the slots of the hinge slacks of the samples below the margin), solved
        from scratch (then kept, over every sample, for :meth:`_lu_update_lines`)."""
        cdef Py_ssize_t i, l
        for i in range(self.n):
            self.c1[i] = 0.0
            self.c0[i] = 0.0
        for l in range(self.k):
            self.c1[self.lu.slotA[l]] = 1.0
        for i in range(self.n):
            if self.status[i] == L_STATUS:
                self.c0[self.lu.slotS[i]] = self.s[i]
        self.lu.btran2(&self.c1[0], &self.c0[0])
        self._lu_read_lines()

    cdef void _lu_read_lines(self) noexcept nogil:
        """u, v: the dual lines on the margin set. Off it they are the costs of the
        basic slack (surplus) of each sample, exactly: 0 for both lines, but s_i on
        the second for a sample below the margin (what an update leaves there differs
        only by round-off, which is dropped)."""
        cdef Py_ssize_t i, l
        cdef double* y1 = &self.c1[0]
        cdef double* y0 = &self.c0[0]
        cdef const double* sw = &self.s[0]
        cdef const signed char* st = &self.status[0]
        for i in range(self.n):
            if st[i] != E_STATUS:
                y1[i] = 0.0
                y0[i] = sw[i] if st[i] == L_STATUS else 0.0
        for l in range(self.k):
            self.u[l] = self.c1[self.E[l]]
            self.v[l] = -self.c0[self.E[l]]

    cdef void _lu_update_lines(self, int kind, Py_ssize_t index, int sign,
                               Py_ssize_t rs) noexcept nogil:
        """The dual lines (``c1``, ``c0``, over the samples) through the pivot whose
        entering column's FTRAN is ``xs`` and whose leaving variable holds slot ``rs``,
        before the factor takes the pivot: the dual of a basis whose column in slot r
        is exchanged moves along the old basis inverse's row r, y' = y + (c_q - a_q^T
        y) / x_r B^{-T} e_r, the entering variable's reduced cost over its pivot
        element (for each line, with its cost: 1 for a feature on the first, s_i for a
        hinge slack on the second). One BTRAN with a unit vector, where solving the
        lines takes one with the two cost vectors; a fresh factor solves them anew
        (:meth:`refactor`), so that the updates' round-off lasts no longer than the
        factor's."""
        cdef Py_ssize_t i, p, j
        cdef double d1, d0, z, piv = self.xs[rs]
        cdef const Py_ssize_t* cptr
        cdef const Py_ssize_t* cind
        cdef const double* cdat
        cdef double* y1 = &self.c1[0]
        cdef double* y0 = &self.c0[0]
        cdef double* rho = &self.rho[0]
        if kind == FEATURE:
            j = index
            d1, d0 = 1.0, 0.0
            cptr, cind, cdat = &self.Z.c_ptr[0], &self.Z.c_ind[0], &self.Z.c_data[0]
            for p in range(cptr[j], cptr[j + 1]):
                z = sign * cdat[p]
                d1 -= z * y1[cind[p]]
                d0 -= z * y0[cind[p]]
        else:
            # the hinge slack (column e_i, cost s_i) or the surplus (-e_i, cost 0) of
            # margin sample i
            i = self.E[index]
            if kind == BELOW:
                d1, d0 = -y1[i], self.s[i] - y0[i]
            else:
                d1, d0 = y1[i], y0[i]
        self.lu.btran_unit(rs, rho)
        d1 = d1 / piv
        d0 = d0 / piv
        for i in range(self.n):
            z = rho[i]
            if z != 0.0:
                y1[i] += d1 * z
                y0[i] += d0 * z
                rho[i] = 0.0

    cdef void _dual_lines(self) noexcept nogil:
        """u = G^T 1, v = G^T (sgn * cL[A]): the margin set's dual is lam n u - v
        (computed once per basis: a pivot or a refactorisation marks them stale)."""
        cdef Py_ssize_t l
        if self.lines_fresh:
            return
        if self.lu_mode:
            # also with an empty support: the lines over every sample are what the
            # pivots update
            self.lines_fresh = True
            self._lu_dual_lines()
            return
        if self.k == 0:
            return
        self.lines_fresh = True
        for l in range(self.k):
            self.rhs2[l, 0] = 1.0
            self.rhs2[l, 1] = self.sgn[l] * self.cL[self.A[l]]
        # both in one pass over G
        self.inv.apply_T2(<int>self.k, &self.rhs2[0, 0], &self.uv[0, 0])

    cdef double _gap(self, double lam) noexcept nogil:
        """Relative gap of the current basis at lam (the dual lines must be current)."""
        cdef double primal = 0.0, dual = 0.0, ln = lam * self.n, x
        cdef Py_ssize_t i, l
        cdef const double* m = &self.m[0]
        cdef const double* sw = &self.s[0]
        cdef const signed char* st = &self.status[0]
        for l in range(self.k):
            primal += ln * self.t[l]
            dual += ln * self.u[l] - self.v[l]
        for i in range(self.n):
            # the hinge of every sample (not only those below the margin): a margin that
            # drifted to the wrong side shows in the gap
            x = 1.0 - m[i]
            if x > 0.0:
                primal += sw[i] * x
            if st[i] == L_STATUS:
                dual += sw[i]
        return fabs(primal - dual) / max(fabs(primal), 1e-300)

    def gap_at(self, double lam):
        cdef double gap
        with nogil:
            self._dual_lines()
            gap = self._gap(lam)
        return gap

    # ----------------------------------------------------------- dual side ---
    cdef inline void _note(self, double c, Py_ssize_t gi, double* top,
                           Py_ssize_t* nc) noexcept nogil:
        """A crossing ``c`` of variable ``gi`` (the global order): the largest so far
        in ``top``; kept as a candidate tie if within the tie tolerance of that (the
        tolerance's threshold only rises with ``top``, so that every crossing tied with
        the final largest one is kept, with the crossings that led up to it)."""
        if c > top[0]:
            top[0] = c
        if c >= top[0] - self.tie_rtol * max(fabs(top[0]), 1e-300):
            self.cand_c[nc[0]] = c
            self.cand_g[nc[0]] = gi
            nc[0] += 1

    cdef inline void _price(self, Py_ssize_t j, const double* g, const double* cL,
                            const double* hh, double ln1, double tol_f, double* top,
                            Py_ssize_t* nc) noexcept nogil:
        """The crossings of p_j and q_j (feature j free), with ``ln1`` = n."""
        cdef double d0 = cL[j] - hh[j]  # h_j
        cdef double d1 = ln1 * (1.0 - g[j])
        if d1 > tol_f:
            self._note(d0 / d1, j, top, nc)
        d1 = ln1 * (1.0 + g[j])
        if d1 > tol_f:
            self._note(-d0 / d1, self.d + j, top, nc)

    cdef bint _screen_holds(self) noexcept nogil:
        """Whether the reference's screened features may be skipped at this pricing:
        the current basis's dual line, at the current lambda and at the interval's
        lower end, lies within the budgets of the reference dual (1- and 2-norm), and
        the slopes of the screened reduced costs are small enough for the decisions'
        margin to exceed the tie tolerance (``doc/theory/lp_svm.rst``)."""
        cdef Py_ssize_t q, i, e, n = self.n
        cdef double ln_hi = self.lam * n, ln_lo = self.ref_lo * n
        cdef double x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0, uu = 0.0, x, y
        cdef signed char st
        if not self.ref_ok or not self.lam >= self.ref_lo or not self.lam <= self.ref_lam:
            return False
        # samples off the margin sit at their box's end; untouched ones at the
        # reference's value
        for q in range(self.n_touched):
            i = self.touched[q]
            st = self.status[i]
            if st == E_STATUS:
                continue
            x = (self.s[i] if st == L_STATUS else 0.0) - self.a_ref[i]
            x1 += fabs(x)
            x2 += x * x
        y1, y2 = x1, x2
        for e in range(self.k):
            i = self.E[e]
            x = ln_hi * self.u[e] - self.v[e] - self.a_ref[i]
            y = ln_lo * self.u[e] - self.v[e] - self.a_ref[i]
            x1 += fabs(x)
            x2 += x * x
            y1 += fabs(y)
            y2 += y * y
            uu += self.u[e] * self.u[e]
        if max(x1, y1) > self.d1_max or max(x2, y2) > self.d2_max * self.d2_max:
            return False
        # the slopes' bound: the margin must exceed the tie tolerance and the rounding
        # of the margin rows' products (k terms each) four and ten times over
        return (1.0 + self.two_max * sqrt(uu)) * max(
            4.0 * self.tie_rtol, 10.0 * self.k * UNIT_ROUNDOFF) <= self.screen_rtol

    cdef void _rescreen(self) noexcept nogil:
        """A new reference: the current basis's dual at the current lambda (every
        feature's correlation line is current), the interval below it, the budgets and
        the features the rule screens over it."""
        cdef Py_ssize_t i, e, j, n = self.n, d = self.d, nw = 0, ns = d
        cdef double lam = self.lam, ln = lam * n, lo, ln_lo, u1 = 0.0, u2 = 0.0, c, b
        cdef double rt = self.screen_rtol
        for i in range(n):
            self.a_ref[i] = self.s[i] if self.status[i] == L_STATUS else 0.0
            self.is_touched[i] = 0
        self.n_touched = 0
        for e in range(self.k):
            i = self.E[e]
            self.a_ref[i] = ln * self.u[e] - self.v[e]
            self.touched[self.n_touched] = i
            self.n_touched += 1
            self.is_touched[i] = 1
            u1 += fabs(self.u[e])
            u2 += self.u[e] * self.u[e]
        lo = lam * (1.0 - self.screen_span)
        ln_lo = lo * n
        # the current line's move down to lo, times the budget
        self.d1_max = self.screen_budget * (ln - ln_lo) * u1
        self.d2_max = self.screen_budget * (ln - ln_lo) * sqrt(u2)
        self.two_max = 0.0
        for j in range(d):
            if self.posA[j] < 0:
                c = fabs(ln * self.g[j] + self.cL[j] - self.hh[j])
                b = min(self.c_inf[j] * self.d1_max, self.c_two[j] * self.d2_max)
                if c + b + rt * (ln + self.c_abs[j]) <= ln_lo:
                    ns -= 1
                    self.order[ns] = j
                    self.two_max = max(self.two_max, self.c_two[j])
                    continue
            self.order[nw] = j
            nw += 1
        self.n_watch = nw
        self.ref_lam, self.ref_lo = lam, lo
        self.ref_ok = True
        self.n_rescreen += 1

    def next_event(self, double lam_stop):
        """``(found, lam, kind, index, sign, gap)``: the next breakpoint's entering
        variable (index: the feature, or the margin sample's position), or found=False
        when the basis is optimal down to ``lam_stop`` (or 0).

        With the screening on, the features the reference screens are not priced
        while its conditions hold (:meth:`_screen_holds`) and the next breakpoint lies
        in its interval; otherwise every feature is, and the reference is taken again
        from this basis."""
        cdef Py_ssize_t j, q, e, d = self.d, n = self.n, best = -1, nc = 0
        cdef double top = -INFINITY, d1, tol_f, tol_s, umax = 0.0, lam_next, tie
        cdef double gap, ln1 = <double>n
        cdef int kind = -1, sign = 0
        cdef bint use = False
        cdef const Py_ssize_t* posA = &self.posA[0]
        cdef const double* cL = &self.cL[0]
        cdef const double* hh = &self.hh[0]
        cdef const double* g = &self.g[0]
        with nogil:
            self._dual_lines()
            self.Z.rows_T2(self.k, &self.E[0], &self.u[0], &self.v[0], &self.g[0],
                           &self.hh[0])
            tol_f = self.slope_rtol * n
            for e in range(self.k):
                umax = max(umax, fabs(self.u[e]))
            tol_s = self.slope_rtol * n * max(1.0, umax)
            self.n_pricings += 1
            if self.screen:
                use = self._screen_holds()
            # the largest crossing, and the candidates for a tie with it
            if use:
                for q in range(self.n_watch):
                    j = self.order[q]
                    if posA[j] < 0:
                        self._price(j, g, cL, hh, ln1, tol_f, &top, &nc)
            else:
                for j in range(d):
                    if posA[j] < 0:
                        self._price(j, g, cL, hh, ln1, tol_f, &top, &nc)
            for e in range(self.k):
                d1 = -n * self.u[e]
                if d1 > tol_s:
                    self._note(-(self.s[self.E[e]] + self.v[e]) / d1,
                               2 * d + self.E[e], &top, &nc)
                d1 = n * self.u[e]
                if d1 > tol_s:
                    self._note(self.v[e] / d1, 2 * d + n + self.E[e], &top, &nc)
            if use and not top >= self.ref_lo:
                # the next breakpoint is not proven to lie in the interval: the
                # screened features are priced too
                for q in range(self.n_watch, d):
                    self._price(self.order[q], g, cL, hh, ln1, tol_f, &top,
                                &nc)
                use = False
            if use:
                self.n_screened += 1
                self.n_skipped += d - self.n_watch
            elif self.screen and self.lam < INFINITY:
                self._rescreen()
        if not top > -INFINITY or top <= lam_stop or top <= 0.0:
            # the last basis's gap at the path's end, or (a path down to 0, where both
            # objectives of a separable problem vanish) at half its last breakpoint
            if lam_stop > 0.0:
                lam_next = lam_stop
            elif self.lam < INFINITY:
                lam_next = 0.5 * self.lam
            else:
                lam_next = 1.0
            with nogil:
                gap = self._gap(lam_next)
            return False, 0.0, -1, -1, 0, gap
        tie = top - self.tie_rtol * max(fabs(top), 1e-300)
        with nogil:
            # among the ties, the smallest global index (Bland)
            best = -1
            for q in range(nc):
                if self.cand_c[q] >= tie and (best < 0 or self.cand_g[q] < best):
                    best = self.cand_g[q]
            if best < d:
                kind, sign = FEATURE, 1
            elif best < 2 * d:
                kind, sign = FEATURE, -1
            elif best < 2 * d + n:
                kind = BELOW
            else:
                kind = ABOVE
            lam_next = min(top, self.lam)
            gap = self._gap(lam_next)
        if kind == FEATURE:
            index = best if sign > 0 else best - d
        elif kind == BELOW:
            index = self._position_of(best - 2 * d)
        else:
            index = self._position_of(best - 2 * d - n)
        return True, lam_next, kind, index, sign, gap

    cdef Py_ssize_t _position_of(self, Py_ssize_t i):
        cdef Py_ssize_t e
        for e in range(self.k):
            if self.E[e] == i:
                return e
        return -1

    # --------------------------------------------------------- primal side ---
    cdef void _column(self, int kind, Py_ssize_t index, int sign) noexcept nogil:
        """The entering variable's column through the basis: the rates ``alpha`` of the
        active features and ``dm`` of the margins."""
        cdef Py_ssize_t i, l, k = self.k
        cdef double dirn
        cdef double* dm = &self.dm[0]
        cdef double* xs
        cdef const Py_ssize_t* slotS
        cdef const signed char* st = &self.status[0]
        for i in range(self.n):
            dm[i] = 0.0
        if self.lu_mode:
            # its FTRAN into xs, read through the slots
            xs = &self.xs[0]
            for i in range(self.n):
                xs[i] = 0.0
            if kind == FEATURE:
                self.Z.add_col(index, <double>sign, xs)
            else:
                # the hinge slack (column e_i) or the surplus (-e_i) of margin sample i
                xs[self.E[index]] = 1.0 if kind == BELOW else -1.0
            self.lu.ftran(xs)
            for l in range(k):
                self.alpha[l] = xs[self.lu.slotA[l]]
            slotS = &self.lu.slotS[0]
            for i in range(self.n):
                if st[i] == L_STATUS:
                    dm[i] = xs[slotS[i]]
                elif st[i] == R_STATUS:
                    dm[i] = -xs[slotS[i]]
            if kind != FEATURE:
                # the sample leaving the margin: below at rate 1, or above
                self.dm[self.E[index]] = -1.0 if kind == BELOW else 1.0
            return
        if kind == FEATURE:
            self.Z.add_col(index, <double>sign, &self.dm[0])
            for l in range(k):
                self.tmpk[l] = self.dm[self.E[l]]
            if k:
                self.inv.apply(<int>k, &self.tmpk[0], &self.alpha[0])
        else:
            dirn = 1.0 if kind == BELOW else -1.0
            for l in range(k):
                self.alpha[l] = dirn * self.inv.G[l, index]
        for l in range(k):
            self.Z.add_col(self.A[l], -self.sgn[l] * self.alpha[l], &self.dm[0])

    def pivot(self, int kind, Py_ssize_t index, int sign):
        """Let the variable in, the ratio test picks the one that leaves; returns
        ``(leave_kind, leave_index)`` (a feature or a sample)."""
        cdef Py_ssize_t l, i, n = self.n, d = self.d, k = self.k, p = -1, r = -1
        cdef Py_ssize_t best, gi
        cdef double scale = 0.0, ptol, theta = INFINITY, x, rate, tie
        cdef int leave_kind = -1
        # the loops read the arrays through local pointers (see _lp_sparse_factor)
        cdef double* al = &self.alpha[0]
        cdef double* tt = &self.t[0]
        cdef double* dm = &self.dm[0]
        cdef double* m = &self.m[0]
        cdef const signed char* st = &self.status[0]
        if self.lu_mode:
            self.lu.make_room()
        with nogil:
            if self.lu_mode:
                # the current basis's lines, which the pivot updates
                self._dual_lines()
            self._column(kind, index, sign)
            # the ratio test: t_A decreases at alpha, 1 - m (below) at dm, m - 1 (above)
            # at -dm
            for l in range(k):
                scale = max(scale, fabs(al[l]))
            for i in range(n):
                if st[i] != E_STATUS:
                    scale = max(scale, fabs(dm[i]))
            ptol = self.pivot_rtol * scale
            for l in range(k):
                if al[l] > ptol:
                    x = max(tt[l], 0.0) / al[l]
                    if x < theta:
                        theta = x
            for i in range(n):
                if st[i] == L_STATUS:
                    rate, x = dm[i], 1.0 - m[i]
                elif st[i] == R_STATUS:
                    rate, x = -dm[i], m[i] - 1.0
                else:
                    continue
                if rate > ptol:
                    x = max(x, 0.0) / rate
                    if x < theta:
                        theta = x
        if theta == INFINITY:
            raise RuntimeError("the LP-SVM homotopy found an unbounded edge: the "
                               "problem's weights must be positive")
        with nogil:
            tie = theta + self.tie_rtol * max(theta, 1.0)
            best = -1
            for l in range(k):
                if al[l] > ptol and max(tt[l], 0.0) / al[l] <= tie:
                    gi = self.A[l] if self.sgn[l] > 0 else d + self.A[l]
                    if best < 0 or gi < best:
                        best, p, leave_kind = gi, l, FEATURE
            for i in range(n):
                if st[i] == L_STATUS:
                    rate, x, gi = dm[i], 1.0 - m[i], 2 * d + i
                elif st[i] == R_STATUS:
                    rate, x, gi = -dm[i], m[i] - 1.0, 2 * d + n + i
                else:
                    continue
                if rate > ptol and max(x, 0.0) / rate <= tie:
                    if best < 0 or gi < best:
                        best, r, leave_kind = gi, i, SAMPLE
            # the step
            for l in range(k):
                tt[l] = max(tt[l] - theta * al[l], 0.0)
            for i in range(n):
                m[i] += theta * dm[i]
            self._update_factor(kind, index, sign, leave_kind, p, r)
            self._update(kind, index, sign, theta, leave_kind, p, r)
            if self.lu_mode:
                # the updated lines, on the new margin set
                self._lu_read_lines()
                self.lines_fresh = True
        if leave_kind == FEATURE:
            return FEATURE, int(self._left)
        return SAMPLE, int(r)

    cdef void _update_factor(self, int kind, Py_ssize_t index, int sign, int leave_kind,
                             Py_ssize_t p, Py_ssize_t r) noexcept nogil:
        """The factor after the pivot, before the index sets change (which its updates
        read): the sparse factor's eta and slots, or the dense inverse's update for
        the margin matrix's change (a column replaced; bordered by sample r's row and
        the entering column; a row and a column removed; a row replaced)."""
        cdef int k = <int>self.k
        cdef bint enter_feature = kind == FEATURE, leave_feature = leave_kind == FEATURE
        cdef Py_ssize_t rs
        if self.lu_mode:
            rs = self.lu.slotA[p] if leave_feature else self.lu.slotS[r]
            self._lu_update_lines(kind, index, sign, rs)
            self.lu.push_eta(rs, &self.xs[0], index if enter_feature else -1, sign)
            self.lu.move_slots(enter_feature, leave_feature, p, r,
                               -1 if enter_feature else self.E[index], k)
        elif enter_feature and leave_feature:
            self.inv.replace_column(k, p, &self.alpha[0])
        elif enter_feature:
            self.Z.gather_row(r, self.k, &self.A[0], &self.sgn[0], &self.cvec[0])
            self.inv.border(k, &self.cvec[0], &self.alpha[0],
                            sign * self.Z.entry(r, index))
        elif leave_feature:
            self.inv.remove(k, p, index)
        else:
            self.Z.gather_row(r, self.k, &self.A[0], &self.sgn[0], &self.cvec[0])
            self.inv.replace_row(k, index, &self.cvec[0])

    cdef void _update(self, int kind, Py_ssize_t index, int sign, double theta,
                      int leave_kind, Py_ssize_t p, Py_ssize_t r) noexcept nogil:
        """The index sets after the pivot: the entering variable takes the leaving one's
        position (a removed position filled by the last one, so nothing is shifted)."""
        cdef Py_ssize_t q, i, k = self.k, last, j
        self.lines_fresh = False
        if kind == FEATURE:
            j = index
            if leave_kind == FEATURE:
                self._left = self.A[p]
                self.posA[self.A[p]] = -1
                self.A[p] = j
                self.sgn[p] = sign
                self.t[p] = theta
                self.posA[j] = p
            else:
                # sample r reaches the margin
                self._leave_slack(r)
                self.A[k] = j
                self.sgn[k] = sign
                self.t[k] = theta
                self.E[k] = r
                self.posA[j] = k
                self.k = k + 1
        else:
            q = index
            i = self.E[q]
            if leave_kind == FEATURE:
                self._left = self.A[p]
                last = k - 1
                self.posA[self.A[p]] = -1
                self.A[p] = self.A[last]
                self.sgn[p] = self.sgn[last]
                self.t[p] = self.t[last]
                if p != last:
                    self.posA[self.A[p]] = p
                self.E[q] = self.E[last]
                self.k = last
            else:
                self._leave_slack(r)
                self.E[q] = r
            if kind == BELOW:
                self.status[i] = L_STATUS
                self.Z.add_row(i, self.s[i], &self.cL[0])
            else:
                self.status[i] = R_STATUS

    cdef void _leave_slack(self, Py_ssize_t r) noexcept nogil:
        if self.screen and self.ref_ok and not self.is_touched[r]:
            # its dual may leave the reference's value from now on
            self.is_touched[r] = 1
            self.touched[self.n_touched] = r
            self.n_touched += 1
        if self.status[r] == L_STATUS:
            self.Z.add_row(r, -self.s[r], &self.cL[0])
        self.status[r] = E_STATUS
        self.m[r] = 1.0

    # ---------------------------------------------------------- refactorise ---
    def refactor(self):
        """The factor from scratch (the dense inverse by LAPACK LU, or the sparse
        factor by SuperLU with an empty eta file), then the primal values, the margins
        and :math:`Z_L^\\top s_L`; returns the largest relative drift of the maintained
        values. Raises if the margin matrix is singular."""
        cdef Py_ssize_t k = self.k, l, e, i
        cdef double drift = 0.0, scale = 1.0, x
        cdef double[::1] old_t = np.asarray(self.t).copy()
        cdef double[::1] old_m = np.asarray(self.m).copy()
        self.lines_fresh = False
        if self.lu_mode:
            self.lu.refactorise(np.array(self.A_arr[:k], dtype=np.intp),
                                np.array(self.E_arr[:k], dtype=np.intp),
                                np.array(self.sgn_arr[:k], dtype=np.float64),
                                np.asarray(self.status_arr) == R_STATUS)
            with nogil:
                # t = M0^{-1} 1
                for l in range(k):
                    self.tmpk[l] = 1.0
                if k:
                    self.lu.solve(&self.tmpk[0])
                for l in range(k):
                    self.t[l] = self.tmpk[l]
                    scale = max(scale, fabs(self.tmpk[l]))
        else:
            with nogil:
                for l in range(k):
                    for e in range(k):
                        self.inv.G[e, l] = self.Z.entry(self.E[e], self.A[l]) * self.sgn[l]
            self.inv.invert(k)
            with nogil:
                # t = G 1
                for l in range(k):
                    x = 0.0
                    for e in range(k):
                        x += self.inv.G[l, e]
                    scale = max(scale, fabs(x))
                    self.t[l] = x
        with nogil:
            for l in range(k):
                drift = max(drift, fabs(self.t[l] - old_t[l]) / scale)
            for i in range(self.n):
                self.m[i] = 0.0
            for l in range(k):
                self.Z.add_col(self.A[l], self.sgn[l] * self.t[l], &self.m[0])
            scale = 1.0
            for i in range(self.n):
                scale = max(scale, fabs(self.m[i]))
            for i in range(self.n):
                drift = max(drift, fabs(self.m[i] - old_m[i]) / scale)
        return drift, self.refresh_below()

    # ---------------------------------------------------------------- tests ---
    def basis_inverse(self):
        """The inverse of the current margin matrix (rows: the positions in A,
        columns: those in E), from the dense buffer or, with the sparse factor, by a
        solve with the basis per column (for tests)."""
        k = self.k
        if not self.lu_mode:
            return np.array(self.inv.G_arr[:k, :k])
        G = np.zeros((k, k))
        slots = np.asarray(self.lu.slotA)[:k]
        for e in range(k):
            x = np.zeros(self.n)
            x[self.E_arr[e]] = 1.0
            self._ftran_py(x)
            G[:, e] = x[slots]
        return G

    def dual_lines_check(self):
        """``(kept, solved)``: the dual lines ``(u, v)`` as the core holds them
        (with the sparse factor, updated by the pivots since the last factorisation)
        and solved from scratch with the current factor, which the core's state keeps
        (for tests)."""
        k = self.k
        with nogil:
            self._dual_lines()
        kept = (np.array(self.u[:k]), np.array(self.v[:k]))
        if not self.lu_mode:
            return kept, kept
        saved = (np.array(self.c1), np.array(self.c0))
        with nogil:
            self._lu_dual_lines()
        solved = (np.array(self.u[:k]), np.array(self.v[:k]))
        np.asarray(self.c1)[:] = saved[0]
        np.asarray(self.c0)[:] = saved[1]
        np.asarray(self.u)[:k] = kept[0]
        np.asarray(self.v)[:k] = kept[1]
        return kept, solved

    def _ftran_py(self, double[::1] x):
        with nogil:
            self.lu.ftran(&x[0])

    def check_inverse(self):
        """Largest entry of ``G M - I`` (for tests)."""
        k = self.k
        A = self.A_arr[:k]
        E = self.E_arr[:k]
        M = np.array([[self.Z.entry(E[e], A[l]) * self.sgn_arr[l] for l in range(k)]
                      for e in range(k)]).reshape(k, k)
        return float(np.abs(self.basis_inverse() @ M - np.eye(k)).max(initial=0.0))
