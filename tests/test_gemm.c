/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gemm.c -- sgemm/hgemm/bgemm_bias_act on the CPU backend against the
 * double oracle: the conformance sweep, every activation's curve, and a
 * few checks that the checker itself can fail.
 */
#include <math.h>
#include <stdlib.h>
#include "gemm_check.h"
#include "oracle.h"

/* The checker must be able to fail: the bound is finite and tight enough
 * to tell gelu_tanh from gelu_erf, a result one bound away is rejected, a
 * NaN where a number belongs is rejected, a changed padding byte is seen. */
static void checker_can_fail(const target *cpu)
{
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        const tol tl = target_tol(cpu, dt);
        /* The library's gelu_tanh on x in [-4, 4], judged as if it had to
         * be gelu_erf: some points must fail. */
        enum { NX = 81 };
        float a[1], b[NX], c[NX]; /* float: aligned for every dtype */
        dt_set(dt, a, 0, 1.0);
        for (int e = 0; e < NX; e++)
            dt_set(dt, b, e, oracle_round(dt, -4.0 + e * 0.1));
        const fb_status st = gemm_call(cpu->handle, dt, FB_ROW_MAJOR,
                                       FB_NO_TRANS, FB_NO_TRANS, 1, NX, 1,
                                       1.0f, a, 1, b, NX, 0.0f, c, NX, NULL,
                                       FB_ACT_GELU_TANH);
        int told = 0;
        for (int e = 0; st == FB_STATUS_SUCCESS && e < NX; e++) {
            const double x = dt_get(dt, b, e), y = dt_get(dt, c, e);
            const double want = oracle_act(FB_ACT_GELU_ERF, x);
            double ratio;
            told += judge(y, want, x, FB_ACT_GELU_ERF,
                          tol_gemm(&tl, 1, FB_ACT_GELU_ERF, fabs(x), want),
                          &ratio);
        }
        tap_ok(st == FB_STATUS_SUCCESS && told > 0,
               "checker: %s bound tells gelu_tanh from gelu_erf (%d of %d "
               "points)", dt_name(dt), told, NX);
    }
    const tol tl = tol_make(FB_DTYPE_F32, ARITH_FP32);
    const double bound = tol_gemm(&tl, 64, FB_ACT_SILU, 20.0, 3.0);
    double ratio;
    tap_ok(bound > 0 && bound < 1e-4 &&
               judge(3.0 + 1.01 * bound, 3.0, 3.0, FB_ACT_SILU, bound, &ratio) &&
               !judge(3.0 + 0.99 * bound, 3.0, 3.0, FB_ACT_SILU, bound, &ratio) &&
               judge(NAN, 3.0, 3.0, FB_ACT_SILU, bound, &ratio) &&
               judge(3.0, NAN, 1.0, FB_ACT_RELU, bound, &ratio) &&
               judge(0.0, NAN, NAN, FB_ACT_GELU_TANH, bound, &ratio) &&
               judge(NAN, 0.0, -INFINITY, FB_ACT_GELU_TANH, INFINITY,
                     &ratio) &&
               !judge(-0.0, 0.0, -INFINITY, FB_ACT_GELU_TANH, INFINITY,
                      &ratio) &&
               judge(-INFINITY, INFINITY, INFINITY, FB_ACT_NONE, bound, &ratio),
           "checker: judge rejects errors beyond the bound, misplaced NaN "
           "and wrong Inf (fp32 k=64 bound %.3g)", bound);
    tshape s = {FB_COL_MAJOR, 3, 2, 5};
    tbuf before, after;
    tbuf_init(&before, FB_DTYPE_F16, tshape_nelem(&s), 1);
    tbuf_init(&after, FB_DTYPE_F16, tshape_nelem(&s), 1);
    dt_set_bits(FB_DTYPE_F16, tbuf_data(&after), 4, 0x3c00); /* padding */
    tcheck chk;
    tcheck_init(&chk);
    check_untouched(&chk, "C", &before, &after, &s);
    tap_ok(chk.failed, "checker: a changed padding element is seen");
    tbuf_free(&before);
    tbuf_free(&after);
}

int main(void)
{
    tap_begin("test_gemm");
    target cpu = target_cpu();
    checker_can_fail(&cpu);
    gemm_sweep_conformance(&cpu, 1, NULL);
    gemm_sweep_activations(&cpu, 1, NULL);
    fb_destroy(cpu.handle);
    return tap_end();
}
