/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_fp8.c -- gemm_e4m3_bias_act and mlp_geglu_forward_e4m3 on the
 * GPU: the sweeps of fp8_check.h with device memory on cuda-fused, cuda
 * and auto, against the oracle of the dequantised weights (bit for bit on
 * the exact data, else the tensor-core bound for 16-bit data and the fp32
 * bound for fp32); the bad-argument positions are the CPU's (the checks
 * come first, test_fp8); host operands on a named GPU backend and the
 * cuda-lt backend are FB_STATUS_NOT_SUPPORTED; each kernel family runs
 * where the pages say, and replays from a CUDA graph with the direct
 * call's bits.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is none.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_mem.h"
#include "fp8_check.h"

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess)                                                 \
            tap_bail("%s: %s", #x, cudaGetErrorString(e_));                    \
    } while (0)

/* n random bytes that are e4m3 values (no NaN), or values of t, put in
 * device memory. */
static void *dev_random(fb_dtype t, int e4m3, int64_t n)
{
    const size_t es = e4m3 ? 1 : dt_size(t);
    unsigned char *h = malloc((size_t)n * es);
    void *d = NULL;
    if (h == NULL)
        tap_bail("out of host memory");
    for (int64_t i = 0; i < n; i++) {
        if (e4m3)
            h[i] = (unsigned char)(rng_below(0x7f) | (rng_below(2) << 7));
        else
            dt_set(t, h, i, rng_value(t));
    }
    CK(cudaMalloc(&d, (size_t)n * es));
    CK(cudaMemcpy(d, h, (size_t)n * es, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void *dev_scales(int64_t n)
{
    float *h = malloc((size_t)n * sizeof *h);
    void *d = NULL;
    if (h == NULL)
        tap_bail("out of host memory");
    for (int64_t i = 0; i < n; i++)
        h[i] = (float)((0.5 + rng_unit()) / 256);
    CK(cudaMalloc(&d, (size_t)n * sizeof *h));
    CK(cudaMemcpy(d, h, (size_t)n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* One e4m3 call of each GPU kernel family captured in a CUDA graph on the
 * handle's stream after a warm-up call, replayed, and compared bit for bit
 * with a direct call (fusedblas(3): the warm-up rule). */
static void graph_capture(void)
{
    static const struct {
        int mlp;
        fb_dtype dt;
        int64_t m, k, h, n;
        const char *what;
    } cases[] = {{0, FB_DTYPE_BF16, 4, 1024, 0, 2048, "decode gemm bf16"},
                 {0, FB_DTYPE_F16, 200, 512, 0, 768, "wgmma gemm f16"},
                 {0, FB_DTYPE_BF16, 256, 512, 0, 768, "engine-prefill gemm bf16"},
                 {1, FB_DTYPE_BF16, 200, 256, 512, 128, "wgmma mlp bf16"},
                 {0, FB_DTYPE_F32, 40, 96, 0, 72, "tiled gemm f32"},
                 {1, FB_DTYPE_BF16, 1, 1024, 2048, 512, "decode mlp bf16"},
                 {1, FB_DTYPE_F16, 40, 256, 512, 256, "mid mlp f16"},
                 {0, FB_DTYPE_BF16, 24, 512, 0, 1040, "decode-32 gemm bf16"},
                 {1, FB_DTYPE_F16, 96, 256, 512, 256, "mid mlp f16"},
                 {0, FB_DTYPE_BF16, 100, 512, 0, 1040, "mid gemm bf16"},
                 {1, FB_DTYPE_BF16, 600, 256, 512, 256, "engine-prefill mlp bf16"}};
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fb_dtype dt = cases[c].dt;
        const int64_t m = cases[c].m, k = cases[c].k, h = cases[c].h,
                      n = cases[c].n;
        const size_t ybytes = (size_t)(m * n) * dt_size(dt);
        void *x = dev_random(dt, 0, m * k), *y[2] = {NULL, NULL};
        void *w[3], *s[3], *b = dev_random(dt, 0, h > n ? h : n);
        const int64_t rows[3] = {cases[c].mlp ? h : n, h, n};
        const int64_t cols[3] = {k, k, h};
        for (int i = 0; i < 3; i++) {
            w[i] = dev_random(dt, 1,
                              rows[i] * cols[i] > 0 ? rows[i] * cols[i] : 1);
            s[i] = dev_scales(rows[i] > 0 ? rows[i] : 1);
        }
        CK(cudaMalloc(&y[0], ybytes));
        CK(cudaMalloc(&y[1], ybytes));
        fb_handle hd = handle_on(FB_BACKEND_CUDA);
        if (fb_set_cuda_stream(hd, (void *)stream) != FB_STATUS_SUCCESS)
            tap_bail("fb_set_cuda_stream");
        fb_status st[3];
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        for (int pass = 0; pass < 3; pass++) {
            /* 0: the direct call into y[1] (also the warm-up); 1: the
             * captured one into y[0]; 2: nothing, the replay follows */
            if (pass == 1)
                CK(cudaStreamBeginCapture(stream,
                                          cudaStreamCaptureModeGlobal));
            if (pass < 2) {
                void *out = y[pass == 0 ? 1 : 0];
                st[pass] = cases[c].mlp
                    ? mlp_geglu_forward_e4m3(hd, dt, FB_ACT_SILU, m, k, h, n,
                                             x, k, w[0], s[0], b, w[1], s[1],
                                             b, w[2], s[2], b, out, n)
                    : gemm_e4m3_bias_act(hd, dt, FB_ROW_MAJOR, FB_NO_TRANS,
                                         FB_TRANS, m, n, k, 1.0f, x, k, w[0],
                                         k, s[0], 0.0f, out, n, b,
                                         FB_ACT_GELU_TANH);
            }
            if (pass == 1) {
                CK(cudaStreamEndCapture(stream, &graph));
                CK(cudaGraphInstantiate(&exec, graph, 0));
            }
        }
        CK(cudaMemsetAsync(y[0], 0xff, ybytes, stream));
        CK(cudaGraphLaunch(exec, stream));
        CK(cudaStreamSynchronize(stream));
        unsigned char *a = malloc(ybytes), *bb = malloc(ybytes);
        if (a == NULL || bb == NULL)
            tap_bail("out of host memory");
        CK(cudaMemcpy(a, y[0], ybytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(bb, y[1], ybytes, cudaMemcpyDeviceToHost));
        tap_ok(st[0] == FB_STATUS_SUCCESS && st[1] == FB_STATUS_SUCCESS &&
                   memcmp(a, bb, ybytes) == 0,
               "graph: e4m3 %s m=%lld captured and replayed, the direct "
               "call's bits (%s, %s) [%s]",
               cases[c].what, (long long)m, fb_status_string(st[0]),
               fb_status_string(st[1]), fb_handle_last_path(hd));
        free(a), free(bb);
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
        fb_destroy(hd);
        CK(cudaFree(x));
        CK(cudaFree(b));
        CK(cudaFree(y[0]));
        CK(cudaFree(y[1]));
        for (int i = 0; i < 3; i++) {
            CK(cudaFree(w[i]));
            CK(cudaFree(s[i]));
        }
    }
    CK(cudaStreamDestroy(stream));
}

static fp8_target device_target(const char *name, fb_backend b)
{
    fp8_target t = {name, handle_on(b), &tmem_cuda, ARITH_FP32, ARITH_TENSOR,
                    1};
    return t;
}

/* Host operands on a GPU backend, and cuda-lt: refused, nothing run. */
static void not_supported(void)
{
    static float x[16], c[16], s[4];
    static fb_e4m3 w[16];
    fb_handle h = handle_on(FB_BACKEND_CUDA_FUSED);
    fb_status st = gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR,
                                      FB_NO_TRANS, FB_TRANS, 4, 4, 4, 1.0f, x,
                                      4, w, 4, s, 0.0f, c, 4, NULL,
                                      FB_ACT_NONE);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED,
           "cuda-fused: e4m3 gemm on host memory is not supported (%s: %s)",
           fb_status_string(st), fb_handle_last_message(h));
    fb_destroy(h);
    h = handle_on(FB_BACKEND_CUDA_LT);
    void *dx = tmem_cuda.alloc(64), *dw = tmem_cuda.alloc(16),
         *ds = tmem_cuda.alloc(16), *dc = tmem_cuda.alloc(64);
    st = gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 4, 4, 4, 1.0f, dx, 4, dw, 4, ds, 0.0f,
                            dc, 4, NULL, FB_ACT_NONE);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED,
           "cuda-lt: no e4m3 path, not supported (%s)",
           fb_status_string(st));
    tmem_cuda.release(dx), tmem_cuda.release(dw), tmem_cuda.release(ds);
    tmem_cuda.release(dc);
    fb_destroy(h);
}

int main(void)
{
    tap_begin("test_gpu_fp8");
    if (fb_backend_available(FB_BACKEND_CUDA_FUSED) != FB_STATUS_SUCCESS ||
        cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs", name, sms);
    fp8_target t[3] = {device_target("cuda-fused", FB_BACKEND_CUDA_FUSED),
                       device_target("cuda", FB_BACKEND_CUDA),
                       device_target("auto", FB_BACKEND_AUTO)};
    for (int i = 0; i < 3; i++) {
        fp8_sweep_gemm(&t[i]);
        fp8_sweep_mlp(&t[i]);
    }
    /* Each GPU kernel family is what runs where the pages say. */
    static const struct {
        fb_dtype dt;
        fb_transpose tb;
        int64_t m, n, k, pad;
        const char *path;
    } paths[] = {
        {FB_DTYPE_BF16, FB_TRANS, 1, 40, 256, 0, "e4m3-decode-mma"},
        {FB_DTYPE_F16, FB_TRANS, 16, 24, 64, 0, "e4m3-decode-mma"},
        {FB_DTYPE_BF16, FB_TRANS, 4, 24, 40, 0, "e4m3-tiled-fp32"}, /* ldb 40 */
        {FB_DTYPE_F32, FB_TRANS, 2, 24, 64, 0, "e4m3-tiled-fp32"},
        {FB_DTYPE_BF16, FB_TRANS, 17, 72, 128, 0, "e4m3-decode-mma-32"},
        {FB_DTYPE_F16, FB_TRANS, 32, 70, 48, 0, "e4m3-decode-mma-32"},
        {FB_DTYPE_BF16, FB_TRANS, 33, 37, 80, 0, "e4m3-decode-mma-64"},
        {FB_DTYPE_F16, FB_TRANS, 64, 24, 208, 0, "e4m3-decode-mma-64"},
        {FB_DTYPE_BF16, FB_TRANS, 40, 24, 40, 0,
         "e4m3-lt-prefill/widen-strided"}, /* ldb 40: not the decode's */
        /* the mid kernel to 192 rows (from 17 where n >= 8192 and
         * k <= n, from 33 where k <= n, from 65 otherwise), ragged k and
         * n */
        {FB_DTYPE_BF16, FB_TRANS, 24, 8200, 96, 0, "e4m3-mid-mma"},
        {FB_DTYPE_BF16, FB_TRANS, 33, 300, 200, 8, "e4m3-mid-mma"},
        {FB_DTYPE_F16, FB_TRANS, 48, 515, 130, 14, "e4m3-mid-mma"},
        {FB_DTYPE_BF16, FB_TRANS, 65, 72, 128, 0, "e4m3-mid-mma"},
        {FB_DTYPE_F16, FB_TRANS, 97, 70, 48, 0, "e4m3-mid-mma"},
        /* from 128 rows where the wgmma kernel below does not take the
         * call (k 100: not a multiple of 8) */
        {FB_DTYPE_F16, FB_TRANS, 160, 72, 100, 12, "e4m3-mid-mma"},
        {FB_DTYPE_BF16, FB_TRANS, 65, 37, 40, 0,
         "e4m3-lt-prefill/widen-strided"}, /* ldb 40 */
        {FB_DTYPE_F16, FB_NO_TRANS, 100, 72, 96, 0,
         "e4m3-lt-prefill/widen-strided"},
        /* up to 192 rows, where the wgmma kernel's grid would not fill
         * the GPU even with k split (few weight tiles, short k), the mid
         * kernel */
        {FB_DTYPE_BF16, FB_TRANS, 128, 72, 128, 0, "e4m3-mid-mma"},
        {FB_DTYPE_F16, FB_TRANS, 192, 1000, 1000, 8, "e4m3-wgmma/k-split4"},
        /* from 128 to 384 rows the e4m3 wgmma kernel where its tensor
         * maps read the operands in place (ragged m, n and k, padded
         * rows); up to 192 rows only where its grid fills the GPU; few
         * weight tiles and a long k split k over a cluster (token tiles
         * of 64, and of 128 from 129 rows where k >= 8192) */
        {FB_DTYPE_BF16, FB_TRANS, 128, 1024, 4096, 0, "e4m3-wgmma/k-split8"},
        {FB_DTYPE_F16, FB_TRANS, 192, 520, 2048, 16, "e4m3-wgmma/k-split8"},
        {FB_DTYPE_BF16, FB_TRANS, 160, 1024, 8208, 0, "e4m3-wgmma/k-split8"},
        {FB_DTYPE_F16, FB_TRANS, 144, 2048, 2048, 0, "e4m3-wgmma/k-split4"},
        {FB_DTYPE_BF16, FB_TRANS, 128, 6000, 64, 0, "e4m3-wgmma"},
        {FB_DTYPE_F16, FB_TRANS, 192, 4000, 96, 16, "e4m3-wgmma"},
        {FB_DTYPE_BF16, FB_TRANS, 384, 72, 128, 0, "e4m3-wgmma"},
        {FB_DTYPE_BF16, FB_TRANS, 193, 72, 128, 0, "e4m3-wgmma"},
        {FB_DTYPE_F16, FB_TRANS, 255, 264, 96, 0, "e4m3-wgmma"},
        {FB_DTYPE_BF16, FB_TRANS, 200, 200, 136, 8, "e4m3-wgmma"},
        {FB_DTYPE_F16, FB_TRANS, 233, 1000, 1000, 8, "e4m3-wgmma"},
        {FB_DTYPE_BF16, FB_TRANS, 250, 130, 1000, 8, "e4m3-wgmma"},
        /* else the GEMM engine on widened weights, the outputs finished
         * in its epilogue (weight rows not a multiple of 16 bytes, or
         * more than 384 rows) */
        {FB_DTYPE_F16, FB_TRANS, 128, 72, 136, 0,
         "e4m3-engine-prefill/widen-strided"},
        {FB_DTYPE_F16, FB_TRANS, 385, 264, 96, 0,
         "e4m3-engine-prefill/widen16"},
        {FB_DTYPE_BF16, FB_TRANS, 777, 200, 136, 8,
         "e4m3-engine-prefill/widen-strided"},
        {FB_DTYPE_BF16, FB_TRANS, 200, 37, 40, 0,
         "e4m3-engine-prefill/widen-strided"}, /* k 40 */
        {FB_DTYPE_F16, FB_NO_TRANS, 150, 72, 96, 0,
         "e4m3-engine-prefill/widen-strided"},
        {FB_DTYPE_BF16, FB_TRANS, 130, 72, 100, 0,
         "e4m3-lt-prefill/widen-strided"}}; /* ldb 100: not the engine's */
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        fp8_gemm_case(&t[0], paths[i].dt, FB_ROW_MAJOR, FB_NO_TRANS,
                      paths[i].tb, paths[i].m, paths[i].n, paths[i].k, 1.0f,
                      0.0f, 1, FB_ACT_GELU_TANH, 0, paths[i].pad);
        const char *ran = fb_handle_last_path(t[0].handle);
        tap_ok(strstr(ran, paths[i].path) != NULL,
               "cuda-fused: %s m=%lld n=%lld k=%lld ran %s (want %s)",
               dt_name(paths[i].dt), (long long)paths[i].m,
               (long long)paths[i].n, (long long)paths[i].k, ran,
               paths[i].path);
    }
    /* The MLP: from 128 to 768 rows the e4m3 wgmma kernel (gate and up
     * as one dual GEMM; the down projection where its weight rows are
     * 16-byte units), up to 192 rows only where its grid fills the GPU;
     * else gate and up on the mid kernel by the gemm's rule for 2h
     * outputs, the decode kernel up to 64 rows and the engine from 128;
     * the down projection by the gemm's rule. */
    static const struct {
        int64_t m, k, h, n;
        const char *path;
    } mid[] = {{17, 48, 80, 40, "gate-up-decode-mma+decode-mma-32"},
               {32, 64, 144, 24, "gate-up-decode-mma+decode-mma-32"},
               {33, 96, 176, 56, "gate-up-mid-mma+decode-mma-64"},
               {64, 112, 64, 72, "gate-up-mid-mma+mid-mma"},
               {24, 64, 4112, 40, "gate-up-mid-mma+decode-mma-32"},
               {65, 48, 80, 40, "gate-up-mid-mma+mid-mma"},
               {50, 160, 320, 96, "gate-up-mid-mma+decode-mma-64"},
               {100, 208, 300, 136, "gate-up-mid-mma+lt-prefill/widen-strided"},
               {127, 64, 1008, 200, "gate-up-mid-mma+mid-mma"},
               {130, 48, 80, 40, "gate-up-mid-mma+mid-mma"},
               {160, 64, 2608, 40, "gate-up-wgmma+mid-mma"},
               {200, 64, 160, 48, "gate-up-wgmma+wgmma"},
               {160, 64, 2048, 512, "gate-up-wgmma+wgmma/k-split8"},
               {150, 2048, 256, 64, "gate-up-wgmma+"},
               {131, 40, 72, 24,
                "gate-up-engine-prefill+engine-prefill/widen-strided"},
               {300, 256, 1008, 200, "gate-up-wgmma+wgmma"},
               {512, 128, 208, 136, "gate-up-wgmma+wgmma"},
               {250, 64, 136, 72,
                "gate-up-wgmma+engine-prefill/widen-strided"},
               {513, 48, 80, 40, "gate-up-wgmma+wgmma"},
               /* gate and up at BN 256, channel tiles in pairs */
               {700, 64, 8192, 40, "gate-up-wgmma+wgmma"},
               {768, 48, 80, 40, "gate-up-wgmma+wgmma"},
               {769, 48, 80, 40,
                "gate-up-engine-prefill+engine-prefill/widen16"}};
    for (size_t i = 0; i < sizeof mid / sizeof mid[0]; i++) {
        fp8_mlp_case(&t[0], i % 2 ? FB_DTYPE_F16 : FB_DTYPE_BF16,
                     FB_ACT_SILU, mid[i].m, mid[i].k, mid[i].h, mid[i].n, 1,
                     0, 0);
        const char *ran = fb_handle_last_path(t[0].handle);
        tap_ok(strstr(ran, mid[i].path) != NULL,
               "cuda-fused: mlp m=%lld k=%lld h=%lld n=%lld ran %s (want %s)",
               (long long)mid[i].m, (long long)mid[i].k, (long long)mid[i].h,
               (long long)mid[i].n, ran, mid[i].path);
    }
    /* The wgmma kernel with beta C read (integer data, bit for bit), and
     * at the goal's k with a ragged n; the engine with beta at 300 rows. */
    fp8_gemm_case(&t[0], FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  160, 96, 64, 2.0f, 0.5f, 1, FB_ACT_RELU, 1, 0);
    fp8_gemm_case(&t[0], FB_DTYPE_F16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  129, 1100, 4096, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, 0);
    fp8_gemm_case(&t[0], FB_DTYPE_F16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  200, 136, 272, 0.5f, -1.0f, 1, FB_ACT_NONE, 1, 16);
    fp8_gemm_case(&t[0], FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  300, 96, 64, 2.0f, 0.5f, 1, FB_ACT_RELU, 1, 0);
    /* 64 rows at the goal's k on the decode kernel, ragged n. */
    fp8_gemm_case(&t[0], FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  64, 1100, 4096, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, 0);
    /* The mid kernel with alpha, beta C, no bias, each activation, both
     * types, on random and on exact data (bit for bit whatever the k
     * split's order), and at the goal's k (a k split over a cluster). */
    static const struct {
        fb_dtype dt;
        int64_t m, n, k, pad;
        float alpha, beta;
        int bias, exact;
        fb_activation act;
    } midc[] = {
        {FB_DTYPE_F16, 100, 300, 520, 8, 2.0f, 0.5f, 0, 0, FB_ACT_RELU},
        {FB_DTYPE_BF16, 70, 257, 136, 8, 1.0f, 1.0f, 1, 0, FB_ACT_SILU},
        {FB_DTYPE_BF16, 40, 600, 333, 3, 0.5f, 0.0f, 1, 0, FB_ACT_GELU_ERF},
        /* k not a multiple of 8 from 128 rows: the wgmma kernel's first */
        {FB_DTYPE_F16, 150, 90, 60, 4, 1.0f, 0.0f, 1, 0, FB_ACT_NONE},
        {FB_DTYPE_BF16, 81, 333, 272, 0, 1.0f, 0.5f, 1, 1, FB_ACT_RELU},
        {FB_DTYPE_F16, 190, 130, 204, 4, 1.0f, 0.0f, 0, 1, FB_ACT_NONE},
        {FB_DTYPE_BF16, 100, 1100, 4096, 0, 1.0f, 0.0f, 1, 0,
         FB_ACT_GELU_TANH}};
    for (size_t i = 0; i < sizeof midc / sizeof midc[0]; i++) {
        fp8_gemm_case(&t[0], midc[i].dt, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                      midc[i].m, midc[i].n, midc[i].k, midc[i].alpha,
                      midc[i].beta, midc[i].bias, midc[i].act, midc[i].exact,
                      midc[i].pad);
        const char *ran = fb_handle_last_path(t[0].handle);
        tap_ok(strstr(ran, "e4m3-mid-mma") != NULL,
               "cuda-fused: mid %s m=%lld n=%lld k=%lld ran %s",
               dt_name(midc[i].dt), (long long)midc[i].m,
               (long long)midc[i].n, (long long)midc[i].k, ran);
    }
    /* The MLP's mid gate-and-up with and without biases, each gate. */
    fp8_mlp_case(&t[0], FB_DTYPE_BF16, FB_ACT_GELU_TANH, 90, 144, 520, 72, 0,
                 0, 0);
    fp8_mlp_case(&t[0], FB_DTYPE_F16, FB_ACT_RELU, 45, 64, 264, 300, 1, 1, 0);
    fp8_mlp_case(&t[0], FB_DTYPE_BF16, FB_ACT_GELU_ERF, 120, 96, 136, 56, 1,
                 0, 8);
    /* Decode at the goal's widths, one case each (the oracle is slow). */
    fp8_mlp_case(&t[0], FB_DTYPE_BF16, FB_ACT_SILU, 1, 4096, 11008, 4096, 0,
                 0, 0);
    fp8_gemm_case(&t[0], FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  16, 11008, 4096, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, 0);
    not_supported();
    graph_capture();
    for (int i = 0; i < 3; i++)
        fb_destroy(t[i].handle);
    return tap_end();
}
