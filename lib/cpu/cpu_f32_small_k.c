/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_small_k.c -- fp32 gemm_bias_act for k <= FB_SMALL_K_MAX (512)
 * on AVX-512F: op(B) read where it lies, each 32 x 12 register tile finished
 * (alpha, beta C, bias, activation) in registers and stored to C once.
 *
 * Why: at k = 32 (the seed's Linear, row-major 1024 x 32 -> 64) the packed
 * kernel (cpu_f32_gemm.c) spends more time packing op(B) (the layer's
 * input) into panels and in the separate bias + activation pass over its
 * accumulator block than multiplying (perf: docs/cpu-kernels.md): with so
 * few products per element, packing and a second pass cost as much as
 * the arithmetic.
 * Here op(B) is not packed: a column of op(B) is k floats, so a tile's
 * 12 columns are a few cache lines (at most 24 KiB) that the broadcasts
 * read in place. It turned out faster than the packed kernel up to
 * k = 512 (cpu_f32_small_k.h has the numbers), also with no activation:
 * no packing of op(B), no accumulator block, one store.
 * op(A) (the weights, nn.Linear's [out, in] layout) is packed whole
 * once, m x k floats, by fb_f32_pack, as the packed kernel does.
 *
 * The order of operations is the packed kernel's (sum over l, times
 * alpha, + beta C by an FMA, + bias, activation), with the activation in
 * registers (cpu_act_avx512.h): the result agrees with it to the
 * activation's rounding, not bit for bit.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_f32_kernel.h"
#include "cpu_f32_small_k.h"
#include "cpu_impl.h"
#include "env.h"
#include "log.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu_act_avx512.h"
#define FB_SMALL_K_X86 1
#endif

static int applies(const fb_cpu_call *c, const fb_gemm_problem *p)
{
    (void)c;
    return p->dtype == FB_DTYPE_F32 && p->multiply &&
           p->k <= FB_SMALL_K_MAX && fb_cpu_small_k_allowed();
}

int fb_cpu_small_k_allowed(void)
{
    if (!fb_cpu_f32_kernel_available())
        return 0;
    const fb_cpu_sgemm_choice v = fb_env_get()->cpu_sgemm;
    return v != FB_CPU_SGEMM_OPENBLAS && v != FB_CPU_SGEMM_PACKED;
}

#if defined(FB_SMALL_K_X86)

/* Packed op(A) per block of row panels: half of a 1 MiB L2. */
#ifndef A_BLOCK_BYTES
#define A_BLOCK_BYTES (512 * 1024)
#endif

/* A tile's columns of op(B): element (l, j) at b[j * sj + l * sl]. */
typedef struct b_cols {
    const float *b;
    int64_t sj, sl;
} b_cols;

/* What finishes a tile: the problem's scalars, C and the bias. */
typedef struct tile_out {
    const fb_gemm_problem *p;
    int64_t i0, j0;  /* the tile's first row and column in C */
    int rows, cols;  /* live rows (<= 32) and columns (<= 12) */
    const fb_small_k_gate *gate; /* the MLP's gated tiles, else NULL */
} tile_out;

/* Loads and stores of a tile column's 16-row halves: unmasked when all
 * rows are live, since a masked store that misses the cache costs several
 * times an unmasked one (docs/cpu-kernels.md). */
FB_AVX512_INLINE __m512 load_rows(const float *x, __mmask16 live)
{
    return live == 0xffffu ? _mm512_loadu_ps(x)
                           : _mm512_maskz_loadu_ps(live, x);
}

FB_AVX512_INLINE void store_rows(float *x, __mmask16 live, __m512 v)
{
    if (live == 0xffffu)
        _mm512_storeu_ps(x, v);
    else if (live != 0)
        _mm512_mask_storeu_ps(x, live, v);
}

/* C tile <- act(alpha acc + beta C + bias), 32 x 12 accumulators in
 * acc0 (rows 0-15) and acc1 (16-31); only the live rows and columns are
 * read or written. */
FB_AVX512_INLINE void finish_tile(const tile_out *o, __m512 *acc0,
                                  __m512 *acc1, fb_activation act)
{
    const fb_gemm_problem *p = o->p;
    const int lo_rows = o->rows < 16 ? o->rows : 16;
    const int hi_rows = o->rows > 16 ? o->rows - 16 : 0;
    const __mmask16 lo = (__mmask16)((1u << lo_rows) - 1u);
    const __mmask16 hi = (__mmask16)((1u << hi_rows) - 1u);
    const __m512 alpha = _mm512_set1_ps(p->alpha);
    const __m512 beta = _mm512_set1_ps(p->beta);
    const float *bias = p->ep.bias;
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
    if (bias != NULL && p->ep.bias_per_row) {
        bias0 = _mm512_maskz_loadu_ps(lo, bias + o->i0);
        bias1 = _mm512_maskz_loadu_ps(hi, bias + o->i0 + 16);
    }
    float *c = (float *)p->c + o->i0 + o->j0 * p->ldc;
    #pragma GCC unroll 12
    for (int j = 0; j < FB_F32_NR; j++) {
        if (j >= o->cols)
            break;
        float *cj = c + j * p->ldc;
        /* x 1 is exact: skipped. */
        __m512 t0 = p->alpha == 1.0f ? acc0[j] : _mm512_mul_ps(acc0[j], alpha);
        __m512 t1 = p->alpha == 1.0f ? acc1[j] : _mm512_mul_ps(acc1[j], alpha);
        if (p->beta != 0.0f) {
            t0 = _mm512_fmadd_ps(beta, load_rows(cj, lo), t0);
            t1 = _mm512_fmadd_ps(beta, load_rows(cj + 16, hi), t1);
        }
        if (bias != NULL) {
            if (p->ep.bias_per_row) {
                t0 = _mm512_add_ps(t0, bias0);
                t1 = _mm512_add_ps(t1, bias1);
            } else {
                const __m512 bj = _mm512_set1_ps(bias[o->j0 + j]);
                t0 = _mm512_add_ps(t0, bj);
                t1 = _mm512_add_ps(t1, bj);
            }
        }
        store_rows(cj, lo, fb_zmm_act(t0, act));
        if (hi != 0)
            store_rows(cj + 16, hi, fb_zmm_act(t1, act));
    }
}

/* The MLP's gated tile: lanes 0-15 of the accumulators are gate rows
 * (hidden units u0..u0+15 of X Wg^T), lanes 16-31 the same units' up
 * rows; H(token, u) = act(G + bg) (U + bu), stored for the tile's 12
 * tokens (whole 16-float rows: H's rows are padded to the panels). */
FB_AVX512_INLINE void finish_gate(const tile_out *o, __m512 *acc0,
                                  __m512 *acc1, fb_activation act)
{
    const fb_small_k_gate *g = o->gate;
    const int64_t u0 = o->i0 / 2;
    const int64_t live = g->h - u0 < 16 ? g->h - u0 : 16;
    const __mmask16 units = (__mmask16)((1u << live) - 1u);
    const __m512 bg = g->bg != NULL ? _mm512_maskz_loadu_ps(units, g->bg + u0)
                                    : _mm512_setzero_ps();
    const __m512 bu = g->bu != NULL ? _mm512_maskz_loadu_ps(units, g->bu + u0)
                                    : _mm512_setzero_ps();
    float *hrow = g->hout + o->j0 * g->ldh + u0;
    #pragma GCC unroll 12
    for (int j = 0; j < FB_F32_NR; j++) {
        if (j >= o->cols)
            break;
        const __m512 gate = g->bg != NULL ? _mm512_add_ps(acc0[j], bg)
                                          : acc0[j];
        const __m512 up = g->bu != NULL ? _mm512_add_ps(acc1[j], bu)
                                        : acc1[j];
        _mm512_storeu_ps(hrow + j * g->ldh,
                         _mm512_mul_ps(fb_zmm_act(gate, act), up));
    }
}

/* One tile: 32 rows of op(A) (packed panel a, 32 floats per l) by the 12
 * columns of op(B) in bc, over all k; then finish_tile (or finish_gate).
 * Per l, 2 loads, 12 broadcasts from op(B) in place, 24 FMAs on
 * independent accumulators. k_contiguous (sl == 1, the compiler's to
 * exploit) and gated are constants after inlining. */
FB_AVX512_INLINE void tile(const float *a, b_cols bc, int64_t k,
                           const tile_out *o, fb_activation act,
                           int k_contiguous, int gated)
{
    __m512 acc0[FB_F32_NR], acc1[FB_F32_NR];
    #pragma GCC unroll 12
    for (int j = 0; j < FB_F32_NR; j++)
        acc0[j] = acc1[j] = _mm512_setzero_ps();
    const int64_t sl = k_contiguous ? 1 : bc.sl, sj = bc.sj;
    for (int64_t l = 0; l < k; l++) {
        const __m512 a0 = _mm512_loadu_ps(a + l * FB_F32_MR);
        const __m512 a1 = _mm512_loadu_ps(a + l * FB_F32_MR + 16);
        const float *bl = bc.b + l * sl;
        #pragma GCC unroll 12
        for (int j = 0; j < FB_F32_NR; j++) {
            const __m512 bj = _mm512_set1_ps(bl[j * sj]);
            acc0[j] = _mm512_fmadd_ps(a0, bj, acc0[j]);
            acc1[j] = _mm512_fmadd_ps(a1, bj, acc1[j]);
        }
    }
    if (gated)
        finish_gate(o, acc0, acc1, act);
    else
        finish_tile(o, acc0, acc1, act);
}

/* The tile for each activation, both layouts of op(B), and the gated
 * form (whose op(B), X's rows, runs along k). */
FB_AVX512_TARGET static void tile_any(const float *a, b_cols bc, int64_t k,
                                      const tile_out *o, fb_activation act,
                                      int k_contiguous)
{
#define FB_TILE(A)                                                             \
    (o->gate != NULL ? tile(a, bc, k, o, A, 1, 1)                              \
     : k_contiguous  ? tile(a, bc, k, o, A, 1, 0)                              \
                     : tile(a, bc, k, o, A, 0, 0))
    switch (act) {
    case FB_ACT_NONE: FB_TILE(FB_ACT_NONE); break;
    case FB_ACT_RELU: FB_TILE(FB_ACT_RELU); break;
    case FB_ACT_GELU_TANH: FB_TILE(FB_ACT_GELU_TANH); break;
    case FB_ACT_GELU_ERF: FB_TILE(FB_ACT_GELU_ERF); break;
    case FB_ACT_SILU: FB_TILE(FB_ACT_SILU); break;
    }
#undef FB_TILE
}

/* Columns [j0, j0 + cols) of op(B), cols < 12 (the last, short panel),
 * copied k-contiguous into edge (12 x k, the missing columns zero) so
 * that the tile never reads past op(B). */
static b_cols edge_cols(const fb_gemm_problem *p, int64_t j0, int cols,
                        float *edge)
{
    const float *b = p->b;
    const int64_t k = p->k;
    memset(edge, 0, sizeof(float) * (size_t)(FB_F32_NR * k));
    for (int j = 0; j < cols; j++)
        for (int64_t l = 0; l < k; l++)
            edge[j * k + l] = p->transb ? b[(j0 + j) + l * p->ldb]
                                        : b[(j0 + j) * p->ldb + l];
    return (b_cols){edge, k, 1};
}

/* The order of the tiles: op(A)'s row panels in blocks of `block`
 * panels (a block's packed panels fit in L2); within a block, column
 * panel by column panel, and within that the block's row panels. A column
 * panel's few lines of op(B) then stay in L1 across its row panels, and
 * the block of op(A) in L2 across the column panels; op(B) is read once
 * per block. Without the blocks, op(A) comes from L3 or memory for every
 * column panel once it outgrows L2 (docs/cpu-kernels.md). */
typedef struct tile_order {
    int64_t apanels, bpanels, block;
} tile_order;

/* Unit u of the order: its row panel *ia and column panel *jb. */
static void unit_at(const tile_order *t, int64_t u, int64_t *ia, int64_t *jb)
{
    const int64_t per_block = t->block * t->bpanels;
    const int64_t blk = u / per_block, rem = u % per_block;
    const int64_t first = blk * t->block;
    const int64_t rows = t->apanels - first < t->block ? t->apanels - first
                                                        : t->block;
    *jb = rem / rows;
    *ia = first + rem % rows;
}

/* The order of p's tiles, with op(A) packed in 32-row panels of depth
 * p->k. */
static tile_order order_of(const fb_gemm_problem *p)
{
    const int64_t panel_bytes = fb_f32_panel_elems(p->k, FB_F32_MR) * 4;
    const int64_t block = A_BLOCK_BYTES / panel_bytes;
    const tile_order t = {(p->m + FB_F32_MR - 1) / FB_F32_MR,
                          (p->n + FB_F32_NR - 1) / FB_F32_NR,
                          block > 0 ? block : 1};
    return t;
}

/* The tiles of units [lo, hi) of p in the order t; gate: the MLP's gated
 * tiles, else NULL. */
static void run_tiles(const fb_gemm_problem *p, const float *apack,
                      const tile_order *t, int64_t lo, int64_t hi,
                      const fb_small_k_gate *gate)
{
    float edge[FB_F32_NR * FB_SMALL_K_MAX];
    const int k_contiguous = !p->transb;
    const float *b = p->b;
    for (int64_t u = lo; u < hi; u++) {
        int64_t ia, jb;
        unit_at(t, u, &ia, &jb);
        const int64_t i0 = ia * FB_F32_MR, j0 = jb * FB_F32_NR;
        tile_out o = {p, i0, j0,
                      (int)(p->m - i0 < FB_F32_MR ? p->m - i0 : FB_F32_MR),
                      (int)(p->n - j0 < FB_F32_NR ? p->n - j0 : FB_F32_NR),
                      gate};
        b_cols bc;
        if (o.cols < FB_F32_NR)
            bc = edge_cols(p, j0, o.cols, edge);
        else if (k_contiguous)
            bc = (b_cols){b + j0 * p->ldb, p->ldb, 1};
        else
            bc = (b_cols){b + j0, 1, p->ldb};
        tile_any(apack + ia * fb_f32_panel_elems(p->k, FB_F32_MR), bc, p->k,
                 &o, gate != NULL ? gate->act : p->ep.act, bc.sl == 1);
    }
}

/* op(A) packed whole: a plan's weights when they are A. */
static size_t a_bytes(const fb_gemm_problem *p)
{
    const int64_t apanels = (p->m + FB_F32_MR - 1) / FB_F32_MR;
    return (size_t)(apanels * fb_f32_panel_elems(p->k, FB_F32_MR)) *
           sizeof(float);
}

static size_t workspace(const fb_gemm_problem *p, int threads, int packed)
{
    (void)threads;
    return packed && p->weight_is_a ? 0 : a_bytes(p);
}

static size_t pack_bytes(const fb_gemm_problem *p)
{
    return p->weight_is_a ? a_bytes(p) : 0;
}

/* Panels [q0, q1) of op(A). */
static void pack_a(const fb_gemm_problem *p, int64_t q0, int64_t q1,
                   float *apack)
{
    const fb_f32_operand opa = {p->a, p->lda, p->transa};
    fb_f32_pack(&opa, p->m, p->k, FB_F32_MR, q0, q1,
                apack + q0 * fb_f32_panel_elems(p->k, FB_F32_MR));
}

static void pack(const fb_gemm_problem *p, int threads, void *dst)
{
    const int64_t apanels = (p->m + FB_F32_MR - 1) / FB_F32_MR;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        pack_a(p, apanels * tid / nt, apanels * (tid + 1) / nt, dst);
    }
}

static fb_status run(const fb_cpu_call *c, const fb_gemm_problem *p,
                     char *path, size_t len)
{
    const int64_t apanels = (p->m + FB_F32_MR - 1) / FB_F32_MR;
    const int64_t bpanels = (p->n + FB_F32_NR - 1) / FB_F32_NR;
    const int64_t units = apanels * bpanels;
    const tile_order order = order_of(p);
    const int packed = c->packed != NULL && p->weight_is_a;
    float *apack = packed ? (float *)c->packed : (float *)c->ws;
    int t = c->threads > 0 ? c->threads : 1;
    if (t > units)
        t = (int)units;
#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* op(A) whole, each thread its share of the panels, then every
         * thread reads every panel. */
        if (!packed)
            pack_a(p, apanels * tid / nt, apanels * (tid + 1) / nt, apack);
#pragma omp barrier
        run_tiles(p, apack, &order, units * tid / nt,
                  units * (tid + 1) / nt, NULL);
    }
    snprintf(path, len, "cpu/f32-small-k/%dx%d/b-in-place/threads=%d",
             FB_F32_MR, FB_F32_NR, t);
    return FB_STATUS_SUCCESS;
}

void fb_small_k_tiles(const fb_gemm_problem *p, const float *apack)
{
    const tile_order t = order_of(p);
    run_tiles(p, apack, &t, 0, t.apanels * t.bpanels, NULL);
}

void fb_small_k_gate_rows(const fb_small_k_gate *g)
{
    /* X's rows as op(B) (k-contiguous), the shared gate/up panels as
     * op(A): 32 lanes per 16 hidden units. */
    fb_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FB_DTYPE_F32;
    p.m = fb_small_k_gate_panels(g->h) * FB_F32_MR;
    p.n = g->rows;
    p.k = g->k;
    p.b = g->x;
    p.ldb = g->ldx;
    p.alpha = 1.0f;
    fb_gemm_decide(&p);
    const tile_order t = order_of(&p);
    run_tiles(&p, g->wgu, &t, 0, t.apanels * t.bpanels, g);
}

#else /* not x86-64: fb_cpu_f32_kernel_available() is 0, never applies */

void fb_small_k_tiles(const fb_gemm_problem *p, const float *apack)
{
    (void)p, (void)apack;
}

void fb_small_k_gate_rows(const fb_small_k_gate *g)
{
    (void)g;
}

static size_t workspace(const fb_gemm_problem *p, int threads, int packed)
{
    (void)p, (void)threads, (void)packed;
    return 0;
}

static size_t pack_bytes(const fb_gemm_problem *p)
{
    (void)p;
    return 0;
}

static void pack(const fb_gemm_problem *p, int threads, void *dst)
{
    (void)p, (void)threads, (void)dst;
}

static fb_status run(const fb_cpu_call *c, const fb_gemm_problem *p,
                     char *path, size_t len)
{
    (void)c, (void)p, (void)path, (void)len;
    return FB_STATUS_INTERNAL;
}

#endif

const fb_cpu_gemm_impl fb_cpu_gemm_small_k = {
    "cpu/f32-small-k", FB_CPU_OWN_THREADS, applies, workspace, pack_bytes,
    pack, run, NULL};
