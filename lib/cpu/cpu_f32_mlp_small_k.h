/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_mlp_small_k.h -- the fp32 gated MLP on the small-k kernel, for
 * k and h of at most FB_SMALL_K_MAX (the tiny MLPs).
 */
#ifndef FB_CPU_F32_MLP_SMALL_K_H
#define FB_CPU_F32_MLP_SMALL_K_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* Whether fb_cpu_f32_mlp_small_k takes p: fp32, more than min_rows rows
 * (fewer are the decode kernel's), 0 < k, h <= FB_SMALL_K_MAX, and
 * fb_cpu_small_k_allowed. */
int fb_cpu_f32_mlp_small_k_applies(const fb_mlp_problem *p,
                                   int64_t min_rows);

/* Run p. Returns 1 (*st the call's status, path what ran or why it
 * failed): a workspace that cannot be had is FB_STATUS_ALLOC_FAILED with
 * nothing written, not a try at another path. */
int fb_cpu_f32_mlp_small_k(fb_handle h, const fb_mlp_problem *p,
                           fb_status *st, char *path, size_t len);

#endif /* FB_CPU_F32_MLP_SMALL_K_H */
