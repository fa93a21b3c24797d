/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_loads_no_cuda.c -- a CPU call loads nothing of CUDA.
 *
 * Calls of every routine and data type on host data, on the cpu backend
 * (set on a handle, and by FUSEDBLAS_BACKEND=cpu for the NULL handle) and
 * under auto, each case in a fresh child process (tap_child.h) with
 * FUSEDBLAS_CUDA_MODULE as make check sets it (the build tree's module):
 * afterwards /proc/self/maps holds no fusedblas_cuda module, no
 * libcudart, no libcublas(Lt) and no libcuda. Where the module file
 * exists, fb_backend_available(FB_BACKEND_CUDA) then maps it, the witness
 * that the check sees a loaded module. The first call's time and the
 * resident memory before and after are printed as comments.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gemm_check.h"
#include "tap_child.h"

#define CHILD_SECONDS 120

static const char *const cuda_objects[] = {"fusedblas_cuda", "libcudart",
                                           "libcublas", "libcuda.so"};
#define N_CUDA_OBJECTS 4

/* The first of cuda_objects the process maps, or NULL. */
static const char *cuda_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        tap_bail("cannot read /proc/self/maps");
    char line[1024];
    const char *found = NULL;
    while (found == NULL && fgets(line, sizeof line, f) != NULL)
        for (int i = 0; i < N_CUDA_OBJECTS && found == NULL; i++)
            if (strstr(line, cuda_objects[i]) != NULL)
                found = cuda_objects[i];
    fclose(f);
    return found;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kib;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Every routine and type once, on h; the number of calls that failed. */
static int calls(fb_handle h)
{
    static const fb_dtype types[3] = {FB_DTYPE_F32, FB_DTYPE_F16,
                                      FB_DTYPE_BF16};
    /* Big enough for the largest operand below in any type. */
    float a[64], b[64], c[64], bias[8];
    int failed = 0;
    for (int t = 0; t < 3; t++) {
        memset(a, 0, sizeof a), memset(b, 0, sizeof b);
        memset(bias, 0, sizeof bias);
        failed += gemm_call(h, types[t], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                            4, 3, 5, 1.0f, a, 5, b, 5, 0.0f, c, 3, bias,
                            FB_ACT_GELU_TANH) != FB_STATUS_SUCCESS;
        failed += mlp_geglu_forward(h, types[t], FB_ACT_SILU, 3, 4, 5, 2, a,
                                    4, b, bias, b, bias, b, bias, c,
                                    2) != FB_STATUS_SUCCESS;
    }
    return failed;
}

/* Child: calls on the handle the phase says, then the maps. */
static void host_calls(const char *phase)
{
    fb_handle h = NULL;
    if (strcmp(phase, "cpu-handle") == 0)
        h = handle_on(FB_BACKEND_CPU);
    else if (strcmp(phase, "auto-handle") == 0)
        h = handle_on(FB_BACKEND_AUTO);
    /* cpu-env and auto-env: the NULL handle, backend from the
     * environment. */
    const long rss0 = rss_kib();
    const double t0 = now_ms();
    float a[4] = {1, 2, 3, 4}, c[4];
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2, NULL,
                                  FB_ACT_NONE);
    const double t1 = now_ms();
    const int failed = calls(h) + (st != FB_STATUS_SUCCESS);
    tap_diag("first call %.3f ms; resident memory %ld KiB before, %ld KiB "
             "after the calls", t1 - t0, rss0, rss_kib());
    const fb_backend ran = fb_handle_last_backend(h);
    const char *found = cuda_mapped();
    tap_ok(failed == 0 && ran == FB_BACKEND_CPU && found == NULL,
           "%s: 7 calls on host data (%d failed, last on %s); the process "
           "maps %s", phase, failed, fb_backend_name(ran),
           found ? found : "none of fusedblas_cuda, libcudart, libcublas, "
                           "libcuda");

    /* The witness: asking for CUDA loads the module, and the check above
     * would have seen it. */
    const char *module = getenv("FUSEDBLAS_CUDA_MODULE");
    if (module == NULL || access(module, R_OK) != 0) {
        tap_skip("no CUDA module at FUSEDBLAS_CUDA_MODULE=%s (a build "
                 "without CUDA)", module ? module : "(unset)");
    } else {
        const fb_status avail = fb_backend_available(FB_BACKEND_CUDA);
        found = cuda_mapped();
        tap_ok(found != NULL, "fb_backend_available(cuda) (%s) then loads "
               "the module: the process maps %s", fb_status_string(avail),
               found ? found : "nothing of CUDA");
    }
    fb_destroy(h);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_cpu_loads_no_cuda");
    if (phase != NULL) {
        host_calls(phase);
        return tap_end();
    }
    const char *cpu[] = {"FUSEDBLAS_BACKEND=cpu", NULL};
    const char *unset[] = {"FUSEDBLAS_BACKEND", NULL};
    tap_rerun("cpu-handle", unset, CHILD_SECONDS);
    tap_rerun("cpu-env", cpu, CHILD_SECONDS);
    tap_rerun("auto-handle", unset, CHILD_SECONDS);
    tap_rerun("auto-env", unset, CHILD_SECONDS);
    return tap_end();
}
