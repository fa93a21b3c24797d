/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_impl.h -- the CPU backend's implementations of each operation, as
 * ordered tables (oneDNN's implementation lists): the first entry that
 * applies to a call runs it, and its name begins the path the call
 * reports.
 *
 * An entry decides whether it takes a call before it does any work
 * (applies), says how much workspace it needs (workspace), and runs
 * (run). One that packs the weights into a layout of its own can do so
 * ahead of the call, for a plan (pack_bytes, pack): run then reads the
 * packed weights instead of packing them. Every workspace comes from the
 * caller: run allocates nothing and cannot fail for memory.
 */
#ifndef FB_CPU_IMPL_H
#define FB_CPU_IMPL_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* What an implementation is given for one call. */
typedef struct fb_cpu_call {
    fb_handle h;        /* for the log */
    int threads;        /* the most OpenMP threads the call may use */
    void *ws;           /* workspace(p, threads, packed != NULL) bytes,
                           64-byte aligned */
    const void *packed; /* the weights as pack() left them, or NULL */
} fb_cpu_call;

/* threads as fb_cpu_threads gives them (the entry calls OpenBLAS from
 * its threads) or as fb_cpu_own_threads does (our kernels alone). */
enum { FB_CPU_OWN_THREADS = 0, FB_CPU_BLAS_THREADS = 1 };

typedef struct fb_cpu_gemm_impl {
    const char *name;
    int threading; /* FB_CPU_OWN_THREADS or FB_CPU_BLAS_THREADS */
    /* Whether it takes p, packed weights or none (c->ws is not yet set).
     * May read the operands (a kernel that cannot take some values must
     * find them here, not after it has started), never writes. */
    int (*applies)(const fb_cpu_call *c, const fb_gemm_problem *p);
    size_t (*workspace)(const fb_gemm_problem *p, int threads, int packed);
    /* The weights (fb_gemm_problem.weight_is_a says which operand) in the
     * entry's own layout, for a plan; NULL if it reads them in place.
     * pack_bytes depends on the weights' shape alone, not on m. */
    size_t (*pack_bytes)(const fb_gemm_problem *p);
    void (*pack)(const fb_gemm_problem *p, int threads, void *dst);
    /* Runs p; path receives what ran or why it failed. */
    fb_status (*run)(const fb_cpu_call *c, const fb_gemm_problem *p,
                     char *path, size_t len);
    /* The measured shape rule: under auto, an entry that applies runs only
     * where this says so (NULL: always); a call forced to the entry by
     * name runs it wherever it applies. The same for a plan's calls as
     * for plain ones, so that both give the same bits. */
    int (*prefers)(const fb_gemm_problem *p);
} fb_cpu_gemm_impl;

typedef struct fb_cpu_mlp_impl {
    const char *name;
    int threading;
    int (*applies)(const fb_cpu_call *c, const fb_mlp_problem *p);
    size_t (*workspace)(const fb_mlp_problem *p, int threads, int packed);
    /* Wg, Wu and Wd (and what the entry derives from them) packed. */
    size_t (*pack_bytes)(const fb_mlp_problem *p);
    void (*pack)(const fb_mlp_problem *p, int threads, void *dst);
    fb_status (*run)(const fb_cpu_call *c, const fb_mlp_problem *p,
                     char *path, size_t len);
    int (*prefers)(const fb_mlp_problem *p); /* as the gemm's */
} fb_cpu_mlp_impl;

/* The tables, in the order they are tried; each ends with OpenBLAS,
 * which takes every call its integers can hold. */
extern const fb_cpu_gemm_impl *const fb_cpu_gemm_impls[];
extern const fb_cpu_mlp_impl *const fb_cpu_mlp_impls[];

/* The entries (their files say how each works). */
extern const fb_cpu_gemm_impl fb_cpu_gemm_small_m;  /* cpu_small_m_gemm.c */
extern const fb_cpu_gemm_impl fb_cpu_gemm_small_m_avx2; /* the same file */
extern const fb_cpu_gemm_impl fb_cpu_gemm_bf16_amx; /* cpu_bf16_gemm.c */
extern const fb_cpu_gemm_impl fb_cpu_gemm_bf16;     /* the same file */
extern const fb_cpu_gemm_impl fb_cpu_gemm_small_k;  /* cpu_f32_small_k.c */
extern const fb_cpu_gemm_impl fb_cpu_gemm_f32;      /* cpu_f32_gemm.c */
extern const fb_cpu_gemm_impl fb_cpu_gemm_openblas; /* cpu_blas_gemm.c */
extern const fb_cpu_mlp_impl fb_cpu_mlp_small_m;    /* cpu_small_m_mlp.c */
extern const fb_cpu_mlp_impl fb_cpu_mlp_small_m_avx2; /* the same file */
extern const fb_cpu_mlp_impl fb_cpu_mlp_bf16_amx;   /* cpu_bf16_mlp.c */
extern const fb_cpu_mlp_impl fb_cpu_mlp_bf16;       /* the same file */
extern const fb_cpu_mlp_impl fb_cpu_mlp_small_k;    /* cpu_f32_mlp_small_k.c */
extern const fb_cpu_mlp_impl fb_cpu_mlp_f32;        /* cpu_f32_mlp.c */
extern const fb_cpu_mlp_impl fb_cpu_mlp_openblas;   /* cpu_blas_mlp.c */

/* The threads an entry of this threading gets for a call of this many
 * flops, at most cap (0: no cap; a plan's count). */
int fb_cpu_threads_for(fb_handle h, int threading, double flops, int cap);

/* The first entry that takes p and that the shape rule prefers (only the
 * one named forced, if that is not NULL, wherever it applies), with
 * c->threads set for it; NULL if none. c->h and c->packed are the
 * caller's. */
const fb_cpu_gemm_impl *fb_cpu_gemm_choose(fb_cpu_call *c,
                                           const fb_gemm_problem *p,
                                           const char *forced, int cap);
const fb_cpu_mlp_impl *fb_cpu_mlp_choose(fb_cpu_call *c,
                                         const fb_mlp_problem *p,
                                         const char *forced, int cap);

/* Y's rows [r0, r0 + rows) = yacc + bd (bd fp32, may be NULL), stored in
 * the output type: the last step of the MLPs that sum Y in fp32. */
void fb_cpu_mlp_store_rows(const fb_mlp_problem *p, const float *bd,
                           const float *yacc, int64_t ldyacc, int64_t r0,
                           int64_t rows);

/* The work of a call, for the thread count (fb_cpu_threads): its flops,
 * or where so few token rows make it a stream of its weights (fp32 below
 * 16 rows, 16-bit below 8), eight a weight byte: one thread's read rate
 * is well below two's, and from 256 KiB of weights a second thread paid
 * for its wake-up in calls back to back (docs/cpu-kernels.md). A plan
 * sizes its threads by the same measure, so it runs a call on the count
 * the plain call takes. */
static inline double fb_cpu_gemm_flops(const fb_gemm_problem *p)
{
    const double k = (double)(p->k > 0 ? p->k : 1);
    const double flops = 2.0 * (double)p->m * (double)p->n * k;
    const double weights =
        (double)(p->weight_is_a ? p->m : p->n) * k *
        (double)fb_dtype_size(p->dtype);
    return flops > 8.0 * weights ? flops : 8.0 * weights;
}

static inline double fb_cpu_mlp_flops(const fb_mlp_problem *p)
{
    const double k = (double)(p->k > 0 ? p->k : 1);
    const double weights =
        2.0 * (double)p->h * k + (double)p->h * (double)p->n;
    const double flops = 2.0 * (double)p->m * weights;
    const double bytes = weights * (double)fb_dtype_size(p->dtype);
    return flops > 8.0 * bytes ? flops : 8.0 * bytes;
}

#endif /* FB_CPU_IMPL_H */
