/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_mlp.cu -- mlp_geglu_forward_e4m3 on the GPU (fused_fp8.h).
 *
 * Up to 64 rows (decode), when the rows are aligned for the decode kernel:
 * one launch computes gate and up together -- a block owns 8 hidden
 * channels, its 16-row tile those rows of Wg over the same rows of Wu --
 * and writes H = act_g(G sg + bg) .* (U su + bu) rounded to the input type
 * into the scratch; the down projection is then gemm_e4m3's kernel on H.
 * From 128 to 512 rows (Hopper, aligned): gate and up as one dual GEMM
 * of the e4m3 wgmma kernel, H formed in registers, and the down
 * projection on the same kernel. Else from 17 to 192 rows by the shape
 * rule (fb_fp8_mid_rows): the decode kernel's pairing on the mid kernel
 * (fused_fp8_mid.cu). More rows: the engine's dual GEMM on widened
 * weights, or G and U in fp32 (cuBLASLt on widened weights, else the
 * tiled kernel), H from them, then the down projection. Either way H is
 * stored in the input type, as the CPU backend (and a framework) stores
 * it.
 */
#include <stdio.h>
#include "fused_fp8.h"
#include "fused_fp8_decode.cuh"
#include "fused_fp8_device.cuh"
#include "fused_internal.h"
#include "module/result.h"

namespace {

using namespace fb_fp8;

/* A gate-and-up block: one tile, rows 0..7 of Wg and the same rows of
 * Wu, kWarps warps splitting k. */
constexpr int kWarps = 8;

/* Blocks per SM the register allocator is asked for: four (64 registers
 * a thread) up to 16 tokens, two with more accumulators. */
__host__ __device__ constexpr int gate_up_min_blocks(int mt)
{
    return mt <= 2 ? 4 : 2;
}

template <typename T, int MT, int R>
__global__ void __launch_bounds__(kWarps * 32, gate_up_min_blocks(MT))
    e4m3_gate_up_decode(fb_e4m3_mlp_problem p, T *hbuf)
{
    __shared__ float own[static_red_floats<kWarps, 1, MT, R>()];
    extern __shared__ uint4 ring[];
    float *red = sums_home<R>(own, ring);
    /* the down projection, launched programmatically, may take the SMs
     * this grid leaves and stream its weights (it reads H only after this
     * grid has ended) */
    fbf::allow_dependents();
    const int64_t c0 = (int64_t)blockIdx.x * 8;
    const uint8_t *const w[2] = {p.wg, p.wu};
    const int64_t w_cs[2] = {p.k, p.k}, c[2] = {c0, c0};
    decode_sums<T, kWarps, 1, MT, R>((const T *)p.x, p.ldx, p.m, p.k, w,
                                     w_cs, c, p.h, red, ring);
    for (int q = threadIdx.x; q < 8 * 8 * MT; q += blockDim.x) {
        const int i = q / 8, r = q % 8;
        const int64_t j = c0 + r;
        if (i >= p.m || j >= p.h)
            continue;
        float g = red[r * 8 * MT + i] * p.sg[j];
        float u = red[(8 + r) * 8 * MT + i] * p.su[j];
        if (p.bg != NULL)
            g += fb_load_f32(((const T *)p.bg)[j]);
        if (p.bu != NULL)
            u += fb_load_f32(((const T *)p.bu)[j]);
        hbuf[i * p.h + j] = fb_store_as<T>(fb_act_dynamic(p.gate_act, g) * u);
    }
}

/* H = act(G) .* U (G and U fp32 with their biases), rounded to T. */
template <typename T>
__global__ void e4m3_gate(const float *g, const float *u, int64_t count,
                          fb_activation act, T *hbuf)
{
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         q < count; q += (int64_t)gridDim.x * blockDim.x)
        hbuf[q] = fb_store_as<T>(fb_act_dynamic(act, g[q]) * u[q]);
}

bool gate_up_decode_applies(const fb_e4m3_mlp_problem *p)
{
    return (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_BF16) &&
           p->m <= kMaxTokens && p->k > 0 && p->h > 0 && p->k % 16 == 0 &&
           (uintptr_t)p->wg % 16 == 0 && (uintptr_t)p->wu % 16 == 0 &&
           p->ldx % 4 == 0 && (uintptr_t)p->x % 8 == 0;
}

/* Gate and up in one register kernel: the mid kernel by the gemm's rule
 * for a product of 2h outputs (fused_fp8.h), the decode kernel below. */
enum gate_up_choice { kGateUpNone, kGateUpDecode, kGateUpMid };
gate_up_choice gate_up_choose(const fb_e4m3_mlp_problem *p)
{
    const int knob = FBF_KNOB(e4m3_kernel);
    const bool mid_rows =
        knob == 2 || (knob == 0 && fb_fp8_mid_rows(p->m, p->k, 2 * p->h));
    if (mid_rows && fb_fp8_mid_gate_up_applies(p))
        return kGateUpMid;
    return gate_up_decode_applies(p) ? kGateUpDecode : kGateUpNone;
}

/* A projection x (rows, ld) times W^T with scales and bias, as a gemm. */
fb_e4m3_gemm_problem projection(fb_dtype dt, int64_t m, int64_t n, int64_t k,
                                const void *x, int64_t ldx, const uint8_t *w,
                                const float *s, void *out, int64_t ldo,
                                const void *bias)
{
    fb_e4m3_gemm_problem q;
    q.dtype = dt;
    q.m = m, q.n = n, q.k = k;
    q.alpha = 1.0f, q.beta = 0.0f;
    q.x = x, q.x_ts = ldx, q.x_ks = 1;
    q.w = w, q.w_cs = k, q.w_ks = 1;
    q.scale = s;
    q.c = out, q.c_ts = ldo, q.c_cs = 1;
    q.bias = bias;
    q.act = FB_ACT_NONE;
    return q;
}

size_t elem_size(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 4 : 2;
}

template <typename T>
void gate(cudaStream_t stream, const float *g, const float *u, int64_t count,
          fb_activation act, void *hbuf)
{
    const int64_t blocks = (count + 255) / 256;
    const unsigned grid = blocks < 65536 ? (unsigned)(blocks > 0 ? blocks : 1)
                                         : 65536u;
    e4m3_gate<T><<<grid, 256, 0, stream>>>(g, u, count, act, (T *)hbuf);
}

template <typename T, int MT, int R>
void gate_up_launch(cudaStream_t stream, const fb_e4m3_mlp_problem *p,
                    void *hbuf, unsigned blocks)
{
    const int smem = dynamic_bytes<kWarps, 1, MT, R>();
    static std::atomic<unsigned long long> ready{0};
    allow_ring(&e4m3_gate_up_decode<T, MT, R>, smem, ready);
    e4m3_gate_up_decode<T, MT, R><<<blocks, kWarps * 32, smem, stream>>>(
        *p, (T *)hbuf);
}

template <typename T>
void gate_up_decode(cudaStream_t stream, const fb_e4m3_mlp_problem *p,
                    void *hbuf)
{
    const unsigned blocks = (unsigned)((p->h + 7) / 8);
    decode_forms(p->m, p->k, [&](auto mt, auto r) {
        gate_up_launch<T, decltype(mt)::value, decltype(r)::value>(
            stream, p, hbuf, blocks);
    });
}

} // namespace

size_t fb_fp8_mlp_scratch_bytes(fb_cuda_ctx *ctx,
                                const fb_e4m3_mlp_problem *p)
{
    const size_t mh = (size_t)p->m * (size_t)p->h;
    const size_t hbytes = (mh * elem_size(p->dtype) + 255) / 256 * 256;
    return gate_up_choose(p) != kGateUpNone ||
                   fb_fp8_gate_up_wgmma_applies(ctx, p) ||
                   fb_fp8_gate_up_prefill_applies(ctx, p)
               ? hbytes
               : hbytes + 2 * mh * 4;
}

fb_status fb_fp8_mlp(fb_cuda_ctx *ctx, cudaStream_t stream,
                     const fb_e4m3_mlp_problem *p, void *scratch,
                     size_t scratch_bytes, char *path, size_t len,
                     fb_cuda_result *r)
{
    if (scratch_bytes < fb_fp8_mlp_scratch_bytes(ctx, p))
        return FB_STATUS_INTERNAL;
    const size_t mh = (size_t)p->m * (size_t)p->h;
    void *hbuf = scratch;
    const gate_up_choice reg = gate_up_choose(p);
    const bool fused = reg != kGateUpNone;
    bool prefill = false;
    fb_status engine = FB_STATUS_NOT_SUPPORTED;
    fb_status wgmma = FB_STATUS_NOT_SUPPORTED;
    if (p->h > 0 && (wgmma = fb_fp8_gate_up_wgmma(ctx, p, hbuf)) !=
                        FB_STATUS_NOT_SUPPORTED) {
        if (wgmma != FB_STATUS_SUCCESS)
            return wgmma;
    } else if (p->h > 0 && reg == kGateUpMid) {
        /* a launch error is read by the caller (fb_result_launch) */
        (void)fb_fp8_mid_gate_up(stream, p, hbuf, FBF_KNOB(e4m3_splits));
    } else if (p->h > 0 && fused) {
        if (p->dtype == FB_DTYPE_F16)
            gate_up_decode<__half>(stream, p, hbuf);
        else
            gate_up_decode<__nv_bfloat16>(stream, p, hbuf);
    } else if (p->h > 0 &&
               (engine = fb_fp8_gate_up_prefill(
                    ctx, p, hbuf, mh * elem_size(p->dtype), r)) !=
                   FB_STATUS_NOT_SUPPORTED) {
        if (engine != FB_STATUS_SUCCESS)
            return engine;
    } else if (p->h > 0) {
        /* the scratch holds G and U here: the engine said beforehand
         * that it would not form H (fb_fp8_mlp_scratch_bytes) */
        const size_t hbytes = (mh * elem_size(p->dtype) + 255) / 256 * 256;
        if (scratch_bytes < hbytes + 2 * mh * 4)
            return FB_STATUS_INTERNAL;
        char *base = (char *)scratch + hbytes;
        float *g = (float *)base, *u = g + mh;
        fb_e4m3_gemm_problem q[2] = {
            projection(p->dtype, p->m, p->h, p->k, p->x, p->ldx, p->wg,
                       p->sg, g, p->h, p->bg),
            projection(p->dtype, p->m, p->h, p->k, p->x, p->ldx, p->wu,
                       p->su, u, p->h, p->bu)};
        for (int i = 0; i < 2; i++) {
            /* G and U in fp32 with their scales and biases: cuBLASLt's
             * GEMM where it takes them, else the tiled kernel */
            fb_status st = fb_fp8_gemm_prefill(ctx, &q[i], 1, NULL, 0, r);
            if (st == FB_STATUS_NOT_SUPPORTED) {
                fb_result_clear(r);
                fb_fp8_gemm_f32_out(stream, &q[i]);
            } else if (st != FB_STATUS_SUCCESS) {
                return st;
            } else {
                prefill = true;
            }
        }
        switch (p->dtype) {
        case FB_DTYPE_F16: gate<__half>(stream, g, u, (int64_t)mh, p->gate_act, hbuf); break;
        case FB_DTYPE_BF16: gate<__nv_bfloat16>(stream, g, u, (int64_t)mh, p->gate_act, hbuf); break;
        default: gate<float>(stream, g, u, (int64_t)mh, p->gate_act, hbuf); break;
        }
    }
    const fb_e4m3_gemm_problem d = projection(
        p->dtype, p->m, p->n, p->h, p->h > 0 ? hbuf : NULL, p->h, p->wd,
        p->sd, p->y, p->ldy, p->bd);
    char down[64] = "";
    fb_status st = fb_fp8_gemm_wgmma(ctx, &d, FB_FP8_WGMMA_MLP_MAX_ROWS,
                                     down, sizeof down);
    if (st == FB_STATUS_NOT_SUPPORTED && !fb_fp8_direct_applies(&d))
        st = fb_fp8_gemm_prefill(ctx, &d, 0, down, sizeof down, r);
    if (st == FB_STATUS_NOT_SUPPORTED) {
        fb_result_clear(r);
        /* after the gate-and-up decode kernel (which lets it launch
         * early), the decode kernel streams Wd's first bytes while that
         * grid ends */
        st = p->h > 0 && wgmma == FB_STATUS_NOT_SUPPORTED &&
                     reg == kGateUpDecode
                 ? fb_fp8_gemm_x_pending(stream, &d, down, sizeof down)
                 : fb_fp8_gemm(stream, &d, down, sizeof down);
    }
    snprintf(path, len, "cuda-fused/e4m3-mlp/%s+%s",
             wgmma == FB_STATUS_SUCCESS     ? "gate-up-wgmma"
             : reg == kGateUpMid            ? "gate-up-mid-mma"
             : fused                        ? "gate-up-decode-mma"
             : engine == FB_STATUS_SUCCESS  ? "gate-up-engine-prefill"
             : prefill                      ? "gate-up-lt-prefill"
                                            : "gate-up-tiled-fp32",
             down + sizeof "cuda-fused/e4m3-" - 1);
    return st;
}
