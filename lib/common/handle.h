/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.h -- what an fb_handle holds, for the library's own files.
 */
#ifndef FB_HANDLE_H
#define FB_HANDLE_H

#include <stddef.h>
#include "fusedblas.h"
#include "cuda_module.h"

#define FB_HANDLE_MAGIC 0x66626c61u /* "fbla" */

struct fb_handle_s {
    uint32_t magic;
    /* settings */
    fb_backend backend;  /* the handle's choice, or the environment's */
    int nthreads;        /* as asked; 0: omp_get_max_threads(); capped at
                            each call (lib/cpu/cpu_threads.c) */
    fb_math_mode math;
    int verbose;
    int cuda_device;
    void *cuda_stream;
    char implementation[48]; /* fb_set_implementation's; "" if none */
    /* CUDA state, made on first GPU call */
    fb_cuda_ctx *cuda;
    /* the handle's live plans (plan.c), destroyed with it */
    struct fb_plan_s *plans;
    /* the attached NCCL communicator (tensor_parallel.c), or NULL */
    struct fb_tp_state *tp;
    /* host workspace for the CPU backend, grown on demand, 64-byte aligned */
    void *ws;
    size_t ws_bytes;
    /* the last call */
    fb_status last_status;
    int last_arg;
    fb_backend last_backend;
    char last_path[96];
    char last_message[256];
};

/* The implementation the handle forces (fb_set_implementation), or NULL. */
static inline const char *fb_handle_forced(fb_handle h)
{
    return h->implementation[0] != '\0' ? h->implementation : NULL;
}

/* The handle to use for a call: h itself if it is live, the calling
 * thread's default if h is NULL, NULL if h is not a live handle, the
 * default could not be made, or the environment is invalid (env.h: the
 * default handle then records why; nothing runs) -- *status says which. */
fb_handle fb_handle_resolve(fb_handle h, fb_status *status);

/* Host workspace of at least bytes, 64-byte aligned; NULL if it cannot be
 * had. The pointer stays valid until the next call on the handle. */
void *fb_handle_workspace(fb_handle h, size_t bytes);

/* Record the outcome of a call on the handle. */
void fb_handle_clear(fb_handle h);
fb_status fb_handle_fail(fb_handle h, fb_status status, int arg,
                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void fb_handle_ran(fb_handle h, fb_backend backend, const char *path);

#endif /* FB_HANDLE_H */
