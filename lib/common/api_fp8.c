/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api_fp8.c -- gemm_e4m3_bias_act and mlp_geglu_forward_e4m3: check, then
 * dispatch.
 */
#include "check_fp8.h"
#include "dispatch.h"
#include "dispatch_fp8.h"
#include "handle.h"

FB_EXPORT fb_status gemm_e4m3_bias_act(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const void *A, int64_t lda, const fb_e4m3 *B, int64_t ldb,
    const float *b_scale, float beta, void *C, int64_t ldc,
    const void *bias, fb_activation act)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    const fb_e4m3_gemm_call call = {dtype, layout, transa, transb, m, n, k,
                                    alpha, A, lda, B, ldb, b_scale, beta,
                                    C, ldc, bias, act};
    char msg[256];
    int arg = fb_check_gemm_e4m3(&call, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg,
                              "gemm_e4m3_bias_act: %s", msg);
    fb_e4m3_gemm_problem p;
    fb_gemm_e4m3_describe(&call, &p);
    const fb_operand ops[] = {
        {A, 10}, {B, 12}, {b_scale, 14}, {C, 16}, {bias, 18}};
    return fb_dispatch_gemm_e4m3(h, "gemm_e4m3_bias_act", &p, ops, 5);
}

FB_EXPORT fb_status mlp_geglu_forward_e4m3(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h_dim, int64_t n, const void *X, int64_t ldx,
    const fb_e4m3 *Wg, const float *sg, const void *bg, const fb_e4m3 *Wu,
    const float *su, const void *bu, const fb_e4m3 *Wd, const float *sd,
    const void *bd, void *Y, int64_t ldy)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    const fb_e4m3_mlp_problem p = {
        dtype, gate_act, m, k, h_dim, n, X, ldx,
        (const uint8_t *)Wg, (const uint8_t *)Wu, (const uint8_t *)Wd,
        sg, su, sd, bg, bu, bd, Y, ldy};
    char msg[256];
    int arg = fb_check_mlp_e4m3(&p, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg,
                              "mlp_geglu_forward_e4m3: %s", msg);
    const fb_operand ops[] = {{X, 8},   {Wg, 10}, {sg, 11}, {bg, 12},
                              {Wu, 13}, {su, 14}, {bu, 15}, {Wd, 16},
                              {sd, 17}, {bd, 18}, {Y, 19}};
    return fb_dispatch_mlp_e4m3(h, "mlp_geglu_forward_e4m3", &p, ops, 11);
}
