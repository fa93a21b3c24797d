/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_bf16.c -- bgemm_bias_act on the CPU's bf16 kernels
 * (lib/cpu/cpu_bf16_gemm.c: AMX tiles where the CPU has them, else
 * AVX512-BF16) against the double oracle, with the bf16 bound of
 * docs/DESIGN.md's fp32-accumulation CPU target, and the path that ran
 * asserted for every case. Everything below runs on the kernel the table
 * picks; where that is AMX, the two sweeps run again with the AVX512-BF16
 * kernel forced by name (fb_set_implementation), and
 * tests/cpu_amx_off.sh runs it all with FUSEDBLAS_CPU_NO_AMX=1:
 *  - shapes around the 32 x 12 register block (AMX: 32 x 32 of tiles, k
 *    in runs of 32), the 256 x 192 blocks of C and the k chunks (up to
 *    768; AMX 512); odd and even k; both layouts (bias along
 *    rows and along columns of the normalised C), all transpose pairs,
 *    padded leading dimensions, beta != 0, every activation;
 *  - operands small enough that products or sums could fall below fp32's
 *    normal range (where VDPBF16PS flushes and IEEE does not) decline to
 *    the fp32 panels; scaled operands that stay clear of it do not;
 *  - a denormal bf16 in A or in B (each packing order), met by a huge
 *    value, makes the call decline to the fp32 panels, which get it right;
 *  - FUSEDBLAS_CPU_NO_BF16=1 sends bf16 calls to the fp32 panels, and
 *    FUSEDBLAS_CPU_NO_AMX=1 the AMX kernel's to AVX512-BF16's;
 *  - mlp_geglu_forward's prefill kernel (lib/cpu/cpu_bf16_mlp.c) over row
 *    blocks, hidden chunks and k chunks with ragged edges, every gate and
 *    bias pattern; a denormal in X or a weight declines to the fp32 path.
 * Run with FUSEDBLAS_CPU_NO_BF16=1 already set (tests/cpu_bf16_off.sh),
 * the same sweep must take the fp32 path everywhere: what a CPU without
 * AVX512-BF16 does. On such a CPU the program skips.
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

#define AMX_PATH "cpu/bf16-amx/"
#define AVX512_PATH "cpu/bf16-avx512bf16/"
#define FALLBACK_PATH "/f32-panels/"

/* The kernel the table picks on this CPU (main sets it). */
static packed_paths paths = {AVX512_PATH, FALLBACK_PATH};
static char mlp_prefix[64];

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}


/* Shapes (m, n, k of the call). None is the decode form the small-m
 * kernel takes (n <= 32 tokens with m >= 48 after normalisation): every
 * pair has both sides > 32 or both < 48. */
static const int64_t shapes[][3] = {
    {1, 1, 1},     {7, 13, 3},     {33, 11, 2},    {12, 32, 64},
    {31, 47, 5},   {32, 12, 65},   {65, 35, 17},   {97, 37, 128},
    {257, 193, 31}, {289, 205, 40}, {40, 30, 767},  {33, 23, 768},
    {17, 47, 769}, {36, 26, 1537}, {300, 200, 600},
};

static const fb_transpose trans[2] = {FB_NO_TRANS, FB_TRANS};

/* bf16 bits: 127/128 2^-126 (a denormal: exponent field 0) and 2^126. */
#define BF16_DENORMAL 0x007fu
#define BF16_HUGE 0x7e80u

/* A denormal at op(A)(i0, l0) (or op(B)(l0, j0)) and 2^126 at the other
 * factor of that product: the kernel would read the denormal as 0 and
 * miss 0.99 in C(i0, j0), far beyond the bound (about 0.03 there). The
 * call must decline to the fp32 panels, which get it right. */
static void denormal_inputs(const target *cpu)
{
    for (int where = 0; where < 2; where++)
        for (int t = 0; t < 8; t++) {
            gemm_case c = packed_case(FB_DTYPE_BF16, t & 4 ? FB_COL_MAJOR : FB_ROW_MAJOR,
                                    trans[(t >> 1) & 1], trans[t & 1],
                                    70, 50, 41);
            c.has_bias = 1;
            c.act = FB_ACT_GELU_TANH;
            gemm_case_set_lds(&c, 2, 1, 0);
            c.note = where ? "denormal in B" : "denormal in A";
            gemm_data d;
            gemm_data_make(&d, &c);
            const int64_t i0 = 37, j0 = 29, l0 = 40;
            void *a = tbuf_data(&d.A), *b = tbuf_data(&d.B);
            dt_set_bits(FB_DTYPE_BF16, a, packed_op_at(&c, 1, i0, l0),
                        where ? BF16_HUGE : BF16_DENORMAL);
            dt_set_bits(FB_DTYPE_BF16, b, packed_op_at(&c, 0, l0, j0),
                        where ? BF16_DENORMAL : BF16_HUGE);
            packed_run(cpu, &d, &paths, 0);
            gemm_data_free(&d);
        }
}

/* A scaled by 2^-sa and B by 2^-sb. With 2^-64 each, the products (2^-128
 * and below) are fp32 denormals, which VDPBF16PS would flush: the call
 * must decline to the fp32 panels. With 2^-30 and 2^-20 every product and
 * sum stays a multiple of about 2^-80 (unless a value below 2^-40 comes
 * up): the kernel, exactly. */
static void scaled_operands(const target *cpu)
{
    static const int scale[2][2] = {{64, 64}, {30, 20}};
    for (int t = 0; t < 8; t++) {
        const int tiny = t < 4;
        gemm_case c = packed_case(FB_DTYPE_BF16, t & 1 ? FB_COL_MAJOR : FB_ROW_MAJOR,
                                trans[(t >> 1) & 1], trans[t & 1], 40, 36,
                                300);
        c.note = tiny ? "A, B scaled by 2^-64: products below fp32's normal "
                        "range"
                      : "A, B scaled by 2^-30, 2^-20";
        gemm_data d;
        gemm_data_make(&d, &c);
        tbuf *ops[2] = {&d.A, &d.B};
        tshape *sh[2] = {&d.sa, &d.sb};
        for (int o = 0; o < 2; o++) {
            void *x = tbuf_data(ops[o]);
            int64_t i, j;
            for (int64_t e = 0; e < ops[o]->nelem; e++)
                if (tshape_window(sh[o], e, &i, &j))
                    dt_set(FB_DTYPE_BF16, x, e,
                           ldexp(dt_get(FB_DTYPE_BF16, x, e),
                                 -scale[!tiny][o]));
        }
        packed_run(cpu, &d, &paths, !tiny);
        gemm_data_free(&d);
    }
}

/* FUSEDBLAS_CPU_NO_BF16=1 (in a child: phase env-switch), then unset;
 * where the kernel is AMX's, FUSEDBLAS_CPU_NO_AMX=1 the same way, which
 * must run AVX512-BF16's. */
static void env_switch(const target *cpu)
{
    packed_env_switch(cpu, FB_DTYPE_BF16, "FUSEDBLAS_CPU_NO_BF16", "1", NULL,
                      &paths);
}

static void amx_switch(const target *cpu)
{
    const packed_paths amx_off = {AMX_PATH, AVX512_PATH};
    packed_env_switch(cpu, FB_DTYPE_BF16, "FUSEDBLAS_CPU_NO_AMX", "1", NULL,
                      &amx_off);
}

/* (m, k, h, n) around the 12-row panels and 96-row blocks of X (AMX: 16
 * rows, the hidden-split form up to 256 rows, blocks of 512 beyond), the
 * 32-row panels and 256-wide chunks of the hidden width, the 768-deep k
 * chunks, odd k and h. m > 32 (up to there, the decode kernel's). */
static void mlp_sweep(const target *cpu, int want_kernel)
{
    static const int64_t mlp_shapes[][4] = {
        {33, 13, 45, 23},  {36, 2, 32, 32},    {97, 37, 257, 61},
        {200, 64, 300, 33}, {40, 1025, 70, 40}, {193, 100, 513, 97},
        {45, 7, 1, 3},     {601, 40, 300, 33}};
    packed_mlp_sweep(cpu, FB_DTYPE_BF16, mlp_shapes,
                     (int)(sizeof mlp_shapes / sizeof mlp_shapes[0]),
                     mlp_prefix, want_kernel);
}

/* A denormal in X or in one of the weights: the kernel declines. */
static void mlp_denormals(const target *cpu)
{
    for (int which = 0; which < 4; which++) {
        mlp_case c = packed_mlp_case(FB_DTYPE_BF16, 50, 40, 70, 30,
                                     FB_ACT_GELU_TANH, MLP_ALL_BIASES, 1);
        mlp_data d;
        mlp_data_make(&d, &c);
        tbuf *bufs[4] = {&d.X, &d.Wg, &d.Wu, &d.Wd};
        /* Element 33 of the buffer is inside every operand's window
         * (each is at least 30 x 40). */
        dt_set_bits(FB_DTYPE_BF16, tbuf_data(bufs[which]), 33,
                    BF16_DENORMAL);
        packed_mlp_run(cpu, &d, mlp_prefix, 0);
        mlp_data_free(&d);
    }
}

/* The gate's bias at -80 with silu: H is about 2^-109 everywhere, too
 * small for the kernel against Wd, so every chunk's down projection runs
 * in fp32 (the path counts them); the call itself stays on the kernel. */
static void mlp_tiny_h(const target *cpu)
{
    mlp_case c = packed_mlp_case(FB_DTYPE_BF16, 40, 24, 300, 20, FB_ACT_SILU,
                                 MLP_BG, 0);
    mlp_data d;
    mlp_data_make(&d, &c);
    void *bg = tbuf_data(&d.bg);
    for (int64_t j = 0; j < c.h; j++)
        dt_set(FB_DTYPE_BF16, bg, j, -80.0);
    mlp_check(&d, cpu, 1, NULL);
    const char *path = fb_handle_last_path(cpu->handle);
    tap_ok(strncmp(path, mlp_prefix, strlen(mlp_prefix)) == 0 &&
               strstr(path, "/fp32-down-chunks=2") != NULL,
           "path %s for the MLP with H near 2^-109 (want %s"
           ".../fp32-down-chunks=2)", path, mlp_prefix);
    mlp_data_free(&d);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_cpu_bf16");
    target cpu = target_cpu();
    const int off = env_set("FUSEDBLAS_CPU_NO_BF16");
    /* Which kernel does this CPU run? A call's path says. */
    uint16_t a[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80}, c1[4];
    const fb_status st = gemm_call(
        cpu.handle, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2,
        2, 2, 1.0f, a, 2, a, 2, 0.0f, c1, 2, NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("a 2x2 bgemm_bias_act failed: %s", fb_status_string(st));
    const packed_paths amx = {AMX_PATH, FALLBACK_PATH};
    const int on_amx = packed_on_kernel(cpu.handle, &amx);
    if (on_amx)
        paths.kernel = AMX_PATH;
    snprintf(mlp_prefix, sizeof mlp_prefix, "%smlp-", paths.kernel);
    if (phase != NULL) {
        /* packed_env_switch's child: which switch it tries, its
         * environment says. */
        if (!tap_in_phase("env-switch"))
            tap_bail("unknown phase %s", phase);
        if (off)
            env_switch(&cpu);
        else
            amx_switch(&cpu);
        fb_destroy(cpu.handle);
        return tap_end();
    }
    if (!off && !packed_on_kernel(cpu.handle, &paths)) {
        fb_destroy(cpu.handle);
        tap_skip_all("no AVX512-BF16 on this CPU (the bf16 kernel's "
                     "fallback is test_gemm's)");
    }
    if (env_set("FUSEDBLAS_CPU_NO_AMX") && !off)
        tap_diag("FUSEDBLAS_CPU_NO_AMX set: the kernel must be "
                 "AVX512-BF16's");
    if (off)
        tap_diag("FUSEDBLAS_CPU_NO_BF16 set: every call must take the "
                 "fp32 panels");
    packed_sweep(&cpu, FB_DTYPE_BF16, shapes, (int)(sizeof shapes / sizeof shapes[0]),
                 &paths, !off, 77);
    mlp_sweep(&cpu, !off);
    if (!off) {
        scaled_operands(&cpu);
        denormal_inputs(&cpu);
        env_switch(&cpu);
        mlp_denormals(&cpu);
        mlp_tiny_h(&cpu);
    }
    if (on_amx) {
        amx_switch(&cpu);
        /* The other kernel, forced by name: the sweeps again. */
        if (fb_set_implementation(cpu.handle, "cpu/bf16-avx512bf16") !=
            FB_STATUS_SUCCESS)
            tap_bail("fb_set_implementation(cpu/bf16-avx512bf16) failed");
        paths.kernel = AVX512_PATH;
        snprintf(mlp_prefix, sizeof mlp_prefix, "%smlp-", paths.kernel);
        tap_diag("the sweeps again, cpu/bf16-avx512bf16 forced");
        packed_sweep(&cpu, FB_DTYPE_BF16, shapes,
                     (int)(sizeof shapes / sizeof shapes[0]), &paths, 1, 77);
        mlp_sweep(&cpu, 1);
    }
    fb_destroy(cpu.handle);
    return tap_end();
}
