/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sets.c -- input sets and their rotation.
 */
#include <math.h>
#include <stddef.h>
#include "bench_sets.h"

int bench_set_buffers(const bench_case *c, bench_buffer_spec out[BENCH_MAX_BUFFERS])
{
    int n = 0;
#define BUF(field, cnt, sc)                                                   \
    out[n++] = (bench_buffer_spec){offsetof(bench_set, field), (cnt), (sc), #field}
    float sk = sqrtf(3.0f / (float)c->k);
    BUF(x, c->m * c->k, 1.0f);
    if (c->routine == BENCH_GEMM) {
        BUF(w, c->n * c->k, sk);
        if (c->bias)
            BUF(b, c->n, 0.5f);
    } else {
        float sh = sqrtf(3.0f / (float)c->h);
        BUF(wg, c->h * c->k, sk);
        BUF(wu, c->h * c->k, sk);
        BUF(wd, c->n * c->h, sh);
        if (c->bias) {
            BUF(bg, c->h, 0.5f);
            BUF(bu, c->h, 0.5f);
            BUF(bd, c->n, 0.5f);
        }
    }
    BUF(y, c->m * c->n, 0.0f);
#undef BUF
    return n;
}

void **bench_set_slot(bench_set *s, const bench_buffer_spec *b)
{
    return (void **)((char *)s + b->offset);
}

int bench_nsets(double set_bytes, double cache_bytes, double scratch_bytes,
                double budget_bytes)
{
    if (set_bytes + scratch_bytes > budget_bytes)
        return 0;
    int n = 1;
    if (set_bytes < cache_bytes)
        n = (int)ceil(2 * cache_bytes / set_bytes);
    if (n > BENCH_MAX_SETS)
        n = BENCH_MAX_SETS;
    while (n > 1 && n * set_bytes + scratch_bytes > budget_bytes)
        n--;
    return n;
}

uint64_t bench_buffer_seed(uint64_t seed, int s, int b)
{
    return seed * 1000003ull + (uint64_t)s * 64 + (uint64_t)b;
}
