/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_mid.cu -- e4m3 weights for tens to hundreds of token rows
 * (batched decode, chunked prefill): the decode kernel's register
 * widening, with the tokens staged in shared memory.
 *
 * The decode kernel gives a block 16 channels and has every warp read its
 * tokens from global memory, so X is read once per 16 channels: at 64
 * rows of 4096 -> 11008 that is 350 MB of X against 45 MB of weights. Here
 * a block owns 256 weight rows (8 warps x 2 tiles of 16) and a token tile
 * of 8 MT tokens (8 .. 64); per 64-wide chunk of k the token tile is copied into a
 * shared-memory ring (cp.async, kStages deep) and every warp reads its B
 * fragments from there, while the weights still go straight from global
 * memory into registers as the A side of m16n8k16, lane (g, t) holding
 * bytes 16t .. 16t + 15 of rows g and g + 8, step s widening bytes
 * 4s .. 4s + 3 (the k order of fused_fp8_gemm.cu, B read at the same k).
 * Warps split the rows, not k, so a block needs no reduction of its own;
 * where the tiles are too few to fill the GPU, a cluster of S blocks
 * splits k and each block sums its share of the outputs from the S
 * blocks' shared memory in rank order (deterministic, no atomics, no
 * workspace). Each output is then finished from its fp32 sum as in the
 * decode kernel (fb_fp8_finish: one rounding).
 *
 * The MLP's gate-and-up form pairs 8 rows of Wg with the same 8 rows of
 * Wu in each 16-row tile, so G and U of a channel meet in the block and H
 * is written once, in the activations' type.
 *
 * Needs sm_90 (clusters, distributed shared memory); the host side asks
 * the device before it launches.
 */
#include <atomic>
#include <stdio.h>
#include <cooperative_groups.h>
#include "fused_fp8.h"
#include "fused_fp8_decode.cuh"
#include "fused_fp8_device.cuh"
#include "fused_internal.h"

namespace {

using namespace fb_fp8;
namespace cg = cooperative_groups;

constexpr int kMidWarps = 8, kMidNT = 2;
/* weight rows of a block: 8 warps x 2 tiles x 16 */
constexpr int kMidRows = kMidWarps * kMidNT * 16;
/* The ring: kStages chunks, each the block's 256 weight rows x 64 bytes
 * (a quarter warp's 16-byte A loads, rows g and g + 1 at 16t, are 128
 * contiguous bytes) and its 8 MT tokens x 64 columns, token rows padded
 * to 144 bytes so that a quarter warp's 16-byte B loads (tokens g, g + 1,
 * 32t) hit 32 different banks. Bytes in flight are what the stream's rate
 * needs (rate x latency), held in shared memory instead of registers. */
constexpr int kStages = 4, kXStride = 72;
constexpr int kWChunk = kMidRows * 64;
/* partial sums: [token][row], rows padded by 4 floats so that a warp's
 * stores (rows g, tokens 2t) spread over the banks */
constexpr int kRedStride = kMidRows + 4;
constexpr int kMaxSplit = 8;

template <int MT> __host__ __device__ constexpr int mid_slot_bytes()
{
    return kWChunk + 8 * MT * kXStride * 2;
}

template <int MT> __host__ __device__ constexpr int mid_smem_bytes()
{
    return kStages * mid_slot_bytes<MT>() > 8 * MT * kRedStride * 4
               ? kStages * mid_slot_bytes<MT>()
               : 8 * MT * kRedStride * 4;
}

/* What the main loop needs of either problem. Row r of the block (r =
 * 32 warp + 16 nt + 8 h + g) is row (r % 8) + row0(r / 8) of matrix
 * w[(r / 8) % 2] (row0: see the kernels); rows at or past n read row
 * n - 1 (zeros in the partial chunk) and are dropped by the caller. */
struct MidOperands {
    const void *x;
    int64_t x_ts, m, k, n;
    const uint8_t *w[2];
    int64_t w_cs;
    int64_t c0; /* the block's first row (gemm) or hidden channel (MLP) */
    bool pair;  /* MLP: 8 rows of Wg, then the same 8 of Wu */
};

/* Matrix row of block row r. (These helpers serve only the sm_90 code
 * below: maybe_unused keeps the other architectures' passes quiet.) */
[[maybe_unused]] __device__ __forceinline__ int64_t
mid_row(const MidOperands &o, int r)
{
    return o.pair ? o.c0 + r / 16 * 8 + r % 8 : o.c0 + r;
}

[[maybe_unused]] __device__ __forceinline__ void
cp_async16(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d),
                 "l"(src));
}

[[maybe_unused]] __device__ __forceinline__ void
cp_async8(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d),
                 "l"(src));
}

[[maybe_unused]] __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Chunk ch into a slot: the weights (16-byte pieces) and the token tile
 * (tokens t0 .., 8 MT of them; 16-byte pieces when X16, else 8-byte) by
 * cp.async for whole chunks, by checked copies for the partial last one
 * (zeros past k). Tokens past m are left as they are: the mma's token
 * columns do not mix, and their outputs are dropped. */
template <typename T, int MT, bool X16>
__device__ __forceinline__ void stage(const MidOperands &o, int64_t t0,
                                      int64_t ch, uint8_t *slot)
{
    const int64_t kb = ch * 64;
    const bool whole = kb + 64 <= o.k;
    for (int q = threadIdx.x; q < kMidRows * 4; q += kMidWarps * 32) {
        const int r = q / 4, col = q % 4 * 16;
        const int h = o.pair ? r / 8 % 2 : 0;
        const uint8_t *src = o.w[h] + min(mid_row(o, r), o.n - 1) * o.w_cs + kb + col;
        uint8_t *dst = slot + r * 64 + col;
        if (whole) {
            cp_async16(dst, src);
        } else {
            uint32_t v[4] = {0u, 0u, 0u, 0u};
            for (int e = 0; e < 16; e++)
                if (kb + col + e < o.k)
                    v[e / 4] |= (uint32_t)src[e] << (8 * (e % 4));
            *(uint4 *)dst = make_uint4(v[0], v[1], v[2], v[3]);
        }
    }
    constexpr int per = X16 ? 8 : 4, pieces = 8 * MT * (64 / per);
    const T *x = (const T *)o.x;
    T *xs = (T *)(slot + kWChunk);
    for (int q = threadIdx.x; q < pieces; q += kMidWarps * 32) {
        const int r = q / (64 / per), col = q % (64 / per) * per;
        const int64_t i = t0 + r;
        if (i >= o.m)
            continue;
        const T *src = x + i * o.x_ts + kb + col;
        T *dst = xs + r * kXStride + col;
        if (whole) {
            if (X16)
                cp_async16(dst, src);
            else
                cp_async8(dst, src);
        } else {
            for (int e = 0; e < per; e++) {
                uint16_t v = 0;
                if (kb + col + e < o.k)
                    v = *(const uint16_t *)(src + e);
                *(uint16_t *)(dst + e) = v;
            }
        }
    }
}

/* The common case of stage() with its addresses worked out once: a whole
 * chunk of a block whose rows are all below n. This thread's weight
 * pieces are rows r + 64 i of the block (r = tid / 4), which are matrix
 * rows row(r) + i rstep (rstep 64, or 32 for the MLP's pairs, whose
 * matrix is the same for all four); its token pieces are tile rows
 * tid / (64 / per) + (256 / (64 / per)) j, the first xn of them inside
 * the tile and below m.
 * A few integer adds and the copies a chunk, instead of the index
 * arithmetic of every piece. */
template <typename T, int MT, bool X16> struct FastStage {
    static constexpr int per = X16 ? 8 : 4, rows_per = kMidWarps * 32 / (64 / per);
    static constexpr int xpieces =
        (8 * MT * (64 / per) + kMidWarps * 32 - 1) / (kMidWarps * 32);
    const uint8_t *w0;
    int64_t wstep;
    const T *x0;
    int64_t xstep;
    int xn;
    bool ok; /* the block's rows all below n */

    __device__ __forceinline__ FastStage(const MidOperands &o, int64_t t0)
    {
        const int tid = threadIdx.x, r = tid / 4;
        const int h = o.pair ? r / 8 % 2 : 0;
        const int64_t last = o.pair ? o.c0 + kMidRows / 2 - 1 : o.c0 + kMidRows - 1;
        ok = last < o.n;
        w0 = o.w[h] + min(mid_row(o, r), o.n - 1) * o.w_cs + tid % 4 * 16;
        wstep = (o.pair ? 32 : 64) * o.w_cs;
        const int xr = tid / (64 / per);
        x0 = (const T *)o.x + (t0 + xr) * o.x_ts + tid % (64 / per) * per;
        xstep = rows_per * o.x_ts;
        /* tile rows from this thread's first piece on */
        const int64_t left = min((int64_t)(8 * MT), o.m - t0) - xr;
        xn = left <= 0 ? 0
                       : (int)min((left + rows_per - 1) / rows_per,
                                  (int64_t)xpieces);
    }

    __device__ __forceinline__ void operator()(int64_t ch, uint8_t *slot) const
    {
        const int tid = threadIdx.x;
        const int64_t kb = ch * 64;
#pragma unroll
        for (int i = 0; i < kMidRows * 4 / (kMidWarps * 32); i++)
            cp_async16(slot + tid * 16 + i * (kMidWarps * 32 * 16),
                       w0 + i * wstep + kb);
        T *xs = (T *)(slot + kWChunk) + tid / (64 / per) * kXStride +
                tid % (64 / per) * per;
#pragma unroll
        for (int j = 0; j < xpieces; j++)
            if (j < xn) {
                if (X16)
                    cp_async16(xs + j * rows_per * kXStride, x0 + j * xstep + kb);
                else
                    cp_async8(xs + j * rows_per * kXStride, x0 + j * xstep + kb);
            }
    }
};

/* The products of one chunk: steps in pairs, so that each B load is 16
 * bytes (two steps of token 8j + g) and only one pair's A fragments are
 * live. wv[nt][h]: this lane's 16 bytes of tile nt's row 8h + g. */
template <typename T, int MT>
__device__ __forceinline__ void mid_chunk(const uint4 (&wv)[kMidNT][2],
                                          const T *xs,
                                          float (&acc)[MT][kMidNT][4])
{
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int sp = 0; sp < 2; sp++) {
        uint32_t a[kMidNT][2][4];
#pragma unroll
        for (int nt = 0; nt < kMidNT; nt++) {
            const uint32_t wl[2] = {sp ? wv[nt][0].z : wv[nt][0].x,
                                    sp ? wv[nt][0].w : wv[nt][0].y};
            const uint32_t wh[2] = {sp ? wv[nt][1].z : wv[nt][1].x,
                                    sp ? wv[nt][1].w : wv[nt][1].y};
#pragma unroll
            for (int s = 0; s < 2; s++) {
                a[nt][s][0] = fb_fp8_pair<T>(wl[s]);
                a[nt][s][2] = fb_fp8_pair<T>(wl[s] >> 16);
                a[nt][s][1] = fb_fp8_pair<T>(wh[s]);
                a[nt][s][3] = fb_fp8_pair<T>(wh[s] >> 16);
            }
        }
#pragma unroll
        for (int j = 0; j < MT; j++) {
            const uint4 v = *(const uint4 *)(xs + (8 * j + g) * kXStride +
                                             16 * t + 8 * sp);
#pragma unroll
            for (int nt = 0; nt < kMidNT; nt++) {
                fb_fp8_mma<T>(acc[j][nt], a[nt][0][0], a[nt][0][1],
                              a[nt][0][2], a[nt][0][3], v.x, v.y);
                fb_fp8_mma<T>(acc[j][nt], a[nt][1][0], a[nt][1][1],
                              a[nt][1][2], a[nt][1][3], v.z, v.w);
            }
        }
    }
}

/* Chunks cb, cb + cs, cb + 2 cs, .. below ce of the block's rows against
 * token tile t0, through the ring. The blocks of a cluster take every
 * cs-th chunk from their rank on, so that the cluster, running together,
 * reads cs adjacent 64-byte pieces of each row at a time (whole DRAM
 * bursts and pages) rather than cs far-apart ranges. */
template <typename T, int MT, bool X16>
__device__ __forceinline__ void mid_loop(const MidOperands &o, int64_t t0,
                                         int64_t cb, int64_t ce, int cs,
                                         uint8_t *ring,
                                         float (&acc)[MT][kMidNT][4])
{
    constexpr int slot = mid_slot_bytes<MT>();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const FastStage<T, MT, X16> fast(o, t0);
    /* chunks from here on are partial (the last, when k % 64 != 0) */
    const int64_t whole = fast.ok ? o.k / 64 : 0;
#pragma unroll
    for (int s = 0; s < kStages - 1; s++) {
        const int64_t c = cb + s * cs;
        if (c < whole)
            fast(c, ring + s * slot);
        else if (c < ce)
            stage<T, MT, X16>(o, t0, c, ring + s * slot);
        cp_async_commit();
    }
    int cur = 0;
    for (int64_t ch = cb; ch < ce; ch += cs) {
        cp_async_wait<kStages - 2>();
        __syncthreads();
        /* into the slot of the previous chunk, which every warp has
         * finished */
        const int64_t nx = ch + (int64_t)(kStages - 1) * cs;
        const int nslot = cur == 0 ? kStages - 1 : cur - 1;
        if (nx < whole)
            fast(nx, ring + nslot * slot);
        else if (nx < ce)
            stage<T, MT, X16>(o, t0, nx, ring + nslot * slot);
        cp_async_commit();
        const uint8_t *ws = ring + cur * slot;
        uint4 wv[kMidNT][2];
#pragma unroll
        for (int nt = 0; nt < kMidNT; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                wv[nt][h] = *(const uint4 *)(ws + (32 * warp + 16 * nt +
                                                   8 * h + g) * 64 + 16 * t);
        mid_chunk<T, MT>(wv, (const T *)(ws + kWChunk), acc);
        cur = cur == kStages - 1 ? 0 : cur + 1;
    }
    cp_async_wait<0>();
}

/* The block's part: tile (blockIdx.x / S), k split rank (blockIdx.x % S);
 * sums left in red[token][row] of this block's shared memory, visible to
 * the cluster after its barrier. */
template <typename T, int MT>
__device__ __forceinline__ void mid_sums(const MidOperands &o, int64_t t0,
                                         int splits, uint8_t *smem)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int rank = (int)(blockIdx.x % (unsigned)splits);
    const int64_t chunks = (o.k + 63) / 64;
    const int64_t cb = rank, ce = chunks;
    float acc[MT][kMidNT][4];
#pragma unroll
    for (int j = 0; j < MT; j++)
#pragma unroll
        for (int nt = 0; nt < kMidNT; nt++)
            acc[j][nt][0] = acc[j][nt][1] = acc[j][nt][2] = acc[j][nt][3] =
                0.0f;
    if ((uintptr_t)o.x % 16 == 0 && o.x_ts % 8 == 0)
        mid_loop<T, MT, true>(o, t0, cb, ce, splits, smem, acc);
    else
        mid_loop<T, MT, false>(o, t0, cb, ce, splits, smem, acc);
    __syncthreads(); /* the ring is reused for the sums */
    const int warp = threadIdx.x / 32;
    float *red = (float *)smem;
#pragma unroll
    for (int j = 0; j < MT; j++)
#pragma unroll
        for (int nt = 0; nt < kMidNT; nt++) {
            /* d0, d1: row g, tokens 2t, 2t + 1; d2, d3: row g + 8 */
            float *r0 = red + (8 * j + 2 * t) * kRedStride + 32 * warp +
                        16 * nt + g;
            r0[0] = acc[j][nt][0];
            r0[kRedStride] = acc[j][nt][1];
            r0[8] = acc[j][nt][2];
            r0[kRedStride + 8] = acc[j][nt][3];
        }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* The sums over the cluster's k shares of red[off[u] .. off[u] + 3] for
 * U offsets, in rank order; a rank's U loads are issued together, since
 * each is a round trip to another SM. */
template <int U>
__device__ __forceinline__ void cluster_sums(cg::cluster_group &cl,
                                             float *red, int splits,
                                             const int (&off)[U],
                                             float4 (&s)[U])
{
#pragma unroll
    for (int u = 0; u < U; u++)
        s[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int q = 0; q < splits; q++) {
        const float *r = cl.map_shared_rank(red, q);
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = *(const float4 *)(r + off[u]);
#pragma unroll
        for (int u = 0; u < U; u++)
            s[u].x += v[u].x, s[u].y += v[u].y, s[u].z += v[u].z,
                s[u].w += v[u].w;
    }
}
#endif

/* Token tiles of a problem with m rows. */
__host__ __device__ inline int64_t token_tiles(int64_t m, int mt)
{
    return (m + 8 * mt - 1) / (8 * mt);
}

/* Two blocks an SM: 128 registers (64 accumulators at 64 tokens, one
 * step pair's A fragments, no weights held across chunks) and at most
 * 100 KB of shared memory each. A token tile of 128 (one block an SM,
 * 128 accumulators) measured no faster where the rule takes this kernel. */
__host__ __device__ constexpr int mid_min_blocks(int)
{
    return 2;
}

template <typename T, int MT>
__global__ void __launch_bounds__(kMidWarps * 32, mid_min_blocks(MT))
    e4m3_gemm_mid(fb_e4m3_gemm_problem p, int splits)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) uint8_t smem[];
    cg::cluster_group cl = cg::this_cluster();
    const int64_t tile = blockIdx.x / (unsigned)splits;
    const int64_t tiles_t = token_tiles(p.m, MT);
    const int64_t ct = tile / tiles_t, t0 = tile % tiles_t * 8 * MT;
    MidOperands o;
    o.x = p.x, o.x_ts = p.x_ts, o.m = p.m, o.k = p.k, o.n = p.n;
    o.w[0] = o.w[1] = p.w, o.w_cs = p.w_cs;
    o.c0 = ct * kMidRows, o.pair = false;
    mid_sums<T, MT>(o, t0, splits, smem);
    cl.sync();
    const int rank = (int)(blockIdx.x % (unsigned)splits);
    float *red = (float *)smem;
    /* four rows a thread, rows fast (neighbouring threads write
     * neighbouring channels), two groups at a time; a thread's four
     * channels are the same in every group (the stride is a multiple of
     * the 64 groups of a token), so their scales and biases are read
     * once, before any store (the compiler cannot move a load past a
     * store that may alias it). The arithmetic is fb_fp8_finish's. */
    constexpr int groups = 2 * MT * kMidRows, U = 2;
    const int step = splits * blockDim.x;
    const int rq = (rank * blockDim.x + threadIdx.x) % (kMidRows / 4) * 4;
    const int64_t j = o.c0 + rq;
    float sc[4], bi[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const bool in = j + e < p.n;
        sc[e] = in ? p.scale[j + e] : 0.0f;
        bi[e] = in && p.bias != NULL ? fb_load_f32(((const T *)p.bias)[j + e])
                                     : 0.0f;
    }
    for (int base = rank * blockDim.x + threadIdx.x; base < groups;
         base += U * step) {
        int off[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = min(base + u * step, groups - 1);
            off[u] = q / (kMidRows / 4) * kRedStride + rq;
        }
        float4 sum[U];
        cluster_sums<U>(cl, red, splits, off, sum);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = base + u * step;
            const int64_t ti = t0 + q / (kMidRows / 4);
            if (q >= groups || ti >= p.m)
                continue;
            const float d[4] = {sum[u].x, sum[u].y, sum[u].z, sum[u].w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (j + e >= p.n)
                    continue;
                T *c = (T *)p.c + ti * p.c_ts + (j + e) * p.c_cs;
                float v = p.alpha * (d[e] * sc[e]);
                if (p.beta != 0.0f)
                    v += p.beta * fb_load_f32(*c);
                if (p.bias != NULL)
                    v += bi[e];
                *c = fb_store_as<T>(fb_act_dynamic(p.act, v));
            }
        }
    }
    cl.sync(); /* no block leaves while another reads its shared memory */
#endif
}

template <typename T, int MT>
__global__ void __launch_bounds__(kMidWarps * 32, mid_min_blocks(MT))
    e4m3_gate_up_mid(fb_e4m3_mlp_problem p, int splits, T *hbuf)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) uint8_t smem[];
    cg::cluster_group cl = cg::this_cluster();
    const int64_t tile = blockIdx.x / (unsigned)splits;
    const int64_t tiles_t = token_tiles(p.m, MT);
    const int64_t ct = tile / tiles_t, t0 = tile % tiles_t * 8 * MT;
    constexpr int half = kMidRows / 2;
    MidOperands o;
    o.x = p.x, o.x_ts = p.ldx, o.m = p.m, o.k = p.k, o.n = p.h;
    o.w[0] = p.wg, o.w[1] = p.wu, o.w_cs = p.k;
    /* tile row 8h + g of block rows 16 q ..: hidden channel
     * c0 + 8 q + g of Wg (h = 0) or Wu (h = 1) */
    o.c0 = ct * half, o.pair = true;
    mid_sums<T, MT>(o, t0, splits, smem);
    cl.sync();
    const int rank = (int)(blockIdx.x % (unsigned)splits);
    float *red = (float *)smem;
    constexpr int groups = 2 * MT * half, U = 2;
    const int step = splits * blockDim.x;
    /* a thread's four channels are the same in every group (see the
     * gemm): their scales and biases read once, before any store */
    const int jl = (rank * blockDim.x + threadIdx.x) % (half / 4) * 4;
    const int rg = jl / 8 * 16 + jl % 8;
    const int64_t j = o.c0 + jl;
    float sg[4], su[4], bg[4], bu[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const bool in = j + e < p.h;
        sg[e] = in ? p.sg[j + e] : 0.0f;
        su[e] = in ? p.su[j + e] : 0.0f;
        bg[e] = in && p.bg != NULL ? fb_load_f32(((const T *)p.bg)[j + e]) : 0.0f;
        bu[e] = in && p.bu != NULL ? fb_load_f32(((const T *)p.bu)[j + e]) : 0.0f;
    }
    for (int base = rank * blockDim.x + threadIdx.x; base < groups;
         base += U * step) {
        int off[2 * U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = min(base + u * step, groups - 1);
            off[2 * u] = q / (half / 4) * kRedStride + rg;
            off[2 * u + 1] = off[2 * u] + 8;
        }
        float4 sum[2 * U];
        cluster_sums<2 * U>(cl, red, splits, off, sum);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int q = base + u * step;
            const int64_t ti = t0 + q / (half / 4);
            if (q >= groups || ti >= p.m)
                continue;
            const float gs[4] = {sum[2 * u].x, sum[2 * u].y, sum[2 * u].z,
                                 sum[2 * u].w};
            const float us[4] = {sum[2 * u + 1].x, sum[2 * u + 1].y,
                                 sum[2 * u + 1].z, sum[2 * u + 1].w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (j + e >= p.h)
                    continue;
                float gv = gs[e] * sg[e], uv = us[e] * su[e];
                if (p.bg != NULL)
                    gv += bg[e];
                if (p.bu != NULL)
                    uv += bu[e];
                hbuf[ti * p.h + j + e] =
                    fb_store_as<T>(fb_act_dynamic(p.gate_act, gv) * uv);
            }
        }
    }
    cl.sync();
#endif
}

/* Token tile of 8 MT tokens for m rows: the smallest that holds them, 64
 * beyond (each weight byte is then read once per 64 tokens). */
int mid_mt(int64_t m)
{
    const int knob = FBF_KNOB(e4m3_mid_tokens);
    if (knob > 0)
        return knob / 8;
    return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : 8;
}

/* The device's SMs, or 0 where it has no clusters (before sm_90). */
int mid_sms()
{
    int dev = 0, major = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                               dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
            cudaSuccess || major < 9)
        return 0;
    return sms;
}

/* The k split for tiles blocks: the S of 1, 2, 4, 8 (powers of two, so
 * that clusters pack the SMs of a GPC; at least 2 chunks each) that
 * minimises waves x (chunks / S + kSplitFixed), slots being the blocks the
 * GPU holds at once and kSplitFixed a block's cost beside its chunks (the
 * ring's fill, the partial sums), in chunks; ties to the smaller S. */
constexpr int kSplitFixed = 6;
int mid_split(int64_t tiles, int64_t k, int slots)
{
    const int64_t chunks = (k + 63) / 64;
    if (FBF_KNOB(e4m3_splits) > 0)
        return FBF_KNOB(e4m3_splits);
    int best = 1;
    double cost = 1e300;
    for (int s = 1; s <= kMaxSplit && s <= (chunks + 1) / 2; s *= 2) {
        const double waves = (double)((tiles * s + slots - 1) / slots);
        const double c = waves * ((double)chunks / s + kSplitFixed);
        if (c < cost * (1.0 - 1e-9)) {
            cost = c;
            best = s;
        }
    }
    return best;
}

template <typename K, typename... Args>
cudaError_t launch_mid(K kernel, int smem, int64_t blocks, int splits,
                       cudaStream_t stream, Args... args)
{
    cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    /* all of L1 as shared memory, so that two blocks fit an SM */
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kernel,
                                 cudaFuncAttributePreferredSharedMemoryCarveout,
                                 (int)cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess)
        return e;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3(kMidWarps * 32);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)splits;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <typename T, int MT>
cudaError_t gemm_mid_mt(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                        int sms, int splits)
{
    constexpr int smem = mid_smem_bytes<MT>();
    const int64_t tiles =
        (p->n + kMidRows - 1) / kMidRows * token_tiles(p->m, MT);
    if (splits <= 0)
        splits = mid_split(tiles, p->k, sms * mid_min_blocks(MT));
    return launch_mid(e4m3_gemm_mid<T, MT>, smem, tiles * splits, splits,
                      stream, *p, splits);
}

template <typename T>
cudaError_t gemm_mid(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                     int sms, int splits)
{
    switch (mid_mt(p->m)) {
    case 1: return gemm_mid_mt<T, 1>(stream, p, sms, splits);
    case 2: return gemm_mid_mt<T, 2>(stream, p, sms, splits);
    case 4: return gemm_mid_mt<T, 4>(stream, p, sms, splits);
    default: return gemm_mid_mt<T, 8>(stream, p, sms, splits);
    }
}

template <typename T, int MT>
cudaError_t gate_up_mid_mt(cudaStream_t stream, const fb_e4m3_mlp_problem *p,
                           void *hbuf, int sms, int splits)
{
    constexpr int smem = mid_smem_bytes<MT>();
    const int64_t tiles = (p->h + kMidRows / 2 - 1) / (kMidRows / 2) *
                          token_tiles(p->m, MT);
    if (splits <= 0)
        splits = mid_split(tiles, p->k, sms * mid_min_blocks(MT));
    return launch_mid(e4m3_gate_up_mid<T, MT>, smem, tiles * splits, splits,
                      stream, *p, splits, (T *)hbuf);
}

template <typename T>
cudaError_t gate_up_mid(cudaStream_t stream, const fb_e4m3_mlp_problem *p,
                        void *hbuf, int sms, int splits)
{
    switch (mid_mt(p->m)) {
    case 1: return gate_up_mid_mt<T, 1>(stream, p, hbuf, sms, splits);
    case 2: return gate_up_mid_mt<T, 2>(stream, p, hbuf, sms, splits);
    case 4: return gate_up_mid_mt<T, 4>(stream, p, hbuf, sms, splits);
    default: return gate_up_mid_mt<T, 8>(stream, p, hbuf, sms, splits);
    }
}

} // namespace

bool fb_fp8_mid_gemm_applies(const fb_e4m3_gemm_problem *p)
{
    /* the decode kernel's preconditions; blocks (tiles x 8 splits) within
     * the grid's x */
    return (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_BF16) &&
           p->m > 0 && p->n > 0 && p->k > 0 &&
           p->alpha != 0.0f && p->w_ks == 1 && p->w_cs % 16 == 0 &&
           (uintptr_t)p->w % 16 == 0 && p->x_ks == 1 && p->x_ts % 4 == 0 &&
           (uintptr_t)p->x % 8 == 0 &&
           (p->n + kMidRows - 1) / kMidRows * token_tiles(p->m, 8) <=
               (1 << 27) &&
           mid_sms() > 0;
}

bool fb_fp8_mid_gate_up_applies(const fb_e4m3_mlp_problem *p)
{
    return (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_BF16) &&
           p->m > 0 && p->k > 0 && p->h > 0 &&
           p->k % 16 == 0 && (uintptr_t)p->wg % 16 == 0 &&
           (uintptr_t)p->wu % 16 == 0 && p->ldx % 4 == 0 &&
           (uintptr_t)p->x % 8 == 0 &&
           (p->h + kMidRows / 2 - 1) / (kMidRows / 2) * token_tiles(p->m, 8) <=
               (1 << 27) &&
           mid_sms() > 0;
}

cudaError_t fb_fp8_mid_gemm(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                            int splits)
{
    const int sms = mid_sms();
    if (sms == 0)
        return cudaErrorNotSupported;
    return p->dtype == FB_DTYPE_F16
               ? gemm_mid<__half>(stream, p, sms, splits)
               : gemm_mid<__nv_bfloat16>(stream, p, sms, splits);
}

cudaError_t fb_fp8_mid_gate_up(cudaStream_t stream,
                               const fb_e4m3_mlp_problem *p, void *hbuf,
                               int splits)
{
    const int sms = mid_sms();
    if (sms == 0)
        return cudaErrorNotSupported;
    return p->dtype == FB_DTYPE_F16
               ? gate_up_mid<__half>(stream, p, hbuf, sms, splits)
               : gate_up_mid<__nv_bfloat16>(stream, p, hbuf, sms, splits);
}
