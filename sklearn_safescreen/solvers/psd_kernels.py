r"""The compiled loop of the PSD projected-gradient solver (:mod:`.psd_gradient`).

:func:`spg` is projected gradient with the averaged Barzilai-Borwein step and the
non-monotone sufficient-decrease test of spectral projected gradient (Birgin, Martinez
and Raydan 2000, "SPG2"): a rejected step is shortened *along the projected direction*
:math:`M+t(P(M-\eta G)-M)`, which stays PSD and whose pair forms are the linear
interpolation of two known ones, so a rejection costs one pass over the triplets instead
of a projection (an eigendecomposition) and new pair forms. The relative duality gap is
checked at every step at no extra eigendecomposition: the negative part of the
projection's argument :math:`M-\eta G` gives the dual point
(:func:`~sklearn_safescreen.problems.triplet_kernels.projection_gap`).

Dynamic screening runs inside the loop: every ``interval`` steps (and at the start
point) the sphere rule with the GB, PGB and/or DGB balls at the iterate
(:func:`~sklearn_safescreen.screening.triplet_kernels.ball_codes`); screened triplets
leave the arrays (and, once a quarter of the pairs are no longer used, the unused
pairs), those in :math:`\hat{\mathcal L}` are folded into :math:`H_{\hat L}`. Every
ball contains the iterate, so the objective, gradient and step history stay valid.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.triplet_kernels import (
    build_phi,
    gap_terms,
    laplacian_sum,
    pair_forms,
    projection_gap,
    psd_parts,
    triplet_pass,
    use_vech,
)
from ..screening.triplet_kernels import ball_codes

#: Non-monotone acceptance: a step is accepted if the objective is below the largest of
#: the last NONMONOTONE values minus SUFFICIENT * t * <grad, direction> (SPG).
NONMONOTONE = 10


SUFFICIENT = 1e-4


#: Rejected steps allowed in a row before a (tiny) step is accepted anyway.
MAX_BACKTRACK = 60


#: Pairs are compacted once this fraction of them is no longer used by any triplet.
PAIR_SLACK = 0.25


@njit(cache=True)
def _drop_triplets(pos, neg, hn, widx, z, keep):
    """Keep the triplets with ``keep != 0`` (in order), in place; returns the views."""
    m = 0
    for t in range(pos.shape[0]):
        if keep[t]:
            pos[m], neg[m], hn[m], widx[m], z[m] = pos[t], neg[t], hn[t], widx[t], z[t]
            m += 1
    return pos[:m], neg[:m], hn[:m], widx[:m], z[:m]


@njit(cache=True)
def _pair_remap(pos, neg, npairs):
    """New index of every pair still used by a triplet (-1 otherwise) and their count."""
    remap = np.full(npairs, -1, dtype=np.int64)
    for t in range(pos.shape[0]):
        remap[pos[t]] = 0
        remap[neg[t]] = 0
    count = 0
    for p in range(npairs):
        if remap[p] == 0:
            remap[p] = count
            count += 1
    return remap, count


@njit(cache=True)
def _compact_pairs(diff, Phi, usev, D, pos, neg, remap, count):
    """Drop the unused pairs (``remap`` from :func:`_pair_remap`): new differences, vech
    table (rows copied, or built when the set becomes small enough) and pair forms."""
    npairs, d = diff.shape
    nd = np.empty((count, d))
    nD = np.empty(count)
    for p in range(npairs):
        q = remap[p]
        if q >= 0:
            nd[q] = diff[p]
            nD[q] = D[p]
    nusev = use_vech(count, d)
    if nusev and usev:  # copy the rows already built
        nphi = np.empty((count, Phi.shape[1]))
        for p in range(npairs):
            if remap[p] >= 0:
                nphi[remap[p]] = Phi[p]
    elif nusev:
        nphi = build_phi(nd)
    else:
        nphi = np.empty((0, 0))
    for t in range(pos.shape[0]):
        pos[t] = remap[pos[t]]
        neg[t] = remap[neg[t]]
    return nd, nphi, nusev, nD


@njit(cache=True)
def spg(diff, pos, neg, hn, HL, nL, gamma, lam, M, eta, max_steps, tol, interval, use_gb,
        use_pgb, use_dgb, screen):
    r"""Minimise the reduced primal (spec 1.9) from the PSD point ``M`` over the triplets
    of pair indices ``pos``/``neg`` into the pair differences ``diff`` (norms ``hn``),
    with :math:`H_{\hat L}` = ``HL`` and :math:`|\hat{\mathcal L}|` = ``nL``: at most
    ``max_steps`` accepted steps, until the relative gap is at most ``tol``.

    With ``screen``, the sphere rule with the GB/PGB/DGB balls (``use_*``) runs at the
    start point and every ``interval`` steps.

    Returns ``(M, step, steps, rejected, HL, nL, screened, codes, checks, z, S, S_+,
    primal, dual, gap)``: ``screened`` are positions in the input arrays (codes 2 = R,
    1 = L), ``checks`` one row (step, n_R, n_L) per screening check, ``z`` the values of
    the remaining triplets (in input order) at the returned M, and S, primal, dual, gap
    the evaluation there.
    """
    diff = diff.copy()
    pos = pos.copy()
    neg = neg.copy()
    hn = hn.copy()
    HL = HL.copy()
    M = M.copy()
    npairs, d = diff.shape
    usev = use_vech(npairs, d)
    Phi = build_phi(diff) if usev else np.empty((0, 0))
    widx = np.arange(pos.shape[0])
    out_idx = np.empty(pos.shape[0], dtype=np.int64)
    out_code = np.empty(pos.shape[0], dtype=np.int8)
    n_out = 0
    checks = np.zeros((16, 3), dtype=np.int64)
    n_checks = 0
    z = np.empty(pos.shape[0])
    w = np.empty(npairs)
    T = np.empty((npairs, d))
    T2 = np.empty((npairs, d))
    D = np.empty(npairs)
    Dn = np.empty(npairs)
    Dt = np.empty(npairs)
    svec = np.empty(d * (d + 1) // 2)
    # evaluation at the start point
    pair_forms(diff, Phi, usev, M, T, D)
    loss, sa, sa2 = triplet_pass(D, pos, neg, gamma, z, w)
    S = laplacian_sum(diff, Phi, usev, w, T, T2, svec) + HL
    mHL = np.sum(M * HL)
    mm0 = np.sum(M * M)
    P = loss + (1.0 - 0.5 * gamma) * nL - mHL + 0.5 * lam * mm0
    G = lam * M - S
    k = 0
    total_reject = 0
    hist = np.full(NONMONOTONE, P)
    check = screen
    while True:
        # this step's projection (one eigendecomposition); its negative part is also the
        # dual point of the gap at M (see projection_gap)
        Mn, Bn = psd_parts(M - eta * G)
        gap = projection_gap(M, S, Bn, eta, lam)
        if check and pos.shape[0] > 0:
            # the smallest radius for the rule: the best dual point at this alpha
            gap = min(gap, gap_terms(M, S, lam, sa, sa2, nL, gamma)[2])
            codes = ball_codes(diff, Phi, usev, T, Dt, pos, neg, hn, z, M, G, gap, lam,
                               gamma, use_gb, use_pgb, use_dgb)
            nR = 0
            nLnew = 0
            w[:] = 0.0
            for t in range(pos.shape[0]):
                if codes[t] == 0:
                    continue
                out_idx[n_out] = widx[t]
                out_code[n_out] = codes[t]
                n_out += 1
                if codes[t] == 1:  # H_t joins H_L (spec 1.9), through its pair weights
                    nLnew += 1
                    w[pos[t]] += 1.0
                    w[neg[t]] -= 1.0
                else:
                    nR += 1
            if nLnew:  # (the triplets of an anchor share pairs: one outer product each)
                HL += laplacian_sum(diff, Phi, usev, w, T, T2, svec)
            if n_checks == checks.shape[0]:
                bigger = np.zeros((2 * n_checks, 3), dtype=np.int64)
                bigger[:n_checks] = checks
                checks = bigger
            checks[n_checks, 0] = k
            checks[n_checks, 1] = nR
            checks[n_checks, 2] = nLnew
            n_checks += 1
            if nR + nLnew > 0:
                # the screened triplets are on their side at M (every ball contains it):
                # objective, S, gradient and gap are unchanged
                nL += nLnew
                keep = (codes == 0).astype(np.int8)
                pos, neg, hn, widx, z = _drop_triplets(pos, neg, hn, widx, z, keep)
                remap, count = _pair_remap(pos, neg, npairs)
                if count <= (1.0 - PAIR_SLACK) * npairs:
                    # enough pairs unused: shrink the per-pair arrays (the others cost
                    # one pair form each per step until then)
                    diff, Phi, usev, D = _compact_pairs(diff, Phi, usev, D, pos, neg,
                                                        remap, count)
                    npairs = count
                    w = np.empty(npairs)
                    T = np.empty((npairs, d))
                    T2 = np.empty((npairs, d))
                    Dn = np.empty(npairs)
                    Dt = np.empty(npairs)
                mHL = np.sum(M * HL)
        if gap <= tol * abs(P) or k >= max_steps:
            break
        # projected direction and its pair forms
        dM = Mn - M
        gd = 0.0
        mdm = 0.0
        dmdm = 0.0
        dhl = 0.0
        for r in range(d):
            for c in range(d):
                v = dM[r, c]
                gd += G[r, c] * v
                mdm += M[r, c] * v
                dmdm += v * v
                dhl += HL[r, c] * v
        pair_forms(diff, Phi, usev, Mn, T, Dn)
        Pref = hist.max()
        t_step = 1.0
        n_try = 0
        while True:  # non-monotone line search along the segment (SPG2)
            if t_step == 1.0:
                Dc = Dn
            else:
                for p in range(npairs):
                    Dt[p] = D[p] + t_step * (Dn[p] - D[p])
                Dc = Dt
            loss, sa, sa2 = triplet_pass(Dc, pos, neg, gamma, z, w)
            Pt = (loss + (1.0 - 0.5 * gamma) * nL - (mHL + t_step * dhl)
                  + 0.5 * lam * (mm0 + 2.0 * t_step * mdm + t_step * t_step * dmdm))
            if Pt <= Pref + SUFFICIENT * t_step * gd + 1e-13 * abs(Pref) or \
                    n_try >= MAX_BACKTRACK:
                break
            n_try += 1
            total_reject += 1
            # safeguarded quadratic interpolation in [0.1 t, 0.5 t]
            den = 2.0 * (Pt - P - t_step * gd)
            tq = -gd * t_step * t_step / den if den > 0.0 else 0.5 * t_step
            t_step = min(max(tq, 0.1 * t_step), 0.5 * t_step)
        if t_step != 1.0:
            Mn = M + t_step * dM
            dM = t_step * dM
            Dn[:] = Dt
        S = laplacian_sum(diff, Phi, usev, w, T, T2, svec) + HL
        mg = 0.0
        gg = 0.0
        mm = 0.0
        mHL = 0.0
        mm0 = 0.0
        Gn = np.empty((d, d))
        for r in range(d):
            for c in range(d):
                gv = lam * Mn[r, c] - S[r, c]
                Gn[r, c] = gv
                dg = gv - G[r, c]
                mg += dM[r, c] * dg
                gg += dg * dg
                mm += dM[r, c] * dM[r, c]
                mHL += Mn[r, c] * HL[r, c]
                mm0 += Mn[r, c] * Mn[r, c]
        if mg > 0.0 and gg > 0.0:
            eta = 0.5 * abs(mg / gg + mm / mg)  # averaged Barzilai-Borwein step
        M = Mn
        G = Gn
        P = Pt
        D, Dn = Dn, D
        hist[k % NONMONOTONE] = P
        k += 1
        check = screen and k % interval == 0
    # the returned evaluation with the best dual point for this alpha, Gamma = -S_-
    # (its gap is at most the projection's)
    Sp, dual, gap_best = gap_terms(M, S, lam, sa, sa2, nL, gamma)
    gap = min(gap, gap_best)
    return (M, eta, k, total_reject, HL, nL, out_idx[:n_out], out_code[:n_out],
            checks[:n_checks], z.copy(), S, Sp, P, dual, gap)

