/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_mlp.c -- mlp_geglu_forward for bf16 on the AVX512-BF16 kernel
 * (cpu_bf16_kernel.h), for the prefill shapes: more rows than the decode
 * kernel takes.
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * All three weights and X are packed once, k-pair interleaved, by all
 * threads together, before anything is computed: where the gate or up
 * projection could meet VDPBF16PS's flushing (fb_bf16_products_exact on
 * X and Wg, X and Wu), or Wd holds a denormal, the call declines with
 * nothing written, and cpu_mlp.c's fp32 panels run it. Threads then take
 * blocks of at most 96 rows from a queue (cpu_packed_blocking.h). For
 * one row block and one chunk of the hidden width (256):
 *   G^T = Wg_c X_b^T, U^T = Wu_c X_b^T       fp32, 96 KiB each, in L2
 *   H = act_g(G + bg) .* (U + bu)            in place, while in cache
 *   H rounded to bf16 (as a framework that stores H does) and packed
 *   Y_b^T += Wd_c H^T                        fp32 accumulators, n x 96
 * and when the chunks are done, Y_b = Y_b + bd, rounded to bf16 on the
 * store. Each row block streams the packed weights from L3 once.
 *
 * H is only known chunk by chunk: a chunk whose H is too small for the
 * kernel against Wd (a gate far in its negative tail: silu(-80) is about
 * 2^-109) runs its down projection in plain fp32 instead (the path then
 * counts such chunks). That is slow, and rare in real activations.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_bf16_kernel.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_packed_blocking.h"
#include "log.h"

/* Rows per block (in 12-row panels of X) and hidden columns per chunk (in
 * 32-row panels of Wg, Wu). */
#define ROW_PANELS 8
#define HIDDEN_PANELS 8
#define MB (ROW_PANELS * FB_BF16_NR)
#define HC (HIDDEN_PANELS * FB_BF16_MR)

int fb_cpu_bf16_mlp_applies(const fb_mlp_problem *p, int64_t min_rows)
{
    return p->dtype == FB_DTYPE_BF16 && p->m > min_rows && p->k > 0 &&
           p->h > 0 && fb_cpu_bf16_available();
}

typedef struct mlp_packed {
    const uint16_t *x, *wg, *wu, *wd;
    int64_t xstride, wstride, dstride; /* bf16 between panels */
    int64_t dpanels;                   /* 32-row panels of Wd */
    int emin_wd;                       /* Wd's smallest exponent field */
    const float *bg, *bu, *bd;         /* fp32 biases or NULL */
} mlp_packed;

/* Per-thread buffers, in floats where not said. */
typedef struct mlp_scratch {
    float *g, *u;     /* HC x MB, ld HC */
    float *y;         /* dpanels * 32 x MB, ld dpanels * 32 */
    uint16_t *h;      /* MB rows of HC bf16 */
    uint16_t *hpack;  /* the packed H: ROW_PANELS panels */
} mlp_scratch;

/* y (column t: token t, ldy) (+)= Wd[:, h0 .. h0 + hc) h^T in fp32,
 * IEEE: the products of two bf16 are exact, one rounding per sum. */
static void down_f32(const fb_mlp_problem *p, const uint16_t *h, int64_t h0,
                     int64_t hc, int64_t rows, float *y, int64_t ldy)
{
    const uint16_t *wd = (const uint16_t *)p->wd + h0;
    for (int64_t t = 0; t < rows; t++)
        for (int64_t j = 0; j < p->n; j++) {
            const uint16_t *w = wd + j * p->h, *x = h + t * HC;
            float acc = h0 > 0 ? y[t * ldy + j] : 0.0f;
            for (int64_t l = 0; l < hc; l++) {
                uint32_t a = (uint32_t)x[l] << 16, b = (uint32_t)w[l] << 16;
                float fa, fb;
                memcpy(&fa, &a, sizeof fa);
                memcpy(&fb, &b, sizeof fb);
                acc += fa * fb;
            }
            y[t * ldy + j] = acc;
        }
}

/* Rows [r0, r0 + rows) of Y: every chunk of the hidden width, then the
 * store. Returns the number of chunks whose down projection ran in fp32. */
static int64_t row_block(const fb_mlp_problem *p, const mlp_packed *pk,
                         const mlp_scratch *s, int64_t r0, int64_t rows)
{
    int64_t slow = 0;
    const int64_t kp = (p->k + 1) / 2, ldy = pk->dpanels * FB_BF16_MR;
    const int64_t xpanels = (rows + FB_BF16_NR - 1) / FB_BF16_NR;
    const uint16_t *xb = pk->x + (r0 / FB_BF16_NR) * pk->xstride;
    for (int64_t h0 = 0; h0 < p->h; h0 += HC) {
        const int64_t hc = p->h - h0 < HC ? p->h - h0 : HC;
        const int64_t na = (hc + FB_BF16_MR - 1) / FB_BF16_MR;
        const int64_t q0 = h0 / FB_BF16_MR;
        fb_bf16_block(pk->wg + q0 * pk->wstride, pk->wstride, na, xb,
                      pk->xstride, xpanels, kp, 1.0f, 0, s->g, HC);
        fb_bf16_block(pk->wu + q0 * pk->wstride, pk->wstride, na, xb,
                      pk->xstride, xpanels, kp, 1.0f, 0, s->u, HC);
        for (int64_t t = 0; t < rows; t++) {
            float *g = s->g + t * HC;
            fb_cpu_gate(g, s->u + t * HC, pk->bg ? pk->bg + h0 : NULL,
                        pk->bu ? pk->bu + h0 : NULL, hc, p->gate_act);
            fb_bf16_from_f32(g, s->h + t * HC, hc);
        }
        /* H is op(B) of the down projection, k = the chunk's width. */
        const fb_bf16_operand hop = {s->h, HC, 1};
        const int eh = fb_bf16_pack(&hop, rows, hc, FB_BF16_NR, 0, xpanels,
                                    s->hpack);
        if (!fb_bf16_products_exact(eh, pk->emin_wd)) {
            down_f32(p, s->h, h0, hc, rows, s->y, ldy);
            slow++;
            continue;
        }
        const int64_t hp = (hc + 1) / 2;
        fb_bf16_block(pk->wd + (h0 / 2) * 2 * FB_BF16_MR, pk->dstride,
                      pk->dpanels, s->hpack, fb_bf16_panel_elems(hp, FB_BF16_NR),
                      xpanels, hp, 1.0f, h0 > 0, s->y, ldy);
    }
    for (int64_t t = 0; t < rows; t++) {
        float *y = s->y + t * ldy;
        if (pk->bd != NULL)
            fb_cpu_bias_act(y, pk->bd, p->n, FB_ACT_NONE);
        fb_bf16_from_f32(y, (uint16_t *)p->y + (r0 + t) * p->ldy, p->n);
    }
    return slow;
}

int fb_cpu_bf16_mlp(fb_handle h, const fb_mlp_problem *p, fb_status *st,
                    char *path, size_t len)
{
    const int64_t m = p->m, k = p->k, hid = p->h, n = p->n;
    const int64_t kp = (k + 1) / 2, hp = (hid + 1) / 2;
    const int64_t xpanels = (m + FB_BF16_NR - 1) / FB_BF16_NR;
    const int64_t wpanels = (hid + FB_BF16_MR - 1) / FB_BF16_MR;
    const int64_t dpanels = (n + FB_BF16_MR - 1) / FB_BF16_MR;
    const double flops = 2.0 * (double)m *
                         (2.0 * (double)hid * (double)k + (double)hid * (double)n);
    int t = fb_cpu_own_threads(h, flops);
    /* Fewer rows per block when there are too few for every thread. */
    fb_row_queue queue = fb_row_queue_make(xpanels, ROW_PANELS, &t);
    const int64_t mb = queue.most * FB_BF16_NR;

    mlp_packed pk;
    pk.xstride = fb_bf16_panel_elems(kp, FB_BF16_NR);
    pk.wstride = fb_bf16_panel_elems(kp, FB_BF16_MR);
    pk.dstride = fb_bf16_panel_elems(hp, FB_BF16_MR);
    pk.dpanels = dpanels;
    pk.emin_wd = 0; /* set once Wd is packed */
    const size_t bias_bytes = fb_packed_round64((size_t)(2 * hid + n) * 4);
    const size_t x_bytes = fb_packed_round64((size_t)(xpanels * pk.xstride) * 2);
    const size_t w_bytes = fb_packed_round64((size_t)(wpanels * pk.wstride) * 2);
    const size_t d_bytes = fb_packed_round64((size_t)(dpanels * pk.dstride) * 2);
    const size_t acc_bytes = (size_t)HC * MB * 4;
    const size_t y_bytes = (size_t)(dpanels * FB_BF16_MR) * MB * 4;
    const size_t h_bytes = (size_t)MB * HC * 2;
    const size_t per_thread = 2 * acc_bytes + y_bytes + 2 * h_bytes;
    const size_t bytes = bias_bytes + x_bytes + 2 * w_bytes + d_bytes +
                         per_thread * (size_t)t;
    char *ws = fb_handle_workspace(h, bytes);
    if (ws == NULL) {
        snprintf(path, len, "bf16 MLP kernel: cannot allocate %zu bytes of "
                 "workspace", bytes);
        *st = FB_STATUS_ALLOC_FAILED;
        return 1;
    }
    float *b32 = (float *)ws;
    pk.bg = pk.bu = pk.bd = NULL;
    if (p->bg) fb_cpu_to_f32(FB_DTYPE_BF16, p->bg, b32, hid), pk.bg = b32;
    if (p->bu) fb_cpu_to_f32(FB_DTYPE_BF16, p->bu, b32 + hid, hid), pk.bu = b32 + hid;
    if (p->bd) fb_cpu_to_f32(FB_DTYPE_BF16, p->bd, b32 + 2 * hid, n), pk.bd = b32 + 2 * hid;
    char *cur = ws + bias_bytes;
    uint16_t *xq = (uint16_t *)cur;
    uint16_t *wgq = (uint16_t *)(cur += x_bytes);
    uint16_t *wuq = (uint16_t *)(cur += w_bytes);
    uint16_t *wdq = (uint16_t *)(cur += w_bytes);
    char *thread_ws = cur + d_bytes;
    pk.x = xq, pk.wg = wgq, pk.wu = wuq, pk.wd = wdq;
    const fb_bf16_operand xop = {p->x, p->ldx, 1}, gop = {p->wg, k, 1};
    const fb_bf16_operand uop = {p->wu, k, 1}, dop = {p->wd, hid, 1};
    int ex = 255, eg = 255, eu = 255, ed = 255;
    int64_t slow = 0;

#pragma omp parallel num_threads(t) if (t > 1) \
    reduction(min : ex, eg, eu, ed)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int tx = fb_bf16_pack(&xop, m, k, FB_BF16_NR,
                                    xpanels * tid / nt,
                                    xpanels * (tid + 1) / nt, xq);
        const int tg = fb_bf16_pack(&gop, hid, k, FB_BF16_MR,
                                    wpanels * tid / nt,
                                    wpanels * (tid + 1) / nt, wgq);
        const int tu = fb_bf16_pack(&uop, hid, k, FB_BF16_MR,
                                    wpanels * tid / nt,
                                    wpanels * (tid + 1) / nt, wuq);
        const int td = fb_bf16_pack(&dop, n, hid, FB_BF16_MR,
                                    dpanels * tid / nt,
                                    dpanels * (tid + 1) / nt, wdq);
        ex = tx < ex ? tx : ex;
        eg = tg < eg ? tg : eg;
        eu = tu < eu ? tu : eu;
        ed = td < ed ? td : ed;
    }
    if (!(fb_bf16_products_exact(ex, eg) && fb_bf16_products_exact(ex, eu) &&
          ed > 0)) {
        fb_log(h, "bf16 MLP kernel: smallest exponent fields %d (X), %d "
                  "(Wg), %d (Wu), %d (Wd): VDPBF16PS could flush; the fp32 "
                  "path instead", ex, eg, eu, ed);
        return 0;
    }
    pk.emin_wd = ed;

#pragma omp parallel num_threads(t) if (t > 1) reduction(+ : slow)
    {
        const int tid = omp_get_thread_num();
        char *mine = thread_ws + per_thread * (size_t)tid;
        mlp_scratch s;
        s.g = (float *)mine;
        s.u = (float *)(mine + acc_bytes);
        s.y = (float *)(mine + 2 * acc_bytes);
        s.h = (uint16_t *)(mine + 2 * acc_bytes + y_bytes);
        s.hpack = s.h + MB * HC;
        int64_t r0, rows;
        while ((rows = fb_row_queue_take(&queue, FB_BF16_NR, m, &r0)) > 0)
            slow += row_block(p, &pk, &s, r0, rows);
    }
    char slow_note[48] = "";
    if (slow > 0)
        snprintf(slow_note, sizeof slow_note, "/fp32-down-chunks=%lld",
                 (long long)slow);
    snprintf(path, len, "cpu/bf16-avx512bf16/mlp-rows/mb=%lld/hc=%d/"
             "threads=%d%s", (long long)mb, HC, t, slow_note);
    *st = FB_STATUS_SUCCESS;
    return 1;
}
