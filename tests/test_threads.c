/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_threads.c -- concurrent calls give what serial calls give.
 *
 * A fixed set of jobs (the three gemm types and the MLP, shapes below and
 * above the CPU backend's own threading threshold) is run serially
 * on the main thread: each serial result is checked against the oracle
 * (gemm_check, mlp_check) and kept, guards included, as the reference.
 * First, before any other library call, THREADS threads make the
 * process's first calls at once (lazy set-up under contention). Then
 * THREADS pthreads run every job REPS times each (once under
 * FB_TEST_QUICK=1), in an order of
 * their own, on shared read-only inputs and outputs of their own, in
 * several arrangements:
 *   - each thread with its own handle;
 *   - every thread on the NULL handle (its own per-thread default);
 *   - half and half, each thread also creating and destroying a handle
 *     around every call, so the handle registry is under contention;
 *   - with a CUDA backend available: each thread with its own cuda-lt
 *     (and cuda-fused) handle on host pointers, which the library stages,
 *     and all threads on NULL handles set to that backend.
 * Every result must be bit-identical to the serial one, guards included,
 * with the same status. Run under ThreadSanitizer by .ci/reliability.sh,
 * and on the GPU machine plainly and under compute-sanitizer by
 * scripts/gpu-check.sh (racecheck at FB_TEST_THREADS=2: the tool loses
 * track of launches from 8 threads at once; the script says more).
 */
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "mlp_check.h"

#define THREADS 8
#define REPS 4
/* Rounds each thread makes over the jobs: REPS, or 1 under FB_TEST_QUICK
 * (compute-sanitizer's racecheck runs each call many times slower; one
 * round still has 8 threads' calls overlapping). */
static int reps = REPS;
/* pthreads in the arrangements: THREADS, or FB_TEST_THREADS (1..THREADS),
 * for diagnosing a run under a tool that serialises threads (racecheck). */
static int nthreads = THREADS;
/* CPU threads per call on our own handles: more than one, so that the
 * larger jobs open OpenMP teams from every pthread at once. */
#define CALL_THREADS 2
/* FB_TEST_TRACE=1: each arrangement call's start and end, with the
 * seconds since the program began, on stderr, so that a run that stops
 * moving under a tool shows which calls are in flight. */
static int trace;
static struct timespec t0;
/* FB_TEST_ONLY=text: only the arrangements whose name contains it. */
static const char *only;

/* ---- jobs ------------------------------------------------------------------ */

typedef struct job {
    int is_mlp;
    gemm_data g;
    mlp_data p;
    const tbuf *out;  /* C or Y: the only buffer a call may write */
} job;

static const gemm_case gemm_cases[] = {
    /* dtype, layout, transa, transb, m, n, k, lda, ldb, ldc (set below),
     * alpha, beta, bias, act */
    {FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 33, 40, 29, 0, 0, 0,
     1.0f, 0.0f, 1, FB_ACT_RELU, 0, NULL},
    {FB_DTYPE_F16, FB_COL_MAJOR, FB_TRANS, FB_NO_TRANS, 48, 31, 40, 0, 0, 0,
     0.75f, 0.5f, 1, FB_ACT_GELU_TANH, 1, NULL},
    {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 17, 64, 24, 0, 0,
     0, 1.0f, 0.0f, 0, FB_ACT_SILU, 0, NULL},
    /* 2 * 160 * 128 * 96 = 3.9 Mflop: above the threading threshold */
    {FB_DTYPE_F32, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 160, 128, 96, 0,
     0, 0, -1.0f, 0.25f, 1, FB_ACT_GELU_ERF, 0, NULL},
    {FB_DTYPE_BF16, FB_COL_MAJOR, FB_TRANS, FB_TRANS, 130, 120, 72, 0, 0, 0,
     1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, NULL},
};

static const mlp_case mlp_cases[] = {
    /* dtype, act, m, k, h, n, ldx, ldy (set below), biases */
    {FB_DTYPE_F32, FB_ACT_GELU_TANH, 24, 32, 48, 20, 0, 0, MLP_ALL_BIASES, 0},
    /* decode: few rows, the hidden width split between threads */
    {FB_DTYPE_BF16, FB_ACT_SILU, 3, 64, 96, 32, 0, 0, MLP_BD, 0},
    /* 2 * 128 * (2 * 128 * 64 + 128 * 64) = 6.3 Mflop: rows split */
    {FB_DTYPE_F16, FB_ACT_RELU, 128, 64, 128, 64, 0, 0, MLP_BG | MLP_BU, 1},
};

#define N_GEMM (int)(sizeof gemm_cases / sizeof gemm_cases[0])
#define N_MLP (int)(sizeof mlp_cases / sizeof mlp_cases[0])
#define N_JOBS (N_GEMM + N_MLP)

static job jobs[N_JOBS];

static void make_jobs(void)
{
    for (int i = 0; i < N_GEMM; i++) {
        gemm_case c = gemm_cases[i];
        gemm_case_set_lds(&c, i % 3, (i + 1) % 3, 2);
        jobs[i].is_mlp = 0;
        gemm_data_make(&jobs[i].g, &c);
        jobs[i].out = &jobs[i].g.C;
    }
    for (int i = 0; i < N_MLP; i++) {
        mlp_case c = mlp_cases[i];
        c.ldx = c.k + i;
        c.ldy = c.n + 1;
        job *j = &jobs[N_GEMM + i];
        j->is_mlp = 1;
        mlp_data_make(&j->p, &c);
        j->out = &j->p.Y;
    }
}

static void free_jobs(void)
{
    for (int i = 0; i < N_JOBS; i++) {
        if (jobs[i].is_mlp)
            mlp_data_free(&jobs[i].p);
        else
            gemm_data_free(&jobs[i].g);
    }
}

/* Run job j with handle h, writing into out, an image laid out as the
 * job's output tbuf (same size, same offset of the data). */
static fb_status run_job(const job *j, fb_handle h, unsigned char *out)
{
    void *o = out + ((unsigned char *)tbuf_data(j->out) - j->out->img);
    if (!j->is_mlp) {
        const gemm_data *d = &j->g;
        const gemm_case *c = &d->c;
        return gemm_call(h, c->dtype, c->layout, c->transa, c->transb, c->m,
                         c->n, c->k, c->alpha, tbuf_data(&d->A), c->lda,
                         tbuf_data(&d->B), c->ldb, c->beta, o, c->ldc,
                         c->has_bias ? tbuf_data(&d->bias) : NULL, c->act);
    }
    const mlp_data *d = &j->p;
    const mlp_case *c = &d->c;
    return mlp_geglu_forward(
        h, c->dtype, c->act, c->m, c->k, c->h, c->n, tbuf_data(&d->X), c->ldx,
        tbuf_data(&d->Wg), (c->biases & MLP_BG) ? tbuf_data(&d->bg) : NULL,
        tbuf_data(&d->Wu), (c->biases & MLP_BU) ? tbuf_data(&d->bu) : NULL,
        tbuf_data(&d->Wd), (c->biases & MLP_BD) ? tbuf_data(&d->bd) : NULL, o,
        c->ldy);
}

/* ---- arrangements ------------------------------------------------------------ */

typedef enum handle_kind {
    OWN,     /* a handle made by the thread */
    DEFAULT, /* the NULL handle */
    CHURN    /* even threads NULL, odd ones a new handle per call */
} handle_kind;

typedef struct arrangement {
    const char *name;
    handle_kind kind;
    fb_backend backend;
} arrangement;

/* The serial reference of one arrangement: per job, the status and the
 * whole output image (window, padding and guards). */
typedef struct reference {
    fb_status st[N_JOBS];
    unsigned char *img[N_JOBS];
} reference;

/* A handle configured as the arrangement's calls are; NULL for DEFAULT
 * (the calling thread's default, configured the same way). */
static fb_status configure(fb_handle h, fb_backend backend)
{
    fb_status st = fb_set_backend(h, backend);
    if (st == FB_STATUS_SUCCESS && backend == FB_BACKEND_CPU)
        st = fb_set_threads(h, CALL_THREADS);
    return st;
}

static unsigned char *fresh_output(const job *j)
{
    unsigned char *o = malloc(j->out->bytes);
    if (o == NULL)
        tap_bail("out of host memory");
    memcpy(o, j->out->img, j->out->bytes);
    return o;
}

static void serial_reference(const arrangement *a, reference *r)
{
    fb_handle h = NULL;
    if (a->kind == OWN && fb_create(&h) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    if (configure(h, a->backend) != FB_STATUS_SUCCESS)
        tap_bail("cannot configure a handle for %s", a->name);
    for (int i = 0; i < N_JOBS; i++) {
        r->img[i] = fresh_output(&jobs[i]);
        r->st[i] = run_job(&jobs[i], h, r->img[i]);
    }
    if (h != NULL)
        fb_destroy(h);
}

static void free_reference(reference *r)
{
    for (int i = 0; i < N_JOBS; i++)
        free(r->img[i]);
}

/* What one thread found; written by that thread only, read after join. */
typedef struct worker {
    pthread_t tid;
    int index;
    const arrangement *a;
    const reference *ref;
    int calls, mismatches, setup_failed;
    char first[200];
} worker;

static void note_mismatch(worker *w, const char *fmt, int job_index,
                          fb_status got, fb_status want)
{
    if (w->mismatches++ == 0)
        snprintf(w->first, sizeof w->first, fmt, w->index, job_index,
                 (int)got, (int)want);
}

static void trace_call(const worker *w, int job_index, const char *what)
{
    if (!trace)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    fprintf(stderr, "# %9.3f s  %s: thread %d job %d %s\n",
            (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec),
            w->a->name, w->index, job_index, what);
}

static void *work(void *arg)
{
    worker *w = arg;
    const arrangement *a = w->a;
    unsigned char *out[N_JOBS];
    for (int i = 0; i < N_JOBS; i++)
        out[i] = malloc(jobs[i].out->bytes);

    fb_handle own = NULL;
    const int churn = a->kind == CHURN && w->index % 2 == 1;
    if (a->kind == OWN && (fb_create(&own) != FB_STATUS_SUCCESS ||
                           configure(own, a->backend) != FB_STATUS_SUCCESS))
        w->setup_failed = 1;
    if ((a->kind == DEFAULT || (a->kind == CHURN && !churn)) &&
        configure(NULL, a->backend) != FB_STATUS_SUCCESS)
        w->setup_failed = 1;

    for (int rep = 0; !w->setup_failed && rep < reps; rep++)
        for (int s = 0; s < N_JOBS; s++) {
            /* Each thread walks the jobs from a different start, so that
             * different routines overlap in time. */
            const int i = (s + w->index + rep) % N_JOBS;
            if (out[i] == NULL) {
                w->setup_failed = 1;
                break;
            }
            memcpy(out[i], jobs[i].out->img, jobs[i].out->bytes);
            fb_handle h = own;
            if (churn && (fb_create(&h) != FB_STATUS_SUCCESS ||
                          configure(h, a->backend) != FB_STATUS_SUCCESS)) {
                w->setup_failed = 1;
                break;
            }
            trace_call(w, i, "start");
            const fb_status st = run_job(&jobs[i], h, out[i]);
            trace_call(w, i, "done");
            if (churn)
                fb_destroy(h);
            w->calls++;
            if (st != w->ref->st[i])
                note_mismatch(w, "thread %d, job %d: status %d, serial %d",
                              i, st, w->ref->st[i]);
            else if (memcmp(out[i], w->ref->img[i], jobs[i].out->bytes) != 0)
                note_mismatch(w, "thread %d, job %d: output differs from the "
                              "serial one (status %d, serial %d)",
                              i, st, w->ref->st[i]);
        }
    if (own != NULL)
        fb_destroy(own);
    for (int i = 0; i < N_JOBS; i++)
        free(out[i]);
    return NULL;
}

/* ---- cold start ------------------------------------------------------------
 * The process's very first library calls, made by THREADS threads at once:
 * whatever the library sets up lazily (the per-thread default handle's
 * key, the CUDA module probe, CPU feature tests, OpenBLAS's buffers) is
 * set up under contention, which ThreadSanitizer then judges. */

typedef struct cold {
    pthread_t tid;
    fb_status st[N_JOBS];
    unsigned char *out[N_JOBS];
    int setup_failed;
} cold;

static void *cold_work(void *arg)
{
    cold *c = arg;
    fb_handle h;
    if (fb_create(&h) != FB_STATUS_SUCCESS ||
        configure(h, FB_BACKEND_CPU) != FB_STATUS_SUCCESS) {
        c->setup_failed = 1;
        return NULL;
    }
    for (int i = 0; i < N_JOBS; i++)
        c->st[i] = run_job(&jobs[i], h, c->out[i]);
    fb_destroy(h);
    return NULL;
}

static void cold_start(void)
{
    static const arrangement own = {"cold start", OWN, FB_BACKEND_CPU};
    cold c[THREADS];
    for (int t = 0; t < THREADS; t++) {
        memset(&c[t], 0, sizeof c[t]);
        for (int i = 0; i < N_JOBS; i++)
            c[t].out[i] = fresh_output(&jobs[i]);
        if (pthread_create(&c[t].tid, NULL, cold_work, &c[t]) != 0)
            tap_bail("pthread_create failed");
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(c[t].tid, NULL);
    reference ref;
    serial_reference(&own, &ref);
    int mismatches = 0, setup_failed = 0;
    for (int t = 0; t < THREADS; t++) {
        setup_failed += c[t].setup_failed;
        for (int i = 0; i < N_JOBS; i++) {
            if (!c[t].setup_failed &&
                (c[t].st[i] != ref.st[i] ||
                 memcmp(c[t].out[i], ref.img[i], jobs[i].out->bytes) != 0))
                mismatches++;
            free(c[t].out[i]);
        }
    }
    tap_ok(mismatches == 0 && setup_failed == 0,
           "cold start: %d threads make the process's first %d calls at "
           "once, each result bit-identical to the serial one (%d differ, "
           "%d threads could not set up)", THREADS, THREADS * N_JOBS,
           mismatches, setup_failed);
    free_reference(&ref);
}

static void run_arrangement(const arrangement *a)
{
    if (only != NULL && strstr(a->name, only) == NULL) {
        tap_skip("%s: not selected by FB_TEST_ONLY", a->name);
        return;
    }
    reference ref;
    serial_reference(a, &ref);
    int supported = 0, failed = 0;
    for (int i = 0; i < N_JOBS; i++) {
        supported += ref.st[i] == FB_STATUS_SUCCESS;
        failed += ref.st[i] != FB_STATUS_SUCCESS &&
                  ref.st[i] != FB_STATUS_NOT_SUPPORTED;
    }
    /* A GPU path may decline a shape (not supported) -- then it must
     * decline it in every thread too; one that declines every job has
     * nothing to run here. The CPU runs everything. */
    if (a->backend != FB_BACKEND_CPU && supported == 0 && failed == 0) {
        tap_skip("%s: the path declines every job", a->name);
        free_reference(&ref);
        return;
    }
    if (!tap_ok(failed == 0 && (a->backend != FB_BACKEND_CPU ||
                                supported == N_JOBS),
                "%s: serial calls succeed (%d of %d jobs; %d failed, the "
                "rest declined)", a->name, supported, N_JOBS, failed)) {
        free_reference(&ref);
        return;
    }

    worker w[THREADS];
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].index = t;
        w[t].a = a;
        w[t].ref = &ref;
        if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0)
            tap_bail("pthread_create failed");
        started++;
    }
    int calls = 0, mismatches = 0, setup_failed = 0;
    const char *first = NULL;
    for (int t = 0; t < started; t++) {
        pthread_join(w[t].tid, NULL);
        calls += w[t].calls;
        mismatches += w[t].mismatches;
        setup_failed += w[t].setup_failed;
        if (first == NULL && w[t].mismatches > 0)
            first = w[t].first;
    }
    if (first != NULL)
        tap_diag("%s", first);
    tap_ok(mismatches == 0 && setup_failed == 0 &&
               calls == nthreads * reps * N_JOBS,
           "%s: %d threads, %d calls, every result bit-identical to the "
           "serial one (%d differ, %d threads could not set up)",
           a->name, nthreads, calls, mismatches, setup_failed);
    free_reference(&ref);
}

int main(void)
{
    tap_begin("test_threads");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *tr = getenv("FB_TEST_TRACE");
    trace = tr != NULL && tr[0] == '1';
    only = getenv("FB_TEST_ONLY");
    make_jobs();
    cold_start();

    /* The serial results are right, so that agreeing with them means
     * something. */
    const target cpu = target_cpu();
    for (int i = 0; i < N_JOBS; i++) {
        if (jobs[i].is_mlp)
            mlp_check(&jobs[i].p, &cpu, 1, NULL);
        else
            gemm_check(&jobs[i].g, &cpu, 1, NULL);
    }

    static const arrangement cpu_arrangements[] = {
        {"cpu, a handle per thread", OWN, FB_BACKEND_CPU},
        {"cpu, every thread on the NULL handle", DEFAULT, FB_BACKEND_CPU},
        {"cpu, NULL handles and a new handle per call", CHURN,
         FB_BACKEND_CPU},
    };
    /* FB_TEST_QUICK=1 (the compute-sanitizer runs of scripts/gpu-check.sh,
     * which look at the GPU arrangements): the CPU ones are skipped there,
     * since make check, valgrind and TSan run them in full. */
    const char *quick = getenv("FB_TEST_QUICK");
    const int cpu_too = !(quick && quick[0] == '1');
    if (!cpu_too)
        reps = 1;
    const char *nt = getenv("FB_TEST_THREADS");
    if (nt != NULL && atoi(nt) >= 1 && atoi(nt) <= THREADS)
        nthreads = atoi(nt);
    for (size_t i = 0; i < sizeof cpu_arrangements / sizeof cpu_arrangements[0]; i++) {
        if (cpu_too)
            run_arrangement(&cpu_arrangements[i]);
        else
            tap_skip("%s: FB_TEST_QUICK", cpu_arrangements[i].name);
    }

    static const arrangement gpu_arrangements[] = {
        {"cuda-lt (staged host data), a handle per thread", OWN,
         FB_BACKEND_CUDA_LT},
        {"cuda-lt (staged host data), every thread on the NULL handle",
         DEFAULT, FB_BACKEND_CUDA_LT},
        {"cuda-fused (staged host data), a handle per thread", OWN,
         FB_BACKEND_CUDA_FUSED},
    };
    for (size_t i = 0; i < sizeof gpu_arrangements / sizeof gpu_arrangements[0]; i++) {
        const arrangement *a = &gpu_arrangements[i];
        if (fb_backend_available(a->backend) != FB_STATUS_SUCCESS)
            tap_skip("%s: backend unavailable here", a->name);
        else
            run_arrangement(a);
    }

    fb_destroy(cpu.handle);
    free_jobs();
    return tap_end();
}
