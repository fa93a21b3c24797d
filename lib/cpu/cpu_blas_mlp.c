/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_blas_mlp.c -- mlp_geglu_forward through OpenBLAS, the CPU table's
 * last entry: every call whose k, h and n fit OpenBLAS's integer.
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
 * the workspace (a plan converts the weights whole, once: pack); H is
 * rounded to the input type before the down projection, as a framework
 * that stores H in that type does. fp32 X blocks are copied the same way
 * when ldx does not fit OpenBLAS's integer.
 */
#include "config.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_impl.h"
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

/* The small-m kernel this CPU runs (AVX-512, else AVX2), or NULL; its
 * name for the path in *name. */
static fb_cpu_small_m_fn small_m_kernel(const char **name)
{
    if (fb_cpu_small_m_available()) {
        *name = "small-m-avx512/";
        return fb_cpu_small_m_nt;
    }
    if (fb_cpu_small_m_avx2_available()) {
        *name = "small-m-avx2/";
        return fb_cpu_small_m_avx2_nt;
    }
    *name = "";
    return NULL;
}

typedef struct plan {
    int64_t mb, hc;       /* row block, hidden chunk */
    int64_t nchunks;
    int split_rows;       /* 1: threads own rows; 0: threads own chunks */
    int threads;
    int copy_x;           /* X's row blocks copied into fp32 panels (16-bit
                             X, or an ldx OpenBLAS cannot take) */
    /* per-thread workspace, in floats */
    int64_t off_x, off_wg, off_wu, off_wd, off_g, off_u, off_y, per_thread;
    const float *w32;     /* 16-bit weights converted whole (a plan's):
                             Wg, Wu, Wd in fp32, or NULL */
} plan;

typedef struct biases {
    const float *bg, *bu, *bd; /* fp32 views; NULL if absent */
} biases;

static plan make_plan(const fb_mlp_problem *p, int threads,
                      const float *w32);
static void run_rows(const fb_mlp_problem *p, const plan *pl,
                     const biases *bs, float *ws, int64_t r0, int64_t r1,
                     int64_t c0, int64_t c1, float *yacc, int64_t ldyacc,
                     int finish);
static void gemm_nt(int64_t m, int64_t n, int64_t k, const float *x,
                    int64_t ldx, const float *w, int64_t ldw, float *out,
                    int64_t ldo, int accumulate);

/* OpenBLAS from here on: k, h and n reach it as dimensions and leading
 * dimensions of the blocks. X's ldx is kept from it by copying X's row
 * blocks (make_plan); Y is stored by our own code. */
static int applies(const fb_cpu_call *c, const fb_mlp_problem *p)
{
    (void)c;
    return fb_cpu_fits_blasint(p->k) && fb_cpu_fits_blasint(p->h) &&
           fb_cpu_fits_blasint(p->n);
}

/* The threads' blocks, then the biases in fp32 (16-bit). */
static size_t workspace(const fb_mlp_problem *p, int threads, int packed)
{
    /* Sizes only: the packed weights need no room, wherever they are. */
    static const float somewhere;
    const plan pl = make_plan(p, threads, packed ? &somewhere : NULL);
    const int64_t nbias = p->dtype != FB_DTYPE_F32 ? 2 * p->h + p->n : 0;
    return ((size_t)pl.per_thread * (size_t)pl.threads + (size_t)nbias +
            64) * sizeof(float);
}

static fb_status run(const fb_cpu_call *c, const fb_mlp_problem *p,
                     char *path, size_t len)
{
    const plan pl = make_plan(p, c->threads, c->packed);
    const int wide = p->dtype != FB_DTYPE_F32;
    const int64_t nbias = wide ? 2 * p->h + p->n : 0;
    float *ws = c->ws;
    /* OpenBLAS runs every GEMM unless the blocks are short enough for the
     * small-m kernel (gemm_nt), or h == 0 (no GEMM at all). */
    const char *small_name;
    const int small =
        pl.mb <= SMALL_M_ROWS && small_m_kernel(&small_name) != NULL;
    const int blas = p->h > 0 && !small;
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
            fb_cpu_mlp_store_rows(p, bs.bd, y0 + r0 * p->n, p->n, r0, r1 - r0);
        }
    }
    if (blas)
        fb_cpu_blas_ran(pl.threads);
    /* The implementation's name first (it is what fb_set_implementation
     * forces), then the kernel its short row blocks used. */
    snprintf(path, len, "cpu/%s/mlp-%s/%smb=%lld/hc=%lld/threads=%d",
             fb_cpu_arrangement(), pl.split_rows ? "rows" : "hidden",
             small ? small_name : "", (long long)pl.mb,
             (long long)pl.hc, pl.threads);
    return FB_STATUS_SUCCESS;
}


/* ---- helpers ------------------------------------------------------------ */

static plan make_plan(const fb_mlp_problem *p, int threads,
                      const float *w32)
{
    plan pl;
    pl.w32 = w32;
    const int64_t k = p->k > 0 ? p->k : 1;
    pl.hc = CHUNK_ELEMS / k;
    if (pl.hc < 16)
        pl.hc = 16;
    if (pl.hc > MAX_CHUNK)
        pl.hc = MAX_CHUNK;
    if (pl.hc > p->h)
        pl.hc = p->h > 0 ? p->h : 1;
    pl.nchunks = p->h > 0 ? (p->h + pl.hc - 1) / pl.hc : 0;

    int t = threads;
    /* Too few rows for a row block a thread: the threads split the
     * hidden width, in chunks cut so that each thread gets as many of
     * them and of equal width (else, with fewer chunks than threads, one
     * thread did all the rows, and with 3 chunks for 2 threads one did
     * twice the other's work). */
    if (p->m < (int64_t)t * ROWS_PER_BLOCK && p->h >= 16 * (int64_t)t) {
        const int64_t want = (pl.nchunks + t - 1) / t * t;
        pl.hc = ((p->h + want - 1) / want + 15) / 16 * 16;
        pl.nchunks = (p->h + pl.hc - 1) / pl.hc;
    }
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
    const int convert = wide && w32 == NULL;
    TAKE(off_wg, convert ? pl.hc * k : 0);
    TAKE(off_wu, convert ? pl.hc * k : 0);
    TAKE(off_wd, convert ? p->n * pl.hc : 0);
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
            if (wide && pl->w32 != NULL) {
                wg = pl->w32 + h0 * k;
                wu = pl->w32 + p->h * k + h0 * k;
                wd = pl->w32 + 2 * p->h * k + h0;
            } else if (wide) {
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
            fb_cpu_mlp_store_rows(p, bs->bd, yb, ldyacc, rb, mb);
    }
}

void fb_cpu_mlp_store_rows(const fb_mlp_problem *p, const float *bd,
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
    const char *name;
    const fb_cpu_small_m_fn kernel = small_m_kernel(&name);
    if (m <= SMALL_M_ROWS && kernel != NULL) {
        kernel(FB_DTYPE_F32, m, n, k, x, ldx, w, ldw, 0, out, ldo,
               accumulate);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m,
                (blasint)n, (blasint)k, 1.0f, x, (blasint)ldx, w,
                (blasint)ldw, accumulate ? 1.0f : 0.0f, out, (blasint)ldo);
}

/* 16-bit weights in fp32, Wg, Wu, then Wd: what every call would convert
 * chunk by chunk (the same values, so the same bits). fp32 weights are
 * read where they lie. */
static size_t pack_bytes(const fb_mlp_problem *p)
{
    if (p->dtype == FB_DTYPE_F32)
        return 0;
    return (size_t)(2 * p->h * p->k + p->n * p->h) * sizeof(float);
}

static void pack(const fb_mlp_problem *p, int threads, void *dst)
{
    float *w = dst;
    const int64_t hk = p->h * p->k;
    (void)threads;
    fb_cpu_to_f32(p->dtype, p->wg, w, hk);
    fb_cpu_to_f32(p->dtype, p->wu, w + hk, hk);
    fb_cpu_to_f32(p->dtype, p->wd, w + 2 * hk, p->n * p->h);
}

const fb_cpu_mlp_impl fb_cpu_mlp_openblas = {
    "cpu/openblas", FB_CPU_BLAS_THREADS, applies, workspace, pack_bytes, pack,
    run, NULL};
