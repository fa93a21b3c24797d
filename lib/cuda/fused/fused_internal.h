/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_internal.h -- how the cuda-fused files call each other: one
 * launcher per kernel family (decode, tiny), the entry points of fused.h
 * on top of them, and the knobs the standalone selftest sweeps.
 *
 * Each launcher has fused.h's contract: device pointers, env->stream,
 * no synchronisation, FB_STATUS_NOT_SUPPORTED without launching anything
 * for a call it does not cover.
 */
#ifndef FB_CUDA_FUSED_INTERNAL_H
#define FB_CUDA_FUSED_INTERNAL_H

#include <stddef.h>
#include <atomic>
#include "fused.h"
#include "problem_fp8.h"

/* How a launcher is called: to launch the call, or only to say whether
 * it covers it, launching nothing (the implementation tables' applies,
 * shape_rule.cu). */
typedef enum fbf_mode { FBF_RUN = 0, FBF_CHECK = 1 } fbf_mode;

/* Knobs for experiments: the selftest (tests/fused_selftest.cu) and the
 * probes (bench/probes) compile the launchers with -DFBF_SANDBOX and set
 * fbf_knobs to sweep variants; in the library every knob is 0, each
 * launcher's own choice, and folds away. */
typedef struct fbf_tuning {
    int hs;          /* stripes of h in the down projection (must divide
                        the grid) */
    int prefetch_kb; /* KiB of weights each CTA asks L2 for ahead (twice
                        that at the start, while X is staged; this much
                        before the grid barrier); negative: none */
    int tiny_variant; /* tiny MLP kernel: 1, 2 mma.sync (fused_tiny_mlp.cu),
                         3, 4, 5 wgmma (fused_tiny_wgmma.cu) */
    int h_only;       /* prefill: the dual GEMM alone, no down GEMM */
    int prefill_down_bn; /* prefill down GEMM: output columns a tile (128
                            or 256; 0: pw_down_bn's choice) */
    int decode_engine; /* decode kernels: 1 the register engine, 2 the TMA
                          engine (fused_decode_tma.cuh); 0: TMA where it
                          is allowed and covers the call */
    int tma_stages;    /* TMA engine: stages in its ring (2..8) */
    int tma_box_cols;  /* TMA engine: columns a box (64, 128, 256) */
    int tma_xs_kb;     /* TMA engine: KiB for the token rows' chunk */
    int decode_early_any; /* decode gemm in a plan: 1 streams its rows
                             early even where they are the activations
                             (wrong: for the selftest to show it) */
    int tma_x_whole;   /* TMA engine: 1 one chunk the whole buffer, staged
                          while every warp waits (0: two half chunks where
                          X does not fit, the next staged in the
                          background) */
    int engine_mode;   /* GEMM engine: 1 ping-pong, 2 cooperative, 3
                          ping-pong in clusters of 2 (0: its own choice) */
    int engine_group;  /* GEMM engine: unit-rows a raster group (0: its
                          own choice) */
    int engine_store;  /* GEMM engine: 1 each thread stores its pairs (0:
                          through shared memory and TMA where allowed) */
    int engine_streamk; /* GEMM engine: 1 never stream-K, 2 wherever it
                           can (0: where its rule says it pays) */
    int f32_nofma;     /* decode, fp32 TMA engine, bits: 1 skips the FMAs,
                          2 skips staging X (diagnostics: wrong results),
                          4 the first work split (tile j to warp j % W,
                          no column phases), 8 X by cp.async (not by the
                          copy engine) */
    int e4m3_kernel;   /* e4m3 gemm and gate-and-up: 1 the decode kernel,
                          2 the mid kernel, where each can run the call
                          (0: the shape rule) */
    int e4m3_splits;   /* e4m3 mid kernel: blocks sharing k (0: its own
                          choice) */
    int e4m3_mid_tokens; /* e4m3 mid kernel: tokens a block (8, 16, 32, 64;
                            0: by the rows) */
    int decode_ks;     /* decode gemm, 16-bit TMA engine: k stripes (CTAs
                          sharing a row range; 0: the rule) */
    int e4m3_mcast;    /* e4m3 wgmma kernel: 1 every CTA loads its own X
                          tile (0: channel tiles in pairs sharing it
                          where the rule says so) */
} fbf_tuning;

#ifdef FBF_SANDBOX
extern fbf_tuning fbf_knobs; /* defined by the sandbox program */
#define FBF_KNOB(field) (fbf_knobs.field)
#else
#define FBF_KNOB(field) 0
#endif

/* The one-launch gated MLP for few rows (decode: m <= 32). */
fb_status fbf_decode_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                         fbf_mode mode, char *path, size_t pathlen);
/* Whether the 16-bit decode MLP would run on the TMA engine (not the
 * register engine) for this call: the wide decode rows of the shape rule
 * were measured on it. */
bool fbf_decode_mlp_streams_tma(const fb_fused_env *env,
                                const fb_mlp_problem *p);

/* gemm_bias_act with at most 32 columns on one side (decode), streaming
 * the other operand's rows once. */
fb_status fbf_decode_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                          fbf_mode mode, char *path,
                          size_t pathlen);

/* Tiny widths (every weight held in shared memory), any number of rows. */
fb_status fbf_tiny_mlp(const fb_fused_env *env, const fb_mlp_problem *p,
                       fbf_mode mode, char *path, size_t pathlen);
fb_status fbf_tiny_gemm(const fb_fused_env *env, const fb_gemm_problem *p,
                        fbf_mode mode, char *path, size_t pathlen);
/* The 16-bit tiny MLP on wgmma (compute 9.0, sm_90a builds; k, n <= 64):
 * called by fbf_tiny_mlp first, NOT_SUPPORTED where it does not cover. */
fb_status fbf_tiny_mlp_wgmma(const fb_fused_env *env,
                             const fb_mlp_problem *p, fbf_mode mode,
                             char *path, size_t pathlen);
/* Their fp32 members (CUDA cores, true fp32), called by the two above. */
fb_status fbf_tiny_mlp_f32(const fb_fused_env *env, const fb_mlp_problem *p,
                           fbf_mode mode, char *path,
                           size_t pathlen);
fb_status fbf_tiny_gemm_f32(const fb_fused_env *env,
                            const fb_gemm_problem *p, fbf_mode mode,
                            char *path, size_t pathlen);

/* The prefill gated MLP on TMA + wgmma (fused_prefill_wgmma.cu; compute
 * 9.0, sm_90a builds; m > 32, where the decode kernels stop): the dual
 * GEMM writes H = act(X Wg^T + bg) .* (X Wu^T + bu) into hbuf (at least
 * m x h elements of the input type, row stride h; NULL is enough for
 * FBF_CHECK), then the down GEMM Y = H Wd^T + bd (not with the h_only
 * knob).
 * NOT_SUPPORTED where it does not cover the call. */
fb_status fbf_prefill_mlp_wgmma(const fb_fused_env *env,
                                const fb_mlp_problem *p, void *hbuf,
                                size_t hbuf_bytes, fbf_mode mode,
                                char *path, size_t pathlen);

/* The Hopper GEMM engine (fused_gemm_sm90.cu; compute 9.0, sm_90a
 * builds): gemm_bias_act, and the gated MLP as a dual GEMM writing H into
 * hbuf (at least m x h elements of the input type, row stride h; NULL is
 * enough for FBF_CHECK) and the down GEMM. NOT_SUPPORTED where it does
 * not cover the call.
 * The gemm takes every transpose: an operand its tensor maps cannot read
 * in place (MN-major, or a stride or base they do not take) is first
 * packed K-major into env->scratch, which must then hold
 * fbf_gemm_sm90_scratch(p) bytes (else NOT_SUPPORTED, nothing launched);
 * the path then ends in "+pack". */
fb_status fbf_gemm_sm90(const fb_fused_env *env, const fb_gemm_problem *p,
                        fbf_mode mode, char *path, size_t pathlen);
size_t fbf_gemm_sm90_scratch(const fb_gemm_problem *p);
/* Whether the engine covers p with both operands read where they lie
 * (what fbf_gemm_sm90_scaled takes: it packs nothing). */
bool fbf_gemm_sm90_in_place(const fb_fused_env *env,
                            const fb_gemm_problem *p);

/* A 16-bit operand of rows x k packed K-major into dst (row stride
 * fbf_pack16_ld(k), fbf_pack16_bytes(rows, k) bytes, 16-byte aligned):
 * element (r, kk) of the source is src[r * ld + kk], or src[r + kk * ld]
 * where mn_major. Enqueued on stream (fused_pack16.cu). */
int64_t fbf_pack16_ld(int64_t k);
size_t fbf_pack16_bytes(int64_t rows, int64_t k);
fb_status fbf_pack16(cudaStream_t stream, const void *src, int64_t ld,
                     bool mn_major, int64_t rows, int64_t k, void *dst);
/* How many rounds the engine's persistent grid takes over p's output
 * tiles (units of work over the clusters that run at once; 2.5: two full
 * rounds and a half-full third), and how busy those whole rounds are (the
 * share of their tiles' area that holds output), for the shape rule;
 * false where the engine does not cover p or the device cannot say. */
bool fbf_gemm_sm90_rounds(const fb_fused_env *env, const fb_gemm_problem *p,
                          double *rounds, double *busy);
/* For the gated MLP: how full the rounds of its two launches are, each
 * weighted by its reduction length (1: no round runs part-empty); false
 * where the engine does not cover p or the device cannot say. */
bool fbf_mlp_sm90_fill(const fb_fused_env *env, const fb_mlp_problem *p,
                       double *fill);
/* The engine on e4m3 weights widened (exactly) to the 16-bit type, the
 * weights' fp32 scales applied in the epilogue: as fbf_gemm_sm90 (run),
 * each product of A's row i multiplied by scale[i] first; and the dual
 * GEMM alone, H = act(sg .* (X Wg^T) + bg) .* (su .* (X Wu^T) + bu) into
 * h (m x h, row stride ldh; h NULL and h_bytes 0: whether it covers p).
 * NULL scales: none. */
fb_status fbf_gemm_sm90_scaled(const fb_fused_env *env,
                               const fb_gemm_problem *p, const float *scale,
                               char *path, size_t pathlen);
fb_status fbf_mlp_hidden_sm90(const fb_fused_env *env,
                              const fb_mlp_problem *p, const float *sg,
                              const float *su, void *h, int64_t ldh,
                              size_t h_bytes, char *path, size_t pathlen);
fb_status fbf_mlp_sm90(const fb_fused_env *env, const fb_mlp_problem *p,
                       void *hbuf, size_t hbuf_bytes, fbf_mode mode,
                       char *path, size_t pathlen);

/* e4m3 weights widened inside a Hopper GEMM (fused_fp8_wgmma.cu; compute
 * 9.0, sm_90a builds): the weights as wgmma's register operand, widened
 * exactly from shared memory, D^T = W X^T. The gemm writes p's output
 * with the e4m3 contract (fb_fp8_finish's order); covers 16-bit data with
 * X's rows and the output's channels contiguous, k and X's row stride
 * multiples of 8, weight rows contiguous with a stride a multiple of 16,
 * 16-byte aligned X and weights, alpha != 0. The gate-and-up form writes
 * H = act(sg .* X Wg^T + bg) .* (su .* X Wu^T + bu) in the input type
 * into hbuf (m x h, row stride h; k a multiple of 16). bn: tokens a tile
 * (64, 128, 256; anything else: the launcher's choice); splits: CTAs a
 * tile, each a share of k (1, 2, 4, 8; <= 0: the launcher's choice; the
 * gemm only). NOT_SUPPORTED, nothing launched, where it does not cover
 * the call. */
bool fbf_e4m3_wgmma_gemm_covers(const fb_fused_env *env,
                                const fb_e4m3_gemm_problem *p);
fb_status fbf_e4m3_wgmma_gemm(const fb_fused_env *env,
                              const fb_e4m3_gemm_problem *p, int bn,
                              int splits, char *path, size_t pathlen);
bool fbf_e4m3_wgmma_gate_up_covers(const fb_fused_env *env,
                                   const fb_e4m3_mlp_problem *p);
/* Whether the launcher's grid for p, k split included, fills the GPU (at
 * least 0.6 CTAs an SM): the shape rule's question where the mid kernel
 * can take the call too. */
bool fbf_e4m3_wgmma_gemm_fills(const fb_fused_env *env,
                               const fb_e4m3_gemm_problem *p);
bool fbf_e4m3_wgmma_gate_up_fills(const fb_fused_env *env,
                                  const fb_e4m3_mlp_problem *p);
fb_status fbf_e4m3_wgmma_gate_up(const fb_fused_env *env,
                                 const fb_e4m3_mlp_problem *p, void *hbuf,
                                 int bn);

/* Writes "cuda-fused/<name>" into path (if any). */
void fbf_set_path(char *path, size_t pathlen, const char *name);

/* FB_STATUS_SUCCESS, or FB_STATUS_EXECUTION_FAILED for a launch error.
 * The error is left for cudaGetLastError(): the module's dispatcher reads
 * its text from there (module.cu, fused_outcome). */
fb_status fbf_launch_status(cudaError_t e);

/* Launches func as the stream's next grid of G x threads. programmatic:
 * the grid may start before the one ahead of it on the stream ends
 * (programmatic dependent launch; the kernel waits for it where it must);
 * where the driver refuses that, the grid is launched the ordinary way,
 * which the kernel must also run correctly under. */
cudaError_t fbf_launch_grid(const void *func, int G, int threads,
                            void **args, size_t smem, cudaStream_t stream,
                            bool programmatic);

/* Lets func take up to bytes of dynamic shared memory on device, once per
 * kernel and device (ready: the caller's flags for func; a device past 63
 * is asked every time). */
cudaError_t fbf_allow_smem(std::atomic<unsigned long long> &ready,
                           const void *func, int device, size_t bytes);

#endif /* FB_CUDA_FUSED_INTERNAL_H */
