"""What the compiled modules were built with: OpenMP or not, and its thread count.

Built with the same OpenMP flags as the modules with parallel loops (``setup.py``), so
that these functions report the OpenMP runtime those loops use."""

from cython.parallel cimport parallel, threadid

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int ss_openmp_built(void) { return 1; }
    static int ss_omp_max_threads(void) { return omp_get_max_threads(); }
    static int ss_num_threads(void) { return omp_get_num_threads(); }
    #else
    static int ss_openmp_built(void) { return 0; }
    static int ss_omp_max_threads(void) { return 1; }
    static int ss_num_threads(void) { return 1; }
    #endif
    """
    int ss_openmp_built() nogil
    int ss_omp_max_threads() nogil
    int ss_num_threads() nogil


def openmp_built() -> bool:
    """Whether the compiled modules were built with OpenMP (else they run on one
    thread)."""
    return bool(ss_openmp_built())


def omp_max_threads() -> int:
    """``omp_get_max_threads()`` of the calling thread: ``OMP_NUM_THREADS`` or the
    number of processors, lowered by threadpoolctl's OpenMP limits (1 without
    OpenMP)."""
    return ss_omp_max_threads()


def team_size(int n_threads) -> int:
    """The number of threads a parallel region asked for ``n_threads`` actually runs
    with (1 without OpenMP)."""
    # an array element, not a variable: a variable assigned in a parallel block is
    # private to each thread
    cdef int size[1]
    size[0] = 1
    if n_threads < 1:
        raise ValueError("team_size: n_threads must be positive")
    with nogil, parallel(num_threads=n_threads):
        if threadid() == 0:
            size[0] = ss_num_threads()
    return size[0]

