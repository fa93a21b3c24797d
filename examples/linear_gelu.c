/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linear_gelu.c -- torch.nn.Linear followed by GELU, as one sgemm_bias_act
 * call, and the same layer on bfloat16 data with bgemm_bias_act.
 *
 *   PyTorch:    y = torch.nn.functional.gelu(linear(x))   # linear: 64 -> 32
 *   fusedblas:  Y = gelu(X W^T + b)  in one call, no second pass over Y
 *
 * nn.Linear(in, out) keeps its weight as W[out][in] (row-major), so W^T is
 * "W, transposed": layout FB_ROW_MAJOR, transa FB_NO_TRANS (X as it is),
 * transb FB_TRANS (W transposed). Each result is checked against a plain
 * loop in double precision.
 *
 *   build:  cc linear_gelu.c $(pkg-config --cflags --libs fusedblas) -lm
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <fusedblas.h>

enum { BATCH = 8, IN = 64, OUT = 32 };

/* GELU, exact form (PyTorch's default): what FB_ACT_GELU_ERF computes. */
static double gelu(double z)
{
    return 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
}

/* Largest |y - gelu(x w^T + b)| over the batch, in units of the error the
 * data type allows for each element: the rounding of the result to its
 * type, a few fp32 ulps for evaluating GELU in fp32, and k + 1 roundings of
 * the fp32 accumulation against the sum of |terms| (GELU's slope is at most
 * 1.13). A value up to 1 is correct. */
static double worst_error(const double *y, const double *x, const double *w,
                          const double *b, double unit_roundoff)
{
    double worst = 0.0;
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < OUT; j++) {
            double z = b[j], gauge = fabs(b[j]);
            for (int p = 0; p < IN; p++) {
                z += x[i * IN + p] * w[j * IN + p];
                gauge += fabs(x[i * IN + p] * w[j * IN + p]);
            }
            const double want = gelu(z);
            const double bound = (unit_roundoff + 4 * FLT_EPSILON) *
                                     fabs(want) +
                                 1.13 * (IN + 1) * FLT_EPSILON * gauge +
                                 DBL_MIN;
            const double e = fabs(y[i * OUT + j] - want) / bound;
            worst = e > worst ? e : worst;
        }
    }
    return worst;
}

int main(void)
{
    static float x[BATCH * IN], w[OUT * IN], b[OUT], y[BATCH * OUT];
    static double xd[BATCH * IN], wd[OUT * IN], bd[OUT], yd[BATCH * OUT];

    /* Some inputs, and weights of about nn.Linear's scale, 1/sqrt(in). */
    for (int i = 0; i < BATCH * IN; i++)
        x[i] = (float)sin(0.37 * i);
    for (int i = 0; i < OUT * IN; i++)
        w[i] = (float)cos(0.11 * i) / 8.0f;
    for (int i = 0; i < OUT; i++)
        b[i] = 0.01f * (float)(i - OUT / 2);

    /* ---- fp32: sgemm_bias_act ---------------------------------------- */
    fb_status st = sgemm_bias_act(NULL, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                                  BATCH, OUT, IN,     /* m, n, k */
                                  1.0f, x, IN,        /* alpha, A, lda */
                                  w, IN,              /* B, ldb */
                                  0.0f, y, OUT,       /* beta, C, ldc */
                                  b, FB_ACT_GELU_ERF);
    if (st != FB_STATUS_SUCCESS) {
        fprintf(stderr, "sgemm_bias_act: %s (argument %d): %s\n",
                fb_status_string(st), fb_handle_last_arg(NULL),
                fb_handle_last_message(NULL));
        return EXIT_FAILURE;
    }
    for (int i = 0; i < BATCH * IN; i++) xd[i] = x[i];
    for (int i = 0; i < OUT * IN; i++) wd[i] = w[i];
    for (int i = 0; i < OUT; i++) bd[i] = b[i];
    for (int i = 0; i < BATCH * OUT; i++) yd[i] = y[i];
    const double e32 = worst_error(yd, xd, wd, bd, FLT_EPSILON / 2);
    printf("fp32: y[0][0..3] = %.6f %.6f %.6f %.6f\n", y[0], y[1], y[2],
           y[3]);
    printf("fp32: worst error %.3f of the bound  (%s)\n", e32,
           fb_handle_last_path(NULL));

    /* ---- bf16: the same layer on bfloat16 data, fp32 accumulation ---- */
    static fb_bfloat16 xb[BATCH * IN], wb[OUT * IN], bb[OUT], yb[BATCH * OUT];
    for (int i = 0; i < BATCH * IN; i++) xb[i] = fb_float_to_bfloat16(x[i]);
    for (int i = 0; i < OUT * IN; i++) wb[i] = fb_float_to_bfloat16(w[i]);
    for (int i = 0; i < OUT; i++) bb[i] = fb_float_to_bfloat16(b[i]);
    st = bgemm_bias_act(NULL, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, BATCH,
                        OUT, IN, 1.0f, xb, IN, wb, IN, 0.0f, yb, OUT, bb,
                        FB_ACT_GELU_ERF);
    if (st != FB_STATUS_SUCCESS) {
        fprintf(stderr, "bgemm_bias_act: %s (argument %d): %s\n",
                fb_status_string(st), fb_handle_last_arg(NULL),
                fb_handle_last_message(NULL));
        return EXIT_FAILURE;
    }
    /* Check against the inputs as the library saw them: rounded to bf16. */
    for (int i = 0; i < BATCH * IN; i++) xd[i] = fb_bfloat16_to_float(xb[i]);
    for (int i = 0; i < OUT * IN; i++) wd[i] = fb_bfloat16_to_float(wb[i]);
    for (int i = 0; i < OUT; i++) bd[i] = fb_bfloat16_to_float(bb[i]);
    for (int i = 0; i < BATCH * OUT; i++) yd[i] = fb_bfloat16_to_float(yb[i]);
    const double e16 = worst_error(yd, xd, wd, bd, 1.0 / 256);
    printf("bf16: y[0][0..3] = %.6f %.6f %.6f %.6f\n", yd[0], yd[1], yd[2],
           yd[3]);
    printf("bf16: worst error %.3f of the bound  (%s)\n", e16,
           fb_handle_last_path(NULL));

    return e32 <= 1.0 && e16 <= 1.0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
