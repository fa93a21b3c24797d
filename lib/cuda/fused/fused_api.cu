/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_api.cu -- fused.h's entry points: each call goes to the first
 * kernel family of the tables (shape_rule.cu) that covers it, or returns
 * FB_STATUS_NOT_SUPPORTED having launched nothing; and the helpers every
 * launcher shares.
 */
#include <stdio.h>
#include <string.h>
#include "fused_internal.h"

void fbf_set_path(char *path, size_t pathlen, const char *name)
{
    if (path && pathlen)
        snprintf(path, pathlen, "cuda-fused/%s", name);
}

fb_status fbf_launch_status(cudaError_t e)
{
    return e == cudaSuccess ? FB_STATUS_SUCCESS : FB_STATUS_EXECUTION_FAILED;
}

fb_status fb_fused_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        char *path, size_t pathlen)
{
    if (p->m == 0 || p->n == 0) { /* nothing to write */
        fbf_set_path(path, pathlen, "empty");
        return FB_STATUS_SUCCESS;
    }
    for (const fb_fused_gemm_impl *e = fb_fused_gemm_impls; e->name; ++e)
        if (e->applies(env, p))
            return e->run(env, p, path, pathlen);
    return FB_STATUS_NOT_SUPPORTED;
}

fb_status fb_fused_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       char *path, size_t pathlen)
{
    if (p->m == 0 || p->n == 0) {
        fbf_set_path(path, pathlen, "empty");
        return FB_STATUS_SUCCESS;
    }
    for (const fb_fused_mlp_impl *e = fb_fused_mlp_impls; e->name; ++e)
        if (e->applies(env, p))
            return e->run(env, p, path, pathlen);
    return FB_STATUS_NOT_SUPPORTED;
}
