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
 *
 * Where the tiles are too few to fill the GPU (few channels, long k: a
 * down projection), a cluster of S = 2, 4 or 8 CTAs shares one tile, CTA
 * r taking k-blocks r, r + S, ...; each stages its fp32 sums in its
 * shared memory, and after a cluster barrier CTA r finishes every S-th
 * token row of the tile from the S partial tiles, added in rank order
 * (distributed shared memory): deterministic, no workspace, no atomics.
 */
#include <math.h>
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
    int splits;    /* CTAs a tile (a cluster), each a share of k */
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

/* Barrier of every thread of the cluster, ordering shared-memory writes
 * before it against reads (of any CTA's shared memory) after it. Not
 * .aligned: the loading warp's thread 0 arrives after its lanes. */
__device__ __forceinline__ void ew_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;\n" ::: "memory");
}

/* The sum over the cluster's ranks, in rank order, of the float pair at
 * shared address addr of each CTA. */
__device__ __forceinline__ float2 ew_cluster_pair(uint32_t addr, int splits)
{
    float2 v[8];
#pragma unroll
    for (int q = 0; q < 8; ++q)
        if (q < splits) {
            uint32_t ra;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                         : "=r"(ra) : "r"(addr), "r"(q));
            asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n"
                         : "=f"(v[q].x), "=f"(v[q].y) : "r"(ra) : "memory");
        }
    float2 s = v[0];
#pragma unroll
    for (int q = 1; q < 8; ++q)
        if (q < splits)
            s.x += v[q].x, s.y += v[q].y;
    return s;
}

/* A thread's share of the finishing loop: its channel pair of token rows
 * r0, r0 + rstep, ... of the staged tile (os: this thread's pair in
 * row 0; cp: its outputs in row 0), with the per-channel constants read
 * once. */
template <typename T> struct EwFinish {
    const float *os;
    T *cp;
    int64_t ldc;
    float alpha, beta;
    float s0, s1, t0, t1, b0, b1, u0, u1; /* scales and biases */
    bool ok0, ok1, has_b, has_b2, pairs;
    int r0, rstep, rows, splits;
};

/* The finishing loop with the activation fixed at compile time, four
 * rows at a time: their sums are read first (from this CTA's shared
 * memory, or the cluster's), then finished and stored, so that the four
 * chains overlap (the kernel's epilogue ran exposed, latency-bound, with
 * one branch on the activation per output). Per output the e4m3
 * contract in fb_fp8_finish's order. */
template <typename T, bool DUAL, int ACT>
__device__ __forceinline__ void ew_finish_rows(const EwFinish<T> &f)
{
    const fb_activation A = (fb_activation)ACT;
    constexpr int U = 4;
#pragma unroll 1
    for (int r = f.r0; r < f.rows; r += U * f.rstep) {
        float2 d0[U], d1[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int rr = min(r + u * f.rstep, f.rows - 1);
            const float *row = f.os + rr * kEwOutLd;
            if (f.splits == 1) {
                d0[u] = make_float2(row[0], row[1]);
                if (DUAL)
                    d1[u] = make_float2(row[64], row[65]);
            } else {
                const uint32_t ra = smem_addr(row);
                d0[u] = ew_cluster_pair(ra, f.splits);
                if (DUAL)
                    d1[u] = ew_cluster_pair(ra + 64 * 4, f.splits);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int rr = r + u * f.rstep;
            if (rr >= f.rows)
                break;
            T *cp = f.cp + (int64_t)rr * f.ldc;
            float v0, v1;
            if (DUAL) {
                float g0 = d0[u].x * f.s0, g1 = d0[u].y * f.s1;
                float w0 = d1[u].x * f.t0, w1 = d1[u].y * f.t1;
                if (f.has_b)
                    g0 += f.b0, g1 += f.b1;
                if (f.has_b2)
                    w0 += f.u0, w1 += f.u1;
                v0 = fb_act<A>(g0) * w0;
                v1 = fb_act<A>(g1) * w1;
            } else {
                v0 = f.alpha * (d0[u].x * f.s0);
                v1 = f.alpha * (d0[u].y * f.s1);
                if (f.beta != 0.0f) {
                    if (f.ok0)
                        v0 += f.beta * fb_load_f32(cp[0]);
                    if (f.ok1)
                        v1 += f.beta * fb_load_f32(cp[1]);
                }
                if (f.has_b)
                    v0 += f.b0, v1 += f.b1;
                v0 = fb_act<A>(v0);
                v1 = fb_act<A>(v1);
            }
            if (f.pairs) {
                *reinterpret_cast<uint32_t *>(cp) = pack2<T>(v0, v1);
            } else {
                if (f.ok0)
                    cp[0] = fb_store_as<T>(v0);
                if (f.ok1)
                    cp[1] = fb_store_as<T>(v1);
            }
        }
    }
}

/* A computing warp is done with a stage: one arrival on the stage's
 * "empty" barrier of each CTA whose X half it holds (lane r on CTA r). */
template <int CX>
__device__ __forceinline__ void ew_release(uint64_t *empty, int lane)
{
    if (CX == 1) {
        if (lane == 0)
            mbar_arrive(empty);
    } else if (lane < CX) {
        mbar_arrive_cluster(empty, (uint32_t)lane);
    }
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

template <typename T, int BN, bool DUAL, int CX>
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
            /* one arrival per computing warp of each CTA whose X half
             * the stage holds */
            mbar_init(&empty[s], 8 * CX);
        }
        mbar_fence_init();
    }
    if (CX > 1)
        ew_cluster_sync(); /* the peer's barriers exist before its copies */
    else
        __syncthreads();
    /* CX == 1: a cluster of splits CTAs shares one tile, each a share of
     * k. CX == 2: the two CTAs of a cluster take neighbouring channel
     * tiles of one token tile, each loading half of the X tile for both
     * (multicast), so each X byte leaves L2 once a pair */
    const int splits = CX > 1 ? 1 : a.splits;
    const int xr = CX > 1 ? (int)(blockIdx.x % CX) : 0;
    const int u = CX > 1 ? (int)(blockIdx.x / CX) : (int)(blockIdx.x / splits);
    const int rank = CX > 1 ? 0 : (int)(blockIdx.x % splits);
    /* this CTA's k-blocks: rank, rank + splits, ... (at least one) */
    const int kblocks = ((a.k + kEwBK - 1) / kEwBK - rank + splits - 1) / splits;
    const int m0 = (u % a.ntok) * BN;
    const int c0 = (CX * (u / a.ntok) + xr) * (DUAL ? kEwRows / 2 : kEwRows);

    if (wg == 0) {
        /* one CTA a SM: 40 + 2 x 232 registers a thread; two: the
         * launch's 80 become 32 + 2 x 104, exactly what the loading
         * warpgroup frees (at 80 the computing warps' two fragment sets
         * and 32 accumulators do not fit, and ptxas serialises the
         * wgmma) */
        if (S::MINB == 1)
            setmaxnreg_dec<40>();
        else
            setmaxnreg_dec<32>();
        int stage = 0;
        uint32_t phase = 0;
        for (int i = 0; threadIdx.x == 0 && i < kblocks; ++i) {
            const int kb = rank + i * splits;
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
            if (CX > 1)
                tma_load_2d_multicast(st + kEwWBytes + xr * (BN / CX) * 128,
                                      &tm_x, &full[stage], kb * kEwBK,
                                      m0 + xr * (BN / CX),
                                      (uint16_t)((1u << CX) - 1));
            else
                tma_load_2d(st + kEwWBytes, &tm_x, &full[stage], kb * kEwBK,
                            m0);
            if (++stage == S::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        /* the consumers' two cluster barriers (partial tiles staged; all
         * read) */
        if (splits > 1) {
            ew_cluster_sync();
            ew_cluster_sync();
        }
        if (CX > 1)
            ew_cluster_sync(); /* the consumers' last one */
        return;
    }

    if (S::MINB == 1)
        setmaxnreg_inc<232>();
    else
        setmaxnreg_inc<104>();
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
        if (prev >= 0)
            ew_release<CX>(&empty[prev], lane);
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
        ew_release<CX>(&empty[prev], lane);
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
    if (splits > 1)
        ew_cluster_sync(); /* every CTA's partial tile is staged */
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
    EwFinish<T> f;
    f.os = os + 2 * pr, f.alpha = a.alpha, f.beta = a.beta;
    f.cp = a.c + (int64_t)m0 * a.ldc + ch, f.ldc = a.ldc;
    f.s0 = s0, f.s1 = s1, f.t0 = t0, f.t1 = t1;
    f.b0 = b0, f.b1 = b1, f.u0 = u0, f.u1 = u1;
    f.ok0 = ok0, f.ok1 = ok1;
    f.has_b = a.bias != NULL, f.has_b2 = a.bias2 != NULL;
    f.pairs = ok1 && a.c_pairs;
    f.r0 = rbeg + rank * ROWS, f.rstep = ROWS * splits;
    f.rows = a.m - m0 < BN ? a.m - m0 : BN;
    f.splits = splits;
    switch (a.act) {
    case FB_ACT_RELU: ew_finish_rows<T, DUAL, FB_ACT_RELU>(f); break;
    case FB_ACT_GELU_TANH: ew_finish_rows<T, DUAL, FB_ACT_GELU_TANH>(f); break;
    case FB_ACT_GELU_ERF: ew_finish_rows<T, DUAL, FB_ACT_GELU_ERF>(f); break;
    case FB_ACT_SILU: ew_finish_rows<T, DUAL, FB_ACT_SILU>(f); break;
    default: ew_finish_rows<T, DUAL, FB_ACT_NONE>(f); break;
    }
    if (splits > 1)
        ew_cluster_sync(); /* no CTA leaves while its tile is read */
    if (CX > 1)
        ew_cluster_sync(); /* nor while the peer may arrive on its barriers */
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

template <typename T, int BN, bool DUAL, int CX>
static fb_status ew_launch(const fb_fused_env *env, const CUtensorMap &tx,
                           const CUtensorMap &tw, const CUtensorMap &tw2,
                           EwArgs<T> a)
{
    static TinyKernelState state;
    typedef EwShape<BN> S;
    const void *func =
        reinterpret_cast<const void *>(&e4m3_wgmma_kernel<T, BN, DUAL, CX>);
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    a.ntok = (a.m + BN - 1) / BN;
    a.c_pairs = ((uintptr_t)a.c & 3u) == 0 && a.ldc % 2 == 0;
    const int64_t per = DUAL ? kEwRows / 2 : kEwRows;
    /* CX > 1: channel tiles in clusters of CX (the last one's spare CTAs
     * load their X half and write nothing) */
    const int64_t nch = ((a.n + per - 1) / per + CX - 1) / CX * CX;
    const int64_t tiles = nch * a.ntok;
    if (a.splits != 1 && a.splits != 2 && a.splits != 4 && a.splits != 8)
        return FB_STATUS_NOT_SUPPORTED;
    if ((CX > 1 && a.splits != 1) || tiles * a.splits > 0x7fffffff ||
        (a.k + kEwBK - 1) / kEwBK < a.splits)
        return FB_STATUS_NOT_SUPPORTED;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(tiles * a.splits));
    cfg.blockDim = dim3(kEwThreads);
    cfg.dynamicSmemBytes = S::SMEM;
    cfg.stream = env->stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)(CX > 1 ? CX : a.splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = CX > 1 || a.splits > 1 ? 1 : 0;
    return fbf_launch_status(cudaLaunchKernelEx(
        &cfg, e4m3_wgmma_kernel<T, BN, DUAL, CX>, tx, tw, tw2, a));
}

/* The launch's shape: tokens a tile (BN) and CTAs a tile (splits, each a
 * share of the k-blocks). */
struct EwPlan {
    int bn, splits, cx;
};

/* Channel tiles of BN >= 128 run in pairs (a cluster of 2) that share
 * the X tile, each CTA loading half of it for both: each X byte leaves L2
 * once a pair. Unsplit launches only; at BN 64 (two CTAs an SM) the
 * pairs measured slower (docs/fp8-weights.md) and are not built. */
static int ew_pairs(int64_t nch, int bn, int splits)
{
    return splits == 1 && bn >= 128 && nch >= 2 &&
                   FBF_KNOB(e4m3_mcast) != 1
               ? 2
               : 1;
}

/* The dual form's tokens a tile: the least cost, counted in rounds of
 * CTAs weighted by what a round takes per 64 k-blocks (measured on an
 * H200: BN 128 38 and BN 256 64 a whole round; BN 64, two CTAs an SM
 * that end at different times, 41 a round counted fractionally plus 10).
 * BN 256 wins once its fewer rounds pay for its longer ones (512 rows of
 * 11008 hidden channels: 3 rounds against 6). */
static int ew_dual_bn(int64_t m, int64_t nch, int64_t sms)
{
    const double t64 = (double)(nch * ((m + 63) / 64)),
                 t128 = (double)(nch * ((m + 127) / 128)),
                 t256 = (double)(nch * ((m + 255) / 256));
    const double c64 = 41.0 * t64 / (double)(sms * EwShape<64>::MINB) + 10.0,
                 c128 = 38.0 * ceil(t128 / (double)sms),
                 c256 = 64.0 * ceil(t256 / (double)sms);
    if (c256 < c64 && c256 < c128)
        return 256;
    return c128 < c64 ? 128 : 64;
}

/* The plan (the measurements behind it: docs/fp8-weights.md):
 *   - the gemm: BN 64, two CTAs an SM, by default: they hide each other's
 *     ring fill and epilogue, which matters most where a CTA has few
 *     k-blocks; BN 128 from 129 rows where k >= 8192 (down projections):
 *     each weight tile is then widened for two token tiles, not three or
 *     four, and a long k amortises the single CTA's fill and epilogue;
 *   - the dual form: ew_dual_bn;
 *   - splits: the most (up to 8) that keep the grid within one round of
 *     the CTAs the GPU holds at once, each CTA keeping at least 4
 *     k-blocks: a split into a second round cost more than it gained;
 *   - unsplit, channel tiles in pairs where ew_pairs says so.
 */
static EwPlan ew_plan(const fb_fused_env *env, int64_t m, int64_t n,
                      int64_t k, bool dual, int bn)
{
    const int64_t nch = (n + (dual ? 63 : 127)) / (dual ? 64 : 128);
    const int64_t sms = env->sm_count > 0 ? env->sm_count : 132;
    EwPlan pl = {bn, 1, 1};
    if (bn != 64 && bn != 128 && bn != 256)
        pl.bn = dual ? ew_dual_bn(m, nch, sms)
                     : m > 128 && k >= 8192 ? 128 : 64;
    const int64_t tiles = nch * ((m + pl.bn - 1) / pl.bn);
    const int64_t slots = sms * (pl.bn == 64 ? EwShape<64>::MINB : 1);
    const int64_t kblocks = (k + kEwBK - 1) / kEwBK;
    for (int s = 2; s <= 8 && tiles * s <= slots && kblocks >= 4 * s; s *= 2)
        pl.splits = s;
    pl.cx = ew_pairs(nch, pl.bn, pl.splits);
    return pl;
}

/* The launcher's grid for m tokens and n channels (the dual form: n
 * hidden rows, 64 a tile) fills the GPU: at least 0.6 CTAs an SM. */
static bool ew_fills(const fb_fused_env *env, int64_t m, int64_t n,
                     int64_t k, bool dual)
{
    const EwPlan pl = ew_plan(env, m, n, k, dual, 0);
    const int64_t nch = (n + (dual ? 63 : 127)) / (dual ? 64 : 128);
    const int64_t sms = env->sm_count > 0 ? env->sm_count : 132;
    return nch * ((m + pl.bn - 1) / pl.bn) * pl.splits * 5 >= sms * 3;
}

template <typename T, bool DUAL>
static fb_status ew_dispatch(const fb_fused_env *env, const EwPlan &pl,
                             const CUtensorMap &tx, const CUtensorMap &tw,
                             const CUtensorMap &tw2, const EwArgs<T> &a)
{
    if (pl.cx == 2) /* BN 128 or 256 (ew_pairs) */
        return pl.bn == 128 ? ew_launch<T, 128, DUAL, 2>(env, tx, tw, tw2, a)
                            : ew_launch<T, 256, DUAL, 2>(env, tx, tw, tw2, a);
    switch (pl.bn) {
    case 64: return ew_launch<T, 64, DUAL, 1>(env, tx, tw, tw2, a);
    case 128: return ew_launch<T, 128, DUAL, 1>(env, tx, tw, tw2, a);
    default: return ew_launch<T, 256, DUAL, 1>(env, tx, tw, tw2, a);
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
                              int splits, char *path, size_t pathlen)
{
#ifdef FB_HAVE_SM90A
    if (!fbf_e4m3_wgmma_gemm_covers(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    EwPlan pl = ew_plan(env, p->m, p->n, p->k, false, bn);
    if (splits > 0) {
        pl.splits = splits;
        pl.cx = ew_pairs((p->n + 127) / 128, pl.bn, splits);
    }
    splits = pl.splits;
    CUtensorMap tx, tw;
    if (!fbf_tma_map_16(&tx, p->dtype, p->x, p->m, p->k, p->x_ts, kEwBK,
                        pl.bn / pl.cx, true) ||
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
        a.splits = splits;
        st = ew_dispatch<__nv_bfloat16, false>(env, pl, tx, tw, tw, a);
    } else {
        EwArgs<__half> a;
        memset(&a, 0, sizeof a);
        a.c = static_cast<__half *>(p->c);
        a.ldc = p->c_ts;
        a.bias = static_cast<const __half *>(p->bias);
        a.scale = p->scale;
        a.alpha = p->alpha, a.beta = p->beta, a.act = (int)p->act;
        a.m = (int)p->m, a.n = (int)p->n, a.k = (int)p->k;
        a.splits = splits;
        st = ew_dispatch<__half, false>(env, pl, tx, tw, tw, a);
    }
    if (st == FB_STATUS_SUCCESS) {
        char name[32];
        if (splits > 1)
            snprintf(name, sizeof name, "e4m3-wgmma/k-split%d", splits);
        else if (pl.cx > 1)
            snprintf(name, sizeof name, "e4m3-wgmma/x-pairs");
        else
            snprintf(name, sizeof name, "e4m3-wgmma");
        fbf_set_path(path, pathlen, name);
    }
    return st;
#else
    (void)env; (void)p; (void)bn; (void)splits; (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}

bool fbf_e4m3_wgmma_gemm_fills(const fb_fused_env *env,
                               const fb_e4m3_gemm_problem *p)
{
    return ew_fills(env, p->m, p->n, p->k, false);
}

bool fbf_e4m3_wgmma_gate_up_fills(const fb_fused_env *env,
                                  const fb_e4m3_mlp_problem *p)
{
    return ew_fills(env, p->m, p->h, p->k, true);
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
    const EwPlan pl = ew_plan(env, p->m, p->h, p->k, true, bn);
    CUtensorMap tx, twg, twu;
    if (!fbf_tma_map_16(&tx, p->dtype, p->x, p->m, p->k, p->ldx, kEwBK,
                        pl.bn / pl.cx, true) ||
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
        a.splits = pl.splits;
        return ew_dispatch<__nv_bfloat16, true>(env, pl, tx, twg, twu, a);
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
    a.splits = pl.splits;
    return ew_dispatch<__half, true>(env, pl, tx, twg, twu, a);
#else
    (void)env; (void)p; (void)hbuf; (void)bn;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}
