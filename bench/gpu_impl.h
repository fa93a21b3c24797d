/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_impl.h -- one implementation the GPU runner times: a fusedblas GPU
 * path, or a baseline built from cuBLAS and the eager kernels. Each
 * enqueues one call on the runner's stream per run() and never
 * synchronises; the runner times with CUDA events around it.
 * Only compiled with HAVE_CUDA.
 */
#ifndef FB_BENCH_GPU_IMPL_H
#define FB_BENCH_GPU_IMPL_H

#include <stddef.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include "bench.h"

/* What every GPU implementation shares: device, stream, cuBLAS handle. */
typedef struct bench_gpu {
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;
    int tf32; /* fp32 may use TF32 (--tf32), for cuBLAS and fusedblas alike */
} bench_gpu;

typedef struct bench_gpu_impl {
    const char *name;
    bench_kind kind;
    /* BENCH_RAN when ready; otherwise why not (in why). sets hold device
     * pointers. */
    bench_outcome (*init)(void **state, bench_gpu *g, const bench_case *c,
                          const bench_set *sets, int nsets, char *why,
                          size_t len);
    /* Enqueue one call on set s: 0; 1 not supported ("n/a"); -1 failed. */
    int (*run)(void *state, int s);
    /* The path that ran, or why the last run failed; may be NULL. */
    const char *(*message)(void *state);
    void (*fini)(void *state);
} bench_gpu_impl;

extern const bench_gpu_impl bench_gpu_eager;        /* cublas+eager */
extern const bench_gpu_impl bench_gpu_cublas_gemm;  /* the GEMMs alone */
extern const bench_gpu_impl bench_gpu_fb_cuda;      /* fusedblas/cuda */
extern const bench_gpu_impl bench_gpu_fb_cuda_lt;   /* fusedblas/cuda-lt */
extern const bench_gpu_impl bench_gpu_fb_cuda_fused;/* fusedblas/cuda-fused */
extern const bench_gpu_impl bench_gpu_fb_cuda_plan; /* fusedblas/cuda-plan */
/* fusedblas/cuda with e4m3 copies of the weights: its output is not held
 * to the baseline's check (the quantisation changes it). */
extern const bench_gpu_impl bench_gpu_fb_cuda_e4m3;

/* Row-major y (m x n) = x (m x k) w^T, w n x k, with cublasGemmEx in the
 * data type, fp32 accumulation (TF32 for fp32 only when g->tf32): the
 * call PyTorch makes for F.linear. */
cublasStatus_t bench_gpu_gemm_xwt(const bench_gpu *g, fb_dtype t, int64_t m,
                                  int64_t n, int64_t k, const void *x,
                                  const void *w, void *y);
/* The same with w_kn: w stored k x n, y = x w. */
cublasStatus_t bench_gpu_gemm_xw(const bench_gpu *g, fb_dtype t, int64_t m,
                                 int64_t n, int64_t k, const void *x,
                                 const void *w, int w_kn, void *y);

#endif /* FB_BENCH_GPU_IMPL_H */
