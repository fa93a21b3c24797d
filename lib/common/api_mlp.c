/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api_mlp.c -- mlp_geglu_forward: check, then dispatch.
 */
#include "check.h"
#include "dispatch.h"
#include "handle.h"

FB_EXPORT fb_status mlp_geglu_forward(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h_dim, int64_t n, const void *X, int64_t ldx,
    const void *Wg, const void *bg, const void *Wu, const void *bu,
    const void *Wd, const void *bd, void *Y, int64_t ldy)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    const fb_mlp_problem p = {dtype, gate_act, m, k, h_dim, n, X, ldx,
                              Wg, bg, Wu, bu, Wd, bd, Y, ldy};
    char msg[192];
    int arg = fb_check_mlp(&p, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg,
                              "mlp_geglu_forward: %s", msg);
    const fb_operand ops[] = {{X, 8},   {Wg, 10}, {bg, 11}, {Wu, 12},
                              {bu, 13}, {Wd, 14}, {bd, 15}, {Y, 16}};
    return fb_dispatch_mlp(h, "mlp_geglu_forward", &p, ops, 8);
}
