/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rounding.c -- "rounded once", bit for bit, on the CPU: the
 * exact-result family of exact_gemm.h on backend cpu and on auto with
 * host memory (which may stage to a GPU where there is one: any backend
 * must give the same bits).
 */
#include "exact_gemm.h"

int main(void)
{
    tap_begin("test_rounding");
    exact_checker_can_fail();
    target t[2];
    t[0] = target_cpu();
    t[1] = t[0];
    t[1].name = "auto";
    t[1].handle = handle_on(FB_BACKEND_AUTO);
    t[1].expect = FB_BACKEND_AUTO;
    exact_sweep(t, 2, 8, (int64_t)1 << 26);
    fb_destroy(t[0].handle);
    fb_destroy(t[1].handle);
    return tap_end();
}
