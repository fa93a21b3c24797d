/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_small_k.h -- fp32 gemm_bias_act for a small k on AVX-512F:
 * op(B) read where it lies, each register tile finished and stored once.
 */
#ifndef FB_CPU_F32_SMALL_K_H
#define FB_CPU_F32_SMALL_K_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* The largest k the path takes. Against the packed kernel it measured
 * faster at every k up to 512 and slower from k = 1024
 * (docs/cpu-kernels.md), where one pass over all of k no longer keeps a
 * tile's operands in L1 and L2 and the packed kernel's k chunks do. */
#define FB_SMALL_K_MAX 512

/* fb_cpu_gemm_small_k (cpu_impl.h) takes fp32 calls with 0 < k <=
 * FB_SMALL_K_MAX and alpha != 0 where the kernel is allowed (below).
 * Unlike the packed kernel it is chosen whatever OpenBLAS's core: it also
 * beat OpenBLAS's AVX-512 sgemm with a separate epilogue pass at every
 * shape measured (docs/cpu-kernels.md). */

/* AVX-512F runs and FUSEDBLAS_CPU_SGEMM allows the small-k kernels (it is
 * neither "openblas" nor "packed"): the shape-free half of the above, for
 * the MLP too. */
int fb_cpu_small_k_allowed(void);

/* ---- the pieces the small-k MLP (cpu_f32_mlp_small_k.c) runs ---------- */

/* All tiles of p on the calling thread, op(A) already packed at apack
 * (fb_f32_pack, 32-row panels of depth p->k). */
void fb_small_k_tiles(const fb_gemm_problem *p, const float *apack);

/* Gate and up for a block of rows of X, finished as H in registers:
 *   H = act(X Wg^T + bg) .* (X Wu^T + bu)
 * Wg and Wu share packed panels: panel q (32 floats per l, depth k) has
 * Wg's rows 16q..16q+15 in lanes 0-15 and Wu's same rows in lanes 16-31
 * (fb_f32_pack_lanes). */
typedef struct fb_small_k_gate {
    const float *x;          /* rows x k, row-major, ldx */
    int64_t ldx, rows, k, h;
    const float *wgu;        /* fb_small_k_gate_panels(h) shared panels */
    const float *bg, *bu;    /* length h, each may be NULL */
    fb_activation act;
    float *hout;             /* rows x h, row-major, ldh */
    int64_t ldh;             /* >= 16 * fb_small_k_gate_panels(h) */
} fb_small_k_gate;

/* Shared gate/up panels for h hidden units. */
static inline int64_t fb_small_k_gate_panels(int64_t h)
{
    return (h + 15) / 16;
}

/* H for g's block of rows, on the calling thread. */
void fb_small_k_gate_rows(const fb_small_k_gate *g);

#endif /* FB_CPU_F32_SMALL_K_H */
