/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8.h -- the CUDA kernels for e4m3 weights (problem_fp8.h).
 *
 * Two families: a decode kernel for up to 64 tokens that streams the e4m3
 * rows with 16-byte loads, widens them in registers (exactly: every e4m3
 * value is an fp16 and a bf16) and multiplies on the tensor cores
 * (mma.sync m16n8k16, fp32 accumulators), the scale applied to each
 * channel's fp32 sum; the mid kernel (fused_fp8_mid.cu), the same
 * widening with the tokens staged in shared memory, for tens to
 * hundreds of tokens; and a tiled fp32 kernel that takes every shape,
 * stride and dtype. The MLP runs gate and up together (H stored in the
 * input type, as the CPU does), then the down projection.
 */
#ifndef FB_FUSED_FP8_H
#define FB_FUSED_FP8_H

#include <stddef.h>
#include <cuda_runtime.h>
#include "cuda_module.h"
#include "problem_fp8.h"

/* Device memory in bytes the MLP needs beside its operands: H, and the
 * fp32 G and U where neither the decode kernel nor the engine forms H. */
size_t fb_fp8_mlp_scratch_bytes(fb_cuda_ctx *ctx,
                                const fb_e4m3_mlp_problem *p);

/* Launch on stream; path receives the kernel's name. FB_STATUS_SUCCESS
 * once launched (the caller checks the launch error). */
fb_status fb_fp8_gemm(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                      char *path, size_t len);
/* fb_fp8_gemm for a call whose weights, scales, bias and C no grid ahead
 * of it on the stream writes, only X (the MLP's down projection after its
 * own gate-and-up kernel): the decode kernel launches programmatically
 * and asks for its first weights before it waits for that grid. */
fb_status fb_fp8_gemm_x_pending(cudaStream_t stream,
                                const fb_e4m3_gemm_problem *p, char *path,
                                size_t len);
/* ctx, r: for the prefill path's GEMMs (fb_fp8_gemm_prefill). */
fb_status fb_fp8_mlp(fb_cuda_ctx *ctx, cudaStream_t stream,
                     const fb_e4m3_mlp_problem *p, void *scratch,
                     size_t scratch_bytes, char *path, size_t len,
                     fb_cuda_result *r);

/* Within the module: whether fb_fp8_gemm runs p on one of its register
 * kernels (decode or mid), which the callers then take before any
 * prefill path; p with fp32 output (c is float whatever p->dtype) on the
 * tiled kernel. */
bool fb_fp8_direct_applies(const fb_e4m3_gemm_problem *p);
void fb_fp8_gemm_f32_out(cudaStream_t stream, const fb_e4m3_gemm_problem *p);

/* The mid kernel (fused_fp8_mid.cu): tokens staged in shared memory, a
 * block per 256 weight rows and up to 64 tokens, k split over a cluster
 * where the blocks are too few; sm_90 only. _applies says only whether
 * it can run p, at any number of rows; fb_fp8_mid_rows is the shape rule
 * (docs/fp8-weights.md, measured on the H100) for a product of m rows, k
 * inputs and n outputs (the MLP's gate and up: n = 2h): from 17 rows
 * where the outputs are many (n >= 8192) and not fewer than the inputs,
 * from 33 where not fewer, from 65 whatever the shape (the decode kernel
 * below, faster on down projections, whose few blocks of 256 channels
 * split k), up to FB_FP8_MID_MAX_ROWS (the GEMM engine beyond; the e4m3
 * wgmma kernel below goes first from its first row where it covers the
 * call). splits:
 * the blocks sharing k (1, 2, 4, 8), 0 to choose by the grid. */
#define FB_FP8_MID_MAX_ROWS 192
static inline bool fb_fp8_mid_rows(int64_t m, int64_t k, int64_t n)
{
    return m <= FB_FP8_MID_MAX_ROWS &&
           (m > 64 || (m > 32 && k <= n) || (m > 16 && k <= n && n >= 8192));
}
bool fb_fp8_mid_gemm_applies(const fb_e4m3_gemm_problem *p);
bool fb_fp8_mid_gate_up_applies(const fb_e4m3_mlp_problem *p);
cudaError_t fb_fp8_mid_gemm(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                            int splits);
/* H into hbuf (m x h, row stride h) */
cudaError_t fb_fp8_mid_gate_up(cudaStream_t stream,
                               const fb_e4m3_mlp_problem *p, void *hbuf,
                               int splits);

/* More than 16 rows of 16-bit data (fused_fp8_prefill.cu; the callers
 * take the e4m3 wgmma kernel, the decode kernel or the mid kernel first
 * where they apply): the weights
 * widened per tile of channels, then the GEMM engine with the outputs
 * finished in its epilogue (16-bit output, where it covers the call), or
 * cuBLASLt's GEMM into fp32 and our epilogue. f32_out: p->c is float (the
 * MLP's G and U). The path that ran goes to path ("cuda-fused/e4m3-...").
 * FB_STATUS_NOT_SUPPORTED, nothing launched that writes p->c, where it
 * does not apply or cuBLASLt has no algorithm: the caller runs the tiled
 * kernel. Uses the context's staging and accumulator buffers (the e4m3
 * calls stage nothing). */
fb_status fb_fp8_gemm_prefill(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                              int f32_out, char *path, size_t pathlen,
                              fb_cuda_result *r);

/* The MLP's H = act(sg .* X Wg^T + bg) .* (su .* X Wu^T + bu) for 128
 * rows or more of 16-bit data on the GEMM engine (fused_fp8_prefill.cu),
 * into hbuf (m x h, row stride h, hbuf_bytes long). NOT_SUPPORTED, nothing
 * launched, where the engine does not cover the call, which _applies
 * tells beforehand. */
bool fb_fp8_gate_up_prefill_applies(fb_cuda_ctx *ctx,
                                    const fb_e4m3_mlp_problem *p);
fb_status fb_fp8_gate_up_prefill(fb_cuda_ctx *ctx,
                                 const fb_e4m3_mlp_problem *p, void *hbuf,
                                 size_t hbuf_bytes, fb_cuda_result *r);

/* The e4m3 wgmma kernel (fused_fp8_wgmma.cu: the weights widened inside
 * the GEMM, no widened copy in memory) runs ahead of the mid kernel and
 * of the engine on widened weights, where it covers the call, from
 * FB_FP8_WGMMA_MIN_ROWS rows up to FB_FP8_WGMMA_GEMM_MAX_ROWS for the
 * gemm and FB_FP8_WGMMA_MLP_MAX_ROWS for both of the MLP's launches: the
 * ranges where it measured faster than both (docs/fp8-weights.md);
 * where the mid kernel can run the call too, only if its grid (k split
 * over clusters included) fills the GPU (fbf_e4m3_wgmma_gemm_fills). */
#define FB_FP8_WGMMA_MIN_ROWS 128
#define FB_FP8_WGMMA_GEMM_MAX_ROWS 384
#define FB_FP8_WGMMA_MLP_MAX_ROWS 768

/* The gemm on the e4m3 wgmma kernel for FB_FP8_WGMMA_MIN_ROWS .. max_rows
 * rows of 16-bit data with 16-bit output. NOT_SUPPORTED, nothing
 * launched, where it does not cover the call. */
fb_status fb_fp8_gemm_wgmma(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                            int64_t max_rows, char *path, size_t pathlen);

/* The MLP's H for FB_FP8_WGMMA_MIN_ROWS .. FB_FP8_WGMMA_MLP_MAX_ROWS rows of 16-bit data
 * on the e4m3 wgmma kernel (gate and up widened inside one dual GEMM, H
 * formed from one thread's accumulators) into hbuf (m x h, row stride h).
 * NOT_SUPPORTED, nothing launched, where it does not cover the call,
 * which _applies tells beforehand. */
bool fb_fp8_gate_up_wgmma_applies(fb_cuda_ctx *ctx,
                                  const fb_e4m3_mlp_problem *p);
fb_status fb_fp8_gate_up_wgmma(fb_cuda_ctx *ctx, const fb_e4m3_mlp_problem *p,
                               void *hbuf);

#endif /* FB_FUSED_FP8_H */
