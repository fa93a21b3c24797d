/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_prefill_wgmma.cu -- the prefill gated MLP (m in the thousands) on
 * Hopper: bulk tensor copies (TMA) into a ring of shared-memory stages,
 * warpgroup MMA (wgmma) from shared memory, one warpgroup that only loads
 * and two that only compute (sm_90a).
 *
 * Two launches:
 *   1. dual GEMM: gate and up over the same X tile, H = act(G + bg) .*
 *      (U + bu) in the epilogue, written once in the input type (gate and
 *      up never reach memory);
 *   2. down GEMM, Y = H Wd^T + bd, the same kernel with one B operand.
 *
 * Per CTA (one per SM, persistent over output tiles of 128 x 128):
 *   - warpgroup 0, one thread: per k-block of 64, waits until a stage is
 *     free, announces its bytes on the stage's "full" mbarrier and issues
 *     the TMA copies (X rows, then Wg rows and Wu rows, or Wd rows) into
 *     it, 128-byte swizzled; rows or columns past the matrices arrive as
 *     zeros (the tensor maps' bounds), so no edge case reaches the MMA;
 *   - warpgroups 1 and 2, 64 rows each: wait for the stage, four wgmma
 *     k16 steps (dual: m64n256k16, gate in accumulator columns 0..127 and
 *     up in 128..255; single: m64n128k16 or m64n256k16), then release the
 *     previous stage once its wgmma group has completed (one arrival per
 *     warp on the stage's "empty" mbarrier). Single: the epilogue (+ bias)
 *     straight from the accumulators to global memory. Dual: G and U go,
 *     rounded to the input type (as the eager chain stores them), to a
 *     staging buffer in shared memory, and the warpgroup moves on to its
 *     next tile at once;
 *   - dual only, warps 1..3 of warpgroup 0: H = act(G + bg) .* (U + bu)
 *     from the staging buffers, a row of H a warp (8-byte stores), while
 *     the tensor cores run the next tile. (On the computing warpgroups,
 *     the epilogue's activations, two MUFU operations each, stall the
 *     tensor cores: docs/prefill-pair.md.)
 * Stages: dual 3 x 48 KiB (+ 2 x 33 KiB of staging), single 6 x 32 KiB
 * or 4 x 48 KiB.
 *
 * Tile order: the CTAs of one wave share the operand that is re-read.
 * When B (weights) is the larger operand, consecutive tiles walk down the
 * rows of X under one weight tile (each weight tile leaves DRAM once);
 * otherwise (the down projection: H is 50 MB, Wd 4.7 MB) they walk across
 * the output columns under one row tile of A.
 *
 * Arithmetic-bound at the sizes it takes (even with H written and read
 * back): the GEMMs must run at cuBLAS's rate, and the gain is the
 * elementwise passes over H that the eager chain makes. The two numbers
 * and the measurements: docs/prefill-pair.md.
 */
#include <stdio.h>
#include <string.h>
#include <atomic>
#include <cuda.h>         /* CUtensorMap and its enums (types only) */
#include "fused_internal.h"
#include "fused_tma_map.h"
#include "fused_tiny.cuh"
#include "fused_wgmma.cuh"

namespace fbf {

enum {
    kPwBM = 128,         /* rows of a CTA tile: two warpgroups of 64 */
    kPwBK = 64,          /* k-block: one 128-byte swizzled row an operand row */
    kPwThreads = 384,    /* warpgroup 0 loads, 1 and 2 compute */
    kPwRowBytes = 128,   /* kPwBK 16-bit elements */
    kPwStageBudget = 196 * 1024
};

/* Shared memory per stage: 128 rows of A, then BROWS rows of B (dual: 128
 * of Wg, then 128 of Wu, read by one m64n256 wgmma as a 256-row operand;
 * single: 128 or 256 rows of Wd). The dual GEMM's epilogue runs on
 * warps 1..3 of the loading warpgroup, fed through two staging buffers
 * (one per computing warpgroup: its 64 rows x 128 gate | 128 up columns
 * in the input type, rows padded to 264 elements so that the computing
 * warps' 4-byte stores of 8 rows hit 32 different banks); that takes one
 * stage's room. */
enum { kPwStageLd = 264 };
template <bool DUAL, int BROWS> struct PwShape {
    static_assert(!DUAL || BROWS == 256, "dual: 128 gate + 128 up rows");
    static const int BN = DUAL ? BROWS / 2 : BROWS; /* output columns */
    static const int ACC = BROWS / 2; /* accumulators a thread (m64nBROWS) */
    static const int STAGE_BYTES = (kPwBM + BROWS) * kPwRowBytes;
    static const int STAGES = DUAL ? 3 : kPwStageBudget / STAGE_BYTES;
    static const int STAGING_BYTES = DUAL ? 2 * 64 * kPwStageLd * 2 : 0;
    static const size_t SMEM = 1024 + (size_t)STAGES * STAGE_BYTES +
                               STAGING_BYTES +
                               (2 * STAGES + 4) * sizeof(uint64_t);
};

template <typename T> struct PwArgs {
    T *c; /* m x n output (dual: H, n = h), row stride ldc */
    int64_t ldc;
    const T *bias, *bias2; /* n each (dual: bg, bu; single: bd), or NULL */
    int m, n, k;
    int mtiles, ntiles;
    int m_fastest; /* tile order: 1 walk rows under one column tile */
    int c_pairs;   /* C allows 4-byte stores of column pairs */
    int c_quads;   /* ... and 8-byte stores of four columns */
};

#if FB_WGMMA_BODY

/* Where tile u starts (rows m0, columns n0). */
template <int BN, typename T>
__device__ __forceinline__ void pw_origin(const PwArgs<T> &a, int u,
                                          int &m0, int &n0)
{
    int um, un;
    if (a.m_fastest) {
        um = u % a.mtiles;
        un = u / a.mtiles;
    } else {
        un = u % a.ntiles;
        um = u / a.ntiles;
    }
    m0 = um * kPwBM;
    n0 = un * BN;
}

template <typename T>
__device__ __forceinline__ float pw_bias_at(const T *b, int col, int n)
{
    return (b && col < n) ? fb_load_f32(b[col]) : 0.0f;
}

/* The thread's output values of one tile, v[4 j + q] for accumulator
 * block j (columns n0 + 8 j + 2 t + (q & 1), row row + 8 (q >> 1)), to C;
 * v[0 .. 4 NB). Whole tiles with pair-aligned C take 4-byte stores
 * without per-element checks. */
template <int NB, typename T, int N>
__device__ __forceinline__ void pw_store_tile(const PwArgs<T> &a,
                                              const float (&v)[N], int row,
                                              int n0, int t)
{
    static_assert(4 * NB <= N, "values");
    const int col0 = n0 + 2 * t;
    if (a.c_pairs && row + 8 < a.m && n0 + 8 * NB <= a.n) {
        T *r0 = a.c + (int64_t)row * a.ldc + col0;
        T *r1 = r0 + 8 * a.ldc;
#pragma unroll
        for (int j = 0; j < NB; ++j) {
            *reinterpret_cast<uint32_t *>(r0 + 8 * j) =
                pack2<T>(v[4 * j], v[4 * j + 1]);
            *reinterpret_cast<uint32_t *>(r1 + 8 * j) =
                pack2<T>(v[4 * j + 2], v[4 * j + 3]);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int r = row + 8 * (q >> 1), col = col0 + 8 * j + (q & 1);
            if (r < a.m && col < a.n)
                a.c[(int64_t)r * a.ldc + col] = fb_store_as<T>(v[4 * j + q]);
        }
}

/* Single epilogue: C = acc + bias (in place). */
template <typename T, int ACC>
__device__ __forceinline__ void pw_epilogue_single(const PwArgs<T> &a,
                                                   float (&acc)[ACC], int row,
                                                   int n0, int t)
{
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
        const int col = n0 + 8 * j + 2 * t;
        const float b0 = pw_bias_at(a.bias, col, a.n);
        const float b1 = pw_bias_at(a.bias, col + 1, a.n);
#pragma unroll
        for (int q = 0; q < 4; ++q)
            acc[4 * j + q] += (q & 1) ? b1 : b0;
    }
    pw_store_tile<ACC / 4>(a, acc, row, n0, t);
}

/* A computing warpgroup hands its 64 x (128 gate | 128 up) accumulators
 * to the epilogue warps: rounded to the input type (as PyTorch's eager
 * chain stores G and U), row r at r kPwStageLd, gate at columns 0..127,
 * up at 128..255. Waits until the epilogue warps are done with the
 * buffer's previous tile; every thread arrives on "full" after its
 * stores (release: its own stores are what it publishes). */
template <typename T>
__device__ __forceinline__ void pw_stage_out(const float (&acc)[128], T *buf,
                                             uint64_t *sfull,
                                             uint64_t *sempty,
                                             uint32_t phase, int r, int t)
{
    mbar_wait(sempty, phase ^ 1);
    uint32_t *row0 = reinterpret_cast<uint32_t *>(buf + r * kPwStageLd);
    uint32_t *row8 = reinterpret_cast<uint32_t *>(buf + (r + 8) * kPwStageLd);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        row0[4 * j + t] = pack2<T>(acc[4 * j], acc[4 * j + 1]);
        row8[4 * j + t] = pack2<T>(acc[4 * j + 2], acc[4 * j + 3]);
    }
    mbar_arrive(sfull);
}

/* Warps 1..3 of the loading warpgroup: per tile and staging buffer, H =
 * act(G + bg) .* (U + bu) for the buffer's 64 rows, a row a warp at a
 * time, four columns a lane (8-byte loads from the buffer, 8-byte stores
 * of H: a warp writes a row's 256 bytes). */
template <typename T, int ACT, int BN>
__device__ __forceinline__ void pw_epilogue_warps(const PwArgs<T> &a,
                                                  const T *staging,
                                                  uint64_t *sfull,
                                                  uint64_t *sempty,
                                                  int tiles, int ew, int lane)
{
    uint32_t phase = 0;
    for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
        int m0, n0;
        pw_origin<BN>(a, u, m0, n0);
        const int col = n0 + 4 * lane;
        float bg[4], bu[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            bg[i] = pw_bias_at(a.bias, col + i, a.n);
            bu[i] = pw_bias_at(a.bias2, col + i, a.n);
        }
        const bool wide = col + 3 < a.n && a.c_quads;
        for (int cw = 0; cw < 2; ++cw) {
            mbar_wait(&sfull[cw], phase);
            const T *buf = staging + cw * 64 * kPwStageLd + 4 * lane;
            for (int r = ew; r < 64; r += 3) {
                const int row = m0 + 64 * cw + r;
                if (row >= a.m)
                    break;
                const uint2 gv = *reinterpret_cast<const uint2 *>(buf + r * kPwStageLd);
                const uint2 uv = *reinterpret_cast<const uint2 *>(buf + r * kPwStageLd + 128);
                float h[4], uf[4];
                unpack2<T>(gv.x, h[0], h[1]);
                unpack2<T>(gv.y, h[2], h[3]);
                unpack2<T>(uv.x, uf[0], uf[1]);
                unpack2<T>(uv.y, uf[2], uf[3]);
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    h[i] = act_fast((fb_activation)ACT, h[i] + bg[i]) *
                           (uf[i] + bu[i]);
                T *dst = a.c + (int64_t)row * a.ldc + col;
                if (wide) {
                    uint2 o;
                    o.x = pack2<T>(h[0], h[1]);
                    o.y = pack2<T>(h[2], h[3]);
                    *reinterpret_cast<uint2 *>(dst) = o;
                } else {
#pragma unroll
                    for (int i = 0; i < 4; ++i)
                        if (col + i < a.n)
                            dst[i] = fb_store_as<T>(h[i]);
                }
            }
            mbar_arrive(&sempty[cw]);
        }
        phase ^= 1;
    }
}

#endif /* FB_WGMMA_BODY */

/* ACT: the gate's activation, fixed at compile time so that the epilogue
 * is one straight run of code (chosen at run time, all five would sit in
 * each of its 16 unrolled steps, which costs most where k is small:
 * docs/prefill-pair.md). */
template <typename T, bool DUAL, int BROWS, int ACT>
__global__ void __launch_bounds__(kPwThreads, 1)
    prefill_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a,
                         const __grid_constant__ CUtensorMap tm_b,
                         const __grid_constant__ CUtensorMap tm_b2,
                         const PwArgs<T> a)
{
#if FB_WGMMA_BODY
    typedef PwShape<DUAL, BROWS> S;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem =
        smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    T *staging = reinterpret_cast<T *>(smem + S::STAGES * S::STAGE_BYTES);
    uint64_t *full = reinterpret_cast<uint64_t *>(
        smem + S::STAGES * S::STAGE_BYTES + S::STAGING_BYTES);
    uint64_t *empty = full + S::STAGES;
    uint64_t *sfull = empty + S::STAGES, *sempty = sfull + 2;
    const int wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S::STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8); /* one arrival per computing warp */
        }
        for (int b = 0; b < 2; ++b) {
            mbar_init(&sfull[b], 128); /* each thread of a computing WG */
            mbar_init(&sempty[b], 96); /* each epilogue thread */
        }
        mbar_fence_init();
    }
    __syncthreads();
    const int kblocks = (a.k + kPwBK - 1) / kPwBK;
    const int tiles = a.mtiles * a.ntiles;

    if (wg == 0) {
        /* 56 + 2 x 224 (dual: epilogue warps) or 40 + 2 x 232 registers a
         * thread: the 168 x 3 warpgroups the launch bounds allocate */
        setmaxnreg_dec<DUAL ? 56 : 40>();
        const int warp0 = threadIdx.x >> 5;
        if (DUAL && warp0 > 0) {
            pw_epilogue_warps<T, ACT, S::BN>(a, staging, sfull, sempty, tiles,
                                             warp0 - 1, threadIdx.x & 31);
            return;
        }
        if (threadIdx.x != 0)
            return;
        int stage = 0;
        uint32_t phase = 0;
        for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
            int m0, n0;
            pw_origin<S::BN>(a, u, m0, n0);
            for (int kb = 0; kb < kblocks; ++kb) {
                mbar_wait(&empty[stage], phase ^ 1);
                unsigned char *st = smem + stage * S::STAGE_BYTES;
                unsigned char *sb = st + kPwBM * kPwRowBytes;
                mbar_arrive_expect_tx(&full[stage], S::STAGE_BYTES);
                tma_load_2d(st, &tm_a, &full[stage], kb * kPwBK, m0);
                tma_load_2d(sb, &tm_b, &full[stage], kb * kPwBK, n0);
                if (DUAL)
                    tma_load_2d(sb + 128 * kPwRowBytes, &tm_b2, &full[stage],
                                kb * kPwBK, n0);
                else if (BROWS > 128)
                    tma_load_2d(sb + 128 * kPwRowBytes, &tm_b, &full[stage],
                                kb * kPwBK, n0 + 128);
                if (++stage == S::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
        }
        return;
    }

    setmaxnreg_inc<DUAL ? 224 : 232>();
    const int cw = wg - 1; /* rows 64 cw .. 64 cw + 63 of the tile */
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    int stage = 0;
    uint32_t phase = 0, sphase = 0;
    float acc[S::ACC];
#pragma unroll
    for (int i = 0; i < S::ACC; ++i)
        acc[i] = 0.0f;
    for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
        int m0, n0;
        pw_origin<S::BN>(a, u, m0, n0);
        int prev = -1;
        for (int kb = 0; kb < kblocks; ++kb) {
            mbar_wait(&full[stage], phase);
            const uint32_t st = smem_addr(smem + stage * S::STAGE_BYTES);
            const uint64_t da = wg_desc(st + cw * 64 * kPwRowBytes);
            const uint64_t db = wg_desc(st + kPwBM * kPwRowBytes);
            wg_fence();
#pragma unroll
            for (int s = 0; s < 4; ++s)
                wgmma_ss<T>(acc, da + 2 * s, db + 2 * s, kb > 0 || s > 0);
            wg_commit();
            /* the previous k-block's group is done: its stage is free */
            wg_wait<1>();
            if (prev >= 0 && lane == 0)
                mbar_arrive(&empty[prev]);
            prev = stage;
            if (++stage == S::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        wg_wait<0>();
        pin(acc);
        if (prev >= 0 && lane == 0)
            mbar_arrive(&empty[prev]);
        const int row = m0 + 64 * cw + 16 * warp + g;
        if constexpr (DUAL) {
            pw_stage_out<T>(acc, staging + cw * 64 * kPwStageLd, &sfull[cw],
                            &sempty[cw], sphase, 16 * warp + g, t);
            sphase ^= 1;
        } else {
            pw_epilogue_single<T, S::ACC>(a, acc, row, n0, t);
        }
    }
#endif /* FB_WGMMA_BODY */
}

/* ---- host side ------------------------------------------------------- */

/* A rows x cols row-major 16-bit matrix (row stride ld elements) read in
 * boxes of 64 columns x 128 rows, 128-byte swizzled, zeros past its
 * edges. */
static bool pw_tensor_map(CUtensorMap *tm, fb_dtype dt, const void *base,
                          int64_t rows, int64_t cols, int64_t ld)
{
    return fbf_tma_map_16(tm, dt, base, rows, cols, ld, kPwBK, 128, true);
}

template <typename T, bool DUAL, int BROWS, int ACT>
static fb_status pw_launch(const fb_fused_env *env, const CUtensorMap &ta,
                           const CUtensorMap &tb, const CUtensorMap &tb2,
                           PwArgs<T> a, int64_t b_rows)
{
    static TinyKernelState state;
    typedef PwShape<DUAL, BROWS> S;
    const void *func = reinterpret_cast<const void *>(
        &prefill_wgmma_kernel<T, DUAL, BROWS, ACT>);
    /* (fbf_prefill_mlp_wgmma checked S::SMEM against the device before
     * either launch: the pair is refused whole or not at all) */
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    a.mtiles = (a.m + kPwBM - 1) / kPwBM;
    a.ntiles = (a.n + S::BN - 1) / S::BN;
    a.m_fastest = b_rows >= a.m;
    a.c_pairs = ((uintptr_t)a.c & 3u) == 0 && a.ldc % 2 == 0;
    a.c_quads = ((uintptr_t)a.c & 7u) == 0 && a.ldc % 4 == 0;
    const int tiles = a.mtiles * a.ntiles;
    const int grid = tiles < env->sm_count ? tiles : env->sm_count;
    void *args[] = {const_cast<CUtensorMap *>(&ta),
                    const_cast<CUtensorMap *>(&tb),
                    const_cast<CUtensorMap *>(&tb2), &a};
    return fbf_launch_status(cudaLaunchKernel(func, dim3(grid),
                                              dim3(kPwThreads), args,
                                              S::SMEM, env->stream));
}

/* The dual GEMM's kernel for the gate's activation. */
template <typename T>
static fb_status pw_launch_dual(const fb_fused_env *env,
                                const CUtensorMap &tx, const CUtensorMap &twg,
                                const CUtensorMap &twu, const PwArgs<T> &g,
                                int64_t b_rows, fb_activation act)
{
    switch (act) {
    case FB_ACT_NONE:
        return pw_launch<T, true, 256, FB_ACT_NONE>(env, tx, twg, twu, g, b_rows);
    case FB_ACT_RELU:
        return pw_launch<T, true, 256, FB_ACT_RELU>(env, tx, twg, twu, g, b_rows);
    case FB_ACT_GELU_TANH:
        return pw_launch<T, true, 256, FB_ACT_GELU_TANH>(env, tx, twg, twu, g, b_rows);
    case FB_ACT_GELU_ERF:
        return pw_launch<T, true, 256, FB_ACT_GELU_ERF>(env, tx, twg, twu, g, b_rows);
    case FB_ACT_SILU:
        return pw_launch<T, true, 256, FB_ACT_SILU>(env, tx, twg, twu, g, b_rows);
    }
    return FB_STATUS_NOT_SUPPORTED;
}

/* Output columns a down-GEMM tile: 256 (twice the operand reuse) unless
 * 128 takes fewer rounds of the grid to cover the output, counted in
 * 128-column tile times (the seed's n = 768: 384 tiles of 128 columns,
 * 2.9 rounds of 132 SMs, against 192 of 256, two rounds of double
 * length). */
static int pw_down_bn(const fb_fused_env *env, int64_t m, int64_t n)
{
    const int64_t mt = (m + kPwBM - 1) / kPwBM, sms = env->sm_count;
    const int64_t t128 = mt * ((n + 127) / 128), t256 = mt * ((n + 255) / 256);
    const int64_t r128 = (t128 + sms - 1) / sms, r256 = (t256 + sms - 1) / sms;
    return 2 * r256 <= r128 ? 256 : 128;
}

/* H = act(X Wg^T + bg) .* (X Wu^T + bu) into hbuf (m x h, row stride h),
 * then, unless the h_only knob, Y = H Wd^T + bd. */
template <typename T>
static fb_status pw_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                        void *hbuf)
{
    CUtensorMap tx, twg, twu, th, twd;
    if (!pw_tensor_map(&tx, p->dtype, p->x, p->m, p->k, p->ldx) ||
        !pw_tensor_map(&twg, p->dtype, p->wg, p->h, p->k, p->k) ||
        !pw_tensor_map(&twu, p->dtype, p->wu, p->h, p->k, p->k) ||
        !pw_tensor_map(&th, p->dtype, hbuf, p->m, p->h, p->h) ||
        !pw_tensor_map(&twd, p->dtype, p->wd, p->n, p->h, p->h))
        return FB_STATUS_NOT_SUPPORTED;
    PwArgs<T> g;
    memset(&g, 0, sizeof g);
    g.c = static_cast<T *>(hbuf);
    g.ldc = p->h;
    g.bias = static_cast<const T *>(p->bg);
    g.bias2 = static_cast<const T *>(p->bu);
    g.m = (int)p->m;
    g.n = (int)p->h;
    g.k = (int)p->k;
    fb_status st = pw_launch_dual<T>(env, tx, twg, twu, g, 2 * p->h,
                                     p->gate_act);
    if (st != FB_STATUS_SUCCESS || FBF_KNOB(h_only))
        return st;
    PwArgs<T> d;
    memset(&d, 0, sizeof d);
    d.c = static_cast<T *>(p->y);
    d.ldc = p->ldy;
    d.bias = static_cast<const T *>(p->bd);
    d.m = (int)p->m;
    d.n = (int)p->n;
    d.k = (int)p->h;
    const int bn = FBF_KNOB(prefill_down_bn) ? FBF_KNOB(prefill_down_bn)
                                                 : pw_down_bn(env, p->m, p->n);
    if (bn == 256)
        return pw_launch<T, false, 256, FB_ACT_NONE>(env, th, twd, twd, d, p->n);
    return pw_launch<T, false, 128, FB_ACT_NONE>(env, th, twd, twd, d, p->n);
}

} /* namespace fbf */

using namespace fbf;

/* Covered: 16-bit, m > 32 (fewer rows are the decode kernels'); k, h,
 * ldx multiples of 8 and 16-byte aligned X, weights and hbuf (the tensor
 * maps' rules); a compute 9.0 device and a module built for sm_90a. */
fb_status fbf_prefill_mlp_wgmma(const fb_fused_env *env,
                                const fb_mlp_problem *p, void *hbuf,
                                size_t hbuf_bytes, fbf_mode mode,
                                char *path, size_t pathlen)
{
#ifdef FB_HAVE_SM90A
    if (env->cc_major != 9 || env->cc_minor != 0)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype != FB_DTYPE_BF16 && p->dtype != FB_DTYPE_F16)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m <= 32 || p->k < 8 || p->h < 8 || p->n < 1 || p->k % 8 ||
        p->h % 8 || p->ldx % 8 || p->m >= ((int64_t)1 << 30) ||
        p->h >= ((int64_t)1 << 30) || p->n >= ((int64_t)1 << 30) ||
        p->k >= ((int64_t)1 << 30))
        return FB_STATUS_NOT_SUPPORTED;
    if (!tiny_aligned16(p->x) || !tiny_aligned16(p->wg) ||
        !tiny_aligned16(p->wu) || !tiny_aligned16(p->wd))
        return FB_STATUS_NOT_SUPPORTED;
    if (PwShape<true, 256>::SMEM > env->smem_optin ||
        PwShape<false, 256>::SMEM > env->smem_optin ||
        PwShape<false, 128>::SMEM > env->smem_optin || !fbf_tma_available())
        return FB_STATUS_NOT_SUPPORTED;
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    if (!hbuf || !tiny_aligned16(hbuf) ||
        hbuf_bytes < (size_t)p->m * (size_t)p->h * 2)
        return FB_STATUS_NOT_SUPPORTED;
    const fb_status st = p->dtype == FB_DTYPE_BF16
                             ? pw_mlp<__nv_bfloat16>(env, p, hbuf)
                             : pw_mlp<__half>(env, p, hbuf);
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, p->dtype == FB_DTYPE_BF16
                                        ? "mlp_prefill_wgmma_bf16"
                                        : "mlp_prefill_wgmma_f16");
    return st;
#else
    (void)env; (void)p; (void)hbuf; (void)hbuf_bytes; (void)mode;
    (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}
