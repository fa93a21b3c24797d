/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_roofline.c -- the benchmark's roofline holds each row to the compute
 * ceiling of its own data type (bench_roofline.c), so that no row reads
 * above 100% except by noise; and the CPU's arithmetic peaks are measured
 * exactly for the types the CPU has arithmetic for (bench_peak_cpu.c),
 * as /proc/cpuinfo, a witness independent of the benchmark's CPUID code,
 * lists them.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "bench_ceilings.h"
#include "bench_peak_cpu.h"
#include "bench_workloads.h"
#include "harness.h"

/* A CPU with bf16 arithmetic at twice the fp32 peak, both above the GEMM
 * libraries' rates, and no bf16 GEMM library (Debian's OpenBLAS). */
static bench_ceilings bf16_cpu(void)
{
    bench_ceilings cl;
    memset(&cl, 0, sizeof cl);
    cl.cpu_read_gbs = 1000;
    cl.cpu_sgemm_gflops = 100;
    cl.cpu_dnnl_f32_gflops = 110;
    cl.cpu_f32_peak_gflops = 120;
    cl.cpu_bf16_peak_gflops = 240;
    return cl;
}

static bench_case gemm_case(fb_dtype t, int64_t m, int64_t k, int64_t n)
{
    bench_case c;
    memset(&c, 0, sizeof c);
    c.group = "test";
    c.routine = BENCH_GEMM;
    c.dtype = t;
    c.act = FB_ACT_NONE;
    c.m = m;
    c.k = k;
    c.n = n;
    return c;
}

/* The roofline time must be the flop-time at want_gflops. */
static void expect_compute(const char *what, const bench_ceilings *cl,
                           const bench_case *c, double want_gflops)
{
    const double want = bench_case_flops(c) / (want_gflops * 1e9);
    const double got = bench_roofline_s(cl, c, 0, 0);
    tap_ok(fabs(got - want) <= 1e-12 * want, "%s: ceiling %.0f GFLOP/s "
           "(roofline %.6g s, want %.6g s)", what, want_gflops, got, want);
}

/* Whether /proc/cpuinfo's flags line lists flag; -1 if unreadable. */
static int cpuinfo_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return -1;
    char line[8192];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (colon == NULL)
            break;
        found = 0;
        for (char *tok = strtok(line + (colon - line) + 1, " \t\n"); tok;
             tok = strtok(NULL, " \t\n"))
            if (strcmp(tok, flag) == 0)
                found = 1;
        break;
    }
    fclose(f);
    return found;
}

static void expect_peak(fb_dtype t, const char *flag, int compiler_can)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const int has = cpuinfo_has(flag);
#else
    const int has = -1;
#endif
    if (has < 0) {
        tap_skip("%s peak: not an x86-64 Linux with /proc/cpuinfo flags",
                 bench_dtype_name(t));
        return;
    }
    if (!compiler_can) {
        tap_skip("%s peak: the compiler has no %s intrinsics",
                 bench_dtype_name(t), flag);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    /* The kernel's flags are the machine's; a process on an emulated CPU
     * (valgrind's has no AVX-512) sees less, and then the flags witness
     * another CPU than the one the benchmark runs on. */
    if (has && strncmp(flag, "avx512", 6) == 0 &&
        !__builtin_cpu_supports("avx512f")) {
        tap_skip("%s peak: /proc/cpuinfo lists %s, but this process's CPU "
                 "has no AVX-512 (an emulator such as valgrind)",
                 bench_dtype_name(t), flag);
        return;
    }
#endif
    const double g = bench_cpu_peak_gflops(t, 1);
    tap_ok(has ? g > 0 : g == 0, "%s peak measured iff the CPU has %s "
           "(cpuinfo %s, peak %.1f GFLOP/s)", bench_dtype_name(t), flag,
           has ? "yes" : "no", g);
}

int main(void)
{
    tap_begin("test_roofline");

    /* compute-bound: 4096^3 at 1000 GB/s is far from the byte-time */
    const bench_case f32 = gemm_case(FB_DTYPE_F32, 4096, 4096, 4096);
    const bench_case bf16 = gemm_case(FB_DTYPE_BF16, 4096, 4096, 4096);
    const bench_case f16 = gemm_case(FB_DTYPE_F16, 4096, 4096, 4096);
    bench_ceilings cl = bf16_cpu();

    expect_compute("f32 held to the fp32 peak above the GEMM rates", &cl,
                   &f32, 120);
    expect_compute("bf16 held to the bf16 peak, not fp32's", &cl, &bf16,
                   240);
    expect_compute("f16 without fp16 arithmetic held to fp32's", &cl, &f16,
                   120);
    cl.cpu_dnnl_bf16_gflops = 300;
    expect_compute("bf16: a bf16 GEMM faster than the measured peak raises "
                   "the ceiling", &cl, &bf16, 300);
    cl = bf16_cpu();
    cl.cpu_bf16_peak_gflops = 0;
    expect_compute("bf16 without bf16 arithmetic held to fp32's", &cl, &bf16,
                   120);
    cl.cpu_sbgemm_gflops = 50;
    expect_compute("bf16: a slower bf16 GEMM does not lower fp32's ceiling",
                   &cl, &bf16, 120);
    cl = bf16_cpu();
    cl.cpu_f16_peak_gflops = 480;
    expect_compute("f16 with fp16 arithmetic held to the fp16 peak", &cl, &f16,
                   480);
    cl = bf16_cpu();
    cl.cpu_f32_peak_gflops = 0;
    expect_compute("f32 with no measured peak: the best GEMM rate", &cl, &f32,
                   110);

    /* memory-bound: one token through a 4096 x 4096 bf16 weight at 10 GB/s
     * (3.4 ms of bytes against 0.14 ms of flops) */
    cl = bf16_cpu();
    cl.cpu_read_gbs = 10;
    const bench_case decode = gemm_case(FB_DTYPE_BF16, 1, 4096, 4096);
    const double want = bench_case_bytes(&decode) / (10 * 1e9);
    const double got = bench_roofline_s(&cl, &decode, 0, 0);
    tap_ok(fabs(got - want) <= 1e-12 * want,
           "memory-bound bf16 decode held to the byte-time (%.6g s, want %.6g s)",
           got, want);

    /* no ceiling at all: no roofline */
    memset(&cl, 0, sizeof cl);
    cl.cpu_read_gbs = 1000;
    tap_ok(bench_roofline_s(&cl, &bf16, 0, 0) == 0,
           "no compute ceiling measured: no roofline");

    expect_peak(FB_DTYPE_F32, "fma", 1);
    expect_peak(FB_DTYPE_BF16, "avx512_bf16", BENCH_PEAK_CAN_BF16);
    expect_peak(FB_DTYPE_F16, "avx512_fp16", BENCH_PEAK_CAN_FP16);
    return tap_end();
}
