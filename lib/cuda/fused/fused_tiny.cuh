/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tiny.cuh -- what the two tiny-width kernels share (fused_tiny_mlp.cu,
 * fused_tiny_gemm.cu): every weight in shared memory for the whole launch,
 * rows streamed in tiles of 32 (or 16) per warp, X tiles copied with
 * cp.async into a per-warp buffer, tensor cores (mma.sync m16n8k16) with
 * the permuted-k 16-byte fragments of fused_decode_stream.cuh: lane (g, t)
 * reads columns 32q + 8t .. + 7 of its rows for k-block q, registers .x/.y
 * feed the first k16 instruction and .z/.w the second, on both sides.
 */
#ifndef FB_CUDA_FUSED_TINY_CUH
#define FB_CUDA_FUSED_TINY_CUH

#include <stdint.h>
#include <atomic>
#include "fused_internal.h"
#include "fused_device.cuh"

namespace fbf {

static const int kTinyThreads = 256; /* 8 warps, one CTA per SM */
static const int kTinyWarps = kTinyThreads / 32;

/* KQ: k padded to 32 KQ; NJ: output width padded to 8 NJ. MT: 16-row
 * m-tiles per warp tile: 2 where the registers allow (each shared-memory
 * fragment then feeds two HMMAs), else 1. */
template <int KQ, int NJ> struct TinyShape {
    static const int MT = (16 * KQ + 8 * NJ) <= 128 ? 2 : 1;
    static const int ROWS = 16 * MT;
};

/* Row stride (elements) of a 16-bit matrix with kpad columns in shared
 * memory: 16-byte reads of two neighbouring rows by one quarter-warp must
 * not share banks, so the stride is 64 mod 128 bytes. */
__host__ __device__ static inline int tiny_ld(int kpad)
{
    return (kpad * 2) % 128 == 0 ? kpad + 32 : kpad;
}

/* Copy rows x cols (16-bit, a multiple of 8 columns) of a row-major
 * matrix into shared memory with row stride ld, zero-filling up to prows x
 * pcols. All threads of the CTA take part; cp.async, not yet waited for. */
template <typename T>
__device__ __forceinline__ void tiny_copy_rows(T *dst, int ld, const T *src,
                                               int64_t lds, int rows,
                                               int cols, int prows,
                                               int pcols)
{
    const int vpr = pcols / 8;
    for (int i = threadIdx.x; i < prows * vpr; i += blockDim.x) {
        const int r = i / vpr, cv = (i - r * vpr) * 8;
        const bool in = r < rows && cv < cols;
        cp_async16(dst + r * ld + cv, in ? src + r * lds + cv : src,
                   in ? 16 : 0);
    }
}

/* One warp's X tile: rows [row0, row0 + ROWS) x kpad into xs (stride ld),
 * zero where row >= m or column >= k. */
template <typename T, int ROWS>
__device__ __forceinline__ void tiny_copy_x(T *xs, int ld, const T *x,
                                            int64_t ldx, int64_t row0,
                                            int64_t m, int k, int kpad)
{
    const int lane = threadIdx.x & 31, vpr = kpad / 8;
    for (int i = lane; i < ROWS * vpr; i += 32) {
        const int r = i / vpr, cv = (i - r * vpr) * 8;
        const bool in = row0 + r < m && cv < k;
        cp_async16(xs + r * ld + cv, in ? x + (row0 + r) * ldx + cv : x,
                   in ? 16 : 0);
    }
}

/* A fragments of the warp's X tile (permuted k, see the file comment). */
template <typename T, int KQ, int MT>
__device__ __forceinline__ void tiny_load_frags(uint4 (&xa)[MT][KQ],
                                                uint4 (&xb)[MT][KQ],
                                                const T *xs, int ld)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int q = 0; q < KQ; ++q) {
            xa[mt][q] = *reinterpret_cast<const uint4 *>(
                xs + (16 * mt + g) * ld + 32 * q + 8 * t);
            xb[mt][q] = *reinterpret_cast<const uint4 *>(
                xs + (16 * mt + g + 8) * ld + 32 * q + 8 * t);
        }
}

/* ---- host side ------------------------------------------------------- */

struct TinyKernelState {
    std::atomic<unsigned long long> ready{0};
};

/* Once per (kernel, device): allow the opt-in shared memory. */
static inline cudaError_t tiny_prepare(TinyKernelState &st,
                                       const void *func,
                                       const fb_fused_env *env)
{
    return fbf_allow_smem(st.ready, func, env->device, env->smem_optin);
}

static inline bool tiny_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

static inline const char *tiny_suffix(fb_dtype d)
{
    return d == FB_DTYPE_F16 ? "f16" : "bf16";
}

/* The fields every tiny MLP kernel's arguments share (x, ldx, the three
 * weights and biases, y, ldy, m, k, h, n, act), from the problem; the
 * caller zeroes the struct first and sets its own fields after. */
template <typename T, typename Args>
static inline void tiny_mlp_operands(Args &a, const fb_mlp_problem *p)
{
    a.x = static_cast<const T *>(p->x);
    a.ldx = p->ldx;
    a.wg = static_cast<const T *>(p->wg);
    a.bg = static_cast<const T *>(p->bg);
    a.wu = static_cast<const T *>(p->wu);
    a.bu = static_cast<const T *>(p->bu);
    a.wd = static_cast<const T *>(p->wd);
    a.bd = static_cast<const T *>(p->bd);
    a.y = static_cast<T *>(p->y);
    a.ldy = p->ldy;
    a.m = p->m;
    a.k = (int)p->k;
    a.h = (int)p->h;
    a.n = (int)p->n;
    a.act = p->gate_act;
}

/* Grid: enough CTAs for every warp to have a tile, at most one per SM. */
static inline int tiny_grid(const fb_fused_env *env, int64_t ntiles)
{
    const int64_t need = (ntiles + kTinyWarps - 1) / kTinyWarps;
    return (int)(need < env->sm_count ? need : env->sm_count);
}

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_TINY_CUH */
