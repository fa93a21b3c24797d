/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_huge_ld.c -- leading dimensions above INT32_MAX on the CPU backend
 * (and under auto, which keeps host data on the CPU): the calls run, and
 * give the oracle's result.
 *
 * The operands with a huge leading dimension live in an anonymous
 * MAP_NORESERVE mapping: tens or hundreds of gigabytes of address space,
 * of which only the pages the call touches cost memory. Each stored row
 * or column has guard elements after it (in the padding the call must not
 * touch) and before the first; they must survive, and so must the inputs.
 *
 *  - sgemm/hgemm/bgemm, m = n = 2, k = 3, lda, ldb or ldc = 2^31 + 16 in
 *    turn, both layouts, every transpose pair, on cpu and auto;
 *  - gemm with one stored row or column (m = 1 row-major, n = 1
 *    column-major) and mlp_geglu_forward with m = 1, the leading
 *    dimensions of those operands INT64_MAX: there it does not matter;
 *  - k = 2^31 + 1 on a call that reaches OpenBLAS: not supported, C
 *    untouched;
 *  - shapes that reach each CPU kernel family (the decode kernel, the
 *    fp32 small-k and packed kernels, the bf16 kernel, the OpenBLAS
 *    panels, and the MLP's own), first with a small leading dimension,
 *    then with a huge one: the same family must run (the path says which)
 *    and be right. Where this CPU lacks a family's instructions both runs
 *    take another route, still checked, and a skip line says so.
 *
 * Where the mapping cannot be made (a strict overcommit policy), the
 * program skips; where only the largest cannot (valgrind keeps a smaller
 * address space), those points are skips.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "gemm_check.h"
#include "mlp_check.h"
#include "oracle.h"

#define HUGE_LD (((int64_t)1 << 31) + 16)
/* Guard elements before a matrix and after each of its stored rows or
 * columns (where the leading dimension leaves room), and after the last. */
#define GUARD 4

/* ---- matrices in a sparse mapping ------------------------------------------ */

typedef struct hmat {
    fb_dtype dt;
    tshape s;              /* as the call sees it (ld may be huge) */
    int64_t outer, inner;  /* stored rows (columns) and their length */
    void *map;
    size_t bytes;
    char *base;            /* element 0 */
} hmat;

static int64_t outer_of(const tshape *s)
{
    return s->layout == FB_ROW_MAJOR ? s->rows : s->cols;
}

static int64_t inner_of(const tshape *s)
{
    return s->layout == FB_ROW_MAJOR ? s->cols : s->rows;
}

/* The same matrix with the smallest leading dimension: the oracle's. */
static tshape compact(const tshape *s)
{
    tshape c = *s;
    c.ld = inner_of(s) > 1 ? inner_of(s) : 1;
    return c;
}

/* Calls fn(h, element index) for every guard position of h. */
static void each_guard(const hmat *h, void (*fn)(const hmat *, int64_t,
                                                   void *), void *arg)
{
    for (int64_t g = 1; g <= GUARD; g++)
        fn(h, -g, arg);
    if (h->outer == 0)
        return;
    /* Between lines, the padding's first elements (none when ld leaves
     * no padding: then only the last line has guards after it). */
    const int64_t room = h->s.ld - h->inner;
    const int64_t between = room < GUARD ? room : GUARD;
    if (between > 0)
        for (int64_t o = 0; o + 1 < h->outer; o++)
            for (int64_t g = 0; g < between; g++)
                fn(h, o * h->s.ld + h->inner + g, arg);
    for (int64_t g = 0; g < GUARD; g++)
        fn(h, (h->outer - 1) * h->s.ld + h->inner + g, arg);
}

static void set_guard(const hmat *h, int64_t e, void *arg)
{
    (void)arg;
    dt_set_bits(h->dt, h->base, e, dt_guard_bits(h->dt));
}

static void count_bad_guard(const hmat *h, int64_t e, void *arg)
{
    if (dt_bits(h->dt, h->base, e) != dt_guard_bits(h->dt))
        ++*(int64_t *)arg;
}

/* Map room for s (with its guards); 0 if the mapping cannot be made. */
static int hmat_make(hmat *h, fb_dtype dt, const tshape *s)
{
    memset(h, 0, sizeof *h);
    h->dt = dt;
    h->s = *s;
    h->outer = outer_of(s);
    h->inner = inner_of(s);
    const int64_t span = h->outer == 0 || h->inner == 0
                             ? 0
                             : (h->outer - 1) * s->ld + h->inner;
    h->bytes = (size_t)(GUARD + span + GUARD) * dt_size(dt);
    h->map = mmap(NULL, h->bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (h->map == MAP_FAILED) {
        h->map = NULL;
        return 0;
    }
    h->base = (char *)h->map + GUARD * dt_size(dt);
    each_guard(h, set_guard, NULL);
    return 1;
}

static void hmat_free(hmat *h)
{
    if (h->map != NULL)
        munmap(h->map, h->bytes);
    h->map = NULL;
}

/* Copy the window between h and a compact image (ld = the row or column
 * length, elements from tbuf_data). */
static void hmat_put(hmat *h, const tbuf *img)
{
    const void *src = tbuf_data(img);
    for (int64_t o = 0; o < h->outer; o++)
        for (int64_t i = 0; i < h->inner; i++)
            dt_set_bits(h->dt, h->base, o * h->s.ld + i,
                        dt_bits(h->dt, src, o * h->inner + i));
}

static void hmat_get(const hmat *h, tbuf *img)
{
    void *dst = tbuf_data(img);
    for (int64_t o = 0; o < h->outer; o++)
        for (int64_t i = 0; i < h->inner; i++)
            dt_set_bits(h->dt, dst, o * h->inner + i,
                        dt_bits(h->dt, h->base, o * h->s.ld + i));
}

/* The guards of h, and for an input its window, as they were put. */
static void hmat_check(tcheck *chk, const char *what, const char *name,
                       const hmat *h, const tbuf *img, int input)
{
    int64_t bad = 0;
    each_guard(h, count_bad_guard, &bad);
    if (bad != 0)
        tcheck_fail(chk, "%s: %lld guard elements around %s changed", what,
                    (long long)bad, name);
    if (!input)
        return;
    const void *want = tbuf_data(img);
    for (int64_t o = 0; o < h->outer; o++)
        for (int64_t i = 0; i < h->inner; i++)
            if (dt_bits(h->dt, h->base, o * h->s.ld + i) !=
                dt_bits(h->dt, want, o * h->inner + i)) {
                tcheck_fail(chk, "%s: input %s changed at (%lld, %lld)",
                            what, name, (long long)o, (long long)i);
                return;
            }
}

/* A compact image of s, random (or poisoned) in its window. */
static void image_make(tbuf *b, fb_dtype dt, const tshape *s, int poison)
{
    const tshape c = compact(s);
    tbuf_init(b, dt, outer_of(&c) * c.ld, 0);
    if (poison)
        fill_poison(b, &c);
    else
        fill_random(b, &c);
}

/* Values small enough that fp16 sums of hundreds stay far from overflow:
 * random values times scale, rounded to the type. */
static void image_scale(tbuf *b, double scale)
{
    void *d = tbuf_data(b);
    for (int64_t e = 0; e < b->nelem; e++)
        dt_set(b->dtype, d, e,
               oracle_round(b->dtype, dt_get(b->dtype, d, e) * scale));
}

/* Set when a sparse mapping could not be made (valgrind keeps a smaller
 * address space; a strict overcommit policy refuses): the test point is
 * then a skip, not a failure. */
static int mapping_failed;

/* Emit chk as the point, or a skip if a mapping failed on the way. */
static void point(const tcheck *chk, const char *label)
{
    if (mapping_failed)
        tap_skip("%s: a sparse mapping could not be made", label);
    else
        tap_check(chk, "%s", label);
    mapping_failed = 0;
}

/* ---- gemm ------------------------------------------------------------------- */

/* Run c (lds as given, some of them huge) on h; returns the path (into
 * path) and records problems in chk. */
static void gemm_run(tcheck *chk, fb_handle h, const gemm_case *c,
                     char *path, size_t len)
{
    char what[256];
    gemm_case_label(c, what, sizeof what);
    path[0] = '\0';
    const fb_dtype dt = c->dtype;
    const tshape sa = gemm_shape_a(c), sb = gemm_shape_b(c);
    const tshape sc = gemm_shape_c(c);
    tbuf ia, ib, ic, out, ibias;
    image_make(&ia, dt, &sa, 0);
    image_make(&ib, dt, &sb, 0);
    image_make(&ic, dt, &sc, c->beta == 0.0f);
    image_make(&out, dt, &sc, 1);
    const tshape sbias = {FB_ROW_MAJOR, 1, c->n, c->n};
    image_make(&ibias, dt, &sbias, 0);
    if (c->k > 64) {
        image_scale(&ia, 1.0 / sqrt((double)c->k));
        image_scale(&ib, 1.0 / sqrt((double)c->k));
    }
    hmat a, b, cm;
    const int ok = hmat_make(&a, dt, &sa) & hmat_make(&b, dt, &sb) &
                   hmat_make(&cm, dt, &sc);
    if (!ok) {
        mapping_failed = 1;
        goto out;
    }
    hmat_put(&a, &ia);
    hmat_put(&b, &ib);
    hmat_put(&cm, &ic);

    const fb_status st = gemm_call(
        h, dt, c->layout, c->transa, c->transb, c->m, c->n, c->k, c->alpha,
        a.base, c->lda, b.base, c->ldb, c->beta, cm.base, c->ldc,
        c->has_bias ? tbuf_data(&ibias) : NULL, c->act);
    snprintf(path, len, "%s", fb_handle_last_path(h));
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "%s: status %s: %s", what, fb_status_string(st),
                    fb_handle_last_message(h));
        goto out;
    }
    if (fb_handle_last_backend(h) != FB_BACKEND_CPU)
        tcheck_fail(chk, "%s: ran on %s", what,
                    fb_backend_name(fb_handle_last_backend(h)));
    hmat_check(chk, what, "A", &a, &ia, 1);
    hmat_check(chk, what, "B", &b, &ib, 1);
    hmat_check(chk, what, "C", &cm, NULL, 0);
    hmat_get(&cm, &out);

    /* The oracle on the compact copies. */
    const tshape ca = compact(&sa), cb = compact(&sb), cc = compact(&sc);
    double *A = tbuf_to_double(&ia), *B = tbuf_to_double(&ib);
    double *C0 = tbuf_to_double(&ic), *Z = tbuf_to_double(&ic);
    double *G = tbuf_to_double(&ic);
    double *bias = c->has_bias ? tbuf_to_double(&ibias) : NULL;
    oracle_gemm_bias_act(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                         c->alpha, A, ca.ld, B, cb.ld, c->beta, Z, cc.ld,
                         bias, FB_ACT_NONE);
    oracle_gemm_gauge(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                      c->alpha, A, ca.ld, B, cb.ld, c->beta, C0, cc.ld,
                      bias, G);
    const target cpu = {"cpu", h, FB_BACKEND_CPU, &tmem_host, ARITH_FP32,
                        ARITH_FP32, 0, 0};
    const tol tl = target_tol(&cpu, dt);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            const int64_t e = oracle_at(c->layout, i, j, cc.ld);
            const double want = oracle_act(c->act, Z[e]);
            const double got = dt_get(dt, tbuf_data(&out), e);
            double ratio;
            if (judge(got, want, Z[e], c->act,
                      tol_gemm(&tl, c->k, c->act, G[e], want), &ratio)) {
                tcheck_fail(chk, "%s: C(%lld,%lld) = %.9g, oracle %.9g",
                            what, (long long)i, (long long)j, got, want);
                i = c->m;
                break;
            }
        }
    free(A), free(B), free(C0), free(Z), free(G), free(bias);
out:
    hmat_free(&a), hmat_free(&b), hmat_free(&cm);
    tbuf_free(&ia), tbuf_free(&ib), tbuf_free(&ic), tbuf_free(&out);
    tbuf_free(&ibias);
}

/* m = n = 2, k = 3 with one of lda, ldb, ldc (which: 0, 1, 2) at
 * 2^31 + 16, both layouts and every transpose pair. */
static void gemm_small(fb_handle h, const char *backend, fb_dtype dt,
                       int which)
{
    static const fb_layout layouts[2] = {FB_COL_MAJOR, FB_ROW_MAJOR};
    static const fb_transpose tr[2] = {FB_NO_TRANS, FB_TRANS};
    static const char *names[3] = {"lda", "ldb", "ldc"};
    tcheck chk;
    tcheck_init(&chk);
    for (int cfg = 0; cfg < 8; cfg++) {
        gemm_case c;
        memset(&c, 0, sizeof c);
        c.dtype = dt;
        c.layout = layouts[cfg / 4];
        c.transa = tr[(cfg / 2) % 2];
        c.transb = tr[cfg % 2];
        c.m = 2, c.n = 2, c.k = 3;
        c.alpha = cfg % 3 == 2 ? 1.0f : 0.7f;
        c.beta = cfg % 2 ? 1.3f : 0.0f;
        c.has_bias = cfg % 4 != 3;
        c.act = cfg % 2 ? FB_ACT_GELU_TANH : FB_ACT_NONE;
        gemm_case_set_lds(&c, 0, 0, 0);
        if (which == 0)
            c.lda = HUGE_LD;
        else if (which == 1)
            c.ldb = HUGE_LD;
        else
            c.ldc = HUGE_LD;
        char path[128];
        gemm_run(&chk, h, &c, path, sizeof path);
    }
    char label[320];
    snprintf(label, sizeof label,
             "%s: %cgemm_bias_act m = n = 2, k = 3, %s = 2^31 + 16, both "
             "layouts, every transpose pair: right, guards and inputs "
             "intact", backend, dt_prefix(dt), names[which]);
    point(&chk, label);
}

/* Operands with one stored row or column, where the leading dimension
 * does not matter: INT64_MAX. Row-major m = 1 (A and C one row each),
 * column-major n = 1 (B and C one column each). */
static void gemm_one_line(fb_handle h, const char *backend, fb_dtype dt)
{
    tcheck chk;
    tcheck_init(&chk);
    for (int row = 0; row < 2; row++) {
        gemm_case c;
        memset(&c, 0, sizeof c);
        c.dtype = dt;
        c.layout = row ? FB_ROW_MAJOR : FB_COL_MAJOR;
        c.transa = c.transb = FB_NO_TRANS;
        c.m = row ? 1 : 5, c.n = row ? 6 : 1, c.k = 7;
        c.alpha = 0.7f, c.beta = 1.3f;
        c.has_bias = 1;
        c.act = FB_ACT_SILU;
        gemm_case_set_lds(&c, 0, 0, 0);
        if (row)
            c.lda = c.ldc = INT64_MAX;
        else
            c.ldb = c.ldc = INT64_MAX;
        char path[128];
        gemm_run(&chk, h, &c, path, sizeof path);
    }
    char label[320];
    snprintf(label, sizeof label,
             "%s: %cgemm_bias_act, row-major m = 1 with lda = ldc = "
             "INT64_MAX, column-major n = 1 with ldb = ldc = INT64_MAX: "
             "right", backend, dt_prefix(dt));
    point(&chk, label);
}

/* The limit that remains: k beyond OpenBLAS's integer on a call that
 * reaches OpenBLAS (fp16 has no kernel of ours at this shape) is
 * FB_STATUS_NOT_SUPPORTED, with C untouched; an OpenBLAS with 64-bit
 * integers runs it instead (A and B are never-written pages, all zero,
 * so C must be 0). */
static void k_beyond_blasint(fb_handle h, const char *backend)
{
    tcheck chk;
    tcheck_init(&chk);
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.dtype = FB_DTYPE_F16;
    c.layout = FB_COL_MAJOR;
    c.transa = FB_NO_TRANS, c.transb = FB_TRANS;
    c.m = 2, c.n = 2, c.k = ((int64_t)1 << 31) + 1;
    c.alpha = 1.0f, c.beta = 0.0f;
    c.act = FB_ACT_NONE;
    gemm_case_set_lds(&c, 0, 0, 0);
    const tshape sa = gemm_shape_a(&c), sb = gemm_shape_b(&c);
    const tshape sc = gemm_shape_c(&c);
    hmat a, b, cm;
    if (!(hmat_make(&a, c.dtype, &sa) & hmat_make(&b, c.dtype, &sb) &
          hmat_make(&cm, c.dtype, &sc))) {
        mapping_failed = 1;
    } else {
        tbuf ic, out;
        image_make(&ic, c.dtype, &sc, 1);
        image_make(&out, c.dtype, &sc, 1);
        hmat_put(&cm, &ic);
        const fb_status st = gemm_call(h, c.dtype, c.layout, c.transa,
                                       c.transb, c.m, c.n, c.k, c.alpha,
                                       a.base, c.lda, b.base, c.ldb, c.beta,
                                       cm.base, c.ldc, NULL, c.act);
        hmat_check(&chk, "k = 2^31 + 1", "C", &cm, NULL, 0);
        hmat_get(&cm, &out);
        const void *got = tbuf_data(&out), *was = tbuf_data(&ic);
        for (int64_t e = 0; e < 4; e++) {
            const uint32_t bits = dt_bits(c.dtype, got, e);
            if (st == FB_STATUS_NOT_SUPPORTED &&
                bits != dt_bits(c.dtype, was, e))
                tcheck_fail(&chk, "not supported, but C was written");
            if (st == FB_STATUS_SUCCESS && dt_get(c.dtype, got, e) != 0.0)
                tcheck_fail(&chk, "C(%lld) = %g, not 0", (long long)e,
                            dt_get(c.dtype, got, e));
        }
        if (st == FB_STATUS_NOT_SUPPORTED &&
            strstr(fb_handle_last_message(h), "k = ") == NULL)
            tcheck_fail(&chk, "the message does not name k: %s",
                        fb_handle_last_message(h));
        if (st != FB_STATUS_NOT_SUPPORTED && st != FB_STATUS_SUCCESS)
            tcheck_fail(&chk, "status %s: %s", fb_status_string(st),
                        fb_handle_last_message(h));
        if (st == FB_STATUS_SUCCESS)
            tap_diag("k = 2^31 + 1 ran (an OpenBLAS with 64-bit integers)");
        tbuf_free(&ic);
        tbuf_free(&out);
    }
    hmat_free(&a), hmat_free(&b), hmat_free(&cm);
    char label[320];
    snprintf(label, sizeof label,
             "%s: hgemm_bias_act m = n = 2, k = 2^31 + 1: not supported "
             "(OpenBLAS's integer) with C untouched, never a truncated k",
             backend);
    point(&chk, label);
}

/* ---- mlp ---------------------------------------------------------------------- */

static void mlp_run(tcheck *chk, fb_handle h, const mlp_case *c,
                    char *path, size_t len)
{
    char what[256];
    mlp_case_label(c, what, sizeof what);
    path[0] = '\0';
    const fb_dtype dt = c->dtype;
    const tshape sx = {FB_ROW_MAJOR, c->m, c->k, c->ldx};
    const tshape sy = {FB_ROW_MAJOR, c->m, c->n, c->ldy};
    const tshape sw = {FB_ROW_MAJOR, c->h, c->k, c->k};
    const tshape sd = {FB_ROW_MAJOR, c->n, c->h, c->h};
    const tshape sbh = {FB_ROW_MAJOR, 1, c->h, c->h};
    const tshape sbn = {FB_ROW_MAJOR, 1, c->n, c->n};
    tbuf ix, iy, out, wg, wu, wd, bg, bu, bd;
    image_make(&ix, dt, &sx, 0);
    image_make(&iy, dt, &sy, 1);
    image_make(&out, dt, &sy, 1);
    image_make(&wg, dt, &sw, 0);
    image_make(&wu, dt, &sw, 0);
    image_make(&wd, dt, &sd, 0);
    image_make(&bg, dt, &sbh, 0);
    image_make(&bu, dt, &sbh, 0);
    image_make(&bd, dt, &sbn, 0);
    image_scale(&wg, 1.0 / sqrt((double)c->k));
    image_scale(&wu, 1.0 / sqrt((double)c->k));
    image_scale(&wd, 1.0 / sqrt((double)c->h));
    hmat x, y;
    const int ok = hmat_make(&x, dt, &sx) & hmat_make(&y, dt, &sy);
    if (!ok) {
        mapping_failed = 1;
        goto out;
    }
    hmat_put(&x, &ix);
    hmat_put(&y, &iy);
    const fb_status st = mlp_geglu_forward(
        h, dt, c->act, c->m, c->k, c->h, c->n, x.base, c->ldx, tbuf_data(&wg),
        tbuf_data(&bg), tbuf_data(&wu), tbuf_data(&bu), tbuf_data(&wd),
        tbuf_data(&bd), y.base, c->ldy);
    snprintf(path, len, "%s", fb_handle_last_path(h));
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "%s: status %s: %s", what, fb_status_string(st),
                    fb_handle_last_message(h));
        goto out;
    }
    if (fb_handle_last_backend(h) != FB_BACKEND_CPU)
        tcheck_fail(chk, "%s: ran on %s", what,
                    fb_backend_name(fb_handle_last_backend(h)));
    hmat_check(chk, what, "X", &x, &ix, 1);
    hmat_check(chk, what, "Y", &y, NULL, 0);
    hmat_get(&y, &out);

    const int64_t ldx = compact(&sx).ld, ldy = compact(&sy).ld;
    double *X = tbuf_to_double(&ix), *Wg = tbuf_to_double(&wg);
    double *Wu = tbuf_to_double(&wu), *Wd = tbuf_to_double(&wd);
    double *Bg = tbuf_to_double(&bg), *Bu = tbuf_to_double(&bu);
    double *Bd = tbuf_to_double(&bd), *Y = tbuf_to_double(&iy);
    double *B = tbuf_to_double(&iy);
    double *H = malloc((size_t)(c->m * c->h) * sizeof *H);
    if (H == NULL)
        tap_bail("out of host memory");
    oracle_mlp_geglu(dt, c->act, c->m, c->k, c->h, c->n, X, ldx, Wg, Bg, Wu,
                     Bu, Wd, Bd, Y, ldy, H);
    const target cpu = {"cpu", h, FB_BACKEND_CPU, &tmem_host, ARITH_FP32,
                        ARITH_FP32, 0, 0};
    const tol tl = target_tol(&cpu, dt);
    tol_mlp(&tl, c->act, c->m, c->k, c->h, c->n, X, ldx, Wg, Bg, Wu, Bu, Wd,
            Bd, H, Y, ldy, B);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            const int64_t e = i * ldy + j;
            const double got = dt_get(dt, tbuf_data(&out), e);
            double ratio;
            if (judge(got, Y[e], Y[e], FB_ACT_NONE, B[e], &ratio)) {
                tcheck_fail(chk, "%s: Y(%lld,%lld) = %.9g, oracle %.9g",
                            what, (long long)i, (long long)j, got, Y[e]);
                i = c->m;
                break;
            }
        }
    free(X), free(Wg), free(Wu), free(Wd), free(Bg), free(Bu), free(Bd);
    free(Y), free(B), free(H);
out:
    hmat_free(&x), hmat_free(&y);
    tbuf *all[9] = {&ix, &iy, &out, &wg, &wu, &wd, &bg, &bu, &bd};
    for (int i = 0; i < 9; i++)
        tbuf_free(all[i]);
}

/* m = 1: one stored row each, so ldx and ldy do not matter, even at
 * INT64_MAX. */
static void mlp_one_row(fb_handle h, const char *backend, fb_dtype dt)
{
    tcheck chk;
    tcheck_init(&chk);
    mlp_case c = {0};
    c.dtype = dt;
    c.act = FB_ACT_SILU;
    c.m = 1, c.k = 37, c.h = 45, c.n = 23;
    c.ldx = INT64_MAX, c.ldy = INT64_MAX;
    c.biases = MLP_ALL_BIASES;
    char path[128];
    mlp_run(&chk, h, &c, path, sizeof path);
    char label[320];
    snprintf(label, sizeof label,
             "%s: mlp_geglu_forward %s, m = 1, ldx = ldy = INT64_MAX: right "
             "(%s)", backend, dt_name(dt), path);
    point(&chk, label);
}

/* ---- each kernel family -------------------------------------------------------- */

/* The family of a path: up to its second '/' ("cpu/f32-small-k"). */
static void family_of(const char *path, char *fam, size_t len)
{
    const char *s = strchr(path, '/');
    s = s ? strchr(s + 1, '/') : NULL;
    size_t n = s ? (size_t)(s - path) : strlen(path);
    if (n >= len)
        n = len - 1;
    memcpy(fam, path, n);
    fam[n] = '\0';
}

typedef struct family_case {
    const char *family;  /* the path prefix meant */
    const char *env;     /* NAME=value set for the call, or NULL */
    int mlp;
    fb_dtype dt;
    /* gemm: row-major NT (nn.Linear): m tokens, n features, k; which
     * leading dimension is huge: 'a' X, 'b' W, 'c' Y, 'x' X and Y.
     * mlp: m rows, k, h, n; ldx and ldy huge. */
    int64_t m, n, k, h;
    char huge;
} family_case;

static const family_case families[] = {
    {"cpu/small-m-avx512", NULL, 0, FB_DTYPE_F32, 4, 50, 40, 0, 'x'},
    {"cpu/small-m-avx512", NULL, 0, FB_DTYPE_BF16, 4, 50, 40, 0, 'b'},
    {"cpu/small-m-avx2", NULL, 0, FB_DTYPE_F32, 4, 50, 40, 0, 'x'},
    {"cpu/small-m-avx2", NULL, 0, FB_DTYPE_BF16, 4, 50, 40, 0, 'b'},
    {"cpu/f32-small-k", NULL, 0, FB_DTYPE_F32, 40, 24, 20, 0, 'a'},
    {"cpu/f32-small-k", NULL, 0, FB_DTYPE_F32, 40, 24, 20, 0, 'c'},
    {"cpu/f32-avx512", "FUSEDBLAS_CPU_SGEMM=packed", 0, FB_DTYPE_F32, 40,
     24, 20, 0, 'x'},
    {"cpu/f32-avx512", NULL, 0, FB_DTYPE_F32, 40, 24, 600, 0, 'b'},
    {"cpu/bf16-amx", NULL, 0, FB_DTYPE_BF16, 40, 24, 20, 0, 'x'},
    {"cpu/bf16-avx512bf16", NULL, 0, FB_DTYPE_BF16, 40, 24, 20, 0, 'x'},
    {"cpu/openblas", "FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32, 40, 24,
     20, 0, 'a'},
    {"cpu/openblas", "FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32, 40, 24,
     20, 0, 'b'},
    {"cpu/openblas", "FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32, 40, 24,
     20, 0, 'c'},
    {"cpu/openblas", NULL, 0, FB_DTYPE_F16, 40, 24, 20, 0, 'x'},
    {"cpu/openblas", "FUSEDBLAS_CPU_NO_BF16=1", 0, FB_DTYPE_BF16, 40, 24, 20,
     0, 'b'},
    {"cpu/small-m-avx512", NULL, 1, FB_DTYPE_F32, 3, 23, 37, 45, 'x'},
    {"cpu/small-m-avx512", NULL, 1, FB_DTYPE_BF16, 3, 23, 37, 45, 'x'},
    {"cpu/small-m-avx2", NULL, 1, FB_DTYPE_F32, 3, 23, 37, 45, 'x'},
    {"cpu/small-m-avx2", NULL, 1, FB_DTYPE_BF16, 3, 23, 37, 45, 'x'},
    {"cpu/f32-small-k", NULL, 1, FB_DTYPE_F32, 36, 23, 37, 45, 'x'},
    {"cpu/f32-avx512", "FUSEDBLAS_CPU_SGEMM=packed", 1, FB_DTYPE_F32, 36, 23,
     37, 45, 'x'},
    {"cpu/bf16-amx", NULL, 1, FB_DTYPE_BF16, 36, 23, 37, 45, 'x'},
    {"cpu/bf16-avx512bf16", NULL, 1, FB_DTYPE_BF16, 36, 23, 37, 45, 'x'},
    {"cpu/openblas", "FUSEDBLAS_CPU_SGEMM=openblas", 1, FB_DTYPE_F32, 36, 23,
     37, 45, 'x'},
    {"cpu/openblas", NULL, 1, FB_DTYPE_F16, 36, 23, 37, 45, 'x'},
};
#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

/* Run f with small leading dimensions (huge = 0) or huge ones. */
static void family_run(tcheck *chk, fb_handle h, const family_case *f,
                       int huge, char *path, size_t len)
{
    char name[64] = "";
    if (f->env != NULL) {
        snprintf(name, sizeof name, "%s", f->env);
        char *eq = strchr(name, '=');
        *eq = '\0';
        setenv(name, eq + 1, 1);
    }
    if (f->mlp) {
        mlp_case c = {0};
        c.dtype = f->dt;
        c.act = FB_ACT_GELU_TANH;
        c.m = f->m, c.k = f->k, c.h = f->h, c.n = f->n;
        c.ldx = huge ? HUGE_LD : c.k + 3;
        c.ldy = huge ? HUGE_LD : c.n + 1;
        c.biases = MLP_ALL_BIASES;
        mlp_run(chk, h, &c, path, len);
    } else {
        gemm_case c;
        memset(&c, 0, sizeof c);
        c.dtype = f->dt;
        c.layout = FB_ROW_MAJOR;
        c.transa = FB_NO_TRANS;
        c.transb = FB_TRANS;
        c.m = f->m, c.n = f->n, c.k = f->k;
        c.alpha = 0.7f;
        c.beta = 1.3f;
        c.has_bias = 1;
        c.act = FB_ACT_GELU_TANH;
        gemm_case_set_lds(&c, 3, 1, 2);
        if (huge && (f->huge == 'a' || f->huge == 'x'))
            c.lda = HUGE_LD;
        if (huge && f->huge == 'b')
            c.ldb = HUGE_LD;
        if (huge && (f->huge == 'c' || f->huge == 'x'))
            c.ldc = HUGE_LD;
        gemm_run(chk, h, &c, path, len);
    }
    if (f->env != NULL)
        unsetenv(name);
}

static void family(fb_handle h, const family_case *f)
{
    const char *ld = f->mlp ? "ldx = ldy"
                     : f->huge == 'a' ? "lda"
                     : f->huge == 'b' ? "ldb"
                     : f->huge == 'c' ? "ldc" : "lda = ldc";
    char small_path[128], huge_path[128], fs[64], fh[64];
    tcheck chk;
    tcheck_init(&chk);
    family_run(&chk, h, f, 0, small_path, sizeof small_path);
    family_run(&chk, h, f, 1, huge_path, sizeof huge_path);
    family_of(small_path, fs, sizeof fs);
    family_of(huge_path, fh, sizeof fh);
    if (strcmp(fs, fh) != 0)
        tcheck_fail(&chk, "a small leading dimension ran %s, a huge one %s",
                    small_path, huge_path);
    char shape[96];
    if (f->mlp)
        snprintf(shape, sizeof shape, "mlp_geglu_forward %s m=%lld k=%lld "
                 "h=%lld n=%lld", dt_name(f->dt), (long long)f->m,
                 (long long)f->k, (long long)f->h, (long long)f->n);
    else
        snprintf(shape, sizeof shape, "%cgemm_bias_act row NT m=%lld "
                 "n=%lld k=%lld", dt_prefix(f->dt), (long long)f->m,
                 (long long)f->n, (long long)f->k);
    char label[320];
    snprintf(label, sizeof label,
             "%s%s%s, %s = 2^31 + 16: right, and on the family a small ld "
             "takes (%s)", shape, f->env ? " " : "", f->env ? f->env : "",
             ld, huge_path);
    point(&chk, label);
    if (strncmp(fs, f->family, strlen(f->family)) != 0)
        tap_skip("%s: not on this CPU (ran %s)", f->family, small_path);
}

int main(void)
{
    tap_begin("test_huge_ld");
    /* Can this system map a sparse range this large? */
    const size_t probe = (size_t)HUGE_LD * 8;
    void *p = mmap(NULL, probe, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        tap_skip_all("mmap(MAP_NORESERVE) of 16 GiB of address space "
                     "failed (strict overcommit?)");
    munmap(p, probe);

    fb_handle cpu = handle_on(FB_BACKEND_CPU);
    fb_handle autoh = handle_on(FB_BACKEND_AUTO);
    for (int di = 0; di < 3; di++)
        for (int which = 0; which < 3; which++) {
            gemm_small(cpu, "cpu", all_dtypes[di], which);
            gemm_small(autoh, "auto", all_dtypes[di], which);
        }
    for (int di = 0; di < 3; di++) {
        gemm_one_line(cpu, "cpu", all_dtypes[di]);
        gemm_one_line(autoh, "auto", all_dtypes[di]);
        mlp_one_row(cpu, "cpu", all_dtypes[di]);
        mlp_one_row(autoh, "auto", all_dtypes[di]);
    }
    k_beyond_blasint(cpu, "cpu");
    k_beyond_blasint(autoh, "auto");
    for (int i = 0; i < N_FAMILIES; i++)
        family(cpu, &families[i]);
    fb_destroy(cpu);
    fb_destroy(autoh);
    return tap_end();
}
