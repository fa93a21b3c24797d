/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shape_rule.cu -- when FB_BACKEND_CUDA / AUTO sends a call to cuda-fused
 * rather than cuda-lt.
 *
 * A call goes to cuda-fused only when a fused kernel covers it (asked of
 * the launcher itself, dry run: no second copy of its conditions here) and
 * its shape class has a row in the table below: a class where the fused
 * kernel MEASURED faster than cuBLASLt + elementwise kernels (the chain
 * cuda-lt runs). Every row names its benchmark, and docs/fused-kernels.md
 * holds its numbers; everything without a row goes to cuda-lt. Measured
 * on Hopper only (cc 9.0), so the rows ask for cc 9; Ampere and later
 * generations go to cuda-lt until measured.
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
    const char *source; /* the benchmark (docs/fused-kernels.md) */
    int64_t rows_min;   /* token rows at least (0: no bound) */
    int mem_bus_max;    /* memory bus at most this many bits (0: any):
                           the H100 (5120) and the H200 (6144) are both
                           compute 9.0 but stream weights differently */
};

const Crossover table[] = {
    /* The decode MLP on the TMA engine (fused_decode_tma.cuh) beats
     * cuda-lt up to 16 tokens at any width, on the H100 and the H200; at
     * small widths, where the chain's launches dominate, up to 32 tokens. */
    {DECODE_MLP, 9, B16, 16, ANY, ANY,
     "fusedblas-bench (H100), torch_compare.py --crossover (H200): decode "
     "mlp, TMA engine", 0, 0},
    {DECODE_MLP, 9, B16, 32, 1024, 4096,
     "fusedblas-bench, H100: decode mlp 768->3072->768", 0, 0},
    /* fp32: both paths stream the same bytes and fewer tokens only take
     * FMAs off the fused kernel, so up to 16 tokens (narrower widths are
     * not measured in fp32). Measured with TF32 off (the default); the
     * fused kernel is true fp32 either way. */
    {DECODE_MLP, 9, 1u << FB_DTYPE_F32, 16, ANY, ANY,
     "fusedblas-bench, H200: decode mlp fp32 m=16", 0, 0},
    /* The tiny MLP, 16-bit, whichever kernel its launcher picks
     * (mma.sync or wgmma); not fp32, where cuda-lt was faster. */
    {TINY_MLP, 9, B16, ANY, ANY, ANY,
     "fused_selftest and fusedblas-bench, H200: tiny mlp 16-bit", 0, 0},
    /* The decode gemm on the TMA engine, up to 4 tokens, on the H100's
     * memory only (even on an H200). Tiny Linear has no row: slower than
     * cuBLAS + elementwise. */
    {DECODE_GEMM, 9, B16, 4, ANY, ANY,
     "fusedblas-bench, H100: linear 4096->11008, TMA engine", 0, 5120},
    /* The prefill pair (fused_prefill_wgmma.cu) at the widths where it
     * measured faster, k, n <= 1024 and h <= 4096 (at 4096 -> 11008 ->
     * 4096 it is no better than cuda-lt), from 1024 rows (fewer are not
     * measured). */
    {PREFILL_MLP, 9, B16, ANY, 1024, 4096,
     "torch_compare.py, H100: prefill seed 8192 x 768->3072->768", 1024,
     0},
    /* The Hopper GEMM engine (fused_gemm_sm90.cu, docs/gemm-engine.md):
     * the gated MLP from 4096 rows (at 2048 even with cuda-lt, below it
     * slower, on both GPUs); gemm from 1024 rows and only with an epilogue
     * beyond the plain product, since plain products are slower than
     * cuBLAS alone (fb_fused_prefers_gemm). */
    {ENGINE_MLP, 9, B16, ANY, ANY, ANY,
     "torch_compare.py --engine (H100), --crossover (H200): engine mlp "
     "against cuda-lt", 4096, 0},
    {ENGINE_GEMM, 9, B16, ANY, ANY, ANY,
     "torch_compare.py --crossover (H200), gemm_sm90_probe (H100): engine "
     "gemm+bias+gelu against cuda-lt", 1024, 0},
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
