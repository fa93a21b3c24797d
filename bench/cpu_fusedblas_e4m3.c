/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fusedblas_e4m3.c -- fusedblas's CPU backend with FP8 (e4m3)
 * weights, timed on the same cases as the 16-bit and fp32 rows: each
 * set's weights quantised row-wise (fb_quantize_e4m3_rows) before the
 * timing, then gemm_e4m3_bias_act / mlp_geglu_forward_e4m3 on the set's
 * activations, biases and output. Its output differs from the others by
 * the quantisation, so the runner does not hold it to their check
 * (tests/test_fp8 checks it against the dequantised weights).
 */
#include <stdio.h>
#include <stdlib.h>
#include "bench_call.h"
#include "bench_sets.h"
#include "cpu_impl.h"

typedef struct e4m3_weight {
    const void *src; /* the set's weight it was made from */
    fb_e4m3 *q;
    float *s;
} e4m3_weight;

typedef struct e4_state {
    fb_handle h;
    bench_case c;
    const bench_set *sets;
    int nsets;
    /* per set: w (gemm) or wg, wu, wd (mlp) */
    e4m3_weight (*w)[3];
    char message[256];
} e4_state;

static float element(fb_dtype t, const void *p, int64_t i)
{
    if (t == FB_DTYPE_F32)
        return ((const float *)p)[i];
    if (t == FB_DTYPE_F16)
        return fb_half_to_float(((const fb_half *)p)[i]);
    return fb_bfloat16_to_float(((const fb_bfloat16 *)p)[i]);
}

/* The e4m3 form of src (rows x cols), shared with an earlier set that has
 * the same weight. 0, or -1 with why. */
static int quantise(e4_state *s, int set, int which, const void *src,
                    int64_t rows, int64_t cols, char *why, size_t len)
{
    for (int j = 0; j < set; j++)
        if (s->w[j][which].src == src) {
            s->w[set][which] = s->w[j][which];
            s->w[set][which].src = NULL; /* not owned */
            return 0;
        }
    e4m3_weight *w = &s->w[set][which];
    float *f = malloc((size_t)(rows * cols) * sizeof *f);
    w->q = malloc((size_t)(rows * cols));
    w->s = malloc((size_t)rows * sizeof *w->s);
    w->src = src;
    if (f == NULL || w->q == NULL || w->s == NULL) {
        free(f);
        snprintf(why, len, "out of memory for the e4m3 weights");
        return -1;
    }
    for (int64_t i = 0; i < rows * cols; i++)
        f[i] = element(s->c.dtype, src, i);
    fb_status st = fb_quantize_e4m3_rows(s->h, rows, cols, f, cols, w->q,
                                         cols, w->s);
    free(f);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "fb_quantize_e4m3_rows: %s",
                 fb_handle_last_message(s->h));
        return -1;
    }
    return 0;
}

static bench_outcome e4_init(void **state, const bench_case *c,
                             const bench_set *sets, int nsets,
                             const bench_options *opt, char *why, size_t len)
{
    e4_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    s->nsets = nsets;
    s->w = calloc((size_t)nsets, sizeof *s->w);
    fb_status st = s->w ? fb_create(&s->h) : FB_STATUS_ALLOC_FAILED;
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_backend(s->h, FB_BACKEND_CPU);
    if (st == FB_STATUS_SUCCESS && opt->threads > 0)
        st = fb_set_threads(s->h, opt->threads);
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

static int e4_run(void *state, int j)
{
    e4_state *s = state;
    const bench_case *c = &s->c;
    const bench_set *set = &s->sets[j];
    const e4m3_weight *w = s->w[j];
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

static const char *e4_message(void *state)
{
    return ((e4_state *)state)->message;
}

static void e4_fini(void *state)
{
    e4_state *s = state;
    if (s == NULL)
        return;
    for (int j = 0; s->w != NULL && j < s->nsets; j++)
        for (int i = 0; i < 3; i++)
            if (s->w[j][i].src != NULL) {
                free(s->w[j][i].q);
                free(s->w[j][i].s);
            }
    free(s->w);
    if (s->h)
        (void)fb_destroy(s->h);
    free(s);
}

const bench_cpu_impl bench_cpu_fusedblas_e4m3 = {
    BENCH_IMPL_CPU_E4M3, BENCH_OURS, e4_init, e4_run, e4_message, e4_fini,
};
