/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fusedblas_e4m3.c -- fusedblas's CPU backend with FP8 (e4m3)
 * weights, timed on the same cases as the 16-bit and fp32 rows: each
 * set's weights quantised row-wise (fb_quantize_e4m3_rows) before the
 * timing, then gemm_e4m3_bias_act / mlp_geglu_forward_e4m3 on the set's
 * activations, biases and output. Its output differs from the others by
 * the quantisation, so the runner does not hold it to their check
 * (tests/test_fp8 checks it against the dequantised weights).
 */
#include <stdlib.h>
#include "bench_fusedblas_impl.h"
#include "cpu_impl.h"

/* The sets' weights are host memory, read in place; the e4m3 copies stay
 * where they were quantised. */
static int host_read(const void *src, size_t bytes, void **copy, char *why,
                     size_t len)
{
    *copy = NULL;
    return 0;
}

static int host_keep(bench_e4m3_weight *w, fb_e4m3 *q, float *s,
                     size_t count, int64_t rows, char *why, size_t len)
{
    w->q = q;
    w->s = s;
    return 0;
}

static void host_release(bench_e4m3_weight *w)
{
    free(w->q);
    free(w->s);
}

static const bench_e4m3_memory host_memory = {host_read, host_keep,
                                              host_release};

static bench_outcome e4_init(void **state, const bench_case *c,
                             const bench_set *sets, int nsets,
                             const bench_options *opt, char *why, size_t len)
{
    const bench_fb_setup setup = {.backend = FB_BACKEND_CPU,
                                  .threads = opt->threads};
    bench_outcome o = bench_fb_start(state, &setup, c, sets, nsets, why, len);
    return o == BENCH_RAN ? bench_fb_make_e4m3(*state, &host_memory, why, len)
                          : o;
}

const bench_cpu_impl bench_cpu_fusedblas_e4m3 = {
    BENCH_IMPL_CPU_E4M3, BENCH_OURS, e4_init, bench_fb_run_e4m3,
    bench_fb_message, bench_fb_fini,
};
