/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_mem.h -- the device-memory provider for the GPU test program,
 * through the CUDA runtime's C API (cudaMalloc, cudaMemcpy).
 */
#ifndef FB_TEST_CUDA_MEM_H
#define FB_TEST_CUDA_MEM_H

#include "harness.h"

/* Operands in cudaMalloc'd memory. get() synchronises the device first, so
 * a result is complete whatever stream the library used, and an
 * asynchronous fault surfaces as a bail-out naming the CUDA error. */
extern const tmem tmem_cuda;

/* Number of CUDA devices (0 if the runtime finds none or fails). */
int cuda_device_count(void);
/* The current device's name and number of SMs. */
void cuda_device_describe(char *name, size_t len, int *sms);
/* Its compute capability as 10 major + minor (0 if unknown). */
int cuda_device_cc(void);

#endif /* FB_TEST_CUDA_MEM_H */
