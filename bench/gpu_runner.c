/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_runner.c -- the GPU side of the benchmark: open the device, measure
 * its ceilings, and run each case: allocate and fill the input sets on the
 * device, time every GPU implementation on them with CUDA events, check
 * outputs against the eager baseline, and hand the rows to the report.
 *
 * Timing: warm-up calls (at least two, about 20 ms worth), then one event
 * pair around each timed call, all enqueued back to back on one stream and
 * read after a single synchronisation, cycling through the sets; the median
 * is reported. Launch overhead therefore counts whenever the host cannot
 * keep the GPU busy, as it does for a user. The host's own time per call
 * (the wall time of the timed enqueue loop, over its calls) is noted for
 * our rows, beside the GPU's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "config.h"
#include "gpu_runner.h"

#ifdef HAVE_CUDA
#include "bench_check.h"
#include "bench_report.h"
#include "bench_sets.h"
#include "bench_stats.h"
#include "bench_workloads.h"
#include "eager_baseline.h"
#include "gpu_impl.h"

#define MAX_REPS 10000

static bench_gpu gpu;
static cudaEvent_t *ev_start, *ev_end;
static int nev;
static int opened;

/* The baseline first: its output is the reference for the check. */
static const bench_gpu_impl *const impls[] = {
    &bench_gpu_eager,      &bench_gpu_cublas_gemm, &bench_gpu_fb_cuda_lt,
    &bench_gpu_fb_cuda_fused, &bench_gpu_fb_cuda, &bench_gpu_fb_cuda_plan,
    &bench_gpu_fb_cuda_e4m3,
};
#define NIMPL ((int)(sizeof impls / sizeof impls[0]))

static int selected(const bench_options *opt, const bench_gpu_impl *impl)
{
    if (impl == &bench_gpu_fb_cuda || impl == &bench_gpu_fb_cuda_plan ||
        impl == &bench_gpu_fb_cuda_e4m3)
        return opt->backends.cuda;
    if (impl == &bench_gpu_fb_cuda_lt)
        return opt->backends.cuda_lt;
    if (impl == &bench_gpu_fb_cuda_fused)
        return opt->backends.cuda_fused;
    return 1; /* baselines run whenever any GPU path does */
}

/* Milliseconds between two recorded events, or -1. */
static double event_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : -1;
}

static int make_events(int n)
{
    if (n <= nev)
        return 0;
    cudaEvent_t *s = realloc(ev_start, (size_t)n * sizeof *s);
    if (s == NULL)
        return -1;
    ev_start = s;
    cudaEvent_t *e = realloc(ev_end, (size_t)n * sizeof *e);
    if (e == NULL)
        return -1;
    ev_end = e;
    for (int i = nev; i < n; i++) {
        if (cudaEventCreate(&ev_start[i]) != cudaSuccess ||
            cudaEventCreate(&ev_end[i]) != cudaSuccess)
            return -1;
        nev = i + 1;
    }
    return 0;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Time whatever enq(arg) enqueues: warm-up, then reps event pairs.
 * Returns the first non-zero enq() result, -2 on a CUDA error, or 0.
 * host_s (may be NULL): the host's wall time per call of the timed
 * loop, which enqueues and never waits. */
static int time_enqueued(int (*enq)(void *, int), void *arg, int nsets,
                         const bench_options *opt, double target_s, int min_reps,
                         int max_reps, bench_stats *out, double *host_s)
{
    int rc, calls = 0;
    double warm_ms = 0, last_ms = 0;
    do {
        cudaEventRecord(ev_start[0], gpu.stream);
        if ((rc = enq(arg, calls % nsets)) != 0)
            return rc;
        cudaEventRecord(ev_end[0], gpu.stream);
        if (cudaEventSynchronize(ev_end[0]) != cudaSuccess)
            return -2;
        last_ms = event_ms(ev_start[0], ev_end[0]);
        warm_ms += last_ms;
        calls++;
    } while ((calls < 2 || warm_ms < (opt->quick ? 5 : 20)) && calls < 200);
    bench_options o = *opt;
    o.target_s = target_s;
    o.min_reps = min_reps;
    o.reps = max_reps;
    int reps = bench_reps_for(&o, last_ms * 1e-3);
    if (reps > MAX_REPS)
        reps = MAX_REPS;
    if (make_events(reps) != 0)
        return -2;
    const double t0 = wall_s();
    for (int r = 0; r < reps; r++) {
        cudaEventRecord(ev_start[r], gpu.stream);
        if ((rc = enq(arg, (calls + r) % nsets)) != 0)
            return rc;
        cudaEventRecord(ev_end[r], gpu.stream);
    }
    if (host_s != NULL)
        *host_s = (wall_s() - t0) / reps;
    if (cudaStreamSynchronize(gpu.stream) != cudaSuccess)
        return -2;
    double *t = malloc((size_t)reps * sizeof *t);
    if (t == NULL)
        return -2;
    for (int r = 0; r < reps; r++)
        t[r] = event_ms(ev_start[r], ev_end[r]) * 1e-3;
    bench_stats_from(t, reps, out);
    free(t);
    return 0;
}

/* ---- ceilings -------------------------------------------------------
 * Each ceiling is the best of its timed runs: what the device can do. */

typedef struct copy_arg {
    void *dst;
    const void *src;
    size_t bytes;
} copy_arg;

static int enq_copy(void *arg, int s)
{
    (void)s;
    copy_arg *a = arg;
    return cudaMemcpyAsync(a->dst, a->src, a->bytes, cudaMemcpyDeviceToDevice,
                           gpu.stream) == cudaSuccess ? 0 : -1;
}

typedef struct gemm_arg {
    fb_dtype t;
    int n;
    void *a, *b, *c;
} gemm_arg;

static int enq_gemm(void *arg, int s)
{
    (void)s;
    gemm_arg *g = arg;
    return bench_gpu_gemm_xwt(&gpu, g->t, g->n, g->n, g->n, g->a, g->b, g->c) ==
                   CUBLAS_STATUS_SUCCESS
               ? 0
               : -1;
}

static void measure_ceilings(const bench_options *opt, bench_ceilings *cl)
{
    bench_stats st;
    /* device copy: far larger than L2 */
    size_t bytes = (size_t)(opt->quick ? 256 : 1024) << 20;
    void *a = NULL, *b = NULL;
    if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess) {
        fbb_fill_uniform(FB_DTYPE_F32, a, (int64_t)(bytes / 4), 7, 1.0f, gpu.stream);
        copy_arg ca = {b, a, bytes};
        if (time_enqueued(enq_copy, &ca, 1, opt, 0.2, 10, 50, &st, NULL) == 0)
            cl->gpu_copy_gbs = 2.0 * (double)bytes / st.min * 1e-9;
    }
    cudaFree(a);
    cudaFree(b);
    cudaGetLastError();

    /* cuBLAS on square matrices large enough to be compute-bound */
    int n = opt->quick ? 4096 : 8192;
    size_t mbytes = (size_t)n * n * 4;
    gemm_arg ga = {FB_DTYPE_F32, n, NULL, NULL, NULL};
    if (cudaMalloc(&ga.a, mbytes) == cudaSuccess &&
        cudaMalloc(&ga.b, mbytes) == cudaSuccess &&
        cudaMalloc(&ga.c, mbytes) == cudaSuccess) {
        struct {
            fb_dtype t;
            int tf32;
            double *out;
        } runs[] = {{FB_DTYPE_BF16, 0, &cl->gpu_bf16_tflops},
                    {FB_DTYPE_F16, 0, &cl->gpu_f16_tflops},
                    {FB_DTYPE_F32, 1, &cl->gpu_tf32_tflops},
                    {FB_DTYPE_F32, 0, &cl->gpu_f32_tflops}};
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            ga.t = runs[i].t;
            fbb_fill_uniform(ga.t, ga.a, (int64_t)n * n, 8, 1.0f, gpu.stream);
            fbb_fill_uniform(ga.t, ga.b, (int64_t)n * n, 9, 1.0f, gpu.stream);
            int save = gpu.tf32;
            gpu.tf32 = runs[i].tf32;
            if (time_enqueued(enq_gemm, &ga, 1, opt, 0.1, 3, 20, &st, NULL) == 0)
                *runs[i].out = 2.0 * n * (double)n * n / st.min * 1e-12;
            gpu.tf32 = save;
        }
    }
    cudaFree(ga.a);
    cudaFree(ga.b);
    cudaFree(ga.c);
    cudaGetLastError();
}

int bench_gpu_open(const bench_options *opt, bench_ceilings *cl, char *why,
                   size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, len, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return -1;
    }
    gpu.device = 0;
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(gpu.device)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, gpu.device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(why, len, "CUDA: %s", cudaGetErrorString(e));
        return -1;
    }
    if (cublasCreate(&gpu.cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(gpu.cublas, gpu.stream) != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, len, "cuBLAS could not be initialised");
        return -1;
    }
    gpu.tf32 = opt->tf32;
    if (make_events(16) != 0) {
        snprintf(why, len, "CUDA events could not be created");
        return -1;
    }
    opened = 1;
    snprintf(cl->gpu_name, sizeof cl->gpu_name, "%.120s", prop.name);
    cl->gpu_l2_bytes = (size_t)prop.l2CacheSize;
    measure_ceilings(opt, cl);
    return 0;
}

void bench_gpu_close(void)
{
    if (!opened)
        return;
    for (int i = 0; i < nev; i++) {
        cudaEventDestroy(ev_start[i]);
        cudaEventDestroy(ev_end[i]);
    }
    free(ev_start);
    free(ev_end);
    ev_start = ev_end = NULL;
    nev = 0;
    cublasDestroy(gpu.cublas);
    cudaStreamDestroy(gpu.stream);
    opened = 0;
}

/* ---- one case ------------------------------------------------------- */

static void free_sets(bench_set *sets, int nsets, const bench_buffer_spec *bufs,
                      int nbuf)
{
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++) {
            void **p = bench_set_slot(&sets[s], &bufs[b]);
            if (*p)
                cudaFree(*p);
            *p = NULL;
        }
}

static int make_sets(const bench_case *c, bench_set *sets, int nsets,
                     const bench_buffer_spec *bufs, int nbuf, uint64_t seed)
{
    size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++) {
            void **p = bench_set_slot(&sets[s], &bufs[b]);
            if (cudaMalloc(p, (size_t)bufs[b].count * es) != cudaSuccess) {
                *p = NULL;
                cudaGetLastError();
                return -1;
            }
            if (bufs[b].scale > 0 &&
                fbb_fill_uniform(c->dtype, *p, bufs[b].count,
                                 bench_buffer_seed(seed, s, b), bufs[b].scale,
                                 gpu.stream) != 0)
                return -1;
        }
    return cudaStreamSynchronize(gpu.stream) == cudaSuccess ? 0 : -1;
}

typedef struct impl_arg {
    const bench_gpu_impl *impl;
    void *state;
} impl_arg;

static int enq_impl(void *arg, int s)
{
    impl_arg *a = arg;
    return a->impl->run(a->state, s);
}

/* Run once on set 0 with a poisoned output, copy the output to host. */
static int output_of_set0(const bench_gpu_impl *impl, void *state, void *y,
                          void *host, size_t bytes)
{
    if (cudaMemsetAsync(y, BENCH_POISON_BYTE, bytes, gpu.stream) != cudaSuccess ||
        impl->run(state, 0) != 0 ||
        cudaMemcpyAsync(host, y, bytes, cudaMemcpyDeviceToHost, gpu.stream) != cudaSuccess ||
        cudaStreamSynchronize(gpu.stream) != cudaSuccess)
        return -1;
    return 0;
}

void bench_run_gpu_case(const bench_options *opt, const bench_ceilings *cl,
                        const bench_case *c, bench_report *rep)
{
    bench_row rows[NIMPL];
    int nrows = 0;
    bench_buffer_spec bufs[BENCH_MAX_BUFFERS];
    int nbuf = bench_set_buffers(c, bufs);
    size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    size_t ybytes = (size_t)(c->m * c->n) * es;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    double budget = 0.8 * (double)free_b;
    if (opt->gpu_mem_budget_mb > 0 && opt->gpu_mem_budget_mb * 1048576.0 < budget)
        budget = opt->gpu_mem_budget_mb * 1048576.0;
    /* eager's G and U, plus whatever workspace our paths hold */
    double scratch = c->routine == BENCH_MLP ? 2.0 * es * c->m * c->h : 0;
    scratch += 64.0 * 1048576;
    int nsets = bench_nsets(bench_case_bytes(c), (double)cl->gpu_l2_bytes, scratch,
                            budget);
    bench_set sets[BENCH_MAX_SETS];
    memset(sets, 0, sizeof sets);
    void *ref = malloc(ybytes), *out = malloc(ybytes);
    int have_ref = 0;
    char skip[160] = "";
    if (nsets == 0)
        snprintf(skip, sizeof skip, "needs %.0f MB of device memory, %.0f MB allowed",
                 (bench_case_bytes(c) + scratch) / 1048576.0, budget / 1048576.0);
    else if (!ref || !out || make_sets(c, sets, nsets, bufs, nbuf, opt->seed) != 0)
        snprintf(skip, sizeof skip, "out of memory for the input sets");

    double target = opt->quick ? 0.005 : 0.03;
    int max_reps = opt->quick ? 20 : opt->gpu_reps;
    int min_reps = opt->quick ? 5 : 10;
    if (min_reps > max_reps)
        min_reps = max_reps;
    for (int i = 0; i < NIMPL; i++) {
        const bench_gpu_impl *impl = impls[i];
        if (!selected(opt, impl))
            continue;
        bench_row *w = &rows[nrows++];
        memset(w, 0, sizeof *w);
        w->c = *c;
        w->device = "gpu";
        snprintf(w->impl, sizeof w->impl, "%s", impl->name);
        w->kind = impl->kind;
        w->nsets = nsets;
        w->err = -1;
        w->check_ok = -1;
        if (skip[0]) {
            w->outcome = BENCH_SKIPPED;
            snprintf(w->note, sizeof w->note, "%s", skip);
            bench_progress(w);
            continue;
        }
        void *state = NULL;
        w->outcome = impl->init(&state, &gpu, c, sets, nsets, w->note, sizeof w->note);
        if (w->outcome == BENCH_RAN) {
            impl_arg a = {impl, state};
            double host_s = 0;
            int rc = time_enqueued(enq_impl, &a, nsets, opt, target, min_reps,
                                   max_reps, &w->t, &host_s);
            if (rc != 0) {
                w->outcome = rc > 0 ? BENCH_NOT_SUPPORTED : BENCH_FAILED;
                if (rc == -2)
                    snprintf(w->note, sizeof w->note, "CUDA: %s",
                             cudaGetErrorString(cudaGetLastError()));
                else if (impl->message)
                    snprintf(w->note, sizeof w->note, "%s", impl->message(state));
            } else {
                if (impl->message)
                    snprintf(w->path, sizeof w->path, "%s", impl->message(state));
                /* A host that takes longer than the GPU per call leaves
                 * the GPU idle: the row's note says by how much. */
                if (w->kind == BENCH_OURS)
                    snprintf(w->note, sizeof w->note,
                             "host %.1f us/call, GPU %.1f us", host_s * 1e6,
                             w->t.median * 1e6);
                if (opt->check && w->kind != BENCH_REFERENCE &&
                    impl != &bench_gpu_fb_cuda_e4m3 &&
                    output_of_set0(impl, state, sets[0].y, out, ybytes) == 0) {
                    if (w->kind == BENCH_BASELINE) {
                        memcpy(ref, out, ybytes);
                        have_ref = 1;
                    } else if (have_ref) {
                        w->err = bench_rel_err(c->dtype, out, ref, c->m * c->n);
                        w->check_ok = w->err <= bench_check_tol(c, opt->tf32);
                    }
                }
            }
        }
        if (impl->fini)
            impl->fini(state);
        /* a failed launch must not poison the next implementation */
        cudaStreamSynchronize(gpu.stream);
        cudaGetLastError();
        bench_progress(w);
    }
    bench_finish_case(rows, nrows, cl, 1, opt->tf32);
    for (int i = 0; i < nrows; i++)
        if (bench_report_add(rep, &rows[i]) != 0)
            fprintf(stderr, "fusedblas-bench: out of memory for the report\n");
    free(ref);
    free(out);
    free_sets(sets, nsets, bufs, nbuf);
}

#else /* !HAVE_CUDA */

int bench_gpu_open(const bench_options *opt, bench_ceilings *cl, char *why,
                   size_t len)
{
    (void)opt, (void)cl;
    snprintf(why, len, "built without CUDA");
    return -1;
}

void bench_run_gpu_case(const bench_options *opt, const bench_ceilings *cl,
                        const bench_case *c, bench_report *rep)
{
    (void)opt, (void)cl, (void)c, (void)rep;
}

void bench_gpu_close(void)
{
}

#endif /* HAVE_CUDA */
