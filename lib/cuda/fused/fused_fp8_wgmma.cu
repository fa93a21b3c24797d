/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_wgmma.cu -- e4m3 weights for prefill-sized calls on Hopper:
 * the weights widened INSIDE the GEMM, as wgmma's register operand
 * (sm_90a). D^T = W X^T: weight rows (channels) on wgmma's M, tokens on
 * its N.
 *
 * Per CTA (one output tile: 128 channels x BN tokens, BN = 64, 128 or
 * 256), 384 threads:
 *   - warpgroup 0, one thread: per k-block of 64, waits until a stage is
 *     free, announces its bytes on the stage's "full" mbarrier and issues
 *     the bulk tensor copies: the W tile (e4m3 bytes, a UINT8 tensor map,
 *     boxes of 64 bytes x 64 rows, 64-byte swizzle) and the X tile
 *     (16-bit, K-major, 128-byte swizzle: the layout the wgmma B
 *     descriptor of fused_wgmma.cuh reads). Rows or columns past the
 *     matrices arrive as zeros, so no edge case reaches the MMA;
 *   - warpgroups 1 and 2, 64 weight rows each (16 a warp): per k16 step
 *     lane (g, t) reads its A-fragment bytes from the W tile (rows g and
 *     g + 8 of its warp's 16, k = 2t, 2t + 1 and 2t + 8, 2t + 9 of the
 *     step: four 2-byte shared loads, conflict-free under the 64-byte
 *     swizzle), widens each pair exactly (fb_fp8_pair: every e4m3 value
 *     is an fp16 and a bf16) and issues wgmma m64nBNk16 with A from
 *     registers and B = the X tile. A k-block's fragments stay untouched
 *     until its wgmma group is complete (two fragment sets in turn), and
 *     the stage is released then (one arrival per warp).
 *   - epilogue from the accumulators, per output the e4m3 contract
 *     (fb_fp8_finish's order): v = alpha * (dot * scale[j]) + beta C +
 *     bias[j], act(v), one rounding. No atomics: each output is written
 *     by one thread, so repeated calls give the same bits.
 * Dual form (the MLP's gate and up): the CTA's 128 rows are 64 rows of Wg
 * and the same 64 rows of Wu, laid out so that rows g and g + 8 of each
 * warp's 16 are Wg's and Wu's row of one channel: a thread's accumulators
 * hold G and U of the same channel and tokens, and H = act(sg G + bg) .*
 * (su U + bu) is formed in registers and written once in the input type.
 *
 * Tile order: the token tiles of one weight tile are adjacent in the
 * grid, so the CTAs that run together share each weight tile in L2 and
 * the weights leave DRAM once.
 */
#include <stdio.h>
#include <string.h>
#include <cuda.h> /* CUtensorMap and its enums (types only) */
#include "fused_internal.h"
#include "fused_tma_map.h"
#include "fused_tiny.cuh"
#include "fused_wgmma.cuh"
#include "fused_fp8_device.cuh"

namespace fbf {

enum {
    kEwBK = 64,          /* k-block: 64 weight bytes, 64 X elements a row */
    kEwRows = 128,       /* weight rows a CTA: two warpgroups of 64 */
    kEwThreads = 384,    /* warpgroup 0 loads, 1 and 2 compute */
    kEwWBytes = kEwRows * kEwBK, /* W tile a stage: 8 KiB */
    kEwBudget = 200 * 1024,
    kEwOutLd = kEwRows + 4 /* fp32 a staged output row (token) */
};

/* BN = 64 runs two CTAs a SM (half the shared memory and registers
 * each), so that one's epilogue overlaps the other's main loop and the
 * narrow tiles of small m all run at once. */
template <int BN> struct EwShape {
    static const int NACC = BN / 2; /* accumulators a thread (m64nBN) */
    static const int MINB = BN == 64 ? 2 : 1; /* CTAs a SM */
    static const int X_BYTES = BN * 128;
    static const int STAGE_BYTES = kEwWBytes + X_BYTES;
    static const int STAGES_FIT = kEwBudget / MINB / STAGE_BYTES;
    static const int STAGES = STAGES_FIT > 12 ? 12 : STAGES_FIT;
    static_assert(STAGES * STAGE_BYTES >= BN * kEwOutLd * 4,
                  "the staged outputs fit the ring");
    static const size_t SMEM =
        1024 + (size_t)STAGES * STAGE_BYTES + 2 * STAGES * sizeof(uint64_t);
};

template <typename T> struct EwArgs {
    T *c;          /* output: c[token * ldc + channel] */
    int64_t ldc;
    const T *bias, *bias2;         /* bias (dual: bg, bu), or NULL */
    const float *scale, *scale2;   /* scale (dual: sg, su) */
    float alpha, beta;
    int act;
    int m, n, k;   /* tokens, channels (dual: hidden), reduction */
    int ntok;      /* token tiles */
    int c_pairs;   /* C allows 4-byte stores of channel pairs */
};

#if FB_WGMMA_BODY

/* Lane (g, t)'s byte offsets in a 64-row, 64-byte-swizzled W region: row
 * r's 16-byte chunk j lies at chunk j ^ ((r >> 1) & 3), byte 2t of it is
 * the step's (k = 2t, 2t + 1) pair and byte 2t + 8 the (2t + 8, 2t + 9)
 * pair. */
__device__ __forceinline__ uint32_t ew_off(int r, int s, int t)
{
    return (uint32_t)(r * 64 + ((s ^ ((r >> 1) & 3)) << 4) + 2 * t);
}

/* Barrier of the 256 computing threads (warpgroups 1 and 2). */
__device__ __forceinline__ void consumers_sync()
{
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
}

__device__ __forceinline__ uint32_t lds_u16(uint32_t addr)
{
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
    return v;
}

/* One k-block of a consumer warpgroup: its 4 steps' fragments widened
 * into af, then four wgmma over the X tile at xs. */
template <typename T, int NACC>
__device__ __forceinline__ void ew_kblock(float (&acc)[NACC],
                                          uint32_t (&af)[16], uint32_t ws,
                                          const uint32_t (&o0)[4],
                                          const uint32_t (&o1)[4],
                                          uint32_t xs, bool first)
{
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const uint32_t b00 = lds_u16(ws + o0[s]);
        const uint32_t b10 = lds_u16(ws + o1[s]);
        const uint32_t b01 = lds_u16(ws + o0[s] + 8);
        const uint32_t b11 = lds_u16(ws + o1[s] + 8);
        af[4 * s + 0] = fb_fp8_pair<T>(b00);
        af[4 * s + 1] = fb_fp8_pair<T>(b10);
        af[4 * s + 2] = fb_fp8_pair<T>(b01);
        af[4 * s + 3] = fb_fp8_pair<T>(b11);
    }
    wg_fence();
    const uint64_t db = wg_desc(xs);
#pragma unroll
    for (int s = 0; s < 4; ++s)
        wgmma_rs_n<T, NACC>(acc, af[4 * s], af[4 * s + 1], af[4 * s + 2],
                            af[4 * s + 3], db + 2 * s, !first || s > 0);
    wg_commit();
}

#endif /* FB_WGMMA_BODY */

template <typename T, int BN, bool DUAL>
__global__ void __launch_bounds__(kEwThreads, EwShape<BN>::MINB)
    e4m3_wgmma_kernel(const __grid_constant__ CUtensorMap tm_x,
                      const __grid_constant__ CUtensorMap tm_w,
                      const __grid_constant__ CUtensorMap tm_w2,
                      const EwArgs<T> a)
{
#if FB_WGMMA_BODY
    typedef EwShape<BN> S;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem =
        smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    uint64_t *full =
        reinterpret_cast<uint64_t *>(smem + S::STAGES * S::STAGE_BYTES);
    uint64_t *empty = full + S::STAGES;
    const int wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S::STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8); /* one arrival per computing warp */
        }
        mbar_fence_init();
    }
    __syncthreads();
    const int kblocks = (a.k + kEwBK - 1) / kEwBK;
    const int u = blockIdx.x;
    const int m0 = (u % a.ntok) * BN;
    const int c0 = (u / a.ntok) * (DUAL ? kEwRows / 2 : kEwRows);

    if (wg == 0) {
        /* 40 + 2 x 232 registers a thread (one CTA a SM); two CTAs a SM
         * keep the launch's 80 (an increase would have to wait for
         * registers the loading warpgroup cannot free) */
        if (S::MINB == 1)
            setmaxnreg_dec<40>();
        if (threadIdx.x != 0)
            return;
        int stage = 0;
        uint32_t phase = 0;
        for (int kb = 0; kb < kblocks; ++kb) {
            mbar_wait(&empty[stage], phase ^ 1);
            unsigned char *st = smem + stage * S::STAGE_BYTES;
            mbar_arrive_expect_tx(&full[stage], S::STAGE_BYTES);
            if (DUAL) {
                tma_load_2d(st, &tm_w, &full[stage], kb * kEwBK, c0);
                tma_load_2d(st + kEwWBytes / 2, &tm_w2, &full[stage],
                            kb * kEwBK, c0);
            } else {
                tma_load_2d(st, &tm_w, &full[stage], kb * kEwBK, c0);
                tma_load_2d(st + kEwWBytes / 2, &tm_w, &full[stage],
                            kb * kEwBK, c0 + 64);
            }
            tma_load_2d(st + kEwWBytes, &tm_x, &full[stage], kb * kEwBK, m0);
            if (++stage == S::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        return;
    }

    if (S::MINB == 1)
        setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    /* the W tile rows of this lane's fragment rows g and g + 8: plain,
     * rows 64 cw + 16 warp + g (+ 8); dual, Wg's row 32 cw + 8 warp + g
     * (region 0) and Wu's same row (region 1, 64 rows on) */
    const int r0 = DUAL ? 32 * cw + 8 * warp + g : 64 * cw + 16 * warp + g;
    const int r1 = DUAL ? 64 + r0 : r0 + 8;
    uint32_t o0[4], o1[4];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        o0[s] = ew_off(r0 & 63, s, t) + (r0 >> 6) * (kEwWBytes / 2);
        o1[s] = ew_off(r1 & 63, s, t) + (r1 >> 6) * (kEwWBytes / 2);
    }
    float acc[S::NACC];
#pragma unroll
    for (int i = 0; i < S::NACC; ++i)
        acc[i] = 0.0f;
    uint32_t af0[16], af1[16];
    const uint32_t base = smem_addr(smem);
    int stage = 0, prev = -1;
    uint32_t phase = 0;
    for (int kb = 0; kb < kblocks; kb += 2) {
        mbar_wait(&full[stage], phase);
        {
            const uint32_t st = base + stage * S::STAGE_BYTES;
            ew_kblock<T, S::NACC>(acc, af0, st, o0, o1, st + kEwWBytes,
                                  kb == 0);
        }
        /* the previous k-block's group is done: its stage and fragments
         * are free */
        wg_wait<1>();
        pin(af1);
        if (prev >= 0 && lane == 0)
            mbar_arrive(&empty[prev]);
        prev = stage;
        if (++stage == S::STAGES) {
            stage = 0;
            phase ^= 1;
        }
        if (kb + 1 >= kblocks)
            break;
        mbar_wait(&full[stage], phase);
        {
            const uint32_t st = base + stage * S::STAGE_BYTES;
            ew_kblock<T, S::NACC>(acc, af1, st, o0, o1, st + kEwWBytes,
                                  false);
        }
        wg_wait<1>();
        pin(af0);
        if (lane == 0)
            mbar_arrive(&empty[prev]);
        prev = stage;
        if (++stage == S::STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }
    wg_wait<0>();
    pin(acc);
    pin(af0);
    pin(af1);
    /* (no arrival for the last stage: nothing loads after it) */

    /* The accumulators through shared memory (the stages are free once
     * both computing warpgroups are past their last wait): fp32, row
     * (token) tok at tok * kEwOutLd, column = the W tile row (conflict-free
     * stores: 8 t + g covers the 32 banks), then a short loop in which
     * neighbouring threads finish neighbouring channels of a token row
     * (4-byte stores of channel pairs where C allows). The loop is not
     * unrolled over the tile, so the run-time activation costs little
     * code. */
    consumers_sync();
    float *os = reinterpret_cast<float *>(smem);
    {
        const int rg = 64 * cw + 16 * warp + g; /* W tile row of acc q < 2 */
        const int col0 = DUAL ? (rg >> 4) * 8 + (rg & 7) : rg;
        const int col1 = DUAL ? 64 + col0 : rg + 8;
#pragma unroll
        for (int j = 0; j < S::NACC / 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                os[(8 * j + 2 * t + (q & 1)) * kEwOutLd + (q < 2 ? col0 : col1)] =
                    acc[4 * j + q];
    }
    consumers_sync();
    const int ct = threadIdx.x - 128; /* 0 .. 255 */
    constexpr int PAIRS = DUAL ? 32 : 64; /* channel pairs a token row */
    constexpr int ROWS = 256 / PAIRS;     /* token rows an iteration */
    const int pr = ct % PAIRS, rbeg = ct / PAIRS;
    const int ch = c0 + 2 * pr;
    const bool ok0 = ch < a.n, ok1 = ch + 1 < a.n;
    float s0 = 0, s1 = 0, t0 = 0, t1 = 0, b0 = 0, b1 = 0, u0 = 0, u1 = 0;
    if (ok0) {
        s0 = a.scale[ch];
        b0 = a.bias ? fb_load_f32(a.bias[ch]) : 0.0f;
        if (DUAL) {
            t0 = a.scale2[ch];
            u0 = a.bias2 ? fb_load_f32(a.bias2[ch]) : 0.0f;
        }
    }
    if (ok1) {
        s1 = a.scale[ch + 1];
        b1 = a.bias ? fb_load_f32(a.bias[ch + 1]) : 0.0f;
        if (DUAL) {
            t1 = a.scale2[ch + 1];
            u1 = a.bias2 ? fb_load_f32(a.bias2[ch + 1]) : 0.0f;
        }
    }
    const bool has_b = a.bias != NULL, has_b2 = a.bias2 != NULL;
    const fb_activation act = (fb_activation)a.act;
    const bool pairs = ok1 && a.c_pairs;
    const int rows = a.m - m0 < BN ? a.m - m0 : BN;
#pragma unroll 1
    for (int r = rbeg; r < rows; r += ROWS) {
        const float *row = os + r * kEwOutLd;
        T *cp = a.c + (int64_t)(m0 + r) * a.ldc + ch;
        float v0, v1;
        if (DUAL) {
            float g0 = row[2 * pr] * s0, g1 = row[2 * pr + 1] * s1;
            float w0 = row[64 + 2 * pr] * t0, w1 = row[64 + 2 * pr + 1] * t1;
            if (has_b)
                g0 += b0, g1 += b1;
            if (has_b2)
                w0 += u0, w1 += u1;
            v0 = fb_act_dynamic(act, g0) * w0;
            v1 = fb_act_dynamic(act, g1) * w1;
        } else {
            v0 = a.alpha * (row[2 * pr] * s0);
            v1 = a.alpha * (row[2 * pr + 1] * s1);
            if (a.beta != 0.0f) {
                if (ok0)
                    v0 += a.beta * fb_load_f32(cp[0]);
                if (ok1)
                    v1 += a.beta * fb_load_f32(cp[1]);
            }
            if (has_b)
                v0 += b0, v1 += b1;
            v0 = fb_act_dynamic(act, v0);
            v1 = fb_act_dynamic(act, v1);
        }
        if (pairs) {
            *reinterpret_cast<uint32_t *>(cp) = pack2<T>(v0, v1);
        } else {
            if (ok0)
                cp[0] = fb_store_as<T>(v0);
            if (ok1)
                cp[1] = fb_store_as<T>(v1);
        }
    }
#endif /* FB_WGMMA_BODY */
}

/* ---- host side ------------------------------------------------------- */

/* rows x cols bytes (row stride ld bytes, a multiple of 16; base 16-byte
 * aligned) in boxes of 64 bytes x 64 rows, 64-byte swizzle. */
static bool ew_map_u8(CUtensorMap *tm, const void *base, int64_t rows,
                      int64_t cols, int64_t ld)
{
    const PFN_cuTensorMapEncodeTiled_v12000 enc = fbf_tma_encoder();
    if (!enc)
        return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld};
    const cuuint32_t box[2] = {(cuuint32_t)kEwBK, 64};
    const cuuint32_t estr[2] = {1, 1};
    return enc(tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void *>(base),
               dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <typename T, int BN, bool DUAL>
static fb_status ew_launch(const fb_fused_env *env, const CUtensorMap &tx,
                           const CUtensorMap &tw, const CUtensorMap &tw2,
                           EwArgs<T> a)
{
    static TinyKernelState state;
    typedef EwShape<BN> S;
    const void *func =
        reinterpret_cast<const void *>(&e4m3_wgmma_kernel<T, BN, DUAL>);
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    a.ntok = (a.m + BN - 1) / BN;
    a.c_pairs = ((uintptr_t)a.c & 3u) == 0 && a.ldc % 2 == 0;
    const int64_t nch = (a.n + (DUAL ? 63 : 127)) / (DUAL ? 64 : 128);
    const int64_t tiles = nch * a.ntok;
    if (tiles > 0x7fffffff)
        return FB_STATUS_NOT_SUPPORTED;
    void *args[] = {const_cast<CUtensorMap *>(&tx),
                    const_cast<CUtensorMap *>(&tw),
                    const_cast<CUtensorMap *>(&tw2), &a};
    return fbf_launch_status(cudaLaunchKernel(func, dim3((unsigned)tiles),
                                              dim3(kEwThreads), args, S::SMEM,
                                              env->stream));
}

/* Tokens a tile. Up to 256 rows 64 (two CTAs a SM: the weights'
 * stream wants every SM, and 128 channels x 64 tokens gives 2 to 4 tiles
 * a SM), except that the gemm takes one tile of 128 or 256 tokens where
 * the rows fill at least 15/16 of it and its weight tiles alone give at
 * least 0.6 CTAs an SM: each weight tile then leaves L2 once, and at 128
 * and 256 rows of 4096 -> 11008 that ran 12-13 % and 9-10 % faster than
 * 64 on the H100 and the H200 (at 192 rows a tile of 256, three quarters
 * full, ran 27 % slower; with 32 weight tiles, 11008 -> 4096, 128 ran 4 %
 * slower). Up to 1024 rows 128: the widths measured fastest there (the
 * first version, docs/fp8-weights.md). Beyond, the width whose grid
 * takes the fewest tile-times, a tile of BN tokens costing BN + 64 (the
 * weight tile's stream, paid per tile whatever BN), rounds of sm_count
 * tiles. */
static int ew_pick_bn(const fb_fused_env *env, int64_t m, int64_t n,
                      bool dual)
{
    const int64_t nch = (n + (dual ? 63 : 127)) / (dual ? 64 : 128);
    const int64_t sms = env->sm_count > 0 ? env->sm_count : 132;
    if (!dual && nch * 5 >= sms * 3)
        for (int bn : {128, 256})
            if (m <= bn && m * 16 >= (int64_t)bn * 15)
                return bn;
    if (m <= 256)
        return 64;
    if (m <= 1024)
        return 128;
    int best = 256;
    double best_cost = 0;
    const int cand[2] = {256, 128};
    for (int i = 0; i < 2; ++i) {
        const int bn = cand[i];
        const int64_t tiles = nch * ((m + bn - 1) / bn);
        const double cost = (double)((tiles + sms - 1) / sms) * (bn + 64);
        if (i == 0 || cost < best_cost)
            best = bn, best_cost = cost;
    }
    return best;
}

/* The launcher's grid for m tokens and n channels (the dual form: n
 * hidden rows, 64 a tile) fills the GPU: at least 0.6 CTAs an SM. The
 * kernel does not split k, so a grid of few weight tiles leaves SMs idle
 * where the mid kernel, which splits k over clusters, keeps them busy:
 * 4096 -> 11008 -> 4096's down projection at 128 rows (64 CTAs) ran 7-10 %
 * slower than the mid kernel on the H100 and the H200, at 192 rows (96
 * CTAs) 6-7 % faster (docs/fp8-weights.md). */
static bool ew_fills(const fb_fused_env *env, int64_t m, int64_t n,
                     bool dual)
{
    const int bn = ew_pick_bn(env, m, n, dual);
    const int64_t nch = (n + (dual ? 63 : 127)) / (dual ? 64 : 128);
    const int64_t sms = env->sm_count > 0 ? env->sm_count : 132;
    return nch * ((m + bn - 1) / bn) * 5 >= sms * 3;
}

template <typename T, bool DUAL>
static fb_status ew_dispatch(const fb_fused_env *env, int bn,
                             const CUtensorMap &tx, const CUtensorMap &tw,
                             const CUtensorMap &tw2, const EwArgs<T> &a)
{
    switch (bn) {
    case 64: return ew_launch<T, 64, DUAL>(env, tx, tw, tw2, a);
    case 128: return ew_launch<T, 128, DUAL>(env, tx, tw, tw2, a);
    default: return ew_launch<T, 256, DUAL>(env, tx, tw, tw2, a);
    }
}

static bool ew_device_ok(const fb_fused_env *env)
{
    return env->cc_major == 9 && env->cc_minor == 0 &&
           EwShape<256>::SMEM <= env->smem_optin &&
           EwShape<128>::SMEM <= env->smem_optin &&
           EwShape<64>::SMEM <= env->smem_optin && fbf_tma_available();
}

static const int64_t kEwMax = (int64_t)1 << 30;

} /* namespace fbf */

using namespace fbf;

bool fbf_e4m3_wgmma_gemm_covers(const fb_fused_env *env,
                                const fb_e4m3_gemm_problem *p)
{
#ifdef FB_HAVE_SM90A
    return (p->dtype == FB_DTYPE_BF16 || p->dtype == FB_DTYPE_F16) &&
           p->m > 0 && p->n > 0 && p->k > 0 && p->alpha != 0.0f &&
           p->m < kEwMax && p->n < kEwMax && p->k < kEwMax &&
           p->k % 8 == 0 && p->x_ks == 1 && p->x_ts % 8 == 0 &&
           p->x_ts >= p->k && tiny_aligned16(p->x) && p->w_ks == 1 &&
           p->w_cs % 16 == 0 && p->w_cs >= p->k && tiny_aligned16(p->w) &&
           p->c_cs == 1 && p->c_ts >= p->n && p->scale != NULL &&
           ew_device_ok(env);
#else
    (void)env; (void)p;
    return false;
#endif
}

fb_status fbf_e4m3_wgmma_gemm(const fb_fused_env *env,
                              const fb_e4m3_gemm_problem *p, int bn,
                              char *path, size_t pathlen)
{
#ifdef FB_HAVE_SM90A
    if (!fbf_e4m3_wgmma_gemm_covers(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    if (bn != 64 && bn != 128 && bn != 256)
        bn = ew_pick_bn(env, p->m, p->n, false);
    CUtensorMap tx, tw;
    if (!fbf_tma_map_16(&tx, p->dtype, p->x, p->m, p->k, p->x_ts, kEwBK, bn,
                        true) ||
        !ew_map_u8(&tw, p->w, p->n, p->k, p->w_cs))
        return FB_STATUS_NOT_SUPPORTED;
    fb_status st;
    if (p->dtype == FB_DTYPE_BF16) {
        EwArgs<__nv_bfloat16> a;
        memset(&a, 0, sizeof a);
        a.c = static_cast<__nv_bfloat16 *>(p->c);
        a.ldc = p->c_ts;
        a.bias = static_cast<const __nv_bfloat16 *>(p->bias);
        a.scale = p->scale;
        a.alpha = p->alpha, a.beta = p->beta, a.act = (int)p->act;
        a.m = (int)p->m, a.n = (int)p->n, a.k = (int)p->k;
        st = ew_dispatch<__nv_bfloat16, false>(env, bn, tx, tw, tw, a);
    } else {
        EwArgs<__half> a;
        memset(&a, 0, sizeof a);
        a.c = static_cast<__half *>(p->c);
        a.ldc = p->c_ts;
        a.bias = static_cast<const __half *>(p->bias);
        a.scale = p->scale;
        a.alpha = p->alpha, a.beta = p->beta, a.act = (int)p->act;
        a.m = (int)p->m, a.n = (int)p->n, a.k = (int)p->k;
        st = ew_dispatch<__half, false>(env, bn, tx, tw, tw, a);
    }
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, "e4m3-wgmma");
    return st;
#else
    (void)env; (void)p; (void)bn; (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}

bool fbf_e4m3_wgmma_gemm_fills(const fb_fused_env *env,
                               const fb_e4m3_gemm_problem *p)
{
    return ew_fills(env, p->m, p->n, false);
}

bool fbf_e4m3_wgmma_gate_up_fills(const fb_fused_env *env,
                                  const fb_e4m3_mlp_problem *p)
{
    return ew_fills(env, p->m, p->h, true);
}

bool fbf_e4m3_wgmma_gate_up_covers(const fb_fused_env *env,
                                   const fb_e4m3_mlp_problem *p)
{
#ifdef FB_HAVE_SM90A
    return (p->dtype == FB_DTYPE_BF16 || p->dtype == FB_DTYPE_F16) &&
           p->m > 0 && p->h > 0 && p->k > 0 && p->m < kEwMax &&
           p->h < kEwMax && p->k < kEwMax && p->k % 16 == 0 &&
           p->ldx % 8 == 0 && p->ldx >= p->k && tiny_aligned16(p->x) &&
           tiny_aligned16(p->wg) && tiny_aligned16(p->wu) &&
           p->sg != NULL && p->su != NULL && ew_device_ok(env);
#else
    (void)env; (void)p;
    return false;
#endif
}

fb_status fbf_e4m3_wgmma_gate_up(const fb_fused_env *env,
                                 const fb_e4m3_mlp_problem *p, void *hbuf,
                                 int bn)
{
#ifdef FB_HAVE_SM90A
    if (!fbf_e4m3_wgmma_gate_up_covers(env, p) || !tiny_aligned16(hbuf))
        return FB_STATUS_NOT_SUPPORTED;
    if (bn != 64 && bn != 128 && bn != 256)
        bn = ew_pick_bn(env, p->m, p->h, true);
    CUtensorMap tx, twg, twu;
    if (!fbf_tma_map_16(&tx, p->dtype, p->x, p->m, p->k, p->ldx, kEwBK, bn,
                        true) ||
        !ew_map_u8(&twg, p->wg, p->h, p->k, p->k) ||
        !ew_map_u8(&twu, p->wu, p->h, p->k, p->k))
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype == FB_DTYPE_BF16) {
        EwArgs<__nv_bfloat16> a;
        memset(&a, 0, sizeof a);
        a.c = static_cast<__nv_bfloat16 *>(hbuf);
        a.ldc = p->h;
        a.bias = static_cast<const __nv_bfloat16 *>(p->bg);
        a.bias2 = static_cast<const __nv_bfloat16 *>(p->bu);
        a.scale = p->sg, a.scale2 = p->su;
        a.alpha = 1.0f, a.act = (int)p->gate_act;
        a.m = (int)p->m, a.n = (int)p->h, a.k = (int)p->k;
        return ew_dispatch<__nv_bfloat16, true>(env, bn, tx, twg, twu, a);
    }
    EwArgs<__half> a;
    memset(&a, 0, sizeof a);
    a.c = static_cast<__half *>(hbuf);
    a.ldc = p->h;
    a.bias = static_cast<const __half *>(p->bg);
    a.bias2 = static_cast<const __half *>(p->bu);
    a.scale = p->sg, a.scale2 = p->su;
    a.alpha = 1.0f, a.act = (int)p->gate_act;
    a.m = (int)p->m, a.n = (int)p->h, a.k = (int)p->k;
    return ew_dispatch<__half, true>(env, bn, tx, twg, twu, a);
#else
    (void)env; (void)p; (void)hbuf; (void)bn;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}
