/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_gemm.h -- fp32 GEMM on AVX-512F FMA for gemm_bias_act and the
 * fp32 MLP, wherever the CPU runs AVX-512F (the rule below).
 *
 * Operands are packed into panels in the handle's workspace and a 32 x 12
 * register block of accumulators runs over them (cpu_f32_kernel.h); the
 * epilogue is applied per block of C while it is in cache.
 */
#ifndef FB_CPU_F32_GEMM_H
#define FB_CPU_F32_GEMM_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* Whether fp32 GEMMs go to this kernel rather than OpenBLAS, as
 * FUSEDBLAS_CPU_SGEMM says (read once per process, env.h):
 *   FUSEDBLAS_CPU_SGEMM=own       the kernel, wherever AVX-512F runs
 *                                 (below FB_SMALL_K_MAX the small-k one,
 *                                 cpu_f32_small_k.h);
 *   FUSEDBLAS_CPU_SGEMM=packed    this kernel, even for a small k;
 *   FUSEDBLAS_CPU_SGEMM=openblas  never;
 *   unset, empty or auto          as own: it ran faster than
 *                                 OpenBLAS's AVX-512 and AVX2 kernels
 *                                 (docs/cpu-kernels.md).
 * Any other value is an invalid environment, in which nothing runs.
 * Logged under FUSEDBLAS_VERBOSE. */
int fb_cpu_f32_kernel_chosen(fb_handle h);

/* Whether fb_cpu_f32_gemm takes p: fp32, something to multiply (k > 0,
 * alpha != 0), and fb_cpu_f32_kernel_chosen. */
int fb_cpu_f32_gemm_applies(fb_handle h, const fb_gemm_problem *p);

/* Run p (which fb_cpu_f32_gemm_applies) on up to threads OpenMP threads.
 * Returns 1: *st is the call's status, path says what ran or why it
 * failed. A workspace for the packed operands that cannot be had is
 * FB_STATUS_ALLOC_FAILED with nothing written, not a fall back to
 * OpenBLAS, whose own first allocation retries forever. */
int fb_cpu_f32_gemm(fb_handle h, const fb_gemm_problem *p, int threads,
                    fb_status *st, char *path, size_t len);

/* The same for mlp_geglu_forward (cpu_f32_mlp.c): fp32 data, k > 0,
 * h > 0, more than min_rows rows (fewer are the decode kernel's), and
 * fb_cpu_f32_kernel_chosen. fb_cpu_f32_mlp too returns 1, with
 * FB_STATUS_ALLOC_FAILED and nothing written when it cannot get its
 * workspace. */
int fb_cpu_f32_mlp_applies(fb_handle h, const fb_mlp_problem *p,
                           int64_t min_rows);
int fb_cpu_f32_mlp(fb_handle h, const fb_mlp_problem *p, fb_status *st,
                   char *path, size_t len);

#endif /* FB_CPU_F32_GEMM_H */
