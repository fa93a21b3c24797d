/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * e4m3_oracle.h -- the double-precision oracle of the CPU e4m3 kernel's
 * dot products (fb_cpu_e4m3_dots), for the tests that call the kernel
 * directly: the value of each OCP e4m3 byte, and one output's exact sum
 * with the gauge of its error bound (the sum of |products|).
 */
#ifndef FB_TEST_E4M3_ORACLE_H
#define FB_TEST_E4M3_ORACLE_H

#include <math.h>
#include <stdint.h>

/* The byte's value; NaN for its one NaN pattern (either sign). */
static inline double e4m3_oracle_value(unsigned b)
{
    const int e = (int)((b >> 3) & 15), m = (int)(b & 7);
    if ((b & 0x7f) == 0x7f)
        return NAN;
    const double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

/* sum_p x[p] q(j, p) over p < k, q(j, p) at w[j * w_cs + p * w_ks];
 * *gauge receives sum_p |x[p] q(j, p)|. */
static inline double e4m3_oracle_dot(const float *x, const uint8_t *w,
                                     int64_t w_cs, int64_t w_ks, int64_t j,
                                     int64_t k, double *gauge)
{
    double ref = 0, g = 0;
    for (int64_t p = 0; p < k; p++) {
        const double q = e4m3_oracle_value(w[j * w_cs + p * w_ks]);
        ref += (double)x[p] * q;
        g += fabs((double)x[p] * q);
    }
    *gauge = g;
    return ref;
}

#endif /* FB_TEST_E4M3_ORACLE_H */
