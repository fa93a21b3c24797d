/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_rows.h -- the row-wise steps the CPU e4m3 gemm and MLP share:
 * an activation row widened into an fp32 panel, and a row of dot products
 * finished (scale, alpha, beta, bias, activation, one rounding) into C.
 */
#ifndef FB_CPU_FP8_ROWS_H
#define FB_CPU_FP8_ROWS_H

#include <stdint.h>
#include "fusedblas.h"

/* Floats of the per-thread buffer fb_e4m3_finish_row takes. */
#define FB_E4M3_ROW_BUF 256

/* dst[p] = x[off + p * ks] widened to fp32 for p < k, zeros from k to ld
 * (the panel padding fb_cpu_e4m3_dots reads). x of dtype. */
void fb_e4m3_widen_row(fb_dtype dtype, const void *x, int64_t off,
                       int64_t ks, int64_t k, float *dst, int64_t ld);

typedef struct fb_e4m3_epilogue {
    float alpha, beta;
    int nothing;          /* k == 0 or alpha == 0: the dots are not used */
    const float *scale;   /* per channel */
    const float *bias;    /* fp32, per channel, or NULL */
    fb_activation act;
    fb_dtype dtype;       /* of C */
} fb_e4m3_epilogue;

/* Channels j0 .. j0 + cnt of one row of C, from their dots d (overwritten
 * with the fp32 results): C(i, j) at element c_off + (j - j0) * c_cs of c.
 * old: FB_E4M3_ROW_BUF floats of scratch. */
void fb_e4m3_finish_row(const fb_e4m3_epilogue *ep, float *d, int64_t j0,
                        int64_t cnt, void *c, int64_t c_off, int64_t c_cs,
                        float *old);

/* Whether t threads take whole blocks of m rows each (AMX's e4m3 gemm and
 * MLP) instead of shares of the channels: with two blocks a thread or
 * more. One block a thread measured no faster: the threads then stream
 * all of a large w at once instead of half each. *rows: the rows a block,
 * cap (or m if fewer) either way: the blocks are the channel split's, so
 * that each block's choice between AMX and the zmm forms (a block whose x
 * has values too tiny for AMX's products, or of fewer than
 * FB_E4M3_AMX_MIN_ROWS rows, runs the zmm forms) and with it every bit of
 * the result are the same on any number of threads. */
static inline int fb_e4m3_blocks_per_thread(int64_t m, int64_t cap, int t,
                                            int64_t *rows)
{
    const int64_t full = (m + cap - 1) / cap;
    *rows = m < cap ? m : cap;
    return t > 1 && full >= 2 * (int64_t)t;
}

/* One element of dtype at index i of base, read as fp32 / rounded from
 * fp32 (round to nearest even). */
float fb_e4m3_get(fb_dtype dtype, const void *base, int64_t i);
void fb_e4m3_put(fb_dtype dtype, void *base, int64_t i, float v);

#endif /* FB_CPU_FP8_ROWS_H */
