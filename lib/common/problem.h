/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * problem.h -- a checked call, in the one form every backend consumes.
 *
 * The public entry points check their arguments (check.c), then describe the
 * call as one of these. gemm problems are normalised to column-major once,
 * before dispatch (a row-major call swaps A and B, m and n, as OpenBLAS's
 * interface does), so that backends know one layout. The epilogue (bias and
 * activation) is data, consumed the same way by every backend.
 *
 * This header is plain C and is shared with the CUDA module (lib/cuda),
 * which is built separately and loaded at run time: keep it free of
 * anything that module cannot see.
 */
#ifndef FB_PROBLEM_H
#define FB_PROBLEM_H

#include <stdint.h>
#include "fusedblas.h"

/* bias and activation, applied to the fp32 accumulator before the store. */
typedef struct fb_epilogue {
    const void *bias;   /* NULL, or a vector of the problem's dtype */
    fb_activation act;
    /* In the normalised column-major C: non-zero means bias[i] is added to
     * row i (a row-major call: the usual nn.Linear case, and what cuBLASLt's
     * BIAS epilogue does); zero means bias[j] is added to column j. */
    int bias_per_row;
    /* NULL, or an fp32 scale a weight row (e4m3 weights widened to the
     * dtype: C's rows where bias_per_row, else its columns), applied to
     * the dot product first: alpha (dot scale) + beta C + bias. Only the
     * CPU's bf16 and fp32 drivers take it (cpu_fp8_wide.c sets it). */
    const float *scale;
} fb_epilogue;

/* Column-major: C (m x n, ldc) <- act(alpha op(A) op(B) + beta C + bias). */
typedef struct fb_gemm_problem {
    fb_dtype dtype;
    int transa, transb; /* non-zero: op(X) = X^T */
    int64_t m, n, k;
    float alpha, beta;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    fb_epilogue ep;
    /* Decided once, by fb_gemm_normalise: */
    int multiply;    /* k > 0 and alpha != 0: A and B are read; otherwise
                        there is nothing to multiply (BLAS does not
                        reference them) and C <- act(beta C + bias) */
    int weight_is_a; /* the layer's weights (the caller's B, op(B) k x n)
                        are A here, as after a row-major call's swap;
                        else they are B. The tokens (the caller's m) are
                        then n here, else m. */
} fb_gemm_problem;

/* Sets p->multiply from k and alpha: fb_gemm_normalise for every call,
 * and code that builds a problem of its own (the MLPs' GEMMs). */
static inline void fb_gemm_decide(fb_gemm_problem *p)
{
    p->multiply = p->k > 0 && p->alpha != 0.0f;
}

/* The caller's m: the rows of the layer's input, whatever the swap. */
static inline int64_t fb_gemm_tokens(const fb_gemm_problem *p)
{
    return p->weight_is_a ? p->n : p->m;
}

/* Row-major gated MLP, exactly as mlp_geglu_forward() documents. */
typedef struct fb_mlp_problem {
    fb_dtype dtype;
    fb_activation gate_act;
    int64_t m, k, h, n;
    const void *x;
    int64_t ldx;
    const void *wg, *bg, *wu, *bu, *wd, *bd;
    void *y;
    int64_t ldy;
} fb_mlp_problem;

/* Bytes of one element of dtype. */
static inline int64_t fb_dtype_size(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 4 : 2;
}

#endif /* FB_PROBLEM_H */
