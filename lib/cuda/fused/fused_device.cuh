/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_device.cuh -- device-side building blocks of the cuda-fused kernels:
 * cache-hinted loads, the bf16/fp16 tensor-core instruction, the grid
 * barrier of the one-launch MLP, L2 prefetch. Only included from the
 * .cu files of lib/cuda/fused. The activations and the storage
 * conversions are the module's own (device_math.cuh), so every GPU path
 * computes the same function.
 *
 * Everything here builds for sm_80 and up; code that needs sm_90 is inside
 * __CUDA_ARCH__ >= 900 with an sm_80 equivalent beside it.
 */
#ifndef FB_CUDA_FUSED_DEVICE_CUH
#define FB_CUDA_FUSED_DEVICE_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "device_math.cuh"

namespace fbf {

/* ---- loads ----------------------------------------------------------- */

/* 16 bytes of a weight stream that this launch reads exactly once:
 * read-only path, not kept in L1 (it would only evict X), and a 256-byte
 * L2 fetch, since the same row's next bytes are read by the next lanes. */
__device__ __forceinline__ uint4 ld_stream16(const void *p)
{
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

/* ---- tensor cores ---------------------------------------------------- */

/* D += A B, m16n8k16, fp32 accumulate. A row-major 16x16 (4 registers of
 * two elements), B column-major 16x8 (2 registers). Not volatile: it only
 * reads and writes registers, so the compiler may interleave independent
 * ones with other work (the tiny kernels depend on that for overlap). */
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0,
                                         uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0,
                                         uint32_t b1);

template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(
    float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
    uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma16816<__half>(float (&d)[4], uint32_t a0,
                                                 uint32_t a1, uint32_t a2,
                                                 uint32_t a3, uint32_t b0,
                                                 uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Two floats as one register of two 16-bit values, low half first. */
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* The inverse: one register of two 16-bit values as two floats. */
template <typename T>
__device__ __forceinline__ void unpack2(uint32_t v, float &lo, float &hi);
template <>
__device__ __forceinline__ void unpack2<__nv_bfloat16>(uint32_t v, float &lo,
                                                       float &hi)
{
    lo = __uint_as_float(v << 16); /* bf16 is the high half of a float */
    hi = __uint_as_float(v & 0xffff0000u);
}
template <>
__device__ __forceinline__ void unpack2<__half>(uint32_t v, float &lo,
                                                float &hi)
{
    const float2 f = __half22float2(*reinterpret_cast<__half2 *>(&v));
    lo = f.x;
    hi = f.y;
}

/* ---- memory ordering across the grid --------------------------------- */

__device__ __forceinline__ unsigned long long ld_acquire_gpu(
    const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];"
                 : "=l"(v)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ unsigned ld_acquire_gpu_u32(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                 : "=r"(v)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ void st_release_gpu(unsigned long long *p,
                                               unsigned long long v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v)
                 : "memory");
}

__device__ __forceinline__ unsigned long long ld_relaxed_gpu(
    const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
                 : "=l"(v)
                 : "l"(p)
                 : "memory");
    return v;
}

/*
 * Grid-wide barrier for a cooperative launch (all CTAs resident), with no
 * state that must be zero beforehand: the workspace it lives in is shared
 * with cuBLASLt, so its contents between our launches are unknown.
 *
 * Each launch reads an epoch word E at its start and uses target = E + 1:
 * CTA c announces its arrival by writing target into flags[c] (release),
 * and every CTA leaves when it has read target in all flags (acquire).
 * CTA 0 stores the new epoch after the barrier, when every CTA has read
 * the old one. Flags only ever hold epochs up to the last one, so a stale
 * flag cannot equal the target; after foreign writes the barrier could be
 * passed early only if every flag happened to hold exactly E + 1, a
 * coincidence of 64-bit values in every one of G words (constant fills
 * and counting patterns cannot produce it: the epoch word then matches
 * the flags, or the flags differ from each other).
 */
__device__ __forceinline__ void grid_barrier(unsigned long long *flags,
                                             unsigned long long target)
{
    const int nblocks = (int)gridDim.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        st_release_gpu(&flags[blockIdx.x], target);
    }
    for (;;) {
        int ok = 1;
        for (int i = (int)threadIdx.x; i < nblocks; i += (int)blockDim.x)
            if (ld_acquire_gpu(&flags[i]) != target)
                ok = 0;
        if (__syncthreads_and(ok))
            break;
        __nanosleep(200);
    }
}

/* ---- programmatic dependent launch (sm_90) ---------------------------- */

/* Blocks until the grids ahead of this one on the stream have finished and
 * their writes are visible; at once where the launch was not programmatic.
 * A thread reads or writes nothing another grid may touch before it. */
__device__ __forceinline__ void grid_dependency_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Lets the next grid on the stream, if it was launched programmatically,
 * start before this one ends (it waits for this one before reading
 * anything this one writes). */
__device__ __forceinline__ void allow_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* ---- asynchronous copies (sm_80) -------------------------------------- */

/* 16 bytes global -> shared, bypassing registers; src_bytes < 16 fills the
 * rest with zeros (0: all zeros, src is then not read). */
__device__ __forceinline__ void cp_async16(void *smem_dst, const void *src,
                                           int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d),
                 "l"(src), "r"(src_bytes)
                 : "memory");
}

/* An L2 policy for data read once: its lines are evicted first. */
__device__ __forceinline__ uint64_t l2_evict_first_policy()
{
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"
                 : "=l"(policy));
    return policy;
}

/* cp_async16 of 16 whole bytes under an L2 policy (l2_evict_first_policy). */
__device__ __forceinline__ void cp_async16_hint(void *smem_dst,
                                                const void *src,
                                                uint64_t policy)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
    asm volatile(
        "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(d),
        "l"(src), "l"(policy)
        : "memory");
}

/* 4 bytes global -> shared (L1-allocating .ca: the only size below 16 a
 * cp.async takes); src_bytes 0 writes zeros without reading src. For
 * copies that permute 4-byte words, which 16-byte copies cannot. */
__device__ __forceinline__ void cp_async4(void *smem_dst, const void *src,
                                          int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d),
                 "l"(src), "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* ---- L2 prefetch ----------------------------------------------------- */

/* Ask L2 to fetch [p, p + bytes); p and bytes multiples of 16. Nothing is
 * waited for. */
__device__ __forceinline__ void prefetch_l2(const void *p, uint32_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p),
                 "r"(bytes)
                 : "memory");
#else
    const char *c = static_cast<const char *>(p);
    for (uint32_t o = 0; o < bytes; o += 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + o));
#endif
}

/* ---- activations where there are many of them ------------------------
 * The tiny kernels apply one activation per hidden unit per row (m h of
 * them: 16.8 M for 65536 rows x 256): with the accurate tanhf/erff that is
 * as much issue time as the matrix products. For 16-bit storage they use
 * the overflow-safe sigmoid forms of docs/DESIGN.md's formulas (the CPU
 * backend's identities, cpu_epilogue.c) with the hardware exp2 and
 * reciprocal: a few fp32 ulps, far under the bf16/fp16 rounding of H and
 * Y, and no cancellation for negative x (tanh.approx would lose 1 + tanh).
 *   gelu_tanh(x) = x / (1 + exp(-2u)), u = sqrt(2/pi)(x + 0.044715 x^3)
 *   silu(x)      = x / (1 + exp(-x))
 * relu keeps NaN; gelu_erf keeps the accurate erff (no cheap identity).
 * NaN in gives NaN out; the infinities give the limits (+Inf, and -0 at
 * -Inf), as device_math.cuh's forms do. */
__device__ __forceinline__ float ex2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float rcp_approx(float x)
{
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* x / (1 + 2^z) without overflow trouble: 2^z = inf gives x * 0 = 0 for
 * finite x (the limit), as the sigmoid form means, and x = -Inf (where
 * that would be -Inf * 0) gets the same -0 by a select. Both
 * approximations flush subnormals (.ftz): 2^z below 2^-126 next to the 1
 * it is added to changes nothing, and 1 + 2^z is never subnormal; without
 * .ftz each one costs a compare and two predicated multiplies around the
 * MUFU. */
__device__ __forceinline__ float x_over_1p_exp2(float x, float z)
{
    return fb_zero_at_minus_inf(x, x * rcp_approx(1.0f + ex2_approx(z)));
}

__device__ __forceinline__ float act_fast(fb_activation a, float x)
{
    const float log2e = 1.4426950408889634f;
    switch (a) {
    case FB_ACT_RELU:
        return fb_relu(x);
    case FB_ACT_GELU_TANH: {
        /* -2u log2(e) = x (c1 + c3 x^2) */
        const float c1 = -2.0f * 0.7978845608028654f * log2e;
        const float c3 = c1 * 0.044715f;
        return x_over_1p_exp2(x, x * fmaf(c3, x * x, c1));
    }
    case FB_ACT_GELU_ERF:
        return fb_gelu_erf(x);
    case FB_ACT_SILU:
        return x_over_1p_exp2(x, -log2e * x);
    default:
        return x;
    }
}

/* act_fast over a register array, the choice made once outside the loop
 * (one uniform branch per call instead of one per element). */
template <int N>
__device__ __forceinline__ void act_fast_all(fb_activation a, float (&v)[N])
{
    switch (a) {
    case FB_ACT_RELU:
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = act_fast(FB_ACT_RELU, v[i]);
        break;
    case FB_ACT_GELU_TANH:
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = act_fast(FB_ACT_GELU_TANH, v[i]);
        break;
    case FB_ACT_GELU_ERF:
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = act_fast(FB_ACT_GELU_ERF, v[i]);
        break;
    case FB_ACT_SILU:
#pragma unroll
        for (int i = 0; i < N; ++i)
            v[i] = act_fast(FB_ACT_SILU, v[i]);
        break;
    default:
        break;
    }
}

/* ---- small helpers --------------------------------------------------- */

__host__ __device__ __forceinline__ int round_up_int(int x, int a)
{
    return (x + a - 1) / a * a;
}

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_DEVICE_CUH */
