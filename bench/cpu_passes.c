/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_passes.c -- vectorised elementwise passes for the unfused CPU baseline.
 *
 * exp is Cody-Waite range reduction plus Cephes' degree-5 minimax
 * polynomial (about 1 ulp); erf is Abramowitz & Stegun 7.1.26 (absolute
 * error below 1.5e-7). gelu_tanh is computed as x * sigmoid(2u), the same
 * function as 0.5x(1 + tanh(u)) without tanh's cancellation. No floorf:
 * GCC only vectorises it with -fno-trapping-math, so rounding uses the
 * 1.5 * 2^23 trick. NaN in gives NaN out for every activation.
 */
#include <omp.h>
#include "bench_convert.h"
#include "cpu_passes.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    __GNUC__ >= 11
#define PASS_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PASS_CLONES
#endif

static inline float pass_exp(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23 */
    float t = x * 1.44269504088896341f + round_magic;
    float n = t - round_magic;
    int32_t ni = (int32_t)(bench_f32_bits(t) - 0x4b400000u);
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    return y * bench_bits_f32((uint32_t)(ni + 127) << 23);
}

static inline float pass_erf(float x)
{
    float z = x < 0 ? -x : x;
    float t = 1.0f / (1.0f + 0.3275911f * z);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    float y = 1.0f - p * t * pass_exp(-z * z);
    return x < 0 ? -y : y;
}

static inline float pass_act(fb_activation act, float x)
{
    switch (act) {
    case FB_ACT_RELU:
        return x < 0.0f ? 0.0f : x; /* NaN < 0 is false: NaN stays */
    case FB_ACT_GELU_TANH: {
        /* 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) */
        float u2 = 1.5957691216057308f * (x + 0.044715f * x * x * x);
        return x / (1.0f + pass_exp(-u2));
    }
    case FB_ACT_GELU_ERF:
        return 0.5f * x * (1.0f + pass_erf(x * 0.70710678118654752f));
    case FB_ACT_SILU:
        return x / (1.0f + pass_exp(-x));
    case FB_ACT_NONE:
    default:
        return x;
    }
}

float bench_act_scalar(fb_activation act, float x)
{
    return pass_act(act, x);
}

/* Run STMT with A bound to act as a compile-time constant, so that each
 * activation gets its own branch-free, vectorised loop. */
#define FOR_ACT(act, STMT)                                                    \
    switch (act) {                                                            \
    case FB_ACT_RELU: { const fb_activation A = FB_ACT_RELU; STMT; } break;   \
    case FB_ACT_GELU_TANH: { const fb_activation A = FB_ACT_GELU_TANH; STMT; } break; \
    case FB_ACT_GELU_ERF: { const fb_activation A = FB_ACT_GELU_ERF; STMT; } break; \
    case FB_ACT_SILU: { const fb_activation A = FB_ACT_SILU; STMT; } break;   \
    default: { const fb_activation A = FB_ACT_NONE; STMT; } break;            \
    }

/* A vectorised loop; _Pragma, since #pragma cannot sit in a macro argument. */
#define SIMD_FOR(j, lo, hi) _Pragma("omp simd") for (int64_t j = (lo); j < (hi); j++)

/* A block of rows [r0, r1) and columns [c0, c1) of an m x n pass: whole
 * rows per thread when there are enough rows, otherwise column slices (the
 * decode shapes have m = 1). Column slices start on 16-element boundaries. */
typedef struct pass_block {
    int64_t r0, r1, c0, c1;
} pass_block;

static pass_block my_block(int64_t m, int64_t n)
{
    int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    pass_block b;
    if (m >= nt) {
        b.r0 = m * t / nt;
        b.r1 = m * (t + 1) / nt;
        b.c0 = 0;
        b.c1 = n;
    } else {
        b.r0 = 0;
        b.r1 = m;
        b.c0 = (n * t / nt) & ~(int64_t)15;
        b.c1 = t + 1 == nt ? n : (n * (t + 1) / nt) & ~(int64_t)15;
    }
    return b;
}

PASS_CLONES
static void bias_act_f32_block(float *c, int64_t ldc, const float *bias,
                               fb_activation act, pass_block b)
{
    for (int64_t i = b.r0; i < b.r1; i++) {
        float *restrict row = c + i * ldc;
        if (bias) {
            const float *restrict bv = bias;
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        row[j] = pass_act(A, row[j] + bv[j]))
        } else {
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        row[j] = pass_act(A, row[j]))
        }
    }
}

void bench_pass_bias_act_f32(float *c, int64_t m, int64_t n, int64_t ldc,
                             const float *bias, fb_activation act)
{
#pragma omp parallel
    bias_act_f32_block(c, ldc, bias, act, my_block(m, n));
}

PASS_CLONES
static void bias_act_to16_block(const float *c, int64_t n, const float *bias,
                                fb_activation act, int bf16, uint16_t *out,
                                pass_block b)
{
    static const float zero_bias[16];
    for (int64_t i = b.r0; i < b.r1; i++) {
        const float *restrict row = c + i * n;
        uint16_t *restrict o = out + i * n;
        /* A zero bias keeps one loop per activation and dtype; adding an
         * L1-resident vector costs nothing in a memory-bound pass. */
        const float *restrict bv = bias;
        int64_t bstride = bias ? 1 : 0;
        if (!bias)
            bv = zero_bias;
        if (bf16) {
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        o[j] = bench_f32_to_bf16(pass_act(A, row[j] + bv[j * bstride])))
        } else {
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        o[j] = bench_f32_to_f16(pass_act(A, row[j] + bv[j * bstride])))
        }
    }
}

void bench_pass_bias_act_to16(const float *c, int64_t m, int64_t n,
                              const float *bias, fb_activation act,
                              fb_dtype out_type, void *out)
{
    int bf16 = out_type == FB_DTYPE_BF16;
#pragma omp parallel
    bias_act_to16_block(c, n, bias, act, bf16, out, my_block(m, n));
}

PASS_CLONES
static void geglu_block(const float *g, const float *u, int64_t h,
                        const float *bg, const float *bu, fb_activation act,
                        fb_dtype out_type, void *out, pass_block b)
{
    static const float zero_bias[16];
    const float *restrict gb = bg ? bg : zero_bias;
    const float *restrict ub = bu ? bu : zero_bias;
    int64_t gs = bg ? 1 : 0, us = bu ? 1 : 0;
    for (int64_t i = b.r0; i < b.r1; i++) {
        const float *restrict gr = g + i * h;
        const float *restrict ur = u + i * h;
        if (out_type == FB_DTYPE_F32) {
            float *restrict o = (float *)out + i * h;
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        o[j] = pass_act(A, gr[j] + gb[j * gs]) * (ur[j] + ub[j * us]))
        } else if (out_type == FB_DTYPE_BF16) {
            uint16_t *restrict o = (uint16_t *)out + i * h;
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        o[j] = bench_f32_to_bf16(pass_act(A, gr[j] + gb[j * gs]) *
                                                 (ur[j] + ub[j * us])))
        } else {
            uint16_t *restrict o = (uint16_t *)out + i * h;
            FOR_ACT(act, SIMD_FOR(j, b.c0, b.c1)
                        o[j] = bench_f32_to_f16(pass_act(A, gr[j] + gb[j * gs]) *
                                                (ur[j] + ub[j * us])))
        }
    }
}

void bench_pass_geglu(const float *g, const float *u, int64_t m, int64_t h,
                      const float *bg, const float *bu, fb_activation act,
                      fb_dtype out_type, void *out)
{
#pragma omp parallel
    geglu_block(g, u, h, bg, bu, act, out_type, out, my_block(m, h));
}

PASS_CLONES
static void to_f32_range(fb_dtype in_type, const uint16_t *in, float *out,
                         int64_t i0, int64_t i1)
{
    const uint16_t *restrict src = in;
    float *restrict dst = out;
    if (in_type == FB_DTYPE_BF16) {
#pragma omp simd
        for (int64_t i = i0; i < i1; i++)
            dst[i] = bench_bf16_to_f32(src[i]);
    } else {
#pragma omp simd
        for (int64_t i = i0; i < i1; i++)
            dst[i] = bench_f16_to_f32(src[i]);
    }
}

PASS_CLONES
static void from_f32_range(fb_dtype out_type, const float *in, uint16_t *out,
                           int64_t i0, int64_t i1)
{
    const float *restrict src = in;
    uint16_t *restrict dst = out;
    if (out_type == FB_DTYPE_BF16) {
#pragma omp simd
        for (int64_t i = i0; i < i1; i++)
            dst[i] = bench_f32_to_bf16(src[i]);
    } else {
#pragma omp simd
        for (int64_t i = i0; i < i1; i++)
            dst[i] = bench_f32_to_f16(src[i]);
    }
}

void bench_convert_to_f32(fb_dtype in_type, const void *in, float *out,
                          int64_t count)
{
#pragma omp parallel
    {
        pass_block b = my_block(1, count);
        to_f32_range(in_type, in, out, b.c0, b.c1);
    }
}

void bench_convert_from_f32(fb_dtype out_type, const float *in, void *out,
                            int64_t count)
{
#pragma omp parallel
    {
        pass_block b = my_block(1, count);
        from_f32_range(out_type, in, out, b.c0, b.c1);
    }
}
