/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_gemm.c -- gemm_bias_act on the CPU: the table of implementations,
 * tried in order, the first that applies running the call.
 *
 *   cpu/small-m-avx512   the decode form (few tokens), weights streamed
 *   cpu/small-m-avx2     the same on AVX2 + FMA + F16C, without AVX-512
 *   cpu/bf16-amx         bf16 on AMX tiles (TDPBF16PS), packed operands
 *   cpu/bf16-avx512bf16  bf16 on VDPBF16PS, packed operands
 *   cpu/f32-small-k      fp32 with k <= 512, op(B) read in place
 *   cpu/f32-avx512       other fp32 on our AVX-512F kernel
 *   cpu/openblas         OpenBLAS on blocks of C, epilogue in cache
 *
 * Each implementation's file says when it applies. FUSEDBLAS_CPU_SGEMM and
 * FUSEDBLAS_CPU_NO_BF16 (env.h) take entries out of the table for the
 * process; fb_set_implementation forces one by its name.
 */
#include "config.h"
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_impl.h"

const fb_cpu_gemm_impl *const fb_cpu_gemm_impls[] = {
    &fb_cpu_gemm_small_m, &fb_cpu_gemm_small_m_avx2, &fb_cpu_gemm_bf16_amx,
    &fb_cpu_gemm_bf16, &fb_cpu_gemm_small_k, &fb_cpu_gemm_f32,
    &fb_cpu_gemm_openblas, NULL};

int fb_cpu_knows(const char *name)
{
    for (int i = 0; fb_cpu_gemm_impls[i] != NULL; i++)
        if (strcmp(name, fb_cpu_gemm_impls[i]->name) == 0)
            return 1;
    for (int i = 0; fb_cpu_mlp_impls[i] != NULL; i++)
        if (strcmp(name, fb_cpu_mlp_impls[i]->name) == 0)
            return 1;
    return 0;
}

int fb_cpu_threads_for(fb_handle h, int threading, double flops, int cap)
{
    int t = threading == FB_CPU_BLAS_THREADS ? fb_cpu_threads(h, flops)
                                             : fb_cpu_own_threads(h, flops);
    return cap > 0 && t > cap ? cap : t;
}

const fb_cpu_gemm_impl *fb_cpu_gemm_choose(fb_cpu_call *c,
                                           const fb_gemm_problem *p,
                                           const char *forced, int cap)
{
    const double flops = fb_cpu_gemm_flops(p);
    for (int i = 0; fb_cpu_gemm_impls[i] != NULL; i++) {
        const fb_cpu_gemm_impl *im = fb_cpu_gemm_impls[i];
        if (forced != NULL && strcmp(forced, im->name) != 0)
            continue;
        c->threads = fb_cpu_threads_for(c->h, im->threading, flops, cap);
        if (im->applies(c, p) &&
            (forced != NULL || im->prefers == NULL || im->prefers(p)))
            return im;
    }
    return NULL;
}

fb_status fb_cpu_gemm(fb_handle h, const fb_gemm_problem *p,
                      const char *forced, char *path, size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    fb_cpu_call c = {h, 1, NULL, NULL};
    const fb_cpu_gemm_impl *im = fb_cpu_gemm_choose(&c, p, forced, 0);
    if (im == NULL) {
        if (forced != NULL)
            snprintf(path, len, "%s does not apply to this call", forced);
        else
            snprintf(path, len, "k = %lld exceeds OpenBLAS's %zu-byte "
                     "integer", (long long)p->k, sizeof(blasint));
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
