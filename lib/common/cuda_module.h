/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_module.h -- the C interface between libfusedblas and its CUDA backend.
 *
 * The CUDA backend is a libtool module (fusedblas_cuda.so) that libfusedblas
 * dlopens at first use, so the library itself never links the CUDA runtime
 * and loads on machines that have none. The module exports one symbol,
 * FB_CUDA_MODULE_SYMBOL, a function returning this table. Both sides are
 * built from this header; FB_CUDA_MODULE_ABI changes whenever the table or
 * the problem structs change, and the loader refuses a mismatch.
 */
#ifndef FB_CUDA_MODULE_H
#define FB_CUDA_MODULE_H

#include <stddef.h>
#include "plan_segments.h"
#include "problem.h"
#include "problem_fp8.h"
#include "tp_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FB_CUDA_MODULE_ABI 6
#define FB_CUDA_MODULE_SYMBOL "fb_cuda_module_v1"

/* The module's implementations by name, for fb_set_implementation: the
 * library knows them without loading the module, and the module's table
 * (module.cu, with the fused families of fused/shape_rule.cu) uses
 * these names. */
#define FB_CUDA_IMPL_NAMES                                                     \
    "cuda-fused/gemm_tiny", "cuda-fused/gemm_decode", "cuda-fused/gemm_sm90", \
        "cuda-fused/mlp_tiny", "cuda-fused/mlp_decode",                        \
        "cuda-fused/mlp_prefill_wgmma", "cuda-fused/mlp_sm90", "cuda-lt"

/* Per-handle CUDA state, owned by the module: device, stream, cuBLASLt
 * handle, plan cache, workspaces. */
typedef struct fb_cuda_ctx fb_cuda_ctx;

/* What a call reports back besides its status. */
typedef struct fb_cuda_result {
    fb_backend ran;     /* FB_BACKEND_CUDA_LT or FB_BACKEND_CUDA_FUSED */
    char path[96];      /* the path in words, e.g. "cuda-lt/GELU_BIAS" */
    char message[256];  /* on failure: why, with the CUDA/cuBLAS error text */
} fb_cuda_result;

/* A plan's GPU side: its choice of implementation for every m up to its
 * max_m, and the device memory reserved for it. Owned by the module. */
typedef struct fb_cuda_plan fb_cuda_plan;

typedef struct fb_cuda_module {
    int abi; /* FB_CUDA_MODULE_ABI */

    /* FB_STATUS_SUCCESS if a CUDA device can be used; otherwise
     * FB_STATUS_BACKEND_UNAVAILABLE with the reason in message. */
    fb_status (*probe)(char *message, size_t len);

    fb_status (*ctx_create)(fb_cuda_ctx **ctx, int device, char *message,
                            size_t len);
    void (*ctx_destroy)(fb_cuda_ctx *ctx);
    /* A cudaStream_t; NULL is the legacy default stream. */
    void (*ctx_set_stream)(fb_cuda_ctx *ctx, void *stream);

    /* path: FB_BACKEND_CUDA_LT or FB_BACKEND_CUDA_FUSED to keep to one
     * (the fused path answers FB_STATUS_NOT_SUPPORTED for a call none of
     * its families covers), or FB_BACKEND_CUDA to let the module's table
     * and shape rule choose. forced: the one implementation to run (a
     * name of FB_CUDA_IMPL_NAMES; NOT_SUPPORTED if it does not take the
     * call), or NULL. Arguments are already checked. Host pointers are
     * staged through device memory (synchronously). Nothing is written on
     * failure where the failure is detected before launch. */
    fb_status (*gemm)(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                      fb_backend path, fb_math_mode math, const char *forced,
                      fb_cuda_result *r);
    fb_status (*mlp)(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                     fb_backend path, fb_math_mode math, const char *forced,
                     fb_cuda_result *r);

    /* Plans. Exactly one of g, q is given: the plan's problem with m its
     * max_m (for gemm the tokens, fb_gemm_tokens) and no activations or
     * output (NULL pointers, tight leading dimensions), weights in device
     * memory. Decides the implementation for every m (path and forced as
     * above) and reserves the context's device buffers for max_m. */
    fb_status (*plan_create)(fb_cuda_ctx *ctx, const fb_gemm_problem *g,
                             const fb_mlp_problem *q, fb_backend path,
                             fb_math_mode math, const char *forced,
                             fb_cuda_plan **plan, fb_cuda_result *r);
    /* Runs the plan's choice for p's m (1 <= m <= max_m), device
     * pointers only: nothing allocated, nothing staged, no
     * synchronisation; capturable. */
    fb_status (*plan_gemm)(fb_cuda_ctx *ctx, const fb_cuda_plan *plan,
                           const fb_gemm_problem *p, fb_cuda_result *r);
    fb_status (*plan_mlp)(fb_cuda_ctx *ctx, const fb_cuda_plan *plan,
                          const fb_mlp_problem *p, fb_cuda_result *r);
    /* The implementation m rows would run ("cuda-lt",
     * "cuda-fused/mlp_decode", ...). */
    const char *(*plan_impl)(const fb_cuda_plan *plan, int64_t m);
    void (*plan_destroy)(fb_cuda_plan *plan);

    /* e4m3 weights (problem_fp8.h), with the same conventions; the data
     * in device memory (host pointers: FB_STATUS_NOT_SUPPORTED). */
    fb_status (*gemm_e4m3)(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                           fb_backend path, fb_cuda_result *r);
    fb_status (*mlp_e4m3)(fb_cuda_ctx *ctx, const fb_e4m3_mlp_problem *p,
                          fb_backend path, fb_cuda_result *r);
    /* Tensor parallelism over the caller's NCCL communicator (c->comm on
     * c->device, the context's device); device pointers only, arguments
     * checked. Each enqueues on the context's stream and never
     * synchronises the host, except tp_agree. */
    /* all[len * nranks] <- every rank's mine[len] (ncclAllGather of int64),
     * then waits for it: the one host synchronisation, made when a shape
     * is first seen (tensor_parallel.c). */
    fb_status (*tp_agree)(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                          const int64_t *mine, int64_t *all, int len,
                          fb_cuda_result *r);
    /* The local MLP's fp32 partial of Y (no bias), ncclAllReduce(sum) of
     * the partials, then Y <- round(sum + bd); a chunked 16-bit call may
     * reduce-scatter each chunk instead, round each rank's share and
     * all-gather Y (tp.cu). */
    fb_status (*tp_mlp)(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                        const fb_tp_mlp_problem *p, fb_math_mode math,
                        fb_cuda_result *r);
    /* Row-parallel gemm: alpha op(A) op(B) in fp32 (this rank's k),
     * ncclAllReduce(sum), then C <- act(sum + beta C + bias), one
     * rounding. */
    fb_status (*tp_gemm)(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                         const fb_gemm_problem *p, fb_math_mode math,
                         fb_cuda_result *r);
} fb_cuda_module;

typedef const fb_cuda_module *(*fb_cuda_module_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* FB_CUDA_MODULE_H */
