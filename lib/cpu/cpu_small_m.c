/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m.c -- the decode GEMM: few rows of x against many rows of w.
 *
 * Both operands are contiguous along k, so the kernel vectorises along k
 * and reduces across lanes once per output. What limits it is where the
 * operands come from, not the arithmetic:
 *
 *  - A register block is 6 rows of w by 4 rows of x: 24 AVX-512
 *    accumulators, 6 w vectors, 1 x vector (31 of 32 registers). One step
 *    loads 6 w vectors and 4 x vectors for 24 FMAs.
 *  - k is cut into chunks of 2 KiB of each w row (fp32; 16-bit weights
 *    take longer ones, see CHUNK_BYTES). For one block of 6 w rows
 *    and one chunk, every group of 4 x rows passes over the chunk: the 12 KiB
 *    of w stay in L1 for all groups, and x (at most 32 rows, 512 KiB at
 *    k = 4096) comes from L2, one line per 6 FMAs. The accumulators of the
 *    groups not in registers wait in a 12 KiB buffer (L1) between chunks.
 *    Without the chunks, 3 rows of w at k = 4096 (48 KiB) already fill L1
 *    and every group after the first re-reads w from L2.
 *  - While the groups work on one chunk, they prefetch the next one (the
 *    same rows further along k, or the first chunk of the next 6 rows),
 *    each group a share of its rows, so that memory is busy all the time
 *    and not only while the first group touches new lines.
 *  - fp16 and bf16 weights are widened in registers (vcvtph2ps; bf16 is the
 *    high half of an fp32), so they cost half the bytes and no panel.
 *  - bf16 x against bf16 w may run on VDPBF16PS instead (a 5 x 4 block:
 *    two products per lane per instruction, twice the FMA rate, which the
 *    FMA form needs from 16 tokens on). It also keeps the smallest |w|
 *    it streamed, so the caller can tell whether a flush-to-zero could
 *    have happened (fb_cpu_small_m_dp_nt).
 *  - Callers give x in a panel whose rows are not 4 KiB apart
 *    (fb_cpu_small_m_panel_ld): w rows at k = 4096 all share L1 sets,
 *    and x rows there too would crowd them.
 *
 * The register loops must unroll completely (GCC unroll pragmas, constant
 * block shapes at the call sites), or the accumulators live on the stack.
 */
#include <string.h>
#include "cpu_small_m.h"
#include "cpu_bf16_gemm.h"
#include "cpu_bf16_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FB_SMALL_M_AVX512 1
/* One target for every copy: the VDPBF16PS ones need avx512bf16, and the
 * others emit no instruction of it (they run where it is absent). */
#define TARGET                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

#define WR 6                /* rows of w per register block */
#define XR 4                /* rows of x per register block */
#define GROUPS (FB_SMALL_M_MAX / XR)
/* Where the prefetch of the next chunk lands: L1 for fp32 weights, L2 for
 * 16-bit ones. On a 32 KiB L1 (Zen 4) the next chunk prefetched into L1
 * evicts the current chunk's w and the x rows the later groups still
 * need; the rows are also a multiple of 4 KiB apart, so both chunks crowd
 * the same L1 sets. Into L2 the lines are still there long before use,
 * and L1 keeps the working set; fp32 weights lose with it
 * (docs/cpu-kernels.md). */
#ifndef PF_HINT_F32
#define PF_HINT_F32 _MM_HINT_T0
#endif
#ifndef PF_HINT_16
#define PF_HINT_16 _MM_HINT_T1
#endif
/* Bytes of each w row per k chunk. fp32 weights: 2 KiB (12 KiB of w in
 * L1, the layout described above), the last chunk ragged. 16-bit weights:
 * longer chunks, at most CHUNK_BYTES_16 (FMA form) or CHUNK_BYTES_DP
 * (VDPBF16PS), k cut into equal ones of whole lines. Their prefetch lands
 * in L2 (PF_HINT_16), which keeps up with the groups re-reading w from
 * there, so each chunk boundary costs more than L1 residency saves, and
 * a short last chunk (4096 + 1408 values at k = 5504) costs the most
 * (docs/cpu-kernels.md). */
#ifndef CHUNK_BYTES
#define CHUNK_BYTES 2048
#endif
#ifndef CHUNK_BYTES_16
#define CHUNK_BYTES_16 8192
#endif
#ifndef CHUNK_BYTES_DP
#define CHUNK_BYTES_DP 16384
#endif

int fb_cpu_small_m_available(void)
{
#if defined(FB_SMALL_M_AVX512)
    /* A benign race between first callers, made well defined. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}

#if defined(FB_SMALL_M_AVX512)
/* Operand types, as template-like constants: fp32 x against fp32, fp16 or
 * bf16 w (widened in registers, FMA); or bf16 x against bf16 w on
 * VDPBF16PS (two products per lane per instruction). */
enum { W_F32, W_F16, W_BF16, W_DP };

/* Rows of w per register block: 6, or 5 on VDPBF16PS, whose block also
 * holds the running minimum of |w| and two constants (see step). */
#define WR_DP 5

/* 16 elements of a w row from element p on, widened to fp32; the masked
 * form reads only the lanes in mk and zeroes the rest. */
TARGET __attribute__((always_inline)) static inline __m512
load_w(const int wt, const char *row, int64_t p)
{
    if (wt == W_F32)
        return _mm512_loadu_ps((const float *)row + p);
    const __m256i h = _mm256_loadu_si256((const __m256i *)(row + 2 * p));
    if (wt == W_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

TARGET __attribute__((always_inline)) static inline __m512
load_w_masked(const int wt, const char *row, int64_t p, __mmask16 mk)
{
    if (wt == W_F32)
        return _mm512_maskz_loadu_ps(mk, (const float *)row + p);
    const __m256i h = _mm256_maskz_loadu_epi16(mk, row + 2 * p);
    if (wt == W_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* One step of 16 k values (32 on VDPBF16PS) from element p on:
 * acc[a][b] += w row a . x row b. The masked form covers the last
 * values of k (mask bits past k are zero: both operands read as 0).
 * With check, the w values also lower *wmin: the minimum over them of
 * (magnitude bits - 1) as unsigned 16-bit, so that the smallest non-zero
 * |w| is wmin + 1 and zeros (0xffff) never count. */
TARGET __attribute__((always_inline)) static inline void
step(const int wt, const int wr, const int xr, const int check,
     const int masked, const char *w, int64_t ldwb, const char *x,
     int64_t ldxb, int64_t p, __mmask32 mk, __m512 acc[WR][XR],
     __m512i *wmin)
{
    if (wt == W_DP) {
        __m512i wv[WR];
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++) {
            const char *row = w + a * ldwb + 2 * p;
            wv[a] = masked ? _mm512_maskz_loadu_epi16(mk, row)
                           : _mm512_loadu_si512(row);
            if (check) {
                const __m512i mag = _mm512_and_si512(
                    wv[a], _mm512_set1_epi16(0x7fff));
                *wmin = _mm512_min_epu16(
                    *wmin, _mm512_sub_epi16(mag, _mm512_set1_epi16(1)));
            }
        }
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++) {
            const char *row = x + b * ldxb + 2 * p;
            const __m512i xv = masked ? _mm512_maskz_loadu_epi16(mk, row)
                                      : _mm512_loadu_si512(row);
            #pragma GCC unroll 8
            for (int a = 0; a < wr; a++)
                acc[a][b] = _mm512_dpbf16_ps(acc[a][b], (__m512bh)wv[a],
                                             (__m512bh)xv);
        }
        return;
    }
    __m512 wv[WR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        wv[a] = masked ? load_w_masked(wt, w + a * ldwb, p, (__mmask16)mk)
                       : load_w(wt, w + a * ldwb, p);
    #pragma GCC unroll 8
    for (int b = 0; b < xr; b++) {
        const float *row = (const float *)(x + b * ldxb) + p;
        const __m512 xv = masked ? _mm512_maskz_loadu_ps((__mmask16)mk, row)
                                 : _mm512_loadu_ps(row);
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
    }
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
    __m512 (*buf)[XR]; /* the group's WR x XR accumulators between chunks */
    float *out;        /* out(group row 0, block row 0) */
    int64_t ldo;
    int accumulate;
    __m512i *wmin;     /* VDPBF16PS: the running minimum of step(), kept
                          by one group per chunk (the others see the same
                          w); NULL in the others */
} chunk_job;

/* One group of xr rows of x over one chunk of a block of wr rows of w. */
TARGET __attribute__((always_inline)) static inline void
group_chunk(const int wt, const int wr, const int xr, const int check,
            const chunk_job *j)
{
    const int64_t es = wt == W_F32 ? 4 : 2;
    const int64_t sv = wt == W_DP ? 32 : 16; /* k values per step */
    const int64_t line = 64 / (sv * es);     /* steps per 64 bytes of w */
    const char *w = j->w, *x = j->x;
    const int64_t ldwb = j->ldwb, ldxb = j->ldxb, kc = j->kc;
    __m512 acc[WR][XR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++)
            acc[a][b] = j->first ? _mm512_setzero_ps() : j->buf[a][b];
    __m512i wmin = check ? *j->wmin : _mm512_setzero_si512();

    int64_t p = 0, s = 0;
    for (; p + sv * line <= kc; p += sv * line, s++) {
        if (j->pf && s < j->pf_lines)
            for (int r = 0; r < j->pf_rows; r++) {
                if (wt == W_F32)
                    _mm_prefetch(j->pf + r * ldwb + s * 64, PF_HINT_F32);
                else
                    _mm_prefetch(j->pf + r * ldwb + s * 64, PF_HINT_16);
            }
        step(wt, wr, xr, check, 0, w, ldwb, x, ldxb, p, 0, acc, &wmin);
        if (line == 2)
            step(wt, wr, xr, check, 0, w, ldwb, x, ldxb, p + sv, 0, acc,
                 &wmin);
    }
    for (; p + sv <= kc; p += sv)
        step(wt, wr, xr, check, 0, w, ldwb, x, ldxb, p, 0, acc, &wmin);
    if (p < kc)
        step(wt, wr, xr, check, 1, w, ldwb, x, ldxb, p,
             (__mmask32)((1u << (kc - p)) - 1u), acc, &wmin);
    if (check)
        *j->wmin = wmin;

    if (!j->last) {
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            #pragma GCC unroll 8
            for (int b = 0; b < xr; b++)
                j->buf[a][b] = acc[a][b];
        return;
    }
    #pragma GCC unroll 8
    for (int b = 0; b < xr; b++) {
        float *o = j->out + b * j->ldo;
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++) {
            const float sum = _mm512_reduce_add_ps(acc[a][b]);
            o[a] = j->accumulate ? o[a] + sum : sum;
        }
    }
}

/* Dispatch runtime (wt, wr, xr, check) to a constant-shaped copy of
 * group_chunk: wr is the type's block rows, or 1 for the last rows of w;
 * check only on VDPBF16PS. */
TARGET static void group_chunk_any(int wt, int wr, int xr,
                                           const chunk_job *j)
{
#define CASE_X(T_, W_, X_, C_)                                                 \
    case X_:                                                                   \
        group_chunk(T_, W_, X_, C_, j);                                        \
        return;
#define CASE_W(T_, W_, C_)                                                     \
    switch (xr) {                                                              \
        CASE_X(T_, W_, 1, C_) CASE_X(T_, W_, 2, C_) CASE_X(T_, W_, 3, C_)      \
        CASE_X(T_, W_, 4, C_)                                                  \
    }                                                                          \
    return;
#define CASE_T(T_)                                                             \
    case T_:                                                                   \
        if (wr == WR) {                                                        \
            CASE_W(T_, WR, 0)                                                  \
        }                                                                      \
        CASE_W(T_, 1, 0)
    const int check = j->wmin != NULL;
    switch (wt) {
        CASE_T(W_F32) CASE_T(W_F16) CASE_T(W_BF16)
    case W_DP:
        if (wr == WR_DP && check) {
            CASE_W(W_DP, WR_DP, 1)
        }
        if (wr == WR_DP) {
            CASE_W(W_DP, WR_DP, 0)
        }
        if (check) {
            CASE_W(W_DP, 1, 1)
        }
        CASE_W(W_DP, 1, 0)
    }
#undef CASE_T
#undef CASE_W
#undef CASE_X
}

/* The driver for every type; x rows are ldxb bytes apart. Returns the
 * minimum of step() over all of w (VDPBF16PS only; 0xffff otherwise). */
TARGET static unsigned small_m_nt(int wt, int64_t m, int64_t n,
                                           int64_t k, const char *x,
                                           int64_t ldxb, const char *w,
                                           int64_t ldw, int64_t rows_after,
                                           float *out, int64_t ldo,
                                           int accumulate)
{
    const int64_t es = wt == W_F32 ? 4 : 2, ldwb = ldw * es;
    const int64_t xes = wt == W_F32 || wt == W_DP ? es : 4;
    const int groups = (int)((m + XR - 1) / XR);
    const int wrb = wt == W_DP ? WR_DP : WR;
    __m512 buf[GROUPS][WR][XR];
    __m512i wmin = _mm512_set1_epi16(-1);
    /* Software prefetch pays everywhere except for fp32 weights and one
     * group (1-4 tokens), where there is so little arithmetic per line
     * that the prefetch instructions cost more than the hardware
     * prefetcher leaves to gain (docs/cpu-kernels.md). */
    const int prefetch = wt != W_F32 || groups > 1;
    /* Chunks keep w in L1 for the groups after the first, and pace the
     * prefetch; with one group and no prefetch they are only overhead. */
    int64_t kcmax = groups == 1 && !prefetch ? k
                    : wt == W_DP                ? CHUNK_BYTES_DP / es
                    : wt == W_F32               ? CHUNK_BYTES / es
                                                : CHUNK_BYTES_16 / es;
    if (kcmax < k && wt != W_F32) {
        kcmax = fb_cpu_small_m_even_chunk(k, kcmax, es);
    }
    for (int64_t j0 = 0; j0 < n;) {
        const int wr = n - j0 >= wrb ? wrb : 1;
        const char *wj = w + j0 * ldwb;
        for (int64_t p0 = 0; p0 < k; p0 += kcmax) {
            const int64_t kc = k - p0 < kcmax ? k - p0 : kcmax;
            const int last = p0 + kc == k;
            const fb_small_m_next nx =
                fb_cpu_small_m_next(wj, ldwb, es, p0, kc, k, wr,
                                    n - j0 - wr + rows_after, wrb, kcmax);
            for (int g = 0; g < groups; g++) {
                const int xr = m - g * XR < XR ? (int)(m - g * XR) : XR;
                /* Group g prefetches rows [r0, r1) of the next chunk. */
                const int r0 = (int)(g * nx.rows / groups);
                const int r1 = (int)((g + 1) * nx.rows / groups);
                chunk_job job = {
                    .w = wj + p0 * es,
                    .ldwb = ldwb,
                    .x = x + g * XR * ldxb + p0 * xes,
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
                    .wmin = wt == W_DP && g == 0 ? &wmin : NULL,
                };
                group_chunk_any(wt, wr, xr, &job);
            }
        }
        j0 += wr;
    }
    if (wt != W_DP)
        return 0xffff;
    /* The minimum across the 32 lanes. */
    __m256i h = _mm256_min_epu16(_mm512_castsi512_si256(wmin),
                                 _mm512_extracti64x4_epi64(wmin, 1));
    __m128i q = _mm_min_epu16(_mm256_castsi256_si128(h),
                              _mm256_extracti128_si256(h, 1));
    return (unsigned)_mm_extract_epi16(_mm_minpos_epu16(q), 0);
}
#endif

void fb_cpu_small_m_nt(fb_dtype wtype, int64_t m, int64_t n, int64_t k,
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
#if defined(FB_SMALL_M_AVX512)
    const int wt = wtype == FB_DTYPE_F32 ? W_F32
                   : wtype == FB_DTYPE_F16 ? W_F16 : W_BF16;
    small_m_nt(wt, m, n, k, (const char *)x, ldx * 4, (const char *)w, ldw,
               rows_after, out, ldo, accumulate);
#else
    (void)wtype, (void)m, (void)n, (void)x, (void)ldx, (void)w, (void)ldw;
    (void)rows_after, (void)out, (void)ldo, (void)accumulate;
#endif
}

int64_t fb_cpu_small_m_panel_ld(int64_t k, int64_t es)
{
    const int64_t line = 64 / es;
    return (k + line - 1) / line * line + 3 * line;
}

int fb_cpu_small_m_dp_available(void)
{
    return fb_cpu_small_m_available() && fb_cpu_bf16_available();
}

/* Exponent field (0..255) of the smallest non-zero magnitude among
 * magnitude-minus-one minima: 255 when every value was zero. */
static int min_field(unsigned min_mag_minus_1)
{
    return min_mag_minus_1 >= 0x7fff ? 255
                                     : (int)((min_mag_minus_1 + 1) >> 7);
}

int fb_cpu_bf16_min_field(const void *x, int64_t rows, int64_t cols,
                          int64_t ld)
{
    unsigned lo = 0xffff;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t p = 0; p < cols; p++) {
            const unsigned v =
                (unsigned)(((const uint16_t *)x)[i * ld + p] & 0x7fff) - 1u;
            if ((v & 0xffff) < lo)
                lo = v & 0xffff;
        }
    return min_field(lo);
}

int fb_cpu_small_m_dp_nt(int64_t m, int64_t n, int64_t k, const void *x,
                         int64_t ldx, int x_field, const void *w,
                         int64_t ldw, int64_t rows_after, float *out,
                         int64_t ldo)
{
#if defined(FB_SMALL_M_AVX512)
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            memset(out + i * ldo, 0, (size_t)n * sizeof(float));
        return 1;
    }
    const unsigned lo = small_m_nt(W_DP, m, n, k, (const char *)x, ldx * 2,
                                   (const char *)w, ldw, rows_after, out,
                                   ldo, 0);
    return fb_bf16_products_exact(x_field, min_field(lo));
#else
    (void)m, (void)n, (void)k, (void)x, (void)ldx, (void)x_field, (void)w;
    (void)ldw, (void)rows_after, (void)out, (void)ldo;
    return 0;
#endif
}
