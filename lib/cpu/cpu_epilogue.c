/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_epilogue.c -- the activations, written so that the compiler
 * vectorises them: no libm call per element, selects instead of branches.
 *
 * Formulas (docs/DESIGN.md), and the identities used to evaluate them:
 *   gelu_tanh(x) = 0.5x(1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715x^3)
 *                = x / (1 + exp(-2u))            [1 + tanh(u) = 2 sigmoid(2u)]
 *   silu(x)      = x / (1 + exp(-x))
 *   gelu_erf(x)  = 0.5x(1 + erf(x/sqrt 2)) = 0.5x erfc(-x/sqrt 2)
 *   relu(x)      = max(x, 0), NaN kept
 * The sigmoid forms have no cancellation for negative x, and erfc keeps its
 * relative accuracy where 1 + erf would lose it. exp is ours (below, about
 * 1 ulp), erfc the Chebyshev fit of Numerical Recipes (fractional error
 * < 1.2e-7). NaN propagates through every path: comparisons with NaN are
 * false, so the selects keep it.
 *
 * At the infinities each activation takes its limit: act(+Inf) = +Inf
 * falls out of the forms above, and so does act(x) = -0 for negative x
 * large enough that exp(-z) overflows or erfc underflows; at x = -Inf
 * itself they would give -Inf / Inf or -Inf * 0 = NaN, so a select gives
 * the same -0 there (and changes nothing for any other input).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "cpu_epilogue.h"

/* Forced inline, the helpers below too: left out of line (as GCC left
 * gelu_erf's), a loop calls them an element at a time, unvectorised. */
#define FB_INLINE static inline __attribute__((always_inline))

/* exp(x) for float, vectorisable: x = n ln2 + r, |r| <= ln2/2, a degree-7
 * polynomial for exp(r), 2^n built in two halves so that results down to
 * the subnormals are right. */
FB_INLINE float fb_expf(float x)
{
    /* Beyond these the result is Inf or 0; the selects keep NaN. */
    x = x > 88.8f ? 88.8f : x;
    x = x < -104.0f ? -104.0f : x;
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    /* Round x log2e to an integer by the 1.5*2^23 trick. */
    const float shifter = 12582912.0f;
    float t = x * log2e + shifter;
    float n = t - shifter;
    float r = x - n * ln2_hi;
    r = r - n * ln2_lo;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* n in [-150, 128]: 2^n = 2^(n/2) * 2^(n - n/2), each half a normal. */
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    /* t is in [2^23, 2^24), where the ulp is 1: its significand field is
     * 2^22 + n. */
    int32_t ni = (int32_t)(tb & 0x7fffffu) - 0x400000;
    int32_t n1 = ni / 2, n2 = ni - n1;
    uint32_t s1 = (uint32_t)(n1 + 127) << 23, s2 = (uint32_t)(n2 + 127) << 23;
    float f1, f2;
    memcpy(&f1, &s1, sizeof f1);
    memcpy(&f2, &s2, sizeof f2);
    return p * f1 * f2;
}

/* x * sigmoid(z) in the overflow-safe form x / (1 + exp(-z)); -0 at
 * x = -Inf, the limit (see the top). Above z = 30, 1 + exp(-z) rounds to
 * 1: z is lowered to 30 there, so exp makes no denormal (slow on Intel
 * cores), as cpu_act_avx512.h does. */
FB_INLINE float fb_x_sigmoid(float x, float z)
{
    z = z > 30.0f ? 30.0f : z;
    const float y = x / (1.0f + fb_expf(-z));
    return x == -INFINITY ? -0.0f : y;
}

/* erfc(z), fractional error < 1.2e-7 (Numerical Recipes 6.2), with the
 * exponent's z*z split exactly (fma) so that large z keep their accuracy. */
FB_INLINE float fb_erfcf(float z)
{
    float a = fabsf(z);
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = 0.17087277f;
    q = q * t - 0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t - 1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t - 0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t - 1.26551223f;
    /* a*a = zz + zz_lo exactly, by Veltkamp's split (no fma needed, so
     * the loop vectorises on any target). */
    float zz = a * a;
    float a_hi = a * 4097.0f - (a * 4097.0f - a), a_lo = a - a_hi;
    float zz_lo = ((a_hi * a_hi - zz) + 2.0f * a_hi * a_lo) + a_lo * a_lo;
    /* For infinite z the split gives NaN; the correction is then moot. */
    float corr = zz < 1e30f ? 1.0f - zz_lo : 1.0f;
    float r = t * fb_expf(q - zz) * corr;
    return z < 0 ? 2.0f - r : r;
}

FB_INLINE float fb_act1(float x, fb_activation act)
{
    switch (act) {
    case FB_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case FB_ACT_GELU_TANH: {
        const float k0 = 0.7978845608028654f; /* sqrt(2/pi) */
        float u = k0 * (x + 0.044715f * x * x * x);
        return fb_x_sigmoid(x, 2.0f * u);
    }
    case FB_ACT_GELU_ERF: {
        const float y = 0.5f * x * fb_erfcf(-x * 0.70710678118654752f);
        return x == -INFINITY ? -0.0f : y;
    }
    case FB_ACT_SILU:
        return fb_x_sigmoid(x, x);
    case FB_ACT_NONE:
        break;
    }
    return x;
}

/* Each loop below is instantiated once per activation (the act argument
 * is a constant at every call site after inlining), so the switch in
 * fb_act1 folds away and each loop vectorises on its own. */

FB_INLINE void loop_bias_act(float *x, const float *bias, int64_t n,
                             fb_activation act)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        x[i] = fb_act1(x[i] + bias[i], act);
}

FB_INLINE void loop_scalar_bias_act(float *x, float b, int64_t n,
                                    fb_activation act)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        x[i] = fb_act1(x[i] + b, act);
}

FB_INLINE void loop_gate(float *g, const float *u, const float *bg,
                         const float *bu, int64_t n, fb_activation act)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        g[i] = fb_act1(g[i] + bg[i], act) * (u[i] + bu[i]);
}

FB_INLINE void loop_gate_nobias(float *g, const float *u, int64_t n,
                                fb_activation act)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        g[i] = fb_act1(g[i], act) * u[i];
}

/* The entry points are compiled for AVX-512, AVX2 and baseline x86-64 and
 * the loader picks the best the CPU has (GNU ifunc); elsewhere, one build. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FB_CLONES                                                              \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FB_CLONES
#endif


FB_CLONES static void bias_act_clones(float *x, const float *bias, int64_t n,
                     fb_activation act)
{
    if (bias == NULL && act == FB_ACT_NONE)
        return;
    if (bias == NULL) {
#define CALL(A) loop_scalar_bias_act(x, 0.0f, n, A)
        FB_FOR_EACH_ACT(act, CALL)
#undef CALL
    } else {
#define CALL(A) loop_bias_act(x, bias, n, A)
        FB_FOR_EACH_ACT(act, CALL)
#undef CALL
    }
}

FB_CLONES static void scalar_bias_act_clones(float *x, float b, int64_t n, fb_activation act)
{
#define CALL(A) loop_scalar_bias_act(x, b, n, A)
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

FB_CLONES static void gate_clones(float *g, const float *u, const float *bg, const float *bu,
                 int64_t n, fb_activation act)
{
    if (bg == NULL && bu == NULL) {
#define CALL(A) loop_gate_nobias(g, u, n, A)
        FB_FOR_EACH_ACT(act, CALL)
#undef CALL
        return;
    }
    /* A missing bias is a zero bias: fold it into the other form. */
    if (bg == NULL || bu == NULL) {
        for (int64_t i = 0; i < n; i += 256) {
            float zero[256] = {0};
            int64_t c = n - i < 256 ? n - i : 256;
            gate_clones(g + i, u + i, bg ? bg + i : zero, bu ? bu + i : zero,
                        c, act);
        }
        return;
    }
#define CALL(A) loop_gate(g, u, bg, bu, n, A)
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

/* Where AVX-512F runs, the same loops on cpu_act_avx512.h's activations
 * (VSCALEFPS for 2^n), cheaper than the clones above, which build 2^n from
 * integer fields (docs/cpu-kernels.md). */
#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu_act_avx512.h"
#define FB_EPILOGUE_AVX512 1

/* dst[i] = act(x[i] + (bias ? bias[i] : b)) (dst may be x); the tail
 * masked. */
FB_AVX512_INLINE void zmm_bias_act_loop(const float *x, float *dst,
                                        const float *bias, float b,
                                        int64_t n, fb_activation act)
{
    const __m512 bv = _mm512_set1_ps(b);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = fb_zmm_live(n, i);
        _mm512_mask_storeu_ps(dst + i, live,
                              fb_zmm_bias_act_at(x, bias, bv, i, live, act));
    }
}

/* g[i] = act(g[i] + bg[i]) * (u[i] + bu[i]), a NULL bias adding nothing. */
FB_AVX512_INLINE void zmm_gate_loop(float *g, const float *u, const float *bg,
                                    const float *bu, int64_t n,
                                    fb_activation act)
{
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 live = fb_zmm_live(n, i);
        _mm512_mask_storeu_ps(g + i, live,
                              fb_zmm_gate_at(g, u, NULL, NULL, bg, bu, i, live, act));
    }
}

FB_AVX512_TARGET static void zmm_bias_act(const float *x, float *dst,
                                          const float *bias, float b,
                                          int64_t n, fb_activation act)
{
#define CALL(A) zmm_bias_act_loop(x, dst, bias, b, n, A)
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

FB_AVX512_TARGET static void zmm_gate(float *g, const float *u,
                                      const float *bg, const float *bu,
                                      int64_t n, fb_activation act)
{
#define CALL(A) zmm_gate_loop(g, u, bg, bu, n, A)
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

FB_AVX512_TARGET static void zmm_gate_scaled(float *g, const float *u,
                                             const float *sg, const float *su,
                                             const float *bg, const float *bu,
                                             int64_t n, fb_activation act)
{
#define CALL(A)                                                                \
    for (int64_t i = 0; i < n; i += 16) {                                      \
        const __mmask16 live = fb_zmm_live(n, i);                              \
        _mm512_mask_storeu_ps(                                                 \
            g + i, live, fb_zmm_gate_at(g, u, sg, su, bg, bu, i, live, A));    \
    }
    FB_FOR_EACH_ACT(act, CALL)
#undef CALL
}

/* libgcc's CPU model, filled by its constructor: a load and a test. */
static int has_avx512(void)
{
    return __builtin_cpu_supports("avx512f");
}
#endif

/* GCC gives the ifunc symbols of target_clones default visibility whatever
 * -fvisibility says, so the clones are static and these plain wrappers are
 * the (hidden) entry points. */
void fb_cpu_bias_act(float *x, const float *bias, int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    if (has_avx512()) {
        if (bias != NULL || act != FB_ACT_NONE)
            zmm_bias_act(x, x, bias, 0.0f, n, act);
        return;
    }
#endif
    bias_act_clones(x, bias, n, act);
}

void fb_cpu_scalar_bias_act(float *x, float b, int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    if (has_avx512()) {
        zmm_bias_act(x, x, NULL, b, n, act);
        return;
    }
#endif
    scalar_bias_act_clones(x, b, n, act);
}

void fb_cpu_bias_act_store(float *dst, const float *x, const float *bias,
                           int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    if (has_avx512() && (bias != NULL || act != FB_ACT_NONE)) {
        zmm_bias_act(x, dst, bias, 0.0f, n, act);
        return;
    }
#endif
    memcpy(dst, x, (size_t)n * sizeof(float));
    fb_cpu_bias_act(dst, bias, n, act);
}

void fb_cpu_scalar_bias_act_store(float *dst, const float *x, float b,
                                  int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    if (has_avx512()) {
        zmm_bias_act(x, dst, NULL, b, n, act);
        return;
    }
#endif
    memcpy(dst, x, (size_t)n * sizeof(float));
    fb_cpu_scalar_bias_act(dst, b, n, act);
}

void fb_cpu_gate(float *g, const float *u, const float *bg, const float *bu,
                 int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    if (has_avx512()) {
        zmm_gate(g, u, bg, bu, n, act);
        return;
    }
#endif
    gate_clones(g, u, bg, bu, n, act);
}

void fb_cpu_gate_scaled(float *g, const float *u, const float *sg,
                        const float *su, const float *bg, const float *bu,
                        int64_t n, fb_activation act)
{
#if defined(FB_EPILOGUE_AVX512)
    zmm_gate_scaled(g, u, sg, su, bg, bu, n, act);
#else
    (void)g, (void)u, (void)sg, (void)su, (void)bg, (void)bu, (void)n;
    (void)act;
#endif
}

/* Only the AVX-512 drivers call it: compiled for that where it can be. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FB_SCALE_TARGET __attribute__((target("avx512f")))
#else
#define FB_SCALE_TARGET
#endif
FB_SCALE_TARGET void fb_cpu_scale_block(float *restrict acc, int64_t ldacc,
                                        const float *restrict sc, int per_row,
                                        int64_t i0, int64_t j0, int64_t mb,
                                        int64_t nb, float alpha)
{
    for (int64_t j = 0; j < nb; j++) {
        float *restrict a = acc + j * ldacc;
        if (per_row) {
            const float *restrict s = sc + i0;
#pragma omp simd
            for (int64_t i = 0; i < mb; i++)
                a[i] = alpha * (a[i] * s[i]);
        } else {
            const float cs = sc[j0 + j];
#pragma omp simd
            for (int64_t i = 0; i < mb; i++)
                a[i] = alpha * (a[i] * cs);
        }
    }
}
