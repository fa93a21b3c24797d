/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_check.c -- see plan_check.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan_check.h"

/* Two paths name the same implementation: they agree up to the first '('
 * or the second '/' (a CPU path's details, e.g. which operand a packed
 * kernel holds whole, may differ between a plan and the plain call). */
static int same_implementation(const char *a, const char *b)
{
    int slashes = 0;
    for (size_t i = 0;; i++) {
        const int end_a = a[i] == '\0' || a[i] == '(' ||
                          (a[i] == '/' && slashes == 1);
        const int end_b = b[i] == '\0' || b[i] == '(' ||
                          (b[i] == '/' && slashes == 1);
        if (end_a || end_b)
            return end_a && end_b;
        if (a[i] != b[i])
            return 0;
        slashes += a[i] == '/';
    }
}

/* A buffer of count elements of t, in mem, with a host image. */
typedef struct buf {
    fb_dtype t;
    int64_t count;
    size_t bytes;
    unsigned char *host;
    void *dev;
    const tmem *mem;
} buf;

static void buf_make(buf *b, const tmem *mem, fb_dtype t, int64_t count,
                     int random)
{
    b->t = t, b->count = count > 0 ? count : 1, b->mem = mem;
    b->bytes = (size_t)b->count * dt_size(t);
    b->host = malloc(b->bytes);
    if (b->host == NULL)
        tap_bail("out of memory");
    for (int64_t i = 0; i < b->count; i++) {
        if (random)
            dt_set(t, b->host, i, rng_value(t));
        else
            dt_set_bits(t, b->host, i, dt_poison_bits(t));
    }
    b->dev = mem->alloc(b->bytes);
    mem->put(b->dev, b->host, b->bytes);
}

static void buf_free(buf *b)
{
    b->mem->release(b->dev);
    free(b->host);
}

/* The device copy back in out (bytes of b). */
static void buf_get(const buf *b, unsigned char *out)
{
    b->mem->get(out, b->dev, b->bytes);
}

static int starts_with(const char *s, const char *prefix)
{
    return prefix[0] != '\0' && strncmp(s, prefix, strlen(prefix)) == 0;
}

static fb_status plain_gemm(fb_handle h, const plan_gemm_spec *s, int64_t m,
                            const void *a, int64_t lda, const void *b,
                            int64_t ldb, void *c, int64_t ldc,
                            const void *bias)
{
    switch (s->dtype) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, s->layout, s->transa, s->transb, m, s->n,
                              s->k, s->alpha, a, lda, b, ldb, s->beta, c, ldc,
                              bias, s->act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, s->layout, s->transa, s->transb, m, s->n,
                              s->k, s->alpha, a, lda, b, ldb, s->beta, c, ldc,
                              bias, s->act);
    default:
        return bgemm_bias_act(h, s->layout, s->transa, s->transb, m, s->n,
                              s->k, s->alpha, a, lda, b, ldb, s->beta, c, ldc,
                              bias, s->act);
    }
}

/* Stored rows x cols of an operand (rows along the leading dimension's
 * other side): its leading dimension and the elements its buffer holds. */
static int64_t stored_ld(fb_layout layout, int64_t rows, int64_t cols,
                         int pad)
{
    const int64_t inner = layout == FB_ROW_MAJOR ? cols : rows;
    return (inner > 1 ? inner : 1) + pad;
}

static int64_t stored_count(fb_layout layout, int64_t rows, int64_t cols,
                            int64_t ld)
{
    return (layout == FB_ROW_MAJOR ? rows : cols) * ld;
}

/* Every element of the m x n window of c (layout, ldc) written: no poison
 * left. */
static int64_t poisoned(fb_dtype t, fb_layout layout, const void *c,
                        int64_t m, int64_t n, int64_t ldc)
{
    int64_t left = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t idx = layout == FB_ROW_MAJOR ? i * ldc + j
                                                       : j * ldc + i;
            left += dt_bits(t, c, idx) == dt_poison_bits(t);
        }
    return left;
}

void plan_check_gemm(fb_handle h, const tmem *mem, const plan_gemm_spec *s,
                     const int64_t *ms, int nm, void (*sync)(void),
                     const char *want_path)
{
    const int ta = s->transa != FB_NO_TRANS, tb = s->transb != FB_NO_TRANS;
    const int64_t max_m = s->max_m, n = s->n, k = s->k;
    /* op(A) m x k, op(B) k x n, C m x n, as stored. */
    const int64_t ar = ta ? k : max_m, ac = ta ? max_m : k;
    const int64_t br = tb ? n : k, bc = tb ? k : n;
    const int64_t lda = stored_ld(s->layout, ar, ac, s->pad);
    const int64_t ldb = stored_ld(s->layout, br, bc, s->pad);
    const int64_t ldc = stored_ld(s->layout, max_m, n, s->pad);
    buf a, b, bias, c0, c1;
    buf_make(&a, mem, s->dtype, stored_count(s->layout, ar, ac, lda), 1);
    buf_make(&b, mem, s->dtype, stored_count(s->layout, br, bc, ldb), 1);
    buf_make(&bias, mem, s->dtype, n, 1);
    buf_make(&c0, mem, s->dtype, stored_count(s->layout, max_m, n, ldc), 1);
    c1.dev = NULL;
    tcheck chk;
    tcheck_init(&chk);
    char label[160];
    snprintf(label, sizeof label,
             "%s plan gemm %s %c%c max_m=%lld n=%lld k=%lld alpha=%g "
             "beta=%g%s %s pad=%d", dt_name(s->dtype),
             s->layout == FB_ROW_MAJOR ? "row" : "col", ta ? 'T' : 'N',
             tb ? 'T' : 'N', (long long)max_m, (long long)n, (long long)k,
             (double)s->alpha, (double)s->beta, s->bias ? " bias" : "",
             act_name(s->act), s->pad);
    fb_plan plan = NULL;
    fb_status st = fb_plan_create_gemm(h, s->dtype, s->layout, s->transa,
                                       s->transb, max_m, n, k, s->alpha,
                                       b.dev, ldb, s->beta,
                                       s->bias ? bias.dev : NULL, s->act,
                                       &plan);
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(&chk, "fb_plan_create_gemm: %s (%s)",
                    fb_status_string(st), fb_handle_last_message(h));
        goto done;
    }
    unsigned char *got = malloc(c0.bytes), *want = malloc(c0.bytes);
    if (got == NULL || want == NULL)
        tap_bail("out of memory");
    for (int i = 0; i < nm; i++) {
        const int64_t m = ms[i];
        /* C's starting values (beta), the same for both calls. */
        buf_make(&c1, mem, s->dtype, c0.count, 0);
        memcpy(c1.host, c0.host, c0.bytes);
        mem->put(c1.dev, c1.host, c1.bytes);
        mem->put(c0.dev, c0.host, c0.bytes);
        st = plain_gemm(h, s, m, a.dev, lda, b.dev, ldb, c0.dev, ldc,
                        s->bias ? bias.dev : NULL);
        if (sync)
            sync();
        char plain_path[128];
        snprintf(plain_path, sizeof plain_path, "%s", fb_handle_last_path(h));
        fb_status st2 = fb_plan_gemm(plan, m, a.dev, lda, c1.dev, ldc);
        if (sync)
            sync();
        char plan_ran[128];
        snprintf(plan_ran, sizeof plan_ran, "%s", fb_handle_last_path(h));
        const char *impl = fb_plan_path(plan, m);
        if (st != FB_STATUS_SUCCESS || st2 != FB_STATUS_SUCCESS) {
            tcheck_fail(&chk, "m=%lld: plain %s, plan %s (%s)", (long long)m,
                        fb_status_string(st), fb_status_string(st2),
                        fb_handle_last_message(h));
            buf_free(&c1);
            c1.dev = NULL;
            continue;
        }
        buf_get(&c0, want);
        buf_get(&c1, got);
        if (memcmp(got, want, c0.bytes) != 0)
            tcheck_fail(&chk, "m=%lld: the plan's bits differ from the "
                        "plain call's (%s, plan %s)", (long long)m,
                        plain_path, impl);
        /* fb_plan_path names the choice for activations and output
         * without padding (what creation decided); a padded execution
         * that choice cannot take runs the plain call's walk
         * (fb_plan_create_gemm(3)), so there the executed path is what
         * must match. */
        if (s->pad == 0 && !starts_with(plain_path, impl))
            tcheck_fail(&chk, "m=%lld: the plan runs %s, the plain call ran "
                        "%s", (long long)m, impl, plain_path);
        if (s->pad != 0 && !same_implementation(plan_ran, plain_path))
            tcheck_fail(&chk, "m=%lld: the padded execution ran %s, the "
                        "plain call %s", (long long)m, plan_ran, plain_path);
        if (want_path != NULL && !starts_with(impl, want_path))
            tcheck_fail(&chk, "m=%lld: the plan runs %s, not %s",
                        (long long)m, impl, want_path);
        /* The window was written: C's random start values are finite, a
         * poisoned C would show; re-run on a poisoned C with beta = 0. */
        if (s->beta == 0.0f) {
            for (int64_t e = 0; e < c1.count; e++)
                dt_set_bits(s->dtype, c1.host, e, dt_poison_bits(s->dtype));
            mem->put(c1.dev, c1.host, c1.bytes);
            st2 = fb_plan_gemm(plan, m, a.dev, lda, c1.dev, ldc);
            if (sync)
                sync();
            buf_get(&c1, got);
            const int64_t left = poisoned(s->dtype, s->layout, got, m, n,
                                          ldc);
            if (st2 != FB_STATUS_SUCCESS || left != 0)
                tcheck_fail(&chk, "m=%lld on a poisoned C: %s, %lld "
                            "elements not written", (long long)m,
                            fb_status_string(st2), (long long)left);
        }
        buf_free(&c1);
        c1.dev = NULL;
    }
    free(got), free(want);
    if (fb_plan_destroy(plan) != FB_STATUS_SUCCESS)
        tcheck_fail(&chk, "fb_plan_destroy failed");
done:
    tap_check(&chk, "%s: the same bits and implementation as the plain "
              "call, m in %d values up to max_m", label, nm);
    buf_free(&a), buf_free(&b), buf_free(&bias), buf_free(&c0);
}

void plan_check_mlp(fb_handle h, const tmem *mem, const plan_mlp_spec *s,
                    const int64_t *ms, int nm, void (*sync)(void),
                    const char *want_path)
{
    const int64_t max_m = s->max_m, k = s->k, hd = s->h, n = s->n;
    const int64_t ldx = (k > 1 ? k : 1) + s->pad, ldy = (n > 1 ? n : 1) + s->pad;
    buf x, wg, wu, wd, bg, bu, bd, y0, y1;
    buf_make(&x, mem, s->dtype, max_m * ldx, 1);
    buf_make(&wg, mem, s->dtype, hd * k, 1);
    buf_make(&wu, mem, s->dtype, hd * k, 1);
    buf_make(&wd, mem, s->dtype, n * hd, 1);
    buf_make(&bg, mem, s->dtype, hd, 1);
    buf_make(&bu, mem, s->dtype, hd, 1);
    buf_make(&bd, mem, s->dtype, n, 1);
    buf_make(&y0, mem, s->dtype, max_m * ldy, 0);
    buf_make(&y1, mem, s->dtype, max_m * ldy, 0);
    tcheck chk;
    tcheck_init(&chk);
    char label[160];
    snprintf(label, sizeof label,
             "%s plan mlp max_m=%lld %lld -> %lld -> %lld %s%s pad=%d",
             dt_name(s->dtype), (long long)max_m, (long long)k,
             (long long)hd, (long long)n, act_name(s->act),
             s->biases ? " biases" : "", s->pad);
    const void *pbg = s->biases ? bg.dev : NULL, *pbu = s->biases ? bu.dev : NULL;
    const void *pbd = s->biases ? bd.dev : NULL;
    fb_plan plan = NULL;
    fb_status st = fb_plan_create_mlp(h, s->dtype, s->act, max_m, k, hd, n,
                                      wg.dev, pbg, wu.dev, pbu, wd.dev, pbd,
                                      &plan);
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(&chk, "fb_plan_create_mlp: %s (%s)",
                    fb_status_string(st), fb_handle_last_message(h));
        goto done;
    }
    unsigned char *got = malloc(y0.bytes), *want = malloc(y0.bytes);
    if (got == NULL || want == NULL)
        tap_bail("out of memory");
    for (int i = 0; i < nm; i++) {
        const int64_t m = ms[i];
        mem->put(y0.dev, y0.host, y0.bytes); /* poisoned */
        mem->put(y1.dev, y1.host, y1.bytes);
        st = mlp_geglu_forward(h, s->dtype, s->act, m, k, hd, n, x.dev, ldx,
                               wg.dev, pbg, wu.dev, pbu, wd.dev, pbd, y0.dev,
                               ldy);
        if (sync)
            sync();
        char plain_path[128];
        snprintf(plain_path, sizeof plain_path, "%s", fb_handle_last_path(h));
        fb_status st2 = fb_plan_mlp(plan, m, x.dev, ldx, y1.dev, ldy);
        if (sync)
            sync();
        char plan_ran[128];
        snprintf(plan_ran, sizeof plan_ran, "%s", fb_handle_last_path(h));
        const char *impl = fb_plan_path(plan, m);
        if (st != FB_STATUS_SUCCESS || st2 != FB_STATUS_SUCCESS) {
            tcheck_fail(&chk, "m=%lld: plain %s, plan %s (%s)", (long long)m,
                        fb_status_string(st), fb_status_string(st2),
                        fb_handle_last_message(h));
            continue;
        }
        buf_get(&y0, want);
        buf_get(&y1, got);
        if (memcmp(got, want, y0.bytes) != 0)
            tcheck_fail(&chk, "m=%lld: the plan's bits differ from the "
                        "plain call's (%s, plan %s)", (long long)m,
                        plain_path, impl);
        /* fb_plan_path names the choice for activations and output
         * without padding (what creation decided); a padded execution
         * that choice cannot take runs the plain call's walk
         * (fb_plan_create_gemm(3)), so there the executed path is what
         * must match. */
        if (s->pad == 0 && !starts_with(plain_path, impl))
            tcheck_fail(&chk, "m=%lld: the plan runs %s, the plain call ran "
                        "%s", (long long)m, impl, plain_path);
        if (s->pad != 0 && !same_implementation(plan_ran, plain_path))
            tcheck_fail(&chk, "m=%lld: the padded execution ran %s, the "
                        "plain call %s", (long long)m, plan_ran, plain_path);
        if (want_path != NULL && !starts_with(impl, want_path))
            tcheck_fail(&chk, "m=%lld: the plan runs %s, not %s",
                        (long long)m, impl, want_path);
        const int64_t left = poisoned(s->dtype, FB_ROW_MAJOR, got, m, n, ldy);
        if (left != 0)
            tcheck_fail(&chk, "m=%lld: %lld elements of Y not written",
                        (long long)m, (long long)left);
    }
    free(got), free(want);
    if (fb_plan_destroy(plan) != FB_STATUS_SUCCESS)
        tcheck_fail(&chk, "fb_plan_destroy failed");
done:
    tap_check(&chk, "%s: the same bits and implementation as the plain "
              "call, m in %d values up to max_m", label, nm);
    buf_free(&x), buf_free(&wg), buf_free(&wu), buf_free(&wd);
    buf_free(&bg), buf_free(&bu), buf_free(&bd), buf_free(&y0), buf_free(&y1);
}

/* ---- bad arguments ------------------------------------------------------- */

static void expect_arg(fb_handle h, fb_status st, int arg, const char *what)
{
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == arg,
           "%s: %s at argument %d (want %d; %s)", what, fb_status_string(st),
           fb_handle_last_arg(h), arg, fb_handle_last_message(h));
}

void plan_check_bad_args(fb_handle h, const tmem *mem)
{
    const fb_dtype t = FB_DTYPE_F32;
    const int64_t max_m = 8, n = 6, k = 5, hd = 7;
    buf w, b, x, y, wg, wu, wd;
    buf_make(&w, mem, t, n * k, 1);     /* B: n x k row-major, transb */
    buf_make(&b, mem, t, n, 1);
    buf_make(&x, mem, t, max_m * k, 1);
    buf_make(&y, mem, t, max_m * n, 0);
    buf_make(&wg, mem, t, hd * k, 1);
    buf_make(&wu, mem, t, hd * k, 1);
    buf_make(&wd, mem, t, n * hd, 1);
    fb_plan p = NULL, q = NULL;
    const char *wbytes = w.dev;

    /* Creation, gemm: each argument wrong in turn. */
#define CREATE_G(dt, lay, ta, tb, mm, nn, kk, B, ldb, bias, act, out)          \
    fb_plan_create_gemm(h, dt, lay, ta, tb, mm, nn, kk, 1.0f, B, ldb, 0.0f,    \
                        bias, act, out)
    expect_arg(h, CREATE_G((fb_dtype)7, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                           max_m, n, k, w.dev, k, b.dev, FB_ACT_RELU, &p),
               2, "create gemm, unknown dtype");
    expect_arg(h, CREATE_G(t, (fb_layout)5, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, w.dev, k, b.dev, FB_ACT_RELU, &p),
               3, "create gemm, unknown layout");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, (fb_transpose)0, FB_TRANS, max_m,
                           n, k, w.dev, k, b.dev, FB_ACT_RELU, &p),
               4, "create gemm, unknown transa");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, (fb_transpose)0,
                           max_m, n, k, w.dev, k, b.dev, FB_ACT_RELU, &p),
               5, "create gemm, unknown transb");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 0, n, k,
                           w.dev, k, b.dev, FB_ACT_RELU, &p),
               6, "create gemm, max_m = 0");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, -1,
                           k, w.dev, k, b.dev, FB_ACT_RELU, &p),
               7, "create gemm, n < 0");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           -1, w.dev, k, b.dev, FB_ACT_RELU, &p),
               8, "create gemm, k < 0");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, NULL, k, b.dev, FB_ACT_RELU, &p),
               10, "create gemm, B NULL");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, wbytes + 1, k, b.dev, FB_ACT_RELU, &p),
               10, "create gemm, B misaligned");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, w.dev, k - 1, b.dev, FB_ACT_RELU, &p),
               11, "create gemm, ldb < k");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, w.dev, k, (const char *)b.dev + 2, FB_ACT_RELU,
                           &p),
               13, "create gemm, bias misaligned");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, w.dev, k, b.dev, (fb_activation)9, &p),
               14, "create gemm, unknown activation");
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                           k, w.dev, k, b.dev, FB_ACT_RELU, NULL),
               15, "create gemm, plan pointer NULL");
    /* Several wrong: the lowest position wins. */
    expect_arg(h, CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, -3, n, k,
                           NULL, k, b.dev, (fb_activation)9, NULL),
               6, "create gemm, max_m, B, act and plan all wrong");
    tap_ok(p == NULL, "no plan was made by a failed creation");

    /* Creation, mlp. */
#define CREATE_M(dt, act, mm, kk, hh, nn, WG, WU, WD, out)                     \
    fb_plan_create_mlp(h, dt, act, mm, kk, hh, nn, WG, NULL, WU, NULL, WD,     \
                       NULL, out)
    expect_arg(h, CREATE_M((fb_dtype)3, FB_ACT_SILU, max_m, k, hd, n, wg.dev,
                           wu.dev, wd.dev, &q), 2, "create mlp, unknown dtype");
    expect_arg(h, CREATE_M(t, (fb_activation)-1, max_m, k, hd, n, wg.dev,
                           wu.dev, wd.dev, &q), 3,
               "create mlp, unknown activation");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, -1, k, hd, n, wg.dev, wu.dev,
                           wd.dev, &q), 4, "create mlp, max_m < 0");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, -1, hd, n, wg.dev, wu.dev,
                           wd.dev, &q), 5, "create mlp, k < 0");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, -1, n, wg.dev, wu.dev,
                           wd.dev, &q), 6, "create mlp, h < 0");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, hd, -1, wg.dev, wu.dev,
                           wd.dev, &q), 7, "create mlp, n < 0");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, hd, n, NULL, wu.dev,
                           wd.dev, &q), 8, "create mlp, Wg NULL");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, hd, n, wg.dev, NULL,
                           wd.dev, &q), 10, "create mlp, Wu NULL");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, hd, n, wg.dev, wu.dev,
                           NULL, &q), 12, "create mlp, Wd NULL");
    expect_arg(h, fb_plan_create_mlp(h, t, FB_ACT_SILU, max_m, k, hd, n,
                                     wg.dev, (const char *)b.dev + 1, wu.dev,
                                     NULL, wd.dev, NULL, &q),
               9, "create mlp, bg misaligned");
    expect_arg(h, CREATE_M(t, FB_ACT_SILU, max_m, k, hd, n, wg.dev, wu.dev,
                           wd.dev, NULL), 14, "create mlp, plan pointer NULL");

    /* Execution. */
    fb_status st = CREATE_G(t, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, max_m, n,
                            k, w.dev, k, b.dev, FB_ACT_RELU, &p);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("fb_plan_create_gemm: %s", fb_handle_last_message(h));
    st = CREATE_M(t, FB_ACT_SILU, max_m, k, hd, n, wg.dev, wu.dev, wd.dev, &q);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("fb_plan_create_mlp: %s", fb_handle_last_message(h));
    unsigned char *before = malloc(y.bytes), *after = malloc(y.bytes);
    if (before == NULL || after == NULL)
        tap_bail("out of memory");
    buf_get(&y, before);
#define UNTOUCHED() (buf_get(&y, after), memcmp(before, after, y.bytes) == 0)
    expect_arg(h, fb_plan_gemm(p, max_m + 1, x.dev, k, y.dev, n), 2,
               "gemm plan, m > max_m");
    expect_arg(h, fb_plan_gemm(p, -1, x.dev, k, y.dev, n), 2,
               "gemm plan, m < 0");
    expect_arg(h, fb_plan_gemm(p, max_m, NULL, k, y.dev, n), 3,
               "gemm plan, A NULL");
    expect_arg(h, fb_plan_gemm(p, max_m, x.dev, k - 1, y.dev, n), 4,
               "gemm plan, lda < k");
    expect_arg(h, fb_plan_gemm(p, max_m, x.dev, k, NULL, n), 5,
               "gemm plan, C NULL");
    expect_arg(h, fb_plan_gemm(p, max_m, x.dev, k, y.dev, n - 1), 6,
               "gemm plan, ldc < n");
    expect_arg(h, fb_plan_gemm(p, 2, x.dev, k, (void *)w.dev, n), 5,
               "gemm plan, C overlaps the weights");
    expect_arg(h, fb_plan_gemm(p, 2, x.dev, k, x.dev, n), 5,
               "gemm plan, C overlaps A");
    expect_arg(h, fb_plan_gemm(q, 2, x.dev, k, y.dev, n), 1,
               "an MLP plan given to fb_plan_gemm");
    expect_arg(h, fb_plan_mlp(q, max_m + 1, x.dev, k, y.dev, n), 2,
               "mlp plan, m > max_m");
    expect_arg(h, fb_plan_mlp(q, max_m, NULL, k, y.dev, n), 3,
               "mlp plan, X NULL");
    expect_arg(h, fb_plan_mlp(q, max_m, x.dev, k - 1, y.dev, n), 4,
               "mlp plan, ldx < k");
    expect_arg(h, fb_plan_mlp(q, max_m, x.dev, k, NULL, n), 5,
               "mlp plan, Y NULL");
    expect_arg(h, fb_plan_mlp(q, max_m, x.dev, k, y.dev, n - 1), 6,
               "mlp plan, ldy < n");
    expect_arg(h, fb_plan_mlp(q, 2, x.dev, k, (char *)x.dev + 4, n), 5,
               "mlp plan, Y overlaps X");
    expect_arg(h, fb_plan_mlp(p, 2, x.dev, k, y.dev, n), 1,
               "a gemm plan given to fb_plan_mlp");
    tap_ok(UNTOUCHED(), "the output untouched by every refused execution");
    tap_ok(fb_plan_gemm(p, 0, NULL, k, NULL, n) == FB_STATUS_SUCCESS &&
               fb_plan_mlp(q, 0, NULL, k, NULL, n) == FB_STATUS_SUCCESS,
           "m = 0 runs nothing and succeeds");
    tap_ok(strcmp(fb_plan_path(p, 0), "") == 0 &&
               strcmp(fb_plan_path(p, max_m + 1), "") == 0 &&
               strcmp(fb_plan_path(p, max_m), "") != 0,
           "fb_plan_path: \"\" for m = 0 and m > max_m, a name for max_m "
           "(%s)", fb_plan_path(p, max_m));

    /* Made-up and destroyed plans: argument 1, on the default handle. */
    static const uintptr_t made_up[] = {1, 2, 8, 4096, 0xdeadbeef};
    int all = 1;
    for (size_t i = 0; i < sizeof made_up / sizeof made_up[0]; i++) {
        fb_plan bad = (fb_plan)made_up[i];
        all &= fb_plan_gemm(bad, 1, x.dev, k, y.dev, n) ==
                   FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(NULL) == 1;
        all &= fb_plan_mlp(bad, 1, x.dev, k, y.dev, n) ==
               FB_STATUS_INVALID_ARGUMENT;
        all &= fb_plan_destroy(bad) == FB_STATUS_INVALID_ARGUMENT;
        all &= strcmp(fb_plan_path(bad, 1), "") == 0;
    }
    tap_ok(all, "made-up plans: INVALID_ARGUMENT at argument 1, \"\" paths");
    tap_ok(fb_plan_destroy(NULL) == FB_STATUS_SUCCESS,
           "fb_plan_destroy(NULL) does nothing");
    tap_ok(fb_plan_destroy(p) == FB_STATUS_SUCCESS &&
               fb_plan_gemm(p, 1, x.dev, k, y.dev, n) ==
                   FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(NULL) == 1 &&
               fb_plan_destroy(p) == FB_STATUS_INVALID_ARGUMENT,
           "a destroyed plan is not live");
    tap_ok(UNTOUCHED(), "the output untouched by the made-up plans");
    (void)q; /* destroyed with its handle by the caller */
    free(before), free(after);
    buf_free(&w), buf_free(&b), buf_free(&x), buf_free(&y);
    buf_free(&wg), buf_free(&wu), buf_free(&wd);
#undef CREATE_G
#undef CREATE_M
#undef UNTOUCHED
}
