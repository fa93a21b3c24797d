/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rounding.c -- "rounded once", bit for bit, on the CPU: the
 * exact-result family of exact_gemm.h on backend cpu and on auto with
 * host memory (which may stage to a GPU where there is one: any backend
 * must give the same bits).
 *
 * FB_TEST_MAX_WORK=<n> caps the multiply-adds of a sampled case at n
 * instead of 2^26 (exact_sweep narrows n to fit). .ci/reliability.sh sets
 * it for its valgrind run only, where the full sweep is by far the
 * slowest program; make check, the sanitizer builds and the GPU machine
 * run the full sweep.
 */
#include <errno.h>
#include <stdlib.h>
#include "exact_gemm.h"

static int64_t max_work(void)
{
    const int64_t full = (int64_t)1 << 26;
    const char *env = getenv("FB_TEST_MAX_WORK");
    if (env == NULL || *env == '\0')
        return full;
    char *end;
    errno = 0;
    const long long v = strtoll(env, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > full)
        tap_bail("FB_TEST_MAX_WORK=%s: not a count from 1 to %lld", env,
                 (long long)full);
    tap_diag("FB_TEST_MAX_WORK=%lld: sampled cases capped at %lld "
             "multiply-adds (the full sweep: %lld)",
             v, v, (long long)full);
    return (int64_t)v;
}

int main(void)
{
    tap_begin("test_rounding");
    const int64_t work = max_work();
    exact_checker_can_fail();
    target t[2];
    t[0] = target_cpu();
    t[1] = t[0];
    t[1].name = "auto";
    t[1].handle = handle_on(FB_BACKEND_AUTO);
    t[1].expect = FB_BACKEND_AUTO;
    exact_sweep(t, 2, 8, work);
    fb_destroy(t[0].handle);
    fb_destroy(t[1].handle);
    return tap_end();
}
