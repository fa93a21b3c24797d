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
#include <stdint.h>
#include "problem.h"

/* What the module knows about the device and the handle. */
typedef struct fb_fused_env {
    cudaStream_t stream;
    int device;
    int sm_count;
    int cc_major, cc_minor;
    size_t smem_optin;       /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
    double dram_gbs;         /* peak DRAM bandwidth in GB/s, 0 unknown */
    fb_math_mode math;
    void *workspace;         /* device scratch owned by the handle */
    size_t workspace_bytes;  /* at least FB_FUSED_WORKSPACE_BYTES */
    void *scratch;           /* what the family's scratch asked for */
    size_t scratch_bytes;    /* (the handle's mlp scratch), or NULL / 0 */
    int weights_fixed;       /* a plan's execution: the weights are those
                                the plan was made with, unchanged since
                                (its contract), so a kernel may read them
                                before the work ahead of it on the stream
                                has finished */
} fb_fused_env;

/* The fused kernels' scratch need; the module provides this much. */
#define FB_FUSED_WORKSPACE_BYTES ((size_t)32 << 20)

/* The last 64 KiB of the workspace (from its start rounded down to 256
 * bytes) hold the grid barrier's epoch, flags and counters
 * (fused_decode.cu, below 48 KiB) and, from FB_FUSED_SK_OFFSET, the GEMM
 * engine's stream-K arrival counters (fused_gemm_sm90.cu). The module
 * zeroes them once when it makes the workspace, so both start from a
 * known state; nothing else writes there (cuBLASLt has a workspace of
 * its own, ctx.h). */
#define FB_FUSED_BARRIER_BYTES ((size_t)64 << 10)
#define FB_FUSED_SK_OFFSET ((size_t)48 << 10)
#define FB_FUSED_SK_COUNTERS 4096

/* Where that region begins in env's workspace. */
static inline char *fb_fused_barrier_base(const fb_fused_env *env)
{
    char *end = static_cast<char *>(env->workspace) + env->workspace_bytes;
    return reinterpret_cast<char *>(
        (uintptr_t)(end - FB_FUSED_BARRIER_BYTES) & ~(uintptr_t)255);
}

/* One fused kernel family, as an entry of the module's implementation
 * tables (module.cu walks them, then cuda-lt). applies says whether the
 * family covers the call, asking the launcher without launching;
 * preferred is the shape rule (shape_rule.cu): whether the family
 * measured faster than cuda-lt for the call's shape class, asked only
 * under FB_BACKEND_CUDA / AUTO; scratch is the device memory a call needs
 * beyond the workspace (env->scratch, at least that many bytes, when run
 * is called); run launches, naming its kernel in path (e.g.
 * "cuda-fused/mlp_decode_bf16+tma"), or returns FB_STATUS_NOT_SUPPORTED
 * having launched nothing. A NULL name ends a table. */
typedef struct fb_fused_gemm_impl {
    const char *name;
    bool (*applies)(const fb_fused_env *env, const fb_gemm_problem *p);
    bool (*preferred)(const fb_fused_env *env, const fb_gemm_problem *p);
    size_t (*scratch)(const fb_gemm_problem *p);
    fb_status (*run)(const fb_fused_env *env, const fb_gemm_problem *p,
                     char *path, size_t pathlen);
} fb_fused_gemm_impl;

typedef struct fb_fused_mlp_impl {
    const char *name;
    bool (*applies)(const fb_fused_env *env, const fb_mlp_problem *p);
    bool (*preferred)(const fb_fused_env *env, const fb_mlp_problem *p);
    size_t (*scratch)(const fb_mlp_problem *p);
    fb_status (*run)(const fb_fused_env *env, const fb_mlp_problem *p,
                     char *path, size_t pathlen);
} fb_fused_mlp_impl;

/* In the order they are tried: tiny widths, then decode sizes, then (the
 * MLP) the prefill pair at its widths, then the Hopper GEMM engine. */
extern const fb_fused_gemm_impl fb_fused_gemm_impls[];
extern const fb_fused_mlp_impl fb_fused_mlp_impls[];

/* The gated MLP's hidden layer alone on the Hopper GEMM engine, for the
 * tensor-parallel MLP (whose down GEMM sums in fp32): H = act(X Wg^T +
 * bg) .* (X Wu^T + bu) into h, m x h elements of the input type, row
 * stride p->h, 16-byte aligned. h NULL and h_bytes 0: only whether the
 * engine covers the call. NOT_SUPPORTED, nothing launched, where it does
 * not. */
/* A plan's weights on the GEMM engine (cuda-fused/gemm_sm90): the bytes of
 * the K-major copy the engine would pack them into at every call (0: it
 * reads them where they lie); and p with its weights replaced by that
 * copy at dst (16-byte aligned), which is written first (on stream) when
 * pack. The copy gives the engine the values, so the same bits, as the
 * call's own packing. */
size_t fb_fused_gemm_weights_packed_bytes(const fb_gemm_problem *p);
/* Ends path with "+pack" (the engine ran on packed operands), once. */
void fb_fused_path_mark_packed(char *path, size_t pathlen);
fb_status fb_fused_gemm_use_packed_weights(cudaStream_t stream,
                                           fb_gemm_problem *p, void *dst,
                                           bool pack);

fb_status fb_fused_mlp_hidden(const fb_fused_env *env,
                              const fb_mlp_problem *p, void *h,
                              size_t h_bytes, char *path, size_t pathlen);

/* The tensor maps of a plan's weights (fused_tma_map.cu), kept from one
 * execution to the next: the TMA kernels (decode, GEMM engine) encode a
 * weight's map the first time an execution needs it, and find it here
 * after, as long as a scope names the cache. Maps of anything else (X,
 * H) are encoded at each call, as before. At most FBF_MAP_CACHE maps. */
#define FBF_MAP_CACHE 160
typedef struct fbf_map_cache fbf_map_cache;
fbf_map_cache *fbf_map_cache_create(const void *const *weights, int n);
void fbf_map_cache_destroy(fbf_map_cache *c);

/* While one lives, on this thread, the fused kernels look their weights'
 * maps up in c (NULL: no cache, every map encoded). */
class fbf_map_cache_scope {
  public:
    explicit fbf_map_cache_scope(fbf_map_cache *c);
    ~fbf_map_cache_scope();

  private:
    fbf_map_cache *previous_;
    fbf_map_cache_scope(const fbf_map_cache_scope &);
    fbf_map_cache_scope &operator=(const fbf_map_cache_scope &);
};

#endif /* FB_CUDA_FUSED_H */
