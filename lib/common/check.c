/*
 * check.c -- argument checks for every public routine.
 */
#include <ctype.h>
#include <stdio.h>
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
    char text[160];
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
    char text[160];

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
        check_matrix(&v, G_C, G_LDC, c->c, c->ldc, !quick, row ? c->n : c->m,
                     row ? c->m : c->n, es, "C");
        check_matrix(&v, G_B, G_LDB, c->b, c->ldb, !quick && c->k > 0,
                     row ? b_c : b_r, row ? b_r : b_c, es, "B");
        check_matrix(&v, G_A, G_LDA, c->a, c->lda, !quick && c->k > 0,
                     row ? a_c : a_r, row ? a_r : a_c, es, "A");
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
    p->dtype = c->dtype;
    p->alpha = c->alpha;
    p->beta = c->beta;
    p->c = c->c;
    p->ldc = c->ldc;
    p->k = c->k;
    p->ep.bias = c->bias;
    p->ep.act = c->act;
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
}

int fb_check_mlp(const fb_mlp_problem *p, char *msg, size_t len)
{
    verdict v = {0, msg, len};
    char text[160];
    if (len > 0)
        msg[0] = '\0';
    const int dtype_ok = p->dtype == FB_DTYPE_F32 || p->dtype == FB_DTYPE_F16 ||
                         p->dtype == FB_DTYPE_BF16;
    const int64_t es = dtype_ok ? fb_dtype_size(p->dtype) : 1;
    const int dims_ok = p->m >= 0 && p->k >= 0 && p->h >= 0 && p->n >= 0;
    const int run = dims_ok && p->m > 0 && p->n > 0;

    if (dims_ok) {
        /* Row-major matrices seen column-major: rows = the row length. */
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
