/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gemm_check.h -- one gemm_bias_act case, run on one or more targets and
 * checked against the oracle (and against a CPU witness), and the
 * conformance sweeps built from it. test_gemm runs the sweeps on the CPU
 * with host memory; test_gpu runs the same sweeps on each GPU path with
 * device memory.
 */
#ifndef FB_TEST_GEMM_CHECK_H
#define FB_TEST_GEMM_CHECK_H

#include "harness.h"

typedef struct gemm_case {
    fb_dtype dtype;
    fb_layout layout;
    fb_transpose transa, transb;
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    float alpha, beta;
    int has_bias;
    fb_activation act;
    int64_t offset; /* operands start this many elements into their
                       allocation (guard before them) */
    const char *note; /* appended to the TAP label, or NULL */
} gemm_case;

/* Stored shapes of A (op(A) is m x k), B (op(B) is k x n) and C. */
tshape gemm_shape_a(const gemm_case *c);
tshape gemm_shape_b(const gemm_case *c);
tshape gemm_shape_c(const gemm_case *c);
/* The smallest legal leading dimension of a stored shape:
 * max(1, row length) row-major, max(1, column length) column-major. */
int64_t shape_min_ld(fb_layout layout, int64_t rows, int64_t cols);
/* Set lda, ldb, ldc to their minimum plus pad_a, pad_b, pad_c. */
void gemm_case_set_lds(gemm_case *c, int64_t pad_a, int64_t pad_b,
                       int64_t pad_c);

/* The operands of one case as host images. A, B and bias hold fresh random
 * values, C too if beta != 0, the poison pattern otherwise; everything
 * around the windows holds the guard. A test may overwrite elements (NaN,
 * Inf) before checking. */
typedef struct gemm_data {
    gemm_case c;
    tshape sa, sb, sc, sbias;
    tbuf A, B, C, bias;
} gemm_data;

void gemm_data_make(gemm_data *d, const gemm_case *c);
void gemm_data_free(gemm_data *d);

/* The typed routine for dtype. */
fb_status gemm_call(fb_handle h, fb_dtype dtype, fb_layout layout,
                    fb_transpose transa, fb_transpose transb, int64_t m,
                    int64_t n, int64_t k, float alpha, const void *A,
                    int64_t lda, const void *B, int64_t ldb, float beta,
                    void *C, int64_t ldc, const void *bias, fb_activation act);

/* Run d on each target and emit one TAP point per target. cross, if not
 * NULL, runs first (its own TAP point) and every target's result must also
 * agree with it within the sum of both bounds. Checks: status, the path
 * that ran, every element of the C window against the oracle, every other
 * byte of C (padding, guards) and every byte of A, B and bias unchanged.
 * Returns the number of failed points. */
int gemm_check(const gemm_data *d, const target *t, int nt,
               const target *cross);

/* A one-line description of a case for TAP. */
void gemm_case_label(const gemm_case *c, char *buf, size_t len);

/* The conformance sweep: shapes from {0,1,2,3,7,16,33,64,127,257}, both
 * layouts, all transpose pairs, padded leading dimensions, every
 * alpha/beta/bias/activation combination, each dtype. */
void gemm_sweep_conformance(const target *t, int nt, const target *cross);
/* Each activation's curve over [-12, 12] and large |x| (k = 1, so the
 * pre-activation is exact), each dtype. */
void gemm_sweep_activations(const target *t, int nt, const target *cross);

#endif /* FB_TEST_GEMM_CHECK_H */
