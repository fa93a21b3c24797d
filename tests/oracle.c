/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oracle.c -- the naive double-precision reference. See oracle.h.
 *
 * Written to be read, not to be fast: op(A) and op(B)^T are first copied
 * into dense row-major arrays, so that every product is one plain dot
 * product over l = 0..k-1 (this is also what keeps the large GPU shapes
 * affordable).
 */
#include <math.h>
#include <stdlib.h>
#include "oracle.h"

double oracle_act(fb_activation act, double x)
{
    const double pi = 3.14159265358979323846;
    switch (act) {
    case FB_ACT_NONE:
        return x;
    case FB_ACT_RELU:
        return x > 0.0 || isnan(x) ? x : 0.0;
    case FB_ACT_GELU_TANH:
        if (x == -INFINITY)
            return 0.0; /* the limit; the formula gives -Inf * 0 */
        return 0.5 * x *
               (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    case FB_ACT_GELU_ERF:
        if (x == -INFINITY)
            return 0.0;
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case FB_ACT_SILU:
        if (x == -INFINITY)
            return 0.0;
        return x * (1.0 / (1.0 + exp(-x)));
    }
    return NAN; /* not an activation: make any comparison fail */
}

double oracle_round(fb_dtype dtype, double x)
{
    if (dtype == FB_DTYPE_F32)
        return (double)(float)x;
    /* p significant bits; the smallest normal number is 2^(emin-1), i.e.
     * frexp() gives it exponent emin; the largest finite is (2^p-1)2^(emax-p). */
    const int p = dtype == FB_DTYPE_F16 ? 11 : 8;
    const int emin = dtype == FB_DTYPE_F16 ? -13 : -125;
    const int emax = dtype == FB_DTYPE_F16 ? 16 : 128;
    const double largest = ldexp(ldexp(1.0, p) - 1.0, emax - p);
    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    int e;
    frexp(x, &e);
    if (e < emin)
        e = emin; /* subnormal range: a fixed quantum */
    const double quantum = ldexp(1.0, e - p);
    const double r = nearbyint(x / quantum) * quantum; /* ties to even */
    return fabs(r) > largest ? copysign(INFINITY, x) : r;
}

/* dst[r * cols + c] = op(X)(r, c), where op(X) is rows x cols and X is
 * stored in layout with leading dimension ld. */
static double *dense_op(fb_layout layout, fb_transpose trans, int64_t rows,
                        int64_t cols, const double *X, int64_t ld)
{
    double *dst = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) *
                         sizeof *dst);
    if (dst == NULL)
        abort(); /* a test program, not the library */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[r * cols + c] = trans == FB_NO_TRANS
                                    ? X[oracle_at(layout, r, c, ld)]
                                    : X[oracle_at(layout, c, r, ld)];
    return dst;
}

/* The transpose flag for op(B)^T, so that its rows are B's columns. */
static fb_transpose flip(fb_transpose t)
{
    return t == FB_NO_TRANS ? FB_TRANS : FB_NO_TRANS;
}

void oracle_gemm_bias_act(fb_layout layout, fb_transpose transa,
                          fb_transpose transb, int64_t m, int64_t n,
                          int64_t k, double alpha, const double *A,
                          int64_t lda, const double *B, int64_t ldb,
                          double beta, double *C, int64_t ldc,
                          const double *bias, fb_activation act)
{
    double *opa = dense_op(layout, transa, m, k, A, lda);     /* m x k */
    double *opbt = dense_op(layout, flip(transb), n, k, B, ldb); /* n x k */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double dot = 0.0;
            for (int64_t l = 0; l < k; l++)
                dot += opa[i * k + l] * opbt[j * k + l];
            double *c = &C[oracle_at(layout, i, j, ldc)];
            double z = alpha * dot;
            if (beta != 0.0)
                z += beta * *c;
            if (bias != NULL)
                z += bias[j];
            *c = oracle_act(act, z);
        }
    free(opa);
    free(opbt);
}

void oracle_gemm_gauge(fb_layout layout, fb_transpose transa,
                       fb_transpose transb, int64_t m, int64_t n, int64_t k,
                       double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta,
                       const double *C, int64_t ldc, const double *bias,
                       double *G)
{
    double *opa = dense_op(layout, transa, m, k, A, lda);
    double *opbt = dense_op(layout, flip(transb), n, k, B, ldb);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0.0;
            for (int64_t l = 0; l < k; l++)
                sum += fabs(opa[i * k + l]) * fabs(opbt[j * k + l]);
            const int64_t at = oracle_at(layout, i, j, ldc);
            double g = fabs(alpha) * sum;
            if (beta != 0.0)
                g += fabs(beta) * fabs(C[at]);
            if (bias != NULL)
                g += fabs(bias[j]);
            G[at] = g;
        }
    free(opa);
    free(opbt);
}

void oracle_mlp_geglu(fb_dtype dtype, fb_activation gate_act, int64_t m,
                      int64_t k, int64_t h, int64_t n, const double *X,
                      int64_t ldx, const double *Wg, const double *bg,
                      const double *Wu, const double *bu, const double *Wd,
                      const double *bd, double *Y, int64_t ldy,
                      double *Hout)
{
    double *H = malloc((size_t)(h > 0 ? h : 1) * sizeof *H); /* one row */
    if (H == NULL)
        abort();
    for (int64_t i = 0; i < m; i++) {
        const double *x = &X[i * ldx];
        for (int64_t j = 0; j < h; j++) {
            double g = 0.0, u = 0.0;
            for (int64_t l = 0; l < k; l++) {
                g += x[l] * Wg[j * k + l];
                u += x[l] * Wu[j * k + l];
            }
            if (bg != NULL)
                g += bg[j];
            if (bu != NULL)
                u += bu[j];
            H[j] = oracle_act(gate_act, g) * u;
            if (dtype != FB_DTYPE_F32)
                H[j] = oracle_round(dtype, H[j]);
            if (Hout != NULL)
                Hout[i * h + j] = H[j];
        }
        for (int64_t c = 0; c < n; c++) {
            double y = 0.0;
            for (int64_t j = 0; j < h; j++)
                y += H[j] * Wd[c * h + j];
            if (bd != NULL)
                y += bd[c];
            Y[i * ldy + c] = y;
        }
    }
    free(H);
}
