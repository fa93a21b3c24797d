/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * half.c -- fp16 and bf16 storage types <-> float, round to nearest even.
 *
 * Bit manipulation on the IEEE encodings, so that the results do not depend
 * on the compiler's _Float16 support or the FPU's rounding mode.
 */
#include <string.h>
#include "fusedblas.h"

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

FB_EXPORT fb_bfloat16 fb_float_to_bfloat16(float x)
{
    uint32_t u = float_bits(x);
    fb_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        /* NaN: keep the sign and the top payload bits, force a quiet bit so
         * that truncation cannot turn it into Inf. */
        r.bits = (uint16_t)((u >> 16) | 0x0040u);
        return r;
    }
    /* Round to nearest even on the 16 bits dropped; overflow rounds to Inf
     * as IEEE says. */
    u += 0x7fffu + ((u >> 16) & 1u);
    r.bits = (uint16_t)(u >> 16);
    return r;
}

FB_EXPORT float fb_bfloat16_to_float(fb_bfloat16 x)
{
    return bits_float((uint32_t)x.bits << 16);
}

FB_EXPORT fb_half fb_float_to_half(float x)
{
    uint32_t u = float_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    fb_half r;

    if (a > 0x7f800000u) { /* NaN: quiet, top payload bits kept */
        r.bits = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
        return r;
    }
    if (a >= 0x477ff000u) { /* >= 65520 rounds to Inf (and Inf stays Inf) */
        r.bits = (uint16_t)(sign | 0x7c00u);
        return r;
    }
    if (a < 0x38800000u) { /* below 2^-14: a half subnormal or zero */
        if (a < 0x33000000u) { /* below 2^-25: rounds to zero */
            r.bits = (uint16_t)sign;
            return r;
        }
        /* Align the 24-bit significand to the subnormal grid of 2^-24. */
        uint32_t mant = (a & 0x007fffffu) | 0x00800000u;
        int shift = 126 - (int)(a >> 23); /* 14..24 */
        uint32_t q = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        r.bits = (uint16_t)(sign | q);
        return r;
    }
    /* Normal: rebias the exponent (127 -> 15) and round 13 bits away; a
     * carry out of the significand correctly bumps the exponent. */
    a -= 0x38000000u;
    a += 0x0fffu + ((a >> 13) & 1u);
    r.bits = (uint16_t)(sign | (a >> 13));
    return r;
}

FB_EXPORT float fb_half_to_float(fb_half x)
{
    uint32_t sign = (uint32_t)(x.bits & 0x8000u) << 16;
    uint32_t e = (x.bits >> 10) & 0x1fu;
    uint32_t m = x.bits & 0x03ffu;
    if (e == 0x1fu) /* Inf or NaN */
        return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return bits_float(sign);
        /* subnormal: m * 2^-24, exact in float */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}
