/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_gemm_sm90.cu -- the Hopper GEMM engine (sm_90a): gemm_bias_act on
 * 16-bit data and the gated MLP's two GEMMs, each one persistent launch.
 *
 * The engine computes, for row-major D (rows x cols, ld):
 *   single:  D = act(alpha X W^T + beta D + bias)
 *   dual:    D = act(X Wg^T + bg) .* (X Wu^T + bu)
 * X (rows x k) and W (cols x k) row-major, i.e. both K-major: nn.Linear's
 * layout, the column-major gemm problem with op(A) = A^T and op(B) = B.
 *
 * Pieces, each knowing nothing of the others' insides:
 *   - the tile scheduler: a cluster of CM x CN CTAs takes CM x CN output
 *     tiles at a time, the units grouped 4 or 8 unit-rows deep so that
 *     the units in flight share their operands in L2; cluster c takes
 *     units c, c + clusters, ...;
 *   - the mainloop: one producer thread a CTA issues TMA copies of a
 *     k-block (64) into a ring of shared-memory stages (full/empty
 *     mbarriers), multicasting its share of the tile its cluster row (A)
 *     or column (B) has in common, so each operand byte leaves L2 once a
 *     cluster; consumer warpgroups issue wgmma from the stages;
 *   - the epilogue: the fusion is data (alpha, beta, bias on rows or
 *     columns, the activation; dual: the gate and up biases), applied to
 *     the fp32 accumulators in registers and rounded once; the rounded
 *     tile goes to shared memory (stmatrix) and from there to D by TMA,
 *     so a warpgroup is back at its next mainloop while the copy runs
 *     (where D's layout allows a tensor map and C is not read; else
 *     each thread stores its pairs).
 *     The dual GEMM's B stage is 64 (or 128) gate rows then as many up
 *     rows, so every thread holds the gate and up values of its outputs
 *     and H = act(G + bg) .* (U + bu) is formed in fp32.
 * Two arrangements of the two consumer warpgroups (GeMode, chosen per
 * launch by ge_mode_single / ge_mode_dual):
 *   - ping-pong: each warpgroup owns alternate 128 x 128 tiles; a pair of
 *     named barriers lets one issue its mainloop while the other runs its
 *     epilogue, so the tensor cores do not wait for epilogues (clusters of
 *     2 x 2, or of 2 x 1 to fill every SM);
 *   - cooperative: both work on one 128 x 256 tile, 64 rows each (m64n256),
 *     twice the reuse a stage, the epilogue exposed (clusters of 2 x 1).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <atomic>
#include <type_traits>
#include <cuda.h> /* CUtensorMap and its enums (types only) */
#include "device_math.cuh"
#include "fused_internal.h"
#include "fused_tma_map.h"
#include "fused_tiny.cuh"
#include "fused_wgmma.cuh"

namespace fbf {

enum {
    kGeBM = 128,      /* tile rows: two m64 wgmma halves */
    kGeBK = 64,       /* k-block: one 128-byte swizzled row */
    kGeThreads = 384  /* warpgroup 0 loads, 1 and 2 compute */
};

/* The ways the consumers share the work:
 *   GE_PINGPONG       each warpgroup owns whole 128 x 128 tiles (two
 *                     m64n128 halves), alternating with the other, so one
 *                     runs its epilogue while the other's mainloop runs;
 *                     clusters of 2 x 2, which fit on fewer SMs than the
 *                     device has (120 of 132 on an H100);
 *   GE_PINGPONG_PAIR  the same in clusters of 2 x 1: every SM, each
 *                     stage's A tile its own, so more bytes from L2 a flop;
 *   GE_COOPERATIVE    both warpgroups work on one 128 x 256 tile, 64 rows
 *                     each (m64n256): twice the operand reuse a stage,
 *                     the epilogue exposed; clusters of 2 x 1. */
enum GeMode { GE_PINGPONG = 0, GE_COOPERATIVE = 1, GE_PINGPONG_PAIR = 2 };

template <int MODE> struct GeShape {
    static const bool PINGPONG = MODE != GE_COOPERATIVE;
    static const int BN = PINGPONG ? 128 : 256;  /* B rows a stage */
    static const int NACC = PINGPONG ? 64 : 128; /* a wgmma's */
    static const int HALVES = PINGPONG ? 2 : 1;  /* m64 a WG */
    static const int STAGE_BYTES = (kGeBM + BN) * 128;
    static const int STAGES = PINGPONG ? 6 : 4;
    static const int CONSUMER_WARPS = PINGPONG ? 4 : 8;
    /* the epilogue's staging: 64 rows x 128 columns of 16-bit output (two
     * 64-column boxes) a consumer warpgroup */
    static const int OUT_BYTES = 2 * 16384;
    /* the cluster: CM row tiles share each B tile, CN column tiles each A
     * tile (TMA multicast) */
    static const int CM = 2;
    static const int CN = MODE == GE_PINGPONG ? 2 : 1;
    /* unit-rows a raster group: deeper groups keep more of a long-k
     * product's operands in flight than L2 holds, the pairs' most (each
     * reads its own X tile) */
    static const int GROUP = MODE == GE_PINGPONG_PAIR ? 4 : 8;
    static const int SMEM =
        1024 + STAGES * STAGE_BYTES + OUT_BYTES + 2 * STAGES * 8 + 16;
};

/* The fusion, as data. */
template <typename T> struct GeEpilogue {
    T *d;            /* output (and C when beta != 0), row stride ldd */
    int64_t ldd;
    float alpha, beta;
    const T *bias;   /* single: bias; dual: gate bias. NULL: none */
    const T *bias2;  /* dual: up bias, or NULL */
    /* e4m3 weights widened to T: the fp32 scale of each output column
     * (single; dual: of the gate, and scale2 of the up rows), applied to
     * the accumulator before anything else. NULL: none */
    const float *scale, *scale2;
    int bias_on_cols; /* single: bias[col] (nn.Linear) or bias[row] */
    int read_c;      /* beta != 0: C is read */
    int d_pairs;     /* d and ldd allow 4-byte stores of column pairs */
};

template <typename T> struct GeArgs {
    int rows, cols, k;      /* cols: output columns */
    int tiles_r, tiles_c;
    int group;              /* unit-rows a raster group */
    int tma_store;          /* D through shared memory and its tensor map */
    /* stream-K (GeSchedule): units [0, dp_units) are done whole; the k-
     * blocks of the rest go in equal contiguous shares to sk_clusters
     * clusters. Each segment's fp32 sums land in partial (sk_segments
     * slots a unit); the last to arrive on the unit's counter (arrivals,
     * zero between launches) sums them all and runs the epilogue.
     * sk_clusters 0: every unit whole. */
    int dp_units, sk_clusters, sk_segments;
    float *partial;
    unsigned int *arrivals;
    GeEpilogue<T> ep;
};

/* One item of a cluster's work: unit u's k-blocks [kb0, kb1); seg < 0
 * for a whole unit (its epilogue follows), else its place among the
 * unit's stream-K segments (its sums go to a partial slot). */
struct GeWork {
    int u, kb0, kb1, seg, segments;
};

/* A cluster's items in order: its whole units (c, c + step, ... below
 * dp_units), then its share [c T / P, (c + 1) T / P) of the stream-K
 * units' T k-blocks, cut where a unit ends. The producer and the
 * consumers walk the same sequence. */
struct GeSchedule {
    int c, step, dp_units, kblocks, P, next_dp;
    long long T, t, t_end;

    __host__ __device__ GeSchedule(int c_, int step_, int units, int dp,
                                   int kb, int p)
        : c(c_), step(step_), dp_units(dp), kblocks(kb), P(p), next_dp(c_),
          T((long long)(units - dp) * kb), t(0), t_end(0)
    {
        if (c < P) {
            t = (long long)c * T / P;
            t_end = (long long)(c + 1) * T / P;
        }
    }

    /* the cluster whose share holds stream-K k-block x */
    __host__ __device__ int owner(long long x) const
    {
        return (int)(((x + 1) * P - 1) / T);
    }

    /* segments of stream-K unit i (counted from dp_units) */
    __host__ __device__ int segments(int i) const
    {
        const long long s = (long long)i * kblocks;
        return owner(s + kblocks - 1) - owner(s) + 1;
    }

    __host__ __device__ bool next(GeWork &w)
    {
        if (next_dp < dp_units) {
            w.u = next_dp;
            w.kb0 = 0;
            w.kb1 = kblocks;
            w.seg = -1;
            w.segments = 1;
            next_dp += step;
            return true;
        }
        if (t >= t_end)
            return false;
        const long long i = t / kblocks, start = i * kblocks;
        const long long end = t_end < start + kblocks ? t_end : start + kblocks;
        w.u = dp_units + (int)i;
        w.kb0 = (int)(t - start);
        w.kb1 = (int)(end - start);
        /* a unit inside one share is done whole */
        w.segments = owner(start + kblocks - 1) - owner(start) + 1;
        w.seg = w.segments == 1 ? -1 : c - owner(start);
        t = end;
        return true;
    }
};

/* Unit u of the raster: grouped `group` unit-rows at a time. */
__host__ __device__ __forceinline__ void ge_tile(int u, int units_r,
                                                 int units_c, int group,
                                                 int &ur, int &uc)
{
    const int per = group * units_c;
    const int first = (u / per) * group;
    const int size = min(group, units_r - first);
    const int v = u % per;
    ur = first + v % size;
    uc = v / size;
}

#if FB_WGMMA_BODY

__device__ __forceinline__ void named_sync(int id)
{
    asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory");
}

__device__ __forceinline__ void named_arrive(int id)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory");
}

/* One 16-bit value to fp32, and a pair to memory. */
template <typename T>
__device__ __forceinline__ float ge_load(const T *p)
{
    return fb_load_f32(*p);
}

/* bias[col] and bias[col + 1] in fp32: 0 past cols, or without a bias. */
template <typename T>
__device__ __forceinline__ void ge_bias_pair(const T *bias, int col, int cols,
                                             float (&b)[2])
{
#pragma unroll
    for (int c = 0; c < 2; ++c)
        b[c] = bias && col + c < cols ? ge_load(bias + col + c) : 0.0f;
}

/* scale[col] and scale[col + 1]: 1 past cols, or without a scale. */
__device__ __forceinline__ void ge_scale_pair(const float *scale, int col,
                                              int cols, float (&s)[2])
{
#pragma unroll
    for (int c = 0; c < 2; ++c)
        s[c] = scale && col + c < cols ? scale[col + c] : 1.0f;
}

/* The dual epilogue's data for columns col and col + 1: the gate and up
 * biases and scales. */
struct GeGatePair {
    float bg[2], bu[2], sg[2], su[2];
};

template <typename T>
__device__ __forceinline__ GeGatePair ge_gate_pair(const GeEpilogue<T> &e,
                                                   int col, int cols)
{
    GeGatePair q;
    ge_bias_pair(e.bias, col, cols, q.bg);
    ge_bias_pair(e.bias2, col, cols, q.bu);
    ge_scale_pair(e.scale, col, cols, q.sg);
    ge_scale_pair(e.scale2, col, cols, q.su);
    return q;
}

/* The activation a tile's epilogue applies: the fast forms where there
 * are many (fused_device.cuh states their bound). */
template <int ACT> __device__ __forceinline__ float ge_act(float x)
{
    return act_fast((fb_activation)ACT, x);
}

/* H = act(sg G + bg) .* (su U + bu) for one output of column pair member
 * c (0 or 1). */
template <int ACT>
__device__ __forceinline__ float ge_gated(const GeGatePair &q, int c,
                                          float g, float u)
{
    return ge_act<ACT>(fmaf(g, q.sg[c], q.bg[c])) * fmaf(u, q.su[c], q.bu[c]);
}

/* The single epilogue's data for columns col and col + 1: the bias on
 * columns (0 without one) and the multiplier, alpha times the column's
 * scale. */
struct GeColPair {
    float b[2], s[2];
};

template <typename T>
__device__ __forceinline__ GeColPair ge_col_pair(const GeEpilogue<T> &e,
                                                 int col, int cols)
{
    GeColPair q;
    ge_bias_pair(e.bias_on_cols ? e.bias : (const T *)NULL, col, cols, q.b);
    ge_scale_pair(e.scale, col, cols, q.s);
    q.s[0] *= e.alpha; /* alpha alone without a scale */
    q.s[1] *= e.alpha;
    return q;
}

/* What the staged epilogue needs of each column pair it forms: the dual
 * epilogue's gate pair, the single's column pair. */
template <typename T>
__device__ __forceinline__ void ge_vec_load(GeGatePair &q,
                                            const GeEpilogue<T> &e, int col,
                                            int cols)
{
    q = ge_gate_pair(e, col, cols);
}

template <typename T>
__device__ __forceinline__ void ge_vec_load(GeColPair &q,
                                            const GeEpilogue<T> &e, int col,
                                            int cols)
{
    q = ge_col_pair(e, col, cols);
}

/* Single epilogue of one m64 half (NACC accumulators, NACC / 4 blocks of
 * 8 columns): rows row + {0, 8}, columns col0 + 8 j + {0, 1}. */
template <typename T, int ACT, int NACC>
__device__ __forceinline__ void ge_epilogue_single(const GeArgs<T> &a,
                                                   const float (&acc)[NACC],
                                                   int row, int col0)
{
    const GeEpilogue<T> &e = a.ep;
#pragma unroll
    for (int j = 0; j < NACC / 4; ++j) {
        const int col = col0 + 8 * j;
        float bc[2], sc[2];
        ge_bias_pair(e.bias_on_cols ? e.bias : (const T *)NULL, col, a.cols,
                     bc);
        ge_scale_pair(e.scale, col, a.cols, sc);
        sc[0] *= e.alpha; /* alpha alone where there is no scale */
        sc[1] *= e.alpha;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = row + 8 * half;
            if (r >= a.rows)
                continue;
            float v0 = acc[4 * j + 2 * half] * sc[0];
            float v1 = acc[4 * j + 2 * half + 1] * sc[1];
            T *p = e.d + (int64_t)r * e.ldd + col;
            const bool both = col + 1 < a.cols;
            if (e.read_c) {
                if (col < a.cols)
                    v0 = fmaf(e.beta, ge_load(p), v0);
                if (both)
                    v1 = fmaf(e.beta, ge_load(p + 1), v1);
            }
            if (e.bias) {
                if (e.bias_on_cols) {
                    v0 += bc[0];
                    v1 += bc[1];
                } else {
                    const float br = ge_load(e.bias + r);
                    v0 += br;
                    v1 += br;
                }
            }
            v0 = ge_act<ACT>(v0);
            v1 = ge_act<ACT>(v1);
            if (both && e.d_pairs) {
                *reinterpret_cast<uint32_t *>(p) = pack2<T>(v0, v1);
            } else {
                if (col < a.cols)
                    p[0] = fb_store_as<T>(v0);
                if (both)
                    p[1] = fb_store_as<T>(v1);
            }
        }
    }
}

/* Dual epilogue of one m64 half: accumulator columns [0, NACC / 2) are
 * the gate, [NACC / 2, NACC) the up projection of the same output
 * columns, so each thread holds both halves of its products. */
template <typename T, int ACT, int NACC>
__device__ __forceinline__ void ge_epilogue_dual(const GeArgs<T> &a,
                                                 const float (&acc)[NACC],
                                                 int row, int col0)
{
    const GeEpilogue<T> &e = a.ep;
    const int UP = NACC / 8; /* blocks of 8 columns to the up half */
#pragma unroll
    for (int j = 0; j < UP; ++j) {
        const int col = col0 + 8 * j;
        const GeGatePair gp = ge_gate_pair(e, col, a.cols);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = row + 8 * half;
            if (r >= a.rows)
                continue;
            float h[2];
#pragma unroll
            for (int q = 0; q < 2; ++q)
                h[q] = ge_gated<ACT>(gp, q, acc[4 * j + 2 * half + q],
                                     acc[4 * (j + UP) + 2 * half + q]);
            T *p = e.d + (int64_t)r * e.ldd + col;
            if (col + 1 < a.cols && e.d_pairs) {
                *reinterpret_cast<uint32_t *>(p) = pack2<T>(h[0], h[1]);
            } else {
                if (col < a.cols)
                    p[0] = fb_store_as<T>(h[0]);
                if (col + 1 < a.cols)
                    p[1] = fb_store_as<T>(h[1]);
            }
        }
    }
}

/* One output of the staged epilogue, i (0..3) its place in a block's
 * four (column pair member i & 1): dual, act(gate) .* up from the
 * accumulators x and y; single, act(s x + bias), the bias on columns
 * from the pair, on rows given as y. */
template <int ACT, typename T>
__device__ __forceinline__ float ge_staged_value(const GeGatePair &q,
                                                 const GeEpilogue<T> &, int i,
                                                 float x, float y)
{
    return ge_gated<ACT>(q, i & 1, x, y);
}

template <int ACT, typename T>
__device__ __forceinline__ float ge_staged_value(const GeColPair &q,
                                                 const GeEpilogue<T> &e, int i,
                                                 float x, float y)
{
    return ge_act<ACT>(x * q.s[i & 1] + (e.bias_on_cols ? q.b[i & 1] : y));
}

/* The epilogue through shared memory, for one m64 half whose first row
 * is row0 (of D) and first column n0: the values formed as in
 * ge_epilogue_single / _dual (no C), rounded once, written with stmatrix
 * into this warpgroup's staging (out: 64 rows x 128 columns, two
 * 128-byte-swizzled boxes of 64 columns) and stored by TMA, 128 columns
 * a pass. Rows and columns past D's edges are dropped by the copy. */
template <typename T, bool DUAL, int ACT, int NACC>
__device__ __forceinline__ void ge_epilogue_staged(const GeArgs<T> &a,
                                                   const float (&acc)[NACC],
                                                   const CUtensorMap *tm_d,
                                                   unsigned char *out,
                                                   int row0, int n0, int cw)
{
    const GeEpilogue<T> &e = a.ep;
    const int BLOCKS = DUAL ? NACC / 8 : NACC / 4; /* of 8 output columns */
    const int PASS = BLOCKS < 16 ? BLOCKS : 16;    /* blocks a pass */
    const int UP = NACC / 8; /* dual: blocks to the up half */
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    const int r = row0 + 16 * warp + g; /* this thread's rows: r, r + 8 */
    float br[2] = {0.0f, 0.0f};
    if (!DUAL && e.bias && !e.bias_on_cols) {
        if (r < a.rows)
            br[0] = ge_load(e.bias + r);
        if (r + 8 < a.rows)
            br[1] = ge_load(e.bias + r + 8);
    }
    /* the row and block of the matrix whose row address this lane gives */
    const int srow = 16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1);
    const int sblk = lane >> 4;
    const bool leader = (threadIdx.x & 127) == 0;
    /* column blocks whose vectors are loaded together (registers: 8
     * floats a block dual, 4 single) */
    const int CH = DUAL ? 4 : 8;
    typedef typename std::conditional<DUAL, GeGatePair, GeColPair>::type Vec;
#pragma unroll
    for (int p = 0; p < BLOCKS / PASS; ++p) {
        Vec v[CH];
#pragma unroll
        for (int b = 0; b < CH; ++b)
            ge_vec_load(v[b], e, n0 + 8 * (p * PASS + b) + 2 * t, a.cols);
        /* the last copy out of the staging has read it */
        if (leader)
            tma_store_wait<true>();
        asm volatile("bar.sync %0, 128;\n" ::"r"(3 + cw) : "memory");
#pragma unroll
        for (int c0 = 0; c0 < PASS; c0 += CH) {
            if (c0 > 0) {
#pragma unroll
                for (int b = 0; b < CH; ++b)
                    ge_vec_load(v[b], e, n0 + 8 * (p * PASS + c0 + b) + 2 * t,
                                a.cols);
            }
#pragma unroll
            for (int jj = c0; jj < c0 + CH; jj += 2) {
                uint32_t q[4];
#pragma unroll
                for (int b = 0; b < 2; ++b) {
                    const int j = p * PASS + jj + b;
                    const Vec &w = v[jj - c0 + b];
                    float o[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        /* dual: the up value; single: the row's bias */
                        const float y = DUAL ? acc[4 * (j + UP) + i]
                                             : br[i >> 1];
                        o[i] = ge_staged_value<ACT>(w, e, i, acc[4 * j + i],
                                                    y);
                    }
                    q[2 * b] = pack2<T>(o[0], o[1]);     /* row g */
                    q[2 * b + 1] = pack2<T>(o[2], o[3]); /* row g + 8 */
                }
                const int cb = jj + sblk; /* block within the pass */
                stmatrix_x4(smem_addr(out) + (cb >> 3) * 8192 +
                                swz128(srow, cb & 7),
                            q[0], q[1], q[2], q[3]);
            }
        }
        fence_proxy_async();
        asm volatile("bar.sync %0, 128;\n" ::"r"(3 + cw) : "memory");
        if (leader) {
#pragma unroll
            for (int b = 0; b < PASS / 8; ++b)
                tma_store_2d(tm_d, out + b * 8192, n0 + 8 * p * PASS + 64 * b,
                             row0);
        }
    }
}

/* A consumer warp is done with a stage: one arrival on each CTA that
 * sent part of it (its own, the peers of its cluster column for B and of
 * its cluster row for A), one lane a CTA. */
template <int CM, int CN>
__device__ __forceinline__ void ge_release(uint64_t *empty, int lane, int rm,
                                           int rn)
{
    if (CM * CN == 1) {
        if (lane == 0)
            mbar_arrive(empty);
        return;
    }
    int rank = -1;
    if (lane < CM) {
        rank = lane + CM * rn; /* the column, this CTA included */
    } else if (lane < CM + CN - 1) {
        int j = lane - CM;     /* the row, this CTA excluded */
        j += j >= rn;
        rank = rm + CM * j;
    }
    if (rank >= 0)
        mbar_arrive_cluster(empty, (uint32_t)rank);
}

/* The partial slot of a stream-K segment's sums for one warpgroup: unit
 * i (counted from dp_units), segment seg, the CTA's rank in its cluster,
 * and part (the cooperative warpgroup's rows; 0 in ping-pong). Fragment
 * order, a float4 a thread at a time, so that a warp's accesses are
 * whole lines. */
template <int HALVES, int NACC, int PARTS>
__device__ __forceinline__ float4 *ge_slot(float *partial, int cluster,
                                           int segments, int i, int seg,
                                           int rank, int part)
{
    const size_t wg = (size_t)HALVES * NACC * 128; /* floats */
    return reinterpret_cast<float4 *>(
        partial + (((size_t)i * segments + seg) * cluster + rank) * PARTS * wg +
        (size_t)part * wg);
}

/* acc = (ADD ? acc : 0) + slot s of this warpgroup. A helper with ADD
 * fixed: written as one loop with a select on the segment, the sum made
 * ptxas spill the tile's accumulators. */
template <int HALVES, int NACC, int PARTS, bool ADD, typename T>
__device__ __forceinline__ void ge_add_slot(const GeArgs<T> &a,
                                            float (&acc)[HALVES][NACC],
                                            int cluster, int i, int s,
                                            int rank, int part)
{
    const float4 *p = ge_slot<HALVES, NACC, PARTS>(a.partial, cluster,
                                                   a.sk_segments, i, s, rank,
                                                   part) +
                      (threadIdx.x & 127);
#pragma unroll
    for (int h = 0; h < HALVES; ++h)
#pragma unroll
        for (int q = 0; q < NACC / 4; ++q) {
            const float4 v = __ldcg(p + (h * (NACC / 4) + q) * 128);
            const int j = 4 * q;
            acc[h][j] = ADD ? acc[h][j] + v.x : v.x;
            acc[h][j + 1] = ADD ? acc[h][j + 1] + v.y : v.y;
            acc[h][j + 2] = ADD ? acc[h][j + 2] + v.z : v.z;
            acc[h][j + 3] = ADD ? acc[h][j + 3] + v.w : v.w;
        }
}

/* A stream-K segment of one warpgroup's tile: its sums go to their
 * slot, and the warpgroup arrives on the unit's counter. The last to
 * arrive sums every segment's slot in segment order (so the bits do not
 * depend on who came last), leaves the counter at zero for the next
 * launch, and returns true: its accumulators now hold the whole unit's
 * sums, for the epilogue. Nobody waits for anybody. bar: this
 * warpgroup's named barrier; last: a shared word of its own. */
template <int HALVES, int NACC, int PARTS, typename T>
__device__ __forceinline__ bool ge_segment_done(const GeArgs<T> &a,
                                                float (&acc)[HALVES][NACC],
                                                int cluster, int i, int seg,
                                                int segments, int rank,
                                                int part, int bar, int *last)
{
    const int tid = threadIdx.x & 127;
    float4 *mine = ge_slot<HALVES, NACC, PARTS>(a.partial, cluster,
                                                a.sk_segments, i, seg, rank,
                                                part) +
                   tid;
#pragma unroll
    for (int h = 0; h < HALVES; ++h)
#pragma unroll
        for (int q = 0; q < NACC / 4; ++q)
            mine[(h * (NACC / 4) + q) * 128] =
                make_float4(acc[h][4 * q], acc[h][4 * q + 1],
                            acc[h][4 * q + 2], acc[h][4 * q + 3]);
    __threadfence(); /* the sums are visible before the arrival */
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
    if (tid == 0) {
        unsigned int *count =
            a.arrivals + ((size_t)i * cluster + rank) * PARTS + part;
        const bool final = atomicAdd(count, 1u) == (unsigned)segments - 1;
        if (final)
            *count = 0u;
        *last = final;
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
    if (!*last)
        return false;
    __threadfence(); /* the others' sums, after their arrivals */
    /* in segment order, its own read back too */
    ge_add_slot<HALVES, NACC, PARTS, false>(a, acc, cluster, i, 0, rank, part);
#pragma unroll 1
    for (int s = 1; s < segments; ++s)
        ge_add_slot<HALVES, NACC, PARTS, true>(a, acc, cluster, i, s, rank,
                                               part);
    return true;
}

#endif /* FB_WGMMA_BODY */

/* DUAL: W is Wg (tm_b) and Wu (tm_b2), BN / 2 rows of each a stage. ACT:
 * the activation, fixed at compile time so that the epilogue is straight
 * code. MODE: GeMode. */
template <typename T, bool DUAL, int ACT, int MODE, int CM, int CN>
__global__ void __launch_bounds__(kGeThreads, 1)
    gemm_sm90_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_b,
                     const __grid_constant__ CUtensorMap tm_b2,
                     const __grid_constant__ CUtensorMap tm_d,
                     const GeArgs<T> a)
{
#if FB_WGMMA_BODY
    typedef GeShape<MODE> S;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem =
        smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    uint64_t *full = reinterpret_cast<uint64_t *>(
        smem + S::STAGES * S::STAGE_BYTES + S::OUT_BYTES);
    uint64_t *empty = full + S::STAGES;
    int *sk_last = reinterpret_cast<int *>(empty + S::STAGES);
    const int wg = threadIdx.x >> 7;
    const int CLUSTER = CM * CN;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S::STAGES; ++s) {
            mbar_init(&full[s], 1);
            /* every consumer warp of every CTA that sends this one part of
             * the stage (the peers in its cluster row and column) */
            mbar_init(&empty[s], S::CONSUMER_WARPS * (CM + CN - 1));
        }
        mbar_fence_init();
    }
    if (CLUSTER > 1)
        cluster_sync(); /* the peers' barriers exist before any multicast */
    else
        __syncthreads();
    const int crank = CLUSTER > 1 ? (int)cluster_rank() : 0;
    const int rm = crank % CM, rn = crank / CM;
    const int kblocks = (a.k + kGeBK - 1) / kGeBK;
    /* a cluster takes CM x CN tiles at a time (a unit): CTA (rm, rn) the
     * tile (CM ur + rm, CN uc + rn); the CTAs of a cluster column share
     * the B tile, those of a cluster row the A tile */
    const int units_r = (a.tiles_r + CM - 1) / CM;
    const int units_c = (a.tiles_c + CN - 1) / CN;
    const int units = units_r * units_c;
    const int first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
    const GeSchedule plan(first, step, units,
                          a.sk_clusters ? a.dp_units : units, kblocks,
                          a.sk_clusters);
    const int bn_out = DUAL ? S::BN / 2 : S::BN;
    const int ashare = kGeBM / CN, bshare = S::BN / CM; /* rows loaded */

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int stage = 0;
            uint32_t phase = 0;
            /* multicast masks: this CTA's cluster row (A) and column (B) */
            uint16_t amask = 0, bmask = 0;
            for (int j = 0; j < CN; ++j)
                amask |= (uint16_t)(1u << (rm + CM * j));
            for (int i = 0; i < CM; ++i)
                bmask |= (uint16_t)(1u << (i + CM * rn));
            GeSchedule sched = plan;
            GeWork w;
            while (sched.next(w)) {
                int ur, uc;
                ge_tile(w.u, units_r, units_c, a.group, ur, uc);
                const int m0 = (ur * CM + rm) * kGeBM;
                const int n0 = (uc * CN + rn) * bn_out;
                for (int kb = w.kb0; kb < w.kb1; ++kb) {
                    mbar_wait(&empty[stage], phase ^ 1);
                    unsigned char *st = smem + stage * S::STAGE_BYTES;
                    unsigned char *sb = st + kGeBM * 128;
                    mbar_arrive_expect_tx(&full[stage], S::STAGE_BYTES);
                    if (CN > 1)
                        tma_load_2d_multicast(st + rn * ashare * 128, &tm_a,
                                              &full[stage], kb * kGeBK,
                                              m0 + rn * ashare, amask);
                    else
                        tma_load_2d(st, &tm_a, &full[stage], kb * kGeBK, m0);
                    if (CM > 1) {
                        /* this CTA's share of B (dual: rank 0 the gate
                         * rows, rank 1 the up rows), into its column */
                        const CUtensorMap *tb =
                            DUAL && rm == 1 ? &tm_b2 : &tm_b;
                        const int brow = DUAL ? n0 : n0 + rm * bshare;
                        tma_load_2d_multicast(sb + rm * bshare * 128, tb,
                                              &full[stage], kb * kGeBK, brow,
                                              bmask);
                    } else if (DUAL) {
                        tma_load_2d(sb, &tm_b, &full[stage], kb * kGeBK, n0);
                        tma_load_2d(sb + (S::BN / 2) * 128, &tm_b2,
                                    &full[stage], kb * kGeBK, n0);
                    } else {
                        tma_load_2d(sb, &tm_b, &full[stage], kb * kGeBK, n0);
                    }
                    if (++stage == S::STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    float acc[S::HALVES][S::NACC];
    int it = 0; /* k-blocks of the CTA's sequence before this tile */
    GeSchedule sched = plan;
    GeWork w, next;
    bool more = sched.next(next);
    for (int L = 0; more; ++L) {
        w = next;
        more = sched.next(next);
        if (S::PINGPONG && (L & 1) != cw) {
            it += w.kb1 - w.kb0;
            continue;
        }
        int ur, uc;
        ge_tile(w.u, units_r, units_c, a.group, ur, uc);
        const int m0 = (ur * CM + rm) * kGeBM;
        const int n0 = (uc * CN + rn) * bn_out;
        /* ping-pong: the other warpgroup has issued its mainloop */
        if (S::PINGPONG && L > 0)
            named_sync(1 + cw);
        int stage = it % S::STAGES;
        uint32_t phase = (uint32_t)(it / S::STAGES) & 1u;
        int prev = -1;
        /* rows of A this warpgroup multiplies: all 128 (ping-pong, two
         * halves) or its own 64 (cooperative) */
        const int arow = S::PINGPONG ? 0 : 64 * cw;
        for (int kb = w.kb0; kb < w.kb1; ++kb) {
            mbar_wait(&full[stage], phase);
            const uint32_t st = smem_addr(smem + stage * S::STAGE_BYTES);
            const uint64_t db = wg_desc(st + kGeBM * 128);
            wg_fence();
#pragma unroll
            for (int s = 0; s < 4; ++s)
#pragma unroll
                for (int h = 0; h < S::HALVES; ++h)
                    wgmma_ss<T>(acc[h],
                                wg_desc(st + (arow + 64 * h) * 128) + 2 * s,
                                db + 2 * s, kb > w.kb0 || s > 0);
            wg_commit();
            wg_wait<1>();
            if (prev >= 0)
                ge_release<CM, CN>(&empty[prev], lane, rm, rn);
            prev = stage;
            if (++stage == S::STAGES) {
                stage = 0;
                phase ^= 1;
            }
        }
        /* ping-pong: the tensor cores are the other warpgroup's while
         * this one finishes */
        if (S::PINGPONG && more)
            named_arrive(1 + (cw ^ 1));
        wg_wait<0>();
#pragma unroll
        for (int h = 0; h < S::HALVES; ++h)
            pin(acc[h]);
        if (prev >= 0)
            ge_release<CM, CN>(&empty[prev], lane, rm, rn);
        it += w.kb1 - w.kb0;
        if (w.seg >= 0 &&
            !ge_segment_done<S::HALVES, S::NACC, S::PINGPONG ? 1 : 2>(
                a, acc, CLUSTER, w.u - plan.dp_units, w.seg, w.segments,
                crank,
                S::PINGPONG ? 0 : cw, 3 + cw, sk_last + cw))
            continue;
        const int col0 = n0 + 2 * t;
        unsigned char *out =
            smem + S::STAGES * S::STAGE_BYTES + cw * (S::OUT_BYTES / 2);
#pragma unroll
        for (int h = 0; h < S::HALVES; ++h) {
            const int row = m0 + arow + 64 * h + 16 * warp + g;
            if (a.tma_store)
                ge_epilogue_staged<T, DUAL, ACT, S::NACC>(
                    a, acc[h], &tm_d, out, m0 + arow + 64 * h, n0, cw);
            else if (DUAL)
                ge_epilogue_dual<T, ACT, S::NACC>(a, acc[h], row, col0);
            else
                ge_epilogue_single<T, ACT, S::NACC>(a, acc[h], row, col0);
        }
    }
    /* the copies out of the staging are done before the CTA leaves */
    if (a.tma_store && (threadIdx.x & 127) == 0)
        tma_store_wait<false>();
    }
    /* no CTA leaves while a peer may still arrive on its barriers */
    if (CLUSTER > 1) {
        __syncwarp();
        cluster_sync();
    }
#endif /* FB_WGMMA_BODY */
}

/* ---- host side ------------------------------------------------------- */

/* Once per (kernel, device): the opt-in shared memory, and how many
 * clusters of CLUSTER CTAs the device runs at once (a persistent grid
 * larger than that would leave its last clusters waiting for a whole
 * round). */
struct GeKernelState {
    TinyKernelState smem;
    std::atomic<int> clusters[64];
};

template <int CLUSTER>
static cudaError_t ge_prepare(GeKernelState &st, const void *func,
                              const fb_fused_env *env, int smem, int *grid)
{
    cudaError_t e = tiny_prepare(st.smem, func, env);
    if (e != cudaSuccess)
        return e;
    if (CLUSTER == 1) {
        *grid = env->sm_count;
        return cudaSuccess;
    }
    const int dev = env->device >= 0 && env->device < 64 ? env->device : 0;
    int n = st.clusters[dev].load(std::memory_order_acquire);
    if (n <= 0) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = CLUSTER;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(CLUSTER * env->sm_count);
        cfg.blockDim = dim3(kGeThreads);
        cfg.dynamicSmemBytes = (size_t)smem;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        e = cudaOccupancyMaxActiveClusters(&n, func, &cfg);
        if (e != cudaSuccess)
            return e;
        if (n <= 0)
            return cudaErrorInvalidConfiguration;
        st.clusters[dev].store(n, std::memory_order_release);
    }
    *grid = n * CLUSTER;
    return cudaSuccess;
}

/* Units of work (CM x CN output tiles, one a CTA of a cluster). */
template <int MODE> static int ge_units(int tiles_r, int tiles_c)
{
    typedef GeShape<MODE> S;
    return (tiles_r + S::CM - 1) / S::CM * ((tiles_c + S::CN - 1) / S::CN);
}

/* The clusters of the persistent grid: as many as run at once (most
 * CTAs), and no more CTAs than env's SMs: a caller may leave some to
 * other work (the tensor-parallel MLP to NCCL's kernels). */
static int ge_clusters(const fb_fused_env *env, int most, int cluster)
{
    int clusters = most / cluster;
    if (env->sm_count / cluster < clusters)
        clusters = env->sm_count / cluster > 0 ? env->sm_count / cluster : 1;
    return clusters;
}

/* Stream-K: whether sharing out the last, part-filled round's k-blocks
 * pays for the partial sums' round trip: in the cooperative arrangement
 * with a mainloop of 48 k-blocks or more, a last round at most half
 * full, and the idle part of that round at least 6 % of the launch's
 * rounds. In the ping-pong arrangements it won and lost alike, and
 * short mainloops, fuller rounds and many rounds lost or gained nothing
 * (docs/gemm-engine.md). */
static bool ge_stream_k_pays(int mode, int units, int clusters, int kblocks)
{
    const int rest = units % clusters, rounds = units / clusters + 1;
    return mode == GE_COOPERATIVE && kblocks >= 48 && rest > 0 &&
           2 * rest <= clusters &&
           100 * (clusters - rest) >= 6 * clusters * rounds;
}

/* Fewest k-blocks in a stream-K share. */
static const int kGeSkMin = 8;

/* The stream-K arrival counters: FB_FUSED_SK_COUNTERS of them in the
 * workspace's barrier region, zero when the module made it, and left at
 * zero by every launch. */
static_assert(FB_FUSED_SK_OFFSET + 4 * FB_FUSED_SK_COUNTERS <=
                  FB_FUSED_BARRIER_BYTES,
              "the counters fit the barrier region");

static unsigned int *ge_arrivals(const fb_fused_env *env)
{
    return reinterpret_cast<unsigned int *>(fb_fused_barrier_base(env) +
                                            FB_FUSED_SK_OFFSET);
}

/* Where the units do not divide evenly among the clusters, the rest's
 * k-blocks go to the clusters in equal shares of at least kGeSkMin, the
 * sums in fp32 to the workspace below its barrier region, as many
 * clusters as their slots fit there. No share: a stays as it is (every
 * unit whole). */
template <typename T, int MODE>
static void ge_plan_stream_k(const fb_fused_env *env, GeArgs<T> *a,
                             int units, int clusters)
{
    typedef GeShape<MODE> S;
    const int CLUSTER = S::CM * S::CN;
    const int knob = FBF_KNOB(engine_streamk); /* 1 never, 2 wherever it can */
    const int rest = units % clusters;
    const int kblocks = (a->k + kGeBK - 1) / kGeBK;
    const int parts = S::PINGPONG ? 1 : 2;
    if (knob == 1 || rest == 0 || env->workspace == NULL ||
        env->workspace_bytes < FB_FUSED_BARRIER_BYTES + 4096 ||
        rest * CLUSTER * parts > FB_FUSED_SK_COUNTERS ||
        (knob != 2 && !ge_stream_k_pays(MODE, units, clusters, kblocks)))
        return;
    const size_t room = env->workspace_bytes - FB_FUSED_BARRIER_BYTES - 256;
    const size_t tile = (size_t)kGeBM * S::BN * sizeof(float);
    const long long blocks = (long long)rest * kblocks;
    int P = blocks / kGeSkMin < clusters ? (int)(blocks / kGeSkMin) : clusters;
    for (; P > rest; --P) {
        const GeSchedule plan(0, 1, units, units - rest, kblocks, P);
        int most = 1;
        for (int i = 0; i < rest; ++i)
            most = plan.segments(i) > most ? plan.segments(i) : most;
        if ((size_t)rest * most * CLUSTER * tile <= room) {
            a->dp_units = units - rest;
            a->sk_clusters = P;
            a->sk_segments = most;
            a->partial = static_cast<float *>(env->workspace);
            a->arrivals = ge_arrivals(env);
            return;
        }
    }
}

template <typename T, bool DUAL, int ACT, int MODE>
static fb_status ge_launch(const fb_fused_env *env, const CUtensorMap &ta,
                           const CUtensorMap &tb, const CUtensorMap &tb2,
                           const CUtensorMap &td, GeArgs<T> &a)
{
    typedef GeShape<MODE> S;
    const int CLUSTER = S::CM * S::CN;
    static GeKernelState state;
    const void *func = reinterpret_cast<const void *>(
        &gemm_sm90_kernel<T, DUAL, ACT, MODE, S::CM, S::CN>);
    const int smem = S::SMEM;
    int most = 0;
    cudaError_t e = ge_prepare<CLUSTER>(state, func, env, smem, &most);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    const int units = ge_units<MODE>(a.tiles_r, a.tiles_c);
    const int clusters = ge_clusters(env, most, CLUSTER);
    int grid = (units < clusters ? units : clusters) * CLUSTER;
    if (a.group <= 0)
        a.group = S::GROUP;
    a.sk_clusters = 0;
    ge_plan_stream_k<T, MODE>(env, &a, units, clusters);
    if (a.sk_clusters > 0) /* the whole units take every cluster */
        grid = (a.dp_units > 0 ? clusters : a.sk_clusters) * CLUSTER;
    void *args[] = {const_cast<CUtensorMap *>(&ta),
                    const_cast<CUtensorMap *>(&tb),
                    const_cast<CUtensorMap *>(&tb2),
                    const_cast<CUtensorMap *>(&td), &a};
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kGeThreads);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = env->stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return fbf_launch_status(cudaLaunchKernelExC(&cfg, func, args));
}

template <typename T, bool DUAL, int MODE>
static fb_status ge_launch_act(const fb_fused_env *env, const CUtensorMap &ta,
                               const CUtensorMap &tb, const CUtensorMap &tb2,
                               const CUtensorMap &td, GeArgs<T> &a,
                               fb_activation act)
{
    switch (act) {
    case FB_ACT_NONE:
        return ge_launch<T, DUAL, FB_ACT_NONE, MODE>(env, ta, tb, tb2, td, a);
    case FB_ACT_RELU:
        return ge_launch<T, DUAL, FB_ACT_RELU, MODE>(env, ta, tb, tb2, td, a);
    case FB_ACT_GELU_TANH:
        return ge_launch<T, DUAL, FB_ACT_GELU_TANH, MODE>(env, ta, tb, tb2,
                                                          td, a);
    case FB_ACT_GELU_ERF:
        return ge_launch<T, DUAL, FB_ACT_GELU_ERF, MODE>(env, ta, tb, tb2, td,
                                                         a);
    case FB_ACT_SILU:
        return ge_launch<T, DUAL, FB_ACT_SILU, MODE>(env, ta, tb, tb2, td, a);
    }
    return FB_STATUS_NOT_SUPPORTED;
}

/* A rows x cols row-major 16-bit operand read in boxes of 64 columns x
 * box_rows rows, 128-byte swizzled, zeros past its edges. */
static bool ge_map(CUtensorMap *tm, fb_dtype dt, const void *base,
                   int64_t rows, int64_t cols, int64_t ld, int box_rows)
{
    return fbf_tma_map_16(tm, dt, base, rows, cols, ld, kGeBK, box_rows,
                          true);
}

/* Whether this build and device run the engine at all. */
static bool ge_device_ok(const fb_fused_env *env)
{
#ifdef FB_HAVE_SM90A
    return env->cc_major == 9 && env->cc_minor == 0 &&
           (size_t)GeShape<GE_PINGPONG>::SMEM <= env->smem_optin &&
           (size_t)GeShape<GE_COOPERATIVE>::SMEM <= env->smem_optin &&
           fbf_tma_available();
#else
    (void)env;
    return false;
#endif
}

/* A K-major operand the tensor maps take: 16-byte aligned base, rows a
 * multiple of 16 bytes apart. */
static bool ge_operand_ok(const void *p, int64_t ld)
{
    return tiny_aligned16(p) && ld % 8 == 0;
}

static bool ge_dims_ok(int64_t a, int64_t b, int64_t c)
{
    const int64_t lim = (int64_t)1 << 30;
    return a > 0 && b > 0 && c > 0 && a < lim && b < lim && c < lim;
}

template <typename T>
static GeArgs<T> ge_args(int64_t rows, int64_t cols, int64_t k, int bn_out,
                         void *d, int64_t ldd)
{
    GeArgs<T> a;
    memset(&a, 0, sizeof a);
    a.rows = (int)rows;
    a.cols = (int)cols;
    a.k = (int)k;
    a.tiles_r = (int)((rows + kGeBM - 1) / kGeBM);
    a.tiles_c = (int)((cols + bn_out - 1) / bn_out);
    a.group = FBF_KNOB(engine_group); /* 0: the arrangement's GROUP */
    a.ep.d = static_cast<T *>(d);
    a.ep.ldd = ldd;
    a.ep.alpha = 1.0f;
    a.ep.d_pairs = ((uintptr_t)d & 3u) == 0 && ldd % 2 == 0;
    return a;
}

/* D's tensor map for the staged epilogue (boxes of 64 x 64), where D's
 * layout allows one, C is not read, and the probe's knob does not ask for
 * the direct stores; else a.tma_store stays 0 and td is a copy of ta
 * (never read). D's rows must also be whole 16-byte units: where a row
 * ended in part of one, the copy gave wrong results (docs/gemm-engine.md). */
template <typename T>
static void ge_output_map(CUtensorMap *td, const CUtensorMap &ta, fb_dtype dt,
                          GeArgs<T> *a)
{
    a->tma_store = !a->ep.read_c && FBF_KNOB(engine_store) != 1 &&
                   tiny_aligned16(a->ep.d) && a->ep.ldd % 8 == 0 &&
                   a->cols % 8 == 0 &&
                   ge_map(td, dt, a->ep.d, a->rows, a->cols, a->ep.ldd, 64);
    if (!a->tma_store)
        *td = ta;
}

/* The consumers' arrangement for one launch (the engine_mode knob, for
 * the probe, else the rule). Ping-pong hides the epilogue behind the
 * other warpgroup's mainloop; cooperative tiles move fewer bytes through
 * L2 a flop but run the epilogue with the tensor cores idle. So: from
 * k = 2048 on, a product with an epilogue beyond alpha (an activation, a
 * bias, column scales) goes to ping-pong in clusters of 2, which fill
 * every SM, and a plain one to cooperative; a shorter mainloop to
 * ping-pong in clusters of 4, which move the fewest bytes. The
 * measurements behind the bounds are in docs/gemm-engine.md. */
static int ge_mode_single(fb_activation act, bool vectors, int64_t k)
{
    if (FBF_KNOB(engine_mode))
        return FBF_KNOB(engine_mode) - 1;
    if (k < 2048)
        return GE_PINGPONG;
    return act != FB_ACT_NONE || vectors ? GE_PINGPONG_PAIR : GE_COOPERATIVE;
}

static int ge_mode_dual(int64_t k)
{
    if (FBF_KNOB(engine_mode))
        return FBF_KNOB(engine_mode) - 1;
    return k <= 1024 ? GE_PINGPONG : GE_COOPERATIVE;
}

template <typename T, int MODE>
static fb_status ge_gemm_mode(const fb_fused_env *env,
                              const fb_gemm_problem *p, const float *scale,
                              bool *stream_k)
{
    typedef GeShape<MODE> S;
    /* D = C^T (row-major n x m), X = op(B)^T (B itself, k x n column-major
     * = n x k row-major), W = op(A) (A^T stored k x m = m x k row-major). */
    CUtensorMap tx, tw;
    if (!ge_map(&tx, p->dtype, p->b, p->n, p->k, p->ldb, kGeBM / S::CN) ||
        !ge_map(&tw, p->dtype, p->a, p->m, p->k, p->lda, S::BN / S::CM))
        return FB_STATUS_NOT_SUPPORTED;
    GeArgs<T> a = ge_args<T>(p->n, p->m, p->k, S::BN, p->c, p->ldc);
    a.ep.alpha = p->alpha;
    a.ep.beta = p->beta;
    a.ep.read_c = p->beta != 0.0f;
    a.ep.bias = static_cast<const T *>(p->ep.bias);
    a.ep.bias_on_cols = p->ep.bias_per_row;
    a.ep.scale = scale;
    CUtensorMap td;
    ge_output_map(&td, tx, p->dtype, &a);
    const fb_status st =
        ge_launch_act<T, false, MODE>(env, tx, tw, tw, td, a, p->ep.act);
    *stream_k = a.sk_clusters > 0;
    return st;
}

/* H = act(X Wg^T + bg) .* (X Wu^T + bu) into hbuf (row stride ldh). */
template <typename T, int MODE>
static fb_status ge_dual(const fb_fused_env *env, const fb_mlp_problem *p,
                         void *hbuf, int64_t ldh, const float *sg,
                         const float *su)
{
    typedef GeShape<MODE> S;
    CUtensorMap tx, twg, twu;
    if (!ge_map(&tx, p->dtype, p->x, p->m, p->k, p->ldx, kGeBM / S::CN) ||
        !ge_map(&twg, p->dtype, p->wg, p->h, p->k, p->k, S::BN / 2) ||
        !ge_map(&twu, p->dtype, p->wu, p->h, p->k, p->k, S::BN / 2))
        return FB_STATUS_NOT_SUPPORTED;
    GeArgs<T> g = ge_args<T>(p->m, p->h, p->k, S::BN / 2, hbuf, ldh);
    g.ep.bias = static_cast<const T *>(p->bg);
    g.ep.bias2 = static_cast<const T *>(p->bu);
    g.ep.scale = sg;
    g.ep.scale2 = su;
    CUtensorMap td;
    ge_output_map(&td, tx, p->dtype, &g);
    return ge_launch_act<T, true, MODE>(env, tx, twg, twu, td, g,
                                        p->gate_act);
}

/* Y = H Wd^T + bd. */
template <typename T, int MODE>
static fb_status ge_down(const fb_fused_env *env, const fb_mlp_problem *p,
                         void *hbuf)
{
    typedef GeShape<MODE> S;
    CUtensorMap th, twd;
    if (!ge_map(&th, p->dtype, hbuf, p->m, p->h, p->h, kGeBM / S::CN) ||
        !ge_map(&twd, p->dtype, p->wd, p->n, p->h, p->h, S::BN / S::CM))
        return FB_STATUS_NOT_SUPPORTED;
    GeArgs<T> d = ge_args<T>(p->m, p->n, p->h, S::BN, p->y, p->ldy);
    d.ep.bias = static_cast<const T *>(p->bd);
    d.ep.bias_on_cols = 1;
    CUtensorMap td;
    ge_output_map(&td, th, p->dtype, &d);
    return ge_launch<T, false, FB_ACT_NONE, MODE>(env, th, twd, twd, td, d);
}

template <typename T>
static fb_status ge_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                         const float *scale, bool *stream_k)
{
    switch (ge_mode_single(p->ep.act, p->ep.bias != NULL || scale != NULL,
                           p->k)) {
    case GE_PINGPONG:
        return ge_gemm_mode<T, GE_PINGPONG>(env, p, scale, stream_k);
    case GE_PINGPONG_PAIR:
        return ge_gemm_mode<T, GE_PINGPONG_PAIR>(env, p, scale, stream_k);
    default:
        return ge_gemm_mode<T, GE_COOPERATIVE>(env, p, scale, stream_k);
    }
}

/* A launch's rounds: units of its rows x cols output over the clusters
 * of the persistent grid (the kernel of act none stands for every
 * activation: they share the shared-memory size that sets the clusters);
 * where busy is not NULL, the share of those whole rounds' tiles that
 * hold output (ragged edges and the empty tiles of a part-filled cluster
 * count as idle); where stream_k is not NULL, whether stream-K's rule
 * shares out the last round (a mainloop of k). */
template <typename T, bool DUAL, int MODE>
static bool ge_rounds_of(const fb_fused_env *env, int64_t rows, int64_t cols,
                         int64_t k, double *rounds, double *busy = NULL,
                         bool *stream_k = NULL)
{
    typedef GeShape<MODE> S;
    const int CLUSTER = S::CM * S::CN;
    static GeKernelState state;
    const void *func = reinterpret_cast<const void *>(
        &gemm_sm90_kernel<T, DUAL, FB_ACT_NONE, MODE, S::CM, S::CN>);
    int most = 0;
    if (ge_prepare<CLUSTER>(state, func, env, S::SMEM, &most) != cudaSuccess)
        return false;
    const int bn_out = DUAL ? S::BN / 2 : S::BN;
    const int units = ge_units<MODE>((int)((rows + kGeBM - 1) / kGeBM),
                                     (int)((cols + bn_out - 1) / bn_out));
    const int clusters = ge_clusters(env, most, CLUSTER);
    *rounds = (double)units / clusters;
    if (busy != NULL)
        *busy = (double)rows / kGeBM * ((double)cols / bn_out) /
                ((double)CLUSTER * clusters * ceil(*rounds));
    if (stream_k != NULL)
        *stream_k = env->workspace != NULL &&
                    ge_stream_k_pays(MODE, units, clusters,
                                     (int)((k + kGeBK - 1) / kGeBK));
    return true;
}

/* The same for a single GEMM in the arrangement mode. */
template <typename T>
static bool ge_rounds_single(const fb_fused_env *env, int mode, int64_t rows,
                             int64_t cols, int64_t k, double *rounds,
                             double *busy = NULL, bool *stream_k = NULL)
{
    switch (mode) {
    case GE_PINGPONG:
        return ge_rounds_of<T, false, GE_PINGPONG>(env, rows, cols, k, rounds,
                                                   busy, stream_k);
    case GE_PINGPONG_PAIR:
        return ge_rounds_of<T, false, GE_PINGPONG_PAIR>(
            env, rows, cols, k, rounds, busy, stream_k);
    default:
        return ge_rounds_of<T, false, GE_COOPERATIVE>(env, rows, cols, k,
                                                      rounds, busy, stream_k);
    }
}

/* The dual GEMM in the arrangement the rule picks for it (the pairs are
 * not built for it: they won no shape clearly, docs/gemm-engine.md). */
template <typename T>
static fb_status ge_dual_any(const fb_fused_env *env, const fb_mlp_problem *p,
                             void *hbuf, int64_t ldh, const float *sg,
                             const float *su)
{
    return ge_mode_dual(p->k) == GE_PINGPONG
               ? ge_dual<T, GE_PINGPONG>(env, p, hbuf, ldh, sg, su)
               : ge_dual<T, GE_COOPERATIVE>(env, p, hbuf, ldh, sg, su);
}

template <typename T>
static fb_status ge_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                        void *hbuf)
{
    fb_status st = ge_dual_any<T>(env, p, hbuf, p->h, NULL, NULL);
    if (st != FB_STATUS_SUCCESS || FBF_KNOB(h_only))
        return st;
    switch (ge_mode_single(FB_ACT_NONE, p->bd != NULL, p->h)) {
    case GE_PINGPONG:
        return ge_down<T, GE_PINGPONG>(env, p, hbuf);
    case GE_PINGPONG_PAIR:
        return ge_down<T, GE_PINGPONG_PAIR>(env, p, hbuf);
    default:
        return ge_down<T, GE_COOPERATIVE>(env, p, hbuf);
    }
}

} /* namespace fbf */

using namespace fbf;

/* Whether the tensor maps read A (the engine's W: op(A) = A^T, m x k
 * row-major) and B (its X: op(B) = B, n x k row-major) where they are:
 * K-major, 16-byte aligned, rows a multiple of 16 bytes apart. */
static bool ge_a_in_place(const fb_gemm_problem *p)
{
    return p->transa && ge_operand_ok(p->a, p->lda);
}

static bool ge_b_in_place(const fb_gemm_problem *p)
{
    return !p->transb && ge_operand_ok(p->b, p->ldb);
}

/* What the engine can do: 16-bit data; dimensions below 2^30; a compute
 * 9.0 device and a module built for sm_90a. alpha == 0 and k == 0 are not
 * taken (A and B are not referenced then). */
static bool ge_gemm_shape_ok(const fb_fused_env *env,
                             const fb_gemm_problem *p)
{
    return ge_device_ok(env) &&
           (p->dtype == FB_DTYPE_BF16 || p->dtype == FB_DTYPE_F16) &&
           p->multiply && ge_dims_ok(p->m, p->n, p->k) &&
           p->ldc < ((int64_t)1 << 40);
}

/* Covered with both operands read in place (a row-major nn.Linear call
 * with aligned operands): what the e4m3 path's widened tiles give. */
static bool ge_gemm_covered(const fb_fused_env *env,
                            const fb_gemm_problem *p)
{
    return ge_gemm_shape_ok(env, p) && ge_a_in_place(p) && ge_b_in_place(p);
}

bool fbf_gemm_sm90_in_place(const fb_fused_env *env,
                            const fb_gemm_problem *p)
{
    return ge_gemm_covered(env, p);
}

size_t fbf_gemm_sm90_scratch(const fb_gemm_problem *p)
{
    size_t bytes = 0;
    if (!ge_a_in_place(p))
        bytes += fbf_pack16_bytes(p->m, p->k);
    if (!ge_b_in_place(p))
        bytes += fbf_pack16_bytes(p->n, p->k);
    return bytes;
}

/* p's A (the engine's W) or B (its X) replaced by its K-major copy at
 * dst, written first (on stream) when pack. !transa: A is m x k
 * column-major, its k across the rows; transb: op(B) = B^T, B is n x k
 * column-major. */
static fb_status ge_use_packed_a(cudaStream_t stream, fb_gemm_problem *p,
                                 void *dst, bool pack)
{
    fb_status st = FB_STATUS_SUCCESS;
    if (pack)
        st = fbf_pack16(stream, p->a, p->lda, !p->transa, p->m, p->k, dst);
    p->a = dst, p->lda = fbf_pack16_ld(p->k), p->transa = 1;
    return st;
}

static fb_status ge_use_packed_b(cudaStream_t stream, fb_gemm_problem *p,
                                 void *dst, bool pack)
{
    fb_status st = FB_STATUS_SUCCESS;
    if (pack)
        st = fbf_pack16(stream, p->b, p->ldb, p->transb != 0, p->n, p->k, dst);
    p->b = dst, p->ldb = fbf_pack16_ld(p->k), p->transb = 0;
    return st;
}

/* p with each operand the maps cannot read in place packed K-major into
 * env->scratch (A first, then B), the copies enqueued on env->stream. */
static fb_status ge_pack_operands(const fb_fused_env *env,
                                  const fb_gemm_problem *p,
                                  fb_gemm_problem *q)
{
    *q = *p;
    char *at = static_cast<char *>(env->scratch);
    fb_status st = FB_STATUS_SUCCESS;
    if (!ge_a_in_place(p)) {
        st = ge_use_packed_a(env->stream, q, at, true);
        at += fbf_pack16_bytes(p->m, p->k);
    }
    if (st == FB_STATUS_SUCCESS && !ge_b_in_place(p))
        st = ge_use_packed_b(env->stream, q, at, true);
    return st;
}

void fb_fused_path_mark_packed(char *path, size_t pathlen)
{
    static const char mark[] = "+pack";
    const size_t m = sizeof mark - 1;
    if (path == NULL)
        return;
    const size_t n = strlen(path);
    if ((n < m || strcmp(path + n - m, mark) != 0) && n + m < pathlen)
        memcpy(path + n, mark, m + 1);
}

size_t fb_fused_gemm_weights_packed_bytes(const fb_gemm_problem *p)
{
    if (p->weight_is_a)
        return ge_a_in_place(p) ? 0 : fbf_pack16_bytes(p->m, p->k);
    return ge_b_in_place(p) ? 0 : fbf_pack16_bytes(p->n, p->k);
}

fb_status fb_fused_gemm_use_packed_weights(cudaStream_t stream,
                                           fb_gemm_problem *p, void *dst,
                                           bool pack)
{
    return p->weight_is_a ? ge_use_packed_a(stream, p, dst, pack)
                          : ge_use_packed_b(stream, p, dst, pack);
}

fb_status fbf_gemm_sm90(const fb_fused_env *env, const fb_gemm_problem *p,
                        fbf_mode mode, char *path, size_t pathlen)
{
    if (!ge_gemm_shape_ok(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    const size_t need = fbf_gemm_sm90_scratch(p);
    if (need == 0)
        return fbf_gemm_sm90_scaled(env, p, NULL, path, pathlen);
    if (env->scratch == NULL || env->scratch_bytes < need ||
        !tiny_aligned16(env->scratch))
        return FB_STATUS_NOT_SUPPORTED;
    fb_gemm_problem q;
    fb_status st = ge_pack_operands(env, p, &q);
    if (st == FB_STATUS_SUCCESS)
        st = fbf_gemm_sm90_scaled(env, &q, NULL, path, pathlen);
    if (st == FB_STATUS_SUCCESS)
        fb_fused_path_mark_packed(path, pathlen);
    return st;
}

fb_status fbf_gemm_sm90_scaled(const fb_fused_env *env,
                               const fb_gemm_problem *p, const float *scale,
                               char *path, size_t pathlen)
{
    if (!ge_gemm_covered(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    bool sk = false;
    const bool bf = p->dtype == FB_DTYPE_BF16;
    const fb_status st = bf ? ge_gemm<__nv_bfloat16>(env, p, scale, &sk)
                            : ge_gemm<__half>(env, p, scale, &sk);
    /* "+sk": the last round's k-blocks were shared out (stream-K) */
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen,
                     bf ? (sk ? "gemm_sm90_bf16+sk" : "gemm_sm90_bf16")
                        : (sk ? "gemm_sm90_f16+sk" : "gemm_sm90_f16"));
    return st;
}

bool fbf_gemm_sm90_rounds(const fb_fused_env *env, const fb_gemm_problem *p,
                          double *rounds, double *busy)
{
    if (!ge_gemm_shape_ok(env, p))
        return false;
    /* D is X's rows (p->n) by W's (p->m), as ge_gemm_mode lays it out */
    const int mode = ge_mode_single(p->ep.act, p->ep.bias != NULL, p->k);
    return p->dtype == FB_DTYPE_BF16
               ? ge_rounds_single<__nv_bfloat16>(env, mode, p->n, p->m,
                                                 p->k, rounds, busy)
               : ge_rounds_single<__half>(env, mode, p->n, p->m, p->k,
                                          rounds, busy);
}

/* The MLP's two launches in rounds of the grid, each round's length in
 * proportion to its k (the dual GEMM's k, the down GEMM's h); a launch
 * whose last round stream-K shares out counts as full. */
template <typename T>
static bool ge_mlp_fill(const fb_fused_env *env, const fb_mlp_problem *p,
                        double *fill)
{
    double dual = 0.0, down = 0.0;
    bool dual_shared = false, down_shared = false;
    const bool ok =
        (ge_mode_dual(p->k) == GE_PINGPONG
             ? ge_rounds_of<T, true, GE_PINGPONG>(env, p->m, p->h, p->k,
                                                  &dual, NULL, &dual_shared)
             : ge_rounds_of<T, true, GE_COOPERATIVE>(
                   env, p->m, p->h, p->k, &dual, NULL, &dual_shared)) &&
        ge_rounds_single<T>(env, ge_mode_single(FB_ACT_NONE, p->bd != NULL,
                                                p->h),
                            p->m, p->n, p->h, &down, NULL, &down_shared);
    if (!ok)
        return false;
    const double k = (double)p->k, h = (double)p->h;
    *fill = (dual * k + down * h) /
            ((dual_shared ? dual : ceil(dual)) * k +
             (down_shared ? down : ceil(down)) * h);
    return true;
}

/* Covered: 16-bit data, m > 32 (fewer rows are the decode kernels'); k,
 * h, ldx multiples of 8 and X and the weights 16-byte aligned; H in hbuf
 * (m x h of the input type, 16-byte aligned). */
/* What the dual GEMM needs, and what the down GEMM adds. */
static bool ge_hidden_covered(const fb_fused_env *env,
                              const fb_mlp_problem *p)
{
    return ge_device_ok(env) &&
           (p->dtype == FB_DTYPE_BF16 || p->dtype == FB_DTYPE_F16) &&
           p->m > 32 && ge_dims_ok(p->m, p->h, p->k) &&
           ge_operand_ok(p->x, p->ldx) && ge_operand_ok(p->wg, p->k) &&
           ge_operand_ok(p->wu, p->k);
}

static bool ge_mlp_covered(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return ge_hidden_covered(env, p) && ge_dims_ok(p->n, 1, 1) &&
           ge_operand_ok(p->wd, p->h) && p->ldy < ((int64_t)1 << 40);
}

/* H's m rows of h elements, ldh apart, within hbuf_bytes. */
static bool ge_hbuf_ok(const fb_mlp_problem *p, const void *hbuf,
                       int64_t ldh, size_t hbuf_bytes)
{
    return hbuf && tiny_aligned16(hbuf) && ldh >= p->h && ldh % 8 == 0 &&
           ldh < ((int64_t)1 << 40) &&
           hbuf_bytes >= ((size_t)(p->m - 1) * (size_t)ldh + (size_t)p->h) * 2;
}

fb_status fbf_mlp_sm90(const fb_fused_env *env, const fb_mlp_problem *p,
                       void *hbuf, size_t hbuf_bytes, fbf_mode mode,
                       char *path, size_t pathlen)
{
    if (!ge_mlp_covered(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    if (!ge_hbuf_ok(p, hbuf, p->h, hbuf_bytes))
        return FB_STATUS_NOT_SUPPORTED;
    const fb_status st = p->dtype == FB_DTYPE_BF16
                             ? ge_mlp<__nv_bfloat16>(env, p, hbuf)
                             : ge_mlp<__half>(env, p, hbuf);
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, p->dtype == FB_DTYPE_BF16
                                        ? "mlp_sm90_bf16"
                                        : "mlp_sm90_f16");
    return st;
}

bool fbf_mlp_sm90_fill(const fb_fused_env *env, const fb_mlp_problem *p,
                       double *fill)
{
    if (!ge_mlp_covered(env, p))
        return false;
    return p->dtype == FB_DTYPE_BF16 ? ge_mlp_fill<__nv_bfloat16>(env, p, fill)
                                     : ge_mlp_fill<__half>(env, p, fill);
}

/* The dual GEMM alone, fbf_mlp_sm90's first launch: Wd, n and Y are not
 * read. */
fb_status fbf_mlp_hidden_sm90(const fb_fused_env *env,
                              const fb_mlp_problem *p, const float *sg,
                              const float *su, void *h, int64_t ldh,
                              size_t h_bytes, char *path, size_t pathlen)
{
    if (!ge_hidden_covered(env, p))
        return FB_STATUS_NOT_SUPPORTED;
    if (h == NULL && h_bytes == 0)
        return FB_STATUS_SUCCESS;
    if (!ge_hbuf_ok(p, h, ldh, h_bytes))
        return FB_STATUS_NOT_SUPPORTED;
    const bool bf = p->dtype == FB_DTYPE_BF16;
    const fb_status st =
        bf ? ge_dual_any<__nv_bfloat16>(env, p, h, ldh, sg, su)
           : ge_dual_any<__half>(env, p, h, ldh, sg, su);
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, bf ? "mlp_sm90_bf16" : "mlp_sm90_f16");
    return st;
}

fb_status fb_fused_mlp_hidden(const fb_fused_env *env,
                              const fb_mlp_problem *p, void *h,
                              size_t h_bytes, char *path, size_t pathlen)
{
    return fbf_mlp_hidden_sm90(env, p, NULL, NULL, h, p->h, h_bytes, path,
                               pathlen);
}
