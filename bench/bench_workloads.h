/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_workloads.h -- the workloads of docs/DESIGN.md and the CPU issue, which
 * of them run where, and what each must compute and move at the least.
 */
#ifndef FB_BENCH_WORKLOADS_H
#define FB_BENCH_WORKLOADS_H

#include <stddef.h>
#include "bench.h"

typedef struct bench_case_list {
    bench_case *v;
    int n, cap;
} bench_case_list;

/* The cases the options select (all devices together; each device then
 * keeps its own subset with bench_case_runs_on). 0, or -1 if out of memory. */
int bench_cases_build(const bench_options *opt, bench_case_list *out);
void bench_cases_free(bench_case_list *l);

/* Whether case c runs on the CPU (gpu == 0) or the GPU (gpu != 0). */
int bench_case_runs_on(const bench_options *opt, const bench_case *c, int gpu);

/* Floating-point operations of the GEMMs (the epilogue is not counted). */
double bench_case_flops(const bench_case *c);
/* The fewest bytes the call must move: each input read once, the output
 * written once, in the storage type. */
double bench_case_bytes(const bench_case *c);
/* The same with the weights in e4m3 (one byte each) and an fp32 scale per
 * weight row: what the e4m3 rows move. */
double bench_case_bytes_e4m3(const bench_case *c);

const char *bench_dtype_name(fb_dtype t);
const char *bench_act_name(fb_activation a);
const char *bench_routine_name(bench_routine r);
/* Parse "f32"/"fp32"/"float", "f16"/"fp16"/"half", "bf16". 0 or -1. */
int bench_parse_dtype(const char *s, fb_dtype *t);
int bench_parse_act(const char *s, fb_activation *a);
/* "m,k,n" for a gemm, "m,k,h,n" for an MLP. */
void bench_case_shape(const bench_case *c, char *buf, size_t len);

#endif /* FB_BENCH_WORKLOADS_H */
