/*
 * lt_mlp.cu -- the gated MLP through cuBLASLt.
 *
 * Row-major X (m x k) is column-major X^T (k x m) in the same memory, and
 * nn.Linear's W (out x in, row-major) is column-major W^T, so each
 * projection  Z = X W^T + b  is the column-major GEMM
 *     Z^T (out x m) = op(W^T)^T X^T + b,  transa = T,
 * whose bias is per row of Z^T: cuBLASLt's BIAS epilogue exactly.
 *
 * Launches, when cuBLASLt takes every operand:
 *   1. gate GEMM, bias (and gelu_tanh, cuBLASLt's GELU, for 16-bit data)
 *      in its epilogue;
 *   2. up GEMM, bias in its epilogue;
 *   3. H = act_g(G) .* U (act_g here unless step 1 applied it), written
 *      over G in the input dtype, as PyTorch stores it;
 *   4. down GEMM, bias in its epilogue, straight into Y.
 * When Wu directly follows Wg in memory (or Wg follows Wu) -- one fused
 * gate_up weight, as many checkpoints store it -- steps 1 and 2 are one
 * GEMM of twice the height (biases too if they are adjacent), which reads
 * X once and saves a launch; the gate activation then moves to step 3.
 *
 * G and U live in the context's scratch, which grows to the largest call
 * seen and is then reused: no allocation per call once warm.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "kernels.h"
#include "lt_gemm.h"
#include "lt_mlp.h"
#include "result.h"

/* The part of a stage's path after "cuda-lt/", up to the first blank. */
static void stage_name(const fb_cuda_result *r, char *out, size_t len)
{
    const char *s = r->path;
    if (strncmp(s, "cuda-lt/", 8) == 0)
        s += 8;
    size_t n = strcspn(s, " ");
    if (n >= len)
        n = len - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* One projection: Z^T (out x m, ldz) = W X^T + b, act applied to it. */
static fb_status project(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                         const void *w, int64_t out_rows, int64_t in,
                         const void *x, int64_t ldx, const void *bias,
                         fb_activation act, void *z, int64_t ldz,
                         fb_math_mode math, char *name, size_t namelen,
                         fb_cuda_result *r)
{
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = p->dtype;
    g.transa = 1;
    g.transb = 0;
    g.m = out_rows;
    g.n = p->m;
    g.k = in;
    g.alpha = 1.0f;
    g.beta = 0.0f;
    g.a = w;
    g.lda = in;
    g.b = x;
    g.ldb = ldx;
    g.c = z;
    g.ldc = ldz;
    g.ep.bias = bias;
    g.ep.act = act;
    g.ep.bias_per_row = 1;
    fb_status st = fb_lt_gemm(ctx, &g, math, r);
    if (st == FB_STATUS_SUCCESS)
        stage_name(r, name, namelen);
    return st;
}

fb_status fb_lt_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                    fb_math_mode math, fb_cuda_result *r)
{
    const int64_t elem = fb_dtype_size(p->dtype);
    const int64_t m = p->m, k = p->k, h = p->h, n = p->n;
    if (m == 0 || n == 0) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/mlp(empty)");
        return FB_STATUS_SUCCESS;
    }
    if (h == 0) {
        /* H has no columns: Y = bd in every row (or zeros). */
        fb_status st = fb_launch_epilogue(ctx->stream, p->dtype, p->y, p->ldy,
                                          n, m, 0.0f, 0, p->bd, 1,
                                          FB_ACT_NONE, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/mlp(h=0)");
        return st;
    }

    /* One gate_up weight in memory, in either order? */
    const char *wg = (const char *)p->wg, *wu = (const char *)p->wu;
    const char *bg = (const char *)p->bg, *bu = (const char *)p->bu;
    const int64_t wbytes = h * k * elem, bbytes = h * elem;
    const int no_bias = bg == NULL && bu == NULL;
    const int gate_first =
        k > 0 && wu == wg + wbytes && (no_bias || (bg && bu == bg + bbytes));
    const int up_first = !gate_first && k > 0 && wg == wu + wbytes &&
                         (no_bias || (bu && bg == bu + bbytes));
    const int merged = gate_first || up_first;

    /* Columns of the intermediates start on 16-byte boundaries, so that
     * cuBLASLt and the gated product get their aligned kernels. */
    const int64_t vec = 16 / elem;
    const int64_t rows = merged ? 2 * h : h;
    const int64_t ld = (rows + vec - 1) / vec * vec;
    if ((uint64_t)ld > SIZE_MAX / 2 / (uint64_t)elem / (uint64_t)m)
        return fb_result_fail(r, FB_STATUS_ALLOC_FAILED,
                              "mlp: intermediates of %lld x %lld do not fit "
                              "in the address space",
                              (long long)m, (long long)rows);
    const size_t part = fb_round_up((size_t)(ld * m * elem), 256);
    fb_status st =
        fb_ctx_reserve(ctx, &ctx->scratch, merged ? part : 2 * part, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char *scratch = (char *)ctx->scratch.ptr;

    char gate_name[40] = "", up_name[40] = "", down_name[40] = "";
    const void *g, *u;
    fb_activation product_act = p->gate_act;
    if (merged) {
        const void *w_first = gate_first ? p->wg : p->wu;
        const void *b_first = no_bias ? NULL : (gate_first ? p->bg : p->bu);
        st = project(ctx, p, w_first, 2 * h, k, p->x, p->ldx, b_first,
                     FB_ACT_NONE, scratch, ld, math, gate_name,
                     sizeof gate_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        g = scratch + (gate_first ? 0 : bbytes);
        u = scratch + (gate_first ? bbytes : 0);
    } else {
        /* gelu_tanh is cuBLASLt's GELU: apply it in the gate's epilogue,
         * for 16-bit data only (lt_gemm.cu says why); fp32 leaves it to
         * the gated product, which saves the second pass lt_gemm would
         * make for it. */
        const fb_activation gate_act =
            (p->gate_act == FB_ACT_GELU_TANH && p->dtype != FB_DTYPE_F32)
                ? FB_ACT_GELU_TANH
                : FB_ACT_NONE;
        if (gate_act != FB_ACT_NONE)
            product_act = FB_ACT_NONE;
        st = project(ctx, p, p->wg, h, k, p->x, p->ldx, p->bg, gate_act,
                     scratch, ld, math, gate_name, sizeof gate_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        st = project(ctx, p, p->wu, h, k, p->x, p->ldx, p->bu, FB_ACT_NONE,
                     scratch + part, ld, math, up_name, sizeof up_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        g = scratch;
        u = scratch + part;
    }

    /* H over G, in the input dtype. */
    void *hbuf = (void *)g;
    st = fb_launch_gated_product(ctx->stream, p->dtype, product_act, g, ld, u,
                                 ld, hbuf, ld, h, m, r);
    if (st != FB_STATUS_SUCCESS)
        return st;

    /* Y^T (n x m, ldy) = Wd H^T + bd. */
    st = project(ctx, p, p->wd, n, h, hbuf, ld, p->bd, FB_ACT_NONE, p->y,
                 p->ldy, math, down_name, sizeof down_name, r);
    if (st != FB_STATUS_SUCCESS)
        return st;

    if (merged)
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-lt/mlp(gate+up=%s,fb_gated_%s,down=%s)", gate_name,
                      p->gate_act == FB_ACT_NONE ? "none" : "act", down_name);
    else
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-lt/mlp(gate=%s,up=%s,fb_gated,down=%s)", gate_name,
                      up_name, down_name);
    return FB_STATUS_SUCCESS;
}
