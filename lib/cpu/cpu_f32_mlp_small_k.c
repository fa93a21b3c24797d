/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_mlp_small_k.c -- mlp_geglu_forward for fp32 when k and h are
 * at most FB_SMALL_K_MAX: the tiny MLPs (64 -> 256 -> 64 over many rows),
 * on the small-k kernel (cpu_f32_small_k.c).
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * Why: the packed MLP (cpu_f32_mlp.c) packs X, runs gate and up into
 * accumulator blocks, gates them in a separate pass, packs H and runs the
 * down projection; at k = 64 and h = 256 those passes cost about as much
 * as the products (docs/cpu-kernels.md). Here:
 *  - Wg and Wu share packed panels, 16 rows of each (fb_f32_pack_lanes),
 *    so one 32 x 12 tile holds the gate and up products of the same 16
 *    hidden units and 12 rows of X, and H = act(G + bg) (U + bu) is made
 *    in registers and stored once, into a per-thread block of H (L2);
 *  - X is read in place (no packing), and so is that block of H by the
 *    down projection, whose tiles add bd and store Y directly.
 * Threads take row blocks from a queue; the packed weights
 * (2hk + nh floats) are shared, packed once per call by all threads
 * together (or once for all calls, by a plan).
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_f32_kernel.h"
#include "cpu_impl.h"
#include "cpu_f32_small_k.h"
#include "cpu_packed_blocking.h"

/* Rows of X per block, in 12-row panels: 96 rows, whose H (96 x 512
 * floats at most, 192 KiB) stays in L2 between its two uses. */
#define ROW_PANELS 8

/* Rows of X the decode kernel takes first (cpu_small_m_mlp.c). */
#define MIN_ROWS 16

static int applies(const fb_cpu_call *c, const fb_mlp_problem *p)
{
    (void)c;
    return p->dtype == FB_DTYPE_F32 && p->m > MIN_ROWS && p->k > 0 &&
           p->k <= FB_SMALL_K_MAX && p->h > 0 && p->h <= FB_SMALL_K_MAX &&
           fb_cpu_small_k_allowed();
}

/* Rows [r0, r0 + rows): H for the block, then Y's rows from it. */
static void row_block(const fb_mlp_problem *p, const float *wgu,
                      const float *wd, float *hbuf, int64_t ldh, int64_t r0,
                      int64_t rows)
{
    const fb_small_k_gate g = {(const float *)p->x + r0 * p->ldx,
                               p->ldx,
                               rows,
                               p->k,
                               p->h,
                               wgu,
                               p->bg,
                               p->bu,
                               p->gate_act,
                               hbuf,
                               ldh};
    fb_small_k_gate_rows(&g);
    /* Y_b^T = Wd H_b^T + bd in the normalised column-major form: op(A)
     * Wd (packed), op(B) H's rows read in place, C Y's rows. */
    fb_gemm_problem down;
    memset(&down, 0, sizeof down);
    down.dtype = FB_DTYPE_F32;
    down.m = p->n, down.n = rows, down.k = p->h;
    down.alpha = 1.0f, down.beta = 0.0f;
    down.b = hbuf, down.ldb = ldh;
    down.c = (float *)p->y + r0 * p->ldy, down.ldc = p->ldy;
    down.ep.bias = p->bd;
    down.ep.act = FB_ACT_NONE;
    down.ep.bias_per_row = 1;
    fb_gemm_decide(&down);
    fb_small_k_tiles(&down, wd);
}

/* The shared gate/up panels and Wd's, then per thread a block of H. */
typedef struct layout {
    int threads;
    fb_row_queue queue;
    int64_t gpanels, dpanels, ldh;
    size_t g_bytes, d_bytes, h_bytes;
} layout;

static layout layout_of(const fb_mlp_problem *p, int threads)
{
    layout l;
    l.gpanels = fb_small_k_gate_panels(p->h);
    l.dpanels = (p->n + FB_F32_MR - 1) / FB_F32_MR;
    l.ldh = l.gpanels * 16;
    l.threads = threads;
    l.queue = fb_row_queue_make((p->m + FB_F32_NR - 1) / FB_F32_NR,
                                ROW_PANELS, &l.threads);
    const int64_t mb = l.queue.most * FB_F32_NR;
    l.g_bytes = fb_packed_round64(
        (size_t)(l.gpanels * fb_f32_panel_elems(p->k, FB_F32_MR)) * 4);
    l.d_bytes = fb_packed_round64(
        (size_t)(l.dpanels * fb_f32_panel_elems(p->h, FB_F32_MR)) * 4);
    l.h_bytes = fb_packed_round64((size_t)(mb * l.ldh) * 4);
    return l;
}

static size_t workspace(const fb_mlp_problem *p, int threads, int packed)
{
    const layout l = layout_of(p, threads);
    return (packed ? 0 : l.g_bytes + l.d_bytes) +
           l.h_bytes * (size_t)l.threads;
}

static size_t pack_bytes(const fb_mlp_problem *p)
{
    const layout l = layout_of(p, 1);
    return l.g_bytes + l.d_bytes;
}

/* Each thread its share of the panels of both packed weights, at w. */
static void pack_share(const fb_mlp_problem *p, const layout *l, int tid,
                       int nt, char *w)
{
    const int64_t k = p->k, hid = p->h;
    const int64_t gstride = fb_f32_panel_elems(k, FB_F32_MR);
    const int64_t dstride = fb_f32_panel_elems(hid, FB_F32_MR);
    float *wgu = (float *)w, *wd = (float *)(w + l->g_bytes);
    const fb_f32_operand gop = {p->wg, k, 1}, uop = {p->wu, k, 1};
    const fb_f32_operand dop = {p->wd, hid, 1};
    for (int64_t q = l->gpanels * tid / nt; q < l->gpanels * (tid + 1) / nt;
         q++) {
        fb_f32_pack_lanes(&gop, hid, k, 16 * q, 16, FB_F32_MR,
                          wgu + q * gstride);
        fb_f32_pack_lanes(&uop, hid, k, 16 * q, 16, FB_F32_MR,
                          wgu + q * gstride + 16);
    }
    const int64_t d0 = l->dpanels * tid / nt;
    fb_f32_pack(&dop, p->n, hid, FB_F32_MR, d0, l->dpanels * (tid + 1) / nt,
                wd + d0 * dstride);
}

static void pack(const fb_mlp_problem *p, int threads, void *dst)
{
    const layout l = layout_of(p, 1);
#pragma omp parallel num_threads(threads) if (threads > 1)
    pack_share(p, &l, omp_get_thread_num(), omp_get_num_threads(), dst);
}

static fb_status run(const fb_cpu_call *c, const fb_mlp_problem *p,
                     char *path, size_t len)
{
    layout l = layout_of(p, c->threads);
    const int t = l.threads;
    const int64_t mb = l.queue.most * FB_F32_NR;
    const int packed = c->packed != NULL;
    char *w = packed ? (char *)c->packed : c->ws;
    const float *wgu = (const float *)w;
    const float *wd = (const float *)(w + l.g_bytes);
    char *hbufs = packed ? c->ws : c->ws + l.g_bytes + l.d_bytes;

#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        if (!packed)
            pack_share(p, &l, tid, nt, w);
#pragma omp barrier
        float *hbuf = (float *)(hbufs + l.h_bytes * (size_t)tid);
        int64_t r0, rows;
        while ((rows = fb_row_queue_take(&l.queue, FB_F32_NR, p->m, &r0)) >
               0)
            row_block(p, wgu, wd, hbuf, l.ldh, r0, rows);
    }
    snprintf(path, len, "cpu/f32-small-k/mlp/mb=%lld/threads=%d",
             (long long)mb, t);
    return FB_STATUS_SUCCESS;
}

const fb_cpu_mlp_impl fb_cpu_mlp_small_k = {
    "cpu/f32-small-k", FB_CPU_OWN_THREADS, applies, workspace, pack_bytes,
    pack, run, NULL};
