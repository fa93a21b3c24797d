/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_call.h -- one call of fusedblas on one input set, whatever the
 * routine and data type: the one place the benchmark calls the public API.
 */
#ifndef FB_BENCH_CALL_H
#define FB_BENCH_CALL_H

#include "bench.h"
#include "bench_e4m3_weights.h"

/* Row-major Y = act(X W^T + b) through {s,h,b}gemm_bias_act, or
 * mlp_geglu_forward, on the handle's backend. */
fb_status bench_call_fusedblas(fb_handle h, const bench_case *c,
                               const bench_set *set);

/* One timed run of an implementation "ours": the call, then its outcome
 * in words into msg (the path that ran, or the status and the handle's
 * message). Returns 0 ran, 1 not supported, -1 failed: the run() contract
 * of the CPU and GPU implementation tables. */
int bench_run_fusedblas(fb_handle h, const bench_case *c, const bench_set *set,
                        char *msg, size_t len);

/* The case as a plan on the handle (fb_plan_create_gemm or
 * fb_plan_create_mlp with set's weights, max_m = the case's m), and one
 * execution of it on set's X and Y; the same outcome conventions. */
fb_status bench_plan_fusedblas(fb_handle h, const bench_case *c,
                               const bench_set *set, fb_plan *plan);
int bench_run_plan(fb_plan plan, fb_handle h, const bench_case *c,
                   const bench_set *set, char *msg, size_t len);

/* The same through gemm_e4m3_bias_act or mlp_geglu_forward_e4m3, with w
 * the e4m3 copies of set's weights (w; or wg, wu, wd) in place of them. */
fb_status bench_call_e4m3(fb_handle h, const bench_case *c,
                          const bench_set *set, const bench_e4m3_weight w[3]);
int bench_run_e4m3(fb_handle h, const bench_case *c, const bench_set *set,
                   const bench_e4m3_weight w[3], char *msg, size_t len);

#endif /* FB_BENCH_CALL_H */
