/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_fp8_portable.c -- the portable C form of the CPU e4m3 kernel
 * (lib/cpu/cpu_fp8_kernel.c built with FB_E4M3_PORTABLE_ONLY, as a CPU
 * without AVX2 runs it), which the library's tests do not reach on an
 * AVX2 machine: fb_cpu_e4m3_dots against a double reference, every e4m3
 * pattern but NaN, contiguous and strided weights, ragged m, n and k.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_fp8_kernel.h"
#include "e4m3_oracle.h"
#include "harness.h"

static void one(int64_t m, int64_t n, int64_t k, int strided)
{
    const int64_t ldx = fb_cpu_e4m3_panel_ld(k), ldo = n + 3;
    float *x = calloc((size_t)(m * ldx), sizeof *x);
    float *out = malloc((size_t)(m * ldo) * sizeof *out);
    uint8_t *w = malloc((size_t)(n * k > 0 ? n * k : 1));
    if (x == NULL || out == NULL || w == NULL)
        tap_bail("out of memory");
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            x[i * ldx + p] = (float)(2.0 * rng_unit() - 1.0);
    for (int64_t i = 0; i < n * k; i++) {
        unsigned b;
        do
            b = (unsigned)rng_below(256);
        while ((b & 0x7f) == 0x7f);
        w[i] = (uint8_t)b;
    }
    /* q(j, p) at j * w_cs + p * w_ks: rows, or columns of a k x n array */
    const int64_t w_cs = strided ? 1 : k, w_ks = strided ? n : 1;
    fb_cpu_e4m3_dots(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
    tcheck c;
    tcheck_init(&c);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double gauge;
            const double ref =
                e4m3_oracle_dot(x + i * ldx, w, w_cs, w_ks, j, k, &gauge);
            /* k products and k - 1 sums in fp32: gamma_k */
            const double u = 0x1p-24, bound = k * u / (1 - k * u) * gauge;
            const double got = out[i * ldo + j];
            if (!(fabs(got - ref) <= bound))
                tcheck_fail(&c, "(%lld,%lld): %.9g, want %.9g +- %.3g",
                            (long long)i, (long long)j, got, ref, bound);
        }
    tap_check(&c, "portable e4m3 dots m=%lld n=%lld k=%lld %s [%s]",
              (long long)m, (long long)n, (long long)k,
              strided ? "strided" : "rows", fb_cpu_e4m3_isa());
    free(x), free(out), free(w);
}

int main(void)
{
    tap_begin("test_cpu_fp8_portable");
    static const int64_t shapes[][3] = {{1, 1, 1},   {1, 5, 17},
                                        {2, 4, 256}, {3, 9, 300},
                                        {7, 13, 515}, {16, 32, 64}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int st = 0; st < 2; st++)
            one(shapes[s][0], shapes[s][1], shapes[s][2], st);
    tap_ok(strcmp(fb_cpu_e4m3_isa(), "c") == 0,
           "the kernel built portable says so (%s)", fb_cpu_e4m3_isa());
    return tap_end();
}
