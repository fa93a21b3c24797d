/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctx.cu -- per-handle CUDA state: device, stream, cuBLASLt handle,
 * workspace, growable scratch, plan cache.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctx.h"
#include "lt/kernels.h"
#include "result.h"

fb_device_scope::fb_device_scope(int device)
    : previous_(-1), switched_(false), error_(cudaSuccess)
{
    error_ = cudaGetDevice(&previous_);
    if (error_ == cudaSuccess && previous_ != device) {
        error_ = cudaSetDevice(device);
        switched_ = error_ == cudaSuccess;
    }
}

fb_device_scope::~fb_device_scope()
{
    if (switched_)
        (void)cudaSetDevice(previous_);
}

/* Free what a (possibly half-made) context holds. Errors are ignored: this
 * also runs at process exit, after the CUDA runtime may have shut down. */
static void release(fb_cuda_ctx *ctx)
{
    if (ctx->done_recorded && !ctx->done_in_capture)
        (void)cudaEventSynchronize(ctx->done);
    if (ctx->lt != NULL)
        (void)cublasLtDestroy(ctx->lt);
    if (ctx->workspace != NULL)
        (void)cudaFree(ctx->workspace);
    if (ctx->fused_workspace != NULL)
        (void)cudaFree(ctx->fused_workspace);
    if (ctx->scratch.ptr != NULL)
        (void)cudaFree(ctx->scratch.ptr);
    if (ctx->staging.ptr != NULL)
        (void)cudaFree(ctx->staging.ptr);
    if (ctx->accum.ptr != NULL)
        (void)cudaFree(ctx->accum.ptr);
    if (ctx->tp_partial.ptr != NULL)
        (void)cudaFree(ctx->tp_partial.ptr);
    if (ctx->tp_comm != NULL)
        (void)cudaStreamDestroy(ctx->tp_comm);
    if (ctx->tp_fork != NULL)
        (void)cudaEventDestroy(ctx->tp_fork);
    if (ctx->tp_join != NULL)
        (void)cudaEventDestroy(ctx->tp_join);
    if (ctx->done != NULL)
        (void)cudaEventDestroy(ctx->done);
    (void)cudaGetLastError();
}

static int device_attribute(cudaDeviceAttr attr, int device, int *value,
                            char *message, size_t len)
{
    cudaError_t e = cudaDeviceGetAttribute(value, attr, device);
    if (e != cudaSuccess) {
        fb_message_cuda(message, len, e, "cudaDeviceGetAttribute");
        return 0;
    }
    return 1;
}

fb_status fb_ctx_create(fb_cuda_ctx **out, int device, char *message,
                        size_t len)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return fb_message_cuda(message, len, e, "cudaGetDeviceCount");
    if (device < 0 || device >= count) {
        snprintf(message, len, "CUDA device %d does not exist (%d found)",
                 device, count);
        return FB_STATUS_BACKEND_UNAVAILABLE;
    }

    fb_device_scope scope(device);
    if (scope.error() != cudaSuccess)
        return fb_message_cuda(message, len, scope.error(), "cudaSetDevice");

    fb_cuda_ctx *ctx = (fb_cuda_ctx *)calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        snprintf(message, len, "out of host memory for the CUDA context");
        return FB_STATUS_ALLOC_FAILED;
    }
    ctx->device = device;
    ctx->stream = NULL;
    if (fb_lt_plan_cache_init(&ctx->plans) != 0) {
        free(ctx);
        snprintf(message, len, "cannot initialise the plan cache's lock");
        return FB_STATUS_INTERNAL;
    }

    fb_status st = FB_STATUS_SUCCESS;
    int smem = 0;
    if (!device_attribute(cudaDevAttrMultiProcessorCount, device,
                          &ctx->sm_count, message, len) ||
        !device_attribute(cudaDevAttrComputeCapabilityMajor, device,
                          &ctx->cc_major, message, len) ||
        !device_attribute(cudaDevAttrComputeCapabilityMinor, device,
                          &ctx->cc_minor, message, len) ||
        !device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device,
                          &smem, message, len)) {
        st = FB_STATUS_BACKEND_UNAVAILABLE;
        goto fail;
    }
    ctx->smem_optin = (size_t)smem;
    /* the DRAM's peak, from its clock (kHz, two transfers a cycle) and
     * bus width; a device that does not say leaves 0 (the kernels' default
     * choices) */
    {
        int khz = 0, bits = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate,
                                   device) == cudaSuccess &&
            cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth,
                                   device) == cudaSuccess)
            ctx->dram_gbs = 2.0 * khz * 1e3 * (bits / 8) / 1e9;
        (void)cudaGetLastError();
    }

    /* The first use of a kernel tells whether this build has code the
     * device can run (sm_XY or PTX it can JIT). */
    e = fb_kernels_check_image();
    if (e != cudaSuccess) {
        char what[128];
        snprintf(what, sizeof what,
                 "no kernel image in this build for device %d (sm_%d%d)",
                 device, ctx->cc_major, ctx->cc_minor);
        st = fb_message_cuda(message, len, e, what);
        if (st == FB_STATUS_EXECUTION_FAILED)
            st = FB_STATUS_BACKEND_UNAVAILABLE;
        goto fail;
    }

    e = cudaEventCreateWithFlags(&ctx->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        ctx->done = NULL;
        st = fb_message_cuda(message, len, e, "cudaEventCreateWithFlags");
        goto fail;
    }

    {
        cublasStatus_t s = cublasLtCreate(&ctx->lt);
        if (s != CUBLAS_STATUS_SUCCESS) {
            ctx->lt = NULL;
            snprintf(message, len, "cublasLtCreate: %s (%s)",
                     cublasLtGetStatusName(s), cublasLtGetStatusString(s));
            st = fb_status_of_cublas(s);
            goto fail;
        }
    }

    ctx->workspace_bytes = FB_CTX_WORKSPACE_BYTES;
    e = cudaMalloc(&ctx->workspace, ctx->workspace_bytes);
    if (e != cudaSuccess) {
        ctx->workspace = NULL;
        st = fb_message_cuda(message, len, e, "cudaMalloc(workspace)");
        goto fail;
    }
    ctx->fused_workspace_bytes = FB_FUSED_WORKSPACE_BYTES;
    e = cudaMalloc(&ctx->fused_workspace, ctx->fused_workspace_bytes);
    if (e != cudaSuccess) {
        ctx->fused_workspace = NULL;
        st = fb_message_cuda(message, len, e, "cudaMalloc(fused workspace)");
        goto fail;
    }
    e = cudaMemsetAsync(static_cast<char *>(ctx->fused_workspace) +
                            ctx->fused_workspace_bytes - FB_FUSED_BARRIER_BYTES,
                        0, FB_FUSED_BARRIER_BYTES, ctx->stream);
    if (e != cudaSuccess) {
        st = fb_message_cuda(message, len, e,
                             "cudaMemsetAsync(fused barrier region)");
        goto fail;
    }
    /* As after a call: a stream the user sets later waits for this. */
    e = cudaEventRecord(ctx->done, ctx->stream);
    if (e != cudaSuccess) {
        st = fb_message_cuda(message, len, e, "cudaEventRecord");
        goto fail;
    }
    ctx->done_recorded = 1;

    *out = ctx;
    return FB_STATUS_SUCCESS;

fail:
    release(ctx);
    fb_lt_plan_cache_fini(&ctx->plans);
    free(ctx);
    if (st == FB_STATUS_SUCCESS)
        st = FB_STATUS_INTERNAL;
    return st;
}

void fb_ctx_destroy(fb_cuda_ctx *ctx)
{
    if (ctx == NULL)
        return;
    {
        fb_device_scope scope(ctx->device);
        release(ctx);
    }
    fb_lt_plan_cache_fini(&ctx->plans);
    free(ctx);
}

/* Whether s is being captured into a graph. The legacy default stream
 * never is (and may not even be asked while another stream captures). */
static bool capturing(cudaStream_t s)
{
    if (s == NULL)
        return false;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return status == cudaStreamCaptureStatusActive;
}

void fb_ctx_set_stream(fb_cuda_ctx *ctx, void *stream)
{
    if (ctx == NULL)
        return;
    cudaStream_t s = (cudaStream_t)stream;
    if (s == ctx->stream)
        return;
    fb_device_scope scope(ctx->device);
    /* The new stream starts after this context's last work on the old one,
     * so the two never share the workspace at once. The old stream itself
     * is not touched: the user may have destroyed it already. */
    if (ctx->done_recorded && ctx->done_in_capture) {
        /* The last call went into a graph being captured: a stream of
         * that capture joins it through the event; no other stream can
         * wait for a captured record (the graph orders its own work). */
        if (scope.error() == cudaSuccess && capturing(s) &&
            cudaStreamWaitEvent(s, ctx->done, 0) != cudaSuccess)
            (void)cudaGetLastError();
    } else if (ctx->done_recorded && scope.error() == cudaSuccess &&
               capturing(s)) {
        /* A stream being captured may not wait on work from outside its
         * capture (that would invalidate it): wait on the host instead,
         * in this thread's relaxed capture mode, in which a host wait
         * during another stream's global-mode capture is allowed. */
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
        (void)cudaEventSynchronize(ctx->done);
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
        (void)cudaGetLastError();
    } else if (ctx->done_recorded &&
               (scope.error() != cudaSuccess ||
                cudaStreamWaitEvent(s, ctx->done, 0) != cudaSuccess)) {
        /* The host-side wait gives the same guarantee. */
        (void)cudaEventSynchronize(ctx->done);
        (void)cudaGetLastError();
    }
    ctx->stream = s;
}

cudaError_t fb_ctx_wait(fb_cuda_ctx *ctx)
{
    if (!ctx->done_recorded || ctx->done_in_capture)
        return cudaSuccess;
    return cudaEventSynchronize(ctx->done);
}

fb_status fb_ctx_mark_done(fb_cuda_ctx *ctx, fb_cuda_result *r)
{
    cudaError_t e = cudaEventRecord(ctx->done, ctx->stream);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "cudaEventRecord");
    ctx->done_recorded = 1;
    ctx->done_in_capture = capturing(ctx->stream);
    return FB_STATUS_SUCCESS;
}

fb_status fb_ctx_comm_stream(fb_cuda_ctx *ctx, fb_cuda_result *r)
{
    cudaError_t e = cudaSuccess;
    /* Non-blocking: the legacy default stream must not order it (the
     * handle's stream may be that one); the events alone order it. */
    if (ctx->tp_comm == NULL)
        e = cudaStreamCreateWithFlags(&ctx->tp_comm, cudaStreamNonBlocking);
    if (e == cudaSuccess && ctx->tp_fork == NULL)
        e = cudaEventCreateWithFlags(&ctx->tp_fork, cudaEventDisableTiming);
    if (e == cudaSuccess && ctx->tp_join == NULL)
        e = cudaEventCreateWithFlags(&ctx->tp_join, cudaEventDisableTiming);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "creating the communication stream");
    return FB_STATUS_SUCCESS;
}

fb_status fb_ctx_reserve(fb_cuda_ctx *ctx, fb_device_buffer *buf,
                         size_t bytes, fb_cuda_result *r)
{
    return fb_ctx_reserve_capped(ctx, buf, bytes, SIZE_MAX, r);
}

fb_status fb_ctx_reserve_capped(fb_cuda_ctx *ctx, fb_device_buffer *buf,
                                size_t bytes, size_t cap, fb_cuda_result *r)
{
    if (bytes <= buf->bytes)
        return FB_STATUS_SUCCESS;
    /* Growth is rare (a new largest shape), so it may wait: the old
     * buffer can be freed only when no enqueued work still reads it. It
     * grows by half again, so that a sequence of growing shapes does not
     * reallocate every time, in 2 MiB steps, but not beyond cap. */
    size_t want = bytes + bytes / 2;
    want = fb_round_up(want, (size_t)2 << 20);
    if (want > cap)
        want = cap > bytes ? cap : bytes;
    cudaError_t e = fb_ctx_wait(ctx);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "waiting for earlier work before "
                                    "growing a device buffer");
    if (buf->ptr != NULL) {
        e = cudaFree(buf->ptr);
        buf->ptr = NULL;
        buf->bytes = 0;
        if (e != cudaSuccess)
            return fb_result_cuda(r, e, "cudaFree");
    }
    e = cudaMalloc(&buf->ptr, want);
    if (e != cudaSuccess) {
        buf->ptr = NULL;
        /* Retry with exactly what is needed before giving up. */
        (void)cudaGetLastError();
        e = cudaMalloc(&buf->ptr, bytes);
        want = bytes;
    }
    if (e != cudaSuccess) {
        buf->ptr = NULL;
        (void)cudaGetLastError();
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", bytes);
        return fb_result_cuda(r, e, what);
    }
    /* Zeroed once when it grows. Its contents are always written before
     * they are read (by cuBLASLt or our kernels), but compute-sanitizer's
     * initcheck reported reads of a fresh accumulator after cuBLASLt had
     * written it (test_threads, 384 reports, results bit-identical to
     * serial calls and to the oracle): it does not seem to see some of
     * cuBLASLt's stores. A write that were really missing would read these
     * zeros and fail the oracle checks, so nothing is hidden. */
    e = cudaMemsetAsync(buf->ptr, 0, want, ctx->stream);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "cudaMemsetAsync(new device buffer)");
    buf->bytes = want;
    return FB_STATUS_SUCCESS;
}

void fb_ctx_fused_env(const fb_cuda_ctx *ctx, fb_math_mode math,
                      fb_fused_env *env)
{
    env->stream = ctx->stream;
    env->device = ctx->device;
    env->sm_count = ctx->sm_count;
    env->cc_major = ctx->cc_major;
    env->cc_minor = ctx->cc_minor;
    env->smem_optin = ctx->smem_optin;
    env->dram_gbs = ctx->dram_gbs;
    env->math = math;
    env->workspace = ctx->fused_workspace;
    env->workspace_bytes = ctx->fused_workspace_bytes;
    env->scratch = NULL; /* run_mlp reserves it where a kernel asks */
    env->scratch_bytes = 0;
    env->weights_fixed = 0; /* plan executions set it */
}
