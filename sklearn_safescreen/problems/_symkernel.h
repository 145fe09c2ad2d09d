/* Symmetric kernel blocks: K[i, j] = k(a_i, b_j) for the rows a_i of A and the columns
 * b_j of Bt (the other samples, feature-major), each value a fixed function of its pair.
 *
 * Every inner product <a_i, b_j> is the sum, in increasing feature order, of the rounded
 * products a_i[f] * b_j[f] (which commute exactly), accumulated from +0.0: the value of
 * the plain sequential loop, whichever of the two samples is the query. The speed comes
 * from vectorising across samples rather than across features: an R x W tile of inner
 * products is held in registers while the features are swept once, each loaded b_j[f]
 * serving R query rows and each a_i[f] W samples (a GEMM micro-kernel, without the
 * reassociation or fused multiply-adds of a BLAS: this header must be compiled with
 * -ffp-contract=off, as its module is in setup.py, so that every product is rounded on
 * its own and the vector lanes round as the scalar definition does).
 *
 * The tile sizes depend on the instruction set (registers: 32 zmm, 16 ymm, 16 xmm), so
 * the whole block routine is built once per set and chosen at run time on x86-64 Linux
 * with GCC or clang (as the loops of _utils/_vec.h); elsewhere plain loops.
 */
#ifndef SAFESCREEN_SYMKERNEL_H
#define SAFESCREEN_SYMKERNEL_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define SYMK_DISPATCH 1
#else
#define SYMK_DISPATCH 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SYMK_VECTOR_EXT 1
#define SYMK_AINLINE static inline __attribute__((always_inline))
#else
#define SYMK_VECTOR_EXT 0
#define SYMK_AINLINE static __inline
#endif

/* One kernel value from its inner product and the two squared norms (kind 0 linear,
 * 2 polynomial), or for the RBF (kind 1) the exponent -gamma max(dist, 0), whose
 * exponential the caller takes over the whole block at once (vectorised): the same
 * expressions as symmetric_kernel_diag. */
SYMK_AINLINE double symk_value(double dot, double sa, double sb, int kind, double gamma,
                               double coef0, double degree)
{
    if (kind == 0)
        return dot;
    if (kind == 1) {
        double dist = (sa + sb) - 2.0 * dot;
        return -gamma * (dist > 0.0 ? dist : 0.0);
    }
    return pow(gamma * dot + coef0, degree);
}

/* The tile kernels, for R query rows packed feature-major (a[f * R + r]) and NV vectors
 * of VW samples (b[f * ldb + c]): t[r * NV * VW + c] += a[f * R + r] * b[f * ldb + c] for
 * f = 0, ..., d - 1 in this order, each product rounded, then added (a chunk of features
 * at a time: the partial sums pass through t exactly). The accumulators are local arrays
 * of constant size, which the compiler keeps in registers. */
#if SYMK_VECTOR_EXT
#define SYMK_TILE(NAME, ATTR, VT, VW, NV, R)                                              \
    ATTR SYMK_AINLINE void NAME(ptrdiff_t d, const double *a, const double *b,          \
                                ptrdiff_t ldb, double *t)                                \
    {                                                                                    \
        VT acc[R][NV];                                                                   \
        for (int r = 0; r < R; r++)                                                      \
            for (int v = 0; v < NV; v++)                                                 \
                memcpy(&acc[r][v], t + (r * NV + v) * VW, sizeof(VT));                  \
        for (ptrdiff_t f = 0; f < d; f++) {                                              \
            VT bv[NV];                                                                   \
            for (int v = 0; v < NV; v++)                                                 \
                memcpy(&bv[v], b + f * ldb + v * VW, sizeof(VT));                        \
            for (int r = 0; r < R; r++) {                                                \
                const double ar = a[f * R + r];                                          \
                for (int v = 0; v < NV; v++)                                             \
                    acc[r][v] = acc[r][v] + ar * bv[v];                                  \
            }                                                                            \
        }                                                                                \
        for (int r = 0; r < R; r++)                                                      \
            for (int v = 0; v < NV; v++)                                                 \
                memcpy(t + (r * NV + v) * VW, &acc[r][v], sizeof(VT));                   \
    }
#else
#define SYMK_TILE(NAME, ATTR, VT, VW, NV, R)                                              \
    static void NAME(ptrdiff_t d, const double *a, const double *b, ptrdiff_t ldb,       \
                     double *t)                                                          \
    {                                                                                    \
        double acc[R][NV * VW];                                                          \
        for (int r = 0; r < R; r++)                                                      \
            for (int c = 0; c < NV * VW; c++)                                            \
                acc[r][c] = t[r * NV * VW + c];                                          \
        for (ptrdiff_t f = 0; f < d; f++)                                                \
            for (int r = 0; r < R; r++) {                                                \
                const double ar = a[f * R + r];                                          \
                for (int c = 0; c < NV * VW; c++)                                        \
                    acc[r][c] = acc[r][c] + ar * b[f * ldb + c];                         \
            }                                                                            \
        for (int r = 0; r < R; r++)                                                      \
            for (int c = 0; c < NV * VW; c++)                                            \
                t[r * NV * VW + c] = acc[r][c];                                          \
    }
#endif

/* Features per pass over the query rows: a panel's chunk of KC features x W samples
 * stays in cache while every group of rows uses it (as a GEMM's blocking, but with
 * the chunks summed in order), however many features there are. */
#ifndef SYMK_KC
#define SYMK_KC 256
#endif

/* The block routine of one instruction set: the queries in groups of R rows (packed
 * feature-major once), the samples in panels of W = NV * VW (packed, zero-padded at the
 * end, once per panel and reused by every group); rows left over after the last full
 * group go through the one-row tile kernel. The inner products of a panel accumulate in
 * acc (n x W), chunk of features after chunk, and are then turned into kernel values.
 * Returns -1 when out of memory. */
#define SYMK_BLOCK(NAME, ATTR, VT, VW, NV, R)                                             \
    SYMK_TILE(NAME##_tile, ATTR, VT, VW, NV, R)                                          \
    SYMK_TILE(NAME##_tile1, ATTR, VT, VW, NV, 1)                                         \
    ATTR static int NAME(ptrdiff_t n, ptrdiff_t d, const double *A, const double *a_sq, \
                         const double *Bt, ptrdiff_t ldb, ptrdiff_t m, const double *b_sq,\
                         int kind, double gamma, double coef0, double degree,            \
                         double *out, ptrdiff_t ldo)                                     \
    {                                                                                    \
        enum { W = NV * VW };                                                            \
        const ptrdiff_t groups = n / R;                                                  \
        double *ap = (double *)malloc(sizeof(double) * (size_t)(groups * R * d + 1));    \
        double *bp = (double *)malloc(sizeof(double) * (size_t)(d * W + 1));             \
        double *acc = (double *)malloc(sizeof(double) * (size_t)(n * W));                \
        if (ap == NULL || bp == NULL || acc == NULL) {                                   \
            free(ap);                                                                    \
            free(bp);                                                                    \
            free(acc);                                                                   \
            return -1;                                                                   \
        }                                                                                \
        for (ptrdiff_t g = 0; g < groups; g++)                                           \
            for (int r = 0; r < R; r++)                                                  \
                for (ptrdiff_t f = 0; f < d; f++)                                        \
                    ap[(g * d + f) * R + r] = A[(g * R + r) * d + f];                    \
        for (ptrdiff_t j0 = 0; j0 < m; j0 += W) {                                        \
            const ptrdiff_t w = m - j0 < W ? m - j0 : W;                                 \
            const double *b = bp;                                                        \
            ptrdiff_t bstride = W;                                                       \
            if (w == W && groups == 0) { /* a few rows: no copy */                       \
                b = Bt + j0;                                                             \
                bstride = ldb;                                                           \
            } else {                                                                     \
                for (ptrdiff_t f = 0; f < d; f++) {                                      \
                    for (ptrdiff_t c = 0; c < w; c++)                                    \
                        bp[f * W + c] = Bt[f * ldb + j0 + c];                            \
                    for (ptrdiff_t c = w; c < W; c++)                                    \
                        bp[f * W + c] = 0.0;                                             \
                }                                                                        \
            }                                                                            \
            for (ptrdiff_t k = 0; k < n * W; k++)                                        \
                acc[k] = 0.0;                                                            \
            for (ptrdiff_t k0 = 0; k0 < d; k0 += SYMK_KC) {                              \
                const ptrdiff_t kc = d - k0 < SYMK_KC ? d - k0 : SYMK_KC;                \
                const double *bk = b + k0 * bstride;                                     \
                for (ptrdiff_t g = 0; g < groups; g++)                                   \
                    NAME##_tile(kc, ap + (g * d + k0) * R, bk, bstride, acc + g * R * W);\
                for (ptrdiff_t i = groups * R; i < n; i++)                               \
                    NAME##_tile1(kc, A + i * d + k0, bk, bstride, acc + i * W);          \
            }                                                                            \
            for (ptrdiff_t i = 0; i < n; i++)                                            \
                for (ptrdiff_t c = 0; c < w; c++)                                        \
                    out[i * ldo + j0 + c] = symk_value(acc[i * W + c], a_sq[i],          \
                                                       b_sq[j0 + c],                     \
                                                       kind, gamma, coef0, degree);      \
        }                                                                                \
        free(ap);                                                                        \
        free(bp);                                                                        \
        free(acc);                                                                       \
        return 0;                                                                        \
    }

#if SYMK_VECTOR_EXT
typedef double symk_v2d __attribute__((vector_size(16)));
typedef double symk_v4d __attribute__((vector_size(32)));
typedef double symk_v8d __attribute__((vector_size(64)));
#else
typedef double symk_v2d;
#endif

/* Tiles (vectors per row, rows): the NV x R accumulators, a row of NV vectors and a
 * broadcast must all stay in the registers, so that the inner loop does no load or store
 * but the operands': AVX-512's 32 zmm hold 4 x 4 (16 + 4 + 1), the 16 ymm or xmm of AVX2
 * and SSE2 hold 2 x 6 (12 + 2 + 1). A wider tile on 16 registers leaves the compiler none
 * to spare and it spills accumulators to memory, which costs more than the wider tile
 * saves in loads. */
#ifndef SYMK_AVX512_TILE
#define SYMK_AVX512_TILE 4, 4
#endif
#ifndef SYMK_AVX2_TILE
#define SYMK_AVX2_TILE 2, 6
#endif
#ifndef SYMK_BASE_TILE
#define SYMK_BASE_TILE 2, 6
#endif
#define SYMK_BLOCK_(...) SYMK_BLOCK(__VA_ARGS__)
#if SYMK_DISPATCH
SYMK_BLOCK_(symk_block_avx512, __attribute__((target("avx512f"))), symk_v8d, 8, SYMK_AVX512_TILE)
SYMK_BLOCK_(symk_block_avx2, __attribute__((target("avx2"))), symk_v4d, 4, SYMK_AVX2_TILE)
#endif
SYMK_BLOCK_(symk_block_base, , symk_v2d, 2, SYMK_BASE_TILE)

/* K = k(A, Bt) into out (n x m, row stride ldo): A is n x d (C order), Bt is d x m with
 * row stride ldb. Every value is computed alone (the tiles only group the loads), so a
 * sub-block -- some of the rows, some of the columns -- has the values of the whole
 * block: the parallel loops of the module split a block into such sub-blocks, one call
 * each. Returns -1 when out of memory. */
static int symk_block(ptrdiff_t n, ptrdiff_t d, const double *A, const double *a_sq,
                      const double *Bt, ptrdiff_t ldb, ptrdiff_t m, const double *b_sq,
                      int kind, double gamma, double coef0, double degree, double *out,
                      ptrdiff_t ldo)
{
#if SYMK_DISPATCH
    /* called by every thread of a parallel loop: a benign race, each stores the same
     * values */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return symk_block_avx512(n, d, A, a_sq, Bt, ldb, m, b_sq, kind, gamma, coef0,
                                 degree, out, ldo);
    if (__builtin_cpu_supports("avx2"))
        return symk_block_avx2(n, d, A, a_sq, Bt, ldb, m, b_sq, kind, gamma, coef0, degree,
                               out, ldo);
#endif
    return symk_block_base(n, d, A, a_sq, Bt, ldb, m, b_sq, kind, gamma, coef0, degree,
                           out, ldo);
}

#endif
