/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_prefill.cu -- e4m3 weights for many rows (prefill) on a
 * 16-bit tensor-core GEMM, the contract kept: per tile of channels, the
 * tile's e4m3 weights are widened to the activations' 16-bit type (exact:
 * every e4m3 value is an fp16 and a bf16, the scale is not applied here),
 * then either
 *   - the Hopper GEMM engine multiplies them and finishes each output in
 *     its epilogue (dot * scale, alpha, beta C, bias, activation, one
 *     rounding), where it covers the call and the output is 16-bit; or
 *   - cublasLtMatmul multiplies them with fp32 accumulation into an fp32
 *     buffer, and our kernel finishes each output as the other e4m3
 *     kernels do.
 * The weights' scale never meets a 16-bit rounding.
 */
#include <stdio.h>
#include "fused_fp8.h"
#include "fused_fp8_device.cuh"
#include "fused_internal.h"
#include "lt/lt_gemm.h"
#include "module/ctx.h"
#include "module/result.h"

/* The engine from this many rows: fewer are the decode kernels' (up to
 * 64) or measured faster on cuBLASLt's tiles (docs/fp8-weights.md). */
#define FB_FP8_ENGINE_MIN_ROWS 128

namespace {

/* out[j * k + p] = q(j0 + j, p) for j < cols, p < k, as T (exact). */
template <typename T>
__global__ void e4m3_widen_tile(const uint8_t *w, int64_t w_cs, int64_t w_ks,
                                int64_t j0, int64_t cols, int64_t k, T *out)
{
    const int64_t total = cols * k;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         q < total; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = q / k, p = q % k;
        out[q] = fb_store_as<T>(fb_fp8_value(w[(j0 + j) * w_cs + p * w_ks]));
    }
}

/* The same for weight rows of 16-byte aligned, contiguous bytes (k a
 * multiple of 16): each thread widens 16 weights, one 16-byte load and
 * two 16-byte stores, rows across the grid's y, so no index division. */
template <typename T>
__global__ void e4m3_widen_tile16(const uint8_t *w, int64_t w_cs, int64_t j0,
                                  int64_t cols, int64_t k, T *out)
{
    const int64_t vecs = k / 16;
    for (int64_t j = blockIdx.y; j < cols; j += gridDim.y) {
        const uint4 *src = (const uint4 *)(w + (j0 + j) * w_cs);
        uint4 *dst = (uint4 *)(out + j * k);
        for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
             v < vecs; v += (int64_t)gridDim.x * blockDim.x) {
            const uint4 b = __ldcs(src + v);
            const uint32_t in[4] = {b.x, b.y, b.z, b.w};
            uint32_t o[8];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                o[2 * q] = fb_fp8_pair<T>(in[q]);
                o[2 * q + 1] = fb_fp8_pair<T>(in[q] >> 16);
            }
            dst[2 * v] = make_uint4(o[0], o[1], o[2], o[3]);
            dst[2 * v + 1] = make_uint4(o[4], o[5], o[6], o[7]);
        }
    }
}

bool widen16_applies(const fb_e4m3_gemm_problem *p)
{
    return p->w_ks == 1 && p->k % 16 == 0 && p->w_cs % 16 == 0 &&
           (uintptr_t)p->w % 16 == 0;
}

/* Outputs (i, j0 + j) from acc (cols x m, column-major, ldacc): rows
 * across the grid's y, channels across x (no index division). */
template <typename T, typename TC>
__global__ void e4m3_finish_tile(fb_e4m3_gemm_problem p, int64_t j0,
                                 int64_t cols, const float *acc,
                                 int64_t ldacc)
{
    for (int64_t i = blockIdx.y; i < p.m; i += gridDim.y)
        for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
             j < cols; j += (int64_t)gridDim.x * blockDim.x)
            fb_fp8_finish<T, TC>(p, i, j0 + j, acc[j + i * ldacc], false);
}

unsigned grid_for(int64_t total)
{
    const int64_t b = (total + 255) / 256;
    return b < 1 ? 1u : b > 65536 ? 65536u : (unsigned)b;
}

/* Widen channels [j0, j0 + cols) of p's weights into wt (cols x k). */
template <typename T>
void widen(cudaStream_t stream, const fb_e4m3_gemm_problem *p, int64_t j0,
           int64_t cols, T *wt)
{
    if (widen16_applies(p)) {
        const int64_t bx = (p->k / 16 + 255) / 256;
        const dim3 grid((unsigned)(bx < 65536 ? bx : 65536),
                        (unsigned)(cols < 65535 ? cols : 65535));
        e4m3_widen_tile16<T><<<grid, 256, 0, stream>>>(p->w, p->w_cs, j0,
                                                        cols, p->k, wt);
    } else {
        e4m3_widen_tile<T><<<grid_for(cols * p->k), 256, 0, stream>>>(
            p->w, p->w_cs, p->w_ks, j0, cols, p->k, wt);
    }
}

/* Channels a tile, for widened weights within cap bytes: the tiles of one
 * size (a multiple of 256 channels, the engine's widest tile), so that
 * the last is not a sliver. */
int64_t tile_channels(const fb_e4m3_gemm_problem *p, size_t elem,
                      size_t cap)
{
    int64_t most = (int64_t)(cap / ((size_t)p->k * elem)) / 256 * 256;
    if (most < 256)
        most = 256;
    const int64_t tiles = (p->n + most - 1) / most;
    const int64_t each = (p->n + tiles - 1) / tiles;
    return (each + 255) / 256 * 256;
}

/* Stands for the widened tile (A of the engine's GEMMs) while the engine
 * is asked whether it covers a call: the tile lives in the staging
 * buffer, which cudaMalloc aligns to 256 bytes, but is reserved only once
 * the engine has said yes (an engine that declines must not leave the
 * handle holding its larger buffer). Only its alignment is looked at. */
const uint4 widened_stand_in = {0, 0, 0, 0};

/* A tile the engine did not run, after its first was checked: the rest of
 * the call cannot fall back (earlier tiles are written). */
fb_status engine_failed(fb_status st, fb_cuda_result *r)
{
    return st == FB_STATUS_NOT_SUPPORTED
               ? fb_result_fail(r, FB_STATUS_INTERNAL,
                                "e4m3 prefill: the GEMM engine declined a "
                                "tile it had taken")
               : fb_result_fail(r, st, "e4m3 prefill: GEMM engine launch "
                                       "failed");
}

/* The GEMM engine on the widened tiles, each tile's outputs finished in
 * its epilogue: 16-bit output stored with its channels contiguous (c_cs
 * == 1), X's rows contiguous. NOT_SUPPORTED, nothing launched, where the
 * engine does not cover the call. */
template <typename T>
fb_status run_engine(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                     int transb, int64_t ldb, fb_cuda_result *r)
{
    if (transb != 0 || p->c_cs != 1 || p->m < FB_FP8_ENGINE_MIN_ROWS)
        return FB_STATUS_NOT_SUPPORTED;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, FB_MATH_DEFAULT, &env);
    const int64_t width = tile_channels(p, sizeof(T), (size_t)128 << 20);
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = p->dtype;
    g.transa = 1, g.transb = 0;
    g.m = width < p->n ? width : p->n, g.n = p->m, g.k = p->k;
    g.alpha = p->alpha, g.beta = p->beta;
    g.lda = p->k;
    g.b = p->x, g.ldb = ldb;
    g.c = p->c, g.ldc = p->c_ts;
    g.ep.act = p->act;
    g.ep.bias_per_row = 1;
    fb_gemm_decide(&g);
    g.a = &widened_stand_in;
    if (!fbf_gemm_sm90_in_place(&env, &g))
        return FB_STATUS_NOT_SUPPORTED;
    fb_status st = fb_ctx_reserve(ctx, &ctx->staging,
                                  (size_t)g.m * (size_t)p->k * sizeof(T), r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    T *wt = (T *)ctx->staging.ptr;
    for (int64_t j0 = 0; j0 < p->n; j0 += width) {
        const int64_t cols = p->n - j0 < width ? p->n - j0 : width;
        widen<T>(ctx->stream, p, j0, cols, wt);
        g.m = cols;
        g.a = wt;
        g.c = (T *)p->c + j0;
        g.ep.bias = p->bias ? (const T *)p->bias + j0 : NULL;
        st = fbf_gemm_sm90_scaled(&env, &g, p->scale + j0, NULL, 0);
        if (st != FB_STATUS_SUCCESS)
            return engine_failed(st, r);
    }
    return FB_STATUS_SUCCESS;
}

/* The engine's dual GEMM for gate and up over tiles of `most` hidden
 * channels (width a tile), as fbf_mlp_hidden_sm90 is asked: whether it
 * covers the call, with a stand-in for the widened tile. */
bool gate_up_engine_covers(fb_cuda_ctx *ctx, const fb_e4m3_mlp_problem *p,
                           fb_fused_env *env, fb_mlp_problem *q,
                           int64_t *width, int64_t *most)
{
    fb_ctx_fused_env(ctx, FB_MATH_DEFAULT, env);
    /* Wg as a gemm problem, for the tiling (both 16-bit types alike) */
    fb_e4m3_gemm_problem wg;
    memset(&wg, 0, sizeof wg);
    wg.dtype = p->dtype;
    wg.m = p->m, wg.n = p->h, wg.k = p->k;
    *width = tile_channels(&wg, 2 * 2, (size_t)128 << 20);
    *most = *width < p->h ? *width : p->h;
    memset(q, 0, sizeof *q);
    q->dtype = p->dtype;
    q->gate_act = p->gate_act;
    q->m = p->m, q->k = p->k, q->h = *most, q->n = 0;
    q->x = p->x, q->ldx = p->ldx;
    /* Wu's tile follows Wg's, most * k elements on: 16-byte aligned
     * wherever k is a multiple of 8, which the engine asks anyway */
    q->wg = q->wu = &widened_stand_in;
    return fbf_mlp_hidden_sm90(env, q, NULL, NULL, NULL, 0, 0, NULL, 0) ==
           FB_STATUS_SUCCESS;
}

/* The gated MLP's gate and up projections on the engine's dual GEMM: per
 * tile of hidden channels, Wg's and Wu's rows widened side by side in the
 * staging, H = act(sg .* G + bg) .* (su .* U + bu) formed in its epilogue
 * straight into hbuf's columns (row stride h). */
template <typename T>
fb_status run_gate_up(fb_cuda_ctx *ctx, const fb_e4m3_mlp_problem *p,
                      void *hbuf, size_t hbuf_bytes, fb_cuda_result *r)
{
    fb_fused_env env;
    fb_mlp_problem q;
    int64_t width, most;
    if (!gate_up_engine_covers(ctx, p, &env, &q, &width, &most))
        return FB_STATUS_NOT_SUPPORTED;
    /* Wg and Wu as gemm problems, for the widening */
    fb_e4m3_gemm_problem wg;
    memset(&wg, 0, sizeof wg);
    wg.dtype = p->dtype;
    wg.m = p->m, wg.n = p->h, wg.k = p->k;
    wg.w = p->wg, wg.w_cs = p->k, wg.w_ks = 1;
    fb_e4m3_gemm_problem wu = wg;
    wu.w = p->wu;
    fb_status st = fb_ctx_reserve(
        ctx, &ctx->staging, 2 * (size_t)most * (size_t)p->k * sizeof(T), r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    T *wt = (T *)ctx->staging.ptr;
    q.wg = wt, q.wu = wt + most * p->k;
    for (int64_t j0 = 0; j0 < p->h; j0 += width) {
        const int64_t cols = p->h - j0 < width ? p->h - j0 : width;
        widen<T>(ctx->stream, &wg, j0, cols, wt);
        widen<T>(ctx->stream, &wu, j0, cols, wt + most * p->k);
        q.h = cols;
        q.bg = p->bg ? (const T *)p->bg + j0 : NULL;
        q.bu = p->bu ? (const T *)p->bu + j0 : NULL;
        st = fbf_mlp_hidden_sm90(&env, &q, p->sg + j0, p->su + j0,
                                 (T *)hbuf + j0, p->h,
                                 hbuf_bytes - (size_t)j0 * sizeof(T), NULL,
                                 0);
        if (st != FB_STATUS_SUCCESS)
            return engine_failed(st, r);
    }
    return FB_STATUS_SUCCESS;
}

template <typename T, typename TC>
fb_status run(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p, int transb,
              int64_t ldb, fb_cuda_result *r)
{
    /* Channels per tile: the widened weights and the fp32 dots each
     * within 64 MiB where that leaves at least 64 channels. */
    const size_t cap = (size_t)64 << 20;
    int64_t width = p->n;
    const int64_t by_w = (int64_t)(cap / ((size_t)p->k * sizeof(T)));
    const int64_t by_acc = (int64_t)(cap / ((size_t)p->m * sizeof(float)));
    if (width > by_w)
        width = by_w;
    if (width > by_acc)
        width = by_acc;
    width = width / 64 * 64;
    if (width < 64)
        width = 64;
    if (width > p->n)
        width = p->n;
    const int64_t ldacc = (width + 7) / 8 * 8;
    fb_status st = fb_ctx_reserve(ctx, &ctx->staging,
                                  (size_t)width * (size_t)p->k * sizeof(T), r);
    if (st == FB_STATUS_SUCCESS)
        st = fb_ctx_reserve(ctx, &ctx->accum,
                            (size_t)ldacc * (size_t)p->m * sizeof(float), r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    T *wt = (T *)ctx->staging.ptr;
    float *acc = (float *)ctx->accum.ptr;
    for (int64_t j0 = 0; j0 < p->n; j0 += width) {
        const int64_t cols = p->n - j0 < width ? p->n - j0 : width;
        widen<T>(ctx->stream, p, j0, cols, wt);
        /* acc (cols x m) = Wt (k x cols, column-major)^T x^T */
        fb_gemm_problem g;
        g.dtype = p->dtype;
        g.transa = 1, g.transb = transb;
        g.m = cols, g.n = p->m, g.k = p->k;
        g.alpha = 1.0f, g.beta = 0.0f;
        g.a = wt, g.lda = p->k;
        g.b = p->x, g.ldb = ldb;
        g.c = acc, g.ldc = ldacc;
        g.ep.bias = NULL, g.ep.act = FB_ACT_NONE, g.ep.bias_per_row = 0;
        char why[128] = "";
        st = fb_lt_matmul(ctx, &g, FB_DTYPE_F32, CUBLASLT_EPILOGUE_DEFAULT,
                          NULL, FB_MATH_DEFAULT, why, sizeof why, r);
        if (st == FB_STATUS_NOT_SUPPORTED && j0 == 0)
            return st; /* nothing written: the caller's tiled kernel */
        if (st == FB_STATUS_NOT_SUPPORTED) {
            /* this tile's columns on the tiled kernel */
            fb_e4m3_gemm_problem t = *p;
            t.n = cols;
            t.w = p->w + j0 * p->w_cs;
            t.scale = p->scale + j0;
            t.c = (char *)p->c + j0 * p->c_cs * (int64_t)sizeof(TC);
            t.bias = p->bias ? (const char *)p->bias + j0 * (int64_t)sizeof(T)
                             : NULL;
            if (sizeof(TC) == sizeof(float))
                fb_fp8_gemm_f32_out(ctx->stream, &t);
            else {
                char path[64];
                fb_fp8_gemm(ctx->stream, &t, path, sizeof path);
            }
            fb_result_clear(r);
            continue;
        }
        if (st != FB_STATUS_SUCCESS)
            return st;
        const int64_t fx = (cols + 255) / 256;
        const dim3 fgrid((unsigned)(fx < 65536 ? fx : 65536),
                         (unsigned)(p->m < 65535 ? p->m : 65535));
        e4m3_finish_tile<T, TC><<<fgrid, 256, 0, ctx->stream>>>(*p, j0, cols,
                                                               acc, ldacc);
    }
    return FB_STATUS_SUCCESS;
}

} // namespace

fb_status fb_fp8_gemm_prefill(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                              int f32_out, char *path, size_t pathlen,
                              fb_cuda_result *r)
{
    if ((p->dtype != FB_DTYPE_F16 && p->dtype != FB_DTYPE_BF16) ||
        p->m <= 16 || p->k <= 0 || p->alpha == 0.0f)
        return FB_STATUS_NOT_SUPPORTED;
    /* x^T as cuBLASLt's column-major B: x's rows contiguous (B = x^T
     * stored k x m, ld x_ts) or its columns (op(B) = B^T, ld x_ks). */
    int transb;
    int64_t ldb;
    if (p->x_ks == 1 && p->x_ts >= p->k)
        transb = 0, ldb = p->x_ts;
    else if (p->x_ts == 1 && p->x_ks >= p->m)
        transb = 1, ldb = p->x_ks;
    else
        return FB_STATUS_NOT_SUPPORTED;
    fb_status st = FB_STATUS_NOT_SUPPORTED;
    if (!f32_out)
        st = p->dtype == FB_DTYPE_F16
                 ? run_engine<__half>(ctx, p, transb, ldb, r)
                 : run_engine<__nv_bfloat16>(ctx, p, transb, ldb, r);
    if (st == FB_STATUS_SUCCESS) {
        fbf_set_path(path, pathlen, widen16_applies(p)
                                        ? "e4m3-engine-prefill/widen16"
                                        : "e4m3-engine-prefill/widen-strided");
        return st;
    }
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    fbf_set_path(path, pathlen, widen16_applies(p)
                                    ? "e4m3-lt-prefill/widen16"
                                    : "e4m3-lt-prefill/widen-strided");
    if (p->dtype == FB_DTYPE_F16)
        return f32_out ? run<__half, float>(ctx, p, transb, ldb, r)
                       : run<__half, __half>(ctx, p, transb, ldb, r);
    return f32_out ? run<__nv_bfloat16, float>(ctx, p, transb, ldb, r)
                   : run<__nv_bfloat16, __nv_bfloat16>(ctx, p, transb, ldb, r);
}

bool fb_fp8_gate_up_prefill_applies(fb_cuda_ctx *ctx,
                                    const fb_e4m3_mlp_problem *p)
{
    fb_fused_env env;
    fb_mlp_problem q;
    int64_t width, most;
    return p->m >= FB_FP8_ENGINE_MIN_ROWS && p->h > 0 && p->k > 0 &&
           (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_BF16) &&
           gate_up_engine_covers(ctx, p, &env, &q, &width, &most);
}

fb_status fb_fp8_gate_up_prefill(fb_cuda_ctx *ctx,
                                 const fb_e4m3_mlp_problem *p, void *hbuf,
                                 size_t hbuf_bytes, fb_cuda_result *r)
{
    if (p->m < FB_FP8_ENGINE_MIN_ROWS || p->h <= 0 || p->k <= 0)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype == FB_DTYPE_F16)
        return run_gate_up<__half>(ctx, p, hbuf, hbuf_bytes, r);
    if (p->dtype == FB_DTYPE_BF16)
        return run_gate_up<__nv_bfloat16>(ctx, p, hbuf, hbuf_bytes, r);
    return FB_STATUS_NOT_SUPPORTED;
}

fb_status fb_fp8_gemm_wgmma(fb_cuda_ctx *ctx, const fb_e4m3_gemm_problem *p,
                            int64_t max_rows, char *path, size_t pathlen)
{
    if (p->m < FB_FP8_WGMMA_MIN_ROWS || p->m > max_rows)
        return FB_STATUS_NOT_SUPPORTED;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, FB_MATH_DEFAULT, &env);
    if (!fbf_e4m3_wgmma_gemm_covers(&env, p) ||
        (fb_fp8_mid_rows(p->m, p->k, p->n) && fb_fp8_mid_gemm_applies(p) &&
         !fbf_e4m3_wgmma_gemm_fills(&env, p)))
        return FB_STATUS_NOT_SUPPORTED;
    return fbf_e4m3_wgmma_gemm(&env, p, 0, 0, path, pathlen);
}

bool fb_fp8_gate_up_wgmma_applies(fb_cuda_ctx *ctx,
                                  const fb_e4m3_mlp_problem *p)
{
    if (p->m < FB_FP8_WGMMA_MIN_ROWS || p->m > FB_FP8_WGMMA_MLP_MAX_ROWS)
        return false;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, FB_MATH_DEFAULT, &env);
    return fbf_e4m3_wgmma_gate_up_covers(&env, p) &&
           !(fb_fp8_mid_rows(p->m, p->k, 2 * p->h) &&
             fb_fp8_mid_gate_up_applies(p) &&
             !fbf_e4m3_wgmma_gate_up_fills(&env, p));
}

fb_status fb_fp8_gate_up_wgmma(fb_cuda_ctx *ctx, const fb_e4m3_mlp_problem *p,
                               void *hbuf)
{
    if (!fb_fp8_gate_up_wgmma_applies(ctx, p))
        return FB_STATUS_NOT_SUPPORTED;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, FB_MATH_DEFAULT, &env);
    return fbf_e4m3_wgmma_gate_up(&env, p, hbuf, 0);
}
