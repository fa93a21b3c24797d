/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * result.cu -- status and message helpers of the CUDA module.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "result.h"

void fb_result_clear(fb_cuda_result *r)
{
    r->ran = FB_BACKEND_AUTO;
    r->path[0] = '\0';
    r->message[0] = '\0';
}

void fb_result_ran(fb_cuda_result *r, fb_backend ran, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->ran = ran;
    vsnprintf(r->path, sizeof r->path, fmt, ap);
    va_end(ap);
}

void fb_result_append(fb_cuda_result *r, const char *fmt, ...)
{
    size_t used = strlen(r->path);
    if (used + 1 >= sizeof r->path)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->path + used, sizeof r->path - used, fmt, ap);
    va_end(ap);
}

fb_status fb_result_fail(fb_cuda_result *r, fb_status status,
                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    return status;
}

fb_status fb_status_of_cuda(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return FB_STATUS_SUCCESS;
    case cudaErrorMemoryAllocation:
        return FB_STATUS_ALLOC_FAILED;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
        return FB_STATUS_BACKEND_UNAVAILABLE;
    default:
        return FB_STATUS_EXECUTION_FAILED;
    }
}

fb_status fb_status_of_cublas(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return FB_STATUS_SUCCESS;
    case CUBLAS_STATUS_ALLOC_FAILED:
        return FB_STATUS_ALLOC_FAILED;
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return FB_STATUS_BACKEND_UNAVAILABLE;
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return FB_STATUS_NOT_SUPPORTED;
    default:
        return FB_STATUS_EXECUTION_FAILED;
    }
}

fb_status fb_message_cuda(char *buf, size_t len, cudaError_t e,
                          const char *what)
{
    if (buf != NULL && len > 0)
        snprintf(buf, len, "%s: %s (%s)", what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    return fb_status_of_cuda(e);
}

fb_status fb_result_cuda(fb_cuda_result *r, cudaError_t e, const char *what)
{
    return fb_message_cuda(r->message, sizeof r->message, e, what);
}

fb_status fb_result_cublas(fb_cuda_result *r, cublasStatus_t s,
                           const char *what)
{
    snprintf(r->message, sizeof r->message, "%s: %s (%s)", what,
             cublasLtGetStatusName(s), cublasLtGetStatusString(s));
    return fb_status_of_cublas(s);
}

fb_status fb_result_launch(fb_cuda_result *r, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return FB_STATUS_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "launching %s", kernel);
    return fb_result_cuda(r, e, what);
}
