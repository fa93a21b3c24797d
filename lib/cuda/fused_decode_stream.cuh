/*
 * fused_decode_stream.cuh -- the inner engine of the decode kernels: one
 * CTA streams a block of weight rows once from device memory and
 * multiplies them by a few (<= 32) token rows held in shared memory.
 *
 *   sacc[r][t] += sum_{kb <= c < ke} W[row0 + r][c] * xs[t][c - kb]
 *
 * Work is cut into units (a tile of rows x a run of columns) that the
 * CTA's warps take from a shared counter as they finish the last one, so
 * that every warp keeps loads in flight until the CTA's rows are done.
 * Each warp loads the next step's weights before it computes on the
 * current ones (two steps in flight), and adds a unit's partial sums into
 * sacc with shared-memory atomics (row stride ms = m + 1, fp32).
 *
 * Paired mode (the MLP's gate and up projections): a tile holds 8 rows of
 * Wg and the same 8 rows of Wu, accumulated into sacc rows r and
 * nrows + r, so one pass reads X once for both.
 *
 * 16-bit weights use the tensor cores (mma.sync m16n8k16, HMMA): A = 16
 * weight rows, B = 8 tokens. Each lane loads 16 contiguous bytes of a row
 * (columns c..c+7) and the k order inside the instruction is permuted to
 * match: lane (g, t) supplies row g and row g+8 at columns 8t..8t+7 of a
 * 32-column block, registers .x/.y to the first k16 instruction and
 * .z/.w to the second, and reads the tokens' 16 bytes at the same
 * columns, so that A and B agree on which column each k index is.
 * fp32 weights use the CUDA cores (true fp32): one lane per weight row,
 * the tokens' values broadcast from shared memory.
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
    float *sacc;     /* [rows of the pass][ms] */
    int ms;
    int *counter;    /* work-unit counter in shared memory, zero */
    int unit_cols;   /* columns per work unit, a multiple of 128 */
};

/* ---- 16-bit weights: tensor cores ------------------------------------ */

/* Vectors of 16 bytes per row per step: 4 (two steps of 128 columns in
 * flight), or 2 where 32 tokens' accumulators need the registers. */
template <int NT> struct MmaShape {
    static const int U = NT <= 2 ? 4 : 2;
    static const int COLS = 32 * U;
};

/* A warp's position in its current unit. */
template <typename T> struct MmaCursor {
    int s, send;        /* steps of COLS columns [s, send) of the pass */
    const T *pa, *pb;   /* this lane's two rows (A rows g and g+8) */
    bool va, vb;
    int la, lb;         /* their rows in sacc */
};

template <typename T, bool PAIRED>
__device__ __forceinline__ MmaCursor<T> mma_cursor(const StreamJob<T> &J,
                                                   int u, int parts,
                                                   int spu, int nsteps)
{
    const int g = (threadIdx.x & 31) >> 2;
    MmaCursor<T> c;
    const int tile = u / parts, part = u - tile * parts;
    c.s = part * spu;
    c.send = min(nsteps, c.s + spu);
    if (PAIRED) {
        const int r = tile * 8 + g;
        c.va = c.vb = r < J.nrows;
        const int64_t row = J.row0 + (c.va ? r : 0);
        c.pa = J.wa + row * J.ldw;
        c.pb = J.wb + row * J.ldw;
        c.la = r;
        c.lb = J.nrows + r;
    } else {
        const int ra = tile * 16 + g, rb = ra + 8;
        c.va = ra < J.nrows;
        c.vb = rb < J.nrows;
        c.pa = J.wa + (int64_t)(J.row0 + (c.va ? ra : 0)) * J.ldw;
        c.pb = J.wa + (int64_t)(J.row0 + (c.vb ? rb : 0)) * J.ldw;
        c.la = ra;
        c.lb = rb;
    }
    return c;
}

/* One step's weights: U vectors of 16 bytes from each of the lane's rows,
 * columns col0 + 32 v (col0 already holds kb + COLS s + 8 t). */
template <typename T, int U>
__device__ __forceinline__ void mma_load(uint4 (&ra)[U], uint4 (&rb)[U],
                                         const MmaCursor<T> &c, int col0,
                                         int ke)
{
#pragma unroll
    for (int v = 0; v < U; ++v) {
        const int col = col0 + 32 * v;
        const bool in = col < ke;
        ra[v] = (c.va && in) ? ld_stream16(c.pa + col) : make_uint4(0, 0, 0, 0);
        rb[v] = (c.vb && in) ? ld_stream16(c.pb + col) : make_uint4(0, 0, 0, 0);
    }
}

template <typename T, int NT, int U>
__device__ __forceinline__ void mma_compute(float (&acc)[NT][4],
                                            const uint4 (&ra)[U],
                                            const uint4 (&rb)[U],
                                            const T *xstep,
                                            const int (&xoff)[NT])
{
#pragma unroll
    for (int v = 0; v < U; ++v) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const uint4 xv =
                *reinterpret_cast<const uint4 *>(xstep + xoff[nt] + 32 * v);
            mma16816<T>(acc[nt], ra[v].x, rb[v].x, ra[v].y, rb[v].y, xv.x,
                        xv.y);
            mma16816<T>(acc[nt], ra[v].z, rb[v].z, ra[v].w, rb[v].w, xv.z,
                        xv.w);
        }
    }
}

template <typename T, int NT>
__device__ __forceinline__ void mma_flush(float (&acc)[NT][4],
                                          const MmaCursor<T> &c,
                                          const StreamJob<T> &J)
{
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int tok = nt * 8 + 2 * t + (q & 1);
            const bool upper = q >= 2; /* rows g+8 */
            if (tok < J.m && (upper ? c.vb : c.va))
                atomicAdd(&J.sacc[(upper ? c.lb : c.la) * J.ms + tok],
                          acc[nt][q]);
            acc[nt][q] = 0.0f;
        }
    }
}

template <typename T, int NT, bool PAIRED>
__device__ void mma_stream(const StreamJob<T> &J)
{
    const int U = MmaShape<NT>::U, COLS = MmaShape<NT>::COLS;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int rpt = PAIRED ? 8 : 16;
    const int tiles = (J.nrows + rpt - 1) / rpt;
    const int nsteps = (J.ke - J.kb + COLS - 1) / COLS;
    const int spu = J.unit_cols / COLS;
    const int parts = (nsteps + spu - 1) / spu;
    const int units = tiles * parts;
    if (units == 0)
        return;

    /* B fragments: token g (+8 nt) at columns 8t..; tokens past m read
     * token m-1 (finite data; those output columns are dropped). */
    int xoff[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
        xoff[nt] = min(g + 8 * nt, J.m - 1) * J.xstride + 8 * t;

    int u = grab_unit(J.counter);
    if (u >= units)
        return;
    MmaCursor<T> cur = mma_cursor<T, PAIRED>(J, u, parts, spu, nsteps);

    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;

    uint4 ca[U], cb[U], na[U], nb[U];
    mma_load<T, U>(ca, cb, cur, J.kb + COLS * cur.s + 8 * t, J.ke);
    for (;;) {
        MmaCursor<T> nxt = cur;
        bool more = true;
        nxt.s = cur.s + 1;
        if (nxt.s >= cur.send) {
            u = grab_unit(J.counter);
            if (u < units)
                nxt = mma_cursor<T, PAIRED>(J, u, parts, spu, nsteps);
            else
                more = false;
        }
        if (more)
            mma_load<T, U>(na, nb, nxt, J.kb + COLS * nxt.s + 8 * t, J.ke);
        mma_compute<T, NT, U>(acc, ca, cb, J.xs + COLS * cur.s, xoff);
        if (cur.s + 1 >= cur.send)
            mma_flush<T, NT>(acc, cur, J);
        if (!more)
            break;
#pragma unroll
        for (int v = 0; v < U; ++v) {
            ca[v] = na[v];
            cb[v] = nb[v];
        }
        cur = nxt;
    }
}

/* ---- fp32 weights: CUDA cores ---------------------------------------- */

/* VF 16-byte vectors per row per step (4 VF columns); fewer for many
 * tokens, where the accumulators need the registers. */
template <int MT> struct F32Shape {
    static const int VF = MT <= 16 ? 2 : 1;
    static const int COLS = 4 * VF;
};

struct F32Cursor {
    int s, send;
    const float *pa, *pb;
    bool va, vb;
    int tile; /* rows in sacc follow from it (kept small: registers) */
};

template <bool PAIRED>
__device__ __forceinline__ F32Cursor f32_cursor(const StreamJob<float> &J,
                                                int u, int parts, int spu,
                                                int nsteps)
{
    const int lane = threadIdx.x & 31;
    F32Cursor c;
    const int tile = u / parts, part = u - tile * parts;
    c.s = part * spu;
    c.send = min(nsteps, c.s + spu);
    c.tile = tile;
    if (PAIRED) {
        const int r = tile * 32 + lane;
        c.va = c.vb = r < J.nrows;
        const int64_t row = J.row0 + (c.va ? r : 0);
        c.pa = J.wa + row * J.ldw;
        c.pb = J.wb + row * J.ldw;
    } else {
        const int ra = tile * 64 + lane, rb = ra + 32;
        c.va = ra < J.nrows;
        c.vb = rb < J.nrows;
        c.pa = J.wa + (int64_t)(J.row0 + (c.va ? ra : 0)) * J.ldw;
        c.pb = J.wa + (int64_t)(J.row0 + (c.vb ? rb : 0)) * J.ldw;
    }
    return c;
}

/* The lane's two rows in sacc: gate and up of one hidden unit (paired),
 * or rows lane and lane + 32 of the tile. */
template <bool PAIRED>
__device__ __forceinline__ void f32_sacc_rows(const StreamJob<float> &J,
                                              const F32Cursor &c, int &la,
                                              int &lb)
{
    const int lane = threadIdx.x & 31;
    if (PAIRED) {
        la = c.tile * 32 + lane;
        lb = J.nrows + la;
    } else {
        la = c.tile * 64 + lane;
        lb = la + 32;
    }
}

template <int VF>
__device__ __forceinline__ void f32_load(float4 (&ra)[VF], float4 (&rb)[VF],
                                         const F32Cursor &c, int col0,
                                         int ke)
{
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int v = 0; v < VF; ++v) {
        const int col = col0 + 4 * v;
        const bool in = col < ke;
        ra[v] = (c.va && in) ? ld_cached16(c.pa + col) : z;
        rb[v] = (c.vb && in) ? ld_cached16(c.pb + col) : z;
    }
}

__device__ __forceinline__ float dot4_acc(float acc, float4 w, float4 x)
{
    acc = fmaf(w.x, x.x, acc);
    acc = fmaf(w.y, x.y, acc);
    acc = fmaf(w.z, x.z, acc);
    acc = fmaf(w.w, x.w, acc);
    return acc;
}

template <int MT, bool PAIRED>
__device__ void f32_stream(const StreamJob<float> &J)
{
    const int VF = F32Shape<MT>::VF, COLS = F32Shape<MT>::COLS;
    const int rpt = PAIRED ? 32 : 64;
    const int tiles = (J.nrows + rpt - 1) / rpt;
    const int nsteps = (J.ke - J.kb + COLS - 1) / COLS;
    const int spu = J.unit_cols / COLS;
    const int parts = (nsteps + spu - 1) / spu;
    const int units = tiles * parts;
    if (units == 0)
        return;

    int u = grab_unit(J.counter);
    if (u >= units)
        return;
    F32Cursor cur = f32_cursor<PAIRED>(J, u, parts, spu, nsteps);

    float acc0[MT], acc1[MT];
#pragma unroll
    for (int i = 0; i < MT; ++i)
        acc0[i] = acc1[i] = 0.0f;

    float4 ca[VF], cb[VF], na[VF], nb[VF];
    f32_load<VF>(ca, cb, cur, J.kb + COLS * cur.s, J.ke);
    for (;;) {
        F32Cursor nxt = cur;
        bool more = true;
        nxt.s = cur.s + 1;
        if (nxt.s >= cur.send) {
            u = grab_unit(J.counter);
            if (u < units)
                nxt = f32_cursor<PAIRED>(J, u, parts, spu, nsteps);
            else
                more = false;
        }
        if (more)
            f32_load<VF>(na, nb, nxt, J.kb + COLS * nxt.s, J.ke);

        const float *xp = J.xs + COLS * cur.s;
#pragma unroll
        for (int tk = 0; tk < MT; ++tk) {
            if (tk < J.m) {
#pragma unroll
                for (int v = 0; v < VF; ++v) {
                    const float4 x = *reinterpret_cast<const float4 *>(
                        xp + tk * J.xstride + 4 * v);
                    acc0[tk] = dot4_acc(acc0[tk], ca[v], x);
                    acc1[tk] = dot4_acc(acc1[tk], cb[v], x);
                }
            }
        }

        if (cur.s + 1 >= cur.send) {
            int la, lb;
            f32_sacc_rows<PAIRED>(J, cur, la, lb);
#pragma unroll
            for (int tk = 0; tk < MT; ++tk) {
                if (tk < J.m) {
                    if (cur.va)
                        atomicAdd(&J.sacc[la * J.ms + tk], acc0[tk]);
                    if (cur.vb)
                        atomicAdd(&J.sacc[lb * J.ms + tk], acc1[tk]);
                }
                acc0[tk] = acc1[tk] = 0.0f;
            }
        }
        if (!more)
            break;
#pragma unroll
        for (int v = 0; v < VF; ++v) {
            ca[v] = na[v];
            cb[v] = nb[v];
        }
        cur = nxt;
    }
}

/* ---- dispatch by weight type ----------------------------------------- */

/* NTOK: the most tokens the instantiation handles (8, 16 or 32). */
template <typename T, int NTOK, bool PAIRED>
__device__ __forceinline__ void stream_pass(const StreamJob<T> &J)
{
    if constexpr (std::is_same<T, float>::value)
        f32_stream<NTOK, PAIRED>(J);
    else
        mma_stream<T, NTOK / 8, PAIRED>(J);
}

/* Token rows into shared memory: xs[t][c - kb] = src(t, c) for c in
 * [kb, ke), zero from ke - kb up to kpad. src(t, c) = src[t*ld_t + c*ld_c].
 * vec: ld_c == 1, src and ld_t allow 16-byte loads, kb and ke multiples
 * of 16 bytes. coherent: src was written by this launch (read through L2
 * only, never the non-coherent path). */
template <typename T>
__device__ __forceinline__ void stage_tokens(T *xs, int xstride, int m,
                                             int kb, int ke, int kpad,
                                             const T *src, int64_t ld_t,
                                             int64_t ld_c, bool vec,
                                             bool coherent)
{
    const int nthreads = blockDim.x;
    if (vec) {
        const int per = 16 / (int)sizeof(T);
        const int nv = kpad / per;
        for (int i = threadIdx.x; i < m * nv; i += nthreads) {
            const int t = i / nv, cv = i - t * nv;
            const int col = kb + cv * per;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (col < ke) {
                const uint4 *p =
                    reinterpret_cast<const uint4 *>(src + t * ld_t + col);
                v = coherent ? __ldcg(p) : __ldg(p);
            }
            *reinterpret_cast<uint4 *>(xs + t * xstride + cv * per) = v;
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
