/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_kernel.c -- packing and the VDPBF16PS register block (see
 * cpu_bf16_kernel.h for the packed layout, cpu_bf16_gemm.c for the plan).
 *
 * Everything that uses AVX-512 is compiled for it by function attributes,
 * so the rest of the library builds for the baseline and a CPU without
 * AVX512-BF16 never reaches these functions (fb_cpu_bf16_available).
 *
 * Packing, by how the operand runs in storage:
 *  - along k (a row of op(A) when transposed, a column of op(B) when not,
 *    nn.Linear's weights and inputs): the word for pair p of row i is
 *    already the p-th 32-bit word of the row; 16 rows x 16 words are
 *    loaded and transposed in registers (the usual 16 x 16 transpose:
 *    32-bit, 64-bit, then 128-bit lane shuffles), or stored as loaded
 *    where the panel is in tile rows.
 *  - across k: the rows for k = 2p and 2p + 1 are loaded side by side and
 *    interleaved by one 16-bit permute (then, for tile rows, 16 pairs are
 *    transposed).
 * Loads are masked at the edges (rows past the matrix, the element past an
 * odd k read as zero), so nothing outside the operand is touched. Every
 * loaded vector also updates the smallest exponent field among its
 * non-zero elements (fb_bf16_products_exact says why): four instructions
 * per 32 elements.
 */
#include "config.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_bf16_kernel.h"
#include "cpu_epilogue.h"
#include "cpu_small_m.h"
#include "env.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include "cpu_act_avx512.h"
#include "cpu_avx512_transpose.h"
#include "cpu_e4m3_bf16.h"
#define FB_BF16_X86 1
#define FB_BF16_TARGET                                                         \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

/* The register block: rows of op(A) by columns of op(B). */
#define FB_BF16_MR 32
#define FB_BF16_NR 12

/* Most k pairs per pass over a block: A's chunk (MR x 768 bf16 = 48 KiB
 * per panel) stays in L2, B's (NR x 768 = 18 KiB) in L1. 768 takes the
 * seed MLP's k in one pass, faster there than two (docs/cpu-kernels.md). */
#define KC_PAIRS 384

/* ---- availability ---------------------------------------------------------
 * CPUID itself rather than __builtin_cpu_supports: compilers disagree on
 * which feature names the builtin accepts ("avx512bf16"), and this must
 * build with both. Leaf 7 subleaf 0 EBX: AVX512F bit 16, AVX512BW bit 30,
 * AVX512VL bit 31; subleaf 1 EAX: AVX512_BF16 bit 5; XCR0 bits 1, 2, 5-7:
 * the OS saves the XMM, YMM, opmask and ZMM state. */
static int cpu_has_avx512bf16(void)
{
#if defined(FB_BF16_X86)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
        return 0;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0xe6u) != 0xe6u)
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    const unsigned need = (1u << 16) | (1u << 30) | (1u << 31);
    if ((b & need) != need || a < 1)
        return 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return 0;
    return (a & (1u << 5)) != 0;
#else
    return 0;
#endif
}

/* cpu_has_avx512bf16, asked once: CPUID is slow in a virtual machine (an
 * exit to the hypervisor), and calls ask often. A benign race between
 * first callers, made well defined. */
static int cpu_runs_avx512bf16(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = cpu_has_avx512bf16();
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

int fb_cpu_bf16_available(void)
{
    return cpu_runs_avx512bf16() && !fb_env_get()->cpu_no_bf16;
}

#if defined(FB_BF16_X86)
/* fb_cpu_bf16_min_field's answer, 32 elements at a time: the smallest
 * magnitude minus one (zero wraps to 0xffff), as 16-bit lanes. */
FB_BF16_TARGET static int min_field_avx512(const uint16_t *x, int64_t lines,
                                           int64_t len, int64_t ld)
{
    const __m512i mag = _mm512_set1_epi16(0x7fff);
    const __m512i one = _mm512_set1_epi16(1);
    __m512i lo = _mm512_set1_epi16(-1);
    const int64_t tail = len % 32;
    const __mmask32 tmask = (__mmask32)((1ull << tail) - 1u);
    for (int64_t i = 0; i < lines; i++) {
        const uint16_t *row = x + i * ld;
        int64_t l = 0;
        for (; l + 32 <= len; l += 32)
            lo = _mm512_min_epu16(
                lo, _mm512_sub_epi16(
                        _mm512_and_si512(_mm512_loadu_si512(row + l), mag),
                        one));
        if (tail)
            lo = _mm512_mask_min_epu16(
                lo, tmask, lo,
                _mm512_sub_epi16(
                    _mm512_and_si512(_mm512_maskz_loadu_epi16(tmask, row + l),
                                     mag),
                    one));
    }
    uint16_t lanes[32];
    _mm512_storeu_si512(lanes, lo);
    unsigned m = 0xffff;
    for (int i = 0; i < 32; i++)
        m = lanes[i] < m ? lanes[i] : m;
    return m >= 0x7fff ? 255 : (int)((m + 1) >> 7);
}
#endif

int fb_bf16_min_field(const fb_bf16_operand *x, int64_t rows, int64_t k,
                      int threads)
{
    /* The stored matrix: rows lines of k elements, or k lines of rows. */
    const int64_t lines = x->k_contiguous ? rows : k;
    const int64_t len = x->k_contiguous ? k : rows;
    int lo = 255;
    if (x->base == NULL || lines <= 0 || len <= 0)
        return lo; /* no values (a plan's X, not known yet) */
#if defined(FB_BF16_X86)
    const int vector = cpu_runs_avx512bf16();
#else
    const int vector = 0;
#endif
#pragma omp parallel for num_threads(threads) schedule(static) \
    reduction(min : lo) if (threads > 1 && lines * len >= ((int64_t)1 << 16))
    for (int64_t i = 0; i < lines; i += 64) {
        const int64_t n = lines - i < 64 ? lines - i : 64;
        const uint16_t *base = (const uint16_t *)x->base + i * x->ld;
#if defined(FB_BF16_X86)
        const int f = vector ? min_field_avx512(base, n, len, x->ld)
                             : fb_cpu_bf16_min_field(base, n, len, x->ld);
#else
        const int f = fb_cpu_bf16_min_field(base, n, len, x->ld);
#endif
        lo = f < lo ? f : lo;
    }
    (void)vector;
    return lo;
}

#if defined(FB_BF16_X86)

/* ---- packing ------------------------------------------------------------ */

/* emin lane-wise lowered to the exponent fields of v's non-zero lanes
 * (a denormal's field is 0). */
FB_BF16_TARGET static inline __m512i exponent_min(__m512i emin, __m512i v)
{
    const __mmask32 nonzero =
        _mm512_test_epi16_mask(v, _mm512_set1_epi16(0x7fff));
    const __m512i field = _mm512_and_si512(_mm512_srli_epi16(v, 7),
                                           _mm512_set1_epi16(0xff));
    return _mm512_mask_min_epu16(emin, nonzero, emin, field);
}

/* The smallest lane of emin, at most 255 (255 when all were zero). */
FB_BF16_TARGET static inline int exponent_min_reduce(__m512i emin)
{
    uint16_t lanes[32];
    _mm512_storeu_si512(lanes, emin);
    int e = 255;
    for (int i = 0; i < 32; i++)
        e = lanes[i] < e ? lanes[i] : e;
    return e;
}

/* One panel, rows running along k: rows [i0, i0 + nrows) (nrows <= R may
 * be short: the rest are zero words), kpt pairs (zero words past k). In
 * tile rows (R = 16) each run of 16 pairs is stored as loaded. src holds
 * bf16, or (e4m3, a constant) e4m3 bytes widened on the load (ld then in
 * bytes). */
FB_BF16_TARGET __attribute__((always_inline)) static inline int
pack_along_k_from(const void *src, const int e4m3, int64_t ld, int64_t nrows,
                  int64_t k, int r, int64_t kpt, int tiles, uint16_t *dst)
{
    __m512i emin = _mm512_set1_epi16(255);
    for (int g = 0; g < r; g += 16) {
        /* Words of this group of 16 rows that belong in the panel. */
        const int width = r - g < 16 ? r - g : 16;
        const __mmask16 keep = (__mmask16)((1u << width) - 1u);
        const int64_t live = nrows - g < 0 ? 0 : nrows - g;
        for (int64_t p0 = 0; p0 < kpt; p0 += 16) {
            const int64_t e = k - 2 * p0; /* elements left in a row */
            const __mmask32 emask = e >= 32  ? ~(__mmask32)0
                                    : e <= 0 ? 0
                                             : (__mmask32)((1u << e) - 1u);
            __m512i v[16];
            #pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                /* Offsets only for rows that exist: a one-row operand may
                 * carry any ld, and (g + i) * ld would overflow. */
                if (i >= live) {
                    v[i] = _mm512_setzero_si512();
                } else {
                    const int64_t at = (g + i) * ld + 2 * p0;
                    v[i] = e4m3 ? fb_e4m3_bf16x32((const uint8_t *)src + at,
                                                  emask)
                                : _mm512_maskz_loadu_epi16(
                                      emask, (const uint16_t *)src + at);
                }
                emin = exponent_min(emin, v[i]);
            }
            uint16_t *out = dst + 2 * (p0 * r + g);
            if (tiles) {
                for (int i = 0; i < 16; i++)
                    _mm512_storeu_si512(out + 32 * i, v[i]);
                continue;
            }
            fb_transpose16x16_epi32(v);
            const int64_t pairs = kpt - p0 < 16 ? kpt - p0 : 16;
            for (int64_t c = 0; c < pairs; c++)
                _mm512_mask_storeu_epi32(out + 2 * c * r, keep, v[c]);
        }
    }
    return exponent_min_reduce(emin);
}

FB_BF16_TARGET static int pack_along_k(const uint16_t *src, int64_t ld,
                                       int64_t nrows, int64_t k, int r,
                                       int64_t kpt, int tiles, uint16_t *dst)
{
    return pack_along_k_from(src, 0, ld, nrows, k, r, kpt, tiles, dst);
}

FB_BF16_TARGET static int pack_along_k_e4m3(const uint8_t *src, int64_t ld,
                                            int64_t nrows, int64_t k, int r,
                                            int64_t kpt, uint16_t *dst)
{
    return pack_along_k_from(src, 1, ld, nrows, k, r, kpt, 0, dst);
}

/* One panel, rows running across k: row i of pair p is src[i + l * ld]
 * for l = 2p, 2p + 1. All R (<= 32) rows of a pair come from one vector
 * per l, so each cache line of the operand is read once. kpt pairs (zero
 * words past k); in tile rows (R = 16), each run of 16 pairs transposed. */
FB_BF16_TARGET static int pack_across_k(const uint16_t *src, int64_t ld,
                                        int64_t nrows, int64_t k, int r,
                                        int64_t kpt, int tiles, uint16_t *dst)
{
    const int64_t kp = (k + 1) / 2;
    /* Words 0..15 of the result, then 16..31: (first[i], second[i]),
     * indices into the pair of vectors (first 0..31, second 32..63). */
    static const uint16_t order[2][32] = {
        {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
         8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47},
        {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
         24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63}};
    const __m512i lo_idx = _mm512_loadu_si512(order[0]);
    const __m512i hi_idx = _mm512_loadu_si512(order[1]);
    const int64_t live = nrows < r ? nrows : r;
    const __mmask32 rmask = live >= 32 ? ~(__mmask32)0
                                       : (__mmask32)((1u << live) - 1u);
    const __mmask16 keep = (__mmask16)(r >= 16 ? 0xffffu : (1u << r) - 1u);
    __m512i emin = _mm512_set1_epi16(255);
    __m512i run[16];
    for (int64_t p = 0; p < kpt; p++) {
        __m512i first = _mm512_setzero_si512(), second = first;
        if (p < kp) {
            const uint16_t *s0 = src + 2 * p * ld;
            first = _mm512_maskz_loadu_epi16(rmask, s0);
            if (2 * p + 1 < k)
                second = _mm512_maskz_loadu_epi16(rmask, s0 + ld);
        }
        emin = exponent_min(emin, first);
        emin = exponent_min(emin, second);
        const __m512i lo = _mm512_permutex2var_epi16(first, lo_idx, second);
        if (tiles) {
            run[p % 16] = lo;
            if (p % 16 == 15) {
                fb_transpose16x16_epi32(run);
                uint16_t *out = dst + 2 * (p - 15) * r;
                for (int i = 0; i < 16; i++)
                    _mm512_storeu_si512(out + 32 * i, run[i]);
            }
            continue;
        }
        uint16_t *out = dst + 2 * p * r;
        _mm512_mask_storeu_epi32(out, keep, lo);
        if (r > 16)
            _mm512_mask_storeu_epi32(
                out + 32, (__mmask16)((1u << (r - 16)) - 1u),
                _mm512_permutex2var_epi16(first, hi_idx, second));
    }
    return exponent_min_reduce(emin);
}

/* Panels [q0, q1) of r rows, kpt pairs each. */
static int pack_panels(const fb_bf16_operand *x, int64_t rows, int64_t k,
                       int r, int64_t kpt, int tiles, int64_t q0, int64_t q1,
                       uint16_t *dst)
{
    int emin = 255, e;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t i0 = q * r;
        const int64_t nrows = rows - i0 < r ? rows - i0 : r;
        uint16_t *out = dst + q * fb_bf16_panel_elems(kpt, r);
        if (x->k_contiguous)
            e = pack_along_k((const uint16_t *)x->base + i0 * x->ld, x->ld,
                             nrows, k, r, kpt, tiles, out);
        else
            e = pack_across_k((const uint16_t *)x->base + i0, x->ld, nrows,
                              k, r, kpt, tiles, out);
        emin = e < emin ? e : emin;
    }
    return emin;
}

int fb_bf16_pack_a(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst)
{
    return pack_panels(x, rows, k, e->mr, fb_bf16_pairs(e, k), 0, q0, q1,
                       dst);
}

int fb_bf16_pack_b(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst)
{
    return pack_panels(x, rows, k, e->nr, fb_bf16_pairs(e, k),
                       e->b_tile_rows, q0, q1, dst);
}

int fb_bf16_pack_a_e4m3(const fb_bf16_engine *e, const uint8_t *w,
                        int64_t ldw, int64_t rows, int64_t k, int64_t q0,
                        int64_t q1, uint16_t *dst)
{
    const int64_t kpt = fb_bf16_pairs(e, k);
    int emin = 255;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t i0 = q * e->mr;
        const int64_t nrows = rows - i0 < e->mr ? rows - i0 : e->mr;
        const int f = pack_along_k_e4m3(w + i0 * ldw, ldw, nrows, k, e->mr,
                                        kpt,
                                        dst + q * fb_bf16_panel_elems(kpt,
                                                                      e->mr));
        emin = f < emin ? f : emin;
    }
    return emin;
}

/* ---- the register block ------------------------------------------------- */

/* acc tile (32 x 12 at c, ldc) <- scale * ((load ? tile : 0) + sum over np
 * pairs of a-panel x b-panel). */
FB_BF16_TARGET static void kernel_32x12(int64_t np, const uint16_t *a,
                                        const uint16_t *b, float *c,
                                        int64_t ldc, int load, float scale)
{
    __m512 acc0[FB_BF16_NR], acc1[FB_BF16_NR];
    #pragma GCC unroll 12
    for (int j = 0; j < FB_BF16_NR; j++) {
        acc0[j] = load ? _mm512_loadu_ps(c + j * ldc) : _mm512_setzero_ps();
        acc1[j] = load ? _mm512_loadu_ps(c + j * ldc + 16)
                       : _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < np; p++) {
        const __m512bh a0 = (__m512bh)_mm512_loadu_si512(a);
        const __m512bh a1 = (__m512bh)_mm512_loadu_si512(a + 32);
        #pragma GCC unroll 12
        for (int j = 0; j < FB_BF16_NR; j++) {
            uint32_t w;
            memcpy(&w, b + 2 * j, sizeof w);
            const __m512bh bj = (__m512bh)_mm512_set1_epi32((int)w);
            acc0[j] = _mm512_dpbf16_ps(acc0[j], a0, bj);
            acc1[j] = _mm512_dpbf16_ps(acc1[j], a1, bj);
        }
        a += 2 * FB_BF16_MR;
        b += 2 * FB_BF16_NR;
    }
    const __m512 s = _mm512_set1_ps(scale);
    #pragma GCC unroll 12
    for (int j = 0; j < FB_BF16_NR; j++) {
        _mm512_storeu_ps(c + j * ldc, _mm512_mul_ps(acc0[j], s));
        _mm512_storeu_ps(c + j * ldc + 16, _mm512_mul_ps(acc1[j], s));
    }
}

static void block_32x12(const uint16_t *a, int64_t astride, int64_t na,
                        const uint16_t *b, int64_t bstride, int64_t nb,
                        int64_t np, float alpha, int accumulate, float *acc,
                        int64_t ldacc)
{
    /* Equal chunks of at most KC_PAIRS: no short last chunk. */
    const int64_t nchunks = (np + KC_PAIRS - 1) / KC_PAIRS;
    const int64_t kc = (np + nchunks - 1) / nchunks;
    for (int64_t p0 = 0; p0 < np; p0 += kc) {
        const int64_t pc = np - p0 < kc ? np - p0 : kc;
        const int last = p0 + pc == np;
        for (int64_t jb = 0; jb < nb; jb++) {
            const uint16_t *bj = b + jb * bstride + p0 * 2 * FB_BF16_NR;
            float *cj = acc + jb * FB_BF16_NR * ldacc;
            for (int64_t ia = 0; ia < na; ia++)
                kernel_32x12(pc, a + ia * astride + p0 * 2 * FB_BF16_MR, bj,
                             cj + ia * FB_BF16_MR, ldacc,
                             accumulate || p0 > 0, last ? alpha : 1.0f);
        }
    }
}

/* Round to nearest even; a NaN keeps its sign and top payload, made
 * quiet. VCVTNEPS2BF16 does that in one instruction but reads a denormal
 * as zero: a vector with a denormal (rare) is rounded by integer
 * arithmetic instead, with the same bits otherwise. */
FB_BF16_TARGET static inline __m256i round_bf16(__m512i u)
{
    const __m512 x = _mm512_castsi512_ps(u);
    const __m512 mag = _mm512_abs_ps(x);
    const __mmask16 denormal =
        _mm512_cmp_ps_mask(mag, _mm512_set1_ps(0x1p-126f), _CMP_LT_OQ) &
        _mm512_cmp_ps_mask(mag, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    if (!denormal)
        return (__m256i)_mm512_cvtneps_pbh(x);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i half = _mm512_set1_epi32(0x7fff);
    const __m512i top = _mm512_srli_epi32(u, 16);
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, half),
                         _mm512_and_si512(top, one)), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
        _mm512_set1_epi32(0x7f800000));
    const __m512i quiet = _mm512_or_si512(top, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
}

FB_BF16_TARGET void fb_bf16_from_f32(const float *src, uint16_t *dst,
                                     int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            round_bf16(_mm512_loadu_si512(src + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm256_mask_storeu_epi16(dst + i, m,
                                 round_bf16(_mm512_maskz_loadu_epi32(m, src + i)));
    }
}

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512bf16")))
void bias_act_store_loop(const float *x, int64_t ldx, const float *bias,
                         const float *bcol, int64_t n, int64_t cols,
                         fb_activation act, uint16_t *dst, int64_t ldd)
{
    for (int64_t j = 0; j < cols; j++) {
        const __m512 bv = _mm512_set1_ps(bcol != NULL ? bcol[j] : 0.0f);
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 live = fb_zmm_live(n, i);
            _mm256_mask_storeu_epi16(
                dst + j * ldd + i, live,
                round_bf16(_mm512_castps_si512(fb_zmm_bias_act_at(
                    x + j * ldx, bias, bv, i, live, act))));
        }
    }
}

FB_BF16_TARGET void fb_bf16_bias_act_store(const float *x, int64_t ldx,
                                           const float *bias,
                                           const float *bcol, int64_t n,
                                           int64_t cols, fb_activation act,
                                           uint16_t *dst, int64_t ldd)
{
    if (bias == NULL && bcol == NULL && act == FB_ACT_NONE) {
        for (int64_t j = 0; j < cols; j++)
            fb_bf16_from_f32(x + j * ldx, dst + j * ldd, n);
        return;
    }
#define CALL(A) bias_act_store_loop(x, ldx, bias, bcol, n, cols, A, dst, ldd)
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512bf16")))
__m256i gate_store_loop(const float *g, const float *u, int64_t ldgu,
                        const float *sg, const float *su,
                        const float *bg, const float *bu, int64_t n,
                        int64_t rows, fb_activation act, uint16_t *h,
                        int64_t ldh, __m256i emin)
{
    for (int64_t t = 0; t < rows; t++)
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 live = fb_zmm_live(n, i);
            const __m256i r = round_bf16(_mm512_castps_si512(fb_zmm_gate_at(
                g + t * ldgu, u + t * ldgu, sg, su, bg, bu, i, live, act)));
            _mm256_mask_storeu_epi16(h + t * ldh + i, live, r);
            /* The smallest exponent field of the non-zero live results. */
            const __mmask16 nz = _mm256_mask_test_epi16_mask(
                live, r, _mm256_set1_epi16(0x7fff));
            const __m256i field = _mm256_and_si256(
                _mm256_srli_epi16(r, 7), _mm256_set1_epi16(0xff));
            emin = _mm256_mask_min_epu16(emin, nz, emin, field);
        }
    return emin;
}

FB_BF16_TARGET int fb_bf16_gate_store(const float *g, const float *u,
                                      int64_t ldgu, const float *sg,
                                      const float *su, const float *bg,
                                      const float *bu, int64_t n,
                                      int64_t npad, int64_t rows,
                                      fb_activation act, uint16_t *h,
                                      int64_t ldh)
{
    /* fb_cpu_gate reads one missing bias of two as zeros. */
    static const float zeros[16] = {0};
    __m256i emin = _mm256_set1_epi16(255);
    if ((bg == NULL) != (bu == NULL)) {
        for (int64_t i = 0; i < n; i += 16) {
            const int64_t c = n - i < 16 ? n - i : 16;
            int e = fb_bf16_gate_store(
                g + i, u + i, ldgu, sg ? sg + i : NULL, su ? su + i : NULL,
                bg ? bg + i : zeros, bu ? bu + i : zeros, c, c, rows, act,
                h + i, ldh);
            emin = _mm256_min_epu16(emin, _mm256_set1_epi16((short)e));
        }
    } else {
#define CALL(A)                                                              \
    emin = gate_store_loop(g, u, ldgu, sg, su, bg, bu, n, rows, A, h, ldh,   \
                           emin)
        FB_FOR_EACH_ACT(act, CALL)
#undef CALL
    }
    if (npad > n)
        for (int64_t t = 0; t < rows; t++)
            memset(h + t * ldh + n, 0, (size_t)(npad - n) * sizeof *h);
    uint16_t lanes[16];
    _mm256_storeu_si256((__m256i *)lanes, emin);
    int e = 255;
    for (int i = 0; i < 16; i++)
        e = lanes[i] < e ? lanes[i] : e;
    return e;
}

#else /* not x86-64: no engine is available, nothing calls these */

int fb_bf16_pack_a(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst)
{
    (void)e, (void)x, (void)rows, (void)k, (void)q0, (void)q1, (void)dst;
    return 0;
}

int fb_bf16_pack_b(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst)
{
    (void)e, (void)x, (void)rows, (void)k, (void)q0, (void)q1, (void)dst;
    return 0;
}

int fb_bf16_pack_a_e4m3(const fb_bf16_engine *e, const uint8_t *w,
                        int64_t ldw, int64_t rows, int64_t k, int64_t q0,
                        int64_t q1, uint16_t *dst)
{
    (void)e, (void)w, (void)ldw, (void)rows, (void)k, (void)q0, (void)q1;
    (void)dst;
    return 0;
}

static void block_32x12(const uint16_t *a, int64_t astride, int64_t na,
                        const uint16_t *b, int64_t bstride, int64_t nb,
                        int64_t np, float alpha, int accumulate, float *acc,
                        int64_t ldacc)
{
    (void)a, (void)astride, (void)na, (void)b, (void)bstride, (void)nb;
    (void)np, (void)alpha, (void)accumulate, (void)acc, (void)ldacc;
}

void fb_bf16_from_f32(const float *src, uint16_t *dst, int64_t n)
{
    (void)src, (void)dst, (void)n;
}

void fb_bf16_bias_act_store(const float *x, int64_t ldx, const float *bias,
                            const float *bcol, int64_t n, int64_t cols,
                            fb_activation act, uint16_t *dst, int64_t ldd)
{
    (void)x, (void)ldx, (void)bias, (void)bcol, (void)n, (void)cols;
    (void)act, (void)dst, (void)ldd;
}

int fb_bf16_gate_store(const float *g, const float *u, int64_t ldgu,
                       const float *sg, const float *su, const float *bg,
                       const float *bu, int64_t n, int64_t npad,
                       int64_t rows, fb_activation act, uint16_t *h,
                       int64_t ldh)
{
    (void)g, (void)u, (void)ldgu, (void)sg, (void)su, (void)bg, (void)bu;
    (void)n, (void)npad;
    (void)rows, (void)act, (void)h, (void)ldh;
    return 255;
}

#endif

const fb_bf16_engine fb_bf16_avx512 = {
    "cpu/bf16-avx512bf16", FB_BF16_MR, FB_BF16_NR, 1, 0,
    fb_cpu_bf16_available, block_32x12, NULL};
