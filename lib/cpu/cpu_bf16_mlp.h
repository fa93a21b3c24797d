/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_mlp.h -- what the bf16 MLP driver (cpu_bf16_mlp.c, whose
 * table entries are in cpu_impl.h) offers the e4m3 MLP (cpu_fp8_wide.c):
 * its AMX entry's packed weights, read from e4m3 rows.
 */
#ifndef FB_CPU_BF16_MLP_H
#define FB_CPU_BF16_MLP_H

#include <stddef.h>
#include "problem.h"

/* Bytes of fb_cpu_bf16_amx_mlp_pack_e4m3's packing of p. */
size_t fb_cpu_bf16_amx_mlp_pack_e4m3_bytes(const fb_mlp_problem *p);

/* Bytes of the AMX entry's workspace for p on threads with those packed
 * e4m3 weights (its row blocks are cut alike on any number of threads,
 * cpu_bf16_mlp.c says why). */
size_t fb_cpu_bf16_amx_mlp_e4m3_workspace(const fb_mlp_problem *p,
                                          int threads);

/* p's weights (Wg, Wu: h rows of k e4m3 bytes; Wd: n rows of h) packed
 * for the AMX entry (fb_cpu_mlp_bf16_amx) as its pack() leaves a plan's,
 * widened exactly to bf16 on the way, with the scales sg, su (h each) and
 * sd (n) after the panels: the entry's run() applies them to the dot
 * products, G and U before the gate, Y before its bias. */
void fb_cpu_bf16_amx_mlp_pack_e4m3(const fb_mlp_problem *p,
                                   const float *sg, const float *su,
                                   const float *sd, int threads, void *dst);

#endif /* FB_CPU_BF16_MLP_H */
