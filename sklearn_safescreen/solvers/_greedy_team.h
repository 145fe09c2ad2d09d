/* What the team of the greedy kernel solver's loop (_greedy_team.pxd) needs beyond
 * Cython: its size and thread number in the OpenMP region, and the two flags its
 * threads hand tasks over with (acquire/release atomics).
 *
 * A task of the loop (one scan or one gradient update over W) is short, so a thread
 * waiting for the next one spins for a while (GT_SPINS pause instructions, a few
 * tasks' time), then yields the core at each further look (a machine whose cores are
 * busy with other processes runs them meanwhile). Without GCC/clang atomics
 * (gt_atomics() == 0) the loop runs on one thread.
 */
#ifndef SAFESCREEN_GREEDY_TEAM_H
#define SAFESCREEN_GREEDY_TEAM_H

#ifdef _OPENMP
#include <omp.h>
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32)
#include <sched.h>
#define GT_ATOMICS 1
#else
#define GT_ATOMICS 0
#endif

/* spins of the pause instruction before a waiting thread starts yielding */
#define GT_SPINS 2000

static inline int gt_atomics(void) { return GT_ATOMICS; }

static inline int gt_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int gt_team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

#if GT_ATOMICS
static inline long gt_load(const long *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void gt_store(long *p, long v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void gt_relax(int *spins)
{
    if (*spins < GT_SPINS) {
        (*spins)++;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    } else {
        sched_yield();
    }
}
#else  /* never called: the loop runs on one thread */
static inline long gt_load(const long *p) { return *p; }
static inline void gt_store(long *p, long v) { *p = v; }
static inline void gt_relax(int *spins) { (void)spins; }
#endif

#endif
