/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c -- argument checks for every public routine.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

/* Positions of gemm_bias_act's arguments (fusedblas.h). */
enum {
    G_LAYOUT = 2, G_TRANSA, G_TRANSB, G_M, G_N, G_K, G_ALPHA, G_A, G_LDA,
    G_B, G_LDB, G_BETA, G_C, G_LDC, G_BIAS, G_ACT
};

/* Positions of mlp_geglu_forward's arguments. */
enum {
    M_DTYPE = 2, M_ACT, M_M, M_K, M_H, M_N, M_X, M_LDX, M_WG, M_BG, M_WU,
    M_BU, M_WD, M_BD, M_Y, M_LDY
};

static int valid_act(fb_activation a)
{
    return a >= FB_ACT_NONE && a <= FB_ACT_SILU;
}

static int valid_trans(fb_transpose t)
{
    return t == FB_NO_TRANS || t == FB_TRANS || t == FB_CONJ_TRANS;
}

static int misaligned(const void *p, int64_t esize)
{
    return p != NULL && ((uintptr_t)p % (uintptr_t)esize) != 0;
}

/* Non-zero if a rows x cols matrix with leading dimension ld (stored with
 * cols columns of ld elements, column-major view) spans more bytes than the
 * address space can: ld * (cols - 1) + rows elements of esize bytes. */
static int extent_overflows(int64_t rows, int64_t cols, int64_t ld,
                            int64_t esize)
{
    if (rows == 0 || cols == 0 || ld < rows)
        return 0; /* empty, or already refused by the ld rule */
    const int64_t max_elems = PTRDIFF_MAX / esize;
    if (cols - 1 > 0 && ld > (max_elems - rows) / (cols - 1))
        return 1;
    return ld * (cols - 1) + rows > max_elems;
}

/* Whether a rows x cols stored matrix (column-major view) has a well
 * defined byte range: its leading dimension passes the ld rule and its
 * extent fits the address space. */
static int shape_ok(int64_t rows, int64_t cols, int64_t ld, int64_t esize)
{
    return ld >= (rows > 1 ? rows : 1) &&
           !extent_overflows(rows, cols, ld, esize);
}

/* The bytes an operand may touch, [lo, hi); empty (lo == hi) when the call
 * does not reference it. */
typedef struct span {
    uintptr_t lo, hi;
} span;

/* A stored matrix: [p, p + esize (ld (cols - 1) + rows)), exactly the
 * elements of its columns, not the padding after the last one. The caller
 * has checked shape_ok, so the byte count fits ptrdiff_t; the end is
 * clamped at the top of the address space. */
static span matrix_span(const void *p, int referenced, int64_t rows,
                        int64_t cols, int64_t ld, int64_t esize)
{
    span s = {0, 0};
    if (!referenced || p == NULL || rows <= 0 || cols <= 0)
        return s;
    const uint64_t bytes = (uint64_t)esize *
                           (uint64_t)(ld * (cols - 1) + rows);
    s.lo = (uintptr_t)p;
    s.hi = bytes > UINTPTR_MAX - s.lo ? UINTPTR_MAX : s.lo + (uintptr_t)bytes;
    return s;
}

/* A vector of len elements (a bias); a length whose bytes would not fit is
 * taken to reach the top of the address space. */
static span vector_span(const void *p, int referenced, int64_t len,
                        int64_t esize)
{
    span s = {0, 0};
    if (!referenced || p == NULL || len <= 0)
        return s;
    s.lo = (uintptr_t)p;
    const uint64_t room = UINTPTR_MAX - s.lo;
    s.hi = (uint64_t)len > room / (uint64_t)esize
               ? UINTPTR_MAX
               : s.lo + (uintptr_t)((uint64_t)len * (uint64_t)esize);
    return s;
}

/* Whether two ranges share a byte. Conservative on purpose: an output
 * interleaved with an input (its columns in the input's padding) shares
 * the range without sharing an element, and is refused all the same. */
static int spans_meet(span a, span b)
{
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

/* An input the output is compared with. */
typedef struct input_span {
    const char *name;
    span s;
} input_span;

/* Non-zero, with a sentence in text, if out meets one of the n inputs. */
static int output_overlaps(const char *out_name, span out,
                           const input_span *in, int n, char *text,
                           size_t len)
{
    for (int i = 0; i < n; i++)
        if (spans_meet(out, in[i].s)) {
            snprintf(text, len, "%s [%p, %p) overlaps %s [%p, %p); an "
                     "output must not share bytes with an input",
                     out_name, (void *)out.lo, (void *)out.hi, in[i].name,
                     (void *)in[i].s.lo, (void *)in[i].s.hi);
            return 1;
        }
    return 0;
}

/* Record the first failure; later (lower) positions overwrite it, since
 * checks run from the last argument to the first. */
typedef struct verdict {
    int arg;
    char *msg;
    size_t len;
} verdict;

static void fail(verdict *v, int arg, const char *what)
{
    v->arg = arg;
    snprintf(v->msg, v->len, "%s", what);
}

/* One stored operand: its pointer and leading dimension, whether the call
 * reads it, and its stored shape in the column-major view. */
static void check_matrix(verdict *v, int pos_ptr, int pos_ld, const void *p,
                         int64_t ld, int needed, int64_t rows, int64_t cols,
                         int64_t esize, const char *name)
{
    char text[192];
    if (extent_overflows(rows, cols, ld, esize)) {
        snprintf(text, sizeof text,
                 "%s: %lld x %lld with leading dimension %lld overflows the "
                 "address space", name, (long long)rows, (long long)cols,
                 (long long)ld);
        fail(v, pos_ld, text);
    }
    if (ld < (rows > 1 ? rows : 1)) {
        snprintf(text, sizeof text,
                 "ld%c = %lld < max(1, %lld), the rows of %s as stored", tolower((unsigned char)name[0]),
                 (long long)ld, (long long)rows, name);
        fail(v, pos_ld, text);
    }
    if (misaligned(p, esize)) {
        snprintf(text, sizeof text, "%s %p is not aligned to its %lld-byte "
                 "elements", name, p, (long long)esize);
        fail(v, pos_ptr, text);
    }
    if (needed && p == NULL) {
        snprintf(text, sizeof text, "%s is NULL", name);
        fail(v, pos_ptr, text);
    }
}

int fb_check_gemm(const fb_gemm_call *c, char *msg, size_t len)
{
    verdict v = {0, msg, len};
    const int64_t es = fb_dtype_size(c->dtype);
    const int row = c->layout == FB_ROW_MAJOR;
    const int ta = c->transa != FB_NO_TRANS, tb = c->transb != FB_NO_TRANS;
    char text[192];

    if (len > 0)
        msg[0] = '\0';
    if (!valid_act(c->act)) {
        snprintf(text, sizeof text, "unknown activation %d", (int)c->act);
        fail(&v, G_ACT, text);
    }
    if (misaligned(c->bias, es))
        fail(&v, G_BIAS, "bias is not aligned to its elements");
    if (c->bias != NULL && c->n > PTRDIFF_MAX / es)
        fail(&v, G_BIAS, "bias of length n overflows the address space");

    /* Stored shapes. Column-major: A is m x k (k x m transposed); row-major
     * stores the transpose of that view, so rows and columns swap. */
    const int64_t a_r = ta ? c->k : c->m, a_c = ta ? c->m : c->k;
    const int64_t b_r = tb ? c->n : c->k, b_c = tb ? c->k : c->n;
    const int quick = c->m <= 0 || c->n <= 0;
    if (c->m >= 0 && c->n >= 0 && c->k >= 0) {
        /* In the column-major view of each operand as stored. */
        const int64_t cr = row ? c->n : c->m, cc = row ? c->m : c->n;
        const int64_t br = row ? b_c : b_r, bc = row ? b_r : b_c;
        const int64_t ar = row ? a_c : a_r, ac = row ? a_r : a_c;
        /* C's bytes against the inputs', where every range involved is
         * defined (an operand with a bad ld is reported at its own
         * position). A and B are not read when k == 0 or alpha == 0, the
         * bias only when there is something to write; C is written
         * whatever beta. A meeting B is allowed: both are read. Reported
         * at C's position, after the arguments above it. */
        const int read_ab = !quick && c->k > 0 && c->alpha != 0.0f;
        if (shape_ok(cr, cc, c->ldc, es)) {
            input_span in[3];
            int n = 0;
            if (shape_ok(ar, ac, c->lda, es))
                in[n++] = (input_span){"A", matrix_span(c->a, read_ab, ar,
                                                        ac, c->lda, es)};
            if (shape_ok(br, bc, c->ldb, es))
                in[n++] = (input_span){"B", matrix_span(c->b, read_ab, br,
                                                        bc, c->ldb, es)};
            in[n++] = (input_span){"bias",
                                   vector_span(c->bias, !quick, c->n, es)};
            if (output_overlaps("C", matrix_span(c->c, !quick, cr, cc,
                                                 c->ldc, es),
                                in, n, text, sizeof text))
                fail(&v, G_C, text);
        }
        check_matrix(&v, G_C, G_LDC, c->c, c->ldc, !quick, cr, cc, es, "C");
        check_matrix(&v, G_B, G_LDB, c->b, c->ldb, !quick && c->k > 0, br,
                     bc, es, "B");
        check_matrix(&v, G_A, G_LDA, c->a, c->lda, !quick && c->k > 0, ar,
                     ac, es, "A");
    }
    if (c->k < 0)
        fail(&v, G_K, "k < 0");
    if (c->n < 0)
        fail(&v, G_N, "n < 0");
    if (c->m < 0)
        fail(&v, G_M, "m < 0");
    if (!valid_trans(c->transb)) {
        snprintf(text, sizeof text, "unknown transb %d", (int)c->transb);
        fail(&v, G_TRANSB, text);
    }
    if (!valid_trans(c->transa)) {
        snprintf(text, sizeof text, "unknown transa %d", (int)c->transa);
        fail(&v, G_TRANSA, text);
    }
    if (c->layout != FB_ROW_MAJOR && c->layout != FB_COL_MAJOR) {
        snprintf(text, sizeof text, "unknown layout %d", (int)c->layout);
        fail(&v, G_LAYOUT, text);
    }
    return v.arg;
}

void fb_gemm_normalise(const fb_gemm_call *c, fb_gemm_problem *p)
{
    const int ta = c->transa != FB_NO_TRANS, tb = c->transb != FB_NO_TRANS;
    memset(p, 0, sizeof *p); /* what a call does not set (ep.scale) is off */
    p->dtype = c->dtype;
    p->alpha = c->alpha;
    p->beta = c->beta;
    p->c = c->c;
    p->ldc = c->ldc;
    p->k = c->k;
    p->ep.bias = c->bias;
    p->ep.act = c->act;
    p->weight_is_a = c->layout == FB_ROW_MAJOR;
    if (c->layout == FB_COL_MAJOR) {
        p->m = c->m, p->n = c->n;
        p->a = c->a, p->lda = c->lda, p->transa = ta;
        p->b = c->b, p->ldb = c->ldb, p->transb = tb;
        p->ep.bias_per_row = 0;
    } else {
        /* C^T = op(B)^T op(A)^T, and a row-major matrix is its transpose
         * in column-major: swap the operands, keep each one's transpose. */
        p->m = c->n, p->n = c->m;
        p->a = c->b, p->lda = c->ldb, p->transa = tb;
        p->b = c->a, p->ldb = c->lda, p->transb = ta;
        p->ep.bias_per_row = 1;
    }
    fb_gemm_decide(p);
}

int fb_check_mlp(const fb_mlp_problem *p, char *msg, size_t len)
{
    verdict v = {0, msg, len};
    char text[192];
    if (len > 0)
        msg[0] = '\0';
    const int dtype_ok = p->dtype == FB_DTYPE_F32 || p->dtype == FB_DTYPE_F16 ||
                         p->dtype == FB_DTYPE_BF16;
    const int64_t es = dtype_ok ? fb_dtype_size(p->dtype) : 1;
    const int dims_ok = p->m >= 0 && p->k >= 0 && p->h >= 0 && p->n >= 0;
    const int run = dims_ok && p->m > 0 && p->n > 0;

    if (dims_ok) {
        /* Row-major matrices seen column-major: rows = the row length.
         * Y's bytes against every input's that the call reads, as for
         * gemm's C: X when k > 0, the weights and bg, bu when h > 0 (and
         * k > 0 for Wg, Wu); reported at Y's position. */
        const int k_ok = p->k > 0, h_ok = p->h > 0;
        if (shape_ok(p->n, p->m, p->ldy, es)) {
            input_span in[7];
            int n = 0;
            if (shape_ok(p->k, p->m, p->ldx, es))
                in[n++] = (input_span){"X", matrix_span(p->x, run && k_ok,
                                                        p->k, p->m, p->ldx,
                                                        es)};
            const struct {
                const char *name;
                const void *ptr;
                int read;
                int64_t rows, cols;
            } w[3] = {{"Wg", p->wg, run && h_ok && k_ok, p->k, p->h},
                      {"Wu", p->wu, run && h_ok && k_ok, p->k, p->h},
                      {"Wd", p->wd, run && h_ok, p->h, p->n}};
            for (int i = 0; i < 3; i++)
                if (!extent_overflows(w[i].rows, w[i].cols, w[i].rows, es))
                    in[n++] = (input_span){
                        w[i].name, matrix_span(w[i].ptr, w[i].read,
                                               w[i].rows, w[i].cols,
                                               w[i].rows, es)};
            in[n++] = (input_span){"bg", vector_span(p->bg, run && h_ok,
                                                     p->h, es)};
            in[n++] = (input_span){"bu", vector_span(p->bu, run && h_ok,
                                                     p->h, es)};
            in[n++] = (input_span){"bd", vector_span(p->bd, run, p->n, es)};
            if (output_overlaps("Y", matrix_span(p->y, run, p->n, p->m,
                                                 p->ldy, es),
                                in, n, text, sizeof text))
                fail(&v, M_Y, text);
        }
        check_matrix(&v, M_Y, M_LDY, p->y, p->ldy, run, p->n, p->m, es, "Y");
        if (misaligned(p->bd, es))
            fail(&v, M_BD, "bd is not aligned to its elements");
        check_matrix(&v, M_WD, M_WD, p->wd, p->h > 0 ? p->h : 1, run && p->h > 0, p->h, p->n,
                     es, "Wd");
        if (misaligned(p->bu, es))
            fail(&v, M_BU, "bu is not aligned to its elements");
        check_matrix(&v, M_WU, M_WU, p->wu, p->k > 0 ? p->k : 1, run && p->h > 0 && p->k > 0,
                     p->k, p->h, es, "Wu");
        if (misaligned(p->bg, es))
            fail(&v, M_BG, "bg is not aligned to its elements");
        check_matrix(&v, M_WG, M_WG, p->wg, p->k > 0 ? p->k : 1, run && p->h > 0 && p->k > 0,
                     p->k, p->h, es, "Wg");
        check_matrix(&v, M_X, M_LDX, p->x, p->ldx, run && p->k > 0, p->k,
                     p->m, es, "X");
    }
    if (p->n < 0)
        fail(&v, M_N, "n < 0");
    if (p->h < 0)
        fail(&v, M_H, "h < 0");
    if (p->k < 0)
        fail(&v, M_K, "k < 0");
    if (p->m < 0)
        fail(&v, M_M, "m < 0");
    if (!valid_act(p->gate_act)) {
        snprintf(text, sizeof text, "unknown gate activation %d",
                 (int)p->gate_act);
        fail(&v, M_ACT, text);
    }
    if (!dtype_ok) {
        snprintf(text, sizeof text, "unknown dtype %d", (int)p->dtype);
        fail(&v, M_DTYPE, text);
    }
    return v.arg;
}

/* ---- plans --------------------------------------------------------------- */

/* Positions of fb_plan_create_gemm's and fb_plan_create_mlp's arguments
 * (fusedblas.h), and of their executions'. */
enum {
    PG_DTYPE = 2, PG_LAYOUT, PG_TRANSA, PG_TRANSB, PG_MAXM, PG_N, PG_K,
    PG_ALPHA, PG_B, PG_LDB, PG_BETA, PG_BIAS, PG_ACT, PG_PLAN
};
enum {
    PM_DTYPE = 2, PM_ACT, PM_MAXM, PM_K, PM_H, PM_N, PM_WG, PM_BG, PM_WU,
    PM_BU, PM_WD, PM_BD, PM_PLAN
};
enum { PX_M = 2, PX_IN, PX_LDIN, PX_OUT, PX_LDOUT };

static int valid_dtype(fb_dtype t)
{
    return t == FB_DTYPE_F32 || t == FB_DTYPE_F16 || t == FB_DTYPE_BF16;
}

int fb_check_plan_gemm(const fb_gemm_call *c, const void *plan, char *msg,
                       size_t len)
{
    verdict v = {0, msg, len};
    const int dtype_ok = valid_dtype(c->dtype);
    const int64_t es = dtype_ok ? fb_dtype_size(c->dtype) : 1;
    char text[192];
    if (len > 0)
        msg[0] = '\0';
    if (plan == NULL)
        fail(&v, PG_PLAN, "plan pointer is NULL");
    if (!valid_act(c->act)) {
        snprintf(text, sizeof text, "unknown activation %d", (int)c->act);
        fail(&v, PG_ACT, text);
    }
    if (misaligned(c->bias, es))
        fail(&v, PG_BIAS, "bias is not aligned to its elements");
    if (c->bias != NULL && c->n > PTRDIFF_MAX / es)
        fail(&v, PG_BIAS, "bias of length n overflows the address space");
    if (c->n >= 0 && c->k >= 0) {
        const int tb = c->transb != FB_NO_TRANS;
        const int64_t b_r = tb ? c->n : c->k, b_c = tb ? c->k : c->n;
        const int row = c->layout == FB_ROW_MAJOR;
        check_matrix(&v, PG_B, PG_LDB, c->b, c->ldb, c->n > 0 && c->k > 0,
                     row ? b_c : b_r, row ? b_r : b_c, es, "B");
    }
    if (c->k < 0)
        fail(&v, PG_K, "k < 0");
    if (c->n < 0)
        fail(&v, PG_N, "n < 0");
    if (c->m < 1)
        fail(&v, PG_MAXM, "max_m < 1");
    if (!valid_trans(c->transb)) {
        snprintf(text, sizeof text, "unknown transb %d", (int)c->transb);
        fail(&v, PG_TRANSB, text);
    }
    if (!valid_trans(c->transa)) {
        snprintf(text, sizeof text, "unknown transa %d", (int)c->transa);
        fail(&v, PG_TRANSA, text);
    }
    if (c->layout != FB_ROW_MAJOR && c->layout != FB_COL_MAJOR) {
        snprintf(text, sizeof text, "unknown layout %d", (int)c->layout);
        fail(&v, PG_LAYOUT, text);
    }
    if (!dtype_ok) {
        snprintf(text, sizeof text, "unknown dtype %d", (int)c->dtype);
        fail(&v, PG_DTYPE, text);
    }
    return v.arg;
}

int fb_check_plan_mlp(const fb_mlp_problem *p, const void *plan, char *msg,
                      size_t len)
{
    verdict v = {0, msg, len};
    const int dtype_ok = valid_dtype(p->dtype);
    const int64_t es = dtype_ok ? fb_dtype_size(p->dtype) : 1;
    char text[192];
    if (len > 0)
        msg[0] = '\0';
    if (plan == NULL)
        fail(&v, PM_PLAN, "plan pointer is NULL");
    if (p->k >= 0 && p->h >= 0 && p->n >= 0) {
        const int run = p->n > 0 && p->h > 0;
        if (misaligned(p->bd, es))
            fail(&v, PM_BD, "bd is not aligned to its elements");
        check_matrix(&v, PM_WD, PM_WD, p->wd, p->h > 0 ? p->h : 1, run,
                     p->h, p->n, es, "Wd");
        if (misaligned(p->bu, es))
            fail(&v, PM_BU, "bu is not aligned to its elements");
        check_matrix(&v, PM_WU, PM_WU, p->wu, p->k > 0 ? p->k : 1,
                     run && p->k > 0, p->k, p->h, es, "Wu");
        if (misaligned(p->bg, es))
            fail(&v, PM_BG, "bg is not aligned to its elements");
        check_matrix(&v, PM_WG, PM_WG, p->wg, p->k > 0 ? p->k : 1,
                     run && p->k > 0, p->k, p->h, es, "Wg");
    }
    if (p->n < 0)
        fail(&v, PM_N, "n < 0");
    if (p->h < 0)
        fail(&v, PM_H, "h < 0");
    if (p->k < 0)
        fail(&v, PM_K, "k < 0");
    if (p->m < 1)
        fail(&v, PM_MAXM, "max_m < 1");
    if (!valid_act(p->gate_act)) {
        snprintf(text, sizeof text, "unknown gate activation %d",
                 (int)p->gate_act);
        fail(&v, PM_ACT, text);
    }
    if (!dtype_ok) {
        snprintf(text, sizeof text, "unknown dtype %d", (int)p->dtype);
        fail(&v, PM_DTYPE, text);
    }
    return v.arg;
}

/* A routine's position, as its plan's execution numbers it: m, the input
 * and its ld, the output and its ld; 0 for the rest. */
static int exec_position(int arg, int m, int in, int ldin, int out,
                         int ldout)
{
    return arg == m ? PX_M : arg == in ? PX_IN : arg == ldin ? PX_LDIN
         : arg == out ? PX_OUT : arg == ldout ? PX_LDOUT : 0;
}

int fb_check_plan_gemm_exec(const fb_gemm_call *c, int64_t max_m,
                            char *msg, size_t len)
{
    if (c->m > max_m || c->m < 0) {
        snprintf(msg, len, "m = %lld is outside [0, max_m = %lld]",
                 (long long)c->m, (long long)max_m);
        return PX_M;
    }
    const int arg = fb_check_gemm(c, msg, len);
    return arg == 0 ? 0 : exec_position(arg, G_M, G_A, G_LDA, G_C, G_LDC);
}

int fb_check_plan_mlp_exec(const fb_mlp_problem *p, int64_t max_m,
                           char *msg, size_t len)
{
    if (p->m > max_m || p->m < 0) {
        snprintf(msg, len, "m = %lld is outside [0, max_m = %lld]",
                 (long long)p->m, (long long)max_m);
        return PX_M;
    }
    const int arg = fb_check_mlp(p, msg, len);
    return arg == 0 ? 0 : exec_position(arg, M_M, M_X, M_LDX, M_Y, M_LDY);
}
