/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_passes.h -- the elementwise passes of the unfused CPU baseline: what
 * a framework runs after OpenBLAS's GEMM (bias + activation, the GeGLU
 * product, dtype conversions). OpenMP across rows or columns, SIMD within,
 * compiled for AVX-512, AVX2 and baseline x86-64 and picked at run time,
 * with vectorisable exp and erf: a strong baseline, not a strawman.
 */
#ifndef FB_BENCH_CPU_PASSES_H
#define FB_BENCH_CPU_PASSES_H

#include <stdint.h>
#include "fusedblas.h"

/* c (m x n, leading dimension ldc) <- act(c + bias), in place; bias may be
 * NULL. */
void bench_pass_bias_act_f32(float *c, int64_t m, int64_t n, int64_t ldc,
                             const float *bias, fb_activation act);

/* out (m x n, contiguous, 16-bit dtype) <- act(c + bias), c contiguous. */
void bench_pass_bias_act_to16(const float *c, int64_t m, int64_t n,
                              const float *bias, fb_activation act,
                              fb_dtype out_type, void *out);

/* out (m x h, contiguous, out_type) <- act(g + bg) .* (u + bu); biases may
 * be NULL. */
void bench_pass_geglu(const float *g, const float *u, int64_t m, int64_t h,
                      const float *bg, const float *bu, fb_activation act,
                      fb_dtype out_type, void *out);

/* Whole-array conversions between fp32 and a 16-bit dtype. */
void bench_convert_to_f32(fb_dtype in_type, const void *in, float *out,
                          int64_t count);
void bench_convert_from_f32(fb_dtype out_type, const float *in, void *out,
                            int64_t count);

/* The pass's activation for one value (the same polynomial code), for
 * checking the passes against libm. */
float bench_act_scalar(fb_activation act, float x);

#endif /* FB_BENCH_CPU_PASSES_H */
