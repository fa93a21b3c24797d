/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_host_no_context.c -- on a machine with a GPU, calls on host data
 * create no CUDA context and load no CUDA library of fusedblas's, while
 * device memory is still told apart.
 *
 * The program talks to the CUDA driver itself, through dlopen of
 * libcuda.so.1 and only the driver API (no CUDA runtime, which would make
 * a context): cuInit, then cuDevicePrimaryCtxGetState on every device,
 * which reads the primary context's state without creating it. Since the
 * driver is then loaded and initialised, the library asks it about every
 * host pointer (lib/common/device_memory.c), so the check covers that
 * query too:
 *  - calls of every routine and type on host data, under auto (a handle,
 *    and the NULL handle) and on the cpu backend: each succeeds on the
 *    CPU, no device's primary context becomes active, and the process maps
 *    no fusedblas_cuda module, libcudart or libcublas;
 *  - then with device memory from cuMemAlloc (in the primary context,
 *    which the program makes current): the cpu backend refuses a device
 *    operand at its position, from this thread and from a thread with no
 *    current context, still without the module; auto runs the call on
 *    the GPU (with the module; BACKEND_UNAVAILABLE where the build has
 *    none), with the right result.
 * Prints "1..0 # SKIP no CUDA device" where there is no driver or device.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gemm_check.h"

/* The driver API's few types (cuda.h), declared here so that the test
 * builds without the CUDA toolkit. */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;
typedef unsigned long long cu_deviceptr;

static cu_result (*cu_init)(unsigned int);
static cu_result (*cu_device_get_count)(int *);
static cu_result (*cu_device_get)(cu_device *, int);
static cu_result (*cu_primary_state)(cu_device, unsigned int *, int *);
static cu_result (*cu_primary_retain)(cu_context *, cu_device);
static cu_result (*cu_primary_release)(cu_device);
static cu_result (*cu_ctx_set_current)(cu_context);
static cu_result (*cu_mem_alloc)(cu_deviceptr *, size_t);
static cu_result (*cu_mem_free)(cu_deviceptr);
static cu_result (*cu_htod)(cu_deviceptr, const void *, size_t);
static cu_result (*cu_dtoh)(void *, cu_deviceptr, size_t);

static int ndevices;

/* Looks up name in lib into *fn (a function pointer of any type). */
static int find(void *lib, const char *name, void *fn)
{
    void *p = dlsym(lib, name);
    if (p != NULL)
        memcpy(fn, &p, sizeof p);
    return p != NULL;
}

static void driver_or_skip(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        tap_skip_all("no CUDA device (no libcuda.so.1)");
    if (!find(lib, "cuInit", &cu_init) ||
        !find(lib, "cuDeviceGetCount", &cu_device_get_count) ||
        !find(lib, "cuDeviceGet", &cu_device_get) ||
        !find(lib, "cuDevicePrimaryCtxGetState", &cu_primary_state) ||
        !find(lib, "cuDevicePrimaryCtxRetain", &cu_primary_retain) ||
        !find(lib, "cuDevicePrimaryCtxRelease_v2", &cu_primary_release) ||
        !find(lib, "cuCtxSetCurrent", &cu_ctx_set_current) ||
        !find(lib, "cuMemAlloc_v2", &cu_mem_alloc) ||
        !find(lib, "cuMemFree_v2", &cu_mem_free) ||
        !find(lib, "cuMemcpyHtoD_v2", &cu_htod) ||
        !find(lib, "cuMemcpyDtoH_v2", &cu_dtoh))
        tap_skip_all("no CUDA device (libcuda.so.1 lacks a function)");
    if (cu_init(0) != 0 || cu_device_get_count(&ndevices) != 0 ||
        ndevices < 1)
        tap_skip_all("no CUDA device");
}

/* The first device whose primary context is active, or -1. */
static int active_context(void)
{
    for (int i = 0; i < ndevices; i++) {
        cu_device d;
        unsigned int flags = 0;
        int active = 0;
        if (cu_device_get(&d, i) != 0 ||
            cu_primary_state(d, &flags, &active) != 0)
            tap_bail("cuDevicePrimaryCtxGetState(%d) failed", i);
        if (active)
            return i;
    }
    return -1;
}

/* The first of fusedblas's CUDA libraries the process maps, or NULL. */
static const char *cuda_mapped(void)
{
    static const char *const names[] = {"fusedblas_cuda", "libcudart",
                                        "libcublas"};
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        tap_bail("cannot read /proc/self/maps");
    char line[1024];
    const char *found = NULL;
    while (found == NULL && fgets(line, sizeof line, f) != NULL)
        for (int i = 0; i < 3 && found == NULL; i++)
            if (strstr(line, names[i]) != NULL)
                found = names[i];
    fclose(f);
    return found;
}

/* Every routine and type on host data; the calls that failed or did not
 * run on the CPU. */
static int host_calls(fb_handle h)
{
    static const fb_dtype types[3] = {FB_DTYPE_F32, FB_DTYPE_F16,
                                      FB_DTYPE_BF16};
    float a[64], b[64], c[64], bias[8];
    memset(a, 0, sizeof a), memset(b, 0, sizeof b);
    memset(bias, 0, sizeof bias);
    int bad = 0;
    for (int t = 0; t < 3; t++) {
        bad += gemm_call(h, types[t], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 4,
                         3, 5, 1.0f, a, 5, b, 5, 0.0f, c, 3, bias,
                         FB_ACT_GELU_TANH) != FB_STATUS_SUCCESS ||
               fb_handle_last_backend(h) != FB_BACKEND_CPU;
        bad += mlp_geglu_forward(h, types[t], FB_ACT_SILU, 3, 4, 5, 2, a, 4,
                                 b, bias, b, bias, b, bias, c,
                                 2) != FB_STATUS_SUCCESS ||
               fb_handle_last_backend(h) != FB_BACKEND_CPU;
    }
    return bad;
}

static void host_data(void)
{
    const int before = active_context();
    if (before >= 0)
        tap_bail("device %d's primary context is active before any call",
                 before);
    fb_handle autoh = handle_on(FB_BACKEND_AUTO);
    fb_handle cpu = handle_on(FB_BACKEND_CPU);
    const struct {
        const char *name;
        fb_handle h;
    } cases[] = {{"auto", autoh}, {"the NULL handle (auto)", NULL},
                 {"cpu", cpu}};
    for (int i = 0; i < 3; i++) {
        const int bad = host_calls(cases[i].h);
        const int active = active_context();
        const char *found = cuda_mapped();
        tap_ok(bad == 0 && active < 0 && found == NULL,
               "%s: 6 calls on host data, %d failed or left the CPU; "
               "active primary context: %s%s; fusedblas's CUDA libraries "
               "mapped: %s", cases[i].name, bad,
               active < 0 ? "none" : "device ",
               active < 0 ? "" : (active == 0 ? "0" : "> 0"),
               found ? found : "none");
    }
    fb_destroy(autoh);
    fb_destroy(cpu);
}

/* A call on the cpu backend with C in device memory, from a thread with
 * no current context. */
static void *other_thread(void *arg)
{
    float *dc = arg;
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    fb_handle h = handle_on(FB_BACKEND_CPU);
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, dc, 2,
                                  NULL, FB_ACT_NONE);
    intptr_t ok = st == FB_STATUS_INVALID_ARGUMENT &&
                  fb_handle_last_arg(h) == 14;
    fb_destroy(h);
    return (void *)ok;
}

static void device_data(void)
{
    cu_device dev;
    cu_context ctx;
    if (cu_device_get(&dev, 0) != 0 || cu_primary_retain(&ctx, dev) != 0 ||
        cu_ctx_set_current(ctx) != 0)
        tap_bail("cannot make device 0's primary context current");
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    const float poison[4] = {-7, -7, -7, -7};
    cu_deviceptr da, db, dc;
    if (cu_mem_alloc(&da, sizeof a) != 0 || cu_mem_alloc(&db, sizeof b) != 0 ||
        cu_mem_alloc(&dc, sizeof a) != 0 || cu_htod(da, a, sizeof a) != 0 ||
        cu_htod(db, b, sizeof b) != 0 ||
        cu_htod(dc, poison, sizeof poison) != 0)
        tap_bail("cuMemAlloc / cuMemcpyHtoD failed");
    const float *A = (const float *)(uintptr_t)da;
    const float *B = (const float *)(uintptr_t)db;
    float *C = (float *)(uintptr_t)dc;
    float host_c[4];

    fb_handle cpu = handle_on(FB_BACKEND_CPU);
    fb_status st = sgemm_bias_act(cpu, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  2, 2, 2, 1.0f, A, 2, b, 2, 0.0f, host_c, 2,
                                  NULL, FB_ACT_NONE);
    const char *found = cuda_mapped();
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(cpu) == 9 &&
               found == NULL,
           "cpu backend, A in device memory: %s at argument %d; fusedblas's "
           "CUDA libraries mapped: %s", fb_status_string(st),
           fb_handle_last_arg(cpu), found ? found : "none");
    fb_destroy(cpu);

    pthread_t t;
    void *ok = NULL;
    if (pthread_create(&t, NULL, other_thread, C) != 0 ||
        pthread_join(t, &ok) != 0)
        tap_bail("pthread_create failed");
    tap_ok(ok != NULL, "the same from a thread with no current context (C "
           "in device memory): refused at argument 14");

    fb_handle autoh = handle_on(FB_BACKEND_AUTO);
    st = sgemm_bias_act(autoh, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2,
                        2, 1.0f, A, 2, B, 2, 0.0f, C, 2, NULL, FB_ACT_NONE);
    float back[4] = {0, 0, 0, 0};
    if (cu_dtoh(back, dc, sizeof back) != 0)
        tap_bail("cuMemcpyDtoH failed");
    const char *module = getenv("FUSEDBLAS_CUDA_MODULE");
    const int have_module = module == NULL || access(module, R_OK) == 0;
    const fb_backend ran = fb_handle_last_backend(autoh);
    if (have_module)
        tap_ok(st == FB_STATUS_SUCCESS && ran != FB_BACKEND_CPU &&
                   back[0] == 1 && back[1] == 2 && back[2] == 3 &&
                   back[3] == 4,
               "auto with device data: %s on %s (%s), C = [%g %g; %g %g]",
               fb_status_string(st), fb_backend_name(ran),
               fb_handle_last_path(autoh), back[0], back[1], back[2],
               back[3]);
    else
        tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE && back[0] == -7,
               "auto with device data and no CUDA module in this build: %s, "
               "C untouched", fb_status_string(st));
    fb_destroy(autoh);
    cu_mem_free(da), cu_mem_free(db), cu_mem_free(dc);
    cu_primary_release(dev);
}

int main(void)
{
    tap_begin("test_gpu_host_no_context");
    driver_or_skip();
    tap_diag("%d CUDA device(s)", ndevices);
    host_data();
    device_data();
    return tap_end();
}
