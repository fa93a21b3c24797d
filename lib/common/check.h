/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h -- the one gate every public routine passes before dispatch.
 *
 * Checks run from the last argument to the first, so that when several are
 * bad the lowest position is reported, as reference BLAS's xerbla does.
 * Every backend trusts what passes.
 */
#ifndef FB_CHECK_H
#define FB_CHECK_H

#include <stddef.h>
#include "problem.h"

/* A gemm_bias_act call as the user gave it (positions as in fusedblas.h). */
typedef struct fb_gemm_call {
    fb_dtype dtype;
    fb_layout layout;
    fb_transpose transa, transb;
    int64_t m, n, k;
    float alpha;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    float beta;
    void *c;
    int64_t ldc;
    const void *bias;
    fb_activation act;
} fb_gemm_call;

/* 0 if the call is valid, else the 1-based position of the first bad
 * argument, with a sentence in msg. */
int fb_check_gemm(const fb_gemm_call *call, char *msg, size_t len);

/* The valid call as a column-major problem (row-major swaps A and B). */
void fb_gemm_normalise(const fb_gemm_call *call, fb_gemm_problem *p);

/* Same for mlp_geglu_forward; the problem is the call itself. */
int fb_check_mlp(const fb_mlp_problem *p, char *msg, size_t len);

/* Plans. Creation: the call's fixed part (for gemm, m is max_m, A and C
 * are not given; for the MLP, m is max_m, X and Y are not given), plan the
 * pointer the plan is stored through; positions as fb_plan_create_gemm's
 * and fb_plan_create_mlp's. Execution: the whole call; an argument at
 * fault is numbered as the execution's (2 m, 3 input, 4 its ld, 5
 * output, 6 its ld; 0 for one fixed at creation, which cannot fail). */
int fb_check_plan_gemm(const fb_gemm_call *call, const void *plan,
                       char *msg, size_t len);
int fb_check_plan_mlp(const fb_mlp_problem *p, const void *plan, char *msg,
                      size_t len);
int fb_check_plan_gemm_exec(const fb_gemm_call *call, int64_t max_m,
                            char *msg, size_t len);
int fb_check_plan_mlp_exec(const fb_mlp_problem *p, int64_t max_m,
                           char *msg, size_t len);

#endif /* FB_CHECK_H */
