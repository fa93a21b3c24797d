/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_call.c -- the benchmark's calls into fusedblas.
 *
 * nn.Linear: Y (m x n) = X (m x k) W^T with W stored n x k, row-major. In
 * BLAS terms: A = X (NoTrans, lda = k), B = W (Trans, ldb = k), C = Y
 * (ldc = n), beta = 0, the bias added to every row. With --weights-kn, W
 * is stored k x n: B NoTrans, ldb = n.
 */
#include <stdio.h>
#include "bench_call.h"

static fb_transpose w_op(const bench_case *c)
{
    return c->weights_kn ? FB_NO_TRANS : FB_TRANS;
}

static int64_t w_ld(const bench_case *c)
{
    return c->weights_kn ? c->n : c->k;
}

fb_status bench_call_fusedblas(fb_handle h, const bench_case *c,
                               const bench_set *s)
{
    if (c->routine == BENCH_MLP)
        return mlp_geglu_forward(h, c->dtype, c->act, c->m, c->k, c->h, c->n,
                                 s->x, c->k, s->wg, s->bg, s->wu, s->bu, s->wd,
                                 s->bd, s->y, c->n);
    switch (c->dtype) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, w_op(c), c->m, c->n,
                              c->k, 1.0f, s->x, c->k, s->w, w_ld(c), 0.0f,
                              s->y, c->n, s->b, c->act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, w_op(c), c->m, c->n,
                              c->k, 1.0f, s->x, c->k, s->w, w_ld(c), 0.0f,
                              s->y, c->n, s->b, c->act);
    case FB_DTYPE_BF16:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, w_op(c), c->m, c->n,
                              c->k, 1.0f, s->x, c->k, s->w, w_ld(c), 0.0f,
                              s->y, c->n, s->b, c->act);
    }
    return FB_STATUS_INVALID_ARGUMENT;
}

/* A call's outcome in words and as run() returns it. */
static int outcome(fb_handle h, fb_status st, char *msg, size_t len)
{
    if (st == FB_STATUS_SUCCESS) {
        snprintf(msg, len, "%s", fb_handle_last_path(h));
        return 0;
    }
    snprintf(msg, len, "%s%s%s", fb_status_string(st),
             *fb_handle_last_message(h) ? ": " : "", fb_handle_last_message(h));
    return st == FB_STATUS_NOT_SUPPORTED ? 1 : -1;
}

int bench_run_fusedblas(fb_handle h, const bench_case *c, const bench_set *set,
                        char *msg, size_t len)
{
    return outcome(h, bench_call_fusedblas(h, c, set), msg, len);
}

fb_status bench_plan_fusedblas(fb_handle h, const bench_case *c,
                               const bench_set *s, fb_plan *plan)
{
    if (c->routine == BENCH_MLP)
        return fb_plan_create_mlp(h, c->dtype, c->act, c->m, c->k, c->h,
                                  c->n, s->wg, s->bg, s->wu, s->bu, s->wd,
                                  s->bd, plan);
    return fb_plan_create_gemm(h, c->dtype, FB_ROW_MAJOR, FB_NO_TRANS,
                               w_op(c), c->m, c->n, c->k, 1.0f, s->w, w_ld(c),
                               0.0f, s->b, c->act, plan);
}

int bench_run_plan(fb_plan plan, fb_handle h, const bench_case *c,
                   const bench_set *s, char *msg, size_t len)
{
    const fb_status st =
        c->routine == BENCH_MLP
            ? fb_plan_mlp(plan, c->m, s->x, c->k, s->y, c->n)
            : fb_plan_gemm(plan, c->m, s->x, c->k, s->y, c->n);
    return outcome(h, st, msg, len);
}

fb_status bench_call_e4m3(fb_handle h, const bench_case *c,
                          const bench_set *s, const bench_e4m3_weight w[3])
{
    if (c->routine == BENCH_MLP)
        return mlp_geglu_forward_e4m3(h, c->dtype, c->act, c->m, c->k, c->h,
                                      c->n, s->x, c->k, w[0].q, w[0].s, s->bg,
                                      w[1].q, w[1].s, s->bu, w[2].q, w[2].s,
                                      s->bd, s->y, c->n);
    if (c->weights_kn) /* the e4m3 weights are quantised as n x k */
        return FB_STATUS_NOT_SUPPORTED;
    return gemm_e4m3_bias_act(h, c->dtype, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                              c->m, c->n, c->k, 1.0f, s->x, c->k, w[0].q,
                              c->k, w[0].s, 0.0f, s->y, c->n, s->b, c->act);
}

int bench_run_e4m3(fb_handle h, const bench_case *c, const bench_set *set,
                   const bench_e4m3_weight w[3], char *msg, size_t len)
{
    return outcome(h, bench_call_e4m3(h, c, set, w), msg, len);
}
