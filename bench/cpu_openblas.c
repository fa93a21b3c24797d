/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_openblas.c -- the unfused CPU baseline: OpenBLAS GEMMs, then separate
 * elementwise passes (cpu_passes.c), the way a framework runs nn.Linear +
 * activation or a gated MLP on the CPU. Also the GEMMs alone, with no
 * epilogue: the floor the fused path is measured against.
 *
 * Per data type:
 *   f32   sgemm, then the pass in place (gemm) or G, U -> H (mlp).
 *   bf16  with cblas_sbgemm: bf16 operands, fp32 results, the pass rounds
 *         to bf16; H is stored in bf16, as PyTorch stores it.
 *   f16   (and bf16 without sbgemm) OpenBLAS has no such GEMM: the weights
 *         are converted to fp32 once, outside the timing, as a user would
 *         keep them; X is converted per call (timed), sgemm runs in fp32 and
 *         the last pass rounds to the storage type. H stays fp32.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "config.h"
#include "bench_memory.h"
#include "bench_random.h"
#include "cpu_impl.h"
#include "cpu_passes.h"

typedef enum ob_mode {
    OB_F32,      /* fp32 data, sgemm */
    OB_SBGEMM,   /* bf16 data, sbgemm */
    OB_VIA_F32   /* 16-bit data, fp32 weight copies, sgemm */
} ob_mode;

typedef struct ob_state {
    bench_case c;
    const bench_set *sets;
    int nsets;
    int gemm_only;
    ob_mode mode;
    /* scratch, shared by all sets */
    float *g32, *u32, *c32;  /* gemm: c32 m x n; mlp: g32, u32 m x h, c32 m x n */
    void *hid;               /* mlp: H, m x h, in the type the down GEMM reads */
    float *x32;              /* via fp32: X converted */
    float *b32, *bg32, *bu32, *bd32; /* biases in fp32 */
    /* via fp32: per-set fp32 copies of the weights */
    float **w32, **wg32, **wu32, **wd32;
} ob_state;

static float *alloc_f32(int64_t count)
{
    return bench_host_alloc((size_t)count * sizeof(float));
}

static void ob_fini(void *state)
{
    ob_state *s = state;
    if (s == NULL)
        return;
    bench_host_free(s->g32);
    bench_host_free(s->u32);
    bench_host_free(s->c32);
    bench_host_free(s->hid);
    bench_host_free(s->x32);
    free(s->b32);
    free(s->bg32);
    free(s->bu32);
    free(s->bd32);
    float **copies[] = {s->w32, s->wg32, s->wu32, s->wd32};
    for (int i = 0; i < 4; i++) {
        if (copies[i] == NULL)
            continue;
        for (int j = 0; j < s->nsets; j++)
            bench_host_free(copies[i][j]);
        free(copies[i]);
    }
    free(s);
}

/* fp32 copies of one weight across the sets; NULL if out of memory. */
static float **copy_weights_f32(const ob_state *s, size_t offset, int64_t count)
{
    float **v = calloc((size_t)s->nsets, sizeof *v);
    if (v == NULL)
        return NULL;
    for (int j = 0; j < s->nsets; j++) {
        const void *src = *(void *const *)((const char *)&s->sets[j] + offset);
        v[j] = alloc_f32(count);
        if (v[j] == NULL)
            return v; /* ob_fini frees the partial list; caller checks */
        bench_convert_to_f32(s->c.dtype, src, v[j], count);
    }
    return v;
}

static int copies_complete(const ob_state *s, float **v)
{
    if (v == NULL)
        return 0;
    for (int j = 0; j < s->nsets; j++)
        if (v[j] == NULL)
            return 0;
    return 1;
}

static bench_outcome ob_init_common(void **state, const bench_case *c,
                                    const bench_set *sets, int nsets,
                                    int gemm_only, char *why, size_t len)
{
    ob_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto oom;
    *state = s;
    s->c = *c;
    s->sets = sets;
    s->nsets = nsets;
    s->gemm_only = gemm_only;
    if (c->dtype == FB_DTYPE_F32)
        s->mode = OB_F32;
    else
#ifdef HAVE_CBLAS_SBGEMM
        s->mode = c->dtype == FB_DTYPE_BF16 ? OB_SBGEMM : OB_VIA_F32;
#else
        s->mode = OB_VIA_F32;
#endif
    int64_t m = c->m, k = c->k, h = c->h, n = c->n;
    if (c->routine == BENCH_GEMM) {
        if (s->mode != OB_F32 && !(s->c32 = alloc_f32(m * n)))
            goto oom;
        if (c->bias && s->mode != OB_F32 && !(s->b32 = malloc((size_t)n * 4)))
            goto oom;
    } else {
        if (!(s->g32 = alloc_f32(m * h)) || !(s->u32 = alloc_f32(m * h)))
            goto oom;
        if (s->mode != OB_F32 && !(s->c32 = alloc_f32(m * n)))
            goto oom;
        /* H: fp32 except under sbgemm, which reads bf16 */
        size_t hes = s->mode == OB_SBGEMM ? 2 : 4;
        if (!(s->hid = bench_host_alloc((size_t)(m * h) * hes)))
            goto oom;
        /* the GEMM-only floor reads H without a pass having written it */
        bench_fill_uniform(s->mode == OB_SBGEMM ? FB_DTYPE_BF16 : FB_DTYPE_F32,
                           s->hid, m * h, 0x5eed, 0.5f);
        if (c->bias && s->mode != OB_F32 &&
            (!(s->bg32 = malloc((size_t)h * 4)) || !(s->bu32 = malloc((size_t)h * 4)) ||
             !(s->bd32 = malloc((size_t)n * 4))))
            goto oom;
    }
    if (s->mode == OB_VIA_F32) {
        if (!(s->x32 = alloc_f32(m * k)))
            goto oom;
        if (c->routine == BENCH_GEMM) {
            s->w32 = copy_weights_f32(s, offsetof(bench_set, w), n * k);
            if (!copies_complete(s, s->w32))
                goto oom;
        } else {
            s->wg32 = copy_weights_f32(s, offsetof(bench_set, wg), h * k);
            s->wu32 = copy_weights_f32(s, offsetof(bench_set, wu), h * k);
            s->wd32 = copy_weights_f32(s, offsetof(bench_set, wd), n * h);
            if (!copies_complete(s, s->wg32) || !copies_complete(s, s->wu32) ||
                !copies_complete(s, s->wd32))
                goto oom;
        }
    }
    return BENCH_RAN;
oom:
    snprintf(why, len, "out of host memory for the baseline's scratch");
    return BENCH_SKIPPED;
}

static bench_outcome ob_init(void **state, const bench_case *c,
                             const bench_set *sets, int nsets,
                             const bench_options *opt, char *why, size_t len)
{
    (void)opt;
    return ob_init_common(state, c, sets, nsets, 0, why, len);
}

static bench_outcome ob_gemm_init(void **state, const bench_case *c,
                                  const bench_set *sets, int nsets,
                                  const bench_options *opt, char *why,
                                  size_t len)
{
    (void)opt;
    return ob_init_common(state, c, sets, nsets, 1, why, len);
}

/* Y (m x n) = X (m x k) W^T, W n x k: nn.Linear's layout. */
static void sgemm_xwt(int64_t m, int64_t n, int64_t k, const float *x,
                      int64_t ldx, const float *w, float *y)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0f, x, (blasint)ldx, w, (blasint)k, 0.0f, y,
                (blasint)n);
}

#ifdef HAVE_CBLAS_SBGEMM
static void sbgemm_xwt(int64_t m, int64_t n, int64_t k, const void *x,
                       const void *w, float *y)
{
    cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n,
                 (blasint)k, 1.0f, (const bfloat16 *)x, (blasint)k,
                 (const bfloat16 *)w, (blasint)k, 0.0f, y, (blasint)n);
}
#endif

static const float *bias_f32(const ob_state *s, const void *bias, float *scratch,
                             int64_t count)
{
    if (bias == NULL)
        return NULL;
    if (s->mode == OB_F32)
        return bias;
    /* The framework's bias is in the storage type: converting it is part
     * of the call (n values, next to nothing). */
    bench_convert_to_f32(s->c.dtype, bias, scratch, count);
    return scratch;
}

static int ob_run_gemm(ob_state *s, const bench_set *set)
{
    const bench_case *c = &s->c;
    int64_t m = c->m, k = c->k, n = c->n;
    switch (s->mode) {
    case OB_F32:
        sgemm_xwt(m, n, k, set->x, k, set->w, set->y);
        if (!s->gemm_only)
            bench_pass_bias_act_f32(set->y, m, n, n, set->b, c->act);
        return 0;
    case OB_SBGEMM:
#ifdef HAVE_CBLAS_SBGEMM
        sbgemm_xwt(m, n, k, set->x, set->w, s->c32);
        if (!s->gemm_only)
            bench_pass_bias_act_to16(s->c32, m, n, bias_f32(s, set->b, s->b32, n),
                                     c->act, c->dtype, set->y);
#endif
        return 0;
    case OB_VIA_F32: {
        int j = (int)(set - s->sets);
        if (!s->gemm_only)
            bench_convert_to_f32(c->dtype, set->x, s->x32, m * k);
        sgemm_xwt(m, n, k, s->x32, k, s->w32[j], s->c32);
        if (!s->gemm_only)
            bench_pass_bias_act_to16(s->c32, m, n, bias_f32(s, set->b, s->b32, n),
                                     c->act, c->dtype, set->y);
        return 0;
    }
    }
    return -1;
}

static int ob_run_mlp(ob_state *s, const bench_set *set)
{
    const bench_case *c = &s->c;
    int64_t m = c->m, k = c->k, h = c->h, n = c->n;
    switch (s->mode) {
    case OB_F32:
        sgemm_xwt(m, h, k, set->x, k, set->wg, s->g32);
        sgemm_xwt(m, h, k, set->x, k, set->wu, s->u32);
        if (!s->gemm_only)
            bench_pass_geglu(s->g32, s->u32, m, h, set->bg, set->bu, c->act,
                             FB_DTYPE_F32, s->hid);
        sgemm_xwt(m, n, h, s->hid, h, set->wd, set->y);
        if (!s->gemm_only && set->bd)
            bench_pass_bias_act_f32(set->y, m, n, n, set->bd, FB_ACT_NONE);
        return 0;
    case OB_SBGEMM:
#ifdef HAVE_CBLAS_SBGEMM
        sbgemm_xwt(m, h, k, set->x, set->wg, s->g32);
        sbgemm_xwt(m, h, k, set->x, set->wu, s->u32);
        if (!s->gemm_only)
            bench_pass_geglu(s->g32, s->u32, m, h, bias_f32(s, set->bg, s->bg32, h),
                             bias_f32(s, set->bu, s->bu32, h), c->act, c->dtype,
                             s->hid);
        sbgemm_xwt(m, n, h, s->hid, set->wd, s->c32);
        if (!s->gemm_only)
            bench_pass_bias_act_to16(s->c32, m, n, bias_f32(s, set->bd, s->bd32, n),
                                     FB_ACT_NONE, c->dtype, set->y);
#endif
        return 0;
    case OB_VIA_F32: {
        int j = (int)(set - s->sets);
        if (!s->gemm_only)
            bench_convert_to_f32(c->dtype, set->x, s->x32, m * k);
        sgemm_xwt(m, h, k, s->x32, k, s->wg32[j], s->g32);
        sgemm_xwt(m, h, k, s->x32, k, s->wu32[j], s->u32);
        if (!s->gemm_only)
            bench_pass_geglu(s->g32, s->u32, m, h, bias_f32(s, set->bg, s->bg32, h),
                             bias_f32(s, set->bu, s->bu32, h), c->act,
                             FB_DTYPE_F32, s->hid);
        sgemm_xwt(m, n, h, s->hid, h, s->wd32[j], s->c32);
        if (!s->gemm_only)
            bench_pass_bias_act_to16(s->c32, m, n, bias_f32(s, set->bd, s->bd32, n),
                                     FB_ACT_NONE, c->dtype, set->y);
        return 0;
    }
    }
    return -1;
}

static int ob_run(void *state, int j)
{
    ob_state *s = state;
    const bench_set *set = &s->sets[j];
    return s->c.routine == BENCH_GEMM ? ob_run_gemm(s, set) : ob_run_mlp(s, set);
}

static const char *ob_message(void *state)
{
    const ob_state *s = state;
    switch (s->mode) {
    case OB_F32: return "sgemm";
    case OB_SBGEMM: return "sbgemm";
    case OB_VIA_F32: return "sgemm on fp32 copies";
    }
    return "";
}

const bench_cpu_impl bench_cpu_openblas = {
    BENCH_IMPL_OPENBLAS, BENCH_BASELINE, ob_init, ob_run, ob_message, ob_fini,
};

const bench_cpu_impl bench_cpu_openblas_gemm = {
    BENCH_IMPL_OPENBLAS_GEMM, BENCH_REFERENCE, ob_gemm_init, ob_run, ob_message,
    ob_fini,
};
