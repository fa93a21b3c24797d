/*
 * fused_prefill.cu -- prefill-sized gated MLP (m in the thousands), a
 * first step on mma.sync, for measurement only: the selftest builds and
 * times it; the module does not list this file, so no library call reaches
 * it (FUSED_NOTES.md, section 4, says why and what would replace it).
 *
 * Two launches:
 *   1. dual GEMM: gate and up over the same X tile (one cp.async pipeline
 *      for X, Wg, Wu), GeGLU in the epilogue, H written once in the input
 *      type (gate and up never reach memory);
 *   2. down GEMM with its bias in the epilogue.
 * CTA tile 128 x 128 (x2 for the dual GEMM), k-steps of 64, three
 * cp.async stages; 8 warps as 2 x 4, warp tile 64 x 32; fragments are the
 * permuted-k 16-byte shared-memory reads of the other fused kernels (rows
 * padded to 192 bytes: conflict-free quarter-warps), HMMA m16n8k16, fp32
 * accumulation.
 *
 *   Two numbers, seed (m = 8192, 768 -> 3072 -> 768, bf16): 116 GFLOP
 *   -> 147 us at 790 TFLOP/s; mma.sync reaches ~60-65 % of that: predict
 *   ~230-250 us (eager 244 us, its three GEMMs alone 193 us).
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"
#include "fused_tiny.cuh"

namespace fbf {

static const int kPfThreads = 256;
static const int kBM = 128, kBN = 128, kBK = 64, kStages = 3;
static const int kLds = kBK + 32; /* row stride: 192 bytes */

template <typename T> struct PrefillArgs {
    const T *a;   /* M x K, row stride lda */
    int64_t lda;
    const T *b, *b2; /* N x K each (b2: dual only), row stride ldb */
    int64_t ldb;
    const T *bias, *bias2;
    T *c;         /* M x N, row stride ldc */
    int64_t ldc;
    int m, n, k;
    fb_activation act;
    int c_pairs; /* C allows 4-byte stores of column pairs */
};

/* One stage: rows [row0, row0 + 128) of a matrix with K columns from k0,
 * into shared memory (stride kLds), zero past the matrix. */
template <typename T>
__device__ __forceinline__ void pf_copy(T *dst, const T *src, int64_t ld,
                                        int row0, int rows, int k0, int k)
{
    for (int i = threadIdx.x; i < kBM * (kBK / 8); i += kPfThreads) {
        const int r = i >> 3, cv = (i & 7) * 8;
        const bool in = row0 + r < rows && k0 + cv < k;
        cp_async16(dst + r * kLds + cv,
                   in ? src + (int64_t)(row0 + r) * ld + k0 + cv : src,
                   in ? 16 : 0);
    }
}

template <typename T, bool DUAL>
__global__ void __launch_bounds__(kPfThreads, 1)
    prefill_gemm_kernel(const PrefillArgs<T> a)
{
    const int NMAT = DUAL ? 2 : 1;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sm = reinterpret_cast<T *>(smem);
    const int stage_elems = (1 + NMAT) * kBM * kLds;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm = warp >> 2, wn = warp & 3; /* 2 x 4 warps */
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
    const int ktiles = (a.k + kBK - 1) / kBK;

    auto load_stage = [&](int kt, int slot) {
        T *st = sm + slot * stage_elems;
        pf_copy<T>(st, a.a, a.lda, row0, a.m, kt * kBK, a.k);
        pf_copy<T>(st + kBM * kLds, a.b, a.ldb, col0, a.n, kt * kBK, a.k);
        if (DUAL)
            pf_copy<T>(st + 2 * kBM * kLds, a.b2, a.ldb, col0, a.n, kt * kBK,
                       a.k);
    };

    float acc[NMAT][4][4][4];
#pragma unroll
    for (int mi = 0; mi < NMAT; ++mi)
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    acc[mi][mt][nt][q] = 0.0f;

    for (int s = 0; s < kStages - 1; ++s) {
        if (s < ktiles)
            load_stage(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<kStages - 2>();
        __syncthreads(); /* stage kt is in; every warp is done with kt - 1 */
        if (kt + kStages - 1 < ktiles)
            load_stage(kt + kStages - 1, (kt + kStages - 1) % kStages);
        cp_async_commit();

        const T *st = sm + (kt % kStages) * stage_elems;
        const T *as = st + (64 * wm) * kLds;
#pragma unroll
        for (int q = 0; q < kBK / 32; ++q) {
            uint4 xa[4], xb[4];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
                xa[mt] = *reinterpret_cast<const uint4 *>(
                    as + (16 * mt + g) * kLds + 32 * q + 8 * t);
                xb[mt] = *reinterpret_cast<const uint4 *>(
                    as + (16 * mt + g + 8) * kLds + 32 * q + 8 * t);
            }
#pragma unroll
            for (int mi = 0; mi < NMAT; ++mi) {
                const T *bs = st + (1 + mi) * kBM * kLds + (32 * wn) * kLds;
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    const uint4 bv = *reinterpret_cast<const uint4 *>(
                        bs + (8 * nt + g) * kLds + 32 * q + 8 * t);
#pragma unroll
                    for (int mt = 0; mt < 4; ++mt) {
                        mma16816<T>(acc[mi][mt][nt], xa[mt].x, xb[mt].x,
                                    xa[mt].y, xb[mt].y, bv.x, bv.y);
                        mma16816<T>(acc[mi][mt][nt], xa[mt].z, xb[mt].z,
                                    xa[mt].w, xb[mt].w, bv.z, bv.w);
                    }
                }
            }
        }
    }
    cp_async_wait<0>();

    /* Epilogue: dual: act(gate + b) .* (up + b2); single: acc + b. */
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = row0 + 64 * wm + 16 * mt + g + 8 * half;
            if (row >= a.m)
                continue;
            T *crow = a.c + (int64_t)row * a.ldc;
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const int col = col0 + 32 * wn + 8 * nt + 2 * t;
                float v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int cc = col + e;
                    float x = acc[0][mt][nt][2 * half + e];
                    if (a.bias && cc < a.n)
                        x += fb_load_f32(a.bias[cc]);
                    if (DUAL) {
                        float u = acc[NMAT - 1][mt][nt][2 * half + e];
                        if (a.bias2 && cc < a.n)
                            u += fb_load_f32(a.bias2[cc]);
                        x = act_fast(a.act, x) * u;
                    }
                    v[e] = x;
                }
                if (col + 1 < a.n && a.c_pairs) {
                    *reinterpret_cast<uint32_t *>(crow + col) =
                        pack2<T>(v[0], v[1]);
                } else {
                    if (col < a.n)
                        crow[col] = fb_store_as<T>(v[0]);
                    if (col + 1 < a.n)
                        crow[col + 1] = fb_store_as<T>(v[1]);
                }
            }
        }
}

template <typename T, bool DUAL>
static fb_status prefill_launch(const fb_fused_env *env,
                                const PrefillArgs<T> &args)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&prefill_gemm_kernel<T, DUAL>);
    const size_t smem =
        (size_t)kStages * (DUAL ? 3 : 2) * kBM * kLds * sizeof(T);
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    PrefillArgs<T> a = args;
    a.c_pairs = ((uintptr_t)a.c & 3u) == 0 && a.ldc % 2 == 0;
    void *p[] = {&a};
    const dim3 grid((a.n + kBN - 1) / kBN, (a.m + kBM - 1) / kBM);
    return fbf_launch_status(
        cudaLaunchKernel(func, grid, dim3(kPfThreads), p, smem, env->stream));
}

template <typename T>
static fb_status prefill_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                             void *hbuf)
{
    PrefillArgs<T> g;
    memset(&g, 0, sizeof g);
    g.a = static_cast<const T *>(p->x);
    g.lda = p->ldx;
    g.b = static_cast<const T *>(p->wg);
    g.b2 = static_cast<const T *>(p->wu);
    g.ldb = p->k;
    g.bias = static_cast<const T *>(p->bg);
    g.bias2 = static_cast<const T *>(p->bu);
    g.c = static_cast<T *>(hbuf);
    g.ldc = p->h;
    g.m = (int)p->m;
    g.n = (int)p->h;
    g.k = (int)p->k;
    g.act = p->gate_act;
    fb_status st = prefill_launch<T, true>(env, g);
    if (st != FB_STATUS_SUCCESS)
        return st;
    PrefillArgs<T> d;
    memset(&d, 0, sizeof d);
    d.a = static_cast<const T *>(hbuf);
    d.lda = p->h;
    d.b = static_cast<const T *>(p->wd);
    d.ldb = p->h;
    d.bias = static_cast<const T *>(p->bd);
    d.c = static_cast<T *>(p->y);
    d.ldc = p->ldy;
    d.m = (int)p->m;
    d.n = (int)p->n;
    d.k = (int)p->h;
    d.act = FB_ACT_NONE;
    return prefill_launch<T, false>(env, d);
}

} /* namespace fbf */

using namespace fbf;

/* 16-bit; k, h, ldx multiples of 8 and 16-byte aligned rows (cp.async);
 * hbuf: m x h elements of the input type. */
fb_status fbf_prefill_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                          void *hbuf, char *path, size_t pathlen)
{
    if (p->dtype == FB_DTYPE_F32 || env->cc_major < 8 || !hbuf)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m < 1 || p->k < 8 || p->h < 8 || p->n < 1 || p->k % 8 ||
        p->h % 8 || p->ldx % 8 || p->m >= ((int64_t)1 << 30) ||
        p->h >= ((int64_t)1 << 30) || p->n >= ((int64_t)1 << 30) ||
        p->k >= ((int64_t)1 << 30))
        return FB_STATUS_NOT_SUPPORTED;
    if (!tiny_aligned16(p->x) || !tiny_aligned16(p->wg) ||
        !tiny_aligned16(p->wu) || !tiny_aligned16(p->wd) ||
        !tiny_aligned16(hbuf))
        return FB_STATUS_NOT_SUPPORTED;
    fb_status st = p->dtype == FB_DTYPE_BF16
                       ? prefill_mlp<__nv_bfloat16>(env, p, hbuf)
                       : prefill_mlp<__half>(env, p, hbuf);
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, p->dtype == FB_DTYPE_BF16
                                        ? "mlp_prefill_mma_bf16"
                                        : "mlp_prefill_mma_f16");
    return st;
}
