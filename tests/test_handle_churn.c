/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_handle_churn.c -- creating and destroying ten thousand handles, with
 * calls on each, leaves memory where it started; so do a few hundred
 * threads whose default handles die with them.
 *
 * Memory is measured as glibc's bytes in use (mallinfo2's uordblks, summed
 * over every arena, plus hblkhd, the large blocks malloc mmap()s) after a
 * warm-up that makes everything the library and OpenBLAS create once per
 * process. glibc's per-thread cache (tcache) keeps up to 7 freed chunks of
 * each small size and counts them as in use, which would blur the
 * measure by up to a few hundred KiB: the program runs itself again with
 * the cache off (GLIBC_TUNABLES=glibc.malloc.tcache_count=0), and the
 * unrelated allocations it makes between handles are larger than any
 * cached size anyway (if the cache cannot be turned off, the measurement
 * is skipped). Slack: SLACK bytes, for the one thing that may legitimately
 * differ, the table of the handle registry, resized for the handles alive
 * at its last rebuild (2 KiB for the 33 alive here), and malloc's own
 * bookkeeping; a leak of one byte per handle exceeds it (a registry that
 * doubled at every rebuild grew by 16 KB here).
 *
 * Under ASan, TSan or valgrind malloc is replaced and these statistics are
 * not kept; the test sees that (a block it allocates does not show) and
 * skips the measurement, leaving leaks to LeakSanitizer and valgrind's leak
 * check, which .ci/reliability.sh runs this program under.
 */
#define _GNU_SOURCE /* setenv */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define HANDLES 10000
#define LIVE 32        /* handles alive at once, in a ring */
#define THREADS 200
#define SLACK (8 * 1024)

/* ---- measuring ------------------------------------------------------------- */

/* Bytes in allocated chunks plus those in mmap()ed blocks (large ones). */
static size_t in_use(void)
{
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Whether mallinfo2 sees this process's allocations. */
static int malloc_stats_work(void)
{
    const size_t before = in_use();
    void *volatile p = malloc(256 * 1024);
    if (p == NULL)
        tap_bail("out of host memory");
    memset(p, 1, 256 * 1024);
    const size_t during = in_use();
    free(p);
    return during >= before + 256 * 1024;
}

/* ---- the calls made on each handle ------------------------------------------ */

/* Operands for the small calls: float storage, aligned for every type. */
static float A[64], B[64], bias[8], C[64], X[64], W[3][64], Y[64];

static void fill_operands(void)
{
    for (int i = 0; i < 64; i++) {
        A[i] = (float)rng_value(FB_DTYPE_F32);
        B[i] = (float)rng_value(FB_DTYPE_F32);
        X[i] = (float)rng_value(FB_DTYPE_F32);
        for (int w = 0; w < 3; w++)
            W[w][i] = (float)rng_value(FB_DTYPE_F32);
    }
    for (int i = 0; i < 8; i++)
        bias[i] = (float)rng_value(FB_DTYPE_F32);
}

/* One fp32 gemm, one bf16 gemm (which takes a workspace from the handle)
 * and one fp16 MLP (a larger workspace): 3 calls. Returns how many did not
 * succeed. */
static int use(fb_handle h)
{
    int bad = 0;
    bad += sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 8, 8, 8,
                          1.0f, A, 8, B, 8, 0.0f, C, 8, bias,
                          FB_ACT_GELU_TANH) != FB_STATUS_SUCCESS;
    /* bf16 and fp16 reinterpret the float arrays' bits: any values do. */
    bad += bgemm_bias_act(h, FB_COL_MAJOR, FB_TRANS, FB_NO_TRANS, 8, 8, 8,
                          0.5f, (const fb_bfloat16 *)A, 8,
                          (const fb_bfloat16 *)B, 8, 0.0f, (fb_bfloat16 *)C,
                          8, NULL, FB_ACT_RELU) != FB_STATUS_SUCCESS;
    bad += mlp_geglu_forward(h, FB_DTYPE_F16, FB_ACT_SILU, 4, 8, 16, 8, X, 8,
                             W[0], NULL, W[1], NULL, W[2], bias, Y,
                             8) != FB_STATUS_SUCCESS;
    return bad;
}

/* Make, configure, use and destroy n handles, LIVE alive at a time, with
 * unrelated allocations of varying sizes in between so that handles do
 * not all land at the same few addresses. Returns the failures. */
static int churn(int n, int *calls)
{
    fb_handle ring[LIVE] = {0};
    void *noise[LIVE] = {0};
    int failures = 0;
    for (int i = 0; i < n; i++) {
        const int slot = i % LIVE;
        if (ring[slot] != NULL)
            failures += fb_destroy(ring[slot]) != FB_STATUS_SUCCESS;
        free(noise[slot]);
        /* Above glibc's largest cached size (1032 bytes): see the top. */
        noise[slot] = malloc(1100 + (size_t)rng_below(3000));
        if (fb_create(&ring[slot]) != FB_STATUS_SUCCESS) {
            ring[slot] = NULL;
            failures++;
            continue;
        }
        failures += fb_set_backend(ring[slot], FB_BACKEND_CPU) !=
                    FB_STATUS_SUCCESS;
        failures += fb_set_threads(ring[slot], 1) != FB_STATUS_SUCCESS;
        failures += use(ring[slot]);
        *calls += 3;
    }
    for (int s = 0; s < LIVE; s++) {
        if (ring[s] != NULL)
            failures += fb_destroy(ring[s]) != FB_STATUS_SUCCESS;
        free(noise[s]);
    }
    return failures;
}

/* ---- threads whose default handle dies with them ------------------------------- */

static void *thread_call(void *arg)
{
    int *failed = arg;
    *failed = fb_set_backend(NULL, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
              fb_set_threads(NULL, 1) != FB_STATUS_SUCCESS || use(NULL) != 0;
    return NULL;
}

/* Start and join threads one after another (their default handles are
 * freed by the thread-exit destructor). Returns the failures. */
static int thread_churn(int n)
{
    int failures = 0;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        int failed = 1;
        if (pthread_create(&t, NULL, thread_call, &failed) != 0)
            tap_bail("pthread_create failed");
        pthread_join(t, NULL);
        failures += failed;
    }
    return failures;
}

/* Run this program again with glibc's tcache off, once: only where
 * glibc's own malloc is in use (not under a sanitizer or valgrind, which
 * keep no such statistics, and which a new process would escape). */
static void again_without_tcache(char **argv)
{
    static const char tunable[] = "glibc.malloc.tcache_count=0";
    const char *t = getenv("GLIBC_TUNABLES");
    if (t != NULL && strstr(t, tunable) != NULL)
        return;
    char value[512];
    snprintf(value, sizeof value, "%s%s%s", t ? t : "", t ? ":" : "",
             tunable);
    if (setenv("GLIBC_TUNABLES", value, 1) == 0)
        execv("/proc/self/exe", argv);
    /* No exec: the caller sees the cache still on and skips measuring. */
}

static int tcache_off(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    return t != NULL && strstr(t, "glibc.malloc.tcache_count=0") != NULL;
}

int main(int argc, char **argv)
{
    (void)argc;
    if (malloc_stats_work())
        again_without_tcache(argv);
    const int stats = malloc_stats_work() && tcache_off();
    tap_begin("test_handle_churn");
    fill_operands();
    int failed = 0;

    /* Warm-up: the registry, this thread's default handle, the CUDA
     * module probe, OpenBLAS's buffers, a first thread and its arena. */
    int calls = 0;
    int failures = churn(2 * LIVE, &calls) + use(NULL) + thread_churn(2);
    failed += !tap_ok(failures == 0, "warm-up: %d calls on %d handles, %d failures",
           calls, 2 * LIVE, failures);

    const size_t before = in_use();
    calls = 0;
    failures = churn(HANDLES, &calls);
    const size_t after = in_use();
    failed += !tap_ok(failures == 0, "%d handles created, used (%d calls) and "
           "destroyed: %d failures", HANDLES, calls, failures);
    if (stats)
        failed += !tap_ok(after <= before + SLACK, "memory in use after %d "
                          "handles: %zu bytes before, %zu after (slack %d)",
                          HANDLES, before, after, SLACK);
    else
        tap_skip("exact malloc statistics not available (ASan, TSan or "
                 "valgrind, whose leak checkers cover this; or glibc's "
                 "tcache could not be turned off)");

    const size_t tbefore = in_use();
    failures = thread_churn(THREADS);
    const size_t tafter = in_use();
    failed += !tap_ok(failures == 0, "%d threads, each with calls on its NULL default "
           "handle: %d failures", THREADS, failures);
    if (stats)
        failed += !tap_ok(tafter <= tbefore + SLACK, "memory in use after %d threads' "
               "default handles: %zu bytes before, %zu after (slack %d)",
               THREADS, tbefore, tafter, SLACK);
    else
        tap_skip("exact malloc statistics not available");

    /* A destroyed handle is refused, not used: no use-after-free, no
     * double free (ASan and valgrind watch this). */
    fb_handle h;
    if (fb_create(&h) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    const int destroyed = fb_destroy(h) == FB_STATUS_SUCCESS;
    const fb_status again = fb_destroy(h);
    const fb_status call = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS,
                                          FB_NO_TRANS, 2, 2, 2, 1.0f, A, 2, B,
                                          2, 0.0f, C, 2, NULL, FB_ACT_NONE);
    failed += !tap_ok(destroyed && again == FB_STATUS_INVALID_ARGUMENT &&
               call == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(h) == 1,
           "a destroyed handle: destroy again %s, a call %s (argument %d)",
           fb_status_string(again), fb_status_string(call),
           fb_handle_last_arg(h));
    tap_end();
    return failed ? 1 : 0;
}
