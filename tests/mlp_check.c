/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_check.c -- run and check mlp_geglu_forward cases; the sweeps.
 * See mlp_check.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mlp_check.h"
#include "oracle.h"

static tshape row_major(int64_t rows, int64_t cols, int64_t ld)
{
    tshape s = {FB_ROW_MAJOR, rows, cols, ld};
    return s;
}

static int64_t at_least_1(int64_t v)
{
    return v > 1 ? v : 1;
}

/* Fresh random values times scale, as stored in the buffer's type (never
 * zero), in the window of s. */
static void fill_scaled(tbuf *b, const tshape *s, double scale)
{
    void *data = tbuf_data(b);
    int64_t i, j;
    for (int64_t e = 0; e < b->nelem; e++) {
        if (!tshape_window(s, e, &i, &j))
            continue;
        do
            dt_set(b->dtype, data, e,
                   oracle_round(b->dtype, rng_value(b->dtype) * scale));
        while (dt_get(b->dtype, data, e) == 0.0);
    }
}

void mlp_data_make(mlp_data *d, const mlp_case *c)
{
    d->c = *c;
    d->sx = row_major(c->m, c->k, c->ldx);
    d->swg = row_major(c->h, c->k, at_least_1(c->k));
    d->swu = d->swg;
    d->swd = row_major(c->n, c->h, at_least_1(c->h));
    d->sbg = row_major(1, c->h, at_least_1(c->h));
    d->sbu = d->sbg;
    d->sbd = row_major(1, c->n, at_least_1(c->n));
    d->sy = row_major(c->m, c->n, c->ldy);
    const struct {
        tbuf *b;
        const tshape *s;
    } all[8] = {{&d->X, &d->sx},   {&d->Wg, &d->swg}, {&d->Wu, &d->swu},
                {&d->Wd, &d->swd}, {&d->bg, &d->sbg}, {&d->bu, &d->sbu},
                {&d->bd, &d->sbd}, {&d->Y, &d->sy}};
    for (int i = 0; i < 8; i++)
        tbuf_init(all[i].b, c->dtype, tshape_nelem(all[i].s), c->offset);
    /* nn.Linear's scale, 1/sqrt(fan_in), keeps every intermediate O(1),
     * so that fp16 cannot overflow at the widths of real models. */
    fill_random(&d->X, &d->sx);
    fill_scaled(&d->Wg, &d->swg, 1.0 / sqrt((double)at_least_1(c->k)));
    fill_scaled(&d->Wu, &d->swu, 1.0 / sqrt((double)at_least_1(c->k)));
    fill_scaled(&d->Wd, &d->swd, 1.0 / sqrt((double)at_least_1(c->h)));
    fill_random(&d->bg, &d->sbg);
    fill_random(&d->bu, &d->sbu);
    fill_random(&d->bd, &d->sbd);
    fill_poison(&d->Y, &d->sy);
}

void mlp_data_free(mlp_data *d)
{
    tbuf *all[8] = {&d->X, &d->Wg, &d->Wu, &d->Wd,
                    &d->bg, &d->bu, &d->bd, &d->Y};
    for (int i = 0; i < 8; i++)
        tbuf_free(all[i]);
}

void mlp_case_label(const mlp_case *c, char *buf, size_t len)
{
    snprintf(buf, len,
             "mlp %s %s m=%lld k=%lld h=%lld n=%lld ldx=%lld ldy=%lld "
             "biases=%s%s%s off=%lld",
             dt_name(c->dtype), act_name(c->act), (long long)c->m,
             (long long)c->k, (long long)c->h, (long long)c->n,
             (long long)c->ldx, (long long)c->ldy,
             c->biases & MLP_BG ? "g" : "-", c->biases & MLP_BU ? "u" : "-",
             c->biases & MLP_BD ? "d" : "-", (long long)c->offset);
}

/* The oracle's view: inputs in double, Y and H. */
typedef struct mlp_ref {
    double *X, *Wg, *Wu, *Wd, *bg, *bu, *bd, *Y, *H;
} mlp_ref;

static void make_ref(const mlp_data *d, mlp_ref *r)
{
    const mlp_case *c = &d->c;
    r->X = tbuf_to_double(&d->X);
    r->Wg = tbuf_to_double(&d->Wg);
    r->Wu = tbuf_to_double(&d->Wu);
    r->Wd = tbuf_to_double(&d->Wd);
    r->bg = c->biases & MLP_BG ? tbuf_to_double(&d->bg) : NULL;
    r->bu = c->biases & MLP_BU ? tbuf_to_double(&d->bu) : NULL;
    r->bd = c->biases & MLP_BD ? tbuf_to_double(&d->bd) : NULL;
    r->Y = tbuf_to_double(&d->Y);
    r->H = malloc((size_t)at_least_1(c->m * c->h) * sizeof *r->H);
    if (r->H == NULL)
        tap_bail("out of host memory");
    oracle_mlp_geglu(c->dtype, c->act, c->m, c->k, c->h, c->n, r->X, c->ldx,
                     r->Wg, r->bg, r->Wu, r->bu, r->Wd, r->bd, r->Y, c->ldy,
                     r->H);
}

static void free_ref(mlp_ref *r)
{
    double *all[9] = {r->X, r->Wg, r->Wu, r->Wd, r->bg,
                      r->bu, r->bd, r->Y, r->H};
    for (int i = 0; i < 9; i++)
        free(all[i]);
}

static double *bounds_for(const mlp_data *d, const mlp_ref *r, const tol *t)
{
    const mlp_case *c = &d->c;
    double *B = tbuf_to_double(&d->Y); /* same size and layout as Y */
    tol_mlp(t, c->act, c->m, c->k, c->h, c->n, r->X, c->ldx, r->Wg, r->bg,
            r->Wu, r->bu, r->Wd, r->bd, r->H, r->Y, c->ldy, B);
    return B;
}

typedef struct mlp_run {
    fb_status status;
    int skipped;
    char message[256];
    tbuf Y;
} mlp_run;

static void run_target(const mlp_data *d, const target *t, tcheck *chk,
                       mlp_run *r)
{
    const mlp_case *c = &d->c;
    const tbuf *in[7] = {&d->X, &d->Wg, &d->Wu, &d->Wd, &d->bg, &d->bu, &d->bd};
    static const char *names[7] = {"X", "Wg", "Wu", "Wd", "bg", "bu", "bd"};
    void *alloc[7], *p[7];
    for (int i = 0; i < 7; i++)
        alloc[i] = tbuf_place(in[i], t->mem, &p[i]);
    void *py;
    void *ay = tbuf_place(&d->Y, t->mem, &py);

    r->status = mlp_geglu_forward(
        t->handle, c->dtype, c->act, c->m, c->k, c->h, c->n, p[0], c->ldx,
        p[1], c->biases & MLP_BG ? p[4] : NULL, p[2],
        c->biases & MLP_BU ? p[5] : NULL, p[3],
        c->biases & MLP_BD ? p[6] : NULL, py, c->ldy);
    snprintf(r->message, sizeof r->message, "%s",
             fb_handle_last_message(t->handle));
    const fb_backend ran = fb_handle_last_backend(t->handle);

    for (int i = 0; i < 7; i++) {
        tbuf after;
        tbuf_fetch(in[i], t->mem, alloc[i], &after);
        check_untouched(chk, names[i], in[i], &after, NULL);
        tbuf_free(&after);
        t->mem->release(alloc[i]);
    }
    tbuf_fetch(&d->Y, t->mem, ay, &r->Y);
    t->mem->release(ay);

    r->skipped = 0;
    if (r->status == FB_STATUS_NOT_SUPPORTED && t->not_supported_skips) {
        r->skipped = 1;
        check_untouched(chk, "Y (not supported)", &d->Y, &r->Y, NULL);
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
    check_untouched(chk, "Y", &d->Y, &r->Y, &d->sy);
}

static void check_values(const mlp_data *d, const mlp_ref *ref,
                         const double *bound, const mlp_run *r,
                         const double *wbound, const mlp_run *w,
                         const char *wname, tcheck *chk)
{
    const mlp_case *c = &d->c;
    int64_t i, j, nbad = 0, nwit = 0;
    for (int64_t e = 0; e < d->Y.nelem; e++) {
        if (!tshape_window(&d->sy, e, &i, &j))
            continue;
        const double y = dt_get(c->dtype, tbuf_data(&r->Y), e);
        double ratio;
        if (judge(y, ref->Y[e], ref->Y[e], FB_ACT_NONE, bound[e], &ratio)) {
            if (nbad++ < 3)
                tcheck_fail(chk, "Y(%lld,%lld) = %.9g, oracle %.9g, "
                            "|error| %.3g > bound %.3g",
                            (long long)i, (long long)j, y, ref->Y[e],
                            fabs(y - ref->Y[e]), bound[e]);
            else
                chk->failed = 1, chk->nproblems++;
        }
        if (ratio > chk->worst)
            chk->worst = ratio;
        if (w == NULL || w->status != FB_STATUS_SUCCESS)
            continue;
        const double yw = dt_get(c->dtype, tbuf_data(&w->Y), e);
        /* the same infinity, or NaN on both, agrees (Inf - Inf does not) */
        const int same_special =
            (isinf(y) && y == yw) || (isnan(y) && isnan(yw));
        if (!same_special && !(fabs(y - yw) <= bound[e] + wbound[e])) {
            if (nwit++ < 2)
                tcheck_fail(chk, "Y(%lld,%lld) = %.9g but %s gives %.9g "
                            "(oracle %.9g)", (long long)i, (long long)j, y,
                            wname, yw, ref->Y[e]);
            else
                chk->failed = 1, chk->nproblems++;
        }
    }
}

/* Bounds depend only on the tol, and the GPU targets share theirs: keep
 * each distinct one (they cost as much as the oracle). */
#define BOUND_CACHE 8
typedef struct bound_cache {
    int n;
    tol key[BOUND_CACHE];
    double *B[BOUND_CACHE];
} bound_cache;

static const double *cached_bounds(bound_cache *bc, const mlp_data *d,
                                   const mlp_ref *r, const tol *t)
{
    for (int i = 0; i < bc->n; i++)
        if (memcmp(&bc->key[i], t, sizeof *t) == 0)
            return bc->B[i];
    if (bc->n == BOUND_CACHE)
        tap_bail("more than %d different error models in one mlp check",
                 BOUND_CACHE);
    bc->key[bc->n] = *t;
    bc->B[bc->n] = bounds_for(d, r, t);
    return bc->B[bc->n++];
}

int mlp_check(const mlp_data *d, const target *t, int nt,
              const target *cross)
{
    const mlp_case *c = &d->c;
    char label[256];
    mlp_case_label(c, label, sizeof label);
    mlp_ref ref;
    make_ref(d, &ref);
    bound_cache bc;
    memset(&bc, 0, sizeof bc);
    int failed = 0;

    mlp_run wit;
    const double *wbound = NULL;
    if (cross != NULL) {
        tcheck chk;
        tcheck_init(&chk);
        run_target(d, cross, &chk, &wit);
        const tol tw = target_tol(cross, c->dtype);
        wbound = cached_bounds(&bc, d, &ref, &tw);
        if (!chk.failed && !wit.skipped)
            check_values(d, &ref, wbound, &wit, NULL, NULL, NULL, &chk);
        failed += !tap_check(&chk, "%s %s", cross->name, label);
    }
    for (int ti = 0; ti < nt; ti++) {
        if (t[ti].f32_only && c->dtype != FB_DTYPE_F32)
            continue;
        tcheck chk;
        tcheck_init(&chk);
        mlp_run r;
        run_target(d, &t[ti], &chk, &r);
        if (r.skipped && !chk.failed) {
            tap_skip("%s %s: not supported (%s)", t[ti].name, label,
                     r.message);
            tbuf_free(&r.Y);
            continue;
        }
        if (r.status == FB_STATUS_SUCCESS) {
            const tol tt = target_tol(&t[ti], c->dtype);
            const double *bound = cached_bounds(&bc, d, &ref, &tt);
            check_values(d, &ref, bound, &r, wbound, cross ? &wit : NULL,
                         cross ? cross->name : NULL, &chk);
        }
        failed += !tap_check(&chk, "%s %s", t[ti].name, label);
        tbuf_free(&r.Y);
    }
    if (cross != NULL)
        tbuf_free(&wit.Y);
    for (int i = 0; i < bc.n; i++)
        free(bc.B[i]);
    free_ref(&ref);
    return failed;
}

int mlp_run_case(mlp_case *c, const target *t, int nt, const target *cross)
{
    c->ldx = at_least_1(c->k) + (rng_below(2) ? 1 + rng_below(5) : 0);
    c->ldy = at_least_1(c->n) + (rng_below(2) ? 1 + rng_below(5) : 0);
    c->offset = rng_below(2);
    mlp_data d;
    mlp_data_make(&d, c);
    const int failed = mlp_check(&d, t, nt, cross);
    mlp_data_free(&d);
    return failed;
}

void mlp_sweep_conformance(const target *t, int nt, const target *cross)
{
    /* (m, k, h, n): widths that are multiples of nothing, m from 0 to 75,
     * and k = 0 (Y = act(bg) .* bu Wd^T + bd) and h = 0 (Y = bd). */
    static const int64_t shapes[][4] = {
        {0, 13, 19, 7},  {1, 37, 45, 23}, {2, 5, 130, 61}, {3, 100, 19, 1},
        {17, 1, 3, 7},   {75, 13, 45, 23}, {33, 37, 130, 61},
        {1, 100, 3, 5},  {5, 0, 19, 7},   {6, 13, 0, 7}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    static const fb_activation gates[N_ACTS] = {
        FB_ACT_GELU_TANH, FB_ACT_SILU, FB_ACT_RELU, FB_ACT_GELU_ERF,
        FB_ACT_NONE};
    int idx = 0;
    for (int di = 0; di < 3; di++)
        for (int ai = 0; ai < N_ACTS; ai++)
            for (int si = 0; si < nshapes; si++, idx++) {
                mlp_case c = {0};
                c.dtype = all_dtypes[di];
                c.act = gates[ai];
                c.m = shapes[si][0];
                c.k = shapes[si][1];
                c.h = shapes[si][2];
                c.n = shapes[si][3];
                c.biases = (unsigned)(idx % 8);
                mlp_run_case(&c, t, nt, cross);
            }
    /* Every bias pattern with every dtype on one shape. */
    for (int di = 0; di < 3; di++)
        for (unsigned b = 0; b < 8; b++) {
            mlp_case c = {0};
            c.dtype = all_dtypes[di];
            c.act = gates[rng_below(N_ACTS)];
            c.m = 9, c.k = 29, c.h = 71, c.n = 13;
            c.biases = b;
            mlp_run_case(&c, t, nt, cross);
        }
}
