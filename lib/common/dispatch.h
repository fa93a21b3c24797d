/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispatch.h -- picks the backend for a checked call and runs it there.
 *
 * Choice, first that is set: the handle's fb_set_backend(), then
 * FUSEDBLAS_BACKEND (read when the handle is made), then auto: calls with
 * device pointers go to the GPU (whose shape rule picks cuda-fused or
 * cuda-lt), host data stays on the CPU.
 */
#ifndef FB_DISPATCH_H
#define FB_DISPATCH_H

#include "handle.h"
#include "problem.h"

/* A data pointer of the call and its argument position, for the
 * device-pointer rules (a device pointer given to the CPU backend is an
 * invalid argument; any device pointer sends an auto call to the GPU). */
typedef struct fb_operand {
    const void *ptr;
    int pos;
} fb_operand;

fb_status fb_dispatch_gemm(fb_handle h, const char *routine,
                           const fb_gemm_problem *p, const fb_operand *ops,
                           int nops);
fb_status fb_dispatch_mlp(fb_handle h, const char *routine,
                          const fb_mlp_problem *p, const fb_operand *ops,
                          int nops);

#endif /* FB_DISPATCH_H */
