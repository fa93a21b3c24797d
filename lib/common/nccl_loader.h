/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_loader.h -- NCCL, loaded at run time by the tensor-parallel calls
 * and by nothing else.
 */
#ifndef FB_NCCL_LOADER_H
#define FB_NCCL_LOADER_H

#include <stddef.h>
#include "nccl_api.h"

/* The NCCL table, loading the library on the first call of the process
 * (FUSEDBLAS_NCCL_LIBRARY if set, else libnccl.so.2, which is the copy
 * the process has already loaded if it has one); NULL with the reason in
 * why if NCCL cannot be had. Decided once; thread-safe. */
const fb_nccl_api *fb_nccl_get(char *why, size_t len);

#endif /* FB_NCCL_LOADER_H */
