/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fp8_check.h -- gemm_e4m3_bias_act and mlp_geglu_forward_e4m3 cases run
 * on one target (a handle and the memory its operands live in) and checked
 * against the double-precision oracle of the dequantised weights: every
 * element of the output window in the bound of harness.h (one rounding
 * more: the scale), or, on integer-valued data whose fp32 sums are exact,
 * equal to the correctly rounded exact value; every byte outside the
 * window and every input unchanged. test_fp8 runs them on the CPU,
 * test_gpu_fp8 on the GPU paths.
 */
#ifndef FB_TEST_FP8_CHECK_H
#define FB_TEST_FP8_CHECK_H

#include "harness.h"

typedef struct fp8_target {
    const char *name;
    fb_handle handle;
    const tmem *mem;
    tarith arith_f32; /* the arithmetic the path may use for fp32 data */
    tarith arith_16;  /* and for fp16 and bf16 data */
    int f32;          /* whether the path takes fp32 activations */
} fp8_target;

/* One gemm case; exact: integer-valued data (see fp8_check.c). pad: added
 * to every leading dimension. Returns 1 if the TAP point passed. */
int fp8_gemm_case(const fp8_target *t, fb_dtype dt, fb_layout lay,
                  fb_transpose ta, fb_transpose tb, int64_t m, int64_t n,
                  int64_t k, float alpha, float beta, int bias,
                  fb_activation act, int exact, int64_t pad);

int fp8_mlp_case(const fp8_target *t, fb_dtype dt, fb_activation act,
                 int64_t m, int64_t k, int64_t h, int64_t n, int biases,
                 int exact, int64_t pad);

/* The sweeps: shapes across every layout, transpose pair, dtype,
 * activation, beta and bias, on exact and on random data; decode shapes
 * (1..70 rows) with ragged k and n, and the shapes the GPU's decode
 * kernels take (aligned rows, k a multiple of 16 or padded to one, up to
 * 16 rows). Each point's label ends with the path that ran. */
void fp8_sweep_gemm(const fp8_target *t);
void fp8_sweep_mlp(const fp8_target *t);

#endif /* FB_TEST_FP8_CHECK_H */
