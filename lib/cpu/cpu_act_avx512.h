/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_act_avx512.h -- bias and activation on 16 floats in a zmm register,
 * for kernels that finish a register tile before storing it
 * (cpu_f32_small_k.c) instead of passing over C a second time.
 *
 * The formulas are cpu_epilogue.c's (docs/DESIGN.md's definitions, evaluated in
 * the same overflow-safe forms; see the comment there), with 2^n by
 * VSCALEFPS: exact down into the subnormals and saturating to 0 or Inf by
 * itself, where the portable code builds 2^n in two halves from integer
 * fields. VDIVPS measured cheaper here than VRCP14PS with a Newton step
 * and the Inf fix-up it needs, and rounding x log2e by VRNDSCALEPS than
 * by the 1.5 x 2^23 shifter (docs/cpu-kernels.md).
 * NaN propagates as in cpu_epilogue.c: MIN/MAX return their second operand
 * when either is NaN, so the clamps below put x second; comparisons with
 * NaN are false, so the selects keep it. At x = -Inf, where the forms give
 * NaN (-Inf / Inf, -Inf * 0), a select gives the limit -0, as
 * cpu_epilogue.c does.
 *
 * Include only from code compiled for AVX-512F (a target attribute on the
 * including functions: FB_AVX512_TARGET).
 */
#ifndef FB_CPU_ACT_AVX512_H
#define FB_CPU_ACT_AVX512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include "fusedblas.h"

#define FB_AVX512_TARGET __attribute__((target("avx512f")))
#define FB_AVX512_INLINE                                                       \
    static inline __attribute__((always_inline, target("avx512f")))

/* exp(x): x = n ln2 + r, |r| <= ln2/2, the degree-7 Taylor polynomial of
 * cpu_epilogue.c's fb_expf for exp(r), then p 2^n by VSCALEFPS. */
FB_AVX512_INLINE __m512 fb_zmm_exp(__m512 x)
{
    /* Beyond these the result is Inf or 0 anyway; clamping keeps n x ln2
     * finite. */
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 n = _mm512_roundscale_ps(
        _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* y, except -0 where x is -Inf (the activations' limit there). */
FB_AVX512_INLINE __m512 fb_zmm_zero_at_minus_inf(__m512 x, __m512 y)
{
    const __mmask16 minus_inf =
        _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(y, minus_inf, _mm512_set1_ps(-0.0f));
}

/* x / (1 + exp(w)): x sigmoid(-w), overflow-safe; -0 at x = -Inf. Below
 * w = -30, 1 + exp(w) rounds to 1: w is raised to -30 there, so that
 * exp never makes a denormal (each costs a microcode assist on Intel
 * cores, and a large positive x is common after a GEMM). */
FB_AVX512_INLINE __m512 fb_zmm_x_over_1p_exp(__m512 x, __m512 w)
{
    w = _mm512_max_ps(_mm512_set1_ps(-30.0f), w);
    return fb_zmm_zero_at_minus_inf(
        x, _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f),
                                          fb_zmm_exp(w))));
}

/* erfc(z) by cpu_epilogue.c's fb_erfcf (Numerical Recipes 6.2, fractional
 * error < 1.2e-7), z*z split exactly by the FMA. */
FB_AVX512_INLINE __m512 fb_zmm_erfc(__m512 z)
{
    const __m512 a = _mm512_abs_ps(z);
    const __m512 t = _mm512_div_ps(
        _mm512_set1_ps(1.0f),
        _mm512_fmadd_ps(_mm512_set1_ps(0.5f), a, _mm512_set1_ps(1.0f)));
    static const float c[10] = {0.17087277f,  -0.82215223f, 1.48851587f,
                                -1.13520398f, 0.27886807f,  -0.18628806f,
                                0.09678418f,  0.37409196f,  1.00002368f,
                                -1.26551223f};
    __m512 q = _mm512_set1_ps(c[0]);
    for (int i = 1; i < 10; i++)
        q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(c[i]));
    const __m512 zz = _mm512_mul_ps(a, a);
    const __m512 zz_lo = _mm512_fmsub_ps(a, a, zz);
    /* For infinite z the split is NaN; the correction is then moot. */
    const __mmask16 big =
        _mm512_cmp_ps_mask(zz, _mm512_set1_ps(1e30f), _CMP_NLT_UQ);
    const __m512 corr = _mm512_mask_mov_ps(
        _mm512_sub_ps(_mm512_set1_ps(1.0f), zz_lo), big,
        _mm512_set1_ps(1.0f));
    const __m512 r = _mm512_mul_ps(
        _mm512_mul_ps(t, fb_zmm_exp(_mm512_sub_ps(q, zz))), corr);
    const __mmask16 neg =
        _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_sub_ps(r, neg, _mm512_set1_ps(2.0f), r);
}

/* act(x), act a constant after inlining. */
FB_AVX512_INLINE __m512 fb_zmm_act(__m512 x, fb_activation act)
{
    switch (act) {
    case FB_ACT_RELU: {
        const __mmask16 neg =
            _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mov_ps(x, neg, _mm512_setzero_ps());
    }
    case FB_ACT_GELU_TANH: {
        /* x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the exponent
         * -2u = x (c0 + c1 x^2) in three operations. */
        const float c0 = -2.0f * 0.7978845608028654f;
        const float c1 = c0 * 0.044715f;
        const __m512 w = _mm512_mul_ps(
            x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(c1),
                               _mm512_set1_ps(c0)));
        return fb_zmm_x_over_1p_exp(x, w);
    }
    case FB_ACT_GELU_ERF:
        return fb_zmm_zero_at_minus_inf(
            x, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                             fb_zmm_erfc(_mm512_mul_ps(
                                 x, _mm512_set1_ps(-0.70710678118654752f)))));
    case FB_ACT_SILU:
        return fb_zmm_x_over_1p_exp(
            x, _mm512_sub_ps(_mm512_setzero_ps(), x));
    case FB_ACT_NONE:
        break;
    }
    return x;
}

/* The lanes live of a run of n from i: all 16, or the tail's. */
FB_AVX512_INLINE __mmask16 fb_zmm_live(int64_t n, int64_t i)
{
    return n - i >= 16 ? (__mmask16)0xffffu
                       : (__mmask16)((1u << (n - i)) - 1u);
}

/* act(x[i..] + (bias ? bias[i..] : bv)) on the live lanes. */
FB_AVX512_INLINE __m512 fb_zmm_bias_act_at(const float *x, const float *bias,
                                           __m512 bv, int64_t i,
                                           __mmask16 live, fb_activation act)
{
    const __m512 add =
        bias != NULL ? _mm512_maskz_loadu_ps(live, bias + i) : bv;
    return fb_zmm_act(
        _mm512_add_ps(_mm512_maskz_loadu_ps(live, x + i), add), act);
}

/* act(g[i..] sg[i..] + bg[i..]) * (u[i..] su[i..] + bu[i..]) on the live
 * lanes, a NULL bias adding nothing, NULL scales (e4m3 weights' channel
 * scales, both or neither) multiplying by nothing. */
FB_AVX512_INLINE __m512 fb_zmm_gate_at(const float *g, const float *u,
                                       const float *sg, const float *su,
                                       const float *bg, const float *bu,
                                       int64_t i, __mmask16 live,
                                       fb_activation act)
{
    __m512 gv = _mm512_maskz_loadu_ps(live, g + i);
    __m512 uv = _mm512_maskz_loadu_ps(live, u + i);
    if (sg != NULL) {
        gv = _mm512_mul_ps(gv, _mm512_maskz_loadu_ps(live, sg + i));
        uv = _mm512_mul_ps(uv, _mm512_maskz_loadu_ps(live, su + i));
    }
    if (bg != NULL)
        gv = _mm512_add_ps(gv, _mm512_maskz_loadu_ps(live, bg + i));
    if (bu != NULL)
        uv = _mm512_add_ps(uv, _mm512_maskz_loadu_ps(live, bu + i));
    return _mm512_mul_ps(fb_zmm_act(gv, act), uv);
}

#endif /* x86-64 GCC or Clang */
#endif /* FB_CPU_ACT_AVX512_H */
