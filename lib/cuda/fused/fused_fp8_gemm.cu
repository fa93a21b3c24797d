/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_gemm.cu -- gemm_e4m3_bias_act on the GPU (fused_fp8.h).
 *
 * Decode (at most 64 tokens, weight rows contiguous and 16-byte aligned,
 * x rows 8-byte aligned, 16-bit activations): the weights are the A side
 * of m16n8k16 (16 rows, so no half of a tile is wasted on absent tokens)
 * and the tokens the B side, 8 a tile. A block owns 16 channels and its
 * warps split k in chunks of 64. In a chunk, lane (g, t) of a warp
 * (g = lane / 4, t = lane % 4) loads 16 bytes of rows g and g + 8,
 * k = 16t .. 16t + 15, and feeds them to four steps: step s takes bytes
 * 4s .. 4s + 3 of each row as its A fragment (k positions 2t, 2t + 1,
 * 2t + 8, 2t + 9 of the step stand for k = 16t + 4s + 0..3; the sum does
 * not care which k a position stands for, as long as B's fragment says
 * the same), and B's fragment is token g at those same k, loaded as one
 * 8-byte pair. The warps' partial sums meet in shared memory, then each
 * output gets the epilogue. Each weight byte is read once, with a
 * streaming hint. Up to 8 tokens the chunks reach each warp's ring of 4
 * stages in shared memory by cp.async: 3 chunks a lane stay on the way
 * (a register slot is asked for again only after its products), which
 * streams faster while X is small enough to stay in L1 beside the ring;
 * at 9..16 tokens a ring of 3 where X is too large for L1 anyway
 * (ring_stages). More than 8 tokens: 2, 4 or 8 token tiles share each
 * widened A fragment.
 *
 * From 17 to 192 tokens, by the shape rule (fb_fp8_mid_rows): the mid
 * kernel (fused_fp8_mid.cu), the same widening with the tokens staged in
 * shared memory once per 256 channels.
 *
 * Everything else: a 64 x 64 tile per block, fp32 products of values
 * widened on their way into shared memory, any strides.
 */
#include <stdio.h>
#include <type_traits>
#include "fused_fp8.h"
#include "fused_fp8_decode.cuh"
#include "fused_fp8_device.cuh"
#include "fused_internal.h"

namespace {

using namespace fb_fp8;

/* A gemm block: one tile of 16 channels, its warps splitting k: 16 up to
 * 16 tokens (a 4096-channel projection is 256 blocks: 32 warps a SM, two
 * blocks of 64 registers a thread), 8 beyond (two blocks of 128
 * registers a SM at 17..32 tokens, whose reductions overlap each other's
 * streams; at 64 the partial sums' slices fit 48 KB of shared memory). */
__host__ __device__ constexpr int gemm_warps(int mt)
{
    return mt <= 2 ? 16 : 8;
}

/* Blocks per SM the register allocator is asked for (see gemm_warps). */
__host__ __device__ constexpr int gemm_min_blocks(int mt)
{
    return mt <= 4 ? 2 : 1;
}

template <typename T, int MT, int R>
__global__ void __launch_bounds__(gemm_warps(MT) * 32, gemm_min_blocks(MT))
    e4m3_gemm_decode(fb_e4m3_gemm_problem p)
{
    __shared__ float own[static_red_floats<gemm_warps(MT), 1, MT, R>()];
    extern __shared__ uint4 ring[];
    float *red = sums_home<R>(own, ring);
    const int64_t c0 = (int64_t)blockIdx.x * 16;
    const uint8_t *const w[2] = {p.w, p.w};
    const int64_t w_cs[2] = {p.w_cs, p.w_cs}, c[2] = {c0, c0 + 8};
    decode_sums<T, gemm_warps(MT), 1, MT, R>((const T *)p.x, p.x_ts, p.m, p.k,
                                         w, w_cs, c, p.n, red, ring);
    /* tokens slow, channels fast: neighbouring threads write neighbouring
     * outputs of a row */
    for (int q = threadIdx.x; q < 16 * 8 * MT; q += blockDim.x) {
        const int i = q / 16, r = q % 16;
        const int64_t j = c0 + r;
        if (i < p.m && j < p.n)
            fb_fp8_finish<T, T>(p, i, j, red[r * 8 * MT + i], false);
    }
}

constexpr int kTile = 64, kStep = 16;

/* TC: the output's type (T, or fp32 for the MLP's G and U). */
template <typename T, typename TC>
__global__ void __launch_bounds__(256) e4m3_gemm_tiled(fb_e4m3_gemm_problem p)
{
    __shared__ float xs[kStep][kTile + 1];
    __shared__ float ws[kStep][kTile + 1];
    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const bool nothing = p.k == 0 || p.alpha == 0.0f;
    const int64_t mt = (p.m + kTile - 1) / kTile, nt = (p.n + kTile - 1) / kTile;
    const T *x = (const T *)p.x;
    for (int64_t tile = blockIdx.x; tile < mt * nt; tile += gridDim.x) {
        const int64_t i0 = tile / nt * kTile, j0 = tile % nt * kTile;
        float acc[4][4] = {};
        for (int64_t k0 = 0; !nothing && k0 < p.k; k0 += kStep) {
            for (int e = tid; e < kStep * kTile; e += 256) {
                /* consecutive threads along k when k is the contiguous
                 * index, else along the rows */
                const int kk = p.x_ks == 1 ? e % kStep : e / kTile;
                const int r = p.x_ks == 1 ? e / kStep : e % kTile;
                const int64_t i = i0 + r, q = k0 + kk;
                xs[kk][r] = i < p.m && q < p.k
                                ? fb_load_f32(x[i * p.x_ts + q * p.x_ks])
                                : 0.0f;
                const int kw = p.w_ks == 1 ? e % kStep : e / kTile;
                const int cw = p.w_ks == 1 ? e / kStep : e % kTile;
                const int64_t j = j0 + cw, qw = k0 + kw;
                ws[kw][cw] = j < p.n && qw < p.k
                                 ? fb_fp8_value(p.w[j * p.w_cs + qw * p.w_ks])
                                 : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < kStep; kk++) {
                float a[4], b[4];
#pragma unroll
                for (int r = 0; r < 4; r++)
                    a[r] = xs[kk][ty * 4 + r], b[r] = ws[kk][tx * 4 + r];
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int q = 0; q < 4; q++)
                        acc[r][q] = fmaf(a[r], b[q], acc[r][q]);
            }
            __syncthreads();
        }
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++) {
                const int64_t i = i0 + ty * 4 + r, j = j0 + tx * 4 + q;
                if (i < p.m && j < p.n)
                    fb_fp8_finish<T, TC>(p, i, j, acc[r][q], nothing);
            }
    }
}

} // namespace

namespace {

bool decode_applies(const fb_e4m3_gemm_problem *p)
{
    return (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_BF16) &&
           p->m <= kMaxTokens && p->k > 0 && p->alpha != 0.0f && p->w_ks == 1 &&
           p->w_cs % 16 == 0 && (uintptr_t)p->w % 16 == 0 && p->x_ks == 1 &&
           p->x_ts % 4 == 0 && (uintptr_t)p->x % 8 == 0 &&
           (p->n + 15) / 16 <= 0x7fffffff; /* one block per 16 channels */
}

enum kernel_choice { kTiled, kDecode, kMid };

/* The shape rule: the mid kernel where fb_fp8_mid_rows says so, the
 * decode kernel below and beside it, where each can run the call. */
kernel_choice choose(const fb_e4m3_gemm_problem *p)
{
    const int knob = FBF_KNOB(e4m3_kernel);
    const bool mid_rows =
        knob == 2 || (knob == 0 && fb_fp8_mid_rows(p->m, p->k, p->n));
    if (mid_rows && fb_fp8_mid_gemm_applies(p))
        return kMid;
    return decode_applies(p) ? kDecode : kTiled;
}

} // namespace

bool fb_fp8_direct_applies(const fb_e4m3_gemm_problem *p)
{
    return choose(p) != kTiled;
}

namespace {

template <typename T, int MT, int R>
void launch_decode(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                   bool x_pending)
{
    fb_e4m3_gemm_problem q = *p;
    void *args[] = {&q};
    const int smem = dynamic_bytes<gemm_warps(MT), 1, MT, R>();
    static std::atomic<unsigned long long> ready{0};
    allow_ring(&e4m3_gemm_decode<T, MT, R>, smem, ready);
    (void)fbf_launch_grid(
        reinterpret_cast<const void *>(&e4m3_gemm_decode<T, MT, R>),
        (int)((p->n + 15) / 16), gemm_warps(MT) * 32, args, (size_t)smem,
        stream, x_pending);
}

template <typename T, typename TC>
void launch(cudaStream_t stream, const fb_e4m3_gemm_problem *p, bool decode,
            bool x_pending = false)
{
    /* the decode kernel has 16-bit forms only (decode_applies) */
    if constexpr (!std::is_same<T, float>::value && std::is_same<T, TC>::value) {
        if (decode) {
            decode_forms(p->m, p->k, [&](auto mt, auto r) {
                launch_decode<T, decltype(mt)::value, decltype(r)::value>(
                    stream, p, x_pending);
            });
            return;
        }
    }
    const int64_t tiles = ((p->m + kTile - 1) / kTile) *
                          ((p->n + kTile - 1) / kTile);
    const unsigned grid = tiles < (1 << 20) ? (unsigned)tiles : (1u << 20);
    e4m3_gemm_tiled<T, TC><<<grid, 256, 0, stream>>>(*p);
}

} // namespace

static fb_status gemm_launch(cudaStream_t stream,
                             const fb_e4m3_gemm_problem *p, char *path,
                             size_t len, bool x_pending)
{
    const kernel_choice k = choose(p);
    if (k == kMid) {
        /* a launch error is the caller's to read (fb_result_launch) */
        (void)fb_fp8_mid_gemm(stream, p, FBF_KNOB(e4m3_splits));
        snprintf(path, len, "cuda-fused/e4m3-mid-mma");
        return FB_STATUS_SUCCESS;
    }
    const bool decode = k == kDecode;
    switch (p->dtype) {
    case FB_DTYPE_F16: launch<__half, __half>(stream, p, decode, x_pending); break;
    case FB_DTYPE_BF16:
        launch<__nv_bfloat16, __nv_bfloat16>(stream, p, decode, x_pending);
        break;
    default: launch<float, float>(stream, p, decode); break;
    }
    if (decode && p->m > 16)
        snprintf(path, len, "cuda-fused/e4m3-decode-mma-%d",
                 decode_rows(decode_tiling_of(p->m)));
    else
        snprintf(path, len, "cuda-fused/e4m3-%s",
                 decode ? "decode-mma" : "tiled-fp32");
    return FB_STATUS_SUCCESS;
}

fb_status fb_fp8_gemm(cudaStream_t stream, const fb_e4m3_gemm_problem *p,
                      char *path, size_t len)
{
    return gemm_launch(stream, p, path, len, false);
}

fb_status fb_fp8_gemm_x_pending(cudaStream_t stream,
                                const fb_e4m3_gemm_problem *p, char *path,
                                size_t len)
{
    return gemm_launch(stream, p, path, len, true);
}

void fb_fp8_gemm_f32_out(cudaStream_t stream, const fb_e4m3_gemm_problem *p)
{
    switch (p->dtype) {
    case FB_DTYPE_F16: launch<__half, float>(stream, p, false); break;
    case FB_DTYPE_BF16: launch<__nv_bfloat16, float>(stream, p, false); break;
    default: launch<float, float>(stream, p, false); break;
    }
}
