/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_data.c -- storage types, NaN patterns and value generators for the
 * fuzzer. See fuzz_data.h.
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include "fuzz_data.h"

/* ---- the input stream ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fz_bytes_init(fz_bytes *b, const uint8_t *data, size_t size)
{
    b->p = data;
    b->n = size;
    b->at = 0;
    /* FNV-1a over the whole input: a mutation anywhere changes the data
     * that the input does not spell out, as it should. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 0x100000001b3ull;
    b->rng = h;
}

uint8_t fz_take(fz_bytes *b)
{
    return b->at < b->n ? b->p[b->at++] : 0;
}

uint64_t fz_rng(fz_bytes *b)
{
    return splitmix64(&b->rng);
}

double fz_rng_unit(fz_bytes *b)
{
    return (double)(fz_rng(b) >> 11) * 0x1p-53;
}

/* ---- storage types ------------------------------------------------------------ */

int64_t fz_size(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 4 : 2;
}

uint32_t fz_bits(fb_dtype t, const void *base, int64_t idx)
{
    if (t == FB_DTYPE_F32) {
        uint32_t u;
        memcpy(&u, (const char *)base + idx * 4, 4);
        return u;
    }
    uint16_t h;
    memcpy(&h, (const char *)base + idx * 2, 2);
    return h;
}

void fz_set_bits(fb_dtype t, void *base, int64_t idx, uint32_t bits)
{
    if (t == FB_DTYPE_F32) {
        memcpy((char *)base + idx * 4, &bits, 4);
    } else {
        uint16_t h = (uint16_t)bits;
        memcpy((char *)base + idx * 2, &h, 2);
    }
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static double half_bits_to_double(uint32_t h)
{
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    const int e = (int)((h >> 10) & 0x1f);
    const int f = (int)(h & 0x3ff);
    if (e == 0x1f)
        return f ? NAN : sign * INFINITY;
    if (e == 0)
        return sign * ldexp((double)f, -24);
    return sign * ldexp((double)(f + 1024), e - 25);
}

double fz_get(fb_dtype t, const void *base, int64_t idx)
{
    const uint32_t u = fz_bits(t, base, idx);
    float f;
    switch (t) {
    case FB_DTYPE_F32:
        memcpy(&f, &u, 4);
        return f;
    case FB_DTYPE_BF16: {
        /* bfloat16 is the top half of a float. */
        const uint32_t w = u << 16;
        memcpy(&f, &w, 4);
        return f;
    }
    case FB_DTYPE_F16:
        return half_bits_to_double(u);
    }
    return NAN;
}

void fz_set(fb_dtype t, void *base, int64_t idx, double v)
{
    const float f = (float)v;
    switch (t) {
    case FB_DTYPE_F32: {
        uint32_t u;
        memcpy(&u, &f, 4);
        fz_set_bits(t, base, idx, u);
        return;
    }
    case FB_DTYPE_F16:
        fz_set_bits(t, base, idx, fb_float_to_half(f).bits);
        return;
    case FB_DTYPE_BF16:
        fz_set_bits(t, base, idx, fb_float_to_bfloat16(f).bits);
        return;
    }
}

/* Quiet NaNs (so that arithmetic keeps them quiet), payloads chosen to be
 * unlike the default NaN (0x7fc00000 / 0xffc00000) that arithmetic makes. */
uint32_t fz_guard_bits(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x7fc0face : t == FB_DTYPE_F16 ? 0x7e3c : 0x7fcb;
}

uint32_t fz_poison_bits(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x7fc0dead : t == FB_DTYPE_F16 ? 0x7e5a : 0x7fc5;
}

uint32_t fz_input_nan_bits(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x7fc12345 : t == FB_DTYPE_F16 ? 0x7e11 : 0x7fd1;
}

double fz_unit(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x1p-24 : t == FB_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
}

double fz_tiny(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x1p-150 : t == FB_DTYPE_F16 ? 0x1p-25 : 0x1p-134;
}

double fz_overflow_threshold(fb_dtype t)
{
    /* (2 - 2^-p) 2^emax with p = 24, 11, 8 significant bits. */
    switch (t) {
    case FB_DTYPE_F32: return ldexp(2.0 - 0x1p-24, 127);
    case FB_DTYPE_F16: return ldexp(2.0 - 0x1p-11, 15);
    case FB_DTYPE_BF16: return ldexp(2.0 - 0x1p-8, 127);
    }
    return INFINITY;
}

/* ---- values ---------------------------------------------------------------------- */

static double largest_finite(fb_dtype t)
{
    switch (t) {
    case FB_DTYPE_F32: return FLT_MAX;
    case FB_DTYPE_F16: return 65504.0;
    case FB_DTYPE_BF16: return ldexp(2.0 - 0x1p-7, 127);
    }
    return 0;
}

static double smallest_subnormal(fb_dtype t)
{
    return 2.0 * fz_tiny(t);
}

static double smallest_normal(fb_dtype t)
{
    return t == FB_DTYPE_F16 ? 0x1p-14 : 0x1p-126;
}

double fz_special(fb_dtype t, int code, int *is_nan)
{
    *is_nan = 0;
    switch (code & 15) {
    case 0: *is_nan = 1; return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 0.0;
    case 4: return -0.0;
    case 5: return smallest_subnormal(t);
    case 6: return -3.0 * smallest_subnormal(t);
    case 7: return largest_finite(t);
    case 8: return -largest_finite(t);
    case 9: return smallest_normal(t);
    case 10: return 1e30;  /* Inf in fp16 */
    case 11: return -1e-30; /* 0 in fp16, a subnormal nowhere */
    case 12: return 1.0;
    case 13: return -1.0;
    case 14: return 1e-6;
    default: return 0.1;
    }
}

/* A uniform value in [-1, 1], never zero. */
static double uniform(fz_bytes *b)
{
    double v = 2.0 * fz_rng_unit(b) - 1.0;
    return v != 0.0 ? v : 0.5;
}

double fz_value(fz_bytes *b, fb_dtype t, int mode, int *is_nan)
{
    *is_nan = 0;
    switch (mode % FZ_NMODES) {
    case 0: { /* small integers: every sum is exact in fp32 */
        int v = (int)(fz_rng(b) % 9) - 4;
        return v != 0 ? v : 1;
    }
    case 1:
        return uniform(b);
    case 2: { /* a wide exponent range, inside what the type holds */
        const int span = t == FB_DTYPE_F16 ? 12 : 50;
        const int e = (int)(fz_rng(b) % (uint64_t)(2 * span + 1)) - span;
        return ldexp(uniform(b), e);
    }
    case 3: /* uniform with a special one in 16 */
        if (fz_rng(b) % 16 == 0)
            return fz_special(t, (int)(fz_rng(b) % 16), is_nan);
        return uniform(b);
    case 4: { /* extremes: subnormals, near-overflow, tiny normals */
        static const int codes[] = {5, 6, 7, 8, 9, 11, 12, 13};
        if (fz_rng(b) % 2 == 0)
            return fz_special(t, codes[fz_rng(b) % 8], is_nan);
        return uniform(b);
    }
    default: { /* small integers with a special one in 32 */
        if (fz_rng(b) % 32 == 0)
            return fz_special(t, (int)(fz_rng(b) % 16), is_nan);
        int v = (int)(fz_rng(b) % 9) - 4;
        return v != 0 ? v : -1;
    }
    }
}

float fz_scalar(fz_bytes *b, int code)
{
    switch (code & 15) {
    case 0: return 1.0f;
    case 1: return 0.0f;
    case 2: return -1.0f;
    case 3: return 0.5f;
    case 4: return 2.0f;
    case 5: return -0.0f;
    case 6: return 1e-30f;
    case 7: return 1e30f;
    case 8: return NAN;
    case 9: return INFINITY;
    case 10: return -INFINITY;
    case 11: return 1e-40f; /* a float subnormal */
    case 12: return FLT_MAX;
    case 13: return 3.25f;
    case 14: return -0.1f;
    default: return (float)(4.0 * fz_rng_unit(b) - 2.0);
    }
}
