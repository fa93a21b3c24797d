/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m_avx2.c -- the decode GEMM of cpu_small_m.c on AVX2 + FMA +
 * F16C, for CPUs without AVX-512: the same contract (fb_cpu_small_m_nt),
 * the same layout of the work, a block that fits 16 ymm registers.
 *
 *  - A register block is WR = 3 rows of w by XR = 4 rows of x: 12
 *    accumulators, 3 w vectors and 1 x vector (all 16 registers). One step
 *    of 8 k values loads 3 w vectors and 4 x vectors for 12 FMAs.
 *  - fp16 weights are widened by vcvtph2ps, bf16 by a 16-bit left shift
 *    into fp32 (exact), in registers: w is read once, whatever m.
 *  - k is cut into chunks (at most CHUNK_BYTES of each w row) that every
 *    group of 4 x rows passes over in turn, the groups' accumulators
 *    waiting in a small buffer between chunks, so that the later groups
 *    find the block's chunk in cache.
 *  - While the groups work on one chunk they prefetch the next into L2
 *    (these rows further on, or the next block's first chunk), each group
 *    a share, so memory stays busy between the first group's touches.
 *  - Ragged k: the last step copies the remaining values of each row into
 *    a zeroed vector-sized buffer, so no load reaches past a row's end.
 *
 * The register loops must unroll completely (GCC unroll pragmas, constant
 * block shapes at the call sites), or the accumulators live on the stack.
 */
#include <string.h>
#include "cpu_features.h"
#include "cpu_small_m.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FB_SMALL_M_AVX2 1
#define TARGET __attribute__((target("avx2,fma,f16c")))
#endif

#define WR 3 /* rows of w per register block */
#define XR 4 /* rows of x per register block */
/* rows of w per block for one row of x: 6 accumulators, each w vector
 * used once, so more rows (more lines in flight) fit the registers */
#define WR1 6
#define GROUPS (FB_SMALL_M_MAX / XR)
/* Bytes of each w row per k chunk (at most; k is cut into equal chunks
 * of whole lines), whatever the weight type, and where the prefetch of
 * the next chunk lands: L2. Into L1 (32 KiB on the Zen measured) the next
 * chunk evicts the current one and the x rows the later groups still
 * need; shorter chunks (2 or 4 KiB) cost more at chunk boundaries than
 * L1 residency saved (docs/cpu-kernels.md). */
#ifndef CHUNK_BYTES
#define CHUNK_BYTES 8192
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T1
#endif

int fb_cpu_small_m_avx2_available(void)
{
#if defined(FB_SMALL_M_AVX2)
    return fb_cpu_has_avx2_fma_f16c();
#else
    return 0;
#endif
}

#if defined(FB_SMALL_M_AVX2)
enum { W_F32, W_F16, W_BF16 };

/* 8 elements of a w row from element p on, widened to fp32. */
TARGET __attribute__((always_inline)) static inline __m256
load_w(const int wt, const char *row, int64_t p)
{
    if (wt == W_F32)
        return _mm256_loadu_ps((const float *)row + p);
    const __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * p));
    if (wt == W_F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The same for the last rem < 8 elements of the row, the rest 0: the
 * values go through a buffer, so nothing past them is read. */
TARGET __attribute__((always_inline)) static inline __m256
load_w_tail(const int wt, const char *row, int64_t p, int64_t rem)
{
    const int64_t es = wt == W_F32 ? 4 : 2;
    float t[8] __attribute__((aligned(32))) = {0};
    memcpy(t, row + p * es, (size_t)(rem * es));
    return load_w(wt, (const char *)t, 0);
}

TARGET __attribute__((always_inline)) static inline __m256
load_x_tail(const float *row, int64_t rem)
{
    float t[8] __attribute__((aligned(32))) = {0};
    memcpy(t, row, (size_t)rem * sizeof(float));
    return _mm256_load_ps(t);
}

/* One step of 8 k values from element p on: acc[a][b] += w row a . x row
 * b; with rem (1..7) the last values of the chunk only, the rest 0. */
TARGET __attribute__((always_inline)) static inline void
step(const int wt, const int wr, const int xr, const int tail,
     const char *w, int64_t ldwb, const char *x, int64_t ldxb, int64_t p,
     int64_t rem, __m256 acc[WR1][XR])
{
    __m256 wv[WR1];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++) {
        wv[a] = tail ? load_w_tail(wt, w + a * ldwb, p, rem)
                     : load_w(wt, w + a * ldwb, p);
        /* Keep fp32 w in a register: GCC otherwise folds the load into
         * each of the xr FMAs, xr loads of it per step where one does. */
        if (wt == W_F32)
            __asm__("" : "+x"(wv[a]));
    }
    #pragma GCC unroll 4
    for (int b = 0; b < xr; b++) {
        const float *row = (const float *)(x + b * ldxb) + p;
        const __m256 xv = tail ? load_x_tail(row, rem) : _mm256_loadu_ps(row);
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            acc[a][b] = _mm256_fmadd_ps(wv[a], xv, acc[a][b]);
    }
}

TARGET __attribute__((always_inline)) static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* What one group does with one chunk. */
typedef struct chunk_job {
    const char *w;     /* row 0 of the block, at the chunk's first k */
    int64_t ldwb;      /* bytes between w rows */
    const char *x;     /* row 0 of the group, at the chunk's first k */
    int64_t ldxb;      /* bytes between x rows */
    int64_t kc;        /* k values in the chunk */
    const char *pf;    /* first row of this group's share of the next
                          chunk, or NULL */
    int pf_rows;       /* rows in that share */
    int64_t pf_lines;  /* cache lines of each of those rows */
    int first, last;   /* first chunk (zero the sums), last (reduce) */
    __m256 (*buf)[XR]; /* the group's wr x xr accumulators between chunks */
    float *out;        /* out(group row 0, block row 0) */
    int64_t ldo;
    int accumulate;
} chunk_job;

/* One group of xr rows of x over one chunk of a block of wr rows of w. */
TARGET __attribute__((always_inline)) static inline void
group_chunk(const int wt, const int wr, const int xr, const chunk_job *j)
{
    const int64_t es = wt == W_F32 ? 4 : 2;
    const int64_t line = 64 / (8 * es); /* steps per 64 bytes of w */
    const char *w = j->w, *x = j->x;
    const int64_t ldwb = j->ldwb, ldxb = j->ldxb, kc = j->kc;
    __m256 acc[WR1][XR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        #pragma GCC unroll 4
        for (int b = 0; b < xr; b++)
            acc[a][b] = j->first ? _mm256_setzero_ps() : j->buf[a][b];

    int64_t p = 0, s = 0;
    for (; p + 8 * line <= kc; p += 8 * line, s++) {
        if (j->pf && s < j->pf_lines)
            for (int r = 0; r < j->pf_rows; r++)
                _mm_prefetch(j->pf + r * ldwb + s * 64, PF_HINT);
        #pragma GCC unroll 4
        for (int l = 0; l < line; l++)
            step(wt, wr, xr, 0, w, ldwb, x, ldxb, p + 8 * l, 0, acc);
    }
    for (; p + 8 <= kc; p += 8)
        step(wt, wr, xr, 0, w, ldwb, x, ldxb, p, 0, acc);
    if (p < kc)
        step(wt, wr, xr, 1, w, ldwb, x, ldxb, p, kc - p, acc);

    if (!j->last) {
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            #pragma GCC unroll 4
            for (int b = 0; b < xr; b++)
                j->buf[a][b] = acc[a][b];
        return;
    }
    #pragma GCC unroll 4
    for (int b = 0; b < xr; b++) {
        float *o = j->out + b * j->ldo;
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++) {
            const float sum = hsum(acc[a][b]);
            o[a] = j->accumulate ? o[a] + sum : sum;
        }
    }
}

/* Dispatch runtime (wt, wr, xr) to a constant-shaped copy of group_chunk:
 * wr is WR (WR1 with one row of x), or 1 for the last rows of w. */
TARGET static void group_chunk_any(int wt, int wr, int xr,
                                   const chunk_job *j)
{
#define CASE_X(T_, W_, X_)                                                     \
    case X_:                                                                   \
        group_chunk(T_, W_, X_, j);                                            \
        return;
#define CASE_W(T_, W_)                                                         \
    switch (xr) {                                                              \
        CASE_X(T_, W_, 1) CASE_X(T_, W_, 2) CASE_X(T_, W_, 3)                  \
        CASE_X(T_, W_, 4)                                                      \
    }                                                                          \
    return;
#define CASE_T(T_)                                                             \
    case T_:                                                                   \
        if (wr == WR1 && xr == 1) {                                            \
            group_chunk(T_, WR1, 1, j);                                        \
            return;                                                            \
        }                                                                      \
        if (wr == WR) {                                                        \
            CASE_W(T_, WR)                                                     \
        }                                                                      \
        CASE_W(T_, 1)
    switch (wt) {
        CASE_T(W_F32) CASE_T(W_F16) CASE_T(W_BF16)
    }
#undef CASE_T
#undef CASE_W
#undef CASE_X
}

TARGET static void small_m_nt(int wt, int64_t m, int64_t n, int64_t k,
                              const char *x, int64_t ldxb, const char *w,
                              int64_t ldw, int64_t rows_after, float *out,
                              int64_t ldo, int accumulate)
{
    const int64_t es = wt == W_F32 ? 4 : 2, ldwb = ldw * es;
    const int groups = (int)((m + XR - 1) / XR);
    __m256 buf[GROUPS][WR1][XR];
    /* One group of fp32 weights has too little arithmetic per line for
     * the prefetch instructions to pay (as in cpu_small_m.c). */
    const int prefetch = wt != W_F32 || groups > 1;
    int64_t kcmax = groups == 1 && !prefetch ? k : CHUNK_BYTES / es;
    if (kcmax < k) {
        kcmax = fb_cpu_small_m_even_chunk(k, kcmax, es);
    }
    const int wrmax = m == 1 ? WR1 : WR;
    for (int64_t j0 = 0; j0 < n;) {
        const int wr = n - j0 >= wrmax ? wrmax : n - j0 >= WR ? WR : 1;
        const char *wj = w + j0 * ldwb;
        for (int64_t p0 = 0; p0 < k; p0 += kcmax) {
            const int64_t kc = k - p0 < kcmax ? k - p0 : kcmax;
            const int last = p0 + kc == k;
            const fb_small_m_next nx =
                fb_cpu_small_m_next(wj, ldwb, es, p0, kc, k, wr,
                                    n - j0 - wr + rows_after, wrmax, kcmax);
            for (int g = 0; g < groups; g++) {
                const int xr = m - g * XR < XR ? (int)(m - g * XR) : XR;
                /* Group g prefetches rows [r0, r1) of the next chunk. */
                const int r0 = (int)(g * nx.rows / groups);
                const int r1 = (int)((g + 1) * nx.rows / groups);
                chunk_job job = {
                    .w = wj + p0 * es,
                    .ldwb = ldwb,
                    .x = x + g * XR * ldxb + p0 * 4,
                    .ldxb = ldxb,
                    .kc = kc,
                    .pf = r1 > r0 && prefetch ? nx.w + r0 * ldwb : NULL,
                    .pf_rows = r1 - r0,
                    .pf_lines = (nx.k * es + 63) / 64,
                    .first = p0 == 0,
                    .last = last,
                    .buf = buf[g],
                    .out = out + g * XR * ldo + j0,
                    .ldo = ldo,
                    .accumulate = accumulate,
                };
                group_chunk_any(wt, wr, xr, &job);
            }
        }
        j0 += wr;
    }
}
#endif

void fb_cpu_small_m_avx2_nt(fb_dtype wtype, int64_t m, int64_t n, int64_t k,
                            const float *x, int64_t ldx, const void *w,
                            int64_t ldw, int64_t rows_after, float *out,
                            int64_t ldo, int accumulate)
{
    if (k == 0) { /* nothing to add: a sum of no terms is 0 */
        if (!accumulate)
            for (int64_t i = 0; i < m; i++)
                memset(out + i * ldo, 0, (size_t)n * sizeof(float));
        return;
    }
#if defined(FB_SMALL_M_AVX2)
    const int wt = wtype == FB_DTYPE_F32 ? W_F32
                   : wtype == FB_DTYPE_F16 ? W_F16 : W_BF16;
    small_m_nt(wt, m, n, k, (const char *)x, ldx * 4, (const char *)w, ldw,
               rows_after, out, ldo, accumulate);
#else
    (void)wtype, (void)m, (void)n, (void)x, (void)ldx, (void)w, (void)ldw;
    (void)rows_after, (void)out, (void)ldo, (void)accumulate;
#endif
}
