/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m_amx.c -- the decode kernel's bf16 form on AMX (cpu_small_m.h):
 * out (m x n) = x (m x k) w^T for m <= 80, w read where it lies; and the
 * same loop for e4m3 weights (fb_cpu_e4m3_amx_nt), each tile of w widened
 * exactly to bf16 in L1 first.
 *
 * TDPBF16PS's row operand ("A", 16 rows of 32 bf16 along k) is 16 rows of
 * w as stored: nn.Linear's weights run along k, so a tile is 16 rows of 64
 * bytes, ldw apart, and nothing of w is packed (a plan and a plain call
 * stream the same bytes). x is packed once per call as the pair operand
 * ("B": 16 k-pairs by 16 tokens), up to five token groups. The
 * accumulators are 16 weight rows by 16 tokens, transposed on the way
 * out. Weight rows past n and columns past k are staged through a zeroed
 * tile on the stack, so nothing outside w is read (the prefetches stay
 * within w's rows too).
 *
 * Decode is bound by reading w: one TDPBF16PS covers 16 tokens for the
 * same bytes that VDPBF16PS needs for one, which is why this form wins
 * from about 8 rows (docs/cpu-kernels.md).
 *
 * TDPBF16PS reads denormals as zero and flushes denormal products, as
 * VDPBF16PS does: the smallest exponent field of w is taken from the same
 * rows as they stream (in L1 by then), and the caller reruns on the FMA
 * form when fb_bf16_products_exact says a product could have flushed.
 */
#include "config.h"
#include <stdint.h>
#include <string.h>
#include "cpu_bf16_kernel.h"
#include "cpu_small_m.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>
#include "cpu_avx512_transpose.h"
#include "cpu_e4m3_bf16.h"
#define FB_SMALL_M_AMX 1
#define FB_AMX_TARGET                                                          \
    __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-bf16")))
#endif

/* bf16 per packed tile of x: 16 pairs by 16 tokens. */
#define TILE_WORDS 512

size_t fb_cpu_small_m_amx_pack_bytes(int64_t m, int64_t k)
{
    return (size_t)((k + 31) / 32) * (size_t)((m + 15) / 16) * TILE_WORDS *
           sizeof(uint16_t);
}

void fb_cpu_small_m_amx_pack(int64_t m, int64_t k, const uint16_t *x,
                             int64_t ldx, uint16_t *dst)
{
    const int64_t groups = (m + 15) / 16;
    memset(dst, 0, fb_cpu_small_m_amx_pack_bytes(m, k));
    /* Chunk c (32 of k) of token group q: tile (c * groups + q); its row
     * r holds pair r of every token, word t = (x[t][2r], x[t][2r + 1]). */
    for (int64_t t = 0; t < m; t++) {
        uint16_t *g = dst + (t / 16) * TILE_WORDS + (t % 16) * 2;
        for (int64_t l = 0; l < k; l++)
            g[(l / 32) * groups * TILE_WORDS + ((l % 32) / 2) * 32 + (l % 2)] =
                x[t * ldx + l];
    }
}

#if defined(FB_SMALL_M_AMX)

/* Weight rows [j0, j0 + 16) at columns [l0, l0 + 32): in place when whole,
 * else copied into stage (zeros beyond w). Folds the rows' magnitudes
 * minus one into *lo (zeros wrap to 0xffff: they never flush). Returns the
 * tile's address; *stride its row stride in bytes. */
FB_AMX_TARGET static const uint16_t *
weight_tile(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, int64_t j0,
            int64_t l0, uint16_t *stage, size_t *stride, __m512i *lo)
{
    const int64_t rows = n - j0 < 16 ? n - j0 : 16;
    const int64_t cols = k - l0 < 32 ? k - l0 : 32;
    const uint16_t *src = w + j0 * ldw + l0;
    *stride = (size_t)ldw * 2;
    if (rows < 16 || cols < 32) {
        memset(stage, 0, 16 * 64);
        for (int64_t r = 0; r < rows; r++)
            memcpy(stage + r * 32, src + r * ldw, (size_t)cols * 2);
        src = stage;
        *stride = 64;
    }
    const __m512i mag = _mm512_set1_epi16(0x7fff);
    const __m512i one = _mm512_set1_epi16(1);
    for (int r = 0; r < 16; r++) {
        const __m512i v = _mm512_loadu_si512(
            (const char *)src + (size_t)r * *stride);
        *lo = _mm512_min_epu16(
            *lo, _mm512_sub_epi16(_mm512_and_si512(v, mag), one));
    }
    return src;
}

/* acc tile (16 rows of 16 floats) into out: row j0 + r, token t at
 * out[t * ldo + j0 + r], for r < rows, t < m. */
FB_AMX_TARGET static void store_transposed(const float *acc, int64_t m,
                                           int64_t rows, float *out,
                                           int64_t ldo)
{
    __m512i v[16];
    for (int r = 0; r < 16; r++)
        v[r] = _mm512_loadu_si512(acc + r * 16);
    fb_transpose16x16_epi32(v);
    const __mmask16 keep = (__mmask16)((1u << rows) - 1u);
    for (int64_t t = 0; t < m && t < 16; t++)
        _mm512_mask_storeu_epi32(out + t * ldo, keep, v[t]);
}

/* Chunks of 32 columns ahead that each weight row is prefetched: one
 * group of 16 rows streams at a time, and without it the hardware leaves
 * the 16 rows (ldw apart, often the same L1 set) to demand misses
 * (docs/cpu-kernels.md). */
#define PREFETCH_CHUNKS 8

/* e4m3 row tile: weight rows [j0, j0 + 16) (rows past n zero) at bytes
 * [l0, l0 + 32) (zeros past k) widened into stage as bf16
 * (fb_e4m3_bf16x32). */
FB_AMX_TARGET static void e4m3_tile(const uint8_t *w, int64_t ldw, int64_t n,
                                    int64_t k, int64_t j0, int64_t l0,
                                    uint16_t *stage)
{
    const int64_t rows = n - j0 < 16 ? n - j0 : 16;
    const int64_t cols = k - l0 < 32 ? k - l0 : 32;
    const __mmask32 in = cols == 32 ? ~0u : (__mmask32)((1u << cols) - 1u);
    const uint8_t *src = w + j0 * ldw + l0;
    for (int64_t r = 0; r < rows; r++)
        _mm512_storeu_si512(stage + r * 32, fb_e4m3_bf16x32(src + r * ldw, in));
    for (int64_t r = rows; r < 16; r++)
        _mm512_storeu_si512(stage + r * 32, _mm512_setzero_si512());
}

/* Token tile g: its accumulator is tile g, its x goes through tile t, 6
 * or 7 in turn (so the next load need not wait for this product), w is
 * in tile 5. The tile numbers are literals: the intrinsics paste them
 * into the instruction. */
#define TOKEN_TILE(g, t, xc)                                                   \
    do {                                                                       \
        _tile_loadd(t, (xc) + (g) * TILE_WORDS, 64);                          \
        _tile_dpbf16ps(g, 5, t);                                               \
    } while (0)

/* The loop of both products: one group of 16 weight rows at a time
 * against up to FB_AMX_TOKEN_TILES token tiles. e4m3: w holds bytes,
 * widened a tile at a time (e4m3_tile); else bf16, read in place
 * (weight_tile, which folds the rows' smallest magnitude into *lo). */
FB_AMX_TARGET __attribute__((always_inline)) static inline void
amx_rows(const int e4m3, int64_t m, int64_t n, int64_t k,
         const uint16_t *xp, const void *wv, int64_t ldw, float *out,
         int64_t ldo, __m512i *lo)
{
    const int64_t groups = (m + 15) / 16, chunks = (k + 31) / 32;
    const int64_t esize = e4m3 ? 1 : 2;
    const char *wb = (const char *)wv;
    fb_cpu_amx_configure();
    uint16_t stage[16 * 32] __attribute__((aligned(64)));
    float acc[256];
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int64_t rows = n - j0 < 16 ? n - j0 : 16;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        _tile_zero(4);
        for (int64_t c = 0; c < chunks; c++) {
            if (c + PREFETCH_CHUNKS < chunks) {
                const char *ahead =
                    wb + (j0 * ldw + 32 * (c + PREFETCH_CHUNKS)) * esize;
                for (int64_t r = 0; r < rows; r++)
                    _mm_prefetch(ahead + (size_t)(r * ldw * esize),
                                 _MM_HINT_T0);
            }
            size_t s = 64;
            const uint16_t *a = stage;
            if (e4m3)
                e4m3_tile((const uint8_t *)wv, ldw, n, k, j0, 32 * c, stage);
            else
                a = weight_tile((const uint16_t *)wv, ldw, n, k, j0, 32 * c,
                                stage, &s, lo);
            const uint16_t *xc = xp + c * groups * TILE_WORDS;
            _tile_loadd(5, a, s);
            TOKEN_TILE(0, 6, xc);
            if (groups > 1)
                TOKEN_TILE(1, 7, xc);
            if (groups > 2)
                TOKEN_TILE(2, 6, xc);
            if (groups > 3)
                TOKEN_TILE(3, 7, xc);
            if (groups > 4)
                TOKEN_TILE(4, 6, xc);
        }
        for (int64_t g = 0; g < groups; g++) {
            switch (g) {
            case 0: _tile_stored(0, acc, 64); break;
            case 1: _tile_stored(1, acc, 64); break;
            case 2: _tile_stored(2, acc, 64); break;
            case 3: _tile_stored(3, acc, 64); break;
            default: _tile_stored(4, acc, 64); break;
            }
            store_transposed(acc, m - 16 * g < 16 ? m - 16 * g : 16, rows,
                             out + 16 * g * ldo + j0, ldo);
        }
    }
    _tile_release();
}

FB_AMX_TARGET int fb_cpu_small_m_amx_nt(int64_t m, int64_t n, int64_t k,
                                        const uint16_t *xp, int x_field,
                                        const void *wv, int64_t ldw,
                                        float *out, int64_t ldo)
{
    __m512i lo = _mm512_set1_epi16((short)0xffff);
    amx_rows(0, m, n, k, xp, wv, ldw, out, ldo, &lo);
    uint16_t lanes[32];
    _mm512_storeu_si512(lanes, lo);
    unsigned least = 0xffff;
    for (int i = 0; i < 32; i++)
        least = lanes[i] < least ? lanes[i] : least;
    const int w_field = least >= 0x7fff ? 255 : (int)((least + 1) >> 7);
    return fb_bf16_products_exact(x_field, w_field);
}

FB_AMX_TARGET int fb_cpu_e4m3_amx_nt(int64_t m, int64_t n, int64_t k,
                                     const uint16_t *xp, int x_field,
                                     const uint8_t *w, int64_t ldw,
                                     float *out, int64_t ldo)
{
    if (!fb_bf16_products_exact(x_field, FB_E4M3_BF16_FIELD))
        return 0;
    amx_rows(1, m, n, k, xp, w, ldw, out, ldo, NULL);
    return 1;
}

FB_AMX_TARGET int fb_cpu_small_m_amx_pack_f32(int64_t m, int64_t k,
                                              const float *x, int64_t ldx,
                                              uint16_t *dst)
{
    const int64_t groups = (m + 15) / 16, chunks = (k + 31) / 32;
    /* the high halves of two vectors of floats: 32 bf16 in order */
    __m512i odd;
    {
        uint16_t ix[32];
        for (int i = 0; i < 32; i++)
            ix[i] = (uint16_t)(2 * i + 1);
        odd = _mm512_loadu_si512(ix);
    }
    const __m512i mag = _mm512_set1_epi32(0x7fffffff);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i lo = _mm512_set1_epi32(-1);
    for (int64_t q = 0; q < groups; q++)
        for (int64_t c = 0; c < chunks; c++) {
            const int64_t cols = k - 32 * c < 32 ? k - 32 * c : 32;
            const __mmask16 m0 = cols >= 16 ? 0xffff
                                            : (__mmask16)((1u << cols) - 1u);
            const __mmask16 m1 =
                cols >= 32 ? 0xffff
                : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1u)
                            : 0;
            __m512i v[16];
            for (int u = 0; u < 16; u++) {
                const int64_t t = 16 * q + u;
                if (t >= m) {
                    v[u] = _mm512_setzero_si512();
                    continue;
                }
                const float *src = x + t * ldx + 32 * c;
                const __m512i a = _mm512_maskz_loadu_epi32(m0, src);
                const __m512i b = _mm512_maskz_loadu_epi32(m1, src + 16);
                lo = _mm512_min_epu32(
                    lo, _mm512_sub_epi32(_mm512_and_si512(a, mag), one));
                lo = _mm512_min_epu32(
                    lo, _mm512_sub_epi32(_mm512_and_si512(b, mag), one));
                v[u] = _mm512_permutex2var_epi16(a, odd, b);
            }
            fb_transpose16x16_epi32(v);
            uint16_t *tile = dst + (c * groups + q) * TILE_WORDS;
            for (int r = 0; r < 16; r++)
                _mm512_storeu_si512(tile + r * 32, v[r]);
        }
    const unsigned least = (unsigned)_mm512_reduce_min_epu32(lo);
    return least == 0xffffffffu ? 255 : (int)((least + 1) >> 23);
}

#else

int fb_cpu_small_m_amx_nt(int64_t m, int64_t n, int64_t k,
                          const uint16_t *xp, int x_field, const void *w,
                          int64_t ldw, float *out, int64_t ldo)
{
    (void)m, (void)n, (void)k, (void)xp, (void)x_field, (void)w, (void)ldw;
    (void)out, (void)ldo;
    return 0;
}

int fb_cpu_e4m3_amx_nt(int64_t m, int64_t n, int64_t k, const uint16_t *xp,
                       int x_field, const uint8_t *w, int64_t ldw, float *out,
                       int64_t ldo)
{
    (void)m, (void)n, (void)k, (void)xp, (void)x_field, (void)w, (void)ldw;
    (void)out, (void)ldo;
    return 0;
}

int fb_cpu_small_m_amx_pack_f32(int64_t m, int64_t k, const float *x,
                                int64_t ldx, uint16_t *dst)
{
    (void)m, (void)k, (void)x, (void)ldx, (void)dst;
    return 0;
}

#endif
