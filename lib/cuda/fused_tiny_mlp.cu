/*
 * fused_tiny_mlp.cu -- the gated MLP at tiny widths (k <= 256, n <= 128, h
 * what shared memory holds), any number of rows: every weight sits in
 * shared memory for the whole launch, rows stream through in tiles of 32
 * (or 16) per warp (fused_tiny.cuh).
 *
 * mlp_tiny (16-bit): per warp and row tile, X's A fragments are loaded
 * once into registers; for each block of 16 hidden units the warp
 * computes gate and up (mma.sync m16n8k16, HMMA: A = X rows, B = Wg/Wu
 * rows with the permuted-k 16-byte fragments of fused_decode_stream.cuh),
 * applies act(gate + bg) .* (up + bu) in registers, and the accumulator
 * layout of that product IS the A fragment of the down projection's next
 * k16 step (rows g / g+8, columns 2t.. / 2t+8..), so H goes straight from
 * the gate/up accumulators into the Y accumulators: it never touches
 * shared or device memory. The next tile's X is copied (cp.async) into
 * the warp's buffer while the current tile computes.
 *
 *   Two numbers, bf16 64 -> 256 -> 64, m = 65536: FLOP 2 m (3 k h) =
 *   6.44 G -> ~8 us at the ~790 TFLOP/s dense rate (mma.sync reaches
 *   perhaps 2/3 of it: ~12 us); bytes: X + Y = 16.8 MB + weights 96 KB
 *   -> 3.9 us (H200). Compute-bound; plus m h = 16.8 M activations (the
 *   sigmoid forms, ~10 instructions each). Eager: 108 us (H200); goal
 *   <= 27 us. Prediction: 14-18 us.
 *
 * fp32 data: fused_tiny_f32.cu.
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"
#include "fused_tiny.cuh"

namespace fbf {

template <typename T> struct TinyMlpArgs {
    const T *x;
    int64_t ldx;
    const T *wg, *bg, *wu, *bu, *wd, *bd;
    T *y;
    int64_t ldy;
    int64_t m;
    int k, h, n;
    fb_activation act;
    int kpad, hpad, ldk, ldh;
    int y_pairs; /* Y allows 4-byte stores of column pairs */
};

/* Shared memory: Wg, Wu (hpad x ldk), Wd (npad x ldh), biases (fp32,
 * zero-padded), then one X tile buffer per warp. */
template <typename T, int KQ, int NJ>
__host__ __device__ static inline size_t tiny_mlp_smem(int hpad, int ldk,
                                                       int ldh)
{
    const int ROWS = TinyShape<KQ, NJ>::ROWS;
    return (size_t)2 * hpad * ldk * sizeof(T) +
           (size_t)8 * NJ * ldh * sizeof(T) +
           (size_t)(2 * hpad + 8 * NJ) * 4 +
           (size_t)kTinyWarps * ROWS * ldk * sizeof(T);
}

template <typename T, int KQ, int NJ>
__global__ void __launch_bounds__(kTinyThreads, 1)
    tiny_mlp_kernel(const TinyMlpArgs<T> a)
{
    const int MT = TinyShape<KQ, NJ>::MT, ROWS = TinyShape<KQ, NJ>::ROWS;
    const int NPAD = 8 * NJ;
    extern __shared__ __align__(16) unsigned char smem[];
    T *wg_s = reinterpret_cast<T *>(smem);
    T *wu_s = wg_s + a.hpad * a.ldk;
    T *wd_s = wu_s + a.hpad * a.ldk;
    float *bg_s = reinterpret_cast<float *>(wd_s + NPAD * a.ldh);
    float *bu_s = bg_s + a.hpad;
    float *bd_s = bu_s + a.hpad;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    T *xs = reinterpret_cast<T *>(bd_s + NPAD) + warp * ROWS * a.ldk;

    tiny_copy_rows<T>(wg_s, a.ldk, a.wg, a.k, a.h, a.k, a.hpad, a.kpad);
    tiny_copy_rows<T>(wu_s, a.ldk, a.wu, a.k, a.h, a.k, a.hpad, a.kpad);
    tiny_copy_rows<T>(wd_s, a.ldh, a.wd, a.h, a.n, a.h, NPAD, a.hpad);
    for (int i = threadIdx.x; i < a.hpad; i += kTinyThreads) {
        bg_s[i] = (a.bg && i < a.h) ? fb_load_f32(a.bg[i]) : 0.0f;
        bu_s[i] = (a.bu && i < a.h) ? fb_load_f32(a.bu[i]) : 0.0f;
    }
    for (int i = threadIdx.x; i < NPAD; i += kTinyThreads)
        bd_s[i] = (a.bd && i < a.n) ? fb_load_f32(a.bd[i]) : 0.0f;

    const int64_t ntiles = (a.m + ROWS - 1) / ROWS;
    const int64_t stride = (int64_t)gridDim.x * kTinyWarps;
    int64_t tile = (int64_t)blockIdx.x * kTinyWarps + warp;
    if (tile < ntiles)
        tiny_copy_x<T, ROWS>(xs, a.ldk, a.x, a.ldx, tile * ROWS, a.m, a.k,
                             a.kpad);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads(); /* weights, biases and each warp's first tile */

    for (; tile < ntiles; tile += stride) {
        uint4 xa[MT][KQ], xb[MT][KQ];
        tiny_load_frags<T, KQ, MT>(xa, xb, xs, a.ldk);
        __syncwarp();
        /* The buffer is free again: fetch the next tile meanwhile. */
        if (tile + stride < ntiles)
            tiny_copy_x<T, ROWS>(xs, a.ldk, a.x, a.ldx,
                                 (tile + stride) * ROWS, a.m, a.k, a.kpad);
        cp_async_commit();

        float yacc[MT][NJ][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NJ; ++j)
                yacc[mt][j][0] = yacc[mt][j][1] = yacc[mt][j][2] =
                    yacc[mt][j][3] = 0.0f;

        for (int hb = 0; hb < a.hpad; hb += 16) {
            float gacc[MT][2][4], uacc[MT][2][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        gacc[mt][nt][q] = uacc[mt][nt][q] = 0.0f;
            tiny_layer1<T, KQ, MT>(gacc, xa, xb, wg_s, a.ldk, hb);
            tiny_layer1<T, KQ, MT>(uacc, xa, xb, wu_s, a.ldk, hb);

            /* H = act(gate + bg) .* (up + bu), packed as the A fragment
             * of the down projection over hidden units hb..hb+15:
             * element q of n-tile nt is column hb + 8 nt + 2t + (q & 1),
             * row g + 8 (q >> 1). */
            float hv[MT * 8];
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                const int c = hb + 8 * nt + 2 * t;
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        hv[mt * 8 + nt * 4 + q] =
                            gacc[mt][nt][q] + bg_s[c + (q & 1)];
            }
            act_fast_all<MT * 8>(a.act, hv);
            uint32_t ha[MT][4];
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                const int c = hb + 8 * nt + 2 * t;
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    float h[4];
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        h[q] = hv[mt * 8 + nt * 4 + q] *
                               (uacc[mt][nt][q] + bu_s[c + (q & 1)]);
                    ha[mt][2 * nt] = pack2<T>(h[0], h[1]);
                    ha[mt][2 * nt + 1] = pack2<T>(h[2], h[3]);
                }
            }
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const T *wrow = wd_s + (8 * j + g) * a.ldh + hb + 2 * t;
                const uint32_t b0 = *reinterpret_cast<const uint32_t *>(wrow);
                const uint32_t b1 =
                    *reinterpret_cast<const uint32_t *>(wrow + 8);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
                    mma16816<T>(yacc[mt][j], ha[mt][0], ha[mt][1], ha[mt][2],
                                ha[mt][3], b0, b1);
            }
        }

        /* Y = acc + bd, rows g and g+8 of each m-tile, columns pairs. */
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int64_t row = tile * ROWS + 16 * mt + g + 8 * half;
                if (row >= a.m)
                    continue;
                T *yrow = a.y + row * a.ldy;
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    const int c = 8 * j + 2 * t;
                    const float v0 = yacc[mt][j][2 * half] + bd_s[c];
                    const float v1 = yacc[mt][j][2 * half + 1] + bd_s[c + 1];
                    if (a.y_pairs && c + 1 < a.n) {
                        *reinterpret_cast<uint32_t *>(yrow + c) =
                            pack2<T>(v0, v1);
                    } else {
                        if (c < a.n)
                            yrow[c] = fb_store_as<T>(v0);
                        if (c + 1 < a.n)
                            yrow[c + 1] = fb_store_as<T>(v1);
                    }
                }
            }
        cp_async_wait<0>();
        __syncwarp();
    }
    cp_async_wait<0>();
}

template <typename T, int KQ, int NJ>
static fb_status run_tiny_mlp(const fb_fused_env *env,
                              const fb_mlp_problem *p,
                              const fbf_tuning *tune, char *path,
                              size_t pathlen)
{
    static TinyKernelState state;
    const void *func =
        reinterpret_cast<const void *>(&tiny_mlp_kernel<T, KQ, NJ>);
    TinyMlpArgs<T> a;
    memset(&a, 0, sizeof a);
    a.kpad = 32 * KQ;
    a.hpad = (int)((p->h + 15) / 16 * 16);
    a.ldk = tiny_ld(a.kpad);
    a.ldh = a.hpad + 8; /* 4-byte reads of 8 rows x 4 lanes: stride 4 banks */
    const size_t smem = tiny_mlp_smem<T, KQ, NJ>(a.hpad, a.ldk, a.ldh);
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (tune && tune->dry_run)
        return FB_STATUS_SUCCESS;
    a.x = static_cast<const T *>(p->x);
    a.ldx = p->ldx;
    a.wg = static_cast<const T *>(p->wg);
    a.bg = static_cast<const T *>(p->bg);
    a.wu = static_cast<const T *>(p->wu);
    a.bu = static_cast<const T *>(p->bu);
    a.wd = static_cast<const T *>(p->wd);
    a.bd = static_cast<const T *>(p->bd);
    a.y = static_cast<T *>(p->y);
    a.ldy = p->ldy;
    a.m = p->m;
    a.k = (int)p->k;
    a.h = (int)p->h;
    a.n = (int)p->n;
    a.act = p->gate_act;
    a.y_pairs = ((uintptr_t)p->y & 3u) == 0 && p->ldy % 2 == 0;
    const int ROWS = TinyShape<KQ, NJ>::ROWS;
    const int grid = tiny_grid(env, (p->m + ROWS - 1) / ROWS);
    void *args[] = {&a};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(grid), dim3(kTinyThreads), args, smem, env->stream));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "mlp_tiny_%s", tiny_suffix(p->dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

template <typename T, int KQ>
static fb_status tiny_mlp_nj(const fb_fused_env *env, const fb_mlp_problem *p,
                             const fbf_tuning *tune, char *path,
                             size_t pathlen)
{
    if (p->n <= 32)
        return run_tiny_mlp<T, KQ, 4>(env, p, tune, path, pathlen);
    if (p->n <= 64)
        return run_tiny_mlp<T, KQ, 8>(env, p, tune, path, pathlen);
    return run_tiny_mlp<T, KQ, 16>(env, p, tune, path, pathlen);
}

template <typename T>
static fb_status tiny_mlp_kq(const fb_fused_env *env, const fb_mlp_problem *p,
                             const fbf_tuning *tune, char *path,
                             size_t pathlen)
{
    if (p->k <= 32)
        return tiny_mlp_nj<T, 1>(env, p, tune, path, pathlen);
    if (p->k <= 64)
        return tiny_mlp_nj<T, 2>(env, p, tune, path, pathlen);
    if (p->k <= 128)
        return tiny_mlp_nj<T, 4>(env, p, tune, path, pathlen);
    return tiny_mlp_nj<T, 8>(env, p, tune, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* 16-bit, widths that fit: k <= 256, n <= 128 (registers), h as shared
 * memory allows; 16-byte rows (k, h multiples of 8, aligned pointers). */
fb_status fbf_tiny_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       const fbf_tuning *tune, char *path, size_t pathlen)
{
    if (p->dtype == FB_DTYPE_F32)
        return fbf_tiny_mlp_f32(env, p, tune, path, pathlen);
    if (env->cc_major < 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m < 1 || p->k < 8 || p->k > 256 || p->n < 1 || p->n > 128 ||
        p->h < 8 || p->h > 4096 || p->m >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;
    if (p->k % 8 || p->h % 8 || p->ldx % 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (!tiny_aligned16(p->x) || !tiny_aligned16(p->wg) ||
        !tiny_aligned16(p->wu) || !tiny_aligned16(p->wd))
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype == FB_DTYPE_BF16)
        return tiny_mlp_kq<__nv_bfloat16>(env, p, tune, path, pathlen);
    return tiny_mlp_kq<__half>(env, p, tune, path, pathlen);
}
