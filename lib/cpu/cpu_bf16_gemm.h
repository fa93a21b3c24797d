/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_gemm.h -- bf16 GEMM on AMX (TDPBF16PS) or AVX512-BF16
 * (VDPBF16PS), fp32 accumulation, for gemm_bias_act and the three GEMMs
 * of the bf16 MLP.
 *
 * Operands are packed k-pair interleaved (the two bf16 of one k-pair in
 * one 32-bit word) into the workspace, and a block of fp32 accumulators
 * (AMX tiles, or a 32 x 12 register block) runs over them. Both
 * instructions read denormal inputs as zero and flush denormal products
 * and sums, where IEEE fp32 keeps them; the implementations (cpu_impl.h:
 * fb_cpu_gemm_bf16_amx, fb_cpu_gemm_bf16, and the MLP's) find the calls
 * where that could happen (a denormal input, or tiny values meeting tiny
 * values: see fb_bf16_products_exact) before they start, and do not apply
 * to them.
 */
#ifndef FB_CPU_BF16_GEMM_H
#define FB_CPU_BF16_GEMM_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* Non-zero if this CPU has AVX512-BF16 and FUSEDBLAS_CPU_NO_BF16 is not
 * 1 (read once per process, env.h). */
int fb_cpu_bf16_available(void);

/* The weights of p (op(A): p->weight_is_a) packed for AMX's entry
 * (fb_cpu_gemm_bf16_amx) as its pack() leaves a plan's, but read from e4m3
 * rows (w, ldw bytes apart) widened exactly on the way: for
 * gemm_e4m3_bias_act (cpu_fp8_wide.c). dst: pack_bytes(p) bytes. */
void fb_cpu_bf16_amx_pack_e4m3(const fb_gemm_problem *p, const void *w,
                               int64_t ldw, int threads, void *dst);

#endif /* FB_CPU_BF16_GEMM_H */
