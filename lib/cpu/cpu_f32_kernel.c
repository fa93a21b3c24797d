/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_kernel.c -- packing and the AVX-512F FMA register block (see
 * cpu_f32_kernel.h for the packed layout, cpu_f32_gemm.c for the plan).
 *
 * Everything that uses AVX-512 is compiled for it by function attributes,
 * so the rest of the library builds for the baseline and a CPU without
 * AVX-512F never reaches these functions (fb_cpu_f32_kernel_available).
 *
 * Packing, by how the operand runs in storage:
 *  - along k (a row of op(A) when transposed, a column of op(B) when not,
 *    nn.Linear's weights and inputs): 16 rows x 16 elements are loaded
 *    and transposed in registers (cpu_avx512_transpose.h), giving 16
 *    vectors of one l each.
 *  - across k: the panel's R rows of one l are contiguous already: two
 *    masked loads and stores per l.
 * Loads are masked at the edges, so nothing outside the operand is read,
 * and rows past the matrix are written as zeros.
 *
 * IEEE semantics: FMA with the default MXCSR keeps denormals, and NaN and
 * Inf go through the sums as in any fp32 GEMM, so unlike the bf16 kernel
 * nothing needs to decline.
 */
#include "config.h"
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "cpu_f32_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "cpu_avx512_transpose.h"
#include "cpu_e4m3_bf16.h"
#define FB_F32_X86 1
#define FB_F32_TARGET __attribute__((target("avx512f")))
#define FB_F32_E4M3_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

/* Most of k per pass over a block: A's chunk (32 x 384 floats = 48 KiB
 * per panel) stays in L2, B's (12 x 384 = 18 KiB) in L1: the bf16
 * kernel's bytes. */
#define KC 384

int fb_cpu_f32_kernel_available(void)
{
#if defined(FB_F32_X86)
    /* libgcc's CPU model also checks that the OS saves the ZMM state. */
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

#if defined(FB_F32_X86)

/* ---- packing ------------------------------------------------------------ */

/* One panel, rows running along k: rows [0, nrows) (nrows <= R may be
 * short: the rest are zeros), all of k; the r lanes of step l at
 * dst + l * stride (stride r, or more for a panel shared by operands).
 * stream: non-temporal stores, where each store is a whole aligned line
 * (32-row panels of their own, on a 64-byte boundary). */
FB_F32_TARGET static void pack_along_k(const float *src, int64_t ld,
                                       int64_t nrows, int64_t k, int r,
                                       int stride, float *dst, int stream)
{
    stream = stream && r == 32 && stride == 32 &&
             ((uintptr_t)dst & 63) == 0;
    for (int g = 0; g < r; g += 16) {
        const int width = r - g < 16 ? r - g : 16;
        const __mmask16 keep = (__mmask16)((1u << width) - 1u);
        const int64_t live = nrows - g < 0 ? 0 : nrows - g;
        for (int64_t l0 = 0; l0 < k; l0 += 16) {
            const int64_t e = k - l0; /* elements left in a row */
            const __mmask16 emask = e >= 16 ? (__mmask16)0xffffu
                                            : (__mmask16)((1u << e) - 1u);
            __m512i v[16];
            #pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                v[i] = i < live && i < width
                           ? _mm512_maskz_loadu_epi32(
                                 emask, src + (g + i) * ld + l0)
                           : _mm512_setzero_si512();
            fb_transpose16x16_epi32(v);
            const int64_t cols = e < 16 ? e : 16;
            float *out = dst + l0 * stride + g;
            if (stream)
                for (int64_t c = 0; c < cols; c++)
                    _mm512_stream_si512((void *)(out + c * stride), v[c]);
            else
                for (int64_t c = 0; c < cols; c++)
                    _mm512_mask_storeu_epi32(out + c * stride, keep, v[c]);
        }
    }
}

/* One panel, rows running across k: row i of l is src[i + l * ld]. */
FB_F32_TARGET static void pack_across_k(const float *src, int64_t ld,
                                        int64_t nrows, int64_t k, int r,
                                        int stride, float *dst)
{
    const int64_t live = nrows < r ? nrows : r;
    const int lo = live < 16 ? (int)live : 16;
    const int hi = live - 16 > 0 ? (int)(live - 16) : 0;
    const __mmask16 lmask = (__mmask16)((1u << lo) - 1u);
    const __mmask16 hmask = (__mmask16)((1u << hi) - 1u);
    const __mmask16 keep_lo = (__mmask16)((1u << (r < 16 ? r : 16)) - 1u);
    const __mmask16 keep_hi =
        (__mmask16)(r > 16 ? (1u << (r - 16)) - 1u : 0u);
    for (int64_t l = 0; l < k; l++) {
        const float *s = src + l * ld;
        float *out = dst + l * stride;
        _mm512_mask_storeu_ps(out, keep_lo, _mm512_maskz_loadu_ps(lmask, s));
        if (keep_hi)
            _mm512_mask_storeu_ps(out + 16, keep_hi,
                                  _mm512_maskz_loadu_ps(hmask, s + 16));
    }
}

FB_F32_TARGET static void pack_panels(const fb_f32_operand *x, int64_t rows,
                                      int64_t k, int r, int64_t q0,
                                      int64_t q1, float *dst, int stream)
{
    for (int64_t q = q0; q < q1; q++) {
        const int64_t i0 = q * r;
        const int64_t nrows = rows - i0 < r ? rows - i0 : r;
        float *out = dst + (q - q0) * fb_f32_panel_elems(k, r);
        if (x->k_contiguous)
            pack_along_k(x->base + i0 * x->ld, x->ld, nrows, k, r, r, out,
                         stream);
        else
            pack_across_k(x->base + i0, x->ld, nrows, k, r, r, out);
    }
    /* Non-temporal stores are weakly ordered: drain them before another
     * thread reads the panels. */
    if (stream)
        _mm_sfence();
}

void fb_f32_pack(const fb_f32_operand *x, int64_t rows, int64_t k, int r,
                 int64_t q0, int64_t q1, float *dst)
{
    pack_panels(x, rows, k, r, q0, q1, dst, 0);
}

void fb_f32_pack_streamed(const fb_f32_operand *x, int64_t rows, int64_t k,
                          int r, int64_t q0, int64_t q1, float *dst)
{
    pack_panels(x, rows, k, r, q0, q1, dst, 1);
}

void fb_f32_pack_lanes(const fb_f32_operand *x, int64_t rows, int64_t k,
                       int64_t i0, int lanes, int stride, float *dst)
{
    const int64_t nrows = rows - i0 < lanes ? rows - i0 : lanes;
    if (x->k_contiguous)
        pack_along_k(x->base + i0 * x->ld, x->ld, nrows, k, lanes, stride,
                     dst, 0);
    else
        pack_across_k(x->base + i0, x->ld, nrows, k, lanes, stride, dst);
}

/* fb_f32_pack_e4m3's panel: pack_along_k of e4m3 rows, each 16 bytes
 * widened exactly (e4m3 to bf16, then bf16 to fp32 by a shift). */
FB_F32_E4M3_TARGET static void pack_e4m3_along_k(const uint8_t *src,
                                                 int64_t ld, int64_t nrows,
                                                 int64_t k, float *dst)
{
    const int r = FB_F32_MR;
    for (int g = 0; g < r; g += 16) {
        const int64_t live = nrows - g < 0 ? 0 : nrows - g;
        for (int64_t l0 = 0; l0 < k; l0 += 16) {
            const int64_t e = k - l0;
            const __mmask32 emask = e >= 16 ? (__mmask32)0xffffu
                                            : (__mmask32)((1u << e) - 1u);
            __m512i v[16];
            #pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                if (i < live) {
                    const __m512i b =
                        fb_e4m3_bf16x32(src + (g + i) * ld + l0, emask);
                    v[i] = _mm512_slli_epi32(
                        _mm512_cvtepu16_epi32(_mm512_castsi512_si256(b)), 16);
                } else {
                    v[i] = _mm512_setzero_si512();
                }
            }
            fb_transpose16x16_epi32(v);
            const int64_t cols = e < 16 ? e : 16;
            float *out = dst + l0 * r + g;
            for (int64_t c = 0; c < cols; c++)
                _mm512_storeu_si512((void *)(out + c * r), v[c]);
        }
    }
}

int fb_f32_e4m3_pack_available(void)
{
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

void fb_f32_pack_e4m3(const uint8_t *w, int64_t ldw, int64_t rows, int64_t k,
                      int64_t q0, int64_t q1, float *dst)
{
    for (int64_t q = q0; q < q1; q++) {
        const int64_t i0 = q * FB_F32_MR;
        const int64_t nrows = rows - i0 < FB_F32_MR ? rows - i0 : FB_F32_MR;
        /* rows past the matrix are zeros: no offset is formed for them */
        pack_e4m3_along_k(nrows > 0 ? w + i0 * ldw : w, ldw, nrows, k,
                          dst + (q - q0) * fb_f32_panel_elems(k, FB_F32_MR));
    }
}

/* ---- the register block ------------------------------------------------- */

/* acc tile (32 x 12 at c, ldc) <- *scale * ((load ? tile : 0) + sum over
 * kc of a-panel x b-panel): per l, 2 vector loads, 12 broadcasts, 24 FMAs
 * on independent accumulators (enough to cover the FMA latency on two
 * pipes). The scale comes by address: passed by value it arrives in zmm0,
 * and GCC 12 then keeps it there through the loop and spills an A vector
 * to the stack instead (12 extra loads a step).
 *
 * Meanwhile the lines of pf (panels the block reads next) are prefetched,
 * spread evenly over the kc steps: a fresh panel comes from memory or L3,
 * and read at the kernel's pace (A: 128 bytes every 12 cycles, about 40
 * GB/s) it stalls every step; spread over all the calls that come before
 * it is needed, it is a few GB/s. */
typedef struct prefetch_plan {
    const char *a;   /* A lines */
    int64_t a_lines;
    const char *b;   /* then B lines */
    int64_t b_lines;
    const float *c;  /* the next call's accumulator tile (ldc), or NULL */
} prefetch_plan;

FB_F32_TARGET static void kernel_32x12(int64_t kc, const float *a,
                                       const float *b, float *c, int64_t ldc,
                                       int load, const float *scale,
                                       prefetch_plan pf)
{
    __m512 acc0[FB_F32_NR], acc1[FB_F32_NR];
    #pragma GCC unroll 12
    for (int j = 0; j < FB_F32_NR; j++) {
        acc0[j] = load ? _mm512_loadu_ps(c + j * ldc) : _mm512_setzero_ps();
        acc1[j] = load ? _mm512_loadu_ps(c + j * ldc + 16)
                       : _mm512_setzero_ps();
    }
    /* The next tile's accumulators, when they come from beyond L2 (the
     * MLP's Y for a large n): 24 lines, each needed at once at the start
     * of the next call. */
    if (pf.c != NULL) {
        #pragma GCC unroll 12
        for (int j = 0; j < FB_F32_NR; j++) {
            _mm_prefetch((const char *)(pf.c + j * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf.c + j * ldc + 16), _MM_HINT_T0);
        }
    }
    /* Two lines every `every` steps, A's first. */
    const int64_t lines = pf.a_lines + pf.b_lines;
    int64_t every = lines > 0 ? 2 * kc / lines : kc + 1;
    every = every < 1 ? 1 : every;
    /* (No arithmetic on a NULL pointer: UBSan flags even + 0.) */
    const char *pf_a_end = pf.a != NULL ? pf.a + pf.a_lines * 64 : NULL;
    const char *pf_b_end = pf.b != NULL ? pf.b + pf.b_lines * 64 : NULL;
    int64_t countdown = every;
    for (int64_t l = 0; l < kc; l++) {
        const __m512 a0 = _mm512_loadu_ps(a);
        const __m512 a1 = _mm512_loadu_ps(a + 16);
        if (--countdown == 0) {
            countdown = every;
            if (pf.a < pf_a_end) {
                _mm_prefetch(pf.a, _MM_HINT_T0);
                _mm_prefetch(pf.a + 64, _MM_HINT_T0);
                pf.a += 128;
            } else if (pf.b < pf_b_end) {
                _mm_prefetch(pf.b, _MM_HINT_T0);
                _mm_prefetch(pf.b + 64, _MM_HINT_T0);
                pf.b += 128;
            }
        }
        #pragma GCC unroll 12
        for (int j = 0; j < FB_F32_NR; j++) {
            const __m512 bj = _mm512_set1_ps(b[j]);
            acc0[j] = _mm512_fmadd_ps(a0, bj, acc0[j]);
            acc1[j] = _mm512_fmadd_ps(a1, bj, acc1[j]);
        }
        a += FB_F32_MR;
        b += FB_F32_NR;
    }
    const __m512 s = _mm512_set1_ps(*scale);
    #pragma GCC unroll 12
    for (int j = 0; j < FB_F32_NR; j++) {
        _mm512_storeu_ps(c + j * ldc, _mm512_mul_ps(acc0[j], s));
        _mm512_storeu_ps(c + j * ldc + 16, _mm512_mul_ps(acc1[j], s));
    }
}

void fb_f32_block_ordered(const float *a, int64_t astride, int64_t na,
                          const float *b, int64_t bstride, int64_t nb,
                          int64_t k, float alpha, int accumulate, float *acc,
                          int64_t ldacc, int a_outer)
{
    /* Equal chunks of at most KC: no short last chunk. */
    const int64_t nchunks = (k + KC - 1) / KC;
    const int64_t kc = (k + nchunks - 1) / nchunks;
    const float one = 1.0f;
    for (int64_t l0 = 0; l0 < k; l0 += kc) {
        const int64_t lc = k - l0 < kc ? k - l0 : kc;
        const int last = l0 + lc == k;
        const int load = accumulate || l0 > 0;
        const float *scale = last ? &alpha : &one;
        /* The next chunk of each panel, in nb parts (one per call on that
         * panel); none after the last. */
        const int64_t next_lc = last ? 0 : (k - l0 - lc < kc ? k - l0 - lc
                                                             : kc);
        if (a_outer)
            for (int64_t ia = 0; ia < na; ia++) {
                const float *ai = a + ia * astride + l0 * FB_F32_MR;
                float *ci = acc + ia * FB_F32_MR;
                /* Prefetch: this chunk of the next panel, or the next
                 * chunk of the first. */
                const int has_next = ia + 1 < na || !last;
                const float *an = ia + 1 < na ? ai + astride
                                              : a + (l0 + lc) * FB_F32_MR;
                const int64_t lines =
                    has_next ? ((ia + 1 < na ? lc : next_lc) * 2 + nb - 1) /
                                   nb
                             : 0;
                for (int64_t jb = 0; jb < nb; jb++) {
                    const float *cn = jb + 1 < nb
                                          ? ci + (jb + 1) * FB_F32_NR * ldacc
                                      : ia + 1 < na ? ci + FB_F32_MR
                                                    : NULL;
                    const prefetch_plan pf = {
                        (const char *)an + jb * lines * 64, lines, NULL, 0,
                        load ? cn : NULL};
                    kernel_32x12(lc, ai, b + jb * bstride + l0 * FB_F32_NR,
                                 ci + jb * FB_F32_NR * ldacc, ldacc, load,
                                 scale, pf);
                }
            }
        else
            for (int64_t jb = 0; jb < nb; jb++) {
                const float *bj = b + jb * bstride + l0 * FB_F32_NR;
                float *cj = acc + jb * FB_F32_NR * ldacc;
                const int64_t lines = (next_lc * 2 + nb - 1) / nb;
                /* And the next B panel (this chunk), or the first of the
                 * next chunk, in na parts: B comes from L3. */
                const float *bn = jb + 1 < nb ? bj + bstride
                                              : b + (l0 + lc) * FB_F32_NR;
                const int64_t bn_lines =
                    jb + 1 < nb || !last
                        ? ((jb + 1 < nb ? lc : next_lc) * FB_F32_NR / 16 +
                           na - 1) / na
                        : 0;
                for (int64_t ia = 0; ia < na; ia++) {
                    const float *ai = a + ia * astride + l0 * FB_F32_MR;
                    const prefetch_plan pf = {
                        (const char *)(ai + lc * FB_F32_MR) + jb * lines * 64,
                        lines, (const char *)bn + ia * bn_lines * 64,
                        bn_lines, NULL};
                    kernel_32x12(lc, ai, bj, cj + ia * FB_F32_MR, ldacc,
                                 load, scale, pf);
                }
            }
    }
}

FB_F32_TARGET void fb_f32_axpy(int64_t n, float a, const float *x, float *y)
{
    const __m512 av = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i),
                                                _mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(
            y + i, m,
            _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
                            _mm512_maskz_loadu_ps(m, y + i)));
    }
}

#else /* not x86-64: fb_cpu_f32_kernel_available() is 0 */

void fb_f32_pack(const fb_f32_operand *x, int64_t rows, int64_t k, int r,
                 int64_t q0, int64_t q1, float *dst)
{
    (void)x, (void)rows, (void)k, (void)r, (void)q0, (void)q1, (void)dst;
}

void fb_f32_pack_streamed(const fb_f32_operand *x, int64_t rows, int64_t k,
                          int r, int64_t q0, int64_t q1, float *dst)
{
    (void)x, (void)rows, (void)k, (void)r, (void)q0, (void)q1, (void)dst;
}

int fb_f32_e4m3_pack_available(void)
{
    return 0;
}

void fb_f32_pack_e4m3(const uint8_t *w, int64_t ldw, int64_t rows, int64_t k,
                      int64_t q0, int64_t q1, float *dst)
{
    (void)w, (void)ldw, (void)rows, (void)k, (void)q0, (void)q1, (void)dst;
}

void fb_f32_pack_lanes(const fb_f32_operand *x, int64_t rows, int64_t k,
                       int64_t i0, int lanes, int stride, float *dst)
{
    (void)x, (void)rows, (void)k, (void)i0, (void)lanes, (void)stride;
    (void)dst;
}

void fb_f32_block_ordered(const float *a, int64_t astride, int64_t na,
                          const float *b, int64_t bstride, int64_t nb,
                          int64_t k, float alpha, int accumulate, float *acc,
                          int64_t ldacc, int a_outer)
{
    (void)a, (void)astride, (void)na, (void)b, (void)bstride, (void)nb;
    (void)k, (void)alpha, (void)accumulate, (void)acc, (void)ldacc;
    (void)a_outer;
}

void fb_f32_axpy(int64_t n, float a, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

#endif

int fb_f32_pack_streams(size_t bytes)
{
    /* Below 16 MiB no last-level cache this code meets is smaller. */
    if (bytes < ((size_t)16 << 20))
        return 0;
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (llc <= 0)
        llc = 32L << 20; /* unknown: a server CCD's 32 MiB */
    return bytes > (size_t)llc;
}

void fb_f32_block(const float *a, int64_t astride, int64_t na,
                  const float *b, int64_t bstride, int64_t nb, int64_t k,
                  float alpha, int accumulate, float *acc, int64_t ldacc)
{
    fb_f32_block_ordered(a, astride, na, b, bstride, nb, k, alpha,
                         accumulate, acc, ldacc, 0);
}
