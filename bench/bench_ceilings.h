/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ceilings.h -- measure what the machine can do at best, so that
 * each result can be reported as a fraction of its roofline.
 */
#ifndef FB_BENCH_CEILINGS_H
#define FB_BENCH_CEILINGS_H

#include "bench.h"

/* CPU: name, threads, LLC, load, read and copy bandwidth (OpenMP, arrays
 * far larger than the caches), OpenBLAS sgemm and sbgemm and oneDNN f32
 * and bf16 GEMM rates, and the arithmetic peak of each data type. */
void bench_ceilings_cpu(const bench_options *opt, bench_ceilings *out);

/* The roofline time of case c on a device: the larger of its flop-time at
 * the measured compute ceiling of its data type and its byte-time at the
 * measured bandwidth. 0 if the ceilings are unknown. */
double bench_roofline_s(const bench_ceilings *cl, const bench_case *c, int gpu,
                        int tf32);
/* The same for a call that moves bytes (an e4m3 row's own count). */
double bench_roofline_bytes_s(const bench_ceilings *cl, const bench_case *c,
                              int gpu, int tf32, double bytes);

#endif /* FB_BENCH_CEILINGS_H */
