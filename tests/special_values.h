/*
 * special_values.h -- NaN and Inf in A, B, C and bias propagate as IEEE
 * arithmetic says, through every activation and dtype.
 *
 * The oracle evaluates the same formulas in double, so it says where each
 * special value must land: NaN anywhere in a dot product gives NaN; Inf
 * times a nonzero gives a signed Inf, Inf - Inf gives NaN; relu(NaN) is
 * NaN and relu(-Inf) is 0; act(+Inf) is +Inf. For gelu and silu of -Inf
 * the formula gives NaN (-Inf * 0) and the limit is 0: either passes
 * (harness.c, judge), but a GPU path must agree with the CPU witness.
 * beta == 0: NaN and Inf in C must not leak. alpha is 0.7 throughout (with
 * alpha == 0 BLAS does not read A and B, so their NaN need not show).
 * Inputs are never zero, so Inf * 0 only happens where a scenario means it.
 */
#ifndef FB_TEST_SPECIAL_VALUES_H
#define FB_TEST_SPECIAL_VALUES_H

#include "gemm_check.h"

/* Thirteen scenarios x every activation x each dtype, 5 x 6 x 7 problems
 * with layout and transposes drawn at random; one TAP point per target. */
void special_sweep(const target *t, int nt, const target *cross);

#endif /* FB_TEST_SPECIAL_VALUES_H */
