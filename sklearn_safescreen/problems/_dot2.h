/* Compensated (Dot2) products, built once per instruction set.
 *
 * Ogita, Rump & Oishi (2005), "Accurate sum and dot product", Algorithm Dot2: every
 * product a * b is split exactly into p + e (TwoProduct, e = fma(a, b, -p)) and every
 * addition s + p into t + e (TwoSum, Knuth); the error terms are summed in a second
 * accumulator c. The result s + c is as accurate as if computed in twice the working
 * precision. The module including this header is compiled with -ffp-contract=off
 * (setup.py): the compiler must not fuse a product into the following sum, which would
 * break the exactness of the error-free transformations. The fma() calls are explicit.
 *
 * Without -march, x86-64 has no FMA instruction and fma() is a library call (exact, but
 * a call that emulates in software what one instruction does, and it stops the
 * vectoriser): on x86-64
 * Linux with GCC or clang each routine is also built for AVX2 + FMA and chosen at run time
 * when the processor has both. The two builds compute the same values: every operation is
 * correctly rounded in both, only the speed differs.
 */
#ifndef SAFESCREEN_DOT2_H
#define SAFESCREEN_DOT2_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__linux__) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define D2_DISPATCH 1
#define D2_FMA_TARGET __attribute__((target("avx2,fma")))
#else
#define D2_DISPATCH 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define D2_RESTRICT __restrict__
#define D2_UNUSED __attribute__((unused))
#else
#define D2_RESTRICT
#define D2_UNUSED
#endif

/* (s, c) += a * b, one Dot2 step (TwoProduct, then TwoSum of s and the product). */
#define D2_STEP(a, b, s, c)                                                           \
    do {                                                                              \
        double p_ = (a) * (b);                                                        \
        double e_ = fma((a), (b), -p_);                                               \
        double t_ = (s) + p_;                                                         \
        double z_ = t_ - (s);                                                         \
        (c) += (((s) - (t_ - z_)) + (p_ - z_)) + e_;                                  \
        (s) = t_;                                                                     \
    } while (0)

/* The routines, for one instruction set (ATTR) under the name suffix SFX:
 *   axpy:        (s, c)[i] += a x[i],        ab[i] += |a x[i]|        (vectorised)
 *   dot:         x . y compensated, and |x| . |y|
 *   dot_gather:  vals . w[idx] compensated, and |vals| . |w[idx]|   (a sparse row)
 *   scatter:     (s, c)[idx[p]] += a vals[p], ab[idx[p]] += |a vals[p]| (a sparse row,
 *                transposed product) */
#define D2_DEFINE_INDEXED(SFX, ATTR, ITYPE, ISFX)                                     \
    static D2_UNUSED ATTR void d2_dot_gather_##ISFX##_##SFX(                          \
        ptrdiff_t n, const double *vals, const ITYPE *idx, const double *w,           \
        double *out, double *out_abs)                                                 \
    {                                                                                 \
        double s = 0.0, c = 0.0, ab = 0.0;                                            \
        for (ptrdiff_t p = 0; p < n; p++) {                                           \
            double b = w[idx[p]];                                                     \
            D2_STEP(vals[p], b, s, c);                                                \
            ab += fabs(vals[p] * b);                                                  \
        }                                                                             \
        *out = s + c;                                                                 \
        *out_abs = ab;                                                                \
    }                                                                                 \
    static D2_UNUSED ATTR void d2_scatter_##ISFX##_##SFX(                             \
        ptrdiff_t n, double a, const double *vals, const ITYPE *idx, double *s,       \
        double *c, double *ab)                                                        \
    {                                                                                 \
        for (ptrdiff_t p = 0; p < n; p++) {                                           \
            ITYPE j = idx[p];                                                         \
            D2_STEP(vals[p], a, s[j], c[j]);                                          \
            ab[j] += fabs(vals[p] * a);                                               \
        }                                                                             \
    }

#define D2_DEFINE(SFX, ATTR)                                                          \
    static D2_UNUSED ATTR void d2_axpy_##SFX(                                         \
        ptrdiff_t n, double a, const double *D2_RESTRICT x, double *D2_RESTRICT s,    \
        double *D2_RESTRICT c, double *D2_RESTRICT ab)                                \
    {                                                                                 \
        for (ptrdiff_t i = 0; i < n; i++) {                                           \
            double si = s[i], ci = c[i];                                              \
            D2_STEP(x[i], a, si, ci);                                                 \
            s[i] = si;                                                                \
            c[i] = ci;                                                                \
            ab[i] += fabs(x[i] * a);                                                  \
        }                                                                             \
    }                                                                                 \
    static D2_UNUSED ATTR void d2_dot_##SFX(ptrdiff_t n, const double *x,             \
                                             const double *y, double *out,            \
                                             double *out_abs)                         \
    {                                                                                 \
        double s = 0.0, c = 0.0, ab = 0.0;                                            \
        for (ptrdiff_t i = 0; i < n; i++) {                                           \
            D2_STEP(x[i], y[i], s, c);                                                \
            ab += fabs(x[i] * y[i]);                                                  \
        }                                                                             \
        *out = s + c;                                                                 \
        *out_abs = ab;                                                                \
    }                                                                                 \
    D2_DEFINE_INDEXED(SFX, ATTR, int32_t, i32)                                        \
    D2_DEFINE_INDEXED(SFX, ATTR, int64_t, i64)

D2_DEFINE(base, )
#if D2_DISPATCH
D2_DEFINE(fma, D2_FMA_TARGET)

static int d2_fma_available(void)
{
    /* a benign race: every thread stores the same value */
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
}
#define D2_CALL(NAME, ...)                                                            \
    do {                                                                              \
        if (d2_fma_available())                                                       \
            NAME##_fma(__VA_ARGS__);                                                  \
        else                                                                          \
            NAME##_base(__VA_ARGS__);                                                 \
    } while (0)
#else
#define D2_CALL(NAME, ...) NAME##_base(__VA_ARGS__)
#endif

static D2_UNUSED void d2_axpy(ptrdiff_t n, double a, const double *x, double *s, double *c,
                              double *ab)
{
    D2_CALL(d2_axpy, n, a, x, s, c, ab);
}

static D2_UNUSED void d2_dot(ptrdiff_t n, const double *x, const double *y, double *out,
                             double *out_abs)
{
    D2_CALL(d2_dot, n, x, y, out, out_abs);
}

static D2_UNUSED void d2_dot_gather_i32(ptrdiff_t n, const double *vals, const int32_t *idx,
                                        const double *w, double *out, double *out_abs)
{
    D2_CALL(d2_dot_gather_i32, n, vals, idx, w, out, out_abs);
}

static D2_UNUSED void d2_dot_gather_i64(ptrdiff_t n, const double *vals, const int64_t *idx,
                                        const double *w, double *out, double *out_abs)
{
    D2_CALL(d2_dot_gather_i64, n, vals, idx, w, out, out_abs);
}

static D2_UNUSED void d2_scatter_i32(ptrdiff_t n, double a, const double *vals,
                                     const int32_t *idx, double *s, double *c, double *ab)
{
    D2_CALL(d2_scatter_i32, n, a, vals, idx, s, c, ab);
}

static D2_UNUSED void d2_scatter_i64(ptrdiff_t n, double a, const double *vals,
                                     const int64_t *idx, double *s, double *c, double *ab)
{
    D2_CALL(d2_scatter_i64, n, a, vals, idx, s, c, ab);
}

#endif
