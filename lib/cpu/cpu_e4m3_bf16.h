/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_e4m3_bf16.h -- 32 e4m3 weights widened to bf16 in one zmm register
 * (AVX-512BW and VL), exactly: every e4m3 value is a normal bf16. Normals rebias
 * their exponent (+120), the seven subnormals m 2^-9 come from a table,
 * the NaN pattern becomes a quiet NaN of its sign. Shared by AMX's e4m3
 * tiles (cpu_small_m_amx.c) and the e4m3 weights widened once into the
 * bf16 engine's panels (cpu_fp8_wide.c).
 */
#ifndef FB_CPU_E4M3_BF16_H
#define FB_CPU_E4M3_BF16_H

#include <immintrin.h>
#include <stdint.h>

/* The bytes of src that in selects, widened; zeros elsewhere. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i
fb_e4m3_bf16x32(const uint8_t *src, __mmask32 in)
{
    const __m512i sub = _mm512_set_epi16(
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0x3c60, 0x3c40, 0x3c20, 0x3c00, 0x3bc0, 0x3b80, 0x3b00, 0);
    const __m512i m7f = _mm512_set1_epi16(0x7f), m78 = _mm512_set1_epi16(0x78);
    const __m512i bias = _mm512_set1_epi16(120 << 7);
    const __m512i qnan = _mm512_set1_epi16(0x7fc0);
    const __m512i sign = _mm512_set1_epi16((short)0x8000);
    const __m512i b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(in, src));
    const __m512i mag = _mm512_and_si512(b, m7f);
    __m512i v = _mm512_add_epi16(_mm512_slli_epi16(mag, 4), bias);
    v = _mm512_mask_permutexvar_epi16(v, _mm512_testn_epi16_mask(mag, m78),
                                      mag, sub);
    v = _mm512_mask_mov_epi16(v, _mm512_cmpeq_epi16_mask(mag, m7f), qnan);
    /* v | (b << 8 & 0x8000) */
    return _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(b, 8), sign, 0xf8);
}

#endif /* FB_CPU_E4M3_BF16_H */
