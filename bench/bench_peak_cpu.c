/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_peak_cpu.c -- the CPU's arithmetic peak per data type, measured:
 * every OpenMP thread runs independent chains of the widest multiply-add
 * the CPU has for that type, on registers only, and the best of several
 * passes counts.
 *
 * A GEMM library's rate alone is no ceiling: a kernel may beat it, and a
 * library may lack a type (Debian's OpenBLAS has no sbgemm), while
 * AVX512-BF16's VDPBF16PS does twice the fp32 FMA's work per instruction.
 * No code outruns these loops except by noise (clocks that move between
 * passes).
 */
#include <omp.h>
#include <stdint.h>
#include "bench_peak_cpu.h"
#include "bench_stats.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PEAK_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#ifdef PEAK_X86

/* ---- what the CPU and the OS support -------------------------------------
 * CPUID itself, as lib/cpu does: compilers disagree on which feature names
 * __builtin_cpu_supports accepts. Leaf 1 ECX: FMA bit 12, OSXSAVE bit 27;
 * leaf 7 subleaf 0 EBX: AVX2 bit 5, AVX512F bit 16, AVX512BW bit 30,
 * AVX512VL bit 31, EDX: AVX512_FP16 bit 23; subleaf 1 EAX: AVX512_BF16
 * bit 5. XCR0: the OS saves the YMM state (bits 1, 2) and the ZMM and
 * opmask state (bits 5-7). */
enum { ISA_FMA = 1, ISA_AVX512 = 2, ISA_BF16 = 4, ISA_FP16 = 8 };

static int cpu_isa(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
        return 0;
    const int fma = (c >> 12) & 1;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x6u) != 0x6u)
        return 0;
    int isa = fma ? ISA_FMA : 0;
    if ((xlo & 0xe6u) != 0xe6u || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return isa;
    const unsigned need = (1u << 16) | (1u << 30) | (1u << 31);
    if ((b & need) != need)
        return isa;
    isa |= ISA_AVX512;
    if ((d >> 23) & 1)
        isa |= ISA_FP16;
    if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)))
        isa |= ISA_BF16;
    return isa;
}

/* ---- the loops -----------------------------------------------------------
 * CHAINS accumulators, each updated once per iteration by one instruction
 * that depends on its previous value: enough independent chains to cover
 * the latency of every multiply-add pipe (about 4-6 cycles times 2 pipes).
 * The values stay normal and finite: x <- x * m + c tends to c / (1 - m),
 * and the bf16 dots add products of 1e-6, far from overflow however long
 * the pass. Each returns the flops it did; the sum goes to *sink so that
 * no chain is dead code. */
#define CHAINS 12

#define PEAK_LOOP(VEC, SET1, OP, ADDV, STORE_SUM, FLOPS_PER_OP)                \
    VEC x0 = SET1(0.5f), x1 = SET1(0.51f), x2 = SET1(0.52f),                 \
        x3 = SET1(0.53f), x4 = SET1(0.54f), x5 = SET1(0.55f),                \
        x6 = SET1(0.56f), x7 = SET1(0.57f), x8 = SET1(0.58f),                \
        x9 = SET1(0.59f), x10 = SET1(0.6f), x11 = SET1(0.61f);               \
    for (int64_t i = 0; i < iters; i++) {                                     \
        x0 = OP(x0);                                                          \
        x1 = OP(x1);                                                          \
        x2 = OP(x2);                                                          \
        x3 = OP(x3);                                                          \
        x4 = OP(x4);                                                          \
        x5 = OP(x5);                                                          \
        x6 = OP(x6);                                                          \
        x7 = OP(x7);                                                          \
        x8 = OP(x8);                                                          \
        x9 = OP(x9);                                                          \
        x10 = OP(x10);                                                        \
        x11 = OP(x11);                                                        \
    }                                                                         \
    VEC s = ADDV(ADDV(ADDV(x0, x1), ADDV(x2, x3)),                            \
                 ADDV(ADDV(x4, x5), ADDV(x6, x7)));                           \
    s = ADDV(s, ADDV(ADDV(x8, x9), ADDV(x10, x11)));                          \
    STORE_SUM;                                                                \
    return (double)iters * CHAINS * (FLOPS_PER_OP)

/* fp32, 8 lanes, FMA: 16 flops an instruction. */
__attribute__((target("avx2,fma"))) static double
peak_f32_avx2(int64_t iters, volatile float *sink)
{
    const __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
#define OP_F32_256(x) _mm256_fmadd_ps(x, m, c)
    PEAK_LOOP(__m256, _mm256_set1_ps, OP_F32_256, _mm256_add_ps,
              *sink = _mm256_cvtss_f32(s), 8 * 2);
#undef OP_F32_256
}

/* fp32, 16 lanes, FMA: 32 flops an instruction. */
__attribute__((target("avx512f"))) static double
peak_f32_avx512(int64_t iters, volatile float *sink)
{
    const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
#define OP_F32_512(x) _mm512_fmadd_ps(x, m, c)
    PEAK_LOOP(__m512, _mm512_set1_ps, OP_F32_512, _mm512_add_ps,
              *sink = _mm512_reduce_add_ps(s), 16 * 2);
#undef OP_F32_512
}

#if BENCH_PEAK_CAN_BF16
/* bf16, VDPBF16PS: 16 fp32 lanes, each adding two bf16 products: 64 flops
 * an instruction. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static double
peak_bf16_avx512(int64_t iters, volatile float *sink)
{
    const __m512bh p = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-6f),
                                           _mm512_set1_ps(1e-6f));
    const __m512bh q = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-6f),
                                           _mm512_set1_ps(1e-6f));
#define OP_BF16_512(x) _mm512_dpbf16_ps(x, p, q)
    PEAK_LOOP(__m512, _mm512_set1_ps, OP_BF16_512, _mm512_add_ps,
              *sink = _mm512_reduce_add_ps(s), 16 * 2 * 2);
#undef OP_BF16_512
}
#endif

#if BENCH_PEAK_CAN_FP16
/* fp16, AVX512-FP16: 32 lanes, FMA: 64 flops an instruction. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16"))) static double
peak_f16_avx512(int64_t iters, volatile float *sink)
{
    const __m512h m = _mm512_set1_ph((_Float16)0.999f);
    const __m512h c = _mm512_set1_ph((_Float16)1e-3f);
#define SET1_F16(v) _mm512_set1_ph((_Float16)(v))
#define OP_F16_512(x) _mm512_fmadd_ph(x, m, c)
    PEAK_LOOP(__m512h, SET1_F16, OP_F16_512, _mm512_add_ph,
              *sink = (float)_mm512_reduce_add_ph(s), 32 * 2);
#undef OP_F16_512
#undef SET1_F16
}
#endif

typedef double (*peak_fn)(int64_t, volatile float *);

/* GFLOP/s of fn on every thread: passes of about pass_s, the best one. */
static double run_peak(peak_fn fn, double pass_s, int passes)
{
    volatile float sink = 0;
    int64_t iters = 1 << 16;
    /* calibrate on one thread: iterations for pass_s */
    for (;;) {
        double t0 = bench_now();
        fn(iters, &sink);
        double dt = bench_now() - t0;
        if (dt >= pass_s / 8 || iters >= ((int64_t)1 << 40)) {
            if (dt > 0)
                iters = (int64_t)(iters * (pass_s / dt)) + 1;
            break;
        }
        iters *= 4;
    }
    double best = 0;
    for (int p = 0; p < passes; p++) {
        double flops = 0;
        double t0 = bench_now();
#pragma omp parallel reduction(+ : flops)
        {
            volatile float s = 0;
            flops += fn(iters, &s);
        }
        double dt = bench_now() - t0;
        if (dt > 0 && flops / dt * 1e-9 > best)
            best = flops / dt * 1e-9;
    }
    return best;
}

#endif /* PEAK_X86 */

double bench_cpu_peak_gflops(fb_dtype t, int quick)
{
#ifdef PEAK_X86
    const double pass_s = quick ? 0.05 : 0.2;
    const int passes = quick ? 3 : 5;
    const int isa = cpu_isa();
    double best = 0, r;
    switch (t) {
    case FB_DTYPE_F32:
        if (isa & ISA_FMA)
            best = run_peak(peak_f32_avx2, pass_s, passes);
        /* AVX-512 may run at the same rate as AVX2 (two 256-bit halves) or
         * twice it: the faster of the two is the peak */
        if ((isa & ISA_AVX512) && (r = run_peak(peak_f32_avx512, pass_s, passes)) > best)
            best = r;
        return best;
    case FB_DTYPE_BF16:
#if BENCH_PEAK_CAN_BF16
        if (isa & ISA_BF16)
            return run_peak(peak_bf16_avx512, pass_s, passes);
#endif
        return 0;
    case FB_DTYPE_F16:
#if BENCH_PEAK_CAN_FP16
        if (isa & ISA_FP16)
            return run_peak(peak_f16_avx512, pass_s, passes);
#endif
        return 0;
    }
    return 0;
#else
    (void)t, (void)quick;
    return 0;
#endif
}
