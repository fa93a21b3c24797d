/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fusedblas_bench.c -- fusedblas-bench: what fusedblas buys on this
 * machine, in one command.
 *
 * Measures the machine's ceilings, then runs each selected workload on the
 * CPU (fusedblas/cpu, OpenBLAS + pass, the GEMMs alone, oneDNN) and, where
 * a CUDA device is usable, on the GPU (cuBLAS + eager kernels, the GEMMs
 * alone, fusedblas's cuda-lt, cuda-fused and cuda paths), all on the same
 * buffers in this one process. Prints an aligned table on stdout (progress
 * on stderr), and optionally a CSV and gnuplot PNGs.
 *
 * Exit status: 0; 1 if an implementation failed or disagreed with the
 * baseline (a benchmark of wrong answers is no benchmark); 2 on bad usage.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "bench_ceilings.h"
#include "bench_options.h"
#include "bench_plot.h"
#include "bench_report.h"
#include "bench_stats.h"
#include "bench_workloads.h"
#include "cpu_runner.h"
#include "gpu_runner.h"

static void list_cases(const bench_options *opt, const bench_case_list *l)
{
    for (int i = 0; i < l->n; i++) {
        const bench_case *c = &l->v[i];
        char shape[40];
        bench_case_shape(c, shape, sizeof shape);
        printf("%-14s %-4s %-4s %-22s %-9s bias=%d  %s%s\n", c->group,
               bench_routine_name(c->routine), bench_dtype_name(c->dtype), shape,
               bench_act_name(c->act), c->bias,
               bench_case_runs_on(opt, c, 0) ? "cpu " : "",
               bench_case_runs_on(opt, c, 1) ? "gpu" : "");
    }
}

/* results.csv -> results-ceilings.csv */
static void ceilings_path(const char *csv, char *buf, size_t len)
{
    size_t n = strlen(csv);
    if (n > 4 && !strcmp(csv + n - 4, ".csv"))
        snprintf(buf, len, "%.*s-ceilings.csv", (int)(n - 4), csv);
    else
        snprintf(buf, len, "%s-ceilings.csv", csv);
}

int main(int argc, char **argv)
{
    bench_options opt;
    bench_options_default(&opt);
    if (bench_options_parse(argc, argv, &opt) != 0)
        return 2;
    if (opt.threads > 0) {
        omp_set_num_threads(opt.threads);
        openblas_set_num_threads(opt.threads);
    }
    bench_case_list cases;
    if (bench_cases_build(&opt, &cases) != 0) {
        fprintf(stderr, "fusedblas-bench: out of memory\n");
        return 1;
    }
    if (opt.list) {
        list_cases(&opt, &cases);
        bench_cases_free(&cases);
        return 0;
    }

    bench_ceilings cl;
    memset(&cl, 0, sizeof cl);
    int want_gpu = opt.backends.cuda || opt.backends.cuda_lt || opt.backends.cuda_fused;
    int run_cpu = opt.backends.cpu;
    int ncpu = 0, ngpu = 0;
    for (int i = 0; i < cases.n; i++) {
        ncpu += run_cpu && bench_case_runs_on(&opt, &cases.v[i], 0);
        ngpu += bench_case_runs_on(&opt, &cases.v[i], 1);
    }
    fprintf(stderr, "fusedblas-bench: measuring the machine's ceilings\n");
    bench_ceilings_cpu(&opt, &cl);
    char why[256] = "not requested (--backend)";
    int have_gpu = want_gpu && ngpu > 0 && bench_gpu_open(&opt, &cl, why, sizeof why) == 0;
    if (want_gpu && !have_gpu)
        fprintf(stderr, "fusedblas-bench: no GPU runs: %s\n", why);

    bench_print_ceilings(stdout, &cl, have_gpu);
    if (!have_gpu)
        printf("GPU: none (%s)\n\n", why);
    if (cl.load_avg > 0.5 * cl.cpu_threads)
        fprintf(stderr, "fusedblas-bench: warning: load average %.2f on %d threads; "
                        "CPU timings will be disturbed\n", cl.load_avg, cl.cpu_threads);
    fflush(stdout);

    bench_report rep = {0};
    double start = bench_now();
    int skipped_for_time = 0;
    int done = 0, total = ncpu + (have_gpu ? ngpu : 0);
    for (int pass = 0; pass < 2; pass++) {
        int gpu = pass == 1;
        if ((gpu && !have_gpu) || (!gpu && !run_cpu))
            continue;
        for (int i = 0; i < cases.n; i++) {
            const bench_case *c = &cases.v[i];
            if (!bench_case_runs_on(&opt, c, gpu))
                continue;
            char shape[40];
            bench_case_shape(c, shape, sizeof shape);
            fprintf(stderr, "[%d/%d] %s %s %s %s %s\n", ++done, total,
                    gpu ? "gpu" : "cpu", c->group, bench_routine_name(c->routine),
                    bench_dtype_name(c->dtype), shape);
            if (opt.budget_s > 0 && bench_now() - start > opt.budget_s) {
                skipped_for_time++;
                continue;
            }
            if (gpu)
                bench_run_gpu_case(&opt, &cl, c, &rep);
            else
                bench_run_cpu_case(&opt, &cl, c, &rep);
        }
    }
    if (have_gpu)
        bench_gpu_close();

    bench_print_table(stdout, &rep);
    if (skipped_for_time)
        printf("\n%d case(s) not run: past the --budget of %.0f s.\n",
               skipped_for_time, opt.budget_s);
    int status = 0;
    for (int i = 0; i < rep.n; i++)
        if (rep.v[i].outcome == BENCH_FAILED || rep.v[i].check_ok == 0)
            status = 1;
    if (status)
        printf("\nSome implementation FAILED or disagreed with the baseline "
               "(check = BAD); see the rows above.\n");
    if (opt.csv) {
        char cpath[1024];
        ceilings_path(opt.csv, cpath, sizeof cpath);
        if (bench_write_csv(opt.csv, &rep) != 0 ||
            bench_write_ceilings_csv(cpath, &cl) != 0) {
            fprintf(stderr, "fusedblas-bench: cannot write %s\n", opt.csv);
            status = 1;
        } else {
            fprintf(stderr, "fusedblas-bench: wrote %s and %s\n", opt.csv, cpath);
        }
    }
    if (opt.markdown && bench_write_markdown(opt.markdown, &rep, &cl) != 0) {
        fprintf(stderr, "fusedblas-bench: cannot write %s\n", opt.markdown);
        status = 1;
    }
    if (opt.plot_dir && bench_plot(&rep, opt.plot_dir, opt.gnuplot) < 0)
        status = 1;
    bench_report_free(&rep);
    bench_cases_free(&cases);
    return status;
}
