/*
 * cpu_threads.c -- how many threads, and how they share the cores with
 * OpenBLAS's own.
 *
 * With OpenBLAS's OpenMP build, a GEMM called inside an OpenMP parallel
 * region runs on the calling thread alone (OpenBLAS checks
 * omp_in_parallel()), so our panel loop owns the cores and nothing is
 * oversubscribed. A pthreads or serial OpenBLAS cannot be told that, so we
 * then keep our loop on one thread and let a pthreads OpenBLAS thread each
 * panel's GEMM.
 */
#include "config.h"
#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include "cpu.h"

#if defined(HAVE_OPENBLAS_GET_PARALLEL)
int openblas_get_parallel(void);
#endif

/* OpenBLAS's value for an OpenMP build. */
#define OPENBLAS_OPENMP 2

static int openblas_is_openmp(void)
{
#if defined(HAVE_OPENBLAS_GET_PARALLEL)
    return openblas_get_parallel() == OPENBLAS_OPENMP;
#else
    return 0;
#endif
}

const char *fb_cpu_arrangement(void)
{
    return openblas_is_openmp() ? "openblas-openmp"
                                : "openblas-own-threads(serial panels)";
}

int fb_cpu_threads(fb_handle h, double flops)
{
    if (!openblas_is_openmp())
        return 1;
    return fb_cpu_own_threads(h, flops);
}

int fb_cpu_own_threads(fb_handle h, double flops)
{
    int t = h->nthreads > 0 ? h->nthreads : omp_get_max_threads();
    /* Below about a million flops a thread costs more to wake than it
     * saves; then one thread per further million. */
    double useful = flops / 1e6;
    if (useful < 1)
        useful = 1;
    if (t > useful)
        t = (int)useful;
    return t > 0 ? t : 1;
}

int fb_cpu_fits_blasint(int64_t v)
{
    return sizeof(blasint) >= sizeof(int64_t) || v <= (int64_t)INT32_MAX;
}
