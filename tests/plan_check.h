/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_check.h -- a plan against the plain routine: for each m of a list,
 * fb_plan_gemm / fb_plan_mlp and sgemm_bias_act (etc.) / mlp_geglu_forward
 * on the same data, in the same memory, on the same handle, must give
 * the same bits and run the same implementation (the plain call's path
 * begins with fb_plan_path's name), and write the whole output window
 * and nothing else. Shared by the CPU program (test_plan) and the GPU one
 * (test_gpu_plan).
 */
#ifndef FB_TEST_PLAN_CHECK_H
#define FB_TEST_PLAN_CHECK_H

#include <stdint.h>
#include "harness.h"

typedef struct plan_gemm_spec {
    fb_dtype dtype;
    fb_layout layout;
    fb_transpose transa, transb;
    int64_t max_m, n, k;
    float alpha, beta;
    int bias;
    fb_activation act;
    int pad;             /* extra elements in every leading dimension */
} plan_gemm_spec;

typedef struct plan_mlp_spec {
    fb_dtype dtype;
    fb_activation act;
    int64_t max_m, k, h, n;
    int biases;
    int pad;
} plan_mlp_spec;

/* One TAP point per spec: every m of ms (nm of them, each <= max_m) on
 * handle h with operands in mem. sync: called after each call (the GPU
 * program's stream synchronisation), may be NULL. want_path: if not NULL,
 * every m must run an implementation whose name begins with it. */
void plan_check_gemm(fb_handle h, const tmem *mem, const plan_gemm_spec *s,
                     const int64_t *ms, int nm, void (*sync)(void),
                     const char *want_path);
void plan_check_mlp(fb_handle h, const tmem *mem, const plan_mlp_spec *s,
                    const int64_t *ms, int nm, void (*sync)(void),
                    const char *want_path);

/* Bad arguments at creation and at execution, each reported at its
 * position with nothing written; made-up, destroyed and mistyped plans.
 * Operands in mem, handle h. */
void plan_check_bad_args(fb_handle h, const tmem *mem);

#endif /* FB_TEST_PLAN_CHECK_H */
