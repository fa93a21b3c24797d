/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_peak_cpu.h -- the CPU's arithmetic peak for one data type, measured
 * on registers alone (no memory, no library).
 */
#ifndef FB_BENCH_PEAK_CPU_H
#define FB_BENCH_PEAK_CPU_H

#include "bench.h"

/* 1 where the compiler knows the AVX512-BF16 (AVX512-FP16) intrinsics; with
 * an older one that type's peak is not measured (its rows use fp32's). */
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 9) ||  \
                            (!defined(__clang__) && __GNUC__ >= 10))
#define BENCH_PEAK_CAN_BF16 1
#else
#define BENCH_PEAK_CAN_BF16 0
#endif
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 14) || \
                            (!defined(__clang__) && __GNUC__ >= 12))
#define BENCH_PEAK_CAN_FP16 1
#else
#define BENCH_PEAK_CAN_FP16 0
#endif

/* GFLOP/s of the widest multiply-add this CPU has for type t, on every
 * OpenMP thread, best of several passes (shorter ones under quick). 0 where
 * the CPU has no arithmetic of that type (bf16 without AVX512-BF16, fp16
 * without AVX512-FP16: such data is converted and computed in fp32) or
 * where the compiler or the architecture offers no way to measure it. */
double bench_cpu_peak_gflops(fb_dtype t, int quick);

#endif /* FB_BENCH_PEAK_CPU_H */
