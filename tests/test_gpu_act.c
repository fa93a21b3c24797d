/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_act.c -- the fast form of the CUDA activations (the 16-bit
 * tiny kernels, the prefill pair, the GEMM engine) against the accurate
 * form of every other GPU path, on the GPU: for every activation, about
 * four million inputs (every float of [-16, 16) on a fine grid, powers of
 * two and their neighbours from the smallest subnormal to the largest
 * float, both signs, random floats of every exponent, +-0, +-Inf, NaN):
 *   |fast(x) - accurate(x)| <= 2^-20 |x| + 2^-149
 * (sgemm_bias_act(3)), NaN for NaN, the same limits at the infinities, and
 * relu and gelu_erf identical (the fast form keeps the accurate ones).
 * The largest error seen, in units of the bound, is printed.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is no GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "act_sweep.h"
#include "cuda_mem.h"
#include "harness.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int64_t inputs(float *x, int64_t cap)
{
    int64_t n = 0;
#define PUT(v)                                                                 \
    do {                                                                       \
        if (n < cap)                                                           \
            x[n++] = (v);                                                      \
    } while (0)
    for (int64_t i = -(1 << 21); i < (1 << 21); i++)
        PUT((float)i / (float)(1 << 17)); /* [-16, 16), step 2^-17 */
    for (int e = 0; e < 255; e++)
        for (int d = -2; d <= 2; d++) {
            const uint32_t b = ((uint32_t)e << 23) + (uint32_t)(d + 2);
            PUT(from_bits(b));
            PUT(-from_bits(b));
            if (e > 0) {
                PUT(from_bits(((uint32_t)e << 23) - 1u));
                PUT(-from_bits(((uint32_t)e << 23) - 1u));
            }
        }
    for (int i = 0; i < (1 << 20); i++) {
        uint32_t b = (uint32_t)rng_next() & 0xffffffffu;
        if (((b >> 23) & 0xffu) == 0xffu)
            b &= ~(1u << 30); /* finite */
        PUT(from_bits(b));
    }
    PUT(0.0f);
    PUT(-0.0f);
    PUT(INFINITY);
    PUT(-INFINITY);
    PUT(from_bits(0x7fc00000u));
    PUT(from_bits(0xffc00001u));
    PUT(from_bits(0x7f800001u)); /* a signalling NaN */
#undef PUT
    return n;
}

int main(void)
{
    tap_begin("test_gpu_act");
    if (cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    const int64_t cap = (int64_t)6 << 20;
    float *x = malloc((size_t)cap * sizeof *x);
    float *fast = malloc((size_t)cap * sizeof *fast);
    float *acc = malloc((size_t)cap * sizeof *acc);
    if (x == NULL || fast == NULL || acc == NULL)
        tap_bail("out of memory");
    const int64_t n = inputs(x, cap);
    static const fb_activation acts[] = {FB_ACT_NONE, FB_ACT_RELU,
                                         FB_ACT_GELU_TANH, FB_ACT_GELU_ERF,
                                         FB_ACT_SILU};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        const fb_activation act = acts[a];
        if (!fb_test_act_sweep((int)act, x, fast, acc, (int)n))
            tap_bail("the activation kernel failed");
        const int same_form = act == FB_ACT_NONE || act == FB_ACT_RELU ||
                              act == FB_ACT_GELU_ERF;
        int64_t bad = 0, first = -1;
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const double xi = x[i], f = fast[i], c = acc[i];
            int ok;
            if (same_form) {
                ok = bits_of(fast[i]) == bits_of(acc[i]) ||
                     (isnan(f) && isnan(c));
            } else if (isnan(xi)) {
                ok = isnan(f) && isnan(c);
            } else if (isinf(xi)) {
                ok = f == c && (xi > 0 ? f == INFINITY : f == 0.0);
            } else {
                const double bound = ldexp(fabs(xi), -20) + ldexp(1.0, -149);
                const double err = fabs(f - c);
                ok = !isnan(f) && err <= bound;
                if (err / bound > worst)
                    worst = err / bound;
            }
            if (!ok && bad++ == 0)
                first = i;
        }
        if (first >= 0)
            tap_diag("first disagreement: x = %a, fast %a, accurate %a",
                     (double)x[first], (double)fast[first],
                     (double)acc[first]);
        if (same_form)
            tap_ok(bad == 0, "%s: the fast form is the accurate one, bit for "
                   "bit, on %lld inputs (%lld differ)", act_name(act),
                   (long long)n, (long long)bad);
        else
            tap_ok(bad == 0, "%s: |fast - accurate| <= 2^-20 |x| + 2^-149 on "
                   "%lld inputs, NaN and the limits at +-Inf kept (%lld "
                   "outside; largest error %.3f of the bound)",
                   act_name(act), (long long)n, (long long)bad, worst);
    }
    free(x), free(fast), free(acc);
    return tap_end();
}
