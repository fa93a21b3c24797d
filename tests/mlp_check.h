/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_check.h -- one mlp_geglu_forward case, run on targets and checked
 * against the oracle (and a CPU witness), and the sweeps built from it.
 */
#ifndef FB_TEST_MLP_CHECK_H
#define FB_TEST_MLP_CHECK_H

#include "harness.h"

/* Which biases a case passes (the others are NULL). */
enum { MLP_BG = 1, MLP_BU = 2, MLP_BD = 4, MLP_ALL_BIASES = 7 };

typedef struct mlp_case {
    fb_dtype dtype;
    fb_activation act;
    int64_t m, k, h, n;
    int64_t ldx, ldy;
    unsigned biases;  /* MLP_BG | MLP_BU | MLP_BD */
    int64_t offset;   /* operands start this many elements into their
                         allocation */
} mlp_case;

typedef struct mlp_data {
    mlp_case c;
    tshape sx, swg, swu, swd, sbg, sbu, sbd, sy;
    tbuf X, Wg, Wu, Wd, bg, bu, bd, Y;
} mlp_data;

/* Random inputs (weights scaled so that values stay O(1) whatever the
 * width), Y poisoned, guards around everything. */
void mlp_data_make(mlp_data *d, const mlp_case *c);
void mlp_data_free(mlp_data *d);
void mlp_case_label(const mlp_case *c, char *buf, size_t len);

/* As gemm_check: one TAP point per target (and one for the witness).
 * Returns the number of failed points. */
int mlp_check(const mlp_data *d, const target *t, int nt,
              const target *cross);
/* Make, check, free; ldx and ldy get a random padding, offset 0 or 1. */
int mlp_run_case(mlp_case *c, const target *t, int nt, const target *cross);

/* Dtypes x gate activations x bias patterns over widths that are not
 * multiples of anything, m in {0, 1, 2, ..., 75}. */
void mlp_sweep_conformance(const target *t, int nt, const target *cross);

#endif /* FB_TEST_MLP_CHECK_H */
