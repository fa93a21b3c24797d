/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_mem.c -- device memory for the GPU test program. See cuda_mem.h.
 */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "cuda_mem.h"

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes > 0 ? bytes : 1) != cudaSuccess)
        return NULL;
    return p;
}

static void dev_release(void *p)
{
    const cudaError_t e = cudaFree(p);
    if (e != cudaSuccess)
        tap_bail("cudaFree: %s", cudaGetErrorString(e));
}

static void dev_put(void *dst, const void *src, size_t bytes)
{
    const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess)
        tap_bail("cudaMemcpy to the device: %s", cudaGetErrorString(e));
}

static void dev_get(void *dst, const void *src, size_t bytes)
{
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        tap_bail("the device reports an error after a library call: %s",
                 cudaGetErrorString(e));
    e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        tap_bail("cudaMemcpy from the device: %s", cudaGetErrorString(e));
}

const tmem tmem_cuda = {"device", dev_alloc, dev_release, dev_put, dev_get};

int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

int cuda_device_cc(void)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        return 0;
    return 10 * prop.major + prop.minor;
}

void cuda_device_describe(char *name, size_t len, int *sms)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    *sms = 0;
    snprintf(name, len, "unknown");
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        return;
    snprintf(name, len, "%s", prop.name);
    *sms = prop.multiProcessorCount;
}
