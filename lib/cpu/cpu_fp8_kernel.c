/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_kernel.c -- fp32 x rows times e4m3 weight rows.
 *
 * For each group of four weight rows (channels), k is walked in chunks:
 * the chunk of the four rows is widened to fp32 into a small buffer that
 * stays in L1, then every x row is multiplied against it, two x rows at a
 * time (eight accumulators). A weight byte is read from memory once per
 * call, whatever m.
 *
 * Widening on AVX2: e4m3 is a sub-format of IEEE binary16 shifted by 2^8:
 * with its sign moved to bit 15 and its seven other bits to bits 7..13,
 * the binary16 number is q * 2^-8 exactly (subnormals included), which
 * F16C widens; one multiplication by 2^8 restores q exactly. The NaN
 * pattern is forced to a binary16 NaN first.
 */
#include <string.h>
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
    const int64_t len8 = (len + 7) / 8 * 8;
    for (int r = 0; r < ROWS; r++) {
        float *d = buf + r * CHUNK;
        if (r >= rows) {
            memset(d, 0, (size_t)len8 * sizeof(float));
            continue;
        }
        const uint8_t *src = w + (j0 + r) * w_cs + p0 * w_ks;
        for (int64_t p = 0; p < len; p++)
            d[p] = table[src[p * w_ks]];
        for (int64_t p = len; p < len8; p++)
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

/* 16 e4m3 bytes to 16 floats in two registers. */
AVX2 static inline void widen16_regs(const uint8_t *src, __m256 *lo,
                                     __m256 *hi)
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
    *lo = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), two8);
    *hi = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)),
                        two8);
}

/* One x row (m == 1) against contiguous weight rows: the bytes widened in
 * registers and multiplied at once, no buffer between (a single token has
 * nothing to share a widened chunk with). */
AVX2 static void dots_one_row(int64_t n, int64_t k, const float *x,
                              const uint8_t *w, int64_t w_cs,
                              const float *table, float *out)
{
    const int64_t k16 = k / 16 * 16;
    int64_t j = 0;
    for (; j + ROWS <= n; j += ROWS) {
        const uint8_t *r0 = w + j * w_cs, *r1 = r0 + w_cs, *r2 = r1 + w_cs,
                      *r3 = r2 + w_cs;
        __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0,
               b2 = a0, a3 = a0, b3 = a0;
        for (int64_t p = 0; p < k16; p += 16) {
            const __m256 xl = _mm256_loadu_ps(x + p),
                         xh = _mm256_loadu_ps(x + p + 8);
            __m256 lo, hi;
            widen16_regs(r0 + p, &lo, &hi);
            a0 = _mm256_fmadd_ps(xl, lo, a0);
            b0 = _mm256_fmadd_ps(xh, hi, b0);
            widen16_regs(r1 + p, &lo, &hi);
            a1 = _mm256_fmadd_ps(xl, lo, a1);
            b1 = _mm256_fmadd_ps(xh, hi, b1);
            widen16_regs(r2 + p, &lo, &hi);
            a2 = _mm256_fmadd_ps(xl, lo, a2);
            b2 = _mm256_fmadd_ps(xh, hi, b2);
            widen16_regs(r3 + p, &lo, &hi);
            a3 = _mm256_fmadd_ps(xl, lo, a3);
            b3 = _mm256_fmadd_ps(xh, hi, b3);
        }
        float s[ROWS] = {hsum(_mm256_add_ps(a0, b0)),
                         hsum(_mm256_add_ps(a1, b1)),
                         hsum(_mm256_add_ps(a2, b2)),
                         hsum(_mm256_add_ps(a3, b3))};
        const uint8_t *rows[ROWS] = {r0, r1, r2, r3};
        for (int r = 0; r < ROWS; r++) {
            for (int64_t p = k16; p < k; p++)
                s[r] += x[p] * table[rows[r][p]];
            out[j + r] = s[r];
        }
    }
    for (; j < n; j++) {
        const uint8_t *r0 = w + j * w_cs;
        __m256 a0 = _mm256_setzero_ps(), b0 = a0;
        for (int64_t p = 0; p < k16; p += 16) {
            __m256 lo, hi;
            widen16_regs(r0 + p, &lo, &hi);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p), lo, a0);
            b0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p + 8), hi, b0);
        }
        float s = hsum(_mm256_add_ps(a0, b0));
        for (int64_t p = k16; p < k; p++)
            s += x[p] * table[r0[p]];
        out[j] = s;
    }
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
 * never reading past a row's last byte. */
AVX2 static void widen_rows(const uint8_t *w, int64_t w_cs, int64_t j0,
                            int rows, int64_t p0, int64_t len,
                            const float *table, float *buf)
{
    const int64_t len8 = (len + 7) / 8 * 8;
    for (int r = 0; r < ROWS; r++) {
        float *d = buf + r * CHUNK;
        if (r >= rows) {
            memset(d, 0, (size_t)len8 * sizeof(float));
            continue;
        }
        const uint8_t *src = w + (j0 + r) * w_cs + p0;
        int64_t p = 0;
        for (; p + 16 <= len; p += 16)
            widen16(src + p, d + p);
        for (; p < len; p++)
            d[p] = table[src[p]];
        for (; p < len8; p++)
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

AVX2 static void e4m3_dots_avx2(int64_t m, int64_t n, int64_t k,
                                const float *x, int64_t ldx,
                                const uint8_t *w, int64_t w_cs, int64_t w_ks,
                                float *out, int64_t ldo)
{
    float table[256];
    float buf[ROWS * CHUNK] __attribute__((aligned(32)));
    make_table(table);
    if (m == 1 && w_ks == 1) {
        dots_one_row(n, k, x, w, w_cs, table, out);
        return;
    }
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
            dots_avx2(m, (len + 7) / 8 * 8, x + p0, ldx, buf, rows,
                      out + j0, ldo, p0 == 0);
        }
    }
}

static int have_avx2(void)
{
    /* Threads may race to fill the cache; they store the same answer. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("f16c");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

void fb_cpu_e4m3_dots(int64_t m, int64_t n, int64_t k, const float *x,
                      int64_t ldx, const uint8_t *w, int64_t w_cs,
                      int64_t w_ks, float *out, int64_t ldo)
{
#if defined(FB_HAVE_AVX2_E4M3)
    if (have_avx2()) {
        e4m3_dots_avx2(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
        return;
    }
#endif
    e4m3_dots_c(m, n, k, x, ldx, w, w_cs, w_ks, out, ldo);
}

const char *fb_cpu_e4m3_isa(void)
{
#if defined(FB_HAVE_AVX2_E4M3)
    if (have_avx2())
        return "avx2";
#endif
    return "c";
}
