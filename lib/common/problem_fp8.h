/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * problem_fp8.h -- a checked e4m3-weight call, as every backend consumes it.
 *
 * The gemm is described in "token x channel" form rather than normalised to
 * column-major: out(i, j) = act(alpha * s[j] * sum_p x(i, p) q(j, p)
 * + beta * out(i, j) + bias[j]), with every operand addressed by two
 * element strides. The weight side (channel j, its scale and its bias) is
 * then the same whatever the layout and transposes, and a kernel that
 * wants the weights contiguous along k (w_ks == 1, the nn.Linear case in
 * either layout) tests one stride. Plain C, shared with the CUDA module.
 */
#ifndef FB_PROBLEM_FP8_H
#define FB_PROBLEM_FP8_H

#include <stdint.h>
#include "problem.h"

/* x(i, p) = x[i * x_ts + p * x_ks], q(j, p) = w[j * w_cs + p * w_ks],
 * out(i, j) = c[i * c_ts + j * c_cs]; i < m tokens, j < n channels,
 * p < k. x, c and bias are of dtype; w is e4m3; scale is fp32. */
typedef struct fb_e4m3_gemm_problem {
    fb_dtype dtype;
    int64_t m, n, k;
    float alpha, beta;
    const void *x;
    int64_t x_ts, x_ks;
    const uint8_t *w;
    int64_t w_cs, w_ks;
    const float *scale;
    void *c;
    int64_t c_ts, c_cs;
    const void *bias; /* n elements of dtype, or NULL */
    fb_activation act;
} fb_e4m3_gemm_problem;

/* mlp_geglu_forward_e4m3 as documented: row-major throughout, weights
 * contiguous [out, in], one scale per output row. */
typedef struct fb_e4m3_mlp_problem {
    fb_dtype dtype;
    fb_activation gate_act;
    int64_t m, k, h, n;
    const void *x;
    int64_t ldx;
    const uint8_t *wg, *wu, *wd;
    const float *sg, *su, *sd;
    const void *bg, *bu, *bd;
    void *y;
    int64_t ldy;
} fb_e4m3_mlp_problem;

/* The value of an e4m3 byte, in any C or CUDA code that includes this:
 * exact; NaN for S.1111.111. */
static inline float fb_e4m3_value(uint8_t b)
{
    const int e = (b >> 3) & 15, mant = b & 7;
    float v;
    if ((b & 0x7f) == 0x7f)
        v = __builtin_nanf("");
    else if (e == 0)
        v = (float)mant * 0x1p-9f;
    else
        v = (float)(8 + mant) * (float)(1 << e) * 0x1p-10f;
    return (b & 0x80) ? -v : v;
}

#endif /* FB_PROBLEM_FP8_H */
