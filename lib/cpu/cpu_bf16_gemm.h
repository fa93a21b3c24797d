/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_gemm.h -- bf16 GEMM on AVX512-BF16 (VDPBF16PS), fp32
 * accumulation, for gemm_bias_act and the three GEMMs of the bf16 MLP.
 *
 * Operands are packed k-pair interleaved (the two bf16 of one k-pair in
 * one 32-bit word) into the workspace, and a 32 x 12 register block of
 * fp32 accumulators runs over them. VDPBF16PS reads denormal inputs as
 * zero and flushes denormal products and sums, where IEEE fp32 keeps
 * them; the implementations (cpu_impl.h: fb_cpu_gemm_bf16,
 * fb_cpu_mlp_bf16) find the calls where that could happen (a denormal
 * input, or tiny values meeting tiny values: see fb_bf16_products_exact)
 * before they start, and do not apply to them.
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

#endif /* FB_CPU_BF16_GEMM_H */
