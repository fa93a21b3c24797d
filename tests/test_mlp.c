/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mlp.c -- mlp_geglu_forward on the CPU backend against the double
 * oracle, across dtypes, gate activations, bias patterns and widths that
 * are multiples of nothing.
 */
#include "mlp_check.h"

int main(void)
{
    tap_begin("test_mlp");
    target cpu = target_cpu();
    mlp_sweep_conformance(&cpu, 1, NULL);
    /* A wider case, close to a small real layer. */
    for (int di = 0; di < 3; di++) {
        mlp_case c = {0};
        c.dtype = all_dtypes[di];
        c.act = FB_ACT_GELU_TANH;
        c.m = 40, c.k = 96, c.h = 257, c.n = 80;
        c.biases = MLP_ALL_BIASES;
        mlp_run_case(&c, &cpu, 1, NULL);
    }
    /* Tall and wide at a small k: several 512-row blocks per thread with a
     * ragged last one, and hidden chunks of 2048 + 52 columns
     * (cpu_mlp.c's blocking), at an oracle cost of ~50 M multiply-adds. */
    for (int di = 0; di < 3; di++) {
        mlp_case c = {0};
        c.dtype = all_dtypes[di];
        c.act = FB_ACT_SILU;
        c.m = 1100, c.k = 8, c.h = 2100, c.n = 4;
        c.biases = MLP_ALL_BIASES;
        mlp_run_case(&c, &cpu, 1, NULL);
    }
    fb_destroy(cpu.handle);
    return tap_end();
}
