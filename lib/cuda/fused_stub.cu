/*
 * fused_stub.cu -- placeholder for the fused kernels (fused.h), so that the
 * module links before they land: nothing is covered and nothing preferred,
 * so FB_BACKEND_CUDA runs cuBLASLt and FB_BACKEND_CUDA_FUSED answers "not
 * supported". The fused kernels' author deletes this file and lists theirs
 * in FB_CUDA_FUSED_SOURCES (lib/cuda/Makefile.inc).
 */
#include <stdio.h>
#include "fused.h"

fb_status fb_fused_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        char *path, size_t pathlen)
{
    (void)env;
    (void)p;
    if (pathlen > 0)
        snprintf(path, pathlen, "cuda-fused/none");
    return FB_STATUS_NOT_SUPPORTED;
}

fb_status fb_fused_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       char *path, size_t pathlen)
{
    (void)env;
    (void)p;
    if (pathlen > 0)
        snprintf(path, pathlen, "cuda-fused/none");
    return FB_STATUS_NOT_SUPPORTED;
}

int fb_fused_prefers_gemm(const fb_fused_env *env, const fb_gemm_problem *p)
{
    (void)env;
    (void)p;
    return 0;
}

int fb_fused_prefers_mlp(const fb_fused_env *env, const fb_mlp_problem *p)
{
    (void)env;
    (void)p;
    return 0;
}
