/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_runner.h -- the GPU side of the benchmark. Without CUDA (or without
 * a device) bench_gpu_open says why and the benchmark runs on the CPU.
 */
#ifndef FB_BENCH_GPU_RUNNER_H
#define FB_BENCH_GPU_RUNNER_H

#include <stddef.h>
#include "bench.h"
#include "bench_report.h"

/* Open device 0, make the stream and cuBLAS handle, and measure the GPU
 * ceilings into cl. 0, or -1 with the reason in why. */
int bench_gpu_open(const bench_options *opt, bench_ceilings *cl, char *why,
                   size_t len);

/* Rows for the eager baseline, the GEMMs alone, and each selected fusedblas
 * GPU path go to rep. */
void bench_run_gpu_case(const bench_options *opt, const bench_ceilings *cl,
                        const bench_case *c, bench_report *rep);

void bench_gpu_close(void);

#endif /* FB_BENCH_GPU_RUNNER_H */
