/* Small vector loops of the compiled kernels, built once per instruction set.
 *
 * The package is compiled ahead of time for any x86-64 (no -march), which leaves the
 * compiler SSE2 only; these loops run millions of times per fit, so on x86-64 with GCC
 * (or clang >= 14) each is cloned for AVX-512, AVX2 and the baseline, and the loader
 * picks the clone the running processor supports (function multi-versioning, the
 * "target_clones" attribute). Elsewhere they are plain loops.
 */
#ifndef SAFESCREEN_VEC_H
#define SAFESCREEN_VEC_H

#if defined(__x86_64__) && defined(__linux__) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define SAFESCREEN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SAFESCREEN_CLONES
#endif

/* Each module includes the header but uses only some of the loops. */
#if defined(__GNUC__) || defined(__clang__)
#define SAFESCREEN_UNUSED __attribute__((unused))
#else
#define SAFESCREEN_UNUSED
#endif

/* y += a x */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void ss_axpy(int n, double a, const double *x, double *y)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* x' = c x + s y, y' = c y - s x (the rotation of two rows in QL) */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void ss_rot(int n, double c, double s, double *x, double *y)
{
    for (int i = 0; i < n; i++) {
        double h = x[i];
        x[i] = s * y[i] + c * h;
        y[i] = c * y[i] - s * h;
    }
}

/* x . y with eight independent partial sums (vectorised without reassociating any
 * single sum) */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES double ss_dot(int n, const double *x, const double *y)
{
    double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j] * y[i + j];
    double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* Dot products of four rows with one y at once: four streams from memory instead of
 * one, which a row at a time leaves mostly idle when the rows come from main memory.
 * Eight partial sums per row as in ss_dot, held as two 4-wide vectors (GCC and clang
 * vector types, which the compiler maps to the clone's registers: it does not
 * vectorise four interleaved scalar sums well); every row gets the same operations,
 * so a value does not depend on the rows it is computed with. */
#if defined(__GNUC__) || defined(__clang__)
typedef double ss_v4d __attribute__((vector_size(32)));

/* (macros, not functions: a function passing these vectors would change its ABI with
 * the instruction set of the clone) */
#define SS_LOAD4(p) ({ ss_v4d v_; __builtin_memcpy(&v_, (p), sizeof(v_)); v_; })
#define SS_LANES_SUM(lo, hi) \
    ((((lo)[0] + (lo)[1]) + ((lo)[2] + (lo)[3])) + (((hi)[0] + (hi)[1]) + ((hi)[2] + (hi)[3])))

static SAFESCREEN_UNUSED SAFESCREEN_CLONES void ss_dot4(int n, const double *x0, const double *x1,
                                                        const double *x2, const double *x3,
                                                        const double *y, double *out)
{
    ss_v4d z = {0.0, 0.0, 0.0, 0.0};
    ss_v4d a0l = z, a0h = z, a1l = z, a1h = z, a2l = z, a2h = z, a3l = z, a3h = z;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        ss_v4d yl = SS_LOAD4(y + i), yh = SS_LOAD4(y + i + 4);
        a0l += SS_LOAD4(x0 + i) * yl;
        a0h += SS_LOAD4(x0 + i + 4) * yh;
        a1l += SS_LOAD4(x1 + i) * yl;
        a1h += SS_LOAD4(x1 + i + 4) * yh;
        a2l += SS_LOAD4(x2 + i) * yl;
        a2h += SS_LOAD4(x2 + i + 4) * yh;
        a3l += SS_LOAD4(x3 + i) * yl;
        a3h += SS_LOAD4(x3 + i + 4) * yh;
    }
    double s0 = SS_LANES_SUM(a0l, a0h), s1 = SS_LANES_SUM(a1l, a1h);
    double s2 = SS_LANES_SUM(a2l, a2h), s3 = SS_LANES_SUM(a3l, a3h);
    for (; i < n; i++) {
        s0 += x0[i] * y[i];
        s1 += x1[i] * y[i];
        s2 += x2[i] * y[i];
        s3 += x3[i] * y[i];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

#else /* plain loops, summed in the same order */
static SAFESCREEN_UNUSED void ss_dot4(int n, const double *x0, const double *x1,
                                      const double *x2, const double *x3, const double *y,
                                      double *out)
{
    const double *x[4] = {x0, x1, x2, x3};
    for (int r = 0; r < 4; r++) {
        double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        int i = 0;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += x[r][i + j] * y[i + j];
        double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                   ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; i < n; i++)
            s += x[r][i] * y[i];
        out[r] = s;
    }
}
#endif

/* y += a0 x0, then a1 x1, a2 x2 and a3 x3: each element updated in the order of four
 * ss_axpy calls, reading the four rows as four streams at once */
static SAFESCREEN_UNUSED SAFESCREEN_CLONES void ss_axpy4(int n, double a0, const double *x0,
                                                         double a1, const double *x1,
                                                         double a2, const double *x2,
                                                         double a3, const double *x3, double *y)
{
    for (int i = 0; i < n; i++) {
        double t = y[i];
        t += a0 * x0[i];
        t += a1 * x1[i];
        t += a2 * x2[i];
        t += a3 * x3[i];
        y[i] = t;
    }
}

/* The first i in [start, n) with c[i] - 2 g[i] <= lim, else n: the scan of a k-NN tile
 * (c the candidates' squared norms, g a row of the tile's products, in single or double
 * precision), where nearly every entry fails, eight entries tested at once */
#if defined(__GNUC__) || defined(__clang__)
#define SS_FIRST_WITHIN_VECTOR(T)                                                       \
    typedef long long ss_v4l __attribute__((vector_size(32)));                          \
    const ss_v4d two = {2.0, 2.0, 2.0, 2.0};                                            \
    const ss_v4d bound = {lim, lim, lim, lim};                                          \
    for (; i + 8 <= n; i += 8) {                                                        \
        ss_v4d g0 = {g[i], g[i + 1], g[i + 2], g[i + 3]};                               \
        ss_v4d g1 = {g[i + 4], g[i + 5], g[i + 6], g[i + 7]};                           \
        ss_v4l hit = ((SS_LOAD4(c + i) - two * g0) <= bound) |                          \
                     ((SS_LOAD4(c + i + 4) - two * g1) <= bound);                       \
        if (hit[0] | hit[1] | hit[2] | hit[3])                                          \
            break;                                                                      \
    }
#else
#define SS_FIRST_WITHIN_VECTOR(T)
#endif
#define SS_FIRST_WITHIN(name, T)                                                        \
    static SAFESCREEN_UNUSED SAFESCREEN_CLONES int name(int start, int n, const double *c, \
                                                        const T *g, double lim)         \
    {                                                                                   \
        int i = start;                                                                  \
        SS_FIRST_WITHIN_VECTOR(T)                                                       \
        for (; i < n; i++)                                                              \
            if (c[i] - 2.0 * (double)g[i] <= lim)                                       \
                return i;                                                               \
        return n;                                                                       \
    }
SS_FIRST_WITHIN(ss_first_within_f, float)
SS_FIRST_WITHIN(ss_first_within_d, double)

#endif
