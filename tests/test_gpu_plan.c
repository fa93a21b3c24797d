/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_plan.c -- plans on the GPU (fb_plan_create_gemm(3)), with
 * device memory.
 *
 *  - Every GPU path and fused family: a plan gives the same bits as the
 *    plain routine on the same handle and runs the same implementation,
 *    for m across the families' boundaries (decode up to 32 rows, the
 *    shape rule's 16, 32, 512 and 1024): cuda-fused (tiny, decode,
 *    prefill pair, GEMM engine; gemm and MLP), cuda-lt, the shape rule
 *    (FB_BACKEND_CUDA), and auto with device weights; k = 0 and
 *    alpha = 0 (the fused path's epilogue kernel, and cuda-lt); padded
 *    leading dimensions, which some families refuse at launch.
 *  - Bad arguments at creation and execution (plan_check.c), and host
 *    pointers given to a GPU plan's execution: argument 3 or 5.
 *  - A plan's first execution captured in a CUDA graph (the fused
 *    families: nothing to allocate or look up), replayed on new inputs,
 *    the same bits as direct executions.
 *  - Layers back to back without synchronisation (chain): plans, which
 *    may start before the kernel ahead ends, give the bits of the
 *    synchronised chain.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is no GPU.
 */
#include "cuda_mem.h"
#include "harness.h"
#include "plan_check.h"
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess)                                                 \
            tap_bail("%s: %s", #x, cudaGetErrorString(e_));                    \
    } while (0)

static void sync_device(void)
{
    CK(cudaDeviceSynchronize());
}

static void families(fb_handle fused, fb_handle lt, fb_handle rule,
                     fb_handle autoh)
{
    static const int64_t decode[] = {1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 24,
                                     31, 32};
    static const int64_t rows[] = {1, 4, 16, 17, 32, 33, 100, 511, 512, 513,
                                   1023, 1024, 1500, 2048};
    static const int64_t tiny[] = {1, 7, 64, 100, 4096, 65536};
    const int nd = (int)(sizeof decode / sizeof decode[0]);
    const int nr = (int)(sizeof rows / sizeof rows[0]);
    const int nt = (int)(sizeof tiny / sizeof tiny[0]);

    /* cuda-fused, family by family (want_path says which). */
    plan_mlp_spec tm = {FB_DTYPE_BF16, FB_ACT_GELU_TANH, 65536, 64, 256, 64,
                        1, 0};
    plan_check_mlp(fused, &tmem_cuda, &tm, tiny, nt, sync_device,
                   "cuda-fused/mlp_tiny");
    plan_mlp_spec tf = {FB_DTYPE_F32, FB_ACT_SILU, 65536, 64, 64, 64, 0, 0};
    plan_check_mlp(fused, &tmem_cuda, &tf, tiny, nt, sync_device,
                   "cuda-fused/mlp_tiny");
    for (int d = 0; d < 3; d++) {
        plan_mlp_spec dm = {all_dtypes[d], FB_ACT_GELU_TANH, 32, 768, 3072,
                            768, 1, 0};
        plan_check_mlp(fused, &tmem_cuda, &dm, decode, nd, sync_device,
                       "cuda-fused/mlp_decode");
    }
    static const int64_t prefill[] = {33, 64, 100, 256, 1000, 1024};
    plan_mlp_spec pm = {FB_DTYPE_F16, FB_ACT_GELU_TANH, 1024, 768, 3072, 768,
                        0, 0};
    plan_check_mlp(fused, &tmem_cuda, &pm, prefill, 6, sync_device,
                   "cuda-fused/mlp_prefill_wgmma");
    static const int64_t engine[] = {264, 520, 1024, 2048};
    plan_mlp_spec em = {FB_DTYPE_BF16, FB_ACT_SILU, 2048, 1536, 2048, 1536,
                        1, 0};
    plan_check_mlp(fused, &tmem_cuda, &em, engine, 4, sync_device,
                   "cuda-fused/mlp_sm90");
    plan_gemm_spec dg = {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                         32, 2048, 1024, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0};
    plan_check_gemm(fused, &tmem_cuda, &dg, decode, nd, sync_device,
                    "cuda-fused/gemm_decode");
    plan_gemm_spec tg = {FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                         4096, 64, 64, 1.0f, 0.0f, 1, FB_ACT_RELU, 0};
    static const int64_t tgm[] = {33, 100, 4096};
    plan_check_gemm(fused, &tmem_cuda, &tg, tgm, 3, sync_device,
                    "cuda-fused/gemm_tiny");
    plan_gemm_spec eg = {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                         1040, 1032, 1024, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH,
                         0};
    static const int64_t egm[] = {520, 777, 1040};
    plan_check_gemm(fused, &tmem_cuda, &eg, egm, 3, sync_device,
                    "cuda-fused/gemm_sm90");
    /* the weights stored k x n, the rows of X padded: the engine packs
     * them K-major first, in the scratch the plan reserved */
    plan_gemm_spec ek = {FB_DTYPE_F16, FB_ROW_MAJOR, FB_NO_TRANS,
                         FB_NO_TRANS, 1040, 1032, 1000, 1.0f, 0.5f, 1,
                         FB_ACT_SILU, 3};
    plan_check_gemm(fused, &tmem_cuda, &ek, egm, 3, sync_device,
                    "cuda-fused/gemm_sm90");

    /* k = 0 and alpha = 0: nothing to multiply, C <- act(beta C + bias):
     * cuda-fused's epilogue kernel, and cuda-lt. */
    for (int d = 0; d < 3; d++) {
        plan_gemm_spec z = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 32, 20, 0, 1.0f, 0.5f, 1, FB_ACT_RELU,
                            0};
        plan_check_gemm(fused, &tmem_cuda, &z, decode, nd, sync_device,
                        "cuda-fused/epilogue");
        plan_check_gemm(lt, &tmem_cuda, &z, decode, nd, sync_device,
                        "cuda-lt");
        z.k = 16, z.alpha = 0.0f;
        plan_check_gemm(fused, &tmem_cuda, &z, decode, nd, sync_device,
                        "cuda-fused/epilogue");
        plan_check_gemm(lt, &tmem_cuda, &z, decode, nd, sync_device,
                        "cuda-lt");
    }

    /* cuda-lt: every dtype, both operations, beta and a column-major
     * call. */
    for (int d = 0; d < 3; d++) {
        plan_gemm_spec g = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 512, 320, 256, 1.0f, 0.5f, 1,
                            FB_ACT_SILU, 2};
        plan_check_gemm(lt, &tmem_cuda, &g, rows, 9, sync_device, "cuda-lt");
        plan_gemm_spec c = {all_dtypes[d], FB_COL_MAJOR, FB_TRANS,
                            FB_NO_TRANS, 64, 96, 72, 0.75f, 0.0f, 0,
                            FB_ACT_GELU_ERF, 1};
        plan_check_gemm(lt, &tmem_cuda, &c, decode, nd, sync_device,
                        "cuda-lt");
        plan_mlp_spec q = {all_dtypes[d], FB_ACT_SILU, 512, 256, 512, 256, 1,
                           0};
        plan_check_mlp(lt, &tmem_cuda, &q, rows, 9, sync_device, "cuda-lt");
    }

    /* The shape rule decides per m as the plain call does: across every
     * boundary its rows draw. */
    for (int d = 0; d < 3; d++) {
        plan_mlp_spec q = {all_dtypes[d], FB_ACT_GELU_TANH, 2048, 768, 3072,
                           768, 1, 0};
        plan_check_mlp(rule, &tmem_cuda, &q, rows, nr, sync_device, NULL);
        plan_gemm_spec g = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 2048, 1024, 1024, 1.0f, 0.0f, 1,
                            FB_ACT_GELU_TANH, 0};
        plan_check_gemm(rule, &tmem_cuda, &g, rows, nr, sync_device, NULL);
    }
    plan_mlp_spec tq = {FB_DTYPE_BF16, FB_ACT_GELU_TANH, 65536, 64, 256, 64,
                        1, 0};
    plan_check_mlp(rule, &tmem_cuda, &tq, tiny, nt, sync_device, NULL);
    /* Leading dimensions one element wider than tight: rows no longer
     * 16-byte aligned, which some families refuse at launch; the plan
     * then runs what the plain call runs. */
    for (int d = 1; d < 3; d++) {
        plan_mlp_spec pt = {all_dtypes[d], FB_ACT_GELU_TANH, 65536, 64, 256,
                            64, 1, 1};
        plan_check_mlp(rule, &tmem_cuda, &pt, tiny, nt, sync_device, NULL);
        plan_mlp_spec pd = {all_dtypes[d], FB_ACT_SILU, 2048, 768, 3072, 768,
                            1, 1};
        plan_check_mlp(rule, &tmem_cuda, &pd, rows, nr, sync_device, NULL);
        plan_gemm_spec pg = {all_dtypes[d], FB_ROW_MAJOR, FB_NO_TRANS,
                             FB_TRANS, 2048, 1024, 1024, 1.0f, 0.0f, 1,
                             FB_ACT_GELU_TANH, 1};
        plan_check_gemm(rule, &tmem_cuda, &pg, rows, nr, sync_device, NULL);
    }
    /* Auto: device weights make a GPU plan. */
    plan_mlp_spec aq = {FB_DTYPE_F32, FB_ACT_SILU, 64, 512, 1024, 512, 1, 0};
    plan_check_mlp(autoh, &tmem_cuda, &aq, decode, nd, sync_device, NULL);
}

/* Host pointers given to a GPU plan's execution. */
static void wrong_memory(fb_handle h)
{
    const int64_t m = 4, k = 64, n = 32;
    void *w = tmem_cuda.alloc((size_t)(n * k) * 4);
    void *dx = tmem_cuda.alloc((size_t)(m * k) * 4);
    void *dy = tmem_cuda.alloc((size_t)(m * n) * 4);
    float *hx = calloc((size_t)(m * k), 4), *hy = calloc((size_t)(m * n), 4);
    if (hx == NULL || hy == NULL)
        tap_bail("out of memory");
    fb_plan p;
    fb_status st = fb_plan_create_gemm(h, FB_DTYPE_F32, FB_ROW_MAJOR,
                                       FB_NO_TRANS, FB_TRANS, m, n, k, 1.0f, w,
                                       k, 0.0f, NULL, FB_ACT_NONE, &p);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("fb_plan_create_gemm: %s", fb_handle_last_message(h));
    st = fb_plan_gemm(p, m, hx, k, dy, n);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 3,
           "a GPU plan given host A: %s at %d", fb_status_string(st),
           fb_handle_last_arg(h));
    st = fb_plan_gemm(p, m, dx, k, hy, n);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 5,
           "a GPU plan given host C: %s at %d", fb_status_string(st),
           fb_handle_last_arg(h));
    fb_plan_destroy(p);
    /* A cpu-backend handle refuses device weights at creation. */
    fb_handle c = handle_on(FB_BACKEND_CPU);
    st = fb_plan_create_gemm(c, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                             FB_TRANS, m, n, k, 1.0f, w, k, 0.0f, NULL,
                             FB_ACT_NONE, &p);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(c) == 10,
           "the cpu backend given device weights: %s at %d",
           fb_status_string(st), fb_handle_last_arg(c));
    fb_destroy(c);
    tmem_cuda.release(w), tmem_cuda.release(dx), tmem_cuda.release(dy);
    free(hx), free(hy);
}

/* A plan's first execution inside a capture, replayed on new inputs. */
static void capture(fb_handle h, int mlp, fb_dtype t, int64_t m, int64_t k,
                    int64_t hd, int64_t n, const char *what)
{
    const size_t es = dt_size(t);
    const int64_t out_n = mlp ? n : hd; /* a gemm's output is m x hd */
    const size_t xb = (size_t)(m * k) * es, yb = (size_t)(m * out_n) * es;
    void *x = tmem_cuda.alloc(xb), *y1 = tmem_cuda.alloc(yb);
    void *y2 = tmem_cuda.alloc(yb);
    void *w1 = tmem_cuda.alloc((size_t)(hd * k) * es);
    void *w2 = tmem_cuda.alloc((size_t)(hd * k) * es);
    void *w3 = tmem_cuda.alloc((size_t)(n * hd) * es);
    unsigned char *hbuf = malloc(xb > (size_t)(hd * k) * es
                                     ? (xb > (size_t)(n * hd) * es ? xb : (size_t)(n * hd) * es)
                                     : (size_t)(hd * k) * es);
    unsigned char *a = malloc(yb), *b = malloc(yb);
    if (hbuf == NULL || a == NULL || b == NULL)
        tap_bail("out of memory");
#define FILL(dst, count, scale)                                                \
    do {                                                                       \
        for (int64_t i_ = 0; i_ < (count); i_++)                               \
            dt_set(t, hbuf, i_, rng_value(t) * (scale));                       \
        tmem_cuda.put(dst, hbuf, (size_t)(count) * es);                        \
    } while (0)
    FILL(w1, hd * k, 4.0 / (double)k);
    FILL(w2, hd * k, 4.0 / (double)k);
    FILL(w3, n * hd, 4.0 / (double)hd);
    fb_plan p;
    fb_status st = mlp ? fb_plan_create_mlp(h, t, FB_ACT_GELU_TANH, m, k, hd,
                                            n, w1, NULL, w2, NULL, w3, NULL,
                                            &p)
                       : fb_plan_create_gemm(h, t, FB_ROW_MAJOR, FB_NO_TRANS,
                                             FB_TRANS, m, hd, k, 1.0f, w1, k,
                                             0.0f, NULL, FB_ACT_GELU_TANH, &p);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("%s: %s", what, fb_handle_last_message(h));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (fb_set_cuda_stream(h, s) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_cuda_stream failed");
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    st = mlp ? fb_plan_mlp(p, m, x, k, y1, out_n)
             : fb_plan_gemm(p, m, x, k, y1, out_n);
    cudaGraph_t graph = NULL;
    const cudaError_t ec = cudaStreamEndCapture(s, &graph);
    int ok = st == FB_STATUS_SUCCESS && ec == cudaSuccess && graph != NULL;
    char diag[160] = "";
    if (!ok) {
        snprintf(diag, sizeof diag, "capture: %s, %s (%s)",
                 fb_status_string(st), cudaGetErrorString(ec),
                 fb_handle_last_message(h));
        (void)cudaGetLastError();
    } else {
        cudaGraphExec_t exec;
        CK(cudaGraphInstantiate(&exec, graph, 0));
        for (int round = 0; round < 2 && ok; round++) {
            FILL(x, m * k, 1.0);
            CK(cudaGraphLaunch(exec, s));
            st = mlp ? fb_plan_mlp(p, m, x, k, y2, out_n)
                     : fb_plan_gemm(p, m, x, k, y2, out_n);
            CK(cudaStreamSynchronize(s));
            tmem_cuda.get(a, y1, (size_t)(m * out_n) * es);
            tmem_cuda.get(b, y2, (size_t)(m * out_n) * es);
            ok = st == FB_STATUS_SUCCESS &&
                 memcmp(a, b, (size_t)(m * out_n) * es) == 0;
            if (!ok)
                snprintf(diag, sizeof diag, "round %d: %s", round,
                         st == FB_STATUS_SUCCESS ? "bits differ"
                                                 : fb_handle_last_message(h));
        }
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
    }
    tap_ok(ok, "%s (%s): the first execution captured, replayed twice as "
           "executed directly%s%s", what, fb_plan_path(p, m),
           diag[0] ? ": " : "", diag);
#undef FILL
    (void)fb_set_cuda_stream(h, NULL);
    CK(cudaStreamDestroy(s));
    fb_plan_destroy(p);
    tmem_cuda.release(x), tmem_cuda.release(y1), tmem_cuda.release(y2);
    tmem_cuda.release(w1), tmem_cuda.release(w2), tmem_cuda.release(w3);
    free(hbuf), free(a), free(b);
}

/* Layers back to back on one stream, each reading what the one before
 * wrote, with no synchronisation between them: plans alternate with
 * plain calls (bf16, 16 rows, decode widths, a gated MLP and a gemm a
 * layer), two buffers in turn (each layer overwrites what the layer
 * before read). On Hopper a plan's decode gemm starts streaming its
 * weights before the kernel ahead has finished (programmatic dependent
 * launch); it must still read X only once that kernel is done, and write
 * Y only once that kernel has stopped reading it. Every layer's output
 * must be the bits of the same chain run with a synchronisation after
 * every call. */
static void chain(fb_handle h)
{
    enum { L = 8 };
    const fb_dtype t = FB_DTYPE_BF16;
    const int64_t m = 16, k = 2048, hd = 5632;
    const size_t es = dt_size(t), xb = (size_t)(m * k) * es;
    void *w[L][3], *x0 = tmem_cuda.alloc(xb);
    void *buf[2] = {tmem_cuda.alloc(xb), tmem_cuda.alloc(xb)};
    unsigned char *hbuf = malloc((size_t)(hd * k) * es);
    unsigned char *want[L], *got = malloc(xb);
    fb_plan plan[L];
    if (hbuf == NULL || got == NULL)
        tap_bail("out of memory");
    for (int l = 0; l < L; l++) {
        const int mlp = l % 2 == 0;
        for (int j = 0; j < (mlp ? 3 : 1); j++) {
            /* Wg, Wu: hd x k; Wd: k x hd; the gemm's W: k x k; scaled
             * by their fan-in so that the layers keep X's magnitude */
            const int64_t n_el = mlp ? hd * k : k * k;
            const double fan = mlp && j == 2 ? (double)hd : (double)k;
            w[l][j] = tmem_cuda.alloc((size_t)n_el * es);
            for (int64_t i = 0; i < n_el; i++)
                dt_set(t, hbuf, i, rng_value(t) * 2.0 / sqrt(fan));
            tmem_cuda.put(w[l][j], hbuf, (size_t)n_el * es);
        }
        fb_status st =
            mlp ? fb_plan_create_mlp(h, t, FB_ACT_SILU, m, k, hd, k, w[l][0],
                                     NULL, w[l][1], NULL, w[l][2], NULL,
                                     &plan[l])
                : fb_plan_create_gemm(h, t, FB_ROW_MAJOR, FB_NO_TRANS,
                                      FB_TRANS, m, k, k, 1.0f, w[l][0], k,
                                      0.0f, NULL, FB_ACT_GELU_TANH, &plan[l]);
        if (st != FB_STATUS_SUCCESS)
            tap_bail("chain: plan %d: %s", l, fb_handle_last_message(h));
        want[l] = malloc(xb);
        if (want[l] == NULL)
            tap_bail("out of memory");
    }
    for (int64_t i = 0; i < m * k; i++)
        dt_set(t, hbuf, i, rng_value(t));
    tmem_cuda.put(x0, hbuf, xb);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (fb_set_cuda_stream(h, s) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_cuda_stream failed");
    /* layer l: plans on even passes' even layers and odd passes' odd
     * ones, plain calls on the rest; pass 0 synchronises after each */
    int ok = 1;
    char diag[200] = "";
    for (int pass = 0; pass < 3 && ok; pass++) {
        const void *in = x0;
        for (int l = 0; l < L; l++) {
            void *out = buf[l % 2];
            const int mlp = l % 2 == 0, use_plan = (l + pass) % 2 == 0;
            fb_status st;
            if (use_plan)
                st = mlp ? fb_plan_mlp(plan[l], m, in, k, out, k)
                         : fb_plan_gemm(plan[l], m, in, k, out, k);
            else if (mlp)
                st = mlp_geglu_forward(h, t, FB_ACT_SILU, m, k, hd, k, in, k,
                                       w[l][0], NULL, w[l][1], NULL,
                                       w[l][2], NULL, out, k);
            else
                st = bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                                    m, k, k, 1.0f, in, k, w[l][0], k, 0.0f,
                                    out, k, NULL, FB_ACT_GELU_TANH);
            if (st != FB_STATUS_SUCCESS) {
                snprintf(diag, sizeof diag, "pass %d layer %d: %s", pass, l,
                         fb_handle_last_message(h));
                ok = 0;
                break;
            }
            if (pass == 0) {
                CK(cudaStreamSynchronize(s));
                tmem_cuda.get(want[l], out, xb);
            } else if (l == L - 1) {
                CK(cudaStreamSynchronize(s));
            }
            in = out;
        }
        if (pass > 0 && ok) {
            tmem_cuda.get(got, buf[(L - 1) % 2], xb);
            if (memcmp(got, want[L - 1], xb) != 0) {
                snprintf(diag, sizeof diag, "pass %d: the last layer's bits "
                         "differ", pass);
                ok = 0;
            }
        }
    }
    tap_ok(ok, "%d layers back to back (plans %s, %s; plain calls between), "
           "no synchronisation: the bits of the synchronised chain%s%s", L,
           fb_plan_path(plan[0], m), fb_plan_path(plan[1], m),
           diag[0] ? ": " : "", diag);
    (void)fb_set_cuda_stream(h, NULL);
    CK(cudaStreamDestroy(s));
    for (int l = 0; l < L; l++) {
        fb_plan_destroy(plan[l]);
        for (int j = 0; j < (l % 2 == 0 ? 3 : 1); j++)
            tmem_cuda.release(w[l][j]);
        free(want[l]);
    }
    tmem_cuda.release(x0), tmem_cuda.release(buf[0]);
    tmem_cuda.release(buf[1]);
    free(hbuf), free(got);
}

int main(void)
{
    tap_begin("test_gpu_plan");
    if (cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs", name, sms);
    fb_handle fused = handle_on(FB_BACKEND_CUDA_FUSED);
    fb_handle lt = handle_on(FB_BACKEND_CUDA_LT);
    fb_handle rule = handle_on(FB_BACKEND_CUDA);
    fb_handle autoh = handle_on(FB_BACKEND_AUTO);
    plan_check_bad_args(fused, &tmem_cuda);
    wrong_memory(autoh);
    families(fused, lt, rule, autoh);
    capture(fused, 1, FB_DTYPE_BF16, 65536, 64, 256, 64, "tiny mlp bf16");
    capture(fused, 1, FB_DTYPE_BF16, 16, 768, 3072, 768, "decode mlp bf16");
    capture(fused, 0, FB_DTYPE_BF16, 4, 1024, 2048, 1, "decode gemm bf16");
    capture(fused, 1, FB_DTYPE_F16, 1024, 768, 3072, 768,
            "prefill mlp f16");
    chain(fused);
    fb_destroy(fused), fb_destroy(lt), fb_destroy(rule), fb_destroy(autoh);
    return tap_end();
}
