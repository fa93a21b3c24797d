/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_fp8.h -- the argument gate of the e4m3-weight routines, with the
 * same rules as check.c (positions as in fusedblas.h, the lowest bad one
 * reported, outputs that overlap inputs refused).
 */
#ifndef FB_CHECK_FP8_H
#define FB_CHECK_FP8_H

#include <stddef.h>
#include "problem_fp8.h"

/* gemm_e4m3_bias_act as the user called it. */
typedef struct fb_e4m3_gemm_call {
    fb_dtype dtype;
    fb_layout layout;
    fb_transpose transa, transb;
    int64_t m, n, k;
    float alpha;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    const float *b_scale;
    float beta;
    void *c;
    int64_t ldc;
    const void *bias;
    fb_activation act;
} fb_e4m3_gemm_call;

/* 0 if valid, else the 1-based position of the first bad argument, with
 * a sentence in msg. */
int fb_check_gemm_e4m3(const fb_e4m3_gemm_call *call, char *msg,
                       size_t len);

/* The valid call in token x channel form (problem_fp8.h). */
void fb_gemm_e4m3_describe(const fb_e4m3_gemm_call *call,
                           fb_e4m3_gemm_problem *p);

int fb_check_mlp_e4m3(const fb_e4m3_mlp_problem *p, char *msg, size_t len);

#endif /* FB_CHECK_FP8_H */
