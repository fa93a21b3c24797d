/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_decode_stream.cuh -- the inner engine of the decode kernels: one
 * CTA streams a block of weight rows once from device memory and
 * multiplies them by a few (<= 32) token rows held in shared memory.
 *
 *   sacc[r][t] += sum_{kb <= c < ke} W[row0 + r][c] * xs[t][c - kb]
 *
 * Work: tiles of 16 weight rows x steps of COLS columns, laid out tile by
 * tile; warp w of W streams the contiguous range [S w / W, S (w+1) / W)
 * of the S = tiles x steps pairs, so every warp moves the same number of
 * bytes (to one step) and keeps loads in flight until the CTA is done.
 * Each warp loads the next step's weights before it computes on the
 * current ones (two steps in flight).
 *
 * Deterministic: a tile that lies wholly inside one warp's range is added
 * into sacc by that warp alone; the partial sums of a tile shared by
 * several warps (at most the first and the last tile of each range) go to
 * per-warp slots, and reduce_slots() adds them into sacc in warp order.
 * No floating-point atomics, so the same call gives the same bits.
 *
 * Paired mode (the MLP's gate and up projections): a tile is 8 rows of Wg
 * and the same 8 rows of Wu (sacc rows r and nrows + r), so one pass reads
 * X once for both and each lane holds gate and up of the same unit.
 *
 * Lane (g = lane / 4, t = lane % 4) always loads rows g and g + 8 of its
 * tile, 16 bytes at a time, columns t * (16 bytes) + VS v of each step:
 * eight rows x 64 contiguous bytes per load instruction.
 *  - 16-bit weights: tensor cores (mma.sync m16n8k16, HMMA), A = the 16
 *    weight rows, B = 8 tokens. The k order inside the instruction is
 *    permuted to match the 16-byte loads: lane (g, t) supplies columns
 *    8t..8t+7 of a 32-column block, registers .x/.y to the first k16
 *    instruction and .z/.w to the second, and reads the tokens' 16 bytes
 *    at the same columns, so A and B agree on which column each k is.
 *  - fp32 weights: CUDA cores, true fp32: each lane accumulates its two
 *    rows over its quarter of the columns for every token (token values
 *    from shared memory, 4 distinct addresses per warp load), and the four
 *    lanes of a row add their sums by a fixed butterfly at each flush.
 */
#ifndef FB_CUDA_FUSED_DECODE_STREAM_CUH
#define FB_CUDA_FUSED_DECODE_STREAM_CUH

#include <type_traits>
#include "fused_device.cuh"

namespace fbf {

/* What one streaming pass of a CTA does. */
template <typename T> struct StreamJob {
    const T *wa;     /* rows of the pass: wa + (row0 + r) * ldw */
    const T *wb;     /* paired mode: the second matrix (Wu); else == wa */
    int64_t ldw;
    int row0, nrows;
    int kb, ke;      /* weight columns [kb, ke) */
    const T *xs;     /* tokens: xs + t * xstride, columns from kb, zero
                        up to a multiple of 128 past ke - kb */
    int xstride, m;
    float *sacc;     /* [rows of the pass][ms], added to */
    int ms;
    float *slots;    /* [warps][2][16][ms]: shared tiles' partial sums */
};

/* ---- per-type engines -------------------------------------------------
 * NV vectors of 16 bytes per row per step, VS columns apart; a step is
 * COLS = NV * VS columns. */

template <typename T, int NTOK> struct Engine; /* 16-bit: tensor cores */

template <typename T, int NTOK> struct Engine {
    static const int NT = NTOK / 8;
    static const int NV = NT <= 2 ? 4 : 2; /* registers for 32 tokens */
    static const int VS = 32;
    static const int COLS = NV * VS;
    static const int LANE_COL = 8; /* columns per lane quarter (t) */

    float acc[NT][4];
    int xoff[NT];

    __device__ __forceinline__ void init(const StreamJob<T> &J)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            /* tokens past m read token m-1 (finite; dropped at the end) */
            xoff[nt] = min(g + 8 * nt, J.m - 1) * J.xstride + 8 * t;
            acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
        }
    }

    __device__ __forceinline__ void compute(const uint4 (&ra)[NV],
                                            const uint4 (&rb)[NV],
                                            const T *xstep,
                                            const StreamJob<T> &)
    {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                const uint4 xv = *reinterpret_cast<const uint4 *>(
                    xstep + xoff[nt] + VS * v);
                mma16816<T>(acc[nt], ra[v].x, rb[v].x, ra[v].y, rb[v].y,
                            xv.x, xv.y);
                mma16816<T>(acc[nt], ra[v].z, rb[v].z, ra[v].w, rb[v].w,
                            xv.z, xv.w);
            }
        }
    }

    /* Hand each (row of the tile 0..15, token, value) this lane holds to
     * put(), then clear. */
    template <typename Put>
    __device__ __forceinline__ void emit(const StreamJob<T> &J, Put put)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int tok = nt * 8 + 2 * t + (q & 1);
                if (tok < J.m)
                    put(q < 2 ? g : g + 8, tok, acc[nt][q]);
                acc[nt][q] = 0.0f;
            }
    }
};

template <int NTOK> struct Engine<float, NTOK> {
    static const int MT = NTOK;
    static const int NV = NTOK <= 16 ? 2 : 1; /* registers for 32 tokens */
    static const int VS = 16;
    static const int COLS = NV * VS;
    static const int LANE_COL = 4;

    float acc0[MT], acc1[MT]; /* rows g and g + 8 */
    int xoff;

    __device__ __forceinline__ void init(const StreamJob<float> &)
    {
        xoff = 4 * (threadIdx.x & 3);
#pragma unroll
        for (int i = 0; i < MT; ++i)
            acc0[i] = acc1[i] = 0.0f;
    }

    static __device__ __forceinline__ float dot4(float acc, uint4 w,
                                                 float4 x)
    {
        acc = fmaf(__uint_as_float(w.x), x.x, acc);
        acc = fmaf(__uint_as_float(w.y), x.y, acc);
        acc = fmaf(__uint_as_float(w.z), x.z, acc);
        acc = fmaf(__uint_as_float(w.w), x.w, acc);
        return acc;
    }

    __device__ __forceinline__ void compute(const uint4 (&ra)[NV],
                                            const uint4 (&rb)[NV],
                                            const float *xstep,
                                            const StreamJob<float> &J)
    {
#pragma unroll
        for (int tk = 0; tk < MT; ++tk) {
            if (tk < J.m) {
#pragma unroll
                for (int v = 0; v < NV; ++v) {
                    const float4 x = *reinterpret_cast<const float4 *>(
                        xstep + tk * J.xstride + xoff + VS * v);
                    acc0[tk] = dot4(acc0[tk], ra[v], x);
                    acc1[tk] = dot4(acc1[tk], rb[v], x);
                }
            }
        }
    }

    /* The four lanes of a row add their column quarters (fixed butterfly,
     * every lane ends with the same sum); lane t reports tokens t, t+4.. */
    template <typename Put>
    __device__ __forceinline__ void emit(const StreamJob<float> &J, Put put)
    {
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int tk = 0; tk < MT; ++tk) {
            if (tk < J.m) {
                float a0 = acc0[tk], a1 = acc1[tk];
                a0 += __shfl_xor_sync(0xffffffffu, a0, 1);
                a1 += __shfl_xor_sync(0xffffffffu, a1, 1);
                a0 += __shfl_xor_sync(0xffffffffu, a0, 2);
                a1 += __shfl_xor_sync(0xffffffffu, a1, 2);
                if ((tk & 3) == t) {
                    put(g, tk, a0);
                    put(g + 8, tk, a1);
                }
            }
            acc0[tk] = acc1[tk] = 0.0f;
        }
    }
};

/* ---- the shared walk --------------------------------------------------- */

/* The range of warp w: [S w / W, S (w+1) / W). */
__device__ __forceinline__ int range_lo(int64_t S, int w, int W)
{
    return (int)(S * w / W);
}

/* The warp whose range holds step s (ranges may be empty when S < W). */
__device__ __forceinline__ int warp_of(int64_t S, int64_t s, int W)
{
    return (int)(((s + 1) * W - 1) / S);
}

/* Row of sacc for row r (0..15) of tile i, or -1 past the pass's rows. */
template <bool PAIRED>
__device__ __forceinline__ int sacc_row(int nrows, int i, int r)
{
    if (PAIRED) {
        const int u = 8 * i + (r & 7);
        return u < nrows ? (r < 8 ? u : nrows + u) : -1;
    }
    const int u = 16 * i + r;
    return u < nrows ? u : -1;
}

/* A warp's position: tile, step, this lane's two rows. The second row is
 * always the first plus a byte distance fixed for the pass (Wu - Wg
 * paired, 8 rows plain), so it is not kept (registers). */
template <typename T> struct Cursor {
    int tile, s;
    const T *pa;
    bool va, vb;
};

template <typename T, bool PAIRED>
__device__ __forceinline__ int64_t second_row_offset(const StreamJob<T> &J)
{
    return PAIRED ? (int64_t)((uintptr_t)J.wb - (uintptr_t)J.wa)
                  : 8 * J.ldw * (int64_t)sizeof(T);
}

template <typename T, bool PAIRED>
__device__ __forceinline__ Cursor<T> cursor_at(const StreamJob<T> &J,
                                               int tile, int s)
{
    const int g = (threadIdx.x & 31) >> 2;
    Cursor<T> c;
    c.tile = tile;
    c.s = s;
    /* Rows past the pass are never read (va, vb say so); a first row
     * past it is given the pass's first row as its address. */
    const int ra = PAIRED ? tile * 8 + g : tile * 16 + g;
    c.va = ra < J.nrows;
    c.vb = PAIRED ? c.va : ra + 8 < J.nrows;
    c.pa = J.wa + (int64_t)(J.row0 + (c.va ? ra : 0)) * J.ldw;
    return c;
}

template <typename T, int NV, int VS, int COLS, int LANE_COL>
__device__ __forceinline__ void load_step(uint4 (&ra)[NV], uint4 (&rb)[NV],
                                          const Cursor<T> &c,
                                          const StreamJob<T> &J,
                                          int64_t second)
{
    const int col0 = J.kb + COLS * c.s + LANE_COL * (threadIdx.x & 3);
    const T *pb = reinterpret_cast<const T *>(
        reinterpret_cast<const char *>(c.pa) + second);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const int col = col0 + VS * v;
        const bool in = col < J.ke;
        ra[v] = (c.va && in) ? ld_stream16(c.pa + col) : make_uint4(0, 0, 0, 0);
        rb[v] = (c.vb && in) ? ld_stream16(pb + col) : make_uint4(0, 0, 0, 0);
    }
}

template <typename T, int NTOK, bool PAIRED>
__device__ void stream_pass(const StreamJob<T> &J)
{
    typedef Engine<T, NTOK> E;
    const int NV = E::NV, VS = E::VS, COLS = E::COLS, LC = E::LANE_COL;
    const int W = blockDim.x >> 5, w = threadIdx.x >> 5;
    const int rpt = PAIRED ? 8 : 16;
    const int tiles = (J.nrows + rpt - 1) / rpt;
    const int nsteps = (J.ke - J.kb + COLS - 1) / COLS;
    const int64_t S = (int64_t)tiles * nsteps;
    if (S == 0)
        return;
    const int lo = range_lo(S, w, W), hi = range_lo(S, w + 1, W);
    if (lo >= hi)
        return;
    const int first_tile = lo / nsteps;

    E eng;
    eng.init(J);
    const int64_t second = second_row_offset<T, PAIRED>(J);
    Cursor<T> cur = cursor_at<T, PAIRED>(J, lo / nsteps, lo % nsteps);
    uint4 ca[NV], cb[NV], na[NV], nb[NV];
    load_step<T, NV, VS, COLS, LC>(ca, cb, cur, J, second);
    for (int sl = lo;;) {
        const bool more = sl + 1 < hi;
        Cursor<T> nxt = cur;
        if (more) {
            if (cur.s + 1 < nsteps)
                nxt.s = cur.s + 1;
            else
                nxt = cursor_at<T, PAIRED>(J, cur.tile + 1, 0);
            load_step<T, NV, VS, COLS, LC>(na, nb, nxt, J, second);
        }
        eng.compute(ca, cb, J.xs + COLS * cur.s, J);
        if (!more || nxt.tile != cur.tile) {
            /* Done with this tile: ours alone, or shared (a slot). */
            const int t0 = cur.tile * nsteps;
            if (lo <= t0 && t0 + nsteps <= hi) {
                const int i = cur.tile;
                eng.emit(J, [&](int r, int tok, float v) {
                    const int row = sacc_row<PAIRED>(J.nrows, i, r);
                    if (row >= 0)
                        J.sacc[row * J.ms + tok] += v;
                });
            } else {
                float *slot = J.slots +
                              (size_t)(2 * w + (cur.tile == first_tile ? 0 : 1)) *
                                  16 * J.ms;
                eng.emit(J, [&](int r, int tok, float v) {
                    slot[r * J.ms + tok] = v;
                });
            }
        }
        if (!more)
            break;
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            ca[v] = na[v];
            cb[v] = nb[v];
        }
        cur = nxt;
        ++sl;
    }
}

/* After stream_pass and a __syncthreads: add the shared tiles' slots into
 * sacc, in warp order. The caller synchronises again before reading sacc
 * or streaming the next pass.
 *
 * A shared tile is reduced by the warp that streamed its last step; that
 * tile is that warp's first one, so each warp reduces at most one tile and
 * finds its partners once (a few divisions per warp, none per element).
 * Warp wl streamed the tile's first step: its slot is 0 if the tile is its
 * first tile too (its range starts at the tile), else 1 (its last tile);
 * every later partner started inside the tile (slot 0). Warps with empty
 * ranges (S < W) emitted nothing and are skipped. The sum runs in warp
 * order, as stream_pass's slots were meant to be added: deterministic.
 * (Finding partners per element instead puts 64-bit divisions on the
 * CTA's critical path for every (tile, row, token): docs/decode-kernels.md.) */
template <typename T, int NTOK, bool PAIRED>
__device__ void reduce_slots(const StreamJob<T> &J)
{
    const int COLS = Engine<T, NTOK>::COLS;
    const int W = blockDim.x >> 5, w = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int rpt = PAIRED ? 8 : 16;
    const int tiles = (J.nrows + rpt - 1) / rpt;
    const int nsteps = (J.ke - J.kb + COLS - 1) / COLS;
    const int64_t S = (int64_t)tiles * nsteps;
    if (S == 0)
        return;
    const int lo = range_lo(S, w, W), hi = range_lo(S, w + 1, W);
    if (lo >= hi)
        return;
    const int i = lo / nsteps, s0 = i * nsteps;
    if (lo == s0 || s0 + nsteps > hi)
        return; /* not shared, or its last step is a later warp's */
    const int wl = warp_of(S, s0, W);
    const int first = range_lo(S, wl, W) == s0 ? 0 : 1;
    unsigned mid = 0; /* warps strictly between wl and w that emitted */
    for (int x = wl + 1; x < w; ++x)
        if (range_lo(S, x, W) < range_lo(S, x + 1, W))
            mid |= 1u << x;
    const int ms = J.ms, per_slot = 16 * ms;
    const float *sl = J.slots + (size_t)(2 * wl + first) * per_slot;
    const float *sw = J.slots + (size_t)(2 * w) * per_slot;
    for (int e = lane; e < 16 * J.m; e += 32) {
        const int r = e / J.m, tok = e - r * J.m;
        const int row = sacc_row<PAIRED>(J.nrows, i, r);
        if (row < 0)
            continue;
        const int o = r * ms + tok;
        float v = 0.0f;
        v += sl[o];
        for (int x = wl + 1; x < w; ++x)
            if (mid >> x & 1u)
                v += J.slots[(size_t)(2 * x) * per_slot + o];
        v += sw[o];
        J.sacc[row * ms + tok] += v;
    }
}

/* Ask L2 for each warp's first `steps` steps (within its first tile): the
 * bytes the CTA reads first. Nothing is waited for. */
template <typename T, int NTOK, bool PAIRED>
__device__ void stream_prefetch(const StreamJob<T> &J, int steps)
{
    const int COLS = Engine<T, NTOK>::COLS;
    const int W = blockDim.x >> 5, w = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int rpt = PAIRED ? 8 : 16;
    const int tiles = (J.nrows + rpt - 1) / rpt;
    const int nsteps = (J.ke - J.kb + COLS - 1) / COLS;
    const int64_t S = (int64_t)tiles * nsteps;
    if (S == 0 || steps <= 0 || lane >= 16)
        return;
    const int lo = range_lo(S, w, W), hi = range_lo(S, w + 1, W);
    if (lo >= hi)
        return;
    const int i = lo / nsteps, s = lo % nsteps;
    const int send = min(min(nsteps, s + steps), s + (hi - lo));
    const int row = sacc_row<PAIRED>(J.nrows, i, lane);
    if (row < 0)
        return;
    const T *base = PAIRED && lane >= 8
                        ? J.wb + (int64_t)(J.row0 + row - J.nrows) * J.ldw
                        : J.wa + (int64_t)(J.row0 + row) * J.ldw;
    const int c0 = J.kb + COLS * s, c1 = min(J.ke, J.kb + COLS * send);
    if (c1 > c0)
        prefetch_l2(base + c0, (uint32_t)((c1 - c0) * sizeof(T)));
}

/* Token rows into shared memory: xs[t][c - kb] = src(t, c) for c in
 * [kb, ke), zero from ke - kb up to kpad. src(t, c) = src[t*ld_t + c*ld_c].
 * vec: ld_c == 1, src and ld_t allow 16-byte loads, kb and ke multiples
 * of 16 bytes. coherent: src was written by this launch (read through L2
 * only, never the non-coherent path). Threads 0 .. nthreads-1 do it (0:
 * the whole CTA). async (with vec): by cp.async, every piece in flight at
 * once and none through registers (the TMA engine's X chunks: one L2
 * round trip, not one per four pieces a thread); the copies read through
 * L2 only, so they are coherent too; async_wait false returns with them
 * in flight (the caller waits: cp_async_wait). The caller synchronises
 * after. */
template <typename T>
__device__ __forceinline__ void stage_tokens(T *xs, int xstride, int m,
                                             int kb, int ke, int kpad,
                                             const T *src, int64_t ld_t,
                                             int64_t ld_c, bool vec,
                                             bool coherent, int nthreads = 0,
                                             bool async = false,
                                             bool async_wait = true)
{
    if (nthreads == 0)
        nthreads = blockDim.x;
    if (vec && async) {
        const int per = 16 / (int)sizeof(T);
        const int nv = kpad / per, total = m * nv;
        for (int i = threadIdx.x; i < total; i += nthreads) {
            const int t = i / nv, cv = i - t * nv;
            const int col = kb + cv * per;
            const bool in = col < ke;
            cp_async16(xs + t * xstride + cv * per,
                       in ? src + t * ld_t + col : src, in ? 16 : 0);
        }
        cp_async_commit();
        if (async_wait)
            cp_async_wait<0>();
        return;
    }
    if (vec) {
        /* Four loads in flight per thread before the first store: X is
         * read from L2 by every CTA at once, and one round trip per
         * 16 bytes (21 at m = 16, k = 4096) would sit on the critical
         * path while HBM idles. */
        const int per = 16 / (int)sizeof(T);
        const int nv = kpad / per, total = m * nv;
        const int U = 4;
        for (int i0 = threadIdx.x; i0 < total; i0 += U * nthreads) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = i0 + u * nthreads;
                const int t = i / nv, cv = i - t * nv;
                const int col = kb + cv * per;
                v[u] = make_uint4(0, 0, 0, 0);
                if (i < total && col < ke) {
                    const uint4 *p = reinterpret_cast<const uint4 *>(
                        src + t * ld_t + col);
                    v[u] = coherent ? __ldcg(p) : __ldg(p);
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int i = i0 + u * nthreads;
                const int t = i / nv, cv = i - t * nv;
                if (i < total)
                    *reinterpret_cast<uint4 *>(xs + t * xstride + cv * per) =
                        v[u];
            }
        }
    } else {
        for (int i = threadIdx.x; i < m * kpad; i += nthreads) {
            const int t = i / kpad, cc = i - t * kpad;
            const int col = kb + cc;
            T v;
            if (col < ke) {
                const T *p = src + t * ld_t + (int64_t)col * ld_c;
                v = coherent ? __ldcg(p) : __ldg(p);
            } else {
                v = fb_store_as<T>(0.0f);
            }
            xs[t * xstride + cc] = v;
        }
    }
}

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_DECODE_STREAM_CUH */
