/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lt_gemm.h -- backend cuda-lt's gemm_bias_act: cuBLASLt with its epilogue
 * where the epilogue meets the contract, our kernels for the rest.
 */
#ifndef FB_CUDA_LT_GEMM_H
#define FB_CUDA_LT_GEMM_H

#include <stddef.h>
#include <cublasLt.h>
#include "module/ctx.h"

/* One column-major GEMM by cublasLtMatmul on the context's stream:
 *     D <- epi(alpha op(A) op(B) + beta D [+ bias per row])
 * with A and B of p->dtype and D = p->c (m x n, p->ldc, beta p->beta) of
 * type out: p->dtype, or FB_DTYPE_F32 for a 16-bit call's fp32
 * accumulator. epi is CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _GELU or
 * _GELU_BIAS; bias, used by the _BIAS ones, is of type out (cuBLASLt's
 * default: D's type), so those need out == p->dtype. p->ep is ignored.
 * FB_STATUS_NOT_SUPPORTED, with nothing launched and the reason in why,
 * when cuBLASLt has no algorithm for these operands (their alignment,
 * say) or, for a 16-bit D, only one that would round partial sums to 16
 * bits (split-K parts added up in D's type, a 16-bit accumulator). k > 0
 * (cuBLASLt may refuse k == 0). */
fb_status fb_lt_matmul(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                       fb_dtype out, cublasLtEpilogue_t epi, const void *bias,
                       fb_math_mode math, char *why, size_t whylen,
                       fb_cuda_result *r);

/* The whole contract on device pointers: C <- act(alpha op(A) op(B) +
 * beta C + bias), bias and activation applied to the fp32 accumulator
 * before the one rounding to C's type (lt_gemm.cu says how). Sets r->ran
 * and r->path, e.g. "cuda-lt/GELU_BIAS", "cuda-lt/BIAS+fb_epilogue(silu)"
 * (fp32), "cuda-lt/DEFAULT>f32+fb_epilogue(bias_col,relu)" (16-bit, via
 * the fp32 accumulator), "cuda-lt/fb_simt_gemm (...)". Launches a GEMM
 * and at most one epilogue kernel per tile of the accumulator (one tile
 * unless the call outgrows FB_CTX_ACCUM_BYTES); synchronises only to grow
 * that buffer, once. */
fb_status fb_lt_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                     fb_math_mode math, fb_cuda_result *r);

#endif /* FB_CUDA_LT_GEMM_H */
