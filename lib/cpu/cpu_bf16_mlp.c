/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_mlp.c -- mlp_geglu_forward for bf16 on a bf16 engine
 * (cpu_bf16_kernel.h: AMX, else AVX512-BF16; two entries of the table,
 * one driver), for the prefill shapes: more rows than the decode kernel
 * takes.
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * Where the gate or up projection could meet the bf16 instructions'
 * flushing (fb_bf16_products_exact on X and Wg, X and Wu), or Wd holds a
 * denormal, the call is not this driver's: applies() finds it from the
 * smallest exponent fields before any work, and the next implementation
 * runs it. All three weights (unless a plan packed them already) and X
 * are packed once, k-pair interleaved, by all threads together. Threads
 * then take blocks of X's rows (at most 96 on AVX512-BF16, 512 on AMX)
 * from a queue (cpu_packed_blocking.h). For one row block and one chunk of
 * the hidden width (256):
 *   G^T = Wg_c X_b^T, U^T = Wu_c X_b^T       fp32, in L2
 *   H = act_g(G + bg) .* (U + bu)            rounded to bf16 (as a
 *                                            framework that stores H does)
 *   Y_b^T += Wd_c H^T                        fp32 accumulators, n x rows
 * and when the chunks are done, Y_b = Y_b + bd, rounded to bf16 on the
 * store. Each row block streams the packed weights from L3 once. On AMX,
 * with 256 rows or fewer, the threads split the weights instead of the
 * rows (run_wide), so that each weight is read once.
 *
 * e4m3 weights (cpu_fp8_wide.c) come packed, widened exactly to bf16, with
 * their scales after the panels: G and U are scaled before the gate, Y's
 * sums before the bias, the e4m3 order (dot scale + bias).
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
#include "cpu_bf16_mlp.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_impl.h"
#include "cpu_packed_blocking.h"
#include "log.h"
#include "problem_fp8.h"

/* Rows per block, in panels of X (the engine's nr rows): 8 (96 rows) on
 * AVX512-BF16; 32 (512 rows) on AMX, whose blocks are fast enough that
 * streaming the weights once per block is what costs (docs/cpu-kernels.md
 * has the measurements). Hidden columns per chunk: 256, whole panels of
 * Wg and Wu (32 rows each). */
static int row_panels(const fb_bf16_engine *e)
{
    return e->block_rows != NULL ? 32 : 8;
}
#define HC 256

typedef struct mlp_packed {
    const fb_bf16_engine *e;
    int64_t mb;                        /* rows of a block at most */
    const uint16_t *x, *wg, *wu, *wd;
    int64_t xstride, wstride, dstride; /* bf16 between panels */
    int64_t dpanels;                   /* 32-row panels of Wd */
    int emin_wd;                       /* Wd's smallest exponent field */
    const float *bg, *bu, *bd;         /* fp32 biases or NULL */
    const float *sg, *su, *sd;         /* e4m3 weights' scales, or NULL */
    const uint8_t *wd8;                /* e4m3 Wd, or NULL (Wd is bf16) */
} mlp_packed;

/* Per-thread buffers, in floats where not said. */
typedef struct mlp_scratch {
    float *g, *u;     /* HC x mb, ld HC */
    float *y;         /* dpanels * 32 x mb, ld dpanels * 32 */
    uint16_t *h;      /* mb rows of HC bf16 */
    uint16_t *hpack;  /* the packed H: a block's panels */
} mlp_scratch;

static float bf16_value(uint16_t v)
{
    const uint32_t b = (uint32_t)v << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* y's rows [j0, j1) (column t: token t, ldy) (+)= Wd[j0 .. j1, h0 .. h0 +
 * hc) h^T in fp32, h's rows ldh apart, Wd in bf16 or (wd8) e4m3; IEEE:
 * the products of two bf16 (or bf16 and e4m3) are exact, one rounding
 * per sum. */
static void down_f32(const fb_mlp_problem *p, const uint8_t *wd8,
                     const uint16_t *h, int64_t ldh, int64_t h0, int64_t hc,
                     int64_t rows, int64_t j0, int64_t j1, float *y,
                     int64_t ldy)
{
    const uint16_t *wd = (const uint16_t *)p->wd + h0;
    for (int64_t t = 0; t < rows; t++)
        for (int64_t j = j0; j < j1; j++) {
            const uint16_t *x = h + t * ldh;
            float acc = h0 > 0 ? y[t * ldy + j] : 0.0f;
            for (int64_t l = 0; l < hc; l++)
                acc += bf16_value(x[l]) *
                       (wd8 != NULL ? fb_e4m3_value(wd8[j * p->h + h0 + l])
                                    : bf16_value(wd[j * p->h + l]));
            y[t * ldy + j] = acc;
        }
}

/* Rows [r0, r0 + rows) of Y: every chunk of the hidden width, then the
 * store. Returns the number of chunks whose down projection ran in fp32. */
static int64_t row_block(const fb_mlp_problem *p, const mlp_packed *pk,
                         const mlp_scratch *s, int64_t r0, int64_t rows)
{
    int64_t slow = 0;
    const fb_bf16_engine *e = pk->e;
    const int64_t kp = fb_bf16_pairs(e, p->k), ldy = pk->dpanels * e->mr;
    const int64_t xpanels = (rows + e->nr - 1) / e->nr;
    const uint16_t *xb = pk->x + (r0 / e->nr) * pk->xstride;
    for (int64_t h0 = 0; h0 < p->h; h0 += HC) {
        const int64_t hc = p->h - h0 < HC ? p->h - h0 : HC;
        const int64_t na = (hc + e->mr - 1) / e->mr;
        const int64_t q0 = h0 / e->mr;
        e->block(pk->wg + q0 * pk->wstride, pk->wstride, na, xb, pk->xstride,
                 xpanels, kp, 1.0f, 0, s->g, HC);
        e->block(pk->wu + q0 * pk->wstride, pk->wstride, na, xb, pk->xstride,
                 xpanels, kp, 1.0f, 0, s->u, HC);
        /* H in bf16, rows of HC, the chunk's width padded with zeros to
         * whole pairs of the engine; its smallest exponent field. */
        const int64_t hp = fb_bf16_pairs(e, hc);
        const int eh = fb_bf16_gate_store(
            s->g, s->u, HC, pk->sg ? pk->sg + h0 : NULL,
            pk->su ? pk->su + h0 : NULL, pk->bg ? pk->bg + h0 : NULL,
            pk->bu ? pk->bu + h0 : NULL, hc, 2 * hp, rows, p->gate_act, s->h,
            HC);
        if (!fb_bf16_products_exact(eh, pk->emin_wd)) {
            down_f32(p, pk->wd8, s->h, HC, h0, hc, rows, 0, p->n, s->y,
                     ldy);
            slow++;
            continue;
        }
        const uint16_t *wd = pk->wd + (h0 / 2) * 2 * e->mr;
        if (e->block_rows != NULL) {
            /* H is read in place; the rows of its last panel past the
             * block's are zeros. */
            for (int64_t t = rows; t < xpanels * e->nr; t++)
                memset(s->h + t * HC, 0, (size_t)(2 * hp) * sizeof *s->h);
            e->block_rows(wd, pk->dstride, pk->dpanels, s->h, HC, xpanels,
                          hp, 1.0f, h0 > 0, s->y, ldy);
            continue;
        }
        /* H is op(B) of the down projection, k = the chunk's width. */
        const fb_bf16_operand hop = {s->h, HC, 1};
        (void)fb_bf16_pack_b(e, &hop, rows, hc, 0, xpanels, s->hpack);
        e->block(wd, pk->dstride, pk->dpanels, s->hpack,
                 fb_bf16_panel_elems(hp, e->nr), xpanels, hp, 1.0f, h0 > 0,
                 s->y, ldy);
    }
    if (pk->sd != NULL)
        fb_cpu_scale_block(s->y, ldy, pk->sd, 1, 0, 0, p->n, rows, 1.0f);
    fb_bf16_bias_act_store(s->y, ldy, pk->bd, NULL, p->n, rows, FB_ACT_NONE,
                           (uint16_t *)p->y + r0 * p->ldy, p->ldy);
    return slow;
}

/* Rows of X the decode kernel takes first (cpu_small_m_mlp.c); fewer are
 * not the AVX512-BF16 engine's. AMX takes any number when forced by name
 * (the decode kernel comes first in the table; docs/cpu-kernels.md has
 * AMX at decode sizes). */
#define MIN_ROWS 16

/* The call's sizes: the biases in fp32, packed X, packed Wg, Wu and Wd,
 * then per thread G, U, Y's accumulators, H and H packed. */
typedef struct layout {
    int threads;
    int wide;  /* the hidden-split form (run_wide) */
    fb_row_queue queue;
    int64_t mb, kp, hp, xpanels, wpanels, dpanels;
    size_t bias_bytes, x_bytes, w_bytes, d_bytes, acc_bytes, y_bytes,
        h_bytes, per_thread;
    size_t shared_bytes; /* wide: all of H, Y's accumulators, the chunks'
                            exponent fields */
} layout;

/* Rows at most for the hidden-split form (AMX): so few that row blocks
 * would leave threads idle or have each stream every weight. */
#define WIDE_ROWS 256

/* e4m3 weights (fixed blocks): the row blocks are cut from m alone, so
 * that a chunk's fp32 down projection (decided per block, from its H)
 * falls on the same rows on any number of threads, as the e4m3 routines
 * promise (tests/test_fp8.c): up to WIDE_ROWS one block (the
 * hidden-split form's group too), else equal blocks of at most half
 * row_panels(e) panels (256 rows on AMX: enough blocks for a larger
 * machine's threads), two at least. */
static fb_row_queue fixed_blocks(const fb_bf16_engine *e, int64_t xpanels,
                                 int64_t m)
{
    const int64_t most = row_panels(e) / 2;
    int64_t blocks = (xpanels + most - 1) / most;
    if (m > WIDE_ROWS && blocks < 2)
        blocks = 2;
    fb_row_queue q;
    q.next = 0, q.xpanels = xpanels, q.threads = 1;
    q.most = q.least = (xpanels + blocks - 1) / blocks;
    return q;
}

static layout layout_of(const fb_bf16_engine *e, const fb_mlp_problem *p,
                        int threads, int fixed)
{
    layout l;
    l.mb = row_panels(e) * e->nr;
    l.kp = fb_bf16_pairs(e, p->k), l.hp = fb_bf16_pairs(e, p->h);
    l.xpanels = (p->m + e->nr - 1) / e->nr;
    l.wpanels = (p->h + e->mr - 1) / e->mr;
    l.dpanels = (p->n + e->mr - 1) / e->mr;
    /* (and hidden chunks for every thread: one chunk leaves the others
     * idle, where one row block on one thread does the same work without
     * the form's barriers) */
    l.wide = e->block_rows != NULL && threads > 1 && p->m <= WIDE_ROWS &&
             (p->h + HC - 1) / HC >= threads;
    /* Fewer rows per block when there are too few for every thread. */
    l.threads = threads;
    if (fixed) {
        l.queue = fixed_blocks(e, l.xpanels, p->m);
        const int64_t blocks =
            (l.xpanels + l.queue.most - 1) / l.queue.most;
        if (!l.wide && l.threads > blocks)
            l.threads = (int)blocks;
    } else {
        l.queue = fb_row_queue_make(l.xpanels, row_panels(e), &l.threads);
    }
    if (l.wide)
        l.threads = threads;
    const int64_t xstride = fb_bf16_panel_elems(l.kp, e->nr);
    const int64_t wstride = fb_bf16_panel_elems(l.kp, e->mr);
    const int64_t dstride = fb_bf16_panel_elems(l.hp, e->mr);
    l.bias_bytes = fb_packed_round64((size_t)(2 * p->h + p->n) * 4);
    l.x_bytes = fb_packed_round64((size_t)(l.xpanels * xstride) * 2);
    l.w_bytes = fb_packed_round64((size_t)(l.wpanels * wstride) * 2);
    l.d_bytes = fb_packed_round64((size_t)(l.dpanels * dstride) * 2);
    l.acc_bytes = (size_t)HC * l.mb * 4;
    l.y_bytes = (size_t)(l.dpanels * e->mr) * l.mb * 4;
    l.h_bytes = (size_t)l.mb * HC * 2;
    l.per_thread = 2 * l.acc_bytes + l.y_bytes + 2 * l.h_bytes;
    l.shared_bytes = 0;
    if (l.wide) {
        const int64_t cols = l.xpanels * e->nr;
        const int64_t chunks = (p->h + HC - 1) / HC;
        l.acc_bytes = fb_packed_round64((size_t)HC * (size_t)cols * 4);
        l.per_thread = 2 * l.acc_bytes;
        l.h_bytes = fb_packed_round64((size_t)cols * (size_t)(2 * l.hp) * 2);
        l.y_bytes = fb_packed_round64((size_t)(l.dpanels * e->mr) *
                                      (size_t)cols * 4);
        l.shared_bytes = l.h_bytes + l.y_bytes +
                         fb_packed_round64((size_t)chunks * sizeof(int));
    }
    return l;
}

/* Packed weights (a plan's): the smallest exponent fields of Wg, Wu and
 * Wd and whether the weights were e4m3 (their scales then follow the
 * panels: sg, su, sd), then the panels, 64 bytes on. */
#define PACK_HEADER 64
enum { FIELD_G, FIELD_U, FIELD_D, FIELD_E4M3, FIELDS };

static size_t pack_bytes(const fb_bf16_engine *e, const fb_mlp_problem *p)
{
    const layout l = layout_of(e, p, 1, 0);
    return PACK_HEADER + 2 * l.w_bytes + l.d_bytes;
}

static size_t workspace_of(const fb_bf16_engine *e, const fb_mlp_problem *p,
                           int threads, int packed, int fixed)
{
    const layout l = layout_of(e, p, threads, fixed);
    return l.bias_bytes + l.x_bytes +
           (packed ? 0 : 2 * l.w_bytes + l.d_bytes) + l.shared_bytes +
           l.per_thread * (size_t)l.threads;
}

static size_t workspace(const fb_bf16_engine *e, const fb_mlp_problem *p,
                        int threads, int packed)
{
    return workspace_of(e, p, threads, packed, 0);
}

size_t fb_cpu_bf16_amx_mlp_e4m3_workspace(const fb_mlp_problem *p,
                                          int threads)
{
    return workspace_of(&fb_bf16_amx, p, threads, 1, 1);
}

/* The weights' operands, as op(A) of their GEMMs. */
static void weight_operands(const fb_mlp_problem *p, fb_bf16_operand *g,
                            fb_bf16_operand *u, fb_bf16_operand *d)
{
    *g = (fb_bf16_operand){p->wg, p->k, 1};
    *u = (fb_bf16_operand){p->wu, p->k, 1};
    *d = (fb_bf16_operand){p->wd, p->h, 1};
}

/* Each thread its share of the weights' panels; the smallest exponent
 * fields found, in e[3]. */
static void pack_share(const fb_bf16_engine *en, const fb_mlp_problem *p,
                       const layout *l, int tid, int nt, uint16_t *wgq,
                       uint16_t *wuq, uint16_t *wdq, int e[3])
{
    fb_bf16_operand gop, uop, dop;
    weight_operands(p, &gop, &uop, &dop);
    e[0] = fb_bf16_pack_a(en, &gop, p->h, p->k, l->wpanels * tid / nt,
                          l->wpanels * (tid + 1) / nt, wgq);
    e[1] = fb_bf16_pack_a(en, &uop, p->h, p->k, l->wpanels * tid / nt,
                          l->wpanels * (tid + 1) / nt, wuq);
    e[2] = fb_bf16_pack_a(en, &dop, p->n, p->h, l->dpanels * tid / nt,
                          l->dpanels * (tid + 1) / nt, wdq);
}

static void pack(const fb_bf16_engine *en, const fb_mlp_problem *p,
                 int threads, void *dst)
{
    const layout l = layout_of(en, p, 1, 0);
    uint16_t *wgq = (uint16_t *)((char *)dst + PACK_HEADER);
    uint16_t *wuq = (uint16_t *)((char *)wgq + l.w_bytes);
    uint16_t *wdq = (uint16_t *)((char *)wuq + l.w_bytes);
    int eg = 255, eu = 255, ed = 255;
#pragma omp parallel num_threads(threads) if (threads > 1) \
    reduction(min : eg, eu, ed)
    {
        int e[3];
        pack_share(en, p, &l, omp_get_thread_num(), omp_get_num_threads(),
                   wgq, wuq, wdq, e);
        eg = e[0] < eg ? e[0] : eg;
        eu = e[1] < eu ? e[1] : eu;
        ed = e[2] < ed ? e[2] : ed;
    }
    int *fields = dst;
    fields[FIELD_G] = eg, fields[FIELD_U] = eu, fields[FIELD_D] = ed;
    fields[FIELD_E4M3] = 0;
}

size_t fb_cpu_bf16_amx_mlp_pack_e4m3_bytes(const fb_mlp_problem *p)
{
    return pack_bytes(&fb_bf16_amx, p) +
           fb_packed_round64((size_t)(2 * p->h + p->n) * sizeof(float));
}

void fb_cpu_bf16_amx_mlp_pack_e4m3(const fb_mlp_problem *p,
                                   const float *sg, const float *su,
                                   const float *sd, int threads, void *dst)
{
    const fb_bf16_engine *en = &fb_bf16_amx;
    const layout l = layout_of(en, p, 1, 0);
    uint16_t *wgq = (uint16_t *)((char *)dst + PACK_HEADER);
    uint16_t *wuq = (uint16_t *)((char *)wgq + l.w_bytes);
    uint16_t *wdq = (uint16_t *)((char *)wuq + l.w_bytes);
    float *scales = (float *)((char *)wdq + l.d_bytes);
    int eg = 255, eu = 255, ed = 255;
#pragma omp parallel num_threads(threads) if (threads > 1) \
    reduction(min : eg, eu, ed)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t w0 = l.wpanels * tid / nt, w1 = l.wpanels * (tid + 1) / nt;
        const int64_t d0 = l.dpanels * tid / nt, d1 = l.dpanels * (tid + 1) / nt;
        eg = fb_bf16_pack_a_e4m3(en, p->wg, p->k, p->h, p->k, w0, w1, wgq);
        eu = fb_bf16_pack_a_e4m3(en, p->wu, p->k, p->h, p->k, w0, w1, wuq);
        ed = fb_bf16_pack_a_e4m3(en, p->wd, p->h, p->n, p->h, d0, d1, wdq);
    }
    memcpy(scales, sg, (size_t)p->h * sizeof *scales);
    memcpy(scales + p->h, su, (size_t)p->h * sizeof *scales);
    memcpy(scales + 2 * p->h, sd, (size_t)p->n * sizeof *scales);
    int *fields = dst;
    fields[FIELD_G] = eg, fields[FIELD_U] = eu, fields[FIELD_D] = ed;
    fields[FIELD_E4M3] = 1;
}

/* Where the gate or up projection could meet the bf16 products'
 * flushing (fb_bf16_products_exact on X and Wg, X and Wu), or Wd holds a
 * denormal, the call is not this driver's: found from the smallest
 * exponent fields (the packed weights carry theirs) before any work. */
static int applies(const fb_bf16_engine *en, const fb_cpu_call *c,
                   const fb_mlp_problem *p)
{
    if (p->dtype != FB_DTYPE_BF16 ||
        (en->block_rows == NULL && p->m <= MIN_ROWS) || p->k <= 0 ||
        p->h <= 0 || !en->available())
        return 0;
    /* A plan being made (no X yet): X is judged at each call, the weights
     * once they are packed. */
    if (p->x == NULL && c->packed == NULL)
        return 1;
    int e[FIELDS];
    if (c->packed != NULL) {
        memcpy(e, c->packed, sizeof e);
    } else {
        fb_bf16_operand gop, uop, dop;
        weight_operands(p, &gop, &uop, &dop);
        e[0] = fb_bf16_min_field(&gop, p->h, p->k, c->threads);
        e[1] = fb_bf16_min_field(&uop, p->h, p->k, c->threads);
        e[2] = fb_bf16_min_field(&dop, p->n, p->h, c->threads);
    }
    const fb_bf16_operand xop = {p->x, p->ldx, 1};
    const int ex = fb_bf16_min_field(&xop, p->m, p->k, c->threads);
    if (fb_bf16_products_exact(ex, e[0]) &&
        fb_bf16_products_exact(ex, e[1]) && e[2] > 0)
        return 1;
    fb_log(c->h, "%s MLP: smallest exponent fields %d (X), %d (Wg), %d "
                 "(Wu), %d (Wd): the bf16 products could flush; another "
                 "implementation instead", en->name, ex, e[0], e[1], e[2]);
    return 0;
}

/* The hidden-split form, for few rows (AMX, more than one thread): all
 * rows at once, the threads splitting the weights instead of the rows, so
 * that each weight is read once. Each thread takes a share of the hidden
 * chunks: G and U, the gate, H (bf16, into one H for all) and the chunk's
 * smallest exponent field. Then each takes a share of Wd's panels (rows of
 * Y) and runs every chunk in order on them, as the row blocks do: the same
 * sums in the same order, so the same bits. */
static int64_t run_wide(const fb_mlp_problem *p, const mlp_packed *pk,
                        const layout *l, char *shared, char *thread_ws)
{
    const fb_bf16_engine *e = pk->e;
    const int64_t m = p->m, cols = l->xpanels * e->nr;
    const int64_t chunks = (p->h + HC - 1) / HC;
    const int64_t hstride = 2 * l->hp, ldy = l->dpanels * e->mr;
    uint16_t *hall = (uint16_t *)shared;
    float *yacc = (float *)(shared + l->h_bytes);
    int *fields = (int *)(shared + l->h_bytes + l->y_bytes);
    int64_t slow = 0;
#pragma omp parallel num_threads(l->threads)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        float *g = (float *)(thread_ws + l->per_thread * (size_t)tid);
        float *u = (float *)((char *)g + l->acc_bytes);
        for (int64_t c = chunks * tid / nt; c < chunks * (tid + 1) / nt;
             c++) {
            const int64_t h0 = c * HC;
            const int64_t hc = p->h - h0 < HC ? p->h - h0 : HC;
            const int64_t na = (hc + e->mr - 1) / e->mr, q0 = h0 / e->mr;
            e->block(pk->wg + q0 * pk->wstride, pk->wstride, na, pk->x,
                     pk->xstride, l->xpanels, l->kp, 1.0f, 0, g, HC);
            e->block(pk->wu + q0 * pk->wstride, pk->wstride, na, pk->x,
                     pk->xstride, l->xpanels, l->kp, 1.0f, 0, u, HC);
            const int64_t width = 2 * fb_bf16_pairs(e, hc);
            const int eh = fb_bf16_gate_store(
                g, u, HC, pk->sg ? pk->sg + h0 : NULL,
                pk->su ? pk->su + h0 : NULL, pk->bg ? pk->bg + h0 : NULL,
                pk->bu ? pk->bu + h0 : NULL, hc, width, m, p->gate_act,
                hall + h0, hstride);
            for (int64_t t = m; t < cols; t++)
                memset(hall + t * hstride + h0, 0, (size_t)width * 2);
            fields[c] = eh;
        }
#pragma omp barrier
        const int64_t d0 = l->dpanels * tid / nt;
        const int64_t d1 = l->dpanels * (tid + 1) / nt;
        const int64_t j0 = d0 * e->mr;
        const int64_t j1 = d1 * e->mr < p->n ? d1 * e->mr : p->n;
        for (int64_t c = 0; c < chunks && d1 > d0; c++) {
            const int64_t h0 = c * HC;
            const int64_t hc = p->h - h0 < HC ? p->h - h0 : HC;
            if (!fb_bf16_products_exact(fields[c], pk->emin_wd)) {
                down_f32(p, pk->wd8, hall + h0, hstride, h0, hc, m, j0, j1,
                         yacc, ldy);
                continue;
            }
            e->block_rows(pk->wd + d0 * pk->dstride + (h0 / 2) * 2 * e->mr,
                          pk->dstride, d1 - d0, hall + h0, hstride,
                          l->xpanels, fb_bf16_pairs(e, hc), 1.0f, c > 0,
                          yacc + j0, ldy);
        }
        if (j1 > j0 && pk->sd != NULL)
            fb_cpu_scale_block(yacc + j0, ldy, pk->sd, 1, j0, 0, j1 - j0, m,
                                1.0f);
        if (j1 > j0)
            fb_bf16_bias_act_store(yacc + j0, ldy,
                                   pk->bd != NULL ? pk->bd + j0 : NULL, NULL,
                                   j1 - j0, m, FB_ACT_NONE,
                                   (uint16_t *)p->y + j0, p->ldy);
    }
    /* The chunks whose down projection ran in fp32. */
    for (int64_t c = 0; c < chunks; c++)
        slow += !fb_bf16_products_exact(fields[c], pk->emin_wd);
    return slow;
}

static fb_status run(const fb_bf16_engine *e, const fb_cpu_call *c,
                     const fb_mlp_problem *p, char *path, size_t len)
{
    const int64_t m = p->m, k = p->k, hid = p->h, n = p->n;
    const int e4m3 = c->packed != NULL &&
                     ((const int *)c->packed)[FIELD_E4M3];
    layout l = layout_of(e, p, c->threads, e4m3);
    const int t = l.threads;
    const int64_t mb = l.queue.most * e->nr;
    const int packed = c->packed != NULL;

    mlp_packed pk;
    pk.e = e, pk.mb = l.mb;
    pk.xstride = fb_bf16_panel_elems(l.kp, e->nr);
    pk.wstride = fb_bf16_panel_elems(l.kp, e->mr);
    pk.dstride = fb_bf16_panel_elems(l.hp, e->mr);
    pk.dpanels = l.dpanels;
    char *ws = c->ws;
    float *b32 = (float *)ws;
    pk.bg = pk.bu = pk.bd = NULL;
    if (p->bg) fb_cpu_to_f32(FB_DTYPE_BF16, p->bg, b32, hid), pk.bg = b32;
    if (p->bu) fb_cpu_to_f32(FB_DTYPE_BF16, p->bu, b32 + hid, hid), pk.bu = b32 + hid;
    if (p->bd) fb_cpu_to_f32(FB_DTYPE_BF16, p->bd, b32 + 2 * hid, n), pk.bd = b32 + 2 * hid;
    char *cur = ws + l.bias_bytes;
    uint16_t *xq = (uint16_t *)cur;
    cur += l.x_bytes;
    char *wbase = packed ? (char *)c->packed + PACK_HEADER : cur;
    uint16_t *wgq = (uint16_t *)wbase;
    uint16_t *wuq = (uint16_t *)(wbase + l.w_bytes);
    uint16_t *wdq = (uint16_t *)(wbase + 2 * l.w_bytes);
    char *shared = packed ? cur : cur + 2 * l.w_bytes + l.d_bytes;
    char *thread_ws = shared + l.shared_bytes;
    pk.x = xq, pk.wg = wgq, pk.wu = wuq, pk.wd = wdq;
    const fb_bf16_operand xop = {p->x, p->ldx, 1};
    int ed = 255;
    int64_t slow = 0;

    /* X and, unless packed, the weights, by all threads together; then
     * every thread may read every panel. */
#pragma omp parallel num_threads(t) if (t > 1) reduction(min : ed)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        (void)fb_bf16_pack_b(e, &xop, m, k, l.xpanels * tid / nt,
                             l.xpanels * (tid + 1) / nt, xq);
        if (!packed) {
            int f[3];
            pack_share(e, p, &l, tid, nt, wgq, wuq, wdq, f);
            ed = f[2];
        }
    }
    pk.emin_wd = packed ? ((const int *)c->packed)[FIELD_D] : ed;
    pk.sg = pk.su = pk.sd = NULL, pk.wd8 = NULL;
    if (packed && ((const int *)c->packed)[FIELD_E4M3]) {
        pk.sg = (const float *)((const char *)wdq + l.d_bytes);
        pk.su = pk.sg + hid, pk.sd = pk.sg + 2 * hid;
        pk.wd8 = p->wd;
    }
    if (l.wide) {
        slow = run_wide(p, &pk, &l, shared, thread_ws);
        char note[48] = "";
        if (slow > 0)
            snprintf(note, sizeof note, "/fp32-down-chunks=%lld",
                     (long long)slow);
        snprintf(path, len, "%s/mlp-wide/rows=%lld/hc=%d/threads=%d%s",
                 e->name, (long long)(l.xpanels * e->nr), HC, t, note);
        return FB_STATUS_SUCCESS;
    }

#pragma omp parallel num_threads(t) if (t > 1) reduction(+ : slow)
    {
        const int tid = omp_get_thread_num();
        char *mine = thread_ws + l.per_thread * (size_t)tid;
        mlp_scratch s;
        s.g = (float *)mine;
        s.u = (float *)(mine + l.acc_bytes);
        s.y = (float *)(mine + 2 * l.acc_bytes);
        s.h = (uint16_t *)(mine + 2 * l.acc_bytes + l.y_bytes);
        s.hpack = s.h + l.mb * HC;
        int64_t r0, rows;
        while ((rows = fb_row_queue_take(&l.queue, e->nr, m, &r0)) > 0)
            slow += row_block(p, &pk, &s, r0, rows);
    }
    char slow_note[48] = "";
    if (slow > 0)
        snprintf(slow_note, sizeof slow_note, "/fp32-down-chunks=%lld",
                 (long long)slow);
    snprintf(path, len, "%s/mlp-rows/mb=%lld/hc=%d/threads=%d%s", e->name,
             (long long)mb, HC, t, slow_note);
    return FB_STATUS_SUCCESS;
}

/* The table's two entries: the driver above on each engine. */
#define ENTRY(entry, engine, name)                                             \
    static int entry##_applies(const fb_cpu_call *c, const fb_mlp_problem *p)  \
    {                                                                          \
        return applies(&engine, c, p);                                         \
    }                                                                          \
    static size_t entry##_workspace(const fb_mlp_problem *p, int threads,      \
                                    int packed)                                \
    {                                                                          \
        return workspace(&engine, p, threads, packed);                         \
    }                                                                          \
    static size_t entry##_pack_bytes(const fb_mlp_problem *p)                  \
    {                                                                          \
        return pack_bytes(&engine, p);                                         \
    }                                                                          \
    static void entry##_pack(const fb_mlp_problem *p, int threads, void *dst)  \
    {                                                                          \
        pack(&engine, p, threads, dst);                                        \
    }                                                                          \
    static fb_status entry##_run(const fb_cpu_call *c,                         \
                                 const fb_mlp_problem *p, char *path,          \
                                 size_t len)                                   \
    {                                                                          \
        return run(&engine, c, p, path, len);                                  \
    }                                                                          \
    const fb_cpu_mlp_impl entry = {                                            \
        name, FB_CPU_OWN_THREADS, entry##_applies, entry##_workspace,          \
        entry##_pack_bytes, entry##_pack, entry##_run, NULL};

ENTRY(fb_cpu_mlp_bf16_amx, fb_bf16_amx, "cpu/bf16-amx")
ENTRY(fb_cpu_mlp_bf16, fb_bf16_avx512, "cpu/bf16-avx512bf16")
