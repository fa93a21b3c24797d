/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fusedblas.c -- fusedblas's CPU backend as timed implementations:
 * the public API on host buffers, the backend forced to "cpu"; the plain
 * routines, and plans (one per input set, made outside the timing, as a
 * user makes a layer's plan once).
 */
#include <stdio.h>
#include <stdlib.h>
#include "bench_call.h"
#include "cpu_impl.h"

typedef struct fbc_state {
    fb_handle h;
    bench_case c;
    const bench_set *sets;
    fb_plan *plans; /* one per set, for the plan rows */
    char message[256];
} fbc_state;

static bench_outcome fbc_init(void **state, const bench_case *c,
                              const bench_set *sets, int nsets,
                              const bench_options *opt, char *why, size_t len)
{
    (void)nsets;
    fb_status st = fb_backend_available(FB_BACKEND_CPU);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "%s", fb_status_string(st));
        return BENCH_UNAVAILABLE;
    }
    fbc_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    st = fb_create(&s->h);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_backend(s->h, FB_BACKEND_CPU);
    if (st == FB_STATUS_SUCCESS && opt->threads > 0)
        st = fb_set_threads(s->h, opt->threads);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "handle: %s", fb_status_string(st));
        return BENCH_FAILED;
    }
    return BENCH_RAN;
}

static bench_outcome fbc_init_plan(void **state, const bench_case *c,
                                   const bench_set *sets, int nsets,
                                   const bench_options *opt, char *why,
                                   size_t len)
{
    bench_outcome o = fbc_init(state, c, sets, nsets, opt, why, len);
    if (o != BENCH_RAN)
        return o;
    fbc_state *s = *state;
    s->plans = calloc((size_t)nsets, sizeof *s->plans);
    if (s->plans == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    for (int j = 0; j < nsets; j++) {
        fb_status st = bench_plan_fusedblas(s->h, c, &sets[j], &s->plans[j]);
        if (st != FB_STATUS_SUCCESS) {
            snprintf(why, len, "plan: %s: %s", fb_status_string(st),
                     fb_handle_last_message(s->h));
            return st == FB_STATUS_NOT_SUPPORTED ? BENCH_NOT_SUPPORTED
                                                 : BENCH_FAILED;
        }
    }
    return BENCH_RAN;
}

static int fbc_run_plan(void *state, int j)
{
    fbc_state *s = state;
    return bench_run_plan(s->plans[j], s->h, &s->c, &s->sets[j], s->message,
                          sizeof s->message);
}

static int fbc_run(void *state, int j)
{
    fbc_state *s = state;
    return bench_run_fusedblas(s->h, &s->c, &s->sets[j], s->message,
                               sizeof s->message);
}

static const char *fbc_message(void *state)
{
    return ((fbc_state *)state)->message;
}

static void fbc_fini(void *state)
{
    fbc_state *s = state;
    if (s == NULL)
        return;
    if (s->h)
        (void)fb_destroy(s->h); /* and its plans */
    free(s->plans);
    free(s);
}

const bench_cpu_impl bench_cpu_fusedblas = {
    BENCH_IMPL_CPU, BENCH_OURS, fbc_init, fbc_run, fbc_message, fbc_fini,
};
const bench_cpu_impl bench_cpu_fusedblas_plan = {
    BENCH_IMPL_CPU_PLAN, BENCH_OURS, fbc_init_plan, fbc_run_plan, fbc_message,
    fbc_fini,
};
