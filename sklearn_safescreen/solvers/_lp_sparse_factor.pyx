"""Sparse factor of the LP-SVM homotopy's basis (``factor="lu"`` of
:func:`.lp_homotopy.make_core`), in product form.

The basis B of the homotopy's LP has one slot per sample (a constraint's row): B0, the
basis at the last refactorisation, puts active feature ``A0[l]`` (sign ``sgn0[l]``) in
the slot of margin sample ``E0[l]`` and the hinge slack (or, above the margin, the
surplus: ``sig0 = -1``) of every other sample in its own slot. Solves with B0 reduce to
solves with its margin matrix ``M0 = Z[E0][:, A0] diag(sgn0)``, factored by SuperLU
(``Pr M0 Pc = L U``, COLAMD order, partial pivoting; the triangular factors kept as their
diagonals and strict parts, CSC); each pivot since appends an eta (the entering column's
FTRAN replacing one slot), so that a solve with B costs what the factor's and the etas'
nonzeros do, never ``k^2``. :attr:`SparseFactor.slotA` and :attr:`SparseFactor.slotS`
map the active positions and the non-margin samples to their slots.

Its own module, apart from the pricing and ratio tests that use it
(:mod:`._lp_homotopy_fast`): what is here is linear algebra on the basis, with no notion
of the path. The core cimports it (``_lp_sparse_factor.pxd``), so that its solves are C
calls made without the GIL; its products with Z are those of :mod:`._lp_zmatrix`.
"""

import numpy as np


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


cdef class SparseFactor:
    """The factor of a basis of the homotopy on ``Z`` (sparse), for supports of at
    most ``kmax`` features; starts at the basis of w = 0 (every hinge slack basic:
    B0 = I, no eta)."""

    def __init__(self, ZMatrix Z, Py_ssize_t kmax):
        if not Z.sparse:
            raise ValueError("the sparse factor needs a sparse Z")
        n = Z.n
        self.n = n
        self.Z = Z
        self.k0 = self.n_eta = self.eta_nnz = self.lu_nnz = 0
        self.eta_fill = 1.0
        self.slotA = np.zeros(kmax, dtype=np.intp)
        self.slotS = np.arange(n, dtype=np.intp)
        self.sig0 = np.ones(n, dtype=np.int8)
        self.kb, self.kb2, self.kb3, self.kb4 = (np.zeros(kmax), np.zeros(kmax),
                                                 np.zeros(kmax), np.zeros(kmax))
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

    def refactorise(self, A, E, sgn, above):
        """The factor from scratch at the basis of support ``A`` (signs ``sgn``), margin
        set ``E`` and the samples ``above`` the margin: SuperLU of the margin matrix, the
        slots renumbered as the samples, the eta file emptied. Raises if the margin
        matrix is singular."""
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        lu = None
        if len(A):
            M = sp.csc_matrix(self.Z.csr[E][:, A] @ sp.diags(sgn))
            try:
                lu = splu(M, permc_spec="COLAMD", relax=1, panel_size=1)
            except RuntimeError as exc:
                raise RuntimeError("the LP-SVM homotopy's margin matrix is "
                                   "singular") from exc
        self._set_factor(A, E, sgn, lu)
        self.sig0 = np.where(above, -1, 1).astype(np.int8)
        slotS = np.arange(self.n, dtype=np.intp)
        slotS[E] = -1
        self.slotS = slotS
        np.asarray(self.slotA)[:len(A)] = E
        self.n_eta = self.eta_nnz = 0

    def full(self):
        """Whether the eta file has grown past the factor's own size (with the margin
        products of B0, a solve with B0 costs about ``lu_nnz + nnz(Z[:, A0]) + n``; each
        eta adds its length to every later solve), so that a fresh factor is cheaper
        than carrying on."""
        return self.eta_nnz > self.eta_fill * (2 * (self.lu_nnz + self.n) + 4 * self.n)

    def make_room(self):
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

    cdef void solve(self, double* b) noexcept nogil:
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

    cdef void _solve_T2(self, double* c, double* e) noexcept nogil:
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

    cdef void ftran(self, double* x) noexcept nogil:
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
            self.solve(kb)
        for l in range(k0):
            self.Z.add_col(self.A0[l], -self.sgn0[l] * kb[l], x)
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

    cdef void btran2(self, double* y1, double* y0) noexcept nogil:
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
            for p in range(self.Z.c_ptr[j], self.Z.c_ptr[j + 1]):
                z = self.Z.c_data[p]
                a1 += z * y1[self.Z.c_ind[p]]
                a0 += z * y0[self.Z.c_ind[p]]
            kb[l] -= self.sgn0[l] * a1
            self.kb3[l] -= self.sgn0[l] * a0
        if k0:
            self._solve_T2(kb, &self.kb3[0])
        for l in range(k0):
            y1[self.E0[l]] = kb[l]
            y0[self.E0[l]] = self.kb3[l]

    cdef void push_eta(self, Py_ssize_t r, const double* xs) noexcept nogil:
        """The pivot's column (its FTRAN ``xs``) replaces slot r: appended to the eta
        file (after :meth:`make_room`)."""
        cdef Py_ssize_t i, p = self.eta_nnz, e = self.n_eta
        self.eta_r[e] = r
        self.eta_piv[e] = xs[r]
        for i in range(self.n):
            if i != r and xs[i] != 0.0:
                self.eta_ind[p] = i
                self.eta_val[p] = xs[i]
                p += 1
        self.eta_ptr[e + 1] = p
        self.eta_nnz = p
        self.n_eta = e + 1

    cdef void move_slots(self, bint enter_feature, bint leave_feature, Py_ssize_t p,
                         Py_ssize_t r, Py_ssize_t i, Py_ssize_t k) noexcept nogil:
        """The slots after a pivot (its eta pushed): the entering variable takes the
        leaving one's slot. ``p``: the leaving feature's position; ``r``: the sample
        reaching the margin; ``i``: the sample leaving it; ``k``: the support's size
        before the pivot (whose last position fills a removed one)."""
        if enter_feature:
            if not leave_feature:
                # the new feature, at position k, in sample r's slack's slot
                self.slotA[k] = self.slotS[r]
                self.slotS[r] = -1
        elif leave_feature:
            # sample i's slack in the leaving feature's slot; the last position moves
            self.slotS[i] = self.slotA[p]
            self.slotA[p] = self.slotA[k - 1]
        else:
            self.slotS[i] = self.slotS[r]
            self.slotS[r] = -1
