/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_small_m.c -- the CPU decode kernels (lib/cpu/cpu_small_m.c on
 * AVX-512, lib/cpu/cpu_small_m_avx2.c on AVX2), each forced by its name
 * wherever this CPU runs it, through gemm_bias_act and mlp_geglu_forward,
 * against the double oracle, with the path asserted: every token count
 * m = 1..32 (bf16 on AMX: some up to 200, in blocks of up to the 80 its
 * token tiles hold), every dtype (fp16
 * and bf16 weights are widened inside the kernel), k that is a multiple of
 * nothing and crosses the kernel's k chunks (512 fp32 values; the 16-bit
 * forms' longer ones in fma16_long_k and dp_long_k) and its 16-value
 * steps, leading dimensions above the minimum,
 * operands off their alignment, weight row counts that leave the 6-row
 * register block and the 48-row units ragged, alpha, beta, bias and every
 * activation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "mlp_check.h"
#include "oracle.h"
#include "tap_child.h"

/* The kernels, by implementation name; KERNEL_PATH is the one under
 * test, its name and a slash. */
static const char *const kernels[] = {"cpu/small-m-avx512",
                                      "cpu/small-m-avx2"};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))
static char kernel_path[64];
#define KERNEL_PATH kernel_path
static const char *kernel_name;

/* Later calls on h forced to the kernel under test. */
static void force(fb_handle h)
{
    if (fb_set_implementation(h, kernel_name) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation(%s)", kernel_name);
}
/* bf16 on bf16 products (AMX where the CPU has it, else VDPBF16PS), and
 * the FMA form they fall back to; dp_path and dp_mixed_path are the form
 * this process runs. */
#define AMX_PATH "bf16-amx/"
#define AMX_MIXED_PATH "bf16-amx+fma-where-tiny/"
#define DP_PATH "bf16-dpbf16/"
#define DP_MIXED_PATH "bf16-dpbf16+fma-where-tiny/"
#define FMA_PATH "bf16-weights/"
static const char *dp_path = DP_PATH, *dp_mixed_path = DP_MIXED_PATH;

static int path_is(fb_handle h, const char *prefix)
{
    return strncmp(fb_handle_last_path(h), prefix, strlen(prefix)) == 0;
}

/* k values: below one step, a step and a ragged tail, past one chunk of
 * each width with a ragged tail, past two chunks. */
static const int64_t ks[] = {5, 45, 549, 1061, 2100};
#define NK ((int)(sizeof ks / sizeof ks[0]))
/* Rows of W (output features): one 48-row unit plus a 2-row tail (the
 * kernel's one-row blocks), several units with a 6-row block and a tail,
 * and 25 blocks of 6 rows then 4 (the AVX2 kernel's one-token blocks of
 * 6 end in a block of 3 and one of 1). */
static const int64_t feats[] = {50, 103, 154};
#define NF ((int)(sizeof feats / sizeof feats[0]))

static const float alphas[] = {1.0f, 0.7f, -1.5f};
static const float betas[] = {0.0f, 1.3f, 0.0f, 1.0f};

static void gemm_cases(const target *cpu)
{
    int idx = 0;
    for (int di = 0; di < 3; di++)
        for (int64_t m = 1; m <= 32; m++, idx++) {
            gemm_case c;
            memset(&c, 0, sizeof c);
            c.dtype = all_dtypes[di];
            /* Y (m x n) = X W^T row-major, the nn.Linear call; every
             * third one the same product column-major (C^T = W X^T). */
            const int64_t n = feats[idx % NF], k = ks[(idx / 2) % NK];
            if (idx % 3 == 2) {
                c.layout = FB_COL_MAJOR;
                c.transa = FB_TRANS, c.transb = FB_NO_TRANS;
                c.m = n, c.n = m;
            } else {
                c.layout = FB_ROW_MAJOR;
                c.transa = FB_NO_TRANS, c.transb = FB_TRANS;
                c.m = m, c.n = n;
            }
            c.k = k;
            c.alpha = alphas[idx % 3];
            c.beta = betas[idx % 4];
            c.has_bias = idx % 5 != 4;
            c.act = all_acts[idx % N_ACTS];
            gemm_case_set_lds(&c, 1 + idx % 4, 1 + (idx / 4) % 4, idx % 3);
            c.offset = idx % 2;
            gemm_data d;
            gemm_data_make(&d, &c);
            gemm_check(&d, cpu, 1, NULL);
            char label[256];
            gemm_case_label(&c, label, sizeof label);
            tap_ok(path_is(cpu->handle, KERNEL_PATH), "path %s for %s",
                   fb_handle_last_path(cpu->handle), label);
            gemm_data_free(&d);
        }
}

static void mlp_cases(const target *cpu)
{
    int idx = 0;
    for (int di = 0; di < 3; di++)
        for (int64_t m = 1; m <= 32; m++, idx++) {
            mlp_case c;
            memset(&c, 0, sizeof c);
            c.dtype = all_dtypes[di];
            c.act = all_acts[idx % N_ACTS];
            c.m = m;
            c.k = ks[idx % NK];
            /* Hidden widths that split into ragged per-thread slices of
             * 6-row blocks; the down projection's k is the slice. */
            c.h = idx % 2 ? 103 : 37;
            c.n = idx % 3 ? 29 : 50;
            c.biases = (unsigned)(idx % 8);
            mlp_run_case(&c, cpu, 1, NULL);
            char label[256];
            mlp_case_label(&c, label, sizeof label);
            tap_ok(path_is(cpu->handle, KERNEL_PATH), "path %s for %s",
                   fb_handle_last_path(cpu->handle), label);
        }
}

static int path_has(fb_handle h, const char *part)
{
    return strstr(fb_handle_last_path(h), part) != NULL;
}

/* Row-major Y = X W^T (nn.Linear) of m tokens, k inputs and 103
 * features, alpha 1, beta 0. */
static void linear_case(gemm_case *c, fb_dtype dt, int64_t m, int64_t k,
                        int has_bias, fb_activation act, const char *note)
{
    memset(c, 0, sizeof *c);
    c->dtype = dt;
    c->layout = FB_ROW_MAJOR;
    c->transa = FB_NO_TRANS, c->transb = FB_TRANS;
    c->m = m, c->n = 103, c->k = k;
    c->alpha = 1.0f;
    c->has_bias = has_bias;
    c->act = act;
    c->note = note;
}

/* One TAP point: the last call's path names want. */
static void tap_path_has(const target *cpu, const gemm_case *c,
                         const char *want)
{
    char label[256];
    gemm_case_label(c, label, sizeof label);
    tap_ok(path_has(cpu->handle, want), "path %s for %s (want %s)",
           fb_handle_last_path(cpu->handle), label, want);
}

/* Case c against the oracle, then one TAP point: its path names want. */
static void check_gemm_path(const target *cpu, const gemm_case *c,
                            const char *want)
{
    gemm_data d;
    gemm_data_make(&d, c);
    gemm_check(&d, cpu, 1, NULL);
    tap_path_has(cpu, c, want);
    gemm_data_free(&d);
}

/* The FMA form with 16-bit weights cuts k into equal chunks of whole
 * cache lines of at most 4096 values (CHUNK_BYTES_16 of cpu_small_m.c),
 * the last ragged: k = 4100 makes two (2080 + 2020), 9000 three (3008 +
 * 3008 + 2984); the AVX2 kernel cuts the same ones.
 * fp16 (always the FMA form) and bf16 at 4 tokens, below AMX's
 * (FB_SMALL_M_AMX_MIN_ROWS, 5) and VDPBF16PS's (8); one token too, whose
 * single group chunks only because it prefetches. Row-major Y = X W^T with
 * bias, 103 features. */
static void fma16_long_k(const target *cpu, fb_dtype dt, int64_t m,
                         int64_t k)
{
    gemm_case c;
    linear_case(&c, dt, m, k, 1, FB_ACT_SILU, "k across 16-bit FMA chunks");
    gemm_case_set_lds(&c, 2, 1, 0);
    gemm_data d;
    gemm_data_make(&d, &c);
    gemm_check(&d, cpu, 1, NULL);
    char label[256];
    gemm_case_label(&c, label, sizeof label);
    const char *want = dt == FB_DTYPE_F16 ? "f16-weights/" : FMA_PATH;
    tap_ok(path_is(cpu->handle, KERNEL_PATH) &&
               path_has(cpu->handle, want),
           "path %s for %s (want %s%s)", fb_handle_last_path(cpu->handle),
           label, KERNEL_PATH, want);
    gemm_data_free(&d);
}

/* A bf16 value of magnitude 2^e times [1, 2), random sign. */
static double tiny_value(int e)
{
    const double v = (1.0 + rng_unit()) * (rng_below(2) ? 1 : -1);
    return oracle_round(FB_DTYPE_BF16, ldexp(v, e));
}

/* VDPBF16PS reads denormal inputs as 0 and flushes denormal products and
 * sums; the decode kernel must notice and give the IEEE answer through
 * its FMA form. Row-major Y = X W^T, m tokens, 103 features, k = 45:
 *  - which = 0: X holds a denormal: no unit may use VDPBF16PS;
 *  - which = 1: token row 1 (0 if m = 1) and weight rows 60..69 hold values near 2^-65,
 *    so their products (2^-130) are denormal: the units holding those
 *    weights run again on the FMA form (the answer there is a sum of
 *    denormals, which a flush would make 0, far beyond the bound);
 *  - which = 2: the same with FUSEDBLAS_CPU_NO_BF16=1: FMA form only (a
 *    child process started with it: phase no-bf16). */
static void dp_edges(const target *cpu, int which, int64_t m)
{
    gemm_case c;
    linear_case(&c, FB_DTYPE_BF16, m, 45, 0, FB_ACT_NONE,
                which == 0   ? "denormal in X"
                : which == 1 ? "denormal products"
                             : "FUSEDBLAS_CPU_NO_BF16=1");
    gemm_case_set_lds(&c, 1, 2, 0);
    gemm_data d;
    gemm_data_make(&d, &c);
    void *x = tbuf_data(&d.A), *w = tbuf_data(&d.B);
    if (which == 0) {
        dt_set(FB_DTYPE_BF16, x, (m - 1) * c.lda + 7, ldexp(1.0, -130));
    } else {
        const int64_t row = m > 1 ? 1 : 0;
        for (int64_t p = 0; p < c.k; p++) {
            dt_set(FB_DTYPE_BF16, x, row * c.lda + p, tiny_value(-65));
            for (int64_t j = 60; j < 70; j++)
                dt_set(FB_DTYPE_BF16, w, j * c.ldb + p, tiny_value(-65));
        }
    }
    gemm_check(&d, cpu, 1, NULL);
    tap_path_has(cpu, &c, which == 1 ? dp_mixed_path : FMA_PATH);
    gemm_data_free(&d);
}

/* The VDPBF16PS form cuts k into equal chunks of whole cache lines of at
 * most 8192 values (CHUNK_BYTES_DP), the last one ragged: k = 8200 makes
 * two chunks (4128 + 4072), 16500 three (5504 + 5504 + 5492), each with a
 * masked tail. Row-major Y = X W^T with bias, m tokens, 103 features. */
static void dp_long_k(const target *cpu, int64_t m, int64_t k)
{
    gemm_case c;
    linear_case(&c, FB_DTYPE_BF16, m, k, 1, FB_ACT_GELU_TANH,
                "k across VDPBF16PS chunks");
    gemm_case_set_lds(&c, 1, 2, 0);
    check_gemm_path(cpu, &c, dp_path);
}

/* The MLP's H on VDPBF16PS too: X near 2^-60 makes G, U and so H tiny
 * (near 2^-115), too small to meet Wd on VDPBF16PS: the down projection
 * runs on the FMA form, the gate and up projections do not. */
static void dp_mlp_tiny_h(const target *cpu, int64_t m)
{
    mlp_case c;
    memset(&c, 0, sizeof c);
    c.dtype = FB_DTYPE_BF16;
    c.act = FB_ACT_GELU_TANH;
    c.m = m, c.k = 45, c.h = 64, c.n = 33;
    c.ldx = c.k + 1, c.ldy = c.n;
    mlp_data d;
    mlp_data_make(&d, &c);
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < c.k; p++)
            dt_set(FB_DTYPE_BF16, tbuf_data(&d.X), i * c.ldx + p,
                   tiny_value(-60));
    mlp_check(&d, cpu, 1, NULL);
    char label[256];
    mlp_case_label(&c, label, sizeof label);
    tap_ok(path_has(cpu->handle, dp_mixed_path), "path %s for %s, X near "
           "2^-60 (want %s)", fb_handle_last_path(cpu->handle), label,
           dp_mixed_path);
    mlp_data_free(&d);
}

/* Case i of a family of gemm calls of the given token count, forced:
 * column-major (C^T = W X^T) for odd i, nn.Linear's row-major otherwise;
 * k, alpha, beta, bias and activation vary with i. want: a part of the
 * path. */
static void forced_gemm(const target *cpu, fb_dtype dt, int i,
                        int64_t tokens, const char *want)
{
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.dtype = dt;
    if (i % 2) {
        c.layout = FB_COL_MAJOR;
        c.transa = FB_TRANS, c.transb = FB_NO_TRANS;
        c.m = feats[i % NF], c.n = tokens;
    } else {
        c.layout = FB_ROW_MAJOR;
        c.transa = FB_NO_TRANS, c.transb = FB_TRANS;
        c.m = tokens, c.n = feats[i % NF];
    }
    c.k = ks[(i + 1) % NK];
    c.alpha = alphas[i % 3];
    c.beta = betas[i % 4];
    c.has_bias = i % 4 != 2;
    c.act = all_acts[i % N_ACTS];
    gemm_case_set_lds(&c, 1 + i % 3, 2, i % 2);
    check_gemm_path(cpu, &c, want);
}

/* Case i of a family of MLP calls of m rows, forced; want: a part of
 * the path. */
static void forced_mlp(const target *cpu, fb_dtype dt, int i, int64_t m,
                       const char *want)
{
    mlp_case mc;
    memset(&mc, 0, sizeof mc);
    mc.dtype = dt;
    mc.act = all_acts[(i + 2) % N_ACTS];
    mc.m = m, mc.k = ks[i % NK], mc.h = i % 2 ? 103 : 37;
    mc.n = i % 2 ? 29 : 50;
    mc.biases = (unsigned)(2 * i + 1);
    mlp_run_case(&mc, cpu, 1, NULL);
    char label[256];
    mlp_case_label(&mc, label, sizeof label);
    tap_ok(path_is(cpu->handle, KERNEL_PATH) && path_has(cpu->handle, want),
           "path %s for %s (want %s%s)", fb_handle_last_path(cpu->handle),
           label, KERNEL_PATH, want);
}

/* bf16 on AMX takes any number of tokens, in blocks of up to
 * FB_SMALL_M_AMX_MAX (80): gemm (both layouts) and MLP cases past the FMA
 * form's 32, in one block and in several (equal, or a ragged last one),
 * the FMA form's fallback in blocks of 32 tokens (a denormal in X;
 * products that could flush), and the MLP's down projection on the FMA
 * form (tiny H). */
static void amx_rows(const target *cpu)
{
    static const int64_t ms[] = {33, 48, 65, 80, 81, 150, 161, 200};
    for (int i = 0; i < 8; i++) {
        const int64_t m = ms[i];
        forced_gemm(cpu, FB_DTYPE_BF16, i, m, AMX_PATH);
        forced_mlp(cpu, FB_DTYPE_BF16, i, m, AMX_PATH);
    }
    for (int64_t m = 40; m <= 120; m += 40) {
        dp_edges(cpu, 0, m);
        dp_edges(cpu, 1, m);
        dp_mlp_tiny_h(cpu, m);
    }
    /* The shape rule, with nothing forced: past 32 tokens AMX's form runs
     * only for weights of FB_SMALL_M_AMX_BYTES_PER_ROW (64 KiB) a token
     * or more (the MLP's below 16 MiB past 80 rows: 112 KiB); below,
     * the bf16 driver. 40 tokens: 2.5 MiB (the gemm), 4.4 MiB (the MLP). */
    if (fb_set_implementation(cpu->handle, NULL) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation(NULL)");
    for (int big = 0; big < 2; big++) {
        mlp_case mc;
        memset(&mc, 0, sizeof mc);
        mc.dtype = FB_DTYPE_BF16;
        mc.act = FB_ACT_SILU;
        mc.m = 40, mc.k = big ? 768 : 64, mc.h = big ? 1056 : 96;
        mc.n = big ? 768 : 64;
        mc.biases = 7;
        mlp_run_case(&mc, cpu, 1, NULL);
        char label[256];
        mlp_case_label(&mc, label, sizeof label);
        const char *want = big ? "cpu/small-m-avx512/" : "cpu/bf16-amx/";
        tap_ok(path_is(cpu->handle, want), "auto: path %s for %s (want %s)",
               fb_handle_last_path(cpu->handle), label, want);
        gemm_case c;
        linear_case(&c, FB_DTYPE_BF16, 40, big ? 2048 : 256, 1,
                    FB_ACT_GELU_TANH, "auto");
        c.n = big ? 640 : 103;
        gemm_case_set_lds(&c, 1, 1, 0);
        check_gemm_path(cpu, &c, want);
    }
    force(cpu->handle);
}

/* fp16 weights past 32 rows: the FMA form in blocks of 32 (AVX-512),
 * the gemm in both layouts and the MLP. */
static void f16_rows(const target *cpu)
{
    for (int i = 0; i < 3; i++)
        forced_gemm(cpu, FB_DTYPE_F16, i + 1, i == 0 ? 33 : i == 1 ? 64 : 97,
                    "f16-weights/");
    for (int i = 0; i < 3; i++)
        forced_mlp(cpu, FB_DTYPE_F16, i + 1, i == 0 ? 33 : i == 1 ? 64 : 97,
                   "f16-weights/");
}

/* fp32 weights past 32 tokens: the gemm on the FMA form in blocks of 32
 * (at most, equal), both layouts, forced (auto takes it only for large
 * weights, FB_SMALL_M_F32_GEMM_BYTES). */
static void f32_rows(const target *cpu)
{
    for (int i = 0; i < 3; i++)
        forced_gemm(cpu, FB_DTYPE_F32, i + 1, i == 0 ? 33 : i == 1 ? 48 : 70,
                    "f32-weights/");
}

static void run_kernel(const target *cpu, int avx512);

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_cpu_small_m");
    target cpu = target_cpu();
    if (phase != NULL && tap_in_phase("no-bf16")) {
        for (int64_t m = 8; m <= 32; m += 24)
            dp_edges(&cpu, 2, m);
        fb_destroy(cpu.handle);
        return tap_end();
    }
    if (phase != NULL && !tap_in_phase("no-amx"))
        tap_bail("unknown phase %s", phase);
    /* Which kernels does this CPU run? A decode-shaped call forced to
     * each says (a probe, not a TAP point: a plan of 1..0 must come first
     * when everything is skipped); elsewhere these shapes take OpenBLAS,
     * which test_gemm covers. Valgrind has no AVX-512: there only the
     * AVX2 kernel runs. */
    int runs[NKERNELS], any = 0;
    for (int kn = 0; kn < NKERNELS; kn++) {
        float a[2 * 16], b[64 * 16], cc[2 * 64];
        for (int i = 0; i < 2 * 16; i++)
            a[i] = 0.25f * (float)(i % 7) - 0.5f;
        for (int i = 0; i < 64 * 16; i++)
            b[i] = 0.125f * (float)(i % 5) - 0.25f;
        snprintf(kernel_path, sizeof kernel_path, "%s/", kernels[kn]);
        if (fb_set_implementation(cpu.handle, kernels[kn]) !=
            FB_STATUS_SUCCESS)
            tap_bail("fb_set_implementation(%s)", kernels[kn]);
        const fb_status st = sgemm_bias_act(
            cpu.handle, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 2, 64, 16, 1.0f,
            a, 16, b, 16, 0.0f, cc, 64, NULL, FB_ACT_NONE);
        runs[kn] = st == FB_STATUS_SUCCESS && path_is(cpu.handle, KERNEL_PATH);
        any |= runs[kn];
    }
    if (!any) {
        fb_destroy(cpu.handle);
        tap_skip_all("no small-m kernel runs on this CPU (no AVX-512, no "
                     "AVX2 + FMA + F16C)");
    }
    for (int kn = 0; kn < NKERNELS; kn++) {
        if (!runs[kn]) {
            tap_skip("%s: does not run on this CPU", kernels[kn]);
            continue;
        }
        snprintf(kernel_path, sizeof kernel_path, "%s/", kernels[kn]);
        kernel_name = kernels[kn];
        force(cpu.handle);
        run_kernel(&cpu, kn == 0);
    }
    fb_destroy(cpu.handle);
    return tap_end();
}

/* Every case on the kernel forced now (KERNEL_PATH); avx512: the one
 * with VDPBF16PS forms. */
static void run_kernel(const target *cpu_, int avx512)
{
    const target cpu = *cpu_;
    gemm_cases(&cpu);
    mlp_cases(&cpu);
    /* The bf16-products form: ordinary bf16 data takes it (or the CPU
     * lacks AVX512-BF16, and the FMA form is all there is); the AVX2
     * kernel has none. With AMX, the program runs again without it
     * (FUSEDBLAS_CPU_NO_AMX=1, phase no-amx) for VDPBF16PS's form. */
    const int amx = path_has(cpu.handle, AMX_PATH);
    if (amx)
        dp_path = AMX_PATH, dp_mixed_path = AMX_MIXED_PATH;
    if (!avx512) {
        tap_skip("bf16 products: not in %s", KERNEL_PATH);
    } else if (path_has(cpu.handle, dp_path)) {
        for (int64_t m = 8; m <= 32; m += 8) {
            dp_edges(&cpu, 0, m);
            dp_edges(&cpu, 1, m);
            dp_mlp_tiny_h(&cpu, m);
            dp_long_k(&cpu, m, 8200);
            dp_long_k(&cpu, m, 16500);
        }
        /* The library reads FUSEDBLAS_CPU_NO_BF16 (and _NO_AMX) once
         * per process. */
        const char *env[] = {"FUSEDBLAS_CPU_NO_BF16=1", NULL};
        const char *no_amx[] = {"FUSEDBLAS_CPU_NO_AMX=1", NULL};
        if (!tap_in_phase("no-amx"))
            tap_rerun("no-bf16", env, 300);
        if (amx) {
            amx_rows(&cpu);
            tap_rerun("no-amx", no_amx, 600);
        }
    } else {
        tap_skip("bf16 products: not on this CPU (path %s)",
                 fb_handle_last_path(cpu.handle));
    }
    /* After the probe above, which reads the last path of mlp_cases. */
    for (int64_t m = 1; m <= 4; m += 3)
        for (int di = 0; di < 2; di++) {
            const fb_dtype dt = di ? FB_DTYPE_BF16 : FB_DTYPE_F16;
            fma16_long_k(&cpu, dt, m, 4100);
            fma16_long_k(&cpu, dt, m, 9000);
        }
    if (avx512) {
        f16_rows(&cpu);
        f32_rows(&cpu);
    }
}
