/*
 * fused_decode.cu -- decode-sized calls (m <= 32 token rows, widths in the
 * thousands): weight streaming at memory speed.
 *
 * mlp_decode: the whole gated MLP in ONE cooperative launch, one CTA per
 * SM (12 warps; 16 for fp32 with <= 16 tokens), no floating-point atomics
 * anywhere: the same call gives the same bits.
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
 *   atomics (G x m x n adds: 8.6 M at m = 16, 35 MB through L2 atomics)?
 *   The H round trip costs m h bytes out and about 10 MB of L2 reads in,
 *   and the stripes keep the cross-CTA reduction to HS x m x n.
 *
 *   Floor, bf16, m = 16, 4096 -> 11008 -> 4096: 2 m (3 k h) = 4.3 GFLOP
 *   (tensor cores: ~5 us, never the limit); bytes: weights 3 k h 2 =
 *   270.5 MB + X, H, Y < 1 MB, so 270.5 MB / copy bandwidth:
 *   ~63 us on an H200 (4.3 TB/s measured copy), ~90 us on an H100
 *   (3.0 TB/s). fp32: 541 MB -> ~126 us / ~180 us; its FLOPs on the CUDA
 *   cores (4.3 GFLOP / ~60 TFLOP/s = ~72 us at m = 16, twice at m = 32)
 *   come close to the memory time, so fp32 m = 32 is arithmetic-bound.
 *
 * gemm_decode: gemm_bias_act where one side of C has at most 32 columns
 * (tokens) and the other operand's rows are contiguous in k (nn.Linear's
 * weight): the phase-1 engine with the gemm epilogue, a plain launch (no
 * barrier: each CTA owns whole output rows).
 *   Floor, bf16, 16 x 4096 -> 11008: 1.44 GFLOP; 90.2 MB of weights:
 *   ~21 us (H200), ~30 us (H100).
 */
#include <stdio.h>
#include <string.h>
#include <atomic>
#include <type_traits>
#include "fused_internal.h"
#include "fused_decode_stream.cuh"

namespace fbf {

/* Threads per CTA (one CTA per SM). Each warp keeps two steps of loads
 * in flight (8 KB for 16-bit weights), so 12 warps hold ~96 KB per SM,
 * about three times what HBM's bandwidth-latency product asks (4.8 TB/s x
 * ~1 us / 132 SMs); 12 warps leave 168 registers a thread, which the two
 * steps of 16-byte vectors and the accumulators need. fp32 with <= 16
 * tokens fits in 128 registers and takes 16 warps (its FMAs want the
 * issue slots). */
template <typename T, int NTOK> struct CtaShape {
    static const int THREADS =
        std::is_same<T, float>::value && NTOK <= 16 ? 512 : 384;
};
static const int kHeaderBytes = 128; /* spare, keeps offsets aligned */

/* Barrier state at the end of the workspace (the start is where the
 * intermediates go, and where cuBLASLt's split-k data would be). */
static const size_t kBarrierRegion = FB_FUSED_BARRIER_BYTES;
static const int kMaxGrid = 4000;      /* flags: 8 B each, 32 000 B */
static const int kMaxRanges = 4000;    /* counters: 4 B each */

struct BarrierState {
    unsigned long long *epoch;
    unsigned long long *flags;
    unsigned int *counters;
};

static BarrierState barrier_state(const fb_fused_env *env)
{
    char *end = static_cast<char *>(env->workspace) + env->workspace_bytes;
    char *base = reinterpret_cast<char *>(
        (uintptr_t)(end - kBarrierRegion) & ~(uintptr_t)255);
    BarrierState b;
    b.epoch = reinterpret_cast<unsigned long long *>(base);
    b.flags = reinterpret_cast<unsigned long long *>(base + 256);
    b.counters = reinterpret_cast<unsigned int *>(base + 256 + 8 * kMaxGrid);
    return b;
}

/* ---- the MLP kernel -------------------------------------------------- */

template <typename T> struct MlpArgs {
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
    unsigned long long *epoch, *flags;
    unsigned int *counters;
    T *hbuf;      /* m x h */
    float *parts; /* hs x m x n */
};

/* Column where stripe s of HS starts: multiples of 8 elements, the last
 * one ending at h (h is a multiple of 8). */
__host__ __device__ __forceinline__ int stripe_start(int s, int hs, int h)
{
    return (int)(((int64_t)s * h / hs) & ~(int64_t)7);
}

template <typename T, int NTOK>
__global__ void __launch_bounds__((CtaShape<T, NTOK>::THREADS), 1)
    decode_mlp_kernel(const MlpArgs<T> a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *sacc = reinterpret_cast<float *>(smem + a.sacc_off);
    T *xs = reinterpret_cast<T *>(smem + a.xs_off);
    const int kThreads = CtaShape<T, NTOK>::THREADS;
    const int G = gridDim.x, c = blockIdx.x, tid = threadIdx.x;
    const int m = a.m, ms = m + 1;

    const unsigned long long target = ld_relaxed_gpu(a.epoch) + 1;

    /* ---- phase 1: H[:, j0:j1] ---- */
    const int j0 = (int)((int64_t)c * a.h / G);
    const int nr1 = (int)((int64_t)(c + 1) * a.h / G) - j0;
    const int P = G / a.hs;
    if (c == 0)
        for (int i = tid; i < P; i += kThreads)
            a.counters[i] = 0u;
    for (int i = tid; i < 2 * nr1 * ms; i += kThreads)
        sacc[i] = 0.0f;

    StreamJob<T> J;
    J.wa = a.wg;
    J.wb = a.wu;
    J.ldw = a.k;
    J.row0 = j0;
    J.nrows = nr1;
    J.xs = xs;
    J.xstride = a.xstride1;
    J.m = m;
    J.sacc = sacc;
    J.ms = ms;
    J.slots = reinterpret_cast<float *>(smem + a.slots_off);
    /* HBM starts streaming while X fills shared memory. */
    J.kb = 0;
    J.ke = min(a.k, a.kc);
    stream_prefetch<T, NTOK, true>(J, a.prefetch1);
    for (int kb = 0; kb < a.k; kb += a.kc) {
        const int ke = min(a.k, kb + a.kc);
        __syncthreads(); /* the previous chunk's readers are done */
        stage_tokens<T>(xs, a.xstride1, m, kb, ke,
                        round_up_int(ke - kb, 128), a.x, a.ldx, 1,
                        a.x_vec != 0, false);
        __syncthreads();
        J.kb = kb;
        J.ke = ke;
        stream_pass<T, NTOK, true>(J);
        __syncthreads();
        reduce_slots<T, NTOK, true>(J);
    }
    __syncthreads();
    for (int i = tid; i < m * nr1; i += kThreads) {
        const int t = i / nr1, jl = i - t * nr1, j = j0 + jl;
        float gate = sacc[jl * ms + t], up = sacc[(nr1 + jl) * ms + t];
        if (a.bg)
            gate += fb_load_f32(a.bg[j]);
        if (a.bu)
            up += fb_load_f32(a.bu[j]);
        a.hbuf[(int64_t)t * a.h + j] =
            fb_store_as<T>(fb_act_dynamic(a.act, gate) * up);
    }

    /* ---- phase 2 geometry; prefetch while others finish phase 1 ---- */
    const int s = c % a.hs, r = c / a.hs;
    const int i0 = (int)((int64_t)r * a.n / P);
    const int nr2 = (int)((int64_t)(r + 1) * a.n / P) - i0;
    J.wa = a.wd;
    J.wb = a.wd;
    J.ldw = a.h;
    J.row0 = i0;
    J.nrows = nr2;
    J.kb = stripe_start(s, a.hs, a.h);
    J.ke = s + 1 == a.hs ? a.h : stripe_start(s + 1, a.hs, a.h);
    J.xstride = a.xstride2;
    stream_prefetch<T, NTOK, false>(J, a.prefetch2);

    grid_barrier(a.flags, target);
    if (c == 0 && tid == 0)
        *a.epoch = target; /* every CTA has read the old one */

    /* ---- phase 2: this CTA's block of Y = H Wd^T ---- */
    for (int i = tid; i < nr2 * ms; i += kThreads)
        sacc[i] = 0.0f;
    stage_tokens<T>(xs, a.xstride2, m, J.kb, J.ke,
                    round_up_int(J.ke - J.kb, 128), a.hbuf, a.h, 1, true,
                    true);
    __syncthreads();
    stream_pass<T, NTOK, false>(J);
    __syncthreads();
    reduce_slots<T, NTOK, false>(J);
    __syncthreads();

    if (a.hs == 1) {
        for (int i = tid; i < m * nr2; i += kThreads) {
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
    for (int i = tid; i < m * nr2; i += kThreads) {
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
    for (int i = tid; i < m * nq; i += kThreads) {
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
    int prefetch;
};

template <typename T, int NTOK>
__global__ void __launch_bounds__((CtaShape<T, NTOK>::THREADS), 1)
    decode_gemm_kernel(const GemmArgs<T> a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *sacc = reinterpret_cast<float *>(smem + a.sacc_off);
    T *xs = reinterpret_cast<T *>(smem + a.xs_off);
    const int kThreads = CtaShape<T, NTOK>::THREADS;
    const int G = gridDim.x, cta = blockIdx.x, tid = threadIdx.x;
    const int m = a.m, ms = m + 1;
    const int r0 = (int)((int64_t)cta * a.rows / G);
    const int nr = (int)((int64_t)(cta + 1) * a.rows / G) - r0;

    for (int i = tid; i < nr * ms; i += kThreads)
        sacc[i] = 0.0f;
    StreamJob<T> J;
    J.wa = a.w;
    J.wb = a.w;
    J.ldw = a.ldw;
    J.row0 = r0;
    J.nrows = nr;
    J.xs = xs;
    J.xstride = a.xstride;
    J.m = m;
    J.sacc = sacc;
    J.ms = ms;
    J.slots = reinterpret_cast<float *>(smem + a.slots_off);
    J.kb = 0;
    J.ke = min(a.k, a.kc);
    stream_prefetch<T, NTOK, false>(J, a.prefetch);
    for (int kb = 0; kb < a.k; kb += a.kc) {
        const int ke = min(a.k, kb + a.kc);
        __syncthreads();
        stage_tokens<T>(xs, a.xstride, m, kb, ke, round_up_int(ke - kb, 128),
                        a.x, a.xs_t, a.xs_k, a.x_vec != 0, false);
        __syncthreads();
        J.kb = kb;
        J.ke = ke;
        stream_pass<T, NTOK, false>(J);
        __syncthreads();
        reduce_slots<T, NTOK, false>(J);
    }
    __syncthreads();

    /* C <- act(alpha acc + beta C + bias); C is read only when beta != 0.
     * Walk the output along its contiguous direction. */
    const bool rows_inner = a.cs_r == 1;
    for (int i = tid; i < m * nr; i += kThreads) {
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
        float v = a.alpha * sacc[rl * ms + t];
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
    cudaError_t e = cudaFuncSetAttribute(
        func, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)env->smem_optin);
    if (e != cudaSuccess)
        return e;
    int blocks = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, func, threads,
                                                      env->smem_optin);
    if (e != cudaSuccess)
        return e;
    *fits = blocks >= 1;
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

template <typename T, int NTOK>
static fb_status run_decode_mlp(const fb_fused_env *env,
                                const fb_mlp_problem *p,
                                const fbf_tuning *tune, char *path,
                                size_t pathlen)
{
    static KernelState state;
    const void *func = reinterpret_cast<const void *>(&decode_mlp_kernel<T, NTOK>);
    const int m = (int)p->m, k = (int)p->k, h = (int)p->h, n = (int)p->n;
    const size_t esz = sizeof(T);
    const int G = env->sm_count;
    if (G < 1 || G > kMaxGrid)
        return FB_STATUS_NOT_SUPPORTED;
    if (env->workspace == NULL ||
        env->workspace_bytes < kBarrierRegion + 4096 + 256)
        return FB_STATUS_NOT_SUPPORTED;

    /* Phase-2 stripes: the divisor of G that moves the fewest L2 bytes
     * (each CTA reads its H stripe; HS > 1 writes and reads back HS fp32
     * partials of Y and pays a counter round trip, counted as 4 MB) and
     * whose H stripe fits in shared memory with the accumulators. Each
     * stripe also costs about 1/60 of Wd's bytes: more stripes mean
     * shorter contiguous runs of every Wd row, streamed less efficiently,
     * and more CTAs in each range's reduction. Fitted to the H200 sweeps
     * (selftest, GPU sessions 5-6 of 2026-11-22), bf16 4096 -> 11008 ->
     * 4096: m = 16 now picks hs 4, 90.1 us against 97.9 for hs 11 (which
     * the bytes alone chose); m = 4 hs 3, 82.8 against 84.8 for hs 11
     * (hs 1, the best there, 81.2); m = 1 keeps hs 1 (78.2). 768 -> 3072 -> 768, m = 16 (Wd 4.7 MB)
     * keeps hs 11: the sweep there is flat within noise (26.8-29.9 us),
     * and a flat 1.5 MB a stripe (hs 3) measured 28.8 against 28.1. */
    const int ms = m + 1;
    const int threads = CtaShape<T, NTOK>::THREADS;
    const size_t budget = env->smem_optin;
    const size_t sacc1 = (size_t)2 * ((h + G - 1) / G) * ms * 4;
    /* per warp, two tiles' partial sums (fused_decode_stream.cuh) */
    const size_t slot_bytes = (size_t)(threads / 32) * 2 * 16 * ms * 4;
    const size_t ws_avail = env->workspace_bytes - kBarrierRegion - 256;
    const size_t hbytes = ((size_t)m * h * esz + 255) / 256 * 256;
    int hs = 0;
    double best = 0.0;
    for (int d = 1; d <= G; ++d) {
        if (G % d)
            continue;
        if (tune && tune->hs > 0 && d != tune->hs)
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
    if (hs == 0)
        return FB_STATUS_NOT_SUPPORTED;
    const int P = G / hs;
    const int wmax = h / hs + 16;
    const int xstride2 = round_up_int(wmax, 128) + 32;
    const size_t sacc2 = (size_t)((n + P - 1) / P) * ms * 4;
    const size_t sacc = sacc1 > sacc2 ? sacc1 : sacc2;
    const size_t sacc_off = kHeaderBytes;
    const size_t slots_off = (sacc_off + sacc + 15) / 16 * 16;
    const size_t xs_off = (slots_off + slot_bytes + 15) / 16 * 16;
    const int kc = choose_chunk(k, m, esz, budget - xs_off);
    if (kc == 0)
        return FB_STATUS_NOT_SUPPORTED;
    const int xstride1 = kc + 32;
    const size_t xs1b = (size_t)m * xstride1 * esz;
    const size_t xs2b = (size_t)m * xstride2 * esz;
    const size_t smem = xs_off + (xs1b > xs2b ? xs1b : xs2b);
    if (smem > budget)
        return FB_STATUS_NOT_SUPPORTED;

    bool fits = false;
    cudaError_t e = prepare_kernel(state, func, threads, env, &fits);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (!fits)
        return FB_STATUS_NOT_SUPPORTED;
    if (tune && tune->dry_run)
        return FB_STATUS_SUCCESS;

    MlpArgs<T> a;
    memset(&a, 0, sizeof a);
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
    /* L2 prefetch, as steps per warp: phase 1 asks for twice the knob
     * (the CTA's first two rounds of loads, 128 KiB by default) while X is
     * staged, phase 2 for the knob (64 KiB) before the barrier. */
    const int kb_knob =
        tune && tune->prefetch_kb != 0 ? (tune->prefetch_kb < 0 ? 0 : tune->prefetch_kb) : 64;
    const int step_bytes = (threads / 32) * 16 * Engine<T, NTOK>::COLS * (int)esz;
    a.prefetch1 = kb_knob ? (2 * (kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.prefetch2 = kb_knob ? ((kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.sacc_off = (int)sacc_off;
    a.slots_off = (int)slots_off;
    a.xs_off = (int)xs_off;
    a.x_vec = aligned16(p->x) && (p->ldx * (int64_t)esz) % 16 == 0;
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
        snprintf(name, sizeof name, "mlp_decode_%s", dtype_suffix(p->dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

template <typename T>
static fb_status dispatch_decode_mlp(const fb_fused_env *env,
                                     const fb_mlp_problem *p,
                                     const fbf_tuning *tune, char *path,
                                     size_t pathlen)
{
    if (p->m <= 8)
        return run_decode_mlp<T, 8>(env, p, tune, path, pathlen);
    if (p->m <= 16)
        return run_decode_mlp<T, 16>(env, p, tune, path, pathlen);
    return run_decode_mlp<T, 32>(env, p, tune, path, pathlen);
}

template <typename T, int NTOK>
static fb_status run_decode_gemm(const fb_fused_env *env,
                                 const GemmArgs<T> &in, fb_dtype dtype,
                                 const fbf_tuning *tune, char *path,
                                 size_t pathlen)
{
    static KernelState state;
    const void *func =
        reinterpret_cast<const void *>(&decode_gemm_kernel<T, NTOK>);
    GemmArgs<T> a = in;
    const size_t esz = sizeof(T);
    int G = a.rows / 16;
    if (G > env->sm_count)
        G = env->sm_count;
    if (G < 1)
        G = 1;
    const int ms = a.m + 1;
    const int threads = CtaShape<T, NTOK>::THREADS;
    const size_t sacc = (size_t)((a.rows + G - 1) / G) * ms * 4;
    const size_t slot_bytes = (size_t)(threads / 32) * 2 * 16 * ms * 4;
    const size_t slots_off = (kHeaderBytes + sacc + 15) / 16 * 16;
    const size_t xs_off = (slots_off + slot_bytes + 15) / 16 * 16;
    if (xs_off >= env->smem_optin)
        return FB_STATUS_NOT_SUPPORTED;
    const int kc = choose_chunk(a.k, a.m, esz, env->smem_optin - xs_off);
    if (kc == 0)
        return FB_STATUS_NOT_SUPPORTED;
    a.kc = kc;
    a.xstride = kc + 32;
    const int kb_knob =
        tune && tune->prefetch_kb != 0 ? (tune->prefetch_kb < 0 ? 0 : tune->prefetch_kb) : 64;
    const int step_bytes = (threads / 32) * 16 * Engine<T, NTOK>::COLS * (int)esz;
    a.prefetch = kb_knob ? (2 * (kb_knob << 10) + step_bytes - 1) / step_bytes : 0;
    a.sacc_off = kHeaderBytes;
    a.slots_off = (int)slots_off;
    a.xs_off = (int)xs_off;
    const size_t smem = xs_off + (size_t)a.m * a.xstride * esz;

    bool fits = false;
    cudaError_t e = prepare_kernel(state, func, threads, env, &fits);
    if (e != cudaSuccess)
        return fbf_launch_status(e);
    if (!fits)
        return FB_STATUS_NOT_SUPPORTED;
    if (tune && tune->dry_run)
        return FB_STATUS_SUCCESS;
    void *args[] = {&a};
    fb_status st = fbf_launch_status(cudaLaunchKernel(
        func, dim3(G), dim3(threads), args, smem, env->stream));
    if (st == FB_STATUS_SUCCESS) {
        char name[64];
        snprintf(name, sizeof name, "gemm_decode_%s", dtype_suffix(dtype));
        fbf_set_path(path, pathlen, name);
    }
    return st;
}

template <typename T>
static fb_status dispatch_decode_gemm(const fb_fused_env *env,
                                      const GemmArgs<T> &a, fb_dtype dtype,
                                      const fbf_tuning *tune, char *path,
                                      size_t pathlen)
{
    if (a.m <= 8)
        return run_decode_gemm<T, 8>(env, a, dtype, tune, path, pathlen);
    if (a.m <= 16)
        return run_decode_gemm<T, 16>(env, a, dtype, tune, path, pathlen);
    return run_decode_gemm<T, 32>(env, a, dtype, tune, path, pathlen);
}

} /* namespace fbf */

using namespace fbf;

/* Shapes this family covers: few tokens, weights that can be streamed in
 * 16-byte pieces. Sizes stay within int (the kernels index with int). */
fb_status fbf_decode_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                         const fbf_tuning *tune, char *path, size_t pathlen)
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
        return dispatch_decode_mlp<__nv_bfloat16>(env, p, tune, path, pathlen);
    case FB_DTYPE_F16:
        return dispatch_decode_mlp<__half>(env, p, tune, path, pathlen);
    case FB_DTYPE_F32:
        return dispatch_decode_mlp<float>(env, p, tune, path, pathlen);
    }
    return FB_STATUS_NOT_SUPPORTED;
}

fb_status fbf_decode_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                          const fbf_tuning *tune, char *path, size_t pathlen)
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
    a.x_vec = x_vec;
    switch (p->dtype) {
    case FB_DTYPE_BF16: {
        FBF_GEMM_ARGS(__nv_bfloat16)
        return dispatch_decode_gemm<__nv_bfloat16>(env, a, p->dtype, tune,
                                                   path, pathlen);
    }
    case FB_DTYPE_F16: {
        FBF_GEMM_ARGS(__half)
        return dispatch_decode_gemm<__half>(env, a, p->dtype, tune, path,
                                            pathlen);
    }
    case FB_DTYPE_F32: {
        FBF_GEMM_ARGS(float)
        return dispatch_decode_gemm<float>(env, a, p->dtype, tune, path,
                                           pathlen);
    }
    }
#undef FBF_GEMM_ARGS
    return FB_STATUS_NOT_SUPPORTED;
}
