/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gemm.c -- sgemm/hgemm/bgemm_bias_act on the CPU backend against the
 * double oracle: the conformance sweep, every activation's curve, the
 * OpenBLAS entry's blocks on a C of several megabytes, and a few checks
 * that the checker itself can fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* OpenBLAS's entry (forced by name, so on every CPU) on fp32 calls whose
 * C holds more than one 8 MiB block (lib/cpu/cpu_blas_gemm.c): right
 * against the oracle, and on two threads an even number of blocks, so
 * that each thread's run of them is the same work. C is m x n after the
 * library's normalisation to column-major: a row-major call swaps them. */
static void openblas_blocks(const target *cpu)
{
    static const struct {
        fb_layout layout;
        fb_transpose ta, tb;
        int64_t m, n, k;
        float alpha, beta;
        int bias;
        fb_activation act;
    } cases[] = {
        /* 3 blocks of 1000 x 2097 before the count is evened */
        {FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 5000, 1000, 5, 1.0f, 0.0f, 1,
         FB_ACT_GELU_TANH},
        {FB_COL_MAJOR, FB_NO_TRANS, FB_TRANS, 1000, 6000, 3, 0.5f, 2.0f, 0,
         FB_ACT_RELU},
        /* the rows split between the threads */
        {FB_ROW_MAJOR, FB_TRANS, FB_NO_TRANS, 600, 4001, 2, 1.0f, 0.0f, 1,
         FB_ACT_NONE},
    };
    fb_status st = fb_set_implementation(cpu->handle, "cpu/openblas");
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_threads(cpu->handle, 2);
    tap_ok(st == FB_STATUS_SUCCESS, "openblas blocks: forced, two threads");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gemm_case c = {FB_DTYPE_F32, cases[i].layout, cases[i].ta,
                       cases[i].tb, cases[i].m, cases[i].n, cases[i].k,
                       0, 0, 0, cases[i].alpha, cases[i].beta,
                       cases[i].bias, cases[i].act, 0, "openblas blocks"};
        gemm_case_set_lds(&c, 0, 0, 0);
        gemm_data d;
        gemm_data_make(&d, &c);
        gemm_check(&d, cpu, 1, NULL);
        gemm_data_free(&d);
        const char *path = fb_handle_last_path(cpu->handle);
        const int64_t rows = c.layout == FB_ROW_MAJOR ? c.n : c.m;
        const int64_t cols = c.layout == FB_ROW_MAJOR ? c.m : c.n;
        long long mb = 0, nb = 0;
        int threads = 0;
        const char *b = strstr(path, "blocks=");
        const char *t = strstr(path, "threads=");
        const int parsed = b != NULL && t != NULL &&
                           sscanf(b, "blocks=%lldx%lld", &mb, &nb) == 2 &&
                           sscanf(t, "threads=%d", &threads) == 1 &&
                           mb > 0 && nb > 0;
        const long long blocks =
            parsed ? ((rows + mb - 1) / mb) * ((cols + nb - 1) / nb) : 0;
        tap_ok(parsed && (threads != 2 || blocks % 2 == 0),
               "openblas blocks: %lld x %lld in %lld blocks of %lld x %lld "
               "on %d threads, an even count on two (%s)",
               (long long)rows, (long long)cols, blocks, mb, nb, threads,
               path);
    }
    (void)fb_set_implementation(cpu->handle, NULL);
    (void)fb_set_threads(cpu->handle, 0);
}

int main(void)
{
    tap_begin("test_gemm");
    target cpu = target_cpu();
    checker_can_fail(&cpu);
    gemm_sweep_conformance(&cpu, 1, NULL);
    gemm_sweep_activations(&cpu, 1, NULL);
    openblas_blocks(&cpu);
    fb_destroy(cpu.handle);
    return tap_end();
}
