/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_thread_cap.c -- a thread count beyond what the machine can run is
 * capped, never handed to OpenMP as it is (libgomp ends the process when
 * it cannot create the threads).
 *
 * Each case runs in a child process (tap_child.h), whose threads can be
 * counted (/proc/self/task) and whose limits can be set without touching
 * the rest of the run. The calls are an sgemm_bias_act of 2^30 flops, an
 * hgemm_bias_act of 2^28 and an fp32 mlp_geglu_forward of 1.3 * 2^30,
 * enough for the library to want a thousand threads. The sgemm and the
 * MLP run on our own kernels where the CPU has them (their threads:
 * fb_cpu_own_threads), on OpenBLAS elsewhere; fp16 always goes through
 * OpenBLAS's panels (fb_cpu_threads), so both counts are tested on every
 * CPU. Each result must be bit-identical to the same call asked for as
 * many threads as the process has CPUs, the count the cap gives (on
 * OpenBLAS's paths the bits depend on the thread count: its calls are
 * split by thread).
 *
 * What the cap governs is the OpenMP team the library asks for, not the
 * process's threads: a pthreads OpenBLAS starts its own pool (a thread
 * per CPU) when it is loaded, before main. So the threads are counted
 * after the same calls made on one thread (which would start whatever
 * else OpenBLAS starts of its own), and the capped calls may add at most
 * the team's other threads, CPUs - 1; uncapped, libgomp would add 999. The
 * count the library chose is also read from each call's path
 * ("threads=N"): at most the CPUs, and 1 on OpenBLAS's panels when
 * OpenBLAS is not its OpenMP build (fb_cpu_arrangement).
 *  - fb_set_threads(h, 1000): the calls succeed, with the same bits, on
 *    at most CPUs threads;
 *  - OMP_NUM_THREADS=1000 and no count on the handle: the same;
 *  - the process pinned to one CPU (sched_setaffinity): the calls run on
 *    one thread, add none, and give the bits of one thread;
 *  - under RLIMIT_AS: after the calls ran once on the team the machine
 *    allows (so OpenBLAS's and the team's memory exist), the address
 *    space is limited to what is mapped then plus a margin that leaves
 *    room for that team but not for a thousand thread stacks
 *    (OMP_STACKSIZE=64M, so 64 GB): fb_set_threads(h, 1000) and the calls
 *    must still succeed, with the same bits. Uncapped, libgomp fails to
 *    create the threads and exits the child.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "harness.h"
#include "tap_child.h"

#define CHILD_SECONDS 300
#define REQUEST 1000
#define STACK_MIB 64  /* OMP_STACKSIZE in phase memory-limit */
#define MARGIN_MIB 512 /* address space left free under the limit */

/* sgemm 1024 x 1024 x 512 (row-major); hgemm 256 x 1024 x 512
 * (column-major NN, so not the decode kernel's form); mlp 512 x 512 ->
 * 1024 -> 256. */
enum { GM = 1024, GN = 1024, GK = 512, HM = 256, HN = 1024, HK = 512,
       XM = 512, XK = 512, XH = 1024, XN = 256 };

static float *ga, *gb, *gbias, *x, *wg, *wu, *wd, *bh, *bn;
static fb_half *ha, *hb, *hbias;

/* The calls, in the order run() makes them. */
enum { CALL_SGEMM, CALL_HGEMM, CALL_MLP, CALLS };
static const char *const call_name[CALLS] = {"sgemm", "hgemm", "mlp"};

/* Their outputs, and the path each call ran. */
typedef struct outputs {
    float *c;
    fb_half *hc;
    float *y;
    char path[CALLS][128];
} outputs;

static float *filled(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (p == NULL)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rng_value(FB_DTYPE_F32);
    return p;
}

static fb_half *filled_half(size_t n)
{
    fb_half *p = malloc(n * sizeof *p);
    if (p == NULL)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        dt_set(FB_DTYPE_F16, p, (int64_t)i, rng_value(FB_DTYPE_F16));
    return p;
}

static void make_data(void)
{
    ga = filled((size_t)GM * GK), gb = filled((size_t)GK * GN);
    gbias = filled(GN);
    ha = filled_half((size_t)HM * HK), hb = filled_half((size_t)HK * HN);
    hbias = filled_half(HN);
    x = filled((size_t)XM * XK), wg = filled((size_t)XH * XK);
    wu = filled((size_t)XH * XK), wd = filled((size_t)XN * XH);
    bh = filled(XH), bn = filled(XN);
}

static void outputs_make(outputs *o)
{
    o->c = malloc((size_t)GM * GN * sizeof *o->c);
    o->hc = malloc((size_t)HM * HN * sizeof *o->hc);
    o->y = malloc((size_t)XM * XN * sizeof *o->y);
    if (o->c == NULL || o->hc == NULL || o->y == NULL)
        tap_bail("out of memory");
    for (int i = 0; i < CALLS; i++)
        o->path[i][0] = '\0';
}

static void outputs_free(outputs *o)
{
    free(o->c), free(o->hc), free(o->y);
}

/* The path of h's last call into o->path[i]. */
static void took(fb_handle h, outputs *o, int i)
{
    snprintf(o->path[i], sizeof o->path[i], "%s", fb_handle_last_path(h));
}

/* The calls on h into o; 0 if all succeed. */
static int run(fb_handle h, outputs *o)
{
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  GM, GN, GK, 1.0f, ga, GK, gb, GN, 0.0f,
                                  o->c, GN, gbias, FB_ACT_GELU_TANH);
    if (st != FB_STATUS_SUCCESS) {
        tap_diag("sgemm_bias_act: %s", fb_handle_last_message(h));
        return 1;
    }
    took(h, o, CALL_SGEMM);
    st = hgemm_bias_act(h, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, HM, HN,
                        HK, 1.0f, ha, HM, hb, HK, 0.0f, o->hc, HM, hbias,
                        FB_ACT_GELU_TANH);
    if (st != FB_STATUS_SUCCESS) {
        tap_diag("hgemm_bias_act: %s", fb_handle_last_message(h));
        return 1;
    }
    took(h, o, CALL_HGEMM);
    st = mlp_geglu_forward(h, FB_DTYPE_F32, FB_ACT_GELU_TANH, XM, XK, XH, XN,
                           x, XK, wg, bh, wu, bh, wd, bn, o->y, XN);
    if (st != FB_STATUS_SUCCESS) {
        tap_diag("mlp_geglu_forward: %s", fb_handle_last_message(h));
        return 1;
    }
    took(h, o, CALL_MLP);
    return 0;
}

/* Threads of this process now. */
static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        tap_bail("cannot read /proc/self/task");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Threads of this process once those on their way out have gone: the
 * fewest seen over 100 ms. A thread that ends (an OpenMP team nested in
 * another region ends its threads after it) may still be listed just
 * after; threads that stay (a team's, OpenBLAS's pool) are there
 * throughout. */
static int threads_settled(void)
{
    int fewest = threads_now();
    const struct timespec pause = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 20; i++) {
        nanosleep(&pause, NULL);
        const int n = threads_now();
        if (n < fewest)
            fewest = n;
    }
    return fewest;
}

static int cpus_now(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        tap_bail("sched_getaffinity failed");
    return CPU_COUNT(&set);
}

static long vm_size_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmSize:", 7) == 0)
            kib = strtol(line + 7, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kib;
}

/* The calls on a handle asked for threads threads, into o. */
static void run_on(int threads, outputs *o, const char *what)
{
    fb_handle h = handle_on(FB_BACKEND_CPU);
    if (fb_set_threads(h, threads) != FB_STATUS_SUCCESS || run(h, o))
        tap_bail("the %s on %d threads failed", what, threads);
    fb_destroy(h);
}

/* The reference: the same calls asked for threads threads. */
static outputs ref;

static void reference(int threads)
{
    outputs_make(&ref);
    run_on(threads, &ref, "reference");
}

/* Runs the calls on h into o and checks them against the reference: the
 * number of outputs that differ in their bits, or -1 if a call failed. */
static long against_reference(fb_handle h, outputs *o)
{
    if (run(h, o) != 0)
        return -1;
    return (long)(memcmp(o->c, ref.c, (size_t)GM * GN * sizeof *o->c) != 0) +
           (long)(memcmp(o->hc, ref.hc, (size_t)HM * HN * sizeof *o->hc) !=
                  0) +
           (long)(memcmp(o->y, ref.y, (size_t)XM * XN * sizeof *o->y) != 0);
}

/* The thread count a path says its call ran on ("threads=N"), or -1. */
static int path_threads(const char *path)
{
    const char *t = strstr(path, "threads=");
    return t != NULL ? atoi(t + strlen("threads=")) : -1;
}

/* What the library chose for each call in o, checked into chk: at most
 * most threads; one on OpenBLAS's panels unless OpenBLAS is its OpenMP
 * build (OpenBLAS then threads each GEMM itself); and fp16 through
 * OpenBLAS's panels, so that their count (fb_cpu_threads) is the one
 * tested there. */
static void check_paths(tcheck *chk, const outputs *o, int most)
{
    for (int i = 0; i < CALLS; i++) {
        const char *p = o->path[i];
        const int t = path_threads(p);
        if (t < 1 || t > most)
            tcheck_fail(chk, "%s: threads=%d in its path, want 1..%d",
                        call_name[i], t, most);
        if (strncmp(p, "cpu/openblas-", strlen("cpu/openblas-")) == 0 &&
            strncmp(p, "cpu/openblas-openmp/", strlen("cpu/openblas-openmp/"))
                != 0 && t != 1)
            tcheck_fail(chk, "%s: threads=%d on panels that OpenBLAS "
                        "threads itself, want 1", call_name[i], t);
    }
    if (strncmp(o->path[CALL_HGEMM], "cpu/openblas-",
                strlen("cpu/openblas-")) != 0)
        tcheck_fail(chk, "hgemm did not run on OpenBLAS's panels: this test "
                    "no longer reaches fb_cpu_threads");
}

/* Child: the handle asks for REQUEST threads (or, in phase omp-env, the
 * handle asks for none and OMP_NUM_THREADS says REQUEST); in phase
 * pinned, after the process is pinned to its first CPU. */
static void requested(const char *phase)
{
    char what[64];
    snprintf(what, sizeof what, "%s", phase);
    if (strcmp(phase, "pinned") == 0) {
        cpu_set_t all, one;
        if (sched_getaffinity(0, sizeof all, &all) != 0)
            tap_bail("sched_getaffinity failed");
        int first = 0;
        while (first < CPU_SETSIZE && !CPU_ISSET(first, &all))
            first++;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            tap_bail("sched_setaffinity failed");
        snprintf(what, sizeof what, "pinned to CPU %d", first);
    }
    const int cpus = cpus_now();
    /* Whatever OpenBLAS starts of its own, started by calls on one
     * thread; the threads then are the baseline. */
    outputs warm;
    outputs_make(&warm);
    run_on(1, &warm, "warm-up");
    outputs_free(&warm);
    const int before = threads_settled();
    reference(cpus);
    fb_handle h = handle_on(FB_BACKEND_CPU);
    const fb_status set = strcmp(phase, "omp-env") == 0
                              ? FB_STATUS_SUCCESS
                              : fb_set_threads(h, REQUEST);
    outputs o;
    outputs_make(&o);
    const long differ = set == FB_STATUS_SUCCESS ? against_reference(h, &o)
                                                 : -1;
    const int after = threads_settled();
    tcheck chk;
    tcheck_init(&chk);
    if (differ < 0)
        tcheck_fail(&chk, "a call failed");
    else if (differ > 0)
        tcheck_fail(&chk, "%ld of the %d outputs differ from those of %d "
                    "threads", differ, CALLS, cpus);
    else
        check_paths(&chk, &o, cpus);
    if (after - before > cpus - 1)
        tcheck_fail(&chk, "the calls added %d threads to the %d there after "
                    "the calls on one thread; a team of %d adds at most %d",
                    after - before, before, cpus, cpus - 1);
    tap_check(&chk, "%s: %d threads asked, %d CPU%s: the calls %s, %s the "
              "bits of %d; %d threads added to %d (at most %d)", what,
              REQUEST, cpus, cpus == 1 ? "" : "s",
              differ < 0 ? "failed" : "succeeded",
              differ == 0 ? "with" : "without", cpus, after - before, before,
              cpus - 1);
    int widest = 0;
    for (int i = 0; i < CALLS; i++) {
        tap_diag("  %s ran %s", call_name[i],
                 o.path[i][0] ? o.path[i] : "(nothing)");
        if (path_threads(o.path[i]) > widest)
            widest = path_threads(o.path[i]);
    }
    /* A pthreads OpenBLAS on a CPU without our AVX-512 kernels: every
     * call is OpenBLAS's, on one of our threads, and the cap has nothing
     * to cap. Said, so that a pass here is not read as more. */
    if (cpus > 1 && widest == 1)
        tap_diag("  no call asked OpenMP for more than one thread here: "
                 "the cap was not exercised");
    outputs_free(&o);
    fb_destroy(h);
}

/* Child: under an address-space limit (OMP_STACKSIZE=64M). */
static void memory_limit(void)
{
    const int cpus = cpus_now();
    /* The team the machine allows, once, without a limit: OpenBLAS's
     * per-thread buffers and the team's stacks are then mapped. */
    reference(cpus);
    fb_handle h = handle_on(FB_BACKEND_CPU);
    outputs o;
    outputs_make(&o);
    /* Room for a second copy of the outputs and the calls' workspace,
     * far short of a thousand 64 MiB stacks. */
    const long margin_kib = MARGIN_MIB * 1024L;
    const long vm = vm_size_kib();
    if (vm <= 0)
        tap_bail("cannot read VmSize");
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = (rlim_t)(vm + margin_kib) * 1024;
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        tap_bail("setrlimit(RLIMIT_AS) failed");
    tap_diag("RLIMIT_AS at %ld MiB: %ld mapped + %ld; the %d threads asked "
             "would need %ld MiB of stacks", (vm + margin_kib) / 1024,
             vm / 1024, margin_kib / 1024, REQUEST,
             (long)REQUEST * STACK_MIB);
    const long differ = fb_set_threads(h, REQUEST) == FB_STATUS_SUCCESS
                            ? against_reference(h, &o)
                            : -1;
    tap_ok(differ == 0, "under the limit, %d threads asked on %d CPUs: the "
           "calls %s, %s the bits of %d threads", REQUEST, cpus,
           differ < 0 ? "failed" : "succeeded",
           differ == 0 ? "with" : "without", cpus);
    outputs_free(&o);
    fb_destroy(h);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_thread_cap");
    make_data();
    if (phase != NULL) {
        if (tap_in_phase("handle") || tap_in_phase("omp-env") ||
            tap_in_phase("pinned"))
            requested(phase);
        else if (tap_in_phase("memory-limit"))
            memory_limit();
        else
            tap_bail("unknown phase %s", phase);
        return tap_end();
    }
    /* OpenMP's own limits out of the way, so that the library's cap is
     * what is tested. */
    const char *plain[] = {"OMP_THREAD_LIMIT", "OMP_NUM_THREADS",
                           "OMP_DYNAMIC", "FUSEDBLAS_BACKEND", NULL};
    const char *omp[] = {"OMP_THREAD_LIMIT", "OMP_NUM_THREADS=1000",
                         "OMP_DYNAMIC", "FUSEDBLAS_BACKEND", NULL};
    const char *stack[] = {"OMP_THREAD_LIMIT", "OMP_NUM_THREADS",
                           "OMP_DYNAMIC", "FUSEDBLAS_BACKEND",
                           "OMP_STACKSIZE=64M", NULL};
    tap_rerun("handle", plain, CHILD_SECONDS);
    tap_rerun("omp-env", omp, CHILD_SECONDS);
    if (cpus_now() > 1)
        tap_rerun("pinned", plain, CHILD_SECONDS);
    else
        tap_skip("pinned to one CPU: the process has only one");
    /* Meaningful where the threads past the CPUs' team need far more
     * than the margin. */
    if ((REQUEST - cpus_now()) * (long)STACK_MIB > 4L * MARGIN_MIB)
        tap_rerun("memory-limit", stack, CHILD_SECONDS);
    else
        tap_skip("memory limit: %d CPUs are too many for a limit between "
                 "their team and %d threads", cpus_now(), REQUEST);
    return tap_end();
}
