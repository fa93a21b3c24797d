/*
 * fused_tiny.cu -- tiny widths (placeholder until the kernel lands).
 */
#include "fused_internal.h"

fb_status fbf_tiny_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       const fbf_tuning *tune, char *path, size_t pathlen)
{
    (void)env; (void)p; (void)tune; (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
}

fb_status fbf_tiny_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        const fbf_tuning *tune, char *path, size_t pathlen)
{
    (void)env; (void)p; (void)tune; (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
}
