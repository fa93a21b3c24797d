/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_convert.h -- fp16/bf16 <-> fp32 conversions written so that a
 * compiler can vectorise them (no branches, no calls), for the CPU
 * baselines' elementwise passes. Round to nearest even; NaN stays NaN.
 * The library has its own conversions; the baselines must not depend on
 * the code they are measured against.
 */
#ifndef FB_BENCH_CONVERT_H
#define FB_BENCH_CONVERT_H

#include <stdint.h>
#include <string.h>

static inline uint32_t bench_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bench_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float bench_bf16_to_f32(uint16_t h)
{
    return bench_bits_f32((uint32_t)h << 16);
}

static inline uint16_t bench_f32_to_bf16(float f)
{
    uint32_t u = bench_f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = (u >> 16) | 0x40u;
    int is_nan = (u & 0x7fffffffu) > 0x7f800000u;
    return (uint16_t)(is_nan ? quiet_nan : rounded);
}

static inline float bench_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    /* normal: rebias the exponent from 15 to 127 */
    uint32_t normal = (em << 13) + 0x38000000u;
    /* Inf and NaN: all-ones exponent, the mantissa kept */
    uint32_t special = (em << 13) | 0x7f800000u;
    /* zero and subnormal: em * 2^-24 is exact in fp32 */
    uint32_t tiny = bench_f32_bits((float)em * 5.9604644775390625e-8f);
    uint32_t mag = em >= 0x7c00u ? special : em < 0x0400u ? tiny : normal;
    return bench_bits_f32(sign | mag);
}

static inline uint16_t bench_f32_to_f16(float f)
{
    uint32_t u = bench_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    /* normal half: rebias, then round the 13 dropped bits to even; a carry
     * out of the mantissa correctly bumps the exponent (up to Inf at 65520) */
    uint32_t nb = a - 0x38000000u;
    uint32_t normal = (nb + 0x0fffu + ((nb >> 13) & 1u)) >> 13;
    /* subnormal half: adding 0.5 lines the value up with the half's last
     * mantissa bit, and the FPU rounds to even */
    uint32_t sub = bench_f32_bits(bench_bits_f32(a) + 0.5f) - 0x3f000000u;
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
    uint32_t mag = a > 0x7f800000u   ? nan
                   : a >= 0x47800000u ? 0x7c00u
                   : a < 0x38800000u  ? sub
                                      : normal;
    return (uint16_t)(sign | mag);
}

#endif /* FB_BENCH_CONVERT_H */
