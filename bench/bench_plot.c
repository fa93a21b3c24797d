/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_plot.c -- gnuplot PNGs from the report: for each device,
 *   speedup-<dev>-<workload>.png  speedup over the unfused baseline vs m,
 *                                 one line per (implementation, dtype),
 *                                 for every workload measured at several m;
 *   speedup-<dev>-cases.png       the same as bars, for single-m workloads;
 *   roofline-<dev>.png            fraction of the roofline vs arithmetic
 *                                 intensity, every implementation.
 * The data (.dat) and the script (plots.gp) stay beside the PNGs, so a plot
 * can be redrawn or restyled without rerunning the benchmark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_plot.h"
#include "bench_workloads.h"

#define MAX_SERIES 32

static int is_speedup_series(const bench_row *w)
{
    return w->outcome == BENCH_RAN && w->x_base > 0 &&
           (w->kind == BENCH_OURS || w->kind == BENCH_ALT);
}

/* A workload: the same group and widths; m varies. */
static int same_workload(const bench_row *a, const bench_row *b)
{
    return !strcmp(a->device, b->device) && !strcmp(a->c.group, b->c.group) &&
           a->c.routine == b->c.routine && a->c.k == b->c.k && a->c.h == b->c.h &&
           a->c.n == b->c.n;
}

static void series_name(const bench_row *w, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", w->impl, bench_dtype_name(w->c.dtype));
}

static int find_or_add(char names[][64], int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], name))
            return i;
    if (*n == MAX_SERIES)
        return -1;
    snprintf(names[*n], 64, "%s", name);
    return (*n)++;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct m of the workload of row w, sorted; returns how many. */
static int workload_ms(const bench_report *r, const bench_row *w, int64_t *ms, int cap)
{
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        if (!same_workload(&r->v[i], w))
            continue;
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= ms[j] == r->v[i].c.m;
        if (!seen && n < cap)
            ms[n++] = r->v[i].c.m;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_i64);
    return n;
}

/* The script names its files relative to its own directory (gnuplot runs
 * there), so that a directory written on one machine (the GPU machine has
 * no gnuplot) can be drawn on another. */
static const char *in_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void gp_header(FILE *gp, const char *png, const char *title)
{
    fprintf(gp, "\nset output '%s'\nset title \"%s\"\n", in_dir(png), title);
}

/* One speedup-vs-m plot for the workload of row w. */
static int plot_workload(FILE *gp, const char *dir, const bench_report *r,
                         const bench_row *w, const int64_t *ms, int nm)
{
    char names[MAX_SERIES][64];
    int ns = 0;
    for (int i = 0; i < r->n; i++) {
        char s[64];
        if (!same_workload(&r->v[i], w) || !is_speedup_series(&r->v[i]))
            continue;
        series_name(&r->v[i], s, sizeof s);
        find_or_add(names, &ns, s);
    }
    if (ns == 0)
        return 0;
    char base[160], path[512];
    if (w->c.routine == BENCH_GEMM)
        snprintf(base, sizeof base, "speedup-%s-%s-%lldx%lld", w->device, w->c.group,
                 (long long)w->c.k, (long long)w->c.n);
    else
        snprintf(base, sizeof base, "speedup-%s-%s-%lldx%lldx%lld", w->device,
                 w->c.group, (long long)w->c.k, (long long)w->c.h, (long long)w->c.n);
    snprintf(path, sizeof path, "%s/%s.dat", dir, base);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "m");
    for (int s = 0; s < ns; s++)
        fprintf(f, " %s", names[s]);
    fprintf(f, "\n");
    for (int i = 0; i < nm; i++) {
        fprintf(f, "%lld", (long long)ms[i]);
        for (int s = 0; s < ns; s++) {
            double v = -1;
            for (int j = 0; j < r->n; j++) {
                const bench_row *x = &r->v[j];
                char nm2[64];
                if (!same_workload(x, w) || x->c.m != ms[i] || !is_speedup_series(x))
                    continue;
                series_name(x, nm2, sizeof nm2);
                if (!strcmp(nm2, names[s]))
                    v = x->x_base;
            }
            if (v > 0)
                fprintf(f, " %.4f", v);
            else
                fprintf(f, " NaN");
        }
        fprintf(f, "\n");
    }
    fclose(f);
    char title[256], png[512];
    snprintf(title, sizeof title, "%s %s (k=%lld h=%lld n=%lld): speedup over %s",
             w->device, w->c.group, (long long)w->c.k, (long long)w->c.h,
             (long long)w->c.n, strcmp(w->device, "gpu") ? BENCH_IMPL_OPENBLAS : BENCH_IMPL_EAGER);
    snprintf(png, sizeof png, "%s/%s.png", dir, base);
    gp_header(gp, png, title);
    fprintf(gp, "set logscale x 2\nset xlabel 'm (rows)'\nset ylabel 'speedup (x)'\n"
                "set style data linespoints\nunset style histogram\n"
                "plot for [i=2:%d] '%s' using 1:i title columnheader(i), 1 with lines "
                "dashtype 2 lc 'gray' notitle\nunset logscale x\n",
            ns + 1, in_dir(path));
    return 1;
}

/* Bars for the workloads measured at one m only, on device dev. */
static int plot_cases(FILE *gp, const char *dir, const bench_report *r, const char *dev)
{
    char names[MAX_SERIES][64];
    int ns = 0, ncases = 0;
    for (int i = 0; i < r->n; i++) {
        const bench_row *w = &r->v[i];
        int64_t ms[16];
        if (strcmp(w->device, dev) || !is_speedup_series(w) ||
            workload_ms(r, w, ms, 16) != 1)
            continue;
        find_or_add(names, &ns, w->impl);
    }
    if (ns == 0)
        return 0;
    char path[512], png[512];
    snprintf(path, sizeof path, "%s/speedup-%s-cases.dat", dir, dev);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "case");
    for (int s = 0; s < ns; s++)
        fprintf(f, " %s", names[s]);
    fprintf(f, "\n");
    /* one line per case: the rows of a case are consecutive in the report */
    for (int i = 0; i < r->n;) {
        const bench_row *w = &r->v[i];
        int j = i;
        while (j < r->n && same_workload(&r->v[j], w) && r->v[j].c.m == w->c.m &&
               r->v[j].c.dtype == w->c.dtype)
            j++;
        int64_t ms[16];
        if (!strcmp(w->device, dev) && workload_ms(r, w, ms, 16) == 1) {
            double v[MAX_SERIES];
            int any = 0;
            for (int s = 0; s < ns; s++)
                v[s] = -1;
            for (int q = i; q < j; q++)
                if (is_speedup_series(&r->v[q]))
                    for (int s = 0; s < ns; s++)
                        if (!strcmp(names[s], r->v[q].impl)) {
                            v[s] = r->v[q].x_base;
                            any = 1;
                        }
            if (any) {
                char shape[40];
                bench_case_shape(&w->c, shape, sizeof shape);
                fprintf(f, "\"%s %s %s\"", w->c.group, bench_dtype_name(w->c.dtype), shape);
                for (int s = 0; s < ns; s++)
                    fprintf(f, v[s] > 0 ? " %.4f" : " NaN", v[s]);
                fprintf(f, "\n");
                ncases++;
            }
        }
        i = j;
    }
    fclose(f);
    if (ncases == 0)
        return 0;
    snprintf(png, sizeof png, "%s/speedup-%s-cases.png", dir, dev);
    char title[128];
    snprintf(title, sizeof title, "%s: speedup over %s, single-m workloads", dev,
             strcmp(dev, "gpu") ? BENCH_IMPL_OPENBLAS : BENCH_IMPL_EAGER);
    gp_header(gp, png, title);
    fprintf(gp, "set style data histograms\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset xtics rotate by -40\n"
                "set xlabel ''\nset ylabel 'speedup (x)'\n"
                "plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i), 1 with "
                "lines dashtype 2 lc 'gray' notitle\n"
                "set xtics norotate\nset style data linespoints\n",
            ns + 1, in_dir(path));
    return 1;
}

/* Fraction of the roofline against arithmetic intensity. */
static int plot_roofline(FILE *gp, const char *dir, const bench_report *r, const char *dev)
{
    char names[MAX_SERIES][64];
    int ns = 0;
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].device, dev) && r->v[i].outcome == BENCH_RAN &&
            r->v[i].roof > 0)
            find_or_add(names, &ns, r->v[i].impl);
    if (ns == 0)
        return 0;
    char path[512], png[512];
    snprintf(path, sizeof path, "%s/roofline-%s.dat", dir, dev);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    for (int s = 0; s < ns; s++) {
        fprintf(f, "# %s\n", names[s]);
        for (int i = 0; i < r->n; i++) {
            const bench_row *w = &r->v[i];
            if (strcmp(w->device, dev) || w->outcome != BENCH_RAN || w->roof <= 0 ||
                strcmp(w->impl, names[s]))
                continue;
            fprintf(f, "%.4g %.4f\n", bench_case_flops(&w->c) / bench_case_bytes(&w->c),
                    100 * w->roof);
        }
        fprintf(f, "\n\n");
    }
    fclose(f);
    snprintf(png, sizeof png, "%s/roofline-%s.png", dir, dev);
    char title[128];
    snprintf(title, sizeof title, "%s: fraction of the measured roofline", dev);
    gp_header(gp, png, title);
    fprintf(gp, "set logscale x 10\nset xlabel 'arithmetic intensity (FLOP/byte, fewest bytes)'\n"
                "set ylabel 'roofline (%%)'\nset yrange [0:*]\nnames = \"");
    for (int s = 0; s < ns; s++)
        fprintf(gp, "%s%s", s ? " " : "", names[s]);
    fprintf(gp, "\"\nplot for [i=1:%d] '%s' index (i-1) using 1:2 with points pt 7 "
                "title word(names, i)\nunset logscale x\nset yrange [*:*]\n",
            ns, in_dir(path));
    return 1;
}

int bench_plot(const bench_report *r, const char *dir, const char *gnuplot)
{
    if (strchr(dir, '\'') || (gnuplot && strchr(gnuplot, '\''))) {
        fprintf(stderr, "fusedblas-bench: plot paths may not contain quotes\n");
        return -1;
    }
    const char *gp_cmd = gnuplot && *gnuplot ? gnuplot : "gnuplot";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", gp_cmd);
    /* Without gnuplot the data and the script are still written: they can
     * be drawn elsewhere (cd DIR && gnuplot plots.gp). */
    const int have_gnuplot = !(gnuplot && !*gnuplot) && system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        return -1;
    char script[512];
    snprintf(script, sizeof script, "%s/plots.gp", dir);
    FILE *gp = fopen(script, "w");
    if (gp == NULL)
        return -1;
    /* pngcairo where gnuplot has it, else the plain png terminal */
    snprintf(cmd, sizeof cmd, "'%s' -e 'set terminal pngcairo' >/dev/null 2>&1", gp_cmd);
    int cairo = !have_gnuplot || system(cmd) == 0; /* drawn elsewhere: assume cairo */
    fprintf(gp, "# fusedblas-bench plots; redraw with: cd %s && gnuplot plots.gp\n", dir);
    fprintf(gp, "set terminal %s size 1100,650 noenhanced\n", cairo ? "pngcairo" : "png");
    fprintf(gp, "set datafile missing 'NaN'\nset key outside right top\nset grid\n"
                "set style data linespoints\n");
    int plots = 0;
    const char *devs[] = {"cpu", "gpu"};
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < r->n; i++) {
            const bench_row *w = &r->v[i];
            if (strcmp(w->device, devs[d]))
                continue;
            /* the first row of each workload draws it */
            int first = 1;
            for (int j = 0; j < i && first; j++)
                first = !same_workload(&r->v[j], w);
            int64_t ms[64];
            int nm = workload_ms(r, w, ms, 64);
            if (first && nm >= 2 && plot_workload(gp, dir, r, w, ms, nm) > 0)
                plots++;
        }
        if (plot_cases(gp, dir, r, devs[d]) > 0)
            plots++;
        if (plot_roofline(gp, dir, r, devs[d]) > 0)
            plots++;
    }
    fclose(gp);
    if (plots == 0)
        return 0;
    if (!have_gnuplot) {
        fprintf(stderr, "fusedblas-bench: no gnuplot ('%s'): %d plots' data and "
                        "plots.gp in %s (draw them with: cd %s && gnuplot plots.gp)\n",
                gp_cmd, plots, dir, dir);
        return 1;
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plots.gp", dir, gp_cmd);
    if (system(cmd) != 0) {
        fprintf(stderr, "fusedblas-bench: gnuplot failed on %s\n", script);
        return -1;
    }
    fprintf(stderr, "fusedblas-bench: %d plots in %s\n", plots, dir);
    return 0;
}
