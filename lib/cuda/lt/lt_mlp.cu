/* SPDX-License-Identifier: BSD-3-Clause */
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
 *   1. gate GEMM, bias in its epilogue;
 *   2. up GEMM, bias in its epilogue;
 *   3. H = act_g(G + bg) .* (U + bu), written over G in the input dtype, as
 *      PyTorch stores it; act_g always here (our activation, the one every
 *      path shares: cuBLASLt's GELU differs in its last bits and at the
 *      infinities, and this launch runs anyway), the biases unless step 1
 *      or 2 applied them (a bias not on a 16-byte boundary);
 *   4. down GEMM, bias in its epilogue, straight into Y, through
 *      fb_lt_gemm and so with bd applied before the one rounding of Y (via
 *      the fp32 accumulator where cuBLASLt cannot take bd).
 * G and U are stored in the input type before the activation and the
 * product, which docs/DESIGN.md allows for intermediates; Y is not
 * double-rounded. When Wu directly follows Wg in memory (or Wg follows Wu)
 * -- one fused gate_up weight, as many checkpoints store it -- steps 1 and
 * 2 are one GEMM of twice the height, which reads X once and saves a
 * launch (the biases go in its epilogue if they are adjacent in the same
 * order, else to step 3; the gate activation to step 3).
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
#include "module/result.h"

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

/* What a gate or up projection left for the gated product. */
typedef struct projected {
    int bias_done; /* the bias was added in cuBLASLt's epilogue */
} projected;

/* A gate or up projection into the scratch, in the input type:
 * Z^T (rows x m, ldz) = W X^T, with bias in
 * cuBLASLt's epilogue where it takes them; what it does not take, *done
 * says, and the gated product applies. Never uses the fp32 accumulator:
 * these intermediates may be rounded to the input type. */
static fb_status project_intermediate(fb_cuda_ctx *ctx,
                                      const fb_mlp_problem *p, const void *w,
                                      int64_t rows, const void *bias,
                                      void *z, int64_t ldz,
                                      fb_math_mode math, projected *done,
                                      char *name, size_t namelen,
                                      fb_cuda_result *r)
{
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = p->dtype;
    g.transa = 1;
    g.transb = 0;
    g.m = rows;
    g.n = p->m;
    g.k = p->k;
    g.alpha = 1.0f;
    g.beta = 0.0f;
    g.a = w;
    g.lda = p->k;
    g.b = p->x;
    g.ldb = p->ldx;
    g.c = z;
    g.ldc = ldz;
    g.ep.act = FB_ACT_NONE;
    g.ep.bias_per_row = 1;
    fb_gemm_decide(&g);

    /* cuBLASLt's bias needs 16-byte alignment (lt_gemm.cu). */
    int bias_in = bias != NULL && (uintptr_t)bias % 16 == 0;
    char why[128] = "";
    fb_status st = FB_STATUS_NOT_SUPPORTED;
    for (int attempt = 0; attempt < 2 && st == FB_STATUS_NOT_SUPPORTED;
         attempt++) {
        if (attempt == 1) {
            if (!bias_in)
                break;
            bias_in = 0; /* the bias to the gated product */
        }
        const cublasLtEpilogue_t epi =
            bias_in ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
        st = fb_lt_matmul(ctx, &g, p->dtype, epi, bias_in ? bias : NULL, math,
                          why, sizeof why, r);
        if (st == FB_STATUS_SUCCESS)
            snprintf(name, namelen, "%s",
                     epi == CUBLASLT_EPILOGUE_BIAS ? "BIAS" : "DEFAULT");
    }
    if (st == FB_STATUS_NOT_SUPPORTED) {
        /* No algorithm at all: the plain GEMM, without the epilogue. */
        bias_in = 0;
        st = fb_launch_simt_gemm(ctx->stream, &g, r);
        if (st == FB_STATUS_SUCCESS)
            snprintf(name, namelen, "fb_simt_gemm");
    }
    done->bias_done = bias_in;
    return st;
}

fb_status fb_lt_mlp_hidden(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                           fb_math_mode math, fb_lt_hidden *out,
                           fb_cuda_result *r)
{
    const int64_t elem = fb_dtype_size(p->dtype);
    const int64_t m = p->m, k = p->k, h = p->h;

    /* One gate_up weight in memory, in either order? */
    const char *wg = (const char *)p->wg, *wu = (const char *)p->wu;
    const char *bg = (const char *)p->bg, *bu = (const char *)p->bu;
    const int64_t wbytes = h * k * elem, bbytes = h * elem;
    const int gate_first = k > 0 && wu == wg + wbytes;
    const int up_first = !gate_first && k > 0 && wg == wu + wbytes;
    const int merged = gate_first || up_first;
    /* The merged GEMM can add the biases only if they are one vector in
     * the same order as the weights. */
    const char *merged_bias =
        gate_first && bg != NULL && bu == bg + bbytes ? bg
        : up_first && bu != NULL && bg == bu + bbytes ? bu
                                                      : NULL;

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

    char *gate_name = out->gate_name, *up_name = out->up_name;
    gate_name[0] = up_name[0] = '\0';
    const void *g, *u;
    const void *product_bg = p->bg, *product_bu = p->bu;
    const fb_activation product_act = p->gate_act;
    if (merged) {
        projected done;
        st = project_intermediate(ctx, p, gate_first ? p->wg : p->wu, 2 * h,
                                  merged_bias, scratch, ld, math, &done,
                                  gate_name, sizeof out->gate_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        if (done.bias_done)
            product_bg = product_bu = NULL;
        g = scratch + (gate_first ? 0 : bbytes);
        u = scratch + (gate_first ? bbytes : 0);
    } else {
        projected gate, up;
        st = project_intermediate(ctx, p, p->wg, h, p->bg, scratch, ld, math,
                                  &gate, gate_name, sizeof out->gate_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        st = project_intermediate(ctx, p, p->wu, h, p->bu, scratch + part,
                                  ld, math, &up, up_name,
                                  sizeof out->up_name, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
        if (gate.bias_done)
            product_bg = NULL;
        if (up.bias_done)
            product_bu = NULL;
        g = scratch;
        u = scratch + part;
    }

    /* H over G, in the input dtype. */
    void *hbuf = (void *)g;
    st = fb_launch_gated_product(ctx->stream, p->dtype, product_act, g, ld,
                                 product_bg, u, ld, product_bu, hbuf, ld, h,
                                 m, r);
    if (st != FB_STATUS_SUCCESS)
        return st;

    out->h = hbuf;
    out->ldh = ld;
    out->merged = merged;
    out->act = product_act;
    out->biased = product_bg != NULL || product_bu != NULL;
    return FB_STATUS_SUCCESS;
}

fb_status fb_lt_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                    fb_math_mode math, fb_cuda_result *r)
{
    const int64_t m = p->m, h = p->h, n = p->n;
    if (m == 0 || n == 0) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/mlp(empty)");
        return FB_STATUS_SUCCESS;
    }
    if (h == 0) {
        /* H has no columns: Y = bd in every row (or zeros). */
        fb_status st = fb_launch_epilogue(ctx->stream, p->dtype, p->y, p->ldy,
                                          n, m, NULL, 0, 0.0f, 0, p->bd, 1,
                                          FB_ACT_NONE, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/mlp(h=0)");
        return st;
    }

    fb_lt_hidden hid;
    fb_status st = fb_lt_mlp_hidden(ctx, p, math, &hid, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char down_name[48] = "";

    /* Y^T (n x m, ldy) = Wd H^T + bd: the whole gemm contract. */
    fb_gemm_problem d;
    memset(&d, 0, sizeof d);
    d.dtype = p->dtype;
    d.transa = 1;
    d.transb = 0;
    d.m = n;
    d.n = m;
    d.k = h;
    d.alpha = 1.0f;
    d.beta = 0.0f;
    d.a = p->wd;
    d.lda = h;
    d.b = hid.h;
    d.ldb = hid.ldh;
    d.c = p->y;
    d.ldc = p->ldy;
    d.ep.bias = p->bd;
    d.ep.act = FB_ACT_NONE;
    d.ep.bias_per_row = 1;
    fb_gemm_decide(&d);
    st = fb_lt_gemm(ctx, &d, math, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    stage_name(r, down_name, sizeof down_name);

    const int biased = hid.biased;
    if (hid.merged)
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-lt/mlp(gate+up=%s,fb_gated_%s%s,down=%s)",
                      hid.gate_name,
                      hid.act == FB_ACT_NONE ? "none" : "act",
                      biased ? "+bias" : "", down_name);
    else
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-lt/mlp(gate=%s,up=%s,fb_gated%s,down=%s)",
                      hid.gate_name, hid.up_name, biased ? "+bias" : "",
                      down_name);
    return FB_STATUS_SUCCESS;
}
