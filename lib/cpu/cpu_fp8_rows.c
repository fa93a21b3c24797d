/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_rows.c -- see cpu_fp8_rows.h.
 */
#include <string.h>
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_fp8_rows.h"

float fb_e4m3_get(fb_dtype dtype, const void *base, int64_t i)
{
    if (dtype == FB_DTYPE_F16)
        return fb_half_to_float(((const fb_half *)base)[i]);
    if (dtype == FB_DTYPE_BF16)
        return fb_bfloat16_to_float(((const fb_bfloat16 *)base)[i]);
    return ((const float *)base)[i];
}

void fb_e4m3_put(fb_dtype dtype, void *base, int64_t i, float v)
{
    if (dtype == FB_DTYPE_F16)
        ((fb_half *)base)[i] = fb_float_to_half(v);
    else if (dtype == FB_DTYPE_BF16)
        ((fb_bfloat16 *)base)[i] = fb_float_to_bfloat16(v);
    else
        ((float *)base)[i] = v;
}

void fb_e4m3_widen_row(fb_dtype dtype, const void *x, int64_t off,
                       int64_t ks, int64_t k, float *dst, int64_t ld)
{
    if (ks == 1)
        fb_cpu_to_f32(dtype, (const char *)x + off * fb_dtype_size(dtype),
                      dst, k);
    else
        for (int64_t p = 0; p < k; p++)
            dst[p] = fb_e4m3_get(dtype, x, off + p * ks);
    memset(dst + k, 0, (size_t)(ld - k) * sizeof(float));
}

void fb_e4m3_finish_row(const fb_e4m3_epilogue *ep, float *d, int64_t j0,
                        int64_t cnt, void *c, int64_t c_off, int64_t c_cs,
                        float *old)
{
    const int64_t es = fb_dtype_size(ep->dtype);
    char *cb = (char *)c;
    if (ep->nothing) {
        memset(d, 0, (size_t)cnt * sizeof(float));
    } else {
        const float *s = ep->scale + j0;
        for (int64_t j = 0; j < cnt; j++)
            d[j] = ep->alpha * (d[j] * s[j]);
    }
    if (ep->beta != 0.0f)
        for (int64_t j = 0; j < cnt; j += FB_E4M3_ROW_BUF) {
            const int64_t q = cnt - j < FB_E4M3_ROW_BUF ? cnt - j
                                                        : FB_E4M3_ROW_BUF;
            if (c_cs == 1)
                fb_cpu_to_f32(ep->dtype, cb + (c_off + j) * es, old, q);
            else
                for (int64_t r = 0; r < q; r++)
                    old[r] = fb_e4m3_get(ep->dtype, c,
                                         c_off + (j + r) * c_cs);
            for (int64_t r = 0; r < q; r++)
                d[j + r] += ep->beta * old[r];
        }
    fb_cpu_bias_act(d, ep->bias != NULL ? ep->bias + j0 : NULL, cnt,
                    ep->act);
    if (c_cs == 1)
        fb_cpu_from_f32(ep->dtype, d, cb + c_off * es, cnt);
    else
        for (int64_t j = 0; j < cnt; j++)
            fb_e4m3_put(ep->dtype, c, c_off + j * c_cs, d[j]);
}
