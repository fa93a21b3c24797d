/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispatch_fp8.h -- the e4m3-weight routines through dispatch.c's backend
 * choice (the same rules as every routine's).
 */
#ifndef FB_DISPATCH_FP8_H
#define FB_DISPATCH_FP8_H

#include "dispatch.h"
#include "problem_fp8.h"

fb_status fb_dispatch_gemm_e4m3(fb_handle h, const char *routine,
                                const fb_e4m3_gemm_problem *p,
                                const fb_operand *ops, int nops);
fb_status fb_dispatch_mlp_e4m3(fb_handle h, const char *routine,
                               const fb_e4m3_mlp_problem *p,
                               const fb_operand *ops, int nops);

#endif /* FB_DISPATCH_FP8_H */
