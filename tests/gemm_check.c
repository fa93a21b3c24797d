/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gemm_check.c -- run and check gemm_bias_act cases; the conformance
 * sweeps. See gemm_check.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "oracle.h"

int64_t shape_min_ld(fb_layout layout, int64_t rows, int64_t cols)
{
    const int64_t len = layout == FB_ROW_MAJOR ? cols : rows;
    return len > 1 ? len : 1;
}

tshape gemm_shape_a(const gemm_case *c)
{
    const int t = c->transa != FB_NO_TRANS;
    tshape s = {c->layout, t ? c->k : c->m, t ? c->m : c->k, c->lda};
    return s;
}

tshape gemm_shape_b(const gemm_case *c)
{
    const int t = c->transb != FB_NO_TRANS;
    tshape s = {c->layout, t ? c->n : c->k, t ? c->k : c->n, c->ldb};
    return s;
}

tshape gemm_shape_c(const gemm_case *c)
{
    tshape s = {c->layout, c->m, c->n, c->ldc};
    return s;
}

void gemm_case_set_lds(gemm_case *c, int64_t pad_a, int64_t pad_b,
                       int64_t pad_c)
{
    tshape s;
    c->lda = c->ldb = c->ldc = 1;
    s = gemm_shape_a(c);
    c->lda = shape_min_ld(c->layout, s.rows, s.cols) + pad_a;
    s = gemm_shape_b(c);
    c->ldb = shape_min_ld(c->layout, s.rows, s.cols) + pad_b;
    c->ldc = shape_min_ld(c->layout, c->m, c->n) + pad_c;
}

void gemm_data_make(gemm_data *d, const gemm_case *c)
{
    d->c = *c;
    d->sa = gemm_shape_a(c);
    d->sb = gemm_shape_b(c);
    d->sc = gemm_shape_c(c);
    const tshape sbias = {FB_ROW_MAJOR, 1, c->n, c->n > 1 ? c->n : 1};
    d->sbias = sbias;
    tbuf_init(&d->A, c->dtype, tshape_nelem(&d->sa), c->offset);
    tbuf_init(&d->B, c->dtype, tshape_nelem(&d->sb), c->offset);
    tbuf_init(&d->C, c->dtype, tshape_nelem(&d->sc), c->offset);
    tbuf_init(&d->bias, c->dtype, tshape_nelem(&d->sbias), c->offset);
    fill_random(&d->A, &d->sa);
    fill_random(&d->B, &d->sb);
    if (c->beta != 0.0f)
        fill_random(&d->C, &d->sc);
    else
        fill_poison(&d->C, &d->sc);
    if (c->has_bias)
        fill_random(&d->bias, &d->sbias);
}

void gemm_data_free(gemm_data *d)
{
    tbuf_free(&d->A);
    tbuf_free(&d->B);
    tbuf_free(&d->C);
    tbuf_free(&d->bias);
}

fb_status gemm_call(fb_handle h, fb_dtype dtype, fb_layout layout,
                    fb_transpose transa, fb_transpose transb, int64_t m,
                    int64_t n, int64_t k, float alpha, const void *A,
                    int64_t lda, const void *B, int64_t ldb, float beta,
                    void *C, int64_t ldc, const void *bias, fb_activation act)
{
    switch (dtype) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, layout, transa, transb, m, n, k, alpha, A,
                              lda, B, ldb, beta, C, ldc, bias, act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, layout, transa, transb, m, n, k, alpha, A,
                              lda, B, ldb, beta, C, ldc, bias, act);
    case FB_DTYPE_BF16:
        return bgemm_bias_act(h, layout, transa, transb, m, n, k, alpha, A,
                              lda, B, ldb, beta, C, ldc, bias, act);
    }
    return FB_STATUS_INTERNAL;
}

static char trans_char(fb_transpose t)
{
    return t == FB_NO_TRANS ? 'N' : t == FB_TRANS ? 'T' : 'C';
}

void gemm_case_label(const gemm_case *c, char *buf, size_t len)
{
    snprintf(buf, len,
             "%cgemm %s %c%c m=%lld n=%lld k=%lld ld=%lld/%lld/%lld "
             "alpha=%g beta=%g %s %s off=%lld%s%s",
             dt_prefix(c->dtype), c->layout == FB_ROW_MAJOR ? "row" : "col",
             trans_char(c->transa), trans_char(c->transb), (long long)c->m,
             (long long)c->n, (long long)c->k, (long long)c->lda,
             (long long)c->ldb, (long long)c->ldc, (double)c->alpha,
             (double)c->beta, c->has_bias ? "bias" : "nobias",
             act_name(c->act), (long long)c->offset, c->note ? ": " : "",
             c->note ? c->note : "");
}

/* What one target did with the case. */
typedef struct gemm_run {
    fb_status status;
    int skipped;   /* not supported, and allowed to say so */
    char message[256];
    tbuf C;        /* C's image read back */
} gemm_run;

/* Place the operands in t's memory, call, read everything back; record in
 * chk every byte outside the C window that changed, a wrong status and a
 * wrong path. */
static void run_target(const gemm_data *d, const target *t, tcheck *chk,
                       gemm_run *r)
{
    const gemm_case *c = &d->c;
    void *pa, *pb, *pc, *pbias;
    void *aa = tbuf_place(&d->A, t->mem, &pa);
    void *ab = tbuf_place(&d->B, t->mem, &pb);
    void *ac = tbuf_place(&d->C, t->mem, &pc);
    void *abias = tbuf_place(&d->bias, t->mem, &pbias);

    r->status = gemm_call(t->handle, c->dtype, c->layout, c->transa,
                          c->transb, c->m, c->n, c->k, c->alpha, pa, c->lda,
                          pb, c->ldb, c->beta, pc, c->ldc,
                          c->has_bias ? pbias : NULL, c->act);
    snprintf(r->message, sizeof r->message, "%s",
             fb_handle_last_message(t->handle));
    const fb_backend ran = fb_handle_last_backend(t->handle);

    tbuf after;
    tbuf_fetch(&d->A, t->mem, aa, &after);
    check_untouched(chk, "A", &d->A, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->B, t->mem, ab, &after);
    check_untouched(chk, "B", &d->B, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->bias, t->mem, abias, &after);
    check_untouched(chk, "bias", &d->bias, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->C, t->mem, ac, &r->C);
    t->mem->release(aa);
    t->mem->release(ab);
    t->mem->release(ac);
    t->mem->release(abias);

    r->skipped = 0;
    if (r->status == FB_STATUS_NOT_SUPPORTED && t->not_supported_skips) {
        r->skipped = 1;
        check_untouched(chk, "C (not supported)", &d->C, &r->C, NULL);
        return;
    }
    if (r->status != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "status %s, argument %d: %s",
                    fb_status_string(r->status),
                    fb_handle_last_arg(t->handle), r->message);
        return;
    }
    if (!target_ran_expected(t, ran))
        tcheck_fail(chk, "ran on %s (path \"%s\"), expected %s",
                    fb_backend_name(ran), fb_handle_last_path(t->handle),
                    fb_backend_name(t->expect));
    check_untouched(chk, "C", &d->C, &r->C, &d->sc);
}

/* The oracle's view of a case: pre-activation Z, gauge G. */
typedef struct gemm_ref {
    double *Z, *G;
} gemm_ref;

static void make_ref(const gemm_data *d, gemm_ref *ref)
{
    const gemm_case *c = &d->c;
    double *A = tbuf_to_double(&d->A), *B = tbuf_to_double(&d->B);
    double *bias = c->has_bias ? tbuf_to_double(&d->bias) : NULL;
    double *C0 = tbuf_to_double(&d->C);
    ref->Z = tbuf_to_double(&d->C);
    ref->G = tbuf_to_double(&d->C);
    oracle_gemm_bias_act(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                         c->alpha, A, c->lda, B, c->ldb, c->beta, ref->Z,
                         c->ldc, bias, FB_ACT_NONE);
    oracle_gemm_gauge(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                      c->alpha, A, c->lda, B, c->ldb, c->beta, C0, c->ldc,
                      bias, ref->G);
    free(A);
    free(B);
    free(bias);
    free(C0);
}

/* Check r's C window against the oracle, and against the witness w (with
 * bound tol tw) if w is not NULL. */
static void check_values(const gemm_data *d, const gemm_ref *ref,
                         const tol *tt, const gemm_run *r, const tol *tw,
                         const gemm_run *w, const char *wname, tcheck *chk)
{
    const gemm_case *c = &d->c;
    const void *got = tbuf_data(&r->C);
    const void *wit = w ? tbuf_data(&w->C) : NULL;
    int64_t i, j, nbad = 0, nwit = 0;
    for (int64_t e = 0; e < d->C.nelem; e++) {
        if (!tshape_window(&d->sc, e, &i, &j))
            continue;
        const double y = dt_get(c->dtype, got, e);
        const double z = ref->Z[e];
        const double want = oracle_act(c->act, z);
        const double bound = tol_gemm(tt, c->k, c->act, ref->G[e], want);
        double ratio;
        if (judge(y, want, z, c->act, bound, &ratio)) {
            if (nbad++ < 3)
                tcheck_fail(chk, "C(%lld,%lld) = %.9g, oracle %.9g "
                            "(pre-activation %.9g), |error| %.3g > bound "
                            "%.3g (gauge %.3g)",
                            (long long)i, (long long)j, y, want, z,
                            fabs(y - want), bound, ref->G[e]);
            else
                chk->failed = 1, chk->nproblems++;
        }
        if (ratio > chk->worst)
            chk->worst = ratio;
        if (w == NULL || w->status != FB_STATUS_SUCCESS)
            continue;
        const double yw = dt_get(c->dtype, wit, e);
        int agree;
        if (isfinite(want) && isfinite(bound))
            agree = fabs(y - yw) <= bound + tol_gemm(tw, c->k, c->act,
                                                     ref->G[e], want);
        else
            agree = (isnan(y) && isnan(yw)) || y == yw;
        if (!agree && nwit++ < 2)
            tcheck_fail(chk, "C(%lld,%lld) = %.9g but %s gives %.9g "
                        "(oracle %.9g)", (long long)i, (long long)j, y,
                        wname, yw, want);
        else if (!agree)
            chk->failed = 1, chk->nproblems++;
    }
}

int gemm_check(const gemm_data *d, const target *t, int nt,
               const target *cross)
{
    const gemm_case *c = &d->c;
    char label[256];
    gemm_case_label(c, label, sizeof label);
    gemm_ref ref;
    make_ref(d, &ref);
    int failed = 0;

    gemm_run wit;
    tol tw = {0, 0, 0, 0, 0, 0};
    int have_wit = 0;
    if (cross != NULL) {
        tcheck chk;
        tcheck_init(&chk);
        run_target(d, cross, &chk, &wit);
        tw = target_tol(cross, c->dtype);
        if (!chk.failed && !wit.skipped)
            check_values(d, &ref, &tw, &wit, NULL, NULL, NULL, &chk);
        failed += !tap_check(&chk, "%s %s", cross->name, label);
        have_wit = 1;
    }
    for (int ti = 0; ti < nt; ti++) {
        if (t[ti].f32_only && c->dtype != FB_DTYPE_F32)
            continue;
        tcheck chk;
        tcheck_init(&chk);
        gemm_run r;
        run_target(d, &t[ti], &chk, &r);
        if (r.skipped && !chk.failed) {
            tap_skip("%s %s: not supported (%s)", t[ti].name, label,
                     r.message);
            tbuf_free(&r.C);
            continue;
        }
        if (r.status == FB_STATUS_SUCCESS) {
            const tol tt = target_tol(&t[ti], c->dtype);
            check_values(d, &ref, &tt, &r, &tw, have_wit ? &wit : NULL,
                         cross ? cross->name : NULL, &chk);
        }
        failed += !tap_check(&chk, "%s %s", t[ti].name, label);
        tbuf_free(&r.C);
    }
    if (have_wit)
        tbuf_free(&wit.C);
    free(ref.Z);
    free(ref.G);
    return failed;
}

/* ---- sweeps ---------------------------------------------------------------- */

static const int64_t sizes[10] = {0, 1, 2, 3, 7, 16, 33, 64, 127, 257};
static const float alphas[3] = {0.0f, 1.0f, 0.7f};
static const float betas[3] = {0.0f, 1.0f, 1.3f};
static const fb_transpose transes[2] = {FB_NO_TRANS, FB_TRANS};
static const fb_layout layouts[2] = {FB_ROW_MAJOR, FB_COL_MAJOR};

/* Padding of a leading dimension: half the time none, else 1 to 4. */
static int64_t random_pad(void)
{
    return rng_below(2) ? 1 + rng_below(4) : 0;
}

static void run_case(gemm_case *c, const target *t, int nt,
                     const target *cross)
{
    gemm_case_set_lds(c, random_pad(), random_pad(), random_pad());
    c->offset = rng_below(2);
    gemm_data d;
    gemm_data_make(&d, c);
    gemm_check(&d, t, nt, cross);
    gemm_data_free(&d);
}

void gemm_sweep_conformance(const target *t, int nt, const target *cross)
{
    /* Shapes: ten triples in which each size appears once as m, once as n
     * and once as k, plus four where all three are large. */
    int64_t shapes[14][3];
    for (int i = 0; i < 10; i++) {
        shapes[i][0] = sizes[i];
        shapes[i][1] = sizes[(i + 3) % 10];
        shapes[i][2] = sizes[(i + 7) % 10];
    }
    const int64_t big[4][3] = {
        {127, 64, 257}, {257, 127, 33}, {33, 257, 127}, {64, 64, 64}};
    memcpy(shapes[10], big, sizeof big);

    /* Every dtype, layout, transpose pair and shape; alpha, beta, bias and
     * activation cycle through all 90 combinations along the way. */
    int idx = 0;
    for (int di = 0; di < 3; di++)
        for (int li = 0; li < 2; li++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (int si = 0; si < 14; si++, idx++) {
                        gemm_case c = {0};
                        c.dtype = all_dtypes[di];
                        c.layout = layouts[li];
                        c.transa = transes[ta];
                        c.transb = transes[tb];
                        c.m = shapes[si][0];
                        c.n = shapes[si][1];
                        c.k = shapes[si][2];
                        c.alpha = alphas[idx % 3];
                        c.beta = betas[(idx / 3) % 3];
                        c.has_bias = (idx / 9) % 2;
                        c.act = all_acts[(idx / 18) % N_ACTS];
                        run_case(&c, t, nt, cross);
                    }

    /* The full epilogue product (dtype x activation x alpha x beta x bias)
     * on two mid-sized shapes, layout and transposes drawn at random. */
    const int64_t mid[2][3] = {{33, 16, 64}, {7, 33, 16}};
    for (int di = 0; di < 3; di++)
        for (int ai = 0; ai < N_ACTS; ai++)
            for (int al = 0; al < 3; al++)
                for (int be = 0; be < 3; be++)
                    for (int bi = 0; bi < 2; bi++) {
                        const int s = (int)rng_below(2);
                        gemm_case c = {0};
                        c.dtype = all_dtypes[di];
                        c.layout = layouts[rng_below(2)];
                        c.transa = transes[rng_below(2)];
                        c.transb = transes[rng_below(2)];
                        c.m = mid[s][0];
                        c.n = mid[s][1];
                        c.k = mid[s][2];
                        c.alpha = alphas[al];
                        c.beta = betas[be];
                        c.has_bias = bi;
                        c.act = all_acts[ai];
                        run_case(&c, t, nt, cross);
                    }
}

void gemm_sweep_activations(const target *t, int nt, const target *cross)
{
    /* x on a grid of step 0.1 over [-12, 12], then large and small |x|. */
    double xs[300];
    int nx = 0;
    for (int i = -120; i <= 120; i++)
        xs[nx++] = i / 10.0;
    const double extra[] = {20, 50, 300, 3000, 30000, 1e-3, 1e-5, 0.3333};
    for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
        xs[nx++] = extra[e];
        xs[nx++] = -extra[e];
    }
    for (int di = 0; di < 3; di++)
        for (int ai = 0; ai < N_ACTS; ai++) {
            /* C (1 x nx) = act(1 * [1] * B): the pre-activation is x,
             * exactly. */
            gemm_case c = {0};
            c.dtype = all_dtypes[di];
            c.layout = FB_ROW_MAJOR;
            c.transa = c.transb = FB_NO_TRANS;
            c.m = 1, c.n = nx, c.k = 1;
            c.alpha = 1.0f;
            c.beta = 0.0f;
            c.act = all_acts[ai];
            c.note = "activation curve";
            gemm_case_set_lds(&c, 0, 0, 0);
            gemm_data d;
            gemm_data_make(&d, &c);
            dt_set(c.dtype, tbuf_data(&d.A), 0, 1.0);
            for (int e = 0; e < nx; e++)
                dt_set(c.dtype, tbuf_data(&d.B), e,
                       oracle_round(c.dtype, xs[e]));
            gemm_check(&d, t, nt, cross);
            gemm_data_free(&d);
        }
}
