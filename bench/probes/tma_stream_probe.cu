/* SPDX-License-Identifier: BSD-3-Clause */
// tma_stream_probe.cu -- how fast one CTA per SM streams weight rows into
// shared memory through the copy engine (TMA), by arrangement: the
// evidence behind lib/cuda/fused/fused_decode_tma.cuh's producer warp and
// box widths (docs/decode-kernels.md). Not built by make; on a
// Hopper GPU:
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a \
//        -o tma_stream_probe bench/probes/tma_stream_probe.cu && ./tma_stream_probe
// The decode gemm's stream: 11008 rows of 8 KB (bf16, k = 4096; 90 MB),
// 132 CTAs, CTA c owns rows [c R / G, (c+1) R / G). No arithmetic: each
// computing warp only waits for a stage and releases it. Prints the copy
// bandwidth, then for 2D boxes (producer warp) and 1D bulk copies (mode 0:
// thread 0 produces between its own steps, blocking; 1: the same, never
// blocking while its step's data is out; 2: a producer warp) the median
// time and GB/s.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
__device__ __forceinline__ uint32_t sa(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *b, uint32_t c) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(b)), "r"(c) : "memory"); }
__device__ __forceinline__ void mbar_expect(uint64_t *b, uint32_t n) { asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory"); }
__device__ __forceinline__ void mbar_arrive(uint64_t *b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(b)) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t par) {
  uint32_t done = 0;
  do { asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0,1,0,p;\n}" : "=r"(done) : "r"(sa(b)), "r"(par) : "memory"); } while (!done);
}
__device__ __forceinline__ void tma2d(void *dst, const void *tm, uint64_t *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
               :: "r"(sa(dst)), "l"(tm), "r"(sa(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ bool mbar_test(uint64_t *b, uint32_t par) {
  uint32_t done = 0;
  asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0,1,0,p;\n}" : "=r"(done) : "r"(sa(b)), "r"(par) : "memory");
  return done != 0;
}
__device__ __forceinline__ void bulk(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(bar)) : "memory");
}
// mode 0: thread 0 produces and consumes, blocking waits; 1: thread 0
// never blocks on a slot while its step's data is not there (test_wait
// loop); 2: the last warp only produces.
__global__ void __launch_bounds__(416, 1) stream_k(const char *w, int rows, int rowbytes, int seg, int rps, int S, int pitch, float *out, int mode)
{
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t *full = (uint64_t *)smem, *empty = full + 16;
  unsigned char *ring = smem + 256;
  const int G = gridDim.x, c = blockIdx.x, tid = threadIdx.x;
  const int W = blockDim.x / 32 - (mode == 2 ? 1 : 0); // consumer warps
  const int r0 = (int)((long)c * rows / G), nr = (int)((long)(c + 1) * rows / G) - r0;
  const int groups = (nr + rps - 1) / rps, chunks = rowbytes / seg, nsteps = groups * chunks;
  const int stage = rps * pitch;
  if (tid == 0) { for (int s = 0; s < S; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], W); } asm volatile("fence.mbarrier_init.release.cluster;"); }
  __syncthreads();
  int issued = 0;
  auto issue_one = [&]() {
    const int s = issued % S, q = issued / groups, gr = issued % groups;
    const int ra = gr * rps, rn = min(rps, nr - ra);
    mbar_expect(&full[s], rn * seg);
    for (int r = 0; r < rn; ++r)
      bulk(ring + s * stage + r * pitch, w + (long)(r0 + ra + r) * rowbytes + (long)q * seg, seg, &full[s]);
    ++issued;
  };
  if (mode == 2 && tid >= W * 32) {
    if (tid == W * 32)
      while (issued < nsteps) { mbar_wait(&empty[issued % S], ((issued / S) & 1) ^ 1); issue_one(); }
    return;
  }
  float acc = 0;
  for (int i = 0; i < nsteps; ++i) {
    const int s = i % S;
    if (tid == 0 && mode == 0) {
      while (issued < nsteps && issued < i + S) { mbar_wait(&empty[issued % S], ((issued / S) & 1) ^ 1); issue_one(); }
    }
    if (tid == 0 && mode == 1) {
      while (issued <= i) { mbar_wait(&empty[issued % S], ((issued / S) & 1) ^ 1); issue_one(); }
      while (!mbar_test(&full[s], (i / S) & 1))
        if (issued < nsteps && issued < i + S && mbar_test(&empty[issued % S], ((issued / S) & 1) ^ 1)) issue_one();
    }
    mbar_wait(&full[s], (i / S) & 1);
    acc += *(const float *)(ring + s * stage + ((tid * 16) % stage));
    __syncwarp();
    if ((tid & 31) == 0) mbar_arrive(&empty[s]);
  }
  if (acc == 12345.f) out[0] = acc;
}
// 2D boxes {bc columns, br rows}, the last warp produces
// pdl (programmatic dependent launch): bit 0, the computing warps wait for
// the grid before (griddepcontrol.wait) ahead of their first read while the
// producer streams at once; bit 1, the producer lets the next grid launch
// once it has asked for its last stage.
__global__ void __launch_bounds__(416, 1) stream2d_k(const __grid_constant__ CUtensorMap tm, int rows, int cols, int bc, int br, int S, float *out, int pdl = 0)
{
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t *full = (uint64_t *)smem, *empty = full + 16;
  unsigned char *ring = smem + 256;
  const int G = gridDim.x, c = blockIdx.x, tid = threadIdx.x;
  const int W = blockDim.x / 32 - 1;
  const int r0 = (int)((long)c * rows / G), nr = (int)((long)(c + 1) * rows / G) - r0;
  const int groups = (nr + br - 1) / br, chunks = cols / bc, nsteps = groups * chunks;
  const int stage = br * bc * 2;
  if (tid == 0) { for (int s = 0; s < S; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], W); } asm volatile("fence.mbarrier_init.release.cluster;"); }
  __syncthreads();
  if (tid >= W * 32) {
    if (tid == W * 32)
      for (int j = 0; j < nsteps; ++j) {
        const int s = j % S;
        mbar_wait(&empty[s], ((j / S) & 1) ^ 1);
        mbar_expect(&full[s], stage);
        tma2d(ring + s * stage, &tm, &full[s], (j / groups) * bc, r0 + (j % groups) * br);
      }
    if (pdl & 2)
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    return;
  }
  if (pdl & 1)
    asm volatile("griddepcontrol.wait;" ::: "memory");
  float acc = 0;
  for (int i = 0; i < nsteps; ++i) {
    const int s = i % S;
    mbar_wait(&full[s], (i / S) & 1);
    acc += *(const float *)(ring + s * stage + ((tid * 16) % stage));
    __syncwarp();
    if ((tid & 31) == 0) mbar_arrive(&empty[s]);
  }
  if (acc == 12345.f) out[0] = acc;
}
// The floor under any stream: an empty launch of the same grid, timed the
// same way.
__global__ void __launch_bounds__(416, 1) empty_k(float *out)
{
  if (threadIdx.x == 12345) out[0] = 0;
}
// Plain 16-byte loads, every CTA a contiguous share, U loads in flight a
// thread: what the SMs' own load path reaches.
template <int U>
__global__ void __launch_bounds__(512, 1) loads_k(const uint4 *w, long n16, float *out)
{
  const long per = (n16 + gridDim.x - 1) / gridDim.x;
  const long b = blockIdx.x * per, e = b + per < n16 ? b + per : n16;
  uint32_t acc = 0;
  for (long i = b + threadIdx.x; i < e; i += (long)U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      v[u] = i + (long)u * blockDim.x < e ? __ldcs(w + i + (long)u * blockDim.x) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].w;
  }
  if (acc == 0x12345u) out[0] = (float)acc;
}
int main(int argc, char **argv)
{
  // rows of 8 KB: 11008 (90 MB, the decode gemm) by default; a second
  // size separates the fixed cost of a launch from the streaming rate
  const int rows = argc > 1 ? atoi(argv[1]) : 11008, rowbytes = 8192;
  const size_t bytes = (size_t)rows * rowbytes;
  int sets = 3;
  std::vector<char *> w(sets);
  for (auto &p : w) { CK(cudaMalloc(&p, bytes)); CK(cudaMemset(p, 1, bytes)); }
  float *out; CK(cudaMalloc(&out, 4));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaFuncSetAttribute(stream_k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  // copy reference
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  { char *a, *b; CK(cudaMalloc(&a, 1 << 30)); CK(cudaMalloc(&b, 1 << 30));
    std::vector<float> t;
    for (int i = 0; i < 7; ++i) { cudaEventRecord(e0); cudaMemcpyAsync(b, a, 1 << 30, cudaMemcpyDeviceToDevice); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
    std::sort(t.begin(), t.end()); printf("copy %.0f GB/s; %d rows of 8 KB, %.1f MB\n", 2.0 * (1 << 30) / (t[3] * 1e6), rows, bytes / 1e6); cudaFree(a); cudaFree(b); }
  auto timed = [&](const char *name, auto launch) {
    std::vector<float> t;
    for (int it = 0; it < 25; ++it) {
      cudaEventRecord(e0); launch(it); cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 5) t.push_back(ms * 1e3f);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2];
    printf("%-44s %6.1f us  %5.0f GB/s\n", name, us, bytes / (us * 1e3));
  };
  timed("empty launch, 132 x 416", [&](int) { empty_k<<<prop.multiProcessorCount, 416>>>(out); });
  timed("empty launch x 8 (all 8 timed)", [&](int) { for (int j = 0; j < 8; ++j) empty_k<<<prop.multiProcessorCount, 416>>>(out); });
  timed("loads 16 B, 132 x 512, 4 a thread", [&](int it) { loads_k<4><<<prop.multiProcessorCount, 512>>>((const uint4 *)w[it % sets], (long)(bytes / 16), out); });
  timed("loads 16 B, 132 x 512, 8 a thread", [&](int it) { loads_k<8><<<prop.multiProcessorCount, 512>>>((const uint4 *)w[it % sets], (long)(bytes / 16), out); });
  timed("loads 16 B, 264 x 512, 8 a thread", [&](int it) { loads_k<8><<<2 * prop.multiProcessorCount, 512>>>((const uint4 *)w[it % sets], (long)(bytes / 16), out); });
  timed("loads 16 B, 1056 x 256, 4 a thread", [&](int it) { loads_k<4><<<8 * prop.multiProcessorCount, 256>>>((const uint4 *)w[it % sets], (long)(bytes / 16), out); });
  {
    void *fp = nullptr; cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fp, 12000, cudaEnableDefault, &q));
    auto enc = (PFN_cuTensorMapEncodeTiled_v12000)fp;
    CK(cudaFuncSetAttribute(stream2d_k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    // back-to-back launches of one arrangement (256 x 84 rows, 4 stages),
    // n in a row timed together, without and with PDL
    {
      const int bc = 256, br = 84, S = 4, n = 8;
      const size_t smem = 256 + (size_t)S * br * bc * 2;
      CUtensorMap tm[3];
      const cuuint64_t dims[2] = {(cuuint64_t)rowbytes / 2, (cuuint64_t)rows};
      const cuuint64_t str[1] = {(cuuint64_t)rowbytes};
      const cuuint32_t box[2] = {(cuuint32_t)bc, (cuuint32_t)br}, es[2] = {1, 1};
      for (int i = 0; i < 3; ++i)
        if (enc(&tm[i], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, w[i], dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) { printf("encode failed\n"); return 1; }
      cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      for (int mode = 0; mode < 4; ++mode) {
        const int pdl = mode == 0 ? 0 : mode == 1 ? 0 : mode == 2 ? 1 : 3;
        const int count = mode == 0 ? 1 : n;
        std::vector<float> t;
        for (int it = 0; it < 15; ++it) {
          cudaEventRecord(e0, st);
          for (int j = 0; j < count; ++j) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = prop.multiProcessorCount; cfg.blockDim = 416; cfg.dynamicSmemBytes = smem; cfg.stream = st;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = mode >= 2;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, stream2d_k, tm[(it * count + j) % 3], rows, rowbytes / 2, bc, br, S, out, pdl));
          }
          cudaEventRecord(e1, st); CK(cudaEventSynchronize(e1));
          float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 3) t.push_back(ms * 1e3f / count);
        }
        std::sort(t.begin(), t.end());
        const double us = t[t.size() / 2];
        static const char *const nm[] = {"one launch", "8 in a row", "8 in a row, PDL, wait", "8 in a row, PDL, wait + early trigger"};
        printf("seq 256 x 84, 4 stages, %-38s %6.1f us a launch  %5.0f GB/s\n", nm[mode], us, bytes / (us * 1e3));
      }
      cudaStreamDestroy(st);
    }
    for (int bc : {64, 128, 256}) for (int br : {8, 16, 32, 84}) for (int S : {2, 4, 8}) {
      const size_t smem = 256 + (size_t)S * br * bc * 2;
      if (smem > 200 * 1024) continue;
      CUtensorMap tm;
      const cuuint64_t dims[2] = {(cuuint64_t)rowbytes / 2, (cuuint64_t)rows};
      const cuuint64_t str[1] = {(cuuint64_t)rowbytes};
      const cuuint32_t box[2] = {(cuuint32_t)bc, (cuuint32_t)br}, es[2] = {1, 1};
      std::vector<float> t;
      for (int it = 0; it < 15; ++it) {
        if (enc(&tm, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, w[it % sets], dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) { printf("encode failed\n"); break; }
        cudaEventRecord(e0);
        stream2d_k<<<prop.multiProcessorCount, 416, smem>>>(tm, rows, rowbytes / 2, bc, br, S, out);
        cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 3) t.push_back(ms * 1e3f);
      }
      CK(cudaGetLastError());
      if (t.empty()) continue;
      std::sort(t.begin(), t.end());
      const double us = t[t.size() / 2];
      printf("2d box %3d cols x %2d rows, %d stages (%5.1f KB a stage): %6.1f us  %5.0f GB/s\n", bc, br, S, br * bc * 2 / 1024.0, us, bytes / (us * 1e3));
    }
  }
  const int segs[] = {2048, 4096, 8192};
  const int rpss[] = {2, 4, 8};
  const int Ss[] = {2, 3, 4, 8};
  for (int mode = 2; mode < 3; ++mode)
  for (int seg : segs) for (int rps : rpss) for (int S : Ss) {
    const int pitch = seg + 64;
    const size_t smem = 256 + (size_t)S * rps * pitch;
    if (smem > 200 * 1024 || S > 16) continue;
    std::vector<float> t;
    for (int it = 0; it < 15; ++it) {
      cudaEventRecord(e0);
      stream_k<<<prop.multiProcessorCount, mode == 2 ? 416 : 384, smem>>>(w[it % sets], rows, rowbytes, seg, rps, S, pitch, out, mode);
      cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 3) t.push_back(ms * 1e3f);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2];
    printf("mode %d seg %5d rows/stage %2d stages %2d (%6.1f KB in flight): %6.1f us  %5.0f GB/s\n", mode, seg, rps, S, (S - 1) * rps * seg / 1024.0, us, bytes / (us * 1e3));
  }
  return 0;
}
