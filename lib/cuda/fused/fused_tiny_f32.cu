/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tiny_f32.cu -- the tiny-width family for fp32 data, on the CUDA
 * cores in true fp32 (the handle may forbid TF32, and by default does).
 *
 * One token row per thread, 8 warps per CTA, one CTA per SM, persistent
 * over rows. The weights sit in shared memory for the whole launch and
 * every lane of a warp reads the same weight at the same time (broadcast:
 * one shared-memory wavefront feeds 32 lanes x 4 FMAs); the row's X and
 * its Y accumulators live in registers.
 *   mlp: for each hidden unit j: gate and up = X . Wg[j], X . Wu[j] (four
 *   partial sums each, so eight independent FMA chains), H_j = act(gate +
 *   bg) (up + bu) with the accurate activation, then Y += H_j Wd[:, j]
 *   (Wd kept transposed in shared memory). H never leaves the thread.
 *   gemm: Y_f = X . W[f] for each feature, then the gemm epilogue.
 *
 *   FMA-bound: the shared-memory broadcast supplies exactly 4 FMAs per
 *   wavefront per warp, so both pipes run near their rate (the numbers:
 *   docs/tiny-kernels.md).
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"
#include "fused_tiny.cuh"

namespace fbf {

static const int kF32Threads = 256;

/* X row of KP floats into registers (zero past k). */
template <int KP>
__device__ __forceinline__ void f32_load_row(float (&x)[KP], const float *row,
                                             int k, bool vec)
{
    if (vec) {
#pragma unroll
        for (int c = 0; c < KP; c += 4) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (c < k)
                v = __ldg(reinterpret_cast<const float4 *>(row + c));
            x[c] = v.x;
            x[c + 1] = v.y;
            x[c + 2] = v.z;
            x[c + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int c = 0; c < KP; ++c)
            x[c] = c < k ? __ldg(row + c) : 0.0f;
    }
}

/* x . w for a weight row in shared memory (KP floats, broadcast), four
 * independent partial sums added at the end. */
template <int KP>
__device__ __forceinline__ float f32_dot(const float (&x)[KP],
                                         const float *w)
{
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma unroll
    for (int c = 0; c < KP; c += 4) {
        const float4 v = *reinterpret_cast<const float4 *>(w + c);
        s0 = fmaf(x[c], v.x, s0);
        s1 = fmaf(x[c + 1], v.y, s1);
        s2 = fmaf(x[c + 2], v.z, s2);
        s3 = fmaf(x[c + 3], v.w, s3);
    }
    return (s0 + s1) + (s2 + s3);
}

/* ---- the MLP --------------------------------------------------------- */

struct TinyMlpF32Args {
    const float *x;
    int64_t ldx;
    const float *wg, *bg, *wu, *bu, *wd, *bd;
    float *y;
    int64_t ldy;
    int64_t m;
    int k, h, n;
    fb_activation act;
    int x_vec, y_vec;
};

template <int KP, int NP>
static size_t tiny_f32_mlp_smem(int h)
{
    return ((size_t)2 * h * KP + (size_t)h * NP + 2 * (size_t)h + NP) * 4;
}

template <int KP, int NP>
__global__ void __launch_bounds__(kF32Threads, 1)
    tiny_mlp_f32_kernel(const TinyMlpF32Args a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *wg_s = reinterpret_cast<float *>(smem); /* [h][KP] */
    float *wu_s = wg_s + a.h * KP;                 /* [h][KP] */
    float *wdt_s = wu_s + a.h * KP;                /* [h][NP]: Wd^T */
    float *bg_s = wdt_s + a.h * NP;
    float *bu_s = bg_s + a.h;
    float *bd_s = bu_s + a.h;

    for (int i = threadIdx.x; i < a.h * KP; i += kF32Threads) {
        const int j = i / KP, c = i - j * KP;
        wg_s[i] = c < a.k ? a.wg[(int64_t)j * a.k + c] : 0.0f;
        wu_s[i] = c < a.k ? a.wu[(int64_t)j * a.k + c] : 0.0f;
    }
    for (int i = threadIdx.x; i < NP * a.h; i += kF32Threads) {
        const int o = i / a.h, j = i - o * a.h; /* reads Wd row by row */
        wdt_s[j * NP + o] = o < a.n ? a.wd[(int64_t)o * a.h + j] : 0.0f;
    }
    for (int j = threadIdx.x; j < a.h; j += kF32Threads) {
        bg_s[j] = a.bg ? a.bg[j] : 0.0f;
        bu_s[j] = a.bu ? a.bu[j] : 0.0f;
    }
    for (int o = threadIdx.x; o < NP; o += kF32Threads)
        bd_s[o] = (a.bd && o < a.n) ? a.bd[o] : 0.0f;
    __syncthreads();

    const int64_t stride = (int64_t)gridDim.x * kF32Threads;
    for (int64_t row = (int64_t)blockIdx.x * kF32Threads + threadIdx.x;
         row < a.m; row += stride) {
        float x[KP], y[NP];
        f32_load_row<KP>(x, a.x + row * a.ldx, a.k, a.x_vec != 0);
#pragma unroll
        for (int o = 0; o < NP; ++o)
            y[o] = 0.0f;
        for (int j = 0; j < a.h; ++j) {
            const float gate = f32_dot<KP>(x, wg_s + j * KP) + bg_s[j];
            const float up = f32_dot<KP>(x, wu_s + j * KP) + bu_s[j];
            const float hv = fb_act_dynamic(a.act, gate) * up;
            const float *wd = wdt_s + j * NP;
#pragma unroll
            for (int o = 0; o < NP; o += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(wd + o);
                y[o] = fmaf(hv, v.x, y[o]);
                y[o + 1] = fmaf(hv, v.y, y[o + 1]);
                y[o + 2] = fmaf(hv, v.z, y[o + 2]);
                y[o + 3] = fmaf(hv, v.w, y[o + 3]);
            }
        }
        float *yrow = a.y + row * a.ldy;
#pragma unroll
        for (int o = 0; o < NP; o += 4) {
            if (a.y_vec && o + 3 < a.n) {
                *reinterpret_cast<float4 *>(yrow + o) =
                    make_float4(y[o] + bd_s[o], y[o + 1] + bd_s[o + 1],
                                y[o + 2] + bd_s[o + 2], y[o + 3] + bd_s[o + 3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (o + e < a.n)
                        yrow[o + e] = y[o + e] + bd_s[o + e];
            }
        }
    }
}

/* ---- the gemm -------------------------------------------------------- */

struct TinyGemmF32Args {
    const float *w; /* feature f at w + f * ldw, contiguous in k */
    int64_t ldw;
    const float *x; /* token r at x + r * ldx, contiguous in k */
    int64_t ldx;
    float *c;       /* (token r, feature f) at c[r * cs_t + f * cs_f] */
    int64_t cs_t, cs_f;
    const float *bias;
    int bias_on_features;
    float alpha, beta;
    fb_activation act;
    int64_t m;
    int k, n;
    int x_vec;
};

template <int KP, int NP>
__global__ void __launch_bounds__(kF32Threads, 1)
    tiny_gemm_f32_kernel(const TinyGemmF32Args a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *w_s = reinterpret_cast<float *>(smem); /* [NP][KP] */
    for (int i = threadIdx.x; i < NP * KP; i += kF32Threads) {
        const int f = i / KP, c = i - f * KP;
        w_s[i] = (f < a.n && c < a.k) ? a.w[(int64_t)f * a.ldw + c] : 0.0f;
    }
    __syncthreads();

    const int64_t stride = (int64_t)gridDim.x * kF32Threads;
    for (int64_t row = (int64_t)blockIdx.x * kF32Threads + threadIdx.x;
         row < a.m; row += stride) {
        float x[KP];
        f32_load_row<KP>(x, a.x + row * a.ldx, a.k, a.x_vec != 0);
        float *crow = a.c + row * a.cs_t;
        for (int f = 0; f < a.n; ++f) {
            float v = a.alpha * f32_dot<KP>(x, w_s + f * KP);
            float *out = crow + f * a.cs_f;
            if (a.beta != 0.0f)
                v += a.beta * *out;
            if (a.bias)
                v += a.bias[a.bias_on_features ? f : row];
            *out = fb_act_dynamic(a.act, v);
        }
    }
}

/* ---- host side ------------------------------------------------------- */

static int f32_grid(const fb_fused_env *env, int64_t m)
{
    const int64_t need = (m + kF32Threads - 1) / kF32Threads;
    return (int)(need < env->sm_count ? need : env->sm_count);
}

template <int KP, int NP>
static fb_status run_tiny_mlp_f32(const fb_fused_env *env,
                                  const fb_mlp_problem *p,
                                  fbf_mode mode, char *path,
                                  size_t pathlen)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&tiny_mlp_f32_kernel<KP, NP>);
    const size_t smem = tiny_f32_mlp_smem<KP, NP>((int)p->h);
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    TinyMlpF32Args a;
    memset(&a, 0, sizeof a);
    tiny_mlp_operands<float>(a, p);
    a.x_vec = tiny_aligned16(p->x) && p->ldx % 4 == 0 && p->k % 4 == 0;
    a.y_vec = tiny_aligned16(p->y) && p->ldy % 4 == 0;
    void *args[] = {&a};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(f32_grid(env, p->m)), dim3(kF32Threads), args, smem,
        env->stream));
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, "mlp_tiny_f32");
    return st;
}

template <int KP, int NP>
static fb_status run_tiny_gemm_f32(const fb_fused_env *env,
                                   const TinyGemmF32Args &a,
                                   fbf_mode mode, char *path,
                                   size_t pathlen)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&tiny_gemm_f32_kernel<KP, NP>);
    const size_t smem = (size_t)NP * KP * 4;
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    TinyGemmF32Args args_copy = a;
    void *args[] = {&args_copy};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(f32_grid(env, a.m)), dim3(kF32Threads), args, smem,
        env->stream));
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, "gemm_tiny_f32");
    return st;
}

/* Register budget: X (KP) and Y (NP) per thread, KP + NP <= 192. */
#define FBF_F32_SHAPES(CALL, KDIM, NDIM)                                      \
    if (KDIM <= 32 && NDIM <= 32)                                             \
        return CALL(32, 32);                                                  \
    if (KDIM <= 32 && NDIM <= 64)                                             \
        return CALL(32, 64);                                                  \
    if (KDIM <= 32 && NDIM <= 128)                                            \
        return CALL(32, 128);                                                 \
    if (KDIM <= 64 && NDIM <= 32)                                             \
        return CALL(64, 32);                                                  \
    if (KDIM <= 64 && NDIM <= 64)                                             \
        return CALL(64, 64);                                                  \
    if (KDIM <= 64 && NDIM <= 128)                                            \
        return CALL(64, 128);                                                 \
    if (KDIM <= 128 && NDIM <= 32)                                            \
        return CALL(128, 32);                                                 \
    if (KDIM <= 128 && NDIM <= 64)                                            \
        return CALL(128, 64);                                                 \
    return FB_STATUS_NOT_SUPPORTED;

} /* namespace fbf */

using namespace fbf;

fb_status fbf_tiny_mlp_f32(const fb_fused_env *env, const fb_mlp_problem *p,
                           fbf_mode mode, char *path, size_t pathlen)
{
    if (env->cc_major < 8 || p->m < 1 || p->k < 1 || p->h < 1 || p->n < 1 ||
        p->k > 128 || p->n > 128 || p->h > 4096 ||
        p->m >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;
#define FBF_CALL(K, N) run_tiny_mlp_f32<K, N>(env, p, mode, path, pathlen)
    FBF_F32_SHAPES(FBF_CALL, p->k, p->n)
#undef FBF_CALL
}

fb_status fbf_tiny_gemm_f32(const fb_fused_env *env, const fb_gemm_problem *p,
                            fbf_mode mode, char *path,
                            size_t pathlen)
{
    if (env->cc_major < 8 || !p->transa || p->transb || p->k < 1 ||
        p->k > 128 || p->m < 1 || p->n < 1 || p->m >= ((int64_t)1 << 40) ||
        p->n >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;
    /* As fbf_tiny_gemm: the weights are A's columns (M <= 128) or B's. */
    TinyGemmF32Args a;
    memset(&a, 0, sizeof a);
    if (p->m <= 128) {
        a.w = static_cast<const float *>(p->a);
        a.ldw = p->lda;
        a.n = (int)p->m;
        a.x = static_cast<const float *>(p->b);
        a.ldx = p->ldb;
        a.m = p->n;
        a.cs_f = 1;
        a.cs_t = p->ldc;
        a.bias_on_features = p->ep.bias_per_row;
    } else if (p->n <= 128) {
        a.w = static_cast<const float *>(p->b);
        a.ldw = p->ldb;
        a.n = (int)p->n;
        a.x = static_cast<const float *>(p->a);
        a.ldx = p->lda;
        a.m = p->m;
        a.cs_f = p->ldc;
        a.cs_t = 1;
        a.bias_on_features = !p->ep.bias_per_row;
    } else {
        return FB_STATUS_NOT_SUPPORTED;
    }
    a.c = static_cast<float *>(p->c);
    a.bias = static_cast<const float *>(p->ep.bias);
    a.alpha = p->alpha;
    a.beta = p->beta;
    a.act = p->ep.act;
    a.k = (int)p->k;
    a.x_vec = tiny_aligned16(a.x) && a.ldx % 4 == 0 && a.k % 4 == 0;
#define FBF_CALL(K, N) run_tiny_gemm_f32<K, N>(env, a, mode, path, pathlen)
    FBF_F32_SHAPES(FBF_CALL, a.k, a.n)
#undef FBF_CALL
}
