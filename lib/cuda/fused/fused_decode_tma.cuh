/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_decode_tma.cuh -- the decode kernels' second streaming engine, for
 * 16-bit weights on Hopper: the weight rows reach shared memory by bulk
 * tensor copies (TMA), not through the warps' registers.
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
 * Token rows: X is staged into shared memory chunk by chunk (stage_tokens,
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
    kTmaMinCols = 64,    /* the narrowest box: 128 bytes of each row */
    kTmaMaxStages = 8,   /* 2 x 8 mbarriers: the kernels' 128-byte header */
    kTmaTilesPerWarp = 2 /* tiles a warp holds: 24 with 12 warps */
};

/* The ring (shared memory) and this thread's place in it. */
struct TmaRing {
    unsigned char *base; /* stage s at base + s * stride (128-byte aligned) */
    uint64_t *full, *empty;
    int stages, stride;
    uint32_t issued; /* stages asked of the copy engine (the producer's count) */
    uint32_t used;   /* stages the CTA has consumed (every thread's) */
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
};

/* Steps of a pass (one box per matrix each). */
template <typename T>
__device__ __forceinline__ int tma_steps(const TmaJob<T> &J)
{
    return (J.ke - J.kb + J.box_cols - 1) / J.box_cols;
}

/* Computing warps only: wait for each other (named barrier 1; the
 * producer warp is not in it). */
__device__ __forceinline__ void consumers_sync(int nthreads)
{
    asm volatile("bar.sync 1, %0;\n" ::"r"(nthreads) : "memory");
}

#if FB_WGMMA_BODY

/* Thread 0 once, then a __syncthreads before any use; `warps` computing
 * warps release each stage. */
__device__ __forceinline__ void tma_ring_init(TmaRing &R, int warps)
{
    for (int s = 0; s < R.stages; ++s) {
        mbar_init(&R.full[s], 1);
        mbar_init(&R.empty[s], warps);
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
    const uint32_t half = (uint32_t)J.box_rows * J.box_cols * 2;
    while ((int)(R.issued - g0) < upto) {
        const uint32_t g = R.issued;
        const int s = (int)(g % (uint32_t)R.stages);
        const int col = J.kb + (int)(g - g0) * J.box_cols;
        /* free once every warp read it S steps ago (at once the first
         * time round: parity 1 of a fresh barrier) */
        mbar_wait(&R.empty[s], ((g / (uint32_t)R.stages) & 1u) ^ 1u);
        unsigned char *dst = R.base + (size_t)s * R.stride;
        mbar_arrive_expect_tx(&R.full[s], J.mb ? 2 * half : half);
        tma_load_2d(dst, J.ma, &R.full[s], col, J.row0);
        if (J.mb)
            tma_load_2d(dst + half, J.mb, &R.full[s], col, J.row0);
        ++R.issued;
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

    __device__ __forceinline__ void init(const TmaJob<T> &J, int W)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        const int w = threadIdx.x >> 5;
        const int rows_a_tile = PAIRED ? 8 : 16;
        const int tiles = (J.nrows + rows_a_tile - 1) / rows_a_tile;
        ntiles = w < tiles ? (tiles - w + W - 1) / W : 0;
        const int last = J.box_rows - 1; /* rows past the box: any row in
                                            it (their sums are dropped) */
        const int pitch = J.box_cols * 2;
        halves = J.box_cols / 32;
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            const int tile = w + j * W;
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

    /* One stage at st; its first column is column xcol of the staged X. */
    __device__ __forceinline__ void compute(const unsigned char *st,
                                            const T *xs, int xcol)
    {
        if (ntiles == 0)
            return;
        const int t = threadIdx.x & 3;
        for (int h2 = 0; h2 < halves; h2 += 2)
            compute2(st, xs, xcol, h2, t);
    }

    /* Two 32-column halves, h2 and h2 + 1, of the stage. */
    __device__ __forceinline__ void compute2(const unsigned char *st,
                                             const T *xs, int xcol, int h2,
                                             int t)
    {
        uint4 xv[2][NT];
#pragma unroll
        for (int v = 0; v < 2; ++v)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
                xv[v][nt] = *reinterpret_cast<const uint4 *>(
                    xs + xoff[nt] + xcol + 32 * (h2 + v));
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            if (j >= ntiles)
                break;
#pragma unroll
            for (int v = 0; v < 2; ++v) {
                const int cb = (4 * (h2 + v) + t) * 16;
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

    /* The finished sums into sacc (each element has one owner). */
    __device__ __forceinline__ void emit(const TmaJob<T> &J, int W)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        const int w = threadIdx.x >> 5;
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
            if (j >= ntiles)
                break;
            const int tile = w + j * W;
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
                        J.sacc[r * J.ms + tok] = acc[j][nt][q];
                }
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
        stage_tokens<T>(J.xs + b * cc, J.xstride, J.m, cb, ce,
                        round_up_int(ce - cb, J.box_cols), J.src, J.ld_t,
                        J.ld_c, J.vec, J.coherent, nthreads, true, wait);
    };
    TmaEngine<T, NTOK, PAIRED> E;
    E.init(J, W);
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
        E.compute(R.base + (size_t)s * R.stride, J.xs, xbase + col - cbeg);
        __syncwarp();
        if ((tid & 31) == 0)
            mbar_arrive(&R.empty[s]);
    }
    R.used = g0 + (uint32_t)nsteps;
    E.emit(J, W);
}

#else /* not sm_90a: never launched (the host checks the device) */

__device__ __forceinline__ void tma_ring_init(TmaRing &, int) { __trap(); }
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

#endif /* FB_WGMMA_BODY */

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_DECODE_TMA_CUH */
