/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eager_baseline.cu -- the elementwise kernels PyTorch eager runs between
 * its cuBLAS GEMMs, for the benchmark's GPU baseline (see eager_baseline.h).
 *
 * Written the way PyTorch's elementwise kernels are: one thread per 16-byte
 * vector (4 fp32 or 8 fp16/bf16 values) when the rows allow it, fp32
 * arithmetic, libdevice tanhf/erff/expf, a scalar fallback otherwise. The
 * activations use PyTorch's own formulas, so the baseline is what users
 * run, neither slower nor cleverer.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include "eager_baseline.h"

namespace {

template <typename T> struct conv;
template <> struct conv<float> {
    static __device__ float load(float v) { return v; }
    static __device__ float store(float v) { return v; }
};
template <> struct conv<__half> {
    static __device__ float load(__half v) { return __half2float(v); }
    static __device__ __half store(float v) { return __float2half_rn(v); }
};
template <> struct conv<__nv_bfloat16> {
    static __device__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <int ACT> __device__ __forceinline__ float act_f(float x)
{
    switch (ACT) {
    case FB_ACT_RELU:
        return x < 0.0f ? 0.0f : x; /* NaN stays NaN, as torch.relu */
    case FB_ACT_GELU_TANH: {
        const float beta = 0.7978845608028654f; /* sqrt(2/pi) */
        return 0.5f * x * (1.0f + tanhf(beta * (x + 0.044715f * x * x * x)));
    }
    case FB_ACT_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case FB_ACT_SILU:
        return x / (1.0f + expf(-x));
    default:
        return x;
    }
}

/* 16 bytes of T. */
template <typename T> struct alignas(16) vec16 {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

/* c <- act(c + bias), one 16-byte vector per thread; rows of nv vectors. */
template <typename T, int ACT, bool BIAS, typename I>
__global__ void bias_act_vec(T *c, I ldc, const T *bias, I nv, I total)
{
    constexpr int N = vec16<T>::N;
    I v = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= total)
        return;
    I row = v / nv, col = (v - row * nv) * N;
    vec16<T> *p = reinterpret_cast<vec16<T> *>(c + row * ldc + col);
    vec16<T> x = *p, b;
    if (BIAS)
        b = *reinterpret_cast<const vec16<T> *>(bias + col);
#pragma unroll
    for (int i = 0; i < N; i++) {
        float f = conv<T>::load(x.v[i]);
        if (BIAS)
            f += conv<T>::load(b.v[i]);
        x.v[i] = conv<T>::store(act_f<ACT>(f));
    }
    *p = x;
}

template <typename T, int ACT, bool BIAS>
__global__ void bias_act_scalar(T *c, int64_t ldc, const T *bias, int64_t n,
                                int64_t total)
{
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= total)
        return;
    int64_t row = e / n, col = e - row * n;
    float f = conv<T>::load(c[row * ldc + col]);
    if (BIAS)
        f += conv<T>::load(bias[col]);
    c[row * ldc + col] = conv<T>::store(act_f<ACT>(f));
}

/* a <- a .* (u + bias), contiguous rows of nv vectors. */
template <typename T, bool BIAS, typename I>
__global__ void mul_vec(T *a, const T *u, const T *bias, I nv, I total)
{
    constexpr int N = vec16<T>::N;
    I v = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= total)
        return;
    I col = (v % nv) * N;
    vec16<T> *pa = reinterpret_cast<vec16<T> *>(a) + v;
    vec16<T> x = *pa, y = reinterpret_cast<const vec16<T> *>(u)[v], b;
    if (BIAS)
        b = *reinterpret_cast<const vec16<T> *>(bias + col);
#pragma unroll
    for (int i = 0; i < N; i++) {
        float g = conv<T>::load(y.v[i]);
        if (BIAS)
            g += conv<T>::load(b.v[i]);
        x.v[i] = conv<T>::store(conv<T>::load(x.v[i]) * g);
    }
    *pa = x;
}

template <typename T, bool BIAS>
__global__ void mul_scalar(T *a, const T *u, const T *bias, int64_t n, int64_t total)
{
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= total)
        return;
    float g = conv<T>::load(u[e]);
    if (BIAS)
        g += conv<T>::load(bias[e % n]);
    a[e] = conv<T>::store(conv<T>::load(a[e]) * g);
}

/* The host benchmark's generator (bench/bench_random.c), bit for bit. */
__device__ float uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

template <typename T>
__global__ void fill_uniform(T *p, int64_t count, uint64_t seed, float scale)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        p[i] = conv<T>::store(scale * uniform(seed, (uint64_t)i));
}

constexpr int kBlock = 256;

inline unsigned blocks_for(int64_t work)
{
    return (unsigned)((work + kBlock - 1) / kBlock);
}

inline bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

template <typename T, int ACT, bool BIAS>
int launch_bias_act(int64_t m, int64_t n, T *c, int64_t ldc, const T *bias,
                    cudaStream_t s)
{
    constexpr int N = vec16<T>::N;
    if (n % N == 0 && ldc % N == 0 && aligned16(c) && (!BIAS || aligned16(bias))) {
        int64_t nv = n / N, total = m * nv;
        if ((uint64_t)m * (uint64_t)ldc < (1ull << 32))
            bias_act_vec<T, ACT, BIAS, uint32_t><<<blocks_for(total), kBlock, 0, s>>>(
                c, (uint32_t)ldc, bias, (uint32_t)nv, (uint32_t)total);
        else
            bias_act_vec<T, ACT, BIAS, uint64_t><<<blocks_for(total), kBlock, 0, s>>>(
                c, (uint64_t)ldc, bias, (uint64_t)nv, (uint64_t)total);
    } else {
        bias_act_scalar<T, ACT, BIAS><<<blocks_for(m * n), kBlock, 0, s>>>(
            c, ldc, bias, n, m * n);
    }
    return (int)cudaGetLastError();
}

template <typename T, int ACT>
int bias_act_t(int64_t m, int64_t n, void *c, int64_t ldc, const void *bias,
               cudaStream_t s)
{
    if (bias)
        return launch_bias_act<T, ACT, true>(m, n, (T *)c, ldc, (const T *)bias, s);
    return launch_bias_act<T, ACT, false>(m, n, (T *)c, ldc, nullptr, s);
}

template <typename T>
int bias_act_dispatch(fb_activation act, int64_t m, int64_t n, void *c,
                      int64_t ldc, const void *bias, cudaStream_t s)
{
    switch (act) {
    case FB_ACT_RELU: return bias_act_t<T, FB_ACT_RELU>(m, n, c, ldc, bias, s);
    case FB_ACT_GELU_TANH: return bias_act_t<T, FB_ACT_GELU_TANH>(m, n, c, ldc, bias, s);
    case FB_ACT_GELU_ERF: return bias_act_t<T, FB_ACT_GELU_ERF>(m, n, c, ldc, bias, s);
    case FB_ACT_SILU: return bias_act_t<T, FB_ACT_SILU>(m, n, c, ldc, bias, s);
    case FB_ACT_NONE: return bias_act_t<T, FB_ACT_NONE>(m, n, c, ldc, bias, s);
    }
    return (int)cudaErrorInvalidValue;
}

template <typename T, bool BIAS>
int launch_mul(int64_t m, int64_t n, T *a, const T *u, const T *bias, cudaStream_t s)
{
    constexpr int N = vec16<T>::N;
    if (n % N == 0 && aligned16(a) && aligned16(u) && (!BIAS || aligned16(bias))) {
        int64_t nv = n / N, total = m * nv;
        if ((uint64_t)m * (uint64_t)n < (1ull << 32))
            mul_vec<T, BIAS, uint32_t><<<blocks_for(total), kBlock, 0, s>>>(
                a, u, bias, (uint32_t)nv, (uint32_t)total);
        else
            mul_vec<T, BIAS, uint64_t><<<blocks_for(total), kBlock, 0, s>>>(
                a, u, bias, (uint64_t)nv, (uint64_t)total);
    } else {
        mul_scalar<T, BIAS><<<blocks_for(m * n), kBlock, 0, s>>>(a, u, bias, n, m * n);
    }
    return (int)cudaGetLastError();
}

template <typename T>
int mul_t(int64_t m, int64_t n, void *a, const void *u, const void *bias,
          cudaStream_t s)
{
    if (bias)
        return launch_mul<T, true>(m, n, (T *)a, (const T *)u, (const T *)bias, s);
    return launch_mul<T, false>(m, n, (T *)a, (const T *)u, nullptr, s);
}

template <typename T>
int fill_t(void *p, int64_t count, uint64_t seed, float scale, cudaStream_t s)
{
    int64_t blocks = (count + kBlock - 1) / kBlock;
    if (blocks > 65536)
        blocks = 65536;
    if (blocks < 1)
        blocks = 1;
    fill_uniform<T><<<(unsigned)blocks, kBlock, 0, s>>>((T *)p, count, seed, scale);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int fbb_eager_bias_act(fb_dtype t, fb_activation act, int64_t m,
                                  int64_t n, void *c, int64_t ldc,
                                  const void *bias, void *stream)
{
    if (m <= 0 || n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (t) {
    case FB_DTYPE_F32: return bias_act_dispatch<float>(act, m, n, c, ldc, bias, s);
    case FB_DTYPE_F16: return bias_act_dispatch<__half>(act, m, n, c, ldc, bias, s);
    case FB_DTYPE_BF16:
        return bias_act_dispatch<__nv_bfloat16>(act, m, n, c, ldc, bias, s);
    }
    return (int)cudaErrorInvalidValue;
}

extern "C" int fbb_eager_mul(fb_dtype t, int64_t m, int64_t n, void *a,
                             const void *u, const void *bias_u, void *stream)
{
    if (m <= 0 || n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (t) {
    case FB_DTYPE_F32: return mul_t<float>(m, n, a, u, bias_u, s);
    case FB_DTYPE_F16: return mul_t<__half>(m, n, a, u, bias_u, s);
    case FB_DTYPE_BF16: return mul_t<__nv_bfloat16>(m, n, a, u, bias_u, s);
    }
    return (int)cudaErrorInvalidValue;
}

extern "C" int fbb_fill_uniform(fb_dtype t, void *p, int64_t count, uint64_t seed,
                                float scale, void *stream)
{
    if (count <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (t) {
    case FB_DTYPE_F32: return fill_t<float>(p, count, seed, scale, s);
    case FB_DTYPE_F16: return fill_t<__half>(p, count, seed, scale, s);
    case FB_DTYPE_BF16: return fill_t<__nv_bfloat16>(p, count, seed, scale, s);
    }
    return (int)cudaErrorInvalidValue;
}
