/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_f32_mlp.h -- what the fp32 MLP driver (cpu_f32_mlp.c, whose table
 * entry is in cpu_impl.h) offers the e4m3 MLP (cpu_fp8_wide.c): its
 * packed weights read from e4m3 rows, and a run that applies their
 * scales.
 */
#ifndef FB_CPU_F32_MLP_H
#define FB_CPU_F32_MLP_H

#include <stddef.h>
#include "cpu_impl.h"
#include "problem.h"

/* Bytes of fb_cpu_f32_mlp_pack_e4m3's packing of p. */
size_t fb_cpu_f32_mlp_pack_e4m3_bytes(const fb_mlp_problem *p);

/* Bytes of the driver's workspace for p on threads, its weights packed. */
size_t fb_cpu_f32_mlp_e4m3_workspace(const fb_mlp_problem *p, int threads);

/* p's weights (Wg, Wu: h rows of k e4m3 bytes; Wd: n rows of h) packed
 * as the driver's pack() leaves a plan's, widened exactly to fp32, with
 * the scales sg, su (h each) and sd (n) after the panels. Needs
 * fb_f32_e4m3_pack_available(). */
void fb_cpu_f32_mlp_pack_e4m3(const fb_mlp_problem *p, const float *sg,
                              const float *su, const float *sd, int threads,
                              void *dst);

/* The driver's run() on c->packed from fb_cpu_f32_mlp_pack_e4m3: the
 * scales go to the dot products, G and U before the gate, Y before its
 * bias. */
fb_status fb_cpu_f32_mlp_run_e4m3(const fb_cpu_call *c,
                                  const fb_mlp_problem *p, char *path,
                                  size_t len);

#endif /* FB_CPU_F32_MLP_H */
