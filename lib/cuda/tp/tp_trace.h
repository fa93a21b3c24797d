/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_trace.h -- a benchmark's view into one tensor-parallel MLP call: CUDA
 * events recorded around each chunk's compute (on the handle's stream) and
 * around each chunk's communication (on the communication stream: its
 * all-reduce, or its reduce-scatter, epilogue and all-gather), so that
 * bench/tp_bench.c can show how much of it ran under compute.
 *
 * Plain C, no CUDA types: the bench includes it too. The module exports
 * one setter, FB_TP_TRACE_SYMBOL, which a benchmark finds with dlsym; the
 * library itself never calls it, and a thread that never set a trace pays
 * one pointer test per call.
 */
#ifndef FB_CUDA_TP_TRACE_H
#define FB_CUDA_TP_TRACE_H

#define FB_TP_TRACE_MAX_CHUNKS 16
#define FB_TP_TRACE_SYMBOL "fb_cuda_tp_trace_v1"

typedef struct fb_tp_trace {
    /* cudaEvent_t, made by the caller on the handle's device with timing
     * on; recorded by the next tensor-parallel MLP call on this thread */
    void *compute_begin[FB_TP_TRACE_MAX_CHUNKS];
    void *compute_end[FB_TP_TRACE_MAX_CHUNKS];
    void *reduce_begin[FB_TP_TRACE_MAX_CHUNKS];
    void *reduce_end[FB_TP_TRACE_MAX_CHUNKS];
    int chunks; /* set by the call: how many it recorded (1: unchunked) */
} fb_tp_trace;

/* Set (or with NULL clear) this thread's trace. */
typedef void (*fb_tp_trace_setter)(fb_tp_trace *trace);

#endif /* FB_CUDA_TP_TRACE_H */
