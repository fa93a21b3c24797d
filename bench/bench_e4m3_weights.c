/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_e4m3_weights.c -- quantising a case's weight sets to e4m3, once a
 * weight.
 */
#include <stdio.h>
#include <stdlib.h>
#include "bench_e4m3_weights.h"

static float element(fb_dtype t, const void *p, size_t i)
{
    if (t == FB_DTYPE_F32)
        return ((const float *)p)[i];
    if (t == FB_DTYPE_F16)
        return fb_half_to_float(((const fb_half *)p)[i]);
    return fb_bfloat16_to_float(((const fb_bfloat16 *)p)[i]);
}

/* The e4m3 form of set's weight which (rows x cols at src), shared with
 * an earlier set that has the same weight. 0, or -1 with why. */
static int quantise(bench_e4m3_weights *ws, fb_handle h, fb_dtype t,
                    int set, int which, const void *src, int64_t rows,
                    int64_t cols, char *why, size_t len)
{
    for (int j = 0; j < set; j++)
        if (ws->w[j][which].src == src) {
            ws->w[set][which] = ws->w[j][which];
            ws->w[set][which].src = NULL; /* not owned */
            return 0;
        }
    const size_t count = (size_t)(rows * cols);
    const size_t es = t == FB_DTYPE_F32 ? 4 : 2;
    void *copy = NULL;
    float *f = malloc(count * sizeof *f);
    float *s = malloc((size_t)rows * sizeof *s);
    fb_e4m3 *q = malloc(count);
    int rc = -1;
    if (f == NULL || s == NULL || q == NULL) {
        snprintf(why, len, "out of host memory for the e4m3 weights");
        goto out;
    }
    if (ws->mem->read(src, count * es, &copy, why, len) != 0)
        goto out;
    const void *host = copy != NULL ? copy : src;
    for (size_t i = 0; i < count; i++)
        f[i] = element(t, host, i);
    if (fb_quantize_e4m3_rows(h, rows, cols, f, cols, q, cols, s) !=
        FB_STATUS_SUCCESS) {
        snprintf(why, len, "fb_quantize_e4m3_rows: %s",
                 fb_handle_last_message(h));
        goto out;
    }
    rc = ws->mem->keep(&ws->w[set][which], q, s, count, rows, why, len);
    q = NULL, s = NULL; /* kept or freed */
    if (rc == 0)
        ws->w[set][which].src = src;
out:
    free(copy), free(f), free(s), free(q);
    return rc;
}

int bench_e4m3_weights_make(bench_e4m3_weights *ws,
                            const bench_e4m3_memory *mem, fb_handle h,
                            const bench_case *c, const bench_set *sets,
                            int nsets, char *why, size_t len)
{
    ws->mem = mem;
    ws->nsets = nsets;
    ws->w = calloc((size_t)nsets, sizeof *ws->w);
    if (ws->w == NULL) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    const fb_dtype t = c->dtype;
    for (int j = 0; j < nsets; j++) {
        int rc;
        if (c->routine == BENCH_MLP)
            rc = quantise(ws, h, t, j, 0, sets[j].wg, c->h, c->k, why, len) ||
                 quantise(ws, h, t, j, 1, sets[j].wu, c->h, c->k, why, len) ||
                 quantise(ws, h, t, j, 2, sets[j].wd, c->n, c->h, why, len);
        else
            rc = quantise(ws, h, t, j, 0, sets[j].w, c->n, c->k, why, len);
        if (rc != 0)
            return -1;
    }
    return 0;
}

void bench_e4m3_weights_free(bench_e4m3_weights *ws)
{
    for (int j = 0; ws->w != NULL && j < ws->nsets; j++)
        for (int i = 0; i < 3; i++)
            if (ws->w[j][i].src != NULL)
                ws->mem->release(&ws->w[j][i]);
    free(ws->w);
    ws->w = NULL;
}
