/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_fp8_device.cuh -- device pieces the e4m3 kernels share: the
 * scalar e4m3 value, the pair widening for the tensor cores, mma.sync,
 * and the output epilogue.
 */
#ifndef FB_FUSED_FP8_DEVICE_CUH
#define FB_FUSED_FP8_DEVICE_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "device_math.cuh"
#include "problem_fp8.h"

/* The exact value of an e4m3 byte; NaN for S.1111.111. */
__device__ __forceinline__ float fb_fp8_value(uint32_t b)
{
    const uint32_t mag = b & 0x7fu;
    float v;
    if (mag == 0x7fu)
        v = __int_as_float(0x7fc00000);
    else if (mag < 8u)
        v = (float)mag * 0x1p-9f;
    else
        v = __uint_as_float((mag << 20) + (120u << 23));
    return (b & 0x80u) ? -v : v;
}

/* Two e4m3 (the low 16 bits of w, first element in the low byte) as the
 * 16-bit pair the mma takes for activations of type T: hardware
 * conversion where the GPU has it (cuda_fp8.h emulates it exactly
 * elsewhere); fp16 -> bf16 through fp32 is exact too. */
template <typename T> __device__ __forceinline__ uint32_t fb_fp8_pair(uint32_t w);

template <> __device__ __forceinline__ uint32_t fb_fp8_pair<__half>(uint32_t w)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
        (__nv_fp8x2_storage_t)(w & 0xffffu), __NV_E4M3);
    return (uint32_t)h.x | ((uint32_t)h.y << 16);
}

template <>
__device__ __forceinline__ uint32_t fb_fp8_pair<__nv_bfloat16>(uint32_t w)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
        (__nv_fp8x2_storage_t)(w & 0xffffu), __NV_E4M3);
    const float2 f = __half22float2(*(const __half2 *)&h);
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
    return *(const uint32_t *)&b;
}

/* D += A B, m16n8k16, fp32 accumulators. */
template <typename T> __device__ __forceinline__ void
fb_fp8_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
           uint32_t b0, uint32_t b1);

template <> __device__ __forceinline__ void
fb_fp8_mma<__half>(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                   uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <> __device__ __forceinline__ void
fb_fp8_mma<__nv_bfloat16>(float (&d)[4], uint32_t a0, uint32_t a1,
                          uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* out(i, j) of the gemm from its fp32 dot product: the CPU's order,
 *   v = alpha * (dot * scale[j]) + beta * C(i, j) + bias[j], act(v),
 * rounded once. nothing (k == 0 or alpha == 0): the dot is not used.
 * T: the bias's type; TC: C's (T, or fp32 for the MLP's G and U). */
template <typename T, typename TC>
__device__ __forceinline__ void fb_fp8_finish(const fb_e4m3_gemm_problem &p,
                                              int64_t i, int64_t j,
                                              float dot, bool nothing)
{
    TC *c = (TC *)p.c + i * p.c_ts + j * p.c_cs;
    float v = nothing ? 0.0f : p.alpha * (dot * p.scale[j]);
    if (p.beta != 0.0f)
        v += p.beta * fb_load_f32(*c);
    if (p.bias != NULL)
        v += fb_load_f32(((const T *)p.bias)[j]);
    *c = fb_store_as<TC>(fb_act_dynamic(p.act, v));
}

#endif /* FB_FUSED_FP8_DEVICE_CUH */
