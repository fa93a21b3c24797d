/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_check.h -- does an implementation's output agree with the
 * baseline's? A benchmark that times wrong answers measures nothing.
 */
#ifndef FB_BENCH_CHECK_H
#define FB_BENCH_CHECK_H

#include <stdint.h>
#include "bench.h"

/* max |y - ref| / max |ref| over count elements of type t; +Inf if y holds
 * a NaN or Inf that ref does not (a poisoned element left unwritten). */
double bench_rel_err(fb_dtype t, const void *y, const void *ref, int64_t count);

/* The largest rel err two correct implementations may differ by: rounding
 * of the stored intermediates and outputs (a few units of the storage type)
 * plus fp32 accumulation over the reduction length (sqrt(K) units; TF32's
 * units when allowed). From the dtype and K, not from what was observed. */
double bench_check_tol(const bench_case *c, int tf32);

/* Byte value that makes every element NaN in all three types. */
#define BENCH_POISON_BYTE 0xff

#endif /* FB_BENCH_CHECK_H */
