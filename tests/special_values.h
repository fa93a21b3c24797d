/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * special_values.h -- NaN and Inf in A, B, C and bias propagate as IEEE
 * arithmetic says, through every activation and dtype.
 *
 * The oracle evaluates the same formulas in double, so it says where each
 * special value must land: NaN anywhere in a dot product gives NaN; Inf
 * times a nonzero gives a signed Inf, Inf - Inf gives NaN; act(NaN) is NaN
 * for every activation, relu included; at the infinities each activation
 * takes its limit: act(+Inf) = +Inf, and act(-Inf) = 0 for relu, the
 * gelus and silu (their formulas would give -Inf * 0 = NaN; the library
 * must not). beta == 0: NaN and Inf in C must not leak. alpha is 0.7
 * throughout (with alpha == 0 BLAS does not read A and B, so their NaN
 * need not show). Inputs are never zero, so Inf * 0 only happens where a
 * scenario means it.
 */
#ifndef FB_TEST_SPECIAL_VALUES_H
#define FB_TEST_SPECIAL_VALUES_H

#include "gemm_check.h"

/* One TAP point per target for each of:
 *  - thirteen scenarios x every activation x each dtype, 5 x 6 x 7
 *    problems with layout and transposes drawn at random;
 *  - pre-activations of exactly -Inf and +Inf (three scenarios) x every
 *    activation x each dtype, on the 5 x 6 x 7 problem and on two that the
 *    fused kernels take (k = 8 and 264, row-major NT, aligned); the paths
 *    that ran are printed as diagnostics;
 *  - mlp_geglu_forward whose gate pre-activation is -Inf in some rows and
 *    +Inf in others (special_values.c says how, and why Y is then exact)
 *    x every gate activation x each dtype, on shapes of the fused tiny,
 *    decode and prefill families; checked against the oracle only (Y holds
 *    infinities, which the witness comparison cannot take). */
void special_sweep(const target *t, int nt, const target *cross);

#endif /* FB_TEST_SPECIAL_VALUES_H */
