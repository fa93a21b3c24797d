/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_small_m.h -- out (m x n) = x (m x k) w^T (w is n x k), m <= 32: the
 * decode shape, where OpenBLAS's packing does not pay and the weights
 * should stream through once at memory speed.
 */
#ifndef FB_CPU_SMALL_M_H
#define FB_CPU_SMALL_M_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "problem.h"

/* The most rows of x the kernel takes. */
#define FB_SMALL_M_MAX 32

/* Non-zero if this CPU runs the kernel (AVX-512F and BW); otherwise
 * callers use OpenBLAS. */
int fb_cpu_small_m_available(void);

/* out[i*ldo + j] = (accumulate ? out[i*ldo + j] : 0)
 *                  + sum_p x[i*ldx + p] w(j, p)
 * for i < m <= FB_SMALL_M_MAX, j < n, p < k, where w(j, p) is element
 * j*ldw + p of w, of type wtype (fp32, or fp16/bf16 widened exactly in
 * registers); x and out are fp32. Each element of w is read once.
 * rows_after: how many rows of w after row n - 1 exist (the same ldw);
 * the kernel may prefetch them (it never reads them), so that a caller
 * cutting a long w into pieces keeps memory busy across the cuts.
 * Single-threaded: callers split n. */
void fb_cpu_small_m_nt(fb_dtype wtype, int64_t m, int64_t n, int64_t k,
                       const float *x, int64_t ldx, const void *w,
                       int64_t ldw, int64_t rows_after, float *out,
                       int64_t ldo, int accumulate);

/* The same kernel on AVX2, FMA and F16C (cpu_small_m_avx2.c), for CPUs
 * without AVX-512: the same contract, summed in another order (fp32 FMA
 * all the same). Non-zero if this CPU runs it. */
int fb_cpu_small_m_avx2_available(void);
void fb_cpu_small_m_avx2_nt(fb_dtype wtype, int64_t m, int64_t n, int64_t k,
                            const float *x, int64_t ldx, const void *w,
                            int64_t ldw, int64_t rows_after, float *out,
                            int64_t ldo, int accumulate);

/* Either kernel, for the drivers that run both. */
typedef void (*fb_cpu_small_m_fn)(fb_dtype wtype, int64_t m, int64_t n,
                                  int64_t k, const float *x, int64_t ldx,
                                  const void *w, int64_t ldw,
                                  int64_t rows_after, float *out,
                                  int64_t ldo, int accumulate);

/* The row stride, in elements of es bytes, for a panel of x rows of k
 * values: whole cache lines plus three. Weight rows are often a multiple
 * of 4 KiB apart (k = 4096), so that all of them map to the same L1 sets;
 * x rows as far apart would crowd those sets too. */
int64_t fb_cpu_small_m_panel_ld(int64_t k, int64_t es);

/* The same kernel on VDPBF16PS for bf16 x and w: two products per lane
 * per instruction, twice the FMA rate, where the FMA form is
 * compute-bound (m >= 16 or so). Available where AVX512-BF16 is and
 * FUSEDBLAS_CPU_NO_BF16 is not 1 (fb_cpu_bf16_available). */
int fb_cpu_small_m_dp_available(void);

/* Rows of x from which VDPBF16PS pays: below, one or two groups of x rows
 * leave the FMA form memory-bound, and the VDPBF16PS form's minimum
 * tracking costs more than its arithmetic saves (docs/cpu-kernels.md). */
#define FB_SMALL_M_DP_MIN_ROWS 8

/* The smallest exponent field (0..255; 0: a denormal) among the non-zero
 * values of a rows x cols bf16 matrix (row stride ld); 255 if none. */
int fb_cpu_bf16_min_field(const void *x, int64_t rows, int64_t cols,
                          int64_t ld);

/* out[i*ldo + j] = sum_p x[i*ldx + p] w[j*ldw + p] (overwritten), x and w
 * bf16, fp32 accumulation, on VDPBF16PS. x_field: fb_cpu_bf16_min_field of
 * x. VDPBF16PS reads denormals as 0 and flushes denormal results; the
 * kernel finds w's smallest exponent as it streams w, and returns 0 when
 * that could have happened (fb_bf16_products_exact of the two fields):
 * then out holds no answer and the caller runs fb_cpu_small_m_nt. Returns
 * 1 when out is exact-equivalent to IEEE fp32 accumulation. */
int fb_cpu_small_m_dp_nt(int64_t m, int64_t n, int64_t k, const void *x,
                         int64_t ldx, int x_field, const void *w,
                         int64_t ldw, int64_t rows_after, float *out,
                         int64_t ldo);

/* Both kernels (cpu_small_m.c, cpu_small_m_avx2.c) walk each block of
 * weight rows in chunks of k; these say how. */

/* At most kcmax values a chunk, k cut into equal chunks of whole 64-byte
 * lines of w (es bytes a value; the last chunk takes the rest). */
static inline int64_t fb_cpu_small_m_even_chunk(int64_t k, int64_t kcmax,
                                                int64_t es)
{
    const int64_t chunks = (k + kcmax - 1) / kcmax, lv = 64 / es;
    return ((k + chunks - 1) / chunks + lv - 1) / lv * lv;
}

/* What to prefetch while the chunk [p0, p0 + kc) of the block of wr rows
 * at wj (ldwb bytes apart) runs: the same rows further along k, or after
 * the block's last chunk the first chunk of the rows that follow
 * (rows_next of them exist); at most max_rows rows and kcmax values. */
typedef struct fb_small_m_next {
    const char *w;
    int64_t rows, k;
} fb_small_m_next;

static inline fb_small_m_next
fb_cpu_small_m_next(const char *wj, int64_t ldwb, int64_t es, int64_t p0,
                    int64_t kc, int64_t k, int64_t wr, int64_t rows_next,
                    int64_t max_rows, int64_t kcmax)
{
    fb_small_m_next nx;
    if (p0 + kc < k) {
        nx.w = wj + (p0 + kc) * es;
        nx.rows = wr;
        nx.k = k - p0 - kc;
    } else {
        nx.w = wj + wr * ldwb;
        nx.rows = rows_next;
        nx.k = k;
    }
    if (nx.rows > max_rows)
        nx.rows = max_rows;
    if (nx.k > kcmax)
        nx.k = kcmax;
    return nx;
}

/* The same product on AMX (cpu_small_m_amx.c), bf16 x and w: w is read
 * in place as TDPBF16PS's row operand, x packed once per call by
 * fb_cpu_small_m_amx_pack (fb_cpu_small_m_amx_pack_bytes(m, k) bytes).
 * out[i*ldo + j] = sum_p x[i][p] w[j*ldw + p] (overwritten), i < m <=
 * FB_AMX_TOKEN_TILES * 16 (tile registers: five accumulators, the
 * weights' tile and two for x). Returns 0, like fb_cpu_small_m_dp_nt, when a product
 * could have flushed (out then holds no answer), 1 otherwise. Only where
 * fb_cpu_amx_available(). */
#define FB_SMALL_M_AMX_MIN_ROWS 5
#define FB_AMX_TOKEN_TILES 5
#define FB_SMALL_M_AMX_MAX (FB_AMX_TOKEN_TILES * 16)
/* Past FB_SMALL_M_MAX tokens the shape rule keeps AMX's form for weights
 * of at least this many bytes a token: below, the bf16 driver, which
 * packs them, is faster (docs/cpu-kernels.md has the measurements). */
#define FB_SMALL_M_AMX_BYTES_PER_ROW ((int64_t)64 << 10)
/* Past one block of FB_SMALL_M_AMX_MAX rows, the bf16 MLP's weights
 * below FB_SMALL_M_AMX_MLP_SMALL_BYTES need this many bytes a row: the
 * driver's packing costs little there, and the AMX form's several part
 * blocks lose to it (docs/cpu-kernels.md has the measurements). */
#define FB_SMALL_M_AMX_MLP_SMALL_BYTES ((int64_t)16 << 20)
#define FB_SMALL_M_AMX_MLP_SMALL_BYTES_PER_ROW ((int64_t)112 << 10)
size_t fb_cpu_small_m_amx_pack_bytes(int64_t m, int64_t k);
void fb_cpu_small_m_amx_pack(int64_t m, int64_t k, const uint16_t *x,
                             int64_t ldx, uint16_t *dst);
int fb_cpu_small_m_amx_nt(int64_t m, int64_t n, int64_t k,
                          const uint16_t *xp, int x_field, const void *w,
                          int64_t ldw, float *out, int64_t ldo);

/* fb_cpu_small_m_amx_pack from fp32 rows whose values are bf16 (x widened
 * from bf16, or rounded to it): the high half of each float. Returns the
 * smallest exponent field of the non-zero elements (255: none), the
 * x_field of the products. */
int fb_cpu_small_m_amx_pack_f32(int64_t m, int64_t k, const float *x,
                                int64_t ldx, uint16_t *dst);

/* The same product with e4m3 weight rows (w: bytes, ldw apart): each
 * 16 x 32 tile of w widened exactly to bf16 in L1, then TDPBF16PS. Every
 * e4m3 value is a bf16 of exponent field FB_E4M3_BF16_FIELD or more, so
 * exactness depends on x_field alone: returns 0 before computing anything
 * when a product could flush. */
#define FB_E4M3_BF16_FIELD 118 /* 2^-9, the smallest e4m3 subnormal */
/* From 4 tokens AMX is ahead of the zmm register form (at 3 level); the
 * measurements are in docs/fp8-weights.md. */
#define FB_E4M3_AMX_MIN_ROWS 4
int fb_cpu_e4m3_amx_nt(int64_t m, int64_t n, int64_t k, const uint16_t *xp,
                       int x_field, const uint8_t *w, int64_t ldw, float *out,
                       int64_t ldo);

/* Rows a block when m rows are cut into equal blocks of at most most. */
static inline int64_t fb_cpu_small_m_block(int64_t m, int64_t most)
{
    const int64_t blocks = (m + most - 1) / most;
    return blocks <= 1 ? m : (m + blocks - 1) / blocks;
}

/* Whether a block's path says it ran some or all of its products on the
 * FMA form where AMX's could have run. */
static inline int fb_cpu_small_m_fell_back(const char *path)
{
    return strstr(path, "where-tiny") != NULL ||
           strstr(path, "bf16-weights") != NULL;
}

/* A call of several blocks reports one block's path (ran): the first,
 * or the first that fell back; path starts empty. */
static inline void fb_cpu_small_m_keep_path(char *path, size_t len,
                                            const char *ran)
{
    if (path[0] == '\0' ||
        (fb_cpu_small_m_fell_back(ran) && !fb_cpu_small_m_fell_back(path)))
        snprintf(path, len, "%s", ran);
}

/* Then "/what=block" where the call had several blocks. */
static inline void fb_cpu_small_m_blocks_note(char *path, size_t len,
                                              const char *what,
                                              int64_t block, int64_t all)
{
    const size_t used = strlen(path);
    if (block < all && used < len)
        snprintf(path + used, len - used, "/%s=%lld", what,
                 (long long)block);
}

/* The drivers' path segment for the form that ran: bf16 products (AMX
 * or VDPBF16PS, "+fma-where-tiny" where some ran again on the FMA form)
 * or the FMA form on the stored weights. */
static inline const char *fb_cpu_small_m_form(int products, int amx,
                                              int fell_back, fb_dtype t)
{
    if (products)
        return amx ? (fell_back ? "bf16-amx+fma-where-tiny" : "bf16-amx")
                   : (fell_back ? "bf16-dpbf16+fma-where-tiny"
                                : "bf16-dpbf16");
    return t == FB_DTYPE_F16   ? "f16-weights"
           : t == FB_DTYPE_F32 ? "f32-weights"
                               : "bf16-weights";
}

#endif /* FB_CPU_SMALL_M_H */
