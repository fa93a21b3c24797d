/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_options.c -- the command line of fusedblas-bench.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_memory.h"
#include "bench_options.h"
#include "bench_workloads.h"

void bench_usage(FILE *f)
{
    fprintf(f,
"usage: fusedblas-bench [options]\n"
"Times fusedblas against the baselines users run today, on the same buffers\n"
"in one process: OpenBLAS + a vectorised pass and oneDNN on the CPU; cuBLAS +\n"
"eager elementwise kernels on the GPU; and fusedblas's cpu, cuda-lt,\n"
"cuda-fused and cuda (shape rule) paths, wherever they are available.\n"
"\n"
"  --routine gemm|mlp|all     which routine (default all)\n"
"  --backend LIST             cpu, cuda, cuda-lt, cuda-fused, gpu (= the three\n"
"                             GPU paths), all (default); baselines follow\n"
"  --dtype LIST               f32, f16, bf16, all (default: each workload's own)\n"
"  --group LIST               seed-mlp, seed-linear, decode-mlp, decode-mlp-768,\n"
"                             decode-gemm, prefill-mlp, prefill-gemm, tiny-mlp,\n"
"                             cpu-gemm (default: all; on the CPU a subset, see --all)\n"
"  --shape m,k,n | m,k,h,n    one custom gemm or MLP shape instead of the workloads\n"
"  --act NAME                 none, relu, gelu_tanh (default), gelu_erf, silu\n"
"  --bias 0|1                 biases for --shape (default: gemm 1, mlp 0)\n"
"  --all                      every workload on the CPU too (slow on few cores)\n"
"  --quick                    small shapes, few runs: seconds on a CPU (for CI)\n"
"  --reps N                   most timed runs per measurement (CPU 100, GPU 200)\n"
"  --threads N                OpenMP threads for everything on the CPU\n"
"  --mem-budget MB            host memory one case may use (default: 1/4 of RAM, at most 6144)\n"
"  --gpu-mem-budget MB        device memory one case may use (default: 80%% free)\n"
"  --tf32                     fp32 on the GPU may use TF32 (ours and cuBLAS)\n"
"  --weights-kn               gemm: W stored k x n (B not transposed, BLAS's\n"
"                             NN) instead of nn.Linear's n x k; GPU only\n"
"  --no-check                 do not compare outputs with the baseline\n"
"  --csv FILE                 write every row as CSV (ceilings beside it)\n"
"  --md FILE                  write the table as Markdown (for bench/RESULTS.md)\n"
"  --plot-dir DIR             write gnuplot PNGs (and their data) into DIR\n"
"  --gnuplot PATH             the gnuplot to use (default: gnuplot in PATH)\n"
"  --seed N                   random data seed (default 1)\n"
"  --budget SECONDS           start no case after this long; the rest are skipped\n"
"  --list                     print the selected cases and exit\n"
"  --help\n");
}

/* Comma list -> dtype bit mask; 0 and -1 on error. */
static int parse_dtypes(const char *s, int *mask)
{
    *mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        fb_dtype t;
        if (!strcmp(tok, "all"))
            *mask |= 7;
        else if (bench_parse_dtype(tok, &t) == 0)
            *mask |= 1 << t;
        else
            return -1;
    }
    return *mask ? 0 : -1;
}

static int parse_backends(const char *s, bench_backends *b)
{
    memset(b, 0, sizeof *b);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "all"))
            b->cpu = b->cuda = b->cuda_lt = b->cuda_fused = 1;
        else if (!strcmp(tok, "cpu"))
            b->cpu = 1;
        else if (!strcmp(tok, "gpu"))
            b->cuda = b->cuda_lt = b->cuda_fused = 1;
        else if (!strcmp(tok, "cuda"))
            b->cuda = 1;
        else if (!strcmp(tok, "cuda-lt"))
            b->cuda_lt = 1;
        else if (!strcmp(tok, "cuda-fused"))
            b->cuda_fused = 1;
        else
            return -1;
    }
    return 0;
}

static int parse_shape(const char *s, bench_options *o)
{
    long long v[5];
    int n = sscanf(s, "%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4]);
    if (n != 3 && n != 4)
        return -1;
    for (int i = 0; i < n; i++) {
        if (v[i] <= 0)
            return -1;
        o->shape[i] = v[i];
    }
    o->shape_len = n;
    o->have_shape = 1;
    return 0;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

void bench_options_default(bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->backends.cpu = o->backends.cuda = o->backends.cuda_lt = o->backends.cuda_fused = 1;
    o->routine_mask = 3;
    o->act = FB_ACT_GELU_TANH;
    o->bias = -1;
    o->reps = 100;
    o->min_reps = 5;
    o->target_s = 0.5;
    o->gpu_reps = 200;
    double ram_mb = (double)bench_host_memory_bytes() / 1048576.0;
    o->mem_budget_mb = ram_mb > 0 ? ram_mb / 4 : 2048;
    if (o->mem_budget_mb > 6144)
        o->mem_budget_mb = 6144;
    o->check = 1;
    o->seed = 1;
}

int bench_options_parse(int argc, char **argv, bench_options *o)
{
    int reps_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
#define NEED_VALUE                                                            \
    do {                                                                      \
        if (v == NULL) {                                                      \
            fprintf(stderr, "fusedblas-bench: %s needs a value\n", a);        \
            return -1;                                                        \
        }                                                                     \
        i++;                                                                  \
    } while (0)
#define BAD_VALUE                                                             \
    do {                                                                      \
        fprintf(stderr, "fusedblas-bench: bad value '%s' for %s\n", v, a);    \
        return -1;                                                            \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--routine")) {
            NEED_VALUE;
            if (!strcmp(v, "gemm"))
                o->routine_mask = 1 << BENCH_GEMM;
            else if (!strcmp(v, "mlp"))
                o->routine_mask = 1 << BENCH_MLP;
            else if (!strcmp(v, "all"))
                o->routine_mask = 3;
            else
                BAD_VALUE;
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE;
            if (parse_backends(v, &o->backends) != 0)
                BAD_VALUE;
        } else if (!strcmp(a, "--dtype")) {
            NEED_VALUE;
            if (parse_dtypes(v, &o->dtype_mask) != 0)
                BAD_VALUE;
        } else if (!strcmp(a, "--group")) {
            NEED_VALUE;
            o->groups = v;
        } else if (!strcmp(a, "--shape")) {
            NEED_VALUE;
            if (parse_shape(v, o) != 0)
                BAD_VALUE;
        } else if (!strcmp(a, "--act")) {
            NEED_VALUE;
            if (bench_parse_act(v, &o->act) != 0)
                BAD_VALUE;
            o->act_given = 1;
        } else if (!strcmp(a, "--bias")) {
            NEED_VALUE;
            if (parse_int(v, 0, 1, &n) != 0)
                BAD_VALUE;
            o->bias = (int)n;
        } else if (!strcmp(a, "--all")) {
            o->all = 1;
        } else if (!strcmp(a, "--quick")) {
            o->quick = 1;
        } else if (!strcmp(a, "--reps")) {
            NEED_VALUE;
            if (parse_int(v, 1, 100000, &n) != 0)
                BAD_VALUE;
            o->reps = o->gpu_reps = (int)n;
            reps_given = 1;
        } else if (!strcmp(a, "--threads")) {
            NEED_VALUE;
            if (parse_int(v, 1, 4096, &n) != 0)
                BAD_VALUE;
            o->threads = (int)n;
        } else if (!strcmp(a, "--mem-budget")) {
            NEED_VALUE;
            if (parse_int(v, 1, 1ll << 30, &n) != 0)
                BAD_VALUE;
            o->mem_budget_mb = (double)n;
        } else if (!strcmp(a, "--gpu-mem-budget")) {
            NEED_VALUE;
            if (parse_int(v, 1, 1ll << 30, &n) != 0)
                BAD_VALUE;
            o->gpu_mem_budget_mb = (double)n;
        } else if (!strcmp(a, "--tf32")) {
            o->tf32 = 1;
        } else if (!strcmp(a, "--weights-kn")) {
            o->weights_kn = 1;
        } else if (!strcmp(a, "--no-check")) {
            o->check = 0;
        } else if (!strcmp(a, "--csv")) {
            NEED_VALUE;
            o->csv = v;
        } else if (!strcmp(a, "--md")) {
            NEED_VALUE;
            o->markdown = v;
        } else if (!strcmp(a, "--plot-dir")) {
            NEED_VALUE;
            o->plot_dir = v;
        } else if (!strcmp(a, "--gnuplot")) {
            NEED_VALUE;
            o->gnuplot = v;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE;
            if (parse_int(v, 0, 1ll << 62, &n) != 0)
                BAD_VALUE;
            o->seed = (uint64_t)n;
        } else if (!strcmp(a, "--budget")) {
            NEED_VALUE;
            if (parse_int(v, 1, 1ll << 30, &n) != 0)
                BAD_VALUE;
            o->budget_s = (double)n;
        } else if (!strcmp(a, "--list")) {
            o->list = 1;
        } else {
            fprintf(stderr, "fusedblas-bench: unknown option '%s' (see --help)\n", a);
            return -1;
        }
#undef NEED_VALUE
#undef BAD_VALUE
    }
    if (o->weights_kn && o->backends.cpu) {
        fprintf(stderr, "fusedblas-bench: --weights-kn is for the GPU "
                        "backends (--backend cuda, gpu, ...)\n");
        return -1;
    }
    if (o->quick) {
        o->target_s = 0.02;
        o->min_reps = 3;
        if (!reps_given)
            o->reps = 10;
    }
    if (o->reps < o->min_reps)
        o->min_reps = o->reps;
    return 0;
}
