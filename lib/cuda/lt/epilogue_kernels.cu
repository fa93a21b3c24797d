/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epilogue_kernels.cu -- elementwise kernels of the cuBLASLt path: bias +
 * activation after (or instead of) a GEMM, and the MLP's gated product.
 *
 * Both are memory bound: one read and one write per element (three
 * accesses for the gated product; one more, of fp32, when the epilogue
 * reads a 16-bit call's fp32 accumulator). Where every column starts on a
 * 16-byte boundary and the column length is a multiple of the vector, each
 * thread moves 16 bytes at a time; otherwise one element. The arithmetic
 * is fp32 whatever the storage type, with one rounding at the store. A
 * missing bias is not added as 0 (which would turn -0 into +0).
 */
#include <stdint.h>
#include "device_math.cuh"
#include "kernels.h"
#include "module/result.h"

namespace {

/* N consecutive elements, loaded and stored as one access. */
template <typename T, int N> struct alignas(sizeof(T) * N) fb_pack {
    T e[N];
};

const int kThreads = 256;
const int64_t kMaxGridY = 65535;

/* Block shape for a column-major rows x cols sweep where each thread takes
 * `per_thread` consecutive rows: x along the columns' contiguous length,
 * y across columns, so short columns still fill a block. */
struct sweep {
    dim3 grid, block;
    bool ok;
};

sweep plan_sweep(int64_t rows, int64_t cols, int per_thread)
{
    sweep s;
    int64_t lanes = (rows + per_thread - 1) / per_thread;
    int64_t tx = lanes >= kThreads ? kThreads : ((lanes + 31) / 32) * 32;
    int64_t ty = kThreads / tx;
    int64_t gx = (lanes + tx - 1) / tx;
    int64_t gy = (cols + ty - 1) / ty;
    if (gy > kMaxGridY)
        gy = kMaxGridY; /* the kernels loop over the rest */
    s.block = dim3((unsigned)tx, (unsigned)ty, 1);
    s.grid = dim3((unsigned)gx, (unsigned)gy, 1);
    s.ok = gx <= INT32_MAX;
    return s;
}

bool aligned16(const void *p, int64_t ld, int64_t elem)
{
    return ((uintptr_t)p % 16) == 0 && (ld * elem) % 16 == 0;
}

/* N consecutive rows of one column of an fp32 matrix, or zeros. */
template <int N>
__device__ __forceinline__ fb_pack<float, N> load_acc(const float *acc,
                                                      int64_t at)
{
    fb_pack<float, N> a;
    if (acc != NULL) {
        a = *reinterpret_cast<const fb_pack<float, N> *>(acc + at);
    } else {
#pragma unroll
        for (int e = 0; e < N; e++)
            a.e[e] = 0.0f;
    }
    return a;
}

/* Per-row bias of rows i0 .. i0 + N - 1, or zeros. */
template <typename T, int N>
__device__ __forceinline__ void load_row_bias(const T *bias, int64_t i0,
                                              float *out)
{
#pragma unroll
    for (int e = 0; e < N; e++)
        out[e] = bias != NULL ? fb_load_f32(bias[i0 + e]) : 0.0f;
}

template <typename T, fb_activation A, int N>
__global__ void __launch_bounds__(kThreads)
fb_epilogue_kernel(T *c, int64_t ldc, int64_t m, int64_t n,
                   const float *acc, int64_t ldacc, float beta, int read_c,
                   const T *bias, int bias_per_row)
{
    const int64_t i0 =
        ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i0 >= m)
        return;
    float row_bias[N];
    load_row_bias<T, N>(bias_per_row ? bias : NULL, i0, row_bias);
    const int64_t step = (int64_t)gridDim.y * blockDim.y;
    for (int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; j < n;
         j += step) {
        fb_pack<T, N> *at = reinterpret_cast<fb_pack<T, N> *>(c + j * ldc + i0);
        const fb_pack<float, N> a = load_acc<N>(acc, j * ldacc + i0);
        fb_pack<T, N> v;
        if (read_c)
            v = *at;
        const float col_bias =
            (bias != NULL && !bias_per_row) ? fb_load_f32(bias[j]) : 0.0f;
        fb_pack<T, N> out;
#pragma unroll
        for (int e = 0; e < N; e++) {
            /* Without acc, beta C alone: adding it to 0 would turn -0
             * into +0. */
            float x = a.e[e];
            if (read_c) {
                const float bc = beta * fb_load_f32(v.e[e]);
                x = acc != NULL ? x + bc : bc;
            }
            if (bias != NULL)
                x += bias_per_row ? row_bias[e] : col_bias;
            out.e[e] = fb_store_as<T>(fb_act<A>(x));
        }
        *at = out;
    }
}

template <typename T, fb_activation A, int N>
__global__ void __launch_bounds__(kThreads)
fb_gated_product_kernel(const T *g, int64_t ldg, const T *bg, const T *u,
                        int64_t ldu, const T *bu, T *h, int64_t ldh,
                        int64_t rows, int64_t cols)
{
    const int64_t i0 =
        ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i0 >= rows)
        return;
    float gate_bias[N], up_bias[N];
    load_row_bias<T, N>(bg, i0, gate_bias);
    load_row_bias<T, N>(bu, i0, up_bias);
    const int64_t step = (int64_t)gridDim.y * blockDim.y;
    for (int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
         j < cols; j += step) {
        /* h may be g: read both inputs before the store. */
        const fb_pack<T, N> gv =
            *reinterpret_cast<const fb_pack<T, N> *>(g + j * ldg + i0);
        const fb_pack<T, N> uv =
            *reinterpret_cast<const fb_pack<T, N> *>(u + j * ldu + i0);
        fb_pack<T, N> out;
#pragma unroll
        for (int e = 0; e < N; e++) {
            float gx = fb_load_f32(gv.e[e]), ux = fb_load_f32(uv.e[e]);
            if (bg != NULL)
                gx += gate_bias[e];
            if (bu != NULL)
                ux += up_bias[e];
            out.e[e] = fb_store_as<T>(fb_act<A>(gx) * ux);
        }
        *reinterpret_cast<fb_pack<T, N> *>(h + j * ldh + i0) = out;
    }
}

/* The arguments of one epilogue launch, typed. */
template <typename T> struct epilogue_args {
    T *c;
    int64_t ldc, m, n;
    const float *acc;
    int64_t ldacc;
    float beta;
    int read_c;
    const T *bias;
    int bias_per_row;
};

template <typename T, fb_activation A>
void launch_epilogue(const sweep &s, int n_vec, cudaStream_t stream,
                     const epilogue_args<T> &a)
{
    const int V = 16 / sizeof(T);
    if (n_vec == V)
        fb_epilogue_kernel<T, A, V><<<s.grid, s.block, 0, stream>>>(
            a.c, a.ldc, a.m, a.n, a.acc, a.ldacc, a.beta, a.read_c, a.bias,
            a.bias_per_row);
    else
        fb_epilogue_kernel<T, A, 1><<<s.grid, s.block, 0, stream>>>(
            a.c, a.ldc, a.m, a.n, a.acc, a.ldacc, a.beta, a.read_c, a.bias,
            a.bias_per_row);
}

template <typename T>
void launch_epilogue_act(fb_activation act, const sweep &s, int n_vec,
                         cudaStream_t stream, const epilogue_args<T> &a)
{
    switch (act) {
    case FB_ACT_RELU:
        launch_epilogue<T, FB_ACT_RELU>(s, n_vec, stream, a);
        break;
    case FB_ACT_GELU_TANH:
        launch_epilogue<T, FB_ACT_GELU_TANH>(s, n_vec, stream, a);
        break;
    case FB_ACT_GELU_ERF:
        launch_epilogue<T, FB_ACT_GELU_ERF>(s, n_vec, stream, a);
        break;
    case FB_ACT_SILU:
        launch_epilogue<T, FB_ACT_SILU>(s, n_vec, stream, a);
        break;
    default:
        launch_epilogue<T, FB_ACT_NONE>(s, n_vec, stream, a);
        break;
    }
}

template <typename T> struct gated_args {
    const T *g;
    int64_t ldg;
    const T *bg, *u;
    int64_t ldu;
    const T *bu;
    T *h;
    int64_t ldh, rows, cols;
};

template <typename T, fb_activation A>
void launch_gated(const sweep &s, int n_vec, cudaStream_t stream,
                  const gated_args<T> &a)
{
    const int V = 16 / sizeof(T);
    if (n_vec == V)
        fb_gated_product_kernel<T, A, V><<<s.grid, s.block, 0, stream>>>(
            a.g, a.ldg, a.bg, a.u, a.ldu, a.bu, a.h, a.ldh, a.rows, a.cols);
    else
        fb_gated_product_kernel<T, A, 1><<<s.grid, s.block, 0, stream>>>(
            a.g, a.ldg, a.bg, a.u, a.ldu, a.bu, a.h, a.ldh, a.rows, a.cols);
}

template <typename T>
void launch_gated_act(fb_activation act, const sweep &s, int n_vec,
                      cudaStream_t stream, const gated_args<T> &a)
{
    switch (act) {
    case FB_ACT_RELU:
        launch_gated<T, FB_ACT_RELU>(s, n_vec, stream, a);
        break;
    case FB_ACT_GELU_TANH:
        launch_gated<T, FB_ACT_GELU_TANH>(s, n_vec, stream, a);
        break;
    case FB_ACT_GELU_ERF:
        launch_gated<T, FB_ACT_GELU_ERF>(s, n_vec, stream, a);
        break;
    case FB_ACT_SILU:
        launch_gated<T, FB_ACT_SILU>(s, n_vec, stream, a);
        break;
    default:
        launch_gated<T, FB_ACT_NONE>(s, n_vec, stream, a);
        break;
    }
}

template <typename T>
void epilogue_typed(fb_activation act, const sweep &s, int n_vec,
                    cudaStream_t stream, void *c, int64_t ldc, int64_t m,
                    int64_t n, const float *acc, int64_t ldacc, float beta,
                    int read_c, const void *bias, int bias_per_row)
{
    const epilogue_args<T> a = {static_cast<T *>(c), ldc, m, n, acc, ldacc,
                                beta, read_c, static_cast<const T *>(bias),
                                bias_per_row};
    launch_epilogue_act<T>(act, s, n_vec, stream, a);
}

template <typename T>
void gated_typed(fb_activation act, const sweep &s, int n_vec,
                 cudaStream_t stream, const void *g, int64_t ldg,
                 const void *bg, const void *u, int64_t ldu, const void *bu,
                 void *h, int64_t ldh, int64_t rows, int64_t cols)
{
    const gated_args<T> a = {static_cast<const T *>(g), ldg,
                             static_cast<const T *>(bg),
                             static_cast<const T *>(u), ldu,
                             static_cast<const T *>(bu), static_cast<T *>(h),
                             ldh, rows, cols};
    launch_gated_act<T>(act, s, n_vec, stream, a);
}

} /* namespace */

fb_status fb_launch_epilogue(cudaStream_t stream, fb_dtype dtype, void *c,
                             int64_t ldc, int64_t m, int64_t n,
                             const float *acc, int64_t ldacc, float beta,
                             int read_c, const void *bias, int bias_per_row,
                             fb_activation act, fb_cuda_result *r)
{
    if (m <= 0 || n <= 0)
        return FB_STATUS_SUCCESS;
    const int64_t elem = fb_dtype_size(dtype);
    const int vec = (int)(16 / elem);
    /* The vector path moves vec elements of C and vec floats of acc per
     * access: both must start every column on that boundary. */
    const bool acc_vec = acc == NULL ||
                         ((uintptr_t)acc % ((uintptr_t)vec * sizeof(float)) ==
                              0 &&
                          ldacc % vec == 0);
    const int n_vec =
        (m % vec == 0 && aligned16(c, ldc, elem) && acc_vec) ? vec : 1;
    const sweep s = plan_sweep(m, n, n_vec);
    if (!s.ok)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "epilogue: %lld rows is more than one launch "
                              "covers", (long long)m);
    switch (dtype) {
    case FB_DTYPE_F32:
        epilogue_typed<float>(act, s, n_vec, stream, c, ldc, m, n, acc, ldacc,
                              beta, read_c, bias, bias_per_row);
        break;
    case FB_DTYPE_F16:
        epilogue_typed<__half>(act, s, n_vec, stream, c, ldc, m, n, acc,
                               ldacc, beta, read_c, bias, bias_per_row);
        break;
    case FB_DTYPE_BF16:
        epilogue_typed<__nv_bfloat16>(act, s, n_vec, stream, c, ldc, m, n,
                                      acc, ldacc, beta, read_c, bias,
                                      bias_per_row);
        break;
    default:
        return fb_result_fail(r, FB_STATUS_INTERNAL, "epilogue: dtype %d",
                              (int)dtype);
    }
    return fb_result_launch(r, "fb_epilogue_kernel");
}

fb_status fb_launch_gated_product(cudaStream_t stream, fb_dtype dtype,
                                  fb_activation act, const void *g,
                                  int64_t ldg, const void *bg, const void *u,
                                  int64_t ldu, const void *bu, void *h,
                                  int64_t ldh, int64_t rows, int64_t cols,
                                  fb_cuda_result *r)
{
    if (rows <= 0 || cols <= 0)
        return FB_STATUS_SUCCESS;
    const int64_t elem = fb_dtype_size(dtype);
    const int vec = (int)(16 / elem);
    const int n_vec = (rows % vec == 0 && aligned16(g, ldg, elem) &&
                       aligned16(u, ldu, elem) && aligned16(h, ldh, elem))
                          ? vec
                          : 1;
    const sweep s = plan_sweep(rows, cols, n_vec);
    if (!s.ok)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "gated product: %lld rows is more than one "
                              "launch covers", (long long)rows);
    switch (dtype) {
    case FB_DTYPE_F32:
        gated_typed<float>(act, s, n_vec, stream, g, ldg, bg, u, ldu, bu, h,
                           ldh, rows, cols);
        break;
    case FB_DTYPE_F16:
        gated_typed<__half>(act, s, n_vec, stream, g, ldg, bg, u, ldu, bu, h,
                            ldh, rows, cols);
        break;
    case FB_DTYPE_BF16:
        gated_typed<__nv_bfloat16>(act, s, n_vec, stream, g, ldg, bg, u, ldu,
                                   bu, h, ldh, rows, cols);
        break;
    default:
        return fb_result_fail(r, FB_STATUS_INTERNAL,
                              "gated product: dtype %d", (int)dtype);
    }
    return fb_result_launch(r, "fb_gated_product_kernel");
}

cudaError_t fb_kernels_check_image(void)
{
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a,
                                 fb_epilogue_kernel<float, FB_ACT_NONE, 1>);
}
