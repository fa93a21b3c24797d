/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_stats.c -- the clock and the statistics of timed runs.
 *
 * The median, not the mean, is the reported time: on a shared machine a
 * few runs are always disturbed, and the median ignores them. The spread
 * (10th to 90th percentile) says how disturbed the run was.
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include "bench_stats.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bench_reps_for(const bench_options *opt, double one_run_s)
{
    double want = one_run_s > 0 ? opt->target_s / one_run_s : opt->reps;
    int n = want > opt->reps ? opt->reps : (int)ceil(want);
    if (n < opt->min_reps)
        n = opt->min_reps;
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between the two nearest ranks. */
static double percentile(const double *sorted, int n, double p)
{
    double pos = p * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    double f = pos - lo;
    return sorted[lo] * (1 - f) + sorted[hi] * f;
}

void bench_stats_from(double *samples, int n, bench_stats *out)
{
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    out->reps = n;
    out->min = samples[0];
    out->max = samples[n - 1];
    out->median = percentile(samples, n, 0.5);
    out->p10 = percentile(samples, n, 0.1);
    out->p90 = percentile(samples, n, 0.9);
}
