/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.cu -- the CUDA backend module's one export, fb_cuda_module_v1(),
 * and what its table does: probe, contexts, and the dispatch of a call
 * between the fused kernels and cuBLASLt.
 *
 * Dispatch (the path argument of gemm and mlp):
 *   FB_BACKEND_CUDA_LT     cuBLASLt (lt_gemm.cu, lt_mlp.cu);
 *   FB_BACKEND_CUDA_FUSED  the fused kernels; their "not supported" is
 *                          passed through, nothing having been launched;
 *   FB_BACKEND_CUDA (or AUTO)  the fused kernels if their shape rule
 *                          prefers them and they take the call, else
 *                          cuBLASLt.
 * Host operands are staged first (staging.h), the same for every path.
 */
#include <stdio.h>
#include <string.h>
#include "ctx.h"
#include "fused/fused.h"
#include "fused/fused_fp8.h"
#include "lt/kernels.h"
#include "lt/lt_gemm.h"
#include "lt/lt_mlp.h"
#include "result.h"
#include "staging.h"
#include "tp/tp.h"

/* The lowest compute capability this build has code for; nvcc lists the
 * targets of this compilation (e.g. 800,900) in __CUDA_ARCH_LIST__. */
static int lowest_arch(void)
{
#ifdef __CUDA_ARCH_LIST__
    static const int archs[] = {__CUDA_ARCH_LIST__};
    int lowest = archs[0];
    for (size_t i = 1; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i] < lowest)
            lowest = archs[i];
    return lowest;
#else
    return 0;
#endif
}

static fb_status probe(char *message, size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        fb_message_cuda(message, len, e, "no usable CUDA driver or device: "
                                         "cudaGetDeviceCount");
        (void)cudaGetLastError();
        return FB_STATUS_BACKEND_UNAVAILABLE;
    }
    if (count <= 0) {
        snprintf(message, len, "no CUDA device");
        return FB_STATUS_BACKEND_UNAVAILABLE;
    }
    /* Some device must be new enough for the code in this build (the
     * context checks the chosen device exactly, by loading a kernel). */
    const int need = lowest_arch();
    int best = 0;
    for (int d = 0; d < count; d++) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                   d) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                   d) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (major * 100 + minor * 10 > best)
            best = major * 100 + minor * 10;
    }
    if (best < need) {
        snprintf(message, len,
                 "%d CUDA device(s), the newest sm_%d, but this build needs "
                 "sm_%d or newer", count, best / 10, need / 10);
        return FB_STATUS_BACKEND_UNAVAILABLE;
    }
    if (len > 0)
        message[0] = '\0';
    return FB_STATUS_SUCCESS;
}

static int is_device_pointer(const void *p)
{
    return fb_is_device_pointer(p);
}

static const char *status_name(fb_status s)
{
    switch (s) {
    case FB_STATUS_SUCCESS: return "success";
    case FB_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case FB_STATUS_NOT_SUPPORTED: return "not supported";
    case FB_STATUS_ALLOC_FAILED: return "allocation failed";
    case FB_STATUS_BACKEND_UNAVAILABLE: return "backend unavailable";
    case FB_STATUS_EXECUTION_FAILED: return "execution failed";
    default: return "internal error";
    }
}

/* A fused kernel's outcome: it names its path; we name the failure. */
static fb_status fused_outcome(fb_status st, fb_cuda_result *r)
{
    if (st == FB_STATUS_SUCCESS) {
        r->ran = FB_BACKEND_CUDA_FUSED;
        return st;
    }
    if (r->message[0] == '\0') {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            fb_result_cuda(r, e, st == FB_STATUS_NOT_SUPPORTED
                                     ? "cuda-fused"
                                     : "cuda-fused kernel");
        else if (st == FB_STATUS_NOT_SUPPORTED)
            fb_result_fail(r, st, "cuda-fused does not cover this call "
                                  "(shape, dtype or math mode)");
        else
            fb_result_fail(r, st, "cuda-fused %s: %s",
                           r->path[0] ? r->path : "kernel", status_name(st));
    }
    return st;
}

static int is_gpu_path(fb_backend path)
{
    return path == FB_BACKEND_CUDA || path == FB_BACKEND_AUTO ||
           path == FB_BACKEND_CUDA_LT || path == FB_BACKEND_CUDA_FUSED;
}

static fb_status run_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *q,
                          fb_backend path, fb_math_mode math,
                          fb_cuda_result *r)
{
    if (path == FB_BACKEND_CUDA_LT)
        return fb_lt_gemm(ctx, q, math, r);
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    if (path == FB_BACKEND_CUDA_FUSED && q->m > 0 && q->n > 0 &&
        (q->k == 0 || q->alpha == 0.0f)) {
        /* Nothing to multiply (A and B are not referenced): the whole call
         * is its epilogue, C <- act(beta C + bias), one launch of our own
         * kernel -- the fused path's answer as much as the Lt path's. */
        fb_status st = fb_launch_epilogue(
            env.stream, q->dtype, q->c, q->ldc, q->m, q->n, NULL, 0, q->beta,
            q->beta != 0.0f, q->ep.bias, q->ep.bias_per_row, q->ep.act, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_FUSED,
                          "cuda-fused/epilogue(k=0 or alpha=0)");
        return st;
    }
    if (path == FB_BACKEND_CUDA_FUSED)
        return fused_outcome(fb_fused_gemm(&env, q, r->path, sizeof r->path),
                             r);
    if (fb_fused_prefers_gemm(&env, q)) {
        fb_status st = fb_fused_gemm(&env, q, r->path, sizeof r->path);
        if (st != FB_STATUS_NOT_SUPPORTED)
            return fused_outcome(st, r);
        fb_result_clear(r); /* the shape rule was wrong: cuBLASLt */
    }
    return fb_lt_gemm(ctx, q, math, r);
}

static fb_status run_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *q,
                         fb_backend path, fb_math_mode math,
                         fb_cuda_result *r)
{
    if (path == FB_BACKEND_CUDA_LT)
        return fb_lt_mlp(ctx, q, math, r);
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    const int fused = path == FB_BACKEND_CUDA_FUSED ||
                      fb_fused_prefers_mlp(&env, q);
    if (fused) {
        /* the prefill kernels' H lives in the handle's mlp scratch, which
         * cuda-lt's intermediates use too (one call at a time a handle) */
        const size_t need = fb_fused_mlp_scratch_bytes(&env, q);
        if (need) {
            fb_status st = fb_ctx_reserve(ctx, &ctx->scratch, need, r);
            if (st != FB_STATUS_SUCCESS)
                return st;
            env.scratch = ctx->scratch.ptr;
            env.scratch_bytes = ctx->scratch.bytes;
        }
    }
    if (path == FB_BACKEND_CUDA_FUSED)
        return fused_outcome(fb_fused_mlp(&env, q, r->path, sizeof r->path),
                             r);
    if (fused) {
        fb_status st = fb_fused_mlp(&env, q, r->path, sizeof r->path);
        if (st != FB_STATUS_NOT_SUPPORTED)
            return fused_outcome(st, r);
        fb_result_clear(r);
    }
    return fb_lt_mlp(ctx, q, math, r);
}

/* What every call does after its work is enqueued: copy a staged output
 * back, record `done`, and wait if anything was staged. The first failure
 * is the one reported. */
static fb_status finish(fb_cuda_ctx *ctx, fb_status st, int staged,
                        const fb_staged_output *out, fb_cuda_result *r)
{
    fb_cuda_result later;
    fb_result_clear(&later);
    fb_status after = FB_STATUS_SUCCESS;
    if (staged && st == FB_STATUS_SUCCESS)
        after = fb_stage_copy_out(ctx, out, &later);
    fb_status marked = fb_ctx_mark_done(ctx, &later);
    if (after == FB_STATUS_SUCCESS)
        after = marked;
    if (staged) {
        cudaError_t e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess && after == FB_STATUS_SUCCESS)
            after = fb_result_cuda(&later, e, "cudaStreamSynchronize after "
                                              "staging");
    }
    if (st == FB_STATUS_SUCCESS && after != FB_STATUS_SUCCESS) {
        memcpy(r->message, later.message, sizeof r->message);
        return after;
    }
    return st;
}

static fb_status module_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                             fb_backend path, fb_math_mode math,
                             fb_cuda_result *r)
{
    if (r == NULL)
        return FB_STATUS_INTERNAL;
    fb_result_clear(r);
    if (ctx == NULL || p == NULL)
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "gemm: no CUDA context or problem");
    if (!is_gpu_path(path))
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "gemm: backend %d is not a CUDA path",
                              (int)path);
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");

    fb_gemm_problem q;
    fb_staged_output out;
    int staged = 0;
    fb_status st = fb_stage_gemm(ctx, p, &q, &out, &staged, r);
    if (st == FB_STATUS_SUCCESS)
        st = run_gemm(ctx, &q, path, math, r);
    return finish(ctx, st, staged, &out, r);
}

static fb_status module_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                            fb_backend path, fb_math_mode math,
                            fb_cuda_result *r)
{
    if (r == NULL)
        return FB_STATUS_INTERNAL;
    fb_result_clear(r);
    if (ctx == NULL || p == NULL)
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "mlp: no CUDA context or problem");
    if (!is_gpu_path(path))
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "mlp: backend %d is not a CUDA path", (int)path);
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");

    fb_mlp_problem q;
    fb_staged_output out;
    int staged = 0;
    fb_status st = fb_stage_mlp(ctx, p, &q, &out, &staged, r);
    if (st == FB_STATUS_SUCCESS)
        st = run_mlp(ctx, &q, path, math, r);
    return finish(ctx, st, staged, &out, r);
}

/* e4m3 weights: the fused kernels (fused_fp8.h) on device memory. Host
 * operands are not staged (a weight is staged at every call, which is
 * what the e4m3 format is there to avoid): not supported, say so. */
static fb_status e4m3_start(fb_cuda_ctx *ctx, const void *p, fb_backend path,
                            const void *const *ops, int nops,
                            fb_cuda_result *r)
{
    if (r == NULL)
        return FB_STATUS_INTERNAL;
    fb_result_clear(r);
    if (ctx == NULL || p == NULL || !is_gpu_path(path))
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "e4m3: no CUDA context, problem or path");
    if (path == FB_BACKEND_CUDA_LT)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "cuda-lt has no e4m3 path (cuda and "
                              "cuda-fused have)");
    for (int i = 0; i < nops; i++)
        if (ops[i] != NULL && !fb_is_device_pointer(ops[i]))
            return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                                  "e4m3 weights on the GPU take device "
                                  "memory only (operand %d is host memory)",
                                  i + 1);
    return FB_STATUS_SUCCESS;
}

static fb_status module_gemm_e4m3(fb_cuda_ctx *ctx,
                                  const fb_e4m3_gemm_problem *p,
                                  fb_backend path, fb_cuda_result *r)
{
    const void *ops[] = {p ? p->x : NULL, p ? p->w : NULL,
                         p ? p->scale : NULL, p ? p->c : NULL,
                         p ? p->bias : NULL};
    const int empty = p != NULL && (p->m == 0 || p->n == 0);
    fb_status st = e4m3_start(ctx, p, path, ops, empty ? 0 : 5, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (empty) {
        fb_result_ran(r, FB_BACKEND_CUDA_FUSED, "cuda-fused/quick-return");
        return FB_STATUS_SUCCESS;
    }
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    /* many rows: cuBLASLt's GEMM on widened weight tiles; else (or
     * where it has no algorithm) our kernels; up to 64 rows the decode
     * kernel where it applies */
    st = fb_fp8_decode_applies(p) ? FB_STATUS_NOT_SUPPORTED
                                  : fb_fp8_gemm_prefill(ctx, p, 0, r);
    if (st == FB_STATUS_SUCCESS) {
        snprintf(r->path, sizeof r->path, "cuda-fused/e4m3-lt-prefill/%s",
                 fb_fp8_prefill_widen_name(p));
    } else if (st == FB_STATUS_NOT_SUPPORTED) {
        fb_result_clear(r);
        st = fb_fp8_gemm(ctx->stream, p, r->path, sizeof r->path);
    }
    if (st == FB_STATUS_SUCCESS)
        st = fb_result_launch(r, "e4m3 gemm");
    if (st == FB_STATUS_SUCCESS)
        r->ran = FB_BACKEND_CUDA_FUSED;
    fb_staged_output none;
    memset(&none, 0, sizeof none);
    return finish(ctx, st, 0, &none, r);
}

static fb_status module_mlp_e4m3(fb_cuda_ctx *ctx,
                                 const fb_e4m3_mlp_problem *p,
                                 fb_backend path, fb_cuda_result *r)
{
    const void *ops[] = {p ? p->x : NULL,  p ? p->wg : NULL,
                         p ? p->sg : NULL, p ? p->bg : NULL,
                         p ? p->wu : NULL, p ? p->su : NULL,
                         p ? p->bu : NULL, p ? p->wd : NULL,
                         p ? p->sd : NULL, p ? p->bd : NULL,
                         p ? p->y : NULL};
    const int empty = p != NULL && (p->m == 0 || p->n == 0);
    fb_status st = e4m3_start(ctx, p, path, ops, empty ? 0 : 11, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (empty) {
        fb_result_ran(r, FB_BACKEND_CUDA_FUSED, "cuda-fused/quick-return");
        return FB_STATUS_SUCCESS;
    }
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    const size_t need = fb_fp8_mlp_scratch_bytes(p);
    if (need > 0) {
        st = fb_ctx_reserve(ctx, &ctx->scratch, need, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
    }
    char ran[sizeof r->path];
    st = fb_fp8_mlp(ctx, ctx->stream, p, ctx->scratch.ptr,
                    ctx->scratch.bytes, ran, sizeof ran, r);
    if (st == FB_STATUS_SUCCESS)
        snprintf(r->path, sizeof r->path, "%s", ran);
    if (st == FB_STATUS_SUCCESS)
        st = fb_result_launch(r, "e4m3 mlp");
    if (st == FB_STATUS_SUCCESS)
        r->ran = FB_BACKEND_CUDA_FUSED;
    fb_staged_output none;
    memset(&none, 0, sizeof none);
    return finish(ctx, st, 0, &none, r);
}

static const fb_cuda_module module_table = {
    FB_CUDA_MODULE_ABI,
    probe,
    is_device_pointer,
    fb_ctx_create,
    fb_ctx_destroy,
    fb_ctx_set_stream,
    module_gemm,
    module_mlp,
    module_gemm_e4m3,
    module_mlp_e4m3,
    fb_tp_agree,
    fb_tp_mlp,
    fb_tp_gemm,
};

/* The module's only exported symbol (FB_CUDA_MODULE_SYMBOL); everything
 * else is hidden by -fvisibility=hidden and libtool's export list. */
extern "C" __attribute__((visibility("default"))) const fb_cuda_module *
fb_cuda_module_v1(void)
{
    return &module_table;
}
