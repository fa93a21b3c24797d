/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_tma_map.h -- tensor maps (the descriptors Hopper's bulk tensor
 * copy, TMA, reads) for the fused kernels' 16-bit row-major matrices,
 * encoded on the host by the driver's cuTensorMapEncodeTiled.
 *
 * The module links the CUDA runtime, not libcuda, so the driver function
 * is found once through cudaGetDriverEntryPointByVersion; where the driver
 * lacks it, fbf_tma_available() is false and every map fails to encode
 * (the callers then refuse the call or take their other engine).
 */
#ifndef FB_CUDA_FUSED_TMA_MAP_H
#define FB_CUDA_FUSED_TMA_MAP_H

#include <stdint.h>
#include <cuda.h> /* CUtensorMap (types only) */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include "fused.h"

namespace fbf {

/* Whether the driver can encode tensor maps at all. */
bool fbf_tma_available();

/* The driver's cuTensorMapEncodeTiled, looked up once; NULL where the
 * driver lacks it (for maps of other shapes than fbf_tma_map_16's). */
PFN_cuTensorMapEncodeTiled_v12000 fbf_tma_encoder();

/* A rows x cols row-major 16-bit matrix (fb_dtype F16 or BF16; row stride
 * ld elements, a multiple of 8; base 16-byte aligned) read in boxes of
 * box_cols x box_rows (each at most 256; box_cols * 2 a multiple of 16,
 * and 64 with the swizzle), with the 128-byte swizzle or none. Elements
 * past the matrix's edges arrive as zeros. False if the driver refuses. */
bool fbf_tma_map_16(CUtensorMap *tm, fb_dtype dt, const void *base,
                    int64_t rows, int64_t cols, int64_t ld, int box_cols,
                    int box_rows, bool swizzle128);

} /* namespace fbf */

#endif /* FB_CUDA_FUSED_TMA_MAP_H */
