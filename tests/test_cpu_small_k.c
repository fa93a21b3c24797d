/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_small_k.c -- sgemm_bias_act on the CPU's small-k kernel
 * (lib/cpu/cpu_f32_small_k.c: op(B) read in place, the epilogue applied
 * to the register tile) against the double oracle with docs/DESIGN.md's fp32
 * bound, the path that ran asserted for every case:
 *  - FUSEDBLAS_CPU_SGEMM unset: the kernel is what auto picks for every
 *    k <= 512, whichever OpenBLAS core is in use;
 *  - shapes around the 32 x 12 register tile (ragged rows and columns,
 *    a short last column panel copied aside), k from 1 to 512, tiles
 *    split between threads, the seed's Linear (1024 x 32 -> 64); both
 *    layouts (bias along rows and along columns of the normalised C),
 *    all transpose pairs (op(B) read along and across k), padded leading
 *    dimensions, alpha != 1, beta != 0 (beta == 0 with C filled with NaN
 *    by the checker: C must not be read), every activation;
 *  - NaN and Inf in A and B go through as the oracle says;
 *  - k = 513 is not the kernel's; FUSEDBLAS_CPU_SGEMM=packed and
 *    =openblas send a k = 32 call elsewhere, and unset brings it back;
 *  - mlp_geglu_forward on the kernel (lib/cpu/cpu_f32_mlp_small_k.c)
 *    for k and h up to 512 and more than 32 rows: hidden widths around
 *    the 16-unit gate/up panels, row blocks of 96 and ragged token
 *    panels, every gate activation and bias pattern; h = 513 and
 *    FUSEDBLAS_CPU_SGEMM=packed go elsewhere.
 * On a CPU without AVX-512F (valgrind's too) the program skips.
 */
#define _GNU_SOURCE /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "mlp_check.h"
#include "packed_check.h"
#include "tap_child.h"

#define KERNEL_PATH "cpu/f32-small-k/"
#define MLP_PATH KERNEL_PATH "mlp/"

static const packed_paths paths = {KERNEL_PATH, "no other route"};

/* Shapes (m, n, k of the call), k <= 512. None is the decode form the
 * small-m kernel takes (n <= 32 tokens with m >= 48 after normalisation):
 * every pair has both sides > 32 or both < 48. */
static const int64_t shapes[][3] = {
    {1, 1, 1},       {7, 13, 3},     {33, 11, 2},    {12, 32, 64},
    {31, 47, 5},     {32, 12, 63},   {65, 35, 17},   {97, 37, 32},
    {257, 193, 31},  {40, 44, 33},   {1024, 64, 32}, {520, 410, 45},
    {36, 1000, 16},  {47, 25, 1},   {40, 44, 512},  {65, 35, 385},
    {300, 200, 256},
};

/* A k = 32 call goes where FUSEDBLAS_CPU_SGEMM=value says (the other
 * route, whose path contains other), then back to the kernel with the
 * variable unset. The library reads it once per process: value is tried
 * by a child, in phase env-route-<value>. */
static void env_route(const target *cpu, const char *value,
                      const char *other)
{
    char note[96], phase[64];
    snprintf(phase, sizeof phase, "env-route-%s", value);
    const packed_paths route = {KERNEL_PATH, other};
    gemm_case c = packed_case(FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                              FB_TRANS, 64, 48, 32);
    c.has_bias = 1;
    c.act = FB_ACT_GELU_TANH;
    snprintf(note, sizeof note, "FUSEDBLAS_CPU_SGEMM=%s", value);
    c.note = note;
    gemm_data d;
    gemm_data_make(&d, &c);
    if (tap_in_phase(phase)) {
        packed_run(cpu, &d, &route, 0);
        gemm_data_free(&d);
        return;
    }
    char set[96];
    snprintf(set, sizeof set, "FUSEDBLAS_CPU_SGEMM=%s", value);
    const char *env[] = {set, NULL};
    tap_rerun(phase, env, 300);
    d.c.note = "FUSEDBLAS_CPU_SGEMM unset again";
    packed_run(cpu, &d, &route, 1);
    gemm_data_free(&d);
}

/* k = 513, just past the kernel's range: right, and not on the kernel. */
static void past_the_range(const target *cpu)
{
    char label[256];
    gemm_case c = packed_case(FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                              FB_TRANS, 64, 48, 513);
    c.has_bias = 1;
    c.act = FB_ACT_SILU;
    c.note = "k = 513";
    gemm_data d;
    gemm_data_make(&d, &c);
    gemm_check(&d, cpu, 1, NULL);
    gemm_case_label(&d.c, label, sizeof label);
    const char *path = fb_handle_last_path(cpu->handle);
    tap_ok(!packed_on_kernel(cpu->handle, &paths),
           "path %s for %s (not " KERNEL_PATH ")", path, label);
    gemm_data_free(&d);
}

/* (m, k, h, n): m > 32 (up to there, the decode kernel's); h around the
 * 16-unit panels (1, 16, 45, 257, 512); more than one 96-row block; the
 * tiny MLP's 64 -> 256 -> 64. */
static void mlp_sweep(const target *cpu)
{
    static const int64_t mlp_shapes[][4] = {
        {33, 13, 45, 23},   {36, 2, 32, 32},    {97, 37, 257, 61},
        {200, 64, 300, 33}, {45, 7, 1, 3},      {75, 64, 16, 100},
        {130, 512, 512, 40}, {1000, 64, 256, 64}};
    packed_mlp_sweep(cpu, FB_DTYPE_F32, mlp_shapes,
                     (int)(sizeof mlp_shapes / sizeof mlp_shapes[0]),
                     MLP_PATH, 1);
}

/* h = 513, and FUSEDBLAS_CPU_SGEMM=packed (in a child: phase
 * mlp-packed): right, and not on the kernel; unset again: on it. */
static void mlp_elsewhere(const target *cpu)
{
    mlp_case c;
    mlp_data d;
    if (!tap_in_phase("mlp-packed")) {
        c = packed_mlp_case(FB_DTYPE_F32, 40, 24, 513, 20, FB_ACT_GELU_TANH,
                            MLP_ALL_BIASES, 1);
        mlp_data_make(&d, &c);
        packed_mlp_run(cpu, &d, MLP_PATH, 0);
        mlp_data_free(&d);
    }
    c = packed_mlp_case(FB_DTYPE_F32, 40, 24, 100, 20, FB_ACT_SILU,
                        MLP_ALL_BIASES, 1);
    mlp_data_make(&d, &c);
    if (tap_in_phase("mlp-packed")) {
        packed_mlp_run(cpu, &d, MLP_PATH, 0);
    } else {
        const char *env[] = {"FUSEDBLAS_CPU_SGEMM=packed", NULL};
        tap_rerun("mlp-packed", env, 300);
        packed_mlp_run(cpu, &d, MLP_PATH, 1);
    }
    mlp_data_free(&d);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_cpu_small_k");
    if (phase == NULL && unsetenv("FUSEDBLAS_CPU_SGEMM") != 0)
        tap_bail("unsetenv failed");
    target cpu = target_cpu();
    if (phase != NULL) {
        if (tap_in_phase("env-route-packed"))
            env_route(&cpu, "packed", "cpu/f32-avx512/");
        else if (tap_in_phase("env-route-openblas"))
            env_route(&cpu, "openblas", "/sgemm/");
        else if (tap_in_phase("mlp-packed"))
            mlp_elsewhere(&cpu);
        else
            tap_bail("unknown phase %s", phase);
        fb_destroy(cpu.handle);
        return tap_end();
    }
    packed_f32_skip_unless_kernel(&cpu, &paths);
    packed_sweep(&cpu, FB_DTYPE_F32, shapes,
                 (int)(sizeof shapes / sizeof shapes[0]), &paths, 1, 77);
    packed_special_inputs(&cpu, FB_DTYPE_F32, &paths);
    past_the_range(&cpu);
    env_route(&cpu, "packed", "cpu/f32-avx512/");
    env_route(&cpu, "openblas", "/sgemm/");
    mlp_sweep(&cpu);
    mlp_elsewhere(&cpu);
    fb_destroy(cpu.handle);
    return tap_end();
}
