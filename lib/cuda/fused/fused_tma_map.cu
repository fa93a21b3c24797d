/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tma_map.cu -- tensor maps for the fused kernels (fused_tma_map.h).
 */
#include <atomic>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_runtime.h>
#include "fused_tma_map.h"

namespace fbf {

typedef PFN_cuTensorMapEncodeTiled_v12000 EncodeFn;

/* The driver's cuTensorMapEncodeTiled, looked up once; NULL where the
 * driver lacks it. */
static EncodeFn encoder()
{
    static std::atomic<EncodeFn> cached{nullptr};
    EncodeFn f = cached.load(std::memory_order_acquire);
    if (f)
        return f;
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                         cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
        (void)cudaGetLastError();
        return nullptr;
    }
    f = reinterpret_cast<EncodeFn>(p);
    cached.store(f, std::memory_order_release);
    return f;
}

bool fbf_tma_available()
{
    return encoder() != nullptr;
}

bool fbf_tma_map_16(CUtensorMap *tm, fb_dtype dt, const void *base,
                    int64_t rows, int64_t cols, int64_t ld, int box_cols,
                    int box_rows, bool swizzle128)
{
    const EncodeFn enc = encoder();
    if (!enc || (dt != FB_DTYPE_BF16 && dt != FB_DTYPE_F16))
        return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    return enc(tm,
               dt == FB_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
               2, const_cast<void *>(base), dims, strides, box, estr,
               CU_TENSOR_MAP_INTERLEAVE_NONE,
               swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B
                          : CU_TENSOR_MAP_SWIZZLE_NONE,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

} /* namespace fbf */
