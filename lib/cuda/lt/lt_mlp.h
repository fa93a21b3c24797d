/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lt_mlp.h -- backend cuda-lt's mlp_geglu_forward: three cuBLASLt GEMMs
 * and one gated-product kernel.
 */
#ifndef FB_CUDA_LT_MLP_H
#define FB_CUDA_LT_MLP_H

#include "module/ctx.h"

/* Y = (act_g(X Wg^T + bg) .* (X Wu^T + bu)) Wd^T + bd on device pointers,
 * intermediates in the context's scratch. Sets r->ran and r->path
 * ("cuda-lt/mlp(...)"); never synchronises once the scratch is large
 * enough. */
fb_status fb_lt_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                    fb_math_mode math, fb_cuda_result *r);

/* Where steps 1-3 of fb_lt_mlp left H, for a down projection of the
 * caller's own (the tensor-parallel MLP's fp32 partial, tp.cu). */
typedef struct fb_lt_hidden {
    const void *h;     /* H^T, column-major h x m, in p->dtype */
    int64_t ldh;       /* a multiple of 16 bytes */
    int merged;        /* gate and up ran as one GEMM */
    int biased;        /* the gated product added bg or bu */
    fb_activation act; /* the gate activation */
    char gate_name[24], up_name[24]; /* the stages' names for the path */
} fb_lt_hidden;

/* Steps 1-3 of fb_lt_mlp: H = act_g(X Wg^T + bg) .* (X Wu^T + bu) in the
 * context's scratch, valid until the next call on the context. p->m > 0,
 * p->h > 0. */
fb_status fb_lt_mlp_hidden(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                           fb_math_mode math, fb_lt_hidden *out,
                           fb_cuda_result *r);

#endif /* FB_CUDA_LT_MLP_H */
