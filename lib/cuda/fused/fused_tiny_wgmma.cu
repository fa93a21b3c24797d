/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tiny_wgmma.cu -- the tiny gated MLP on Hopper's warpgroup MMA
 * (wgmma, sm_90a only): k <= 64, n <= 64, h up to what shared memory
 * holds (448), 16-bit data.
 *
 * Why a second tiny kernel: the mma.sync one (fused_tiny_mlp.cu) is held
 * by dependent chains, not by a pipe: every 16 hidden units it loads B
 * fragments from shared memory into registers, issues 2 x 4 HMMAs per 16
 * rows, waits on them, then runs the activation. wgmma reads both
 * operands of the gate and up products from shared memory (no register
 * staging, no LDS per fragment), runs asynchronously for a 64-row
 * warpgroup tile, and keeps the register budget for two accumulators;
 * three warpgroups per SM overlap one's activation with the others'
 * tensor work.
 *
 * Per warpgroup and 64-row tile, for each chunk c of CW = 64 (or 32)
 * hidden units:
 *   [G | U] (64 x 2 CW, fp32) = X (64 x 64, shared) [Wg_c ; Wu_c]^T
 *       four wgmma m64n(2 CW)k16, both operands from shared memory;
 *   H = act(G + bg) .* (U + bu), packed to the input type in registers:
 *       the accumulator layout of columns 16 s .. 16 s + 15 IS the
 *       A-operand layout of k-step s of the next product;
 *   Y (64 x 64, fp32) += H (64 x CW, registers) Wd_c^T
 *       CW / 16 wgmma m64n64k16, A from registers, B from shared memory.
 * H never leaves the registers; X tiles are double-buffered (cp.async).
 *
 * Shared memory holds every operand K-major with the 128-byte swizzle
 * wgmma reads (rows of 64 elements = 128 bytes, 16-byte chunk j of row r
 * at chunk j ^ (r % 8), 8-row groups 1024 bytes apart):
 *   WGU: per chunk, 2 CW rows (Wg_c then Wu_c) x k   CW / 4 KiB a chunk
 *   WD:  per 64 units, 64 rows (n) x 64 units          8 KiB
 *   X:   per warpgroup, two 64 x 64 tiles                16 KiB
 *   biases (fp32, zero-padded).
 *
 * A launch pays a fixed start-up (every CTA loads the weights into shared
 * memory, then one tile's chain of dependent wgmma and activation) before
 * rows stream at a steady rate; measurements: docs/tiny-kernels.md.
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"
#include "fused_tiny.cuh"
#include "fused_wgmma.cuh"

namespace fbf {

enum {
    kWgRows = 64,            /* rows of a warpgroup tile */
    kWgChunk = 64,           /* hidden units a chunk */
    kWgMaxChunks = 7,        /* h <= 448 */
    kWgTileBytes = 64 * 128  /* an X tile, a WD chunk */
};

template <typename T> struct WgMlpArgs {
    const T *x;
    int64_t ldx;
    const T *wg, *bg, *wu, *bu, *wd, *bd;
    T *y;
    int64_t ldy;
    int64_t m;
    int k, h, n, chunks;
    fb_activation act;
    int y_pairs; /* Y allows 4-byte stores of column pairs */
    int early;   /* launched programmatically (a plan's fixed weights):
                    the weights are copied before the grid ahead has
                    finished, X read and Y written only after */
};

/* Bytes of dynamic shared memory: the operands (1024-byte aligned, and
 * 1024 more to align the base), then the biases. */
template <int GROUPS> static inline size_t wg_smem_bytes(int chunks)
{
    return 1024 + (size_t)chunks * 3 * kWgTileBytes +
           (size_t)GROUPS * 2 * kWgTileBytes +
           ((size_t)2 * chunks * kWgChunk + 64) * 4;
}

#if FB_WGMMA_BODY

/* Rows [row0, row0 + 64) of X into a swizzled tile, zero past m and k;
 * 16-byte cp.async by the warpgroup's 128 threads, not waited for. */
template <typename T>
__device__ __forceinline__ void wg_copy_x(unsigned char *dst,
                                          const WgMlpArgs<T> &a,
                                          int64_t row0, int wt)
{
    for (int i = wt; i < kWgRows * 8; i += 128) {
        const int r = i >> 3, j = i & 7;
        const bool in = row0 + r < a.m && 8 * j < a.k; /* k % 8 == 0 */
        cp_async16(dst + swz128(r, j),
                   in ? a.x + (row0 + r) * a.ldx + 8 * j : a.x, in ? 16 : 0);
    }
}

/* Issue [G | U] = X [Wg_c ; Wu_c]^T (four k16 steps; CW hidden units,
 * d holds CW accumulators a thread) and commit. */
template <typename T, int CW>
__device__ __forceinline__ void wg_gate_up(float (&d)[CW], uint64_t dx,
                                           uint32_t wgu_c)
{
    const uint64_t dw = wg_desc(wgu_c);
    wg_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s)
        wgmma_ss<T>(d, dx + 2 * s, dw + 2 * s, s > 0);
    wg_commit();
}

/* Chunk c (CW hidden units), whose gate/up product into d was issued:
 * wait for it (and for chunk c - 1's down product, which read hf),
 * H = act(G + bg) .* (U + bu) into hf, issue Y += H Wd_c^T. Columns
 * 8 b + 2 t + (q & 1) and rows g + 8 (q >> 1) of the warp's 16: gate in
 * d[4 b + q], up in d[CW / 2 + 4 b + q]; k-step s of the down product
 * takes accumulator blocks 2 s (a0, a1) and 2 s + 1 (a2, a3), and reads
 * Wd's 64-unit tile c CW / 64 from k-step (c CW % 64) / 16 + s.
 * (Not pipelined across chunks: issuing chunk c + 1's gate/up product
 * before chunk c's activation, in a second accumulator, makes ptxas
 * serialise the wgmmas around the reads of the other accumulator and
 * spill at 255 registers; it measured slower, docs/tiny-kernels.md.) */
template <typename T, int CW>
__device__ __forceinline__ void wg_chunk(float (&d)[CW], int c,
                                         uint32_t wdt_s, const float *bg_s,
                                         const float *bu_s, fb_activation act,
                                         uint32_t (&hf)[CW / 4],
                                         float (&y)[32])
{
    const int t = threadIdx.x & 3, u0 = c * CW;
    wg_wait_all();
    pin(d);
    pin(hf);
    float hv[CW / 2];
#pragma unroll
    for (int b = 0; b < CW / 8; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q)
            hv[4 * b + q] = d[4 * b + q] + bg_s[u0 + 8 * b + 2 * t + (q & 1)];
    act_fast_all<CW / 2>(act, hv);
#pragma unroll
    for (int b = 0; b < CW / 8; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q)
            hv[4 * b + q] *=
                d[CW / 2 + 4 * b + q] + bu_s[u0 + 8 * b + 2 * t + (q & 1)];
#pragma unroll
    for (int s = 0; s < CW / 16; ++s) {
        hf[4 * s + 0] = pack2<T>(hv[8 * s + 0], hv[8 * s + 1]);
        hf[4 * s + 1] = pack2<T>(hv[8 * s + 2], hv[8 * s + 3]);
        hf[4 * s + 2] = pack2<T>(hv[8 * s + 4], hv[8 * s + 5]);
        hf[4 * s + 3] = pack2<T>(hv[8 * s + 6], hv[8 * s + 7]);
    }
    const uint64_t dd = wg_desc(wdt_s + (u0 / 64) * kWgTileBytes) +
                        2 * ((u0 % 64) / 16);
    wg_fence();
#pragma unroll
    for (int s = 0; s < CW / 16; ++s)
        wgmma_rs<T>(y, hf[4 * s], hf[4 * s + 1], hf[4 * s + 2], hf[4 * s + 3],
                    dd + 2 * s, c > 0 || s > 0);
    wg_commit();
}

#endif /* FB_WGMMA_BODY */

template <typename T, int GROUPS, int CW>
__global__ void __launch_bounds__(128 * GROUPS, 1)
    tiny_wgmma_kernel(const WgMlpArgs<T> a)
{
#if FB_WGMMA_BODY
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - (__cvta_generic_to_shared(
                                                   smem_raw) & 1023)) & 1023);
    const int chunks = a.chunks;
    unsigned char *wgu = smem;
    unsigned char *wdt = wgu + chunks * 2 * kWgTileBytes;
    unsigned char *xb = wdt + chunks * kWgTileBytes;
    float *bg_s = reinterpret_cast<float *>(xb + GROUPS * 2 * kWgTileBytes);
    float *bu_s = bg_s + chunks * kWgChunk;
    float *bd_s = bu_s + chunks * kWgChunk;
    const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127;
    const int warp = wt >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;

    for (int i = tid; i < chunks * kWgChunk; i += 128 * GROUPS) {
        bg_s[i] = (a.bg && i < a.h) ? fb_load_f32(a.bg[i]) : 0.0f;
        bu_s[i] = (a.bu && i < a.h) ? fb_load_f32(a.bu[i]) : 0.0f;
    }
    for (int i = tid; i < 64; i += 128 * GROUPS)
        bd_s[i] = (a.bd && i < a.n) ? fb_load_f32(a.bd[i]) : 0.0f;

    /* The CTA takes a contiguous range of tiles (7 or 8 of 1024 on 132
     * SMs) and its warpgroups take turns in it: no SM gets more than one
     * tile above the average (striding all warpgroups over the grid gave
     * some SMs 9). */
    const int64_t ntiles = (a.m + kWgRows - 1) / kWgRows;
    const int64_t hi = ntiles * (blockIdx.x + 1) / gridDim.x;
    const int64_t stride = GROUPS;
    int64_t tile = ntiles * blockIdx.x / gridDim.x + wg;
    unsigned char *xmine = xb + wg * 2 * kWgTileBytes;

    /* Every weight once, swizzled, zero outside h x k and n x h: WGU as
     * tiles of 2 CW rows (CW gate units, then the same CW up units), WD
     * as 64-unit tiles, all before the first tile (starting on the first
     * block while the rest arrive measured slower: docs/tiny-kernels.md). */
    for (int i = tid; i < chunks * 128 * 8; i += 128 * GROUPS) {
        const int row = i >> 3, j = i & 7;
        const int cc = row / (2 * CW), r = row % (2 * CW);
        const int u = cc * CW + r % CW;
        const bool in = u < a.h && 8 * j < a.k;
        const T *src = (r < CW ? a.wg : a.wu) + (int64_t)u * a.k + 8 * j;
        cp_async16(wgu + cc * (CW * 256) + swz128(r, j), in ? src : a.wg,
                   in ? 16 : 0);
    }
    for (int i = tid; i < chunks * 64 * 8; i += 128 * GROUPS) {
        const int c = i >> 9, r = (i >> 3) & 63, j = i & 7;
        const int col = c * kWgChunk + 8 * j;
        const bool in = r < a.n && col < a.h; /* h % 8 == 0 */
        cp_async16(wdt + c * kWgTileBytes + swz128(r, j),
                   in ? a.wd + (int64_t)r * a.h + col : a.wd, in ? 16 : 0);
    }
    /* launched programmatically (a plan's fixed weights): the weights
     * and biases are asked for while the grid ahead finishes, X only
     * once it has */
    if (a.early)
        grid_dependency_wait();
    if (tile < hi)
        wg_copy_x<T>(xmine, a, tile * kWgRows, wt);
    cp_async_commit();
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads(); /* weights, biases, each warpgroup's first tile */

    const uint32_t wgu_s = (uint32_t)__cvta_generic_to_shared(wgu);
    const uint32_t wdt_s = (uint32_t)__cvta_generic_to_shared(wdt);
    float d[CW], y[32];
    uint32_t hf[CW / 4];
#pragma unroll
    for (int i = 0; i < CW; ++i)
        d[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < CW / 4; ++i)
        hf[i] = 0u;
    for (int buf = 0; tile < hi; tile += stride, buf ^= 1) {
        /* This tile's copies (all 128 threads') are visible to wgmma, and
         * every warp is done with the previous tile: its buffer is free. */
        cp_async_wait<0>();
        fence_proxy_async();
        wg_barrier(wg);
        if (tile + stride < hi)
            wg_copy_x<T>(xmine + (buf ^ 1) * kWgTileBytes, a,
                         (tile + stride) * kWgRows, wt);
        cp_async_commit();
        /* the grid behind (a plan's next call) may start, and copy its
         * weights, once every CTA is on its last tiles */
        if (a.early && tile + stride >= hi)
            allow_dependents();
        const uint64_t dx = wg_desc(
            (uint32_t)__cvta_generic_to_shared(xmine + buf * kWgTileBytes));
#pragma unroll
        for (int i = 0; i < 32; ++i)
            y[i] = 0.0f;
        for (int c = 0; c < chunks * (64 / CW); ++c) {
            wg_gate_up<T, CW>(d, dx, wgu_s + c * (CW * 256));
            wg_chunk<T, CW>(d, c, wdt_s, bg_s, bu_s, a.act, hf, y);
        }
        wg_wait_all();
        pin(y);
        pin(hf);

        /* Y = acc + bd: rows 16 warp + g (+ 8), columns 8 b + 2 t, +1 */
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int64_t row = tile * kWgRows + 16 * warp + g + 8 * half;
            if (row >= a.m)
                continue;
            T *yrow = a.y + row * a.ldy;
#pragma unroll
            for (int b = 0; b < 8; ++b) {
                const int col = 8 * b + 2 * t;
                const float v0 = y[4 * b + 2 * half] + bd_s[col];
                const float v1 = y[4 * b + 2 * half + 1] + bd_s[col + 1];
                if (a.y_pairs && col + 1 < a.n) {
                    *reinterpret_cast<uint32_t *>(yrow + col) =
                        pack2<T>(v0, v1);
                } else {
                    if (col < a.n)
                        yrow[col] = fb_store_as<T>(v0);
                    if (col + 1 < a.n)
                        yrow[col + 1] = fb_store_as<T>(v1);
                }
            }
        }
    }
    cp_async_wait<0>();
#endif /* FB_WGMMA_BODY */
}

template <typename T, int GROUPS, int CW>
static fb_status run_tiny_wgmma(const fb_fused_env *env,
                                const fb_mlp_problem *p,
                                fbf_mode mode, char *path,
                                size_t pathlen)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&tiny_wgmma_kernel<T, GROUPS, CW>);
    WgMlpArgs<T> a;
    memset(&a, 0, sizeof a);
    a.chunks = (int)((p->h + kWgChunk - 1) / kWgChunk);
    const size_t smem = wg_smem_bytes<GROUPS>(a.chunks);
    if (a.chunks > kWgMaxChunks || smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    tiny_mlp_operands<T>(a, p);
    a.y_pairs = ((uintptr_t)p->y & 3u) == 0 && p->ldy % 2 == 0;
    const int64_t ntiles = (p->m + kWgRows - 1) / kWgRows;
    const int64_t need = (ntiles + GROUPS - 1) / GROUPS;
    const int grid = (int)(need < env->sm_count ? need : env->sm_count);
    /* a plan's weights are fixed: the kernel may copy them while the
     * grid ahead finishes */
    a.early = env->weights_fixed;
    void *args[] = {&a};
    fb_status st = fbf_launch_status(fbf_launch_grid(
        func, grid, 128 * GROUPS, args, smem, env->stream, a.early != 0));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "mlp_tiny_%s_wgmma", tiny_suffix(p->dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

/* 3 (and 0): three warpgroups per CTA, chunks of 64 hidden units, the
 * fastest measured (docs/tiny-kernels.md); 4: two warpgroups; 5: four
 * warpgroups, chunks of 32 (half the accumulators, 128 registers). */
template <typename T>
static fb_status tiny_wgmma_variant(int v, const fb_fused_env *env,
                                    const fb_mlp_problem *p,
                                    fbf_mode mode, char *path,
                                    size_t pathlen)
{
    if (v == 4)
        return run_tiny_wgmma<T, 2, 64>(env, p, mode, path, pathlen);
    if (v == 5)
        return run_tiny_wgmma<T, 4, 32>(env, p, mode, path, pathlen);
    return run_tiny_wgmma<T, 3, 64>(env, p, mode, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* Covered: 16-bit, k <= 64, n <= 64, h <= 448 (as shared memory allows),
 * k, h, ldx multiples of 8, 16-byte aligned X and weights, a compute 9.0
 * device and a module built for sm_90a. the tiny_variant knob 3: three
 * warpgroups per CTA, 4: two; 0: three. */
fb_status fbf_tiny_mlp_wgmma(const fb_fused_env *env, const fb_mlp_problem *p,
                             fbf_mode mode, char *path,
                             size_t pathlen)
{
#ifdef FB_HAVE_SM90A
    if (env->cc_major != 9 || env->cc_minor != 0)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype != FB_DTYPE_BF16 && p->dtype != FB_DTYPE_F16)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m < 1 || p->m >= ((int64_t)1 << 40) || p->k < 8 || p->k > 64 ||
        p->n < 1 || p->n > 64 || p->h < 8 || p->h > kWgMaxChunks * kWgChunk)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->k % 8 || p->h % 8 || p->ldx % 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (!tiny_aligned16(p->x) || !tiny_aligned16(p->wg) ||
        !tiny_aligned16(p->wu) || !tiny_aligned16(p->wd))
        return FB_STATUS_NOT_SUPPORTED;
    const int v = FBF_KNOB(tiny_variant);
    if (p->dtype == FB_DTYPE_BF16)
        return tiny_wgmma_variant<__nv_bfloat16>(v, env, p, mode, path,
                                                 pathlen);
    return tiny_wgmma_variant<__half>(v, env, p, mode, path, pathlen);
#else
    (void)env; (void)p; (void)mode; (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}
