/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_onednn.c -- oneDNN as a CPU baseline: the strongest fused CPU library
 * there is. A matmul primitive with the bias and an eltwise post-op
 * (gelu_tanh, gelu_erf, relu, swish) for nn.Linear + activation; the gated
 * MLP as three matmuls, the up projection carrying a binary-mul post-op
 * with the activated gate, so the GeGLU product costs no pass of its own:
 *
 *   G = act(X Wg^T + bg)          matmul, bias, eltwise
 *   H = (X Wu^T + bu) .* G        matmul, bias, binary mul
 *   Y = H Wd^T + bd               matmul, bias
 *
 * Same plain buffers as everyone else (weights n x k row-major, oneDNN's
 * "ba" tag for a k x n matrix), as fusedblas's plain routines take them
 * on every call. A second row, onednn-reordered, gives each matmul the
 * weight layout it prefers (format tag "any") and reorders every set's
 * weights into it once, outside the timing: the comparison for
 * fusedblas's plans, which pack the weights once. G and H are stored in
 * the data type, as a framework stores them. oneDNN 2.x and 3.x APIs.
 */
#include <stdio.h>
#include <stdlib.h>
#include "config.h"
#include "cpu_impl.h"

#ifdef HAVE_DNNL
#include <dnnl.h>
#include "bench_memory.h"
#include "bench_random.h"
#include "bench_stats.h"

#if DNNL_VERSION_MAJOR >= 3
/* 3.x: memory descriptors are opaque handles. */
typedef struct od_md {
    dnnl_memory_desc_t d;
} od_md;
#define OD_MD(md) ((md)->d)
static dnnl_status_t od_md_make(od_md *md, int64_t rows, int64_t cols,
                                dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
    dnnl_dims_t dims = {rows, cols};
    return dnnl_memory_desc_create_with_tag(&md->d, 2, dims, dt, tag);
}
static void od_md_free(od_md *md)
{
    if (md->d)
        dnnl_memory_desc_destroy(md->d);
    md->d = NULL;
}
#else
typedef struct od_md {
    dnnl_memory_desc_t d;
} od_md;
#define OD_MD(md) (&(md)->d)
static dnnl_status_t od_md_make(od_md *md, int64_t rows, int64_t cols,
                                dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
    dnnl_dims_t dims = {rows, cols};
    return dnnl_memory_desc_init_by_tag(&md->d, 2, dims, dt, tag);
}
static void od_md_free(od_md *md)
{
    (void)md;
}
#endif

/* One matmul primitive with its memory objects; the data handles are
 * pointed at the current set before each call. */
typedef struct od_matmul {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst, mul;
    /* reordered: each set's weights in the primitive's layout */
    dnnl_memory_t *wei_sets;
} od_matmul;

typedef struct od_state {
    bench_case c;
    const bench_set *sets;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    od_matmul mm[3];   /* gemm: mm[0]; mlp: gate, up, down */
    int reordered;     /* weights reordered once (mm[i].wei_sets) */
    int nsets;
    void *g, *hid;     /* mlp scratch in the data type */
    char message[160];
} od_state;

static int od_eltwise_alg(fb_activation act, dnnl_alg_kind_t *alg, float *alpha)
{
    *alpha = 0.0f;
    switch (act) {
    case FB_ACT_RELU: *alg = dnnl_eltwise_relu; return 1;
    case FB_ACT_GELU_TANH: *alg = dnnl_eltwise_gelu_tanh; return 1;
    case FB_ACT_GELU_ERF: *alg = dnnl_eltwise_gelu_erf; return 1;
    case FB_ACT_SILU: *alg = dnnl_eltwise_swish; *alpha = 1.0f; return 1;
    case FB_ACT_NONE: return 0;
    }
    return 0;
}

/* dst (m x n) = src (m x k) W^T (+ bias) [then act] [then .* mul]. */
/* With weights from sets (nsets of them, NULL: plain weights bound at
 * each call), the weights' layout is the primitive's choice, and each
 * set's weights are reordered into it now. */
static dnnl_status_t od_reorder_weights(od_matmul *mm, dnnl_engine_t eng,
                                        dnnl_stream_t stream,
                                        dnnl_primitive_desc_t pd,
                                        const od_md *plain, void *const *w,
                                        int nsets);

static dnnl_status_t od_matmul_make(od_matmul *mm, dnnl_engine_t eng,
                                    dnnl_stream_t stream,
                                    dnnl_data_type_t dt, int64_t m, int64_t k,
                                    int64_t n, int bias, fb_activation act,
                                    int mul, void *const *w, int nsets)
{
    od_md src = {0}, wei = {0}, bmd = {0}, dst = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st;
#define OD_TRY(call)                                                          \
    do {                                                                      \
        if ((st = (call)) != dnnl_success)                                    \
            goto done;                                                        \
    } while (0)
    OD_TRY(od_md_make(&src, m, k, dt, dnnl_ab));
    OD_TRY(od_md_make(&wei, k, n, dt, w != NULL ? dnnl_format_tag_any
                                                : dnnl_ba));
    OD_TRY(od_md_make(&dst, m, n, dt, dnnl_ab));
    if (bias)
        OD_TRY(od_md_make(&bmd, 1, n, dt, dnnl_ab));
    OD_TRY(dnnl_primitive_attr_create(&attr));
    OD_TRY(dnnl_post_ops_create(&po));
    dnnl_alg_kind_t alg;
    float alpha;
    if (od_eltwise_alg(act, &alg, &alpha)) {
#if DNNL_VERSION_MAJOR >= 3
        OD_TRY(dnnl_post_ops_append_eltwise(po, alg, alpha, 0.0f));
#else
        OD_TRY(dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, 0.0f));
#endif
    }
    /* the binary post-op comes last; the up projection has no eltwise,
     * so it is post-op 0 there (od_run passes that index) */
    if (mul)
        OD_TRY(dnnl_post_ops_append_binary(po, dnnl_binary_mul, OD_MD(&dst)));
    OD_TRY(dnnl_primitive_attr_set_post_ops(attr, po));
#if DNNL_VERSION_MAJOR >= 3
    OD_TRY(dnnl_matmul_primitive_desc_create(&pd, eng, OD_MD(&src), OD_MD(&wei),
                                             bias ? OD_MD(&bmd) : NULL,
                                             OD_MD(&dst), attr));
#else
    dnnl_matmul_desc_t desc;
    OD_TRY(dnnl_matmul_desc_init(&desc, OD_MD(&src), OD_MD(&wei),
                                 bias ? OD_MD(&bmd) : NULL, OD_MD(&dst)));
    OD_TRY(dnnl_primitive_desc_create(&pd, &desc, attr, eng, NULL));
#endif
    OD_TRY(dnnl_primitive_create(&mm->prim, pd));
    OD_TRY(dnnl_memory_create(&mm->src, OD_MD(&src), eng, DNNL_MEMORY_NONE));
    if (w != NULL) {
        od_md plain = {0};
        OD_TRY(od_md_make(&plain, k, n, dt, dnnl_ba));
        st = od_reorder_weights(mm, eng, stream, pd, &plain, w, nsets);
        od_md_free(&plain);
        if (st != dnnl_success)
            goto done;
    } else {
        OD_TRY(dnnl_memory_create(&mm->wei, OD_MD(&wei), eng,
                                  DNNL_MEMORY_NONE));
    }
    OD_TRY(dnnl_memory_create(&mm->dst, OD_MD(&dst), eng, DNNL_MEMORY_NONE));
    if (bias)
        OD_TRY(dnnl_memory_create(&mm->bias, OD_MD(&bmd), eng, DNNL_MEMORY_NONE));
    if (mul)
        OD_TRY(dnnl_memory_create(&mm->mul, OD_MD(&dst), eng, DNNL_MEMORY_NONE));
done:
#undef OD_TRY
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    od_md_free(&src);
    od_md_free(&wei);
    od_md_free(&bmd);
    od_md_free(&dst);
    return st;
}

static dnnl_status_t od_reorder_weights(od_matmul *mm, dnnl_engine_t eng,
                                        dnnl_stream_t stream,
                                        dnnl_primitive_desc_t pd,
                                        const od_md *plain, void *const *w,
                                        int nsets)
{
#if DNNL_VERSION_MAJOR >= 3
    const_dnnl_memory_desc_t want =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
#else
    const dnnl_memory_desc_t *want =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
#endif
    dnnl_status_t st = dnnl_success;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t from = NULL;
    mm->wei_sets = calloc((size_t)nsets, sizeof *mm->wei_sets);
    if (mm->wei_sets == NULL)
        return dnnl_out_of_memory;
#define OD_TRY(call)                                                          \
    do {                                                                      \
        if ((st = (call)) != dnnl_success)                                    \
            goto done;                                                        \
    } while (0)
    OD_TRY(dnnl_reorder_primitive_desc_create(&rpd, OD_MD(plain), eng, want,
                                              eng, NULL));
    OD_TRY(dnnl_primitive_create(&reorder, rpd));
    OD_TRY(dnnl_memory_create(&from, OD_MD(plain), eng, DNNL_MEMORY_NONE));
    for (int s = 0; s < nsets; s++) {
        OD_TRY(dnnl_memory_create(&mm->wei_sets[s], want, eng,
                                  DNNL_MEMORY_ALLOCATE));
        OD_TRY(dnnl_memory_set_data_handle(from, w[s]));
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from},
                                   {DNNL_ARG_TO, mm->wei_sets[s]}};
        OD_TRY(dnnl_primitive_execute(reorder, stream, 2, args));
    }
    st = dnnl_stream_wait(stream);
done:
#undef OD_TRY
    if (from)
        dnnl_memory_destroy(from);
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    return st;
}

static void od_matmul_free(od_matmul *mm, int nsets)
{
    dnnl_memory_t mems[] = {mm->src, mm->wei, mm->bias, mm->dst, mm->mul};
    for (int i = 0; i < 5; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    if (mm->wei_sets != NULL) {
        for (int s = 0; s < nsets; s++)
            if (mm->wei_sets[s])
                dnnl_memory_destroy(mm->wei_sets[s]);
        free(mm->wei_sets);
    }
    if (mm->prim)
        dnnl_primitive_destroy(mm->prim);
}

static dnnl_status_t od_matmul_run(od_matmul *mm, dnnl_stream_t stream,
                                   int set, const void *src, const void *wei,
                                   const void *bias, void *dst, const void *mul,
                                   int mul_index)
{
    dnnl_memory_t wmem = mm->wei_sets != NULL ? mm->wei_sets[set] : mm->wei;
    dnnl_exec_arg_t args[5];
    int nargs = 0;
    dnnl_status_t st;
    /* oneDNN takes non-const handles; it does not write src, weights,
     * bias or the binary operand. */
    if ((st = dnnl_memory_set_data_handle(mm->src, (void *)src)) != dnnl_success ||
        (mm->wei_sets == NULL &&
         (st = dnnl_memory_set_data_handle(mm->wei, (void *)wei)) != dnnl_success) ||
        (st = dnnl_memory_set_data_handle(mm->dst, dst)) != dnnl_success)
        return st;
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mm->src};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wmem};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mm->dst};
    if (mm->bias) {
        if ((st = dnnl_memory_set_data_handle(mm->bias, (void *)bias)) != dnnl_success)
            return st;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mm->bias};
    }
    if (mm->mul) {
        if ((st = dnnl_memory_set_data_handle(mm->mul, (void *)mul)) != dnnl_success)
            return st;
        args[nargs++] = (dnnl_exec_arg_t){
            DNNL_ARG_ATTR_MULTIPLE_POST_OP(mul_index) | DNNL_ARG_SRC_1, mm->mul};
    }
    if ((st = dnnl_primitive_execute(mm->prim, stream, nargs, args)) != dnnl_success)
        return st;
    return dnnl_stream_wait(stream);
}

static void od_fini(void *state)
{
    od_state *s = state;
    if (s == NULL)
        return;
    for (int i = 0; i < 3; i++)
        od_matmul_free(&s->mm[i], s->nsets);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->eng)
        dnnl_engine_destroy(s->eng);
    bench_host_free(s->g);
    bench_host_free(s->hid);
    free(s);
}

static bench_outcome od_make(void **state, const bench_case *c,
                             const bench_set *sets, int nsets, int reordered,
                             char *why, size_t len)
{
    od_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, len, "out of memory");
        return BENCH_FAILED;
    }
    *state = s;
    s->c = *c;
    s->sets = sets;
    s->nsets = nsets;
    s->reordered = reordered;
    /* each set's weights, per matmul, for the reordered row */
    void **w[3] = {NULL, NULL, NULL};
    if (reordered) {
        for (int i = 0; i < 3; i++)
            if ((w[i] = calloc((size_t)nsets, sizeof *w[i])) == NULL) {
                snprintf(why, len, "out of memory");
                return BENCH_FAILED;
            }
        for (int j = 0; j < nsets; j++) {
            w[0][j] = c->routine == BENCH_GEMM ? sets[j].w : sets[j].wg;
            w[1][j] = sets[j].wu;
            w[2][j] = sets[j].wd;
        }
    }
    dnnl_data_type_t dt = c->dtype == FB_DTYPE_F32   ? dnnl_f32
                          : c->dtype == FB_DTYPE_BF16 ? dnnl_bf16
                                                      : dnnl_f16;
    dnnl_status_t st = dnnl_engine_create(&s->eng, dnnl_cpu, 0);
    if (st == dnnl_success)
        st = dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        snprintf(why, len, "oneDNN engine: status %d", (int)st);
        return BENCH_FAILED;
    }
    if (c->routine == BENCH_GEMM) {
        st = od_matmul_make(&s->mm[0], s->eng, s->stream, dt, c->m, c->k,
                            c->n, c->bias, c->act, 0, w[0], nsets);
    } else {
        st = od_matmul_make(&s->mm[0], s->eng, s->stream, dt, c->m, c->k,
                            c->h, c->bias, c->act, 0, w[0], nsets);
        if (st == dnnl_success)
            st = od_matmul_make(&s->mm[1], s->eng, s->stream, dt, c->m, c->k,
                                c->h, c->bias, FB_ACT_NONE, 1, w[1], nsets);
        if (st == dnnl_success)
            st = od_matmul_make(&s->mm[2], s->eng, s->stream, dt, c->m, c->h,
                                c->n, c->bias, FB_ACT_NONE, 0, w[2], nsets);
        size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
        if (st == dnnl_success &&
            (!(s->g = bench_host_alloc((size_t)(c->m * c->h) * es)) ||
             !(s->hid = bench_host_alloc((size_t)(c->m * c->h) * es)))) {
            snprintf(why, len, "out of host memory for oneDNN's scratch");
            return BENCH_SKIPPED;
        }
    }
    for (int i = 0; i < 3; i++)
        free(w[i]);
    if (st == dnnl_unimplemented) {
        snprintf(why, len, "oneDNN has no %s matmul for this CPU",
                 c->dtype == FB_DTYPE_F32 ? "f32" : c->dtype == FB_DTYPE_BF16 ? "bf16" : "f16");
        return BENCH_NOT_SUPPORTED;
    }
    if (st != dnnl_success) {
        snprintf(why, len, "oneDNN matmul: status %d", (int)st);
        return BENCH_FAILED;
    }
    snprintf(s->message, sizeof s->message, "matmul+post-ops%s",
             reordered ? ", weights reordered once" : "");
    return BENCH_RAN;
}

static bench_outcome od_init(void **state, const bench_case *c,
                             const bench_set *sets, int nsets,
                             const bench_options *opt, char *why, size_t len)
{
    (void)opt;
    return od_make(state, c, sets, nsets, 0, why, len);
}

static bench_outcome od_init_reordered(void **state, const bench_case *c,
                                       const bench_set *sets, int nsets,
                                       const bench_options *opt, char *why,
                                       size_t len)
{
    (void)opt;
    return od_make(state, c, sets, nsets, 1, why, len);
}

static int od_run(void *state, int j)
{
    od_state *s = state;
    const bench_set *set = &s->sets[j];
    dnnl_status_t st;
    if (s->c.routine == BENCH_GEMM) {
        st = od_matmul_run(&s->mm[0], s->stream, j, set->x, set->w, set->b,
                           set->y, NULL, 0);
    } else {
        st = od_matmul_run(&s->mm[0], s->stream, j, set->x, set->wg, set->bg,
                           s->g, NULL, 0);
        if (st == dnnl_success)
            st = od_matmul_run(&s->mm[1], s->stream, j, set->x, set->wu,
                               set->bu, s->hid, s->g, 0);
        if (st == dnnl_success)
            st = od_matmul_run(&s->mm[2], s->stream, j, s->hid, set->wd,
                               set->bd, set->y, NULL, 0);
    }
    if (st != dnnl_success) {
        snprintf(s->message, sizeof s->message, "oneDNN execute: status %d", (int)st);
        return -1;
    }
    return 0;
}

static const char *od_message(void *state)
{
    return ((od_state *)state)->message;
}

const bench_cpu_impl bench_cpu_onednn = {
    BENCH_IMPL_ONEDNN, BENCH_ALT, od_init, od_run, od_message, od_fini,
};
const bench_cpu_impl bench_cpu_onednn_reordered = {
    BENCH_IMPL_ONEDNN_REORDERED, BENCH_ALT, od_init_reordered, od_run,
    od_message, od_fini,
};

double bench_onednn_gflops(fb_dtype t, int n, int reps)
{
    bench_case c = {0};
    c.routine = BENCH_GEMM;
    c.dtype = t;
    c.act = FB_ACT_NONE;
    c.m = c.k = c.n = n;
    size_t es = t == FB_DTYPE_F32 ? 4 : 2;
    bench_set set = {0};
    set.x = bench_host_alloc((size_t)n * n * es);
    set.w = bench_host_alloc((size_t)n * n * es);
    set.y = bench_host_alloc((size_t)n * n * es);
    void *state = NULL;
    char why[160];
    double rate = 0, ts[32];
    if (reps > 32)
        reps = 32;
    if (set.x && set.w && set.y &&
        od_init(&state, &c, &set, 1, NULL, why, sizeof why) == BENCH_RAN) {
        bench_fill_uniform(t, set.x, (int64_t)n * n, 4, 1.0f);
        bench_fill_uniform(t, set.w, (int64_t)n * n, 5, 1.0f);
        int ok = 1;
        for (int r = -1; r < reps && ok; r++) {
            double t0 = bench_now();
            ok = od_run(state, 0) == 0;
            if (r >= 0)
                ts[r] = bench_now() - t0;
        }
        if (ok) {
            bench_stats st;
            bench_stats_from(ts, reps, &st);
            rate = 2.0 * n * (double)n * n / st.min * 1e-9; /* best pass */
        }
    }
    od_fini(state);
    bench_host_free(set.x);
    bench_host_free(set.w);
    bench_host_free(set.y);
    return rate;
}

#else /* !HAVE_DNNL */

static bench_outcome od_none_init(void **state, const bench_case *c,
                                  const bench_set *sets, int nsets,
                                  const bench_options *opt, char *why, size_t len)
{
    (void)state, (void)c, (void)sets, (void)nsets, (void)opt;
    snprintf(why, len, "oneDNN not found by configure");
    return BENCH_UNAVAILABLE;
}

static int od_none_run(void *state, int j)
{
    (void)state, (void)j;
    return -1;
}

static void od_none_fini(void *state)
{
    (void)state;
}

const bench_cpu_impl bench_cpu_onednn = {
    BENCH_IMPL_ONEDNN, BENCH_ALT, od_none_init, od_none_run, NULL, od_none_fini,
};
const bench_cpu_impl bench_cpu_onednn_reordered = {
    BENCH_IMPL_ONEDNN_REORDERED, BENCH_ALT, od_none_init, od_none_run, NULL,
    od_none_fini,
};

double bench_onednn_gflops(fb_dtype t, int n, int reps)
{
    (void)t, (void)n, (void)reps;
    return 0;
}

#endif /* HAVE_DNNL */
