r"""Compiled kernels of the triplet problem: its objective, dual point and duality gap.

Everything the triplet problem needs per evaluation, compiled (numba, ``cache=True``),
used by :mod:`.triplet_problem`, the screening rules and the solver loop
(:mod:`sklearn_safescreen.solvers.psd_kernels`):

* **Small symmetric eigendecomposition** (:func:`eigh_rows`): Householder
  tridiagonalisation and implicit QL (EISPACK ``tred2``/``tql2``), about twice as fast as
  LAPACK's ``dsyevd`` for the d <= 24 matrices of the projection and of the gap (LAPACK
  above, or if QL does not converge). Only orthogonality of the eigenvectors matters for
  safety: the PSD part is rebuilt from the kept eigenpairs, so it is PSD whatever the
  accuracy, and the duality gap uses :math:`\Gamma=-S_-` built the same way (negative
  semidefinite by construction), which makes it a valid upper bound.
* **Pair quadratic forms**: :math:`D_Q(p)=a_p^\top Qa_p` and the Laplacian sum
  :math:`\sum_pw_pa_pa_p^\top` over the pairs of the working triplets, either as matrix
  products with the d x d matrix (BLAS) or, when the pairs' half-vectorised outer
  products fit in ``VECH_BYTES``, as one matrix-vector product with them (half the
  flops, and no d x d product per pair). The sum skips pairs of zero weight (those whose
  triplets all have zero loss at the point).
* **The loss pass** (:func:`triplet_pass`): values, loss, dual variables and pair
  weights of the working triplets in one pass.
* **Gaps** (:func:`gap_terms`, :func:`projection_gap`): the cancellation-free duality
  gap, against the best dual point or against the one a projection provides.
* **Full-problem passes**: the reduced problem's arrays from the per-triplet status
  (:func:`status_split`), and the certificate's pass over every triplet
  (:func:`certificate_pass`).

The mathematics is on ``doc/theory/metric_learning.rst``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Largest dimension handled by the compiled QL eigensolver (LAPACK above).
SMALL_EIGH = 24


#: Largest size of the half-vectorised pair outer products (matrix-vector form).
VECH_BYTES = 1 << 20


@njit(cache=True)
def _tql2(A):
    """Eigenpairs of the symmetric ``A``: (values, rows = eigenvectors, converged).

    EISPACK tred2 + tql2 (as in JAMA), on the transposed storage so that rotations and
    reflections run along contiguous rows. Eigenvalues are not sorted."""
    n = A.shape[0]
    W = A.copy()
    d = np.empty(n)
    e = np.empty(n)
    for j in range(n):
        d[j] = W[j, n - 1]
    # Householder reduction to tridiagonal form
    for i in range(n - 1, 0, -1):
        scale = 0.0
        h = 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = W[j, i - 1]
                W[j, i] = 0.0
                W[i, j] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = np.sqrt(h)
            if f > 0:
                g = -g
            e[i] = scale * g
            h = h - f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                W[i, j] = f
                g = e[j] + W[j, j] * f
                for k in range(j + 1, i):
                    g += W[j, k] * d[k]
                    e[k] += W[j, k] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f = d[j]
                g = e[j]
                for k in range(j, i):
                    W[j, k] -= f * e[k] + g * d[k]
                d[j] = W[j, i - 1]
                W[j, i] = 0.0
        d[i] = h
    # accumulate the transformations
    for i in range(n - 1):
        W[i, n - 1] = W[i, i]
        W[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = W[i + 1, k] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += W[i + 1, k] * W[j, k]
                for k in range(i + 1):
                    W[j, k] -= g * d[k]
        for k in range(i + 1):
            W[i + 1, k] = 0.0
    for j in range(n):
        d[j] = W[j, n - 1]
        W[j, n - 1] = 0.0
    W[n - 1, n - 1] = 1.0
    # implicit QL on the tridiagonal matrix
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    tst1 = 0.0
    eps = 2.0 ** -52
    converged = True
    for l in range(n):  # noqa: E741 - the classical name
        tst1 = max(tst1, abs(d[l]) + abs(e[l]))
        m = l
        while m < n - 1:
            if abs(e[m]) <= eps * tst1:
                break
            m += 1
        if m > l:
            it = 0
            while True:
                it += 1
                g = d[l]
                p = (d[l + 1] - g) / (2.0 * e[l])
                r = np.sqrt(p * p + 1.0)
                if p < 0:
                    r = -r
                d[l] = e[l] / (p + r)
                d[l + 1] = e[l] * (p + r)
                dl1 = d[l + 1]
                h = g - d[l]
                for i in range(l + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = 1.0
                c2 = c
                c3 = c
                el1 = e[l + 1]
                s = 0.0
                s2 = 0.0
                for i in range(m - 1, l - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = np.sqrt(p * p + e[i] * e[i])
                    e[i + 1] = s * r
                    s = e[i] / r
                    c = p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = W[i + 1, k]
                        W[i + 1, k] = s * W[i, k] + c * h
                        W[i, k] = c * W[i, k] - s * h
                p = -s * s2 * c3 * el1 * e[l] / dl1
                e[l] = s * p
                d[l] = c * p
                if not abs(e[l]) > eps * tst1:
                    break
                if it >= 60:
                    converged = False
                    break
        d[l] = d[l] + f
        e[l] = 0.0
    return d, W, converged


@njit(cache=True)
def eigh_rows(A):
    """Eigenvalues and eigenvectors (as the ROWS of the second output, in no particular
    order) of the symmetric matrix ``A``.

    Entries far from 1 in magnitude (below 2**-500 or above 2**500, e.g. the closed form
    at a huge alpha) are first scaled by a power of two (exact), as LAPACK's drivers do:
    the rotations square them."""
    amax = 0.0
    for v in A.ravel():
        amax = max(amax, abs(v))
    if amax == 0.0:
        return np.zeros(A.shape[0]), np.eye(A.shape[0])
    if np.isfinite(amax) and (amax < 2.0 ** -500 or amax > 2.0 ** 500):
        e = -np.floor(np.log2(amax))  # |e| <= 1075: two factors keep 2**e finite
        up, down = 2.0 ** np.floor(e / 2), 2.0 ** (e - np.floor(e / 2))
        w, W = _eigh_rows((A * up) * down)
        return (w / up) / down, W
    return _eigh_rows(A)


@njit(cache=True)
def _eigh_rows(A):
    if A.shape[0] <= SMALL_EIGH:
        w, W, ok = _tql2(A)
        if ok and np.all(np.isfinite(w)):
            return w, W
    w, V = np.linalg.eigh(A)
    return w, np.ascontiguousarray(V.T)


@njit(cache=True)
def _signed_sum(w, W, sign):
    r""":math:`\sum_kw_kv_kv_k^\top` over the eigenpairs (rows ``v_k`` of ``W``) of
    positive (``sign > 0``) or negative eigenvalue, and the sum of the others' squares.
    Built from the kept rank-one terms alone: PSD (NSD) whatever the eigenvectors'
    accuracy."""
    d = W.shape[1]
    P = np.zeros((d, d))
    other = 0.0
    for k in range(w.shape[0]):  # upper triangle, then mirrored
        keep = (w[k] > 0.0) if sign > 0 else (w[k] < 0.0)
        if not keep:
            other += w[k] * w[k]
            continue
        for r in range(d):
            a = w[k] * W[k, r]
            for c in range(r, d):
                P[r, c] += a * W[k, c]
    for r in range(d):
        for c in range(r + 1, d):
            P[c, r] = P[r, c]
    return P, other


@njit(cache=True)
def sym_part(A, sign):
    r""":math:`B_+` (``sign > 0``) or :math:`B_-` of :math:`B=(A+A^\top)/2` from one
    eigendecomposition, and :math:`\|\cdot\|_F^2` of the other part."""
    w, W = eigh_rows(0.5 * (A + A.T))
    return _signed_sum(w, W, sign)


@njit(cache=True)
def psd_parts(A):
    r""":math:`B_+` and :math:`B_-` of :math:`B=(A+A^\top)/2` from one
    eigendecomposition, each summed from its own eigenpairs (PSD / NSD by
    construction)."""
    w, W = eigh_rows(0.5 * (A + A.T))
    return _signed_sum(w, W, 1.0)[0], _signed_sum(w, W, -1.0)[0]


@njit(cache=True)
def use_vech(npairs, d):
    """Whether the half-vectorised outer products of ``npairs`` pairs fit ``VECH_BYTES``."""
    return d <= 32 and npairs * (d * (d + 1) // 2) * 8 <= VECH_BYTES


@njit(cache=True)
def build_phi(diff):
    """Row p: the upper triangle of :math:`a_pa_p^\\top` (off-diagonal entries doubled),
    so that :math:`a_p^\\top Qa_p=\\langle\\phi_p,\\mathrm{vech}(Q)\\rangle`."""
    npairs, d = diff.shape
    Phi = np.empty((npairs, d * (d + 1) // 2))
    for p in range(npairs):
        j = 0
        for r in range(d):
            a = diff[p, r]
            Phi[p, j] = a * a
            j += 1
            for c in range(r + 1, d):
                Phi[p, j] = 2.0 * a * diff[p, c]
                j += 1
    return Phi


@njit(cache=True)
def _vech(Q):
    d = Q.shape[0]
    out = np.empty(d * (d + 1) // 2)
    j = 0
    for r in range(d):
        for c in range(r, d):
            out[j] = Q[r, c]
            j += 1
    return out


@njit(cache=True)
def pair_forms(diff, Phi, usev, Q, T, D):
    """:math:`D_p=a_p^\\top Qa_p` (``Q`` symmetric) into ``D``; ``T`` is an n_pairs x d
    workspace of the matrix-product form."""
    if usev:
        np.dot(Phi, _vech(Q), D)
        return
    np.dot(diff, Q, T)
    npairs, d = diff.shape
    for p in range(npairs):
        s = 0.0
        for c in range(d):
            s += T[p, c] * diff[p, c]
        D[p] = s


@njit(cache=True, fastmath=True)
def _sparse_rows_sum(Phi, w, s):
    npairs, m = Phi.shape
    for j in range(m):
        s[j] = 0.0
    for p in range(npairs):
        wp = w[p]
        if wp != 0.0:
            for j in range(m):
                s[j] += wp * Phi[p, j]


@njit(cache=True)
def laplacian_sum(diff, Phi, usev, w, T, T2, s):
    r""":math:`\sum_pw_pa_pa_p^\top` over the pairs of non-zero weight (``T``, ``T2``:
    n_pairs x d workspaces, ``s``: a vech-sized workspace)."""
    npairs, d = diff.shape
    S = np.empty((d, d))
    if usev:
        _sparse_rows_sum(Phi, w, s)
        j = 0
        for r in range(d):
            S[r, r] = s[j]
            j += 1
            for c in range(r + 1, d):
                S[r, c] = 0.5 * s[j]
                S[c, r] = S[r, c]
                j += 1
        return S
    nz = 0
    for p in range(npairs):
        wp = w[p]
        if wp != 0.0:
            for c in range(d):
                T2[nz, c] = diff[p, c]
                T[nz, c] = diff[p, c] * wp
            nz += 1
    S = np.dot(T2[:nz].T, T[:nz])
    return 0.5 * (S + S.T)


@njit(cache=True)
def triplet_pass(D, pos, neg, gamma, z, w):
    r""":math:`z_t=D_{pos(t)}-D_{neg(t)}`, the (smoothed) hinge loss, :math:`\alpha_t
    =-\ell'(z_t)` and the pair weights of :math:`\sum_t\alpha_tH_t` over the triplets.
    Returns (loss, sum alpha, sum alpha^2)."""
    w[:] = 0.0
    loss = 0.0
    sa = 0.0
    sa2 = 0.0
    for t in range(pos.shape[0]):
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
        sa += a
        sa2 += a * a
        w[p] += a
        w[q] -= a
    return loss, sa, sa2


@njit(cache=True)
def gap_terms(M, S, lam, sa, sa2, nL, gamma):
    r"""At the PSD point M with :math:`S=\sum\alpha_tH_t+H_{\hat L}`: (:math:`S_+`, dual,
    gap) with :math:`\Gamma=-S_-` (negative part from one eigendecomposition, so
    :math:`S_+:=S-S_-` and the dual value are valid whatever its accuracy) and the
    cancellation-free gap of pitfall P2."""
    Sn = sym_part(S, -1.0)[0]
    d = M.shape[0]
    Sp = S - Sn
    rr = 0.0
    msn = 0.0
    spsp = 0.0
    for r in range(d):
        for c in range(d):
            v = lam * M[r, c] - Sp[r, c]
            rr += v * v
            msn += M[r, c] * Sn[r, c]
            spsp += Sp[r, c] * Sp[r, c]
    gap = max(rr / (2.0 * lam) + max(-msn, 0.0), 0.0)
    dual = -0.5 * gamma * (sa2 + nL) + sa + nL - spsp / (2.0 * lam)
    return Sp, dual, gap


@njit(cache=True)
def projection_gap(M, S, Bn, eta, lam):
    r"""The gap at the PSD point M (with :math:`S=\sum\alpha_tH_t+H_{\hat L}`) against
    the dual point :math:`\Gamma=-B_-/\eta`, :math:`B_-` the negative part of the
    projected-gradient argument :math:`B=M-\eta G`: pitfall P2's stable form
    :math:`\|\lambda M-S-\Gamma\|^2/(2\lambda)+\langle M,\Gamma\rangle`, valid for
    every :math:`\Gamma\succeq O` (:math:`-B_-` is PSD by construction). At the optimum
    :math:`B_-=\eta S_-`, so it equals :func:`gap_terms`' gap there; along the
    iterations it comes with the projection, no second eigendecomposition."""
    d = M.shape[0]
    rr = 0.0
    mg = 0.0
    for r in range(d):
        for c in range(d):
            v = lam * M[r, c] - S[r, c] + Bn[r, c] / eta
            rr += v * v
            mg -= M[r, c] * Bn[r, c]
    return max(rr / (2.0 * lam) + max(mg / eta, 0.0), 0.0)


@njit(cache=True)
def status_split(status, pos, neg, diff):
    r"""The reduced problem's data from the per-triplet status (0 active, 1 in
    :math:`\hat{\mathcal L}`, 2 in :math:`\hat{\mathcal R}`) in one pass: the active
    triplets ``work``, their compact pair indices and the differences of those pairs,
    the pair weights ``wL`` of :math:`H_{\hat L}=\sum_{\hat L}H_t` and
    :math:`|\hat{\mathcal L}|`."""
    n = pos.shape[0]
    n_pairs = diff.shape[0]
    wL = np.zeros(n_pairs)
    mark = np.zeros(n_pairs, dtype=np.int8)
    n_work = 0
    nL = 0
    for t in range(n):
        s = status[t]
        if s == 0:
            n_work += 1
            mark[pos[t]] = 1
            mark[neg[t]] = 1
        elif s == 1:
            nL += 1
            wL[pos[t]] += 1.0
            wL[neg[t]] -= 1.0
    work = np.empty(n_work, dtype=np.int32)
    j = 0
    for t in range(n):
        if status[t] == 0:
            work[j] = t
            j += 1
    cpos, cneg, cdiff = _compact_rows(pos, neg, diff, work, mark)
    return work, cpos, cneg, cdiff, wL, nL


@njit(cache=True)
def compact_work(pos, neg, diff, work):
    """Compact pair indices of the triplets ``work`` and the differences of their pairs
    (in pair order)."""
    mark = np.zeros(diff.shape[0], dtype=np.int8)
    for s in range(work.shape[0]):
        mark[pos[work[s]]] = 1
        mark[neg[work[s]]] = 1
    return _compact_rows(pos, neg, diff, work, mark)


@njit(cache=True)
def _compact_rows(pos, neg, diff, work, mark):
    n_pairs, d = diff.shape
    remap = np.empty(n_pairs, dtype=np.int64)
    count = 0
    for p in range(n_pairs):
        if mark[p]:
            remap[p] = count
            count += 1
    cdiff = np.empty((count, d))
    for p in range(n_pairs):
        if mark[p]:
            cdiff[remap[p]] = diff[p]
    cpos = np.empty(work.shape[0], dtype=np.int32)
    cneg = np.empty(work.shape[0], dtype=np.int32)
    for s in range(work.shape[0]):
        cpos[s] = remap[pos[work[s]]]
        cneg[s] = remap[neg[work[s]]]
    return cpos, cneg, cdiff


@njit(cache=True)
def weighted_gram(diff, w):
    r""":math:`\sum_pw_pa_pa_p^\top` over the pairs of non-zero weight (full metric)."""
    npairs, d = diff.shape
    return laplacian_sum(diff, np.empty((0, 0)), False, w, np.empty((npairs, d)),
                         np.empty((npairs, d)), np.empty(0))


@njit(cache=True)
def certificate_pass(D, pos, neg, status, gamma):
    r"""From the pair forms ``D`` of M: the values :math:`z_t=\langle M,H_t\rangle` of
    every triplet, the loss :math:`\sum_t\ell(z_t)` of the full problem, and whether
    every screened triplet is on its side at M (:math:`z_t\ge1` in
    :math:`\hat{\mathcal R}`, :math:`z_t\le1-\gamma` in :math:`\hat{\mathcal L}`):
    then the full objective, dual point and gap equal the reduced ones (spec 1.9)."""
    n = pos.shape[0]
    z = np.empty(n)
    loss = 0.0
    on_side = True
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
            on_side = False
    return z, loss, on_side


@njit(cache=True)
def full_pair_forms(diff, M):
    r""":math:`a_p^\top Ma_p` for every pair (matrix-product form)."""
    npairs, d = diff.shape
    D = np.empty(npairs)
    pair_forms(diff, np.empty((0, 0)), False, M, np.empty((npairs, d)), D)
    return D


@njit(cache=True)
def loss_sum(z, gamma):
    r""":math:`\sum_t\ell(z_t)` (smoothed hinge, the hinge for gamma = 0)."""
    loss = 0.0
    for t in range(z.shape[0]):
        zt = z[t]
        if zt < 1.0:
            if gamma > 0.0 and zt >= 1.0 - gamma:
                loss += 0.5 * (1.0 - zt) * (1.0 - zt) / gamma
            else:
                loss += 1.0 - zt - 0.5 * gamma
    return loss



@njit(cache=True)
def add_h(HL, diff, pos, neg, idx):
    """HL + sum over idx of a a' - b b' (a, b the pair differences of each triplet)."""
    d = HL.shape[0]
    for s in range(idx.shape[0]):
        p = pos[idx[s]]
        q = neg[idx[s]]
        for r in range(d):
            ar = diff[p, r]
            br = diff[q, r]
            for c in range(d):
                HL[r, c] += ar * diff[p, c] - br * diff[q, c]
    return HL


@njit(cache=True)
def gather(D, pos, neg):
    out = np.empty(pos.shape[0])
    for t in range(pos.shape[0]):
        out[t] = D[pos[t]] - D[neg[t]]
    return out


@njit(cache=True)
def gather_idx(D, pos, neg, idx):
    out = np.empty(idx.shape[0])
    for s in range(idx.shape[0]):
        t = idx[s]
        out[s] = D[pos[t]] - D[neg[t]]
    return out


@njit(cache=True)
def evaluate_full(diff, pos, neg, HL, nL, gamma, lam, M, z, w):
    """Full evaluation (primal, dual, stable gap, S, S_+) for the full metric, with the
    kernels of the compiled solver."""
    npairs, d = diff.shape
    Phi = np.empty((0, 0))  # one evaluation: the products with M (no vech table)
    T = np.empty((npairs, d))
    D = np.empty(npairs)
    pair_forms(diff, Phi, False, M, T, D)
    loss, sa, sa2 = triplet_pass(D, pos, neg, gamma, z, w)
    S = laplacian_sum(diff, Phi, False, w, T, np.empty((npairs, d)),
                         np.empty(d * (d + 1) // 2)) + HL
    S_pos, dual, gap = gap_terms(M, S, lam, sa, sa2, nL, gamma)
    primal = loss + (1.0 - 0.5 * gamma) * nL - np.sum(M * HL) + 0.5 * lam * np.sum(M * M)
    return primal, dual, gap, S, S_pos

