/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_decode.cuh -- the e4m3 decode kernels' main loop (the scheme
 * is described at the top of fused_fp8_gemm.cu): a block's channels,
 * every warp a share of k, the partial sums met in shared memory. Shared
 * by the gemm and the MLP's gate-and-up kernel.
 */
#ifndef FB_FUSED_FP8_DECODE_CUH
#define FB_FUSED_FP8_DECODE_CUH

#include "fused_fp8_device.cuh"

namespace fb_fp8 {

constexpr int kWarps = 8;

/* Tokens g and g + 8 at k .. k + 3 as two A registers each (row lo: a0,
 * a2; row hi: a1, a3), zeros outside. */
template <typename T>
__device__ __forceinline__ void load_a(const T *x, int64_t x_ts, int64_t m,
                                       int64_t k, int row, int64_t kk,
                                       uint32_t &lo, uint32_t &hi)
{
    lo = hi = 0u;
    if (row >= m)
        return;
    const T *src = x + row * x_ts + kk;
    if (kk + 4 <= k) {
        const uint2 v = *(const uint2 *)src;
        lo = v.x, hi = v.y;
        return;
    }
    uint16_t e[4] = {0, 0, 0, 0};
    for (int q = 0; q < 4; q++)
        if (kk + q < k)
            e[q] = *(const uint16_t *)(src + q);
    lo = (uint32_t)e[0] | ((uint32_t)e[1] << 16);
    hi = (uint32_t)e[2] | ((uint32_t)e[3] << 16);
}

/* 16 weight bytes of channel c from k0 (zeros past n or k). */
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

/* The products of one chunk for this lane: acc[mt][nt] += x_mt W_nt,
 * x_mt the tokens 16 mt .. 16 mt + 15 (MT m-tiles share each widened B
 * fragment). */
template <typename T, int NT, int MT>
__device__ __forceinline__ void chunk_mma(const T *x, int64_t x_ts,
                                          int64_t m, int64_t k, int g,
                                          int64_t kb, const uint4 (&wv)[NT],
                                          float (&acc)[MT][NT][4])
{
#pragma unroll
    for (int s = 0; s < 4; s++) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            load_a(x, x_ts, m, k, 16 * mt + g, kb + 4 * s, a[mt][0],
                   a[mt][2]);
            load_a(x, x_ts, m, k, 16 * mt + g + 8, kb + 4 * s, a[mt][1],
                   a[mt][3]);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t word = s == 0   ? wv[nt].x
                                  : s == 1 ? wv[nt].y
                                  : s == 2 ? wv[nt].z
                                           : wv[nt].w;
            const uint32_t b0 = fb_fp8_pair<T>(word),
                           b1 = fb_fp8_pair<T>(word >> 16);
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                fb_fp8_mma<T>(acc[mt][nt], a[mt][0], a[mt][1], a[mt][2],
                              a[mt][3], b0, b1);
        }
    }
}

/* The products of one whole chunk (64 columns, no bounds to test): the
 * tokens' values come from this lane's row pointers xr (rows past m read
 * row m - 1: their sums are dropped), 16 columns from kb each, in 16-byte
 * loads when X16 (rows 16-byte aligned), else 8-byte ones; with HI false
 * the m-tile's upper 8 rows hold no token and are zeros. */
template <typename T, int NT, int MT, bool HI, bool X16>
__device__ __forceinline__ void chunk_mma_full(const T *const (&xr)[MT][2],
                                               int64_t kb,
                                               const uint4 (&wv)[NT],
                                               float (&acc)[MT][NT][4])
{
    /* the widened B fragments first, then one m-tile's tokens at a time
     * (fewer registers live than every m-tile's at once) */
    uint32_t bf[NT][4][2];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int s = 0; s < 4; s++) {
            const uint32_t word = s == 0   ? wv[nt].x
                                  : s == 1 ? wv[nt].y
                                  : s == 2 ? wv[nt].z
                                           : wv[nt].w;
            bf[nt][s][0] = fb_fp8_pair<T>(word);
            bf[nt][s][1] = fb_fp8_pair<T>(word >> 16);
        }
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        uint2 xa[2][4];
#pragma unroll
        for (int h = 0; h < (HI ? 2 : 1); h++)
            if (X16) {
#pragma unroll
                for (int s = 0; s < 4; s += 2) {
                    const uint4 v = *(const uint4 *)(xr[mt][h] + kb + 4 * s);
                    xa[h][s] = make_uint2(v.x, v.y);
                    xa[h][s + 1] = make_uint2(v.z, v.w);
                }
            } else {
#pragma unroll
                for (int s = 0; s < 4; s++)
                    xa[h][s] = *(const uint2 *)(xr[mt][h] + kb + 4 * s);
            }
#pragma unroll
        for (int s = 0; s < 4; s++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
                fb_fp8_mma<T>(acc[mt][nt], xa[0][s].x, HI ? xa[1][s].x : 0u,
                              xa[0][s].y, HI ? xa[1][s].y : 0u, bf[nt][s][0],
                              bf[nt][s][1]);
    }
}

/* The whole chunks of this warp (chunk warp, warp + kWarps, ...), D chunks
 * in flight per lane: buf[d] holds chunk ch + d * kWarps; its products
 * are taken and its registers refilled with the chunk D steps further on,
 * so D - 1 .. D chunks per lane are always on the way. */
template <typename T, int NT, int MT, bool HI, bool X16, int D>
__device__ __forceinline__ void stream_chunks(const T *const (&xr)[MT][2],
                                              const uint8_t *const (&wr)[NT],
                                              int64_t full,
                                              float (&acc)[MT][NT][4])
{
    const int warp = threadIdx.x / 32;
    uint4 buf[D][NT];
#pragma unroll
    for (int d = 0; d < D; d++) {
        const int64_t cd = warp + (int64_t)d * kWarps;
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            if (cd < full)
                buf[d][nt] = __ldcs((const uint4 *)(wr[nt] + cd * 64));
    }
    for (int64_t ch = warp; ch < full; ch += (int64_t)D * kWarps) {
#pragma unroll
        for (int d = 0; d < D; d++) {
            const int64_t cd = ch + (int64_t)d * kWarps;
            if (cd < full)
                chunk_mma_full<T, NT, MT, HI, X16>(xr, cd * 64, buf[d], acc);
            const int64_t nx = cd + (int64_t)D * kWarps;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
                if (nx < full)
                    buf[d][nt] = __ldcs((const uint4 *)(wr[nt] + nx * 64));
        }
    }
}

/* Chunks in flight per lane for NT n-tiles, MT m-tiles: about 64 bytes
 * of weights a lane where the registers allow it (the stream's rate is
 * bytes in flight over the memory latency, and a warp's slot stays empty
 * while it computes on the chunk that filled it). */
template <int NT, int MT, bool HI> __host__ __device__ constexpr int depth_of()
{
    return NT == 1 ? 4 : MT == 1 && !HI ? 3 : 2;
}

/* Floats of shared memory decode_sums needs for NT n-tiles, MT m-tiles. */
template <int NT, int MT> __host__ __device__ constexpr int red_floats()
{
    return kWarps * 16 * MT * 8 * NT;
}

/* Blocks per SM the decode kernels ask the register allocator for: four
 * at one m-tile (at most 64 registers a thread: the stream needs the
 * warps more than the registers), two (128) for more accumulators. */
__host__ __device__ constexpr int decode_min_blocks(int mt)
{
    return mt == 1 ? 4 : 2;
}

/* The token tiling for m tokens, m <= kMaxTokens: 8 or fewer (one m-tile,
 * its upper half empty), 16, 32 or 64 (one, two or four full m-tiles). */
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

/* The block's 8 * NT channels from c: every warp's partial sums of its
 * chunks, summed in warp order into red[0 .. 16 MT * 8 NT) (16 MT tokens
 * x 8 NT channels); red holds red_floats<NT, MT>(). Whole chunks run
 * without bounds tests (rows past m and channels past n read the last
 * row or channel; their sums are dropped by the caller); the last, partial
 * chunk runs with them. */
template <typename T, int NT, int MT, bool HI>
__device__ __forceinline__ void decode_sums(const T *x, int64_t x_ts,
                                            int64_t m, int64_t k,
                                            const uint8_t *const *w,
                                            const int64_t *w_cs,
                                            const int64_t *c, int64_t n,
                                            float *red)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    float acc[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] =
                acc[mt][nt][3] = 0.0f;
    const T *xr[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            xr[mt][h] = x + min((int64_t)(16 * mt + 8 * h + g), m - 1) * x_ts +
                        16 * t;
    const uint8_t *wr[NT];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
        wr[nt] = w[nt] + min(c[nt] + g, n - 1) * w_cs[nt] + 16 * t;
    const int64_t full = k / 64;
    if ((uintptr_t)x % 16 == 0 && x_ts % 8 == 0)
        stream_chunks<T, NT, MT, HI, true, depth_of<NT, MT, HI>()>(xr, wr, full, acc);
    else
        stream_chunks<T, NT, MT, HI, false, depth_of<NT, MT, HI>()>(xr, wr, full, acc);
    if (full * 64 < k && warp == (int)(full % kWarps)) {
        uint4 wv[NT];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            wv[nt] = load_w(w[nt], w_cs[nt], n, k, c[nt] + g,
                            full * 64 + 16 * t);
        chunk_mma<T, NT, MT>(x, x_ts, m, k, g, full * 64 + 16 * t, wv, acc);
    }
    /* accumulator layout: d0, d1 token g, columns 2t, 2t + 1; d2, d3
     * token g + 8. Each warp writes its own slice, then each output sums
     * the slices in warp order (the same order whatever the timing). */
    const int cols = 8 * NT, slice = 16 * MT * cols;
    float *mine = red + warp * slice;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float *r0 = mine + (16 * mt + g) * cols + 8 * nt + 2 * t;
            float *r1 = r0 + 8 * cols;
            r0[0] = acc[mt][nt][0], r0[1] = acc[mt][nt][1];
            r1[0] = acc[mt][nt][2], r1[1] = acc[mt][nt][3];
        }
    __syncthreads();
    for (int i = threadIdx.x; i < slice; i += blockDim.x) {
        float sum = 0.0f;
        for (int wp = 0; wp < kWarps; wp++)
            sum += red[wp * slice + i];
        red[i] = sum;
    }
    __syncthreads();
}

} // namespace fb_fp8

#endif /* FB_FUSED_FP8_DECODE_CUH */
