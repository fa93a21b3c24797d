/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_fusedblas_e4m3.c -- fusedblas's GPU path with FP8 (e4m3) weights, on
 * the same cases as the 16-bit rows: each set's device weights are read
 * back, quantised row-wise on the host (fb_quantize_e4m3_rows) and put in
 * device memory before the timing; the timed call is gemm_e4m3_bias_act /
 * mlp_geglu_forward_e4m3 on backend cuda, on the set's activations,
 * biases and output. Its output differs from the others by the
 * quantisation, so the runner leaves it out of the baseline check
 * (tests/test_gpu_fp8 checks it against the dequantised weights).
 */
#include <stdio.h>
#include <stdlib.h>
#include "config.h"

#ifdef HAVE_CUDA
#include "bench_fusedblas_impl.h"
#include "gpu_impl.h"

static int device_read(const void *src, size_t bytes, void **copy, char *why,
                       size_t len)
{
    *copy = malloc(bytes);
    if (*copy == NULL) {
        snprintf(why, len, "out of host memory for the e4m3 weights");
        return -1;
    }
    if (cudaMemcpy(*copy, src, bytes, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
        snprintf(why, len, "reading the weights back failed");
        return -1;
    }
    return 0;
}

/* One allocation a weight: the bytes, then the scales at the next
 * 256-byte boundary. */
static int device_keep(bench_e4m3_weight *w, fb_e4m3 *q, float *s,
                       size_t count, int64_t rows, char *why, size_t len)
{
    const size_t off = (count + 255) / 256 * 256;
    void *d = NULL;
    int rc = -1;
    if (cudaMalloc(&d, off + (size_t)rows * sizeof *s) != cudaSuccess) {
        snprintf(why, len, "out of device memory for the e4m3 weights");
        goto out;
    }
    if (cudaMemcpy(d, q, count, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy((char *)d + off, s, (size_t)rows * sizeof *s,
                   cudaMemcpyHostToDevice) != cudaSuccess) {
        snprintf(why, len, "copying the e4m3 weights failed");
        cudaFree(d);
        goto out;
    }
    w->q = d;
    w->s = (float *)((char *)d + off);
    rc = 0;
out:
    free(q), free(s);
    return rc;
}

static void device_release(bench_e4m3_weight *w)
{
    cudaFree(w->q);
}

static const bench_e4m3_memory device_memory = {device_read, device_keep,
                                                device_release};

static bench_outcome e4g_init(void **state, bench_gpu *g, const bench_case *c,
                              const bench_set *sets, int nsets, char *why,
                              size_t len)
{
    /* no math mode: the e4m3 routines have no TF32 form */
    const bench_fb_setup setup = {.backend = FB_BACKEND_CUDA,
                                  .cuda = 1,
                                  .device = g->device,
                                  .stream = (void *)g->stream};
    bench_outcome o = bench_fb_start(state, &setup, c, sets, nsets, why, len);
    return o == BENCH_RAN
               ? bench_fb_make_e4m3(*state, &device_memory, why, len)
               : o;
}

const bench_gpu_impl bench_gpu_fb_cuda_e4m3 = {
    BENCH_IMPL_CUDA_E4M3, BENCH_OURS, e4g_init, bench_fb_run_e4m3,
    bench_fb_message, bench_fb_fini,
};

#endif /* HAVE_CUDA */
