/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed_check.h -- what the tests of the CPU packed kernels (fp32:
 * test_cpu_f32_kernel, bf16: test_cpu_bf16) share: the case maker, the
 * checker-then-path step, and the shape x layout x transpose sweep. Each
 * test keeps its own dtype, shapes, path strings and fallback checks.
 */
#ifndef FB_TESTS_PACKED_CHECK_H
#define FB_TESTS_PACKED_CHECK_H

#include <stdint.h>
#include "gemm_check.h"
#include "mlp_check.h"

/* The path a kernel call reports starts with kernel; the path of the
 * other route (OpenBLAS, the fp32 panels) contains other. */
typedef struct {
    const char *kernel;
    const char *other;
} packed_paths;

/* Whether the handle's last call ran on the kernel. */
int packed_on_kernel(fb_handle h, const packed_paths *p);

/* Does this CPU run the fp32 kernel of p? A 2 x 2 sgemm_bias_act's
 * path says (a plain call, not a TAP point: the skip must come before
 * any); if not, the whole program is skipped (cpu's handle destroyed). */
void packed_f32_skip_unless_kernel(target *cpu, const packed_paths *p);

/* A case of dtype with alpha 1, beta 0, no bias, no activation, tight
 * leading dimensions. */
gemm_case packed_case(fb_dtype dtype, fb_layout layout, fb_transpose ta,
                      fb_transpose tb, int64_t m, int64_t n, int64_t k);

/* One case through gemm_check (oracle, guards, untouched inputs), then a
 * TAP point on the path: the kernel if want_kernel, else the other. */
void packed_run(const target *cpu, gemm_data *d, const packed_paths *p,
                int want_kernel);

/* Every shape (m, n, k) x layout x transpose pair, epilogue and padding
 * varied along the way; then every activation x bias x beta x layout on
 * a 45 x 39 x ragged_k case with ragged edges in every direction. */
void packed_sweep(const target *cpu, fb_dtype dtype,
                  const int64_t (*shapes)[3], int nshapes,
                  const packed_paths *p, int want_kernel, int64_t ragged_k);

/* A NaN in op(A)'s row 37 and an Inf in op(B)'s column 29 of a
 * 70 x 50 x 41 case (bias, relu), every layout and transpose pair: the
 * oracle (and the checker's judge) say which outputs are NaN, Inf or
 * finite; a kernel that dropped an edge element or mixed rows would put
 * them elsewhere. Each on the kernel (packed_run). */
void packed_special_inputs(const target *cpu, fb_dtype dtype,
                           const packed_paths *p);

/* The switch environment variable var: one case (64 x 48 x 96, bias,
 * silu) with var=off takes the other route, then with var=on (on NULL: var
 * unset; this process's own setting) the kernel again; each through
 * packed_run. The library reads its environment once per process, so the
 * var=off run is this program again as a child (tap_child.h) in phase
 * "env-switch", whose main() must call this function again (which then
 * runs only that part). */
void packed_env_switch(const target *cpu, fb_dtype dtype, const char *var,
                       const char *off, const char *on,
                       const packed_paths *p);

/* An MLP case of dtype: gate act, biases (MLP_BG ...), ldx = k + pad,
 * ldy = n + 2 pad, offset pad & 1. */
mlp_case packed_mlp_case(fb_dtype dtype, int64_t m, int64_t k, int64_t h,
                         int64_t n, fb_activation act, unsigned biases,
                         int pad);

/* One MLP case through mlp_check (oracle, guards, untouched inputs),
 * then a TAP point: the path starts with prefix iff want_kernel. */
void packed_mlp_run(const target *cpu, mlp_data *d, const char *prefix,
                    int want_kernel);

/* Every shape (m, k, h, n) x gate activation, biases and padding varied
 * along the way, each through packed_mlp_run. */
void packed_mlp_sweep(const target *cpu, fb_dtype dtype,
                      const int64_t (*shapes)[4], int nshapes,
                      const char *prefix, int want_kernel);

/* Element (r, col) of op(A) (is_a) or of op(B), as an offset into the
 * stored matrix. */
int64_t packed_op_at(const gemm_case *c, int is_a, int64_t r, int64_t col);

#endif
