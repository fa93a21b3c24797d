/* SPDX-License-Identifier: BSD-3-Clause */
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
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "config.h"
#include <cblas.h>
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "cpu.h"

/* The most threads a call ever runs on, whatever the machine says. */
#define FB_MAX_THREADS 1024

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

void fb_cpu_blas_on_this_thread(void)
{
    /* A team of one is an inactive region, where omp_in_parallel() is 0:
     * OpenBLAS's OpenMP build would start a team of its own there, of
     * omp_get_max_threads() threads (OMP_NUM_THREADS, whatever the CPUs),
     * made anew at every call since a nested team keeps no pool, and map
     * a buffer for each first, more than fb_cpu_blas_buffers asked about.
     * The setting is this implicit task's and ends with the region. */
    omp_set_num_threads(1);
}

/* The CPUs this process may run on now (its affinity mask), at least 1. */
static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
    /* More CPUs than a cpu_set_t holds: a mask sized for them. */
    long n = sysconf(_SC_NPROCESSORS_CONF);
    if (n > 0 && n <= 65536) {
        cpu_set_t *big = CPU_ALLOC((int)n);
        if (big != NULL) {
            const size_t bytes = CPU_ALLOC_SIZE((int)n);
            int count = sched_getaffinity(0, bytes, big) == 0
                            ? CPU_COUNT_S(bytes, big)
                            : 0;
            CPU_FREE(big);
            if (count > 0)
                return count;
        }
    }
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < FB_MAX_THREADS ? n : FB_MAX_THREADS) : 1;
}

/* The most threads the machine can run for this process: the CPUs it may
 * use, OpenMP's thread limit (OMP_THREAD_LIMIT), FB_MAX_THREADS. More
 * would only wait for a CPU, and libgomp ends the process when it cannot
 * create the threads it is asked for (a memory limit, say). Asked at each
 * call that would thread, since the affinity can change. */
static int machine_threads(void)
{
    int t = cpus_available();
    const int limit = omp_get_thread_limit();
    if (limit > 0 && t > limit)
        t = limit;
    return t < FB_MAX_THREADS ? t : FB_MAX_THREADS;
}

int fb_cpu_own_threads(fb_handle h, double flops)
{
    /* The handle keeps the count it was given; the cap applies here, to
     * it and to OpenMP's default (OMP_NUM_THREADS) alike. */
    int t = h->nthreads > 0 ? h->nthreads : omp_get_max_threads();
    /* Below about a million flops a thread costs more to wake than it
     * saves; then one thread per further million. */
    double useful = flops / 1e6;
    if (useful < 1)
        useful = 1;
    if (t > useful)
        t = (int)useful;
    if (t > 1) {
        const int most = machine_threads();
        if (t > most)
            t = most;
    }
    return t > 0 ? t : 1;
}

int fb_cpu_fits_blasint(int64_t v)
{
    return sizeof(blasint) >= sizeof(int64_t) || v <= (int64_t)INT32_MAX;
}
