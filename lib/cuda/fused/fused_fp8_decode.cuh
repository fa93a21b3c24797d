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

/* The products of one chunk for this lane: acc[nt] += x W_nt. */
template <typename T, int NT>
__device__ __forceinline__ void chunk_mma(const T *x, int64_t x_ts,
                                          int64_t m, int64_t k, int g,
                                          int64_t kb, const uint4 (&wv)[NT],
                                          float (&acc)[NT][4])
{
#pragma unroll
    for (int s = 0; s < 4; s++) {
        uint32_t a0, a2, a1, a3;
        load_a(x, x_ts, m, k, g, kb + 4 * s, a0, a2);
        load_a(x, x_ts, m, k, g + 8, kb + 4 * s, a1, a3);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t word = s == 0   ? wv[nt].x
                                  : s == 1 ? wv[nt].y
                                  : s == 2 ? wv[nt].z
                                           : wv[nt].w;
            fb_fp8_mma<T>(acc[nt], a0, a1, a2, a3, fb_fp8_pair<T>(word),
                          fb_fp8_pair<T>(word >> 16));
        }
    }
}

/* Chunks in flight per lane: each lane keeps this many 16-byte loads per
 * n-tile outstanding, so a block has kWarps * 32 * kDepth * NT * 16 bytes
 * of weights on the way (the stream's rate is bytes in flight over the
 * memory latency). */
constexpr int kDepth = 4;

/* Floats of shared memory decode_sums needs for NT n-tiles. */
template <int NT> __host__ __device__ constexpr int red_floats() { return kWarps * 16 * 8 * NT; }

/* The block's 8 * NT channels from c0: every warp's partial sums of its
 * chunks, summed in warp order into red[0 .. 16 * 8 NT) (16 tokens x 8 NT
 * channels); red holds red_floats<NT>(). */
template <typename T, int NT>
__device__ __forceinline__ void decode_sums(const T *x, int64_t x_ts,
                                            int64_t m, int64_t k,
                                            const uint8_t *const *w,
                                            const int64_t *w_cs,
                                            const int64_t *c, int64_t n,
                                            float *red)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
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
                chunk_mma<T, NT>(x, x_ts, m, k, g, cd * 64 + 16 * t, buf[d],
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
    const int cols = 8 * NT;
    float *mine = red + warp * 16 * cols;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        mine[g * cols + 8 * nt + 2 * t] = acc[nt][0];
        mine[g * cols + 8 * nt + 2 * t + 1] = acc[nt][1];
        mine[(g + 8) * cols + 8 * nt + 2 * t] = acc[nt][2];
        mine[(g + 8) * cols + 8 * nt + 2 * t + 1] = acc[nt][3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 16 * cols; i += blockDim.x) {
        float sum = 0.0f;
        for (int wp = 0; wp < kWarps; wp++)
            sum += red[wp * 16 * cols + i];
        red[i] = sum;
    }
    __syncthreads();
}

} // namespace fb_fp8

#endif /* FB_FUSED_FP8_DECODE_CUH */
