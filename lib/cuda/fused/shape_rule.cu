/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shape_rule.cu -- the fused kernel families as entries of the module's
 * implementation tables (fused.h): whether each covers a call (asked of
 * its launcher, nothing launched: no second copy of its conditions here),
 * the device memory it needs, how it runs, and the shape rule that says
 * when FB_BACKEND_CUDA / AUTO prefers it to cuda-lt.
 *
 * The shape rule is the rows each family carries: a class of shapes where
 * the fused kernel MEASURED faster than cuBLASLt + elementwise kernels
 * (the chain cuda-lt runs). Every row names its benchmark, and
 * docs/fused-kernels.md holds its numbers; a shape without a row goes to
 * cuda-lt. Measured on Hopper only (cc 9.0), so the rows ask for cc 9;
 * Ampere and later generations go to cuda-lt until measured.
 */
#include <stddef.h>
#include "fused_internal.h"

namespace {

const int64_t ANY = (int64_t)1 << 62;
const unsigned B16 = 1u << FB_DTYPE_F16 | 1u << FB_DTYPE_BF16;

struct Crossover {
    int cc_major;       /* GPU generation it was measured on */
    unsigned dtypes;    /* bit (1 << fb_dtype) */
    int64_t rows_max;   /* token rows (mlp m; the short side of a gemm) */
    int64_t kn_max;     /* mlp: k and n at most (ANY: no bound) */
    int64_t h_max;      /* mlp: h at most */
    const char *source; /* the benchmark (docs/fused-kernels.md) */
    int64_t rows_min;   /* token rows at least (0: no bound) */
};

template <size_t N>
bool rows_say(const Crossover (&rows)[N], const fb_fused_env *env,
              fb_dtype dtype, int64_t tokens, int64_t kn, int64_t h)
{
    for (size_t i = 0; i < N; ++i) {
        const Crossover &c = rows[i];
        if (env->cc_major == c.cc_major && (c.dtypes >> dtype & 1u) &&
            tokens <= c.rows_max && tokens >= c.rows_min &&
            kn <= c.kn_max && h <= c.h_max)
            return true;
    }
    return false;
}

template <size_t N>
bool mlp_rows_say(const Crossover (&rows)[N], const fb_fused_env *env,
                  const fb_mlp_problem *p)
{
    return rows_say(rows, env, p->dtype, p->m, p->k > p->n ? p->k : p->n,
                    p->h);
}

bool none(const fb_fused_env *, const fb_gemm_problem *) { return false; }

size_t no_gemm_scratch(const fb_gemm_problem *) { return 0; }

/* ---- gemm ---------------------------------------------------------------
 * gemm_tiny has no row (measured slower than cuBLAS + elementwise). */

bool tiny_gemm_applies(const fb_fused_env *env, const fb_gemm_problem *p)
{
    return p->multiply &&
           fbf_tiny_gemm(env, p, FBF_CHECK, NULL, 0) == FB_STATUS_SUCCESS;
}

fb_status tiny_gemm_run(const fb_fused_env *env, const fb_gemm_problem *p,
                        char *path, size_t len)
{
    return fbf_tiny_gemm(env, p, FBF_RUN, path, len);
}

/* Hopper (compute 9.x): the gemm rules below were measured on the H100
 * and the H200 with the boundary grid of docs/gemm-engine.md
 * (torch_compare.py --gemm-rule). */
bool is_hopper(const fb_fused_env *env)
{
    return env->cc_major == 9;
}

/* The weight rows of a gemm (its output features). */
int64_t gemm_features(const fb_gemm_problem *p)
{
    return p->weight_is_a ? p->m : p->n;
}

bool decode_gemm_applies(const fb_fused_env *env, const fb_gemm_problem *p)
{
    return p->multiply &&
           fbf_decode_gemm(env, p, FBF_CHECK, NULL, 0) == FB_STATUS_SUCCESS;
}

/* The decode gemm where the output is at least as wide as the input: up
 * to 6 tokens, and up to 32 where k <= 1024 (there cuda-lt's two
 * launches cost more than the weights take to stream). Narrower 16-bit
 * outputs, cut into k stripes: up to 16 tokens where the weights are at
 * most 32 MiB (cuda-lt's two launches again), and up to 4 tokens to
 * 96 MiB; past that they stream no faster than cuda-lt (both GPUs, inputs
 * rotated through twice the L2: docs/decode-kernels.md, "Narrow
 * outputs"). fp32 up to 16 tokens (the fp32 TMA engine's range; beyond,
 * the register engine streams at half cuda-lt's rate) at any width:
 * cuda-lt's fp32 GEMM streams its weights slower there, narrow outputs
 * included (docs/gemm-engine.md, "Drawn shapes"; measured on the H100). */
bool decode_gemm_preferred(const fb_fused_env *env, const fb_gemm_problem *p)
{
    const int64_t tokens = fb_gemm_tokens(p);
    if (p->dtype == FB_DTYPE_F32 && tokens <= 16)
        return is_hopper(env);
    const int64_t features = gemm_features(p);
    if (features < p->k) {
        const int64_t bytes = 2 * features * p->k;
        return is_hopper(env) &&
               ((tokens <= 16 && bytes <= ((int64_t)32 << 20)) ||
                (tokens <= 4 && bytes <= ((int64_t)96 << 20)));
    }
    return is_hopper(env) && (tokens <= 6 || (tokens <= 32 && p->k <= 1024));
}

fb_status decode_gemm_run(const fb_fused_env *env, const fb_gemm_problem *p,
                          char *path, size_t len)
{
    return fbf_decode_gemm(env, p, FBF_RUN, path, len);
}

/* The Hopper GEMM engine (fused_gemm_sm90.cu, docs/gemm-engine.md), only
 * with an epilogue beyond the plain product, where cuda-lt needs a second
 * pass over an fp32 buffer (plain products are slower than cuBLAS alone).
 * The second pass costs cuda-lt about 10 bytes an output against the
 * engine's 2, and a launch, which outweighs everything at k <= 1024; at
 * longer k the engine wins where its persistent grid is well filled
 * (the boundary grid of docs/gemm-engine.md):
 *  - k < 2048 (ping-pong in clusters of 4): from 256 tokens;
 *  - k >= 2048 (ping-pong in pairs): from 256 tokens, when the grid runs
 *    at least 1.5 rounds and at least 84 % of those whole rounds' tiles
 *    hold output (fbf_gemm_sm90_rounds); a part-empty last round, ragged
 *    edges or a single round lost to cuBLAS's split and stream-K
 *    schedules. */
bool engine_gemm_filled(const fb_fused_env *env, const fb_gemm_problem *p)
{
    if (p->k <= 1024)
        return true;
    if (p->n < 256) /* the engine's X rows: the tokens */
        return false;
    if (p->k < 2048)
        return true;
    double rounds = 0.0, busy = 0.0;
    return fbf_gemm_sm90_rounds(env, p, &rounds, &busy) && rounds >= 1.5 &&
           busy >= 0.84;
}

bool engine_gemm_applies(const fb_fused_env *env, const fb_gemm_problem *p)
{
    return p->multiply &&
           fbf_gemm_sm90(env, p, FBF_CHECK, NULL, 0) == FB_STATUS_SUCCESS;
}

/* An MN-major operand is transposed K-major before the engine runs: a
 * pass reading and writing it, 4 bytes an element, and a launch. cuda-lt
 * reads every layout as it is but pays its second pass, about 10 bytes an
 * output. With the weights stored k x n (fusedblas-bench --weights-kn,
 * H100, docs/gemm-engine.md) the engine won at 4096 rows and lost at 1024
 * for 1024 -> 4096, won at 4096 and 8192 and was level at 2048 for 4096
 * -> 11008: the transposes' bytes plus 8 MB for the launch at most 45 %
 * of the second pass's (crossovers at 1344 and 3802 rows). At 11008 -> 4096
 * the shape's own rule below says cuda-lt, as measured. Operands packed
 * only for their stride or base are not counted: the layout alone
 * decides, so a plan (whose activations' strides are not known when it
 * is made) and the plain call choose alike. */
bool engine_pack_pays(const fb_gemm_problem *p)
{
    const double k = (double)p->k;
    const double moved = 4.0 * ((p->transa ? 0.0 : (double)p->m * k) +
                                (p->transb ? (double)p->n * k : 0.0));
    if (moved == 0.0)
        return true;
    return moved + 8e6 <= 0.45 * 10.0 * (double)p->m * (double)p->n;
}

bool engine_gemm_preferred(const fb_fused_env *env, const fb_gemm_problem *p)
{
    const bool plain = p->ep.bias == NULL && p->ep.act == FB_ACT_NONE &&
                       p->beta == 0.0f;
    if (plain || !engine_pack_pays(p))
        return false;
    return is_hopper(env) && engine_gemm_filled(env, p);
}

fb_status engine_gemm_run(const fb_fused_env *env, const fb_gemm_problem *p,
                          char *path, size_t len)
{
    return fbf_gemm_sm90(env, p, FBF_RUN, path, len);
}

/* ---- mlp ---------------------------------------------------------------- */

size_t no_scratch(const fb_mlp_problem *) { return 0; }

/* The two-launch families keep H (m x h of the input type) between their
 * launches. */
size_t h_scratch(const fb_mlp_problem *p)
{
    return (size_t)p->m * (size_t)p->h * 2;
}

/* The tiny MLP, 16-bit, whichever kernel its launcher picks (mma.sync or
 * wgmma); not fp32, where cuda-lt was faster. */
const Crossover tiny_mlp_rows[] = {
    {9, B16, ANY, ANY, ANY,
     "fused_selftest and fusedblas-bench, H200: tiny mlp 16-bit", 0},
};

bool tiny_mlp_applies(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return fbf_tiny_mlp(env, p, FBF_CHECK, NULL, 0) == FB_STATUS_SUCCESS;
}

bool tiny_mlp_preferred(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return mlp_rows_say(tiny_mlp_rows, env, p);
}

fb_status tiny_mlp_run(const fb_fused_env *env, const fb_mlp_problem *p,
                       char *path, size_t len)
{
    return fbf_tiny_mlp(env, p, FBF_RUN, path, len);
}

/* The decode MLP on the TMA engine (fused_decode_tma.cuh) beats cuda-lt
 * up to 16 tokens at any width, on the H100 and the H200; at small
 * widths, where the chain's launches dominate, up to 32 tokens. fp32: both paths
 * stream the same bytes and fewer tokens only take FMAs off the fused
 * kernel, so up to 16 tokens (narrower widths are not measured in fp32).
 * Measured with TF32 off (the default); the fused kernel is true fp32
 * either way. */
const Crossover decode_mlp_rows[] = {
    {9, B16, 16, ANY, ANY,
     "fusedblas-bench (H100), torch_compare.py --crossover (H200): decode "
     "mlp, TMA engine", 0},
    {9, B16, 32, 1024, 4096,
     "fusedblas-bench, H100: decode mlp 768->3072->768", 0},
    {9, 1u << FB_DTYPE_F32, 16, ANY, ANY,
     "fusedblas-bench, H200: decode mlp fp32 m=16", 0},
};

bool decode_mlp_applies(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return fbf_decode_mlp(env, p, FBF_CHECK, NULL, 0) == FB_STATUS_SUCCESS;
}

bool decode_mlp_preferred(const fb_fused_env *env, const fb_mlp_problem *p)
{
    if (!mlp_rows_say(decode_mlp_rows, env, p))
        return false;
    /* The wide 16-bit rows were measured on the TMA engine; a shape it
     * cannot take (e.g. 8192 -> 28672 -> 8192: more rows a CTA than its
     * boxes hold) would run the register engine, which streams far slower
     * than cuda-lt there (docs/fused-kernels.md). */
    const bool small = (p->k > p->n ? p->k : p->n) <= 1024 && p->h <= 4096;
    return small || p->dtype == FB_DTYPE_F32 ||
           fbf_decode_mlp_streams_tma(env, p);
}

fb_status decode_mlp_run(const fb_fused_env *env, const fb_mlp_problem *p,
                         char *path, size_t len)
{
    return fbf_decode_mlp(env, p, FBF_RUN, path, len);
}

/* The prefill pair (fused_prefill_wgmma.cu) keeps the widths where it
 * measured faster than the engine, k, n <= 1024 and h <= 4096 (its
 * epilogue warps pay most where k is small; at 4096 -> 11008 -> 4096 it
 * is no better than cuda-lt), and is preferred from 1024 rows (fewer are
 * not measured). */
const Crossover prefill_mlp_rows[] = {
    {9, B16, ANY, 1024, 4096,
     "torch_compare.py, H100: prefill seed 8192 x 768->3072->768", 1024},
};

bool prefill_mlp_applies(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return p->k <= 1024 && p->n <= 1024 && p->h <= 4096 &&
           fbf_prefill_mlp_wgmma(env, p, NULL, 0, FBF_CHECK, NULL, 0) ==
               FB_STATUS_SUCCESS;
}

bool prefill_mlp_preferred(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return mlp_rows_say(prefill_mlp_rows, env, p);
}

fb_status prefill_mlp_run(const fb_fused_env *env, const fb_mlp_problem *p,
                          char *path, size_t len)
{
    return fbf_prefill_mlp_wgmma(env, p, env->scratch, env->scratch_bytes,
                                 FBF_RUN, path, len);
}

/* The Hopper GEMM engine's gated MLP, from 2048 rows, where it measured
 * level with cuda-lt or ahead on both GPUs (below, slower on both). */
const Crossover engine_mlp_rows[] = {
    {9, B16, ANY, ANY, ANY,
     "torch_compare.py --crossover (H100 and H200): engine mlp against "
     "cuda-lt", 2048},
};

bool engine_mlp_applies(const fb_fused_env *env, const fb_mlp_problem *p)
{
    return fbf_mlp_sm90(env, p, NULL, 0, FBF_CHECK, NULL, 0) ==
           FB_STATUS_SUCCESS;
}

/* ... and where the rounds of its two launches are at least 90 % full,
 * weighted by their lengths (fbf_mlp_sm90_fill): a down GEMM of one or
 * two part-empty rounds lost to cuda-lt (torch_compare.py --mlp-rule on
 * the H100, docs/gemm-engine.md; the grid is the same on the H200's 132
 * SMs, and the cut only sends calls to cuda-lt). */
bool engine_mlp_preferred(const fb_fused_env *env, const fb_mlp_problem *p)
{
    double fill = 0.0;
    return mlp_rows_say(engine_mlp_rows, env, p) &&
           fbf_mlp_sm90_fill(env, p, &fill) && fill >= 0.9;
}

fb_status engine_mlp_run(const fb_fused_env *env, const fb_mlp_problem *p,
                         char *path, size_t len)
{
    return fbf_mlp_sm90(env, p, env->scratch, env->scratch_bytes, FBF_RUN,
                        path, len);
}

} /* namespace */

const fb_fused_gemm_impl fb_fused_gemm_impls[] = {
    {"cuda-fused/gemm_tiny", tiny_gemm_applies, none, no_gemm_scratch,
     tiny_gemm_run},
    {"cuda-fused/gemm_decode", decode_gemm_applies, decode_gemm_preferred,
     no_gemm_scratch, decode_gemm_run},
    {"cuda-fused/gemm_sm90", engine_gemm_applies, engine_gemm_preferred,
     fbf_gemm_sm90_scratch, engine_gemm_run},
    {NULL, NULL, NULL, NULL, NULL},
};

const fb_fused_mlp_impl fb_fused_mlp_impls[] = {
    {"cuda-fused/mlp_tiny", tiny_mlp_applies, tiny_mlp_preferred, no_scratch,
     tiny_mlp_run},
    {"cuda-fused/mlp_decode", decode_mlp_applies, decode_mlp_preferred,
     no_scratch, decode_mlp_run},
    {"cuda-fused/mlp_prefill_wgmma", prefill_mlp_applies,
     prefill_mlp_preferred, h_scratch, prefill_mlp_run},
    {"cuda-fused/mlp_sm90", engine_mlp_applies, engine_mlp_preferred,
     h_scratch, engine_mlp_run},
    {NULL, NULL, NULL, NULL, NULL},
};
