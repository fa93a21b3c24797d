/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api_gemm.c -- sgemm_bias_act, hgemm_bias_act, bgemm_bias_act: typed doors
 * onto one generic path (check, normalise to column-major, dispatch).
 */
#include "check.h"
#include "dispatch.h"
#include "handle.h"

static fb_status gemm_bias_act(fb_handle handle, const char *routine,
                               const fb_gemm_call *call)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    char msg[192];
    int arg = fb_check_gemm(call, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg, "%s: %s",
                              routine, msg);

    fb_gemm_problem p;
    fb_gemm_normalise(call, &p);
    const fb_operand ops[] = {
        {call->a, 9}, {call->b, 11}, {call->c, 14}, {call->bias, 16}};
    return fb_dispatch_gemm(h, routine, &p, ops, 4);
}

#define FB_DEFINE_GEMM_BIAS_ACT(NAME, T, DTYPE)                               \
    FB_EXPORT fb_status NAME(                                                  \
        fb_handle handle, fb_layout layout, fb_transpose transa,               \
        fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,     \
        const T *A, int64_t lda, const T *B, int64_t ldb, float beta, T *C,    \
        int64_t ldc, const T *bias, fb_activation act)                         \
    {                                                                          \
        const fb_gemm_call call = {DTYPE, layout, transa, transb, m, n, k,     \
                                   alpha, A, lda, B, ldb, beta, C, ldc, bias,  \
                                   act};                                       \
        return gemm_bias_act(handle, #NAME, &call);                            \
    }

FB_DEFINE_GEMM_BIAS_ACT(sgemm_bias_act, float, FB_DTYPE_F32)
FB_DEFINE_GEMM_BIAS_ACT(hgemm_bias_act, fb_half, FB_DTYPE_F16)
FB_DEFINE_GEMM_BIAS_ACT(bgemm_bias_act, fb_bfloat16, FB_DTYPE_BF16)
