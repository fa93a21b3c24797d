/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_judge.h -- what each element of a successful call's output must
 * be: the oracle's value within a bound derived from the data type and k,
 * or the IEEE outcome where NaN or Inf went in.
 *
 * Inputs are double images of the operands exactly as stored (16-bit
 * values widened exactly), laid out as the call lays them out; elements
 * outside the windows are never read.
 */
#ifndef FB_FUZZ_JUDGE_H
#define FB_FUZZ_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include "fuzz_model.h"

typedef enum fz_kind {
    /* All inputs that reach the element are finite: |got - ref| <= bound,
     * where fp32 arithmetic cannot overflow on the way; where it can
     * (ovf), Inf, NaN and act(-Inf) (the limit 0 of every activation but
     * none) are accepted too, but any other finite result must still be
     * within the bound (no overflow happened then, so the bound holds). */
    FZ_BOUNDED,
    /* A NaN input reaches the element (alpha, beta, an element of op(A)'s
     * row or op(B)'s column, C where read, the bias): NaN, whatever the
     * arithmetic. */
    FZ_NAN,
    /* An Inf input reaches it and no NaN does: the IEEE outcome of the
     * formula, ref (NaN, +-Inf, or an activation's limit 0 at -Inf),
     * exactly; where the finite part can overflow (ovf), NaN is accepted
     * too. */
    FZ_IEEE,
    /* Not decided by the contract (an infinite alpha or beta, whose product
     * with a sum that fp32 rounds to zero is NaN; Inf in an mlp, where
     * rounded intermediates meet it; an mlp whose gate (any activation
     * but none) may see an overflowed -Inf and give 0): only the memory
     * checks apply. */
    FZ_ANY
} fz_kind;

typedef struct fz_expect {
    fz_kind kind;
    double ref;   /* the oracle's value */
    double bound; /* FZ_BOUNDED: the allowed |got - ref| */
    double thr;   /* magnitude from which the output type rounds to Inf */
    int ovf;      /* fp32 overflow possible on the way */
    double ovf_act; /* act(-Inf): what an overflowed pre-activation gives
                       (the limit 0, or -Inf for none) */
} fz_expect;

/* Non-zero if got is acceptable. */
int fz_judge(double got, const fz_expect *e);
const char *fz_kind_name(fz_kind k);

/* Expectations for every element of C (indexed like C: layout, ldc).
 * C0 holds C before the call (read only where beta != 0). E_blas, if not
 * NULL, receives a second acceptable answer when alpha == 0 and k > 0:
 * BLAS does not read A and B then, so NaN or Inf in them need not reach
 * C; returns whether it was filled. */
int fz_gemm_expectations(const fz_gemm *g, const double *A, const double *B,
                         const double *C0, const double *bias, fz_expect *E,
                         fz_expect *E_blas);

/* Expectations for every element of Y (row-major, ldy). */
void fz_mlp_expectations(const fz_mlp *p, const double *X, const double *Wg,
                         const double *bg, const double *Wu, const double *bu,
                         const double *Wd, const double *bd, fz_expect *E);

#endif /* FB_FUZZ_JUDGE_H */
