/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_fusedblas_impl.h -- what fusedblas's own rows share, on the CPU
 * and on the GPU: a handle set up for the row's backend, the case and its
 * input sets, a plan per set for the plan rows or e4m3 copies of the
 * weights for the e4m3 rows, and the last call's outcome in words. The functions fit the run, message and fini slots of
 * the CPU and GPU implementation tables; each runner file keeps only how
 * its handle is set up.
 */
#ifndef FB_BENCH_FUSEDBLAS_IMPL_H
#define FB_BENCH_FUSEDBLAS_IMPL_H

#include <stddef.h>
#include "bench.h"
#include "bench_e4m3_weights.h"

/* The handle's settings: the backend, then the CPU's thread count or the
 * GPU's device, stream and math mode. */
typedef struct bench_fb_setup {
    fb_backend backend;
    int threads;  /* > 0: fb_set_threads; 0: OpenMP's default */
    int cuda;     /* 1: device and stream below */
    int device;
    void *stream; /* a cudaStream_t */
    int tf32;     /* 1: FB_MATH_ALLOW_TF32, 0: FB_MATH_DEFAULT */
} bench_fb_setup;

typedef struct bench_fb_state {
    fb_handle h;
    bench_case c;
    const bench_set *sets;
    int nsets;
    fb_plan *plans; /* one per set, for the plan rows */
    bench_e4m3_weights e4m3; /* for the e4m3 rows */
    char message[256];
} bench_fb_state;

/* A new state in *state (bench_fb_fini frees it, whatever this returns):
 * BENCH_RAN; BENCH_UNAVAILABLE if the backend is not; BENCH_FAILED with
 * why. */
bench_outcome bench_fb_start(void **state, const bench_fb_setup *setup,
                             const bench_case *c, const bench_set *sets,
                             int nsets, char *why, size_t len);

/* A plan per set, made on the state's handle outside the timing as a
 * user makes a layer's plan once: BENCH_RAN; BENCH_NOT_SUPPORTED or
 * BENCH_FAILED with why. */
bench_outcome bench_fb_make_plans(void *state, char *why, size_t len);

/* The e4m3 copies of the sets' weights, kept in mem, made outside the
 * timing: BENCH_RAN, or BENCH_FAILED with why. */
bench_outcome bench_fb_make_e4m3(void *state, const bench_e4m3_memory *mem,
                                 char *why, size_t len);

/* One call on set j: the plain routine, set j's plan, or the e4m3 routine
 * on set j's e4m3 weights. 0 ran, 1 not supported, -1 failed;
 * bench_fb_message says the path or why. */
int bench_fb_run(void *state, int j);
int bench_fb_run_plan(void *state, int j);
int bench_fb_run_e4m3(void *state, int j);

const char *bench_fb_message(void *state);

/* Frees the state and all it holds: the e4m3 weights, the handle (and
 * with it the plans). */
void bench_fb_fini(void *state);

#endif /* FB_BENCH_FUSEDBLAS_IMPL_H */
