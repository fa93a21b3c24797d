/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_api.cu -- the helpers every launcher shares (fused_internal.h).
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"

void fbf_set_path(char *path, size_t pathlen, const char *name)
{
    if (path && pathlen)
        snprintf(path, pathlen, "cuda-fused/%s", name);
}

fb_status fbf_launch_status(cudaError_t e)
{
    return e == cudaSuccess ? FB_STATUS_SUCCESS : FB_STATUS_EXECUTION_FAILED;
}

cudaError_t fbf_launch_grid(const void *func, int G, int threads,
                            void **args, size_t smem, cudaStream_t stream,
                            bool programmatic)
{
    cudaLaunchAttribute at;
    at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(G);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &at;
    cfg.numAttrs = programmatic ? 1 : 0;
    const cudaError_t e = cudaLaunchKernelExC(&cfg, func, args);
    if (programmatic &&
        (e == cudaErrorInvalidValue || e == cudaErrorNotSupported)) {
        (void)cudaGetLastError(); /* a refused launch is not sticky */
        return fbf_launch_grid(func, G, threads, args, smem, stream, false);
    }
    return e;
}

cudaError_t fbf_allow_smem(std::atomic<unsigned long long> &ready,
                           const void *func, int device, size_t bytes)
{
    const unsigned long long bit =
        (device >= 0 && device < 64) ? 1ull << device : 0ull;
    if (bit && (ready.load(std::memory_order_acquire) & bit))
        return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(
        func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == cudaSuccess && bit)
        ready.fetch_or(bit, std::memory_order_release);
    return e;
}
