/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_decode_tma.cuh -- the decode kernels' second streaming engine, for
 * 16-bit weights and fp32 with up to 16 tokens on Hopper: the weight rows
 * reach shared memory by bulk tensor copies (TMA), not through the warps'
 * registers. fp32 (CUDA cores, true fp32 FMA) differs in its tiles
 * (TmaEngine<float>), in a second extra warp that stages X (and H) into
 * two chunk buffers (tma_x_produce), and in sleeping waits; see there.
 *
 *   sacc[r][t] = sum_{kb <= c < ke} W[row0 + r][c] * X[t][c]
 *
 * Why: the register engine (fused_decode_stream.cuh) is held back by the
 * number of L2 requests (eight rows x 64 bytes, half a line a row, per
 * load instruction), and putting more requests on L2 only slowed it (the
 * measurements: docs/decode-kernels.md). Here one thread asks the copy
 * engine for a box of 64, 128 or 256 columns x all the CTA's rows (whole
 * 128-byte lines of each row) per matrix and stage, so a stage is one or
 * two requests, and the bytes in flight cost no registers.
 *
 * Ring: S stages (up to kTmaMaxStages), each with a "full" mbarrier (the
 * copy engine completes its bytes) and an "empty" one (each computing warp
 * arrives once it has read the stage). One extra warp, the producer, asks
 * for stages as slots come free; the computing warps only wait for data
 * (a computing thread that also produced would make every step wait for
 * the slowest warp). The ring's counters run on across passes, so the
 * producer can ask for the next pass's first stages before the current
 * one is done (the MLP does so before its grid barrier).
 *
 * Work in a stage: tiles of 16 A rows, as in the register engine (paired
 * mode: 8 rows of Wg and the same 8 rows of Wu; else 16 rows of W). Tile j
 * belongs to warp j % W for the whole pass, so each warp's accumulators
 * hold finished sums: no partial-sum slots, no reduction, the same bits
 * every run. Lane (g, t) reads 16 bytes of rows g and g + 8 of its tile,
 * columns 8t..8t+7 of each 32-column half of the stage, and the tokens'
 * 16 bytes at the same columns (the register engine's k order, so the same
 * mma16816 calls). The row pitch (the box's 128-512 bytes, a multiple of
 * 128) puts rows g and g + 1 on the same banks: a 2-way conflict on a few
 * dozen shared loads a warp a stage, small against the time the stage
 * takes to arrive; not worth a swizzle.
 *
 * Token rows (16-bit; fp32: tma_x_produce): X is staged into shared
 * memory chunk by chunk (stage_tokens,
 * by the computing warps, synchronised among themselves by a named
 * barrier while the producer streams on), zero past the chunk's end, so
 * columns of a box past ke (the next stripe, or zeros past the matrix)
 * add nothing. Where X does not fit the buffer whole, the buffer holds two
 * half-size chunks and the next one is copied in (cp.async) while the
 * warps compute on the current one: otherwise every chunk boundary stops
 * all warps for an L2 round trip of the whole chunk while the ring fills
 * up and HBM idles.
 */
#ifndef FB_CUDA_FUSED_DECODE_TMA_CUH
#define FB_CUDA_FUSED_DECODE_TMA_CUH

#include <cuda.h> /* CUtensorMap */
#include "fused_decode_stream.cuh"
#include "fused_wgmma.cuh"

namespace fbf {

enum {
    kTmaNoFma = 1 << 16, /* TmaJob::xq flags (diagnostics, wrong results) */
    kTmaNoX = 1 << 17,
    kTmaOldSplit = 1 << 18, /* fp32: tile j to warp j % W, no phases */
    kF32XCols = 256,        /* fp32: X chunk columns (two of the widest
                               boxes), the row stride of its buffers */
    kTmaMinCols = 64,    /* the narrowest box: 128 bytes of each row */
    kTmaMaxStages = 8,   /* 2 x 8 mbarriers: the kernels' 128-byte header
                            (fp32: 256 bytes, its X buffers' 4 after) */
    kTmaTilesPerWarp = 2 /* tiles a warp holds: 24 with 12 warps */
};

/* The ring (shared memory) and this thread's place in it. */
struct TmaRing {
    unsigned char *base; /* stage s at base + s * stride (128-byte aligned) */
    uint64_t *full, *empty;
    int stages, stride;
    uint32_t issued; /* stages asked of the copy engine (the producer's count) */
    uint32_t used;   /* stages the CTA has consumed (every thread's) */
    /* fp32: the X warp's two chunk buffers ("full": its 32 lanes' copies
     * landed; "empty": every computing warp is done with it), and the
     * chunks staged / consumed, counted across passes like the stages */
    uint64_t *xfull, *xempty;
    uint32_t xissued, xused;
};

/* One pass: rows [row0, row0 + nrows) of map ma (paired: the same rows of
 * map mb after them) x columns [kb, ke), times the m token rows of src,
 * staged kc columns at a time into xs (kc a multiple of box_cols, and xs
 * holds kc columns). Each map's box is box_cols (64, 128 or 256) x
 * box_rows (>= nrows). */
template <typename T> struct TmaJob {
    const CUtensorMap *ma, *mb;
    int row0, nrows, box_rows, box_cols;
    int kb, ke, kc;
    T *xs;
    int xstride, m;
    const T *src; /* token t, column c at src[t * ld_t + c * ld_c] */
    int64_t ld_t, ld_c;
    bool vec, coherent; /* stage_tokens' 16-byte loads; L2-only loads */
    float *sacc;        /* [rows][ms]; paired: gate rows, then up rows */
    int ms;
    bool xsplit; /* X past one chunk: two half chunks, the next staged
                    while the current is used */
    int xq;      /* 0: X rows as staged by stage_tokens (xstride apart);
                    fp32: the X warp's chunks (tma_x_produce) of xq & 0xffff
                    token rows; the sandbox's diagnostics add kTmaNoFma
                    (skip the FMAs) and kTmaNoX (skip staging X) */
    const CUtensorMap *mx; /* fp32: X (src) for the copy engine in boxes of
                              kF32XCols x the rows (fbf's x_map_f32), or
                              NULL: the X warp's cp.async */
    int phases; /* 16-bit, not paired: warps a tile (tma_phases), each
                   phase's sums into its own slice of sacc (nrows x ms
                   floats apart), for the caller to add in phase order;
                   0 or 1: one warp a tile, the sums in sacc */
};

/* fp32 engine: the tokens it computes: a power of two >= m, <= NTOK (a
 * compile-time count; rows past m are zeros, their sums dropped). */
__host__ __device__ __forceinline__ int tma_f32_tokens(int m, int ntok)
{
    int mt = 1;
    while (mt < m)
        mt *= 2;
    return mt < ntok ? mt : ntok;
}

/* Token columns [kb, ke) (ke - kb <= kF32XCols) into an fp32 X buffer:
 * token t, column kb + c at xs[t * kF32XCols + c] for t < mt, zero past m
 * and past ke. Thread tid of nthreads; vec: by cp.async (in flight on
 * return), else plain loads (coherent: L2 only) and stores. */
__device__ __forceinline__ void tma_x_rows(float *xs, int mt, int m, int kb,
                                           int ke, const float *src,
                                           int64_t ld_t, int64_t ld_c,
                                           bool vec, bool coherent, int tid,
                                           int nthreads)
{
    if (vec) {
        const int nq = kF32XCols / 4; /* 16-byte pieces a row */
        for (int i = tid; i < mt * nq; i += nthreads) {
            const int t = i / nq, col = kb + 4 * (i % nq);
            const bool in = t < m && col < ke;
            cp_async16(xs + 4 * i, in ? src + t * ld_t + col : src,
                       in ? 16 : 0);
        }
        return;
    }
    for (int i = tid; i < mt * kF32XCols; i += nthreads) {
        const int t = i / kF32XCols, col = kb + i % kF32XCols;
        float v = 0.0f;
        if (t < m && col < ke) {
            const float *p = src + t * ld_t + (int64_t)col * ld_c;
            v = coherent ? __ldcg(p) : __ldg(p);
        }
        xs[i] = v;
    }
}

/* Steps of a pass (one box per matrix each). */
template <typename T>
__device__ __forceinline__ int tma_steps(const TmaJob<T> &J)
{
    return (J.ke - J.kb + J.box_cols - 1) / J.box_cols;
}

/* Rows of A a tile holds: 16-bit 16 (paired: 8 units), fp32 8 (4). */
template <typename T>
__host__ __device__ constexpr int tma_tile_rows(bool paired)
{
    return (sizeof(T) == 4 ? 8 : 16) / (paired ? 2 : 1);
}

/* fp32 engine: column phases (TmaEngine<float>): the most of 4, 2 that
 * divide the stage's 32-column blocks and leave a warp for every (pair of
 * tiles, phase), and whose sums fit the X buffers (they pass through
 * them); else 1. */
template <typename J_>
__host__ __device__ __forceinline__ int tma_f32_phases(const J_ &J, int W)
{
    const int tr = J.mb ? 4 : 8;
    const int tiles = (J.nrows + tr - 1) / tr, pairs = (tiles + 1) / 2;
    const int blocks = J.box_cols / 32;
    const int rows = J.mb ? 2 * J.nrows : J.nrows;
    const long xfloats = 2L * kF32XCols * (J.xq & 0xffff);
    for (int c = 4; c >= 2; c /= 2)
        if (blocks % c == 0 && pairs * c <= W &&
            (long)c * rows * J.ms <= xfloats)
            return c;
    return 1;
}

/* 16-bit column phases: where a CTA's rows make fewer tiles than it has
 * warps (a narrow output split over the SMs), tile p, phase c is warp
 * p C + c and takes the 32-column blocks b of every stage with
 * b % C == c, so that every warp computes: the most C (a power of two)
 * that divides the stage's blocks and leaves a warp for every (tile,
 * phase). */
__host__ __device__ __forceinline__ int tma_phases(int nrows, int W,
                                                   int box_cols)
{
    const int tiles = (nrows + 15) / 16, blocks = box_cols / 32;
    int c = 1;
    while (2 * c <= blocks && 2 * c * tiles <= W)
        c *= 2;
    return c;
}

/* Computing warps only: wait for each other (named barrier 1; the
 * producer warp is not in it). */
__device__ __forceinline__ void consumers_sync(int nthreads)
{
    asm volatile("bar.sync 1, %0;\n" ::"r"(nthreads) : "memory");
}

#if FB_WGMMA_BODY

/* mbar_wait for the fp32 engine's waits, with a suspend-time hint: a
 * waiting warp sleeps until the phase completes instead of spinning in
 * the issue slots that the computing warps of its scheduler need. */
__device__ __forceinline__ void mbar_wait_sleep(uint64_t *bar, uint32_t parity)
{
    const uint32_t a = smem_addr(bar);
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, "
                     "%3;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity), "r"(1000000u)
                     : "memory");
    } while (!done);
}

template <typename T>
__device__ __forceinline__ void ring_wait(uint64_t *bar, uint32_t parity)
{
    if constexpr (sizeof(T) == 4)
        mbar_wait_sleep(bar, parity);
    else
        mbar_wait(bar, parity);
}

/* Thread 0 once, then a __syncthreads before any use; `warps` computing
 * warps release each stage; xarrivals: arrivals that fill an X buffer
 * (fp32's X warp: 1 with the copy engine, 32 by cp.async; 0: no X
 * buffers, 16-bit). */
__device__ __forceinline__ void tma_ring_init(TmaRing &R, int warps,
                                              int xarrivals)
{
    for (int s = 0; s < R.stages; ++s) {
        mbar_init(&R.full[s], 1);
        mbar_init(&R.empty[s], warps);
    }
    for (int b = 0; b < 2 && xarrivals > 0; ++b) {
        mbar_init(&R.xfull[b], xarrivals);
        mbar_init(&R.xempty[b], warps);
    }
    mbar_fence_init();
}

/* The producer thread: ask for the pass's steps up to (not including)
 * step `upto` (relative to g0, the ring count at the pass's start),
 * waiting for each slot to come free. */
template <typename T>
__device__ __forceinline__ void tma_issue(TmaRing &R, const TmaJob<T> &J,
                                          uint32_t g0, int upto)
{
    const int nsteps = tma_steps(J);
    if (upto > nsteps)
        upto = nsteps;
    const uint32_t half = (uint32_t)J.box_rows * J.box_cols * sizeof(T);
    /* fp32 rows go through a 16-bit map of the same bytes (two map
     * columns a column: fbf_tma_map_rows) */
    const int cmul = (int)sizeof(T) / 2;
    while ((int)(R.issued - g0) < upto) {
        const uint32_t g = R.issued;
        const int s = (int)(g % (uint32_t)R.stages);
        const int col = (J.kb + (int)(g - g0) * J.box_cols) * cmul;
        /* free once every warp read it S steps ago (at once the first
         * time round: parity 1 of a fresh barrier) */
        ring_wait<T>(&R.empty[s], ((g / (uint32_t)R.stages) & 1u) ^ 1u);
        unsigned char *dst = R.base + (size_t)s * R.stride;
        mbar_arrive_expect_tx(&R.full[s], J.mb ? 2 * half : half);
        tma_load_2d(dst, J.ma, &R.full[s], col, J.row0);
        if (J.mb)
            tma_load_2d(dst + half, J.mb, &R.full[s], col, J.row0);
        ++R.issued;
    }
}

/* fp32: the X warp (32 threads): stages the pass's X in chunks of
 * kF32XCols columns into two buffers in turn, as the computing warps free
 * them, and the chunk's arrival completes the buffer's "full" barrier: the
 * computing warps never stage X nor wait for each other at chunk
 * boundaries. With an X map, lane 0 asks the copy engine for a chunk as
 * one box (rows past m and columns past the matrix arrive as zeros); else
 * the lanes copy it by cp.async (a full barrier of 32 arrivals, one as
 * each lane's copies land). Columns past ke (the next stripe's) may
 * arrive too: the engine computes no block past ke. */
__device__ __forceinline__ void tma_x_produce(TmaRing &R,
                                              const TmaJob<float> &J)
{
    const int lane = threadIdx.x & 31, mt = J.xq & 0xffff;
    const uint32_t bytes = (uint32_t)(mt * kF32XCols * 4);
    if (J.mx && J.coherent && lane == 0) /* src was written by this launch
                                            (generic stores, then the grid
                                            barrier): order the copy
                                            engine's reads after them */
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
    for (int cb = J.kb; cb < J.ke; cb += kF32XCols) {
        const uint32_t x = R.xissued++;
        const int b = (int)(x & 1u);
        float *dst = J.xs + b * mt * kF32XCols;
        if (J.mx) {
            if (lane == 0) {
                mbar_wait_sleep(&R.xempty[b], ((x >> 1) & 1u) ^ 1u);
                mbar_arrive_expect_tx(&R.xfull[b], bytes);
                if (!(J.xq & kTmaNoX))
                    tma_load_2d(dst, J.mx, &R.xfull[b], cb, 0);
                else /* the diagnostic: no bytes come */
                    asm volatile("mbarrier.complete_tx.shared::cta.b64 "
                                 "[%0], %1;\n" ::"r"(smem_addr(&R.xfull[b])),
                                 "r"(bytes)
                                 : "memory");
            }
            continue;
        }
        mbar_wait_sleep(&R.xempty[b], ((x >> 1) & 1u) ^ 1u);
        if (!(J.xq & kTmaNoX))
            tma_x_rows(dst, mt, J.m, cb, min(J.ke, cb + kF32XCols), J.src,
                       J.ld_t, J.ld_c, J.vec, J.coherent, lane, 32);
        if (J.vec)
            asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 "
                         "[%0];\n" ::"r"(smem_addr(&R.xfull[b]))
                         : "memory");
        else
            mbar_arrive(&R.xfull[b]);
    }
}

/* One warp's tiles and their sums. */
template <typename T, int NTOK, bool PAIRED> struct TmaEngine {
    static const int NT = NTOK / 8;
    static const int TPW = kTmaTilesPerWarp;
    float acc[TPW][NT][4];
    int rowa[TPW], rowb[TPW]; /* byte offsets of this lane's rows */
    int xoff[NT];
    int ntiles, halves; /* halves: 32-column blocks a stage */
    int tile0, tstep;   /* this warp's first tile and the step between */
    int nph, phase;     /* column phases (tma_phases) and this warp's */

    __device__ __forceinline__ void init(const TmaJob<T> &J, int W)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        const int w = threadIdx.x >> 5;
        const int rows_a_tile = PAIRED ? 8 : 16;
        const int tiles = (J.nrows + rows_a_tile - 1) / rows_a_tile;
        nph = !PAIRED && J.phases > 1 ? J.phases : 1;
        phase = w % nph;
        tile0 = w / nph;
        tstep = W / nph;
        ntiles = tile0 < tiles ? (tiles - tile0 + tstep - 1) / tstep : 0;
        const int last = J.box_rows - 1; /* rows past the box: any row in
                                            it (their sums are dropped) */
        const int pitch = J.box_cols * 2;
        halves = J.box_cols / 32;
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            const int tile = tile0 + j * tstep;
            if (PAIRED) {
                const int r = min(8 * tile + g, last);
                rowa[j] = r * pitch;
                rowb[j] = (J.box_rows + r) * pitch;
            } else {
                rowa[j] = min(16 * tile + g, last) * pitch;
                rowb[j] = min(16 * tile + g + 8, last) * pitch;
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
                acc[j][nt][0] = acc[j][nt][1] = acc[j][nt][2] =
                    acc[j][nt][3] = 0.0f;
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            /* tokens past m read token m-1 (finite; dropped at the end) */
            xoff[nt] = min(g + 8 * nt, J.m - 1) * J.xstride + 8 * t;
    }

    /* One stage at st; its first column is column xcol of the staged X;
     * its first nblk 32-column blocks are the job's (a box that runs past
     * the job's end holds the next stripe's weights: skipped, since an
     * Inf there times X's zero padding would be NaN). */
    __device__ __forceinline__ void compute(const unsigned char *st,
                                            const T *xs, int xcol, int nblk)
    {
        if (ntiles == 0)
            return;
        const int t = threadIdx.x & 3;
        const int nb = min(halves, nblk);
        /* this phase's blocks, two at a time (h, h + nph) */
        int h = phase;
        for (; h + nph < nb; h += 2 * nph)
            computev<2>(st, xs, xcol, h, nph, t);
        if (h < nb)
            computev<1>(st, xs, xcol, h, 0, t);
    }

    /* V 32-column blocks of the stage, h0 and h0 + dh. */
    template <int V>
    __device__ __forceinline__ void computev(const unsigned char *st,
                                             const T *xs, int xcol, int h0,
                                             int dh, int t)
    {
        uint4 xv[V][NT];
#pragma unroll
        for (int v = 0; v < V; ++v)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
                xv[v][nt] = *reinterpret_cast<const uint4 *>(
                    xs + xoff[nt] + xcol + 32 * (h0 + v * dh));
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            if (j >= ntiles)
                break;
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const int cb = (4 * (h0 + v * dh) + t) * 16;
                const uint4 ra =
                    *reinterpret_cast<const uint4 *>(st + rowa[j] + cb);
                const uint4 rb =
                    *reinterpret_cast<const uint4 *>(st + rowb[j] + cb);
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    mma16816<T>(acc[j][nt], ra.x, rb.x, ra.y, rb.y,
                                xv[v][nt].x, xv[v][nt].y);
                    mma16816<T>(acc[j][nt], ra.z, rb.z, ra.w, rb.w,
                                xv[v][nt].z, xv[v][nt].w);
                }
            }
        }
    }

    /* The finished sums into sacc (each element has one owner; with
     * phases, into the phase's slice). */
    __device__ __forceinline__ void emit(const TmaJob<T> &J)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        float *dst = J.sacc + (size_t)phase * J.nrows * J.ms;
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            if (j >= ntiles)
                break;
            const int tile = tile0 + j * tstep;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int tok = nt * 8 + 2 * t + (q & 1);
                    int r;
                    if (PAIRED) {
                        r = 8 * tile + g;
                        if (r >= J.nrows)
                            continue;
                        if (q >= 2)
                            r += J.nrows; /* the up rows */
                    } else {
                        r = 16 * tile + g + (q >= 2 ? 8 : 0);
                        if (r >= J.nrows)
                            continue;
                    }
                    if (tok < J.m)
                        dst[r * J.ms + tok] = acc[j][nt][q];
                }
        }
    }
};

/* fp32 weights: CUDA cores, true fp32 FMA. A tile is 8 rows (paired: 4
 * rows of Wg and the same 4 of Wu). Lane (g = lane / 8, t = lane % 8)
 * holds rows g and g + 4 of each of its tiles (paired: the gate and the
 * up row of unit g) and, in every 32-column block of a stage, columns
 * 4t..4t+3: a quarter-warp reads 128 contiguous bytes of one row (no bank
 * conflicts at any pitch). X comes in chunks whose token rows are
 * kF32XCols apart (tma_x_produce), so a lane's float4 of each token sits
 * at a compile-time offset (no address arithmetic, no branch a token),
 * and the eight float4s of a warp load are one 128-byte line. The token
 * count is a compile-time MT >= m (rows past m are zeros, their sums
 * dropped).
 *
 * Work: tiles go in pairs (each X float4 then feeds four rows of a lane:
 * half the shared loads a FMA of one tile, and four independent sums a
 * token); pair p, phase c is warp p C + c, which takes the blocks b of
 * every stage with b % C == c. C (tma_f32_phases) splits the columns
 * where there are fewer pairs than warps, so that every warp computes.
 * At the end the eight lanes of a row add their column partials by a
 * fixed butterfly; with C > 1 the C phases' sums go through the X buffers
 * and are added in phase order. Every sum has one fixed order: the same
 * bits every run. */
template <int NTOK, bool PAIRED> struct TmaEngine<float, NTOK, PAIRED> {
    static const int TPW = kTmaTilesPerWarp;
    float acc[TPW][2][NTOK];
    int rowa[TPW], rowb[TPW]; /* byte offsets of this lane's rows */
    int ntiles, tile0, tstep, phase, nph, blocks, slots; /* slots: MT */

    __device__ __forceinline__ void init(const TmaJob<float> &J, int W)
    {
        const int lane = threadIdx.x & 31, g = lane >> 3, t = lane & 7;
        const int w = threadIdx.x >> 5;
        const int rows_a_tile = PAIRED ? 4 : 8;
        const int tiles = (J.nrows + rows_a_tile - 1) / rows_a_tile;
        const int last = J.box_rows - 1; /* rows past the box: any row in
                                            it (their sums are dropped) */
        const int pitch = J.box_cols * 4;
        blocks = J.box_cols / 32;
        slots = J.xq & (kTmaNoFma | 0xffff);
        if (J.xq & kTmaOldSplit) { /* tiles w, w + W; all columns */
            ntiles = w < tiles ? min(TPW, (tiles - w + W - 1) / W) : 0;
            tile0 = w;
            tstep = W;
            phase = 0;
            nph = 1;
        } else {
            nph = tma_f32_phases(J, W);
            const int pairs = (tiles + 1) / 2, p = w / nph;
            ntiles = p < pairs ? min(2, tiles - 2 * p) : 0;
            tile0 = 2 * p;
            tstep = 1;
            phase = w - p * nph;
        }
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            const int tile = tile0 + j * tstep;
            if (PAIRED) {
                const int r = min(4 * tile + g, last);
                rowa[j] = r * pitch + 16 * t;
                rowb[j] = (J.box_rows + r) * pitch + 16 * t;
            } else {
                rowa[j] = min(8 * tile + g, last) * pitch + 16 * t;
                rowb[j] = min(8 * tile + g + 4, last) * pitch + 16 * t;
            }
#pragma unroll
            for (int i = 0; i < NTOK; ++i)
                acc[j][0][i] = acc[j][1][i] = 0.0f;
        }
    }

    static __device__ __forceinline__ float part(const float4 &v, int e)
    {
        return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
    }

    /* NT tiles, MT tokens, both compile-time.
     * Tokens go in groups of four: the next group's float4s are loaded
     * while the current group is used, and the FMAs run column by column
     * across the group's tokens and the lane's rows, so consecutive FMAs
     * feed different accumulators (each sum still adds its columns in
     * order: the same bits as one dot product after another). */
    template <int NT, int MT>
    __device__ __forceinline__ void compute_n(const unsigned char *st,
                                              const float *xs, int xcol,
                                              int nblk)
    {
        const int G = MT < 4 ? MT : 4;
        const int t = threadIdx.x & 7;
        const float4 *xq =
            reinterpret_cast<const float4 *>(xs + xcol) + t;
        for (int b = phase; b < nblk; b += nph) {
            float4 wa[NT], wb[NT];
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                wa[j] = *reinterpret_cast<const float4 *>(st + rowa[j] +
                                                          128 * b);
                wb[j] = *reinterpret_cast<const float4 *>(st + rowb[j] +
                                                          128 * b);
            }
            const float4 *xb = xq + 8 * b;
            float4 xc[G], xn[G];
#pragma unroll
            for (int i = 0; i < G; ++i)
                xc[i] = xb[i * (kF32XCols / 4)];
#pragma unroll
            for (int g0 = 0; g0 < MT; g0 += G) {
                if (g0 + G < MT) {
#pragma unroll
                    for (int i = 0; i < G; ++i)
                        xn[i] = xb[(g0 + G + i) * (kF32XCols / 4)];
                }
#pragma unroll
                for (int e = 0; e < 4; ++e)
#pragma unroll
                    for (int i = 0; i < G; ++i)
#pragma unroll
                        for (int j = 0; j < NT; ++j) {
                            const float x = part(xc[i], e);
                            acc[j][0][g0 + i] =
                                fmaf(part(wa[j], e), x, acc[j][0][g0 + i]);
                            acc[j][1][g0 + i] =
                                fmaf(part(wb[j], e), x, acc[j][1][g0 + i]);
                        }
                if (g0 + G < MT) {
#pragma unroll
                    for (int i = 0; i < G; ++i)
                        xc[i] = xn[i];
                }
            }
        }
    }

    template <int NT>
    __device__ __forceinline__ void compute_t(const unsigned char *st,
                                              const float *xs, int xcol,
                                              int nblk)
    {
        if (NTOK > 8 || slots == NTOK)
            compute_n<NT, NTOK>(st, xs, xcol, nblk);
        else if (slots == 4)
            compute_n<NT, 4>(st, xs, xcol, nblk);
        else if (slots == 2)
            compute_n<NT, 2>(st, xs, xcol, nblk);
        else
            compute_n<NT, 1>(st, xs, xcol, nblk);
    }

    /* One stage at st, its first nblk 32-column blocks; its first column
     * is column xcol of the staged X. */
    __device__ __forceinline__ void compute(const unsigned char *st,
                                            const float *xs, int xcol,
                                            int nblk)
    {
        static_assert(TPW == 2, "compute() dispatches 1 or 2 tiles");
        if (slots & kTmaNoFma) /* the sandbox's no-FMA diagnostic */
            return;
        if (ntiles >= 2)
            compute_t<2>(st, xs, xcol, nblk);
        else if (ntiles == 1)
            compute_t<1>(st, xs, xcol, nblk);
    }

    /* The finished sums into sacc: the row's eight lanes add their
     * partials (xor 1, 2, 4: the same sum in every lane), lane t writes
     * the tokens t, t + 8; with phases, each phase's sums into the X
     * buffers first (every warp is done with X then), then added in phase
     * order. Every computing warp calls it (the barriers). */
    __device__ __forceinline__ void emit(const TmaJob<float> &J, int W)
    {
        const int lane = threadIdx.x & 31, g = lane >> 3, t = lane & 7;
        const int rows = PAIRED ? 2 * J.nrows : J.nrows; /* of sacc */
        float *dst = J.sacc;
        if (nph > 1) {
            consumers_sync(W * 32);
            dst = J.xs + phase * rows * J.ms;
        }
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            if (j >= ntiles)
                break;
            const int tile = tile0 + j * tstep;
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                int r;
                bool ok;
                if (PAIRED) {
                    r = 4 * tile + g;
                    ok = r < J.nrows;
                    if (q)
                        r += J.nrows; /* the up rows */
                } else {
                    r = 8 * tile + g + 4 * q;
                    ok = r < J.nrows;
                }
#pragma unroll
                for (int i = 0; i < NTOK; ++i) {
                    if (i < J.m) {
                        float v = acc[j][q][i];
                        v += __shfl_xor_sync(0xffffffffu, v, 1);
                        v += __shfl_xor_sync(0xffffffffu, v, 2);
                        v += __shfl_xor_sync(0xffffffffu, v, 4);
                        if (ok && (i & 7) == t)
                            dst[r * J.ms + i] = v;
                    }
                }
            }
        }
        if (nph > 1) {
            consumers_sync(W * 32);
            for (int e = threadIdx.x; e < rows * J.m; e += W * 32) {
                const int r = e / J.m, i = e - r * J.m;
                float v = 0.0f;
                for (int c = 0; c < nph; ++c)
                    v += J.xs[(c * rows + r) * J.ms + i];
                J.sacc[r * J.ms + i] = v;
            }
            /* the copy engine writes X here next (the MLP's phase 2) */
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        }
    }
};

/* The computing warps' side of a pass (threads 0 .. nthreads-1, all of
 * them); sacc holds the sums after it (once they have synchronised). */
template <typename T, int NTOK, bool PAIRED>
__device__ __forceinline__ void tma_consume(TmaRing &R, const TmaJob<T> &J,
                                            int nthreads)
{
    const int tid = threadIdx.x, W = nthreads >> 5;
    const uint32_t g0 = R.used;
    const int nsteps = tma_steps(J);
    const int span = J.ke - J.kb;
    /* columns a chunk: the whole buffer, or half of it when X is longer
     * than the buffer and half still holds a box */
    const bool two = J.xsplit && span > J.kc && J.kc >= 2 * J.box_cols;
    const int cc = two ? J.kc / 2 / J.box_cols * J.box_cols : J.kc;
    const int spc = cc / J.box_cols; /* steps a chunk */
    /* chunk c of X into buffer b (columns [b cc, b cc + cc) of xs); with
     * `wait`, this thread's copies have landed when it returns */
    auto stage = [&](int c, int b, bool wait) {
        const int cb = J.kb + c * cc, ce = min(J.ke, cb + cc);
        const int kpad = round_up_int(ce - cb, J.box_cols);
        stage_tokens<T>(J.xs + b * cc, J.xstride, J.m, cb, ce, kpad, J.src,
                        J.ld_t, J.ld_c, J.vec, J.coherent, nthreads, true,
                        wait);
    };
    TmaEngine<T, NTOK, PAIRED> E;
    E.init(J, W);
    if constexpr (sizeof(T) == 4) {
        /* X chunks from the X warp (tma_x_produce), two buffers in turn */
        const int xspc = kF32XCols / J.box_cols, mt = J.xq & 0xffff;
        const uint32_t x0 = R.xused;
        for (int i = 0; i < nsteps; ++i) {
            const uint32_t x = x0 + (uint32_t)(i / xspc);
            const int b = (int)(x & 1u);
            if (i % xspc == 0)
                mbar_wait_sleep(&R.xfull[b], (x >> 1) & 1u);
            const uint32_t g = g0 + (uint32_t)i;
            const int s = (int)(g % (uint32_t)R.stages);
            mbar_wait_sleep(&R.full[s], (g / (uint32_t)R.stages) & 1u);
            /* 32-column blocks up to ke (past it: the next stripe) */
            const int col = J.kb + i * J.box_cols;
            E.compute(R.base + (size_t)s * R.stride, J.xs,
                      b * mt * kF32XCols + (i % xspc) * J.box_cols,
                      min(E.blocks, (J.ke - col + 31) / 32));
            __syncwarp();
            if ((tid & 31) == 0) {
                mbar_arrive(&R.empty[s]);
                if ((i + 1) % xspc == 0 || i + 1 == nsteps)
                    mbar_arrive(&R.xempty[b]);
            }
        }
        R.used = g0 + (uint32_t)nsteps;
        R.xused = x0 + (uint32_t)((nsteps + xspc - 1) / xspc);
        E.emit(J, W);
    } else {
        int cbeg = J.kb, xbase = 0;
        for (int i = 0; i < nsteps; ++i) {
            if (i % spc == 0) { /* the next chunk of X */
                const int c = i / spc;
                if (!two || c == 0) {
                    consumers_sync(nthreads); /* everyone is done with xs */
                    stage(c, 0, true);
                } else {
                    cp_async_wait<0>(); /* chunk c, asked a chunk ago */
                }
                /* chunk c is visible to all, and all are done with c - 1 */
                consumers_sync(nthreads);
                if (two && (c + 1) * cc < span)
                    stage(c + 1, (c + 1) & 1, false);
                cbeg = J.kb + c * cc;
                xbase = two ? (c & 1) * cc : 0;
            }
            const int col = J.kb + i * J.box_cols;
            const uint32_t g = g0 + (uint32_t)i;
            const int s = (int)(g % (uint32_t)R.stages);
            mbar_wait(&R.full[s], (g / (uint32_t)R.stages) & 1u);
            E.compute(R.base + (size_t)s * R.stride, J.xs, xbase + col - cbeg,
                      (J.ke - col + 31) / 32);
            __syncwarp();
            if ((tid & 31) == 0)
                mbar_arrive(&R.empty[s]);
        }
        R.used = g0 + (uint32_t)nsteps;
        E.emit(J);
    }
}

#else /* not sm_90a: never launched (the host checks the device) */

__device__ __forceinline__ void tma_ring_init(TmaRing &, int, int)
{
    __trap();
}
template <typename T>
__device__ __forceinline__ void tma_issue(TmaRing &, const TmaJob<T> &,
                                          uint32_t, int)
{
    __trap();
}
template <typename T, int NTOK, bool PAIRED>
__device__ __forceinline__ void tma_consume(TmaRing &, const TmaJob<T> &,
                                            int)
{
    __trap();
}
__device__ __forceinline__ void tma_x_produce(TmaRing &,
                                              const TmaJob<float> &)
{
    __trap();
}

#endif /* FB_WGMMA_BODY */

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_DECODE_TMA_CUH */
