/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_memory.c -- aligned host buffers, first-touched in parallel so that
 * pages are spread the way the parallel loops will read them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_memory.h"

#define BENCH_ALIGN 4096

void *bench_host_alloc(size_t bytes)
{
    size_t size = (bytes + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
    if (size == 0)
        size = BENCH_ALIGN;
    void *p = aligned_alloc(BENCH_ALIGN, size);
    if (p == NULL)
        return NULL;
    char *c = p;
    long pages = (long)(size / BENCH_ALIGN);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < pages; i++)
        memset(c + (size_t)i * BENCH_ALIGN, 0, BENCH_ALIGN);
    return p;
}

void bench_host_free(void *p)
{
    free(p);
}

size_t bench_host_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

size_t bench_host_llc_bytes(void)
{
    /* sysfs first: under KVM, glibc's cpuid-based sysconf can report the
     * whole host's L3 (384 MB on the development VM, where sysfs and lscpu
     * say 32 MB). The largest cache listed is the last level. */
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t bytes = v * (unit == 'K' ? 1024ul : unit == 'M' ? 1048576ul : 1ul);
            if (bytes > best)
                best = bytes;
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best == 0) {
        long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (l3 > 0)
            best = (size_t)l3;
    }
#endif
    return best;
}
