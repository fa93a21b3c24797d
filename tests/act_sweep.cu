/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * act_sweep.cu -- the CUDA activations evaluated on the GPU for the test
 * of their agreement (test_gpu_act.c): the accurate form every path but
 * the 16-bit fused kernels uses (device_math.cuh's fb_act_dynamic) and
 * the fast form of the tiny kernels, the prefill pair and the GEMM
 * engine (fused_device.cuh's act_fast), on the same inputs.
 */
#include <cuda_runtime.h>
#include "fused/fused_device.cuh"
#include "act_sweep.h"

__global__ void act_both(int act, const float *x, float *fast,
                         float *accurate, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        fast[i] = fbf::act_fast((fb_activation)act, x[i]);
        accurate[i] = fb_act_dynamic((fb_activation)act, x[i]);
    }
}

extern "C" int fb_test_act_sweep(int act, const float *x, float *fast,
                                 float *accurate, int n)
{
    float *d = NULL;
    const size_t bytes = (size_t)n * sizeof(float);
    if (cudaMalloc(&d, 3 * bytes) != cudaSuccess)
        return 0;
    int ok = cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice) == cudaSuccess;
    if (ok) {
        act_both<<<(n + 255) / 256, 256>>>(act, d, d + n, d + 2 * (size_t)n,
                                           n);
        ok = cudaGetLastError() == cudaSuccess &&
             cudaMemcpy(fast, d + n, bytes, cudaMemcpyDeviceToHost) ==
                 cudaSuccess &&
             cudaMemcpy(accurate, d + 2 * (size_t)n, bytes,
                        cudaMemcpyDeviceToHost) == cudaSuccess;
    }
    cudaFree(d);
    return ok;
}
