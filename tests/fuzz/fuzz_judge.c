/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_judge.c -- expected outputs and their bounds. See fuzz_judge.h.
 *
 * The bound, per element of gemm_bias_act (u = 2^-24, fp32 accumulation
 * for every type; gamma(j) = j u / (1 - j u)):
 *
 *   G  = |alpha| sum_l |op(A)(i,l)| |op(B)(l,j)| + |beta C(i,j)| + |bias(j)|
 *   dz = gamma(k + 4) G + (k + 4) (1 + |alpha|) 2^-149
 *        (k products and k - 1 sums, alpha, beta C, the bias: at most k + 4
 *        roundings on any path; 2^-149 is the absolute part of one fp32
 *        rounding in the subnormal range, and alpha scales the product
 *        after its terms were rounded, as BLAS does: a product that
 *        underflowed to 0 stays 0 however large alpha is)
 *   da = slope(act) dz + eval(act) 2^-24 (|z| + dz) + 8 * 2^-149
 *        (slope: sup |act'|; eval: the activation's own evaluation error
 *        in units of 2^-24 |x|: 0 for none and relu, 8 for the others)
 *   bound = da + u_out (|ref| + da) + tiny_out    (the one store to C)
 *
 * mlp_geglu_forward composes the same pieces: the gate and up sums (k + 1
 * roundings each), the activation, their product, H rounded to the input
 * type (16-bit; the oracle rounds its own H too, so both roundings count),
 * then the down sum (h + 1 roundings) with the H errors carried through
 * |Wd|. fp32 cannot overflow on the way while every such magnitude stays
 * below 2^127 (half of FLT_MAX's binade, room for the rounding); above it
 * the element is marked ovf.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_data.h"
#include "fuzz_judge.h"
#include "oracle.h"

#define U32 0x1p-24
#define TINY32 0x1p-149
#define F32_SAFE 0x1p127

static double gamma_n(double j)
{
    return j * U32 / (1.0 - j * U32);
}

static double act_slope(fb_activation act)
{
    switch (act) {
    case FB_ACT_GELU_TANH:
    case FB_ACT_GELU_ERF:
        return 1.13; /* max of GELU' is 1.1289..., at x = 1.4 */
    case FB_ACT_SILU:
        return 1.10; /* max of SiLU' is 1.0998..., at x = 2.4 */
    default:
        return 1.0;
    }
}

static double act_eval(fb_activation act)
{
    return act == FB_ACT_NONE || act == FB_ACT_RELU ? 0.0 : 8.0 * U32;
}

const char *fz_kind_name(fz_kind k)
{
    switch (k) {
    case FZ_BOUNDED: return "bounded";
    case FZ_NAN: return "nan";
    case FZ_IEEE: return "ieee";
    case FZ_ANY: return "any";
    }
    return "?";
}

int fz_judge(double got, const fz_expect *e)
{
    switch (e->kind) {
    case FZ_ANY:
        return 1;
    case FZ_NAN:
        return isnan(got);
    case FZ_IEEE:
        if (isnan(e->ref))
            return isnan(got);
        if (isnan(got))
            return e->ovf;
        return got == e->ref;
    case FZ_BOUNDED:
        /* The oracle's own H overflowed the 16-bit type (mlp): only
         * possible near the threshold, which sets ovf. */
        if (!isfinite(e->ref))
            return e->ovf;
        if (isnan(got) || (e->ovf && got == e->ovf_act))
            return e->ovf;
        /* An infinite result is the output type's rounding of a value
         * in [ref - bound, ref + bound] that reached the threshold on
         * its side. The sign is that of ref only while the bound is
         * smaller than |ref|; where cancellation makes the bound larger,
         * either side may be reached (fuzz input
         * hgemm_fp16_inf_either_sign: ref -6.6e23, bound 2.1e26, +Inf). */
        if (isinf(got))
            return e->ovf || (got > 0 ? e->ref + e->bound >= e->thr
                                      : e->ref - e->bound <= -e->thr);
        return fabs(got - e->ref) <= e->bound;
    }
    return 0;
}

/* ---- gemm_bias_act ---------------------------------------------------------- */

typedef struct gemm_view {
    const fz_gemm *g;
    const double *A, *B;
} gemm_view;

static double op_a(const gemm_view *v, int64_t i, int64_t l)
{
    const fz_gemm *g = v->g;
    return g->transa == FB_NO_TRANS ? v->A[oracle_at(g->layout, i, l, g->lda)]
                                    : v->A[oracle_at(g->layout, l, i, g->lda)];
}

static double op_b(const gemm_view *v, int64_t l, int64_t j)
{
    const fz_gemm *g = v->g;
    return g->transb == FB_NO_TRANS ? v->B[oracle_at(g->layout, l, j, g->ldb)]
                                    : v->B[oracle_at(g->layout, j, l, g->ldb)];
}

/* What reaches one element: flags and the finite part's magnitudes. */
typedef struct reach {
    int nan, inf;
    double S;          /* sum |a||b| over finite pairs */
    double amax, bmax; /* largest finite |a|, |b| */
} reach;

static void note(reach *r, double x)
{
    r->nan |= isnan(x);
    r->inf |= isinf(x);
}

/* One reading of the call: the product term has k_eff terms and factor
 * alpha_eff (k_eff = 0: the zero matrix). */
static void gemm_reading(const fz_gemm *g, int64_t k_eff, double alpha_eff,
                         const double *A, const double *B, const double *C0,
                         const double *bias, fz_expect *E)
{
    const fz_stored cs = fz_gemm_c(g);
    const int64_t nc = fz_extent(&cs, fz_size(g->dtype));
    const size_t bytes = (size_t)(nc > 0 ? nc : 1) * sizeof(double);
    double *Z = malloc(bytes), *R = malloc(bytes);
    if (Z == NULL || R == NULL)
        abort(); /* the fuzzer's own memory, not the library's */
    memcpy(Z, C0, (size_t)(nc > 0 ? nc : 0) * sizeof(double));
    memcpy(R, C0, (size_t)(nc > 0 ? nc : 0) * sizeof(double));
    const double beta = g->beta;
    oracle_gemm_bias_act(g->layout, g->transa, g->transb, g->m, g->n, k_eff,
                         alpha_eff, A, g->lda, B, g->ldb, beta, Z, g->ldc,
                         bias, FB_ACT_NONE);
    oracle_gemm_bias_act(g->layout, g->transa, g->transb, g->m, g->n, k_eff,
                         alpha_eff, A, g->lda, B, g->ldb, beta, R, g->ldc,
                         bias, g->act);

    const gemm_view v = {g, A, B};
    const double u_out = fz_unit(g->dtype), tiny_out = fz_tiny(g->dtype);
    const double thr = fz_overflow_threshold(g->dtype);
    const double slope = act_slope(g->act), eval = act_eval(g->act);
    const double kk = (double)k_eff + 4.0;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            reach r = {0, 0, 0.0, 0.0, 0.0};
            for (int64_t l = 0; l < k_eff; l++) {
                const double a = op_a(&v, i, l), b = op_b(&v, l, j);
                note(&r, a);
                note(&r, b);
                if (isfinite(a) && isfinite(b)) {
                    r.S += fabs(a) * fabs(b);
                    r.amax = fmax(r.amax, fabs(a));
                    r.bmax = fmax(r.bmax, fabs(b));
                }
            }
            int scalar_inf = 0;
            double G = 0.0;
            if (k_eff > 0) {
                note(&r, alpha_eff);
                scalar_inf |= isinf(alpha_eff);
                if (isfinite(alpha_eff))
                    G += fabs(alpha_eff) * r.S;
            }
            const int64_t at = oracle_at(g->layout, i, j, g->ldc);
            if (beta != 0.0) { /* NaN != 0: C is read */
                note(&r, beta);
                note(&r, C0[at]);
                scalar_inf |= isinf(beta);
                if (isfinite(beta) && isfinite(C0[at]))
                    G += fabs(beta) * fabs(C0[at]);
            }
            if (bias != NULL) {
                note(&r, bias[j]);
                if (isfinite(bias[j]))
                    G += fabs(bias[j]);
            }
            const double fa = isfinite(alpha_eff) ? fabs(alpha_eff) : 0.0;
            const double peak = fmax(fmax(r.S, fa * r.S),
                                     fmax(fmax(fa * r.amax, fa * r.bmax), G));

            fz_expect *e = &E[at];
            e->ref = R[at];
            e->thr = thr;
            e->ovf = peak * (1.0 + gamma_n(kk)) >= F32_SAFE;
            e->ovf_act = oracle_act(g->act, -INFINITY);
            e->bound = 0.0;
            if (r.nan) {
                e->kind = FZ_NAN;
            } else if (scalar_inf) {
                e->kind = FZ_ANY;
            } else if (r.inf) {
                e->kind = FZ_IEEE;
            } else {
                e->kind = FZ_BOUNDED;
                const double dz = gamma_n(kk) * G + kk * (1.0 + fa) * TINY32;
                const double da = slope * dz + eval * (fabs(Z[at]) + dz) +
                                  8.0 * TINY32;
                e->bound = da + u_out * (fabs(R[at]) + da) + tiny_out;
            }
        }
    free(Z);
    free(R);
}

int fz_gemm_expectations(const fz_gemm *g, const double *A, const double *B,
                         const double *C0, const double *bias, fz_expect *E,
                         fz_expect *E_blas)
{
    /* k == 0: the product is the zero matrix (the man page), so alpha,
     * even a NaN, does not reach C. */
    gemm_reading(g, g->k, g->k > 0 ? (double)g->alpha : 0.0, A, B, C0, bias,
                 E);
    if (E_blas == NULL || !(g->alpha == 0.0f && g->k > 0))
        return 0;
    gemm_reading(g, 0, 0.0, A, B, C0, bias, E_blas);
    return 1;
}

/* ---- mlp_geglu_forward ---------------------------------------------------------- */

/* NaN and Inf among n values, 0 if none. */
static void scan(const double *x, int64_t n, int *nan, int *inf)
{
    for (int64_t i = 0; i < n; i++) {
        *nan |= isnan(x[i]);
        *inf |= isinf(x[i]);
    }
}

void fz_mlp_expectations(const fz_mlp *p, const double *X, const double *Wg,
                         const double *bg, const double *Wu, const double *bu,
                         const double *Wd, const double *bd, fz_expect *E)
{
    const int64_t m = p->m, k = p->k, h = p->h, n = p->n;
    const fz_stored ys = fz_mlp_y(p);
    const int64_t ny = fz_extent(&ys, fz_size(p->dtype));
    double *Y = calloc((size_t)(ny > 0 ? ny : 1), sizeof *Y);
    double *H = calloc((size_t)(m * h > 0 ? m * h : 1), sizeof *H);
    double *dH = calloc((size_t)(h > 0 ? h : 1), sizeof *dH);
    if (Y == NULL || H == NULL || dH == NULL)
        abort();
    /* With k == 0, X is not read and ldx may be huge: keep the oracle's
     * row addresses inside the image. */
    const int64_t ldx = k > 0 ? p->ldx : 1;
    oracle_mlp_geglu(p->dtype, p->act, m, k, h, n, X, ldx, Wg, bg, Wu, bu,
                     Wd, bd, Y, p->ldy, H);

    const int wide = p->dtype != FB_DTYPE_F32;
    const double u_mid = fz_unit(p->dtype), tiny_mid = fz_tiny(p->dtype);
    const double thr = fz_overflow_threshold(p->dtype);
    const double slope = act_slope(p->act), eval = act_eval(p->act);

    /* NaN or Inf in the gate and up weights reaches every element. */
    int nan_w = 0, inf_w = 0;
    if (h > 0) {
        if (k > 0) {
            scan(Wg, h * k, &nan_w, &inf_w);
            scan(Wu, h * k, &nan_w, &inf_w);
        }
        if (bg != NULL)
            scan(bg, h, &nan_w, &inf_w);
        if (bu != NULL)
            scan(bu, h, &nan_w, &inf_w);
    }

    for (int64_t i = 0; i < m; i++) {
        const double *x = &X[i * ldx];
        int nan_x = 0, inf_x = 0, ovf_row = 0;
        if (h > 0 && k > 0)
            scan(x, k, &nan_x, &inf_x);
        const int row_finite = !nan_x && !inf_x && !nan_w && !inf_w;
        for (int64_t j = 0; row_finite && j < h; j++) {
            double g = bg ? bg[j] : 0.0, sg = bg ? fabs(bg[j]) : 0.0;
            double u = bu ? bu[j] : 0.0, su = bu ? fabs(bu[j]) : 0.0;
            for (int64_t l = 0; l < k; l++) {
                g += x[l] * Wg[j * k + l];
                sg += fabs(x[l] * Wg[j * k + l]);
                u += x[l] * Wu[j * k + l];
                su += fabs(x[l] * Wu[j * k + l]);
            }
            const double kk = (double)k + 1.0;
            const double eg = gamma_n(kk) * sg + kk * TINY32;
            const double eu = gamma_n(kk) * su + kk * TINY32;
            const double a = oracle_act(p->act, g);
            const double ea = slope * eg + eval * (fabs(g) + eg) + 8.0 * TINY32;
            const double hd = a * u;
            double eh = ea * (fabs(u) + eu) + fabs(a) * eu +
                        U32 * (fabs(a) + ea) * (fabs(u) + eu) + TINY32;
            if (wide) {
                /* Both the library's and the oracle's H are rounded. */
                ovf_row |= (fabs(hd) + eh) * (1.0 + 2.0 * u_mid) >= thr;
                eh += u_mid * (2.0 * fabs(hd) + eh) + 2.0 * tiny_mid;
            }
            ovf_row |= fmax(fmax(sg, su), (fabs(a) + ea) * (fabs(u) + eu)) >=
                       F32_SAFE;
            dH[j] = eh;
        }
        for (int64_t c = 0; c < n; c++) {
            int nan_c = nan_x || nan_w, inf_c = inf_x || inf_w;
            if (h > 0)
                scan(&Wd[c * h], h, &nan_c, &inf_c);
            if (bd != NULL)
                scan(&bd[c], 1, &nan_c, &inf_c);
            fz_expect *e = &E[i * p->ldy + c];
            e->ref = Y[i * p->ldy + c];
            e->thr = thr;
            e->bound = 0.0;
            e->ovf = ovf_row;
            e->ovf_act = -INFINITY; /* the down projection has no activation */
            if (nan_c) {
                e->kind = FZ_NAN;
                continue;
            }
            /* A gate whose activation has a finite limit at -Inf (all but
             * none) turns an overflowed pre-activation into 0. */
            if (inf_c || (ovf_row && isfinite(oracle_act(p->act, -INFINITY)))) {
                e->kind = FZ_ANY;
                continue;
            }
            double sy = bd ? fabs(bd[c]) : 0.0, prop = 0.0;
            for (int64_t j = 0; j < h; j++) {
                const double w = fabs(Wd[c * h + j]);
                sy += (fabs(H[i * h + j]) + dH[j]) * w;
                prop += dH[j] * w;
            }
            const double hh = (double)h + 1.0;
            const double ey = prop + gamma_n(hh) * sy + hh * TINY32;
            e->kind = FZ_BOUNDED;
            e->ovf |= sy >= F32_SAFE;
            e->bound = ey + u_mid * (fabs(e->ref) + ey) + tiny_mid;
        }
    }
    free(Y);
    free(H);
    free(dH);
}
