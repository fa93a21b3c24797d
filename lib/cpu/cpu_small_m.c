/*
 * cpu_small_m.c -- the decode GEMM: few rows of x against many rows of w.
 *
 * Both operands are contiguous along k, so the kernel vectorises along k:
 * a register block of 3 rows of w by up to 8 rows of x holds 24 AVX-512
 * accumulators (16 partial sums each); each step loads 16 k-values of the
 * 3 w rows and of each x row and issues 24 FMAs, 0.46 loads per FMA. The
 * three w rows (3 k floats) stay in L1/L2 while every group of x rows passes
 * over them, so w is read from memory once; x (at most 32 k floats) stays
 * in L2 throughout. Accumulators are reduced across lanes once per block.
 * The register loops must unroll completely (GCC unroll pragmas), or the
 * accumulators live on the stack.
 */
#include <string.h>
#include "cpu_small_m.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FB_SMALL_M_AVX512 1
#endif

#define WR 3 /* rows of w per register block */
#define XR 8 /* rows of x per register block */

int fb_cpu_small_m_available(void)
{
#if defined(FB_SMALL_M_AVX512)
    /* A benign race between first callers, made well defined. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") != 0;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}

#if defined(FB_SMALL_M_AVX512)
/* One register block: wr <= WR rows of w, xr <= XR rows of x; sums[a][b]
 * receives the dot product of w row a and x row b. The row counts are
 * template-like constants at the call sites so that the loops unroll. */
__attribute__((target("avx512f"), always_inline)) static inline void
block(int wr, int xr, int64_t k, const float *w, int64_t ldw, const float *x,
      int64_t ldx, float sums[WR][XR])
{
    __m512 acc[WR][XR];
    #pragma GCC unroll 8
    for (int a = 0; a < WR; a++)
        #pragma GCC unroll 8
        for (int b = 0; b < XR; b++)
            acc[a][b] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512 wv[WR];
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            wv[a] = _mm512_loadu_ps(w + a * ldw + p);
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++) {
            __m512 xv = _mm512_loadu_ps(x + b * ldx + p);
            #pragma GCC unroll 8
            for (int a = 0; a < wr; a++)
                acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
        }
    }
    if (p < k) {
        __mmask16 mask = (__mmask16)((1u << (k - p)) - 1u);
        __m512 wv[WR];
        #pragma GCC unroll 8
        for (int a = 0; a < wr; a++)
            wv[a] = _mm512_maskz_loadu_ps(mask, w + a * ldw + p);
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++) {
            __m512 xv = _mm512_maskz_loadu_ps(mask, x + b * ldx + p);
            #pragma GCC unroll 8
            for (int a = 0; a < wr; a++)
                acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
        }
    }
    #pragma GCC unroll 8
    for (int a = 0; a < wr; a++)
        #pragma GCC unroll 8
        for (int b = 0; b < xr; b++)
            sums[a][b] = _mm512_reduce_add_ps(acc[a][b]);
}

/* Dispatch a runtime (wr, xr) to a constant-shaped copy of block(). */
__attribute__((target("avx512f"))) static void
block_any(int wr, int xr, int64_t k, const float *w, int64_t ldw,
          const float *x, int64_t ldx, float sums[WR][XR])
{
#define CASE_X(W_, X_)                                                         \
    case X_:                                                                   \
        block(W_, X_, k, w, ldw, x, ldx, sums);                                \
        return;
#define CASE_W(W_)                                                             \
    case W_:                                                                   \
        switch (xr) {                                                          \
            CASE_X(W_, 1) CASE_X(W_, 2) CASE_X(W_, 3) CASE_X(W_, 4)            \
            CASE_X(W_, 5) CASE_X(W_, 6) CASE_X(W_, 7) CASE_X(W_, 8)            \
        }                                                                      \
        return;
    switch (wr) {
        CASE_W(1) CASE_W(2) CASE_W(3)
    }
#undef CASE_W
#undef CASE_X
}
#endif

void fb_cpu_small_m_nt(int64_t m, int64_t n, int64_t k, const float *x,
                       int64_t ldx, const float *w, int64_t ldw, float *out,
                       int64_t ldo, int accumulate)
{
#if defined(FB_SMALL_M_AVX512)
    for (int64_t j = 0; j < n; j += WR) {
        const int wr = n - j < WR ? (int)(n - j) : WR;
        for (int64_t i = 0; i < m; i += XR) {
            const int xr = m - i < XR ? (int)(m - i) : XR;
            float sums[WR][XR];
            block_any(wr, xr, k, w + j * ldw, ldw, x + i * ldx, ldx, sums);
            for (int b = 0; b < xr; b++)
                for (int a = 0; a < wr; a++) {
                    float *o = out + (i + b) * ldo + j + a;
                    *o = accumulate ? *o + sums[a][b] : sums[a][b];
                }
        }
    }
#else
    (void)m, (void)n, (void)k, (void)x, (void)ldx, (void)w, (void)ldw;
    (void)out, (void)ldo, (void)accumulate;
#endif
}
