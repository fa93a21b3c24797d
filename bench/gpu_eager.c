/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_eager.c -- the GPU baseline: the kernel sequence PyTorch eager runs.
 *
 *   nn.Linear + act:  cuBLAS GEMM, then one kernel: act(y + b)
 *   gated MLP:        GEMM gate -> G; act(G + bg) in place;
 *                     GEMM up -> U; G <- G .* (U + bu);
 *                     GEMM down -> Y; Y + bd (only with a bias)
 *
 * PyTorch folds a bias into its GEMM (addmm / cuBLASLt's bias epilogue);
 * here it is folded into the next elementwise kernel instead, which keeps
 * the same number of launches and bytes, except for the down projection's
 * bias, which costs one extra small kernel (noted in RESULTS.md). G and U
 * are stored in the data type, as PyTorch stores them. Also the GEMMs
 * alone, the floor for everything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include "config.h"

#ifdef HAVE_CUDA
#include "eager_baseline.h"
#include "gpu_impl.h"

typedef struct eager_state {
    bench_gpu *g;
    bench_case c;
    const bench_set *sets;
    int gemm_only;
    void *gate, *up; /* mlp: m x h each, device */
    char message[160];
} eager_state;

cublasStatus_t bench_gpu_gemm_xwt(const bench_gpu *g, fb_dtype t, int64_t m,
                                  int64_t n, int64_t k, const void *x,
                                  const void *w, void *y)
{
    return bench_gpu_gemm_xw(g, t, m, n, k, x, w, 0, y);
}

cublasStatus_t bench_gpu_gemm_xw(const bench_gpu *g, fb_dtype t, int64_t m,
                                 int64_t n, int64_t k, const void *x,
                                 const void *w, int w_kn, void *y)
{
    const float alpha = 1.0f, beta = 0.0f;
    cudaDataType_t dt = t == FB_DTYPE_F32   ? CUDA_R_32F
                        : t == FB_DTYPE_F16 ? CUDA_R_16F
                                            : CUDA_R_16BF;
    cublasComputeType_t ct = t == FB_DTYPE_F32 && g->tf32
                                 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                 : CUBLAS_COMPUTE_32F;
    /* Column-major view: y^T (n x m) = w (as k x n, transposed; w_kn: as
     * n x k) * x^T. */
    return cublasGemmEx(g->cublas, w_kn ? CUBLAS_OP_N : CUBLAS_OP_T,
                        CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, w, dt,
                        w_kn ? (int)n : (int)k, x, dt, (int)k, &beta, y, dt,
                        (int)n, ct, CUBLAS_GEMM_DEFAULT);
}

static void eager_fini(void *state)
{
    eager_state *s = state;
    if (s == NULL)
        return;
    cudaFree(s->gate);
    cudaFree(s->up);
    free(s);
}

static bench_outcome init_common(void **state, bench_gpu *g, const bench_case *c,
                                 const bench_set *sets, int gemm_only,
                                 char *why, size_t len)
{
    eager_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->g = g;
    s->c = *c;
    s->sets = sets;
    s->gemm_only = gemm_only;
    if (c->routine == BENCH_MLP) {
        size_t bytes = (size_t)(c->m * c->h) * (c->dtype == FB_DTYPE_F32 ? 4 : 2);
        if (cudaMalloc(&s->gate, bytes) != cudaSuccess ||
            cudaMalloc(&s->up, bytes) != cudaSuccess) {
            cudaGetLastError();
            snprintf(why, len, "out of device memory for G and U");
            return BENCH_SKIPPED;
        }
    }
    snprintf(s->message, sizeof s->message, "cublasGemmEx%s",
             gemm_only ? "" : " + eager kernels");
    return BENCH_RAN;
}

static bench_outcome eager_init(void **state, bench_gpu *g, const bench_case *c,
                                const bench_set *sets, int nsets, char *why,
                                size_t len)
{
    (void)nsets;
    return init_common(state, g, c, sets, 0, why, len);
}

static bench_outcome gemm_only_init(void **state, bench_gpu *g,
                                    const bench_case *c, const bench_set *sets,
                                    int nsets, char *why, size_t len)
{
    (void)nsets;
    return init_common(state, g, c, sets, 1, why, len);
}

static int fail(eager_state *s, const char *what, int code)
{
    snprintf(s->message, sizeof s->message, "%s failed (%d)", what, code);
    return -1;
}

static int eager_run(void *state, int j)
{
    eager_state *s = state;
    const bench_gpu *g = s->g;
    const bench_case *c = &s->c;
    const bench_set *set = &s->sets[j];
    fb_dtype t = c->dtype;
    void *st = g->stream;
    cublasStatus_t cs;
    int e;
    if (c->routine == BENCH_GEMM) {
        if ((cs = bench_gpu_gemm_xw(g, t, c->m, c->n, c->k, set->x, set->w,
                                    c->weights_kn, set->y)))
            return fail(s, "cublasGemmEx", cs);
        if (!s->gemm_only && (c->act != FB_ACT_NONE || set->b) &&
            (e = fbb_eager_bias_act(t, c->act, c->m, c->n, set->y, c->n, set->b, st)))
            return fail(s, "bias+act kernel", e);
        return 0;
    }
    if ((cs = bench_gpu_gemm_xwt(g, t, c->m, c->h, c->k, set->x, set->wg, s->gate)))
        return fail(s, "cublasGemmEx gate", cs);
    if (!s->gemm_only && (c->act != FB_ACT_NONE || set->bg) &&
        (e = fbb_eager_bias_act(t, c->act, c->m, c->h, s->gate, c->h, set->bg, st)))
        return fail(s, "act kernel", e);
    if ((cs = bench_gpu_gemm_xwt(g, t, c->m, c->h, c->k, set->x, set->wu, s->up)))
        return fail(s, "cublasGemmEx up", cs);
    if (!s->gemm_only && (e = fbb_eager_mul(t, c->m, c->h, s->gate, s->up, set->bu, st)))
        return fail(s, "mul kernel", e);
    if ((cs = bench_gpu_gemm_xwt(g, t, c->m, c->n, c->h, s->gate, set->wd, set->y)))
        return fail(s, "cublasGemmEx down", cs);
    if (!s->gemm_only && set->bd &&
        (e = fbb_eager_bias_act(t, FB_ACT_NONE, c->m, c->n, set->y, c->n, set->bd, st)))
        return fail(s, "bias kernel", e);
    return 0;
}

static const char *eager_message(void *state)
{
    return ((eager_state *)state)->message;
}

const bench_gpu_impl bench_gpu_eager = {
    BENCH_IMPL_EAGER, BENCH_BASELINE, eager_init, eager_run, eager_message,
    eager_fini,
};

const bench_gpu_impl bench_gpu_cublas_gemm = {
    BENCH_IMPL_CUBLAS_GEMM, BENCH_REFERENCE, gemm_only_init, eager_run,
    eager_message, eager_fini,
};

#endif /* HAVE_CUDA */
