/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu.h -- the CPU backend: OpenBLAS for the GEMMs, OpenMP for the panels,
 * bias and activation applied to each panel of C while it is in cache.
 */
#ifndef FB_CPU_H
#define FB_CPU_H

#include <stddef.h>
#include "handle.h"
#include "problem.h"

/* Run a checked call on the first implementation that takes it
 * (cpu_impl.h), or on the one named forced (FB_STATUS_NOT_SUPPORTED if it
 * does not take the call); path receives what ran, or why it failed. */
fb_status fb_cpu_gemm(fb_handle h, const fb_gemm_problem *p,
                      const char *forced, char *path, size_t len);
fb_status fb_cpu_mlp(fb_handle h, const fb_mlp_problem *p,
                     const char *forced, char *path, size_t len);

/* Plans (cpu_plan.c): g or q is the plan's problem with m at its max_m
 * (a gemm's tokens) and no activations or output. Creation decides the
 * implementation for every m, packs the weights of those that pack them
 * and reserves the workspace; msg says why it failed. */
typedef struct fb_cpu_plan fb_cpu_plan;
fb_status fb_cpu_plan_create(fb_handle h, const fb_gemm_problem *g,
                             const fb_mlp_problem *q, const char *forced,
                             fb_cpu_plan **plan, char *msg, size_t len);
fb_status fb_cpu_plan_gemm(fb_handle h, const fb_cpu_plan *plan,
                           const fb_gemm_problem *p, char *path, size_t len);
fb_status fb_cpu_plan_mlp(fb_handle h, const fb_cpu_plan *plan,
                          const fb_mlp_problem *p, char *path, size_t len);
/* The implementation m rows would run ("" if none takes them). */
const char *fb_cpu_plan_impl(const fb_cpu_plan *plan, int64_t m);
void fb_cpu_plan_destroy(fb_cpu_plan *plan);

/* Non-zero if name is one of the CPU backend's implementations. */
int fb_cpu_knows(const char *name);

/* Non-zero if v fits OpenBLAS's integer (32-bit in the usual builds).
 * Asked only where OpenBLAS is about to be called: a leading dimension
 * beyond it is then kept from OpenBLAS by copying into panels, a k beyond
 * it is not supported; our own kernels take int64_t. */
int fb_cpu_fits_blasint(int64_t v);

/* Before a call that reaches OpenBLAS on `threads` of our threads (1: one
 * call, which OpenBLAS may thread itself): non-zero if OpenBLAS can get
 * the buffers its first call on those threads maps, else 0 with the
 * reason in why; the caller then returns FB_STATUS_ALLOC_FAILED, since
 * OpenBLAS would retry a failed map forever (cpu_blas_buffers.c). After
 * such a call has run, fb_cpu_blas_ran says so, and later calls on as
 * many threads are not asked about again. */
int fb_cpu_blas_buffers(int threads, char *why, size_t len);
void fb_cpu_blas_ran(int threads);

/* How many OpenMP threads a call of this many flops should use when each
 * thread calls OpenBLAS: 1 unless OpenBLAS is its OpenMP build
 * (cpu_threads.c). Never more than the machine can run for the process
 * (its CPUs, OpenMP's thread limit), whatever the handle asks. */
int fb_cpu_threads(fb_handle h, double flops);

/* First thing in each thread of a parallel region whose threads call
 * OpenBLAS: OpenBLAS's OpenMP build then runs each call on the calling
 * thread, in a team of one as in a larger team, so a call runs on the
 * threads it was given. (A pthreads OpenBLAS threads each call itself,
 * whatever this says.) */
void fb_cpu_blas_on_this_thread(void);

/* The same for code that never calls OpenBLAS (the packed fp32 and bf16
 * kernels, the small-k and decode kernels): the handle's or OpenMP's
 * thread count whatever OpenBLAS's threading, since there is nothing of
 * OpenBLAS's to oversubscribe (fb_cpu_threads would give them one thread
 * under a pthreads OpenBLAS). */
int fb_cpu_own_threads(fb_handle h, double flops);

/* "openblas-openmp" when OpenBLAS runs each panel's GEMM on the calling
 * OpenMP thread (the arrangement we want), else a description of the
 * fallback: with a pthreads OpenBLAS our panel loop runs on one thread and
 * OpenBLAS threads each GEMM itself, so the two never oversubscribe. */
const char *fb_cpu_arrangement(void);

#endif /* FB_CPU_H */
