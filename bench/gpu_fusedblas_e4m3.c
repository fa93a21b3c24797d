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
#include "gpu_impl.h"

typedef struct e4g_weight {
    const void *src; /* the set's device weight it was made from */
    void *q;         /* device: e4m3 bytes, then the fp32 scales */
    float *s;
} e4g_weight;

typedef struct e4g_state {
    fb_handle h;
    bench_case c;
    const bench_set *sets;
    int nsets;
    e4g_weight (*w)[3];
    char message[256];
} e4g_state;

static float element(fb_dtype t, const void *p, int64_t i)
{
    if (t == FB_DTYPE_F32)
        return ((const float *)p)[i];
    if (t == FB_DTYPE_F16)
        return fb_half_to_float(((const fb_half *)p)[i]);
    return fb_bfloat16_to_float(((const fb_bfloat16 *)p)[i]);
}

static int quantise(e4g_state *s, int set, int which, const void *src,
                    int64_t rows, int64_t cols, char *why, size_t len)
{
    for (int j = 0; j < set; j++)
        if (s->w[j][which].src == src) {
            s->w[set][which] = s->w[j][which];
            s->w[set][which].src = NULL; /* not owned */
            return 0;
        }
    const size_t count = (size_t)(rows * cols);
    const size_t es = s->c.dtype == FB_DTYPE_F32 ? 4 : 2;
    void *host = malloc(count * es);
    float *f = malloc(count * sizeof *f), *sc = malloc((size_t)rows * 4);
    fb_e4m3 *q = malloc(count);
    e4g_weight *w = &s->w[set][which];
    int rc = -1;
    if (host == NULL || f == NULL || sc == NULL || q == NULL) {
        snprintf(why, len, "out of host memory for the e4m3 weights");
        goto out;
    }
    if (cudaMemcpy(host, src, count * es, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
        snprintf(why, len, "reading the weights back failed");
        goto out;
    }
    for (size_t i = 0; i < count; i++)
        f[i] = element(s->c.dtype, host, (int64_t)i);
    if (fb_quantize_e4m3_rows(s->h, rows, cols, f, cols, q, cols, sc) !=
        FB_STATUS_SUCCESS) {
        snprintf(why, len, "fb_quantize_e4m3_rows: %s",
                 fb_handle_last_message(s->h));
        goto out;
    }
    /* the bytes, then the scales at the next 256-byte boundary */
    const size_t off = (count + 255) / 256 * 256;
    if (cudaMalloc(&w->q, off + (size_t)rows * 4) != cudaSuccess) {
        snprintf(why, len, "out of device memory for the e4m3 weights");
        w->q = NULL;
        goto out;
    }
    w->src = src;
    w->s = (float *)((char *)w->q + off);
    if (cudaMemcpy(w->q, q, count, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(w->s, sc, (size_t)rows * 4, cudaMemcpyHostToDevice) !=
            cudaSuccess) {
        snprintf(why, len, "copying the e4m3 weights failed");
        goto out;
    }
    rc = 0;
out:
    free(host), free(f), free(sc), free(q);
    return rc;
}

static bench_outcome e4g_init(void **state, bench_gpu *g, const bench_case *c,
                              const bench_set *sets, int nsets, char *why,
                              size_t len)
{
    fb_status st = fb_backend_available(FB_BACKEND_CUDA);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "%s", fb_status_string(st));
        return BENCH_UNAVAILABLE;
    }
    e4g_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    s->nsets = nsets;
    s->w = calloc((size_t)nsets, sizeof *s->w);
    st = s->w ? fb_create(&s->h) : FB_STATUS_ALLOC_FAILED;
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_backend(s->h, FB_BACKEND_CUDA);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_cuda_device(s->h, g->device);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_cuda_stream(s->h, (void *)g->stream);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "handle: %s", fb_status_string(st));
        return BENCH_FAILED;
    }
    for (int j = 0; j < nsets; j++) {
        int rc;
        if (c->routine == BENCH_MLP)
            rc = quantise(s, j, 0, sets[j].wg, c->h, c->k, why, len) ||
                 quantise(s, j, 1, sets[j].wu, c->h, c->k, why, len) ||
                 quantise(s, j, 2, sets[j].wd, c->n, c->h, why, len);
        else
            rc = quantise(s, j, 0, sets[j].w, c->n, c->k, why, len);
        if (rc != 0)
            return BENCH_FAILED;
    }
    return BENCH_RAN;
}

static int e4g_run(void *state, int j)
{
    e4g_state *s = state;
    const bench_case *c = &s->c;
    const bench_set *set = &s->sets[j];
    const e4g_weight *w = s->w[j];
    fb_status st;
    if (c->routine == BENCH_MLP)
        st = mlp_geglu_forward_e4m3(s->h, c->dtype, c->act, c->m, c->k, c->h,
                                    c->n, set->x, c->k, w[0].q, w[0].s,
                                    set->bg, w[1].q, w[1].s, set->bu, w[2].q,
                                    w[2].s, set->bd, set->y, c->n);
    else
        st = gemm_e4m3_bias_act(s->h, c->dtype, FB_ROW_MAJOR, FB_NO_TRANS,
                                FB_TRANS, c->m, c->n, c->k, 1.0f, set->x,
                                c->k, w[0].q, c->k, w[0].s, 0.0f, set->y,
                                c->n, set->b, c->act);
    if (st == FB_STATUS_SUCCESS) {
        snprintf(s->message, sizeof s->message, "%s", fb_handle_last_path(s->h));
        return 0;
    }
    snprintf(s->message, sizeof s->message, "%s: %s", fb_status_string(st),
             fb_handle_last_message(s->h));
    return st == FB_STATUS_NOT_SUPPORTED ? 1 : -1;
}

static const char *e4g_message(void *state)
{
    return ((e4g_state *)state)->message;
}

static void e4g_fini(void *state)
{
    e4g_state *s = state;
    if (s == NULL)
        return;
    for (int j = 0; s->w != NULL && j < s->nsets; j++)
        for (int i = 0; i < 3; i++)
            if (s->w[j][i].src != NULL)
                cudaFree(s->w[j][i].q);
    free(s->w);
    if (s->h)
        (void)fb_destroy(s->h);
    free(s);
}

const bench_gpu_impl bench_gpu_fb_cuda_e4m3 = {
    BENCH_IMPL_CUDA_E4M3, BENCH_OURS, e4g_init, e4g_run, e4g_message,
    e4g_fini,
};

#endif /* HAVE_CUDA */
