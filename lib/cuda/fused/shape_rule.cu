/*
 * shape_rule.cu -- when FB_BACKEND_CUDA / AUTO sends a call to cuda-fused
 * rather than cuda-lt.
 *
 * A call goes to cuda-fused only when a fused kernel covers it (asked of
 * the launcher itself, dry run: no second copy of its conditions here) and
 * its shape class has a row in the table below: a class where the fused
 * kernel MEASURED faster than cuBLASLt + elementwise kernels (the chain
 * cuda-lt runs). Every row cites its benchmark line; everything without a
 * row goes to cuda-lt. Measured on Hopper only (cc 9.0), so the rows ask
 * for cc 9; Ampere and later generations go to cuda-lt until measured.
 */
#include <stddef.h>
#include "fused_internal.h"

namespace {

enum Family { DECODE_MLP, DECODE_GEMM, TINY_MLP, PREFILL_MLP, ENGINE_MLP,
              ENGINE_GEMM };

const int64_t ANY = (int64_t)1 << 62;
const unsigned B16 = 1u << FB_DTYPE_F16 | 1u << FB_DTYPE_BF16;

struct Crossover {
    Family family;
    int cc_major;       /* GPU generation it was measured on */
    unsigned dtypes;    /* bit (1 << fb_dtype) */
    int64_t rows_max;   /* token rows (mlp m; the short side of a gemm) */
    int64_t kn_max;     /* mlp: k and n at most (ANY: no bound) */
    int64_t h_max;      /* mlp: h at most */
    const char *source; /* the measurement */
    int64_t rows_min;   /* token rows at least (0: no bound) */
    int mem_bus_max;    /* memory bus at most this many bits (0: any):
                           the H100 (5120) and the H200 (6144) are both
                           compute 9.0 but stream weights differently */
};

const Crossover table[] = {
    /* The TMA engine (fused_decode_tma.cuh) against cuda-lt,
     * fusedblas-bench (bench/gpu-bench.sh), H100, 2026-11-25 02:40 UTC,
     * 4096->11008->4096: bf16 m=1 103.1 us against 115.1, m=4 103.3 /
     * 116.3, m=16 108.8 / 111.6, m=32 117.4 / 120.4; f16 m=16 108.5 /
     * 112.1 but m=32 118.0 / 114.3 (torch_compare.py, same run, bf16
     * m=32: 118.8 / 115.3), so m <= 16. 768->3072->768 (weights 14 MB;
     * the chain's launches dominate): bf16 m=1 18.7 / 30.7, m=16 20.7 /
     * 30.6, m=32 23.5 / 29.6 (f16 alike), so m <= 32 where k, n <= 1024
     * and h <= 4096. On an H200 (torch_compare.py, 03:00 UTC) cuda-lt
     * is as fast or faster at 4096 wide: bf16 m=1 79.4 against 77.9, m=4
     * 79.4 / 80.8, m=16 86.1 / 82.0, m=32 95.0 / 79.1; so the wide row
     * holds for the H100's 5120-bit memory only. 768->3072->768 m=16 on
     * the H200: 19.6 / 47.2. (The register engine, GPU run 3, H200: m <= 2
     * at 4096 wide, 1.05x; since overtaken there by cuda-lt.) */
    {DECODE_MLP, 9, B16, 16, ANY, ANY,
     "fusedblas-bench, H100: decode mlp (TMA) m=1..16 1.03-1.13x", 0,
     5120},
    {DECODE_MLP, 9, B16, 32, 1024, 4096,
     "fusedblas-bench, H100: decode mlp 768->3072->768 m<=32 1.26-1.64x",
     0, 0},
    /* fusedblas-bench, H200, 2026-11-22 06:44 and 09:33 UTC: mlp fp32 m=16
     * 4096->11008->4096 cuda-fused 297.1 / 297.7 us against cuda-lt 312.4
     * / 313.7 (1.05x; fused_selftest 298.2 vs 313.1). Both stream the
     * same 541 MB; fewer tokens only take FMAs off the fused kernel, so
     * m <= 16 (narrower widths are not measured in fp32). Measured with
     * TF32 off (the default); the fused kernel is true fp32 either way. */
    {DECODE_MLP, 9, 1u << FB_DTYPE_F32, 16, ANY, ANY,
     "fusedblas-bench, H200: decode mlp fp32 m=16 1.05x", 0, 0},
    /* GPU run 3, H200, fused_selftest: mlp bf16 64->256->64 m=65536 2.64x,
     * m=1048576 2.99x; f16 128->128->128 m=65536 2.07x. Not fp32
     * (64->256->64 m=65536: 314.7 vs 295.6 us, 0.94x). Since the wgmma
     * kernel (k, n <= 64; fusedblas-bench, H200, 2026-11-22 09:33 UTC):
     * 64->256->64 30.2 us against cuda-lt 91.7 at m=65536, 64->64->64
     * 21.3 against 69.2; 128->128->128 (mma.sync) 49.1 against 80.9. */
    {TINY_MLP, 9, B16, ANY, ANY, ANY,
     "GPU run 3, H200, fused_selftest: tiny mlp 16-bit 2.07-2.99x", 0, 0},
    /* The TMA engine, fusedblas-bench, H100, 2026-11-25 02:40 UTC,
     * linear 4096->11008 gelu_tanh bias against cuda-lt: bf16 1 token
     * 37.6 us / 43.4, 4 tokens 38.1 / 41.8, 16 tokens 42.4 / 41.9 (f16
     * 42.3 / 44.6; torch_compare.py 42.3 / 44.4: even), 32 tokens 49.2 /
     * 46.1, so up to 4 tokens; the H100 only (H200, torch_compare.py,
     * 03:00 UTC: 1 token 30.2 / 29.6, 4 tokens 30.6 / 31.7: even). Tiny
     * Linear has no row (GPU run 3:
     * 1024x32->64 0.62x, 65536x128->128 0.47x of cuBLAS + elementwise). */
    {DECODE_GEMM, 9, B16, 4, ANY, ANY,
     "fusedblas-bench, H100: linear 4096->11008 (TMA) 1-4 tokens 1.10-1.15x",
     0, 5120},
    /* The TMA + wgmma prefill pair (fused_prefill_wgmma.cu) against
     * cuda-lt, torch_compare.py, H100, 2026-11-25 01:00 UTC: seed 8192 x
     * 768->3072->768 bf16 199.8 us against 232.1 (PyTorch eager 262.4,
     * torch.compile 225.8), f16 206.0 against 243.8; 256->256->256 at
     * 65536 rows 120.4 against 156.6, at 1M rows 1635 against 2268. At
     * 4096->11008->4096 it is no better than cuda-lt (1024 rows: 423.8
     * against 412.9 us; 4096: 1631.6 against 1650.2; 8192: 3384.8
     * against 3202.1), so k, n <= 1024 and h <= 4096; m >= 1024 (fewer
     * rows are not measured). */
    {PREFILL_MLP, 9, B16, ANY, 1024, 4096,
     "torch_compare.py, H100: prefill seed 1.16x cuda-lt, 1.31x eager",
     1024, 0},
    /* The Hopper GEMM engine (fused_gemm_sm90.cu) against cuBLAS, H100,
     * bench/probes/gemm_sm90_probe.cu (docs/gemm-engine.md): the gated MLP
     * 2048..8192 x 4096 -> 11008 / 14336 -> 4096 1.09-1.20x the cuBLAS
     * chain; gemm + bias + gelu_tanh 2048..8192 rows x 4096 -> 11008 /
     * 14336 1.03-1.46x cuBLAS + an elementwise pass (what cuda-lt runs for
     * a 16-bit epilogue), but plain products at 0.84-0.97x cuBLAS alone:
     * so gemms with an epilogue only (fb_fused_prefers_gemm). */
    {ENGINE_MLP, 9, B16, ANY, ANY, ANY,
     "gemm_sm90_probe, H100: engine mlp 1.09-1.20x the cuBLAS chain", 1024,
     0},
    {ENGINE_GEMM, 9, B16, ANY, ANY, ANY,
     "gemm_sm90_probe, H100: engine gemm+bias+gelu 1.03-1.46x cuBLAS+ew",
     512, 0},
};

bool table_says(Family f, const fb_fused_env *env, fb_dtype dtype,
                int64_t rows, int64_t kn, int64_t h)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        const Crossover &c = table[i];
        if (c.family == f && env->cc_major == c.cc_major &&
            (c.dtypes >> dtype & 1u) && rows <= c.rows_max &&
            rows >= c.rows_min &&
            (c.mem_bus_max == 0 || env->mem_bus_bits <= c.mem_bus_max) &&
            kn <= c.kn_max && h <= c.h_max)
            return true;
    }
    return false;
}

} /* namespace */

int fb_fused_prefers_mlp(const fb_fused_env *env, const fb_mlp_problem *p)
{
    const int64_t kn = p->k > p->n ? p->k : p->n;
    switch (fbf_mlp_family_of(env, p)) {
    case FBF_MLP_TINY:
        return table_says(TINY_MLP, env, p->dtype, p->m, kn, p->h);
    case FBF_MLP_DECODE:
        return table_says(DECODE_MLP, env, p->dtype, p->m, kn, p->h);
    case FBF_MLP_PREFILL:
        return table_says(PREFILL_MLP, env, p->dtype, p->m, kn, p->h);
    case FBF_MLP_ENGINE:
        return table_says(ENGINE_MLP, env, p->dtype, p->m, kn, p->h);
    case FBF_MLP_NONE:
        break;
    }
    return 0;
}

int fb_fused_prefers_gemm(const fb_fused_env *env, const fb_gemm_problem *p)
{
    fbf_tuning dry = {};
    dry.dry_run = 1;
    const int64_t tokens = p->m < p->n ? p->m : p->n;
    /* gemm_tiny has no row (measured slower); only decode is asked. The
     * fused entry point's own refusals (alpha == 0, k == 0) apply too. */
    if (p->alpha == 0.0f || p->k == 0)
        return 0;
    if (fbf_tiny_gemm(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return 0;
    if (fbf_decode_gemm(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(DECODE_GEMM, env, p->dtype, tokens, 0, 0);
    /* the engine: only where cuda-lt would need a second pass (a 16-bit
     * epilogue beyond the plain product) */
    const int plain = p->ep.bias == NULL && p->ep.act == FB_ACT_NONE &&
                      p->beta == 0.0f;
    if (!plain && fbf_gemm_sm90(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(ENGINE_GEMM, env, p->dtype, tokens, 0, 0);
    return 0;
}
