/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_avx512_transpose.h -- the in-register 16 x 16 transpose of 32-bit
 * words that both packed GEMMs use to pack an operand whose rows run along
 * k (the fp32 kernel: one element a word; the bf16 kernel: one k-pair a
 * word). Include only from x86-64 code compiled with GNU C.
 */
#ifndef FB_CPU_AVX512_TRANSPOSE_H
#define FB_CPU_AVX512_TRANSPOSE_H

#include <immintrin.h>

/* r[i] word j -> r[j] word i: 32-bit, 64-bit, then 128-bit lane shuffles.
 * Only AVX-512F, so it inlines into any caller compiled for more. */
__attribute__((target("avx512f"))) static inline void
fb_transpose16x16_epi32(__m512i r[16])
{
    __m512i t[16], u[16];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + c], 128-bit lane L: column 4L + c of rows 4i..4i+3. */
    #pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* For each c, a 4 x 4 transpose of 128-bit lanes over u[c + 4q]. */
    #pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[c], u[c + 4], 0x44);
        __m512i x1 = _mm512_shuffle_i32x4(u[c], u[c + 4], 0xee);
        __m512i x2 = _mm512_shuffle_i32x4(u[c + 8], u[c + 12], 0x44);
        __m512i x3 = _mm512_shuffle_i32x4(u[c + 8], u[c + 12], 0xee);
        r[c] = _mm512_shuffle_i32x4(x0, x2, 0x88);
        r[c + 4] = _mm512_shuffle_i32x4(x0, x2, 0xdd);
        r[c + 8] = _mm512_shuffle_i32x4(x1, x3, 0x88);
        r[c + 12] = _mm512_shuffle_i32x4(x1, x3, 0xdd);
    }
}

#endif /* FB_CPU_AVX512_TRANSPOSE_H */
