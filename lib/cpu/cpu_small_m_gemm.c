/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m_gemm.c -- gemm_bias_act in the decode form on the small-m
 * kernel (cpu_small_m.h): op(A) = W (stored rows contiguous along k),
 * op(B) = X^T (tokens contiguous along k), few tokens. The kernel streams
 * W once and beats OpenBLAS (whose packing re-reads W per 16 tokens
 * here) up to its 32 tokens, and bf16 on AMX in blocks of up to the 80
 * tokens its token tiles hold (where the bf16 driver would pack every
 * weight first).
 *
 * C (m x n, n <= 32 tokens, or 80 a block) is done in units of SMALL_M_ROWS rows, each
 * thread a contiguous run of units (the weights split, never the tokens);
 * each unit's dot products land in a small buffer, then alpha, beta, bias
 * and activation are applied per token over the unit's contiguous rows
 * and stored. 16-bit weights are read as they are (the kernel widens them
 * in registers); X and the bias are converted to fp32 once.
 *
 * Two entries share this driver: cpu/small-m-avx512 (cpu_small_m.c, with
 * AMX (cpu_small_m_amx.c) or VDPBF16PS for bf16 where the CPU has them)
 * and cpu/small-m-avx2 (cpu_small_m_avx2.c, FMA only), for CPUs without
 * AVX-512.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_impl.h"
#include "cpu_f32_gemm.h"
#include "cpu_bf16_kernel.h"
#include "cpu_small_m.h"

/* Output rows (of the normalised C) per unit of work: a multiple of the
 * kernels' 6-row (AVX-512 FMA), 5-row (VDPBF16PS) and 3-row (AVX2)
 * blocks, or of AMX's 16-row tiles; the unit's dot products (at most
 * 32 x 64 floats) stay in L1 for the epilogue. */
#define SMALL_M_ROWS 60
#define SMALL_M_AMX_ROWS 64
/* Fewer output rows than this stay with OpenBLAS (as before 32 tokens). */
#define SMALL_M_MIN_ROWS 48

/* The decode form, whichever kernel runs it. */
static int decode_form(const fb_gemm_problem *p)
{
    return p->transa && !p->transb && p->n <= FB_SMALL_M_MAX &&
           p->multiply && p->m >= SMALL_M_MIN_ROWS;
}

/* bf16 on AMX: any number of tokens, in blocks of as many as the token
 * tiles hold. */
static int amx_form(const fb_gemm_problem *p)
{
    return p->transa && !p->transb && p->multiply &&
           p->m >= SMALL_M_MIN_ROWS && p->dtype == FB_DTYPE_BF16 &&
           fb_cpu_amx_available();
}

/* fp16 and fp32: any number of tokens, in blocks of the FMA form's. */
static int fma_blocks_form(const fb_gemm_problem *p)
{
    return p->transa && !p->transb && p->multiply &&
           p->m >= SMALL_M_MIN_ROWS &&
           (p->dtype == FB_DTYPE_F16 || p->dtype == FB_DTYPE_F32);
}

/* Tokens a block: all of them up to the form's most (AMX's or the FMA
 * form's), else equal blocks of at most that many. */
static int64_t block_tokens(const fb_gemm_problem *p)
{
    return fb_cpu_small_m_block(
        p->n, amx_form(p) ? FB_SMALL_M_AMX_MAX : FB_SMALL_M_MAX);
}

static int applies_avx512(const fb_cpu_call *c, const fb_gemm_problem *p)
{
    /* fp32 past one block is the fp32 GEMM's domain: there the blocks
     * follow its choice (FUSEDBLAS_CPU_SGEMM=openblas keeps OpenBLAS) */
    if (p->dtype == FB_DTYPE_F32 && !decode_form(p) &&
        !fb_cpu_f32_kernel_chosen(c->h))
        return 0;
    return (decode_form(p) || amx_form(p) || fma_blocks_form(p)) &&
           fb_cpu_small_m_available();
}

/* Past FB_SMALL_M_MAX tokens, only weights large enough: bf16 64 KiB a
 * token in one block, four times that in several (the bf16 driver's
 * blocking pays from there); fp16 64 KiB a token up to
 * FB_SMALL_M_F16_GEMM_MAX tokens, from where OpenBLAS on fp32 copies
 * keeps up; fp32 up to FB_SMALL_M_F32_GEMM_MAX tokens (two blocks) where
 * the weights take FB_SMALL_M_F32_GEMM_BYTES or more, whose packing costs
 * the fp32 driver more than a second stream (docs/cpu-kernels.md). */
#define FB_SMALL_M_F16_GEMM_MAX 64
#define FB_SMALL_M_F32_GEMM_MAX 48
#define FB_SMALL_M_F32_GEMM_BYTES ((double)(64 << 20))
static int prefers(const fb_gemm_problem *p)
{
    if (p->n <= FB_SMALL_M_MAX)
        return 1;
    if (p->dtype == FB_DTYPE_F32)
        return p->n <= FB_SMALL_M_F32_GEMM_MAX &&
               4.0 * (double)p->m * (double)p->k >= FB_SMALL_M_F32_GEMM_BYTES;
    const int one_block =
        p->n <= FB_SMALL_M_AMX_MAX && p->dtype == FB_DTYPE_BF16;
    return (p->dtype != FB_DTYPE_F16 || p->n <= FB_SMALL_M_F16_GEMM_MAX) &&
           2.0 * (double)p->m * (double)p->k >=
               (double)p->n * (double)FB_SMALL_M_AMX_BYTES_PER_ROW *
                   (one_block || p->dtype == FB_DTYPE_F16 ? 1.0 : 4.0);
}

static int applies_avx2(const fb_cpu_call *c, const fb_gemm_problem *p)
{
    (void)c;
    return decode_form(p) && fb_cpu_small_m_avx2_available();
}

/* X copied into panels whose rows sit off w's L1 sets
 * (fb_cpu_small_m_panel_ld): fp32 for the FMA form, and the bf16 as
 * stored for VDPBF16PS (AMX: packed as its pair operand, then as
 * stored, for the exponent check); then the bias in fp32. */
typedef struct layout {
    int dpa;                  /* X kept in bf16 too, for VDPBF16PS */
    int amx;                  /* or packed for AMX instead */
    int64_t ldx, ldx16, x16_floats, bias_len;
    size_t bytes;
} layout;

static layout layout_of(const fb_gemm_problem *p, int avx512)
{
    layout l;
    const int64_t k = p->k, ntok = p->n;
    l.dpa = avx512 && p->dtype == FB_DTYPE_BF16 &&
            ntok >= FB_SMALL_M_DP_MIN_ROWS && fb_cpu_small_m_dp_available();
    l.amx = avx512 && p->dtype == FB_DTYPE_BF16 &&
            ntok >= FB_SMALL_M_AMX_MIN_ROWS && fb_cpu_amx_available();
    l.ldx = fb_cpu_small_m_panel_ld(k, 4);
    l.ldx16 = fb_cpu_small_m_panel_ld(k, 2);
    l.x16_floats = l.dpa ? (ntok * l.ldx16 + 31) / 32 * 16 : 0;
    /* AMX's packed X, then X in bf16 with its own stride for the field. */
    if (l.amx)
        l.x16_floats =
            (int64_t)(fb_cpu_small_m_amx_pack_bytes(ntok, k) / 4) + 16 +
            (ntok * l.ldx16 + 31) / 32 * 16;
    l.bias_len = p->ep.bias_per_row ? p->m : p->n;
    l.bytes = (size_t)(ntok * l.ldx + l.x16_floats + l.bias_len + 16) *
              sizeof(float);
    return l;
}

static size_t workspace_avx512(const fb_gemm_problem *p, int threads,
                               int packed)
{
    (void)threads, (void)packed;
    fb_gemm_problem q = *p;
    q.n = block_tokens(p);
    return layout_of(&q, 1).bytes;
}

static size_t workspace_avx2(const fb_gemm_problem *p, int threads,
                             int packed)
{
    (void)threads, (void)packed;
    return layout_of(p, 0).bytes;
}

static const char *a_rows(const fb_gemm_problem *p, int64_t i0)
{
    return (const char *)p->a + i0 * p->lda * fb_dtype_size(p->dtype);
}

/* One block of tokens (p->n at most FB_SMALL_M_AMX_MAX). avx512: the
 * AVX-512 kernel (and AMX or VDPBF16PS where they pay), else the AVX2
 * one. */
static void run_block(int avx512, const fb_cpu_call *call,
                      const fb_gemm_problem *p, char *path, size_t len)
{
    const fb_cpu_small_m_fn kernel =
        avx512 ? fb_cpu_small_m_nt : fb_cpu_small_m_avx2_nt;
    const int64_t k = p->k, ntok = p->n, es = fb_dtype_size(p->dtype);
    const int wide = p->dtype != FB_DTYPE_F32;
    const layout l = layout_of(p, avx512);
    const int64_t unit_rows = l.amx ? SMALL_M_AMX_ROWS : SMALL_M_ROWS;
    const int64_t units = (p->m + unit_rows - 1) / unit_rows;
    int t = call->threads;
    if (t > units)
        t = (int)units;
    const int64_t ldx = l.ldx, ldx16 = l.ldx16;
    float *ws = call->ws;
    float *x32 = ws;
    uint16_t *xamx = (uint16_t *)(ws + ntok * ldx);
    uint16_t *x16 = l.amx ? xamx + fb_cpu_small_m_amx_pack_bytes(ntok, k) / 2 + 32
                          : xamx;
    const float *bias32 = p->ep.bias;
    for (int64_t i = 0; i < ntok; i++) {
        const char *xi = (const char *)p->b + i * p->ldb * es;
        if (wide)
            fb_cpu_to_f32(p->dtype, xi, x32 + i * ldx, k);
        else
            memcpy(x32 + i * ldx, xi, (size_t)k * sizeof(float));
        if (l.dpa || l.amx)
            memcpy(x16 + i * ldx16, xi, (size_t)k * sizeof(uint16_t));
    }
    if (l.amx)
        fb_cpu_small_m_amx_pack(ntok, k, x16, ldx16, xamx);
    if (wide && p->ep.bias != NULL) {
        float *b32 = ws + ntok * ldx + l.x16_floats;
        fb_cpu_to_f32(p->dtype, p->ep.bias, b32, l.bias_len);
        bias32 = b32;
    }
    /* bf16 on AMX or VDPBF16PS, unless X holds values they would not get
     * exactly right (then no unit could: a denormal); a unit whose weights
     * are too small for them runs again on the FMA form. */
    int fell_back = 0;
    const int x_field = l.dpa || l.amx
                            ? fb_cpu_bf16_min_field(x16, ntok, k, ldx16)
                            : 0;
    const int dp = x_field > 0;

#pragma omp parallel num_threads(t) if (t > 1) reduction(| : fell_back)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t u0 = units * tid / nt, u1 = units * (tid + 1) / nt;
        const int64_t end = u1 * unit_rows < p->m ? u1 * unit_rows : p->m;
        float dots[FB_SMALL_M_AMX_MAX * SMALL_M_AMX_ROWS];
        float old[SMALL_M_AMX_ROWS];
        for (int64_t u = u0; u < u1; u++) {
            const int64_t j0 = u * unit_rows;
            const int64_t rows = end - j0 < unit_rows ? end - j0 : unit_rows;
            /* The rest of this thread's rows follow: the kernel may
             * prefetch into them. */
            const int done =
                !dp ? 0
                : l.amx
                    ? fb_cpu_small_m_amx_nt(ntok, rows, k, xamx, x_field,
                                            a_rows(p, j0), p->lda, dots,
                                            unit_rows)
                    : fb_cpu_small_m_dp_nt(ntok, rows, k, x16, ldx16,
                                           x_field, a_rows(p, j0), p->lda,
                                           end - j0 - rows, dots, unit_rows);
            /* The FMA form takes FB_SMALL_M_MAX tokens a call. */
            for (int64_t i = 0; !done && i < ntok; i += FB_SMALL_M_MAX)
                kernel(p->dtype,
                       ntok - i < FB_SMALL_M_MAX ? ntok - i : FB_SMALL_M_MAX,
                       rows, k, x32 + i * ldx, ldx, a_rows(p, j0), p->lda,
                       end - j0 - rows, dots + i * unit_rows, unit_rows, 0);
            fell_back |= !done && dp;
            for (int64_t i = 0; i < ntok; i++) {
                float *d = dots + i * unit_rows;
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
    snprintf(path, len, "cpu/small-m-%s/%s/threads=%d",
             avx512 ? "avx512" : "avx2",
             fb_cpu_small_m_form(dp, l.amx, fell_back, p->dtype), t);
}

/* The blocks of tokens in turn (columns of the normalised C), each
 * streaming the weights once. */
static fb_status run_with(int avx512, const fb_cpu_call *call,
                          const fb_gemm_problem *p, char *path, size_t len)
{
    const int64_t nb = block_tokens(p), es = fb_dtype_size(p->dtype);
    char ran[128] = "";
    path[0] = '\0';
    for (int64_t j0 = 0; j0 < p->n; j0 += nb) {
        fb_gemm_problem q = *p;
        q.n = p->n - j0 < nb ? p->n - j0 : nb;
        q.b = (const char *)p->b + j0 * p->ldb * es;
        q.c = (char *)p->c + j0 * p->ldc * es;
        if (p->ep.bias != NULL && !p->ep.bias_per_row)
            q.ep.bias = (const char *)p->ep.bias + j0 * es;
        run_block(avx512, call, &q, ran, sizeof ran);
        fb_cpu_small_m_keep_path(path, len, ran);
    }
    fb_cpu_small_m_blocks_note(path, len, "token-blocks", nb, p->n);
    return FB_STATUS_SUCCESS;
}

static fb_status run_avx512(const fb_cpu_call *c, const fb_gemm_problem *p,
                            char *path, size_t len)
{
    return run_with(1, c, p, path, len);
}

static fb_status run_avx2(const fb_cpu_call *c, const fb_gemm_problem *p,
                          char *path, size_t len)
{
    return run_with(0, c, p, path, len);
}

const fb_cpu_gemm_impl fb_cpu_gemm_small_m = {
    "cpu/small-m-avx512", FB_CPU_OWN_THREADS, applies_avx512,
    workspace_avx512, NULL, NULL, run_avx512, prefers};

const fb_cpu_gemm_impl fb_cpu_gemm_small_m_avx2 = {
    "cpu/small-m-avx2", FB_CPU_OWN_THREADS, applies_avx2, workspace_avx2,
    NULL, NULL, run_avx2, NULL};
