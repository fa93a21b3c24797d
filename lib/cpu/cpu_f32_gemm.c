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

int fb_cpu_f32_gemm_applies(fb_handle h, const fb_gemm_problem *p)
{
    return p->dtype == FB_DTYPE_F32 && p->k > 0 && p->alpha != 0.0f &&
           fb_cpu_f32_kernel_chosen(h);
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
 * scaled by alpha; C read only when beta != 0. */
static void finish_block(const fb_gemm_problem *p, float *acc,
                         int64_t ldacc, int64_t i0, int64_t j0, int64_t mb,
                         int64_t nb)
{
    float *c = (float *)p->c + i0 + j0 * p->ldc;
    const float *bias = p->ep.bias;
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

int fb_cpu_f32_gemm(fb_handle h, const fb_gemm_problem *p, int threads,
                    fb_status *st, char *path, size_t len)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    const int64_t apanels = (m + FB_F32_MR - 1) / FB_F32_MR;
    const int64_t bpanels = (n + FB_F32_NR - 1) / FB_F32_NR;
    int t = threads > 0 ? threads : 1;
    const fb_packed_blocking b =
        fb_packed_blocks(apanels, bpanels, t, BLOCK_APANELS, BLOCK_BPANELS);
    const int64_t nblk = b.mblocks * b.nblocks;
    if (t > nblk)
        t = (int)nblk;

    /* The smaller operand is packed whole by all threads first; the
     * larger one block by block, by the thread that runs the block, with
     * the blocks ordered so that consecutive ones share its panels: it is
     * then read from memory once and its packed panels stay in L2/L3,
     * while the whole one (small) is re-read from cache. Packing the
     * large one whole sends it out to memory and back once per block of
     * the other side (docs/cpu-kernels.md). */
    const int a_whole = m <= n;
    const int64_t ldacc = b.ap * FB_F32_MR;
    const int64_t astride = fb_f32_panel_elems(k, FB_F32_MR);
    const int64_t bstride = fb_f32_panel_elems(k, FB_F32_NR);
    /* Workspace: the whole operand; per thread, the block's accumulators
     * and the large operand's panels for one block. 64-byte units. */
    const size_t whole_bytes = fb_packed_round64(
        (size_t)(a_whole ? apanels * astride : bpanels * bstride) * 4);
    const size_t acc_bytes =
        fb_packed_round64((size_t)ldacc * (size_t)(b.bp * FB_F32_NR) * 4);
    const size_t per_thread = acc_bytes + fb_packed_round64(
        (size_t)(a_whole ? b.bp * bstride : b.ap * astride) * 4);
    const size_t bytes = whole_bytes + per_thread * (size_t)t;
    char *ws = fb_handle_workspace(h, bytes);
    if (ws == NULL) {
        snprintf(path, len, "fp32 kernel: cannot allocate %zu bytes of "
                 "workspace", bytes);
        *st = FB_STATUS_ALLOC_FAILED;
        return 1;
    }
    float *whole = (float *)ws;
    char *thread_ws = ws + whole_bytes;
    fb_f32_operand opa, opb;
    operands(p, &opa, &opb);

#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        /* The whole operand, each thread its share of the panels; then
         * every thread may read every panel. */
        if (a_whole) {
            const int64_t q0 = apanels * tid / nt;
            fb_f32_pack(&opa, m, k, FB_F32_MR, q0, apanels * (tid + 1) / nt,
                        whole + q0 * astride);
        } else {
            const int64_t q0 = bpanels * tid / nt;
            fb_f32_pack(&opb, n, k, FB_F32_NR, q0, bpanels * (tid + 1) / nt,
                        whole + q0 * bstride);
        }
#pragma omp barrier
        float *acc = (float *)(thread_ws + per_thread * (size_t)tid);
        float *lazy = (float *)(thread_ws + per_thread * (size_t)tid +
                                acc_bytes);
        /* Contiguous runs of blocks; a block of the large operand split
         * between two threads' runs is packed by both. */
        const int64_t lo = nblk * tid / nt, hi = nblk * (tid + 1) / nt;
        int64_t packed = -1;
        for (int64_t q = lo; q < hi; q++) {
            const int64_t bi = a_whole ? q % b.mblocks : q / b.nblocks;
            const int64_t bj = a_whole ? q / b.mblocks : q % b.nblocks;
            const fb_packed_block blk =
                fb_packed_block_at(&b, bi, bj, m, n, FB_F32_MR, FB_F32_NR);
            const int64_t mine = a_whole ? bj : bi;
            if (mine != packed) {
                if (a_whole)
                    fb_f32_pack(&opb, n, k, FB_F32_NR, blk.pb0,
                                blk.pb0 + blk.nb, lazy);
                else
                    fb_f32_pack(&opa, m, k, FB_F32_MR, blk.pa0,
                                blk.pa0 + blk.na, lazy);
                packed = mine;
            }
            fb_f32_block(a_whole ? whole + blk.pa0 * astride : lazy, astride,
                         blk.na, a_whole ? lazy : whole + blk.pb0 * bstride,
                         bstride, blk.nb, k, p->alpha, 0, acc, ldacc);
            finish_block(p, acc, ldacc, blk.i0, blk.j0, blk.rows, blk.cols);
        }
    }
    snprintf(path, len, "cpu/f32-avx512/%dx%d/blocks=%lldx%lld/whole=%c/"
             "threads=%d", FB_F32_MR, FB_F32_NR,
             (long long)(b.ap * FB_F32_MR), (long long)(b.bp * FB_F32_NR),
             a_whole ? 'A' : 'B', t);
    *st = FB_STATUS_SUCCESS;
    return 1;
}
