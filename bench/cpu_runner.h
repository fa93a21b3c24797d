/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_runner.h -- time every CPU implementation on one case.
 */
#ifndef FB_BENCH_CPU_RUNNER_H
#define FB_BENCH_CPU_RUNNER_H

#include "bench.h"
#include "bench_report.h"

/* Rows for fusedblas/cpu and the CPU baselines go to rep. */
void bench_run_cpu_case(const bench_options *opt, const bench_ceilings *cl,
                        const bench_case *c, bench_report *rep);

#endif /* FB_BENCH_CPU_RUNNER_H */
