/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_random.h -- random inputs for the benchmark (never zeros: some
 * kernels skip work on zeros, and timing must not depend on the data).
 */
#ifndef FB_BENCH_RANDOM_H
#define FB_BENCH_RANDOM_H

#include <stdint.h>
#include "fusedblas.h"

/* Fill count elements of type dtype at p with values uniform in
 * [-scale, scale), from a counter-based generator keyed by seed (so the
 * result is the same whatever the thread count). Runs on OpenMP threads,
 * which also places the pages near the threads that will use them. */
void bench_fill_uniform(fb_dtype dtype, void *p, int64_t count, uint64_t seed,
                        float scale);

/* The generator itself: a uniform float in [-1, 1) for (seed, index). */
float bench_uniform(uint64_t seed, uint64_t index);

#endif /* FB_BENCH_RANDOM_H */
