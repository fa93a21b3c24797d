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

int main(void)
{
    tap_begin("test_plan");
    fb_handle h = handle_on(FB_BACKEND_CPU);
    plan_check_bad_args(h, &tmem_host);
    sweeps(h);
    fb_destroy(h);
    forced();
    return tap_end();
}
