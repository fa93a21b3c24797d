/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_report.h -- the results: derived figures (rate, bandwidth, fraction
 * of the roofline, speedups), the aligned table, the CSV, the progress lines.
 */
#ifndef FB_BENCH_REPORT_H
#define FB_BENCH_REPORT_H

#include <stdio.h>
#include "bench.h"

typedef struct bench_report {
    bench_row *v;
    int n, cap;
} bench_report;

/* 0, or -1 if out of memory. */
int bench_report_add(bench_report *r, const bench_row *row);
void bench_report_free(bench_report *r);

/* Fill the derived figures of the n rows of one case on one device: rate,
 * bytes per second, fraction of the roofline, and each row's speedup over
 * the unfused baseline (x_base), the other library or our cuda-lt path
 * (x_alt: oneDNN on the CPU; cuda-lt on the GPU), and the GEMMs alone
 * (x_gemm). */
void bench_finish_case(bench_row *rows, int n, const bench_ceilings *cl,
                       int gpu, int tf32);

/* One line on stderr as each measurement ends. */
void bench_progress(const bench_row *row);

/* The machine and its ceilings, then the table. */
void bench_print_ceilings(FILE *f, const bench_ceilings *cl, int have_gpu);
void bench_print_table(FILE *f, const bench_report *r);

/* The table in Markdown, one section per device and workload group, for
 * bench/RESULTS.md. 0 or -1. */
int bench_write_markdown(const char *path, const bench_report *r,
                         const bench_ceilings *cl);

/* CSV of every row; and the ceilings as name,value rows. 0 or -1. */
int bench_write_csv(const char *path, const bench_report *r);
int bench_write_ceilings_csv(const char *path, const bench_ceilings *cl);

#endif /* FB_BENCH_REPORT_H */
