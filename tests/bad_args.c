/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bad_args.c -- the bad-argument tables. See bad_args.h.
 *
 * A table row is one bad value for one argument: where it goes (arg, the
 * position in fusedblas.h), which position the library must report
 * (expect; the same as arg except for dimensions so large that a matrix
 * built on them no longer fits, which the matrix's leading dimension or
 * pointer reports) and how to make it. Pairs of rows whose expect equals
 * their arg are then combined: the lower position must win, as reference
 * BLAS's xerbla reports it.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bad_args.h"
#include "gemm_check.h"
#include "mlp_check.h"
#include "oracle.h"

typedef enum mut_kind {
    MK_SET,          /* the argument takes value v */
    MK_NULL,         /* a NULL pointer */
    MK_SHIFT,        /* the pointer moved by v bytes (misaligned if v is
                        not a multiple of the element size) */
    MK_BELOW,        /* a leading dimension v below its minimum */
    MK_BOGUS_HANDLE, /* a pointer that fb_create never returned */
    MK_DEAD_HANDLE   /* a handle already destroyed */
} mut_kind;

typedef struct mutation {
    int arg, expect;
    mut_kind kind;
    int64_t v;
    const char *what;
} mutation;

#define TWO62 ((int64_t)1 << 62) /* ld x (cols - 1) overflows int64 */
#define TWO60 ((int64_t)1 << 60) /* fits as elements, not as bytes */

/* Aligned, zero-filled, never a handle. */
static union {
    long double align;
    unsigned char bytes[512];
} bogus_block;

static fb_handle bogus_handle(void)
{
    return (fb_handle)(void *)bogus_block.bytes;
}

/* A handle pointer that was live a moment ago. Made just before the call
 * that uses it, after the thread's default handle exists, so that no
 * other allocation can have reused its address. */
static fb_handle dead_handle(void)
{
    fb_handle h = NULL;
    if (fb_create(&h) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    if (fb_destroy(h) != FB_STATUS_SUCCESS)
        tap_bail("fb_destroy failed");
    return h;
}

/* Whether a row applies to data of esize bytes: a shift must misalign. */
static int applies(const mutation *mu, size_t esize)
{
    return mu->kind != MK_SHIFT || mu->v % (int64_t)esize != 0;
}

static int plain(const mutation *mu)
{
    return mu->arg == mu->expect;
}

/* Check the outcome of one bad call; returns 1 if it was right. */
static int verdict(tcheck *chk, const char *what, fb_status st,
                   fb_handle h, int handle_bad, int expect)
{
    /* After a bad handle the library can only record on the thread's
     * default handle. */
    fb_handle where = handle_bad ? NULL : h;
    const int arg = fb_handle_last_arg(where);
    const fb_status last = fb_handle_last_status(where);
    const char *msg = fb_handle_last_message(where);
    if (st == FB_STATUS_INVALID_ARGUMENT && arg == expect &&
        last == FB_STATUS_INVALID_ARGUMENT && msg != NULL && *msg != '\0')
        return 1;
    tcheck_fail(chk, "%s: status %s, argument %d (last status %s, message "
                "\"%s\"), expected invalid argument %d",
                what, fb_status_string(st), arg, fb_status_string(last),
                msg ? msg : "(null)", expect);
    return 0;
}

/* ---- operands that share bytes ---------------------------------------------- */

/* Elements from a stored matrix's first to its last, in storage order: the
 * bytes the call may touch (the padding after the last row or column is
 * not among them). */
static int64_t span_elems(const tshape *s)
{
    const int64_t outer = s->layout == FB_ROW_MAJOR ? s->rows : s->cols;
    const int64_t inner = s->layout == FB_ROW_MAJOR ? s->cols : s->rows;
    return outer == 0 || inner == 0 ? 0 : (outer - 1) * s->ld + inner;
}

/* The length of a stored row (row-major) or column (column-major). */
static int64_t inner_len(const tshape *s)
{
    return s->layout == FB_ROW_MAJOR ? s->cols : s->rows;
}

/* One allocation holding every operand of a call, each at an element
 * offset that the case chooses, so that operands may share bytes. Its
 * host image starts as the guard pattern; each operand's window is filled
 * in turn, a later one overwriting an earlier one where they meet. */
#define ARENA_FRONT 8
typedef struct arena {
    fb_dtype dtype;
    int64_t nelem;
    tbuf img;
} arena;

static void arena_init(arena *a, fb_dtype dt, int64_t nelem)
{
    a->dtype = dt;
    a->nelem = nelem;
    tbuf_init(&a->img, dt, nelem, ARENA_FRONT);
}

/* Fresh random values (poison: the poison pattern) in the window of s
 * placed at element off. */
static void arena_fill(arena *a, int64_t off, const tshape *s, int poison)
{
    void *data = tbuf_data(&a->img);
    const int64_t total = tshape_nelem(s);
    int64_t i, j;
    if (off < 0 || off + total > a->nelem)
        tap_bail("an operand placed outside its arena");
    for (int64_t e = 0; e < total; e++) {
        if (!tshape_window(s, e, &i, &j))
            continue;
        if (poison)
            dt_set_bits(a->dtype, data, off + e, dt_poison_bits(a->dtype));
        else
            dt_set(a->dtype, data, off + e, rng_value(a->dtype));
    }
}

/* The arena's image as a buffer whose data starts at element off, so
 * that check_untouched can leave out the window of an output there. */
static tbuf arena_from(const arena *a, const tbuf *img, int64_t off)
{
    tbuf v = *img;
    v.front = ARENA_FRONT + off;
    v.nelem = a->nelem - off;
    return v;
}

/* The arena placed in t's memory; *base is its element 0. */
static void *arena_place(const arena *a, const target *t, char **base)
{
    void *p;
    void *alloc = tbuf_place(&a->img, t->mem, &p);
    *base = p;
    return alloc;
}

/* A refused call: the status and position, and every byte of the arena
 * (outputs, inputs, guards) as it was. */
static void arena_refused(tcheck *chk, const char *what, const arena *a,
                          const tbuf *after, const target *t, fb_status st,
                          int expect)
{
    verdict(chk, what, st, t->handle, 0, expect);
    tcheck probe;
    tcheck_init(&probe);
    check_untouched(&probe, "arena", &a->img, after, NULL);
    if (probe.failed)
        tcheck_fail(chk, "%s: %s", what, probe.diag[0]);
}

/* An accepted call: success (or a skip the target allows, with nothing
 * written), on the backend t expects, and every byte of the arena outside
 * the output's window (at element out, shape so) as it was. Returns 1 if
 * the window is to be checked against the oracle. */
static int arena_accepted(tcheck *chk, const char *what, const arena *a,
                          const tbuf *after, const target *t, fb_status st,
                          int64_t out, const tshape *so)
{
    tcheck probe;
    tcheck_init(&probe);
    if (st == FB_STATUS_NOT_SUPPORTED && t->not_supported_skips) {
        check_untouched(&probe, "arena (not supported)", &a->img, after,
                        NULL);
    } else if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "%s: status %s, argument %d: %s", what,
                    fb_status_string(st), fb_handle_last_arg(t->handle),
                    fb_handle_last_message(t->handle));
        return 0;
    } else {
        const fb_backend ran = fb_handle_last_backend(t->handle);
        if (!target_ran_expected(t, ran))
            tcheck_fail(chk, "%s: ran on %s (path \"%s\"), expected %s",
                        what, fb_backend_name(ran),
                        fb_handle_last_path(t->handle),
                        fb_backend_name(t->expect));
        const tbuf vb = arena_from(a, &a->img, out);
        const tbuf va = arena_from(a, after, out);
        check_untouched(&probe, "arena outside the output", &vb, &va, so);
    }
    if (probe.failed)
        tcheck_fail(chk, "%s: %s", what, probe.diag[0]);
    return st == FB_STATUS_SUCCESS;
}

/* A gemm_bias_act call with its operands at element offsets of one arena
 * (obias < 0: no bias). */
typedef struct gemm_placed {
    gemm_case c;
    int64_t oa, ob, oc, obias;
} gemm_placed;

/* Run g on t. expect 0: the call is legal, C must be right against the
 * oracle and nothing else touched; otherwise the position it must report,
 * with nothing written. */
static void gemm_placed_try(tcheck *chk, const target *t,
                            const gemm_placed *g, int expect,
                            const char *name)
{
    const gemm_case *c = &g->c;
    const fb_dtype dt = c->dtype;
    const size_t es = dt_size(dt);
    const tshape sa = gemm_shape_a(c), sb = gemm_shape_b(c);
    const tshape sc = gemm_shape_c(c);
    const tshape sbias = {FB_ROW_MAJOR, 1, c->n, c->n > 1 ? c->n : 1};
    int64_t total = g->oa + tshape_nelem(&sa);
    const int64_t ends[3] = {g->ob + tshape_nelem(&sb),
                             g->oc + tshape_nelem(&sc),
                             g->obias + tshape_nelem(&sbias)};
    for (int i = 0; i < 3; i++)
        total = ends[i] > total ? ends[i] : total;
    arena a;
    arena_init(&a, dt, total + 4);
    arena_fill(&a, g->oa, &sa, 0);
    arena_fill(&a, g->ob, &sb, 0);
    if (g->obias >= 0)
        arena_fill(&a, g->obias, &sbias, 0);
    arena_fill(&a, g->oc, &sc, c->beta == 0.0f);

    char *base;
    void *alloc = arena_place(&a, t, &base);
    const fb_status st = gemm_call(
        t->handle, dt, c->layout, c->transa, c->transb, c->m, c->n, c->k,
        c->alpha, base + g->oa * es, c->lda, base + g->ob * es, c->ldb,
        c->beta, base + g->oc * es, c->ldc,
        g->obias >= 0 ? base + g->obias * es : NULL, c->act);
    tbuf after;
    tbuf_fetch(&a.img, t->mem, alloc, &after);
    t->mem->release(alloc);

    char what[320], label[160];
    gemm_case_label(c, label, sizeof label);
    snprintf(what, sizeof what, "%s [%s]", name, label);
    if (expect != 0) {
        arena_refused(chk, what, &a, &after, t, st, expect);
    } else if (arena_accepted(chk, what, &a, &after, t, st, g->oc, &sc)) {
        double *in = tbuf_to_double(&a.img);
        double *Z = tbuf_to_double(&a.img), *G = tbuf_to_double(&a.img);
        const double *bias = g->obias >= 0 ? in + g->obias : NULL;
        oracle_gemm_bias_act(c->layout, c->transa, c->transb, c->m, c->n,
                             c->k, c->alpha, in + g->oa, c->lda, in + g->ob,
                             c->ldb, c->beta, Z + g->oc, c->ldc, bias,
                             FB_ACT_NONE);
        oracle_gemm_gauge(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                          c->alpha, in + g->oa, c->lda, in + g->ob, c->ldb,
                          c->beta, in + g->oc, c->ldc, bias, G + g->oc);
        const tol tl = target_tol(t, dt);
        const void *got = tbuf_data(&after);
        int64_t i, j, checked = 0;
        for (int64_t e = 0; e < tshape_nelem(&sc); e++) {
            if (!tshape_window(&sc, e, &i, &j))
                continue;
            const int64_t q = g->oc + e;
            const double want = oracle_act(c->act, Z[q]);
            const double y = dt_get(dt, got, q);
            double ratio;
            checked++;
            if (judge(y, want, Z[q], c->act,
                      tol_gemm(&tl, c->k, c->act, G[q], want), &ratio))
                tcheck_fail(chk, "%s: C(%lld,%lld) = %.9g, oracle %.9g",
                            what, (long long)i, (long long)j, y, want);
        }
        if (checked != c->m * c->n)
            tcheck_fail(chk, "%s: %lld elements of C checked, not %lld",
                        what, (long long)checked, (long long)(c->m * c->n));
        free(in);
        free(Z);
        free(G);
    }
    tbuf_free(&after);
    tbuf_free(&a.img);
}

/* Which overlap a gemm case makes, from the operands apart. */
typedef enum gemm_overlap {
    GO_C_IS_A, GO_C_INTO_A, GO_C_END_INTO_B, GO_BIAS_IN_C,
    GO_C_IS_A_BETA0, GO_C_INTERLEAVED_A,
    GO_C_IS_A_BAD_ACT, GO_C_IS_B_BAD_LDA, GO_C_IS_A_BAD_LDC,
    GO_C_IS_A_BAD_K,
    GO_C_ENDS_AT_A, GO_C_AFTER_B, GO_BIAS_ENDS_AT_C, GO_BIAS_AFTER_C,
    GO_A_IS_B, GO_C_IS_A_K0, GO_C_IS_A_ALPHA0,
    GO_COUNT
} gemm_overlap;

static const struct {
    const char *what;
    int expect; /* 0: legal */
} gemm_overlaps[GO_COUNT] = {
    {"C == A", 14},
    {"C one element into A", 14},
    {"C's last element on B's first", 14},
    {"bias inside C", 14},
    {"C == A with beta = 0 (C written, not read)", 14},
    {"C's columns (rows) in A's padding, no element shared", 14},
    {"C == A and act 99: C is the lower position", 14},
    {"C == B and lda too small: lda is the lower position", 10},
    {"C == A and ldc too small: without a valid ldc C has no range, ldc "
     "reported", 15},
    {"C == A and k = -1", 7},
    {"C ending exactly where A starts", 0},
    {"C starting exactly where B ends", 0},
    {"bias ending exactly where C starts", 0},
    {"bias starting exactly where C ends", 0},
    {"A and B sharing bytes (both inputs)", 0},
    {"C == A with k = 0 (A and B not read)", 0},
    {"C == A with alpha = 0 (A and B not read)", 0},
};

static gemm_placed gemm_overlap_case(fb_dtype dt, fb_layout layout,
                                     gemm_overlap kind)
{
    gemm_placed g;
    gemm_case c = {0};
    c.dtype = dt;
    c.layout = layout;
    /* Column-major NN, and the nn.Linear form: row-major NT. */
    c.transa = FB_NO_TRANS;
    c.transb = layout == FB_ROW_MAJOR ? FB_TRANS : FB_NO_TRANS;
    c.m = 5, c.n = 6, c.k = kind == GO_C_IS_A_K0 ? 0 : 7;
    c.alpha = kind == GO_C_IS_A_ALPHA0 ? 0.0f : 0.7f;
    c.beta = kind == GO_C_IS_A_BETA0 ? 0.0f : 1.3f;
    c.has_bias = 1;
    c.act = FB_ACT_GELU_TANH;
    gemm_case_set_lds(&c, 2, 1, 3);
    if (kind == GO_C_INTERLEAVED_A) {
        /* A's stored rows (columns) L apart, C's in the L - inner(A)
         * elements of padding after each. */
        const tshape sa0 = gemm_shape_a(&c), sc0 = gemm_shape_c(&c);
        c.lda = c.ldc = inner_len(&sa0) + inner_len(&sc0);
    }
    const tshape sa = gemm_shape_a(&c), sb = gemm_shape_b(&c);
    const tshape sc = gemm_shape_c(&c);
    const int64_t ea = span_elems(&sa), eb = span_elems(&sb);
    const int64_t ec = span_elems(&sc);
    const int64_t gap = 5;
    /* Apart, with room before A for a C or a bias that ends where A
     * starts. */
    g.oa = ec + c.n + gap;
    g.ob = g.oa + ea + gap;
    g.oc = g.ob + eb + gap;
    g.obias = g.oc + ec + gap;
    switch (kind) {
    case GO_C_IS_A:
    case GO_C_IS_A_BETA0:
    case GO_C_IS_A_K0:
    case GO_C_IS_A_ALPHA0:
        g.oc = g.oa;
        break;
    case GO_C_IS_A_BAD_ACT:
        g.oc = g.oa;
        c.act = (fb_activation)99;
        break;
    case GO_C_IS_A_BAD_LDC:
        g.oc = g.oa;
        c.ldc = shape_min_ld(c.layout, c.m, c.n) - 1;
        break;
    case GO_C_IS_A_BAD_K:
        g.oc = g.oa;
        c.k = -1;
        break;
    case GO_C_IS_B_BAD_LDA:
        g.oc = g.ob;
        c.lda = shape_min_ld(c.layout, sa.rows, sa.cols) - 1;
        break;
    case GO_C_INTO_A:
        g.oc = g.oa + 1;
        break;
    case GO_C_END_INTO_B:
        g.oc = g.ob - ec + 1;
        break;
    case GO_BIAS_IN_C:
        g.obias = g.oc + 1;
        break;
    case GO_C_INTERLEAVED_A:
        g.oc = g.oa + inner_len(&sa);
        break;
    case GO_C_ENDS_AT_A:
        g.oc = g.oa - ec;
        break;
    case GO_C_AFTER_B:
        g.oc = g.ob + eb;
        g.obias = g.oc + tshape_nelem(&sc) + gap;
        break;
    case GO_BIAS_ENDS_AT_C:
        g.obias = g.oc - c.n;
        break;
    case GO_BIAS_AFTER_C:
        g.obias = g.oc + ec;
        break;
    case GO_A_IS_B:
        g.ob = g.oa;
        break;
    case GO_COUNT:
        break;
    }
    g.c = c;
    return g;
}

/* Every overlap case, each dtype, both layouts. */
static long overlap_gemm(const target *t)
{
    static const fb_layout layouts[2] = {FB_COL_MAJOR, FB_ROW_MAJOR};
    long tried = 0;
    for (int kind = 0; kind < GO_COUNT; kind++) {
        tcheck chk;
        tcheck_init(&chk);
        for (int di = 0; di < 3; di++) {
            if (t->f32_only && all_dtypes[di] != FB_DTYPE_F32)
                continue;
            for (int li = 0; li < 2; li++, tried++) {
                const gemm_placed g = gemm_overlap_case(
                    all_dtypes[di], layouts[li], (gemm_overlap)kind);
                gemm_placed_try(&chk, t, &g, gemm_overlaps[kind].expect,
                                gemm_overlaps[kind].what);
            }
        }
        if (gemm_overlaps[kind].expect != 0)
            tap_check(&chk, "%s: gemm_bias_act, %s -> argument %d, nothing "
                      "written", t->name, gemm_overlaps[kind].what,
                      gemm_overlaps[kind].expect);
        else
            tap_check(&chk, "%s: gemm_bias_act, %s: accepted, C right, "
                      "nothing else touched", t->name,
                      gemm_overlaps[kind].what);
    }
    return tried;
}

/* An mlp_geglu_forward call in one arena: offsets of X, Wg, bg, Wu, bu,
 * Wd, bd, Y (argument order); a bias at a negative offset is NULL. */
enum { PX, PWG, PBG, PWU, PBU, PWD, PBD, PY, NPLACED };
typedef struct mlp_placed {
    mlp_case c;
    int64_t off[NPLACED];
    fb_activation act; /* what the call passes (may be bad) */
    int wd_null;       /* pass NULL for Wd */
} mlp_placed;

static void mlp_shapes_of(const mlp_case *c, tshape s[NPLACED])
{
    const int64_t k1 = c->k > 1 ? c->k : 1, h1 = c->h > 1 ? c->h : 1;
    const int64_t n1 = c->n > 1 ? c->n : 1;
    const tshape all[NPLACED] = {
        {FB_ROW_MAJOR, c->m, c->k, c->ldx}, {FB_ROW_MAJOR, c->h, c->k, k1},
        {FB_ROW_MAJOR, 1, c->h, h1},        {FB_ROW_MAJOR, c->h, c->k, k1},
        {FB_ROW_MAJOR, 1, c->h, h1},        {FB_ROW_MAJOR, c->n, c->h, h1},
        {FB_ROW_MAJOR, 1, c->n, n1},        {FB_ROW_MAJOR, c->m, c->n, c->ldy}};
    for (int i = 0; i < NPLACED; i++)
        s[i] = all[i];
}

static void mlp_placed_try(tcheck *chk, const target *t,
                           const mlp_placed *g, int expect, const char *name)
{
    const mlp_case *c = &g->c;
    const fb_dtype dt = c->dtype;
    const size_t es = dt_size(dt);
    tshape s[NPLACED];
    mlp_shapes_of(c, s);
    int64_t total = 0;
    for (int i = 0; i < NPLACED; i++)
        if (g->off[i] >= 0 && g->off[i] + tshape_nelem(&s[i]) > total)
            total = g->off[i] + tshape_nelem(&s[i]);
    arena a;
    arena_init(&a, dt, total + 4);
    for (int i = 0; i < PY; i++)
        if (g->off[i] >= 0)
            arena_fill(&a, g->off[i], &s[i], 0);
    arena_fill(&a, g->off[PY], &s[PY], 1);

    char *base;
    void *alloc = arena_place(&a, t, &base);
    void *p[NPLACED];
    for (int i = 0; i < NPLACED; i++)
        p[i] = g->off[i] >= 0 ? base + g->off[i] * es : NULL;
    const fb_status st = mlp_geglu_forward(
        t->handle, dt, g->act, c->m, c->k, c->h, c->n, p[PX], c->ldx,
        p[PWG], p[PBG], p[PWU], p[PBU], g->wd_null ? NULL : p[PWD], p[PBD],
        p[PY], c->ldy);
    tbuf after;
    tbuf_fetch(&a.img, t->mem, alloc, &after);
    t->mem->release(alloc);

    char what[320], label[200];
    mlp_case_label(c, label, sizeof label);
    snprintf(what, sizeof what, "%s [%s]", name, label);
    if (expect != 0) {
        arena_refused(chk, what, &a, &after, t, st, expect);
    } else if (arena_accepted(chk, what, &a, &after, t, st, g->off[PY],
                              &s[PY])) {
        double *in = tbuf_to_double(&a.img), *Y = tbuf_to_double(&a.img);
        double *B = tbuf_to_double(&a.img);
        double *H = malloc((size_t)(c->m * c->h > 0 ? c->m * c->h : 1) *
                           sizeof *H);
        if (H == NULL)
            tap_bail("out of host memory");
        const double *q[NPLACED];
        for (int i = 0; i < NPLACED; i++)
            q[i] = g->off[i] >= 0 ? in + g->off[i] : NULL;
        double *y = Y + g->off[PY];
        oracle_mlp_geglu(dt, c->act, c->m, c->k, c->h, c->n, q[PX], c->ldx,
                         q[PWG], q[PBG], q[PWU], q[PBU], q[PWD], q[PBD], y,
                         c->ldy, H);
        const tol tl = target_tol(t, dt);
        double *bound = B + g->off[PY];
        tol_mlp(&tl, c->act, c->m, c->k, c->h, c->n, q[PX], c->ldx, q[PWG],
                q[PBG], q[PWU], q[PBU], q[PWD], q[PBD], H, y, c->ldy, bound);
        const void *got = tbuf_data(&after);
        int64_t i, j, checked = 0;
        for (int64_t e = 0; e < tshape_nelem(&s[PY]); e++) {
            if (!tshape_window(&s[PY], e, &i, &j))
                continue;
            const double v = dt_get(dt, got, g->off[PY] + e);
            double ratio;
            checked++;
            if (judge(v, y[e], y[e], FB_ACT_NONE, bound[e], &ratio))
                tcheck_fail(chk, "%s: Y(%lld,%lld) = %.9g, oracle %.9g",
                            what, (long long)i, (long long)j, v, y[e]);
        }
        if (checked != c->m * c->n)
            tcheck_fail(chk, "%s: %lld elements of Y checked, not %lld",
                        what, (long long)checked, (long long)(c->m * c->n));
        free(in);
        free(Y);
        free(B);
        free(H);
    }
    tbuf_free(&after);
    tbuf_free(&a.img);
}

static const char *const placed_names[NPLACED] = {"X",  "Wg", "bg", "Wu",
                                                  "bu", "Wd", "bd", "Y"};

/* The MLP's operands apart, in argument order, with room before X for a Y
 * that ends where X starts. */
static mlp_placed mlp_apart(fb_dtype dt, int64_t k, int64_t h)
{
    mlp_placed g;
    memset(&g, 0, sizeof g);
    mlp_case c = {0};
    c.dtype = dt;
    c.act = FB_ACT_GELU_TANH;
    c.m = 5, c.k = k, c.h = h, c.n = 6;
    c.ldx = (k > 1 ? k : 1) + 2;
    c.ldy = c.n + 2;
    c.biases = MLP_ALL_BIASES;
    g.c = c;
    g.act = c.act;
    tshape s[NPLACED];
    mlp_shapes_of(&c, s);
    int64_t at = span_elems(&s[PY]) + 5;
    for (int i = 0; i < NPLACED; i++) {
        g.off[i] = at;
        at += tshape_nelem(&s[i]) + 5;
    }
    return g;
}

/* Move every input of g other than keep that Y's elements would meet to
 * the end of the arena, so that a legal case meets only what it means
 * to. */
static void mlp_clear_around_y(mlp_placed *g, int keep)
{
    tshape s[NPLACED];
    mlp_shapes_of(&g->c, s);
    int64_t end = 0;
    for (int i = 0; i < NPLACED; i++)
        if (g->off[i] + tshape_nelem(&s[i]) > end)
            end = g->off[i] + tshape_nelem(&s[i]);
    const int64_t y0 = g->off[PY], y1 = y0 + tshape_nelem(&s[PY]);
    for (int i = 0; i < PY; i++) {
        const int64_t a0 = g->off[i], a1 = a0 + tshape_nelem(&s[i]);
        if (i == keep || a1 <= y0 || y1 <= a0)
            continue;
        g->off[i] = end + 5;
        end = g->off[i] + tshape_nelem(&s[i]);
    }
}

static long overlap_mlp(const target *t)
{
    long tried = 0;
    tcheck chk[4];
    for (int i = 0; i < 4; i++)
        tcheck_init(&chk[i]);
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        if (t->f32_only && dt != FB_DTYPE_F32)
            continue;
        char what[96];
        /* Refused: Y one row after X's start, and Y meeting each input,
         * by its first element or by its last. */
        mlp_placed g = mlp_apart(dt, 7, 9);
        tshape s[NPLACED];
        mlp_shapes_of(&g.c, s);
        const int64_t ey = span_elems(&s[PY]);
        g.off[PY] = g.off[PX] + g.c.ldx;
        mlp_placed_try(&chk[0], t, &g, 16, "Y one row after X's start");
        tried++;
        for (int i = 0; i < PY; i++) {
            g = mlp_apart(dt, 7, 9);
            g.off[PY] = g.off[i] + 1;
            snprintf(what, sizeof what, "Y starting one element into %s",
                     placed_names[i]);
            mlp_placed_try(&chk[0], t, &g, 16, what);
            g.off[PY] = g.off[i] - ey + 1;
            snprintf(what, sizeof what, "Y's last element on %s's first",
                     placed_names[i]);
            mlp_placed_try(&chk[0], t, &g, 16, what);
            tried += 2;
        }
        /* Positions: the lowest bad one, as for every argument; without a
         * valid ldy Y has no range, so ldy is what is wrong. */
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PX];
        g.act = (fb_activation)99;
        mlp_placed_try(&chk[1], t, &g, 3, "Y == X and gate_act 99");
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PX];
        g.wd_null = 1;
        mlp_placed_try(&chk[1], t, &g, 14, "Y == X and Wd NULL");
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PWD];
        g.c.ldx = g.c.k - 1;
        mlp_placed_try(&chk[1], t, &g, 9, "Y == Wd and ldx too small");
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PX];
        g.c.ldy = g.c.n - 1;
        mlp_placed_try(&chk[1], t, &g, 17, "Y == X and ldy too small");
        tried += 4;
        /* Legal: Y next to an input, inputs sharing bytes, and Y on top
         * of inputs the call does not read. */
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PX] - ey;
        mlp_clear_around_y(&g, PX);
        mlp_placed_try(&chk[2], t, &g, 0, "Y ending exactly where X starts");
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PWD] + span_elems(&s[PWD]);
        mlp_clear_around_y(&g, PWD);
        mlp_placed_try(&chk[2], t, &g, 0, "Y starting exactly where Wd "
                       "ends");
        g = mlp_apart(dt, 7, 9);
        g.off[PY] = g.off[PBD] + g.c.n;
        mlp_clear_around_y(&g, PBD);
        mlp_placed_try(&chk[2], t, &g, 0, "Y starting exactly where bd "
                       "ends");
        g = mlp_apart(dt, 7, 9);
        g.off[PWG] = g.off[PX];
        g.off[PBU] = g.off[PWU] + 3;
        mlp_placed_try(&chk[2], t, &g, 0, "Wg on X, bu inside Wu (inputs "
                       "only)");
        tried += 4;
        g = mlp_apart(dt, 0, 9);
        g.off[PY] = g.off[PX];
        mlp_clear_around_y(&g, PX);
        mlp_placed_try(&chk[3], t, &g, 0, "k = 0: Y == X (X not read)");
        g = mlp_apart(dt, 7, 0);
        g.off[PY] = g.off[PWD];
        mlp_clear_around_y(&g, PWD);
        g.off[PBG] = g.off[PWD] + 1;
        mlp_placed_try(&chk[3], t, &g, 0, "h = 0: Y on Wd and bg (not "
                       "read)");
        tried += 2;
    }
    tap_check(&chk[0], "%s: mlp_geglu_forward, Y one row after X, and Y "
              "meeting each input by its first or last element -> argument "
              "16, nothing written", t->name);
    tap_check(&chk[1], "%s: mlp_geglu_forward, Y overlapping an input "
              "beside another bad argument: the lowest position (3, 14, "
              "9; 17 when ldy is bad), nothing written", t->name);
    tap_check(&chk[2], "%s: mlp_geglu_forward, Y next to inputs and "
              "inputs sharing bytes: accepted, Y right, nothing else "
              "touched", t->name);
    tap_check(&chk[3], "%s: mlp_geglu_forward, Y on top of inputs the call "
              "does not read (k = 0, h = 0): accepted, Y right", t->name);
    return tried;
}

/* ---- gemm ------------------------------------------------------------------ */

static const mutation gemm_muts[] = {
    {1, 1, MK_BOGUS_HANDLE, 0, "handle not from fb_create"},
    {1, 1, MK_DEAD_HANDLE, 0, "handle already destroyed"},
    {2, 2, MK_SET, 0, "layout 0"},
    {2, 2, MK_SET, 100, "layout 100"},
    {2, 2, MK_SET, 103, "layout 103"},
    {2, 2, MK_SET, FB_NO_TRANS, "layout = a transpose value"},
    {2, 2, MK_SET, -1, "layout -1"},
    {3, 3, MK_SET, 0, "transa 0"},
    {3, 3, MK_SET, 110, "transa 110"},
    {3, 3, MK_SET, 114, "transa 114"},
    {3, 3, MK_SET, FB_ROW_MAJOR, "transa = a layout value"},
    {4, 4, MK_SET, 0, "transb 0"},
    {4, 4, MK_SET, 110, "transb 110"},
    {4, 4, MK_SET, 114, "transb 114"},
    {4, 4, MK_SET, FB_COL_MAJOR, "transb = a layout value"},
    {5, 5, MK_SET, -1, "m -1"},
    {5, 5, MK_SET, INT64_MIN, "m INT64_MIN"},
    {6, 6, MK_SET, -1, "n -1"},
    {6, 6, MK_SET, INT64_MIN, "n INT64_MIN"},
    {7, 7, MK_SET, -1, "k -1"},
    {7, 7, MK_SET, INT64_MIN, "k INT64_MIN"},
    {5, 10, MK_SET, TWO62, "m 2^62: A no longer fits"},
    {6, 12, MK_SET, TWO62, "n 2^62: B no longer fits"},
    {7, 10, MK_SET, TWO62, "k 2^62: A no longer fits"},
    {9, 9, MK_NULL, 0, "A NULL"},
    {9, 9, MK_SHIFT, 1, "A at an odd address"},
    {9, 9, MK_SHIFT, 2, "A 2 bytes off its 4-byte alignment"},
    {10, 10, MK_BELOW, 1, "lda one below max(1, rows)"},
    {10, 10, MK_SET, 0, "lda 0"},
    {10, 10, MK_SET, -1, "lda -1"},
    {10, 10, MK_SET, INT64_MIN, "lda INT64_MIN"},
    {10, 10, MK_SET, TWO62, "lda 2^62: element count overflows int64"},
    {10, 10, MK_SET, TWO60, "lda 2^60: byte count overflows"},
    {11, 11, MK_NULL, 0, "B NULL"},
    {11, 11, MK_SHIFT, 1, "B at an odd address"},
    {11, 11, MK_SHIFT, 2, "B 2 bytes off its 4-byte alignment"},
    {12, 12, MK_BELOW, 1, "ldb one below max(1, rows)"},
    {12, 12, MK_SET, 0, "ldb 0"},
    {12, 12, MK_SET, -1, "ldb -1"},
    {12, 12, MK_SET, INT64_MIN, "ldb INT64_MIN"},
    {12, 12, MK_SET, TWO62, "ldb 2^62: element count overflows int64"},
    {12, 12, MK_SET, TWO60, "ldb 2^60: byte count overflows"},
    {14, 14, MK_NULL, 0, "C NULL"},
    {14, 14, MK_SHIFT, 1, "C at an odd address"},
    {14, 14, MK_SHIFT, 2, "C 2 bytes off its 4-byte alignment"},
    {15, 15, MK_BELOW, 1, "ldc one below max(1, rows)"},
    {15, 15, MK_SET, 0, "ldc 0"},
    {15, 15, MK_SET, -1, "ldc -1"},
    {15, 15, MK_SET, INT64_MIN, "ldc INT64_MIN"},
    {15, 15, MK_SET, TWO62, "ldc 2^62: element count overflows int64"},
    {15, 15, MK_SET, TWO60, "ldc 2^60: byte count overflows"},
    {16, 16, MK_SHIFT, 1, "bias at an odd address"},
    {16, 16, MK_SHIFT, 2, "bias 2 bytes off its 4-byte alignment"},
    {17, 17, MK_SET, -1, "act -1"},
    {17, 17, MK_SET, 5, "act 5"},
    {17, 17, MK_SET, 99, "act 99"},
};
#define N_GEMM_MUTS ((int)(sizeof gemm_muts / sizeof gemm_muts[0]))

typedef struct gemm_args {
    fb_handle h;
    fb_layout layout;
    fb_transpose ta, tb;
    int64_t m, n, k;
    float alpha;
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    float beta;
    void *C;
    int64_t ldc;
    const void *bias;
    fb_activation act;
} gemm_args;

/* A valid call placed in a target's memory, to be spoiled. */
typedef struct gemm_base {
    const target *t;
    gemm_case c;
    gemm_data d;
    void *alloc[4]; /* A, B, C, bias */
    gemm_args args;
    int64_t min_ld[3];
} gemm_base;

static void gemm_base_make(gemm_base *g, const target *t, fb_dtype dtype,
                           fb_layout layout, fb_transpose ta,
                           fb_transpose tb)
{
    gemm_case c = {0};
    c.dtype = dtype;
    c.layout = layout;
    c.transa = ta;
    c.transb = tb;
    c.m = 5, c.n = 6, c.k = 7; /* distinct, so a rule on the wrong one fails */
    c.alpha = 0.7f;
    c.beta = 1.3f;
    c.has_bias = 1;
    c.act = FB_ACT_GELU_TANH;
    gemm_case_set_lds(&c, 0, 0, 0);
    g->min_ld[0] = c.lda, g->min_ld[1] = c.ldb, g->min_ld[2] = c.ldc;
    gemm_case_set_lds(&c, 2, 2, 2);
    g->t = t;
    g->c = c;
    gemm_data_make(&g->d, &c);
    void *p[4];
    g->alloc[0] = tbuf_place(&g->d.A, t->mem, &p[0]);
    g->alloc[1] = tbuf_place(&g->d.B, t->mem, &p[1]);
    g->alloc[2] = tbuf_place(&g->d.C, t->mem, &p[2]);
    g->alloc[3] = tbuf_place(&g->d.bias, t->mem, &p[3]);
    const gemm_args a = {t->handle, layout, ta,   tb,     c.m,  c.n,
                         c.k,       c.alpha, p[0], c.lda, p[1], c.ldb,
                         c.beta,    p[2],    c.ldc, p[3], c.act};
    g->args = a;
}

static void gemm_base_free(gemm_base *g)
{
    for (int i = 0; i < 4; i++)
        g->t->mem->release(g->alloc[i]);
    gemm_data_free(&g->d);
}

static const void *shifted(const void *p, int64_t bytes)
{
    return (const unsigned char *)p + bytes;
}

static void gemm_apply(gemm_args *a, const gemm_base *g, const mutation *mu)
{
    const int64_t v = mu->v;
    switch (mu->kind) {
    case MK_BOGUS_HANDLE:
        a->h = bogus_handle();
        return;
    case MK_DEAD_HANDLE:
        a->h = dead_handle();
        return;
    case MK_NULL:
    case MK_SHIFT: {
        const int64_t by = mu->kind == MK_NULL ? 0 : v;
        switch (mu->arg) {
        case 9: a->A = by ? shifted(a->A, by) : NULL; break;
        case 11: a->B = by ? shifted(a->B, by) : NULL; break;
        case 14: a->C = by ? (void *)shifted(a->C, by) : NULL; break;
        case 16: a->bias = by ? shifted(a->bias, by) : NULL; break;
        }
        return;
    }
    case MK_BELOW:
        switch (mu->arg) {
        case 10: a->lda = g->min_ld[0] - v; break;
        case 12: a->ldb = g->min_ld[1] - v; break;
        case 15: a->ldc = g->min_ld[2] - v; break;
        }
        return;
    case MK_SET:
        switch (mu->arg) {
        case 2: a->layout = (fb_layout)v; break;
        case 3: a->ta = (fb_transpose)v; break;
        case 4: a->tb = (fb_transpose)v; break;
        case 5: a->m = v; break;
        case 6: a->n = v; break;
        case 7: a->k = v; break;
        case 10: a->lda = v; break;
        case 12: a->ldb = v; break;
        case 15: a->ldc = v; break;
        case 17: a->act = (fb_activation)v; break;
        }
        return;
    }
}

/* C must be bit-for-bit what was placed; if not, record it and put the
 * original back so that the next case starts clean. */
static void output_unchanged(tcheck *chk, const char *what, const tbuf *img,
                             const target *t, void *alloc)
{
    tbuf after;
    tbuf_fetch(img, t->mem, alloc, &after);
    tcheck probe;
    tcheck_init(&probe);
    check_untouched(&probe, "output", img, &after, NULL);
    if (probe.failed) {
        tcheck_fail(chk, "%s: %s", what, probe.diag[0]);
        t->mem->put(alloc, img->img, img->bytes);
    }
    tbuf_free(&after);
}

/* One bad call (one or two mutations). */
static void gemm_try(tcheck *chk, const gemm_base *g, const mutation *m1,
                     const mutation *m2)
{
    gemm_args a = g->args;
    gemm_apply(&a, g, m1);
    if (m2 != NULL)
        gemm_apply(&a, g, m2);
    const int expect = m2 && m2->expect < m1->expect ? m2->expect : m1->expect;
    const int handle_bad = m1->arg == 1 || (m2 && m2->arg == 1);
    const fb_status st = gemm_call(a.h, g->c.dtype, a.layout, a.ta, a.tb,
                                   a.m, a.n, a.k, a.alpha, a.A, a.lda, a.B,
                                   a.ldb, a.beta, a.C, a.ldc, a.bias, a.act);
    char what[256], label[160];
    gemm_case_label(&g->c, label, sizeof label);
    snprintf(what, sizeof what, "%s%s%s [%s]", m1->what, m2 ? " + " : "",
             m2 ? m2->what : "", label);
    verdict(chk, what, st, g->t->handle, handle_bad, expect);
    output_unchanged(chk, what, &g->d.C, g->t, g->alloc[2]);
}

long badargs_gemm(const target *t)
{
    static const fb_layout layouts[2] = {FB_ROW_MAJOR, FB_COL_MAJOR};
    static const fb_transpose tr[2] = {FB_NO_TRANS, FB_TRANS};
    long tried = 0;
    (void)fb_handle_last_status(NULL); /* make the default handle now */
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        gemm_base base[8];
        for (int cfg = 0; cfg < 8; cfg++)
            gemm_base_make(&base[cfg], t, dt, layouts[cfg / 4],
                           tr[(cfg / 2) % 2], tr[cfg % 2]);
        /* Each row alone, under every layout and transpose pair. */
        for (int i = 0; i < N_GEMM_MUTS; i++) {
            const mutation *mu = &gemm_muts[i];
            if (!applies(mu, dt_size(dt)))
                continue;
            tcheck chk;
            tcheck_init(&chk);
            for (int cfg = 0; cfg < 8; cfg++, tried++)
                gemm_try(&chk, &base[cfg], mu, NULL);
            tap_check(&chk, "%s: %cgemm_bias_act %s -> argument %d, C "
                      "unchanged (8 layouts/transposes)",
                      t->name, dt_prefix(dt), mu->what, mu->expect);
        }
        /* Every pair of rows for different arguments: the lower wins. */
        tcheck chk;
        tcheck_init(&chk);
        long pairs = 0;
        for (int cfg = 0; cfg < 8; cfg += 7) /* row NN and col TT */
            for (int i = 0; i < N_GEMM_MUTS; i++)
                for (int j = i + 1; j < N_GEMM_MUTS; j++) {
                    const mutation *a = &gemm_muts[i], *b = &gemm_muts[j];
                    if (a->arg == b->arg || !plain(a) || !plain(b) ||
                        !applies(a, dt_size(dt)) || !applies(b, dt_size(dt)))
                        continue;
                    gemm_try(&chk, &base[cfg], a, b);
                    gemm_try(&chk, &base[cfg], b, a);
                    pairs += 2;
                }
        tried += pairs;
        tap_check(&chk, "%s: %cgemm_bias_act, %ld calls with two bad "
                  "arguments report the lower position, C unchanged",
                  t->name, dt_prefix(dt), pairs);
        for (int cfg = 0; cfg < 8; cfg++)
            gemm_base_free(&base[cfg]);
    }
    return tried + overlap_gemm(t);
}

/* ---- mlp --------------------------------------------------------------------- */

static const mutation mlp_muts[] = {
    {1, 1, MK_BOGUS_HANDLE, 0, "handle not from fb_create"},
    {1, 1, MK_DEAD_HANDLE, 0, "handle already destroyed"},
    {2, 2, MK_SET, -1, "dtype -1"},
    {2, 2, MK_SET, 3, "dtype 3"},
    {2, 2, MK_SET, 99, "dtype 99"},
    {3, 3, MK_SET, -1, "gate_act -1"},
    {3, 3, MK_SET, 5, "gate_act 5"},
    {3, 3, MK_SET, 99, "gate_act 99"},
    {4, 4, MK_SET, -1, "m -1"},
    {4, 4, MK_SET, INT64_MIN, "m INT64_MIN"},
    {5, 5, MK_SET, -1, "k -1"},
    {5, 5, MK_SET, INT64_MIN, "k INT64_MIN"},
    {6, 6, MK_SET, -1, "h -1"},
    {6, 6, MK_SET, INT64_MIN, "h INT64_MIN"},
    {7, 7, MK_SET, -1, "n -1"},
    {7, 7, MK_SET, INT64_MIN, "n INT64_MIN"},
    {4, 9, MK_SET, TWO62, "m 2^62: X no longer fits"},
    {5, 9, MK_SET, TWO62, "k 2^62: X no longer fits"},
    {6, 10, MK_SET, TWO62, "h 2^62: Wg no longer fits"},
    {7, 14, MK_SET, TWO62, "n 2^62: Wd no longer fits"},
    {8, 8, MK_NULL, 0, "X NULL"},
    {8, 8, MK_SHIFT, 1, "X at an odd address"},
    {8, 8, MK_SHIFT, 2, "X 2 bytes off its 4-byte alignment"},
    {9, 9, MK_BELOW, 1, "ldx one below max(1, k)"},
    {9, 9, MK_SET, 0, "ldx 0"},
    {9, 9, MK_SET, -1, "ldx -1"},
    {9, 9, MK_SET, INT64_MIN, "ldx INT64_MIN"},
    {9, 9, MK_SET, TWO62, "ldx 2^62: element count overflows int64"},
    {9, 9, MK_SET, TWO60, "ldx 2^60: byte count overflows"},
    {10, 10, MK_NULL, 0, "Wg NULL"},
    {10, 10, MK_SHIFT, 1, "Wg at an odd address"},
    {10, 10, MK_SHIFT, 2, "Wg 2 bytes off its 4-byte alignment"},
    {11, 11, MK_SHIFT, 1, "bg at an odd address"},
    {11, 11, MK_SHIFT, 2, "bg 2 bytes off its 4-byte alignment"},
    {12, 12, MK_NULL, 0, "Wu NULL"},
    {12, 12, MK_SHIFT, 1, "Wu at an odd address"},
    {12, 12, MK_SHIFT, 2, "Wu 2 bytes off its 4-byte alignment"},
    {13, 13, MK_SHIFT, 1, "bu at an odd address"},
    {13, 13, MK_SHIFT, 2, "bu 2 bytes off its 4-byte alignment"},
    {14, 14, MK_NULL, 0, "Wd NULL"},
    {14, 14, MK_SHIFT, 1, "Wd at an odd address"},
    {14, 14, MK_SHIFT, 2, "Wd 2 bytes off its 4-byte alignment"},
    {15, 15, MK_SHIFT, 1, "bd at an odd address"},
    {15, 15, MK_SHIFT, 2, "bd 2 bytes off its 4-byte alignment"},
    {16, 16, MK_NULL, 0, "Y NULL"},
    {16, 16, MK_SHIFT, 1, "Y at an odd address"},
    {16, 16, MK_SHIFT, 2, "Y 2 bytes off its 4-byte alignment"},
    {17, 17, MK_BELOW, 1, "ldy one below max(1, n)"},
    {17, 17, MK_SET, 0, "ldy 0"},
    {17, 17, MK_SET, -1, "ldy -1"},
    {17, 17, MK_SET, INT64_MIN, "ldy INT64_MIN"},
    {17, 17, MK_SET, TWO62, "ldy 2^62: element count overflows int64"},
    {17, 17, MK_SET, TWO60, "ldy 2^60: byte count overflows"},
};
#define N_MLP_MUTS ((int)(sizeof mlp_muts / sizeof mlp_muts[0]))

/* Argument slots of mlp_geglu_forward, by position. */
typedef struct mlp_args {
    fb_handle h;
    fb_dtype dtype;
    fb_activation act;
    int64_t dim[4];      /* positions 4..7: m, k, h, n */
    const void *ptr[10]; /* positions 8..17 that are pointers (8, 10..16) */
    int64_t ldx, ldy;
} mlp_args;

typedef struct mlp_base {
    const target *t;
    mlp_case c;
    mlp_data d;
    void *alloc[8]; /* X, Wg, bg, Wu, bu, Wd, bd, Y in argument order */
    mlp_args args;
} mlp_base;

static void mlp_base_make(mlp_base *g, const target *t, fb_dtype dtype)
{
    mlp_case c = {0};
    c.dtype = dtype;
    c.act = FB_ACT_GELU_TANH;
    c.m = 5, c.k = 7, c.h = 9, c.n = 6;
    c.ldx = c.k + 2;
    c.ldy = c.n + 2;
    c.biases = MLP_ALL_BIASES;
    g->t = t;
    g->c = c;
    mlp_data_make(&g->d, &c);
    const tbuf *order[8] = {&g->d.X,  &g->d.Wg, &g->d.bg, &g->d.Wu,
                            &g->d.bu, &g->d.Wd, &g->d.bd, &g->d.Y};
    static const int pos[8] = {8, 10, 11, 12, 13, 14, 15, 16};
    memset(&g->args, 0, sizeof g->args);
    for (int i = 0; i < 8; i++) {
        void *p;
        g->alloc[i] = tbuf_place(order[i], t->mem, &p);
        g->args.ptr[pos[i] - 8] = p;
    }
    g->args.h = t->handle;
    g->args.dtype = dtype;
    g->args.act = c.act;
    g->args.dim[0] = c.m, g->args.dim[1] = c.k;
    g->args.dim[2] = c.h, g->args.dim[3] = c.n;
    g->args.ldx = c.ldx;
    g->args.ldy = c.ldy;
}

static void mlp_base_free(mlp_base *g)
{
    for (int i = 0; i < 8; i++)
        g->t->mem->release(g->alloc[i]);
    mlp_data_free(&g->d);
}

static void mlp_apply(mlp_args *a, const mlp_base *g, const mutation *mu)
{
    const int64_t v = mu->v;
    switch (mu->kind) {
    case MK_BOGUS_HANDLE:
        a->h = bogus_handle();
        return;
    case MK_DEAD_HANDLE:
        a->h = dead_handle();
        return;
    case MK_NULL:
        a->ptr[mu->arg - 8] = NULL;
        return;
    case MK_SHIFT:
        a->ptr[mu->arg - 8] = shifted(a->ptr[mu->arg - 8], v);
        return;
    case MK_BELOW:
        if (mu->arg == 9)
            a->ldx = (g->c.k > 1 ? g->c.k : 1) - v;
        else
            a->ldy = (g->c.n > 1 ? g->c.n : 1) - v;
        return;
    case MK_SET:
        if (mu->arg == 2)
            a->dtype = (fb_dtype)v;
        else if (mu->arg == 3)
            a->act = (fb_activation)v;
        else if (mu->arg >= 4 && mu->arg <= 7)
            a->dim[mu->arg - 4] = v;
        else if (mu->arg == 9)
            a->ldx = v;
        else if (mu->arg == 17)
            a->ldy = v;
        return;
    }
}

static void mlp_try(tcheck *chk, const mlp_base *g, const mutation *m1,
                    const mutation *m2)
{
    mlp_args a = g->args;
    mlp_apply(&a, g, m1);
    if (m2 != NULL)
        mlp_apply(&a, g, m2);
    const int expect = m2 && m2->expect < m1->expect ? m2->expect : m1->expect;
    const int handle_bad = m1->arg == 1 || (m2 && m2->arg == 1);
    const fb_status st = mlp_geglu_forward(
        a.h, a.dtype, a.act, a.dim[0], a.dim[1], a.dim[2], a.dim[3],
        a.ptr[0], a.ldx, a.ptr[2], a.ptr[3], a.ptr[4], a.ptr[5], a.ptr[6],
        a.ptr[7], (void *)a.ptr[8], a.ldy);
    char what[256];
    snprintf(what, sizeof what, "%s%s%s [mlp %s]", m1->what, m2 ? " + " : "",
             m2 ? m2->what : "", dt_name(g->c.dtype));
    verdict(chk, what, st, g->t->handle, handle_bad, expect);
    output_unchanged(chk, what, &g->d.Y, g->t, g->alloc[7]);
}

long badargs_mlp(const target *t)
{
    long tried = 0;
    (void)fb_handle_last_status(NULL);
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        mlp_base base;
        mlp_base_make(&base, t, dt);
        for (int i = 0; i < N_MLP_MUTS; i++) {
            const mutation *mu = &mlp_muts[i];
            if (!applies(mu, dt_size(dt)))
                continue;
            tcheck chk;
            tcheck_init(&chk);
            mlp_try(&chk, &base, mu, NULL);
            tried++;
            tap_check(&chk, "%s: mlp_geglu_forward %s %s -> argument %d, Y "
                      "unchanged", t->name, dt_name(dt), mu->what,
                      mu->expect);
        }
        tcheck chk;
        tcheck_init(&chk);
        long pairs = 0;
        for (int i = 0; i < N_MLP_MUTS; i++)
            for (int j = i + 1; j < N_MLP_MUTS; j++) {
                const mutation *a = &mlp_muts[i], *b = &mlp_muts[j];
                if (a->arg == b->arg || !plain(a) || !plain(b) ||
                    !applies(a, dt_size(dt)) || !applies(b, dt_size(dt)))
                    continue;
                mlp_try(&chk, &base, a, b);
                mlp_try(&chk, &base, b, a);
                pairs += 2;
            }
        tried += pairs;
        tap_check(&chk, "%s: mlp_geglu_forward %s, %ld calls with two bad "
                  "arguments report the lower position, Y unchanged",
                  t->name, dt_name(dt), pairs);
        mlp_base_free(&base);
    }
    return tried + overlap_mlp(t);
}

/* ---- handles ------------------------------------------------------------------- */

long badargs_handle(void)
{
    long tried = 0;
    tcheck chk;
    (void)fb_handle_last_status(NULL);
    fb_handle h = handle_on(FB_BACKEND_CPU);

    /* Bad values for the setters: argument 2, setting kept. */
    tcheck_init(&chk);
    static const int bad_backends[] = {-1, 5, 99, INT_MIN};
    for (size_t i = 0; i < sizeof bad_backends / sizeof bad_backends[0];
         i++, tried++) {
        fb_status st = fb_set_backend(h, (fb_backend)bad_backends[i]);
        verdict(&chk, "fb_set_backend", st, h, 0, 2);
        fb_backend b = FB_BACKEND_AUTO;
        if (fb_get_backend(h, &b) != FB_STATUS_SUCCESS || b != FB_BACKEND_CPU)
            tcheck_fail(&chk, "fb_set_backend(%d) changed the backend to %d",
                        bad_backends[i], (int)b);
    }
    tap_check(&chk, "fb_set_backend: unknown backends -> argument 2, setting "
              "kept");

    tcheck_init(&chk);
    verdict(&chk, "fb_get_backend(h, NULL)", fb_get_backend(h, NULL), h, 0,
            2);
    tried++;
    tap_check(&chk, "fb_get_backend with a NULL result pointer -> argument 2");

    tcheck_init(&chk);
    verdict(&chk, "fb_set_threads(-1)", fb_set_threads(h, -1), h, 0, 2);
    verdict(&chk, "fb_set_threads(INT_MIN)", fb_set_threads(h, INT_MIN), h, 0,
            2);
    tried += 2;
    tap_check(&chk, "fb_set_threads: negative counts -> argument 2");

    tcheck_init(&chk);
    static const int bad_modes[] = {-1, 2, 99};
    for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++, tried++)
        verdict(&chk, "fb_set_math_mode",
                fb_set_math_mode(h, (fb_math_mode)bad_modes[i]), h, 0, 2);
    tap_check(&chk, "fb_set_math_mode: unknown modes -> argument 2");

    tcheck_init(&chk);
    verdict(&chk, "fb_set_cuda_device(-1)", fb_set_cuda_device(h, -1), h, 0,
            2);
    verdict(&chk, "fb_set_cuda_device(INT_MIN)",
            fb_set_cuda_device(h, INT_MIN), h, 0, 2);
    tried += 2;
    tap_check(&chk, "fb_set_cuda_device: negative devices -> argument 2");

    /* fb_create(NULL): argument 1, recorded on the default handle. */
    tcheck_init(&chk);
    verdict(&chk, "fb_create(NULL)", fb_create(NULL), NULL, 1, 1);
    tried++;
    tap_check(&chk, "fb_create(NULL) -> argument 1");

    /* Every setter and getter with a handle that is not one: argument 1,
     * even when the value is bad too. */
    for (int kind = 0; kind < 2; kind++) {
        const char *name = kind ? "destroyed handle" : "handle not from fb_create";
        tcheck_init(&chk);
        fb_backend b;
#define BAD_HANDLE(call)                                                       \
    do {                                                                       \
        fb_handle x = kind ? dead_handle() : bogus_handle();                   \
        verdict(&chk, #call, call, NULL, 1, 1);                                \
        tried++;                                                               \
    } while (0)
        BAD_HANDLE(fb_set_backend(x, FB_BACKEND_CPU));
        BAD_HANDLE(fb_set_backend(x, (fb_backend)99));
        BAD_HANDLE(fb_get_backend(x, &b));
        BAD_HANDLE(fb_get_backend(x, NULL));
        BAD_HANDLE(fb_set_threads(x, 1));
        BAD_HANDLE(fb_set_threads(x, -1));
        BAD_HANDLE(fb_set_math_mode(x, FB_MATH_DEFAULT));
        BAD_HANDLE(fb_set_verbose(x, 0));
        BAD_HANDLE(fb_set_cuda_device(x, 0));
        BAD_HANDLE(fb_set_cuda_stream(x, NULL));
#undef BAD_HANDLE
        fb_handle x = kind ? dead_handle() : bogus_handle();
        const fb_status last = fb_handle_last_status(x);
        const int arg = fb_handle_last_arg(x);
        const char *msg = fb_handle_last_message(x);
        const char *path = fb_handle_last_path(x);
        const fb_backend ran = fb_handle_last_backend(x);
        tried++;
        if (last != FB_STATUS_INVALID_ARGUMENT || arg != 1 || msg == NULL ||
            path == NULL || ran != FB_BACKEND_AUTO)
            tcheck_fail(&chk, "the getters on a %s: status %s, arg %d, "
                        "message %s, path %s, backend %s", name,
                        fb_status_string(last), arg, msg ? "set" : "NULL",
                        path ? "set" : "NULL", fb_backend_name(ran));
        x = kind ? dead_handle() : bogus_handle();
        if (fb_destroy(x) != FB_STATUS_INVALID_ARGUMENT)
            tcheck_fail(&chk, "fb_destroy of a %s did not say invalid "
                        "argument", name);
        tried++;
        tap_check(&chk, "setters, getters and fb_destroy with a %s -> "
                  "argument 1", name);
    }
    fb_destroy(h);
    return tried;
}

/* ---- legal edge cases ------------------------------------------------------------ */

/* A success that must leave every byte of C as it was. */
static void quick_success(tcheck *chk, const target *t, const char *what,
                          fb_dtype dt, int64_t m, int64_t n, int null_ops)
{
    gemm_case c = {0};
    c.dtype = dt;
    c.layout = FB_COL_MAJOR;
    c.transa = c.transb = FB_NO_TRANS;
    c.m = m, c.n = n, c.k = 7;
    c.alpha = 0.7f, c.beta = 1.3f;
    c.has_bias = 1;
    c.act = FB_ACT_SILU;
    gemm_case_set_lds(&c, 1, 1, 1);
    gemm_data d;
    gemm_data_make(&d, &c);
    void *pa, *pb, *pc, *pbias;
    void *aa = tbuf_place(&d.A, t->mem, &pa);
    void *ab = tbuf_place(&d.B, t->mem, &pb);
    void *ac = tbuf_place(&d.C, t->mem, &pc);
    void *abias = tbuf_place(&d.bias, t->mem, &pbias);
    const fb_status st = gemm_call(
        t->handle, dt, c.layout, c.transa, c.transb, c.m, c.n, c.k, c.alpha,
        null_ops ? NULL : pa, c.lda, null_ops ? NULL : pb, c.ldb, c.beta,
        null_ops ? NULL : pc, c.ldc, pbias, c.act);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(chk, "%s: status %s (%s)", what, fb_status_string(st),
                    fb_handle_last_message(t->handle));
    tbuf after;
    tbuf_fetch(&d.C, t->mem, ac, &after);
    check_untouched(chk, what, &d.C, &after, NULL);
    tbuf_free(&after);
    t->mem->release(aa);
    t->mem->release(ab);
    t->mem->release(ac);
    t->mem->release(abias);
    gemm_data_free(&d);
}

/* k == 0 with A and B NULL: C = act(beta C + bias), checked element by
 * element against the oracle. */
static void k_zero(tcheck *chk, const target *t, fb_dtype dt, float beta,
                   int has_bias, fb_activation act)
{
    gemm_case c = {0};
    c.dtype = dt;
    c.layout = FB_ROW_MAJOR;
    c.transa = FB_NO_TRANS;
    c.transb = FB_TRANS;
    c.m = 6, c.n = 5, c.k = 0;
    c.alpha = 0.7f, c.beta = beta;
    c.has_bias = has_bias;
    c.act = act;
    gemm_case_set_lds(&c, 0, 0, 3);
    gemm_data d;
    gemm_data_make(&d, &c);
    void *pc, *pbias;
    void *ac = tbuf_place(&d.C, t->mem, &pc);
    void *abias = tbuf_place(&d.bias, t->mem, &pbias);
    const fb_status st = gemm_call(t->handle, dt, c.layout, c.transa,
                                   c.transb, c.m, c.n, c.k, c.alpha, NULL,
                                   c.lda, NULL, c.ldb, c.beta, pc, c.ldc,
                                   has_bias ? pbias : NULL, act);
    tbuf after;
    tbuf_fetch(&d.C, t->mem, ac, &after);
    t->mem->release(ac);
    t->mem->release(abias);
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "k = 0, beta %g: status %s (%s)", (double)beta,
                    fb_status_string(st), fb_handle_last_message(t->handle));
    } else {
        check_untouched(chk, "C", &d.C, &after, &d.sc);
        const tol tl = target_tol(t, dt);
        int64_t i, j;
        for (int64_t e = 0; e < d.C.nelem; e++) {
            if (!tshape_window(&d.sc, e, &i, &j))
                continue;
            double z = 0.0, g = 0.0;
            if (beta != 0.0f) {
                const double c0 = dt_get(dt, tbuf_data(&d.C), e);
                z += (double)beta * c0;
                g += fabs((double)beta * c0);
            }
            if (has_bias) {
                const double b = dt_get(dt, tbuf_data(&d.bias), j);
                z += b;
                g += fabs(b);
            }
            const double want = oracle_act(act, z);
            const double got = dt_get(dt, tbuf_data(&after), e);
            double ratio;
            if (judge(got, want, z, act, tol_gemm(&tl, 0, act, g, want),
                      &ratio))
                tcheck_fail(chk, "k = 0, beta %g, %s, %s: C(%lld,%lld) = "
                            "%.9g, expected %.9g", (double)beta,
                            has_bias ? "bias" : "no bias", act_name(act),
                            (long long)i, (long long)j, got, want);
        }
    }
    tbuf_free(&after);
    gemm_data_free(&d);
}

long edge_cases(const target *t)
{
    long tried = 0;
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        tcheck chk;
        tcheck_init(&chk);
        quick_success(&chk, t, "m = 0", dt, 0, 6, 0);
        quick_success(&chk, t, "n = 0", dt, 5, 0, 0);
        quick_success(&chk, t, "m = n = 0", dt, 0, 0, 0);
        quick_success(&chk, t, "m = 0, A, B, C NULL", dt, 0, 6, 1);
        quick_success(&chk, t, "n = 0, A, B, C NULL", dt, 5, 0, 1);
        tried += 5;
        tap_check(&chk, "%s: %cgemm_bias_act with m = 0 or n = 0 succeeds "
                  "and writes nothing", t->name, dt_prefix(dt));

        tcheck_init(&chk);
        for (int a = 0; a < N_ACTS; a++)
            for (int b = 0; b < 2; b++, tried += 2) {
                k_zero(&chk, t, dt, 1.3f, b, all_acts[a]);
                k_zero(&chk, t, dt, 0.0f, b, all_acts[a]);
            }
        tap_check(&chk, "%s: %cgemm_bias_act with k = 0 and A, B NULL gives "
                  "act(beta C + bias)", t->name, dt_prefix(dt));

        /* The ld rule holds for an empty matrix too: lda >= max(1, rows). */
        tcheck_init(&chk);
        void *pc;
        tbuf cimg;
        tbuf_init(&cimg, dt, 8, 0);
        void *ac = tbuf_place(&cimg, t->mem, &pc);
        fb_status st = gemm_call(t->handle, dt, FB_COL_MAJOR, FB_NO_TRANS,
                                 FB_NO_TRANS, 0, 4, 3, 1.0f, NULL, 0, NULL,
                                 3, 0.0f, pc, 1, NULL, FB_ACT_NONE);
        verdict(&chk, "m = 0, lda = 0", st, t->handle, 0, 10);
        st = gemm_call(t->handle, dt, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                       4, 0, 3, 1.0f, NULL, 3, NULL, 0, 0.0f, pc, 1, NULL,
                       FB_ACT_NONE);
        verdict(&chk, "n = 0 row-major, ldb = 0", st, t->handle, 0, 12);
        st = gemm_call(t->handle, dt, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                       0, 0, 0, 1.0f, NULL, 1, NULL, 1, 0.0f, pc, 0, NULL,
                       FB_ACT_NONE);
        verdict(&chk, "m = n = k = 0, ldc = 0", st, t->handle, 0, 15);
        tried += 3;
        output_unchanged(&chk, "empty calls", &cimg, t, ac);
        t->mem->release(ac);
        tbuf_free(&cimg);
        tap_check(&chk, "%s: %cgemm_bias_act checks ld >= max(1, rows) for "
                  "empty matrices too", t->name, dt_prefix(dt));

        /* mlp with m = 0 or n = 0: a success that writes nothing. */
        tcheck_init(&chk);
        for (int which = 0; which < 2; which++, tried++) {
            mlp_case c = {0};
            c.dtype = dt;
            c.act = FB_ACT_SILU;
            c.m = which ? 4 : 0, c.k = 7, c.h = 9, c.n = which ? 0 : 6;
            c.ldx = 8, c.ldy = 7;
            c.biases = MLP_ALL_BIASES;
            mlp_data d;
            mlp_data_make(&d, &c);
            void *py;
            void *ay = tbuf_place(&d.Y, t->mem, &py);
            st = mlp_geglu_forward(t->handle, dt, c.act, c.m, c.k, c.h, c.n,
                                   NULL, c.ldx, NULL, NULL, NULL, NULL, NULL,
                                   NULL, py, c.ldy);
            if (st != FB_STATUS_SUCCESS)
                tcheck_fail(&chk, "mlp m = %lld, n = %lld with NULL inputs: "
                            "status %s (%s)", (long long)c.m, (long long)c.n,
                            fb_status_string(st),
                            fb_handle_last_message(t->handle));
            output_unchanged(&chk, "mlp empty", &d.Y, t, ay);
            t->mem->release(ay);
            mlp_data_free(&d);
        }
        tap_check(&chk, "%s: mlp_geglu_forward %s with m = 0 or n = 0 "
                  "succeeds and writes nothing", t->name, dt_name(dt));
    }
    return tried;
}

/* ---- a named backend that cannot run --------------------------------------- */

/* One empty call on h (what: its label): the status the rule asks for, a
 * message with a failure, and the output's bytes (live, in host memory)
 * as the snapshot img holds them; put back if not. */
static void empty_call_verdict(tcheck *chk, fb_handle h, const char *what,
                               fb_status st, fb_status want, int want_arg,
                               const tbuf *img, tbuf *live)
{
    if (st != want)
        tcheck_fail(chk, "%s: status %s, expected %s (%s)", what,
                    fb_status_string(st), fb_status_string(want),
                    fb_handle_last_message(h));
    else if (want != FB_STATUS_SUCCESS) {
        const char *msg = fb_handle_last_message(h);
        if (fb_handle_last_status(h) != want || msg == NULL || *msg == '\0')
            tcheck_fail(chk, "%s: last status %s, message \"%s\"", what,
                        fb_status_string(fb_handle_last_status(h)),
                        msg ? msg : "(null)");
        if (want == FB_STATUS_INVALID_ARGUMENT &&
            fb_handle_last_arg(h) != want_arg)
            tcheck_fail(chk, "%s: argument %d, expected %d", what,
                        fb_handle_last_arg(h), want_arg);
    }
    tcheck probe;
    tcheck_init(&probe);
    check_untouched(&probe, "output", img, live, NULL);
    if (probe.failed) {
        tcheck_fail(chk, "%s: %s", what, probe.diag[0]);
        memcpy(live->img, img->img, img->bytes);
    }
}

long named_backend_empty_calls(void)
{
    static const fb_backend gpu[3] = {FB_BACKEND_CUDA, FB_BACKEND_CUDA_LT,
                                      FB_BACKEND_CUDA_FUSED};
    long tried = 0;
    for (int g = 0; g < 3; g++) {
        const fb_backend b = gpu[g];
        const int here = fb_backend_available(b) == FB_STATUS_SUCCESS;
        const fb_status want = here ? FB_STATUS_SUCCESS
                                    : FB_STATUS_BACKEND_UNAVAILABLE;
        fb_handle h = handle_on(b);
        tcheck chk;
        tcheck_init(&chk);
        for (int di = 0; di < 3; di++) {
            const fb_dtype dt = all_dtypes[di];
            /* Host buffers (a GPU backend stages them): C 4 x 6 in an
             * 8-element-per-column allocation, A, B, bias big enough for
             * every shape below. */
            tbuf in, out, before;
            tbuf_init(&in, dt, 64, 2);
            tbuf_init(&out, dt, 64, 2);
            for (int64_t e = 0; e < 64; e++) {
                dt_set(dt, tbuf_data(&in), e, 0.25 * (double)(e % 7));
                dt_set(dt, tbuf_data(&out), e, -0.5 * (double)(e % 5));
            }
            tbuf_fetch(&out, &tmem_host, out.img, &before);
            static const int64_t shapes[3][2] = {{0, 6}, {4, 0}, {0, 0}};
            for (int s = 0; s < 3; s++, tried++) {
                const int64_t m = shapes[s][0], n = shapes[s][1];
                char what[96];
                snprintf(what, sizeof what, "%s %cgemm m = %lld, n = %lld",
                         fb_backend_name(b), dt_prefix(dt), (long long)m,
                         (long long)n);
                const fb_status st = gemm_call(
                    h, dt, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, m, n, 3,
                    1.0f, tbuf_data(&in), 4, tbuf_data(&in), 3, 0.5f,
                    tbuf_data(&out), 8, tbuf_data(&in), FB_ACT_RELU);
                empty_call_verdict(&chk, h, what, st, want, 0, &before,
                                   &out);
            }
            /* Argument checks come first: a bad argument is an invalid
             * argument on any backend, also in an empty call. */
            fb_status st = gemm_call(h, dt, FB_COL_MAJOR, FB_NO_TRANS,
                                     FB_NO_TRANS, 0, 6, 3, 1.0f, NULL, 0,
                                     NULL, 3, 0.0f, tbuf_data(&out), 1,
                                     NULL, FB_ACT_NONE);
            empty_call_verdict(&chk, h, "gemm m = 0, lda = 0", st,
                               FB_STATUS_INVALID_ARGUMENT, 10, &before,
                               &out);
            st = gemm_call(h, dt, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 0,
                           6, 3, 1.0f, NULL, 1, NULL, 3, 0.0f,
                           tbuf_data(&out), 1, NULL, (fb_activation)99);
            empty_call_verdict(&chk, h, "gemm m = 0, act 99", st,
                               FB_STATUS_INVALID_ARGUMENT, 17, &before,
                               &out);
            /* The MLP, m = 0 and n = 0, and m = 0 with a bad ldy. */
            for (int which = 0; which < 3; which++, tried++) {
                const int64_t m = which == 1 ? 3 : 0, n = which == 1 ? 0 : 5;
                const int64_t ldy = which == 2 ? 4 : 5;
                st = mlp_geglu_forward(h, dt, FB_ACT_SILU, m, 2, 3, n,
                                       tbuf_data(&in), 2, tbuf_data(&in),
                                       NULL, tbuf_data(&in), NULL,
                                       tbuf_data(&in), NULL, tbuf_data(&out),
                                       ldy);
                char what[96];
                snprintf(what, sizeof what, "%s mlp %s m = %lld, n = %lld, "
                         "ldy = %lld", fb_backend_name(b), dt_name(dt),
                         (long long)m, (long long)n, (long long)ldy);
                empty_call_verdict(&chk, h, what, st,
                                   which == 2 ? FB_STATUS_INVALID_ARGUMENT
                                              : want,
                                   17, &before, &out);
            }
            tried += 2;
            tbuf_free(&in);
            tbuf_free(&out);
            tbuf_free(&before);
        }
        tap_check(&chk, "%s (%s here): calls with m = 0 or n = 0 %s, and a "
                  "bad argument in an empty call is still an invalid "
                  "argument; nothing written", fb_backend_name(b),
                  here ? "available" : "not available",
                  here ? "succeed" : "are backend unavailable, like any "
                                     "other call on it");
        fb_destroy(h);
    }
    return tried;
}
