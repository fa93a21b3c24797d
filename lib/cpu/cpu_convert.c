/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_convert.c -- 16-bit <-> fp32 conversion loops.
 *
 * bf16 is the top half of an fp32, so both directions are integer
 * arithmetic that the compiler vectorises. fp16 uses the F16C instructions
 * (VCVTPH2PS / VCVTPS2PH, IEEE round to nearest even) when the CPU has
 * them, else the library's exact scalar conversion.
 */
#include <string.h>
#include "cpu_convert.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FB_HAVE_F16C_PATH 1
#endif

/* ---- bf16 ---------------------------------------------------------------- */

static void bf16_to_f32(const uint16_t *src, float *dst, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}

static void f32_to_bf16(const float *src, uint16_t *dst, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t quiet = (u >> 16) | 0x40u; /* NaN stays a NaN */
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
}

/* ---- fp16 ---------------------------------------------------------------- */

#if defined(FB_HAVE_F16C_PATH)
__attribute__((target("avx,f16c"))) static void
f16_to_f32_f16c(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx,f16c"))) static void
f32_to_f16_f16c(const float *src, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                         _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

static int have_f16c(void)
{
    /* Threads may race to fill the cache; they all store the same answer,
     * and the atomics make that race well defined. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

static void f16_to_f32(const uint16_t *src, float *dst, int64_t n)
{
#if defined(FB_HAVE_F16C_PATH)
    if (have_f16c()) {
        f16_to_f32_f16c(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = fb_half_to_float((fb_half){src[i]});
}

static void f32_to_f16(const float *src, uint16_t *dst, int64_t n)
{
#if defined(FB_HAVE_F16C_PATH)
    if (have_f16c()) {
        f32_to_f16_f16c(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = fb_float_to_half(src[i]).bits;
}

/* ---- public within the backend ------------------------------------------ */

void fb_cpu_to_f32(fb_dtype dtype, const void *src, float *dst, int64_t n)
{
    if (dtype == FB_DTYPE_BF16)
        bf16_to_f32(src, dst, n);
    else if (dtype == FB_DTYPE_F16)
        f16_to_f32(src, dst, n);
    else
        memcpy(dst, src, (size_t)n * sizeof(float));
}

void fb_cpu_from_f32(fb_dtype dtype, const float *src, void *dst, int64_t n)
{
    if (dtype == FB_DTYPE_BF16)
        f32_to_bf16(src, dst, n);
    else if (dtype == FB_DTYPE_F16)
        f32_to_f16(src, dst, n);
    else
        memmove(dst, src, (size_t)n * sizeof(float));
}

void fb_cpu_round_to(fb_dtype dtype, float *x, int64_t n)
{
    if (dtype == FB_DTYPE_F32)
        return;
    uint16_t tmp[256];
    for (int64_t i = 0; i < n; i += 256) {
        int64_t c = n - i < 256 ? n - i : 256;
        fb_cpu_from_f32(dtype, x + i, tmp, c);
        fb_cpu_to_f32(dtype, tmp, x + i, c);
    }
}

void fb_cpu_pack_f32(fb_dtype dtype, const void *src, int64_t ld,
                     int64_t rows, int64_t cols, float *dst)
{
    const char *s = src;
    const int64_t es = fb_dtype_size(dtype);
    for (int64_t j = 0; j < cols; j++)
        fb_cpu_to_f32(dtype, s + j * ld * es, dst + j * rows, rows);
}
