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

/* Where a call goes: the CPU, or a GPU path of the module (loaded, and
 * the handle's CUDA context made). */
typedef struct fb_route {
    fb_backend backend; /* CPU, or a GPU path for the module */
    const fb_cuda_module *cuda;
} fb_route;

/* The route for a checked call with these operands; on failure the
 * handle has recorded why. */
fb_status fb_dispatch_choose(fb_handle h, const char *routine,
                             const fb_operand *ops, int nops, fb_route *r);

/* The end of a call the CPU ran: st's failure with path as the message,
 * or the path recorded as the one that ran. */
fb_status fb_dispatch_finish_cpu(fb_handle h, const char *routine,
                                 fb_status st, const char *path);

/* Record a module call's outcome on the handle. */
fb_status fb_dispatch_finish_cuda(fb_handle h, const char *routine,
                                  fb_status st, const fb_cuda_result *res);

/* Non-zero if name is an implementation of some backend (the CPU
 * backend's tables, the CUDA module's), without loading the module. */
int fb_implementation_known(const char *name);

fb_status fb_dispatch_gemm(fb_handle h, const char *routine,
                           const fb_gemm_problem *p, const fb_operand *ops,
                           int nops);
fb_status fb_dispatch_mlp(fb_handle h, const char *routine,
                          const fb_mlp_problem *p, const fb_operand *ops,
                          int nops);

#endif /* FB_DISPATCH_H */
