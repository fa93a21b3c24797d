/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_blas_buffers.c -- whether OpenBLAS can get its buffers, asked before
 * a call reaches it.
 *
 * The first time a thread runs an OpenBLAS GEMM, OpenBLAS maps a buffer of
 * about 128 MiB for it (BUFFER_SIZE on x86-64 and arm64) and keeps it for
 * later calls. When that mmap fails (an address-space limit, RLIMIT_AS, or
 * strict overcommit), its allocator tries again, forever: the call never
 * returns (OpenBLAS 0.3.21, blas_memory_alloc). OpenBLAS gives no way to
 * ask. So, until this thread's calls have run with that many OpenBLAS
 * threads, we map the same buffers ourselves, without touching them, and
 * unmap them at once; if that fails, the call is FB_STATUS_ALLOC_FAILED
 * before anything is written. Once calls have run, OpenBLAS holds the
 * buffers and we stop asking, so a process that is near its limit after
 * its first calls is not refused calls that need nothing new.
 *
 * What this cannot promise (fusedblas(3), NOTES): another thread may take
 * the memory between our unmap and OpenBLAS's map; an OpenBLAS built with
 * a larger buffer needs more than we ask for; and a call that OpenBLAS
 * threads wider than the earlier ones maps buffers we did not ask about.
 */
#define _DEFAULT_SOURCE
#include "config.h"
#include <cblas.h>
#include <stdio.h>
#include <sys/mman.h>
#include "cpu.h"

/* What OpenBLAS 0.3 maps per thread: BUFFER_SIZE (32 << 22) plus a page
 * (its malloc fallback asks for exactly this). */
#define BLAS_BUFFER_BYTES ((size_t)128 * 1024 * 1024 + 4096)
/* More buffers than this are not asked about one by one. */
#define MAX_BUFFERS 512

/* OpenBLAS threads this thread's calls have already run with. */
static _Thread_local int ready;

/* Buffers a call needs: one per team thread when our threads call
 * OpenBLAS (its OpenMP build then runs each call on the calling thread);
 * otherwise OpenBLAS may thread the call itself. */
static int buffers_for(int threads)
{
    int need = threads > 1 ? threads : openblas_get_num_threads();
    if (need < 1)
        need = 1;
    return need > MAX_BUFFERS ? MAX_BUFFERS : need;
}

int fb_cpu_blas_buffers(int threads, char *why, size_t len)
{
    const int need = buffers_for(threads);
    if (need <= ready)
        return 1;
    void *maps[MAX_BUFFERS];
    int got = 0;
    /* Separate maps of OpenBLAS's size and kind, as it makes them, so
     * that every limit (address space, commit charge) judges them alike. */
    for (; got < need; got++) {
        void *p = mmap(NULL, BLAS_BUFFER_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            break;
        maps[got] = p;
    }
    for (int i = 0; i < got; i++)
        munmap(maps[i], BLAS_BUFFER_BYTES);
    if (got == need)
        return 1;
    /* Short: the reason goes into the caller's path buffer. */
    snprintf(why, len, "cannot map OpenBLAS's %d x %zu MiB of buffers (got "
             "%d); it would retry forever", need, BLAS_BUFFER_BYTES >> 20,
             got);
    return 0;
}

void fb_cpu_blas_ran(int threads)
{
    const int need = buffers_for(threads);
    if (need > ready)
        ready = need;
}
