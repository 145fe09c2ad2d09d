"""Sparse factor of the LP-SVM homotopy's basis (``factor="lu"`` of
:func:`.lp_homotopy.make_core`), in product form over the samples the updates touched.

The basis B of the homotopy's LP has one slot per sample (a constraint's row): B0, the
basis at the last refactorisation, puts active feature ``A0[l]`` (sign ``sgn0[l]``) in
the slot of margin sample ``E0[l]`` and the hinge slack (or, above the margin, the
surplus: ``sig0 = -1``) of every other sample in its own slot. Its margin matrix
``M0 = Z[E0][:, A0] diag(sgn0)`` is factored by SuperLU (``Pr M0 Pc = L U``, COLAMD
order, partial pivoting; the triangular factors kept as their diagonals and strict
parts, CSC, and, where the fill makes their trailing block mostly full, that block dense
for BLAS). :attr:`SparseFactor.slotA` and :attr:`SparseFactor.slotS` map the active
positions and the non-margin samples to their slots.

The set S of the touched samples starts as E0 and grows by the sample whose slack a
pivot takes out of its own slot. Every other sample (F) still has its slack alone in its
own slot, and no column in a slot of S has an entry in the rows of F other than a
feature's, so that B is block lower triangular::

    B = [[B_SS, 0], [B_FS, diag(sig0_F)]]

A solve with B is a solve with B_SS and a product with the active features' columns over
the rows of F. B_SS is M0 followed by one update per pivot, in the pivot's order: a
column of S replaced (an eta over S), or S bordered by the sample r reaching the margin
(its row of the active features, the entering column's solve over S, and the Schur
complement, the pivot). The updates are as long as S, not as the number of samples:
with a small support most of the samples stay in F, and the updates (and so every later
solve) stay short, so that the factor lasts many pivots between refactorisations.

Its own module, apart from the pricing and ratio tests that use it
(:mod:`._lp_homotopy_fast`): what is here is linear algebra on the basis, with no notion
of the path. The core cimports it (``_lp_sparse_factor.pxd``), so that its solves are C
calls made without the GIL; its products with Z read :mod:`._lp_zmatrix`'s arrays.
"""

from scipy.linalg.cython_blas cimport dtrsv

import numpy as np

#: A refactorisation (the ordering and SuperLU's factor of the margin matrix, the core's
#: values recomputed over the samples) in passes over update entries, per non-zero of
#: the factor and per sample: the order of magnitude of a sparse LU factor's work
#: against one indexed multiply-add, for the count-based rule of
#: :meth:`SparseFactor.full`.
REFACTOR_PASSES = 50


#: Density from which the factors' trailing block is kept dense (and solved by BLAS):
#: the fill of the margin matrix's LU gathers in its last rows and columns.
DENSE_TAIL = 0.85
#: Smallest trailing block kept dense.
DENSE_TAIL_MIN = 16


def _entries(T):
    """A CSC factor's entries as ``(rows, cols)`` (read from its arrays, no copy of
    the matrix)."""
    rows = T.indices.astype(np.intp)
    cols = np.repeat(np.arange(T.shape[1], dtype=np.intp), np.diff(T.indptr))
    return rows, cols


def _tail_start(Lrc, Urc, k):
    """Where the factors' dense trailing block starts: the first j0 whose block
    ``[j0:, j0:]`` of L and U (their entries ``(rows, cols)``) together is at least
    ``DENSE_TAIL`` full (k if none, or if smaller than ``DENSE_TAIL_MIN``). Counts
    only."""
    if k < DENSE_TAIL_MIN:
        return k
    # an entry lies in the block from j0 on iff min(row, col) >= j0; the diagonal is
    # in both factors, and counted once
    first = np.concatenate([np.minimum(*Lrc), np.minimum(*Urc)])
    counts = np.bincount(first, minlength=k)[:k] - 1
    inside = np.cumsum(counts[::-1])[::-1]
    m = k - np.arange(k)
    ok = np.flatnonzero((inside >= DENSE_TAIL * m * m) & (m >= DENSE_TAIL_MIN))
    return int(ok[0]) if len(ok) else k


def _split_diagonal(T, rc, bint lower, Py_ssize_t j0):
    """A triangular CSC factor (its entries ``rc``, :func:`_entries`) as its
    diagonal, its strict part outside the trailing block from ``j0`` (CSC arrays) and
    that block, dense (Fortran order)."""
    k = T.shape[0]
    rows, cols = rc
    diag = np.zeros(k)
    on = rows == cols
    diag[cols[on]] = T.data[on]
    tail = (rows >= j0) & (cols >= j0)
    dense = np.zeros((k - j0, k - j0), order="F")
    dense[rows[tail] - j0, cols[tail] - j0] = T.data[tail]
    strict = (rows > cols if lower else rows < cols) & ~tail
    ptr = np.zeros(k + 1, dtype=np.intp)
    np.cumsum(np.bincount(cols[strict], minlength=k), out=ptr[1:])
    return (diag, ptr, np.ascontiguousarray(rows[strict]),
            np.ascontiguousarray(T.data[strict], dtype=np.float64), dense)


cdef class SparseFactor:
    """The factor of a basis of the homotopy on ``Z`` (sparse), for supports of at
    most ``kmax`` features; starts at the basis of w = 0 (every hinge slack basic:
    B0 = I, S empty, no update)."""

    def __init__(self, ZMatrix Z, Py_ssize_t kmax):
        if not Z.sparse:
            raise ValueError("the sparse factor needs a sparse Z")
        n = Z.n
        self.n = n
        self.d = Z.d
        self.Z = Z
        self.k0 = self.n_eta = self.eta_nnz = self.lu_nnz = self.n_touched = 0
        self.eta_work = 0
        self.eta_fill = 1.0
        row_nnz = np.diff(np.asarray(Z.r_ptr))
        self.max_row = int(row_nnz.max(initial=0))
        self.slotA = np.zeros(kmax, dtype=np.intp)
        self.slotS = np.arange(n, dtype=np.intp)
        self.sig0 = np.ones(n, dtype=np.int8)
        self.touched = np.zeros(n, dtype=np.int8)
        self.feat_of_slot = np.full(n, -1, dtype=np.intp)
        self.coef_of_slot = np.zeros(n)
        self.slot_of_feat = np.full(self.d, -1, dtype=np.intp)
        self.kb, self.kb2, self.kb3, self.kb4 = (np.zeros(kmax), np.zeros(kmax),
                                                 np.zeros(kmax), np.zeros(kmax))
        self.nb1, self.nb0 = np.zeros(n), np.zeros(n)
        self._set_factor(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp),
                         np.zeros(0), None)
        self.eta_r = np.zeros(64, dtype=np.intp)
        self.eta_kind = np.zeros(64, dtype=np.int8)
        self.eta_ptr = np.zeros(65, dtype=np.intp)
        self.eta_cptr = np.zeros(65, dtype=np.intp)
        self.eta_piv = np.zeros(64)
        self.eta_ind = np.zeros(4 * n + 16, dtype=np.intp)
        self.eta_val = np.zeros(4 * n + 16)
        self.c_ind = np.zeros(4 * self.max_row + 16, dtype=np.intp)
        self.c_val = np.zeros(4 * self.max_row + 16)

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
            self.j0 = 0
            self.DL = self.DU = np.zeros((1, 1), order="F")
            return
        L, U = lu.L, lu.U
        Lrc, Urc = _entries(L), _entries(U)
        j0 = _tail_start(Lrc, Urc, k0)
        self.j0 = j0
        self.Ld, self.Lp, self.Li, self.Lx, DL = _split_diagonal(L, Lrc, True, j0)
        self.Ud, self.Up, self.Ui, self.Ux, DU = _split_diagonal(U, Urc, False, j0)
        # never an empty buffer (BLAS is not called on one, but its address is taken)
        self.DL = DL if k0 > j0 else np.zeros((1, 1), order="F")
        self.DU = DU if k0 > j0 else np.zeros((1, 1), order="F")
        self.perm_r = np.ascontiguousarray(lu.perm_r, dtype=np.intp)
        self.perm_c = np.ascontiguousarray(lu.perm_c, dtype=np.intp)
        self.lu_nnz = L.nnz + U.nnz

    def refactorise(self, A, E, sgn, above):
        """The factor from scratch at the basis of support ``A`` (signs ``sgn``), margin
        set ``E`` and the samples ``above`` the margin: SuperLU of the margin matrix, the
        slots renumbered as the samples, S back to E, no update. Raises if the margin
        matrix is singular."""
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        A = np.asarray(A, dtype=np.intp)
        E = np.asarray(E, dtype=np.intp)
        sgn = np.asarray(sgn, dtype=np.float64)
        lu = None
        if len(A):
            M = self._margin_matrix(A, E, sgn)
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
        touched = np.zeros(self.n, dtype=np.int8)
        touched[E] = 1
        self.touched = touched
        self.n_touched = len(E)
        feat_of_slot = np.full(self.n, -1, dtype=np.intp)
        feat_of_slot[E] = A
        self.feat_of_slot = feat_of_slot
        coef_of_slot = np.zeros(self.n)
        coef_of_slot[E] = sgn
        self.coef_of_slot = coef_of_slot
        slot_of_feat = np.full(self.d, -1, dtype=np.intp)
        slot_of_feat[A] = E
        self.slot_of_feat = slot_of_feat
        self.n_eta = self.eta_nnz = self.eta_work = 0

    def _margin_matrix(self, A, E, sgn):
        """``M0 = Z[E][:, A] diag(sgn)``, CSC with sorted rows, gathered from Z's
        columns ``A`` through the samples' positions in ``E`` (no copy of Z's rows)."""
        import scipy.sparse as sp

        k = len(A)
        cptr = np.asarray(self.Z.c_ptr)
        starts = cptr[A]
        lens = cptr[A + 1] - starts
        offsets = np.zeros(k, dtype=np.intp)
        np.cumsum(lens[:-1], out=offsets[1:])
        at = np.arange(int(lens.sum()), dtype=np.intp) + np.repeat(starts - offsets,
                                                                   lens)
        pos = np.full(self.n, -1, dtype=np.intp)
        pos[E] = np.arange(k, dtype=np.intp)
        rows = pos[np.asarray(self.Z.c_ind)[at]]
        keep = rows >= 0
        cols = np.repeat(np.arange(k, dtype=np.intp), lens)[keep]
        indptr = np.zeros(k + 1, dtype=np.intp)
        np.cumsum(np.bincount(cols, minlength=k), out=indptr[1:])
        M = sp.csc_matrix((np.asarray(self.Z.c_data)[at][keep] * sgn[cols], rows[keep],
                           indptr), shape=(k, k))
        # as the matrix product would make it: no explicit zero
        M.eliminate_zeros()
        M.sort_indices()
        return M

    def full(self):
        """Whether a fresh factor is cheaper than carrying on: every update adds its
        length to each later solve, so that the updates' cost per pivot grows while a
        refactorisation's, spread over the pivots since the last one, falls; the
        factor is full when the next pivot would cost more than that average (the
        updates read so far and a refactorisation, in passes over update entries).
        A count of non-zeros, never a clock: the same path refactorises at the same
        pivots on any machine."""
        return self.n_eta > 0 and self.eta_nnz * self.n_eta > (
            self.eta_fill * REFACTOR_PASSES * (self.lu_nnz + 2 * self.n) + self.eta_work)

    def make_room(self):
        """Room for one more update: an eta of length at most n, and a bordering row of
        at most the longest row of Z."""
        cdef Py_ssize_t w_nnz = self.eta_ptr[self.n_eta]
        cdef Py_ssize_t c_nnz = self.eta_cptr[self.n_eta]
        if self.n_eta + 1 >= self.eta_r.shape[0]:
            grow = self.eta_r.shape[0]
            self.eta_r = np.concatenate([np.asarray(self.eta_r), np.zeros(grow, np.intp)])
            self.eta_kind = np.concatenate([np.asarray(self.eta_kind),
                                            np.zeros(grow, np.int8)])
            self.eta_piv = np.concatenate([np.asarray(self.eta_piv), np.zeros(grow)])
            self.eta_ptr = np.concatenate([np.asarray(self.eta_ptr),
                                           np.zeros(grow, np.intp)])
            self.eta_cptr = np.concatenate([np.asarray(self.eta_cptr),
                                            np.zeros(grow, np.intp)])
        if w_nnz + self.n > self.eta_ind.shape[0]:
            grow = w_nnz + self.n
            self.eta_ind = np.concatenate([np.asarray(self.eta_ind),
                                           np.zeros(grow, np.intp)])
            self.eta_val = np.concatenate([np.asarray(self.eta_val), np.zeros(grow)])
        if c_nnz + self.max_row > self.c_ind.shape[0]:
            grow = c_nnz + self.max_row
            self.c_ind = np.concatenate([np.asarray(self.c_ind), np.zeros(grow, np.intp)])
            self.c_val = np.concatenate([np.asarray(self.c_val), np.zeros(grow)])

    # The inner loops read the arrays through local pointers: the extensions build
    # without strict aliasing, so that a store through a double* would otherwise
    # reload every memoryview's data pointer.

    cdef void solve(self, double* b) noexcept nogil:
        """b <- M0^{-1} b (Pr M0 Pc = L U: L U w = Pr b, then b = Pc w); the trailing
        blocks of L and U by BLAS."""
        cdef Py_ssize_t i, j, p, k0 = self.k0, j0 = self.j0
        cdef int m = <int>(k0 - j0), one = 1
        cdef double x
        cdef double* w = &self.kb2[0]
        cdef const Py_ssize_t* Lp = &self.Lp[0]
        cdef const Py_ssize_t* Li = &self.Li[0]
        cdef const double* Lx = &self.Lx[0]
        cdef const double* Ld = &self.Ld[0]
        cdef const Py_ssize_t* Up = &self.Up[0]
        cdef const Py_ssize_t* Ui = &self.Ui[0]
        cdef const double* Ux = &self.Ux[0]
        cdef const double* Ud = &self.Ud[0]
        for i in range(k0):
            w[self.perm_r[i]] = b[i]
        for j in range(j0):
            x = w[j] / Ld[j]
            w[j] = x
            if x != 0.0:
                for p in range(Lp[j], Lp[j + 1]):
                    w[Li[p]] -= Lx[p] * x
        if m > 0:
            dtrsv(b"L", b"N", b"N", &m, &self.DL[0, 0], &m, &w[j0], &one)
            dtrsv(b"U", b"N", b"N", &m, &self.DU[0, 0], &m, &w[j0], &one)
        for j in range(k0 - 1, -1, -1):
            if j < j0:
                x = w[j] / Ud[j]
                w[j] = x
            else:
                x = w[j]
            if x != 0.0:
                for p in range(Up[j], Up[j + 1]):
                    w[Ui[p]] -= Ux[p] * x
        for i in range(k0):
            b[i] = w[self.perm_c[i]]

    cdef void _solve_T2(self, double* c, double* e) noexcept nogil:
        """(c, e) <- M0^{-T} (c, e): both right-hand sides in one pass over the sparse
        parts of the factors; the trailing blocks by BLAS, one right-hand side at a
        time."""
        cdef Py_ssize_t i, j, p, q, k0 = self.k0, j0 = self.j0
        cdef int m = <int>(k0 - j0), one = 1
        cdef double x, z, f
        cdef double* w = &self.kb2[0]
        cdef double* h = &self.kb4[0]
        cdef const Py_ssize_t* Lp = &self.Lp[0]
        cdef const Py_ssize_t* Li = &self.Li[0]
        cdef const double* Lx = &self.Lx[0]
        cdef const double* Ld = &self.Ld[0]
        cdef const Py_ssize_t* Up = &self.Up[0]
        cdef const Py_ssize_t* Ui = &self.Ui[0]
        cdef const double* Ux = &self.Ux[0]
        cdef const double* Ud = &self.Ud[0]
        for i in range(k0):
            w[self.perm_c[i]] = c[i]
            h[self.perm_c[i]] = e[i]
        # U^T: the leading columns one by one; the trailing ones lose their products
        # with the leading values, then BLAS solves their block
        for j in range(k0):
            x, z = w[j], h[j]
            for p in range(Up[j], Up[j + 1]):
                q = Ui[p]
                f = Ux[p]
                x -= f * w[q]
                z -= f * h[q]
            if j < j0:
                w[j] = x / Ud[j]
                h[j] = z / Ud[j]
            else:
                w[j] = x
                h[j] = z
        if m > 0:
            dtrsv(b"U", b"T", b"N", &m, &self.DU[0, 0], &m, &w[j0], &one)
            dtrsv(b"U", b"T", b"N", &m, &self.DU[0, 0], &m, &h[j0], &one)
            dtrsv(b"L", b"T", b"N", &m, &self.DL[0, 0], &m, &w[j0], &one)
            dtrsv(b"L", b"T", b"N", &m, &self.DL[0, 0], &m, &h[j0], &one)
        for j in range(j0 - 1, -1, -1):
            x, z = w[j], h[j]
            for p in range(Lp[j], Lp[j + 1]):
                q = Li[p]
                f = Lx[p]
                x -= f * w[q]
                z -= f * h[q]
            w[j] = x / Ld[j]
            h[j] = z / Ld[j]
        for i in range(k0):
            c[i] = w[self.perm_r[i]]
            e[i] = h[self.perm_r[i]]

    cdef void _solve_T1(self, double* c) noexcept nogil:
        """c <- M0^{-T} c: :meth:`_solve_T2` with one right-hand side (a row of the
        basis inverse, for the dual lines' update)."""
        cdef Py_ssize_t i, j, p, k0 = self.k0, j0 = self.j0
        cdef int m = <int>(k0 - j0), one = 1
        cdef double x
        cdef double* w = &self.kb2[0]
        cdef const Py_ssize_t* Lp = &self.Lp[0]
        cdef const Py_ssize_t* Li = &self.Li[0]
        cdef const double* Lx = &self.Lx[0]
        cdef const double* Ld = &self.Ld[0]
        cdef const Py_ssize_t* Up = &self.Up[0]
        cdef const Py_ssize_t* Ui = &self.Ui[0]
        cdef const double* Ux = &self.Ux[0]
        cdef const double* Ud = &self.Ud[0]
        for i in range(k0):
            w[self.perm_c[i]] = c[i]
        for j in range(k0):
            x = w[j]
            for p in range(Up[j], Up[j + 1]):
                x -= Ux[p] * w[Ui[p]]
            if j < j0:
                w[j] = x / Ud[j]
            else:
                w[j] = x
        if m > 0:
            dtrsv(b"U", b"T", b"N", &m, &self.DU[0, 0], &m, &w[j0], &one)
            dtrsv(b"L", b"T", b"N", &m, &self.DL[0, 0], &m, &w[j0], &one)
        for j in range(j0 - 1, -1, -1):
            x = w[j]
            for p in range(Lp[j], Lp[j + 1]):
                x -= Lx[p] * w[Li[p]]
            w[j] = x / Ld[j]
        for i in range(k0):
            c[i] = w[self.perm_r[i]]

    cdef void ftran(self, double* x) noexcept nogil:
        """x <- B^{-1} x: in, a vector over the samples (the constraints' rows); out,
        over the basis's slots. First over S: M0 on E0, then each update in its order
        (an eta: slot r divided by the pivot, the eta's multiple subtracted; a border:
        sample r's row of the earlier slots subtracted first). The rows of F are left
        alone meanwhile; last, they lose the active features' columns times their
        values and take their slack's sign."""
        cdef Py_ssize_t l, i, e, p, r, s, j, n = self.n, k0 = self.k0
        cdef double xr
        cdef double* kb = &self.kb[0]
        for l in range(k0):
            kb[l] = x[self.E0[l]]
        if k0:
            self.solve(kb)
        for l in range(k0):
            x[self.E0[l]] = kb[l]
        cdef const Py_ssize_t* eptr = &self.eta_ptr[0]
        cdef const Py_ssize_t* eind = &self.eta_ind[0]
        cdef const double* eval = &self.eta_val[0]
        cdef const Py_ssize_t* bptr = &self.eta_cptr[0]
        cdef const Py_ssize_t* bind = &self.c_ind[0]
        cdef const double* bval = &self.c_val[0]
        for e in range(self.n_eta):
            r = self.eta_r[e]
            xr = x[r]
            if self.eta_kind[e]:
                for p in range(bptr[e], bptr[e + 1]):
                    xr -= bval[p] * x[bind[p]]
            xr = xr / self.eta_piv[e]
            x[r] = xr
            if xr != 0.0:
                for p in range(eptr[e], eptr[e + 1]):
                    x[eind[p]] -= eval[p] * xr
        if self.n_touched == n or self.Z.c_data.shape[0] == 0:
            return
        # the active features' columns gathered over every row (no branch on F in the
        # inner loop), then kept on the rows of F only
        cdef const Py_ssize_t* cptr = &self.Z.c_ptr[0]
        cdef const Py_ssize_t* cind = &self.Z.c_ind[0]
        cdef const double* cdat = &self.Z.c_data[0]
        cdef double* acc = &self.nb1[0]
        for s in range(n):
            j = self.feat_of_slot[s]
            if j < 0:
                continue
            xr = self.coef_of_slot[s] * x[s]
            if xr == 0.0:
                continue
            for p in range(cptr[j], cptr[j + 1]):
                acc[cind[p]] += cdat[p] * xr
        for i in range(n):
            if not self.touched[i]:
                xr = x[i] - acc[i]
                x[i] = -xr if self.sig0[i] < 0 else xr
            acc[i] = 0.0

    cdef void btran2(self, double* y1, double* y0) noexcept nogil:
        """(y1, y0) <- B^{-T} (y1, y0): in, over the slots; out, over the samples. The
        rows of F first (their slack's sign; then the active features' slots lose
        their columns' products with them), then the updates over S from the last (a
        border also subtracts its row, times the new value, from the earlier slots),
        then M0^T on E0."""
        cdef Py_ssize_t l, i, e, p, r, s, j, n = self.n, k0 = self.k0, q
        cdef double s1, s0, z, a1, a0, f
        cdef double* kb = &self.kb[0]
        cdef double* kb3 = &self.kb3[0]
        cdef const Py_ssize_t* cptr
        cdef const Py_ssize_t* cind
        cdef const double* cdat
        cdef double* f1 = &self.nb1[0]
        cdef double* f0 = &self.nb0[0]
        if self.n_touched < n and self.Z.c_data.shape[0] > 0:
            cptr, cind, cdat = &self.Z.c_ptr[0], &self.Z.c_ind[0], &self.Z.c_data[0]
            # the rows of F with their slack's sign, and copies that are zero on S (so
            # that the products below need no branch on F)
            for i in range(n):
                if self.touched[i]:
                    f1[i] = f0[i] = 0.0
                else:
                    if self.sig0[i] < 0:
                        y1[i] = -y1[i]
                        y0[i] = -y0[i]
                    f1[i] = y1[i]
                    f0[i] = y0[i]
            for s in range(n):
                j = self.feat_of_slot[s]
                if j < 0:
                    continue
                a1 = a0 = 0.0
                for p in range(cptr[j], cptr[j + 1]):
                    i = cind[p]
                    z = cdat[p]
                    a1 += z * f1[i]
                    a0 += z * f0[i]
                f = self.coef_of_slot[s]
                y1[s] -= f * a1
                y0[s] -= f * a0
            for i in range(n):
                f1[i] = f0[i] = 0.0
        cdef const Py_ssize_t* eptr = &self.eta_ptr[0]
        cdef const Py_ssize_t* eind = &self.eta_ind[0]
        cdef const double* eval = &self.eta_val[0]
        cdef const Py_ssize_t* bptr = &self.eta_cptr[0]
        cdef const Py_ssize_t* bind = &self.c_ind[0]
        cdef const double* bval = &self.c_val[0]
        for e in range(self.n_eta - 1, -1, -1):
            r = self.eta_r[e]
            s1, s0 = y1[r], y0[r]
            for p in range(eptr[e], eptr[e + 1]):
                q = eind[p]
                f = eval[p]
                s1 -= f * y1[q]
                s0 -= f * y0[q]
            s1 = s1 / self.eta_piv[e]
            s0 = s0 / self.eta_piv[e]
            y1[r] = s1
            y0[r] = s0
            if self.eta_kind[e]:
                for p in range(bptr[e], bptr[e + 1]):
                    q = bind[p]
                    f = bval[p]
                    y1[q] -= f * s1
                    y0[q] -= f * s0
        for l in range(k0):
            kb[l] = y1[self.E0[l]]
            kb3[l] = y0[self.E0[l]]
        if k0:
            self._solve_T2(kb, kb3)
        for l in range(k0):
            y1[self.E0[l]] = kb[l]
            y0[self.E0[l]] = kb3[l]

    cdef void btran_unit(self, Py_ssize_t r, double* y) noexcept nogil:
        """y <- B^{-T} e_r, the basis inverse's row of slot r, over the samples (``y``:
        n zeros in). :meth:`btran2` for a unit right-hand side, whose rows of F are
        zero but for r's: if slot r is in F (sample r's slack alone in it), the rows
        of F give y_r = sig0[r] and the active features' slots lose their entries in
        Z's row r times it (one row of Z, where :meth:`btran2` takes the products of
        every active column with the rows of F); if r is in S, the rows of F stay 0.
        Then the updates over S from the last, then M0^T on E0."""
        cdef Py_ssize_t l, e, p, q, s, rr, k0 = self.k0
        cdef double s1, yr
        cdef double* kb = &self.kb[0]
        if self.touched[r]:
            y[r] = 1.0
        else:
            yr = <double>self.sig0[r]
            y[r] = yr
            for p in range(self.Z.r_ptr[r], self.Z.r_ptr[r + 1]):
                s = self.slot_of_feat[self.Z.r_ind[p]]
                if s >= 0:
                    y[s] -= self.coef_of_slot[s] * self.Z.r_data[p] * yr
        cdef const Py_ssize_t* eptr = &self.eta_ptr[0]
        cdef const Py_ssize_t* eind = &self.eta_ind[0]
        cdef const double* eval = &self.eta_val[0]
        cdef const Py_ssize_t* bptr = &self.eta_cptr[0]
        cdef const Py_ssize_t* bind = &self.c_ind[0]
        cdef const double* bval = &self.c_val[0]
        for e in range(self.n_eta - 1, -1, -1):
            rr = self.eta_r[e]
            s1 = y[rr]
            for p in range(eptr[e], eptr[e + 1]):
                s1 -= eval[p] * y[eind[p]]
            s1 = s1 / self.eta_piv[e]
            y[rr] = s1
            if self.eta_kind[e] and s1 != 0.0:
                for p in range(bptr[e], bptr[e + 1]):
                    q = bind[p]
                    y[q] -= bval[p] * s1
        for l in range(k0):
            kb[l] = y[self.E0[l]]
        if k0:
            self._solve_T1(kb)
        for l in range(k0):
            y[self.E0[l]] = kb[l]

    cdef void push_eta(self, Py_ssize_t r, const double* xs, Py_ssize_t j_enter,
                       double sign) noexcept nogil:
        """The pivot's entering column (its FTRAN ``xs``; feature ``j_enter`` with
        ``sign``, or a slack if ``j_enter < 0``) replaces slot r (after
        :meth:`make_room`): an eta over S if r is in S, else S bordered by sample r
        (whose slack held slot r alone: the pivot is the Schur complement
        ``sig0[r] xs[r]``)."""
        cdef Py_ssize_t i, p = self.eta_ptr[self.n_eta], e = self.n_eta, j, s
        cdef Py_ssize_t pc = self.eta_cptr[self.n_eta], old
        cdef bint border = not self.touched[r]
        self.eta_r[e] = r
        self.eta_kind[e] = border
        if border:
            self.eta_piv[e] = self.sig0[r] * xs[r]
            # sample r's row of the earlier slots: only the active features' columns
            # reach it (a slack in a slot of S is a touched sample's)
            for i in range(self.Z.r_ptr[r], self.Z.r_ptr[r + 1]):
                j = self.Z.r_ind[i]
                s = self.slot_of_feat[j]
                if s >= 0:
                    self.c_ind[pc] = s
                    self.c_val[pc] = self.coef_of_slot[s] * self.Z.r_data[i]
                    pc += 1
        else:
            self.eta_piv[e] = xs[r]
        for i in range(self.n):
            if self.touched[i] and i != r and xs[i] != 0.0:
                self.eta_ind[p] = i
                self.eta_val[p] = xs[i]
                p += 1
        if border:
            self.touched[r] = 1
            self.n_touched += 1
        self.eta_ptr[e + 1] = p
        self.eta_cptr[e + 1] = pc
        self.eta_nnz = p + pc
        self.eta_work += self.eta_nnz
        self.n_eta = e + 1
        # what slot r holds now
        old = self.feat_of_slot[r]
        if old >= 0:
            self.slot_of_feat[old] = -1
        if j_enter >= 0:
            self.feat_of_slot[r] = j_enter
            self.coef_of_slot[r] = sign
            self.slot_of_feat[j_enter] = r
        else:
            self.feat_of_slot[r] = -1
            self.coef_of_slot[r] = 0.0

    # ------------------------------------------------------- for the tests ---
    def ftran_py(self, double[::1] x):
        """:meth:`ftran` in place on ``x`` (length n), from Python (for tests)."""
        if x.shape[0] != self.n:
            raise ValueError("x must have one entry per sample")
        with nogil:
            self.ftran(&x[0])

    def btran2_py(self, double[::1] y1, double[::1] y0):
        """:meth:`btran2` in place on ``y1`` and ``y0`` (length n), from Python (for
        tests)."""
        if y1.shape[0] != self.n or y0.shape[0] != self.n:
            raise ValueError("y1 and y0 must have one entry per sample")
        with nogil:
            self.btran2(&y1[0], &y0[0])

    def is_touched(self, Py_ssize_t i):
        """Whether sample i is in S, the samples the updates touched (for tests)."""
        return bool(self.touched[i])

    def btran_unit_py(self, Py_ssize_t r):
        """:meth:`btran_unit` from Python (for tests): the row of slot ``r`` of the
        basis inverse, over the samples."""
        if not 0 <= r < self.n:
            raise ValueError("r must be a slot")
        y = np.zeros(self.n)
        cdef double[::1] yv = y
        with nogil:
            self.btran_unit(r, &yv[0])
        return y

    def push_py(self, Py_ssize_t r, double[::1] xs, Py_ssize_t j_enter, double sign):
        """:meth:`push_eta` from Python (for tests): ``xs`` must be the entering
        column's :meth:`ftran_py`."""
        if xs.shape[0] != self.n or not 0 <= r < self.n:
            raise ValueError("r must be a slot and xs have one entry per sample")
        self.make_room()
        with nogil:
            self.push_eta(r, &xs[0], j_enter, sign)

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
