/*
 * test_thread_cap.c -- a thread count beyond what the machine can run is
 * capped, never handed to OpenMP as it is (libgomp ends the process when
 * it cannot create the threads).
 *
 * Each case runs in a child process (tap_child.h), whose threads can be
 * counted (/proc/self/task) and whose limits can be set without touching
 * the rest of the run. The calls are an sgemm_bias_act of 2^30 flops and
 * an fp32 mlp_geglu_forward of 1.3 * 2^30, enough for the library to want
 * a thousand threads. Each result must be bit-identical to the same call
 * asked for as many threads as the process has CPUs, the count the cap
 * gives (on OpenBLAS's paths the bits depend on the thread count: its
 * calls are split by thread).
 *  - fb_set_threads(h, 1000): the calls succeed, with the same bits, and
 *    the process then runs no more threads than CPUs it may use (+1);
 *  - OMP_NUM_THREADS=1000 and no count on the handle: the same;
 *  - the process pinned to one CPU (sched_setaffinity): one thread, and
 *    the bits of one thread;
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
#include "harness.h"
#include "tap_child.h"

#define CHILD_SECONDS 300
#define REQUEST 1000
#define STACK_MIB 64  /* OMP_STACKSIZE in phase memory-limit */
#define MARGIN_MIB 512 /* address space left free under the limit */

/* sgemm 1024 x 1024 x 512; mlp 512 x 512 -> 1024 -> 256. */
enum { GM = 1024, GN = 1024, GK = 512, XM = 512, XK = 512, XH = 1024,
       XN = 256 };

static float *ga, *gb, *gbias, *x, *wg, *wu, *wd, *bh, *bn;

static float *filled(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (p == NULL)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rng_value(FB_DTYPE_F32);
    return p;
}

static void make_data(void)
{
    ga = filled((size_t)GM * GK), gb = filled((size_t)GK * GN);
    gbias = filled(GN);
    x = filled((size_t)XM * XK), wg = filled((size_t)XH * XK);
    wu = filled((size_t)XH * XK), wd = filled((size_t)XN * XH);
    bh = filled(XH), bn = filled(XN);
}

/* Both calls on h into c (GM * GN) and y (XM * XN); 0 if both succeed. */
static int run(fb_handle h, float *c, float *y)
{
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  GM, GN, GK, 1.0f, ga, GK, gb, GN, 0.0f, c,
                                  GN, gbias, FB_ACT_GELU_TANH);
    if (st != FB_STATUS_SUCCESS) {
        tap_diag("sgemm_bias_act: %s", fb_handle_last_message(h));
        return 1;
    }
    st = mlp_geglu_forward(h, FB_DTYPE_F32, FB_ACT_GELU_TANH, XM, XK, XH, XN,
                           x, XK, wg, bh, wu, bh, wd, bn, y, XN);
    if (st != FB_STATUS_SUCCESS) {
        tap_diag("mlp_geglu_forward: %s", fb_handle_last_message(h));
        return 1;
    }
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

/* The reference: the same calls asked for threads threads. */
static float *ref_c, *ref_y;

static void reference(int threads)
{
    fb_handle h = handle_on(FB_BACKEND_CPU);
    ref_c = malloc((size_t)GM * GN * sizeof *ref_c);
    ref_y = malloc((size_t)XM * XN * sizeof *ref_y);
    if (ref_c == NULL || ref_y == NULL ||
        fb_set_threads(h, threads) != FB_STATUS_SUCCESS ||
        run(h, ref_c, ref_y))
        tap_bail("the reference on %d threads failed", threads);
    fb_destroy(h);
}

/* Runs the calls on h and checks them against the reference: the number
 * of outputs that differ in their bits, or -1 if a call failed. */
static long against_reference(fb_handle h)
{
    float *c = malloc((size_t)GM * GN * sizeof *c);
    float *y = malloc((size_t)XM * XN * sizeof *y);
    if (c == NULL || y == NULL)
        tap_bail("out of memory");
    long differ = -1;
    if (run(h, c, y) == 0)
        differ = (long)(memcmp(c, ref_c, (size_t)GM * GN * sizeof *c) != 0) +
                 (long)(memcmp(y, ref_y, (size_t)XM * XN * sizeof *y) != 0);
    free(c);
    free(y);
    return differ;
}

/* Child: the handle asks for REQUEST threads (or, in phase omp-env, the
 * handle asks for none and OMP_NUM_THREADS says REQUEST). */
static void requested(const char *phase)
{
    const int cpus = cpus_now();
    reference(cpus);
    fb_handle h = handle_on(FB_BACKEND_CPU);
    const fb_status set = strcmp(phase, "omp-env") == 0
                              ? FB_STATUS_SUCCESS
                              : fb_set_threads(h, REQUEST);
    const long differ = set == FB_STATUS_SUCCESS ? against_reference(h) : -1;
    const int threads = threads_now();
    tap_ok(differ == 0 && threads <= cpus + 1,
           "%s: %d threads asked, %d CPUs: the calls %s, %s the bits of %d "
           "threads; the process runs %d threads", phase, REQUEST, cpus,
           differ < 0 ? "failed" : "succeeded",
           differ == 0 ? "with" : "without", cpus, threads);
    fb_destroy(h);
}

/* Child: the same, pinned to one CPU. */
static void pinned(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        tap_bail("sched_getaffinity failed");
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &all))
        first++;
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        tap_bail("sched_setaffinity failed");
    reference(1);
    fb_handle h = handle_on(FB_BACKEND_CPU);
    const long differ = fb_set_threads(h, REQUEST) == FB_STATUS_SUCCESS
                            ? against_reference(h)
                            : -1;
    const int threads = threads_now();
    tap_ok(differ == 0 && threads == 1,
           "pinned to CPU %d: %d threads asked; the calls %s, %s the "
           "one-thread bits; the process runs %d threads (want 1)", first,
           REQUEST, differ < 0 ? "failed" : "succeeded",
           differ == 0 ? "with" : "without", threads);
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
                            ? against_reference(h)
                            : -1;
    tap_ok(differ == 0, "under the limit, %d threads asked on %d CPUs: the "
           "calls %s, %s the bits of %d threads", REQUEST, cpus,
           differ < 0 ? "failed" : "succeeded",
           differ == 0 ? "with" : "without", cpus);
    fb_destroy(h);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_thread_cap");
    make_data();
    if (phase != NULL) {
        if (tap_in_phase("handle") || tap_in_phase("omp-env"))
            requested(phase);
        else if (tap_in_phase("pinned"))
            pinned();
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
