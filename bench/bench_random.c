/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_random.c -- counter-based random fill (splitmix64 finaliser of
 * seed + index), parallel and reproducible.
 */
#include "bench_convert.h"
#include "bench_random.h"

float bench_uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    /* 24 random bits -> [0, 1) -> [-1, 1) */
    return (float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

void bench_fill_uniform(fb_dtype dtype, void *p, int64_t count, uint64_t seed,
                        float scale)
{
    if (dtype == FB_DTYPE_F32) {
        float *f = p;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; i++)
            f[i] = scale * bench_uniform(seed, (uint64_t)i);
    } else if (dtype == FB_DTYPE_BF16) {
        uint16_t *b = p;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; i++)
            b[i] = bench_f32_to_bf16(scale * bench_uniform(seed, (uint64_t)i));
    } else {
        uint16_t *b = p;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; i++)
            b[i] = bench_f32_to_f16(scale * bench_uniform(seed, (uint64_t)i));
    }
}
