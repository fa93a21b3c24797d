/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_fusedblas_impl.c -- the state of fusedblas's own rows and the
 * calls the CPU and GPU implementation tables make on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include "bench_call.h"
#include "bench_fusedblas_impl.h"

static fb_status set_up(fb_handle h, const bench_fb_setup *setup)
{
    fb_status st = fb_set_backend(h, setup->backend);
    if (st == FB_STATUS_SUCCESS && setup->threads > 0)
        st = fb_set_threads(h, setup->threads);
    if (st == FB_STATUS_SUCCESS && setup->cuda)
        st = fb_set_cuda_device(h, setup->device);
    if (st == FB_STATUS_SUCCESS && setup->cuda)
        st = fb_set_cuda_stream(h, setup->stream);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_math_mode(h, setup->tf32 ? FB_MATH_ALLOW_TF32
                                             : FB_MATH_DEFAULT);
    return st;
}

bench_outcome bench_fb_start(void **state, const bench_fb_setup *setup,
                             const bench_case *c, const bench_set *sets,
                             int nsets, char *why, size_t len)
{
    fb_status st = fb_backend_available(setup->backend);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "%s", fb_status_string(st));
        return BENCH_UNAVAILABLE;
    }
    bench_fb_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    s->nsets = nsets;
    st = fb_create(&s->h);
    if (st == FB_STATUS_SUCCESS)
        st = set_up(s->h, setup);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "handle: %s", fb_status_string(st));
        return BENCH_FAILED;
    }
    return BENCH_RAN;
}

bench_outcome bench_fb_make_plans(void *state, char *why, size_t len)
{
    bench_fb_state *s = state;
    s->plans = calloc((size_t)s->nsets, sizeof *s->plans);
    if (s->plans == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    for (int j = 0; j < s->nsets; j++) {
        fb_status st = bench_plan_fusedblas(s->h, &s->c, &s->sets[j],
                                            &s->plans[j]);
        if (st != FB_STATUS_SUCCESS) {
            snprintf(why, len, "plan: %s: %s", fb_status_string(st),
                     fb_handle_last_message(s->h));
            return st == FB_STATUS_NOT_SUPPORTED ? BENCH_NOT_SUPPORTED
                                                 : BENCH_FAILED;
        }
    }
    return BENCH_RAN;
}

bench_outcome bench_fb_make_e4m3(void *state, const bench_e4m3_memory *mem,
                                 char *why, size_t len)
{
    bench_fb_state *s = state;
    return bench_e4m3_weights_make(&s->e4m3, mem, s->h, &s->c, s->sets,
                                   s->nsets, why, len) == 0
               ? BENCH_RAN
               : BENCH_FAILED;
}

int bench_fb_run(void *state, int j)
{
    bench_fb_state *s = state;
    return bench_run_fusedblas(s->h, &s->c, &s->sets[j], s->message,
                               sizeof s->message);
}

int bench_fb_run_plan(void *state, int j)
{
    bench_fb_state *s = state;
    return bench_run_plan(s->plans[j], s->h, &s->c, &s->sets[j], s->message,
                          sizeof s->message);
}

int bench_fb_run_e4m3(void *state, int j)
{
    bench_fb_state *s = state;
    return bench_run_e4m3(s->h, &s->c, &s->sets[j], s->e4m3.w[j], s->message,
                          sizeof s->message);
}

const char *bench_fb_message(void *state)
{
    return ((bench_fb_state *)state)->message;
}

void bench_fb_fini(void *state)
{
    bench_fb_state *s = state;
    if (s == NULL)
        return;
    bench_e4m3_weights_free(&s->e4m3);
    if (s->h)
        (void)fb_destroy(s->h); /* and its plans */
    free(s->plans);
    free(s);
}
