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

#endif /* FB_CUDA_LT_MLP_H */
