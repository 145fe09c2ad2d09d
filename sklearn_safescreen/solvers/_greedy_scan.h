/* The two scans of the greedy kernel solver's loop (_greedy_fast.pyx), over contiguous
 * positions with a mask instead of through the list of active positions, four
 * positions at a time.
 *
 * Through the list, a scan's cost per position does not depend on the arrays' layout
 * (packed copies and branch-free forms of the scalar loop cost as much): each position
 * is a chain of dependent loads, compares and branches. Here every
 * quantity is computed for four positions at once with GCC/clang vector types, the
 * branches become lane selects, and each lane keeps its own best candidate; the lanes
 * are merged at the end. Positions outside the active set are read and masked out, so
 * the caller takes this form when the active positions are most of W.
 *
 * The choices are those of the scalar scans: the candidate of largest score, and among
 * equal scores the first position (each lane keeps its first; the merge takes the
 * smallest position among the lanes' equal bests). Built once per instruction set
 * (target_clones of _utils/_vec.h).
 */
#ifndef SAFESCREEN_GREEDY_SCAN_H
#define SAFESCREEN_GREEDY_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "sklearn_safescreen/_utils/_vec.h"

#if defined(__GNUC__) || defined(__clang__)
#define GS_VECTORS 1
typedef double gs_v4d __attribute__((vector_size(32)));
/* the lanes of a comparison of two gs_v4d (all ones or zero), and the slots */
typedef int64_t gs_v4l __attribute__((vector_size(32)));
#define GS_LOAD(p) ({ gs_v4d v_; __builtin_memcpy(&v_, (p), sizeof(v_)); v_; })
#define GS_LOADL(p) ({ gs_v4l v_; __builtin_memcpy(&v_, (p), sizeof(v_)); v_; })
/* lanes of x where the mask m is set (all ones), else of y */
#define GS_SEL(m, x, y) ((gs_v4d)((((gs_v4l)(x)) & (m)) | (((gs_v4l)(y)) & ~(m))))
#define GS_SELL(m, x, y) (((x) & (m)) | ((y) & ~(m)))
#else
#define GS_VECTORS 0
#endif

/* The first variable: over the positions j < m with on[j] != 0, the largest projected
 * gradient |v_j| (0 where the bound blocks the descent) into *vmax, and the position of
 * the largest decrease of the objective by the exact one-variable step, over all and
 * over those whose row is cached (slot[j] >= 0), into *best / *best_score and *cached /
 * *cached_score (-1 and 0 when no position decreases it). slot = NULL: every row is
 * cached (the cached best is the best). */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void gs_select(
    ptrdiff_t m, const double *g, const double *a, const double *lo, const double *hi,
    const double *diag, const double *inv_diag, const int64_t *slot, const double *on,
    double *vmax_out, ptrdiff_t *best_out, double *best_score_out, ptrdiff_t *cached_out,
    double *cached_score_out)
{
    double vmax = 0.0, best_score = 0.0, cached_score = 0.0;
    ptrdiff_t best = -1, cached = -1, j = 0;
#if GS_VECTORS
    const gs_v4d zero = {0.0, 0.0, 0.0, 0.0}, half = {0.5, 0.5, 0.5, 0.5};
    const gs_v4l none = {-1, -1, -1, -1}, step = {4, 4, 4, 4};
    gs_v4d vm = zero, bs = zero, cs = zero;
    gs_v4l bi = none, ci = none, idx = {0, 1, 2, 3};
    for (; j + 4 <= m; j += 4, idx += step) {
        gs_v4d G = GS_LOAD(g + j), A = GS_LOAD(a + j), L = GS_LOAD(lo + j);
        gs_v4d H = GS_LOAD(hi + j), D = GS_LOAD(diag + j);
        gs_v4l at_lo = A <= L, at_hi = A >= H;
        gs_v4d v = GS_SEL(at_lo, GS_SEL(G < zero, G, zero),
                          GS_SEL(at_hi, GS_SEL(G > zero, G, zero), G));
        gs_v4l live = (v != zero) & (GS_LOAD(on + j) != zero);
        gs_v4d av = GS_SEL(v < zero, -v, v);
        vm = GS_SEL(live & (av > vm), av, vm);
        gs_v4d nw = A - G * GS_LOAD(inv_diag + j);
        nw = GS_SEL(nw < L, L, GS_SEL(nw > H, H, nw));
        gs_v4d delta = nw - A;
        gs_v4d newton = -delta * (G + half * D * delta);
        gs_v4d edge = GS_SEL(G < zero, H - A, L - A);
        gs_v4d score = GS_SEL(D > zero, newton, -edge * G);
        score = GS_SEL(live, score, zero);
        gs_v4l better = score > bs;
        bs = GS_SEL(better, score, bs);
        bi = GS_SELL(better, idx, bi);
        if (slot) {
            gs_v4l cbetter = (score > cs) & (GS_LOADL(slot + j) >= 0);
            cs = GS_SEL(cbetter, score, cs);
            ci = GS_SELL(cbetter, idx, ci);
        }
    }
    for (int l = 0; l < 4; l++) {
        if (vm[l] > vmax)
            vmax = vm[l];
        if (bi[l] >= 0 && (bs[l] > best_score || (bs[l] == best_score && bi[l] < best))) {
            best_score = bs[l];
            best = bi[l];
        }
        if (ci[l] >= 0 &&
            (cs[l] > cached_score || (cs[l] == cached_score && ci[l] < cached))) {
            cached_score = cs[l];
            cached = ci[l];
        }
    }
#endif
    for (; j < m; j++) {
        if (on[j] == 0.0)
            continue;
        double G = g[j], old = a[j], v = G, score, delta;
        if (old <= lo[j])
            v = G < 0.0 ? G : 0.0;
        else if (old >= hi[j])
            v = G > 0.0 ? G : 0.0;
        if (v == 0.0)
            continue;
        v = v < 0.0 ? -v : v;
        if (v > vmax)
            vmax = v;
        if (diag[j] > 0.0) {
            double nw = old - G * inv_diag[j];
            nw = nw < lo[j] ? lo[j] : (nw > hi[j] ? hi[j] : nw);
            delta = nw - old;
            score = -delta * (G + 0.5 * diag[j] * delta);
        } else {
            delta = G < 0.0 ? hi[j] - old : lo[j] - old;
            score = -delta * G;
        }
        if (score > best_score) {
            best_score = score;
            best = j;
        }
        if (slot && score > cached_score && slot[j] >= 0) {
            cached_score = score;
            cached = j;
        }
    }
    if (!slot) {  /* every row cached: the best is cached */
        cached = best;
        cached_score = best_score;
    }
    *vmax_out = vmax;
    *best_out = best;
    *best_score_out = best_score;
    *cached_out = cached;
    *cached_score_out = cached_score;
}

/* b^2 c' > b'^2 c, or equal with the earlier position: the order of the partners'
 * second-order gains b^2 / c (c > 0), compared without dividing */
static inline int gs_gain_beats(double b2, double c, ptrdiff_t j, double b2_best,
                                double c_best, ptrdiff_t best)
{
    double lhs = b2 * c_best, rhs = b2_best * c;
    return lhs > rhs || (lhs == rhs && best >= 0 && j < best);
}

/* The partner of the first variable ``first`` (moving downhill along sigma s_first,
 * slope h_i = s_first g_first, curvature qii, signed kernel row ``row``): over the
 * positions j != first with on[j] != 0 and room to move along -sigma s_j, the largest
 * b^2 / c with b = sigma (s_j g_j - h_i) > 0 and c = max(qii + diag_j -
 * 2 s_first s_j row_j, tau), over all and over the cached ones, into *partner, *b2,
 * *c and *cached, *cached_b2, *cached_c (-1, 0, 1 when none; slot = NULL: every row
 * is cached). */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void gs_partner(
    ptrdiff_t m, const double *g, const double *a, const double *lo, const double *hi,
    const double *diag, const double *sign, const int64_t *slot, const double *on,
    const double *row, ptrdiff_t first, double sigma, double h_i, double s_i, double qii,
    double tau, ptrdiff_t *partner_out, double *b2_out, double *c_out,
    ptrdiff_t *cached_out, double *cached_b2_out, double *cached_c_out)
{
    double best_b2 = 0.0, best_c = 1.0, cached_b2 = 0.0, cached_c = 1.0;
    ptrdiff_t partner = -1, cached = -1, j = 0;
#if GS_VECTORS
    const gs_v4d zero = {0.0, 0.0, 0.0, 0.0}, one = {1.0, 1.0, 1.0, 1.0};
    const gs_v4d vsig = {sigma, sigma, sigma, sigma}, vh = {h_i, h_i, h_i, h_i};
    const gs_v4d vq = {qii, qii, qii, qii}, vtau = {tau, tau, tau, tau};
    const gs_v4d two_s = {2.0 * s_i, 2.0 * s_i, 2.0 * s_i, 2.0 * s_i};
    const gs_v4l none = {-1, -1, -1, -1}, step = {4, 4, 4, 4};
    const gs_v4l vfirst = {first, first, first, first};
    gs_v4d pb2 = zero, pc = one, qb2 = zero, qc = one;
    gs_v4l pi = none, qi = none, idx = {0, 1, 2, 3};
    for (; j + 4 <= m; j += 4, idx += step) {
        gs_v4d S = GS_LOAD(sign + j), A = GS_LOAD(a + j);
        gs_v4l up = (-vsig * S) > zero;
        gs_v4l blocked = GS_SELL(up, A >= GS_LOAD(hi + j), A <= GS_LOAD(lo + j));
        gs_v4d b = vsig * (S * GS_LOAD(g + j) - vh);
        gs_v4l ok = ~blocked & (b > zero) & (GS_LOAD(on + j) != zero) & (idx != vfirst);
        gs_v4d c = vq + GS_LOAD(diag + j) - two_s * S * GS_LOAD(row + j);
        c = GS_SEL(c <= vtau, vtau, c);
        gs_v4d b2 = b * b;
        gs_v4l better = ok & (b2 * pc > pb2 * c);
        pb2 = GS_SEL(better, b2, pb2);
        pc = GS_SEL(better, c, pc);
        pi = GS_SELL(better, idx, pi);
        if (slot) {
            gs_v4l cbetter = ok & (GS_LOADL(slot + j) >= 0) & (b2 * qc > qb2 * c);
            qb2 = GS_SEL(cbetter, b2, qb2);
            qc = GS_SEL(cbetter, c, qc);
            qi = GS_SELL(cbetter, idx, qi);
        }
    }
    for (int l = 0; l < 4; l++) {
        if (pi[l] >= 0 && (partner < 0 ||
                           gs_gain_beats(pb2[l], pc[l], pi[l], best_b2, best_c, partner))) {
            best_b2 = pb2[l];
            best_c = pc[l];
            partner = pi[l];
        }
        if (qi[l] >= 0 && (cached < 0 ||
                           gs_gain_beats(qb2[l], qc[l], qi[l], cached_b2, cached_c, cached))) {
            cached_b2 = qb2[l];
            cached_c = qc[l];
            cached = qi[l];
        }
    }
#endif
    for (; j < m; j++) {
        if (on[j] == 0.0 || j == first)
            continue;
        if (-sigma * sign[j] > 0.0) {
            if (a[j] >= hi[j])
                continue;
        } else if (a[j] <= lo[j]) {
            continue;
        }
        double b = sigma * (sign[j] * g[j] - h_i);
        if (b <= 0.0)
            continue;
        double c = qii + diag[j] - 2.0 * s_i * sign[j] * row[j];
        if (c <= tau)
            c = tau;
        if (b * b * best_c > best_b2 * c) {
            best_b2 = b * b;
            best_c = c;
            partner = j;
        }
        if (slot && slot[j] >= 0 && b * b * cached_c > cached_b2 * c) {
            cached_b2 = b * b;
            cached_c = c;
            cached = j;
        }
    }
    if (!slot) {  /* every row cached: the best partner is cached */
        cached = partner;
        cached_b2 = best_b2;
        cached_c = best_c;
    }
    *partner_out = partner;
    *b2_out = best_b2;
    *c_out = best_c;
    *cached_out = cached;
    *cached_b2_out = cached_b2;
    *cached_c_out = cached_c;
}

/* The gradient's update by one or two signed kernel rows: g += d1 r1, then (r2 not
 * NULL) g += d2 r2, each a product and a sum rounded separately (no fused multiply-add:
 * the module is built without contraction), so every element is the same whatever
 * the chunk or the thread that computes it. */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void gs_update(
    ptrdiff_t m, double *g, double d1, const double *r1, double d2, const double *r2)
{
    ptrdiff_t j;
    if (r2 && d2 != 0.0) {
        if (d1 != 0.0) {
            for (j = 0; j < m; j++)
                g[j] = (g[j] + d1 * r1[j]) + d2 * r2[j];
        } else {
            for (j = 0; j < m; j++)
                g[j] = g[j] + d2 * r2[j];
        }
    } else if (d1 != 0.0) {
        for (j = 0; j < m; j++)
            g[j] = g[j] + d1 * r1[j];
    }
}

#endif
