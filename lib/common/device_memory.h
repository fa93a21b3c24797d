/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_memory.h -- tells CUDA device memory from host memory without
 * loading anything of CUDA.
 */
#ifndef FB_DEVICE_MEMORY_H
#define FB_DEVICE_MEMORY_H

/* 1 if p points into CUDA device or managed memory (which the CPU must
 * not read), 0 if it is host memory, or if this process has no CUDA
 * driver loaded and initialised, or no CUDA device, and so can hold no
 * device memory. Never loads a library, never initialises the driver,
 * never creates a CUDA context. Thread-safe. */
int fb_is_device_memory(const void *p);

#endif /* FB_DEVICE_MEMORY_H */
