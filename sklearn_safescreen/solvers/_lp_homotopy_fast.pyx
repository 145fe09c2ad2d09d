"""Compiled core of the LP-SVM homotopy (:mod:`.lp_homotopy`).

The same parametric simplex as :class:`.lp_homotopy.LPHomotopy`, pivot for pivot (the
same reduced costs, crossings, ratio tests and Bland tie-breaks), without the copies the
NumPy version makes: the products with the margin rows :math:`Z_{E,:}` and the active
columns :math:`Z_{:,A}` read ``Z`` in place (row-major for rows, column-major for
columns; CSR and CSC when sparse), the basis inverse lives in a preallocated
column-major buffer updated in place by BLAS ``dger`` (a removed row and column are
replaced by the last ones, so nothing is shifted), and refactorisation is LAPACK
``dgetrf``/``dgetri`` on the gathered margin matrix. Each step runs without the GIL.
"""

from libc.math cimport fabs, INFINITY
from scipy.linalg.cython_blas cimport dgemm, dgemv, dger
from scipy.linalg.cython_lapack cimport dgetrf, dgetri

import numpy as np

cdef int FEATURE = 0
cdef int BELOW = 1
cdef int ABOVE = 2
cdef int SAMPLE = 3
cdef signed char L_STATUS = 0
cdef signed char R_STATUS = 1
cdef signed char E_STATUS = 2


def _split_diagonal(T, bint lower):
    """A triangular CSC factor as its diagonal and its strict part (CSC arrays)."""
    T = T.tocsc()
    k = T.shape[0]
    cols = np.repeat(np.arange(k, dtype=np.intp), np.diff(T.indptr))
    rows = T.indices.astype(np.intp)
    diag = np.zeros(k)
    on = rows == cols
    diag[cols[on]] = T.data[on]
    strict = rows > cols if lower else rows < cols
    ptr = np.zeros(k + 1, dtype=np.intp)
    np.cumsum(np.bincount(cols[strict], minlength=k), out=ptr[1:])
    return (diag, ptr, np.ascontiguousarray(rows[strict]),
            np.ascontiguousarray(T.data[strict], dtype=np.float64))


cdef class HomotopyCore:
    """State and steps of the homotopy on a dense (``Zr`` row-major and ``Zf``
    column-major copies of Z) or sparse (CSR and CSC arrays) problem."""

    cdef public Py_ssize_t n, d, k, kmax
    cdef public double lam
    cdef bint sparse
    cdef const double[:, ::1] Zr
    cdef const double[::1, :] Zf
    cdef const double[::1] r_data, c_data
    cdef const Py_ssize_t[::1] r_ind, r_ptr, c_ind, c_ptr
    cdef const double[::1] s
    cdef double[::1, :] G
    cdef public object G_arr, A_arr, sgn_arr, E_arr, t_arr, m_arr, cL_arr, status_arr
    cdef Py_ssize_t[::1] A, E, posA
    cdef double[::1] sgn, t, m, cL
    cdef signed char[::1] status
    cdef double[::1] u, v, g, hh, alpha, dm, rowbuf, cvec, cG, tmpk, tmpk2, work
    cdef double[::1, :] rhs2, uv
    cdef double slope_rtol, tie_rtol, pivot_rtol
    cdef Py_ssize_t _left
    cdef bint lines_fresh
    # the sparse factor (``factor="lu"``): B0, the basis at the last refactorisation,
    # through the sparse LU of its margin matrix M0 = Z[E0][:, A0] diag(sgn0), then the
    # eta file of the pivots since
    cdef public bint lu_mode
    cdef public object Zcsr
    cdef public Py_ssize_t k0, n_eta, eta_nnz, lu_nnz
    cdef public double eta_fill
    cdef Py_ssize_t[::1] A0, E0, perm_r, perm_c
    cdef double[::1] sgn0, Ld, Ud
    cdef signed char[::1] sig0
    cdef const Py_ssize_t[::1] Lp, Li, Up, Ui
    cdef const double[::1] Lx, Ux
    cdef Py_ssize_t[::1] eta_r, eta_ptr, eta_ind
    cdef double[::1] eta_piv, eta_val
    cdef Py_ssize_t[::1] slotA, slotS
    cdef double[::1] xs, c1, c0, kb, kb2, kb3, kb4

    def __init__(self, Z, Zc, double[::1] s, double slope_rtol, double tie_rtol,
                 double pivot_rtol, bint lu=False):
        import scipy.sparse as sp
        self.n, self.d = Z.shape
        self.sparse = sp.issparse(Z)
        if lu and not self.sparse:
            raise ValueError("the sparse factor needs a sparse Z")
        self.lu_mode = lu
        if self.sparse:
            Zr = Z.tocsr()
            Zcc = Zc.tocsc()
            self.r_data = np.ascontiguousarray(Zr.data, dtype=np.float64)
            self.r_ind = np.ascontiguousarray(Zr.indices, dtype=np.intp)
            self.r_ptr = np.ascontiguousarray(Zr.indptr, dtype=np.intp)
            self.c_data = np.ascontiguousarray(Zcc.data, dtype=np.float64)
            self.c_ind = np.ascontiguousarray(Zcc.indices, dtype=np.intp)
            self.c_ptr = np.ascontiguousarray(Zcc.indptr, dtype=np.intp)
        else:
            self.Zr = np.ascontiguousarray(Z, dtype=np.float64)
            self.Zf = np.asfortranarray(Z, dtype=np.float64)
        self.s = s
        self.slope_rtol, self.tie_rtol, self.pivot_rtol = slope_rtol, tie_rtol, pivot_rtol
        n, d = self.n, self.d
        self.kmax = min(n, d) + 1
        km = self.kmax
        # the dense inverse only without the sparse factor (it would take k_max^2 doubles)
        self.G_arr = np.zeros((1, 1) if lu else (km, km), order="F")
        self.G = self.G_arr
        self.A_arr = np.zeros(km, dtype=np.intp)
        self.E_arr = np.zeros(km, dtype=np.intp)
        self.sgn_arr = np.zeros(km)
        self.t_arr = np.zeros(km)
        self.m_arr = np.zeros(n)
        self.cL_arr = np.zeros(d)
        self.status_arr = np.zeros(n, dtype=np.int8)
        self.A, self.E, self.sgn, self.t = self.A_arr, self.E_arr, self.sgn_arr, self.t_arr
        self.m, self.cL, self.status = self.m_arr, self.cL_arr, self.status_arr
        self.posA = np.full(d, -1, dtype=np.intp)
        uv = np.zeros((km, 2), order="F")
        self.uv, self.rhs2 = uv, np.zeros((km, 2), order="F")
        self.u, self.v, self.alpha = uv[:, 0], uv[:, 1], np.zeros(km)
        self.cvec, self.cG = np.zeros(km), np.zeros(km)
        self.tmpk, self.tmpk2 = np.zeros(km), np.zeros(km)
        self.g, self.hh, self.rowbuf = np.zeros(d), np.zeros(d), np.zeros(d)
        self.dm = np.zeros(n)
        self.work = np.zeros(max(1, 64 * km))
        self.k = 0
        self.lam = INFINITY
        self._lu_init(Z)
        self.refresh_below()

    def _lu_init(self, Z):
        """The sparse factor's state at the basis of w = 0 (every hinge slack basic:
        B0 = I, no eta)."""
        n, km = self.n, self.kmax
        self.k0 = self.n_eta = self.eta_nnz = self.lu_nnz = 0
        self.eta_fill = 1.0
        self.slotA = np.zeros(km, dtype=np.intp)
        self.slotS = np.arange(n, dtype=np.intp)
        self.sig0 = np.ones(n, dtype=np.int8)
        self.xs, self.c1, self.c0 = np.zeros(n), np.zeros(n), np.zeros(n)
        if not self.lu_mode:
            return
        self.Zcsr = Z.tocsr()
        self.kb, self.kb2, self.kb3, self.kb4 = (np.zeros(km), np.zeros(km),
                                                 np.zeros(km), np.zeros(km))
        self._set_factor(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp),
                         np.zeros(0), None)
        self.eta_r = np.zeros(64, dtype=np.intp)
        self.eta_ptr = np.zeros(65, dtype=np.intp)
        self.eta_piv = np.zeros(64)
        self.eta_ind = np.zeros(4 * n + 16, dtype=np.intp)
        self.eta_val = np.zeros(4 * n + 16)

    def _set_factor(self, A0, E0, sgn0, lu):
        """B0 from the support ``A0`` (signs ``sgn0``), the margin set ``E0`` and the
        SuperLU factor of its margin matrix (``Pr M0 Pc = L U``)."""
        k0 = len(A0)
        self.k0 = k0
        self.A0, self.E0, self.sgn0 = A0, E0, sgn0
        if lu is None:
            empty_i, empty_x = np.zeros(1, dtype=np.intp), np.zeros(0)
            self.Lp = self.Up = empty_i
            self.Li = self.Ui = np.zeros(0, dtype=np.intp)
            self.Lx = self.Ux = empty_x
            self.Ld = self.Ud = np.zeros(0)
            self.perm_r = self.perm_c = np.zeros(0, dtype=np.intp)
            self.lu_nnz = 0
            return
        self.Ld, self.Lp, self.Li, self.Lx = _split_diagonal(lu.L, lower=True)
        self.Ud, self.Up, self.Ui, self.Ux = _split_diagonal(lu.U, lower=False)
        L, U = lu.L, lu.U
        self.perm_r = np.ascontiguousarray(lu.perm_r, dtype=np.intp)
        self.perm_c = np.ascontiguousarray(lu.perm_c, dtype=np.intp)
        self.lu_nnz = L.nnz + U.nnz

    def eta_full(self):
        """Whether the eta file has grown past the sparse factor's own size (with the
        margin products of B0, a solve with B0 costs about ``lu_nnz + nnz(Z[:, A0]) +
        n``; each eta adds its length to every later solve), so that a fresh factor is
        cheaper than carrying on."""
        if not self.lu_mode:
            return False
        return self.eta_nnz > self.eta_fill * (2 * (self.lu_nnz + self.n) + 4 * self.n)

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
                    self._add_row(i, self.s[i], &self.cL[0])
            for j in range(self.d):
                change = max(change, fabs(old[j] - self.cL[j]))
        return change

    # ------------------------------------------------------------- products ---
    cdef void _add_row(self, Py_ssize_t i, double c, double* out) noexcept nogil:
        """out += c Z[i, :]"""
        cdef Py_ssize_t j, p
        cdef const double* row
        if self.sparse:
            for p in range(self.r_ptr[i], self.r_ptr[i + 1]):
                out[self.r_ind[p]] += c * self.r_data[p]
        else:
            row = &self.Zr[i, 0]
            for j in range(self.d):
                out[j] += c * row[j]

    cdef void _add_col(self, Py_ssize_t j, double c, double* out) noexcept nogil:
        """out += c Z[:, j]"""
        cdef Py_ssize_t i, p
        cdef const double* col
        if self.sparse:
            for p in range(self.c_ptr[j], self.c_ptr[j + 1]):
                out[self.c_ind[p]] += c * self.c_data[p]
        else:
            col = &self.Zf[0, j]
            for i in range(self.n):
                out[i] += c * col[i]

    cdef double _entry(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
        cdef Py_ssize_t lo, hi, mid
        if not self.sparse:
            return self.Zr[i, j]
        lo, hi = self.r_ptr[i], self.r_ptr[i + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if self.r_ind[mid] < j:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.r_ptr[i + 1] and self.r_ind[lo] == j:
            return self.r_data[lo]
        return 0.0

    cdef void _gather_row(self, Py_ssize_t r, double* out) noexcept nogil:
        """out[l] = Z[r, A[l]] sgn[l] for the active positions."""
        cdef Py_ssize_t l, p
        if self.sparse:
            for p in range(self.r_ptr[r], self.r_ptr[r + 1]):
                self.rowbuf[self.r_ind[p]] = self.r_data[p]
            for l in range(self.k):
                out[l] = self.rowbuf[self.A[l]] * self.sgn[l]
            for p in range(self.r_ptr[r], self.r_ptr[r + 1]):
                self.rowbuf[self.r_ind[p]] = 0.0
        else:
            for l in range(self.k):
                out[l] = self.Zr[r, self.A[l]] * self.sgn[l]

    # ------------------------------------------------------- sparse factor ---
    cdef void _lu_solve(self, double* b) noexcept nogil:
        """b <- M0^{-1} b (Pr M0 Pc = L U: L U w = Pr b, then b = Pc w)."""
        cdef Py_ssize_t i, j, p, k0 = self.k0
        cdef double x
        cdef double* w = &self.kb2[0]
        for i in range(k0):
            w[self.perm_r[i]] = b[i]
        for j in range(k0):
            x = w[j] / self.Ld[j]
            w[j] = x
            if x != 0.0:
                for p in range(self.Lp[j], self.Lp[j + 1]):
                    w[self.Li[p]] -= self.Lx[p] * x
        for j in range(k0 - 1, -1, -1):
            x = w[j] / self.Ud[j]
            w[j] = x
            if x != 0.0:
                for p in range(self.Up[j], self.Up[j + 1]):
                    w[self.Ui[p]] -= self.Ux[p] * x
        for i in range(k0):
            b[i] = w[self.perm_c[i]]

    cdef void _lu_solve_T2(self, double* c, double* e) noexcept nogil:
        """(c, e) <- M0^{-T} (c, e): both right-hand sides in one pass over the
        factors."""
        cdef Py_ssize_t i, j, p, q, k0 = self.k0
        cdef double x, z, f
        cdef double* w = &self.kb2[0]
        cdef double* h = &self.kb4[0]
        for i in range(k0):
            w[self.perm_c[i]] = c[i]
            h[self.perm_c[i]] = e[i]
        for j in range(k0):
            x, z = w[j], h[j]
            for p in range(self.Up[j], self.Up[j + 1]):
                q = self.Ui[p]
                f = self.Ux[p]
                x -= f * w[q]
                z -= f * h[q]
            w[j] = x / self.Ud[j]
            h[j] = z / self.Ud[j]
        for j in range(k0 - 1, -1, -1):
            x, z = w[j], h[j]
            for p in range(self.Lp[j], self.Lp[j + 1]):
                q = self.Li[p]
                f = self.Lx[p]
                x -= f * w[q]
                z -= f * h[q]
            w[j] = x / self.Ld[j]
            h[j] = z / self.Ld[j]
        for i in range(k0):
            c[i] = w[self.perm_r[i]]
            e[i] = h[self.perm_r[i]]

    cdef void _ftran(self, double* x) noexcept nogil:
        """x <- B^{-1} x: in, a vector over the samples (the constraints' rows); out,
        over the basis's slots. B0's slots are the samples (slot E0[l] holds feature
        A0[l], slot i the slack of the non-margin sample i); each eta after it is a
        column replaced (``eta_r``: its slot; the column's FTRAN, the pivot apart)."""
        cdef Py_ssize_t l, i, e, p, k0 = self.k0
        cdef double xr
        cdef double* kb = &self.kb[0]
        for l in range(k0):
            kb[l] = x[self.E0[l]]
        if k0:
            self._lu_solve(kb)
        for l in range(k0):
            self._add_col(self.A0[l], -self.sgn0[l] * kb[l], x)
        for i in range(self.n):
            if self.sig0[i] < 0:
                x[i] = -x[i]
        for l in range(k0):
            x[self.E0[l]] = kb[l]
        for e in range(self.n_eta):
            xr = x[self.eta_r[e]] / self.eta_piv[e]
            x[self.eta_r[e]] = xr
            if xr != 0.0:
                for p in range(self.eta_ptr[e], self.eta_ptr[e + 1]):
                    x[self.eta_ind[p]] -= self.eta_val[p] * xr

    cdef void _btran2(self, double* y1, double* y0) noexcept nogil:
        """(y1, y0) <- B^{-T} (y1, y0): in, over the slots; out, over the samples."""
        cdef Py_ssize_t l, i, e, p, r, k0 = self.k0, j
        cdef double s1, s0, z, a1, a0
        cdef double* kb = &self.kb[0]
        for e in range(self.n_eta - 1, -1, -1):
            r = self.eta_r[e]
            s1, s0 = y1[r], y0[r]
            for p in range(self.eta_ptr[e], self.eta_ptr[e + 1]):
                s1 -= self.eta_val[p] * y1[self.eta_ind[p]]
                s0 -= self.eta_val[p] * y0[self.eta_ind[p]]
            y1[r] = s1 / self.eta_piv[e]
            y0[r] = s0 / self.eta_piv[e]
        for i in range(self.n):
            if self.sig0[i] < 0:
                y1[i] = -y1[i]
                y0[i] = -y0[i]
        for l in range(k0):
            kb[l] = y1[self.E0[l]]
            self.kb3[l] = y0[self.E0[l]]
            y1[self.E0[l]] = 0.0
            y0[self.E0[l]] = 0.0
        for l in range(k0):
            j = self.A0[l]
            a1 = a0 = 0.0
            for p in range(self.c_ptr[j], self.c_ptr[j + 1]):
                z = self.c_data[p]
                a1 += z * y1[self.c_ind[p]]
                a0 += z * y0[self.c_ind[p]]
            kb[l] -= self.sgn0[l] * a1
            self.kb3[l] -= self.sgn0[l] * a0
        if k0:
            self._lu_solve_T2(kb, &self.kb3[0])
        for l in range(k0):
            y1[self.E0[l]] = kb[l]
            y0[self.E0[l]] = self.kb3[l]

    cdef void _lu_dual_lines(self) noexcept nogil:
        """u, v from the duals of the two cost vectors (1 on the features' slots; s_i
        on the slots of the hinge slacks of the samples below the margin)."""
        cdef Py_ssize_t i, l
        for i in range(self.n):
            self.c1[i] = 0.0
            self.c0[i] = 0.0
        for l in range(self.k):
            self.c1[self.slotA[l]] = 1.0
        for i in range(self.n):
            if self.status[i] == L_STATUS:
                self.c0[self.slotS[i]] = self.s[i]
        self._btran2(&self.c1[0], &self.c0[0])
        for l in range(self.k):
            self.u[l] = self.c1[self.E[l]]
            self.v[l] = -self.c0[self.E[l]]

    cdef void _push_eta(self, Py_ssize_t r) noexcept nogil:
        """The pivot's column (its FTRAN in ``xs``) replaces slot r: appended to the eta
        file (the caller made room)."""
        cdef Py_ssize_t i, p = self.eta_nnz, e = self.n_eta
        self.eta_r[e] = r
        self.eta_piv[e] = self.xs[r]
        for i in range(self.n):
            if i != r and self.xs[i] != 0.0:
                self.eta_ind[p] = i
                self.eta_val[p] = self.xs[i]
                p += 1
        self.eta_ptr[e + 1] = p
        self.eta_nnz = p
        self.n_eta = e + 1

    def _eta_room(self):
        """Room in the eta file for one more eta of length at most n."""
        if self.n_eta + 1 >= self.eta_r.shape[0]:
            grow = self.eta_r.shape[0]
            self.eta_r = np.concatenate([np.asarray(self.eta_r), np.zeros(grow, np.intp)])
            self.eta_piv = np.concatenate([np.asarray(self.eta_piv), np.zeros(grow)])
            self.eta_ptr = np.concatenate([np.asarray(self.eta_ptr),
                                           np.zeros(grow, np.intp)])
        if self.eta_nnz + self.n > self.eta_ind.shape[0]:
            grow = self.eta_nnz + self.n
            self.eta_ind = np.concatenate([np.asarray(self.eta_ind),
                                           np.zeros(grow, np.intp)])
            self.eta_val = np.concatenate([np.asarray(self.eta_val), np.zeros(grow)])

    cdef void _dual_lines(self) noexcept nogil:
        """u = G^T 1, v = G^T (sgn * cL[A]): the margin set's dual is lam n u - v
        (computed once per basis: a pivot or a refactorisation marks them stale)."""
        cdef int k = <int>self.k, ld = <int>self.kmax, two = 2
        cdef double a1 = 1.0, b0 = 0.0
        cdef Py_ssize_t l
        if k == 0 or self.lines_fresh:
            return
        self.lines_fresh = True
        if self.lu_mode:
            self._lu_dual_lines()
            return
        for l in range(k):
            self.rhs2[l, 0] = 1.0
            self.rhs2[l, 1] = self.sgn[l] * self.cL[self.A[l]]
        # both in one pass over G
        dgemm("T", "N", &k, &two, &k, &a1, &self.G[0, 0], &ld, &self.rhs2[0, 0], &ld,
              &b0, &self.uv[0, 0], &ld)

    cdef void _corr_lines(self) noexcept nogil:
        """g = Z_E^T u, hh = Z_E^T v (one pass over the margin rows)."""
        cdef Py_ssize_t e, i, j, p
        cdef double ue, ve, z
        cdef const double* row
        for j in range(self.d):
            self.g[j] = 0.0
            self.hh[j] = 0.0
        for e in range(self.k):
            i = self.E[e]
            ue, ve = self.u[e], self.v[e]
            if self.sparse:
                for p in range(self.r_ptr[i], self.r_ptr[i + 1]):
                    j = self.r_ind[p]
                    z = self.r_data[p]
                    self.g[j] += ue * z
                    self.hh[j] += ve * z
            else:
                row = &self.Zr[i, 0]
                for j in range(self.d):
                    self.g[j] += ue * row[j]
                    self.hh[j] += ve * row[j]

    cdef double _gap(self, double lam) noexcept nogil:
        """Relative gap of the current basis at lam (the dual lines must be current)."""
        cdef double primal = 0.0, dual = 0.0, ln = lam * self.n, x
        cdef Py_ssize_t i, l
        for l in range(self.k):
            primal += ln * self.t[l]
            dual += ln * self.u[l] - self.v[l]
        for i in range(self.n):
            # the hinge of every sample (not only those below the margin): a margin that
            # drifted to the wrong side shows in the gap
            x = 1.0 - self.m[i]
            if x > 0.0:
                primal += self.s[i] * x
            if self.status[i] == L_STATUS:
                dual += self.s[i]
        return fabs(primal - dual) / max(fabs(primal), 1e-300)

    def gap_at(self, double lam):
        cdef double gap
        with nogil:
            self._dual_lines()
            gap = self._gap(lam)
        return gap

    # ----------------------------------------------------------- dual side ---
    def next_event(self, double lam_stop):
        """``(found, lam, kind, index, sign, gap)``: the next breakpoint's entering
        variable (index: the feature, or the margin sample's position), or found=False
        when the basis is optimal down to ``lam_stop`` (or 0)."""
        cdef Py_ssize_t j, e, d = self.d, n = self.n, best = -1, gi
        cdef double top = -INFINITY, c, d1, d0, tol_f, tol_s, umax = 0.0, lam_next, tie
        cdef double gap
        cdef int kind = -1, sign = 0
        with nogil:
            self._dual_lines()
            self._corr_lines()
            tol_f = self.slope_rtol * n
            for e in range(self.k):
                umax = max(umax, fabs(self.u[e]))
            tol_s = self.slope_rtol * n * max(1.0, umax)
            # pass 1: the largest crossing
            for j in range(d):
                if self.posA[j] >= 0:
                    continue
                d0 = self.cL[j] - self.hh[j]  # h_j
                d1 = n * (1.0 - self.g[j])
                if d1 > tol_f:
                    c = d0 / d1
                    if c > top:
                        top = c
                d1 = n * (1.0 + self.g[j])
                if d1 > tol_f:
                    c = -d0 / d1
                    if c > top:
                        top = c
            for e in range(self.k):
                d1 = -n * self.u[e]
                if d1 > tol_s:
                    c = -(self.s[self.E[e]] + self.v[e]) / d1
                    if c > top:
                        top = c
                d1 = n * self.u[e]
                if d1 > tol_s:
                    c = self.v[e] / d1
                    if c > top:
                        top = c
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
            # pass 2: among the ties, the smallest global index (Bland)
            best = -1
            for j in range(d):
                if self.posA[j] >= 0:
                    continue
                d0 = self.cL[j] - self.hh[j]
                d1 = n * (1.0 - self.g[j])
                if d1 > tol_f and d0 / d1 >= tie:
                    best, kind, sign = j, FEATURE, 1
                    break
            for j in range(d):
                if best >= 0 and best <= d + j:
                    break
                if self.posA[j] >= 0:
                    continue
                d0 = self.cL[j] - self.hh[j]
                d1 = n * (1.0 + self.g[j])
                if d1 > tol_f and -d0 / d1 >= tie:
                    best, kind, sign = d + j, FEATURE, -1
                    break
            for e in range(self.k):
                d1 = -n * self.u[e]
                gi = 2 * d + self.E[e]
                if d1 > tol_s and -(self.s[self.E[e]] + self.v[e]) / d1 >= tie:
                    if best < 0 or gi < best:
                        best, kind, sign = gi, BELOW, 0
                d1 = n * self.u[e]
                gi = 2 * d + n + self.E[e]
                if d1 > tol_s and self.v[e] / d1 >= tie:
                    if best < 0 or gi < best:
                        best, kind, sign = gi, ABOVE, 0
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

    cdef void _lu_column(self, int kind, Py_ssize_t index, int sign) noexcept nogil:
        """The entering column's FTRAN into ``xs``, read as the rates alpha of the
        active features and dm of the margins (``dm`` zeroed by the caller)."""
        cdef Py_ssize_t i, l
        for i in range(self.n):
            self.xs[i] = 0.0
        if kind == FEATURE:
            self._add_col(index, <double>sign, &self.xs[0])
        else:
            # the hinge slack (column e_i) or the surplus (-e_i) of margin sample i
            self.xs[self.E[index]] = 1.0 if kind == BELOW else -1.0
        self._ftran(&self.xs[0])
        for l in range(self.k):
            self.alpha[l] = self.xs[self.slotA[l]]
        for i in range(self.n):
            if self.status[i] == L_STATUS:
                self.dm[i] = self.xs[self.slotS[i]]
            elif self.status[i] == R_STATUS:
                self.dm[i] = -self.xs[self.slotS[i]]
        if kind != FEATURE:
            # the sample leaving the margin: below at rate 1, or above
            self.dm[self.E[index]] = -1.0 if kind == BELOW else 1.0

    # --------------------------------------------------------- primal side ---
    def pivot(self, int kind, Py_ssize_t index, int sign):
        """Let the variable in, the ratio test picks the one that leaves; returns
        ``(leave_kind, leave_index)`` (a feature or a sample)."""
        cdef Py_ssize_t l, i, n = self.n, d = self.d, k = self.k, p = -1, q, r = -1
        cdef Py_ssize_t j = -1, best, gi
        cdef int ik = <int>k, ld = <int>self.kmax, one = 1
        cdef double a1 = 1.0, b0 = 0.0, scale = 0.0, ptol, theta = INFINITY, x, rate, tie
        cdef double dirn
        cdef int leave_kind = -1
        if self.lu_mode:
            self._eta_room()
        with nogil:
            # the pivot column: alpha on the active positions, dm the margins' change
            for i in range(n):
                self.dm[i] = 0.0
            if self.lu_mode:
                self._lu_column(kind, index, sign)
            elif kind == FEATURE:
                j = index
                self._add_col(j, <double>sign, &self.dm[0])
                for l in range(k):
                    self.tmpk[l] = self.dm[self.E[l]]
                if k:
                    dgemv("N", &ik, &ik, &a1, &self.G[0, 0], &ld, &self.tmpk[0], &one,
                          &b0, &self.alpha[0], &one)
            else:
                q = index
                dirn = 1.0 if kind == BELOW else -1.0
                for l in range(k):
                    self.alpha[l] = dirn * self.G[l, q]
            if not self.lu_mode:
                for l in range(k):
                    self._add_col(self.A[l], -self.sgn[l] * self.alpha[l], &self.dm[0])
            # the ratio test: t_A decreases at alpha, 1 - m (below) at dm, m - 1 (above)
            # at -dm
            for l in range(k):
                scale = max(scale, fabs(self.alpha[l]))
            for i in range(n):
                if self.status[i] != E_STATUS:
                    scale = max(scale, fabs(self.dm[i]))
            ptol = self.pivot_rtol * scale
            for l in range(k):
                if self.alpha[l] > ptol:
                    x = max(self.t[l], 0.0) / self.alpha[l]
                    if x < theta:
                        theta = x
            for i in range(n):
                if self.status[i] == L_STATUS:
                    rate, x = self.dm[i], 1.0 - self.m[i]
                elif self.status[i] == R_STATUS:
                    rate, x = -self.dm[i], self.m[i] - 1.0
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
                if self.alpha[l] > ptol and max(self.t[l], 0.0) / self.alpha[l] <= tie:
                    gi = self.A[l] if self.sgn[l] > 0 else d + self.A[l]
                    if best < 0 or gi < best:
                        best, p, leave_kind = gi, l, FEATURE
            for i in range(n):
                if self.status[i] == L_STATUS:
                    rate, x, gi = self.dm[i], 1.0 - self.m[i], 2 * d + i
                elif self.status[i] == R_STATUS:
                    rate, x, gi = -self.dm[i], self.m[i] - 1.0, 2 * d + n + i
                else:
                    continue
                if rate > ptol and max(x, 0.0) / rate <= tie:
                    if best < 0 or gi < best:
                        best, r, leave_kind = gi, i, SAMPLE
            # the step
            for l in range(k):
                self.t[l] = max(self.t[l] - theta * self.alpha[l], 0.0)
            for i in range(n):
                self.m[i] += theta * self.dm[i]
            if self.lu_mode:
                self._push_eta(self.slotA[p] if leave_kind == FEATURE else self.slotS[r])
            self._update(kind, index, sign, theta, leave_kind, p, r)
        if leave_kind == FEATURE:
            return FEATURE, int(self._left)
        return SAMPLE, int(r)

    cdef void _update(self, int kind, Py_ssize_t index, int sign, double theta,
                      int leave_kind, Py_ssize_t p, Py_ssize_t r) noexcept nogil:
        cdef Py_ssize_t l, q, i, k = self.k, last, j
        cdef int ik = <int>k, ld = <int>self.kmax, one = 1
        cdef double a1 = 1.0, b0 = 0.0, piv, sch, delta, c
        self.lines_fresh = False
        if self.lu_mode:
            self._lu_update(kind, index, sign, theta, leave_kind, p, r)
            return
        if kind == FEATURE:
            j = index
            if leave_kind == FEATURE:
                # column p of M replaced: G -= (alpha - e_p) G[p, :] / alpha_p
                self._left = self.A[p]
                piv = self.alpha[p]
                for l in range(k):
                    self.tmpk[l] = self.G[p, l]
                    self.tmpk2[l] = self.alpha[l]
                self.tmpk2[p] -= 1.0
                c = -1.0 / piv
                dger(&ik, &ik, &c, &self.tmpk2[0], &one, &self.tmpk[0], &one,
                     &self.G[0, 0], &ld)
                self.posA[self.A[p]] = -1
                self.A[p] = j
                self.sgn[p] = sign
                self.t[p] = theta
                self.posA[j] = p
            else:
                # sample r reaches the margin: bordered by a row and a column
                self._gather_row(r, &self.cvec[0])
                delta = sign * self._entry(r, j)
                if k:
                    dgemv("T", &ik, &ik, &a1, &self.G[0, 0], &ld, &self.cvec[0], &one,
                          &b0, &self.cG[0], &one)
                sch = delta
                for l in range(k):
                    sch -= self.cvec[l] * self.alpha[l]
                if k:
                    c = 1.0 / sch
                    dger(&ik, &ik, &c, &self.alpha[0], &one, &self.cG[0], &one,
                         &self.G[0, 0], &ld)
                for l in range(k):
                    self.G[l, k] = -self.alpha[l] / sch
                    self.G[k, l] = -self.cG[l] / sch
                self.G[k, k] = 1.0 / sch
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
                # row q and column p of M removed: G -= G[:, q] G[p, :] / G[p, q], then
                # the last row and column take the freed places
                self._left = self.A[p]
                piv = self.G[p, q]
                for l in range(k):
                    self.tmpk[l] = self.G[l, q]
                    self.tmpk2[l] = self.G[p, l]
                c = -1.0 / piv
                dger(&ik, &ik, &c, &self.tmpk[0], &one, &self.tmpk2[0], &one,
                     &self.G[0, 0], &ld)
                last = k - 1
                for l in range(k):
                    self.G[p, l] = self.G[last, l]
                for l in range(k):
                    self.G[l, q] = self.G[l, last]
                self.posA[self.A[p]] = -1
                self.A[p] = self.A[last]
                self.sgn[p] = self.sgn[last]
                self.t[p] = self.t[last]
                if p != last:
                    self.posA[self.A[p]] = p
                self.E[q] = self.E[last]
                self.k = last
            else:
                # row q of M replaced by sample r's
                self._gather_row(r, &self.cvec[0])
                dgemv("T", &ik, &ik, &a1, &self.G[0, 0], &ld, &self.cvec[0], &one,
                      &b0, &self.cG[0], &one)
                piv = self.cG[q]
                for l in range(k):
                    self.tmpk[l] = self.G[l, q]
                    self.tmpk2[l] = self.cG[l]
                self.tmpk2[q] -= 1.0
                c = -1.0 / piv
                dger(&ik, &ik, &c, &self.tmpk[0], &one, &self.tmpk2[0], &one,
                     &self.G[0, 0], &ld)
                self._leave_slack(r)
                self.E[q] = r
            if kind == BELOW:
                self.status[i] = L_STATUS
                self._add_row(i, self.s[i], &self.cL[0])
            else:
                self.status[i] = R_STATUS

    cdef void _lu_update(self, int kind, Py_ssize_t index, int sign, double theta,
                         int leave_kind, Py_ssize_t p, Py_ssize_t r) noexcept nogil:
        """The basis after the pivot with the sparse factor (the eta is already in the
        file): the entering variable takes the leaving one's slot; the positions in A
        and E move as with the dense inverse."""
        cdef Py_ssize_t q, i, k = self.k, last, j
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
                self.slotA[k] = self.slotS[r]
                self.slotS[r] = -1
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
                self.slotS[i] = self.slotA[p]
                last = k - 1
                self.posA[self.A[p]] = -1
                self.A[p] = self.A[last]
                self.sgn[p] = self.sgn[last]
                self.t[p] = self.t[last]
                self.slotA[p] = self.slotA[last]
                if p != last:
                    self.posA[self.A[p]] = p
                self.E[q] = self.E[last]
                self.k = last
            else:
                self.slotS[i] = self.slotS[r]
                self.slotS[r] = -1
                self._leave_slack(r)
                self.E[q] = r
            if kind == BELOW:
                self.status[i] = L_STATUS
                self._add_row(i, self.s[i], &self.cL[0])
            else:
                self.status[i] = R_STATUS

    cdef void _leave_slack(self, Py_ssize_t r) noexcept nogil:
        if self.status[r] == L_STATUS:
            self._add_row(r, -self.s[r], &self.cL[0])
        self.status[r] = E_STATUS
        self.m[r] = 1.0

    # ---------------------------------------------------------- refactorise ---
    def refactor(self):
        """The basis inverse (LAPACK LU), the primal values, the margins and
        :math:`Z_L^\\top s_L` from scratch; returns the largest relative drift of the
        maintained values. Raises if the margin matrix is singular."""
        if self.lu_mode:
            return self._lu_refactor()
        cdef Py_ssize_t k = self.k, l, e, i
        cdef int ik = <int>k, ld = <int>self.kmax, info = 0, lwork = <int>self.work.shape[0]
        cdef double drift = 0.0, scale = 1.0, x
        cdef int[::1] ipiv = np.zeros(max(k, 1), dtype=np.intc)
        cdef double[::1] old_t = np.asarray(self.t).copy()
        cdef double[::1] old_m = np.asarray(self.m).copy()
        self.lines_fresh = False
        with nogil:
            for l in range(k):
                for e in range(k):
                    self.G[e, l] = self._entry(self.E[e], self.A[l]) * self.sgn[l]
            if k:
                dgetrf(&ik, &ik, &self.G[0, 0], &ld, &ipiv[0], &info)
        if info != 0:
            raise RuntimeError("the LP-SVM homotopy's margin matrix is singular")
        with nogil:
            if k:
                dgetri(&ik, &self.G[0, 0], &ld, &ipiv[0], &self.work[0], &lwork, &info)
            for l in range(k):
                x = 0.0
                for e in range(k):
                    x += self.G[l, e]
                scale = max(scale, fabs(x))
                self.t[l] = x
            for l in range(k):
                drift = max(drift, fabs(self.t[l] - old_t[l]) / scale)
            for i in range(self.n):
                self.m[i] = 0.0
            for l in range(k):
                self._add_col(self.A[l], self.sgn[l] * self.t[l], &self.m[0])
            scale = 1.0
            for i in range(self.n):
                scale = max(scale, fabs(self.m[i]))
            for i in range(self.n):
                drift = max(drift, fabs(self.m[i] - old_m[i]) / scale)
        if info != 0:
            raise RuntimeError("the LP-SVM homotopy's margin matrix is singular")
        return drift, self.refresh_below()

    def _lu_refactor(self):
        """The sparse factor from scratch: SuperLU of the margin matrix (COLAMD column
        order, partial pivoting), the slots renumbered as the samples, the eta file
        emptied; then the primal values, margins and :math:`Z_L^\\top s_L` as with the
        dense inverse."""
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        cdef Py_ssize_t k = self.k, l, i
        cdef double drift = 0.0, scale = 1.0
        cdef double[::1] old_t = np.asarray(self.t).copy()
        cdef double[::1] old_m = np.asarray(self.m).copy()
        self.lines_fresh = False
        A = np.array(self.A_arr[:k], dtype=np.intp)
        E = np.array(self.E_arr[:k], dtype=np.intp)
        sgn = np.array(self.sgn_arr[:k], dtype=np.float64)
        lu = None
        if k:
            M = sp.csc_matrix(self.Zcsr[E][:, A] @ sp.diags(sgn))
            try:
                lu = splu(M, permc_spec="COLAMD", relax=1, panel_size=1)
            except RuntimeError as exc:
                raise RuntimeError("the LP-SVM homotopy's margin matrix is "
                                   "singular") from exc
        self._set_factor(A, E, sgn, lu)
        sig = np.where(np.asarray(self.status_arr) == R_STATUS, -1, 1).astype(np.int8)
        self.sig0 = sig
        slotS = np.arange(self.n, dtype=np.intp)
        slotS[E] = -1
        self.slotS = slotS
        np.asarray(self.slotA)[:k] = E
        self.n_eta = self.eta_nnz = 0
        with nogil:
            for l in range(k):
                self.kb[l] = 1.0
            if k:
                self._lu_solve(&self.kb[0])
            for l in range(k):
                self.t[l] = self.kb[l]
                scale = max(scale, fabs(self.kb[l]))
            for l in range(k):
                drift = max(drift, fabs(self.t[l] - old_t[l]) / scale)
            for i in range(self.n):
                self.m[i] = 0.0
            for l in range(k):
                self._add_col(self.A[l], self.sgn[l] * self.t[l], &self.m[0])
            scale = 1.0
            for i in range(self.n):
                scale = max(scale, fabs(self.m[i]))
            for i in range(self.n):
                drift = max(drift, fabs(self.m[i] - old_m[i]) / scale)
        return drift, self.refresh_below()

    def basis_inverse(self):
        """The inverse of the current margin matrix (rows: the positions in A,
        columns: those in E), from the dense buffer or, with the sparse factor, by a
        solve with the basis per column (for tests)."""
        k = self.k
        if not self.lu_mode:
            return np.array(self.G_arr[:k, :k])
        G = np.zeros((k, k))
        slots = np.asarray(self.slotA)[:k]
        for e in range(k):
            x = np.zeros(self.n)
            x[self.E_arr[e]] = 1.0
            self._ftran_py(x)
            G[:, e] = x[slots]
        return G

    def _ftran_py(self, double[::1] x):
        with nogil:
            self._ftran(&x[0])

    def check_inverse(self):
        """Largest entry of ``G M - I`` (for tests)."""
        k = self.k
        A = self.A_arr[:k]
        E = self.E_arr[:k]
        M = np.array([[self._entry(E[e], A[l]) * self.sgn_arr[l] for l in range(k)]
                      for e in range(k)]).reshape(k, k)
        return float(np.abs(self.basis_inverse() @ M - np.eye(k)).max(initial=0.0))
