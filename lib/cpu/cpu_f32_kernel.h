/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_kernel.h -- the pieces of the AVX-512F fp32 GEMM that the gemm
 * and MLP drivers share: packing into panels, the 32 x 12 register block
 * run over a block of panels, and small helpers.
 *
 * A packed panel of R rows (R = FB_F32_MR for op(A), FB_F32_NR for op(B))
 * holds, for each l < k, the R elements X(r, l), rows past the matrix
 * zero. A panel is k * R floats. Everything here but
 * fb_cpu_f32_kernel_available must only be called when that says yes.
 */
#ifndef FB_CPU_F32_KERNEL_H
#define FB_CPU_F32_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* The register block: rows of op(A) by columns of op(B); 2 x 12 zmm
 * accumulators, as in the bf16 kernel. */
#define FB_F32_MR 32
#define FB_F32_NR 12

/* Non-zero if this CPU (and its OS) runs AVX-512F. */
int fb_cpu_f32_kernel_available(void);

/* An fp32 matrix read as rows i (the panel dimension) by k: element (i, l)
 * is base[i * ld + l] when k_contiguous, else base[i + l * ld]. */
typedef struct fb_f32_operand {
    const float *base;
    int64_t ld;
    int k_contiguous;
} fb_f32_operand;

/* floats of one packed panel of R rows and depth k. */
static inline int64_t fb_f32_panel_elems(int64_t k, int r)
{
    return k * r;
}

/* Pack panels [q0, q1) of R rows (FB_F32_MR or FB_F32_NR) of the rows x k
 * operand x into dst (panel q at (q - q0) * fb_f32_panel_elems(k, r)). */
void fb_f32_pack(const fb_f32_operand *x, int64_t rows, int64_t k, int r,
                 int64_t q0, int64_t q1, float *dst);

/* fb_f32_pack with non-temporal stores for the lines it writes whole
 * (32-row panels on a 64-byte boundary; the rest as fb_f32_pack): for
 * operands packed larger than the last-level cache, which are read back
 * from memory anyway. The stores then skip reading each line first and
 * evict nothing, which about halves the packing time of such operands
 * (docs/cpu-kernels.md). */
void fb_f32_pack_streamed(const fb_f32_operand *x, int64_t rows, int64_t k,
                          int r, int64_t q0, int64_t q1, float *dst);

/* Non-zero if packing `bytes` should use fb_f32_pack_streamed: more than
 * the last-level cache holds (sysconf; 32 MiB when it does not say). */
int fb_f32_pack_streams(size_t bytes);

/* Rows [i0, i0 + lanes) of the rows x k operand x (rows past the matrix
 * zero) into lanes 0..lanes-1 of a panel of stride floats per l at dst
 * (lanes <= 16 or 32, stride >= lanes): two operands sharing one panel,
 * as the small-k MLP's gate and up rows (cpu_f32_small_k.c). */
void fb_f32_pack_lanes(const fb_f32_operand *x, int64_t rows, int64_t k,
                       int64_t i0, int lanes, int stride, float *dst);

/* Non-zero if fb_f32_pack_e4m3 runs here (AVX-512 F, BW and VL). */
int fb_f32_e4m3_pack_available(void);

/* fb_f32_pack of MR-row panels [q0, q1) of a rows x k matrix of e4m3
 * bytes (row i at w + i * ldw, k contiguous), each value widened exactly
 * to fp32 (the NaN pattern a NaN): e4m3 weights in the fp32 drivers. */
void fb_f32_pack_e4m3(const uint8_t *w, int64_t ldw, int64_t rows, int64_t k,
                      int64_t q0, int64_t q1, float *dst);

/* acc (column-major, ldacc, na * MR rows x nb * NR columns) <-
 *   alpha * ((accumulate ? acc : 0) + sum over depth k of A B)
 * where A is na packed MR-panels starting at a, astride floats apart, and
 * B nb packed NR-panels at b, bstride apart (each already offset to its
 * first l). ldacc is a multiple of 16. */
void fb_f32_block(const float *a, int64_t astride, int64_t na,
                  const float *b, int64_t bstride, int64_t nb, int64_t k,
                  float alpha, int accumulate, float *acc, int64_t ldacc);

/* The same with the loop over A's panels outside (a_outer): each A panel
 * then stays in L1 while B's stream from L2, for when the A panels are
 * many (more than L2 holds) and B's few, as the MLP's down projection
 * (Wd's n rows against a chunk of H). fb_f32_block is a_outer = 0: each B
 * panel in L1, A's from L2. */
void fb_f32_block_ordered(const float *a, int64_t astride, int64_t na,
                          const float *b, int64_t bstride, int64_t nb,
                          int64_t k, float alpha, int accumulate, float *acc,
                          int64_t ldacc, int a_outer);

/* y[i] += a * x[i], i < n (one FMA each, as the kernel's own sums). */
void fb_f32_axpy(int64_t n, float a, const float *x, float *y);

#endif /* FB_CPU_F32_KERNEL_H */
