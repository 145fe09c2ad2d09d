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

#endif
