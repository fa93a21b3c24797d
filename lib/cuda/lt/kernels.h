/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernels.h -- the module's own kernels, around cuBLASLt: the bias and
 * activation epilogue that cuBLASLt cannot apply as the contract says, the
 * gated product of the MLP, and a plain GEMM for operands no cuBLASLt
 * algorithm accepts. Host-side launchers; each launches one kernel on
 * `stream`, checks the launch, and never synchronises.
 */
#ifndef FB_CUDA_KERNELS_H
#define FB_CUDA_KERNELS_H

#include <stdint.h>
#include <cuda_runtime.h>
#include "cuda_module.h"

/* C (m x n, column-major, ldc) <- act( acc + beta * C + bias ), computed in
 * fp32 and rounded once at the store.
 *  - acc: NULL (read as 0), or an fp32 m x n matrix (column-major, ldacc):
 *    the GEMM's alpha op(A) op(B) as cuBLASLt left it, unrounded, so that
 *    a 16-bit C is rounded only once, after bias and activation (problem.h).
 *  - C is read only when read_c is non-zero (beta == 0 must not read it:
 *    NaN there must not leak).
 *  - bias is NULL, or of length m (bias_per_row) or n.
 * Used after a cuBLASLt GEMM (on C in place for fp32 data; from the fp32
 * accumulator for 16-bit data) and alone when there is nothing to multiply
 * (k == 0 or alpha == 0). */
fb_status fb_launch_epilogue(cudaStream_t stream, fb_dtype dtype, void *c,
                             int64_t ldc, int64_t m, int64_t n,
                             const float *acc, int64_t ldacc, float beta,
                             int read_c, const void *bias, int bias_per_row,
                             fb_activation act, fb_cuda_result *r);

/* H <- act(G + bg) .* (U + bu), all three rows x cols, column-major, the
 * biases (NULL or of length rows) added per row in fp32 before the
 * activation and the product, one rounding at the store. H may be G (each
 * element is read before it is written, by the same thread). */
fb_status fb_launch_gated_product(cudaStream_t stream, fb_dtype dtype,
                                  fb_activation act, const void *g,
                                  int64_t ldg, const void *bg, const void *u,
                                  int64_t ldu, const void *bu, void *h,
                                  int64_t ldh, int64_t rows, int64_t cols,
                                  fb_cuda_result *r);

/* The whole problem, epilogue included, by a plain shared-memory tiled
 * kernel that needs nothing but element alignment: the fallback when
 * cuBLASLt has no algorithm for the operands (alignment). Correct, not
 * fast. alpha != 0 and k > 0 (else use fb_launch_epilogue). */
fb_status fb_launch_simt_gemm(cudaStream_t stream, const fb_gemm_problem *p,
                              fb_cuda_result *r);

/* cudaSuccess if this build holds code the current device can run. */
cudaError_t fb_kernels_check_image(void);

#endif /* FB_CUDA_KERNELS_H */
