/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_faults.c -- the GPU backends at their limits and after faults.
 *
 *  1. Outputs of more than 2^31 elements (32-bit index overflow): an sgemm
 *     on cuda-lt (row-major, padded ldc), an hgemm on cuda (column-major,
 *     padded ldc) and an fp16 MLP on cuda (whichever path the shape rule
 *     takes). Every element is read back and checked, the padding too.
 *  2. Device allocation failure: an MLP whose intermediates no device can
 *     hold, and, with device memory filled by cudaMalloc, an sgemm on host
 *     data (which is staged), return FB_STATUS_ALLOC_FAILED, write nothing
 *     and leave no CUDA error pending; the same handle then runs a call
 *     that fits, and (memory freed) the same sgemm, correctly.
 *  3. An error does not poison the next call: a bad argument, a shape the
 *     fused kernels decline (FB_STATUS_NOT_SUPPORTED), a device pointer
 *     given to the CPU backend, each followed by a correct call.
 *  4. The user's stream is respected: with the stream held by a host
 *     function that waits to be released, a call on device data returns
 *     while its work is still queued (no hidden device-wide or stream
 *     synchronisation), has written nothing yet (its work is on that
 *     stream, not another), and is right after cudaStreamSynchronize.
 *
 * Prints "1..0 # SKIP ..." where there is no CUDA device. With
 * FB_TEST_QUICK=1 (the compute-sanitizer runs of scripts/gpu-check.sh)
 * only part 3 runs: parts 1 and 2 need ~10 GB and fill device memory,
 * and the sanitizer may make launches wait for their kernels, which part 4
 * would rightly call a hidden synchronisation. Part 1 needs about 10 GB of
 * free device memory; with less, each of its checks is a skip.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "harness.h"
#include "oracle.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

static int quick(void)
{
    const char *q = getenv("FB_TEST_QUICK");
    return q != NULL && *q != '\0' && *q != '0';
}

/* The test's own CUDA calls: a failure is the machinery's, not the
 * library's (unless a library call left the device broken: the message
 * says which call noticed). */
#define CK(call)                                                              \
    do {                                                                      \
        const cudaError_t e_ = (call);                                        \
        if (e_ != cudaSuccess)                                                \
            tap_bail("%s:%d: %s: %s", __FILE__, __LINE__, #call,              \
                     cudaGetErrorString(e_));                                 \
    } while (0)

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    return p;
}

/* NULL (and the error cleared) if the device has not that much. */
static void *dev_try_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

static size_t dev_free_bytes(void)
{
    size_t free_b = 0, total = 0;
    CK(cudaMemGetInfo(&free_b, &total));
    return free_b;
}

static void put(void *dst, const void *src, size_t bytes)
{
    CK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

static void get(void *dst, const void *src, size_t bytes)
{
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL)
        tap_bail("out of host memory (%zu bytes)", bytes);
    return p;
}

/* No CUDA error may be left pending by a library call: the user's next
 * cudaGetLastError() would see it. */
static int no_pending_error(const char **what)
{
    const cudaError_t e = cudaPeekAtLastError();
    *what = cudaGetErrorString(e);
    return e == cudaSuccess;
}

/* Small exact integers, never all zero: products and sums of a few of
 * them are exact in every type, so huge outputs are checked exactly. */
static int small_int(int64_t i, int salt, int span)
{
    const int v = (int)((i * 7 + salt * 3) % (2 * span + 1)) - span;
    return v != 0 ? v : span;
}

/* ---- 1. more than 2^31 output elements ------------------------------------ */

static void huge_sgemm_lt(void)
{
    const int64_t m = 65536, n = 32769, k = 2, ldc = n + 1;
    const size_t cbytes = (size_t)(m * ldc) * sizeof(float);
    const char *what = "sgemm on cuda-lt, row-major, 65536 x 32769 "
                       "(2147549184 elements > 2^31), ldc = n + 1";
    if (dev_free_bytes() < cbytes + 512 * MiB) {
        tap_skip("%s: needs %.1f GB of free device memory, %.1f free", what,
                 (double)cbytes / 1e9, (double)dev_free_bytes() / 1e9);
        return;
    }
    float *A = host_alloc((size_t)(m * k) * sizeof *A);
    float *B = host_alloc((size_t)(k * n) * sizeof *B);
    float *bias = host_alloc((size_t)n * sizeof *bias);
    for (int64_t i = 0; i < m * k; i++)
        A[i] = (float)small_int(i, 1, 6);
    for (int64_t i = 0; i < k * n; i++)
        B[i] = (float)small_int(i, 2, 6);
    for (int64_t j = 0; j < n; j++)
        bias[j] = (float)small_int(j, 3, 4);
    float *dA = dev_alloc((size_t)(m * k) * sizeof *dA);
    float *dB = dev_alloc((size_t)(k * n) * sizeof *dB);
    float *dbias = dev_alloc((size_t)n * sizeof *dbias);
    float *dC = dev_try_alloc(cbytes);
    if (dC == NULL) {
        tap_skip("%s: cudaMalloc of %.1f GB failed", what,
                 (double)cbytes / 1e9);
        CK(cudaFree(dA));
        CK(cudaFree(dB));
        CK(cudaFree(dbias));
        free(A), free(B), free(bias);
        return;
    }
    put(dA, A, (size_t)(m * k) * sizeof *dA);
    put(dB, B, (size_t)(k * n) * sizeof *dB);
    put(dbias, bias, (size_t)n * sizeof *dbias);
    CK(cudaMemset(dC, 0xff, cbytes)); /* a NaN in every element */

    fb_handle h = handle_on(FB_BACKEND_CUDA_LT);
    const fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS,
                                        FB_NO_TRANS, m, n, k, 2.0f, dA, k, dB,
                                        n, 0.0f, dC, ldc, dbias, FB_ACT_RELU);
    char path[128];
    snprintf(path, sizeof path, "%s", fb_handle_last_path(h));

    /* C(i,j) = relu(2 (a_i0 b_0j + a_i1 b_1j) + bias_j), exact. The
     * padding column stays 0xffffffff. Read back 2048 rows at a time. */
    int64_t wrong = 0, first_i = -1, first_j = -1;
    float first_got = 0, first_want = 0;
    const int64_t rows = 2048;
    float *buf = host_alloc((size_t)(rows * ldc) * sizeof *buf);
    for (int64_t r0 = 0; st == FB_STATUS_SUCCESS && r0 < m; r0 += rows) {
        const int64_t nr = m - r0 < rows ? m - r0 : rows;
        get(buf, dC + r0 * ldc, (size_t)(nr * ldc) * sizeof *buf);
        for (int64_t r = 0; r < nr; r++) {
            const int64_t i = r0 + r;
            const float a0 = A[i * k], a1 = A[i * k + 1];
            const float *row = buf + r * ldc;
            for (int64_t j = 0; j < n; j++) {
                float want = 2.0f * (a0 * B[j] + a1 * B[n + j]) + bias[j];
                want = want > 0.0f ? want : 0.0f;
                if (row[j] != want && wrong++ == 0)
                    first_i = i, first_j = j, first_got = row[j],
                    first_want = want;
            }
            uint32_t pad;
            memcpy(&pad, &row[n], sizeof pad);
            if (pad != 0xffffffffu && wrong++ == 0)
                first_i = i, first_j = n, first_got = row[n], first_want = NAN;
        }
    }
    if (wrong > 0)
        tap_diag("first wrong element (%lld, %lld): got %g, want %g",
                 (long long)first_i, (long long)first_j, (double)first_got,
                 (double)first_want);
    tap_ok(st == FB_STATUS_SUCCESS && wrong == 0,
           "%s: %s, every element right and the padding untouched "
           "(%lld wrong; path %s)", what, fb_status_string(st),
           (long long)wrong, path);
    fb_destroy(h);
    free(buf);
    CK(cudaFree(dA));
    CK(cudaFree(dB));
    CK(cudaFree(dbias));
    CK(cudaFree(dC));
    free(A), free(B), free(bias);
}

static void huge_hgemm_cuda(void)
{
    const int64_t m = 32769, n = 65536, k = 2, ldc = m + 1;
    const size_t cbytes = (size_t)(n * ldc) * sizeof(fb_half);
    const char *what = "hgemm on cuda (shape rule), column-major, 32769 x "
                       "65536 (2147549184 elements > 2^31), ldc = m + 1";
    if (dev_free_bytes() < cbytes + 512 * MiB) {
        tap_skip("%s: needs %.1f GB of free device memory, %.1f free", what,
                 (double)cbytes / 1e9, (double)dev_free_bytes() / 1e9);
        return;
    }
    /* Column-major A is m x k (lda = m), B k x n (ldb = k). */
    fb_half *A = host_alloc((size_t)(m * k) * sizeof *A);
    fb_half *B = host_alloc((size_t)(k * n) * sizeof *B);
    fb_half *bias = host_alloc((size_t)n * sizeof *bias);
    int *ai = host_alloc((size_t)(m * k) * sizeof *ai);
    int *bi = host_alloc((size_t)(k * n) * sizeof *bi);
    int *biasi = host_alloc((size_t)n * sizeof *biasi);
    for (int64_t i = 0; i < m * k; i++)
        A[i] = fb_float_to_half((float)(ai[i] = small_int(i, 4, 6)));
    for (int64_t i = 0; i < k * n; i++)
        B[i] = fb_float_to_half((float)(bi[i] = small_int(i, 5, 6)));
    for (int64_t j = 0; j < n; j++)
        bias[j] = fb_float_to_half((float)(biasi[j] = small_int(j, 6, 4)));
    /* Results lie in [-76, 76]: exact in fp16; their bits by table. */
    uint16_t bits_of[161];
    for (int v = -80; v <= 80; v++)
        bits_of[v + 80] = fb_float_to_half((float)v).bits;

    fb_half *dA = dev_alloc((size_t)(m * k) * sizeof *dA);
    fb_half *dB = dev_alloc((size_t)(k * n) * sizeof *dB);
    fb_half *dbias = dev_alloc((size_t)n * sizeof *dbias);
    fb_half *dC = dev_try_alloc(cbytes);
    int64_t wrong = 0, first_i = -1, first_j = -1;
    fb_status st = FB_STATUS_INTERNAL;
    char path[128] = "";
    if (dC != NULL) {
        put(dA, A, (size_t)(m * k) * sizeof *dA);
        put(dB, B, (size_t)(k * n) * sizeof *dB);
        put(dbias, bias, (size_t)n * sizeof *dbias);
        CK(cudaMemset(dC, 0xff, cbytes));
        fb_handle h = handle_on(FB_BACKEND_CUDA);
        st = hgemm_bias_act(h, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, m, n,
                            k, 1.0f, dA, m, dB, k, 0.0f, dC, ldc, dbias,
                            FB_ACT_NONE);
        snprintf(path, sizeof path, "%s", fb_handle_last_path(h));
        fb_destroy(h);
        const int64_t cols = 4096;
        uint16_t *buf = host_alloc((size_t)(cols * ldc) * sizeof *buf);
        for (int64_t c0 = 0; st == FB_STATUS_SUCCESS && c0 < n; c0 += cols) {
            const int64_t nc = n - c0 < cols ? n - c0 : cols;
            get(buf, dC + c0 * ldc, (size_t)(nc * ldc) * sizeof *buf);
            for (int64_t c = 0; c < nc; c++) {
                const int64_t j = c0 + c;
                const int b0 = bi[j * k], b1 = bi[j * k + 1], bj = biasi[j];
                const uint16_t *col = buf + c * ldc;
                for (int64_t i = 0; i < m; i++) {
                    const int want = ai[i] * b0 + ai[m + i] * b1 + bj;
                    if (col[i] != bits_of[want + 80] && wrong++ == 0)
                        first_i = i, first_j = j;
                }
                if (col[m] != 0xffff && wrong++ == 0)
                    first_i = m, first_j = j;
            }
        }
        free(buf);
        CK(cudaFree(dC));
    }
    if (dC == NULL)
        tap_skip("%s: cudaMalloc of %.1f GB failed", what,
                 (double)cbytes / 1e9);
    else
        tap_ok(st == FB_STATUS_SUCCESS && wrong == 0,
               "%s: %s, every element right and the padding untouched "
               "(%lld wrong, first at (%lld, %lld); path %s)",
               what, fb_status_string(st), (long long)wrong,
               (long long)first_i, (long long)first_j, path);
    CK(cudaFree(dA));
    CK(cudaFree(dB));
    CK(cudaFree(dbias));
    free(A), free(B), free(bias), free(ai), free(bi), free(biasi);
}

/* Y of 8388609 x 256 fp16 (2^31 + 256 elements). X repeats 7 rows, so
 * Y's rows repeat them too and the oracle is needed for 7 rows only;
 * every element is judged against its row's oracle value and bound. */
static void huge_mlp_cuda(void)
{
    enum { P = 7 };
    const int64_t m = ((int64_t)1 << 23) + 1, k = 64, h = 64, n = 256;
    const fb_dtype dt = FB_DTYPE_F16;
    const fb_activation act = FB_ACT_GELU_TANH;
    const size_t ybytes = (size_t)(m * n) * 2, xbytes = (size_t)(m * k) * 2;
    const char *what = "fp16 mlp on cuda (shape rule), m = 8388609, "
                       "k = h = 64, n = 256 (2147483904 outputs > 2^31)";
    /* cuda-lt keeps the gate and up intermediates (m x h each, 2 GiB
     * together) in its scratch: room for them too. */
    if (dev_free_bytes() < ybytes + xbytes + 4 * GiB) {
        tap_skip("%s: needs %.1f GB of free device memory, %.1f free", what,
                 (double)(ybytes + xbytes + 4 * GiB) / 1e9,
                 (double)dev_free_bytes() / 1e9);
        return;
    }
    /* The weights and the 7 row patterns, O(1) values. */
    fb_half *w[3], *b[3];
    double *wd[3], *bd[3];
    const int64_t wlen[3] = {h * k, h * k, n * h}, blen[3] = {h, h, n};
    for (int q = 0; q < 3; q++) {
        w[q] = host_alloc((size_t)wlen[q] * 2);
        wd[q] = host_alloc((size_t)wlen[q] * sizeof(double));
        for (int64_t e = 0; e < wlen[q]; e++) {
            dt_set(dt, w[q], e, 0.25 * rng_value(dt));
            wd[q][e] = dt_get(dt, w[q], e);
        }
        b[q] = host_alloc((size_t)blen[q] * 2);
        bd[q] = host_alloc((size_t)blen[q] * sizeof(double));
        for (int64_t e = 0; e < blen[q]; e++) {
            dt_set(dt, b[q], e, rng_value(dt));
            bd[q][e] = dt_get(dt, b[q], e);
        }
    }
    fb_half *pat = host_alloc((size_t)(P * k) * 2);
    double *patd = host_alloc((size_t)(P * k) * sizeof(double));
    for (int64_t e = 0; e < P * k; e++) {
        dt_set(dt, pat, e, rng_value(dt));
        patd[e] = dt_get(dt, pat, e);
    }
    double *Yp = host_alloc((size_t)(P * n) * sizeof(double));
    double *Hp = host_alloc((size_t)(P * h) * sizeof(double));
    double *Bp = host_alloc((size_t)(P * n) * sizeof(double));
    oracle_mlp_geglu(dt, act, P, k, h, n, patd, k, wd[0], bd[0], wd[1], bd[1],
                     wd[2], bd[2], Yp, n, Hp);
    const tol t = tol_make(dt, ARITH_TENSOR);
    tol_mlp(&t, act, P, k, h, n, patd, k, wd[0], bd[0], wd[1], bd[1], wd[2],
            bd[2], Hp, Yp, n, Bp);

    fb_half *X = host_alloc(xbytes);
    for (int64_t i = 0; i < m; i++)
        memcpy(X + i * k, pat + (i % P) * k, (size_t)k * 2);
    void *dX = dev_try_alloc(xbytes), *dY = dev_try_alloc(ybytes);
    void *dw[3], *db[3];
    for (int q = 0; q < 3; q++) {
        dw[q] = dev_alloc((size_t)wlen[q] * 2);
        db[q] = dev_alloc((size_t)blen[q] * 2);
        put(dw[q], w[q], (size_t)wlen[q] * 2);
        put(db[q], b[q], (size_t)blen[q] * 2);
    }
    if (dX == NULL || dY == NULL) {
        tap_skip("%s: cudaMalloc of %.1f GB failed", what,
                 (double)(xbytes + ybytes) / 1e9);
    } else {
        put(dX, X, xbytes);
        CK(cudaMemset(dY, 0xff, ybytes));
        fb_handle hd = handle_on(FB_BACKEND_CUDA);
        const fb_status st = mlp_geglu_forward(hd, dt, act, m, k, h, n, dX, k,
                                               dw[0], db[0], dw[1], db[1],
                                               dw[2], db[2], dY, n);
        char path[128];
        snprintf(path, sizeof path, "%s", fb_handle_last_path(hd));
        fb_destroy(hd);
        /* fp16 bits to double, once. */
        double *val = host_alloc(65536 * sizeof *val);
        for (uint32_t u = 0; u < 65536; u++) {
            const fb_half x = {(uint16_t)u};
            val[u] = dt_get(dt, &x, 0);
        }
        int64_t wrong = 0, first = -1;
        double worst = 0.0;
        const int64_t rows = 1 << 16;
        uint16_t *buf = host_alloc((size_t)(rows * n) * 2);
        for (int64_t r0 = 0; st == FB_STATUS_SUCCESS && r0 < m; r0 += rows) {
            const int64_t nr = m - r0 < rows ? m - r0 : rows;
            get(buf, (char *)dY + (size_t)(r0 * n) * 2, (size_t)(nr * n) * 2);
            /* The 7 references are finite, so judge() comes down to
             * |got - ref| <= bound (NaN fails it): inlined, for 2^31
             * elements. */
            for (int64_t r = 0; r < nr; r++) {
                const int64_t p = (r0 + r) % P;
                for (int64_t c = 0; c < n; c++) {
                    const double err = fabs(val[buf[r * n + c]] - Yp[p * n + c]);
                    const double bound = Bp[p * n + c];
                    if (!(err <= bound) && wrong++ == 0)
                        first = (r0 + r) * n + c;
                    if (err > worst * bound)
                        worst = err / bound;
                }
            }
        }
        free(buf);
        free(val);
        tap_ok(st == FB_STATUS_SUCCESS && wrong == 0,
               "%s: %s, every output within its bound (%lld wrong, first "
               "at element %lld; largest error/bound %.3f; path %s)",
               what, fb_status_string(st), (long long)wrong, (long long)first,
               worst, path);
    }
    if (dX != NULL)
        CK(cudaFree(dX));
    if (dY != NULL)
        CK(cudaFree(dY));
    for (int q = 0; q < 3; q++) {
        CK(cudaFree(dw[q]));
        CK(cudaFree(db[q]));
        free(w[q]), free(wd[q]), free(b[q]), free(bd[q]);
    }
    free(pat), free(patd), free(Yp), free(Hp), free(Bp), free(X);
}

/* ---- operands for the smaller checks ------------------------------------------ */

/* A gemm problem, row-major, on host and device, with its oracle. */
typedef struct gemm_prob {
    fb_dtype dt;
    int64_t m, n, k;
    fb_activation act;
    void *A, *B, *bias, *C;       /* host */
    void *dA, *dB, *dbias, *dC;   /* device (NULL if not made) */
    size_t cbytes;
} gemm_prob;

static void gemm_prob_make(gemm_prob *g, fb_dtype dt, int64_t m, int64_t n,
                           int64_t k, fb_activation act, int on_device)
{
    const size_t es = dt_size(dt);
    memset(g, 0, sizeof *g);
    g->dt = dt, g->m = m, g->n = n, g->k = k, g->act = act;
    g->A = host_alloc((size_t)(m * k) * es);
    g->B = host_alloc((size_t)(k * n) * es);
    g->bias = host_alloc((size_t)n * es);
    g->cbytes = (size_t)(m * n) * es;
    g->C = host_alloc(g->cbytes);
    for (int64_t e = 0; e < m * k; e++)
        dt_set(dt, g->A, e, rng_value(dt));
    for (int64_t e = 0; e < k * n; e++)
        dt_set(dt, g->B, e, rng_value(dt));
    for (int64_t e = 0; e < n; e++)
        dt_set(dt, g->bias, e, rng_value(dt));
    memset(g->C, 0xff, g->cbytes);
    if (on_device) {
        g->dA = dev_alloc((size_t)(m * k) * es);
        g->dB = dev_alloc((size_t)(k * n) * es);
        g->dbias = dev_alloc((size_t)n * es);
        g->dC = dev_alloc(g->cbytes);
        put(g->dA, g->A, (size_t)(m * k) * es);
        put(g->dB, g->B, (size_t)(k * n) * es);
        put(g->dbias, g->bias, (size_t)n * es);
        CK(cudaMemset(g->dC, 0xff, g->cbytes));
    }
}

static void gemm_prob_free(gemm_prob *g)
{
    if (g->dA != NULL) {
        CK(cudaFree(g->dA));
        CK(cudaFree(g->dB));
        CK(cudaFree(g->dbias));
        CK(cudaFree(g->dC));
    }
    free(g->A), free(g->B), free(g->bias), free(g->C);
}

static fb_status gemm_prob_run(const gemm_prob *g, fb_handle h, int device,
                               int64_t lda)
{
    const float alpha = 1.0f, beta = 0.0f;
    const void *A = device ? g->dA : g->A, *B = device ? g->dB : g->B;
    const void *bias = device ? g->dbias : g->bias;
    void *C = device ? g->dC : g->C;
    switch (g->dt) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, g->m,
                              g->n, g->k, alpha, A, lda, B, g->n, beta, C,
                              g->n, bias, g->act);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, g->m,
                              g->n, g->k, alpha, A, lda, B, g->n, beta, C,
                              g->n, bias, g->act);
    case FB_DTYPE_BF16:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, g->m,
                              g->n, g->k, alpha, A, lda, B, g->n, beta, C,
                              g->n, bias, g->act);
    }
    return FB_STATUS_INTERNAL;
}

/* Check rows of a result (host image `got`, row-major m x n) against the
 * oracle: every row when m is small, else 8 rows including the first and
 * the last. Returns the number of wrong elements. */
static int64_t gemm_prob_check(const gemm_prob *g, const void *got,
                               tarith arith)
{
    const int64_t m = g->m, n = g->n, k = g->k;
    double *B = host_alloc((size_t)(k * n) * sizeof *B);
    double *a = host_alloc((size_t)k * sizeof *a);
    double *bias = host_alloc((size_t)n * sizeof *bias);
    double *ref = host_alloc((size_t)n * sizeof *ref);
    double *z = host_alloc((size_t)n * sizeof *z);
    double *gauge = host_alloc((size_t)n * sizeof *gauge);
    for (int64_t e = 0; e < k * n; e++)
        B[e] = dt_get(g->dt, g->B, e);
    for (int64_t e = 0; e < n; e++)
        bias[e] = dt_get(g->dt, g->bias, e);
    const tol t = tol_make(g->dt, arith);
    const int64_t sample[8] = {0, 1, m / 3, m / 2, (2 * m) / 3, m - 3, m - 2,
                               m - 1};
    const int64_t nrows = m <= 8 ? m : 8;
    int64_t wrong = 0;
    for (int64_t s = 0; s < nrows; s++) {
        const int64_t i = m <= 8 ? s : sample[s];
        for (int64_t l = 0; l < k; l++)
            a[l] = dt_get(g->dt, g->A, i * k + l);
        oracle_gemm_bias_act(FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 1, n, k,
                             1.0, a, k, B, n, 0.0, ref, n, bias, g->act);
        oracle_gemm_bias_act(FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 1, n, k,
                             1.0, a, k, B, n, 0.0, z, n, bias, FB_ACT_NONE);
        oracle_gemm_gauge(FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 1, n, k,
                          1.0, a, k, B, n, 0.0, NULL, n, bias, gauge);
        for (int64_t j = 0; j < n; j++) {
            double ratio;
            const double bound = tol_gemm(&t, k, g->act, gauge[j], ref[j]);
            wrong += judge(dt_get(g->dt, got, i * n + j), ref[j], z[j], g->act,
                           bound, &ratio) != 0;
        }
    }
    free(B), free(a), free(bias), free(ref), free(z), free(gauge);
    return wrong;
}

/* An MLP problem on host and device (biases all present). */
typedef struct mlp_prob {
    fb_dtype dt;
    fb_activation act;
    int64_t m, k, h, n;
    void *x, *w[3], *b[3], *y;       /* host: Wg Wu Wd, bg bu bd */
    void *dx, *dw[3], *db[3], *dy;   /* device */
    size_t ybytes;
} mlp_prob;

static void mlp_prob_make(mlp_prob *p, fb_dtype dt, fb_activation act,
                          int64_t m, int64_t k, int64_t h, int64_t n)
{
    const size_t es = dt_size(dt);
    const int64_t wlen[3] = {h * k, h * k, n * h}, blen[3] = {h, h, n};
    memset(p, 0, sizeof *p);
    p->dt = dt, p->act = act, p->m = m, p->k = k, p->h = h, p->n = n;
    p->x = host_alloc((size_t)(m * k) * es);
    for (int64_t e = 0; e < m * k; e++)
        dt_set(dt, p->x, e, rng_value(dt));
    p->dx = dev_alloc((size_t)(m * k) * es);
    put(p->dx, p->x, (size_t)(m * k) * es);
    /* Weights scaled by 1/8 (exact) so that H and Y stay O(1)-ish. */
    for (int q = 0; q < 3; q++) {
        p->w[q] = host_alloc((size_t)wlen[q] * es);
        for (int64_t e = 0; e < wlen[q]; e++)
            dt_set(dt, p->w[q], e, 0.125 * rng_value(dt));
        p->b[q] = host_alloc((size_t)blen[q] * es);
        for (int64_t e = 0; e < blen[q]; e++)
            dt_set(dt, p->b[q], e, rng_value(dt));
        p->dw[q] = dev_alloc((size_t)wlen[q] * es);
        p->db[q] = dev_alloc((size_t)blen[q] * es);
        put(p->dw[q], p->w[q], (size_t)wlen[q] * es);
        put(p->db[q], p->b[q], (size_t)blen[q] * es);
    }
    p->ybytes = (size_t)(m * n) * es;
    p->y = host_alloc(p->ybytes);
    p->dy = dev_alloc(p->ybytes);
    CK(cudaMemset(p->dy, 0xff, p->ybytes));
}

static void mlp_prob_free(mlp_prob *p)
{
    CK(cudaFree(p->dx));
    CK(cudaFree(p->dy));
    free(p->x), free(p->y);
    for (int q = 0; q < 3; q++) {
        CK(cudaFree(p->dw[q]));
        CK(cudaFree(p->db[q]));
        free(p->w[q]), free(p->b[q]);
    }
}

static fb_status mlp_prob_run(const mlp_prob *p, fb_handle h)
{
    return mlp_geglu_forward(h, p->dt, p->act, p->m, p->k, p->h, p->n, p->dx,
                             p->k, p->dw[0], p->db[0], p->dw[1], p->db[1],
                             p->dw[2], p->db[2], p->dy, p->n);
}

/* Check up to 8 rows of Y (host image got) against the oracle and its
 * bound; returns the number of wrong elements. */
static int64_t mlp_prob_check(const mlp_prob *p, const void *got)
{
    const int64_t m = p->m, k = p->k, h = p->h, n = p->n;
    const int64_t wlen[3] = {h * k, h * k, n * h}, blen[3] = {h, h, n};
    double *w[3], *b[3];
    for (int q = 0; q < 3; q++) {
        w[q] = host_alloc((size_t)wlen[q] * sizeof(double));
        b[q] = host_alloc((size_t)blen[q] * sizeof(double));
        for (int64_t e = 0; e < wlen[q]; e++)
            w[q][e] = dt_get(p->dt, p->w[q], e);
        for (int64_t e = 0; e < blen[q]; e++)
            b[q][e] = dt_get(p->dt, p->b[q], e);
    }
    double *x = host_alloc((size_t)k * sizeof *x);
    double *y = host_alloc((size_t)n * sizeof *y);
    double *hh = host_alloc((size_t)h * sizeof *hh);
    double *bound = host_alloc((size_t)n * sizeof *bound);
    const tol t = tol_make(p->dt, p->dt == FB_DTYPE_F32 ? ARITH_FP32
                                                       : ARITH_TENSOR);
    const int64_t sample[8] = {0, 1, m / 3, m / 2, (2 * m) / 3, m - 3, m - 2,
                               m - 1};
    const int64_t nrows = m <= 8 ? m : 8;
    int64_t wrong = 0;
    for (int64_t s = 0; s < nrows; s++) {
        const int64_t i = m <= 8 ? s : sample[s];
        for (int64_t l = 0; l < k; l++)
            x[l] = dt_get(p->dt, p->x, i * k + l);
        oracle_mlp_geglu(p->dt, p->act, 1, k, h, n, x, k, w[0], b[0], w[1],
                         b[1], w[2], b[2], y, n, hh);
        tol_mlp(&t, p->act, 1, k, h, n, x, k, w[0], b[0], w[1], b[1], w[2],
                b[2], hh, y, n, bound);
        for (int64_t c = 0; c < n; c++) {
            double ratio;
            wrong += judge(dt_get(p->dt, got, i * n + c), y[c], y[c],
                           FB_ACT_NONE, bound[c], &ratio) != 0;
        }
    }
    for (int q = 0; q < 3; q++)
        free(w[q]), free(b[q]);
    free(x), free(y), free(hh), free(bound);
    return wrong;
}

/* Every byte 0xff: nothing was written. */
static int all_poison(const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        if (c[i] != 0xff)
            return 0;
    return 1;
}

/* ---- 2. device allocation failure ------------------------------------------------ */

/* cudaMalloc until less than `leave` bytes are free. */
typedef struct filler {
    void *block[4096];
    int n;
} filler;

static void fill_device(filler *f, size_t leave)
{
    f->n = 0;
    size_t chunk = 1 * GiB;
    while (f->n < 4096 && chunk >= MiB) {
        const size_t free_b = dev_free_bytes();
        if (free_b < leave + chunk) {
            chunk /= 2;
            continue;
        }
        void *p = dev_try_alloc(chunk);
        if (p == NULL) {
            chunk /= 2;
            continue;
        }
        f->block[f->n++] = p;
    }
}

static void drain_device(filler *f)
{
    for (int i = 0; i < f->n; i++)
        CK(cudaFree(f->block[i]));
    f->n = 0;
}

/* What a failed allocation must leave behind: the status, nothing
 * written, no CUDA error pending. */
typedef struct failed_call {
    fb_status st;
    int untouched, clean;
    const char *pending;
    char message[256];
} failed_call;

static int failed_cleanly(const failed_call *f)
{
    return f->st == FB_STATUS_ALLOC_FAILED && f->untouched && f->clean;
}

static void alloc_failure(void)
{
    fb_handle h = handle_on(FB_BACKEND_CUDA_LT);

    /* A: a bf16 MLP on device data whose gate and up intermediates
     * (2 x 2^20 x 2^16 x 2 bytes = 256 GiB) no device holds; the operands
     * themselves are small (300 MB). Nothing else on the device is
     * disturbed. A path that cut the work to fit would succeed instead:
     * then its result must be right. */
    mlp_prob big, fits;
    mlp_prob_make(&big, FB_DTYPE_BF16, FB_ACT_GELU_TANH, (int64_t)1 << 20, 64,
                  (int64_t)1 << 16, 64);
    failed_call a = {mlp_prob_run(&big, h), 0, 0, "", ""};
    a.clean = no_pending_error(&a.pending);
    snprintf(a.message, sizeof a.message, "%s", fb_handle_last_message(h));
    get(big.y, big.dy, big.ybytes);
    a.untouched = all_poison(big.y, big.ybytes);
    const int64_t a_wrong = a.st == FB_STATUS_SUCCESS
                                ? mlp_prob_check(&big, big.y) : -1;
    tap_diag("A: MLP needing 256 GiB of intermediates: %s (%s)",
             fb_status_string(a.st), a.message);
    /* Then the same handle, a shape that fits (1 GiB of intermediates). */
    mlp_prob_make(&fits, FB_DTYPE_BF16, FB_ACT_GELU_TANH, 4096, 64,
                  (int64_t)1 << 16, 64);
    const fb_status a_next = mlp_prob_run(&fits, h);
    get(fits.y, fits.dy, fits.ybytes);
    const int64_t a_next_wrong = a_next == FB_STATUS_SUCCESS
                                     ? mlp_prob_check(&fits, fits.y) : -1;
    if (a.st == FB_STATUS_SUCCESS)
        tap_ok(a_wrong == 0 && a_next == FB_STATUS_SUCCESS && a_next_wrong == 0,
               "cuda-lt ran the 256 GiB-intermediate MLP without that much "
               "memory (%lld wrong in 8 rows), then a smaller one (%s, %lld "
               "wrong): no allocation failure to see here",
               (long long)a_wrong, fb_status_string(a_next),
               (long long)a_next_wrong);
    else
        tap_ok(failed_cleanly(&a) && a_next == FB_STATUS_SUCCESS &&
                   a_next_wrong == 0 &&
                   fb_handle_last_status(h) == FB_STATUS_SUCCESS,
               "cuda-lt MLP needing 256 GiB of intermediates: %s, Y %s, "
               "CUDA error state: %s; then on the same handle an MLP that "
               "fits: %s, %lld wrong in 8 rows", fb_status_string(a.st),
               a.untouched ? "untouched" : "WRITTEN", a.pending,
               fb_status_string(a_next), (long long)a_next_wrong);
    mlp_prob_free(&big);

    /* B: device memory filled by cudaMalloc, leaving `headroom` free:
     * enough for launches and cuBLASLt's small needs, too little for what
     * these calls must allocate. Then an sgemm on host data, which is
     * staged (3 x 64 MiB), and the MLP that fitted before (its 1 GiB
     * scratch was made for it; the handle keeps it, so it may well run:
     * then it must be right). Other GPU tests are not running now:
     * tests/fuzz/Makefile.inc orders this program after them. */
    const size_t headroom = 96 * MiB;
    gemm_prob staged;
    gemm_prob_make(&staged, FB_DTYPE_F32, 4096, 4096, 4096, FB_ACT_RELU, 0);
    CK(cudaMemset(fits.dy, 0xff, fits.ybytes));
    CK(cudaDeviceSynchronize());
    filler *f = host_alloc(sizeof *f);
    fill_device(f, headroom);
    const size_t left = dev_free_bytes();
    failed_call b = {gemm_prob_run(&staged, h, 0, staged.k), 0, 0, "", ""};
    b.clean = no_pending_error(&b.pending);
    snprintf(b.message, sizeof b.message, "%s", fb_handle_last_message(h));
    b.untouched = all_poison(staged.C, staged.cbytes);
    const fb_status b_mlp = mlp_prob_run(&fits, h);
    const char *b_mlp_pending;
    const int b_mlp_clean = no_pending_error(&b_mlp_pending);
    CK(cudaDeviceSynchronize());
    drain_device(f);
    free(f);
    get(fits.y, fits.dy, fits.ybytes);
    const int64_t b_mlp_wrong =
        b_mlp == FB_STATUS_SUCCESS ? mlp_prob_check(&fits, fits.y)
        : all_poison(fits.y, fits.ybytes) ? 0 : -1;
    tap_diag("B: device filled to %.0f MiB free; staged sgemm: %s (%s); MLP "
             "with its scratch already made: %s", (double)left / MiB,
             fb_status_string(b.st), b.message, fb_status_string(b_mlp));
    tap_ok(failed_cleanly(&b) &&
               (b_mlp == FB_STATUS_SUCCESS || b_mlp == FB_STATUS_ALLOC_FAILED) &&
               b_mlp_wrong == 0 && b_mlp_clean,
           "device memory full: staged sgemm %s, C %s, CUDA error state: "
           "%s; the MLP %s (%s)", fb_status_string(b.st),
           b.untouched ? "untouched" : "WRITTEN", b.pending,
           fb_status_string(b_mlp),
           b_mlp_wrong == 0 ? (b_mlp == FB_STATUS_SUCCESS ? "right"
                                                          : "Y untouched")
                            : "WRONG");

    /* Memory back: the same handle runs the same sgemm, right. */
    memset(staged.C, 0xff, staged.cbytes);
    const fb_status again = gemm_prob_run(&staged, h, 0, staged.k);
    const int64_t again_wrong =
        again == FB_STATUS_SUCCESS ? gemm_prob_check(&staged, staged.C,
                                                     ARITH_FP32)
                                   : -1;
    tap_ok(again == FB_STATUS_SUCCESS && again_wrong == 0 &&
               fb_handle_last_status(h) == FB_STATUS_SUCCESS,
           "memory freed: the same handle runs the staged sgemm: %s, %lld "
           "wrong in 8 rows", fb_status_string(again), (long long)again_wrong);
    mlp_prob_free(&fits);
    gemm_prob_free(&staged);
    fb_destroy(h);
}

/* ---- 3. an error does not poison the next call ------------------------------------ */

static void errors_do_not_stick(void)
{
    gemm_prob g;
    gemm_prob_make(&g, FB_DTYPE_F32, 96, 80, 48, FB_ACT_GELU_ERF, 1);
    fb_handle h = handle_on(FB_BACKEND_CUDA_LT);
    const char *pending;

    /* A bad leading dimension, then the same call made right. */
    const fb_status bad = gemm_prob_run(&g, h, 1, g.k - 1);
    const int arg = fb_handle_last_arg(h);
    int clean = no_pending_error(&pending);
    get(g.C, g.dC, g.cbytes);
    const int untouched = all_poison(g.C, g.cbytes);
    const fb_status good = gemm_prob_run(&g, h, 1, g.k);
    get(g.C, g.dC, g.cbytes);
    const int64_t wrong = good == FB_STATUS_SUCCESS
                              ? gemm_prob_check(&g, g.C, ARITH_FP32) : -1;
    tap_ok(bad == FB_STATUS_INVALID_ARGUMENT && arg == 10 && untouched &&
               clean && good == FB_STATUS_SUCCESS && wrong == 0 &&
               fb_handle_last_status(h) == FB_STATUS_SUCCESS &&
               fb_handle_last_arg(h) == 0 &&
               fb_handle_last_message(h)[0] == '\0',
           "cuda-lt: a bad lda (%s, argument %d, C untouched, CUDA error "
           "state: %s), then the good call: %s, %lld wrong",
           fb_status_string(bad), arg, pending, fb_status_string(good),
           (long long)wrong);

    /* A shape the fused kernels decline, then one they take, on one
     * handle. Candidates from large to small; the first declined one and
     * the first taken one are used. */
    fb_handle hf = handle_on(FB_BACKEND_CUDA_FUSED);
    static const int64_t shapes[][4] = {
        {2048, 2048, 4096, 2048}, {1024, 1024, 1024, 1024},
        {4, 512, 1024, 512}, {16, 256, 256, 256}, {1024, 64, 64, 64}};
    fb_status first_decline = FB_STATUS_SUCCESS;
    int declined = -1, taken = -1;
    int64_t taken_wrong = -1;
    for (int s = 0; s < 5 && (declined < 0 || taken < 0); s++) {
        mlp_prob p;
        mlp_prob_make(&p, FB_DTYPE_F16, FB_ACT_SILU, shapes[s][0],
                      shapes[s][1], shapes[s][2], shapes[s][3]);
        const fb_status st = mlp_prob_run(&p, hf);
        if (st == FB_STATUS_NOT_SUPPORTED && declined < 0) {
            declined = s;
            first_decline = st;
            get(p.y, p.dy, p.ybytes);
            if (!all_poison(p.y, p.ybytes))
                first_decline = FB_STATUS_INTERNAL; /* wrote while declining */
        } else if (st == FB_STATUS_SUCCESS && declined >= 0 && taken < 0) {
            taken = s;
            get(p.y, p.dy, p.ybytes);
            taken_wrong = mlp_prob_check(&p, p.y);
        } else if (st != FB_STATUS_SUCCESS && st != FB_STATUS_NOT_SUPPORTED) {
            tap_diag("cuda-fused, mlp %lld x %lld x %lld x %lld: %s (%s)",
                     (long long)shapes[s][0], (long long)shapes[s][1],
                     (long long)shapes[s][2], (long long)shapes[s][3],
                     fb_status_string(st), fb_handle_last_message(hf));
            declined = taken = 99; /* stop: reported below as a failure */
            first_decline = st;
        }
        mlp_prob_free(&p);
    }
    clean = no_pending_error(&pending);
    if (declined < 0 || taken < 0)
        tap_skip("cuda-fused: no candidate shape was declined and then one "
                 "taken, nothing to chain");
    else
        tap_ok(first_decline == FB_STATUS_NOT_SUPPORTED && taken_wrong == 0 &&
                   clean,
               "cuda-fused: a declined shape (%s, nothing written, CUDA "
               "error state: %s), then a taken one on the same handle: "
               "%lld wrong", fb_status_string(first_decline), pending,
               (long long)taken_wrong);
    fb_destroy(hf);

    /* Device pointers given to the CPU backend, then host data there. */
    fb_handle hc = handle_on(FB_BACKEND_CPU);
    const fb_status dev_on_cpu = gemm_prob_run(&g, hc, 1, g.k);
    const int dev_arg = fb_handle_last_arg(hc);
    memset(g.C, 0xff, g.cbytes);
    const fb_status host_on_cpu = gemm_prob_run(&g, hc, 0, g.k);
    const int64_t cpu_wrong = host_on_cpu == FB_STATUS_SUCCESS
                                  ? gemm_prob_check(&g, g.C, ARITH_FP32) : -1;
    tap_ok(dev_on_cpu == FB_STATUS_INVALID_ARGUMENT && dev_arg == 9 &&
               host_on_cpu == FB_STATUS_SUCCESS && cpu_wrong == 0,
           "cpu: device pointers refused (%s, argument %d), then host data: "
           "%s, %lld wrong", fb_status_string(dev_on_cpu), dev_arg,
           fb_status_string(host_on_cpu), (long long)cpu_wrong);
    fb_destroy(hc);
    fb_destroy(h);
    gemm_prob_free(&g);
}

/* ---- 4. the user's stream --------------------------------------------------------- */

/* A host function that holds its stream until released, or until a
 * watchdog of WATCHDOG_S seconds runs out (so that a library call that
 * waits for the stream ends the test instead of hanging it). */
#define WATCHDOG_S 30

typedef struct blocker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int released, timed_out, entered;
} blocker;

static void CUDART_CB hold_stream(void *arg)
{
    blocker *b = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WATCHDOG_S;
    pthread_mutex_lock(&b->mu);
    b->entered = 1;
    while (!b->released) {
        if (pthread_cond_timedwait(&b->cv, &b->mu, &until) == ETIMEDOUT) {
            b->timed_out = 1;
            break;
        }
    }
    pthread_mutex_unlock(&b->mu);
}

static void release(blocker *b)
{
    pthread_mutex_lock(&b->mu);
    b->released = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

typedef fb_status (*stream_call)(void *prob, fb_handle h);

static fb_status run_gemm_dev(void *prob, fb_handle h)
{
    const gemm_prob *g = prob;
    return gemm_prob_run(g, h, 1, g->k);
}

static fb_status run_mlp_dev(void *prob, fb_handle h)
{
    return mlp_prob_run(prob, h);
}

/* One call on a held stream. out/bytes: the device output; check: the
 * host-side verification of the result once copied into host. */
static void stream_case(const char *name, fb_backend backend, void *prob,
                        stream_call call, void *dout, void *hout,
                        size_t bytes, int64_t (*check)(void *prob, void *out))
{
    cudaStream_t s, probe;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&probe, cudaStreamNonBlocking));
    unsigned char *seen = NULL;
    CK(cudaMallocHost((void **)&seen, bytes));
    fb_handle h = handle_on(backend);
    if (fb_set_cuda_stream(h, s) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_cuda_stream failed");

    /* Warm-up: the same call, unheld, so that plans and buffers exist
     * (growing a device buffer may legitimately wait for earlier work). */
    const fb_status warm = call(prob, h);
    CK(cudaStreamSynchronize(s));
    if (warm == FB_STATUS_NOT_SUPPORTED) {
        tap_skip("%s: the path declines this shape", name);
        goto done;
    }

    CK(cudaMemsetAsync(dout, 0xff, bytes, s));
    CK(cudaStreamSynchronize(s));
    blocker b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    CK(cudaLaunchHostFunc(s, hold_stream, &b));
    const fb_status st = call(prob, h);
    /* Returned: the stream must still be held (had the call waited for
     * it, only the watchdog could have let it return) ... */
    pthread_mutex_lock(&b.mu);
    const int waited = b.timed_out;
    pthread_mutex_unlock(&b.mu);
    const char *pending;
    const int clean = no_pending_error(&pending);
    const cudaError_t q = cudaStreamQuery(s);
    if (q == cudaErrorNotReady)
        (void)cudaGetLastError(); /* "not ready" is an answer, not an error */
    /* ... and nothing written yet: the work sits behind the hold, on the
     * user's stream (read through another non-blocking stream). */
    CK(cudaMemcpyAsync(seen, dout, bytes, cudaMemcpyDeviceToHost, probe));
    CK(cudaStreamSynchronize(probe));
    const int unwritten = all_poison(seen, bytes);
    release(&b);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hout, dout, bytes, cudaMemcpyDeviceToHost));
    const int64_t wrong = st == FB_STATUS_SUCCESS ? check(prob, hout) : -1;
    tap_ok(warm == FB_STATUS_SUCCESS && st == FB_STATUS_SUCCESS && !waited &&
               clean && q == cudaErrorNotReady && unwritten && wrong == 0,
           "%s on a held user stream: %s (CUDA error state: %s), returned "
           "%s, stream %s, output %s before release; after "
           "cudaStreamSynchronize %lld wrong (path %s)", name,
           fb_status_string(st), pending,
           waited ? "only when the watchdog released the stream (it WAITED)"
                  : "while the stream was held",
           q == cudaErrorNotReady ? "still busy" : cudaGetErrorString(q),
           unwritten ? "unwritten" : "ALREADY WRITTEN", (long long)wrong,
           fb_handle_last_path(h));
done:
    fb_destroy(h);
    CK(cudaFreeHost(seen));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(probe));
}

static int64_t check_gemm_out(void *prob, void *out)
{
    const gemm_prob *g = prob;
    return gemm_prob_check(g, out, g->dt == FB_DTYPE_F32 ? ARITH_FP32
                                                         : ARITH_TENSOR);
}

static int64_t check_mlp_out(void *prob, void *out)
{
    return mlp_prob_check(prob, out);
}

static void user_stream(void)
{
    gemm_prob g32, g16;
    gemm_prob_make(&g32, FB_DTYPE_F32, 512, 384, 256, FB_ACT_GELU_TANH, 1);
    gemm_prob_make(&g16, FB_DTYPE_BF16, 8, 512, 256, FB_ACT_RELU, 1);
    stream_case("sgemm, cuda-lt", FB_BACKEND_CUDA_LT, &g32, run_gemm_dev,
                g32.dC, g32.C, g32.cbytes, check_gemm_out);
    stream_case("bgemm, cuda-fused", FB_BACKEND_CUDA_FUSED, &g16,
                run_gemm_dev, g16.dC, g16.C, g16.cbytes, check_gemm_out);

    mlp_prob lt, decode;
    mlp_prob_make(&lt, FB_DTYPE_BF16, FB_ACT_GELU_TANH, 256, 128, 512, 128);
    mlp_prob_make(&decode, FB_DTYPE_F16, FB_ACT_SILU, 4, 512, 1024, 512);
    stream_case("bf16 mlp, cuda-lt", FB_BACKEND_CUDA_LT, &lt, run_mlp_dev,
                lt.dy, lt.y, lt.ybytes, check_mlp_out);
    stream_case("fp16 decode mlp, cuda-fused", FB_BACKEND_CUDA_FUSED, &decode,
                run_mlp_dev, decode.dy, decode.y, decode.ybytes,
                check_mlp_out);
    gemm_prob_free(&g32);
    gemm_prob_free(&g16);
    mlp_prob_free(&lt);
    mlp_prob_free(&decode);
}

int main(void)
{
    tap_begin("test_gpu_faults");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        tap_skip_all("no CUDA device");
    if (fb_backend_available(FB_BACKEND_CUDA_LT) != FB_STATUS_SUCCESS)
        tap_skip_all("no CUDA backend: the CUDA module did not load (set "
                     "FUSEDBLAS_CUDA_MODULE, or install it)");
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    tap_diag("device 0: %s, %.1f GB, %.1f GB free", prop.name,
             (double)prop.totalGlobalMem / 1e9,
             (double)dev_free_bytes() / 1e9);

    if (quick()) {
        tap_skip("outputs of more than 2^31 elements: FB_TEST_QUICK");
        tap_skip("device allocation failure: FB_TEST_QUICK");
    } else {
        huge_sgemm_lt();
        huge_hgemm_cuda();
        huge_mlp_cuda();
        alloc_failure();
    }
    errors_do_not_stick();
    if (quick())
        /* compute-sanitizer may make launches wait for their kernels,
         * which behind a held stream is the very wait this checks for. */
        tap_skip("the user's stream: FB_TEST_QUICK (sanitizer runs)");
    else
        user_stream();
    /* Evaluated before the call: the order in which a call's arguments
     * are evaluated is unspecified, and pending must be set before it is
     * read (GPU run 7 crashed printing an unset pointer). */
    const char *pending = "";
    const int healthy = no_pending_error(&pending) &&
                        cudaDeviceSynchronize() == cudaSuccess;
    tap_ok(healthy, "the device ends healthy (%s)", pending);
    return tap_end();
}
