/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_mlp.c -- mlp_geglu_forward on the CPU: the table of
 * implementations, tried in order, the first that applies running the
 * call.
 *
 *   cpu/small-m-avx512   the decode shape (m <= 32), weights streamed once
 *   cpu/small-m-avx2     the same on AVX2 + FMA + F16C, without AVX-512
 *   cpu/bf16-amx         bf16 on AMX tiles (TDPBF16PS), packed operands
 *   cpu/bf16-avx512bf16  bf16 on VDPBF16PS, packed weights
 *   cpu/f32-small-k      fp32 with k, h <= 512 (the tiny MLPs)
 *   cpu/f32-avx512       other fp32 on our AVX-512F kernel
 *   cpu/openblas         OpenBLAS on row blocks and hidden chunks
 *
 * Each implementation's file says when it applies; as for gemm
 * (cpu_gemm.c), the environment takes entries out and
 * fb_set_implementation forces one.
 */
#include "config.h"
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_impl.h"

const fb_cpu_mlp_impl *const fb_cpu_mlp_impls[] = {
    &fb_cpu_mlp_small_m, &fb_cpu_mlp_small_m_avx2, &fb_cpu_mlp_bf16_amx,
    &fb_cpu_mlp_bf16, &fb_cpu_mlp_small_k, &fb_cpu_mlp_f32, &fb_cpu_mlp_openblas, NULL};

const fb_cpu_mlp_impl *fb_cpu_mlp_choose(fb_cpu_call *c,
                                         const fb_mlp_problem *p,
                                         const char *forced, int cap)
{
    const double flops = fb_cpu_mlp_flops(p);
    for (int i = 0; fb_cpu_mlp_impls[i] != NULL; i++) {
        const fb_cpu_mlp_impl *im = fb_cpu_mlp_impls[i];
        if (forced != NULL && strcmp(forced, im->name) != 0)
            continue;
        c->threads = fb_cpu_threads_for(c->h, im->threading, flops, cap);
        if (im->applies(c, p) &&
            (forced != NULL || im->prefers == NULL || im->prefers(p)))
            return im;
    }
    return NULL;
}

fb_status fb_cpu_mlp(fb_handle h, const fb_mlp_problem *p,
                     const char *forced, char *path, size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    fb_cpu_call c = {h, 1, NULL, NULL};
    const fb_cpu_mlp_impl *im = fb_cpu_mlp_choose(&c, p, forced, 0);
    if (im == NULL) {
        if (forced != NULL)
            snprintf(path, len, "%s does not apply to this call", forced);
        else
            snprintf(path, len, "k, h or n exceeds OpenBLAS's %zu-byte "
                     "integer", sizeof(blasint));
        return FB_STATUS_NOT_SUPPORTED;
    }
    const size_t bytes = im->workspace(p, c.threads, 0);
    if (bytes > 0 && (c.ws = fb_handle_workspace(h, bytes)) == NULL) {
        snprintf(path, len, "%s: cannot allocate %zu bytes of workspace",
                 im->name, bytes);
        return FB_STATUS_ALLOC_FAILED;
    }
    return im->run(&c, p, path, len);
}
