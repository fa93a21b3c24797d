/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_kernel.c -- fp32 x rows times e4m3 weight rows.
 *
 * Two forms. The register form (weight rows contiguous along k, at most
 * 8 x rows on AVX2, 16 in zmm with AVX-512 VBMI: decode) widens each 32
 * (zmm: 64) bytes of a weight row in registers and multiplies them at
 * once against up to 4 (8) x rows, blocks of 1..4 weight rows; more x rows
 * take further passes over a block of weight rows still in L2. The
 * buffered form (any strides, any m) takes groups of four weight rows and
 * walks k in chunks: the chunk of the four rows is widened to fp32 into a
 * small buffer that stays in L1, then every x row is multiplied against
 * it, three (zmm: six) at a time. Either way a weight byte is read from
 * memory once per call.
 *
 * Widening on AVX2: e4m3 is a sub-format of IEEE binary16 shifted by 2^8:
 * with its sign moved to bit 15 and its seven other bits to bits 7..13,
 * the binary16 number is q * 2^-8 exactly (subnormals included), which
 * F16C widens. The buffered form multiplies each value by 2^8 and forces
 * the NaN pattern to a binary16 NaN first; the AVX2 register form applies
 * the 2^8 to each dot product and sends a block with a NaN byte to the
 * buffered form. The zmm register form looks up the fp32 bits directly
 * (zregs_step).
 */
#include <stdint.h>
#include <string.h>
#include "cpu_features.h"
#include "cpu_fp8_kernel.h"
#include "problem_fp8.h"

/* FB_E4M3_PORTABLE_ONLY: the portable C path alone, as a CPU without
 * AVX2 runs it (tests/test_cpu_fp8_portable builds this file so). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&     \
    !defined(FB_E4M3_PORTABLE_ONLY)
#include <immintrin.h>
#define FB_HAVE_AVX2_E4M3 1
#endif

#define ROWS 4    /* weight rows widened together */
#define CHUNK 256 /* k per widened chunk: 4 rows x 1 KiB of fp32 */

int64_t fb_cpu_e4m3_panel_ld(int64_t k)
{
    /* whole vectors of 8, plus one more so rows sit off one another's
     * L1 sets when k is a multiple of a page */
    return (k + 7) / 8 * 8 + 8;
}

/* The 256 values, for the strided and scalar paths. */
static void make_table(float *t)
{
    for (int b = 0; b < 256; b++)
        t[b] = fb_e4m3_value((uint8_t)b);
}

/* Widen q(j0 + r, p0 .. p0 + len) for r < rows into buf (ROWS x CHUNK),
 * zeros in rows rows.. and in columns len .. len rounded up to 8. */
static void widen_table(const uint8_t *w, int64_t w_cs, int64_t w_ks,
                        int64_t j0, int rows, int64_t p0, int64_t len,
                        const float *table, float *buf)
{
    const int64_t len16 = (len + 15) / 16 * 16;
    for (int r = 0; r < ROWS; r++) {
        float *d = buf + r * CHUNK;
        if (r >= rows) {
            memset(d, 0, (size_t)len16 * sizeof(float));
            continue;
        }
        const uint8_t *src = w + (j0 + r) * w_cs + p0 * w_ks;
        for (int64_t p = 0; p < len; p++)
            d[p] = table[src[p * w_ks]];
        for (int64_t p = len; p < len16; p++)
            d[p] = 0.0f;
    }
}

/* out rows of the group: ROWS results per x row, only rows < rows kept. */
static void dots_c(int64_t m, int64_t len8, const float *x, int64_t ldx,
                   const float *buf, int rows, float *out, int64_t ldo,
                   int first)
{
    for (int64_t i = 0; i < m; i++)
        for (int r = 0; r < rows; r++) {
            const float *xi = x + i * ldx, *wr = buf + r * CHUNK;
            float s = 0.0f;
            for (int64_t p = 0; p < len8; p++)
                s += xi[p] * wr[p];
            out[i * ldo + r] = first ? s : out[i * ldo + r] + s;
        }
}

static void e4m3_dots_c(int64_t m, int64_t n, int64_t k, const float *x,
                        int64_t ldx, const uint8_t *w, int64_t w_cs,
                        int64_t w_ks, float *out, int64_t ldo)
{
    float table[256];
    float buf[ROWS * CHUNK];
    make_table(table);
    for (int64_t j0 = 0; j0 < n; j0 += ROWS) {
        const int rows = n - j0 < ROWS ? (int)(n - j0) : ROWS;
        if (k == 0)
            for (int64_t i = 0; i < m; i++)
                for (int r = 0; r < rows; r++)
                    out[i * ldo + j0 + r] = 0.0f;
        for (int64_t p0 = 0; p0 < k; p0 += CHUNK) {
            const int64_t len = k - p0 < CHUNK ? k - p0 : CHUNK;
            widen_table(w, w_cs, w_ks, j0, rows, p0, len, table, buf);
            dots_c(m, (len + 7) / 8 * 8, x + p0, ldx, buf, rows, out + j0,
                   ldo, p0 == 0);
        }
    }
}

#if defined(FB_HAVE_AVX2_E4M3)
#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 e4m3 bytes to 16 floats. */
AVX2 static inline void widen16(const uint8_t *src, float *dst)
{
    const __m256i v =
        _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)src));
    __m256i h = _mm256_and_si256(
        _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 1),
        _mm256_set1_epi16((short)0xbfff));
    const __m256i nan = _mm256_cmpeq_epi16(
        _mm256_and_si256(v, _mm256_set1_epi16(0x7f)),
        _mm256_set1_epi16(0x7f));
    h = _mm256_or_si256(h, nan);
    const __m256 two8 = _mm256_set1_ps(256.0f);
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtph_ps(
                                            _mm256_castsi256_si128(h)),
                                        two8));
    _mm256_storeu_ps(dst + 8,
                     _mm256_mul_ps(_mm256_cvtph_ps(
                                       _mm256_extracti128_si256(h, 1)),
                                   two8));
}

/* widen_table for contiguous rows (w_ks == 1): whole 16-byte vectors,
 * never reading past a row's last byte. Both pad to 16 columns (the zmm
 * dots' step). */
AVX2 static void widen_rows(const uint8_t *w, int64_t w_cs, int64_t j0,
                            int rows, int64_t p0, int64_t len,
                            const float *table, float *buf)
{
    const int64_t len16 = (len + 15) / 16 * 16;
    for (int r = 0; r < ROWS; r++) {
        float *d = buf + r * CHUNK;
        if (r >= rows) {
            memset(d, 0, (size_t)len16 * sizeof(float));
            continue;
        }
        const uint8_t *src = w + (j0 + r) * w_cs + p0;
        int64_t p = 0;
        for (; p + 16 <= len; p += 16)
            widen16(src + p, d + p);
        for (; p < len; p++)
            d[p] = table[src[p]];
        for (; p < len16; p++)
            d[p] = 0.0f;
    }
}


AVX2 static void dots_avx2(int64_t m, int64_t len8, const float *x,
                           int64_t ldx, const float *buf, int rows,
                           float *out, int64_t ldo, int first)
{
    const float *w0 = buf, *w1 = buf + CHUNK, *w2 = buf + 2 * CHUNK,
                *w3 = buf + 3 * CHUNK;
    int64_t i = 0;
    /* three x rows at a time: twelve accumulators, the x rows and one
     * weight vector in the sixteen registers */
    for (; i + 3 <= m; i += 3) {
        const float *xa = x + i * ldx, *xb = xa + ldx, *xc = xb + ldx;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        __m256 c0 = a0, c1 = a0, c2 = a0, c3 = a0;
        for (int64_t p = 0; p < len8; p += 8) {
            const __m256 va = _mm256_loadu_ps(xa + p);
            const __m256 vb = _mm256_loadu_ps(xb + p);
            const __m256 vc = _mm256_loadu_ps(xc + p);
            __m256 q = _mm256_loadu_ps(w0 + p);
            a0 = _mm256_fmadd_ps(va, q, a0);
            b0 = _mm256_fmadd_ps(vb, q, b0);
            c0 = _mm256_fmadd_ps(vc, q, c0);
            q = _mm256_loadu_ps(w1 + p);
            a1 = _mm256_fmadd_ps(va, q, a1);
            b1 = _mm256_fmadd_ps(vb, q, b1);
            c1 = _mm256_fmadd_ps(vc, q, c1);
            q = _mm256_loadu_ps(w2 + p);
            a2 = _mm256_fmadd_ps(va, q, a2);
            b2 = _mm256_fmadd_ps(vb, q, b2);
            c2 = _mm256_fmadd_ps(vc, q, c2);
            q = _mm256_loadu_ps(w3 + p);
            a3 = _mm256_fmadd_ps(va, q, a3);
            b3 = _mm256_fmadd_ps(vb, q, b3);
            c3 = _mm256_fmadd_ps(vc, q, c3);
        }
        const float s[3][ROWS] = {{hsum(a0), hsum(a1), hsum(a2), hsum(a3)},
                                  {hsum(b0), hsum(b1), hsum(b2), hsum(b3)},
                                  {hsum(c0), hsum(c1), hsum(c2), hsum(c3)}};
        for (int t = 0; t < 3; t++)
            for (int r = 0; r < rows; r++) {
                float *o = out + (i + t) * ldo + r;
                *o = first ? s[t][r] : *o + s[t][r];
            }
    }
    for (; i + 2 <= m; i += 2) {
        const float *xa = x + i * ldx, *xb = xa + ldx;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (int64_t p = 0; p < len8; p += 8) {
            const __m256 va = _mm256_loadu_ps(xa + p);
            const __m256 vb = _mm256_loadu_ps(xb + p);
            __m256 q = _mm256_loadu_ps(w0 + p);
            a0 = _mm256_fmadd_ps(va, q, a0);
            b0 = _mm256_fmadd_ps(vb, q, b0);
            q = _mm256_loadu_ps(w1 + p);
            a1 = _mm256_fmadd_ps(va, q, a1);
            b1 = _mm256_fmadd_ps(vb, q, b1);
            q = _mm256_loadu_ps(w2 + p);
            a2 = _mm256_fmadd_ps(va, q, a2);
            b2 = _mm256_fmadd_ps(vb, q, b2);
            q = _mm256_loadu_ps(w3 + p);
            a3 = _mm256_fmadd_ps(va, q, a3);
            b3 = _mm256_fmadd_ps(vb, q, b3);
        }
        const float s[2][ROWS] = {{hsum(a0), hsum(a1), hsum(a2), hsum(a3)},
                                  {hsum(b0), hsum(b1), hsum(b2), hsum(b3)}};
        for (int t = 0; t < 2; t++)
            for (int r = 0; r < rows; r++) {
                float *o = out + (i + t) * ldo + r;
                *o = first ? s[t][r] : *o + s[t][r];
            }
    }
    for (; i < m; i++) {
        const float *xa = x + i * ldx;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < len8; p += 8) {
            const __m256 va = _mm256_loadu_ps(xa + p);
            a0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w0 + p), a0);
            a1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w1 + p), a1);
            a2 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w2 + p), a2);
            a3 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w3 + p), a3);
        }
        const float s[ROWS] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
        for (int r = 0; r < rows; r++) {
            float *o = out + i * ldo + r;
            *o = first ? s[r] : *o + s[r];
        }
    }
}

#if !defined(FB_E4M3_NO_AVX512)
#define AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))

/* T tokens x the group's four rows over len16 widened columns, in zmm:
 * 4 T accumulators, x and the rows loaded as they are used. */
AVX512 __attribute__((always_inline)) static inline void
zdots_block(const int T, int64_t len16, const float *x, int64_t ldx,
            const float *buf, int rows, float *out, int64_t ldo, int first)
{
    __m512 acc[6][ROWS];
    #pragma GCC unroll 6
    for (int t = 0; t < T; t++)
        #pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++)
            acc[t][r] = _mm512_setzero_ps();
    for (int64_t p = 0; p < len16; p += 16) {
        const __m512 q0 = _mm512_loadu_ps(buf + p);
        const __m512 q1 = _mm512_loadu_ps(buf + CHUNK + p);
        const __m512 q2 = _mm512_loadu_ps(buf + 2 * CHUNK + p);
        const __m512 q3 = _mm512_loadu_ps(buf + 3 * CHUNK + p);
        #pragma GCC unroll 6
        for (int t = 0; t < T; t++) {
            const __m512 v = _mm512_loadu_ps(x + t * ldx + p);
            acc[t][0] = _mm512_fmadd_ps(v, q0, acc[t][0]);
            acc[t][1] = _mm512_fmadd_ps(v, q1, acc[t][1]);
            acc[t][2] = _mm512_fmadd_ps(v, q2, acc[t][2]);
            acc[t][3] = _mm512_fmadd_ps(v, q3, acc[t][3]);
        }
    }
    #pragma GCC unroll 6
    for (int t = 0; t < T; t++)
        for (int r = 0; r < rows; r++) {
            const float sum = _mm512_reduce_add_ps(acc[t][r]);
            float *o = out + t * ldo + r;
            *o = first ? sum : *o + sum;
        }
}

/* dots_avx2 in zmm: six tokens a block (24 accumulators), so the widened
 * chunk in L1 feeds 24 FMAs for every 10 loads. */
AVX512 static void dots_z(int64_t m, int64_t len16, const float *x,
                          int64_t ldx, const float *buf, int rows,
                          float *out, int64_t ldo, int first)
{
    int64_t i = 0;
    for (; i + 6 <= m; i += 6)
        zdots_block(6, len16, x + i * ldx, ldx, buf, rows, out + i * ldo,
                    ldo, first);
    switch (m - i) {
    case 5: zdots_block(5, len16, x + i * ldx, ldx, buf, rows, out + i * ldo, ldo, first); break;
    case 4: zdots_block(4, len16, x + i * ldx, ldx, buf, rows, out + i * ldo, ldo, first); break;
    case 3: zdots_block(3, len16, x + i * ldx, ldx, buf, rows, out + i * ldo, ldo, first); break;
    case 2: zdots_block(2, len16, x + i * ldx, ldx, buf, rows, out + i * ldo, ldo, first); break;
    case 1: zdots_block(1, len16, x + i * ldx, ldx, buf, rows, out + i * ldo, ldo, first); break;
    default: break;
    }
}
#endif

/* The buffered form: any strides, any m. */
AVX2 static void dots_buffered(int64_t m, int64_t n, int64_t k,
                               const float *x, int64_t ldx, const uint8_t *w,
                               int64_t w_cs, int64_t w_ks, const float *table,
                               float *out, int64_t ldo)
{
    float buf[ROWS * CHUNK] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < n; j0 += ROWS) {
        const int rows = n - j0 < ROWS ? (int)(n - j0) : ROWS;
        if (k == 0)
            for (int64_t i = 0; i < m; i++)
                for (int r = 0; r < rows; r++)
                    out[i * ldo + j0 + r] = 0.0f;
        for (int64_t p0 = 0; p0 < k; p0 += CHUNK) {
            const int64_t len = k - p0 < CHUNK ? k - p0 : CHUNK;
            if (w_ks == 1)
                widen_rows(w, w_cs, j0, rows, p0, len, table, buf);
            else
                widen_table(w, w_cs, w_ks, j0, rows, p0, len, table, buf);
#if !defined(FB_E4M3_NO_AVX512)
            if (fb_cpu_has_avx512bw()) {
                dots_z(m, (len + 15) / 16 * 16, x + p0, ldx, buf, rows,
                       out + j0, ldo, p0 == 0);
                continue;
            }
#endif
            dots_avx2(m, (len + 7) / 8 * 8, x + p0, ldx, buf, rows,
                      out + j0, ldo, p0 == 0);
        }
    }
}

/* The register form, for contiguous rows and few tokens: each 32 weight
 * bytes of a row are widened in registers, no buffer between. The bytes
 * go to the high halves of 16-bit lanes (unpack with zero); an arithmetic
 * shift right by one and bit 14 cleared give the binary16 pattern of
 * q * 2^-8, which F16C widens. The 2^8 is applied once per dot product
 * instead of once per weight: the same bits, since with every nonzero |x|
 * at least 2^-109 (x_scalable) each product and sum lies on the 2^-149
 * grid, so nothing rounds differently below 2^-126, and above it scaling
 * by a power of two commutes with rounding (short of a partial sum past
 * FLT_MAX, which the unscaled sum meets first). The NaN pattern would widen
 * to 1.875 here: a byte maximum per group of rows finds it, and that
 * group is redone by the buffered form. */
#define REGS_MAX_M 4 /* tokens in one register block */
#define REGS_MAX_X 8 /* tokens the register form takes (beyond, the
                      * buffered form widens each byte once for all) */
#define REGS_R 4     /* most weight rows per register block */
/* Bytes ahead of the current step that each row's next line is
 * prefetched from. */
#ifndef REGS_PF
#define REGS_PF 512
#endif

/* Every nonzero |x| (first k of m rows) at least 2^-109? NaN and Inf
 * pass: they propagate the same either way. */
AVX2 static int x_scalable(int64_t m, int64_t k, const float *x, int64_t ldx)
{
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lim = _mm256_set1_ps(0x1p-109f), zero = _mm256_setzero_ps();
    __m256 bad = zero;
    int tail_bad = 0;
    for (int64_t i = 0; i < m; i++) {
        const float *xi = x + i * ldx;
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
            const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xi + p), absm);
            bad = _mm256_or_ps(bad,
                               _mm256_and_ps(_mm256_cmp_ps(a, lim, _CMP_LT_OQ),
                                             _mm256_cmp_ps(a, zero,
                                                           _CMP_NEQ_OQ)));
        }
        for (; p < k; p++) {
            const float a = xi[p] < 0 ? -xi[p] : xi[p];
            tail_bad |= a != 0.0f && a < 0x1p-109f;
        }
    }
    return !tail_bad && _mm256_movemask_ps(bad) == 0;
}

/* One step of 32 k values: acc[r][t] += q(row r) . x(token t), two
 * accumulators a pair for one token (the FMA chains otherwise wait on
 * each other), one for more. */
AVX2 __attribute__((always_inline)) static inline void
regs_step(const int R, const int T, const uint8_t *const *wr, int64_t wp,
          const float *const *xr, int64_t xp,
          __m256 acc[REGS_R][REGS_MAX_M][2], __m256i *nan)
{
    const int A = T == 1 ? 2 : 1;
    const __m256i top = _mm256_set1_epi8((char)0x80);
    const __m256i mask = _mm256_set1_epi16((short)0xbfff);
    const __m256i zero = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(wr[r] + wp));
        /* 0xff after the or: the NaN pattern, either sign */
        *nan = _mm256_max_epu8(*nan, _mm256_or_si256(q, top));
        const __m256i lo = _mm256_and_si256(
            _mm256_srai_epi16(_mm256_unpacklo_epi8(zero, q), 1), mask);
        const __m256i hi = _mm256_and_si256(
            _mm256_srai_epi16(_mm256_unpackhi_epi8(zero, q), 1), mask);
        /* unpack works within 128-bit lanes: k 0..7, 8..15, 16..23,
         * 24..31 are lo's low half, hi's low half, lo's high, hi's high */
        const __m256 f0 = _mm256_cvtph_ps(_mm256_castsi256_si128(lo));
        const __m256 f1 = _mm256_cvtph_ps(_mm256_castsi256_si128(hi));
        const __m256 f2 = _mm256_cvtph_ps(_mm256_extracti128_si256(lo, 1));
        const __m256 f3 = _mm256_cvtph_ps(_mm256_extracti128_si256(hi, 1));
        #pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const float *xx = xr[t] + xp;
            acc[r][t][0] =
                _mm256_fmadd_ps(f0, _mm256_loadu_ps(xx), acc[r][t][0]);
            acc[r][t][A - 1] =
                _mm256_fmadd_ps(f1, _mm256_loadu_ps(xx + 8), acc[r][t][A - 1]);
            acc[r][t][0] =
                _mm256_fmadd_ps(f2, _mm256_loadu_ps(xx + 16), acc[r][t][0]);
            acc[r][t][A - 1] =
                _mm256_fmadd_ps(f3, _mm256_loadu_ps(xx + 24), acc[r][t][A - 1]);
        }
    }
}

/* R rows from w by T tokens over all of k into out (the dots times 2^8);
 * 1 where a weight is the NaN pattern (out then unwritten). xt: each
 * token's values from k / 32 * 32 on, zero-padded to 32. */
AVX2 __attribute__((always_inline)) static inline int
regs_block(const int R, const int T, int64_t k, const float *x, int64_t ldx,
           const float *xt, const uint8_t *w, int64_t w_cs, float *out,
           int64_t ldo)
{
    __m256 acc[REGS_R][REGS_MAX_M][2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
    __m256i nan = _mm256_setzero_si256();
    const uint8_t *wr[REGS_R];
    const float *xr[REGS_MAX_M];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        wr[r] = w + r * w_cs;
    #pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        xr[t] = x + t * ldx;
    const int64_t k32 = k / 32 * 32;
    int64_t p = 0;
    for (; p + 64 <= k32; p += 64) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            /* in integers: near a row's end the address lies past it,
             * where C pointer arithmetic may not go (a prefetch never
             * faults) */
            _mm_prefetch((const char *)((uintptr_t)(wr[r] + p) + REGS_PF),
                         _MM_HINT_T0);
        regs_step(R, T, wr, p, xr, p, acc, &nan);
        regs_step(R, T, wr, p + 32, xr, p + 32, acc, &nan);
    }
    if (p < k32) {
        regs_step(R, T, wr, p, xr, p, acc, &nan);
        p += 32;
    }
    if (p < k) {
        /* the ragged end through zeroed copies: no load past a row */
        uint8_t tb[REGS_R][32] __attribute__((aligned(32)));
        const uint8_t *tr[REGS_R];
        const float *xtr[REGS_MAX_M];
        memset(tb, 0, sizeof tb);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            memcpy(tb[r], wr[r] + p, (size_t)(k - p));
            tr[r] = tb[r];
        }
        #pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            xtr[t] = xt + t * 32;
        regs_step(R, T, tr, 0, xtr, 0, acc, &nan);
    }
    if (_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(nan, _mm256_set1_epi8((char)0xff))) != 0)
        return 1;
    #pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            out[t * ldo + r] =
                hsum(_mm256_add_ps(acc[r][t][0], acc[r][t][1])) * 256.0f;
    return 0;
}

/* n rows by T tokens, blocks of R rows, the rest one row at a time. */
AVX2 __attribute__((always_inline)) static inline void
regs_rows(const int R, const int T, int64_t n, int64_t k, const float *x,
          int64_t ldx, const float *xt, const uint8_t *w, int64_t w_cs,
          const float *table, float *out, int64_t ldo)
{
    int64_t j = 0;
    for (; j + R <= n; j += R)
        if (regs_block(R, T, k, x, ldx, xt, w + j * w_cs, w_cs, out + j, ldo))
            dots_buffered(T, R, k, x, ldx, w + j * w_cs, w_cs, 1, table,
                          out + j, ldo);
    for (; j < n; j++)
        if (regs_block(1, T, k, x, ldx, xt, w + j * w_cs, w_cs, out + j, ldo))
            dots_buffered(T, 1, k, x, ldx, w + j * w_cs, w_cs, 1, table,
                          out + j, ldo);
}

/* Rows of w per outer block: every token group passes over the block's
 * rows while they are in L2, so w is streamed from memory once. */
#define REGS_BLOCK 12

AVX2 static void dots_regs(int64_t m, int64_t n, int64_t k, const float *x,
                           int64_t ldx, const uint8_t *w, int64_t w_cs,
                           const float *table, float *out, int64_t ldo)
{
    float xt[REGS_MAX_X * 32] __attribute__((aligned(32)));
    const int64_t k32 = k / 32 * 32;
    memset(xt, 0, sizeof xt);
    for (int64_t i = 0; i < m; i++)
        memcpy(xt + i * 32, x + i * ldx + k32,
               (size_t)(k - k32) * sizeof(float));
    for (int64_t j = 0; j < n; j += REGS_BLOCK) {
        const int64_t nb = n - j < REGS_BLOCK ? n - j : REGS_BLOCK;
        const uint8_t *wj = w + j * w_cs;
        for (int64_t i = 0; i < m; i += REGS_MAX_M) {
            const int64_t t = m - i < REGS_MAX_M ? m - i : REGS_MAX_M;
            const float *xi = x + i * ldx, *xti = xt + i * 32;
            float *oi = out + i * ldo + j;
            if (t == 1)
                regs_rows(4, 1, nb, k, xi, ldx, xti, wj, w_cs, table, oi, ldo);
            else if (t == 2)
                regs_rows(4, 2, nb, k, xi, ldx, xti, wj, w_cs, table, oi, ldo);
            else if (t == 3)
                regs_rows(3, 3, nb, k, xi, ldx, xti, wj, w_cs, table, oi, ldo);
            else
                regs_rows(2, 4, nb, k, xi, ldx, xti, wj, w_cs, table, oi, ldo);
        }
    }
}

#if !defined(FB_E4M3_NO_AVX512)
/* The register form in zmm (AVX-512 F, BW and VBMI): 64 weight bytes of a
 * row a step, widened straight to fp32 by two byte lookups, and up to 8
 * tokens a block (32 registers hold 16 accumulators, the 4 widened vectors
 * and the lookup tables), so up to 8 tokens read the weights once and 16
 * take two passes over a block still in L2. Why: on AVX2 the widening,
 * not memory, bounds the one-token decode (docs/fp8-weights.md). */
#define AVX512VBMI                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vbmi,avx2,fma,f16c")))
#define Z_MAX_T 8  /* tokens in one zmm register block */
#define Z_MAX_X 16 /* tokens the zmm form takes */
#define Z_R 4      /* most weight rows per zmm block */

/* An e4m3 value's fp32 bits have only two non-zero bytes (three mantissa
 * bits): byte 3 (sign, 7 exponent bits) and byte 2. lut[b] and
 * lut[128 + b] are those bytes of magnitude b; the NaN pattern's are a
 * quiet NaN's. Every value is exact and normal in fp32, so no scaling,
 * no NaN fix-up and no tiny-x check: the FMAs are IEEE's. */
typedef struct zlut {
    __m512i hi0, hi1, lo0, lo1; /* bytes 3 and 2, magnitudes 0-63, 64-127 */
} zlut;

AVX512VBMI static zlut zlut_make(const float *table)
{
    uint8_t lut[256];
    for (int b = 0; b < 128; b++) {
        uint32_t bits;
        memcpy(&bits, &table[b], sizeof bits);
        if (b == 0x7f)
            bits = 0x7fc00000u;
        lut[b] = (uint8_t)(bits >> 24);
        lut[128 + b] = (uint8_t)(bits >> 16);
    }
    zlut z;
    z.hi0 = _mm512_loadu_si512(lut);
    z.hi1 = _mm512_loadu_si512(lut + 64);
    z.lo0 = _mm512_loadu_si512(lut + 128);
    z.lo1 = _mm512_loadu_si512(lut + 192);
    return z;
}

/* One step of 64 k values: acc[r][t] += q(row r) . x(token t), two
 * accumulators a pair for one token. The dwords are put in the order
 * 0, 4, 8, 12, 1, 5, ... first, so that the in-lane unpacks (bytes to
 * words, words to dwords) give k 0..15, 16..31, 32..47, 48..63 in order,
 * and X is read as it lies. */
AVX512VBMI __attribute__((always_inline)) static inline void
zregs_step(const int R, const int T, const zlut *z, const uint8_t *const *wr,
           int64_t wp, const float *const *xr, int64_t xp,
           __m512 acc[Z_R][Z_MAX_T][2])
{
    const int A = T == 1 ? 2 : 1;
    const __m512i sign = _mm512_set1_epi8((char)0x80);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13,
                                           9, 5, 1, 12, 8, 4, 0);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        const __m512i q = _mm512_permutexvar_epi32(
            order, _mm512_loadu_si512((const void *)(wr[r] + wp)));
        /* byte 3 | the sign bit; byte 2 */
        const __m512i b3 = _mm512_ternarylogic_epi32(
            _mm512_permutex2var_epi8(z->hi0, q, z->hi1), q, sign, 0xf8);
        const __m512i b2 = _mm512_permutex2var_epi8(z->lo0, q, z->lo1);
        const __m512i wl = _mm512_unpacklo_epi8(b2, b3);
        const __m512i wh = _mm512_unpackhi_epi8(b2, b3);
        const __m512 f0 = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, wl));
        const __m512 f1 = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, wl));
        const __m512 f2 = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, wh));
        const __m512 f3 = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, wh));
        #pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const float *xx = xr[t] + xp;
            acc[r][t][0] =
                _mm512_fmadd_ps(f0, _mm512_loadu_ps(xx), acc[r][t][0]);
            acc[r][t][A - 1] = _mm512_fmadd_ps(f1, _mm512_loadu_ps(xx + 16),
                                               acc[r][t][A - 1]);
            acc[r][t][0] =
                _mm512_fmadd_ps(f2, _mm512_loadu_ps(xx + 32), acc[r][t][0]);
            acc[r][t][A - 1] = _mm512_fmadd_ps(f3, _mm512_loadu_ps(xx + 48),
                                               acc[r][t][A - 1]);
        }
    }
}

/* R rows from w by T tokens over all of k into out; xt: each token's
 * values from k / 64 * 64 on, zero-padded to 64. */
AVX512VBMI __attribute__((always_inline)) static inline void
zregs_block(const int R, const int T, const zlut *z, int64_t k,
            const float *x, int64_t ldx, const float *xt, const uint8_t *w,
            int64_t w_cs, float *out, int64_t ldo)
{
    __m512 acc[Z_R][Z_MAX_T][2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 8
        for (int t = 0; t < T; t++)
            acc[r][t][0] = acc[r][t][1] = _mm512_setzero_ps();
    const uint8_t *wr[Z_R];
    const float *xr[Z_MAX_T];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        wr[r] = w + r * w_cs;
    #pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        xr[t] = x + t * ldx;
    const int64_t k64 = k / 64 * 64;
    int64_t p = 0;
    for (; p < k64; p += 64) {
        /* Each row's line REGS_PF bytes ahead into L1, and the same
         * line of the block R rows on into L2: without the second, every
         * block starts on demand misses of its R rows. */
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            _mm_prefetch((const char *)((uintptr_t)(wr[r] + p) + REGS_PF),
                         _MM_HINT_T0);
            _mm_prefetch((const char *)((uintptr_t)(wr[r] + p) +
                                        (uintptr_t)(R * w_cs)),
                         _MM_HINT_T1);
        }
        zregs_step(R, T, z, wr, p, xr, p, acc);
    }
    if (p < k) {
        uint8_t tb[Z_R][64] __attribute__((aligned(64)));
        const uint8_t *tr[Z_R];
        const float *xtr[Z_MAX_T];
        memset(tb, 0, sizeof tb);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            memcpy(tb[r], wr[r] + p, (size_t)(k - p));
            tr[r] = tb[r];
        }
        #pragma GCC unroll 8
        for (int t = 0; t < T; t++)
            xtr[t] = xt + t * 64;
        zregs_step(R, T, z, tr, 0, xtr, 0, acc);
    }
    #pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            out[t * ldo + r] = _mm512_reduce_add_ps(
                _mm512_add_ps(acc[r][t][0], acc[r][t][1]));
}

AVX512VBMI __attribute__((always_inline)) static inline void
zregs_rows(const int R, const int T, const zlut *z, int64_t n, int64_t k,
           const float *x, int64_t ldx, const float *xt, const uint8_t *w,
           int64_t w_cs, float *out, int64_t ldo)
{
    int64_t j = 0;
    for (; j + R <= n; j += R)
        zregs_block(R, T, z, k, x, ldx, xt, w + j * w_cs, w_cs, out + j, ldo);
    for (; j < n; j++)
        zregs_block(1, T, z, k, x, ldx, xt, w + j * w_cs, w_cs, out + j, ldo);
}

/* T tokens (1..8) against rows [0, nb) of w: 4 rows a block up to 4
 * tokens, 2 beyond (at most 16 accumulators). */
AVX512VBMI static void zregs_tokens(int64_t t, const zlut *z, int64_t nb,
                                int64_t k, const float *x, int64_t ldx,
                                const float *xt, const uint8_t *w,
                                int64_t w_cs, float *out, int64_t ldo)
{
    switch (t) {
    case 1: zregs_rows(4, 1, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 2: zregs_rows(4, 2, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 3: zregs_rows(4, 3, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 4: zregs_rows(4, 4, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 5: zregs_rows(2, 5, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 6: zregs_rows(2, 6, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    case 7: zregs_rows(2, 7, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    default: zregs_rows(2, 8, z, nb, k, x, ldx, xt, w, w_cs, out, ldo); break;
    }
}

/* dots_regs in zmm: tokens in ceil(m / 8) groups of near-equal size. */
AVX512VBMI static void dots_zregs(int64_t m, int64_t n, int64_t k,
                              const float *x, int64_t ldx, const uint8_t *w,
                              int64_t w_cs, const float *table, float *out,
                              int64_t ldo)
{
    const zlut z = zlut_make(table);
    float xt[Z_MAX_X * 64] __attribute__((aligned(64)));
    const int64_t k64 = k / 64 * 64;
    memset(xt, 0, sizeof xt);
    for (int64_t i = 0; i < m; i++)
        memcpy(xt + i * 64, x + i * ldx + k64,
               (size_t)(k - k64) * sizeof(float));
    const int64_t groups = (m + Z_MAX_T - 1) / Z_MAX_T;
    for (int64_t j = 0; j < n; j += REGS_BLOCK) {
        const int64_t nb = n - j < REGS_BLOCK ? n - j : REGS_BLOCK;
        for (int64_t g = 0, i = 0; g < groups; g++) {
            const int64_t t = (m - i) / (groups - g);
            zregs_tokens(t, &z, nb, k, x + i * ldx, ldx, xt + i * 64,
                         w + j * w_cs, w_cs, out + i * ldo + j, ldo);
            i += t;
        }
    }
}
#endif

AVX2 static void e4m3_dots_avx2(int64_t m, int64_t n, int64_t k,
                                const float *x, int64_t ldx,
                                const uint8_t *w, int64_t w_cs, int64_t w_ks,
                                float *out, int64_t ldo)
{
    float table[256];
    make_table(table);
#if !defined(FB_E4M3_NO_AVX512)
    if (fb_cpu_has_avx512vbmi() && w_ks == 1 && m <= Z_MAX_X && k > 0) {
        dots_zregs(m, n, k, x, ldx, w, w_cs, table, out, ldo);
        return;
    }
#endif
    if (w_ks == 1 && m <= REGS_MAX_X && k > 0 && x_scalable(m, k, x, ldx)) {
        dots_regs(m, n, k, x, ldx, w, w_cs, table, out, ldo);
        return;
    }
    dots_buffered(m, n, k, x, ldx, w, w_cs, w_ks, table, out, ldo);
}

#endif

void fb_cpu_e4m3_dots(int64_t m, int64_t n, int64_t k, const float *x,
                      int64_t ldx, const uint8_t *w, int64_t w_cs,
                      int64_t w_ks, float *out, int64_t ldo)
{
#if defined(FB_HAVE_AVX2_E4M3)
    if (fb_cpu_has_avx2_fma_f16c()) {
        e4m3_dots_avx2(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
        return;
    }
#endif
    e4m3_dots_c(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
}

const char *fb_cpu_e4m3_isa(void)
{
#if defined(FB_HAVE_AVX2_E4M3)
#if !defined(FB_E4M3_NO_AVX512)
    if (fb_cpu_has_avx512bw())
        return "avx512";
#endif
    if (fb_cpu_has_avx2_fma_f16c())
        return "avx2";
#endif
    return "c";
}
