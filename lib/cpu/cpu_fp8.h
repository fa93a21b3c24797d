/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8.h -- the CPU backend's e4m3-weight routines.
 */
#ifndef FB_CPU_FP8_H
#define FB_CPU_FP8_H

#include <stddef.h>
#include "handle.h"
#include "problem_fp8.h"

/* Run a checked call; path receives what ran, or why it failed. */
fb_status fb_cpu_gemm_e4m3(fb_handle h, const fb_e4m3_gemm_problem *p,
                           char *path, size_t len);
fb_status fb_cpu_mlp_e4m3(fb_handle h, const fb_e4m3_mlp_problem *p,
                          char *path, size_t len);

#endif /* FB_CPU_FP8_H */
