/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_decode.cuh -- the e4m3 decode kernels' main loop (the scheme
 * is described at the top of fused_fp8_gemm.cu): a block's tiles of 16
 * weight rows, every warp a share of k, the partial sums met in shared
 * memory. Up to 8 tokens, and at 9..16 where X does not fit L1, the
 * weights land in a ring in shared memory (stream_ring: the next chunk is
 * asked for before the current one is waited for, and the ring holds no
 * registers), else in registers (stream_chunks). Shared by the gemm and
 * the MLP's gate-and-up kernel.
 */
#ifndef FB_FUSED_FP8_DECODE_CUH
#define FB_FUSED_FP8_DECODE_CUH

#include <atomic>
#include <type_traits>
#include "fused_device.cuh"
#include "fused_internal.h"
#include "fused_fp8_device.cuh"

namespace fb_fp8 {

/* 16 weight bytes of row c from k0 (zeros past n or k). */
__device__ __forceinline__ uint4 load_w(const uint8_t *w, int64_t w_cs,
                                        int64_t n, int64_t k, int64_t c,
                                        int64_t k0)
{
    if (c < n && k0 + 16 <= k)
        return __ldcs((const uint4 *)(w + c * w_cs + k0));
    uint32_t r[4] = {0u, 0u, 0u, 0u};
    if (c < n)
        for (int q = 0; q < 16; q++)
            if (k0 + q < k)
                r[q / 4] |= (uint32_t)w[c * w_cs + k0 + q] << (8 * (q % 4));
    return make_uint4(r[0], r[1], r[2], r[3]);
}

/* A token row's values at kk .. kk + 3 as a B fragment (b0: the first
 * two, b1: the last two), zeros past k. */
template <typename T>
__device__ __forceinline__ uint2 load_x_checked(const T *xrow, int64_t k,
                                                int64_t kk)
{
    if (kk + 4 <= k)
        return *(const uint2 *)(xrow + kk);
    uint32_t e[4] = {0u, 0u, 0u, 0u};
    for (int q = 0; q < 4; q++)
        if (kk + q < k)
            e[q] = *(const uint16_t *)(xrow + kk + q);
    return make_uint2(e[0] | (e[1] << 16), e[2] | (e[3] << 16));
}

/* The A fragments of one chunk for each of NT tiles: step s takes bytes
 * 4s .. 4s + 3 of the tile's rows g (a0, a2) and g + 8 (a1, a3), widened;
 * wv[nt] holds the two rows' 16 bytes. */
template <typename T, int NT>
__device__ __forceinline__ void widen_tiles(const uint4 (&wv)[NT][2],
                                            uint32_t (&a)[NT][4][4])
{
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const uint32_t wl[4] = {wv[nt][0].x, wv[nt][0].y, wv[nt][0].z,
                                wv[nt][0].w};
        const uint32_t wh[4] = {wv[nt][1].x, wv[nt][1].y, wv[nt][1].z,
                                wv[nt][1].w};
#pragma unroll
        for (int s = 0; s < 4; s++) {
            a[nt][s][0] = fb_fp8_pair<T>(wl[s]);
            a[nt][s][2] = fb_fp8_pair<T>(wl[s] >> 16);
            a[nt][s][1] = fb_fp8_pair<T>(wh[s]);
            a[nt][s][3] = fb_fp8_pair<T>(wh[s] >> 16);
        }
    }
}

/* The products of one chunk: acc[j][nt] += W_nt x_j^T, tile nt's 16 rows
 * against the token tile j (tokens 8j .. 8j + 7). xb[s]: token 8j + g's
 * B fragment of step s. */
template <typename T, int NT>
__device__ __forceinline__ void tile_products(const uint32_t (&a)[NT][4][4],
                                              const uint2 (&xb)[4],
                                              float (&acc)[NT][4])
{
#pragma unroll
    for (int s = 0; s < 4; s++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            fb_fp8_mma<T>(acc[nt], a[nt][s][0], a[nt][s][1], a[nt][s][2],
                          a[nt][s][3], xb[s].x, xb[s].y);
}

/* One whole chunk (64 columns from kb, no bounds to test): the tokens
 * come from this lane's row pointers xr (token 8j + g, rows past m read
 * row m - 1: their sums are dropped), 16 columns each, in 16-byte loads
 * when X16 (rows 16-byte aligned), else 8-byte ones. */
template <typename T, int NT, int MT, bool X16>
__device__ __forceinline__ void chunk_full(const T *const (&xr)[MT],
                                           int64_t kb,
                                           const uint4 (&wv)[NT][2],
                                           float (&acc)[MT][NT][4])
{
    uint32_t a[NT][4][4];
    widen_tiles<T, NT>(wv, a);
#pragma unroll
    for (int j = 0; j < MT; j++) {
        uint2 xb[4];
        if (X16) {
#pragma unroll
            for (int s = 0; s < 4; s += 2) {
                const uint4 v = *(const uint4 *)(xr[j] + kb + 4 * s);
                xb[s] = make_uint2(v.x, v.y);
                xb[s + 1] = make_uint2(v.z, v.w);
            }
        } else {
#pragma unroll
            for (int s = 0; s < 4; s++)
                xb[s] = *(const uint2 *)(xr[j] + kb + 4 * s);
        }
        tile_products<T, NT>(a, xb, acc[j]);
    }
}

/* Chunk cd's weights for this lane: 16 bytes of each tile row it reads,
 * with a streaming hint (each byte is read once). */
template <int NT>
__device__ __forceinline__ void load_chunk(const uint8_t *const (&wr)[NT][2],
                                           int64_t cd, uint4 (&b)[NT][2])
{
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            b[nt][h] = __ldcs((const uint4 *)(wr[nt][h] + cd * 64));
}

/* The whole chunks of this warp (chunk warp, warp + W, ...), D chunks in
 * flight per lane: buf[d] holds chunk ch + d * W; its products are taken
 * and its registers refilled with the chunk D steps further on, so
 * D - 1 .. D chunks per lane are always on the way. The first D chunks
 * of weights are asked for before the grid waits for the one ahead of
 * it (where it was launched programmatically: the MLP's down projection,
 * whose X is H): nothing reads X before that. */
template <typename T, int W, int NT, int MT, bool X16, int D>
__device__ __forceinline__ void stream_chunks(const T *const (&xr)[MT],
                                              const uint8_t *const (&wr)[NT][2],
                                              int64_t full,
                                              float (&acc)[MT][NT][4])
{
    const int warp = threadIdx.x / 32;
    uint4 buf[D][NT][2];
#pragma unroll
    for (int d = 0; d < D; d++) {
        const int64_t cd = warp + (int64_t)d * W;
        if (cd < full)
            load_chunk<NT>(wr, cd, buf[d]);
    }
    fbf::grid_dependency_wait();
    for (int64_t ch = warp; ch < full; ch += (int64_t)D * W) {
#pragma unroll
        for (int d = 0; d < D; d++) {
            const int64_t cd = ch + (int64_t)d * W;
            if (cd < full)
                chunk_full<T, NT, MT, X16>(xr, cd * 64, buf[d], acc);
            const int64_t nx = cd + (int64_t)D * W;
            if (nx < full)
                load_chunk<NT>(wr, nx, buf[d]);
        }
    }
}

/* Chunks in flight per lane: about 64 to 96 bytes of weights a lane where
 * the registers allow it (the stream's rate is bytes in flight over the
 * memory latency, and a warp's slot stays empty while it computes on the
 * chunk that filled it). */
template <int NT, int MT> __host__ __device__ constexpr int depth_of()
{
    return NT == 1 && MT == 1 ? 3 : 2;
}

/* Stages of each warp's ring in shared memory for m tokens of k values
 * (0: the chunks stay in registers, stream_chunks). Up to 8 tokens 4.
 * From 9 tokens each chunk's products read X again: where X fits the
 * 256 KB of L1 and shared memory an SM has, it stays in L1 and a ring
 * would shrink that L1 (16 x 4096 -> 11008 on an H200: 25.5 us in
 * registers, 27.0 with a ring); past it X comes from L2 anyway and a
 * ring of 3 streams faster (16 x 11008 -> 4096: 22.8 -> 21.3 us). */
constexpr int64_t kRingXBytes = 256 * 1024;
constexpr int kRingStages8 = 4, kRingStages16 = 3;
inline int ring_stages(int mt, int64_t m, int64_t k)
{
    return mt == 1                               ? kRingStages8
           : mt == 2 && m * k * 2 > kRingXBytes ? kRingStages16
                                                 : 0;
}

/* Floats of shared memory decode_sums needs: each warp's slice of 16 NT
 * rows x 8 MT tokens. */
template <int W, int NT, int MT> __host__ __device__ constexpr int red_floats()
{
    return W * 16 * NT * 8 * MT;
}

/* Bytes of a ring of R stages: each of W warps R chunks of 32 lanes x
 * 2 NT x 16 bytes. */
template <int W, int NT, int R> __host__ __device__ constexpr int ring_bytes()
{
    return W * R * NT * 2 * 32 * 16;
}

/* Where there is a ring, the partial sums' slices take its shared memory
 * once every warp has streamed (less shared memory, more L1 for X); the
 * kernel's static array then has one float, else red_floats. */
template <int W, int NT, int MT, int R>
__host__ __device__ constexpr int static_red_floats()
{
    return R > 0 ? 1 : red_floats<W, NT, MT>();
}

/* Bytes of dynamic shared memory a decode kernel launches with. */
template <int W, int NT, int MT, int R>
__host__ __device__ constexpr int dynamic_bytes()
{
    return R == 0 ? 0
           : ring_bytes<W, NT, R>() > 4 * red_floats<W, NT, MT>()
               ? ring_bytes<W, NT, R>()
               : 4 * red_floats<W, NT, MT>();
}

/* The slices' home: the ring (dynamic) or the static array. */
template <int R>
__device__ __forceinline__ float *sums_home(float *own, uint4 *ring)
{
    return R > 0 ? reinterpret_cast<float *>(ring) : own;
}

/* stream_chunks with the chunks landing in this warp's ring of R stages
 * (ring: the block's, W x R x NT x 2 x 32 uint4) by cp.async, so R - 1
 * chunks a lane are on the way without holding registers.
 * Each lane reads back only the 16-byte pieces it asked for, so no
 * barrier is needed. */
template <typename T, int W, int NT, int MT, bool X16, int R>
__device__ __forceinline__ void stream_ring(const T *const (&xr)[MT],
                                            const uint8_t *const (&wr)[NT][2],
                                            int64_t full,
                                            float (&acc)[MT][NT][4],
                                            uint4 *ring)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint4 *mine = ring + warp * (R * NT * 2 * 32) + lane;
    const uint64_t policy = fbf::l2_evict_first_policy();
    auto ask = [&](int64_t cd, int slot) {
        if (cd < full)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    fbf::cp_async16_hint(
                        mine + ((slot * NT + nt) * 2 + h) * 32,
                        wr[nt][h] + cd * 64, policy);
        fbf::cp_async_commit(); /* empty groups keep the count in step */
    };
#pragma unroll
    for (int d = 0; d < R - 1; d++)
        ask(warp + (int64_t)d * W, d);
    fbf::grid_dependency_wait();
    int slot = 0;
    for (int64_t ch = warp; ch < full; ch += W) {
        /* the stage read last round, whose values are in use already */
        ask(ch + (int64_t)(R - 1) * W, slot == 0 ? R - 1 : slot - 1);
        fbf::cp_async_wait<R - 1>();
        uint4 wv[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                wv[nt][h] = mine[((slot * NT + nt) * 2 + h) * 32];
        chunk_full<T, NT, MT, X16>(xr, ch * 64, wv, acc);
        slot = slot + 1 == R ? 0 : slot + 1;
    }
    fbf::cp_async_wait<0>();
}

/* The token tiling for m tokens, m <= kMaxTokens: tiles of 8 tokens (the
 * n side of m16n8k16), 1, 2, 4 or 8 of them. */
constexpr int kMaxTokens = 64;
enum decode_tiling { kTok8, kTok16, kTok32, kTok64 };
__host__ __device__ inline decode_tiling decode_tiling_of(int64_t m)
{
    return m <= 8 ? kTok8 : m <= 16 ? kTok16 : m <= 32 ? kTok32 : kTok64;
}
__host__ __device__ inline int decode_rows(decode_tiling d)
{
    return d == kTok8 ? 8 : d == kTok16 ? 16 : d == kTok32 ? 32 : 64;
}

/* Calls launch(MT, R) for m tokens of k values, the token tiles and the
 * ring's stages (ring_stages) as compile-time constants
 * (std::integral_constant), so that each launcher instantiates its kernel
 * for exactly the forms the rule can choose. */
template <typename L> void decode_forms(int64_t m, int64_t k, L &&launch)
{
    using std::integral_constant;
    switch (decode_tiling_of(m)) {
    case kTok8:
        launch(integral_constant<int, 1>{},
               integral_constant<int, kRingStages8>{});
        break;
    case kTok16:
        if (ring_stages(2, m, k) > 0)
            launch(integral_constant<int, 2>{},
                   integral_constant<int, kRingStages16>{});
        else
            launch(integral_constant<int, 2>{}, integral_constant<int, 0>{});
        break;
    case kTok32:
        launch(integral_constant<int, 4>{}, integral_constant<int, 0>{});
        break;
    default:
        launch(integral_constant<int, 8>{}, integral_constant<int, 0>{});
        break;
    }
}

/* The block's NT tiles of 16 weight rows against the m tokens: every
 * warp's partial sums of its chunks, summed in warp order into
 * red[r * 8 MT + i] (tile row r = 16 nt + (0..15), token i); red is
 * sums_home<R>(...), ring (dynamic) dynamic_bytes<W, NT, MT, R>() (R
 * stages a warp, 0: none). Row
 * h * 8 + g of tile nt (h = 0, 1) is row c[2 nt + h] + g of matrix
 * w[2 nt + h] (row stride w_cs[2 nt + h]); rows at or past n read zeros
 * in the checked chunk and row n - 1 elsewhere, tokens past m token
 * m - 1: those sums are dropped by the caller. Whole chunks run without
 * bounds tests; the partial last chunk with them. */
template <typename T, int W, int NT, int MT, int R>
__device__ __forceinline__ void decode_sums(const T *x, int64_t x_ts,
                                            int64_t m, int64_t k,
                                            const uint8_t *const *w,
                                            const int64_t *w_cs,
                                            const int64_t *c, int64_t n,
                                            float *red, uint4 *ring)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    float acc[MT][NT][4];
#pragma unroll
    for (int j = 0; j < MT; j++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            acc[j][nt][0] = acc[j][nt][1] = acc[j][nt][2] = acc[j][nt][3] =
                0.0f;
    const T *xr[MT];
#pragma unroll
    for (int j = 0; j < MT; j++)
        xr[j] = x + min((int64_t)(8 * j + g), m - 1) * x_ts + 16 * t;
    const uint8_t *wr[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            wr[nt][h] = w[2 * nt + h] +
                        min(c[2 * nt + h] + g, n - 1) * w_cs[2 * nt + h] +
                        16 * t;
    const int64_t full = k / 64;
    const bool x16 = (uintptr_t)x % 16 == 0 && x_ts % 8 == 0;
    if constexpr (R > 0) {
        if (x16)
            stream_ring<T, W, NT, MT, true, R>(xr, wr, full, acc, ring);
        else
            stream_ring<T, W, NT, MT, false, R>(xr, wr, full, acc, ring);
    } else if (x16) {
        stream_chunks<T, W, NT, MT, true, depth_of<NT, MT>()>(xr, wr, full,
                                                              acc);
    } else {
        stream_chunks<T, W, NT, MT, false, depth_of<NT, MT>()>(xr, wr, full,
                                                               acc);
    }
    if (full * 64 < k && warp == (int)(full % W)) {
        const int64_t k0 = full * 64 + 16 * t;
        uint4 wv[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                wv[nt][h] = load_w(w[2 * nt + h], w_cs[2 * nt + h], n, k,
                                   c[2 * nt + h] + g, k0);
        uint32_t a[NT][4][4];
        widen_tiles<T, NT>(wv, a);
#pragma unroll
        for (int j = 0; j < MT; j++) {
            uint2 xb[4];
#pragma unroll
            for (int s = 0; s < 4; s++)
                xb[s] = load_x_checked<T>(xr[j] - 16 * t, k, k0 + 4 * s);
            tile_products<T, NT>(a, xb, acc[j]);
        }
    }
    /* accumulator layout: d0, d1 row g, tokens 2t, 2t + 1 of the token
     * tile; d2, d3 row g + 8. Each warp writes its own slice, then each
     * output sums the slices in warp order (the same order whatever the
     * timing). */
    const int tok = 8 * MT, slice = 16 * NT * tok;
    if constexpr (R > 0)
        __syncthreads(); /* the slices take the ring's memory */
    float *mine = red + warp * slice;
#pragma unroll
    for (int j = 0; j < MT; j++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float *r0 = mine + (16 * nt + g) * tok + 8 * j + 2 * t;
            float *r1 = r0 + 8 * tok;
            r0[0] = acc[j][nt][0], r0[1] = acc[j][nt][1];
            r1[0] = acc[j][nt][2], r1[1] = acc[j][nt][3];
        }
    __syncthreads();
    for (int i = threadIdx.x; i < slice; i += blockDim.x) {
        float sum = 0.0f;
        for (int wp = 0; wp < W; wp++)
            sum += red[wp * slice + i];
        red[i] = sum;
    }
    __syncthreads();
}

/* Lets kernel (a decode kernel with its ring) take smem bytes of dynamic
 * shared memory, above the default 48 KB with its static part, once per
 * device (ready: the caller's flags for this kernel); the launch reports
 * what fails here. */
template <typename K>
void allow_ring(K kernel, int smem, std::atomic<unsigned long long> &ready)
{
    int dev = 0;
    if (smem == 0)
        return;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        fbf_allow_smem(ready, reinterpret_cast<const void *>(kernel), dev,
                       (size_t)smem) != cudaSuccess)
        (void)cudaGetLastError();
}

} // namespace fb_fp8

#endif /* FB_FUSED_FP8_DECODE_CUH */
