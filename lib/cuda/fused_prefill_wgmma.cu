/*
 * fused_prefill_wgmma.cu -- the prefill gated MLP (m in the thousands) on
 * Hopper: bulk tensor copies (TMA) into a ring of shared-memory stages,
 * warpgroup MMA (wgmma) from shared memory, one warpgroup that only loads
 * and two that only compute (sm_90a).
 *
 * Two launches:
 *   1. dual GEMM: gate and up over the same X tile, H = act(G + bg) .*
 *      (U + bu) in the epilogue, written once in the input type (gate and
 *      up never reach memory);
 *   2. down GEMM, Y = H Wd^T + bd, the same kernel with one B operand.
 *
 * Per CTA (one per SM, persistent over output tiles of 128 x 128):
 *   - warpgroup 0, one thread: per k-block of 64, waits until a stage is
 *     free, announces its bytes on the stage's "full" mbarrier and issues
 *     the TMA copies (X rows, then Wg rows and Wu rows, or Wd rows) into
 *     it, 128-byte swizzled; rows or columns past the matrices arrive as
 *     zeros (the tensor maps' bounds), so no edge case reaches the MMA;
 *   - warpgroups 1 and 2, 64 rows each: wait for the stage, four wgmma
 *     k16 steps (dual: m64n256k16, gate in accumulator columns 0..127 and
 *     up in 128..255; single: m64n128k16), then release the previous
 *     stage once its wgmma group has completed (one arrival per warp on
 *     the stage's "empty" mbarrier); the epilogue straight from the
 *     accumulators to global memory.
 * Stages: dual 4 x 48 KiB, single 6 x 32 KiB.
 *
 * Tile order: the CTAs of one wave share the operand that is re-read.
 * When B (weights) is the larger operand, consecutive tiles walk down the
 * rows of X under one weight tile (each weight tile leaves DRAM once);
 * otherwise (the down projection: H is 50 MB, Wd 4.7 MB) they walk across
 * the output columns under one row tile of A.
 *
 * Two numbers, seed (m = 8192, 768 -> 3072 -> 768, bf16): dual GEMM
 * 77.3 GFLOP + down 38.7 GFLOP = 116 GFLOP -> 147 us at 790 TFLOP/s;
 * bytes X 12.6 + weights 14.2 + H 50.3 written and read + Y 12.6 = 140 MB
 * (33 us at 4.2 TB/s): arithmetic-bound. PyTorch eager 240 us on an H200,
 * its three cuBLAS GEMMs alone 193 us; the goal (1.2x eager) is <= 200 us.
 */
#include <stdio.h>
#include <string.h>
#include <atomic>
#include <cuda.h>         /* CUtensorMap and its enums (types only) */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include "fused_internal.h"
#include "fused_tiny.cuh"
#include "fused_wgmma.cuh"

namespace fbf {

enum {
    kPwBM = 128,         /* rows of a CTA tile: two warpgroups of 64 */
    kPwBN = 128,         /* output columns of a CTA tile */
    kPwBK = 64,          /* k-block: one 128-byte swizzled row an operand row */
    kPwThreads = 384,    /* warpgroup 0 loads, 1 and 2 compute */
    kPwRowBytes = 128,   /* kPwBK 16-bit elements */
    kPwStageBudget = 196 * 1024
};

/* Shared memory per stage: X rows, then B rows (dual: 128 of Wg, then 128
 * of Wu, read by one m64n256 wgmma as a 256-row operand). */
template <bool DUAL> struct PwShape {
    static const int BROWS = DUAL ? 2 * kPwBN : kPwBN;
    static const int ACC = BROWS / 2; /* accumulators a thread (m64nBROWS) */
    static const int STAGE_BYTES = (kPwBM + BROWS) * kPwRowBytes;
    static const int STAGES = kPwStageBudget / STAGE_BYTES;
    static const size_t SMEM =
        1024 + (size_t)STAGES * STAGE_BYTES + 2 * STAGES * sizeof(uint64_t);
};

template <typename T> struct PwArgs {
    T *c; /* m x n output (dual: H, n = h), row stride ldc */
    int64_t ldc;
    const T *bias, *bias2; /* n each (dual: bg, bu; single: bd), or NULL */
    int m, n, k;
    int mtiles, ntiles;
    int m_fastest; /* tile order: 1 walk rows under one column tile */
    fb_activation act;
    int c_pairs; /* C allows 4-byte stores of column pairs */
};

#if FB_WGMMA_BODY

/* Where this CTA's share of work unit u starts (rows m0, columns n0). A
 * unit is CL row tiles under one column tile: CTA `rank` of a cluster of
 * CL takes row tile CL (unit row) + rank (past the last row tile for an
 * odd count: it still loads its share of the weights for its partner,
 * computes on zeros and stores nothing). */
template <int CL, typename T>
__device__ __forceinline__ void pw_origin(const PwArgs<T> &a, int u,
                                          int rank, int &m0, int &n0)
{
    const int urows = (a.mtiles + CL - 1) / CL;
    int um, un;
    if (a.m_fastest) {
        um = u % urows;
        un = u / urows;
    } else {
        un = u % a.ntiles;
        um = u / a.ntiles;
    }
    m0 = (um * CL + rank) * kPwBM;
    n0 = un * kPwBN;
}

/* Two adjacent output columns (col, col + 1) of one row. */
template <typename T>
__device__ __forceinline__ void pw_store2(const PwArgs<T> &a, int row,
                                          int col, float v0, float v1)
{
    if (row >= a.m)
        return;
    T *crow = a.c + (int64_t)row * a.ldc;
    if (a.c_pairs && col + 1 < a.n) {
        *reinterpret_cast<uint32_t *>(crow + col) = pack2<T>(v0, v1);
    } else {
        if (col < a.n)
            crow[col] = fb_store_as<T>(v0);
        if (col + 1 < a.n)
            crow[col + 1] = fb_store_as<T>(v1);
    }
}

template <typename T>
__device__ __forceinline__ float pw_bias_at(const T *b, int col, int n)
{
    return (b && col < n) ? fb_load_f32(b[col]) : 0.0f;
}

/* Dual epilogue (the m64n256 accumulators): block j (columns 8 j + 2 t, + 1 of the
 * 64-row slice; rows g and g + 8 of the warp's 16) is the gate for
 * j < 16 and the up projection of the same columns for j + 16. */
template <typename T>
__device__ __forceinline__ void pw_epilogue(const PwArgs<T> &a,
                                            float (&acc)[128], int row,
                                            int n0, int t)
{
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        const int col = n0 + 8 * j + 2 * t;
        const float bg0 = pw_bias_at(a.bias, col, a.n);
        const float bg1 = pw_bias_at(a.bias, col + 1, a.n);
        const float bu0 = pw_bias_at(a.bias2, col, a.n);
        const float bu1 = pw_bias_at(a.bias2, col + 1, a.n);
        float v[4] = {acc[4 * j] + bg0, acc[4 * j + 1] + bg1,
                      acc[4 * j + 2] + bg0, acc[4 * j + 3] + bg1};
        act_fast_all<4>(a.act, v);
        v[0] *= acc[64 + 4 * j] + bu0;
        v[1] *= acc[64 + 4 * j + 1] + bu1;
        v[2] *= acc[64 + 4 * j + 2] + bu0;
        v[3] *= acc[64 + 4 * j + 3] + bu1;
        pw_store2(a, row, col, v[0], v[1]);
        pw_store2(a, row + 8, col, v[2], v[3]);
    }
}

/* Single epilogue (the m64n128 accumulators): C = acc + bias. */
template <typename T>
__device__ __forceinline__ void pw_epilogue(const PwArgs<T> &a,
                                            float (&acc)[64], int row,
                                            int n0, int t)
{
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        const int col = n0 + 8 * j + 2 * t;
        const float b0 = pw_bias_at(a.bias, col, a.n);
        const float b1 = pw_bias_at(a.bias, col + 1, a.n);
        pw_store2(a, row, col, acc[4 * j] + b0, acc[4 * j + 1] + b1);
        pw_store2(a, row + 8, col, acc[4 * j + 2] + b0, acc[4 * j + 3] + b1);
    }
}

/* A computing warp is done with a stage: lane 0 arrives on its "empty"
 * mbarrier in every CTA of the cluster. */
template <int CL>
__device__ __forceinline__ void pw_release(uint64_t *bar, int lane)
{
    if (lane == 0) {
        if (CL == 1)
            mbar_arrive(bar);
        else
#pragma unroll
            for (int c = 0; c < CL; ++c)
                mbar_arrive_cluster(bar, (uint32_t)c);
    }
}

#endif /* FB_WGMMA_BODY */

/* CL: CTAs a cluster (1, or 2 for the dual GEMM: the pair shares one
 * weight tile, each CTA loading half of it -- Wg's rows by rank 0, Wu's
 * by rank 1 -- multicast into both, which cuts each SM's L2 reads from
 * 384 to 256 rows a k-block). A stage is then free only when the
 * computing warps of both CTAs are done with it: its "empty" mbarrier
 * counts 8 CL arrivals, each warp arriving on it in every CTA. */
template <typename T, bool DUAL, int CL>
__global__ void __launch_bounds__(kPwThreads, 1)
    prefill_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a,
                         const __grid_constant__ CUtensorMap tm_b,
                         const __grid_constant__ CUtensorMap tm_b2,
                         const PwArgs<T> a)
{
#if FB_WGMMA_BODY
    typedef PwShape<DUAL> S;
    static_assert(CL == 1 || DUAL, "clusters share the dual GEMM's B");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem =
        smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    uint64_t *full =
        reinterpret_cast<uint64_t *>(smem + S::STAGES * S::STAGE_BYTES);
    uint64_t *empty = full + S::STAGES;
    const int wg = threadIdx.x >> 7;
    const int rank = CL > 1 ? (int)cluster_ctarank() : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S::STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8 * CL); /* each computing warp of each
                                             CTA of the cluster */
        }
        mbar_fence_init();
    }
    /* every CTA's barriers exist before any CTA copies or arrives */
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();
    const int kblocks = (a.k + kPwBK - 1) / kPwBK;
    const int units = (a.mtiles + CL - 1) / CL * a.ntiles;
    const int unit0 = blockIdx.x / CL, ustride = gridDim.x / CL;

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int stage = 0;
            uint32_t phase = 0;
            for (int u = unit0; u < units; u += ustride) {
                int m0, n0;
                pw_origin<CL>(a, u, rank, m0, n0);
                for (int kb = 0; kb < kblocks; ++kb) {
                    mbar_wait(&empty[stage], phase ^ 1);
                    unsigned char *st = smem + stage * S::STAGE_BYTES;
                    unsigned char *sb = st + kPwBM * kPwRowBytes;
                    mbar_arrive_expect_tx(&full[stage], S::STAGE_BYTES);
                    tma_load_2d(st, &tm_a, &full[stage], kb * kPwBK, m0);
                    if (CL > 1) {
                        tma_load_2d_multicast(
                            sb + rank * kPwBN * kPwRowBytes,
                            rank ? &tm_b2 : &tm_b, &full[stage],
                            kb * kPwBK, n0, (uint16_t)((1u << CL) - 1));
                    } else {
                        tma_load_2d(sb, &tm_b, &full[stage], kb * kPwBK,
                                    n0);
                        if (DUAL)
                            tma_load_2d(sb + kPwBN * kPwRowBytes, &tm_b2,
                                        &full[stage], kb * kPwBK, n0);
                    }
                    if (++stage == S::STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {
        setmaxnreg_inc<232>();
        const int cw = wg - 1; /* rows 64 cw .. 64 cw + 63 of the tile */
        const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
        const int g = lane >> 2, t = lane & 3;
        int stage = 0;
        uint32_t phase = 0;
        float acc[S::ACC];
#pragma unroll
        for (int i = 0; i < S::ACC; ++i)
            acc[i] = 0.0f;
        for (int u = unit0; u < units; u += ustride) {
            int m0, n0;
            pw_origin<CL>(a, u, rank, m0, n0);
            int prev = -1;
            for (int kb = 0; kb < kblocks; ++kb) {
                mbar_wait(&full[stage], phase);
                const uint32_t st = smem_addr(smem + stage * S::STAGE_BYTES);
                const uint64_t da = wg_desc(st + cw * 64 * kPwRowBytes);
                const uint64_t db = wg_desc(st + kPwBM * kPwRowBytes);
                wg_fence();
#pragma unroll
                for (int s = 0; s < 4; ++s)
                    wgmma_ss<T>(acc, da + 2 * s, db + 2 * s, kb > 0 || s > 0);
                wg_commit();
                /* the previous k-block's group is done: its stage is free */
                wg_wait<1>();
                if (prev >= 0)
                    pw_release<CL>(&empty[prev], lane);
                prev = stage;
                if (++stage == S::STAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
            wg_wait<0>();
            pin(acc);
            if (prev >= 0)
                pw_release<CL>(&empty[prev], lane);
            const int row = m0 + 64 * cw + 16 * warp + g;
            pw_epilogue(a, acc, row, n0, t);
        }
    }
    /* no CTA leaves while its partner may still arrive on its barriers */
    if (CL > 1)
        cluster_sync();
#endif /* FB_WGMMA_BODY */
}

/* ---- host side ------------------------------------------------------- */

typedef PFN_cuTensorMapEncodeTiled_v12000 PwEncodeFn;

/* The driver's cuTensorMapEncodeTiled, found once through the runtime
 * (the module links cudart, not libcuda). NULL where the driver lacks it. */
static PwEncodeFn pw_encoder()
{
    static std::atomic<PwEncodeFn> cached{nullptr};
    PwEncodeFn f = cached.load(std::memory_order_acquire);
    if (f)
        return f;
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                         cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p)
        return nullptr;
    f = reinterpret_cast<PwEncodeFn>(p);
    cached.store(f, std::memory_order_release);
    return f;
}

/* A rows x cols row-major 16-bit matrix (row stride ld elements) read in
 * boxes of 64 columns x 128 rows, 128-byte swizzled, zeros past its
 * edges. */
static bool pw_tensor_map(CUtensorMap *tm, fb_dtype dt, const void *base,
                          int64_t rows, int64_t cols, int64_t ld)
{
    const PwEncodeFn enc = pw_encoder();
    if (!enc)
        return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t box[2] = {kPwBK, 128};
    const cuuint32_t estr[2] = {1, 1};
    return enc(tm,
               dt == FB_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
               2, const_cast<void *>(base), dims, strides, box, estr,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* At most how many clusters of the kernel are resident at once on this
 * device (GPCs need not hold a whole number of clusters): a persistent
 * grid larger than that would leave the extra clusters waiting for a
 * whole CTA's share of the work. Asked once per (kernel, device). */
static int pw_resident_clusters(std::atomic<int> (&cache)[64],
                                const void *func, cudaLaunchConfig_t cfg,
                                int device, cudaError_t *err)
{
    const bool cacheable = device >= 0 && device < 64;
    int n = cacheable ? cache[device].load(std::memory_order_relaxed) : 0;
    *err = cudaSuccess;
    if (n > 0)
        return n;
    *err = cudaOccupancyMaxActiveClusters(&n, func, &cfg);
    if (*err != cudaSuccess)
        return 0;
    if (cacheable && n > 0)
        cache[device].store(n, std::memory_order_relaxed);
    return n;
}

template <typename T, bool DUAL, int CL>
static fb_status pw_launch(const fb_fused_env *env, const CUtensorMap &ta,
                           const CUtensorMap &tb, const CUtensorMap &tb2,
                           PwArgs<T> a, int64_t b_rows)
{
    static TinyKernelState state;
    static std::atomic<int> resident[64];
    typedef PwShape<DUAL> S;
    const void *func =
        reinterpret_cast<const void *>(&prefill_wgmma_kernel<T, DUAL, CL>);
    if (S::SMEM > env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    cudaError_t e = tiny_prepare(state, func, env);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    a.mtiles = (a.m + kPwBM - 1) / kPwBM;
    a.ntiles = (a.n + kPwBN - 1) / kPwBN;
    a.m_fastest = b_rows >= a.m;
    a.c_pairs = ((uintptr_t)a.c & 3u) == 0 && a.ldc % 2 == 0;
    const int units = (a.mtiles + CL - 1) / CL * a.ntiles;

    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1] = {};
    cfg.blockDim = dim3(kPwThreads);
    cfg.dynamicSmemBytes = S::SMEM;
    cfg.stream = env->stream;
    int slots = env->sm_count / CL; /* work units running at once */
    if (CL > 1) {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = CL;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cfg.gridDim = dim3(CL * slots);
        const int n = pw_resident_clusters(resident, func, cfg, env->device, &e);
        if (e != cudaSuccess)
            return fbf_launch_status(e);
        if (n < 1)
            return FB_STATUS_NOT_SUPPORTED;
        slots = n < slots ? n : slots;
    }
    cfg.gridDim = dim3(CL * (units < slots ? units : slots));
    void *args[] = {const_cast<CUtensorMap *>(&ta),
                    const_cast<CUtensorMap *>(&tb),
                    const_cast<CUtensorMap *>(&tb2), &a};
    return fbf_launch_status(cudaLaunchKernelExC(&cfg, func, args));
}

/* H = act(X Wg^T + bg) .* (X Wu^T + bu) into hbuf (m x h, row stride h),
 * then, unless tune->h_only, Y = H Wd^T + bd. */
template <typename T>
static fb_status pw_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                        void *hbuf, const fbf_tuning *tune)
{
    CUtensorMap tx, twg, twu, th, twd;
    if (!pw_tensor_map(&tx, p->dtype, p->x, p->m, p->k, p->ldx) ||
        !pw_tensor_map(&twg, p->dtype, p->wg, p->h, p->k, p->k) ||
        !pw_tensor_map(&twu, p->dtype, p->wu, p->h, p->k, p->k) ||
        !pw_tensor_map(&th, p->dtype, hbuf, p->m, p->h, p->h) ||
        !pw_tensor_map(&twd, p->dtype, p->wd, p->n, p->h, p->h))
        return FB_STATUS_NOT_SUPPORTED;
    PwArgs<T> g;
    memset(&g, 0, sizeof g);
    g.c = static_cast<T *>(hbuf);
    g.ldc = p->h;
    g.bias = static_cast<const T *>(p->bg);
    g.bias2 = static_cast<const T *>(p->bu);
    g.m = (int)p->m;
    g.n = (int)p->h;
    g.k = (int)p->k;
    g.act = p->gate_act;
    fb_status st =
        tune && tune->prefill_cluster == 1
            ? pw_launch<T, true, 1>(env, tx, twg, twu, g, 2 * p->h)
            : pw_launch<T, true, 2>(env, tx, twg, twu, g, 2 * p->h);
    if (st != FB_STATUS_SUCCESS || (tune && tune->h_only))
        return st;
    PwArgs<T> d;
    memset(&d, 0, sizeof d);
    d.c = static_cast<T *>(p->y);
    d.ldc = p->ldy;
    d.bias = static_cast<const T *>(p->bd);
    d.m = (int)p->m;
    d.n = (int)p->n;
    d.k = (int)p->h;
    d.act = FB_ACT_NONE;
    return pw_launch<T, false, 1>(env, th, twd, twd, d, p->n);
}

} /* namespace fbf */

using namespace fbf;

/* Covered: 16-bit, m > 32 (fewer rows are the decode kernels'); k, h,
 * ldx multiples of 8 and 16-byte aligned X, weights and hbuf (the tensor
 * maps' rules); a compute 9.0 device and a module built for sm_90a. */
fb_status fbf_prefill_mlp_wgmma(const fb_fused_env *env,
                                const fb_mlp_problem *p, void *hbuf,
                                size_t hbuf_bytes, const fbf_tuning *tune,
                                char *path, size_t pathlen)
{
#ifdef FB_HAVE_SM90A
    if (env->cc_major != 9 || env->cc_minor != 0)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype != FB_DTYPE_BF16 && p->dtype != FB_DTYPE_F16)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m <= 32 || p->k < 8 || p->h < 8 || p->n < 1 || p->k % 8 ||
        p->h % 8 || p->ldx % 8 || p->m >= ((int64_t)1 << 30) ||
        p->h >= ((int64_t)1 << 30) || p->n >= ((int64_t)1 << 30) ||
        p->k >= ((int64_t)1 << 30))
        return FB_STATUS_NOT_SUPPORTED;
    if (!tiny_aligned16(p->x) || !tiny_aligned16(p->wg) ||
        !tiny_aligned16(p->wu) || !tiny_aligned16(p->wd))
        return FB_STATUS_NOT_SUPPORTED;
    if (PwShape<true>::SMEM > env->smem_optin ||
        PwShape<false>::SMEM > env->smem_optin || !pw_encoder())
        return FB_STATUS_NOT_SUPPORTED;
    if (tune && tune->dry_run)
        return FB_STATUS_SUCCESS;
    if (!hbuf || !tiny_aligned16(hbuf) ||
        hbuf_bytes < (size_t)p->m * (size_t)p->h * 2)
        return FB_STATUS_NOT_SUPPORTED;
    const fb_status st = p->dtype == FB_DTYPE_BF16
                             ? pw_mlp<__nv_bfloat16>(env, p, hbuf, tune)
                             : pw_mlp<__half>(env, p, hbuf, tune);
    if (st == FB_STATUS_SUCCESS)
        fbf_set_path(path, pathlen, p->dtype == FB_DTYPE_BF16
                                        ? "mlp_prefill_wgmma_bf16"
                                        : "mlp_prefill_wgmma_f16");
    return st;
#else
    (void)env; (void)p; (void)hbuf; (void)hbuf_bytes; (void)tune;
    (void)path; (void)pathlen;
    return FB_STATUS_NOT_SUPPORTED;
#endif
}
