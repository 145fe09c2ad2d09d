# The sparse factor of the LP-SVM homotopy's basis (_lp_sparse_factor.pyx), cimported by
# its compiled core (_lp_homotopy_fast.pyx) so that the solves stay C calls without the
# GIL.

from ._lp_zmatrix cimport ZMatrix


cdef class SparseFactor:
    cdef public Py_ssize_t n, d, k0, n_eta, eta_nnz, lu_nnz, n_touched, max_row
    cdef public Py_ssize_t eta_work, j0
    cdef public double eta_fill
    cdef ZMatrix Z
    cdef Py_ssize_t[::1] A0, E0, perm_r, perm_c
    cdef double[::1] sgn0, Ld, Ud
    cdef signed char[::1] sig0, touched
    # the factors' strict parts outside the trailing block
    cdef const Py_ssize_t[::1] Lp, Li, Up, Ui
    cdef const double[::1] Lx, Ux
    # the factors' trailing blocks from j0 on, dense (Fortran order)
    cdef double[::1, :] DL, DU
    # the updates: slot, kind (1: a border), pivot, the eta's entries over S and, for a
    # border, its row's entries over the earlier slots
    cdef Py_ssize_t[::1] eta_r, eta_ptr, eta_ind, eta_cptr, c_ind
    cdef signed char[::1] eta_kind
    cdef double[::1] eta_piv, eta_val, c_val
    # what each slot holds: a feature (and its sign) or a slack (-1); each active
    # feature's slot
    cdef Py_ssize_t[::1] feat_of_slot, slot_of_feat
    cdef double[::1] coef_of_slot
    cdef Py_ssize_t[::1] slotA, slotS
    cdef double[::1] kb, kb2, kb3, kb4, nb1, nb0

    cdef void solve(self, double* b) noexcept nogil
    cdef void _solve_T2(self, double* c, double* e) noexcept nogil
    cdef void ftran(self, double* x) noexcept nogil
    cdef void btran2(self, double* y1, double* y0) noexcept nogil
    cdef void _solve_T1(self, double* c) noexcept nogil
    cdef void btran_unit(self, Py_ssize_t r, double* y) noexcept nogil
    cdef void push_eta(self, Py_ssize_t r, const double* xs, Py_ssize_t j_enter,
                       double sign) noexcept nogil
    cdef void move_slots(self, bint enter_feature, bint leave_feature, Py_ssize_t p,
                         Py_ssize_t r, Py_ssize_t i, Py_ssize_t k) noexcept nogil
