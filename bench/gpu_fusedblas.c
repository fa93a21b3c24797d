/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_fusedblas.c -- fusedblas's GPU paths as timed implementations: the
 * public API on device buffers, on the runner's stream, with the backend
 * forced to cuda-lt, to cuda-fused (a shape it does not cover reports
 * "not supported", shown n/a), or left to the module's shape rule (cuda);
 * and the last as plans, one per input set, made outside the timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include "config.h"

#ifdef HAVE_CUDA
#include "bench_call.h"
#include "gpu_impl.h"

typedef struct fbg_state {
    fb_handle h;
    bench_case c;
    const bench_set *sets;
    fb_plan *plans; /* one per set, for the plan rows */
    char message[256];
} fbg_state;

static bench_outcome fbg_init(fb_backend backend, void **state, bench_gpu *g,
                              const bench_case *c, const bench_set *sets,
                              char *why, size_t len)
{
    fb_status st = fb_backend_available(backend);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "%s", fb_status_string(st));
        return BENCH_UNAVAILABLE;
    }
    fbg_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    st = fb_create(&s->h);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_backend(s->h, backend);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_cuda_device(s->h, g->device);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_cuda_stream(s->h, (void *)g->stream);
    if (st == FB_STATUS_SUCCESS)
        st = fb_set_math_mode(s->h, g->tf32 ? FB_MATH_ALLOW_TF32 : FB_MATH_DEFAULT);
    if (st != FB_STATUS_SUCCESS) {
        snprintf(why, len, "handle: %s", fb_status_string(st));
        return BENCH_FAILED;
    }
    return BENCH_RAN;
}

#define FBG_INIT(fn, backend)                                                 \
    static bench_outcome fn(void **state, bench_gpu *g, const bench_case *c,  \
                            const bench_set *sets, int nsets, char *why,      \
                            size_t len)                                       \
    {                                                                         \
        (void)nsets;                                                          \
        return fbg_init(backend, state, g, c, sets, why, len);                \
    }
FBG_INIT(fbg_init_cuda, FB_BACKEND_CUDA)
FBG_INIT(fbg_init_lt, FB_BACKEND_CUDA_LT)
FBG_INIT(fbg_init_fused, FB_BACKEND_CUDA_FUSED)

static bench_outcome fbg_init_plan(void **state, bench_gpu *g,
                                   const bench_case *c, const bench_set *sets,
                                   int nsets, char *why, size_t len)
{
    bench_outcome o = fbg_init(FB_BACKEND_CUDA, state, g, c, sets, why, len);
    if (o != BENCH_RAN)
        return o;
    fbg_state *s = *state;
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

static int fbg_run_plan(void *state, int j)
{
    fbg_state *s = state;
    return bench_run_plan(s->plans[j], s->h, &s->c, &s->sets[j], s->message,
                          sizeof s->message);
}

static int fbg_run(void *state, int j)
{
    fbg_state *s = state;
    return bench_run_fusedblas(s->h, &s->c, &s->sets[j], s->message,
                               sizeof s->message);
}

static const char *fbg_message(void *state)
{
    return ((fbg_state *)state)->message;
}

static void fbg_fini(void *state)
{
    fbg_state *s = state;
    if (s == NULL)
        return;
    if (s->h)
        (void)fb_destroy(s->h); /* and its plans */
    free(s->plans);
    free(s);
}

const bench_gpu_impl bench_gpu_fb_cuda = {
    BENCH_IMPL_CUDA, BENCH_OURS, fbg_init_cuda, fbg_run, fbg_message, fbg_fini,
};
const bench_gpu_impl bench_gpu_fb_cuda_lt = {
    BENCH_IMPL_CUDA_LT, BENCH_OURS, fbg_init_lt, fbg_run, fbg_message, fbg_fini,
};
const bench_gpu_impl bench_gpu_fb_cuda_fused = {
    BENCH_IMPL_CUDA_FUSED, BENCH_OURS, fbg_init_fused, fbg_run, fbg_message,
    fbg_fini,
};

const bench_gpu_impl bench_gpu_fb_cuda_plan = {
    BENCH_IMPL_CUDA_PLAN, BENCH_OURS, fbg_init_plan, fbg_run_plan,
    fbg_message, fbg_fini,
};

#endif /* HAVE_CUDA */
