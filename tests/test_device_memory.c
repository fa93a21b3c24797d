/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_device_memory.c -- how a call tells device memory from host memory,
 * on any machine: a stand-in CUDA driver (fake_libcuda.c, built as
 * libcuda.so) declares part of this program's own memory "device" or
 * "managed" memory.
 *
 * Each case runs in a child process (tap_child.h) whose
 * FUSEDBLAS_CUDA_MODULE names no file, so that the CUDA module can never
 * load there, whatever the build and the machine:
 *  - before any libcuda is loaded, every pointer is host memory;
 *  - with the stand-in loaded but not initialised (as a driver nobody
 *    called cuInit on), still host memory;
 *  - initialised: the cpu backend refuses an operand in device memory
 *    (and in managed memory) as INVALID_ARGUMENT at the operand's
 *    position, the lowest when several are, for every gemm and mlp
 *    operand, writing nothing; auto sends such a call to the GPU, which
 *    here is unavailable: BACKEND_UNAVAILABLE naming the argument, never
 *    the CPU reading device memory; host data still runs on the CPU;
 *  - a driver without devices: every pointer is host memory, and it is
 *    not asked about each;
 *  - the library never calls cuInit and never loads the module for this.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "tap_child.h"

#ifndef FB_FAKE_LIBCUDA
#error "FB_FAKE_LIBCUDA: the path of the build tree's stand-in libcuda.so"
#endif

#define CHILD_SECONDS 60

/* The stand-in driver's controls. */
static int *initialised, *devices;
static uintptr_t *device_lo, *device_hi, *managed_lo, *managed_hi;
static long *init_calls, *pointer_queries;

static void *control(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        tap_bail("%s: no %s", FB_FAKE_LIBCUDA, name);
    return p;
}

static void load_stand_in(void)
{
    void *lib = dlopen(FB_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        tap_bail("dlopen %s: %s", FB_FAKE_LIBCUDA, dlerror());
    initialised = control(lib, "fake_cuda_initialised");
    devices = control(lib, "fake_cuda_devices");
    device_lo = control(lib, "fake_cuda_device_lo");
    device_hi = control(lib, "fake_cuda_device_hi");
    managed_lo = control(lib, "fake_cuda_managed_lo");
    managed_hi = control(lib, "fake_cuda_managed_hi");
    init_calls = control(lib, "fake_cuda_init_calls");
    pointer_queries = control(lib, "fake_cuda_pointer_queries");
}

/* Whether the process maps an object whose path contains name. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        found |= strstr(line, name) != NULL;
    if (f != NULL)
        fclose(f);
    return found;
}

/* The "device" and "managed" memory: plain arrays of this program. */
static float device_mem[64], managed_mem[64];
static float host_a[16], host_b[16], host_bias[4];

static void declare_ranges(void)
{
    *device_lo = (uintptr_t)device_mem;
    *device_hi = (uintptr_t)(device_mem + 64);
    *managed_lo = (uintptr_t)managed_mem;
    *managed_hi = (uintptr_t)(managed_mem + 64);
}

/* A 2 x 2 x 2 sgemm with bias whose operands are host memory except those
 * named in which (bits: 1 A, 2 B, 4 C, 8 bias), taken from region (device
 * or managed memory). C (host or not) starts as -7: returns whether it
 * was left untouched in *untouched. */
static fb_status gemm_with(fb_handle h, unsigned which, float *region,
                           int *untouched)
{
    float host_c[4];
    const float *a = which & 1 ? region : host_a;
    const float *b = which & 2 ? region + 8 : host_b;
    float *c = which & 4 ? region + 16 : host_c;
    const float *bias = which & 8 ? region + 24 : host_bias;
    for (int i = 0; i < 4; i++)
        c[i] = -7;
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                                  2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, bias,
                                  FB_ACT_NONE);
    *untouched = c[0] == -7 && c[1] == -7 && c[2] == -7 && c[3] == -7;
    return st;
}

/* An mlp (m 1, k 2, h 2, n 2) with the operand at mlp position pos (8 X,
 * 10 Wg, 11 bg, 12 Wu, 13 bu, 14 Wd, 15 bd, 16 Y) in device memory. */
static fb_status mlp_with(fb_handle h, int pos, int *untouched)
{
    float x[2] = {1, 2}, w[3][4], bias[3][2], y[2] = {-7, -7};
    memset(w, 0, sizeof w);
    memset(bias, 0, sizeof bias);
    const void *X = x, *Wg = w[0], *bg = bias[0], *Wu = w[1], *bu = bias[1],
               *Wd = w[2], *bd = bias[2];
    void *Y = y;
    float *dev = device_mem + 32;
    for (int i = 0; i < 8; i++)
        dev[i] = -7;
    switch (pos) {
    case 8: X = dev; break;
    case 10: Wg = dev; break;
    case 11: bg = dev; break;
    case 12: Wu = dev; break;
    case 13: bu = dev; break;
    case 14: Wd = dev; break;
    case 15: bd = dev; break;
    case 16: Y = dev; break;
    }
    fb_status st = mlp_geglu_forward(h, FB_DTYPE_F32, FB_ACT_GELU_TANH, 1, 2,
                                     2, 2, X, 2, Wg, bg, Wu, bu, Wd, bd, Y, 2);
    *untouched = ((float *)Y)[0] == -7 && ((float *)Y)[1] == -7;
    return st;
}

/* Child: the stand-in driver through its states. */
static void stand_in(void)
{
    fb_handle cpu = handle_on(FB_BACKEND_CPU);
    fb_handle autoh = handle_on(FB_BACKEND_AUTO);
    int untouched;

    fb_status st = gemm_with(cpu, 1 | 4, device_mem, &untouched);
    tap_ok(st == FB_STATUS_SUCCESS,
           "no libcuda loaded: any pointer is host memory (cpu backend %s)",
           fb_status_string(st));

    load_stand_in();
    declare_ranges();
    st = gemm_with(cpu, 1 | 4, device_mem, &untouched);
    tap_ok(st == FB_STATUS_SUCCESS && *pointer_queries == 0,
           "libcuda loaded, not initialised: host memory (cpu backend %s, "
           "%ld pointer queries)", fb_status_string(st), *pointer_queries);

    *initialised = 1;
    static const struct {
        unsigned which;
        int pos;
    } gemm_cases[] = {{1, 9}, {2, 11}, {4, 14}, {8, 16}, {4 | 8, 14},
                      {2 | 4, 11}, {1 | 2 | 4 | 8, 9}};
    int ok = 1;
    for (size_t i = 0; i < sizeof gemm_cases / sizeof gemm_cases[0]; i++) {
        for (int region = 0; region < 2; region++) {
            st = gemm_with(cpu, gemm_cases[i].which,
                           region ? managed_mem : device_mem, &untouched);
            if (st != FB_STATUS_INVALID_ARGUMENT ||
                fb_handle_last_arg(cpu) != gemm_cases[i].pos || !untouched) {
                ok = 0;
                tap_diag("operands %#x in %s memory: %s, argument %d "
                         "(want %d), C %s", gemm_cases[i].which,
                         region ? "managed" : "device", fb_status_string(st),
                         fb_handle_last_arg(cpu), gemm_cases[i].pos,
                         untouched ? "untouched" : "written");
            }
        }
    }
    tap_ok(ok, "initialised: the cpu backend refuses sgemm_bias_act "
           "operands in device or managed memory at their position (the "
           "lowest), C untouched");

    ok = 1;
    static const int mlp_pos[] = {8, 10, 11, 12, 13, 14, 15, 16};
    for (size_t i = 0; i < sizeof mlp_pos / sizeof mlp_pos[0]; i++) {
        st = mlp_with(cpu, mlp_pos[i], &untouched);
        if (st != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_arg(cpu) != mlp_pos[i] || !untouched) {
            ok = 0;
            tap_diag("mlp operand %d in device memory: %s, argument %d",
                     mlp_pos[i], fb_status_string(st),
                     fb_handle_last_arg(cpu));
        }
    }
    st = mlp_with(cpu, 0, &untouched);
    tap_ok(ok && st == FB_STATUS_SUCCESS,
           "the cpu backend refuses each mlp_geglu_forward operand in device "
           "memory at its position, Y untouched; all on the host: %s",
           fb_status_string(st));

    st = gemm_with(autoh, 2, device_mem, &untouched);
    const char *msg = fb_handle_last_message(autoh);
    tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE && untouched &&
               strstr(msg, "argument 11 is device memory") != NULL,
           "auto with B in device memory and no CUDA module: %s, C "
           "untouched: \"%s\"", fb_status_string(st), msg);
    st = mlp_with(autoh, 16, &untouched);
    tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE && untouched,
           "auto with Y of an mlp in device memory: %s, Y untouched",
           fb_status_string(st));
    const long before = *pointer_queries;
    st = gemm_with(autoh, 0, device_mem, &untouched);
    tap_ok(st == FB_STATUS_SUCCESS &&
               fb_handle_last_backend(autoh) == FB_BACKEND_CPU &&
               *pointer_queries > before,
           "auto with host data: %s on %s, after asking the driver about "
           "%ld pointers", fb_status_string(st),
           fb_backend_name(fb_handle_last_backend(autoh)),
           *pointer_queries - before);

    tap_ok(*init_calls == 0 && !mapped("fusedblas_cuda"),
           "the library called cuInit %ld times and loaded no CUDA module",
           *init_calls);
    fb_destroy(cpu);
    fb_destroy(autoh);
}

/* Child: an initialised driver without devices. */
static void no_device(void)
{
    fb_handle cpu = handle_on(FB_BACKEND_CPU);
    load_stand_in();
    declare_ranges();
    *initialised = 1;
    *devices = 0;
    int untouched;
    fb_status st = gemm_with(cpu, 1 | 2 | 4 | 8, device_mem, &untouched);
    tap_ok(st == FB_STATUS_SUCCESS && *pointer_queries == 0 &&
               *init_calls == 0,
           "a driver with no device: host memory everywhere (cpu backend "
           "%s), %ld pointer queries, %ld cuInit calls", fb_status_string(st),
           *pointer_queries, *init_calls);
    fb_destroy(cpu);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_device_memory");
    for (int i = 0; i < 16; i++)
        host_a[i] = host_b[i] = 1.0f;
    if (phase != NULL) {
        if (tap_in_phase("stand-in"))
            stand_in();
        else if (tap_in_phase("no-device"))
            no_device();
        else
            tap_bail("unknown phase %s", phase);
        return tap_end();
    }
    const char *env[] = {
        "FUSEDBLAS_CUDA_MODULE=/nonexistent/fusedblas_cuda.so",
        "FUSEDBLAS_BACKEND", NULL};
    tap_rerun("stand-in", env, CHILD_SECONDS);
    tap_rerun("no-device", env, CHILD_SECONDS);
    return tap_end();
}
