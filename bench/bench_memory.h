/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_memory.h -- host buffers for the benchmark: page-aligned, and
 * touched first by the OpenMP threads that will use them.
 */
#ifndef FB_BENCH_MEMORY_H
#define FB_BENCH_MEMORY_H

#include <stddef.h>

/* NULL if the memory cannot be had. Contents are zero (callers fill what
 * they time with random data). */
void *bench_host_alloc(size_t bytes);
void bench_host_free(void *p);

/* Bytes of physical memory, and of the last-level cache (0 if unknown). */
size_t bench_host_memory_bytes(void);
size_t bench_host_llc_bytes(void);

#endif /* FB_BENCH_MEMORY_H */
