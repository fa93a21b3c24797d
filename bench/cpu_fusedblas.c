/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fusedblas.c -- fusedblas's CPU backend as timed implementations:
 * the public API on host buffers, the backend forced to "cpu"; the plain
 * routines, and plans (one per input set, made outside the timing, as a
 * user makes a layer's plan once).
 */
#include "bench_fusedblas_impl.h"
#include "cpu_impl.h"

static bench_outcome fbc_init(void **state, const bench_case *c,
                              const bench_set *sets, int nsets,
                              const bench_options *opt, char *why, size_t len)
{
    const bench_fb_setup setup = {.backend = FB_BACKEND_CPU,
                                  .threads = opt->threads};
    return bench_fb_start(state, &setup, c, sets, nsets, why, len);
}

static bench_outcome fbc_init_plan(void **state, const bench_case *c,
                                   const bench_set *sets, int nsets,
                                   const bench_options *opt, char *why,
                                   size_t len)
{
    bench_outcome o = fbc_init(state, c, sets, nsets, opt, why, len);
    return o == BENCH_RAN ? bench_fb_make_plans(*state, why, len) : o;
}

const bench_cpu_impl bench_cpu_fusedblas = {
    BENCH_IMPL_CPU, BENCH_OURS, fbc_init, bench_fb_run, bench_fb_message,
    bench_fb_fini,
};
const bench_cpu_impl bench_cpu_fusedblas_plan = {
    BENCH_IMPL_CPU_PLAN, BENCH_OURS, fbc_init_plan, bench_fb_run_plan,
    bench_fb_message, bench_fb_fini,
};
