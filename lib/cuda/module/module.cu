/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.cu -- the CUDA backend module's one export, fb_cuda_module_v1(),
 * and what its table does: probe, contexts, plans, and the walk of the
 * implementation tables.
 *
 * Each operation's table is its fused families (fused/shape_rule.cu), in
 * order, then cuda-lt (lt_gemm.cu, lt_mlp.cu). The path argument of gemm
 * and mlp:
 *   FB_BACKEND_CUDA_LT     cuda-lt;
 *   FB_BACKEND_CUDA_FUSED  the first fused family that covers the call;
 *                          none: "not supported", nothing launched;
 *   FB_BACKEND_CUDA (or AUTO)  mlp: the first fused family that covers
 *                          the call if the shape rule prefers it there,
 *                          else cuda-lt (only the first covering family
 *                          is asked); gemm: the first covering family
 *                          whose row prefers it, else cuda-lt.
 * A forced name keeps to that one entry, whatever the rule says.
 * Host operands are staged first (staging.h), the same for every path.
 */
#include <stdio.h>
#include <stdlib.h>
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

static const char kLt[] = "cuda-lt";
static const char kEpilogue[] = "cuda-fused/epilogue(k=0 or alpha=0)";

/* Whether the walk may take entry name: one of the path's side, and the
 * forced one if a name is forced. */
static bool may_take(const char *name, bool fused, fb_backend path,
                     const char *forced)
{
    const bool side = fused ? path != FB_BACKEND_CUDA_LT
                            : path != FB_BACKEND_CUDA_FUSED;
    return side && (forced == NULL || strcmp(forced, name) == 0);
}

/* The fused family the walk gives a call to, or NULL for cuda-lt (-1 in
 * *none when no entry may take it at all). */
static const fb_fused_gemm_impl *gemm_choice(const fb_fused_env *env,
                                             const fb_gemm_problem *q,
                                             fb_backend path,
                                             const char *forced, int *none)
{
    *none = 0;
    /* Unlike the MLP's, each gemm family's row decides for itself: a
     * family that covers a call without preferring it (the tiny gemm
     * never does; the decode gemm beyond its tokens) leaves it to the
     * next, since the engine's rows were measured over those shapes too
     * (docs/gemm-engine.md). */
    for (const fb_fused_gemm_impl *e = fb_fused_gemm_impls; e->name; ++e) {
        if (!may_take(e->name, true, path, forced) || !e->applies(env, q))
            continue;
        if (forced != NULL || path == FB_BACKEND_CUDA_FUSED ||
            e->preferred(env, q))
            return e;
    }
    *none = !may_take(kLt, false, path, forced);
    return NULL;
}

static const fb_fused_mlp_impl *mlp_choice(const fb_fused_env *env,
                                           const fb_mlp_problem *q,
                                           fb_backend path,
                                           const char *forced, int *none)
{
    *none = 0;
    for (const fb_fused_mlp_impl *e = fb_fused_mlp_impls; e->name; ++e) {
        if (!may_take(e->name, true, path, forced) || !e->applies(env, q))
            continue;
        if (forced != NULL || path == FB_BACKEND_CUDA_FUSED ||
            e->preferred(env, q))
            return e;
        break;
    }
    *none = !may_take(kLt, false, path, forced);
    return NULL;
}

static fb_status not_taken(fb_cuda_result *r, const char *forced)
{
    if (forced != NULL)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "%s does not apply to this call", forced);
    return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                          "cuda-fused does not cover this call (shape, "
                          "dtype or math mode)");
}

/* The family's scratch (H, operands it packs), in the handle's mlp
 * scratch: one call at a time a handle. */
static fb_status reserve_scratch(fb_cuda_ctx *ctx, fb_fused_env *env,
                                 size_t need, fb_cuda_result *r)
{
    if (need == 0)
        return FB_STATUS_SUCCESS;
    fb_status st = fb_ctx_reserve(ctx, &ctx->scratch, need, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    env->scratch = ctx->scratch.ptr;
    env->scratch_bytes = ctx->scratch.bytes;
    return FB_STATUS_SUCCESS;
}

/* The fused family's run; a family that finds at launch that it does not
 * take the call after all (nothing launched) leaves it to cuda-lt where
 * the walk could have chosen cuda-lt. */
static fb_status run_gemm_on(fb_cuda_ctx *ctx, fb_fused_env *env,
                             const fb_fused_gemm_impl *e,
                             const fb_gemm_problem *q, fb_math_mode math,
                             bool lt_after, fb_cuda_result *r)
{
    if (e != NULL) {
        fb_status st = reserve_scratch(ctx, env, e->scratch(q), r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        st = e->run(env, q, r->path, sizeof r->path);
        if (st != FB_STATUS_NOT_SUPPORTED || !lt_after)
            return fused_outcome(st, r);
        fb_result_clear(r);
    }
    return fb_lt_gemm(ctx, q, math, r);
}

/* Nothing to multiply (A and B are not referenced) on the fused path:
 * the whole call is its epilogue, C <- act(beta C + bias), one launch of
 * our own kernel -- the fused path's answer as much as the Lt path's. */
static bool epilogue_only(const fb_gemm_problem *q, fb_backend path,
                          const char *forced)
{
    return path == FB_BACKEND_CUDA_FUSED && forced == NULL && !q->multiply;
}

static fb_status run_epilogue(const fb_fused_env *env,
                              const fb_gemm_problem *q, fb_cuda_result *r)
{
    fb_status st = fb_launch_epilogue(
        env->stream, q->dtype, q->c, q->ldc, q->m, q->n, NULL, 0, q->beta,
        q->beta != 0.0f, q->ep.bias, q->ep.bias_per_row, q->ep.act, r);
    if (st == FB_STATUS_SUCCESS)
        fb_result_ran(r, FB_BACKEND_CUDA_FUSED, kEpilogue);
    return st;
}

static fb_status run_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *q,
                          fb_backend path, fb_math_mode math,
                          const char *forced, fb_cuda_result *r)
{
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    const bool fused_side = path == FB_BACKEND_CUDA_FUSED ||
                            (forced != NULL && strcmp(forced, kLt) != 0);
    if (q->m == 0 || q->n == 0) {
        if (!fused_side)
            return fb_lt_gemm(ctx, q, math, r);
        fb_result_ran(r, FB_BACKEND_CUDA_FUSED, "cuda-fused/empty");
        return FB_STATUS_SUCCESS;
    }
    if (epilogue_only(q, path, forced))
        return run_epilogue(&env, q, r);
    int none;
    const fb_fused_gemm_impl *e = gemm_choice(&env, q, path, forced, &none);
    if (e == NULL && none)
        return not_taken(r, forced);
    return run_gemm_on(ctx, &env, e, q, math, !fused_side, r);
}

static fb_status run_mlp_on(fb_cuda_ctx *ctx, fb_fused_env *env,
                            const fb_fused_mlp_impl *e,
                            const fb_mlp_problem *q, fb_math_mode math,
                            bool lt_after, fb_cuda_result *r)
{
    if (e != NULL) {
        /* H of the two-launch families lives in the handle's mlp scratch,
         * which cuda-lt's intermediates use too */
        fb_status st = reserve_scratch(ctx, env, e->scratch(q), r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        st = e->run(env, q, r->path, sizeof r->path);
        if (st != FB_STATUS_NOT_SUPPORTED || !lt_after)
            return fused_outcome(st, r);
        fb_result_clear(r);
    }
    return fb_lt_mlp(ctx, q, math, r);
}

static fb_status run_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *q,
                         fb_backend path, fb_math_mode math,
                         const char *forced, fb_cuda_result *r)
{
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    const bool fused_side = path == FB_BACKEND_CUDA_FUSED ||
                            (forced != NULL && strcmp(forced, kLt) != 0);
    if (q->m == 0 || q->n == 0) {
        if (!fused_side)
            return fb_lt_mlp(ctx, q, math, r);
        fb_result_ran(r, FB_BACKEND_CUDA_FUSED, "cuda-fused/empty");
        return FB_STATUS_SUCCESS;
    }
    int none;
    const fb_fused_mlp_impl *e = mlp_choice(&env, q, path, forced, &none);
    if (e == NULL && none)
        return not_taken(r, forced);
    return run_mlp_on(ctx, &env, e, q, math, !fused_side, r);
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
                             const char *forced, fb_cuda_result *r)
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
        st = run_gemm(ctx, &q, path, math, forced, r);
    return finish(ctx, st, staged, &out, r);
}

static fb_status module_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                            fb_backend path, fb_math_mode math,
                            const char *forced, fb_cuda_result *r)
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
        st = run_mlp(ctx, &q, path, math, forced, r);
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
    /* the e4m3 wgmma kernel where it covers the call; else up to
     * FB_FP8_MID_MAX_ROWS rows the decode or mid kernel where it applies;
     * else the GEMM engine or cuBLASLt's GEMM on widened weight tiles;
     * else (or where cuBLASLt has no algorithm) the tiled kernel */
    char ran[sizeof r->path] = "";
    st = fb_fp8_gemm_wgmma(ctx, p, FB_FP8_WGMMA_GEMM_MAX_ROWS, ran,
                           sizeof ran);
    if (st == FB_STATUS_NOT_SUPPORTED && !fb_fp8_direct_applies(p))
        st = fb_fp8_gemm_prefill(ctx, p, 0, ran, sizeof ran, r);
    if (st == FB_STATUS_SUCCESS) {
        snprintf(r->path, sizeof r->path, "%s", ran);
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
    const size_t need = fb_fp8_mlp_scratch_bytes(ctx, p);
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

/* ---- plans -------------------------------------------------------------- */

struct fb_cuda_plan {
    bool is_gemm;
    fb_backend path;
    fb_math_mode math;
    bool forced;
    /* the choice per m: an index into the fused table, -1 for cuda-lt,
     * -2 for none (the forced name takes no m there), -3 for the
     * epilogue alone (a fused gemm with nothing to multiply) */
    fb_plan_segments segs;
    /* the weights' tensor maps, encoded at the first execution that
     * needs each and kept */
    fbf_map_cache *maps;
    /* a gemm's weights packed K-major once for the GEMM engine (NULL: it
     * reads them where they lie, or never runs), on device */
    void *packed;
    int device;
};

namespace {

/* The problem with m tokens (a gemm's tokens are the caller's m). */
fb_gemm_problem gemm_at(const fb_gemm_problem *g, int64_t m)
{
    fb_gemm_problem p = *g;
    if (p.weight_is_a) {
        p.n = m;
        p.ldb = p.transb ? m : p.k;
        p.ldc = p.m;
    } else {
        p.m = m;
        p.lda = p.transa ? p.k : m;
        p.ldc = m;
    }
    if (p.lda < 1) p.lda = 1;
    if (p.ldb < 1) p.ldb = 1;
    if (p.ldc < 1) p.ldc = 1;
    return p;
}

struct choose_ctx {
    const fb_fused_env *env;
    const fb_gemm_problem *g;
    const fb_mlp_problem *q;
    fb_backend path;
    const char *forced;
};

int choose_at(void *vctx, int64_t m)
{
    const choose_ctx *c = static_cast<const choose_ctx *>(vctx);
    int none;
    if (c->g != NULL) {
        const fb_gemm_problem p = gemm_at(c->g, m);
        if (epilogue_only(&p, c->path, c->forced))
            return -3;
        const fb_fused_gemm_impl *e =
            gemm_choice(c->env, &p, c->path, c->forced, &none);
        return e != NULL ? (int)(e - fb_fused_gemm_impls) : none ? -2 : -1;
    }
    fb_mlp_problem p = *c->q;
    p.m = m;
    const fb_fused_mlp_impl *e =
        mlp_choice(c->env, &p, c->path, c->forced, &none);
    return e != NULL ? (int)(e - fb_fused_mlp_impls) : none ? -2 : -1;
}

} /* namespace */

static const char kEngineGemm[] = "cuda-fused/gemm_sm90";

static bool plan_runs_engine(const fb_cuda_plan *pl, int ch)
{
    return pl->is_gemm && ch >= 0 &&
           strcmp(fb_fused_gemm_impls[ch].name, kEngineGemm) == 0;
}

/* Where some m of a gemm plan runs on the GEMM engine and the engine
 * would pack the weights at every call, pack them once now, into memory
 * the plan owns (the plan's contract: its weights do not change). Not
 * while the stream is being captured: the copy would then be a node of
 * the caller's graph, written only when it replays, and executions would
 * pack at each call as plain calls do. */
static fb_status plan_pack_weights(fb_cuda_ctx *ctx, fb_cuda_plan *pl,
                                   const fb_gemm_problem *g,
                                   fb_cuda_result *r)
{
    bool engine = false;
    for (int i = 0; i < pl->segs.n; i++)
        engine = engine || plan_runs_engine(pl, pl->segs.choice[i]);
    const size_t bytes = engine ? fb_fused_gemm_weights_packed_bytes(g) : 0;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    if (bytes == 0 || cudaStreamIsCapturing(ctx->stream, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone)
        return FB_STATUS_SUCCESS;
    cudaError_t e = cudaMalloc(&pl->packed, bytes);
    if (e != cudaSuccess) {
        pl->packed = NULL;
        (void)cudaGetLastError();
        return fb_result_cuda(r, e, "cudaMalloc(the plan's packed weights)");
    }
    fb_gemm_problem q = *g;
    const fb_status st =
        fb_fused_gemm_use_packed_weights(ctx->stream, &q, pl->packed, true);
    if (st != FB_STATUS_SUCCESS)
        return fb_result_cuda(r, cudaGetLastError(), "packing the weights");
    return FB_STATUS_SUCCESS;
}

static void plan_free(fb_cuda_plan *pl)
{
    fbf_map_cache_destroy(pl->maps);
    if (pl->packed != NULL) {
        fb_device_scope scope(pl->device);
        (void)cudaFree(pl->packed);
    }
    free(pl);
}

static fb_status plan_create(fb_cuda_ctx *ctx, const fb_gemm_problem *g,
                             const fb_mlp_problem *q, fb_backend path,
                             fb_math_mode math, const char *forced,
                             fb_cuda_plan **plan, fb_cuda_result *r)
{
    if (r == NULL)
        return FB_STATUS_INTERNAL;
    fb_result_clear(r);
    if (ctx == NULL || plan == NULL || (g == NULL) == (q == NULL) ||
        !is_gpu_path(path))
        return fb_result_fail(r, FB_STATUS_INTERNAL, "plan: bad request");
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    fb_cuda_plan *pl = static_cast<fb_cuda_plan *>(calloc(1, sizeof *pl));
    if (pl == NULL)
        return fb_result_fail(r, FB_STATUS_ALLOC_FAILED, "plan: no memory");
    pl->is_gemm = g != NULL;
    pl->device = ctx->device;
    pl->path = path;
    pl->math = math;
    pl->forced = forced != NULL;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    const choose_ctx c = {&env, g, q, path, forced};
    const int64_t max_m = g != NULL ? fb_gemm_tokens(g) : q->m;
    fb_plan_segments_build(&pl->segs, max_m, choose_at,
                           const_cast<choose_ctx *>(&c));
    bool any = false;
    for (int i = 0; i < pl->segs.n; i++)
        any = any || pl->segs.choice[i] != -2;
    if (!any) {
        free(pl);
        return not_taken(r, forced);
    }
    fb_status st = FB_STATUS_SUCCESS;
    if (g != NULL)
        st = plan_pack_weights(ctx, pl, g, r);

    /* The device buffers every m up to max_m needs, reserved now: H for
     * the two-launch families, the operands the GEMM engine packs at each
     * execution (the activations, where their layout asks for it),
     * cuda-lt's intermediates (at most two h-wide, 16-byte-aligned columns
     * per row, of the input type), and the fp32 accumulator of a 16-bit
     * gemm on cuda-lt. */
    size_t scratch = 0, accum = 0;
    const int64_t es = q != NULL ? fb_dtype_size(q->dtype) : 0;
    for (int i = 0; i < pl->segs.n; i++) {
        const int ch = pl->segs.choice[i];
        if (q != NULL) {
            fb_mlp_problem p = *q;
            p.m = pl->segs.hi[i];
            if (ch >= 0) {
                const size_t s = fb_fused_mlp_impls[ch].scratch(&p);
                scratch = s > scratch ? s : scratch;
            }
            const int64_t vec = 16 / es;
            const size_t lt = 2 * fb_round_up(
                (size_t)((2 * p.h + vec - 1) / vec * vec * p.m * es), 256);
            scratch = lt > scratch ? lt : scratch;
        } else if (g->dtype != FB_DTYPE_F32) {
            fb_gemm_problem p = gemm_at(g, pl->segs.hi[i]);
            if (pl->packed != NULL && plan_runs_engine(pl, ch))
                (void)fb_fused_gemm_use_packed_weights(ctx->stream, &p,
                                                       pl->packed, false);
            if (ch >= 0) {
                const size_t s = fb_fused_gemm_impls[ch].scratch(&p);
                scratch = s > scratch ? s : scratch;
            }
            const size_t col = (size_t)((p.m + 7) / 8 * 8) * sizeof(float);
            size_t a = col * (size_t)p.n;
            a = a < FB_CTX_ACCUM_BYTES ? a : FB_CTX_ACCUM_BYTES;
            accum = a > accum ? a : accum;
        }
    }
    if (st == FB_STATUS_SUCCESS && scratch > 0)
        st = fb_ctx_reserve(ctx, &ctx->scratch, scratch, r);
    if (st == FB_STATUS_SUCCESS && accum > 0)
        st = fb_ctx_reserve_capped(ctx, &ctx->accum, accum,
                                   FB_CTX_ACCUM_BYTES, r);
    const void *weights[3] = {NULL, NULL, NULL};
    if (pl->packed != NULL)
        weights[0] = pl->packed;
    else if (g != NULL)
        weights[0] = g->weight_is_a ? g->a : g->b;
    else
        weights[0] = q->wg, weights[1] = q->wu, weights[2] = q->wd;
    if (st == FB_STATUS_SUCCESS &&
        (pl->maps = fbf_map_cache_create(weights, 3)) == NULL)
        st = fb_result_fail(r, FB_STATUS_ALLOC_FAILED, "plan: no memory");
    /* Executions may read the weights before the work ahead of them on
     * the stream has finished (fb_fused_env.weights_fixed): work still
     * writing them must be done now. Not while the stream is captured,
     * where waiting is not allowed. */
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    if (st == FB_STATUS_SUCCESS &&
        cudaStreamIsCapturing(ctx->stream, &cs) == cudaSuccess &&
        cs == cudaStreamCaptureStatusNone) {
        const cudaError_t e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess)
            st = fb_result_cuda(r, e, "cudaStreamSynchronize");
    }
    if (st != FB_STATUS_SUCCESS) {
        plan_free(pl);
        return st;
    }
    *plan = pl;
    return FB_STATUS_SUCCESS;
}

static fb_status plan_run_begin(fb_cuda_ctx *ctx, const fb_cuda_plan *plan,
                                fb_cuda_result *r)
{
    if (r == NULL)
        return FB_STATUS_INTERNAL;
    fb_result_clear(r);
    if (ctx == NULL || plan == NULL)
        return fb_result_fail(r, FB_STATUS_INTERNAL, "plan: bad request");
    return FB_STATUS_SUCCESS;
}

/* The plan's choice was made for tight leading dimensions and aligned
 * activations; a family that finds at launch that this execution's X or
 * Y keep it from running (nothing launched) leaves the execution to the
 * walk the plain call makes, so that both run the same implementation. */
static fb_status plan_gemm(fb_cuda_ctx *ctx, const fb_cuda_plan *plan,
                           const fb_gemm_problem *p, fb_cuda_result *r)
{
    fb_status st = plan_run_begin(ctx, plan, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    const int ch = fb_plan_segments_find(&plan->segs, fb_gemm_tokens(p));
    if (ch == -2)
        return not_taken(r, "the plan's implementation");
    fb_fused_env env;
    fb_ctx_fused_env(ctx, plan->math, &env);
    env.weights_fixed = 1;
    fbf_map_cache_scope maps(plan->maps);
    const bool rewalk = ch >= 0 && !plan->forced;
    fb_gemm_problem q = *p;
    const bool packed = plan->packed != NULL && plan_runs_engine(plan, ch);
    if (packed)
        (void)fb_fused_gemm_use_packed_weights(ctx->stream, &q, plan->packed,
                                               false);
    if (ch == -3)
        st = run_epilogue(&env, p, r);
    else
        st = run_gemm_on(ctx, &env,
                         ch >= 0 ? &fb_fused_gemm_impls[ch] : NULL, &q,
                         plan->math, false, r);
    /* the plain call packs the weights itself and says so; the plan packed
     * them once, the same operands and bits */
    if (packed && st == FB_STATUS_SUCCESS)
        fb_fused_path_mark_packed(r->path, sizeof r->path);
    if (rewalk && st == FB_STATUS_NOT_SUPPORTED) {
        fb_result_clear(r);
        st = run_gemm(ctx, p, plan->path, plan->math, NULL, r);
    }
    return finish(ctx, st, 0, NULL, r);
}

static fb_status plan_mlp(fb_cuda_ctx *ctx, const fb_cuda_plan *plan,
                          const fb_mlp_problem *p, fb_cuda_result *r)
{
    fb_status st = plan_run_begin(ctx, plan, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    const int ch = fb_plan_segments_find(&plan->segs, p->m);
    if (ch == -2)
        return not_taken(r, "the plan's implementation");
    fb_fused_env env;
    fb_ctx_fused_env(ctx, plan->math, &env);
    env.weights_fixed = 1;
    fbf_map_cache_scope maps(plan->maps);
    const bool rewalk = ch >= 0 && !plan->forced;
    st = run_mlp_on(ctx, &env, ch >= 0 ? &fb_fused_mlp_impls[ch] : NULL, p,
                    plan->math, false, r);
    if (rewalk && st == FB_STATUS_NOT_SUPPORTED) {
        fb_result_clear(r);
        st = run_mlp(ctx, p, plan->path, plan->math, NULL, r);
    }
    return finish(ctx, st, 0, NULL, r);
}

static const char *plan_impl(const fb_cuda_plan *plan, int64_t m)
{
    const int ch = fb_plan_segments_find(&plan->segs, m);
    if (ch == -2)
        return "";
    if (ch == -1)
        return kLt;
    if (ch == -3)
        return kEpilogue;
    return plan->is_gemm ? fb_fused_gemm_impls[ch].name
                         : fb_fused_mlp_impls[ch].name;
}

static void plan_destroy(fb_cuda_plan *plan)
{
    if (plan != NULL)
        plan_free(plan);
}

static const fb_cuda_module module_table = {
    FB_CUDA_MODULE_ABI,
    probe,
    fb_ctx_create,
    fb_ctx_destroy,
    fb_ctx_set_stream,
    module_gemm,
    module_mlp,
    plan_create,
    plan_gemm,
    plan_mlp,
    plan_impl,
    plan_destroy,
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
