/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_kernel.h -- the pieces of the AVX512-BF16 GEMM that the gemm
 * and MLP drivers share: k-pair interleaved packing, the 32 x 12 register
 * block run over a block of panels, and small helpers.
 *
 * A packed panel of R rows (R = FB_BF16_MR for op(A), FB_BF16_NR for
 * op(B)) holds, for each pair p of k, R 32-bit words; word r is
 * (X(r, 2p), X(r, 2p + 1)), the second a zero past an odd k, and rows past
 * the matrix are zero words. A panel of kp pairs is kp * 2R bf16.
 * Everything here but fb_bf16_min_field must only be called when
 * fb_cpu_bf16_available().
 */
#ifndef FB_CPU_BF16_KERNEL_H
#define FB_CPU_BF16_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include "cpu_bf16_gemm.h"

/* A bf16 matrix read as rows i (the panel dimension) by k: element (i, l)
 * is base[i * ld + l] when k_contiguous, else base[i + l * ld]. */
typedef struct fb_bf16_operand {
    const void *base;
    int64_t ld;
    int k_contiguous;
} fb_bf16_operand;

/* bf16 elements of one packed panel of R rows and kp pairs. */
static inline int64_t fb_bf16_panel_elems(int64_t kp, int r)
{
    return kp * 2 * r;
}

/* Pack panels [q0, q1) of R rows (R is FB_BF16_MR or FB_BF16_NR) of the
 * rows x k operand x into dst (panel q at q * fb_bf16_panel_elems).
 * Returns the smallest exponent field (0..255; 0: a denormal) among the
 * non-zero elements read, 255 if there were none. */
int fb_bf16_pack(const fb_bf16_operand *x, int64_t rows, int64_t k, int r,
                 int64_t q0, int64_t q1, uint16_t *dst);

/* The smallest exponent field among the non-zero elements of the rows x k
 * operand x, as fb_bf16_pack would return it, without packing: on up to
 * threads threads. Any CPU. 255 (none) for a NULL base. */
int fb_bf16_min_field(const fb_bf16_operand *x, int64_t rows, int64_t k,
                      int threads);

/* Whether VDPBF16PS computes A B exactly as IEEE fp32 arithmetic would,
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

/* acc (column-major, ldacc, na * MR rows x nb * NR columns) <-
 *   alpha * ((accumulate ? acc : 0) + sum over np pairs of A B)
 * where A is na packed MR-panels starting at a, astride bf16 apart, and B
 * nb packed NR-panels at b, bstride apart (each already offset to its
 * first pair). ldacc is a multiple of 16. */
void fb_bf16_block(const uint16_t *a, int64_t astride, int64_t na,
                   const uint16_t *b, int64_t bstride, int64_t nb,
                   int64_t np, float alpha, int accumulate, float *acc,
                   int64_t ldacc);

/* dst[i] = src[i] rounded to bf16 (nearest even, NaN kept quiet,
 * denormals kept): the same bits as fb_cpu_from_f32, 16 at a time. */
void fb_bf16_from_f32(const float *src, uint16_t *dst, int64_t n);

#endif /* FB_CPU_BF16_KERNEL_H */
