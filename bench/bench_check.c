/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_check.c -- output agreement between implementations.
 */
#include <math.h>
#include "bench_check.h"
#include "bench_convert.h"

static double elem(fb_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case FB_DTYPE_F32: return ((const float *)p)[i];
    case FB_DTYPE_F16: return bench_f16_to_f32(((const uint16_t *)p)[i]);
    case FB_DTYPE_BF16: return bench_bf16_to_f32(((const uint16_t *)p)[i]);
    }
    return NAN;
}

double bench_rel_err(fb_dtype t, const void *y, const void *ref, int64_t count)
{
    double max_ref = 0, max_diff = 0;
    int bad = 0;
    for (int64_t i = 0; i < count; i++) {
        double a = elem(t, y, i), r = elem(t, ref, i);
        if (!isfinite(r))
            continue;
        if (!isfinite(a)) {
            bad = 1;
            continue;
        }
        double d = fabs(a - r);
        if (d > max_diff)
            max_diff = d;
        if (fabs(r) > max_ref)
            max_ref = fabs(r);
    }
    if (bad)
        return INFINITY;
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

double bench_check_tol(const bench_case *c, int tf32)
{
    double u_store = c->dtype == FB_DTYPE_F32   ? ldexp(1, -24)
                     : c->dtype == FB_DTYPE_F16 ? ldexp(1, -11)
                                                : ldexp(1, -8);
    double u_acc = c->dtype == FB_DTYPE_F32 && tf32 ? ldexp(1, -11) : ldexp(1, -24);
    double K = (double)(c->routine == BENCH_GEMM ? c->k : c->k + c->h);
    /* fp32 via TF32 also rounds the operands to TF32 */
    if (c->dtype == FB_DTYPE_F32 && tf32)
        u_store = ldexp(1, -11);
    return 4 * u_store + 4 * sqrt(K) * u_acc;
}
