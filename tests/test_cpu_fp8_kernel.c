/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cpu_fp8_kernel.c -- the CPU e4m3 kernel as the library runs it
 * (lib/cpu/cpu_fp8_kernel.c built into the test program, its AVX-512 or
 * AVX2 forms where the CPU has them; test_cpu_fp8_kernel_avx2 is this
 * program with the AVX-512 forms compiled out), called directly so that
 * each of its forms is reached on purpose: the register form (contiguous
 * rows, up to 8 tokens on AVX2, 16 in two token groups on AVX-512) and the
 * buffered form (strided weights, more tokens, tiny x), with all
 * 256 e4m3 patterns, NaN rows beside clean ones, ragged k (the 32-byte
 * steps' tails) and ragged channel counts (the 1..4-row blocks' rests),
 * against a double reference (gamma_k bound, NaN where a row has the NaN
 * pattern), bit for bit on integer data.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_fp8_kernel.h"
#include "e4m3_oracle.h"
#include "harness.h"

enum { DATA_RANDOM, DATA_INTEGER };

/* NaN rows: every third channel holds one NaN pattern (either sign), at a
 * position that moves with the channel (vector part and tail). */
static void one(int64_t m, int64_t n, int64_t k, int strided, int nan_rows,
                int data)
{
    const int64_t ldx = fb_cpu_e4m3_panel_ld(k), ldo = n + 3;
    float *x = calloc((size_t)(m * ldx), sizeof *x);
    float *out = malloc((size_t)(m * ldo) * sizeof *out);
    uint8_t *w = malloc((size_t)(n * k > 0 ? n * k : 1));
    if (x == NULL || out == NULL || w == NULL)
        tap_bail("out of memory");
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            x[i * ldx + p] = data == DATA_INTEGER
                                 ? (float)(rng_below(9) - 4)
                                 : (float)(2.0 * rng_unit() - 1.0);
    /* q(j, p) at j * w_cs + p * w_ks: rows, or columns of a k x n array */
    const int64_t w_cs = strided ? 1 : k, w_ks = strided ? n : 1;
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++) {
            unsigned b;
            if (data == DATA_INTEGER)
                b = 0; /* set below */
            else
                do
                    b = (unsigned)rng_below(256);
                while ((b & 0x7f) == 0x7f);
            w[j * w_cs + p * w_ks] = (uint8_t)b;
        }
    if (data == DATA_INTEGER) /* integers 0..15: e = 7 + log2, m exact */
        for (int64_t j = 0; j < n; j++)
            for (int64_t p = 0; p < k; p++) {
                static const uint8_t ints[] = {0x00, 0x38, 0x40, 0x44,
                                               0x48, 0x4a, 0x4c, 0x4e,
                                               0x50, 0x51, 0x52, 0x53,
                                               0x54, 0x55, 0x56, 0x57};
                const uint8_t sign = (uint8_t)(rng_below(2) << 7);
                w[j * w_cs + p * w_ks] =
                    (uint8_t)(sign | ints[rng_below(16)]);
            }
    if (nan_rows && k > 0)
        for (int64_t j = 1; j < n; j += 3)
            w[j * w_cs + ((j * 37 + 5) % k) * w_ks] =
                (uint8_t)(j % 2 ? 0x7f : 0xff);
    for (int64_t i = 0; i < m * ldo; i++)
        out[i] = -12345.0f;
    fb_cpu_e4m3_dots(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
    tcheck c;
    tcheck_init(&c);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double gauge;
            const double ref =
                e4m3_oracle_dot(x + i * ldx, w, w_cs, w_ks, j, k, &gauge);
            const double got = out[i * ldo + j];
            if (isnan(ref)) {
                if (!isnan(got))
                    tcheck_fail(&c, "(%lld,%lld): %.9g, want NaN",
                                (long long)i, (long long)j, got);
                continue;
            }
            /* k products and k - 1 sums in fp32: gamma_k; integer data
             * exactly */
            const double u = 0x1p-24;
            const double bound =
                data == DATA_INTEGER ? 0 : k * u / (1 - k * u) * gauge;
            if (!(fabs(got - ref) <= bound))
                tcheck_fail(&c, "(%lld,%lld): %.9g, want %.9g +- %.3g",
                            (long long)i, (long long)j, got, ref, bound);
        }
    tap_check(&c, "e4m3 dots m=%lld n=%lld k=%lld %s%s%s [%s]",
              (long long)m, (long long)n, (long long)k,
              strided ? "strided" : "rows", nan_rows ? " NaN rows" : "",
              data == DATA_INTEGER ? " integers" : "", fb_cpu_e4m3_isa());
    free(x), free(out), free(w);
}

/* x too small to scale by 2^-8 without a rounding of its own (nonzero
 * |x| below 2^-109): the product x q must still round once, as fp32 does
 * it. x = (1 + 2^-20) 2^-120 times q = 2^-9 is 2^-129 + 2^-149 exactly,
 * a subnormal that 2^-8 smaller would lose its last bit. */
static void tiny_x(int64_t m, int64_t k)
{
    const int64_t ldx = fb_cpu_e4m3_panel_ld(k), n = 5, ldo = n;
    float *x = calloc((size_t)(m * ldx), sizeof *x);
    float *out = malloc((size_t)(m * ldo) * sizeof *out);
    uint8_t *w = calloc((size_t)(n * k), 1);
    if (x == NULL || out == NULL || w == NULL)
        tap_bail("out of memory");
    for (int64_t i = 0; i < m; i++)
        x[i * ldx + (k - 1) * i / (m > 1 ? m - 1 : 1)] =
            ldexpf(1.0f + 0x1p-20f, -120);
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++)
            w[j * k + p] = 0x01; /* 2^-9 */
    fb_cpu_e4m3_dots(m, n, k, x, ldx, w, k, 1, out, ldo);
    tcheck c;
    tcheck_init(&c);
    const float want = 0x1p-129f + 0x1p-149f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            if (out[i * ldo + j] != want)
                tcheck_fail(&c, "(%lld,%lld): %a, want %a", (long long)i,
                            (long long)j, (double)out[i * ldo + j],
                            (double)want);
    tap_check(&c, "e4m3 dots: subnormal products round once (m=%lld k=%lld)",
              (long long)m, (long long)k);
    free(x), free(out), free(w);
}

int main(void)
{
    tap_begin("test_cpu_fp8_kernel");
    static const int64_t ks[] = {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96,
                                 129, 4095};
    static const int64_t ns[] = {1, 3, 4, 5, 7, 13, 25};
    static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 8, 9};
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            const int64_t m = ms[(a + b) % (sizeof ms / sizeof ms[0])];
            one(m, ns[b], ks[a], 0, 0, DATA_RANDOM);
            one(m, ns[b], ks[a], 0, 1, DATA_RANDOM);
        }
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++) {
        one(ms[a], 13, 4095, 0, 1, DATA_RANDOM);
        one(ms[a], 13, 300, 0, 0, DATA_INTEGER);
        one(ms[a], 13, 300, 1, 1, DATA_RANDOM);
    }
    one(16, 9, 515, 0, 1, DATA_RANDOM);
    /* past the register forms: the buffered form's token blocks (6 and a
     * rest of 5 on AVX-512) on contiguous rows */
    one(17, 9, 515, 0, 1, DATA_RANDOM);
    one(23, 7, 300, 0, 0, DATA_INTEGER);
    for (int64_t m = 1; m <= 9; m += 4) {
        tiny_x(m, 1);
        tiny_x(m, 70);
    }
    return tap_end();
}
