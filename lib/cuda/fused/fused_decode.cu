/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_decode.cu -- decode-sized calls (m <= 32 token rows, widths in the
 * thousands): weight streaming at memory speed.
 *
 * mlp_decode: the whole gated MLP in ONE cooperative launch, one CTA per
 * SM (12 warps; 16 for fp32 with <= 16 tokens on the register engine), no
 * floating-point atomics anywhere: the same call gives the same bits.
 *   Two engines stream the weights (the kernels' TMA template flag): the
 *   register engine (fused_decode_stream.cuh: warps load 16-byte pieces
 *   into registers), and on Hopper for 16-bit weights and fp32 with up to
 *   16 tokens the TMA engine (fused_decode_tma.cuh: a 13th warp has the
 *   copy engine fill a ring of shared-memory stages; its "prefetch" before
 *   the barrier is phase 2's first stages themselves; fp32 adds a 14th
 *   that stages X and H). The launcher tries TMA first where allowed.
 *   phase 1  CTA c owns hidden units [j0, j1) (h / G each, to one row):
 *            streams those rows of Wg and Wu once, with X in shared
 *            memory, and writes H[:, j0:j1] = act(X Wg^T + bg) .* (X Wu^T
 *            + bu) to the workspace in the input type (m x h: 352 KB at
 *            m = 16, h = 11008, so it stays in L2).
 *   barrier  grid-wide (fused_device.cuh). Before waiting, each CTA asks
 *            L2 for the first bytes of its phase-2 weights, so that HBM
 *            keeps streaming while the slowest CTA finishes phase 1.
 *   phase 2  Wd is cut into HS column stripes x P = G / HS row ranges, one
 *            block per CTA (equal areas to one row). The CTA loads its
 *            stripe of H into shared memory and streams its block of Wd.
 *            HS == 1: it writes Y rows directly. HS > 1: it writes a fp32
 *            partial for stripe s; once all HS CTAs of its row range have
 *            (a counter), each adds the HS partials in stripe order for
 *            1/HS of the range's rows, adds bd, writes Y.
 *   Why not keep each CTA's H slice on chip and reduce all of Y with
 *   atomics? That is G x m x n atomic adds through L2, far more traffic
 *   than H's round trip (m h bytes out, read back from L2), and the
 *   stripes keep the cross-CTA reduction to HS x m x n.
 *
 *   The weights' bytes over the copy bandwidth set the floor (tensor
 *   cores are never the limit); fp32's FMAs on the CUDA cores come close
 *   to the memory time, so fp32 at m = 32 is arithmetic-bound. The two
 *   numbers per shape and what was measured: docs/decode-kernels.md.
 *
 * gemm_decode: gemm_bias_act where one side of C has at most 32 columns
 * (tokens) and the other operand's rows are contiguous in k (nn.Linear's
 * weight): the phase-1 engine with the gemm epilogue, a plain launch (no
 * barrier: each CTA owns whole output rows).
 */
#include <stdio.h>
#include <string.h>
#include <atomic>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <type_traits>
#include "fused_internal.h"
#include "fused_decode_stream.cuh"
#include "fused_decode_tma.cuh"
#include "fused_tma_map.h"

namespace fbf {

/* Threads per CTA (one CTA per SM). Each warp keeps two steps of loads
 * in flight (8 KB for 16-bit weights), so 12 warps hold ~96 KB per SM,
 * about three times what HBM's bandwidth-latency product asks (4.8 TB/s x
 * ~1 us / 132 SMs); 12 warps leave 168 registers a thread, which the two
 * steps of 16-byte vectors and the accumulators need. fp32 with <= 16
 * tokens fits in 128 registers and takes 16 warps on the register engine
 * (its FMAs want the issue slots); on the TMA engine 12 (its loads cost
 * no registers, and its accumulators of two tiles, 64 at 16 tokens, need
 * the 128 registers that 12 warps, the producer and the X warp leave). */
template <typename T, int NTOK> struct CtaShape {
    /* THREADS computing, plus the TMA engine's producer warp and, for
     * fp32, its X warp (tma_x_produce): SIZE */
    template <bool TMA> struct Block {
        static const bool F32 = std::is_same<T, float>::value;
        static const int THREADS = F32 && NTOK <= 16 && !TMA ? 512 : 384;
        static const int SIZE = THREADS + (TMA ? (F32 ? 64 : 32) : 0);
    };
};
/* the TMA ring's mbarriers (2 x kTmaMaxStages; fp32's engine then 2 x 2
 * for its X buffers: kHeaderBytesF32) */
static const int kHeaderBytes = 128;
static const int kHeaderBytesF32 = 256;

/* Barrier state at the end of the workspace (the start is where the
 * intermediates go, and where cuBLASLt's split-k data would be). */
static const size_t kBarrierRegion = FB_FUSED_BARRIER_BYTES;
static const int kMaxGrid = 4000;      /* flags: 8 B each, 32 000 B */
static const int kMaxRanges = 4000;    /* counters: 4 B each */
static_assert(256 + 8 * kMaxGrid + 4 * kMaxRanges <= FB_FUSED_SK_OFFSET,
              "the barrier's state ends where the engine's counters begin");

struct BarrierState {
    unsigned long long *epoch;
    unsigned long long *flags;
    unsigned int *counters;
};

static BarrierState barrier_state(const fb_fused_env *env)
{
    char *base = fb_fused_barrier_base(env);
    BarrierState b;
    b.epoch = reinterpret_cast<unsigned long long *>(base);
    b.flags = reinterpret_cast<unsigned long long *>(base + 256);
    b.counters = reinterpret_cast<unsigned int *>(base + 256 + 8 * kMaxGrid);
    return b;
}

/* ---- the MLP kernel -------------------------------------------------- */

template <typename T> struct MlpArgs {
    /* TMA engine only: Wg, Wu in boxes of 64 columns x box1 rows, Wd in
     * boxes of 64 x box2; the ring of `stages` stages, `stride` bytes
     * apart, at ring_off (its mbarriers in the header) */
    CUtensorMap tm_wg, tm_wu, tm_wd;
    int box1, box2, box_cols, ring_off, stages, stride;
    const T *x;
    int64_t ldx;
    const T *wg, *bg, *wu, *bu, *wd, *bd;
    T *y;
    int64_t ldy;
    int m, k, h, n;
    fb_activation act;
    int kc, xstride1;   /* phase-1 chunk of X columns, its row stride */
    int hs, xstride2;   /* phase-2 stripes, the H stripe's row stride */
    int prefetch1, prefetch2; /* steps per warp asked of L2 ahead */
    int sacc_off, slots_off, xs_off;
    int x_vec;
    int x_split; /* TMA engine: X (and H) in two half chunks, one staged
                    while the other is used (fused_decode_tma.cuh) */
    int xq;      /* TMA engine, fp32: the X chunks' token rows (TmaJob::xq);
                    0 for 16-bit */
    CUtensorMap tm_x, tm_h; /* fp32: X and H in chunks (x_map_f32) */
    int x_tma;   /* fp32: X and H come by those maps, else by cp.async */
    unsigned long long *epoch, *flags;
    unsigned int *counters;
    T *hbuf;      /* m x h */
    float *parts; /* hs x m x n */
};

/* Column where stripe s of HS starts: multiples of `align` elements (8;
 * 64 for the TMA engine, whose boxes are 64 columns), the last one ending
 * at h (h is a multiple of 8). */
__host__ __device__ __forceinline__ int stripe_start(int s, int hs, int h,
                                                     int align)
{
    return (int)(((int64_t)s * h / hs) & ~(int64_t)(align - 1));
}

/* The ring of the TMA engine: mbarriers in the header, stages at
 * ring_off; thread 0 initialises them for `warps` computing warps (and
 * fp32's X buffers' for xarrivals arrivals; 0: none). */
__device__ __forceinline__ TmaRing ring_at(unsigned char *smem, int ring_off,
                                           int stages, int stride, int warps,
                                           int xarrivals)
{
    TmaRing R;
    R.full = reinterpret_cast<uint64_t *>(smem);
    R.empty = R.full + kTmaMaxStages;
    R.xfull = R.empty + kTmaMaxStages;
    R.xempty = R.xfull + 2;
    R.base = smem + ring_off;
    R.stages = stages;
    R.stride = stride;
    R.issued = R.used = 0;
    R.xissued = R.xused = 0;
    if (threadIdx.x == 0)
        tma_ring_init(R, warps, xarrivals);
    return R;
}

/* The register engine's job over rows [row0, row0 + nrows) of wa (and wb,
 * paired) x columns [0, k). */
template <typename T>
__device__ __forceinline__ StreamJob<T>
stream_job(const T *wa, const T *wb, int64_t ldw, int row0, int nrows, int k,
           T *xs, int xstride, int m, float *sacc, float *slots)
{
    StreamJob<T> J;
    J.wa = wa;
    J.wb = wb;
    J.ldw = ldw;
    J.row0 = row0;
    J.nrows = nrows;
    J.kb = 0;
    J.ke = k;
    J.xs = xs;
    J.xstride = xstride;
    J.m = m;
    J.sacc = sacc;
    J.ms = m + 1;
    J.slots = slots;
    return J;
}

/* The register engine's pass over [J.kb, J.ke) (sacc zeroed), X staged
 * kc columns at a time; the first `prefetch` steps a warp are asked of L2
 * while the first chunk is staged. */
template <typename T, int NTOK, bool PAIRED>
__device__ __forceinline__ void reg_pass(StreamJob<T> &J, T *xs, int kc,
                                         const T *src, int64_t ld_t,
                                         int64_t ld_c, bool vec,
                                         bool coherent, int prefetch)
{
    const int kb0 = J.kb, ke0 = J.ke;
    J.ke = min(ke0, kb0 + kc);
    stream_prefetch<T, NTOK, PAIRED>(J, prefetch);
    for (int kb = kb0; kb < ke0; kb += kc) {
        const int ke = min(ke0, kb + kc);
        __syncthreads(); /* the previous chunk's readers are done */
        stage_tokens<T>(xs, J.xstride, J.m, kb, ke, round_up_int(ke - kb, 128),
                        src, ld_t, ld_c, vec, coherent);
        __syncthreads();
        J.kb = kb;
        J.ke = ke;
        stream_pass<T, NTOK, PAIRED>(J);
        __syncthreads();
        reduce_slots<T, NTOK, PAIRED>(J);
    }
}

template <typename T, int NTOK, bool TMA>
__global__ void __launch_bounds__(
    (CtaShape<T, NTOK>::template Block<TMA>::SIZE), 1)
    decode_mlp_kernel(const __grid_constant__ MlpArgs<T> a)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    float *sacc = reinterpret_cast<float *>(smem + a.sacc_off);
    T *xs = reinterpret_cast<T *>(smem + a.xs_off);
    /* kThreads compute; with TMA, thread kThreads (the first of the last
     * warp) asks for the weights and the rest of its warp only takes part
     * in the block-wide barriers */
    const int kThreads = CtaShape<T, NTOK>::template Block<TMA>::THREADS;
    const int G = gridDim.x, c = blockIdx.x, tid = threadIdx.x;
    const int m = a.m, ms = m + 1;
    const bool worker = tid < kThreads, producer = tid == kThreads;
    /* fp32 TMA: the warp after the producer's stages X */
    const bool xwarp = TMA && sizeof(T) == 4 && tid >= kThreads + 32;

    const unsigned long long target = ld_relaxed_gpu(a.epoch) + 1;

    /* ---- phase 1: H[:, j0:j1] ---- */
    const int j0 = (int)((int64_t)c * a.h / G);
    const int nr1 = (int)((int64_t)(c + 1) * a.h / G) - j0;
    const int P = G / a.hs;
    if (c == 0 && worker)
        for (int i = tid; i < P; i += kThreads)
            a.counters[i] = 0u;

    /* phase-2 geometry (the TMA producer asks for its first weights
     * before the grid barrier) */
    const int align = TMA ? kTmaMinCols : 8;
    const int s = c % a.hs, r = c / a.hs;
    const int i0 = (int)((int64_t)r * a.n / P);
    const int nr2 = (int)((int64_t)(r + 1) * a.n / P) - i0;
    const int kb2 = stripe_start(s, a.hs, a.h, align);
    const int ke2 = s + 1 == a.hs ? a.h : stripe_start(s + 1, a.hs, a.h, align);
    /* (the TMA engine stages H in chunks of its X buffer, a.kc) */
    const TmaJob<T> J2 = {&a.tm_wd, NULL, i0, nr2, a.box2, a.box_cols,
                          kb2, ke2, TMA ? a.kc : round_up_int(ke2 - kb2, 128),
                          xs, a.xstride2, m, a.hbuf, a.h, 1, true, true,
                          sacc, ms, a.x_split != 0, a.xq,
                          a.x_tma ? &a.tm_h : NULL};

    TmaRing R;
    StreamJob<T> J;
    uint32_t g2 = 0; /* ring count where phase 2 starts */
    if constexpr (TMA) {
        R = ring_at(smem, a.ring_off, a.stages, a.stride, kThreads / 32,
                    sizeof(T) == 4 ? (a.x_tma ? 1 : 32) : 0);
        __syncthreads();
        const TmaJob<T> J1 = {&a.tm_wg, &a.tm_wu, j0, nr1, a.box1,
                              a.box_cols, 0, a.k, a.kc, xs, a.xstride1, m,
                              a.x, a.ldx, 1, a.x_vec != 0, false,
                              sacc, ms, a.x_split != 0, a.xq,
                              a.x_tma ? &a.tm_x : NULL};
        g2 = (uint32_t)tma_steps(J1);
        if (producer) {
            /* all of phase 1, then phase 2's first S stages as phase 1's
             * last ones are read: HBM streams across the grid barrier */
            tma_issue(R, J1, 0u, (int)g2);
            tma_issue(R, J2, g2, R.stages);
        } else if (worker) {
            tma_consume<T, NTOK, true>(R, J1, kThreads);
        } else if constexpr (sizeof(T) == 4) {
            if (xwarp)
                tma_x_produce(R, J1);
        }
    } else {
        for (int i = tid; i < 2 * nr1 * ms; i += kThreads)
            sacc[i] = 0.0f;
        J = stream_job<T>(a.wg, a.wu, a.k, j0, nr1, a.k, xs, a.xstride1, m,
                          sacc, reinterpret_cast<float *>(smem + a.slots_off));
        /* HBM starts streaming while X fills shared memory. */
        reg_pass<T, NTOK, true>(J, xs, a.kc, a.x, a.ldx, 1, a.x_vec != 0,
                                false, a.prefetch1);
    }
    __syncthreads();
    for (int i = tid; worker && i < m * nr1; i += kThreads) {
        const int t = i / nr1, jl = i - t * nr1, j = j0 + jl;
        float gate = sacc[jl * ms + t], up = sacc[(nr1 + jl) * ms + t];
        if (a.bg)
            gate += fb_load_f32(a.bg[j]);
        if (a.bu)
            up += fb_load_f32(a.bu[j]);
        a.hbuf[(int64_t)t * a.h + j] =
            fb_store_as<T>(fb_act_dynamic(a.act, gate) * up);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (TMA && sizeof(T) == 4 && a.x_tma) /* H is read back by the copy
                                             engine (tma_x_produce) */
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif

    /* register engine: phase 2's first weights into L2 while other CTAs
     * finish phase 1 */
    if constexpr (!TMA) {
        J.wa = a.wd;
        J.wb = a.wd;
        J.ldw = a.h;
        J.row0 = i0;
        J.nrows = nr2;
        J.kb = kb2;
        J.ke = ke2;
        J.xstride = a.xstride2;
        stream_prefetch<T, NTOK, false>(J, a.prefetch2);
    }

    grid_barrier(a.flags, target);
    if (c == 0 && tid == 0)
        *a.epoch = target; /* every CTA has read the old one */

    /* ---- phase 2: this CTA's block of Y = H Wd^T ---- */
    if constexpr (TMA) {
        if (producer) {
            tma_issue(R, J2, g2, tma_steps(J2));
        } else if (worker) {
            tma_consume<T, NTOK, false>(R, J2, kThreads);
        } else if constexpr (sizeof(T) == 4) {
            if (xwarp)
                tma_x_produce(R, J2);
        }
    } else {
        for (int i = tid; i < nr2 * ms; i += kThreads)
            sacc[i] = 0.0f;
        reg_pass<T, NTOK, false>(J, xs, J2.kc, a.hbuf, a.h, 1, true, true,
                                 0);
    }
    __syncthreads();

    /* (below, the producer warp only takes part in the barriers) */
    if (a.hs == 1) {
        for (int i = tid; worker && i < m * nr2; i += kThreads) {
            const int t = i / nr2, il = i - t * nr2;
            float v = sacc[il * ms + t];
            if (a.bd)
                v += fb_load_f32(a.bd[i0 + il]);
            a.y[(int64_t)t * a.ldy + i0 + il] = fb_store_as<T>(v);
        }
        return;
    }
    /* HS > 1: write this stripe's partial; when all HS CTAs of the row
     * range have (a counter; they are all resident, so waiting is safe
     * and short: phase 2 is balanced), each adds the HS partials, in
     * stripe order, for its 1/HS of the range's rows. */
    float *part = a.parts + (size_t)s * m * a.n;
    for (int i = tid; worker && i < m * nr2; i += kThreads) {
        const int t = i / nr2, il = i - t * nr2;
        __stcg(&part[(size_t)t * a.n + i0 + il], sacc[il * ms + t]);
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        atomicAdd(&a.counters[r], 1u);
        while (ld_acquire_gpu_u32(&a.counters[r]) < (unsigned)a.hs)
            __nanosleep(100);
    }
    __syncthreads();
    const int q0 = (int)((int64_t)s * nr2 / a.hs);
    const int nq = (int)((int64_t)(s + 1) * nr2 / a.hs) - q0;
    for (int i = tid; worker && i < m * nq; i += kThreads) {
        const int t = i / nq, il = q0 + (i - t * nq);
        float v = 0.0f;
        for (int q = 0; q < a.hs; ++q)
            v += __ldcg(&a.parts[((size_t)q * m + t) * a.n + i0 + il]);
        if (a.bd)
            v += fb_load_f32(a.bd[i0 + il]);
        a.y[(int64_t)t * a.ldy + i0 + il] = fb_store_as<T>(v);
    }
}

/* ---- the gemm kernel ------------------------------------------------- */

template <typename T> struct GemmArgs {
    /* TMA engine only: W in boxes of 64 columns x box rows; the ring */
    CUtensorMap tm_w;
    int box, box_cols, ring_off, stages, stride;
    const T *w;          /* weight row r at w + r * ldw, contiguous in k */
    int64_t ldw;
    const T *x;          /* token t, column c at x[t * xs_t + c * xs_k] */
    int64_t xs_t, xs_k;
    T *c;                /* out (row r, token t) at c[r * cs_r + t * cs_t] */
    int64_t cs_r, cs_t;
    const T *bias;
    int bias_on_rows;
    float alpha, beta;
    fb_activation act;
    int rows, m, k;
    int kc, xstride;
    int sacc_off, slots_off, xs_off;
    int x_vec;
    int x_split; /* as in MlpArgs */
    int xq;      /* as in MlpArgs */
    CUtensorMap tm_x; /* as in MlpArgs */
    int x_tma;
    int early;   /* TMA engine, launched programmatically: the producer
                    streams the (fixed) weights before the grid ahead has
                    finished; every other thread waits for it first */
    int prefetch;
    int phases; /* TMA engine: column phases (tma_phases); sacc holds
                   one slice of the CTA's sums a phase */
    int ks;     /* TMA engine: k stripes (decode_k_stripes); CTA c takes
                   stripe c % ks of row range c / ks */
    float *parts;           /* ks > 1: ks x m x rows fp32 partial sums */
    unsigned int *counters; /* ks > 1: an arrival count a row range */
};

template <typename T, int NTOK, bool TMA>
__global__ void __launch_bounds__(
    (CtaShape<T, NTOK>::template Block<TMA>::SIZE), 1)
    decode_gemm_kernel(const __grid_constant__ GemmArgs<T> a)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    float *sacc = reinterpret_cast<float *>(smem + a.sacc_off);
    T *xs = reinterpret_cast<T *>(smem + a.xs_off);
    const int kThreads = CtaShape<T, NTOK>::template Block<TMA>::THREADS;
    const int cta = blockIdx.x, tid = threadIdx.x;
    const int m = a.m, ms = m + 1;
    const int ks = TMA && a.ks > 1 ? a.ks : 1;
    const int P = gridDim.x / ks, s = cta % ks, range = cta / ks;
    const int r0 = (int)((int64_t)range * a.rows / P);
    const int nr = (int)((int64_t)(range + 1) * a.rows / P) - r0;
    const int kb = stripe_start(s, ks, a.k, kTmaMinCols);
    const int ke = s + 1 == ks ? a.k : stripe_start(s + 1, ks, a.k, kTmaMinCols);

    const bool worker = tid < kThreads; /* the rest: TMA's producer warp */
    if constexpr (TMA) {
        TmaRing R = ring_at(smem, a.ring_off, a.stages, a.stride,
                            kThreads / 32,
                            sizeof(T) == 4 ? (a.x_tma ? 1 : 32) : 0);
        __syncthreads();
        const TmaJob<T> J = {&a.tm_w, NULL, r0, nr, a.box, a.box_cols, kb,
                             ke, a.kc,
                             xs, a.xstride, m, a.x, a.xs_t, a.xs_k,
                             a.x_vec != 0, false, sacc, ms,
                             a.x_split != 0, a.xq,
                             a.x_tma ? &a.tm_x : NULL, a.phases};
        /* an early producer streams the weights while the grid ahead
         * finishes; the rest wait for it */
        if (tid != kThreads || !a.early)
            grid_dependency_wait();
        if (tid == kThreads) {
            tma_issue(R, J, 0u, tma_steps(J));
            if (a.early)
                allow_dependents(); /* every weight byte is asked for */
        } else if (worker) {
            tma_consume<T, NTOK, false>(R, J, kThreads);
        } else if constexpr (sizeof(T) == 4) {
            if (tid >= kThreads + 32) /* the X warp */
                tma_x_produce(R, J);
        }
    } else {
        for (int i = tid; i < nr * ms; i += kThreads)
            sacc[i] = 0.0f;
        StreamJob<T> J = stream_job<T>(
            a.w, a.w, a.ldw, r0, nr, a.k, xs, a.xstride, m, sacc,
            reinterpret_cast<float *>(smem + a.slots_off));
        reg_pass<T, NTOK, false>(J, xs, a.kc, a.x, a.xs_t, a.xs_k,
                                 a.x_vec != 0, false, a.prefetch);
    }
    __syncthreads();

    /* acc: the phases' sums added in phase order */
    const int phases = TMA && a.phases > 1 ? a.phases : 1;
    auto sum = [&](int rl, int t) {
        float acc = sacc[rl * ms + t];
        for (int c = 1; c < phases; ++c)
            acc += sacc[(c * nr + rl) * ms + t];
        return acc;
    };
    if (ks > 1) {
        /* this stripe's sums to its slot; the last CTA of the range to
         * arrive adds every stripe's slot in stripe order (the bits do not
         * depend on who came last), leaves the counter at zero for the
         * next launch, and writes C. Nobody waits for anybody. `last` is
         * sacc's first word, read by then (a static shared word would not
         * fit beside the dynamic shared memory). */
        int *last = reinterpret_cast<int *>(sacc);
        float *mine = a.parts + (size_t)s * m * a.rows;
        for (int i = tid; worker && i < m * nr; i += kThreads) {
            const int t = i / nr, rl = i - t * nr;
            __stcg(&mine[(size_t)t * a.rows + r0 + rl], sum(rl, t));
        }
        __threadfence(); /* the sums are visible before the arrival */
        __syncthreads();
        if (tid == 0) {
            const bool final =
                atomicAdd(&a.counters[range], 1u) == (unsigned)ks - 1;
            if (final)
                a.counters[range] = 0u;
            *last = final;
        }
        __syncthreads();
        if (!*last)
            return;
        __threadfence(); /* the others' sums, after their arrivals */
    }

    /* C <- act(alpha acc + beta C + bias); C is read only when beta != 0.
     * Walk the output along its contiguous direction. */
    const bool rows_inner = a.cs_r == 1;
    for (int i = tid; worker && i < m * nr; i += kThreads) {
        int t, rl;
        if (rows_inner) {
            t = i / nr;
            rl = i - t * nr;
        } else {
            rl = i / m;
            t = i - rl * m;
        }
        const int row = r0 + rl;
        T *out = a.c + row * a.cs_r + t * a.cs_t;
        float acc;
        if (ks > 1) {
            acc = __ldcg(&a.parts[(size_t)t * a.rows + row]);
            for (int q = 1; q < ks; ++q)
                acc += __ldcg(&a.parts[((size_t)q * m + t) * a.rows + row]);
        } else {
            acc = sum(rl, t);
        }
        float v = a.alpha * acc;
        if (a.beta != 0.0f)
            v += a.beta * fb_load_f32(*out);
        if (a.bias)
            v += fb_load_f32(a.bias[a.bias_on_rows ? row : t]);
        *out = fb_store_as<T>(fb_act_dynamic(a.act, v));
    }
}

/* ---- host side ------------------------------------------------------- */

/* Once per (kernel, device): allow the whole opt-in shared memory, and
 * check that one CTA of `threads` fits on an SM with it (then a grid of
 * one CTA per SM is always co-resident, as the barrier needs). */
struct KernelState {
    std::atomic<unsigned long long> ready{0}, fits{0};
};

static cudaError_t prepare_kernel(KernelState &st, const void *func,
                                  int threads, const fb_fused_env *env,
                                  bool *fits)
{
    const int dev = env->device;
    const unsigned long long bit =
        (dev >= 0 && dev < 64) ? 1ull << dev : 0ull;
    if (bit && (st.ready.load(std::memory_order_acquire) & bit)) {
        *fits = (st.fits.load(std::memory_order_relaxed) & bit) != 0;
        return cudaSuccess;
    }
    /* an error is returned, not left for the next cudaGetLastError (a
     * check that fails here sends the call to another family) */
    cudaError_t e = cudaFuncSetAttribute(
        func, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)env->smem_optin);
    if (e == cudaSuccess) {
        int blocks = 0;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, func, threads, env->smem_optin);
        *fits = blocks >= 1;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return e;
    }
    if (bit) {
        if (*fits)
            st.fits.fetch_or(bit, std::memory_order_relaxed);
        st.ready.fetch_or(bit, std::memory_order_release);
    }
    return cudaSuccess;
}

static bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

static int env_coop_supported(int device)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, device) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v;
}

/* Chunk of X columns (a multiple of 128) whose token rows fit in
 * `bytes`: as few chunks as fit, of equal size (each chunk boundary
 * drains the CTA's loads once); 0 if not even 128 columns fit. */
static int choose_chunk(int k, int m, size_t elem, size_t bytes)
{
    const size_t per_col = (size_t)m * elem;
    if (bytes < per_col * (128 + 32))
        return 0;
    int kmax = (int)(bytes / per_col) - 32;
    kmax = kmax / 128 * 128;
    const int kr = round_up_int(k, 128);
    if (kmax >= kr)
        return kr;
    const int chunks = (k + kmax - 1) / kmax;
    return round_up_int((k + chunks - 1) / chunks, 128);
}

static const char *dtype_suffix(fb_dtype d)
{
    return d == FB_DTYPE_F32 ? "f32" : d == FB_DTYPE_F16 ? "f16" : "bf16";
}

/* Whether a call may take the TMA engine (fused_decode_tma.cuh): 16-bit
 * weights, or fp32 with at most 16 tokens (its accumulators must fit the
 * 128 registers a thread of 14 warps has), a compute 9.0 device, a module built for sm_90a and a
 * driver that encodes tensor maps; the decode_engine knob 1 asks for the
 * register engine. */
template <typename T, int NTOK>
static bool tma_engine_allowed(const fb_fused_env *env)
{
#ifdef FB_HAVE_SM90A
    return (sizeof(T) == 2 || NTOK <= 16) && env->cc_major == 9 &&
           env->cc_minor == 0 &&
           !(FBF_KNOB(decode_engine) == 1) && fbf_tma_available();
#else
    (void)env;
    return false;
#endif
}

/* The TMA engine's shared memory after its header and accumulators: an
 * X buffer of xs_cols columns (the token rows' chunk: all `need` columns
 * if they fit in the tma_xs_kb knob KiB, 72 by default, else as many as
 * fit, a multiple of the box width), then as many stages of
 * stage_bytes as fit (at most kTmaMaxStages or the tma_stages knob). Chunks
 * are cheap here (the ring keeps streaming while X is restaged) and bytes
 * in flight are what a stream needs: 72 KiB keeps X of 16 tokens x 2048
 * columns and leaves six 21 KiB stages. */
struct TmaLayout {
    size_t ring_off, stride, xs_off, smem, sacc_off;
    int stages, box_cols, xs_cols;
};

static bool tma_layout_for(TmaLayout *L, int bc, size_t sacc,
                           size_t stage_rows, int need, int m, size_t esz,
                           size_t budget, int xq)
{
    L->box_cols = bc;
    const size_t header = xq ? kHeaderBytesF32 : kHeaderBytes;
    L->ring_off = (header + sacc + 127) / 128 * 128;
    L->stride = stage_rows * bc * esz;
    const size_t cap =
        (size_t)(FBF_KNOB(tma_xs_kb) > 0 ? FBF_KNOB(tma_xs_kb) : 72) << 10;
    /* m rows of cols + 32; fp32 (xq rows): the X warp's two chunks of
     * kF32XCols, whatever the cap */
    int cols = (int)(cap / ((size_t)m * esz)) - 32;
    cols = cols / bc * bc;
    if (cols < bc)
        cols = bc;
    if (cols > round_up_int(need, bc))
        cols = round_up_int(need, bc);
    if (xq)
        cols = 2 * kF32XCols;
    L->xs_cols = cols;
    const size_t xs =
        xq ? (size_t)cols * 4 * xq : (size_t)m * (cols + 32) * esz;
    if (L->ring_off + xs + 2 * L->stride > budget)
        return false;
    int S = (int)((budget - L->ring_off - xs) / L->stride);
    const int cap_s =
        FBF_KNOB(tma_stages) > 0 ? FBF_KNOB(tma_stages) : kTmaMaxStages;
    if (S > cap_s)
        S = cap_s;
    if (S > kTmaMaxStages)
        S = kTmaMaxStages;
    if (FBF_KNOB(tma_stages) > 0 && S != FBF_KNOB(tma_stages))
        return false;
    L->stages = S;
    L->xs_off = L->ring_off + (size_t)S * L->stride;
    L->smem = L->xs_off + xs;
    L->sacc_off = header;
    return true;
}

/* The widest box (512, 256, then 128 bytes of each row: 256, 128, 64
 * columns of 16-bit weights, 128, 64, 32 of fp32) with which at least
 * three stages fit, or the tma_box_cols knob (columns). Wider boxes mean
 * fewer, longer requests per row; they measured faster where stages are
 * small and no slower elsewhere (docs/decode-kernels.md). */
static bool tma_layout(TmaLayout *L, size_t sacc, size_t stage_rows,
                       int need, int m, size_t esz, size_t budget, int xq)
{
    const int widest = (int)(512 / esz), narrowest = widest / 4;
    const int c = FBF_KNOB(tma_box_cols);
    if (c == narrowest || c == 2 * narrowest || c == widest)
        return tma_layout_for(L, c, sacc, stage_rows, need, m, esz, budget,
                              xq);
    for (int bc = widest; bc >= narrowest; bc /= 2)
        if (tma_layout_for(L, bc, sacc, stage_rows, need, m, esz, budget,
                           xq) &&
            (L->stages >= 3 || bc == narrowest))
            return true;
    return false;
}

/* The sandbox's diagnostics of the fp32 TMA engine (TmaJob::xq flags). */
static int f32_diag()
{
    const int d = FBF_KNOB(f32_nofma);
    return (d & 1 ? (int)kTmaNoFma : 0) | (d & 2 ? (int)kTmaNoX : 0) |
           (d & 4 ? (int)kTmaOldSplit : 0);
}

/* The tensor map of a row-major weight matrix for the TMA engine: 16-bit
 * as it is; fp32 as a 16-bit matrix of the same bytes (two columns a
 * column, so every box is the same bytes a fp32 box would be; the copy
 * engine only moves bytes, and zeros past the edges stay zeros). */
template <typename T>
static bool tma_map_rows(CUtensorMap *tm, fb_dtype dt, const void *base,
                         int64_t rows, int64_t cols, int64_t ld,
                         int box_cols, int box_rows)
{
    const int64_t f = (int64_t)sizeof(T) / 2;
    return fbf_tma_map_16(tm, sizeof(T) == 2 ? dt : FB_DTYPE_BF16, base, rows,
                          cols * f, ld * f, box_cols * (int)f, box_rows,
                          false);
}

/* fp32 token rows (m rows of k, ld elements apart) for the fp32 engine's
 * X warp, in boxes of kF32XCols columns x mt rows: rows from m on and
 * columns from k on arrive as zeros. */
static bool x_map_f32(CUtensorMap *tm, const void *base, int m, int64_t ld,
                      int64_t k, int mt)
{
    const PFN_cuTensorMapEncodeTiled_v12000 enc = fbf_tma_encoder();
    if (!enc || ((uintptr_t)base & 15) || (ld * 4) % 16 || mt > 256)
        return false;
    const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)m};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 4};
    const cuuint32_t box[2] = {kF32XCols, (cuuint32_t)mt};
    const cuuint32_t estr[2] = {1, 1};
    return enc(tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
               const_cast<void *>(base), dims, strides, box, estr,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
               CU_TENSOR_MAP_L2_PROMOTION_NONE,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* Phase-2 stripes for the TMA engine: the most stripes whose Wd block
 * still streams in stages no bigger than phase 1's (box2 <= 2 box1: more
 * stripes only add partial sums; fewer make each stage, and so the bytes
 * in flight, smaller); the fewest that fit if none is that small. */
static int tma_stripes(int G, int n, int box1, size_t need_ws_h,
                       size_t part_bytes, size_t ws_avail)
{
    int best = 0;
    for (int d = 1; d <= G; ++d) {
        if (G % d || (FBF_KNOB(hs) > 0 && d != FBF_KNOB(hs)))
            continue;
        const int P = G / d;
        const int box2 = (n + P - 1) / P;
        if (P > kMaxRanges || box2 > 256 ||
            need_ws_h + (d > 1 ? (size_t)d * part_bytes : 0) > ws_avail)
            continue;
        if (best == 0 || box2 <= 2 * box1)
            best = d;
    }
    return best;
}

/* Phase-2 stripes for the register engine: the divisor of G that moves
 * the fewest L2 bytes (each CTA reads its H stripe; HS > 1 writes and
 * reads back HS fp32 partials of Y and pays a counter round trip, counted
 * as 4 MB) and whose H stripe fits in shared memory with the
 * accumulators. Each stripe also costs about 1/60 of Wd's bytes: more
 * stripes mean shorter contiguous runs of every Wd row, streamed less
 * efficiently, and more CTAs in each range's reduction. That cost is
 * fitted to the selftest's stripe sweeps on an H200
 * (docs/decode-kernels.md). */
static int reg_stripes(int G, int m, int h, int n, size_t esz, size_t sacc1,
                       int warps, size_t budget, size_t hbytes,
                       size_t ws_avail)
{
    const int ms = m + 1;
    const size_t slot_bytes = (size_t)warps * 2 * 16 * ms * 4;
    int hs = 0;
    double best = 0.0;
    for (int d = 1; d <= G; ++d) {
        if (G % d)
            continue;
        if (FBF_KNOB(hs) > 0 && d != FBF_KNOB(hs))
            continue;
        const int P = G / d;
        if (P > kMaxRanges)
            continue;
        const int wmax = h / d + 16;
        const size_t xs2 = (size_t)m * (round_up_int(wmax, 128) + 32) * esz;
        const size_t sacc2 = (size_t)((n + P - 1) / P) * ms * 4;
        const size_t sacc = sacc1 > sacc2 ? sacc1 : sacc2;
        if ((kHeaderBytes + sacc + slot_bytes + 15) / 16 * 16 + xs2 > budget)
            continue;
        if (d > 1 && hbytes + (size_t)d * m * n * 4 > ws_avail)
            continue;
        if (d == 1 && hbytes > ws_avail)
            continue;
        const double cost = (double)G * m * ((double)h / d) * esz +
                            (d > 1 ? 2.0 * d * m * n * 4 + 4e6 : 0.0) +
                            (double)d * n * h * esz / 60.0;
        if (hs == 0 || cost < best) {
            hs = d;
            best = cost;
        }
    }
    return hs;
}

template <typename T, int NTOK, bool TMA>
static fb_status launch_decode_mlp(const fb_fused_env *env,
                                   const fb_mlp_problem *p,
                                   fbf_mode mode, char *path,
                                   size_t pathlen)
{
    static KernelState state;
    const void *func =
        reinterpret_cast<const void *>(&decode_mlp_kernel<T, NTOK, TMA>);
    const int m = (int)p->m, k = (int)p->k, h = (int)p->h, n = (int)p->n;
    const size_t esz = sizeof(T);
    const int G = env->sm_count;
    if (G < 1 || G > kMaxGrid)
        return FB_STATUS_NOT_SUPPORTED;
    if (env->workspace == NULL ||
        env->workspace_bytes < kBarrierRegion + 4096 + 256)
        return FB_STATUS_NOT_SUPPORTED;

    const int ms = m + 1;
    const int threads = CtaShape<T, NTOK>::template Block<TMA>::SIZE;
    const int warps = /* computing */
        CtaShape<T, NTOK>::template Block<TMA>::THREADS / 32;
    const size_t budget = env->smem_optin;
    const int xq = TMA && sizeof(T) == 4 ? tma_f32_tokens(m, NTOK) : 0;
    const int box1 = (h + G - 1) / G;
    const size_t sacc1 = (size_t)2 * box1 * ms * 4;
    const size_t ws_avail = env->workspace_bytes - kBarrierRegion - 256;
    const size_t hbytes = ((size_t)m * h * esz + 255) / 256 * 256;
    const int hs = TMA ? tma_stripes(G, n, box1, hbytes, (size_t)m * n * 4,
                                     ws_avail)
                       : reg_stripes(G, m, h, n, esz, sacc1, warps, budget,
                                     hbytes, ws_avail);
    if (hs == 0)
        return FB_STATUS_NOT_SUPPORTED;
    const int P = G / hs;
    const int box2 = (n + P - 1) / P;
    const size_t sacc2 = (size_t)box2 * ms * 4;
    const size_t sacc = sacc1 > sacc2 ? sacc1 : sacc2;
    size_t sacc_off = kHeaderBytes;
    size_t slots_off = 0, xs_off = 0, smem = 0;
    int kc = 0, xstride1 = 0, xstride2 = 0;
    TmaLayout L = {};
    if (TMA) {
        /* boxes of at most 256 rows; tiles within kTmaTilesPerWarp a warp */
        const int cap = warps * kTmaTilesPerWarp;
        const int tr1 = tma_tile_rows<T>(true), tr2 = tma_tile_rows<T>(false);
        if (box1 > 256 || box2 > 256 || (box1 + tr1 - 1) / tr1 > cap ||
            (box2 + tr2 - 1) / tr2 > cap)
            return FB_STATUS_NOT_SUPPORTED;
        const int widest = h / hs + 72; /* stripes start at 64-multiples */
        if (!tma_layout(&L, sacc, (size_t)(2 * box1 > box2 ? 2 * box1 : box2),
                        k > widest ? k : widest, m, esz, budget, xq))
            return FB_STATUS_NOT_SUPPORTED;
        xs_off = L.xs_off;
        smem = L.smem;
        sacc_off = L.sacc_off;
        kc = L.xs_cols;
        xstride1 = xstride2 = L.xs_cols + 32;
    } else {
        const size_t slot_bytes = (size_t)warps * 2 * 16 * ms * 4;
        const int wmax = h / hs + 16;
        xstride2 = round_up_int(wmax, 128) + 32;
        slots_off = (sacc_off + sacc + 15) / 16 * 16;
        xs_off = (slots_off + slot_bytes + 15) / 16 * 16;
        kc = choose_chunk(k, m, esz, budget - xs_off);
        if (kc == 0)
            return FB_STATUS_NOT_SUPPORTED;
        xstride1 = kc + 32;
        const size_t xs1b = (size_t)m * xstride1 * esz;
        const size_t xs2b = (size_t)m * xstride2 * esz;
        smem = xs_off + (xs1b > xs2b ? xs1b : xs2b);
    }
    if (smem > budget)
        return FB_STATUS_NOT_SUPPORTED;

    bool fits = false;
    cudaError_t e = prepare_kernel(state, func, threads, env, &fits);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (!fits)
        return FB_STATUS_NOT_SUPPORTED;

    /* A check (the table's applies) stops before the host work of
     * encoding tensor maps; a map the driver refuses later sends the call
     * to the register engine. */
    if (mode == FBF_CHECK)
        return FB_STATUS_SUCCESS;
    MlpArgs<T> a;
    memset(&a, 0, sizeof a);
    if (TMA && (!tma_map_rows<T>(&a.tm_wg, p->dtype, p->wg, h, k, k,
                                 L.box_cols, box1) ||
                !tma_map_rows<T>(&a.tm_wu, p->dtype, p->wu, h, k, k,
                                 L.box_cols, box1) ||
                !tma_map_rows<T>(&a.tm_wd, p->dtype, p->wd, n, h, h,
                                 L.box_cols, box2)))
        return FB_STATUS_NOT_SUPPORTED;
    a.box1 = box1;
    a.box2 = box2;
    a.box_cols = L.box_cols;
    a.ring_off = (int)L.ring_off;
    a.stages = L.stages;
    a.stride = (int)L.stride;
    a.x = static_cast<const T *>(p->x);
    a.ldx = p->ldx;
    a.wg = static_cast<const T *>(p->wg);
    a.bg = static_cast<const T *>(p->bg);
    a.wu = static_cast<const T *>(p->wu);
    a.bu = static_cast<const T *>(p->bu);
    a.wd = static_cast<const T *>(p->wd);
    a.bd = static_cast<const T *>(p->bd);
    a.y = static_cast<T *>(p->y);
    a.ldy = p->ldy;
    a.m = m;
    a.k = k;
    a.h = h;
    a.n = n;
    a.act = p->gate_act;
    a.kc = kc;
    a.xstride1 = xstride1;
    a.hs = hs;
    a.xstride2 = xstride2;
    /* Register engine's L2 prefetch, as steps per warp: phase 1 asks for
     * twice the knob (the CTA's first two rounds of loads, 128 KiB by
     * default) while X is staged, phase 2 for the knob (64 KiB) before the
     * barrier. */
    const int kb_knob =
        FBF_KNOB(prefetch_kb) != 0 ? (FBF_KNOB(prefetch_kb) < 0 ? 0 : FBF_KNOB(prefetch_kb)) : 64;
    const int step_bytes = warps * 16 * Engine<T, NTOK>::COLS * (int)esz;
    a.prefetch1 = kb_knob ? (2 * (kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.prefetch2 = kb_knob ? ((kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.sacc_off = (int)sacc_off;
    a.slots_off = (int)slots_off;
    a.xs_off = (int)xs_off;
    a.x_vec = aligned16(p->x) && (p->ldx * (int64_t)esz) % 16 == 0;
    a.x_split = FBF_KNOB(tma_x_whole) != 1;
    a.xq = xq | (xq ? f32_diag() : 0);
    /* fp32: X and H by the copy engine where both maps encode (H: the
     * workspace, m rows of h) */
    if (TMA && xq && a.x_vec && FBF_KNOB(f32_nofma) < 8)
        a.x_tma = x_map_f32(&a.tm_x, p->x, m, p->ldx, k, xq) &&
                  x_map_f32(&a.tm_h, env->workspace, m, h, h, xq);
    BarrierState b = barrier_state(env);
    a.epoch = b.epoch;
    a.flags = b.flags;
    a.counters = b.counters;
    a.hbuf = static_cast<T *>(env->workspace);
    a.parts = reinterpret_cast<float *>(static_cast<char *>(env->workspace) +
                                        hbytes);

    void *args[] = {&a};
    e = cudaLaunchCooperativeKernel(func, dim3(G), dim3(threads), args, smem,
                                    env->stream);
    fb_status st = fbf_launch_status(e);
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "mlp_decode_%s%s",
                 dtype_suffix(p->dtype), TMA ? "+tma" : "");
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

/* The TMA engine where it is allowed and covers the call, else the
 * register engine (the decode_engine knob: 1 the register engine only, 2
 * the TMA engine only). */
template <typename T, int NTOK>
static fb_status run_decode_mlp(const fb_fused_env *env,
                                const fb_mlp_problem *p,
                                fbf_mode mode, char *path,
                                size_t pathlen)
{
    if constexpr (sizeof(T) == 2 || NTOK <= 16) {
        if (tma_engine_allowed<T, NTOK>(env)) {
            const fb_status st =
                launch_decode_mlp<T, NTOK, true>(env, p, mode, path, pathlen);
            if (st != FB_STATUS_NOT_SUPPORTED)
                return st;
        }
    }
    if (FBF_KNOB(decode_engine) == 2)
        return FB_STATUS_NOT_SUPPORTED;
    return launch_decode_mlp<T, NTOK, false>(env, p, mode, path, pathlen);
}

template <typename T>
static fb_status dispatch_decode_mlp(const fb_fused_env *env,
                                     const fb_mlp_problem *p,
                                     fbf_mode mode, char *path,
                                     size_t pathlen)
{
    if (p->m <= 8)
        return run_decode_mlp<T, 8>(env, p, mode, path, pathlen);
    if (p->m <= 16)
        return run_decode_mlp<T, 16>(env, p, mode, path, pathlen);
    return run_decode_mlp<T, 32>(env, p, mode, path, pathlen);
}

/* Row ranges of the decode gemm with ks k stripes: a range of at least
 * 16 rows, and ks CTAs a range on at most every SM. */
static int decode_row_ranges(const fb_fused_env *env, int rows, int ks)
{
    int P = rows / 16;
    if (P > env->sm_count / ks)
        P = env->sm_count / ks;
    return P < 1 ? 1 : P;
}

/* Whether ks k stripes can run the call: the range's rows still fit one
 * CTA's box and tiles, every stripe holds at least two boxes of the
 * narrowest width, and the partials and counters fit the workspace. */
static bool k_stripes_fit(const fb_fused_env *env, int rows, int m, int k,
                          int warps, int ks)
{
    if (env->workspace == NULL ||
        env->workspace_bytes < FB_FUSED_BARRIER_BYTES + 4096 ||
        env->sm_count / ks < 1)
        return false;
    const size_t room = env->workspace_bytes - FB_FUSED_BARRIER_BYTES - 256;
    const int P = decode_row_ranges(env, rows, ks);
    const int box = (rows + P - 1) / P;
    return k >= 2 * kTmaMinCols * ks && P <= FB_FUSED_SK_COUNTERS &&
           box <= 256 && (box + 15) / 16 <= warps * kTmaTilesPerWarp &&
           (size_t)ks * m * rows * 4 <= room;
}

/* K stripes of the 16-bit TMA decode gemm: ks CTAs share each range of
 * rows, each takes 1/ks of k (and stages 1/ks of X), and the last to
 * finish adds the stripes' fp32 partial sums in stripe order. Measured
 * on an H100 and an H200 (docs/decode-kernels.md, "K stripes"), they pay
 * where ranges of 16 rows leave SMs idle (fewer than 16 rows an SM):
 * enough stripes to fill them, at least 2; and where a CTA would have at
 * most 48 rows and stage 64 KiB of X or more (k >= 4096): twice as many
 * (with 16 to 48 rows an SM, 2). Up to 4; wide outputs, short X: 1. The
 * decode_ks knob asks for a count. */
static int decode_k_stripes(const fb_fused_env *env, int rows, int m, int k,
                            int warps)
{
    if (FBF_KNOB(decode_ks) > 0)
        return k_stripes_fit(env, rows, m, k, warps, FBF_KNOB(decode_ks))
                   ? FBF_KNOB(decode_ks)
                   : 1;
    const int sms = env->sm_count;
    const int ranges = rows / 16 > 1 ? rows / 16 : 1;
    int want = 1;
    if (ranges < sms) {
        want = sms / ranges;
        want = want < 2 ? 2 : want;
    }
    if ((int64_t)m * k * 2 >= (64 << 10) && k >= 4096 && rows <= 48 * sms)
        want *= 2;
    want = want > 4 ? 4 : want;
    for (int ks = want; ks > 1; --ks)
        if (k_stripes_fit(env, rows, m, k, warps, ks))
            return ks;
    return 1;
}

template <typename T, int NTOK, bool TMA>
static fb_status launch_decode_gemm(const fb_fused_env *env,
                                    const GemmArgs<T> &in, fb_dtype dtype,
                                    fbf_mode mode, char *path,
                                    size_t pathlen)
{
    static KernelState state;
    const void *func =
        reinterpret_cast<const void *>(&decode_gemm_kernel<T, NTOK, TMA>);
    GemmArgs<T> a = in;
    const size_t esz = sizeof(T);
    const int ms = a.m + 1;
    const int threads = CtaShape<T, NTOK>::template Block<TMA>::SIZE;
    const int warps = /* computing */
        CtaShape<T, NTOK>::template Block<TMA>::THREADS / 32;
    a.ks = TMA && sizeof(T) == 2 ? decode_k_stripes(env, a.rows, a.m, a.k,
                                                    warps)
                                 : 1;
    const int P = decode_row_ranges(env, a.rows, a.ks);
    const int G = P * a.ks;
    const int box = (a.rows + P - 1) / P;
    size_t sacc = (size_t)box * ms * 4;
    size_t xs_off = 0, smem = 0;
    int kc = 0;
    a.phases = 1;
    if (TMA) {
        /* room for the phases of the widest box; a narrower one takes
         * fewer (tma_phases) */
        if (sizeof(T) == 2)
            sacc *= (size_t)tma_phases(box, warps, 256);
        const int tr = tma_tile_rows<T>(false);
        if (box > 256 || (box + tr - 1) / tr > warps * kTmaTilesPerWarp)
            return FB_STATUS_NOT_SUPPORTED;
        TmaLayout L;
        a.xq = sizeof(T) == 4 ? tma_f32_tokens(a.m, NTOK) : 0;
        /* X's widest stripe (starts are 64-multiples) */
        const int need = a.ks > 1 ? a.k / a.ks + 72 : a.k;
        if (!tma_layout(&L, sacc, (size_t)box, need, a.m, esz,
                        env->smem_optin, a.xq))
            return FB_STATUS_NOT_SUPPORTED;
        xs_off = L.xs_off;
        smem = L.smem;
        a.sacc_off = (int)L.sacc_off;
        kc = L.xs_cols;
        a.box = box;
        a.box_cols = L.box_cols;
        a.phases = sizeof(T) == 2 ? tma_phases(box, warps, L.box_cols) : 1;
        a.ring_off = (int)L.ring_off;
        a.stages = L.stages;
        a.stride = (int)L.stride;
        a.slots_off = 0;
    } else {
        const size_t slot_bytes = (size_t)warps * 2 * 16 * ms * 4;
        const size_t slots_off = (kHeaderBytes + sacc + 15) / 16 * 16;
        xs_off = (slots_off + slot_bytes + 15) / 16 * 16;
        if (xs_off >= env->smem_optin)
            return FB_STATUS_NOT_SUPPORTED;
        kc = choose_chunk(a.k, a.m, esz, env->smem_optin - xs_off);
        if (kc == 0)
            return FB_STATUS_NOT_SUPPORTED;
        a.slots_off = (int)slots_off;
        a.sacc_off = kHeaderBytes;
    }
    a.kc = kc;
    a.xstride = kc + 32;
    const int kb_knob =
        FBF_KNOB(prefetch_kb) != 0 ? (FBF_KNOB(prefetch_kb) < 0 ? 0 : FBF_KNOB(prefetch_kb)) : 64;
    const int step_bytes = warps * 16 * Engine<T, NTOK>::COLS * (int)esz;
    a.prefetch = kb_knob ? (2 * (kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.xs_off = (int)xs_off;
    if (a.xq)
        a.xq |= f32_diag();
    if (!TMA)
        smem = xs_off + (size_t)a.m * a.xstride * esz;

    bool fits = false;
    cudaError_t e = prepare_kernel(state, func, threads, env, &fits);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (!fits)
        return FB_STATUS_NOT_SUPPORTED;
    if (mode == FBF_CHECK) /* before the maps: as launch_decode_mlp */
        return FB_STATUS_SUCCESS;
    if (TMA && !tma_map_rows<T>(&a.tm_w, dtype, a.w, a.rows, a.k, a.ldw,
                                a.box_cols, box))
        return FB_STATUS_NOT_SUPPORTED;
    /* fp32: X by the copy engine where its map encodes */
    if (a.xq && a.x_vec && FBF_KNOB(f32_nofma) < 8)
        a.x_tma = x_map_f32(&a.tm_x, a.x, a.m, a.xs_t, a.k, a.xq & 0xffff);
    /* In a plan's execution the weights are fixed (the plan's contract),
     * so the TMA producer may stream them before the grid ahead ends. Not
     * the MLP: under its cooperative launch this gained nothing
     * (docs/decode-kernels.md). */
    a.early = TMA && env->weights_fixed;
    if (a.ks > 1) {
        a.parts = static_cast<float *>(env->workspace);
        a.counters = reinterpret_cast<unsigned int *>(
            fb_fused_barrier_base(env) + FB_FUSED_SK_OFFSET);
    }
    void *args[] = {&a};
    fb_status st = fbf_launch_status(fbf_launch_grid(
        func, G, threads, args, smem, env->stream, a.early != 0));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        /* "+ks4": four CTAs share each row range (k stripes) */
        char ks[16] = "";
        if (a.ks > 1)
            snprintf(ks, sizeof ks, "+ks%d", a.ks);
        snprintf(name, sizeof name, "gemm_decode_%s%s%s", dtype_suffix(dtype),
                 TMA ? "+tma" : "", ks);
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

/* Where the register engine streams a 16-bit decode gemm faster than the
 * TMA engine: outputs at least as wide as k, 64 MiB of weights or more,
 * up to 16 tokens, on a device whose DRAM peaks at 4.5 TB/s or more (the
 * H200; at 50 MiB and less the TMA engine stays ahead there, and on the
 * H100 it is ahead at every size measured). docs/decode-kernels.md, "The
 * register engine for large wide outputs". */
template <typename T>
static bool register_engine_streams_faster(const fb_fused_env *env,
                                           const GemmArgs<T> &a)
{
    return sizeof(T) == 2 && FBF_KNOB(decode_engine) == 0 &&
           env->dram_gbs >= 4500.0 && a.rows >= a.k && a.m <= 16 &&
           (int64_t)a.rows * a.k * 2 >= ((int64_t)64 << 20);
}

/* As run_decode_mlp: the TMA engine first where allowed (and not slower,
 * above). */
template <typename T, int NTOK>
static fb_status run_decode_gemm(const fb_fused_env *env,
                                 const GemmArgs<T> &a, fb_dtype dtype,
                                 fbf_mode mode, char *path,
                                 size_t pathlen)
{
    if constexpr (sizeof(T) == 2 || NTOK <= 16) {
        if (tma_engine_allowed<T, NTOK>(env) &&
            !register_engine_streams_faster(env, a)) {
            const fb_status st = launch_decode_gemm<T, NTOK, true>(
                env, a, dtype, mode, path, pathlen);
            if (st != FB_STATUS_NOT_SUPPORTED)
                return st;
        }
    }
    if (FBF_KNOB(decode_engine) == 2)
        return FB_STATUS_NOT_SUPPORTED;
    return launch_decode_gemm<T, NTOK, false>(env, a, dtype, mode, path,
                                              pathlen);
}

template <typename T>
static fb_status dispatch_decode_gemm(const fb_fused_env *env,
                                      const GemmArgs<T> &a, fb_dtype dtype,
                                      fbf_mode mode, char *path,
                                      size_t pathlen)
{
    if (a.m <= 8)
        return run_decode_gemm<T, 8>(env, a, dtype, mode, path, pathlen);
    if (a.m <= 16)
        return run_decode_gemm<T, 16>(env, a, dtype, mode, path, pathlen);
    return run_decode_gemm<T, 32>(env, a, dtype, mode, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* Shapes this family covers: few tokens, weights that can be streamed in
 * 16-byte pieces. Sizes stay within int (the kernels index with int). */
fb_status fbf_decode_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                         fbf_mode mode, char *path, size_t pathlen)
{
    const int64_t lim = (int64_t)1 << 30;
    if (p->m < 1 || p->m > 32 || p->k < 1 || p->h < 1 || p->n < 1)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->k >= lim || p->h >= lim || p->n >= lim || p->h * p->m >= lim ||
        p->n * p->m >= lim || p->ldy * p->m >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;
    if (env->cc_major < 8 || !env_coop_supported(env->device))
        return FB_STATUS_NOT_SUPPORTED;
    const int64_t vec = p->dtype == FB_DTYPE_F32 ? 4 : 8;
    if (p->k % vec || p->h % 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (!aligned16(p->wg) || !aligned16(p->wu) || !aligned16(p->wd))
        return FB_STATUS_NOT_SUPPORTED;
    switch (p->dtype) {
    case FB_DTYPE_BF16:
        return dispatch_decode_mlp<__nv_bfloat16>(env, p, mode, path, pathlen);
    case FB_DTYPE_F16:
        return dispatch_decode_mlp<__half>(env, p, mode, path, pathlen);
    case FB_DTYPE_F32:
        return dispatch_decode_mlp<float>(env, p, mode, path, pathlen);
    }
    return FB_STATUS_NOT_SUPPORTED;
}

template <typename T>
static bool decode_mlp_tma_takes(const fb_fused_env *env,
                                 const fb_mlp_problem *p)
{
    if constexpr (sizeof(T) == 2) {
        if (!tma_engine_allowed<T, 16>(env))
            return false;
        const fb_status st =
            p->m <= 8    ? launch_decode_mlp<T, 8, true>(env, p, FBF_CHECK,
                                                         NULL, 0)
            : p->m <= 16 ? launch_decode_mlp<T, 16, true>(env, p, FBF_CHECK,
                                                          NULL, 0)
                         : launch_decode_mlp<T, 32, true>(env, p, FBF_CHECK,
                                                          NULL, 0);
        return st == FB_STATUS_SUCCESS;
    }
    return false;
}

bool fbf_decode_mlp_streams_tma(const fb_fused_env *env,
                                const fb_mlp_problem *p)
{
    if (fbf_decode_mlp(env, p, FBF_CHECK, NULL, 0) != FB_STATUS_SUCCESS)
        return false;
    switch (p->dtype) {
    case FB_DTYPE_BF16:
        return decode_mlp_tma_takes<__nv_bfloat16>(env, p);
    case FB_DTYPE_F16:
        return decode_mlp_tma_takes<__half>(env, p);
    default:
        return false;
    }
}

fb_status fbf_decode_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                          fbf_mode mode, char *path, size_t pathlen)
{
    const int64_t lim = (int64_t)1 << 30;
    if (env->cc_major < 8)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->m < 1 || p->n < 1 || p->k < 1 || p->m >= lim || p->n >= lim ||
        p->k >= lim)
        return FB_STATUS_NOT_SUPPORTED;

    /* Which side streams: C(i, j) = sum_c op(A)(i, c) op(B)(c, j).
     * Weight rows are rows of op(A) when A is transposed (row i at
     * a + i lda) with at most 32 columns of C; or columns of op(B) when B
     * is not transposed (column j at b + j ldb) with at most 32 rows. */
    const void *w, *x, *bias = p->ep.bias;
    int64_t ldw, xs_t, xs_k, cs_r, cs_t;
    int rows, toks, bias_on_rows;
    if (p->transa && p->n <= 32) {
        w = p->a;
        ldw = p->lda;
        rows = (int)p->m;
        toks = (int)p->n;
        x = p->b;
        xs_t = p->transb ? 1 : p->ldb;
        xs_k = p->transb ? p->ldb : 1;
        cs_r = 1;
        cs_t = p->ldc;
        bias_on_rows = p->ep.bias_per_row;
    } else if (!p->transb && p->m <= 32) {
        w = p->b;
        ldw = p->ldb;
        rows = (int)p->n;
        toks = (int)p->m;
        x = p->a;
        xs_t = p->transa ? p->lda : 1;
        xs_k = p->transa ? 1 : p->lda;
        cs_r = p->ldc;
        cs_t = 1;
        bias_on_rows = !p->ep.bias_per_row;
    } else {
        return FB_STATUS_NOT_SUPPORTED;
    }
    const int64_t esz = fb_dtype_size(p->dtype);
    const int64_t vec = 16 / esz;
    if (p->k % vec || (ldw * esz) % 16 || !aligned16(w))
        return FB_STATUS_NOT_SUPPORTED;
    if (rows * ldw >= ((int64_t)1 << 40))
        return FB_STATUS_NOT_SUPPORTED;
    const bool x_vec = xs_k == 1 && aligned16(x) && (xs_t * esz) % 16 == 0;
    /* A plan's fixed weights may be streamed early (launch_decode_gemm);
     * where the streamed side is the activations (few output channels,
     * many tokens), it may not. */
    fb_fused_env local = *env;
    if (w != (p->weight_is_a ? p->a : p->b) && FBF_KNOB(decode_early_any) != 1)
        local.weights_fixed = 0;
    env = &local;

#define FBF_GEMM_ARGS(T)                                                    \
    GemmArgs<T> a;                                                          \
    memset(&a, 0, sizeof a);                                                \
    a.w = static_cast<const T *>(w);                                        \
    a.ldw = ldw;                                                            \
    a.x = static_cast<const T *>(x);                                        \
    a.xs_t = xs_t;                                                          \
    a.xs_k = xs_k;                                                          \
    a.c = static_cast<T *>(p->c);                                           \
    a.cs_r = cs_r;                                                          \
    a.cs_t = cs_t;                                                          \
    a.bias = static_cast<const T *>(bias);                                  \
    a.bias_on_rows = bias_on_rows;                                          \
    a.alpha = p->alpha;                                                     \
    a.beta = p->beta;                                                       \
    a.act = p->ep.act;                                                      \
    a.rows = rows;                                                          \
    a.m = toks;                                                             \
    a.k = (int)p->k;                                                        \
    a.x_vec = x_vec;                                                        \
    a.x_split = FBF_KNOB(tma_x_whole) != 1;
    switch (p->dtype) {
    case FB_DTYPE_BF16: {
        FBF_GEMM_ARGS(__nv_bfloat16)
        return dispatch_decode_gemm<__nv_bfloat16>(env, a, p->dtype, mode,
                                                   path, pathlen);
    }
    case FB_DTYPE_F16: {
        FBF_GEMM_ARGS(__half)
        return dispatch_decode_gemm<__half>(env, a, p->dtype, mode, path,
                                            pathlen);
    }
    case FB_DTYPE_F32: {
        FBF_GEMM_ARGS(float)
        return dispatch_decode_gemm<float>(env, a, p->dtype, mode, path,
                                           pathlen);
    }
    }
#undef FBF_GEMM_ARGS
    return FB_STATUS_NOT_SUPPORTED;
}
