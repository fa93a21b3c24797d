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
 * FUSEDBLAS_CPU_SGEMM says (read once per process, env.h); the gemm and
 * MLP implementations on this kernel (cpu_impl.h: fb_cpu_gemm_f32,
 * fb_cpu_mlp_f32) apply only where it says yes:
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

#endif /* FB_CPU_F32_GEMM_H */
