/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_fp8.c -- argument checks for gemm_e4m3_bias_act and
 * mlp_geglu_forward_e4m3.
 *
 * The rules are check.c's; the difference is that operands have different
 * element sizes (the weights one byte, the scales four, the rest the
 * dtype's), which check.c's helpers, written for one dtype per call, do
 * not take.
 */
#include <stdio.h>
#include "check_fp8.h"

enum {
    G_DTYPE = 2, G_LAYOUT, G_TRANSA, G_TRANSB, G_M, G_N, G_K, G_ALPHA, G_A,
    G_LDA, G_B, G_LDB, G_SCALE, G_BETA, G_C, G_LDC, G_BIAS, G_ACT
};

enum {
    M_DTYPE = 2, M_ACT, M_M, M_K, M_H, M_N, M_X, M_LDX, M_WG, M_SG, M_BG,
    M_WU, M_SU, M_BU, M_WD, M_SD, M_BD, M_Y, M_LDY
};

static int dtype_ok(fb_dtype t)
{
    return t == FB_DTYPE_F32 || t == FB_DTYPE_F16 || t == FB_DTYPE_BF16;
}

static int act_ok(fb_activation a)
{
    return a >= FB_ACT_NONE && a <= FB_ACT_SILU;
}

static int trans_ok(fb_transpose t)
{
    return t == FB_NO_TRANS || t == FB_TRANS || t == FB_CONJ_TRANS;
}

static int misaligned(const void *p, int64_t esize)
{
    return p != NULL && ((uintptr_t)p % (uintptr_t)esize) != 0;
}

/* A stored matrix seen column-major: len elements along the leading
 * dimension, outer of them ld apart. */
typedef struct stored {
    int64_t len, outer, ld, esize;
} stored;

static int ld_ok(const stored *s)
{
    return s->ld >= (s->len > 1 ? s->len : 1);
}

/* Its extent, ld (outer - 1) + len elements, fits PTRDIFF_MAX bytes. */
static int extent_ok(const stored *s)
{
    if (s->len == 0 || s->outer == 0 || !ld_ok(s))
        return 1;
    const int64_t max_elems = PTRDIFF_MAX / s->esize;
    if (s->outer > 1 && s->ld > (max_elems - s->len) / (s->outer - 1))
        return 0;
    return s->ld * (s->outer - 1) + s->len <= max_elems;
}

typedef struct span {
    uintptr_t lo, hi;
} span;

static span matrix_span(const void *p, int read, const stored *s)
{
    span r = {0, 0};
    if (!read || p == NULL || s->len <= 0 || s->outer <= 0 || !ld_ok(s) ||
        !extent_ok(s))
        return r;
    const uint64_t bytes =
        (uint64_t)s->esize * (uint64_t)(s->ld * (s->outer - 1) + s->len);
    r.lo = (uintptr_t)p;
    r.hi = bytes > UINTPTR_MAX - r.lo ? UINTPTR_MAX : r.lo + (uintptr_t)bytes;
    return r;
}

static span vector_span(const void *p, int read, int64_t len, int64_t esize)
{
    const stored s = {len, 1, len > 1 ? len : 1, esize};
    return matrix_span(p, read, &s);
}

static int meet(span a, span b)
{
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

typedef struct verdict {
    int arg;
    char *msg;
    size_t len;
} verdict;

/* Checks run from the last argument to the first: each failure overwrites
 * the one before, so the lowest position stays. */
#define FAIL(v, pos, ...)                                                     \
    do {                                                                       \
        (v)->arg = (pos);                                                      \
        snprintf((v)->msg, (v)->len, __VA_ARGS__);                             \
    } while (0)

/* The output against the inputs it must not share a byte with. */
static void check_overlap(verdict *v, int pos, const char *out_name,
                          span out, const span *in, const char *const *names,
                          int n)
{
    for (int i = 0; i < n; i++)
        if (meet(out, in[i])) {
            FAIL(v, pos,
                 "%s [%p, %p) overlaps %s [%p, %p); an output must not "
                 "share bytes with an input",
                 out_name, (void *)out.lo, (void *)out.hi, names[i],
                 (void *)in[i].lo, (void *)in[i].hi);
            return;
        }
}

static void check_matrix(verdict *v, int pos_ptr, int pos_ld, const void *p,
                         int needed, const stored *s, const char *name,
                         const char *ldname)
{
    if (!extent_ok(s))
        FAIL(v, pos_ld, "%s: %lld x %lld with %s = %lld overflows the "
                        "address space", name, (long long)s->len,
             (long long)s->outer, ldname, (long long)s->ld);
    if (!ld_ok(s))
        FAIL(v, pos_ld, "%s = %lld < max(1, %lld), the rows of %s as "
                        "stored (column-major view)", ldname,
             (long long)s->ld, (long long)s->len, name);
    if (misaligned(p, s->esize))
        FAIL(v, pos_ptr, "%s %p is not aligned to its %lld-byte elements",
             name, p, (long long)s->esize);
    if (needed && p == NULL)
        FAIL(v, pos_ptr, "%s is NULL", name);
}

static void check_vector(verdict *v, int pos, const void *p, int needed,
                         int64_t len, int64_t esize, const char *name)
{
    if (p != NULL && len > PTRDIFF_MAX / esize)
        FAIL(v, pos, "%s of length %lld overflows the address space", name,
             (long long)len);
    if (misaligned(p, esize))
        FAIL(v, pos, "%s is not aligned to its %lld-byte elements", name,
             (long long)esize);
    if (needed && p == NULL)
        FAIL(v, pos, "%s is NULL", name);
}

/* A rows x cols matrix stored in layout with ld, seen column-major. */
static stored as_stored(fb_layout layout, int64_t rows, int64_t cols,
                        int64_t ld, int64_t esize)
{
    stored s;
    s.len = layout == FB_ROW_MAJOR ? cols : rows;
    s.outer = layout == FB_ROW_MAJOR ? rows : cols;
    s.ld = ld;
    s.esize = esize;
    return s;
}

int fb_check_gemm_e4m3(const fb_e4m3_gemm_call *c, char *msg, size_t len)
{
    verdict v = {0, msg, len};
    if (len > 0)
        msg[0] = '\0';
    const int64_t es = dtype_ok(c->dtype) ? fb_dtype_size(c->dtype) : 1;
    const fb_layout lay = c->layout == FB_COL_MAJOR ? FB_COL_MAJOR
                                                    : FB_ROW_MAJOR;
    const int ta = c->transa != FB_NO_TRANS, tb = c->transb != FB_NO_TRANS;

    if (!act_ok(c->act))
        FAIL(&v, G_ACT, "unknown activation %d", (int)c->act);
    const int quick = c->m <= 0 || c->n <= 0;
    check_vector(&v, G_BIAS, c->bias, 0, c->n, es, "bias");
    if (c->m >= 0 && c->n >= 0 && c->k >= 0) {
        const int read_ab = !quick && c->k > 0;
        const int read_ab_alpha = read_ab && c->alpha != 0.0f;
        const stored sa = as_stored(lay, ta ? c->k : c->m, ta ? c->m : c->k,
                                    c->lda, es);
        const stored sb = as_stored(lay, tb ? c->n : c->k, tb ? c->k : c->n,
                                    c->ldb, 1);
        const stored sc = as_stored(lay, c->m, c->n, c->ldc, es);
        const span in[4] = {matrix_span(c->a, read_ab_alpha, &sa),
                            matrix_span(c->b, read_ab_alpha, &sb),
                            vector_span(c->b_scale, read_ab_alpha, c->n, 4),
                            vector_span(c->bias, !quick, c->n, es)};
        static const char *const names[4] = {"A", "B", "b_scale", "bias"};
        check_overlap(&v, G_C, "C", matrix_span(c->c, !quick, &sc), in,
                      names, 4);
        check_matrix(&v, G_C, G_LDC, c->c, !quick, &sc, "C", "ldc");
        check_vector(&v, G_SCALE, c->b_scale, read_ab, c->n, 4, "b_scale");
        check_matrix(&v, G_B, G_LDB, c->b, read_ab, &sb, "B", "ldb");
        check_matrix(&v, G_A, G_LDA, c->a, read_ab, &sa, "A", "lda");
    }
    if (c->k < 0)
        FAIL(&v, G_K, "k < 0");
    if (c->n < 0)
        FAIL(&v, G_N, "n < 0");
    if (c->m < 0)
        FAIL(&v, G_M, "m < 0");
    if (!trans_ok(c->transb))
        FAIL(&v, G_TRANSB, "unknown transb %d", (int)c->transb);
    if (!trans_ok(c->transa))
        FAIL(&v, G_TRANSA, "unknown transa %d", (int)c->transa);
    if (c->layout != FB_ROW_MAJOR && c->layout != FB_COL_MAJOR)
        FAIL(&v, G_LAYOUT, "unknown layout %d", (int)c->layout);
    if (!dtype_ok(c->dtype))
        FAIL(&v, G_DTYPE, "unknown dtype %d (activations and outputs are "
                          "f32, f16 or bf16)", (int)c->dtype);
    return v.arg;
}

void fb_gemm_e4m3_describe(const fb_e4m3_gemm_call *c,
                           fb_e4m3_gemm_problem *p)
{
    const int row = c->layout == FB_ROW_MAJOR;
    const int ta = c->transa != FB_NO_TRANS, tb = c->transb != FB_NO_TRANS;
    /* Strides of a stored matrix's (row, column) indices. */
    const int64_t a_r = row ? c->lda : 1, a_c = row ? 1 : c->lda;
    const int64_t b_r = row ? c->ldb : 1, b_c = row ? 1 : c->ldb;
    p->dtype = c->dtype;
    p->m = c->m, p->n = c->n, p->k = c->k;
    p->alpha = c->alpha, p->beta = c->beta;
    /* x(i, p) = op(A)(i, p): A(i, p) or A(p, i) as stored. */
    p->x = c->a;
    p->x_ts = ta ? a_c : a_r;
    p->x_ks = ta ? a_r : a_c;
    /* q(j, p) = op(B)(p, j): B(p, j) or B(j, p) as stored. */
    p->w = (const uint8_t *)c->b;
    p->w_cs = tb ? b_r : b_c;
    p->w_ks = tb ? b_c : b_r;
    p->scale = c->b_scale;
    p->c = c->c;
    p->c_ts = row ? c->ldc : 1;
    p->c_cs = row ? 1 : c->ldc;
    p->bias = c->bias;
    p->act = c->act;
}

int fb_check_mlp_e4m3(const fb_e4m3_mlp_problem *p, char *msg, size_t len)
{
    verdict v = {0, msg, len};
    if (len > 0)
        msg[0] = '\0';
    const int64_t es = dtype_ok(p->dtype) ? fb_dtype_size(p->dtype) : 1;
    const int dims = p->m >= 0 && p->k >= 0 && p->h >= 0 && p->n >= 0;
    if (dims) {
        const int run = p->m > 0 && p->n > 0;
        const int rgu = run && p->h > 0 && p->k > 0, rd = run && p->h > 0;
        /* Row-major, seen column-major: len = the row length. */
        const stored sx = {p->k, p->m, p->ldx, es};
        const stored sy = {p->n, p->m, p->ldy, es};
        const stored sgu = {p->k, p->h, p->k > 0 ? p->k : 1, 1};
        const stored sdn = {p->h, p->n, p->h > 0 ? p->h : 1, 1};
        const span in[10] = {
            matrix_span(p->x, run && p->k > 0, &sx),
            matrix_span(p->wg, rgu, &sgu),
            vector_span(p->sg, rgu, p->h, 4),
            vector_span(p->bg, rd, p->h, es),
            matrix_span(p->wu, rgu, &sgu),
            vector_span(p->su, rgu, p->h, 4),
            vector_span(p->bu, rd, p->h, es),
            matrix_span(p->wd, rd, &sdn),
            vector_span(p->sd, rd, p->n, 4),
            vector_span(p->bd, run, p->n, es)};
        static const char *const names[10] = {"X",  "Wg", "sg", "bg", "Wu",
                                              "su", "bu", "Wd", "sd", "bd"};
        check_overlap(&v, M_Y, "Y", matrix_span(p->y, run, &sy), in, names,
                      10);
        check_matrix(&v, M_Y, M_LDY, p->y, run, &sy, "Y", "ldy");
        check_vector(&v, M_BD, p->bd, 0, p->n, es, "bd");
        check_vector(&v, M_SD, p->sd, rd, p->n, 4, "sd");
        check_matrix(&v, M_WD, M_WD, p->wd, rd, &sdn, "Wd", "h");
        check_vector(&v, M_BU, p->bu, 0, p->h, es, "bu");
        check_vector(&v, M_SU, p->su, rgu, p->h, 4, "su");
        check_matrix(&v, M_WU, M_WU, p->wu, rgu, &sgu, "Wu", "k");
        check_vector(&v, M_BG, p->bg, 0, p->h, es, "bg");
        check_vector(&v, M_SG, p->sg, rgu, p->h, 4, "sg");
        check_matrix(&v, M_WG, M_WG, p->wg, rgu, &sgu, "Wg", "k");
        check_matrix(&v, M_X, M_LDX, p->x, run && p->k > 0, &sx, "X", "ldx");
    }
    if (p->n < 0)
        FAIL(&v, M_N, "n < 0");
    if (p->h < 0)
        FAIL(&v, M_H, "h < 0");
    if (p->k < 0)
        FAIL(&v, M_K, "k < 0");
    if (p->m < 0)
        FAIL(&v, M_M, "m < 0");
    if (!act_ok(p->gate_act))
        FAIL(&v, M_ACT, "unknown gate activation %d", (int)p->gate_act);
    if (!dtype_ok(p->dtype))
        FAIL(&v, M_DTYPE, "unknown dtype %d (activations and outputs are "
                          "f32, f16 or bf16)", (int)p->dtype);
    return v.arg;
}
