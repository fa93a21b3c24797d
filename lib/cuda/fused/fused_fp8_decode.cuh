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

/* Chunks in flight per lane: each lane keeps this many 16-byte loads per
 * n-tile outstanding, so a block has kWarps * 32 * kDepth * NT * 16 bytes
 * of weights on the way (the stream's rate is bytes in flight over the
 * memory latency). */
constexpr int kDepth = 2;

/* Floats of shared memory decode_sums needs for NT n-tiles, MT m-tiles. */
template <int NT, int MT> __host__ __device__ constexpr int red_floats()
{
    return kWarps * 16 * MT * 8 * NT;
}

/* Blocks per SM the decode kernels ask the register allocator for: two
 * at four m-tiles (else one block of 8 warps would hold the SM), the
 * compiler's choice otherwise. */
__host__ __device__ constexpr int decode_min_blocks(int mt)
{
    return mt == 4 ? 2 : 1;
}

/* M-tiles (of 16 tokens) for m tokens, m <= kMaxTokens. */
constexpr int kMaxTokens = 64;
__host__ __device__ inline int decode_mtiles(int64_t m)
{
    return m <= 16 ? 1 : m <= 32 ? 2 : 4;
}

/* The block's 8 * NT channels from c0: every warp's partial sums of its
 * chunks, summed in warp order into red[0 .. 16 MT * 8 NT) (16 MT tokens
 * x 8 NT channels); red holds red_floats<NT, MT>(). */
template <typename T, int NT, int MT>
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
    const int64_t chunks = (k + 63) / 64;
    /* buf[d]: chunk ch + d * kWarps; its products are taken and its
     * registers refilled with the chunk kDepth steps further on, so
     * kDepth - 1 .. kDepth chunks per lane are always in flight */
    uint4 buf[kDepth][NT];
#pragma unroll
    for (int d = 0; d < kDepth; d++) {
        const int64_t cd = warp + (int64_t)d * kWarps;
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            buf[d][nt] = cd < chunks ? load_w(w[nt], w_cs[nt], n, k,
                                              c[nt] + g, cd * 64 + 16 * t)
                                     : make_uint4(0u, 0u, 0u, 0u);
    }
    for (int64_t ch = warp; ch < chunks; ch += (int64_t)kDepth * kWarps) {
#pragma unroll
        for (int d = 0; d < kDepth; d++) {
            const int64_t cd = ch + (int64_t)d * kWarps;
            if (cd < chunks)
                chunk_mma<T, NT, MT>(x, x_ts, m, k, g, cd * 64 + 16 * t, buf[d],
                                 acc);
            const int64_t nx = cd + (int64_t)kDepth * kWarps;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
                if (nx < chunks)
                    buf[d][nt] = load_w(w[nt], w_cs[nt], n, k, c[nt] + g,
                                        nx * 64 + 16 * t);
        }
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
