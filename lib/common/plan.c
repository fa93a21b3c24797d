/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c -- fb_plan: the public plan functions. A plan is checked and
 * routed like a call (check.c, dispatch.c: its weights' memory or the
 * handle's backend decide where it runs), then made by its backend: the
 * CPU's (lib/cpu/cpu_plan.c) or the CUDA module's (through its table).
 * Plans are tracked in a registry, so that a destroyed or made-up plan is
 * an invalid argument, and on their handle, which destroys them with
 * itself.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "cpu.h"
#include "cuda_loader.h"
#include "device_memory.h"
#include "dispatch.h"
#include "handle.h"
#include "plan.h"
#include "registry.h"

#define FB_PLAN_MAGIC 0x66627061u /* "fbpa" */

struct fb_plan_s {
    uint32_t magic;
    fb_handle h;
    fb_plan next;          /* the handle's other plans */
    int is_gemm;
    fb_gemm_call call;     /* gemm: as created, m = max_m */
    fb_mlp_problem mlp;    /* mlp: as created, m = max_m */
    int64_t max_m;
    fb_backend backend;    /* FB_BACKEND_CPU, or the GPU path */
    fb_cpu_plan *cpu;
    const fb_cuda_module *module;
    fb_cuda_ctx *ctx;      /* the handle's context at creation */
    fb_cuda_plan *cuda;
};

static fb_registry plans = FB_REGISTRY_INIT;

/* ---- helpers ------------------------------------------------------------ */

static void plan_free(fb_plan p)
{
    if (p->cpu != NULL)
        fb_cpu_plan_destroy(p->cpu);
    if (p->cuda != NULL)
        p->module->plan_destroy(p->cuda);
    p->magic = 0;
    free(p);
}

static fb_status make(fb_handle h, const char *routine, fb_plan p,
                      const fb_operand *ops, int nops, fb_plan *out)
{
    fb_route r;
    fb_status st = fb_dispatch_choose(h, routine, ops, nops, &r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    p->backend = r.backend;
    const char *forced = fb_handle_forced(h);
    fb_gemm_problem g;
    if (p->is_gemm)
        fb_gemm_normalise(&p->call, &g);
    if (r.backend == FB_BACKEND_CPU) {
        char msg[160];
        st = fb_cpu_plan_create(h, p->is_gemm ? &g : NULL,
                                p->is_gemm ? NULL : &p->mlp, forced, &p->cpu,
                                msg, sizeof msg);
        if (st != FB_STATUS_SUCCESS)
            return fb_handle_fail(h, st, 0, "%s on cpu: %s", routine, msg);
    } else {
        fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
        p->module = r.cuda;
        p->ctx = h->cuda;
        st = r.cuda->plan_create(h->cuda, p->is_gemm ? &g : NULL,
                                 p->is_gemm ? NULL : &p->mlp, r.backend,
                                 h->math, forced, &p->cuda, &res);
        if (st != FB_STATUS_SUCCESS)
            return fb_handle_fail(h, st, 0, "%s: %s", routine, res.message);
    }
    if (!fb_registry_add(&plans, p))
        return fb_handle_fail(h, FB_STATUS_ALLOC_FAILED, 0,
                              "%s: cannot register the plan", routine);
    p->h = h;
    p->next = h->plans;
    h->plans = p;
    *out = p;
    fb_handle_ran(h, r.backend == FB_BACKEND_CPU ? FB_BACKEND_CPU
                                                 : FB_BACKEND_CUDA,
                  "");
    return FB_STATUS_SUCCESS;
}

/* The plan if it is live, else NULL with the failure recorded on the
 * calling thread's default handle (the plan's own cannot be trusted). */
static fb_plan live(fb_plan p, const char *routine)
{
    if (fb_registry_has(&plans, p))
        return p;
    fb_handle d = fb_handle_resolve(NULL, &(fb_status){0});
    if (d != NULL)
        fb_handle_fail(d, FB_STATUS_INVALID_ARGUMENT, 1,
                       "%s: plan %p is not a live fb_plan", routine,
                       (void *)p);
    return NULL;
}

/* The execution's input and output are in the plan's kind of memory:
 * device memory for a GPU plan, host memory for a CPU plan. */
static int wrong_memory(const fb_plan p, const void *in, const void *out,
                        const char *routine)
{
    const int gpu = p->backend != FB_BACKEND_CPU;
    const void *ptrs[2] = {in, out};
    for (int i = 0; i < 2; i++)
        if (ptrs[i] != NULL && fb_is_device_memory(ptrs[i]) != gpu) {
            fb_handle_fail(p->h, FB_STATUS_INVALID_ARGUMENT, i == 0 ? 3 : 5,
                           "%s: argument %d is %s memory, and the plan runs "
                           "on the %s", routine, i == 0 ? 3 : 5,
                           gpu ? "host" : "device", gpu ? "GPU" : "CPU");
            return 1;
        }
    return 0;
}

/* Where an execution runs: the CPU plan, or the module's with the
 * handle's context still the one the plan was made in. */
static fb_status ready(const fb_plan p, const char *routine)
{
    if (p->backend == FB_BACKEND_CPU || p->h->cuda == p->ctx)
        return FB_STATUS_SUCCESS;
    return fb_handle_fail(p->h, FB_STATUS_INVALID_ARGUMENT, 1,
                          "%s: the handle's CUDA context is not the one the "
                          "plan was made in (fb_set_cuda_device changed it): "
                          "make the plan again", routine);
}

/* A new plan as desc describes it, made by its backend and registered,
 * or freed again. */
static fb_status create(fb_handle h, const char *routine,
                        const struct fb_plan_s *desc, const fb_operand *ops,
                        int nops, fb_plan *out)
{
    fb_plan p = calloc(1, sizeof *p);
    if (p == NULL)
        return fb_handle_fail(h, FB_STATUS_ALLOC_FAILED, 0,
                              "%s: cannot allocate the plan", routine);
    *p = *desc;
    p->magic = FB_PLAN_MAGIC;
    const fb_status st = make(h, routine, p, ops, nops, out);
    if (st != FB_STATUS_SUCCESS)
        plan_free(p);
    return st;
}

/* One execution of m rows from in (leading dimension ldin) to out (ldout):
 * fb_plan_gemm's A and C on a gemm plan, fb_plan_mlp's X and Y on an
 * MLP's. The two take their arguments in the same places, so the checks
 * name the same positions. */
static fb_status execute(fb_plan plan, const char *routine, int is_gemm,
                         int64_t m, const void *in, int64_t ldin, void *out,
                         int64_t ldout)
{
    fb_plan p = live(plan, routine);
    if (p == NULL)
        return FB_STATUS_INVALID_ARGUMENT;
    fb_handle_clear(p->h);
    if (p->is_gemm != is_gemm)
        return fb_handle_fail(p->h, FB_STATUS_INVALID_ARGUMENT, 1,
                              "%s: the plan is %s (%s runs it)", routine,
                              p->is_gemm ? "a gemm's" : "an MLP's",
                              p->is_gemm ? "fb_plan_gemm" : "fb_plan_mlp");
    fb_gemm_call call = p->call;
    call.m = m, call.a = in, call.lda = ldin, call.c = out, call.ldc = ldout;
    fb_mlp_problem q = p->mlp;
    q.m = m, q.x = in, q.ldx = ldin, q.y = out, q.ldy = ldout;
    char msg[192];
    const int arg =
        is_gemm ? fb_check_plan_gemm_exec(&call, p->max_m, msg, sizeof msg)
                : fb_check_plan_mlp_exec(&q, p->max_m, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(p->h, FB_STATUS_INVALID_ARGUMENT, arg, "%s: %s",
                              routine, msg);
    if (wrong_memory(p, in, out, routine))
        return FB_STATUS_INVALID_ARGUMENT;
    fb_status st = ready(p, routine);
    if (st != FB_STATUS_SUCCESS)
        return st;
    if (m == 0 || (is_gemm ? call.n : q.n) == 0) {
        fb_handle_ran(p->h, p->backend == FB_BACKEND_CPU ? FB_BACKEND_CPU
                                                         : FB_BACKEND_CUDA,
                      "quick-return");
        return FB_STATUS_SUCCESS;
    }
    fb_gemm_problem g;
    if (is_gemm)
        fb_gemm_normalise(&call, &g);
    if (p->backend == FB_BACKEND_CPU) {
        char path[96];
        st = is_gemm ? fb_cpu_plan_gemm(p->h, p->cpu, &g, path, sizeof path)
                     : fb_cpu_plan_mlp(p->h, p->cpu, &q, path, sizeof path);
        return fb_dispatch_finish_cpu(p->h, routine, st, path);
    }
    fb_cuda_result res = {FB_BACKEND_AUTO, "", ""};
    st = is_gemm ? p->module->plan_gemm(p->ctx, p->cuda, &g, &res)
                 : p->module->plan_mlp(p->ctx, p->cuda, &q, &res);
    return fb_dispatch_finish_cuda(p->h, routine, st, &res);
}

/* ---- public API --------------------------------------------------------- */

FB_EXPORT fb_status fb_plan_create_gemm(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t max_m, int64_t n, int64_t k, float alpha,
    const void *B, int64_t ldb, float beta, const void *bias,
    fb_activation act, fb_plan *plan)
{
    static const char routine[] = "fb_plan_create_gemm";
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);
    /* The call as it will run with m = max_m rows, A and C not given:
     * their leading dimensions the least the rules allow. */
    const int ta = transa != FB_NO_TRANS, row = layout == FB_ROW_MAJOR;
    const int64_t a_rows = ta ? k : max_m, a_cols = ta ? max_m : k;
    int64_t lda = row ? a_cols : a_rows, ldc = row ? n : max_m;
    lda = lda > 1 ? lda : 1;
    ldc = ldc > 1 ? ldc : 1;
    const fb_gemm_call call = {dtype, layout, transa, transb, max_m, n, k,
                               alpha, NULL, lda, B, ldb, beta, NULL, ldc,
                               bias, act};
    char msg[192];
    const int arg = fb_check_plan_gemm(&call, plan, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg, "%s: %s",
                              routine, msg);
    const struct fb_plan_s desc = {.is_gemm = 1, .call = call,
                                   .max_m = max_m};
    const fb_operand ops[] = {{B, 10}, {bias, 13}};
    return create(h, routine, &desc, ops, 2, plan);
}

FB_EXPORT fb_status fb_plan_create_mlp(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t max_m,
    int64_t k, int64_t h_dim, int64_t n, const void *Wg, const void *bg,
    const void *Wu, const void *bu, const void *Wd, const void *bd,
    fb_plan *plan)
{
    static const char routine[] = "fb_plan_create_mlp";
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);
    const fb_mlp_problem q = {dtype, gate_act, max_m, k, h_dim, n, NULL,
                              k > 1 ? k : 1, Wg, bg, Wu, bu, Wd, bd, NULL,
                              n > 1 ? n : 1};
    char msg[192];
    const int arg = fb_check_plan_mlp(&q, plan, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg, "%s: %s",
                              routine, msg);
    const struct fb_plan_s desc = {.mlp = q, .max_m = max_m};
    const fb_operand ops[] = {{Wg, 8},  {bg, 9},  {Wu, 10},
                              {bu, 11}, {Wd, 12}, {bd, 13}};
    return create(h, routine, &desc, ops, 6, plan);
}

FB_EXPORT fb_status fb_plan_gemm(fb_plan plan, int64_t m, const void *A,
                                 int64_t lda, void *C, int64_t ldc)
{
    return execute(plan, "fb_plan_gemm", 1, m, A, lda, C, ldc);
}

FB_EXPORT fb_status fb_plan_mlp(fb_plan plan, int64_t m, const void *X,
                                int64_t ldx, void *Y, int64_t ldy)
{
    return execute(plan, "fb_plan_mlp", 0, m, X, ldx, Y, ldy);
}

FB_EXPORT fb_status fb_plan_destroy(fb_plan plan)
{
    if (plan == NULL)
        return FB_STATUS_SUCCESS;
    if (live(plan, "fb_plan_destroy") == NULL ||
        !fb_registry_remove(&plans, plan))
        return FB_STATUS_INVALID_ARGUMENT;
    fb_handle h = plan->h;
    for (fb_plan *at = &h->plans; *at != NULL; at = &(*at)->next)
        if (*at == plan) {
            *at = plan->next;
            break;
        }
    plan_free(plan);
    return FB_STATUS_SUCCESS;
}

FB_EXPORT const char *fb_plan_path(fb_plan plan, int64_t m)
{
    if (!fb_registry_has(&plans, plan) || m < 1 || m > plan->max_m)
        return "";
    if (plan->backend == FB_BACKEND_CPU)
        return fb_cpu_plan_impl(plan->cpu, m);
    return plan->module->plan_impl(plan->cuda, m);
}

/* ---- for the handle ------------------------------------------------------ */

void fb_plans_release(fb_handle h)
{
    while (h->plans != NULL) {
        fb_plan p = h->plans;
        h->plans = p->next;
        fb_registry_remove(&plans, p);
        plan_free(p);
    }
}
