/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m_mlp.c -- mlp_geglu_forward in the decode shape (at most 32
 * rows of X, or FB_SMALL_M_AMX_MAX of bf16 on AMX) on the small-m kernel
 * (cpu_small_m.h), every dtype: the three weights stream once at memory
 * speed (bf16 on AMX or VDPBF16PS too).
 *
 * Few rows of X: each thread owns a slice [h0, h1) of the hidden width and
 * streams its rows of Wg and Wu, then its columns of Wd, each element once
 * (16-bit weights as they are: the kernel widens them in registers):
 *   G, U = X Wg[h0:h1]^T, X Wu[h0:h1]^T          (m x hs each, L2)
 *   H = act_g(G + bg) .* (U + bu), in place of G  (rounded to the dtype)
 *   Ypart = H Wd[:, h0:h1]^T                      (m x n)
 * then the threads' partial Y are summed, bd added, Y stored. Whole slices
 * rather than chunks, so each weight is one unbroken stream for the
 * kernel's prefetch; X (m x k), H and U (m x hs) stay in L2/L3.
 *
 * Two entries share this driver, as in cpu_small_m_gemm.c:
 * cpu/small-m-avx512 and cpu/small-m-avx2 (no VDPBF16PS).
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_impl.h"
#include "cpu_bf16_kernel.h"
#include "cpu_small_m.h"

static int decode_shape(const fb_mlp_problem *p)
{
    return p->m <= FB_SMALL_M_MAX && p->k > 0 && p->h > 0;
}

/* bf16 on AMX takes any number of rows, in blocks of as many as its
 * token tiles hold, and fp16 in blocks of the FMA form's: the weights
 * stream once a block, where the bf16 driver would pack them all first
 * (and fp16's OpenBLAS path would widen them to fp32). */
static int amx_shape(const fb_mlp_problem *p)
{
    return p->dtype == FB_DTYPE_BF16 && p->k > 0 && p->h > 0 &&
           fb_cpu_amx_available();
}

static int f16_shape(const fb_mlp_problem *p)
{
    return p->dtype == FB_DTYPE_F16 && p->k > 0 && p->h > 0;
}

/* Rows of X a block: all of them up to the form's most (AMX's or the FMA
 * form's), else equal blocks of at most that many. */
static int64_t block_rows(const fb_mlp_problem *p)
{
    return fb_cpu_small_m_block(
        p->m, amx_shape(p) ? FB_SMALL_M_AMX_MAX : FB_SMALL_M_MAX);
}

static int applies_avx512(const fb_cpu_call *c, const fb_mlp_problem *p)
{
    (void)c;
    return (decode_shape(p) || amx_shape(p) || f16_shape(p)) &&
           fb_cpu_small_m_available();
}

/* Past FB_SMALL_M_MAX tokens, only weights large enough, and fp16 only
 * up to FB_SMALL_M_F16_MAX rows, from where OpenBLAS on fp32 copies
 * keeps up (docs/cpu-kernels.md). */
#define FB_SMALL_M_F16_MAX 128
static int prefers(const fb_mlp_problem *p)
{
    const double bytes =
        2.0 * (2.0 * (double)p->k + (double)p->n) * (double)p->h;
    const double per_row =
        p->dtype == FB_DTYPE_BF16 && p->m > FB_SMALL_M_AMX_MAX &&
                bytes < (double)FB_SMALL_M_AMX_MLP_SMALL_BYTES
            ? (double)FB_SMALL_M_AMX_MLP_SMALL_BYTES_PER_ROW
            : (double)FB_SMALL_M_AMX_BYTES_PER_ROW;
    return p->m <= FB_SMALL_M_MAX ||
           ((p->dtype != FB_DTYPE_F16 || p->m <= FB_SMALL_M_F16_MAX) &&
            bytes >= (double)p->m * per_row);
}

static int applies_avx2(const fb_cpu_call *c, const fb_mlp_problem *p)
{
    (void)c;
    return decode_shape(p) && fb_cpu_small_m_avx2_available();
}

/* Slices of the hidden width, and the workspace in floats: X (fp32, and
 * bf16 for VDPBF16PS or AMX, and AMX's packed X), the biases in fp32
 * (16-bit), then per slice H, U
 * and a partial Y. */
typedef struct layout {
    int threads;
    int64_t block, blocks, ldx, ldx16, ldh;
    int dpa, amx;
    int64_t xamx, hamx; /* floats of AMX's packed X, and of a slice's H */
    int64_t shared, per_thread;
} layout;

#define ROUND16(x) (((x) + 15) / 16 * 16)

static layout layout_of(const fb_mlp_problem *p, int threads, int avx512)
{
    layout l;
    const int64_t m = p->m, k = p->k, hw = p->h, n = p->n;
    const int wide = p->dtype != FB_DTYPE_F32;
    int t = threads;
    /* Slices are whole 30-row blocks (6-row FMA and 5-row VDPBF16PS blocks
     * of the AVX-512 kernel, 3-row ones of the AVX2 one), or 32-row ones
     * (AMX's 16-row tiles, 32 of k), when there are enough. */
    l.amx = avx512 && p->dtype == FB_DTYPE_BF16 &&
            m >= FB_SMALL_M_AMX_MIN_ROWS && fb_cpu_amx_available();
    l.block = l.amx ? 32 : 30;
    l.blocks = (hw + l.block - 1) / l.block;
    if (t > l.blocks)
        t = (int)l.blocks;
    l.threads = t;
    const int64_t hs_max = (l.blocks + t - 1) / t * l.block;
    /* X, and each slice's H, in panels whose rows sit off the weights' L1
     * sets (fb_cpu_small_m_panel_ld): fp32, and for bf16 products bf16. H's
     * bf16 copy takes U's place once U is spent. */
    l.dpa = !l.amx && avx512 && p->dtype == FB_DTYPE_BF16 &&
            m >= FB_SMALL_M_DP_MIN_ROWS && fb_cpu_small_m_dp_available();
    l.ldx = fb_cpu_small_m_panel_ld(k, 4);
    l.ldx16 = fb_cpu_small_m_panel_ld(k, 2);
    l.ldh = fb_cpu_small_m_panel_ld(hs_max, 4);
    l.xamx = l.amx ? ROUND16((int64_t)fb_cpu_small_m_amx_pack_bytes(m, k) / 4)
                   : 0;
    l.hamx = l.amx ? ROUND16((int64_t)fb_cpu_small_m_amx_pack_bytes(m, hs_max) / 4)
                   : 0;
    l.shared = m * l.ldx +
               (l.dpa || l.amx ? ROUND16((m * l.ldx16 + 1) / 2) : 0) +
               l.xamx + (wide ? ROUND16(2 * hw) + ROUND16(n) : 0);
    l.per_thread = 2 * m * l.ldh + ROUND16(m * n) + l.hamx;
    return l;
}

static size_t workspace_with(int avx512, const fb_mlp_problem *p,
                             int threads)
{
    fb_mlp_problem q = *p;
    q.m = block_rows(p);
    const layout l = layout_of(&q, threads, avx512);
    return ((size_t)l.shared + (size_t)l.per_thread * (size_t)l.threads +
            16) * sizeof(float);
}

static size_t workspace_avx512(const fb_mlp_problem *p, int threads,
                               int packed)
{
    (void)packed;
    return workspace_with(1, p, threads);
}

static size_t workspace_avx2(const fb_mlp_problem *p, int threads,
                             int packed)
{
    (void)packed;
    return workspace_with(0, p, threads);
}

static const void *at(const void *base, fb_dtype t, int64_t elems)
{
    return (const char *)base + elems * fb_dtype_size(t);
}

/* The FMA kernel over m rows, FB_SMALL_M_MAX at a time (AMX's calls take
 * more). */
static void kernel_rows(fb_cpu_small_m_fn kernel, fb_dtype t, int64_t m,
                        int64_t n, int64_t k, const float *x, int64_t ldx,
                        const void *w, int64_t ldw, float *out, int64_t ldo)
{
    for (int64_t i = 0; i < m; i += FB_SMALL_M_MAX)
        kernel(t, m - i < FB_SMALL_M_MAX ? m - i : FB_SMALL_M_MAX, n, k,
               x + i * ldx, ldx, w, ldw, 0, out + i * ldo, ldo, 0);
}

/* out = x w^T on bf16 products: AMX (x packed at xp) or VDPBF16PS (x
 * at x16, ldx16); 0 where a product could have flushed. */
static int products(const layout *l, int64_t m, int64_t n, int64_t k,
                    const uint16_t *x16, int64_t ldx16, const uint16_t *xp,
                    int x_field, const void *w, int64_t ldw, float *out,
                    int64_t ldo)
{
    if (l->amx)
        return fb_cpu_small_m_amx_nt(m, n, k, xp, x_field, w, ldw, out, ldo);
    return fb_cpu_small_m_dp_nt(m, n, k, x16, ldx16, x_field, w, ldw, 0, out,
                                ldo);
}

/* One block of rows (p->m at most FB_SMALL_M_AMX_MAX). avx512: the
 * AVX-512 kernel (and AMX or VDPBF16PS where they pay), else the AVX2
 * one. */
static void run_block(int avx512, const fb_cpu_call *c,
                      const fb_mlp_problem *p, char *path, size_t len)
{
    const fb_cpu_small_m_fn kernel =
        avx512 ? fb_cpu_small_m_nt : fb_cpu_small_m_avx2_nt;
    const int64_t m = p->m, k = p->k, hw = p->h, n = p->n;
    const int wide = p->dtype != FB_DTYPE_F32;
    const layout l = layout_of(p, c->threads, avx512);
    const int t = l.threads, dpa = l.dpa || l.amx;
    const int64_t blocks = l.blocks, ldx = l.ldx, ldx16 = l.ldx16;
    const int64_t ldh = l.ldh, shared = l.shared, per_thread = l.per_thread;
    float *ws = c->ws;
    float *x32 = ws;
    uint16_t *x16 = (uint16_t *)(ws + m * ldx);
    uint16_t *xamx =
        (uint16_t *)(ws + m * ldx + (dpa ? ROUND16((m * ldx16 + 1) / 2) : 0));
    for (int64_t i = 0; i < m; i++) {
        const void *xi = at(p->x, p->dtype, i * p->ldx);
        if (wide)
            fb_cpu_to_f32(p->dtype, xi, x32 + i * ldx, k);
        else
            memcpy(x32 + i * ldx, xi, (size_t)k * sizeof(float));
        if (dpa)
            memcpy(x16 + i * ldx16, xi, (size_t)k * sizeof(uint16_t));
    }
    struct {
        const float *bg, *bu, *bd;
    } bs = {p->bg, p->bu, p->bd};
    if (l.amx)
        fb_cpu_small_m_amx_pack(m, k, x16, ldx16, xamx);
    if (wide) {
        float *b = ws + m * ldx + (dpa ? ROUND16((m * ldx16 + 1) / 2) : 0) +
                   l.xamx;
        if (p->bg) fb_cpu_to_f32(p->dtype, p->bg, b, hw), bs.bg = b;
        if (p->bu) fb_cpu_to_f32(p->dtype, p->bu, b + hw, hw), bs.bu = b + hw;
        if (p->bd) fb_cpu_to_f32(p->dtype, p->bd, b + 2 * hw, n), bs.bd = b + 2 * hw;
    }
    float *mine0 = ws + shared;
    /* bf16 on AMX or VDPBF16PS where exact (see gemm_small_m); H too is
     * checked, and a GEMM that could flush runs again on the FMA form. */
    int fell_back = 0;
    const int x_field = dpa ? fb_cpu_bf16_min_field(x16, m, k, ldx16) : 0;
    const int dp = x_field > 0;

    /* Slice q of t: H (m x ldh), U (m x ldh), partial Y (m x n); a team
     * smaller than t takes several slices per thread. */
#define SLICE_H(q) (mine0 + per_thread * (q))
#define SLICE_U(q) (SLICE_H(q) + m * ldh)
#define SLICE_Y(q) (SLICE_U(q) + m * ldh)
#define SLICE_HAMX(q) ((uint16_t *)(SLICE_Y(q) + ROUND16(m * n)))
#pragma omp parallel num_threads(t) if (t > 1) reduction(| : fell_back)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        for (int q = tid; q < t; q += nt) {
            const int64_t h0 = blocks * q / t * l.block;
            const int64_t h1 = q == t - 1 ? hw : blocks * (q + 1) / t * l.block;
            const int64_t hs = h1 - h0;
            float *hbuf = SLICE_H(q), *ubuf = SLICE_U(q), *yacc = SLICE_Y(q);
            const void *wg = at(p->wg, p->dtype, h0 * k);
            const void *wu = at(p->wu, p->dtype, h0 * k);
            const void *wd = at(p->wd, p->dtype, h0);
            if (!dp || !products(&l, m, hs, k, x16, ldx16, xamx, x_field, wg,
                                 k, hbuf, ldh)) {
                kernel_rows(kernel, p->dtype, m, hs, k, x32, ldx, wg, k,
                            hbuf, ldh);
                fell_back |= dp;
            }
            if (!dp || !products(&l, m, hs, k, x16, ldx16, xamx, x_field, wu,
                                 k, ubuf, ldh)) {
                kernel_rows(kernel, p->dtype, m, hs, k, x32, ldx, wu, k,
                            ubuf, ldh);
                fell_back |= dp;
            }
            for (int64_t i = 0; i < m; i++) {
                fb_cpu_gate(hbuf + i * ldh, ubuf + i * ldh,
                            bs.bg ? bs.bg + h0 : NULL,
                            bs.bu ? bs.bu + h0 : NULL, hs, p->gate_act);
                fb_cpu_round_to(p->dtype, hbuf + i * ldh, hs);
            }
            /* H in bf16 for the products, in U's place (U is spent); AMX
             * packs it once more, into the slice's own area. */
            uint16_t *h16 = (uint16_t *)ubuf;
            int h_field = 0;
            if (dp) {
                for (int64_t i = 0; i < m; i++)
                    fb_cpu_from_f32(p->dtype, hbuf + i * ldh, h16 + i * ldh,
                                    hs);
                h_field = fb_cpu_bf16_min_field(h16, m, hs, ldh);
            }
            if (l.amx && h_field > 0)
                fb_cpu_small_m_amx_pack(m, hs, h16, ldh, SLICE_HAMX(q));
            if (h_field == 0 ||
                !products(&l, m, n, hs, h16, ldh, SLICE_HAMX(q), h_field, wd,
                          hw, yacc, n)) {
                kernel_rows(kernel, p->dtype, m, n, hs, hbuf, ldh, wd, hw,
                            yacc, n);
                fell_back |= dp;
            }
        }
#pragma omp barrier
        /* Sum the slices' partial Y into slice 0's, by rows. */
        const int64_t r0 = m * tid / nt, r1 = m * (tid + 1) / nt;
        float *y0 = SLICE_Y(0);
        for (int q = 1; q < t; q++) {
            const float *yq = SLICE_Y(q);
#pragma omp simd
            for (int64_t e = r0 * n; e < r1 * n; e++)
                y0[e] += yq[e];
        }
        fb_cpu_mlp_store_rows(p, bs.bd, y0 + r0 * n, n, r0, r1 - r0);
    }
#undef SLICE_H
#undef SLICE_U
#undef SLICE_Y
#undef SLICE_HAMX
#undef ROUND16
    snprintf(path, len, "cpu/small-m-%s/mlp-hidden/%s/threads=%d",
             avx512 ? "avx512" : "avx2",
             fb_cpu_small_m_form(dp, l.amx, fell_back, p->dtype), t);
}

/* The blocks of rows in turn, each streaming the weights once. */
static fb_status run_with(int avx512, const fb_cpu_call *c,
                          const fb_mlp_problem *p, char *path, size_t len)
{
    const int64_t mb = block_rows(p), es = fb_dtype_size(p->dtype);
    char ran[128] = "";
    path[0] = '\0';
    for (int64_t i0 = 0; i0 < p->m; i0 += mb) {
        fb_mlp_problem q = *p;
        q.m = p->m - i0 < mb ? p->m - i0 : mb;
        q.x = (const char *)p->x + i0 * p->ldx * es;
        q.y = (char *)p->y + i0 * p->ldy * es;
        run_block(avx512, c, &q, ran, sizeof ran);
        fb_cpu_small_m_keep_path(path, len, ran);
    }
    fb_cpu_small_m_blocks_note(path, len, "row-blocks", mb, p->m);
    return FB_STATUS_SUCCESS;
}

static fb_status run_avx512(const fb_cpu_call *c, const fb_mlp_problem *p,
                            char *path, size_t len)
{
    return run_with(1, c, p, path, len);
}

static fb_status run_avx2(const fb_cpu_call *c, const fb_mlp_problem *p,
                          char *path, size_t len)
{
    return run_with(0, c, p, path, len);
}

const fb_cpu_mlp_impl fb_cpu_mlp_small_m = {
    "cpu/small-m-avx512", FB_CPU_OWN_THREADS, applies_avx512,
    workspace_avx512, NULL, NULL, run_avx512, prefers};

const fb_cpu_mlp_impl fb_cpu_mlp_small_m_avx2 = {
    "cpu/small-m-avx2", FB_CPU_OWN_THREADS, applies_avx2, workspace_avx2,
    NULL, NULL, run_avx2, NULL};
