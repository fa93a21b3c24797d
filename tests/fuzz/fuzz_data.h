/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_data.h -- what the fuzzer knows about the three storage types: how
 * to read an element exactly (without trusting the library's own
 * conversions), how to store one, the NaN patterns that tell guards,
 * poison and input NaNs apart, and the values it feeds the library.
 */
#ifndef FB_FUZZ_DATA_H
#define FB_FUZZ_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "fusedblas.h"

/* ---- the fuzzer's input, as a stream -------------------------------------
 * Bytes are taken in order; past the end every take returns 0, so a short
 * input is still a complete (mostly zero-sized) call. rng is a generator
 * seeded from the bytes for data that the input does not spell out. */
typedef struct fz_bytes {
    const uint8_t *p;
    size_t n, at;
    uint64_t rng;
} fz_bytes;

void fz_bytes_init(fz_bytes *b, const uint8_t *data, size_t size);
uint8_t fz_take(fz_bytes *b);
uint64_t fz_rng(fz_bytes *b);
double fz_rng_unit(fz_bytes *b); /* [0, 1) */

/* ---- storage types -------------------------------------------------------- */
int64_t fz_size(fb_dtype t); /* bytes per element */
/* Element idx widened exactly to double, decoded from its bits here. */
double fz_get(fb_dtype t, const void *base, int64_t idx);
uint32_t fz_bits(fb_dtype t, const void *base, int64_t idx);
void fz_set_bits(fb_dtype t, void *base, int64_t idx, uint32_t bits);
/* Store v rounded to t (through float, then the public conversion). */
void fz_set(fb_dtype t, void *base, int64_t idx, double v);

/* Three NaNs with payloads of their own, so that a result can be told
 * apart from an element that was never written (poison), and a read of
 * padding or of the space around a buffer (guard) shows up as NaN. Input
 * NaNs use a third payload. */
uint32_t fz_guard_bits(fb_dtype t);
uint32_t fz_poison_bits(fb_dtype t);
uint32_t fz_input_nan_bits(fb_dtype t);

/* Unit roundoff (2^-p) of t, and half its smallest subnormal: the
 * relative and the absolute part of one rounding to t. */
double fz_unit(fb_dtype t);
double fz_tiny(fb_dtype t);
/* The magnitude from which rounding to t gives Inf: the largest finite
 * value plus half an ulp of it. */
double fz_overflow_threshold(fb_dtype t);

/* ---- values ----------------------------------------------------------------
 * A value for an element of type t: mode picks the distribution (small
 * integers whose sums are exact, uniform, a wide exponent range, or those
 * with special values mixed in). Returns the value to store, or sets
 * *is_nan for an input NaN. */
#define FZ_NMODES 6
double fz_value(fz_bytes *b, fb_dtype t, int mode, int *is_nan);
/* One of 16 special values of t (NaN, +-Inf, +-0, subnormals, the largest
 * finite, huge, tiny, ...), by code. */
double fz_special(fb_dtype t, int code, int *is_nan);
/* alpha and beta: one of 16 scalars (0, 1, -1, ..., NaN, +-Inf, a float
 * subnormal, FLT_MAX) or a random one. */
float fz_scalar(fz_bytes *b, int code);

#endif /* FB_FUZZ_DATA_H */
