/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h -- what the parts of fusedblas-bench share: a workload ("case"),
 * the options, the machine's measured ceilings, and one measured result
 * ("row": one implementation of one case on one device).
 *
 * The benchmark times fusedblas against the code a user would otherwise
 * run, on the same buffers in the same process; see bench/RESULTS.md for
 * what each implementation name means.
 */
#ifndef FB_BENCH_H
#define FB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include "fusedblas.h"

typedef enum bench_routine {
    BENCH_GEMM = 0, /* Y = act(X W^T + b), nn.Linear + activation */
    BENCH_MLP = 1   /* mlp_geglu_forward */
} bench_routine;

/* One workload. Row-major, weights in nn.Linear's [out, in] layout:
 * gemm: X m x k, W n x k, bias n, Y m x n (h is 0);
 * mlp:  X m x k, Wg and Wu h x k, Wd n x h, Y m x n. */
typedef struct bench_case {
    const char *group; /* "seed-mlp", "decode-gemm", ... (static string) */
    bench_routine routine;
    fb_dtype dtype;
    fb_activation act;
    int64_t m, k, h, n;
    int bias;   /* 1: every bias vector present */
    int weights_kn; /* gemm: W stored k x n, B not transposed (GPU only) */
    int on_cpu; /* part of the CPU's default subset */
    int on_gpu; /* part of the GPU's default set */
    int quick;  /* part of --quick */
} bench_case;

/* Which implementations run, from --backend. */
typedef struct bench_backends {
    int cpu;        /* fusedblas/cpu and the CPU baselines */
    int cuda;       /* fusedblas/cuda: the module's shape rule picks */
    int cuda_lt;    /* fusedblas/cuda-lt */
    int cuda_fused; /* fusedblas/cuda-fused */
} bench_backends;

typedef struct bench_options {
    bench_backends backends;
    int routine_mask;       /* bit 1 << bench_routine */
    int dtype_mask;         /* bit 1 << fb_dtype; 0: each case's own */
    const char *groups;     /* comma list, NULL: all */
    int have_shape;         /* --shape given: run only that shape */
    int64_t shape[4];
    int shape_len;
    fb_activation act;      /* for --shape cases (others keep their own) */
    int act_given;
    int bias;               /* for --shape cases: -1 default */
    int quick;
    int all;                /* run every workload on the CPU too */
    int reps;               /* CPU: most timed runs per measurement */
    int min_reps;           /* CPU: fewest timed runs per measurement */
    double target_s;        /* CPU: aim for this much timed work */
    int gpu_reps;           /* GPU: most timed runs per measurement */
    int threads;            /* 0: OpenMP default */
    double mem_budget_mb;   /* host buffers of one case */
    double gpu_mem_budget_mb;
    int tf32;               /* fp32 on the GPU may use TF32 (ours and cuBLAS) */
    int weights_kn;         /* gemm: W stored k x n (--weights-kn) */
    int check;              /* compare outputs against the baseline */
    int list;               /* print the cases and exit */
    double budget_s;        /* stop starting cases after this long; 0: none */
    uint64_t seed;
    const char *csv;
    const char *markdown;   /* --md FILE */
    const char *plot_dir;
    const char *gnuplot;    /* NULL: look for "gnuplot" in PATH */
} bench_options;

/* The machine's measured ceilings; 0 where not measured. */
typedef struct bench_ceilings {
    char cpu_name[128];
    int cpu_threads;
    size_t cpu_llc_bytes;
    double cpu_read_gbs;     /* OpenMP read of a large array */
    double cpu_copy_gbs;     /* OpenMP copy, read + written bytes */
    double cpu_sgemm_gflops;     /* OpenBLAS sgemm, large square */
    double cpu_sbgemm_gflops;    /* OpenBLAS sbgemm, where configure found it */
    double cpu_dnnl_f32_gflops;  /* oneDNN f32 matmul, where available */
    double cpu_dnnl_bf16_gflops; /* oneDNN bf16 matmul, where the CPU has it */
    double cpu_f32_peak_gflops;  /* FMA on registers (bench_peak_cpu.c) */
    double cpu_bf16_peak_gflops; /* VDPBF16PS; 0 without AVX512-BF16 */
    double cpu_f16_peak_gflops;  /* AVX512-FP16 FMA; 0 without it */
    double load_avg;         /* 1-minute load average at start */
    char cpu_blas[160];      /* OpenBLAS's build and the kernels it chose */

    char gpu_name[128];
    size_t gpu_l2_bytes;
    double gpu_copy_gbs;     /* device-to-device copy, read + written */
    double gpu_f32_tflops;   /* cuBLAS sgemm without TF32 */
    double gpu_tf32_tflops;
    double gpu_f16_tflops;
    double gpu_bf16_tflops;
} bench_ceilings;

typedef struct bench_stats {
    double median, min, max, p10, p90; /* seconds */
    int reps;
} bench_stats;

typedef enum bench_kind {
    BENCH_OURS = 0,       /* a fusedblas path */
    BENCH_BASELINE = 1,   /* the unfused chain users run today */
    BENCH_ALT = 2,        /* the strongest other library (oneDNN) */
    BENCH_REFERENCE = 3   /* the GEMMs alone, no epilogue: a floor */
} bench_kind;

typedef enum bench_outcome {
    BENCH_RAN = 0,
    BENCH_NOT_SUPPORTED = 1, /* printed "n/a" */
    BENCH_UNAVAILABLE = 2,
    BENCH_FAILED = 3,
    BENCH_SKIPPED = 4        /* over the memory budget */
} bench_outcome;

typedef struct bench_row {
    bench_case c;
    const char *device; /* "cpu" or "gpu" */
    char impl[40];
    bench_kind kind;
    bench_outcome outcome;
    char path[96];      /* fb_handle_last_path for our rows */
    char note[160];
    int nsets;          /* input sets rotated through */
    bench_stats t;
    double gflops, gbs, roof;
    double x_base, x_alt, x_gemm; /* speedups; 0 where not applicable */
    double err;         /* max |y - y_ref| / max |y_ref|; <0 unchecked */
    int check_ok;       /* -1 unchecked, 0 mismatch, 1 agrees */
} bench_row;

/* The buffers of one input set (host or device pointers). A gemm uses x,
 * w, b, y; an MLP x, wg, bg, wu, bu, wd, bd, y. Biases are NULL when the
 * case has none. Several sets are rotated through when they fit in cache. */
typedef struct bench_set {
    void *x, *w, *b, *wg, *bg, *wu, *bu, *wd, *bd, *y;
} bench_set;

/* Implementation names, shared by the table, the CSV and the plots. */
#define BENCH_IMPL_CPU "fusedblas/cpu"
#define BENCH_IMPL_CPU_PLAN "fusedblas/cpu-plan"
#define BENCH_IMPL_CPU_E4M3 "fusedblas/cpu-e4m3"
#define BENCH_IMPL_OPENBLAS "openblas+pass"
#define BENCH_IMPL_OPENBLAS_GEMM "openblas-gemm-only"
#define BENCH_IMPL_ONEDNN "onednn"
#define BENCH_IMPL_ONEDNN_REORDERED "onednn-reordered"
#define BENCH_IMPL_EAGER "cublas+eager"
#define BENCH_IMPL_CUBLAS_GEMM "cublas-gemm-only"
#define BENCH_IMPL_CUDA "fusedblas/cuda"
#define BENCH_IMPL_CUDA_PLAN "fusedblas/cuda-plan"
#define BENCH_IMPL_CUDA_LT "fusedblas/cuda-lt"
#define BENCH_IMPL_CUDA_FUSED "fusedblas/cuda-fused"
#define BENCH_IMPL_CUDA_E4M3 "fusedblas/cuda-e4m3"

#endif /* FB_BENCH_H */
