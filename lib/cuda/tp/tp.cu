/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp.cu -- the tensor-parallel gated MLP and row-parallel gemm over the
 * caller's NCCL communicator (tp_problem.h says the layout).
 *
 * Each call, on the handle's stream, with no host synchronisation:
 *   1. this rank's fp32 partial of the output, without bias: for the MLP,
 *      cuda-lt's gate/up GEMMs and gated product (fb_lt_mlp_hidden), then
 *      the down GEMM with an fp32 D (cuBLASLt's mixed-type row: 16-bit A
 *      and B, fp32 D under CUBLAS_COMPUTE_32F); for the gemm, the product
 *      alone into fp32;
 *   2. ncclAllReduce(sum) of the fp32 partials, in place, in the
 *      context's tp_partial buffer;
 *   3. our epilogue kernel (kernels.h): bias (and for the gemm beta C and
 *      the activation) added to the sum, rounded once to the output type.
 * At m >= FB_TP_CHUNK_MIN_ROWS the MLP cuts its rows into chunks (below):
 * chunk c's local MLP runs on the handle's stream, then its rows of the
 * partial (contiguous: the partial is Y^T, column-major) are all-reduced
 * on the context's communication stream while chunk c+1 computes; the
 * handle's stream joins the communication stream before the epilogue. The
 * chunks depend on m alone, which every rank agreed on, so every rank
 * issues the same NCCL calls in the same order.
 *
 * Where the chunked call's output is 16-bit with contiguous rows and
 * every chunk's rows split evenly over the ranks (rsag_form), a chunk's
 * all-reduce is replaced, on the communication stream, by a
 * reduce-scatter of its fp32 rows (rank r sums the r-th of nranks equal
 * slices), the epilogue over those summed rows straight into Y, and an
 * all-gather of the rounded 16-bit rows: 6 bytes an element on the link
 * against the all-reduce's 8 (each times (P-1)/P), and no epilogue over
 * the whole of Y at the end.
 *
 * Every rank reduces the same fp32 values in the same NCCL order and runs
 * the same epilogue on them (or, reduce-scattered, one rank rounds each
 * element and the others receive its bits), so every rank gets the same
 * bits. The partial is never rounded to 16 bits before the sum, so the
 * contract's one rounding holds for the whole layer (H is stored in the
 * input type, as cuda-lt's single-GPU MLP and PyTorch store it).
 *
 * NCCL is reached only through the fb_nccl_api table the library filled
 * (nccl_api.h): the module neither links nor loads NCCL.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "lt/kernels.h"
#include "lt/lt_gemm.h"
#include "lt/lt_mlp.h"
#include "fused/fused.h"
#include "module/ctx.h"
#include "module/result.h"
#include "tp.h"
#include "tp_trace.h"

/* How long tp_agree waits for the other ranks before it gives up with
 * EXECUTION_FAILED instead of blocking forever (a rank that never joins). */
#define FB_TP_AGREE_TIMEOUT_S 120

/* The MLP's chunking. Below FB_TP_CHUNK_MIN_ROWS the all-reduce is short
 * (a few tens of microseconds, mostly NCCL's latency), so splitting it
 * would add more latency per extra NCCL call and per smaller GEMM than it
 * hides; decode keeps one local MLP and one all-reduce. From there on the
 * rows are cut into FB_TP_CHUNKS chunks of a multiple of
 * FB_TP_CHUNK_ALIGN rows (the last one takes the rest): 64 keeps every
 * chunk's X and partial on the same alignment as the whole call's and the
 * chunk's GEMMs on whole tiles of cuBLASLt's usual 64/128-row tiles, and
 * at the threshold a chunk still has 128 rows. Only the last chunk's
 * all-reduce is not under compute. */
#define FB_TP_CHUNK_MIN_ROWS 512
#define FB_TP_CHUNKS 4
#define FB_TP_CHUNK_ALIGN 64

/* A chunk's hidden layer runs on the GEMM engine from this many rows (a
 * 4096-row call's chunks): with k = 8192 and 14336 hidden rows a rank it
 * measured ahead of cuda-lt's GEMM and separate gated-product pass
 * (docs/tensor-parallel.md). */
#ifndef FB_TP_ENGINE_MIN_ROWS
#define FB_TP_ENGINE_MIN_ROWS 1024
#endif

/* SMs the engine leaves to NCCL (and, in the reduce-scatter form, the
 * chunk's epilogue) while a chunk's communication overlaps the next
 * chunk: the engine's CTAs stay on their SMs until its last tile, so
 * without these the communication would only progress between launches. */
#ifndef FB_TP_NCCL_SMS
#define FB_TP_NCCL_SMS 16
#endif

/* Rows per chunk for an m-row call (m itself: not chunked). */
static int64_t chunk_rows(int64_t m)
{
    if (m < FB_TP_CHUNK_MIN_ROWS)
        return m;
    const int64_t rows = (m + FB_TP_CHUNKS - 1) / FB_TP_CHUNKS;
    return (rows + FB_TP_CHUNK_ALIGN - 1) / FB_TP_CHUNK_ALIGN *
           FB_TP_CHUNK_ALIGN;
}

/* This thread's trace (tp_trace.h): NULL but in a benchmark. */
static thread_local fb_tp_trace *tp_trace;

extern "C" __attribute__((visibility("default"))) void
fb_cuda_tp_trace_v1(fb_tp_trace *trace)
{
    tp_trace = trace;
}

/* Record one of the trace's events, if there is a trace. */
static fb_status trace_mark(void *const *events, int chunk,
                            cudaStream_t stream, fb_cuda_result *r)
{
    if (tp_trace == NULL || chunk >= FB_TP_TRACE_MAX_CHUNKS ||
        events[chunk] == NULL)
        return FB_STATUS_SUCCESS;
    cudaError_t e = cudaEventRecord((cudaEvent_t)events[chunk], stream);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "cudaEventRecord(trace)");
    return FB_STATUS_SUCCESS;
}

static fb_status nccl_fail(fb_cuda_result *r, const fb_tp_comm *c,
                           fb_nccl_result e, const char *what)
{
    return fb_result_fail(r, FB_STATUS_EXECUTION_FAILED, "%s: NCCL error %d "
                          "(%s)", what, e, c->nccl->error_string
                                               ? c->nccl->error_string(e)
                                               : "?");
}

/* The partial buffer: at least elems floats. */
static fb_status reserve_partial(fb_cuda_ctx *ctx, size_t elems, float **out,
                                 fb_cuda_result *r)
{
    if (elems > SIZE_MAX / sizeof(float))
        return fb_result_fail(r, FB_STATUS_ALLOC_FAILED, "tensor-parallel "
                              "partial of %zu floats does not fit", elems);
    fb_status st = fb_ctx_reserve(ctx, &ctx->tp_partial,
                                  elems * sizeof(float), r);
    if (st == FB_STATUS_SUCCESS)
        *out = (float *)ctx->tp_partial.ptr;
    return st;
}

/* D (p->m x p->n, fp32, ldd) <- alpha op(A) op(B): cuBLASLt with an fp32
 * D; fp32 data without an algorithm for its alignment takes the plain
 * tiled kernel (its C is then fp32 too); 16-bit data without one is not
 * supported (nothing launched). */
static fb_status product_f32(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                             float *d, int64_t ldd, fb_math_mode math,
                             char *name, size_t namelen, fb_cuda_result *r)
{
    fb_gemm_problem g = *p;
    g.c = d;
    g.ldc = ldd;
    g.beta = 0.0f;
    g.ep.bias = NULL;
    g.ep.act = FB_ACT_NONE;
    if (g.k == 0 || g.alpha == 0.0f) {
        /* A and B are not referenced: the partial is zero. */
        cudaError_t e = cudaMemsetAsync(
            d, 0, (size_t)ldd * (size_t)g.n * sizeof(float), ctx->stream);
        if (e != cudaSuccess)
            return fb_result_cuda(r, e, "cudaMemsetAsync(partial)");
        snprintf(name, namelen, "zero");
        return FB_STATUS_SUCCESS;
    }
    char why[128] = "";
    fb_status st = fb_lt_matmul(ctx, &g, FB_DTYPE_F32,
                                CUBLASLT_EPILOGUE_DEFAULT, NULL, math, why,
                                sizeof why, r);
    if (st == FB_STATUS_SUCCESS) {
        snprintf(name, namelen, "DEFAULT>f32");
        return st;
    }
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    if (g.dtype == FB_DTYPE_F32) {
        st = fb_launch_simt_gemm(ctx->stream, &g, r);
        if (st == FB_STATUS_SUCCESS)
            snprintf(name, namelen, "fb_simt_gemm");
        return st;
    }
    return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                          "tensor-parallel partial product with an fp32 "
                          "result: %s", why);
}

/* Sum the partials across the ranks, in place, on stream. */
static fb_status all_reduce(cudaStream_t stream, const fb_tp_comm *c,
                            float *d, size_t elems, fb_cuda_result *r)
{
    fb_nccl_result e = c->nccl->all_reduce(d, d, elems, FB_NCCL_FLOAT32,
                                           FB_NCCL_SUM, c->comm,
                                           (void *)stream);
    if (e != FB_NCCL_SUCCESS && e != FB_NCCL_IN_PROGRESS)
        return nccl_fail(r, c, e, "ncclAllReduce");
    return FB_STATUS_SUCCESS;
}

/* Whether the chunked MLP takes the reduce-scatter form (top): several
 * chunks and ranks, 16-bit output whose rows are contiguous (ldy == n, so
 * a chunk's rows of Y are one span to all-gather in place), and every
 * chunk's rows a multiple of nranks. The same on every rank: m (so step,
 * chunks and the last chunk's rows), n and dtype are in the shape the
 * ranks agreed on, nranks is the communicator's, and whether ldy == n is
 * in the agreed shape too (tensor_parallel.c), though ldy itself may
 * differ from rank to rank. */
static int rsag_form(const fb_tp_comm *c, const fb_mlp_problem *p,
                     int64_t step, int chunks)
{
    if (chunks < 2 || c->nranks < 2 || p->ldy != p->n ||
        (p->dtype != FB_DTYPE_F16 && p->dtype != FB_DTYPE_BF16))
        return 0;
    const int64_t last = p->m - (int64_t)(chunks - 1) * step;
    return step % c->nranks == 0 && last % c->nranks == 0;
}

/* Rows [r0, r0 + rows) of the MLP's output from their fp32 partial d (in
 * the partial buffer, ldp apart), on stream, in the reduce-scatter form:
 * this rank's rows / nranks rows summed over the ranks, in place; bd
 * added and rounded into Y; then Y's rows of the chunk gathered from
 * every rank, in place. */
static fb_status rsag_chunk(cudaStream_t stream, const fb_tp_comm *c,
                            const fb_mlp_problem *p, float *d, int64_t ldp,
                            int64_t r0, int64_t rows, fb_cuda_result *r)
{
    const int64_t q = rows / c->nranks;
    const int64_t mine = r0 + (int64_t)c->rank * q; /* this rank's first */
    float *sum = d + (size_t)c->rank * (size_t)q * (size_t)ldp;
    fb_nccl_result e = c->nccl->reduce_scatter(
        d, sum, (size_t)q * (size_t)ldp, FB_NCCL_FLOAT32, FB_NCCL_SUM,
        c->comm, (void *)stream);
    if (e != FB_NCCL_SUCCESS && e != FB_NCCL_IN_PROGRESS)
        return nccl_fail(r, c, e, "ncclReduceScatter");
    const size_t es = (size_t)fb_dtype_size(p->dtype);
    char *y = (char *)p->y;
    char *ymine = y + (size_t)mine * (size_t)p->n * es;
    fb_status st = fb_launch_epilogue(stream, p->dtype, ymine, p->ldy, p->n,
                                      q, sum, ldp, 0.0f, 0, p->bd, 1,
                                      FB_ACT_NONE, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    /* The gather moves bits and never adds: before ncclBfloat16 (NCCL
     * 2.10) bf16 travels as fp16, of the same width. */
    const int type = p->dtype == FB_DTYPE_F16 || c->nccl->version < 21000
                         ? FB_NCCL_FLOAT16
                         : FB_NCCL_BFLOAT16;
    e = c->nccl->all_gather(ymine, y + (size_t)r0 * (size_t)p->n * es,
                            (size_t)q * (size_t)p->n, type, c->comm,
                            (void *)stream);
    if (e != FB_NCCL_SUCCESS && e != FB_NCCL_IN_PROGRESS)
        return nccl_fail(r, c, e, "ncclAllGather");
    return FB_STATUS_SUCCESS;
}

fb_status fb_tp_agree(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                      const int64_t *mine, int64_t *all, int len,
                      fb_cuda_result *r)
{
    fb_result_clear(r);
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    const size_t n = (size_t)len, ranks = (size_t)c->nranks;
    float *buf = NULL;
    /* int64 words, in the float buffer's bytes */
    fb_status st = reserve_partial(ctx, 2 * n * (ranks + 1), &buf, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    int64_t *dmine = (int64_t *)buf, *dall = dmine + n;
    cudaError_t e = cudaMemcpyAsync(dmine, mine, n * sizeof *mine,
                                    cudaMemcpyHostToDevice, ctx->stream);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "cudaMemcpyAsync(shape to device)");
    fb_nccl_result ne = c->nccl->all_gather(dmine, dall, n, FB_NCCL_INT64,
                                            c->comm, (void *)ctx->stream);
    if (ne != FB_NCCL_SUCCESS && ne != FB_NCCL_IN_PROGRESS)
        return nccl_fail(r, c, ne, "ncclAllGather(shapes)");
    st = fb_ctx_mark_done(ctx, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    /* Wait for the other ranks, but not forever: poll, and give up with a
     * status if NCCL reports an error or a rank never joins. */
    const time_t start = time(NULL);
    for (;;) {
        e = cudaEventQuery(ctx->done);
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady)
            return fb_result_cuda(r, e, "waiting for ncclAllGather(shapes)");
        fb_nccl_result async = FB_NCCL_SUCCESS;
        if (c->nccl->comm_get_async_error(c->comm, &async) ==
                FB_NCCL_SUCCESS &&
            async != FB_NCCL_SUCCESS && async != FB_NCCL_IN_PROGRESS)
            return nccl_fail(r, c, async, "ncclAllGather(shapes)");
        if (time(NULL) - start > FB_TP_AGREE_TIMEOUT_S)
            return fb_result_fail(r, FB_STATUS_EXECUTION_FAILED,
                                  "ncclAllGather(shapes): the other ranks "
                                  "did not join within %d s (the "
                                  "communicator is unusable now: abort it)",
                                  FB_TP_AGREE_TIMEOUT_S);
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    /* Only now: a copy to pageable memory would block the host until the
     * all-gather is done, past the timeout above. */
    e = cudaMemcpy(all, dall, n * ranks * sizeof *all,
                   cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "cudaMemcpy(shapes to host)");
    return FB_STATUS_SUCCESS;
}

/* H for a chunk of FB_TP_ENGINE_MIN_ROWS rows or more on the GEMM engine's
 * dual GEMM (the gated product formed in its epilogue), in the context's
 * scratch; NOT_SUPPORTED, nothing launched, for fewer rows or where the
 * engine does not cover the call (then cuda-lt's GEMMs and gated-product
 * pass make H). */
static fb_status engine_hidden(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                               fb_math_mode math, fb_lt_hidden *hid,
                               fb_cuda_result *r)
{
    if (p->m < FB_TP_ENGINE_MIN_ROWS)
        return FB_STATUS_NOT_SUPPORTED;
    fb_fused_env env;
    fb_ctx_fused_env(ctx, math, &env);
    if (env.sm_count > 2 * FB_TP_NCCL_SMS)
        env.sm_count -= FB_TP_NCCL_SMS;
    if (fb_fused_mlp_hidden(&env, p, NULL, 0, NULL, 0) != FB_STATUS_SUCCESS)
        return FB_STATUS_NOT_SUPPORTED;
    const size_t bytes = (size_t)p->m * (size_t)p->h *
                         (size_t)fb_dtype_size(p->dtype);
    fb_status st = fb_ctx_reserve(ctx, &ctx->scratch, bytes, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char path[48] = "";
    st = fb_fused_mlp_hidden(&env, p, ctx->scratch.ptr, bytes, path,
                             sizeof path);
    if (st == FB_STATUS_NOT_SUPPORTED)
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "tensor-parallel MLP: the GEMM engine declined "
                              "the hidden layer it had taken");
    if (st != FB_STATUS_SUCCESS)
        return fb_result_fail(r, st, "tensor-parallel MLP: GEMM engine "
                                     "launch failed");
    memset(hid, 0, sizeof *hid);
    hid->h = ctx->scratch.ptr;
    hid->ldh = p->h;
    hid->merged = 1;
    hid->act = p->gate_act;
    snprintf(hid->gate_name, sizeof hid->gate_name, "%s",
             strchr(path, '/') ? strchr(path, '/') + 1 : path);
    return FB_STATUS_SUCCESS;
}

/* Rows [r0, r0 + rows) of the partial (d, their first column, ldp apart),
 * without bias: this rank's gate/up GEMMs and gated product for those rows
 * of X, then the down GEMM into fp32. The local stages' names go to
 * local. */
static fb_status local_partial(fb_cuda_ctx *ctx, const fb_tp_mlp_problem *tp,
                               int64_t r0, int64_t rows, float *d,
                               int64_t ldp, fb_math_mode math, char *local,
                               size_t locallen, fb_cuda_result *r)
{
    fb_mlp_problem sub = tp->mlp;
    sub.m = rows;
    sub.x = (const char *)sub.x +
            (size_t)r0 * (size_t)sub.ldx * (size_t)fb_dtype_size(sub.dtype);
    fb_lt_hidden hid;
    fb_status st = engine_hidden(ctx, &sub, math, &hid, r);
    if (st == FB_STATUS_NOT_SUPPORTED)
        st = fb_lt_mlp_hidden(ctx, &sub, math, &hid, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    /* partial (n x rows) = Wd_slice H^T: Wd's rows are ldwd apart, which
     * column-major is h_local x n with lda = ldwd, transposed. */
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = sub.dtype;
    g.transa = 1;
    g.m = sub.n;
    g.n = rows;
    g.k = sub.h;
    g.alpha = 1.0f;
    g.a = sub.wd;
    g.lda = tp->ldwd;
    g.b = hid.h;
    g.ldb = hid.ldh;
    g.ep.bias_per_row = 1;
    char down[24] = "";
    st = product_f32(ctx, &g, d, ldp, math, down, sizeof down, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (hid.merged)
        snprintf(local, locallen, "gate+up=%s,down=%s", hid.gate_name, down);
    else
        snprintf(local, locallen, "gate=%s,up=%s,down=%s", hid.gate_name,
                 hid.up_name, down);
    return FB_STATUS_SUCCESS;
}

/* The chunks' local MLPs on the handle's stream (a zero partial where this
 * rank holds no hidden rows), each chunk's all-reduce -- or, rsag, its
 * reduce-scatter, epilogue and all-gather (rsag_chunk) -- on the
 * communication stream once its rows are written (several chunks) or on
 * the handle's stream (one chunk). The trace, if any, brackets each
 * chunk's compute and its whole communication. */
static fb_status chunked_partial(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                                 const fb_tp_mlp_problem *tp, float *partial,
                                 int64_t ldp, int64_t step, int chunks,
                                 int rsag, fb_math_mode math, char *local,
                                 size_t locallen, fb_cuda_result *r)
{
    const int64_t m = tp->mlp.m;
    fb_status st = FB_STATUS_SUCCESS;
    int forked = 0;
    for (int i = 0; i < chunks && st == FB_STATUS_SUCCESS; i++) {
        const int64_t r0 = (int64_t)i * step;
        const int64_t rows = m - r0 < step ? m - r0 : step;
        float *d = partial + (size_t)r0 * (size_t)ldp;
        const size_t elems = (size_t)rows * (size_t)ldp;
        void *const *tb = tp_trace ? tp_trace->compute_begin : NULL;
        void *const *te = tp_trace ? tp_trace->compute_end : NULL;
        void *const *rb = tp_trace ? tp_trace->reduce_begin : NULL;
        void *const *re = tp_trace ? tp_trace->reduce_end : NULL;
        st = trace_mark(tb, i, ctx->stream, r);
        if (st == FB_STATUS_SUCCESS && tp->mlp.h == 0) {
            /* Chunked as the other ranks' calls, which depend on m alone,
             * so that this rank makes the same collectives. */
            cudaError_t e = cudaMemsetAsync(d, 0, elems * sizeof(float),
                                            ctx->stream);
            if (e != cudaSuccess)
                st = fb_result_cuda(r, e, "cudaMemsetAsync(partial)");
            snprintf(local, locallen, "h=0");
        } else if (st == FB_STATUS_SUCCESS) {
            st = local_partial(ctx, tp, r0, rows, d, ldp, math, local,
                               locallen, r);
        }
        if (st == FB_STATUS_SUCCESS)
            st = trace_mark(te, i, ctx->stream, r);
        if (st != FB_STATUS_SUCCESS)
            break;
        cudaStream_t comm = ctx->stream;
        if (chunks > 1) {
            cudaError_t e = cudaEventRecord(ctx->tp_fork, ctx->stream);
            if (e == cudaSuccess)
                e = cudaStreamWaitEvent(ctx->tp_comm, ctx->tp_fork, 0);
            if (e != cudaSuccess) {
                st = fb_result_cuda(r, e, "forking the communication "
                                          "stream");
                break;
            }
            forked = 1;
            comm = ctx->tp_comm;
        }
        st = trace_mark(rb, i, comm, r);
        if (st == FB_STATUS_SUCCESS)
            st = rsag ? rsag_chunk(comm, c, &tp->mlp, d, ldp, r0, rows, r)
                      : all_reduce(comm, c, d, elems, r);
        if (st == FB_STATUS_SUCCESS)
            st = trace_mark(re, i, comm, r);
    }
    if (tp_trace != NULL)
        tp_trace->chunks = chunks;
    if (forked) {
        /* Joined even after a failure, so that a stream capture is never
         * left with a forked stream it cannot end. */
        cudaError_t e = cudaEventRecord(ctx->tp_join, ctx->tp_comm);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(ctx->stream, ctx->tp_join, 0);
        if (e != cudaSuccess && st == FB_STATUS_SUCCESS)
            st = fb_result_cuda(r, e, "joining the communication stream");
    }
    return st;
}

fb_status fb_tp_mlp(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                    const fb_tp_mlp_problem *tp, fb_math_mode math,
                    fb_cuda_result *r)
{
    fb_result_clear(r);
    const fb_mlp_problem *p = &tp->mlp;
    if (p->m == 0 || p->n == 0) {
        /* Every rank has the same m and n (checked), so none reduces. */
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-tp/mlp(empty)");
        return FB_STATUS_SUCCESS;
    }
    if (p->h > 0 && p->k == 0) /* refused before, on every rank */
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "tensor-parallel MLP with k = 0 and h > 0");
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");

    /* Y^T's partial: column-major n x m, columns on 32-byte boundaries
     * for the epilogue's vector loads. */
    const int64_t ldp = (p->n + 7) / 8 * 8;
    const size_t elems = (size_t)ldp * (size_t)p->m;
    float *partial = NULL;
    fb_status st = reserve_partial(ctx, elems, &partial, r);
    if (st != FB_STATUS_SUCCESS)
        return st;

    /* Decided before anything is launched, alike on every rank (the
     * chunks depend on m alone; rsag_form says why it is the same). */
    const int64_t step = chunk_rows(p->m);
    const int chunks = (int)((p->m + step - 1) / step);
    const int rsag = rsag_form(c, p, step, chunks);
    char local[96] = "";
    if (chunks > 1)
        st = fb_ctx_comm_stream(ctx, r);
    if (st == FB_STATUS_SUCCESS)
        st = chunked_partial(ctx, c, tp, partial, ldp, step, chunks, rsag,
                             math, local, sizeof local, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (!rsag) {
        st = fb_launch_epilogue(ctx->stream, p->dtype, p->y, p->ldy, p->n,
                                p->m, partial, ldp, 0.0f, 0, p->bd, 1,
                                FB_ACT_NONE, r);
        if (st != FB_STATUS_SUCCESS)
            return st;
    }
    st = fb_ctx_mark_done(ctx, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (rsag)
        /* Short names, so that the form fits the path beside the local
         * stages' names. */
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-tp/mlp(chunks=%d,%s,rs(f32,%d)+fb_epilogue+"
                      "ag(%s,%d))", chunks, local, c->nranks,
                      p->dtype == FB_DTYPE_F16 ? "f16" : "bf16", c->nranks);
    else if (chunks > 1)
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-tp/mlp(chunks=%d,%s,allreduce(f32,%d),"
                      "fb_epilogue)", chunks, local, c->nranks);
    else
        fb_result_ran(r, FB_BACKEND_CUDA_LT,
                      "cuda-tp/mlp(%s,allreduce(f32,%d),fb_epilogue)", local,
                      c->nranks);
    return FB_STATUS_SUCCESS;
}

fb_status fb_tp_gemm(fb_cuda_ctx *ctx, const fb_tp_comm *c,
                     const fb_gemm_problem *p, fb_math_mode math,
                     fb_cuda_result *r)
{
    fb_result_clear(r);
    if (p->m == 0 || p->n == 0) {
        fb_result_ran(r, FB_BACKEND_CUDA_LT, "cuda-tp/gemm(empty)");
        return FB_STATUS_SUCCESS;
    }
    fb_device_scope scope(ctx->device);
    if (scope.error() != cudaSuccess)
        return fb_result_cuda(r, scope.error(), "cudaSetDevice");
    const int64_t ldp = (p->m + 7) / 8 * 8;
    const size_t elems = (size_t)ldp * (size_t)p->n;
    float *partial = NULL;
    fb_status st = reserve_partial(ctx, elems, &partial, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char name[24] = "";
    st = product_f32(ctx, p, partial, ldp, math, name, sizeof name, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    st = all_reduce(ctx->stream, c, partial, elems, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    st = fb_launch_epilogue(ctx->stream, p->dtype, p->c, p->ldc, p->m, p->n,
                            partial, ldp, p->beta, p->beta != 0.0f,
                            p->ep.bias, p->ep.bias_per_row, p->ep.act, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    st = fb_ctx_mark_done(ctx, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    fb_result_ran(r, FB_BACKEND_CUDA_LT,
                  "cuda-tp/gemm(%s,allreduce(f32,%d),fb_epilogue)", name,
                  c->nranks);
    return FB_STATUS_SUCCESS;
}
