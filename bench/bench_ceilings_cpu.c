/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ceilings_cpu.c -- the CPU's measured ceilings.
 *
 * Bandwidth: a parallel read (sum) of a 512 MB array and a parallel copy
 * between two 256 MB arrays, both far beyond the last-level cache; the
 * best of several passes (a ceiling is what the machine can do: on a shared
 * VM the median moves with the neighbours, the best much less). Compute: OpenBLAS sgemm (and sbgemm where
 * configure found it) and oneDNN's f32 and bf16 matmul on square matrices
 * large enough to be compute-bound, and each data type's arithmetic peak
 * (bench_peak_cpu.c).
 * The roofline's byte-time uses the read bandwidth: the workloads read far
 * more than they write (the decode weights above all).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "config.h"
#include "bench_ceilings.h"
#include "bench_memory.h"
#include "bench_peak_cpu.h"
#include "bench_random.h"
#include "bench_stats.h"
#include "cpu_impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    __GNUC__ >= 11
#define CEIL_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CEIL_CLONES
#endif

static void cpu_name(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ')
                    p++;
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, len, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static double load_average(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Sixteen independent sums, so the adds do not wait on each other. */
CEIL_CLONES
static float sum_range(const float *a, int64_t n)
{
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++)
            acc[j] += a[i + j];
    float s = 0;
    for (; i < n; i++)
        s += a[i];
    for (int j = 0; j < 16; j++)
        s += acc[j];
    return s;
}

static double read_pass(const float *a, int64_t n, volatile float *sink)
{
    double t0 = bench_now();
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
        int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        total += sum_range(a + lo, hi - lo);
    }
    double dt = bench_now() - t0;
    *sink = total;
    return dt;
}

static double copy_pass(float *dst, const float *src, int64_t n)
{
    double t0 = bench_now();
#pragma omp parallel
    {
        int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
    }
    return bench_now() - t0;
}

static void measure_bandwidth(const bench_options *opt, bench_ceilings *out)
{
    int64_t n = (opt->quick ? 64 : 512) * (int64_t)(1 << 20) / 4;
    int reps = opt->quick ? 3 : 7;
    float *a = bench_host_alloc((size_t)n * 4);
    if (a == NULL)
        return;
    bench_fill_uniform(FB_DTYPE_F32, a, n, 1, 1.0f);
    double t[16];
    volatile float sink;
    read_pass(a, n, &sink);
    for (int r = 0; r < reps; r++)
        t[r] = read_pass(a, n, &sink);
    bench_stats st;
    bench_stats_from(t, reps, &st);
    out->cpu_read_gbs = (double)n * 4 / st.min * 1e-9;
    /* copy: two halves of the same memory */
    int64_t half = n / 2;
    copy_pass(a + half, a, half);
    for (int r = 0; r < reps; r++)
        t[r] = copy_pass(a + half, a, half);
    bench_stats_from(t, reps, &st);
    out->cpu_copy_gbs = 2.0 * (double)half * 4 / st.min * 1e-9;
    bench_host_free(a);
}

static double gemm_rate(int n, int reps, int bf16)
{
    size_t es = bf16 ? 2 : 4;
    void *a = bench_host_alloc((size_t)n * n * es);
    void *b = bench_host_alloc((size_t)n * n * es);
    float *c = bench_host_alloc((size_t)n * n * 4);
    double rate = 0;
    if (a && b && c) {
        fb_dtype t = bf16 ? FB_DTYPE_BF16 : FB_DTYPE_F32;
        bench_fill_uniform(t, a, (int64_t)n * n, 2, 1.0f);
        bench_fill_uniform(t, b, (int64_t)n * n, 3, 1.0f);
        double ts[16];
        for (int r = -1; r < reps; r++) {
            double t0 = bench_now();
#ifdef HAVE_CBLAS_SBGEMM
            if (bf16)
                cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f,
                             a, n, b, n, 0.0f, c, n);
            else
#endif
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f,
                            a, n, b, n, 0.0f, c, n);
            if (r >= 0)
                ts[r] = bench_now() - t0;
        }
        bench_stats st;
        bench_stats_from(ts, reps, &st);
        rate = 2.0 * n * (double)n * n / st.min * 1e-9;
    }
    bench_host_free(a);
    bench_host_free(b);
    bench_host_free(c);
    return rate;
}

void bench_ceilings_cpu(const bench_options *opt, bench_ceilings *out)
{
    cpu_name(out->cpu_name, sizeof out->cpu_name);
    out->cpu_threads = omp_get_max_threads();
#ifdef HAVE_OPENBLAS_GET_CONFIG
    /* names the kernel family OpenBLAS picked for this CPU: a DYNAMIC_ARCH
     * build that does not know the CPU falls back to an older one */
    snprintf(out->cpu_blas, sizeof out->cpu_blas, "%.150s", openblas_get_config());
#endif
    out->cpu_llc_bytes = bench_host_llc_bytes();
    out->load_avg = load_average();
    measure_bandwidth(opt, out);
    int n = opt->quick ? 1024 : 3072, reps = opt->quick ? 2 : 3;
    out->cpu_sgemm_gflops = gemm_rate(n, reps, 0);
#ifdef HAVE_CBLAS_SBGEMM
    out->cpu_sbgemm_gflops = gemm_rate(n, reps, 1);
#endif
    /* oneDNN's JIT kernels can outrun OpenBLAS's: the machine's ceiling is
     * the best of both, and oneDNN gives a bf16 rate where OpenBLAS has no
     * sbgemm. */
    out->cpu_dnnl_f32_gflops = bench_onednn_gflops(FB_DTYPE_F32, n, reps);
    out->cpu_dnnl_bf16_gflops = bench_onednn_gflops(FB_DTYPE_BF16, n, reps);
    out->cpu_f32_peak_gflops = bench_cpu_peak_gflops(FB_DTYPE_F32, opt->quick);
    out->cpu_bf16_peak_gflops = bench_cpu_peak_gflops(FB_DTYPE_BF16, opt->quick);
    out->cpu_f16_peak_gflops = bench_cpu_peak_gflops(FB_DTYPE_F16, opt->quick);
}
