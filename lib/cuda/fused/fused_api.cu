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
