/*
 * epilogue_kernels.cu -- elementwise kernels of the cuBLASLt path: bias +
 * activation after (or instead of) a GEMM, and the MLP's gated product.
 *
 * Both are memory bound: one read and one write per element (three
 * accesses for the gated product). Where every column starts on a 16-byte
 * boundary and the column length is a multiple of the vector, each thread
 * moves 16 bytes at a time; otherwise one element. The arithmetic is fp32
 * whatever the storage type, with one rounding at the store.
 */
#include <stdint.h>
#include "device_math.cuh"
#include "kernels.h"
#include "result.h"

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

template <typename T, fb_activation A, int N>
__global__ void __launch_bounds__(kThreads)
fb_epilogue_kernel(T *c, int64_t ldc, int64_t m, int64_t n, float beta,
                   int read_c, const T *bias, int bias_per_row)
{
    const int64_t i0 =
        ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i0 >= m)
        return;
    float row_bias[N];
#pragma unroll
    for (int e = 0; e < N; e++)
        row_bias[e] = (bias != NULL && bias_per_row)
                          ? fb_load_f32(bias[i0 + e])
                          : 0.0f;
    const int64_t step = (int64_t)gridDim.y * blockDim.y;
    for (int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; j < n;
         j += step) {
        fb_pack<T, N> *at = reinterpret_cast<fb_pack<T, N> *>(c + j * ldc + i0);
        fb_pack<T, N> v;
        if (read_c)
            v = *at;
        const float col_bias =
            (bias != NULL && !bias_per_row) ? fb_load_f32(bias[j]) : 0.0f;
        fb_pack<T, N> out;
#pragma unroll
        for (int e = 0; e < N; e++) {
            float x = read_c ? beta * fb_load_f32(v.e[e]) : 0.0f;
            if (bias != NULL)
                x += bias_per_row ? row_bias[e] : col_bias;
            out.e[e] = fb_store_as<T>(fb_act<A>(x));
        }
        *at = out;
    }
}

template <typename T, fb_activation A, int N>
__global__ void __launch_bounds__(kThreads)
fb_gated_product_kernel(const T *g, int64_t ldg, const T *u, int64_t ldu,
                        T *h, int64_t ldh, int64_t rows, int64_t cols)
{
    const int64_t i0 =
        ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (i0 >= rows)
        return;
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
        for (int e = 0; e < N; e++)
            out.e[e] = fb_store_as<T>(fb_act<A>(fb_load_f32(gv.e[e])) *
                                      fb_load_f32(uv.e[e]));
        *reinterpret_cast<fb_pack<T, N> *>(h + j * ldh + i0) = out;
    }
}

template <typename T, fb_activation A>
void launch_epilogue(const sweep &s, int n_vec, cudaStream_t stream, T *c,
                     int64_t ldc, int64_t m, int64_t n, float beta,
                     int read_c, const T *bias, int bias_per_row)
{
    const int V = 16 / sizeof(T);
    if (n_vec == V)
        fb_epilogue_kernel<T, A, 16 / sizeof(T)><<<s.grid, s.block, 0, stream>>>(
            c, ldc, m, n, beta, read_c, bias, bias_per_row);
    else
        fb_epilogue_kernel<T, A, 1><<<s.grid, s.block, 0, stream>>>(
            c, ldc, m, n, beta, read_c, bias, bias_per_row);
}

template <typename T>
void launch_epilogue_act(fb_activation act, const sweep &s, int n_vec,
                         cudaStream_t stream, T *c, int64_t ldc, int64_t m,
                         int64_t n, float beta, int read_c, const T *bias,
                         int bias_per_row)
{
    switch (act) {
    case FB_ACT_RELU:
        launch_epilogue<T, FB_ACT_RELU>(s, n_vec, stream, c, ldc, m, n, beta,
                                        read_c, bias, bias_per_row);
        break;
    case FB_ACT_GELU_TANH:
        launch_epilogue<T, FB_ACT_GELU_TANH>(s, n_vec, stream, c, ldc, m, n,
                                             beta, read_c, bias, bias_per_row);
        break;
    case FB_ACT_GELU_ERF:
        launch_epilogue<T, FB_ACT_GELU_ERF>(s, n_vec, stream, c, ldc, m, n,
                                            beta, read_c, bias, bias_per_row);
        break;
    case FB_ACT_SILU:
        launch_epilogue<T, FB_ACT_SILU>(s, n_vec, stream, c, ldc, m, n, beta,
                                        read_c, bias, bias_per_row);
        break;
    default:
        launch_epilogue<T, FB_ACT_NONE>(s, n_vec, stream, c, ldc, m, n, beta,
                                        read_c, bias, bias_per_row);
        break;
    }
}

template <typename T, fb_activation A>
void launch_gated(const sweep &s, int n_vec, cudaStream_t stream, const T *g,
                  int64_t ldg, const T *u, int64_t ldu, T *h, int64_t ldh,
                  int64_t rows, int64_t cols)
{
    const int V = 16 / sizeof(T);
    if (n_vec == V)
        fb_gated_product_kernel<T, A, 16 / sizeof(T)>
            <<<s.grid, s.block, 0, stream>>>(g, ldg, u, ldu, h, ldh, rows, cols);
    else
        fb_gated_product_kernel<T, A, 1>
            <<<s.grid, s.block, 0, stream>>>(g, ldg, u, ldu, h, ldh, rows, cols);
}

template <typename T>
void launch_gated_act(fb_activation act, const sweep &s, int n_vec,
                      cudaStream_t stream, const T *g, int64_t ldg,
                      const T *u, int64_t ldu, T *h, int64_t ldh,
                      int64_t rows, int64_t cols)
{
    switch (act) {
    case FB_ACT_RELU:
        launch_gated<T, FB_ACT_RELU>(s, n_vec, stream, g, ldg, u, ldu, h, ldh,
                                     rows, cols);
        break;
    case FB_ACT_GELU_TANH:
        launch_gated<T, FB_ACT_GELU_TANH>(s, n_vec, stream, g, ldg, u, ldu, h,
                                          ldh, rows, cols);
        break;
    case FB_ACT_GELU_ERF:
        launch_gated<T, FB_ACT_GELU_ERF>(s, n_vec, stream, g, ldg, u, ldu, h,
                                         ldh, rows, cols);
        break;
    case FB_ACT_SILU:
        launch_gated<T, FB_ACT_SILU>(s, n_vec, stream, g, ldg, u, ldu, h, ldh,
                                     rows, cols);
        break;
    default:
        launch_gated<T, FB_ACT_NONE>(s, n_vec, stream, g, ldg, u, ldu, h, ldh,
                                     rows, cols);
        break;
    }
}

} /* namespace */

fb_status fb_launch_epilogue(cudaStream_t stream, fb_dtype dtype, void *c,
                             int64_t ldc, int64_t m, int64_t n, float beta,
                             int read_c, const void *bias, int bias_per_row,
                             fb_activation act, fb_cuda_result *r)
{
    if (m <= 0 || n <= 0)
        return FB_STATUS_SUCCESS;
    const int64_t elem = fb_dtype_size(dtype);
    const int vec = (int)(16 / elem);
    const int n_vec = (m % vec == 0 && aligned16(c, ldc, elem)) ? vec : 1;
    const sweep s = plan_sweep(m, n, n_vec);
    if (!s.ok)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "epilogue: %lld rows is more than one launch "
                              "covers", (long long)m);
    switch (dtype) {
    case FB_DTYPE_F32:
        launch_epilogue_act<float>(act, s, n_vec, stream, (float *)c, ldc, m,
                                   n, beta, read_c, (const float *)bias,
                                   bias_per_row);
        break;
    case FB_DTYPE_F16:
        launch_epilogue_act<__half>(act, s, n_vec, stream, (__half *)c, ldc,
                                    m, n, beta, read_c, (const __half *)bias,
                                    bias_per_row);
        break;
    case FB_DTYPE_BF16:
        launch_epilogue_act<__nv_bfloat16>(
            act, s, n_vec, stream, (__nv_bfloat16 *)c, ldc, m, n, beta,
            read_c, (const __nv_bfloat16 *)bias, bias_per_row);
        break;
    default:
        return fb_result_fail(r, FB_STATUS_INTERNAL, "epilogue: dtype %d",
                              (int)dtype);
    }
    return fb_result_launch(r, "fb_epilogue_kernel");
}

fb_status fb_launch_gated_product(cudaStream_t stream, fb_dtype dtype,
                                  fb_activation act, const void *g,
                                  int64_t ldg, const void *u, int64_t ldu,
                                  void *h, int64_t ldh, int64_t rows,
                                  int64_t cols, fb_cuda_result *r)
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
        launch_gated_act<float>(act, s, n_vec, stream, (const float *)g, ldg,
                                (const float *)u, ldu, (float *)h, ldh, rows,
                                cols);
        break;
    case FB_DTYPE_F16:
        launch_gated_act<__half>(act, s, n_vec, stream, (const __half *)g,
                                 ldg, (const __half *)u, ldu, (__half *)h,
                                 ldh, rows, cols);
        break;
    case FB_DTYPE_BF16:
        launch_gated_act<__nv_bfloat16>(
            act, s, n_vec, stream, (const __nv_bfloat16 *)g, ldg,
            (const __nv_bfloat16 *)u, ldu, (__nv_bfloat16 *)h, ldh, rows,
            cols);
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
