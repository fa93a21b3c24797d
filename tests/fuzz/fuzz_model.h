/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_model.h -- the fuzzer's own reading of the documented argument
 * rules (fusedblas.h, sgemm_bias_act(3), mlp_geglu_forward(3)): which
 * outcome a call must have, worked out independently of lib/common/check.c
 * so that the two can disagree.
 *
 * Where the documentation leaves a case open, the model accepts each
 * reading (an outcome set, not a single answer) and says so below.
 */
#ifndef FB_FUZZ_MODEL_H
#define FB_FUZZ_MODEL_H

#include <stdint.h>
#include "fusedblas.h"

/* A gemm_bias_act call as the fuzzer makes it. */
typedef struct fz_gemm {
    fb_dtype dtype;
    int stale_handle; /* the handle argument is a destroyed handle */
    fb_layout layout;
    fb_transpose transa, transb;
    int64_t m, n, k;
    float alpha, beta;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    const void *bias;
    fb_activation act;
    int unplaced; /* the pointers are stand-ins, not where the arrays lie:
                     the overlap rule is not applied */
} fz_gemm;

/* A mlp_geglu_forward call. */
typedef struct fz_mlp {
    fb_dtype dtype;
    int stale_handle;
    fb_activation act;
    int64_t m, k, h, n;
    const void *x;
    int64_t ldx;
    const void *wg, *bg, *wu, *bu, *wd, *bd;
    void *y;
    int64_t ldy;
    int unplaced; /* as fz_gemm's */
} fz_mlp;

/* A stored matrix: outer lines (rows if row-major, columns if
 * column-major) of inner elements, ld apart. */
typedef struct fz_stored {
    int64_t inner, outer, ld;
} fz_stored;

/* Elements from the first to one past the last element of s (0 if it is
 * empty); -1 if that many elements of esize bytes exceed PTRDIFF_MAX
 * bytes, i.e. the extent overflows the address space. */
int64_t fz_extent(const fz_stored *s, int64_t esize);

/* The stored shapes of a gemm call's A, B and C (valid enums and
 * non-negative sizes assumed). */
fz_stored fz_gemm_a(const fz_gemm *g);
fz_stored fz_gemm_b(const fz_gemm *g);
fz_stored fz_gemm_c(const fz_gemm *g);

/* Acceptable outcomes, as a bit set over argument positions: bit 0 is
 * success, bit p is "invalid argument at position p". */
typedef uint32_t fz_outcomes;

/* gemm: the lowest wrong argument, as the man page lists them (an output
 * whose byte range meets an input's that the call reads is wrong at the
 * output's position, judged where both ranges are defined); a present
 * bias of n elements that overflow the address space may be reported (16)
 * or not (the man page is silent). */
fz_outcomes fz_gemm_expect(const fz_gemm *g);

/* mlp. Open cases accepted both ways:
 *  - X when h is 0 (Y is bd then, so X is arguably not needed);
 *  - a weight extent overflow (h*k or n*h): mlp_geglu_forward(3) reports
 *    it at the larger dimension (at either when the two are equal), the
 *    library and tests/test_badargs at the weight itself (Wg, Wd); the
 *    two documents disagree, and this model takes either until they
 *    agree. */
fz_outcomes fz_mlp_expect(const fz_mlp *p);

/* The weight shapes of a mlp call: Wg and Wu h rows of k, Wd n rows of h,
 * X m rows of ldx, Y m rows of ldy (row-major). */
fz_stored fz_mlp_x(const fz_mlp *p);
fz_stored fz_mlp_w(const fz_mlp *p); /* Wg and Wu */
fz_stored fz_mlp_wd(const fz_mlp *p);
fz_stored fz_mlp_y(const fz_mlp *p);

#endif /* FB_FUZZ_MODEL_H */
