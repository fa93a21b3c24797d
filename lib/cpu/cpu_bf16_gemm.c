/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_gemm.c -- gemm_bias_act for bf16 operands on one of the bf16
 * engines (cpu_bf16_kernel.h): AMX's tiles where the CPU and the OS allow
 * them, else AVX512-BF16's register block. Two entries of the table, one
 * driver.
 *
 * Both instructions multiply the two bf16 of one 32-bit word of each
 * operand and add both products to an fp32 lane, so each operand is
 * packed k-pair interleaved: the word for (row i, pair p) holds
 * op(A)(i, 2p) and op(A)(i, 2p + 1); a missing element of an odd k is a
 * zero.
 *
 *   AVX512-BF16: op(A) in panels of 32 rows (per pair, two vectors), op(B)
 *   of 12 columns (per pair, 12 words, each broadcast); a 32 x 12 block of
 *   fp32 accumulators (24 vectors), 24 VDPBF16PS per pair.
 *   AMX: op(A) in the same 32-row panels, op(B) in 16-row tile panels;
 *   32 x 32 of C in four accumulator tiles (cpu_bf16_amx.c).
 *
 * C (column-major) gets vectors down its columns, which is also where a
 * row-major call's bias runs.
 *
 * The instructions read denormal inputs as zero (and a denormal times a
 * huge value is not small), and flush denormal products and sums, which
 * IEEE fp32 keeps; fb_bf16_products_exact rules those out from the
 * smallest exponents of A and B, which applies() reads before any work (a
 * plan's packed weights carry theirs), so that such a call goes to the
 * next implementation with nothing done. Both operands are then packed
 * whole (threads share the panels; a plan's weights are packed already).
 * C is cut into blocks (about 256 x 192 or 256) that each thread finishes in
 * turn: the block's fp32 accumulators (in L2) take the k range in chunks,
 * then alpha, beta C, bias and activation are applied while the block is
 * in cache and it is rounded to bf16 once, on the store.
 *
 * (tests/harness.c's bound allows (k + 4) 2^-124 absolute, which would
 * cover the flushes, but the fuzzer's judge allows only 2^-149 per
 * rounding, IEEE gradual underflow: found by make fuzz, hence the rule.)
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_bf16_gemm.h"
#include "cpu_bf16_kernel.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_f32_kernel.h" /* fb_f32_axpy: AVX512-BF16 implies AVX-512F */
#include "cpu_impl.h"
#include "cpu_packed_blocking.h"
#include "log.h"

/* Block of C per step of a thread, in panels: 8 x 32 rows, 16 x 12
 * columns (AVX512-BF16) or 16 x 16 (AMX); fp32 accumulators of 192 or
 * 256 KiB. */
#define BLOCK_APANELS 8
#define BLOCK_BPANELS 16

/* Where op(A)'s row 0 and op(B)'s column 0 start, and whether they run
 * along k in storage. */
static void operands(const fb_gemm_problem *p, fb_bf16_operand *a,
                     fb_bf16_operand *b)
{
    a->base = p->a, a->ld = p->lda, a->k_contiguous = p->transa;
    b->base = p->b, b->ld = p->ldb, b->k_contiguous = !p->transb;
}

/* C block (mb x nb at i0, j0) <- act(acc + beta C + bias), acc already
 * scaled by alpha (with e4m3 scales: acc the dots, made alpha (dot
 * scale) here first); rounded to bf16 on the store. old is mb floats. */
static void finish_block(const fb_gemm_problem *p, const float *bias32,
                         float *acc, int64_t ldacc, int64_t i0, int64_t j0,
                         int64_t mb, int64_t nb, float *old)
{
    uint16_t *c = (uint16_t *)p->c + i0 + j0 * p->ldc;
    if (p->ep.scale != NULL)
        fb_cpu_scale_block(acc, ldacc, p->ep.scale, p->ep.bias_per_row, i0, j0,
                           mb, nb, p->alpha);
    if (p->beta != 0.0f)
        for (int64_t j = 0; j < nb; j++) {
            fb_cpu_to_f32(FB_DTYPE_BF16, c + j * p->ldc, old, mb);
            fb_f32_axpy(mb, p->beta, old, acc + j * ldacc);
        }
    const int rows = bias32 != NULL && p->ep.bias_per_row;
    fb_bf16_bias_act_store(acc, ldacc, rows ? bias32 + i0 : NULL,
                           bias32 != NULL && !rows ? bias32 + j0 : NULL, mb,
                           nb, p->ep.act, c, p->ldc);
}

/* The call's blocking and workspace. */
typedef struct layout {
    int64_t kp, apanels, bpanels, astride, bstride, ldacc;
    fb_packed_blocking b;
    int threads;
    size_t bias_bytes, a_bytes, b_bytes, per_thread;
} layout;

static layout layout_of(const fb_bf16_engine *e, const fb_gemm_problem *p,
                        int threads)
{
    layout l;
    l.kp = fb_bf16_pairs(e, p->k);
    l.apanels = (p->m + e->mr - 1) / e->mr;
    l.bpanels = (p->n + e->nr - 1) / e->nr;
    l.astride = fb_bf16_panel_elems(l.kp, e->mr);
    l.bstride = fb_bf16_panel_elems(l.kp, e->nr);
    int t = threads > 0 ? threads : 1;
    l.b = fb_packed_blocks(l.apanels, l.bpanels, t, BLOCK_APANELS,
                           BLOCK_BPANELS);
    if (t > l.b.mblocks * l.b.nblocks)
        t = (int)(l.b.mblocks * l.b.nblocks);
    l.threads = t;
    /* The bias in fp32; packed A and B; per thread, the block's
     * accumulators and a column of old C. All in 64-byte units. */
    const int64_t bias_len = p->ep.bias_per_row ? p->m : p->n;
    l.ldacc = l.b.ap * e->mr;
    l.bias_bytes = fb_packed_round64((size_t)bias_len * 4);
    l.a_bytes = fb_packed_round64((size_t)l.apanels * (size_t)l.astride * 2);
    l.b_bytes = fb_packed_round64((size_t)l.bpanels * (size_t)l.bstride * 2);
    l.per_thread = fb_packed_round64(
        ((size_t)l.ldacc * (size_t)(l.b.bp * e->nr) + (size_t)l.ldacc) *
        4);
    return l;
}

/* Packed weights (a plan's): their smallest exponent field, then the
 * panels of the weight operand, 64 bytes on. */
#define PACK_HEADER 64

static size_t pack_bytes(const fb_bf16_engine *e, const fb_gemm_problem *p)
{
    const layout l = layout_of(e, p, 1);
    return PACK_HEADER + (p->weight_is_a ? l.a_bytes : l.b_bytes);
}

/* Panels [q0, q1) of op(A) (a) or op(B). */
static int pack_side(const fb_bf16_engine *e, int a,
                     const fb_bf16_operand *x, int64_t rows, int64_t k,
                     int64_t q0, int64_t q1, uint16_t *dst)
{
    return a ? fb_bf16_pack_a(e, x, rows, k, q0, q1, dst)
             : fb_bf16_pack_b(e, x, rows, k, q0, q1, dst);
}

static void pack(const fb_bf16_engine *e, const fb_gemm_problem *p,
                 int threads, void *dst)
{
    const layout l = layout_of(e, p, 1);
    fb_bf16_operand opa, opb;
    operands(p, &opa, &opb);
    const fb_bf16_operand *w = p->weight_is_a ? &opa : &opb;
    const int64_t rows = p->weight_is_a ? p->m : p->n;
    const int64_t panels = p->weight_is_a ? l.apanels : l.bpanels;
    uint16_t *out = (uint16_t *)((char *)dst + PACK_HEADER);
    int emin = 255;
#pragma omp parallel num_threads(threads) if (threads > 1) \
    reduction(min : emin)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int f = pack_side(e, p->weight_is_a, w, rows, p->k,
                                panels * tid / nt, panels * (tid + 1) / nt,
                                out);
        emin = f < emin ? f : emin;
    }
    *(int *)dst = emin;
}

void fb_cpu_bf16_amx_pack_e4m3(const fb_gemm_problem *p, const void *w,
                               int64_t ldw, int threads, void *dst)
{
    const fb_bf16_engine *e = &fb_bf16_amx;
    const layout l = layout_of(e, p, 1);
    uint16_t *out = (uint16_t *)((char *)dst + PACK_HEADER);
    int emin = 255;
#pragma omp parallel num_threads(threads) if (threads > 1) \
    reduction(min : emin)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int f = fb_bf16_pack_a_e4m3(
            e, (const uint8_t *)w, ldw, p->m, p->k, l.apanels * tid / nt,
            l.apanels * (tid + 1) / nt, out);
        emin = f < emin ? f : emin;
    }
    *(int *)dst = emin;
}

/* The smallest exponent fields of op(A) and op(B): the packed weights'
 * as packing found it, the rest read now. */
static int applies(const fb_bf16_engine *e, const fb_cpu_call *c,
                   const fb_gemm_problem *p)
{
    if (p->dtype != FB_DTYPE_BF16 || !p->multiply || !e->available())
        return 0;
    fb_bf16_operand opa, opb;
    operands(p, &opa, &opb);
    /* A plan being made (no X yet): X is judged at each call, the weights
     * once they are packed. */
    if ((p->weight_is_a ? opb.base : opa.base) == NULL && c->packed == NULL)
        return 1;
    const int packed_w = c->packed != NULL ? *(const int *)c->packed : -1;
    const int ea = c->packed != NULL && p->weight_is_a
                       ? packed_w
                       : fb_bf16_min_field(&opa, p->m, p->k, c->threads);
    const int eb = c->packed != NULL && !p->weight_is_a
                       ? packed_w
                       : fb_bf16_min_field(&opb, p->n, p->k, c->threads);
    if (fb_bf16_products_exact(ea, eb))
        return 1;
    fb_log(c->h, "%s: smallest exponent fields %d (A), %d (B): the bf16 "
                 "products could flush; another implementation instead",
           e->name, ea, eb);
    return 0;
}

static size_t workspace(const fb_bf16_engine *e, const fb_gemm_problem *p,
                        int threads, int packed)
{
    const layout l = layout_of(e, p, threads);
    return l.bias_bytes + (packed && p->weight_is_a ? 0 : l.a_bytes) +
           (packed && !p->weight_is_a ? 0 : l.b_bytes) +
           l.per_thread * (size_t)l.threads;
}

static fb_status run(const fb_bf16_engine *e, const fb_cpu_call *c,
                     const fb_gemm_problem *p, char *path, size_t len)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    const layout l = layout_of(e, p, c->threads);
    const fb_packed_blocking b = l.b;
    const int64_t nblk = b.mblocks * b.nblocks;
    const int t = l.threads;
    const int pa = c->packed != NULL && p->weight_is_a;
    const int pb = c->packed != NULL && !p->weight_is_a;
    char *ws = c->ws;
    float *bias32 = NULL;
    if (p->ep.bias != NULL) {
        bias32 = (float *)ws;
        fb_cpu_to_f32(FB_DTYPE_BF16, p->ep.bias, bias32,
                      p->ep.bias_per_row ? m : n);
    }
    char *cur = ws + l.bias_bytes;
    const uint16_t *wpack = c->packed == NULL
                                ? NULL
                                : (const uint16_t *)((const char *)c->packed +
                                                     PACK_HEADER);
    uint16_t *apack = pa ? NULL : (uint16_t *)cur;
    cur += pa ? 0 : l.a_bytes;
    uint16_t *bpack = pb ? NULL : (uint16_t *)cur;
    cur += pb ? 0 : l.b_bytes;
    char *thread_ws = cur;
    const uint16_t *ap = pa ? wpack : apack, *bp = pb ? wpack : bpack;
    fb_bf16_operand opa, opb;
    operands(p, &opa, &opb);

    /* Pack what is not packed yet: each thread its share of the panels;
     * then every thread may read every panel. */
#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        if (!pa)
            (void)fb_bf16_pack_a(e, &opa, m, k, l.apanels * tid / nt,
                                 l.apanels * (tid + 1) / nt, apack);
        if (!pb)
            (void)fb_bf16_pack_b(e, &opb, n, k, l.bpanels * tid / nt,
                                 l.bpanels * (tid + 1) / nt, bpack);
#pragma omp barrier
        float *acc = (float *)(thread_ws + l.per_thread * (size_t)tid);
        float *old = acc + l.ldacc * b.bp * e->nr;
        /* Contiguous runs of blocks, row blocks fastest: consecutive
         * blocks share their B panels. */
        const int64_t lo = nblk * tid / nt, hi = nblk * (tid + 1) / nt;
        for (int64_t q = lo; q < hi; q++) {
            const int64_t bi = q % b.mblocks, bj = q / b.mblocks;
            const fb_packed_block blk =
                fb_packed_block_at(&b, bi, bj, m, n, e->mr, e->nr);
            e->block(ap + blk.pa0 * l.astride, l.astride, blk.na,
                     bp + blk.pb0 * l.bstride, l.bstride, blk.nb, l.kp,
                     p->ep.scale != NULL ? 1.0f : p->alpha, 0, acc,
                     l.ldacc);
            finish_block(p, bias32, acc, l.ldacc, blk.i0, blk.j0, blk.rows,
                         blk.cols, old);
        }
    }
    snprintf(path, len, "%s/%dx%d/blocks=%lldx%lld/threads=%d", e->name,
             e->mr, e->nr, (long long)(b.ap * e->mr),
             (long long)(b.bp * e->nr), t);
    return FB_STATUS_SUCCESS;
}

/* The table's two entries: the driver above on each engine. */
#define ENTRY(entry, engine, name)                                                 \
    static int entry##_applies(const fb_cpu_call *c,                           \
                               const fb_gemm_problem *p)                       \
    {                                                                          \
        return applies(&engine, c, p);                                         \
    }                                                                          \
    static size_t entry##_workspace(const fb_gemm_problem *p, int threads,     \
                                    int packed)                                \
    {                                                                          \
        return workspace(&engine, p, threads, packed);                         \
    }                                                                          \
    static size_t entry##_pack_bytes(const fb_gemm_problem *p)                 \
    {                                                                          \
        return pack_bytes(&engine, p);                                         \
    }                                                                          \
    static void entry##_pack(const fb_gemm_problem *p, int threads,            \
                             void *dst)                                        \
    {                                                                          \
        pack(&engine, p, threads, dst);                                        \
    }                                                                          \
    static fb_status entry##_run(const fb_cpu_call *c,                         \
                                 const fb_gemm_problem *p, char *path,         \
                                 size_t len)                                   \
    {                                                                          \
        return run(&engine, c, p, path, len);                                  \
    }                                                                          \
    const fb_cpu_gemm_impl entry = {                                           \
        name, FB_CPU_OWN_THREADS, entry##_applies, entry##_workspace,          \
        entry##_pack_bytes, entry##_pack, entry##_run, NULL};

ENTRY(fb_cpu_gemm_bf16_amx, fb_bf16_amx, "cpu/bf16-amx")
ENTRY(fb_cpu_gemm_bf16, fb_bf16_avx512, "cpu/bf16-avx512bf16")
