/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_epilogue.h -- bias, activation and gating on fp32 panels, vectorised.
 */
#ifndef FB_CPU_EPILOGUE_H
#define FB_CPU_EPILOGUE_H

#include <stdint.h>
#include "fusedblas.h"

/* CALL(A) with the activation A a constant, so that each loop it names is
 * compiled once per activation, the switch outside it. */
#define FB_FOR_EACH_ACT(act, CALL)                                             \
    switch (act) {                                                             \
    case FB_ACT_NONE: CALL(FB_ACT_NONE); break;                                \
    case FB_ACT_RELU: CALL(FB_ACT_RELU); break;                                \
    case FB_ACT_GELU_TANH: CALL(FB_ACT_GELU_TANH); break;                      \
    case FB_ACT_GELU_ERF: CALL(FB_ACT_GELU_ERF); break;                        \
    case FB_ACT_SILU: CALL(FB_ACT_SILU); break;                                \
    }

/* x[i] = act(x[i] + bias[i]) for i < n; bias may be NULL. */
void fb_cpu_bias_act(float *x, const float *bias, int64_t n,
                     fb_activation act);

/* x[i] = act(x[i] + b) for i < n: a bias constant along the vector. */
void fb_cpu_scalar_bias_act(float *x, float b, int64_t n, fb_activation act);

/* dst[i] = act(x[i] + bias[i]) (bias may be NULL), and dst[i] =
 * act(x[i] + b): the epilogue and the store into C in one pass, as
 * fb_cpu_bias_act and fb_cpu_scalar_bias_act then a copy compute it (for
 * the fp32 GEMM's blocks, which would otherwise pay for a pass in place
 * and a copy). dst and x do not overlap. */
void fb_cpu_bias_act_store(float *dst, const float *x, const float *bias,
                           int64_t n, fb_activation act);
void fb_cpu_scalar_bias_act_store(float *dst, const float *x, float b,
                                  int64_t n, fb_activation act);

/* g[i] = act(g[i] + bg[i]) * (u[i] + bu[i]); bg and bu may be NULL. */
void fb_cpu_gate(float *g, const float *u, const float *bg, const float *bu,
                 int64_t n, fb_activation act);

/* acc (mb x nb, column-major, ldacc) <- alpha (acc scale), the scales a
 * row's (from i0, per_row) or a column's (from j0): e4m3 weights' channel
 * scales on the drivers' dot products, before beta C and the bias. Only
 * the AVX-512 drivers call it. */
void fb_cpu_scale_block(float *acc, int64_t ldacc, const float *sc,
                        int per_row, int64_t i0, int64_t j0, int64_t mb,
                        int64_t nb, float alpha);

/* g[i] = act(g[i] sg[i] + bg[i]) * (u[i] su[i] + bu[i]) (bg, bu may be
 * NULL): the gate on e4m3 weights' dot products. AVX-512 only. */
void fb_cpu_gate_scaled(float *g, const float *u, const float *sg,
                        const float *su, const float *bg, const float *bu,
                        int64_t n, fb_activation act);

#endif /* FB_CPU_EPILOGUE_H */
