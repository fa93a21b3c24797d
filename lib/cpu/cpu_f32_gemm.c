/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_gemm.c -- gemm_bias_act for fp32 on AVX-512F FMA, and the rule
 * that picks it over OpenBLAS.
 *
 * Why: OpenBLAS picks its kernels by core, and where it runs its AVX2
 * ones on an AVX-512 CPU (OPENBLAS_CORETYPE=Haswell, as on the machine
 * the benchmarks run on, or a core it does not know), sgemm reaches half
 * of what the FMA units give. This kernel also measured faster than
 * OpenBLAS's AVX-512 kernels, so auto takes it wherever AVX-512F runs
 * (fb_cpu_f32_kernel_chosen; docs/cpu-kernels.md).
 *
 * The same design as the bf16 kernel (cpu_bf16_gemm.c): op(A) in 32-row
 * panels and op(B) in 12-column panels (any transpose and leading
 * dimension), the smaller of the two packed whole first by all threads,
 * the larger per block by the thread that runs it; C is cut into blocks
 * of about 256 x 192 (cpu_packed_blocking.h) that each thread finishes in
 * turn: the block's accumulators (192 KiB, in L2) take k in equal chunks
 * of at most 384 (A's chunk in L2, a B panel in L1), then alpha, beta C,
 * bias and activation while the block is in cache, and one store to C.
 * C is read only when beta != 0.
 */
#include "config.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_epilogue.h"
#include "cpu_f32_gemm.h"
#include "cpu_f32_kernel.h"
#include "cpu_impl.h"
#include "cpu_packed_blocking.h"
#include "env.h"
#include "log.h"

/* Block of C per step of a thread, in panels: 8 x 32 rows, 16 x 12
 * columns; accumulators 256 x 192 x 4 = 192 KiB. */
#define BLOCK_APANELS 8
#define BLOCK_BPANELS 16

int fb_cpu_f32_kernel_chosen(fb_handle h)
{
    if (!fb_cpu_f32_kernel_available())
        return 0;
    const fb_cpu_sgemm_choice v = fb_env_get()->cpu_sgemm;
    if (v == FB_CPU_SGEMM_OWN || v == FB_CPU_SGEMM_PACKED) {
        fb_log(h, "fp32 GEMM: AVX-512F kernel (FUSEDBLAS_CPU_SGEMM=%s)",
               fb_cpu_sgemm_name(v));
        return 1;
    }
    if (v == FB_CPU_SGEMM_OPENBLAS) {
        fb_log(h, "fp32 GEMM: OpenBLAS (FUSEDBLAS_CPU_SGEMM=openblas)");
        return 0;
    }
    /* Faster than OpenBLAS's AVX-512 kernels as well as its AVX2 ones,
     * GEMMs and MLPs alike (docs/cpu-kernels.md). */
    const char *core = openblas_get_corename();
    fb_log(h, "fp32 GEMM: AVX-512F kernel (OpenBLAS core %s)",
           core != NULL ? core : "?");
    return 1;
}

/* Where op(A)'s row 0 and op(B)'s column 0 start, and whether they run
 * along k in storage. */
static void operands(const fb_gemm_problem *p, fb_f32_operand *a,
                     fb_f32_operand *b)
{
    a->base = p->a, a->ld = p->lda, a->k_contiguous = p->transa;
    b->base = p->b, b->ld = p->ldb, b->k_contiguous = !p->transb;
}

/* C block (mb x nb at i0, j0) <- act(acc + beta C + bias), acc already
 * scaled by alpha (with e4m3 scales: acc the dots, made alpha (dot
 * scale) here first); C read only when beta != 0. */
static void finish_block(const fb_gemm_problem *p, float *acc,
                         int64_t ldacc, int64_t i0, int64_t j0, int64_t mb,
                         int64_t nb)
{
    float *c = (float *)p->c + i0 + j0 * p->ldc;
    const float *bias = p->ep.bias;
    if (p->ep.scale != NULL)
        fb_cpu_scale_block(acc, ldacc, p->ep.scale, p->ep.bias_per_row, i0,
                           j0, mb, nb, p->alpha);
    for (int64_t j = 0; j < nb; j++) {
        float *col = acc + j * ldacc;
        float *cj = c + j * p->ldc;
        if (p->beta != 0.0f)
            fb_f32_axpy(mb, p->beta, cj, col);
        if (bias == NULL)
            fb_cpu_bias_act_store(cj, col, NULL, mb, p->ep.act);
        else if (p->ep.bias_per_row)
            fb_cpu_bias_act_store(cj, col, bias + i0, mb, p->ep.act);
        else
            fb_cpu_scalar_bias_act_store(cj, col, bias[j0 + j], mb,
                                         p->ep.act);
    }
}

static int applies(const fb_cpu_call *c, const fb_gemm_problem *p)
{
    return p->dtype == FB_DTYPE_F32 && p->multiply &&
           fb_cpu_f32_kernel_chosen(c->h);
}

/* The call's blocking and workspace. One operand is packed whole by all
 * threads first, the other block by block, by the thread that runs the
 * block, with the blocks ordered so that consecutive ones share its
 * panels: it is then read from memory once and its packed panels stay in
 * L2/L3, while the whole one is re-read from cache. Packing the large one
 * whole sends it out to memory and back once per block of the other side
 * (docs/cpu-kernels.md), so the whole one is the smaller, or a plan's
 * weights, packed already. */
typedef struct layout {
    int64_t apanels, bpanels, astride, bstride, ldacc;
    fb_packed_blocking b;
    int threads, a_whole;
    size_t whole_bytes, acc_bytes, per_thread;
} layout;

static layout layout_of(const fb_gemm_problem *p, int threads, int packed)
{
    layout l;
    l.apanels = (p->m + FB_F32_MR - 1) / FB_F32_MR;
    l.bpanels = (p->n + FB_F32_NR - 1) / FB_F32_NR;
    int t = threads > 0 ? threads : 1;
    l.b = fb_packed_blocks(l.apanels, l.bpanels, t, BLOCK_APANELS,
                           BLOCK_BPANELS);
    if (t > l.b.mblocks * l.b.nblocks)
        t = (int)(l.b.mblocks * l.b.nblocks);
    l.threads = t;
    l.a_whole = packed ? p->weight_is_a : p->m <= p->n;
    l.ldacc = l.b.ap * FB_F32_MR;
    l.astride = fb_f32_panel_elems(p->k, FB_F32_MR);
    l.bstride = fb_f32_panel_elems(p->k, FB_F32_NR);
    /* The whole operand; per thread, the block's accumulators and the
     * other operand's panels for one block. 64-byte units. */
    l.whole_bytes = fb_packed_round64(
        (size_t)(l.a_whole ? l.apanels * l.astride : l.bpanels * l.bstride) *
        4);
    l.acc_bytes = fb_packed_round64((size_t)l.ldacc *
                                    (size_t)(l.b.bp * FB_F32_NR) * 4);
    l.per_thread = l.acc_bytes +
                   fb_packed_round64((size_t)(l.a_whole ? l.b.bp * l.bstride
                                                        : l.b.ap * l.astride) *
                                     4);
    return l;
}

static size_t workspace(const fb_gemm_problem *p, int threads, int packed)
{
    const layout l = layout_of(p, threads, packed);
    return (packed ? 0 : l.whole_bytes) + l.per_thread * (size_t)l.threads;
}

static size_t pack_bytes(const fb_gemm_problem *p)
{
    return layout_of(p, 1, 1).whole_bytes;
}

/* The whole operand, each thread its share of the panels. */
static void pack_whole(const fb_gemm_problem *p, const layout *l, int tid,
                       int nt, float *whole)
{
    fb_f32_operand opa, opb;
    operands(p, &opa, &opb);
    if (l->a_whole) {
        const int64_t q0 = l->apanels * tid / nt;
        fb_f32_pack(&opa, p->m, p->k, FB_F32_MR, q0,
                    l->apanels * (tid + 1) / nt, whole + q0 * l->astride);
    } else {
        const int64_t q0 = l->bpanels * tid / nt;
        fb_f32_pack(&opb, p->n, p->k, FB_F32_NR, q0,
                    l->bpanels * (tid + 1) / nt, whole + q0 * l->bstride);
    }
}

static void pack(const fb_gemm_problem *p, int threads, void *dst)
{
    const layout l = layout_of(p, 1, 1);
#pragma omp parallel num_threads(threads) if (threads > 1)
    pack_whole(p, &l, omp_get_thread_num(), omp_get_num_threads(), dst);
}

static fb_status run(const fb_cpu_call *c, const fb_gemm_problem *p,
                     char *path, size_t len)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    const int packed = c->packed != NULL;
    const layout l = layout_of(p, c->threads, packed);
    const fb_packed_blocking b = l.b;
    const int64_t nblk = b.mblocks * b.nblocks;
    const int t = l.threads, a_whole = l.a_whole;
    const int64_t astride = l.astride, bstride = l.bstride;
    char *ws = c->ws;
    float *whole = packed ? (float *)c->packed : (float *)ws;
    char *thread_ws = ws + (packed ? 0 : l.whole_bytes);
    fb_f32_operand opa, opb;
    operands(p, &opa, &opb);

#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* The whole operand, unless packed; then every thread may read
         * every panel. */
        if (!packed)
            pack_whole(p, &l, tid, nt, whole);
#pragma omp barrier
        float *acc = (float *)(thread_ws + l.per_thread * (size_t)tid);
        float *lazy = (float *)(thread_ws + l.per_thread * (size_t)tid +
                                l.acc_bytes);
        /* Contiguous runs of blocks; a block of the other operand split
         * between two threads' runs is packed by both. */
        const int64_t lo = nblk * tid / nt, hi = nblk * (tid + 1) / nt;
        int64_t lazy_at = -1;
        for (int64_t q = lo; q < hi; q++) {
            const int64_t bi = a_whole ? q % b.mblocks : q / b.nblocks;
            const int64_t bj = a_whole ? q / b.mblocks : q % b.nblocks;
            const fb_packed_block blk =
                fb_packed_block_at(&b, bi, bj, m, n, FB_F32_MR, FB_F32_NR);
            const int64_t mine = a_whole ? bj : bi;
            if (mine != lazy_at) {
                if (a_whole)
                    fb_f32_pack(&opb, n, k, FB_F32_NR, blk.pb0,
                                blk.pb0 + blk.nb, lazy);
                else
                    fb_f32_pack(&opa, m, k, FB_F32_MR, blk.pa0,
                                blk.pa0 + blk.na, lazy);
                lazy_at = mine;
            }
            fb_f32_block(a_whole ? whole + blk.pa0 * astride : lazy, astride,
                         blk.na, a_whole ? lazy : whole + blk.pb0 * bstride,
                         bstride, blk.nb, k,
                         p->ep.scale != NULL ? 1.0f : p->alpha, 0, acc,
                         l.ldacc);
            finish_block(p, acc, l.ldacc, blk.i0, blk.j0, blk.rows,
                         blk.cols);
        }
    }
    snprintf(path, len, "cpu/f32-avx512/%dx%d/blocks=%lldx%lld/whole=%c/"
             "threads=%d", FB_F32_MR, FB_F32_NR,
             (long long)(b.ap * FB_F32_MR), (long long)(b.bp * FB_F32_NR),
             a_whole ? 'A' : 'B', t);
    return FB_STATUS_SUCCESS;
}

const fb_cpu_gemm_impl fb_cpu_gemm_f32 = {
    "cpu/f32-avx512", FB_CPU_OWN_THREADS, applies, workspace, pack_bytes, pack,
    run, NULL};
