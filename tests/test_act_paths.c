/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_act_paths.c -- one activation per target on the CPU: the same
 * pre-activation gives the same bits whichever implementation runs the
 * call (sgemm_bias_act(3): the last bits do not depend on the kernel
 * family).
 *
 * Calls whose pre-activations are exact in every implementation (the
 * products are zeros, so z = 0 + bias exactly, the bias carrying the
 * values swept: powers of two and their neighbours over the whole range,
 * both signs, random floats, large |x|, +-Inf, NaN) are forced in turn on
 * every CPU implementation that takes them (fb_set_implementation): 32
 * tokens and 600 features, so that the decode, small-k, packed and
 * OpenBLAS paths all can. Every output must equal the first one's, bit
 * for bit (NaN for NaN). On a CPU without AVX-512 only OpenBLAS takes
 * them, and the comparison is against itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static const char *const names[] = {"cpu/small-m-avx512",
                                    "cpu/small-m-avx2",
                                    "cpu/bf16-amx",
                                    "cpu/bf16-avx512bf16",
                                    "cpu/f32-small-k", "cpu/f32-avx512",
                                    "cpu/openblas"};
#define NNAMES (int)(sizeof names / sizeof names[0])

enum { M = 32, N = 600, K = 16 };

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The n values of sweep number s. */
static void values(int s, float *v, int n)
{
    for (int j = 0; j < n; j++) {
        uint32_t b;
        if (s == 0) { /* specials, then powers of two and neighbours */
            const int e = j / 4, d = j % 4;
            b = e < 254 ? ((uint32_t)(e + 1) << 23) + (uint32_t)(d == 3 ? 0 : d)
                        : 0x7f800000u;
            if (d == 2)
                b = ((uint32_t)(e + 1) << 23) - 1u;
            if (j % 2)
                b |= 0x80000000u;
        } else {
            b = (uint32_t)rng_next();
            if (s % 2) /* moderate values, where the forms differ most */
                b = (b & 0x807fffffu) | ((uint32_t)(120 + (b >> 23) % 16) << 23);
        }
        v[j] = from_bits(b);
    }
    v[0] = INFINITY, v[1] = -INFINITY, v[2] = NAN, v[3] = -NAN;
    v[4] = 0.0f, v[5] = 1e30f, v[6] = -1e30f, v[7] = 88.7f, v[8] = -104.5f;
}

static fb_status call(fb_handle h, fb_dtype t, const void *x, const void *w,
                      const void *bias, void *c, fb_activation act)
{
    switch (t) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, M, N, K,
                              1.0f, x, K, w, K, 0.0f, c, N, bias, act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, M, N, K,
                              1.0f, x, K, w, K, 0.0f, c, N, bias, act);
    default:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, M, N, K,
                              1.0f, x, K, w, K, 0.0f, c, N, bias, act);
    }
}

int main(void)
{
    tap_begin("test_act_paths");
    fb_handle h = handle_on(FB_BACKEND_CPU);
    float v[N];
    for (int d = 0; d < 3; d++) {
        const fb_dtype t = all_dtypes[d];
        const size_t es = dt_size(t);
        unsigned char *x = calloc((size_t)M * K, es);
        unsigned char *w = calloc((size_t)N * K, es);
        unsigned char *bias = malloc((size_t)N * es);
        unsigned char *first = malloc((size_t)M * N * es);
        unsigned char *c = malloc((size_t)M * N * es);
        if (!x || !w || !bias || !first || !c)
            tap_bail("out of memory");
        /* Zeros of the products, exactly: X is zero, W is not (so that no
         * implementation can skip it). */
        for (int i = 0; i < N * K; i++)
            dt_set(t, w, i, rng_value(t));
        for (int a = 0; a < N_ACTS; a++) {
            const fb_activation act = all_acts[a];
            int ran = 0, bad = 0;
            char diag[200] = "", first_name[40] = "";
            for (int s = 0; s < 6; s++) {
                values(s, v, N);
                for (int j = 0; j < N; j++)
                    dt_set_bits(t, bias, j,
                                t == FB_DTYPE_F32
                                    ? dt_bits(FB_DTYPE_F32, v, j)
                                    : (t == FB_DTYPE_F16
                                           ? fb_float_to_half(v[j]).bits
                                           : fb_float_to_bfloat16(v[j]).bits));
                int have = 0;
                for (int i = 0; i < NNAMES; i++) {
                    if (fb_set_implementation(h, names[i]) != FB_STATUS_SUCCESS)
                        tap_bail("fb_set_implementation(%s)", names[i]);
                    const fb_status st = call(h, t, x, w, bias, c, act);
                    if (st == FB_STATUS_NOT_SUPPORTED)
                        continue;
                    if (st != FB_STATUS_SUCCESS) {
                        bad++;
                        snprintf(diag, sizeof diag, "%s: %s", names[i],
                                 fb_handle_last_message(h));
                        continue;
                    }
                    ran += s == 0;
                    if (!have) {
                        memcpy(first, c, (size_t)M * N * es);
                        snprintf(first_name, sizeof first_name, "%s",
                                 names[i]);
                        have = 1;
                        continue;
                    }
                    for (int e = 0; e < M * N; e++) {
                        const uint32_t p = dt_bits(t, first, e);
                        const uint32_t q = dt_bits(t, c, e);
                        if (p != q && !(isnan(dt_get(t, first, e)) &&
                                        isnan(dt_get(t, c, e)))) {
                            if (bad++ == 0)
                                snprintf(diag, sizeof diag,
                                         "z = %a: %s gives 0x%x, %s 0x%x",
                                         (double)v[e % N], first_name, p,
                                         names[i], q);
                        }
                    }
                }
            }
            tap_ok(bad == 0 && ran > 0,
                   "%s %s: %d implementation(s), the same bits for every "
                   "pre-activation%s%s", dt_name(t), act_name(act), ran,
                   bad ? "; " : "", diag);
        }
        free(x), free(w), free(bias), free(first), free(c);
    }
    fb_destroy(h);
    return tap_end();
}
