/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * staging.h -- host operands given to the CUDA module.
 *
 * A pointer that CUDA does not report as device or managed memory is host
 * memory (pageable or pinned); staging.cu says how that is asked cheaply.
 * Such operands are copied into the context's staging buffer before the
 * call, the output's window is copied back after it, and the call waits
 * for its stream: with host data a GPU call is synchronous and pays for
 * the transfers, which is why auto keeps host data on the CPU.
 *
 * Only what the call reads is copied in: A and B when k > 0 and alpha != 0,
 * C when beta != 0, a bias that is given; an operand the call does not read
 * is passed on as NULL. Only the m x n window of the output is copied back,
 * so ld padding in the user's memory is never written.
 */
#ifndef FB_CUDA_STAGING_H
#define FB_CUDA_STAGING_H

#include <stdint.h>
#include "ctx.h"

/* Where a staged output goes back to. */
typedef struct fb_staged_output {
    void *host;         /* the user's C or Y; NULL: it is device memory */
    const void *device; /* its copy in the staging buffer */
    int64_t rows, cols, ld, elem; /* column-major window */
} fb_staged_output;

/* 1 if kernels can read p directly (device or managed memory). One query,
 * answered by the driver where it says "device", else by
 * cudaPointerGetAttributes. */
int fb_is_device_pointer(const void *p);

/* dev <- p with every host operand replaced by a staged device copy (the
 * copies enqueued on the context's stream). *staged: whether anything was;
 * then the caller finishes with fb_stage_finish. */
fb_status fb_stage_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                        fb_gemm_problem *dev, fb_staged_output *out,
                        int *staged, fb_cuda_result *r);
fb_status fb_stage_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                       fb_mlp_problem *dev, fb_staged_output *out,
                       int *staged, fb_cuda_result *r);

/* Enqueue the copy of the output's window back to the host (if the output
 * was staged). */
fb_status fb_stage_copy_out(fb_cuda_ctx *ctx, const fb_staged_output *out,
                            fb_cuda_result *r);

#endif /* FB_CUDA_STAGING_H */
