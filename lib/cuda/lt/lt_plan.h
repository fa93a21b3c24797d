/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lt_plan.h -- the cuBLASLt plan cache: the heuristic's choice of algorithm
 * for one problem key, asked once and kept per context.
 *
 * The key holds everything the heuristic looks at: types (of A and B, and
 * of C and D, which is fp32 for a 16-bit call's accumulator), transposes,
 * shape, leading dimensions, epilogue, compute type, the alignment of
 * every pointer (cuBLASLt picks kernels by alignment, bias included) and
 * the reduction schemes it was allowed (lt_gemm.cu restricts them for a
 * 16-bit D). A key for which cuBLASLt has no algorithm, or only one that
 * lt_gemm.cu refuses, is cached too, so that the fallback is chosen
 * without asking again. The cache is bounded (least recently used entry
 * replaced) and locked.
 */
#ifndef FB_CUDA_LT_PLAN_H
#define FB_CUDA_LT_PLAN_H

#include <pthread.h>
#include <stdint.h>
#include <cublasLt.h>

/* All int64_t, so there is no padding and memcmp compares keys. */
typedef struct fb_lt_plan_key {
    int64_t dtype, dtype_out, transa, transb, epilogue, compute;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t align_a, align_b, align_c, align_bias;
    int64_t reduction_mask;     /* CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK */
} fb_lt_plan_key;

typedef struct fb_lt_plan {
    fb_lt_plan_key key;
    int has_algo;               /* 0: none that can be used */
    int refused;                /* has_algo 0 because the algorithm offered
                                   would round partial results to D's
                                   16-bit type; what it said: */
    int32_t splitk;             /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM */
    uint32_t reduction;         /* CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME */
    uint64_t impl;              /* CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS */
    cublasLtMatmulAlgo_t algo;
    uint64_t last_use;          /* 0: empty slot */
} fb_lt_plan;

#define FB_LT_PLAN_SLOTS 128

typedef struct fb_lt_plan_cache {
    pthread_mutex_t lock;
    uint64_t clock;
    fb_lt_plan slot[FB_LT_PLAN_SLOTS];
} fb_lt_plan_cache;

int fb_lt_plan_cache_init(fb_lt_plan_cache *c);
void fb_lt_plan_cache_fini(fb_lt_plan_cache *c);

/* 1 and *plan filled if key is cached, else 0. */
int fb_lt_plan_find(fb_lt_plan_cache *c, const fb_lt_plan_key *key,
                    fb_lt_plan *plan);

/* Remember plan (replacing the least recently used entry if full). */
void fb_lt_plan_store(fb_lt_plan_cache *c, const fb_lt_plan *plan);

#endif /* FB_CUDA_LT_PLAN_H */
