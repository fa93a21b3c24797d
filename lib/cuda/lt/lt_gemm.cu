/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lt_gemm.cu -- gemm_bias_act through cuBLASLt.
 *
 * The contract (problem.h) applies bias and activation to the fp32
 * accumulator and rounds once, at the store. Each call takes the first of
 * these that meets it (problem.h's C is column-major):
 *
 * 1. cuBLASLt's epilogue does the whole epilogue, in one launch (fp32 data;
 *    for 16-bit data only the plain product, on operands aligned to 16
 *    bytes, with an algorithm that rounds to 16 bits once: see gemm_16 and
 *    rounds_once):
 *   - bias per row of C (a row-major call, nn.Linear's case) is its BIAS
 *     ("bias vector length must match matrix D rows"), for a bias on a
 *     16-byte boundary (its heuristic is documented to look at the bias
 *     pointer, but a misaligned bias is rare enough that not depending on
 *     that costs nothing);
 *   - its GELU / GELU_BIAS (the tanh form) is NOT used for gelu_tanh:
 *     on fp32 outputs it is several times less accurate than the
 *     contract's 8 x 2^-24 |x| (the CPU backend's identities, which
 *     device_math.cuh evaluates), and on fp16/bf16 outputs it evidently
 *     rounds the pre-activation to the output type before the GELU, a
 *     double rounding the contract forbids (docs/cublaslt-path.md).
 * 2. Otherwise the rest of the epilogue is our kernel's (kernels.h): relu
 *    (cuBLASLt's RELU is max(x, 0), which turns NaN into 0; docs/DESIGN.md
 *    keeps NaN), gelu_erf and silu (no epilogue offers them), bias per
 *    column (a column-major call: cuBLASLt has no per-column bias, and
 *    swapping the operands would transpose the storage of C, not just its
 *    shape), a misaligned bias, gelu_tanh on fp32 outputs:
 *   - fp32 data: the GEMM (with BIAS where it can) writes C, which is then
 *     the fp32 accumulator itself, and our kernel finishes it in place;
 *   - fp16 / bf16 data: the GEMM writes D = alpha op(A) op(B) in fp32
 *     (beta 0) to the context's accumulator buffer -- cuBLASLt takes 16-bit
 *     A and B with fp32 C and D under CUBLAS_COMPUTE_32F, the mixed row of
 *     cublasLtMatmul's type table, as PyTorch's matmul with an fp32
 *     out_dtype does -- and our kernel computes act(D + beta C + bias),
 *     reading the 16-bit C only when beta != 0, with one rounding at the
 *     store. The buffer is FB_CTX_ACCUM_BYTES at most (ctx.h): larger
 *     calls run in tiles of columns, a GEMM and an epilogue launch each.
 *     Storing a 16-bit D and re-reading it would round twice.
 * 3. If cuBLASLt has no algorithm for the operands (alignment: the
 *    heuristic is told every pointer's and leading dimension's true
 *    alignment, and so never returns a kernel that would fault), a plain
 *    tiled GEMM does the whole call, epilogue included (simt_gemm.cu).
 * A call is always computed; the path says how.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "kernels.h"
#include "lt_gemm.h"
#include "module/result.h"

static cudaDataType_t data_type(fb_dtype t)
{
    switch (t) {
    case FB_DTYPE_F16:
        return CUDA_R_16F;
    case FB_DTYPE_BF16:
        return CUDA_R_16BF;
    default:
        return CUDA_R_32F;
    }
}

/* The largest power of two (up to 256, cuBLASLt's largest requirement)
 * that divides the address and the byte stride between columns. */
static int64_t alignment(const void *p, int64_t ld, int64_t elem)
{
    uintptr_t v = (uintptr_t)p | (uintptr_t)(ld * elem) | (uintptr_t)256;
    return (int64_t)(v & (~v + 1));
}

static const char *epilogue_name(cublasLtEpilogue_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_BIAS:
        return "BIAS";
    case CUBLASLT_EPILOGUE_GELU:
        return "GELU";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
        return "GELU_BIAS";
    default:
        return "DEFAULT";
    }
}

static const char *act_name(fb_activation a)
{
    switch (a) {
    case FB_ACT_RELU:
        return "relu";
    case FB_ACT_GELU_TANH:
        return "gelu_tanh";
    case FB_ACT_GELU_ERF:
        return "gelu_erf";
    case FB_ACT_SILU:
        return "silu";
    default:
        return "none";
    }
}

#define LT_TRY(call, what)                                                    \
    do {                                                                      \
        cublasStatus_t s_ = (call);                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                      \
            return fb_result_cublas(r, s_, what);                             \
    } while (0)

/* Whether algo, computing a 16-bit D, rounds only the final result to
 * that type. cuBLASLt says how an algorithm sums in two places: the
 * split-K configuration (with more than one part, INPLACE adds the parts
 * up in D itself and OUTPUT_TYPE keeps them in D's type: every partial sum
 * is rounded to 16 bits; COMPUTE_TYPE keeps them in fp32) and the
 * numerical implementation flags (the accumulator's type). The heuristic
 * was already told to allow only NONE and COMPUTE_TYPE; this checks what
 * it returned, once per plan. An attribute cuBLASLt cannot report does not
 * refuse the algorithm: the mask stands for it. */
static int rounds_once(const cublasLtMatmulAlgo_t *algo, fb_lt_plan *plan)
{
    int32_t splitk = 1;
    uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    uint64_t impl = 0;
    size_t got = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(
            algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
            &got) != CUBLAS_STATUS_SUCCESS)
        splitk = 1;
    if (cublasLtMatmulAlgoConfigGetAttribute(
            algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
            sizeof reduction, &got) != CUBLAS_STATUS_SUCCESS)
        reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (cublasLtMatmulAlgoCapGetAttribute(
            algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &impl, sizeof impl,
            &got) != CUBLAS_STATUS_SUCCESS)
        impl = 0;
    plan->splitk = splitk;
    plan->reduction = reduction;
    plan->impl = impl;
    const int parts_ok =
        splitk <= 1 || reduction == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    const uint64_t acc =
        impl & CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK;
    const int acc_ok =
        acc == 0 || acc == CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F;
    return parts_ok && acc_ok;
}

/* The heuristic's algorithm for this key: from the cache, or asked once. */
static fb_status find_plan(fb_cuda_ctx *ctx, const fb_lt_plan_key *key,
                           cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                           cublasLtMatrixLayout_t lb,
                           cublasLtMatrixLayout_t lc, fb_lt_plan *plan,
                           fb_cuda_result *r)
{
    if (fb_lt_plan_find(&ctx->plans, key, plan))
        return FB_STATUS_SUCCESS;

    cublasLtMatmulPreferenceOpaque_t pref_mem;
    cublasLtMatmulPreference_t pref = &pref_mem;
    LT_TRY(cublasLtMatmulPreferenceInit(pref), "cublasLtMatmulPreferenceInit");
    uint64_t ws = ctx->workspace_bytes;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    const uint32_t align_a = (uint32_t)key->align_a;
    const uint32_t align_b = (uint32_t)key->align_b;
    const uint32_t align_c = (uint32_t)key->align_c;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
               sizeof align_a),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_A_BYTES)");
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
               sizeof align_b),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_B_BYTES)");
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
               sizeof align_c),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_C_BYTES)");
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
               sizeof align_c),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_D_BYTES)");
    const uint32_t reduction_mask = (uint32_t)key->reduction_mask;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(
               pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
               &reduction_mask, sizeof reduction_mask),
           "cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)");

    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int returned = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
        ctx->lt, op, la, lb, lc, lc, pref, 1, &result, &returned);
    memset(plan, 0, sizeof *plan);
    plan->key = *key;
    if (s == CUBLAS_STATUS_SUCCESS && returned > 0 &&
        result.state == CUBLAS_STATUS_SUCCESS &&
        result.workspaceSize <= ctx->workspace_bytes) {
        plan->algo = result.algo;
        if (key->dtype_out == FB_DTYPE_F32 || rounds_once(&result.algo, plan))
            plan->has_algo = 1;
        else
            plan->refused = 1;
    } else if (s != CUBLAS_STATUS_SUCCESS &&
               s != CUBLAS_STATUS_NOT_SUPPORTED &&
               s != CUBLAS_STATUS_INVALID_VALUE) {
        /* Not "no algorithm": a real failure, not cached. */
        return fb_result_cublas(r, s, "cublasLtMatmulAlgoGetHeuristic");
    }
    fb_lt_plan_store(&ctx->plans, plan);
    return FB_STATUS_SUCCESS;
}

fb_status fb_lt_matmul(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                       fb_dtype out, cublasLtEpilogue_t epi, const void *bias,
                       fb_math_mode math, char *why, size_t whylen,
                       fb_cuda_result *r)
{
    const cudaDataType_t type = data_type(p->dtype);
    const cudaDataType_t type_out = data_type(out);
    const int64_t elem = fb_dtype_size(p->dtype);
    const int64_t elem_out = fb_dtype_size(out);
    /* fp32 data: true fp32 unless the handle allows TF32 tensor cores. */
    const cublasComputeType_t compute =
        (p->dtype == FB_DTYPE_F32 && math == FB_MATH_ALLOW_TF32)
            ? CUBLAS_COMPUTE_32F_FAST_TF32
            : CUBLAS_COMPUTE_32F;
    const int uses_bias =
        epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
    if (uses_bias && out != p->dtype)
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "cuBLASLt bias of one type with a D of another");

    cublasLtMatmulDescOpaque_t op_mem;
    cublasLtMatmulDesc_t op = &op_mem;
    LT_TRY(cublasLtMatmulDescInit(op, compute, CUDA_R_32F),
           "cublasLtMatmulDescInit");
    const int32_t ta = p->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t tb = p->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epilogue = (uint32_t)epi;
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                          sizeof ta),
           "cublasLtMatmulDescSetAttribute(TRANSA)");
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                          sizeof tb),
           "cublasLtMatmulDescSetAttribute(TRANSB)");
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                          &epilogue, sizeof epilogue),
           "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    if (uses_bias)
        LT_TRY(cublasLtMatmulDescSetAttribute(
                   op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");

    /* Stack-held descriptors: no host allocation per call. */
    cublasLtMatrixLayoutOpaque_t la_mem, lb_mem, lc_mem;
    cublasLtMatrixLayout_t la = &la_mem, lb = &lb_mem, lc = &lc_mem;
    LT_TRY(cublasLtMatrixLayoutInit(la, type, p->transa ? p->k : p->m,
                                    p->transa ? p->m : p->k, p->lda),
           "cublasLtMatrixLayoutInit(A)");
    LT_TRY(cublasLtMatrixLayoutInit(lb, type, p->transb ? p->n : p->k,
                                    p->transb ? p->k : p->n, p->ldb),
           "cublasLtMatrixLayoutInit(B)");
    LT_TRY(cublasLtMatrixLayoutInit(lc, type_out, p->m, p->n, p->ldc),
           "cublasLtMatrixLayoutInit(C)");

    fb_lt_plan_key key;
    memset(&key, 0, sizeof key);
    key.dtype = p->dtype;
    key.dtype_out = out;
    key.transa = p->transa != 0;
    key.transb = p->transb != 0;
    key.epilogue = epilogue;
    key.compute = compute;
    key.m = p->m;
    key.n = p->n;
    key.k = p->k;
    key.lda = p->lda;
    key.ldb = p->ldb;
    key.ldc = p->ldc;
    key.align_a = alignment(p->a, p->lda, elem);
    key.align_b = alignment(p->b, p->ldb, elem);
    key.align_c = alignment(p->c, p->ldc, elem_out);
    key.align_bias = uses_bias ? alignment(bias, 0, elem_out) : 0;
    /* A 16-bit D: no split-K whose parts are added up in D's type. */
    key.reduction_mask =
        out == FB_DTYPE_F32
            ? CUBLASLT_REDUCTION_SCHEME_MASK
            : CUBLASLT_REDUCTION_SCHEME_NONE |
                  CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;

    fb_lt_plan plan;
    fb_status st = find_plan(ctx, &key, op, la, lb, lc, &plan, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (!plan.has_algo) {
        if (plan.refused)
            snprintf(why, whylen, "refused split-K %d, scheme %u, "
                     "accumulator 0x%llx", (int)plan.splitk,
                     (unsigned)plan.reduction,
                     (unsigned long long)(plan.impl &
                         CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK));
        else
            snprintf(why, whylen, "no cuBLASLt algorithm for alignments "
                     "%lld/%lld/%lld/%lld",
                     (long long)key.align_a, (long long)key.align_b,
                     (long long)key.align_c, (long long)key.align_bias);
        return FB_STATUS_NOT_SUPPORTED;
    }

    const float alpha = p->alpha, beta = p->beta;
    /* beta == 0: cuBLASLt does not read C (BLAS semantics), so C may hold
     * anything, NaN included. */
    cublasStatus_t s = cublasLtMatmul(
        ctx->lt, op, &alpha, p->a, la, p->b, lb, &beta, p->c, lc, p->c, lc,
        &plan.algo, ctx->workspace, ctx->workspace_bytes, ctx->stream);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) {
        /* The cached algorithm was refused after all: remember that, and
         * let the caller take another route. Nothing was launched. */
        plan.has_algo = 0;
        fb_lt_plan_store(&ctx->plans, &plan);
        snprintf(why, whylen, "cublasLtMatmul: %s", cublasLtGetStatusName(s));
        return FB_STATUS_NOT_SUPPORTED;
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        return fb_result_cublas(r, s, "cublasLtMatmul");
    return FB_STATUS_SUCCESS;
}

/* Whether cuBLASLt's BIAS epilogue can take this bias (see the top). */
static int bias_fits_lt(const fb_epilogue *ep, fb_dtype dtype)
{
    return ep->bias != NULL && ep->bias_per_row &&
           alignment(ep->bias, 0, fb_dtype_size(dtype)) >= 16;
}

/* "bias_row,silu", "relu", "none": what our kernel applies. */
static void describe(const void *bias, int bias_per_row, fb_activation act,
                     char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", bias ? (bias_per_row ? "bias_row" : "bias_col")
                                      : "",
             bias && act != FB_ACT_NONE ? "," : "",
             act != FB_ACT_NONE || !bias ? act_name(act) : "");
}

/* The whole call by the plain GEMM (cuBLASLt has no algorithm for it). */
static fb_status gemm_simt(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                           const char *why, fb_cuda_result *r)
{
    fb_status st = fb_launch_simt_gemm(ctx->stream, p, r);
    if (st == FB_STATUS_SUCCESS)
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/fb_simt_gemm (%s)", why);
    return st;
}

/* fp32 data: C is the accumulator, so the GEMM (with bias per row in its
 * epilogue where cuBLASLt takes it) writes C, and our kernel applies what
 * is left, in place. */
static fb_status gemm_f32(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                          fb_math_mode math, fb_cuda_result *r)
{
    const fb_epilogue *ep = &p->ep;
    int bias_in_lt = bias_fits_lt(ep, p->dtype);
    char why[128] = "";
    fb_status st = FB_STATUS_NOT_SUPPORTED;
    for (int attempt = 0; attempt < 2 && st == FB_STATUS_NOT_SUPPORTED;
         attempt++) {
        if (attempt == 1) {
            if (!bias_in_lt)
                break; /* nothing left to move out of cuBLASLt */
            bias_in_lt = 0;
        }
        const cublasLtEpilogue_t epi =
            bias_in_lt ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
        st = fb_lt_matmul(ctx, p, FB_DTYPE_F32, epi,
                          bias_in_lt ? ep->bias : NULL, math, why, sizeof why,
                          r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/%s",
                          epilogue_name(epi));
    }
    if (st == FB_STATUS_NOT_SUPPORTED)
        return gemm_simt(ctx, p, why, r);
    if (st != FB_STATUS_SUCCESS)
        return st;

    const void *post_bias = bias_in_lt ? NULL : ep->bias;
    if (post_bias == NULL && ep->act == FB_ACT_NONE)
        return FB_STATUS_SUCCESS;
    st = fb_launch_epilogue(ctx->stream, p->dtype, p->c, p->ldc, p->m, p->n,
                            NULL, 0, 1.0f, 1, post_bias, ep->bias_per_row,
                            ep->act, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char what[40];
    describe(post_bias, ep->bias_per_row, ep->act, what, sizeof what);
    fb_result_append(r, "+fb_epilogue(%s)", what);
    return FB_STATUS_SUCCESS;
}

/* Columns [j0, j0 + w) of p: the same call on a slice of B and C (and of
 * a per-column bias). */
static fb_gemm_problem columns(const fb_gemm_problem *p, int64_t j0,
                               int64_t w)
{
    const int64_t elem = fb_dtype_size(p->dtype);
    fb_gemm_problem t = *p;
    t.n = w;
    t.b = (const char *)p->b + (p->transb ? j0 : j0 * p->ldb) * elem;
    t.c = (char *)p->c + j0 * p->ldc * elem;
    if (p->ep.bias != NULL && !p->ep.bias_per_row)
        t.ep.bias = (const char *)p->ep.bias + j0 * elem;
    return t;
}

/* How many columns of C one fp32 accumulator tile holds: all n if they
 * fit in FB_CTX_ACCUM_BYTES, else tiles of equal width that start on
 * multiples of 128 columns (so that a tile's slice of B is as aligned as
 * B is, 256 bytes and more, and cuBLASLt picks the same kernels for it).
 * At least one column, whatever its size. */
static int64_t accum_tile_width(int64_t n, size_t col_bytes)
{
    const int64_t granule = 128;
    int64_t most = (int64_t)(FB_CTX_ACCUM_BYTES / col_bytes);
    if (most >= n)
        return n;
    if (most < 1)
        return 1;
    if (most >= granule)
        most -= most % granule;
    const int64_t tiles = (n + most - 1) / most;
    int64_t even = (n + tiles - 1) / tiles;
    if (most >= granule)
        even = (even + granule - 1) / granule * granule; /* <= most */
    return even;
}

/* fp16 / bf16 data with an epilogue cuBLASLt cannot apply within the one
 * rounding, or a plain product it cannot compute with one rounding: per
 * tile of columns, the GEMM into the fp32 accumulator, then
 * C <- act(acc + beta C + bias) by our kernel. note, if not NULL or empty,
 * says in the path why a plain product came here. */
static fb_status gemm_via_accum(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                                fb_math_mode math, const char *note,
                                fb_cuda_result *r)
{
    /* Columns of the accumulator on 32-byte boundaries, for the
     * epilogue's vector loads (8 floats beside 8 16-bit elements). */
    const int64_t ldacc = (p->m + 7) / 8 * 8;
    if ((uint64_t)ldacc > SIZE_MAX / sizeof(float))
        return fb_result_fail(r, FB_STATUS_ALLOC_FAILED,
                              "accumulator column of %lld rows does not fit "
                              "in the address space", (long long)p->m);
    const size_t col_bytes = (size_t)ldacc * sizeof(float);
    const int64_t width = accum_tile_width(p->n, col_bytes);
    fb_status st = fb_ctx_reserve_capped(ctx, &ctx->accum,
                                         col_bytes * (size_t)width,
                                         FB_CTX_ACCUM_BYTES, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    float *acc = (float *)ctx->accum.ptr;

    char why[128] = "";
    int64_t tiles = 0, simt_tiles = 0;
    for (int64_t j0 = 0; j0 < p->n; j0 += width, tiles++) {
        const int64_t w = p->n - j0 < width ? p->n - j0 : width;
        const fb_gemm_problem t = columns(p, j0, w);
        fb_gemm_problem g = t;
        g.c = acc;
        g.ldc = ldacc;
        g.beta = 0.0f;
        g.ep.bias = NULL;
        g.ep.act = FB_ACT_NONE;
        st = fb_lt_matmul(ctx, &g, FB_DTYPE_F32, CUBLASLT_EPILOGUE_DEFAULT,
                          NULL, math, why, sizeof why, r);
        if (st == FB_STATUS_NOT_SUPPORTED) {
            /* No algorithm for this slice: all of it, epilogue included,
             * by the plain GEMM. */
            st = fb_launch_simt_gemm(ctx->stream, &t, r);
            if (st != FB_STATUS_SUCCESS)
                return st;
            simt_tiles++;
            continue;
        }
        if (st != FB_STATUS_SUCCESS)
            return st;
        st = fb_launch_epilogue(ctx->stream, p->dtype, t.c, t.ldc, t.m, w, acc,
                                ldacc, t.beta, t.beta != 0.0f, t.ep.bias,
                                t.ep.bias_per_row, t.ep.act, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
    }

    if (simt_tiles == tiles) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/fb_simt_gemm (%s)", why);
        return FB_STATUS_SUCCESS;
    }
    char what[40];
    describe(p->ep.bias, p->ep.bias_per_row, p->ep.act, what, sizeof what);
    fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/DEFAULT>f32+fb_epilogue(%s)",
                  what);
    if (note != NULL && note[0] != '\0')
        fb_result_append(r, " (%s)", note);
    if (tiles > 1)
        fb_result_append(r, " in %lld tiles", (long long)tiles);
    if (simt_tiles > 0)
        fb_result_append(r, ", %lld by fb_simt_gemm (%s)",
                         (long long)simt_tiles, why);
    return FB_STATUS_SUCCESS;
}

/* fp16 / bf16 data: cuBLASLt alone for the plain product, else through
 * the fp32 accumulator and our epilogue kernel. */
static fb_status gemm_16(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                         fb_math_mode math, fb_cuda_result *r)
{
    const fb_epilogue *ep = &p->ep;
    /* A bias goes through the accumulator too: cuBLASLt's BIAS epilogue on
     * a 16-bit D evidently rounds alpha A B (+ beta C) to the output type
     * before adding the bias, and the same holds for beta C
     * (docs/cublaslt-path.md). Only the plain product (no bias, no
     * activation, beta 0) is cuBLASLt's alone. */
    if (ep->bias != NULL || ep->act != FB_ACT_NONE || p->beta != 0.0f)
        return gemm_via_accum(ctx, p, math, NULL, r);

    /* The plain product, D 16-bit. cuBLASLt documents how an algorithm
     * sums only through its split-K reduction scheme and its accumulator
     * type, which fb_lt_matmul constrains and checks. What its kernels for
     * operands aligned below 16 bytes do inside, it does not say, and bf16
     * products were found rounded more than once only with such operands
     * (an odd lda or ldc): those take the accumulator, whose D is fp32, so
     * nothing reaches 16 bits before our epilogue's one rounding. */
    const int64_t elem = fb_dtype_size(p->dtype);
    if (alignment(p->a, p->lda, elem) < 16 ||
        alignment(p->b, p->ldb, elem) < 16 ||
        alignment(p->c, p->ldc, elem) < 16)
        return gemm_via_accum(ctx, p, math, "16-bit D, alignment < 16", r);

    char why[128] = "";
    fb_status st = fb_lt_matmul(ctx, p, p->dtype, CUBLASLT_EPILOGUE_DEFAULT,
                                NULL, math, why, sizeof why, r);
    if (st == FB_STATUS_SUCCESS)
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/DEFAULT");
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    /* No algorithm that rounds once for these operands: the fp32
     * accumulator is ours, aligned, and needs no cuBLASLt epilogue. */
    return gemm_via_accum(ctx, p, math, why, r);
}

fb_status fb_lt_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                     fb_math_mode math, fb_cuda_result *r)
{
    const fb_epilogue *ep = &p->ep;
    if (p->m == 0 || p->n == 0) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/empty");
        return FB_STATUS_SUCCESS;
    }
    if (!p->multiply) {
        /* Nothing to multiply: C <- act(beta C + bias), A and B unread,
         * C's own (exact) values rounded once. */
        fb_status st = fb_launch_epilogue(
            ctx->stream, p->dtype, p->c, p->ldc, p->m, p->n, NULL, 0, p->beta,
            p->beta != 0.0f, ep->bias, ep->bias_per_row, ep->act, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT,
                          "cuda-lt/fb_epilogue(k=0 or alpha=0)");
        return st;
    }
    return p->dtype == FB_DTYPE_F32 ? gemm_f32(ctx, p, math, r)
                                    : gemm_16(ctx, p, math, r);
}
