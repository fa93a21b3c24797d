/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_badargs.c -- every argument of every public routine given each
 * class of bad value, alone and in pairs, on the CPU backend: the status,
 * the argument index, and outputs bit-for-bit unchanged. Then the legal
 * edge cases beside them (m, n or k zero), on the CPU and on a handle set
 * to each CUDA backend.
 */
#include "bad_args.h"

int main(void)
{
    tap_begin("test_badargs");
    target cpu = target_cpu();
    const long g = badargs_gemm(&cpu);
    const long m = badargs_mlp(&cpu);
    const long h = badargs_handle();
    const long e = edge_cases(&cpu) + named_backend_empty_calls();
    tap_diag("tried %ld bad-argument cases (gemm %ld, mlp %ld, handle %ld) "
             "and %ld edge cases", g + m + h, g, m, h, e);
    fb_destroy(cpu.handle);
    return tap_end();
}
