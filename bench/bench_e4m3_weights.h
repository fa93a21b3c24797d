/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_e4m3_weights.h -- e4m3 copies of a case's weights, one for each
 * input set's weight (a weight that several sets share is quantised once):
 * what the CPU and GPU e4m3 rows time instead of the sets' own weights.
 * Each weight is quantised row-wise on the host (fb_quantize_e4m3_rows);
 * where it is read from and kept (host or device memory) is the runner's,
 * through a bench_e4m3_memory.
 */
#ifndef FB_BENCH_E4M3_WEIGHTS_H
#define FB_BENCH_E4M3_WEIGHTS_H

#include <stddef.h>
#include "bench.h"

typedef struct bench_e4m3_weight {
    const void *src; /* the set's weight it was made from; NULL: a copy of
                        an earlier set's entry, not owned */
    fb_e4m3 *q;      /* rows x cols, row-major */
    float *s;        /* a scale per row */
} bench_e4m3_weight;

/* Where a runner's weights live. Each returns 0, or -1 with why. */
typedef struct bench_e4m3_memory {
    /* The bytes at src readable on the host: *copy is a malloc'd copy of
     * them, or NULL where src is host memory. */
    int (*read)(const void *src, size_t bytes, void **copy, char *why,
                size_t len);
    /* Keeps the host arrays q (count bytes) and s (rows scales) where the
     * e4m3 routines read them, in w->q and w->s; takes q and s either way
     * (keeps or frees them). */
    int (*keep)(bench_e4m3_weight *w, fb_e4m3 *q, float *s, size_t count,
                int64_t rows, char *why, size_t len);
    /* Frees what keep kept. */
    void (*release)(bench_e4m3_weight *w);
} bench_e4m3_memory;

typedef struct bench_e4m3_weights {
    const bench_e4m3_memory *mem;
    int nsets;
    bench_e4m3_weight (*w)[3]; /* per set: w (gemm) or wg, wu, wd (mlp) */
} bench_e4m3_weights;

/* The e4m3 copies of the weights of the nsets sets of case c, quantised
 * on handle h: 0, or -1 with why; bench_e4m3_weights_free frees them
 * either way. */
int bench_e4m3_weights_make(bench_e4m3_weights *ws,
                            const bench_e4m3_memory *mem, fb_handle h,
                            const bench_case *c, const bench_set *sets,
                            int nsets, char *why, size_t len);

void bench_e4m3_weights_free(bench_e4m3_weights *ws);

#endif /* FB_BENCH_E4M3_WEIGHTS_H */
