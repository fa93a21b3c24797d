/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_f32_kernel.c -- sgemm_bias_act on the CPU's AVX-512F fp32
 * kernel (lib/cpu/cpu_f32_gemm.c) against the double oracle, with
 * docs/DESIGN.md's fp32 bound, and the path that ran asserted for every case
 * (so that a kernel silently not used fails here):
 *  - FUSEDBLAS_CPU_SGEMM=packed is set by the program: the kernel runs
 *    whichever OpenBLAS core is in use, and also for k <= 64 (where
 *    auto and own take the small-k kernel: test_cpu_small_k's);
 *  - shapes around the 32 x 12 register block, the 256 x 192 blocks of C
 *    and the k chunks (up to 384); odd k; both layouts (bias along rows
 *    and along columns of the normalised C), all transpose pairs, padded
 *    leading dimensions, alpha != 1, beta != 0 (beta == 0 with C filled
 *    with NaN by the checker: C must not be read), every activation;
 *  - NaN and Inf in A and B go through as the oracle says;
 *  - FUSEDBLAS_CPU_SGEMM=openblas sends the call to OpenBLAS, packed
 *    keeps it on the kernel (the library reads the variable once per
 *    process: other values run in children, tap_child.h);
 *  - mlp_geglu_forward's fp32 prefill path on the kernel (when it is
 *    there: cpu_mlp.c) over row blocks and hidden chunks with ragged
 *    edges, every gate and bias pattern; the same shapes under
 *    FUSEDBLAS_CPU_SGEMM=openblas on OpenBLAS's path (which auto no
 *    longer takes where AVX-512F runs); and auto, with k and h past the
 *    small-k kernel's, on the kernel;
 *  - the MLP's two forms (row blocks; the threads splitting the hidden
 *    width) give the same bits: one thread against two.
 * On a CPU without AVX-512F (valgrind's too) the program skips.
 */
#define _GNU_SOURCE /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "mlp_check.h"
#include "oracle.h"
#include "packed_check.h"
#include "tap_child.h"

#define KERNEL_PATH "cpu/f32-avx512/"
#define OPENBLAS_PATH "/sgemm/"

static const packed_paths paths = {KERNEL_PATH, OPENBLAS_PATH};

/* Shapes (m, n, k of the call). None is the decode form the small-m
 * kernel takes (n <= 32 tokens with m >= 48 after normalisation): every
 * pair has both sides > 32 or both < 48. Around 32 and 12 (the register
 * block), 256 and 192 (a block of C; with two threads the split may
 * shorten it), 384 (a k chunk; 385 and 769 split into equal chunks). */
static const int64_t shapes[][3] = {
    {1, 1, 1},      {7, 13, 3},     {33, 11, 2},     {12, 32, 64},
    {31, 47, 5},    {32, 12, 65},   {65, 35, 17},    {97, 37, 128},
    {257, 193, 31}, {289, 205, 40}, {40, 30, 383},   {33, 23, 384},
    {17, 47, 385},  {36, 26, 769},  {300, 200, 600}, {520, 410, 45},
};

/* FUSEDBLAS_CPU_SGEMM=openblas (in a child: phase env-switch), then
 * packed. */
static void env_switch(const target *cpu)
{
    packed_env_switch(cpu, FB_DTYPE_F32, "FUSEDBLAS_CPU_SGEMM", "openblas",
                      "packed", &paths);
}

/* (m, k, h, n) around the 12-row panels and 96-row blocks of X, the
 * 32-row panels and 256-wide chunks of the hidden width, the 384-deep k
 * chunks, odd k and h; with two threads, up to 256 rows in the
 * hidden-split form, 301 rows in row blocks. m > 32 (up to there, the
 * decode kernel's). */
static const int64_t mlp_shapes[][4] = {
    {33, 13, 45, 23},   {36, 2, 32, 32},   {97, 37, 257, 61},
    {200, 64, 300, 33}, {40, 385, 70, 40}, {193, 100, 513, 97},
    {45, 7, 1, 3},      {301, 40, 300, 33}};
#define N_MLP_SHAPES ((int)(sizeof mlp_shapes / sizeof mlp_shapes[0]))

/* The kernel as forced by the program, OpenBLAS's path when asked for,
 * and the kernel again by auto's own choice (k 600 and h 700 are past
 * the small-k MLP's; 130 rows are 11 panels, taken 3, 2, 2, 2, 2). The
 * library reads FUSEDBLAS_CPU_SGEMM once per process: the last two run
 * in children (phases mlp-openblas and mlp-auto). */
static void mlp_sweep(const target *cpu)
{
    static const int64_t auto_shape[][4] = {{130, 600, 700, 50}};
    if (tap_in_phase("mlp-openblas")) {
        packed_mlp_sweep(cpu, FB_DTYPE_F32, mlp_shapes, N_MLP_SHAPES,
                         KERNEL_PATH "mlp-", 0);
        return;
    }
    if (tap_in_phase("mlp-auto")) {
        packed_mlp_sweep(cpu, FB_DTYPE_F32, auto_shape, 1,
                         KERNEL_PATH "mlp-", 1);
        return;
    }
    packed_mlp_sweep(cpu, FB_DTYPE_F32, mlp_shapes, N_MLP_SHAPES,
                     KERNEL_PATH "mlp-", 1);
    const char *openblas[] = {"FUSEDBLAS_CPU_SGEMM=openblas", NULL};
    tap_rerun("mlp-openblas", openblas, 300);
    const char *unset[] = {"FUSEDBLAS_CPU_SGEMM", NULL};
    tap_rerun("mlp-auto", unset, 300);
}

/* One MLP on a handle of `threads` threads: its Y (a copy the caller
 * frees) and the path that ran. */
static unsigned char *mlp_on_threads(const mlp_data *d, int threads,
                                     char *path, size_t len)
{
    fb_handle h = NULL;
    if (fb_create(&h) != FB_STATUS_SUCCESS ||
        fb_set_backend(h, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
        fb_set_threads(h, threads) != FB_STATUS_SUCCESS)
        tap_bail("a handle of %d threads", threads);
    const mlp_case *c = &d->c;
    tbuf y = d->Y;
    y.img = malloc(y.bytes);
    if (y.img == NULL)
        tap_bail("out of memory");
    memcpy(y.img, d->Y.img, y.bytes);
    const fb_status st = mlp_geglu_forward(
        h, c->dtype, c->act, c->m, c->k, c->h, c->n, tbuf_data(&d->X),
        c->ldx, tbuf_data(&d->Wg),
        (c->biases & MLP_BG) ? tbuf_data(&d->bg) : NULL, tbuf_data(&d->Wu),
        (c->biases & MLP_BU) ? tbuf_data(&d->bu) : NULL, tbuf_data(&d->Wd),
        (c->biases & MLP_BD) ? tbuf_data(&d->bd) : NULL, tbuf_data(&y),
        c->ldy);
    snprintf(path, len, "%s", st == FB_STATUS_SUCCESS
                                  ? fb_handle_last_path(h)
                                  : fb_status_string(st));
    fb_destroy(h);
    return y.img;
}

/* The hidden-split form (two threads: up to 256 rows, or packed weights
 * of 64 MiB and more, 300 rows then in two groups) against row blocks
 * (one thread): the same sums in the same order, so the same bits,
 * guards included. Skipped with fewer than two threads (the form needs
 * them). */
static void mlp_forms_agree(void)
{
    static const int64_t form_shapes[][4] = {
        {256, 600, 700, 50}, {33, 385, 513, 97}, {130, 64, 256, 40},
        {97, 37, 257, 61},   {300, 2048, 4096, 40}};
    for (int s = 0; s < 5; s++) {
        const int64_t *sh = form_shapes[s];
        mlp_case c = packed_mlp_case(FB_DTYPE_F32, sh[0], sh[1], sh[2], sh[3],
                                     all_acts[s % N_ACTS], (unsigned)(s * 3 % 8),
                                     s % 2);
        mlp_data d;
        mlp_data_make(&d, &c);
        char one[160], two[160];
        unsigned char *y1 = mlp_on_threads(&d, 1, one, sizeof one);
        unsigned char *y2 = mlp_on_threads(&d, 2, two, sizeof two);
        if (strstr(two, "/threads=2") == NULL)
            tap_skip("m %lld: two threads did not run (%s)", (long long)sh[0],
                     two);
        else
            tap_ok(strstr(one, "mlp-rows/") != NULL &&
                       strstr(two, "mlp-wide/") != NULL &&
                       memcmp(y1, y2, d.Y.bytes) == 0,
                   "f32 MLP %lld,%lld,%lld,%lld: %s and %s give the same "
                   "bits", (long long)sh[0], (long long)sh[1],
                   (long long)sh[2], (long long)sh[3], one, two);
        free(y1);
        free(y2);
        mlp_data_free(&d);
    }
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_cpu_f32_kernel");
    if (phase == NULL && setenv("FUSEDBLAS_CPU_SGEMM", "packed", 1) != 0)
        tap_bail("setenv failed");
    target cpu = target_cpu();
    if (phase != NULL) {
        if (tap_in_phase("env-switch"))
            env_switch(&cpu);
        else if (tap_in_phase("mlp-openblas") || tap_in_phase("mlp-auto"))
            mlp_sweep(&cpu);
        else
            tap_bail("unknown phase %s", phase);
        fb_destroy(cpu.handle);
        return tap_end();
    }
    packed_f32_skip_unless_kernel(&cpu, &paths);
    packed_sweep(&cpu, FB_DTYPE_F32, shapes, (int)(sizeof shapes / sizeof shapes[0]),
                 &paths, 1, 77);
    packed_special_inputs(&cpu, FB_DTYPE_F32, &paths);
    env_switch(&cpu);
    mlp_sweep(&cpu);
    mlp_forms_agree();
    fb_destroy(cpu.handle);
    return tap_end();
}
