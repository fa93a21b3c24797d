/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_kernel.h -- the pieces of the bf16 GEMMs that the gemm and MLP
 * drivers share: the two engines (AVX512-BF16's register block, AMX's tile
 * block), k-pair interleaved packing, and small helpers.
 *
 * A packed panel of R rows (the engine's mr for op(A), nr for op(B))
 * holds, for each pair p of k, R 32-bit words; word r is
 * (X(r, 2p), X(r, 2p + 1)), the second a zero past an odd k, and rows past
 * the matrix are zero words. The engine's kpad rounds the pairs up (zero
 * words past k): a panel of kp pairs is kp * 2R bf16. AMX's op(B) panels
 * (16 rows) hold the same words in another order: for each run of 16
 * pairs, row r's 16 words in turn (a tile's rows, 32 k each).
 * Everything here but fb_bf16_min_field must only be called when the
 * engine is available.
 */
#ifndef FB_CPU_BF16_KERNEL_H
#define FB_CPU_BF16_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include "cpu_bf16_gemm.h"
#include "fusedblas.h"

/* A bf16 matrix read as rows i (the panel dimension) by k: element (i, l)
 * is base[i * ld + l] when k_contiguous, else base[i + l * ld]. */
typedef struct fb_bf16_operand {
    const void *base;
    int64_t ld;
    int k_contiguous;
} fb_bf16_operand;

/* A kernel over packed panels: block() is
 *   acc (column-major, ldacc, na * mr rows x nb * nr columns) <-
 *     alpha * ((accumulate ? acc : 0) + sum over np pairs of A B)
 * where A is na packed mr-panels starting at a, astride bf16 apart, and B
 * nb packed nr-panels at b, bstride apart (each already offset to its
 * first pair, a multiple of kpad). np is a multiple of kpad; ldacc of
 * 16. */
typedef struct fb_bf16_engine {
    const char *name; /* the implementation's: "cpu/bf16-..." */
    int mr, nr, kpad;
    int b_tile_rows;  /* op(B)'s panels in tile rows (AMX) */
    int (*available)(void);
    void (*block)(const uint16_t *a, int64_t astride, int64_t na,
                  const uint16_t *b, int64_t bstride, int64_t nb,
                  int64_t np, float alpha, int accumulate, float *acc,
                  int64_t ldacc);
    /* block with B not packed: rows of a row-major bf16 matrix (ldb
     * elements apart, 16 rows a panel, k past its end zeros up to a
     * multiple of 2 kpad), read in place; NULL where the engine cannot. */
    void (*block_rows)(const uint16_t *a, int64_t astride, int64_t na,
                       const uint16_t *b, int64_t ldb, int64_t nb,
                       int64_t np, float alpha, int accumulate, float *acc,
                       int64_t ldacc);
} fb_bf16_engine;

/* VDPBF16PS: a 32 x 12 register block (cpu_bf16_kernel.c). */
extern const fb_bf16_engine fb_bf16_avx512;
/* AMX TDPBF16PS: 2 x 2 tiles of 16 x 16 (cpu_bf16_amx.c). */
extern const fb_bf16_engine fb_bf16_amx;

/* Non-zero if this CPU can run AMX's bf16 tiles, the OS saves their
 * state and gave this process leave to use them (asked once), and neither
 * FUSEDBLAS_CPU_NO_BF16 nor FUSEDBLAS_CPU_NO_AMX is 1. */
int fb_cpu_amx_available(void);

/* The tile configuration both AMX kernels use (palette 1, tiles 0-7 of 16
 * rows of 64 bytes), loaded for this thread. Only where
 * fb_cpu_amx_available(). */
void fb_cpu_amx_configure(void);

/* Pairs of a packed panel of an operand of depth k. */
static inline int64_t fb_bf16_pairs(const fb_bf16_engine *e, int64_t k)
{
    const int64_t kp = (k + 1) / 2;
    return (kp + e->kpad - 1) / e->kpad * e->kpad;
}

/* bf16 elements of one packed panel of R rows and kp pairs. */
static inline int64_t fb_bf16_panel_elems(int64_t kp, int r)
{
    return kp * 2 * r;
}

/* Pack panels [q0, q1) of the rows x k operand x, as op(A) (e->mr rows)
 * or op(B) (e->nr) of engine e, into dst (panel q at q *
 * fb_bf16_panel_elems(fb_bf16_pairs(e, k), r)). Returns the smallest
 * exponent field (0..255; 0: a denormal) among the non-zero elements
 * read, 255 if there were none. */
int fb_bf16_pack_a(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst);
int fb_bf16_pack_b(const fb_bf16_engine *e, const fb_bf16_operand *x,
                   int64_t rows, int64_t k, int64_t q0, int64_t q1,
                   uint16_t *dst);
/* fb_bf16_pack_a of rows x k e4m3 weights (rows contiguous, ldw bytes
 * apart), each widened exactly to bf16 on its load (cpu_e4m3_bf16.h). */
int fb_bf16_pack_a_e4m3(const fb_bf16_engine *e, const uint8_t *w,
                        int64_t ldw, int64_t rows, int64_t k, int64_t q0,
                        int64_t q1, uint16_t *dst);

/* The smallest exponent field among the non-zero elements of the rows x k
 * operand x, as fb_bf16_pack would return it, without packing: on up to
 * threads threads. Any CPU. 255 (none) for a NULL base. */
int fb_bf16_min_field(const fb_bf16_operand *x, int64_t rows, int64_t k,
                      int threads);

/* Whether VDPBF16PS (or AMX's TDPBF16PS, which follows the same rules)
 * computes A B exactly as IEEE fp32 arithmetic would,
 * given the smallest exponent fields ea, eb of A's and B's non-zero
 * elements. It reads denormal inputs as zero and flushes denormal
 * products and sums to zero; IEEE keeps them (gradual underflow), and
 * the fuzzer's bound (2^-149 per rounding) holds us to that. A bf16 of
 * field e is a multiple of 2^(e - 134), so every product, and every sum
 * of products rounded to fp32, is a multiple of 2^(ea + eb - 268): when
 * that is at least 2^-126 (ea + eb >= 142), nothing non-zero is ever
 * below the normal range and no flush can happen. Otherwise (values below
 * about 2^-56 meeting each other, or a denormal input) the caller takes
 * an fp32 path. */
static inline int fb_bf16_products_exact(int ea, int eb)
{
    return ea > 0 && eb > 0 && ea + eb >= 142;
}

/* dst[i] = src[i] rounded to bf16 (nearest even, NaN kept quiet,
 * denormals kept): the same bits as fb_cpu_from_f32, 16 at a time. */
void fb_bf16_from_f32(const float *src, uint16_t *dst, int64_t n);

/* For each column j < cols: dst[j ldd + i] = act(x[j ldx + i] + (bias ?
 * bias[i] : bcol ? bcol[j] : 0)) rounded to bf16 for i < n: the bits of
 * fb_cpu_bias_act (bias, or neither with an activation) or
 * fb_cpu_scalar_bias_act (bcol[j]) then fb_bf16_from_f32, in one pass.
 * With no bias of either kind and no activation, fb_bf16_from_f32's (no
 * zero added: -0 stays -0). */
void fb_bf16_bias_act_store(const float *x, int64_t ldx, const float *bias,
                            const float *bcol, int64_t n, int64_t cols,
                            fb_activation act, uint16_t *dst, int64_t ldd);

/* For each row t < rows: h[t ldh + i] = act(g[t ldgu + i] + bg[i]) *
 * (u[t ldgu + i] + bu[i]) rounded to bf16 for i < n (bg, bu may be NULL),
 * zeros for n <= i < npad: the bits of fb_cpu_gate then fb_bf16_from_f32,
 * in one pass. With e4m3 weights' scales sg and su (both or neither), g
 * and u are first multiplied by them (the e4m3 order: dot scale + bias).
 * Returns the smallest exponent field among the non-zero h (255 if
 * none). */
int fb_bf16_gate_store(const float *g, const float *u, int64_t ldgu,
                       const float *sg, const float *su, const float *bg, const float *bu, int64_t n,
                       int64_t npad, int64_t rows, fb_activation act,
                       uint16_t *h, int64_t ldh);

#endif /* FB_CPU_BF16_KERNEL_H */
