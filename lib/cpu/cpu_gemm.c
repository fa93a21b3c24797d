/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_gemm.c -- gemm_bias_act on the CPU.
 *
 * C (column-major, m x n after normalisation) is cut into blocks of about
 * half a megabyte. Each OpenMP thread takes a contiguous run of blocks; for
 * each it calls OpenBLAS on that block alone, then applies beta (16-bit
 * types), bias and activation to the block while it is still in cache, so
 * C is never passed over a second time. A block is mb x nb with mb covering
 * all of m when m is modest: the parallel split then falls on n, and each
 * thread streams only its share of the operand that n indexes; when n is
 * small (decode: few tokens) the split falls on m, and each thread streams
 * only its rows of the weights.
 *
 * Not through OpenBLAS: the decode form (few tokens) on the small-m kernel
 * (cpu_small_m.c), bf16 on the AVX512-BF16 kernel (cpu_bf16_gemm.c), fp32
 * with a small k on the in-place kernel (cpu_f32_small_k.c), and other
 * fp32 on our AVX-512F kernel wherever AVX-512F runs, unless
 * FUSEDBLAS_CPU_SGEMM asks for OpenBLAS (cpu_f32_gemm.h).
 *
 * fp16 and bf16 operands are converted block by block into fp32 panels in
 * the handle's workspace; the GEMM runs in fp32 (fp32 accumulation) into a
 * per-thread fp32 block, and the epilogue rounds once on the store. fp32
 * operands take the same panels when a leading dimension does not fit
 * OpenBLAS's integer, so that only k (and the panels' small leading
 * dimensions) reach it; our own kernels take int64_t throughout.
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
#include "cpu_f32_small_k.h"
#include "cpu_small_m.h"

/* Target fp32 elements in one block of C: 128 Ki floats = 512 KiB. */
#define BLOCK_ELEMS (128 * 1024)

typedef struct blocking {
    int64_t mb, nb;         /* block shape */
    int64_t mblocks, nblocks;
} blocking;

static blocking choose_blocks(int64_t m, int64_t n, int threads);
static void gemm_block_f32(const fb_gemm_problem *p, int64_t i0, int64_t j0,
                           int64_t mb, int64_t nb);
static const char *a_rows(const fb_gemm_problem *p, int64_t i0);
static const char *b_cols(const fb_gemm_problem *p, int64_t j0);
static int small_m_applies(const fb_gemm_problem *p);
static int nothing_to_multiply(const fb_gemm_problem *p);
static fb_status gemm_small_m(fb_handle h, const fb_gemm_problem *p, int t,
                              char *path, size_t len);
static void gemm_block_panels(const fb_gemm_problem *p,
                              const float *bias32, int64_t i0, int64_t j0,
                              int64_t mb, int64_t nb, float *scratch);

fb_status fb_cpu_gemm(fb_handle h, const fb_gemm_problem *p, char *path,
                      size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    const double flops = 2.0 * (double)p->m * (double)p->n *
                         (double)(p->k > 0 ? p->k : 1);
    /* Our own kernels thread themselves whatever OpenBLAS's build; only
     * the OpenBLAS panels below depend on it (cpu_threads.c). */
    const int own = fb_cpu_own_threads(h, flops);
    int t = fb_cpu_threads(h, flops);
    if (small_m_applies(p))
        return gemm_small_m(h, p, own, path, len);
    /* Our kernels below: a workspace they cannot get is the call's
     * FB_STATUS_ALLOC_FAILED, never a try at another path, which would
     * end in OpenBLAS's own first allocation (it never gives up). */
    if (fb_cpu_bf16_gemm_applies(p)) {
        fb_status st;
        if (fb_cpu_bf16_gemm(h, p, own, &st, path, len))
            return st;
        /* Declined (a denormal input, which VDPBF16PS would read as 0):
         * the fp32 panels below, nothing written yet. */
    }
    /* fp32 with a small k: op(B) read in place and each tile finished in
     * registers (cpu_f32_small_k.c), whatever OpenBLAS's core. */
    if (fb_cpu_f32_small_k_applies(p)) {
        fb_status st;
        if (fb_cpu_f32_small_k(h, p, own, &st, path, len))
            return st;
    }
    /* fp32 on our AVX-512F kernel wherever the CPU runs it
     * (fb_cpu_f32_kernel_chosen says when, and logs it). */
    if (fb_cpu_f32_gemm_applies(h, p)) {
        fb_status st;
        if (fb_cpu_f32_gemm(h, p, own, &st, path, len))
            return st;
    }
    /* OpenBLAS from here on. Its integers are 32-bit in the usual
     * builds: k goes to it as it is; a leading dimension beyond them is
     * kept from it by the panels below. */
    if (!nothing_to_multiply(p) && !fb_cpu_fits_blasint(p->k)) {
        snprintf(path, len, "k = %lld exceeds OpenBLAS's %zu-byte integer",
                 (long long)p->k, sizeof(blasint));
        return FB_STATUS_NOT_SUPPORTED;
    }
    const blocking b = choose_blocks(p->m, p->n, t);
    const int64_t nblk = b.mblocks * b.nblocks;
    if (t > nblk)
        t = (int)nblk;
    const int blas = !nothing_to_multiply(p);
    if (blas && !fb_cpu_blas_buffers(t, path, len))
        return FB_STATUS_ALLOC_FAILED;

    /* 16-bit data, and fp32 with a leading dimension OpenBLAS cannot take,
     * go through fp32 panels: OpenBLAS sees only the panels' own. */
    const int panels = p->dtype != FB_DTYPE_F32 ||
                     !fb_cpu_fits_blasint(p->lda) ||
                     !fb_cpu_fits_blasint(p->ldb) ||
                     !fb_cpu_fits_blasint(p->ldc);
    /* Panels: per thread, op(A) and op(B) panels and the fp32 block; once,
     * the bias in fp32. */
    const int64_t bias_len = p->ep.bias_per_row ? p->m : p->n;
    const int64_t per_thread = b.mb * p->k + p->k * b.nb + b.mb * b.nb;
    float *ws = NULL;
    const float *bias32 = p->ep.bias;
    if (panels) {
        size_t bytes = ((size_t)per_thread * (size_t)t + (size_t)bias_len + 64) *
                       sizeof(float);
        ws = fb_handle_workspace(h, bytes);
        if (ws == NULL) {
            snprintf(path, len, "cannot allocate %zu bytes of workspace",
                     bytes);
            return FB_STATUS_ALLOC_FAILED;
        }
        if (p->ep.bias != NULL) {
            fb_cpu_to_f32(p->dtype, p->ep.bias, ws, bias_len);
            bias32 = ws;
        }
        ws += (bias_len + 15) / 16 * 16;
    }

#pragma omp parallel num_threads(t) if (t > 1)
    {
        fb_cpu_blas_on_this_thread();
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* Contiguous runs of blocks, column-block major: consecutive
         * blocks share their B panel. */
        const int64_t lo = nblk * tid / nt, hi = nblk * (tid + 1) / nt;
        float *scratch = panels ? ws + per_thread * tid : NULL;
        for (int64_t q = lo; q < hi; q++) {
            const int64_t bi = q % b.mblocks, bj = q / b.mblocks;
            const int64_t i0 = bi * b.mb, j0 = bj * b.nb;
            const int64_t mb = p->m - i0 < b.mb ? p->m - i0 : b.mb;
            const int64_t nb = p->n - j0 < b.nb ? p->n - j0 : b.nb;
            if (panels)
                gemm_block_panels(p, bias32, i0, j0, mb, nb, scratch);
            else
                gemm_block_f32(p, i0, j0, mb, nb);
        }
    }
    if (blas)
        fb_cpu_blas_ran(t);
    snprintf(path, len, "cpu/%s/%s/blocks=%lldx%lld/threads=%d",
             fb_cpu_arrangement(), panels ? "f32-panels" : "sgemm",
             (long long)b.mb, (long long)b.nb, t);
    return FB_STATUS_SUCCESS;
}

/* ---- helpers ------------------------------------------------------------ */

/* Output rows (of the normalised C) per unit of work in the small-m path:
 * a multiple of the kernel's 6-row (FMA) and 5-row (VDPBF16PS) blocks;
 * the unit's dot products (at most 32 x 60 floats) stay in L1 for the
 * epilogue. */
#define SMALL_M_ROWS 60
/* Fewer output rows than this stay with OpenBLAS (as before 32 tokens). */
#define SMALL_M_MIN_ROWS 48

/* The decode form: op(A) = W (stored rows contiguous along k), op(B) = X^T
 * (tokens contiguous along k), few tokens. The kernel streams W once and
 * beats OpenBLAS (whose packing re-reads W per 16 tokens here) up to its
 * 32 tokens; see cpu_small_m.c. */
#define SMALL_M_TOKENS FB_SMALL_M_MAX

static int small_m_applies(const fb_gemm_problem *p)
{
    return p->transa && !p->transb && p->n <= SMALL_M_TOKENS &&
           !nothing_to_multiply(p) &&
           p->m >= SMALL_M_MIN_ROWS && fb_cpu_small_m_available();
}

/* C (m x n, n <= 32 tokens) in units of SMALL_M_ROWS rows, each thread a
 * contiguous run of units (the weights split, never the tokens); each
 * unit's dot products land in a small buffer, then alpha, beta, bias and
 * activation are applied per token over the unit's contiguous rows and
 * stored. 16-bit weights are read as they are (the kernel widens them in
 * registers); X and the bias are converted to fp32 once. */
static fb_status gemm_small_m(fb_handle h, const fb_gemm_problem *p, int t,
                              char *path, size_t len)
{
    const int64_t k = p->k, ntok = p->n, es = fb_dtype_size(p->dtype);
    const int wide = p->dtype != FB_DTYPE_F32;
    const int64_t units = (p->m + SMALL_M_ROWS - 1) / SMALL_M_ROWS;
    if (t > units)
        t = (int)units;
    const int64_t bias_len = p->ep.bias_per_row ? p->m : p->n;
    /* X copied into panels whose rows sit off w's L1 sets
     * (fb_cpu_small_m_panel_ld): fp32 for the FMA form, and the bf16 as
     * stored for VDPBF16PS. */
    const int dpa = p->dtype == FB_DTYPE_BF16 &&
                    ntok >= FB_SMALL_M_DP_MIN_ROWS &&
                    fb_cpu_small_m_dp_available();
    const int64_t ldx = fb_cpu_small_m_panel_ld(k, 4);
    const int64_t ldx16 = fb_cpu_small_m_panel_ld(k, 2);
    const int64_t x16_floats = dpa ? (ntok * ldx16 + 31) / 32 * 16 : 0;
    const size_t bytes =
        (size_t)(ntok * ldx + x16_floats + bias_len + 16) * sizeof(float);
    float *ws = fb_handle_workspace(h, bytes);
    if (ws == NULL) {
        snprintf(path, len, "cannot allocate %zu bytes of workspace", bytes);
        return FB_STATUS_ALLOC_FAILED;
    }
    float *x32 = ws;
    uint16_t *x16 = (uint16_t *)(ws + ntok * ldx);
    const float *bias32 = p->ep.bias;
    for (int64_t i = 0; i < ntok; i++) {
        const char *xi = (const char *)p->b + i * p->ldb * es;
        if (wide)
            fb_cpu_to_f32(p->dtype, xi, x32 + i * ldx, k);
        else
            memcpy(x32 + i * ldx, xi, (size_t)k * sizeof(float));
        if (dpa)
            memcpy(x16 + i * ldx16, xi, (size_t)k * sizeof(uint16_t));
    }
    if (wide && p->ep.bias != NULL) {
        float *b32 = ws + ntok * ldx + x16_floats;
        fb_cpu_to_f32(p->dtype, p->ep.bias, b32, bias_len);
        bias32 = b32;
    }
    /* bf16 on VDPBF16PS, unless X holds values it would not get exactly
     * right (then no unit could: a denormal); a unit whose weights are
     * too small for it runs again on the FMA form. */
    int fell_back = 0;
    const int x_field = dpa ? fb_cpu_bf16_min_field(x16, ntok, k, ldx16) : 0;
    const int dp = x_field > 0;

#pragma omp parallel num_threads(t) if (t > 1) reduction(| : fell_back)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t u0 = units * tid / nt, u1 = units * (tid + 1) / nt;
        const int64_t end = u1 * SMALL_M_ROWS < p->m ? u1 * SMALL_M_ROWS
                                                      : p->m;
        float dots[FB_SMALL_M_MAX * SMALL_M_ROWS];
        float old[SMALL_M_ROWS];
        for (int64_t u = u0; u < u1; u++) {
            const int64_t j0 = u * SMALL_M_ROWS;
            const int64_t rows = end - j0 < SMALL_M_ROWS ? end - j0
                                                         : SMALL_M_ROWS;
            /* The rest of this thread's rows follow: the kernel may
             * prefetch into them. */
            if (!dp || !fb_cpu_small_m_dp_nt(ntok, rows, k, x16, ldx16,
                                             x_field, a_rows(p, j0), p->lda,
                                             end - j0 - rows, dots,
                                             SMALL_M_ROWS)) {
                fb_cpu_small_m_nt(p->dtype, ntok, rows, k, x32, ldx,
                                  a_rows(p, j0), p->lda, end - j0 - rows,
                                  dots, SMALL_M_ROWS, 0);
                fell_back |= dp;
            }
            for (int64_t i = 0; i < ntok; i++) {
                float *d = dots + i * SMALL_M_ROWS;
                char *c = (char *)p->c + (j0 + i * p->ldc) * es;
                for (int64_t r = 0; r < rows; r++)
                    d[r] *= p->alpha;
                if (p->beta != 0.0f) {
                    fb_cpu_to_f32(p->dtype, c, old, rows);
                    for (int64_t r = 0; r < rows; r++)
                        d[r] += p->beta * old[r];
                }
                if (bias32 == NULL || p->ep.bias_per_row)
                    fb_cpu_bias_act(d, bias32 ? bias32 + j0 : NULL, rows,
                                    p->ep.act);
                else
                    fb_cpu_scalar_bias_act(d, bias32[i], rows, p->ep.act);
                fb_cpu_from_f32(p->dtype, d, c, rows);
            }
        }
    }
    snprintf(path, len, "cpu/small-m-avx512/%s/threads=%d",
             dp && !fell_back ? "bf16-dpbf16"
             : dp             ? "bf16-dpbf16+fma-where-tiny"
             : wide ? (p->dtype == FB_DTYPE_F16 ? "f16-weights" : "bf16-weights")
                    : "f32-weights",
             t);
    return FB_STATUS_SUCCESS;
}

static blocking choose_blocks(int64_t m, int64_t n, int threads)
{
    blocking b;
    /* Whole columns when m fits a block with at least 64 columns beside
     * it; otherwise 512-row blocks. */
    b.mb = m * 64 <= BLOCK_ELEMS ? m : 512;
    if (b.mb > m)
        b.mb = m;
    b.nb = BLOCK_ELEMS / b.mb;
    if (b.nb < 16)
        b.nb = 16;
    if (b.nb > n)
        b.nb = n;
    b.mblocks = (m + b.mb - 1) / b.mb;
    /* Enough blocks for every thread, when n allows. */
    if (b.mblocks < threads) {
        int64_t want = (threads + b.mblocks - 1) / b.mblocks;
        if (b.nb > (n + want - 1) / want)
            b.nb = (n + want - 1) / want;
    }
    b.nblocks = (n + b.nb - 1) / b.nb;
    return b;
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

static int nothing_to_multiply(const fb_gemm_problem *p)
{
    return p->k == 0 || p->alpha == 0.0f;
}

static void gemm_block_f32(const fb_gemm_problem *p, int64_t i0, int64_t j0,
                           int64_t mb, int64_t nb)
{
    float *c = (float *)p->c + i0 + j0 * p->ldc;
    if (nothing_to_multiply(p)) {
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

/* One block through fp32 panels: op(A)'s rows and op(B)'s columns
 * converted (16-bit) or copied (fp32) into scratch, the product into an
 * fp32 block there, then beta C, bias and activation, and the store. */
static void gemm_block_panels(const fb_gemm_problem *p, const float *bias32,
                              int64_t i0, int64_t j0, int64_t mb, int64_t nb,
                              float *scratch)
{
    const int64_t k = p->k, es = fb_dtype_size(p->dtype);
    float *ap = scratch, *bp = scratch + mb * k, *cb = bp + k * nb;
    /* Panels keep the operands' orientation: stored rows x cols. */
    const int64_t ar = p->transa ? k : mb, ac = p->transa ? mb : k;
    const int64_t br = p->transb ? nb : k, bc = p->transb ? k : nb;
    if (nothing_to_multiply(p)) {
        scale_block(cb, mb, mb, nb, 0.0f);
    } else {
        fb_cpu_pack_f32(p->dtype, a_rows(p, i0), p->lda, ar, ac, ap);
        fb_cpu_pack_f32(p->dtype, b_cols(p, j0), p->ldb, br, bc, bp);
        cblas_sgemm(CblasColMajor, p->transa ? CblasTrans : CblasNoTrans,
                    p->transb ? CblasTrans : CblasNoTrans, (blasint)mb,
                    (blasint)nb, (blasint)k, p->alpha, ap, (blasint)ar, bp,
                    (blasint)br, 0.0f, cb, (blasint)mb);
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
