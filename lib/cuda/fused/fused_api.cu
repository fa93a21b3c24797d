/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_api.cu -- fused.h's entry points: each call goes to the first
 * kernel family that covers it (tiny widths, then decode sizes, then, for
 * the MLP, the prefill pair at its widths, then the Hopper GEMM engine),
 * or returns FB_STATUS_NOT_SUPPORTED having launched nothing.
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
    /* alpha == 0 or k == 0: BLAS says A and B are not referenced (staging
     * passes NULL for them, and 0 * NaN must not leak). The kernels read
     * A and B unconditionally, so leave these calls to the cuda-lt path. */
    if (p->alpha == 0.0f || p->k == 0)
        return FB_STATUS_NOT_SUPPORTED;
    fb_status st = fbf_tiny_gemm(env, p, NULL, path, pathlen);
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    st = fbf_decode_gemm(env, p, NULL, path, pathlen);
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    return fbf_gemm_sm90(env, p, NULL, path, pathlen);
}

/* The prefill pair (fused_prefill_wgmma.cu) keeps the widths where it
 * measured faster than the engine (its epilogue warps pay most where k is
 * small); wider MLPs go to the engine. */
static bool prefill_pair_widths(const fb_mlp_problem *p)
{
    return p->k <= 1024 && p->n <= 1024 && p->h <= 4096;
}

fb_status fb_fused_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       char *path, size_t pathlen)
{
    if (p->m == 0 || p->n == 0) {
        fbf_set_path(path, pathlen, "empty");
        return FB_STATUS_SUCCESS;
    }
    fb_status st = fbf_tiny_mlp(env, p, NULL, path, pathlen);
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    st = fbf_decode_mlp(env, p, NULL, path, pathlen);
    if (st != FB_STATUS_NOT_SUPPORTED)
        return st;
    if (prefill_pair_widths(p)) {
        st = fbf_prefill_mlp_wgmma(env, p, env->scratch, env->scratch_bytes,
                                   NULL, path, pathlen);
        if (st != FB_STATUS_NOT_SUPPORTED)
            return st;
    }
    return fbf_mlp_sm90(env, p, env->scratch, env->scratch_bytes, NULL, path,
                        pathlen);
}

fbf_mlp_family fbf_mlp_family_of(const fb_fused_env *env,
                                 const fb_mlp_problem *p)
{
    fbf_tuning dry = {};
    dry.dry_run = 1;
    if (p->m == 0 || p->n == 0)
        return FBF_MLP_NONE;
    if (fbf_tiny_mlp(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return FBF_MLP_TINY;
    if (fbf_decode_mlp(env, p, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return FBF_MLP_DECODE;
    if (prefill_pair_widths(p) &&
        fbf_prefill_mlp_wgmma(env, p, NULL, 0, &dry, NULL, 0) ==
            FB_STATUS_SUCCESS)
        return FBF_MLP_PREFILL;
    if (fbf_mlp_sm90(env, p, NULL, 0, &dry, NULL, 0) == FB_STATUS_SUCCESS)
        return FBF_MLP_ENGINE;
    return FBF_MLP_NONE;
}

/* Only the two-launch families need scratch (H between their launches). */
size_t fb_fused_mlp_scratch_bytes(const fb_fused_env *env,
                                  const fb_mlp_problem *p)
{
    const fbf_mlp_family f = fbf_mlp_family_of(env, p);
    return f == FBF_MLP_PREFILL || f == FBF_MLP_ENGINE
               ? (size_t)p->m * (size_t)p->h * 2
               : 0;
}
