/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_mlp.c -- mlp_geglu_forward on the CPU.
 *
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu),   Y = H Wd^T + bd
 *
 * H is never made in full. Work is cut into row blocks of X (mb rows) and
 * chunks of the hidden width (hc columns of H). For one (row block, chunk):
 * G = X_b Wg_c^T and U = X_b Wu_c^T (the X block is read from memory once
 * and from cache the second time), then G <- act_g(G + bg) .* (U + bu) in
 * place while G and U are in cache, then Yacc_b += G Wd_c^T. The
 * intermediates are mb x hc, a few megabytes (see ROWS_PER_BLOCK).
 *
 * Two ways to share the work between threads:
 *  - many rows (prefill): each thread owns a range of rows and does every
 *    chunk for them; its Yacc rows are its own, finished (bd added, stored)
 *    as each row block completes.
 *  - few rows (decode): each thread owns a range of chunks, i.e. a slice of
 *    the hidden width, for all rows, so each streams only its share of the
 *    weights; partial Y sums are per thread and added at the end.
 *
 * fp16/bf16: X blocks and weight chunks are converted into fp32 panels in
 * the handle's workspace; H is rounded to the input type before the down
 * projection, as a framework that stores H in that type does. fp32 X
 * blocks are copied the same way when ldx does not fit OpenBLAS's
 * integer.
 */
#include "config.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_bf16_gemm.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_f32_gemm.h"
#include "cpu_f32_mlp_small_k.h"
#include "cpu_small_m.h"

/* Rows per block when threads split rows, and the chunk of hidden width:
 * hc x k weight elements (4 MiB of fp32 per projection), at most 2048
 * columns. OpenBLAS packs each weight chunk once per row block, so the
 * blocks must be tall: short blocks with small chunks ran well behind the
 * unfused chain of three whole GEMMs, these keep up with it
 * (docs/cpu-kernels.md). G and U (2.8 MB each at the seed's widths) then
 * live in L3, not L2: the packing saved is worth more. */
#define ROWS_PER_BLOCK 512
#define CHUNK_ELEMS (1024 * 1024)
#define MAX_CHUNK 2048
/* Row blocks this short go through the small-m kernel (cpu_small_m.h),
 * which streams each weight once; OpenBLAS's packing wins above. */
#define SMALL_M_ROWS 16
/* Up to this many rows of X the whole MLP goes through mlp_small_m: the
 * decode shape, where the three weights stream once at memory speed. */
#define SMALL_M_MLP_ROWS FB_SMALL_M_MAX

typedef struct plan {
    int64_t mb, hc;       /* row block, hidden chunk */
    int64_t nchunks;
    int split_rows;       /* 1: threads own rows; 0: threads own chunks */
    int threads;
    int copy_x;           /* X's row blocks copied into fp32 panels (16-bit
                             X, or an ldx OpenBLAS cannot take) */
    /* per-thread workspace, in floats */
    int64_t off_x, off_wg, off_wu, off_wd, off_g, off_u, off_y, per_thread;
} plan;

typedef struct biases {
    const float *bg, *bu, *bd; /* fp32 views; NULL if absent */
} biases;

static plan make_plan(fb_handle h, const fb_mlp_problem *p);
static void run_rows(const fb_mlp_problem *p, const plan *pl,
                     const biases *bs, float *ws, int64_t r0, int64_t r1,
                     int64_t c0, int64_t c1, float *yacc, int64_t ldyacc,
                     int finish);
static void finish_rows(const fb_mlp_problem *p, const float *bd,
                        const float *yacc, int64_t ldyacc, int64_t r0,
                        int64_t rows);
static void gemm_nt(int64_t m, int64_t n, int64_t k, const float *x,
                    int64_t ldx, const float *w, int64_t ldw, float *out,
                    int64_t ldo, int accumulate);
static int mlp_small_m_applies(const fb_mlp_problem *p);
static fb_status mlp_small_m(fb_handle h, const fb_mlp_problem *p,
                             char *path, size_t len);

fb_status fb_cpu_mlp(fb_handle h, const fb_mlp_problem *p, char *path,
                     size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    /* Decode (m <= 32) first, every dtype: it streams the weights once
     * (bf16 on VDPBF16PS too), where the bf16 kernel packs them first. */
    if (mlp_small_m_applies(p))
        return mlp_small_m(h, p, path, len);
    /* Our kernels below: a workspace they cannot get is the call's
     * FB_STATUS_ALLOC_FAILED, never a try at another path, which would
     * end in OpenBLAS's own first allocation (it never gives up). */
    if (fb_cpu_bf16_mlp_applies(p, SMALL_M_ROWS)) {
        fb_status st;
        if (fb_cpu_bf16_mlp(h, p, &st, path, len))
            return st;
        /* Declined (a denormal input): the fp32 panels below. */
    }
    /* fp32 with k and h of at most 512 (the tiny MLPs): the small-k
     * kernel, H made in registers (cpu_f32_mlp_small_k.c). */
    if (fb_cpu_f32_mlp_small_k_applies(p, SMALL_M_ROWS)) {
        fb_status st;
        if (fb_cpu_f32_mlp_small_k(h, p, &st, path, len))
            return st;
    }
    /* fp32 on the AVX-512F kernel wherever the CPU runs it
     * (fb_cpu_f32_kernel_chosen). */
    if (fb_cpu_f32_mlp_applies(h, p, SMALL_M_ROWS)) {
        fb_status st;
        if (fb_cpu_f32_mlp(h, p, &st, path, len))
            return st;
    }
    /* OpenBLAS from here on: k, h and n reach it as dimensions and
     * leading dimensions of the blocks. X's ldx is kept from it by
     * copying X's row blocks (make_plan); Y is stored by our own code. */
    if (!fb_cpu_fits_blasint(p->k) || !fb_cpu_fits_blasint(p->h) ||
        !fb_cpu_fits_blasint(p->n)) {
        snprintf(path, len, "k, h or n exceeds OpenBLAS's %zu-byte "
                            "integer", sizeof(blasint));
        return FB_STATUS_NOT_SUPPORTED;
    }
    const plan pl = make_plan(h, p);
    const int wide = p->dtype != FB_DTYPE_F32;
    const int64_t nbias = wide ? 2 * p->h + p->n : 0;
    size_t floats = (size_t)pl.per_thread * (size_t)pl.threads +
                    (size_t)nbias + 64;
    float *ws = fb_handle_workspace(h, floats * sizeof(float));
    if (ws == NULL) {
        snprintf(path, len, "cannot allocate %zu bytes of workspace",
                 floats * sizeof(float));
        return FB_STATUS_ALLOC_FAILED;
    }
    /* OpenBLAS runs every GEMM unless the blocks are short enough for the
     * small-m kernel (gemm_nt), or h == 0 (no GEMM at all). */
    const int blas = p->h > 0 &&
                     !(pl.mb <= SMALL_M_ROWS && fb_cpu_small_m_available());
    if (blas && !fb_cpu_blas_buffers(pl.threads, path, len))
        return FB_STATUS_ALLOC_FAILED;
    biases bs = {p->bg, p->bu, p->bd};
    if (wide) {
        float *b = ws;
        if (p->bg) fb_cpu_to_f32(p->dtype, p->bg, b, p->h), bs.bg = b;
        if (p->bu) fb_cpu_to_f32(p->dtype, p->bu, b + p->h, p->h), bs.bu = b + p->h;
        if (p->bd) fb_cpu_to_f32(p->dtype, p->bd, b + 2 * p->h, p->n), bs.bd = b + 2 * p->h;
        ws += (nbias + 15) / 16 * 16;
    }

#pragma omp parallel num_threads(pl.threads) if (pl.threads > 1)
    {
        fb_cpu_blas_on_this_thread();
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        float *mine = ws + pl.per_thread * tid;
        float *yacc = mine + pl.off_y;
        if (pl.split_rows) {
            const int64_t r0 = p->m * tid / nt, r1 = p->m * (tid + 1) / nt;
            run_rows(p, &pl, &bs, mine, r0, r1, 0, pl.nchunks, yacc, p->n, 1);
        } else {
            const int64_t c0 = pl.nchunks * tid / nt;
            const int64_t c1 = pl.nchunks * (tid + 1) / nt;
            run_rows(p, &pl, &bs, mine, 0, p->m, c0, c1, yacc, p->n, 0);
#pragma omp barrier
            /* Sum the threads' partial Y into thread 0's, by rows. */
            const int64_t r0 = p->m * tid / nt, r1 = p->m * (tid + 1) / nt;
            float *y0 = ws + pl.off_y;
            for (int q = 1; q < nt; q++) {
                const float *yq = ws + pl.per_thread * q + pl.off_y;
#pragma omp simd
                for (int64_t e = r0 * p->n; e < r1 * p->n; e++)
                    y0[e] += yq[e];
            }
            finish_rows(p, bs.bd, y0 + r0 * p->n, p->n, r0, r1 - r0);
        }
    }
    if (blas)
        fb_cpu_blas_ran(pl.threads);
    const int small = pl.mb <= SMALL_M_ROWS && fb_cpu_small_m_available();
    snprintf(path, len, "cpu/%s/mlp-%s/mb=%lld/hc=%lld/threads=%d",
             small ? "small-m-avx512" : fb_cpu_arrangement(),
             pl.split_rows ? "rows" : "hidden",
             (long long)pl.mb, (long long)pl.hc, pl.threads);
    return FB_STATUS_SUCCESS;
}

/* ---- helpers ------------------------------------------------------------ */

static plan make_plan(fb_handle h, const fb_mlp_problem *p)
{
    plan pl;
    const int64_t k = p->k > 0 ? p->k : 1;
    pl.hc = CHUNK_ELEMS / k;
    if (pl.hc < 16)
        pl.hc = 16;
    if (pl.hc > MAX_CHUNK)
        pl.hc = MAX_CHUNK;
    if (pl.hc > p->h)
        pl.hc = p->h > 0 ? p->h : 1;
    pl.nchunks = p->h > 0 ? (p->h + pl.hc - 1) / pl.hc : 0;

    const double flops = 2.0 * (double)p->m *
                         (2.0 * (double)p->h * (double)k + (double)p->h * (double)p->n);
    int t = fb_cpu_threads(h, flops);
    /* Split rows when every thread gets at least a full row block; else
     * split the hidden width, if there are chunks enough. */
    pl.split_rows = p->m >= (int64_t)t * ROWS_PER_BLOCK || pl.nchunks < t;
    if (pl.split_rows) {
        pl.mb = ROWS_PER_BLOCK;
        if (t > p->m)
            t = (int)p->m;
    } else {
        pl.mb = p->m;
    }
    if (pl.mb > p->m)
        pl.mb = p->m;
    pl.threads = t > 0 ? t : 1;

    const int wide = p->dtype != FB_DTYPE_F32;
    pl.copy_x = wide || !fb_cpu_fits_blasint(p->ldx);
    int64_t o = 0;
#define TAKE(field, count)                                                     \
    do {                                                                       \
        pl.field = o;                                                          \
        o += ((count) + 15) / 16 * 16;                                         \
    } while (0)
    TAKE(off_x, pl.copy_x ? pl.mb * k : 0);
    TAKE(off_wg, wide ? pl.hc * k : 0);
    TAKE(off_wu, wide ? pl.hc * k : 0);
    TAKE(off_wd, wide ? p->n * pl.hc : 0);
    TAKE(off_g, pl.mb * pl.hc);
    TAKE(off_u, pl.mb * pl.hc);
    /* Yacc: one row block when rows are split, all rows otherwise. */
    TAKE(off_y, (pl.split_rows ? pl.mb : p->m) * p->n);
#undef TAKE
    pl.per_thread = o;
    return pl;
}

/* Element offset helpers for the dtype-generic inputs. */
static const void *at(const void *base, fb_dtype t, int64_t elems)
{
    if (base == NULL) /* an operand the call does not read */
        return NULL;
    return (const char *)base + elems * fb_dtype_size(t);
}

/* Rows [r0, r1) through chunks [c0, c1), accumulating into yacc (whose row
 * 0 is row r0 when finish is set, else row 0 of Y). */
static void run_rows(const fb_mlp_problem *p, const plan *pl,
                     const biases *bs, float *ws, int64_t r0, int64_t r1,
                     int64_t c0, int64_t c1, float *yacc, int64_t ldyacc,
                     int finish)
{
    const int wide = p->dtype != FB_DTYPE_F32;
    const int64_t k = p->k, n = p->n;
    float *g = ws + pl->off_g, *u = ws + pl->off_u;

    for (int64_t rb = r0; rb < r1; rb += pl->mb) {
        const int64_t mb = r1 - rb < pl->mb ? r1 - rb : pl->mb;
        float *yb = finish ? yacc : yacc + rb * ldyacc;
        const float *xb = (const float *)at(p->x, p->dtype, rb * p->ldx);
        int64_t ldxb = p->ldx;
        if (pl->copy_x && k > 0) {
            float *xc = ws + pl->off_x;
            for (int64_t i = 0; i < mb; i++)
                fb_cpu_to_f32(p->dtype, at(p->x, p->dtype, (rb + i) * p->ldx),
                              xc + i * k, k);
            xb = xc, ldxb = k;
        }
        if (c0 == c1) /* h == 0 (rows are then split): Y = bd */
            memset(yb, 0, (size_t)(mb * n) * sizeof(float));
        for (int64_t c = c0; c < c1; c++) {
            const int64_t h0 = c * pl->hc;
            const int64_t hc = p->h - h0 < pl->hc ? p->h - h0 : pl->hc;
            const float *wg = at(p->wg, p->dtype, h0 * k);
            const float *wu = at(p->wu, p->dtype, h0 * k);
            const float *wd = at(p->wd, p->dtype, h0);
            int64_t ldwd = p->h;
            if (wide) {
                float *cg = ws + pl->off_wg, *cu = ws + pl->off_wu;
                float *cd = ws + pl->off_wd;
                /* Converted per (row block, chunk): with rows split that
                 * repeats per row block, 1/(2 mb) of the GEMM's work. */
                fb_cpu_to_f32(p->dtype, wg, cg, hc * k);
                fb_cpu_to_f32(p->dtype, wu, cu, hc * k);
                for (int64_t j = 0; j < n; j++)
                    fb_cpu_to_f32(p->dtype, at(p->wd, p->dtype, j * p->h + h0),
                                  cd + j * hc, hc);
                wg = cg, wu = cu, wd = cd, ldwd = hc;
            }
            if (k > 0) {
                gemm_nt(mb, hc, k, xb, ldxb, wg, k, g, hc, 0);
                gemm_nt(mb, hc, k, xb, ldxb, wu, k, u, hc, 0);
            } else {
                memset(g, 0, (size_t)(mb * hc) * sizeof(float));
                memset(u, 0, (size_t)(mb * hc) * sizeof(float));
            }
            for (int64_t i = 0; i < mb; i++)
                fb_cpu_gate(g + i * hc, u + i * hc,
                            bs->bg ? bs->bg + h0 : NULL,
                            bs->bu ? bs->bu + h0 : NULL, hc, p->gate_act);
            fb_cpu_round_to(p->dtype, g, mb * hc);
            gemm_nt(mb, n, hc, g, hc, wd, ldwd, yb, ldyacc, c != c0);
        }
        if (finish)
            finish_rows(p, bs->bd, yb, ldyacc, rb, mb);
    }
}

/* Y rows [r0, r0 + rows) = yacc + bd, stored in the output type. */
static void finish_rows(const fb_mlp_problem *p, const float *bd,
                        const float *yacc, int64_t ldyacc, int64_t r0,
                        int64_t rows)
{
    for (int64_t i = 0; i < rows; i++) {
        float *row = (float *)yacc + i * ldyacc;
        if (bd != NULL)
            fb_cpu_bias_act(row, bd, p->n, FB_ACT_NONE);
        fb_cpu_from_f32(p->dtype, row,
                        (char *)p->y + (r0 + i) * p->ldy * fb_dtype_size(p->dtype),
                        p->n);
    }
}

/* out (m x n, row-major) (+)= x (m x k) w^T, w n x k row-major: OpenBLAS,
 * or for a few rows the small-m kernel, which streams w once. */
static void gemm_nt(int64_t m, int64_t n, int64_t k, const float *x,
                    int64_t ldx, const float *w, int64_t ldw, float *out,
                    int64_t ldo, int accumulate)
{
    if (m <= SMALL_M_ROWS && fb_cpu_small_m_available()) {
        fb_cpu_small_m_nt(FB_DTYPE_F32, m, n, k, x, ldx, w, ldw, 0, out, ldo,
                          accumulate);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m,
                (blasint)n, (blasint)k, 1.0f, x, (blasint)ldx, w,
                (blasint)ldw, accumulate ? 1.0f : 0.0f, out, (blasint)ldo);
}

/* ---- the decode path ------------------------------------------------------ */

static int mlp_small_m_applies(const fb_mlp_problem *p)
{
    return p->m <= SMALL_M_MLP_ROWS && p->k > 0 && p->h > 0 &&
           fb_cpu_small_m_available();
}

/* Few rows of X: each thread owns a slice [h0, h1) of the hidden width and
 * streams its rows of Wg and Wu, then its columns of Wd, each element once
 * (16-bit weights as they are: the kernel widens them in registers):
 *   G, U = X Wg[h0:h1]^T, X Wu[h0:h1]^T          (m x hs each, L2)
 *   H = act_g(G + bg) .* (U + bu), in place of G  (rounded to the dtype)
 *   Ypart = H Wd[:, h0:h1]^T                      (m x n)
 * then the threads' partial Y are summed, bd added, Y stored. Whole slices
 * rather than chunks, so each weight is one unbroken stream for the
 * kernel's prefetch; X (m x k), H and U (m x hs) stay in L2/L3. */
static fb_status mlp_small_m(fb_handle h, const fb_mlp_problem *p,
                             char *path, size_t len)
{
    const int64_t m = p->m, k = p->k, hw = p->h, n = p->n;
    const int wide = p->dtype != FB_DTYPE_F32;
    const double flops = 2.0 * (double)m *
                         (2.0 * (double)hw * (double)k + (double)hw * (double)n);
    int t = fb_cpu_own_threads(h, flops); /* our kernel alone */
    /* Slices are whole 30-row blocks (6-row FMA and 5-row VDPBF16PS blocks
     * of the kernel), when there are enough. */
    const int64_t blocks = (hw + 29) / 30;
    if (t > blocks)
        t = (int)blocks;
    const int64_t hs_max = (blocks + t - 1) / t * 30;
    /* X, and each slice's H, in panels whose rows sit off the weights' L1
     * sets (fb_cpu_small_m_panel_ld): fp32, and for VDPBF16PS bf16. H's
     * bf16 copy takes U's place once U is spent. */
    const int dpa = p->dtype == FB_DTYPE_BF16 &&
                    m >= FB_SMALL_M_DP_MIN_ROWS &&
                    fb_cpu_small_m_dp_available();
    const int64_t ldx = fb_cpu_small_m_panel_ld(k, 4);
    const int64_t ldx16 = fb_cpu_small_m_panel_ld(k, 2);
    const int64_t ldh = fb_cpu_small_m_panel_ld(hs_max, 4);
#define ROUND16(x) (((x) + 15) / 16 * 16)
    const int64_t shared = m * ldx + (dpa ? ROUND16((m * ldx16 + 1) / 2) : 0) +
                           (wide ? ROUND16(2 * hw) + ROUND16(n) : 0);
    const int64_t per_thread = 2 * m * ldh + ROUND16(m * n);
#undef ROUND16
    const size_t bytes =
        ((size_t)shared + (size_t)per_thread * (size_t)t + 16) * sizeof(float);
    float *ws = fb_handle_workspace(h, bytes);
    if (ws == NULL) {
        snprintf(path, len, "cannot allocate %zu bytes of workspace", bytes);
        return FB_STATUS_ALLOC_FAILED;
    }
    float *x32 = ws;
    uint16_t *x16 = (uint16_t *)(ws + m * ldx);
    for (int64_t i = 0; i < m; i++) {
        const void *xi = at(p->x, p->dtype, i * p->ldx);
        if (wide)
            fb_cpu_to_f32(p->dtype, xi, x32 + i * ldx, k);
        else
            memcpy(x32 + i * ldx, xi, (size_t)k * sizeof(float));
        if (dpa)
            memcpy(x16 + i * ldx16, xi, (size_t)k * sizeof(uint16_t));
    }
    biases bs = {p->bg, p->bu, p->bd};
    if (wide) {
        float *b = ws + m * ldx + (dpa ? ((m * ldx16 + 1) / 2 + 15) / 16 * 16 : 0);
        if (p->bg) fb_cpu_to_f32(p->dtype, p->bg, b, hw), bs.bg = b;
        if (p->bu) fb_cpu_to_f32(p->dtype, p->bu, b + hw, hw), bs.bu = b + hw;
        if (p->bd) fb_cpu_to_f32(p->dtype, p->bd, b + 2 * hw, n), bs.bd = b + 2 * hw;
    }
    float *mine0 = ws + shared;
    /* bf16 on VDPBF16PS where it is exact (see gemm_small_m); H too is
     * checked, and a GEMM that could flush runs again on the FMA form. */
    int fell_back = 0;
    const int x_field = dpa ? fb_cpu_bf16_min_field(x16, m, k, ldx16) : 0;
    const int dp = x_field > 0;

    /* Slice q of t: H (m x ldh), U (m x ldh), partial Y (m x n); a team
     * smaller than t takes several slices per thread. */
#define SLICE_H(q) (mine0 + per_thread * (q))
#define SLICE_U(q) (SLICE_H(q) + m * ldh)
#define SLICE_Y(q) (SLICE_U(q) + m * ldh)
#pragma omp parallel num_threads(t) if (t > 1) reduction(| : fell_back)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        for (int q = tid; q < t; q += nt) {
            const int64_t h0 = blocks * q / t * 30;
            const int64_t h1 = q == t - 1 ? hw : blocks * (q + 1) / t * 30;
            const int64_t hs = h1 - h0;
            float *hbuf = SLICE_H(q), *ubuf = SLICE_U(q), *yacc = SLICE_Y(q);
            const void *wg = at(p->wg, p->dtype, h0 * k);
            const void *wu = at(p->wu, p->dtype, h0 * k);
            const void *wd = at(p->wd, p->dtype, h0);
            if (!dp || !fb_cpu_small_m_dp_nt(m, hs, k, x16, ldx16, x_field,
                                             wg, k, 0, hbuf, ldh)) {
                fb_cpu_small_m_nt(p->dtype, m, hs, k, x32, ldx, wg, k, 0,
                                  hbuf, ldh, 0);
                fell_back |= dp;
            }
            if (!dp || !fb_cpu_small_m_dp_nt(m, hs, k, x16, ldx16, x_field,
                                             wu, k, 0, ubuf, ldh)) {
                fb_cpu_small_m_nt(p->dtype, m, hs, k, x32, ldx, wu, k, 0,
                                  ubuf, ldh, 0);
                fell_back |= dp;
            }
            for (int64_t i = 0; i < m; i++) {
                fb_cpu_gate(hbuf + i * ldh, ubuf + i * ldh,
                            bs.bg ? bs.bg + h0 : NULL,
                            bs.bu ? bs.bu + h0 : NULL, hs, p->gate_act);
                fb_cpu_round_to(p->dtype, hbuf + i * ldh, hs);
            }
            /* H in bf16 for VDPBF16PS, in U's place (U is spent). */
            uint16_t *h16 = (uint16_t *)ubuf;
            int h_field = 0;
            if (dp) {
                for (int64_t i = 0; i < m; i++)
                    fb_cpu_from_f32(p->dtype, hbuf + i * ldh, h16 + i * ldh,
                                    hs);
                h_field = fb_cpu_bf16_min_field(h16, m, hs, ldh);
            }
            if (h_field == 0 ||
                !fb_cpu_small_m_dp_nt(m, n, hs, h16, ldh, h_field, wd, hw, 0,
                                      yacc, n)) {
                fb_cpu_small_m_nt(p->dtype, m, n, hs, hbuf, ldh, wd, hw, 0,
                                  yacc, n, 0);
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
        finish_rows(p, bs.bd, y0 + r0 * n, n, r0, r1 - r0);
    }
#undef SLICE_H
#undef SLICE_U
#undef SLICE_Y
    snprintf(path, len, "cpu/small-m-avx512/mlp-hidden/%s/threads=%d",
             dp && !fell_back ? "bf16-dpbf16"
             : dp             ? "bf16-dpbf16+fma-where-tiny"
             : wide ? (p->dtype == FB_DTYPE_F16 ? "f16-weights" : "bf16-weights")
                    : "f32-weights",
             t);
    return FB_STATUS_SUCCESS;
}
