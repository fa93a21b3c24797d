/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plan.c -- plans on the CPU backend (fb_plan_create_gemm(3)).
 *
 *  - Every dtype, layout and transpose pair, with and without bias, beta
 *    and an activation: a gemm plan gives the same bits as the plain
 *    routine on the same handle, and runs the same implementation, for
 *    every m from 1 to max_m (40), and for m across the implementations'
 *    boundaries up to 300. The same for MLP plans, decode and prefill
 *    sizes. (On an AVX-512 CPU the packed kernels run from packed weights;
 *    elsewhere OpenBLAS runs every m.)
 *  - Bad arguments at creation and execution, each at its position with
 *    the output untouched; made-up and destroyed plans (plan_check.c).
 *  - A forced implementation (fb_set_implementation) holds for the plan
 *    made under it; destroying the handle destroys its plans.
 *  - Every CPU implementation forced in turn: its plan gives the plain
 *    call's bits on every m it takes; one that does not run on this CPU
 *    refuses the plan and the plain call alike.
 */
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "plan_check.h"

static void sweeps(fb_handle h)
{
    int64_t all[40];
    for (int i = 0; i < 40; i++)
        all[i] = i + 1;
    static const int64_t wide[] = {1, 7, 16, 17, 31, 32, 33, 47, 48, 64, 65,
                                   97, 128, 255, 300};
    const int nwide = (int)(sizeof wide / sizeof wide[0]);
    static const fb_layout lays[] = {FB_ROW_MAJOR, FB_COL_MAJOR};
    static const fb_transpose tr[] = {FB_NO_TRANS, FB_TRANS};
    for (int d = 0; d < 3; d++)
        for (int l = 0; l < 2; l++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    plan_gemm_spec s = {all_dtypes[d], lays[l], tr[a], tr[b],
                                        40, 70, 24, 1.0f, 0.0f, 1,
                                        FB_ACT_GELU_TANH, 3};
                    plan_check_gemm(h, &tmem_host, &s, all, 40, NULL, NULL);
                }
    /* nn.Linear shapes (row-major, B transposed) across the boundaries:
     * decode weights, small k, the packed kernels; beta and alpha. */
    for (int d = 0; d < 3; d++) {
        plan_gemm_spec s1 = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                             FB_TRANS, 300, 96, 64, 1.0f, 0.0f, 1,
                             FB_ACT_SILU, 0};
        plan_check_gemm(h, &tmem_host, &s1, wide, nwide, NULL, NULL);
        plan_gemm_spec s2 = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                             FB_TRANS, 300, 50, 600, 0.5f, 0.25f, 0,
                             FB_ACT_RELU, 1};
        plan_check_gemm(h, &tmem_host, &s2, wide, nwide, NULL, NULL);
        plan_gemm_spec s3 = {all_dtypes[d], FB_COL_MAJOR, FB_NO_TRANS,
                             FB_NO_TRANS, 300, 40, 520, 1.0f, 0.0f, 1,
                             FB_ACT_GELU_ERF, 0};
        plan_check_gemm(h, &tmem_host, &s3, wide, nwide, NULL, NULL);
    }
    /* k = 0 and alpha = 0: nothing to multiply, C <- act(beta C + bias). */
    plan_gemm_spec z = {FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 40,
                        20, 0, 1.0f, 0.5f, 1, FB_ACT_RELU, 0};
    plan_check_gemm(h, &tmem_host, &z, all, 40, NULL, NULL);
    z.k = 16, z.alpha = 0.0f;
    plan_check_gemm(h, &tmem_host, &z, all, 40, NULL, NULL);

    for (int d = 0; d < 3; d++) {
        /* The tiny MLP, a decode width, and a prefill width. */
        plan_mlp_spec m1 = {all_dtypes[d], FB_ACT_GELU_TANH, 300, 64, 256,
                            64, 1, 0};
        plan_check_mlp(h, &tmem_host, &m1, wide, nwide, NULL, NULL);
        plan_mlp_spec m2 = {all_dtypes[d], FB_ACT_SILU, 40, 96, 200, 80, 0,
                            2};
        plan_check_mlp(h, &tmem_host, &m2, all, 40, NULL, NULL);
        plan_mlp_spec m3 = {all_dtypes[d], FB_ACT_RELU, 130, 600, 520, 72, 1,
                            1};
        static const int64_t some[] = {1, 16, 17, 32, 33, 96, 130};
        plan_check_mlp(h, &tmem_host, &m3, some, 7, NULL, NULL);
    }
    /* bf16 on AMX: the decode kernel past 32 rows where the weights are
     * large (64 KiB a row, in blocks of 80; the MLP's below 16 MiB 112
     * KiB past one block; the gemm 256 KiB a token past one block), the
     * bf16 driver elsewhere: a plan must choose as a plain call does, at
     * every m either side. */
    static const int64_t rule[] = {33, 40, 48, 49, 64, 65, 80, 81, 97};
    /* 3 MiB: the AMX form to 48 rows. */
    plan_mlp_spec mb = {FB_DTYPE_BF16, FB_ACT_GELU_TANH, 97, 512, 1024, 512,
                        1, 0};
    plan_check_mlp(h, &tmem_host, &mb, rule, 9, NULL, NULL);
    /* 4 MiB: the AMX form to 64 tokens. */
    plan_gemm_spec gb = {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                         97, 1024, 2048, 1.0f, 0.0f, 1, FB_ACT_SILU, 0};
    plan_check_gemm(h, &tmem_host, &gb, rule, 9, NULL, NULL);
    /* h = 0: Y = bd. */
    plan_mlp_spec m0 = {FB_DTYPE_BF16, FB_ACT_SILU, 40, 16, 0, 24, 1, 0};
    plan_check_mlp(h, &tmem_host, &m0, all, 40, NULL, NULL);
}

static void forced(void)
{
    fb_handle h = handle_on(FB_BACKEND_CPU);
    if (fb_set_implementation(h, "cpu/openblas") != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation failed");
    int64_t all[33];
    for (int i = 0; i < 33; i++)
        all[i] = i + 1;
    plan_gemm_spec s = {FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 33,
                        96, 64, 1.0f, 0.0f, 1, FB_ACT_SILU, 0};
    plan_check_gemm(h, &tmem_host, &s, all, 33, NULL, "cpu/openblas");
    plan_mlp_spec q = {FB_DTYPE_BF16, FB_ACT_SILU, 33, 64, 256, 64, 1, 0};
    plan_check_mlp(h, &tmem_host, &q, all, 33, NULL, "cpu/openblas");

    /* A plan made under a name that takes no m of it is not made. */
    if (fb_set_implementation(h, "cuda-lt") != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation failed");
    float w[5 * 4] = {0}, x[2 * 3] = {0}, y[2 * 4]; /* Wd is 4 x 5 */
    fb_plan p = NULL;
    fb_status st = fb_plan_create_gemm(h, FB_DTYPE_F32, FB_ROW_MAJOR,
                                       FB_NO_TRANS, FB_TRANS, 2, 4, 3, 1.0f, w,
                                       3, 0.0f, NULL, FB_ACT_NONE, &p);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED && p == NULL,
           "a plan whose forced implementation takes no m: %s (%s)",
           fb_status_string(st), fb_handle_last_message(h));
    if (fb_set_implementation(h, NULL) != FB_STATUS_SUCCESS ||
        fb_plan_create_gemm(h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 2, 4, 3, 1.0f, w, 3, 0.0f, NULL,
                            FB_ACT_NONE, &p) != FB_STATUS_SUCCESS)
        tap_bail("fb_plan_create_gemm: %s", fb_handle_last_message(h));

    /* The handle takes its plans with it. */
    fb_plan q2;
    st = fb_plan_create_mlp(h, FB_DTYPE_F32, FB_ACT_RELU, 4, 3, 5, 4, w, NULL,
                            w, NULL, w, NULL, &q2);
    fb_destroy(h);
    tap_ok(st == FB_STATUS_SUCCESS &&
               fb_plan_mlp(q2, 1, x, 3, y, 4) == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(NULL) == 1 &&
               fb_plan_destroy(q2) == FB_STATUS_INVALID_ARGUMENT &&
               fb_plan_destroy(p) == FB_STATUS_INVALID_ARGUMENT,
           "fb_destroy destroys the handle's plans: they are not live after");
}

/* The plain call of forced_ms's shapes on zeros, m rows. */
static fb_status plain_forced(fb_handle h, int mlp, fb_dtype t, int64_t m)
{
    static float af[300 * 64], wf[256 * 96], cf[300 * 96];
    void *a = af, *w = wf, *c = cf; /* zeros of every type */
    if (mlp)
        return mlp_geglu_forward(h, t, FB_ACT_SILU, m, 64, 256, 96, a, 64, w,
                                 NULL, w, NULL, w, NULL, c, 96);
    switch (t) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, 96,
                              64, 1.0f, a, 64, w, 64, 0.0f, c, 96, NULL,
                              FB_ACT_SILU);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, 96,
                              64, 1.0f, a, 64, w, 64, 0.0f, c, 96, NULL,
                              FB_ACT_SILU);
    default:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, 96,
                              64, 1.0f, a, 64, w, 64, 0.0f, c, 96, NULL,
                              FB_ACT_SILU);
    }
}

/* The m (of cand, at most 12) a plan forced on name runs on name, in ms;
 * -1 if the plan cannot be made (name takes no m of it). */
static int forced_ms(fb_handle h, int mlp, fb_dtype t, const int64_t *cand,
                     int nc, int64_t *ms)
{
    enum { MAXM = 300, N = 96, K = 64, H = 256 };
    static float w[N * H];
    fb_plan p = NULL;
    const fb_status st =
        mlp ? fb_plan_create_mlp(h, t, FB_ACT_SILU, MAXM, K, H, N, w, NULL, w,
                                 NULL, w, NULL, &p)
            : fb_plan_create_gemm(h, t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                                  MAXM, N, K, 1.0f, w, K, 0.0f, NULL,
                                  FB_ACT_SILU, &p);
    if (st != FB_STATUS_SUCCESS)
        return st == FB_STATUS_NOT_SUPPORTED ? -1 : -2;
    int n = 0;
    for (int i = 0; i < nc && n < 12; i++)
        if (fb_plan_path(p, cand[i])[0] != '\0')
            ms[n++] = cand[i];
    if (fb_plan_destroy(p) != FB_STATUS_SUCCESS)
        tap_bail("fb_plan_destroy failed");
    return n;
}

/* Every CPU implementation forced in turn: a plan made under its name
 * gives the plain call's bits on every m it takes; where it takes none
 * (not on this CPU), neither the plan nor the plain call runs. */
static void every_implementation(void)
{
    static const char *const names[] = {
        "cpu/small-m-avx512", "cpu/small-m-avx2", "cpu/bf16-amx",
        "cpu/bf16-avx512bf16", "cpu/f32-small-k", "cpu/f32-avx512",
        "cpu/openblas"};
    static const int64_t cand[] = {1, 2, 5, 16, 17, 31, 32, 33, 64, 100,
                                   255, 300};
    const int nc = (int)(sizeof cand / sizeof cand[0]);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fb_handle h = handle_on(FB_BACKEND_CPU);
        if (fb_set_implementation(h, names[i]) != FB_STATUS_SUCCESS)
            tap_bail("fb_set_implementation(%s): %s", names[i],
                     fb_handle_last_message(h));
        for (int d = 0; d < 3; d++)
            for (int mlp = 0; mlp < 2; mlp++) {
                const fb_dtype t = all_dtypes[d];
                int64_t ms[12];
                const int n = forced_ms(h, mlp, t, cand, nc, ms);
                if (n == -2)
                    tap_bail("%s: plan creation failed: %s", names[i],
                             fb_handle_last_message(h));
                if (n <= 0) {
                    /* The plain call forced on the name must refuse too,
                     * for few rows and for many. */
                    int refused = 1;
                    for (int64_t m = 1; m <= 100; m += 99) {
                        const fb_status st = plain_forced(h, mlp, t, m);
                        refused &= st == FB_STATUS_NOT_SUPPORTED;
                    }
                    tap_ok(refused, "%s takes no m of a %s %s plan (not on "
                           "this CPU or not this dtype), nor the plain call "
                           "at m = 1 and 100", names[i], dt_name(t),
                           mlp ? "mlp" : "gemm");
                    continue;
                }
                if (mlp) {
                    plan_mlp_spec q = {t, FB_ACT_SILU, 300, 64, 256, 96, 1,
                                       0};
                    plan_check_mlp(h, &tmem_host, &q, ms, n, NULL, names[i]);
                } else {
                    plan_gemm_spec g = {t, FB_ROW_MAJOR, FB_NO_TRANS,
                                        FB_TRANS, 300, 96, 64, 1.0f, 0.0f,
                                        1, FB_ACT_SILU, 0};
                    plan_check_gemm(h, &tmem_host, &g, ms, n, NULL,
                                    names[i]);
                }
            }
        fb_destroy(h);
    }
}

int main(void)
{
    tap_begin("test_plan");
    fb_handle h = handle_on(FB_BACKEND_CPU);
    plan_check_bad_args(h, &tmem_host);
    sweeps(h);
    fb_destroy(h);
    forced();
    every_implementation();
    return tap_end();
}
