/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_graph.c -- every GPU path captured in a CUDA graph on the
 * handle's stream and replayed, bit for bit against the same calls made
 * directly (fusedblas(3): the warm-up rule of fb_set_cuda_stream).
 *
 * Plans too: a plan made once per call below marked "plan", executed
 * (fb_plan_gemm, fb_plan_mlp) where the others call the routine. And e4m3
 * weights (gemm_e4m3_bias_act, mlp_geglu_forward_e4m3): the decode MLP's
 * down projection launches programmatically, the wgmma kernel in
 * clusters where it splits k.
 *
 * Two orders, as frameworks do it: the handle's stream set before the
 * capture begins, and set while the capture runs (torch.cuda.graph makes
 * its capture stream current first). Each order captures one call of every
 * kernel family and backend below, after one warm-up call each, then
 * replays the graph twice with fresh inputs in between, and compares each
 * output with a direct call on the same inputs.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is no GPU.
 */
#include "cuda_mem.h"
#include "harness.h"
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess)                                                 \
            tap_bail("%s: %s", #x, cudaGetErrorString(e_));                    \
    } while (0)

/* One call: a row-major nn.Linear (C = act(X W^T + b), m x n) or a gated
 * MLP, on device memory, through one backend. */
typedef struct call {
    const char *what;
    fb_backend backend;
    int mlp;
    fb_dtype dtype;
    int64_t m, k, h, n;
    fb_activation act;
    int bias;
    int planned;     /* run through a plan made on the handle */
    int e4m3;        /* e4m3 weights (w1..w3) with fp32 row scales s1..s3 */
    fb_plan plan;
    /* device buffers: inputs, and the output of the graph and the direct
     * call */
    void *x, *w1, *w2, *w3, *b1, *b2, *b3, *out_graph, *out_direct;
    void *s1, *s2, *s3;
} call;

/* Designated initialisers: the buffers start NULL. */
#define CALL(WHAT, B, MLP, DT, M, K, H, N, ACT, BIAS)                          \
    {                                                                          \
        .what = WHAT, .backend = B, .mlp = MLP, .dtype = DT, .m = M, .k = K,   \
        .h = H, .n = N, .act = ACT, .bias = BIAS                               \
    }
#define E4M3(WHAT, MLP, DT, M, K, H, N, ACT, BIAS)                             \
    {                                                                          \
        .what = WHAT, .backend = FB_BACKEND_CUDA_FUSED, .mlp = MLP,            \
        .dtype = DT, .m = M, .k = K, .h = H, .n = N, .act = ACT,               \
        .bias = BIAS, .e4m3 = 1                                                \
    }
#define PLAN(WHAT, B, MLP, DT, M, K, H, N, ACT, BIAS)                          \
    {                                                                          \
        .what = WHAT, .backend = B, .mlp = MLP, .dtype = DT, .m = M, .k = K,   \
        .h = H, .n = N, .act = ACT, .bias = BIAS, .planned = 1                 \
    }
static const call calls[] = {
    CALL("cuda-lt gemm f32 bias gelu_tanh", FB_BACKEND_CUDA_LT, 0, FB_DTYPE_F32,
         96, 256, 0, 320, FB_ACT_GELU_TANH, 1),
    CALL("cuda-lt gemm bf16 bias silu (fp32 accumulator)", FB_BACKEND_CUDA_LT,
         0, FB_DTYPE_BF16, 200, 512, 0, 768, FB_ACT_SILU, 1),
    CALL("cuda-lt gemm f16 plain", FB_BACKEND_CUDA_LT, 0, FB_DTYPE_F16, 128,
         512, 0, 256, FB_ACT_NONE, 0),
    CALL("cuda-fused decode gemm bf16", FB_BACKEND_CUDA_FUSED, 0, FB_DTYPE_BF16,
         4, 1024, 0, 2048, FB_ACT_GELU_TANH, 1),
    CALL("cuda-fused tiny gemm f32", FB_BACKEND_CUDA_FUSED, 0, FB_DTYPE_F32,
         4096, 64, 0, 64, FB_ACT_RELU, 1),
    CALL("cuda-fused engine gemm bf16", FB_BACKEND_CUDA_FUSED, 0, FB_DTYPE_BF16,
         520, 1024, 0, 1032, FB_ACT_GELU_TANH, 1),
    CALL("cuda (shape rule) gemm f16", FB_BACKEND_CUDA, 0, FB_DTYPE_F16, 640,
         768, 0, 1024, FB_ACT_GELU_ERF, 1),
    CALL("cuda-lt mlp bf16", FB_BACKEND_CUDA_LT, 1, FB_DTYPE_BF16, 64, 512,
         1024, 512, FB_ACT_SILU, 1),
    CALL("cuda-lt mlp f32", FB_BACKEND_CUDA_LT, 1, FB_DTYPE_F32, 48, 256, 512,
         256, FB_ACT_GELU_TANH, 0),
    CALL("cuda-fused decode mlp bf16", FB_BACKEND_CUDA_FUSED, 1, FB_DTYPE_BF16,
         4, 768, 3072, 768, FB_ACT_GELU_TANH, 0),
    CALL("cuda-fused decode mlp f32", FB_BACKEND_CUDA_FUSED, 1, FB_DTYPE_F32, 8,
         512, 1024, 512, FB_ACT_SILU, 1),
    CALL("cuda-fused tiny mlp bf16", FB_BACKEND_CUDA_FUSED, 1, FB_DTYPE_BF16,
         4096, 64, 256, 64, FB_ACT_GELU_TANH, 1),
    CALL("cuda-fused prefill mlp f16", FB_BACKEND_CUDA_FUSED, 1, FB_DTYPE_F16,
         256, 768, 3072, 768, FB_ACT_GELU_TANH, 0),
    CALL("cuda-fused engine mlp bf16", FB_BACKEND_CUDA_FUSED, 1, FB_DTYPE_BF16,
         264, 1536, 2048, 1536, FB_ACT_SILU, 1),
    CALL("cuda (shape rule) mlp bf16", FB_BACKEND_CUDA, 1, FB_DTYPE_BF16, 16,
         1024, 2048, 1024, FB_ACT_GELU_TANH, 0),
    PLAN("plan: cuda-fused decode mlp bf16", FB_BACKEND_CUDA_FUSED, 1,
         FB_DTYPE_BF16, 4, 768, 3072, 768, FB_ACT_GELU_TANH, 1),
    PLAN("plan: cuda-fused tiny mlp bf16", FB_BACKEND_CUDA_FUSED, 1,
         FB_DTYPE_BF16, 4096, 64, 256, 64, FB_ACT_GELU_TANH, 1),
    PLAN("plan: cuda-fused decode gemm bf16", FB_BACKEND_CUDA_FUSED, 0,
         FB_DTYPE_BF16, 4, 1024, 0, 2048, FB_ACT_GELU_TANH, 1),
    PLAN("plan: cuda-lt gemm bf16 bias silu", FB_BACKEND_CUDA_LT, 0,
         FB_DTYPE_BF16, 200, 512, 0, 768, FB_ACT_SILU, 1),
    PLAN("plan: cuda-lt mlp f32", FB_BACKEND_CUDA_LT, 1, FB_DTYPE_F32, 48,
         256, 512, 256, FB_ACT_GELU_TANH, 0),
    PLAN("plan: cuda (shape rule) mlp f16 prefill", FB_BACKEND_CUDA, 1,
         FB_DTYPE_F16, 1024, 768, 3072, 768, FB_ACT_GELU_TANH, 1),
    E4M3("e4m3 decode mlp bf16 (down launched programmatically)", 1,
         FB_DTYPE_BF16, 16, 1024, 2048, 1024, FB_ACT_SILU, 1),
    E4M3("e4m3 wgmma mlp f16", 1, FB_DTYPE_F16, 160, 512, 1024, 256,
         FB_ACT_GELU_TANH, 0),
    E4M3("e4m3 wgmma gemm bf16, k split over a cluster", 0, FB_DTYPE_BF16,
         128, 4096, 0, 1024, FB_ACT_GELU_TANH, 1),
};
#define NCALLS ((int)(sizeof calls / sizeof calls[0]))

static size_t esize(fb_dtype t) { return t == FB_DTYPE_F32 ? 4 : 2; }

static void *dev_zeroed(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    CK(cudaMemset(p, 0, bytes));
    return p;
}

/* n random values of t in [-scale, scale] into device memory p. */
static void fill(void *p, fb_dtype t, int64_t n, double scale)
{
    const size_t es = esize(t);
    unsigned char *h = malloc((size_t)n * es);
    if (h == NULL)
        tap_bail("out of host memory");
    for (int64_t i = 0; i < n; i++)
        dt_set(t, h, i, rng_value(t) * scale);
    CK(cudaMemcpy(p, h, (size_t)n * es, cudaMemcpyHostToDevice));
    free(h);
}

static void make_buffers(call *c)
{
    const size_t es = esize(c->dtype);
    /* e4m3 weights: one byte each, and a scale a row */
    const size_t ws = c->e4m3 ? 1 : es;
    c->s1 = c->s2 = c->s3 = NULL;
    if (c->e4m3) {
        c->s1 = dev_zeroed((size_t)(c->mlp ? c->h : c->n) * 4);
        if (c->mlp) {
            c->s2 = dev_zeroed((size_t)c->h * 4);
            c->s3 = dev_zeroed((size_t)c->n * 4);
        }
    }
    if (c->mlp) {
        c->x = dev_zeroed((size_t)(c->m * c->k) * es);
        c->w1 = dev_zeroed((size_t)(c->h * c->k) * ws);
        c->w2 = dev_zeroed((size_t)(c->h * c->k) * ws);
        c->w3 = dev_zeroed((size_t)(c->n * c->h) * ws);
        c->b1 = c->bias ? dev_zeroed((size_t)c->h * es) : NULL;
        c->b2 = c->bias ? dev_zeroed((size_t)c->h * es) : NULL;
        c->b3 = c->bias ? dev_zeroed((size_t)c->n * es) : NULL;
    } else {
        c->x = dev_zeroed((size_t)(c->m * c->k) * es);
        c->w1 = dev_zeroed((size_t)(c->n * c->k) * ws);
        c->b1 = c->bias ? dev_zeroed((size_t)c->n * es) : NULL;
        c->w2 = c->w3 = c->b2 = c->b3 = NULL;
    }
    c->out_graph = dev_zeroed((size_t)(c->m * c->n) * es);
    c->out_direct = dev_zeroed((size_t)(c->m * c->n) * es);
}

static void free_buffers(call *c)
{
    void *all[] = {c->x,         c->w1,         c->w2, c->w3, c->b1,
                   c->b2,        c->b3,         c->s1, c->s2, c->s3,
                   c->out_graph, c->out_direct};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] != NULL)
            CK(cudaFree(all[i]));
}

/* n random e4m3 weights (values in [-2, 2], never the NaN pattern) into
 * device memory p. */
static void fill_e4m3(void *p, int64_t n)
{
    fb_e4m3 *h = malloc((size_t)n);
    if (h == NULL)
        tap_bail("out of host memory");
    for (int64_t i = 0; i < n; i++)
        h[i] = fb_float_to_e4m3((float)(2.0 * rng_value(FB_DTYPE_F32)));
    CK(cudaMemcpy(p, h, (size_t)n, cudaMemcpyHostToDevice));
    free(h);
}

/* Fresh inputs (weights scaled so that the MLP's values stay moderate). */
static void new_inputs(call *c)
{
    fill(c->x, c->dtype, c->m * c->k, 1.0);
    const double ws = 1.0 / (double)c->k;
    if (c->e4m3) {
        /* weights of about +-2, each row's scale 2/k (2/h for Wd) */
        const int64_t r1 = c->mlp ? c->h : c->n;
        fill_e4m3(c->w1, r1 * c->k);
        fill(c->s1, FB_DTYPE_F32, r1, 2.0 * ws);
        if (c->bias)
            fill(c->b1, c->dtype, r1, 0.5);
        if (c->mlp) {
            fill_e4m3(c->w2, c->h * c->k);
            fill_e4m3(c->w3, c->n * c->h);
            fill(c->s2, FB_DTYPE_F32, c->h, 2.0 * ws);
            fill(c->s3, FB_DTYPE_F32, c->n, 2.0 / (double)c->h);
            if (c->bias) {
                fill(c->b2, c->dtype, c->h, 0.5);
                fill(c->b3, c->dtype, c->n, 0.5);
            }
        }
        return;
    }
    if (c->mlp) {
        fill(c->w1, c->dtype, c->h * c->k, 4.0 * ws);
        fill(c->w2, c->dtype, c->h * c->k, 4.0 * ws);
        fill(c->w3, c->dtype, c->n * c->h, 4.0 / (double)c->h);
        if (c->bias) {
            fill(c->b1, c->dtype, c->h, 0.5);
            fill(c->b2, c->dtype, c->h, 0.5);
            fill(c->b3, c->dtype, c->n, 0.5);
        }
    } else {
        fill(c->w1, c->dtype, c->n * c->k, 4.0 * ws);
        if (c->bias)
            fill(c->b1, c->dtype, c->n, 0.5);
    }
}

/* The plan of a planned call, made on its handle once its weights exist
 * (they are read in place: fresh weights reach the plan too). */
static void make_plan(call *c, fb_handle h)
{
    const fb_status st =
        c->mlp ? fb_plan_create_mlp(h, c->dtype, c->act, c->m, c->k, c->h,
                                    c->n, c->w1, c->b1, c->w2, c->b2, c->w3,
                                    c->b3, &c->plan)
               : fb_plan_create_gemm(h, c->dtype, FB_ROW_MAJOR, FB_NO_TRANS,
                                     FB_TRANS, c->m, c->n, c->k, 1.0f, c->w1,
                                     c->k, 0.0f, c->b1, c->act, &c->plan);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("%s: %s", c->what, fb_handle_last_message(h));
}

static fb_status run(const call *c, fb_handle h, void *out)
{
    if (c->e4m3 && c->mlp)
        return mlp_geglu_forward_e4m3(h, c->dtype, c->act, c->m, c->k, c->h,
                                      c->n, c->x, c->k, c->w1, c->s1, c->b1,
                                      c->w2, c->s2, c->b2, c->w3, c->s3,
                                      c->b3, out, c->n);
    if (c->e4m3)
        return gemm_e4m3_bias_act(h, c->dtype, FB_ROW_MAJOR, FB_NO_TRANS,
                                  FB_TRANS, c->m, c->n, c->k, 1.0f, c->x,
                                  c->k, c->w1, c->k, c->s1, 0.0f, out, c->n,
                                  c->b1, c->act);
    if (c->planned)
        return c->mlp ? fb_plan_mlp(c->plan, c->m, c->x, c->k, out, c->n)
                      : fb_plan_gemm(c->plan, c->m, c->x, c->k, out, c->n);
    if (c->mlp)
        return mlp_geglu_forward(h, c->dtype, c->act, c->m, c->k, c->h, c->n,
                                 c->x, c->k, c->w1, c->b1, c->w2, c->b2, c->w3,
                                 c->b3, out, c->n);
    switch (c->dtype) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, c->m,
                              c->n, c->k, 1.0f, c->x, c->k, c->w1, c->k, 0.0f,
                              out, c->n, c->b1, c->act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, c->m,
                              c->n, c->k, 1.0f, c->x, c->k, c->w1, c->k, 0.0f,
                              out, c->n, c->b1, c->act);
    case FB_DTYPE_BF16:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, c->m,
                              c->n, c->k, 1.0f, c->x, c->k, c->w1, c->k, 0.0f,
                              out, c->n, c->b1, c->act);
    }
    return FB_STATUS_INTERNAL;
}

/* Bitwise comparison of the two outputs of c. */
static int same_bits(const call *c, char *diag, size_t len)
{
    const size_t bytes = (size_t)(c->m * c->n) * esize(c->dtype);
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    if (a == NULL || b == NULL)
        tap_bail("out of host memory");
    CK(cudaMemcpy(a, c->out_graph, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b, c->out_direct, bytes, cudaMemcpyDeviceToHost));
    int64_t differ = 0, first = -1;
    const size_t es = esize(c->dtype);
    for (size_t i = 0; i < bytes; i += es)
        if (memcmp(a + i, b + i, es) != 0) {
            if (first < 0)
                first = (int64_t)(i / es);
            differ++;
        }
    snprintf(diag, len, "%lld of %lld outputs differ (first at %lld)",
             (long long)differ, (long long)(c->m * c->n), (long long)first);
    free(a);
    free(b);
    return differ == 0;
}

static fb_handle handle_for(fb_handle *handles, fb_backend b)
{
    return handles[b - FB_BACKEND_CUDA];
}

/* One order: inside != 0 sets the handles' stream after the capture has
 * begun. */
static void one_order(int inside, call *cs, fb_handle *handles)
{
    const char *order = inside ? "stream set inside the capture"
                               : "stream set before the capture";
    cudaStream_t s, side;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    /* Warm-up: one direct call of each, on another stream (a framework's
     * warm-up runs on a side stream too). */
    for (int b = 0; b < 3; b++)
        if (fb_set_cuda_stream(handles[b], inside ? side : s) !=
            FB_STATUS_SUCCESS)
            tap_bail("fb_set_cuda_stream failed");
    int warm[NCALLS];
    for (int i = 0; i < NCALLS; i++) {
        new_inputs(&cs[i]);
        fb_handle h = handle_for(handles, cs[i].backend);
        warm[i] = run(&cs[i], h, cs[i].out_graph) == FB_STATUS_SUCCESS;
        if (!warm[i])
            tap_diag("%s: warm-up call failed: %s", cs[i].what,
                     fb_handle_last_message(h));
        else
            tap_diag("%s: %s", cs[i].what, fb_handle_last_path(h));
    }
    CK(cudaDeviceSynchronize());

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    if (inside)
        for (int b = 0; b < 3; b++)
            if (fb_set_cuda_stream(handles[b], s) != FB_STATUS_SUCCESS)
                tap_bail("fb_set_cuda_stream failed");
    int captured[NCALLS];
    for (int i = 0; i < NCALLS; i++) {
        captured[i] = warm[i] && run(&cs[i], handle_for(handles, cs[i].backend),
                                     cs[i].out_graph) == FB_STATUS_SUCCESS;
    }
    cudaGraph_t graph = NULL;
    const cudaError_t ec = cudaStreamEndCapture(s, &graph);
    tap_ok(ec == cudaSuccess && graph != NULL, "%s: the capture ends valid%s%s",
           order, ec == cudaSuccess ? "" : ": ",
           ec == cudaSuccess ? "" : cudaGetErrorString(ec));
    if (ec != cudaSuccess || graph == NULL) {
        (void)cudaGetLastError();
        for (int i = 0; i < NCALLS; i++)
            tap_ok(0, "%s: %s replays as called directly (no graph)", order,
                   cs[i].what);
        CK(cudaStreamDestroy(s));
        CK(cudaStreamDestroy(side));
        return;
    }
    cudaGraphExec_t exec = NULL;
    CK(cudaGraphInstantiate(&exec, graph, 0));

    /* Two replays, each on fresh inputs, each checked against direct
     * calls on the same inputs. */
    int ok[NCALLS];
    char diag[NCALLS][128];
    for (int i = 0; i < NCALLS; i++) {
        ok[i] = captured[i];
        snprintf(diag[i], sizeof diag[i], "%s",
                 captured[i] ? "" : "not captured");
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NCALLS; i++)
            new_inputs(&cs[i]);
        CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < NCALLS; i++) {
            if (!ok[i])
                continue;
            if (run(&cs[i], handle_for(handles, cs[i].backend),
                    cs[i].out_direct) != FB_STATUS_SUCCESS) {
                ok[i] = 0;
                snprintf(diag[i], sizeof diag[i], "direct call failed");
            }
        }
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < NCALLS; i++)
            if (ok[i] && !same_bits(&cs[i], diag[i], sizeof diag[i]))
                ok[i] = 0;
    }
    for (int i = 0; i < NCALLS; i++) {
        tap_ok(ok[i], "%s: %s replays as called directly, twice%s%s", order,
               cs[i].what, diag[i][0] ? ": " : "", diag[i]);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    for (int b = 0; b < 3; b++)
        (void)fb_set_cuda_stream(handles[b], NULL);
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(side));
}

int main(void)
{
    tap_begin("test_gpu_graph");
    if (cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs", name, sms);

    fb_handle handles[3]; /* cuda, cuda-lt, cuda-fused */
    for (int b = 0; b < 3; b++)
        handles[b] = handle_on((fb_backend)(FB_BACKEND_CUDA + b));
    call cs[NCALLS];
    memcpy(cs, calls, sizeof cs);
    for (int i = 0; i < NCALLS; i++) {
        make_buffers(&cs[i]);
        if (cs[i].planned)
            make_plan(&cs[i], handle_for(handles, cs[i].backend));
    }
    one_order(0, cs, handles);
    one_order(1, cs, handles);
    for (int i = 0; i < NCALLS; i++)
        free_buffers(&cs[i]);
    for (int b = 0; b < 3; b++)
        fb_destroy(handles[b]);
    return tap_end();
}
