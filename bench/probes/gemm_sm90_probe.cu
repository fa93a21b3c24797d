/* SPDX-License-Identifier: BSD-3-Clause */
// gemm_sm90_probe.cu -- the Hopper GEMM engine (lib/cuda/fused/fused_gemm_sm90.cu)
// alone, against cuBLAS on the same buffers: correctness (every output
// against cuBLAS's fp32 product with the same epilogue applied in fp32,
// rounded once) and time (median of CUDA-event-timed runs). Not built by
// make; on a Hopper GPU, from the top of a configured build tree's source:
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DFB_HAVE_SM90A=1 \
//     -DFBF_SANDBOX \
//     -Ilib/cuda -Ilib/common -Iinclude -o gemm_sm90_probe \
//     bench/probes/gemm_sm90_probe.cu lib/cuda/fused/fused_gemm_sm90.cu \
//     lib/cuda/fused/fused_tma_map.cu lib/cuda/fused/fused_pack16.cu \
//     lib/cuda/fused/fused_api.cu -lcublas && ./gemm_sm90_probe
// Arguments: none (checks, then times both modes), --check-only,
// --check-small (shapes up to 10^9 multiply-adds: for compute-sanitizer),
// --ncu (one launch of each kernel, for ncu), --ab (interleaved timings
// of the epilogue's two stores in both arrangements), --epi (interleaved
// timings of each part of the epilogue: bias, activation, both), --dual
// (interleaved timings of the gated MLP's dual GEMM alone), --groups
// (both, at raster groups of 4 and 8 unit-rows), --at R,S,K ... (every
// arrangement and stream-K at the shapes given), --epi-at R,S,K ... (every
// arrangement with each epilogue), --ncu-at R,S,K,MODE,EPI
// (two launches of one arrangement, for ncu).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "device_math.cuh"
#include "fused/fused_internal.h"

#define CK(x)                                                                 \
    do {                                                                      \
        cudaError_t e_ = (x);                                                 \
        if (e_ != cudaSuccess) {                                              \
            printf("%s: %s\n", #x, cudaGetErrorString(e_));                   \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
#define CB(x)                                                                 \
    do {                                                                      \
        cublasStatus_t s_ = (x);                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                    \
            printf("%s: %d\n", #x, (int)s_);                                  \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

typedef __nv_bfloat16 bf16;

// The launchers' knobs (-DFBF_SANDBOX): engine_mode 1 ping-pong, 2
// cooperative, 3 ping-pong in clusters of 2; engine_group unit-rows a
// raster group; engine_store 1 direct stores.
fbf_tuning fbf_knobs;

__global__ void fill(bf16 *p, size_t n, uint32_t seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        x ^= x >> 15;
        p[i] = __float2bfloat16(((x & 0xffff) / 65536.0f - 0.5f) * scale);
    }
}

// ref (rows x cols fp32, row-major) -> act(alpha ref + beta c0 + bias),
// rounded once; compared with out in bf16 ulps.
__global__ void judge(const float *ref, const bf16 *out, const bf16 *c0,
                      const bf16 *bias, int bias_on_cols, float alpha,
                      float beta, int act, int rows, int cols, int kdim,
                      float gauge, unsigned long long *bad,
                      unsigned long long *worst)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int r = (int)(i / cols), c = (int)(i % cols);
        float v = alpha * ref[i];
        if (beta != 0.0f)
            v = fmaf(beta, __bfloat162float(c0[i]), v);
        if (bias)
            v += __bfloat162float(bias[bias_on_cols ? c : r]);
        v = fb_act_dynamic((fb_activation)act, v);
        float want = __bfloat162float(__float2bfloat16(v));
        float got = __bfloat162float(out[i]);
        // one bf16 ulp, plus the fp32 sums' order (sqrt(k) eps |gauge|),
        // with the activation's slope at most 1.2
        float ulp = fmaxf(fabsf(want), 1e-30f) * (1.0f / 128.0f);
        float slack = 1.2f * fabsf(alpha) * sqrtf((float)kdim) * 6e-8f * gauge;
        float d = fmaxf(fabsf(got - want) - slack, 0.0f) / ulp;
        if (!(d <= 1.0f)) {
            atomicAdd(bad, 1ull);
            unsigned long long q =
                (unsigned long long)(isnan(d) || d > 1e9f ? 1e9f : d);
            atomicMax(worst, q);
        }
    }
}

static fb_fused_env make_env(cudaStream_t s)
{
    fb_fused_env e;
    memset(&e, 0, sizeof e);
    e.stream = s;
    CK(cudaGetDevice(&e.device));
    CK(cudaDeviceGetAttribute(&e.sm_count, cudaDevAttrMultiProcessorCount, e.device));
    CK(cudaDeviceGetAttribute(&e.cc_major, cudaDevAttrComputeCapabilityMajor, e.device));
    CK(cudaDeviceGetAttribute(&e.cc_minor, cudaDevAttrComputeCapabilityMinor, e.device));
    int smem = 0;
    CK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, e.device));
    e.smem_optin = (size_t)smem;
    // the handle's workspace, where stream-K keeps its partial sums
    CK(cudaMalloc(&e.workspace, FB_FUSED_WORKSPACE_BYTES));
    CK(cudaMemset(e.workspace, 0, FB_FUSED_WORKSPACE_BYTES));
    e.workspace_bytes = FB_FUSED_WORKSPACE_BYTES;
    return e;
}

template <typename F> static float time_ms(cudaStream_t s, F f, int reps = 20)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i)
        f();
    std::vector<float> v;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a, s));
        f();
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

__global__ void bias_gelu(bf16 *y, const bf16 *b, size_t rows, int cols)
{
    size_t n = rows * (size_t)cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(fb_gelu_tanh(__bfloat162float(y[i]) +
                                             __bfloat162float(b[i % cols])));
}

__global__ void gate_mul(bf16 *g, const bf16 *u, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        g[i] = __float2bfloat16(fb_silu(__bfloat162float(g[i])) *
                                __bfloat162float(u[i]));
}

static bool check_gemm(cublasHandle_t cb, const fb_fused_env &env, int R,
                       int S, int K, int act, int bias_kind, float alpha,
                       float beta)
{
    bf16 *x, *w, *d, *c0, *bias;
    float *ref;
    CK(cudaMalloc(&x, (size_t)R * K * 2));
    CK(cudaMalloc(&w, (size_t)S * K * 2));
    CK(cudaMalloc(&d, (size_t)R * S * 2));
    CK(cudaMalloc(&c0, (size_t)R * S * 2));
    CK(cudaMalloc(&bias, (size_t)std::max(R, S) * 2));
    CK(cudaMalloc(&ref, (size_t)R * S * 4));
    fill<<<512, 256>>>(x, (size_t)R * K, 1u + R, 2.0f);
    fill<<<512, 256>>>(w, (size_t)S * K, 7u + S, 2.0f);
    fill<<<512, 256>>>(c0, (size_t)R * S, 11u, 2.0f);
    fill<<<512, 256>>>(bias, (size_t)std::max(R, S), 5u, 2.0f);
    CK(cudaMemcpy(d, c0, (size_t)R * S * 2, cudaMemcpyDeviceToDevice));
    CK(cudaDeviceSynchronize());
    // ref (row-major R x S) = X W^T: column-major S x R = W^T^T... i.e.
    // C(S x R, ld S) = op(W)(S x K) * X^T (K x R): W stored K-major.
    const float one = 1.0f, zero = 0.0f;
    CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, S, R, K, &one, w,
                    CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero, ref, CUDA_R_32F,
                    S, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    fb_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FB_DTYPE_BF16;
    p.transa = 1;
    p.transb = 0;
    p.m = S;
    p.n = R;
    p.k = K;
    p.alpha = alpha;
    fb_gemm_decide(&p);
    p.beta = beta;
    p.a = w;
    p.lda = K;
    p.b = x;
    p.ldb = K;
    p.c = d;
    p.ldc = S;
    p.ep.bias = bias_kind ? bias : NULL;
    p.ep.bias_per_row = bias_kind == 1; // engine: on columns
    p.ep.act = (fb_activation)act;
    char path[96] = "";
    fb_status st = fbf_gemm_sm90(&env, &p, FBF_RUN, path, sizeof path);
    CK(cudaDeviceSynchronize());
    unsigned long long *cnt;
    CK(cudaMalloc(&cnt, 16));
    CK(cudaMemset(cnt, 0, 16));
    judge<<<1024, 256>>>(ref, d, c0, bias_kind ? bias : NULL, bias_kind == 1,
                         alpha, beta, act, R, S, K, 0.25f * K, cnt, cnt + 1);
    unsigned long long h[2];
    CK(cudaMemcpy(h, cnt, 16, cudaMemcpyDeviceToHost));
    bool ok = st == FB_STATUS_SUCCESS && h[0] == 0;
    printf("%s gemm %5d x %5d x %5d act %d bias %d alpha %.2f beta %.2f "
           "%-28s bad %llu worst %llu ulp\n",
           ok ? "ok  " : "FAIL", R, S, K, act, bias_kind, alpha, beta, path,
           h[0], h[1]);
    cudaFree(x); cudaFree(w); cudaFree(d); cudaFree(c0); cudaFree(bias);
    cudaFree(ref); cudaFree(cnt);
    return ok;
}

// An nn.Linear call D (R x S) = X (R x K) W^T on random data, and the
// engine's problem for it (no bias or activation yet).
struct Linear {
    bf16 *x, *w, *d, *bias;
    fb_gemm_problem p;
};

static Linear make_linear(int R, int S, int K)
{
    Linear l;
    CK(cudaMalloc(&l.x, (size_t)R * K * 2));
    CK(cudaMalloc(&l.w, (size_t)S * K * 2));
    CK(cudaMalloc(&l.d, (size_t)R * S * 2));
    CK(cudaMalloc(&l.bias, (size_t)S * 2));
    fill<<<512, 256>>>(l.x, (size_t)R * K, 3u, 2.0f);
    fill<<<512, 256>>>(l.w, (size_t)S * K, 9u, 2.0f);
    fill<<<512, 256>>>(l.bias, (size_t)S, 5u, 2.0f);
    CK(cudaDeviceSynchronize());
    memset(&l.p, 0, sizeof l.p);
    l.p.dtype = FB_DTYPE_BF16;
    l.p.transa = 1;
    l.p.m = S;
    l.p.n = R;
    l.p.k = K;
    l.p.alpha = 1.0f;
    fb_gemm_decide(&l.p);
    l.p.a = l.w;
    l.p.lda = K;
    l.p.b = l.x;
    l.p.ldb = K;
    l.p.c = l.d;
    l.p.ldc = S;
    return l;
}

static void free_linear(Linear &l)
{
    cudaFree(l.x); cudaFree(l.w); cudaFree(l.d); cudaFree(l.bias);
}

static void time_gemm(cublasHandle_t cb, const fb_fused_env &env, int R, int S,
                      int K)
{
    Linear l = make_linear(R, S, K);
    bf16 *x = l.x, *w = l.w, *d = l.d, *bias = l.bias;
    const float one = 1.0f, zero = 0.0f;
    auto cublas = [&] {
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, S, R, K, &one, w,
                        CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero, d,
                        CUDA_R_16BF, S, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT));
    };
    auto eager = [&] {
        cublas();
        bias_gelu<<<1056, 256, 0, env.stream>>>(d, bias, R, S);
    };
    fb_gemm_problem p = l.p;
    auto engine = [&] {
        if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) != FB_STATUS_SUCCESS) {
            printf("engine refused\n");
            exit(1);
        }
    };
    fb_gemm_problem q = p;
    q.ep.bias = bias;
    q.ep.bias_per_row = 1;
    q.ep.act = FB_ACT_GELU_TANH;
    auto fused = [&] {
        if (fbf_gemm_sm90(&env, &q, FBF_RUN, NULL, 0) != FB_STATUS_SUCCESS)
            exit(1);
    };
    float tc = time_ms(env.stream, cublas), te = time_ms(env.stream, engine);
    float tg = time_ms(env.stream, eager), tf = time_ms(env.stream, fused);
    double fl = 2.0 * R * (double)S * K;
    printf("time gemm %5d x %5d x %5d  cublas %8.1f us (%4.0f TF)  engine "
           "%8.1f us (%4.0f TF) %.3fx | bias+gelu: cublas+ew %8.1f  engine "
           "%8.1f  %.3fx eager, %.3f of plain cublas\n",
           R, S, K, tc * 1e3, fl / tc / 1e9, te * 1e3, fl / te / 1e9, tc / te,
           tg * 1e3, tf * 1e3, tg / tf, tf / tc);
    free_linear(l);
}

static void profile_once(cublasHandle_t cb, const fb_fused_env &env, int R,
                         int S, int K)
{
    Linear l = make_linear(R, S, K);
    bf16 *x = l.x, *w = l.w, *d = l.d, *bias = l.bias;
    const float one = 1.0f, zero = 0.0f;
    CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, S, R, K, &one, w,
                    CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero, d, CUDA_R_16BF,
                    S, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    fb_gemm_problem p = l.p;
    for (int mode = 2; mode >= 1; --mode) {
        fbf_knobs.engine_mode = mode;
        if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) != FB_STATUS_SUCCESS)
            exit(1);
    }
    fbf_knobs.engine_mode = 2;
    p.ep.bias = bias;
    p.ep.bias_per_row = 1;
    p.ep.act = FB_ACT_GELU_TANH;
    if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) != FB_STATUS_SUCCESS)
        exit(1);
    CK(cudaDeviceSynchronize());
}

static void time_mlp(cublasHandle_t cb, const fb_fused_env &env, int M, int K,
                     int H, int N, bool check)
{
    bf16 *x, *wg, *wu, *wd, *h, *g, *u, *y, *y2;
    CK(cudaMalloc(&x, (size_t)M * K * 2));
    CK(cudaMalloc(&wg, (size_t)H * K * 2));
    CK(cudaMalloc(&wu, (size_t)H * K * 2));
    CK(cudaMalloc(&wd, (size_t)N * H * 2));
    CK(cudaMalloc(&h, (size_t)M * H * 2));
    CK(cudaMalloc(&g, (size_t)M * H * 2));
    CK(cudaMalloc(&u, (size_t)M * H * 2));
    CK(cudaMalloc(&y, (size_t)M * N * 2));
    CK(cudaMalloc(&y2, (size_t)M * N * 2));
    fill<<<512, 256>>>(x, (size_t)M * K, 3u, 2.0f);
    fill<<<512, 256>>>(wg, (size_t)H * K, 9u, 0.1f);
    fill<<<512, 256>>>(wu, (size_t)H * K, 19u, 0.1f);
    fill<<<512, 256>>>(wd, (size_t)N * H, 29u, 0.1f);
    CK(cudaDeviceSynchronize());
    const float one = 1.0f, zero = 0.0f;
    auto eager = [&] {
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, H, M, K, &one, wg,
                        CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero, g,
                        CUDA_R_16BF, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, H, M, K, &one, wu,
                        CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero, u,
                        CUDA_R_16BF, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        gate_mul<<<1056, 256, 0, env.stream>>>(g, u, (size_t)M * H);
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, N, M, H, &one, wd,
                        CUDA_R_16BF, H, g, CUDA_R_16BF, H, &zero, y2,
                        CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    fb_mlp_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FB_DTYPE_BF16;
    p.gate_act = FB_ACT_SILU;
    p.m = M;
    p.k = K;
    p.h = H;
    p.n = N;
    p.x = x;
    p.ldx = K;
    p.wg = wg;
    p.wu = wu;
    p.wd = wd;
    p.y = y;
    p.ldy = N;
    auto engine = [&] {
        if (fbf_mlp_sm90(&env, &p, h, (size_t)M * H * 2, FBF_RUN, NULL, 0) !=
            FB_STATUS_SUCCESS) {
            printf("engine mlp refused\n");
            exit(1);
        }
    };
    float te = time_ms(env.stream, engine, 10), tg = time_ms(env.stream, eager, 10);
    double fl = 2.0 * M * (double)K * H * 2 + 2.0 * M * (double)H * N;
    // agreement with the eager chain (which rounds G, U, H to bf16)
    std::vector<uint16_t> a((size_t)M * N), b((size_t)M * N);
    CK(cudaMemcpy(a.data(), y, a.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), y2, b.size() * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        uint32_t ua = (uint32_t)a[i] << 16, ub = (uint32_t)b[i] << 16;
        float fa, fb;
        memcpy(&fa, &ua, 4);
        memcpy(&fb, &ub, 4);
        num += (double)(fa - fb) * (fa - fb);
        den += (double)fb * fb;
    }
    printf("time mlp %5d x %5d -> %5d -> %5d  eager(cublas) %8.1f us  engine "
           "%8.1f us (%4.0f TF)  %.3fx  rel.diff %.2e%s\n",
           M, K, H, N, tg * 1e3, te * 1e3, fl / te / 1e9, tg / te,
           sqrt(num / (den + 1e-30)), check && sqrt(num / (den + 1e-30)) > 2e-2 ? " FAIL" : "");
    cudaFree(x); cudaFree(wg); cudaFree(wu); cudaFree(wd); cudaFree(h);
    cudaFree(g); cudaFree(u); cudaFree(y); cudaFree(y2);
}

// The dual GEMM alone (H = silu(X Wg^T) .* X Wu^T, the knob h_only) in
// each arrangement, one launch at a time round-robin; medians.
static void time_dual(const fb_fused_env &env, int M, int K, int H)
{
    bf16 *x, *wg, *wu, *h;
    CK(cudaMalloc(&x, (size_t)M * K * 2));
    CK(cudaMalloc(&wg, (size_t)H * K * 2));
    CK(cudaMalloc(&wu, (size_t)H * K * 2));
    CK(cudaMalloc(&h, (size_t)M * H * 2));
    fill<<<512, 256>>>(x, (size_t)M * K, 3u, 2.0f);
    fill<<<512, 256>>>(wg, (size_t)H * K, 9u, 0.1f);
    fill<<<512, 256>>>(wu, (size_t)H * K, 19u, 0.1f);
    CK(cudaDeviceSynchronize());
    fb_mlp_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FB_DTYPE_BF16;
    p.gate_act = FB_ACT_SILU;
    p.m = M;
    p.k = K;
    p.h = H;
    p.n = K;
    p.x = x;
    p.ldx = K;
    p.wg = wg;
    p.wu = wu;
    p.wd = wg; /* not read: h_only */
    p.y = h;
    p.ldy = K;
    // cooperative whole, and with stream-K forced
    const int modes[2] = {2, 2}, sk[2] = {1, 2};
    static const char *const name[2] = {"coop", "coop stream-K"};
    fbf_knobs.h_only = 1;
    cudaEvent_t ev[4];
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    std::vector<float> t[2];
    for (int rep = 0; rep < 18; ++rep) {
        for (int v = 0; v < 2; ++v) {
            fbf_knobs.engine_mode = modes[v];
            fbf_knobs.engine_streamk = sk[v];
            CK(cudaEventRecord(ev[2 * v], env.stream));
            if (fbf_mlp_sm90(&env, &p, h, (size_t)M * H * 2, FBF_RUN, NULL,
                             0) != FB_STATUS_SUCCESS) {
                printf("engine dual refused\n");
                exit(1);
            }
            CK(cudaEventRecord(ev[2 * v + 1], env.stream));
        }
        CK(cudaStreamSynchronize(env.stream));
        for (int v = 0; rep >= 3 && v < 2; ++v) {
            float ms;
            CK(cudaEventElapsedTime(&ms, ev[2 * v], ev[2 * v + 1]));
            t[v].push_back(ms);
        }
    }
    // H with stream-K against H whole: the fp32 sums of G and U differ
    // in order only, by about sqrt(K) eps |gauge| (gauge K / 80 here:
    // |x| 0.5, |w| 0.025 on average); H = silu(G) U moves that by at most
    // |U| + |G| (< 10 here): one bf16 step plus that much apart
    std::vector<uint16_t> hv[2];
    for (int v = 0; v < 2; ++v) {
        fbf_knobs.engine_streamk = sk[v];
        CK(cudaMemset(h, 0xff, (size_t)M * H * 2));
        if (fbf_mlp_sm90(&env, &p, h, (size_t)M * H * 2, FBF_RUN, NULL, 0) !=
            FB_STATUS_SUCCESS)
            exit(1);
        hv[v].resize((size_t)M * H);
        CK(cudaMemcpy(hv[v].data(), h, hv[v].size() * 2,
                      cudaMemcpyDeviceToHost));
    }
    fbf_knobs.engine_streamk = 0;
    const double slack = 2.0 * sqrt((double)K) * 5.96e-8 * (K / 80.0) * 10.0;
    size_t apart = 0;
    for (size_t i = 0; i < hv[0].size(); ++i) {
        uint32_t ua = (uint32_t)hv[0][i] << 16, ub = (uint32_t)hv[1][i] << 16;
        float fa, fb;
        memcpy(&fa, &ua, 4);
        memcpy(&fb, &ub, 4);
        const double ulp = fmax(fabs(fa), fabs(fb)) / 128.0;
        apart += !(fabs((double)fa - fb) <= ulp + slack);
    }
    const double fl = 4.0 * M * (double)K * H;
    printf("dual %5d x %5d -> %5d (%s: %zu of H apart from whole)",
           M, K, H, apart ? "FAIL" : "ok", apart);
    for (int v = 0; v < 2; ++v) {
        std::sort(t[v].begin(), t[v].end());
        const float ms = t[v][t[v].size() / 2];
        printf(" | %s %7.1f us (%3.0f TF)", name[v], ms * 1e3, fl / ms / 1e9);
    }
    printf("\n");
    fbf_knobs.h_only = 0;
    fbf_knobs.engine_mode = 0;
    for (auto &e : ev)
        cudaEventDestroy(e);
    cudaFree(x); cudaFree(wg); cudaFree(wu); cudaFree(h);
}

// The arrangements compared side by side: engine_mode, engine_store.
struct Arrangement {
    const char *name;
    int mode, store;
};
static const Arrangement kArr[] = {{"coop, direct", 2, 1},
                                   {"coop, staged", 2, 0},
                                   {"ping-pong, staged", 1, 0},
                                   {"ping-pong 2x1, staged", 3, 0}};
static const int kNArr = sizeof kArr / sizeof kArr[0];

// The epilogues the interleaved timings compare: bit 0 a bias, bit 1
// gelu_tanh.
enum { EPI_PLAIN = 0, EPI_BIAS = 1, EPI_GELU = 2, EPI_BIAS_GELU = 3 };
static const char *const kEpiName[] = {"plain", "bias", "gelu_tanh",
                                       "bias+gelu_tanh"};

// Stream-K off and forced, each arrangement the rule picks, against
// cuBLAS's plain product: interleaved, medians.
static void time_stream_k(cublasHandle_t cb, const fb_fused_env &env, int R,
                          int S, int K, int epi)
{
    Linear l = make_linear(R, S, K);
    fb_gemm_problem p = l.p;
    if (epi & 1) {
        p.ep.bias = l.bias;
        p.ep.bias_per_row = 1;
    }
    if (epi & 2)
        p.ep.act = FB_ACT_GELU_TANH;
    const float one = 1.0f, zero = 0.0f;
    // cuBLAS; the rule's arrangement stream-K off, forced; cooperative
    // stream-K off, forced
    const int knobs[5] = {-1, 1, 2, 1, 2}, mode[5] = {0, 0, 0, 2, 2};
    cudaEvent_t ev[10];
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    std::vector<float> t[5];
    for (int rep = 0; rep < 23; ++rep) {
        for (int v = 0; v < 5; ++v) {
            CK(cudaEventRecord(ev[2 * v], env.stream));
            fbf_knobs.engine_mode = mode[v];
            if (knobs[v] < 0) {
                CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, S, R, K, &one,
                                l.w, CUDA_R_16BF, K, l.x, CUDA_R_16BF, K,
                                &zero, l.d, CUDA_R_16BF, S, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
            } else {
                fbf_knobs.engine_streamk = knobs[v];
                if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) !=
                    FB_STATUS_SUCCESS) {
                    printf("engine refused\n");
                    exit(1);
                }
            }
            CK(cudaEventRecord(ev[2 * v + 1], env.stream));
        }
        CK(cudaStreamSynchronize(env.stream));
        for (int v = 0; rep >= 3 && v < 5; ++v) {
            float ms;
            CK(cudaEventElapsedTime(&ms, ev[2 * v], ev[2 * v + 1]));
            t[v].push_back(ms * 1e3f);
        }
    }
    fbf_knobs.engine_streamk = 0;
    fbf_knobs.engine_mode = 0;
    float med[5];
    for (int v = 0; v < 5; ++v) {
        std::sort(t[v].begin(), t[v].end());
        med[v] = t[v][t[v].size() / 2];
    }
    printf("sk %5d x %5d x %5d %-14s cublas %7.1f | rule: whole %7.1f "
           "(%.3f) stream-K %7.1f (%.3f) | coop: whole %7.1f (%.3f) "
           "stream-K %7.1f (%.3f)\n",
           R, S, K, kEpiName[epi], med[0], med[1], med[0] / med[1], med[2],
           med[0] / med[2], med[3], med[0] / med[3], med[4], med[0] / med[4]);
    for (auto &e : ev)
        cudaEventDestroy(e);
    free_linear(l);
}


// Every arrangement and cuBLAS one launch at a time, round-robin, so that
// the card's clock drifts alike for all; medians. cuBLAS runs the plain
// product whatever the engine's epilogue.
static void time_interleaved(cublasHandle_t cb, const fb_fused_env &env,
                             int R, int S, int K, int epi)
{
    Linear l = make_linear(R, S, K);
    bf16 *x = l.x, *w = l.w, *d = l.d, *bias = l.bias;
    fb_gemm_problem p = l.p;
    if (epi & EPI_BIAS) {
        p.ep.bias = bias;
        p.ep.bias_per_row = 1;
    }
    if (epi & EPI_GELU)
        p.ep.act = FB_ACT_GELU_TANH;
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t ev[2 * (kNArr + 1)];
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    std::vector<std::vector<float>> t(kNArr + 1);
    for (int rep = 0; rep < 23; ++rep) {
        for (int v = 0; v <= kNArr; ++v) {
            CK(cudaEventRecord(ev[2 * v], env.stream));
            if (v == kNArr) {
                CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, S, R, K, &one,
                                w, CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero,
                                d, CUDA_R_16BF, S, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
            } else {
                fbf_knobs.engine_mode = kArr[v].mode;
                fbf_knobs.engine_store = kArr[v].store;
                if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) !=
                    FB_STATUS_SUCCESS) {
                    printf("engine refused\n");
                    exit(1);
                }
            }
            CK(cudaEventRecord(ev[2 * v + 1], env.stream));
        }
        CK(cudaStreamSynchronize(env.stream));
        if (rep < 3)
            continue;
        for (int v = 0; v <= kNArr; ++v) {
            float ms;
            CK(cudaEventElapsedTime(&ms, ev[2 * v], ev[2 * v + 1]));
            t[v].push_back(ms);
        }
    }
    for (auto &v : t)
        std::sort(v.begin(), v.end());
    const float tc = t[kNArr][t[kNArr].size() / 2];
    const double fl = 2.0 * R * (double)S * K;
    printf("ab %5d x %5d x %5d %-14s cublas %7.1f us (%3.0f TF)", R, S, K,
           kEpiName[epi], tc * 1e3, fl / tc / 1e9);
    for (int v = 0; v < kNArr; ++v) {
        const float te = t[v][t[v].size() / 2];
        printf(" | %s %7.1f (%.3f)", kArr[v].name, te * 1e3, tc / te);
    }
    printf("\n");
    fbf_knobs.engine_store = 0;
    for (auto &e : ev)
        cudaEventDestroy(e);
    free_linear(l);
}

int main(int argc, char **argv)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t cb;
    CB(cublasCreate(&cb));
    CB(cublasSetStream(cb, s));
    fb_fused_env env = make_env(s);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, env.device));
    printf("device: %s, %d SMs\n", prop.name, env.sm_count);
    if (argc > 1 && strcmp(argv[1], "--ncu") == 0) {
        // one launch each, for ncu: cuBLAS, the engine cooperative and
        // ping-pong, then cooperative with bias + gelu_tanh
        profile_once(cb, env, 8192, 11008, 4096);
        return 0;
    }
    int fails = 0;
    if (argc > 1 && strcmp(argv[1], "--ab") == 0) {
        const int ab[][3] = {{8192, 8192, 8192}, {8192, 11008, 4096},
                             {4096, 4096, 4096}, {2048, 14336, 4096},
                             {2048, 4096, 14336}, {3000, 5000, 2000},
                             {8192, 4096, 1024},  {8192, 4096, 2048},
                             {8192, 4096, 3072},  {1024, 11008, 4096}};
        for (auto &sh : ab)
            time_interleaved(cb, env, sh[0], sh[1], sh[2], EPI_PLAIN);
        time_interleaved(cb, env, 8192, 11008, 4096, EPI_BIAS_GELU);
        time_interleaved(cb, env, 2048, 14336, 4096, EPI_BIAS_GELU);
        /* the staged stores; the pairs run no dual GEMM */
        for (int i = 1; i < kNArr && kArr[i].mode != 3; ++i) {
            fbf_knobs.engine_mode = kArr[i].mode;
            fbf_knobs.engine_store = kArr[i].store;
            printf("mlp, %s:\n", kArr[i].name);
            time_mlp(cb, env, 8192, 768, 3072, 768, true);
            time_mlp(cb, env, 2048, 4096, 14336, 4096, true);
            time_mlp(cb, env, 4096, 4096, 11008, 4096, true);
        }
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--epi") == 0) {
        // what each part of the epilogue costs, both arrangements
        const int sh[][3] = {{8192, 11008, 4096}, {2048, 14336, 4096},
                             {8192, 8192, 8192}, {4096, 4096, 4096}};
        for (auto &s : sh)
            for (int epi = EPI_PLAIN; epi <= EPI_BIAS_GELU; ++epi)
                time_interleaved(cb, env, s[0], s[1], s[2], epi);
        // shallower raster groups: less of A in flight for long k
        for (int group = 4; group <= 8; group *= 2) {
            fbf_knobs.engine_group = group;
            printf("raster groups of %d unit-rows:\n", group);
            time_interleaved(cb, env, 8192, 8192, 8192, EPI_PLAIN);
            time_interleaved(cb, env, 8192, 8192, 8192, EPI_BIAS_GELU);
            time_interleaved(cb, env, 8192, 11008, 4096, EPI_BIAS_GELU);
        }
        fbf_knobs.engine_group = 0;
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--groups") == 0) {
        // raster depths side by side: products and dual GEMMs
        const int sh[][3] = {{8192, 11008, 4096}, {2048, 14336, 4096},
                             {8192, 8192, 8192}, {4096, 4096, 4096},
                             {1024, 11008, 4096}, {3000, 5000, 2000}};
        const int du[][3] = {{2048, 4096, 14336}, {4096, 4096, 11008},
                             {1024, 4096, 11008}, {8192, 768, 3072}};
        for (int group = 4; group <= 8; group *= 2) {
            fbf_knobs.engine_group = group;
            printf("raster groups of %d unit-rows:\n", group);
            for (auto &g : sh) {
                time_interleaved(cb, env, g[0], g[1], g[2], EPI_PLAIN);
                time_interleaved(cb, env, g[0], g[1], g[2], EPI_BIAS_GELU);
            }
            for (auto &d : du)
                time_dual(env, d[0], d[1], d[2]);
        }
        fbf_knobs.engine_group = 0;
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--sk-dual") == 0) {
        const int du[][3] = {{1024, 4096, 11008}, {1024, 4096, 14336},
                             {2048, 4096, 11008}, {3000, 1536, 8960},
                             {1024, 5120, 13824}, {768, 4096, 11008},
                             {2048, 2560, 10240}, {4096, 4096, 14336}};
        for (auto &d : du)
            time_dual(env, d[0], d[1], d[2]);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--sk") == 0) {
        // stream-K where the last round is part-filled: medium shapes
        const int sh[][3] = {{1024, 11008, 4096}, {1536, 3072, 3072},
                             {1536, 2048, 8192},  {512, 4096, 4096},
                             {768, 4096, 4096},   {2500, 7168, 7168},
                             {256, 11008, 4096},  {1024, 4096, 11008},
                             {3000, 5000, 2000},  {777, 5632, 2048},
                             {512, 13824, 5120},  {2048, 2560, 10240},
                             {8192, 11008, 4096}, {4096, 4096, 4096},
                             {300, 4096, 14336},  {1200, 1536, 1536},
                             {1536, 7168, 2048},  {1280, 3584, 3584},
                             {1024, 2048, 8192}};
        for (auto &g : sh)
            for (int epi = EPI_PLAIN; epi <= EPI_BIAS_GELU; epi += 3)
                time_stream_k(cb, env, g[0], g[1], g[2], epi);
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "--ncu-at") == 0) {
        // one launch for ncu: R,S,K,mode,epi (mode as engine_mode)
        int r, s, k, mode, epi;
        if (sscanf(argv[2], "%d,%d,%d,%d,%d", &r, &s, &k, &mode, &epi) != 5)
            return 2;
        Linear l = make_linear(r, s, k);
        fb_gemm_problem p = l.p;
        if (epi & EPI_BIAS) {
            p.ep.bias = l.bias;
            p.ep.bias_per_row = 1;
        }
        if (epi & EPI_GELU)
            p.ep.act = FB_ACT_GELU_TANH;
        fbf_knobs.engine_mode = mode;
        for (int i = 0; i < 2; ++i)
            if (fbf_gemm_sm90(&env, &p, FBF_RUN, NULL, 0) != FB_STATUS_SUCCESS)
                return 1;
        CK(cudaDeviceSynchronize());
        free_linear(l);
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "--at") == 0) {
        // shapes from the command line (R,S,K R,S,K ...): every
        // arrangement plain and with bias + gelu_tanh, and stream-K
        for (int i = 2; i < argc; ++i) {
            int r, s, k;
            if (sscanf(argv[i], "%d,%d,%d", &r, &s, &k) != 3)
                return 2;
            time_interleaved(cb, env, r, s, k, EPI_PLAIN);
            time_interleaved(cb, env, r, s, k, EPI_BIAS_GELU);
            time_stream_k(cb, env, r, s, k, EPI_BIAS_GELU);
        }
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "--epi-at") == 0) {
        // shapes from the command line: every arrangement with each
        // epilogue (plain, bias, gelu_tanh, both)
        for (int i = 2; i < argc; ++i) {
            int r, s, k;
            if (sscanf(argv[i], "%d,%d,%d", &r, &s, &k) != 3)
                return 2;
            for (int epi = EPI_PLAIN; epi <= EPI_BIAS_GELU; ++epi)
                time_interleaved(cb, env, r, s, k, epi);
        }
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--dual") == 0) {
        const int sh[][3] = {{8192, 768, 3072},   {2048, 4096, 14336},
                             {8192, 4096, 14336}, {1024, 4096, 11008},
                             {4096, 4096, 11008}, {4096, 1024, 4096},
                             {3000, 2000, 5000}};
        for (auto &d : sh)
            time_dual(env, d[0], d[1], d[2]);
        return 0;
    }
    const int modes[3] = {2, 1, 3};
    static const char *const mode_name[] = {"", "ping-pong", "cooperative",
                                            "ping-pong 2x1"};
    // --check-small: the ragged small shapes only (for compute-sanitizer)
    const bool small = argc > 1 && strcmp(argv[1], "--check-small") == 0;
    // each arrangement and store mode, with stream-K off, then forced
    // wherever it can run
    for (int mi = 0; mi < 12; ++mi) {
    fbf_knobs.engine_mode = modes[mi % 3];
    fbf_knobs.engine_store = (mi / 3) % 2;
    fbf_knobs.engine_streamk = 1 + mi / 6;
    printf("== stores %s, stream-K %s\n", (mi / 3) % 2 ? "direct" : "staged",
           mi / 6 ? "forced" : "off");
    printf("== engine mode %s\n", mode_name[modes[mi % 3]]);
    const int shapes[][3] = {{128, 128, 64}, {1, 8, 8}, {77, 200, 40},
                             {1000, 1000, 1000}, {257, 515, 4096},
                             {2048, 4096, 768}, {4096, 11008, 4096},
                             {1500, 4104, 1000}, {300, 72, 136}};
    for (auto &sh : shapes)
        for (int act = 0; act < 5; ++act)
            if (!small || (long)sh[0] * sh[1] * sh[2] <= 1000000000L)
            fails += !check_gemm(cb, env, sh[0], sh[1], sh[2], act,
                                 act % 3, act == 3 ? 0.5f : 1.0f,
                                 act == 4 ? 1.25f : 0.0f);
    printf("correctness: %d failed\n", fails);
    if (small || (argc > 1 && strcmp(argv[1], "--check-only") == 0))
        continue;
    time_gemm(cb, env, 8192, 8192, 8192);
    time_gemm(cb, env, 8192, 11008, 4096);
    time_gemm(cb, env, 4096, 4096, 4096);
    time_gemm(cb, env, 2048, 14336, 4096);
    time_mlp(cb, env, 8192, 768, 3072, 768, true);
    time_mlp(cb, env, 2048, 4096, 14336, 4096, true);
    time_mlp(cb, env, 8192, 4096, 14336, 4096, true);
    time_mlp(cb, env, 4096, 4096, 11008, 4096, true);
    }
    return fails != 0;
}
