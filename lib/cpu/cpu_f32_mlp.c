/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_mlp.c -- mlp_geglu_forward for fp32 on the AVX-512F kernel
 * (cpu_f32_kernel.h), for the prefill shapes (more rows than the decode
 * kernel takes), where fb_cpu_f32_kernel_chosen picks the kernel over
 * OpenBLAS.
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * The plan of cpu_bf16_mlp.c, without its declining (fp32 FMA keeps
 * denormals): all three weights and X are packed once by all threads
 * together; threads then take blocks of at most 96 rows from a queue
 * (cpu_packed_blocking.h). For one row block and one chunk of the hidden
 * width (256):
 *   G^T = Wg_c X_b^T, U^T = Wu_c X_b^T       96 KiB each, in L2
 *   H = act_g(G + bg) .* (U + bu)            in place of G, in cache
 *   H packed (12-row panels, k = the chunk)
 *   Y_b^T += Wd_c H^T                        accumulators, n x 96
 * and when the chunks are done, Y_b = Y_b + bd, stored. H is never
 * written to memory in full; each row block streams the packed weights
 * from L3 once.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include "cpu.h"
#include "cpu_epilogue.h"
#include "cpu_packed_blocking.h"
#include "cpu_f32_gemm.h"
#include "cpu_f32_kernel.h"

/* Rows per block (in 12-row panels of X) and hidden columns per chunk (in
 * 32-row panels of Wg, Wu), as the bf16 MLP: the best measured of 96..192
 * rows and 256..512 columns (docs/cpu-kernels.md). */
#define ROW_PANELS 8
#define HIDDEN_PANELS 8
#define MB (ROW_PANELS * FB_F32_NR)
#define HC (HIDDEN_PANELS * FB_F32_MR)

int fb_cpu_f32_mlp_applies(fb_handle h, const fb_mlp_problem *p,
                           int64_t min_rows)
{
    return p->dtype == FB_DTYPE_F32 && p->m > min_rows && p->k > 0 &&
           p->h > 0 && fb_cpu_f32_kernel_chosen(h);
}

typedef struct mlp_packed {
    const float *x, *wg, *wu, *wd;
    int64_t xstride, wstride, dstride; /* floats between panels */
    int64_t dpanels;                   /* 32-row panels of Wd */
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
            fb_cpu_gate(s->g + t * HC, s->u + t * HC,
                        p->bg ? (const float *)p->bg + h0 : NULL,
                        p->bu ? (const float *)p->bu + h0 : NULL, hc,
                        p->gate_act);
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
    for (int64_t t = 0; t < rows; t++)
        fb_cpu_bias_act_store((float *)p->y + (r0 + t) * p->ldy,
                              s->y + t * ldy, (const float *)p->bd, p->n,
                              FB_ACT_NONE);
}

int fb_cpu_f32_mlp(fb_handle h, const fb_mlp_problem *p, fb_status *st,
                   char *path, size_t len)
{
    const int64_t m = p->m, k = p->k, hid = p->h, n = p->n;
    const int64_t xpanels = (m + FB_F32_NR - 1) / FB_F32_NR;
    const int64_t wpanels = (hid + FB_F32_MR - 1) / FB_F32_MR;
    const int64_t dpanels = (n + FB_F32_MR - 1) / FB_F32_MR;
    const double flops = 2.0 * (double)m *
                         (2.0 * (double)hid * (double)k + (double)hid * (double)n);
    int t = fb_cpu_own_threads(h, flops);
    /* Fewer rows per block when there are too few for every thread. */
    fb_row_queue queue = fb_row_queue_make(xpanels, ROW_PANELS, &t);
    const int64_t mb = queue.most * FB_F32_NR;

    mlp_packed pk;
    pk.xstride = fb_f32_panel_elems(k, FB_F32_NR);
    pk.wstride = fb_f32_panel_elems(k, FB_F32_MR);
    pk.dstride = fb_f32_panel_elems(hid, FB_F32_MR);
    pk.dpanels = dpanels;
    const size_t x_bytes = fb_packed_round64((size_t)(xpanels * pk.xstride) * 4);
    const size_t w_bytes = fb_packed_round64((size_t)(wpanels * pk.wstride) * 4);
    const size_t d_bytes = fb_packed_round64((size_t)(dpanels * pk.dstride) * 4);
    const size_t acc_bytes = (size_t)HC * MB * 4;
    const size_t y_bytes = (size_t)y_ld(dpanels) * MB * 4;
    const size_t per_thread = 3 * acc_bytes + y_bytes;
    const size_t bytes = x_bytes + 2 * w_bytes + d_bytes +
                         per_thread * (size_t)t;
    float *ws = fb_handle_workspace(h, bytes);
    if (ws == NULL) {
        snprintf(path, len, "fp32 MLP kernel: cannot allocate %zu bytes of "
                 "workspace", bytes);
        *st = FB_STATUS_ALLOC_FAILED;
        return 1;
    }
    char *cur = (char *)ws;
    float *xq = (float *)cur;
    float *wgq = (float *)(cur += x_bytes);
    float *wuq = (float *)(cur += w_bytes);
    float *wdq = (float *)(cur += w_bytes);
    char *thread_ws = cur + d_bytes;
    pk.x = xq, pk.wg = wgq, pk.wu = wuq, pk.wd = wdq;
    const fb_f32_operand xop = {p->x, p->ldx, 1}, gop = {p->wg, k, 1};
    const fb_f32_operand uop = {p->wu, k, 1}, dop = {p->wd, hid, 1};
    /* Weights packed larger than the last-level cache come back from
     * memory in every row block: write them past the cache. */
    void (*const pack_w)(const fb_f32_operand *, int64_t, int64_t, int,
                         int64_t, int64_t, float *) =
        fb_f32_pack_streams(2 * w_bytes + d_bytes) ? fb_f32_pack_streamed
                                                   : fb_f32_pack;

#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* Each thread packs its share of every operand's panels. */
#define SHARE(pack, total, dst, stride, op, rows, depth, r)                    \
        do {                                                                   \
            const int64_t a0 = (total) * tid / nt;                             \
            pack(&(op), rows, depth, r, a0, (total) * (tid + 1) / nt,          \
                 (dst) + a0 * (stride));                                       \
        } while (0)
        SHARE(fb_f32_pack, xpanels, xq, pk.xstride, xop, m, k, FB_F32_NR);
        SHARE(pack_w, wpanels, wgq, pk.wstride, gop, hid, k, FB_F32_MR);
        SHARE(pack_w, wpanels, wuq, pk.wstride, uop, hid, k, FB_F32_MR);
        SHARE(pack_w, dpanels, wdq, pk.dstride, dop, n, hid, FB_F32_MR);
#undef SHARE
#pragma omp barrier
        char *mine = thread_ws + per_thread * (size_t)tid;
        mlp_scratch s;
        s.g = (float *)mine;
        s.u = (float *)(mine + acc_bytes);
        s.hpack = (float *)(mine + 2 * acc_bytes);
        s.y = (float *)(mine + 3 * acc_bytes);
        int64_t r0, rows;
        while ((rows = fb_row_queue_take(&queue, FB_F32_NR, m, &r0)) > 0)
            row_block(p, &pk, &s, r0, rows);
    }
    snprintf(path, len, "cpu/f32-avx512/mlp-rows/mb=%lld/hc=%d/threads=%d",
             (long long)mb, HC, t);
    *st = FB_STATUS_SUCCESS;
    return 1;
}
