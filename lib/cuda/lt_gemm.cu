/*
 * lt_gemm.cu -- gemm_bias_act through cuBLASLt.
 *
 * Which epilogue does what (problem.h's C is column-major):
 *   bias per row of C (a row-major call, nn.Linear's case) is cuBLASLt's
 *     own BIAS epilogue: "bias vector length must match matrix D rows";
 *   gelu_tanh is cuBLASLt's GELU (its GELU is the tanh form) for fp16 and
 *     bf16 outputs only. Its fp32 evaluation is less accurate than ours:
 *     on an H200 (GPU run 1, fp32 output) it was off by up to 3.4e-6 at
 *     x = 1.20 and 2.8e-6 at x = -1.08: about 2.8e-6 |x|, i.e. 47 x
 *     2^-24 |x|, where the contract promises 8 x 2^-24 |x| (the CPU
 *     backend's identities, which device_math.cuh evaluates). Relative
 *     to the output that is at most 1.8e-5 (at x = -1.08, gelu = -0.15),
 *     1/27 of fp16's half ulp (2^-11 = 4.9e-4) and 1/210 of bf16's
 *     (2^-8 = 3.9e-3), so a 16-bit store hides it; an fp32 store does
 *     not, so fp32 outputs take BIAS (or DEFAULT) and our activation;
 *   relu is NOT given to cuBLASLt: its RELU is max(x, 0), which turns NaN
 *     into 0, and DESIGN.md wants NaN kept (assumed from the documented
 *     formula, not measured here; our kernel is right either way);
 *   gelu_erf and silu, which no epilogue offers, and bias per column (a
 *     column-major call: cuBLASLt has no per-column bias, and swapping the
 *     operands would transpose the storage of C, not just its shape) run
 *     in our epilogue kernel right after the GEMM, on C in place.
 * That second pass rounds the pre-activation value to the storage type
 * once before the activation (fp16/bf16 only; PyTorch eager does the same).
 *
 * If cuBLASLt has no algorithm for the operands (alignment: the heuristic
 * is told every pointer's and leading dimension's true alignment, the bias
 * pointer's included, and so never returns a kernel that would fault), the
 * epilogue is first moved to our kernel, then the whole call goes to a
 * plain tiled GEMM. A call is always computed; the path says how.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "kernels.h"
#include "lt_gemm.h"
#include "result.h"

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
        plan->has_algo = 1;
        plan->algo = result.algo;
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
                       cublasLtEpilogue_t epi, const void *bias,
                       fb_math_mode math, char *why, size_t whylen,
                       fb_cuda_result *r)
{
    const cudaDataType_t type = data_type(p->dtype);
    const int64_t elem = fb_dtype_size(p->dtype);
    /* fp32 data: true fp32 unless the handle allows TF32 tensor cores. */
    const cublasComputeType_t compute =
        (p->dtype == FB_DTYPE_F32 && math == FB_MATH_ALLOW_TF32)
            ? CUBLAS_COMPUTE_32F_FAST_TF32
            : CUBLAS_COMPUTE_32F;

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
    const int uses_bias =
        epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_BIAS;
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
    LT_TRY(cublasLtMatrixLayoutInit(lc, type, p->m, p->n, p->ldc),
           "cublasLtMatrixLayoutInit(C)");

    fb_lt_plan_key key;
    memset(&key, 0, sizeof key);
    key.dtype = p->dtype;
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
    key.align_c = alignment(p->c, p->ldc, elem);
    key.align_bias = uses_bias ? alignment(bias, 0, elem) : 0;

    fb_lt_plan plan;
    fb_status st = find_plan(ctx, &key, op, la, lb, lc, &plan, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (!plan.has_algo) {
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

fb_status fb_lt_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                     fb_math_mode math, fb_cuda_result *r)
{
    const fb_epilogue *ep = &p->ep;
    if (p->m == 0 || p->n == 0) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/empty");
        return FB_STATUS_SUCCESS;
    }
    if (p->k == 0 || p->alpha == 0.0f) {
        /* Nothing to multiply: C <- act(beta C + bias), A and B unread. */
        fb_status st = fb_launch_epilogue(
            ctx->stream, p->dtype, p->c, p->ldc, p->m, p->n, p->beta,
            p->beta != 0.0f, ep->bias, ep->bias_per_row, ep->act, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT,
                          "cuda-lt/fb_epilogue(k=0 or alpha=0)");
        return st;
    }

    /* A bias that is not 16-byte aligned goes to our kernel without asking
     * cuBLASLt: its heuristic is documented to look at the bias pointer's
     * alignment, but a misaligned bias is rare enough in practice that
     * not depending on that costs nothing. */
    int bias_in_lt = ep->bias != NULL && ep->bias_per_row &&
                     alignment(ep->bias, 0, fb_dtype_size(p->dtype)) >= 16;
    /* cuBLASLt's GELU only where its error is far below the output's
     * rounding: 16-bit outputs (see the top of this file). */
    int gelu_in_lt = ep->act == FB_ACT_GELU_TANH &&
                     p->dtype != FB_DTYPE_F32 &&
                     (ep->bias == NULL || bias_in_lt);
    char why[128] = "";
    fb_status st = FB_STATUS_NOT_SUPPORTED;
    for (int attempt = 0; attempt < 2 && st == FB_STATUS_NOT_SUPPORTED;
         attempt++) {
        if (attempt == 1) {
            if (!bias_in_lt && !gelu_in_lt)
                break; /* nothing left to move out of cuBLASLt */
            /* An epilogue cuBLASLt cannot run for these operands (bias
             * alignment, say): do it in our kernel. */
            bias_in_lt = gelu_in_lt = 0;
        }
        const cublasLtEpilogue_t epi =
            gelu_in_lt ? (bias_in_lt ? CUBLASLT_EPILOGUE_GELU_BIAS
                                     : CUBLASLT_EPILOGUE_GELU)
                       : (bias_in_lt ? CUBLASLT_EPILOGUE_BIAS
                                     : CUBLASLT_EPILOGUE_DEFAULT);
        st = fb_lt_matmul(ctx, p, epi, bias_in_lt ? ep->bias : NULL, math,
                          why, sizeof why, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/%s",
                          epilogue_name(epi));
    }
    if (st == FB_STATUS_NOT_SUPPORTED) {
        st = fb_launch_simt_gemm(ctx->stream, p, r);
        if (st == FB_STATUS_SUCCESS)
            fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-lt/fb_simt_gemm (%s)",
                          why);
        return st;
    }
    if (st != FB_STATUS_SUCCESS)
        return st;

    const void *post_bias = bias_in_lt ? NULL : ep->bias;
    const fb_activation post_act = gelu_in_lt ? FB_ACT_NONE : ep->act;
    if (post_bias == NULL && post_act == FB_ACT_NONE)
        return FB_STATUS_SUCCESS;
    st = fb_launch_epilogue(ctx->stream, p->dtype, p->c, p->ldc, p->m, p->n,
                            1.0f, 1, post_bias, ep->bias_per_row, post_act, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (post_bias != NULL)
        fb_result_append(r, "+fb_bias_%s", ep->bias_per_row ? "row" : "col");
    if (post_act != FB_ACT_NONE)
        fb_result_append(r, "%s_%s", post_bias != NULL ? "" : "+fb_act",
                         act_name(post_act));
    return FB_STATUS_SUCCESS;
}
