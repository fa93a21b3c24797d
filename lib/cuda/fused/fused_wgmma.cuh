/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_wgmma.cuh -- Hopper's warpgroup MMA (wgmma, sm_90a) and the bulk
 * tensor copy (TMA) with its mbarriers, as the fused kernels use them:
 * fused_tiny_wgmma.cu (tiny MLP, operands copied by cp.async),
 * fused_prefill_wgmma.cu (prefill dual GEMM, operands copied by TMA) and
 * fused_fp8_wgmma.cu (e4m3 weights widened into the register operand).
 *
 * Operands in shared memory are K-major with the 128-byte swizzle: rows of
 * 64 16-bit elements (128 bytes), 16-byte chunk j of row r at chunk
 * j ^ (r % 8), 8-row groups 1024 bytes apart, tiles 1024-byte aligned:
 * the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and a 64-element
 * box row, and the one wg_desc describes.
 */
#ifndef FB_CUDA_FUSED_WGMMA_CUH
#define FB_CUDA_FUSED_WGMMA_CUH

#include <stdint.h>
#include "fused_device.cuh"

/* Kernel bodies exist only in code built for sm_90a (wgmma); the host
 * side launches them only when the module was built so (FB_HAVE_SM90A, set
 * by configure for architecture 90) and the device is compute 9.0. */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FB_WGMMA_BODY 1
#else
#define FB_WGMMA_BODY 0
#endif

namespace fbf {

#if FB_WGMMA_BODY

/* Byte offset of 16-byte chunk j of row r in a 128-byte-swizzled tile. */
__device__ __forceinline__ uint32_t swz128(int r, int j)
{
    return (uint32_t)(r * 128 + ((j ^ (r & 7)) << 4));
}

/* wgmma matrix descriptor of a K-major, 128-byte-swizzled operand at
 * shared address s (1024-byte aligned tile; + 32 bytes per k16 step):
 * start address >> 4, leading offset 1 (unused by this layout), stride
 * between 8-row groups 1024 bytes, swizzle mode 1 (128 B). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t s)
{
    return (uint64_t)((s & 0x3FFFF) >> 4) | (uint64_t)1 << 16 |
           (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Wait until at most N of this warpgroup's committed groups are pending. */
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void wg_wait_all() { wg_wait<0>(); }

/* Pin registers at this point of the program: the compiler must neither
 * read an accumulator before the wait that completes it, nor reuse a
 * register an in-flight wgmma still reads. */
template <int N> __device__ __forceinline__ void pin(float (&v)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+f"(v[i])::"memory");
}

template <int N> __device__ __forceinline__ void pin(uint32_t (&v)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+r"(v[i])::"memory");
}

/* The cp.async writes of this thread are done; make them visible to the
 * async proxy, which wgmma reads shared memory through. */
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Barrier of the 128 threads of warpgroup wg (ids 1.., 0 is
 * __syncthreads). */
__device__ __forceinline__ void wg_barrier(int wg)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory");
}

/* The accumulator operands of wgmma m64nNk16 (N / 2 fp32 a thread): the
 * register list in the instruction and the asm operands bound to d. */
#define FB_WGMMA_D32_REGS                                                     \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "      \
    "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "       \
    "%28, %29, %30, %31}"
#define FB_WGMMA_D64_REGS                                                     \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "      \
    "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "       \
    "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, "       \
    "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "       \
    "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FB_WGMMA_D128_REGS                                                    \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "      \
    "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "       \
    "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, "       \
    "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "       \
    "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, "       \
    "%67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "       \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, "       \
    "%93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, "       \
    "%105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, "      \
    "%116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "      \
    "%127}"
#define FB_WGMMA_D32_OPS                                                      \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),               \
    "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),               \
    "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),          \
    "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),          \
    "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),          \
    "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),          \
    "+f"(d[30]), "+f"(d[31])
#define FB_WGMMA_D64_OPS                                                      \
    FB_WGMMA_D32_OPS,                                                         \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),          \
    "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),          \
    "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]),          \
    "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),          \
    "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),          \
    "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),          \
    "+f"(d[62]), "+f"(d[63])
#define FB_WGMMA_D128_OPS                                                     \
    FB_WGMMA_D64_OPS,                                                         \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]),          \
    "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]),          \
    "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),          \
    "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),          \
    "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),          \
    "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]),          \
    "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),          \
    "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),      \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]),     \
    "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),     \
    "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]),     \
    "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),     \
    "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

#define FB_WGMMA_SS_M64N128K16(TY)                                            \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                          \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TY "." #TY " "        \
        FB_WGMMA_D64_REGS ", "                                                \
        "%64, %65, p, 1, 1, 0, 0;\n}\n"                                       \
        : FB_WGMMA_D64_OPS                                                    \
        : "l"(da), "l"(db), "r"(accumulate))

#define FB_WGMMA_RS_M64N64K16(TY)                                             \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                          \
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TY "." #TY " "         \
        FB_WGMMA_D32_REGS ", "                                                \
        "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"                         \
        : FB_WGMMA_D32_OPS                                                    \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(accumulate))

#define FB_WGMMA_SS_M64N64K16(TY)                                             \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                          \
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TY "." #TY " "         \
        FB_WGMMA_D32_REGS ", "                                                \
        "%32, %33, p, 1, 1, 0, 0;\n}\n"                                       \
        : FB_WGMMA_D32_OPS                                                    \
        : "l"(da), "l"(db), "r"(accumulate))

#define FB_WGMMA_SS_M64N256K16(TY)                                            \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                         \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." #TY "." #TY " "        \
        FB_WGMMA_D128_REGS ", "                                               \
        "%128, %129, p, 1, 1, 0, 0;\n}\n"                                     \
        : FB_WGMMA_D128_OPS                                                   \
        : "l"(da), "l"(db), "r"(accumulate))

/* d (64 x 2 NACC) = or += A (shared, desc da) B^T (shared, desc db):
 * wgmma m64n(2 NACC)k16, NACC = 32, 64, 128 accumulators a thread (N =
 * 64, 128, 256), one specialisation per type and width. */
template <typename T, int NACC> struct WgmmaSS;
#define FB_WGMMA_SS_SPECIALISE(CT, TY, NACC, MACRO)                          \
    template <> struct WgmmaSS<CT, NACC> {                                    \
        static __device__ __forceinline__ void                               \
        run(float (&d)[NACC], uint64_t da, uint64_t db, int accumulate)      \
        {                                                                     \
            MACRO(TY);                                                        \
        }                                                                     \
    };
FB_WGMMA_SS_SPECIALISE(__nv_bfloat16, bf16, 32, FB_WGMMA_SS_M64N64K16)
FB_WGMMA_SS_SPECIALISE(__half, f16, 32, FB_WGMMA_SS_M64N64K16)
FB_WGMMA_SS_SPECIALISE(__nv_bfloat16, bf16, 64, FB_WGMMA_SS_M64N128K16)
FB_WGMMA_SS_SPECIALISE(__half, f16, 64, FB_WGMMA_SS_M64N128K16)
FB_WGMMA_SS_SPECIALISE(__nv_bfloat16, bf16, 128, FB_WGMMA_SS_M64N256K16)
FB_WGMMA_SS_SPECIALISE(__half, f16, 128, FB_WGMMA_SS_M64N256K16)
#undef FB_WGMMA_SS_SPECIALISE

template <typename T, int NACC>
__device__ __forceinline__ void wgmma_ss(float (&d)[NACC], uint64_t da,
                                         uint64_t db, int accumulate)
{
    WgmmaSS<T, NACC>::run(d, da, db, accumulate);
}

/* d (64 x 64) = or += A (registers a0..a3, the k16 step's fragment)
 * B^T (shared, desc db). The caller keeps a0..a3 unchanged until a wait
 * has completed this wgmma (pin). */
template <typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], uint32_t a0,
                                         uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint64_t db,
                                         int accumulate);
template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16>(
    float (&d)[32], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
    uint64_t db, int accumulate)
{
    FB_WGMMA_RS_M64N64K16(bf16);
}
template <>
__device__ __forceinline__ void wgmma_rs<__half>(float (&d)[32], uint32_t a0,
                                                 uint32_t a1, uint32_t a2,
                                                 uint32_t a3, uint64_t db,
                                                 int accumulate)
{
    FB_WGMMA_RS_M64N64K16(f16);
}

#define FB_WGMMA_RS_M64N128K16(TY)                                            \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                          \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TY "." #TY " "        \
        FB_WGMMA_D64_REGS ", "                                                \
        "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"                         \
        : FB_WGMMA_D64_OPS                                                    \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(accumulate))

#define FB_WGMMA_RS_M64N256K16(TY)                                            \
    asm volatile(                                                             \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"                         \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." #TY "." #TY " "        \
        FB_WGMMA_D128_REGS ", "                                               \
        "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"                    \
        : FB_WGMMA_D128_OPS                                                   \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(accumulate))

/* d (64 x 2 NACC) = or += A (registers a0..a3, the k16 step's fragment)
 * B^T (shared, desc db): wgmma m64n(2 NACC)k16 with A from registers,
 * NACC = 32, 64, 128 (N = 64, 128, 256). As wgmma_rs, the caller keeps
 * a0..a3 unchanged until a wait has completed this wgmma (pin). */
template <typename T, int NACC> struct WgmmaRS;
#define FB_WGMMA_RS_SPECIALISE(CT, TY, NACC, MACRO)                          \
    template <> struct WgmmaRS<CT, NACC> {                                    \
        static __device__ __forceinline__ void                               \
        run(float (&d)[NACC], uint32_t a0, uint32_t a1, uint32_t a2,         \
            uint32_t a3, uint64_t db, int accumulate)                        \
        {                                                                     \
            MACRO(TY);                                                        \
        }                                                                     \
    };
FB_WGMMA_RS_SPECIALISE(__nv_bfloat16, bf16, 32, FB_WGMMA_RS_M64N64K16)
FB_WGMMA_RS_SPECIALISE(__half, f16, 32, FB_WGMMA_RS_M64N64K16)
FB_WGMMA_RS_SPECIALISE(__nv_bfloat16, bf16, 64, FB_WGMMA_RS_M64N128K16)
FB_WGMMA_RS_SPECIALISE(__half, f16, 64, FB_WGMMA_RS_M64N128K16)
FB_WGMMA_RS_SPECIALISE(__nv_bfloat16, bf16, 128, FB_WGMMA_RS_M64N256K16)
FB_WGMMA_RS_SPECIALISE(__half, f16, 128, FB_WGMMA_RS_M64N256K16)
#undef FB_WGMMA_RS_SPECIALISE

template <typename T, int NACC>
__device__ __forceinline__ void wgmma_rs_n(float (&d)[NACC], uint32_t a0,
                                           uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint64_t db,
                                           int accumulate)
{
    WgmmaRS<T, NACC>::run(d, a0, a1, a2, a3, db, accumulate);
}

/* ---- mbarriers and the bulk tensor copy (TMA) ------------------------ */

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                     smem_addr(bar)),
                 "r"(count)
                 : "memory");
}

/* The inits above are visible to the other threads and to the async
 * proxy (TMA) once a barrier follows. */
__device__ __forceinline__ void mbar_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* One arrival that also announces tx bytes the copy engine will bring. */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar,
                                                      uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(
                     smem_addr(bar))
                 : "memory");
}

/* Wait until the phase of the given parity has completed. A barrier
 * starts in phase 0; waiting on parity 1 then returns at once, which is
 * how a producer passes its first round of "slot free" waits. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    const uint32_t a = smem_addr(bar);
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}

/* Box (c0 = innermost coordinate, c1 = row) of the tensor map into
 * shared memory at dst, completing tx bytes on bar. Rows or columns past
 * the tensor arrive as zeros and still count in the tx bytes. */
__device__ __forceinline__ void tma_load_2d(void *dst, const void *tmap,
                                            uint64_t *bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx"
        "::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
        "l"(tmap), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
        : "memory");
}

/* The same box into the shared memory of every CTA of the cluster in
 * mask, at the same offset, completing tx bytes on each one's barrier at
 * the same offset as bar. */
__device__ __forceinline__ void tma_load_2d_multicast(void *dst,
                                                      const void *tmap,
                                                      uint64_t *bar, int c0,
                                                      int c1, uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx"
        "::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(
            smem_addr(dst)),
        "l"(tmap), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}

/* Shared memory to a box (c0 = innermost coordinate, c1 = row) of the
 * tensor map: the parts past the tensor's edges are not written. One
 * bulk group per call. */
__device__ __forceinline__ void tma_store_2d(const void *tmap, const void *src,
                                             int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, "
        "%3}], [%1];\n"
        "cp.async.bulk.commit_group;\n" ::"l"(tmap),
        "r"(smem_addr(src)), "r"(c0), "r"(c1)
        : "memory");
}

/* Wait until the bulk stores of this thread have read their shared
 * memory (READ) or are done (all of them written). */
template <bool READ> __device__ __forceinline__ void tma_store_wait()
{
    if (READ)
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    else
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/* Four 8 x 8 matrices of 16-bit pairs to shared memory: lane l gives the
 * address of row l % 8 of matrix l / 8; register i holds, in lane
 * 4 r + c, elements 2 c and 2 c + 1 of row r of matrix i (the layout of
 * an mma / wgmma accumulator fragment packed in pairs). */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0,
                                            uint32_t r1, uint32_t r2,
                                            uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, "
                 "%3, %4};\n" ::"r"(addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

/* This CTA's rank in its cluster. */
__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* Every thread of every CTA of the cluster reaches this point. */
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::
                     : "memory");
}

/* One arrival on the barrier at bar's offset in the shared memory of
 * cluster CTA rank. */
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar,
                                                    uint32_t rank)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                 : "=r"(remote)
                 : "r"(smem_addr(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
                 : "memory");
}

/* Hand registers back (producer warpgroups) or take them (consumers);
 * every thread of the warpgroup executes it. */
template <int N> __device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#endif /* FB_WGMMA_BODY */

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_WGMMA_CUH */
