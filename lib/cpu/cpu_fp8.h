/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8.h -- the CPU backend's e4m3-weight routines.
 */
#ifndef FB_CPU_FP8_H
#define FB_CPU_FP8_H

#include <stddef.h>
#include "handle.h"
#include "problem_fp8.h"

/* Run a checked call; path receives what ran, or why it failed. */
fb_status fb_cpu_gemm_e4m3(fb_handle h, const fb_e4m3_gemm_problem *p,
                           char *path, size_t len);
fb_status fb_cpu_mlp_e4m3(fb_handle h, const fb_e4m3_mlp_problem *p,
                          char *path, size_t len);

/* From this many rows of bf16 activations on AMX (the gemm; the MLP from
 * FB_E4M3_WIDE_MLP_MIN_ROWS; both from FB_E4M3_WIDE_SMALL_ROWS where the
 * weights are at most FB_E4M3_WIDE_SMALL_BYTES), the weights are widened
 * once into the bf16 drivers' panels (cpu_fp8_wide.c): below, packing
 * large weights costs more than the e4m3 AMX path's widening per block of
 * rows (measurements in docs/fp8-weights.md). */
#define FB_E4M3_WIDE_MIN_ROWS 1024
#define FB_E4M3_WIDE_MLP_MIN_ROWS 256
#define FB_E4M3_WIDE_SMALL_ROWS 32
#define FB_E4M3_WIDE_SMALL_BYTES ((int64_t)4 << 20)
/* fp32 activations (AVX-512): the weights widened once into the fp32
 * drivers' panels from 48 rows where they take at most
 * FB_E4M3_WIDE_SMALL_BYTES, 96 up to FB_E4M3_WIDE_F32_MID_BYTES, 128
 * above; below, the e4m3 rows path, which streams a quarter of the fp32
 * bytes, is faster (docs/fp8-weights.md). */
#define FB_E4M3_WIDE_F32_SMALL_ROWS 48
#define FB_E4M3_WIDE_F32_MID_ROWS 96
#define FB_E4M3_WIDE_F32_MID_BYTES ((int64_t)16 << 20)
#define FB_E4M3_WIDE_F32_ROWS 128
/* and only up to this many e4m3 bytes (1 GiB widened): the workspace
 * takes four times the weights. */
#define FB_E4M3_WIDE_F32_MAX_BYTES ((int64_t)256 << 20)
/* The MLP only up to this many bytes of weights: above, the bf16 MLP
 * driver's row blocks run slower than the e4m3 AMX path's blocks of 80
 * rows (docs/fp8-weights.md). */
#define FB_E4M3_WIDE_MLP_MAX_BYTES ((int64_t)32 << 20)

/* That path, or FB_STATUS_NOT_SUPPORTED (nothing done) where it does not
 * take the call. */
fb_status fb_cpu_e4m3_gemm_wide(fb_handle h, const fb_e4m3_gemm_problem *p,
                                char *path, size_t len);
fb_status fb_cpu_e4m3_mlp_wide(fb_handle h, const fb_e4m3_mlp_problem *p,
                               char *path, size_t len);

#endif /* FB_CPU_FP8_H */
