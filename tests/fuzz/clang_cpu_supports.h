/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clang_cpu_supports.h -- __builtin_cpu_supports() for the feature names
 * lib/cpu asks about ("f16c", "avx", "avx512f"; also "avx2", "fma"), some
 * of which clang 14 rejects at compile time ("invalid cpu feature string";
 * gcc accepts them). Force-included (-include) into the clang builds of
 * .ci/reliability.sh (the fuzzer, ThreadSanitizer) only, so that the
 * library's sources compile unchanged; with a library that no longer uses
 * these names, it is inert.
 *
 * The answers come from CPUID leaves 1 and 7 and, for AVX and AVX-512,
 * XGETBV (the OS saves the YMM, opmask and ZMM state), as the compiler's
 * own runtime does.
 */
#ifndef FB_FUZZ_CLANG_CPU_SUPPORTS_H
#define FB_FUZZ_CLANG_CPU_SUPPORTS_H

#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

static inline int fz_same(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b)
        a++, b++;
    return *a == *b;
}

static inline int fz_cpu_supports(const char *feature)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int f16c = (c & bit_F16C) != 0, fma = (c & bit_FMA) != 0;
    /* What the OS saves on a context switch (XCR0): bits 1-2 XMM and YMM,
     * 5-7 the AVX-512 opmask and ZMM state. */
    unsigned xcr0 = 0;
    if (c & bit_OSXSAVE) {
        unsigned hi;
        __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    }
    const int avx = (c & bit_AVX) != 0 && (xcr0 & 0x6u) == 0x6u;
    unsigned b7 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
        b7 = b;
    const int avx2 = avx && (b7 & bit_AVX2) != 0;
    const int avx512f = avx && (b7 & bit_AVX512F) != 0 &&
                        (xcr0 & 0xe6u) == 0xe6u;
    if (fz_same(feature, "f16c"))
        return f16c;
    if (fz_same(feature, "fma"))
        return fma;
    if (fz_same(feature, "avx"))
        return avx;
    if (fz_same(feature, "avx2"))
        return avx2;
    if (fz_same(feature, "avx512f"))
        return avx512f;
    return 0; /* anything else: take the portable path */
}

#define __builtin_cpu_supports(feature) fz_cpu_supports(feature)
#endif

#endif /* FB_FUZZ_CLANG_CPU_SUPPORTS_H */
