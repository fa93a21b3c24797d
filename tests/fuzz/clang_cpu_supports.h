/*
 * clang_cpu_supports.h -- __builtin_cpu_supports() for the feature names
 * that lib/cpu/cpu_convert.c asks about ("f16c", "avx") and that clang 14
 * rejects at compile time ("invalid cpu feature string"; gcc accepts
 * them). Force-included (-include) into the clang builds of
 * .ci/reliability.sh (the fuzzer, ThreadSanitizer) only, so that the
 * library's sources compile unchanged; with a library that no longer uses
 * these names, it is inert.
 *
 * The answers come from CPUID leaf 1 and, for AVX, XGETBV (the OS saves
 * the YMM state), as the compiler's own runtime does.
 */
#ifndef FB_FUZZ_CLANG_CPU_SUPPORTS_H
#define FB_FUZZ_CLANG_CPU_SUPPORTS_H

#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

static inline int fz_cpu_supports(const char *feature)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int f16c = (c & bit_F16C) != 0;
    int avx = (c & bit_AVX) != 0 && (c & bit_OSXSAVE) != 0;
    if (avx) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        avx = (lo & 6u) == 6u; /* XMM and YMM state enabled */
    }
    if (feature[0] == 'f' && feature[1] == '1' && feature[2] == '6' &&
        feature[3] == 'c' && feature[4] == '\0')
        return f16c;
    if (feature[0] == 'a' && feature[1] == 'v' && feature[2] == 'x' &&
        feature[3] == '\0')
        return avx;
    return 0; /* anything else: take the portable path */
}

#define __builtin_cpu_supports(feature) fz_cpu_supports(feature)
#endif

#endif /* FB_FUZZ_CLANG_CPU_SUPPORTS_H */
