/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispatch.c -- from a checked call to one backend, and back to a status.
 */
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_fp8.h"
#include "cuda_loader.h"
#include "device_memory.h"
#include "dispatch.h"
#include "dispatch_fp8.h"
#include "log.h"

static fb_status cuda_ctx(fb_handle h, const fb_cuda_module *m);

fb_status fb_dispatch_gemm(fb_handle h, const char *routine,
                           const fb_gemm_problem *p, const fb_operand *ops,
                           int nops)
{
    fb_route r;
    fb_status st = fb_dispatch_choose(h, routine, ops, nops, &r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (r.backend == FB_BACKEND_CPU) {
        char path[96];
        st = fb_cpu_gemm(h, p, fb_handle_forced(h), path, sizeof path);
        return fb_dispatch_finish_cpu(h, routine, st, path);
    }
    fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
    st = r.cuda->gemm(h->cuda, p, r.backend, h->math, fb_handle_forced(h),
                      &res);
    return fb_dispatch_finish_cuda(h, routine, st, &res);
}

fb_status fb_dispatch_mlp(fb_handle h, const char *routine,
                          const fb_mlp_problem *p, const fb_operand *ops,
                          int nops)
{
    fb_route r;
    fb_status st = fb_dispatch_choose(h, routine, ops, nops, &r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (r.backend == FB_BACKEND_CPU) {
        char path[96];
        st = fb_cpu_mlp(h, p, fb_handle_forced(h), path, sizeof path);
        return fb_dispatch_finish_cpu(h, routine, st, path);
    }
    fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
    st = r.cuda->mlp(h->cuda, p, r.backend, h->math, fb_handle_forced(h),
                     &res);
    return fb_dispatch_finish_cuda(h, routine, st, &res);
}

int fb_implementation_known(const char *name)
{
    static const char *const cuda[] = {FB_CUDA_IMPL_NAMES};
    if (fb_cpu_knows(name))
        return 1;
    for (size_t i = 0; i < sizeof cuda / sizeof cuda[0]; i++)
        if (strcmp(name, cuda[i]) == 0)
            return 1;
    return 0;
}

/* ---- helpers ------------------------------------------------------------ */

/* Lowest position among the operands in device memory, 0 if none. Asks
 * the CUDA driver only if the process already has one running
 * (device_memory.h): never loads the module or anything of CUDA. */
static int first_device_operand(const fb_operand *ops, int nops)
{
    int first = 0;
    for (int i = 0; i < nops; i++)
        if (ops[i].ptr != NULL && fb_is_device_memory(ops[i].ptr) &&
            (first == 0 || ops[i].pos < first))
            first = ops[i].pos;
    return first;
}

/* The module is loaded here, the first time a call needs it: a CUDA
 * backend named, or device memory under auto. A CPU call never loads it. */
fb_status fb_dispatch_choose(fb_handle h, const char *routine,
                             const fb_operand *ops, int nops, fb_route *r)
{
    char why[256];
    const fb_cuda_module *m = NULL;
    r->cuda = NULL;

    switch (h->backend) {
    case FB_BACKEND_CPU: {
        int dev = first_device_operand(ops, nops);
        if (dev)
            return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, dev,
                                  "%s: argument %d is device memory, which "
                                  "the cpu backend cannot read",
                                  routine, dev);
        r->backend = FB_BACKEND_CPU;
        fb_log(h, "%s: backend cpu (chosen by the handle or "
                  "FUSEDBLAS_BACKEND)", routine);
        return FB_STATUS_SUCCESS;
    }
    case FB_BACKEND_AUTO: {
        int dev = first_device_operand(ops, nops);
        if (!dev) {
            r->backend = FB_BACKEND_CPU;
            fb_log(h, "%s: auto -> cpu (all data in host memory)", routine);
            return FB_STATUS_SUCCESS;
        }
        m = fb_cuda_get(why, sizeof why);
        if (m == NULL)
            return fb_handle_fail(h, FB_STATUS_BACKEND_UNAVAILABLE, 0,
                                  "%s: argument %d is device memory, but "
                                  "the CUDA backend is unavailable: %s",
                                  routine, dev, why);
        r->backend = FB_BACKEND_CUDA;
        fb_log(h, "%s: auto -> cuda (argument %d is device memory)", routine,
               dev);
        break;
    }
    case FB_BACKEND_CUDA:
    case FB_BACKEND_CUDA_LT:
    case FB_BACKEND_CUDA_FUSED:
        m = fb_cuda_get(why, sizeof why);
        if (m == NULL)
            return fb_handle_fail(h, FB_STATUS_BACKEND_UNAVAILABLE, 0,
                                  "%s: %s unavailable: %s", routine,
                                  fb_backend_name(h->backend), why);
        r->backend = h->backend;
        fb_log(h, "%s: backend %s (chosen by the handle or "
                  "FUSEDBLAS_BACKEND)", routine, fb_backend_name(h->backend));
        break;
    }
    r->cuda = m;
    return cuda_ctx(h, m);
}

/* The handle's CUDA context, made on its first GPU call. */
static fb_status cuda_ctx(fb_handle h, const fb_cuda_module *m)
{
    if (h->cuda != NULL)
        return FB_STATUS_SUCCESS;
    char msg[256] = "";
    fb_status st = m->ctx_create(&h->cuda, h->cuda_device, msg, sizeof msg);
    if (st != FB_STATUS_SUCCESS) {
        h->cuda = NULL;
        return fb_handle_fail(h, st, 0, "CUDA context on device %d: %s",
                              h->cuda_device, msg);
    }
    m->ctx_set_stream(h->cuda, h->cuda_stream);
    return FB_STATUS_SUCCESS;
}

fb_status fb_dispatch_finish_cpu(fb_handle h, const char *routine,
                                 fb_status st, const char *path)
{
    if (st != FB_STATUS_SUCCESS)
        return fb_handle_fail(h, st, 0, "%s on cpu: %s", routine, path);
    fb_handle_ran(h, FB_BACKEND_CPU, path);
    return st;
}

fb_status fb_dispatch_finish_cuda(fb_handle h, const char *routine,
                                  fb_status st, const fb_cuda_result *res)
{
    if (st != FB_STATUS_SUCCESS)
        return fb_handle_fail(h, st, 0, "%s: %s", routine, res->message);
    fb_handle_ran(h, res->ran, res->path);
    fb_log(h, "%s: ran %s", routine, res->path);
    return FB_STATUS_SUCCESS;
}

/* ---- e4m3 weights (dispatch_fp8.h) -------------------------------------- */

fb_status fb_dispatch_gemm_e4m3(fb_handle h, const char *routine,
                                const fb_e4m3_gemm_problem *p,
                                const fb_operand *ops, int nops)
{
    fb_route r;
    fb_status st = fb_dispatch_choose(h, routine, ops, nops, &r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (r.backend == FB_BACKEND_CPU) {
        char path[96];
        st = fb_cpu_gemm_e4m3(h, p, path, sizeof path);
        return fb_dispatch_finish_cpu(h, routine, st, path);
    }
    fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
    st = r.cuda->gemm_e4m3(h->cuda, p, r.backend, &res);
    return fb_dispatch_finish_cuda(h, routine, st, &res);
}

fb_status fb_dispatch_mlp_e4m3(fb_handle h, const char *routine,
                               const fb_e4m3_mlp_problem *p,
                               const fb_operand *ops, int nops)
{
    fb_route r;
    fb_status st = fb_dispatch_choose(h, routine, ops, nops, &r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (r.backend == FB_BACKEND_CPU) {
        char path[96];
        st = fb_cpu_mlp_e4m3(h, p, path, sizeof path);
        return fb_dispatch_finish_cpu(h, routine, st, path);
    }
    fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
    st = r.cuda->mlp_e4m3(h->cuda, p, r.backend, &res);
    return fb_dispatch_finish_cuda(h, routine, st, &res);
}
