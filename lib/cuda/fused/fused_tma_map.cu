/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tma_map.cu -- tensor maps for the fused kernels (fused_tma_map.h),
 * and the plans' cache of their weights' maps (fused.h).
 */
#include <atomic>
#include <stdlib.h>
#include <string.h>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_runtime.h>
#include "fused_tma_map.h"

namespace fbf {

typedef PFN_cuTensorMapEncodeTiled_v12000 EncodeFn;

EncodeFn fbf_tma_encoder()
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
    return fbf_tma_encoder() != nullptr;
}

/* One map and what it was encoded from. */
struct map_key {
    const void *base;
    int64_t rows, cols, ld;
    int box_cols, box_rows, swizzle128, dtype;
};

} /* namespace fbf */

struct fbf_map_cache {
    const void *weights[8];
    int nweights;
    int n;
    fbf::map_key key[FBF_MAP_CACHE];
    CUtensorMap map[FBF_MAP_CACHE];
};

static thread_local fbf_map_cache *current_cache;

fbf_map_cache *fbf_map_cache_create(const void *const *weights, int n)
{
    fbf_map_cache *c =
        static_cast<fbf_map_cache *>(calloc(1, sizeof(fbf_map_cache)));
    if (c == NULL)
        return NULL;
    for (int i = 0; i < n && i < 8; i++)
        if (weights[i] != NULL)
            c->weights[c->nweights++] = weights[i];
    return c;
}

void fbf_map_cache_destroy(fbf_map_cache *c)
{
    free(c);
}

fbf_map_cache_scope::fbf_map_cache_scope(fbf_map_cache *c)
    : previous_(current_cache)
{
    current_cache = c;
}

fbf_map_cache_scope::~fbf_map_cache_scope()
{
    current_cache = previous_;
}

namespace fbf {

static bool encode(CUtensorMap *tm, fb_dtype dt, const void *base,
                   int64_t rows, int64_t cols, int64_t ld, int box_cols,
                   int box_rows, bool swizzle128);

bool fbf_tma_map_16(CUtensorMap *tm, fb_dtype dt, const void *base,
                    int64_t rows, int64_t cols, int64_t ld, int box_cols,
                    int box_rows, bool swizzle128)
{
    fbf_map_cache *c = current_cache;
    bool weight = false;
    for (int i = 0; c != NULL && i < c->nweights; i++)
        weight = weight || c->weights[i] == base;
    if (!weight)
        return encode(tm, dt, base, rows, cols, ld, box_cols, box_rows,
                      swizzle128);
    map_key k;
    memset(&k, 0, sizeof k); /* no padding bytes left to compare */
    k.base = base, k.rows = rows, k.cols = cols, k.ld = ld;
    k.box_cols = box_cols, k.box_rows = box_rows;
    k.swizzle128 = swizzle128, k.dtype = (int)dt;
    for (int i = 0; i < c->n; i++)
        if (memcmp(&c->key[i], &k, sizeof k) == 0) {
            *tm = c->map[i];
            return true;
        }
    if (!encode(tm, dt, base, rows, cols, ld, box_cols, box_rows,
                swizzle128))
        return false;
    if (c->n < FBF_MAP_CACHE) {
        c->key[c->n] = k;
        c->map[c->n] = *tm;
        c->n++;
    }
    return true;
}

static bool encode(CUtensorMap *tm, fb_dtype dt, const void *base,
                   int64_t rows, int64_t cols, int64_t ld, int box_cols,
                   int box_rows, bool swizzle128)
{
    const EncodeFn enc = fbf_tma_encoder();
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
