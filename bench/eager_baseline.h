/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eager_baseline.h -- the elementwise CUDA kernels of the benchmark's GPU
 * baseline: what PyTorch eager launches after each cuBLAS GEMM of
 * F.linear + F.gelu, or of a gated MLP (activation with the bias folded in,
 * the GeGLU multiply). Built into the benchmark only, never into
 * libfusedblas; a plain C interface so the C benchmark can call it.
 *
 * Every function launches on stream (a cudaStream_t), never synchronises,
 * and returns 0 or the cudaError_t of the launch.
 */
#ifndef FB_EAGER_BASELINE_H
#define FB_EAGER_BASELINE_H

#include <stdint.h>
#include "fusedblas.h"

#ifdef __cplusplus
extern "C" {
#endif

/* c (m x n, row-major, leading dimension ldc) <- act(c + bias), in place;
 * bias (length n) may be NULL. Arithmetic in fp32, stored in type t. */
int fbb_eager_bias_act(fb_dtype t, fb_activation act, int64_t m, int64_t n,
                       void *c, int64_t ldc, const void *bias, void *stream);

/* a (m x n, contiguous) <- a .* (u + bias_u), bias_u (length n) may be
 * NULL: the GeGLU product, with the up projection's bias folded in. */
int fbb_eager_mul(fb_dtype t, int64_t m, int64_t n, void *a, const void *u,
                  const void *bias_u, void *stream);

/* count elements uniform in [-scale, scale), the same generator as the
 * benchmark's host fill (bench/bench_random.c), so that host and device
 * data agree for the same seed. */
int fbb_fill_uniform(fb_dtype t, void *p, int64_t count, uint64_t seed,
                     float scale, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* FB_EAGER_BASELINE_H */
