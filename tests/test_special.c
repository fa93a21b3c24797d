/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_special.c -- NaN and Inf in A, B, C and bias on the CPU backend
 * (special_values.h says what must happen).
 */
#include "special_values.h"

int main(void)
{
    tap_begin("test_special");
    target cpu = target_cpu();
    special_sweep(&cpu, 1, NULL);
    fb_destroy(cpu.handle);
    return tap_end();
}
