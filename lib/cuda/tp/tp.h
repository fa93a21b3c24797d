/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp.h -- the module's tensor-parallel entries (cuda_module.h's tp_agree,
 * tp_mlp, tp_gemm), implemented in tp.cu.
 */
#ifndef FB_CUDA_TP_H
#define FB_CUDA_TP_H

#include "cuda_module.h"

fb_status fb_tp_agree(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                      const int64_t *mine, int64_t *all, int len,
                      fb_cuda_result *r);
fb_status fb_tp_mlp(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                    const fb_tp_mlp_problem *p, fb_math_mode math,
                    fb_cuda_result *r);
fb_status fb_tp_gemm(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                     const fb_gemm_problem *p, fb_math_mode math,
                     fb_cuda_result *r);

#endif /* FB_CUDA_TP_H */
