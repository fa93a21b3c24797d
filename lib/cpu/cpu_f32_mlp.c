/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_mlp.c -- mlp_geglu_forward for fp32 on the AVX-512F kernel
 * (cpu_f32_kernel.h), for the prefill shapes (more rows than the decode
 * kernel takes), where fb_cpu_f32_kernel_chosen picks the kernel over
 * OpenBLAS.
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * The plan of cpu_bf16_mlp.c, without its exponent rule (fp32 FMA keeps
 * denormals): all three weights (unless a plan packed them already) and
 * X are packed once by all threads together; threads then take blocks of at most 96 rows from a queue
 * (cpu_packed_blocking.h). For one row block and one chunk of the hidden
 * width (256):
 *   G^T = Wg_c X_b^T, U^T = Wu_c X_b^T       96 KiB each, in L2
 *   H = act_g(G + bg) .* (U + bu)            in place of G, in cache
 *   H packed (12-row panels, k = the chunk)
 *   Y_b^T += Wd_c H^T                        accumulators, n x 96
 * and when the chunks are done, Y_b = Y_b + bd, stored. H is never
 * written to memory in full; each row block streams the packed weights
 * from L3 once.
 *
 * With more than one thread, few rows or large weights (run_wide, where
 * wide_form says), the threads split the weights instead, on groups of
 * up to 264 rows: row blocks would be too few to share, or each would
 * stream every weight again from memory.
 * The sums are the row blocks' in the same order, so the bits are the
 * same.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_epilogue.h"
#include "cpu_packed_blocking.h"
#include "cpu_f32_gemm.h"
#include "cpu_f32_kernel.h"
#include "cpu_f32_mlp.h"
#include "cpu_impl.h"

/* Rows per block (in 12-row panels of X) and hidden columns per chunk (in
 * 32-row panels of Wg, Wu), as the bf16 MLP: the best measured of 96..192
 * rows and 256..512 columns (docs/cpu-kernels.md). */
#define ROW_PANELS 8
#define HIDDEN_PANELS 8
#define MB (ROW_PANELS * FB_F32_NR)
#define HC (HIDDEN_PANELS * FB_F32_MR)

typedef struct mlp_packed {
    const float *x, *wg, *wu, *wd;
    int64_t xstride, wstride, dstride; /* floats between panels */
    int64_t dpanels;                   /* 32-row panels of Wd */
    /* NULL, or e4m3 weights' channel scales (cpu_fp8_wide.c): G and U's
     * before the gate, Y's before its bias */
    const float *sg, *su, *sd;
} mlp_packed;

/* Per-thread buffers. */
typedef struct mlp_scratch {
    float *g, *u;  /* HC x MB, ld HC (column t: token t); H in g */
    float *y;      /* dpanels * 32 x MB, ld dpanels * 32 */
    float *hpack;  /* the packed H: ROW_PANELS panels of depth HC */
} mlp_scratch;

/* Floats between the columns (tokens) of the Y accumulators: Wd's rows
 * and 16 more, so that the 12 columns of a tile do not fall in one L1 set
 * when n is a multiple of 1024 (a 16 KiB stride: 24 lines in 2 sets of a
 * 12-way L1, which slows the down projection: docs/cpu-kernels.md). */
static int64_t y_ld(int64_t dpanels)
{
    return dpanels * FB_F32_MR + 16;
}

/* H = act_g(G + bg) .* (U + bu) over hidden columns [h0, h0 + hc) of one
 * token, in place of G; with e4m3 scales, of G sg and U su. */
static void gate(const fb_mlp_problem *p, const mlp_packed *pk, float *g,
                 const float *u, int64_t h0, int64_t hc)
{
    const float *bg = p->bg ? (const float *)p->bg + h0 : NULL;
    const float *bu = p->bu ? (const float *)p->bu + h0 : NULL;
    if (pk->sg != NULL)
        fb_cpu_gate_scaled(g, u, pk->sg + h0, pk->su + h0, bg, bu, hc,
                           p->gate_act);
    else
        fb_cpu_gate(g, u, bg, bu, hc, p->gate_act);
}

/* Rows [r0, r0 + rows) of Y: every chunk of the hidden width, then the
 * store. */
static void row_block(const fb_mlp_problem *p, const mlp_packed *pk,
                      const mlp_scratch *s, int64_t r0, int64_t rows)
{
    const int64_t k = p->k, ldy = y_ld(pk->dpanels);
    const int64_t xpanels = (rows + FB_F32_NR - 1) / FB_F32_NR;
    const float *xb = pk->x + (r0 / FB_F32_NR) * pk->xstride;
    for (int64_t h0 = 0; h0 < p->h; h0 += HC) {
        const int64_t hc = p->h - h0 < HC ? p->h - h0 : HC;
        const int64_t na = (hc + FB_F32_MR - 1) / FB_F32_MR;
        const int64_t q0 = h0 / FB_F32_MR;
        fb_f32_block(pk->wg + q0 * pk->wstride, pk->wstride, na, xb,
                     pk->xstride, xpanels, k, 1.0f, 0, s->g, HC);
        fb_f32_block(pk->wu + q0 * pk->wstride, pk->wstride, na, xb,
                     pk->xstride, xpanels, k, 1.0f, 0, s->u, HC);
        for (int64_t t = 0; t < rows; t++)
            gate(p, pk, s->g + t * HC, s->u + t * HC, h0, hc);
        /* H is op(B) of the down projection, k = the chunk's width. */
        const fb_f32_operand hop = {s->g, HC, 1};
        fb_f32_pack(&hop, rows, hc, FB_F32_NR, 0, xpanels, s->hpack);
        /* Wd's chunk (n x 256) is larger than L2: each of its panels is
         * read once, against every panel of H (in L2). */
        fb_f32_block_ordered(pk->wd + h0 * FB_F32_MR, pk->dstride,
                             pk->dpanels, s->hpack,
                             fb_f32_panel_elems(hc, FB_F32_NR), xpanels, hc,
                             1.0f, h0 > 0, s->y, ldy, 1);
    }
    if (pk->sd != NULL)
        fb_cpu_scale_block(s->y, ldy, pk->sd, 1, 0, 0, p->n, rows, 1.0f);
    for (int64_t t = 0; t < rows; t++)
        fb_cpu_bias_act_store((float *)p->y + (r0 + t) * p->ldy,
                              s->y + t * ldy, (const float *)p->bd, p->n,
                              FB_ACT_NONE);
}

/* Rows of X the decode kernel takes first (cpu_small_m_mlp.c). */
#define MIN_ROWS 16

/* The hidden-split form (run_wide) runs with more than one thread where
 * row blocks would be too few to share (up to WIDE_ROWS rows; it also
 * keeps the bits of one thread's row blocks there, which row blocks cut
 * for two threads would not), or where
 * the packed weights are so large (WIDE_BYTES or more) that streaming
 * them again for every 96-row block costs more than the form's barriers,
 * and each thread has two hidden chunks or more. It takes the rows in
 * groups of at most GROUP_PANELS panels (264 rows), each streaming every
 * weight once (docs/cpu-kernels.md). */
#define WIDE_ROWS 256
#define WIDE_BYTES ((size_t)64 << 20)
#define GROUP_PANELS 22

static int wide_form(const fb_mlp_problem *p, int threads,
                     size_t weight_bytes)
{
    const int64_t chunks = (p->h + HC - 1) / HC;
    return threads > 1 &&
           (p->m <= WIDE_ROWS ||
            (weight_bytes >= WIDE_BYTES && chunks >= 2 * threads));
}

static int applies(const fb_cpu_call *c, const fb_mlp_problem *p)
{
    return p->dtype == FB_DTYPE_F32 && p->m > MIN_ROWS && p->k > 0 &&
           p->h > 0 && fb_cpu_f32_kernel_chosen(c->h);
}

/* The call's sizes: packed X, packed Wg, Wu and Wd, then per thread G,
 * U, H packed and Y's accumulators; or for the hidden-split form, all of
 * H packed and all of Y's accumulators, shared, and per thread G and U
 * for every row. */
typedef struct layout {
    int threads;
    int wide;
    fb_row_queue queue;
    int64_t xpanels, wpanels, dpanels;
    size_t x_bytes, w_bytes, d_bytes, acc_bytes, y_bytes, per_thread;
    size_t h_bytes, shared_bytes;
    int64_t group_panels; /* wide: panels of X per group */
} layout;

static layout layout_of(const fb_mlp_problem *p, int threads)
{
    layout l;
    l.xpanels = (p->m + FB_F32_NR - 1) / FB_F32_NR;
    l.wpanels = (p->h + FB_F32_MR - 1) / FB_F32_MR;
    l.dpanels = (p->n + FB_F32_MR - 1) / FB_F32_MR;
    /* Fewer rows per block when there are too few for every thread. */
    l.threads = threads;
    l.queue = fb_row_queue_make(l.xpanels, ROW_PANELS, &l.threads);
    l.x_bytes = fb_packed_round64(
        (size_t)(l.xpanels * fb_f32_panel_elems(p->k, FB_F32_NR)) * 4);
    l.w_bytes = fb_packed_round64(
        (size_t)(l.wpanels * fb_f32_panel_elems(p->k, FB_F32_MR)) * 4);
    l.d_bytes = fb_packed_round64(
        (size_t)(l.dpanels * fb_f32_panel_elems(p->h, FB_F32_MR)) * 4);
    l.acc_bytes = (size_t)HC * MB * 4;
    l.y_bytes = (size_t)y_ld(l.dpanels) * MB * 4;
    l.per_thread = 3 * l.acc_bytes + l.y_bytes;
    l.h_bytes = l.shared_bytes = 0;
    l.wide = wide_form(p, threads, 2 * l.w_bytes + l.d_bytes);
    if (l.wide) {
        const int64_t groups = (l.xpanels + GROUP_PANELS - 1) / GROUP_PANELS;
        l.group_panels = (l.xpanels + groups - 1) / groups;
        const size_t cols = (size_t)(l.group_panels * FB_F32_NR);
        l.threads = threads;
        l.acc_bytes = fb_packed_round64((size_t)HC * cols * 4);
        l.per_thread = 2 * l.acc_bytes;
        l.h_bytes = fb_packed_round64(
            (size_t)(l.group_panels * fb_f32_panel_elems(p->h, FB_F32_NR)) * 4);
        l.y_bytes = fb_packed_round64((size_t)y_ld(l.dpanels) * cols * 4);
        l.shared_bytes = l.h_bytes + l.y_bytes;
    }
    return l;
}

static size_t workspace(const fb_mlp_problem *p, int threads, int packed)
{
    const layout l = layout_of(p, threads);
    return l.x_bytes + (packed ? 0 : 2 * l.w_bytes + l.d_bytes) +
           l.shared_bytes + l.per_thread * (size_t)l.threads;
}

static size_t pack_bytes(const fb_mlp_problem *p)
{
    const layout l = layout_of(p, 1);
    return 2 * l.w_bytes + l.d_bytes;
}

/* Each thread its share of the panels of Wg, Wu and Wd, at w. Weights
 * packed larger than the last-level cache come back from memory in every
 * row block: they are written past the cache. */
static void pack_share(const fb_mlp_problem *p, const layout *l, int tid,
                       int nt, char *w)
{
    const int64_t k = p->k, hid = p->h;
    const fb_f32_operand gop = {p->wg, k, 1}, uop = {p->wu, k, 1};
    const fb_f32_operand dop = {p->wd, hid, 1};
    void (*const pack_w)(const fb_f32_operand *, int64_t, int64_t, int,
                         int64_t, int64_t, float *) =
        fb_f32_pack_streams(2 * l->w_bytes + l->d_bytes) ? fb_f32_pack_streamed
                                                         : fb_f32_pack;
    const int64_t wstride = fb_f32_panel_elems(k, FB_F32_MR);
    const int64_t dstride = fb_f32_panel_elems(hid, FB_F32_MR);
    float *wgq = (float *)w, *wuq = (float *)(w + l->w_bytes);
    float *wdq = (float *)(w + 2 * l->w_bytes);
    const int64_t g0 = l->wpanels * tid / nt, g1 = l->wpanels * (tid + 1) / nt;
    const int64_t d0 = l->dpanels * tid / nt, d1 = l->dpanels * (tid + 1) / nt;
    pack_w(&gop, hid, k, FB_F32_MR, g0, g1, wgq + g0 * wstride);
    pack_w(&uop, hid, k, FB_F32_MR, g0, g1, wuq + g0 * wstride);
    pack_w(&dop, p->n, hid, FB_F32_MR, d0, d1, wdq + d0 * dstride);
}

static void pack(const fb_mlp_problem *p, int threads, void *dst)
{
    const layout l = layout_of(p, 1);
#pragma omp parallel num_threads(threads) if (threads > 1)
    pack_share(p, &l, omp_get_thread_num(), omp_get_num_threads(), dst);
}

/* The hidden-split form, on groups of at most GROUP_PANELS panels of X
 * in turn. Each thread takes a share of the hidden chunks (G and U, the
 * gate, H packed into its depth range of every panel of the group's H),
 * then a share of Wd's panels, on which it runs the whole depth of H: the
 * same FMAs in the same order as the row blocks' chunk after chunk. */
static void run_wide(const fb_mlp_problem *p, const mlp_packed *pk,
                     const layout *l, char *shared, char *thread_ws)
{
    const int64_t m = p->m, hid = p->h, ldy = y_ld(l->dpanels);
    const int64_t chunks = (hid + HC - 1) / HC;
    const int64_t hstride = fb_f32_panel_elems(hid, FB_F32_NR);
    const int64_t gp = l->group_panels;
    float *hall = (float *)shared;
    float *yacc = (float *)(shared + l->h_bytes);
#pragma omp parallel num_threads(l->threads)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        float *g = (float *)(thread_ws + l->per_thread * (size_t)tid);
        float *u = (float *)((char *)g + l->acc_bytes);
        const fb_f32_operand hop = {g, HC, 1};
        const int64_t d0 = l->dpanels * tid / nt;
        const int64_t d1 = l->dpanels * (tid + 1) / nt;
        const int64_t j0 = d0 * FB_F32_MR;
        const int64_t j1 = d1 * FB_F32_MR < p->n ? d1 * FB_F32_MR : p->n;
        for (int64_t x0 = 0; x0 < l->xpanels; x0 += gp) {
            const int64_t np = l->xpanels - x0 < gp ? l->xpanels - x0 : gp;
            const int64_t r0 = x0 * FB_F32_NR;
            const int64_t rows = m - r0 < np * FB_F32_NR ? m - r0
                                                         : np * FB_F32_NR;
            const float *xg = pk->x + x0 * pk->xstride;
            for (int64_t c = chunks * tid / nt; c < chunks * (tid + 1) / nt;
                 c++) {
                const int64_t h0 = c * HC;
                const int64_t hc = hid - h0 < HC ? hid - h0 : HC;
                const int64_t na = (hc + FB_F32_MR - 1) / FB_F32_MR;
                const int64_t q0 = h0 / FB_F32_MR;
                fb_f32_block(pk->wg + q0 * pk->wstride, pk->wstride, na, xg,
                             pk->xstride, np, p->k, 1.0f, 0, g, HC);
                fb_f32_block(pk->wu + q0 * pk->wstride, pk->wstride, na, xg,
                             pk->xstride, np, p->k, 1.0f, 0, u, HC);
                for (int64_t t = 0; t < rows; t++)
                    gate(p, pk, g + t * HC, u + t * HC, h0, hc);
                for (int64_t q = 0; q < np; q++)
                    fb_f32_pack(&hop, rows, hc, FB_F32_NR, q, q + 1,
                                hall + q * hstride + h0 * FB_F32_NR);
            }
#pragma omp barrier
            if (d1 > d0) {
                fb_f32_block_ordered(pk->wd + d0 * pk->dstride, pk->dstride,
                                     d1 - d0, hall, hstride, np, hid, 1.0f,
                                     0, yacc + j0, ldy, 1);
                if (pk->sd != NULL)
                    fb_cpu_scale_block(yacc + j0, ldy, pk->sd, 1, j0, 0,
                                       j1 - j0, rows, 1.0f);
                for (int64_t t = 0; t < rows; t++)
                    fb_cpu_bias_act_store(
                        (float *)p->y + (r0 + t) * p->ldy + j0,
                        yacc + t * ldy + j0,
                        p->bd ? (const float *)p->bd + j0 : NULL, j1 - j0,
                        FB_ACT_NONE);
            }
            /* The next group's H overwrites this one's. */
#pragma omp barrier
        }
    }
}

/* run(), where scales is NULL or the e4m3 scales sg, su, sd (h, h, n
 * floats) after the packed weights. */
static fb_status run_scaled(const fb_cpu_call *c, const fb_mlp_problem *p,
                            const float *scales, char *path, size_t len)
{
    const int64_t m = p->m, k = p->k, hid = p->h;
    layout l = layout_of(p, c->threads);
    const int t = l.threads;
    const int64_t mb = l.queue.most * FB_F32_NR;
    const int packed = c->packed != NULL;

    mlp_packed pk;
    pk.xstride = fb_f32_panel_elems(k, FB_F32_NR);
    pk.wstride = fb_f32_panel_elems(k, FB_F32_MR);
    pk.dstride = fb_f32_panel_elems(hid, FB_F32_MR);
    pk.dpanels = l.dpanels;
    pk.sg = scales;
    pk.su = scales != NULL ? scales + hid : NULL;
    pk.sd = scales != NULL ? scales + 2 * hid : NULL;
    char *cur = c->ws;
    float *xq = (float *)cur;
    cur += l.x_bytes;
    char *w = packed ? (char *)c->packed : cur;
    char *shared = packed ? cur : cur + 2 * l.w_bytes + l.d_bytes;
    char *thread_ws = shared + l.shared_bytes;
    pk.x = xq, pk.wg = (const float *)w;
    pk.wu = (const float *)(w + l.w_bytes);
    pk.wd = (const float *)(w + 2 * l.w_bytes);
    const fb_f32_operand xop = {p->x, p->ldx, 1};

    /* X and, unless packed, the weights, by all threads together; then
     * every thread may read every panel. */
#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t x0 = l.xpanels * tid / nt;
        fb_f32_pack(&xop, m, k, FB_F32_NR, x0, l.xpanels * (tid + 1) / nt,
                    xq + x0 * pk.xstride);
        if (!packed)
            pack_share(p, &l, tid, nt, w);
    }
    if (l.wide) {
        run_wide(p, &pk, &l, shared, thread_ws);
        snprintf(path, len, "cpu/f32-avx512/mlp-wide/rows=%lld/hc=%d/threads=%d",
                 (long long)(l.group_panels * FB_F32_NR), HC, t);
        return FB_STATUS_SUCCESS;
    }
#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num();
        char *mine = thread_ws + l.per_thread * (size_t)tid;
        mlp_scratch s;
        s.g = (float *)mine;
        s.u = (float *)(mine + l.acc_bytes);
        s.hpack = (float *)(mine + 2 * l.acc_bytes);
        s.y = (float *)(mine + 3 * l.acc_bytes);
        int64_t r0, rows;
        while ((rows = fb_row_queue_take(&l.queue, FB_F32_NR, m, &r0)) > 0)
            row_block(p, &pk, &s, r0, rows);
    }
    snprintf(path, len, "cpu/f32-avx512/mlp-rows/mb=%lld/hc=%d/threads=%d",
             (long long)mb, HC, t);
    return FB_STATUS_SUCCESS;
}

static fb_status run(const fb_cpu_call *c, const fb_mlp_problem *p,
                     char *path, size_t len)
{
    return run_scaled(c, p, NULL, path, len);
}

size_t fb_cpu_f32_mlp_pack_e4m3_bytes(const fb_mlp_problem *p)
{
    return pack_bytes(p) + (size_t)(2 * p->h + p->n) * sizeof(float);
}

size_t fb_cpu_f32_mlp_e4m3_workspace(const fb_mlp_problem *p, int threads)
{
    return workspace(p, threads, 1);
}

void fb_cpu_f32_mlp_pack_e4m3(const fb_mlp_problem *p, const float *sg,
                              const float *su, const float *sd, int threads,
                              void *dst)
{
    const layout l = layout_of(p, 1);
    char *w = (char *)dst;
    float *sc = (float *)(w + pack_bytes(p));
    memcpy(sc, sg, (size_t)p->h * sizeof(float));
    memcpy(sc + p->h, su, (size_t)p->h * sizeof(float));
    memcpy(sc + 2 * p->h, sd, (size_t)p->n * sizeof(float));
    const int64_t wstride = fb_f32_panel_elems(p->k, FB_F32_MR);
    const int64_t dstride = fb_f32_panel_elems(p->h, FB_F32_MR);
    float *wgq = (float *)w, *wuq = (float *)(w + l.w_bytes);
    float *wdq = (float *)(w + 2 * l.w_bytes);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t g0 = l.wpanels * tid / nt;
        const int64_t g1 = l.wpanels * (tid + 1) / nt;
        const int64_t d0 = l.dpanels * tid / nt;
        const int64_t d1 = l.dpanels * (tid + 1) / nt;
        fb_f32_pack_e4m3((const uint8_t *)p->wg, p->k, p->h, p->k, g0, g1,
                         wgq + g0 * wstride);
        fb_f32_pack_e4m3((const uint8_t *)p->wu, p->k, p->h, p->k, g0, g1,
                         wuq + g0 * wstride);
        fb_f32_pack_e4m3((const uint8_t *)p->wd, p->h, p->n, p->h, d0, d1,
                         wdq + d0 * dstride);
    }
}

fb_status fb_cpu_f32_mlp_run_e4m3(const fb_cpu_call *c,
                                  const fb_mlp_problem *p, char *path,
                                  size_t len)
{
    return run_scaled(c, p, (const float *)((const char *)c->packed +
                                            pack_bytes(p)),
                      path, len);
}

const fb_cpu_mlp_impl fb_cpu_mlp_f32 = {
    "cpu/f32-avx512", FB_CPU_OWN_THREADS, applies, workspace, pack_bytes,
    pack, run, NULL};
