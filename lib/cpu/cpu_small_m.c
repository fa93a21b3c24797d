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
 *  - k is cut into chunks of 1 KiB of each w row. For one block of 6 w rows
 *    and one chunk, every group of 4 x rows passes over the chunk: the 6 KiB
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
 *
 * The register loops must unroll completely (GCC unroll pragmas, constant
 * block shapes at the call sites), or the accumulators live on the stack.
 */
#include <string.h>
#include "cpu_small_m.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FB_SMALL_M_AVX512 1
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

#define WR 6                /* rows of w per register block */
#define XR 4                /* rows of x per register block */
#define GROUPS (FB_SMALL_M_MAX / XR)
#ifndef PF_MIN_GROUPS
#define PF_MIN_GROUPS 2
#endif
#ifndef CHUNK_BYTES
#define CHUNK_BYTES 2048    /* of each w row per k chunk */
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
/* Weight element types, as template-like constants. */
enum { W_F32, W_F16, W_BF16 };

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

/* One step of 16 k values: acc[a][b] += w row a * x row b. */
TARGET __attribute__((always_inline)) static inline void
step(const int wt, const int wr, const int xr, const char *w, int64_t ldwb,
     const float *x, int64_t ldx, int64_t p, __m512 acc[WR][XR])
{
    __m512 wv[WR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        wv[a] = load_w(wt, w + a * ldwb, p);
    #pragma GCC unroll 8
    for (int b = 0; b < xr; b++) {
        const __m512 xv = _mm512_loadu_ps(x + b * ldx + p);
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
    }
}

TARGET __attribute__((always_inline)) static inline void
step_masked(const int wt, const int wr, const int xr, const char *w,
            int64_t ldwb, const float *x, int64_t ldx, int64_t p,
            __mmask16 mk, __m512 acc[WR][XR])
{
    __m512 wv[WR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        wv[a] = load_w_masked(wt, w + a * ldwb, p, mk);
    #pragma GCC unroll 8
    for (int b = 0; b < xr; b++) {
        const __m512 xv = _mm512_maskz_loadu_ps(mk, x + b * ldx + p);
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
    }
}

/* What one group does with one chunk. */
typedef struct chunk_job {
    const char *w;     /* row 0 of the block, at the chunk's first k */
    int64_t ldwb;      /* bytes between w rows */
    const float *x;    /* row 0 of the group, at the chunk's first k */
    int64_t ldx;
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
} chunk_job;

/* One group of xr rows of x over one chunk of a block of wr rows of w. */
TARGET __attribute__((always_inline)) static inline void
group_chunk(const int wt, const int wr, const int xr, const chunk_job *j)
{
    const int64_t es = wt == W_F32 ? 4 : 2;
    const int64_t line = 64 / (16 * es); /* 16-value steps per 64 bytes */
    const char *w = j->w;
    const float *x = j->x;
    const int64_t ldwb = j->ldwb, ldx = j->ldx, kc = j->kc;
    __m512 acc[WR][XR];
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++)
            acc[a][b] = j->first ? _mm512_setzero_ps() : j->buf[a][b];

    int64_t p = 0, s = 0;
    for (; p + 16 * line <= kc; p += 16 * line, s++) {
        if (j->pf && s < j->pf_lines)
            for (int r = 0; r < j->pf_rows; r++)
                _mm_prefetch(j->pf + r * ldwb + s * 64, _MM_HINT_T0);
        step(wt, wr, xr, w, ldwb, x, ldx, p, acc);
        if (line == 2)
            step(wt, wr, xr, w, ldwb, x, ldx, p + 16, acc);
    }
    for (; p + 16 <= kc; p += 16)
        step(wt, wr, xr, w, ldwb, x, ldx, p, acc);
    if (p < kc)
        step_masked(wt, wr, xr, w, ldwb, x, ldx, p,
                    (__mmask16)((1u << (kc - p)) - 1u), acc);

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

/* Dispatch runtime (wt, wr, xr) to a constant-shaped copy of group_chunk:
 * wr is WR, or 1 for the last rows of w. */
TARGET static void group_chunk_any(int wt, int wr, int xr, const chunk_job *j)
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
                              const float *x, int64_t ldx, const char *w,
                              int64_t ldw, int64_t rows_after, float *out,
                              int64_t ldo, int accumulate)
{
    const int64_t es = wt == W_F32 ? 4 : 2, ldwb = ldw * es;
    const int64_t kcmax = CHUNK_BYTES / es;
    const int groups = (int)((m + XR - 1) / XR);
    __m512 buf[GROUPS][WR][XR];
    for (int64_t j0 = 0; j0 < n;) {
        const int wr = n - j0 >= WR ? WR : 1;
        const char *wj = w + j0 * ldwb;
        for (int64_t p0 = 0; p0 < k; p0 += kcmax) {
            const int64_t kc = k - p0 < kcmax ? k - p0 : kcmax;
            const int last = p0 + kc == k;
            /* The next chunk: these rows further on, or the next rows. */
            const char *next;
            int64_t next_rows, next_k;
            if (!last) {
                next = wj + (p0 + kc) * es;
                next_rows = wr;
                next_k = k - p0 - kc;
            } else {
                next = wj + wr * ldwb;
                next_rows = n - j0 - wr + rows_after;
                next_k = k;
            }
            if (next_rows > WR)
                next_rows = WR;
            if (next_k > kcmax)
                next_k = kcmax;
            for (int g = 0; g < groups; g++) {
                const int xr = m - g * XR < XR ? (int)(m - g * XR) : XR;
                /* Group g prefetches rows [r0, r1) of the next chunk. */
                const int r0 = (int)(g * next_rows / groups);
                const int r1 = (int)((g + 1) * next_rows / groups);
                chunk_job job = {
                    .w = wj + p0 * es,
                    .ldwb = ldwb,
                    .x = x + g * XR * ldx + p0,
                    .ldx = ldx,
                    .kc = kc,
                    .pf = r1 > r0 && groups >= PF_MIN_GROUPS ? next + r0 * ldwb : NULL,
                    .pf_rows = r1 - r0,
                    .pf_lines = (next_k * es + 63) / 64,
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
    small_m_nt(wt, m, n, k, x, ldx, (const char *)w, ldw, rows_after, out,
               ldo, accumulate);
#else
    (void)wtype, (void)m, (void)n, (void)x, (void)ldx, (void)w, (void)ldw;
    (void)rows_after, (void)out, (void)ldo, (void)accumulate;
#endif
}
