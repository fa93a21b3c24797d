/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oracle.h -- the naive double-precision reference every backend is
 * checked against (the first of docs/DESIGN.md's three witnesses).
 *
 * Everything here works on double arrays that hold exactly the values the
 * library was given (16-bit inputs are widened exactly), laid out as the
 * library call lays them out: same layout, same leading dimensions. The
 * oracle reads only the elements the call may read, so padding can hold a
 * NaN guard. It shares no code with the library: activations come from
 * libm in double, 16-bit rounding from frexp/ldexp.
 */
#ifndef FB_TEST_ORACLE_H
#define FB_TEST_ORACLE_H

#include <stdint.h>
#include "fusedblas.h"

/* Offset of element (i, j) of a matrix stored in layout with leading
 * dimension ld. */
static inline int64_t oracle_at(fb_layout layout, int64_t i, int64_t j,
                                int64_t ld)
{
    return layout == FB_ROW_MAJOR ? i * ld + j : i + j * ld;
}

/* The activation, by docs/DESIGN.md's exact formula, in double:
 *   none x; relu max(x, 0) with NaN kept; gelu_tanh
 *   0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))); gelu_erf 0.5x(1+erf(x/sqrt 2));
 *   silu x/(1+exp(-x)).
 * Evaluated as written, so NaN gives NaN and +Inf gives +Inf; at -Inf,
 * where the gelus and silu would make -Inf times 0, each activation but
 * none gives its limit, 0 (+0: the library's -0 compares equal). */
double oracle_act(fb_activation act, double x);

/* x rounded to the nearest value of dtype (ties to even, overflow to Inf,
 * subnormals kept), straight from double: what a 16-bit store of x holds.
 * For FB_DTYPE_F32 it is (double)(float)x. */
double oracle_round(fb_dtype dtype, double x);

/* C <- act(alpha op(A) op(B) + beta C + bias), in double, every element
 * summed in order l = 0..k-1. C is m x n in layout with ldc; bias has
 * length n or is NULL. beta == 0: C is not read. */
void oracle_gemm_bias_act(fb_layout layout, fb_transpose transa,
                          fb_transpose transb, int64_t m, int64_t n,
                          int64_t k, double alpha, const double *A,
                          int64_t lda, const double *B, int64_t ldb,
                          double beta, double *C, int64_t ldc,
                          const double *bias, fb_activation act);

/* The magnitude the rounding error of one element of that product scales
 * with (the reference BLAS tests' gauge):
 *   G(i,j) = |alpha| sum_l |op(A)(i,l)| |op(B)(l,j)| + |beta| |C(i,j)|
 *            + |bias(j)|
 * written into G (m x n, layout, ldc). beta == 0: C is not read. */
void oracle_gemm_gauge(fb_layout layout, fb_transpose transa,
                       fb_transpose transb, int64_t m, int64_t n, int64_t k,
                       double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta,
                       const double *C, int64_t ldc, const double *bias,
                       double *G);

/* The gated MLP, row-major as mlp_geglu_forward documents:
 *   H = act_g(X Wg^T + bg) .* (X Wu^T + bu)     (m x h)
 *   Y = H Wd^T + bd                             (m x n, ldy)
 * Biases may be NULL. For fp16 and bf16, H is rounded to dtype before the
 * down projection, because that is what PyTorch computes: it stores H in
 * the input type. (Its gate and up outputs are stored too; the tolerance,
 * not the oracle, allows for those roundings.) For fp32, H is not rounded.
 * If Hout is not NULL it receives H (m x h, contiguous). */
void oracle_mlp_geglu(fb_dtype dtype, fb_activation gate_act, int64_t m,
                      int64_t k, int64_t h, int64_t n, const double *X,
                      int64_t ldx, const double *Wg, const double *bg,
                      const double *Wu, const double *bu, const double *Wd,
                      const double *bd, double *Y, int64_t ldy,
                      double *Hout);

#endif /* FB_TEST_ORACLE_H */
