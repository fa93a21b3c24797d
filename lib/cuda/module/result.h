/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * result.h -- how the CUDA module reports: the path that ran, and on
 * failure a status with the CUDA or cuBLAS error's name in the message.
 */
#ifndef FB_CUDA_RESULT_H
#define FB_CUDA_RESULT_H

#include <stddef.h>
#include <cuda_runtime.h>
#include <cublasLt.h>
#include "cuda_module.h"

#if defined(__GNUC__)
#define FB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FB_PRINTF(f, a)
#endif

/* Empty path and message, nothing ran yet. */
void fb_result_clear(fb_cuda_result *r);

/* Record what ran: r->ran and r->path (printf-style). */
void fb_result_ran(fb_cuda_result *r, fb_backend ran, const char *fmt, ...)
    FB_PRINTF(3, 4);

/* Append to r->path (printf-style), truncating at its size. */
void fb_result_append(fb_cuda_result *r, const char *fmt, ...)
    FB_PRINTF(2, 3);

/* Record a failure in r->message (printf-style); returns status. */
fb_status fb_result_fail(fb_cuda_result *r, fb_status status,
                         const char *fmt, ...) FB_PRINTF(3, 4);

/* The status a CUDA runtime error maps to: allocation failed, backend
 * unavailable (no driver or device), or execution failed. */
fb_status fb_status_of_cuda(cudaError_t e);
fb_status fb_status_of_cublas(cublasStatus_t s);

/* "what: cudaErrorName (text)" into buf; returns fb_status_of_cuda(e). */
fb_status fb_message_cuda(char *buf, size_t len, cudaError_t e,
                          const char *what);

/* The same into r->message. */
fb_status fb_result_cuda(fb_cuda_result *r, cudaError_t e, const char *what);
fb_status fb_result_cublas(fb_cuda_result *r, cublasStatus_t s,
                           const char *what);

/* Check a launch: the error cudaGetLastError() reports right after it. */
fb_status fb_result_launch(fb_cuda_result *r, const char *kernel);

#endif /* FB_CUDA_RESULT_H */
