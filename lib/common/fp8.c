/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fp8.c -- OCP e4m3 <-> float, and the row-wise quantiser.
 *
 * Bit manipulation on the encodings, as half.c does, so that the results
 * depend neither on the compiler nor on the FPU's rounding mode.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "handle.h"
#include "problem_fp8.h"

/* The largest finite e4m3, S.1111.110 = 1.75 * 2^8. */
#define E4M3_MAX_BITS 0x7eu

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

/* q >> shift rounded to nearest, ties to even (1 <= shift <= 31). */
static uint32_t shift_round_even(uint32_t q, int shift)
{
    const uint32_t kept = q >> shift, rest = q & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    return kept + (rest > half || (rest == half && (kept & 1u)));
}

FB_EXPORT fb_e4m3 fb_float_to_e4m3(float x)
{
    const uint32_t u = float_bits(x);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    const uint32_t mag = u & 0x7fffffffu;
    const int e = (int)(mag >> 23); /* the fp32 exponent field */
    fb_e4m3 r;
    uint32_t out;
    if (mag > 0x7f800000u) {
        r.bits = (uint8_t)(sign | 0x7fu);
        return r;
    }
    if (e >= 121) {
        /* A normal e4m3 (or beyond): field e - 120, 3 of the 23 mantissa
         * bits kept; a carry out of the mantissa steps the exponent, as
         * it should. Infinities land beyond the range too. */
        out = shift_round_even(((uint32_t)(e - 120) << 23) |
                                   (mag & 0x7fffffu),
                               20);
        if (out > E4M3_MAX_BITS)
            out = E4M3_MAX_BITS;
    } else if (e == 0 || 141 - e > 24) {
        out = 0; /* below half the smallest subnormal 2^-9: zero */
    } else {
        /* A subnormal e4m3 (units of 2^-9), or the smallest normal when
         * rounding carries into bit 3. */
        out = shift_round_even((mag & 0x7fffffu) | 0x800000u, 141 - e);
    }
    r.bits = (uint8_t)(sign | out);
    return r;
}

FB_EXPORT float fb_e4m3_to_float(fb_e4m3 x)
{
    const uint32_t b = x.bits, sign = (b & 0x80u) << 24;
    const uint32_t e = (b >> 3) & 15u, m = b & 7u;
    if ((b & 0x7fu) == 0x7fu)
        return bits_float(sign | 0x7fc00000u);
    if (e == 0) {
        /* m * 2^-9, exact; the sign kept on zero too */
        const float v = (float)m * 0x1p-9f;
        return bits_float(float_bits(v) | sign);
    }
    return bits_float(sign | ((e + 120u) << 23) | (m << 20));
}

/* ---- the quantiser -------------------------------------------------------- */

enum { Q_ROWS = 2, Q_COLS, Q_W, Q_LDW, Q_Q, Q_LDQ, Q_SCALES };

/* [lo, hi) bytes of a row-major rows x cols matrix of esize elements. */
static int ranges_meet(const void *a, uint64_t abytes, const void *b,
                       uint64_t bbytes)
{
    const uintptr_t alo = (uintptr_t)a, blo = (uintptr_t)b;
    return abytes > 0 && bbytes > 0 && alo < blo + bbytes &&
           blo < alo + abytes;
}

static uint64_t matrix_bytes(int64_t rows, int64_t cols, int64_t ld,
                             int64_t esize)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    return (uint64_t)esize * ((uint64_t)ld * (uint64_t)(rows - 1) +
                              (uint64_t)cols);
}

/* 0, or the position of the first bad argument (checked from the last). */
static int check_quantize(int64_t rows, int64_t cols, const float *W,
                          int64_t ldw, const fb_e4m3 *Q, int64_t ldq,
                          const float *scales, char *msg, size_t len)
{
    int arg = 0;
    const int dims = rows >= 0 && cols >= 0;
    const int run = dims && rows > 0;
    const int64_t lmin = cols > 1 ? cols : 1;
    /* The byte counts below fit: rows * ld elements of at most 4 bytes
     * are refused beyond PTRDIFF_MAX first. */
    const int wfits = dims && ldw >= lmin &&
                      (rows == 0 || ldw <= (PTRDIFF_MAX / 4 - cols) /
                                               (rows > 1 ? rows - 1 : 1));
    const int qfits = dims && ldq >= lmin &&
                      (rows == 0 || ldq <= (PTRDIFF_MAX - cols) /
                                               (rows > 1 ? rows - 1 : 1));
    if (run && scales == NULL)
        arg = Q_SCALES, snprintf(msg, len, "scales is NULL");
    else if (((uintptr_t)scales & 3u) != 0)
        arg = Q_SCALES, snprintf(msg, len, "scales is not aligned to float");
    if (run && wfits && qfits) {
        const uint64_t wb = matrix_bytes(rows, cols, ldw, 4),
                       qb = matrix_bytes(rows, cols, ldq, 1),
                       sb = (uint64_t)rows * 4;
        if (ranges_meet(scales, sb, W, wb) || ranges_meet(scales, sb, Q, qb))
            arg = Q_SCALES,
            snprintf(msg, len, "scales overlaps W or Q; an output must not "
                               "share bytes with an input or another output");
        if (ranges_meet(Q, qb, W, wb))
            arg = Q_Q, snprintf(msg, len, "Q overlaps W; an output must not "
                                          "share bytes with an input");
    }
    if (dims && !qfits)
        arg = Q_LDQ, snprintf(msg, len, "ldq = %lld < max(1, cols) or too "
                              "large for the address space", (long long)ldq);
    if (run && cols > 0 && Q == NULL)
        arg = Q_Q, snprintf(msg, len, "Q is NULL");
    if (dims && !wfits)
        arg = Q_LDW, snprintf(msg, len, "ldw = %lld < max(1, cols) or too "
                              "large for the address space", (long long)ldw);
    if (run && cols > 0 && W == NULL)
        arg = Q_W, snprintf(msg, len, "W is NULL");
    else if (((uintptr_t)W & 3u) != 0)
        arg = Q_W, snprintf(msg, len, "W is not aligned to float");
    if (cols < 0)
        arg = Q_COLS, snprintf(msg, len, "cols < 0");
    if (rows < 0)
        arg = Q_ROWS, snprintf(msg, len, "rows < 0");
    return arg;
}

FB_EXPORT fb_status fb_quantize_e4m3_rows(fb_handle handle, int64_t rows,
                                          int64_t cols, const float *W,
                                          int64_t ldw, fb_e4m3 *Q,
                                          int64_t ldq, float *scales)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);
    char msg[192] = "";
    int arg = check_quantize(rows, cols, W, ldw, Q, ldq, scales, msg,
                             sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg,
                              "fb_quantize_e4m3_rows: %s", msg);
    /* Every row read first, so that a non-finite value refuses the call
     * before anything is written. */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            if (!isfinite(W[r * ldw + c]))
                return fb_handle_fail(
                    h, FB_STATUS_INVALID_ARGUMENT, Q_W,
                    "fb_quantize_e4m3_rows: W(%lld, %lld) is not finite; "
                    "a row-wise scale cannot represent it",
                    (long long)r, (long long)c);
    for (int64_t r = 0; r < rows; r++) {
        const float *w = W + r * ldw;
        float amax = 0.0f;
        for (int64_t c = 0; c < cols; c++)
            amax = fmaxf(amax, fabsf(w[c]));
        /* amax / 448 is 0 only for a row of zeros or of the smallest
         * subnormals (it underflows): such a row gets scale 1 and
         * quantises to zeros. */
        float s = amax / 448.0f;
        if (!(s > 0.0f))
            s = 1.0f;
        scales[r] = s;
        fb_e4m3 *q = Q + r * ldq;
        for (int64_t c = 0; c < cols; c++)
            q[c] = fb_float_to_e4m3(w[c] / s);
    }
    fb_handle_ran(h, FB_BACKEND_CPU, "cpu/quantize-e4m3-rows");
    return FB_STATUS_SUCCESS;
}
