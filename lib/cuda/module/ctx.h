/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctx.h -- per-handle CUDA state (struct fb_cuda_ctx), for the module's
 * own files.
 *
 * One context belongs to one fb_handle, and a handle is used by one thread
 * at a time (docs/DESIGN.md); only the plan cache is also locked, since it is
 * cheap to do and a cache is where sharing mistakes would hide.
 *
 * Ordering of reuse: every call that enqueues work records `done` on the
 * stream after its last operation. A new stream waits for `done` before its
 * first use (ctx_set_stream), and a buffer is freed or regrown only after
 * `done` completes, so the buffers below are never in use by two pieces of
 * work at once, whatever streams the user switches between, and no call
 * synchronises the host unless it stages host memory or grows a buffer.
 */
#ifndef FB_CUDA_CTX_H
#define FB_CUDA_CTX_H

#include <pthread.h>
#include <stddef.h>
#include <cuda_runtime.h>
#include <cublasLt.h>
#include "cuda_module.h"
#include "fused/fused.h"
#include "lt/lt_plan.h"

/* cuBLASLt's workspace: 32 MiB, NVIDIA's advice for Hopper (4 MiB is
 * enough before it). cuBLASLt has it alone: the fused kernels have their
 * own (FB_FUSED_WORKSPACE_BYTES), since what cuBLASLt may keep in its
 * workspace between calls (split-k / stream-k state) is not ours to
 * overwrite (docs/cublaslt-path.md says what made them separate). */
#define FB_CTX_WORKSPACE_BYTES ((size_t)32 << 20)

/* The fp32 accumulator a 16-bit cuBLASLt call is tiled to when our
 * epilogue must follow the GEMM (lt_gemm.cu): 32 MiB bounds the memory,
 * and a tile that size is still largely in L2 (50 MB on Hopper) when the
 * epilogue reads it back. */
#define FB_CTX_ACCUM_BYTES ((size_t)32 << 20)

/* Device memory that grows on demand and is kept for the next call. */
typedef struct fb_device_buffer {
    void *ptr;
    size_t bytes;
} fb_device_buffer;

struct fb_cuda_ctx {
    int device;
    cudaStream_t stream;  /* the user's stream; NULL: legacy default */
    cudaEvent_t done;     /* recorded after each call's last operation */
    int done_recorded;    /* 0 until the first record */
    int done_in_capture;  /* its last record went into a graph being
                             captured: no host wait can use it */
    cublasLtHandle_t lt;

    /* what the device is, read once */
    int sm_count, cc_major, cc_minor;
    size_t smem_optin;
    double dram_gbs;      /* peak DRAM bandwidth, GB/s (0: not reported) */

    void *workspace;      /* FB_CTX_WORKSPACE_BYTES, cuBLASLt's alone */
    size_t workspace_bytes;
    void *fused_workspace; /* FB_FUSED_WORKSPACE_BYTES, the fused kernels'
                              (barrier region zeroed at creation, fused.h) */
    size_t fused_workspace_bytes;
    fb_device_buffer scratch; /* mlp intermediates (G, U, H) */
    fb_device_buffer accum;   /* fp32 GEMM results of 16-bit calls before
                                 their epilogue (lt_gemm.cu), at most
                                 FB_CTX_ACCUM_BYTES once grown */
    fb_device_buffer staging; /* copies of host operands */
    fb_device_buffer tp_partial; /* fp32 partial sums of tensor-parallel
                                    calls, all-reduced in place (tp.cu) */
    /* Where a chunked tensor-parallel call's all-reduces run beside its
     * compute (tp.cu): made on the first such call (fb_ctx_comm_stream),
     * non-blocking, joined back into `stream` before the call's epilogue,
     * so `done` still follows all of a call's work. */
    cudaStream_t tp_comm;
    cudaEvent_t tp_fork, tp_join; /* stream -> tp_comm, tp_comm -> stream */

    fb_lt_plan_cache plans;
};

/* Makes the context's device current for the duration of a call, and puts
 * the caller's device back afterwards. */
class fb_device_scope {
  public:
    explicit fb_device_scope(int device);
    ~fb_device_scope();
    cudaError_t error() const { return error_; }

  private:
    int previous_;
    bool switched_;
    cudaError_t error_;
    fb_device_scope(const fb_device_scope &);
    fb_device_scope &operator=(const fb_device_scope &);
};

/* The module's table entries (module.cu puts them in the table). */
fb_status fb_ctx_create(fb_cuda_ctx **ctx, int device, char *message,
                        size_t len);
void fb_ctx_destroy(fb_cuda_ctx *ctx);
void fb_ctx_set_stream(fb_cuda_ctx *ctx, void *stream);

/* At least bytes in buf, growing it if needed (after waiting for the work
 * that may still use it). */
fb_status fb_ctx_reserve(fb_cuda_ctx *ctx, fb_device_buffer *buf,
                         size_t bytes, fb_cuda_result *r);
/* The same, growing to no more than max(bytes, cap). */
fb_status fb_ctx_reserve_capped(fb_cuda_ctx *ctx, fb_device_buffer *buf,
                                size_t bytes, size_t cap, fb_cuda_result *r);

/* Record `done` on the stream: the call's work is all enqueued. */
fb_status fb_ctx_mark_done(fb_cuda_ctx *ctx, fb_cuda_result *r);

/* The communication stream and its two events, made on first use. */
fb_status fb_ctx_comm_stream(fb_cuda_ctx *ctx, fb_cuda_result *r);

/* Wait until the work enqueued so far by this context has completed. */
cudaError_t fb_ctx_wait(fb_cuda_ctx *ctx);

/* What the fused kernels are told about the device and the handle. */
void fb_ctx_fused_env(const fb_cuda_ctx *ctx, fb_math_mode math,
                      fb_fused_env *env);

/* Round up to a multiple of a (a power of two). */
static inline size_t fb_round_up(size_t x, size_t a)
{
    return (x + a - 1) & ~(a - 1);
}

#endif /* FB_CUDA_CTX_H */
