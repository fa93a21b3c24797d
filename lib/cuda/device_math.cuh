/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_math.cuh -- the activations and storage-type conversions that the
 * module's own kernels apply, in device code.
 *
 * The formulas are docs/DESIGN.md's, evaluated through the same identities as
 * the CPU backend (lib/cpu/cpu_epilogue.c) so that every backend computes
 * the same function: fp32 arithmetic with CUDA's accurate expf and erfcf
 * (this module is never built with --use_fast_math), and NaN in gives NaN
 * out for every activation, relu included. At the infinities each
 * activation takes its limit, as on the CPU: +Inf at +Inf, -0 at -Inf (the
 * value the forms below give for negative x large enough that exp
 * overflows or erfc underflows; at -Inf itself they would give -Inf / Inf
 * or -Inf * 0, so a select gives it there).
 */
#ifndef FB_CUDA_DEVICE_MATH_CUH
#define FB_CUDA_DEVICE_MATH_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "fusedblas.h"

/* The storage type of each fb_dtype. */
template <fb_dtype D> struct fb_storage;
template <> struct fb_storage<FB_DTYPE_F32> { typedef float type; };
template <> struct fb_storage<FB_DTYPE_F16> { typedef __half type; };
template <> struct fb_storage<FB_DTYPE_BF16> { typedef __nv_bfloat16 type; };

__device__ __forceinline__ float fb_load_f32(float x) { return x; }
__device__ __forceinline__ float fb_load_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float fb_load_f32(__nv_bfloat16 x)
{
    return __bfloat162float(x);
}

/* Round to nearest even; NaN stays NaN. */
template <typename T> __device__ __forceinline__ T fb_store_as(float x);
template <> __device__ __forceinline__ float fb_store_as<float>(float x)
{
    return x;
}
template <> __device__ __forceinline__ __half fb_store_as<__half>(float x)
{
    return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fb_store_as<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* relu that keeps NaN: (NaN < 0) is false, so NaN passes through. */
__device__ __forceinline__ float fb_relu(float x) { return x < 0.0f ? 0.0f : x; }

/* y, except -0 where x is -Inf (the limit there, see the top). */
__device__ __forceinline__ float fb_zero_at_minus_inf(float x, float y)
{
    return x == -INFINITY ? -0.0f : y;
}

/* x * sigmoid(z) as x / (1 + exp(-z)), the CPU backend's form (no
 * cancellation for negative x). exp's argument is clamped where the CPU's
 * exp clamps, so that infinities come out the same; a NaN x stays NaN
 * through the numerator. */
__device__ __forceinline__ float fb_x_sigmoid(float x, float z)
{
    return fb_zero_at_minus_inf(
        x, x / (1.0f + expf(fminf(fmaxf(-z, -104.0f), 88.8f))));
}

/* 0.5x(1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi)(x + 0.044715 x^3). */
__device__ __forceinline__ float fb_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return fb_x_sigmoid(x, 2.0f * k * (x + 0.044715f * x * x * x));
}

/* 0.5x(1 + erf(x/sqrt 2)) = 0.5x erfc(-x/sqrt 2): erfc keeps its relative
 * accuracy where 1 + erf would cancel. */
__device__ __forceinline__ float fb_gelu_erf(float x)
{
    return fb_zero_at_minus_inf(x, 0.5f * x * erfcf(-x * 0.7071067811865476f));
}

__device__ __forceinline__ float fb_silu(float x) { return fb_x_sigmoid(x, x); }

/* The activation as a compile-time choice, for the elementwise kernels. */
template <fb_activation A> __device__ __forceinline__ float fb_act(float x);
template <> __device__ __forceinline__ float fb_act<FB_ACT_NONE>(float x) { return x; }
template <> __device__ __forceinline__ float fb_act<FB_ACT_RELU>(float x) { return fb_relu(x); }
template <> __device__ __forceinline__ float fb_act<FB_ACT_GELU_TANH>(float x) { return fb_gelu_tanh(x); }
template <> __device__ __forceinline__ float fb_act<FB_ACT_GELU_ERF>(float x) { return fb_gelu_erf(x); }
template <> __device__ __forceinline__ float fb_act<FB_ACT_SILU>(float x) { return fb_silu(x); }

/* The activation as a run-time choice, for code where it is not hot. */
__device__ __forceinline__ float fb_act_dynamic(fb_activation a, float x)
{
    switch (a) {
    case FB_ACT_RELU: return fb_relu(x);
    case FB_ACT_GELU_TANH: return fb_gelu_tanh(x);
    case FB_ACT_GELU_ERF: return fb_gelu_erf(x);
    case FB_ACT_SILU: return fb_silu(x);
    default: return x;
    }
}

#endif /* FB_CUDA_DEVICE_MATH_CUH */
