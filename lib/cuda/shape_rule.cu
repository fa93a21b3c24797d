/*
 * shape_rule.cu -- when FB_BACKEND_CUDA / AUTO sends a call to cuda-fused
 * rather than cuda-lt.
 *
 * A call goes to cuda-fused only when a fused kernel covers it (asked of
 * the launcher itself, dry run: no second copy of its conditions here) and
 * its shape class has a row in the table below saying the fused kernel is
 * the faster one there. Each row names the measurement it comes from.
 *
 * PROVISIONAL: no row is measured yet. The rows are the classes where the
 * byte count alone decides: decode (<= 32 token rows: the fused kernels
 * read each weight once in one launch, where cuBLASLt plus separate
 * elementwise kernels make 4-6 launches and re-read the intermediates)
 * and tiny widths (launch-bound, every weight on chip). Prefill goes to
 * cuBLASLt (no fused row). Replace each "analysis" with the benchmark line
 * that confirms or moves it (scripts/fused-selftest.sh prints them).
 */
#include <stddef.h>
#include "fused_internal.h"

namespace {

enum Family { DECODE_MLP, DECODE_GEMM, TINY_MLP, TINY_GEMM };

struct Crossover {
    Family family;
    int cc_major_min;   /* GPU generation */
    unsigned dtypes;    /* bit (1 << fb_dtype) */
    int64_t rows_max;   /* token rows at most (m of the mlp; the short side
                           of a decode gemm; tokens of a tiny call) */
    const char *source; /* where the row comes from */
};

const unsigned ALL = 1u << FB_DTYPE_F32 | 1u << FB_DTYPE_F16 |
                     1u << FB_DTYPE_BF16;

const Crossover table[] = {
    {DECODE_MLP, 8, ALL, 32,
     "analysis: 1 launch streaming 3kh weights once vs 5 launches; "
     "bench to confirm (selftest mlp_decode rows)"},
    {DECODE_GEMM, 8, ALL, 32,
     "analysis: weights once + epilogue in the same pass vs GEMM + "
     "epilogue kernel; bench to confirm (selftest gemm_decode rows)"},
    {TINY_MLP, 8, ALL, (int64_t)1 << 40,
     "analysis: weights on chip, H never stored, 1 launch vs 5; "
     "bench to confirm (selftest mlp_tiny rows)"},
    {TINY_GEMM, 8, ALL, (int64_t)1 << 40,
     "analysis: launch-bound Linear; bench to confirm (selftest "
     "gemm_tiny rows)"},
};

bool table_says(Family f, const fb_fused_env *env, fb_dtype dtype,
                int64_t rows)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        const Crossover &c = table[i];
        if (c.family == f && env->cc_major >= c.cc_major_min &&
            (c.dtypes >> dtype & 1u) && rows <= c.rows_max)
            return true;
    }
    return false;
}

} /* namespace */

int fb_fused_prefers_mlp(const fb_fused_env *env, const fb_mlp_problem *p)
{
    fbf_tuning dry = {0, 0, 1};
    if (fbf_tiny_mlp(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(TINY_MLP, env, p->dtype, p->m);
    if (fbf_decode_mlp(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(DECODE_MLP, env, p->dtype, p->m);
    return 0;
}

int fb_fused_prefers_gemm(const fb_fused_env *env, const fb_gemm_problem *p)
{
    fbf_tuning dry = {0, 0, 1};
    const int64_t tokens = p->m < p->n ? p->m : p->n;
    if (fbf_tiny_gemm(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(TINY_GEMM, env, p->dtype, tokens);
    if (fbf_decode_gemm(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return table_says(DECODE_GEMM, env, p->dtype, tokens);
    return 0;
}
