/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_gemm.h -- bf16 GEMM on AVX512-BF16 (VDPBF16PS), fp32
 * accumulation, for gemm_bias_act and the three GEMMs of the bf16 MLP.
 *
 * Operands are packed k-pair interleaved (the two bf16 of one k-pair in
 * one 32-bit word) into the handle's workspace, and a 32 x 12 register
 * block of fp32 accumulators runs over them. VDPBF16PS reads denormal
 * inputs as zero and flushes denormal products and sums, where IEEE fp32
 * keeps them; the packing finds the calls where that could happen (a
 * denormal input, or tiny values meeting tiny values: see
 * fb_bf16_products_exact) and they decline, nothing written; the caller
 * then takes its fp32 path.
 */
#ifndef FB_CPU_BF16_GEMM_H
#define FB_CPU_BF16_GEMM_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* The register block: rows of op(A) by columns of op(B). */
#define FB_BF16_MR 32
#define FB_BF16_NR 12

/* Non-zero if this CPU has AVX512-BF16 and FUSEDBLAS_CPU_NO_BF16 is not
 * 1 (read once per process, env.h). */
int fb_cpu_bf16_available(void);

/* Whether fb_cpu_bf16_gemm takes p: bf16, something to multiply
 * (k > 0, alpha != 0), and the kernel available. */
int fb_cpu_bf16_gemm_applies(const fb_gemm_problem *p);

/* Run p (which fb_cpu_bf16_gemm_applies) on up to threads OpenMP threads.
 * Returns 1 if it ran the call: *st is its status (FB_STATUS_ALLOC_FAILED,
 * nothing written, when its workspace cannot be had: another path would
 * only need memory too), path says what ran or why it failed. Returns 0
 * if it declined (inputs the kernel would not get exactly right, above;
 * logged under FUSEDBLAS_VERBOSE): nothing was written to C, and the
 * caller runs the call another way. */
int fb_cpu_bf16_gemm(fb_handle h, const fb_gemm_problem *p, int threads,
                     fb_status *st, char *path, size_t len);

/* The same for mlp_geglu_forward (cpu_bf16_mlp.c): bf16 data, k > 0,
 * h > 0, and more than min_rows rows (fewer are the decode kernel's);
 * it too declines only for inputs it would get wrong. */
int fb_cpu_bf16_mlp_applies(const fb_mlp_problem *p, int64_t min_rows);
int fb_cpu_bf16_mlp(fb_handle h, const fb_mlp_problem *p, fb_status *st,
                    char *path, size_t len);

#endif /* FB_CPU_BF16_GEMM_H */
