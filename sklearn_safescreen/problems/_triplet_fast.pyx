r"""Compiled kernels of the triplet problem: its objective, dual point and duality gap.

Everything the triplet problem needs per evaluation (the eigensolver behind its PSD
projections is in ``_eigh_fast.pyx``), used by
:mod:`.triplet_problem`, the screening rules (``screening/_triplet_fast.pyx``) and the
solver loop (``solvers/_spg_fast.pyx``), which call the ``cdef`` versions declared in
``_triplet_fast.pxd`` without the GIL; the ``def`` functions are their Python faces.
The reduced problem's data (which triplets and pairs a solve works on, :math:`H_{\hat
L}`) is built by ``_triplet_reduce_fast.pyx``. The mathematics is on
``doc/theory/metric_learning.rst``.

* **Pair quadratic forms**: :math:`D_Q(p)=a_p^\top Qa_p` and the Laplacian sum
  :math:`\sum_pw_pa_pa_p^\top` over the pairs of the working triplets, as matrix
  products with the d x d matrix (BLAS ``dgemm``) or, when the pairs' half-vectorised
  outer products fit in ``VECH_BYTES``, as one matrix-vector product with them (half
  the flops). The sum skips pairs of zero weight.
* **The loss pass** (:func:`triplet_pass`): values, loss, dual variables and pair
  weights of the working triplets in one pass.
* **Gaps** (:func:`gap_terms`, :func:`projection_gap`): the cancellation-free duality
  gap, against the best dual point or against the one a projection provides.
* **The full problem**: the certificate's pass over every triplet with the pair forms
  it needs (:func:`certificate`), and the full evaluation with the solver's kernels
  (:func:`evaluate_full`), one call each.
* **The fitted metric** (:func:`metric_factor`): ``components_`` from the solution.
"""

from libc.math cimport fabs, sqrt
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemm, dgemv

from ._eigh_fast cimport eigh_rows_c, eigh_workspace, sym_part_c, sym_workspace


cdef extern from "sklearn_safescreen/_utils/_vec.h" nogil:
    void ss_axpy(int n, double a, const double* x, double* y)
    double ss_dot(int n, const double* x, const double* y)

import numpy as np

cdef enum:
    # Largest size of the half-vectorised pair outer products (matrix-vector form).
    VECH_BYTES = 1048576
    # Size of the block of pairs the matrix-product forms take at a time: the block's
    # product and copies stay in cache, where one product over every pair would write
    # and read back an npairs x d temporary through main memory (and fault it in
    # afresh whenever it is reallocated)
    BLOCK_BYTES = 1048576


cdef inline Py_ssize_t _block_rows(int d) noexcept nogil:
    return max(BLOCK_BYTES // (8 * max(d, 1)), 64)


cdef Py_ssize_t block_rows_c(Py_ssize_t npairs, int d) noexcept nogil:
    """Rows of the matrix-product workspaces (``T``, ``T2``) the pair-form and
    Laplacian kernels need for ``npairs`` pairs in dimension ``d`` (at least 1)."""
    return max(min(npairs, _block_rows(d)), 1)


# ----------------------------------------------------------------- pair forms ---
cdef bint use_vech_c(Py_ssize_t npairs, int d) noexcept nogil:
    """Whether the half-vectorised outer products of the pairs fit ``VECH_BYTES``."""
    return d <= 32 and npairs * (d * (d + 1) // 2) * 8 <= VECH_BYTES


cdef void build_phi_c(const double* diff, Py_ssize_t npairs, int d,
                      double* Phi) noexcept nogil:
    """Row p: the upper triangle of :math:`a_pa_p^\\top` (off-diagonal entries doubled),
    so that :math:`a_p^\\top Qa_p=\\langle\\phi_p,\\mathrm{vech}(Q)\\rangle`."""
    cdef Py_ssize_t p
    cdef int r, c, j, m = d * (d + 1) // 2
    cdef double a
    for p in range(npairs):
        j = 0
        for r in range(d):
            a = diff[p * d + r]
            Phi[p * m + j] = a * a
            j += 1
            for c in range(r + 1, d):
                Phi[p * m + j] = 2.0 * a * diff[p * d + c]
                j += 1


cdef void pair_forms_c(const double* diff, Py_ssize_t npairs, int d, const double* Phi,
                       bint usev, const double* Q, double* T, double* D,
                       double* vech) noexcept nogil:
    """:math:`D_p=a_p^\\top Qa_p` (``Q`` symmetric) into ``D``; ``T`` is a workspace of
    the matrix-product form (min(npairs, :c:func:`_block_rows`) x d), ``vech`` one of
    d (d + 1) / 2 doubles."""
    cdef int r, c, j, m = d * (d + 1) // 2, one = 1, np_ = <int>npairs
    cdef Py_ssize_t p
    cdef double s, d_one = 1.0, d_zero = 0.0
    cdef char tr_n = b"N", tr_t = b"T"
    if npairs == 0:
        return
    if usev:
        j = 0
        for r in range(d):
            for c in range(r, d):
                vech[j] = Q[r * d + c]
                j += 1
        # D = Phi @ vech: the row-major Phi is the column-major m x npairs matrix
        dgemv(&tr_t, &m, &np_, &d_one, <double*>Phi, &m, vech, &one, &d_zero, D, &one)
        return
    # T = diff @ Q (row-major), i.e. Q' @ diff' in column-major (Q is symmetric), a
    # block of pairs at a time (each row of T is the same whatever the block)
    cdef Py_ssize_t start = 0, block = _block_rows(d)
    cdef int length
    while start < npairs:
        length = <int>min(block, npairs - start)
        dgemm(&tr_n, &tr_n, &d, &length, &d, &d_one, <double*>Q, &d,
              <double*>&diff[start * d], &d, &d_zero, T, &d)
        for p in range(length):
            D[start + p] = ss_dot(d, &T[p * d], &diff[(start + p) * d])
        start += length


cdef void laplacian_sum_c(const double* diff, Py_ssize_t npairs, int d,
                          const double* Phi, bint usev, const double* w, double* T,
                          double* T2, double* s, double* S) noexcept nogil:
    r""":math:`\sum_pw_pa_pa_p^\top` over the pairs of non-zero weight into ``S``
    (``T``, ``T2``: min(npairs, :c:func:`_block_rows`) x d workspaces, ``s``: a
    vech-sized workspace)."""
    cdef int r, c, j, m = d * (d + 1) // 2, nz = 0
    cdef Py_ssize_t p
    cdef double wp, d_one = 1.0, d_zero = 0.0
    cdef char tr_n = b"N", tr_t = b"T"
    if usev:
        # s = Phi' w over the pairs of non-zero weight only: most pairs have none (their
        # triplets have zero loss), so this beats one BLAS call over every pair
        memset(s, 0, m * sizeof(double))
        for p in range(npairs):
            wp = w[p]
            if wp != 0.0:
                ss_axpy(m, wp, &Phi[p * m], s)
        j = 0
        for r in range(d):
            S[r * d + r] = s[j]
            j += 1
            for c in range(r + 1, d):
                S[r * d + c] = 0.5 * s[j]
                S[c * d + r] = S[r * d + c]
                j += 1
        return
    # the pairs of non-zero weight copied a block at a time (the copies stay in cache),
    # each block's S += T2' T (row-major: the buffers as column-major d x nz matrices)
    cdef Py_ssize_t block = _block_rows(d)
    cdef double beta = 0.0
    memset(S, 0, d * d * sizeof(double))
    for p in range(npairs):
        wp = w[p]
        if wp != 0.0:
            for c in range(d):
                T2[nz * d + c] = diff[p * d + c]
                T[nz * d + c] = diff[p * d + c] * wp
            nz += 1
            if nz == block:
                dgemm(&tr_n, &tr_t, &d, &d, &nz, &d_one, T2, &d, T, &d, &beta, S, &d)
                beta = 1.0
                nz = 0
    if nz:
        dgemm(&tr_n, &tr_t, &d, &d, &nz, &d_one, T2, &d, T, &d, &beta, S, &d)
    for r in range(d):
        for c in range(r + 1, d):
            S[r * d + c] = 0.5 * (S[r * d + c] + S[c * d + r])
            S[c * d + r] = S[r * d + c]


cdef double triplet_pass_c(const double* D, const int* pos, const int* neg,
                           Py_ssize_t n, double gamma, double* z, double* w,
                           Py_ssize_t npairs, double* sa, double* sa2) noexcept nogil:
    r""":math:`z_t=D_{pos(t)}-D_{neg(t)}`, the (smoothed) hinge loss, :math:`\alpha_t
    =-\ell'(z_t)` and the pair weights ``w`` of :math:`\sum_t\alpha_tH_t` over the
    triplets. Returns the loss; ``sa``/``sa2`` receive the sums of alpha and alpha^2."""
    cdef Py_ssize_t t
    cdef int p, q
    cdef double loss = 0.0, s1 = 0.0, s2 = 0.0, zt, u, a
    memset(w, 0, npairs * sizeof(double))
    for t in range(n):
        p = pos[t]
        q = neg[t]
        zt = D[p] - D[q]
        z[t] = zt
        if zt >= 1.0:
            continue
        if gamma > 0.0 and zt >= 1.0 - gamma:
            u = 1.0 - zt
            a = u / gamma
            loss += 0.5 * u * a
        else:
            a = 1.0
            loss += 1.0 - zt - 0.5 * gamma
        s1 += a
        s2 += a * a
        w[p] += a
        w[q] -= a
    sa[0] = s1
    sa2[0] = s2
    return loss


cdef double gap_terms_c(const double* M, const double* S, int d, double lam, double sa,
                        double sa2, double nL, double gamma, double* Sp, double* dual,
                        double* work) noexcept nogil:
    r"""At the PSD point M with :math:`S=\sum\alpha_tH_t+H_{\hat L}`: :math:`S_+` into
    ``Sp``, the dual value into ``dual`` and the returned gap, with
    :math:`\Gamma=-S_-` (negative part from one eigendecomposition, so
    :math:`S_+:=S-S_-` and the dual value are valid whatever its accuracy) and the
    cancellation-free gap :math:`\|\lambda M-S_+\|^2/(2\lambda)+\langle M,-S_-\rangle`.
    ``work``: ``d^2`` doubles plus :func:`sym_part_c`'s."""
    cdef double* Sn = work
    cdef int i, n2 = d * d
    cdef double rr = 0.0, msn = 0.0, spsp = 0.0, v
    sym_part_c(S, d, -1.0, Sn, work + n2)
    for i in range(n2):
        Sp[i] = S[i] - Sn[i]
        v = lam * M[i] - Sp[i]
        rr += v * v
        msn += M[i] * Sn[i]
        spsp += Sp[i] * Sp[i]
    dual[0] = -0.5 * gamma * (sa2 + nL) + sa + nL - spsp / (2.0 * lam)
    return max(rr / (2.0 * lam) + max(-msn, 0.0), 0.0)


cdef double projection_gap_c(const double* M, const double* S, const double* Bn, int d,
                             double eta, double lam) noexcept nogil:
    r"""The gap at the PSD point M against the dual point :math:`\Gamma=-B_-/\eta`,
    :math:`B_-` the negative part of the projected-gradient argument
    :math:`B=M-\eta G`: :math:`\|\lambda M-S-\Gamma\|^2/(2\lambda)+\langle M,
    \Gamma\rangle`, valid for every :math:`\Gamma\succeq O` (:math:`-B_-` is PSD by
    construction). At the optimum :math:`B_-=\eta S_-`, so it equals the best gap
    there; along the iterations it comes with the projection, at no second
    eigendecomposition."""
    cdef int i
    cdef double rr = 0.0, mg = 0.0, v
    for i in range(d * d):
        v = lam * M[i] - S[i] + Bn[i] / eta
        rr += v * v
        mg -= M[i] * Bn[i]
    return max(rr / (2.0 * lam) + max(mg / eta, 0.0), 0.0)


# ------------------------------------------------------------- Python faces ---
def _square(A):
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected a square matrix; got shape {A.shape}")
    return A


def use_vech(Py_ssize_t npairs, int d):
    """Whether the half-vectorised outer products of ``npairs`` pairs fit
    ``VECH_BYTES``."""
    return use_vech_c(npairs, d)


def build_phi(diff):
    """Row p: the upper triangle of :math:`a_pa_p^\\top` (off-diagonal entries
    doubled)."""
    cdef double[:, ::1] df = np.ascontiguousarray(diff, dtype=np.float64)
    cdef Py_ssize_t npairs = df.shape[0]
    cdef int d = df.shape[1]
    Phi = np.empty((npairs, d * (d + 1) // 2))
    cdef double[:, ::1] ph = Phi
    if npairs and d:
        with nogil:
            build_phi_c(&df[0, 0], npairs, d, &ph[0, 0])
    return Phi


def block_rows(Py_ssize_t npairs, int d):
    """Rows of the workspaces ``T`` and ``T2`` of :func:`pair_forms` and
    :func:`laplacian_sum` for ``npairs`` pairs in dimension ``d``."""
    return block_rows_c(npairs, d)


def pair_forms(const double[:, ::1] diff, const double[:, ::1] Phi, bint usev,
               const double[:, ::1] Q, double[:, ::1] T, double[::1] D):
    """:math:`D_p=a_p^\\top Qa_p` (``Q`` symmetric) into ``D``; ``T`` is a workspace of
    the matrix-product form (:func:`block_rows` x d at least)."""
    cdef Py_ssize_t npairs = diff.shape[0]
    cdef int d = diff.shape[1]
    cdef double[::1] vech = np.empty(d * (d + 1) // 2 + 1)
    if npairs == 0 or d == 0:
        return
    if D.shape[0] < npairs or (not usev and (T.shape[0] < block_rows_c(npairs, d)
                                             or T.shape[1] < d)):
        raise ValueError("pair_forms: workspace too small")
    with nogil:
        pair_forms_c(&diff[0, 0], npairs, d, &Phi[0, 0] if usev else NULL, usev,
                     &Q[0, 0], &T[0, 0], &D[0], &vech[0])


def laplacian_sum(const double[:, ::1] diff, const double[:, ::1] Phi, bint usev,
                  const double[::1] w, double[:, ::1] T, double[:, ::1] T2,
                  double[::1] s):
    r""":math:`\sum_pw_pa_pa_p^\top` over the pairs of non-zero weight."""
    cdef Py_ssize_t npairs = diff.shape[0]
    cdef int d = diff.shape[1]
    S = np.zeros((d, d))
    cdef double[:, ::1] Sv = S
    if npairs == 0 or d == 0:
        return S
    if w.shape[0] < npairs or (not usev and (
            min(T.shape[0], T2.shape[0]) < block_rows_c(npairs, d)
            or min(T.shape[1], T2.shape[1]) < d)):
        raise ValueError("laplacian_sum: workspace too small")
    with nogil:
        laplacian_sum_c(&diff[0, 0], npairs, d, &Phi[0, 0] if usev else NULL, usev,
                        &w[0], &T[0, 0], &T2[0, 0], &s[0] if usev else NULL, &Sv[0, 0])
    return S


def triplet_pass(const double[::1] D, const int[::1] pos, const int[::1] neg,
                 double gamma, double[::1] z, double[::1] w):
    r""":math:`z_t`, the loss, :math:`\alpha_t` and the pair weights of
    :math:`\sum_t\alpha_tH_t` over the triplets. Returns (loss, sum alpha,
    sum alpha^2)."""
    cdef double loss, sa = 0.0, sa2 = 0.0
    cdef Py_ssize_t n = pos.shape[0]
    with nogil:
        loss = triplet_pass_c(&D[0] if D.shape[0] else NULL, &pos[0] if n else NULL,
                              &neg[0] if n else NULL, n, gamma, &z[0] if n else NULL,
                              &w[0] if w.shape[0] else NULL, w.shape[0], &sa, &sa2)
    return loss, sa, sa2


def gap_terms(M, S, double lam, double sa, double sa2, double nL, double gamma):
    r"""At the PSD point M: (:math:`S_+`, dual, gap) with :math:`\Gamma=-S_-` and the
    cancellation-free gap (see :func:`gap_terms_c`)."""
    cdef double[:, ::1] m = _square(M)
    cdef double[:, ::1] s = _square(S)
    cdef int d = m.shape[0]
    Sp = np.zeros((d, d))
    cdef double[:, ::1] sp = Sp
    cdef double[::1] work = np.empty(d * d + sym_workspace(d))
    cdef double dual = 0.0, gap
    with nogil:
        gap = gap_terms_c(&m[0, 0], &s[0, 0], d, lam, sa, sa2, nL, gamma, &sp[0, 0],
                          &dual, &work[0])
    return Sp, dual, gap


def projection_gap(M, S, Bn, double eta, double lam):
    """The gap at the PSD point M against the dual point :math:`-B_-/\\eta`
    (:func:`projection_gap_c`)."""
    cdef double[:, ::1] m = _square(M)
    cdef double[:, ::1] s = _square(S)
    cdef double[:, ::1] b = _square(Bn)
    return projection_gap_c(&m[0, 0], &s[0, 0], &b[0, 0], m.shape[0], eta, lam)


# ------------------------------------------------------------ the full problem ---
def certificate_pass(const double[::1] D, const int[::1] pos, const int[::1] neg,
                     const signed char[::1] status, double gamma):
    r"""From the pair forms ``D`` of M: the values :math:`z_t=\langle M,H_t\rangle` of
    every triplet, the loss :math:`\sum_t\ell(z_t)` of the full problem, and whether
    every screened triplet is on its side at M (:math:`z_t\ge1` in
    :math:`\hat{\mathcal R}`, :math:`z_t\le1-\gamma` in :math:`\hat{\mathcal L}`):
    then the full objective, dual point and gap equal the reduced ones."""
    cdef Py_ssize_t n = pos.shape[0]
    z = np.empty(n)
    cdef double[::1] zv = z
    cdef double loss
    cdef bint on_side
    with nogil:
        loss = _certificate_c(&D[0] if D.shape[0] else NULL, &pos[0] if n else NULL,
                              &neg[0] if n else NULL, &status[0] if n else NULL, n,
                              gamma, &zv[0] if n else NULL, &on_side)
    return z, loss, on_side


def certificate(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg,
                const signed char[::1] status, M, double gamma):
    r""":func:`certificate_pass` with the pair forms of M (full metric, those of
    :func:`full_pair_forms`) in the same call: ``(z, loss, on_side)``."""
    cdef double[:, ::1] m = _square(M)
    cdef Py_ssize_t npairs = diff.shape[0], n = pos.shape[0]
    cdef int d = diff.shape[1]
    if m.shape[0] != d or neg.shape[0] != n or status.shape[0] != n:
        raise ValueError("certificate: inconsistent shapes")
    cdef double[::1] D = np.empty(max(npairs, 1))
    cdef double[:, ::1] T = np.empty((block_rows_c(npairs, d), max(d, 1)))
    cdef double loss
    cdef bint on_side
    with nogil:
        if npairs and d:
            pair_forms_c(&diff[0, 0], npairs, d, NULL, False, &m[0, 0], &T[0, 0], &D[0],
                         NULL)
        elif npairs:
            memset(&D[0], 0, npairs * sizeof(double))
    T = None  # (freed before the values are allocated: the peak of a large set)
    z = np.empty(n)
    cdef double[::1] zv = z
    with nogil:
        loss = _certificate_c(&D[0], &pos[0] if n else NULL, &neg[0] if n else NULL,
                              &status[0] if n else NULL, n, gamma,
                              &zv[0] if n else NULL, &on_side)
    return z, loss, on_side


cdef double _certificate_c(const double* D, const int* pos, const int* neg,
                           const signed char* status, Py_ssize_t n, double gamma,
                           double* z, bint* on_side) noexcept nogil:
    """The certificate's pass: values, loss, whether every screened triplet is on its
    side. (Its branches follow the statuses, which come in runs along the triplets, so
    they are well predicted and skip the work of the other cases; a branch-free form
    would compute every case for every triplet.)"""
    cdef Py_ssize_t t
    cdef double loss = 0.0, zt
    cdef signed char s
    cdef bint ok = True
    for t in range(n):
        zt = D[pos[t]] - D[neg[t]]
        z[t] = zt
        if zt < 1.0:
            if gamma > 0.0 and zt >= 1.0 - gamma:
                loss += 0.5 * (1.0 - zt) * (1.0 - zt) / gamma
            else:
                loss += 1.0 - zt - 0.5 * gamma
        s = status[t]
        if (s == 2 and zt < 1.0) or (s == 1 and zt > 1.0 - gamma):
            ok = False
    on_side[0] = ok
    return loss


def full_pair_forms(const double[:, ::1] diff, M):
    r""":math:`a_p^\top Ma_p` for every pair (matrix-product form)."""
    cdef Py_ssize_t npairs = diff.shape[0]
    cdef int d = diff.shape[1]
    D = np.empty(npairs)
    if npairs == 0:
        return D
    pair_forms(diff, np.empty((1, 1)), False, _square(M),
               np.empty((block_rows_c(npairs, d), d)), D)
    return D


def loss_sum(const double[::1] z, double gamma):
    r""":math:`\sum_t\ell(z_t)` (smoothed hinge, the hinge for gamma = 0)."""
    cdef double loss = 0.0, zt
    cdef Py_ssize_t t
    with nogil:
        for t in range(z.shape[0]):
            zt = z[t]
            if zt < 1.0:
                if gamma > 0.0 and zt >= 1.0 - gamma:
                    loss += 0.5 * (1.0 - zt) * (1.0 - zt) / gamma
                else:
                    loss += 1.0 - zt - 0.5 * gamma
    return loss


def evaluate_scratch_size(Py_ssize_t npairs, int d):
    """Doubles of the ``scratch`` buffer :func:`evaluate_full` needs for ``npairs``
    pairs in dimension ``d``."""
    cdef Py_ssize_t block = _round8(block_rows_c(npairs, d) * max(d, 1))
    return 2 * block + _round8(max(npairs, 1)) + _round8(d * d + sym_workspace(d)
                                                           + d * (d + 1))


cdef inline Py_ssize_t _round8(Py_ssize_t n) noexcept nogil:
    return (n + 7) // 8 * 8


def evaluate_full(const double[:, ::1] diff, const int[::1] pos, const int[::1] neg,
                  HL, double nL, double gamma, double lam, M, double[::1] z,
                  double[::1] w, double[::1] scratch=None):
    """Full evaluation (primal, dual, stable gap, S, S_+) for the full metric, with the
    kernels of the compiled solver. ``scratch`` (at least
    :func:`evaluate_scratch_size` doubles, e.g. kept by the caller between
    evaluations) holds the work buffers; by default they are allocated."""
    cdef double[:, ::1] m = _square(M)
    cdef double[:, ::1] hl = _square(HL)
    cdef Py_ssize_t npairs = diff.shape[0], n = pos.shape[0], i
    cdef int d = m.shape[0]
    if (hl.shape[0] != d or diff.shape[1] != d or neg.shape[0] != n or z.shape[0] < n
            or w.shape[0] < npairs):
        raise ValueError("evaluate_full: inconsistent shapes")
    cdef Py_ssize_t need = evaluate_scratch_size(npairs, d)
    cdef Py_ssize_t block = _round8(block_rows_c(npairs, d) * max(d, 1))
    if scratch is None or scratch.shape[0] < need:
        scratch = np.empty(need)
    S = np.zeros((d, d))
    S_pos = np.zeros((d, d))
    cdef double[:, ::1] Sv = S
    cdef double[:, ::1] Spv = S_pos
    # (each buffer at a multiple of 8 doubles into the scratch)
    cdef double* T = &scratch[0]
    cdef double* T2 = T + block
    cdef double* D = T2 + block
    cdef double* work = D + _round8(max(npairs, 1))
    cdef double loss, sa = 0.0, sa2 = 0.0, dual = 0.0, gap, mhl = 0.0, mm = 0.0
    with nogil:
        if npairs:
            pair_forms_c(&diff[0, 0], npairs, d, NULL, False, &m[0, 0], T, D, work)
        loss = triplet_pass_c(D, &pos[0] if n else NULL, &neg[0] if n else NULL, n,
                              gamma, &z[0] if n else NULL, &w[0] if npairs else NULL,
                              npairs, &sa, &sa2)
        if npairs:
            laplacian_sum_c(&diff[0, 0], npairs, d, NULL, False, &w[0], T, T2, NULL,
                            &Sv[0, 0])
        for i in range(d * d):
            (&Sv[0, 0])[i] += (&hl[0, 0])[i]
            mhl += (&m[0, 0])[i] * (&hl[0, 0])[i]
            mm += (&m[0, 0])[i] * (&m[0, 0])[i]
        gap = gap_terms_c(&m[0, 0], &Sv[0, 0], d, lam, sa, sa2, nL, gamma, &Spv[0, 0],
                          &dual, work)
    primal = loss + (1.0 - 0.5 * gamma) * nL - mhl + 0.5 * lam * mm
    return primal, dual, gap, S, S_pos


# ----------------------------------------------------------- the fitted metric ---
def metric_factor(M):
    r"""The learned metric's symmetric part :math:`(M+M^\top)/2` and the rows
    :math:`\sqrt{w_k}v_k^\top` of ``components_`` (eigenvalues ``w`` descending, the
    negative ones as 0), in one call; ``None`` when the eigenvalues are not all
    distinct, non-zero and finite (then the order of equal ones, zeros' signs and NaN
    follow NumPy's ``argsort`` and ``maximum``, which the caller uses instead)."""
    cdef double[:, ::1] m = _square(M)
    cdef int d = m.shape[0], r, c, i, j
    Ms = np.empty((d, d))
    C = np.empty((d, d))
    cdef double[:, ::1] ms = Ms
    cdef double[:, ::1] cv = C
    cdef double[::1] work = np.empty(eigh_workspace(d) + 2 * d * d + 2 * d + 1)
    cdef double* w = &work[0]
    cdef double* W = w + d
    cdef double* ew = W + d * d
    cdef int* order
    cdef double s, wi
    cdef bint ok = True
    if d == 0:
        return None
    order_arr = np.empty(d, dtype=np.int32)
    cdef int[::1] ov = order_arr
    order = &ov[0]
    with nogil:
        for r in range(d):
            for c in range(d):
                ms[r, c] = 0.5 * (m[r, c] + m[c, r])
        ok = eigh_rows_c(&ms[0, 0], d, w, W, ew)
        for i in range(d):
            if not (w[i] > 0.0 or w[i] < 0.0):  # zero or NaN
                ok = False
        if ok:
            # descending by insertion (d is small), refused on any tie
            for i in range(d):
                j = i
                while j > 0 and w[order[j - 1]] < w[i]:
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = i
            for i in range(d - 1):
                if w[order[i]] == w[order[i + 1]]:
                    ok = False
        if ok:
            for r in range(d):
                wi = w[order[r]]
                s = sqrt(wi) if wi > 0.0 else 0.0
                # each row's sign fixed as scikit-learn's ``svd_flip`` does (its entry
                # of largest magnitude, the first of equal ones, positive): an
                # eigenvector's sign is arbitrary, and round-off alone flipped rows
                # between two fits of the same metric
                j = 0
                for c in range(1, d):
                    if fabs(W[order[r] * d + c]) > fabs(W[order[r] * d + j]):
                        j = c
                if W[order[r] * d + j] < 0.0:
                    s = -s
                for c in range(d):
                    cv[r, c] = W[order[r] * d + c] * s
    return (Ms, C) if ok else None
