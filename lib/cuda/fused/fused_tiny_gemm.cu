/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tiny_gemm.cu -- gemm_bias_act at tiny widths: the first layer of
 * fused_tiny_mlp.cu alone with the gemm epilogue, for nn.Linear shapes
 * with few output features (<= 128) and k <= 256, any number of tokens:
 * the seed's launch-bound Linear 32 -> 64 at batch 1024 (0.26 MB moved,
 * 4.2 MFLOP: a few microseconds of launch and latency whatever the
 * kernel; one launch with bias and activation fused is the whole win).
 * fp32 data: fused_tiny_f32.cu.
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"
#include "fused_tiny.cuh"

namespace fbf {

template <typename T> struct TinyGemmArgs {
    const T *w;  /* feature f at w + f * ldw, contiguous in k */
    int64_t ldw;
    const T *x;  /* token r at x + r * ldx, contiguous in k */
    int64_t ldx;
    T *c;        /* (token r, feature f) at c[r * cs_t + f * cs_f] */
    int64_t cs_t, cs_f;
    const T *bias;
    int bias_on_features;
    float alpha, beta;
    fb_activation act;
    int64_t m; /* tokens */
    int k, n;  /* k, features */
    int kpad, ldk;
    int c_pairs;
};

template <typename T, int KQ, int NJ>
__host__ __device__ static inline size_t tiny_gemm_smem(int ldk)
{
    const int ROWS = TinyShape<KQ, NJ>::ROWS;
    return (size_t)8 * NJ * ldk * sizeof(T) +
           (size_t)kTinyWarps * ROWS * ldk * sizeof(T);
}

template <typename T, int KQ, int NJ>
__global__ void __launch_bounds__(kTinyThreads, 1)
    tiny_gemm_kernel(const TinyGemmArgs<T> a)
{
    const int MT = TinyShape<KQ, NJ>::MT, ROWS = TinyShape<KQ, NJ>::ROWS;
    const int NPAD = 8 * NJ;
    extern __shared__ __align__(16) unsigned char smem[];
    T *w_s = reinterpret_cast<T *>(smem);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    T *xs = w_s + NPAD * a.ldk + warp * ROWS * a.ldk;

    tiny_copy_rows<T>(w_s, a.ldk, a.w, a.ldw, a.n, a.k, NPAD, a.kpad);
    const int64_t ntiles = (a.m + ROWS - 1) / ROWS;
    const int64_t stride = (int64_t)gridDim.x * kTinyWarps;
    int64_t tile = (int64_t)blockIdx.x * kTinyWarps + warp;
    if (tile < ntiles)
        tiny_copy_x<T, ROWS>(xs, a.ldk, a.x, a.ldx, tile * ROWS, a.m, a.k,
                             a.kpad);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    for (; tile < ntiles; tile += stride) {
        uint4 xa[MT][KQ], xb[MT][KQ];
        tiny_load_frags<T, KQ, MT>(xa, xb, xs, a.ldk);
        __syncwarp();
        if (tile + stride < ntiles)
            tiny_copy_x<T, ROWS>(xs, a.ldk, a.x, a.ldx,
                                 (tile + stride) * ROWS, a.m, a.k, a.kpad);
        cp_async_commit();

        float acc[MT][NJ][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NJ; ++j)
                acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] =
                    acc[mt][j][3] = 0.0f;
#pragma unroll
        for (int q = 0; q < KQ; ++q)
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const uint4 b = *reinterpret_cast<const uint4 *>(
                    w_s + (8 * j + g) * a.ldk + 32 * q + 8 * t);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816<T>(acc[mt][j], xa[mt][q].x, xb[mt][q].x,
                                xa[mt][q].y, xb[mt][q].y, b.x, b.y);
                    mma16816<T>(acc[mt][j], xa[mt][q].z, xb[mt][q].z,
                                xa[mt][q].w, xb[mt][q].w, b.z, b.w);
                }
            }

        /* C <- act(alpha acc + beta C + bias); C read only if beta != 0. */
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int64_t row = tile * ROWS + 16 * mt + g + 8 * half;
                if (row >= a.m)
                    continue;
                T *crow = a.c + row * a.cs_t;
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    const int f = 8 * j + 2 * t;
                    float v[2];
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        v[e] = a.alpha * acc[mt][j][2 * half + e];
                        if (f + e < a.n) {
                            if (a.beta != 0.0f)
                                v[e] += a.beta *
                                        fb_load_f32(crow[(f + e) * a.cs_f]);
                            if (a.bias)
                                v[e] += fb_load_f32(
                                    a.bias[a.bias_on_features ? f + e : row]);
                        }
                        v[e] = act_fast(a.act, v[e]);
                    }
                    if (a.c_pairs && f + 1 < a.n) {
                        *reinterpret_cast<uint32_t *>(crow + f) =
                            pack2<T>(v[0], v[1]);
                    } else {
                        if (f < a.n)
                            crow[f * a.cs_f] = fb_store_as<T>(v[0]);
                        if (f + 1 < a.n)
                            crow[(f + 1) * a.cs_f] = fb_store_as<T>(v[1]);
                    }
                }
            }
        cp_async_wait<0>();
        __syncwarp();
    }
    cp_async_wait<0>();
}

template <typename T, int KQ, int NJ>
static fb_status run_tiny_gemm(const fb_fused_env *env,
                               const TinyGemmArgs<T> &in, fb_dtype dtype,
                               fbf_mode mode, char *path,
                               size_t pathlen)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&tiny_gemm_kernel<T, KQ, NJ>);
    TinyGemmArgs<T> a = in;
    a.kpad = 32 * KQ;
    a.ldk = tiny_ld(a.kpad);
    const size_t smem = tiny_gemm_smem<T, KQ, NJ>(a.ldk);
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    const int ROWS = TinyShape<KQ, NJ>::ROWS;
    const int grid = tiny_grid(env, (a.m + ROWS - 1) / ROWS);
    void *args[] = {&a};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(grid), dim3(kTinyThreads), args, smem, env->stream));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "gemm_tiny_%s", tiny_suffix(dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

template <typename T, int KQ>
static fb_status tiny_gemm_nj(const fb_fused_env *env,
                              const TinyGemmArgs<T> &a, fb_dtype d,
                              fbf_mode mode, char *path,
                              size_t pathlen)
{
    if (a.n <= 32)
        return run_tiny_gemm<T, KQ, 4>(env, a, d, mode, path, pathlen);
    if (a.n <= 64)
        return run_tiny_gemm<T, KQ, 8>(env, a, d, mode, path, pathlen);
    return run_tiny_gemm<T, KQ, 16>(env, a, d, mode, path, pathlen);
}

template <typename T>
static fb_status tiny_gemm_kq(const fb_fused_env *env,
                              const TinyGemmArgs<T> &a, fb_dtype d,
                              fbf_mode mode, char *path,
                              size_t pathlen)
{
    if (a.k <= 32)
        return tiny_gemm_nj<T, 1>(env, a, d, mode, path, pathlen);
    if (a.k <= 64)
        return tiny_gemm_nj<T, 2>(env, a, d, mode, path, pathlen);
    if (a.k <= 128)
        return tiny_gemm_nj<T, 4>(env, a, d, mode, path, pathlen);
    return tiny_gemm_nj<T, 8>(env, a, d, mode, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* The "TN" gemm (op(A) rows and op(B) columns contiguous in k, nn.Linear's
 * own layout), 16-bit, one side <= 128 wide (the weights), k <= 256. */
fb_status fbf_tiny_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        fbf_mode mode, char *path, size_t pathlen)
{
    if (p->dtype == FB_DTYPE_F32)
        return fbf_tiny_gemm_f32(env, p, mode, path, pathlen);
    if (env->cc_major < 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (!p->transa || p->transb || p->k < 8 || p->k > 256 || p->k % 8 ||
        p->lda % 8 || p->ldb % 8 || !tiny_aligned16(p->a) ||
        !tiny_aligned16(p->b))
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m < 1 || p->n < 1 || p->m >= ((int64_t)1 << 40) ||
        p->n >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;

    /* C(i, j) = sum_c A(c, i) B(c, j): the weights are A's columns (M <=
     * 128, tokens = N, C(f, r) at c[f + r ldc]) or B's (N <= 128, tokens
     * = M, C(r, f) at c[r + f ldc]). */
    const void *w, *x;
    int64_t ldw, ldx, cs_t, cs_f, tokens;
    int features, bias_on_features;
    if (p->m <= 128) {
        w = p->a;
        ldw = p->lda;
        features = (int)p->m;
        x = p->b;
        ldx = p->ldb;
        tokens = p->n;
        cs_f = 1;
        cs_t = p->ldc;
        bias_on_features = p->ep.bias_per_row;
    } else if (p->n <= 128) {
        w = p->b;
        ldw = p->ldb;
        features = (int)p->n;
        x = p->a;
        ldx = p->lda;
        tokens = p->m;
        cs_f = p->ldc;
        cs_t = 1;
        bias_on_features = !p->ep.bias_per_row;
    } else {
        return FB_STATUS_NOT_SUPPORTED;
    }
    const int c_pairs = cs_f == 1 && ((uintptr_t)p->c & 3u) == 0 &&
                        cs_t % 2 == 0;
#define FBF_TINY_GEMM_ARGS(T)                                                 \
    TinyGemmArgs<T> a;                                                        \
    memset(&a, 0, sizeof a);                                                  \
    a.w = static_cast<const T *>(w);                                          \
    a.ldw = ldw;                                                              \
    a.x = static_cast<const T *>(x);                                          \
    a.ldx = ldx;                                                              \
    a.c = static_cast<T *>(p->c);                                             \
    a.cs_t = cs_t;                                                            \
    a.cs_f = cs_f;                                                            \
    a.bias = static_cast<const T *>(p->ep.bias);                              \
    a.bias_on_features = bias_on_features;                                    \
    a.alpha = p->alpha;                                                       \
    a.beta = p->beta;                                                         \
    a.act = p->ep.act;                                                        \
    a.m = tokens;                                                             \
    a.k = (int)p->k;                                                          \
    a.n = features;                                                           \
    a.c_pairs = c_pairs;
    if (p->dtype == FB_DTYPE_BF16) {
        FBF_TINY_GEMM_ARGS(__nv_bfloat16)
        return tiny_gemm_kq<__nv_bfloat16>(env, a, p->dtype, mode, path,
                                           pathlen);
    }
    FBF_TINY_GEMM_ARGS(__half)
    return tiny_gemm_kq<__half>(env, a, p->dtype, mode, path, pathlen);
#undef FBF_TINY_GEMM_ARGS
}
