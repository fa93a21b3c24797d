/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_loader.h -- finds and loads the CUDA backend module once per process.
 */
#ifndef FB_CUDA_LOADER_H
#define FB_CUDA_LOADER_H

#include <stddef.h>
#include "cuda_module.h"

/* The module's table if it loaded and a CUDA device answered its probe,
 * else NULL with the reason copied into why (when why is not NULL).
 * Where: $FUSEDBLAS_CUDA_MODULE if it is set (and then only there, if it
 * is an absolute path to a regular file), else the installed
 * $(pkglibdir)/fusedblas_cuda.so. Loaded once per process, on the first
 * call that needs a CUDA backend. */
const fb_cuda_module *fb_cuda_get(char *why, size_t len);

#endif /* FB_CUDA_LOADER_H */
