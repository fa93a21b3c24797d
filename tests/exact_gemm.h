/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exact_gemm.h -- gemm_bias_act on operands whose result is known exactly,
 * so that "rounded once" can be checked bit for bit.
 *
 * A, B, C (when beta != 0) and the bias hold small integers scaled by a
 * power of two: A and B in [-R, R] 2^-s, C and the bias in [-255, 255]
 * 2^-2s, alpha in {1, 0.5, -2}, beta in {0, 1}. Every product is then a
 * multiple of q = 2^-2s, and so is every partial sum, in any order, with
 * C and the bias added in any order (q / 2 after alpha = 0.5); in
 * magnitude they stay below 2 k R^2 + 510 q (alpha = -2), or k R^2 + 1020
 * halves of q (alpha = 0.5). With 2 k R^2 + 1020 <= 2^24, which fixes R
 * from k (R = 31 at k = 8192, up to 127 for small k), all of them are
 * exact in fp32, whatever the summation order, split or blocking, and
 * none is subnormal. The exact pre-activation z is computed in integers,
 * and:
 *  - act none and relu: the result must be z (relu: max(z, 0)) rounded
 *    once to the output type, to nearest even: bit equality, 0 ulps (the
 *    sign of a zero result is not checked: the order of the additions
 *    decides it);
 *  - gelu_tanh, gelu_erf, silu: within 0.5 ulp of the output type plus
 *    the activation's own fp32 error that sgemm_bias_act(3) promises,
 *    8 x 2^-24 |z|, of act(z) computed in double.
 * R is as large as the bound allows so that results carry more significant
 * bits than fp16 (11) and bf16 (8) keep: a result or a partial sum
 * rounded to 16 bits on the way shows as a wrong bit pattern.
 *
 * A double rounding (an intermediate held in the output type) is exactly
 * what this catches that a tolerance cannot: a tolerance of a few ulps
 * lets it through.
 */
#ifndef FB_TEST_EXACT_GEMM_H
#define FB_TEST_EXACT_GEMM_H

#include "gemm_check.h"

/* One case on every target: one TAP point per target (NOT_SUPPORTED on a
 * target that may decline is a skip). t[i].expect == FB_BACKEND_AUTO
 * accepts whatever backend ran. The label names the case, the required
 * accuracy and the path that ran; a failure's diagnostics give the count
 * of wrong elements, the worst in ulps of the output type and the first
 * few with their exact and correctly rounded values. c's lda, ldb, ldc and
 * offset are used as given. Returns the number of failed points. */
int exact_check(const gemm_case *c, const target *t, int nt);

/* The family: the reported shapes first (bf16 col-major NN m = 16 and 64,
 * n = 4096, k = 768 with lda = 53 or ldc = 17, and their fp16 and fp32
 * twins; m = 2, n = 32, k = 4096 and 8192, fp16 and bf16, default
 * alignment), then per_combo cases for each dtype x layout x transpose
 * pair: m from 1 to 64, n up to 4096, k up to 8192 (1, 3, 768, 777, 4095,
 * 4096, 8191, 8192 among them), leading dimensions padded by 0, 1, 3 or
 * 37, operands 0 to 7 elements off their allocation's alignment (the
 * first three cases of each combination always odd and off; then cases
 * with lds on 16-byte boundaries and aligned operands, and random ones,
 * in turn), alpha, beta, bias and activation drawn (a third of the cases
 * the plain product: no bias, act none, beta 0; the eighth an aligned
 * plain product with k >= 4096 and n <= 256, where cuBLASLt may split k).
 * m n k is capped at max_work by narrowing n.
 * Ends with a table per target: cases and failures per dtype, layout and
 * transpose pair, and the worst error in ulps. */
void exact_sweep(const target *t, int nt, int per_combo, int64_t max_work);

/* TAP points showing that the checker can fail: on the family's own data
 * at the reported shapes (bf16 and fp16), a split-K whose parts are
 * rounded to the output type and added up in it (cuBLASLt's INPLACE
 * scheme on a 16-bit D) gives elements that differ from the one rounding;
 * and the reference's rounding agrees with the library's conversion. */
void exact_checker_can_fail(void);

#endif /* FB_TEST_EXACT_GEMM_H */
