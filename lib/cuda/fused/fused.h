/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused.h -- the hand-written kernels of backend cuda-fused, as seen by the
 * CUDA module's dispatcher (module code is CUDA C++; this header is only
 * included from the .cu files of lib/cuda).
 *
 * Every entry point takes device pointers only (the module stages host data
 * before calling), launches on env->stream, never synchronises, and returns
 * FB_STATUS_NOT_SUPPORTED without launching anything for a shape, dtype or
 * math mode it does not cover, so that the dispatcher can fall back to
 * cuBLASLt under FB_BACKEND_CUDA / AUTO.
 */
#ifndef FB_CUDA_FUSED_H
#define FB_CUDA_FUSED_H

#include <cuda_runtime.h>
#include <stddef.h>
#include "problem.h"

/* What the module knows about the device and the handle. */
typedef struct fb_fused_env {
    cudaStream_t stream;
    int device;
    int sm_count;
    int cc_major, cc_minor;
    int mem_bus_bits;        /* cudaDevAttrGlobalMemoryBusWidth: tells an
                                H100 (5120-bit HBM3) from an H200 (6144-bit
                                HBM3e) for the shape rule */
    size_t smem_optin;       /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
    fb_math_mode math;
    void *workspace;         /* device scratch owned by the handle */
    size_t workspace_bytes;  /* at least FB_FUSED_WORKSPACE_BYTES */
    void *scratch;           /* what fb_fused_mlp_scratch_bytes asked for */
    size_t scratch_bytes;    /* (the handle's mlp scratch), or NULL / 0 */
} fb_fused_env;

/* The fused kernels' scratch need; the module provides this much. */
#define FB_FUSED_WORKSPACE_BYTES ((size_t)32 << 20)

/* The last 64 KiB of the workspace hold the grid barrier's epoch, flags
 * and counters (fused_decode.cu). The module zeroes them once when it
 * makes the workspace, so the barrier starts from a known state; nothing
 * else writes there (cuBLASLt has a workspace of its own, ctx.h). */
#define FB_FUSED_BARRIER_BYTES ((size_t)64 << 10)

/* Run the call with a fused kernel. path receives the kernel's name,
 * e.g. "cuda-fused/mlp_decode_bf16". */
fb_status fb_fused_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        char *path, size_t pathlen);
fb_status fb_fused_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       char *path, size_t pathlen);

/* Device memory an fb_fused_mlp call needs beyond the workspace, 0 if
 * none: the prefill kernels write H (m x h of the input type) between
 * their two launches. The module reserves it in the handle's scratch and
 * passes it as env->scratch; without it the prefill kernels decline. */
size_t fb_fused_mlp_scratch_bytes(const fb_fused_env *env,
                                  const fb_mlp_problem *p);

/* The shape rule for FB_BACKEND_CUDA / AUTO: non-zero when the fused path
 * covers this call and measured faster than cuBLASLt for its shape class. */
int fb_fused_prefers_gemm(const fb_fused_env *env, const fb_gemm_problem *p);
int fb_fused_prefers_mlp(const fb_fused_env *env, const fb_mlp_problem *p);

#endif /* FB_CUDA_FUSED_H */
