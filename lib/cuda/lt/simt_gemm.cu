/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simt_gemm.cu -- a plain tiled GEMM with the whole epilogue, for operands
 * that no cuBLASLt algorithm accepts (a pointer, leading dimension or bias
 * aligned only to its element size, say).
 *
 * Correct first: 16 x 16 output tiles, one output per thread, 16-deep
 * slices of op(A) and op(B) staged in shared memory, fp32 accumulation in
 * k order, then act(alpha * acc + beta * C + bias) and one rounding at the
 * store. It needs only element alignment and reads nothing outside the
 * operands' windows. It is not fast, and is not meant to be.
 */
#include <stdint.h>
#include "device_math.cuh"
#include "kernels.h"
#include "module/result.h"

namespace {

const int kTile = 16;
const int64_t kMaxGridY = 65535;

struct simt_args {
    int transa, transb;
    int64_t m, n, k;
    float alpha, beta;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    const void *bias;
    int bias_per_row;
    fb_activation act;
};

template <typename T>
__global__ void __launch_bounds__(kTile * kTile) fb_simt_gemm_kernel(simt_args p)
{
    __shared__ float a_tile[kTile][kTile + 1]; /* [k][row] */
    __shared__ float b_tile[kTile][kTile + 1]; /* [col][k] */
    const T *A = static_cast<const T *>(p.a);
    const T *B = static_cast<const T *>(p.b);
    T *C = static_cast<T *>(p.c);
    const T *bias = static_cast<const T *>(p.bias);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t i = (int64_t)blockIdx.x * kTile + tx;

    /* Every thread of a block runs the same number of iterations of both
     * loops, so the barriers inside are reached by all of them. */
    for (int64_t j0 = (int64_t)blockIdx.y * kTile; j0 < p.n;
         j0 += (int64_t)gridDim.y * kTile) {
        const int64_t j = j0 + ty;
        float acc = 0.0f;
        for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
            /* op(A)(row, kk): row i0 + tx, kk = k0 + ty */
            const int64_t ar = (int64_t)blockIdx.x * kTile + tx;
            const int64_t ak = k0 + ty;
            float av = 0.0f;
            if (ar < p.m && ak < p.k)
                av = fb_load_f32(p.transa ? A[ak + ar * p.lda]
                                          : A[ar + ak * p.lda]);
            a_tile[ty][tx] = av;
            /* op(B)(kk, col): kk = k0 + tx, col j0 + ty */
            const int64_t bk = k0 + tx;
            float bv = 0.0f;
            if (bk < p.k && j < p.n)
                bv = fb_load_f32(p.transb ? B[j + bk * p.ldb]
                                          : B[bk + j * p.ldb]);
            b_tile[ty][tx] = bv;
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < kTile; kk++)
                acc = fmaf(a_tile[kk][tx], b_tile[ty][kk], acc);
            __syncthreads();
        }
        if (i < p.m && j < p.n) {
            T *at = C + i + j * p.ldc;
            float x = p.alpha * acc;
            if (p.beta != 0.0f) /* beta == 0: C is not read */
                x += p.beta * fb_load_f32(*at);
            if (bias != NULL)
                x += fb_load_f32(bias[p.bias_per_row ? i : j]);
            *at = fb_store_as<T>(fb_act_dynamic(p.act, x));
        }
    }
}

} /* namespace */

fb_status fb_launch_simt_gemm(cudaStream_t stream, const fb_gemm_problem *p,
                              fb_cuda_result *r)
{
    if (p->m <= 0 || p->n <= 0)
        return FB_STATUS_SUCCESS;
    simt_args a;
    a.transa = p->transa;
    a.transb = p->transb;
    a.m = p->m;
    a.n = p->n;
    a.k = p->k;
    a.alpha = p->alpha;
    a.beta = p->beta;
    a.a = p->a;
    a.lda = p->lda;
    a.b = p->b;
    a.ldb = p->ldb;
    a.c = p->c;
    a.ldc = p->ldc;
    a.bias = p->ep.bias;
    a.bias_per_row = p->ep.bias_per_row;
    a.act = p->ep.act;

    const int64_t gx = (p->m + kTile - 1) / kTile;
    int64_t gy = (p->n + kTile - 1) / kTile;
    if (gy > kMaxGridY)
        gy = kMaxGridY; /* the kernel loops over the other column tiles */
    if (gx > INT32_MAX)
        return fb_result_fail(r, FB_STATUS_NOT_SUPPORTED,
                              "fallback gemm: m = %lld is more than one "
                              "launch covers", (long long)p->m);
    const dim3 grid((unsigned)gx, (unsigned)gy, 1), block(kTile, kTile, 1);
    switch (p->dtype) {
    case FB_DTYPE_F32:
        fb_simt_gemm_kernel<float><<<grid, block, 0, stream>>>(a);
        break;
    case FB_DTYPE_F16:
        fb_simt_gemm_kernel<__half><<<grid, block, 0, stream>>>(a);
        break;
    case FB_DTYPE_BF16:
        fb_simt_gemm_kernel<__nv_bfloat16><<<grid, block, 0, stream>>>(a);
        break;
    default:
        return fb_result_fail(r, FB_STATUS_INTERNAL, "fallback gemm: dtype %d",
                              (int)p->dtype);
    }
    return fb_result_launch(r, "fb_simt_gemm_kernel");
}
