/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_libcuda.c -- a stand-in for the CUDA driver (built as libcuda.so,
 * the name the library looks for among the loaded objects), so that the
 * library's device-memory rules can be tested on any machine: the test
 * dlopens it and declares a range of its own host memory "device" or
 * "managed" memory. It has only the two functions the library may call
 * (cuDeviceGetCount, cuPointerGetAttributes) plus cuInit, which counts
 * its calls so that a test can check that the library never makes them.
 */
#include <stdint.h>

#define NOT_INITIALIZED 3
#define INVALID_VALUE 1
#define ATTRIBUTE_MEMORY_TYPE 2
#define ATTRIBUTE_IS_MANAGED 8
#define MEMORYTYPE_HOST 1
#define MEMORYTYPE_DEVICE 2

/* Set by the test (through dlsym). */
int fake_cuda_initialised;
int fake_cuda_devices = 1;
uintptr_t fake_cuda_device_lo, fake_cuda_device_hi;
uintptr_t fake_cuda_managed_lo, fake_cuda_managed_hi;
/* Read by the test. */
long fake_cuda_init_calls, fake_cuda_pointer_queries;

int cuInit(unsigned int flags);
int cuDeviceGetCount(int *count);
int cuPointerGetAttributes(unsigned int n, int *attributes, void **data,
                           unsigned long long ptr);

int cuInit(unsigned int flags)
{
    (void)flags;
    fake_cuda_init_calls++;
    return 0;
}

int cuDeviceGetCount(int *count)
{
    if (!fake_cuda_initialised)
        return NOT_INITIALIZED;
    *count = fake_cuda_devices;
    return 0;
}

int cuPointerGetAttributes(unsigned int n, int *attributes, void **data,
                           unsigned long long ptr)
{
    fake_cuda_pointer_queries++;
    if (!fake_cuda_initialised)
        return NOT_INITIALIZED;
    const uintptr_t p = (uintptr_t)ptr;
    const int device = p >= fake_cuda_device_lo && p < fake_cuda_device_hi;
    const int managed = p >= fake_cuda_managed_lo && p < fake_cuda_managed_hi;
    for (unsigned int i = 0; i < n; i++) {
        /* The driver writes an unsigned int for both of these. */
        if (attributes[i] == ATTRIBUTE_MEMORY_TYPE)
            /* Managed memory answers "host" here, so that only its
             * managed attribute marks it. */
            *(unsigned int *)data[i] = device    ? MEMORYTYPE_DEVICE
                                       : managed ? MEMORYTYPE_HOST
                                                 : 0;
        else if (attributes[i] == ATTRIBUTE_IS_MANAGED)
            *(unsigned int *)data[i] = managed;
        else
            return INVALID_VALUE;
    }
    return 0;
}
