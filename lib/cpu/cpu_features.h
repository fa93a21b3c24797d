/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_features.h -- what the x86 CPU running us can do, asked once.
 */
#ifndef FB_CPU_FEATURES_H
#define FB_CPU_FEATURES_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* ask()'s answer, cached in *cached (-1: not asked yet). Threads may race
 * to fill the cache; they store the same answer, and the atomics make the
 * race well defined. */
static inline int fb_cpu_cached(int *cached, int (*ask)(void))
{
    int v = __atomic_load_n(cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = ask();
        __atomic_store_n(cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

static inline int fb_cpu_ask_avx2_fma_f16c(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}

static inline int fb_cpu_ask_avx512bw(void)
{
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && fb_cpu_ask_avx2_fma_f16c();
}

static inline int fb_cpu_ask_avx512vbmi(void)
{
    return fb_cpu_ask_avx512bw() && __builtin_cpu_supports("avx512vbmi");
}

/* AVX2, FMA and F16C: what the AVX2 kernels use. */
static inline int fb_cpu_has_avx2_fma_f16c(void)
{
    static int cached = -1;
    return fb_cpu_cached(&cached, fb_cpu_ask_avx2_fma_f16c);
}

/* AVX-512 F and BW (bytes and words in zmm): the e4m3 kernel's zmm dots. */
static inline int fb_cpu_has_avx512bw(void)
{
    static int cached = -1;
    return fb_cpu_cached(&cached, fb_cpu_ask_avx512bw);
}

/* ... and VBMI (byte permutes): the e4m3 kernel's zmm register form. */
static inline int fb_cpu_has_avx512vbmi(void)
{
    static int cached = -1;
    return fb_cpu_cached(&cached, fb_cpu_ask_avx512vbmi);
}
#endif

#endif /* FB_CPU_FEATURES_H */
