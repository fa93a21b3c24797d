/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_impl.h -- one implementation the CPU runner times: fusedblas's CPU
 * backend, or a baseline. Each gets the case and its input sets, prepares
 * what it needs outside the timing (plans, scratch, converted weights for
 * a baseline that needs them), then runs one set per call.
 */
#ifndef FB_BENCH_CPU_IMPL_H
#define FB_BENCH_CPU_IMPL_H

#include <stddef.h>
#include "bench.h"

typedef struct bench_cpu_impl {
    const char *name;
    bench_kind kind;
    /* BENCH_RAN when ready to run; otherwise why not (in why). */
    bench_outcome (*init)(void **state, const bench_case *c,
                          const bench_set *sets, int nsets,
                          const bench_options *opt, char *why, size_t len);
    /* One call on set s: 0; 1 if the implementation does not support the
     * case (shown "n/a"); -1 on failure. message() says why. */
    int (*run)(void *state, int s);
    /* The path that ran, or why the last run failed; may be NULL. */
    const char *(*message)(void *state);
    void (*fini)(void *state);
} bench_cpu_impl;

extern const bench_cpu_impl bench_cpu_fusedblas;      /* fusedblas/cpu */
extern const bench_cpu_impl bench_cpu_fusedblas_plan; /* fusedblas/cpu-plan */
/* The same with e4m3 copies of the weights: its output is not held to the
 * baseline's check (the quantisation changes it). */
extern const bench_cpu_impl bench_cpu_fusedblas_e4m3;
extern const bench_cpu_impl bench_cpu_openblas;       /* openblas+pass */
extern const bench_cpu_impl bench_cpu_openblas_gemm;  /* the GEMMs alone */
extern const bench_cpu_impl bench_cpu_onednn;         /* oneDNN post-ops */
extern const bench_cpu_impl bench_cpu_onednn_reordered; /* weights once */

/* oneDNN's matmul rate in GFLOP/s on an n x n x n problem of type t (the
 * median of reps), for the CPU's ceilings; 0 without oneDNN or where this
 * CPU has no such matmul. */
double bench_onednn_gflops(fb_dtype t, int n, int reps);

#endif /* FB_BENCH_CPU_IMPL_H */
