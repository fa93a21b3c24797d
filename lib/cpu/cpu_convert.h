/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_convert.h -- 16-bit storage types <-> fp32 panels, vectorised.
 */
#ifndef FB_CPU_CONVERT_H
#define FB_CPU_CONVERT_H

#include <stdint.h>
#include "problem.h"

/* dst[i] = float(src[i]) for n elements of dtype (F16 or BF16). */
void fb_cpu_to_f32(fb_dtype dtype, const void *src, float *dst, int64_t n);

/* dst[i] = round_to_dtype(src[i]), round to nearest even, NaN kept. */
void fb_cpu_from_f32(fb_dtype dtype, const float *src, void *dst, int64_t n);

/* Round fp32 values to dtype's precision and back, in place (what storing
 * an intermediate in the input type does to it). */
void fb_cpu_round_to(fb_dtype dtype, float *x, int64_t n);

/* Pack a rows x cols column-major matrix of dtype (leading dimension ld)
 * into dst as fp32 with leading dimension rows. */
void fb_cpu_pack_f32(fb_dtype dtype, const void *src, int64_t ld,
                     int64_t rows, int64_t cols, float *dst);

#endif /* FB_CPU_CONVERT_H */
