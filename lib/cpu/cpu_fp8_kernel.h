/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_kernel.h -- dot products of fp32 rows with e4m3 weight rows, the
 * core of the CPU e4m3 routines: the weights are read as their bytes and
 * widened (exactly) in registers, a short chunk at a time, so a decode
 * call streams one byte per weight.
 */
#ifndef FB_CPU_FP8_KERNEL_H
#define FB_CPU_FP8_KERNEL_H

#include <stdint.h>

/* x panels are padded to whole vectors: ld >= fb_cpu_e4m3_panel_ld(k),
 * with zeros in columns k.. of each row. */
int64_t fb_cpu_e4m3_panel_ld(int64_t k);

/* out[i * ldo + j] = sum_p x[i * ldx + p] * q(j, p)   (overwritten)
 * for i < m, j < n, p < k, where q(j, p) is the value of the e4m3 byte
 * w[j * w_cs + p * w_ks]; fp32 products and sums (the order unspecified),
 * so NaN and Inf propagate as IEEE arithmetic has them. x as described
 * above. Single-threaded: callers split n. Fastest with w_ks == 1. */
void fb_cpu_e4m3_dots(int64_t m, int64_t n, int64_t k, const float *x,
                      int64_t ldx, const uint8_t *w, int64_t w_cs,
                      int64_t w_ks, float *out, int64_t ldo);

/* What fb_cpu_e4m3_dots runs on: "avx512", "avx2" or "c". */
const char *fb_cpu_e4m3_isa(void);

#endif /* FB_CPU_FP8_KERNEL_H */
