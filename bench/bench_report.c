/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_report.c -- derived figures, the table and the CSV.
 *
 * Speedups are ratios of medians measured in the same process on the same
 * buffers: x_base = t(unfused baseline) / t(row), so > 1 means the row is
 * faster than what users run today.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bench_ceilings.h"
#include "bench_report.h"
#include "bench_workloads.h"

int bench_report_add(bench_report *r, const bench_row *row)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 256;
        bench_row *v = realloc(r->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *row;
    return 0;
}

void bench_report_free(bench_report *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

static const bench_row *find(const bench_row *rows, int n, const char *impl)
{
    for (int i = 0; i < n; i++)
        if (rows[i].outcome == BENCH_RAN && !strcmp(rows[i].impl, impl))
            return &rows[i];
    return NULL;
}

void bench_finish_case(bench_row *rows, int n, const bench_ceilings *cl,
                       int gpu, int tf32)
{
    const bench_row *base = find(rows, n, gpu ? BENCH_IMPL_EAGER : BENCH_IMPL_OPENBLAS);
    const bench_row *alt = find(rows, n, gpu ? BENCH_IMPL_CUDA_LT : BENCH_IMPL_ONEDNN);
    /* A plan packs its weights once: it is compared with oneDNN's chain
     * on weights reordered once. */
    const bench_row *alt_once =
        gpu ? alt : find(rows, n, BENCH_IMPL_ONEDNN_REORDERED);
    const bench_row *gemm =
        find(rows, n, gpu ? BENCH_IMPL_CUBLAS_GEMM : BENCH_IMPL_OPENBLAS_GEMM);
    for (int i = 0; i < n; i++) {
        bench_row *w = &rows[i];
        if (w->outcome != BENCH_RAN || w->t.median <= 0)
            continue;
        double t = w->t.median;
        w->gflops = bench_case_flops(&w->c) / t * 1e-9;
        /* the e4m3 rows move their own bytes: one per weight, and the
         * scales */
        const double bytes = strstr(w->impl, "e4m3") != NULL
                                 ? bench_case_bytes_e4m3(&w->c)
                                 : bench_case_bytes(&w->c);
        w->gbs = bytes / t * 1e-9;
        double roof = bench_roofline_bytes_s(cl, &w->c, gpu, tf32, bytes);
        w->roof = roof > 0 ? roof / t : 0;
        w->x_base = base ? base->t.median / t : 0;
        const bench_row *a =
            strcmp(w->impl, BENCH_IMPL_CPU_PLAN) == 0 ? alt_once : alt;
        w->x_alt = a ? a->t.median / t : 0;
        w->x_gemm = gemm ? gemm->t.median / t : 0;
    }
}

static const char *outcome_word(bench_outcome o)
{
    switch (o) {
    case BENCH_RAN: return "ok";
    case BENCH_NOT_SUPPORTED: return "n/a";
    case BENCH_UNAVAILABLE: return "unavail";
    case BENCH_FAILED: return "FAILED";
    case BENCH_SKIPPED: return "skipped";
    }
    return "?";
}

static void fmt_time(char *buf, size_t len, double s)
{
    if (s < 1e-3)
        snprintf(buf, len, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else
        snprintf(buf, len, "%.3f s", s);
}

static void fmt_rate(char *buf, size_t len, double gflops)
{
    if (gflops >= 1000)
        snprintf(buf, len, "%.1f T", gflops * 1e-3);
    else
        snprintf(buf, len, "%.1f G", gflops);
}

static void fmt_ratio(char *buf, size_t len, double x)
{
    if (x > 0)
        snprintf(buf, len, "%.2f", x);
    else
        snprintf(buf, len, "-");
}

static const char *check_word(const bench_row *w)
{
    return w->check_ok < 0 ? "-" : w->check_ok ? "ok" : "BAD";
}

/* The columns of the table, as strings. */
typedef struct cells {
    char dev[8], group[24], dtype[8], shape[40], impl[40], time[24], spread[16],
        rate[24], gbs[16], roof[16], xb[16], xa[16], xg[16], check[8];
    char tail[sizeof(((bench_row *)0)->path) + sizeof(((bench_row *)0)->note) + 2];
} cells;

static void make_cells(const bench_row *w, cells *c)
{
    snprintf(c->dev, sizeof c->dev, "%s", w->device);
    snprintf(c->group, sizeof c->group, "%s", w->c.group);
    snprintf(c->dtype, sizeof c->dtype, "%s", bench_dtype_name(w->c.dtype));
    bench_case_shape(&w->c, c->shape, sizeof c->shape);
    snprintf(c->impl, sizeof c->impl, "%s", w->impl);
    if (w->outcome == BENCH_RAN) {
        fmt_time(c->time, sizeof c->time, w->t.median);
        snprintf(c->spread, sizeof c->spread, "%.0f%%",
                 100 * (w->t.p90 - w->t.p10) / w->t.median);
        fmt_rate(c->rate, sizeof c->rate, w->gflops);
        snprintf(c->gbs, sizeof c->gbs, "%.1f", w->gbs);
        if (w->roof > 0)
            snprintf(c->roof, sizeof c->roof, "%.0f%%", 100 * w->roof);
        else
            snprintf(c->roof, sizeof c->roof, "-");
        fmt_ratio(c->xb, sizeof c->xb, w->x_base);
        fmt_ratio(c->xa, sizeof c->xa, w->x_alt);
        fmt_ratio(c->xg, sizeof c->xg, w->x_gemm);
        snprintf(c->check, sizeof c->check, "%s", check_word(w));
    } else {
        snprintf(c->time, sizeof c->time, "%s", outcome_word(w->outcome));
        strcpy(c->spread, "");
        strcpy(c->rate, "");
        strcpy(c->gbs, "");
        strcpy(c->roof, "");
        strcpy(c->xb, "");
        strcpy(c->xa, "");
        strcpy(c->xg, "");
        strcpy(c->check, "");
    }
    snprintf(c->tail, sizeof c->tail, "%s%s%s", w->path,
             w->path[0] && w->note[0] ? "; " : "", w->note);
}

#define NCOL 15
static const char *const headers[NCOL] = {
    "dev", "workload", "dtype", "shape", "impl", "median", "spread", "FLOP/s",
    "GB/s", "roof", "x base", "x alt", "x gemm", "check", "path / note"};
/* 1: right-aligned (numbers) */
static const int right[NCOL] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};

static void cell_list(const cells *c, const char *v[NCOL])
{
    const char *l[NCOL] = {c->dev, c->group, c->dtype, c->shape, c->impl,
                           c->time, c->spread, c->rate, c->gbs, c->roof,
                           c->xb, c->xa, c->xg, c->check, c->tail};
    memcpy(v, l, sizeof l);
}

void bench_print_table(FILE *f, const bench_report *r)
{
    int width[NCOL];
    for (int j = 0; j < NCOL; j++)
        width[j] = (int)strlen(headers[j]);
    for (int i = 0; i < r->n; i++) {
        cells c;
        const char *v[NCOL];
        make_cells(&r->v[i], &c);
        cell_list(&c, v);
        for (int j = 0; j < NCOL - 1; j++)
            if ((int)strlen(v[j]) > width[j])
                width[j] = (int)strlen(v[j]);
    }
    for (int j = 0; j < NCOL; j++) {
        if (j == NCOL - 1)
            fprintf(f, "%s\n", headers[j]);
        else
            fprintf(f, right[j] ? "%*s  " : "%-*s  ", width[j], headers[j]);
    }
    const bench_row *prev = NULL;
    for (int i = 0; i < r->n; i++) {
        const bench_row *w = &r->v[i];
        /* a blank line between cases */
        if (prev && (strcmp(prev->device, w->device) || prev->c.dtype != w->c.dtype ||
                     prev->c.m != w->c.m || prev->c.k != w->c.k ||
                     prev->c.h != w->c.h || prev->c.n != w->c.n ||
                     strcmp(prev->c.group, w->c.group)))
            fputc('\n', f);
        prev = w;
        cells c;
        const char *v[NCOL];
        make_cells(w, &c);
        cell_list(&c, v);
        for (int j = 0; j < NCOL; j++) {
            if (j == NCOL - 1)
                fprintf(f, "%s\n", v[j]);
            else
                fprintf(f, right[j] ? "%*s  " : "%-*s  ", width[j], v[j]);
        }
    }
}

void bench_progress(const bench_row *w)
{
    char shape[40], t[24];
    bench_case_shape(&w->c, shape, sizeof shape);
    if (w->outcome == BENCH_RAN)
        fmt_time(t, sizeof t, w->t.median);
    else
        snprintf(t, sizeof t, "%s", outcome_word(w->outcome));
    fprintf(stderr, "  %s %-14s %-4s %-20s %-22s %12s  (%d runs, %d sets)%s%s\n",
            w->device, w->c.group, bench_dtype_name(w->c.dtype), shape, w->impl,
            t, w->t.reps, w->nsets, w->note[0] ? "  " : "", w->note);
}

void bench_print_ceilings(FILE *f, const bench_ceilings *cl, int have_gpu)
{
    fprintf(f, "fusedblas-bench %s\n", fb_version());
    fprintf(f, "CPU: %s, %d threads, LLC %.0f MB, 1-min load %.2f at start\n",
            cl->cpu_name, cl->cpu_threads, cl->cpu_llc_bytes / 1048576.0,
            cl->load_avg);
    if (cl->cpu_read_gbs > 0)
        fprintf(f, "  memory read %.1f GB/s, copy %.1f GB/s (read + written)\n",
                cl->cpu_read_gbs, cl->cpu_copy_gbs);
    if (cl->cpu_blas[0])
        fprintf(f, "  %s\n", cl->cpu_blas);
    fprintf(f, "  GEMM: OpenBLAS sgemm %.1f GFLOP/s", cl->cpu_sgemm_gflops);
    if (cl->cpu_sbgemm_gflops > 0)
        fprintf(f, ", sbgemm %.1f", cl->cpu_sbgemm_gflops);
    else
        fprintf(f, ", no sbgemm");
    if (cl->cpu_dnnl_f32_gflops > 0)
        fprintf(f, "; oneDNN f32 %.1f", cl->cpu_dnnl_f32_gflops);
    if (cl->cpu_dnnl_bf16_gflops > 0)
        fprintf(f, ", bf16 %.1f", cl->cpu_dnnl_bf16_gflops);
    fprintf(f, "\n  arithmetic peak: fp32 %.1f GFLOP/s", cl->cpu_f32_peak_gflops);
    if (cl->cpu_bf16_peak_gflops > 0)
        fprintf(f, ", bf16 %.1f", cl->cpu_bf16_peak_gflops);
    else
        fprintf(f, ", no bf16 arithmetic (bf16 held to fp32)");
    if (cl->cpu_f16_peak_gflops > 0)
        fprintf(f, ", fp16 %.1f", cl->cpu_f16_peak_gflops);
    else
        fprintf(f, ", no fp16 arithmetic (fp16 held to fp32)");
    fprintf(f, "\n");
    if (have_gpu) {
        fprintf(f, "GPU: %s, L2 %.0f MB\n", cl->gpu_name,
                cl->gpu_l2_bytes / 1048576.0);
        fprintf(f, "  device copy %.0f GB/s (read + written); cuBLAS "
                   "bf16 %.0f, fp16 %.0f, tf32 %.0f, fp32 %.1f TFLOP/s\n",
                cl->gpu_copy_gbs, cl->gpu_bf16_tflops, cl->gpu_f16_tflops,
                cl->gpu_tf32_tflops, cl->gpu_f32_tflops);
    }
    fprintf(f, "median of timed runs after warm-up; spread = (p90 - p10) / median; "
               "roof = roofline time / median;\n"
               "x base = speedup over the unfused baseline (%s on the CPU, %s on "
               "the GPU),\nx alt = over %s (CPU) or %s (GPU), x gemm = over the "
               "GEMMs alone with no epilogue\n\n",
            BENCH_IMPL_OPENBLAS, BENCH_IMPL_EAGER, BENCH_IMPL_ONEDNN,
            BENCH_IMPL_CUDA_LT);
}

int bench_write_markdown(const char *path, const bench_report *r,
                         const bench_ceilings *cl)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "<!-- written by fusedblas-bench --md -->\n");
    fprintf(f, "```text\n");
    bench_print_ceilings(f, cl, cl->gpu_name[0] != '\0');
    fprintf(f, "```\n");
    for (int i = 0; i < r->n; i++) {
        const bench_row *w = &r->v[i];
        int first = i == 0 || strcmp(r->v[i - 1].device, w->device) ||
                    strcmp(r->v[i - 1].c.group, w->c.group);
        if (first) {
            /* a group's rows are together unless the catalogue interleaves
             * it; a repeated heading is harmless */
            fprintf(f, "\n#### %s: %s (%s)\n\n", w->device, w->c.group,
                    bench_act_name(w->c.act));
            fprintf(f, "| dtype | shape | impl | median | spread | FLOP/s | GB/s | "
                       "roof | x base | x alt | x gemm | check |\n");
            fprintf(f, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
        }
        cells c;
        make_cells(w, &c);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                c.dtype, c.shape, c.impl, c.time, c.spread, c.rate, c.gbs, c.roof,
                c.xb, c.xa, c.xg, w->outcome == BENCH_RAN ? c.check : w->note);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* CSV fields never contain commas except path/note: quote those. */
static void csv_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int bench_write_csv(const char *path, const bench_report *r)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "device,group,routine,dtype,act,bias,m,k,h,n,impl,kind,outcome,"
               "reps,nsets,median_s,min_s,p10_s,p90_s,max_s,gflops,gbs,roof_frac,"
               "x_base,x_alt,x_gemm,rel_err,check,path,note\n");
    static const char *const kinds[] = {"ours", "baseline", "alt", "reference"};
    for (int i = 0; i < r->n; i++) {
        const bench_row *w = &r->v[i];
        fprintf(f, "%s,%s,%s,%s,%s,%d,%lld,%lld,%lld,%lld,%s,%s,%s,%d,%d,"
                   "%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.4f,%.4f,%.4f,%.4f,%.3g,%s,",
                w->device, w->c.group, bench_routine_name(w->c.routine),
                bench_dtype_name(w->c.dtype), bench_act_name(w->c.act), w->c.bias,
                (long long)w->c.m, (long long)w->c.k, (long long)w->c.h,
                (long long)w->c.n, w->impl, kinds[w->kind], outcome_word(w->outcome),
                w->t.reps, w->nsets, w->t.median, w->t.min, w->t.p10, w->t.p90,
                w->t.max, w->gflops, w->gbs, w->roof, w->x_base, w->x_alt,
                w->x_gemm, w->err, check_word(w));
        csv_quoted(f, w->path);
        fputc(',', f);
        csv_quoted(f, w->note);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

int bench_write_ceilings_csv(const char *path, const bench_ceilings *cl)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "name,value\n");
    fprintf(f, "cpu_name,");
    csv_quoted(f, cl->cpu_name);
    fprintf(f, "\ncpu_threads,%d\ncpu_llc_bytes,%zu\ncpu_load_avg,%.2f\n"
               "cpu_read_gbs,%.2f\ncpu_copy_gbs,%.2f\ncpu_sgemm_gflops,%.2f\n"
               "cpu_sbgemm_gflops,%.2f\ncpu_dnnl_f32_gflops,%.2f\n"
               "cpu_dnnl_bf16_gflops,%.2f\ncpu_f32_peak_gflops,%.2f\n"
               "cpu_bf16_peak_gflops,%.2f\ncpu_f16_peak_gflops,%.2f\n",
            cl->cpu_threads, cl->cpu_llc_bytes, cl->load_avg, cl->cpu_read_gbs,
            cl->cpu_copy_gbs, cl->cpu_sgemm_gflops, cl->cpu_sbgemm_gflops,
            cl->cpu_dnnl_f32_gflops, cl->cpu_dnnl_bf16_gflops,
            cl->cpu_f32_peak_gflops, cl->cpu_bf16_peak_gflops,
            cl->cpu_f16_peak_gflops);
    fprintf(f, "gpu_name,");
    csv_quoted(f, cl->gpu_name);
    fprintf(f, "\ngpu_l2_bytes,%zu\ngpu_copy_gbs,%.1f\ngpu_f32_tflops,%.2f\n"
               "gpu_tf32_tflops,%.2f\ngpu_f16_tflops,%.2f\ngpu_bf16_tflops,%.2f\n",
            cl->gpu_l2_bytes, cl->gpu_copy_gbs, cl->gpu_f32_tflops,
            cl->gpu_tf32_tflops, cl->gpu_f16_tflops, cl->gpu_bf16_tflops);
    return fclose(f) == 0 ? 0 : -1;
}
