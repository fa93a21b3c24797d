/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * library.c -- library-wide queries: status names, version, backends.
 */
#include "cuda_loader.h"
#include "fusedblas.h"

FB_EXPORT const char *fb_status_string(fb_status status)
{
    switch (status) {
    case FB_STATUS_SUCCESS: return "success";
    case FB_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case FB_STATUS_NOT_SUPPORTED: return "not supported";
    case FB_STATUS_ALLOC_FAILED: return "allocation failed";
    case FB_STATUS_BACKEND_UNAVAILABLE: return "backend unavailable";
    case FB_STATUS_EXECUTION_FAILED: return "execution failed";
    case FB_STATUS_INTERNAL: return "internal error";
    }
    return "unknown status";
}

FB_EXPORT const char *fb_version(void)
{
    return FUSEDBLAS_VERSION_STRING;
}

FB_EXPORT const char *fb_backend_name(fb_backend backend)
{
    switch (backend) {
    case FB_BACKEND_AUTO: return "auto";
    case FB_BACKEND_CPU: return "cpu";
    case FB_BACKEND_CUDA: return "cuda";
    case FB_BACKEND_CUDA_LT: return "cuda-lt";
    case FB_BACKEND_CUDA_FUSED: return "cuda-fused";
    }
    return "unknown";
}

FB_EXPORT fb_status fb_backend_available(fb_backend backend)
{
    switch (backend) {
    case FB_BACKEND_AUTO:
    case FB_BACKEND_CPU:
        return FB_STATUS_SUCCESS;
    case FB_BACKEND_CUDA:
    case FB_BACKEND_CUDA_LT:
    case FB_BACKEND_CUDA_FUSED:
        return fb_cuda_get(NULL, 0) != NULL ? FB_STATUS_SUCCESS
                                            : FB_STATUS_BACKEND_UNAVAILABLE;
    }
    return FB_STATUS_INVALID_ARGUMENT;
}
