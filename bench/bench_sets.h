/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sets.h -- the buffers of one input set, and how many sets to rotate
 * through so that a case whose data fits in cache is not timed hot.
 */
#ifndef FB_BENCH_SETS_H
#define FB_BENCH_SETS_H

#include <stddef.h>
#include <stdint.h>
#include "bench.h"

#define BENCH_MAX_BUFFERS 10
#define BENCH_MAX_SETS 256

/* One buffer of a set: where it sits in bench_set, how many elements,
 * and the scale of its random values (0 for the output). */
typedef struct bench_buffer_spec {
    size_t offset;
    int64_t count;
    float scale;
    const char *name;
} bench_buffer_spec;

/* The buffers case c needs; returns how many (at most BENCH_MAX_BUFFERS).
 * Weights are uniform with variance 1/fan_in, so every layer's outputs stay
 * near unit size and fp16 never overflows; X in [-1, 1); biases in
 * [-0.5, 0.5). */
int bench_set_buffers(const bench_case *c, bench_buffer_spec out[BENCH_MAX_BUFFERS]);

/* Address of one buffer pointer inside a set. */
void **bench_set_slot(bench_set *s, const bench_buffer_spec *b);

/* How many sets to rotate through: enough that the sets together are
 * twice the cache (at most BENCH_MAX_SETS), as far as the budget allows
 * beside the fixed scratch; 1 if one set does not fit in the cache; 0 if
 * even one set does not fit the budget. */
int bench_nsets(double set_bytes, double cache_bytes, double scratch_bytes,
                double budget_bytes);

/* A seed for buffer b of set s of a run seeded with seed. */
uint64_t bench_buffer_seed(uint64_t seed, int s, int b);

#endif /* FB_BENCH_SETS_H */
