/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_pack16.cu -- a 16-bit GEMM operand copied into the layout the
 * engine's tensor maps take: rows x k row-major (K-major), the row stride
 * a multiple of 8 elements, 16-byte aligned. The source is either K-major
 * with a stride or base the maps cannot take (the copy re-pitches it) or
 * MN-major, k running across its rows (the copy transposes it, through a
 * shared-memory tile so that both sides move whole lines).
 */
#include <stdint.h>
#include "fused_internal.h"

namespace {

constexpr int kTile = 64;
constexpr int kThreads = 256;

/* Tiles a launch walks: at most this many blocks, each looping. */
constexpr int64_t kMaxBlocks = 1 << 16;

__device__ __forceinline__ void store8(uint16_t *d, const uint16_t (&v)[8],
                                       int n)
{
    if (n == 8) {
        uint4 u;
        u.x = v[0] | (uint32_t)v[1] << 16;
        u.y = v[2] | (uint32_t)v[3] << 16;
        u.z = v[4] | (uint32_t)v[5] << 16;
        u.w = v[6] | (uint32_t)v[7] << 16;
        *reinterpret_cast<uint4 *>(d) = u;
    } else {
        for (int q = 0; q < n; q++)
            d[q] = v[q];
    }
}

/* dst(r, c) = src[r + c * ld]: the source's columns are the packed rows'
 * k. The tile is loaded along the source's contiguous r (16-byte loads
 * where vec: src 16-byte aligned and ld a multiple of 8) into
 * tile[c][r], then each thread gathers 8 consecutive c of one r and
 * stores them as one 16-byte unit of dst's row r. */
__global__ void __launch_bounds__(kThreads)
    transpose16_kernel(const uint16_t *src, int64_t ld, int64_t rows,
                       int64_t cols, uint16_t *dst, int64_t ldd, int vec)
{
    /* rows of 66 elements: the 16-byte stores of the load phase and the
     * column reads of the store phase fall on few shared banks twice */
    __shared__ uint16_t tile[kTile][kTile + 2];
    const int t = threadIdx.x;
    const int64_t tr = (rows + kTile - 1) / kTile;
    const int64_t tiles = tr * ((cols + kTile - 1) / kTile);
    for (int64_t i = blockIdx.x; i < tiles; i += gridDim.x) {
        const int64_t r0 = i % tr * kTile, c0 = i / tr * kTile;
        for (int pass = 0; pass < 2; pass++) {
            const int c = t / 8 + 32 * pass, u = (t % 8) * 8;
            const int64_t gc = c0 + c, gr = r0 + u;
            uint16_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (gc < cols) {
                const uint16_t *s = src + gc * ld + gr;
                if (vec && gr + 8 <= rows) {
                    const uint4 w = *reinterpret_cast<const uint4 *>(s);
                    const uint32_t x[4] = {w.x, w.y, w.z, w.w};
                    for (int q = 0; q < 4; q++)
                        v[2 * q] = (uint16_t)x[q],
                        v[2 * q + 1] = (uint16_t)(x[q] >> 16);
                } else {
                    for (int q = 0; q < 8 && gr + q < rows; q++)
                        v[q] = s[q];
                }
            }
            uint32_t *row = reinterpret_cast<uint32_t *>(&tile[c][u]);
            for (int q = 0; q < 4; q++)
                row[q] = v[2 * q] | (uint32_t)v[2 * q + 1] << 16;
        }
        __syncthreads();
        for (int pass = 0; pass < 2; pass++) {
            const int r = t / 8 + 32 * pass, u = (t % 8) * 8;
            const int64_t gr = r0 + r, gc = c0 + u;
            if (gr < rows && gc < cols) {
                uint16_t v[8];
                for (int q = 0; q < 8; q++)
                    v[q] = tile[u + q][r];
                const int64_t left = cols - gc;
                store8(dst + gr * ldd + gc, v, left < 8 ? (int)left : 8);
            }
        }
        __syncthreads();
    }
}

/* dst(r, c) = src[r * ld + c], element by element on the load side (the
 * source is not aligned for more), 16-byte stores. */
__global__ void __launch_bounds__(kThreads)
    repitch16_kernel(const uint16_t *src, int64_t ld, int64_t rows,
                     int64_t cols, uint16_t *dst, int64_t ldd)
{
    const int64_t per_row = (cols + 7) / 8, units = rows * per_row;
    for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < units;
         i += (int64_t)gridDim.x * kThreads) {
        const int64_t r = i / per_row, c = i % per_row * 8;
        const int n = cols - c < 8 ? (int)(cols - c) : 8;
        uint16_t v[8];
        for (int q = 0; q < n; q++)
            v[q] = src[r * ld + c + q];
        store8(dst + r * ldd + c, v, n);
    }
}

} // namespace

int64_t fbf_pack16_ld(int64_t k)
{
    return (k + 7) / 8 * 8;
}

size_t fbf_pack16_bytes(int64_t rows, int64_t k)
{
    const size_t b = (size_t)rows * (size_t)fbf_pack16_ld(k) * 2;
    return (b + 255) / 256 * 256;
}

fb_status fbf_pack16(cudaStream_t stream, const void *src, int64_t ld,
                     bool mn_major, int64_t rows, int64_t k, void *dst)
{
    const uint16_t *s = static_cast<const uint16_t *>(src);
    uint16_t *d = static_cast<uint16_t *>(dst);
    const int64_t ldd = fbf_pack16_ld(k);
    if (mn_major) {
        const int64_t tiles = ((rows + kTile - 1) / kTile) *
                              ((k + kTile - 1) / kTile);
        const int vec = (uintptr_t)src % 16 == 0 && ld % 8 == 0;
        transpose16_kernel<<<(unsigned)(tiles < kMaxBlocks ? tiles
                                                           : kMaxBlocks),
                             kThreads, 0, stream>>>(s, ld, rows, k, d, ldd,
                                                    vec);
    } else {
        const int64_t units = rows * ((k + 7) / 8);
        const int64_t blocks = (units + kThreads - 1) / kThreads;
        repitch16_kernel<<<(unsigned)(blocks < kMaxBlocks ? blocks
                                                          : kMaxBlocks),
                           kThreads, 0, stream>>>(s, ld, rows, k, d, ldd);
    }
    /* peeked, not cleared: the module's report names the error */
    return cudaPeekAtLastError() == cudaSuccess ? FB_STATUS_SUCCESS
                                                : FB_STATUS_EXECUTION_FAILED;
}
