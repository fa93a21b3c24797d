/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_blas_gemm.c -- gemm_bias_act through OpenBLAS, the CPU table's last
 * entry: every call whose k fits OpenBLAS's integer.
 *
 * C (column-major, m x n after normalisation) is cut into blocks (half a
 * megabyte through fp32 panels, 8 MiB otherwise: below). Each OpenMP
 * thread takes a contiguous run of as many blocks as the others; for
 * each it calls OpenBLAS on that block alone, then applies beta (16-bit
 * types), bias and activation to the block while it is still in cache, so
 * C is never passed over a second time. A block is mb x nb with mb covering
 * all of m when m is modest: the parallel split then falls on n, and each
 * thread streams only its share of the operand that n indexes; when n is
 * small (decode: few tokens) the split falls on m, and each thread streams
 * only its rows of the weights.
 *
 * fp16 and bf16 operands are converted block by block into fp32 panels in
 * the workspace (a plan converts the weights whole, once: pack); the GEMM
 * runs in fp32 (fp32 accumulation) into a per-thread fp32 block, and the
 * epilogue rounds once on the store. fp32
 * operands take the same panels when a leading dimension does not fit
 * OpenBLAS's integer, so that only k (and the panels' small leading
 * dimensions) reach it.
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

/* Target fp32 elements in one block of C. Through fp32 panels 128 Ki
 * floats (512 KiB), which bounds each thread's panels. fp32 operands read
 * where they lie take 2 Mi floats (8 MiB): every block is an OpenBLAS call
 * of its own that packs its share of both operands again, which cost more
 * than the epilogue's pass over a block out of L2 gains, even at small k
 * (docs/cpu-kernels.md, "OpenBLAS gemm blocks"). */
#define PANEL_BLOCK_ELEMS (128 * 1024)
#define DIRECT_BLOCK_ELEMS (2 * 1024 * 1024)

typedef struct blocking {
    int64_t mb, nb;         /* block shape */
    int64_t mblocks, nblocks;
    int threads;            /* at most one a block */
    int rows_outer;         /* threads' runs row-block major */
    int panels;             /* through fp32 panels */
    int64_t per_thread;     /* floats of a thread's panels */
} blocking;

/* Columns of a block of mb rows: about elems / mb, at least 16, at most
 * n. */
static int64_t block_cols(int64_t elems, int64_t mb, int64_t n)
{
    int64_t nb = elems / mb;
    if (nb < 16)
        nb = 16;
    return nb > n ? n : nb;
}

static blocking choose_blocks(const fb_gemm_problem *p, int threads)
{
    const int64_t m = p->m, n = p->n;
    blocking b;
    /* 16-bit data, and fp32 with a leading dimension OpenBLAS cannot
     * take, go through fp32 panels: OpenBLAS sees only the panels' own. */
    b.panels = p->dtype != FB_DTYPE_F32 || !fb_cpu_fits_blasint(p->lda) ||
               !fb_cpu_fits_blasint(p->ldb) || !fb_cpu_fits_blasint(p->ldc);
    const int64_t elems = b.panels ? PANEL_BLOCK_ELEMS : DIRECT_BLOCK_ELEMS;
    /* Whole columns when m fits a block with at least 64 columns beside
     * it; otherwise 512-row blocks. */
    b.mb = m * 64 <= elems ? m : 512;
    if (b.mb > m)
        b.mb = m;
    b.nb = block_cols(elems, b.mb, n);
    b.mblocks = (m + b.mb - 1) / b.mb;
    /* Enough blocks for every thread: split the longer side, so that
     * each thread reads its share of the larger operand (split on n,
     * every thread would read all of op(A): the weights, with few
     * tokens); the threads' runs then go row-block major. */
    b.rows_outer = b.mblocks < threads && m > n;
    if (b.rows_outer) {
        b.mb = (m + threads - 1) / threads;
        b.mblocks = (m + b.mb - 1) / b.mb;
        b.nb = block_cols(elems, b.mb, n);
    } else if (b.mblocks < threads) {
        int64_t want = (threads + b.mblocks - 1) / b.mblocks;
        if (b.nb > (n + want - 1) / want)
            b.nb = (n + want - 1) / want;
    }
    /* Blocks of equal size, so that equal runs of them are equal work
     * (384 columns in blocks of 256 gave one thread twice the other's). */
    b.mb = (m + b.mblocks - 1) / b.mblocks;
    b.nblocks = (n + b.nb - 1) / b.nb;
    /* As many blocks for every thread: 7 blocks on two threads would
     * leave one of them 4, the time of 8. */
    for (int64_t q = b.nblocks; q < b.nblocks + threads && q <= n; q++) {
        const int64_t nb = (n + q - 1) / q;
        if ((b.mblocks * ((n + nb - 1) / nb)) % threads == 0) {
            b.nb = nb;
            break;
        }
    }
    b.nblocks = (n + b.nb - 1) / b.nb;
    b.nb = (n + b.nblocks - 1) / b.nblocks;
    b.threads = threads;
    if (b.threads > b.mblocks * b.nblocks)
        b.threads = (int)(b.mblocks * b.nblocks);
    /* Per thread, op(A) and op(B) panels and the fp32 block. */
    b.per_thread = b.mb * p->k + p->k * b.nb + b.mb * b.nb;
    return b;
}

static int64_t bias_len(const fb_gemm_problem *p)
{
    return p->ep.bias_per_row ? p->m : p->n;
}

/* k reaches OpenBLAS as it is; a leading dimension beyond its integer is
 * kept from it by the panels. */
static int applies(const fb_cpu_call *c, const fb_gemm_problem *p)
{
    (void)c;
    return !p->multiply || fb_cpu_fits_blasint(p->k);
}

/* The panels, then (once) the bias in fp32. */
static size_t workspace(const fb_gemm_problem *p, int threads, int packed)
{
    (void)packed;
    const blocking b = choose_blocks(p, threads);
    if (!b.panels)
        return 0;
    return ((size_t)b.per_thread * (size_t)b.threads +
            (size_t)bias_len(p) + 64) * sizeof(float);
}

/* Where op(A)'s rows i0.. and op(B)'s columns j0.. start in storage. */
/* (A NULL operand, allowed when k == 0, stays NULL: no arithmetic on it.) */
static const char *a_rows(const fb_gemm_problem *p, int64_t i0)
{
    const int64_t es = fb_dtype_size(p->dtype);
    if (p->a == NULL)
        return NULL;
    return (const char *)p->a + (p->transa ? i0 * p->lda : i0) * es;
}

static const char *b_cols(const fb_gemm_problem *p, int64_t j0)
{
    const int64_t es = fb_dtype_size(p->dtype);
    if (p->b == NULL)
        return NULL;
    return (const char *)p->b + (p->transb ? j0 : j0 * p->ldb) * es;
}

static void bias_act_block(float *c, int64_t ldc, int64_t mb, int64_t nb,
                           const float *bias, int per_row, int64_t i0,
                           int64_t j0, fb_activation act)
{
    for (int64_t j = 0; j < nb; j++) {
        float *col = c + j * ldc;
        if (bias == NULL)
            fb_cpu_bias_act(col, NULL, mb, act);
        else if (per_row)
            fb_cpu_bias_act(col, bias + i0, mb, act);
        else
            fb_cpu_scalar_bias_act(col, bias[j0 + j], mb, act);
    }
}

/* C block <- beta C block, without reading C when beta == 0: what BLAS
 * does when there is nothing to multiply (k == 0 or alpha == 0: A and B
 * are not referenced, and alpha itself, even NaN, does not enter). Done
 * here rather than left to OpenBLAS, whose versions differ on it. */
static void scale_block(float *c, int64_t ldc, int64_t mb, int64_t nb,
                        float beta)
{
    for (int64_t j = 0; j < nb; j++) {
        float *col = c + j * ldc;
        if (beta == 0.0f)
            memset(col, 0, (size_t)mb * sizeof(float));
        else
            for (int64_t i = 0; i < mb; i++)
                col[i] *= beta;
    }
}

static void gemm_block_f32(const fb_gemm_problem *p, int64_t i0, int64_t j0,
                           int64_t mb, int64_t nb)
{
    float *c = (float *)p->c + i0 + j0 * p->ldc;
    if (!p->multiply) {
        scale_block(c, p->ldc, mb, nb, p->beta);
        bias_act_block(c, p->ldc, mb, nb, p->ep.bias, p->ep.bias_per_row, i0,
                       j0, p->ep.act);
        return;
    }
    cblas_sgemm(CblasColMajor, p->transa ? CblasTrans : CblasNoTrans,
                p->transb ? CblasTrans : CblasNoTrans, (blasint)mb,
                (blasint)nb, (blasint)p->k, p->alpha,
                (const float *)a_rows(p, i0), (blasint)p->lda,
                (const float *)b_cols(p, j0), (blasint)p->ldb, p->beta, c,
                (blasint)p->ldc);
    bias_act_block(c, p->ldc, mb, nb, p->ep.bias, p->ep.bias_per_row, i0, j0,
                   p->ep.act);
}

/* The weights (A or B, as weight_is_a says) as stored, rows x cols of
 * the column-major storage: what pack converts. */
static void weight_dims(const fb_gemm_problem *p, int64_t *rows,
                        int64_t *cols)
{
    if (p->weight_is_a) {
        *rows = p->transa ? p->k : p->m;
        *cols = p->transa ? p->m : p->k;
    } else {
        *rows = p->transb ? p->n : p->k;
        *cols = p->transb ? p->k : p->n;
    }
}

/* One block through fp32 panels: op(A)'s rows and op(B)'s columns
 * converted (16-bit) or copied (fp32) into scratch, or the weights' taken
 * from w32 (converted whole by pack), the product into an fp32 block
 * there, then beta C, bias and activation, and the store. */
static void gemm_block_panels(const fb_gemm_problem *p, const float *w32,
                              const float *bias32, int64_t i0, int64_t j0,
                              int64_t mb, int64_t nb, float *scratch)
{
    const int64_t k = p->k, es = fb_dtype_size(p->dtype);
    float *ap = scratch, *bp = scratch + mb * k, *cb = bp + k * nb;
    /* Panels keep the operands' orientation: stored rows x cols. */
    const int64_t ar = p->transa ? k : mb, ac = p->transa ? mb : k;
    const int64_t br = p->transb ? nb : k, bc = p->transb ? k : nb;
    int64_t lda = ar, ldb = br, wr, wc;
    weight_dims(p, &wr, &wc);
    if (!p->multiply) {
        scale_block(cb, mb, mb, nb, 0.0f);
    } else {
        if (w32 != NULL && p->weight_is_a)
            ap = (float *)w32 + (p->transa ? i0 * wr : i0), lda = wr;
        else
            fb_cpu_pack_f32(p->dtype, a_rows(p, i0), p->lda, ar, ac, ap);
        if (w32 != NULL && !p->weight_is_a)
            bp = (float *)w32 + (p->transb ? j0 : j0 * wr), ldb = wr;
        else
            fb_cpu_pack_f32(p->dtype, b_cols(p, j0), p->ldb, br, bc, bp);
        cblas_sgemm(CblasColMajor, p->transa ? CblasTrans : CblasNoTrans,
                    p->transb ? CblasTrans : CblasNoTrans, (blasint)mb,
                    (blasint)nb, (blasint)k, p->alpha, ap, (blasint)lda, bp,
                    (blasint)ldb, 0.0f, cb, (blasint)mb);
    }
    char *c = (char *)p->c + (i0 + j0 * p->ldc) * es;
    if (p->beta != 0.0f) {
        /* beta C in fp32, read one column at a time through a small
         * buffer: C itself may be 16-bit. */
        float old[256];
        for (int64_t j = 0; j < nb; j++)
            for (int64_t i = 0; i < mb; i += 256) {
                int64_t cnt = mb - i < 256 ? mb - i : 256;
                fb_cpu_to_f32(p->dtype, c + (j * p->ldc + i) * es, old, cnt);
                float *dst = cb + j * mb + i;
                for (int64_t q = 0; q < cnt; q++)
                    dst[q] += p->beta * old[q];
            }
    }
    bias_act_block(cb, mb, mb, nb, bias32, p->ep.bias_per_row, i0, j0,
                   p->ep.act);
    for (int64_t j = 0; j < nb; j++)
        fb_cpu_from_f32(p->dtype, cb + j * mb, c + j * p->ldc * es, mb);
}

static fb_status run(const fb_cpu_call *call, const fb_gemm_problem *p,
                     char *path, size_t len)
{
    const blocking b = choose_blocks(p, call->threads);
    const int t = b.threads;
    const int64_t nblk = b.mblocks * b.nblocks;
    /* OpenBLAS would retry a failed first map forever: ask first. */
    if (p->multiply && !fb_cpu_blas_buffers(t, path, len))
        return FB_STATUS_ALLOC_FAILED;
    float *ws = call->ws;
    const float *bias32 = p->ep.bias;
    if (b.panels) {
        if (p->ep.bias != NULL) {
            fb_cpu_to_f32(p->dtype, p->ep.bias, ws, bias_len(p));
            bias32 = ws;
        }
        ws += (bias_len(p) + 15) / 16 * 16;
    }

#pragma omp parallel num_threads(t) if (t > 1)
    {
        fb_cpu_blas_on_this_thread();
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* Contiguous runs of blocks, column-block major (consecutive
         * blocks share their B panel) or row-block major (their A rows) */
        const int64_t lo = nblk * tid / nt, hi = nblk * (tid + 1) / nt;
        float *scratch = b.panels ? ws + b.per_thread * tid : NULL;
        for (int64_t q = lo; q < hi; q++) {
            const int64_t bi = b.rows_outer ? q / b.nblocks : q % b.mblocks;
            const int64_t bj = b.rows_outer ? q % b.nblocks : q / b.mblocks;
            const int64_t i0 = bi * b.mb, j0 = bj * b.nb;
            const int64_t mb = p->m - i0 < b.mb ? p->m - i0 : b.mb;
            const int64_t nb = p->n - j0 < b.nb ? p->n - j0 : b.nb;
            if (b.panels)
                gemm_block_panels(p, call->packed, bias32, i0, j0, mb, nb,
                                  scratch);
            else
                gemm_block_f32(p, i0, j0, mb, nb);
        }
    }
    if (p->multiply)
        fb_cpu_blas_ran(t);
    snprintf(path, len, "cpu/%s/%s/blocks=%lldx%lld/threads=%d",
             fb_cpu_arrangement(), b.panels ? "f32-panels" : "sgemm",
             (long long)b.mb, (long long)b.nb, t);
    return FB_STATUS_SUCCESS;
}

/* 16-bit weights in fp32, stored as they are with a tight leading
 * dimension: what every call would convert block by block (the same
 * values, so the same bits). fp32 weights are read where they lie. */
static size_t pack_bytes(const fb_gemm_problem *p)
{
    int64_t rows, cols;
    weight_dims(p, &rows, &cols);
    if (p->dtype == FB_DTYPE_F32 || !p->multiply)
        return 0;
    return (size_t)rows * (size_t)cols * sizeof(float);
}

static void pack(const fb_gemm_problem *p, int threads, void *dst)
{
    int64_t rows, cols;
    weight_dims(p, &rows, &cols);
    (void)threads;
    fb_cpu_pack_f32(p->dtype, p->weight_is_a ? p->a : p->b,
                    p->weight_is_a ? p->lda : p->ldb, rows, cols, dst);
}

const fb_cpu_gemm_impl fb_cpu_gemm_openblas = {
    "cpu/openblas", FB_CPU_BLAS_THREADS, applies, workspace, pack_bytes,
    pack, run, NULL};
