/*
 * lt_gemm.h -- backend cuda-lt's gemm_bias_act: cuBLASLt with its epilogue
 * where the epilogue meets the contract, our kernels for the rest.
 */
#ifndef FB_CUDA_LT_GEMM_H
#define FB_CUDA_LT_GEMM_H

#include <stddef.h>
#include <cublasLt.h>
#include "ctx.h"

/* One column-major GEMM, C <- epi(alpha op(A) op(B) + beta C [+ bias per
 * row]) by cublasLtMatmul, on the context's stream. epi is
 * CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _GELU or _GELU_BIAS; bias is used by
 * the _BIAS ones. FB_STATUS_NOT_SUPPORTED, with nothing launched and the
 * reason in why, when cuBLASLt has no algorithm for these operands (their
 * alignment, say). k > 0 (cuBLASLt may refuse k == 0). */
fb_status fb_lt_matmul(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                       cublasLtEpilogue_t epi, const void *bias,
                       fb_math_mode math, char *why, size_t whylen,
                       fb_cuda_result *r);

/* The whole contract on device pointers: C <- act(alpha op(A) op(B) +
 * beta C + bias). Sets r->ran and r->path, e.g. "cuda-lt/GELU_BIAS",
 * "cuda-lt/BIAS+fb_act_silu", "cuda-lt/DEFAULT+fb_bias_col",
 * "cuda-lt/fb_simt_gemm (...)". Launches up to two kernels (GEMM, then
 * epilogue); never synchronises. */
fb_status fb_lt_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                     fb_math_mode math, fb_cuda_result *r);

#endif /* FB_CUDA_LT_GEMM_H */
