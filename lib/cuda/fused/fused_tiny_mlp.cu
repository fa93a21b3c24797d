/* SPDX-License-Identifier: BSD-3-Clause */
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
 *   The kernel is bound by instruction issue (the matrix products and one
 *   activation per hidden unit and row), so what keeps the instruction
 *   count down: the MUFU forms without denormal fix-ups (.ftz),
 *   compile-time strides, Wd in 16-column blocks (one 8-byte read per
 *   down HMMA), mma not volatile, 16 warps of one 16-row tile where 128
 *   registers suffice, and X tiles stored as the A operand's register
 *   quads (tiny_copy_x_pairs). Versions and measurements:
 *   docs/tiny-kernels.md.
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
    int kpad, hpad;
    int y_pairs; /* Y allows 4-byte stores of column pairs */
};

/* One kernel configuration: KQ (k padded to 32 KQ), NJ (n padded to
 * 8 NJ), MT 16-row m-tiles per warp tile, WARPS per CTA (one CTA per SM).
 * MT = 2 halves the shared-memory reads per HMMA but needs ~240 registers
 * (8 warps); MT = 1 fits in 128 (16 warps: twice the warps to hide the
 * HMMA and MUFU latencies). LDK: row stride of Wg, Wu and the X tiles in
 * shared memory, a compile-time constant so that every fragment address
 * is a fixed offset from a per-block base. */
template <int KQ_, int NJ_, int MT_, int WARPS_> struct TinyMlpShape {
    static const int KQ = KQ_, NJ = NJ_, MT = MT_, WARPS = WARPS_;
    static const int THREADS = 32 * WARPS, ROWS = 16 * MT;
    static const int KPAD = 32 * KQ, NPAD = 8 * NJ;
    static const int LDK = (KPAD * 2) % 128 == 0 ? KPAD + 32 : KPAD;
    /* X tile: 8 MT pair-rows of PSTRIDE 4-byte words (below) */
    static const int PSTRIDE = KPAD + 4;
    static const int XWORDS = 8 * MT * PSTRIDE;
};

/* Shared memory: Wg, Wu (hpad x LDK), Wd in 16-column blocks (below),
 * biases (fp32, zero-padded), then one X tile buffer per warp (below). */
template <typename T, typename S>
__host__ __device__ static inline size_t tiny_mlp_smem(int hpad)
{
    return (size_t)2 * hpad * S::LDK * sizeof(T) +
           (size_t)S::NPAD * hpad * sizeof(T) +
           (size_t)(2 * hpad + S::NPAD) * 4 +
           (size_t)S::WARPS * S::XWORDS * 4;
}

/* A warp's X tile, rows [row0, row0 + 16 MT), as the HMMA's A operand
 * wants it: pair-row p = 8 mt + g holds rows 16 mt + g and 16 mt + g + 8
 * interleaved by 4-byte words (word 2u: row 16 mt + g's columns 2u,
 * 2u + 1; word 2u + 1: the same columns of row 16 mt + g + 8), so that one 16-byte read at word 2u gives the four
 * registers {a0, a1, a2, a3} of a k16 step whole. Read as two separate
 * rows, the compiler built every quad with four moves before each HMMA
 * (64 a block of 16 hidden units). PSTRIDE = KPAD + 4 words puts pair-row
 * g + 1 four banks after g: the quarter-warp's reads do not conflict.
 * Zero where row >= m or column >= k; 4-byte cp.async, not waited for. */
template <typename T, typename S>
__device__ __forceinline__ void tiny_copy_x_pairs(uint32_t *xs, const T *x,
                                                  int64_t ldx, int64_t row0,
                                                  int64_t m, int k)
{
    const int lane = threadIdx.x & 31, units = S::KPAD / 2;
    for (int i = lane; i < S::ROWS * units; i += 32) {
        const int r = i / units, u = i - r * units;
        const int p = (r >> 4) * 8 + (r & 7), upper = (r >> 3) & 1;
        const bool in = row0 + r < m && 2 * u < k; /* k % 8 == 0 */
        cp_async4(xs + p * S::PSTRIDE + 2 * u + upper,
                  in ? x + (row0 + r) * ldx + 2 * u : x, in ? 4 : 0);
    }
}

/* Wd (n x h, row-major) into shared memory as blocks of 16 hidden units:
 * block b holds NPAD rows x 16 columns, 32 bytes a row, with the columns
 * of each row ordered 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15, so that lane
 * (g, t) finds both B registers of its down-projection HMMA (columns 2t,
 * 2t+1 and 2t+8, 2t+9 of row g) in one 8-byte word, and the warp's 32
 * words are 256 contiguous bytes (two conflict-free wavefronts). Zero
 * outside n x h. 4-byte cp.async, not yet waited for (plain loads would
 * be a dependent load-store chain per thread, a long start-up). */
template <typename T, int NPAD>
__device__ __forceinline__ void tiny_copy_wd(uint32_t *dst, const T *wd,
                                             int n, int h, int hpad)
{
    const int pairs = NPAD * hpad / 2;
    for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
        /* destination word i: block b, row r, word w of the row */
        const int b = i / (NPAD * 8), rem = i - b * NPAD * 8;
        const int r = rem / 8, w = rem - r * 8;
        const int col = 16 * b + 2 * (w >> 1) + 8 * (w & 1);
        const bool in = r < n && col < h; /* h % 8 == 0: col + 1 < h too */
        cp_async4(dst + i, in ? wd + (int64_t)r * h + col : wd, in ? 4 : 0);
    }
}

/* gate and up of hidden units hb..hb+15 for the warp's row tile: B
 * fragments of weight rows hb + 8 nt + g (permuted k, fused_tiny.cuh). */
template <typename T, typename S>
__device__ __forceinline__ void tiny_gate_up(int hb,
                                             const uint4 (&af)[S::MT][S::KQ][2],
                                             const T *wg_l, const T *wu_l,
                                             float (&gacc)[S::MT][2][4],
                                             float (&uacc)[S::MT][2][4])
{
#pragma unroll
    for (int mt = 0; mt < S::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                gacc[mt][nt][q] = uacc[mt][nt][q] = 0.0f;
#pragma unroll
    for (int q = 0; q < S::KQ; ++q)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
            const int off = (hb + 8 * nt) * S::LDK + 32 * q;
            const uint4 bgv = *reinterpret_cast<const uint4 *>(wg_l + off);
            const uint4 buv = *reinterpret_cast<const uint4 *>(wu_l + off);
#pragma unroll
            for (int mt = 0; mt < S::MT; ++mt) {
                const uint4 a0 = af[mt][q][0], a1 = af[mt][q][1];
                mma16816<T>(gacc[mt][nt], a0.x, a0.y, a0.z, a0.w, bgv.x,
                            bgv.y);
                mma16816<T>(uacc[mt][nt], a0.x, a0.y, a0.z, a0.w, buv.x,
                            buv.y);
                mma16816<T>(gacc[mt][nt], a1.x, a1.y, a1.z, a1.w, bgv.z,
                            bgv.w);
                mma16816<T>(uacc[mt][nt], a1.x, a1.y, a1.z, a1.w, buv.z,
                            buv.w);
            }
        }
}

/* H = act(gate + bg) .* (up + bu) for hidden units hb..hb+15, packed as
 * the A fragment of the down projection (element q of n-tile nt is
 * column hb + 8 nt + 2t + (q & 1), row g + 8 (q >> 1)), then Y += H Wd^T
 * over those units (Wd block hb / 16, rows 8 j + g). */
template <typename T, typename S>
__device__ __forceinline__ void tiny_act_down(int hb, fb_activation act,
                                              const float (&gacc)[S::MT][2][4],
                                              const float (&uacc)[S::MT][2][4],
                                              const float *bg_s,
                                              const float *bu_s,
                                              const uint2 *wd_l,
                                              float (&yacc)[S::MT][S::NJ][4])
{
    const int MT = S::MT, t = threadIdx.x & 3;
    float hv[MT * 8];
    float2 bgp[2], bup[2];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
        bgp[nt] = *reinterpret_cast<const float2 *>(bg_s + hb + 8 * nt + 2 * t);
        bup[nt] = *reinterpret_cast<const float2 *>(bu_s + hb + 8 * nt + 2 * t);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                hv[mt * 8 + nt * 4 + q] =
                    gacc[mt][nt][q] + ((q & 1) ? bgp[nt].y : bgp[nt].x);
    }
    act_fast_all<MT * 8>(act, hv);
    uint32_t ha[MT][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            float hq[4];
#pragma unroll
            for (int q = 0; q < 4; ++q)
                hq[q] = hv[mt * 8 + nt * 4 + q] *
                        (uacc[mt][nt][q] + ((q & 1) ? bup[nt].y : bup[nt].x));
            ha[mt][2 * nt] = pack2<T>(hq[0], hq[1]);
            ha[mt][2 * nt + 1] = pack2<T>(hq[2], hq[3]);
        }
    const uint2 *wdb = wd_l + (hb / 16) * (S::NPAD * 4);
#pragma unroll
    for (int j = 0; j < S::NJ; ++j) {
        const uint2 b = wdb[j * 32];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
            mma16816<T>(yacc[mt][j], ha[mt][0], ha[mt][1], ha[mt][2],
                        ha[mt][3], b.x, b.y);
    }
}

template <typename T, typename S>
__global__ void __launch_bounds__(S::THREADS, 1)
    tiny_mlp_kernel(const TinyMlpArgs<T> a)
{
    const int MT = S::MT, KQ = S::KQ, NJ = S::NJ, LDK = S::LDK;
    const int ROWS = S::ROWS, NPAD = S::NPAD, WARPS = S::WARPS;
    extern __shared__ __align__(16) unsigned char smem[];
    T *wg_s = reinterpret_cast<T *>(smem);
    T *wu_s = wg_s + a.hpad * LDK;
    uint32_t *wd_s = reinterpret_cast<uint32_t *>(wu_s + a.hpad * LDK);
    float *bg_s = reinterpret_cast<float *>(wd_s + NPAD * a.hpad / 2);
    float *bu_s = bg_s + a.hpad;
    float *bd_s = bu_s + a.hpad;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    uint32_t *xs =
        reinterpret_cast<uint32_t *>(bd_s + NPAD) + warp * S::XWORDS;

    tiny_copy_rows<T>(wg_s, LDK, a.wg, a.k, a.h, a.k, a.hpad, a.kpad);
    tiny_copy_rows<T>(wu_s, LDK, a.wu, a.k, a.h, a.k, a.hpad, a.kpad);
    tiny_copy_wd<T, NPAD>(wd_s, a.wd, a.n, a.h, a.hpad);
    for (int i = threadIdx.x; i < a.hpad; i += S::THREADS) {
        bg_s[i] = (a.bg && i < a.h) ? fb_load_f32(a.bg[i]) : 0.0f;
        bu_s[i] = (a.bu && i < a.h) ? fb_load_f32(a.bu[i]) : 0.0f;
    }
    for (int i = threadIdx.x; i < NPAD; i += S::THREADS)
        bd_s[i] = (a.bd && i < a.n) ? fb_load_f32(a.bd[i]) : 0.0f;

    const int64_t ntiles = (a.m + ROWS - 1) / ROWS;
    const int64_t stride = (int64_t)gridDim.x * WARPS;
    int64_t tile = (int64_t)blockIdx.x * WARPS + warp;
    if (tile < ntiles)
        tiny_copy_x_pairs<T, S>(xs, a.x, a.ldx, tile * ROWS, a.m, a.k);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads(); /* weights, biases and each warp's first tile */

    /* Per-lane bases: fragment addresses below are these plus constants
     * (and hb times a constant). */
    const T *wg_l = wg_s + g * LDK + 8 * t;
    const T *wu_l = wu_s + g * LDK + 8 * t;
    const uint2 *wd_l = reinterpret_cast<const uint2 *>(wd_s) + g * 4 + t;

    for (; tile < ntiles; tile += stride) {
        /* A fragments: af[mt][q][s] for k16 step s of k-block q (the
         * permuted-k order of fused_tiny.cuh: lane t holds columns
         * 32 q + 8 t .. + 7, .x/.y of the old row fragments in step 0) */
        uint4 af[MT][KQ][2];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int q = 0; q < KQ; ++q)
#pragma unroll
                for (int st = 0; st < 2; ++st)
                    af[mt][q][st] = *reinterpret_cast<const uint4 *>(
                        xs + (8 * mt + g) * S::PSTRIDE + 32 * q + 8 * t + 4 * st);
        __syncwarp();
        /* The buffer is free again: fetch the next tile meanwhile. */
        if (tile + stride < ntiles)
            tiny_copy_x_pairs<T, S>(xs, a.x, a.ldx, (tile + stride) * ROWS,
                                    a.m, a.k);
        cp_async_commit();

        float yacc[MT][NJ][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NJ; ++j)
                yacc[mt][j][0] = yacc[mt][j][1] = yacc[mt][j][2] =
                    yacc[mt][j][3] = 0.0f;

        /* Blocks of 16 hidden units, one at a time: issuing block b + 1's
         * gate/up before block b's activation needs 12 warps of 160
         * registers to hold both, which measured slower than this at 16
         * warps (docs/tiny-kernels.md). */
        for (int hb = 0; hb < a.hpad; hb += 16) {
            float gacc[MT][2][4], uacc[MT][2][4];
            tiny_gate_up<T, S>(hb, af, wg_l, wu_l, gacc, uacc);
            tiny_act_down<T, S>(hb, a.act, gacc, uacc, bg_s, bu_s, wd_l, yacc);
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

template <typename T, typename S>
static fb_status run_tiny_mlp(const fb_fused_env *env,
                              const fb_mlp_problem *p,
                              fbf_mode mode, char *path,
                              size_t pathlen)
{
    static TinyKernelState state;
    const void *func = reinterpret_cast<const void *>(&tiny_mlp_kernel<T, S>);
    TinyMlpArgs<T> a;
    memset(&a, 0, sizeof a);
    a.kpad = S::KPAD;
    a.hpad = (int)((p->h + 15) / 16 * 16);
    const size_t smem = tiny_mlp_smem<T, S>(a.hpad);
    if (smem > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    tiny_mlp_operands<T>(a, p);
    a.y_pairs = ((uintptr_t)p->y & 3u) == 0 && p->ldy % 2 == 0;
    const int64_t ntiles = (p->m + S::ROWS - 1) / S::ROWS;
    const int64_t need = (ntiles + S::WARPS - 1) / S::WARPS;
    const int grid = (int)(need < env->sm_count ? need : env->sm_count);
    void *args[] = {&a};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(grid), dim3(S::THREADS), args, smem, env->stream));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "mlp_tiny_%s", tiny_suffix(p->dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

/* The configuration: the tiny_variant knob 1 = MT as the registers allow at
 * 8 warps, 2 = MT 1 at 16 warps; 0 = the default:
 * variant 2 where it fits in 128 registers without spilling (k <= 128 and
 * n <= 64: nvcc 13 for sm_90 spills beyond) and its shared memory fits,
 * else 1. */
template <typename T, int KQ, int NJ>
static fb_status tiny_mlp_variant(const fb_fused_env *env,
                                  const fb_mlp_problem *p,
                                  fbf_mode mode, char *path,
                                  size_t pathlen)
{
    typedef TinyMlpShape<KQ, NJ, (16 * KQ + 8 * NJ) <= 128 ? 2 : 1, 8> V1;
    typedef TinyMlpShape<KQ, NJ, 1, 16> V2;
    const int v = FBF_KNOB(tiny_variant);
    if (v == 1 || (v == 0 && !(KQ <= 4 && NJ <= 8)))
        return run_tiny_mlp<T, V1>(env, p, mode, path, pathlen);
    fb_status st = run_tiny_mlp<T, V2>(env, p, mode, path, pathlen);
    if (st == FB_STATUS_NOT_SUPPORTED && v == 0)
        st = run_tiny_mlp<T, V1>(env, p, mode, path, pathlen);
    return st;
}

template <typename T, int KQ>
static fb_status tiny_mlp_nj(const fb_fused_env *env, const fb_mlp_problem *p,
                             fbf_mode mode, char *path,
                             size_t pathlen)
{
    if (p->n <= 32)
        return tiny_mlp_variant<T, KQ, 4>(env, p, mode, path, pathlen);
    if (p->n <= 64)
        return tiny_mlp_variant<T, KQ, 8>(env, p, mode, path, pathlen);
    return tiny_mlp_variant<T, KQ, 16>(env, p, mode, path, pathlen);
}

template <typename T>
static fb_status tiny_mlp_kq(const fb_fused_env *env, const fb_mlp_problem *p,
                             fbf_mode mode, char *path,
                             size_t pathlen)
{
    if (p->k <= 32)
        return tiny_mlp_nj<T, 1>(env, p, mode, path, pathlen);
    if (p->k <= 64)
        return tiny_mlp_nj<T, 2>(env, p, mode, path, pathlen);
    if (p->k <= 128)
        return tiny_mlp_nj<T, 4>(env, p, mode, path, pathlen);
    return tiny_mlp_nj<T, 8>(env, p, mode, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* 16-bit, widths that fit: k <= 256, n <= 128 (registers), h as shared
 * memory allows; 16-byte rows (k, h multiples of 8, aligned pointers). */
fb_status fbf_tiny_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       fbf_mode mode, char *path, size_t pathlen)
{
    if (p->dtype == FB_DTYPE_F32)
        return fbf_tiny_mlp_f32(env, p, mode, path, pathlen);
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
    /* wgmma where it covers the call (variants 0, 3, 4) */
    const int v = FBF_KNOB(tiny_variant);
    if (v == 0 || v >= 3) {
        const fb_status st = fbf_tiny_mlp_wgmma(env, p, mode, path, pathlen);
        if (st != FB_STATUS_NOT_SUPPORTED || v >= 3)
            return st;
    }
    if (p->dtype == FB_DTYPE_BF16)
        return tiny_mlp_kq<__nv_bfloat16>(env, p, mode, path, pathlen);
    return tiny_mlp_kq<__half>(env, p, mode, path, pathlen);
}
