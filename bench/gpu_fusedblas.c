/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_fusedblas.c -- fusedblas's GPU paths as timed implementations: the
 * public API on device buffers, on the runner's stream, with the backend
 * forced to cuda-lt, to cuda-fused (a shape it does not cover reports
 * "not supported", shown n/a), or left to the module's shape rule (cuda);
 * and the last as plans, one per input set, made outside the timing.
 */
#include "config.h"

#ifdef HAVE_CUDA
#include "bench_fusedblas_impl.h"
#include "gpu_impl.h"

static bench_outcome fbg_init(fb_backend backend, void **state, bench_gpu *g,
                              const bench_case *c, const bench_set *sets,
                              int nsets, char *why, size_t len)
{
    const bench_fb_setup setup = {.backend = backend,
                                  .cuda = 1,
                                  .device = g->device,
                                  .stream = (void *)g->stream,
                                  .tf32 = g->tf32};
    return bench_fb_start(state, &setup, c, sets, nsets, why, len);
}

#define FBG_INIT(fn, backend)                                                 \
    static bench_outcome fn(void **state, bench_gpu *g, const bench_case *c,  \
                            const bench_set *sets, int nsets, char *why,      \
                            size_t len)                                       \
    {                                                                         \
        return fbg_init(backend, state, g, c, sets, nsets, why, len);         \
    }
FBG_INIT(fbg_init_cuda, FB_BACKEND_CUDA)
FBG_INIT(fbg_init_lt, FB_BACKEND_CUDA_LT)
FBG_INIT(fbg_init_fused, FB_BACKEND_CUDA_FUSED)

static bench_outcome fbg_init_plan(void **state, bench_gpu *g,
                                   const bench_case *c, const bench_set *sets,
                                   int nsets, char *why, size_t len)
{
    bench_outcome o = fbg_init_cuda(state, g, c, sets, nsets, why, len);
    return o == BENCH_RAN ? bench_fb_make_plans(*state, why, len) : o;
}

const bench_gpu_impl bench_gpu_fb_cuda = {
    BENCH_IMPL_CUDA, BENCH_OURS, fbg_init_cuda, bench_fb_run,
    bench_fb_message, bench_fb_fini,
};
const bench_gpu_impl bench_gpu_fb_cuda_lt = {
    BENCH_IMPL_CUDA_LT, BENCH_OURS, fbg_init_lt, bench_fb_run,
    bench_fb_message, bench_fb_fini,
};
const bench_gpu_impl bench_gpu_fb_cuda_fused = {
    BENCH_IMPL_CUDA_FUSED, BENCH_OURS, fbg_init_fused, bench_fb_run,
    bench_fb_message, bench_fb_fini,
};

const bench_gpu_impl bench_gpu_fb_cuda_plan = {
    BENCH_IMPL_CUDA_PLAN, BENCH_OURS, fbg_init_plan, bench_fb_run_plan,
    bench_fb_message, bench_fb_fini,
};

#endif /* HAVE_CUDA */
