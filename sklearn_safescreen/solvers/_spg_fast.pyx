r"""The compiled loop of the PSD projected-gradient solver (:mod:`.psd_gradient`).

:func:`spg` is projected gradient with the averaged Barzilai-Borwein step and the
non-monotone sufficient-decrease test of spectral projected gradient (Birgin, Martinez
and Raydan 2000, "SPG2"): a rejected step is shortened *along the projected direction*
:math:`M+t(P(M-\eta G)-M)`, which stays PSD and whose pair forms are the linear
interpolation of two known ones, so a rejection costs one pass over the triplets instead
of a projection (an eigendecomposition) and new pair forms. The relative duality gap is
checked at every step at no extra eigendecomposition: the negative part of the
projection's argument :math:`M-\eta G` gives the dual point.

Dynamic screening runs inside the loop: every ``interval`` steps (and at the start
point) the sphere rule with the GB, PGB and/or DGB balls at the iterate; screened
triplets leave the arrays (and, once a quarter of the pairs are no longer used, the
unused pairs), those in :math:`\hat{\mathcal L}` are folded into :math:`H_{\hat L}`.
Every ball contains the iterate, so the objective, gradient and step history stay
valid. Every buffer is allocated before the loop, which runs without the GIL; the
buffers live in a :class:`SpgWorkspace` that a caller may keep between calls (the
engine keeps one per path), since allocating (and faulting in) about twenty buffers
afresh at each call would cost a small fit as much as its iterations, which are cheap.
"""

from libc.math cimport fabs, INFINITY
from libc.string cimport memcpy, memset

from time import thread_time

import numpy as np

from ..problems._eigh_fast cimport eigh_workspace, psd_parts_c
from ..problems._triplet_fast cimport (
    block_rows_c,
    build_phi_c,
    gap_terms_c,
    laplacian_sum_c,
    pair_forms_c,
    projection_gap_c,
    triplet_pass_c,
    use_vech_c,
)
from ..screening._triplet_fast cimport ball_codes_c, ball_codes_workspace

#: Non-monotone acceptance: a step is accepted if the objective is below the largest of
#: the last NONMONOTONE values minus SUFFICIENT * t * <grad, direction> (SPG; the values
#: of Birgin, Martinez and Raydan 2000: the memory lets the Barzilai-Borwein steps raise
#: the objective now and then, which is what makes them fast, while the sufficient
#: decrease keeps the method globally convergent).
NONMONOTONE = 10
SUFFICIENT = 1e-4
#: Rejected steps allowed in a row before a (tiny) step is accepted anyway: every
#: rejection at least halves the step, so by then it is below the round-off of the
#: iterate and further rejections could not change it.
MAX_BACKTRACK = 60
#: Pairs are compacted once this fraction of them is no longer used by any triplet: a
#: compaction is itself a pass over the pairs, so it waits until it saves a good share of
#: every later pass.
PAIR_SLACK = 0.25
#: A kept :class:`SpgWorkspace` larger than this after a call is released, unless its
#: owner raised its ``kept_bytes`` (a path walked with warm starts keeps its buffers from
#: one fit to the next, and releases them when it ends: see
#: :meth:`..engine.triplet.TripletPath.end_fit`).
KEPT_BYTES = 8 * 2**20

# The same values as C constants, for the loop that runs without the GIL (a Python
# global cannot be read there).
cdef enum:
    _NONMONOTONE = 10
    _MAX_BACKTRACK = 60
    _VECH_DOUBLES = 131072  # (VECH_BYTES of problems/_triplet_fast.pyx, in doubles)
cdef double _SUFFICIENT = 1e-4
cdef double _PAIR_SLACK = 0.25


cdef class SpgWorkspace:
    r"""The work buffers of :func:`spg`, kept between calls (the fits of a path, the
    stretches of an active-set solve) so that a call allocates only what it returns.

    Sized by the largest call so far (pairs, triplets, recorded checks) at one
    dimension d: a larger call grows it, a call at another d rebuilds it, and buffers
    of more than ``kept_bytes`` in all (``KEPT_BYTES`` unless the owner sets it) are
    released after the call (bounded). The buffers a call grows are touched when they
    are allocated, and the CPU time that takes (their memory faulted in, which can be a
    large share of a path's first solve of the whole problem) is added to
    ``growth_seconds``: a one-off cost, which a path's cost model leaves out of the step
    it compares. It carries
    nothing from one call to the next (every buffer is written before it is read), so
    a kept workspace gives the same results as a fresh one. A cache, not state: it
    pickles empty. One call at a time: :func:`spg` uses a fresh one while it is busy
    (another thread).
    """

    cdef int d
    cdef Py_ssize_t cap_pairs, cap_triplets, cap_checks, cap_private
    cdef bint busy
    cdef Py_ssize_t total_bytes
    #: the buffers' total above which they are released after a call
    cdef public Py_ssize_t kept_bytes
    #: CPU seconds spent touching grown buffers, since the workspace was made
    cdef public double growth_seconds
    # the numpy arrays (slices of results are copied from them) and their views
    cdef object z_arr, out_arr, checks_arr
    cdef double[:, ::1] diff, T, T2, mats
    cdef double[::1] Phi, w, D, Dn, Dt, hn, z, svec, work, hist
    cdef int[::1] pos, neg, widx, out
    cdef signed char[::1] codes
    cdef long long[::1] remap
    cdef long long[:, ::1] checks

    def __cinit__(self):
        self.d = -1
        self.kept_bytes = KEPT_BYTES

    def __reduce__(self):
        return (SpgWorkspace, ())

    @property
    def capacity(self):
        """``(pairs, triplets, checks, d)`` the buffers hold (d = -1: none yet)."""
        return (self.cap_pairs, self.cap_triplets, self.cap_checks, self.d)

    @property
    def nbytes(self):
        """Bytes held by the buffers."""
        return self.total_bytes

    def release(self):
        """Drop the buffers (the next call allocates them again)."""
        self.d = -1
        self.cap_pairs = self.cap_triplets = self.cap_checks = self.cap_private = 0
        self.total_bytes = 0
        self.z_arr = self.out_arr = self.checks_arr = None
        self.diff = self.T = self.T2 = self.mats = None
        self.Phi = self.w = self.D = self.Dn = self.Dt = self.hn = self.z = None
        self.svec = self.work = self.hist = None
        self.pos = self.neg = self.widx = self.out = None
        self.codes = None
        self.remap = None
        self.checks = None

    cdef _count(self):
        buffers = [self.diff, self.T, self.T2, self.mats, self.Phi, self.w, self.D,
                   self.Dn, self.Dt, self.hn, self.z, self.svec, self.work, self.hist,
                   self.pos, self.neg, self.widx, self.out, self.codes, self.remap,
                   self.checks]
        cdef Py_ssize_t total = 0
        for b in buffers:
            if b is not None:
                total += np.asarray(b).nbytes
        self.total_bytes = total

    cdef reserve(self, Py_ssize_t npairs, Py_ssize_t n, int d, Py_ssize_t n_checks,
                 bint private):
        """Buffers for ``npairs`` pairs, ``n`` triplets, ``n_checks`` check rows at
        dimension ``d`` (what one call of :func:`spg` needs; ``private``: with the
        copies of the pairs and triplets that its screening compacts)."""
        cdef int dd = d * d, m_vech = d * (d + 1) // 2
        cdef Py_ssize_t np1 = max(npairs, 1), n1 = max(n, 1)
        cdef double start = thread_time()
        grown = []
        if d != self.d:
            self.d = d
            self.cap_pairs = self.cap_triplets = self.cap_checks = self.cap_private = 0
            self.diff = None  # (allocated by the first call that needs private copies)
            self.svec = np.empty(m_vech + 1)
            self.mats = np.empty((7, max(dd, 1)))
            self.work = np.empty(max(ball_codes_workspace(d),
                                     dd + 2 * dd + d + eigh_workspace(d)) + m_vech + 16)
            self.hist = np.empty(_NONMONOTONE)
        if private and np1 > self.cap_private:
            self.cap_private = np1
            self.diff = np.empty((np1, d))
            grown.append(self.diff)
        if np1 > self.cap_pairs:
            self.cap_pairs = np1
            self.Phi = np.empty(max(min(np1 * m_vech, _VECH_DOUBLES), 1))
            self.w = np.empty(np1)
            # (the matrix-product kernels take the pairs a block at a time)
            self.T = np.empty((block_rows_c(np1, d), max(d, 1)))
            self.T2 = np.empty((block_rows_c(np1, d), max(d, 1)))
            self.D = np.empty(np1)
            self.Dn = np.empty(np1)
            self.Dt = np.empty(np1)
            self.remap = np.empty(np1, dtype=np.int64)
            grown += [self.w, self.T, self.T2, self.D, self.Dn, self.Dt, self.remap]
        if n1 > self.cap_triplets:
            self.cap_triplets = n1
            self.pos = np.empty(n1, dtype=np.int32)
            self.neg = np.empty(n1, dtype=np.int32)
            self.hn = np.empty(n1)
            self.widx = np.empty(n1, dtype=np.int32)
            self.out_arr = np.empty(n1, dtype=np.int32)
            self.out = self.out_arr
            self.z_arr = np.empty(n1)
            self.z = self.z_arr
            self.codes = np.empty(n1, dtype=np.int8)
            grown += [self.pos, self.neg, self.hn, self.widx, self.out, self.z, self.codes]
        if n_checks > self.cap_checks:
            self.cap_checks = n_checks
            self.checks_arr = np.empty((n_checks, 3), dtype=np.int64)
            self.checks = self.checks_arr
        if grown:
            for buffer in grown:
                np.asarray(buffer).fill(0)
            self.growth_seconds += thread_time() - start
        self._count()


def spg(diff_in, pos_in, neg_in, const double[::1] hnorm, const int[::1] work_in, HL_in,
        double nL, double gamma, double lam, M_in, double eta, Py_ssize_t max_steps,
        double tol, Py_ssize_t interval, bint use_gb, bint use_pgb, bint use_dgb,
        bint screen, SpgWorkspace workspace=None, rows_in=None):
    r"""Minimise the reduced triplet problem from the PSD point ``M`` over the triplets
    ``work`` of pair indices ``pos``/``neg`` into the pair differences ``diff``, with
    :math:`H_{\hat L}` = ``HL`` and :math:`|\hat{\mathcal L}|` = ``nL``: at most
    ``max_steps`` accepted steps, until the relative gap is at most ``tol``. ``hnorm``
    holds the norms of every triplet of the set (indexed by ``work``).

    With ``screen``, the sphere rule with the GB/PGB/DGB balls (``use_*``) runs at the
    start point and every ``interval`` steps.

    ``workspace`` (a :class:`SpgWorkspace`) is used for the work buffers and kept
    for the next call; by default they are allocated for this call.

    With ``rows`` (pair indices), the problem's pairs are ``diff[rows]``, gathered into
    the loop's own copy (a reduced problem need not copy them first).

    Returns ``(M, step, steps, rejected, HL, nL, to_R, to_L, checks, n_checks, z, S,
    S_+, primal, dual, gap)``: ``to_R``/``to_L`` the screened triplets (values of
    ``work``), ``checks`` rows (step, n_R, n_L) of the first screening check and of
    those that screened something, ``n_checks`` the number of checks, ``z`` the values
    of the remaining triplets (in input order) at the returned M, and S, primal, dual,
    gap the evaluation there.
    """
    cdef SpgWorkspace ws = workspace
    if ws is None or ws.busy:
        ws = SpgWorkspace()
    ws.busy = True
    try:
        return _spg(ws, diff_in, pos_in, neg_in, hnorm, work_in, HL_in, nL, gamma, lam,
                    M_in, eta, max_steps, tol, interval, use_gb, use_pgb, use_dgb, screen,
                    rows_in)
    finally:
        ws.busy = False
        if ws.total_bytes > ws.kept_bytes:
            ws.release()


cdef tuple _spg(SpgWorkspace ws, diff_in, pos_in, neg_in, const double[::1] hnorm,
                const int[::1] work_in, HL_in, double nL, double gamma, double lam, M_in,
                double eta, Py_ssize_t max_steps, double tol, Py_ssize_t interval,
                bint use_gb, bint use_pgb, bint use_dgb, bint screen, rows_in):
    cdef const double[:, ::1] diff_src = np.ascontiguousarray(diff_in, dtype=np.float64)
    cdef const int[::1] rows_src
    cdef bint gather = rows_in is not None
    if gather:
        rows_src = np.ascontiguousarray(rows_in, dtype=np.int32)
        if rows_src.shape[0] and (np.min(rows_in) < 0
                                  or np.max(rows_in) >= diff_src.shape[0]):
            raise ValueError("spg: a pair index out of range")
    cdef const int[::1] pos_src = np.ascontiguousarray(pos_in, dtype=np.int32)
    cdef const int[::1] neg_src = np.ascontiguousarray(neg_in, dtype=np.int32)
    HL_arr = np.array(HL_in, dtype=np.float64, order="C")
    M_arr = np.array(M_in, dtype=np.float64, order="C")
    cdef double[:, ::1] HL = HL_arr
    cdef double[:, ::1] Mv = M_arr
    cdef Py_ssize_t npairs = rows_src.shape[0] if gather else diff_src.shape[0]
    cdef Py_ssize_t n = pos_src.shape[0]
    cdef int d = Mv.shape[0], dd = d * d
    if (Mv.shape[1] != d or HL.shape[0] != d or HL.shape[1] != d
            or diff_src.shape[1] != d or neg_src.shape[0] != n or work_in.shape[0] != n):
        raise ValueError("spg: inconsistent shapes")
    cdef Py_ssize_t interval_ = max(interval, 1)
    # rows: the first check and those that screened (each removes a triplet)
    cdef Py_ssize_t cap_checks = min(max_steps // interval_ + 2, max(n, 1) + 1) if screen else 1
    cdef bint private = screen or gather or npairs == 0 or d == 0 or n == 0
    ws.reserve(npairs, n, d, cap_checks, private)
    # private copies (the screening compacts them in place) and buffers, from the
    # workspace; without screening nothing is written to the pairs and triplets, which
    # are then read in place (a copy would move as much memory as the pairs at every
    # plain step and, at the path's first such step, fault in the copies' memory)
    cdef double[:, ::1] diff
    cdef int[::1] pos
    cdef int[::1] neg
    if private:
        diff = ws.diff
        pos = ws.pos
        neg = ws.neg
    else:
        diff = <double[:npairs, :d]> <double*> &diff_src[0, 0]
        pos = <int[:n]> <int*> &pos_src[0]
        neg = <int[:n]> <int*> &neg_src[0]
    cdef double[::1] hn = ws.hn
    cdef int[::1] widx = ws.widx
    cdef int[::1] out = ws.out
    cdef long long[:, ::1] checks = ws.checks
    cdef double[::1] z = ws.z
    cdef double[::1] w = ws.w
    cdef double[:, ::1] T = ws.T
    cdef double[:, ::1] T2 = ws.T2
    cdef double[::1] D = ws.D
    cdef double[::1] Dn = ws.Dn
    cdef double[::1] Dt = ws.Dt
    cdef double[::1] svec = ws.svec
    cdef double[::1] Phi = ws.Phi
    S_arr = np.zeros((d, d))
    Sp_arr = np.zeros((d, d))
    cdef double[:, ::1] S = S_arr
    cdef double[:, ::1] Sp = Sp_arr
    cdef double[:, ::1] mats = ws.mats
    cdef double* G = &mats[0, 0]
    cdef double* Mn = &mats[1, 0]
    cdef double* Bn = &mats[2, 0]
    cdef double* dM = &mats[3, 0]
    cdef double* Gn = &mats[4, 0]
    cdef double* Barg = &mats[5, 0]
    cdef double* Stmp = &mats[6, 0]
    cdef signed char[::1] codes = ws.codes
    cdef long long[::1] remap = ws.remap
    cdef double[::1] work = ws.work
    cdef double[::1] hist = ws.hist
    # state
    cdef bint usev = use_vech_c(npairs, d), check = screen
    cdef Py_ssize_t k = 0, total_reject = 0, n_R_out = 0, n_L_out = 0, n_rows = 0
    cdef Py_ssize_t n_checks = 0, t, p, count, cap_out = out.shape[0]
    cdef Py_ssize_t nR, nLnew, kept, n_try
    cdef bint hl_from_s
    cdef double a_t
    cdef int i
    cdef double loss, sa = 0.0, sa2 = 0.0, mHL = 0.0, mm0 = 0.0, P, gap, gap_best
    cdef double dual = 0.0, gd, mdm, dmdm, dhl, Pref, t_step, Pt, den, tq
    cdef double mg, gg, mm, gv, dg
    cdef double* Dc
    cdef double* D_ptr = &D[0]
    cdef double* Dn_ptr = &Dn[0]
    cdef double* tmp_ptr
    cdef double* M = &Mv[0, 0]
    cdef double* phi_ptr = &Phi[0]
    with nogil:
        if private:
            if gather and d:
                for p in range(npairs):
                    memcpy(&diff[p, 0], &diff_src[rows_src[p], 0], d * sizeof(double))
            elif npairs and d:
                memcpy(&diff[0, 0], &diff_src[0, 0], npairs * d * sizeof(double))
            if n:
                memcpy(&pos[0], &pos_src[0], n * sizeof(int))
                memcpy(&neg[0], &neg_src[0], n * sizeof(int))
        if screen:  # (what the screening reads)
            if n:
                memcpy(&widx[0], &work_in[0], n * sizeof(int))
            for t in range(n):
                hn[t] = hnorm[work_in[t]]
    with nogil:
        if usev:
            build_phi_c(&diff[0, 0], npairs, d, phi_ptr)
        # evaluation at the start point
        if npairs:
            pair_forms_c(&diff[0, 0], npairs, d, phi_ptr, usev, M, &T[0, 0], D_ptr,
                         &work[0])
        loss = triplet_pass_c(D_ptr, &pos[0], &neg[0], n, gamma, &z[0], &w[0], npairs,
                              &sa, &sa2)
        _laplacian(diff, npairs, d, phi_ptr, usev, &w[0], T, T2, &svec[0], &S[0, 0])
        for i in range(dd):
            (&S[0, 0])[i] += (&HL[0, 0])[i]
            mHL += M[i] * (&HL[0, 0])[i]
            mm0 += M[i] * M[i]
            G[i] = lam * M[i] - (&S[0, 0])[i]
        P = loss + (1.0 - 0.5 * gamma) * nL - mHL + 0.5 * lam * mm0
        for i in range(_NONMONOTONE):
            hist[i] = P
        while True:
            # this step's projection (one eigendecomposition); its negative part is also
            # the dual point of the gap at M
            for i in range(dd):
                Barg[i] = M[i] - eta * G[i]
            psd_parts_c(Barg, d, Mn, Bn, &work[0])
            gap = projection_gap_c(M, &S[0, 0], Bn, d, eta, lam)
            if check and n > 0:
                # the smallest radius for the rule: the best dual point at this alpha
                gap_best = gap_terms_c(M, &S[0, 0], d, lam, sa, sa2, nL, gamma, Stmp,
                                       &dual, &work[0])
                gap = min(gap, gap_best)
                ball_codes_c(&diff[0, 0], npairs, d, phi_ptr, usev, &T[0, 0], &Dt[0],
                             &pos[0], &neg[0], n, &hn[0], &z[0], M, G, gap, lam, gamma,
                             use_gb, use_pgb, use_dgb, &codes[0], &work[0])
                nR = 0
                nLnew = 0
                for t in range(n):
                    if codes[t] == 1:
                        nLnew += 1
                # H_L grows by the new L triplets' H_t. Where they outnumber the
                # triplets that stay, it is had from S instead (S = H_L plus every
                # triplet's alpha_t H_t at M, 1 for the new L, 0 for the new R: the new
                # H_L is S less the staying triplets' weighted sum), over the staying
                # triplets' pairs only, after the compaction below
                hl_from_s = 2 * nLnew > n
                memset(&w[0], 0, npairs * sizeof(double))
                for t in range(n):  # R from the front of ``out``, L from its back
                    if codes[t] == 0:
                        continue
                    if codes[t] == 1:  # H_t joins H_L, through its pair weights
                        n_L_out += 1
                        out[cap_out - n_L_out] = widx[t]
                        if not hl_from_s:
                            w[pos[t]] += 1.0
                            w[neg[t]] -= 1.0
                    else:
                        out[n_R_out] = widx[t]
                        n_R_out += 1
                        nR += 1
                if nLnew and not hl_from_s:
                    # (the triplets of an anchor share pairs: one outer product each)
                    _laplacian(diff, npairs, d, phi_ptr, usev, &w[0], T, T2, &svec[0],
                               Stmp)
                    for i in range(dd):
                        (&HL[0, 0])[i] += Stmp[i]
                if (n_checks == 0 or nR + nLnew > 0) and n_rows < checks.shape[0]:
                    checks[n_rows, 0] = k
                    checks[n_rows, 1] = nR
                    checks[n_rows, 2] = nLnew
                    n_rows += 1
                n_checks += 1
                if nR + nLnew > 0:
                    # the screened triplets are on their side at M (every ball contains
                    # it): objective, S, gradient and gap are unchanged
                    nL += nLnew
                    kept = 0
                    for t in range(n):
                        if codes[t] == 0:
                            pos[kept] = pos[t]
                            neg[kept] = neg[t]
                            hn[kept] = hn[t]
                            widx[kept] = widx[t]
                            z[kept] = z[t]
                            kept += 1
                    n = kept
                    count = _pair_remap(&pos[0], &neg[0], n, npairs, &remap[0])
                    if count <= (1.0 - _PAIR_SLACK) * npairs:
                        # enough pairs unused: shrink the per-pair arrays (the others
                        # cost one pair form each per step until then)
                        usev = _compact_pairs(diff, npairs, d, phi_ptr, usev, D_ptr,
                                              &pos[0], &neg[0], n, &remap[0], count)
                        npairs = count
                    if hl_from_s:
                        memset(&w[0], 0, npairs * sizeof(double))
                        for t in range(n):  # (alpha_t as the triplet pass has it)
                            a_t = _alpha(z[t], gamma)
                            if a_t != 0.0:
                                w[pos[t]] += a_t
                                w[neg[t]] -= a_t
                        _laplacian(diff, npairs, d, phi_ptr, usev, &w[0], T, T2, &svec[0],
                                   Stmp)
                        for i in range(dd):
                            (&HL[0, 0])[i] = (&S[0, 0])[i] - Stmp[i]
                    mHL = 0.0
                    for i in range(dd):
                        mHL += M[i] * (&HL[0, 0])[i]
            if gap <= tol * fabs(P) or k >= max_steps:
                break
            # projected direction and its pair forms
            gd = 0.0
            mdm = 0.0
            dmdm = 0.0
            dhl = 0.0
            for i in range(dd):
                dM[i] = Mn[i] - M[i]
                gd += G[i] * dM[i]
                mdm += M[i] * dM[i]
                dmdm += dM[i] * dM[i]
                dhl += (&HL[0, 0])[i] * dM[i]
            if npairs:
                pair_forms_c(&diff[0, 0], npairs, d, phi_ptr, usev, Mn, &T[0, 0], Dn_ptr,
                             &work[0])
            Pref = hist[0]
            for i in range(1, _NONMONOTONE):
                Pref = max(Pref, hist[i])
            t_step = 1.0
            n_try = 0
            while True:  # non-monotone line search along the segment (SPG2)
                if t_step == 1.0:
                    Dc = Dn_ptr
                else:
                    for p in range(npairs):
                        Dt[p] = D_ptr[p] + t_step * (Dn_ptr[p] - D_ptr[p])
                    Dc = &Dt[0]
                loss = triplet_pass_c(Dc, &pos[0], &neg[0], n, gamma, &z[0], &w[0],
                                      npairs, &sa, &sa2)
                Pt = (loss + (1.0 - 0.5 * gamma) * nL - (mHL + t_step * dhl)
                      + 0.5 * lam * (mm0 + 2.0 * t_step * mdm + t_step * t_step * dmdm))
                if Pt <= Pref + _SUFFICIENT * t_step * gd + 1e-13 * fabs(Pref) or \
                        n_try >= _MAX_BACKTRACK:
                    break
                n_try += 1
                total_reject += 1
                # safeguarded quadratic interpolation in [0.1 t, 0.5 t]
                den = 2.0 * (Pt - P - t_step * gd)
                tq = -gd * t_step * t_step / den if den > 0.0 else 0.5 * t_step
                t_step = min(max(tq, 0.1 * t_step), 0.5 * t_step)
            if t_step != 1.0:
                for i in range(dd):
                    Mn[i] = M[i] + t_step * dM[i]
                    dM[i] = t_step * dM[i]
                if npairs:
                    memcpy(Dn_ptr, &Dt[0], npairs * sizeof(double))
            _laplacian(diff, npairs, d, phi_ptr, usev, &w[0], T, T2, &svec[0], &S[0, 0])
            mg = 0.0
            gg = 0.0
            mm = 0.0
            mHL = 0.0
            mm0 = 0.0
            for i in range(dd):
                (&S[0, 0])[i] += (&HL[0, 0])[i]
                gv = lam * Mn[i] - (&S[0, 0])[i]
                dg = gv - G[i]
                Gn[i] = gv
                mg += dM[i] * dg
                gg += dg * dg
                mm += dM[i] * dM[i]
                mHL += Mn[i] * (&HL[0, 0])[i]
                mm0 += Mn[i] * Mn[i]
            if mg > 0.0 and gg > 0.0:
                eta = 0.5 * fabs(mg / gg + mm / mg)  # averaged Barzilai-Borwein step
            memcpy(M, Mn, dd * sizeof(double))
            memcpy(G, Gn, dd * sizeof(double))
            P = Pt
            tmp_ptr = D_ptr  # the accepted pair forms become the current ones
            D_ptr = Dn_ptr
            Dn_ptr = tmp_ptr
            hist[k % _NONMONOTONE] = P
            k += 1
            check = screen and k % interval_ == 0
        # the returned evaluation with the best dual point for this alpha, -S_- (its gap
        # is at most the projection's)
        gap_best = gap_terms_c(M, &S[0, 0], d, lam, sa, sa2, nL, gamma, &Sp[0, 0], &dual,
                               &work[0])
        gap = min(gap, gap_best)
    out_arr = ws.out_arr
    return (M_arr, eta, k, total_reject, HL_arr, nL, out_arr[:n_R_out].copy(),
            out_arr[cap_out - n_L_out:][::-1].copy(), ws.checks_arr[:n_rows].copy(),
            n_checks, ws.z_arr[:n].copy(), S_arr, Sp_arr, P, dual, gap)


cdef inline double _alpha(double z, double gamma) noexcept nogil:
    """The dual weight -l'(z) of a triplet at value z (as ``triplet_pass_c`` has it)."""
    if z >= 1.0:
        return 0.0
    if gamma > 0.0 and z >= 1.0 - gamma:
        return (1.0 - z) / gamma
    return 1.0


cdef inline void _laplacian(double[:, ::1] diff, Py_ssize_t npairs, int d, double* Phi,
                            bint usev, double* w, double[:, ::1] T, double[:, ::1] T2,
                            double* svec, double* S) noexcept nogil:
    if npairs == 0:
        memset(S, 0, d * d * sizeof(double))
        return
    laplacian_sum_c(&diff[0, 0], npairs, d, Phi, usev, w, &T[0, 0], &T2[0, 0], svec, S)


cdef Py_ssize_t _pair_remap(const int* pos, const int* neg, Py_ssize_t n,
                            Py_ssize_t npairs, long long* remap) noexcept nogil:
    """New index of every pair still used by a triplet (-1 otherwise); their count."""
    cdef Py_ssize_t t, p, count = 0
    for p in range(npairs):
        remap[p] = -1
    for t in range(n):
        remap[pos[t]] = 0
        remap[neg[t]] = 0
    for p in range(npairs):
        if remap[p] == 0:
            remap[p] = count
            count += 1
    return count


cdef bint _compact_pairs(double[:, ::1] diff, Py_ssize_t npairs, int d, double* Phi,
                         bint usev, double* D, int* pos, int* neg, Py_ssize_t n,
                         const long long* remap, Py_ssize_t count) noexcept nogil:
    """Drop the unused pairs in place (the new index of a pair is never above its old
    one): differences, pair forms, vech table (rows moved, or built when the set
    becomes small enough) and the triplets' pair indices. Returns the new ``usev``."""
    cdef Py_ssize_t p, q, t
    cdef int m = d * (d + 1) // 2
    cdef bint nusev = use_vech_c(count, d)
    for p in range(npairs):
        q = remap[p]
        if q >= 0 and q != p:
            memcpy(&diff[q, 0], &diff[p, 0], d * sizeof(double))
            D[q] = D[p]
            if usev and nusev:
                memcpy(&Phi[q * m], &Phi[p * m], m * sizeof(double))
    if nusev and not usev:
        build_phi_c(&diff[0, 0], count, d, Phi)
    for t in range(n):
        pos[t] = <int>remap[pos[t]]
        neg[t] = <int>remap[neg[t]]
    return nusev
